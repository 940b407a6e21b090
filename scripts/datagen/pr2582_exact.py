#!/usr/bin/env python3
"""flash-attention PR #2582's precision table on the PR's own inputs, with its kernel's softmax.

The PR (https://github.com/Dao-AILab/flash-attention/pull/2582) publishes cos_sim / max_diff /
mean_diff of its block-scaled forward "vs BF16 Reference". Its benchmark
(flash_attn/cute/benchmarks/bench_fp4.py at the PR's head 6cb6f160) calls torch.manual_seed(0) once
and draws Q, K, V = torch.randn(float32) on the GPU for each shape of its list in turn; this script
recomputes those draws on the CPU (torch_cuda_randn.py: the same Philox stream and layout, B200:
148 SMs) instead of drawing other samples, rounds them to bf16 as the benchmark does, and runs:

  reference  `fa4sim attention --dtype bf16` with FA4's sm100 BF16 kernel's softmax at 6cb6f160
             (flash_fwd_sm100.py): rescale_threshold 8, max_offset 0, exp2 emulated on the schedule
             of its tuning table (1-CTA at S 256: freq 16, start 1; 2-CTA above 2 x 128 query rows:
             freq 10, start 1; res 4; the first key tile, processed with the mask function, on
             the MUFU: `ex2_emu_freq if mask_fn is None else 0`), output bf16;
  NVFP4+BF16 `--qk-format nvfp4 --tensor-scale one` (flashinfer's nvfp4_quantize with global scale
             1.0), P and V bf16;
  NVFP4+FP8  the same Q/K, V a plain cast to E4M3 (`--descale one`), P E4M3;
  MXFP8+FP8  `--qk-format mxfp8 --scale-rule rceil` (flashinfer's mxfp8_quantize), V and P E4M3;
each of the three with the block-scaled kernel's softmax at 6cb6f160 (flash_fwd_sm100_fp4.py):
`SoftmaxSm100.create(rescale_threshold=8.0, p_log2_offset=...)` whose non-FP4-P path
(scale_subtract_rowmax) adds max_offset = 0, so P = exp2(S scale_log2 - stale max) with no offset
for bf16 and FP8 P alike (p_log2_offset 8 reaches only the LSE); exp2 emulated on the e2e schedule
of its tuning tables (_FP4_TUNING_CONFIG: BF16 PV freq 16, start 1; _FP4_FP8PV_TUNING_CONFIG:
NVFP4 FP8 PV freq 9, MXFP8 FP8 PV freq 10, start 0; res 4). Each fa4sim run writes its bf16 output
(`--save-o`); the metrics are the benchmark's: cos_sim over the flattened outputs, max and mean of
|O - O_ref|, both outputs bf16. `--variant` adds runs with one kernel detail changed at a time.

    python3 scripts/datagen/pr2582_exact.py --fa4sim build/fa4sim --out data/block_attention/pr2582_exact
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_cuda_randn as trandn  # noqa: E402
from block_attention_sweep import provenance, write_outputs  # noqa: E402

try:
    import ml_dtypes
except ImportError as e:
    sys.exit(f"pr2582_exact: needs ml_dtypes ({e})")

# bench_fp4.py's `configs`, in its order (the draws follow it), and the PR's table:
# (b, s, h, d) -> cos_sim / max_diff / mean_diff for NVFP4+BF16, NVFP4+FP8, MXFP8+FP8
CONFIGS = [(1, 256, 16, 128), (1, 1024, 16, 128), (4, 4096, 16, 128), (1, 32768, 16, 128),
           (4, 4096, 32, 128), (1, 4096, 12, 128), (1, 32768, 12, 128), (1, 4096, 24, 128),
           (1, 32768, 24, 128)]
PUBLISHED = {
    (1, 256, 16, 128): ((0.9910, 0.1562, 0.0106), (0.9904, 0.1475, 0.0109), (0.9986, 0.0605, 0.0042)),
    (1, 1024, 16, 128): ((0.9908, 0.1846, 0.0055), (0.9901, 0.2119, 0.0057), (0.9986, 0.0459, 0.0022)),
    (4, 4096, 16, 128): ((0.9906, 0.0445, 0.0028), (0.9899, 0.0432, 0.0029), (0.9985, 0.0215, 0.0011)),
    (4, 4096, 32, 128): ((0.9905, 0.0605, 0.0028), (0.9898, 0.0713, 0.0029), (0.9985, 0.0225, 0.0011)),
    (1, 4096, 12, 128): ((0.9906, 0.0674, 0.0028), (0.9899, 0.0771, 0.0029), (0.9985, 0.0146, 0.0011)),
}
MODES = ["NVFP4+BF16", "NVFP4+FP8", "MXFP8+FP8"]
KERNEL = ["--tau", "8", "--max-offset", "0"]
OPERANDS = {
    "NVFP4+BF16": ["--qk-format", "nvfp4", "--tensor-scale", "one", "--p-format", "bf16",
                   "--v-format", "bf16"],
    "NVFP4+FP8": ["--qk-format", "nvfp4", "--tensor-scale", "one", "--p-format", "e4m3",
                  "--v-format", "e4m3", "--descale", "one"],
    "MXFP8+FP8": ["--qk-format", "mxfp8", "--scale-rule", "rceil", "--p-format", "e4m3",
                  "--v-format", "e4m3", "--descale", "one"],
}
SCHEDULE = {"NVFP4+BF16": "schedule:16,4,1", "NVFP4+FP8": "schedule:9,4,0",
            "MXFP8+FP8": "schedule:10,4,0"}
# One kernel detail changed at a time (--variant): what each moves.
VARIANTS = {
    "mufu": lambda mode: ["--tau", "8", "--max-offset", "0", "--exp", "mufu"],
    "tau0": lambda mode: ["--tau", "0", "--max-offset", "0", "--exp", SCHEDULE[mode]],
    # the PR's earlier in-place kernel (flash_fwd_sm100.py at 5f41dac7, "All code inline in
    # flash_fwd_sm100.py" in the PR's text): rescale_threshold by Q's width (FP4 0, FP8 4),
    # max_offset 8 for FP8 V, the same exp2 schedules
    "inline": lambda mode: (["--tau", "0", "--max-offset", "8" if "FP8" in mode[6:] else "0"]
                            if "NVFP4" in mode else
                            ["--tau", "4", "--max-offset", "8", "--allow-saturation"])
    + ["--exp", SCHEDULE[mode], "--masked-exp", "mufu"],
    "tensor-amax": lambda mode: ["--tau", "8", "--max-offset", "0", "--exp", SCHEDULE[mode]],
}


def ref_schedule(s):
    """The BF16 kernel's exp2 schedule at 6cb6f160: 2-CTA (freq 10) when seqlen_q > 2 x 128."""
    return "schedule:10,4,1" if s > 256 else "schedule:16,4,1"


