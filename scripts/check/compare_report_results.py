#!/usr/bin/env python3
"""Compare the `results` of every JSON report in two `fa4sim report --out` folders, exactly.

For refactors that must not move a single bit: where `fa4sim report --baseline` allows 1e-9
relative (Note [Report baseline]), this compares the results as text (json.dumps with sorted
keys, so float values compare by their shortest round-trip spelling).

Usage: scripts/check/compare_report_results.py BEFORE_DIR AFTER_DIR
Exit 0 when every report's results are identical and both folders hold the same reports, 1 else.
"""
import json
import pathlib
import sys


def results_text(path):
    return json.dumps(json.loads(path.read_text(encoding="utf-8")).get("results"), sort_keys=True)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    before, after = map(pathlib.Path, sys.argv[1:3])
    names = sorted(p.name for p in before.glob("*.json") if p.name != "index.json")
    others = sorted(p.name for p in after.glob("*.json") if p.name != "index.json")
    bad = 0
    if names != others:
        print("the folders hold different reports:", sorted(set(names) ^ set(others)))
        bad += 1
    for name in names:
        if not (after / name).exists():
            continue
        a, b = results_text(before / name), results_text(after / name)
        print(f"{name}: {'identical' if a == b else 'DIFFERENT'} ({len(a)} characters of results)")
        bad += a != b
    print(f"{len(names)} reports compared, {bad} difference(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
