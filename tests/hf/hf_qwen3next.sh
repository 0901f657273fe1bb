#!/usr/bin/env bash
# usage: hf_qwen3next.sh [--pairs-only] ANVIL HF_COMPARE DATA ORACLE_TOOLS LLAMA_SRC [LLAMA_RUN ORACLE_DIR]
#
# `anvil convert` of Qwen3NextForCausalLM (host/src/hf/hf_qwen35.c, the
# Qwen3.5 path less the V-head reordering and the default rope sections,
# plus the split of the fused in_proj_qkvz) against llama.cpp's
# convert_hf_to_gguf.py, byte for byte:
# 1. the committed pairs of DATA (tests/hf/qwen3next: see its README), and
#    llama.cpp runs each; with --pairs-only that is all (no Python: the
#    unit suite's check);
# 2. when /usr/bin/python3 has torch, numpy, tqdm and yaml: checkpoints made
#    by make_qwen35.py --next converted by both for --outtype f32 f16 bf16
#    q8_0 auto and --vocab-only: bf (BF16, A_log too, 2 key / 4 value heads, an MTP
#    layer, no layer_types: full_attention_interval), half (F16, tied, 3
#    shards, layer_types given, equal head counts), wide (F32, 6 value heads on 2 key heads
#    of other dims, two MTP layers, a 3-wide kernel); fused (the fused
#    experts layout), fp8 (block-scaled FP8); --mtp and --no-mtp;
#    hf16 (F16 with an F16 A_log, 4 value heads on 2 key heads: hf_lib.sh's
#    convert_half); llama.cpp runs what it can load;
# 3. `anvil quantize HF_DIR` = convert --outtype auto + anvil quantize,
#    also with --mtp and --no-mtp;
# 4. bad input: a config key missing or mistyped, in_proj_qkvz of the wrong
#    size for the head counts, a linear-attention tensor missing, a dense
#    layer (mlp_only_layers: the converter's map has no dense FFN for
#    qwen3next either), an expert missing, no MTP
#    layer (refused as the converter's assert; --no-mtp converts it): exit
#    1, the file and key or tensor named, nothing written.
set -u
PAIRS_ONLY=0
[ "${1:-}" = --pairs-only ] && { PAIRS_ONLY=1; shift; }
ANVIL=$1 CMP=$2 DATA=$3 TOOLS=$4 LLAMA_SRC=${5:-} LLAMA_RUN=${6:-} ORACLE_DIR=${7:-}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/hf_lib.sh"

# ---- 1. committed pairs
hf_pairs
[ $PAIRS_ONLY = 1 ] && hf_summary "committed pairs"

TOOLS=$(cd "$TOOLS" && pwd)
hf_python numpy
G=$T/gen; mkdir -p "$G"
TOK=$DATA/bf16 # its tokenizer: Qwen3's vocabulary cut to 384 ids (qwen2 pre-tokenizer)
mk() { local name=$1; shift; $PY "$HERE/make_qwen35.py" "$G/$name" --next --tok "$TOK" --vocab 384 --hidden 32 --heads 2 --kv-heads 1 \
    --moe-inter 16 --shared-inter 16 "$@" >/dev/null || fail "make_qwen35.py --next $name"; }
convert_both() {
    local d=$1; shift
    for o in "$@"; do
        (cd "$G" && FORCE_PRE=qwen2 $PY "$TOOLS/convert_here.py" $d $(args_of $o) --outfile "$G/$d.$o.py.gguf" > "$G/$d.$o.log" 2>&1) ||
            { fail "convert_hf_to_gguf.py $d $o: $(tail -2 "$G/$d.$o.log")"; continue; }
        "$ANVIL" convert "$G/$d" "$G/$d.$o.gguf" $(args_of $o) --quiet 2>"$T/err" || { fail "anvil convert $d $o: $(cat "$T/err")"; continue; }
        same "$G/$d.$o.gguf" "$G/$d.$o.py.gguf" "$d $o"
    done
}

