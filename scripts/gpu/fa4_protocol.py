#!/usr/bin/env python3
"""fa4_protocol.py: speed of upstream FlashAttention-4's sm90 forward measured so that a few per
cent mean something (the measurement protocol of docs/schedule.md).

For each shape of a plan, every kind (SDPA cuDNN, stock upstream, upstream with FA4's softmax
tricks from scripts/drivers/fa4_tricks.py, upstream with another tile) is compiled and run once, then timed
in R interleaved rounds: the kinds in a rotated order each round (reversed every other round), each
kind a batch of N back-to-back launches with an event after each (one untimed launch first, so the
host's enqueue time hides behind the GPU's work). After each round the SM clock, power and
temperature are read with nvidia-smi. A kind's figure is the median over its rounds' medians; its
spread is (max - min) / median of the round medians. Each batch's wall-clock start and end are kept
(round_wall) so that a clock log taken beside the run (scripts/gpu/schedule_device.sh runs nvidia-smi
every 20 ms) gives the SM clock under load for each batch.

  fa4_protocol.py --plan PLAN.json --plan-name NAME [--rounds R] [--iters N] --out FILE.jsonl

PLAN.json: {"NAME": [{"shape": {batch, heads, heads_kv?, seq, head_dim, causal, dtype?},
                      "kinds": [{"kind": "cudnn"} | {"kind": "stock"} |
                                {"kind": "variant", "tricks": {tau, emu_eighths, degree?}} |
                                {"kind": "tile", "tile": [m, n], "tricks": {...}?}]}]}
Writes one JSON object per line (the environment first, then one line per shape), so that a run
stopped early keeps what it measured. Needs torch with a CUDA device and upstream installed
(scripts/gpu/upstream_install.sh). Exit codes as fa4_upstream.py: 0 ok, 3 no CUDA device, 4 no upstream.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "drivers"))
import fa4_upstream as fu  # noqa: E402


def smi_sample():
    q = "clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active"
    try:
        r = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=20)
        f = [x.strip() for x in r.stdout.strip().splitlines()[0].split(",")]
        return {"sm_mhz": float(f[0]), "power_w": float(f[1]), "temp_c": float(f[2]), "reasons": f[3]}
    except Exception as e:  # noqa: BLE001
        return {"error": str(e)[:200]}


def flops_of(s):
    return 4.0 * s["batch"] * s["heads"] * s["seq"] ** 2 * s["head_dim"] / (2 if s["causal"] else 1)


def kind_name(k):
    if k["kind"] in ("cudnn", "stock"):
        return k["kind"]
    t = k.get("tricks") or {}
    name = f"tau{t.get('tau', 0):g}_emu{t.get('emu_eighths', 0)}" if t else "stock"
    if k["kind"] == "tile":
        name = f"tile{k['tile'][0]}x{k['tile'][1]}_" + name
    return name


def make_callable(shape, k):
    """A zero-argument function that launches the kind once on fixed random inputs."""
    import torch
    import torch.nn.functional as F
    from flash_attn.cute import interface as fi
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[shape.get("dtype", "bf16")]
    g = torch.Generator(device="cuda").manual_seed(1)
    b, h, s, d = shape["batch"], shape["heads"], shape["seq"], shape["head_dim"]
    hk = shape.get("heads_kv", h)
    causal = shape["causal"]
    if k["kind"] == "cudnn":
        from torch.nn.attention import SDPBackend, sdpa_kernel
        q = torch.randn((b, h, s, d), device="cuda", dtype=dt, generator=g)
        kk, v = (torch.randn((b, hk, s, d), device="cuda", dtype=dt, generator=g) for _ in range(2))

        def run():
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                F.scaled_dot_product_attention(q, kk, v, is_causal=causal, enable_gqa=hk != h)
        return run
    q = torch.randn((b, s, h, d), device="cuda", dtype=dt, generator=g)
    kk, v = (torch.randn((b, s, hk, d), device="cuda", dtype=dt, generator=g) for _ in range(2))
    tricks = k.get("tricks") if k["kind"] in ("variant", "tile") else None
    tile = tuple(k["tile"]) if k["kind"] == "tile" else None

    def run():
        fu.select_variant(tricks)
        if tile is None:
            fi.flash_attn_func(q, kk, v, causal=causal)
        else:
            fi._flash_attn_fwd(q, kk, v, causal=causal, tile_mn=tile)
    return run


def time_batch(fn, iters):
    import torch
    fn()
    torch.cuda.synchronize()
    evs = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
    t0 = time.perf_counter()
    evs[0].record()
    for i in range(iters):
        fn()
        evs[i + 1].record()
    host_ms = (time.perf_counter() - t0) * 1e3 / iters
    torch.cuda.synchronize()
    return [evs[i].elapsed_time(evs[i + 1]) for i in range(iters)], host_ms


def measure_shape(entry, rounds, iters):
    import torch
    shape = entry["shape"]
    row = {"shape": shape, "flops": flops_of(shape), "kinds": {}, "clocks": []}
    runs = []
    for k in entry["kinds"]:
        name = kind_name(k)
        try:
            fn = make_callable(shape, k)
            t0 = time.time()
            fn()
            torch.cuda.synchronize()
            row["kinds"][name] = {"spec": k, "compile_s": time.time() - t0, "round_ms": [], "host_ms": []}
            runs.append((name, fn))
        except Exception as e:  # noqa: BLE001
            row["kinds"][name] = {"spec": k, "error": (type(e).__name__ + ": " + str(e)).splitlines()[0][:300]}
        torch.cuda.empty_cache()
    if runs:  # about a second of the first kind, so that clocks and temperature settle first
        t_end = time.time() + 1.0
        while time.time() < t_end:
            runs[0][1]()
        torch.cuda.synchronize()
    for r in range(rounds):
        order = runs[r % len(runs):] + runs[:r % len(runs)] if runs else []
        if r % 2:
            order = order[::-1]
        for name, fn in order:
            t0 = time.time()
            ms, host = time_batch(fn, iters)
            row["kinds"][name]["round_ms"].append(statistics.median(ms))
            row["kinds"][name]["host_ms"].append(host)
            row["kinds"][name].setdefault("round_wall", []).append([t0, time.time()])
        row["clocks"].append(smi_sample())
    for name, kd in row["kinds"].items():
        if kd.get("round_ms"):
            rm = kd["round_ms"]
            med = statistics.median(rm)
            kd["ms"] = med
            kd["tflops"] = row["flops"] / (med * 1e-3) / 1e12
            kd["spread"] = (max(rm) - min(rm)) / med
            kd["host_bound"] = statistics.median(kd["host_ms"]) >= 0.8 * med
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", required=True)
    ap.add_argument("--plan-name", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=1e9, help="stop starting new shapes after this")
    a = ap.parse_args()
    env = fu.environment()
    fu.require(env)
    with open(a.plan) as f:
        plan = json.load(f)[a.plan_name]
    start = time.time()
    with open(a.out, "a") as out:
        out.write(json.dumps({"env": env, "plan": a.plan_name, "rounds": a.rounds, "iters": a.iters,
                              "start_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                              "smi": smi_sample()}) + "\n")
        out.flush()
        for entry in plan:
            if time.time() - start > a.budget_s:
                sys.stderr.write(f"protocol: budget reached, {entry['shape']} not measured\n")
                continue
            row = measure_shape(entry, a.rounds, a.iters)
            out.write(json.dumps(row) + "\n")
            out.flush()
            s = row["shape"]
            line = " ".join(f"{n}={kd['tflops']:.1f}(±{100 * kd['spread']:.1f}%)" if "tflops" in kd
                            else f"{n}=ERR" for n, kd in row["kinds"].items())
            sys.stderr.write(f"[{time.time() - start:5.0f}s] d{s['head_dim']} c{int(s['causal'])} "
                             f"B{s['batch']} H{s['heads']}/{s.get('heads_kv', s['heads'])} S{s['seq']}: {line}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
