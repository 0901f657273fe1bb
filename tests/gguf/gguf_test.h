/* SPDX-License-Identifier: MIT */
/* Shared pieces of the GGUF suites: a raw byte builder (independent of
 * anvil's writer, so reader tests do not trust the code they test) and the
 * hostile corpus. */
#ifndef ANVIL_TEST_GGUF_H
#define ANVIL_TEST_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/gguf.h"
#include "read_file.h"

typedef struct gb {
    uint8_t *p;
    size_t n;
    size_t cap;
} gb;

void gb_free(gb *b);
void gb_bytes(gb *b, const void *p, size_t n);
void gb_u8(gb *b, uint8_t v);
void gb_u16(gb *b, uint16_t v);
void gb_u32(gb *b, uint32_t v);
void gb_u64(gb *b, uint64_t v);
void gb_str(gb *b, const char *s); /* u64 length + bytes */
void gb_pad(gb *b, size_t align);
void gb_zeros(gb *b, size_t n);
void gb_header(gb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv);
void gb_kv_u32(gb *b, const char *key, uint32_t v);
void gb_kv_str(gb *b, const char *key, const char *v);
/* A tensor directory entry. */
void gb_tensor(gb *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t offset);

/* The small valid file the hostile cases start from: 5 KVs (str, u64,
 * arr[str], arr[f32], bool), tensors "a" f32 [8,2] at 0 and "b" q8_0 [32,2]
 * at 64; data filled with a pattern. Offsets of its section boundaries are
 * recorded for the truncation cases. */
typedef struct base_file {
    gb b;
    size_t after_magic, after_version, after_counts, after_kv[5], after_tensor[2], after_dir, data_start, after_a,
        end;
} base_file;
void base_build(base_file *f);

typedef struct hostile_case {
    const char *name;
    int expect;            /* status the reader must return */
    const char *substring; /* the message must contain this (NULL: any) */
    void (*build)(gb *b);
} hostile_case;

extern const hostile_case hostile_cases[];
extern const size_t hostile_case_count;

void gguf_add_reader_tests(void);
void gguf_add_writer_tests(void);
void gguf_add_hostile_tests(void);
void gguf_add_split_tests(void);
void gguf_add_lenient_tests(void);

/* Whole file into memory: test_read_file (tests/common/read_file.h). */
int write_whole(const char *path, const void *p, size_t n);

#endif
