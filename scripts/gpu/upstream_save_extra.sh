#!/usr/bin/env bash
# scripts/gpu/upstream_save_extra.sh: upstream FA4's sm90 outputs for eight configurations beyond
# the two suites (d 96, 192, 256; GQA 4:1 and 2:1; causal with seq_q != seq_k, both ways; q-scale
# 4-16; the tricks variant at d 96), saved (`gpu upstream check --save`) so that a CPU model's bit
# identity can be measured on a machine without a GPU (scripts/datagen/upstream_identity_runs.py
# reads the one-run folders HOME/nc/c<i>). Needs upstream installed and fa4sim in HOME/fi/bin
# (an install tree: bin/fa4sim and share/fa4sim/drivers).
# Usage: scripts/gpu/upstream_save_extra.sh   (writes $OUT/nc.tgz)
B=$HOME/fi/bin/fa4sim; export LD_LIBRARY_PATH=$HOME/fi/bin FA4SIM_DATA_DIR=$PWD/data
mkdir -p $HOME/nc
i=0
while read args; do
  echo "== c$i: $args"
  $B gpu upstream check $args --save $HOME/nc/c$i --threads 16 2>&1 | grep -v "UserWarning\|exe_args\|JitArgument\|first O mismatch\|first LSE mismatch" | sed -n 1,4p
  i=$((i+1))
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
rm -f $HOME/nc/c*/r*_q.bin $HOME/nc/c*/r*_k.bin $HOME/nc/c*/r*_v.bin
tar czf $OUT/nc.tgz -C $HOME nc; ls -la $OUT
