"""ctest entry of the Python module's tests: runs pytest on tests/python (listing skipped tests
with their reasons, e.g. the PyTorch ones without torch), or exits 77 (a visible
ctest "Skipped") when pytest or numpy is missing, saying which."""
import sys

missing = []
for name in ("pytest", "numpy"):
    try:
        __import__(name)
    except ImportError:
        missing.append(name)
if missing:
    print(f"skipped: {', '.join(missing)} not installed for {sys.executable} "
          f"(python3 -m pip install {' '.join(missing)})")
    sys.exit(77)

import os  # noqa: E402

import pytest  # noqa: E402

# FA4SIM_PYCACHE (set by ctest: <build>/pycache): pytest rewrites the asserts of every test module
# on each run, and keeps the result as bytecode unless PYTHONDONTWRITEBYTECODE is set (it is on
# some machines, to keep source folders free of __pycache__). The bytecode of the modules imported
# from here on (the test modules, rewritten, and fa4sim's __init__.py) goes to that folder in the
# build tree instead, and later runs read it from there. The modules imported above keep their
# own bytecode, as before.
if os.environ.get("FA4SIM_PYCACHE"):
    sys.pycache_prefix = os.environ["FA4SIM_PYCACHE"]
    sys.dont_write_bytecode = False

here = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]
# `-k WORD` (python_parity_stored: -k parity) selects the tests whose name has WORD in it, and a
# test's name, its parameters' ids and its marks are written in its own file: a file whose text
# never has WORD (any case) has no test to run. Such files are not even imported (test_types.py
# imports ml_dtypes, ~0.5 CPU-s); the same tests run and pass or fail as with the whole folder.
paths = [here]
if len(args) == 2 and args[0] == "-k" and args[1].isidentifier():
    word = args[1].lower()
    paths = []
    for name in sorted(os.listdir(here)):
        if name.startswith("test_") and name.endswith(".py"):
            with open(os.path.join(here, name), encoding="utf-8") as f:
                if word in f.read().lower():
                    paths.append(os.path.join(here, name))
sys.exit(pytest.main([*paths, "-q", "-rs", "-p", "no:cacheprovider", *args]))
