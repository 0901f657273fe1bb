/* SPDX-License-Identifier: MIT */
/*
 * Builds the lattice encoders' search tables (see cold_enc_lattice.h).
 *
 * What ggml builds in iq2xs_init_impl / iq3xs_init_impl, for each code
 * vector that is not a grid point: every grid point sorted by (squared
 * distance, index), then the leading run that spans the nwant smallest
 * distinct distances. Distances there are measured between the odd values
 * 2l + 1, i.e. 4 * sum (dl)^2, which orders exactly like sum (dl)^2 used
 * here. ggml sorts the whole grid once per vector (twice, in fact: a
 * counting pass and a filling pass), which takes it about 30 s for the four
 * lattices; the same lists come out of a cheaper route:
 *  - a vector's distance to a grid point is the sum of two half-vector
 *    distances, read from a small table (81 x 81 or 64 x 64);
 *  - the distances that occur are collected as bits of a mask, whose
 *    lowest nwant set bits are the kept distances (a full histogram only
 *    if fewer than nwant lie below 64, which the codebooks never need);
 *  - the points within the cut are gathered in index order, then emitted
 *    one kept distance at a time, which is (distance, index) order: what
 *    ggml's sort gives, since its comparator breaks ties by index.
 * About 0.1 s for all six lattices on a slow shared core.
 *
 * Only vectors the encoders can form get a list: ggml's IQ2/IQ1 maps also
 * cover codes of 3 (keys up to 4^8), which its clamped searches never look
 * up. Here a key has base `levels`, so every key is reachable.
 */
#include "ref/cold_enc_lattice.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "anvil/status.h"
#include "ref/cold_tables.h"

/* Largest sum of squared code differences: 4 * 7^2 (IQ3), 8 * 2^2 (IQ2/IQ1). */
#define MAX_DIST 196

#define IQ3_KEYS 4096 /* 8^4 */
#define IQ2_KEYS 6561 /* 3^8 */

/* Candidate-list storage per lattice, the exact totals (count word, entries,
 * lane blocks and packed codes over all off-grid keys) for the committed
 * codebooks. The build checks them: a different total means the codebook
 * changed. */
#define NB_IQ3XXS 90114
#define NB_IQ3S 112466
#define NB_IQ2S 312425
#define NB_IQ1 659955
#define NB_IQ2XXS 723291
#define NB_IQ2XS 1132403

static uint8_t code_iq3xxs[256 * 4], code_iq3s[512 * 4], code_iq2s[1024 * 8], code_iq1[2048 * 8];
static uint8_t code_iq2xxs[256 * 8], code_iq2xs[512 * 8];
static float odd_iq3xxs[256 * 4], odd_iq3s[512 * 4], odd_iq2s[1024 * 8], odd_iq1[2048 * 8];
static float odd_iq2xxs[256 * 8], odd_iq2xs[512 * 8];
static int32_t map_iq3xxs[IQ3_KEYS], map_iq3s[IQ3_KEYS], map_iq2s[IQ2_KEYS], map_iq1[IQ2_KEYS];
static int32_t map_iq2xxs[IQ2_KEYS], map_iq2xs[IQ2_KEYS];
/* + 16: a search loads sixteen packed codes at a time, past a list's end */
static uint16_t nb_iq3xxs[NB_IQ3XXS + 16], nb_iq3s[NB_IQ3S + 16], nb_iq2s[NB_IQ2S + 16];
static uint16_t nb_iq1[NB_IQ1 + 16];
static uint16_t nb_iq2xxs[NB_IQ2XXS + 16], nb_iq2xs[NB_IQ2XS + 16];

typedef struct lattice_spec {
    int dims, levels, grid_size, nwant, keys;
    int lanes; /* the lists carry lane blocks (cold_enc_lattice.h): the sweep lattices */
    size_t nb_size;
    uint8_t *code;
    float *odd;
    int32_t *map;
    uint16_t *nb;
} lattice_spec;

