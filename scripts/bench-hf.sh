#!/usr/bin/env bash
# Wall time, peak RSS and peak disk of `anvil convert` against llama.cpp's
# convert_hf_to_gguf.py, and of `anvil quantize HF_DIR Q4_K_M` against
# convert_hf_to_gguf.py followed by llama_model_quantize
# (llama-quantize-oracle), on a generated >= 1 GB bf16 llama-shaped
# checkpoint; checks that the outputs are the same bytes. RUNS runs each.
# Peak disk is what the output file system loses while a command runs
# (sampled every 0.1 s; an O_TMPFILE output is in no folder listing), so
# run it on an otherwise quiet file system. Not part of make test.
#
#   LLAMA_SRC=/path/to/llama.cpp scripts/bench-hf.sh [BUILD_DIR]
# Needs /usr/bin/python3 with torch, numpy, sentencepiece (the hf-oracle
# tools), /usr/bin/time, ~3.5 GB free in $TMPDIR.
set -u
build=${1:-build}
runs=${RUNS:-2}
tools=$(cd "$(dirname "$0")/../../shared/tools/hf-oracle" && pwd) || exit 1
anvil=$build/bin/anvil
llama=$build/bin/llama-quantize-oracle
: "${LLAMA_SRC:?set LLAMA_SRC to the llama.cpp tree of the oracle (convert_hf_to_gguf.py)}"
export LLAMA_SRC
[ -x "$anvil" ] && [ -x "$llama" ] || { echo "build $build first (anvil, llama-quantize-oracle)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/anvil-bench-hf-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
in=$tmp/Bench-Llama-0.6B out=$tmp/out
/usr/bin/python3 "$tools/make_hf.py" "$in" --arch llama --hidden 2048 --inter 5632 --layers 12 --heads 16 --kv 4 \
    --tok "spm:$tools/sp1024.model" --dtype bf16 --shards 2 --seed 3 || exit 1
convert_py() { /usr/bin/python3 "$tools/convert_here.py" "$in" --outtype bf16 --outfile "$1"; }
# measure LABEL CMD...: "LABEL wall_s rss_MiB disk_MiB"
measure() {
    local label=$1; shift
    rm -rf "$out"; mkdir -p "$out"; sync
    local base; base=$(df -B1 --output=used "$tmp" | tail -1)
    echo 0 > "$tmp/peak"
    ( peak=0; while :; do used=$(df -B1 --output=used "$tmp" | tail -1); s=$((used - base))
      [ "$s" -gt "$peak" ] && peak=$s && echo "$peak" > "$tmp/peak"; sleep 0.1; done ) &
    local mon=$!
    /usr/bin/time -f "%e %M" -o "$tmp/t" "$@" > "$tmp/log" 2>&1 || { kill $mon; cat "$tmp/log"; exit 1; }
    kill $mon; wait $mon 2>/dev/null
    read -r wall rss < "$tmp/t"
    printf '%-30s %8.2f %9.1f %9.1f\n' "$label" "$wall" "$(echo "$rss/1024" | bc -l)" \
        "$(echo "$(cat "$tmp/peak")/1048576" | bc -l)"
}
convert_quantize() { convert_py "$out/p.gguf" && "$llama" "$out/p.gguf" "$out/q.gguf" Q4_K_M "$(nproc)"; }
export tools in out llama
export -f convert_py convert_quantize
echo "checkpoint: $(du -sb "$in" | cut -f1) bytes; $runs runs: wall s, peak RSS MiB, peak disk MiB"
for r in $(seq "$runs"); do
    echo "run $r"
    measure "anvil convert" "$anvil" convert "$in" "$out/a.gguf" --outtype bf16 --quiet
    measure "convert_hf_to_gguf.py" bash -c 'convert_py "$out/p.gguf"'
    measure "anvil quantize HF_DIR Q4_K_M" "$anvil" quantize --quiet "$in" "$out/q.gguf" Q4_K_M
    measure "convert.py + llama-quantize" bash -c convert_quantize
done
"$anvil" quantize --quiet "$in" "$out/anvil-q.gguf" Q4_K_M && cmp "$out/anvil-q.gguf" "$out/q.gguf" &&
    echo "anvil quantize HF_DIR: the same bytes as convert.py + llama-quantize"
