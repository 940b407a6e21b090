"""The package's surface: every public function has a docstring that explains each of its
arguments (help(fa4sim.attention)), and the type stubs (fa4sim/__init__.pyi) declare the same
parameters with the same defaults."""
import ast
import inspect
import os

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
                                        "format_info", "attention", "check", "online_softmax",
                                        "roofline"])


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
