"""Shared fixtures of the Python module's tests: the fa4sim CLI next to the module (FA4SIM_BIN,
set by ctest), and helpers that run it and read its --json report or its error message. Without
the binary (e.g. a wheel installed on its own) the tests that compare with the CLI are skipped,
each one listed with the reason (-rs)."""
import json
import math
import os
import subprocess

import pytest

# FA4SIM_PARITY=baseline (set by wheel_check.py): the module under test is the wheel, built for
# x86-64-v2, and the CLI the native build. The kernel model's values (ex2_emu, codes, O, LSE,
# rescale flags and counts) are the same bits in both; float64 summary statistics (rel-L2,
# cosine, max_abs, error_split, exp2 means) are sums whose order follows the native build's
# AVX2 loops and Eigen's vector width, so they may differ in the last bits there (seen: up to
# 2e-14 relative). report_equal compares those within 1e-12 relative in that mode, exactly
# otherwise.
BASELINE_PARITY = os.environ.get("FA4SIM_PARITY") == "baseline"


def report_equal(got, want, path="results"):
    """Asserts two JSON results are equal: exactly, or (FA4SIM_PARITY=baseline) with floats
    within 1e-12 relative. Names the first differing path."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), (path, got, want)
        for k in want:
            report_equal(got[k], want[k], f"{path}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (path, got, want)
        for i, (g, w) in enumerate(zip(got, want)):
            report_equal(g, w, f"{path}[{i}]")
    elif BASELINE_PARITY and isinstance(want, float) and isinstance(got, float):
        assert got == want or math.isclose(got, want, rel_tol=1e-12), (path, got, want)
    else:
        assert got == want, (path, got, want)


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("FA4SIM_BIN")
    if not path:
        pytest.skip("needs the fa4sim CLI to compare with: set FA4SIM_BIN to its path "
                    "(ctest sets it)")
    if not os.path.exists(path):
        pytest.skip(f"needs the fa4sim CLI to compare with: FA4SIM_BIN={path} does not exist")

    class Cli:
        def run(self, *args, stdin=None):
            return subprocess.run([path, *map(str, args)], input=stdin, capture_output=True)

        def json(self, *args):
            r = self.run(*args, "--json", "-")
            assert r.returncode in (0, 1), r.stderr.decode()
            return json.loads(r.stdout)

        def py_error(self, *args):
            """The CLI's message for a failing command in the Python API's terms: each
            `--flag` as the argument's name, `flag` (fa4sim._python_terms)."""
            import fa4sim
            return fa4sim._python_terms(self.error(*args))

        def error(self, *args):
            """The message of a failing command, without the 'fa4sim: error: ' prefix."""
            r = self.run(*args)
            assert r.returncode == 2, (r.returncode, r.stdout[:200], r.stderr)
            msg = r.stderr.decode().strip()
            assert msg.startswith("fa4sim: error: "), msg
            return msg[len("fa4sim: error: "):]

    return Cli()
