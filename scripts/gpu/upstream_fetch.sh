#!/usr/bin/env bash
# scripts/gpu/upstream_fetch.sh: downloads upstream FlashAttention-4 and its CuTe DSL stack, pinned,
# as wheels for Python 3.12 / manylinux x86_64 (the GPU machine's python), into DIR (default
# .upstream-wheels/, ignored by git). Run it on a machine that reaches PyPI; then bring DIR to the
# GPU machine and run scripts/gpu/upstream_install.sh there (README "Upstream FA4").
#   The 92 MB CUDA 13 runtime wheel is also written as parts (<name>.part-aa, -ab, ...; 60 MiB at
#   most each, or FA4SIM_WHEEL_PART, a size for split -b, e.g. 9500000 where a transport carries
#   only that much beside a working tree); SHA256SUMS lists every whole wheel so the install step
#   can check the reassembly.
# Usage: scripts/gpu/upstream_fetch.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-.upstream-wheels}
mkdir -p "$dir"
py=${PYTHON:-python3}
# Keep these pins in step with PINS in scripts/drivers/fa4_upstream.py (tests/gpu check they agree).
pure=(flash-attn-4==4.0.0b36 quack-kernels==0.6.5 nvidia-cutlass-dsl==4.8.1
      nvidia-cutlass-dsl-libs-core==4.8.1)
binary=(nvidia-cutlass-dsl-libs-base==4.8.1 nvidia-cutlass-dsl-libs-cu13==4.8.1
        apache-tvm-ffi==0.1.15.post2 torch-c-dlpack-ext==0.1.5)
plat=(--only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
      --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
      --platform manylinux2014_x86_64)
"$py" -m pip download -q --no-deps -d "$dir" "${pure[@]}"
"$py" -m pip download -q --no-deps "${plat[@]}" -d "$dir" "${binary[@]}"
(
  cd "$dir"
  rm -f ./*.part-* SHA256SUMS
  sha256sum ./*.whl > SHA256SUMS
  big=$(ls nvidia_cutlass_dsl_libs_cu13-*.whl)
  split -b "${FA4SIM_WHEEL_PART:-60M}" "$big" "$big.part-"
)
echo "upstream_fetch: $(ls "$dir"/*.whl | wc -l) wheels in $dir ($(du -sh "$dir" | cut -f1)); parts:"
ls -l "$dir"/*.part-*
