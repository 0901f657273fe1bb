/* SPDX-License-Identifier: MIT */
/*
 * anvil-cold-gentables: derive the codebooks of the cold formats from ggml
 * itself and write them as C source (plugins/ref/cold_tables.c).
 *
 *   anvil-cold-gentables [--oracle DIR] OUT.c
 *
 * Nothing here is copied from ggml's table text. Each table is read back out
 * of ggml's decoders: the program builds blocks whose scale makes every
 * decoded value an exact small multiple of the codebook entry (scale field
 * 1.0, sub-scale nibbles 0), points each index slot at the entry it wants,
 * runs ggml's dequantize_row_<type> and divides the scale back out. Every
 * extracted value is checked to be an integer of the expected kind, and
 * every table is checked for the structure its format implies (value set,
 * no duplicate entries), so a wrong probe fails loudly instead of writing a
 * wrong table. anvil-parity then re-checks the committed tables index by
 * index against ggml with different scales and signs.
 *
 * Exit: 0 written; 1 a probe failed; 2 usage; 77 ggml not found.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/blocks.h"
#include "anvil/numeric.h"
#include "ggml_oracle.h"

#define HALF_ONE 0x3C00 /* binary16 1.0 */

static ggml_oracle oracle;
static int failures;

/* Reports the first few failures (one wrong probe tends to fail them all). */
static void fail(const char *what, int index, float got) {
    if (failures < 20) {
        fprintf(stderr, "anvil-cold-gentables: %s: entry %d: got %.9g\n", what, index, (double)got);
    }
    failures++;
}

static ggml_to_float_fn decoder(int type, const char *name) {
    ggml_to_float_fn f = ggml_oracle_to_float(&oracle, type);
    if (f == NULL) {
        fprintf(stderr, "anvil-cold-gentables: ggml has no decoder for %s\n", name);
        exit(1);
    }
    return f;
}

/* v / step when that is an integer in [lo, hi]; otherwise reports and
 * returns lo. */
static int exact_multiple(const char *what, int index, float v, float step, int lo, int hi) {
    const float q = v / step;
    const int i = (int)q;
    if ((float)i != q || i < lo || i > hi) {
        fail(what, index, v);
        return lo;
    }
    return i;
}

/* ---- the grids ----------------------------------------------------------- */

static uint8_t iq2xxs_grid[256][8];
static uint8_t iq2xs_grid[512][8];
static uint8_t iq2s_grid[1024][8];
static uint8_t iq3xxs_grid[256][4];
static uint8_t iq3s_grid[512][4];
static int8_t iq1s_grid[2048][8];
static uint8_t ksigns[128];
static uint8_t kmask[8];
static int8_t iq4nl_values[16];
static int8_t e2m1_x2_values[16];
static float iq1s_delta, iq1m_delta;

/* IQ2_XXS: per 32 elements, 8 bytes = four 8-bit grid indices, then a u32 of
 * four 7-bit sign indices and a 4-bit scale s (db = d * (0.5 + s) / 4). With
 * d = 1, s = 0 every value is grid / 8. */
static void probe_iq2xxs(void) {
    const ggml_to_float_fn dec = decoder(ANVIL_TYPE_IQ2_XXS, "iq2_xxs");
    float y[ANVIL_QK_K];
    for (int first = 0; first < 256; first += 32) {
        anvil_block_iq2_xxs b;
        memset(&b, 0, sizeof b);
        b.d = HALF_ONE;
        uint8_t *q = (uint8_t *)b.qs;
        for (int k = 0; k < 32; ++k) {
            q[8 * (k / 4) + k % 4] = (uint8_t)(first + k);
        }
        dec(&b, y, ANVIL_QK_K);
        for (int k = 0; k < 32; ++k) {
            for (int j = 0; j < 8; ++j) {
                iq2xxs_grid[first + k][j] =
                    (uint8_t)exact_multiple("iq2xxs grid", first + k, y[8 * k + j], 0.125f, 0, 255);
            }
        }
    }
}

/* The 7-bit sign index of IQ2_XXS/IQ2_XS/IQ3_XXS expands to 8 sign bits.
 * Probe it with grid entry 0 (all non-zero) and read back which of the 8
 * outputs came out negative. */
