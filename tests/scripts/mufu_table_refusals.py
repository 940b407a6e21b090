#!/usr/bin/env python3
"""mufu_table_refusals.py: scripts/datagen/mufu_table.py refuses what its tables cannot hold.

Feeds the builder's ex2 and lg2 stages doctored copies of the committed GPU data (in a temporary
directory) and checks that each is refused with exit 2 and a message naming the problem:
  - a positive ex2 delta of +2 (the positive code holds -1..+1);
  - a negative ex2 delta moved by one ulp (fits the code, but the rebuilt table's bit sum is not
    the GPU's);
  - an lg2 y0 delta moved by one ulp (the rebuilt sum is not the GPU's);
and that the committed sources themselves pass both checks. Exit 0 on success, 1 on a failure,
77 (a visible skip) without NumPy. Run from anywhere: python3 tests/scripts/mufu_table_refusals.py
"""
import contextlib
import gzip
import io
import os
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed")
    sys.exit(77)
sys.path.insert(0, os.path.join(ROOT, "scripts", "datagen"))
os.chdir(ROOT)
import mufu_table as mt  # noqa: E402

FAILURES = []


def refused(fn, *args):
    """The message fn(*args) exits 2 with, or None if it returns."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            fn(*args)
        except SystemExit as e:
            if e.code != 2:
                FAILURES.append(f"{fn.__name__}: exit {e.code}, not 2")
            return err.getvalue()
    return None


def doctored(src, dtype, index, change, tmp):
    d = np.frombuffer(gzip.decompress(open(src, "rb").read()), dtype).copy()
    d[index] = change(d[index])
    path = os.path.join(tmp, os.path.basename(src))
    with open(path, "wb") as f:
        f.write(gzip.compress(d.tobytes(), 1))
    return path


def expect(name, msg, needle):
    if msg is None or needle not in msg:
        FAILURES.append(f"{name}: expected a refusal containing {needle!r}, got {msg!r}")
    else:
        print(f"ok   {name}: {msg.strip()}")


def main():
    sums = mt.hardware_sums()
    with tempfile.TemporaryDirectory() as tmp:
        bad = doctored(mt.EX2_POS_SRC, np.int8, 5, lambda v: 2, tmp)
        expect("ex2 positive +2", refused(mt.ex2_part, "positive", bad, 1, False, sums["ex2_pos"]),
               "code holds -1..+1")
        bad = doctored(mt.EX2_NEG_SRC, np.int8, 7, lambda v: v - 1 if v > -2 else v + 1, tmp)
        expect("ex2 negative off by one", refused(mt.ex2_part, "negative", bad, 2, True,
                                                  sums["ex2_neg"]), "measured on the GPU")
        bad = doctored(mt.LG2_Y0_SRC, np.int32, 123456, lambda v: v + 1, tmp)
        expect("lg2 y0 off by one", refused(mt.lg2_part, "y0", bad, False, sums["lg2_y0"]),
               "measured on the GPU")
    if refused(mt.ex2_part, "negative", mt.EX2_NEG_SRC, 2, True, sums["ex2_neg"]) is not None:
        FAILURES.append("the committed negative ex2 table is refused")
    if FAILURES:
        print("\n".join("FAIL " + f for f in FAILURES))
        return 1
    print("mufu_table.py: every doctored table refused, the committed one accepted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
