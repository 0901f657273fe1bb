#!/bin/sh
# Run every libFuzzer target in $1/bin (named fuzz_*) for FUZZ_SECONDS each,
# seeded from its corpus folder under tests/ (tests/<area>/corpus).
set -eu
BUILD="$1"
SECONDS_EACH="${FUZZ_SECONDS:-60}"
found=0
for f in "$BUILD"/bin/fuzz_*; do
    [ -x "$f" ] || continue
    found=1
    name=$(basename "$f")
    area=${name#fuzz_}
    seeds="tests/$area/corpus"
    work="$BUILD/fuzz-work/$area"
    mkdir -p "$work"
    echo "fuzz: $name for ${SECONDS_EACH}s (seeds: $seeds)"
    if [ -d "$seeds" ]; then
        "$f" -max_total_time="$SECONDS_EACH" -print_final_stats=1 "$work" "$seeds"
    else
        "$f" -max_total_time="$SECONDS_EACH" -print_final_stats=1 "$work"
    fi
done
if [ "$found" = 0 ]; then
    echo "fuzz: no fuzz targets built in $BUILD/bin"
fi
