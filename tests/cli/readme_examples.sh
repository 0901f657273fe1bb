#!/bin/sh
# The README's examples, run as they are: the block between the
# "tested examples" markers, in an empty folder, `anvil` being the build's.
#   readme_examples.sh ANVIL README.md
set -u
anvil_bin=$1
readme=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/anvil-readme-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
sed -n '/<!-- tested examples: begin -->/,/<!-- tested examples: end -->/p' "$readme" |
    sed -e '/^<!--/d' -e '/^```/d' > "$tmp/examples.sh"
n=$(grep -c . "$tmp/examples.sh")
[ "$n" -gt 0 ] || { echo "FAIL: no examples found in $readme"; exit 1; }
cd "$tmp" || exit 1
i=0
while IFS= read -r line; do
    [ -z "$line" ] && continue
    i=$((i + 1))
    # shellcheck disable=SC2016
    if ! ANVIL_BIN=$anvil_bin sh -c 'anvil() { "$ANVIL_BIN" "$@"; }; eval "$1"' sh "$line" > out.txt 2> err.txt; then
        echo "FAIL: README example $i: $line"
        cat err.txt
        exit 1
    fi
    echo "ok: $line"
done < "$tmp/examples.sh"
echo "README examples: $i run, all exit 0"
