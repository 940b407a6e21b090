"""ctest `schedule_factor_keys` (fast): scripts/datagen/schedule_factor_keys.py's replay with the
kernel key (factors multiplying the modelled time, as fa4sim applied them up to round 16) gives,
over heldout14 to the last plan round 16 scored, the counts that `schedule_fit.py eval
--kernel-factors earlier` stored then (data/schedule/eval_h200_kernel_factors_earlier_r16.json):
the two are independent implementations of the same forward-in-time scoring, and the model alone
that both start from did not change in round 17. A missing --eval file, or a --last that is not a
plan, exits 2 with the script's error. Exit 77 if the stored files are absent."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "datagen", "schedule_factor_keys.py")
STORED = os.path.join(ROOT, "data", "schedule", "eval_h200_kernel_factors_earlier_r16.json")
if not os.path.exists(STORED):
    print(f"SKIP: {STORED} is absent")
    sys.exit(77)

fails = 0
stored = json.load(open(STORED))["plans"]
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "keys.json")
    subprocess.run([sys.executable, SCRIPT, "--last", list(stored)[-1], "--json", out], check=True,
                   capture_output=True)
    got = json.load(open(out))["keys"]["kernel"]
want = {"configurations": 0, "within_5pct": 0, "within_10pct": 0, "effects_beyond_spread": 0,
        "effects_sign_right": 0, "effects_within_3_points": 0}
for plan, summary in stored.items():
    num = plan[len("heldout"):]
    if plan.startswith("heldout") and num.isdigit() and int(num) >= 14:
        for k in want:
            want[k] += summary[k]
for k, v in want.items():
    if got.get(k) != v:
        print(f"FAIL: {k}: the replay gives {got.get(k)}, schedule_fit.py eval stored {v}")
        fails += 1
print(f"replay of the kernel key over heldout14+: {got}")

r = subprocess.run([sys.executable, SCRIPT, "--eval", os.path.join(ROOT, "no-such-eval.json")],
                   capture_output=True, text=True)
if r.returncode != 2 or "schedule_factor_keys: error: cannot read --eval" not in r.stderr:
    print(f"FAIL: a missing --eval gave rc {r.returncode}, stderr {r.stderr!r}")
    fails += 1
r = subprocess.run([sys.executable, SCRIPT, "--last", "no-such-plan"], capture_output=True, text=True)
if r.returncode != 2 or "schedule_factor_keys: error: --last 'no-such-plan' is not a plan" not in r.stderr:
    print(f"FAIL: an unknown --last gave rc {r.returncode}, stderr {r.stderr!r}")
    fails += 1
print("schedule_factor_keys: " + ("FAIL" if fails else "OK"))
sys.exit(1 if fails else 0)
