#!/usr/bin/env python3
"""schedule_fit.py: calibrates the schedule model (data/schedule/sm90.json) on H200 measurements
of upstream FA4 and judges it on configurations it was not fitted on (docs/schedule.md).

  schedule_fit.py fit  --fa4sim build/fa4sim [--data DIR] [--spec data/schedule/sm90.json]
      fits the calibrated constants on DIR/calibration.jsonl (stock and the tricks grid) and
      writes them into the spec, with the command, the data and the date
  schedule_fit.py eval --fa4sim build/fa4sim [--data DIR] [--out data/schedule/eval_h200.json]
      predicts every measured configuration of DIR/{calibration,heldout,moonshot}.jsonl and
      writes predicted / measured with the measured spread, and the acceptance figures
  schedule_fit.py cyclerms --fa4sim build/fa4sim [--spec S] --fit-plans P1,P2,..
      prints the spec's rms log error of the cycles on those plans' Nsight Compute counts, unfitted
  schedule_fit.py repeat [--out data/schedule/effect_repeat.json]
      how far two protocol runs of the same plan agree on each effect (a variant's change against
      stock): the floor under the effect target's 3 points (no model involved)
  schedule_fit.py factors --fa4sim build/fa4sim [--fit-plans all|P1,P2,..]
      per compiled kernel (head dim, mask, tau, emulated fraction), the median of measured / modelled
      time over its measured shapes (Note [Kernel factors]) -> data/schedule/sm90_kernel_factors.json
  schedule_fit.py eval ... --kernel-factors FILE|earlier
      eval with the factors of FILE (applied by fa4sim), or with each plan's factors taken from the
      plans measured before it (forward in time: what a user who measured those would have had)
  schedule_fit.py blackwell --fa4sim build/fa4sim
      fits the sm100 MMA latency (data/schedule/sm100.json) on one source of published Blackwell
      speeds (data/published/fa4_speeds.json) and predicts every other published row
      (data/schedule/eval_blackwell.json)

DIR holds the output of scripts/gpu/schedule_device.sh (default data/gpu/schedule/2026-12-01).
The fit: tensor_efficiency, wgmma_latency, cta_fixed_cycles, tau_cycles, the MUFU latency and
one sustained clock by Nelder-Mead on the squared log ratio of predicted to measured time over
every (shape, kind) of the calibration plan (cuDNN rows left out).
"""
import argparse
import bisect
import collections
import csv
import datetime
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

from mufu_table import write_atomic  # same folder

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # scripts/datagen/
DATA = os.path.join(ROOT, "data", "gpu", "schedule", "2026-12-01b")
SPEC = os.path.join(ROOT, "data", "schedule", "sm90.json")
OUT = {"eval": os.path.join(ROOT, "data", "schedule", "eval_h200.json"),
       "factors": os.path.join(ROOT, "data", "schedule", "sm90_kernel_factors.json"),
       "repeat": os.path.join(ROOT, "data", "schedule", "effect_repeat.json")}  # --out's defaults
PLAN_FILE = os.path.join(ROOT, "scripts", "gpu", "schedule_plan.json")
PARAMS = ["tensor_efficiency", "wgmma_latency", "cta_fixed_cycles", "tau_cycles", "latency.mufu",
          "clock_mhz_base", "clock_tensor_slowdown"]
BOUNDS = {"tensor_efficiency": (0.3, 1.0), "wgmma_latency": (0, 3000), "cta_fixed_cycles": (0, 2e5),
          "tau_cycles": (0, 2000), "latency.mufu": (4, 64), "clock_mhz_base": (1000, 5000),
          "clock_tensor_slowdown": (0, 5), "tau_cycles_fixed": (0, 2000), "mask_instructions": (0, 16),
          "cta_fixed_cycles_per_d": (0, 1000), "fma_tensor_stall": (0, 16), "smem_p_cycles": (0, 5000),
          "clock_duration_slope": (-0.5, 0.5), "tma_clock_scale": (0.5, 1.5),
          "tau_pv_wait_cycles": (0, 5000)}
# Optional terms (--extra-params): their values when a spec does not have them, and Nelder-Mead steps.
OPTIONAL = {"tau_cycles_fixed": (0.0, 50), "mask_instructions": (2.0, 1), "cta_fixed_cycles_per_d": (0.0, 10),
            "fma_tensor_stall": (0.0, 1), "smem_p_cycles": (0.0, 100), "clock_duration_slope": (0.0, 0.01),
            "tma_clock_scale": (1.0, 0.05), "tau_pv_wait_cycles": (0.0, 200)}
STEPS = {"tensor_efficiency": 0.1, "wgmma_latency": 300, "cta_fixed_cycles": 10000, "tau_cycles": 50,
         "latency.mufu": 8, "clock_mhz_base": 200, "clock_tensor_slowdown": 0.2}


def load_clock_log(path):
    """(wall times, SM MHz) of nvidia-smi's log under the run, or None."""
    if not os.path.exists(path):
        return None
    ts, mhz = [], []
    for line in open(path):
        f = [x.strip() for x in line.split(",")]
        try:
            t = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
            ts.append(t.timestamp())
            mhz.append(float(f[1]))
        except (ValueError, IndexError):
            continue
    return ts, mhz


def load_clock(log, row):
    """Mean SM clock over the samples taken while one of the shape's batches ran (the clock under load)."""
    if log is None:
        return None
    ts, mhz = log
    vals = []
    for k in row["kinds"].values():
        for t0, t1 in k.get("round_wall", []):
            vals += mhz[bisect.bisect_left(ts, t0):bisect.bisect_right(ts, t1)]
    return statistics.mean(vals) if vals else None


def get_param(spec, p):
    if p.startswith("latency."):
        return spec["latency"][p.split(".")[1]]["value"]
    if p in OPTIONAL and p not in spec["calibrated"]:
        return OPTIONAL[p][0]
    return spec["calibrated"][p]


