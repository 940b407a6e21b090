#!/usr/bin/env python3
"""Check the house rules that a reader of a clone relies on (docs/style.md §8, §9).

refs       No reference leads outside the repository or into the planning of the work
           (docs/style.md §4 and §9): no path into the steering checkout beside the repository,
           no name of its fact or style files, no numbered acceptance criterion, in src/ include/
           tests/ scripts/ docs/ or README.md. The patterns are FORBIDDEN below; each is written
           with one character in brackets so that this file does not match itself.
functions  No C++/CUDA function is longer than 120 lines (--max-lines). A function is a
           definition that starts at column 0 (fa4sim does not indent namespace bodies) and ends
           at the first later line that is `}` at column 0; lambdas count toward the function
           that holds them. Member functions defined inside a class body are not measured.
           Generated files are exempt: src/cuda/wgmma_ops.cuh (scripts/gen_wgmma.py) and *.inc.

Usage: scripts/check_house.py [--refs | --functions] [--max-lines N] [--list N]
Exit 0 when every rule holds, 1 otherwise (each offence printed as path:line: what).
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FORBIDDEN = re.compile(r"share[d]/|FA4-FACT[S]|STYLE\.md rul[e]|acceptanc[e] [0-9]")
GENERATED = {"src/cuda/wgmma_ops.cuh"}
NOT_A_FUNCTION = re.compile(r"(namespace|struct|class|enum|union|extern|using|typedef|#)\b|"
                            r"template\s*<[^>]*>\s*(struct|class)\b")


def tracked(*patterns):
    """The files git tracks under `patterns`; every file under them outside a git checkout."""
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "--", *patterns], capture_output=True,
                             text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = []
        for top in patterns:
            if os.path.isfile(os.path.join(ROOT, top)):
                out.append(top)
            for d, _, files in os.walk(os.path.join(ROOT, top)):
                out += [os.path.relpath(os.path.join(d, f), ROOT) for f in files]
    return [p for p in out if os.path.isfile(os.path.join(ROOT, p))]


def check_refs():
    bad = []
    for path in tracked("src", "include", "tests", "scripts", "docs", "README.md"):
        try:
            lines = open(os.path.join(ROOT, path), encoding="utf-8").read().split("\n")
        except UnicodeDecodeError:
            continue
        for i, line in enumerate(lines, 1):
            m = FORBIDDEN.search(line)
            if m:
                bad.append(f"{path}:{i}: '{m.group(0)}' ({line.strip()[:90]})")
    return bad


def function_lengths(path):
    """(first line, length, signature) of each column-0 function definition in `path`."""
    lines = open(os.path.join(ROOT, path), encoding="utf-8").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        starts = (line and not line[0].isspace() and line[0] not in "#}/*" and "(" in line
                  and not NOT_A_FUNCTION.match(line))
        if starts:
            j = i  # the signature may run over a few lines; it ends with "{" (body) or ";"
            while j < min(len(lines), i + 8):
                t = lines[j].split("//")[0].rstrip()
                if t.endswith("{") or t.endswith(";") or t.endswith("}"):
                    break
                j += 1
            t = lines[j].split("//")[0].rstrip() if j < len(lines) else ""
            if t.endswith("{") and not t.endswith("= {"):
                k = j + 1
                while k < len(lines) and not lines[k].startswith("}"):
                    k += 1
                out.append((i + 1, k - i + 1, line.strip()))
                i = k
        i += 1
    return out


def check_functions(max_lines, list_over):
    bad, rows = [], []
    for path in tracked("src", "include", "tests"):
        if not path.endswith((".cpp", ".h", ".cu", ".cuh")) or path in GENERATED:
            continue
        for first, n, sig in function_lengths(path):
            rows.append((n, path, first, sig))
            if n > max_lines:
                bad.append(f"{path}:{first}: {n} lines, over {max_lines} ({sig[:80]})")
    for n, path, first, sig in sorted(rows, reverse=True)[:list_over]:
        print(f"{n:4d}  {path}:{first}  {sig[:80]}")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--refs", action="store_true")
    ap.add_argument("--functions", action="store_true")
    ap.add_argument("--max-lines", type=int, default=120)
    ap.add_argument("--list", type=int, default=0, metavar="N", help="print the N longest functions")
    a = ap.parse_args()
    both = not (a.refs or a.functions)
    bad = []
    if a.refs or both:
        bad += check_refs()
    if a.functions or both:
        bad += check_functions(a.max_lines, a.list)
    for b in bad:
        print(b)
    print(f"check_house: {len(bad)} offence(s)" if bad else "check_house: every rule holds")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
