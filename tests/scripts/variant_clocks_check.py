"""ctest `variant_clocks_root` (fast): scripts/datagen/variant_clocks.py --effective reads the run
folders under --root, not the repository's: with a root holding only heldout23's timed run and its
Nsight Compute counts (links to data/gpu/schedule/2026-12-03ze and zg), its table counts only
heldout23's variants (12 shapes x 3 kinds at most; every plan's are about 700); --per-shape
prints one row per variant shape of that root alone (no fewer than the table's groups of three
or more count, 36 at most), each with three clock changes (measured, the model alone, with
factors); a missing --root, or a missing --kernel-factors file with --per-shape, exits 2 with the
script's error, and a malformed one exits 2 with fa4sim's. Exit 77 without the stored runs or the
fa4sim binary."""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "datagen", "variant_clocks.py")
RUNS = os.path.join(ROOT, "data", "gpu", "schedule")
FA4SIM = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "fa4sim")
HELD = ("2026-12-03ze", "2026-12-03zg")
if not all(os.path.isdir(os.path.join(RUNS, d)) for d in HELD) or not os.access(FA4SIM, os.X_OK):
    print(f"SKIP: {', '.join(HELD)} under {RUNS} or {FA4SIM} is absent")
    sys.exit(77)


def shapes_counted(root):
    """The sum of the table's shape counts (its fifth column) for --effective over `root`."""
    out = subprocess.run([sys.executable, SCRIPT, "--effective", "--fa4sim", FA4SIM, "--root", root],
                         check=True, capture_output=True, text=True).stdout
    rows = [line.split(" | ") for line in out.splitlines()[1:] if line.count(" | ") == 6]
    return sum(int(r[4]) for r in rows), len(rows)


fails = 0
with tempfile.TemporaryDirectory() as tmp:
    for d in HELD:
        os.symlink(os.path.join(RUNS, d), os.path.join(tmp, d))
    held, held_rows = shapes_counted(tmp)
    print(f"--effective: {held} variant shapes in {held_rows} rows over heldout23's folders alone")
    if not 0 < held <= 36:
        print("FAIL: --root was not the folder read (expected 1..36 shapes)")
        fails += 1
    out = subprocess.run([sys.executable, SCRIPT, "--effective", "--per-shape", "--fa4sim", FA4SIM, "--root", tmp],
                         check=True, capture_output=True, text=True).stdout
    per = [line.split(" | ") for line in out.splitlines() if line.startswith("heldout23 | ")]
    print(f"--per-shape: {len(per)} rows over heldout23's folders")
    if not held <= len(per) <= 36:
        print(f"FAIL: --per-shape printed {len(per)} rows (the table counted {held} shapes; at most 36)")
        fails += 1
    for row in per:
        clocks = re.findall(r"[-+]\d+\.\d %", row[-1])
        if len(clocks) != 3:
            print(f"FAIL: a row without three clock changes: {row}")
            fails += 1
    r = subprocess.run([sys.executable, SCRIPT, "--effective", "--per-shape", "--fa4sim", FA4SIM, "--root", tmp,
                        "--kernel-factors", os.path.join(tmp, "missing.json")], capture_output=True, text=True)
    if r.returncode != 2 or "variant_clocks: error: no kernel-factors file" not in r.stderr:
        print(f"FAIL: a missing --kernel-factors gave exit {r.returncode}, stderr {r.stderr!r}")
        fails += 1
    bad = os.path.join(tmp, "malformed.json")
    with open(bad, "w") as f:
        f.write('{"schema": "not-kernel-factors"}')
    r = subprocess.run([sys.executable, SCRIPT, "--effective", "--per-shape", "--fa4sim", FA4SIM, "--root", tmp,
                        "--kernel-factors", bad], capture_output=True, text=True)
    if r.returncode != 2 or "fa4sim: error: kernel factors file" not in r.stderr:
        print(f"FAIL: a malformed --kernel-factors gave exit {r.returncode}, stderr {r.stderr!r}")
        fails += 1
    r = subprocess.run([sys.executable, SCRIPT, "--root", os.path.join(tmp, "missing"), "--effective"],
                       capture_output=True, text=True)
    if r.returncode != 2 or not re.search(r"variant_clocks: error: no folder", r.stderr):
        print(f"FAIL: a missing --root gave exit {r.returncode}, stderr {r.stderr!r}")
        fails += 1
sys.exit(1 if fails else 0)
