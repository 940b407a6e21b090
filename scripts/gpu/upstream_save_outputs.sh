#!/usr/bin/env bash
# scripts/gpu/upstream_save_outputs.sh: upstream FlashAttention-4's sm90 forward outputs (O and LSE)
# for the 19-run suite and the 36-run tricks suite, kept on disk, so that the bit identity of any
# CPU model with upstream can be measured later on a machine without a GPU:
#   fa4sim gpu upstream check --suite --from OUT/suite --compare-models
# Needs upstream installed for python3 (scripts/gpu/upstream_install.sh) and a fa4sim built with
# CUDA. About 2-4 minutes of GPU time (two driver calls), the float64 reference and the default
# CPU model on all cores; compare the other models later, anywhere, with --from --compare-models.
# Usage: scripts/gpu/upstream_save_outputs.sh FA4SIM_BIN OUT_DIR
#   OUT_DIR/suite, OUT_DIR/tricks: manifest.json, driver.json, r<i>_o.bin (O bits, uint16 LE,
#   [batch, heads, seq_q, d]) and r<i>_lse.bin (float32 LE, [batch, heads, seq_q]); the inputs
#   r<i>_{q,k,v}.bin are deleted afterwards (--from regenerates them from the seeds).
#   OUT_DIR/*.json: the checks' reports (identity shares of the default model, sm90-mufu).
set -u
BIN=${1:?fa4sim binary}; OUT=${2:?output dir}
mkdir -p "$OUT"
T=$(nproc)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/nvidia-smi.csv"
"$BIN" version | tee "$OUT/fa4sim_version.txt"
echo "== suite"
"$BIN" gpu upstream check --suite --save "$OUT/suite" --threads "$T" \
  --json "$OUT/upstream_check_suite.json"
echo "   exit $?"
echo "== tricks suite"
"$BIN" gpu upstream check --suite-tricks --save "$OUT/tricks" --threads "$T" \
  --json "$OUT/tricks_check_suite.json"
echo "   exit $?"
rm -f "$OUT"/suite/r*_q.bin "$OUT"/suite/r*_k.bin "$OUT"/suite/r*_v.bin \
  "$OUT"/tricks/r*_q.bin "$OUT"/tricks/r*_k.bin "$OUT"/tricks/r*_v.bin
du -sh "$OUT"/suite "$OUT"/tricks