static void probe_ksigns(void) {
    const ggml_to_float_fn dec = decoder(ANVIL_TYPE_IQ2_XXS, "iq2_xxs");
    float y[ANVIL_QK_K];
    for (int first = 0; first < 128; first += 32) {
        anvil_block_iq2_xxs b;
        memset(&b, 0, sizeof b);
        b.d = HALF_ONE;
        uint8_t *q = (uint8_t *)b.qs;
        for (int ib = 0; ib < 8; ++ib) {
            uint32_t s = 0;
            for (int l = 0; l < 4; ++l) {
                s |= (uint32_t)(first + 4 * ib + l) << (7 * l);
            }
            memcpy(q + 8 * ib + 4, &s, 4);
        }
        dec(&b, y, ANVIL_QK_K);
        for (int k = 0; k < 32; ++k) {
            uint8_t bits = 0;
            for (int j = 0; j < 8; ++j) {
                if (y[8 * k + j] == 0.0f) {
                    fail("ksigns (grid entry 0 has a zero)", first + k, y[8 * k + j]);
                }
                bits |= (uint8_t)(signbit(y[8 * k + j]) ? 1u << j : 0u);
            }
            ksigns[first + k] = bits;
        }
    }
}

/* IQ2_S and IQ3_S carry raw sign bytes; kmask[j] is the bit of that byte
 * that negates output j. Set one bit at a time and see which output turns. */
static void probe_kmask(void) {
    const ggml_to_float_fn dec = decoder(ANVIL_TYPE_IQ2_S, "iq2_s");
    float y[ANVIL_QK_K];
    anvil_block_iq2_s b;
    memset(&b, 0, sizeof b);
    b.d = HALF_ONE;
    for (int bit = 0; bit < 8; ++bit) {
        b.qs[ANVIL_QK_K / 8 + bit] = (uint8_t)(1u << bit); /* sign byte of group `bit` */
    }
    dec(&b, y, ANVIL_QK_K);
    int seen[8] = { 0 };
    for (int bit = 0; bit < 8; ++bit) {
        int negatives = 0;
        for (int j = 0; j < 8; ++j) {
            if (signbit(y[8 * bit + j])) {
                kmask[j] = (uint8_t)(1u << bit);
                seen[j]++;
                negatives++;
            }
        }
        if (negatives != 1) {
            fail("kmask (one sign bit must negate one output)", bit, (float)negatives);
        }
    }
    for (int j = 0; j < 8; ++j) {
        if (seen[j] != 1) {
            fail("kmask (each output needs one sign bit)", j, (float)seen[j]);
        }
    }
}

/* IQ2_XS: u16 per 8 elements = 9-bit grid index | 7-bit sign index << 9;
 * scales nibble 0 gives db = 1/8. */
static void probe_iq2xs(void) {
    const ggml_to_float_fn dec = decoder(ANVIL_TYPE_IQ2_XS, "iq2_xs");
    float y[ANVIL_QK_K];
    for (int first = 0; first < 512; first += 32) {
        anvil_block_iq2_xs b;
        memset(&b, 0, sizeof b);
        b.d = HALF_ONE;
        for (int k = 0; k < 32; ++k) {
            b.qs[k] = (uint16_t)(first + k);
        }
        dec(&b, y, ANVIL_QK_K);
        for (int k = 0; k < 32; ++k) {
            for (int j = 0; j < 8; ++j) {
                iq2xs_grid[first + k][j] =
                    (uint8_t)exact_multiple("iq2xs grid", first + k, y[8 * k + j], 0.125f, 0, 255);
            }
        }
    }
}

/* IQ2_S: 10-bit index = qs byte | two bits of qh[ib32] (bits 2l, 2l+1 for
 * group l). Sign bytes zero, scale nibbles zero: value = grid / 8. */
static void probe_iq2s(void) {
    const ggml_to_float_fn dec = decoder(ANVIL_TYPE_IQ2_S, "iq2_s");
    float y[ANVIL_QK_K];
    for (int first = 0; first < 1024; first += 32) {
        anvil_block_iq2_s b;
        memset(&b, 0, sizeof b);
        b.d = HALF_ONE;
        for (int k = 0; k < 32; ++k) {
            const int idx = first + k;
            b.qs[k] = (uint8_t)(idx & 0xFF);
            b.qh[k / 4] |= (uint8_t)(((idx >> 8) & 3) << (2 * (k % 4)));
        }
        dec(&b, y, ANVIL_QK_K);
        for (int k = 0; k < 32; ++k) {
            for (int j = 0; j < 8; ++j) {
                iq2s_grid[first + k][j] =
                    (uint8_t)exact_multiple("iq2s grid", first + k, y[8 * k + j], 0.125f, 0, 255);
            }
        }
    }
}

