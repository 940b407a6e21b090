#!/usr/bin/env python3
"""Cross-check fa4sim's float32 -> e4m3 / e5m2 / bf16 / fp16 / e2m1 / e2m3 / e3m2 / e8m0
conversions against ml_dtypes (float8_e4m3fn, float8_e5m2, bfloat16, float4_e2m1fn,
float6_e2m3fn, float6_e3m2fn, float8_e8m0fnu) and numpy (float16) for ALL 2^32 float32 inputs,
and the decoding of every code of the format (fa4sim's `decoded` of each code's exact value).

fa4sim's encodings come from `fa4sim quantize --dtype X --overflow M --all-float32
--binary-out -` (raw little-endian codes, inputs in bit-pattern order), both overflow modes at
once; the library casts the same inputs chunk by chunk. Every differing input is put in a CLASS
(what the input is x what each side made of it), and each class is reported with a count and an
example, not just a total. Known classes (the README "Divergences" lists them):
  * satfinite overflow: fa4sim's satfinite (the GPU's cvt.rn.satfinite) sends overflow and +-inf
    to +-max finite; ml_dtypes / numpy do IEEE / OCP non-saturating overflow (inf, or NaN for
    float8_e4m3fn). Expected in satfinite mode only.
  * NaN sign/payload: fa4sim returns the GPU's canonical NaN (0x7F, 0x7FFF) for every NaN and
    for E4M3 overflow; ml_dtypes keeps the input's sign (and payload bits for 16-bit types).
  * NaN into a format without NaN (e2m1, e2m3, e3m2): fa4sim follows cvt.rn.satfinite (NaN ->
    +max finite); ml_dtypes returns -0 for +NaN and +0 for -NaN (the MX spec leaves it to the
    implementation). These formats have one overflow rule, satfinite, which saturates like
    ml_dtypes: only that mode is run.
e8m0 has no sign: its ieee mode is ml_dtypes' cast exactly (any difference is UNEXPECTED); its
satfinite mode differs where the cast gives NaN for an input E8M0 cannot hold (overflow, +inf:
fa4sim 0xFE; zeros, negatives, -inf: fa4sim 0x00), a known class. ml_dtypes before 0.6.0 has one
bug in that cast (E8M0_BUG below): where it is exactly that bug, its results are repaired before
the comparison and counted, and the count must be the bug's size.
Any other class (a finite in-range input converted differently, overflow under ieee, ...) is
UNEXPECTED: the script prints it and exits 1.

Exit codes: 0 only known classes, 1 unexpected differences, 2 usage, 77 ml_dtypes or numpy
missing (ctest shows a visible skip).
"""
import argparse
import json
import os
import subprocess
import sys
import time

try:
    import numpy as np
    import ml_dtypes
except ImportError as e:  # visible skip for ctest (SKIP_RETURN_CODE 77)
    print(f"check_ml_dtypes: SKIP: {e} (pip install numpy ml_dtypes, or run scripts/setup.sh)", flush=True)
    sys.exit(77)

# name -> (library dtype, code dtype, exponent bits, mantissa bits, has_inf, library name)
FORMATS = {
    "e4m3": (ml_dtypes.float8_e4m3fn, np.uint8, 4, 3, False, "ml_dtypes.float8_e4m3fn"),
    "e5m2": (ml_dtypes.float8_e5m2, np.uint8, 5, 2, True, "ml_dtypes.float8_e5m2"),
    "bf16": (ml_dtypes.bfloat16, np.uint16, 8, 7, True, "ml_dtypes.bfloat16"),
    "fp16": (np.float16, np.uint16, 5, 10, True, "numpy.float16"),
    "e2m1": (ml_dtypes.float4_e2m1fn, np.uint8, 2, 1, False, "ml_dtypes.float4_e2m1fn"),
    "e2m3": (ml_dtypes.float6_e2m3fn, np.uint8, 2, 3, False, "ml_dtypes.float6_e2m3fn"),
    "e3m2": (ml_dtypes.float6_e3m2fn, np.uint8, 3, 2, False, "ml_dtypes.float6_e3m2fn"),
    "e8m0": (ml_dtypes.float8_e8m0fnu, np.uint8, 8, 0, False, "ml_dtypes.float8_e8m0fnu"),
}
MODES = ("satfinite", "ieee")
try:
    import fcntl
    F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)  # Linux's; Python names it from 3.10
