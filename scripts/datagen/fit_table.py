#!/usr/bin/env python3
"""Runs `fa4sim fit` for degrees x objectives and writes the comparison table with provenance.

For each (degree, objective) it runs
    fa4sim fit --degree D --objective O [--fix-c0] --json data/fit/runs/dD_O.json
(skipped when that file exists, so an interrupted series resumes), then collects every run into
data/fit/fit_table.json (runs, each with its command, wall and CPU seconds, and the provenance
that fa4sim wrote), data/fit/fit_table.md (one table per output format, upstream's
POLY_EX2 next to fa4sim's best per objective) and data/fit/fit_summary.md (both formats in one
table, with the H200 rate of each polynomial fully emulated where data/fit/gpu has it: README's
table). `fa4sim report` renders the same table from
data/fit/fit_table.json.

Usage: scripts/datagen/fit_table.py --fa4sim build/fa4sim [--degrees 1,2,3,4,5]
                            [--objectives bf16-identical,...] [--out data/fit] [--collect-only]
"""
import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

OBJECTIVES = ["fp32-maxrel", "fp32-meanrel", "bf16-identical", "fp16-identical", "bf16-max-ulp"]


def run_one(fa4sim, out_dir, d, obj, fix_c0):
    name = f"d{d}_{obj}{'_c0' if fix_c0 else ''}.json"
    path = os.path.join(out_dir, "runs", name)
    if os.path.exists(path):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    cmd = [fa4sim, "fit", "--degree", str(d), "--objective", obj, "--json", path]
    if fix_c0:
        cmd.append("--fix-c0")
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.time() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    with open(path) as f:
        j = json.load(f)
    j["run"] = {"command": " ".join(["fa4sim"] + cmd[1:]), "wall_s": round(wall, 1),
                "cpu_s": round(cpu, 1), "loadavg_at_end": os.getloadavg()[0]}
    with open(path, "w") as f:
        json.dump(j, f, indent=1)
    return path


def pct(v):
    return f"{v:.4f} %"


def render(runs):
    by_deg = {}
    for r in runs:
        by_deg.setdefault(r["params"]["degree"], []).append(r)
    out = []
    for fmt in ("bf16", "fp16"):
        out.append(f"\n**{fmt}** (value-weighted, exact, every float of [-20, 8); fp32 max rel over every "
                   "float of [0, 1))\n")
        out.append(f"| degree | polynomial | fp32 max rel | {fmt} identical | within 1 ULP | max ULP | fit: wall s (CPU s) |")
        out.append("|---|---|---:|---:|---:|---:|---:|")
        for d in sorted(by_deg):
            rs = by_deg[d]
            up = rs[0]["results"]["scores"]["upstream"]
            out.append(f"| {d} | upstream POLY_EX2 | {up['fp32_max_rel']:.3e} | {pct(up[fmt + '_identical_pct'])} | "
                       f"{pct(up[fmt + '_within_1ulp_pct'])} | {up[fmt + '_max_ulp']} | |")
            for r in sorted(rs, key=lambda r: OBJECTIVES.index(r["params"]["objective"])):
                s = r["results"]["scores"]["fit"]
                tag = r["params"]["objective"] + (", c0 = 1" if r["params"]["fix_c0"] else "")
                out.append(f"| {d} | fit `{tag}` | {s['fp32_max_rel']:.3e} | {pct(s[fmt + '_identical_pct'])} | "
                           f"{pct(s[fmt + '_within_1ulp_pct'])} | {s[fmt + '_max_ulp']} | "
                           f"{r['run']['wall_s']} ({r['run']['cpu_s'] if r['run']['cpu_s'] is not None else 'n/a'}) |")
    out.append("\nCoefficients (c0, c1, ...; paste into `fa4sim exp2 --coeffs`):\n")
    for r in runs:
        tag = r["params"]["objective"] + (" --fix-c0" if r["params"]["fix_c0"] else "")
        out.append(f"- degree {r['params']['degree']} `{tag}`: `{r['results']['coeffs_list']}`")
    return "\n".join(out) + "\n"


