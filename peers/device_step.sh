#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# device_step.sh   (on the GPU machine, from the repository root)
# FlashInfer's MLA (libvattn_flashinfer_mla.so) checked and timed next to vattn's kernel:
#   cases    vattn gen: chain files (B=2 with different prefixes, one with P=0 and T=1, one with a
#            65536 prefix; H=8) and a tree file; python -m vattn.produce --producer flashinfer
#            --flashinfer-lib with fa2, fa2 held to sm_120's shared memory (--flashinfer-smem sm120)
#            and fa3 into the same files (outputs/flashinfer-fa2, -fa2-smem102400, -fa3); the tree
#            file must be skipped with the reason
#   replay   vattn replay of those files --kernel split-v2: every stored FlashInfer output and
#            split-v2 against the oracle. Passes when split-v2 passes everywhere and every
#            FlashInfer output is within the output bound; a FlashInfer row failing only its lse
#            bound is printed as a finding about the peer (FlashInfer 0.7.2's fa2 on the H200)
#   bench    peers/bench_peers.py: the full table (vattn bench of $VATTN_PEERS_KERNELS, default
#            split-v1,split-v2, a revision not built being reported; the same revisions' libraries
#            timed in the peers' own loop (--revision-lib), which is the comparison without two
#            harnesses in between; FlashInfer fa2, fa2-sm120, fa3; SGLang's Triton kernel) and
#            the accuracy table (--accuracy)
# Needs the staged build (.device/build/vattn), the library (.device/flashinfer/, made here with
# peers/build_flashinfer.sh WHEEL .device/flashinfer) and SGLang's kernel files
# (.device/sglang-files, made with python3 -m vattn.sglang_files extract WHEEL .device/sglang-files);
# scripts/device/stage.sh empties .device: make the two after staging. Every step has a hard
# timeout, all within $VATTN_STEP_BUDGET seconds (default 540). Logs go to $OUT (or /tmp): cases.log,
# replay.log, replay.json, bench.log, bench.json. Exit 0 when every step passed, 1 otherwise,
# 2 usage or a missing input.
#   bash peers/device_step.sh [cases] [replay] [bench]     (default: all three; replay needs cases)
set -uo pipefail
for arg in "$@"; do case $arg in -h|--help) sed -n '3,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;; esac; done
for arg in "$@"; do
  case $arg in cases|replay|bench) ;; *) echo "device_step.sh: unknown step '$arg' (cases replay bench; --help)" >&2; exit 2 ;; esac
done
steps=${*:-cases replay bench}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
b=.device/build lib=.device/flashinfer/libvattn_flashinfer_mla.so sgl=.device/sglang-files
out=${OUT:-/tmp} w=/tmp/vattn-peers
export PYTHONPATH=$root/python/src${PYTHONPATH:+:$PYTHONPATH}
[ -x "$b/vattn" ] || { echo "device_step: no staged build at $b (scripts/device/stage.sh)" >&2; exit 2; }
[ -f "$lib" ] || { echo "device_step: no $lib (peers/build_flashinfer.sh WHEEL .device/flashinfer)" >&2; exit 2; }
[ -f "$sgl/SGLANG_VERSION" ] || echo "device_step: no SGLang files in $sgl: the bench reports sglang as not available"
deadline=$(( $(date +%s) + ${VATTN_STEP_BUDGET:-540} ))
# limit CAP: seconds left for a step, at most CAP (and at least 1)
limit() { local left=$(( deadline - $(date +%s) )); [ "$left" -lt "$1" ] || left=$1; [ "$left" -gt 1 ] || left=1; echo "$left"; }
rc=0 summary=()
note() { summary+=("$1 $2"); [ "$2" = ok ] || rc=1; }
has() { [[ " $steps " == *" $1 "* ]]; }
echo "---- $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
timeout 30 python3 -m vattn.flashinfer_lib "$lib" || { echo "device_step: the library does not load" >&2; exit 2; }

files=("$w/chain.h5" "$w/short.h5" "$w/long.h5")
if has cases; then
  echo "---- cases: vattn gen, then vattn.produce --producer flashinfer (fa2, fa2 at sm_120's shared memory, fa3)"
  rm -rf "$w"; mkdir -p "$w"; : > "$out/cases.log"
  ok=ok
  gen() { timeout "$(limit 60)" "$b/vattn" gen "$@" >> "$out/cases.log" 2>&1 || ok=FAILED; }
  gen -o "$w/chain.h5" --profile k26 --tree chain --heads 8 --prefix 4099,130 --drafts 16,5 --cases 2 --seed 11
  gen -o "$w/short.h5" --profile uniform --tree chain --heads 8 --prefix 0,77,1000 --drafts 1,16,7 --seed 5
  gen -o "$w/long.h5" --profile k26 --tree chain --heads 8 --prefix 65536 --drafts 16 --seed 31
  gen -o "$w/tree.h5" --profile uniform --tree ddtree --heads 8 --prefix 1000 --drafts 17 --seed 21
  for cfg in "fa2" "fa2 --flashinfer-smem sm120" "fa3"; do
    # shellcheck disable=SC2086  # cfg holds the backend and, for one, --flashinfer-smem
    timeout "$(limit 150)" python3 -m vattn.produce --producer flashinfer --flashinfer-lib "$lib" --flashinfer-backend $cfg \
      "${files[@]}" "$w/tree.h5" > "$w/produce.log" 2>&1
    code=$?
    cat "$w/produce.log" >> "$out/cases.log"
    tail -1 "$w/produce.log" | cut -c1-400
    grep -m1 "skipped" "$w/produce.log" | cut -c1-300
    [ $code = 0 ] || { ok=FAILED; echo "produce ($cfg) exit $code"; grep -E "FAILED|Error|error" "$w/produce.log" | head -5; }
    grep -q "tree.h5: case .*: skipped: request 0: its drafts form a tree" "$w/produce.log" ||
      { ok=FAILED; echo "produce ($cfg): the tree file was not skipped with its reason"; }
  done
  note cases $ok
fi

if has replay; then
  echo "---- replay: the stored FlashInfer outputs and split-v2 against the oracle"
  timeout "$(limit 200)" "$b/vattn" replay "${files[@]}" --kernel split-v2 --json "$out/replay.json" > "$out/replay.log" 2>&1
  code=$?
  grep -E "flashinfer|kernel:split-v2" "$out/replay.log" | awk '{print $2, ($3 == "(stored)" ? $4 : $3)}' | sort | uniq -c
  grep -E "FAIL|replay:" "$out/replay.log" | tail -8
  # every file's cases must carry all three FlashInfer outputs
  n=$(grep -cE "flashinfer-(fa2|fa2-smem102400|fa3) \(stored\)" "$out/replay.log")
  cases=$(grep -cE "^[^ ]+ +kernel:split-v2 +(PASS|FAIL)" "$out/replay.log")
  echo "replay exit $code; $n stored FlashInfer rows for $cases cases (3 per case expected)"
  # The verdict: split-v2 must pass everywhere and every FlashInfer output must be within the
  # output bound. A FlashInfer row whose only failure is its lse (lse_bound) is a finding about
  # the peer, printed with its figures, not a failure of this step.
  verdict=$(python3 - "$out/replay.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
bad, lse_only = [], {}
for x in r["results"]:
    kinds = sorted({f.split(":")[0] for f in x["failures"]})
    if x["pass"]:
        continue
    if x["producer"].startswith("flashinfer") and kinds == ["lse_bound"]:
        lse_only.setdefault(x["producer"], []).append(x["lse_worst_err_over_bound"])
    else:
        bad.append(f"{x['case']} {x['producer']}: {', '.join(kinds)}")
for prod, w in sorted(lse_only.items()):
    print(f"finding: {prod}: lse over the lse bound in {len(w)} case(s), worst lse err/bound {max(w):.3g}; its outputs are within bound")
for b in bad:
    print(f"FAILED: {b}")
print("verdict:", "ok" if not bad and not r["unusable"] else "FAILED")
PY
)
  echo "$verdict"
  if [ "$n" -gt 0 ] && [ "$n" = $(( 3 * cases )) ] && grep -q "verdict: ok" <<<"$verdict"; then note replay ok; else note replay FAILED; fi
fi

if has bench; then
  echo "---- bench: peers/bench_peers.py (full table)"
  kernels=${VATTN_PEERS_KERNELS:-split-v1,split-v2}
  revlibs=()
  for k in ${kernels//,/ }; do
    f="$b/revisions/libvattn_rev_${k//-/_}.so"
    if [ -f "$f" ]; then revlibs+=(--revision-lib "$f"); else echo "bench: no library $f: $k is timed by vattn bench only"; fi
  done
  timeout "$(limit 360)" python3 peers/bench_peers.py --vattn "$b/vattn" --kernel "$kernels" ${revlibs[@]+"${revlibs[@]}"} --accuracy \
    --flashinfer-lib "$lib" --sglang-files "$sgl" --json "$out/bench.json" > "$out/bench.log" 2>&1
  code=$?
  grep -v "^bench_peers: B=" "$out/bench.log" | tail -105 | cut -c1-420  # the three tables
  echo "bench exit $code"
  if [ $code = 0 ]; then note bench ok; else note bench FAILED; fi
fi

echo "device_step: ${summary[*]:-nothing run}; $(( ${VATTN_STEP_BUDGET:-540} - deadline + $(date +%s) )) s; exit $rc"
exit $rc