def set_param(spec, p, v):
    if p.startswith("latency."):
        spec["latency"][p.split(".")[1]]["value"] = v
        spec["latency"][p.split(".")[1]]["source"] = "fitted by scripts/datagen/schedule_fit.py (see calibration)"
        spec["latency"][p.split(".")[1]]["assumption"] = False
    else:
        spec["calibrated"][p] = v


def load_rows(path):
    """(input dict, measured ms, spread, kind name, clock under load) per measured kind."""
    out = []
    log = load_clock_log(os.path.join(os.path.dirname(path), "clocks.csv"))
    with open(path) as f:
        lines = [json.loads(x) for x in f if x.strip()]
    for row in lines[1:]:
        s = row["shape"]
        clock = load_clock(log, row)
        for name, k in row["kinds"].items():
            if "ms" not in k or k["spec"]["kind"] == "cudnn":
                continue
            spec = k["spec"]
            t = spec.get("tricks") or {}
            inp = {"arch": "h200", "batch": s["batch"], "heads": s["heads"], "heads_kv": s.get("heads_kv", s["heads"]),
                   "seq": s["seq"], "d": s["head_dim"], "causal": bool(s["causal"]), "tau": float(t.get("tau", 0)),
                   "emu_fraction": t.get("emu_eighths", 0) / 8.0, "degree": t.get("degree", 3)}
            if spec["kind"] == "tile":
                inp["tile"] = spec["tile"]
            cudnn = row["kinds"].get("cudnn", {}).get("ms")
            out.append({"input": inp, "ms": k["ms"], "spread": k["spread"], "kind": name, "shape": s,
                        "clock": clock, "flops": row["flops"],
                        "cudnn_ms": cudnn, "rounds": k["round_ms"]})
    return out


NCU = os.path.join(ROOT, "data", "gpu", "schedule", "2026-12-01e")
PLANS = ("calibration", "heldout", "moonshot", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "heldout7", "diag7", "heldout8", "heldout9", "heldout10", "heldout11", "heldout12", "heldout13", "heldout14", "heldout15", "heldout16", "heldout17", "heldout18", "heldout19", "heldout20", "heldout21", "heldout22", "heldout23", "heldout24", "heldout25")
CYCLE_PARAMS = ["tensor_efficiency", "wgmma_latency", "cta_fixed_cycles", "tau_cycles", "latency.mufu"]
CLOCK_PARAMS = ["clock_mhz_base", "clock_tensor_slowdown"]


def ncu_number(v):
    try:
        return float(v.replace(",", ""))
    except ValueError:
        return float("nan")


def read_ncu_table(folder, plan):
    """(launch from ncu_<plan>_order.jsonl, {metric: raw value}) per profiled kernel of
    scripts/gpu/schedule_ncu.sh's output in `folder`."""
    with open(os.path.join(folder, f"ncu_{plan}.csv")) as f:
        table = list(csv.reader(f))
    head = next(i for i, r in enumerate(table) if r and r[0] == "ID")
    names, data = table[head], table[head + 2:]
    with open(os.path.join(folder, f"ncu_{plan}_order.jsonl")) as f:
        order = [json.loads(x) for x in f if x.strip()][1:]
    if len(order) != len(data):
        sys.exit(f"schedule_fit: {folder}: {len(order)} launches listed, {len(data)} profiled")
    return [(o, dict(zip(names, r))) for o, r in zip(order, data)]


def load_ncu_rows(folder, plan):
    """Per profiled (shape, kind) of scripts/gpu/schedule_ncu.sh's output: the model's input and the
    kernel's SM cycles (gpc__cycles_elapsed.max), clock and duration as Nsight Compute read them."""
    out = []
    for o, m in read_ncu_table(folder, plan):
        s, kind = o["shape"], o["kind"]
        tau, emu, tile = 0.0, 0, None
        rest = kind
        if rest.startswith("tile"):
            dims, rest = rest[4:].split("_", 1)
            tile = [int(v) for v in dims.split("x")]
        if rest.startswith("tau"):
            tau, emu = float(rest.split("_")[0][3:]), int(rest.split("emu")[1])
        inp = {"arch": "h200", "batch": s["batch"], "heads": s["heads"], "heads_kv": s.get("heads_kv", s["heads"]),
               "seq": s["seq"], "d": s["head_dim"], "causal": bool(s["causal"]), "tau": tau,
               "emu_fraction": emu / 8.0, "degree": 3}
        if tile:
            inp["tile"] = tile
        out.append({"input": inp, "shape": s, "kind": kind, "cycles": ncu_number(m["gpc__cycles_elapsed.max"]),
                    "ncu_mhz": ncu_number(m["gpc__cycles_elapsed.avg.per_second"]) / 1e6,
                    "ncu_ms": ncu_number(m["gpu__time_duration.sum"]) / 1e6})
    return out


def ncu_inputs(rows):
    """The model's inputs for profiled launches: each at the SM clock Nsight Compute read (the
    loads' clocks follow it, Note [Loads in nanoseconds])."""
    return [dict(r["input"], clock_mhz=r["ncu_mhz"]) for r in rows]


def merge_runs(rows, other_paths):
    """Measured time = geometric mean over this run and the other runs of the same plan (same
    protocol, other machines of the kind); spread = the largest of the within-run spreads and the
    runs' differences."""
    others = []
    for path in other_paths:
        others.append({(json.dumps(r["shape"], sort_keys=True), r["kind"]): r for r in load_rows(path)})
    for r in rows:
        key = (json.dumps(r["shape"], sort_keys=True), r["kind"])
        found = [o[key] for o in others if key in o]
        if not found:
            continue
        r["ms_runs"] = [r["ms"]] + [o["ms"] for o in found]
        r["ms"] = math.exp(statistics.mean(math.log(m) for m in r["ms_runs"]))
        r["spread"] = max([r["spread"]] + [o["spread"] for o in found] +
                          [abs(math.log(x / y)) for x in r["ms_runs"] for y in r["ms_runs"]])
    return rows


