#!/bin/sh
# Every `anvil` command with good and bad arguments: the exit code (0 done,
# 1 the work failed, 2 usage error), the first line of stderr, and -- with
# --json -- that stdout is one document following host/cli/JSON.md.
#
#   cli_suite.sh ANVIL JSON_CHECK JSON.md GGUF_CORPUS TC_SYNTH_MODEL SHARED_TESTDATA TESTS_DATA
set -u
anvil=$1
json_check=$2
schema=$3
corpus=$4
synth=$5
shared=$6
tdata=$7
tmp=$(mktemp -d "${TMPDIR:-/tmp}/anvil-cli-suite-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0
checks=0

fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# expect CODE 'GLOB' ARGS...: anvil ARGS exits CODE and the first line of its
# stderr matches GLOB ('' for an empty stderr, '*' for anything).
expect() {
    code=$1
    glob=$2
    shift 2
    checks=$((checks + 1))
    "$anvil" "$@" > "$tmp/out" 2> "$tmp/err" < /dev/null
    rc=$?
    first=$(head -n 1 "$tmp/err")
    if [ "$rc" -ne "$code" ]; then
        fail "anvil $*: exit $rc, expected $code (stderr: $first)"
        return
    fi
    # shellcheck disable=SC2254
    case "$first" in
        $glob) ;;
        *) fail "anvil $*: stderr starts with '$first', expected '$glob'" ;;
    esac
}

# jexpect CODE 'GLOB' ARGS...: the same with --json appended, and stdout must
# be one valid document (the command's, or the error document).
jexpect() {
    expect "$@" --json
    checks=$((checks + 1))
    if ! "$json_check" "$schema" "$tmp/out" 2> "$tmp/jerr"; then
        shift 2
        fail "anvil $* --json: $(head -n 3 "$tmp/jerr" | tr '\n' ' ')"
    fi
}

# ---- inputs ------------------------------------------------------------------
"$synth" "$tmp/m.gguf" small > /dev/null || { echo "FAIL: synthetic model"; exit 1; }
gguf=$corpus/base_ok.gguf
[ -f "$shared/stories260K.v3.gguf" ] && gguf=$shared/stories260K.v3.gguf
st=$tdata/hf-samples_overall.safetensors
damaged=$corpus/row_blocks.gguf
[ -f "$shared/tinyllamas-stories-260k-q8_0.v2.gguf" ] && damaged=$shared/tinyllamas-stories-260k-q8_0.v2.gguf
printf '\001\002\003\004%.0s' $(seq 1 32) > "$tmp/x.f32"   # 32 floats of junk bits (finite)
i=0; : > "$tmp/ramp.f32"
while [ $i -lt 64 ]; do printf '\000\000\200\077' >> "$tmp/ramp.f32"; i=$((i + 1)); done   # 64 x 1.0f

# ---- global -------------------------------------------------------------------
expect 0 '' --help
expect 0 '' --version
expect 0 '' help
expect 2 'anvil: no command given' 
expect 2 "anvil: unknown command 'frobnicate'" frobnicate
jexpect 2 "anvil: unknown command 'frobnicate'" frobnicate
expect 2 "anvil: unknown option '--bogus'" --bogus
expect 2 'anvil: --config needs a file' --config
for c in plugins codec bench inspect meta reemit split merge transcode quantize tokenize perplexity imatrix merge-lora demo help; do
    expect 0 '' help "$c"
    expect 0 '' "$c" --help
    grep -q "^usage: anvil $c" "$tmp/out" || fail "$c --help: no usage line"
done
expect 2 "anvil help: unknown command 'nope'" help nope
expect 2 "anvil help: one command at a time*" help inspect split
expect 0 '' help --man "$tmp/anvil.1"
grep -q '^\.TH ANVIL 1' "$tmp/anvil.1" || fail "help --man: not a man page"
expect 0 '' help --bash-completion "$tmp/anvil.bash"
grep -q 'complete -o filenames -F _anvil anvil' "$tmp/anvil.bash" || fail "help --bash-completion"
"$anvil" demo --help | grep -q '\\n' && fail "demo --help prints a literal \\n"
checks=$((checks + 1))
# The man page holds every command's --help text (the same strings).
for c in plugins codec bench inspect meta reemit split merge transcode quantize tokenize perplexity imatrix merge-lora demo help; do
    checks=$((checks + 1))
    grep -q "^\.SS $c\$" "$tmp/anvil.1" || fail "the man page has no section for $c"
done
# The completion completes commands, options and type names.
if command -v bash > /dev/null 2>&1; then
    complete_words() {
        bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _anvil; echo "${COMPREPLY[*]}"' \
            sh "$tmp/anvil.bash" "$@"
    }
    checks=$((checks + 4))
    [ "$(complete_words anvil tran)" = "transcode" ] || fail "completion: commands"
    [ "$(complete_words anvil split in out --split-max-t)" = "--split-max-tensors" ] || fail "completion: options"
    [ "$(complete_words anvil transcode --dtype q4_)" = "q4_0 q4_1 q4_K" ] || fail "completion: types"
    [ "$(complete_words anvil meta "")" = "get set delete rename" ] || fail "completion: meta subcommands"
    checks=$((checks + 4))
    [ "$(cd "$tmp" && complete_words anvil imatrix stat)" = "stats" ] || fail "completion: imatrix subcommands"
    [ "$(complete_words anvil imatrix m.gguf t.txt --process-o)" = "--process-output" ] || fail "completion: imatrix options"
    [ "$(complete_words anvil perplexity m.gguf t.txt --base-l)" = "--base-logits" ] || fail "completion: perplexity options"
    [ "$(complete_words anvil perp)" = "perplexity" ] || fail "completion: perplexity"