def draws(wanted):
    """{config: (q, k, v)} for the wanted configs: the benchmark's float32 draws, in its order."""
    g = trandn.CudaGenerator(0)
    out = {}
    for cfg in CONFIGS:
        if cfg not in wanted:
            for _ in range(3):
                _, inc = trandn.policy(int(np.prod(cfg)))
                g.offset += (inc + 3) // 4 * 4
            continue
        out[cfg] = tuple(g.randn(*cfg) for _ in range(3))
        if len(out) == len(wanted):
            break
    return out


def flip_uncertain(x, rel):
    """x (float32) rounded to bf16, except that the draws within `rel` (in units of their binade)
    of a bf16 rounding boundary take the other neighbour: the worst the GPU's last-bits
    differences in logf / __sincosf could do to them (--flip-uncertain)."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.int64)
    near = np.abs((bits & 0xFFFF) - 0x8000) < int(rel * 2.0 ** 23)
    y = x.astype(ml_dtypes.bfloat16).astype(np.float32).view(np.uint32).astype(np.int64)
    lo = bits & ~0xFFFF
    other = np.where(y == lo, lo + 0x10000, lo)
    out = np.where(near, other, y).astype(np.uint32).view(np.float32)
    return out, int(np.count_nonzero(near))


def run_fa4sim(fa4sim, paths, opts, o_path):
    cmd = [fa4sim, "attention", "--q", paths[0], "--k", paths[1], "--v", paths[2], *opts,
           "--no-split", "--save-o", o_path, "--json", "-"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    shown = [os.path.basename(c) if c.startswith(os.path.dirname(o_path) + os.sep) else c for c in cmd]
    return np.load(o_path).astype(np.float64), shown


def metrics(o, ref):
    a, b = o.ravel(), ref.ravel()
    diff = np.abs(a - b)
    return {"cos_sim": float(a @ b / np.sqrt((a @ a) * (b @ b))), "max_diff": float(diff.max()),
            "mean_diff": float(diff.mean())}


def one_config(fa4sim, tmp, cfg, qkv, variants):
    paths = []
    for n, x in zip("qkv", qkv):
        p = os.path.join(tmp, f"{n}.npy")
        np.save(p, x.astype(ml_dtypes.bfloat16).view(np.uint16))  # bf16 as uint16 (--help)
        paths.append(p)
    t0 = time.time()
    ref, ref_cmd = run_fa4sim(fa4sim, paths, ["--dtype", "bf16", *KERNEL, "--exp",
                                              ref_schedule(cfg[1]), "--masked-exp", "mufu"],
                              os.path.join(tmp, "ref.npy"))
    rows = []
    for mode in MODES:
        runs = [("kernel", KERNEL + ["--exp", SCHEDULE[mode]])]
        runs += [(v, VARIANTS[v](mode)) for v in variants if not (v == "tensor-amax" and "NVFP4" not in mode)]
        for name, kopts in runs:
            ops = list(OPERANDS[mode])
            if name == "tensor-amax":
                ops[ops.index("one")] = "amax"
            o, cmd = run_fa4sim(fa4sim, paths, ops + kopts, os.path.join(tmp, "o.npy"))
            m = metrics(o, ref)
            rows.append({"shape": list(cfg), "mode": mode, "variant": name, **m,
                         "published": dict(zip(("cos_sim", "max_diff", "mean_diff"),
                                               PUBLISHED[cfg][MODES.index(mode)])),
                         "command": " ".join(cmd)})
            print(f"{cfg} {mode:10s} {name:11s} cos {m['cos_sim']:.5f} max {m['max_diff']:.4f} "
                  f"mean {m['mean_diff']:.5f}  published {PUBLISHED[cfg][MODES.index(mode)]}",
                  flush=True)
    return rows, " ".join(ref_cmd), time.time() - t0


def printed(x, digits=4):
    """The published cell's rounding: the value as the table prints it (4 decimals)."""
    return f"{x:.{digits}f}"


