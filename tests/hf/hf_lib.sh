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
#                   mtp-OPT / nomtp-OPT: OPT with --mtp / --no-mtp,
#                   q8fp8-OPT: OPT with --fp8-as-q8)
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
# (mtp-OPT, nomtp-OPT, q8fp8-OPT: OPT with --mtp, --no-mtp, --fp8-as-q8)
args_of() {
    case $1 in
    vocab) echo --vocab-only ;;
    mtp-*) echo "--mtp $(args_of "${1#mtp-}")" ;;
    nomtp-*) echo "--no-mtp $(args_of "${1#nomtp-}")" ;;
    q8fp8-*) echo "--fp8-as-q8 $(args_of "${1#q8fp8-}")" ;;
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
# quantize HF_DIR with convert's --mtp / --no-mtp (for scripts with MTP classes):
#   quantize_same_with "FLAG" "TYPE..." DIR...  as quantize_same, FLAG given
#                   to both convert and `anvil quantize DIR`; the output must
#                   differ from the one without FLAG (the flag did something)
#   quantize_mtp_checks DIR REFUSED_DIR  `quantize --mtp DIR Q8_0` without
#                   OUT writes DIR/mtp-ggml-model-Q8_0.gguf (and not
#                   ggml-model-Q8_0.gguf); --mtp with --no-mtp, and --mtp on
#                   a GGUF IN: exit 2; --mtp, --no-mtp, --no-nextn on
#                   REFUSED_DIR (a class without MTP export): exit 1 with
#                   convert's message, nothing written
quantize_same_with() {
    local flag=$1 types=$2 d q
    shift 2
    for d in "$@"; do
        [ -d "$d" ] || continue
        for q in $types; do
            "$ANVIL" convert "$d" "$T/auto.gguf" $flag --quiet 2>"$T/err" &&
                "$ANVIL" quantize --quiet "$T/auto.gguf" "$T/two.gguf" $q >/dev/null 2>>"$T/err" &&
                "$ANVIL" quantize --quiet "$d" "$T/one.gguf" $q $flag >/dev/null 2>>"$T/err" &&
                "$ANVIL" quantize --quiet "$d" "$T/plain.gguf" $q >/dev/null 2>>"$T/err" ||
                { fail "quantize $flag $(basename "$d") $q: $(head -3 "$T/err")"; continue; }
            same "$T/one.gguf" "$T/two.gguf" "quantize $flag $(basename "$d") $q"
            cmp -s "$T/one.gguf" "$T/plain.gguf" && fail "quantize $flag $(basename "$d") $q: the same file as without $flag" || pass
        done
    done
}
quantize_mtp_checks() {
    local d=$1 refused=$2 flag rc
    rm -f "$d"/*.gguf
    "$ANVIL" quantize --quiet --mtp "$d" Q8_0 >/dev/null 2>"$T/err" &&
        [ -f "$d/mtp-ggml-model-Q8_0.gguf" ] && [ ! -e "$d/ggml-model-Q8_0.gguf" ] && pass ||
        fail "quantize --mtp $(basename "$d") Q8_0 (default name): $(cat "$T/err"), wrote $(cd "$d" && ls -- *.gguf 2>/dev/null)"
    "$ANVIL" convert "$d" "$T/m.gguf" --mtp --quiet 2>"$T/err" && "$ANVIL" quantize --quiet "$T/m.gguf" "$T/mq.gguf" Q8_0 >/dev/null 2>>"$T/err" &&
        same "$d/mtp-ggml-model-Q8_0.gguf" "$T/mq.gguf" "quantize --mtp default name's bytes" || fail "convert --mtp + quantize: $(cat "$T/err")"
    rm -f "$d"/*.gguf
    "$ANVIL" quantize "$d" "$T/x.gguf" Q8_0 --mtp --no-nextn >/dev/null 2>"$T/err"
    rc=$?
    [ $rc = 2 ] && grep -q "mutually exclusive" "$T/err" && [ ! -e "$T/x.gguf" ] && pass || fail "quantize --mtp --no-nextn: exit $rc, $(cat "$T/err")"
    "$ANVIL" quantize "$T/m.gguf" "$T/x.gguf" Q8_0 --no-mtp >/dev/null 2>"$T/err"
    rc=$?
    [ $rc = 2 ] && grep -q "Hugging Face folder" "$T/err" && [ ! -e "$T/x.gguf" ] && pass || fail "quantize GGUF --no-mtp: exit $rc, $(cat "$T/err")"
    for flag in --mtp --no-mtp --no-nextn; do
        rm -rf "$T/out-qmtp" && mkdir -p "$T/out-qmtp"
        "$ANVIL" quantize "$refused" "$T/out-qmtp/a.gguf" Q4_K_M $flag >/dev/null 2>"$T/err"
        rc=$?
        [ $rc = 1 ] && grep -qF -- "--mtp / --no-nextn are not supported for" "$T/err" && [ -z "$(ls -A "$T/out-qmtp")" ] &&
            pass || fail "quantize $(basename "$refused") $flag: exit $rc, $(cat "$T/err"), wrote $(ls "$T/out-qmtp")"
    done
}
# transcode --from HF_DIR with --mtp / --no-mtp, quantize HF_DIR with
# --fp8-as-q8 (for scripts with those classes):
#   transcode_mtp_checks DIR REFUSED_DIR  `transcode --from DIR --mtp`
#                   (--no-mtp) writes the bytes of convert --mtp (--no-mtp)
#                   + transcode of that file, not those without the flag;
#                   --mtp with --no-nextn, and --mtp or --no-mtp with a GGUF
#                   --from: exit 2; each flag on REFUSED_DIR: exit 1 with
#                   convert's message, nothing written
#   quantize_fp8q8_checks DIR  (an FP8 checkpoint) `quantize DIR Q4_K_M
#                   --fp8-as-q8` refuses to requantize its Q8_0 tensors (exit
#                   1) as quantize of convert --fp8-as-q8's file does; with
#                   --allow-requantize the bytes of that pair; --fp8-as-q8
#                   with a GGUF IN: exit 2
transcode_mtp_checks() {
    local d=$1 refused=$2 flag rc
    for flag in --mtp --no-mtp; do
        "$ANVIL" convert "$d" "$T/tm.gguf" $flag --quiet 2>"$T/err" &&
            "$ANVIL" transcode --from "$T/tm.gguf" --out "$T/tm2.gguf" --dtype q8_0 --quiet 2>>"$T/err" &&
            "$ANVIL" transcode --from "$d" --out "$T/tm1.gguf" --dtype q8_0 $flag --quiet 2>>"$T/err" &&
            "$ANVIL" transcode --from "$d" --out "$T/tm0.gguf" --dtype q8_0 --quiet 2>>"$T/err" ||
            { fail "transcode --from $(basename "$d") $flag: $(head -3 "$T/err")"; continue; }
        same "$T/tm1.gguf" "$T/tm2.gguf" "transcode --from $(basename "$d") $flag"
        cmp -s "$T/tm1.gguf" "$T/tm0.gguf" && fail "transcode $flag $(basename "$d"): the same file as without $flag" || pass
    done
    rm -f "$T/x.gguf"
    "$ANVIL" transcode --from "$d" --out "$T/x.gguf" --dtype q8_0 --mtp --no-nextn >/dev/null 2>"$T/err"
    rc=$?
    [ $rc = 2 ] && grep -q "mutually exclusive" "$T/err" && [ ! -e "$T/x.gguf" ] && pass || fail "transcode --mtp --no-nextn: exit $rc, $(cat "$T/err")"
    for flag in --mtp --no-mtp; do
        "$ANVIL" transcode --from "$T/tm.gguf" --out "$T/x.gguf" --dtype q8_0 $flag >/dev/null 2>"$T/err"
        rc=$?
        [ $rc = 2 ] && grep -q "Hugging Face folder" "$T/err" && [ ! -e "$T/x.gguf" ] && pass || fail "transcode GGUF $flag: exit $rc, $(cat "$T/err")"
    done
    for flag in --mtp --no-mtp --no-nextn; do
        rm -rf "$T/out-tmtp" && mkdir -p "$T/out-tmtp"
        "$ANVIL" transcode --from "$refused" --out "$T/out-tmtp/a.gguf" --dtype q8_0 $flag >/dev/null 2>"$T/err"
        rc=$?
        [ $rc = 1 ] && grep -qF -- "--mtp / --no-nextn are not supported for" "$T/err" && [ -z "$(ls -A "$T/out-tmtp")" ] &&
            pass || fail "transcode $(basename "$refused") $flag: exit $rc, $(cat "$T/err"), wrote $(ls "$T/out-tmtp")"
    done
}
quantize_fp8q8_checks() {
    local d=$1 rc
    rm -f "$T/q1.gguf"
    "$ANVIL" quantize --quiet "$d" "$T/q1.gguf" Q4_K_M --fp8-as-q8 >/dev/null 2>"$T/err"
    rc=$?
    [ $rc = 1 ] && grep -q "requantizing from type q8_0 is disabled" "$T/err" && [ ! -e "$T/q1.gguf" ] && pass ||
        fail "quantize $(basename "$d") Q4_K_M --fp8-as-q8: exit $rc, $(cat "$T/err")"
    "$ANVIL" convert "$d" "$T/q8.gguf" --fp8-as-q8 --quiet 2>"$T/err" &&
        "$ANVIL" quantize --quiet --allow-requantize "$T/q8.gguf" "$T/q2.gguf" Q4_K_M >/dev/null 2>>"$T/err" &&
        "$ANVIL" quantize --quiet --allow-requantize "$d" "$T/q1.gguf" Q4_K_M --fp8-as-q8 >/dev/null 2>>"$T/err" &&
        same "$T/q1.gguf" "$T/q2.gguf" "quantize --fp8-as-q8 --allow-requantize $(basename "$d") Q4_K_M" ||
        fail "quantize --fp8-as-q8 --allow-requantize $(basename "$d"): $(head -3 "$T/err")"
    rm -f "$T/x.gguf"
    "$ANVIL" quantize "$T/q8.gguf" "$T/x.gguf" Q8_0 --fp8-as-q8 >/dev/null 2>"$T/err"
    rc=$?
    [ $rc = 2 ] && grep -q "Hugging Face folder" "$T/err" && [ ! -e "$T/x.gguf" ] && pass || fail "quantize GGUF --fp8-as-q8: exit $rc, $(cat "$T/err")"
}
# convert_half PRE DIR OPTS...: for scripts that set G, PY, TOOLS: each OPT
# by both converters, compared, for a checkpoint with an F16 A_log
# (Qwen3NextModel.modify_tensors' -torch.exp on float16): the converter as
# it is when its torch has a CPU exp for Half, else through half_exp.py
# (PyTorch 2's Half exp: torch 1.13's float32 exp rounded to float16)
convert_half() {
    local pre=$1 d=$2 o wrap=
    shift 2
    (cd "$G" && FORCE_PRE=$pre $PY "$TOOLS/convert_here.py" $d --outtype f32 --outfile "$G/$d.probe.py.gguf" >"$G/$d.probe.log" 2>&1) ||
        { grep -q "not implemented for 'Half'" "$G/$d.probe.log" && wrap="$HERE/half_exp.py"; } ||
        { fail "convert_hf_to_gguf.py $d f32: $(tail -2 "$G/$d.probe.log")"; return; }
    for o in "$@"; do
        (cd "$G" && FORCE_PRE=$pre $PY $wrap "$TOOLS/convert_here.py" $d $(args_of $o) --outfile "$G/$d.$o.py.gguf" >"$G/$d.$o.log" 2>&1) ||
            { fail "convert_hf_to_gguf.py $d $o: $(tail -2 "$G/$d.$o.log")"; continue; }
        "$ANVIL" convert "$G/$d" "$G/$d.$o.gguf" $(args_of $o) --quiet 2>"$T/err" || { fail "anvil convert $d $o: $(cat "$T/err")"; continue; }
        same "$G/$d.$o.gguf" "$G/$d.$o.py.gguf" "$d $o (F16 A_log${wrap:+, through half_exp.py})"
    done
}
