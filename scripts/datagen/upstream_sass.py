#!/usr/bin/env python3
"""upstream_sass.py: where ptxas puts the PV GEMM's wait inside upstream FA4's sm90 softmax, per head
dim and tricks variant, read from the SASS of the compiled kernel; no GPU needed.

Each (d, kind) is compiled for sm_90a under torch's FakeTensorMode (upstream's own way to fill its
cache without a GPU: flash_attn/cute/testing.py maybe_fake_tensor_mode; FLASH_ATTENTION_ARCH=sm_90,
CUTE_DSL_ARCH=sm_90a, FLASH_ATTENTION_NUM_SMS=132) with the CuTe DSL keeping its PTX, in a fresh
process and kernel cache; the PTX is assembled with `ptxas -v` (registers, spills, warnings) and
disassembled with cuobjdump. In the main loop (the smallest loop that issues both GEMMs' HGMMAs) it
counts the instructions between the wait for S (WARPGROUP.DEPBAR.LE gsb0, 0x1) and the wait for
O += PV (gsb0, 0x0), and after the latter: what of the softmax overlaps the PV GEMM and what waits
for it (docs/schedule.md, round 7).

Needs a Python with torch (CPU is enough) and flash-attn-4 + nvidia-cutlass-dsl importable after
site.addsitedir(--site), a ptxas that reads the DSL's PTX (CUDA 13.4 for cutlass-dsl 4.8.1) and
cuobjdump with nvdisasm (NVDISASM_PATH). How data/schedule/upstream_sass.json was made (2-core VM, no
GPU, 2026-12-02): `pip install --no-deps --target SITE` of flash-attn-4 4.0.0b36, nvidia-cutlass-dsl
(+ -libs-base, -libs-core, -libs-cu13) 4.8.1, apache-tvm-ffi 0.1.15.post2, quack-kernels 0.6.5 and
einops for the torch Python (3.11, torch 2.15 CPU use only); ptxas from the nvidia-cuda-nvcc 13.4.92
wheel, cuobjdump from nvidia-cuda-cuobjdump 13.4, nvdisasm from triton's bundled CUDA 12.9 tools.
Usage:
  python3 scripts/datagen/upstream_sass.py --python PY --site DIR --ptxas PTXAS --cuobjdump CUOBJDUMP \
      --dims 128,184 --kinds stock,tau8_emu2 [--causal 0,1] [--jobs 2] --out data/schedule/upstream_sass.json
"""
import argparse
import collections
import concurrent.futures
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile

from mufu_table import write_atomic  # same folder

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "scripts", "gpu"))
from sass_mix import parse as parse_sass  # noqa: E402

GEN = r'''
import os, sys, site, tempfile
site.addsitedir(sys.argv[1]); out, d, kind, causal = sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[6] == "1"
os.environ.update(FLASH_ATTENTION_NUM_SMS="132", FLASH_ATTENTION_ARCH="sm_90", CUTE_DSL_ARCH="sm_90a",
                  CUTE_DSL_KEEP_PTX="1", CUTE_DSL_DUMP_DIR=out, CUTE_DSL_CACHE_DIR=tempfile.mkdtemp())
sys.path.insert(0, sys.argv[5])
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
import fa4_upstream as fu
from flash_attn.cute import interface as fi
tricks = None
if kind != "stock":
    tau, emu = kind[3:].split("_emu")
    tricks = {"tau": float(tau), "emu_eighths": int(emu), "degree": 3}
with FakeTensorMode():
    q, k, v = (torch.empty((4, 4096, 16, d), device="cuda", dtype=torch.bfloat16) for _ in range(3))
    fu.select_variant(tricks)
    fi.flash_attn_func(q, k, v, causal=causal)
'''
KIND = re.compile(r"^(stock|tau\d+(\.\d+)?_emu[0-8])$")


def sass_instructions(path):
    """(address, opcode with its HGMMA shape, operands) of every instruction of a cuobjdump -sass
    listing, read by scripts/gpu/sass_mix.py's parser."""
    return [(a, op + args.split()[0] if op.startswith("HGMMA") else op, args)
            for insns in parse_sass(path).values() for a, op, args in insns]


