#!/bin/sh
# anvil quantize --measure / --sensitivity / --calibrate end to end on the
# trained model of ../shared/testdata/quality (skipped, 77, without it):
# the file is valid (version 3) and names every matrix with a kld > 0 at
# the reference type and its low-bit points, which hurt more, and its
# candidates' errors; stored errors are used only under their key (the
# plan measuring gives; altered ones ignored for another --target-rows or
# another model, and the plan says so); it is the
# same bytes for --threads 1 and 2; a plan with it differs from the
# role-weight proxy's and says which weights it used (a version 1 file:
# the line, said so); --verify compares the plan, its floored variants and
# the preset that fits on the forward pass and says which it kept, the same
# for 1 and 2 threads, as --calibrate does by itself; bad files are refused
# naming what is wrong; usage errors exit 2. Two chunks of 64 tokens: seconds.
#
#   sens_cli.sh ANVIL SHARED_TESTDATA
set -u
anvil=$1
q=$2/quality
model=$q/tiny-code-llama.f16.gguf
im=$q/tiny-code-llama.imatrix.gguf
text=$q/calib.txt
[ -r "$model" ] && [ -r "$im" ] && [ -r "$text" ] || { echo "no $q: skipped"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/anvil-sens-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0
checks=0
check() { # check DESCRIPTION COMMAND...
    d=$1
    shift
    checks=$((checks + 1))
    if ! "$@"; then
        echo "FAIL: $d" >&2
        failures=$((failures + 1))
    fi
}
measure() { # measure THREADS OUT [more options]
    t=$1
    o=$2
    shift 2
    "$anvil" quantize --quiet --measure "$text" --chunks 2 --ctx 64 --threads "$t" --imatrix "$im" --target-rows 32 \
        "$@" "$model" -o "$o"
}
check "--measure runs (1 thread)" measure 1 "$tmp/s1.json"
check "--measure runs (2 threads)" measure 2 "$tmp/s2.json"
check "same bytes for 1 and 2 threads" cmp -s "$tmp/s1.json" "$tmp/s2.json"
check "format and version" grep -q '"format": "anvil-sensitivity"' "$tmp/s1.json"
check "chunks and ctx recorded" grep -q '"chunks": 2' "$tmp/s1.json"
check "version 3" grep -q '"version": 3' "$tmp/s1.json"
nl=$(grep -c '"low": \[{"ref": "' "$tmp/s1.json")
check "every matrix has its low-bit points (got $nl)" test "$nl" -eq 30
nl=$(grep -c '"low": \[{"ref": "iq2_xs", "kld": [^}]*}, {"ref": "iq1_s", "kld": ' "$tmp/s1.json")
check "IQ2_XS and IQ1_S where the imatrix has the tensor (got $nl of 28)" test "$nl" -eq 28
more=$(sed -n 's/.*"kld": \([^,]*\), "low": \[{"ref": "[^"]*", "kld": \([^}]*\)}.*/\1 \2/p' "$tmp/s1.json" |
    awk '$2 > $1' | wc -l)
check "the low-bit point hurts more than the reference ($more of 30)" test "$more" -eq 30
n=$(grep -c '"kld": ' "$tmp/s1.json")
check "30 matrices measured (got $n)" test "$n" -eq 30
bad=$(grep -o '"kld": [^,}]*' "$tmp/s1.json" | awk '!($2 > 0)' | wc -l)
all=$(grep -o '"kld": [^,}]*' "$tmp/s1.json" | wc -l)
check "every kld > 0 ($bad of $all not)" test "$bad" -eq 0 -a "$all" -eq 90
check "output and token_embd both measured" grep -q '"token_embd.weight"' "$tmp/s1.json"
ne=$(grep -c '"low": \[.*\], "err": {"key": "[0-9a-f]\{16\}", "types": \["[a-z]' "$tmp/s1.json")
check "every matrix has its candidates' errors stored (got $ne)" test "$ne" -eq 30

size=2226976
plan() { # plan OUT [more options]
    o=$1
    shift
    "$anvil" quantize --dry-run --no-quality --imatrix "$im" --target-rows 32 --plan-out "$o" "$@" \
        --target-size $size "$model" "$tmp/x.gguf" > "$o.log" 2>&1
}
check "proxy plan" plan "$tmp/proxy.txt"
check "proxy says so" grep -q "error weights: role-weight proxy, no calibration text" "$tmp/proxy.txt.log"
check "measured plan" plan "$tmp/sens.txt" --sensitivity "$tmp/s1.json"
check "measured says so" grep -q "error weights: measured ($tmp/s1.json)" "$tmp/sens.txt.log"
check "the plans differ" sh -c "! cmp -s '$tmp/proxy.txt' '$tmp/sens.txt'"
sed -e 's/"version": 3/"version": 1/' -e 's/, "err": {[^}]*}//' -e 's/, "low": \[[^]]*\]//' "$tmp/s1.json" > "$tmp/v1.json"
# Version 3's stored errors: the plan measuring gives (a version 2 file, no
# errors stored); altered values are taken under their key (so the checks
# after can fail) and measured again when the key is another's: another
# --target-rows, another model (the Q8_0 file of the same model).
sed -e 's/"version": 3/"version": 2/' -e 's/, "err": {[^}]*}//' "$tmp/s1.json" > "$tmp/v2.json"
check "version 2 plan" plan "$tmp/v2.txt" --sensitivity "$tmp/v2.json"
check "stored errors: the plan measuring gives" cmp -s "$tmp/sens.txt" "$tmp/v2.txt"
check "stored errors matching: no warning" sh -c "! grep -q 'stored errors' '$tmp/sens.txt.log'"
awk '{ out = ""
  while (match($0, /"relerr": \[[^]]*\]/)) {
    n = split(substr($0, RSTART, RLENGTH), a, ","); r = ""
    for (i = 1; i <= n; i++) r = r (i > 1 ? ", " : "") (i / 1000)
    out = out substr($0, 1, RSTART - 1) "\"relerr\": [" r "]"; $0 = substr($0, RSTART + RLENGTH) }
  print out $0 }' "$tmp/s1.json" > "$tmp/alt.json"