def gpu_rate(out_dir, name, degree, coeffs_hex=None):
    """exps/clk/SM at f = 1 (all exps emulated) measured on the GPU for run `name` ("upstream":
    POLY_EX2 of `degree`), from data/fit/gpu/bench_<name>.json; None when not measured, or when
    the run's coefficients (`coeffs_hex`) are not the ones that were measured (a newer fit)."""
    path = os.path.join(out_dir, "gpu", f"bench_{name}.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        bench = json.load(f)
    if coeffs_hex is not None and bench["params"].get("coeffs") != coeffs_hex:
        return None
    mix = bench["results"]["mix"]
    rates = [p["exps_per_clk_sm"] for p in mix if p["degree"] == degree and p["f"] == 1.0]
    return rates[0] if rates else None


def render_summary(runs, out_dir):
    """One table, both formats: upstream's POLY_EX2 and every fit, per degree (README's table)."""
    out = ["| degree | polynomial | fp32 max rel | bf16 identical | bf16 <=1 ULP | bf16 max ULP | "
           "fp16 identical | fp16 <=1 ULP | fp16 max ULP | H200 exps/clk/SM, all emulated |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def row(d, label, s, rate):
        cells = [str(d), label, f"{s['fp32_max_rel']:.3e}"]
        for fmt in ("bf16", "fp16"):
            cells += [pct(s[fmt + "_identical_pct"]), pct(s[fmt + "_within_1ulp_pct"]), str(s[fmt + "_max_ulp"])]
        cells.append(f"{rate:.2f}" if rate is not None else "-")
        out.append("| " + " | ".join(cells) + " |")

    by_deg = {}
    for r in runs:
        by_deg.setdefault(r["params"]["degree"], []).append(r)
    for d in sorted(by_deg):
        rs = by_deg[d]
        row(d, "upstream `POLY_EX2`", rs[0]["results"]["scores"]["upstream"], gpu_rate(out_dir, "upstream", d))
        for r in rs:
            tag = r["params"]["objective"] + (", c0 = 1" if r["params"]["fix_c0"] else "")
            name = f"d{d}_{r['params']['objective']}{'_c0' if r['params']['fix_c0'] else ''}"
            hexes = [c["hex"] for c in r["results"]["coeffs"]]
            row(d, f"fit `{tag}`", r["results"]["scores"]["fit"], gpu_rate(out_dir, name, d, hexes))
    return "\n".join(out) + "\n"


def provenance_line(runs):
    """Where and when the runs were made, and how long the slowest took (README quotes it)."""
    dates = sorted(r["provenance"]["date"] for r in runs)
    hosts = sorted({r["provenance"].get("host", "?") for r in runs})
    gits = sorted({r["provenance"].get("git", "?") for r in runs})
    timed = [r for r in runs if r["run"].get("cpu_s") is not None]
    slow = max(timed, key=lambda r: r["run"]["wall_s"]) if timed else None
    line = (f"{len(runs)} runs, `scripts/datagen/fit_table.py --fa4sim build/fa4sim`, host {', '.join(hosts)}, "
            f"{dates[0][:10]} to {dates[-1][:10]}, fa4sim git {', '.join(gits)}")
    if slow:
        line += (f"; slowest: degree {slow['params']['degree']} `{slow['params']['objective']}` "
                 f"{slow['run']['wall_s']} s wall, {slow['run']['cpu_s']} CPU-s")
    return line + ".\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fa4sim", required=True)
    ap.add_argument("--degrees", default="1,2,3,4,5")
    ap.add_argument("--objectives", default=",".join(OBJECTIVES))
    ap.add_argument("--fix-c0", action="store_true")
    ap.add_argument("--out", default="data/fit")
    ap.add_argument("--collect-only", action="store_true", help="only collect the existing runs")
    a = ap.parse_args()
    if not a.collect_only:
        for d in [int(s) for s in a.degrees.split(",")]:
            for o in a.objectives.split(","):
                run_one(a.fa4sim, a.out, d, o, a.fix_c0)
    runs = []
    rdir = os.path.join(a.out, "runs")
    for name in sorted(os.listdir(rdir)):
        with open(os.path.join(rdir, name)) as f:
            runs.append(json.load(f))
    runs.sort(key=lambda r: (r["params"]["degree"], OBJECTIVES.index(r["params"]["objective"]),
                             r["params"]["fix_c0"]))
    git = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True).stdout.strip()
    table = {"schema": "fa4sim/fit-table-v1",
             "generator": "scripts/datagen/fit_table.py " + " ".join(sys.argv[1:]),
             "provenance": {"collected": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                            "host": platform.node(), "cpu": platform.processor() or platform.machine(),
                            "nproc": os.cpu_count(), "git": git},
             "markdown": render(runs),
             "runs": [{"params": r["params"], "results": r["results"], "provenance": r["provenance"],
                       "run": r["run"]} for r in runs]}
    with open(os.path.join(a.out, "fit_table.json"), "w") as f:
        json.dump(table, f, indent=1)
    with open(os.path.join(a.out, "fit_table.md"), "w") as f:
        f.write(f"<!-- generated by scripts/datagen/fit_table.py from {rdir}; git {git} -->\n" + table["markdown"])
    with open(os.path.join(a.out, "fit_summary.md"), "w") as f:
        f.write(f"<!-- generated by scripts/datagen/fit_table.py from {rdir} and {a.out}/gpu; git {git} -->\n"
                + render_summary(runs, a.out) + "\n" + provenance_line(runs))
    print(table["markdown"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
