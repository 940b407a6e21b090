#!/usr/bin/env python3
"""Pools several scripts/bench/bench_exp2.sh reports (each: 5 interleaved fa4sim/NumPy runs of the seed
job) into one series file: every invocation's medians and ratio, and the medians over all runs.
NumPy's time on the shared 2-core machine swings about 2x between invocations minutes apart, so
one invocation's ratio says little; the series shows the spread.
Usage: scripts/bench/bench_series.py OUT.json BENCH.json [BENCH.json ...]
"""
import datetime
import json
import os
import statistics
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: bench_series.py OUT.json BENCH.json [BENCH.json ...]")
    out, files = sys.argv[1], sys.argv[2:]
    runs, fa, np_ = [], [], []
    for f in files:
        r = json.load(open(f))
        s = r["seed_job"]
        fa += s["fa4sim_analysis_s"]
        np_ += s["numpy_analysis_s"]
        runs.append({"date": r["provenance"]["date"], "git": r["provenance"]["git"],
                     "loadavg_before": r["provenance"]["loadavg_before"],
                     "fa4sim_median_s": statistics.median(s["fa4sim_analysis_s"]),
                     "numpy_median_s": statistics.median(s["numpy_analysis_s"]),
                     "ratio_analysis": s["ratio_analysis"],
                     "exhaustive_median_wall_s": (r["exhaustive"] or {}).get("median_wall_s"),
                     "report": r})
    med = statistics.median
    series = {
        "schema": "fa4sim/bench-series-v1",
        "benchmark": "exp2 seed job (4194304 samples x degrees 3,4,5), fa4sim vs NumPy",
        "command": "scripts/bench/bench_exp2.sh BUILD 5 per invocation (OUT=... EXHAUSTIVE_RUNS=0 for the "
                   "seed job alone); scripts/bench/bench_series.py OUT.json BENCH.json...",
        "invocations": runs,
        "pooled": {"pairs": len(fa), "fa4sim_median_s": med(fa), "numpy_median_s": med(np_),
                   "ratio_of_medians": med(np_) / med(fa),
                   "ratio_per_invocation": [r["ratio_analysis"] for r in runs],
                   "median_of_invocation_ratios": med([r["ratio_analysis"] for r in runs]),
                   "fa4sim_range_s": [min(fa), max(fa)], "numpy_range_s": [min(np_), max(np_)],
                   "target_ratio": 100.0},
        "written": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    tmp = out + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(series, fh, indent=2)
    os.replace(tmp, out)
    p = series["pooled"]
    print(f"{len(files)} invocations, {p['pairs']} run pairs: fa4sim median {p['fa4sim_median_s'] * 1e3:.2f} ms, "
          f"NumPy median {p['numpy_median_s']:.3f} s, ratio {p['ratio_of_medians']:.0f}x; per invocation "
          + ", ".join(f"{r:.0f}x" for r in p["ratio_per_invocation"]))


if __name__ == "__main__":
    main()
