#!/usr/bin/env bash
# usage: hf_checks.sh ANVIL TESTDATA_HF FP8_PAIRS
#
# Issue 41's defects, each as the exact behaviour now (exit code, message,
# input unchanged, nothing written): an OUT that is an input of the run
# (convert, quantize, transcode; HF folders and GGUF files), incomplete
# checkpoints (shard k-of-N missing, an index leaving a shard out, an empty
# weight_map, an empty model.safetensors, a layer missing a tensor), a
# tensor with 0 columns (q8_0 divided by it), a rope factor of 1e400, and
# FP8 scales on float weights (the oracle's files, byte for byte, also
# with --fp8-as-q8: a scaled float weight counts as dequantized from FP8).
set -u
ANVIL=$1 REF=$2 FP8=$3
[ -d "$REF" ] || { echo "SKIP: no $REF"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fails=0 checks=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
pass() { checks=$((checks + 1)); }

# expect NAME RC TEXT -- CMD...: exit RC, stderr holds TEXT
expect() {
    local name=$1 want=$2 text=$3; shift 4
    "$@" >/dev/null 2>"$T/err"; local rc=$?
    [ $rc = "$want" ] || { fail "$name: exit $rc, want $want ($(cat "$T/err"))"; return 1; }
    [ -z "$text" ] || grep -qF -- "$text" "$T/err" || { fail "$name: message lacks '$text': $(cat "$T/err")"; return 1; }
    pass
}
# same NAME A B: A's bytes unchanged (B is its copy)
same() { cmp -s "$2" "$3" && pass || fail "$1: $2 was changed"; }

cp -r "$REF/llama3-bpe" "$T/m"; cp -r "$REF/llama-spm-sharded" "$T/s"; chmod -R u+w "$T"
cp -r "$T/m" "$T/m.orig"; cp -r "$T/s" "$T/s.orig"

# ---- OUT is an input of the run
for f in model.safetensors config.json tokenizer.json; do
    expect "convert OUT=$f" 1 "is the input $T/m/$f" -- "$ANVIL" convert "$T/m" "$T/m/$f" --quiet
    same "convert OUT=$f" "$T/m/$f" "$T/m.orig/$f"
done
expect "convert OUT=shard" 1 "is the input" -- "$ANVIL" convert "$T/s" "$T/s/model-00002-of-00002.safetensors"
same "convert OUT=shard" "$T/s/model-00002-of-00002.safetensors" "$T/s.orig/model-00002-of-00002.safetensors"
expect "convert OUT=index" 1 "is the input" -- "$ANVIL" convert "$T/s" "$T/s/model.safetensors.index.json"
same "convert OUT=index" "$T/s/model.safetensors.index.json" "$T/s.orig/model.safetensors.index.json"
expect "convert OUT=tokenizer.model" 1 "is the input" -- "$ANVIL" convert "$T/s" "$T/s/tokenizer.model"
same "convert OUT=tokenizer.model" "$T/s/tokenizer.model" "$T/s.orig/tokenizer.model"
ln -s "$T/m/model.safetensors" "$T/link.gguf"
expect "convert OUT=link to a shard" 1 "is the input" -- "$ANVIL" convert "$T/m" "$T/link.gguf"
same "convert OUT=link" "$T/m/model.safetensors" "$T/m.orig/model.safetensors"
expect "convert OUT=a/../shard" 1 "is the input" -- "$ANVIL" convert "$T/m" "$T/m/../m/config.json" --outtype q8_0
expect "quantize HF_DIR OUT=shard" 1 "is the input" -- "$ANVIL" quantize "$T/m" "$T/m/model.safetensors" Q8_0
same "quantize HF_DIR OUT=shard" "$T/m/model.safetensors" "$T/m.orig/model.safetensors"
expect "transcode --from HF_DIR --out config" 1 "is the input" -- \
    "$ANVIL" transcode --from "$T/m" --out "$T/m/config.json" --dtype q8_0
same "transcode OUT=config" "$T/m/config.json" "$T/m.orig/config.json"
"$ANVIL" convert "$T/m" "$T/in.gguf" --outtype f16 --quiet || fail "convert to in.gguf"
cp "$T/in.gguf" "$T/in.orig"
expect "quantize IN IN" 1 "is the input" -- "$ANVIL" quantize "$T/in.gguf" "$T/in.gguf" Q8_0
same "quantize IN IN" "$T/in.gguf" "$T/in.orig"
expect "transcode IN IN" 1 "is the input" -- "$ANVIL" transcode --from "$T/in.gguf" --out "$T/in.gguf" --dtype q8_0
same "transcode IN IN" "$T/in.gguf" "$T/in.orig"
ln -s in.gguf "$T/in-link.gguf"
expect "quantize IN link-to-IN" 1 "is the input" -- "$ANVIL" quantize "$T/in.gguf" "$T/in-link.gguf" Q8_0
same "quantize IN link" "$T/in.gguf" "$T/in.orig"
# an output beside the shards is still fine
"$ANVIL" convert "$T/m" "$T/m/out.gguf" --quiet && [ -s "$T/m/out.gguf" ] && pass || fail "convert into the folder"
rm -f "$T/m/out.gguf"

# ---- incomplete checkpoints: exit 1, what is missing named, nothing written
# bad NAME DIR TEXT [convert options]
bad() {
    local name=$1 dir=$2 text=$3; shift 3
    mkdir -p "$T/out/$name"
    expect "$name" 1 "$text" -- "$ANVIL" convert "$dir" "$T/out/$name/x.gguf" "$@"
    [ -z "$(ls -A "$T/out/$name")" ] && pass || fail "$name: wrote $(ls "$T/out/$name")"
}
mk() { rm -rf "$T/$2"; cp -r "$T/$1.orig" "$T/$2"; }
mk s noindex; rm "$T/noindex/model.safetensors.index.json" "$T/noindex/model-00002-of-00002.safetensors"
bad shard-missing "$T/noindex" "model-00002-of-00002.safetensors is missing"
mk s leftout; python3 - "$T/leftout/model.safetensors.index.json" <<'PY'
import json, sys
p = sys.argv[1]; j = json.load(open(p))
j["weight_map"] = {k: v for k, v in j["weight_map"].items() if not v.startswith("model-00002")}
json.dump(j, open(p, "w"))
PY
bad index-leaves-shard "$T/leftout" "maps no tensor to model-00002-of-00002.safetensors"
mk s emptymap; echo '{"metadata": {}, "weight_map": {}}' > "$T/emptymap/model.safetensors.index.json"
bad empty-weight-map "$T/emptymap" '"weight_map" is empty'
mk m emptyst; printf '\002\000\000\000\000\000\000\000{}' > "$T/emptyst/model.safetensors"
bad empty-safetensors "$T/emptyst" "holds no tensors"
mk m zerobytes; : > "$T/zerobytes/model.safetensors"
bad zero-byte-safetensors "$T/zerobytes" "model.safetensors"
# edit DIR PYTHON: the tensors of DIR/model.safetensors as t{name: [dtype, shape, bytes]}, rewritten after PYTHON
edit() {
    python3 - "$1/model.safetensors" "$2" <<'PY'
import json, struct, sys
p = sys.argv[1]; b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n]); d = b[8 + n:]
t = {k: [v["dtype"], v["shape"], d[v["data_offsets"][0]:v["data_offsets"][1]]] for k, v in h.items() if k != "__metadata__"}
exec(sys.argv[2])
o, hd, blobs = 0, {}, []
for k in sorted(t):
    hd[k] = {"dtype": t[k][0], "shape": t[k][1], "data_offsets": [o, o + len(t[k][2])]}; blobs.append(t[k][2]); o += len(t[k][2])
