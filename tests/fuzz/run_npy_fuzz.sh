#!/usr/bin/env bash
# Builds and runs the libFuzzer harness for the .npy reader (see npy_fuzz.cpp).
#   tests/fuzz/run_npy_fuzz.sh [SECONDS=600] [WORKDIR=/tmp/fa4sim-npy-fuzz]
# Prints libFuzzer's final stats (execs, coverage); exits non-zero when a crash was found.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-600}
work=${2:-/tmp/fa4sim-npy-fuzz}
mkdir -p "$work/corpus"
clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Iinclude tests/fuzz/npy_fuzz.cpp src/util/npy.cpp src/util/report.cpp -lfmt -o "$work/npy_fuzz"
# Seeds: valid files of each version, type and order, plus a few near misses.
seed() { printf '%b' "$2" >"$work/corpus/$1"; }
hdr() {  # hdr MAJOR DICT DATA: a .npy image without padding
  local dict=$2 n=${#2}
  if [ "$1" = 1 ]; then
    printf '\x93NUMPY\x01\x00%b%s%b' "$(printf '\\x%02x\\x%02x' $((n & 255)) $((n >> 8)))" "$dict" "$3"
  else
    printf '\x93NUMPY\x0%d\x00%b%s%b' "$1" "$(printf '\\x%02x\\x%02x\\x00\\x00' $((n & 255)) $((n >> 8)))" "$dict" "$3"
  fi
}
hdr 1 "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1), }"$'\n' '\x00\x00\x80\x3f\x00\x00\x00\x40' >"$work/corpus/f4_c"
hdr 1 "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 2), }"$'\n' '\x00\x00\x80\x3f\x00\x00\x00\x40' >"$work/corpus/f4_f"
hdr 2 "{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }"$'\n' '\x00\x3c\x00\xc0' >"$work/corpus/f2_v2"
hdr 3 "{'descr': '<u2', 'fortran_order': False, 'shape': (), }"$'\n' '\x80\x3f' >"$work/corpus/u2_v3"
hdr 1 "{'descr': '>f4', 'fortran_order': False, 'shape': (0, 3), }"$'\n' '' >"$work/corpus/be_empty"
seed not_npy 'hello'
# libFuzzer writes fuzz-<job>.log into the current directory: run from the work directory.
cd "$work"
./npy_fuzz -jobs=1 -workers=1 -max_total_time="$secs" -print_final_stats=1 \
  -artifact_prefix="$work/" corpus >fuzz.log 2>&1 || true
tail -40 fuzz-0.log
! ls "$work"/crash-* "$work"/leak-* "$work"/timeout-* >/dev/null 2>&1
