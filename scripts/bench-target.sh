#!/bin/sh
# Issue 40's goal table: at the size of each llama.cpp preset, is
# `anvil quantize --target-size` better than the preset? For each preset:
# the preset quantized with the imatrix (`anvil quantize --imatrix`, byte for
# byte llama-quantize's file), its size in bytes, then `anvil quantize
# --imatrix IMATRIX --target-size BYTES [extra args]` (checked no larger),
# and the KL divergence of both from the F16 model by anvil-kld (llama.cpp's
# own logits, as llama-perplexity --kl-divergence: chunks of 256 tokens, BOS
# first, second halves scored). Prints a Markdown table (preset, bytes
# preset/anvil, KLD preset/anvil, ratio anvil/preset), the mean ratio and the
# count of ratios >= 1 (goal: 0; mean <= 0.6).
#
#   scripts/bench-target.sh MODEL.f16.gguf IMATRIX HELDOUT.txt [extra quantize args ...]
#   e.g. ... --sensitivity MODEL.sens     or     ... --calibrate CALIB.txt
#
# Environment: ANVIL (the anvil binary, default build/bin/anvil), KLD (anvil-kld,
# default: next to ANVIL, else /work/main/build/bin/anvil-kld), THREADS (1),
# CHUNKS (24), PRESETS (default the ten below), OUTDIR (keep the files and
# the quantize logs there; default a temp folder removed at exit).
# Exit 1 on any failure (a target file larger than its preset included).
set -u
[ $# -ge 3 ] || { sed -n '2,/^$/s/^# \{0,1\}//p' "$0" >&2; exit 2; }
model=$1 imatrix=$2 text=$3
shift 3
anvil=${ANVIL:-build/bin/anvil}
kld=${KLD:-$(dirname "$anvil")/anvil-kld}
[ -x "$kld" ] || kld=/work/main/build/bin/anvil-kld
threads=${THREADS:-1}
chunks=${CHUNKS:-24}
presets=${PRESETS-Q2_K Q3_K_S Q3_K_M Q4_K_S Q4_K_M Q5_K_M Q6_K IQ2_XS IQ3_XXS IQ4_XS}
[ -x "$anvil" ] || { echo "no anvil binary at $anvil (set ANVIL)" >&2; exit 1; }
[ -x "$kld" ] || { echo "no anvil-kld at $kld (set KLD; target anvil-kld)" >&2; exit 1; }
for f in "$model" "$imatrix" "$text"; do
    [ -r "$f" ] || { echo "cannot read $f" >&2; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/anvil-bench-target-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
out=${OUTDIR:-$tmp}
mkdir -p "$out" || exit 1
size() { wc -c < "$1" | tr -d ' '; }

files="" tq=0 tt=0
for p in $presets; do
    t0=$(date +%s)
    "$anvil" quantize --quiet --no-quality --imatrix "$imatrix" "$model" "$out/$p.gguf" "$p" "$threads" \
        2> "$out/$p.log" || { cat "$out/$p.log" >&2; exit 1; }
    t1=$(date +%s)
    bytes=$(size "$out/$p.gguf")
    "$anvil" quantize --no-quality --imatrix "$imatrix" "$@" "$model" "$out/$p.t.gguf" \
        --target-size "$bytes" "$threads" > "$out/$p.t.log" 2>&1 || { cat "$out/$p.t.log" >&2; exit 1; }
    t2=$(date +%s)
    tq=$((tq + t1 - t0)) tt=$((tt + t2 - t1))
    tbytes=$(size "$out/$p.t.gguf")
    [ "$tbytes" -le "$bytes" ] || { echo "$p: --target-size $bytes wrote $tbytes bytes" >&2; exit 1; }
    files="$files $out/$p.gguf $out/$p.t.gguf"
done
# shellcheck disable=SC2086
"$kld" --require-oracle --quiet --markdown --threads "$threads" --ctx 256 --chunks "$chunks" \
    --text "$text" "$model" $files > "$out/kld.md" || { cat "$out/kld.md" >&2; exit 1; }
echo "model $model, imatrix $imatrix, text $text ($chunks chunks of 256)"
echo "anvil $anvil${*:+, extra: $*}"
echo
echo "| preset | bytes preset | bytes anvil | KLD preset | KLD anvil | ratio | top-1 preset | top-1 anvil |"
echo "|---|---|---|---|---|---|---|---|"
awk -F'|' -v presets="$presets" -v tq="$tq" -v tt="$tt" '
function trim(s) { gsub(/^ +| +$/, "", s); return s }
{ n = trim($2); if (n == "" || n == "model") next
  split(trim($5), k, " "); kld[n] = k[1]; bytes[n] = trim($3); top[n] = trim($6) }
END {
  np = split(presets, ps, " "); sum = 0; bad = 0; cnt = 0
  for (i = 1; i <= np; i++) {
    p = ps[i]; a = p ".t"
    if (!(p in kld) || !(a in kld)) { printf("missing KLD for %s\n", p) > "/dev/stderr"; exit 1 }
    r = kld[p] > 0 ? kld[a] / kld[p] : 0
    sum += r; cnt++; if (r >= 1) bad++
    printf("| %s | %s | %s | %.6f | %.6f | %s%.3f%s | %s | %s |\n", p, bytes[p], bytes[a], kld[p], kld[a],
           r >= 1 ? "**" : "", r, r >= 1 ? "**" : "", top[p], top[a])
  }
  printf("\nmean ratio %.3f over %d presets; ratios >= 1: %d\n", sum / cnt, cnt, bad)
  printf("quantize wall time: presets %d s, --target-size %d s\n", tq, tt)
}' "$out/kld.md" || exit 1
