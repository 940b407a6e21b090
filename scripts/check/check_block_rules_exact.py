#!/usr/bin/env python3
"""A second, independent check of fa4sim's block scale rules: each rule as its definition says it
in exact arithmetic, against `fa4sim block` on the same blocks. Where fa4sim (= torchao's float32
arithmetic) and the exact definition differ, the script counts the blocks and shows examples:
that is a property of the rule's float32 implementation, not a bug, and the numbers say how often.

Exact definitions (amax = max |x| of a block, float32, so exact in float64; emax = exponent of the
element format's largest power of two; max_elem its max finite):
  floor:   s = floor(log2 amax) - emax                       (OCP MX v1.0 section 6.3)
  ceil:    s = ceil(log2 amax) - emax
  even:    amax rounded to the element's mantissa width, ties away from zero (torchao's
           half-ulp add), then floor
  rceil:   s = ceil(log2(amax / max_elem)) = the least k with max_elem 2^k >= amax
           (cuBLAS / cuDNN: round_up(amax / max_elem) to a power of two)
  nearest: scale = E4M3 round-to-nearest-even of clamp(amax / 6, 2^-6, 448) (NVFP4), and each
           element's E2M1 code = round-to-nearest-even of clamp(x / scale, -6, 6)
Every s is clamped to E8M0's [-127, 127]. The float64 arithmetic used here is exact for these
steps (powers of two, comparisons of float32 values with max_elem 2^k, whose significands have at
most 4 bits), except x / scale and amax / 6: those are rounded once to float64 and then to a
format of at most 4 significant bits, which is the correctly rounded result unless the float64
quotient is an exact tie, which it then truly is (a ratio of a 24-bit and a 4-bit number that
is within 2^-53 of a tie is the tie). --fractions N re-checks N blocks with Python's fractions.

Exit codes: 0 when floor, ceil and even agree everywhere (rceil and nearest report their
counts), 1 otherwise, 2 usage, 77 numpy / ml_dtypes missing.
"""
import argparse
import os
import subprocess
import sys
import tempfile
from fractions import Fraction

try:
    import numpy as np
    import ml_dtypes
except ImportError as e:
    print(f"check_block_rules_exact: SKIP: {e}", flush=True)
    sys.exit(77)

ELEMS = {"e4m3": (3, 448.0, 8), "e5m2": (2, 57344.0, 15), "e2m3": (3, 7.5, 2),
         "e3m2": (2, 28.0, 4), "e2m1": (1, 6.0, 2)}


def exact_mx_scale(amax, elem, rule):
    """E8M0 scale codes (int) of float64 amax > 0 finite, by the exact definitions."""
    mbits, max_elem, emax = ELEMS[elem]
    _, e = np.frexp(amax)  # amax = m 2^e, m in [0.5, 1): floor(log2 amax) = e - 1
    fl = e.astype(np.int64) - 1
    if rule == "floor":
        s = fl - emax
    elif rule == "ceil":
        s = fl + (amax > np.ldexp(1.0, fl)).astype(np.int64) - emax
    elif rule == "even":
        m = amax / np.ldexp(1.0, fl)  # [1, 2), exact
        r = np.floor(m * 2.0 ** mbits + 0.5) / 2.0 ** mbits
        s = fl + (r >= 2.0).astype(np.int64) - emax
    else:  # rceil: least k with max_elem 2^k >= amax
        k = np.ceil(np.log2(amax / max_elem)).astype(np.int64) - 1
        for _ in range(3):  # correct the float64 log2 estimate by exact comparisons
            k = np.where(np.ldexp(max_elem, k) >= amax, k, k + 1)
        k = np.where(np.ldexp(max_elem, k - 1) >= amax, k - 1, k)
        s = k
    return np.clip(s, -127, 127) + 127


def fa4sim_block(fa4sim, tmp, x, args):
    inp, c, s = (os.path.join(tmp, n) for n in ("in.npy", "c.npy", "s.npy"))
    np.save(inp, x)
    subprocess.run([fa4sim, "block", "--in", inp, "--codes-out", c, "--scales-out", s] + args,
                   check=True, stdout=subprocess.DEVNULL)
    return np.load(s).reshape(-1), np.load(c)


def blocks(rng, n, bs, max_elem):
    """Finite blocks with amax > 0: random, and amax near max_elem 2^k and near powers of two."""
    x = (rng.standard_normal((n, bs)) * 0.3).astype(np.float32)
    x *= np.exp2(rng.integers(-30, 31, size=(n, 1))).astype(np.float32)
    rows, col = np.arange(n), rng.integers(0, bs, size=n)
    k = np.exp2(rng.integers(-40, 41, size=n))
    base = np.where(rng.integers(0, 2, size=n) == 1, max_elem * k, k).astype(np.float32)
    delta = rng.integers(-3, 4, size=n).astype(np.int32)
    top = (base.view(np.int32) + delta).view(np.float32)
    third = n // 3
    x[rows[third:], col[third:]] = top[third:]  # two thirds: amax at a boundary +- 3 ulp
    return x


