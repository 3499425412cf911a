#!/usr/bin/env bash
# mutation_step.sh DIR SECONDS PARALLEL LIMIT   (on the GPU machine, from the repository root)
# One device call of the mutation run: builds the sampled mutants in DIR (made here with
# `scripts/mutation/mutants.py generate`, carried along) on the machine's cores if not built yet,
# then judges up to LIMIT candidates with `vattn fuzz` for SECONDS each, PARALLEL at a time, and
# writes DIR/score.md. Copies mutants.json, score.json and score.md to $OUT, so the next call
# can resume from them (carry DIR back).
set -euo pipefail
dir=$1 seconds=${2:-60} parallel=${3:-4} limit=${4:-20}
vattn=${VATTN_BINARY_DIR:-$PWD/.device/build}/vattn
py=scripts/mutation/mutants.py
if python3 -c 'import json,sys; sys.exit(0 if any(m["status"] == "generated" for m in json.load(open(sys.argv[1]))["mutants"]) else 1)' "$dir/mutants.json"; then
  python3 "$py" build --out "$dir" -j "$(nproc)"
fi
python3 "$py" run --out "$dir" --vattn "$vattn" --seconds "$seconds" --parallel "$parallel" --limit "$limit"
if [ -n "${OUT:-}" ]; then cp "$dir"/mutants.json "$dir"/score.json "$dir"/score.md "$OUT"/; fi
# SPDX-License-Identifier: Apache-2.0
