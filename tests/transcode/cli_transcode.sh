#!/bin/sh
# anvil transcode / merge-lora / demo --model end to end.
#   cli_transcode.sh ANVIL TC_SYNTH_MODEL SHARED_TESTDATA
set -u
anvil=$1
synth=$2
shared=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/anvil-tc-cli-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$synth" "$tmp/m.gguf" small || fail "synthetic model"

# --dry-run: the plan and the final size, nothing written.
"$anvil" transcode --from "$tmp/m.gguf" --out "$tmp/o.gguf" --dtype q4_K --dry-run > "$tmp/plan.txt" || fail "dry-run"
[ -e "$tmp/o.gguf" ] && fail "dry-run wrote the output"
grep -q "plan for" "$tmp/plan.txt" || fail "dry-run: no plan"
grep -q "blk.0.attn_q.weight .* f16     -> q4_K" "$tmp/plan.txt" || fail "dry-run: no f16 -> q4_K line"
grep -q "blk.0.attn_norm.weight .*not a matrix weight" "$tmp/plan.txt" || fail "dry-run: norm not kept"
grep -q "on disk in 1 file" "$tmp/plan.txt" || fail "dry-run: no final size"

# --quiet prints nothing; off a TTY there is no progress line either.
"$anvil" transcode --from "$tmp/m.gguf" --out "$tmp/o.gguf" --dtype q4_K --quiet > "$tmp/q.txt" 2> "$tmp/q.err" || fail "quiet run"
[ -s "$tmp/q.txt" ] && fail "--quiet printed to stdout"
[ -s "$tmp/q.err" ] && fail "progress or noise on stderr off a TTY"
[ -f "$tmp/o.gguf" ] || fail "no output"
"$anvil" inspect "$tmp/o.gguf" | grep -q "general.file_type .*= 15" || fail "file_type is not 15 (Q4_K_M)"

# The report and the JSON summary.
"$anvil" transcode --from "$tmp/m.gguf" --out "$tmp/o2.gguf" --dtype q4_K --threads 2 > "$tmp/report.txt" 2>/dev/null || fail "run"
grep -q "summary by target type" "$tmp/report.txt" || fail "no quality summary"
grep -q "peak RSS" "$tmp/report.txt" || fail "no peak RSS"
grep -q "MB/s of source read" "$tmp/report.txt" || fail "no rate"
cmp -s "$tmp/o.gguf" "$tmp/o2.gguf" || fail "output depends on the thread count"
"$anvil" transcode --from "$tmp/m.gguf" --out "$tmp/o3.gguf" --dtype q8_0 --tensor-type 'attn_v=q6_K' --json > "$tmp/s.json" || fail "--json"
if command -v python3 >/dev/null 2>&1; then
    python3 - "$tmp/s.json" "$tmp/o3.gguf" <<'PY' || fail "--json content"
import json, os, sys
d = json.load(open(sys.argv[1]))
assert d["out_file_bytes"] == os.path.getsize(sys.argv[2]), "size"
assert d["peak_rss_bytes"] > 0 and d["mb_per_s"] > 0 and d["file_type"] == 7
by = {t["name"]: t for t in d["tensors"]}
assert by["blk.0.attn_v.weight"]["to"] == "q6_K" and by["blk.0.attn_v.weight"]["rule"] == "--tensor-type attn_v"
assert by["blk.0.attn_q.weight"]["to"] == "q8_0" and by["blk.0.attn_q.weight"]["snr_db"] > 30
assert by["blk.0.attn_norm.weight"]["encoded"] is False
types = {q["type"] for q in d["quality_by_type"]}
assert types == {"q8_0", "q6_K"}, types
PY
fi

# A split output.
"$anvil" transcode --from "$tmp/m.gguf" --out "$tmp/sp.gguf" --dtype q8_0 --split-max-size 300K --quiet || fail "split output"
first=$(ls "$tmp"/sp-00001-of-*.gguf 2>/dev/null | head -n 1)
[ -n "$first" ] || fail "no split parts"
"$anvil" merge "$first" "$tmp/sp-merged.gguf" > /dev/null || fail "merge of the parts"

