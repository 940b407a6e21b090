#!/usr/bin/env python3
"""Speed of fa4sim.encode and fa4sim.ex2_emu (the Python module) against the C++ array functions
they call (encode_array, ex2_emu), on the same 2^24 float32 inputs, in the same run.

    python3 scripts/bench/bench_python.py [--build build] [--rounds 5] [--reps 5] [--json FILE]

Each round runs the C++ side (build/tests/python/python_array_bench: one thread, preallocated
outputs, REPS calls of each) and then REPS calls of each Python variant:
  * threads=1, out=preallocated: the like-for-like overhead of the binding;
  * threads=1, new output array per call (what `fa4sim.encode(x, "e4m3")` does by default, on
    one thread), the array dropped at once, as in a loop `y = f(x)`;
  * default (threads=0: all cores, new output array, dropped at once);
  * py_ex2_fresh: the default ex2_emu call with the round's earlier outputs kept alive, so every
    call gets memory fresh from the kernel (the first call of a program; see below).
Reports the median seconds per call over all rounds and the ratio to the C++ median, in wall time
and in process CPU time (user + sys: what time-sharing with other processes on a loaded machine
does not inflate; for the multi-threaded default it is the sum over threads, so only wall time
says how fast that variant returns).

The baseline is the C++ function a C++ user calls on arrays (encode_array, ex2_emu) writing
into an output it already owns, so the ratio of the out= variants is the binding's own cost.
A new output array costs more than the function when its memory is fresh: the kernel zero-fills
every page on first touch (for 64 MiB, about 0.7x the exp2 itself). The module reuses the memory
of dropped outputs of 4 MiB and more (src/python/module.cpp, Note [Output buffers]), so a loop
`y = fa4sim.ex2_emu(x)` pays that once; py_ex2_fresh shows the call that cannot reuse, and
cpp_ex2_new what the same fresh output costs a C++ caller (a new[] array per call: glibc maps
it anew, in 4 KiB pages, where NumPy and the module ask for huge pages). Neither is the target's
baseline; they are there to show where the time of a new array goes.
A benchmark, not a test: the numbers depend on the machine and its load.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            return next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor()


def busiest_processes(n=8):
    """The busiest processes at the start (nice, ps's %CPU over their lifetime, command): who
    shares the cores."""
    try:
        r = subprocess.run(["ps", "-eo", "ni,pcpu,comm", "--sort=-pcpu"], capture_output=True,
                           text=True, check=True)
        return [" ".join(l.split()) for l in r.stdout.splitlines()[1:n + 1]]
    except (OSError, subprocess.CalledProcessError):
        return []


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(a.build, "python"))
    import fa4sim

    n = 1 << 24
    x = np.random.default_rng(0).uniform(-20, 8, n).astype(np.float32)
    bench = os.path.join(a.build, "tests", "python", "python_array_bench")
    names = ("cpp_encode", "py_encode_t1_out", "py_encode_t1", "py_encode",
             "cpp_ex2", "py_ex2_t1_out", "py_ex2_t1", "py_ex2", "py_ex2_fresh", "cpp_ex2_new")
    times = {k: [] for k in names}
    cpu = {k: [] for k in names}
    codes = np.zeros(n, np.uint8)  # touched: the C++ side's outputs are touched too
    y = np.zeros(n, np.float32)
    kept = []  # py_ex2_fresh's outputs, alive until the end of its calls in the round
    variants = [
        ("py_encode_t1_out", lambda: fa4sim.encode(x, "e4m3", out=codes, threads=1)),
        ("py_encode_t1", lambda: fa4sim.encode(x, "e4m3", threads=1)),
        ("py_encode", lambda: fa4sim.encode(x, "e4m3")),
        ("py_ex2_t1_out", lambda: fa4sim.ex2_emu(x, 3, out=y, threads=1)),
        ("py_ex2_t1", lambda: fa4sim.ex2_emu(x, 3, threads=1)),
        ("py_ex2", lambda: fa4sim.ex2_emu(x, 3)),
        ("py_ex2_fresh", lambda: kept.append(fa4sim.ex2_emu(x, 3))),
    ]
    with tempfile.NamedTemporaryFile(suffix=".f32") as f:
        x.tofile(f.name)
        start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        load = os.getloadavg()[0]
        others = busiest_processes()
        for _ in range(a.rounds):
            r = json.loads(subprocess.run([bench, f.name, str(a.reps)], check=True,
                                          capture_output=True, text=True).stdout)
            times["cpp_encode"] += r["encode_e4m3_s"]
            times["cpp_ex2"] += r["ex2_emu3_s"]
            times["cpp_ex2_new"] += r["ex2_emu3_new_s"]
            cpu["cpp_encode"] += r["encode_e4m3_cpu_s"]
            cpu["cpp_ex2"] += r["ex2_emu3_cpu_s"]
            cpu["cpp_ex2_new"] += r["ex2_emu3_new_cpu_s"]
            for name, fn in variants:
                if name == "py_ex2_fresh":  # takes the buffer py_ex2 dropped, untimed: the
                    fn()                    # timed calls all get fresh memory
                for _ in range(a.reps):
                    t0, c0 = time.perf_counter(), time.process_time()
                    fn()
                    times[name].append(time.perf_counter() - t0)
                    cpu[name].append(time.process_time() - c0)
                kept.clear()
        end = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        load_end = os.getloadavg()[0]
    med = {k: statistics.median(v) for k, v in times.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}

    def ratio(m):
        return {k: v / (m["cpp_encode"] if "encode" in k else m["cpp_ex2"]) for k, v in m.items()}

    print(f"fa4sim Python module vs the C++ array functions, n = 2^24 float32, "
          f"{a.rounds} rounds x {a.reps} calls, median per call")
    print(f"{'variant':<20} {'wall ms':>9} {'vs C++':>8} {'CPU ms':>9} {'vs C++':>8}")
    rw, rc = ratio(med), ratio(med_cpu)
    for k in names:
        print(f"{k:<20} {med[k] * 1e3:>9.2f} {rw[k]:>7.2f}x {med_cpu[k] * 1e3:>9.2f} {rc[k]:>7.2f}x")
    out = {"command": " ".join(["python3"] + sys.argv), "n": n, "rounds": a.rounds, "reps": a.reps,
           "start_utc": start, "end_utc": end, "load_avg_1min_at_start": load,
           "load_avg_1min_at_end": load_end, "busiest_processes_at_start": others, "host": platform.node(), "cpu": cpu_model(),
           "cpu_count": os.cpu_count(),
           "fa4sim_version": fa4sim.__version__, "simd_ex2": fa4sim._ext.ex2_emu_array_is_simd(),
           "median_wall_s": med, "ratio_to_cpp_wall": rw,
           "median_cpu_s": med_cpu, "ratio_to_cpp_cpu": rc,
           "wall_s": times, "cpu_s": cpu}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
