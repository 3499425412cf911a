#!/usr/bin/env bash
# json_report.sh VATTN FIXTURE
# `--json OUT` is checked before any work and written whole at the end: a report path that names
# an input (directly or through a link), a directory, or a missing folder is refused with exit 2
# before anything is replayed, and the input file is left byte for byte as it was. A good path
# gets a complete JSON report.
set -u
vattn=$1 fixture=$2
tmp=$(mktemp -d /tmp/vattn-json-report.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cp "$fixture" "$tmp/dump.h5" && cp "$fixture" "$tmp/pristine.h5" && ln -s dump.h5 "$tmp/link.h5" || exit 1
ok=1
refuse() {  # refuse OUT EXPECTED_STDERR_TEXT
  "$vattn" replay "$tmp/dump.h5" --json "$1" >"$tmp/out" 2>"$tmp/err"
  local code=$? bad=''
  [ $code -eq 2 ] || bad="$bad; exit code $code, expected 2"
  grep -qF -- "--json $1: $2" "$tmp/err" || bad="$bad; stderr lacks '--json $1: $2'"
  ! grep -qF "== " "$tmp/out" || bad="$bad; cases were replayed before the refusal"
  cmp -s "$tmp/dump.h5" "$tmp/pristine.h5" || bad="$bad; the input file was changed"
  if [ -n "$bad" ]; then ok=0; echo "FAIL --json $1: ${bad#; }"; cat "$tmp/err"; cp "$tmp/pristine.h5" "$tmp/dump.h5"
  else echo "ok: --json $1 refused: $(head -1 "$tmp/err")"; fi
}
refuse "$tmp/dump.h5" "it is the input file"
refuse "$tmp/link.h5" "it is the input file"
refuse "$tmp" "it is a directory"
refuse "$tmp/no/such/folder/r.json" "its folder $tmp/no/such/folder does not exist"

"$vattn" replay "$tmp/dump.h5" --json "$tmp/r.json" >"$tmp/out" 2>"$tmp/err"
code=$?
if [ $code -ne 0 ] || ! grep -q '"results"' "$tmp/r.json" || ! tail -c 3 "$tmp/r.json" | grep -q '}'; then
  ok=0; echo "FAIL --json to a good path: exit $code"; cat "$tmp/err"
elif ls -A "$tmp" | grep -q '\.tmp'; then
  ok=0; echo "FAIL --json left a temporary file: $(ls -A "$tmp")"
else
  echo "ok: --json $tmp/r.json written ($(wc -c <"$tmp/r.json") bytes)"
fi
[ $ok -eq 1 ]
