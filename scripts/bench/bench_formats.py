#!/usr/bin/env python3
"""Benchmark fa4sim's float32 -> e4m3 / e5m2 / bf16 / fp16 conversions next to ml_dtypes
(numpy for fp16) on the same inputs, in one run, and write data/bench/formats.{json,md}.

Per format: fa4sim's `formats_bench --benchmark_filter=BM_Encode/<fmt>/satfinite` (encode_array,
one thread, median of --reps repetitions), then immediately the library's `astype` of the same
2^22 inputs (bit patterns i * 0x9E3779B1 mod 2^32), median of --reps, one thread. Both report
elements per second per core. With --sweep, also the 10 s target: all 2^32 inputs
converted and compared with the table reference on 2 threads (BM_AllFloat32VsRef), wall time.
The machine is shared: the load average before and after is recorded next to the numbers.

Usage: python3 scripts/bench/bench_formats.py --bench build/tests/formats_bench [--sweep] [--out data/bench]
"""
import argparse
import datetime
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time

try:
    import numpy as np
    import ml_dtypes
except ImportError as e:
    print(f"bench_formats: SKIP: {e} (pip install numpy ml_dtypes)")
    sys.exit(77)

N = 1 << 22
LIB = {
    "e4m3": (ml_dtypes.float8_e4m3fn, "ml_dtypes.float8_e4m3fn"),
    "e5m2": (ml_dtypes.float8_e5m2, "ml_dtypes.float8_e5m2"),
    "bf16": (ml_dtypes.bfloat16, "ml_dtypes.bfloat16"),
    "fp16": (np.float16, "numpy.float16"),
}


def inputs():
    bits = ((np.arange(N, dtype=np.uint64) * 0x9E3779B1) & 0xFFFFFFFF).astype(np.uint32)
    return bits.view(np.float32)


def lib_rate(x, dtype, reps):
    """Elements per CPU-second of one thread (process CPU time: astype is single-threaded), the
    same measure as Google Benchmark's items_per_second, which the shared machine's load
    disturbs far less than wall time."""
    times = []
    with np.errstate(over="ignore", invalid="ignore"):
        x.astype(dtype)  # warm-up
        for _ in range(reps):
            t0 = time.process_time()
            x.astype(dtype)
            times.append(time.process_time() - t0)
    med = statistics.median(times)
    return N / med, times


def fa4sim_rate(bench, name, reps):
    out = subprocess.run([bench, f"--benchmark_filter=BM_Encode/{name}/satfinite$",
                          f"--benchmark_repetitions={reps}", "--benchmark_format=json"],
                         check=True, capture_output=True, text=True).stdout
    runs = [b for b in json.loads(out)["benchmarks"] if b.get("run_type") == "iteration"]
    rates = [b["items_per_second"] for b in runs]
    return statistics.median(rates), rates


def sweep(bench, name):
    out = subprocess.run([bench, f"--benchmark_filter=BM_AllFloat32VsRef/{name}/",
                          "--benchmark_format=json"], check=True, capture_output=True, text=True).stdout
    b = json.loads(out)["benchmarks"][0]
    return {"wall_s": b["sweep_s"], "mismatches": int(b["mismatches"]), "threads": 2}


