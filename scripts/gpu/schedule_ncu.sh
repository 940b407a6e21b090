#!/usr/bin/env bash
# scripts/gpu/schedule_ncu.sh: Nsight Compute counters of upstream FA4's sm90 forward for the shapes and
# kinds of a plan (docs/schedule.md, "Cycles from counters"). One profiled launch per (shape, kind),
# the GPU's clocks left alone. Needs upstream installed (scripts/gpu/upstream_install.sh).
# Usage: scripts/gpu/schedule_ncu.sh OUT_DIR PLAN_NAME [PLAN_FILE] [full|cycles|spills|stalls] [BUDGET_S]
#   full:   warp stall reasons, pipes, issue, L2/DRAM, registers (seven sections, raw page)
#   cycles: the kernel's SM cycles, clock, time, instructions and pipe shares only (one pass)
#   spills: cycles' metrics plus local-memory (register spill) instructions and L2/DRAM bytes
#   stalls: cycles' metrics plus warp-state statistics and per-SASS-instruction stall sampling
#           (SourceCounters): the report is kept (ncu_PLAN.ncu-rep) and read back as the raw page
#           (ncu_PLAN.csv) and the SASS source page of every kernel (ncu_PLAN_source.csv)
set -u
OUT=${1:?output dir}; PLAN=${2:?plan name}
here=$(cd "$(dirname "$0")" && pwd)
FILE=${3:-$here/schedule_ncu_plan.json}; MODE=${4:-full}; BUDGET=${5:-1e9}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv \
  > "$OUT/nvidia-smi-ncu.csv" 2>&1
metrics=gpc__cycles_elapsed.max,gpc__cycles_elapsed.avg.per_second,gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__registers_per_thread,launch__grid_size
[ "$MODE" = spills ] && metrics=$metrics,smsp__sass_inst_executed_op_local_ld.sum,smsp__sass_inst_executed_op_local_st.sum,lts__t_bytes.sum,dram__bytes_read.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum
sections=()
[ "$MODE" = stalls ] && sections=(--section WarpStateStats --section SourceCounters --import-source no)
[ "$MODE" = full ] && sections=(--section SpeedOfLight --section WarpStateStats --section SchedulerStats
  --section LaunchStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section InstructionStats)
if [ "$MODE" = stalls ]; then
  PYTHONUNBUFFERED=1 ncu --profile-from-start off --clock-control none -k regex:flash_fwd_sm90 "${sections[@]}" \
    --metrics "$metrics" -f -o "$OUT/ncu_$PLAN" \
    python3 "$here/schedule_ncu.py" --plan "$FILE" --plan-name "$PLAN" --budget-s "$BUDGET" \
    > "$OUT/ncu_${PLAN}_order.jsonl"
  echo "ncu exit $?"
  ncu -i "$OUT/ncu_$PLAN.ncu-rep" --csv --page raw > "$OUT/ncu_$PLAN.csv"
  ncu -i "$OUT/ncu_$PLAN.ncu-rep" --csv --page source --print-source sass > "$OUT/ncu_${PLAN}_source.csv"
  echo "ncu import exit $?"
else
  PYTHONUNBUFFERED=1 ncu --profile-from-start off --clock-control none -k regex:flash_fwd_sm90 "${sections[@]}" \
    --metrics "$metrics" --csv --page raw --log-file "$OUT/ncu_$PLAN.csv" \
    python3 "$here/schedule_ncu.py" --plan "$FILE" --plan-name "$PLAN" --budget-s "$BUDGET" \
    > "$OUT/ncu_${PLAN}_order.jsonl"
  echo "ncu exit $?"
fi
wc -l "$OUT/ncu_$PLAN.csv" "$OUT/ncu_${PLAN}_order.jsonl"
