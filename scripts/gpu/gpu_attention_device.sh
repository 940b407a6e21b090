#!/usr/bin/env bash
# gpu_attention_device.sh: every GPU measurement of `fa4sim gpu attention` in one run (the
# numbers in data/gpu/attention/ and the section "What FA4's softmax tricks do on Hopper" of docs/findings.md).
# Usage: scripts/gpu/gpu_attention_device.sh FA4SIM_BIN OUT_DIR [quick]
# Runs: the exact replays (comparison 2), the end-to-end sweep against the CPU model (1), the FP8
# saturation pair (3), compute-sanitizer memcheck/racecheck, and the benchmark vs torch SDPA.
set -u
BIN=${1:?fa4sim binary}; OUT=${2:?output dir}; QUICK=${3:-}
mkdir -p "$OUT/json"
T=$(nproc)
run() {  # name, args...
  local name=$1; shift
  echo "== $name: fa4sim gpu attention $*"
  "$BIN" gpu attention "$@" --threads "$T" --json "$OUT/json/$name.json"
  echo "   exit $?"
  (cd "$OUT" && tar czf results.tgz json)
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,utilization.gpu --format=csv
# ---- 2: exact replays of the GPU's own S (small shapes, tails, GQA, causal, emulation)
run exact_bf16_d128_emu4 --dtype bf16 --d 128 --seq 300 --seq-k 333 --heads 4 --kv-heads 2 --emu-tiles 4 --exact
run exact_bf16_d64_causal_emu3 --dtype bf16 --d 64 --seq 257 --causal --emu-tiles 3 --q-scale 8 --exact
run exact_fp16_d128_tau0_emu8 --dtype fp16 --d 128 --seq 200 --tau 0 --emu-tiles 8 --exact
run exact_e4m3_tau4_emu2 --dtype e4m3 --d 128 --seq 256 --tau 4 --allow-saturation --emu-tiles 2 --exact
run exact_e5m2_d64_fwd --dtype e5m2 --d 64 --seq 256 --order forward --emu-tiles 1 --exact
# ---- speed: fa4sim vs torch SDPA flash and cuDNN (B4 H32 S4096 bf16), and the emulation sweep
run bench_main --bench --bench-d 64,128 --bench-causal 0,1 --bench-tau 0,8 --bench-emu 0
run bench_emu_d64 --bench --bench-d 64 --bench-causal 0 --bench-tau 0,8 --bench-emu 0,1,2,3,4 --python ''
run bench_emu_d128 --bench --bench-d 128 --bench-causal 0 --bench-tau 8 --bench-emu 0,1,2,3,4 --python ''
run bench_repeat --bench --bench-d 64,128 --bench-causal 0 --bench-tau 8 --bench-emu 0
# ---- 1 and 3: end to end vs the CPU model and float64
for dt in bf16 fp16 e4m3 e5m2; do
  for tau in 0 4 8; do
    for qs in 1 8; do
      for seq in 256 2048; do
        [ -n "$QUICK" ] && [ "$seq" != 256 ] && continue
        run e2e_${dt}_tau${tau}_q${qs}_s${seq} --dtype $dt --tau $tau --q-scale $qs --seq $seq --heads 2 --allow-saturation
      done
    done
  done
done
if [ -z "$QUICK" ]; then
  run e2e_bf16_tau8_q1_s8192 --dtype bf16 --tau 8 --seq 8192 --heads 1
  run e2e_e4m3_tau4_q1_s8192 --dtype e4m3 --tau 4 --seq 8192 --heads 1 --allow-saturation
  run e2e_bf16_tau8_causal_s4096_d64 --dtype bf16 --tau 8 --seq 4096 --heads 2 --d 64 --causal
fi
# ---- sanitizers (small shapes, both head dims, instrumented and timed kernels)
if command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    echo "== compute-sanitizer --tool $tool"
    compute-sanitizer --tool $tool --error-exitcode 9 "$BIN" gpu attention --d 128 --seq 200 --heads 2 --kv-heads 1 --emu-tiles 4 --exact --threads "$T" >"$OUT/json/san_${tool}_d128.txt" 2>&1; echo "   exit $?"; tail -3 "$OUT/json/san_${tool}_d128.txt"
    compute-sanitizer --tool $tool --error-exitcode 9 "$BIN" gpu attention --d 64 --seq 190 --causal --dtype e4m3 --threads "$T" >"$OUT/json/san_${tool}_d64.txt" 2>&1; echo "   exit $?"; tail -3 "$OUT/json/san_${tool}_d64.txt"
    compute-sanitizer --tool $tool --error-exitcode 9 "$BIN" gpu attention --bench --bench-d 64,128 --bench-causal 0,1 --bench-batch 1 --bench-heads 2 --bench-seq 256 --iters 1 --python '' >"$OUT/json/san_${tool}_bench.txt" 2>&1; echo "   exit $?"; tail -3 "$OUT/json/san_${tool}_bench.txt"
  done
fi
(cd "$OUT" && tar czf results.tgz json)
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv
