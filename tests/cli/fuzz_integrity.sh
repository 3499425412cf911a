#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# fuzz_integrity.sh VATTN MODE
# A campaign folder has one writer, is written only by the campaign, and a run that cannot start
# removes only what it made (issue 51). Host targets, no GPU.
#   lock   host:bf16-reference, 2000 cases, in the background: a second `--resume DIR`, an `--out
#          DIR`, `vattn report DIR` and `fuzz-merge --out DIR` while it runs each exit 2 naming
#          its pid (the merge of a finished campaign into it too); the first campaign exits 0
#          and its journal has each index 0..1999 once, one run.
#   links  links to files outside the folder planted at summary.json.tmp and
#          findings/001-wrong/finding.json.tmp: a --resume writes summary.json and finding.json
#          as files, the links and the outside files are untouched, no temporary is left; a link
#          planted at summary.json, and one at report.html for `vattn report`: exit 2 naming the
#          path, the outside file untouched.
#   start  --out into a folder holding findings/, workers/, pending/ and summary.json (someone's
#          files): exit 2 saying it is not empty, with a start that would fail (--plan-variants on
#          at a host target) and with one that would run, each file as it was; the failing start
#          into an existing empty folder leaves that folder (empty), into a new one leaves nothing.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/fuzz_lib.sh"
mode=$2
d=$tmp/campaign
# snapshot DIR: every path under DIR with its type and content digest, sorted.
snapshot() { (cd "$1" && find . -printf '%y %p %l\n' | sort && find . -type f -exec sha1sum {} + | sort); }

case $mode in
  lock)
    fuzz part --kernel host:bf16-reference "${small[@]}" --cases 5 --seed 2 --out "$tmp/part"
    want_rc part 0
    "$vattn" fuzz --kernel host:bf16-reference "${small[@]}" --cases 2000 --seed 1 --workers 1 --out "$d" \
      >"$tmp/first.out" 2>"$tmp/first.err" </dev/null &
    sup=$!
    for _ in $(seq 600); do
      [ "$(case_lines "$d")" -ge 5 ] && break
      kill -0 $sup 2>/dev/null || break
      sleep 0.05
    done
    [ "$(case_lines "$d")" -ge 5 ] && kill -0 $sup 2>/dev/null || fail "the first campaign did not get going (or ended already)"
    fuzz second --resume "$d"
    want_rc second 2 && has second err "another campaign (pid $sup) holds $d"
    fuzz again --kernel host:bf16-reference "${small[@]}" --cases 10 --seed 1 --out "$d"
    want_rc again 2 && has again err "another campaign (pid $sup) holds $d"
    run report "$vattn" report "$d"
    want_rc report 2 && has report err "another campaign (pid $sup) holds $d"
    run merge "$vattn" fuzz-merge --out "$d" "$tmp/part"
    want_rc merge 2 && has merge err "another campaign (pid $sup) holds $d"
    kill -0 $sup 2>/dev/null || fail "the first campaign ended before the others were refused (make it longer)"
    wait $sup
    rc=$?
    [ $rc -eq 0 ] && echo "ok: the first campaign exits 0" || { fail "the first campaign exits $rc"; cat "$tmp/first.err"; }
    check journal "$d" --cases 2000 --runs 1 --end
    ;;
  links)
    outside=$tmp/outside
    mkdir "$outside"
    for f in a b c r; do echo "precious $f" >"$outside/$f"; done
    before=$(snapshot "$outside")
    fuzz first --kernel host:faulty:wrong@H=3 "${small[@]}" --cases 10 --seed 3 --out "$d"
    want_rc first 1
    fdir=$(ls -d "$d"/findings/001-wrong)
    ln -s "$outside/a" "$d/summary.json.tmp"
    ln -s "$outside/b" "$fdir/finding.json.tmp"
    fuzz resumed --resume "$d" --cases 20 --no-report
    want_rc resumed 1
    [ -f "$d/summary.json" ] && [ ! -L "$d/summary.json" ] && [ -f "$fdir/finding.json" ] && [ ! -L "$fdir/finding.json" ] &&
      echo "ok: summary.json and finding.json are written as files" || fail "summary.json or finding.json is not a file"
    [ -L "$d/summary.json.tmp" ] && [ -L "$fdir/finding.json.tmp" ] && echo "ok: the planted links are still links" ||
      fail "a planted link was replaced or removed"
    left=$(find "$d" -name '*.tmp-*')
    [ -z "$left" ] && echo "ok: no temporary left" || fail "temporaries left: $left"
    check summary "$d" --cases 20
    ln -s "$outside/r" "$d/report.html"
    run report "$vattn" report "$d"
    want_rc report 2 && has report err "$d/report.html" && has report err "symbolic link"
    rm "$d/report.html"
    rm "$d/summary.json"
    ln -s "$outside/c" "$d/summary.json"
    fuzz linked --resume "$d" --cases 30 --no-report
    want_rc linked 2 && has linked err "$d/summary.json" && has linked err "symbolic link"
    [ "$(snapshot "$outside")" = "$before" ] && echo "ok: the files outside the folder are untouched" ||
      fail "a file outside the campaign folder changed: $(snapshot "$outside")"
    ;;
  start)
    f=$tmp/theirs
    mkdir -p "$f/findings/007-crash" "$f/workers" "$f/pending"
    echo keep >"$f/findings/007-crash/finding.json"
    echo keep >"$f/workers/0.log"
    echo keep >"$f/pending/x.h5"
    echo '{"mine": true}' >"$f/summary.json"
    before=$(snapshot "$f")
    fuzz failing --kernel host:bf16-reference "${small[@]}" --plan-variants on --cases 5 --seed 1 --out "$f"
    want_rc failing 2 && has failing err "is not empty and holds no campaign"
    fuzz running --kernel host:bf16-reference "${small[@]}" --cases 5 --seed 1 --out "$f"
    want_rc running 2 && has running err "is not empty and holds no campaign"
    [ "$(snapshot "$f")" = "$before" ] && echo "ok: the folder's files are as they were" ||
      fail "the foreign folder changed: $(snapshot "$f")"
    mkdir "$tmp/empty"
    fuzz empty --kernel host:bf16-reference "${small[@]}" --plan-variants on --cases 5 --seed 1 --out "$tmp/empty"
    want_rc empty 2 && has empty err "plan"
    [ -d "$tmp/empty" ] && [ -z "$(ls -A "$tmp/empty")" ] && echo "ok: the empty folder is left, empty" ||
      fail "the empty folder given to --out: $(ls -A "$tmp/empty" 2>&1)"
    fuzz new --kernel host:bf16-reference "${small[@]}" --plan-variants on --cases 5 --seed 1 --out "$tmp/new/deeper"
    want_rc new 2
    [ ! -e "$tmp/new" ] && echo "ok: a new folder is not left behind" || fail "left behind: $(find "$tmp/new")"
    fuzz ok --kernel host:bf16-reference "${small[@]}" --cases 5 --seed 1 --out "$tmp/empty"
    want_rc ok 0
    ;;
  *)
    fail "unknown mode '$mode'"
    ;;
esac
finish
