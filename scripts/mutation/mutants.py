#!/usr/bin/env python3
"""Mutation testing of kernels/: how many realistic kernel bugs does the suite catch?

Mutants come from an established tool, universalmutator (PyPI; its C/C++ rules read CUDA):
flipped comparisons, off-by-one constants and bounds, swapped or dropped operands, removed
statements (barriers and waits included), changed shifts and masks. This script only drives it:

  generate  mutate every source that one revision compiles (--revision: split-v2, the shipped
            default, or split-v1, the baseline) with universalmutator (--noCheck), keep a seeded
            sample; the revision is recorded in DIR/mutants.json (a file without one is split-v1's)
  build     compile each mutant once (nvcc -c, sm_90a, the revision library's flags, in parallel):
            a mutant that does not compile is stillborn; one whose device code (the object's
            fatbin, which holds the sm_90a cubin as ptxas wrote it) and host code (its disassembly
            and constants, the front end's per-compile namespace hash masked) equal the original's
            is equivalent by construction; one equal to an earlier mutant is a duplicate. The rest
            are linked into revision libraries (on a fresh machine, build links again the
            candidates whose library is missing).
  run       `vattn fuzz --kernel mutant.so --stop-after-findings 1` for a fixed time per mutant,
            on a GPU machine: one campaign per GPU at a time (--parallel: campaigns per GPU),
            each pinned to its GPU with CUDA_VISIBLE_DEVICES; a crash, hang or wrong answer kills
            it. Resumable: mutants already judged are skipped, so the full run can be split
            across device calls (--limit, --max-seconds).
  report    the mutation score (killed / judged non-equivalent mutants), each kill's time to first
            finding (the campaign's start to its first failing case) and the slowest of them, the
            share of kills within --kill-within seconds, the check that killed each, and every
            survivor with its diff and its verdict from scripts/mutation/verdicts.json (a survivor
            shown equivalent, or one that only changes the plan, leaves the denominator):
            DIR/score.json and DIR/score.md.

usage:
  mutants.py generate --out DIR [--revision split-v2|split-v1] [--sample N] [--seed S] [--mutate PATH]
  mutants.py build --out DIR [-j N] [--nvcc PATH]
  mutants.py run --out DIR --vattn PATH [--seconds 60] [--gpus N] [--parallel K] [--limit N] [--max-seconds S]
  mutants.py report --out DIR [--verdicts FILE] [--kill-within 60]
Every step reads and writes DIR/mutants.json (one record per mutant, its status and evidence).
"""

import argparse
import concurrent.futures
import difflib
import hashlib
import json
import os
import queue
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNELS = os.path.join(ROOT, "kernels")
# Each revision: the .cu its library is built from, the sources it compiles in that are mutated,
# and those it compiles in (nvcc -M) where a mutant could only be equivalent, with the reason.
# split-v2 does not include split_partial.cuh or split_tile.cuh.
_NOT_KERNEL = {"timeline.cuh": "empty without -DVATTN_TIMELINE (the timing probe's build)",
               "vattn_abi.h": "the interface the suite is compiled against too: a mutant there breaks the "
                              "contract between the two, not the kernel"}
REVISIONS = {
    "split-v1": {"source": "split_revision.cu",
                 "sources": ["split_revision.cu", "split_revision.cuh", "split_traits.h", "split_partial.cuh",
                             "split_keys.cuh", "split_tile.cuh", "split_reduce.cuh", "split_plan.cuh",
                             "split_params.h", "mma_sm80.cuh"],
                 "left_out": dict(_NOT_KERNEL, **{"pdl.cuh": "no-ops without Traits::kPdl, which split-v1 leaves off",
                                                  "split_pack.h": "called only under Traits::kPackLoneRequest, "
                                                                  "which split-v1 leaves off"})},
    "split-v2": {"source": "split_revision_v2.cu",
                 "sources": ["split_revision_v2.cu", "split_revision.cuh", "split_traits.h", "split_v2_partial.cuh",
                             "split_keys.cuh", "split_pack.h", "split_reduce.cuh", "split_plan.cuh", "split_params.h",
                             "mma_sm80.cuh", "pdl.cuh"],
                 "left_out": dict(_NOT_KERNEL)},
}
DEFAULT_REVISION = "split-v2"
OLD_REVISION = "split-v1"  # mutants.json files written before the revision was recorded
# The revision library's compile line (kernels/CMakeLists.txt, vattn_rev_split_v1 and _v2: the same
# flags for both; PDL is Traits::kPdl, not a flag): Release's -O3 -DNDEBUG, CUDA_STANDARD 17,
# position-independent, hidden visibility, VATTN_EXPORT_GET_REVISION, vattn_cuda_target's
# --expt-relaxed-constexpr and vattn_warnings' one error flag. For sm_90a only: the GPUs that
# judge the mutants are Hopper. Without -lineinfo, which adds only line tables (the same .text in
# the cubin), and those would name each mutant's temporary directory.
FLAGS = ["-O3", "-DNDEBUG", "-DVATTN_EXPORT_GET_REVISION", "-Xcompiler=-fPIC", "-Xcompiler=-fvisibility=hidden",
         "-gencode=arch=compute_90a,code=sm_90a", "--expt-relaxed-constexpr", "-std=c++17",
         "--Werror=cross-execution-space-call"]
