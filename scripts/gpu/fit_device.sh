#!/usr/bin/env bash
# fit_device.sh: the H200 half of `fa4sim fit` (data/fit/gpu/): every fitted polynomial of
# data/fit/runs/*.json through the GPU's own instructions.
#   1. `fa4sim gpu verify --coeffs C`: the emulation with C on all 2^32 float32 inputs, every
#      result bit against the CPU emulator (ex2_emu_poly);
#   2. `fa4sim gpu bench-exp --coeffs C`: exps/clk/SM at f = 0..1 (the mix points),
#   and, in the same run for the side-by-side ratio, `gpu bench-exp --degree 1,2,3,4,5` with
#   upstream's POLY_EX2.
# Usage: scripts/gpu/fit_device.sh FA4SIM_BIN OUT_DIR [RUN_JSON ...]   (default: data/fit/runs/*.json)
set -u
BIN=${1:?fa4sim binary}; OUT=${2:?output dir}; shift 2
runs=("$@"); [ ${#runs[@]} -eq 0 ] && runs=(data/fit/runs/*.json)
mkdir -p "$OUT"
T=$(nproc)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee "$OUT/env.txt"
echo "== upstream POLY_EX2, degrees 1-5"
"$BIN" gpu bench-exp --degree 1,2,3,4,5 --out none --threads "$T" --json "$OUT/bench_upstream.json" | tail -25
for r in "${runs[@]}"; do
  name=$(basename "$r" .json)
  coeffs=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['results']['coeffs_list'])" "$r")
  echo "== $name: $coeffs"
  "$BIN" gpu verify --coeffs "$coeffs" --threads "$T" --json "$OUT/verify_$name.json" | tail -6
  echo "   verify exit $?"
  "$BIN" gpu bench-exp --coeffs "$coeffs" --out none --threads "$T" --json "$OUT/bench_$name.json" | tail -22
  echo "   bench exit $?"
done
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv | tee -a "$OUT/env.txt"
