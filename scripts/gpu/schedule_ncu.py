#!/usr/bin/env python3
"""schedule_ncu.py: one profiled launch per (shape, kind) of a plan, for Nsight Compute.

For each entry of a plan in scripts/gpu/fa4_protocol.py's format, every kind but cuDNN is launched once to compile
and warm up, then once more between torch.cuda.profiler.start() and stop(); run it under
`ncu --profile-from-start off` so that exactly the second launches are profiled, in plan order.
The order is printed to stdout as JSON lines ({"index": i, "shape": ..., "kind": ...}) so that
scripts/datagen/schedule_fit.py can pair ncu's rows with them.

  ncu --profile-from-start off ... python3 scripts/gpu/schedule_ncu.py --plan PLAN.json --plan-name NAME
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # fa4_protocol
sys.path.insert(1, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "drivers"))
import fa4_protocol as fp  # noqa: E402
import fa4_upstream as fu  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", required=True)
    ap.add_argument("--plan-name", required=True)
    ap.add_argument("--budget-s", type=float, default=1e9, help="start no new shape after this many seconds")
    a = ap.parse_args()
    env = fu.environment()
    fu.require(env)
    import torch
    with open(a.plan) as f:
        plan = json.load(f)[a.plan_name]
    print(json.dumps({"env": env}), flush=True)
    index = 0
    start = time.time()
    for entry in plan:
        if time.time() - start > a.budget_s:
            sys.stderr.write(f"schedule_ncu: budget reached, {entry['shape']} not profiled\n")
            continue
        for k in entry["kinds"]:
            if k["kind"] == "cudnn":  # not upstream's kernel (the ncu filter would skip it anyway)
                continue
            fn = fp.make_callable(entry["shape"], k)
            fn()
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            fn()
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
            print(json.dumps({"index": index, "shape": entry["shape"], "kind": fp.kind_name(k)}), flush=True)
            index += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