static const lattice_spec specs[COLD_LATTICE_COUNT] = {
    [COLD_LATTICE_IQ3XXS] = { 4, 8, 256, 2, IQ3_KEYS, 1, NB_IQ3XXS, code_iq3xxs, odd_iq3xxs, map_iq3xxs, nb_iq3xxs },
    [COLD_LATTICE_IQ3S] = { 4, 8, 512, 3, IQ3_KEYS, 1, NB_IQ3S, code_iq3s, odd_iq3s, map_iq3s, nb_iq3s },
    [COLD_LATTICE_IQ2S] = { 8, 3, 1024, 1, IQ2_KEYS, 1, NB_IQ2S, code_iq2s, odd_iq2s, map_iq2s, nb_iq2s },
    [COLD_LATTICE_IQ1] = { 8, 3, 2048, 3, IQ2_KEYS, 0, NB_IQ1, code_iq1, odd_iq1, map_iq1, nb_iq1 },
    [COLD_LATTICE_IQ2XXS] = { 8, 3, 256, 2, IQ2_KEYS, 1, NB_IQ2XXS, code_iq2xxs, odd_iq2xxs, map_iq2xxs, nb_iq2xxs },
    [COLD_LATTICE_IQ2XS] = { 8, 3, 512, 2, IQ2_KEYS, 1, NB_IQ2XS, code_iq2xs, odd_iq2xs, map_iq2xs, nb_iq2xs },
};

static cold_lattice lattices[COLD_LATTICE_COUNT];
/* Each lattice built on first use, one build at a time (build_one's scratch
 * tables are static): 0 not yet, 1 built, 2 failed its self-check. */
static pthread_mutex_t build_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int built[COLD_LATTICE_COUNT];

/* Level code of one codebook entry; -1 for a value the format cannot hold. */
static int entry_code(enum cold_lattice_id id, int g, int i) {
    switch (id) {
    case COLD_LATTICE_IQ3XXS: { /* 4, 12, 20, ..., 52, then 62 */
        const int v = anvil_cold_iq3xxs_grid[g][i];
        return v == 62 ? 7 : (v >= 4 && v <= 52 && (v - 4) % 8 == 0) ? (v - 4) / 8 : -1;
    }
    case COLD_LATTICE_IQ3S: { /* 1, 3, ..., 15 */
        const int v = anvil_cold_iq3s_grid[g][i];
        return (v & 1) && v <= 15 ? (v - 1) / 2 : -1;
    }
    case COLD_LATTICE_IQ2S:
    case COLD_LATTICE_IQ2XXS:
    case COLD_LATTICE_IQ2XS: { /* magnitudes 8, 25, 43 */
        const int v = id == COLD_LATTICE_IQ2S    ? anvil_cold_iq2s_grid[g][i]
                      : id == COLD_LATTICE_IQ2XS ? anvil_cold_iq2xs_grid[g][i]
                                                 : anvil_cold_iq2xxs_grid[g][i];
        return v == 8 ? 0 : v == 25 ? 1 : v == 43 ? 2 : -1;
    }
    case COLD_LATTICE_IQ1: {
        const int v = anvil_cold_iq1s_grid[g][i];
        return v >= -1 && v <= 1 ? v + 1 : -1;
    }
    default: return -1;
    }
}

/* The lane blocks of one candidate list (count, then grid indices; see
 * cold_enc_lattice.h): per 8 candidates, per element i, the 8 candidates'
 * odd values 2l + 1 as bytes; a last partial block repeats the list's last
 * candidate, which never beats its first copy (ties go to the earlier). */
static void fill_lanes(const lattice_spec *s, const uint16_t *list, uint8_t *out) {
    const int count = list[0];
    for (int b = 0; b < cold_lane_blocks(count); ++b) {
        for (int i = 0; i < s->dims; ++i) {
            for (int k = 0; k < COLD_LANES; ++k) {
                const int j = COLD_LANES * b + k < count ? COLD_LANES * b + k : count - 1;
                *out++ = (uint8_t)(2 * s->code[(size_t)list[1 + j] * (size_t)s->dims + (size_t)i] + 1);
            }
        }
    }
}

