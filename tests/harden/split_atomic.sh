#!/bin/bash
# Split sets are replaced as one (issue 20, item 1), temp files do not
# outlive their writer (item 3).
#
#   split_atomic.sh ANVIL SYNTH SHIM [RANDOM_KILLS] [WRITER]
#
# WRITER (default split) is the command that writes the sets: `anvil split`
# of two models, or with `quantize`, `anvil quantize --keep-split` of one
# split model to Q8_0 (set A) and Q4_0 (set B), which commits its parts
# through the same journaled set commit (steps 1, 2 and 5 then; the others
# test the reader and the temp files, whoever wrote them).
#
# SHIM is fault_shim.so, built from tests/harden/fault_shim.c (LD_PRELOAD): it kills the writer just
# before its n-th rename/link/unlink, or fails its n-th rename, so every step
# of a commit is tested, not only the ones a timer happens to hit.
#
#  1. kill at every step of replacing set A by set B: the parts on disk are
#     all A, all B, or (mid-commit) part 1 is absent -- never a mix; anvil's
#     reader reads all A or all B; the next anvil write in the folder leaves
#     exactly that set and no litter;
#  2. every rename of the commit failing in turn: exit 1, set A intact,
#     nothing left over;
#  3. a folder squatting on part 3's name: exit 1 naming it, A's other parts
#     untouched;
#  4. parts of two sets mixed by hand: anvil's reader refuses, naming the part;
#  5. RANDOM_KILLS kill -9 at random moments, alternating A and B;
#  6. temp files: kill -9 loops with and without O_TMPFILE; a dead writer's
#     temp is removed by the next write, a live writer's never.
set -u
ANVIL=$1 SYNTH=$2 SHIM=$3 RANDOM_KILLS=${4:-30} WRITER=${5:-split}
W=$(mktemp -d "${TMPDIR:-/tmp}/anvil-split-atomic-XXXXXX")
trap 'kill $SLEEPER 2>/dev/null; rm -rf "$W"' EXIT
SLEEPER=
fail() { echo "FAIL: $*" >&2; exit 1; }
say() { echo "split_atomic: $*"; }

"$SYNTH" "$W/a.gguf" small f16 >/dev/null || fail "synth"
"$ANVIL" transcode --from "$W/a.gguf" --out "$W/b.gguf" --dtype q8_0 >/dev/null 2>&1 || fail "transcode b"
MT=6
mkdir "$W/refA" "$W/refB" "$W/set" "$W/out" "$W/in"
"$ANVIL" split "$W/a.gguf" "$W/in/m" --max-tensors $MT >/dev/null || fail "split input"
IN_FIRST=$(cd "$W/in" && ls | head -1)
# set_args a|b PREFIX: ARGS = the command writing set A or B with the
# writer under test; write_set runs it.
set_args() {
    if [ "$WRITER" = quantize ]; then
        ARGS=("$ANVIL" quantize --quiet --no-quality --keep-split "$W/in/$IN_FIRST" "$2"
              "$([ "$1" = a ] && echo Q8_0 || echo Q4_0)")
    else
        ARGS=("$ANVIL" split "$W/$1.gguf" "$2" --max-tensors $MT)
    fi
}
write_set() { set_args "$1" "$2" && "${ARGS[@]}"; }
write_set a "$W/refA/m" >/dev/null || fail "$WRITER A"
write_set b "$W/refB/m" >/dev/null || fail "$WRITER B"
N=$(ls "$W/refA" | wc -l)
[ "$N" -ge 3 ] && [ "$(ls "$W/refB" | wc -l)" = "$N" ] || fail "reference sets: $N parts"
NAMES=$(cd "$W/refA" && ls)
FIRST=$(printf 'm-00001-of-%05d.gguf' "$N")
sig() { (cd "$1" && for f in $NAMES; do sha256sum < "$f" 2>/dev/null || echo absent; done) | sha256sum; }
SA=$(sig "$W/refA") SB=$(sig "$W/refB")
"$ANVIL" merge "$W/refA/$FIRST" "$W/out/mA.gguf" >/dev/null || fail "merge A"
"$ANVIL" merge "$W/refB/$FIRST" "$W/out/mB.gguf" >/dev/null || fail "merge B"
MA=$(sha256sum < "$W/out/mA.gguf") MB=$(sha256sum < "$W/out/mB.gguf")

