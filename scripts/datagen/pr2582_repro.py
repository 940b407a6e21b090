#!/usr/bin/env python3
"""flash-attention PR #2582's precision table, set up as the PR's benchmark sets it up.

The PR (https://github.com/Dao-AILab/flash-attention/pull/2582, "NVFP4/MXFP8 mixed-precision
fwd") publishes cos_sim / max_diff / mean_diff "vs BF16 Reference" per (b, s, h, d). Its benchmark,
flash_attn/cute/benchmarks/bench_fp4.py at the PR's head 6cb6f160, makes them so:
  * Q, K, V = torch.randn(..., float32) (torch.manual_seed(0) once, shapes in turn, on the GPU),
    then rounded to bfloat16 (`dtype_gen`) before anything else;
  * NVFP4 Q/K: flashinfer's nvfp4_quantize of the bf16 tensor with global scale 1.0 (`one`):
    E4M3 scale = amax / 6 per 16, no tensor scale; MXFP8 Q/K: flashinfer's mxfp8_quantize, whose
    E8M0 scale rounds amax / 448 up (TensorRT-LLM's cvt_warp_fp16_to_mxfp8: the rceil rule);
  * V: bf16, or `v.to(bf16).to(float8_e4m3fn)`, a plain cast with no scale; P follows V's type;
    the model here stores FP8 P as E4M3 of P x 2^8 (FA4_FP8_PV_P_LOG2_OFFSET's default), which the
    kernel does not do (it passes no offset to this P path; pr2582_exact.py models the kernel);
  * the reference is FA4's BF16 kernel on the bf16 Q/K/V; cos_sim is over the flattened outputs.

This script runs `fa4sim attention` so: seeded N(0, 1) float32 rounded to bf16 and passed as .npy
(bf16 bits), `--descale one` (the plain FP8 cast of V), `--scale-rule rceil` for MXFP8. fa4sim
compares with float64 attention on those bf16 inputs (not with a BF16 kernel), and its NVFP4
operands carry the tensor scale amax / 2688 (include/fa4sim/analysis/attention.h), not 1.0.
--model adds a numpy model of the PR's exact recipe (global scale 1.0, output and reference
rounded to bf16, the reference's P in bf16) built on check_block_scale.py's port of the
quantisers, which fa4sim's `block` matches block for block; its mean |diff| is the PR's
mean_diff. Torch's CUDA random numbers are not reproduced: each seed is another sample.

    python3 scripts/datagen/pr2582_repro.py --fa4sim build/fa4sim --out data/block_attention/pr2582_setup

`--seeds 1-40` (and `--seeds-large 1-8`, `none` to skip a shape) adds the spread over the seeds per
(shape, mode, source, metric): mean, std, min, max, 5-95 %, and where the published value falls
(z, share of seeds below); `--no-fa4sim` runs the model alone.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import ml_dtypes
except ImportError as e:
    sys.exit(f"pr2582_repro: needs numpy and ml_dtypes ({e})")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "check"))
from check_block_scale import nvfp4_quantize, to_mx  # noqa: E402  (the port of the quantisers)
from block_attention_sweep import provenance, write_outputs  # noqa: E402  (this folder)

F32 = np.float32
# (b, s, h, d) -> the PR's cos_sim / max_diff / mean_diff for NVFP4+BF16, NVFP4+FP8, MXFP8+FP8
PUBLISHED = {
    (1, 256, 16, 128): ((0.9910, 0.1562, 0.0106), (0.9904, 0.1475, 0.0109), (0.9986, 0.0605, 0.0042)),
    (1, 1024, 16, 128): ((0.9908, 0.1846, 0.0055), (0.9901, 0.2119, 0.0057), (0.9986, 0.0459, 0.0022)),
    (1, 4096, 12, 128): ((0.9906, 0.0674, 0.0028), (0.9899, 0.0771, 0.0029), (0.9985, 0.0146, 0.0011)),
}
MODES = {  # name -> fa4sim attention options
    "NVFP4+BF16": ["--qk-format", "nvfp4", "--p-format", "bf16", "--v-format", "bf16"],
    "NVFP4+FP8": ["--qk-format", "nvfp4", "--p-format", "e4m3", "--v-format", "e4m3", "--descale", "one"],
    "MXFP8+FP8": ["--qk-format", "mxfp8", "--scale-rule", "rceil", "--p-format", "e4m3", "--v-format",
                  "e4m3", "--descale", "one"],
}
E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])


def bf16(x):
    return np.asarray(x, dtype=F32).astype(ml_dtypes.bfloat16).astype(F32)


def inputs(shape, seed):
    """Q, K, V: N(0, 1) float32 rounded to bf16 (float32 arrays holding bf16 values)."""
    rng = np.random.default_rng(seed)
    return [bf16(rng.standard_normal(shape).astype(F32)) for _ in range(3)]


def run_fa4sim(fa4sim, tmp, qkv, mode):
    paths = []
    for n, x in zip("qkv", qkv):
        p = os.path.join(tmp, f"{n}.npy")
        np.save(p, x.astype(ml_dtypes.bfloat16).view(np.uint16))  # bf16 as uint16 (--help)
        paths.append(p)
    cmd = [fa4sim, "attention", "--q", paths[0], "--k", paths[1], "--v", paths[2], *MODES[mode],
           "--no-split", "--json", "-"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    run = json.loads(r.stdout)["results"]["runs"][0]
    return {"cosine": run["cosine"], "max_abs": run["max_abs"]}


# ---- the numpy model of the PR's recipe

def nvfp4_dq(x):
    """flashinfer nvfp4_quantize with global scale 1.0, dequantised (the port: same steps)."""
    b = x.reshape(-1, 16).astype(F32)
    s, c = nvfp4_quantize(b, None)
    return (E2M1[c] * s.view(ml_dtypes.float8_e4m3fn).astype(np.float64)[:, None]).reshape(x.shape)


def mxfp8_dq(x):
    b = x.reshape(-1, 32).astype(F32)
    s, c = to_mx(b, "e4m3", "rceil")
    return (c.view(ml_dtypes.float8_e4m3fn).astype(np.float64) * np.exp2(s.astype(np.float64) - 127)[:, None]
            ).reshape(x.shape)


def attention(q, k, v, p_fmt):
    """float64 softmax(q k^T / sqrt(d)) v per head; P rounded as the kernel stores it (bf16, or
    E4M3 of P * 2^8), normalised by the unrounded row sum; output rounded to bf16."""
    _, s, h, d = q.shape
    out = np.empty(q.shape)
    for j in range(h):
        sc = q[0, :, j, :].astype(np.float64) @ k[0, :, j, :].astype(np.float64).T / np.sqrt(d)
        p = np.exp(sc - sc.max(axis=1, keepdims=True))
        row_sum = p.sum(axis=1, keepdims=True)
        if p_fmt == "bf16":
            p = bf16(p).astype(np.float64)
        else:
            p = (p * 256.0).astype(F32).astype(ml_dtypes.float8_e4m3fn).astype(np.float64) / 256.0
        out[0, :, j, :] = p @ v[0, :, j, :].astype(np.float64) / row_sum
    return bf16(out)


def model(qkv):
    q, k, v = qkv
    ref = attention(q, k, v, "bf16")
    v8 = v.astype(ml_dtypes.float8_e4m3fn).astype(F32)
    outs = {"NVFP4+BF16": attention(nvfp4_dq(q), nvfp4_dq(k), v, "bf16"),
            "NVFP4+FP8": attention(nvfp4_dq(q), nvfp4_dq(k), v8, "e4m3"),
            "MXFP8+FP8": attention(mxfp8_dq(q), mxfp8_dq(k), v8, "e4m3")}
    res = {}
    for m, o in outs.items():
        a, b = o.ravel().astype(np.float64), ref.ravel().astype(np.float64)
        diff = np.abs(a - b)
        res[m] = {"cosine": float(a @ b / np.sqrt((a @ a) * (b @ b))), "max_abs": float(diff.max()),
                  "mean_abs": float(diff.mean())}
    return res


def parse_seeds(text):
    """'1,2,5' or '1-40' (inclusive) or a mix: the list of seeds; 'none': no seeds (skip the shapes)."""
    if text == "none":
        return []
    seeds = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        try:
            seeds += list(range(int(lo), int(hi) + 1)) if hi else [int(lo)]
        except ValueError:
            sys.exit(f"pr2582_repro: error: --seeds: bad seed list {text!r} (use 1,2,3 or 1-40)")
    return seeds


# the published cells are printed to 4 decimals: each is its value +- this half-width
HALF_WIDTH = 5e-5
METRICS = (("cosine", 0), ("max_abs", 1), ("mean_abs", 2))  # our key -> index in PUBLISHED


def spread(rows):
    """Per (shape, mode, source, metric): mean, std, min, max, 5-95 % and the published value's z."""
    out = []
    for shape, pub in PUBLISHED.items():
        for mode, want in zip(MODES, pub):
            sel = [r for r in rows if tuple(r["shape"]) == shape and r["mode"] == mode]
            for src in ("fa4sim", "model"):
                for key, i in METRICS:
                    x = np.array([r[src][key] for r in sel if key in r[src]])
                    if len(x) < 2:
                        continue
                    sd = float(x.std(ddof=1))
                    z = (want[i] - float(x.mean())) / sd if sd > 0 else float("inf")
                    # how far the published interval [v - h, v + h] lies from the mean, in std
                    gap = max(abs(want[i] - float(x.mean())) - HALF_WIDTH, 0.0)
                    out.append({"shape": list(shape), "mode": mode, "source": src, "metric": key,
                                "n": len(x), "mean": float(x.mean()), "std": sd, "min": float(x.min()),
                                "max": float(x.max()), "p5": float(np.percentile(x, 5)),
                                "p95": float(np.percentile(x, 95)), "published": want[i], "z": z,
                                "z_interval": gap / sd if sd > 0 else float("inf"),
                                "below": float((x < want[i]).mean()),  # share of seeds below the published
                                "inside": bool(x.min() <= want[i] + HALF_WIDTH and want[i] - HALF_WIDTH <= x.max())})
    return out