/* IQ3_XXS: 64 index bytes (one per 4 elements), then per 32 elements a u32
 * of sign indices and a 4-bit scale; all zero gives db = 1/4. */
static void probe_iq3xxs(void) {
    const ggml_to_float_fn dec = decoder(ANVIL_TYPE_IQ3_XXS, "iq3_xxs");
    float y[ANVIL_QK_K];
    for (int first = 0; first < 256; first += 64) {
        anvil_block_iq3_xxs b;
        memset(&b, 0, sizeof b);
        b.d = HALF_ONE;
        for (int k = 0; k < 64; ++k) {
            b.qs[k] = (uint8_t)(first + k);
        }
        dec(&b, y, ANVIL_QK_K);
        for (int k = 0; k < 64; ++k) {
            for (int j = 0; j < 4; ++j) {
                iq3xxs_grid[first + k][j] =
                    (uint8_t)exact_multiple("iq3xxs grid", first + k, y[4 * k + j], 0.25f, 0, 255);
            }
        }
    }
}

/* IQ3_S: 9-bit index = qs byte | bit k%8 of qh[k/8] (k = 4-element group);
 * scale nibble 0 gives db = d * 1. */
static void probe_iq3s(void) {
    const ggml_to_float_fn dec = decoder(ANVIL_TYPE_IQ3_S, "iq3_s");
    float y[ANVIL_QK_K];
    for (int first = 0; first < 512; first += 64) {
        anvil_block_iq3_s b;
        memset(&b, 0, sizeof b);
        b.d = HALF_ONE;
        for (int k = 0; k < 64; ++k) {
            const int idx = first + k;
            b.qs[k] = (uint8_t)(idx & 0xFF);
            b.qh[k / 8] |= (uint8_t)(((idx >> 8) & 1) << (k % 8));
        }
        dec(&b, y, ANVIL_QK_K);
        for (int k = 0; k < 64; ++k) {
            for (int j = 0; j < 4; ++j) {
                iq3s_grid[first + k][j] = (uint8_t)exact_multiple("iq3s grid", first + k, y[4 * k + j], 1.0f, 0, 255);
            }
        }
    }
}

/* IQ1_S: 11-bit index = qs byte | 3 bits of qh[ib32] (bits 3l..3l+2);
 * qh bits 12..14 scale (0: dl = d), bit 15 the sign of the shift delta.
 * value = dl * (grid + delta). Decoding each index with both delta signs
 * gives grid = (y+ + y-) / 2 and delta = (y+ - y-) / 2, both exact. */
static void iq1s_block(anvil_block_iq1_s *b, int first, int negative_delta) {
    memset(b, 0, sizeof *b);
    b->d = HALF_ONE;
    for (int k = 0; k < 32; ++k) {
        const int idx = first + k;
        b->qs[k] = (uint8_t)(idx & 0xFF);
        b->qh[k / 4] |= (uint16_t)(((idx >> 8) & 7) << (3 * (k % 4)));
    }
    if (negative_delta) {
        for (int ib = 0; ib < 8; ++ib) {
            b->qh[ib] |= 0x8000;
        }
    }
}

static void probe_iq1s(void) {
    const ggml_to_float_fn dec = decoder(ANVIL_TYPE_IQ1_S, "iq1_s");
    float yp[ANVIL_QK_K], ym[ANVIL_QK_K];
    int have_delta = 0;
    for (int first = 0; first < 2048; first += 32) {
        anvil_block_iq1_s b;
        iq1s_block(&b, first, 0);
        dec(&b, yp, ANVIL_QK_K);
        iq1s_block(&b, first, 1);
        dec(&b, ym, ANVIL_QK_K);
        for (int i = 0; i < ANVIL_QK_K; ++i) {
            const float g = (yp[i] + ym[i]) * 0.5f;
            const float delta = (yp[i] - ym[i]) * 0.5f;
            iq1s_grid[first + i / 8][i % 8] = (int8_t)exact_multiple("iq1s grid", first + i / 8, g, 1.0f, -1, 1);
            if (!have_delta) {
                iq1s_delta = delta;
                have_delta = 1;
            } else if (delta != iq1s_delta || !(delta > 0.0f)) {
                fail("iq1s delta (must be one positive constant)", first + i / 8, delta);
            }
        }
    }
}

