#!/usr/bin/env python3
"""scripts/check/check_house.py catches what docs/style.md forbids, planted one at a time in a small
tree of its own (a temporary folder, not a git checkout): a long member function in a class body,
a long function in an indented namespace, a long Python function (a method too), and a forbidden
reference in python/, in CMakeLists.txt and in .ci/, an include up the layers (one through an
include directory), an include cycle, a script at the top of scripts/ or in a folder that is not
one of the layout's, and a driver that src/ runs from outside scripts/drivers/. The small tree alone passes, so each failure
is the plant's; each plant must be reported at its own path and line.

Exit 0 when every plant is caught, 1 otherwise."""
import contextlib
import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts", "check", "check_house.py")
N = 130  # lines of a planted body: over the 120-line limit


def body(indent, n=N):
    return "".join(f"{indent}  x += {i};\n" for i in range(n))


def cpp_member():
    return ("#pragma once\nnamespace fa4sim {\n\nclass Planted {\n public:\n"
            "  int long_member(int x) const {\n" + body("  ") + "    return x;\n  }\n"
            "  int short_member() const { return 1; }\n};\n\n}  // namespace fa4sim\n"), 6


def cpp_indented_namespace():
    return ("namespace fa4sim {\n  namespace inner {\n    int long_free(int x) {\n" + body("    ")
            + "      return x;\n    }\n  }  // namespace inner\n}  // namespace fa4sim\n"), 3


def py_function():
    return "def long_function(x):\n" + "".join(f"    x += {i}\n" for i in range(N)) + "    return x\n", 1


def py_method():
    return ("class Planted:\n    def long_method(self, x):\n"
            + "".join(f"        x += {i}\n" for i in range(N)) + "        return x\n"), 2


def forbidden():  # the steering checkout's folder, spelled so that this file does not contain it
    return "# see ../" + "share" + "d/docs for the facts\n", 1


PLANTS = {  # path in the small tree -> (text, line the offence must be reported at)
    "include/fa4sim/planted/member.h": cpp_member,
    "src/planted/indented.cpp": cpp_indented_namespace,
    "python/fa4sim/planted.py": py_function,
    "scripts/check/planted_method.py": py_method,
    "python/fa4sim/planted_ref.py": forbidden,
    "CMakeLists.txt": lambda: ("cmake_minimum_required(VERSION 3.22)\n" + forbidden()[0], 2),
    ".ci/planted": lambda: ("#!/bin/sh\n" + forbidden()[0], 2),
    # an include up the layers (the core's shell reaching for the references) ...
    "src/core/planted.cpp": lambda: ('#include "fa4sim/core/ok.h"\n#include "fa4sim/ref/exp2_ref.h"\n', 2),
    # ... and one from the Python module into the CLI, through an include directory
    "src/python/planted.cpp": lambda: ('#include "cli_util.h"\n', 1),
    # a cycle: util/ok.h includes util/cycle.h, which includes util/ok.h
    "include/fa4sim/util/cycle.h": lambda: ('#pragma once\n#include "fa4sim/util/ok.h"\n', 0),
    # the scripts/ layout: only setup.sh at the top, only the layout's folders below it ...
    "scripts/planted_top.py": lambda: ("def ok():\n    return 1\n", 1),
    "scripts/misc/planted.sh": lambda: ("#!/bin/sh\necho ok\n", 1),
    # ... and every driver the binary runs in scripts/drivers/ (ok.py is; gone.py is not)
    "src/report/planted_driver.cpp": lambda: ('#include "fa4sim/util/ok.h"\nstd::string a = drivers_dir() + "/ok.py";\n'
                                              'std::string b = drivers_dir() + "/gone.py";\n', 3),
}

CLEAN = {  # a small tree that passes: short functions of each kind, no forbidden reference
    "include/fa4sim/planted/ok.h": "namespace fa4sim {\nstruct Ok {\n  int f() const { return 1; }\n};\n}\n",
    "src/planted/ok.cpp": "namespace fa4sim {\nint g(int x) {\n  return x + 1;\n}\n}  // namespace fa4sim\n",
    "python/fa4sim/ok.py": "def ok(x):\n    return x\n",
    "CMakeLists.txt": "cmake_minimum_required(VERSION 3.22)\n",
    ".ci/run": "#!/bin/sh\necho ok\n",
    "include/fa4sim/core/ok.h": "#pragma once\n",
    "include/fa4sim/util/ok.h": '#pragma once\n#include "fa4sim/util/cycle.h"\n',
    "include/fa4sim/util/cycle.h": "#pragma once\n",
    "src/cli/cli_util.h": '#pragma once\n#include "fa4sim/util/ok.h"\n',
    "scripts/setup.sh": "#!/bin/sh\necho set up\n",
    "scripts/drivers/ok.py": "def ok(x):\n    return x\n",
    "scripts/check/ok.py": "def ok(x):\n    return x\n",
}


def run(root):
    r = subprocess.run([sys.executable, CHECK, "--root", root], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


_check_house = None


def run_here(root):
    """run(root) without a new Python: check_house.py's main() called in this process, its output
    captured (a start of Python and check_house.py cost ~0.1 CPU-s, each of the plants' runs one).
    The clean tree's run, the first, goes through run(): the script as a program."""
    global _check_house
    if _check_house is None:
        spec = importlib.util.spec_from_file_location("check_house", CHECK)
        _check_house = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_check_house)
    out = io.StringIO()
    argv = sys.argv
    sys.argv = [CHECK, "--root", root]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                rc = _check_house.main()
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else 1
            except Exception:  # as the script's uncaught exception: a traceback and exit 1
                traceback.print_exc()
                rc = 1
    finally:
        sys.argv = argv
    return rc, out.getvalue()


def make_tree(files):
    root = tempfile.mkdtemp(prefix="fa4sim-house-")
    os.makedirs(os.path.join(root, "scripts"))
    for path, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
        with open(os.path.join(root, path), "w", encoding="utf-8") as f:
            f.write(text)
    return root


def main():
    failures = 0
    root = make_tree(CLEAN)
    rc, out = run(root)
    shutil.rmtree(root)
    if rc != 0:
        print(f"FAIL: the clean tree does not pass (exit {rc}):\n{out}")
        return 1
    print("clean tree: passes")
    for path, make in PLANTS.items():
        text, line = make()
        root = make_tree({**CLEAN, path: text})
        rc, out = run_here(root)
        shutil.rmtree(root)
        where = f"{path}:{line}:" if line else "include cycle"
        caught = rc == 1 and where in out
        print(f"{where} ({path}): {'caught' if caught else 'MISSED'}")
        if not caught:
            failures += 1
            print(f"  exit {rc}, output:\n{out}")
    print(f"check_house_plants: {len(PLANTS) - failures} of {len(PLANTS)} plants caught")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
