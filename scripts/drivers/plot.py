#!/usr/bin/env python3
"""plot.py: turn a fa4sim report JSON (schema fa4sim/report-v1) into PNG figures with matplotlib.

Usage: python3 scripts/drivers/plot.py REPORT.json [REPORT.json ...] [--out DIR]

- `fa4sim roofline` reports: roofline_exp_over_mma.png (T_exp/T_mma against d, one line per
  architecture and operand type, forward tiles) and roofline_pipe_model.png (predicted exps per
  clock per SM against the emulated fraction f: exp2 alone and the whole softmax, with the best f
  marked and any measured points from --measured).
- Any other report: every array of objects in `results` that has numeric fields becomes
  <command>_<key>.png, the numeric fields plotted against the first one, one line per value of the
  first text field.
Prints the files it wrote. Exit 2 on a missing/invalid input file or when matplotlib is missing;
with --if-matplotlib (what `fa4sim report` passes) a missing matplotlib is exit 3 and no message.
"""
import argparse
import json
import os
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    if "--if-matplotlib" in sys.argv[1:]:
        sys.exit(3)  # quietly: fa4sim report then tries Debian's python3
    print("plot.py: error: matplotlib is not installed (Debian: apt-get install python3-matplotlib; "
          "or: python3 -m pip install matplotlib)", file=sys.stderr)
    sys.exit(2)


def provenance_line(rep):
    p = rep.get("provenance", {})
    return "fa4sim {} ({}), {} on {}".format(rep.get("fa4sim_version", "?"), p.get("git", "?"),
                                             p.get("date", "?"), p.get("host", "?"))


def save(fig, rep, out_dir, name):
    fig.text(0.01, 0.005, provenance_line(rep), fontsize=6, color="gray")
    path = os.path.join(out_dir, name)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    print(path)
    return path


def plot_roofline(rep, out_dir):
    res = rep["results"]
    written = []
    # ---- T_exp / T_mma against d, forward tiles.
    rows = [r for r in res.get("rows", []) if r["direction"] == "fwd"]
    if rows:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        keys = []
        for r in rows:
            k = (r["arch"], r["dtype"])
            if k not in keys:
                keys.append(k)
        markers = "osD^vP*X"
        arch_names = []
        for arch, _ in keys:
            if arch not in arch_names:
                arch_names.append(arch)
        for arch, dtype in keys:
            pts = sorted((r["d"], r["exp_over_mma"]) for r in rows if r["arch"] == arch and r["dtype"] == dtype)
            i = arch_names.index(arch)
            # Distinct marker sizes so that identical lines (e.g. H100 and H200) stay visible.
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=markers[i % len(markers)],
                    ms=9 - 1.5 * (i % 4), mfc="none", color="C{}".format(i % 10),
                    linestyle="-" if dtype == "bf16" else "--", label="{} {}".format(arch, dtype))
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_xlabel("head dim d")
        ax.set_ylabel("T_exp / T_mma (forward tile)")
        ax.set_yscale("log", base=2)
        ax.set_title("Exp vs MMA time per tile (above 1: exp-bound)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2, title="solid bf16, dashed fp8; equal lines overlap", title_fontsize=7)
        fig.tight_layout(rect=(0, 0.02, 1, 1))
        written.append(save(fig, rep, out_dir, "roofline_exp_over_mma.png"))
    # ---- predicted exp throughput against f, first degree in the report.
    pm = res.get("pipe_model", [])
    if pm:
        degree = pm[0]["degree"]
        fig, ax = plt.subplots(figsize=(7, 4.5))
        archs = []
        for p in pm:
            if p["arch"] not in archs:
                archs.append(p["arch"])
        best = {(b["arch"], b["mode"]): b for b in res.get("pipe_best", []) if b["degree"] == degree}
        for i, arch in enumerate(archs):
            color = "C{}".format(i % 10)
            for mode, key, style, label in (("exp_only", "exps_per_clk_sm", "-", "exp2 only"),
                                            ("softmax", "softmax_elems_per_clk_sm", "--", "softmax")):
                pts = [(p["f"], p[key]) for p in pm if p["arch"] == arch and p["degree"] == degree]
                b = best.get((arch, mode))
                if b:  # the curve is piecewise linear with its peak at the best f: add that point
                    pts.append((b["f_best"], b["per_clk_sm_best"]))
                pts.sort()
                ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color, linestyle=style,
                        lw=2.4 - 0.4 * (i % 4), label="{} {}".format(arch, label))
                if b:
                    ax.plot([b["f_best"]], [b["per_clk_sm_best"]], marker="*", color=color, ms=9)
        meas = res.get("measured")
        if meas:
            pts = [p for p in meas["points"] if p["degree"] == degree]
            ax.scatter([p["f"] for p in pts], [p["measured_exps_per_clk_sm"] for p in pts], color="black",
                       marker="x", zorder=5, label="measured: {}".format(meas["device"]))
        ax.set_xlabel("emulated fraction f")
        ax.set_ylabel("per clock per SM")
        ax.set_title("Pipe model, degree {} (star: best f; dashed: with the other softmax work)".format(degree),
                     fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6, ncol=2)
        fig.tight_layout(rect=(0, 0.02, 1, 1))
        written.append(save(fig, rep, out_dir, "roofline_pipe_model.png"))
    return written


