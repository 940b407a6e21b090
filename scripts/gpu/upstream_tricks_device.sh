#!/usr/bin/env bash
# scripts/gpu/upstream_tricks_device.sh: FA4's softmax tricks inside upstream's sm90 forward, every
# measurement in one run (data/gpu/upstream/tricks_* and the section "Do FA4's softmax
# tricks pay on Hopper?" of docs/findings.md). Needs upstream installed for python3 (scripts/gpu/upstream_install.sh) and
# a fa4sim built with CUDA.
# Usage: scripts/gpu/upstream_tricks_device.sh FA4SIM_BIN OUT_DIR
#   1. fa4sim gpu upstream check --suite-tricks   (36 runs: numerics vs float64 and the CPU model)
#   2. fa4sim gpu upstream bench                  (tau 0/4/8 x emulated 0, 1/4, 1/2; d 64/128;
#                                                  causal or not; seq 4096 and 16384; next to the
#                                                  stock kernel and SDPA cuDNN; one run)
#   3. Nsight Compute pipe utilisation, d 64 non-causal seq 4096: stock, tau 8 at fractions 0 and 1/4
#   4. compute-sanitizer memcheck and racecheck on the variant (small shape; CUDA API return codes
#      are not reported: cuda-python probes driver symbols with cuGetProcAddress, which returns
#      CUDA_ERROR_INVALID_VALUE for the ones this driver lacks)
set -u
BIN=${1:?fa4sim binary}; OUT=${2:?output dir}
mkdir -p "$OUT"
T=$(nproc)
here=$(cd "$(dirname "$0")" && pwd)
step() {  # name, command...
  local name=$1; shift
  echo "== $name: $*"
  "$@"
  echo "   exit $?"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee "$OUT/nvidia-smi-tricks.csv"
step check-tricks "$BIN" gpu upstream check --suite-tricks --threads "$T" --json "$OUT/tricks_check_suite.json"
step bench-tricks "$BIN" gpu upstream bench --seq 4096,16384 --d 64,128 --causal 0,1 --tau 0,4,8 \
  --emu 0,2,4 --json "$OUT/tricks_bench.json"
shape='[{"batch":4,"heads":32,"seq":4096,"head_dim":64,"causal":false,"dtype":"bf16"}]'
metrics=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__registers_per_thread
for v in 'stock:null' 'tau8_emu0:{"tau":8,"emu_eighths":0}' 'tau8_emu2:{"tau":8,"emu_eighths":2}'; do
  name=${v%%:*}; spec=${v#*:}
  if [ "$spec" = null ]; then variants='[null]'; else variants="[$spec]"; fi
  echo "== ncu d64 $name"
  ncu --clock-control none -k regex:flash_fwd_sm90 -s 1 -c 1 --metrics "$metrics" \
    python3 "$here/../drivers/fa4_upstream.py" bench-tricks --only-variants --warmup 1 --iters 1 --shapes "$shape" \
    --variants "$variants" > "$OUT/tricks_ncu_d64_$name.txt" 2>&1
  echo "   exit $?"; grep -E "duration|pct|inst_executed.sum|registers" "$OUT/tricks_ncu_d64_$name.txt" | sed 's/^ */   /'
done
small='[{"batch":1,"heads":2,"seq":256,"head_dim":64,"causal":true,"dtype":"bf16"}]'
for tool in memcheck racecheck; do
  echo "== compute-sanitizer $tool, variant tau 8 emu 2/8, B1 H2 S256 d64 causal"
  timeout 300 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 python3 "$here/../drivers/fa4_upstream.py" bench-tricks \
    --only-variants --warmup 0 --iters 1 --shapes "$small" --variants '[{"tau":8,"emu_eighths":2}]' \
    > "$OUT/tricks_san_$tool.txt" 2>&1
  echo "   exit $?"; tail -2 "$OUT/tricks_san_$tool.txt"
done