else
    echo "note: no bash; completion not exercised"
fi

# ---- plugins, codec, bench, demo ---------------------------------------------
expect 0 '' plugins
jexpect 0 '' plugins
expect 2 "anvil plugins: unknown argument '--bogus'" plugins --bogus
jexpect 0 '' codec list
expect 2 "anvil codec list: unknown option '--bogus'" codec list --bogus
jexpect 2 "anvil codec list: unknown option '--bogus'" codec list --bogus
expect 2 'anvil codec: say what to do*' codec
expect 2 "anvil codec: unknown subcommand 'explode'*" codec explode
expect 0 'encoded 64 values as q8_0*' codec encode q8_0 "$tmp/ramp.f32" "$tmp/ramp.q8"
jexpect 0 '' codec encode q8_0 "$tmp/ramp.f32" "$tmp/ramp.q8"
[ "$(wc -c < "$tmp/ramp.q8")" -eq 68 ] || fail "codec encode: not 2 q8_0 blocks"
jexpect 0 '' codec decode q8_0 "$tmp/ramp.q8" "$tmp/back.f32"
[ "$(wc -c < "$tmp/back.f32")" -eq 256 ] || fail "codec decode: not 64 floats"
expect 2 "anvil codec encode: unknown type 'q7_7'*" codec encode q7_7 "$tmp/ramp.f32" "$tmp/no.bin"
jexpect 2 "anvil codec encode: unknown type 'q7_7'*" codec encode q7_7 "$tmp/ramp.f32" "$tmp/no.bin"
expect 2 'anvil codec encode: missing OUT*' codec encode q8_0 "$tmp/ramp.f32"
# IQ2_XXS without an importance matrix: a missing option (2), llama.cpp's reason.
cat "$tmp/ramp.f32" "$tmp/ramp.f32" "$tmp/ramp.f32" "$tmp/ramp.f32" > "$tmp/ramp256.f32"
expect 2 'anvil codec encode: iq2_xxs needs an importance matrix*pass --imatrix FILE*' codec encode iq2_xxs "$tmp/ramp256.f32" "$tmp/no.bin"
jexpect 2 'anvil codec encode: iq1_s needs an importance matrix*' codec encode iq1_s "$tmp/ramp256.f32" "$tmp/no.bin"
[ -e "$tmp/no.bin" ] && fail "codec encode iq2_xxs without --imatrix left an output"
expect 0 'encoded 256 values as iq2_xxs*' codec encode iq2_xxs "$tmp/ramp256.f32" "$tmp/ramp.iq2" --imatrix "$tmp/ramp256.f32"
expect 2 "anvil codec decode: unexpected argument*" codec decode q8_0 a b c d
expect 1 'anvil codec decode: *nope*' codec decode q8_0 "$tmp/nope.bin" "$tmp/no.f32"
jexpect 1 'anvil codec decode: *nope*' codec decode q8_0 "$tmp/nope.bin" "$tmp/no.f32"
expect 2 "anvil codec encode: the output '*' is a folder*" codec encode q8_0 "$tmp/ramp.f32" "$tmp"
jexpect 0 '' bench --type q8_0 --rows 64 --k 256 --iters 2 --no-ggml
jexpect 0 '' bench --encode --type q4_K --rows 8 --k 512 --iters 1 --threads 1 --no-ggml
expect 2 'anvil bench: --rows takes*' bench --rows 0
# Float weights (named) and GEMM (--m): the (F, F32) kernels.
jexpect 0 '' bench --type f16 --type bf16 --type f32 --rows 64 --k 256 --iters 2 --no-ggml
grep -q '"type":"bf16","variant":"[^"]*","threads":1,"rows":64,"k":256,"m":1' "$tmp/out" || fail "bench bf16: $(cat "$tmp/out")"
jexpect 0 '' bench --type f32 --type q8_0 --m 5 --rows 64 --k 256 --iters 2 --no-ggml
grep -q '"type":"f32",[^}]*"m":5' "$tmp/out" || fail "bench --m 5: $(cat "$tmp/out")"
expect 0 '' bench --type f16 --m 3 --backend scalar --rows 16 --k 64 --iters 1
grep -q '^anvil bench: GEMM of 3 activation rows' "$tmp/out" && grep -q '^  f16 *scalar ' "$tmp/out" || fail "bench --m 3 --backend scalar: $(cat "$tmp/out")"
checks=$((checks + 3))
expect 2 'anvil bench: --m takes 1..4096' bench --m 0
expect 1 'anvil bench: type f16: no loaded codec provides it' bench --encode --type f16 --no-ggml
# The JSON check itself: printf's inf/nan (what bench printed for a time of
# 0 or a ratio over 0) are not JSON and are refused by name; null is the
# documented stand-in and passes the schema.
bench_doc() {
    printf '{"schema_version":1,"command":"bench","ggml":true,"ggml_variant":"x","cpus":2,"results":[{"type":"q8_0","variant":"v","threads":1,"rows":1,"k":32,"weight_mb":0.001,"gbps":%s,"gelems":1.0,"ggml_gbps":0.0000,"ratio":%s,"median_ratio":1.0,"max_diff":0}]}\n' "$1" "$2" > "$tmp/bench.json"
}
for bad in 'inf -nan' '1.5 inf' '1.5 -inf' '1.5 nan' '1.5 NaN' '1.5 Infinity' '1.5 1e999'; do
    # shellcheck disable=SC2086
    bench_doc $bad
    checks=$((checks + 1))
    if "$json_check" "$schema" "$tmp/bench.json" 2> "$tmp/jerr"; then
        fail "json_check accepted a non-finite number ($bad)"
    elif ! grep -q -e "non-finite number" -e "overflows a double" "$tmp/jerr"; then
        fail "json_check ($bad): $(head -n 1 "$tmp/jerr")"
    fi
