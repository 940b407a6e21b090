#!/usr/bin/env python3
"""effect_floor.py: how many of the H200 tricks effects could a prediction with no error at all
have matched to 3 points, given how far two protocol runs of the same effect disagree? (issue #22's
acceptance: "the sign of every effect larger than its measured spread predicted right, and its size
within 3 points"; docs/schedule.md, "What an exact model could score".)

Reads the forward-in-time scoring (`schedule_fit.py eval --kernel-factors earlier`,
data/schedule/eval_h200_kernel_factors_earlier.json) and the effects measured in two protocol runs or
more (`schedule_fit.py repeat`, data/schedule/effect_repeat.json). For each effect beyond its spread
in the plans from --first-plan on, the scoring compared the prediction with the geometric mean of n
runs (n: the runs repeat lists for it, else 1). An exact prediction is off that mean by the mean of
the n runs' errors. With the runs' errors independent and symmetric, the mean of two of them is
distributed as half their difference, so for n = 2 the chance that an exact prediction lands within
3 points is the share of repeated effects whose two runs differ by 6 points or less, whatever the
errors' distribution; for n = 1 and n >= 3 the script scales by sqrt(2 n) (exact for normal errors):
the share within 3 sqrt(2 n). The sign: with the measured effect m standing in for the true one, an
exact prediction's sign differs from the measured one when the runs' mean error exceeds |m| the other
way: (1 - share within |m| sqrt(2 n)) / 2. The difference distribution is every pair of runs of every
repeated effect; and, since effects whose runs differ more are measured less precisely (their
scored spread holds the runs' differences), also the pairs of the scored effects in the same band of
spread (<= 1.5, 3, 6 points, wider), a band without pairs falling back to every pair. The runs of one
plan were mostly taken back to back on one machine, so what they share is not in their difference:
the floor is what an exact model could at best expect.

Prints and writes (--json, default data/schedule/effect_floor.json): per effect, the measured and
predicted effect, spread, runs, and an exact prediction's chances; in summary the model's counts,
an exact prediction's expected counts, the chance that it matches every effect, and the model's
counts split by whether the measured spread is under 3 points, and the chance of every one within 3 points
if every effect were the mean of n = 1..8 runs.
  python3 scripts/datagen/effect_floor.py [--eval FILE] [--repeat FILE] [--first-plan heldout14] [--json OUT]
"""
import argparse
import bisect
import datetime
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mufu_table import write_atomic  # noqa: E402 (same folder)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EVAL = os.path.join(ROOT, "data", "schedule", "eval_h200_kernel_factors_earlier.json")
REPEAT = os.path.join(ROOT, "data", "schedule", "effect_repeat.json")
OUT = os.path.join(ROOT, "data", "schedule", "effect_floor.json")
POINTS = 3.0  # the acceptance's size tolerance, in points


def fail(what, hint):
    print(f"effect_floor: error: {what} ({hint})", file=sys.stderr)
    sys.exit(2)


def read_json(path, flag):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"cannot read {flag} {path}: {e}", f"give the file schedule_fit.py {flag[2:]} writes")


def plan_number(plan):
    """heldoutN -> N; heldout -> 1; any other plan (calibration, moonshot, diagN) -> None."""
    if plan == "heldout":
        return 1
    rest = plan[len("heldout"):]
    return int(rest) if plan.startswith("heldout") and rest.isdigit() else None


def key(plan, shape, kind):
    return (plan, json.dumps(shape, sort_keys=True), kind)


class Differences:
    """The empirical distribution of |difference| between two runs of one effect, in points."""

    def __init__(self, items):
        self.d = sorted(abs(a - b) for i in items for j, a in enumerate(i["effect_points"])
                        for b in i["effect_points"][j + 1:])
        if not self.d:
            fail("the --repeat file holds no effect measured twice", "run schedule_fit.py repeat after two runs")

    def share_within(self, x):
        return bisect.bisect_right(self.d, x) / len(self.d)


def chances(diffs, measured_points, runs):
    """An exact prediction's chance to land within POINTS of the runs' mean, and to have the
    measured sign."""
    scale = math.sqrt(2 * runs)
    return diffs.share_within(POINTS * scale), 1 - (1 - diffs.share_within(abs(measured_points) * scale)) / 2


