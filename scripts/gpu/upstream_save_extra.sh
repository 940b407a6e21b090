#!/usr/bin/env bash
# scripts/gpu/upstream_save_extra.sh: upstream FA4's sm90 outputs for eight configurations beyond
# the two suites of upstream_save_outputs.sh (d 96, 192, 256; GQA 4:1 and 2:1; causal with seq_q
# != seq_k, both ways; q-scale 4-16; the tricks variant at d 96), saved with `gpu upstream check
# --save`, so that a CPU model's bit identity can be measured later on a machine without a GPU:
#   python3 scripts/datagen/upstream_identity_runs.py OUT_DIR OUT_DIR/identity
# Needs upstream installed for python3 (scripts/gpu/upstream_install.sh) and a fa4sim built with
# CUDA that finds its drivers (a build tree, or an install tree: bin/ beside share/fa4sim/).
# Usage: scripts/gpu/upstream_save_extra.sh FA4SIM_BIN OUT_DIR
#   OUT_DIR/c<i>: manifest.json, driver.json, r0_o.bin, r0_lse.bin (the inputs are deleted;
#   --from regenerates them from the seeds)
set -u
BIN=${1:?fa4sim binary}; OUT=${2:?output dir}
mkdir -p "$OUT"
i=0
while read -r args; do
  echo "== c$i: $args"
  # shellcheck disable=SC2086  # the configuration's options, split on purpose
  "$BIN" gpu upstream check $args --save "$OUT/c$i" --threads "$(nproc)" 2>&1 |
    grep -v "UserWarning\|exe_args\|JitArgument\|first O mismatch\|first LSE mismatch" | sed -n 1,4p
  i=$((i + 1))
done <<'CFG'
--dtype fp16 --d 96 --batch 1 --heads 8 --kv-heads 2 --seq 700 --seq-k 1000 --causal --q-scale 4 --seed 11
--dtype bf16 --d 192 --batch 1 --heads 2 --seq 512 --seed 12
--dtype bf16 --d 256 --batch 1 --heads 2 --seq 512 --seq-k 768 --causal --q-scale 16 --seed 13
--dtype fp16 --d 64 --batch 2 --heads 4 --kv-heads 1 --seq 1000 --seq-k 600 --causal --seed 14
--dtype bf16 --d 128 --batch 1 --heads 2 --seq 1024 --q-scale 16 --seed 15
--dtype fp16 --d 256 --batch 1 --heads 2 --kv-heads 1 --seq 333 --seq-k 777 --seed 16
--dtype bf16 --d 96 --batch 1 --heads 4 --seq 640 --seq-k 640 --causal --variant --tau 8 --emu 2 --q-scale 8 --seed 17
--dtype fp16 --d 192 --batch 1 --heads 2 --seq 256 --seq-k 900 --causal --seed 18
CFG
rm -f "$OUT"/c*/r*_q.bin "$OUT"/c*/r*_k.bin "$OUT"/c*/r*_v.bin
du -sh "$OUT"
