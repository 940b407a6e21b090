#!/usr/bin/env bash
# scripts/gpu/upstream_device.sh: every measurement of upstream FlashAttention-4 on an H100/H200 in one
# run (the files in data/gpu/upstream/ and the section "Upstream FA4 on Hopper" of docs/findings.md).
# Needs upstream installed for python3 (scripts/gpu/upstream_install.sh) and a fa4sim built with CUDA.
# Usage: scripts/gpu/upstream_device.sh FA4SIM_BIN OUT_DIR [quick]
#   1. fa4sim gpu upstream info
#   2. fa4sim gpu upstream check --suite   (19 forward runs vs float64 and the CPU model)
#   3. fa4sim gpu attention --bench        (fa4sim's kernel, upstream FA4, SDPA flash, SDPA cuDNN;
#                                           B4 H32 S4096 bf16, d 64/128, causal or not, one run)
#   4. fa4sim gpu upstream exp2            (every degree of POLY_EX2, all 2^32 inputs; quick: 2^24)
#   5. Nsight Compute pipe utilisation of upstream's stock sm90 forward (one launch, d 64 and 128)
set -u
BIN=${1:?fa4sim binary}; OUT=${2:?output dir}; QUICK=${3:-}
mkdir -p "$OUT"
T=$(nproc)
step() {  # name, command...
  local name=$1; shift
  echo "== $name: $*"
  "$@"
  echo "   exit $?"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee "$OUT/nvidia-smi.csv"
step info "$BIN" gpu upstream info --json "$OUT/upstream_info.json"
step check "$BIN" gpu upstream check --suite --threads "$T" --json "$OUT/upstream_check_suite.json"
step bench "$BIN" gpu attention --bench --bench-d 64,128 --bench-causal 0,1 --bench-tau 0,8 \
  --json "$OUT/bench_four_way.json"
if [ -n "$QUICK" ]; then
  step exp2 "$BIN" gpu upstream exp2 --inputs-log2 24 --threads "$T" --json "$OUT/upstream_exp2.json"
else
  step exp2 "$BIN" gpu upstream exp2 --threads "$T" --json "$OUT/upstream_exp2.json"
fi
if command -v ncu >/dev/null && [ -z "$QUICK" ]; then
  here=$(cd "$(dirname "$0")" && pwd)
  for d in 64 128; do
    echo "== ncu: upstream sm90 forward, bf16 B4 H32 S4096 d$d, non-causal, one launch"
    ncu --clock-control none -k regex:flash_fwd_sm90 -s 2 -c 1 \
      --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__block_size,launch__registers_per_thread \
      python3 "$here/../drivers/fa4_upstream.py" bench --warmup 2 --iters 1 \
      --shapes "[{\"batch\":4,\"heads\":32,\"seq\":4096,\"head_dim\":$d,\"causal\":false,\"dtype\":\"bf16\"}]" \
      > "$OUT/ncu_upstream_d$d.txt" 2>&1
    echo "   exit $?"; grep -E "duration|pct|grid|block_size|registers" "$OUT/ncu_upstream_d$d.txt" | sed 's/^ */   /'
  done
fi
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv
