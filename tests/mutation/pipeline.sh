#!/usr/bin/env bash
# pipeline.sh: the mutation pipeline without a GPU (scripts/mutation/mutants.py): universalmutator
# generates mutants of kernels/, a seeded sample of 8 is kept (the same 8 for the same seed),
# built with nvcc for sm_90a; every mutant ends stillborn, equivalent, duplicate or candidate,
# each candidate has its revision library; report writes score.json and score.md. The `run` step
# (vattn fuzz per mutant) needs a GPU: scripts/device/mutation_step.sh.
# Skipped (77) without universalmutator's `mutate` or without nvcc.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
py=$root/scripts/mutation/mutants.py
command -v mutate >/dev/null 2>&1 || { echo "SKIPPED: universalmutator is not installed (pip install universalmutator)"; exit 77; }
command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] || { echo "SKIPPED: no nvcc"; exit 77; }
tmp=$(mktemp -d /tmp/vattn-mutation.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
ok=1
python3 "$py" generate --out "$tmp/a" --sample 8 --seed 5 >"$tmp/gen.log" 2>&1 || { cat "$tmp/gen.log"; exit 1; }
python3 "$py" generate --out "$tmp/b" --sample 8 --seed 5 >/dev/null 2>&1 || exit 1
same=$(python3 -c 'import json,sys; a, b = (json.load(open(p))["mutants"] for p in sys.argv[1:]); print(all(x["diff"] == y["diff"] for x, y in zip(a, b)) and len(a) == 8)' "$tmp/a/mutants.json" "$tmp/b/mutants.json")
[ "$same" = True ] && echo "ok: the same seed keeps the same 8 mutants" || { ok=0; echo "FAIL: the sample is not reproducible"; }
python3 "$py" build --out "$tmp/a" -j 2 >"$tmp/build.log" 2>&1 || { ok=0; echo "FAIL: build"; cat "$tmp/build.log"; }
tail -1 "$tmp/build.log"
python3 - "$tmp/a" <<'PY' || ok=0
import json, os, sys
d = json.load(open(os.path.join(sys.argv[1], "mutants.json")))
bad = [m["id"] for m in d["mutants"] if m["status"] not in ("stillborn", "equivalent", "duplicate", "candidate")]
assert not bad, f"unjudged after build: {bad}"
assert d.get("original_key"), "no key for the original"
for m in d["mutants"]:
    assert m["diff"].startswith("--- a/kernels/"), m["id"]
    if m["status"] == "candidate":
        assert os.path.getsize(os.path.join(sys.argv[1], m["so"])) > 0, m["id"]
    if m["status"] == "stillborn":
        assert m.get("error"), m["id"]
print("ok: every mutant is stillborn, equivalent, duplicate or a candidate with its library")
PY
python3 "$py" report --out "$tmp/a" >"$tmp/report.log" 2>&1 && grep -q "none judged yet" "$tmp/a/score.md" &&
  python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); assert d["schema"] == "vattn-mutation-score" and d["judged"] == 0' "$tmp/a/score.json" &&
  echo "ok: report (nothing judged without a GPU)" || { ok=0; echo "FAIL: report"; cat "$tmp/report.log"; }
python3 "$py" run --out "$tmp/none" --vattn /bin/false >"$tmp/err.log" 2>&1
[ $? -eq 2 ] && grep -q "mutants.json: missing" "$tmp/err.log" && echo "ok: a missing DIR exits 2" || { ok=0; echo "FAIL: missing DIR"; cat "$tmp/err.log"; }
[ $ok -eq 1 ]
# SPDX-License-Identifier: Apache-2.0
