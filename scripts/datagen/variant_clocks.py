#!/usr/bin/env python3
"""variant_clocks.py: the SM clock each tricks variant ran at in the timed protocol runs, against the
stock kernel on the same shape (docs/schedule.md "Round 12").

For every folder of data/gpu/schedule with a clock log (clocks.csv, nvidia-smi every ~20 ms) and
protocol runs (<plan>.jsonl): per shape and kind the median of the samples taken while that kind's
rounds ran (round_wall), then the change against stock's; printed as the median and mean change per
head-dim group (up to 64, 96, 128, 192, 256), mask and kind. Kinds with fewer than 8 samples are left
out.

  python3 scripts/datagen/variant_clocks.py [--root data/gpu/schedule]
"""
import argparse
import bisect
import collections
import glob
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from schedule_fit import ROOT, load_clock_log  # noqa: E402

GROUPS = (64, 96, 128, 192, 256)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.join(ROOT, "data", "gpu", "schedule"))
    a = ap.parse_args()
    if not os.path.isdir(a.root):
        print(f"variant_clocks: error: no folder {a.root} (give --root the data/gpu/schedule folder)", file=sys.stderr)
        sys.exit(2)
    change = collections.defaultdict(list)
    for folder in sorted(glob.glob(os.path.join(a.root, "*"))):
        log = load_clock_log(os.path.join(folder, "clocks.csv"))
        if log is None:
            continue
        ts, mhz = log
        for path in glob.glob(os.path.join(folder, "*.jsonl")):
            if os.path.basename(path).startswith("ncu"):
                continue
            for line in open(path):
                r = json.loads(line)
                if "shape" not in r or "kinds" not in r:
                    continue
                med = {}
                for kind, v in r["kinds"].items():
                    vals = []
                    for t0, t1 in v.get("round_wall", []):
                        vals += mhz[bisect.bisect_left(ts, t0):bisect.bisect_right(ts, t1)]
                    if len(vals) >= 8:
                        med[kind] = statistics.median(vals)
                if "stock" not in med:
                    continue
                s = r["shape"]
                group = next(g for g in GROUPS if s["head_dim"] <= g)
                for kind, m in med.items():
                    if kind not in ("stock", "cudnn"):
                        change[(group, "causal" if s["causal"] else "no mask", kind)].append(m / med["stock"] - 1)
    print("head dim <= | mask | kind | shapes | median clock change vs stock | mean")
    for key in sorted(change):
        v = change[key]
        print(f"{key[0]:3d} | {key[1]} | {key[2]} | {len(v)} | {100 * statistics.median(v):+.1f} % | "
              f"{100 * statistics.mean(v):+.1f} %")


if __name__ == "__main__":
    main()