# --split-max-tensors 2: ceil(tensors / 2) parts, cut as `anvil split` cuts
# (the same bytes), readable as a set, holding the unsplit output's tensors.
"$anvil" transcode --from "$tmp/m.gguf" --out "$tmp/whole.gguf" --dtype q8_0 --quiet || fail "unsplit q8_0"
"$anvil" transcode --from "$tmp/m.gguf" --out "$tmp/mt.gguf" --dtype q8_0 --split-max-tensors 2 > "$tmp/mt.txt" || fail "--split-max-tensors"
n=$("$anvil" inspect --json "$tmp/m.gguf" | grep -o '"n_tensors":[0-9]*' | head -n 1 | cut -d: -f2)
want=$(( (n + 1) / 2 ))
parts=$(ls "$tmp"/mt-*-of-*.gguf | wc -l)
[ "$n" -gt 2 ] && [ "$parts" -eq "$want" ] || fail "--split-max-tensors 2: $parts parts for $n tensors, expected $want"
[ -e "$tmp/mt.gguf" ] && fail "--split-max-tensors also wrote the unsplit name"
ls -a "$tmp" | grep -q '\.anvil-' && fail "--split-max-tensors left a temp file: $(ls -a "$tmp" | grep '\.anvil-')"
grep -q "on disk in $want files" "$tmp/mt.txt" || fail "--split-max-tensors: the report does not name $want files"
mt1=$(printf '%s/mt-00001-of-%05d.gguf' "$tmp" "$want")
"$anvil" inspect "$mt1" > "$tmp/mt-inspect.txt" || fail "inspect of the --split-max-tensors set"
grep -q "part $want: " "$tmp/mt-inspect.txt" || fail "inspect does not list part $want"
"$anvil" merge "$mt1" "$tmp/mt-merged.gguf" > /dev/null || fail "merge of the --split-max-tensors set"
cmp -s "$tmp/mt-merged.gguf" "$tmp/whole.gguf" || fail "--split-max-tensors: the tensors differ from the unsplit output"
"$anvil" split "$tmp/whole.gguf" "$tmp/ref" --split-max-tensors 2 --quiet || fail "anvil split of the unsplit output"
for f in "$tmp"/mt-*-of-*.gguf; do
    cmp -s "$f" "$tmp/ref-${f##*/mt-}" || fail "${f##*/} differs from anvil split's part"
done
"$anvil" transcode --from "$tmp/m.gguf" --out "$tmp/x.gguf" --dtype q8_0 --split-max-tensors 2 --split-max-size 1M > /dev/null 2>&1
[ $? -eq 2 ] || fail "both split limits: not a usage error"

# Refusals: exit 2 for usage, 1 with the reason otherwise; no output left.
"$anvil" transcode --from "$tmp/m.gguf" --out "$tmp/x.gguf" > /dev/null 2> "$tmp/e.txt"
[ $? -eq 2 ] || fail "no target type: not a usage error"
"$anvil" transcode --from "$tmp/m.gguf" --out "$tmp/x.gguf" --dtype q9_K > /dev/null 2>&1
[ $? -eq 2 ] || fail "unknown type: not a usage error"
"$anvil" transcode --from "$tmp/m.gguf" --out "$tmp/x.gguf" --dtype iq2_xxs 2> "$tmp/e.txt" > /dev/null
[ $? -eq 1 ] || fail "decode-only type accepted"
grep -q "importance matrix" "$tmp/e.txt" || fail "decode-only: no reason"
"$anvil" transcode --from "$tmp/m.gguf" --out "$tmp/x.gguf" --dtype q4_K --tensor-type 'attn_(=q8_0' 2> "$tmp/e.txt" > /dev/null
[ $? -eq 2 ] || fail "bad regex: not a usage error"
[ -e "$tmp/x.gguf" ] && fail "a refused run left an output"