except ImportError:  # not a Unix: the pipes keep their size
    fcntl = None
NO_NAN = ("e2m1", "e2m3", "e3m2")  # no inf, no NaN: every code is finite
UNSIGNED = ("e8m0",)


# ml_dtypes before 0.6.0 casts the float32 subnormals 0x00400001 .. 0x005FFFFF, the values in
# (2^-127, 1.5 * 2^-127), to float8_e8m0fnu's 0x01 (2^-126), though 0x00 (2^-127) is the nearer.
# 0.6.0's rewrite of the float8 conversions (jax-ml/ml_dtypes@49471a9) gives 0x00, as fa4sim does.
# Debian 12's numpy 1.24 gets ml_dtypes 0.5.4 from pip (0.6.0 needs numpy 2).
E8M0_BUG = (0x00400001, 0x00600000)  # [lo, hi) of float32 bit patterns


def e8m0_bug_expected(name, version=None):
    """Whether the library's cast to `name` has the e8m0 bug (E8M0_BUG): e8m0 under ml_dtypes < 0.6."""
    major_minor = tuple(int(p) for p in (version or ml_dtypes.__version__).split(".")[:2])
    return name == "e8m0" and major_minor < (0, 6)


def repair_e8m0_bug(name, start, codes, version=None):
    """Put 0x00 where the library's codes of inputs start .. start + len(codes) - 1 are the e8m0
    bug's 0x01 (E8M0_BUG), when the library is expected to have it; any other code in that range
    is left for the comparison. Returns the number of codes repaired."""
    if not e8m0_bug_expected(name, version):
        return 0
    lo, hi = max(E8M0_BUG[0] - start, 0), min(E8M0_BUG[1] - start, codes.size)
    if lo >= hi:
        return 0
    seg = codes[lo:hi]
    bug = seg == 1
    seg[bug] = 0
    return int(np.count_nonzero(bug))


def e8m0_bug_report(name, repaired, version=None):
    """The line that reports the repair and whether it was the whole bug (None when the library is
    not expected to have it)."""
    if not e8m0_bug_expected(name, version):
        return None, True
    size = E8M0_BUG[1] - E8M0_BUG[0]
    whole = repaired == size
    return (f"  ml_dtypes {version or ml_dtypes.__version__}'s known e8m0 bug: {repaired} of the {size} inputs "
            f"0x{E8M0_BUG[0]:08X}..0x{E8M0_BUG[1] - 1:08X} cast to 0x01 where 0x00 is nearest "
            f"(fixed in ml_dtypes 0.6.0), compared as 0x00" + ("" if whole else " [UNEXPECTED: not the whole bug]"),
            whole)


def modes_of(name):
    """The overflow modes a format has (fa4sim refuses ieee for the formats without NaN)."""
    return ("satfinite",) if name in NO_NAN else MODES


RESULT_NAMES = ["finite", "+0", "-0", "+max", "-max", "+inf", "-inf", "+NaN", "-NaN"]
INPUT_NAMES = ["in range", "beyond max finite", "+-inf", "NaN"]


