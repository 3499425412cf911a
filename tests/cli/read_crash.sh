#!/usr/bin/env bash
# read_crash.sh VATTN FIXTURE GOOD_FIXTURE
# A corrupt case file must not crash `vattn info` or `vattn replay`. Setting byte 2218 of
# fixtures/adversarial_padded.h5 to 119 garbles a global-heap address, and Debian 12's libhdf5
# then reads through a wild pointer (SIGSEGV) while reading a string attribute. The read guard
# must turn that into exit 2 with one line naming the file; a replay of a good file given first
# keeps its printed result. (A libhdf5 that reports this corruption as an error passes too: the
# contract is exit 2 and the file named, never a signal.)
set -u
vattn=$1 fixture=$2 good=$3
offset=2218 value=119
tmp=$(mktemp -d /tmp/vattn-read-crash.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
copy=$tmp/byte$offset.h5
cp "$fixture" "$copy" || exit 1
printf "\\$(printf '%03o' $value)" | dd of="$copy" bs=1 seek=$offset count=1 conv=notrunc 2>/dev/null
if [ "$(cmp -l "$fixture" "$copy" | wc -l)" -ne 1 ]; then
  echo "could not corrupt the copy: expected 1 changed byte"
  exit 1
fi

ok=1
check() {  # check LABEL EXPECTED_STDOUT_TEXT -- command...
  local label=$1 want_out=$2
  shift 3
  timeout 60 "$@" >"$tmp/out" 2>"$tmp/err"
  local code=$? bad=''
  [ $code -eq 2 ] || bad="$bad; exit code $code, expected 2"
  grep -qF -- "$label: $copy: " "$tmp/err" || bad="$bad; stderr does not name the file after '$label: '"
  [ -z "$want_out" ] || grep -qF -- "$want_out" "$tmp/out" || bad="$bad; stdout lacks '$want_out'"
  if [ -n "$bad" ]; then
    ok=0
    echo "FAIL $*: ${bad#; }"
    echo "--- stdout"; cat "$tmp/out"
    echo "--- stderr"; cat "$tmp/err"
  elif grep -qF "crashed (SIG" "$tmp/err"; then
    echo "ok: $label: the read guard caught the crash: $(cat "$tmp/err")"
  else
    echo "ok: $label: exit 2; this libhdf5 reports the corruption itself: $(cat "$tmp/err")"
  fi
}
check "vattn info" "" -- "$vattn" info "$copy"
check "vattn replay" "" -- "$vattn" replay "$copy"
check "vattn replay" "PASS" -- "$vattn" replay "$good" "$copy"
[ $ok -eq 1 ]
