#!/usr/bin/env python3
"""Check the house rules that a reader of a clone relies on (docs/style.md §4, §8, §9).

refs       No reference leads outside the repository or into the planning of the work
           (docs/style.md §4 and §9): no path into the steering checkout beside the repository,
           no name of its input files, no numbered acceptance criterion, in src/ include/ tests/
           scripts/ docs/ python/ .ci/, README.md, CMakeLists.txt and pyproject.toml. The patterns
           are FORBIDDEN below; each is written with one character in brackets so that this file
           does not match itself.
functions  No function is longer than 120 lines (--max-lines), in C++/CUDA (src/ include/
           tests/) and in Python (scripts/ python/ tests/). C++: every function body, wherever
           it is defined (at namespace scope, indented or not, or as a member inside a class
           body), found by matching braces outside comments, strings and preprocessor lines; it
           runs from the first line of its signature to its closing brace; lambdas and local
           classes count toward the function that holds them. Python: every def (methods and
           nested functions included), from its `def` line to its last line.
           Generated files are exempt: src/cuda/wgmma_ops.cuh (scripts/build/gen_wgmma.py) and *.inc.
includes   No include runs up the layers of docs/architecture.md (LAYER_USES below: what each
           folder of src/ and include/fa4sim/ may include) and the includes between files have
           no cycle. The CLI and the Python module sit side by side, above options: neither
           includes the other.
scripts    scripts/ holds setup.sh (the README's first command) and folders only, each one of
           SCRIPT_FOLDERS below (docs/architecture.md): a file at the top of scripts/ other than
           setup.sh, or a folder not in the list, is an offence. Every driver that src/ runs
           through drivers_dir() (`drivers_dir() + "/name.py"`) is in scripts/drivers/, the folder
           `cmake --install` ships.

Usage: scripts/check/check_house.py [--refs | --functions | --includes | --scripts]
                                    [--max-lines N] [--list N] [--root DIR]
Exit 0 when every rule holds, 1 otherwise (each offence printed as path:line: what).
"""
import argparse
import ast
import bisect
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # scripts/<folder>/
FORBIDDEN = re.compile(r"share[d]/|FA4-FACT[S]|STYL[E]\.md|BATTER[Y]\.md|ANCHOR[S]\.md|"
                       r"acceptanc[e] [0-9]")
REF_PATHS = ("src", "include", "tests", "scripts", "docs", "python", ".ci", "README.md",
             "CMakeLists.txt", "pyproject.toml")
GENERATED = {"src/cuda/wgmma_ops.cuh"}
# The folders of scripts/ and what each holds (docs/architecture.md, "The files").
SCRIPT_FOLDERS = {
    "drivers": "the Python programs the fa4sim binary runs (installed to share/fa4sim/drivers)",
    "check": "developer checks (some run by ctest) and report comparisons",
    "bench": "benchmarks and their NumPy baselines",
    "build": "build steps and generators of committed sources",
    "datagen": "generators of committed data/ files from runs",
    "gpu": "GPU runbooks and probes for the device machine",
}
SCRIPT_TOP = {"setup.sh"}
DRIVER_USE = re.compile(r'drivers_dir\(\)\s*\+\s*"/([^"]+)"')
CPP_EXT = (".cpp", ".h", ".cu", ".cuh")
# A brace that follows one of these opens a scope, not a function body.
SCOPE_HEAD = re.compile(r"^(template\s*<.*>\s*)?(namespace|struct|class|enum|union|extern)\b")
ACCESS_LABEL = re.compile(r"(?<!\s)\s*(public|private|protected)\s*:(?!:)")
CONTROL = re.compile(r"^(if|for|while|switch|catch|do|else|try)\b")
# A run of characters that code_only copies as they are: none of # / R " ' or a newline.
PLAIN_RUN = re.compile(r"[^#/R\"'\n]+")
NEWLINE = re.compile(r"\n")
BRACE_OR_STOP = re.compile(r"[;{}]")


def tracked(*patterns):
    """The files git tracks under `patterns`; every file under them outside a git checkout."""
    out = None
    if os.path.isdir(os.path.join(ROOT, ".git")) or os.path.isfile(os.path.join(ROOT, ".git")):
        try:
            out = subprocess.run(["git", "-C", ROOT, "ls-files", "--", *patterns],
                                 capture_output=True, text=True, check=True).stdout.split()
        except (OSError, subprocess.CalledProcessError):
            out = None
    if out is None:
        out = []
        for top in patterns:
            if os.path.isfile(os.path.join(ROOT, top)):
                out.append(top)
            for d, _, files in os.walk(os.path.join(ROOT, top)):
                out += [os.path.relpath(os.path.join(d, f), ROOT) for f in files]
    return [p for p in out if os.path.isfile(os.path.join(ROOT, p))]


def check_refs():
    bad = []
    for path in tracked(*REF_PATHS):
        try:
            lines = open(os.path.join(ROOT, path), encoding="utf-8").read().split("\n")
        except UnicodeDecodeError:
            continue
        for i, line in enumerate(lines, 1):
            m = FORBIDDEN.search(line)
            if m:
                bad.append(f"{path}:{i}: '{m.group(0)}' ({line.strip()[:90]})")
    return bad


def code_only(text):
    """`text` with comments, string and character literals and preprocessor lines blanked out
    (newlines kept, so that offsets map to the same lines)."""
    out, i, n = [], 0, len(text)
    line_start = True
    while i < n:
        # Characters that start nothing are copied in one run (a line start survives only
        # blanks); the loop stops at each character that may.
        m = PLAIN_RUN.match(text, i)
        if m:
            run = m.group(0)
            out.append(run)
            line_start = line_start and not run.strip(" \t")
            i = m.end()
            continue
        c = text[i]
        if line_start and c == "#":  # a preprocessor line, with its continuations
            j = i
            while j < n and not (text[j] == "\n" and text[j - 1] != "\\"):
                j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        m = re.match(r'R"([^(\s]*)\(', text[i:i + 20]) if c == "R" and (i == 0 or not (
            text[i - 1].isalnum() or text[i - 1] == "_")) else None
        if m:
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            line_start = False
            continue
        if c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):  # 1'000 separators
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j, n)
            closed = j < n and text[j] == c
            out.append(" " * (j - i + (1 if closed else 0)))
            i = j + (1 if closed else 0)
            line_start = False
            continue
        out.append(c)
        line_start = c == "\n" or (line_start and c in " \t")
        i += 1
    return "".join(out)


def is_function_head(head):
    """Whether the code before a `{` (since the last ; { or }) is a function's signature."""
    h = " ".join(ACCESS_LABEL.sub("", head, count=1).split())
    if not h or "(" not in h or SCOPE_HEAD.match(h) or CONTROL.match(h):
        return False
    if re.search(r"(=|return|\[[^\]]*\]\s*(\([^)]*\))?)\s*$", h):  # = {..}, lambdas at file scope
        return False
    # ...) const noexcept override -> T, or a constructor's ": a_(x), b_{y}" (ends with ")").
    return bool(re.search(r"\)\s*(const|noexcept|override|final|mutable|volatile|&|&&|->\s*[\w:<>,\s*&]+|\s)*$", h))


def function_lengths(path):
    """(first line, length, signature) of each C++ function body in `path`, wherever it is."""
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    code = code_only(text)
    newlines = [m.start() for m in NEWLINE.finditer(code)]
    lines = text.split("\n")
    out, stack, last_stop = [], [], 0  # stack: (kind, start offset of its head)
    for m in BRACE_OR_STOP.finditer(code):  # only ; { and } change anything below
        k, ch = m.start(), m.group(0)
        if ch in ";":
            last_stop = k + 1
        elif ch == "{":
            in_function = any(kind == "f" for kind, _ in stack)
            head = code[last_stop:k]
            if not in_function and is_function_head(head):
                label = ACCESS_LABEL.match(head)  # "public:" before a member's signature
                skip = label.end() if label else 0
                start = last_stop + skip + len(head[skip:]) - len(head[skip:].lstrip())
                stack.append(("f", start))
            else:
                stack.append(("s", None))
            last_stop = k + 1
        elif ch == "}":
            if stack:
                kind, start = stack.pop()
                if kind == "f" and not any(kd == "f" for kd, _ in stack):
                    first = 1 + bisect.bisect_left(newlines, start)  # the line of offset start
                    sig = lines[first - 1].strip()
                    out.append((first, 1 + bisect.bisect_left(newlines, k) - first + 1, sig))
            last_stop = k + 1
    return out


