#!/usr/bin/env python3
"""Instruction mix of fa4sim's exp2 benchmark kernels, from `cuobjdump --dump-sass fa4sim`.

For every k_bench_mix<DEG, K> / k_bench_rule<DEG, FREQ, RES, START> kernel: find the timed loop
(the longest backward branch), count its SASS opcodes, and divide by the exps it computes
(one MUFU.EX2 per hardware exp, one FADD...RM per emulated exp), giving instructions per exp.
Usage: python3 scripts/gpu/sass_mix.py SASS.txt [--json OUT.json]
"""
import collections
import json
import re
import sys

FUNC = re.compile(r"Function : (\S+)")
INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)\s*([^;]*);")
MIX = re.compile(r"k_bench_mixILi(\d)ELi(\d+)E")
RULE = re.compile(r"k_bench_ruleILi(\d)ELi(\d+)ELi(\d+)ELi(\d+)E")


def parse(path):
    funcs, cur = {}, None
    for line in open(path, errors="replace"):
        m = FUNC.search(line)
        if m:
            cur = m.group(1)
            funcs[cur] = []
            continue
        m = INSN.search(line)
        if m and cur:
            funcs[cur].append((int(m.group(1), 16), m.group(3), m.group(4)))
    return funcs


def loop_body(insns):
    best = None
    for addr, op, args in insns:
        if op.startswith("BRA"):
            t = re.search(r"0x([0-9a-f]+)", args)
            if t and int(t.group(1), 16) < addr:
                lo = int(t.group(1), 16)
                if best is None or addr - lo > best[1] - best[0]:
                    best = (lo, addr)
    if best is None:
        return []
    return [op for a, op, _ in insns if best[0] <= a <= best[1]]


def main():
    funcs = parse(sys.argv[1])
    rows = []
    for name, insns in sorted(funcs.items()):
        m, r = MIX.search(name), RULE.search(name)
        if not (m or r):
            continue
        body = loop_body(insns)
        c = collections.Counter(body)
        mufu = sum(v for k, v in c.items() if k.startswith("MUFU.EX2"))
        emu = sum(v for k, v in c.items() if k.startswith("FADD") and ".RM" in k)
        exps = mufu + emu
        kind = f"mix deg{m.group(1)} {int(m.group(2))}/16" if m else \
            f"rule deg{r.group(1)} freq{r.group(2)} res{r.group(3)} start{r.group(4)}"
        per_exp = {k: v / exps for k, v in sorted(c.items())} if exps else {}
        rows.append({"kernel": kind, "body_insns": len(body), "mufu_exps": mufu, "emulated_exps": emu,
                     "insns_per_exp": len(body) / exps if exps else None, "opcodes": dict(c),
                     "opcodes_per_exp": per_exp})
    for row in rows:
        top = ", ".join(f"{k} {v:.2f}" for k, v in sorted(row["opcodes_per_exp"].items(), key=lambda kv: -kv[1]))
        ipe = row["insns_per_exp"]
        print(f"{row['kernel']:<34} body {row['body_insns']:5d}  exps {row['mufu_exps']:4d} MUFU + "
              f"{row['emulated_exps']:4d} emu  insns/exp {ipe if ipe is None else round(ipe, 3)}  | {top}")
    if "--raw" in sys.argv:  # the timed loop of degree 3, 16/16 and 8/16, instruction by instruction
        for name, insns in sorted(funcs.items()):
            m = MIX.search(name)
            if m and m.group(1) == "3" and m.group(2) in ("16", "8"):
                print(f"\n---- loop body of {name}")
                body = loop_body(insns)
                print("\n".join(body[:200]))
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
