#!/bin/sh
# The documentation's examples, run as they are: in each file, the block
# between the "tested examples" markers, in an empty folder of its own,
# `anvil` being the build's. Every file must hold a block.
#   readme_examples.sh ANVIL README.md [docs/CLI.md ...]
set -u
anvil_bin=$1
shift
case $anvil_bin in /*) ;; *) anvil_bin=$PWD/$anvil_bin ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/anvil-readme-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
total=0
for doc in "$@"; do
    name=$(basename "$doc")
    dir="$tmp/$name.d"
    mkdir "$dir" || exit 1
    sed -n '/<!-- tested examples: begin -->/,/<!-- tested examples: end -->/p' "$doc" |
        sed -e '/^<!--/d' -e '/^```/d' > "$dir.sh"
    n=$(grep -c . "$dir.sh")
    [ "$n" -gt 0 ] || { echo "FAIL: no examples found in $doc"; exit 1; }
    i=0
    while IFS= read -r line; do
        [ -z "$line" ] && continue
        i=$((i + 1))
        # shellcheck disable=SC2016
        if ! (cd "$dir" && ANVIL_BIN=$anvil_bin sh -c 'anvil() { "$ANVIL_BIN" "$@"; }; eval "$1"' sh "$line" \
            > "$tmp/out.txt" 2> "$tmp/err.txt"); then
            echo "FAIL: $name example $i: $line"
            cat "$tmp/err.txt"
            exit 1
        fi
        echo "ok: $name: $line"
    done < "$dir.sh"
    echo "$name: $i examples run, all exit 0"
    total=$((total + i))
done
echo "documentation examples: $total run, all exit 0"
