"""The examples of docs/python.md run as written and print the lines the page says they print:
the NumPy one always, the PyTorch one when torch is installed. README.md's Python section shows
the same PyTorch example."""
import contextlib
import io
import os
import re

import pytest

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "python.md")
README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def examples(path=DOC):
    return re.findall(r"```python\n(.*?)```", open(path).read(), re.S)


def uses_torch(code):
    return "torch" in code.splitlines()[0]


def printed(prefix):
    """The documented output line that starts with prefix (in backquotes on the page)."""
    text = " ".join(open(DOC).read().split())
    [line] = re.findall(r"`(" + re.escape(prefix) + r"[^`]*)`", text)
    return line


def run(code):
    assert len(code.strip().splitlines()) <= 10
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/python.md", "exec"), {})
    return out.getvalue().strip()


def test_readme_example_is_the_docs_torch_example():
    [readme] = examples(README)
    assert readme in examples(), "README.md's Python example differs from docs/python.md's"


def test_numpy_example_prints_the_documented_line():
    [code] = [c for c in examples() if not uses_torch(c)]
    assert run(code) == printed("e4m3 rel-L2 ")


def test_torch_example_prints_the_documented_line():
    pytest.importorskip("torch", reason="torch is not installed: the PyTorch example is not run")
    [code] = [c for c in examples() if uses_torch(c)]
    assert run(code) == printed("vs FA4 e4m3: ")
