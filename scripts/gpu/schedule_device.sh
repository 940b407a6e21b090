#!/usr/bin/env bash
# scripts/gpu/schedule_device.sh: the H200 measurements behind the schedule model (docs/schedule.md),
# in one GPU-machine call: upstream FA4's sm90 forward, SDPA cuDNN and FA4's softmax tricks, timed
# with the interleaved protocol of scripts/gpu/fa4_protocol.py for the plans of
# scripts/gpu/schedule_plan.json (calibration, heldout, moonshot).
# Needs upstream installed (scripts/gpu/upstream_install.sh) for the python3 that has torch.
# Usage: scripts/gpu/schedule_device.sh OUT_DIR [ROUNDS] [ITERS] [PLAN[:BUDGET_S] ...]
#   BUDGET_S: no new shape of that plan is started after that many seconds (default 160)
set -u
OUT=${1:?output dir}; ROUNDS=${2:-5}; ITERS=${3:-10}; shift 3 2>/dev/null || shift $#
plans=("$@"); ((${#plans[@]})) || plans=(calibration heldout moonshot)
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu \
  --format=csv > "$OUT/nvidia-smi.csv" 2>&1
cat "$OUT/nvidia-smi.csv"
# The SM clock under load, every 20 ms, for the whole run (the protocol keeps each batch's wall time).
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader,nounits -lms 20 \
  > "$OUT/clocks.csv" 2>&1 &
smi=$!
trap 'kill $smi 2>/dev/null' EXIT
for pb in "${plans[@]}"; do
  p=${pb%%:*}; budget=160; [ "$p" != "$pb" ] && budget=${pb#*:}
  echo "== plan $p (rounds $ROUNDS, iters $ITERS, budget ${budget}s)"
  PYTHONUNBUFFERED=1 python3 "$here/fa4_protocol.py" --plan "$here/schedule_plan.json" --plan-name "$p" \
    --rounds "$ROUNDS" --iters "$ITERS" --budget-s "$budget" --out "$OUT/$p.jsonl"
  echo "   exit $?"
done