done
bench_doc null null
checks=$((checks + 1))
"$json_check" "$schema" "$tmp/bench.json" 2> "$tmp/jerr" || fail "json_check refused null figures: $(head -n 1 "$tmp/jerr")"
expect 2 "anvil bench: unknown or incomplete option '--bogus'" bench --bogus
expect 2 'anvil bench: unknown type*' bench --type q9_9 --no-ggml
expect 0 '' demo
expect 2 "anvil demo: unexpected argument '--bogus'" demo --bogus
expect 2 'anvil demo: --keep goes with --model' demo --keep "$tmp"

# ---- inspect ------------------------------------------------------------------
expect 0 '' inspect "$gguf"
jexpect 0 '' inspect "$gguf"
jexpect 0 '' inspect "$gguf" --no-tensors --arrays all
expect 0 '' inspect "$gguf" --markdown
grep -q '^| key | type | value |' "$tmp/out" || fail "inspect --markdown: no metadata table"
expect 0 '' inspect "$st"
jexpect 0 '' inspect "$st"
expect 0 '' inspect "$st" --markdown --no-tensors
expect 1 'anvil inspect: *has problems*' inspect "$damaged"
grep -q 'BAD: ' "$tmp/out" || fail "inspect of a damaged file marks no tensor"
jexpect 1 'anvil inspect: *has problems*' inspect "$damaged"
grep -q '"ok":false' "$tmp/out" || fail "inspect --json of a damaged file says ok"
for f in overlap trunc_tensor0 trunc_kv2 data_past_eof type_unknown dup_tensor misaligned; do
    jexpect 1 'anvil inspect: *has problems*' inspect "$corpus/$f.gguf"
done
jexpect 1 "anvil inspect: *not a GGUF file*" inspect "$corpus/magic_wrong.gguf"
expect 1 "anvil inspect: *GGUF v1 is no longer supported*" inspect "$corpus/version_1.gguf"
expect 1 "anvil inspect: *cannot open*" inspect "$tmp/nope.gguf"
expect 2 'anvil inspect: one file at a time*' inspect a b
expect 2 'anvil inspect: no FILE given' inspect
expect 2 "anvil inspect: unknown option '--bogus'" inspect --bogus "$gguf"
expect 2 "anvil inspect: --arrays 'x' is not a count or 'all'" inspect --arrays x "$gguf"
expect 2 'anvil inspect: --json and --markdown*' inspect --json --markdown "$gguf"

# Names read from a file never reach the terminal raw: a key with a NUL and a
# key holding an OSC sequence come out escaped.
printf 'GGUF\003\000\000\000\000\000\000\000\000\000\000\000\002\000\000\000\000\000\000\000' > "$tmp/evil.gguf"
printf '\003\000\000\000\000\000\000\000a\000b\004\000\000\000\001\000\000\000' >> "$tmp/evil.gguf"
printf '\013\000\000\000\000\000\000\000k\033]0;pwned\007\004\000\000\000\002\000\000\000' >> "$tmp/evil.gguf"
expect 0 '' inspect "$tmp/evil.gguf"
checks=$((checks + 3))
grep -q 'a\\x00b' "$tmp/out" || fail "a key with a NUL is not shown escaped"
grep -q 'k\\x1b]0;pwned\\x07' "$tmp/out" || fail "a key with ESC ] 0 ; is not shown escaped"
if LC_ALL=C grep -q "$(printf '\033')" "$tmp/out"; then fail "an ESC byte reached stdout"; fi

# ---- meta ---------------------------------------------------------------------
cp "$gguf" "$tmp/meta.gguf"
jexpect 0 '' meta get "$tmp/meta.gguf" general.architecture
expect 0 '' meta get "$tmp/meta.gguf" general.architecture
[ "$(cat "$tmp/out")" = "llama" ] || [ "$gguf" = "$corpus/base_ok.gguf" ] || fail "meta get: $(cat "$tmp/out")"
jexpect 0 '' meta set "$tmp/meta.gguf" anvil.test=u32:7
grep -q '"action":"added"' "$tmp/out" || fail "meta set of a new key: not added"
jexpect 0 '' meta set "$tmp/meta.gguf" anvil.test=8
grep -q '"in_place":true' "$tmp/out" || fail "meta set of the same size: not header-only"
expect 0 '' meta get "$tmp/meta.gguf" anvil.test
[ "$(cat "$tmp/out")" = "8" ] || fail "meta get after set: $(cat "$tmp/out")"
jexpect 0 '' meta rename "$tmp/meta.gguf" anvil.test anvil.renamed
jexpect 0 '' meta set "$tmp/meta.gguf" anvil.s=str:hello --out "$tmp/meta2.gguf"
expect 0 '' meta get "$tmp/meta2.gguf" anvil.s
[ "$(cat "$tmp/out")" = "hello" ] || fail "meta set --out"
expect 1 "anvil meta get: *has no key 'anvil.s'" meta get "$tmp/meta.gguf" anvil.s
jexpect 0 '' meta delete "$tmp/meta2.gguf" anvil.s anvil.renamed
expect 0 '' inspect "$tmp/meta2.gguf"
jexpect 1 "anvil meta get: *has no key*" meta get "$tmp/meta2.gguf" anvil.renamed
expect 2 "anvil meta set: 'anvil.new' is a new key: give its type*" meta set "$tmp/meta.gguf" anvil.new=1
expect 2 "anvil meta set: anvil.renamed: 'x' is not a u32*" meta set "$tmp/meta.gguf" anvil.renamed=x
expect 2 "anvil meta set: anvil.b: 'maybe' is not a bool*" meta set "$tmp/meta.gguf" anvil.b=bool:maybe
expect 2 "anvil meta set: anvil.u8: '300' is not a u8*" meta set "$tmp/meta.gguf" anvil.u8=u8:300
expect 2 "anvil meta set: anvil.a: arrays cannot be set*" meta set "$tmp/meta.gguf" anvil.a=arr:1,2
expect 2 "anvil meta set: changing general.alignment*" meta set "$tmp/meta.gguf" general.alignment=u32:64
jexpect 2 "anvil meta set: 'split.count' is one of the keys*" meta set "$tmp/meta.gguf" split.count=u16:2
expect 0 '' meta set "$tmp/meta.gguf" general.alignment=u32:64 --realign
expect 0 '' inspect "$tmp/meta.gguf"
grep -q '^alignment:    64' "$tmp/out" || fail "meta set general.alignment --realign"
expect 2 'anvil meta rename: needs FILE, OLD and NEW' meta rename "$tmp/meta.gguf" a
expect 2 "anvil meta: unknown subcommand 'frob'*" meta frob
expect 1 "anvil meta delete: *has no key 'nope'" meta delete "$tmp/meta.gguf" nope
expect 1 "anvil meta set: *" meta set "$tmp/nope.gguf" a=u8:1

