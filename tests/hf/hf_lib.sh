# hf_lib.sh: what the converter test scripts share; sourced, never run.
#
# The caller sets ANVIL, CMP (hf_compare), DATA (its committed pairs),
# LLAMA_RUN and ORACLE_DIR (empty: llama.cpp is not run). This gives:
#   $T              a temporary folder, removed when the script exits
#   checks, fails   the counters every script prints at its end
#   pass, fail MSG  count a check
#   same A B WHAT   A and B byte-identical (hf_compare says where not)
#   run FILE...     llama.cpp loads and runs FILE (a check when it can run)
#   args_of OPT     a pair's suffix as convert options (vocab: --vocab-only)
#   hf_pairs        each DATA/NAME.OPT.gguf against `anvil convert DATA/NAME`
#                   with OPT, and llama.cpp runs what anvil wrote
#   hf_summary [WHY]   the last line and the exit status (failures -> 1)
#   hf_python MODULE... PY: a python3 that imports them, or hf_summary
#   bad NAME TEXT...   convert of $G/bad-NAME exits 1, says each TEXT and
#                   writes nothing
#   edit FILE PYTHON   change a JSON file (j is its value) with PY
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0 checks=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
pass() { checks=$((checks + 1)); }
same() { cmp -s "$1" "$2" && pass || fail "$3: $("$CMP" "$1" "$2" 2>&1 | head -2)"; }
run() {
    [ -n "$LLAMA_RUN" ] && [ -d "$ORACLE_DIR" ] || return 0
    out=$("$LLAMA_RUN" "$ORACLE_DIR" "$@" 2>&1) && pass || fail "llama.cpp on $1: $(echo "$out" | tail -1)"
}
args_of() { if [ "$1" = vocab ]; then echo --vocab-only; else echo "--outtype $1"; fi; }
hf_pairs() {
    local g b dir opt
    for g in "$DATA"/*.gguf; do
        b=$(basename "$g" .gguf) dir=${b%.*} opt=${b##*.}
        "$ANVIL" convert "$DATA/$dir" "$T/$b.gguf" $(args_of "$opt") --quiet 2>"$T/err" ||
            { fail "convert $b: $(cat "$T/err")"; continue; }
        same "$T/$b.gguf" "$g" "$b"
        [ "$opt" = vocab ] || run "$T/$b.gguf" "$g"
    done
}
hf_summary() {
    echo "checks: $checks, failures: $fails${1:+ ($1)}"
    [ $fails = 0 ]
    exit
}
hf_python() {
    PY=/usr/bin/python3
    [ -x $PY ] || PY=python3
    $PY -c "import $(IFS=,; echo "$*")" 2>/dev/null || hf_summary "no python3 with $*: generated cases skipped"
}

bad() {
    local name=$1; shift
    mkdir -p "$T/out-$name"
    "$ANVIL" convert "$G/bad-$name" "$T/out-$name/x.gguf" >/dev/null 2>"$T/err"; local rc=$?
    [ $rc = 1 ] || { fail "bad $name: exit $rc, want 1 ($(cat "$T/err"))"; return; }
    for want in "$@"; do
        grep -qF -- "$want" "$T/err" || { fail "bad $name: message lacks '$want': $(cat "$T/err")"; return; }
    done
    [ -z "$(ls -A "$T/out-$name")" ] && pass || fail "bad $name: wrote $(ls "$T/out-$name")"
}

edit() {
    $PY - "$1" "$2" <<PYEOF
import json, sys
j = json.load(open(sys.argv[1])); $2; json.dump(j, open(sys.argv[1], "w"))
PYEOF
}
