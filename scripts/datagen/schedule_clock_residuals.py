#!/usr/bin/env python3
"""schedule_clock_residuals.py: the analysis behind Note [Clock and duration]
(include/fa4sim/analysis/schedule.h): per measured configuration with Nsight Compute cycle counts,
the effective clock (counted cycles / timed duration) against the schedule model's tensor share,
and how much of its spread a second regressor (the kernel's length) explains.

  schedule_clock_residuals.py [--fa4sim build/fa4sim] [--spec SPEC]

Fits 1 / clock = a + b u (u the model's tensor share at the padded head dim) and
1 / clock = a + b u + c ln(ms) on calibration, heldout and heldout2, and prints the rms of the
relative clock residual on those (fitted) and on heldout3 (not fitted). docs/schedule.md round 5
quotes it with the round-4 spec: `git show 65949e5:data/schedule/sm90.json > /tmp/r4.json`,
then `--spec /tmp/r4.json`.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import schedule_fit as sf  # noqa: E402

FIT = ("calibration", "heldout", "heldout2")
TEST = ("heldout3",)


def rows(fa4sim, spec):
    a = argparse.Namespace(data=sf.DATA, ncu=sf.NCU)
    out = []
    for plan in FIT + TEST:
        timed = sf.plan_rows(a, plan)
        counted = {json.dumps(r["input"], sort_keys=True): r for r in sf.load_ncu_rows(sf.ncu_folder(a, plan), plan)}
        preds = sf.predict(fa4sim, spec, [r["input"] for r in timed])
        for r, p in zip(timed, preds):
            c = counted.get(json.dumps(r["input"], sort_keys=True))
            if not c:
                continue
            d = r["input"]["d"]
            out.append({"plan": plan, "clock": c["cycles"] / (r["ms"] * 1e3), "ms": r["ms"],
                        "u_pad": p["tensor_share_grid"] * ((d + 15) // 16 * 16) / d})
    return out


def fit_rms(rs, names):
    def x(r):
        return [1.0] + [r["u_pad"] if n == "u_pad" else math.log(r["ms"]) for n in names]
    fit = [r for r in rs if r["plan"] in FIT]
    c, *_ = np.linalg.lstsq(np.array([x(r) for r in fit]), np.array([1 / r["clock"] for r in fit]), rcond=None)

    def rms(sel):
        res = [(1 / float(np.dot(c, x(r)))) / r["clock"] - 1 for r in sel]
        return math.sqrt(sum(e * e for e in res) / len(res))
    return rms(fit), rms([r for r in rs if r["plan"] in TEST]), len(fit)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fa4sim", default=os.path.join(sf.ROOT, "build", "fa4sim"))
    ap.add_argument("--spec", default=sf.SPEC)
    a = ap.parse_args()
    rs = rows(a.fa4sim, json.load(open(a.spec)))
    for names in (["u_pad"], ["u_pad", "ln_ms"]):
        f, t, n = fit_rms(rs, names)
        print(f"1/clock ~ 1 + {' + '.join(names)}: rms residual {100 * f:.1f} % on {'+'.join(FIT)} "
              f"({n} fitted), {100 * t:.1f} % on {'+'.join(TEST)} (not fitted)")


if __name__ == "__main__":
    sys.exit(main())
