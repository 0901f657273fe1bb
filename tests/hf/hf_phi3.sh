#!/usr/bin/env bash
# usage: hf_phi3.sh [--pairs-only] ANVIL HF_COMPARE PHI3_DATA ORACLE_TOOLS LLAMA_SRC [LLAMA_RUN ORACLE_DIR]
#
# `anvil convert` of Phi3ForCausalLM (host/src/hf/hf_phi3.c, hf_vocab_phi3.c)
# against llama.cpp's convert_hf_to_gguf.py, byte for byte:
# 1. the committed pairs of PHI3_DATA (tests/hf/phi3: a plain-rope and a
#    longrope checkpoint, each with what the real converter wrote, at
#    --outtype q8_0 and --vocab-only), and llama.cpp runs each; with
#    --pairs-only that is all (no Python: the unit suite's check);
# 2. when /usr/bin/python3 has torch, numpy, sentencepiece, tqdm and yaml:
#    checkpoints made by make_phi3.py converted by both for --outtype f32
#    f16 bf16 q8_0 auto and --vocab-only: plain rope (bf16), longrope (f16),
#    transformers-5 rope_parameters with partial rotary and tied
#    embeddings (f32), 3 shards; "su" and "yarn" scaling types, a Phi-4
#    style GPT2Tokenizer folder, and Llama 2's real 32000-piece
#    SentencePiece model (rebuilt from llama.cpp's
#    models/ggml-vocab-llama-spm.gguf by spm_from_gguf.py); a split
#    output; llama.cpp runs the converted files;
# 3. `anvil quantize HF_DIR` = convert --outtype auto + anvil quantize;
# 4. bad input: config keys the converter needs missing or wrong, rope
#    factors of the wrong length, an unknown scaling type, tokenizer files
#    missing or inconsistent, a tensor past num_hidden_layers, a fused
#    tensor of the wrong shape: exit 1, the file and key or tensor named,
#    nothing written.
# make_phi3.py needs python3 with numpy and sentencepiece; without them
# 2.-4. are skipped.
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
hf_python numpy sentencepiece
G=$T/gen; mkdir -p "$G"
SPM=$TOOLS/sp1024.model
mk() { local name=$1; shift; $PY "$HERE/make_phi3.py" "$G/$name" "$@" >/dev/null || fail "make_phi3.py $name"; }
# convert_both DIR PRE OPTS...: each option by both converters, compared
convert_both() {
    local d=$1 pre=$2; shift 2
    for o in "$@"; do
        (cd "$G" && FORCE_PRE=$pre $PY "$TOOLS/convert_here.py" $d $(args_of $o) --outfile "$G/$d.$o.py.gguf" > "$G/$d.$o.log" 2>&1) ||
            { fail "convert_hf_to_gguf.py $d $o: $(tail -2 "$G/$d.$o.log")"; continue; }
        "$ANVIL" convert "$G/$d" "$G/$d.$o.gguf" $(args_of $o) --quiet 2>"$T/err" || { fail "anvil convert $d $o: $(cat "$T/err")"; continue; }
        same "$G/$d.$o.gguf" "$G/$d.$o.py.gguf" "$d $o"
    done
}

