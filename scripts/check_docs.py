#!/usr/bin/env python3
"""Check that the docs still say what the code does.

Two checks (both by default; pick one with --examples or --notes):

examples  Every example block in docs/commands/*.md that is marked with the line
          `<!-- docs-check -->` (or `<!-- docs-check exit=N -->`) right above its ``` fence is
          re-run with the built binary and its output compared with the block. The block's first
          line is `$ fa4sim ...` (continued over lines ending in `\\`); the rest is the expected
          output, stdout and stderr together (the command runs as `bash -c '{ CMD; } 2>&1'` with the
          binary first on PATH). The exit code must be N (default 0).
          Compared exactly, line by line, except:
            - trailing whitespace at the end of each line is ignored (Markdown editors strip it);
            - nothing is masked: the marked commands print no timings, dates, hosts or hashes.
              If one ever must be, add the regular expression to MASKS below with the reason.
          Only CPU commands are marked: `gpu ...` outputs come from the H200 runs in data/gpu/.
          Keep each marked command under 2 s.

notes     Every `Note [Title]` in src/ include/ tests/ scripts/ is either its definition (a comment
          line that is `Note [Title]` alone, `Note [Title]: text`, or `---- Note [Title] ...`) or a
          citation (anything else, e.g. `(Note [Title])`). Each cited title must be defined
          exactly once, and docs/architecture.md's index must list every defined title with its
          file (a line number that moved within the file is only a warning).

Usage: scripts/check_docs.py [--fa4sim build/fa4sim] [--examples | --notes] [--print-notes]
Exit 0 when everything matches, 1 on a mismatch, 2 on bad usage, 77 when the binary is missing
for the examples check (ctest shows a visible skip).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MASKS = []  # (regex, replacement, why): none needed today
MARK = re.compile(r"^<!-- docs-check(?: exit=(\d+))? -->\s*$")
NOTE = re.compile(r"Note \[([^\]]+)\]")
NOTE_DEF = re.compile(r"^\s*(?://|#)\s*(?:---- Note \[([^\]]+)\]|Note \[([^\]]+)\](?::|\s*$))")


def examples(path):
    """Yield (line number, command, expected output lines, expected exit) per marked block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if not m:
            i += 1
            continue
        start = i + 1
        if start >= len(lines) or not lines[start].startswith("```"):
            raise SystemExit(f"{path}:{i + 1}: docs-check mark not followed by a ``` fence")
        j = start + 1
        if not lines[j].startswith("$ fa4sim"):
            raise SystemExit(f"{path}:{j + 1}: a checked block starts with `$ fa4sim ...`")
        cmd = lines[j][2:]
        while cmd.endswith("\\"):
            j += 1
            cmd = cmd + "\n" + lines[j]
        j += 1
        out = []
        while not lines[j].startswith("```"):
            out.append(lines[j])
            j += 1
        yield start + 1, cmd, out, int(m.group(1) or 0)
        i = j + 1


def mask(lines):
    res = []
    for line in lines:
        line = line.rstrip()
        for rx, rep, _why in MASKS:
            line = re.sub(rx, rep, line)
        res.append(line)
    while res and res[-1] == "":
        res.pop()
    return res


def check_examples(binary):
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        print(f"SKIP: no fa4sim binary at {binary} (build it first)")
        return 77
    docs = os.path.join(ROOT, "docs", "commands")
    failures = checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(os.path.abspath(binary), os.path.join(tmp, "fa4sim"))
        env = dict(os.environ, PATH=tmp + os.pathsep + os.environ.get("PATH", ""), LC_ALL="C")
        for name in sorted(os.listdir(docs)):
            if not name.endswith(".md"):
                continue
            path = os.path.join(docs, name)
            for line, cmd, expected, want_rc in examples(path):
                checked += 1
                t0 = time.monotonic()
                p = subprocess.run(["bash", "-c", "{ " + cmd + "\n} 2>&1"], cwd=ROOT, env=env,
                                   stdout=subprocess.PIPE, text=True)
                dt = time.monotonic() - t0
                got = mask(p.stdout.split("\n"))
                want = mask(expected)
                where = f"docs/commands/{name}:{line}"
                if p.returncode != want_rc:
                    failures += 1
                    print(f"FAIL {where}: `{cmd}` exited {p.returncode}, the doc says {want_rc}")
                if got != want:
                    failures += 1
                    print(f"FAIL {where}: `{cmd}` prints something else than the doc:")
                    for k in range(max(len(got), len(want))):
                        g = got[k] if k < len(got) else "<none>"
                        w = want[k] if k < len(want) else "<none>"
                        if g != w:
                            print(f"  line {k + 1}\n    doc:  {w}\n    tool: {g}")
                            break
                    print("  HINT: run the command and paste its output into the block, or fix the tool")
                else:
                    print(f"ok   {where} ({dt:.2f} s): {cmd.splitlines()[0]}")
    if checked == 0:
        print("FAIL: no marked example found in docs/commands/")
        return 1
    print(f"{checked} examples checked, {failures} mismatches")
    return 1 if failures else 0