def nvfp4_tie_blocks(rng, n):
    """NVFP4 blocks whose scale is not a power of two (amax = 6 s, s an E4M3 value with a
    nonzero mantissa) and whose elements lie on E2M1 midpoints m s, or 1-2 float32 ulp off them:
    where x * fl32(1 / s) and x / s can round differently."""
    e4 = np.arange(0x10, 0x7F, dtype=np.uint8)
    e4 = e4[(e4 & 7) != 0].view(ml_dtypes.float8_e4m3fn).astype(np.float64)  # not powers of two
    s = rng.choice(e4, size=n) * np.exp2(rng.integers(-20, 21, size=n))
    mids = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])
    x = rng.choice(mids, size=(n, 16)) * s[:, None] * np.where(rng.integers(0, 2, (n, 16)) == 1, -1, 1)
    x = x.astype(np.float32)
    off = rng.integers(-2, 3, size=(n, 16)).astype(np.int32)
    x = (x.view(np.int32) + off).view(np.float32)
    x[:, 0] = (6.0 * s).astype(np.float32)
    return x


def check_fractions(x, s_codes, c_codes):
    """NVFP4 one-level on a few blocks with fractions: scale and element codes."""
    e4 = [float(v) for v in np.arange(127, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)]
    e2 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]

    def rne(q, grid, codes):
        best = min(range(len(grid)), key=lambda i: (abs(q - Fraction(grid[i])), codes[i] & 1))
        return best

    bad = 0
    for b in range(x.shape[0]):
        amax = max(abs(Fraction(float(v))) for v in x[b])
        q = min(max(amax / 6, Fraction(1, 64)), Fraction(448))
        si = rne(q, e4, list(range(127)))
        if si != s_codes[b]:
            bad += 1
            continue
        s = Fraction(e4[si])
        for i, v in enumerate(x[b]):
            y = Fraction(float(v)) / s
            y = min(max(y, Fraction(-6)), Fraction(6))
            if rne(abs(y), e2, list(range(8))) != (c_codes[b, i] & 7):  # magnitude code
                bad += 1
                break
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fa4sim", default=os.environ.get("FA4SIM_BIN", "build/fa4sim"))
    ap.add_argument("--blocks", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--fractions", type=int, default=2000, help="NVFP4 blocks re-checked with fractions")
    a = ap.parse_args()
    if not os.access(a.fa4sim, os.X_OK):
        print(f"check_block_rules_exact: error: '{a.fa4sim}' not found", file=sys.stderr)
        return 2
    rng = np.random.default_rng(a.seed)
    fail = 0
    print(f"check_block_rules_exact: {a.blocks} blocks per row, seed {a.seed}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for elem, (_, max_elem, _) in ELEMS.items():
            x = blocks(rng, a.blocks, 32, max_elem)
            amax = np.max(np.abs(x.astype(np.float64)), axis=1)
            for rule in ("floor", "ceil", "even", "rceil"):
                s, _ = fa4sim_block(a.fa4sim, tmp, x, ["--elem", elem, "--rule", rule, "--block", "32"])
                want = exact_mx_scale(amax, elem, rule)
                bad = np.nonzero(s.astype(np.int64) != want)[0]
                if rule != "rceil":
                    fail += bad.size
                ex = "".join(f"; amax {amax[i]!r} ({np.float32(amax[i]).view(np.uint32):#010x}): fa4sim 2^{int(s[i]) - 127}, exact 2^{int(want[i]) - 127}"
                             for i in bad[:2])
                print(f"  {elem} {rule:<6} {bad.size:>8} of {a.blocks} blocks differ from the exact rule{ex}", flush=True)
        x = np.concatenate([blocks(rng, a.blocks // 2, 16, 6.0), nvfp4_tie_blocks(rng, a.blocks - a.blocks // 2)])
        s, c = fa4sim_block(a.fa4sim, tmp, x, ["--format", "nvfp4"])
        amax = np.max(np.abs(x.astype(np.float64)), axis=1)
        q = np.clip(amax / 6.0, 2.0 ** -6, 448.0)
        want_s = q.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
        sbad = np.nonzero(s != want_s)[0]
        sc = want_s.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
        y = np.clip(x.astype(np.float64) / sc[:, None], -6.0, 6.0)
        want_c = y.astype(ml_dtypes.float4_e2m1fn).view(np.uint8) & 0xF
        same_scale = s == want_s
        ebad = np.nonzero(same_scale[:, None] & (c.reshape(x.shape) != want_c))
        print(f"  nvfp4 scale  {sbad.size:>8} of {a.blocks} blocks differ from E4M3(amax / 6) rounded once"
              + "".join(f"; amax {amax[i]!r}: fa4sim 0x{s[i]:02X}, exact 0x{want_s[i]:02X}" for i in sbad[:2]), flush=True)
        print(f"  nvfp4 elems  {ebad[0].size:>8} of {a.blocks * 16} elements (same scale) differ from "
              f"E2M1(x / scale) rounded once (fa4sim/torchao: x * fl32(1 / scale))"
              + "".join(f"; x {x[i, j]!r} scale {sc[i]!r}: fa4sim 0x{c.reshape(x.shape)[i, j]:X}, exact 0x{want_c[i, j]:X}"
                        for i, j in zip(ebad[0][:2], ebad[1][:2])), flush=True)
        n = min(a.fractions, a.blocks)
        pick = np.concatenate([np.arange(n // 2), a.blocks - 1 - np.arange(n - n // 2)])
        fb = check_fractions(x[pick], want_s[pick], want_c[pick])
        print(f"  fractions: the float64 reference of {n} NVFP4 blocks re-done in exact rationals: {fb} differ", flush=True)
        fail += fb
    print("check_block_rules_exact: " + ("OK: floor, ceil and even are the exact rules" if not fail else f"FAIL: {fail}"))
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())
