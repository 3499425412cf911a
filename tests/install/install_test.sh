#!/usr/bin/env bash
# usage: install_test.sh BUILD_DIR SOURCE_DIR
# Installs the (already built) BUILD_DIR into a temporary prefix, configures and builds the outside
# project SOURCE_DIR/tests/install/consumer against it with find_package(vattn), runs it and checks
# that it printed PASS. Everything is written under one temporary directory, removed on exit.
set -euo pipefail
if [ $# -ne 2 ]; then echo "usage: $0 BUILD_DIR SOURCE_DIR" >&2; exit 2; fi
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/vattn-install-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The consumer uses the build's compilers, generator program and build type.
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" | head -n1; }
cxx=$(cache_value CMAKE_CXX_COMPILER)
cc=$(cache_value CMAKE_C_COMPILER)
make_program=$(cache_value CMAKE_MAKE_PROGRAM)
build_type=$(cache_value CMAKE_BUILD_TYPE)
args=(-G Ninja -DCMAKE_BUILD_TYPE="${build_type:-Release}" -DCMAKE_PREFIX_PATH="$tmp/prefix")
[ -n "$cxx" ] && args+=(-DCMAKE_CXX_COMPILER="$cxx")
[ -n "$cc" ] && args+=(-DCMAKE_C_COMPILER="$cc")
[ -n "$make_program" ] && args+=(-DCMAKE_MAKE_PROGRAM="$make_program")

echo "== cmake --install $build --prefix $tmp/prefix"
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }

fail() { echo "FAIL: $*" >&2; exit 1; }
for f in include/vattn/casefile/case_file.h include/vattn/case/case.h include/vattn/gen/generate.h \
         include/vattn/oracle/cpu_oracle.h include/vattn/recipe/recipe.h include/vattn/check/tolerance.h \
         lib/cmake/vattn/vattnConfig.cmake lib/cmake/vattn/vattnTargets.cmake; do
  [ -f "$tmp/prefix/$f" ] || fail "not installed: $f"
done
[ -e "$tmp/prefix/include/vattn/oracle/gpu_naive_oracle.h" ] && fail "a CUDA header was installed"
# The exported package must not point back into the source or build tree.
if grep -rlF -e "$src/" -e "$build/" "$tmp/prefix/lib/cmake/vattn"; then fail "the package names the source or build tree"; fi

echo "== configure and build the consumer"
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer-build" "${args[@]}" > "$tmp/configure.log" 2>&1 \
  || { cat "$tmp/configure.log"; fail "configuring the consumer"; }
cmake --build "$tmp/consumer-build" > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "building the consumer"; }

echo "== run the consumer"
rc=0
out=$("$tmp/consumer-build/vattn_consumer" "$tmp/consumer.h5") || rc=$?
echo "$out"
[ "$rc" -eq 0 ] || fail "the consumer exited $rc"
grep -q '^PASS' <<< "$out" || fail "the consumer did not print PASS"
echo "install test: PASS"
# SPDX-License-Identifier: Apache-2.0