/* IQ1_M: same grid; its binary16 scale is spread over the top nibbles of
 * the four u16 scale words, its 3-bit sub-scales (0: dl = d) fill the rest;
 * qh bits 3 and 7 are the delta signs of each index's 8 values. Only the
 * delta is new here (the grid is IQ1_S's, checked again by anvil-parity). */
static void probe_iq1m_delta(void) {
    const ggml_to_float_fn dec = decoder(ANVIL_TYPE_IQ1_M, "iq1_m");
    float yp[ANVIL_QK_K], ym[ANVIL_QK_K];
    anvil_block_iq1_m b;
    memset(&b, 0, sizeof b);
    uint16_t sc[4] = { 0, 0, 0, 0 };
    for (int i = 0; i < 4; ++i) {
        sc[i] = (uint16_t)(((HALF_ONE >> (4 * i)) & 0xF) << 12);
    }
    memcpy(b.scales, sc, sizeof sc);
    dec(&b, yp, ANVIL_QK_K);
    memset(b.qh, 0x88, sizeof b.qh);
    dec(&b, ym, ANVIL_QK_K);
    for (int i = 0; i < ANVIL_QK_K; ++i) {
        const float g = (yp[i] + ym[i]) * 0.5f;
        const float delta = (yp[i] - ym[i]) * 0.5f;
        if (g != (float)iq1s_grid[0][i % 8]) {
            fail("iq1m grid entry 0 (must equal iq1s's)", i, g);
        }
        if (i == 0) {
            iq1m_delta = delta;
        } else if (delta != iq1m_delta || !(delta > 0.0f)) {
            fail("iq1m delta (must be one positive constant)", i, delta);
        }
    }
}

/* IQ4_NL: 16 signed levels, value = d * level; with d = 1 each nibble
 * decodes to its level. */
static void probe_iq4nl(void) {
    const ggml_to_float_fn dec = decoder(ANVIL_TYPE_IQ4_NL, "iq4_nl");
    float y[ANVIL_QK4_NL];
    anvil_block_iq4_nl b;
    b.d = HALF_ONE;
    for (int j = 0; j < 16; ++j) {
        b.qs[j] = (uint8_t)(j | (j << 4));
    }
    dec(&b, y, ANVIL_QK4_NL);
    for (int j = 0; j < 16; ++j) {
        iq4nl_values[j] = (int8_t)exact_multiple("iq4nl values", j, y[j], 1.0f, -128, 127);
        if (y[j + 16] != y[j]) {
            fail("iq4nl values (high nibble differs from low)", j, y[j + 16]);
        }
    }
}

/* MXFP4: E2M1 codes times an E8M0 scale; ggml's decoder takes half the
 * scale and a doubled codebook. e = 128 makes the half-scale 1, so each code
 * decodes to its doubled value. */
static void probe_e2m1(void) {
    const ggml_to_float_fn dec = decoder(ANVIL_TYPE_MXFP4, "mxfp4");
    float y[ANVIL_QK_MXFP4];
    anvil_block_mxfp4 b;
    b.e = 128;
    for (int j = 0; j < 16; ++j) {
        b.qs[j] = (uint8_t)(j | (j << 4));
    }
    dec(&b, y, ANVIL_QK_MXFP4);
    for (int j = 0; j < 16; ++j) {
        e2m1_x2_values[j] = (int8_t)exact_multiple("e2m1 values", j, y[j], 1.0f, -128, 127);
        if (y[j + 16] != y[j]) {
            fail("e2m1 values (high nibble differs from low)", j, y[j + 16]);
        }
    }
}

/* ---- structure checks ---------------------------------------------------- */

