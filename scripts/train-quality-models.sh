#!/bin/sh
# Rebuilds the trained test models of issue 40 (quantization-quality
# measurements on models nobody tuned --target-size on): per model a corpus
# cut by file into train / calibration / held-out text, a SentencePiece BPE
# tokenizer (2048, byte fallback) trained on its training text, a small LLaMA
# trained on it (../shared/tools/train-tiny), converted to GGUF f16 by
# llama.cpp's own convert_hf_to_gguf.py, and anvil's imatrix on the
# calibration text (512-token chunks, as ../shared/testdata/quality).
#
#   scripts/train-quality-models.sh [NAME ...]   (default: A B C D E F)
#
# Writes /work/models/<dir>/ (MODELS_DIR): train.txt calib.txt heldout.txt
# spm.model model.pt hf/ model.f16.gguf imatrix.gguf train.log. Not in git
# (several MB each). D, E and F are the held-out models: look at them last.
# Environment: MODELS_DIR, MINUTES (training minutes, default 5), THREADS (1:
# on a machine shared by many jobs torch's second thread costs more than it
# gives), BATCH (sequences of 256 tokens a step, default 2: more steps in few
# minutes), REUSE=1 (keep an existing corpus split and tokenizer),
# ANVIL (default build/bin/anvil), LLAMA_SRC (llama.cpp source tree),
# TOOLS (default ../shared/tools).
#
# Models (name: dir, corpus, shape):
#   A  docs-en-tied6   English docs in /usr/share/doc   tied,   6 layers, h 256, ff 768, 4/2 heads
#   B  c-hdr-192x8     C headers in /usr/include        untied, 8 layers, h 192, ff 512, 4/2 heads
#   C  perl-tied5      Perl modules in /usr/share/perl  tied,   5 layers, h 256, ff 768, 4/2 heads
#   D  cmake-untied6   CMake modules /usr/share/cmake*  untied, 6 layers, h 256, ff 640, 4/2 heads
#   E  manroff-tied4   man page roff sources            tied,   4 layers, h 320, ff 864, 4/2 heads
#   F  js-qwen3-tied6  JavaScript in /usr/lib/node_modules, Qwen3 (q/k norms, rope base 1e6; trained by
#                      scripts/train_tiny_qwen3.py), tied, 6 layers, h 256, ff 704, 4/2 heads
# File split: files in sorted path order, index i: i%20==0 -> held-out,
# i%20==1 -> calibration, else training; caps 80 KB held-out, 100 KB
# calibration, 4 MB training (files cut at whole lines is not attempted:
# whole files, the last one truncated at the cap).
set -eu
MODELS_DIR=${MODELS_DIR:-/work/models}
MINUTES=${MINUTES:-5}
THREADS=${THREADS:-1}
BATCH=${BATCH:-2}
REUSE=${REUSE:-0}
ANVIL=${ANVIL:-build/bin/anvil}
LLAMA_SRC=${LLAMA_SRC:-/work/main/build/oracle/llama.cpp}
TOOLS=${TOOLS:-../shared/tools}
PY=/usr/bin/python3
export LLAMA_SRC

# list_files NAME: the corpus's files, sorted, one a line
list_files() {
    case $1 in
    A) find /usr/share/doc -type f \( -name 'README*' -o -name '*.txt' -o -name '*.md' -o -name 'NEWS*' \) \
           ! -name '*.html' | LC_ALL=C sort ;;
    B) find /usr/include -type f -name '*.h' | LC_ALL=C sort ;;
    C) find /usr/share/perl -type f -name '*.pm' | LC_ALL=C sort ;;
    D) find /usr/share/cmake-* -type f \( -name '*.cmake' -o -name 'CMakeLists.txt' \) | LC_ALL=C sort ;;
    E) find /usr/share/man/man1 /usr/share/man/man3 /usr/share/man/man5 /usr/share/man/man8 \
           -type f -name '*.gz' | LC_ALL=C sort ;;
    F) find /usr/lib/node_modules -type f -name '*.js' ! -name '*.min.js' | LC_ALL=C sort ;;
    esac
}