check "altered stored errors plan" plan "$tmp/alt.txt" --sensitivity "$tmp/alt.json"
check "altered stored errors under their key are used" sh -c "! cmp -s '$tmp/sens.txt' '$tmp/alt.txt'"
check "other rows: version 2 plan" plan "$tmp/v2r.txt" --sensitivity "$tmp/v2.json" --target-rows 16
check "other rows: altered file's plan" plan "$tmp/altr.txt" --sensitivity "$tmp/alt.json" --target-rows 16
check "other rows: the stale values are not used" cmp -s "$tmp/v2r.txt" "$tmp/altr.txt"
check "other rows: the plan says so" \
    grep -q "stored errors of 30 of 30 tensors were measured on another model, importance matrix or --target-rows" \
    "$tmp/altr.txt.log"
"$anvil" quantize --quiet --no-quality "$model" "$tmp/q8.gguf" Q8_0 1 > /dev/null 2>&1
model_f16=$model
model=$tmp/q8.gguf
check "another model: version 2 plan" plan "$tmp/v2m.txt" --sensitivity "$tmp/v2.json" --allow-requantize
check "another model: altered file's plan" plan "$tmp/altm.txt" --sensitivity "$tmp/alt.json" --allow-requantize
check "another model: the stale values are not used" cmp -s "$tmp/v2m.txt" "$tmp/altm.txt"
check "another model: the plan says so" grep -q "stored errors of 30 of 30 tensors" "$tmp/altm.txt.log"
model=$model_f16
check "version 1 plan" plan "$tmp/v1.txt" --sensitivity "$tmp/v1.json"
check "version 1 says so" grep -q "version 1 file: one reference type, error scaled linearly" "$tmp/v1.txt.log"
check "version 2 says so" grep -q "a response curve per tensor through two reference types" "$tmp/sens.txt.log"
check "--verify plan (1 thread)" plan "$tmp/ver.txt" --sensitivity "$tmp/s1.json" --verify "$text" --chunks 2 --ctx 64 \
    --threads 1