def newest_holding(folder, name):
    """`folder` if it holds `name`, else the newest sibling folder (by name: dates) that does, else
    `folder`."""
    if os.path.exists(os.path.join(folder, name)):
        return folder
    root = os.path.dirname(folder)
    for d in sorted(os.listdir(root), reverse=True):
        if os.path.exists(os.path.join(root, d, name)):
            return os.path.join(root, d)
    return folder


def ncu_folder(a, plan):
    """--ncu if it holds the plan's counts, else the newest folder of data/gpu/schedule that does."""
    return newest_holding(a.ncu, f"ncu_{plan}.csv")


def plan_rows(a, plan):
    """The plan's rows from its primary run (plan_path) merged with every other run that has it; a
    shape of the plan (scripts/gpu/schedule_plan.json) that the primary run did not reach (its time
    budget ran out) comes from the other runs, merged with those."""
    primary = plan_path(a, plan)
    others = [o for o in plan_run_paths(a, plan) if os.path.abspath(o) != os.path.abspath(primary)]
    rows = merge_runs(load_rows(primary), others)
    with open(PLAN_FILE) as f:
        planned = {json.dumps(e["shape"], sort_keys=True) for e in json.load(f).get(plan, [])}
    have = {json.dumps(r["shape"], sort_keys=True) for r in rows}
    for i, o in enumerate(others):
        extra = [r for r in load_rows(o) if json.dumps(r["shape"], sort_keys=True) in planned - have]
        have |= {json.dumps(r["shape"], sort_keys=True) for r in extra}
        rows += merge_runs(extra, others[i + 1:])
    return rows


def plan_path(a, plan):
    """The plan's primary run: DIR/<plan>.jsonl, or the newest folder of data/gpu/schedule that has it."""
    return os.path.join(newest_holding(a.data, plan + ".jsonl"), plan + ".jsonl")


def predict(fa4sim, spec, inputs, kernel_factors="none"):
    """fa4sim's predictions of `inputs` with `spec`: the model alone, or with a kernel-factors file."""
    with tempfile.TemporaryDirectory() as d:
        sp, ip = os.path.join(d, "spec.json"), os.path.join(d, "inputs.json")
        json.dump(spec, open(sp, "w"))
        json.dump(inputs, open(ip, "w"))
        r = subprocess.run([fa4sim, "schedule", "--inputs", ip, "--spec", sp, "--kernel-factors",
                            kernel_factors, "--json", "-"], capture_output=True, text=True)
        if r.returncode != 0:  # fa4sim's exit code 2 (bad input, such as a malformed factors file) is kept
            print(f"schedule_fit: fa4sim schedule failed: {r.stderr.strip()}", file=sys.stderr)
            sys.exit(2 if r.returncode == 2 else 1)
        return json.loads(r.stdout)["results"]["predictions"]


