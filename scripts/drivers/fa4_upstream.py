#!/usr/bin/env python3
"""fa4_upstream.py: runs upstream FlashAttention-4 (the `flash-attn-4` package, CuTe DSL) for
`fa4sim gpu upstream` and `fa4sim gpu attention --bench`. fa4sim's C++ side calls it; it is also
usable by hand. Needs torch with a CUDA device and the pinned packages (scripts/gpu/upstream_fetch.sh
on a machine with PyPI, scripts/gpu/upstream_install.sh on the GPU machine).

Subcommands (each prints one JSON object on its first stdout line; exit codes below):
  info                       versions of the pinned packages, torch, the device; whether
                             `flash_attn.cute` imports
  exp2 --degree N            upstream's own `flash_attn.cute.utils.ex2_emulation(x, poly_degree=N)`
                             compiled by the CuTe DSL into a one-element-per-thread kernel, run on
                             every float32 bit pattern 0 .. 2^32-1 in order; after the JSON line,
                             the output bits follow as raw little-endian uint32 (16 GiB)
  forward --manifest M       upstream's `flash_attn.cute.interface.flash_attn_func` on the inputs
                             the manifest lists (raw uint16 bf16/fp16 bits, layout
                             [batch, heads, seq, d]); writes O (same layout and dtype) and LSE
                             ([batch, heads, seq], float32) next to them and a result object per run;
                             a run with "tricks" uses scripts/drivers/fa4_tricks.py's variant
  bench --shapes JSON        CUDA-event timings (median) of flash_attn_func on the shapes
  bench-tricks --shapes JSON --variants JSON
                             per shape, in one process: SDPA cuDNN, stock upstream, and upstream
                             with FA4's softmax tricks (scripts/drivers/fa4_tricks.py) per variant

Exit codes: 0 ok, 1 failure, 3 no CUDA device, 4 upstream not installed (the JSON says what is
missing), 5 upstream's own code failed to compile (the JSON has its message). Unsupported shapes are reported per run with upstream's own message.
"""
import argparse
import importlib.metadata
import json
import math
import os
import statistics
import subprocess
import sys
import time

# The pinned versions (scripts/gpu/upstream_fetch.sh downloads exactly these).
PINS = {
    "flash-attn-4": "4.0.0b36",
    "nvidia-cutlass-dsl": "4.8.1",
    "nvidia-cutlass-dsl-libs-base": "4.8.1",
    "nvidia-cutlass-dsl-libs-core": "4.8.1",
    "nvidia-cutlass-dsl-libs-cu13": "4.8.1",
    "apache-tvm-ffi": "0.1.15.post2",
    "torch-c-dlpack-ext": "0.1.5",
    "quack-kernels": "0.6.5",
}
INSTALL_HINT = ("run scripts/gpu/upstream_install.sh on the GPU machine "
                "(wheels from scripts/gpu/upstream_fetch.sh; README 'Upstream FA4')")
EXIT_NO_GPU, EXIT_NO_UPSTREAM = 3, 4


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def versions():
    out = {}
    for name in PINS:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def driver_version():
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=20)
        return r.stdout.strip().splitlines()[0] if r.returncode == 0 else None
    except Exception:  # noqa: BLE001
        return None