check "--verify plan (2 threads)" plan "$tmp/ver2.txt" --sensitivity "$tmp/s1.json" --verify "$text" --chunks 2 --ctx 64 \
    --threads 2
check "--verify: the same plan for 1 and 2 threads" cmp -s "$tmp/ver.txt" "$tmp/ver2.txt"
# (Q3_K_M's file, its metadata naming the imatrix, is over the size: IQ3_M's is the largest that fits)
check "--verify compares with the preset that fits" \
    grep -q "^verify on $text: KL divergence of the target's plan .*preset IQ3_M's ([0-9]* bytes)" "$tmp/ver.txt.log"
check "--verify says which it kept" \
    grep -q "^verify on .*: \(the target's plan\|the target's plan with types of >= [0-9.]* bpw\|preset IQ3_M's plan\) kept" \
    "$tmp/ver.txt.log"
kept=$(sed -n 's/.*: preset \([A-Z0-9_]*\)'"'"'s plan kept.*/\1/p' "$tmp/ver.txt.log")
if [ -n "$kept" ]; then # the plan file names every tensor the preset encodes
    n=$(wc -l < "$tmp/ver.txt")
    check "a kept preset's plan file: every tensor ($n)" test "$n" -eq 30
fi
check "--calibrate plan" plan "$tmp/cal.txt" --calibrate "$text" --chunks 2 --ctx 64
check "--calibrate = --sensitivity + --verify of the same text" cmp -s "$tmp/cal.txt" "$tmp/ver.txt"

# Bad files: exit 1, the reason named.
sed 's/"kld": [^,]*, "low"/"kld": -1, "low"/' "$tmp/s1.json" > "$tmp/neg.json"
plan "$tmp/neg.txt" --sensitivity "$tmp/neg.json"
check "negative kld refused" test $? -eq 1
check "negative kld named" grep -q "kld must be a finite number >= 0" "$tmp/neg.txt.log"
sed 's/blk\.0\.attn_q\.weight/blk.0.attn_z.weight/' "$tmp/s1.json" > "$tmp/unk.json"
plan "$tmp/unk.txt" --sensitivity "$tmp/unk.json"
check "unknown tensor refused" test $? -eq 1
check "unknown tensor named" grep -q "blk.0.attn_z.weight' is not in this model" "$tmp/unk.txt.log"
grep -v 'blk.1.ffn_up.weight' "$tmp/s1.json" > "$tmp/miss.json"
plan "$tmp/miss.txt" --sensitivity "$tmp/miss.json"
check "missing tensor refused" test $? -eq 1
check "missing tensor named" grep -q "no measurement for tensor 'blk.1.ffn_up.weight'" "$tmp/miss.txt.log"
echo '{"format":"anvil-sensitivity","version":1' > "$tmp/trunc.json"
plan "$tmp/tr.txt" --sensitivity "$tmp/trunc.json"
check "truncated file refused" test $? -eq 1

# Usage errors: exit 2.
"$anvil" quantize --sensitivity "$tmp/s1.json" "$model" Q4_K_M > /dev/null 2>&1
check "--sensitivity without a target is a usage error" test $? -eq 2
"$anvil" quantize --calibrate "$text" --sensitivity "$tmp/s1.json" --target-size $size "$model" > /dev/null 2>&1
check "--calibrate with --sensitivity is a usage error" test $? -eq 2
"$anvil" quantize --measure "$text" --target-size $size "$model" > /dev/null 2>&1
check "--measure with a target is a usage error" test $? -eq 2
"$anvil" quantize --verify "$text" "$model" Q4_K_M > /dev/null 2>&1
check "--verify without a target is a usage error" test $? -eq 2
"$anvil" quantize --measure "$text" --verify "$text" "$model" > /dev/null 2>&1
check "--verify with --measure is a usage error" test $? -eq 2

echo "sens_cli: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