# ---- reemit, split, merge ----------------------------------------------------
jexpect 0 '' reemit "$gguf" "$tmp/re.gguf"
expect 0 '' reemit "$st" "$tmp/re.safetensors"
cp "$tmp/re.gguf" "$tmp/same.gguf"
expect 0 '' reemit "$tmp/same.gguf" "$tmp/same.gguf"
grep -q 'replaced (atomically)' "$tmp/out" || fail "reemit IN IN does not say it replaced the input"
cmp -s "$tmp/re.gguf" "$tmp/same.gguf" || fail "reemit IN IN changed the bytes"
expect 2 "anvil reemit: the output '*' is a folder*" reemit "$gguf" "$tmp"
expect 2 "anvil reemit: the output's folder * does not exist" reemit "$gguf" "$tmp/no/such/out.gguf"
expect 2 'anvil reemit: unexpected argument*' reemit a b c
expect 2 'anvil reemit: no OUT given' reemit a
expect 1 'anvil reemit: *' reemit "$damaged" "$tmp/x.gguf"
jexpect 1 'anvil reemit: *' reemit "$damaged" "$tmp/x.gguf"
expect 0 '[1/*' reemit "$gguf" "$tmp/p.gguf" --progress
grep -q '^\[1/' "$tmp/err" || fail "reemit --progress: no progress lines"
jexpect 0 '' split "$tmp/re.gguf" "$tmp/part" --split-max-tensors 5 --dry-run
ls "$tmp"/part-* > /dev/null 2>&1 && fail "split --dry-run wrote parts"
jexpect 0 '' split "$tmp/re.gguf" "$tmp/part" --max-tensors 5
first=$(ls "$tmp"/part-00001-of-*.gguf | head -n 1)
jexpect 0 '' merge "$first" "$tmp/merged.gguf"
cmp -s "$tmp/re.gguf" "$tmp/merged.gguf" || fail "split -> merge is not byte-identical"
expect 0 '' split "$tmp/re.gguf" "$tmp/nf" --no-tensor-first-split --split-max-size 1G
expect 0 '' inspect "$tmp"/nf-00001-of-00002.gguf
grep -q 'part 1: .*, 0 tensors' "$tmp/out" || fail "--no-tensor-first-split: part 1 has tensors"
expect 0 '' split "$tmp/re.gguf" "$tmp/dflt"
expect 2 'anvil split: give --split-max-size or --split-max-tensors, not both' split "$tmp/re.gguf" "$tmp/x" --max-size 1M --split-max-tensors 3
expect 2 "anvil split: --split-max-size 'x' is not a positive size*" split "$tmp/re.gguf" "$tmp/x" --split-max-size x
expect 2 'anvil split: no OUT_PREFIX given' split "$tmp/re.gguf"
jexpect 2 "anvil merge: '*' is not the first part of a split set*" merge "$tmp/re.gguf" "$tmp/y.gguf"
expect 2 'anvil merge: no OUT given' merge a

# ---- tokenize -----------------------------------------------------------------
spm=$tdata/ggml-vocab-llama-spm.gguf
expect 0 '' tokenize "$spm" "Hello world" --ids
[ "$(cat "$tmp/out")" = "1 15043 3186" ] || fail "tokenize --ids: '$(cat "$tmp/out")'"
jexpect 0 '' tokenize "$spm" "Hello world"
grep -q '"ids":\[1,15043,3186\]' "$tmp/out" || fail "tokenize --json: $(cat "$tmp/out")"
printf 'Hello world' > "$tmp/tok.txt"
expect 0 '' tokenize "$spm" -f "$tmp/tok.txt" --ids --no-bos
[ "$(cat "$tmp/out")" = "15043 3186" ] || fail "tokenize -f --no-bos: '$(cat "$tmp/out")'"
expect 0 '' tokenize "$spm" "<s>x" --parse-special --no-bos --ids
[ "$(cat "$tmp/out")" = "1 921" ] || fail "tokenize --parse-special: '$(cat "$tmp/out")'"
expect 2 'anvil tokenize: MODEL.gguf is missing' tokenize
expect 2 "anvil tokenize: unknown option '--bogus'" tokenize "$spm" --bogus
expect 2 'anvil tokenize: TEXT and -f FILE: give one' tokenize "$spm" x -f "$tmp/tok.txt"
jexpect 1 'anvil tokenize: *' tokenize "$tmp/none.gguf" x
if [ -f "$shared/ggml-vocab-bert-bge.gguf" ]; then
    expect 1 "anvil tokenize: *tokenizer.ggml.model 'bert': this vocabulary type is not supported*" \
        tokenize "$shared/ggml-vocab-bert-bge.gguf" hi
