#!/bin/sh
# A >= 2 GiB synthetic F16 llama model written out of core by `anvil
# transcode` (to Q4_K) or `anvil quantize` (to Q4_K_M): the peak resident set
# must stay under 256 MiB, as the tool reports it and as /usr/bin/time
# measures it, and the file must be the size the plan said. The model is
# deleted afterwards.
#   big_transcode.sh ANVIL TC_SYNTH_MODEL [transcode|quantize]
set -u
anvil=$1
synth=$2
mode=${3:-transcode}
limit=268435456 # 256 MiB
tmpbase=${TMPDIR:-/tmp}
fail() { echo "FAIL: $*" >&2; exit 1; }

if [ ! -x /usr/bin/time ]; then
    echo "note: /usr/bin/time is missing (Debian package 'time'); skipped"
    exit 77
fi
need=$("$synth" --size big) || fail "cannot size the model"
[ "$need" -ge 2147483648 ] || fail "the big model is only $need bytes"
# The model, its output (~30% of it) and some slack.
want=$(( need + need / 2 ))
avail=$(df -Pk "$tmpbase" | awk 'NR==2 {print $4}')
if [ $(( avail * 1024 )) -lt "$want" ]; then
    echo "note: $tmpbase has $(( avail / 1024 )) MiB free, this test needs $(( want / 1048576 )) MiB; skipped"
    exit 77
fi
tmp=$(mktemp -d "$tmpbase/anvil-$mode-big-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

t0=$(date +%s)
"$synth" "$tmp/big-f16.gguf" big || fail "writing the model"
t1=$(date +%s)
size=$(stat -c %s "$tmp/big-f16.gguf")
echo "model: $size bytes of F16 llama ($(( t1 - t0 )) s to write)"
if [ "$mode" = quantize ]; then
    set -- quantize --json --no-quality "$tmp/big-f16.gguf" "$tmp/big-out.gguf" Q4_K_M
else
    set -- transcode --from "$tmp/big-f16.gguf" --out "$tmp/big-out.gguf" --dtype q4_K --json
fi
/usr/bin/time -v "$anvil" "$@" > "$tmp/summary.json" 2> "$tmp/time.txt" || { cat "$tmp/time.txt" >&2; fail "$mode"; }
rss_kb=$(sed -n 's/.*Maximum resident set size (kbytes): *\([0-9]*\).*/\1/p' "$tmp/time.txt")
tool_rss=$(sed -n 's/.*"peak_rss_bytes":\([0-9]*\).*/\1/p' "$tmp/summary.json")
rate=$(sed -n 's/.*"mb_per_s":\([0-9.e+-]*\).*/\1/p' "$tmp/summary.json")
secs=$(sed -n 's/.*"seconds":\([0-9.e+-]*\).*/\1/p' "$tmp/summary.json")
threads=$(sed -n 's/.*"threads":\([0-9]*\).*/\1/p' "$tmp/summary.json")
out=$(stat -c %s "$tmp/big-out.gguf")
planned=$(sed -n 's/.*"out_file_bytes":\([0-9]*\).*/\1/p' "$tmp/summary.json")
echo "$mode: $secs s, $rate MB/s of source read, $threads threads, output $out bytes"
echo "peak RSS: /usr/bin/time $rss_kb KiB, the tool $tool_rss bytes (limit $limit)"
[ -n "$rss_kb" ] && [ -n "$tool_rss" ] || fail "no RSS figures"
[ "$out" = "$planned" ] || fail "output is $out bytes, the plan said $planned"
[ $(( rss_kb * 1024 )) -lt $limit ] || fail "/usr/bin/time: peak RSS $rss_kb KiB is over 256 MiB"
[ "$tool_rss" -lt $limit ] || fail "the tool reports peak RSS $tool_rss bytes, over 256 MiB"
"$anvil" inspect "$tmp/big-out.gguf" | grep -q "size check: .*OK" || fail "the output does not read back"
echo "$mode big: OK"
