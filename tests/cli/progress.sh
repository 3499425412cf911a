#!/usr/bin/env bash
# progress.sh VATTN FIXTURE
# `vattn replay` shows a progress line (file, case, the oracle's share) on a terminal only: under
# a pseudo-terminal (script(1)) the line appears; with stderr a file there is no carriage return
# or escape anywhere; --quiet prints no PASS row and no progress line, and still the summary.
set -u
vattn=$1 fixture=$2
tmp=$(mktemp -d /tmp/vattn-progress.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
ok=1
if command -v script >/dev/null 2>&1; then
  script -qec "$vattn replay $fixture" "$tmp/pty.log" >/dev/null 2>&1
  if grep -q "file 1/1, case 1/1 " "$tmp/pty.log" && grep -q "PASS" "$tmp/pty.log"; then
    echo "ok: on a terminal the progress line names the file and the case"
  else
    ok=0; echo "FAIL: no progress line on a terminal:"; cat -v "$tmp/pty.log"
  fi
else
  echo "note: script(1) is missing; the terminal half is not checked"
fi
"$vattn" replay "$fixture" >"$tmp/out" 2>"$tmp/err"
if grep -q $'\r\|\x1b' "$tmp/out" "$tmp/err"; then ok=0; echo "FAIL: control characters off a terminal"; cat -v "$tmp/err"
else echo "ok: off a terminal, no progress line"; fi
"$vattn" replay "$fixture" --quiet >"$tmp/out" 2>"$tmp/err"
code=$?
if [ $code -ne 0 ] || grep -q "PASS" "$tmp/out" || ! grep -q "passed, 0 failed" "$tmp/out"; then
  ok=0; echo "FAIL: --quiet: exit $code"; cat "$tmp/out"
else echo "ok: --quiet prints the summary, no PASS rows"; fi
[ $ok -eq 1 ]
# SPDX-License-Identifier: Apache-2.0
