#!/usr/bin/env bash
# usage: install_test.sh BUILD_DIR SOURCE_DIR
# Installs the (already built) BUILD_DIR into a temporary prefix, then moves the prefix elsewhere
# (nothing may depend on where it was installed) and checks what a user of it gets:
#   - the files: bin/vattn, the morning report's generator, the headers under include/vattn/<area>/
#     (all of them compile together from the prefix alone), the CMake package and vattn.pc;
#   - no installed file names the source or the build tree;
#   - consumer/ configured, built and run against it with find_package(vattn), and the same
#     main.cpp built with pkg-config (`pkg-config --cflags --libs vattn`): each prints PASS;
#   - the installed vattn runs from the prefix: --help, --version, info and replay of a fixture, gen,
#     a fuzz campaign on a host target (its workers are the installed binary), and promote, which
#     outside a repository asks for --corpus instead of writing into a tree it was built from.
# Everything is written under one temporary directory, removed on exit.
set -euo pipefail
if [ $# -ne 2 ]; then echo "usage: $0 BUILD_DIR SOURCE_DIR" >&2; exit 2; fi
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/vattn-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The consumer uses the build's compilers, generator program and build type.
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" | head -n1; }
cxx=$(cache_value CMAKE_CXX_COMPILER)
cc=$(cache_value CMAKE_C_COMPILER)
make_program=$(cache_value CMAKE_MAKE_PROGRAM)
build_type=$(cache_value CMAKE_BUILD_TYPE)

echo "== cmake --install $build --prefix $tmp/installed, then moved to $tmp/prefix"
cmake --install "$build" --prefix "$tmp/installed" > "$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
mv "$tmp/installed" "$tmp/prefix"
prefix=$tmp/prefix

for f in bin/vattn share/vattn/morning_report.py \
         include/vattn/casefile/case_file.h include/vattn/case/case.h include/vattn/case/bf16.h \
         include/vattn/gen/generate.h include/vattn/oracle/cpu_oracle.h include/vattn/recipe/recipe.h \
         include/vattn/check/tolerance.h lib/cmake/vattn/vattnConfig.cmake lib/cmake/vattn/vattnTargets.cmake \
         lib/pkgconfig/vattn.pc; do
  [ -f "$prefix/$f" ] || fail "not installed: $f"
done
[ -x "$prefix/bin/vattn" ] || fail "bin/vattn is not executable"
[ -e "$prefix/include/vattn/oracle/gpu_naive_oracle.h" ] && fail "a CUDA header was installed"
# Headers live under include/vattn/<area>/ only: a bare name (case.h) would shadow a consumer's own.
stray=$(find "$prefix/include" -name '*.h' ! -path "$prefix/include/vattn/*/*" | head -n 5)
[ -z "$stray" ] || fail "headers outside include/vattn/<area>/: $stray"

echo "== no installed file names the source or the build tree"
# One known exception is printed, not failed, until the code that needs it changes: in a CUDA
# build, the line tables of the device code (-lineinfo, which compute-sanitizer and the profilers
# map back to source lines) and nvcc's module registration name each .cu source, or its folder, as
# nvcc saw it, and nvcc has no prefix map for them: a .cu/.cuh file or a folder of them, nothing more.
device_line_dir() {  # PATH: a CUDA source in the source tree, or a folder of them?
  local rel
  rel=$(realpath -m "$1")
  rel=${rel#"$src/"}
  [ "$rel" != "$(realpath -m "$1")" ] || return 1
  if [ -f "$src/$rel" ]; then
    [[ $rel == *.cu || $rel == *.cuh ]]
  else
    [ -d "$src/$rel" ] && compgen -G "$src/$rel/*.cu*" >/dev/null
  fi
}
# shellcheck disable=SC2001  # one substitution over a class of characters: sed says it plainest
re_escape() { sed 's/[][\.*^$+?(){}|]/\\&/g' <<<"$1"; }
found=$(cd "$prefix" && LC_ALL=C grep -raoE "($(re_escape "$src")|$(re_escape "$build"))/[[:alnum:]_./+-]*" . | sort -u || true)
bad=() noted=()
while IFS= read -r hit; do
  [ -n "$hit" ] || continue
  file=${hit%%:*} path=${hit#*:}
  if [ "$file" = ./bin/vattn ] && device_line_dir "$path"; then
    noted+=("$path")
  else
    bad+=("$hit")
  fi
done <<<"$found"
if [ ${#bad[@]} -gt 0 ]; then
  printf '  %s\n' "${bad[@]:0:20}" >&2
  fail "installed files name the source or build tree (file:path above)"
fi
[ ${#noted[@]} -eq 0 ] || printf 'NOTE (known): bin/vattn holds %s\n' "${noted[@]}"

echo "== the headers compile together from the prefix alone"
(cd "$prefix/include" && find vattn -name '*.h' | sort | sed 's/.*/#include <&>/') > "$tmp/all_headers.cpp"
echo 'int main() { return 0; }' >> "$tmp/all_headers.cpp"
dep_cflags=$(pkg-config --cflags eigen3 hdf5 2>/dev/null || true)
# shellcheck disable=SC2086  # pkg-config's flags: a list, split on purpose
"${cxx:-c++}" -std=c++17 -fsyntax-only -I"$prefix/include" $dep_cflags "$tmp/all_headers.cpp" 2> "$tmp/headers.log" ||
  { cat "$tmp/headers.log"; fail "the installed headers do not compile on their own"; }

echo "== the CMake consumer: find_package(vattn)"
args=(-G Ninja -DCMAKE_BUILD_TYPE="${build_type:-Release}" -DCMAKE_PREFIX_PATH="$prefix")
[ -n "$cxx" ] && args+=(-DCMAKE_CXX_COMPILER="$cxx")
[ -n "$cc" ] && args+=(-DCMAKE_C_COMPILER="$cc")
[ -n "$make_program" ] && args+=(-DCMAKE_MAKE_PROGRAM="$make_program")
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer-build" "${args[@]}" > "$tmp/configure.log" 2>&1 \
  || { cat "$tmp/configure.log"; fail "configuring the consumer"; }
cmake --build "$tmp/consumer-build" > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "building the consumer"; }
rc=0
out=$("$tmp/consumer-build/vattn_consumer" "$tmp/consumer.h5") || rc=$?
echo "$out"
[ "$rc" -eq 0 ] || fail "the consumer exited $rc"
grep -q '^PASS' <<< "$out" || fail "the consumer did not print PASS"

echo "== the pkg-config consumer: pkg-config --cflags --libs vattn"
command -v pkg-config >/dev/null 2>&1 || fail "pkg-config not found (scripts/install-deps.sh installs it)"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
pc_prefix=$(pkg-config --variable=prefix vattn)
[ "$(cd "$pc_prefix" && pwd)" = "$prefix" ] || fail "vattn.pc's prefix is $pc_prefix, not where it lies ($prefix)"
flags=$(pkg-config --cflags --libs vattn) || fail "pkg-config --cflags --libs vattn"
echo "pkg-config: $flags"
# shellcheck disable=SC2086  # pkg-config's flags: a list, split on purpose
"${cxx:-c++}" -std=c++17 -O1 "$src/tests/install/consumer/main.cpp" -o "$tmp/pc_consumer" $flags 2> "$tmp/pc.log" ||
  { cat "$tmp/pc.log"; fail "building the consumer with pkg-config's flags"; }
rc=0
out=$("$tmp/pc_consumer" "$tmp/pc_consumer.h5") || rc=$?
echo "$out"
[ "$rc" -eq 0 ] || fail "the pkg-config consumer exited $rc"
grep -q '^PASS' <<< "$out" || fail "the pkg-config consumer did not print PASS"

echo "== the installed vattn, run from the prefix"
vattn=$prefix/bin/vattn
expect_run() {  # expect_run WANT_RC TEXT CMD...: CMD exits WANT_RC and prints TEXT (stdout or stderr)
  local want=$1 text=$2 rc=0 out
  shift 2
  out=$(cd "$tmp" && "$@" 2>&1) || rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -qF -- "$text" <<<"$out"; then
    echo "$out" | tail -n 20
    fail "$* exited $rc (expected $want) or did not print '$text'"
  fi
  echo "ok: ${*#"$prefix/"} -> $rc, '$text'"
}
expect_run 0 "usage: vattn" "$vattn" --help
expect_run 0 "vattn " "$vattn" --version
expect_run 0 "format vattn-cases v1" "$vattn" info "$src/fixtures/uniform_chain.h5"
expect_run 0 "0 failed" "$vattn" replay "$src/fixtures/uniform_chain.h5"
expect_run 0 "wrote" "$vattn" gen -o "$tmp/gen.h5" --recipe "B=1 H=2 P=[33] T=[3]"
# The supervisor starts its workers as `<itself> fuzz-worker`: the installed binary, here.
expect_run 0 "20 cases, 0 findings" "$vattn" fuzz --kernel host:bf16-reference --budget small --cases 20 --seed 3 \
  --no-report --out "$tmp/campaign"
expect_run 2 "no fixtures/regressions here" "$vattn" promote "$tmp/campaign/findings/none"
echo "install test: PASS"
# SPDX-License-Identifier: Apache-2.0
