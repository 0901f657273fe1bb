#!/bin/sh
# The quality table: KL divergence from the F16 model, top-1 agreement and
# perplexity (anvil-kld: llama.cpp's own logits, as llama-perplexity
# --kl-divergence scores them) of `anvil quantize --imatrix` presets of the
# trained test model, plus any GGUF files given (say, --target-size outputs
# of the same model). Prints a Markdown table, one row a file.
#
#   scripts/bench-quality.sh [BUILD_DIR] [FILE.gguf ...]
#
# Environment: PRESETS (default the twelve below; "" for none), CHUNKS
# (default all the text holds), THREADS (1), OUTDIR (keep the preset files
# there as PRESET.gguf; default a temp folder removed at exit), MODEL,
# IMATRIX, TEXT (default the files of ../shared/testdata/quality).
set -u
build=${1:-build}
[ $# -gt 0 ] && shift
q=${QUALITY_DATA:-../shared/testdata/quality}
model=${MODEL:-$q/tiny-code-llama.f16.gguf}
imatrix=${IMATRIX:-$q/tiny-code-llama.imatrix.gguf}
text=${TEXT:-$q/heldout.txt}
presets=${PRESETS-Q2_K Q3_K_S Q3_K_M Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K IQ2_XS IQ3_XXS IQ3_M IQ4_XS}
threads=${THREADS:-1}
anvil=$build/bin/anvil
kld=$build/bin/anvil-kld
[ -x "$anvil" ] && [ -x "$kld" ] || { echo "build $build first (targets runtime, anvil-kld)" >&2; exit 1; }
for f in "$model" "$imatrix" "$text"; do
    [ -r "$f" ] || { echo "cannot read $f (set MODEL, IMATRIX, TEXT)" >&2; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/anvil-bench-quality-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
out=${OUTDIR:-$tmp}
mkdir -p "$out" || exit 1
files=""
for p in $presets; do
    "$anvil" quantize --quiet --no-quality --imatrix "$imatrix" "$model" "$out/$p.gguf" "$p" "$threads" 2> "$tmp/err" || {
        cat "$tmp/err" >&2
        exit 1
    }
    files="$files $out/$p.gguf"
done
chunks=""
[ -n "${CHUNKS:-}" ] && chunks="--chunks $CHUNKS"
# (not exec: the trap removes the preset files)
# shellcheck disable=SC2086
"$kld" --require-oracle --quiet --markdown --threads "$threads" --text "$text" $chunks "$model" $files "$@"