def spread_lines(stats):
    lines = ["", "Spread over seeds (published cells are printed to 4 decimals: +-5e-5; z = (published - mean) / "
             "std; z_int: distance of the published interval from the mean in std; seeds below: share of "
             "seeds under the published value; fa4sim's max_abs is against "
             "float64, not a bf16 kernel, and it has no mean_abs)", "",
             "| shape (b, s, h, d) | mode | source | metric | n | mean | std | min | max | 5 % | 95 % "
             "| published | z | z_int | seeds below | inside [min, max] |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for t in stats:
        f = (lambda v: f"{v:.5f}") if t["metric"] == "cosine" else (lambda v: f"{v:.4f}")
        lines.append(f"| {tuple(t['shape'])} | {t['mode']} | {t['source']} | {t['metric']} | {t['n']} | "
                     f"{f(t['mean'])} | {t['std']:.1e} | {f(t['min'])} | {f(t['max'])} | {f(t['p5'])} | "
                     f"{f(t['p95'])} | {t['published']} | {t['z']:+.1f} | {t['z_interval']:.1f} | {t['below']:.0%} | "
                     f"{'yes' if t['inside'] else 'no'} |")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fa4sim", default="build/fa4sim")
    ap.add_argument("--out", required=True, help="output prefix: OUT.json and OUT.md")
    ap.add_argument("--seeds", default="1,2,3,4,5", help="seeds of the two small shapes: 1,2,3, 1-40 or none")
    ap.add_argument("--seeds-large", default="1,2", help="seeds of (1, 4096, 12, 128): 1,2, 1-8 or none")
    ap.add_argument("--model", action="store_true", help="also run the numpy model of the PR's recipe")
    ap.add_argument("--no-fa4sim", action="store_true", help="run the model only (implies --model)")
    a = ap.parse_args()
    small, large = parse_seeds(a.seeds), parse_seeds(a.seeds_large)
    a.model = a.model or a.no_fa4sim
    rows = []
    lines = ["| shape (b, s, h, d) | mode | seed | published cos / max / mean | fa4sim cos | fa4sim max "
             "| model cos | model max | model mean |", "|---|---|---:|---|---:|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        for shape, pub in PUBLISHED.items():
            for seed in large if shape[1] >= 4096 else small:
                qkv = inputs(shape, seed)
                mod = model(qkv) if a.model else {}
                for (mode, want) in zip(MODES, pub):
                    r = {} if a.no_fa4sim else run_fa4sim(a.fa4sim, tmp, qkv, mode)
                    m = mod.get(mode, {})
                    rows.append({"shape": list(shape), "mode": mode, "seed": seed, "published": want,
                                 "fa4sim": r, "model": m})
                    rs = f"{r['cosine']:.5f} | {r['max_abs']:.4f}" if r else "- | -"
                    ms = (f"{m['cosine']:.5f} | {m['max_abs']:.4f} | {m['mean_abs']:.5f}" if m else "- | - | -")
                    lines.append(f"| {shape} | {mode} | {seed} | {' / '.join(map(str, want))} | {rs} | {ms} |")
                    print(lines[-1], flush=True)
    stats = spread(rows)
    lines += spread_lines(stats)
    print("\n".join(spread_lines(stats)))
    prov = provenance(a.fa4sim, numpy=np.__version__, ml_dtypes=ml_dtypes.__version__)
    write_outputs(a.out, {"provenance": prov, "rows": rows, "spread": stats}, lines)


if __name__ == "__main__":
    main()