# merge-lora: --alpha is required; an adapter for another model names its tensor.
"$anvil" merge-lora --from "$tmp/m.gguf" --adapters "$tmp/none" --out "$tmp/x.gguf" 2> "$tmp/e.txt" > /dev/null
[ $? -eq 2 ] || fail "merge-lora without --alpha: not a usage error"
grep -q "alpha is required" "$tmp/e.txt" || fail "merge-lora: --alpha message"
if [ -f "$shared/peft-gpt2-lora-adapter_model.safetensors" ]; then
    "$anvil" merge-lora --from "$tmp/m.gguf" --adapters "$shared/peft-gpt2-lora-adapter_model.safetensors" \
        --alpha 16 --out "$tmp/x.gguf" 2> "$tmp/e.txt" > /dev/null
    [ $? -eq 1 ] || fail "merge-lora onto the wrong base succeeded"
    grep -q "base_model.model.transformer.h.0.attn.c_attn.lora_A.weight\|base_model.model.score.weight" "$tmp/e.txt" \
        || fail "merge-lora: the error does not name the adapter tensor"
    [ -e "$tmp/x.gguf" ] && fail "a refused merge left an output"
else
    echo "note: shared testdata absent; merge-lora file case skipped"
fi

# merge-lora's report names the target type a plugin defines (it printed
# "?" when only `transcode` gave the report its context): a rank-4 adapter
# for blk.0.attn_q.weight, written here, merged with --dtype ptqtp2.
python3 - "$tmp/a.safetensors" <<'PY' || fail "writing the adapter"
import json, struct, sys
ts = {"blk.0.attn_q.weight.lora_a": [4, 256], "blk.0.attn_q.weight.lora_b": [256, 4]}
hdr, off, data = {}, 0, b""
for n, s in ts.items():
    k = s[0] * s[1]
    hdr[n] = {"dtype": "F32", "shape": s, "data_offsets": [off, off + 4 * k]}
    data += struct.pack("<%df" % k, *([0.01] * k))
    off += 4 * k
h = json.dumps(hdr).encode()
h += b" " * ((8 - len(h) % 8) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + data)
PY
"$anvil" merge-lora --from "$tmp/m.gguf" --adapters "$tmp/a.safetensors" --alpha 1 --dtype ptqtp2 \
    --out "$tmp/x.gguf" --dry-run > "$tmp/ml.txt" || fail "merge-lora --dtype ptqtp2 --dry-run"
grep -q "blk.0.attn_q.weight .* f16     -> ptqtp2 .*\[rewritten\]" "$tmp/ml.txt" \
    || fail "merge-lora --dry-run does not name ptqtp2"
grep -q -- "-> ?" "$tmp/ml.txt" && fail "merge-lora --dry-run shows an unnamed type"

# --tensor-type is read as llama-quantize reads it (the one parser): the
# pattern ends at the first '=' and is lower-cased, so ATTN_V matches attn_v.
"$anvil" transcode --from "$tmp/m.gguf" --out "$tmp/o.gguf" --dtype q4_K --tensor-type 'ATTN_V=q6_K' --dry-run \
    > "$tmp/plan.txt" || fail "--tensor-type ATTN_V=q6_K"
grep -q "blk.0.attn_v.weight .* f16     -> q6_K" "$tmp/plan.txt" || fail "--tensor-type: pattern not lower-cased"

# The demo's main job.
"$anvil" demo --model > "$tmp/demo.txt" 2>&1 || fail "demo --model"
grep -q "q4_K .*general.quantization_version\|summary by target type" "$tmp/demo.txt" || fail "demo: no report"
grep -q "mat-vec y = W.x" "$tmp/demo.txt" || fail "demo: no mat-vec"
echo "transcode CLI: OK"