# What a key is made of (folded into the toolchain's hash: keys of another scheme are made again).
KEY_SCHEME = "fatbin+host-v2"
SCHEMA = "vattn-mutants"
# Host sections whose bytes are constants the code reads (the device code is the cubin).
HOST_DATA_SECTIONS = [".rodata", ".rodata.str1.1", ".rodata.str1.8", ".rodata.cst4", ".rodata.cst8", ".rodata.cst16",
                      ".data", ".data.rel.ro.local"]


def die(msg):
    print(f"mutants.py: {msg}", file=sys.stderr)
    sys.exit(2)


def load(out):
    path = os.path.join(out, "mutants.json")
    try:
        with open(path) as f:
            d = json.load(f)
    except FileNotFoundError:
        die(f"{path}: missing (run `mutants.py generate --out {out}` first)")
    except json.JSONDecodeError as e:
        die(f"{path}: not JSON ({e})")
    if d.get("schema") != SCHEMA or d.get("version") != 1:
        die(f"{path}: not a {SCHEMA} version 1 file")
    if revision_of(d) not in REVISIONS:
        die(f"{path}: revision {revision_of(d)!r} is not one of {', '.join(REVISIONS)}")
    return d


def revision_of(d):
    return d.get("revision", OLD_REVISION)


def save(out, d):
    path = os.path.join(out, "mutants.json")
    with open(path + ".tmp", "w") as f:
        json.dump(d, f, indent=1)
    os.replace(path + ".tmp", path)


def unified_diff(original, mutated, name):
    return "".join(difflib.unified_diff(original.splitlines(True), mutated.splitlines(True), "a/kernels/" + name,
                                        "b/kernels/" + name, n=1))


