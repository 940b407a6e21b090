#!/usr/bin/env bash
# Builds and runs the libFuzzer harness for the JSON inputs (see json_fuzz.cpp).
#   tests/fuzz/run_json_fuzz.sh [SECONDS=600] [WORKDIR=/tmp/fa4sim-json-fuzz]
# Prints libFuzzer's final stats (execs, coverage); exits non-zero when a crash was found.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-600}
work=${2:-/tmp/fa4sim-json-fuzz}
mkdir -p "$work/corpus"
if [ ! -x "$work/json_fuzz" ] || [ -n "$(find src include tests/fuzz -newer "$work/json_fuzz" -name '*.[ch]*' | head -1)" ]; then
  clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -ffp-contract=off -Iinclude -DFA4SIM_SOURCE_DIR="\"$PWD\"" \
    tests/fuzz/json_fuzz.cpp src/util/json_input.cpp src/util/report.cpp src/util/paths.cpp \
    src/util/parse.cpp src/util/suggest.cpp src/util/parallel.cpp src/util/progress.cpp \
    src/analysis/roofline.cpp src/analysis/fit.cpp src/analysis/exp2_analysis.cpp src/analysis/schedule.cpp src/analysis/schedule_report.cpp \
    src/core/exp2_emu.cpp src/ref/exp2_ref.cpp src/report/published.cpp src/report/baseline.cpp \
    -lfmt -lpthread -o "$work/json_fuzz"
fi
# Seeds: the repository's own JSON inputs (selector byte 0) and a coefficient file (byte 1).
n=0
for f in data/archs/*.json data/published/*.json data/exp_pipe_model.json data/schedule/sm*.json; do
  { printf '\x00'; cat "$f"; } >"$work/corpus/seed_$n"
  n=$((n + 1))
done
printf '\x00{"schema": "fa4sim/bench-exp-v1", "device": "d", "arch": "h200", "points": [{"degree": 3, "f": 0.5, "exps_per_clk_sm": 16}]}' >"$work/corpus/measured"
printf '\x00{"schema": "fa4sim/report-v1", "results": {"a": [1, 2.5, "nan", {"b_stderr": 0.1, "b": 3}]}}' >"$work/corpus/report"
printf '\x00[{"arch": "h200", "d": 128, "seq": 4096, "causal": 1, "tau": 8, "emu_fraction": 0.1}]' >"$work/corpus/inputs"
printf '\x01# degree 3\n1, 0x1.63e65ap-1,0.2276\n 0.077\n' >"$work/corpus/coeffs"
cd "$work"
./json_fuzz -jobs=1 -workers=1 -max_total_time="$secs" -print_final_stats=1 -max_len=65536 \
  -artifact_prefix="$work/" corpus >fuzz.log 2>&1 || true
tail -30 fuzz-0.log
! ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* >/dev/null 2>&1
