"""The package's surface: every public function has a docstring that explains each of its
arguments (help(fa4sim.attention)), and the type stubs (fa4sim/__init__.pyi) declare the same
parameters with the same defaults."""
import ast
import inspect
import json
import os
import re
import subprocess
import sys

import pytest

import fa4sim

FUNCTIONS = [n for n in fa4sim.__all__ if callable(getattr(fa4sim, n))]


def stub_signatures():
    path = os.path.join(os.path.dirname(fa4sim.__file__), "__init__.pyi")
    tree = ast.parse(open(path).read())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            a = node.args
            params = a.posonlyargs + a.args
            defaults = [None] * (len(params) - len(a.defaults)) + a.defaults
            sig = [(p.arg, d) for p, d in zip(params, defaults)]
            sig += [(p.arg, d) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
            out[node.name] = [(n, None if d is None else ast.literal_eval(d)) for n, d in sig]
    return out


def test_all_public_functions_are_listed():
    assert sorted(FUNCTIONS) == sorted(["ex2_emu", "exp2_analysis", "encode", "decode", "quantize",
                                        "quantize_report", "format_info", "formats",
                                        "block_encode", "block_decode", "block_quantize",
                                        "block_tensor_scale", "attention", "attention_report",
                                        "check", "online_softmax", "rescale", "fit", "roofline",
                                        "schedule"])


@pytest.mark.parametrize("name", FUNCTIONS)
def test_stub_matches_signature(name):
    stub = stub_signatures()[name]
    sig = inspect.signature(getattr(fa4sim, name))
    real = [(p.name, None if p.default is inspect.Parameter.empty else p.default)
            for p in sig.parameters.values()]
    assert stub == real


@pytest.mark.parametrize("name", FUNCTIONS)
def test_docstring_explains_every_argument(name):
    f = getattr(fa4sim, name)
    doc = inspect.getdoc(f)
    assert doc and len(doc.splitlines()) >= 2, name
    for p in inspect.signature(f).parameters:
        assert p in doc, f"{name}: argument {p} is not explained"


def test_version_is_pep440_and_git_revision_apart():
    assert re.fullmatch(r"\d+(\.\d+)*", fa4sim.__version__), fa4sim.__version__
    assert " " not in fa4sim.__git_revision__ and fa4sim.__git_revision__, fa4sim.__git_revision__
    assert fa4sim.__git_revision__ not in fa4sim.__version__


def test_import_writes_no_environment_variable():
    """A fresh interpreter's os.environ (and the process environment C code sees, via a
    child) is the same before and after `import fa4sim`."""
    code = ("import os, json, subprocess, sys; before = dict(os.environ); import fa4sim; "
            "after = dict(os.environ); "
            "child = json.loads(subprocess.check_output([sys.executable, '-c', "
            "'import os, json; print(json.dumps(dict(os.environ)))'])); "
            "print(json.dumps([before == after, child == before]))")
    env = {k: v for k, v in os.environ.items() if k != "FA4SIM_DATA_DIR"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert json.loads(out) == [True, True]


def test_roofline_reads_the_data_without_the_environment():
    """roofline reads data/archs (the wheel's fa4sim/data, or the source tree's) with
    FA4SIM_DATA_DIR unset."""
    code = "import fa4sim; print(len(fa4sim.roofline(arch='h100', d=128)['rows']))"
    env = {k: v for k, v in os.environ.items() if k != "FA4SIM_DATA_DIR"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert int(out) >= 1
