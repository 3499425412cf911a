#!/usr/bin/env bash
# corrupt_read.sh VATTN stall|crash FIXTURE GOOD_FIXTURE
# A corrupt case file must neither hang nor crash `vattn info` or `vattn replay`: each ends with
# exit 2 and a line naming the file, and a replay of a good file given first keeps its printed
# result. Two corruptions of Debian 12's libhdf5, each pinned to one fixture (re-pick the bytes if
# that fixture is regenerated):
#   stall  inverting the 64 bytes at offset 2100 of fixtures/uniform_chain.h5 makes the library loop
#          forever in a string attribute of the header; with VATTN_READ_TIMEOUT=3 the read
#          watchdog must end each command within 10 s;
#   crash  setting byte 2218 of fixtures/adversarial_padded.h5 to 119 garbles a global-heap
#          address, and the library reads through a wild pointer (SIGSEGV); the read guard must
#          turn that into exit 2.
# With Debian 12's libhdf5 (1.10.8, what CI installs) vattn itself must catch both; a libhdf5
# that reports the corruption as an error passes too: the contract is exit 2 and the file named,
# never a hang or a signal. In stall mode VATTN_READ_TIMEOUT=0 must really mean no limit.
set -u
vattn=$1 mode=$2 fixture=$3 good=$4
tmp=$(mktemp -d /tmp/vattn-corrupt-read.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
copy=$tmp/$mode.h5
cp "$fixture" "$copy" || exit 1

# Writes the given byte values (decimal) at offset, in place, with coreutils only.
put_bytes() {
  local offset=$1 esc='' b
  shift
  for b in "$@"; do esc="$esc$(printf '\\0%03o' "$b")"; done
  printf '%b' "$esc" | dd of="$copy" bs=1 seek="$offset" count=$# conv=notrunc 2>/dev/null
}
case $mode in
  stall) offset=2100 count=64 limit=10 caught="did not return within 3 s"
         # shellcheck disable=SC2046  # one argument per byte value, split on purpose
         put_bytes $offset $(dd if="$fixture" bs=1 skip=$offset count=$count 2>/dev/null | od -An -v -tu1 |
                             awk '{for (i = 1; i <= NF; ++i) print 255 - $i}') ;;
  crash) offset=2218 count=1 limit=60 caught="crashed (SIG"
         put_bytes $offset 119 ;;
  *) echo "corrupt_read.sh: mode must be stall or crash"; exit 1 ;;
esac
if [ "$(cmp -l "$fixture" "$copy" | wc -l)" -ne $count ]; then
  echo "could not corrupt the copy: expected $count changed bytes"
  exit 1
fi

hdf5=$(dpkg-query -W -f='${Version}' libhdf5-dev 2>/dev/null)
pinned=0
case $hdf5 in 1.10.8*) pinned=1 ;; esac

ok=1
check() {  # check LABEL EXPECTED_STDOUT_TEXT -- command...
  local label=$1 want_out=$2
  shift 3
  local start
  start=$(date +%s)
  # timeout(1) only keeps a broken watchdog from hanging the test run.
  VATTN_READ_TIMEOUT=3 timeout 60 "$@" >"$tmp/out" 2>"$tmp/err"
  local code=$? took=$(($(date +%s) - start)) bad=''
  [ $code -eq 2 ] || bad="$bad; exit code $code, expected 2"
  [ $took -le $limit ] || bad="$bad; took $took s, expected at most $limit s"
  grep -qF -- "$label: $copy: " "$tmp/err" || bad="$bad; stderr does not name the file after '$label: '"
  [ -z "$want_out" ] || grep -qF -- "$want_out" "$tmp/out" || bad="$bad; stdout lacks '$want_out'"
  if [ -n "$bad" ]; then
    ok=0
    echo "FAIL $*: ${bad#; }"
    echo "--- stdout"; cat "$tmp/out"
    echo "--- stderr"; cat "$tmp/err"
  elif grep -qF "$caught" "$tmp/err"; then
    echo "ok: $label: exit 2 after $took s, caught by vattn: $(cat "$tmp/err")"
  elif [ $pinned -eq 1 ]; then
    ok=0
    echo "FAIL $*: libhdf5 $hdf5 should $mode here, and vattn should say '$caught'; it said: $(cat "$tmp/err")"
  else
    echo "ok: $label: exit 2 after $took s; this libhdf5 reports the corruption itself: $(cat "$tmp/err")"
  fi
}
check "vattn info" "" -- "$vattn" info "$copy"
check "vattn replay" "" -- "$vattn" replay "$copy"
check "vattn replay" "PASS" -- "$vattn" replay "$good" "$copy"
# Where the heap lies depends on the path's length; one length once hid a crash message that
# libhdf5 had zeroed. Try a range of lengths (the message must survive every one).
if [ "$mode" = crash ]; then
  first=$copy dir=$tmp
  for _ in $(seq 1 24); do
    dir=$dir/x; mkdir "$dir"; copy=$dir/$mode.h5; cp "$first" "$copy"
    check "vattn replay" "PASS" -- "$vattn" replay "$good" "$copy"
  done
fi
if [ "$mode" = stall ] && [ "$pinned" -eq 1 ]; then  # 0 = no limit: still reading when timeout(1) ends it
  VATTN_READ_TIMEOUT=0 timeout 5 "$vattn" info "$copy" >/dev/null 2>&1
  code=$?
  if [ $code -eq 124 ]; then echo "ok: VATTN_READ_TIMEOUT=0: still waiting after 5 s"
  else ok=0; echo "FAIL VATTN_READ_TIMEOUT=0: exit $code within 5 s, expected to be still waiting (124)"; fi
fi
[ $ok -eq 1 ]
# SPDX-License-Identifier: Apache-2.0
