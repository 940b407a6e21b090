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

sys.exit(pytest.main([os.path.dirname(os.path.abspath(__file__)), "-q", "-rs", "-p",
                      "no:cacheprovider",
                      *sys.argv[1:]]))