static int build_one(enum cold_lattice_id id) {
    const lattice_spec *s = &specs[id];
    cold_lattice *lat = &lattices[id];
    lat->dims = s->dims;
    lat->levels = s->levels;
    lat->grid_size = s->grid_size;
    lat->code = s->code;
    lat->odd = s->odd;
    lat->map = s->map;
    lat->nb = s->nb;
    lat->lanes = s->lanes;
    lat->packed = 1;

    /* Grid codes, and the map's on-grid entries. INT32_MIN marks "not yet". */
    for (int k = 0; k < s->keys; ++k) {
        s->map[k] = INT32_MIN;
    }
    for (int g = 0; g < s->grid_size; ++g) {
        int8_t l[8];
        for (int i = 0; i < s->dims; ++i) {
            const int c = entry_code(id, g, i);
            if (c < 0) {
                return ANVIL_E_INTERNAL;
            }
            l[i] = (int8_t)c;
            s->code[g * s->dims + i] = (uint8_t)c;
            s->odd[g * s->dims + i] = (float)(2 * c + 1);
        }
        const int key = cold_lattice_key(lat, l);
        if (s->map[key] != INT32_MIN) {
            return ANVIL_E_INTERNAL; /* two grid points with one code vector */
        }
        s->map[key] = g;
    }

    /* Squared distances through two half-vector tables: a code vector is
     * (low half, high half), each half a base-`levels` number below
     * half_keys (81 or 64), and its distance to a grid point is the sum of
     * the halves' distances: two table reads per grid point. */
    const int half = s->dims / 2;
    int half_keys = 1;
    for (int i = 0; i < half; ++i) {
        half_keys *= s->levels;
    }
    static uint8_t half_dist[81][81];
    for (int a = 0; a < half_keys; ++a) {
        for (int b = 0; b < half_keys; ++b) {
            int d = 0;
            for (int i = 0, ka = a, kb = b; i < half; ++i, ka /= s->levels, kb /= s->levels) {
                d += (ka % s->levels - kb % s->levels) * (ka % s->levels - kb % s->levels);
            }
            half_dist[a][b] = (uint8_t)d;
        }
    }
    static uint8_t grid_lo[2048], grid_hi[2048];
    for (int g = 0; g < s->grid_size; ++g) {
        int lo = 0, hi = 0;
        for (int i = half - 1; i >= 0; --i) {
            lo = lo * s->levels + s->code[g * s->dims + i];
            hi = hi * s->levels + s->code[g * s->dims + half + i];
        }
        grid_lo[g] = (uint8_t)lo;
        grid_hi[g] = (uint8_t)hi;
    }

    /* Candidate lists of the off-grid keys. */
    size_t off = 0;
    for (int key = 0; key < s->keys; ++key) {
        if (s->map[key] != INT32_MIN) {
            continue;
        }
        const uint8_t *row_lo = half_dist[key % half_keys];
        const uint8_t *row_hi = half_dist[key / half_keys];
        uint8_t dist[2048];
        uint64_t seen = 0; /* bit d: some point lies at distance d < 64 */
        for (int g = 0; g < s->grid_size; ++g) {
            const unsigned d = (unsigned)row_lo[grid_lo[g]] + row_hi[grid_hi[g]];
            dist[g] = (uint8_t)d;
            seen |= d < 64 ? UINT64_C(1) << d : 0;
        }
        /* The nwant smallest distances that occur: the lowest set bits, or
         * (should fewer than nwant lie below 64) a histogram of them all. */
        int kept[3], n_kept = 0;
        for (uint64_t b = seen; b != 0 && n_kept < s->nwant; b &= b - 1) {
            int d = 0;
            while (!((b >> d) & 1)) {
                d++;
            }
            kept[n_kept++] = d;
        }
        if (n_kept < s->nwant) {
            uint8_t any[MAX_DIST + 1];
            memset(any, 0, sizeof any);
            for (int g = 0; g < s->grid_size; ++g) {
                any[dist[g]] = 1;
            }
            n_kept = 0;
            for (int d = 0; d <= MAX_DIST && n_kept < s->nwant; ++d) {
                if (any[d]) {
                    kept[n_kept++] = d;
                }
            }
        }
        if (n_kept == 0) {
            return ANVIL_E_INTERNAL;
        }
        /* Every point within the cut, in index order; then one pass over
         * those per kept distance gives (distance, index) order. */
        const int cut = kept[n_kept - 1];
        uint16_t within[2048];
        int n_within = 0;
        for (int g = 0; g < s->grid_size; ++g) {
            if (dist[g] <= cut) {
                within[n_within++] = (uint16_t)g;
            }
        }
        const size_t lane_words = s->lanes ? (size_t)cold_lane_blocks(n_within) * (size_t)s->dims * COLD_LANES / 2
                                           : 0;
        if (off + 1 + 2 * (size_t)n_within + lane_words > s->nb_size) {
            return ANVIL_E_INTERNAL;
        }
        s->map[key] = -(int32_t)(off + 1);
        uint16_t *list = s->nb + off;
        s->nb[off++] = (uint16_t)n_within;
        for (int j = 0; j < n_kept; ++j) {
            for (int w = 0; w < n_within; ++w) {
                if (dist[within[w]] == kept[j]) {
                    s->nb[off++] = within[w];
                }
            }
        }
        if (s->lanes) {
            fill_lanes(s, list, (uint8_t *)(s->nb + off));
            off += lane_words;
        }
        const int bits = s->levels == 3 ? 2 : 3;
        for (int j = 1; j <= n_within; ++j) {
            unsigned u = 0;
            for (int i = 0; i < s->dims; ++i) {
                u |= (unsigned)s->code[(size_t)list[j] * (size_t)s->dims + (size_t)i] << bits * i;
            }
            s->nb[off++] = (uint16_t)u;
        }
    }
    return off == s->nb_size ? ANVIL_OK : ANVIL_E_INTERNAL;
}