def schedule_group(key):
    """The legend group of a schedule report set: h200_<plan>, h200_kf_<plan> or blackwell_*."""
    if key.startswith("blackwell"):
        return ("^", "gold", "Blackwell, published (held out)")
    plan = key.split("_", 2)[-1] if key.startswith("h200_kf_") else key[len("h200_"):]
    num = int("".join(ch for ch in plan if ch.isdigit()) or 1) if plan.startswith("heldout") else 0
    if key.startswith("h200_kf_"):
        return (("D", "tab:green", "H200 heldout14 and later, with earlier plans' kernel factors")
                if num >= 14 else None)
    if plan == "calibration" or (plan.startswith("heldout") and num <= 5):
        return ("o", "tab:gray", "H200, fitted on (calibration, heldout-heldout5)")
    if num >= 14:
        return ("D", "tab:red", "H200 heldout14 and later, model alone (blind after round 11)")
    return ("o", "tab:cyan", "H200, heldout6-13, diag, moonshot (model alone)")


def plot_schedule(rep, out_dir):
    """schedule_predicted_vs_measured.png: the schedule model's TFLOP/s against the H200's measured
    ones (the sets it was fitted on, the earlier held-out sets, the sets measured after round 11 alone
    and with kernel factors) and the published Blackwell ones, with the 5 % and 10 % bands."""
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12.0, 5.6))
    groups = {}
    for key, res in rep["results"].items():
        g = schedule_group(key) if isinstance(res, dict) else None
        if g is not None:
            groups.setdefault(g, []).extend(res.get("items", []))
    lo, hi = 1e9, 0
    for (marker, color, label), items in groups.items():
        xs = [i.get("measured_tflops", i.get("published_tflops")) for i in items]
        ys = [i["predicted_tflops"] for i in items]
        if not xs:
            continue
        lo, hi = min(lo, *xs, *ys), max(hi, *xs, *ys)
        ax.scatter(xs, ys, marker=marker, s=10 if color == "tab:gray" else 14, color=color,
                   alpha=0.6, label=f"{label} ({len(xs)})")
    if hi == 0:  # not a report section's comparison (e.g. one `fa4sim schedule` prediction)
        plt.close(fig)
        return plot_generic(rep, out_dir)
    xs = [lo * 0.9, hi * 1.1]
    ax.plot(xs, xs, color="black", lw=0.8)
    for f, ls in ((0.05, "--"), (0.10, ":")):
        ax.plot(xs, [x * (1 + f) for x in xs], color="black", lw=0.6, ls=ls)
        ax.plot(xs, [x * (1 - f) for x in xs], color="black", lw=0.6, ls=ls, label=f"±{int(f * 100)} %")
    ax.set_xlabel("measured (H200) / published (Blackwell) TFLOP/s")
    ax.set_ylabel("schedule model TFLOP/s")
    ax.set_title("fa4sim schedule: predicted vs measured")
    ax.legend(fontsize=7)
    # right: the H200 sets measured after round 11, predicted / measured, alone and with kernel factors
    for (marker, color, label), items in groups.items():
        if color not in ("tab:red", "tab:green"):
            continue
        xs2 = [i["measured_tflops"] for i in items]
        ax2.scatter(xs2, [i["predicted_tflops"] / i["measured_tflops"] for i in items], marker=marker,
                    s=14, color=color, alpha=0.6, label=f"{label} ({len(xs2)})")
    for f, ls in ((0.05, "--"), (0.10, ":")):
        for sign in (1, -1):
            ax2.axhline(1 + sign * f, color="black", lw=0.6, ls=ls)
    ax2.axhline(1, color="black", lw=0.8)
    ax2.set_xlabel("measured TFLOP/s (H200, heldout14 and later)")
    ax2.set_ylabel("predicted / measured")
    ax2.set_title("the blind sets, without and with kernel factors")
    ax2.legend(fontsize=7)
    return [save(fig, rep, out_dir, "schedule_predicted_vs_measured.png")]


