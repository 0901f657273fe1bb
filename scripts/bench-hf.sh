#!/usr/bin/env bash
# Wall time, peak RSS and peak disk of `anvil convert` against llama.cpp's
# convert_hf_to_gguf.py, and of `anvil quantize HF_DIR Q4_K_M` against
# convert_hf_to_gguf.py followed by llama_model_quantize
# (llama-quantize-oracle), on a generated checkpoint (CKPT):
#   llama      >= 1 GB bf16 llama-shaped (make_hf.py), --outtype bf16
#   qwen3moe   2.4 GB bf16 Qwen3-MoE, 64 experts a layer (tests/hf/make_moe.py)
#   dsv3-fp8   2.2 GB DeepSeek-V3, experts and attention block-scaled FP8
#              (128x128 blocks, tests/hf/make_deepseek.py --fp8 128)
# (the MoE ones with --outtype auto); checks that the outputs are the same
# bytes. RUNS runs each.
# Peak disk is what the output file system loses while a command runs
# (sampled every 0.1 s; an O_TMPFILE output is in no folder listing), so
# run it on an otherwise quiet file system. Not part of make test.
#
#   LLAMA_SRC=/path/to/llama.cpp scripts/bench-hf.sh [BUILD_DIR]
# Needs /usr/bin/python3 with torch, numpy, sentencepiece (the hf-oracle
# tools), /usr/bin/time, ~3.5 GB free in $TMPDIR (~10 GB for the MoE ones).
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
hf=$(cd "$(dirname "$0")/../tests/hf" && pwd)
out=$tmp/out outtype=auto
case ${CKPT:-llama} in
llama)
    in=$tmp/Bench-Llama-0.6B outtype=bf16
    /usr/bin/python3 "$tools/make_hf.py" "$in" --arch llama --hidden 2048 --inter 5632 --layers 12 --heads 16 \
        --kv 4 --tok "spm:$tools/sp1024.model" --dtype bf16 --shards 2 --seed 3 || exit 1 ;;
qwen3moe)
    in=$tmp/Bench-Qwen3Moe-1.2B
    /usr/bin/python3 "$hf/make_moe.py" "$in" --arch qwen3moe --hidden 1024 --layers 8 --heads 8 --kv 2 \
        --head-dim 128 --experts 64 --used 8 --moe-inter 768 --tok "tok:$hf/moe/qwen2moe" --dtype bf16 \
        --shards 4 --seed 3 || exit 1
    export FORCE_PRE=qwen2 ;; # the tokenizer cut to 346 ids: named as tests/hf does
dsv3-fp8)
    in=$tmp/Bench-DeepseekV3-2.2B
    /usr/bin/python3 "$hf/make_deepseek.py" "$in" --tok "$hf/deepseek/bf16" --vocab 0 --hidden 1024 --layers 8 \
        --dense 1 --heads 8 --q-lora 384 --kv-lora 256 --nope 64 --rope 64 --v-head 64 --experts 128 --used 8 \
        --shared 1 --moe-inter 768 --inter 2048 --fp8 128 --shards 4 --seed 3 || exit 1
    export FORCE_PRE=deepseek-v3 ;; # the tokenizer cut to 320 ids: named as its class, as tests/hf does
*) echo "CKPT: llama, qwen3moe or dsv3-fp8" >&2; exit 2 ;;
esac
export outtype
convert_py() { /usr/bin/python3 "$tools/convert_here.py" "$in" --outtype "$outtype" --outfile "$1"; }
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
    measure "anvil convert" "$anvil" convert "$in" "$out/a.gguf" --outtype "$outtype" --quiet
    measure "convert_hf_to_gguf.py" bash -c 'convert_py "$out/p.gguf"'
    measure "anvil quantize HF_DIR Q4_K_M" "$anvil" quantize --quiet "$in" "$out/q.gguf" Q4_K_M
    measure "convert.py + llama-quantize" bash -c convert_quantize
done
"$anvil" convert "$in" "$out/anvil-c.gguf" --outtype "$outtype" --quiet && cmp "$out/anvil-c.gguf" "$out/p.gguf" &&
    echo "anvil convert: the same bytes as convert_hf_to_gguf.py"
rm -f "$out/anvil-c.gguf"
"$anvil" quantize --quiet "$in" "$out/anvil-q.gguf" Q4_K_M && cmp "$out/anvil-q.gguf" "$out/q.gguf" &&
    echo "anvil quantize HF_DIR: the same bytes as convert.py + llama-quantize"