def result_class(codes, ebits, mbits, has_inf, name=""):
    """Class index (into RESULT_NAMES) of each code, vectorised on integers."""
    if name in UNSIGNED:  # 0x00 is the smallest value, 0xFE the largest, 0xFF NaN
        out = np.zeros(codes.shape, dtype=np.int16)
        out[codes == 0xFE] = 3
        out[codes == 0xFF] = 7
        return out
    total = 1 + ebits + mbits
    sign = ((codes >> (total - 1)) & 1).astype(np.int16)
    mag = codes & ((1 << (total - 1)) - 1)
    exp_all, man_all = (1 << ebits) - 1, (1 << mbits) - 1
    if name in NO_NAN:
        is_nan = np.zeros(codes.shape, dtype=bool)
        is_inf = np.zeros(codes.shape, dtype=bool)
        max_code = (exp_all << mbits) | man_all
    elif has_inf:
        is_nan = ((mag >> mbits) == exp_all) & ((mag & man_all) != 0)
        is_inf = mag == (exp_all << mbits)
        max_code = ((exp_all - 1) << mbits) | man_all
    else:
        is_nan = mag == ((exp_all << mbits) | man_all)
        is_inf = np.zeros(codes.shape, dtype=bool)
        max_code = (exp_all << mbits) | (man_all - 1)
    out = np.zeros(codes.shape, dtype=np.int16)
    out[mag == 0] = 1
    out[mag == max_code] = 3
    out[is_inf] = 5
    out[is_nan] = 7
    return out + np.where(out > 0, sign, 0)


def input_class(bits, max_bits):
    """Class index (into INPUT_NAMES) of float32 inputs given as bits; max_bits = bits of the
    format's max finite as a float32 (magnitudes above it are 'beyond')."""
    mag = bits & np.uint32(0x7FFFFFFF)
    out = np.zeros(bits.shape, dtype=np.int16)
    out[mag > max_bits] = 1
    out[mag == 0x7F800000] = 2
    out[mag > 0x7F800000] = 3
    return out


def known(mode, inp, ours, theirs, name=""):
    """Is this class an expected, documented divergence? Returns its name or None."""
    if name in NO_NAN:
        if inp == "NaN" and ours == "+max" and theirs in ("+0", "-0"):
            return "NaN into a format without NaN: cvt.rn.satfinite's +max vs ml_dtypes' -+0"
        return None
    if name in UNSIGNED:
        if mode == "satfinite" and theirs == "+NaN" and ours in ("+max", "finite") and inp != "NaN":
            return "e8m0 satfinite: fa4sim clamps (0xFE above, 0x00 for zero/negative) where the cast gives NaN"
        return None
    if mode == "satfinite" and inp in ("beyond max finite", "+-inf") and ours.endswith("max") and (
            theirs.endswith("inf") or theirs.endswith("NaN")):
        return "satfinite overflow (GPU) vs IEEE/OCP non-saturating overflow (library)"
    if ours == "+NaN" and theirs.endswith("NaN"):
        return "NaN sign/payload: fa4sim's canonical NaN vs the library's sign-keeping NaN"
    return None


def segments(start, chunk, max_bits):
    """[(lo, hi, input class)] of the chunk of inputs start .. start+chunk-1 (bit patterns): the
    chunk is aligned and at most 2^31 long, so it holds one sign and its magnitudes increase; the
    input class (input_class()) changes at most at three cuts, so each slice has one class."""
    mag0 = start & 0x7FFFFFFF
    cuts = [0] + [min(max(c - mag0, 0), chunk) for c in (max_bits + 1, 0x7F800000, 0x7F800001)] + [chunk]
    return [(cuts[k], cuts[k + 1], k) for k in range(4) if cuts[k] < cuts[k + 1]]


