#!/usr/bin/env bash
# usage: [NPM_TOK=node_modules] hf_vocab_oracle.sh TEST_HF_VOCAB ORACLE_TOOLS TESTDATA_HF LLAMA_SRC
#
# The tokenizer paths the reference pairs do not take (a llama-2 style
# tokenizer.json, SentencePiece with added tokens and padding, CodeLlama's
# tail, a padded Qwen vocabulary with a list-form chat template, Llama 3.1's
# TemplateProcessing, merges.txt): make_vocab_cases.py writes the folders, the real
# convert_hf_to_gguf.py (through the hf-oracle script) converts each
# --vocab-only, and test_hf_vocab --case compares every tokenizer KV. With NPM_TOK
# (see make_vocab_cases.py): the real Qwen3 and Llama 2 tokenizers too.
# Skips (77) without /usr/bin/python3's torch, numpy and sentencepiece or
# without the llama.cpp tree.
set -u
BIN=$1 TOOLS=$2 REF=$3 LLAMA_SRC=$4
PY=/usr/bin/python3
if ! { [ -x $PY ] && $PY -c "import torch, numpy, sentencepiece" 2>/dev/null; } || [ ! -f "$LLAMA_SRC/convert_hf_to_gguf.py" ] || [ ! -d "$REF" ]; then
    echo "SKIP: needs /usr/bin/python3 with torch, numpy, sentencepiece, $LLAMA_SRC/convert_hf_to_gguf.py and $REF"
    exit 77
fi
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
$PY "$(dirname "$0")/make_vocab_cases.py" "$T" "$TOOLS" "$REF" > "$T/cases" || { echo "FAIL: make_vocab_cases.py"; exit 1; }
args=()
while read -r name arch pre; do
    [ "$pre" = - ] && pre=
    (cd "$T" && FORCE_PRE=$pre LLAMA_SRC=$LLAMA_SRC $PY "$TOOLS/convert_here.py" "$name" --vocab-only \
        --outfile "$name.vocab.gguf" > "$name.log" 2>&1) || { echo "FAIL: convert_hf_to_gguf.py $name:"; tail -3 "$T/$name.log"; exit 1; }
    args+=("$T/$name" "$arch" "$T/$name.vocab.gguf")
done < "$T/cases"
"$BIN" --case "${args[@]}"