# split NAME OUTDIR: write train.txt calib.txt heldout.txt
split_corpus() {
    list_files "$1" | $PY -c '
import sys, gzip
out = sys.argv[1]
caps = {"heldout": 80000, "calib": 100000, "train": 4000000}
bufs = {k: [] for k in caps}; size = {k: 0 for k in caps}
for i, path in enumerate(l.rstrip("\n") for l in sys.stdin):
    k = "heldout" if i % 20 == 0 else "calib" if i % 20 == 1 else "train"
    if size[k] >= caps[k]: continue
    try:
        raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
        t = raw.decode("utf-8")
    except Exception:
        continue
    if "\0" in t or not t.strip(): continue
    t = t[: caps[k] - size[k]]
    bufs[k].append(t); size[k] += len(t)
for k in caps:
    open(f"{out}/{k}.txt", "w").write("\n".join(bufs[k]))
    print(k, size[k], file=sys.stderr)
' "$2"
}

# shape NAME: dir tied layers hidden inter heads kv seed arch
shape() {
    case $1 in
    A) echo "docs-en-tied6 --tied 6 256 768 4 2 11 llama" ;;
    B) echo "c-hdr-192x8 - 8 192 512 4 2 12 llama" ;;
    C) echo "perl-tied5 --tied 5 256 768 4 2 13 llama" ;;
    D) echo "cmake-untied6 - 6 256 640 4 2 14 llama" ;;
    E) echo "manroff-tied4 --tied 4 320 864 4 2 15 llama" ;;
    F) echo "js-qwen3-tied6 --tied 6 256 704 4 2 16 qwen3" ;;
    *) echo "unknown model $1" >&2; exit 1 ;;
    esac
}

build_one() {
    # shellcheck disable=SC2046
    set -- "$1" $(shape "$1")
    name=$1 dir=$MODELS_DIR/$2 tied=$3 layers=$4 hidden=$5 inter=$6 heads=$7 kv=$8 seed=$9 arch=${10}
    trainer="$TOOLS/train-tiny/train_tiny.py"
    [ "$arch" = qwen3 ] && trainer="$(dirname "$0")/train_tiny_qwen3.py"
    [ "$tied" = - ] && tied=""
    mkdir -p "$dir"
    echo "== $name -> $dir ($(date -u +%H:%M:%S))"
    if [ "$REUSE" = 1 ] && [ -s "$dir/spm.model" ]; then
        echo "reusing $dir/*.txt and spm.model"
    else
        split_corpus "$name" "$dir"
        $PY -c '
import sentencepiece as spm, sys
spm.SentencePieceTrainer.train(input=sys.argv[1], model_prefix=sys.argv[2], vocab_size=2048,
    model_type="bpe", byte_fallback=True, character_coverage=0.9995, split_digits=True,
    max_sentence_length=8192, input_sentence_size=200000, shuffle_input_sentence=False,
    num_threads=2, minloglevel=2)
' "$dir/train.txt" "$dir/spm"
    fi
    # shellcheck disable=SC2086
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $PY "$trainer" \
        "$dir/train.txt" "$dir/spm.model" "$dir/model.pt" --hidden "$hidden" --inter "$inter" \
        --layers "$layers" --heads "$heads" --kv "$kv" $tied --minutes "$MINUTES" --batch "$BATCH" \
        --threads "$THREADS" --seed "$seed" > "$dir/train.log" 2>&1
    tail -n 1 "$dir/train.log"
    rm -rf "$dir/hf"
    # shellcheck disable=SC2086
    $PY "$TOOLS/hf-oracle/make_hf.py" "$dir/hf" --arch "$arch" --hidden "$hidden" --inter "$inter" \
        --layers "$layers" --heads "$heads" --kv "$kv" --tok "spm:$dir/spm.model" --dtype f32 \
        $tied --weights "$dir/model.pt" > /dev/null
    $PY "$TOOLS/hf-oracle/convert_here.py" "$dir/hf" --outtype f16 --outfile "$dir/model.f16.gguf" \
        > "$dir/convert.log" 2>&1
    "$ANVIL" imatrix "$dir/model.f16.gguf" "$dir/calib.txt" "$dir/imatrix.gguf" --ctx 512 \
        --threads "$THREADS" > "$dir/imatrix.log" 2>&1
    echo "== $name done ($(date -u +%H:%M:%S))"
}

[ $# -eq 0 ] && set -- A B C D E F
for m in "$@"; do build_one "$m"; done
