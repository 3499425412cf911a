#!/usr/bin/env bash
# read_timeout.sh VATTN FIXTURE
# A corrupt case file must not hang `vattn info` or `vattn replay`. Inverting the 64 bytes at
# offset 2100 of fixtures/uniform_chain.h5 makes Debian 12's libhdf5 loop forever while reading a
# string attribute of the header; with VATTN_READ_TIMEOUT=3 the read watchdog must end each
# command with exit 2 within 10 s, naming the file. (A libhdf5 that reports this corruption as
# an error instead passes too: the contract is exit 2, the file named, no hang.)
set -u
vattn=$1 fixture=$2
offset=2100 count=64 timeout=3 limit=10
tmp=$(mktemp -d /tmp/vattn-read-timeout.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
copy=$tmp/flip$offset.h5
cp "$fixture" "$copy" || exit 1

# Inverts (XOR 0xFF) count bytes at offset, in place, with coreutils only.
esc=''
for b in $(dd if="$copy" bs=1 skip=$offset count=$count 2>/dev/null | od -An -v -tu1); do
  esc="$esc$(printf '\\0%03o' $((255 - b)))"
done
printf '%b' "$esc" | dd of="$copy" bs=1 seek=$offset count=$count conv=notrunc 2>/dev/null
if [ "$(cmp -l "$fixture" "$copy" | wc -l)" -ne $count ]; then
  echo "could not corrupt the copy: expected $count changed bytes"
  exit 1
fi

ok=1
for sub in info replay; do
  start=$(date +%s)
  # timeout(1) only keeps a broken watchdog from hanging the test run.
  VATTN_READ_TIMEOUT=$timeout timeout 30 "$vattn" $sub "$copy" >"$tmp/out" 2>"$tmp/err"
  code=$?
  took=$(($(date +%s) - start))
  bad=''
  [ $code -eq 2 ] || bad="$bad; exit code $code, expected 2"
  [ $took -le $limit ] || bad="$bad; took $took s, expected at most $limit s"
  grep -qF -- "vattn $sub: $copy: " "$tmp/err" || bad="$bad; stderr does not name the file after 'vattn $sub: '"
  if [ -n "$bad" ]; then
    ok=0
    echo "FAIL vattn $sub: ${bad#; }"
    echo "--- stdout"; cat "$tmp/out"
    echo "--- stderr"; cat "$tmp/err"
  elif grep -qF "did not return within $timeout s" "$tmp/err"; then
    echo "ok: vattn $sub: the watchdog ended the read after $took s with exit 2: $(cat "$tmp/err")"
  else
    echo "ok: vattn $sub: exit 2 after $took s; this libhdf5 reports the corruption itself: $(cat "$tmp/err")"
  fi
done
[ $ok -eq 1 ]