# What each layer may include besides itself (docs/architecture.md). "core" is the header-only
# FA4_HD core (include/fa4sim/core); its host shell in src/core may also use util's errors.
LAYER_USES = {
    "core": set(),
    "core-src": {"core", "util"},
    "util": {"core"},
    "ref": {"core", "util"},
    "analysis": {"core", "ref", "util"},
    "gpu": {"core", "ref", "analysis", "util"},
    "cuda": {"core", "ref", "analysis", "util", "gpu"},
    "report": {"core", "analysis", "util"},
    "options": {"core", "analysis", "util"},
    "cli": {"core", "ref", "analysis", "gpu", "util", "report", "options"},
    "python": {"core", "analysis", "util", "options"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def layer_of(path):
    """The layer of a file under src/ or include/fa4sim/, or None (tests, generated files)."""
    parts = path.split("/")
    if parts[0] == "include" and len(parts) > 3 and parts[1] == "fa4sim":
        return parts[2]
    if parts[0] == "src" and len(parts) > 2:
        return "core-src" if parts[1] == "core" else parts[1]
    return None


def resolve_include(path, inc, known):
    """The repository path an include names: fa4sim/... under include/, else relative to `path`,
    else a file of that name elsewhere in src/ (reached through an include directory)."""
    if inc.startswith("fa4sim/"):
        return "include/" + inc
    rel = os.path.normpath(os.path.join(os.path.dirname(path), inc))
    if rel in known:
        return rel
    elsewhere = sorted(k for k in known if k.startswith("src/") and k.endswith("/" + inc))
    return elsewhere[0] if elsewhere else None


def check_includes():
    files = [p for p in tracked("src", "include") if p.endswith(CPP_EXT + (".inc",))]
    known = set(files)
    bad, graph = [], {}
    for path in files:
        src = layer_of(path)
        text = open(os.path.join(ROOT, path), encoding="utf-8").read()
        graph[path] = []
        for m in INCLUDE.finditer(text):
            target = resolve_include(path, m.group(1), known)
            if target is None:
                continue
            graph[path].append(target)
            dst = layer_of(target)
            dst = "core" if dst == "core-src" else dst
            own = "core" if src == "core-src" else src
            if src is None or dst is None or dst == own:
                continue
            if src not in LAYER_USES:
                bad.append(f"{path}: layer '{src}' is not in LAYER_USES (docs/architecture.md)")
            elif dst not in LAYER_USES[src]:
                line = text[:m.start()].count("\n") + 1
                bad.append(f"{path}:{line}: {src} includes {m.group(1)} ({dst}): up the layers")
    # Cycles between files: depth-first search, reporting each cycle once by its smallest file.
    state, cycles = {}, set()

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                cyc = stack[stack.index(nxt):]
                k = cyc.index(min(cyc))
                cycles.add(tuple(cyc[k:] + cyc[:k]))
            elif nxt in graph and not state.get(nxt):
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    sys.setrecursionlimit(10000)
    for node in sorted(graph):
        if not state.get(node):
            visit(node, [])
    for cyc in sorted(cycles):
        bad.append(f"{cyc[0]}: include cycle {' -> '.join(cyc + (cyc[0],))}")
    return bad


def check_scripts():
    bad = []
    for path in tracked("scripts"):
        parts = path.split("/")
        if len(parts) == 2 and parts[1] not in SCRIPT_TOP:
            bad.append(f"{path}:1: a file at the top of scripts/ (only {', '.join(sorted(SCRIPT_TOP))} "
                       f"lives there; move it into scripts/{{{','.join(SCRIPT_FOLDERS)}}}/)")
        elif len(parts) > 2 and parts[1] not in SCRIPT_FOLDERS:
            bad.append(f"{path}:1: scripts/{parts[1]}/ is not a folder of the scripts/ layout "
                       f"(SCRIPT_FOLDERS: {', '.join(SCRIPT_FOLDERS)}; docs/architecture.md)")
    for path in tracked("src"):
        if not path.endswith(CPP_EXT):
            continue
        text = open(os.path.join(ROOT, path), encoding="utf-8").read()
        for m in DRIVER_USE.finditer(text):
            if not os.path.isfile(os.path.join(ROOT, "scripts", "drivers", m.group(1))):
                line = text[:m.start()].count("\n") + 1
                bad.append(f"{path}:{line}: runs driver '{m.group(1)}', which is not in scripts/drivers/")
    return bad


def python_function_lengths(path):
    try:
        tree = ast.parse(open(os.path.join(ROOT, path), encoding="utf-8").read(), path)
    except SyntaxError as e:
        return [(e.lineno or 1, 10 ** 6, f"does not parse: {e.msg}")]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((node.lineno, node.end_lineno - node.lineno + 1, f"def {node.name}(...)"))
    return out


def check_functions(max_lines, list_over):
    bad, rows = [], []
    for path in tracked("src", "include", "tests", "scripts", "python"):
        if path in GENERATED:
            continue
        if path.endswith(CPP_EXT) and path.split("/")[0] in ("src", "include", "tests"):
            found = function_lengths(path)
        elif path.endswith(".py"):
            found = python_function_lengths(path)
        else:
            continue
        for first, n, sig in found:
            rows.append((n, path, first, sig))
            if n > max_lines:
                bad.append(f"{path}:{first}: {n} lines, over {max_lines} ({sig[:80]})")
    for n, path, first, sig in sorted(rows, reverse=True)[:list_over]:
        print(f"{n:4d}  {path}:{first}  {sig[:80]}")
    return bad


def main():
    global ROOT
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--refs", action="store_true")
    ap.add_argument("--functions", action="store_true")
    ap.add_argument("--includes", action="store_true")
    ap.add_argument("--scripts", action="store_true")
    ap.add_argument("--max-lines", type=int, default=120)
    ap.add_argument("--list", type=int, default=0, metavar="N", help="print the N longest functions")
    ap.add_argument("--root", help="check this tree instead of the one holding this script")
    a = ap.parse_args()
    if a.root:
        ROOT = os.path.abspath(a.root)
    both = not (a.refs or a.functions or a.includes or a.scripts)
    bad = []
    if a.refs or both:
        bad += check_refs()
    if a.functions or both:
        bad += check_functions(a.max_lines, a.list)
    if a.includes or both:
        bad += check_includes()
    if a.scripts or both:
        bad += check_scripts()
    for b in bad:
        print(b)
    print(f"check_house: {len(bad)} offence(s)" if bad else "check_house: every rule holds")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
