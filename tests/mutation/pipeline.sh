#!/usr/bin/env bash
# pipeline.sh: the mutation pipeline without a GPU (scripts/mutation/mutants.py). Each revision's
# source list is what nvcc -M says it compiles, less the files left out with a reason;
# universalmutator generates mutants of split-v2's sources (the default revision), a seeded sample
# of 8 is kept (the same 8 for the same seed), each compiled once with nvcc for sm_90a from
# split_revision_v2.cu; every mutant ends stillborn, equivalent, duplicate or candidate, each
# candidate has its revision library; report writes score.json and score.md. A mutants.json from
# before the revision was recorded builds split-v1 (split_revision.cu) and reports as before.
# `run` is driven with a stand-in for vattn fuzz (stand_in_vattn.py): one campaign per GPU at a
# time, each pinned with CUDA_VISIBLE_DEVICES, the time to first finding read from the journal,
# the slowest kills and the share within 60 s, resumed across calls. Real campaigns need a GPU:
# scripts/device/mutation_step.sh. A sample whose mutated sources changed since generate is
# refused by build. pipeline_checks.py holds the longer checks and fixtures.
# Skipped (77) without universalmutator's `mutate` or without nvcc.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
py=$root/scripts/mutation/mutants.py
command -v mutate >/dev/null 2>&1 ||
  { echo "SKIPPED: universalmutator is not installed (optional: scripts/install-deps.sh --with-optional installs it into .venv)"; exit 77; }
