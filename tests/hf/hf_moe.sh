#!/usr/bin/env bash
# usage: hf_moe.sh ANVIL HF_COMPARE MOE_DATA ORACLE_TOOLS LLAMA_SRC [LLAMA_RUN ORACLE_DIR]
#
# `anvil convert` of the mixture-of-experts classes (host/src/hf/hf_moe.c)
# against llama.cpp's convert_hf_to_gguf.py, byte for byte:
# 1. the committed pairs of MOE_DATA (tests/hf/moe: a fused-layout
#    Qwen3MoeForCausalLM, a 2-shard Qwen2MoeForCausalLM with its shared
#    expert, a MixtralForCausalLM with SentencePiece; each with what the
#    real converter wrote at --outtype q8_0), and llama.cpp runs each;
# 2. when /usr/bin/python3 has torch, numpy, sentencepiece, tqdm and yaml:
#    checkpoints made by make_moe.py for the four layouts (per-expert and
#    fused Qwen3-MoE, Qwen2-MoE, Mixtral) converted by both (--outtype
#    f32 f16 bf16 q8_0 auto and --vocab-only on the first, two of them on
#    each other; HF_MOE_FULL=1: all on all), and a Qwen3-MoE whose experts
#    span 3 shards, and a --split-max-tensors output;
# 3. `anvil quantize HF_DIR` = convert --outtype auto + anvil quantize;
# 4. bad input: an expert missing, an expert twice, a missing or wrong
#    config field, a fused tensor of the wrong shape: exit 1, the file and
#    tensor (or key) named, nothing written.
# make_moe.py needs python3 with numpy; without it 2.-4. are skipped.
set -u
ANVIL=$1 CMP=$2 DATA=$3 TOOLS=$4 LLAMA_SRC=${5:-} LLAMA_RUN=${6:-} ORACLE_DIR=${7:-}
HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS=$(cd "$TOOLS" 2>/dev/null && pwd)
. "$HERE/hf_lib.sh"

# ---- 1. committed pairs
hf_pairs
[ -n "$TOOLS" ] || hf_summary "no ../shared/tools/hf-oracle: generated cases skipped"

hf_python numpy
MK="$PY $HERE/make_moe.py"
G=$T/gen; mkdir -p "$G"
# Qwen3's tokenizer.json cut to 320 ids and its 26 added tokens (the committed pair's)
mkdir -p "$G/tok" && cp "$DATA/qwen2moe"/tokenizer.json "$DATA/qwen2moe"/tokenizer_config.json "$G/tok/"
SPM=$TOOLS/sp1024.model
# mkmoe NAME ARCH ARGS...: a checkpoint (Qwen: the byte-level BPE above; Mixtral: SentencePiece)
mkmoe() {
    local name=$1 arch=$2; shift 2
    local tok="tok:$G/tok"; [ "$arch" = mixtral ] && tok="spm:$SPM"
    $MK "$G/$name" --arch "$arch" --tok "$tok" "$@" >/dev/null || fail "make_moe.py $name"
}