SPREAD_BINS = (1.5, 3.0, 6.0, math.inf)  # points: the strata of the spread-aware floor


def spread_bin(points):
    return next(i for i, top in enumerate(SPREAD_BINS) if points <= top)


def floor(ev, rep, first):
    diffs = Differences(rep["items"])
    runs = {key(i["plan"], i["shape"], i["kind"]): len(i["runs"]) for i in rep["items"]}
    # Effects whose runs differ more are measured less precisely, and their spread (which holds
    # the runs' differences) says so: the repeated effects, stratified by their scored spread.
    spreads = {key(plan, e["shape"], e["kind"]): 100 * e["spread"] for plan, v in ev["plans"].items()
               for e in v["effects"]}
    strata = [[] for _ in SPREAD_BINS]
    for i in rep["items"]:
        k = key(i["plan"], i["shape"], i["kind"])
        if k in spreads:
            strata[spread_bin(spreads[k])].append(i)
    by_spread = [Differences(items) if items else diffs for items in strata]
    effects = []
    for plan, v in ev["plans"].items():
        num = plan_number(plan)
        if num is None or num < first:
            continue
        for e in v["effects"]:
            if not e["beyond_spread"]:
                continue
            n = runs.get(key(plan, e["shape"], e["kind"]), 1)
            m = 100 * e["measured_effect"]
            p3, ps = chances(diffs, m, n)
            q3, qs = chances(by_spread[spread_bin(100 * e["spread"])], m, n)
            effects.append({"plan": plan, "shape": e["shape"], "kind": e["kind"], "runs": n,
                            "measured_points": round(m, 3), "predicted_points": round(100 * e["predicted_effect"], 3),
                            "spread_points": round(100 * e["spread"], 3),
                            "model_within_3": e["size_error_points"] <= POINTS, "model_sign_right": bool(e["sign_right"]),
                            "exact_within_3_chance": round(p3, 5), "exact_sign_chance": round(ps, 5),
                            "exact_within_3_chance_by_spread": round(q3, 5), "exact_sign_chance_by_spread": round(qs, 5)})
    if not effects:
        fail(f"no effect beyond its spread in the plans from heldout{first} on", "give an earlier --first-plan")
    tight = [e for e in effects if e["spread_points"] <= POINTS]
    loose = [e for e in effects if e["spread_points"] > POINTS]
    summary = {
        "effects_beyond_spread": len(effects),
        "runs_per_effect": {str(n): sum(e["runs"] == n for e in effects) for n in sorted({e["runs"] for e in effects})},
        "repeat_pairs": len(diffs.d),
        "repeat_pairs_within_6_points": diffs.share_within(6.0),
        "model_within_3": sum(e["model_within_3"] for e in effects),
        "model_signs_right": sum(e["model_sign_right"] for e in effects),
        "exact_expected_within_3": round(sum(e["exact_within_3_chance"] for e in effects), 2),
        "exact_expected_signs_right": round(sum(e["exact_sign_chance"] for e in effects), 2),
        "exact_chance_every_within_3": math.prod(e["exact_within_3_chance"] for e in effects),
        "exact_chance_every_sign_right": math.prod(e["exact_sign_chance"] for e in effects),
        # if every effect were the mean of n runs: an exact prediction's chance of every size
        # within 3 points (every pair, scaled by sqrt(2 n); the pairs' tail holds few points)
        "exact_chance_every_within_3_with_runs": {
            str(n): diffs.share_within(POINTS * math.sqrt(2 * n)) ** len(effects) for n in range(1, 9)},
        "by_spread": {
            "spread_bins_points": [f"<= {top}" for top in SPREAD_BINS],
            "repeat_pairs": [len(d.d) if items else 0 for d, items in zip(by_spread, strata)],
            "repeat_pairs_within_6_points": [d.share_within(6.0) if items else None
                                             for d, items in zip(by_spread, strata)],
            "exact_expected_within_3": round(sum(e["exact_within_3_chance_by_spread"] for e in effects), 2),
            "exact_expected_signs_right": round(sum(e["exact_sign_chance_by_spread"] for e in effects), 2),
            "exact_chance_every_within_3": math.prod(e["exact_within_3_chance_by_spread"] for e in effects),
            "exact_chance_every_sign_right": math.prod(e["exact_sign_chance_by_spread"] for e in effects)},
        "spread_at_most_3_points": {"effects": len(tight), "model_within_3": sum(e["model_within_3"] for e in tight),
                                    "model_signs_right": sum(e["model_sign_right"] for e in tight)},
        "spread_above_3_points": {"effects": len(loose), "model_within_3": sum(e["model_within_3"] for e in loose),
                                  "model_signs_right": sum(e["model_sign_right"] for e in loose)},
    }
    return summary, effects


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval", default=EVAL, help="schedule_fit.py eval --kernel-factors earlier's report")
    ap.add_argument("--repeat", default=REPEAT, help="schedule_fit.py repeat's report")
    ap.add_argument("--first-plan", default="heldout14", help="score the plans heldoutN from this one on")
    ap.add_argument("--json", default=OUT, help="the report (written atomically)")
    a = ap.parse_args()
    first = plan_number(a.first_plan)
    if first is None:
        fail(f"--first-plan {a.first_plan!r} is not a held-out plan", "give heldoutN, e.g. heldout14")
    ev, rep = read_json(a.eval, "--eval"), read_json(a.repeat, "--repeat")
    summary, effects = floor(ev, rep, first)
    s = summary
    print(f"effects beyond their spread, {a.first_plan} on: {s['effects_beyond_spread']} "
          f"(runs per effect: {s['runs_per_effect']}); repeat: {s['repeat_pairs']} pairs of runs, "
          f"{100 * s['repeat_pairs_within_6_points']:.1f} % within 6 points")
    print("| | within 3 points | signs right |")
    print("|---|---:|---:|")
    print(f"| the model | {s['model_within_3']} | {s['model_signs_right']} |")
    print(f"| an exact prediction, expected | {s['exact_expected_within_3']:.1f} | {s['exact_expected_signs_right']:.1f} |")
    print(f"| an exact prediction, chance of every one | {100 * s['exact_chance_every_within_3']:.2g} % | "
          f"{100 * s['exact_chance_every_sign_right']:.2g} % |")
    b = s["by_spread"]
    print(f"| the same, repeats stratified by spread, expected | {b['exact_expected_within_3']:.1f} | "
          f"{b['exact_expected_signs_right']:.1f} |")
    print(f"| the same, chance of every one | {100 * b['exact_chance_every_within_3']:.2g} % | "
          f"{100 * b['exact_chance_every_sign_right']:.2g} % |")
    for name, part in (("spread <= 3 points", s["spread_at_most_3_points"]), ("spread > 3 points", s["spread_above_3_points"])):
        print(f"{name}: {part['effects']} effects, the model {part['model_within_3']} within 3 points, "
              f"{part['model_signs_right']} signs right")
    print("if every effect were measured in n runs, an exact prediction's chance of every size within 3 points: " +
          ", ".join(f"n {n}: {100 * c:.3g} %" for n, c in s["exact_chance_every_within_3_with_runs"].items()))
    report = {"schema": "fa4sim/schedule-effect-floor-v1",
              "what": "each effect beyond its spread in the forward-in-time scoring, with the chance that a prediction "
                      "without error lands within 3 points of the measured runs' mean and has its sign (from how far "
                      "two protocol runs of one effect differ); the runs' errors taken as independent and symmetric",
              "command": "python3 scripts/datagen/effect_floor.py"
                         + (f" --first-plan {a.first_plan}" if a.first_plan != "heldout14" else ""),
              "eval": os.path.relpath(os.path.abspath(a.eval), ROOT),
              "repeat": os.path.relpath(os.path.abspath(a.repeat), ROOT),
              "date": datetime.date.today().isoformat(), "summary": summary, "effects": effects}
    write_atomic(a.json, (json.dumps(report, indent=1) + "\n").encode())
    print(f"wrote {os.path.relpath(os.path.abspath(a.json), ROOT)}")


if __name__ == "__main__":
    sys.exit(main())
