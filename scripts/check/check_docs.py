#!/usr/bin/env python3
"""Check that the docs still say what the code does.

Three checks (all by default; pick one with --examples, --notes or --sources):

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

sources   The docs that copy or name what the code holds agree with it: README.md's fit table is
          the table of data/fit/fit_summary.md (scripts/datagen/fit_table.py writes it), row for row;
          README.md's command table names every command of src/cli/commands.cpp and links a
          docs/commands/ page that exists; docs/style.md names exactly the CMake options of
          CMakeLists.txt, and every scripts/ file and ctest entry it names exists.

Usage: scripts/check/check_docs.py [--fa4sim build/fa4sim] [--examples | --notes | --sources]
                                   [--print-notes | --write-notes]
Exit 0 when everything matches, 1 on a mismatch, 2 on bad usage, 77 when the binary is missing
for the examples check (ctest shows a visible skip).
"""
import argparse
import contextlib
import io
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # scripts/<folder>/
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
                if rel == "scripts/check/check_docs.py":
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
        print("  HINT: scripts/check/check_docs.py --write-notes rewrites the index rows (--print-notes prints them)")
    else:
        print(f"ok   {len(defs)} notes, each defined once and indexed; "
              f"{sum(len(v) for v in cites.values())} citations resolve")
    return 1 if bad else 0


def write_notes_index():
    """Rewrites docs/architecture.md's Note index rows from the code (--print-notes' rows), for
    when edits above Notes moved them (a reformat of the tree)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = check_notes(True)
    rows = [r for r in buf.getvalue().split("\n") if r.startswith("| Note [")]
    if rc != 0 or not rows:
        print(buf.getvalue(), end="")
        return 1
    path = os.path.join(ROOT, "docs", "architecture.md")
    lines = open(path, encoding="utf-8").read().split("\n")
    at = [i for i, line in enumerate(lines) if line.startswith("| Note [")]
    if not at or at[-1] - at[0] + 1 != len(at):
        print("FAIL docs/architecture.md: no contiguous Note index to rewrite")
        return 1
    lines[at[0]:at[-1] + 1] = rows
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print(f"wrote {len(rows)} Note index rows into docs/architecture.md")
    return 0


def table_rows(text, header_start):
    """The rows (header and separator included) of the first Markdown table whose header line
    starts with `header_start`."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith(header_start):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            return lines[i:j]
    return []


def read(rel):
    return open(os.path.join(ROOT, rel), encoding="utf-8").read()


def check_sources():
    bad = []
    readme = read("README.md")
    # README's fit table = data/fit/fit_summary.md's.
    fit_head = "| degree | polynomial |"
    ours, theirs = table_rows(readme, fit_head), table_rows(read("data/fit/fit_summary.md"), fit_head)
    if not theirs:
        bad.append("data/fit/fit_summary.md: no fit table")
    elif ours != theirs:
        diff = [f"    README: {a}\n    source: {b}" for a, b in zip(ours, theirs) if a != b]
        bad.append(f"README.md: the fit table differs from data/fit/fit_summary.md "
                   f"({len(ours)} vs {len(theirs)} rows)" + ("\n" + "\n".join(diff[:3]) if diff else ""))
    # README's command table: every registered command, each doc link present.
    commands = re.findall(r'\{"([a-z0-9-]+)", add_', read("src/cli/commands.cpp"))
    rows = table_rows(readme, "| command |")
    first_cells = " ".join(r.split("|")[1] for r in rows[2:])
    for c in commands:
        if not re.search(rf"`fa4sim {re.escape(c)}\b", first_cells):
            bad.append(f"README.md: the command table has no row for `fa4sim {c}` (src/cli/commands.cpp)")
    for link in re.findall(r"\]\((docs/commands/[^)]+)\)", "\n".join(rows)):
        if not os.path.isfile(os.path.join(ROOT, link)):
            bad.append(f"README.md: the command table links {link}, which does not exist")
    # docs/style.md: the CMake options, scripts and ctest entries it names exist.
    style = read("docs/style.md")
    cmake = read("CMakeLists.txt")
    defined = set(re.findall(r"(?:option|set)\((FA4SIM_[A-Z_]+)\s[^)]*(?:CACHE|\"[^\"]*\"\s*(?:ON|OFF))", cmake))
    named = set(re.findall(r"\b(FA4SIM_[A-Z_]+)\b", style))
    for o in sorted(named - defined):
        bad.append(f"docs/style.md names the CMake option {o}, which CMakeLists.txt does not define")
    for o in sorted(defined - named):
        bad.append(f"docs/style.md does not name the CMake option {o} (CMakeLists.txt)")
    for path in sorted(set(re.findall(r"`(scripts/[\w./-]+)`", style))):
        if not os.path.exists(os.path.join(ROOT, path)):
            bad.append(f"docs/style.md names {path}, which does not exist")
    tests_text = "".join(read(os.path.join("tests", "scripts", f)) for f in
                         os.listdir(os.path.join(ROOT, "tests", "scripts")) if f.endswith(".cmake"))
    tests_text += read("tests/CMakeLists.txt")
    for name in sorted(set(re.findall(r"ctest `([\w-]+)`", style))):
        if not re.search(rf"\b{re.escape(name)}\b", tests_text):
            bad.append(f"docs/style.md names the ctest entry `{name}`, which tests/ does not define")
    for b in bad:
        print(f"FAIL {b}")
    if not bad:
        print(f"ok   README's fit table and {len(commands)} commands, docs/style.md's "
              f"{len(named)} CMake options, scripts and ctest entries match their sources")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fa4sim", default=os.path.join(ROOT, "build", "fa4sim"))
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--examples", action="store_true")
    g.add_argument("--notes", action="store_true")
    g.add_argument("--sources", action="store_true")
    g.add_argument("--print-notes", action="store_true",
                   help="print docs/architecture.md's Note index rows from the code")
    g.add_argument("--write-notes", action="store_true",
                   help="rewrite docs/architecture.md's Note index rows from the code")
    a = ap.parse_args()
    if a.print_notes:
        return check_notes(True)
    if a.write_notes:
        return write_notes_index()
    rcs = []
    every = not (a.examples or a.notes or a.sources)
    if a.notes or every:
        rcs.append(check_notes(False))
    if a.sources or every:
        rcs.append(check_sources())
    if a.examples or every:
        rcs.append(check_examples(a.fa4sim))
    return 1 if 1 in rcs else (77 if 77 in rcs else 0)

if __name__ == "__main__":
    sys.exit(main())
