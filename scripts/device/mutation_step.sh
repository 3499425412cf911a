#!/usr/bin/env bash
# mutation_step.sh DIR SECONDS PER_GPU LIMIT [MAX_SECONDS [GPUS]]   (on the GPU machine, from the repository root)
# One device call of the mutation run: builds the sampled mutants in DIR (made here with
# `scripts/mutation/mutants.py generate`, carried along; the revision is the one DIR records) on
# the machine's cores, each compiled once, or links again the candidates a fresh machine lacks;
# then judges up to LIMIT candidates (0: all) with `vattn fuzz` for SECONDS each, PER_GPU
# campaigns at a time on each GPU (1: a campaign has its GPU to itself), each pinned to its GPU,
# on GPUS GPUs (default: every one visible), starting none that could end past MAX_SECONDS of
# judging (0: no bound), and writes DIR/score.md. Copies mutants.json, score.json and score.md to
# $OUT: put that mutants.json back into DIR and the next call resumes where this one stopped.
set -euo pipefail
dir=$1 seconds=${2:-60} per_gpu=${3:-1} limit=${4:-20} max_seconds=${5:-0} gpus=${6:-}
vattn=${VATTN_BINARY_DIR:-$PWD/.device/build}/vattn
py=scripts/mutation/mutants.py
# Whatever happens below, what was judged so far goes back (a failed build or run included).
send_back() {
  local f
  for f in mutants.json score.json score.md; do
    if [ -e "$dir/$f" ]; then cp "$dir/$f" "$OUT"/; fi
  done
}
if [ -n "${OUT:-}" ]; then trap send_back EXIT; fi
python3 "$py" build --out "$dir" -j "$(nproc)"
python3 "$py" run --out "$dir" --vattn "$vattn" --seconds "$seconds" --parallel "$per_gpu" --limit "$limit" \
  --max-seconds "$max_seconds" ${gpus:+--gpus "$gpus"}
# SPDX-License-Identifier: Apache-2.0