def environment():
    """Versions and device; never raises."""
    env = {"python": sys.version.split()[0], "packages": versions(), "pins": PINS}
    pinned = all(env["packages"][k] == v for k, v in PINS.items())
    env["pinned_versions_installed"] = pinned
    try:
        import torch
        env["torch"] = torch.__version__
        env["cuda_available"] = torch.cuda.is_available()
        if env["cuda_available"]:
            p = torch.cuda.get_device_properties(0)
            env["device"] = p.name
            env["compute_capability"] = f"{p.major}.{p.minor}"
            env["sms"] = p.multi_processor_count
            env["driver"] = driver_version()
            env["cuda_runtime"] = torch.version.cuda
    except Exception as e:  # noqa: BLE001
        env["torch"] = None
        env["torch_error"] = str(e).splitlines()[0][:200]
        env["cuda_available"] = False
    try:
        import flash_attn.cute.interface  # noqa: F401
        import flash_attn.cute.utils  # noqa: F401
        env["upstream_importable"] = True
    except Exception as e:  # noqa: BLE001
        env["upstream_importable"] = False
        env["upstream_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
    return env


def require(env):
    """Exit with the documented code when the GPU or upstream is missing."""
    if not env.get("cuda_available"):
        emit({"error": "no CUDA device visible to torch", "kind": "no_gpu", "env": env})
        sys.exit(EXIT_NO_GPU)
    if not env.get("upstream_importable"):
        missing = [k for k, v in env["packages"].items() if v is None]
        emit({"error": "upstream FlashAttention-4 is not importable: " + env.get("upstream_error", "") +
              (f" (missing: {', '.join(missing)})" if missing else ""),
              "kind": "no_upstream", "hint": INSTALL_HINT, "env": env})
        sys.exit(EXIT_NO_UPSTREAM)


# ---- exp2: upstream's ex2_emulation over every float32 bit pattern

def make_ex2_kernel(degree, n_per_chunk, threads=256):
    import cutlass.cute as cute
    from flash_attn.cute import utils as fa_utils

    blocks = n_per_chunk // threads

    @cute.kernel
    def ex2_kernel(gx: cute.Tensor, gy: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        i = bidx * threads + tidx
        gy[i] = fa_utils.ex2_emulation(gx[i], poly_degree=degree)

    @cute.jit
    def launch(gx: cute.Tensor, gy: cute.Tensor):
        ex2_kernel(gx, gy).launch(grid=(blocks, 1, 1), block=(threads, 1, 1))

    return launch


def cmd_exp2(a):
    env = environment()
    require(env)
    import torch
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack
    from flash_attn.cute import utils as fa_utils

    if a.degree not in fa_utils.POLY_EX2:
        emit({"error": f"degree {a.degree} is not in upstream's POLY_EX2 {sorted(fa_utils.POLY_EX2)}",
              "kind": "unsupported", "env": env})
        return 2
    n = 1 << a.chunk_log2
    total = 1 << a.total_log2
    dev = torch.device("cuda")
    x = torch.empty(n, dtype=torch.int32, device=dev)
    y = torch.empty(n, dtype=torch.float32, device=dev)
    host = [torch.empty(n, dtype=torch.int32, pin_memory=True) for _ in range(2)]
    ramp = torch.arange(n, dtype=torch.int64, device=dev)
    poly = fa_utils.POLY_EX2[a.degree]
    poly = list(poly) if isinstance(poly, (tuple, list)) else [poly]
    t0 = time.time()
    try:
        kern = cute.compile(make_ex2_kernel(a.degree, n), from_dlpack(x.view(torch.float32)), from_dlpack(y))
    except Exception as e:  # noqa: BLE001  (upstream's own code failed to build: report, don't hide)
        emit({"error": f"upstream's ex2_emulation(poly_degree={a.degree}) does not compile: "
              f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}",
              "kind": "upstream_compile", "poly": poly, "env": env})
        return 5
    compile_s = time.time() - t0
    emit({"ok": True, "degree": a.degree, "poly": poly,
          "inputs": total, "chunk": n, "compile_s": compile_s, "env": env,
          "kernel": "flash_attn.cute.utils.ex2_emulation (scalar), one element per thread"})
    out = sys.stdout.buffer
    gpu_s = 0.0
    for c in range(total // n):
        t1 = time.time()
        v = ramp + c * n
        v = torch.where(v >= (1 << 31), v - (1 << 32), v)  # the bit pattern as a signed int32
        x.copy_(v.to(torch.int32))
        kern(from_dlpack(x.view(torch.float32)), from_dlpack(y))
        h = host[c % 2]
        h.copy_(y.view(torch.int32))
        gpu_s += time.time() - t1
        out.write(h.numpy().data)
    out.flush()
    sys.stderr.write(f"fa4_upstream exp2: degree {a.degree}, {total} inputs, compile {compile_s:.1f} s, "
                     f"device+copy {gpu_s:.1f} s\n")
    return 0


# ---- forward: flash_attn_func on given inputs

def sm90_tile(head_dim, causal):
    """upstream's own (tile_m, tile_n) choice for this shape on sm90."""
    from flash_attn.cute import interface as fi
    cfg = fi._tile_size_fwd_sm90(head_dim, head_dim, causal, False)
    return cfg.m_block_size, cfg.n_block_size, bool(cfg.mma_pv_is_rs), bool(cfg.intra_wg_overlap)


def load_bits(path, shape, dtype):
    import numpy as np
    import torch
    a = np.fromfile(path, dtype=np.uint16)
    if a.size != math.prod(shape):
        raise ValueError(f"{path}: {a.size} elements, expected {math.prod(shape)}")
    t = torch.from_numpy(a.view(np.int16).reshape(shape)).view(dtype)
    return t


def cmd_forward(a):
    env = environment()
    require(env)
    import torch
    from flash_attn.cute.interface import flash_attn_func

    with open(a.manifest) as f:
        runs = json.load(f)
    results = []
    for r in runs:
        res = {"id": r["id"]}
        try:
            dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[r["dtype"]]
            b, hq, hk, sq, sk, d = (r[k] for k in ("batch", "heads_q", "heads_kv", "seq_q", "seq_k", "head_dim"))
            # fa4sim's layout [b, h, s, d] -> upstream's (b, s, h, d)
            q = load_bits(r["q"], (b, hq, sq, d), dt).permute(0, 2, 1, 3).contiguous().cuda()
            k = load_bits(r["k"], (b, hk, sk, d), dt).permute(0, 2, 1, 3).contiguous().cuda()
            v = load_bits(r["v"], (b, hk, sk, d), dt).permute(0, 2, 1, 3).contiguous().cuda()
            res["tile"] = list(sm90_tile(d, r["causal"]))
            res["variant"] = select_variant(r.get("tricks"))
            t0 = time.time()
            o, lse = flash_attn_func(q, k, v, softmax_scale=r.get("softmax_scale"), causal=r["causal"],
                                     return_lse=True)
            torch.cuda.synchronize()
            res["first_call_s"] = time.time() - t0
            o = o.permute(0, 2, 1, 3).contiguous().view(torch.int16).cpu().numpy()
            o.tofile(r["o"])
            lse.float().contiguous().cpu().numpy().tofile(r["lse"])
            res["o_dtype"] = str(o.dtype)
            res["ok"] = True
        except (AssertionError, NotImplementedError, ValueError, TypeError, RuntimeError) as e:
            res["ok"] = False
            res["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:400] if str(e) else ''}"
        results.append(res)
    emit({"ok": True, "env": env, "runs": results})
    return 0


def select_variant(tricks):
    """Stock upstream (None) or fa4_tricks' variant of its sm90 softmax; returns its name."""
    if tricks is None and "fa4_tricks" not in sys.modules:
        return "stock"
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import fa4_tricks
    return fa4_tricks.select(tricks) or "stock"


# ---- bench: timings next to torch SDPA (scripts/drivers/sdpa_bench.py calls time_upstream)

def time_upstream(shape, warmup, iters):
    """Median CUDA-event time (ms) of flash_attn_func on random inputs of `shape`."""
    import torch
    from flash_attn.cute.interface import flash_attn_func
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[shape.get("dtype", "bf16")]
    g = torch.Generator(device="cuda").manual_seed(1)
    shp = (shape["batch"], shape["seq"], shape["heads"], shape["head_dim"])
    q, k, v = (torch.randn(shp, device="cuda", dtype=dt, generator=g) for _ in range(3))
    times = []
    for i in range(warmup + iters):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        flash_attn_func(q, k, v, causal=shape["causal"])
        e1.record()
        torch.cuda.synchronize()
        if i >= warmup:
            times.append(e0.elapsed_time(e1))
    return statistics.median(times)


def time_sdpa_cudnn(shape, warmup, iters):
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[shape.get("dtype", "bf16")]
    g = torch.Generator(device="cuda").manual_seed(1)
    shp = (shape["batch"], shape["heads"], shape["seq"], shape["head_dim"])
    q, k, v = (torch.randn(shp, device="cuda", dtype=dt, generator=g) for _ in range(3))
    times = []
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        for i in range(warmup + iters):
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            e0.record()
            F.scaled_dot_product_attention(q, k, v, is_causal=shape["causal"])
            e1.record()
            torch.cuda.synchronize()
            if i >= warmup:
                times.append(e0.elapsed_time(e1))
    return statistics.median(times)


def cmd_bench_tricks(a):
    """Per shape: cuDNN, stock upstream, then each variant, timed in this order in one process."""
    env = environment()
    require(env)
    variants = json.loads(a.variants)
    out = []
    for s in json.loads(a.shapes):
        flops = 4.0 * s["batch"] * s["heads"] * s["seq"] ** 2 * s["head_dim"] / (2 if s["causal"] else 1)
        row = dict(s)
        row["timings"] = []
        todo = ([] if a.only_variants else [("cudnn", None), ("stock", None)]) + [("variant", v) for v in variants]
        for kind, v in todo:
            t = {"kind": kind, "tricks": v}
            try:
                if kind == "cudnn":
                    ms = time_sdpa_cudnn(s, a.warmup, a.iters)
                else:
                    t["variant"] = select_variant(v) if kind == "variant" else select_variant(None)
                    ms = time_upstream(s, a.warmup, a.iters)
                t["ms"] = ms
                t["tflops"] = flops / (ms * 1e-3) / 1e12
            except Exception as e:  # noqa: BLE001
                t["error"] = (type(e).__name__ + ": " + str(e)).splitlines()[0][:300]
            row["timings"].append(t)
            sys.stderr.write(f"bench-tricks d{s['head_dim']} causal {s['causal']} seq {s['seq']} {kind} {v}: "
                             f"{t.get('tflops', float('nan')):.1f} TFLOP/s {t.get('error', '')}\n")
        out.append(row)
    emit({"ok": True, "env": env, "rows": out})
    return 0


def cmd_bench(a):
    env = environment()
    require(env)
    out = []
    for s in json.loads(a.shapes):
        row = dict(s)
        flops = 4.0 * s["batch"] * s["heads"] * s["seq"] ** 2 * s["head_dim"] / (2 if s["causal"] else 1)
        try:
            ms = time_upstream(s, a.warmup, a.iters)
            row["fa4_ms"] = ms
            row["fa4_tflops"] = flops / (ms * 1e-3) / 1e12
        except Exception as e:  # noqa: BLE001
            row["fa4_error"] = str(e).splitlines()[0][:200]
        out.append(row)
    emit({"ok": True, "env": env, "rows": out})
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info")
    e = sub.add_parser("exp2")
    e.add_argument("--degree", type=int, required=True)
    e.add_argument("--chunk-log2", type=int, default=26)
    e.add_argument("--total-log2", type=int, default=32, help="inputs 0 .. 2^K-1 (32 = all)")
    f = sub.add_parser("forward")
    f.add_argument("--manifest", required=True)
    b = sub.add_parser("bench")
    b.add_argument("--shapes", required=True)
    b.add_argument("--warmup", type=int, default=5)
    b.add_argument("--iters", type=int, default=20)
    bt = sub.add_parser("bench-tricks")
    bt.add_argument("--shapes", required=True)
    bt.add_argument("--variants", required=True, help="JSON list of {tau, max_offset, emu_eighths, degree}")
    bt.add_argument("--warmup", type=int, default=5)
    bt.add_argument("--iters", type=int, default=20)
    bt.add_argument("--only-variants", action="store_true", help="skip cuDNN and stock (for ncu)")
    a = ap.parse_args()
    if a.cmd == "info":
        emit(environment())
        return 0
    if a.cmd == "exp2":
        if not (8 <= a.chunk_log2 <= a.total_log2 <= 32):
            emit({"error": "need 8 <= --chunk-log2 <= --total-log2 <= 32", "kind": "usage"})
            return 2
        return cmd_exp2(a)
    if a.cmd == "forward":
        return cmd_forward(a)
    if a.cmd == "bench-tricks":
        return cmd_bench_tricks(a)
    return cmd_bench(a)


if __name__ == "__main__":
    sys.exit(main())