# ---- 2. generated through the real converter
if $PY -c "import torch, numpy, sentencepiece, tqdm, yaml" 2>/dev/null && [ -f "$LLAMA_SRC/convert_hf_to_gguf.py" ]; then
    export LLAMA_SRC
    mkmoe q3 qwen3moe --seed 3
    mkmoe q3f qwen3moe-fused --seed 4 --layers 2
    mkmoe q2 qwen2moe --dtype f16 --seed 5
    mkmoe mx mixtral --dtype f32 --seed 6
    mkmoe q3s qwen3moe --seed 7 --layers 2 --experts 8 --shards 3
    for d in q3 q3f q2 mx q3s; do
        pre=qwen2; [ $d = mx ] && pre=
        # Every outtype on the first layout; two each on the others (the
        # outtype code is shared): 15 converter runs instead of 27 keep
        # make test inside its budget. HF_MOE_FULL=1 runs the whole matrix.
        opts="f32 f16 bf16 q8_0 auto vocab"
        if [ -z "${HF_MOE_FULL:-}" ]; then
            case $d in q3f) opts="bf16 auto" ;; q2) opts="f16 q8_0" ;; mx) opts="f32 vocab" ;; esac
        fi
        [ $d = q3s ] && opts="bf16"
        for o in $opts; do
            if [ $o = vocab ]; then args="--vocab-only"; else args="--outtype $o"; fi
            (cd "$G" && FORCE_PRE=$pre $PY "$TOOLS/convert_here.py" $d $args --outfile "$G/$d.$o.py.gguf" > "$G/$d.$o.log" 2>&1) ||
                { fail "convert_hf_to_gguf.py $d $o: $(tail -2 "$G/$d.$o.log")"; continue; }
            "$ANVIL" convert "$G/$d" "$G/$d.$o.gguf" $args --quiet 2>"$T/err" || { fail "anvil convert $d $o: $(cat "$T/err")"; continue; }
            same "$G/$d.$o.gguf" "$G/$d.$o.py.gguf" "$d $o"
        done
    done
    run "$G/q3.auto.gguf" "$G/q3.auto.py.gguf"
    # a split output: each part the converter's
    mkdir -p "$G/split.py" "$G/split.anvil"
    (cd "$G" && FORCE_PRE=qwen2 $PY "$TOOLS/convert_here.py" q3 --outtype q8_0 --split-max-tensors 5 --outfile "$G/split.py/o.gguf" > "$G/split.log" 2>&1) ||
        fail "convert_hf_to_gguf.py q3 split: $(tail -2 "$G/split.log")"
    "$ANVIL" convert "$G/q3" "$G/split.anvil/o.gguf" --outtype q8_0 --split-max-tensors 5 --quiet 2>"$T/err" || fail "anvil convert q3 split: $(cat "$T/err")"
    [ "$(ls "$G/split.py")" = "$(ls "$G/split.anvil")" ] && [ -n "$(ls "$G/split.py")" ] || fail "split parts: $(ls "$G/split.anvil") vs $(ls "$G/split.py")"
    for f in "$G/split.py"/*.gguf; do same "$G/split.anvil/$(basename "$f")" "$f" "split $(basename "$f")"; done
else
    echo "generated cases skipped: /usr/bin/python3 lacks torch/numpy/sentencepiece/tqdm/yaml or no $LLAMA_SRC/convert_hf_to_gguf.py"
    mkmoe q3 qwen3moe --seed 3
    mkmoe mx mixtral --dtype f32 --seed 6
fi

# ---- 3. anvil quantize HF_DIR: the bytes of convert --outtype auto + anvil quantize
quantize_same "Q4_K_M" "$G/q3" "$DATA/qwen2moe"

# ---- 4. bad input
E=model.layers.0.mlp.experts
mkmoe bad-missing qwen3moe --drop $E.2.up_proj.weight
bad missing "bad-missing" "$E.2.up_proj.weight\" is missing" "model.safetensors"
mkmoe bad-missing-last qwen3moe --layers 2 --drop model.layers.1.mlp.experts.3.down_proj.weight
bad missing-last "model.layers.1.mlp.experts.3.down_proj.weight\" is missing"
mkmoe bad-mixtral-missing mixtral --drop model.layers.0.block_sparse_moe.experts.1.w2.weight
bad mixtral-missing "model.layers.0.block_sparse_moe.experts.1.w2.weight\" is missing"
mkmoe bad-twice qwen2moe --shards 2 --dup $E.1.gate_proj.weight
bad twice "$E.1.gate_proj.weight" "model-00001-of-00002.safetensors" "model-00002-of-00002.safetensors"
mkmoe bad-no-experts qwen3moe --unset num_experts
bad no-experts "bad-no-experts/config.json" "num_experts" "missing"
mkmoe bad-mixtral-no-experts mixtral --unset num_local_experts
bad mixtral-no-experts "bad-mixtral-no-experts/config.json" "num_local_experts"
mkmoe bad-extra-expert qwen3moe --experts 4
$PY - "$G/bad-extra-expert/config.json" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1])); c["num_experts"] = 3; json.dump(c, open(sys.argv[1], "w"))
PYEOF
bad extra-expert "model.safetensors" "$E.3." "E < 3 experts"
mkmoe bad-shape qwen3moe-fused --moe-inter 32
$PY - "$G/bad-shape/config.json" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1])); c["moe_intermediate_size"] = 16; json.dump(c, open(sys.argv[1], "w"))
PYEOF
bad shape "model.safetensors" "$E.down_proj\" has shape [4, 32, 32]"
mkmoe bad-type qwen2moe
$PY - "$G/bad-type/config.json" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1])); c["moe_intermediate_size"] = "wide"; json.dump(c, open(sys.argv[1], "w"))
PYEOF
bad type "bad-type/config.json" "moe_intermediate_size"

hf_summary
