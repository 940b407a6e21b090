#!/usr/bin/env bash
# scripts/bench/bench_rescale.sh: `fa4sim rescale` vs the NumPy baseline (scripts/bench/numpy_baseline.py
# rescale), measured side by side, interleaved, REPEAT times each; prints medians and ratios.
#   counts: the rescale-count table (4 distributions x tau 0, 8, 256 x 8192, one seed)
#   errors: counts + the bf16 (tau 0/8) and FP8 (E4M3/E5M2, tau 0/4, max_offset 8) error tables,
#           P @ V at d = 128 (fa4sim also runs the one-shot experiment in this set)
# Both sides draw NumPy's default_rng(1) streams (fa4sim: --rng numpy:1); fa4sim also with its own
# generator. Usage: scripts/bench/bench_rescale.sh [BUILD_DIR] [REPEAT]   (default build, 5)
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-build}/fa4sim
repeat=${2:-5}
d4="--dist normal:1.5,peaked,rise:24,rise:96"
t() { local s e; s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N); awk "BEGIN {print $e - $s}"; }
med() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
declare -A T
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for ((i = 0; i < repeat; i++)); do
  T[np_counts]+="$(python3 scripts/bench/numpy_baseline.py rescale --what counts --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["median_s"])') "
  T[fa_counts_np]+="$(t "$bin" rescale $d4 --counts-only --rng numpy:1) "
  T[fa_counts_own]+="$(t "$bin" rescale $d4 --counts-only) "
  T[np_errors]+="$(python3 scripts/bench/numpy_baseline.py rescale --what errors --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["median_s"])') "
  T[fa_errors_np]+="$(t bash -c "$bin rescale $d4 --counts-only --rng numpy:1 && $bin rescale --dist normal:1.5,peaked --rng numpy:1 && $bin rescale --dist normal:1.5,peaked --dtype e4m3,e5m2 --tau 0,4 --max-offset 8 --allow-saturation --rng numpy:1") "
  T[fa_errors_own]+="$(t bash -c "$bin rescale $d4 --counts-only && $bin rescale --dist normal:1.5,peaked && $bin rescale --dist normal:1.5,peaked --dtype e4m3,e5m2 --tau 0,4 --max-offset 8 --allow-saturation") "
done
m() { tr ' ' '\n' <<<"${T[$1]}" | grep . | med; }
echo "fa4sim rescale vs NumPy baseline: medians of $repeat interleaved runs, $(nproc) cores, load at start: $load0, $(date -u +%FT%TZ), $(hostname)"
printf " %-8s %10s %16s %16s %12s %12s\n" workload numpy_s "fa4sim_s(numpy)" "fa4sim_s(own)" ratio_numpy ratio_own
for w in counts errors; do
  n=$(m np_$w); a=$(m fa_${w}_np); b=$(m fa_${w}_own)
  printf " %-8s %10.3f %16.3f %16.3f %11.1fx %11.1fx\n" $w "$n" "$a" "$b" "$(awk "BEGIN {print $n / $a}")" "$(awk "BEGIN {print $n / $b}")"
done
echo "every run (s), in order:"
for k in np_counts fa_counts_np fa_counts_own np_errors fa_errors_np fa_errors_own; do
  printf "  %-14s %s\n" "$k" "${T[$k]}"
done
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg); git $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
