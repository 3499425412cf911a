#!/usr/bin/env bash
# lint.sh: the project's linters in one command (docs/lint.md). Exits 1 on any finding, 2 on a usage
# error or a missing tool; the last line says what ran, what did not, and why.
set -uo pipefail
usage() {
  cat <<'EOF'
usage: scripts/lint.sh [--fix] [--since REF] [--build DIR] [--skip TOOL]...

Runs, on the files git tracks:
  clang-format  --dry-run -Werror on every .c/.h/.cpp/.cu/.cuh file (.clang-format)
  clang-tidy    on the C/C++ files of DIR/compile_commands.json (.clang-tidy; never CUDA files);
                only with --build DIR (a configured, built tree: generated headers must exist)
  ruff          ruff check on every .py file (ruff.toml), from .venv-lint/ (created if missing)
  shellcheck    -x on every bash script (.shellcheckrc)

options:
  --fix         let the tools fix what they can: clang-format -i, ruff check --fix; then lint again
  --since REF   only files changed since the git ref REF (committed, staged or not; still existing)
  --build DIR   run clang-tidy with DIR's compile database (e.g. build-cpu: cmake -DVATTN_CUDA=OFF)
  --skip TOOL   do not run TOOL (clang-format, clang-tidy, ruff, shellcheck); may be repeated
  -h, --help    this text

Environment: CLANG_FORMAT, CLANG_TIDY (the binaries; default clang-format-14/clang-tidy-14 when
installed, else clang-format/clang-tidy), VATTN_LINT_VENV (default .venv-lint).
EOF
}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root" || exit 2
fix=0 since="" build="" skip=" "
while [ $# -gt 0 ]; do
  case $1 in
    --fix) fix=1 ;;
    --since) [ $# -ge 2 ] || { echo "lint: --since needs a git ref" >&2; exit 2; }; since=$2; shift ;;
    --build) [ $# -ge 2 ] || { echo "lint: --build needs a directory" >&2; exit 2; }; build=$2; shift ;;
    --skip)
      [ $# -ge 2 ] || { echo "lint: --skip needs a tool name" >&2; exit 2; }
      case $2 in clang-format | clang-tidy | ruff | shellcheck) skip="$skip$2 " ;;
        *) echo "lint: --skip $2: not one of clang-format, clang-tidy, ruff, shellcheck" >&2; exit 2 ;; esac
      shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "lint: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ -n "$since" ] && ! git rev-parse --verify -q "$since^{commit}" >/dev/null; then
  echo "lint: --since $since: not a git commit" >&2; exit 2
fi
if [ -n "$build" ] && [ ! -f "$build/compile_commands.json" ]; then
  echo "lint: --build $build: no compile_commands.json there (configure it with cmake first)" >&2; exit 2
fi

# files PATTERN...: tracked files matching the patterns (changed since $since when given), that exist.
files() {
  if [ -n "$since" ]; then
    { git diff --name-only --diff-filter=d "$since" -- "$@"; git ls-files --others --exclude-standard -- "$@"; } | sort -u
  else
    git ls-files -- "$@"
  fi | while IFS= read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done
}
# bash_scripts: tracked *.sh, .ci/run, *.sbatch and extension-less files with a bash/sh shebang.
bash_scripts() {
  files '*.sh' '*.sbatch' .ci/run
  files ':(exclude)*.*' | while IFS= read -r f; do
    head -n1 "$f" 2>/dev/null | grep -qE '^#!.*[/ ](ba)?sh( |$)' && printf '%s\n' "$f"
  done
}
pick() { for b in "$@"; do command -v "$b" >/dev/null 2>&1 && { echo "$b"; return 0; }; done; return 1; }

summary=() failed=0 missing=0
result() {  # result TOOL STATUS [WHY]
  summary+=("$1 $2${3:+ ($3)}")
  case $2 in failed) failed=1 ;; missing) missing=1 ;; esac
}
skipped() { case $skip in *" $1 "*) result "$1" skipped "--skip"; return 0 ;; esac; return 1; }
header() { echo "== lint: $*"; }