def nelder_mead(f, x0, steps, iters=160):
    n = len(x0)
    pts = [list(x0)] + [[x0[j] + (steps[j] if j == i else 0) for j in range(n)] for i in range(n)]
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = sorted(range(n + 1), key=lambda i: vals[i])
        pts, vals = [pts[i] for i in order], [vals[i] for i in order]
        cen = [sum(p[j] for p in pts[:-1]) / n for j in range(n)]
        refl = [cen[j] + (cen[j] - pts[-1][j]) for j in range(n)]
        fr = f(refl)
        if fr < vals[0]:
            exp = [cen[j] + 2 * (cen[j] - pts[-1][j]) for j in range(n)]
            fe = f(exp)
            pts[-1], vals[-1] = (exp, fe) if fe < fr else (refl, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = refl, fr
        else:
            con = [cen[j] + 0.5 * (pts[-1][j] - cen[j]) for j in range(n)]
            fc = f(con)
            if fc < vals[-1]:
                pts[-1], vals[-1] = con, fc
            else:
                for i in range(1, n + 1):
                    pts[i] = [pts[0][j] + 0.5 * (pts[i][j] - pts[0][j]) for j in range(n)]
                    vals[i] = f(pts[i])
        if max(vals) - min(vals) < 1e-7:
            break
    i = min(range(n + 1), key=lambda i: vals[i])
    return pts[i], vals[i]


def clamp_params(x, params=None):
    return [min(max(v, BOUNDS[p][0]), BOUNDS[p][1]) for p, v in zip(params or PARAMS, x)]


def cmd_fit(a):
    spec = json.load(open(a.spec))
    params = (a.params.split(",") if a.params else PARAMS) + [p for p in a.extra_params.split(",") if p]
    for p in params:
        if p not in BOUNDS:
            sys.exit(f"schedule_fit: unknown parameter {p!r} (one of {', '.join(BOUNDS)})")
    rows = []
    for plan in a.fit_plans.split(","):
        rows += plan_rows(a, plan)
    inputs = [r["input"] for r in rows]
    evals = [0]

    def loss(x):
        evals[0] += 1
        x = clamp_params(x, params)
        for p, v in zip(params, x):
            set_param(spec, p, v)
        preds = predict(a.fa4sim, spec, inputs)
        # predicted time (cycles and clock) against measured time; the logged clocks under load
        # enter with a weight of their own: log(predicted / logged clock)
        t = sum(math.log(p["ms"] / r["ms"]) ** 2 for p, r in zip(preds, rows)) / len(rows)
        c = sum(math.log(p["clock_mhz"] / r["clock"]) ** 2 for p, r in zip(preds, rows)) / len(rows)
        return t + a.clock_weight * c

    if any(r["clock"] is None for r in rows):
        sys.exit("schedule_fit: the calibration data has no clock log (clocks.csv)")
    steps = [STEPS[p] if p in STEPS else OPTIONAL[p][1] for p in params]
    x0 = [get_param(spec, p) for p in params]
    best = None
    windows = (1, 2, 4) if any(p in CYCLE_PARAMS for p in params) else (spec["window"]["value"],)
    for window in windows:  # the issue window is discrete: a Nelder-Mead run for each
        spec["window"]["value"] = window
        x, v = nelder_mead(loss, x0, steps, iters=a.iters)
        x, v = nelder_mead(loss, x, [st / 4 for st in steps], iters=a.iters)
        print(f"window {window}: loss {v:.5f}")
        if best is None or v < best[0]:
            best = (v, window, x)
    v, window, x = best
    if len(windows) > 1:
        spec["window"] = {"value": window, "assumption": False,
                          "source": "fitted (1, 2 or 4) with the calibrated constants by scripts/datagen/schedule_fit.py"}
    for p, val in zip(params, clamp_params(x, params)):
        set_param(spec, p, val)
    preds = predict(a.fa4sim, spec, inputs)
    rms_t = math.sqrt(sum(math.log(p["ms"] / r["ms"]) ** 2 for p, r in zip(preds, rows)) / len(rows))
    rms_c = math.sqrt(sum(math.log(p["clock_mhz"] / r["clock"]) ** 2 for p, r in zip(preds, rows)) / len(rows))
    print(f"{dict(zip(params, clamp_params(x, params)))}; rms log error: time {rms_t:.4f}, clock {rms_c:.4f} "
          f"({evals[0]} evaluations)")
    spec["calibrated"] = {k: round(v, 6) for k, v in spec["calibrated"].items()}
    spec["calibration"] = {
        "command": ("python3 scripts/datagen/schedule_fit.py fit --fa4sim build/fa4sim --fit-plans " + a.fit_plans +
                    (" --params " + a.params if a.params else "") +
                    (f" --clock-weight {a.clock_weight:g}" if a.clock_weight != 1 else "") +
                    (" --extra-params " + a.extra_params if a.extra_params else "")),
        "data": [os.path.relpath(plan_path(a, p), ROOT) for p in a.fit_plans.split(",")],
        "date": datetime.date.today().isoformat(), "rms_log_error_time": round(rms_t, 5),
        "rms_log_error_clock": round(rms_c, 5),
        "configurations": len(rows),
        "runs_merged": "every folder of data/gpu/schedule that holds the plan (geometric mean)",
        "note": f"fitted on the plans {a.fit_plans} only; the others are not used"}
    with open(a.spec, "w") as f:
        json.dump(spec, f, indent=2)
        f.write("\n")
    print(f"wrote {a.spec}")


def cycle_summary(rows, preds):
    errs = [abs(p["total_cycles"] / r["cycles"] - 1) for p, r in zip(preds, rows)]
    return {"configurations": len(errs), "within_2pct": sum(e <= 0.02 for e in errs),
            "within_5pct": sum(e <= 0.05 for e in errs), "within_10pct": sum(e <= 0.10 for e in errs),
            "median_abs_error": statistics.median(errs) if errs else None, "max_abs_error": max(errs, default=None)}


def cycle_rows(a):
    """Nsight Compute's profiled launches of the --fit-plans."""
    return [r for plan in a.fit_plans.split(",") for r in load_ncu_rows(ncu_folder(a, plan), plan)]


def cycle_log_errors(fa4sim, spec, rows, inputs=None):
    """log(model's cycles / kernel's) per row of `rows`."""
    preds = predict(fa4sim, spec, inputs or ncu_inputs(rows))
    return [math.log(p["total_cycles"] / r["cycles"]) for p, r in zip(preds, rows)]


def cycle_loss(fa4sim, spec, rows, inputs=None):
    """Mean squared log ratio of the model's cycles to the kernel's over `rows`."""
    return sum(x * x for x in cycle_log_errors(fa4sim, spec, rows, inputs)) / len(rows)


def cmd_cyclerms(a):
    """The spec's rms log error of the cycles on the --fit-plans' counts, nothing fitted (how a
    changed model scores on the counts before any refit)."""
    rows = cycle_rows(a)
    logs = cycle_log_errors(a.fa4sim, json.load(open(a.spec)), rows)
    print(f"{a.spec}: cycles rms log error {math.sqrt(sum(x * x for x in logs) / len(logs)):.4f} "
          f"over {len(rows)} kernels of {a.fit_plans}")
    if a.by_kind:  # median log error (model over kernel) per head dim, mask and kind
        groups = collections.defaultdict(list)
        for r, x in zip(rows, logs):
            groups[(r["shape"]["head_dim"], bool(r["shape"]["causal"]), r["kind"])].append(x)
        for (d, causal, kind), xs in sorted(groups.items()):
            print(f"  d {d} {'causal' if causal else 'no mask'} {kind}: {len(xs)} kernels, "
                  f"median log error {statistics.median(xs):+.3f}")


def cmd_clocktricks(a):
    """calibrated.clock_tricks_slope and clock_tricks_c0 (Note [Clock follows the tricks in long
    runs], include/fa4sim/analysis/schedule.h): a grid search for the smallest squared error of the
    effects (variant vs stock on the same shape, the model alone) over --fit-plans; the other
    constants stay. Writes the pair into --spec."""
    spec = json.load(open(a.spec))
    rows = [r for plan in a.fit_plans.split(",") for r in plan_rows(a, plan) if "tile" not in r["kind"]]
    inputs = [r["input"] for r in rows]

    def sse(slope, c0):
        spec["calibrated"]["clock_tricks_slope"], spec["calibrated"]["clock_tricks_c0"] = slope, c0
        return sum((e["predicted_effect"] - e["measured_effect"]) ** 2
                   for e in effect_rows(rows, predict(a.fa4sim, spec, inputs)))

    grid = [(sl, c0) for sl in (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1.0)
            for c0 in (3e4, 1e5, 2e5, 3e5, 5e5, 1e6, 2e6, 3e6, 5e6)]
    none = sse(0, 1e6)
    scored = sorted((sse(sl, c0), sl, c0) for sl, c0 in grid)
    v, slope, c0 = scored[0]
    print(f"effects' squared error over {len(rows)} configurations of {a.fit_plans}: {none:.4f} without the "
          f"term, {v:.4f} with slope {slope}, c0 {c0:g} (best of {len(grid)}; next: " +
          ", ".join(f"{x:.4f} ({s}, {c:g})" for x, s, c in scored[1:4]) + ")")
    spec["calibrated"]["clock_tricks_slope"], spec["calibrated"]["clock_tricks_c0"] = slope, c0
    spec["calibration_clock_tricks"] = {
        "command": "python3 scripts/datagen/schedule_fit.py clocktricks --fa4sim build/fa4sim --fit-plans " + a.fit_plans,
        "date": datetime.date.today().isoformat(), "configurations": len(rows),
        "effects_squared_error": {"without": round(none, 5), "with": round(v, 5)},
        "note": "clock_tricks_slope and clock_tricks_c0 only, on the effects; grid of slopes 0.05-1 and c0 3e4-5e6 cycles"}
    with open(a.spec, "w") as f:
        json.dump(spec, f, indent=2)
        f.write("\n")
    print(f"wrote {a.spec}")


def cmd_cycles(a):
    """The cycle constants fitted on Nsight Compute's cycle counts (no clock in them): per window
    a Nelder-Mead run on the squared log ratio of the model's cycles to the kernel's."""
    spec = json.load(open(a.spec))
    params = CYCLE_PARAMS + [p for p in a.extra_params.split(",") if p]
    rows = cycle_rows(a)
    inputs = ncu_inputs(rows)

    def loss(x):
        for p, v in zip(params, clamp_params(x, params)):
            set_param(spec, p, v)
        return cycle_loss(a.fa4sim, spec, rows, inputs)

    steps = [STEPS[p] if p in STEPS else OPTIONAL[p][1] for p in params]
    best = None
    for window in [int(w) for w in a.windows.split(",")]:
        spec["window"]["value"] = window
        x, v = nelder_mead(loss, [get_param(spec, p) for p in params], steps, iters=a.iters)
        x, v = nelder_mead(loss, x, [st / 4 for st in steps], iters=a.iters)
        print(f"window {window}: loss {v:.6f}")
        if best is None or v < best[0]:
            best = (v, window, x)
    v, window, x = best
    spec["window"] = {"value": window, "assumption": False,
                      "source": "fitted (1, 2 or 4) on Nsight Compute cycle counts by scripts/datagen/schedule_fit.py cycles"}
    for p, val in zip(params, clamp_params(x, params)):
        set_param(spec, p, round(val, 6))
    print(dict(zip(params, clamp_params(x, params))), f"rms log error {math.sqrt(v):.4f}")
    for plan in PLANS:
        if os.path.exists(os.path.join(ncu_folder(a, plan), f"ncu_{plan}.csv")):
            pr = load_ncu_rows(ncu_folder(a, plan), plan)
            print(f"{plan} cycles: {cycle_summary(pr, predict(a.fa4sim, spec, ncu_inputs(pr)))}")
    spec["calibration_cycles"] = {
        "command": "python3 scripts/datagen/schedule_fit.py cycles --fa4sim build/fa4sim --fit-plans " + a.fit_plans +
                   (" --extra-params " + a.extra_params if a.extra_params else "") +
                   (" --windows " + a.windows if a.windows != "1,2,4" else ""),
        "data": [os.path.relpath(os.path.join(ncu_folder(a, p), f"ncu_{p}.csv"), ROOT) for p in a.fit_plans.split(",")],
        "date": datetime.date.today().isoformat(), "rms_log_error_cycles": round(math.sqrt(v), 5),
        "configurations": len(rows),
        "note": "cycle constants only; the clock constants are fitted afterwards on the timed runs "
                "(schedule_fit.py fit --params " + ",".join(CLOCK_PARAMS) + ")"}
    with open(a.spec, "w") as f:
        json.dump(spec, f, indent=2)
        f.write("\n")
    print(f"wrote {a.spec}")


def effect_rows(rows, preds):
    """Per shape and variant: measured and predicted change vs stock, with the spread of both."""
    stock = {}
    for r, p in zip(rows, preds):
        if r["kind"] == "stock":
            stock[json.dumps(r["shape"], sort_keys=True)] = (r, p)
    out = []
    for r, p in zip(rows, preds):
        key = json.dumps(r["shape"], sort_keys=True)
        if r["kind"] == "stock" or key not in stock:
            continue
        sr, sp = stock[key]
        meas = sr["ms"] / r["ms"] - 1
        pred = sp["ms"] / p["ms"] - 1
        spread = math.hypot(sr["spread"], r["spread"]) / 2
        out.append({"shape": r["shape"], "kind": r["kind"], "measured_effect": meas, "predicted_effect": pred,
                    "spread": spread, "beyond_spread": abs(meas) > spread,
                    "sign_right": (meas > 0) == (pred > 0) if abs(meas) > spread else None,
                    "size_error_points": 100 * abs(pred - meas)})
    return out


def kernel_key(inp):
    """The compiled kernel a configuration runs (Note [Kernel factors]): head dim, mask, tau,
    emulated fraction and the emulation's degree (3 when nothing is emulated); None with a tile."""
    if "tile" in inp:
        return None
    emu = float(inp.get("emu_fraction", 0))
    return (inp["d"], bool(inp["causal"]), float(inp.get("tau", 0)), emu,
            int(inp.get("degree", 3)) if emu > 0 else 3)


def factor_of(ratios):
    """A kernel's factor from its measured / modelled times: the median, rounded as the file holds it
    (so that eval's `earlier` mode applies what a file would)."""
    return round(statistics.median(ratios), 5)


def kernel_ratios(rows, preds):
    """Per kernel: measured / modelled time of each of its configurations."""
    out = collections.defaultdict(list)
    for r, p in zip(rows, preds):
        k = kernel_key(r["input"])
        if k is not None:
            out[k].append(r["ms"] / p["ms"])
    return out


def kernel_list(ratios):
    """The factors file's kernels from {kernel: measured / modelled times}."""
    return [{"d": k[0], "causal": k[1], "tau": k[2], "emu_fraction": k[3], "degree": k[4],
             "factor": factor_of(v), "measurements": len(v),
             "min": round(min(v), 5), "max": round(max(v), 5)} for k, v in sorted(ratios.items())]


def predict_with_ratios(fa4sim, spec, rows, ratios):
    """fa4sim's predictions of `rows` with the factors of `ratios` (the model alone when empty)."""
    inputs = [r["input"] for r in rows]
    if not ratios:
        return predict(fa4sim, spec, inputs)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "factors.json")
        json.dump({"schema": "fa4sim/schedule-kernel-factors-v1", "spec": "schedule_fit", "archs": ["h200"],
                   "kernels": kernel_list(ratios)}, open(path, "w"))
        return predict(fa4sim, spec, inputs, path)


