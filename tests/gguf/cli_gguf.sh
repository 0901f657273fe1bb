#!/bin/sh
# anvil inspect / reemit / split / merge end to end.
#   cli_gguf.sh ANVIL CORPUS_DIR SHARED_TESTDATA
# Exit 77 (skipped) when the CLI does not have the GGUF commands yet.
set -u
anvil=$1
corpus=$2
shared=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/anvil-gguf-cli-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

if ! "$anvil" inspect --help >/dev/null 2>&1; then
    echo "note: 'anvil inspect' is not in this build; skipped"
    exit 77
fi

src="$corpus/base_ok.gguf"
[ -f "$src" ] || fail "missing $src"
if [ -f "$shared/stories260K.v3.gguf" ]; then
    src="$shared/stories260K.v3.gguf"
else
    echo "note: shared testdata absent; using the corpus base file"
fi

"$anvil" inspect "$src" > "$tmp/inspect.txt" || fail "inspect"
grep -q "format:       GGUF v3" "$tmp/inspect.txt" || fail "inspect: no version line"
grep -q "size check" "$tmp/inspect.txt" || fail "inspect: no size check"
"$anvil" inspect --json "$src" > "$tmp/inspect.json" || fail "inspect --json"
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["format"]=="gguf" and d["ok"]' \
        "$tmp/inspect.json" || fail "inspect --json is not valid JSON or ok is false"
fi

"$anvil" reemit "$src" "$tmp/re.gguf" >/dev/null || fail "reemit"
"$anvil" reemit "$tmp/re.gguf" "$tmp/re2.gguf" >/dev/null || fail "reemit of reemit"
cmp -s "$tmp/re.gguf" "$tmp/re2.gguf" || fail "reemit is not a fixed point"

"$anvil" split "$tmp/re.gguf" "$tmp/part" --max-tensors 5 >/dev/null || fail "split --max-tensors"
first=$(ls "$tmp"/part-00001-of-*.gguf | head -n 1)
[ -n "$first" ] || fail "split wrote no first part"
case "$first" in
    *-of-00001.gguf) ;; # one part only (small input): nothing to show
    *) "$anvil" inspect "$first" | grep -q "parts:" || fail "inspect of part 1 does not show the set" ;;
esac
"$anvil" merge "$first" "$tmp/merged.gguf" >/dev/null || fail "merge"
cmp -s "$tmp/re.gguf" "$tmp/merged.gguf" || fail "split -> merge is not byte-identical"

rm -f "$tmp"/part-*.gguf
"$anvil" split "$tmp/re.gguf" "$tmp/sz" --max-size 200K >/dev/null || fail "split --max-size"
first=$(ls "$tmp"/sz-00001-of-*.gguf | head -n 1)
"$anvil" merge "$first" "$tmp/merged2.gguf" >/dev/null || fail "merge (size split)"
cmp -s "$tmp/re.gguf" "$tmp/merged2.gguf" || fail "size split -> merge is not byte-identical"

# Refusals: exit 1 with the reason; usage errors exit 2. A damaged file is
# shown as far as it can be read, the bad tensor marked.
"$anvil" inspect "$corpus/row_blocks.gguf" > "$tmp/out.txt" 2> "$tmp/err.txt" && fail "row_blocks accepted"
grep -q "rows of 172" "$tmp/out.txt" || fail "row_blocks message"
grep -q "has problems" "$tmp/err.txt" || fail "row_blocks: no verdict on stderr"
"$anvil" inspect "$corpus/version_1.gguf" 2> "$tmp/err.txt" && fail "v1 accepted"
grep -q "GGUF v1 is no longer supported" "$tmp/err.txt" || fail "v1 message"
"$anvil" split "$tmp/re.gguf" "$tmp/x" --max-size 1M --split-max-tensors 3 >/dev/null 2>&1
[ $? -eq 2 ] || fail "split with two limits is not a usage error"
"$anvil" merge "$tmp/re.gguf" "$tmp/y.gguf" >/dev/null 2>&1 && fail "merge of a non-part accepted"
echo "gguf cli: OK"
exit 0
