#!/usr/bin/env bash
# usage: hf_glm4moe.sh [--pairs-only] ANVIL HF_COMPARE GLM_DATA ORACLE_TOOLS LLAMA_SRC [LLAMA_RUN ORACLE_DIR]
#
# `anvil convert` of Glm4MoeForCausalLM (host/src/hf/hf_glm4moe.c)
# against llama.cpp's convert_hf_to_gguf.py, byte for byte:
# 1. the committed pairs of GLM_DATA (tests/hf/glm4moe: a BF16 checkpoint
#    with q/k norms and an MTP layer, an F16 one with tied embeddings, no
#    dense layer and two shared experts, each with what the real converter
#    wrote, bf16 also with --mtp and --no-mtp), and llama.cpp runs each;
#    --mtp/--no-mtp/--no-nextn refused for a DeepSeek-V3 checkpoint, both
#    together a usage error, --no-nextn the same as --no-mtp; with
#    --pairs-only that is all (no Python: the unit suite's check);
# 2. when /usr/bin/python3 has torch, numpy, tqdm and yaml: checkpoints made
#    by make_glm4moe.py converted by both for --outtype f32 f16 bf16 q8_0
#    auto and --vocab-only: bf16 (q/k norm, MTP), f16 (tied, 3 shards, no
#    dense layer, scoring_func softmax: sigmoid written in its place), f32
#    (no MTP key, partial_rotary_factor 0.25 in rope_parameters,
#    norm_topk_prob false, no head_dim), f8 (block-scaled FP8, 48x48
#    blocks over 64/32/96/128-wide weights: partial edge blocks; the MTP
#    layer's weights FP8 too); a split output;
#    llama.cpp runs the converted files; --mtp and --no-mtp (bf: with
#    its MTP layer, half and wide: none), --mtp's default name
#    (mtp-<Name>-<TYPE>.gguf), both refused for DeepseekV3ForCausalLM;
#    --fp8-as-q8 for f8 (f16, auto, with --mtp at bf16, with --no-mtp at
#    q8_0);
# 3. `anvil quantize HF_DIR` = convert --outtype auto + anvil quantize,
#    also with --mtp and --no-mtp (= convert --mtp/--no-mtp + quantize),
#    --mtp's default name, and its refusals (exit 2 for --mtp with
#    --no-mtp or a GGUF IN, exit 1 for DeepseekV3ForCausalLM); `anvil
#    transcode --from HF_DIR` with --mtp and --no-mtp (= convert
#    --mtp/--no-mtp + transcode) and the same refusals; quantize f8 with
#    --fp8-as-q8;
# 4. bad input: config keys missing or mistyped, an expert missing or
#    present twice, a GLM special token missing, an unknown pre-tokenizer:
#    exit 1, the file and key or tensor named, nothing written.
set -u
PAIRS_ONLY=0
[ "${1:-}" = --pairs-only ] && { PAIRS_ONLY=1; shift; }
ANVIL=$1 CMP=$2 DATA=$3 TOOLS=$4 LLAMA_SRC=${5:-} LLAMA_RUN=${6:-} ORACLE_DIR=${7:-}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/hf_lib.sh"

# ---- 1. committed pairs
hf_pairs
# --mtp / --no-mtp on a class without MTP export (DeepseekV3ForCausalLM): refused
mtp_refused "$HERE/deepseek/bf16"
"$ANVIL" convert "$DATA/bf16" "$T/x.gguf" --mtp --no-mtp >/dev/null 2>"$T/err"
[ $? = 2 ] && grep -q "mutually exclusive" "$T/err" && [ ! -e "$T/x.gguf" ] && pass || fail "--mtp --no-mtp: $(cat "$T/err")"
"$ANVIL" convert "$DATA/bf16" "$T/nn.gguf" --no-nextn --outtype q8_0 --quiet 2>"$T/err" &&
    same "$T/nn.gguf" "$DATA/bf16.nomtp-q8_0.gguf" "--no-nextn as --no-mtp" || fail "--no-nextn: $(cat "$T/err")"
[ $PAIRS_ONLY = 1 ] && hf_summary "committed pairs"

TOOLS=$(cd "$TOOLS" && pwd)
hf_python numpy
G=$T/gen; mkdir -p "$G"
TOK=$DATA/bf16   # its tokenizer: Llama 3's vocabulary cut to 384 ids with GLM's added tokens
mk() { local name=$1; shift; $PY "$HERE/make_glm4moe.py" "$G/$name" --tok "$TOK" --vocab 384 "$@" >/dev/null || fail "make_glm4moe.py $name"; }
# convert_both DIR OPTS...: each option by both converters, compared
convert_both() {
    local d=$1; shift
    for o in "$@"; do
        (cd "$G" && FORCE_PRE=glm4 $PY "$TOOLS/convert_here.py" $d $(args_of $o) --outfile "$G/$d.$o.py.gguf" > "$G/$d.$o.log" 2>&1) ||
            { fail "convert_hf_to_gguf.py $d $o: $(tail -2 "$G/$d.$o.log")"; continue; }
        "$ANVIL" convert "$G/$d" "$G/$d.$o.gguf" $(args_of $o) --quiet 2>"$T/err" || { fail "anvil convert $d $o: $(cat "$T/err")"; continue; }
        same "$G/$d.$o.gguf" "$G/$d.$o.py.gguf" "$d $o"
    done
}