command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] || { echo "SKIPPED: no nvcc"; exit 77; }
tmp=$(mktemp -d /tmp/vattn-mutation.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
checks=$root/tests/mutation/pipeline_checks.py
ok=1
python3 "$checks" sources "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" || ok=0
python3 "$py" generate --out "$tmp/a" --sample 8 --seed 5 >"$tmp/gen.log" 2>&1 || { cat "$tmp/gen.log"; exit 1; }
python3 "$py" generate --out "$tmp/b" --sample 8 --seed 5 >/dev/null 2>&1 || exit 1
same=$(python3 -c 'import json,sys; a, b = (json.load(open(p))["mutants"] for p in sys.argv[1:]); print(all(x["diff"] == y["diff"] for x, y in zip(a, b)) and len(a) == 8)' "$tmp/a/mutants.json" "$tmp/b/mutants.json")
[ "$same" = True ] && echo "ok: the same seed keeps the same 8 mutants" || { ok=0; echo "FAIL: the sample is not reproducible"; }
python3 "$checks" generated "$tmp/a" || ok=0
python3 "$py" build --out "$tmp/a" -j 2 >"$tmp/build.log" 2>&1 || { ok=0; echo "FAIL: build"; cat "$tmp/build.log"; }
tail -1 "$tmp/build.log"
grep -q "split-v2: each mutant compiled once from kernels/split_revision_v2.cu" "$tmp/build.log" &&
  echo "ok: build compiles split_revision_v2.cu" || { ok=0; echo "FAIL: build did not compile split-v2"; cat "$tmp/build.log"; }
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
# A sample made from another kernels/ (its recorded hash of a mutated file differs) is refused:
# its mutants would undo what changed since.
cp -r "$tmp/a" "$tmp/stale"
python3 - "$tmp/stale/mutants.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["sources"].get("split_v2_partial.cuh"), "generate recorded no hash of split_v2_partial.cuh"
d["sources"]["split_v2_partial.cuh"] = "0" * 64
json.dump(d, open(sys.argv[1], "w"))
PY
python3 "$py" build --out "$tmp/stale" -j 2 >"$tmp/stale.log" 2>&1
[ $? -eq 2 ] && grep -q "kernels/split_v2_partial.cuh changed since this sample was generated" "$tmp/stale.log" &&
  echo "ok: build refuses a sample whose mutated sources changed since generate" ||
  { ok=0; echo "FAIL: stale sample built"; cat "$tmp/stale.log"; }
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
ms = [m for m in d["mutants"] if m["status"] in ("candidate", "equivalent", "duplicate", "stillborn")][:4]
def change(diff):
    minus = [l[1:].strip() for l in diff.splitlines() if l.startswith("-") and not l.startswith("---")]
    plus = [l[1:].strip() for l in diff.splitlines() if l.startswith("+") and not l.startswith("+++")]
    return {"-": "\n".join(minus), "+": "\n".join(plus)}
ms[0].update(status="killed", killed_by="wrong: vs oracle", cases=3)
ms[1].update(status="survived", cases=100)
ms[2].update(status="survived", cases=100)
ms[3].update(status="survived", cases=100)
json.dump(d, open(p, "w"))
v = {"schema": "vattn-mutant-verdicts", "version": 1, "verdicts": [
    {"file": ms[1]["file"], "change": change(ms[1]["diff"]), "verdict": "equivalent", "why": "test"},
    {"file": ms[2]["file"], "change": change(ms[2]["diff"]), "verdict": "not-observable", "why": "test"},
    {"file": ms[3]["file"], "change": change(ms[3]["diff"]), "verdict": "plan-only", "why": "test"}]}
json.dump(v, open(sys.argv[2], "w"))
PY
python3 "$py" report --out "$tmp/a" --verdicts "$tmp/verdicts.json" >"$tmp/report2.log" 2>&1 &&
  grep -q "Score: 1 killed of 2 judged non-equivalent mutants = 50.0%" "$tmp/a/score.md" &&
  grep -q "verdict not-observable, counted as survivors" "$tmp/a/score.md" &&
  grep -q "1 survivor(s) change only the plan (verdict plan-only, left out of the score" "$tmp/a/score.md" &&
  echo "ok: verdicts: equivalent and plan-only leave the denominator, not-observable stays" ||
  { ok=0; echo "FAIL: verdicts in the report"; grep -E "Score|not-observable" "$tmp/a/score.md"; cat "$tmp/report2.log"; }
python3 "$py" report --out "$tmp/a" --verdicts "$root/scripts/mutation/verdicts.json" >"$tmp/report3.log" 2>&1 &&
  echo "ok: the repository's verdicts.json loads" || { ok=0; echo "FAIL: scripts/mutation/verdicts.json"; cat "$tmp/report3.log"; }
# A mutants.json from before the revision was recorded is split-v1's: build compiles
# split_revision.cu (a mutant of split_partial.cuh, which only split-v1 compiles, that does not
# compile is stillborn) and report reads judged records that lack the newer fields.
python3 "$checks" old-file "$tmp/old"
python3 "$py" build --out "$tmp/old" -j 2 >"$tmp/old-build.log" 2>&1 &&
  grep -q "split-v1: each mutant compiled once from kernels/split_revision.cu" "$tmp/old-build.log" &&
  python3 "$checks" old-built "$tmp/old" &&
  python3 "$py" report --out "$tmp/old" --verdicts "$tmp/verdicts.json" >"$tmp/old-report.log" 2>&1 &&
  grep -q "^# Mutation score of kernels/ (split-v1)" "$tmp/old/score.md" &&
  grep -q "Score: 1 killed of 2 judged non-equivalent mutants = 50.0%" "$tmp/old/score.md" &&
  grep -q "Kills within 60 s of one campaign: 1 of 1 (100.0%)" "$tmp/old/score.md" &&
  echo "ok: a mutants.json without a revision builds and reports as split-v1's" ||
  { ok=0; echo "FAIL: old mutants.json"; cat "$tmp/old-build.log" "$tmp/old-report.log"; head -20 "$tmp/old/score.md"; }
# run, with a stand-in for vattn fuzz: 7 candidates on two GPUs (CUDA_VISIBLE_DEVICES=4,5), one
# campaign per GPU at a time, in two calls (--limit 3, then the rest).
python3 "$checks" candidates "$tmp/r" 7 && cp -r "$tmp/r" "$tmp/r2" && mkdir -p "$tmp/log"
stand_in=$root/tests/mutation/stand_in_vattn.py
export STAND_IN_LOG=$tmp/log
CUDA_VISIBLE_DEVICES=4,5 python3 "$py" run --out "$tmp/r" --vattn "$stand_in" --seconds 5 --limit 3 >"$tmp/run1.log" 2>&1 &&
  CUDA_VISIBLE_DEVICES=4,5 python3 "$py" run --out "$tmp/r" --vattn "$stand_in" --seconds 5 >"$tmp/run2.log" 2>&1 &&
  python3 "$checks" judged "$tmp/r" "$tmp/log" || { ok=0; echo "FAIL: run"; cat "$tmp/run1.log" "$tmp/run2.log"; }
grep -q "run: 3 mutants to judge" "$tmp/run1.log" && grep -q "run: 4 mutants to judge" "$tmp/run2.log" &&
  echo "ok: run resumes: the second call judges only what the first left" ||
  { ok=0; echo "FAIL: resume"; cat "$tmp/run1.log" "$tmp/run2.log"; }
CUDA_VISIBLE_DEVICES=4,5 python3 "$py" run --out "$tmp/r2" --vattn "$stand_in" --gpus 3 >"$tmp/err3.log" 2>&1
[ $? -eq 2 ] && grep -q "only 2 GPU(s) are visible" "$tmp/err3.log" &&
  CUDA_VISIBLE_DEVICES=4,5 python3 "$py" run --out "$tmp/r2" --vattn "$stand_in" --seconds 5 --max-seconds 1 >"$tmp/run3.log" 2>&1 &&
  python3 -c 'import json,sys; assert all(m["status"] == "candidate" for m in json.load(open(sys.argv[1]))["mutants"])' "$tmp/r2/mutants.json" &&
  echo "ok: run refuses more GPUs than it sees, and starts none past --max-seconds" ||
  { ok=0; echo "FAIL: run's limits"; cat "$tmp/err3.log" "$tmp/run3.log"; }
python3 "$py" run --out "$tmp/none" --vattn /bin/false >"$tmp/err.log" 2>&1
[ $? -eq 2 ] && grep -q "mutants.json: missing" "$tmp/err.log" && echo "ok: a missing DIR exits 2" || { ok=0; echo "FAIL: missing DIR"; cat "$tmp/err.log"; }
[ $ok -eq 1 ]
# SPDX-License-Identifier: Apache-2.0
