#!/usr/bin/env python3
"""variant_clocks.py: the SM clock each tricks variant ran at in the timed protocol runs, against the
stock kernel on the same shape (docs/schedule.md "Round 12").

For every folder of data/gpu/schedule with a clock log (clocks.csv, nvidia-smi every ~20 ms) and
protocol runs (<plan>.jsonl): per shape and kind the median of the samples taken while that kind's
rounds ran (round_wall), then the change against stock's; printed as the median and mean change per
head-dim group (up to 64, 96, 128, 192, 256), mask and kind. Kinds with fewer than 8 samples are left
out.

  python3 scripts/datagen/variant_clocks.py [--root data/gpu/schedule]

--effective: the effective clock instead (docs/schedule.md "Round 16"): per plan and shape, Nsight
Compute's cycles of one launch (gpc__cycles_elapsed.max, schedule_ncu.sh) over the timed runs'
median time, variant against stock, as the median per mask, head dim (<= 128 or above), seq
(<= 6144, 8192, >= 16384) and kind; and the same for the cycles alone (the effect in cycles,
measured and modelled), which show whether a change in time is the clock's or the cycles'. It reads
the timed runs and counts under --root too.

--effective --per-shape: one row per plan, shape and kind instead of the medians, with the model's
clock change for the timed shape beside the measured one (the model alone, and with the kernel
factors of --kernel-factors, default data/schedule/sm90_kernel_factors.json: docs/schedule.md
"Round 17").
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
import schedule_fit  # noqa: E402
from schedule_fit import ROOT, load_clock_log  # noqa: E402

GROUPS = (64, 96, 128, 192, 256)


LENGTHS = (("< 4", 4e6), ("4-8", 8e6), ("8-12", 12e6), (">= 12", float("inf")))  # stock Mcycles
LENGTHS_ORDER = {name: i for i, (name, _) in enumerate(LENGTHS)}


def seq_group(seq):
    return ">=16384" if seq >= 16384 else ("8192" if seq >= 8192 else "<=6144")


def model_clocks(fa4sim, spec, rows, factors):
    """{(shape, kind): (clock of the model alone, clock with `factors`)} for the timed rows."""
    inputs = [r["input"] for r in rows]
    alone = schedule_fit.predict(fa4sim, spec, inputs)
    with_f = schedule_fit.predict(fa4sim, spec, inputs, factors)
    return {(json.dumps(r["shape"], sort_keys=True), r["kind"]): (p["clock_mhz"], q["clock_mhz"])
            for r, p, q in zip(rows, alone, with_f)}


def effective(fa4sim, root, per_shape=False, factors=None):
    """The effective clock and the cycles' effects of each variant against stock (--effective), from
    the run folders under `root` (schedule_fit's default folders' names, and the newest others)."""
    spec = json.load(open(schedule_fit.SPEC))
    if per_shape:
        print("plan | head dim | mask | batch | heads | seq | kind | stock Mcycles | effect in cycles: measured, "
              "modelled | clock vs stock: effective (measured), model alone, model with factors")
    a = argparse.Namespace(ncu=os.path.join(root, os.path.basename(schedule_fit.NCU)),
                           data=os.path.join(root, os.path.basename(schedule_fit.DATA)))
    clk, cyc, binned = collections.defaultdict(list), collections.defaultdict(list), collections.defaultdict(list)
    for plan in schedule_fit.PLANS:
        if not os.path.exists(schedule_fit.plan_path(a, plan)):
            continue
        folder = schedule_fit.ncu_folder(a, plan)
        if not os.path.exists(os.path.join(folder, f"ncu_{plan}.csv")):  # a plan without counts
            continue
        ncu = schedule_fit.load_ncu_rows(folder, plan)
        timed = schedule_fit.plan_rows(a, plan)
        ms = {(json.dumps(r["shape"], sort_keys=True), r["kind"]): r["ms"] for r in timed}
        preds = schedule_fit.predict(fa4sim, spec, schedule_fit.ncu_inputs(ncu))
        clocks = model_clocks(fa4sim, spec, timed, factors) if per_shape else {}
        by = {(json.dumps(r["shape"], sort_keys=True), r["kind"]): (r, p) for r, p in zip(ncu, preds)}
        for (shape, kind), (r, p) in by.items():
            if kind == "stock" or kind.startswith("tile") or (shape, "stock") not in by:
                continue
            sr, sp = by[(shape, "stock")]
            s = r["shape"]
            key = ("causal" if s["causal"] else "no mask", "<=128" if s["head_dim"] <= 128 else ">128",
                   seq_group(s["seq"]), kind)
            cyc[key].append((sr["cycles"] / r["cycles"] - 1, sp["total_cycles"] / p["total_cycles"] - 1))
            if (shape, kind) in ms and (shape, "stock") in ms:
                clk[key].append(r["cycles"] / ms[(shape, kind)] / (sr["cycles"] / ms[(shape, "stock")]) - 1)
                if per_shape:
                    (va, vf), (sa, sf) = clocks[(shape, kind)], clocks[(shape, "stock")]
                    length = next(g for g in LENGTHS if sr["cycles"] < g[1])[0]
                    binned[(key[1], length)].append((clk[key][-1], va / sa - 1, vf / sf - 1))
                    print(f"{plan} | {s['head_dim']} | {key[0]} | {s['batch']} | {s['heads']} | {s['seq']} | {kind} | "
                          f"{sr['cycles'] / 1e6:.1f} | {100 * cyc[key][-1][0]:+.1f} %, {100 * cyc[key][-1][1]:+.1f} % | "
                          f"{100 * clk[key][-1]:+.1f} %, {100 * (va / sa - 1):+.1f} %, {100 * (vf / sf - 1):+.1f} %")
    if per_shape:
        print("head dim | stock Mcycles | shapes x kinds | clock vs stock (medians): effective (measured), "
              "model alone, model with factors | median |model - measured|: alone, with factors")
        for (dims, length), v in sorted(binned.items(), key=lambda kv: (kv[0][0], LENGTHS_ORDER[kv[0][1]])):
            print(f"{dims} | {length} | {len(v)} | " + ", ".join(
                f"{100 * statistics.median(x[i] for x in v):+.1f} %" for i in range(3)) + " | " + ", ".join(
                f"{100 * statistics.median(abs(x[i] - x[0]) for x in v):.2f}" for i in (1, 2)))
        return
    print("mask | head dim | seq | kind | shapes | effective clock vs stock (median) | effect in cycles: "
          "measured, modelled (medians)")
    for key in sorted(cyc):
        if len(cyc[key]) < 3:
            continue
        c = f"{100 * statistics.median(clk[key]):+.1f} %" if clk[key] else "-"
        m = statistics.median(x[0] for x in cyc[key])
        p = statistics.median(x[1] for x in cyc[key])
        print(f"{key[0]} | {key[1]} | {key[2]} | {key[3]} | {len(cyc[key])} | {c} | {100 * m:+.1f} %, {100 * p:+.1f} %")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.join(ROOT, "data", "gpu", "schedule"))
    ap.add_argument("--effective", action="store_true", help="the effective clock and the cycles' effects")
    ap.add_argument("--fa4sim", default=os.path.join(ROOT, "build", "fa4sim"), help="for --effective")
    ap.add_argument("--per-shape", action="store_true", help="with --effective: a row per plan, shape and kind")
    ap.add_argument("--kernel-factors", default=schedule_fit.OUT["factors"],
                    help="with --per-shape: the factors file of the model's clock with factors")
    a = ap.parse_args()
    if not os.path.isdir(a.root):
        print(f"variant_clocks: error: no folder {a.root} (give --root the data/gpu/schedule folder)", file=sys.stderr)
        sys.exit(2)
    if a.effective:
        if not os.access(a.fa4sim, os.X_OK):
            print(f"variant_clocks: error: fa4sim binary '{a.fa4sim}' not found (--fa4sim)", file=sys.stderr)
            sys.exit(2)
        if a.per_shape and not os.path.isfile(a.kernel_factors):
            print(f"variant_clocks: error: no kernel-factors file {a.kernel_factors} (--kernel-factors)", file=sys.stderr)
            sys.exit(2)
        effective(a.fa4sim, a.root, a.per_shape, a.kernel_factors)
        return
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
