#!/bin/sh
# A >= 2 GiB synthetic F16 llama model quantized to Q4_K_M by `anvil
# quantize`, out of core: the peak resident set must stay under 256 MiB, as
# the tool reports it and as /usr/bin/time measures it, and the file must be
# the size the plan said. The model is deleted afterwards.
#   big_quantize.sh ANVIL TC_SYNTH_MODEL
set -u
anvil=$1
synth=$2
limit=268435456 # 256 MiB
tmpbase=${TMPDIR:-/tmp}
fail() { echo "FAIL: $*" >&2; exit 1; }

if [ ! -x /usr/bin/time ]; then
    echo "note: /usr/bin/time is missing (Debian package 'time'); skipped"
    exit 77
fi
need=$("$synth" --size big) || fail "cannot size the model"
[ "$need" -ge 2147483648 ] || fail "the big model is only $need bytes"
want=$(( need + need / 2 ))
avail=$(df -Pk "$tmpbase" | awk 'NR==2 {print $4}')
if [ $(( avail * 1024 )) -lt "$want" ]; then
    echo "note: $tmpbase has $(( avail / 1024 )) MiB free, this test needs $(( want / 1048576 )) MiB; skipped"
    exit 77
fi
tmp=$(mktemp -d "$tmpbase/anvil-qz-big-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$synth" "$tmp/big-f16.gguf" big || fail "writing the model"
echo "model: $(stat -c %s "$tmp/big-f16.gguf") bytes of F16 llama"
/usr/bin/time -v "$anvil" quantize --json --no-quality "$tmp/big-f16.gguf" "$tmp/big-q4_K_M.gguf" Q4_K_M \
    > "$tmp/summary.json" 2> "$tmp/time.txt" || { cat "$tmp/time.txt" >&2; fail "quantize"; }
rss_kb=$(sed -n 's/.*Maximum resident set size (kbytes): *\([0-9]*\).*/\1/p' "$tmp/time.txt")
wall=$(sed -n 's/.*Elapsed (wall clock) time[^:]*: *\(.*\)/\1/p' "$tmp/time.txt")
tool_rss=$(sed -n 's/.*"peak_rss_bytes":\([0-9]*\).*/\1/p' "$tmp/summary.json")
out=$(stat -c %s "$tmp/big-q4_K_M.gguf")
planned=$(sed -n 's/.*"out_file_bytes":\([0-9]*\).*/\1/p' "$tmp/summary.json")
echo "quantize Q4_K_M: $wall wall, output $out bytes"
echo "peak RSS: /usr/bin/time $rss_kb KiB, the tool $tool_rss bytes (limit $limit)"
[ -n "$rss_kb" ] && [ -n "$tool_rss" ] || fail "no RSS figures"
[ "$out" = "$planned" ] || fail "output is $out bytes, the plan said $planned"
[ $(( rss_kb * 1024 )) -lt $limit ] || fail "/usr/bin/time: peak RSS $rss_kb KiB is over 256 MiB"
[ "$tool_rss" -lt $limit ] || fail "the tool reports peak RSS $tool_rss bytes, over 256 MiB"
"$anvil" inspect "$tmp/big-q4_K_M.gguf" | grep -q "size check: .*OK" || fail "the output does not read back"
echo "quantize big: OK"
