#!/usr/bin/env bash
# scripts/bench/bench_attention.sh: `fa4sim attention` at its default shape (batch 1, heads 8,
# seq 1024, d 128, bf16, the error split), two builds side by side, interleaved, REPEAT times each;
# prints the median wall time and the median CPU time (user + system) of each and their ratio.
# CPU time is what a shared machine does not inflate; wall time is what a user waits for.
# Usage: scripts/bench/bench_attention.sh BEFORE_BIN AFTER_BIN [REPEAT] [ARGS...]
#   (default REPEAT 5; ARGS replace the default shape's options, e.g. --threads 1)
set -euo pipefail
cd "$(dirname "$0")/../.."
before=$1
after=$2
repeat=${3:-5}
shift $(($# < 3 ? $# : 3))
args=("$@")
# wall and CPU seconds of one run: "wall cpu"
t() {
  local f
  f=$(mktemp)
  /usr/bin/time -f "%e %U %S" -o "$f" "$@" >/dev/null
  awk '{printf "%s %.2f\n", $1, $2 + $3}' "$f"
  rm -f "$f"
}
med() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
declare -A W C
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for ((i = 0; i < repeat; i++)); do
  for side in before after; do
    bin=${!side}
    read -r w c < <(t "$bin" attention "${args[@]}")
    W[$side]+="$w "
    C[$side]+="$c "
  done
done
m() { tr ' ' '\n' <<<"$1" | grep . | med; }
echo "fa4sim attention ${args[*]:-(default shape)}: medians of $repeat interleaved runs, $(nproc) cores, load at start: $load0, $(date -u +%FT%TZ), $(hostname)"
printf " %-7s %8s %8s\n" build wall_s cpu_s
for side in before after; do printf " %-7s %8.2f %8.2f\n" $side "$(m "${W[$side]}")" "$(m "${C[$side]}")"; done
echo " after/before: wall $(awk "BEGIN {printf \"%.3f\", $(m "${W[after]}") / $(m "${W[before]}")}"), cpu $(awk "BEGIN {printf \"%.3f\", $(m "${C[after]}") / $(m "${C[before]}")}")"
echo "every run (wall s / cpu s), in order:"
for side in before after; do printf "  %-7s %s / %s\n" $side "${W[$side]}" "${C[$side]}"; done
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg); git $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
