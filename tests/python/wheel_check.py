"""ctest `python_wheel` (label slow): the wheel as a user gets it.

1. `pip wheel` of the source tree (pyproject.toml, scikit-build-core; no build isolation, so
   scikit-build-core and nanobind must be installed for this python);
2. the wheel's files: the package `fa4sim/` and its dist-info, nothing else;
3. a fresh venv (python -m venv --system-site-packages: numpy, pytest, ml_dtypes come from this
   python), `pip install` of the wheel: the only new entries of the venv's site-packages are the
   package and its dist-info, nothing new in its bin/;
4. `import fa4sim` from the venv (not the build tree), which must write no environment variable;
5. the API tests (tests/python) against the installed wheel, with the -march=native CLI of this
   build as FA4SIM_BIN: the parity tests then compare the baseline build with the native one;
   then the parity tests again without the CLI, against its stored results (tests/python/parity);
6. the ISA check: objdump of the wheel's extension, every instruction beyond the declared
   baseline (x86-64-v2) named; they are allowed only in functions whose name has "avx2" (the
   run-time-dispatched loops of src/core/exp2_emu_dispatch.cpp, and the "[clone .avx2]" copies
   of the array loops of src/core/formats.cpp that GCC's target_clones makes), which must exist;
7. ex2_emu of the wheel (AVX2 loop chosen at run time) against the native build's module on
   every float32 input for every degree (--exhaustive-degrees), mismatch count and the first
   mismatches printed.

Exit 77 (a visible ctest "Skipped") when a prerequisite is missing, saying which.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

SKIP = 77

# Beyond x86-64-v2: AVX/AVX2/AVX-512 and FMA/F16C (VEX/EVEX: mnemonics starting with "v", ymm/zmm
# and mask registers), BMI1/BMI2/LZCNT/MOVBE (x86-64-v3). Not tzcnt: without -mbmi GCC writes
# __builtin_ctz as `rep bsf` (F3 0F BC), which objdump shows as tzcnt; a CPU without BMI1 ignores
# the prefix and runs bsf, the same result for the nonzero inputs __builtin_ctz is defined on
# (GCC's "tzcnt as rep bsf" for generic tuning). lzcnt (`rep bsr`) has no such reading: flagged.
V3_MNEMONICS = {"andn", "bextr", "blsi", "blsmsk", "blsr", "bzhi", "lzcnt", "movbe", "mulx", "pdep",
                "pext", "rorx", "sarx", "shlx", "shrx"}
BEYOND_OPERAND = re.compile(r"%[yz]mm\d+|%k[0-7]\b")


def skip(why):
    print(f"skipped: {why}")
    sys.exit(SKIP)


def run(cmd, **kw):
    print("$", " ".join(map(str, cmd)), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def beyond_baseline(insn):
    """Whether one objdump instruction text needs more than x86-64-v2."""
    parts = insn.split(None, 1)
    if not parts:
        return False
    m = parts[0]
    if m in ("rep", "repz", "repnz", "lock", "notrack", "bnd", "data16") and len(parts) > 1:
        parts = parts[1].split(None, 1)
        m = parts[0]
    if m.startswith("v") and m not in ("verr", "verw"):
        return True
    if m in V3_MNEMONICS:
        return True
    return bool(BEYOND_OPERAND.search(insn))


def isa_check(so_path):
    """Instructions beyond x86-64-v2 per function of so_path: {function: count}."""
    dis = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", so_path], check=True,
                         capture_output=True, text=True).stdout
    func = "?"
    found = {}
    examples = {}
    for line in dis.splitlines():
        h = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if h:
            func = h.group(1)
            continue
        i = re.match(r"^\s+[0-9a-f]+:\s+(.*)$", line)
        if i and beyond_baseline(i.group(1)):
            found[func] = found.get(func, 0) + 1
            examples.setdefault(func, i.group(1))
    return found, examples


def check_isa(so_path):
    found, examples = isa_check(so_path)
    allowed = {f: n for f, n in found.items() if "avx2" in f}
    bad = {f: n for f, n in found.items() if "avx2" not in f}
    print(f"ISA: {sum(found.values())} instructions beyond x86-64-v2 in {len(found)} functions; "
          f"{sum(allowed.values())} in {len(allowed)} run-time-dispatched *avx2* functions:")
    for f, n in sorted(allowed.items()):
        print(f"  allowed  {n:5d}  {f}")
    for f, n in sorted(bad.items()):
        print(f"  BEYOND   {n:5d}  {f}   e.g. {examples[f]}")
    if bad:
        sys.exit(f"FAIL: {len(bad)} functions outside the dispatched loops use instructions "
                 "beyond x86-64-v2")
    if not allowed:
        sys.exit("FAIL: no AVX2 function in the wheel: ex2_emu's run-time dispatch is missing")


EX2_PRODUCER = r"""
import mmap, sys, numpy as np, fa4sim
degree, step, path, first = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
assert fa4sim._ext.ex2_emu_array_is_simd() in (True, False)
with open(path, "r+b") as f:
    mm = mmap.mmap(f.fileno(), 0)
