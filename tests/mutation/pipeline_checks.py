#!/usr/bin/env python3
"""Checks and fixtures of tests/mutation/pipeline.sh (each prints one ok line or fails an assertion).

    pipeline_checks.py sources NVCC          each revision's source list against nvcc -M
    pipeline_checks.py generated DIR         DIR was generated from split-v2's sources
    pipeline_checks.py old-file DIR          write a mutants.json as written before revisions were recorded
    pipeline_checks.py old-built DIR         ... and check what build made of it
    pipeline_checks.py candidates DIR N      write a mutants.json of N candidates with empty libraries
    pipeline_checks.py judged DIR LOG        check what run made of them with stand_in_vattn.py
"""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "mutation"))
import mutants  # noqa: E402

KERNELS = os.path.join(ROOT, "kernels")


def diff(name, minus, plus):
    return f"--- a/kernels/{name}\n+++ b/kernels/{name}\n@@ -1 +1 @@\n-{minus}\n+{plus}\n"


def sources(nvcc):
    for rev, spec in mutants.REVISIONS.items():
        p = subprocess.run([nvcc, "-M", "-std=c++17", "-I" + KERNELS, os.path.join(KERNELS, spec["source"])],
                           capture_output=True, text=True, check=True)
        words = p.stdout.replace("\\\n", " ").split()[1:]
        deps = {os.path.basename(w) for w in words if os.path.dirname(os.path.abspath(w)) == KERNELS}
        listed, left = set(spec["sources"]), set(spec["left_out"])
        assert not listed & left, (rev, listed & left)
        assert listed | left == deps, (rev, "compiled, not listed:", sorted(deps - listed - left),
                                       "listed, not compiled:", sorted((listed | left) - deps))
        assert spec["source"] in listed and all(spec["left_out"].values()), rev
    assert mutants.DEFAULT_REVISION == "split-v2"
    print("ok: each revision's source list is what it compiles (nvcc -M), less the files left out with a reason")


def generated(out):
    d = json.load(open(os.path.join(out, "mutants.json")))
    v2 = mutants.REVISIONS["split-v2"]["sources"]
    assert d["revision"] == "split-v2", d.get("revision")
    per = d["generated_per_file"]
    assert list(per) == v2 and all(n > 0 for n in per.values()) and sum(per.values()) == d["generated"], per
    assert all(m["file"] in v2 for m in d["mutants"]), [m["file"] for m in d["mutants"]]
    print("ok: generate mutates split-v2's sources by default (the revision and the count per file recorded)")


def old_file(out):
    # m00000: split_partial.cuh, which only split-v1 compiles, made not to compile; m00001 and
    # m00002: judged records as older runs wrote them (no GPU, campaign or failing-case fields).
    os.makedirs(os.path.join(out, "src"), exist_ok=True)
    with open(os.path.join(KERNELS, "split_partial.cuh")) as f:
        text = f.read().replace("#pragma once\n", "#pragma once\nthis does not compile;\n", 1)
    with open(os.path.join(out, "src", "m00000-split_partial.cuh"), "w") as f:
        f.write(text)
    ms = [{"id": "m00000", "file": "split_partial.cuh", "mutant": "src/m00000-split_partial.cuh",
           "status": "generated", "diff": diff("split_partial.cuh", "a", "b")},
          {"id": "m00001", "file": "split_tile.cuh", "mutant": "src/m00001-split_tile.cuh", "status": "killed",
           "key": "k1", "killed_by": "wrong: vs oracle", "time_to_kill_s": 3.0, "fuzz_seconds": 4.2, "cases": 4,
           "diff": diff("split_tile.cuh", "c", "d")},
          {"id": "m00002", "file": "split_tile.cuh", "mutant": "src/m00002-split_tile.cuh", "status": "survived",
           "key": "k2", "fuzz_seconds": 60.4, "cases": 150, "diff": diff("split_tile.cuh", "e", "f")}]
    with open(os.path.join(out, "mutants.json"), "w") as f:
        json.dump({"schema": "vattn-mutants", "version": 1, "generated": 13235, "sample": 3, "seed": 9,
                   "tool": "universalmutator", "mutants": ms}, f)


def old_built(out):
    d = json.load(open(os.path.join(out, "mutants.json")))
    assert "revision" not in d, "build wrote a revision into an old file"
    assert [m["status"] for m in d["mutants"]] == ["stillborn", "killed", "survived"], d["mutants"]


def candidates(out, n):
    os.makedirs(os.path.join(out, "lib"), exist_ok=True)
    ms = []
    for k in range(n):
        i = f"m{k:05d}"
        open(os.path.join(out, "lib", i + ".so"), "w").close()
        ms.append({"id": i, "file": "split_v2_partial.cuh", "mutant": f"src/{i}-split_v2_partial.cuh", "key": i,
                   "so": f"lib/{i}.so", "status": "candidate", "diff": diff("split_v2_partial.cuh", k, "x")})
    with open(os.path.join(out, "mutants.json"), "w") as f:
        json.dump({"schema": "vattn-mutants", "version": 1, "revision": "split-v2", "generated": n, "sample": 0,
                   "seed": 1, "mutants": ms}, f)


def judged(out, log):
    d = json.load(open(os.path.join(out, "mutants.json")))
    overlaps = os.path.join(log, "overlaps")
    assert not os.path.exists(overlaps), open(overlaps).read()
    camps = {c[0]: c[1:] for c in (line.split() for line in open(os.path.join(log, "campaigns")))}
    threads = max(1, len(os.sched_getaffinity(0)) // 2 - 1)
    assert sorted(camps) == [m["id"] for m in d["mutants"]], camps
    assert {g for g, _ in camps.values()} == {"4", "5"} and all(int(t) == threads for _, t in camps.values()), camps
    for n, m in enumerate(d["mutants"]):
        assert m["gpu"] == camps[m["id"]][0] and m["campaigns_per_gpu"] == 1 and m["threads"] == threads, m
        if n % 3 == 2:
            # Its campaign's only finding was an unconfirmed crash: no kill.
            assert m["status"] == "survived" and "time_to_kill_s" not in m and m["unconfirmed"] == ["002"], m
        else:
            assert m["status"] == "killed" and m["killed_by"] == "wrong: vs oracle", m
            assert m["time_to_kill_s"] == 1.5 + 10 * n and m["first_case"] == 4 and m["first_case_s"] == 0.25, m
    s = json.load(open(os.path.join(out, "score.json")))
    assert s["kills_within"] == 4 and s["kills_within_share"] == 0.8 and s["max_time_to_kill_s"] == 61.5, s
    assert [k["id"] for k in s["slowest_kills"]] == ["m00006", "m00004", "m00003", "m00001", "m00000"], s
    assert s["campaigns_per_gpu"] == [1] and s["gpus"] == ["4", "5"], s
    md = open(os.path.join(out, "score.md")).read()
    assert "Kills within 60 s of one campaign: 4 of 5 (80.0%)" in md and "## The slowest kills (5 of 5)" in md, md
    print("ok: run: one campaign per GPU at a time, each pinned to its GPU; the time to first finding, "
          "the slowest kills and the share within 60 s reported")


def main():
    step, args = sys.argv[1], sys.argv[2:]
    {"sources": lambda: sources(args[0]), "generated": lambda: generated(args[0]),
     "old-file": lambda: old_file(args[0]), "old-built": lambda: old_built(args[0]),
     "candidates": lambda: candidates(args[0], int(args[1])), "judged": lambda: judged(args[0], args[1])}[step]()


if __name__ == "__main__":
    main()
# SPDX-License-Identifier: Apache-2.0
