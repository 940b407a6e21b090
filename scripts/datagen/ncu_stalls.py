#!/usr/bin/env python3
"""ncu_stalls.py: where upstream FA4's sm90 main loop waits, from Nsight Compute's per-SASS-instruction
stall sampling (scripts/gpu/schedule_ncu.sh ... stalls; docs/schedule.md "Round 8").

For each profiled kernel of a stalls run (ncu_<plan>_source.csv[.xz], the SASS source page; ncu_<plan>.csv,
the raw page; ncu_<plan>_order.jsonl, which shape and kind each kernel is): the kernel's SM cycles, clock and
executed instructions; its warp-state samples in all and at the main loop's two wgmma waits
(WARPGROUP.DEPBAR.LE gsb0, 0x1: S = QK^T ready; gsb0, 0x0: O += PV done); the instructions between the
two waits and the MUFU.EX2 among them; and the samples of each stall reason summed over the kernel.
The main loop is taken as the instructions executed at least a tenth as often as the most executed one.

  python3 scripts/datagen/ncu_stalls.py data/gpu/schedule/2026-12-02p diag9 [--out FILE.json]
"""
import argparse
import csv
import io
import json
import lzma
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from schedule_fit import ncu_number  # noqa: E402  (Nsight Compute's numbers: thousands separators)

MHZ_PER = {"hz": 1e-6, "khz": 1e-3, "mhz": 1.0, "ghz": 1e3}  # the raw page's clock units


def fail(msg, hint):
    print(f"ncu_stalls: error: {msg} ({hint})", file=sys.stderr)
    sys.exit(2)


def read_text(path):
    if os.path.exists(path):
        return open(path).read()
    if os.path.exists(path + ".xz"):
        return lzma.open(path + ".xz", "rt").read()
    fail(f"{path} not found", "a folder written by scripts/gpu/schedule_ncu.sh in stalls mode")


def kernels_of(source_text):
    """The SASS source page: per kernel a 'Kernel Name' line, a header line, then one row per instruction."""
    out, cur = [], None
    for row in csv.reader(io.StringIO(source_text)):
        if not row:
            continue
        if row[0] == "Kernel Name":
            cur = {"rows": []}
            out.append(cur)
        elif row[0] == "Address" and cur is not None:
            cur["head"] = row
        elif cur is not None and "head" in cur:
            cur["rows"].append(row)
    return out


def summarise(k):
    ix = {n: i for i, n in enumerate(k["head"])}
    for need in ("Source", "Warp Stall Sampling (All Samples)", "Instructions Executed"):
        if need not in ix:
            fail(f"the source page has no column {need!r}", "Nsight Compute's SourceCounters section is needed")
    reasons = [n for n in k["head"] if n.startswith("stall_") and "Not Issued" not in n]
    samples = lambda r: int(r[ix["Warp Stall Sampling (All Samples)"]])
    execd = lambda r: int(r[ix["Instructions Executed"]])
    top = max(execd(r) for r in k["rows"])
    loop = [r for r in k["rows"] if execd(r) >= top / 10]
    src = [r[ix["Source"]].strip() for r in loop]
    wait_s = [i for i, s in enumerate(src) if s.startswith("WARPGROUP.DEPBAR.LE gsb0, 0x1")]
    wait_pv = [i for i, s in enumerate(src) if s.startswith("WARPGROUP.DEPBAR.LE gsb0, 0x0")]
    out = {"samples": sum(samples(r) for r in k["rows"]),
           "stall_reasons": {n[len("stall_"):]: sum(int(r[ix[n]]) for r in k["rows"]) for n in reasons}}
    if wait_s and wait_pv:
        s0, p0 = wait_s[0], next((i for i in wait_pv if i > wait_s[0]), wait_pv[0])
        out.update({"samples_wait_s": samples(loop[s0]), "samples_wait_pv": samples(loop[p0]),
                    "instructions_between_waits": p0 - s0 - 1,
                    "mufu_ex2_between_waits": sum(1 for s in src[s0:p0] if s.startswith("MUFU.EX2"))})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder")
    ap.add_argument("plan")
    ap.add_argument("--out", help="write the JSON here (default: stdout)")
    a = ap.parse_args()
    src = kernels_of(read_text(os.path.join(a.folder, f"ncu_{a.plan}_source.csv")))
    order = [json.loads(x) for x in read_text(os.path.join(a.folder, f"ncu_{a.plan}_order.jsonl")).splitlines()
             if x.startswith('{"index"')]
    raw = list(csv.reader(io.StringIO(read_text(os.path.join(a.folder, f"ncu_{a.plan}.csv")))))
    if not raw or raw[0][:1] != ["ID"]:
        fail(f"ncu_{a.plan}.csv is not Nsight Compute's raw page", "ncu -i REPORT --csv --page raw")
    names, units, data = raw[0], raw[1], raw[2:]
    unit = units[names.index("gpc__cycles_elapsed.avg.per_second")].lower()
    if unit not in MHZ_PER:
        fail(f"clock unit {unit!r} in ncu_{a.plan}.csv", "expected hz, khz, mhz or ghz")
    if not (len(src) == len(order) == len(data)):
        fail(f"{len(order)} launches listed, {len(src)} source pages, {len(data)} raw rows", "files of one run")
    rows = []
    for o, k, r in zip(order, src, data):
        m = dict(zip(names, r))
        row = {"shape": o["shape"], "kind": o["kind"],
               "cycles": ncu_number(m["gpc__cycles_elapsed.max"]),
               "clock_mhz": ncu_number(m["gpc__cycles_elapsed.avg.per_second"]) * MHZ_PER[unit],
               "instructions": ncu_number(m["smsp__inst_executed.sum"])}
        row.update(summarise(k))
        rows.append(row)
    doc = {"schema": "fa4sim/ncu-stalls-v1", "what": __doc__.split("\n\n")[1].replace("\n", " "),
           "command": f"python3 scripts/datagen/ncu_stalls.py {a.folder} {a.plan}" + (f" --out {a.out}" if a.out else ""),
           "rows": rows}
    text = json.dumps(doc, indent=1) + "\n"
    if a.out:
        tmp = a.out + ".tmp.json"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, a.out)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
