"""Shared fixtures of the Python module's tests: the fa4sim CLI next to the module (FA4SIM_BIN,
set by ctest), and helpers that run it and read its --json report or its error message. Without
the binary (e.g. a wheel installed on its own) the tests that compare with the CLI are skipped,
each one listed with the reason (-rs)."""
import json
import os
import subprocess

import pytest


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
