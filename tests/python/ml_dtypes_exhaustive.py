"""ctest `ml_dtypes_crosscheck` and `ml_dtypes_crosscheck_mx` (label slow, with `--cli`): the Python
API's encode, quantize and decode against ml_dtypes on every float32 input, typed arrays in and
out, for each format both have: float8_e4m3fn, float8_e5m2, bfloat16 (`--formats e4m3,e5m2,bf16`)
and the MX element formats float4_e2m1fn, float6_e2m3fn, float6_e3m2fn, float8_e8m0fnu
(`--formats e2m1,e2m3,e3m2,e8m0`). With `--cli FA4SIM`, the same pass also runs
scripts/check/check_ml_dtypes.py's check of the CLI (`fa4sim quantize --all-float32`, both overflow
modes, its classes and decode check): every chunk of 2^20 inputs is cast by ml_dtypes once, and
the one cast is compared with both (ml_dtypes' casts are most of either check's time). Each side
prints its report as it does alone; either failing fails the run. The API's comparisons:
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
    NaN input must show exactly this, and nothing else may differ;
  * ml_dtypes < 0.6's e8m0 bug (check_ml_dtypes.E8M0_BUG): its casts are repaired where they are
    exactly that bug, and the count must be the bug's size.
Everything else is a mismatch; the count and the first mismatches are printed per format. Exit 77
(ctest "Skipped") without ml_dtypes or numpy.
"""
import argparse
import sys
import time
from pathlib import Path

try:
    import ml_dtypes
    import numpy as np
except ImportError as e:
    print(f"skipped: {e.name} not installed for {sys.executable}")
    sys.exit(77)

import fa4sim

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "check"))
import check_ml_dtypes  # noqa: E402 (after the skip above)

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


def check_chunk(name, overflow, t, x, xb, theirs_typed, bufs):
    """(bad encode indices, bad quantize indices, known NaN-class count) of one chunk; theirs_typed
    holds x.astype(dt). Only the differing elements are indexed; the NaN codes are found by masks
    (Tables.nan_mask)."""
    enc, q, lib_q, ne, ok, bad, tnan, tmp = bufs
    theirs = theirs_typed.view(t.code_dtype)
    # threads=1: a chunk (2^20) is 16 of the module's parallel chunks, and handing them to the
    # thread pool cost more than it saved on 2 cores (CI runs two of these checks side by side);
    # the results do not depend on the thread count.
    fa4sim.encode(x, name, overflow=overflow, typed=True, out=enc, threads=1)
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
    fa4sim.quantize(x, name, overflow=overflow, out=q, threads=1)
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


class FormatCheck:
    """One format's check, chunk by chunk (chunk()), then the decode of every code and the printed
    result (end(), which returns the number of mismatches)."""

    def __init__(self, name, step):
        self.t0 = time.time()
        self.name = name
        self.dt, self.overflow, self.has_nan = FORMATS[name]
        self.t = Tables(self.dt, self.has_nan)
        self.counts = {"encode": 0, "quantize": 0, "decode": 0}
        self.known, self.first = 0, []
        # Buffers reused by every chunk (step inputs): no per-chunk allocation and page faults.
        self.bufs = (np.empty(step, dtype=self.dt), np.empty(step, dtype=np.float32),
                     np.empty(step, dtype=np.float32), *(np.empty(step, dtype=bool) for _ in range(4)),
                     np.empty(step, dtype=self.t.code_dtype))
        # typed=True gives an array of the format (chunk() writes into one with out=).
        x = np.arange(16, dtype=np.float32)
        assert fa4sim.encode(x, name, overflow=self.overflow, typed=True).dtype == self.dt

    def chunk(self, b, xb, theirs_typed):
        """The inputs b .. b + len(xb) - 1 (xb: their bits), theirs_typed = their x.astype(dt)."""
        bad_enc, bad_q, k = check_chunk(self.name, self.overflow, self.t, xb.view(np.float32), xb,
                                        theirs_typed, self.bufs)
        self.known += k
        for what, idx in (("encode", bad_enc), ("quantize", bad_q)):
            self.counts[what] += len(idx)
            self.first += [(what, hex(b + int(i))) for i in idx[:max(0, 5 - len(self.first))]]

    def end(self):
        name, t, counts, first = self.name, self.t, self.counts, self.first
        idx = differ(fa4sim.decode(t.typed), t.typed)
        counts["decode"] = idx.size
        first += [("decode", hex(int(i))) for i in idx[:5]]
        total = sum(counts.values())
        if not self.has_nan and self.known != N_NAN:  # every NaN input, and nothing else, is the known class
            print(f"  {name}: the NaN-input class holds {self.known} inputs, not the {N_NAN} NaNs")
            total += 1
        print(f"{name} (overflow {self.overflow}): mismatches over all 2^32 float32 inputs: encode "
              f"{counts['encode']}, quantize {counts['quantize']}; over all 2^{t.bits} codes: decode "
              f"{counts['decode']}" + ("" if self.has_nan else f"; NaN inputs as documented: {self.known}")
              + f" [{time.time() - self.t0:.0f} s]", flush=True)
        for what, xv in first:
            print(f"  first: {what} of {xv}")
        return total


