"""ctest `python_ml_dtypes_exhaustive` and `python_ml_dtypes_exhaustive_mx` (label slow): the Python
API's encode, quantize and decode against ml_dtypes on every float32 input, typed arrays in and
out, for each format both have: float8_e4m3fn, float8_e5m2, bfloat16 (`--formats e4m3,e5m2,bf16`)
and the MX element formats float4_e2m1fn, float6_e2m3fn, float6_e3m2fn, float8_e8m0fnu
(`--formats e2m1,e2m3,e3m2,e8m0`):
  * encode(x, fmt, overflow=M, typed=True) has the bits of x.astype(ml_dtype);
  * quantize(x, fmt, overflow=M) is x.astype(ml_dtype).astype(float32);
  * decode(typed) of every code (an array of the format, no fmt) is typed.astype(float32).
M is the libraries' overflow rule where fa4sim has it: "ieee" (inf, or NaN for float8_e4m3fn and
float8_e8m0fnu); the formats without inf and NaN (e2m1, e2m3, e3m2) have one rule, "satfinite",
which saturates as ml_dtypes does. The kernel's satfinite differs from the libraries by design for
the others (scripts/check/check_ml_dtypes.py covers it through the CLI).
Known differences, each checked to be exactly what it is said to be and counted apart:
  * NaN's sign and payload (fa4sim gives the GPU's canonical NaN, ml_dtypes keeps the input's):
    NaN results compare as NaN on both sides;
  * a NaN input to a format without NaN (e2m1, e2m3, e3m2): fa4sim follows cvt.rn.satfinite
    (+max finite), ml_dtypes gives -0 for +NaN and +0 for -NaN (docs/divergences.md); every
    NaN input must show exactly this, and nothing else may differ.
Everything else is a mismatch; the count and the first mismatches are printed per format. Exit 77
(ctest "Skipped") without ml_dtypes or numpy.
"""
import argparse
import sys
import time

try:
    import ml_dtypes
    import numpy as np
except ImportError as e:
    print(f"skipped: {e.name} not installed for {sys.executable}")
    sys.exit(77)

import fa4sim

# name -> (ml_dtypes type, overflow rule to compare under, has NaN)
FORMATS = {"e4m3": (ml_dtypes.float8_e4m3fn, "ieee", True),
           "e5m2": (ml_dtypes.float8_e5m2, "ieee", True),
           "bf16": (ml_dtypes.bfloat16, "ieee", True),
           "e2m1": (ml_dtypes.float4_e2m1fn, "satfinite", False),
           "e2m3": (ml_dtypes.float6_e2m3fn, "satfinite", False),
           "e3m2": (ml_dtypes.float6_e3m2fn, "satfinite", False),
           "e8m0": (ml_dtypes.float8_e8m0fnu, "ieee", True)}
STEP = 1 << 20  # inputs per chunk: its arrays stay in cache
N_NAN = 2 * ((1 << 23) - 1)  # float32 NaN bit patterns


def differ(ours, theirs):
    """Indices where two float arrays differ in bits, NaN = NaN whatever its sign and payload."""
    o, t = ours.astype(np.float32), theirs.astype(np.float32)
    both_nan = np.isnan(o) & np.isnan(t)
    return np.nonzero((o.view(np.uint32) != t.view(np.uint32)) & ~both_nan)[0]


class Tables:
    """Per code of the format, once: the library's float32 value (as bits) and whether it is NaN;
    a chunk's library results then compare by lookup (the same values as converting each
    element). For a format without NaN: the codes a NaN input may get on each side."""

    def __init__(self, dt, has_nan):
        self.bits = ml_dtypes.finfo(dt).bits
        self.code_dtype = np.uint8 if np.dtype(dt).itemsize == 1 else np.uint16
        codes = np.arange(1 << self.bits, dtype=np.uint64).astype(self.code_dtype)
        self.typed = codes.view(dt)
        f32 = self.typed.astype(np.float32)
        self.f32_bits, self.nan = f32.view(np.uint32), np.isnan(f32)
        self.has_nan = has_nan
        # The NaN codes as a mask test, without a table lookup per element: every code whose
        # magnitude bits (all bits for an unsigned format) are at least nan_lo, checked here
        # against the table for every code.
        signed = bool(np.signbit(f32[1 << (self.bits - 1)]))  # the top code is -0 or a value
        self.mag_mask = self.code_dtype((1 << (self.bits - 1 if signed else self.bits)) - 1)
        if has_nan:
            self.nan_lo = self.code_dtype(int((codes & self.mag_mask)[self.nan].min()))
            assert (self.nan_mask(codes) == self.nan).all()
        if not has_nan:  # +max finite (ours); +-0 (theirs): the sign bit is the top bit
            top = np.uint32(1 << (self.bits - 1))
            self.max_code = int(np.argmax(np.where(f32 < np.inf, f32, -np.inf)))
            self.zero_codes = (0, int(top))


    def nan_mask(self, codes, out=None, tmp=None):
        """Whether each code is a NaN code of the format (has_nan formats)."""
        tmp = np.bitwise_and(codes, self.mag_mask, out=tmp)
        return np.greater_equal(tmp, self.nan_lo, out=out)