# -- clang-format
if ! skipped clang-format; then
  mapfile -t cfiles < <(files '*.c' '*.h' '*.cpp' '*.cu' '*.cuh')
  if ! cf=${CLANG_FORMAT:-$(pick clang-format-14 clang-format)}; then
    echo "lint: clang-format is not installed (Debian: apt-get install clang-format; version 14 is the reference)" >&2
    result clang-format missing "not installed"
  elif [ ${#cfiles[@]} -eq 0 ]; then
    result clang-format ok "no files"
  else
    header "clang-format ($($cf --version | grep -oE '[0-9]+\.[0-9.]+' | head -1)) on ${#cfiles[@]} files"
    [ $fix -eq 1 ] && printf '%s\0' "${cfiles[@]}" | xargs -0 -n 50 "$cf" -i
    if printf '%s\0' "${cfiles[@]}" | xargs -0 -n 50 "$cf" --dry-run -Werror; then
      result clang-format ok
    else
      echo "lint: clang-format: the files above differ from .clang-format's style; scripts/lint.sh --fix rewrites them" >&2
      result clang-format failed
    fi
  fi
fi

# -- clang-tidy
if ! skipped clang-tidy; then
  if [ -z "$build" ]; then
    result clang-tidy skipped "no --build"
  elif ! ct=${CLANG_TIDY:-$(pick clang-tidy-14 clang-tidy)}; then
    echo "lint: clang-tidy is not installed (Debian: apt-get install clang-tidy)" >&2
    result clang-tidy missing "not installed"
  else
    # The compile database's C/C++ sources (CUDA files are left out), limited to --since's files.
    mapfile -t tfiles < <(python3 - "$build/compile_commands.json" "$root" <<'EOF'
import json, os, sys
root = os.path.realpath(sys.argv[2])
for f in sorted({os.path.realpath(os.path.join(e["directory"], e["file"])) for e in json.load(open(sys.argv[1]))}):
    if f.endswith((".c", ".cc", ".cpp")) and f.startswith(root + os.sep):
        print(os.path.relpath(f, root))
EOF
    )
    if [ -n "$since" ]; then
      mapfile -t changed < <(files '*.c' '*.cc' '*.cpp')
      mapfile -t tfiles < <(comm -12 <(printf '%s\n' "${tfiles[@]}" | sort) <(printf '%s\n' "${changed[@]}" | sort))
    fi
    if [ ${#tfiles[@]} -eq 0 ] || [ -z "${tfiles[0]}" ]; then
      result clang-tidy ok "no files"
    else
      header "clang-tidy ($($ct --version | grep -oE '[0-9]+\.[0-9.]+' | head -1)) on ${#tfiles[@]} files of $build"
      fixarg=()
      [ $fix -eq 1 ] && fixarg=(--fix)
      if printf '%s\0' "${tfiles[@]}" |
          xargs -0 -P "$(nproc)" -n 1 "$ct" -p "$build" --quiet --warnings-as-errors='*' "${fixarg[@]}" 2>/dev/null; then
        result clang-tidy ok
      else
        echo "lint: clang-tidy: findings above (.clang-tidy lists the checks; NOLINT(check) with a reason where the code is right)" >&2
        result clang-tidy failed
      fi
    fi
  fi
fi

# -- ruff
if ! skipped ruff; then
  mapfile -t pyfiles < <(files '*.py')
  venv=${VATTN_LINT_VENV:-$root/.venv-lint}
  want=$(grep -E '^ruff==' "$here/lint-requirements.txt")
  if [ ! -x "$venv/bin/ruff" ] || [ "$("$venv/bin/ruff" --version 2>/dev/null | sed 's/ /==/')" != "$want" ]; then
    echo "lint: installing $want into $venv (python3 -m venv; pip)"
    { [ -x "$venv/bin/pip" ] || python3 -m venv "$venv"; } && "$venv/bin/pip" install -q -r "$here/lint-requirements.txt" ||
      echo "lint: could not install $want into $venv (needs python3-venv and PyPI)" >&2
  fi
  if [ ! -x "$venv/bin/ruff" ]; then
    result ruff missing "no $venv/bin/ruff"
  elif [ ${#pyfiles[@]} -eq 0 ]; then
    result ruff ok "no files"
  else
    header "$("$venv/bin/ruff" --version) on ${#pyfiles[@]} files"
    [ $fix -eq 1 ] && "$venv/bin/ruff" check -q --fix "${pyfiles[@]}"
    if "$venv/bin/ruff" check -q "${pyfiles[@]}"; then
      result ruff ok
    else
      echo "lint: ruff: findings above (ruff.toml; '# noqa: CODE' with a reason where the code is right)" >&2
      result ruff failed
    fi
  fi
fi

# -- shellcheck
if ! skipped shellcheck; then
  mapfile -t shfiles < <(bash_scripts | sort -u)
  if ! command -v shellcheck >/dev/null 2>&1; then
    echo "lint: shellcheck is not installed (Debian: apt-get install shellcheck)" >&2
    result shellcheck missing "not installed"
  elif [ ${#shfiles[@]} -eq 0 ]; then
    result shellcheck ok "no files"
  else
    header "shellcheck $(shellcheck --version | sed -n 's/^version: //p') on ${#shfiles[@]} scripts"
    if shellcheck -x "${shfiles[@]}"; then
      result shellcheck ok
    else
      echo "lint: shellcheck: findings above (.shellcheckrc; '# shellcheck disable=SCnnnn  # reason' where the code is right)" >&2
      result shellcheck failed
    fi
  fi
fi

line=$(printf '%s, ' "${summary[@]}")
echo "lint: ${line%, }${since:+ (files changed since $since)}"
if [ $failed -ne 0 ]; then exit 1; fi
if [ $missing -ne 0 ]; then exit 2; fi
exit 0
# SPDX-License-Identifier: Apache-2.0
