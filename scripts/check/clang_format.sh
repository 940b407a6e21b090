#!/usr/bin/env bash
# scripts/check/clang_format.sh: the tree's C++/CUDA files against .clang-format, with
# clang-format 14 (other versions lay out some constructs differently, so the check needs that one;
# $CLANG_FORMAT names another binary).
#
#   scripts/check/clang_format.sh [--check] [FILE ...]   name each file clang-format would change,
#                                                        with how many lines; exit 1 if any would
#   scripts/check/clang_format.sh --fix [FILE ...]       format them in place (clang-format -i)
#   --list-if-present LIST (after --check/--fix): the files LIST names (# comments), when it exists
#
# The files, when none are given: every *.cpp *.h *.cu *.cuh that git tracks or would track (new
# files not yet added, not ignored; outside a git checkout, every one under src/ include/ tests/
# scripts/), except the generated
# src/cuda/wgmma_ops.cuh (scripts/build/gen_wgmma.py writes it, byte for byte). ctest
# clang_format runs --check (tests/scripts/clang_format.cmake). Exit 77 without clang-format-14.
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=--check
case "${1:-}" in
  --check | --fix) mode=$1; shift ;;
  -*) echo "clang_format: error: unknown option '$1' (--check or --fix)" >&2; exit 2 ;;
esac
if [ "${1:-}" = --list-if-present ]; then
  list=${2:?"--list-if-present needs a file"}; shift 2
  if [ -f "$list" ]; then mapfile -t listed < <(grep -v '^#' "$list"); set -- "${listed[@]}" "$@"; fi
fi
cf=${CLANG_FORMAT:-$(command -v clang-format-14 || true)}
if [ -z "$cf" ]; then
  echo "clang_format: clang-format-14 not found (apt-get install clang-format-14)"
  exit 77
fi
generated='^src/cuda/wgmma_ops\.cuh$'

tree_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files --cached --others --exclude-standard -- '*.cpp' '*.h' '*.cu' '*.cuh'
  else
    find src include tests scripts -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' \
      -o -name '*.cuh' \) | sort
  fi | grep -Ev "$generated"
}

if [ $# -gt 0 ]; then files=("$@"); else mapfile -t files < <(tree_files); fi
if [ "$mode" = --fix ]; then
  "$cf" -i --style=file "${files[@]}"
  echo "clang_format: formatted ${#files[@]} files"
  exit 0
fi
# One clang-format for every file first (seconds); the per-file counts only when something differs.
if "$cf" --dry-run -Werror --style=file "${files[@]}" >/dev/null 2>&1; then
  echo "clang_format: all ${#files[@]} files formatted"
  exit 0
fi
bad=0 lines=0
for f in "${files[@]}"; do
  n=$("$cf" --style=file "$f" | diff -- "$f" - | grep -c '^[<>]' || true)
  if [ "$n" -gt 0 ]; then
    echo "$f: $n lines differ from clang-format's layout"
    bad=$((bad + 1)) lines=$((lines + n))
  fi
done
if [ "$bad" -gt 0 ]; then
  echo "clang_format: $bad of ${#files[@]} files not formatted ($lines diff lines);" \
    "scripts/check/clang_format.sh --fix formats them"
  exit 1
fi
echo "clang_format: clang-format --dry-run failed, yet every file matches its output" >&2
exit 1
