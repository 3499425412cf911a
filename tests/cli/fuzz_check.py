#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""fuzz_check.py: the JSON side of the `vattn fuzz` CLI tests (fuzz_supervisor.sh, fuzz_resume.sh).

Reads a campaign directory (journal.jsonl, summary.json, findings/NNN-<class>/finding.json) and
checks what the options ask for. Prints "ok: ..." per check that held and "FAIL: ..." per check
that did not (with what it saw), and exits 1 when any failed. Standard library only.

  fuzz_check.py finding DIR [--class C] [--sig TEXT] [--sig-is SIG] [--first-has FIELD=VALUE] [--shrunk PREFIX]
                [--confirmed] [--min-count N] [--min-hits N] [--files F,...] [--argv-out FILE]
      exactly one finding directory, NNN-C, whose finding.json has a signature containing TEXT
      (or equal to SIG),
      a first case whose list FIELD (P or T) holds VALUE (or whose scalar FIELD, H or B, is it),
      a shrunk recipe that starts with PREFIX (whole fields), count >= N, count equal to the
      journal's case lines that carry its id (and >= --min-hits of them), the listed files
      (non-empty); --argv-out writes reproduce[0], split as a shell would, NUL-separated.
  fuzz_check.py findings DIR --count K [--check C] [--shrunk PREFIX]... [--legacy SIG] [--extra N]
      exactly K finding directories, each done, with distinct signatures of check C (class and
      check, e.g. "wrong: vs oracle"), each "C @ BUCKET" with finding.json's bucket that BUCKET
      (or, with --legacy, the one finding whose signature is SIG from a journal before buckets,
      bucket null); each --shrunk PREFIX is the shrunk recipe of exactly one finding; each count
      equals the journal's case lines with its id and signature; summary.json lists them with the
      same signature, bucket and count, its failed cases are the findings' counts plus its
      extra_buckets' (N of them with --extra, else none), and each extra bucket's count equals
      the journal's k: extra case lines of that signature.
  fuzz_check.py journal DIR [--cases N] [--verdict V] [--runs R] [--end] [--no-end] [--findings K]
      N case lines covering indices 0..N-1 exactly once, all with verdict V, R run lines, an end
      line after the last case line (or none at all), K finding lines.
  fuzz_check.py summary DIR [--cases N] [--findings K] [--this-run N]
      summary.json of schema vattn-fuzz-summary with campaign_cases N, K findings, this_run.cases N.
  fuzz_check.py no-findings DIR
      DIR/findings exists and is empty.
  fuzz_check.py pty OUTFILE -- COMMAND...
      runs COMMAND with stdin, stdout and stderr on a pseudo-terminal, writes what it printed to
      OUTFILE and exits with COMMAND's exit code (a signal: 128 + its number).
