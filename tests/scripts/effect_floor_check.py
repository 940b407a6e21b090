"""ctest `effect_floor` (fast): scripts/datagen/effect_floor.py.
- On a scoring and a repeat file made up here, whose chances follow by hand: the pairs of runs
  differ by 0.5, 2, 5 and 7 points, so an exact prediction is within 3 points of a two-run mean
  (differences <= 6) with chance 3/4 and of a single run (<= 3 sqrt 2) with 1/2; a single-run effect
  of -2 points keeps its sign with chance 1 - (1 - 2/4) / 2 = 3/4 (differences <= 2 sqrt 2). Effects
  within their spread and plans before --first-plan are left out. Stratified by spread, a bin
  holds the pairs of the scored effects in it, and an empty bin falls back to every pair.
- On the stored files: the model's counts are the forward-in-time scoring's own (its summaries
  over heldout14 on), and the summary is data/schedule/effect_floor.json's.
- A missing --eval, a --first-plan that is not a held-out plan, and a repeat file without an
  effect measured twice exit 2 with the script's error.
Exit 77 if the stored files are absent."""
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "datagen", "effect_floor.py")
EVAL = os.path.join(ROOT, "data", "schedule", "eval_h200_kernel_factors_earlier.json")
STORED = os.path.join(ROOT, "data", "schedule", "effect_floor.json")
if not os.path.exists(EVAL) or not os.path.exists(STORED):
    print(f"SKIP: {EVAL} or {STORED} is absent")
    sys.exit(77)

fails = 0


def check(what, got, want):
    global fails
    ok = math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12) if isinstance(want, float) else got == want
    if not ok:
        print(f"FAIL: {what}: got {got!r}, want {want!r}")
        fails += 1


def effect(shape_seq, kind, measured, predicted, spread):
    beyond = abs(measured) > spread
    return {"shape": {"seq": shape_seq}, "kind": kind, "measured_effect": measured, "predicted_effect": predicted,
            "spread": spread, "beyond_spread": beyond,
            "sign_right": ((measured > 0) == (predicted > 0)) if beyond else None,
            "size_error_points": 100 * abs(predicted - measured)}


def run(args):
    return subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True)


with tempfile.TemporaryDirectory() as tmp:
    ev = {"plans": {
        "heldout13": {"effects": [effect(1, "a", -0.3, 0.1, 0.01)]},  # before --first-plan
        "heldout14": {"effects": [
            effect(1, "a", 0.10, 0.12, 0.01),    # two runs; within 3 points
            effect(2, "a", -0.02, 0.015, 0.01),  # one run; 3.5 points off, sign wrong
            effect(3, "a", 0.20, 0.21, 0.05),    # one run; spread 5 points
            effect(4, "a", 0.01, 0.30, 0.02)]}}}  # within its spread: left out
    rep = {"items": [
        {"plan": "heldout14", "shape": {"seq": 1}, "kind": "a", "runs": ["x", "y"], "effect_points": [10, 12]},
        {"plan": "heldout9", "shape": {"seq": 1}, "kind": "a", "runs": ["x", "y"], "effect_points": [0, 7]},
        {"plan": "heldout9", "shape": {"seq": 2}, "kind": "a", "runs": ["x", "y"], "effect_points": [1, 1.5]},
        {"plan": "heldout9", "shape": {"seq": 3}, "kind": "a", "runs": ["x", "y"], "effect_points": [3, 8]}]}
    ep, rp, out = (os.path.join(tmp, n) for n in ("eval.json", "repeat.json", "floor.json"))
    json.dump(ev, open(ep, "w"))
    json.dump(rep, open(rp, "w"))
    r = run(["--eval", ep, "--repeat", rp, "--json", out])
    check("made-up files: rc", r.returncode, 0)
    if r.returncode == 0:
        s = json.load(open(out))["summary"]
        check("effects beyond spread", s["effects_beyond_spread"], 3)
        check("runs per effect", s["runs_per_effect"], {"1": 2, "2": 1})
        check("model within 3", s["model_within_3"], 2)
        check("model signs", s["model_signs_right"], 2)
        check("exact expected within 3", s["exact_expected_within_3"], 0.75 + 0.5 + 0.5)
        check("exact chance of every size", s["exact_chance_every_within_3"], 0.75 * 0.5 * 0.5)
        check("exact expected signs", s["exact_expected_signs_right"], 1 + 0.75 + 1)
        # n runs each: within 3 sqrt(2 n): 4.24 -> 2 of 4 pairs, 6 -> 3 of 4, 7.35 and more -> all
        with_runs = s["exact_chance_every_within_3_with_runs"]
        check("every size, 1 run each", with_runs["1"], 0.5 ** 3)
        check("every size, 2 runs each", with_runs["2"], 0.75 ** 3)
        check("every size, 3 runs each", with_runs["3"], 1.0)
        check("exact chance of every sign", s["exact_chance_every_sign_right"], 0.75)
        # stratified by spread: only the first effect's pair is scored (spread 1 point, bin <= 1.5,
        # differing by 2); the 5-point bin has no pair and falls back to every pair
        b = s["by_spread"]
        check("by spread: pairs", b["repeat_pairs"], [1, 0, 0, 0])
        check("by spread: expected within 3", b["exact_expected_within_3"], 1 + 1 + 0.5)
        check("by spread: chance of every size", b["exact_chance_every_within_3"], 0.5)
        check("by spread: expected signs", b["exact_expected_signs_right"], 3)
        check("spread <= 3", s["spread_at_most_3_points"], {"effects": 2, "model_within_3": 1, "model_signs_right": 1})
        check("spread > 3", s["spread_above_3_points"], {"effects": 1, "model_within_3": 1, "model_signs_right": 1})

    # the stored files
    r = run(["--json", out])
    check("stored files: rc", r.returncode, 0)
    if r.returncode == 0:
        got = json.load(open(out))["summary"]
        want = {"effects_beyond_spread": 0, "effects_within_3_points": 0, "effects_sign_right": 0}
        for plan, v in json.load(open(EVAL))["plans"].items():
            num = plan[len("heldout"):]
            if plan.startswith("heldout") and num.isdigit() and int(num) >= 14:
                for k in want:
                    want[k] += v["summary"][k]
        check("stored: effects", got["effects_beyond_spread"], want["effects_beyond_spread"])
        check("stored: model within 3", got["model_within_3"], want["effects_within_3_points"])
        check("stored: model signs", got["model_signs_right"], want["effects_sign_right"])
        check("stored: summary as data/schedule/effect_floor.json", got, json.load(open(STORED))["summary"])
        print(f"stored files: {got}")

    # bad input
    empty = os.path.join(tmp, "empty.json")
    json.dump({"items": []}, open(empty, "w"))
    for args, msg in ((["--eval", os.path.join(tmp, "none.json")], "effect_floor: error: cannot read --eval"),
                      (["--first-plan", "calibration"], "effect_floor: error: --first-plan 'calibration' is not"),
                      (["--eval", ep, "--repeat", empty, "--json", out],
                       "effect_floor: error: the --repeat file holds no effect measured twice")):
        r = run(args)
        if r.returncode != 2 or msg not in r.stderr:
            print(f"FAIL: {args}: rc {r.returncode}, stderr {r.stderr!r}")
            fails += 1

print("effect_floor: " + ("FAIL" if fails else "OK"))
sys.exit(1 if fails else 0)