# ---- 2. generated through the real converter
if $PY -c "import torch, numpy, tqdm, yaml" 2>/dev/null && [ -f "$LLAMA_SRC/convert_hf_to_gguf.py" ]; then
    export LLAMA_SRC
    mk bf --lk-dim 8 --lv-dim 8 --a-log-dtype same --seed 1
    mk half --dtype f16 --tied --shards 3 --lk-heads 2 --lv-heads 2 --lk-dim 8 --lv-dim 8 --layer-types --seed 2
    mk wide --dtype f32 --lk-heads 2 --lv-heads 6 --lk-dim 8 --lv-dim 12 --mtp 2 --kernel 3 --layers 6 --interval 3 --seed 3
    for d in bf half wide; do convert_both $d f32 f16 bf16 q8_0 auto vocab; done
    convert_both bf mtp-q8_0 mtp-vocab nomtp-bf16 nomtp-q8_0
    convert_both wide mtp-f16 nomtp-auto
    mtp_default_name bf qwen2 --outtype bf16
    run "$G/bf.auto.gguf" "$G/bf.auto.py.gguf"
    run "$G/half.q8_0.gguf" "$G/half.q8_0.py.gguf"
    run "$G/bf.nomtp-q8_0.gguf" "$G/bf.nomtp-q8_0.py.gguf"
    # the fused experts layout (mlp.experts.gate_up_proj / down_proj) and block-scaled FP8
    # (make_fp8.py: in_proj_qkvz gathered through its FP8 blocks)
    mk fused --fused --experts 3 --shards 2 --seed 5
    mk b8 --lk-dim 8 --lv-dim 8 --seed 7
    $PY "$HERE/make_fp8.py" "$G/b8" "$G/f8" >/dev/null && mv "$G/f8/fp8" "$G/fp8" || fail "make_fp8.py"
    convert_both fused bf16 q8_0 auto
    convert_both fp8 bf16 q8_0 auto
    run "$G/fused.auto.gguf" "$G/fused.auto.py.gguf"
    run "$G/fp8.q8_0.gguf" "$G/fp8.q8_0.py.gguf"
    # no MTP layer: the converter's assert, refused; --no-mtp converts it
    mk nomtp --mtp 0 --lk-dim 8 --lv-dim 8 --seed 4
    convert_both nomtp nomtp-f16
    # F16 A_log: -exp(A_log) in float32 rounded to float16 (ssm_a stays F32)
    mk hf16 --dtype f16 --a-log-dtype same --lk-heads 2 --lv-heads 4 --lk-dim 8 --lv-dim 8 --seed 8
    convert_half qwen2 hf16 f32 bf16 q8_0 auto mtp-f16 nomtp-q8_0
    run "$G/hf16.q8_0.gguf" "$G/hf16.q8_0.py.gguf"
else
    echo "generated cases skipped: /usr/bin/python3 lacks torch/numpy/tqdm/yaml or no $LLAMA_SRC/convert_hf_to_gguf.py"
    mk bf --lk-dim 8 --lv-dim 8 --seed 1
fi

# ---- 3. anvil quantize HF_DIR: the bytes of convert --outtype auto + anvil quantize
quantize_same "Q8_0 Q4_K_M" "$G/bf" "$DATA/bf16" "$G/hf16"
quantize_same_with --mtp "Q8_0" "$G/bf" "$G/hf16"
quantize_same_with --no-mtp "Q4_K_M" "$G/bf"

# ---- 4. bad input
mk bad-conv --unset linear_conv_kernel_dim
bad conv "bad-conv/config.json" "linear_conv_kernel_dim"
mk bad-nv --set 'linear_num_value_heads="four"'
bad nv "bad-nv/config.json" "linear_num_value_heads"
mk bad-qkvz --lk-dim 8 --lv-dim 8
edit "$G/bad-qkvz/config.json" "j['linear_value_head_dim'] = 4"
bad qkvz "bad-qkvz/model.safetensors" "model.layers.0.linear_attn.in_proj_qkvz.weight" "rows"
mk bad-ba --drop model.layers.1.linear_attn.in_proj_ba.weight
bad ba "bad-ba" "model.layers.1.linear_attn.in_proj_ba.weight" "linear attention"
mk bad-expert --drop model.layers.2.mlp.experts.1.down_proj.weight
bad expert "bad-expert" "model.layers.2.mlp.experts.1.down_proj.weight" "missing"
mk bad-dense --dense-layers 1
bad dense "bad-dense/model.safetensors" "model.layers.1.mlp." "cannot map"
mk bad-mtp --mtp 0
bad mtp "bad-mtp/config.json" "mtp_num_hidden_layers" "--no-mtp"

hf_summary