def plot_generic(rep, out_dir):
    written = []
    for key, val in rep.get("results", {}).items():
        if not (isinstance(val, list) and val and all(isinstance(v, dict) for v in val)):
            continue
        num = [k for k, v in val[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        txt = [k for k, v in val[0].items() if isinstance(v, str)]
        if len(num) < 2:
            continue
        x, ys = num[0], num[1:5]
        fig, axes = plt.subplots(len(ys), 1, figsize=(7, 2.2 * len(ys)), squeeze=False)
        groups = sorted({str(v.get(txt[0])) for v in val}) if txt else [None]
        for ax, y in zip(axes[:, 0], ys):
            for g in groups:
                pts = sorted((v[x], v[y]) for v in val if (g is None or str(v.get(txt[0])) == g)
                             and isinstance(v.get(x), (int, float)) and isinstance(v.get(y), (int, float)))
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=g)
            ax.set_xlabel(x)
            ax.set_ylabel(y)
            ax.grid(True, alpha=0.3)
            if txt:
                ax.legend(fontsize=6)
        fig.tight_layout(rect=(0, 0.02, 1, 1))
        written.append(save(fig, rep, out_dir, "{}_{}.png".format(rep.get("command", "report"), key)))
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", nargs="+", help="fa4sim report JSON files")
    ap.add_argument("--out", default=None, help="output directory (default: next to each report)")
    ap.add_argument("--if-matplotlib", action="store_true",
                    help="without matplotlib exit 3 quietly instead of 2 with a message")
    a = ap.parse_args()
    for path in a.reports:
        try:
            with open(path) as f:
                rep = json.load(f)
        except (OSError, ValueError) as e:
            print("plot.py: error: cannot read report '{}': {}".format(path, e), file=sys.stderr)
            return 2
        if rep.get("schema") != "fa4sim/report-v1":
            print("plot.py: error: '{}' is not a fa4sim report (schema fa4sim/report-v1)".format(path),
                  file=sys.stderr)
            return 2
        out_dir = a.out or os.path.dirname(os.path.abspath(path))
        os.makedirs(out_dir, exist_ok=True)
        plotters = {"roofline": plot_roofline, "schedule": plot_schedule}
        written = plotters.get(rep.get("command"), plot_generic)(rep, out_dir)
        if not written:
            print("plot.py: nothing to plot in '{}'".format(path), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
