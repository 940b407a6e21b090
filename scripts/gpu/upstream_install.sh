#!/usr/bin/env bash
# scripts/gpu/upstream_install.sh: installs the pinned upstream FlashAttention-4 wheels that
# scripts/gpu/upstream_fetch.sh downloaded, offline (pip --no-deps --no-index), into the python3 that
# has torch (the GPU machine's), then checks that `flash_attn.cute` imports.
#   scripts/gpu/upstream_install.sh [DIR]           install from DIR (default .upstream-wheels/)
#   scripts/gpu/upstream_install.sh --stash [DIR]   copy what DIR holds to $FA4SIM_WHEEL_STASH
#                                               (default ~/fa4sim-wheels) and stop: for a
#                                               transport that carries 64 MiB per trip, bring the
#                                               first part in one trip and stash it, then the rest
#                                               and install (the install also reads the stash)
# Reassembles the split CUDA 13 runtime wheel and checks every wheel against SHA256SUMS first.
set -euo pipefail
cd "$(dirname "$0")/../.."
stash=${FA4SIM_WHEEL_STASH:-$HOME/fa4sim-wheels}
py=${PYTHON:-python3}
if [ "${1:-}" = "--stash" ]; then
  dir=${2:-.upstream-wheels}
  mkdir -p "$stash"
  cp -f "$dir"/* "$stash"/
  echo "upstream_install: stashed $(ls "$dir" | wc -l) files in $stash"
  exit 0
fi
dir=${1:-.upstream-wheels}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -d "$stash" ] && cp -f "$stash"/* "$work"/ 2>/dev/null || true
[ -d "$dir" ] && cp -f "$dir"/* "$work"/ 2>/dev/null || true
cd "$work"
for first in ./*.whl.part-aa; do
  [ -e "$first" ] || continue
  whl=${first%.part-aa}
  [ -e "$whl" ] || cat "$whl".part-* > "$whl"
done
if [ ! -f SHA256SUMS ]; then
  echo "upstream_install: error: no SHA256SUMS in $dir or $stash (run scripts/gpu/upstream_fetch.sh first)" >&2
  exit 2
fi
if ! sha256sum --quiet -c SHA256SUMS; then
  echo "upstream_install: error: a wheel is missing or damaged (bring every part; see scripts/gpu/upstream_fetch.sh)" >&2
  exit 2
fi
"$py" -m pip install -q --no-deps --no-index --no-cache-dir ./*.whl
"$py" - <<'PY'
import importlib.metadata as m
import flash_attn.cute.interface  # noqa: F401  (fails loudly if the DSL stack is incomplete)
print("upstream_install: flash-attn-4", m.version("flash-attn-4"), "| nvidia-cutlass-dsl",
      m.version("nvidia-cutlass-dsl"), "| flash_attn.cute imports")
PY