def main_loop(ins):
    """The smallest backward-branch loop that issues both GEMMs (two WARPGROUP.ARRIVE, HGMMAs) and
    waits for each (WARPGROUP.DEPBAR.LE gsb0, 0x1 and 0x0)."""
    best = None
    for addr, op, rest in ins:
        t = re.search(r"0x([0-9a-f]+)", rest) if op.startswith("BRA") else None
        if t and int(t.group(1), 16) < addr:
            body = [x for x in ins if int(t.group(1), 16) <= x[0] <= addr]
            arrives = sum(x[1] == "WARPGROUP.ARRIVE" for x in body)
            waits = {x[2].strip().split(",")[-1].strip() for x in body if x[1].startswith("WARPGROUP.DEPBAR")}
            if arrives >= 2 and {"0x1", "0x0"} <= waits and (best is None or len(body) < len(best)):
                best = body
    return best


def classify(op):
    for k in ("FFMA", "FADD", "FMUL", "FMNMX", "MUFU", "F2FP", "FSEL", "FSETP", "SHFL"):
        if op.startswith(k):
            return k
    return "other"


def analyse(sass_path):
    body = main_loop(sass_instructions(sass_path))
    if body is None:
        return {"error": "no loop issuing and waiting for both GEMMs found"}
    ops = [x[1] for x in body]
    waits = [i for i, x in enumerate(body) if x[1].startswith("WARPGROUP.DEPBAR")]
    w_s = next((i for i in waits if "0x1" in body[i][2]), None)
    w_o = next((i for i in waits if "0x0" in body[i][2] and (w_s is None or i > w_s)), None)
    if w_s is None or w_o is None:
        return {"error": "waits for S and O += PV not both found", "waits": [body[i][2].strip() for i in waits]}
    between = collections.Counter(classify(body[i][1]) for i in range(w_s + 1, w_o))
    after = collections.Counter(classify(body[i][1]) for i in range(w_o + 1, len(body)))
    math_ops = ("FFMA", "FADD", "FMUL", "FMNMX", "MUFU", "F2FP", "FSEL", "FSETP", "SHFL")
    n_between = sum(between[k] for k in math_ops)
    n_after = sum(after[k] for k in math_ops)
    # consumer_release of K's and V's shared-memory stage: the mbarrier arrives (SYNCS.ARRIVE) after
    # the wait for S and after the wait for O += PV, counted in instructions from that wait
    arrives = [i for i, o in enumerate(ops) if o.startswith("SYNCS.ARRIVE")]
    k_rel = next((i - w_s for i in arrives if w_s < i < w_o), None)
    v_rel = next((i - w_o for i in arrives if i > w_o), None)
    return {"loop_instructions": len(body), "hgmma": sum(o.startswith("HGMMA") for o in ops),
            "k_release_after_s_wait": k_rel, "s_wait_to_pv_wait": w_o - w_s,
            "v_release_after_pv_wait": v_rel, "pv_wait_to_loop_end": len(body) - 1 - w_o,
            "vote": sum(o.startswith("VOTE") for o in ops),
            "softmax_before_pv_wait": n_between, "softmax_after_pv_wait": n_after,
            "share_after_pv_wait": round(n_after / max(1, n_between + n_after), 4),
            "before_pv_wait": dict(between), "after_pv_wait": dict(after)}


