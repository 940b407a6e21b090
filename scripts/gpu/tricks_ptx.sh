#!/usr/bin/env bash
# scripts/gpu/tricks_ptx.sh: registers, spills and ptxas's warnings of upstream FA4's sm90 forward with
# and without the tricks, per head dim (docs/schedule.md, round 7: tau with emulated exps costs
# 8-14 % more above d 128, where upstream rescales O before the PV GEMM). Needs upstream installed
# (scripts/gpu/upstream_install.sh) and ptxas (CUDA toolkit). Writes OUT_DIR/ptxas.txt (one block per
# kernel) and OUT_DIR/ptx.tar.gz (the PTX files).
# Usage: scripts/gpu/tricks_ptx.sh OUT_DIR [D ...]   (default head dims: 128 144 160 184)
set -u
OUT=${1:?output dir}; shift
dims=("$@"); ((${#dims[@]})) || dims=(128 144 160 184)
here=$(cd "$(dirname "$0")" && pwd)
PTXAS=${PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
mkdir -p "$OUT/ptx"
: > "$OUT/ptxas.txt"
for d in "${dims[@]}"; do
  for kind in stock tau8_emu0 tau0_emu2 tau8_emu2; do
    dir="$OUT/ptx/d${d}_$kind"
    python3 "$here/tricks_ptx.py" --out "$dir" --d "$d" --kind "$kind" 2>&1 | grep -v "UserWarning\|exe_args" | tail -n 2
    for ptx in "$dir"/*.ptx; do
      [ -e "$ptx" ] || { echo "== d $d $kind: no PTX kept" >> "$OUT/ptxas.txt"; continue; }
      grep -q "flash_fwd_sm90\|FlashAttentionForwardSm90" "$ptx" || continue
      { echo "== d $d $kind: $(basename "$ptx")"
        "$PTXAS" -arch=sm_90a -O3 -v -warn-spills -warn-lmem-usage "$ptx" -o /dev/null 2>&1; } >> "$OUT/ptxas.txt"
    done
  done
done
tar -C "$OUT" -czf "$OUT/ptx.tar.gz" ptx && rm -rf "$OUT/ptx"
grep -E "^==|registers|spill|serializ|Warning" "$OUT/ptxas.txt" | head -n 80