hj = json.dumps(hd).encode(); hj += b" " * ((8 - len(hj) % 8) % 8)
open(p, "wb").write(struct.pack("<Q", len(hj)) + hj + b"".join(blobs))
PY
}
mk m nolayer; edit "$T/nolayer" 'del t["model.layers.1.mlp.up_proj.weight"]'
bad layer-missing "$T/nolayer" "layer 1 has no tensor that becomes blk.1.ffn_up.weight"
mk m noembd; edit "$T/noembd" 'del t["model.embed_tokens.weight"]'
bad no-token-embd "$T/noembd" "no tensor that becomes token_embd.weight"

# ---- 0 columns with hidden_size missing: refused before encoding (q8_0 divided by it)
mk m zerocol; edit "$T/zerocol" 't["model.layers.0.mlp.down_proj.weight"] = ["BF16", [128, 0], b""]'
sed -i '/"hidden_size"/d' "$T/zerocol/config.json"
bad zero-columns "$T/zerocol" "has a dimension of 0" --outtype q8_0
mkdir -p "$T/out/zq"
expect "quantize HF_DIR zero columns" 1 "has a dimension of 0" -- "$ANVIL" quantize "$T/zerocol" "$T/out/zq/x.gguf" Q8_0
expect "transcode HF_DIR zero columns" 1 "has a dimension of 0" -- \
    "$ANVIL" transcode --from "$T/zerocol" --out "$T/out/zq/y.gguf" --dtype q8_0