int anvil_ref_cold_codebook_check(void) {
    for (int id = 0; id < COLD_LATTICE_COUNT; ++id) {
        const lattice_spec *sp = &specs[id];
        uint8_t seen[IQ2_KEYS > IQ3_KEYS ? IQ2_KEYS : IQ3_KEYS];
        memset(seen, 0, sizeof seen);
        for (int g = 0; g < sp->grid_size; ++g) {
            int key = 0;
            for (int i = sp->dims - 1; i >= 0; --i) {
                const int c = entry_code((enum cold_lattice_id)id, g, i);
                if (c < 0) {
                    return ANVIL_E_INTERNAL;
                }
                key = key * sp->levels + c;
            }
            if (seen[key]) {
                return ANVIL_E_INTERNAL; /* two grid points with one code vector */
            }
            seen[key] = 1;
        }
    }
    return ANVIL_OK;
}

int anvil_ref_cold_lattice_init_one(enum cold_lattice_id id) {
    if ((unsigned)id >= COLD_LATTICE_COUNT) {
        return ANVIL_E_INTERNAL;
    }
    int state = atomic_load_explicit(&built[id], memory_order_acquire);
    if (state == 0) {
        if (pthread_mutex_lock(&build_mu) != 0) {
            return ANVIL_E_INTERNAL;
        }
        state = atomic_load_explicit(&built[id], memory_order_relaxed);
        if (state == 0) {
            state = build_one(id) == ANVIL_OK ? 1 : 2;
            atomic_store_explicit(&built[id], state, memory_order_release);
        }
        pthread_mutex_unlock(&build_mu);
    }
    return state == 1 ? ANVIL_OK : ANVIL_E_INTERNAL;
}

int anvil_ref_cold_lattice_init(void) {
    for (int id = 0; id < COLD_LATTICE_COUNT; ++id) {
        const int rc = anvil_ref_cold_lattice_init_one((enum cold_lattice_id)id);
        if (rc != ANVIL_OK) {
            return rc;
        }
    }
    return ANVIL_OK;
}

const cold_lattice *anvil_ref_cold_lattice(enum cold_lattice_id id) {
    if ((unsigned)id >= COLD_LATTICE_COUNT || anvil_ref_cold_lattice_init_one(id) != ANVIL_OK) {
        return NULL;
    }
    return &lattices[id];
}
