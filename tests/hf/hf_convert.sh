#!/usr/bin/env bash
# usage: hf_convert.sh ANVIL HF_COMPARE TESTDATA_HF ORACLE_TOOLS LLAMA_SRC JSON_CHECK JSON_MD
#                      [LLAMA_RUN ORACLE_DIR]
#
# 1. Every reference pair of TESTDATA_HF: `anvil convert` with the options
#    in its name must give convert_hf_to_gguf.py's file: the whole file byte
#    for byte when this build writes the tokenizer, else every non-tokenizer
#    KV (order, wire type, bytes) and every tensor.
# 2. When /usr/bin/python3 has torch, numpy, sentencepiece, tqdm and yaml and
#    LLAMA_SRC holds convert_hf_to_gguf.py: more folders made by the oracle
#    script (other architectures, dtypes, shards, split outputs, metadata
#    override, default names) and converted by both.
# 3. Bad input: exit 1, a message naming the file and tensor, nothing written.
# HF_QUICK=1 (the sanitizer build): 2. and the llama.cpp runs are left out.
set -u
ANVIL=$1 CMP=$2 REF=$3 TOOLS=$4 LLAMA_SRC=${5:-} JSON_CHECK=${6:-} JSON_MD=${7:-}
LLAMA_RUN=${8:-} ORACLE_DIR=${9:-}
# run OURS THEIRS: llama.cpp decodes the same tokens from both (when libllama is there)
run() {
    [ "${HF_QUICK:-0}" = 0 ] && [ -n "$LLAMA_RUN" ] && [ -d "$ORACLE_DIR" ] || return 0
    out=$("$LLAMA_RUN" "$ORACLE_DIR" "$@" 2>&1) && pass || fail "llama.cpp on $1: $(echo "$out" | tail -1)"
}
if [ ! -d "$REF" ]; then echo "SKIP: no reference pairs at $REF"; exit 77; fi
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fails=0 checks=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
pass() { checks=$((checks + 1)); }

# same OURS THEIRS: whole file when we wrote a tokenizer, else the rest
same() {
    if [ "$TOKENIZER" = 1 ]; then
        cmp -s "$1" "$2" && pass || fail "$1 differs from $2: $(cmp "$1" "$2" 2>&1 | head -1)"
    else
        out=$("$CMP" "$1" "$2" --skip-prefix tokenizer.) && pass || fail "$1 vs $2: $out"
    fi
}

TOKENIZER=0
"$ANVIL" convert "$REF/vocab-llama3" "$T/probe.gguf" --vocab-only --json 2>/dev/null | grep -q '"tokenizer":true' && TOKENIZER=1
echo "tokenizer KVs written: $TOKENIZER"