FACTOR_PASSES = 2  # re-takes of the factors against predictions made with them (Note [Kernel factors in the clock])


def fixed_point_ratios(fa4sim, spec, rows, raw):
    """Per kernel, measured / modelled time of each configuration of `rows`, at the fixed point of
    Note [Kernel factors in the clock]: first against the model alone (`raw`), then FACTOR_PASSES
    times against fa4sim's predictions with the factors so far, each divided by its own factor (a
    factor moves a variant's clock as well as its cycles)."""
    ratios = kernel_ratios(rows, raw)
    for _ in range(FACTOR_PASSES):
        preds = predict_with_ratios(fa4sim, spec, rows, ratios)
        ratios = kernel_ratios(rows, [dict(p, ms=p["ms"] / p["kernel_factor"]) for p in preds])
    return ratios


def cmd_factors(a):
    spec = json.load(open(a.spec))
    plans = [p for p in PLANS if os.path.exists(plan_path(a, p))] if a.fit_plans == "all" \
        else a.fit_plans.split(",")
    rows = [r for plan in plans for r in plan_rows(a, plan)]
    kernels = kernel_list(fixed_point_ratios(a.fa4sim, spec, rows, predict(a.fa4sim, spec, [r["input"] for r in rows])))
    report = {"schema": "fa4sim/schedule-kernel-factors-v1", "spec": os.path.relpath(a.spec, ROOT),
              "archs": ["h200"],
              "what": "per compiled kernel of upstream FA4's sm90 forward (head dim, mask, tau, emulated "
                      "fraction; tile the kernel's own): the median of measured / modelled time over its "
                      "configurations measured on the H200 with the protocol of scripts/gpu/schedule_device.sh, "
                      "min and max beside it (Note [Kernel factors] in include/fa4sim/analysis/schedule.h); "
                      "modelled with the factors in a tricks variant's clock, at the fixed point of Note [Kernel "
                      "factors in the clock]",
              "command": "python3 scripts/datagen/schedule_fit.py factors --fa4sim build/fa4sim --fit-plans "
                         + a.fit_plans,
              "plans": plans, "data": "data/gpu/schedule (each plan's runs, merged as eval merges them)",
              "gpu": "NVIDIA H200 (driver 580.159.04, flash-attn-4 4.0.0b36)",
              "date": datetime.date.today().isoformat(), "kernels": kernels}
    write_atomic(a.out, (json.dumps(report, indent=1) + "\n").encode())
    print(f"{len(kernels)} kernels from {sum(k['measurements'] for k in kernels)} configurations of "
          f"{len(plans)} plans; wrote {a.out}")