def write(out, rows, meta):
    lines = ["| shape (b, s, h, d) | mode | fa4sim variant | cos_sim | max_diff | mean_diff | "
             "published cos / max / mean | printed digits equal (cos, max, mean) |",
             "|---|---|---|---:|---:|---:|---|---|"]
    for r in rows:
        p = r["published"]
        eq = ", ".join("yes" if printed(r[k]) == printed(p[k]) else "no"
                       for k in ("cos_sim", "max_diff", "mean_diff"))
        lines.append(f"| {tuple(r['shape'])} | {r['mode']} | {r['variant']} | {r['cos_sim']:.5f} | "
                     f"{r['max_diff']:.4f} | {r['mean_diff']:.5f} | {p['cos_sim']:.4f} / "
                     f"{p['max_diff']:.4f} / {p['mean_diff']:.4f} | {eq} |")
    lines += ["", "Provenance: " + json.dumps(meta)]
    write_outputs(out, {"provenance": meta, "rows": rows}, lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fa4sim", default="build/fa4sim")
    ap.add_argument("--out", required=True, help="output prefix: OUT.json and OUT.md")
    ap.add_argument("--shapes", default="1x256x16x128,1x1024x16x128",
                    help="comma-separated BxSxHxD of the benchmark's list")
    ap.add_argument("--variant", default="", help="comma list of: " + ", ".join(VARIANTS))
    ap.add_argument("--flip-uncertain", type=float, default=0.0, metavar="REL",
                    help="round the draws within REL (of their binade) of a bf16 boundary the other way")
    a = ap.parse_args()
    wanted = [tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",")]
    for w in wanted:
        if w not in PUBLISHED:
            sys.exit(f"pr2582_exact: --shapes: {w} is not a shape of the PR's table with a published row here")
    variants = [v for v in a.variant.split(",") if v]
    for v in variants:
        if v not in VARIANTS:
            sys.exit(f"pr2582_exact: --variant: unknown {v} ({', '.join(VARIANTS)})")
    meta = provenance(a.fa4sim)
    meta["inputs"] = ("torch.manual_seed(0); torch.randn on a B200 (148 SMs, 2048 threads/SM) "
                      "recomputed by scripts/datagen/torch_cuda_randn.py, rounded to bf16")
    rows, refs = [], {}
    qkv_all = draws(wanted)
    with tempfile.TemporaryDirectory() as tmp:
        for cfg in wanted:
            qkv = qkv_all[cfg]
            meta.setdefault("uncertain_bf16_draws", {})[str(cfg)] = [trandn.uncertain_bf16(x) for x in qkv]
            if a.flip_uncertain > 0:
                flipped = [flip_uncertain(x, a.flip_uncertain) for x in qkv]
                qkv = [f[0] for f in flipped]
                meta.setdefault("flipped_draws", {})[str(cfg)] = [f[1] for f in flipped]
            r, ref_cmd, secs = one_config(a.fa4sim, tmp, cfg, [x.astype(np.float32) for x in qkv], variants)
            rows += r
            refs[str(cfg)] = {"reference_command": ref_cmd, "seconds": round(secs, 1)}
            meta["references"] = refs
            write(a.out, rows, meta)


if __name__ == "__main__":
    main()
