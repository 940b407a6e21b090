#!/usr/bin/env python3
"""Cross-check Hopper wgmma dot products against MMA-Sim (PyPI mmasim, arXiv 2511.10909).

A sample file holds one dot product per row, as a uint16 .npy of shape (n, 2K + 4):
  a[0..K), b[0..K)   the input bit patterns (bf16/fp16, or FP8 in the low byte), K = 16 or 32
  c_lo, c_hi         float32 C as two 16-bit halves
  d_lo, d_hi         float32 D: the GPU's result (`fa4sim gpu verify --what wgmma --sample DIR`)
                     or, in a file made with --make, MMA-Sim's
named wgmma-<type>.npy, type in bf16, fp16, e4m3, e5m2 (float32 accumulation).

  --check DIR   runs mmasim on every row of every sample in DIR and compares its D with the
                file's D, bit for bit (a GPU sample: MMA-Sim vs the H200).
  --make DIR    writes synthetic samples whose D is MMA-Sim's (random and adversarial inputs:
                normal values, cancelling pairs, the whole exponent range, subnormals and zeros,
                inf/NaN, C of either sign); fa4sim's C++ model is then compared with them by
                `FA4SIM_WGMMA_SAMPLE=DIR test_wgmma_model --gtest_also_run_disabled_tests
                --gtest_filter=*SampleFile*`
                (--model-test BIN runs that after writing: ctest wgmma_mmasim_crosscheck).

mmasim is the reference as published: mmasim/nv_ptx/sim.py WGMMA("Hopper", "m64n8k16.f32.bf16.bf16")
and friends, whose dpa(a, b, c) computes one row. Exit codes: 0 no mismatch, 1 mismatches,
2 usage, 77 numpy, torch or mmasim missing.
"""
import argparse
import os
import subprocess
import sys

try:
    import numpy as np
    import torch
    from mmasim.nv_ptx import WGMMA
except ImportError as e:
    print(f"check_wgmma_mmasim: SKIP: {e} (pip install mmasim: it needs torch >= 2.9)", flush=True)
    sys.exit(77)

TYPES = {  # name -> (K, ptx shape, torch dtype, exponent bits, mantissa bits)
    "bf16": (16, "m64n8k16.f32.bf16.bf16", torch.bfloat16, 8, 7),
    "fp16": (16, "m64n8k16.f32.f16.f16", torch.float16, 5, 10),
    "e4m3": (32, "m64n8k32.f32.e4m3.e4m3", torch.float8_e4m3fn, 4, 3),
    "e5m2": (32, "m64n8k32.f32.e5m2.e5m2", torch.float8_e5m2, 5, 2),
}


def mmasim_d(name, a_bits, b_bits, c_bits):
    """MMA-Sim's D bits (uint32) for rows of input bits."""
    k, shape, dtype, _, _ = TYPES[name]
    if dtype.itemsize == 2:
        a = torch.from_numpy(a_bits.astype(np.int16)).view(dtype)
        b = torch.from_numpy(b_bits.astype(np.int16)).view(dtype)
    else:
        a = torch.from_numpy(a_bits.astype(np.uint8)).view(dtype)
        b = torch.from_numpy(b_bits.astype(np.uint8)).view(dtype)
    c = torch.from_numpy(c_bits.astype(np.uint32).view(np.float32).copy())
    d = WGMMA("Hopper", shape).dpa(a, b, c)
    return d.view(torch.int32).numpy().view(np.uint32)


def split(rows, k):
    a = rows[:, :k]
    b = rows[:, k:2 * k]
    c = rows[:, 2 * k].astype(np.uint32) | (rows[:, 2 * k + 1].astype(np.uint32) << 16)
    d = rows[:, 2 * k + 2].astype(np.uint32) | (rows[:, 2 * k + 3].astype(np.uint32) << 16)
    return a, b, c, d


# ---- synthetic inputs (numpy, seeded)

