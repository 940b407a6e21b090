"""ctest `check_ml_dtypes_repair` (fast): scripts/check/check_ml_dtypes.py's repair of ml_dtypes
< 0.6's e8m0 bug (E8M0_BUG) does what docs/divergences.md says, whatever ml_dtypes is installed
(the version is passed in): only e8m0 under a version before 0.6, only the bug's range, only the
bug's 0x01, counted across chunk edges; and a partial count is reported as unexpected. The
exhaustive checks (ml_dtypes_crosscheck_mx) run the repair on the real casts. Exit 77 without
numpy or ml_dtypes (the script's own skip)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "check"))
import check_ml_dtypes as c  # noqa: E402 (exits 77 without numpy / ml_dtypes)
import numpy as np  # noqa: E402

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")


lo, hi = c.E8M0_BUG
expect((lo, hi) == (0x00400001, 0x00600000), "the bug's range is 0x00400001 .. 0x005FFFFF")
for v, want in (("0.5.4", True), ("0.4.0", True), ("0.6.0", False), ("0.7.0", False), ("1.0", False)):
    expect(c.e8m0_bug_expected("e8m0", v) == want, f"e8m0 under ml_dtypes {v}: bug expected {want}")
expect(not c.e8m0_bug_expected("e4m3", "0.5.4"), "only e8m0 has the bug")

# Chunks of 2^20 across the whole range: every code in it 0x01, as the bug casts them, and the
# codes just outside it 0x01 too (they must stay).
step, total = 1 << 20, 0
for start in range(0x00300000, 0x00700000, step):
    codes = np.ones(step, dtype=np.uint8)
    n = c.repair_e8m0_bug("e8m0", start, codes, "0.5.4")
    total += n
    x = np.arange(start, start + step)
    inside = (x >= lo) & (x < hi)
    expect(n == int(inside.sum()), f"chunk 0x{start:08X}: {n} repaired, {int(inside.sum())} in range")
    expect((codes[inside] == 0).all() and (codes[~inside] == 1).all(),
           f"chunk 0x{start:08X}: 0x00 inside the range, 0x01 outside")
expect(total == hi - lo, f"the whole range repaired once: {total}")
line, whole = c.e8m0_bug_report("e8m0", total, "0.5.4")
expect(whole and "2097151 of the 2097151" in line, f"whole report: {line}")
_, whole = c.e8m0_bug_report("e8m0", total - 1, "0.5.4")
expect(not whole, "one input short of the bug is reported as unexpected")

# A code other than the bug's 0x01 in the range is left for the comparison.
codes = np.full(step, 2, dtype=np.uint8)
expect(c.repair_e8m0_bug("e8m0", 0x00400000, codes, "0.5.4") == 0 and (codes == 2).all(),
       "codes other than 0x01 are not touched")
# No repair where the bug is not expected.
for name, v in (("e8m0", "0.6.0"), ("e4m3", "0.5.4")):
    codes = np.ones(step, dtype=np.uint8)
    expect(c.repair_e8m0_bug(name, 0x00400000, codes, v) == 0 and (codes == 1).all(),
           f"{name} under {v}: nothing repaired")
    expect(c.e8m0_bug_report(name, 0, v) == (None, True), f"{name} under {v}: nothing reported")

print(f"check_ml_dtypes_repair: {'FAIL' if failures else 'OK'} ({len(failures)} failures)")
sys.exit(1 if failures else 0)
