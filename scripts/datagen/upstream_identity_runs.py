#!/usr/bin/env python3
"""upstream_identity_runs.py: bit identity of a CPU model with upstream FA4's saved outputs, run by
run.

`scripts/gpu/upstream_save_outputs.sh` keeps upstream's O and LSE for the 19-run suite and the
36-run tricks suite; `fa4sim gpu upstream check --suite --from DIR --model sm90-wgmma` compares them
with a CPU model in one process. This script does the same one run at a time (a one-run folder per
run, linked to the saved files), so the runs can be chosen (--max-seq) and each report is kept:

  upstream_identity_runs.py SAVED_DIR OUT_DIR [--fa4sim build/fa4sim] [--model sm90-wgmma]
                            [--max-seq 8192] [--threads 1]

SAVED_DIR holds folders written by `--save` (suite/ and tricks/ of upstream_save_outputs.sh, c<i>/
of upstream_save_extra.sh), each with its manifest; OUT_DIR gets one fa4sim report per run
(<folder>_r<i>.json) and summary.json (per run: O and LSE values bit-identical).
"""
import argparse
import json
import os
import subprocess
import sys


def run_args(e):
    a = ["--dtype", e["dtype"], "--d", str(e["head_dim"]), "--batch", str(e["batch"]), "--heads",
         str(e["heads_q"]), "--kv-heads", str(e["heads_kv"]), "--seq", str(e["seq_q"]), "--seq-k",
         str(e["seq_k"]), "--seed", str(e["seed"]), "--q-scale", repr(e["q_scale"])]
    if e["causal"]:
        a.append("--causal")
    t = e.get("tricks")
    if t:
        a += ["--variant", "--tau", repr(t["tau"]), "--max-offset", repr(t["max_offset"]), "--emu",
              str(t["emu_eighths"])]
    return a


def one_run_folder(src, i, e, dst):
    os.makedirs(dst, exist_ok=True)
    one = dict(e, id="0")
    for k in ("o", "lse"):
        link = os.path.join(dst, f"r0_{k}.bin")
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.abspath(os.path.join(src, f"r{i}_{k}.bin")), link)
        one[k] = link
    with open(os.path.join(dst, "manifest.json"), "w") as f:
        json.dump([one], f)
    drv = os.path.join(src, "driver.json")
    if os.path.exists(drv):
        with open(drv) as f, open(os.path.join(dst, "driver.json"), "w") as g:
            g.write(f.read())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("saved")
    ap.add_argument("out")
    ap.add_argument("--fa4sim", default="build/fa4sim")
    ap.add_argument("--model", default="sm90-wgmma")
    ap.add_argument("--max-seq", type=int, default=8192)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    summary = []
    folders = sorted(d for d in os.listdir(a.saved) if os.path.isfile(os.path.join(a.saved, d, "manifest.json")))
    for suite in sorted(folders, key=lambda d: (d not in ("suite", "tricks"), d)):
        src = os.path.join(a.saved, suite)
        with open(os.path.join(src, "manifest.json")) as f:
            manifest = json.load(f)
        for i, e in enumerate(manifest):
            if max(e["seq_q"], e["seq_k"]) > a.max_seq:
                continue
            folder = os.path.join(a.out, "runs", f"{suite}_r{i}")
            one_run_folder(src, i, e, folder)
            rep = os.path.join(a.out, f"{suite}_r{i}.json")
            cmd = [a.fa4sim, "gpu", "upstream", "check", "--from", folder, *run_args(e), "--model", a.model,
                   "--threads", str(a.threads), "--json", rep]
            rc = subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode
            with open(rep) as f:
                r = json.load(f)["results"]["runs"][0]
            row = {"suite": suite, "run": i, "args": " ".join(run_args(e)), "exit": rc,
                   "o_elements": r.get("o_elements"), "o_equal_to_model": r["o_equal_to_model"],
                   "o_identical_pct": r["o_identical_pct"], "lse_equal_to_model": r["lse_equal_to_model"],
                   "lse_identical_pct": r["lse_identical_pct"]}
            summary.append(row)
            print(f"{suite} r{i}: O {row['o_identical_pct']:.3f} %, LSE {row['lse_identical_pct']:.3f} % "
                  f"(exit {rc})", flush=True)
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump({"model": a.model, "saved": a.saved, "max_seq": a.max_seq, "runs": summary}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
