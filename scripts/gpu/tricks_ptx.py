#!/usr/bin/env python3
"""tricks_ptx.py: the PTX upstream's sm90 forward compiles to, for one (shape, kind), kept for ptxas.

Launches the kind once (scripts/gpu/fa4_protocol.py make_callable) with the CuTe DSL told to keep
its PTX (CUTE_DSL_KEEP_PTX=1, CUTE_DSL_DUMP_DIR) and a fresh kernel cache, so that the PTX of
exactly this kernel lands in --out. scripts/gpu/tricks_ptx.sh runs it per (shape, kind) and
assembles each PTX with `ptxas -v` (registers, spills, and ptxas's warnings such as serialised
wgmma) to look at why tau with emulated exps costs more above d 128 (docs/schedule.md, round 7).

  python3 scripts/gpu/tricks_ptx.py --out DIR --d 184 --seq 4096 --batch 4 --heads 16 --kind tau8_emu2
"""
import argparse
import os
import sys
import tempfile


def parse_kind(name):
    """'stock' or 'tau<T>_emu<E>' (E eighths emulated, degree 3) as a plan kind."""
    if name == "stock":
        return {"kind": "stock"}
    try:
        tau, emu = name[3:].split("_emu")
        return {"kind": "variant", "tricks": {"tau": float(tau), "emu_eighths": int(emu), "degree": 3}}
    except ValueError:
        print(f"tricks_ptx: error: kind '{name}' is not 'stock' or 'tau<T>_emu<E>' (e.g. tau8_emu2)",
              file=sys.stderr)
        sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--d", type=int, required=True)
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--causal", type=int, default=0)
    ap.add_argument("--kind", default="stock")
    a = ap.parse_args()
    kind = parse_kind(a.kind)
    os.makedirs(a.out, exist_ok=True)
    os.environ["CUTE_DSL_KEEP_PTX"] = "1"
    os.environ["CUTE_DSL_DUMP_DIR"] = os.path.abspath(a.out)
    os.environ["CUTE_DSL_CACHE_DIR"] = tempfile.mkdtemp(prefix="fa4sim-cute-cache-")
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    sys.path.insert(1, os.path.join(os.path.dirname(here), "drivers"))
    import fa4_protocol as fp  # noqa: E402  (after the environment: the DSL reads it at import)
    import torch
    shape = {"batch": a.batch, "heads": a.heads, "seq": a.seq, "head_dim": a.d, "causal": bool(a.causal),
             "dtype": "bf16"}
    fp.make_callable(shape, kind)()
    torch.cuda.synchronize()
    print(f"tricks_ptx: {a.kind} d {a.d}: {sorted(os.listdir(a.out))}")


if __name__ == "__main__":
    main()
