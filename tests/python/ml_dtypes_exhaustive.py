"""ctest `python_ml_dtypes_exhaustive` (label slow): the Python API's encode, quantize and decode
against ml_dtypes on every float32 input, typed arrays in and out, for each format both have
(float8_e4m3fn, float8_e5m2, bfloat16):
  * encode(x, fmt, overflow="ieee", typed=True) has the bits of x.astype(ml_dtype);
  * quantize(x, fmt, overflow="ieee") is x.astype(ml_dtype).astype(float32);
  * decode(typed) of every code (an array of the format, no fmt) is typed.astype(float32).
Overflow "ieee" is the libraries' rule (inf, or NaN for float8_e4m3fn); the kernel's satfinite
differs from them by design (scripts/check/check_ml_dtypes.py covers it through the CLI). The one
known difference: NaN's sign and payload (fa4sim gives the GPU's canonical NaN, ml_dtypes keeps
the input's), so NaN results compare as NaN on both sides. Everything else is counted; the
count and the first mismatches are printed per format. Exit 77 (ctest "Skipped") without
ml_dtypes or numpy.
"""
import sys
import time

try:
    import ml_dtypes
    import numpy as np
except ImportError as e:
    print(f"skipped: {e.name} not installed for {sys.executable}")
    sys.exit(77)

import fa4sim

FORMATS = [("e4m3", ml_dtypes.float8_e4m3fn), ("e5m2", ml_dtypes.float8_e5m2),
           ("bf16", ml_dtypes.bfloat16)]
STEP = 1 << 24


def differ(ours, theirs):
    """Indices where two float arrays differ in bits, NaN = NaN whatever its sign and payload."""
    o, t = ours.astype(np.float32), theirs.astype(np.float32)
    both_nan = np.isnan(o) & np.isnan(t)
    return np.nonzero((o.view(np.uint32) != t.view(np.uint32)) & ~both_nan)[0]


def check_format(name, dt):
    t0 = time.time()
    counts = {"encode": 0, "quantize": 0, "decode": 0}
    first = []
    for b in range(0, 1 << 32, STEP):
        x = np.arange(b, b + STEP, dtype=np.uint64).astype(np.uint32).view(np.float32)
        theirs = x.astype(dt)
        enc = fa4sim.encode(x, name, overflow="ieee", typed=True)
        assert enc.dtype == np.dtype(dt)
        for what, idx in (("encode", differ(enc, theirs)),
                          ("quantize", differ(fa4sim.quantize(x, name, overflow="ieee"), theirs))):
            counts[what] += idx.size
            first += [(what, hex(b + int(i))) for i in idx[:max(0, 5 - len(first))]]
    bits = 8 * np.dtype(dt).itemsize
    codes = np.arange(1 << bits, dtype=np.uint64).astype(np.uint8 if bits == 8 else np.uint16)
    typed = codes.view(dt)
    idx = differ(fa4sim.decode(typed), typed)
    counts["decode"] = idx.size
    first += [("decode", hex(int(i))) for i in idx[:5]]
    total = sum(counts.values())
    print(f"{name}: mismatches over all 2^32 float32 inputs: encode {counts['encode']}, quantize "
          f"{counts['quantize']}; over all 2^{bits} codes: decode {counts['decode']} "
          f"[{time.time() - t0:.0f} s]")
    for what, x in first:
        print(f"  first: {what} of {x}")
    return total


def main():
    with np.errstate(all="ignore"):  # NaN -> float8 casts warn; the results are compared
        bad = sum(check_format(n, dt) for n, dt in FORMATS)
    if bad:
        sys.exit(f"FAIL: {bad} mismatches against ml_dtypes")
    print(f"fa4sim {fa4sim.__version__} ({fa4sim.__git_revision__}) == ml_dtypes "
          f"{ml_dtypes.__version__} on every input")


if __name__ == "__main__":
    main()
