#!/bin/sh
# parity-split.sh PARITY_BIN ARGS...: the parity program as two processes at
# once, so that `make test` on 2 cores waits for the longer half, not the
# sum. The first half: the families that run llama.cpp's quantizer and
# models (quantize: 222 s, ~1.4 cores), backend-avx512's checks (backends:
# 237 s at 10,000 rows) and imatrix (41 s); the second: every other family
# (single-threaded format checks: backends_avx2 359 s, cold 105 s,
# kquants 23 s, transcode 15 s ...): ~520 s each. Before, with every
# backend in the second half, make test waited 687 s for it while the
# first ended after ~360 s. Every family runs once: the
# second process skips exactly what the first one runs. Prints each log
# whole; exit 1 if either failed.
set -u
bin=$1
shift
files="quantize hf forward imatrix_collect backends imatrix"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/anvil-parity-XXXXXX") || exit 1
only=""
skip=""
for f in $files; do
    only="$only --family $f"
    skip="$skip --skip $f"
done
# shellcheck disable=SC2086 # word splitting of the option lists is meant
"$bin" "$@" $only >"$tmp/files.log" 2>&1 &
pid=$!
# shellcheck disable=SC2086
"$bin" "$@" $skip >"$tmp/formats.log" 2>&1
formats=$?
wait $pid
files_rc=$?
cat "$tmp/formats.log" "$tmp/files.log"
rm -rf "$tmp"
echo "parity-split: format families exit $formats, file families exit $files_rc"
[ "$formats" = 0 ] && [ "$files_rc" = 0 ]
