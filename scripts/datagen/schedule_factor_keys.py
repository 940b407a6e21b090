#!/usr/bin/env python3
"""schedule_factor_keys.py: would kernel factors keyed finer than the compiled kernel, or given a
slope in seq, have predicted the H200 held-out sets better? (Note [Kernel factors] in
include/fa4sim/analysis/schedule.h; docs/schedule.md, round 15.)

Reads the model-alone evaluation (data/schedule/eval_h200.json, written by `schedule_fit.py eval`)
and replays `eval --kernel-factors earlier` forward in time with each factor multiplying the modelled
time and nothing else, as fa4sim applied factors up to round 16 (since round 17 a factor also moves
a tricks variant's clock, Note [Kernel factors in the clock], which this replay leaves out; its
`kernel` row agrees with round 16's stored scoring, data/schedule/eval_h200_kernel_factors_earlier_r16.json,
over the plans that holds): each plan from heldout14 on gets, per
configuration, the median of measured / modelled time of the configurations measured in the plans
before it that share its key, falling back to the kernel's median when the finer key has fewer
than two. Keys:
  kernel             the compiled kernel (head dim, mask, tau, emulated fraction, degree): what ships
  kernel+seq         and the sequence length
  kernel+seq>=16k    and whether seq >= 16384
  kernel+BH<=48      and whether batch x heads <= 48
  kernel+seq-slope   the kernel's factor times exp(b * log2(seq / 8192)), one b per (tau on,
                     emulated fraction), fitted by least squares on the earlier plans' residuals
  paired-effects     times as `kernel`; each effect from the model's effect times the median, over
                     the earlier shapes where both kernels ran, of measured / modelled (variant /
                     stock) for the same pair of kernels (shape-paired, so what the two kernels
                     share at a shape cancels)
Prints per key: configurations within 5 % and 10 %, and the effects beyond their spread with the
sign right and within 3 points (the issue's targets); --json writes the same.
  python3 scripts/datagen/schedule_factor_keys.py [--eval data/schedule/eval_h200.json] [--last PLAN] [--json OUT]
--last: score the plans up to and including PLAN only.
"""
import argparse
import collections
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mufu_table import write_atomic  # noqa: E402 (same folder)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIRST = 14  # heldout14 and later: the sets the round-15 figures sum


def kernel(i):
    """As schedule_fit.kernel_key: None for a tile override, which keeps the model alone (fa4sim
    applies no factor with --tile) and gives no kernel its ratio."""
    if "tile" in i:
        return None
    emu = float(i.get("emu_fraction", 0))
    return (i["d"], bool(i["causal"]), float(i.get("tau", 0)), emu, int(i.get("degree", 3)) if emu > 0 else 3)


KEYS = {
    "kernel": lambda i: kernel(i),
    "kernel+seq": lambda i: kernel(i) + (i["seq"],),
    "kernel+seq>=16k": lambda i: kernel(i) + (i["seq"] >= 16384,),
    "kernel+BH<=48": lambda i: kernel(i) + (i["batch"] * i["heads"] <= 48,),
    "kernel+seq-slope": None,
    "paired-effects": None,
}


def trick(i):
    return (float(i.get("tau", 0)) > 0, float(i.get("emu_fraction", 0)))


def ratio(it):
    return it["measured_tflops"] / it["predicted_tflops"]  # = modelled / measured time's inverse


def slopes(earlier, med):
    """Per trick class: b of log(ratio / kernel factor) = b * log2(seq / 8192), least squares."""
    xs, ys = collections.defaultdict(list), collections.defaultdict(list)
    for it in earlier:
        k = kernel(it["input"])
        if k is not None and len(med[k]) >= 3:
            xs[trick(it["input"])].append(math.log2(it["input"]["seq"] / 8192))
            ys[trick(it["input"])].append(math.log(ratio(it) / statistics.median(med[k])))
    out = {}
    for t, x in xs.items():
        mx, my = statistics.fmean(x), statistics.fmean(ys[t])
        sxx = sum((v - mx) ** 2 for v in x)
        out[t] = sum((v - mx) * (w - my) for v, w in zip(x, ys[t])) / sxx if sxx > 0 else 0.0
    return out


def paired_ratios(ev, plans):
    """(stock kernel, variant kernel) -> measured / modelled (variant / stock) at each shape of
    `plans` where both ran."""
    out = collections.defaultdict(list)
    for plan in plans:
        items = ev["plans"][plan]["items"]
        stock = {json.dumps(it["shape"], sort_keys=True): it for it in items if it["kind"] == "stock"}
        for it in items:
            st = stock.get(json.dumps(it["shape"], sort_keys=True))
            if st is not None and it["kind"] != "stock" and kernel(it["input"]) is not None:
                out[(kernel(st["input"]), kernel(it["input"]))].append(
                    (it["measured_tflops"] / st["measured_tflops"]) / (it["predicted_tflops"] / st["predicted_tflops"]))
    return out


