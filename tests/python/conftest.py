"""Shared fixtures of the Python module's tests: the fa4sim CLI next to the module (FA4SIM_BIN,
set by ctest), and helpers that run it and read its --json report or its error message."""
import json
import os
import subprocess

import pytest


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("FA4SIM_BIN")
    if not path or not os.path.exists(path):
        pytest.fail("FA4SIM_BIN must name the fa4sim binary (ctest sets it)")

    class Cli:
        def run(self, *args, stdin=None):
            return subprocess.run([path, *map(str, args)], input=stdin, capture_output=True)

        def json(self, *args):
            r = self.run(*args, "--json", "-")
            assert r.returncode in (0, 1), r.stderr.decode()
            return json.loads(r.stdout)

        def error(self, *args):
            """The message of a failing command, without the 'fa4sim: error: ' prefix."""
            r = self.run(*args)
            assert r.returncode == 2, (r.returncode, r.stdout[:200], r.stderr)
            msg = r.stderr.decode().strip()
            assert msg.startswith("fa4sim: error: "), msg
            return msg[len("fa4sim: error: "):]

    return Cli()
