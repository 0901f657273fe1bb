#!/usr/bin/env bash
# usage: hf_harden.sh ANVIL TESTDATA_HF
#
# Issue #41's model card, name and input-file defects, each as it was found
# and what anvil does now (exit code, message, what is written and where):
#   1. front matter of blank lines (the line array overflowed the heap);
#   2. a README.md that is exactly "---" (a NULL+1 read);
#   5. a default output name never leaves the folder: '/' and ".." in the
#      card's finetune/version/size_label, a name over 255 bytes refused;
#   7. README.md, config.json, tokenizer.model, tokenizer.json,
#      generation_config.json as a FIFO or a folder: refused at once, by what
#      they are ("not a regular file"), never read and never "missing";
#   8a. a 2 MB dash-separated _name_or_path refused at once (the heuristics
#      are linear below the 4096-byte bound); a card of 200k keys in one pass;
#   10. a 300-byte chat-template name written whole; quantize HF_DIR OUT with
#      a long name (no default name made); quantize HF_DIR TYPE writes inside
#      HF_DIR (sibling checkpoints do not share an output).
# Every case runs in seconds (the checkpoints are testdata's 1 MB ones).
set -u
ANVIL=$1 REF=$2
if [ ! -d "$REF/llama-spm-sharded" ]; then echo "SKIP: no checkpoints at $REF"; exit 77; fi
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fails=0 checks=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
pass() { checks=$((checks + 1)); }

# copy NAME DEST: a writable copy of a testdata checkpoint
copy() { rm -rf "$2"; mkdir -p "$(dirname "$2")"; cp -r "$REF/$1" "$2"; chmod -R u+w "$2"; }

# expect CODE MESSAGE_SUBSTRING ARGS...: exit code and a line of stdout/stderr (10 s at most)
expect() {
    local code=$1 msg=$2; shift 2
    timeout 10 "$ANVIL" "$@" >"$T/out" 2>"$T/err"
    local got=$?
    if [ "$got" != "$code" ]; then
        fail "anvil $* exited $got (expected $code): $(head -c 300 "$T/err")"
    elif [ -n "$msg" ] && ! cat "$T/out" "$T/err" | grep -qF -- "$msg"; then
        fail "anvil $*: no '$msg' in: $(cat "$T/out" "$T/err" | head -c 300)"
    else
        pass
    fi
}
# none DIR: no .gguf file was written in DIR (not recursive)
none() {
    if ls "$1"/*.gguf >/dev/null 2>&1; then fail "a .gguf was written in $1: $(ls "$1"/*.gguf)"; else pass; fi
}

M=$T/m
copy llama-spm-sharded "$M"
"$ANVIL" convert "$M" --dry-run >"$T/plain" 2>&1 || fail "the plain checkpoint does not convert"
plain=$(sed -n 's/^would write \([^:]*\):.*/\1/p' "$T/plain")
[ "$plain" = "$M/M-656K-BF16.gguf" ] && pass || fail "plain default name: '$plain'"

# ---- 1. front matter of blank lines (20, and 100000), then a key after them
printf -- '---\n' >"$M/README.md"; printf '\n%.0s' $(seq 20) >>"$M/README.md"
expect 0 "would write $M/M-656K-BF16.gguf" convert "$M" --dry-run
{ printf -- '---\n'; head -c 100000 /dev/zero | tr '\0' '\n'; printf 'finetune: Blank\n---\n'; } >"$M/README.md"
expect 0 "would write $M/M-656K-Blank-BF16.gguf" convert "$M" --dry-run
printf -- '---\r\n\r\n\r\nfinetune: Crlf\r\n---\r\n' >"$M/README.md"
expect 0 "would write $M/M-656K-Crlf-BF16.gguf" convert "$M" --dry-run

# ---- 2. README.md exactly "---" (no newline): no front matter
printf -- '---' >"$M/README.md"
expect 0 "would write $M/M-656K-BF16.gguf" convert "$M" --dry-run
printf -- '---\n' >"$M/README.md"
expect 0 "would write $M/M-656K-BF16.gguf" convert "$M" --dry-run

# ---- 8a. a card of 200000 keys (none read), a license list of 100000 items and a key read
# at its end: one pass
awk 'BEGIN { print "---"; for (i = 0; i < 200000; i++) print "k" i ": v"; print "license:"
             for (i = 0; i < 100000; i++) print "- l" i; print "finetune: Many"; print "---" }' >"$M/README.md"
