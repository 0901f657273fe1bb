#!/bin/sh
# The PTQTP quality table (issue 29): the trained test model with every
# matrix weight in one format (transcode's conservative policy; iq2_s and
# iq3_xxs, which need an importance matrix, through `anvil quantize --pure
# --imatrix`, the same all-matrices policy; the matrix has no entries for
# output.weight and token_embd.weight, so iq2_s's file keeps those two in
# q2_K, which needs none; iq2_s is llama.cpp's IQ2_M preset's type, IQ2_S's
# is iq2_xs), then KL divergence from the F16
# model and top-1 agreement by anvil-kld (llama.cpp's own logits). llama.cpp
# cannot run PTQTP, so a PTQTP file is measured through an F16 copy of its
# decoded weights (`transcode --dtype f16`); q3_K is measured both natively
# and through such a copy, so the two paths can be compared. Prints two
# Markdown tables: per format (bpw, file bytes, KLD, top-1, SNR) and SNR per
# tensor.
#
#   scripts/bench-ptqtp.sh [BUILD_DIR]
#
# Environment: FORMATS (default below), PARAMS (the model's parameter count,
# for file bpw; default the test model's 4196608), CHUNKS (default all the text holds),
# THREADS (1), OUTDIR (keep the files there; default a temp folder removed
# at exit), MODEL, IMATRIX, TEXT (default ../shared/testdata/quality's).
set -u
build=${1:-build}
q=${QUALITY_DATA:-../shared/testdata/quality}
model=${MODEL:-$q/tiny-code-llama.f16.gguf}
imatrix=${IMATRIX:-$q/tiny-code-llama.imatrix.gguf}
text=${TEXT:-$q/heldout.txt}
formats=${FORMATS:-q2_K iq2_s iq3_xxs q3_K ptqtp2 ptqtp2s ptqtp3 ptqtp3s}
threads=${THREADS:-1}
anvil=$build/bin/anvil
kld=$build/bin/anvil-kld
[ -x "$anvil" ] && [ -x "$kld" ] || { echo "build $build first (targets runtime, anvil-kld)" >&2; exit 1; }
for f in "$model" "$imatrix" "$text"; do
    [ -r "$f" ] || { echo "cannot read $f (set MODEL, IMATRIX, TEXT)" >&2; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/anvil-bench-ptqtp-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
out=${OUTDIR:-$tmp}
mkdir -p "$out" || exit 1

fail() { cat "$tmp/err" >&2; exit 1; }

# 1. every format: the file, its report (SNR), the file llama.cpp evaluates
evals=""
for t in $formats; do
    case $t in
        iq2_s) "$anvil" quantize --pure --imatrix "$imatrix" --output-tensor-type q2_K --token-embedding-type q2_K \
                   "$model" "$out/$t.gguf" IQ2_M "$threads" \
                   > "$out/$t.report" 2> "$tmp/err" || fail ;;
        iq3_xxs) "$anvil" quantize --pure --imatrix "$imatrix" "$model" "$out/$t.gguf" IQ3_XXS "$threads" \
                   > "$out/$t.report" 2> "$tmp/err" || fail ;;
        *) "$anvil" transcode --from "$model" --out "$out/$t.gguf" --dtype "$t" --threads "$threads" \
                   > "$out/$t.report" 2> "$tmp/err" || fail ;;
    esac
    case $t in
        ptqtp*|q3_K)
            "$anvil" transcode --from "$out/$t.gguf" --out "$out/$t.f16copy.gguf" --dtype f16 --quiet \
                --threads "$threads" 2> "$tmp/err" || fail
            evals="$evals $out/$t.f16copy.gguf" ;;
    esac
    case $t in ptqtp*) ;; *) evals="$evals $out/$t.gguf" ;; esac
done

# 2. KL divergence of every evaluated file
chunks=""
[ -n "${CHUNKS:-}" ] && chunks="--chunks $CHUNKS"
# shellcheck disable=SC2086
"$kld" --require-oracle --quiet --markdown --threads "$threads" --text "$text" $chunks "$model" $evals \
    > "$out/kld.md" 2> "$tmp/err" || fail

# 3. the tables. SNR: the report's summary line for the format (quantize
# reports one line a type; iq2_s/iq3_xxs files hold their own fallbacks).
params=${PARAMS:-4196608} # the default model's parameter count (its README)
echo "| format | evaluated as | file bytes | file bpw | mean KLD | top-1 | SNR dB (all matrices) |"
echo "|---|---|---|---|---|---|---|"
for t in $formats; do
    bytes=$(wc -c < "$out/$t.gguf")
    snr=$(awk -v t="$t" 'tolower($1) == tolower(t) && NF >= 6 { v = $NF } END { print v }' "$out/$t.report")
    for kind in native f16copy; do
        name=$t
        [ $kind = f16copy ] && name=$t.f16copy
        row=$(awk -F'|' -v n="$name" '{ g = $2; gsub(/ /, "", g) } g == n { print $5 "|" $6 }' "$out/kld.md")
        [ -n "$row" ] || continue
        kl=$(echo "$row" | cut -d'|' -f1 | awk '{ print $1 }')
        top=$(echo "$row" | cut -d'|' -f2 | tr -d ' ')
        how="llama.cpp, $t"
        [ $kind = f16copy ] && how="llama.cpp, F16 copy"
        awk -v t="$t" -v how="$how" -v b="$bytes" -v p="$params" -v k="$kl" -v top="$top" -v s="$snr" \
            'BEGIN { printf "| %s | %s | %d | %.3f | %s | %s | %s |\n", t, how, b, b * 8 / p, k, top, s }'
    done
done
echo
printf "| tensor |"
for t in $formats; do printf " %s |" "$t"; done
echo
printf "|---|"
for t in $formats; do printf -- "---|"; done
echo
first=$(echo "$formats" | awk '{ print $1 }')
for name in $(awk '$1 ~ /\.weight$/ && NF >= 7 { print $1 }' "$out/$first.report"); do
    printf "| %s |" "$name"
    for t in $formats; do
        printf " %s |" "$(awk -v n="$name" '$1 == n && NF >= 7 { v = $NF } END { print v }' "$out/$t.report")"
    done
    echo
done
