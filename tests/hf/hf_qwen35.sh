#!/usr/bin/env bash
# usage: hf_qwen35.sh [--pairs-only] ANVIL HF_COMPARE QWEN35_DATA ORACLE_TOOLS LLAMA_SRC [LLAMA_RUN ORACLE_DIR]
#
# `anvil convert` of Qwen3_5ForCausalLM and Qwen3_5MoeForCausalLM
# (host/src/hf/hf_qwen35.c) against llama.cpp's convert_hf_to_gguf.py,
# byte for byte:
# 1. the committed pairs of QWEN35_DATA (tests/hf/qwen35: see its README),
#    and llama.cpp runs each; with --pairs-only that is all (no Python:
#    the unit suite's check);
# 2. when /usr/bin/python3 has torch, numpy, tqdm and yaml: checkpoints made
#    by make_qwen35.py converted by both for --outtype f32 f16 bf16 q8_0
#    auto and --vocab-only: bf (BF16, value heads regrouped: 2 key heads, 4
#    value heads; A_log F32; one MTP layer), half (F16, tied, 3 shards,
#    equal head counts, no mtp_num_hidden_layers: the MTP layers counted
#    from the tensors; no layer_types; no mrope_section: the default
#    sections), wide (F32, 6 value heads on 2 key heads of other head
#    dims, two MTP layers, no head_dim, a 3-wide kernel, mrope_section
#    padded, partial_rotary_factor at the top level); the MoE classes: moe
#    (BF16, per-expert weights, A_log BF16) and moef (F16, the fused
#    gate_up_proj layout, 6 value heads, 2 shards, tied); block-scaled FP8
#    (make_fp8.py) of a dense and a per-expert MoE checkpoint (also with
#    --fp8-as-q8: the FP8 routers forced Q8_0 as the converter does); vl and vlm,
#    the published *ForConditionalGeneration layout (text_config,
#    model.language_model.*, vision tensors dropped); a split output;
#    llama.cpp runs the converted files it can load (one MTP layer, equal
#    key and value head dims); --mtp and --no-mtp on bf, half, wide, moe,
#    vlm, --no-mtp on one without any MTP layer, --mtp's default name;
#    hf16 and mf16: F16 checkpoints with an F16 A_log (-exp in float32
#    rounded to float16, as PyTorch 2's CPU kernel: Debian's torch 1.13
#    has no Half exp, so the converter runs through half_exp.py when it
#    fails without), dense with regrouped value heads and fused MoE, and
#    A_log values whose -exp overflows (-inf) or underflows (-0) in f16;
# 3. `anvil quantize HF_DIR` = convert --outtype auto + anvil quantize,
#    also with --mtp and --no-mtp, --mtp's default name and its refusals;
# 4. bad input: config keys missing or mistyped, value heads not a multiple
#    of key heads, a linear-attention or full-attention tensor missing, a
#    tensor of the wrong size for its head counts, no MTP layer, an expert
#    missing, an FP8 weight without its scale, an unknown pre-tokenizer:
#    exit 1, the file and key or tensor named, nothing written.
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
TOK=$DATA/bf16   # its tokenizer: Qwen3's vocabulary cut to 384 ids with Qwen3.5's pre-tokenizer
mk() { local name=$1; shift; $PY "$HERE/make_qwen35.py" "$G/$name" --tok "$TOK" --vocab 384 "$@" >/dev/null || fail "make_qwen35.py $name"; }
# convert_both DIR OPTS...: each option by both converters, compared
convert_both() {
    local d=$1; shift
    for o in "$@"; do
        (cd "$G" && FORCE_PRE=qwen35 $PY "$TOOLS/convert_here.py" $d $(args_of $o) --outfile "$G/$d.$o.py.gguf" > "$G/$d.$o.log" 2>&1) ||
            { fail "convert_hf_to_gguf.py $d $o: $(tail -2 "$G/$d.$o.log")"; continue; }
        "$ANVIL" convert "$G/$d" "$G/$d.$o.gguf" $(args_of $o) --quiet 2>"$T/err" || { fail "anvil convert $d $o: $(cat "$T/err")"; continue; }
        same "$G/$d.$o.gguf" "$G/$d.$o.py.gguf" "$d $o"
    done
}

