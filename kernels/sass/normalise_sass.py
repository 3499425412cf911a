#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Normalise `cuobjdump -sass` output per __global__ kernel, so that a pure refactor (a kernel
moved into a template, a namespace or another file; lambdas turned into functions) gives the
same text: addresses, encodings, header flags and symbol names are dropped, branch targets become
labels numbered in address order. Opcodes, operands, registers, predicates and control flow stay.

  normalise_sass.py SASS_FILE --dump DIR   one DIR/<kernel>.sass per kernel
  normalise_sass.py SASS_FILE              one line per kernel: <kernel> <count> <sha256> <line hashes>

<kernel> is the kernel's unqualified name (namespaces, template arguments and parameters
dropped, via c++filt). <line hashes> is the first 4 hex digits of each instruction's sha256, run
together, so that --check can name the first instruction that differs from a record.
"""
import hashlib
import os
import re
import subprocess
import sys

FUNC = re.compile(r"^\s*Function : (\S+)\s*$")
INSN = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
# Instructions whose last operand is a code address inside the function.
TARGETED = re.compile(r"^(@!?U?P[0-9T]\s+)?(BRA|BRX|BSSY|CALL|JMP|JMX|SSY|PBK|PCNT|WARPSYNC\.COLLECTIVE|BPT)\b")
HEX_TAIL = re.compile(r"(0x[0-9a-f]+)\s*$")
SYMBOL = re.compile(r"(_Z[A-Za-z0-9_]+|\$[A-Za-z0-9_$]+|\.L_x_\d+)")


def demangle(names):
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True).stdout
        return out.splitlines()
    except (OSError, subprocess.CalledProcessError):
        sys.exit("normalise_sass.py: c++filt (binutils) is needed to name the kernels")


def short_name(demangled):
    s = demangled
    if s.endswith(")"):  # drop the parameter list
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            depth += s[i] == ")"
            depth -= s[i] == "("
            if depth == 0:
                s = s[:i]
                break
    out, depth = [], 0  # drop template arguments
    for ch in s:
        depth += ch == "<"
        if depth == 0:
            out.append(ch)
        depth -= ch == ">"
    s = "".join(out).strip()
    s = s.split(" ")[-1]  # a return type, if any
    return s.split("::")[-1]


def parse(path):
    funcs, cur = [], None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = FUNC.match(line)
            if m:
                cur = (m.group(1), [])
                funcs.append(cur)
                continue
            m = INSN.match(line)
            if m and cur is not None:
                cur[1].append((int(m.group(1), 16), re.sub(r"\s+", " ", m.group(2))))
    return funcs


def normalise(insns):
    targets = set()
    for _, text in insns:
        if TARGETED.match(text):
            m = HEX_TAIL.search(text)
            if m:
                targets.add(int(m.group(1), 16))
    label = {a: f"L{i}" for i, a in enumerate(sorted(targets))}
    out = []
    for addr, text in insns:
        if addr in label:
            out.append(label[addr] + ":")
        if TARGETED.match(text):
            m = HEX_TAIL.search(text)
            if m and int(m.group(1), 16) in label:
                text = text[: m.start(1)] + label[int(m.group(1), 16)]
        out.append(SYMBOL.sub("<sym>", text))
    return out


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    funcs = parse(args[0])
    names = [short_name(d) for d in demangle([f[0] for f in funcs])]
    seen = {}
    result = []
    for name, (_, insns) in zip(names, funcs):
        seen[name] = seen.get(name, 0) + 1
        key = name if seen[name] == 1 else f"{name}#{seen[name]}"
        result.append((key, normalise(insns)))
    result.sort()
    if len(args) == 3 and args[1] == "--dump":
        os.makedirs(args[2], exist_ok=True)
        for key, lines in result:
            with open(os.path.join(args[2], key + ".sass"), "w") as f:
                f.write("\n".join(lines) + "\n")
        return 0
    for key, lines in result:
        text = "\n".join(lines) + "\n"
        count = sum(1 for l in lines if not l.endswith(":"))
        per_line = "".join(hashlib.sha256(l.encode()).hexdigest()[:4] for l in lines)
        print(key, count, hashlib.sha256(text.encode()).hexdigest(), per_line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
