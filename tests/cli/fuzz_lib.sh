# shellcheck shell=bash
# fuzz_lib.sh: sourced by fuzz_supervisor.sh and fuzz_resume.sh (the `vattn fuzz` CLI tests).
# Sets $vattn (the first argument, made absolute), a scratch directory $tmp (removed at exit; also
# $TMPDIR, so what `vattn fuzz --recipe` keeps there goes with it), and these helpers:
#   run NAME COMMAND...     runs COMMAND (stdin /dev/null, output not a terminal), stdout in
#                           $tmp/NAME.out, stderr in $tmp/NAME.err, exit code in $rc
#   fuzz NAME ARGS...       run NAME vattn fuzz ARGS...
#   want_rc NAME CODE       checks $rc, printing NAME's output when it is not CODE
#   has NAME out|err TEXT   NAME's stdout or stderr contains TEXT
#   lacks NAME out|err TEXT
#   check ARGS...           fuzz_check.py ARGS... (the JSON side); a failure counts
#   live_workers DIR        pids of the live worker processes of the campaign in DIR
#   fail TEXT / finish      a failed check (counted) / the test's exit status
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
vattn=$(readlink -f "$1")  # absolute, as the supervisor starts its workers (/proc/self/exe)
tmp=$(mktemp -d /tmp/vattn-fuzz-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export TMPDIR=$tmp
# The options every campaign of these tests shares: the small budget, short deadlines.
# shellcheck disable=SC2034  # used by the scripts that source this file
small=(--budget small --case-timeout 2 --heartbeat-timeout 5 --no-report)
failures=0
rc=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
show() {  # show NAME: what the command printed
  echo "--- $1: stdout"; cat "$tmp/$1.out"
  echo "--- $1: stderr"; cat "$tmp/$1.err"
}
run() {
  local name=$1
  shift
  "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" </dev/null
  rc=$?
  echo "ran: $* -> exit $rc"
}
fuzz() {
  local name=$1
  shift
  run "$name" "$vattn" fuzz "$@"
}
want_rc() {
  if [ "$rc" -ne "$2" ]; then
    fail "$1: exit $rc, expected $2"
    show "$1"
    return 1
  fi
  echo "ok: $1 exits $2"
}
has() {
  if grep -qF -- "$3" "$tmp/$1.$2"; then
    echo "ok: $1 $2 has: $3"
  else
    fail "$1: std$2 lacks: $3"
    show "$1"
  fi
}
lacks() {
  if grep -qF -- "$3" "$tmp/$1.$2"; then
    fail "$1: std$2 has: $3"
    show "$1"
  else
    echo "ok: $1 $2 lacks: $3"
  fi
}
check() { python3 "$here/fuzz_check.py" "$@" || fail "fuzz_check.py $*"; }
# case_lines DIR: how many case lines the journal holds now (0 before it exists).
case_lines() {
  local n
  n=$(grep -c '"t":"case"' "$1/journal.jsonl" 2>/dev/null)
  echo "${n:-0}"
}
# live_workers DIR: pids of live processes whose stdout is a worker log of the campaign in DIR
# (a worker's stdout and stderr go to DIR/workers/<slot>.log), so other tests' workers never count.
live_workers() {
  local p target state
  for p in /proc/[0-9]*; do
    target=$(readlink "$p/fd/1" 2>/dev/null) || continue
    case $target in
      "$1"/workers/*)
        state=$(sed 's/^.*) //' "$p/stat" 2>/dev/null | cut -d' ' -f1)
        [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ] && echo "${p#/proc/}"
        ;;
    esac
  done
  return 0
}
finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed"
    exit 1
  fi
  echo "all checks held"
  exit 0
}
# SPDX-License-Identifier: Apache-2.0