class Classifier:
    """Counts the differing inputs of a mode by class (input, ours, theirs), with the first input
    of each class as its example and the first five differing inputs: the same counts and
    examples as taking np.nonzero(ours != theirs) and a bincount of the classes, but a slice
    where many inputs differ (satfinite overflow: about half of all inputs) is counted with
    whole-array masks, one (our code, their code) pair at a time, not indexed element by element."""

    PEEL = 8  # most (ours, theirs) code pairs counted by masks in one slice before indexing the rest

    def __init__(self, rc, chunk):
        self.rc = rc
        self.classes = {}  # (input, ours, theirs) -> [count, example bits, ours, theirs]
        self.diffs = 0
        self.first = []  # the first few differing inputs, (bits, ours, theirs)
        self.ne = np.empty(chunk, dtype=bool)
        self.m = np.empty(chunk, dtype=bool)
        self.m2 = np.empty(chunk, dtype=bool)

    def add(self, inp, o, t, count, ex, oc, tc):
        key = (INPUT_NAMES[inp], RESULT_NAMES[self.rc[o]], RESULT_NAMES[self.rc[t]])
        if key not in self.classes:
            self.classes[key] = [0, ex, oc, tc]
        self.classes[key][0] += count

    def slice(self, ours, theirs, first_bits, inp):
        """One slice (all of input class inp), ours and theirs its codes, first_bits its first input."""
        n = ours.size
        ne = np.not_equal(ours, theirs, out=self.ne[:n])
        left = int(np.count_nonzero(ne))
        if not left:
            return
        self.diffs += left
        if len(self.first) < 5:
            for i in np.flatnonzero(ne)[:5 - len(self.first)]:
                self.first.append((first_bits + int(i), int(ours[i]), int(theirs[i])))
        m, m2 = self.m[:n], self.m2[:n]
        peeled = 0
        # Pairs in the order of their first input: a class's first pair gives its first input.
        while left and peeled < self.PEEL and left * 64 >= n:
            i = int(np.argmax(ne))
            o, t = ours[i], theirs[i]
            np.equal(ours, o, out=m)
            np.equal(theirs, t, out=m2)
            m &= m2  # a subset of ne, as o != t
            c = int(np.count_nonzero(m))
            self.add(inp, int(o), int(t), c, first_bits + i, int(o), int(t))
            np.logical_xor(ne, m, out=ne)
            left -= c
            peeled += 1
        if not left:
            return
        # The rest (few inputs, or many code pairs): index them; every pair left starts after the
        # pairs counted above, so an example found here is still its class's first input.
        bad = np.flatnonzero(ne)
        o, t = ours[bad], theirs[bad]
        key = self.rc[o] * 10 + self.rc[t]
        counts = np.bincount(key, minlength=100)
        for k in np.nonzero(counts)[0]:
            j = int(np.argmax(key == k))
            i = int(bad[j])
            rk = (INPUT_NAMES[inp], RESULT_NAMES[k // 10], RESULT_NAMES[k % 10])
            if rk not in self.classes:
                self.classes[rk] = [0, first_bits + i, int(ours[i]), int(theirs[i])]
            self.classes[rk][0] += int(counts[k])


def check(fa4sim, name, chunk_bits, threads, also=None):
    """Differing inputs of every mode by class (Classifier). also(start, bits, casts): called on
    every chunk with its inputs (as uint32 bits) and the library's cast of them, so that another
    check (tests/python/ml_dtypes_exhaustive.py --cli) compares with the same casts, not its own."""
    lib_dtype, code_dtype, ebits, mbits, has_inf, lib_name = FORMATS[name]
    width = np.dtype(code_dtype).itemsize
    max_finite = float(ml_dtypes.finfo(lib_dtype).max) if name not in UNSIGNED else 2.0 ** 127
    max_bits = int(np.float32(max_finite).view(np.uint32))
    # Class of every code, once: the loop then classifies by table lookup.
    nbits = ebits + mbits + (0 if name in UNSIGNED else 1)
    rc = result_class(np.arange(1 << nbits, dtype=np.uint32), ebits, mbits, has_inf, name)
    modes = modes_of(name)
    procs = {
        m: subprocess.Popen([fa4sim, "quantize", "--dtype", name, "--overflow", m, "--all-float32",
                             "--binary-out", "-", "--threads", str(threads)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
        for m in modes
    }
    for p in procs.values() if fcntl else ():  # 1 MiB pipes, not 64 KiB: fewer reads and writes
        try:
            fcntl.fcntl(p.stdout.fileno(), F_SETPIPE_SZ, 1 << 20)
        except (OSError, AttributeError):  # not Linux, or over /proc/sys/fs/pipe-max-size: 64 KiB
            pass
    chunk = 1 << chunk_bits
    cls = {m: Classifier(rc, chunk) for m in modes}
    base = np.arange(chunk, dtype=np.uint32)
    # One set of buffers for every chunk: no per-chunk allocation (page faults) or copies.
    bits = np.empty(chunk, dtype=np.uint32)
    theirs_lib = np.empty(chunk, dtype=lib_dtype)
    theirs = theirs_lib.view(code_dtype)
    raw = {m: bytearray(chunk * width) for m in modes}
    t0 = time.time()
    repaired = 0
    for start in range(0, 1 << 32, chunk):
        np.add(base, np.uint32(start), out=bits)
        with np.errstate(over="ignore", invalid="ignore"):  # the library's cast, as astype does it
            np.copyto(theirs_lib, bits.view(np.float32), casting="unsafe")
        repaired += repair_e8m0_bug(name, start, theirs)  # before `also`: both checks see the repair
        if also is not None:
            also(start, bits, theirs_lib)
        segs = segments(start, chunk, max_bits)
        for lo, hi, inp in segs:  # the slice's ends are of its class, so is every input between
            assert (input_class(bits[[lo, hi - 1]], max_bits) == inp).all(), (start, lo, hi, inp)
        for m in modes:
            if not read_exact(procs[m].stdout, raw[m]):
                sys.exit(f"check_ml_dtypes: fa4sim ended early for {name} {m}")
            ours = np.frombuffer(raw[m], dtype=code_dtype)
            for lo, hi, inp in segs:
                cls[m].slice(ours[lo:hi], theirs[lo:hi], start + lo, inp)
    for p in procs.values():
        p.stdout.close()
        p.wait()
    classes = {m: cls[m].classes for m in modes}
    diffs = {m: cls[m].diffs for m in modes}
    first = {m: cls[m].first for m in modes}
    return classes, diffs, time.time() - t0, lib_name, first, repaired


def check_decode(fa4sim, name):
    """Every code of the format: the library's value of the code, fed to `fa4sim quantize`, must
    come back as the same code with the same decoded value (NaN codes: both decode to NaN, checked
    on the library side only). Returns the number of mismatching codes."""
    lib_dtype, code_dtype, ebits, mbits, _, lib_name = FORMATS[name]
    nbits = ebits + mbits + (0 if name in UNSIGNED else 1)
    codes = np.arange(1 << nbits, dtype=np.uint8 if nbits <= 8 else np.uint16)
    vals = codes.astype(code_dtype).view(lib_dtype).astype(np.float32)
    fin = ~np.isnan(vals)
    # ieee where the format has it: its inf codes must come back as inf (satfinite would map the
    # library's inf to max finite); the formats without inf and NaN have satfinite alone.
    overflow = "ieee" if "ieee" in modes_of(name) else "satfinite"
    out = subprocess.run([fa4sim, "quantize", "--dtype", name, "--overflow", overflow, "--stdin", "--binary",
                          "--json", "-"],
                         input=vals[fin].tobytes(), capture_output=True, check=True)
    got = json.loads(out.stdout)["results"]["values"]
    bad = 0
    for c, v, g in zip(codes[fin], vals[fin], got):
        dec = float(g["decoded"]) if not isinstance(g["decoded"], str) else float(g["decoded"])
        same_val = np.float32(dec).view(np.uint32) == v.view(np.uint32)
        # +-0 of a signed format: the code is the sign; every other code must come back.
        if int(g["bits"], 16) != int(c) or not same_val:
            if bad < 5:
                print(f"  decode mismatch {name} code 0x{int(c):02X}: library {v!r}, fa4sim {g['bits']} -> {dec!r}")
            bad += 1
    print(f"{name}: decode of all {codes.size} codes vs {lib_name}: {bad} mismatches "
          f"({int((~fin).sum())} NaN codes)", flush=True)
    return bad


def read_exact(stream, buf):
    """Fill buf from stream; False if the stream ends first."""
    view, got = memoryview(buf), 0
    while got < len(buf):
        n = stream.readinto(view[got:])
        if not n:
            return False
        got += n
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fa4sim", default=os.environ.get("FA4SIM_BIN", "build/fa4sim"), help="the fa4sim binary")
    ap.add_argument("--formats", default="e4m3,e5m2,bf16,fp16",
                    help=f"comma-separated subset of {','.join(FORMATS)}")
    ap.add_argument("--chunk-bits", type=int, default=24, help="inputs per chunk = 2^N (default 24)")
    ap.add_argument("--threads", type=int, default=1, help="fa4sim threads per overflow mode (default 1)")
    ap.add_argument("--json", help="write the classes to this JSON file")
    a = ap.parse_args()
    names = [n for n in a.formats.split(",") if n]
    for n in names:
        if n not in FORMATS:
            print(f"check_ml_dtypes: error: unknown format '{n}' (valid: {', '.join(FORMATS)})", file=sys.stderr, flush=True)
            return 2
    if not os.access(a.fa4sim, os.X_OK):
        print(f"check_ml_dtypes: error: fa4sim binary '{a.fa4sim}' not found (--fa4sim or FA4SIM_BIN)", file=sys.stderr, flush=True)
        return 2
    if not 16 <= a.chunk_bits <= 28:
        print("check_ml_dtypes: error: --chunk-bits must be 16..28", file=sys.stderr, flush=True)
        return 2
    return check_formats(a.fa4sim, names, a.chunk_bits, a.threads, a.json)


def check_formats(fa4sim, names, chunk_bits=24, threads=1, json_path=None, api=None):
    """The whole check of `names`, printed; returns the exit code (0, or 1: unexpected classes).
    api (optional): an object with begin(name) -> a per-chunk callback for check() (or None) and
    end(name), which reports that check; each chunk is then cast by the library once for both."""
    print(f"check_ml_dtypes: ml_dtypes {ml_dtypes.__version__}, numpy {np.__version__}, all 2^32 float32 inputs", flush=True)
    unexpected = 0
    report = {"ml_dtypes": ml_dtypes.__version__, "numpy": np.__version__, "formats": {}}
    for n in names:
        also = api.begin(n) if api is not None else None
        classes, diffs, secs, lib_name, first, repaired = check(fa4sim, n, chunk_bits, threads, also)
        report["formats"][n] = {"library": lib_name, "seconds": secs, "modes": {}}
        line, whole = e8m0_bug_report(n, repaired)
        if line:
            print(line, flush=True)
            report["formats"][n]["library_bug_repaired"] = repaired
            unexpected += 0 if whole else 1
        dec_bad = check_decode(fa4sim, n)
        unexpected += dec_bad
        report["formats"][n]["decode_mismatches"] = dec_bad
        for m in modes_of(n):
            print(f"\n{n} ({m}) vs {lib_name}: {diffs[m]} of 2^32 inputs differ ({secs:.0f} s for all modes)", flush=True)
            for b, o, t in first[m]:
                print(f"  first: input 0x{b:08X} ({np.uint32(b).view(np.float32)!r}) -> fa4sim 0x{o:02X}, library 0x{t:02X}")
            rows = []
            for (inp, ours, theirs), (count, ex, oc, tc) in sorted(classes[m].items(), key=lambda kv: -kv[1][0]):
                why = known(m, inp, ours, theirs, n)
                unexpected += 0 if why else count
                w = 2 if FORMATS[n][1] == np.uint8 else 4
                print(f"  {count:>11}  input {inp:<18} fa4sim {ours:<6} library {theirs:<6} "
                      f"e.g. 0x{ex:08X} ({np.uint32(ex).view(np.float32)!r}) -> fa4sim 0x{oc:0{w}X}, library 0x{tc:0{w}X}"
                      f"  [{why or 'UNEXPECTED'}]")
                rows.append({"input": inp, "fa4sim": ours, "library": theirs, "count": count,
                             "example_input_bits": f"0x{ex:08X}", "example_fa4sim": f"0x{oc:0{w}X}",
                             "example_library": f"0x{tc:0{w}X}", "known": why})
            if not rows:
                print("  identical for every input", flush=True)
            report["formats"][n]["modes"][m] = {"differing_inputs": diffs[m], "classes": rows}
        if also is not None:
            api.end(n)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(report, f, indent=2)
    if unexpected:
        print(f"\ncheck_ml_dtypes: FAIL: {unexpected} inputs differ in UNEXPECTED classes", flush=True)
        return 1
    print("\ncheck_ml_dtypes: OK: every difference is a known, documented class "
          "(in-range finite inputs agree bit for bit)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