# ---- 2. generated through the real converter
if $PY -c "import torch, numpy, tqdm, yaml" 2>/dev/null && [ -f "$LLAMA_SRC/convert_hf_to_gguf.py" ]; then
    export LLAMA_SRC
    mk bf --qk-norm --mtp --seed 1
    mk half --dtype f16 --tied --shards 3 --layers 3 --dense 0 --unset first_k_dense_replace \
        --set 'scoring_func="softmax"' --seed 2
    mk wide --dtype f32 --experts 8 --used 3 --shared 2 --unset num_nextn_predict_layers --unset head_dim \
        --unset partial_rotary_factor --set 'rope_parameters={"rope_type":"default","rope_theta":10000,"partial_rotary_factor":0.25}' \
        --unset rope_theta --unset rope_scaling --set 'norm_topk_prob=false' --seed 3
    mk f8 --qk-norm --mtp --fp8 48 --seed 4
    for d in bf half wide f8; do convert_both $d f32 f16 bf16 q8_0 auto vocab; done
    # --mtp (the MTP layer, embeddings, output norm and head) and --no-mtp
    convert_both bf mtp-f32 mtp-q8_0 mtp-auto mtp-vocab nomtp-f16 nomtp-bf16 nomtp-q8_0 nomtp-vocab
    convert_both half mtp-bf16 nomtp-q8_0
    convert_both wide mtp-f16 nomtp-f32
    convert_both f8 mtp-q8_0 mtp-auto nomtp-bf16 nomtp-auto
    convert_both f8 q8fp8-f16 q8fp8-auto mtp-q8fp8-bf16 nomtp-q8fp8-q8_0
    mtp_default_name bf glm4 --outtype q8_0
    mtp_default_name bf glm4 --vocab-only
    cp -r "$HERE/deepseek/bf16" "$G/ds" && mtp_refused "$G/ds" deepseek-v3 # the converter refuses them too
    run "$G/bf.nomtp-q8_0.gguf" "$G/bf.nomtp-q8_0.py.gguf"
    run "$G/bf.auto.gguf" "$G/bf.auto.py.gguf"
    run "$G/half.q8_0.gguf" "$G/half.q8_0.py.gguf"
    run "$G/wide.bf16.gguf" "$G/wide.bf16.py.gguf"
    run "$G/f8.q8_0.gguf" "$G/f8.q8_0.py.gguf"
    # a split output: each part the converter's
    mkdir -p "$G/split.py" "$G/split.anvil"
    (cd "$G" && FORCE_PRE=glm4 $PY "$TOOLS/convert_here.py" bf --outtype q8_0 --split-max-tensors 9 --outfile "$G/split.py/o.gguf" > "$G/split.log" 2>&1) ||
        fail "convert_hf_to_gguf.py bf split: $(tail -2 "$G/split.log")"
    "$ANVIL" convert "$G/bf" "$G/split.anvil/o.gguf" --outtype q8_0 --split-max-tensors 9 --quiet 2>"$T/err" || fail "anvil convert bf split: $(cat "$T/err")"
    [ "$(ls "$G/split.py")" = "$(ls "$G/split.anvil")" ] && [ -n "$(ls "$G/split.py")" ] || fail "split parts: $(ls "$G/split.anvil") vs $(ls "$G/split.py")"
    for f in "$G/split.py"/*.gguf; do same "$G/split.anvil/$(basename "$f")" "$f" "split $(basename "$f")"; done
else
    echo "generated cases skipped: /usr/bin/python3 lacks torch/numpy/tqdm/yaml or no $LLAMA_SRC/convert_hf_to_gguf.py"
    mk bf --qk-norm --mtp --seed 1
    mk f8 --qk-norm --mtp --fp8 48 --seed 4
fi

# ---- 3. anvil quantize HF_DIR: the bytes of convert --outtype auto + anvil quantize
quantize_same "Q8_0 Q4_K_M" "$G/bf" "$DATA/f16" "$G/f8"
quantize_same_with --mtp "Q8_0 Q4_K_M" "$G/bf" "$G/f8"
quantize_same_with --no-mtp "Q4_K_M" "$G/bf" "$G/f8"
quantize_same_with --no-nextn "Q8_0" "$G/f8"
cp -r "$HERE/deepseek/bf16" "$G/ds-q" && quantize_mtp_checks "$G/bf" "$G/ds-q"
transcode_mtp_checks "$G/bf" "$G/ds-q"
quantize_same_with --fp8-as-q8 "Q8_0" "$G/f8"
quantize_fp8q8_checks "$G/f8"

# ---- 4. bad input
mk bad-nexp --unset n_routed_experts
bad nexp "bad-nexp/config.json" "n_routed_experts"
mk bad-prf --set 'partial_rotary_factor="half"'
bad prf "bad-prf/config.json" "partial_rotary_factor"
mk bad-mtp --set 'num_nextn_predict_layers=-1'
bad mtp "bad-mtp/config.json" "num_nextn_predict_layers"
mk bad-scale --set 'routed_scaling_factor="big"'
bad scale "bad-scale/config.json" "routed_scaling_factor"
mk bad-hd --unset head_dim --unset hidden_size
bad hd "bad-hd/config.json" "hidden_size"
mk bad-expert --drop model.layers.1.mlp.experts.2.up_proj.weight
bad expert "bad-expert" "model.layers.1.mlp.experts.2.up_proj.weight" "missing"
mk bad-twice --shards 2 --dup model.layers.1.mlp.experts.1.gate_proj.weight
bad twice "bad-twice" "model.layers.1.mlp.experts.1.gate_proj.weight"
mk bad-gmask
edit "$G/bad-gmask/tokenizer.json" "j['added_tokens'] = [t for t in j['added_tokens'] if t['content'] != '[gMASK]']"
bad gmask "bad-gmask/tokenizer.json" "[gMASK]"
mk bad-pre
edit "$G/bad-pre/tokenizer.json" "j['pre_tokenizer']['pretokenizers'][0]['pattern']['Regex'] = '\\\\p{N}{1,4}'"
bad pre "bad-pre/tokenizer.json" "pre-tokenizer"

hf_summary