# ---- 2. generated through the real converter
if $PY -c "import torch, numpy, tqdm, yaml" 2>/dev/null && [ -f "$LLAMA_SRC/convert_hf_to_gguf.py" ]; then
    export LLAMA_SRC
    mk bf --seed 1
    mk half --dtype f16 --tied --shards 3 --lk-heads 4 --lv-heads 4 --head-dim 64 --mtp-key 0 --unset layer_types \
        --set 'rope_parameters={"rope_type":"default","rope_theta":1000000,"partial_rotary_factor":1.0}' --seed 2
    mk wide --dtype f32 --lk-heads 2 --lv-heads 6 --lk-dim 8 --lv-dim 12 --mtp 2 --unset head_dim --kernel 3 \
        --layers 6 --interval 3 --set 'rope_parameters={"rope_type":"default","rope_theta":5000000,"mrope_section":[8,8]}' \
        --set partial_rotary_factor=0.5 --seed 3
    mk moe --moe --a-log-dtype same --seed 4
    mk moef --moe --fused --dtype f16 --experts 3 --lv-heads 6 --shards 2 --tied --seed 5
    for d in bf half wide moe moef; do convert_both $d f32 f16 bf16 q8_0 auto vocab; done
    # block-scaled FP8 (make_fp8.py: 2-D linear_attn, self_attn and mlp weights as F8_E4M3 with
    # *_scale_inv): the regrouped value heads read through the FP8 blocks; per-expert FP8 experts
    mk b8 --seed 7
    mk mb8 --moe --seed 8
    $PY "$HERE/make_fp8.py" "$G/b8" "$G/f8" && $PY "$HERE/make_fp8.py" "$G/mb8" "$G/m8" || fail "make_fp8.py"
    mv "$G/f8/fp8" "$G/fp8" && mv "$G/m8/fp8" "$G/moe8" && mv "$G/f8/noscale" "$G/bad-noscale" || fail "fp8 folders"
    for d in fp8 moe8; do convert_both $d bf16 q8_0 auto q8fp8-f16; done # --fp8-as-q8: moe8's FP8 routers Q8_0
    # the published layout (Qwen3_5(Moe)ForConditionalGeneration: text_config, model.language_model.*,
    # vision tensors the converter drops)
    mk vl --vlm --seed 9
    mk vlm --vlm --moe --fused --dtype f16 --seed 10
    for d in vl vlm; do convert_both $d f16 bf16 q8_0 auto vocab; done
    # --mtp (the MTP layers with the embeddings, output norm and head) and --no-mtp; half counts
    # its MTP layer from the tensors (mtp_num_hidden_layers 0); none: no MTP layer at all, which
    # --no-mtp converts (the converter's assert is for the MTP export only)
    convert_both bf mtp-f32 mtp-q8_0 mtp-vocab nomtp-bf16 nomtp-q8_0 nomtp-vocab
    convert_both half mtp-f16 nomtp-bf16
    convert_both wide mtp-auto nomtp-f16
    convert_both moe mtp-bf16 nomtp-q8_0
    convert_both vlm mtp-q8_0 nomtp-auto
    mk none --mtp 0 --mtp-key 0 --seed 11
    convert_both none nomtp-q8_0 nomtp-vocab
    mtp_default_name bf qwen35 --outtype auto
    # F16 A_log: -exp(A_log) in float32 rounded to float16 (ssm_a stays F32)
    mk hf16 --dtype f16 --a-log-dtype same --lk-heads 2 --lv-heads 6 --seed 12
    mk mf16 --moe --fused --dtype f16 --a-log-dtype same --experts 3 --seed 13
    convert_half qwen35 hf16 f32 q8_0 auto mtp-f16 nomtp-q8_0
    convert_half qwen35 mf16 auto
    run "$G/hf16.q8_0.gguf" "$G/hf16.q8_0.py.gguf"
    # F16 A_log values whose -exp leaves float16's range: 11.5 (-inf), 11.0 (-59872), -30 (-0)
    cp -r "$G/hf16" "$G/hfo" && $PY - "$G/hfo/model.safetensors" <<'PYEOF' || fail "hfo: A_log not patched"
