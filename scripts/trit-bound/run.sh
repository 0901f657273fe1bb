#!/bin/sh
# Issue 29's goal 1 on this machine: backend-avx512's base-3 mat-vec
# (tq1_0, ptqtp2, ptqtp3) against the memory read bandwidth, beside the
# ceiling of its inner loop alone (trit_core_bound.c: no reduction, no
# scales, L1). Where the ceiling is below the goal's share of the
# bandwidth (90 % for tq1_0, 80 % for ptqtp2/3), no kernel of this form
# can meet it on this CPU.
#
#   scripts/trit-bound/run.sh [BUILD_DIR]
#
# Needs AVX-512 F/BW and VNNI (exits 2 without) and a built anvil.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
anvil=$build/bin/anvil
for f in avx512f avx512bw avx512_vnni; do
    grep -qw "$f" /proc/cpuinfo || { echo "trit-bound: this CPU has no $f" >&2; exit 2; }
done
[ -x "$anvil" ] || { echo "trit-bound: no $anvil (build first, or pass the build folder)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
${CC:-cc} -O3 -std=c11 -D_POSIX_C_SOURCE=199309L -mavx512f -mavx512bw -mavx512vnni \
    "$here/trit_core_bound.c" -o "$tmp/bound"
"$anvil" bench --suite --no-ggml --type tq1_0 --type ptqtp2 --type ptqtp3 | tee "$tmp/bench"
echo
"$tmp/bound" | tee "$tmp/ceiling"
bw=$(sed -n 's/^memory read bandwidth: \([0-9.]*\) GB\/s (1 thread).*/\1/p' "$tmp/bench")
gbs=$(awk '$1 == "tq1_0" { print $3 }' "$tmp/ceiling")
awk -v c="$gbs" -v b="$bw" 'BEGIN { printf "ceiling %.2f GB/s per core = %.0f %% of the 1-thread read bandwidth (%.2f GB/s); goal 1: 90 %% (tq1_0), 80 %% (ptqtp2/3)\n", c, 100 * c / b, b }'
