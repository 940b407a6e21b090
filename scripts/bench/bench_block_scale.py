#!/usr/bin/env python3
"""Benchmark fa4sim's block quantisers next to ml_dtypes' element conversion, in one run.

Per block format (mxfp8, mxfp6, mxfp4, nvfp4 by default): `fa4sim block --format F --in x.npy
--json -` on --n float32 inputs (standard normal, seed 0), reading provenance.encode_s (the
encoding alone, one thread: block_encode_array), median of --reps runs; then immediately
ml_dtypes' `astype` of the same array to the block format's element type (float8_e4m3fn,
float6_e2m3fn, float4_e2m1fn; no scales: the element conversion only), median of --reps, one
thread. Both in GB/s of float32 input (4 bytes per element) per core. The machine is shared: the
load average before and after is printed next to the numbers.

--cpu-time: on a loaded machine wall time measures the load, not the code. This mode times
fa4sim's Python `block_encode(x, fmt, threads=1)` (the same block_encode_array, called in this
process; its output arrays allocated per call) and ml_dtypes' `astype` by the process's CPU time
(time.process_time), median of --reps, both in this run: GB/s of float32 input per CPU-second,
which is per core for these one-thread calls. Needs `import fa4sim` (PYTHONPATH=build/python).

Usage: python3 scripts/bench/bench_block_scale.py [--fa4sim build/fa4sim] [--n 16777216] [--reps 5]
       PYTHONPATH=build/python python3 scripts/bench/bench_block_scale.py --cpu-time
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    import ml_dtypes
except ImportError as e:
    print(f"bench_block_scale: SKIP: {e} (pip install numpy ml_dtypes)")
    sys.exit(77)

ELEM = {"mxfp8": ml_dtypes.float8_e4m3fn, "mxfp6": ml_dtypes.float6_e2m3fn,
        "mxfp4": ml_dtypes.float4_e2m1fn, "nvfp4": ml_dtypes.float4_e2m1fn}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fa4sim", default=os.environ.get("FA4SIM_BIN", "build/fa4sim"))
    ap.add_argument("--n", type=int, default=1 << 24, help="float32 inputs (a multiple of 32)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--formats", default="mxfp8,mxfp6,mxfp4,nvfp4")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time the Python module's block_encode and ml_dtypes by process CPU time")
    a = ap.parse_args()
    if a.n <= 0 or a.n % 32 or a.reps < 1:
        print("bench_block_scale: error: --n must be a positive multiple of 32, --reps >= 1", file=sys.stderr)
        return 2
    x = np.random.default_rng(0).standard_normal(a.n).astype(np.float32).reshape(-1, 1024 if a.n % 1024 == 0 else 32)
    gb = a.n * 4 / 1e9
    print(f"bench_block_scale: {a.n} float32 ({gb * 1e3:.0f} MB), {a.reps} reps, medians; "
          f"ml_dtypes {ml_dtypes.__version__}; load {os.getloadavg()[0]:.2f}", flush=True)
    if a.cpu_time:
        return cpu_time_bench(x, gb, a)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "x.npy")
        np.save(path, x)
        for fmt in a.formats.split(","):
            ours = []
            for _ in range(a.reps):
                out = subprocess.run([a.fa4sim, "block", "--format", fmt, "--in", path, "--json", "-"],
                                     check=True, capture_output=True, text=True).stdout
                ours.append(json.loads(out)["provenance"]["encode_s"])
            theirs = []
            for _ in range(a.reps):
                t0 = time.perf_counter()
                x.astype(ELEM[fmt])
                theirs.append(time.perf_counter() - t0)
            o, t = statistics.median(ours), statistics.median(theirs)
            rows.append((fmt, gb / o, gb / t))
            print(f"  {fmt:<6} fa4sim block encode {gb / o:6.2f} GB/s   ml_dtypes astype({ELEM[fmt].__name__}) "
                  f"{gb / t:6.2f} GB/s   (fa4sim min/max {gb / max(ours):.2f}/{gb / min(ours):.2f})", flush=True)
    print(f"bench_block_scale: load after {os.getloadavg()[0]:.2f}")
    return 0


def cpu_median(fn, reps):
    """Median process CPU seconds of fn() over reps calls."""
    t = []
    for _ in range(reps):
        t0 = time.process_time()
        fn()
        t.append(time.process_time() - t0)
    return statistics.median(t)


def cpu_time_bench(x, gb, a):
    import fa4sim
    print(f"bench_block_scale: --cpu-time, fa4sim {fa4sim.__version__} ({fa4sim.__git_revision__}), "
          f"process CPU seconds", flush=True)
    for fmt in a.formats.split(","):
        o = cpu_median(lambda: fa4sim.block_encode(x, fmt, threads=1), a.reps)
        t = cpu_median(lambda: x.astype(ELEM[fmt]), a.reps)
        print(f"  {fmt:<6} fa4sim block_encode {gb / o:6.2f} GB/s per CPU-s   ml_dtypes astype("
              f"{ELEM[fmt].__name__}) {gb / t:6.2f} GB/s per CPU-s", flush=True)
    print(f"bench_block_scale: load after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
