#!/bin/sh
# Prefill throughput of `anvil imatrix`'s collection against llama.cpp's
# (libllama from the oracle folder with llama-imatrix's eval callback: the
# imatrix_collect parity family's bench mode, tests/parity/
# parity_imatrix_collect.c), same model, tokens, ctx, chunks and threads,
# the two alternating in one process, REPS passes each; then the peak RSS
# of each alone (llama.cpp: the family with IC_BENCH_ONLY=llama; anvil:
# `anvil imatrix` itself). Prints a Markdown table, one row a model and
# thread count: tokens/s of the collection (model load apart), min-max over
# the passes, and the ratio anvil / llama.cpp (median, min-max of the
# per-pass ratios; above 1: anvil is faster). Says the load (uptime).
#
#   scripts/bench-imatrix.sh [BUILD_DIR] [MODEL.gguf ...]
#
# Models: default the trained test model (../shared/testdata/quality) as
# F16 and, made with `anvil quantize`, BF16 and Q8_0; "moe" names the
# family's synthetic F32 MoE (8 experts, 2 used; no RSS). Environment:
# THREADS (default "1 2"), CTX (512), CHUNKS (2), REPS (3), TEXT
# (calib.txt), QUALITY_DATA.
set -u
build=${1:-build}
[ $# -gt 0 ] && shift
q=${QUALITY_DATA:-../shared/testdata/quality}
text=${TEXT:-$q/calib.txt}
threads=${THREADS:-1 2}
ctx=${CTX:-512}
chunks=${CHUNKS:-2}
reps=${REPS:-3}
anvil=$build/bin/anvil
parity=$build/bin/anvil-parity
[ -x "$anvil" ] && [ -x "$parity" ] || { echo "build $build first (targets runtime, anvil-parity)" >&2; exit 1; }
[ -r "$text" ] || { echo "cannot read $text (set TEXT)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/anvil-bench-imatrix-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
models="$*"
if [ -z "$models" ]; then
    f16=$q/tiny-code-llama.f16.gguf
    [ -r "$f16" ] || { echo "cannot read $f16" >&2; exit 1; }
    models=$f16
    for t in BF16 Q8_0; do
        "$anvil" quantize --quiet --no-quality "$f16" "$tmp/tiny-code-llama.$t.gguf" "$t" 2> "$tmp/err" || {
            cat "$tmp/err" >&2
            exit 1
        }
        models="$models $tmp/tiny-code-llama.$t.gguf"
    done
fi
rss_kib() { /usr/bin/time -f '%M' -o "$tmp/rss" "$@" > /dev/null 2>&1 && tail -n 1 "$tmp/rss"; }
echo "load before: $(uptime)"
echo
echo "| model | threads | llama.cpp t/s | anvil t/s | anvil / llama.cpp | peak RSS llama.cpp | peak RSS anvil | imatrix vs llama.cpp's |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
for m in $models; do
    for t in $threads; do
        IC_BENCH=$m IC_BENCH_TEXT=$text IC_BENCH_THREADS=$t IC_BENCH_CTX=$ctx IC_BENCH_CHUNKS=$chunks \
            IC_BENCH_REPS=$reps "$parity" --family imatrix_collect > "$tmp/out" 2>&1
        if ! grep -q '^imatrix_bench pass' "$tmp/out"; then
            echo "| $(basename "$m") | $t | failed: $(grep -m1 imatrix_bench "$tmp/out") | | | | | |"
            continue
        fi
        ok=$(sed -n 's/^imatrix_collect imx-bench: \([0-9]*\) tensors, max in_sum2 relative L2 \([^ ]*\).*/\1 tensors, L2 <= \2/p' "$tmp/out")
        ra=0
        rl=$(IC_BENCH=$m IC_BENCH_TEXT=$text IC_BENCH_THREADS=$t IC_BENCH_CTX=$ctx IC_BENCH_CHUNKS=$chunks \
            IC_BENCH_REPS=1 IC_BENCH_ONLY=llama rss_kib "$parity" --family imatrix_collect)
        [ "$m" = moe ] && rl=0
        [ "$m" = moe ] || ra=$(rss_kib "$anvil" imatrix "$m" "$text" "$tmp/im.gguf" --ctx "$ctx" --chunks "$chunks" --threads "$t")
        grep '^imatrix_bench pass' "$tmp/out" | awk -v name="$(basename "$m")" -v t="$t" -v rl="${rl:-0}" \
            -v ra="${ra:-0}" -v ok="$ok" '
            BEGIN { n = 0 }
            { for (i = 1; i <= NF; ++i) {
                  if ($i == "t/s" && ++k % 2 == 1) l[n] = $(i - 1)
                  else if ($i == "t/s") a[n] = $(i - 1)
                  if ($i == "ratio") r[n] = $(i + 1) + 0
              }
              ++n }
            function lo(v,   i, x) { x = v[0]; for (i = 1; i < n; ++i) if (v[i] < x) x = v[i]; return x }
            function hi(v,   i, x) { x = v[0]; for (i = 1; i < n; ++i) if (v[i] > x) x = v[i]; return x }
            function med(v,   i, j, s, x) {
                for (i = 0; i < n; ++i) s[i] = v[i]
                for (i = 1; i < n; ++i) for (j = i; j > 0 && s[j - 1] > s[j]; --j) { x = s[j]; s[j] = s[j - 1]; s[j - 1] = x }
                return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2
            }
            END {
                printf "| %s | %s | %.0f-%.0f | %.0f-%.0f | %.2fx (%.2f-%.2f) | %.0f MiB | %.0f MiB | %s |\n",
                    name, t, lo(l), hi(l), lo(a), hi(a), med(r), lo(r), hi(r), rl / 1024, ra / 1024, ok
            }'
    done
done
echo
echo "load after: $(uptime)"
echo "$ctx-token chunks x $chunks, $reps alternating passes (which side goes first alternates); t/s: the"
echo "collection alone (load apart); llama.cpp also computes the logits, as llama-imatrix does."
echo "Last column: tensors compared and the largest in_sum2 relative L2 (the family's bound, 1e-3, is"
echo "for F16 weights; quantized weights round activations differently)."
