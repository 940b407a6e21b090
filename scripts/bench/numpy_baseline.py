#!/usr/bin/env python3
"""NumPy baselines for fa4sim's analyses (the way the seed article computed its tables).

Subcommands (one per fa4sim analysis that has a NumPy counterpart):
  exp2   the seed's ex2_emulated transcription and its error table: FP32 max/mean relative
         error vs a float64 2^x, bf16 bit-identical and within-1-ULP fractions.
  rescale  the seed's online-softmax simulation (conditional rescaling): the rescale-count table
         and (--what errors) the bf16 and FP8 rel-L2 tables, from default_rng(1) draws.

Used by scripts/bench/bench_exp2.sh for the fa4sim/NumPy throughput ratio, and as an independent
cross-check of `fa4sim exp2` (same law, different samples). Prints a table, or JSON with --json.
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np

f32, f64 = np.float32, np.float64

# Upstream POLY_EX2 (flash_attn/cute/utils.py @0251105a), exact float32 values.
POLY_EX2 = {
    0: (1.0,),
    1: (1.0, 0.922497093677520751953125),
    2: (1.0, 0.6657850742340087890625, 0.330107033252716064453125),
    3: (1.0, 0.695146143436431884765625, 0.227564394474029541015625, 0.077119089663028717041015625),
    4: (1.0, 0.693042695522308349609375, 0.2412912547588348388671875,
        5.2225358784198760986328125e-2, 1.3434938155114650726318359375e-2),
    5: (1.0, 0.693151414394378662109375, 0.24016360938549041748046875,
        5.5802188813686370849609375e-2, 9.01452265679836273193359375e-3,
        1.86810153536498546600341796875e-3),
}


def fma(a, b, c):
    """a*b is exact in float64 for float32 inputs; then round once to float32 (seed's helper)."""
    return (a.astype(f64) * b + c).astype(f32)


def ex2_emulated(x, degree):
    """The seed article's transcription of ex2_emulation (valid for x <= 127; no FTZ/NaN cases)."""
    coeffs = POLY_EX2[degree]
    x = np.maximum(x.astype(f32), f32(-127.0))
    magic = f32(2**23 + 2**22)
    x_rounded = (np.floor(x.astype(f64)) + f64(magic)).astype(f32)  # add.rm.ftz.f32
    x_frac = x - (x_rounded - magic)
    out = np.full_like(x_frac, f32(coeffs[-1]))
    for c in reversed(coeffs[:-1]):
        out = fma(out, x_frac, f32(c))
    bits = (x_rounded.view(np.int32) << 23) + out.view(np.int32)
    return bits.view(f32)


def bf16_index_f32(y):
    """Round-to-nearest-even bf16 bits of non-negative float32 values (= ordered index)."""
    b = y.view(np.uint32).astype(np.uint64)
    return (b + 0x7FFF + ((b >> 16) & 1)) >> 16


def bf16_index_f64(v):
    """bf16 bits of non-negative normal float64 values, rounded once (nearest even)."""
    b = v.view(np.uint64)
    return ((b + ((1 << 44) - 1) + ((b >> 45) & 1)) >> 45) - (896 << 7)


def exp2_table(x, degrees):
    ref = np.exp2(x.astype(f64))
    ref_bf16 = bf16_index_f64(ref).astype(np.int64)
    rows = []
    for d in degrees:
        y = ex2_emulated(x, d)
        rel = np.abs(y.astype(f64) - ref) / ref
        i = int(np.argmax(rel))
        dist = np.abs(bf16_index_f32(y).astype(np.int64) - ref_bf16)
        rows.append({
            "degree": d,
            "n": int(x.size),
            "fp32_max_rel": float(rel[i]),
            "fp32_max_rel_at": float(x[i]),
            "fp32_mean_rel": float(rel.mean()),
            "identical_pct": 100.0 * float(np.mean(dist == 0)),
            "within_1ulp_pct": 100.0 * float(np.mean(dist <= 1)),
            "max_ulp": int(dist.max()),
        })
    return rows


def cmd_exp2(args):
    degrees = [int(d) for d in args.degree.split(",")]
    if any(d not in POLY_EX2 for d in degrees):
        sys.exit("numpy_baseline.py exp2: error: --degree values must be 0..5")
    lo, hi = (float(v) for v in args.range.split(","))
    if not lo < hi or lo < -126 or hi > 128:
        sys.exit("numpy_baseline.py exp2: error: --range needs -126 <= LO < HI <= 128")
    if args.samples < 1:
        sys.exit("numpy_baseline.py exp2: error: --samples must be >= 1")
    times, cpu, rows = [], [], None
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        rng = np.random.default_rng(args.seed)  # the seed article: uniform inputs, float32
        x = rng.uniform(lo, hi, args.samples).astype(f32)
        rows = exp2_table(x, degrees)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    result = {
        "tool": "numpy_baseline.py exp2",
        "numpy": np.__version__,
        "params": {"degree": degrees, "range": [lo, hi], "samples": args.samples, "seed": args.seed,
                   "repeat": args.repeat},
        "elapsed_s": times,
        "median_s": statistics.median(times),
        "cpu_s": cpu,
        "median_cpu_s": statistics.median(cpu),
        "elements_per_s": args.samples * len(degrees) / statistics.median(times),
        "degrees": rows,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"numpy exp2: {args.samples} uniform inputs in [{lo}, {hi}), seed {args.seed}; "
          f"median {result['median_s']:.3f} s of {args.repeat}")
    print(" degree  FP32 max rel  FP32 mean rel  bf16 identical  bf16 <=1 ULP")
    for r in rows:
        print(f" {r['degree']:6d}  {r['fp32_max_rel']:12.3g}  {r['fp32_mean_rel']:13.3g}  "
              f"{r['identical_pct']:13.3f}%  {r['within_1ulp_pct']:11.3f}%")


# ---- rescale: the seed article's online-softmax simulation (baseline of `fa4sim rescale`)

def _rescale_sim(S, V, tau, cast, max_offset, block=128, warp=32):
    """One (scores, tau, dtype) run, vectorised over rows: key blocks walked forward, the kernel's
    update_row_max rule, P = exp2(s - m + max_offset) in float32, cast, l from the float32 P,
    O = O * alpha + P_cast @ V in float32. V None: rescale counts only."""
    rows, keys = S.shape
    m = S[:, :block].max(axis=1)
    row_resc = warp_resc = 0
    l = np.zeros(rows, f32)
    O = None if V is None else np.zeros((rows, V.shape[1]), f32)
    for b in range(keys // block):
        blk = S[:, b * block:(b + 1) * block]
        alpha = np.ones(rows, f32)
        if b > 0:
            m_new = np.maximum(m, blk.max(axis=1))
            a = m - m_new
            resc = (a < 0) & ~((a >= -tau) if tau > 0 else np.zeros(rows, bool))
            row_resc += int(resc.sum())
            warp_resc += int(resc.reshape(-1, warp).any(axis=1).sum())
            alpha = np.where(resc, np.exp2(a), 1.0).astype(f32)
            m = np.where(resc, m_new, m)
        if V is None:
            continue
        P = np.exp2(blk - m[:, None] + max_offset).astype(f32)
        l = l * alpha + P.sum(axis=1, dtype=f32)
        O = O * alpha[:, None] + cast(P) @ V[b * block:(b + 1) * block]
    return row_resc, warp_resc, (None if V is None else O / l[:, None])


def _rescale_cast(dtype):
    import ml_dtypes
    t = {"bf16": ml_dtypes.bfloat16, "e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}[dtype]
    mx = float(ml_dtypes.finfo(t).max)
    return lambda P: np.clip(P, -mx, mx).astype(t).astype(f32)  # clip first = satfinite


def _rescale_once(args):
    rows, keys, d, nb = args.rows, args.keys, 128, args.keys // 128 - 1
    rng = np.random.default_rng(args.seed)  # V first, then the score matrices in table order
    V = rng.standard_normal((keys, d))
    k = np.arange(keys) / keys
    dists = {"normal:1.5": rng.normal(0, 1.5, (rows, keys)), "peaked": rng.normal(0, 6, (rows, keys)),
             "rise:24": rng.normal(0, 1.5, (rows, keys)) + 24 * k,
             "rise:96": rng.normal(0, 1.5, (rows, keys)) + 96 * k}
    out = {"counts": {}, "rel_l2": {}}
    for name, S in dists.items():
        for tau in (0, 8):
            r, w, _ = _rescale_sim(S, None, tau, None, 0)
            out["counts"][f"{name} tau {tau}"] = [100 * r / (rows * nb), 100 * w / (rows // 32 * nb)]
    if args.what == "errors":
        V32 = V.astype(f32)
        for name in ("normal:1.5", "peaked"):
            S = dists[name]
            P = np.exp2(S - S.max(axis=1, keepdims=True))
            R = (P @ V) / P.sum(axis=1, keepdims=True)
            for dtype, taus, mo in (("bf16", (0, 8), 0), ("e4m3", (0, 4), 8), ("e5m2", (0, 4), 8)):
                for tau in taus:
                    _, _, O = _rescale_sim(S, V32, tau, _rescale_cast(dtype), mo)
                    out["rel_l2"][f"{name} {dtype} tau {tau}"] = float(np.linalg.norm(O - R) / np.linalg.norm(R))
    return out


def cmd_rescale(args):
    times, cpu, out = [], [], None
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = _rescale_once(args)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    result = {"tool": "numpy_baseline.py rescale", "numpy": np.__version__,
              "params": {"what": args.what, "rows": args.rows, "keys": args.keys, "seed": args.seed,
                         "repeat": args.repeat},
              "elapsed_s": times, "median_s": statistics.median(times), "cpu_s": cpu,
              "median_cpu_s": statistics.median(cpu), **out}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"numpy rescale ({args.what}): median {result['median_s']:.3f} s of {args.repeat}")
    for key, (r, w) in out["counts"].items():
        print(f"  {key:18s} rows {r:6.2f} %  warps {w:6.1f} %")
    for key, v in out["rel_l2"].items():
        print(f"  {key:24s} rel-L2 {v:.5f}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    e = sub.add_parser("exp2", help="the seed's ex2_emulated error table (NumPy)")
    e.add_argument("--degree", default="3,4,5", help="comma-separated degrees 0..5 (default 3,4,5)")
    e.add_argument("--range", default="-20,8", help="LO,HI (default -20,8)")
    e.add_argument("--samples", type=int, default=4194304, help="number of inputs (default 4194304)")
    e.add_argument("--seed", type=int, default=0, help="NumPy default_rng seed (default 0)")
    e.add_argument("--repeat", type=int, default=1, help="runs to time (median reported)")
    e.add_argument("--json", action="store_true", help="print JSON instead of a table")
    e.set_defaults(func=cmd_exp2)
    r = sub.add_parser("rescale", help="the seed's online-softmax simulation: rescale counts and errors (NumPy)")
    r.add_argument("--what", choices=("counts", "errors"), default="counts",
                   help="counts: the rescale-count table (4 dists x tau 0, 8); errors: also the bf16 and FP8 error tables")
    r.add_argument("--rows", type=int, default=256)
    r.add_argument("--keys", type=int, default=8192)
    r.add_argument("--seed", type=int, default=1, help="NumPy default_rng seed (default 1, the article's)")
    r.add_argument("--repeat", type=int, default=1, help="runs to time (median reported)")
    r.add_argument("--json", action="store_true", help="print JSON instead of a table")
    r.set_defaults(func=cmd_rescale)
    args = p.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