import json, struct, sys
import numpy as np
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", b[:8])[0]
o = 8 + n + json.loads(b[8:8 + n])["model.layers.0.linear_attn.A_log"]["data_offsets"][0]
b[o:o + 6] = np.array([11.5, 11.0, -30.0], dtype="<f2").tobytes()
open(sys.argv[1], "wb").write(b)
PYEOF
    convert_half qwen35 hfo f32
    mtp_default_name vl qwen35 --vocab-only
    run "$G/bf.nomtp-q8_0.gguf" "$G/bf.nomtp-q8_0.py.gguf"
    run "$G/moe.nomtp-q8_0.gguf" "$G/moe.nomtp-q8_0.py.gguf"
    run "$G/vl.q8_0.gguf" "$G/vl.q8_0.py.gguf"
    run "$G/bf.auto.gguf" "$G/bf.auto.py.gguf"
    run "$G/half.q8_0.gguf" "$G/half.q8_0.py.gguf"
    run "$G/moe.auto.gguf" "$G/moe.auto.py.gguf"
    run "$G/moef.bf16.gguf" "$G/moef.bf16.py.gguf"
    # a split output: each part the converter's
    mkdir -p "$G/split.py" "$G/split.anvil"
    (cd "$G" && FORCE_PRE=qwen35 $PY "$TOOLS/convert_here.py" bf --outtype q8_0 --split-max-tensors 20 --outfile "$G/split.py/o.gguf" > "$G/split.log" 2>&1) ||
        fail "convert_hf_to_gguf.py bf split: $(tail -2 "$G/split.log")"
    "$ANVIL" convert "$G/bf" "$G/split.anvil/o.gguf" --outtype q8_0 --split-max-tensors 20 --quiet 2>"$T/err" || fail "anvil convert bf split: $(cat "$T/err")"
    [ "$(ls "$G/split.py")" = "$(ls "$G/split.anvil")" ] && [ -n "$(ls "$G/split.py")" ] || fail "split parts: $(ls "$G/split.anvil") vs $(ls "$G/split.py")"
    for f in "$G/split.py"/*.gguf; do same "$G/split.anvil/$(basename "$f")" "$f" "split $(basename "$f")"; done
else
    echo "generated cases skipped: /usr/bin/python3 lacks torch/numpy/tqdm/yaml or no $LLAMA_SRC/convert_hf_to_gguf.py"
    mk bf --seed 1
    mk moe --moe --a-log-dtype same --seed 4
    mk hf16 --dtype f16 --a-log-dtype same --lk-heads 2 --lv-heads 6 --seed 12
fi

# ---- 3. anvil quantize HF_DIR: the bytes of convert --outtype auto + anvil quantize
quantize_same "Q8_0 Q4_K_M" "$G/bf" "$G/moe" "$G/fp8" "$G/vl" "$DATA/f16" "$G/hf16"
quantize_same_with --mtp "Q8_0 Q4_K_M" "$G/bf" "$G/moe" "$G/hf16"
quantize_same_with --no-mtp "Q4_K_M" "$G/bf" "$G/moe"
quantize_same_with --no-nextn "Q8_0" "$G/hf16"
cp -r "$HERE/deepseek/bf16" "$G/ds-q" && quantize_mtp_checks "$G/hf16" "$G/ds-q"

# ---- 4. bad input
mk bad-conv --unset linear_conv_kernel_dim
bad conv "bad-conv/config.json" "linear_conv_kernel_dim"
mk bad-nk --set 'linear_num_key_heads="two"'
bad nk "bad-nk/config.json" "linear_num_key_heads"
mk bad-heads --lk-heads 2 --lv-heads 3
bad heads "bad-heads/config.json" "linear_num_value_heads 3" "linear_num_key_heads 2"
mk bad-alog --drop model.layers.0.linear_attn.A_log
bad alog "bad-alog" "model.layers.0.linear_attn.A_log" "linear attention"
mk bad-qnorm --drop model.layers.3.self_attn.q_norm.weight
bad qnorm "bad-qnorm" "model.layers.3.self_attn.q_norm.weight" "full attention"
mk bad-dv --set linear_value_head_dim=8
bad dv "bad-dv/model.safetensors" "model.layers.0.linear_attn.conv1d.weight" "rows"
mk bad-types --set 'layer_types=["linear_attention"]'
bad types "bad-types/config.json" "layer_types"
mk bad-mtp --mtp 0 --mtp-key 0
bad mtp "bad-mtp/config.json" "mtp_num_hidden_layers"
mk bad-interval --unset layer_types --set full_attention_interval=-1
bad interval "bad-interval/config.json" "full_attention_interval"
mk bad-expert --moe --drop model.layers.1.mlp.experts.2.up_proj.weight
bad expert "bad-expert" "model.layers.1.mlp.experts.2.up_proj.weight" "missing"
mk bad-nexp --moe --unset num_experts
bad nexp "bad-nexp/config.json" "num_experts"
if [ -d "$G/bad-noscale" ]; then
    bad noscale "bad-noscale" "model.layers.1.mlp.up_proj.weight" "weight_scale_inv"
fi
mk bad-pre
edit "$G/bad-pre/tokenizer.json" "j['pre_tokenizer']['pretokenizers'][0]['pattern']['Regex'] = '\\\\p{N}{1,4}'"
bad pre "bad-pre/tokenizer.json" "pre-tokenizer"

hf_summary
