#!/bin/sh
# Static estimate of backend-avx512's 8-row block loops against ggml's
# AVX-512 (icelake) vec_dot loops, with llvm-mca's icelake-server model, for
# machines without AVX-512 (where `anvil bench` cannot run the backend).
#   scripts/mca/avx512-estimate.sh [GGML_LIB_DIR]
# Prints cycles per row and block (anvil's Q8_0 loop takes two 32-element
# blocks per iteration, ggml's one); a model, not a measurement.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ggml=${1:-$root/build/oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64}/libggml-cpu-icelake.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
p=$root/plugins
for spec in q8_0:avx512_q8_0.c:q8_0 kquants:avx512_kquants.c:q4_K,q5_K,q6_K ternary:avx512_ternary.c:tq2_0; do
    fam=${spec%%:*}; rest=${spec#*:}; file=${rest%%:*}; fmts=${rest#*:}
    echo "#include \"$p/backend-avx512/$file\"" > "$tmp/$fam.c"
    for f in $(echo "$fmts" | tr ',' ' '); do
        echo "void mca_${f}_8(size_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *y) { ${f}_rows(nb, w, ws, a, y, 8, NULL); }" >> "$tmp/$fam.c"
    done
    gcc -O2 -std=c11 -ffp-contract=off -D_GNU_SOURCE -DAVX512_VNNI=1 -DAVX512_EMULATED=0 \
        -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mf16c \
        -I"$p" -I"$p/backend-avx512" -I"$p/simd-common" -I"$root/sdk/include" -c "$tmp/$fam.c" -o "$tmp/$fam.o"
    for f in $(echo "$fmts" | tr ',' ' '); do
        python3 "$here/mca_block_cost.py" "$tmp/$fam.o" "mca_${f}_8" 8
        act=q8_K; [ "$f" = q8_0 ] && act=q8_0
        python3 "$here/mca_block_cost.py" "$ggml" "ggml_vec_dot_${f}_${act}" 1 --ggml
    done
done