def rand_bits(rng, n, ebits, mbits, e_lo, e_hi, p_zero=0.0):
    """Random finite values of a format, unbiased exponents uniform in [e_lo, e_hi] (below emin:
    subnormals), random sign and mantissa; p_zero of them +-0."""
    bias = (1 << (ebits - 1)) - 1
    emin, emax = 1 - bias, (1 << ebits) - 2 - bias
    if ebits == 4:  # E4M3FN: exponent field 15 is finite but for S.1111.111
        emax += 1
    e = rng.integers(max(e_lo, emin - mbits), min(e_hi, emax) + 1, n)
    m = rng.integers(0, 1 << mbits, n)
    sign = rng.integers(0, 2, n) << (ebits + mbits)
    sub = e < emin
    field = np.where(sub, 0, e + bias)
    man = np.where(sub, (m | (1 << mbits)) >> np.clip(emin - e, 0, 31), m)
    bits = sign | (field << mbits) | man
    if ebits == 4:
        bits = np.where((bits & 0x7F) == 0x7F, bits - 1, bits)
    zero = rng.random(n) < p_zero
    return np.where(zero, sign, bits).astype(np.uint32)


def make_rows(name, n, rng):
    k, _, _, eb, mb = TYPES[name]
    bias = (1 << (eb - 1)) - 1
    emin, emax = 1 - bias, (1 << eb) - 1 - bias
    a = np.zeros((n, k), np.uint32)
    b = np.zeros((n, k), np.uint32)
    c = np.zeros(n, np.uint32)
    cls = np.arange(n) % 6
    for j in range(6):
        idx = np.nonzero(cls == j)[0]
        m = len(idx)
        if j == 0:  # normal values, C comparable to the sum
            a[idx] = rand_bits(rng, m * k, eb, mb, -4, 4).reshape(m, k)
            b[idx] = rand_bits(rng, m * k, eb, mb, -4, 4).reshape(m, k)
            c[idx] = rand_bits(rng, m, 8, 23, -6, 10, 0.1)
        elif j == 1:  # cancelling pairs plus small terms below the kept bits
            big = rand_bits(rng, m * k, eb, mb, emax - 4, emax).reshape(m, k)
            big[:, 1::2] = big[:, 0::2] ^ (1 << (eb + mb))
            small = rand_bits(rng, m * k, eb, mb, emin - mb, emin + 4).reshape(m, k)
            half = k * 3 // 4
            a[idx] = np.concatenate([big[:, :half], small[:, half:]], axis=1)
            bb = rand_bits(rng, m * k, eb, mb, -2, 2).reshape(m, k)
            bb[:, 1::2] = bb[:, 0::2]
            b[idx] = bb
            c[idx] = rand_bits(rng, m, 8, 23, -40, 0, 0.3)
        elif j == 2:  # the whole exponent range, C over all of float32
            a[idx] = rand_bits(rng, m * k, eb, mb, -999, 999).reshape(m, k)
            b[idx] = rand_bits(rng, m * k, eb, mb, -999, 999).reshape(m, k)
            c[idx] = rand_bits(rng, m, 8, 23, -149, 127, 0.1)
        elif j == 3:  # subnormals and zeros
            a[idx] = rand_bits(rng, m * k, eb, mb, emin - mb, emin + 2, 0.25).reshape(m, k)
            b[idx] = rand_bits(rng, m * k, eb, mb, emin - mb, emin + 2, 0.25).reshape(m, k)
            c[idx] = rand_bits(rng, m, 8, 23, -149, -110, 0.3)
        elif j == 4:  # products near float32's subnormals (bf16) / zero exponent
            lo, hi = (-75, -60) if eb == 8 else (emin - mb, emin + 4)
            a[idx] = rand_bits(rng, m * k, eb, mb, lo, hi, 0.25).reshape(m, k)
            b[idx] = rand_bits(rng, m * k, eb, mb, lo, hi, 0.25).reshape(m, k)
            c[idx] = rand_bits(rng, m, 8, 23, -149, -120, 0.3)
        else:  # inf, NaN and signed zeros sprinkled
            a[idx] = rand_bits(rng, m * k, eb, mb, -3, 3).reshape(m, k)
            b[idx] = rand_bits(rng, m * k, eb, mb, -3, 3).reshape(m, k)
            c[idx] = rand_bits(rng, m, 8, 23, -3, 8, 0.2)
            specials = [0, 1 << (eb + mb)]
            if name != "e4m3":
                inf = ((1 << eb) - 1) << mb
                specials += [inf, inf | (1 << (eb + mb)), inf | 1]
            else:
                specials += [0x7F, 0xFF]
            for arr in (a, b):
                hit = rng.random((m, k)) < 1 / 24
                pick = np.array(specials, np.uint32)[rng.integers(0, len(specials), (m, k))]
                arr[idx] = np.where(hit, pick, arr[idx])
            cs = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000], np.uint32)
            hit = rng.random(m) < 0.2
            c[idx] = np.where(hit, cs[rng.integers(0, len(cs), m)], c[idx])
    return a, b, c


