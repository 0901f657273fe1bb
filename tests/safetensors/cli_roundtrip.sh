#!/bin/sh
# `anvil reemit` / `anvil inspect` on safetensors files.
#   cli_roundtrip.sh ANVIL_BIN TESTS_DATA_DIR SHARED_TESTDATA_DIR
# Files written by a current upstream come back byte for byte; older files
# come back with the same tensors (checked by re-inspecting both). Exits 77
# (skip) while the CLI's inspect/reemit commands are not in the build.
anvil=$1
data=$2
shared=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/anvil-st-cli-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

if [ ! -x "$anvil" ] || ! "$anvil" reemit --help >/dev/null 2>&1 ||
   ! "$anvil" inspect --help >/dev/null 2>&1; then
    echo "note: anvil inspect/reemit not available in this build; skipped"
    exit 77
fi

find_file() {
    if [ -f "$data/$1" ]; then echo "$data/$1"; elif [ -f "$shared/$1" ]; then echo "$shared/$1"; fi
}

fail=0
for f in burn-batch_norm2d burn-boolean peft-gpt2-lora-adapter_model; do
    in=$(find_file "$f.safetensors")
    if [ -z "$in" ]; then echo "note: $f.safetensors absent; skipped"; continue; fi
    if ! "$anvil" reemit "$in" "$tmp/$f.safetensors"; then
        echo "FAIL: reemit $f"; fail=1; continue
    fi
    if cmp "$in" "$tmp/$f.safetensors"; then
        echo "ok: $f reemits byte for byte"
    else
        echo "FAIL: $f differs after reemit"; fail=1
    fi
done
for f in hf-samples_overall hf-samples_F16; do
    in=$(find_file "$f.safetensors")
    if [ -z "$in" ]; then echo "note: $f.safetensors absent; skipped"; continue; fi
    if ! "$anvil" reemit "$in" "$tmp/$f.safetensors"; then
        echo "FAIL: reemit $f"; fail=1; continue
    fi
    # Same tensors (name, dtype, shape, bytes) and metadata: compare the
    # inspect listings sorted by name, minus the layout-specific columns.
    "$anvil" inspect --json "$in" > "$tmp/a.json" || fail=1
    "$anvil" inspect --json "$tmp/$f.safetensors" > "$tmp/b.json" || fail=1
    summarize() {
        tr '{' '\n' < "$1" | grep '"name"' | sed 's/,"offset".*//' | sort
        grep -o '"metadata":\[[^]]*\]' "$1" | head -1
    }
    if [ "$(summarize "$tmp/a.json")" = "$(summarize "$tmp/b.json")" ] &&
       [ -n "$(summarize "$tmp/a.json")" ]; then
        echo "ok: $f keeps every tensor and its metadata"
    else
        echo "FAIL: $f content changed"; fail=1
    fi
    "$anvil" reemit "$tmp/$f.safetensors" "$tmp/$f.2.safetensors" >/dev/null &&
        cmp "$tmp/$f.safetensors" "$tmp/$f.2.safetensors" || { echo "FAIL: $f not a fixed point"; fail=1; }
done
# A hostile file is refused with its specific error.
neg=$(find_file NEG_syoyo-abuse_attempt_1.safetensors)
if [ -n "$neg" ]; then
    if "$anvil" inspect "$neg" >/dev/null 2>"$tmp/err"; then
        echo "FAIL: hostile file accepted"; fail=1
    elif grep -q ANVIL_E_ST_HEADER_PAST_END "$tmp/err"; then
        echo "ok: hostile file refused: $(cat "$tmp/err")"
    else
        echo "FAIL: hostile file refused with the wrong error: $(cat "$tmp/err")"; fail=1
    fi
fi
exit $fail