def nan_known(x_bits, enc_codes, theirs, t):
    """Mask of the inputs that are the documented NaN-into-a-format-without-NaN class."""
    is_nan = (x_bits & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    neg = (x_bits >> np.uint32(31)).astype(bool)
    want_theirs = np.where(neg, t.zero_codes[0], t.zero_codes[1])  # +NaN -> -0, -NaN -> +0
    return is_nan & (enc_codes == t.max_code) & (theirs == want_theirs)


def check_chunk(name, overflow, t, x, xb, bufs):
    """(bad encode indices, bad quantize indices, known NaN-class count) of one chunk. Only the
    differing elements are indexed; the NaN codes are found by masks (Tables.nan_mask)."""
    theirs_typed, enc, q, lib_q, ne, ok, bad, tnan, tmp = bufs
    theirs = theirs_typed.view(t.code_dtype)
    np.copyto(theirs_typed, x, casting="unsafe")  # x.astype(dt), into the buffer
    fa4sim.encode(x, name, overflow=overflow, typed=True, out=enc)
    enc_codes = enc.view(t.code_dtype)
    none = np.array([], dtype=np.intp)
    have_tnan = False
    # encode: the same code, or a NaN code on both sides.
    np.not_equal(enc_codes, theirs, out=ne)
    bad_enc, known = none, 0
    if ne.any():
        if t.has_nan:
            t.nan_mask(theirs, out=tnan, tmp=tmp)
            have_tnan = True
            t.nan_mask(enc_codes, out=ok, tmp=tmp)
            ok &= tnan
        else:
            ok[:] = nan_known(xb, enc_codes, theirs, t)
            known = int(np.count_nonzero(ne & ok))
        np.greater(ne, ok, out=bad)  # ne and not ok
        if bad.any():
            bad_enc = np.flatnonzero(bad)
    # quantize: the float32 bits of the library's code (its own cast to float32, as
    # Tables.f32_bits holds it per code), NaN = NaN; the known class as encode's (its float32
    # value is +max on our side, +-0 on the library's).
    fa4sim.quantize(x, name, overflow=overflow, out=q)
    np.copyto(lib_q, theirs_typed, casting="unsafe")
    np.not_equal(q.view(np.uint32), lib_q.view(np.uint32), out=ne)
    bad_q = none
    if ne.any():
        if t.has_nan:
            np.isnan(q, out=ok)
            if not have_tnan:
                t.nan_mask(theirs, out=tnan, tmp=tmp)
            ok &= tnan
        else:
            ok[:] = nan_known(xb, enc_codes, theirs, t) & (q.view(np.uint32) == t.f32_bits[t.max_code])
        np.greater(ne, ok, out=bad)
        if bad.any():
            bad_q = np.flatnonzero(bad)
    return bad_enc, bad_q, known


def check_format(name):
    t0 = time.time()
    dt, overflow, has_nan = FORMATS[name]
    t = Tables(dt, has_nan)
    counts = {"encode": 0, "quantize": 0, "decode": 0}
    known, first = 0, []
    # Buffers reused by every chunk (STEP inputs): no per-chunk allocation and page faults.
    base = np.arange(STEP, dtype=np.uint32)
    xb = np.empty(STEP, dtype=np.uint32)
    x = xb.view(np.float32)
    bufs = (np.empty(STEP, dtype=dt), np.empty(STEP, dtype=dt), np.empty(STEP, dtype=np.float32),
            np.empty(STEP, dtype=np.float32),
            *(np.empty(STEP, dtype=bool) for _ in range(4)), np.empty(STEP, dtype=t.code_dtype))
    # typed=True gives an array of the format (the loop below writes into one with out=).
    assert fa4sim.encode(x[:16], name, overflow=overflow, typed=True).dtype == dt
    for b in range(0, 1 << 32, STEP):
        np.add(base, np.uint32(b), out=xb)
        bad_enc, bad_q, k = check_chunk(name, overflow, t, x, xb, bufs)
        known += k
        for what, idx in (("encode", bad_enc), ("quantize", bad_q)):
            counts[what] += len(idx)
            first += [(what, hex(b + int(i))) for i in idx[:max(0, 5 - len(first))]]
    idx = differ(fa4sim.decode(t.typed), t.typed)
    counts["decode"] = idx.size
    first += [("decode", hex(int(i))) for i in idx[:5]]
    total = sum(counts.values())
    if not has_nan and known != N_NAN:  # every NaN input, and nothing else, is the known class
        print(f"  {name}: the NaN-input class holds {known} inputs, not the {N_NAN} NaNs")
        total += 1
    print(f"{name} (overflow {overflow}): mismatches over all 2^32 float32 inputs: encode "
          f"{counts['encode']}, quantize {counts['quantize']}; over all 2^{t.bits} codes: decode "
          f"{counts['decode']}" + ("" if has_nan else f"; NaN inputs as documented: {known}")
          + f" [{time.time() - t0:.0f} s]", flush=True)
    for what, xv in first:
        print(f"  first: {what} of {xv}")
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--formats", default="e4m3,e5m2,bf16",
                    help=f"comma list of {', '.join(FORMATS)} (default e4m3,e5m2,bf16)")
    a = ap.parse_args()
    names = a.formats.split(",")
    for n in names:
        if n not in FORMATS:
            ap.error(f"--formats: unknown format '{n}' (one of {', '.join(FORMATS)})")
    with np.errstate(all="ignore"):  # NaN -> float8 casts warn; the results are compared
        bad = sum(check_format(n) for n in names)
    if bad:
        sys.exit(f"FAIL: {bad} mismatches against ml_dtypes")
    print(f"fa4sim {fa4sim.__version__} ({fa4sim.__git_revision__}) == ml_dtypes "
          f"{ml_dtypes.__version__} on every input of {', '.join(names)}")


if __name__ == "__main__":
    main()
