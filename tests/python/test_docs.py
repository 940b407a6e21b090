"""The examples of docs/python.md run as written: the NumPy one always, the PyTorch one when
torch is installed. README.md's Python section shows the same PyTorch example."""
import os
import re

import pytest

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "python.md")
README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def examples(path=DOC):
    return re.findall(r"```python\n(.*?)```", open(path).read(), re.S)


def test_readme_example_is_the_docs_torch_example():
    [readme] = examples(README)
    assert readme in examples(), "README.md's Python example differs from docs/python.md's"


def test_numpy_example_runs():
    [code] = [c for c in examples() if c.startswith("import numpy")]
    assert len(code.strip().splitlines()) <= 10
    exec(compile(code, "docs/python.md", "exec"), {})


def test_torch_example_runs():
    pytest.importorskip("torch", reason="torch is not installed: the PyTorch example is not run")
    [code] = [c for c in examples() if c.startswith("import torch")]
    assert len(code.strip().splitlines()) <= 10
    exec(compile(code, "docs/python.md", "exec"), {})