# ---- 1. the reference pairs
for g in "$REF"/*.gguf; do
    b=$(basename "$g" .gguf); dir=${b%.*}; opt=${b##*.}
    if [ "$opt" = vocab ]; then args="--vocab-only"; else args="--outtype $opt"; fi
    "$ANVIL" convert "$REF/$dir" "$T/$b.gguf" $args --quiet 2>"$T/err" || { fail "convert $b: $(cat "$T/err")"; continue; }
    same "$T/$b.gguf" "$g"
done

# --json documents (a split, a dry run, an error) against host/cli/JSON.md
if [ -n "$JSON_CHECK" ]; then
    for args in "--split-max-tensors 10" "--dry-run" "--outtype q4_0"; do
        "$ANVIL" convert "$REF/llama3-bpe" "$T/j.gguf" $args --json > "$T/j.json" 2>/dev/null
        "$JSON_CHECK" "$JSON_MD" "$T/j.json" 2>"$T/err" && pass || fail "--json $args: $(cat "$T/err")"
    done
    [ -f "$T/j-00003-of-00003.gguf" ] && pass || fail "--split-max-tensors 10 did not write 3 parts"
fi

# ---- 2. generated through the oracle script
PY=/usr/bin/python3
if [ "${HF_QUICK:-0}" != 0 ]; then
    echo "generated cases skipped (HF_QUICK)"
elif [ -x $PY ] && $PY -c "import torch, numpy, sentencepiece, tqdm, yaml" 2>/dev/null && [ -f "$LLAMA_SRC/convert_hf_to_gguf.py" ]; then
    export LLAMA_SRC
    G=$T/gen; mkdir -p "$G"
    # gen NAME MAKE_HF_ARGS -- CONVERT_ARGS (convert args may hold @OUT@ for the output path)
    gen() {
        local name=$1; shift; local mk=() cv=()
        while [ "$1" != -- ]; do mk+=("$1"); shift; done; shift; cv=("$@")
        $PY "$TOOLS/make_hf.py" "$G/$name" --tok "spm:$TOOLS/sp1024.model" "${mk[@]}" >/dev/null || { fail "make_hf $name"; return; }
        [ -f "$G/$name.readme" ] && cp "$G/$name.readme" "$G/$name/README.md"
        [ -d "$G/$name.extra" ] && cp -r "$G/$name.extra/." "$G/$name/"
        [ -f "$G/$name.cfg.json" ] && $PY -c "import json, sys; c = json.load(open(sys.argv[1])); c.update(json.load(open(sys.argv[2]))); json.dump(c, open(sys.argv[1], 'w'), indent=2)" "$G/$name/config.json" "$G/$name.cfg.json"
        mkdir -p "$G/$name.py" "$G/$name.anvil"
        local pyargs=() anargs=()
        for a in "${cv[@]}"; do pyargs+=("${a//@OUT@/$G/$name.py}"); anargs+=("${a//@OUT@/$G/$name.anvil}"); done
        (cd "$G" && $PY "$TOOLS/convert_here.py" "$name" "${pyargs[@]}" > "$G/$name.log" 2>&1) || { fail "convert_hf_to_gguf.py $name: $(tail -2 "$G/$name.log")"; return; }
        "$ANVIL" convert "$G/$name" "${anargs[@]}" --quiet 2>"$T/err" || { fail "anvil convert $name: $(cat "$T/err")"; return; }
        if [[ " ${cv[*]} " == *" --dry-run "* ]]; then
            # nothing written by either; the same file name planned
            local want got
            want=$(basename "$(grep -v '^INFO\|^WARNING' "$G/$name.log" | tail -1)")
            got=$(basename "$("$ANVIL" convert "$G/$name" "${anargs[@]}" --json 2>/dev/null | sed 's/.*"outputs":\[{"path":"\([^"]*\)".*/\1/')")
            [ -z "$(ls -A "$G/$name.py")$(ls -A "$G/$name.anvil")" ] && [ "$want" = "$got" ] && pass || fail "$name dry run: $got vs $want"
            return
        fi
        local theirs=("$G/$name.py"/*.gguf) ours=("$G/$name.anvil"/*.gguf)
        [ "${#theirs[@]}" = "${#ours[@]}" ] || { fail "$name: ${#ours[@]} files vs ${#theirs[@]}"; return; }
        for i in "${!theirs[@]}"; do
            [ "$(basename "${ours[$i]}")" = "$(basename "${theirs[$i]}")" ] || { fail "$name: named $(basename "${ours[$i]}") vs $(basename "${theirs[$i]}")"; continue; }
            if [ "${#theirs[@]}" -gt 1 ] && [ "$TOKENIZER" = 0 ]; then
                [ $i -gt 0 ] || { out=$("$CMP" "${ours[0]}" "${theirs[0]}" --skip-prefix tokenizer.) && pass || fail "$name: $out"; }
            else
                same "${ours[$i]}" "${theirs[$i]}"
            fi
        done
        run "${ours[0]}" "${theirs[0]}"
    }
    printf '{"general.name": "Override Name", "general.author": "anvil tests", "general.version": "v2.1",\n "general.license": ["mit", "apache-2.0"], "general.tags": ["a", "b"], "general.sampling.top_k": 40}\n' > "$G/meta.json"
    cat > "$G/qwen3-card.readme" <<'CARD'
---
license: apache-2.0
license_link: https://huggingface.co/Qwen/Qwen3-8B/blob/main/LICENSE
pipeline_tag: text-generation
base_model:
- Qwen/Qwen3-8B-Base
- https://huggingface.co/meta-llama/Llama-3.1-8B
datasets: [HuggingFaceFW/fineweb, "openai/gsm8k"]
language:
- en
- no
tags:
  - chat
  - qwen3 # a comment
library_name: transformers
extra_gated_fields:
  Name: text
  Affiliation: text
description: >-
  folded text that the converter reads but no key here uses
---
# Qwen3 card
CARD
    sed -i '/^description/,+1d' "$G/qwen3-card.readme"
    gen qwen3-card --arch qwen3 --hidden 64 --inter 96 --layers 1 --heads 2 --kv 1 --head-dim 32 --seed 4 -- --outfile @OUT@
    mkdir -p "$G/qwen3-embed.extra/1_Pooling"
    printf '[{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},\n {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]\n' > "$G/qwen3-embed.extra/modules.json"
    printf '{"word_embedding_dimension": 64, "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": false,\n "pooling_mode_lasttoken": true}\n' > "$G/qwen3-embed.extra/1_Pooling/config.json"
    printf '{"rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 4096, "rope_type": "yarn", "beta_fast": 32, "attention_factor": 1.2}}\n' > "$G/qwen3-embed.cfg.json"
    gen qwen3-embed --arch qwen3 --hidden 64 --inter 96 --layers 1 --heads 2 --kv 1 --head-dim 32 --seed 12 -- --outfile @OUT@
    gen Qwen3-Tiny-0.5B-Chat --arch qwen3 --hidden 64 --inter 96 --layers 2 --heads 4 --kv 2 --head-dim 32 --dtype f32 --shards 3 --seed 5 -- --outfile @OUT@
    gen mistral-f16-7B-Instruct-v0.3 --arch mistral --hidden 80 --inter 160 --layers 2 --heads 4 --kv 2 --dtype f16 --seed 6 -- --outtype q8_0 --outfile @OUT@ --model-name "My Model"
    gen llama-f32-split --arch llama --hidden 64 --inter 128 --layers 3 --heads 2 --kv 1 --dtype f32 --tied --seed 7 -- --outtype f32 --split-max-tensors 7 --outfile "@OUT@/out-{ftype}.gguf"
    gen Llama-3.2-1B-meta --arch llama --hidden 64 --inter 128 --layers 2 --heads 2 --kv 2 --rope-llama3 --seed 8 -- --outtype bf16 --split-max-size 100K --no-tensor-first-split --metadata "$G/meta.json" --outfile @OUT@
    gen qwen2-auto --arch qwen2 --hidden 64 --inter 96 --layers 2 --heads 4 --kv 4 --dtype f16 --seed 9 -- --outfile @OUT@ --dry-run
else
    echo "generated cases skipped: /usr/bin/python3 lacks torch/numpy/sentencepiece/tqdm/yaml or no $LLAMA_SRC/convert_hf_to_gguf.py"
fi

# ---- anvil quantize / transcode --from HF_DIR: one streaming pass (each tensor converted as the
# engine reads it), the bytes of convert --outtype auto then quantize; no file but the output
# qz_same NAME FOLDER ARGS...: ARGS with @IN@ (the input) and @OUT@ (the output)
qz_same() {
    local name=$1 dir=$2; shift 2
    local two=("${@//@IN@/$T/qz/auto.gguf}") one=("${@//@IN@/$dir}")
    rm -rf "$T/qz" && mkdir -p "$T/qz/out" && before=$(ls -A "$dir" | sort | md5sum)
    "$ANVIL" convert "$dir" "$T/qz/auto.gguf" --quiet 2>"$T/err" &&
    "$ANVIL" "${two[@]//@OUT@/$T/qz/two-steps.gguf}" >/dev/null 2>>"$T/err" &&
    "$ANVIL" "${one[@]//@OUT@/$T/qz/out/direct.gguf}" >/dev/null 2>>"$T/err" ||
        { fail "$name: $(grep -v WARNING "$T/err" | head -3)"; return; }
    cmp -s "$T/qz/two-steps.gguf" "$T/qz/out/direct.gguf" && [ "$(ls -A "$T/qz/out")" = direct.gguf ] &&
        [ "$(ls -A "$dir" | sort | md5sum)" = "$before" ] && pass ||
        fail "$name: differs from convert + quantize, or left files: $(ls -A "$T/qz/out")"
}
for m in qwen2-bpe llama3-bpe llama-spm-sharded; do
    qz_same "quantize $m Q4_K_M" "$REF/$m" quantize --quiet @IN@ @OUT@ Q4_K_M
    qz_same "quantize $m Q8_0" "$REF/$m" quantize --quiet @IN@ @OUT@ Q8_0 2
    qz_same "quantize $m --target-bpw" "$REF/$m" quantize --quiet --target-bpw 5.5 @IN@ @OUT@
    qz_same "transcode $m" "$REF/$m" transcode --quiet --from @IN@ --out @OUT@ --dtype q8_0 --tensor-type output=q6_K
done
qz_same "quantize --target-size" "$REF/llama3-bpe" quantize --quiet --target-size 700K @IN@ @OUT@
# --vs-ggml reads the source file's bytes: refused with a folder
"$ANVIL" transcode --from "$REF/qwen2-bpe" --out "$T/qz/x.gguf" --dtype q8_0 --vs-ggml >/dev/null 2>"$T/err"
[ $? = 2 ] && grep -q "Hugging Face folder" "$T/err" && [ ! -e "$T/qz/x.gguf" ] && pass ||
    fail "transcode --vs-ggml HF_DIR: $(cat "$T/err")"

# ---- FP8: block-scaled weights dequantized as dequant_simple does (make_fp8.py writes an FP8 folder
# and a BF16 one holding exactly the dequantized values: the tensors must match)
if command -v python3 >/dev/null; then
    python3 "$(dirname "$0")/make_fp8.py" "$REF/qwen2-bpe" "$T/fp8" || fail "make_fp8.py"
    for d in fp8 deq; do "$ANVIL" convert "$T/fp8/$d" "$T/fp8/$d.gguf" --outtype f32 --model-name X --quiet; done
    out=$("$CMP" "$T/fp8/fp8.gguf" "$T/fp8/deq.gguf" --skip-prefix tokenizer.) && pass || fail "fp8 vs its dequantized bf16: $out"
    run "$T/fp8/fp8.gguf"
    qz_same "quantize FP8 Q4_K_M" "$T/fp8/fp8" quantize --quiet @IN@ @OUT@ Q4_K_M
fi

# ---- 3. bad input: exit 1, names what is wrong, writes nothing
# bad NAME FOLDER EXPECTED_TEXT...
bad() {
    local name=$1 dir=$2; shift 2
    mkdir -p "$T/bad/$name.out"
    "$ANVIL" convert "$dir" "$T/bad/$name.out/x.gguf" > /dev/null 2>"$T/err"; local rc=$?
    [ $rc = 1 ] || { fail "bad $name: exit $rc, want 1 ($(cat "$T/err"))"; return; }
    for want in "$@"; do
        grep -qF -- "$want" "$T/err" || { fail "bad $name: message lacks '$want': $(cat "$T/err")"; return; }
    done
    [ -z "$(ls -A "$T/bad/$name.out")" ] || { fail "bad $name: wrote $(ls "$T/bad/$name.out")"; return; }
    pass
}
B=$T/bad; mkdir -p "$B"
cp -r "$REF/llama-spm-sharded" "$B/sharded"; cp -r "$REF/qwen2-bpe" "$B/single"; chmod -R u+w "$B"
mk() { rm -rf "$B/$2"; cp -r "$B/$1" "$B/$2"; }
mk single noconfig; rm "$B/noconfig/config.json"
bad no-config "$B/noconfig" "noconfig/config.json is missing"
mk single noweights; rm "$B/noweights/model.safetensors"
bad no-weights "$B/noweights" "holds no weights"
mk single arch; sed -i 's/"Qwen2ForCausalLM"/"GPT2LMHeadModel"/' "$B/arch/config.json"
bad unsupported-arch "$B/arch" "GPT2LMHeadModel is not supported" "LlamaForCausalLM"
mk single badjson; printf '{"architectures": [' > "$B/badjson/config.json"
bad config-not-json "$B/badjson" "badjson/config.json is not valid JSON"
mk sharded missing; rm "$B/missing/model-00002-of-00002.safetensors"
bad missing-shard "$B/missing" "shard" "model-00002-of-00002.safetensors is missing"
mk sharded noshard; sed -i 's/"lm_head.weight": "model-00002-of-00002.safetensors"/"lm_head.weight": "model-00002-of-00002.safetensors", "extra.weight": "model-00001-of-00002.safetensors"/' "$B/noshard/model.safetensors.index.json"
bad tensor-in-no-shard "$B/noshard" "extra.weight" "is in no shard" "model-00001-of-00002.safetensors"
mk single twoshards; cp "$B/twoshards/model.safetensors" "$B/twoshards/model-copy.safetensors"
bad tensor-in-two-shards "$B/twoshards" "is in two shards" "model-copy.safetensors" "model.embed_tokens.weight"
mk single shape; sed -i 's/"intermediate_size": 320/"intermediate_size": 256/' "$B/shape/config.json"
bad shape-mismatch "$B/shape" "model.layers.0.mlp.down_proj.weight" "has shape [128, 320]" "config.json implies [128, 256]"
mk single nan; f="$B/nan/model.safetensors"; sz=$(stat -c %s "$f")
printf '\xc0\x7f' | dd of="$f" bs=1 seek=$((sz - 2)) conv=notrunc 2>/dev/null
bad nan-weight "$B/nan" "model.safetensors" "holds NaN"
mk single inf; f="$B/inf/model.safetensors"
printf '\x80\x7f' | dd of="$f" bs=1 seek=$((sz - 2)) conv=notrunc 2>/dev/null
bad inf-weight "$B/inf" "holds Inf"
mk single unmapped; sed -i 's/"num_hidden_layers": 2/"num_hidden_layers": 1/' "$B/unmapped/config.json"
bad layer-past-count "$B/unmapped" "cannot map tensor" "model.layers.1."
# Qwen3 rerankers (Qwen3Model._is_qwen3_reranker: the folder's or config's name, or a README.md
# heading): convert makes a ranking model of them, anvil refuses
mk single Qwen3-Reranker-0.6B; sed -i 's/"Qwen2ForCausalLM"/"Qwen3ForCausalLM"/' "$B/Qwen3-Reranker-0.6B/config.json"
bad qwen3-reranker-name "$B/Qwen3-Reranker-0.6B" "a Qwen3 reranker (its name says Qwen3-Reranker)" "convert_hf_to_gguf.py"
mk Qwen3-Reranker-0.6B rr-card; printf -- '---\nlicense: apache-2.0\n---\n# Qwen3-Reranker-4B\n' > "$B/rr-card/README.md"
bad qwen3-reranker-card "$B/rr-card" "its README.md is a Qwen3-Reranker model card"
mk sharded eagle3; sed -i 's/"num_hidden_layers": 2/"num_hidden_layers": 1, "draft_vocab_size": 64/' "$B/eagle3/config.json"
bad eagle3-draft "$B/eagle3" "an EAGLE-3 draft model" "--target-model-dir"
# quantize and transcode straight from a damaged folder: the converter's error, nothing written
mkdir -p "$B/q.out"
"$ANVIL" quantize --quiet "$B/nan" "$B/q.out/x.gguf" Q4_K_M >/dev/null 2>"$T/err"; rc=$?
[ $rc = 1 ] && grep -q "model.safetensors.*holds NaN" "$T/err" && [ -z "$(ls -A "$B/q.out")" ] && pass ||
    fail "quantize HF_DIR with NaN: exit $rc, $(cat "$T/err"), wrote $(ls -A "$B/q.out")"
"$ANVIL" transcode --quiet --from "$B/inf" --out "$B/q.out/x.gguf" --dtype q8_0 >/dev/null 2>"$T/err"; rc=$?
[ $rc = 1 ] && grep -q "holds Inf" "$T/err" && [ -z "$(ls -A "$B/q.out")" ] && pass ||
    fail "transcode --from HF_DIR with Inf: exit $rc, $(cat "$T/err"), wrote $(ls -A "$B/q.out")"

if [ -d "$T/fp8/noscale" ]; then
    bad fp8-without-scale "$T/fp8/noscale" "model.layers.1.mlp.up_proj.weight" "has no" "_scale_inv"
fi
mk single badtok; printf '{"model": ' > "$B/badtok/tokenizer.json"
bad tokenizer-not-json "$B/badtok" "badtok/tokenizer.json"
mk single card; printf -- '---\nlicense:\n  name: x\n---\n' > "$B/card/README.md"
bad model-card-form "$B/card" "README.md" "\"license\" is not a plain string"

echo "hf_convert: $checks checks passed, $fails failed"
[ $fails = 0 ]