def loadavg():
    return list(os.getloadavg())


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def git_describe():
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"], check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", default="build/tests/formats_bench", help="the formats_bench binary")
    ap.add_argument("--reps", type=int, default=7, help="repetitions per measurement (median)")
    ap.add_argument("--sweep", action="store_true", help="also time all 2^32 inputs + reference check")
    ap.add_argument("--formats", default="e4m3,e5m2,bf16,fp16")
    ap.add_argument("--out", default="data/bench", help="output directory")
    a = ap.parse_args()
    if not os.access(a.bench, os.X_OK):
        print(f"bench_formats: error: '{a.bench}' not found (build the formats_bench target)", file=sys.stderr)
        return 2
    names = a.formats.split(",")
    for n in names:
        if n not in LIB:
            print(f"bench_formats: error: unknown format '{n}' (valid: {', '.join(LIB)})", file=sys.stderr)
            return 2
    x = inputs()
    res = {"schema": "fa4sim/bench-formats-v1",
           "provenance": {"command": " ".join([os.path.basename(sys.executable)] + sys.argv),
                          "host": socket.gethostname(), "cpu": cpu_model(), "cores": os.cpu_count(),
                          "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                          "git": git_describe(), "ml_dtypes": ml_dtypes.__version__, "numpy": np.__version__,
                          "loadavg_before": loadavg()},
           "inputs": f"2^22 float32 bit patterns i * 0x9E3779B1 mod 2^32 (all classes incl. NaN/inf)",
           "formats": {}}
    for n in names:
        dtype, lib_name = LIB[n]
        ours, ours_all = fa4sim_rate(a.bench, n, a.reps)
        theirs, theirs_t = lib_rate(x, dtype, a.reps)
        entry = {"fa4sim_elements_per_s_per_core": ours, "fa4sim_runs": ours_all,
                 "library": lib_name, "library_elements_per_s_per_core": theirs,
                 "library_runs_s": theirs_t, "ratio_fa4sim_over_library": ours / theirs}
        if a.sweep:
            entry["all_float32_vs_reference"] = sweep(a.bench, n)
        res["formats"][n] = entry
        print(f"{n}: fa4sim {ours / 1e6:8.1f} M/s/core   {lib_name} {theirs / 1e6:8.1f} M/s/core   "
              f"ratio {ours / theirs:5.2f}" +
              (f"   all 2^32 + reference: {entry['all_float32_vs_reference']['wall_s']:.1f} s on 2 threads, "
               f"{entry['all_float32_vs_reference']['mismatches']} mismatches" if a.sweep else ""), flush=True)
    res["provenance"]["loadavg_after"] = loadavg()
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "formats.json"), "w") as f:
        json.dump(res, f, indent=2)
    p = res["provenance"]
    md = ["# Number-format conversion throughput (fa4sim vs ml_dtypes / numpy)", "",
          f"Command: `{p['command']}`  ",
          f"Machine: {p['host']}, {p['cpu']}, {p['cores']} cores; {p['date']}; git {p['git']}; "
          f"ml_dtypes {p['ml_dtypes']}, numpy {p['numpy']}  ",
          f"Load average (1/5/15 min) before: {', '.join(f'{v:.1f}' for v in p['loadavg_before'])}; "
          f"after: {', '.join(f'{v:.1f}' for v in p['loadavg_after'])} (shared machine: absolute rates "
          "are depressed by other work; both sides ran back to back under the same load)  ",
          f"Inputs: {res['inputs']}; one thread each; median of {a.reps} repetitions; rates per CPU-second "
          "(Google Benchmark items_per_second; process CPU time for the library). The all-2^32 column is "
          "wall time on 2 threads, so it carries the machine's load.", "",
          "| format | fa4sim encode_array (M elem/s/core) | library | library astype (M elem/s/core) | ratio |"
          + (" all 2^32 + reference check, 2 threads (s) |" if a.sweep else ""),
          "|---|---|---|---|---|" + ("---|" if a.sweep else "")]
    for n, e in res["formats"].items():
        row = (f"| {n} | {e['fa4sim_elements_per_s_per_core'] / 1e6:.1f} | {e['library']} | "
               f"{e['library_elements_per_s_per_core'] / 1e6:.1f} | {e['ratio_fa4sim_over_library']:.2f} |")
        if a.sweep:
            s = e["all_float32_vs_reference"]
            row += f" {s['wall_s']:.1f} ({s['mismatches']} mismatches) |"
        md.append(row)
    with open(os.path.join(a.out, "formats.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print(f"bench_formats: wrote {a.out}/formats.json and formats.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