def one(a, d, kind, causal, work):
    out = os.path.join(work, f"d{d}_{kind}_{'causal' if causal else 'full'}")
    os.makedirs(out, exist_ok=True)
    r = subprocess.run([a.python, "-c", GEN, a.site, out, str(d), kind, os.path.join(ROOT, "scripts", "drivers"),
                        "1" if causal else "0"],
                       capture_output=True, text=True)
    ptx = [f for f in os.listdir(out) if f.endswith(".ptx") and "flash_fwd_sm90" in f]
    if r.returncode != 0 or not ptx:
        return {"error": "compile failed: " + r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "no PTX"}
    cubin = os.path.join(out, "k.cubin")
    pr = subprocess.run([a.ptxas, "-arch=sm_90a", "-O3", "-v", os.path.join(out, ptx[0]), "-o", cubin],
                        capture_output=True, text=True)
    info = pr.stdout + pr.stderr
    regs = re.search(r"Used (\d+) registers", info)
    spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", info)
    warnings = [ln.strip() for ln in info.splitlines() if "warning" in ln.lower()]
    sass = os.path.join(out, "k.sass")
    with open(sass, "w") as f:
        subprocess.run([a.cuobjdump, "-sass", cubin], stdout=f, text=True)
    res = analyse(sass)
    res.update({"registers": int(regs.group(1)) if regs else None,
                "spill_store_bytes": int(spill.group(1)) if spill else None,
                "spill_load_bytes": int(spill.group(2)) if spill else None, "ptxas_warnings": warnings})
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", required=True, help="a Python with torch")
    ap.add_argument("--site", required=True, help="site dir holding flash-attn-4 and nvidia-cutlass-dsl")
    ap.add_argument("--ptxas", required=True)
    ap.add_argument("--cuobjdump", required=True)
    ap.add_argument("--dims", default="64,96,128,144,160,176,192,224,256")
    ap.add_argument("--kinds", default="stock,tau8_emu0,tau0_emu2,tau8_emu2")
    ap.add_argument("--causal", default="0", help="0 (no mask), 1 (causal) or 0,1 (both)")
    ap.add_argument("--jobs", type=int, default=1, help="compiles run at once")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    try:
        dims = [int(x) for x in a.dims.split(",")]
    except ValueError:
        print(f"upstream_sass: error: --dims '{a.dims}' is not a comma-separated list of head dims", file=sys.stderr)
        sys.exit(2)
    kinds = a.kinds.split(",")
    masks = a.causal.split(",")
    bad = ([k for k in kinds if not KIND.match(k)] + [f"--causal {m}" for m in masks if m not in ("0", "1")]
           + [str(d) for d in dims if d % 8 or not 8 <= d <= 256])
    if bad:
        print(f"upstream_sass: error: {', '.join(bad)} (kinds: stock or tau<T>_emu<E>; head dims: multiples of 8 up to 256; --causal: 0, 1 or 0,1)",
              file=sys.stderr)
        sys.exit(2)
    versions = subprocess.run([a.ptxas, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        todo = [(d, kind, m == "1") for m in masks for d in dims for kind in kinds]
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:  # each compile is its own process
            for (d, kind, causal), res in zip(todo, pool.map(lambda t: one(a, *t, work), todo)):
                r = dict(d=d, kind=kind, causal=causal, **res)
                rows.append(r)
                print(f"d {d:3d} {kind:10s} {'causal ' if causal else 'no mask'} regs {r.get('registers')} "
                      f"spills {r.get('spill_store_bytes')} softmax before/after the PV wait "
                      f"{r.get('softmax_before_pv_wait')}/{r.get('softmax_after_pv_wait')} {r.get('error', '')}", flush=True)
    report = {"schema": "fa4sim/upstream-sass-v1",
              "what": "upstream FA4 sm90 forward (flash-attn-4 4.0.0b36, nvidia-cutlass-dsl 4.8.1), B4 H16 S4096 "
                      "bf16, each row causal or not, compiled for sm_90a without a GPU; main-loop instructions between the "
                      "waits for S and for O += PV",
              "command": "python3 scripts/datagen/upstream_sass.py " + " ".join(sys.argv[1:]),
              "ptxas": versions[-1] if versions else None, "date": datetime.date.today().isoformat(),
              "machine": "the 2-core AMD EPYC VM, no GPU (compiled for sm_90a, nothing run)",
              "counted": "FFMA, FADD, FMUL, FMNMX, MUFU, F2FP, FSEL, FSETP, SHFL of the main loop between "
                         "WARPGROUP.DEPBAR.LE gsb0, 0x1 (S ready) and gsb0, 0x0 (O += PV done), and after the "
                         "latter to the loop's end (at d <= 128 that includes O's rescale FMULs and P's F2FP); "
                         "k_release_after_s_wait / v_release_after_pv_wait: instructions from the wait for S (for "
                         "O += PV) to the SYNCS.ARRIVE that frees K's (V's) shared-memory stage for the producer",
              "rows": rows}
    write_atomic(a.out, (json.dumps(report, indent=1) + "\n").encode())
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
