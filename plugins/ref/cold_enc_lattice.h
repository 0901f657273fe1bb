/* SPDX-License-Identifier: MIT */
/*
 * Search tables of the lattice encoders (IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS,
 * IQ2_S, IQ1_S, IQ1_M):
 * for every point a group of elements can round to, either its index in the
 * format's grid or the list of grid points nearest to it.
 *
 * ggml's encoders round each group of 4 (IQ3) or 8 (IQ2, IQ1) scaled
 * magnitudes to per-element level codes l (0..7 for IQ3, 0..2 for IQ2 and
 * IQ1). The code vector is usually NOT a grid point (the grids hold 256 to
 * 2048 of the 4096 / 6561 possible vectors); the encoder then scores a short
 * list of candidates, the grid points at the nwant smallest squared code
 * distances (ggml's iq2xs_init_impl / iq3xs_init_impl: nwant 2 for IQ3_XXS,
 * IQ2_XXS and IQ2_XS, 3 for IQ3_S and IQ1, 1 for IQ2_S), in order of
 * (distance, grid index).
 * The first candidate with the strictly best score wins, so that order is
 * part of the encoding and is reproduced exactly here.
 *
 * The tables are built once per process, each lattice's on first use
 * (anvil_ref_cold_lattice_init_one, under a lock; anvil_ref_cold_lattice_init
 * builds all six), from the committed codebooks in cold_tables.c, into static
 * storage: nothing to free, nothing to fail but a self-check. codec-cold
 * builds them in its init hook; the encoders also call the init (a no-op
 * once done) so that the reference library works without the plugin.
 */
#ifndef ANVIL_REF_COLD_ENC_LATTICE_H
#define ANVIL_REF_COLD_ENC_LATTICE_H

#include <stdint.h>

enum cold_lattice_id {
    COLD_LATTICE_IQ3XXS = 0, /* 256 points of 4 codes 0..7, nwant 2 */
    COLD_LATTICE_IQ3S,       /* 512 points of 4 codes 0..7, nwant 3 */
    COLD_LATTICE_IQ2S,       /* 1024 points of 8 codes 0..2, nwant 1 */
    COLD_LATTICE_IQ1,        /* 2048 points of 8 codes 0..2, nwant 3 (IQ1_S and IQ1_M) */
    COLD_LATTICE_IQ2XXS,     /* 256 points of 8 codes 0..2, nwant 2 */
    COLD_LATTICE_IQ2XS,      /* 512 points of 8 codes 0..2, nwant 2 */
    COLD_LATTICE_COUNT
};

typedef struct cold_lattice {
    int dims;   /* elements per point: 4 or 8 */
    int levels; /* codes per element: 8 or 3 */
    int grid_size;
    /* code[g * dims + i]: element i's level code of grid point g. */
    const uint8_t *code;
    /* odd[g * dims + i] = 2 * code + 1, as float: the value ggml's IQ2/IQ3
     * neighbour search scales and compares (its grids store 2l + 1). */
    const float *odd;
    /* Indexed by the key of a code vector (cold_lattice_key): >= 0 is the
     * grid index of a point on the grid; < 0 is -(1 + off), where nb[off]
     * is the number of candidates and nb[off + 1 ...] are their grid
     * indices in (distance, index) order. */
    const int32_t *map;
    const uint16_t *nb;
    /* 1 when each list in nb is followed by its lane blocks: the lattices
     * of the scale sweep (all but IQ1). A list of count candidates is then
     * followed by cold_lane_blocks(count) blocks of dims x COLD_LANES bytes:
     * block b, row i holds element i's odd value 2l + 1 of candidates
     * 4b .. 4b + 3 (the last candidate repeated past the end), so that the
     * search scores four candidates per vector without gathering. */
    int lanes;
    /* 1 (every lattice): each list also carries its candidates' codes
     * packed, one word per candidate, element i's code at bits
     * bits i .. bits i + bits - 1 (bits = 2 for 3 levels, 3 for 8), so that
     * a search loads eight candidates' codes at once from the cache lines
     * of the list itself (cold_packed_codes: right after the list on the
     * IQ1 lattice, after its lane blocks on the others); 16 words of
     * padding follow the last list. */
    int packed;
} cold_lattice;

/* Candidates per lane block. */
#define COLD_LANES 4

/* Lane blocks of a list of count candidates. */
static inline int cold_lane_blocks(int count) { return (count + COLD_LANES - 1) / COLD_LANES; }

/* The packed codes of the candidate list cand (see cold_lattice.packed). */
static inline const uint16_t *cold_packed_codes(const cold_lattice *lat, const uint16_t *cand) {
    const int count = cand[0];
    const int lane_words = lat->lanes ? cold_lane_blocks(count) * lat->dims * COLD_LANES / 2 : 0;
    return cand + 1 + count + lane_words;
}

/* Key of a code vector: base `levels` digits, element 0 lowest. Every
 * code must lie in [0, levels). */
static inline int cold_lattice_key(const cold_lattice *lat, const int8_t *l) {
    int key = 0;
    for (int i = lat->dims - 1; i >= 0; --i) {
        key = key * lat->levels + l[i];
    }
    return key;
}

/* 1 when every code of the vector at l lies in [0, levels), so that it has
 * a key. */
static inline int cold_lattice_codes_valid(const cold_lattice *lat, const int8_t *l) {
    for (int i = 0; i < lat->dims; ++i) {
        if (l[i] < 0 || l[i] >= lat->levels) {
            return 0;
        }
    }
    return 1;
}

/* Builds every table once; later calls return the first call's result.
 * ANVIL_OK, or ANVIL_E_INTERNAL when a built table fails its self-check
 * (the committed codebooks would then be corrupt). Thread-safe. */
int anvil_ref_cold_lattice_init(void);
/* The same for one lattice's tables only (what an encoder needs: a run
 * that writes IQ3_S alone builds 3% of the total, ~2 ms). */
int anvil_ref_cold_lattice_init_one(enum cold_lattice_id id);

/* The codebooks' self-check alone (every entry a valid level code, no two
 * entries with one code vector): what the build checks first, without
 * building (~0.1 ms, against ~35 ms for the search tables). ANVIL_OK or
 * ANVIL_E_INTERNAL. */
int anvil_ref_cold_codebook_check(void);

/* The tables of one lattice, built on first use; NULL when they fail their
 * self-check. */
const cold_lattice *anvil_ref_cold_lattice(enum cold_lattice_id id);

#endif
