#!/usr/bin/env bash
# wgmma_verify_device.sh: the tensor-core check of docs/wgmma.md in one run on an H100/H200.
#   1. builds fa4sim with the CUDA backend (build-wgmma/, only the fa4sim target) unless a binary
#      is given;
#   2. `fa4sim gpu verify --what wgmma`: per type (bf16, fp16, e4m3, e5m2) 25000 m64n64 wgmmas
#      (1.02 * 10^8 dot products), every output against each candidate model on the device, the
#      first mismatches and the sample re-checked by the host build; report OUT/wgmma_verify.json,
#      text OUT/wgmma_verify.txt, the sample OUT/wgmma-sample/wgmma-<type>.npy;
#   3. MMA-Sim on the sample (scripts/check/check_wgmma_mmasim.py; skipped, exit 77, without
#      mmasim and torch).
# Usage: scripts/gpu/wgmma_verify_device.sh OUT_DIR [FA4SIM_BIN] [TILES]
set -u
OUT=${1:?output dir}; BIN=${2:-}; TILES=${3:-25000}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee "$OUT/env.txt"
if [ -z "$BIN" ]; then
  cmake -S . -B build-wgmma -DCMAKE_BUILD_TYPE=Release -DFA4SIM_CUDA=ON -DFA4SIM_TESTS=OFF \
    -DFA4SIM_PYTHON=OFF > "$OUT/build.log" 2>&1 &&
    cmake --build build-wgmma -j"$(nproc)" --target fa4sim >> "$OUT/build.log" 2>&1 ||
    { echo "build failed (tail of $OUT/build.log):"; tail -30 "$OUT/build.log"; exit 2; }
  BIN=build-wgmma/fa4sim
fi
echo "== fa4sim gpu verify --what wgmma --tiles $TILES"
"$BIN" gpu verify --what wgmma --tiles "$TILES" --sample "$OUT/wgmma-sample" \
  --json "$OUT/wgmma_verify.json" | tee "$OUT/wgmma_verify.txt"
rc=${PIPESTATUS[0]}
echo "   verify exit $rc"
echo "== MMA-Sim on the sample"
python3 scripts/check/check_wgmma_mmasim.py --check "$OUT/wgmma-sample" | tee "$OUT/mmasim_check.txt"
echo "   mmasim exit ${PIPESTATUS[0]}"
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv | tee -a "$OUT/env.txt"
exit "$rc"
