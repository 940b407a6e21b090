#!/usr/bin/env python3
"""ncu_tensor_active.py: what each tricks variant changes in Nsight Compute's counts of upstream FA4's
sm90 forward, against the stock kernel on the same shape (docs/schedule.md "Round 13").

For every plan with an Nsight Compute cycles file (scripts/gpu/schedule_ncu.sh, the newest folder of
data/gpu/schedule holding ncu_<plan>.csv, as schedule_fit.py reads them): per shape and kind the SM
cycles (gpc__cycles_elapsed.max), the cycles the tensor pipe was active (that times
sm__pipe_tensor_op_hmma_cycles_active's share), the FMA pipe's share and the warp instructions; then
the change of each against stock's. Printed per head dim (64, 96, 128, 160, 192, 224, 256; the others
grouped as "other"), mask and kind as medians; --json writes the same table.

  python3 scripts/datagen/ncu_tensor_active.py [--json data/schedule/ncu_tensor_active.json]
"""
import argparse
import collections
import datetime
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mufu_table import write_atomic  # noqa: E402
from schedule_fit import NCU, PLANS, ROOT, ncu_number, newest_holding, read_ncu_table  # noqa: E402

DIMS = (64, 96, 128, 160, 192, 224, 256)


def plan_counts(plan):
    """{(shape json, kind): counts} of the plan's newest Nsight Compute cycles file, or None."""
    folder = newest_holding(NCU, f"ncu_{plan}.csv")
    path = os.path.join(folder, f"ncu_{plan}.csv")
    if not os.path.exists(path):
        return None, None
    out = {}
    for o, m in read_ncu_table(folder, plan):
        cycles = ncu_number(m["gpc__cycles_elapsed.max"])
        tensor = ncu_number(m["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"]) / 100
        out[(json.dumps(o["shape"], sort_keys=True), o["kind"])] = {
            "cycles": cycles, "tensor_cycles": cycles * tensor, "tensor_share": tensor,
            "fma_share": ncu_number(m["sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active"]) / 100,
            "instructions": ncu_number(m["smsp__inst_executed.sum"])}
    return out, os.path.relpath(path, ROOT)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="also write the table here (atomically)")
    a = ap.parse_args()
    groups = collections.defaultdict(list)
    sources = []
    for plan in PLANS:
        counts, path = plan_counts(plan)
        if counts is None:
            continue
        sources.append(path)
        for (shape, kind), c in counts.items():
            stock = counts.get((shape, "stock"))
            if kind == "stock" or stock is None or not kind.startswith("tau"):
                continue
            s = json.loads(shape)
            d = s["head_dim"] if s["head_dim"] in DIMS else "other"
            groups[(kind, d, bool(s["causal"]))].append({
                "cycles": c["cycles"] / stock["cycles"] - 1,
                "tensor_cycles": c["tensor_cycles"] / stock["tensor_cycles"] - 1,
                "tensor_share": c["tensor_share"], "stock_tensor_share": stock["tensor_share"],
                "fma_share": c["fma_share"], "stock_fma_share": stock["fma_share"],
                "instructions": c["instructions"] / stock["instructions"] - 1})
    if not groups:
        print(f"ncu_tensor_active: error: no Nsight Compute cycles file under {NCU}'s folder "
              "(run scripts/gpu/schedule_ncu.sh first)", file=sys.stderr)
        sys.exit(2)
    rows = []
    print("kind | head dim | mask | shapes | cycles | tensor-active cycles | tensor share (stock) | "
          "FMA share (stock) | instructions")
    for (kind, d, causal) in sorted(groups, key=lambda k: (k[0], str(k[1]), k[2])):
        v = groups[(kind, d, causal)]
        med = {k: statistics.median(x[k] for x in v) for k in v[0]}
        rows.append({"kind": kind, "head_dim": d, "causal": causal, "shapes": len(v),
                     **{k: round(x, 4) for k, x in med.items()}})
        print(f"{kind} | {d} | {'causal' if causal else 'no mask'} | {len(v)} | {100 * med['cycles']:+.1f} % | "
              f"{100 * med['tensor_cycles']:+.1f} % | {100 * med['tensor_share']:.1f} % "
              f"({100 * med['stock_tensor_share']:.1f} %) | {100 * med['fma_share']:.1f} % "
              f"({100 * med['stock_fma_share']:.1f} %) | {100 * med['instructions']:+.1f} %")
    if a.json:
        doc = {"schema": "fa4sim/ncu-tensor-active-v1",
               "what": "change of each tricks variant against stock on the same shape, medians per "
                       "kind, head dim and mask, from Nsight Compute's counts of upstream FA4's sm90 forward",
               "command": "python3 scripts/datagen/ncu_tensor_active.py --json " + a.json,
               "date": datetime.date.today().isoformat(), "sources": sources, "rows": rows}
        write_atomic(a.json, (json.dumps(doc, indent=1) + "\n").encode())


if __name__ == "__main__":
    main()
