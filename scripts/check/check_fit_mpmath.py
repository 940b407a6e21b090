#!/usr/bin/env python3
"""Cross-check of `fa4sim fit --minimax-only` against an independent relative-minimax fit of 2^f.

An independent Remez exchange written with mpmath (50 digits): Chebyshev start, the linear
system solved by mpmath.lu_solve, the error's extrema located as roots of its derivative (mpmath.findroot,
Illinois method on a bracket) (fa4sim uses a grid plus ternary search, in Boost cpp_bin_float_50). Compares, for the
given degrees with c0 free and with c0 = 1, every coefficient and the equioscillation level.

Exit codes: 0 agree, 1 disagree, 77 mpmath missing (a visible ctest skip).
Usage: scripts/check/check_fit_mpmath.py --fa4sim build/fa4sim [--degrees 3] [--tol 1e-20]
"""
import argparse
import json
import subprocess
import sys

try:
    import mpmath
    from mpmath import mp, mpf
except ImportError:
    print("SKIP: mpmath is not installed (pip install mpmath)")
    sys.exit(77)

mp.dps = 50


def remez(degree, fix_c0, iters=40):
    first = 1 if fix_c0 else 0
    m = degree + 1 - first  # free coefficients
    nref = m + 1
    # Chebyshev nodes of the second kind (with c0 = 1 the error vanishes at 0: nodes in (0, 1]).
    if fix_c0:
        xs = [(1 - mpmath.cos(mpmath.pi * (j + 1) / nref)) / 2 for j in range(nref)]
    else:
        xs = [(1 - mpmath.cos(mpmath.pi * j / (nref - 1))) / 2 for j in range(nref)]
    c = None
    for _ in range(iters):
        A = mpmath.matrix(nref, nref)
        b = mpmath.matrix(nref, 1)
        for j, x in enumerate(xs):
            e = mpmath.power(2, x)
            for i in range(m):
                A[j, i] = x ** (first + i)
            A[j, m] = (-1) ** j * e  # p(x_j) - 2^x_j = -(-1)^j E 2^x_j (E's sign is free)
            b[j] = e - (1 if fix_c0 else 0)
        sol = mpmath.lu_solve(A, b)
        c = ([mpf(1)] if fix_c0 else []) + [sol[i] for i in range(m)]

        def err(x):
            return mpmath.polyval(list(reversed(c)), x) / mpmath.power(2, x) - 1

        # New reference: the interior extrema between sign changes, plus the ends.
        grid = [mpf(i) / 400 for i in range(401)]
        vals = [err(x) for x in grid]
        new = []
        if not fix_c0:
            new.append(mpf(0))
        for i in range(1, 400):
            if abs(vals[i]) >= abs(vals[i - 1]) and abs(vals[i]) >= abs(vals[i + 1]):
                # The extremum is the root of err' bracketed by the neighbouring grid points.
                x = mpmath.findroot(lambda t: mpmath.diff(err, t), (grid[i - 1], grid[i + 1]),
                                    solver="illinois")
                new.append(x)
        new.append(mpf(1))
        new = sorted(set(min(max(x, mpf(0)), mpf(1)) for x in new))
        if len(new) != nref:
            break
        xs = new
    level = max(abs(err(x)) for x in xs)
    return c, level


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fa4sim", required=True)
    ap.add_argument("--degrees", default="3")
    ap.add_argument("--tol", type=float, default=1e-20, help="relative tolerance on coefficients")
    a = ap.parse_args()
    bad = 0
    for d in [int(s) for s in a.degrees.split(",")]:
        for fix in (False, True):
            cmd = [a.fa4sim, "fit", "--degree", str(d), "--minimax-only", "--json", "-"]
            if fix:
                cmd.append("--fix-c0")
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            res = json.loads(out)["results"]["minimax"]
            theirs = [mpf(s) for s in res["coeffs"]]
            ours, level = remez(d, fix)
            worst = max(abs(x - y) / abs(y) for x, y in zip(theirs, ours))
            lvl = abs(mpf(res["max_rel"]) - level) / level
            ok = worst <= a.tol and lvl <= 1e-12
            bad += not ok
            print(f"degree {d} c0 {'= 1' if fix else 'free'}: max rel coefficient difference "
                  f"{mpmath.nstr(worst, 3)}, level fa4sim {res['max_rel']:.10e} mpmath "
                  f"{mpmath.nstr(level, 11)} (rel diff {mpmath.nstr(lvl, 3)}): {'ok' if ok else 'MISMATCH'}")
            print("  mpmath:", [mpmath.nstr(v, 25) for v in ours])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