"""
import argparse
import collections
import json
import os
import re
import shlex
import sys

problems = []


def check(cond, what, seen=None):
    if cond:
        print(f"ok: {what}")
    else:
        problems.append(what)
        print(f"FAIL: {what}" + ("" if seen is None else f"\n    saw: {seen}"))
    return cond


def read_journal(d):
    path = os.path.join(d, "journal.jsonl")
    lines = []
    with open(path, encoding="utf-8") as f:
        for n, text in enumerate(f, 1):
            try:
                lines.append(json.loads(text))
            except ValueError:
                check(False, f"{path}: line {n} is JSON", text[:200])
    return lines


def recipe_fields(recipe):
    """'B=1 H=3 P=[0,2] T=[1,1] tree=chain' -> {'B': '1', 'H': '3', 'P': '[0,2]', ...}"""
    return dict(w.split("=", 1) for w in recipe.split() if "=" in w)


def field_holds(recipe, spec):
    name, value = spec.split("=", 1)
    got = recipe_fields(recipe).get(name)
    if got is None:
        return False
    if got.startswith("["):
        return value in [x for x in got.strip("[]").split(",") if x]
    return got == value


def cmd_finding(a):
    fdir = os.path.join(a.dir, "findings")
    entries = sorted(os.listdir(fdir)) if os.path.isdir(fdir) else []
    if not check(len(entries) == 1, f"exactly one finding directory in {fdir}", entries):
        return
    name = entries[0]
    if a.klass:
        check(re.fullmatch(r"\d{3}-" + re.escape(a.klass), name) is not None, f"the finding directory is NNN-{a.klass}", name)
    d = os.path.join(fdir, name)
    with open(os.path.join(d, "finding.json"), encoding="utf-8") as f:
        j = json.load(f)
    check(j.get("schema") == "vattn-fuzz-finding", "finding.json has schema vattn-fuzz-finding", j.get("schema"))
    sig = j.get("signature", "")
    if a.sig:
        check(a.sig in sig, f"signature contains '{a.sig}'", sig)
    if a.sig_is:
        check(sig == a.sig_is, f"signature is '{a.sig_is}'", sig)
    if a.klass:
        check(j.get("class") == a.klass, f"class is {a.klass}", j.get("class"))
    first = j.get("first_case", {}).get("recipe", "")
    for spec in a.first_has:
        check(field_holds(first, spec), f"the first case's recipe has {spec}", first)
    inv = j.get("investigation") or {}
    check(j.get("state") == "done", "the finding's investigation is done", j.get("state"))
    if a.confirmed:
        check(inv.get("confirmed") is True, "investigation.confirmed is true", inv)
    shrunk = inv.get("shrunk_recipe", "")
    if a.shrunk:
        check(shrunk == a.shrunk or shrunk.startswith(a.shrunk + " "), f"shrunk recipe starts with '{a.shrunk}'", shrunk)
    count = j.get("count")
    check(isinstance(count, int) and count >= a.min_count, f"count >= {a.min_count}", count)
    # The count is the journal's: every failed case line that carries this finding's id.
    journal = read_journal(a.dir)
    fid = j.get("id")
    cases = [l for l in journal if l.get("t") == "case"]
    hits = [l for l in cases if l.get("f") == fid]
    check(count == len(hits), f"count equals the journal's case lines with f={fid}", f"count {count}, lines {len(hits)}")
    check(len(hits) >= a.min_hits, f"at least {a.min_hits} case line(s) carry f={fid}", len(hits))
    check(all(l.get("sig") == sig and l.get("v") == j.get("class") for l in hits),
          "those case lines carry the finding's signature and class", hits[:3])
    failed = [l for l in cases if l.get("v") != "pass"]
    check(len(failed) == len(hits), "every failed case line belongs to this finding", failed[:3])
    fl = [l for l in journal if l.get("t") == "finding"]
    check(len(fl) == 1 and fl[0].get("id") == fid and fl[0].get("sig") == sig, "one finding line, with its id and signature", fl)
    idx = j.get("first_case", {}).get("index")
    first_line = [l for l in cases if l.get("i") == idx]
    check(len(first_line) == 1 and first_line[0].get("f") == fid, f"the first case ({idx}) is journaled with f={fid}", first_line)
    done = [l for l in journal if l.get("t") == "finding-done" and l.get("id") == fid]
    check(len(done) == 1 and done[0].get("investigation", {}).get("shrunk_recipe") == shrunk,
          "a finding-done line with the same shrunk recipe", done)
    for fname in [x for x in a.files.split(",") if x]:
        p = os.path.join(d, fname)
        check(os.path.isfile(p) and os.path.getsize(p) > 0, f"{name}/{fname} exists and is not empty")
    rep = j.get("reproduce") or []
    ok = check(len(rep) >= 1 and rep[0].startswith("vattn fuzz --kernel ") and "--recipe" in rep[0],
               "reproduce[0] is a vattn fuzz --recipe command", rep)
    if ok and shrunk:
        argv = shlex.split(rep[0])
        check(argv[argv.index("--recipe") + 1] == shrunk, "reproduce[0] re-runs the shrunk recipe", rep[0])
    if a.argv_out and ok:
        with open(a.argv_out, "w", encoding="utf-8") as f:
            f.write("\0".join(shlex.split(rep[0])) + "\0")
    with open(os.path.join(a.dir, "summary.json"), encoding="utf-8") as f:
        s = json.load(f)
    sf = s.get("findings", [])
    check(len(sf) == 1 and sf[0].get("id") == fid and sf[0].get("count") == count,
          "summary.json lists the finding with the same count", [(x.get("id"), x.get("count")) for x in sf])


def cmd_findings(a):
    fdir = os.path.join(a.dir, "findings")
    entries = sorted(os.listdir(fdir)) if os.path.isdir(fdir) else []
    check(len(entries) == a.count, f"{a.count} finding directories in {fdir}", entries)
    journal = read_journal(a.dir)
    cases = [l for l in journal if l.get("t") == "case"]
    found = []
    for name in entries:
        with open(os.path.join(fdir, name, "finding.json"), encoding="utf-8") as f:
            found.append(json.load(f))
    sigs = [j.get("signature", "") for j in found]
    check(len(set(sigs)) == len(sigs), "the findings' signatures are distinct", sigs)
    for j in found:
        sig, fid = j.get("signature", ""), j.get("id")
        check(j.get("state") == "done", f"finding {fid}: its investigation is done", j.get("state"))
        if a.legacy is not None and sig == a.legacy:
            check(j.get("bucket") is None, f"finding {fid}: a signature from before buckets has bucket null", j.get("bucket"))
        else:
            check(sig.startswith(a.check + " @ ") and j.get("bucket") == sig[len(a.check) + 3:],
                  f"finding {fid}: signature '{a.check} @ BUCKET' and finding.json's bucket is BUCKET",
                  (sig, j.get("bucket")))
        hits = [l for l in cases if l.get("f") == fid]
        check(j.get("count") == len(hits) and all(l.get("sig") == sig for l in hits),
              f"finding {fid}: count equals its journal case lines, which carry its signature",
              f"count {j.get('count')}, lines {len(hits)}")
    shrunk = [(j.get("investigation") or {}).get("shrunk_recipe", "") for j in found]
    for prefix in a.shrunk:
        match = [r for r in shrunk if r == prefix or r.startswith(prefix + " ")]
        check(len(match) == 1, f"exactly one finding shrunk to '{prefix}'", shrunk)
    with open(os.path.join(a.dir, "summary.json"), encoding="utf-8") as f:
        s = json.load(f)
    listed = {x.get("signature"): (x.get("bucket"), x.get("count")) for x in s.get("findings", [])}
    check(listed == {j.get("signature"): (j.get("bucket"), j.get("count")) for j in found},
          "summary.json lists the findings with the same signature, bucket and count", listed)
    extra = s.get("extra_buckets", [])
    check(len(extra) == a.extra, f"summary.json has {a.extra} extra bucket(s)", extra)
    for e in extra:
        lines = [l for l in cases if l.get("k") == "extra" and l.get("sig") == e.get("signature")]
        check(e.get("count") == len(lines) and e.get("check") == a.check and e.get("signature") not in listed,
              f"extra bucket {e.get('bucket')}: a bucket of {a.check} with no finding, counted as its journal lines",
              (e, len(lines)))
    total = sum(j.get("count", 0) for j in found) + sum(e.get("count", 0) for e in extra)
    check(s.get("failed") == total, "failed = the findings' counts + the extra buckets' counts",
          (s.get("failed"), total))


def cmd_journal(a):
    journal = read_journal(a.dir)
    check(bool(journal) and journal[0].get("t") == "campaign" and journal[0].get("schema") == "vattn-fuzz-journal",
          "the first line is the campaign line", journal[:1])
    cases = [l for l in journal if l.get("t") == "case"]
    if a.cases is not None:
        check(len(cases) == a.cases, f"{a.cases} case lines", len(cases))
        count = collections.Counter(l.get("i") for l in cases)
        twice = sorted(i for i, n in count.items() if n > 1)
        missing = sorted(set(range(a.cases)) - set(count))
        extra = sorted(i for i in count if not (isinstance(i, int) and 0 <= i < a.cases))
        check(not twice and not missing and not extra, f"case indices 0..{a.cases - 1}, each exactly once",
              f"twice {twice[:10]}, missing {missing[:10]}, outside {extra[:10]}")
    if a.verdict:
        other = [l for l in cases if l.get("v") != a.verdict]
        check(not other, f"every case line has v={a.verdict}", other[:3])
    runs = [l for l in journal if l.get("t") == "run"]
    if a.runs is not None:
        check(len(runs) == a.runs, f"{a.runs} run line(s)", len(runs))
    ends = [n for n, l in enumerate(journal) if l.get("t") == "end"]
    last_case = max([n for n, l in enumerate(journal) if l.get("t") == "case"], default=-1)
    if a.end:
        check(bool(ends) and ends[-1] > last_case, "an end line after the last case line", journal[-1:])
    if a.no_end:
        check(not ends, "no end line (the run was killed)", [journal[n] for n in ends])
    if a.findings is not None:
        fl = [l for l in journal if l.get("t") == "finding"]
        check(len(fl) == a.findings, f"{a.findings} finding line(s)", fl[:3])


def cmd_summary(a):
    with open(os.path.join(a.dir, "summary.json"), encoding="utf-8") as f:
        s = json.load(f)
    check(s.get("schema") == "vattn-fuzz-summary", "summary.json has schema vattn-fuzz-summary", s.get("schema"))
    if a.cases is not None:
        check(s.get("campaign_cases") == a.cases, f"summary campaign_cases is {a.cases}", s.get("campaign_cases"))
    if a.findings is not None:
        check(len(s.get("findings", [])) == a.findings, f"summary lists {a.findings} finding(s)", s.get("findings"))
    if a.this_run is not None:
        got = s.get("this_run", {}).get("cases")
        check(got == a.this_run, f"summary this_run.cases is {a.this_run}", got)


def cmd_no_findings(a):
    fdir = os.path.join(a.dir, "findings")
    check(os.path.isdir(fdir) and not os.listdir(fdir), f"{fdir} exists and is empty",
          os.listdir(fdir) if os.path.isdir(fdir) else "missing")


def cmd_pty(a):
    import pty
    import select
    import subprocess
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, close_fds=True, start_new_session=True)
    os.close(slave)
    out = b""
    while True:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer has closed the terminal
                break
            if not data:
                break
            out += data
        elif p.poll() is not None:
            break
    code = p.wait()
    os.close(master)
    with open(a.outfile, "wb") as f:
        f.write(out)
    sys.exit(128 - code if code < 0 else code)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="what", required=True)
    f = sub.add_parser("finding")
    f.add_argument("dir")
    f.add_argument("--class", dest="klass")
    f.add_argument("--sig")
    f.add_argument("--sig-is")
    f.add_argument("--first-has", action="append", default=[])
    f.add_argument("--shrunk")
    f.add_argument("--confirmed", action="store_true")
    f.add_argument("--min-count", type=int, default=1)
    f.add_argument("--min-hits", type=int, default=1)
    f.add_argument("--files", default="")
    f.add_argument("--argv-out")
    fs = sub.add_parser("findings")
    fs.add_argument("dir")
    fs.add_argument("--count", type=int, required=True)
    fs.add_argument("--check", default="wrong: vs oracle")
    fs.add_argument("--shrunk", action="append", default=[])
    fs.add_argument("--legacy")
    fs.add_argument("--extra", type=int, default=0)
    j = sub.add_parser("journal")
    j.add_argument("dir")
    j.add_argument("--cases", type=int)
    j.add_argument("--verdict")
    j.add_argument("--runs", type=int)
    j.add_argument("--end", action="store_true")
    j.add_argument("--no-end", action="store_true")
    j.add_argument("--findings", type=int)
    s = sub.add_parser("summary")
    s.add_argument("dir")
    s.add_argument("--cases", type=int)
    s.add_argument("--findings", type=int)
    s.add_argument("--this-run", type=int)
    n = sub.add_parser("no-findings")
    n.add_argument("dir")
    p = sub.add_parser("pty")
    p.add_argument("outfile")
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    try:
        {"finding": cmd_finding, "findings": cmd_findings, "journal": cmd_journal, "summary": cmd_summary,
         "no-findings": cmd_no_findings, "pty": cmd_pty}[a.what](a)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        check(False, f"{a.what} {getattr(a, 'dir', '')}: could read and check it", f"{type(e).__name__}: {e}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
