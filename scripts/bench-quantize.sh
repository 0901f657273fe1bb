#!/bin/sh
# Wall time and peak RSS of `anvil quantize` against llama.cpp's
# llama_model_quantize (llama-quantize-oracle, libllama from the npm oracle)
# on the same model, the same thread count, checking the outputs are the
# same bytes. Runs alternate (anvil, llama, anvil, llama, ...) so a busy
# machine slows both alike; the table gives the median of the runs.
#
#   scripts/bench-quantize.sh [BUILD_DIR] [MODEL.gguf]
# Without MODEL, a ~250 MB F16 llama-shaped model (tc_synth_model bench) is
# written to $TMPDIR. TYPES, THREADS and RUNS may be set in the environment.
set -u
build=${1:-build}
model=${2:-}
types=${TYPES:-Q4_K_M Q6_K Q8_0 IQ4_XS IQ2_XXS}
threads=${THREADS:-1 2}
runs=${RUNS:-3}
anvil=$build/bin/anvil
llama=$build/bin/llama-quantize-oracle
[ -x "$anvil" ] && [ -x "$llama" ] || { echo "build $build first (anvil, llama-quantize-oracle)"; exit 1; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian package 'time')"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/anvil-bench-qz-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ -z "$model" ]; then
    model=$tmp/bench-f16.gguf
    "$build/bin/tc_synth_model" "$model" bench || exit 1
fi
"$llama" --write-imatrix "$model" "$tmp/bench.imatrix" || exit 1
echo "model: $model ($(stat -c %s "$model") bytes); $runs runs each, alternating; median wall s, max RSS MB"
printf '%-8s %3s  %9s %9s %7s   %9s %9s   %s\n' type thr anvil_s llama_s ratio anvil_MB llama_MB bytes
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for t in $types; do
    im=""
    case $t in IQ2_XXS|IQ2_XS|IQ1_S|IQ1_M|IQ2_S|IQ2_M|IQ3_XXS|IQ3_XS|Q2_K_S) im="--imatrix $tmp/bench.imatrix" ;; esac
    for n in $threads; do
        : > "$tmp/a.t"
        : > "$tmp/l.t"
        i=0
        while [ $i -lt "$runs" ]; do
            # shellcheck disable=SC2086
            /usr/bin/time -f '%e %M' -o "$tmp/time" "$anvil" quantize --quiet --no-quality $im "$model" "$tmp/a.gguf" "$t" "$n" || exit 1
            cat "$tmp/time" >> "$tmp/a.t"
            # shellcheck disable=SC2086
            /usr/bin/time -f '%e %M' -o "$tmp/time" "$llama" $im "$model" "$tmp/l.gguf" "$t" "$n" 2> /dev/null || exit 1
            cat "$tmp/time" >> "$tmp/l.t"
            i=$((i + 1))
        done
        same=identical
        cmp -s "$tmp/a.gguf" "$tmp/l.gguf" || same=DIFFER
        aw=$(cut -d' ' -f1 "$tmp/a.t" | median)
        lw=$(cut -d' ' -f1 "$tmp/l.t" | median)
        am=$(cut -d' ' -f2 "$tmp/a.t" | sort -n | tail -1)
        lm=$(cut -d' ' -f2 "$tmp/l.t" | sort -n | tail -1)
        printf '%-8s %3s  %9s %9s %7.2f   %9.1f %9.1f   %s\n' "$t" "$n" "$aw" "$lw" \
            "$(echo "$aw $lw" | awk '{ if ($2 > 0) print $1 / $2; else print 0 }')" "$(echo "$am" | awk '{print $1 / 1024}')" \
            "$(echo "$lm" | awk '{print $1 / 1024}')" "$same"
    done
done