def write_sample(path, a, b, c, d):
    rows = np.concatenate([a, b, (c & 0xFFFF)[:, None], (c >> 16)[:, None],
                           (d & 0xFFFF)[:, None], (d >> 16)[:, None]], axis=1).astype(np.uint16)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        np.save(f, rows)
    os.replace(tmp, path)


def check(path, name, first):
    rows = np.load(path)
    k = TYPES[name][0]
    if rows.ndim != 2 or rows.shape[1] != 2 * k + 4:
        print(f"check_wgmma_mmasim: error: {path}: shape {rows.shape}, want (n, {2 * k + 4})",
              file=sys.stderr)
        sys.exit(2)
    a, b, c, d = split(rows, k)
    ref = mmasim_d(name, a, b, c)
    bad = np.nonzero(ref != d)[0]
    print(f"{name}: {len(rows)} dot products, {len(bad)} mismatches (mmasim vs file)")
    for i in bad[:first]:
        print(f"  row {i}: a={[hex(x) for x in a[i]]} b={[hex(x) for x in b[i]]} c=0x{c[i]:08X} "
              f"file=0x{d[i]:08X} mmasim=0x{ref[i]:08X}")
    return len(bad)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--check", metavar="DIR", help="compare the samples in DIR with mmasim")
    g.add_argument("--make", metavar="DIR", help="write synthetic samples with mmasim's D to DIR")
    ap.add_argument("--n", type=int, default=6000, help="dot products per type (--make)")
    ap.add_argument("--seed", type=int, default=1, help="generator seed (--make)")
    ap.add_argument("--types", default="bf16,fp16,e4m3,e5m2")
    ap.add_argument("--first", type=int, default=8, help="mismatches printed per type")
    ap.add_argument("--model-test", metavar="BIN",
                    help="after --make: run BIN (test_wgmma_model) on the samples, return its code")
    args = ap.parse_args()
    types = args.types.split(",")
    for t in types:
        if t not in TYPES:
            print(f"check_wgmma_mmasim: error: --types: '{t}' is not one of {list(TYPES)}",
                  file=sys.stderr)
            return 2
    if args.make:
        os.makedirs(args.make, exist_ok=True)
        rng = np.random.default_rng(args.seed)
        for t in types:
            a, b, c = make_rows(t, args.n, rng)
            d = mmasim_d(t, a, b, c)
            path = os.path.join(args.make, f"wgmma-{t}.npy")
            write_sample(path, a, b, c, d)
            print(f"{t}: wrote {args.n} dot products with mmasim's D to {path}")
        if args.model_test:
            env = dict(os.environ, FA4SIM_WGMMA_SAMPLE=args.make)
            cmd = [args.model_test, "--gtest_also_run_disabled_tests", "--gtest_filter=*SampleFile*"]
            return subprocess.run(cmd, env=env).returncode
        return 0
    total, seen = 0, 0
    for t in types:
        path = os.path.join(args.check, f"wgmma-{t}.npy")
        if not os.path.exists(path):
            continue
        seen += 1
        total += check(path, t, args.first)
    if seen == 0:
        print(f"check_wgmma_mmasim: error: no wgmma-<type>.npy in {args.check}", file=sys.stderr)
        return 2
    print("RESULT: " + ("0 mismatches" if total == 0 else f"{total} mismatches"))
    return 0 if total == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
