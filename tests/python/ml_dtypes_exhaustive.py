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
STEP = 1 << 20  # inputs per chunk: its arrays stay in cache


def differ(ours, theirs):
    """Indices where two float arrays differ in bits, NaN = NaN whatever its sign and payload."""
    o, t = ours.astype(np.float32), theirs.astype(np.float32)
    both_nan = np.isnan(o) & np.isnan(t)
    return np.nonzero((o.view(np.uint32) != t.view(np.uint32)) & ~both_nan)[0]


def check_format(name, dt):
    t0 = time.time()
    counts = {"encode": 0, "quantize": 0, "decode": 0}
    first = []
    bits = 8 * np.dtype(dt).itemsize
    code_dtype = np.uint8 if bits == 8 else np.uint16
    codes = np.arange(1 << bits, dtype=np.uint64).astype(code_dtype)
    typed = codes.view(dt)
    # Per code, once: the library's float32 value (as bits) and whether it is NaN. A chunk's
    # library results then compare by lookup, the same values as converting each element.
    lib_f32 = typed.astype(np.float32)
    lib_bits, lib_nan = lib_f32.view(np.uint32), np.isnan(lib_f32)
    # Buffers reused by every chunk (STEP inputs): no per-chunk allocation and page faults.
    base = np.arange(STEP, dtype=np.uint32)
    xb = np.empty(STEP, dtype=np.uint32)
    x = xb.view(np.float32)
    theirs_typed = np.empty(STEP, dtype=dt)
    theirs = theirs_typed.view(code_dtype)
    q = np.empty(STEP, dtype=np.float32)
    ne, ok = np.empty(STEP, dtype=bool), np.empty(STEP, dtype=bool)
    for b in range(0, 1 << 32, STEP):
        np.add(base, np.uint32(b), out=xb)
        np.copyto(theirs_typed, x, casting="unsafe")  # x.astype(dt), into the buffer
        enc = fa4sim.encode(x, name, overflow="ieee", typed=True)
        assert enc.dtype == np.dtype(dt)
        # encode: the same code, or a NaN code on both sides.
        enc_codes = enc.view(code_dtype)
        np.not_equal(enc_codes, theirs, out=ne)
        bad_enc = ()
        if ne.any():
            np.logical_and(lib_nan[enc_codes], lib_nan[theirs], out=ok)
            bad_enc = np.nonzero(ne & ~ok)[0]
        # quantize: the float32 bits of the library's code, NaN = NaN.
        fa4sim.quantize(x, name, overflow="ieee", out=q)
        np.not_equal(q.view(np.uint32), lib_bits[theirs], out=ne)
        if ne.any():
            np.isnan(q, out=ok)
            ok &= lib_nan[theirs]
            bad_q = np.nonzero(ne & ~ok)[0]
        else:
            bad_q = ()
        for what, idx in (("encode", bad_enc), ("quantize", bad_q)):
            counts[what] += len(idx)
            first += [(what, hex(b + int(i))) for i in idx[:max(0, 5 - len(first))]]
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