slots = [np.frombuffer(mm, dtype=np.float32, count=step, offset=(first + k) * step * 4) for k in (0, 1)]
go, ready = sys.stdin.buffer, sys.stdout.buffer
base, xb = np.arange(step, dtype=np.uint32), np.empty(step, dtype=np.uint32)
for k, b in enumerate(range(0, 1 << 32, step)):
    if k >= 2 and go.read(1) != b"g":  # the slot of chunk k - 2 is free again
        sys.exit("ex2_emu producer: the checker stopped")
    np.add(base, np.uint32(b), out=xb)
    fa4sim.ex2_emu(xb.view(np.float32), degree, out=slots[k % 2])
    ready.write(b"r")
    ready.flush()
"""


def compare_ex2(wheel_python, wheel_env, native_env, degrees):
    """Bits of ex2_emu from the wheel and from the native module on all 2^32 inputs.

    Each module runs in a producer process (both are the package `fa4sim`, so one process cannot
    import both) that writes its outputs into two slots of a shared file (tmpfs where there is one:
    no copy through a pipe) and says "r" on its stdout when a chunk is there; the checker compares
    the chunk in place and says "g" on the producers' stdin when its slot may be written again. The
    producers compute chunk k + 1 while the checker compares chunk k."""
    import mmap
    import numpy as np
    step = 1 << 20  # inputs per chunk
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    ok = True
    with tempfile.NamedTemporaryFile(dir=shm, prefix="fa4sim-wheel-ex2-") as f:
        f.truncate(4 * step * 4)  # 2 producers x 2 slots x step float32
        mm = mmap.mmap(f.fileno(), 0)
        view = [[np.frombuffer(mm, dtype=np.uint32, count=step, offset=(2 * p + k) * step * 4)
                 for k in (0, 1)] for p in (0, 1)]
        for degree in degrees:
            t0 = time.time()
            procs = [subprocess.Popen([py, "-c", EX2_PRODUCER, str(degree), str(step), f.name, str(2 * i)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                      cwd=tempfile.gettempdir(), bufsize=0)
                     for i, (py, env) in enumerate(((wheel_python, wheel_env), (sys.executable, native_env)))]
            mismatches, first = 0, []
            for k, b in enumerate(range(0, 1 << 32, step)):
                if any(p.stdout.read(1) != b"r" for p in procs):
                    sys.exit(f"FAIL: ex2_emu producer stopped at input {b:#x}")
                w, n = view[0][k % 2], view[1][k % 2]
                if not np.array_equal(w, n):
                    diff = np.nonzero(w != n)[0]
                    mismatches += diff.size
                    for j in diff[:max(0, 5 - len(first))]:
                        first.append((b + int(j), int(w[j]), int(n[j])))
                if b + 2 * step < 1 << 32:
                    for p in procs:
                        p.stdin.write(b"g")
            for p in procs:
                p.stdin.close()
                if p.wait() != 0:
                    sys.exit(f"FAIL: an ex2_emu producer exited with {p.returncode}")
            print(f"ex2_emu degree {degree}: {mismatches} mismatches of 2^32 inputs (wheel vs native) "
                  f"[{time.time() - t0:.0f} s]")
            for x, wb, nb in first:
                print(f"  input {x:#010x}: wheel {wb:#010x}, native {nb:#010x}")
            ok = ok and mismatches == 0
    if not ok:
        sys.exit("FAIL: the wheel's ex2_emu differs from the native build's")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True, help="scratch folder (wheel build dir, venv)")
    ap.add_argument("--cli", required=True, help="the native fa4sim CLI (FA4SIM_BIN)")
    ap.add_argument("--native-pythonpath", required=True, help="<build>/python")
    ap.add_argument("--exhaustive-degrees", default="0,1,2,3,4,5")
    a = ap.parse_args()

    missing = []
    for mod in ("pip", "venv", "scikit_build_core", "nanobind", "numpy", "pytest"):
        try:
            __import__(mod)
        except ImportError:
            missing.append(mod.replace("_", "-"))
    if missing:
        skip(f"{', '.join(missing)} not installed for {sys.executable} "
             f"(python3 -m pip install {' '.join(missing)})")
    if not shutil.which("objdump"):
        skip("objdump not found (binutils): the wheel's ISA cannot be checked")
    if not re.match(r"x86_64|AMD64", os.uname().machine):
        skip(f"the ISA check is written for x86-64, this is {os.uname().machine}")

    os.makedirs(a.work, exist_ok=True)
    dist = os.path.join(a.work, "dist")
    shutil.rmtree(dist, ignore_errors=True)
    t0 = time.time()
    # Without Ninja, scikit-build-core drives Unix Makefiles with no -j: one core. CMake's
    # CMAKE_BUILD_PARALLEL_LEVEL makes that `cmake --build` use every core (Ninja already does).
    env = dict(os.environ)
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 1))
    run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", dist,
         "--config-settings", f"build-dir={os.path.join(a.work, 'build')}", a.source], env=env)
    print(f"pip wheel: {time.time() - t0:.0f} s (incremental when {a.work}/build exists)")
    wheels = [f for f in os.listdir(dist) if f.endswith(".whl")]
    assert len(wheels) == 1, wheels
    wheel = os.path.join(dist, wheels[0])

    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    print(f"{wheels[0]}: {len(names)} files")
    for n in names:
        print("  ", n)
    stray = [n for n in names if not re.match(r"(fa4sim/|fa4sim-[^/]+\.dist-info/)", n)]
    if stray:
        sys.exit(f"FAIL: the wheel holds files outside the package: {stray}")
    sos = [n for n in names if re.match(r"fa4sim/_fa4sim\..*\.so$", n)]
    if len(sos) != 1:
        sys.exit(f"FAIL: expected one fa4sim/_fa4sim*.so in the wheel, got {sos}")

    venv = os.path.join(a.work, "venv")
    shutil.rmtree(venv, ignore_errors=True)
    run([sys.executable, "-m", "venv", "--system-site-packages", venv])
    vpy = os.path.join(venv, "bin", "python")
    site = subprocess.run([vpy, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    before, bin_before = set(os.listdir(site)), set(os.listdir(os.path.join(venv, "bin")))
    run([vpy, "-m", "pip", "install", "--no-deps", "--no-index", wheel])
    added = sorted(set(os.listdir(site)) - before)
    bin_added = sorted(set(os.listdir(os.path.join(venv, "bin"))) - bin_before)
    print(f"new in {site}: {added}; new in {venv}/bin: {bin_added}")
    want = re.compile(r"^(fa4sim|fa4sim-[0-9.]+\.dist-info)$")
    if len(added) != 2 or not all(want.match(n) for n in added) or bin_added:
        sys.exit("FAIL: installing the wheel added more than the package and its dist-info")

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FA4SIM_DATA_DIR")}
    probe = ("import os, sys; before = dict(os.environ); import fa4sim; "
             "assert dict(os.environ) == before, 'import fa4sim changed os.environ'; "
             f"assert fa4sim.__file__.startswith({site!r}), fa4sim.__file__; "
             "print(fa4sim.__file__, fa4sim.__version__, fa4sim._ext.ex2_emu_array_is_simd())")
    run([vpy, "-c", probe], env=env, cwd=tempfile.gettempdir())

    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(wheel) as z:
        check_isa(z.extract(sos[0], tmp))

    # The wheel (baseline ISA) against the native CLI: float64 summary statistics within 1e-12
    # relative, everything else exact (tests/python/conftest.py, report_equal).
    test_env = dict(env, FA4SIM_BIN=a.cli, FA4SIM_PARITY="baseline")
    run([vpy, "-m", "pytest", os.path.join(a.source, "tests", "python"), "-q", "-rs", "-p",
         "no:cacheprovider"], env=test_env, cwd=tempfile.gettempdir())
    # The wheel on its own, as a user has it: the parity tests against the stored CLI results
    # (tests/python/parity, Note [Stored CLI results] in conftest.py), no CLI binary.
    run([vpy, "-m", "pytest", os.path.join(a.source, "tests", "python"), "-q", "-rs", "-p",
         "no:cacheprovider", "-k", "parity"], env=dict(env, FA4SIM_PARITY="baseline"),
        cwd=tempfile.gettempdir())

    degrees = [int(d) for d in a.exhaustive_degrees.split(",") if d]
    compare_ex2(vpy, env, dict(env, PYTHONPATH=a.native_pythonpath), degrees)
    print("wheel: OK")


if __name__ == "__main__":
    main()
