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
# otherwise. An error statistic of a float32 value against the float64 reference (lse_max_err:
# |LSE - LSE_ref| near 1e-6 for LSE values near 5) inherits the reference's absolute rounding,
# ~1e-15, which is ~1e-9 of the error itself (seen: 1.1082930431e-06 against 1.1082930440e-06 with
# the wheel against the native build): in that mode a difference within 1e-14 absolute passes too.
# A stored copy (Note [Stored CLI results]) is another build's output, often another machine's:
# the same holds for it. Seen: a copy made on one 2-core EPYC VM against the native CLI on
# another, rel-L2 0.010801494223616566 against ...568 (the float64 reference's sums follow the
# machine's vector width and Eigen's cache blocking). So the check of a stored copy against the
# live CLI, and every comparison when there is no CLI (the stored copies stand in for it), are
# made as across builds.
BASELINE_PARITY = os.environ.get("FA4SIM_PARITY") == "baseline"
STORED_ONLY = not (os.environ.get("FA4SIM_BIN") and os.path.exists(os.environ["FA4SIM_BIN"]))


def report_equal(got, want, path="results", cross_build=False):
    """Asserts two JSON results are equal: exactly, or across builds (FA4SIM_PARITY=baseline, no
    CLI so that `want` is a stored copy, or cross_build) with floats within 1e-12 relative or
    1e-14 absolute. Names the first differing path."""
    cross_build = cross_build or STORED_ONLY
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), (path, got, want)
        for k in want:
            report_equal(got[k], want[k], f"{path}.{k}", cross_build)
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), (path, got, want)
        for i, (g, w) in enumerate(zip(got, want)):
            report_equal(g, w, f"{path}[{i}]", cross_build)
    elif ((BASELINE_PARITY or cross_build) and isinstance(want, float)
          and isinstance(got, float)):
        assert got == want or math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-14), (path, got, want)
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


# ---- parity with the CLI, with or without the binary
#
# Note [Stored CLI results]
# A parity test compares a Python function with the CLI command it mirrors. With the CLI
# (FA4SIM_BIN) it runs the command, and also checks the stored copy of the command's results in
# tests/python/parity/NAME.json: a copy that no longer matches the CLI fails the test (stale).
# Without the CLI (an installed wheel on its own, ctest python_parity_stored) the stored copy
# stands in for the command, so the comparison still runs. FA4SIM_PARITY_WRITE=1 (with the CLI)
# writes the copies anew instead of checking them: each holds the command, the fa4sim version
# and git revision that made it, the date and the machine. Output arrays (.npy files the
# command writes) are kept as SHA-256 digests of their dtype, shape and bytes; input arrays are
# written by the test and their digests stored, so a stored copy is only used for the same input.

PARITY_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "parity")


def array_digest(a):
    """SHA-256 of an array's dtype, shape and C-order bytes (of a text: its UTF-8 bytes). Every
    float NaN counts as one NaN: where a result is specified as NaN, its sign and payload are
    not (they follow the operand order the compiler picked, which differs between the wheel's
    baseline build and a -march=native one)."""
    import hashlib
    import numpy as np
    if isinstance(a, str):
        return hashlib.sha256(a.encode()).hexdigest()
    a = np.ascontiguousarray(a)
    if a.dtype.kind == "f":
        a = np.where(np.isnan(a), a.dtype.type(np.nan), a)
    h = hashlib.sha256(f"{a.dtype.str} {a.shape}".encode())
    h.update(a.tobytes())
    return h.hexdigest()


TIMING_KEYS = {"elapsed_s", "perf"}


def strip_timing(d):
    """Results without wall times (they differ run to run)."""
    if isinstance(d, dict):
        return {k: strip_timing(v) for k, v in d.items() if k not in TIMING_KEYS}
    if isinstance(d, list):
        return [strip_timing(v) for v in d]
    return d


