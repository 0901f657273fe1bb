#!/usr/bin/env bash
# usage: hf_gemma.sh [--quick] ANVIL HF_COMPARE GEMMA_DATA ORACLE_TOOLS LLAMA_SRC [LLAMA_RUN ORACLE_DIR]
#
# `anvil convert` of Gemma2ForCausalLM and Gemma3ForCausalLM
# (host/src/hf/hf_gemma.c) against llama.cpp's convert_hf_to_gguf.py, byte
# for byte:
# 1. the committed pairs of GEMMA_DATA (tests/hf/gemma: a Gemma 2 at q8_0
#    and --vocab-only, a Gemma 3 whose vocab_size passes its pieces and
#    whose embed_tokens has rows past vocab_size, a transformers-5 Gemma 3
#    from f16 with rope_parameters and an lm_head; each with what the real
#    converter wrote), and llama.cpp loads and runs each model file;
# 2. (not with --quick) when /usr/bin/python3 has torch, numpy,
#    sentencepiece, tqdm and yaml: checkpoints made by make_gemma.py from
#    the committed tokenizers, converted by both for --outtype f32 f16 bf16
#    q8_0 auto and --vocab-only (Gemma 2 bf16 and f32 in 2 shards, Gemma 3
#    bf16, Gemma 3 transformers-5 f16), four config variants at f32 and
#    --vocab-only, and a --split-max-tensors output;
# 3. `anvil quantize HF_DIR OUT Q4_K_M` = convert --outtype auto + anvil
#    quantize of that file;
# 4. bad input (config.json edited with sed: no Python needed): a missing
#    or wrong-typed required field, Gemma 3 with attn_logit_softcapping,
#    Gemma 2 without tokenizer.model, a tensor of the wrong shape: exit 1,
#    the file and key (or tensor) named, nothing written.
set -u
QUICK=0
[ "${1:-}" = --quick ] && { QUICK=1; shift; }
ANVIL=$1 CMP=$2 DATA=$3 TOOLS=$4 LLAMA_SRC=${5:-} LLAMA_RUN=${6:-} ORACLE_DIR=${7:-}
HERE=$(cd "$(dirname "$0")" && pwd)
TOOLS=$(cd "$TOOLS" && pwd)
. "$HERE/hf_lib.sh"

# ---- 1. committed pairs
hf_pairs