def score(ev, name, last=None):
    plans = list(ev["plans"])
    if last is not None:
        plans = plans[:plans.index(last) + 1]
    tot = collections.Counter()
    for n, plan in enumerate(plans):
        num = plan[len("heldout"):]
        if not (plan.startswith("heldout") and num.isdigit() and int(num) >= FIRST):
            continue
        earlier = [it for q in plans[:n] for it in ev["plans"][q]["items"]]
        med = collections.defaultdict(list)
        fine = collections.defaultdict(list)
        keyf = KEYS[name] or kernel
        for it in earlier:
            if kernel(it["input"]) is not None:
                med[kernel(it["input"])].append(ratio(it))
                fine[keyf(it["input"])].append(ratio(it))
        b = slopes(earlier, med) if name == "kernel+seq-slope" else {}
        pairs = paired_ratios(ev, plans[:n]) if name == "paired-effects" else {}

        def factor(i):
            if kernel(i) is None:
                return 1.0
            f = fine.get(keyf(i), [])
            if len(f) >= 2:
                g = statistics.median(f)
            elif med.get(kernel(i)):
                g = statistics.median(med[kernel(i)])
            else:
                return 1.0  # a kernel never measured: the model alone
            return g * math.exp(b.get(trick(i), 0.0) * math.log2(i["seq"] / 8192)) if b else g

        pred, model, kern = {}, {}, {}
        for it in ev["plans"][plan]["items"]:
            p = it["predicted_tflops"] * factor(it["input"])
            k = (json.dumps(it["shape"], sort_keys=True), it["kind"])
            pred[k], model[k], kern[k] = p, it["predicted_tflops"], kernel(it["input"])
            err = abs(p / it["measured_tflops"] - 1)
            tot["configurations"] += 1
            tot["within_5pct"] += err <= 0.05
            tot["within_10pct"] += err <= 0.10
        for e in ev["plans"][plan]["effects"]:
            if not e["beyond_spread"]:
                continue
            s = json.dumps(e["shape"], sort_keys=True)
            v, st = (s, e["kind"]), (s, "stock")
            pe = pred[v] / pred[st] - 1
            r = pairs.get((kern[st], kern[v]), [])
            if len(r) >= 2:  # paired-effects: the pair's earlier median, else the kernel factors
                pe = model[v] / model[st] * statistics.median(r) - 1
            tot["effects_beyond_spread"] += 1
            tot["effects_sign_right"] += (pe > 0) == (e["measured_effect"] > 0)
            tot["effects_within_3_points"] += abs(pe - e["measured_effect"]) * 100 <= 3
    return dict(tot)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval", default=os.path.join(ROOT, "data/schedule/eval_h200.json"),
                    help="schedule_fit.py eval's model-alone report (default data/schedule/eval_h200.json)")
    ap.add_argument("--json", help="write the table to this file")
    ap.add_argument("--last", help="the last plan to score (default: every plan of --eval)")
    a = ap.parse_args()
    try:
        ev = json.load(open(a.eval))
        ev["plans"]
    except (OSError, ValueError, KeyError) as e:
        print(f"schedule_factor_keys: error: cannot read --eval {a.eval!r}: {e} (run schedule_fit.py eval first)",
              file=sys.stderr)
        return 2
    if a.last is not None and a.last not in ev["plans"]:
        print(f"schedule_factor_keys: error: --last {a.last!r} is not a plan of {a.eval} (one of "
              f"{', '.join(ev['plans'])})", file=sys.stderr)
        return 2
    rows = {name: score(ev, name, a.last) for name in KEYS}
    upto = f" to {a.last}" if a.last else " and later"
    print(f"heldout{FIRST}{upto}, each plan's factors from the plans before it ({os.path.relpath(a.eval, ROOT)})")
    print(f"{'key':<18} {'configs':>7} {'<=5 %':>6} {'<=10 %':>6} {'effects':>7} {'sign':>5} {'<=3 pts':>7}")
    for name, t in rows.items():
        print(f"{name:<18} {t['configurations']:>7} {t['within_5pct']:>6} {t['within_10pct']:>6} "
              f"{t['effects_beyond_spread']:>7} {t['effects_sign_right']:>5} {t['effects_within_3_points']:>7}")
    if a.json:
        write_atomic(a.json, (json.dumps({"schema": "fa4sim/schedule-factor-keys-v1",
                                          "eval": os.path.relpath(a.eval, ROOT), "first_plan": f"heldout{FIRST}",
                                          "last_plan": a.last,
                                          "command": "python3 scripts/datagen/schedule_factor_keys.py "
                                                     + (f"--last {a.last} " if a.last else "") + "--json "
                                                     + os.path.relpath(os.path.abspath(a.json), ROOT),
                                          "keys": rows}, indent=1) + "\n").encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