def note_sites():
    """(definitions: title -> [file:line], citations: title -> [file:line])."""
    defs, cites = {}, {}
    for top in ("src", "include", "tests", "scripts"):
        for dirpath, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for f in sorted(files):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, ROOT)
                if rel == "scripts/check_docs.py":
                    continue
                try:
                    text = open(path, encoding="utf-8").read()
                except (UnicodeDecodeError, OSError):
                    continue
                for n, line in enumerate(text.split("\n"), 1):
                    d = NOTE_DEF.match(line)
                    for m in NOTE.finditer(line):
                        site = f"{rel}:{n}"
                        if d and m.start() == line.index("Note ["):
                            defs.setdefault(m.group(1), []).append(site)
                        else:
                            cites.setdefault(m.group(1), []).append(site)
    return defs, cites


def check_notes(print_index):
    defs, cites = note_sites()
    bad = 0
    for title, sites in sorted(defs.items()):
        if len(sites) > 1:
            bad += 1
            print(f"FAIL Note [{title}] is defined {len(sites)} times: {', '.join(sites)}")
    for title, sites in sorted(cites.items()):
        if title not in defs:
            bad += 1
            print(f"FAIL Note [{title}] is cited but never defined: {', '.join(sites)}")
    if print_index:
        for title, sites in sorted(defs.items()):
            print(f"| Note [{title}] | `{sites[0]}` | {len(cites.get(title, []))} |")
        return 1 if bad else 0
    arch = open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8").read()
    stale = 0
    for title, sites in sorted(defs.items()):
        file = sites[0].rsplit(":", 1)[0]
        if f"| Note [{title}] | `{sites[0]}` |" in arch:
            continue
        if re.search(rf"^\| Note \[{re.escape(title)}\] \| `{re.escape(file)}:\d+` \|", arch, re.M):
            stale += 1  # moved within its file: a warning, so that edits above a Note do not fail CI
            print(f"warn docs/architecture.md: Note [{title}] is now at `{sites[0]}`")
        else:
            bad += 1
            print(f"FAIL docs/architecture.md does not list Note [{title}] in `{file}`")
    listed = set(re.findall(r"^\| Note \[([^\]]+)\] \|", arch, re.M))
    for title in sorted(listed - set(defs)):
        bad += 1
        print(f"FAIL docs/architecture.md lists Note [{title}], which the code no longer defines")
    if bad or stale:
        print("  HINT: scripts/check_docs.py --print-notes prints the index rows to paste")
    else:
        print(f"ok   {len(defs)} notes, each defined once and indexed; "
              f"{sum(len(v) for v in cites.values())} citations resolve")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fa4sim", default=os.path.join(ROOT, "build", "fa4sim"))
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--examples", action="store_true")
    g.add_argument("--notes", action="store_true")
    g.add_argument("--print-notes", action="store_true",
                   help="print docs/architecture.md's Note index rows from the code")
    a = ap.parse_args()
    if a.print_notes:
        return check_notes(True)
    rcs = []
    if not a.examples:
        rcs.append(check_notes(False))
    if not a.notes:
        rcs.append(check_examples(a.fa4sim))
    return 1 if 1 in rcs else (77 if 77 in rcs else 0)

if __name__ == "__main__":
    sys.exit(main())