# ---- 2. generated through the real converter
PY=/usr/bin/python3
[ -x $PY ] || PY=python3
G=$T/gen; mkdir -p "$G"
if [ $QUICK = 0 ] && $PY -c "import torch, numpy, sentencepiece, tqdm, yaml" 2>/dev/null && [ -f "$LLAMA_SRC/convert_hf_to_gguf.py" ]; then
    export LLAMA_SRC
    MK="$PY $HERE/make_gemma.py"
    $MK "$G/g2" --arch gemma2 --tok "copy:$DATA/gemma2" --seed 21 >/dev/null || fail "make_gemma.py g2"
    $MK "$G/g2s" --arch gemma2 --tok "copy:$DATA/gemma2" --seed 22 --dtype f32 --shards 2 >/dev/null || fail "make_gemma.py g2s"
    $MK "$G/g3" --arch gemma3 --tok "copy:$DATA/gemma3" --seed 23 --layers 3 --extra-rows 4 >/dev/null || fail "make_gemma.py g3"
    $MK "$G/g3v5" --arch gemma3-v5 --tok "copy:$DATA/gemma3" --seed 24 --dtype f16 >/dev/null || fail "make_gemma.py g3v5"
    # variants (f32 and --vocab-only): Gemma 2 with an lm_head (dropped); Gemma 3 with final soft-capping,
    # sliding_window_pattern 1, no max_position_embeddings / num_key_value_heads (the class's defaults); without
    # vocab_size, rope_theta, rope_local_base_freq (the pieces count, 1e6); legacy linear rope_scaling, head_dim 256
    $MK "$G/v1" --arch gemma2 --tok "copy:$DATA/gemma2" --lm-head --seed 31 >/dev/null || fail "make_gemma.py v1"
    $MK "$G/v2" --arch gemma3 --tok "copy:$DATA/gemma3" --set final_logit_softcapping=30.0 --set sliding_window_pattern=1 \
        --unset max_position_embeddings --unset num_key_value_heads --kv 4 --heads 8 --seed 32 >/dev/null || fail "make_gemma.py v2"
    $MK "$G/v3" --arch gemma3 --tok "copy:$DATA/gemma3" --unset vocab_size --extra-rows 3 --lm-head --seed 33 \
        --unset rope_theta --unset rope_local_base_freq >/dev/null || fail "make_gemma.py v3"
    $MK "$G/v4" --arch gemma3 --tok "copy:$DATA/gemma3" --set 'rope_scaling={"factor":8.0,"rope_type":"linear"}' \
        --unset head_dim --head-dim 256 --seed 34 >/dev/null || fail "make_gemma.py v4"
    for d in g2 g2s g3 g3v5 v1 v2 v3 v4; do
        opts="f32 f16 bf16 q8_0 auto vocab"; [ $d = g2s ] && opts="f16"; [ ${d#v} != $d ] && opts="f32 vocab"
        for o in $opts; do
            (cd "$G" && $PY "$TOOLS/convert_here.py" $d $(args_of $o) --outfile "$G/$d.$o.py.gguf" > "$G/$d.$o.log" 2>&1) ||
                { fail "convert_hf_to_gguf.py $d $o: $(tail -2 "$G/$d.$o.log")"; continue; }
            "$ANVIL" convert "$G/$d" "$G/$d.$o.gguf" $(args_of $o) --quiet 2>"$T/err" || { fail "anvil convert $d $o: $(cat "$T/err")"; continue; }
            same "$G/$d.$o.gguf" "$G/$d.$o.py.gguf" "$d $o"
        done
    done
    run "$G/g3.auto.gguf" "$G/g3.auto.py.gguf"
    mkdir -p "$G/split.py" "$G/split.anvil"
    (cd "$G" && $PY "$TOOLS/convert_here.py" g3 --outtype q8_0 --split-max-tensors 7 --outfile "$G/split.py/o.gguf" > "$G/split.log" 2>&1) ||
        fail "convert_hf_to_gguf.py g3 split: $(tail -2 "$G/split.log")"
    "$ANVIL" convert "$G/g3" "$G/split.anvil/o.gguf" --outtype q8_0 --split-max-tensors 7 --quiet 2>"$T/err" || fail "anvil convert g3 split: $(cat "$T/err")"
    [ "$(ls "$G/split.py")" = "$(ls "$G/split.anvil")" ] && [ -n "$(ls "$G/split.py")" ] || fail "split parts: $(ls "$G/split.anvil") vs $(ls "$G/split.py")"
    for f in "$G/split.py"/*.gguf; do same "$G/split.anvil/$(basename "$f")" "$f" "split $(basename "$f")"; done
elif [ $QUICK = 0 ]; then
    echo "generated cases skipped: /usr/bin/python3 lacks torch/numpy/sentencepiece/tqdm/yaml or no $LLAMA_SRC/convert_hf_to_gguf.py"
fi

# ---- 3. anvil quantize HF_DIR: the bytes of convert --outtype auto + anvil quantize
for d in gemma2 gemma3; do
    "$ANVIL" convert "$DATA/$d" "$T/auto.gguf" --quiet 2>"$T/err" &&
        "$ANVIL" quantize --quiet "$T/auto.gguf" "$T/two.gguf" Q4_K_M >/dev/null 2>>"$T/err" &&
        "$ANVIL" quantize --quiet "$DATA/$d" "$T/one.gguf" Q4_K_M >/dev/null 2>>"$T/err" ||
        { fail "quantize $d: $(head -3 "$T/err")"; continue; }
    same "$T/one.gguf" "$T/two.gguf" "quantize $d Q4_K_M"
done

# ---- 4. bad input: a copy of a committed folder, config.json edited
# [RM=FILE] bad NAME FROM SED_EXPR EXPECTED_TEXT...: convert exits 1, says each text, writes nothing
bad() {
    local name=$1 from=$2 expr=$3; shift 3
    cp -r "$DATA/$from" "$G/bad-$name"
    [ -n "$expr" ] && sed -i -e "$expr" "$G/bad-$name/config.json"
    [ -n "${RM:-}" ] && rm -f "$G/bad-$name/$RM"
    mkdir -p "$T/out-$name"
    "$ANVIL" convert "$G/bad-$name" "$T/out-$name/x.gguf" >/dev/null 2>"$T/err"; local rc=$?
    [ $rc = 1 ] || { fail "bad $name: exit $rc, want 1 ($(cat "$T/err"))"; return; }
    for want in "$@"; do
        grep -qF -- "$want" "$T/err" || { fail "bad $name: message lacks '$want': $(cat "$T/err")"; return; }
    done
    [ -z "$(ls -A "$T/out-$name")" ] && pass || fail "bad $name: wrote $(ls "$T/out-$name")"
}
bad no-softcap gemma2 '/"attn_logit_softcapping"/d' "bad-no-softcap/config.json" "attn_logit_softcapping" "missing"
bad str-window gemma2 's/"sliding_window": 4096/"sliding_window": "wide"/' "bad-str-window/config.json" "sliding_window"
bad g3-softcap gemma3 's/"attn_logit_softcapping": null/"attn_logit_softcapping": 50.0/' "bad-g3-softcap/config.json" "attn_logit_softcapping"
bad g3-window gemma3 '/"sliding_window"/d' "bad-g3-window/config.json" "sliding_window" "missing"
bad shape gemma3 's/"intermediate_size": 64/"intermediate_size": 48/' "model.safetensors" "model.layers.0.mlp.down_proj.weight\" has shape [32, 64]"
RM=tokenizer.model bad no-spm gemma2 '' "bad-no-spm/tokenizer.model" "missing"
RM=tokenizer.model bad g3-no-spm gemma3 '' "bad-g3-no-spm" "no tokenizer.model"

hf_summary