fi

# ---- transcode, merge-lora ----------------------------------------------------
jexpect 0 '' transcode --from "$tmp/m.gguf" --out "$tmp/q.gguf" --dtype q8_0 --quiet
jexpect 0 '' transcode --from "$tmp/m.gguf" --out "$tmp/p.gguf" --ptqtp 2 --compare-with q2_K,tq2_0 --quiet
jexpect 0 '' transcode --from "$tmp/m.gguf" --out "$tmp/q2.gguf" --dtype q4_K --dry-run
expect 0 '[1/*' transcode --from "$tmp/m.gguf" --out "$tmp/q3.gguf" --dtype q8_0 --progress --no-quality
grep -q '^\[1/' "$tmp/err" || fail "transcode --progress: no progress lines"
jexpect 2 "anvil transcode: --dtype 'q9_K': *" transcode --from "$tmp/m.gguf" --out "$tmp/x.gguf" --dtype q9_K
expect 2 'anvil transcode: --from and --out are required' transcode --dtype q8_0
expect 2 "anvil transcode: --tensor-type 'attn_(=q8_0': not a valid ECMAScript regular expression*" transcode --from "$tmp/m.gguf" --out "$tmp/x.gguf" --dtype q8_0 --tensor-type 'attn_(=q8_0'
expect 2 "anvil transcode: --tensor-type '\\[': expected REGEX=TYPE*" transcode --from "$tmp/m.gguf" --out "$tmp/x.gguf" --tensor-type '['
expect 2 "anvil transcode: the output '*' is a folder*" transcode --from "$tmp/m.gguf" --out "$tmp" --dtype q8_0
expect 1 'anvil transcode: *' transcode --from "$tmp/nope.gguf" --out "$tmp/x.gguf" --dtype q8_0
[ -e "$tmp/x.gguf" ] && fail "a refused transcode left an output"
expect 2 'anvil merge-lora: --alpha is required*' merge-lora --from "$tmp/m.gguf" --adapters "$tmp/none" --out "$tmp/x.gguf"
jexpect 2 "anvil merge-lora: --alpha 'x' is not a finite number" merge-lora --from "$tmp/m.gguf" --adapters a --out "$tmp/x.gguf" --alpha x
expect 2 "anvil merge-lora: unknown or incomplete option '--bogus'" merge-lora --bogus
jexpect 1 'anvil merge-lora: *' merge-lora --from "$tmp/m.gguf" --adapters "$tmp/none" --out "$tmp/x.gguf" --alpha 1

