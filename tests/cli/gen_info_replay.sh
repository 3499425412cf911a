#!/usr/bin/env bash
# gen -> info -> replay through a temporary file, every profile once: each step exits 0, info
# shows the recipe gen stored, and replay passes the stored oracle of every case.
set -eu
vattn=$1
tmp=$(mktemp -d /tmp/vattn-gen-replay.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for profile in uniform k26 adversarial huge ties tiny; do
  f="$tmp/$profile.h5"
  "$vattn" gen -o "$f" --profile "$profile" --requests 3 --prefix 129,0,16 --drafts 17,2,5 --tree padded \
    --layout sparse --heads 3 --cases 2 --seed 11 >/dev/null
  info=$("$vattn" info "$f") || { echo "$info"; echo "info of $profile failed"; exit 1; }
  echo "$info" | grep -q "profile=$profile" || { echo "$info"; echo "info of $f lacks the recipe"; exit 1; }
  out=$("$vattn" replay "$f") || { echo "$out"; echo "replay of $profile failed"; exit 1; }
  echo "$out" | grep -q "replay: 2 passed, 0 failed" || { echo "$out"; exit 1; }
done
echo "ok: gen -> info -> replay for every profile"
# SPDX-License-Identifier: Apache-2.0
