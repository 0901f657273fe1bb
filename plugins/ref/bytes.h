/* SPDX-License-Identifier: MIT */
/* Unaligned little-endian field access for block bytes.
 *
 * Rows handed to a codec may sit at any address (a view into a mapped file,
 * a record in a fixture), so multi-byte block fields are read and written
 * through memcpy, never by dereferencing a block struct. One set of helpers
 * for every family. */
#ifndef ANVIL_REF_BYTES_H
#define ANVIL_REF_BYTES_H

#include <stdint.h>
#include <string.h>

#include "anvil/numeric.h"

static inline uint16_t anvil_rd_u16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline int16_t anvil_rd_i16(const uint8_t *p) {
    int16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint32_t anvil_rd_u32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline float anvil_rd_f32(const uint8_t *p) {
    float v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* An fp16 field, widened to f32. */
static inline float anvil_rd_half(const uint8_t *p) { return anvil_fp16_to_fp32(anvil_rd_u16(p)); }

/* Round v to fp16 and store it. */
static inline void anvil_wr_half(uint8_t *p, float v) {
    const anvil_half h = anvil_fp32_to_fp16(v);
    memcpy(p, &h, sizeof h);
}

#endif