# What the folder holds: A, B, GAP (no part 1: a commit in flight), or MIX.
on_disk() {
    if [ ! -e "$W/set/$FIRST" ]; then echo GAP; return; fi
    local s; s=$(sig "$W/set")
    if [ "$s" = "$SA" ]; then echo A; elif [ "$s" = "$SB" ]; then echo B; else echo MIX; fi
}
# What anvil's reader reads (merge writes elsewhere, so it changes nothing here).
reads() {
    rm -f "$W/out/r.gguf"
    if ! "$ANVIL" merge "$W/set/$FIRST" "$W/out/r.gguf" >/dev/null 2>"$W/out/r.err"; then
        echo "ERR:$(head -c 300 "$W/out/r.err")"; return
    fi
    local s; s=$(sha256sum < "$W/out/r.gguf")
    if [ "$s" = "$MA" ]; then echo A; elif [ "$s" = "$MB" ]; then echo B; else echo MIX; fi
}
# Start a command and kill -9 it after a random delay in [0, $1] us; true
# when the kill landed before it finished.
kill_randomly() {
    local max=$1; shift
    "$@" >/dev/null 2>&1 &
    local pid=$! d=$(( (RANDOM * 32768 + RANDOM) % (max + 1) ))
    sleep "$(printf '0.%06d' "$d")"
    local landed=1
    kill -9 $pid 2>/dev/null && landed=0
    wait $pid 2>/dev/null
    return $landed
}
litter() { find "$1" -maxdepth 1 -name '.*anvil*' | wc -l; }
reset_a() { rm -rf "$W/set"; cp -a "$W/refA" "$W/set"; }
# Another anvil write in the folder: it finishes or undoes a dead writer's commit.
next_writer() {
    "$ANVIL" reemit "$W/a.gguf" "$W/set/other.gguf" >/dev/null 2>&1 || fail "next writer"
    rm -f "$W/set/other.gguf"
}

# ---- 1. a kill at every step -----------------------------------------------------
reset_a
LD_PRELOAD="$SHIM" ANVIL_FAULT_COUNT="$W/count" write_set b "$W/set/m" >/dev/null ||
    fail "$WRITER B over A"
read -r STEPS RENAMES < "$W/count"
[ "$(on_disk)" = B ] || fail "split B over A: not B"
[ "$(litter "$W/set")" = 0 ] || fail "split B over A left litter"
killed_at() {
    LD_PRELOAD="$SHIM" ANVIL_FAULT_KILL_AT=$1 write_set b "$W/set/m" >/dev/null 2>&1
}
gaps=0 as=0 bs=0 ra=0 rb=0
for n in $(seq 1 "$STEPS"); do
    reset_a
    killed_at $n 2>/dev/null
    rc=$?
    [ $rc = 137 ] || fail "step $n: not killed (exit $rc)"
    disk=$(on_disk) read=$(reads)
    # On disk: all old, all new, or no part 1 (what llama.cpp then sees).
    # anvil's reader: all old or all new (a commit whose journal is complete
    # reads as the new set before its renames are done).
    case "$disk" in A|B|GAP) ;; *) fail "step $n: the folder holds a mixed set" ;; esac
    case "$read" in A|B) ;; *) fail "step $n: the folder holds $disk and anvil reads $read" ;; esac
    next_writer
    after=$(on_disk)
    [ "$after" = "$read" ] || fail "step $n: the reader read $read, the next writer left $after"
    [ -z "$(find "$W/set" -name '*.anvil-commit' -o -name '*-old')" ] ||
        fail "step $n: journal or backups left after the next writer: $(ls -A "$W/set")"
    # Temps made before the commit began belong to that output: its next
    # write removes them.
    write_set a "$W/set/m" >/dev/null || fail "step $n: rewrite"
    [ "$(on_disk)" = A ] || fail "step $n: rewrite is not A"
    [ "$(litter "$W/set")" = 0 ] || fail "step $n: litter after rewriting: $(ls -A "$W/set")"
    case "$disk" in GAP) gaps=$((gaps + 1)) ;; A) as=$((as + 1)) ;; B) bs=$((bs + 1)) ;; esac
    case "$read" in A) ra=$((ra + 1)) ;; B) rb=$((rb + 1)) ;; esac