def kernel_factors_note(mode):
    """What eval's report says of its kernel factors: the mode, or the file with the plans it was
    taken over and its digest (a file re-taken later names other plans)."""
    if mode in ("none", "earlier"):
        return {"none": "none: the schedule model alone",
                "earlier": "each plan's from the plans before it in PLANS (measured earlier): the median "
                           "of measured / modelled time per kernel, at the fixed point of Note [Kernel factors in the clock]"}[mode]
    with open(mode, "rb") as f:
        raw = f.read()
    path = os.path.abspath(mode)
    return {"file": os.path.relpath(path, ROOT) if path.startswith(ROOT + os.sep) else path, "plans": json.loads(raw).get("plans"),
            "sha256": hashlib.sha256(raw).hexdigest(),
            "note": "plans the file's factors were taken over are in sample; the others are blind"}


def cmd_eval(a):
    spec = json.load(open(a.spec))
    mode = a.kernel_factors
    command = "python3 scripts/datagen/schedule_fit.py eval --fa4sim build/fa4sim"
    if mode != "none":
        command += f" --kernel-factors {mode} --out {os.path.relpath(a.out, ROOT)}"
    report = {"schema": "fa4sim/schedule-eval-v1", "spec": os.path.relpath(a.spec, ROOT),
              "spec_calibration": spec.get("calibration"), "data": os.path.relpath(a.data, ROOT),
              "command": command, "date": datetime.date.today().isoformat(),
              "kernel_factors": kernel_factors_note(mode),
              "plans": {}}
    seen, seen_raw = [], []  # the rows of the plans evaluated so far, and the model's predictions of them
    for plan in PLANS:
        path = plan_path(a, plan)
        if not os.path.exists(path):
            continue
        rows = plan_rows(a, plan)
        inputs = [r["input"] for r in rows]
        if mode == "earlier":
            ratios = fixed_point_ratios(a.fa4sim, spec, seen, seen_raw) if seen else {}
            preds = predict_with_ratios(a.fa4sim, spec, rows, ratios)
            seen += rows
            seen_raw += predict(a.fa4sim, spec, inputs)
        else:
            preds = predict(a.fa4sim, spec, inputs, mode)
        items = []
        for r, p in zip(rows, preds):
            meas_tf = r["flops"] / (r["ms"] * 1e-3) / 1e12
            at_clock = r["flops"] / (p["total_cycles"] / (r["clock"] * 1e3) * 1e-3) / 1e12 if r["clock"] else None
            items.append({"shape": r["shape"], "kind": r["kind"], "input": r["input"],
                          "measured_tflops": meas_tf, "spread": r["spread"],
                          "predicted_tflops": p["tflops"], "ratio": p["tflops"] / meas_tf,
                          "predicted_tflops_at_sampled_clock": at_clock,
                          "ratio_at_sampled_clock": at_clock / meas_tf if at_clock else None, "binding": p["binding"],
                          "critical_path": p["critical_path"], "clock_mhz_predicted": p["clock_mhz"],
                          "clock_mhz_sampled": r["clock"]})
            if mode != "none":
                items[-1].update(kernel_factor=p["kernel_factor"],
                                 kernel_factor_measurements=p["kernel_factor_measurements"])
        ratios = [abs(i["ratio"] - 1) for i in items]
        eff = effect_rows(rows, preds)
        big = [e for e in eff if e["beyond_spread"]]
        rc = [abs(i["ratio_at_sampled_clock"] - 1) for i in items if i["ratio_at_sampled_clock"]]
        summary = {"configurations": len(items),
                   "within_5pct": sum(x <= 0.05 for x in ratios), "within_10pct": sum(x <= 0.10 for x in ratios),
                   "at_sampled_clock_within_5pct": sum(x <= 0.05 for x in rc),
                   "at_sampled_clock_within_10pct": sum(x <= 0.10 for x in rc),
                   "max_abs_error": max(ratios) if ratios else None,
                   "median_abs_error": statistics.median(ratios) if ratios else None,
                   "effects": len(eff), "effects_beyond_spread": len(big),
                   "effects_sign_right": sum(bool(e["sign_right"]) for e in big),
                   "effects_within_3_points": sum(e["size_error_points"] <= 3 for e in big)}
        report["plans"][plan] = {"summary": summary, "items": items, "effects": eff}
        print(f"{plan}: {summary}")
    write_atomic(a.out, (json.dumps(report, indent=1) + "\n").encode())
    print(f"wrote {a.out}")