# ---- 2. generated through the real converter
if $PY -c "import torch, numpy, sentencepiece, tqdm, yaml" 2>/dev/null && [ -f "$LLAMA_SRC/convert_hf_to_gguf.py" ]; then
    export LLAMA_SRC
    mk plain --spm "$SPM" --seed 1
    mk long --spm "$SPM" --rope longrope --dtype f16 --seed 2
    mk v5 --spm "$SPM" --rope v5 --partial 0.75 --hidden 64 --heads 4 --kv 2 --inter 80 --dtype f32 --tied --seed 3
    mk shards --spm "$SPM" --seed 4 --layers 3 --shards 3 --inter 80
    for d in plain long v5 shards; do convert_both $d "" f32 f16 bf16 q8_0 auto vocab; done
    mk su --spm "$SPM" --rope longrope --seed 5
    edit "$G/su/config.json" "j['rope_scaling']['type'] = 'su'; j['max_position_embeddings'] = 4096"
    mk yarn --spm "$SPM" --rope longrope --seed 6
    edit "$G/yarn/config.json" "j['rope_scaling']['type'] = 'YaRN'"
    mk gpt2 --spm "$SPM" --rope v5 --partial 0.75 --tok-class GPT2Tokenizer --seed 7
    rm "$G/gpt2/tokenizer.model" "$G/gpt2/added_tokens.json"
    cp "$HERE/moe/qwen2moe/tokenizer.json" "$G/gpt2/"
    cp "$HERE/moe/qwen2moe/tokenizer_config.json" "$G/gpt2/"
    edit "$G/gpt2/tokenizer_config.json" "j['tokenizer_class'] = 'GPT2Tokenizer'"
    convert_both su "" q8_0 vocab
    convert_both yarn "" q8_0 vocab
    convert_both gpt2 qwen2 q8_0 vocab
    if PYTHONPATH=$LLAMA_SRC/gguf-py $PY "$HERE/spm_from_gguf.py" "$LLAMA_SRC/models/ggml-vocab-llama-spm.gguf" "$G/llama2.model" >/dev/null; then
        mk real --spm "$G/llama2.model" --rope longrope --pad 53 --seed 8
        convert_both real "" q8_0 vocab
        run "$G/real.q8_0.gguf" "$G/real.q8_0.py.gguf"
    else
        fail "spm_from_gguf.py: cannot rebuild Llama 2's tokenizer.model"
    fi
    run "$G/plain.auto.gguf" "$G/plain.auto.py.gguf"
    run "$G/long.q8_0.gguf" "$G/long.q8_0.py.gguf"
    run "$G/v5.bf16.gguf" "$G/v5.bf16.py.gguf"
    run "$G/gpt2.q8_0.gguf" "$G/gpt2.q8_0.py.gguf"
    # a split output: each part the converter's
    mkdir -p "$G/split.py" "$G/split.anvil"
    (cd "$G" && $PY "$TOOLS/convert_here.py" long --outtype q8_0 --split-max-tensors 4 --outfile "$G/split.py/o.gguf" > "$G/split.log" 2>&1) ||
        fail "convert_hf_to_gguf.py long split: $(tail -2 "$G/split.log")"
    "$ANVIL" convert "$G/long" "$G/split.anvil/o.gguf" --outtype q8_0 --split-max-tensors 4 --quiet 2>"$T/err" || fail "anvil convert long split: $(cat "$T/err")"
    [ "$(ls "$G/split.py")" = "$(ls "$G/split.anvil")" ] && [ -n "$(ls "$G/split.py")" ] || fail "split parts: $(ls "$G/split.anvil") vs $(ls "$G/split.py")"
    for f in "$G/split.py"/*.gguf; do same "$G/split.anvil/$(basename "$f")" "$f" "split $(basename "$f")"; done
else
    echo "generated cases skipped: /usr/bin/python3 lacks torch/numpy/sentencepiece/tqdm/yaml or no $LLAMA_SRC/convert_hf_to_gguf.py"
    mk long --spm "$SPM" --rope longrope --dtype f16 --seed 2
fi

# ---- 3. anvil quantize HF_DIR: the bytes of convert --outtype auto + anvil quantize
quantize_same "Q4_K_M" "$G/long" "$DATA/phi3-4k"

# ---- 4. bad input
mk bad-orig --spm "$SPM" --unset original_max_position_embeddings
bad orig "bad-orig/config.json" "original_max_position_embeddings"
mk bad-theta --spm "$SPM"
edit "$G/bad-theta/config.json" "j['rope_theta'] = 'fast'"
bad theta "bad-theta/config.json" "rope_theta"
mk bad-factors --spm "$SPM" --rope longrope
edit "$G/bad-factors/config.json" "j['rope_scaling']['long_factor'].pop()"
bad factors "bad-factors/config.json" "long and short factors"
mk bad-ropetype --spm "$SPM" --rope longrope
edit "$G/bad-ropetype/config.json" "j['rope_scaling']['type'] = 'dynamic'"
bad ropetype "bad-ropetype/config.json" "\"dynamic\""
mk bad-nospm --spm "$SPM"
rm "$G/bad-nospm/tokenizer.model"
bad nospm "bad-nospm/tokenizer.model is missing"
mk bad-tokclass --spm "$SPM" --tok-class -
bad tokclass "bad-tokclass/tokenizer_config.json" "tokenizer_class"
mk bad-tokid --spm "$SPM"
edit "$G/bad-tokid/tokenizer_config.json" "j['added_tokens_decoder']['5000'] = {'content': '<|x|>', 'special': True}"
bad tokid "bad-tokid/tokenizer_config.json" "5000"
mk bad-vocab --spm "$SPM"
edit "$G/bad-vocab/config.json" "j['vocab_size'] = 100"
bad vocab "bad-vocab/config.json" "vocab_size"
mk bad-layers --spm "$SPM" --layers 2
edit "$G/bad-layers/config.json" "j['num_hidden_layers'] = 1"
bad layers "model.safetensors" "model.layers.1."
mk bad-qkv --spm "$SPM" --kv 2
edit "$G/bad-qkv/config.json" "j['num_key_value_heads'] = 1"
bad qkv "model.safetensors" "model.layers.0.self_attn.qkv_proj.weight"

hf_summary
