#!/bin/sh
# Check the C sources against .clang-format (clang-format 14, Debian 12's).
#
#   scripts/check-format.sh         list the files clang-format would change;
#                                   exit 1 when there are any, 0 when none
#   scripts/check-format.sh --fix   rewrite those files in place
#
# Files: every tracked (or new, not ignored) .c and .h under host/ plugins/
# sdk/ tests/ tools/, except generated files: a file whose first 12 lines
# say "generated" and "do not edit" (host/src/quantize/quantize_arch_table.h,
# plugins/ref/cold_tables.c) stays as its generator writes it. Another clang-format major version
# formats differently, so the check refuses to run with one: set
# CLANG_FORMAT to a clang-format 14 binary if it is not on the PATH.
set -eu

cd "$(dirname "$0")/.."

fix=0
case "${1:-}" in
    "") ;;
    --fix) fix=1 ;;
    *) echo "usage: scripts/check-format.sh [--fix]" >&2; exit 2 ;;
esac

if [ -z "${CLANG_FORMAT:-}" ]; then
    CLANG_FORMAT=clang-format-14
    command -v "$CLANG_FORMAT" >/dev/null 2>&1 || CLANG_FORMAT=clang-format
fi
if ! command -v "$CLANG_FORMAT" >/dev/null 2>&1; then
    echo "check-format: clang-format not found; install it (apt-get install clang-format, see scripts/setup-deps.sh) or set CLANG_FORMAT" >&2
    exit 2
fi
version=$("$CLANG_FORMAT" --version | sed -n 's/.*clang-format version \([0-9]*\).*/\1/p')
if [ "$version" != 14 ]; then
    echo "check-format: $CLANG_FORMAT is version ${version:-unknown}, .clang-format is tuned for 14 (Debian 12's clang-format); set CLANG_FORMAT to a clang-format 14 binary" >&2
    exit 2
fi

if ! "$CLANG_FORMAT" --style=file --dump-config >/dev/null; then
    echo "check-format: .clang-format does not parse (above)" >&2
    exit 2
fi

list=$(mktemp)
trap 'rm -f "$list"' EXIT
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -co --exclude-standard -- 'host/*.[ch]' 'plugins/*.[ch]' 'sdk/*.[ch]' 'tests/*.[ch]' 'tools/*.[ch]' >"$list"
else
    find host plugins sdk tests tools -name '*.[ch]' -type f >"$list"
fi
# Generated files (the marker in their opening lines) are not formatted.
kept=$(mktemp)
trap 'rm -f "$list" "$kept"' EXIT
while IFS= read -r f; do
    if head -n 12 "$f" | grep -qi 'generated' && head -n 12 "$f" | grep -qi 'do not edit'; then
        continue
    fi
    printf '%s\n' "$f"
done <"$list" >"$kept"
mv "$kept" "$list"

jobs=$(nproc 2>/dev/null || echo 2)
# A file differs when `clang-format --dry-run --Werror` fails on it; one
# echo per file, so the parallel runs cannot interleave their lines.
export CLANG_FORMAT
bad=$(tr '\n' '\0' <"$list" | xargs -0 -r -n 16 -P "$jobs" sh -c \
    'for f; do "$CLANG_FORMAT" --dry-run --Werror "$f" >/dev/null 2>&1 || echo "$f"; done' sh | sort)

if [ -z "$bad" ]; then
    echo "check-format: $(wc -l <"$list") files match .clang-format"
    exit 0
fi
n=$(printf '%s\n' "$bad" | wc -l)
if [ $fix -eq 1 ]; then
    printf '%s\n' "$bad" | tr '\n' '\0' | xargs -0 -r "$CLANG_FORMAT" -i
    echo "check-format: reformatted $n files"
    exit 0
fi
printf '%s\n' "$bad"
echo "check-format: $n files differ from .clang-format; run scripts/check-format.sh --fix" >&2
exit 1