# ---- quantize -----------------------------------------------------------------
jexpect 0 '' quantize "$tmp/m.gguf" "$tmp/qz.gguf" Q4_K_M
jexpect 0 '' quantize --dry-run "$tmp/m.gguf" "$tmp/qzd.gguf" 15
[ -e "$tmp/qzd.gguf" ] && fail "quantize --dry-run wrote its output"
expect 0 '[1/*' quantize --progress --no-quality --quiet "$tmp/m.gguf" "$tmp/qz3.gguf" q8_0 1
grep -q '^\[1/' "$tmp/err" || fail "quantize --progress: no progress lines"
# The default output: <IN's folder>/ggml-model-<TYPE>.gguf.
expect 0 '' quantize --quiet "$tmp/m.gguf" q8_0
[ -f "$tmp/ggml-model-Q8_0.gguf" ] || fail "quantize: no ggml-model-Q8_0.gguf next to the input"
# A wrong TYPE lists the valid ones.
jexpect 2 "anvil quantize: invalid TYPE 'Q4_K_X'" quantize "$tmp/m.gguf" "$tmp/x.gguf" Q4_K_X
grep -q 'Q4_K_M' "$tmp/err" && grep -q '15  or  Q4_K ' "$tmp/err" || fail "quantize: a wrong TYPE does not list the presets"
expect 2 "anvil quantize: '*' is no TYPE*" quantize "$tmp/m.gguf" "$tmp/x.gguf"
expect 2 'anvil quantize: no IN.gguf and TYPE given' quantize
# a size target instead of a preset (issue 25)
jexpect 0 '' quantize --dry-run --target-bpw 5 "$tmp/m.gguf" "$tmp/qt.gguf"
expect 0 '' quantize --quiet --no-quality --target-size 400K --plan-out "$tmp/qt.plan" "$tmp/m.gguf" "$tmp/qt.gguf" 1
[ -s "$tmp/qt.gguf" ] && [ "$(wc -c < "$tmp/qt.gguf")" -le 400000 ] || fail "quantize --target-size 400K: no file, or over 400000 bytes"
grep -q '^\^blk\\\.0\\\.' "$tmp/qt.plan" || fail "quantize --plan-out: no ^blk\\.0\\. rule"
expect 2 "anvil quantize: TYPE 'Q4_K_M' given with a size target*" quantize --target-size 1M "$tmp/m.gguf" "$tmp/x.gguf" Q4_K_M
expect 1 'anvil quantize: *below the smallest file*' quantize --dry-run --target-size 1K "$tmp/m.gguf" "$tmp/x.gguf"
expect 2 "anvil quantize: invalid --target-size 'abc'*" quantize --target-size abc "$tmp/m.gguf"
expect 2 'anvil quantize: --no-fallback is for presets*' quantize --no-fallback --target-bpw 4 "$tmp/m.gguf"
expect 2 "anvil quantize: unknown option or missing value: '--bogus'" quantize --bogus
expect 2 'anvil quantize: --tensor-type: *ECMAScript*' quantize --tensor-type 'attn_(=q8_0' "$tmp/m.gguf" q8_0
expect 2 'anvil quantize: --tensor-type: *missing quantization type*' quantize --tensor-type 'attn_v=' "$tmp/m.gguf" q8_0
expect 2 "anvil quantize: --output-tensor-type 'q8_K': an activation format*" quantize --output-tensor-type q8_K "$tmp/m.gguf" q8_0
expect 2 'anvil quantize: --override-kv: invalid boolean*' quantize --override-kv a=bool:yes "$tmp/m.gguf" q8_0
expect 2 "anvil quantize: --prune-layers: invalid layer id 'x'" quantize --prune-layers 1,x "$tmp/m.gguf" q8_0
expect 2 'anvil quantize: --include-weights and --exclude-weights cannot be used together' quantize --include-weights a --exclude-weights b "$tmp/m.gguf" q8_0
expect 2 "anvil quantize: the output '*' is a folder*" quantize "$tmp/m.gguf" "$tmp" q8_0
expect 2 "anvil quantize: invalid nthread 'x'" quantize "$tmp/m.gguf" "$tmp/x.gguf" q8_0 x
# A pattern matching nothing is a warning naming it.
expect 0 'anvil quantize: warning: --tensor-type nothing_here matches no tensor' quantize --quiet --tensor-type 'nothing_here=q8_0' "$tmp/m.gguf" "$tmp/qz4.gguf" Q4_K_M
# IQ2_XXS without an importance matrix: llama.cpp's refusal.
jexpect 1 'anvil quantize: this quantization requires an importance matrix*' quantize "$tmp/m.gguf" "$tmp/x.gguf" IQ2_XXS
[ -e "$tmp/x.gguf" ] && fail "a refused quantize left an output"
jexpect 1 "anvil quantize: *cannot open importance matrix*" quantize --imatrix "$tmp/none.dat" "$tmp/m.gguf" "$tmp/x.gguf" IQ2_XXS
printf 'junk' > "$tmp/junk.dat"
expect 1 "anvil quantize: *junk.dat: legacy imatrix: entry 1 of *: bad or truncated name*" quantize --imatrix "$tmp/junk.dat" "$tmp/m.gguf" "$tmp/x.gguf" IQ2_XXS
# A quantized input: llama.cpp's message unless --allow-requantize.
jexpect 1 'anvil quantize: requantizing from type q*_K is disabled*' quantize "$tmp/qz.gguf" "$tmp/x.gguf" Q8_0
expect 0 '' quantize --quiet --allow-requantize "$tmp/qz.gguf" "$tmp/rq.gguf" Q8_0
# The output may not be the input (issue 41): refused, the input unchanged.
cp "$tmp/m.gguf" "$tmp/same.gguf"
expect 1 "anvil quantize: the output $tmp/same.gguf is the input $tmp/same.gguf of this run*" quantize "$tmp/same.gguf" "$tmp/same.gguf" Q8_0
cmp -s "$tmp/m.gguf" "$tmp/same.gguf" || fail "quantize IN IN changed the input"
# ... nor any part of a split input, nor a --keep-split part the input or
# the imatrix is: each refused before anything is written.
expect 0 '' split "$tmp/m.gguf" "$tmp/sp" --split-max-tensors 5 --quiet
cp "$tmp/sp-00002-of-00005.gguf" "$tmp/sp2.keep"
expect 1 "anvil quantize: the output $tmp/sp-00002-of-00005.gguf is the input $tmp/sp-00002-of-00005.gguf*" quantize "$tmp/sp-00001-of-00005.gguf" "$tmp/sp-00002-of-00005.gguf" Q8_0
expect 1 "anvil quantize: the output $tmp/sp-00001-of-00005.gguf is the input*" quantize --keep-split "$tmp/sp-00001-of-00005.gguf" "$tmp/sp" Q8_0
cmp -s "$tmp/sp2.keep" "$tmp/sp-00002-of-00005.gguf" || fail "quantize into part 2 changed the input"
if [ -f "$shared/quality/tiny-code-llama.f16.gguf" ]; then
    cp "$shared/quality/tiny-code-llama.imatrix.gguf" "$tmp/im-00001-of-00001.gguf"
    expect 1 "anvil quantize: the output $tmp/im-00001-of-00001.gguf is the input*" quantize --keep-split --imatrix "$tmp/im-00001-of-00001.gguf" "$shared/quality/tiny-code-llama.f16.gguf" "$tmp/im" Q8_0
    cmp -s "$shared/quality/tiny-code-llama.imatrix.gguf" "$tmp/im-00001-of-00001.gguf" || fail "--keep-split replaced the imatrix"
fi
expect 1 "anvil transcode: the output $tmp/sp-00001-of-00005.gguf is the input*" transcode --from "$tmp/sp-00001-of-00005.gguf" --out "$tmp/sp.gguf" --dtype q8_0 --split-max-tensors 5
# A truncated input names the tensor that does not fit.
head -c 200000 "$tmp/m.gguf" > "$tmp/trunc.gguf"
jexpect 1 'anvil quantize: *' quantize "$tmp/trunc.gguf" "$tmp/x.gguf" Q8_0
grep -q "tensor '" "$tmp/err" || fail "quantize of a truncated file does not name the tensor"
[ -e "$tmp/x.gguf" ] && fail "a refused quantize left an output"
# transcode: nothing encoded is a loud warning pointing to quantize.
if [ -f "$shared/stories260K.v3.gguf" ]; then
    expect 1 'anvil quantize: --no-fallback: 36 tensors would fall back*blk.0.attn_k.weight (rows of 64: q4_K -> q5_0)*' quantize --dry-run --no-fallback "$shared/stories260K.v3.gguf" "$tmp/x.gguf" Q4_K_M
    expect 0 'anvil transcode: WARNING: 0 tensors encoded*' transcode --from "$shared/stories260K.v3.gguf" --out "$tmp/t.gguf" --dtype q4_K --quiet
    grep -q 'anvil quantize' "$tmp/err" || fail "transcode: the 0-tensors warning does not point to anvil quantize"
