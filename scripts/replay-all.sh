#!/usr/bin/env bash
# usage: scripts/replay-all.sh [--no-setup] [REPLAY_ARGS...]
# The main job: sets up (scripts/install-deps.sh: what is missing), builds (with CUDA where the toolkit
# is, else the CPU-only build; scripts/env.sh), and replays every case file in fixtures/ (the
# regression corpus fixtures/regressions/ included) and captured_tensors/: each is validated,
# recomputed with the oracle and every stored output compared under the tolerance model; the kernel
# runs too when a GPU is present. The last line is the closing line: what passed and what those
# passes compared, what was not run and why (no GPU: the kernel), what could not be used.
# Exit status: vattn replay's (0 all passed, 1 a check failed, 2 unusable input).
#   --no-setup    no set-up and no build: replay with the existing $VATTN_BUILD/vattn (default build/)
#   REPLAY_ARGS   go to `vattn replay` (e.g. --kernel lib.so, --json report.json, --junit out.xml)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
setup=1
case ${1:-} in
  --no-setup) setup=0; shift ;;
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
esac
[ $setup = 0 ] || bash "$here/install-deps.sh"
# shellcheck source=scripts/env.sh
source "$here/env.sh"
[ $setup = 0 ] || vattn_build
[ -x "$VATTN_BUILD/vattn" ] ||
  { echo "replay-all: no $VATTN_BUILD/vattn (run scripts/replay-all.sh without --no-setup)" >&2; exit 2; }
shopt -s nullglob
files=("$VATTN_ROOT"/fixtures/*.h5 "$VATTN_ROOT"/fixtures/regressions/*.h5 "$VATTN_ROOT"/captured_tensors/*.h5)
[ ${#files[@]} -gt 0 ] || { echo "replay-all: no case files in fixtures/ or captured_tensors/" >&2; exit 2; }
# The closing line is read from the JSON report: the caller's --json FILE, else a temporary one.
report=""
prev=""
for a in "$@"; do
  case $a in
    --json=*) report=${a#--json=} ;;
    *) [ "$prev" = --json ] && report=$a ;;
  esac
  prev=$a
done
if [ "$report" = - ]; then
  echo "replay-all: --json - is not supported here (the closing line is read from the report): give a file" >&2
  exit 2
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vattn-replay-all.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
extra=()
if [ -z "$report" ]; then
  report=$tmp/report.json
  extra=(--json "$report")
fi
touch "$tmp/started"  # a report of an earlier run (the caller's --json FILE) is not this run's
rc=0
"$VATTN_BUILD/vattn" replay "${files[@]}" "${extra[@]}" "$@" || rc=$?
echo
if [ "$report" -nt "$tmp/started" ]; then
  python3 "$here/replay_summary.py" "$report" --files ${#files[@]} || rc=$((rc == 0 ? 2 : rc))
else
  echo "== replay-all: vattn replay exited $rc and wrote no report: nothing to sum up (its messages are above) =="
fi
exit "$rc"
# SPDX-License-Identifier: Apache-2.0
