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
# Built under another toolchain (say, here, and judged on the GPU machine): the original and the
# candidates whose library is missing are keyed again, and nothing else changes.
python3 - "$tmp/a" <<'PY'
import json, os, sys
p = os.path.join(sys.argv[1], "mutants.json"); d = json.load(open(p))
d["toolchain"] = "another"
for m in d["mutants"]:
    if m["status"] == "candidate":
        os.remove(os.path.join(sys.argv[1], m["so"]))
json.dump(d, open(p, "w"))
PY
before=$(python3 -c 'import json,sys; print(sorted((m["id"], m["status"]) for m in json.load(open(sys.argv[1]))["mutants"]))' "$tmp/a/mutants.json")
python3 "$py" build --out "$tmp/a" -j 2 >"$tmp/rebuild.log" 2>&1 || { ok=0; echo "FAIL: build under another toolchain"; cat "$tmp/rebuild.log"; }
after=$(python3 -c 'import json,sys; print(sorted((m["id"], m["status"]) for m in json.load(open(sys.argv[1]))["mutants"]))' "$tmp/a/mutants.json")
grep -q "another toolchain built" "$tmp/rebuild.log" && [ "$before" = "$after" ] &&
  echo "ok: another toolchain keys the original and the candidates again, statuses unchanged" ||
  { ok=0; echo "FAIL: rebuild under another toolchain"; cat "$tmp/rebuild.log"; echo "$before"; echo "$after"; }
# Verdicts: a survivor shown equivalent leaves the denominator; one not observable stays in it.
python3 - "$tmp/a" "$tmp/verdicts.json" <<'PY'
import json, os, sys
p = os.path.join(sys.argv[1], "mutants.json"); d = json.load(open(p))
ms = [m for m in d["mutants"] if m["status"] in ("candidate", "equivalent", "duplicate", "stillborn")][:3]
def change(diff):
    minus = [l[1:].strip() for l in diff.splitlines() if l.startswith("-") and not l.startswith("---")]
    plus = [l[1:].strip() for l in diff.splitlines() if l.startswith("+") and not l.startswith("+++")]
    return {"-": "\n".join(minus), "+": "\n".join(plus)}
ms[0].update(status="killed", killed_by="wrong: vs oracle", cases=3)
ms[1].update(status="survived", cases=100)
ms[2].update(status="survived", cases=100)
json.dump(d, open(p, "w"))
v = {"schema": "vattn-mutant-verdicts", "version": 1, "verdicts": [
    {"file": ms[1]["file"], "change": change(ms[1]["diff"]), "verdict": "equivalent", "why": "test"},
    {"file": ms[2]["file"], "change": change(ms[2]["diff"]), "verdict": "not-observable", "why": "test"}]}
json.dump(v, open(sys.argv[2], "w"))
PY
python3 "$py" report --out "$tmp/a" --verdicts "$tmp/verdicts.json" >"$tmp/report2.log" 2>&1 &&
  grep -q "Score: 1 killed of 2 judged non-equivalent mutants = 50.0%" "$tmp/a/score.md" &&
  grep -q "verdict not-observable, counted as survivors" "$tmp/a/score.md" &&
  echo "ok: verdicts: equivalent leaves the denominator, not-observable stays" ||
  { ok=0; echo "FAIL: verdicts in the report"; grep -E "Score|not-observable" "$tmp/a/score.md"; cat "$tmp/report2.log"; }
python3 "$py" report --out "$tmp/a" --verdicts "$root/scripts/mutation/verdicts.json" >"$tmp/report3.log" 2>&1 &&
  echo "ok: the repository's verdicts.json loads" || { ok=0; echo "FAIL: scripts/mutation/verdicts.json"; cat "$tmp/report3.log"; }
python3 "$py" run --out "$tmp/none" --vattn /bin/false >"$tmp/err.log" 2>&1
[ $? -eq 2 ] && grep -q "mutants.json: missing" "$tmp/err.log" && echo "ok: a missing DIR exits 2" || { ok=0; echo "FAIL: missing DIR"; cat "$tmp/err.log"; }
[ $ok -eq 1 ]
# SPDX-License-Identifier: Apache-2.0