def cmd_generate(a):
    mutate = a.mutate or shutil.which("mutate")
    if not mutate:
        die(
            "universalmutator's `mutate` is not on PATH (scripts/install-deps.sh --with-optional installs it into .venv:"
            " source .venv/bin/activate), or give --mutate PATH"
        )
    os.makedirs(a.out, exist_ok=True)
    raw = os.path.join(a.out, "raw")
    records, per_file, hashes = [], {}, {}
    for name in REVISIONS[a.revision]["sources"]:
        src = os.path.join(KERNELS, name)
        dest = os.path.join(raw, name)
        os.makedirs(dest, exist_ok=True)
        p = subprocess.run([mutate, src, "cpp", "--noCheck", "--mutantDir", dest], capture_output=True, text=True,
                           cwd=dest, timeout=600)
        if p.returncode != 0:
            die(f"mutate {src}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
        with open(src) as f:
            original = f.read()
        hashes[name] = hashlib.sha256(original.encode()).hexdigest()
        for m in sorted(os.listdir(dest), key=lambda s: int(re.search(r"\.mutant\.(\d+)\.", s).group(1))):
            with open(os.path.join(dest, m)) as f:
                diff = unified_diff(original, f.read(), name)
            records.append({"file": name, "mutant": os.path.join("raw", name, m), "diff": diff})
        per_file[name] = len(os.listdir(dest))
        print(f"generate: {name}: {per_file[name]} mutants")
    total = len(records)
    if a.sample and a.sample < total:
        records = random.Random(a.seed).sample(records, a.sample)
    # Only the sample stays (DIR/src/), so DIR is small enough to carry to a GPU machine.
    os.makedirs(os.path.join(a.out, "src"), exist_ok=True)
    for i, r in enumerate(records):
        r["id"] = f"m{i:05d}"
        r["status"] = "generated"
        kept = os.path.join("src", r["id"] + "-" + r["file"])
        shutil.copyfile(os.path.join(a.out, r["mutant"]), os.path.join(a.out, kept))
        r["mutant"] = kept
    shutil.rmtree(raw)
    save(a.out, {"schema": SCHEMA, "version": 1, "revision": a.revision, "generated": total,
                 "generated_per_file": per_file, "sources": hashes, "sample": a.sample, "seed": a.seed,
                 "tool": "universalmutator", "mutants": records})
    kept = {}
    for r in records:
        kept[r["file"]] = kept.get(r["file"], 0) + 1
    print(f"generate: {a.revision}: {total} mutants in all; kept {len(records)}"
          + (f" (sample, seed {a.seed}): " + ", ".join(f"{k} {v}" for k, v in sorted(kept.items())) if a.sample else ""))


def elf_section(path, name):
    """The bytes of one section of an ELF64 little-endian file (the host object nvcc wrote), or None."""
    with open(path, "rb") as f:
        b = f.read()
    if b[:4] != b"\x7fELF" or b[4] != 2 or b[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    heads = [struct.unpack_from("<IIQQQQ", b, shoff + i * shentsize) for i in range(shnum)]
    names = heads[shstrndx]
    for h in heads:
        start = names[4] + h[0]
        if b[start:b.index(b"\0", start)].decode() == name:
            return b[h[4]:h[4] + h[5]]
    return None


def compile_tree(nvcc, tree, work, source):
    """Compiles the revision's .cu of a kernels/ copy, once: (ok, key or error, object path)."""
    obj = os.path.join(work, "rev.o")
    p = subprocess.run([nvcc, "-I" + tree] + FLAGS + ["-c", "-o", obj, os.path.join(tree, source)],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        return False, (p.stderr.strip().splitlines() or ["?"])[-1][:300], None
    # The device code: the object's fatbin holds the cubin byte for byte as -cubin writes it, behind
    # a header that names neither the source nor its directory.
    fatbin = elf_section(obj, ".nv_fatbin")
    if not fatbin:
        return False, "no .nv_fatbin section in the object", None
    h = hashlib.sha256(fatbin)
    # The host code and its constants. The first lines name the file; the front end names the
    # anonymous namespace after a per-compile hash (_GLOBAL__N__<hex>_), which is not code.
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", obj], capture_output=True, text=True).stdout
    dis = re.sub(r"_GLOBAL__N__[0-9a-f]+_", "_GLOBAL__N__X_", "\n".join(dis.splitlines()[2:]))
    data = subprocess.run(["objdump", "-s"] + [f"-j{s}" for s in HOST_DATA_SECTIONS] + [obj], capture_output=True,
                          text=True).stdout
    h.update(dis.encode())
    h.update("\n".join(data.splitlines()[2:]).encode())
    return True, h.hexdigest(), obj


def build_one(nvcc, out, source, r):
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="vattn-mutant-") as work:
        tree = os.path.join(work, "kernels")
        shutil.copytree(KERNELS, tree)
        if r is not None:
            shutil.copyfile(os.path.join(out, r["mutant"]), os.path.join(tree, r["file"]))
        ok, key, obj = compile_tree(nvcc, tree, work, source)
        if not ok:
            return {"status": "stillborn", "error": key}, time.time() - t0
        so = os.path.join(out, "lib", (r["id"] if r else "original") + ".so")
        os.makedirs(os.path.dirname(so), exist_ok=True)
        p = subprocess.run([nvcc, "-shared", "-o", so, obj], capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            return {"status": "stillborn", "error": "link: " + p.stderr.strip()[-300:]}, time.time() - t0
        return {"status": "compiled", "key": key, "so": os.path.relpath(so, out)}, time.time() - t0


def toolchain(nvcc, source):
    """The compilers' versions, the flags, the revision's source and the key's scheme: equal sources
    give equal keys only when all of these are the same."""
    h = hashlib.sha256(json.dumps([KEY_SCHEME, FLAGS, source]).encode())
    for cmd in ([nvcc, "--version"], [os.environ.get("CXX", "c++"), "--version"]):
        try:
            h.update(subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.encode())
        except OSError:
            h.update(b"?")
    return h.hexdigest()[:16]


def changed_sources(d):
    """The mutated files whose kernels/ copy differs from the one the sample was made from."""
    changed = []
    for name, digest in sorted(d.get("sources", {}).items()):
        try:
            with open(os.path.join(KERNELS, name), "rb") as f:
                now = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            now = None
        if now != digest:
            changed.append(name)
    return changed


def cmd_build(a):
    d = load(a.out)
    # A mutant is a whole copy of one file: built over a kernels/ that has moved on since the sample
    # was made, it would also undo every change made since, and be judged as a bug it is not.
    changed = changed_sources(d)
    if changed:
        die(f"{a.out}/mutants.json: kernels/{', kernels/'.join(changed)} changed since this sample was generated; "
            "its mutants would undo those changes: generate a fresh sample")
    if "sources" not in d:
        print(f"build: {a.out}/mutants.json records no hashes of its sources (written before they were): "
              "its mutants cannot be checked against kernels/", flush=True)
    nvcc = a.nvcc or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    revision = revision_of(d)
    source = REVISIONS[revision]["source"]
    print(f"build: {revision}: each mutant compiled once from kernels/{source}, -j {a.jobs}", flush=True)
    tc = toolchain(nvcc, source)
    if d.get("toolchain") not in (None, tc):
        # Keys made by other compilers (say, built on this machine, judged on the GPU machine, whose
        # host compiler differs), or with other flags or another key scheme, cannot be compared with
        # this one's: the original and every candidate whose library is not here are keyed again.
        # Stillborn and equivalent mutants keep their status: the device code comes from the same
        # nvcc release.
        again = [r for r in d["mutants"] if r["status"] in ("candidate", "duplicate")
                 and not os.path.exists(os.path.join(a.out, r.get("so", "-")))]
        print(f"build: another toolchain built {a.out} before; keying the original and {len(again)} candidates again",
              flush=True)
        for r in again:
            for k in ("key", "so", "same_as"):
                r.pop(k, None)
            r["status"] = "generated"
        d.pop("original_key", None)
    d["toolchain"] = tc
    if "original_key" not in d:
        res, _ = build_one(nvcc, a.out, source, None)
        if res["status"] != "compiled":
            die(f"the original kernels/ does not compile: {res.get('error')}")
        d["original_key"] = res["key"]
        save(a.out, d)
    todo = [r for r in d["mutants"] if r["status"] == "generated"]
    # A candidate not judged yet whose library is gone (a fresh GPU machine) is linked again.
    relink = [r for r in d["mutants"] if r["status"] == "candidate" and not os.path.exists(os.path.join(a.out, r["so"]))]
    t0, busy, compiled = time.time(), 0.0, 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futures = {pool.submit(build_one, nvcc, a.out, source, r): r for r in todo + relink}
        for n, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            r, (res, seconds) = futures[fut], fut.result()
            busy += seconds
            compiled += res["status"] == "compiled"
            if r["status"] == "candidate":
                if res["status"] != "compiled" or res["key"] != r["key"]:
                    die(f"{r['id']}: built again it is not the candidate it was ({res.get('error') or 'other code'})")
                continue
            r.update(res)
            if n % 20 == 0 or n == len(todo):
                print(f"build: {n}/{len(todo) + len(relink)} ({time.time() - t0:.0f} s)", flush=True)
                save(a.out, d)
    if todo or relink:
        print(f"build: {len(todo) + len(relink)} mutants in {time.time() - t0:.0f} s ({compiled} compiled and linked; "
              f"{busy / (len(todo) + len(relink)):.1f} s each on average, -j {a.jobs})", flush=True)
    seen = {d["original_key"]: "original"}
    for r in sorted(d["mutants"], key=lambda r: r["id"]):  # the first of equal mutants stands for them
        if r["status"] in ("candidate", "killed", "survived", "unjudged"):
            seen.setdefault(r["key"], r["id"])
        if r["status"] != "compiled":
            continue
        if r["key"] in seen:
            r["status"] = "equivalent" if seen[r["key"]] == "original" else "duplicate"
            r["same_as"] = seen[r["key"]]
            os.remove(os.path.join(a.out, r.pop("so")))
        else:
            seen[r["key"]] = r["id"]
            r["status"] = "candidate"
    save(a.out, d)
    counts = {}
    for r in d["mutants"]:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    print("build: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


def judge(vattn, out, r, seconds, threads, gpu):
    camp = os.path.join(out, "campaigns", r["id"])
    shutil.rmtree(camp, ignore_errors=True)
    t0 = time.time()
    # The first confirmed finding kills the mutant: the campaign stops there (no shrinking). The
    # campaign sees its GPU alone: `vattn fuzz` starts one worker per visible GPU.
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=gpu)
    p = subprocess.run([vattn, "fuzz", "--kernel", os.path.join(out, r["so"]), "--hours", f"{seconds / 3600:.6f}",
                        "--out", camp, "--no-report", "--max-shrink-runs", "0", "--stop-after-findings", "1",
                        "--threads", str(threads)],
                       capture_output=True, text=True, timeout=seconds + 600, env=env)
    res = {"fuzz_exit": p.returncode, "fuzz_seconds": round(time.time() - t0, 1), "gpu": gpu, "threads": threads}
    try:
        with open(os.path.join(camp, "summary.json")) as f:
            s = json.load(f)
    except (OSError, json.JSONDecodeError):
        res.update(status="unjudged", error=(p.stderr.strip().splitlines() or ["no summary.json"])[-1][:300])
        return res
    res["cases"] = s.get("campaign_cases", 0)
    # A crash or hang a fresh worker did not repeat is listed under "unconfirmed": it kills nothing.
    unconfirmed = set(s.get("unconfirmed") or [])
    confirmed = [f for f in s.get("findings") or [] if f.get("id") not in unconfirmed]
    if unconfirmed:
        res["unconfirmed"] = sorted(unconfirmed)
    if confirmed:
        f = confirmed[0]
        res.update(status="killed", killed_by=f.get("signature", "?"), first_case=f.get("first_case", {}).get("index"))
        first = first_finding(camp, {c.get("id") for c in confirmed})
        if first:
            res.update(time_to_kill_s=first["elapsed_s"], first_case=first["index"], first_case_s=first["case_s"])
            res["killed_by"] = first["sig"] or res["killed_by"]
        else:
            res["time_to_kill_s"] = None
    else:
        res["status"] = "survived"
    return res


def first_finding(camp, ids):
    """The campaign's first failing case, from its journal: the finding line is written when the
    case's verdict comes in, before the finding is confirmed in a fresh worker; its elapsed_s counts
    from the campaign's start (before its workers start), so the time to first finding includes
    starting a worker and loading the library. case_s: the failing case's own duration (its
    verdict's total_s; the case started that long before)."""
    first = None
    try:
        with open(os.path.join(camp, "journal.jsonl")) as f:
            for line in f:
                try:
                    j = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a torn last line (a killed campaign)
                if j.get("t") != "finding" or j.get("elapsed_s") is None or j.get("id") not in ids:
                    continue
                if first is None or j["elapsed_s"] < first["elapsed_s"]:
                    v = j.get("first", {})
                    first = {"elapsed_s": j["elapsed_s"], "sig": j.get("sig"), "index": v.get("index"),
                             "case_s": v.get("total_s")}
    except OSError:
        pass
    return first


def visible_gpus():
    """The GPUs this machine lets a campaign use, as `vattn fuzz` finds them: CUDA_VISIBLE_DEVICES
    when set, else the driver's /proc entries, else `nvidia-smi -L`."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g for g in env.split(",") if g and g != "-1"]
    try:
        n = len(os.listdir("/proc/driver/nvidia/gpus"))
    except OSError:
        n = 0
    if n == 0:
        try:
            lines = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60).stdout
            n = sum(1 for line in lines.splitlines() if line.startswith("GPU "))
        except (OSError, subprocess.TimeoutExpired):
            n = 0
    return [str(i) for i in range(n)]


def gpu_shares(n):
    """The GPUs to judge on: the first n visible ones (all of them without n); n GPUs numbered 0..n-1
    where none is seen (a test with a stand-in for vattn)."""
    seen = visible_gpus()
    if not n:
        if not seen:
            die("run: no GPU found (CUDA_VISIBLE_DEVICES, /proc/driver/nvidia/gpus, nvidia-smi -L); give --gpus N")
        return seen
    if seen and n > len(seen):
        die(f"run: --gpus {n}, but only {len(seen)} GPU(s) are visible ({','.join(seen)})")
    return seen[:n] if seen else [str(i) for i in range(n)]


def cmd_run(a):
    d = load(a.out)
    todo = [r for r in d["mutants"] if r["status"] == "candidate"][: a.limit or None]
    gpus = gpu_shares(a.gpus)
    campaigns = len(gpus) * a.parallel
    # Each campaign's worker gets an equal share of the cores for generation and CPU oracles (one
    # core of the share is left to its supervisor).
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 2
    threads = max(1, cores // campaigns - 1)
    print(f"run: {len(todo)} mutants to judge, {a.seconds:g} s each, on {len(gpus)} GPU(s) ({','.join(gpus)}), "
          f"{a.parallel} campaign(s) per GPU at a time, {threads} threads each ({cores} cores)", flush=True)
    # A GPU share is a token: a campaign takes one, runs pinned to its GPU and gives it back.
    shares = queue.Queue()
    for _ in range(a.parallel):
        for g in gpus:
            shares.put(g)
    deadline = time.time() + a.max_seconds if a.max_seconds else None

    def judge_in_time(r):  # past --max-seconds no new mutant starts: it stays for the next call
        if deadline is not None and time.time() + a.seconds > deadline:
            return {}
        gpu = shares.get()
        try:
            if deadline is not None and time.time() + a.seconds > deadline:
                return {}
            res = judge(a.vattn, a.out, r, a.seconds, threads, gpu)
            res["campaigns_per_gpu"] = a.parallel
            return res
        finally:
            shares.put(gpu)

    with concurrent.futures.ThreadPoolExecutor(max_workers=campaigns) as pool:
        futures = {pool.submit(judge_in_time, r): r for r in todo}
        for n, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            r = futures[fut]
            res = fut.result()
            if not res:
                continue
            r.update(res)
            save(a.out, d)
            ttk = r.get("time_to_kill_s")
            print(f"run: {n}/{len(todo)} {r['id']} ({r['file']}, GPU {r['gpu']}): {r['status']}"
                  + (f" by {r['killed_by']}" if r.get("killed_by") else "")
                  + (f" after {ttk:.1f} s" if ttk is not None else "") + f" ({r['fuzz_seconds']} s in all)", flush=True)
    cmd_report(a)


def change_of(diff):
    """The mutant's change as its removed and added lines (hunk positions left out, so a verdict
    still matches after unrelated edits move the line)."""
    minus = [l[1:].strip() for l in diff.splitlines() if l.startswith("-") and not l.startswith("---")]
    plus = [l[1:].strip() for l in diff.splitlines() if l.startswith("+") and not l.startswith("+++")]
    return {"-": "\n".join(minus), "+": "\n".join(plus)}


# equivalent: no input can tell it from the original (it leaves the denominator);
# killed-by-new-check: a check added since kills it (the next run must show it killed);
# not-observable: it does differ, but only in a way no output can show (say, an ordering the
# hardware does not exhibit); it stays a survivor in the denominator, with the reason recorded;
# plan-only: it changes only how the work is cut (the planner's cost model, packing, balance),
# which the contract leaves to each revision: every plan must give outputs within the tolerance,
# so no correctness check may fail it; a benchmark sees it. It leaves the denominator and is
# listed apart from the equivalent ones.
VERDICTS = ("equivalent", "killed-by-new-check", "not-observable", "plan-only")
LEAVE_DENOMINATOR = ("equivalent", "plan-only")


def load_verdicts(path):
    """scripts/mutation/verdicts.json: survivors' verdicts, kept in the repo, keyed by file and change."""
    try:
        with open(path) as f:
            v = json.load(f)
    except FileNotFoundError:
        return {}
    except json.JSONDecodeError as e:
        die(f"{path}: not JSON ({e})")
    if v.get("schema") != "vattn-mutant-verdicts" or v.get("version") != 1:
        die(f"{path}: not a vattn-mutant-verdicts version 1 file")
    out = {}
    for i, e in enumerate(v.get("verdicts", [])):
        if e.get("verdict") not in VERDICTS or not e.get("why") or "file" not in e:
            die(f"{path}: verdict {i}: needs file, change, verdict ({' | '.join(VERDICTS)}) and why")
        out[(e["file"], e["change"]["-"], e["change"]["+"])] = e
    return out


SLOWEST = 10  # the slowest kills listed in the report


def cmd_report(a):
    d = load(a.out)
    ms = d["mutants"]
    revision = revision_of(d)
    verdicts = load_verdicts(a.verdicts)
    by = {}
    for r in ms:
        by.setdefault(r["status"], []).append(r)
    killed, survived = by.get("killed", []), by.get("survived", [])
    for r in survived:
        c = change_of(r["diff"])
        e = verdicts.get((r["file"], c["-"], c["+"]))
        r["verdict"] = e["verdict"] if e else "open"
        r["why"] = e["why"] if e else ""
    # A survivor shown equivalent is not a mutant the suite could kill: it leaves the denominator.
    # One whose verdict names a new check that kills it, yet survived, stays in (and is flagged).
    equivalent = [r for r in survived if r["verdict"] == "equivalent"]
    plan_only = [r for r in survived if r["verdict"] == "plan-only"]
    judged = len(killed) + len(survived) - len(equivalent) - len(plan_only)
    score = len(killed) / judged if judged else None
    # Time to first finding: the campaign's start to its first failing case (first_finding). A kill
    # whose journal gave no time counts as not within the bound.
    timed = sorted((r for r in killed if r.get("time_to_kill_s") is not None), key=lambda r: -r["time_to_kill_s"])
    kill_times = sorted(r["time_to_kill_s"] for r in timed)
    untimed = [r["id"] for r in killed if r.get("time_to_kill_s") is None]
    within = sum(1 for t in kill_times if t <= a.kill_within)
    checks = {}
    for r in killed:
        checks[r["killed_by"]] = checks.get(r["killed_by"], 0) + 1
    # How the campaigns shared the GPUs (recorded per mutant by run; absent in older files).
    per_gpu = sorted({r["campaigns_per_gpu"] for r in killed + survived if r.get("campaigns_per_gpu")})
    gpus = sorted({r["gpu"] for r in killed + survived if r.get("gpu") is not None})

    def brief(r):
        return {"id": r["id"], "file": r["file"], "status": r["status"], "killed_by": r.get("killed_by"),
                "time_to_kill_s": r.get("time_to_kill_s"), "first_case": r.get("first_case"),
                "first_case_s": r.get("first_case_s"), "fuzz_seconds": r.get("fuzz_seconds"), "cases": r.get("cases"),
                "gpu": r.get("gpu")}

    rep = {"schema": "vattn-mutation-score", "version": 1, "revision": revision, "generated": d.get("generated"),
           "generated_per_file": d.get("generated_per_file"), "sampled": len(ms), "seed": d.get("seed"),
           "counts": {k: len(v) for k, v in by.items()}, "judged": judged, "killed": len(killed),
           "survivors_equivalent": len(equivalent), "survivors_plan_only": len(plan_only),
           "score": score, "median_time_to_kill_s": kill_times[len(kill_times) // 2] if kill_times else None,
           "max_time_to_kill_s": kill_times[-1] if kill_times else None,
           "kill_within_s": a.kill_within, "kills_within": within,
           "kills_within_share": within / len(killed) if killed else None, "kills_untimed": untimed,
           "campaigns_per_gpu": per_gpu, "gpus": gpus,
           "slowest_kills": [brief(r) for r in timed[:SLOWEST]],
           "killed_by": checks,
           "judged_mutants": [brief(r) for r in sorted(killed + survived, key=lambda r: r["id"])],
           "survivors": [{"id": r["id"], "file": r["file"], "cases": r.get("cases"), "diff": r["diff"],
                          "verdict": r["verdict"], "why": r["why"]} for r in survived]}
    with open(os.path.join(a.out, "score.json"), "w") as f:
        json.dump(rep, f, indent=1)
    lines = [f"# Mutation score of kernels/ ({revision})", "",
             (f"{d.get('generated')} mutants of {revision}'s sources generated by universalmutator; {len(ms)} sampled "
              f"(seed {d.get('seed')}).")]
    if d.get("generated_per_file"):
        lines += ["", "| file | generated | sampled |", "|---|---|---|"]
        for name, n in d["generated_per_file"].items():
            lines.append(f"| {name} | {n} | {sum(1 for r in ms if r['file'] == name)} |")
    lines += ["", "| status | mutants |", "|---|---|"]
    lines += [f"| {k} | {len(v)} |" for k, v in sorted(by.items())]
    lines += ["", f"**Score: {len(killed)} killed of {judged} judged non-equivalent mutants"
              + (f" = {100 * score:.1f}%**" if score is not None else " (none judged yet)**")
              + (f" ({len(equivalent)} survivors shown equivalent left out: scripts/mutation/verdicts.json)"
                 if equivalent else ""), ""]
    if plan_only:
        lines += [f"{len(plan_only)} survivor(s) change only the plan (verdict plan-only, left out of the score: the "
                  "contract lets every revision cut the work its own way, a benchmark sees them): "
                  + ", ".join(r["id"] for r in plan_only), ""]
    if killed:
        lines += [f"**Kills within {a.kill_within:g} s of one campaign: {within} of {len(killed)} "
                  f"({100 * within / len(killed):.1f}%)**"
                  + (f"; no time in the journal for {', '.join(untimed)}" if untimed else "")
                  + (f". Judged with {' or '.join(str(k) for k in per_gpu)} campaign(s) at a time per GPU"
                     f" on GPU(s) {', '.join(gpus)}." if per_gpu else "."), ""]
    still = [r for r in survived if r["verdict"] == "killed-by-new-check"]
    if still:
        lines += [f"**{len(still)} survivor(s) whose verdict says a new check kills them survived: "
                  + ", ".join(r["id"] for r in still) + "**", ""]
    unseen = [r for r in survived if r["verdict"] == "not-observable"]
    if unseen:
        lines += [f"{len(unseen)} survivor(s) differ where no output can show it (verdict not-observable, counted as "
                  "survivors): " + ", ".join(r["id"] for r in unseen), ""]
    if [r for r in survived if r["verdict"] == "open"]:
        lines += ["Survivors without a verdict: " + ", ".join(r["id"] for r in survived if r["verdict"] == "open"), ""]
    if kill_times:
        lines.append(f"Time to first finding: median {rep['median_time_to_kill_s']:.1f} s, max {kill_times[-1]:.1f} s.")
    ttk_note = ("time to first finding: from the campaign's start (before its worker starts) to the verdict of its "
                "first failing case (the journal's finding line, written before the finding is confirmed); "
                "failing case: that case's own duration; wall: the whole `vattn fuzz` run (start, the failing "
                "case, its confirmation, the stop)")
    if timed:
        lines += ["", f"## The slowest kills ({min(SLOWEST, len(timed))} of {len(killed)})", "", ttk_note, "",
                  "| mutant | file | killed by | time to first finding (s) | failing case (s) | wall (s) | cases |",
                  "|---|---|---|---|---|---|---|"]
        for r in timed[:SLOWEST]:
            lines.append(f"| {r['id']} | {r['file']} | {r['killed_by']} | {r['time_to_kill_s']:.1f} | "
                         f"{fmt(r.get('first_case_s'), 2)} | {r.get('fuzz_seconds', '')} | {r.get('cases', '')} |")
    if checks:
        lines += ["", "| killed by | mutants |", "|---|---|"] + [f"| {k} | {v} |" for k, v in sorted(checks.items())]
    if killed or survived:
        lines += ["", "## Every judged mutant", "", ttk_note, "",
                  ("| mutant | file | status | killed by | time to first finding (s) | failing case (s) | wall (s) | "
                   "cases |"), "|---|---|---|---|---|---|---|---|"]
        for r in sorted(killed + survived, key=lambda r: r["id"]):
            lines.append(f"| {r['id']} | {r['file']} | {r['status']} | {r.get('killed_by') or ''} | "
                         f"{fmt(r.get('time_to_kill_s'), 1)} | {fmt(r.get('first_case_s'), 2)} | "
                         f"{r.get('fuzz_seconds', '')} | {r.get('cases', '')} |")
    if survived:
        lines += ["", "## Survivors", ""]
        for r in survived:
            lines += [f"### {r['id']} ({r['file']}, {r.get('cases')} cases), verdict: {r['verdict']}", ""]
            if r["why"]:
                lines += [r["why"], ""]
            lines += ["```diff", r["diff"].rstrip(), "```", ""]
    with open(os.path.join(a.out, "score.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    head = lines.index("| status | mutants |")
    print("\n".join(lines[:2] + lines[head:head + len(by) + 6]))
    print(f"report: {os.path.join(a.out, 'score.md')}, {os.path.join(a.out, 'score.json')}")


def fmt(x, digits):
    return "" if x is None else f"{x:.{digits}f}"


def positive(text):
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more (got {text})")
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    sub = ap.add_subparsers(dest="step", required=True)
    g = sub.add_parser("generate", help="mutate one revision's sources of kernels/ and keep a sample")
    g.add_argument("--out", required=True)
    g.add_argument("--revision", choices=sorted(REVISIONS), default=DEFAULT_REVISION,
                   help=f"the revision whose sources are mutated (default {DEFAULT_REVISION}, the shipped one)")
    g.add_argument("--sample", type=int, default=0, help="keep N random mutants (0: all)")
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--mutate", help="universalmutator's mutate (default: on PATH)")
    b = sub.add_parser("build", help="compile, drop stillborn/equivalent/duplicate, link the rest")
    b.add_argument("--out", required=True)
    b.add_argument("-j", "--jobs", type=positive, default=os.cpu_count() or 2)
    b.add_argument("--nvcc")
    r = sub.add_parser("run", help="fuzz each candidate for a fixed time (GPU machine)")
    r.add_argument("--out", required=True)
    r.add_argument("--vattn", required=True)
    r.add_argument("--seconds", type=float, default=60)
    r.add_argument("--gpus", type=positive, default=0,
                   help="judge on the first N visible GPUs (default: every one CUDA_VISIBLE_DEVICES, the driver or "
                        "nvidia-smi -L shows)")
    r.add_argument("--parallel", type=positive, default=1,
                   help="campaigns at a time per GPU (default 1: each campaign has its GPU to itself)")
    r.add_argument("--limit", type=int, default=0, help="judge at most N this call (resume with the next)")
    r.add_argument("--max-seconds", type=float, default=0,
                   help="start no mutant that could end after this many seconds of the run (0: no limit)")
    p = sub.add_parser("report", help="write score.json and score.md")
    p.add_argument("--out", required=True)
    for q in (r, p):
        q.add_argument("--verdicts", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "verdicts.json"),
                       help="survivors' verdicts (default: scripts/mutation/verdicts.json)")
        q.add_argument("--kill-within", type=float, default=60,
                       help="report the share of kills whose first finding came within this many seconds (default 60)")
    a = ap.parse_args()
    a.out = os.path.abspath(a.out)  # generate runs `mutate` inside DIR: a relative DIR would not resolve there
    {"generate": cmd_generate, "build": cmd_build, "run": cmd_run, "report": cmd_report}[a.step](a)


if __name__ == "__main__":
    main()
# SPDX-License-Identifier: Apache-2.0