def _portable(results, tmp=None):
    """Results without what depends on the checkout or the run: an arch's `origin` path as its
    file name, the test's files (in the folder tmp) by their names, no wall times."""
    if isinstance(results, dict):
        return {k: (os.path.basename(v) if k == "origin" and isinstance(v, str)
                    else _portable(v, tmp))
                for k, v in results.items() if k not in TIMING_KEYS}
    if isinstance(results, list):
        return [_portable(v, tmp) for v in results]
    if isinstance(results, str) and tmp:
        return results.replace(tmp + os.sep, "")
    return results


@pytest.fixture(scope="session")
def parity(tmp_path_factory):
    """parity.results(name, *args, inputs=None, outputs=()): the results of `fa4sim ARGS --json -`
    and the digests of its output arrays, from the CLI or from the stored copy (Note [Stored CLI
    results]). inputs: {key: array or text} written as .npy (a text: as .json), "{key}" in args
    replaced by the path;
    outputs: keys of .npy files the command writes ("{key}" in args)."""
    path = os.environ.get("FA4SIM_BIN")
    live = bool(path) and os.path.exists(path)
    write = os.environ.get("FA4SIM_PARITY_WRITE") == "1"
    tmp = tmp_path_factory.mktemp("parity")

    class Parity:
        def results(self, name, *args, inputs=None, outputs=()):
            import numpy as np
            inputs = inputs or {}
            stored_path = os.path.join(PARITY_DIR, name + ".json")
            command = ["fa4sim", *map(str, args), "--json", "-"]
            input_digests = {k: array_digest(a) for k, a in inputs.items()}
            if not live:
                if not os.path.exists(stored_path):
                    pytest.fail(f"no stored CLI results {stored_path} and no CLI (FA4SIM_BIN) "
                                "to run: make them with FA4SIM_PARITY_WRITE=1 and the CLI")
                with open(stored_path) as f:
                    stored = json.load(f)
                assert stored["command"] == command, (stored["command"], command)
                assert stored["inputs"] == input_digests, f"{name}: the test's input changed"
                return stored["results"], stored["outputs"]
            files = {k: str(tmp / f"{name}-{k}.npy") for k in [*inputs, *outputs]}
            for k, a in inputs.items():
                if isinstance(a, str):
                    files[k] = files[k][:-4] + ".json"
                    with open(files[k], "w") as f:
                        f.write(a)
                else:
                    np.save(files[k], a)
            real = [str(a).format(**files) for a in args]
            r = subprocess.run([path, *real, "--json", "-"], capture_output=True)
            assert r.returncode in (0, 1), r.stderr.decode()
            results = _portable(json.loads(r.stdout)["results"], str(tmp))
            outs = {k: array_digest(np.load(files[k])) for k in outputs}
            entry = {"command": command, "inputs": input_digests, "results": results,
                     "outputs": outs}
            if write:
                _write_stored(stored_path, entry, path)
            else:
                assert os.path.exists(stored_path), (
                    f"no stored copy {stored_path}: write it with FA4SIM_PARITY_WRITE=1")
                with open(stored_path) as f:
                    stored = json.load(f)
                assert stored["command"] == command, (stored["command"], command)
                assert stored["inputs"] == input_digests, f"{name}: the test's input changed"
                assert stored["outputs"] == outs, (
                    f"{name}: stored output digests are stale (FA4SIM_PARITY_WRITE=1 renews them)")
                report_equal(stored["results"], results, f"stored {name}", cross_build=True)
            return results, outs

    return Parity()


def _write_stored(stored_path, entry, cli_path):
    """Writes a stored copy atomically, with its provenance."""
    import datetime
    import platform
    version = subprocess.run([cli_path, "version"], capture_output=True, text=True).stdout.strip()
    cpu = ""
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    entry = dict(entry, made_by=version, date=datetime.date.today().isoformat(),
                 machine=f"{platform.machine()} {cpu}, {os.cpu_count()} cores".strip())
    os.makedirs(os.path.dirname(stored_path), exist_ok=True)
    tmp = stored_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(entry, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, stored_path)
