#!/usr/bin/env python3
"""bench_schedule.py: the schedule model's cost (issue target: under 10 ms per configuration).

Runs `fa4sim schedule --inputs` over every arch with a schedule model x d {64, 96, 128, 192, 256}
x causal or not x emulated fraction {0, 1/8, .., 1} (B2 H16 S8192) ROUNDS times and prints the
median wall time, the per-configuration time and the target's ratio.
  python3 scripts/bench/bench_schedule.py [--fa4sim build/fa4sim] [--rounds 7]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # scripts/<folder>/


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fa4sim", default=os.path.join(ROOT, "build", "fa4sim"))
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    configs = [{"arch": arch, "d": d, "causal": c, "emu_fraction": e / 8, "seq": 8192, "batch": 2, "heads": 16}
               for arch in ("h100_sxm", "h200", "b200", "b300") for d in (64, 96, 128, 192, 256)
               for c in (False, True) for e in range(9)]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "sweep.json")
        json.dump(configs, open(path, "w"))
        walls = []
        for _ in range(a.rounds):
            t0 = time.perf_counter()
            r = subprocess.run([a.fa4sim, "schedule", "--inputs", path, "--json", os.path.join(tmp, "out.json")],
                               capture_output=True, text=True)
            walls.append(time.perf_counter() - t0)
            if r.returncode != 0:
                sys.exit(f"bench_schedule: {r.stderr.strip()}")
    med = statistics.median(walls)
    per = med / len(configs) * 1e3
    print(f"{len(configs)} configurations, {a.rounds} rounds: median {med:.3f} s wall "
          f"(min {min(walls):.3f}, max {max(walls):.3f}); {per:.2f} ms per configuration; "
          f"target 10 ms: {per / 10:.2f} of it; load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