static void check_u8_grid(const char *what, const uint8_t *g, int n, int width, const uint8_t *allowed,
                          int n_allowed) {
    for (int i = 0; i < n; ++i) {
        for (int j = 0; j < width; ++j) {
            int ok = 0;
            for (int a = 0; a < n_allowed; ++a) {
                ok |= g[i * width + j] == allowed[a];
            }
            if (!ok) {
                fail(what, i, (float)g[i * width + j]);
            }
        }
        for (int k = 0; k < i; ++k) {
            if (memcmp(g + i * width, g + k * width, (size_t)width) == 0) {
                fail(what, i, (float)k); /* "got": the index of its twin */
            }
        }
    }
}

static void check_structure(void) {
    static const uint8_t iq2_levels[] = { 8, 25, 43 };
    static const uint8_t iq3xxs_levels[] = { 4, 12, 20, 28, 36, 44, 52, 62 };
    static const uint8_t iq3s_levels[] = { 1, 3, 5, 7, 9, 11, 13, 15 };
    check_u8_grid("iq2xxs grid", &iq2xxs_grid[0][0], 256, 8, iq2_levels, 3);
    check_u8_grid("iq2xs grid", &iq2xs_grid[0][0], 512, 8, iq2_levels, 3);
    check_u8_grid("iq2s grid", &iq2s_grid[0][0], 1024, 8, iq2_levels, 3);
    check_u8_grid("iq3xxs grid", &iq3xxs_grid[0][0], 256, 4, iq3xxs_levels, 8);
    check_u8_grid("iq3s grid", &iq3s_grid[0][0], 512, 4, iq3s_levels, 8);
    for (int i = 0; i < 2048; ++i) {
        for (int k = 0; k < i; ++k) {
            if (memcmp(iq1s_grid[i], iq1s_grid[k], 8) == 0) {
                fail("iq1s grid (duplicate entry)", i, (float)k);
            }
        }
    }
    /* The 7 stored sign bits are the first 7 signs; the 8th makes the count
     * of negatives even. */
    for (int i = 0; i < 128; ++i) {
        int parity = 0;
        for (int j = 0; j < 8; ++j) {
            parity ^= (ksigns[i] >> j) & 1;
        }
        if ((ksigns[i] & 0x7F) != i || parity != 0) {
            fail("ksigns (low 7 bits = index, even parity)", i, (float)ksigns[i]);
        }
    }
    for (int j = 1; j < 16; ++j) {
        if (iq4nl_values[j] <= iq4nl_values[j - 1]) {
            fail("iq4nl values (must increase)", j, (float)iq4nl_values[j]);
        }
    }
    for (int j = 0; j < 16; ++j) {
        if (e2m1_x2_values[j] != anvil_e2m1_to_int_x2((uint8_t)j)) {
            fail("e2m1 values (must match anvil_e2m1_to_int_x2)", j, (float)e2m1_x2_values[j]);
        }
    }
}

/* ---- output -------------------------------------------------------------- */

static void emit_u8_grid(FILE *f, const char *name, const uint8_t *g, int n, int width, int per_line) {
    fprintf(f, "const uint8_t %s[%d][%d] = {\n", name, n, width);
    for (int i = 0; i < n; i += per_line) {
        fprintf(f, "    /* %4d */", i);
        for (int k = i; k < i + per_line && k < n; ++k) {
            fprintf(f, " {");
            for (int j = 0; j < width; ++j) {
                fprintf(f, "%s%2d", j ? "," : "", g[k * width + j]);
            }
            fprintf(f, "},");
        }
        fprintf(f, "\n");
    }
    fprintf(f, "};\n\n");
}