fi
expect 1 "anvil transcode: tensor '*' is already quantized*--allow-requantize*" transcode --from "$tmp/qz.gguf" --out "$tmp/x.gguf" --dtype q8_0
expect 0 '' transcode --from "$tmp/qz.gguf" --out "$tmp/deq.gguf" --dtype f16 --quiet

# ---- outputs and inputs that are not regular files ---------------------------
# A device, a FIFO or stdout as the output is written into, never renamed
# over (/dev/full: ENOSPC, exit 1); a socket is refused; as an input each is
# refused before anything can block. After every case the node is still what
# it was and nothing else is left in its folder.
nodes=$tmp/nodes
mkdir -p "$nodes"
if [ "$(id -u)" -ne 0 ] || ! mknod "$nodes/null" c 1 3 2> /dev/null || ! mknod "$nodes/full" c 1 7 2> /dev/null; then
    echo "note: not root (or no mknod here): device, FIFO and socket cases skipped"
else
    mkfifo "$nodes/fifo"
    kinds='null full fifo'
    if command -v python3 > /dev/null 2>&1 &&
        python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$nodes/sock"; then
        kinds="$kinds sock"
    else
        echo "note: no python3 to make a UNIX socket: socket cases skipped"
    fi
    n_nodes=$(ls -A "$nodes" | wc -l)
    kind_of() { case $1 in null|full) echo 'character special file' ;; fifo) echo fifo ;; sock) echo socket ;; esac; }
    # An adapter for merge-lora: blk.0.attn_q.weight += B A, rank 1, zeros.
    hdr='{"blk.0.attn_q.weight.lora_a":{"dtype":"F32","shape":[1,256],"data_offsets":[0,1024]},"blk.0.attn_q.weight.lora_b":{"dtype":"F32","shape":[256,1],"data_offsets":[1024,2048]}}'
    while [ $((${#hdr} % 8)) -ne 0 ]; do hdr="$hdr "; done
    { printf "\\$(printf %03o $((${#hdr} & 255)))\\$(printf %03o $((${#hdr} >> 8)))\\000\\000\\000\\000\\000\\000"
      printf '%s' "$hdr"; head -c 2048 /dev/zero; } > "$tmp/lora.safetensors"
    "$anvil" split "$tmp/m.gguf" "$tmp/nodeset" --split-max-tensors 8 > /dev/null
    # node_case KIND NAME ARGS... (@ in ARGS is the node): the exit code and
    # first stderr line per kind; through the FIFO a reader gets the bytes,
    # which must equal what the same command wrote to a regular file.
    node_case() {
        kind=$1 name=$2
        shift 2
        node=$nodes/$kind
        # shellcheck disable=SC2046
        set -- $(echo "$*" | sed "s|@|$node|g")
        reader=''
        if [ "$kind" = fifo ]; then
            timeout 20 cat "$node" > "$tmp/fifo.got" &
            reader=$!
        fi
        case $kind in
            null) expect 0 "$ok" "$@" ;;
            full) expect 1 "anvil *: *$node*: No space left on device*" "$@" ;;
            fifo) expect 0 "$ok" "$@" ;;
            sock) expect 1 "anvil *: *'$node' is a socket: *" "$@" ;;
        esac
        if [ -n "$reader" ]; then
            wait "$reader"
            checks=$((checks + 1))
            cmp -s "$tmp/fifo.got" "$tmp/ref.$name" || fail "$name into a FIFO: not the bytes of a file"
        fi
        checks=$((checks + 2))
        [ "$(stat -c %F "$node")" = "$(kind_of "$kind")" ] || fail "$name $kind: $node is now a $(stat -c %F "$node")"
        [ "$(ls -A "$nodes" | wc -l)" -eq "$n_nodes" ] || fail "$name $kind: left $(ls -A "$nodes" | tr '\n' ' ')"
    }
    # Every writing command, @ for its output; ref.NAME: the same into a file.
    {
        echo "reemit reemit $tmp/m.gguf @"
        echo "reemit_st reemit $st @"
        echo "transcode transcode --from $tmp/m.gguf --out @ --dtype q8_0 --quiet --no-quality"
        echo "quantize quantize --quiet --no-quality $tmp/m.gguf @ Q8_0 2"
        echo "merge merge $tmp/nodeset-00001-of-00003.gguf @"
        echo "merge_lora merge-lora --from $tmp/m.gguf --adapters $tmp/lora.safetensors --alpha 1 --out @ --quiet"
        echo "meta_set meta set $tmp/m.gguf anvil.n=u8:1 --out @"
        echo "codec_encode codec encode q8_0 $tmp/ramp.f32 @"
        echo "codec_decode codec decode q8_0 $tmp/ramp.q8 @"
    } > "$tmp/writers"
    while read -r name args; do
        ok=''
        case $name in codec_*) ok='*coded 64 *' ;; esac   # codec reports on stderr
        # shellcheck disable=SC2046
        expect 0 "$ok" $(echo "$args" | sed "s|@|$tmp/ref.$name|g")
        for kind in $kinds; do
            # shellcheck disable=SC2086
            node_case "$kind" "$name" $args
        done
    done < "$tmp/writers"
    # '-' is standard output: the same bytes, the report on stderr, --json refused.
    expect 0 'wrote - (GGUF v3, 21 tensors)' reemit "$tmp/m.gguf" -
    checks=$((checks + 1))
    cmp -s "$tmp/out" "$tmp/ref.reemit" || fail "reemit IN -: not the bytes of a file"
    expect 0 '' quantize --quiet --no-quality "$tmp/m.gguf" /dev/stdout Q8_0 2
    checks=$((checks + 1))
    cmp -s "$tmp/out" "$tmp/ref.quantize" || fail "quantize IN /dev/stdout: not the bytes of a file"
    expect 2 'anvil reemit: --json prints on standard output, which is the output file here*' reemit "$tmp/m.gguf" - --json
    # A split set is files: refused up front, nothing written.
    expect 2 "anvil split: '-' is standard output, but a split set is files*" split "$tmp/m.gguf" -
    ln -s "$nodes/null" "$tmp/dev-00001-of-00003.gguf"
    expect 1 "anvil split: '$tmp/dev-00001-of-00003.gguf' is not a file: the parts of a split set*" split "$tmp/m.gguf" "$tmp/dev" --split-max-tensors 8
    expect 1 "anvil transcode: '$nodes/null' is not a file: the parts of a split set*" transcode --from "$tmp/m.gguf" --out "$nodes/null" --dtype q8_0 --split-max-tensors 8
    checks=$((checks + 1))
    [ "$(ls -d "$tmp"/dev-* | wc -l)" -eq 1 ] && [ "$(ls -A "$nodes" | wc -l)" -eq "$n_nodes" ] || fail "a refused split set wrote a part"
    rm -f "$tmp/dev-00001-of-00003.gguf"
    # Symbolic links: to a device, written through (the link stays); to a
    # regular file, or dangling, replaced by the new file (the link itself;
    # the file it pointed to is unchanged).
    ln -s "$nodes/null" "$tmp/to-null"
    cp "$tmp/m.gguf" "$tmp/target.gguf"
    ln -s "$tmp/target.gguf" "$tmp/to-file"
    ln -s "$tmp/nowhere.gguf" "$tmp/dangling"
    for l in to-null to-file dangling; do expect 0 '' reemit --quiet "$tmp/ref.meta_set" "$tmp/$l"; done
    checks=$((checks + 4))
    [ -L "$tmp/to-null" ] && [ -c "$nodes/null" ] || fail "a link to a device was replaced"
    [ ! -L "$tmp/to-file" ] && cmp -s "$tmp/to-file" "$tmp/ref.meta_set" || fail "a link to a file was not replaced by the output"
    cmp -s "$tmp/target.gguf" "$tmp/m.gguf" || fail "writing over a link changed the file it pointed to"
    [ ! -L "$tmp/dangling" ] && [ -f "$tmp/dangling" ] && [ ! -e "$tmp/nowhere.gguf" ] || fail "a dangling link was not replaced by a file"
    # /dev/stdin (a link into /proc) on a regular file: refused, never replaced.
    checks=$((checks + 1))
    "$anvil" reemit "$tmp/m.gguf" /dev/stdin < "$tmp/target.gguf" > /dev/null 2> "$tmp/err"
    rc=$?
    case "$rc:$(head -n 1 "$tmp/err")" in
        "1:anvil reemit: '/dev/stdin' leads through /proc to a process's open file"*) ;;
        *) fail "reemit IN /dev/stdin (a file): exit $rc, $(head -n 1 "$tmp/err")" ;;
    esac
    # Inputs: refused at once, exit 1 (an open that blocks fails by timeout).
    inexpect() {
        checks=$((checks + 1))
        timeout 10 "$anvil" "$@" > "$tmp/out" 2> "$tmp/err" < /dev/null
        rc=$?
        first=$(head -n 1 "$tmp/err")
        case "$rc:$first" in
            "1:anvil "*"'$node' is "*": anvil "*"regular file"*) ;;
            124:*) fail "anvil $*: blocked (killed after 10 s)" ;;
            *) fail "anvil $*: exit $rc, stderr '$first'" ;;
        esac
    }
    for kind in $kinds; do
        node=$nodes/$kind
        # One command per way in: the CLI's sniff and the GGUF reader, the
        # in-place edit, the importance matrix, the safetensors reader, whole-file reads.
        inexpect inspect "$node"
        inexpect quantize "$node" "$tmp/x.gguf" q8_0
        inexpect meta set "$node" anvil.n=u8:1
        inexpect quantize --imatrix "$node" "$tmp/m.gguf" "$tmp/x.gguf" Q4_K_M
        inexpect merge-lora --from "$tmp/m.gguf" --adapters "$node" --alpha 1 --out "$tmp/x.gguf"
        inexpect codec encode q8_0 "$node" "$tmp/x.bin"
        checks=$((checks + 2))
        [ "$(stat -c %F "$node")" = "$(kind_of "$kind")" ] || fail "input $kind: $node is now a $(stat -c %F "$node")"
        if [ -e "$tmp/x.gguf" ] || [ -e "$tmp/x.bin" ]; then fail "input $kind: an output was written"; fi
    done
fi
# Empty files and /proc files keep their errors.
: > "$tmp/empty.gguf"
expect 1 'anvil inspect: *the file is empty (0 bytes)*' inspect "$tmp/empty.gguf"
if [ -r /proc/self/status ]; then
    expect 1 'anvil inspect: *the file is empty (0 bytes)*' inspect /proc/self/status
fi

echo "cli suite: $checks checks, $failures failures"
[ "$failures" -eq 0 ]
