#!/usr/bin/env python3
"""Times torch SDPA's flash and cuDNN backends, and upstream FlashAttention-4 (flash-attn-4's
flash_attn_func, when it is installed: scripts/gpu/upstream_install.sh), on the shapes
`fa4sim gpu attention --bench` gives.

Input: --shapes '[{"batch":4,"heads":32,"seq":4096,"head_dim":128,"causal":false,"dtype":"bf16"}]'
Output (last line of stdout): a JSON array, one object per shape, with flash_ms/flash_tflops and
cudnn_ms/cudnn_tflops and fa4_ms/fa4_tflops (median of CUDA-event timings of single calls, after
warm-up), or <backend>_error when a backend refuses the shape or is missing. FLOPs: 4*B*H*S^2*d, halved when causal.
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", required=True)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    try:
        import torch
        from torch.nn.attention import SDPBackend, sdpa_kernel
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001
        print(json.dumps({"error": f"torch not importable: {e}"}))
        return 0
    if not torch.cuda.is_available():
        print(json.dumps({"error": "torch sees no CUDA device"}))
        return 0
    out = []
    for s in json.loads(a.shapes):
        dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[s.get("dtype", "bf16")]
        g = torch.Generator(device="cuda").manual_seed(1)
        shp = (s["batch"], s["heads"], s["seq"], s["head_dim"])
        q, k, v = (torch.randn(shp, device="cuda", dtype=dt, generator=g) for _ in range(3))
        flops = 4.0 * s["batch"] * s["heads"] * s["seq"] ** 2 * s["head_dim"] / (2 if s["causal"] else 1)
        row = dict(s)
        row["torch"] = torch.__version__
        for name, be in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            try:
                with sdpa_kernel([be]):
                    times = []
                    for i in range(a.warmup + a.iters):
                        e0 = torch.cuda.Event(enable_timing=True)
                        e1 = torch.cuda.Event(enable_timing=True)
                        e0.record()
                        F.scaled_dot_product_attention(q, k, v, is_causal=s["causal"])
                        e1.record()
                        torch.cuda.synchronize()
                        if i >= a.warmup:
                            times.append(e0.elapsed_time(e1))
                ms = statistics.median(times)
                row[f"{name}_ms"] = ms
                row[f"{name}_tflops"] = flops / (ms * 1e-3) / 1e12
            except Exception as e:  # noqa: BLE001
                row[f"{name}_error"] = str(e).splitlines()[0][:200]
        try:
            from fa4_upstream import time_upstream, versions
            ms = time_upstream(s, a.warmup, a.iters)
            row["fa4_ms"] = ms
            row["fa4_tflops"] = flops / (ms * 1e-3) / 1e12
            row["fa4_version"] = versions().get("flash-attn-4")
        except Exception as e:  # noqa: BLE001
            row["fa4_error"] = (type(e).__name__ + ": " + str(e)).splitlines()[0][:200]
        out.append(row)
    print()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