static void emit(FILE *f) {
    fprintf(f, "/*\n"
               " * GENERATED by anvil-cold-gentables (tests/cold/gen_tables.c): do not edit.\n"
               " *\n"
               " * The codebooks of the cold formats, read back out of ggml's own decoders\n"
               " * (dequantize_row_*) with crafted blocks; anvil-parity re-checks every entry\n"
               " * against ggml. Layout and meaning: cold_tables.h.\n"
               " */\n"
               "#include \"ref/cold_tables.h\"\n\n"
               "/* clang-format off: generated tables, laid out as rows of the grid */\n\n");
    emit_u8_grid(f, "anvil_cold_iq2xxs_grid", &iq2xxs_grid[0][0], 256, 8, 4);
    emit_u8_grid(f, "anvil_cold_iq2xs_grid", &iq2xs_grid[0][0], 512, 8, 4);
    emit_u8_grid(f, "anvil_cold_iq2s_grid", &iq2s_grid[0][0], 1024, 8, 4);
    emit_u8_grid(f, "anvil_cold_iq3xxs_grid", &iq3xxs_grid[0][0], 256, 4, 8);
    emit_u8_grid(f, "anvil_cold_iq3s_grid", &iq3s_grid[0][0], 512, 4, 8);

    fprintf(f, "const int8_t anvil_cold_iq1s_grid[2048][8] = {\n");
    for (int i = 0; i < 2048; i += 4) {
        fprintf(f, "    /* %4d */", i);
        for (int k = i; k < i + 4; ++k) {
            fprintf(f, " {");
            for (int j = 0; j < 8; ++j) {
                fprintf(f, "%s%2d", j ? "," : "", iq1s_grid[k][j]);
            }
            fprintf(f, "},");
        }
        fprintf(f, "\n");
    }
    fprintf(f, "};\n\n");

    fprintf(f, "const uint8_t anvil_cold_ksigns[128] = {\n");
    for (int i = 0; i < 128; i += 16) {
        fprintf(f, "    /* %3d */", i);
        for (int k = i; k < i + 16; ++k) {
            fprintf(f, " %3d,", ksigns[k]);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "};\n\n");

    fprintf(f, "const uint8_t anvil_cold_kmask[8] = {");
    for (int j = 0; j < 8; ++j) {
        fprintf(f, "%s%d", j ? ", " : " ", kmask[j]);
    }
    fprintf(f, " };\n\n");

    fprintf(f, "const int8_t anvil_cold_iq4nl_values[16] = {");
    for (int j = 0; j < 16; ++j) {
        fprintf(f, "%s%d", j ? ", " : " ", iq4nl_values[j]);
    }
    fprintf(f, " };\n\n");

    fprintf(f, "const int8_t anvil_cold_e2m1_x2_values[16] = {");
    for (int j = 0; j < 16; ++j) {
        fprintf(f, "%s%d", j ? ", " : " ", e2m1_x2_values[j]);
    }
    fprintf(f, " };\n\n");

    fprintf(f, "const float anvil_cold_iq1s_delta = %af; /* %.9g */\n", (double)iq1s_delta, (double)iq1s_delta);
    fprintf(f, "const float anvil_cold_iq1m_delta = %af; /* %.9g */\n", (double)iq1m_delta, (double)iq1m_delta);
}

int main(int argc, char **argv) {
    const char *oracle_dir = NULL;
    const char *out = NULL;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--oracle") == 0 && i + 1 < argc) {
            oracle_dir = argv[++i];
        } else if (argv[i][0] != '-' && out == NULL) {
            out = argv[i];
        } else {
            fprintf(stderr, "usage: anvil-cold-gentables [--oracle DIR] OUT.c\n");
            return 2;
        }
    }
    if (out == NULL) {
        fprintf(stderr, "usage: anvil-cold-gentables [--oracle DIR] OUT.c\n");
        return 2;
    }
    char why[2048];
    if (ggml_oracle_open(&oracle, oracle_dir, why, sizeof why) != 0) {
        fprintf(stderr, "anvil-cold-gentables: %s\n", why);
        return 77;
    }
    probe_iq2xxs();
    probe_ksigns();
    probe_kmask();
    probe_iq2xs();
    probe_iq2s();
    probe_iq3xxs();
    probe_iq3s();
    probe_iq1s();
    probe_iq1m_delta();
    probe_iq4nl();
    probe_e2m1();
    check_structure();
    if (failures != 0) {
        fprintf(stderr, "anvil-cold-gentables: %d probe failures; %s not written\n", failures, out);
        return 1;
    }
    /* Write beside the target and rename, so a failed run never leaves a
     * truncated table in the source tree. */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        perror(tmp);
        return 1;
    }
    emit(f);
    if (fclose(f) != 0 || rename(tmp, out) != 0) {
        perror(out);
        remove(tmp);
        return 1;
    }
    fprintf(stderr,
            "anvil-cold-gentables: wrote %s (grids 256/512/1024/256/512/2048, ksigns, kmask, "
            "iq4nl, e2m1, deltas %g/%g)\n",
            out, (double)iq1s_delta, (double)iq1m_delta);
    return 0;
}