[ -z "$(ls -A "$T/out/zq")" ] && pass || fail "zero columns: wrote $(ls "$T/out/zq")"

# ---- rope_scaling.factor 1e400: no Inf in rope_freqs.weight
mk m rope; sed -i 's/"factor": 8.0/"factor": 1e400/' "$T/rope/config.json"
bad rope-inf "$T/rope" "must be finite"
mkdir -p "$T/out/rt"
expect "transcode rope 1e400" 1 "must be finite" -- "$ANVIL" transcode --from "$T/rope" --out "$T/out/rt/y.gguf" --dtype q8_0

# ---- vocab_size bounded by the token embedding (was: 570 MB of [PADn] tokens), --vocab-only too
mk m vocab; sed -i 's/"vocab_size": 2304/"vocab_size": 20000000/; /"hidden_size"/d' "$T/vocab/config.json"
bad vocab-size "$T/vocab" "vocab_size 20000000, but" --vocab-only
bad vocab-size-full "$T/vocab" "model.embed_tokens.weight has only 2304 rows"

# ---- smaller: one prefix on a shard's message, top_k must be whole, strict sizes and weights (exit 2)
mk m hdr; printf '\377\377\377\377\000\000\000\000{}' > "$T/hdr/model.safetensors"
bad shard-header "$T/hdr" "hdr/model.safetensors: header length 4294967295"
grep -qF "model.safetensors: : " "$T/err" && fail "doubled prefix: $(cat "$T/err")" || pass
mk m topk; echo '{"top_k": 1.5}' > "$T/topk/generation_config.json"
bad top-k-fraction "$T/topk" "general.sampling.top_k must be a whole number"
for s in 0x100000 " 2M" "2M " 1e6 "" .; do
    expect "--target-size '$s'" 2 "invalid --target-size" -- \
        "$ANVIL" quantize --dry-run "$T/in.gguf" "$T/out/ts.gguf" --target-size "$s"
done
expect "--target-size 2M" 0 "" -- "$ANVIL" quantize --dry-run --quiet "$T/in.gguf" "$T/out/ts.gguf" --target-size 2M
for w in "output=" "output= 1" "output=0x1" "bogus=1" "output"; do
    expect "--target-weights '$w'" 2 "invalid --target-weights" -- \
        "$ANVIL" quantize --dry-run "$T/in.gguf" "$T/out/ts.gguf" --target-size 2M --target-weights "$w"
done
expect "--target-weights output=2" 0 "" -- \
    "$ANVIL" quantize --dry-run --quiet "$T/in.gguf" "$T/out/ts.gguf" --target-size 2M --target-weights output=2,attn_v=0.5
[ ! -e "$T/out/ts.gguf" ] && pass || fail "a dry run wrote $T/out/ts.gguf"

# ---- FP8 scales on F32/F16/BF16 weights: dequant_simple's bytes (NAME.q8fp8-T: --fp8-as-q8 --outtype T)
for g in "$FP8"/*.gguf; do
    b=$(basename "$g" .gguf); dir=${b%.*}; opt=${b##*.}
    case $opt in q8fp8-*) set -- --fp8-as-q8 --outtype "${opt#q8fp8-}" ;; *) set -- --outtype "$opt" ;; esac
    "$ANVIL" convert "$FP8/$dir" "$T/$b.gguf" "$@" --quiet 2>"$T/err" || { fail "convert $b: $(cat "$T/err")"; continue; }
    cmp -s "$T/$b.gguf" "$g" && pass || fail "$b differs from convert_hf_to_gguf.py's: $(cmp "$T/$b.gguf" "$g" | head -1)"
done

echo "hf_checks: $checks checks, $fails failures"
[ "$fails" = 0 ]
