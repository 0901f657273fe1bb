# hf_lib.sh: what the converter test scripts share; sourced, never run.
#
# The caller sets ANVIL, CMP (hf_compare), DATA (its committed pairs),
# LLAMA_RUN and ORACLE_DIR (empty: llama.cpp is not run). This gives:
#   $T              a temporary folder, removed when the script exits
#   checks, fails   the counters every script prints at its end
#   pass, fail MSG  count a check
#   same A B WHAT   A and B byte-identical (hf_compare says where not)
#   run FILE...     llama.cpp loads and runs FILE (a check when it can run)
#   args_of OPT     a pair's suffix as convert options (vocab: --vocab-only,
#                   mtp-OPT / nomtp-OPT: OPT with --mtp / --no-mtp)
#   hf_pairs        each DATA/NAME.OPT.gguf against `anvil convert DATA/NAME`
#                   with OPT, and llama.cpp runs what anvil wrote
#   hf_summary [WHY]   the last line and the exit status (failures -> 1)
#   hf_python MODULE... PY: a python3 that imports them, or hf_summary
#   bad NAME TEXT...   convert of $G/bad-NAME exits 1, says each TEXT and
#                   writes nothing
#   edit FILE PYTHON   change a JSON file (j is its value) with PY
#   quantize_same "TYPE..." DIR...   `anvil quantize DIR OUT TYPE` writes the
#                   bytes of convert --outtype auto + anvil quantize (a DIR
#                   that was not generated is skipped)
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
# (mtp-OPT, nomtp-OPT: OPT with --mtp, --no-mtp)
args_of() {
    case $1 in
    vocab) echo --vocab-only ;;
    mtp-*) echo "--mtp $(args_of "${1#mtp-}")" ;;
    nomtp-*) echo "--no-mtp $(args_of "${1#nomtp-}")" ;;
    *) echo "--outtype $1" ;;
    esac
}
hf_pairs() {
    local g b dir opt
    for g in "$DATA"/*.gguf; do
        b=$(basename "$g" .gguf) dir=${b%.*} opt=${b##*.}
        "$ANVIL" convert "$DATA/$dir" "$T/$b.gguf" $(args_of "$opt") --quiet 2>"$T/err" ||
            { fail "convert $b: $(cat "$T/err")"; continue; }
        same "$T/$b.gguf" "$g" "$b"
        case $opt in *vocab | mtp-*) ;; *) run "$T/$b.gguf" "$g" ;; esac # an MTP head alone: no model to run
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

# --mtp / --no-mtp (--no-nextn), for scripts that set G, PY, TOOLS:
#   mtp_default_name DIR PRE OPTS...  `--mtp OPTS` without OUT: convert names
#                   the file mtp-<Name>-<TYPE>.gguf in DIR; anvil the same
#                   name and bytes
#   mtp_refused DIR [PRE]  a class without MTP export: anvil refuses --mtp,
#                   --no-mtp, --no-nextn (exit 1, nothing written); with PRE
#                   the converter is checked to refuse them too
mtp_default_name() {
    local d=$1 pre=$2 py
    shift 2
    (cd "$G" && FORCE_PRE=$pre $PY "$TOOLS/convert_here.py" $d --mtp "$@" >"$G/$d.mtpname.log" 2>&1) ||
        { fail "convert_hf_to_gguf.py $d --mtp $* (default name): $(tail -2 "$G/$d.mtpname.log")"; return; }
    py=$(cd "$G/$d" && ls -- *.gguf 2>/dev/null)
    case $py in mtp-*.gguf) ;; *) fail "convert_hf_to_gguf.py $d --mtp wrote '$py'"; return ;; esac
    mkdir -p "$T/mtpname" && mv "$G/$d/$py" "$T/mtpname/$py"
    "$ANVIL" convert "$G/$d" --mtp "$@" --quiet 2>"$T/err" || { fail "anvil convert $d --mtp $*: $(cat "$T/err")"; return; }
    [ -f "$G/$d/$py" ] || { fail "anvil convert $d --mtp $* wrote $(cd "$G/$d" && ls -- *.gguf), not $py"; return; }
    same "$G/$d/$py" "$T/mtpname/$py" "$d --mtp $* ($py)"
    rm -f "$G/$d/$py"
}
mtp_refused() {
    local d=$1 pre=${2:-} flag rc
    for flag in --mtp --no-mtp --no-nextn; do
        rm -rf "$T/out-mtp" && mkdir -p "$T/out-mtp"
        if [ -n "$pre" ]; then
            (cd "$(dirname "$d")" && FORCE_PRE=$pre $PY "$TOOLS/convert_here.py" "$d" $flag --outfile "$T/out-mtp/p.gguf" >"$T/pylog" 2>&1) &&
                fail "convert_hf_to_gguf.py took $flag for $d"
            grep -q -- "--mtp / --no-nextn are not supported for" "$T/pylog" && pass ||
                fail "convert_hf_to_gguf.py $d $flag: $(tail -1 "$T/pylog")"
        fi
        "$ANVIL" convert "$d" "$T/out-mtp/a.gguf" $flag >/dev/null 2>"$T/err"
        rc=$?
        [ $rc = 1 ] && grep -qF -- "--mtp / --no-nextn are not supported for" "$T/err" && [ -z "$(ls -A "$T/out-mtp")" ] &&
            pass || fail "anvil convert $d $flag: exit $rc, $(cat "$T/err"), wrote $(ls "$T/out-mtp")"
    done
}
quantize_same() {
    local types=$1 d q
    shift
    for d in "$@"; do
        [ -d "$d" ] || continue
        for q in $types; do
            "$ANVIL" convert "$d" "$T/auto.gguf" --quiet 2>"$T/err" &&
                "$ANVIL" quantize --quiet "$T/auto.gguf" "$T/two.gguf" $q >/dev/null 2>>"$T/err" &&
                "$ANVIL" quantize --quiet "$d" "$T/one.gguf" $q >/dev/null 2>>"$T/err" ||
                { fail "quantize $(basename "$d") $q: $(head -3 "$T/err")"; continue; }
            same "$T/one.gguf" "$T/two.gguf" "quantize $(basename "$d") $q"
        done
    done
}