def plan_run_paths(a, plan):
    """Every run of the plan: the folders of data/gpu/schedule (beside the primary's) holding it."""
    root = os.path.dirname(os.path.dirname(plan_path(a, plan)))
    return sorted(os.path.join(root, d, plan + ".jsonl") for d in os.listdir(root)
                  if os.path.exists(os.path.join(root, d, plan + ".jsonl")))


def cmd_repeat(a):
    """Per plan with two runs or more: each effect (variant vs stock, same shape) in every run, and
    the largest difference between runs (an exact model's prediction would be off the runs' mean
    by about half of it)."""
    items = []
    for plan in PLANS:
        paths = plan_run_paths(a, plan)
        if len(paths) < 2:
            continue
        runs = [{(json.dumps(r["shape"], sort_keys=True), r["kind"]): r for r in load_rows(p)} for p in paths]
        for key in sorted(runs[0]):
            if key[1] == "stock":
                continue
            stock = (key[0], "stock")
            have = [(p, run) for p, run in zip(paths, runs) if key in run and stock in run]
            eff = [run[stock]["ms"] / run[key]["ms"] - 1 for _, run in have]
            if len(eff) >= 2:
                items.append({"plan": plan, "shape": json.loads(key[0]), "kind": key[1],
                              "runs": [os.path.relpath(p, ROOT) for p, _ in have],
                              "effect_points": [round(100 * e, 3) for e in eff],
                              "largest_difference_points": round(100 * (max(eff) - min(eff)), 3)})
    diffs = [i["largest_difference_points"] for i in items]
    summary = {"effects": len(items), "median_difference_points": statistics.median(diffs),
               "within_3_points": sum(d <= 3 for d in diffs), "within_6_points": sum(d <= 6 for d in diffs),
               "largest_difference_points": max(diffs)}
    report = {"schema": "fa4sim/schedule-effect-repeat-v1",
              "what": "each effect (a variant's TFLOP/s against stock on the same shape, in points) as each protocol "
                      "run of the same plan measured it; within_6_points counts the effects a prediction could "
                      "match to 3 points against the runs' mean if it were exact and the runs' errors symmetric",
              "command": "python3 scripts/datagen/schedule_fit.py repeat", "date": datetime.date.today().isoformat(),
              "summary": summary, "items": items}
    write_atomic(a.out, (json.dumps(report, indent=1) + "\n").encode())
    print(f"repeat: {summary}")
    print(f"wrote {a.out}")


BLACKWELL_FIT_SOURCE = "pull/2109"  # the published rows the sm100 MMA latency is fitted on
GPU_ARCH = {"B200": "b200", "unknown-sm100": "b200", "GB300": "b300", "B300": "b300"}


def blackwell_rows(path):
    rows = []
    for r in json.load(open(path))["rows"]:
        full = all(r.get(k) is not None for k in ("batch", "heads", "seq_q", "head_dim", "causal", "tflops"))
        if r["kernel"] != "fa4" or r["dtype"] != "bf16" or r["gpu"] not in GPU_ARCH or not full:
            continue
        inp = {"arch": GPU_ARCH[r["gpu"]], "batch": r["batch"], "heads": r["heads"],
               "heads_kv": r.get("heads_kv") or r["heads"], "seq": r["seq_q"], "seq_k": r.get("seq_k") or r["seq_q"],
               "d": r["head_dim"], "causal": bool(r["causal"])}
        rows.append({"input": inp, "published": r})
    return rows


def stock_inputs(spec, rows):
    """Upstream's own tricks per row (the spec's tile rules: tau 8 and the emulation table)."""
    out = []
    for r in rows:
        inp = dict(r["input"])
        rule = next(t for t in spec["tiles"] if inp["d"] <= t["d_max"] and t.get("causal", inp["causal"]) == inp["causal"])
        inp["tau"], inp["emu_fraction"] = rule.get("stock_tau", 0), rule.get("stock_emu_fraction", 0)
        out.append(inp)
    return out


