#!/usr/bin/env bash
# mutation_step.sh DIR SECONDS PARALLEL LIMIT [MAX_SECONDS]   (on the GPU machine, from the repository root)
# One device call of the mutation run: builds the sampled mutants in DIR (made here with
# `scripts/mutation/mutants.py generate`, carried along) on the machine's cores, or links again
# the candidates a fresh machine lacks; then judges up to LIMIT candidates (0: all) with
# `vattn fuzz` for SECONDS each, PARALLEL at a time, starting none that could end past
# MAX_SECONDS of judging, and writes DIR/score.md. Copies mutants.json, score.json and score.md
# to $OUT: put that mutants.json back into DIR and the next call resumes where this one stopped.
set -euo pipefail
dir=$1 seconds=${2:-60} parallel=${3:-4} limit=${4:-20} max_seconds=${5:-0}
vattn=${VATTN_BINARY_DIR:-$PWD/.device/build}/vattn
py=scripts/mutation/mutants.py
python3 "$py" build --out "$dir" -j "$(nproc)"
python3 "$py" run --out "$dir" --vattn "$vattn" --seconds "$seconds" --parallel "$parallel" --limit "$limit" \
  --max-seconds "$max_seconds"
if [ -n "${OUT:-}" ]; then cp "$dir"/mutants.json "$dir"/score.json "$dir"/score.md "$OUT"/; fi
# SPDX-License-Identifier: Apache-2.0