done
say "kill at each of $STEPS steps: never mixed on disk (old $as, new $bs, part 1 in flight $gaps); anvil read old $ra, new $rb; the next writer always left what the reader read; no litter"

# ---- 2. each rename failing ---------------------------------------------------------
for n in $(seq 1 "$RENAMES"); do
    reset_a
    LD_PRELOAD="$SHIM" ANVIL_FAULT_RENAME_FAIL=$n write_set b "$W/set/m" >/dev/null 2>"$W/err"
    rc=$?
    [ $rc = 1 ] || fail "rename $n failing: exit $rc"
    [ "$(on_disk)" = A ] || fail "rename $n failing: the old set is not intact ($(on_disk))"
    [ "$(litter "$W/set")" = 0 ] || fail "rename $n failing: litter $(ls -A "$W/set")"
done
say "each of $RENAMES renames failing: exit 1, old set intact, no litter"
if [ "$WRITER" = quantize ]; then
    SKIP_SPLIT_ONLY=1
else
    SKIP_SPLIT_ONLY=0
fi

# ---- 3. a folder squatting on part 3 ---------------------------------------------------
if [ $SKIP_SPLIT_ONLY = 0 ]; then
reset_a
P3=$(printf 'm-00003-of-%05d.gguf' "$N")
rm "$W/set/$P3" && mkdir "$W/set/$P3" && touch "$W/set/$P3/keep"
before=$(cd "$W/set" && sha256sum m-00001* m-00002* m-00004* 2>/dev/null)
"$ANVIL" split "$W/b.gguf" "$W/set/m" --max-tensors $MT >/dev/null 2>"$W/err"
rc=$?
[ $rc = 1 ] || fail "squatter: exit $rc"
grep -q "$P3" "$W/err" || fail "squatter: the message does not name $P3: $(cat "$W/err")"
[ "$(cd "$W/set" && sha256sum m-00001* m-00002* m-00004* 2>/dev/null)" = "$before" ] ||
    fail "squatter: old parts changed"
[ -f "$W/set/$P3/keep" ] || fail "squatter: the folder was touched"
[ "$(litter "$W/set")" = 0 ] || fail "squatter: litter"
say "a folder on part 3's name: exit 1 naming it, the other old parts untouched"

# ---- 4. mixed by hand ----------------------------------------------------------------------
reset_a
P2=$(printf 'm-00002-of-%05d.gguf' "$N")
rm "$W/set/$P2" && cp -a "$W/refB/$P2" "$W/set/$P2"
"$ANVIL" merge "$W/set/$FIRST" "$W/out/x.gguf" >/dev/null 2>"$W/err" && fail "a mixed set opens"
grep -q "$P2.*part 2 of $N does not belong" "$W/err" || fail "mixed set message: $(cat "$W/err")"
"$ANVIL" inspect "$W/set/$FIRST" >"$W/out/inspect.txt" 2>&1 && fail "inspect: a mixed set reads"
grep -q "part 2 of $N does not belong" "$W/out/inspect.txt" || fail "inspect of a mixed set: $(cat "$W/out/inspect.txt")"
reset_a
rm "$W/set/$P2" && cat "$W/refB/$P2" > "$W/set/$P2"   # a copy without the mark
"$ANVIL" merge "$W/set/$FIRST" "$W/out/x.gguf" >/dev/null 2>"$W/err" && fail "a part without mark opens"
grep -q "part 2 of $N does not belong" "$W/err" || fail "unmarked part message: $(cat "$W/err")"
say "parts of two sets mixed by hand: refused, naming part 2"
fi