start=$(date +%s)
expect 0 "would write $M/M-656K-Many-BF16.gguf" convert "$M" --dry-run
[ $(($(date +%s) - start)) -le 8 ] && pass || fail "a card of 200000 keys took over 8 s"
rm -f "$M/README.md"

# ---- 5. a default name never leaves the folder
E=$T/deep/a/b/evil-1B-
copy llama-spm-sharded "$E"
printf -- '---\nfinetune: /../../escaped\nversion: ../v/..\nsize_label: a/b\\c\n---\n' >"$E/README.md"
expect 0 "would write $E/" convert "$E" --dry-run
name=$(sed -n 's/^would write \([^:]*\):.*/\1/p' "$T/out")
case ${name#"$E/"} in
    */* | *..* | *\\*) fail "default name with a separator or '..': $name" ;;
    *) pass ;;
esac
[ "$name" = "$E/evil-a-b-c--.--.--escaped-.--v-.--BF16.gguf" ] && pass || fail "escaped name: $name"
expect 0 "" convert "$E" --quiet
[ -f "$name" ] && pass || fail "the escaped name was not written in its folder"
none "$T/deep"; none "$T/deep/a"; none "$T/deep/a/b"
# a default name over 255 bytes (a file name's limit) is refused, nothing written
printf -- '---\nfinetune: %s\n---\n' "$(head -c 300 /dev/zero | tr '\0' 'f')" >"$E/README.md"
rm -f "$E"/*.gguf
expect 1 "is over 255 bytes, the most a file name holds" convert "$E"
none "$E"
expect 0 "" convert "$E" "$T/given.gguf" --dry-run

# ---- 7 and 10. inputs that are not regular files: refused at once, by what they are
# nonfile KIND FILE CKPT ARGS...: FILE of CKPT made a FIFO or a folder, then anvil ARGS
nonfile() {
    local kind=$1 file=$2 ck=$3; shift 3
    mv "$ck/$file" "$T/saved" 2>/dev/null
    if [ "$kind" = fifo ]; then mkfifo "$ck/$file"; else mkdir "$ck/$file"; fi
    local what="'$ck/$file' is a FIFO, not a regular file"
    [ "$kind" = dir ] && what="$ck/$file is a folder, not a regular file"
    expect 1 "$what" "$@"
    grep -q "missing" "$T/err" && fail "$file as a $kind reported as missing"
    rm -rf "${ck:?}/$file"
    mv "$T/saved" "$ck/$file" 2>/dev/null
    none "$ck"
}
for kind in fifo dir; do
    for f in README.md config.json tokenizer.model generation_config.json; do
        nonfile $kind $f "$M" convert "$M" --dry-run
    done
    nonfile $kind README.md "$M" quantize "$M" "$T/q.gguf" Q8_0
    nonfile $kind README.md "$M" transcode --from "$M" --out "$T/t.gguf" --dtype q8_0
done
Q=$T/q3
copy qwen2-bpe "$Q"
for kind in fifo dir; do
    nonfile $kind tokenizer.json "$Q" convert "$Q" --dry-run
    nonfile $kind tokenizer_config.json "$Q" convert "$Q" --dry-run
done
# the Qwen3 reranker check reads README.md before the card reader does
sed -i 's/Qwen2ForCausalLM/Qwen3ForCausalLM/' "$Q/config.json"
nonfile fifo README.md "$Q" convert "$Q" --dry-run

# ---- 8a and 10. long _name_or_path values
# setnop CKPT COUNT PART [TAIL]: config.json's _name_or_path, PART- COUNT times then TAIL
setnop() {
    { printf '{"_name_or_path": "'; yes "$3-" | head -n "$2" | tr -d '\n'; printf '%s", ' "${4:-}"
        tail -c +2 "$1/config.json"; } >"$T/cfg" && mv "$T/cfg" "$1/config.json"
}
N=$T/n
copy llama-spm-sharded "$N"
setnop "$N" 700000 ab
start=$(date +%s)
expect 1 "config.json: _name_or_path is over 4096 bytes" convert "$N" --dry-run
[ $(($(date +%s) - start)) -le 5 ] && pass || fail "a 2 MB _name_or_path took over 5 s"
copy llama-spm-sharded "$N"
setnop "$N" 1300 1b ab
start=$(date +%s)
expect 1 "the default output name" convert "$N"
none "$N"
expect 0 "" convert "$N" "$T/long.gguf" --quiet
[ -f "$T/long.gguf" ] && pass || fail "convert with OUT and a long _name_or_path wrote nothing"
expect 0 "" quantize --quiet "$N" "$T/longq.gguf" Q8_0
[ -f "$T/longq.gguf" ] && pass || fail "quantize HF_DIR OUT with a long _name_or_path wrote nothing"
expect 0 "" transcode --from "$N" --out "$T/longt.gguf" --dtype q8_0 --quiet
[ $(($(date +%s) - start)) -le 20 ] && pass || fail "the 3.9 KB _name_or_path runs took over 20 s"

# ---- 10. quantize HF_DIR TYPE: the output inside HF_DIR, one per checkpoint
copy llama-spm-sharded "$T/sib/one"
copy llama-spm-sharded "$T/sib/two"
expect 0 "" quantize --quiet "$T/sib/one" Q8_0
expect 0 "" quantize --quiet "$T/sib/two/" Q8_0
[ -f "$T/sib/one/ggml-model-Q8_0.gguf" ] && [ -f "$T/sib/two/ggml-model-Q8_0.gguf" ] && pass ||
    fail "quantize HF_DIR TYPE did not write HF_DIR/ggml-model-Q8_0.gguf"
none "$T/sib"
expect 0 "" quantize --quiet "$T/sib/one" --target-bpw 8.5
[ -f "$T/sib/one/ggml-model-target.gguf" ] && pass || fail "--target-bpw: no HF_DIR/ggml-model-target.gguf"
none "$T/sib"

# ---- 10. a chat template name of 300 bytes: written whole, not "out of memory"
copy qwen2-bpe "$Q"
long=$(head -c 300 /dev/zero | tr '\0' 'x')
sed -i -e 's/"chat_template":/"chat_template_was":/' \
    -e "s|^{|{\"chat_template\": [{\"name\": \"$long\", \"template\": \"{{a}}\"}, {\"name\": \"default\", \"template\": \"{{b}}\"}], |" \
    "$Q/tokenizer_config.json"
expect 0 "" convert "$Q" "$T/chat.gguf" --quiet
if [ -f "$T/chat.gguf" ]; then
    LC_ALL=C grep -c -a -F "tokenizer.chat_template.$long" "$T/chat.gguf" >/dev/null && pass ||
        fail "the 300-byte chat template name is not in the output"
    LC_ALL=C grep -c -a -F "tokenizer.chat_template.${long}x" "$T/chat.gguf" >/dev/null &&
        fail "a longer chat template name than given"
fi

# ---- 11. a chat_template list of 1025 entries: refused quickly (the name
# lookups are linear each); 1024 still converts
chat_list() { # N: a list of N named templates in $Q/tokenizer_config.json
    copy qwen2-bpe "$Q"
    python3 - "$Q/tokenizer_config.json" "$1" <<'PY'
import json, sys
p, n = sys.argv[1], int(sys.argv[2])
c = json.load(open(p))
c["chat_template"] = [{"name": "t%d" % i, "template": "{{x}}"} for i in range(n - 1)] + \
    [{"name": "default", "template": "{{d}}"}]
json.dump(c, open(p, "w"))
PY
}
chat_list 1025
expect 1 "chat_template lists 1025 templates; anvil converts at most 1024" convert "$Q" "$T/chat2.gguf" --quiet
[ -f "$T/chat2.gguf" ] && fail "a refused chat_template list left $T/chat2.gguf"
chat_list 1024
expect 0 "" convert "$Q" "$T/chat3.gguf" --quiet

echo "hf_harden: $checks checks, $fails failures"
[ "$fails" = 0 ]