def cmd_blackwell(a):
    """Fits the sm100 MMA latency on one source's rows, predicts every other published row."""
    spec_path = os.path.join(ROOT, "data", "schedule", "sm100.json")
    spec = json.load(open(spec_path))
    sm90 = json.load(open(a.spec))  # the H200 calibration, carried over (the clock is not)
    for k, v in sm90["calibrated"].items():
        if not k.startswith("clock_"):
            spec["calibrated"][k] = v
    spec["latency"] = sm90["latency"]
    spec["overhead_instructions"]["value"] = sm90["overhead_instructions"]["value"]
    rows = blackwell_rows(os.path.join(ROOT, "data", "published", "fa4_speeds.json"))
    fit_rows = [r for r in rows if BLACKWELL_FIT_SOURCE in r["published"]["source"]]

    def loss(lat, window):
        spec["calibrated"]["wgmma_latency"] = lat
        spec["window"]["value"] = window
        preds = predict(a.fa4sim, spec, stock_inputs(spec, fit_rows))
        return sum(math.log(p["tflops"] / r["published"]["tflops"]) ** 2 for p, r in zip(preds, fit_rows))

    best = min((loss(lat, w), lat, w) for w in (1, 2, 4, 8, 16) for lat in range(0, 1601, 100))
    lo = max(0, best[1] - 100)
    best = min((loss(lat, best[2]), lat, best[2]) for lat in range(lo, lo + 201, 10))
    spec["calibrated"]["wgmma_latency"], spec["window"]["value"] = best[1], best[2]
    spec["window"] = {"value": best[2], "assumption": False, "source": "fitted with the MMA latency (see calibration)"}
    spec["calibration"]["wgmma_latency"] = (
        f"the MMA latency and the issue window fitted on the {len(fit_rows)} rows of {BLACKWELL_FIT_SOURCE} in "
        f"data/published/fa4_speeds.json (python3 scripts/datagen/schedule_fit.py blackwell, "
        f"{datetime.date.today().isoformat()}); every other constant is the H200 calibration")
    with open(spec_path, "w") as f:
        json.dump(spec, f, indent=2)
        f.write("\n")
    inputs = stock_inputs(spec, rows)
    preds = predict(a.fa4sim, spec, inputs)
    items = []
    for r, p, inp in zip(rows, preds, inputs):
        pub = r["published"]
        items.append({"gpu": pub["gpu"], "arch": r["input"]["arch"], "input": inp, "published_tflops": pub["tflops"],
                      "predicted_tflops": p["tflops"], "ratio": p["tflops"] / pub["tflops"],
                      "used_for_fit": BLACKWELL_FIT_SOURCE in pub["source"], "source": pub["source"],
                      "binding": p["binding"]})
    held = [i for i in items if not i["used_for_fit"]]
    by_src = {}
    for i in held:
        if abs(i["ratio"] - 1) <= 0.10:
            by_src.setdefault(i["source"].split(" (")[0], 0)
            by_src[i["source"].split(" (")[0]] += 1
    summary = {"rows": len(items), "fit_rows": len(items) - len(held), "held_out": len(held),
               "held_out_within_10pct": sum(abs(i["ratio"] - 1) <= 0.10 for i in held),
               "held_out_within_10pct_by_source": by_src, "mma_latency": best[1], "window": best[2]}
    out = {"schema": "fa4sim/schedule-eval-blackwell-v1", "date": datetime.date.today().isoformat(),
           "command": "python3 scripts/datagen/schedule_fit.py blackwell --fa4sim build/fa4sim", "summary": summary,
           "items": items}
    path = os.path.join(ROOT, "data", "schedule", "eval_blackwell.json")
    with open(path + ".tmp", "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)
    print(summary)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cmd", choices=["fit", "cycles", "cyclerms", "eval", "repeat", "factors", "blackwell",
                                    "clocktricks"])
    ap.add_argument("--fa4sim", default=os.path.join(ROOT, "build", "fa4sim"))
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--ncu", default=NCU, help="scripts/gpu/schedule_ncu.sh's output (cycle counts)")
    ap.add_argument("--by-kind", action="store_true",
                    help="cyclerms: also the median log error per head dim, mask and kind")
    ap.add_argument("--clock-weight", type=float, default=1.0,
                    help="weight of the nvidia-smi clock log in fit's loss (0: time alone)")
    ap.add_argument("--params", default="", help="fit only these (comma-separated; default all but the optional)")
    ap.add_argument("--spec", default=SPEC)
    ap.add_argument("--windows", default="1,2,4", help="cycles: the issue windows tried (one Nelder-Mead run each)")
    ap.add_argument("--iters", type=int, default=60)
    ap.add_argument("--extra-params", default="",
                    help="optional terms fitted too, comma-separated: " + ", ".join(OPTIONAL))
    ap.add_argument("--fit-plans", default=None,
                    help="plans the constants are fitted on (round 1 was calibration alone; round 2 adds heldout "
                         "and is judged on heldout2; factors: all, every plan measured)")
    ap.add_argument("--out", default=None, help="eval's, repeat's and factors' report (defaults: " +
                    ", ".join(os.path.relpath(v, ROOT) for v in OUT.values()) + ")")
    ap.add_argument("--kernel-factors", default="none",
                    help="eval: none (the model alone), earlier (each plan's factors from the plans before "
                         "it), or a kernel-factors file applied by fa4sim")
    a = ap.parse_args()
    a.fit_plans = a.fit_plans or ("all" if a.cmd == "factors" else "calibration,heldout")
    if a.kernel_factors not in ("none", "earlier") and not os.path.isfile(a.kernel_factors):
        sys.exit(f"schedule_fit: error: --kernel-factors {a.kernel_factors!r} is neither none, earlier nor a "
                 "file (give a kernel-factors file such as data/schedule/sm90_kernel_factors.json)")
    if a.kernel_factors != "none" and a.cmd != "eval":
        sys.exit("schedule_fit: error: --kernel-factors is an option of eval only")
    # eval with factors writes beside eval_h200.json, never over it (the model alone's record)
    a.out = a.out or (OUT["eval"].replace(".json", "_kernel_factors_earlier.json" if a.kernel_factors == "earlier"
                                           else "_kernel_factors.json")
                      if a.cmd == "eval" and a.kernel_factors != "none" else OUT.get(a.cmd))
    return {"fit": cmd_fit, "cycles": cmd_cycles, "cyclerms": cmd_cyclerms, "eval": cmd_eval,
            "repeat": cmd_repeat, "factors": cmd_factors, "blackwell": cmd_blackwell,
            "clocktricks": cmd_clocktricks}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