# ---- 5. random kill -9 -----------------------------------------------------------------------
reset_a
t0=$(date +%s%N)
write_set b "$W/set/m" >/dev/null || fail "timing run"
dur_us=$(( ($(date +%s%N) - t0) / 1000 ))
killed=0 mixed=0
for i in $(seq 1 "$RANDOM_KILLS"); do
    src=$([ $((i % 2)) = 0 ] && echo a || echo b)
    set_args "$src" "$W/set/m"
    kill_randomly "$dur_us" "${ARGS[@]}" 2>/dev/null &&
        killed=$((killed + 1))
    disk=$(on_disk) read=$(reads)
    case "$read" in A|B) ;; *) fail "random kill $i: anvil reads $read" ;; esac
    case "$disk" in A|B|GAP) ;; *) mixed=$((mixed + 1)) ;; esac
done
[ $mixed = 0 ] || fail "random kills: $mixed mixed sets on disk"
write_set b "$W/set/m" >/dev/null || fail "random kills: final run"
[ "$(on_disk)" = B ] || fail "random kills: final state $(on_disk)"
[ "$(litter "$W/set")" = 0 ] || fail "random kills: litter $(ls -A "$W/set")"
say "$RANDOM_KILLS random kill -9 ($killed landed, run ~${dur_us} us): never mixed, reader always A or B, no litter after the next write"

[ $SKIP_SPLIT_ONLY = 0 ] || exit 0
# ---- 6. temp files ---------------------------------------------------------------------------
mkdir "$W/tmp"
sleep 600 & SLEEPER=$!
dead=$(sh -c 'echo $$')
: > "$W/tmp/.o.gguf.anvil-$SLEEPER-live01"        # a live writer's temp
: > "$W/tmp/.o.gguf.anvil-$dead-dead01"           # a dead writer's temp
: > "$W/tmp/.other.gguf.anvil-$dead-dead02"       # a dead writer of another file
"$ANVIL" transcode --from "$W/a.gguf" --out "$W/tmp/o.gguf" --dtype q8_0 >/dev/null 2>&1 || fail "transcode"
[ -e "$W/tmp/.o.gguf.anvil-$SLEEPER-live01" ] || fail "a live writer's temp was removed"
[ ! -e "$W/tmp/.o.gguf.anvil-$dead-dead01" ] || fail "a dead writer's temp was kept"
[ -e "$W/tmp/.other.gguf.anvil-$dead-dead02" ] || fail "another output's temp was removed"
rm -f "$W/tmp"/.*anvil*
t0=$(date +%s%N)
"$ANVIL" transcode --from "$W/a.gguf" --out "$W/tmp/o.gguf" --dtype q4_K >/dev/null 2>&1 || fail "transcode"
dur_us=$(( ($(date +%s%N) - t0) / 1000 ))
for mode in tmpfile named; do
    left=0
    for i in $(seq 1 10); do
        if [ $mode = named ]; then
            kill_randomly "$dur_us" env LD_PRELOAD="$SHIM" ANVIL_FAULT_NO_TMPFILE=1 \
                "$ANVIL" transcode --from "$W/a.gguf" --out "$W/tmp/o.gguf" --dtype q4_K 2>/dev/null
        else
            kill_randomly "$dur_us" "$ANVIL" transcode --from "$W/a.gguf" --out "$W/tmp/o.gguf" \
                --dtype q4_K 2>/dev/null
        fi
        [ "$(litter "$W/tmp")" = 0 ] || left=$((left + 1))
        # The next run of the same output removes what a dead writer left.
        if [ $mode = named ]; then
            LD_PRELOAD="$SHIM" ANVIL_FAULT_NO_TMPFILE=1 \
                "$ANVIL" transcode --from "$W/a.gguf" --out "$W/tmp/o.gguf" --dtype q8_0 >/dev/null 2>&1 ||
                fail "transcode after a kill"
        else
            "$ANVIL" transcode --from "$W/a.gguf" --out "$W/tmp/o.gguf" --dtype q8_0 >/dev/null 2>&1 ||
                fail "transcode after a kill"
        fi
        [ "$(litter "$W/tmp")" = 0 ] || fail "$mode: litter after the next run: $(ls -A "$W/tmp")"
    done
    say "temp files ($mode): 10 kill -9 during transcode, $left left a temp, the next run removed it, 0 left"
done
[ "$mode" = named ] && [ "$left" -gt 0 ] || say "note: no kill landed while a named temp existed"
exit 0