def check_format(name):
    """The format alone: the library's casts made here, chunk by chunk."""
    f = FormatCheck(name, STEP)
    base = np.arange(STEP, dtype=np.uint32)
    xb = np.empty(STEP, dtype=np.uint32)
    theirs_typed = np.empty(STEP, dtype=f.dt)
    repaired = 0
    for b in range(0, 1 << 32, STEP):
        np.add(base, np.uint32(b), out=xb)
        np.copyto(theirs_typed, xb.view(np.float32), casting="unsafe")  # x.astype(dt), into the buffer
        repaired += check_ml_dtypes.repair_e8m0_bug(name, b, theirs_typed.view(f.t.code_dtype))
        f.chunk(b, xb, theirs_typed)
    line, whole = check_ml_dtypes.e8m0_bug_report(name, repaired)
    if line:
        print(line, flush=True)
    return f.end() + (0 if whole else 1)


class WithCli:
    """check_ml_dtypes.check_formats' api: this module's check of each format on the casts that
    the CLI's check makes of the same chunks (check_ml_dtypes.check's `also`)."""

    def __init__(self, step):
        self.step, self.bad, self.current = step, 0, None

    def begin(self, name):
        if name not in FORMATS:
            return None
        self.current = FormatCheck(name, self.step)
        return self.current.chunk

    def end(self, name):
        self.bad += self.current.end()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--formats", default="e4m3,e5m2,bf16",
                    help=f"comma list of {', '.join(FORMATS)} (default e4m3,e5m2,bf16)")
    ap.add_argument("--cli", metavar="FA4SIM",
                    help="also run scripts/check/check_ml_dtypes.py's check of this fa4sim binary, "
                         "on the same ml_dtypes casts (each chunk cast once for both checks)")
    a = ap.parse_args()
    names = a.formats.split(",")
    for n in names:
        if n not in FORMATS:
            ap.error(f"--formats: unknown format '{n}' (one of {', '.join(FORMATS)})")
    cli_rc = 0
    with np.errstate(all="ignore"):  # NaN -> float8 casts warn; the results are compared
        if a.cli:  # (the CLI's check repairs the library's e8m0 bug for both checks, and counts it)
            api = WithCli(STEP)
            cli_rc = check_ml_dtypes.check_formats(a.cli, names, chunk_bits=STEP.bit_length() - 1,
                                                   api=api)
            bad = api.bad
        else:
            bad = sum(check_format(n) for n in names)
    if bad:
        sys.exit(f"FAIL: {bad} mismatches against ml_dtypes" + (" (and the CLI's check failed)" if cli_rc else ""))
    if cli_rc:
        sys.exit(cli_rc)
    print(f"fa4sim {fa4sim.__version__} ({fa4sim.__git_revision__}) == ml_dtypes "
          f"{ml_dtypes.__version__} on every input of {', '.join(names)}")


if __name__ == "__main__":
    main()
