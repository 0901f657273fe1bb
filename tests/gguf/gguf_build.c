/* SPDX-License-Identifier: MIT */
/* Raw GGUF byte builder and the hostile corpus (see gguf_test.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_test.h"
#include "read_file.h"

/* ---- builder --------------------------------------------------------------- */

void gb_free(gb *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

void gb_bytes(gb *b, const void *p, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) {
            cap *= 2;
        }
        uint8_t *q = realloc(b->p, cap);
        if (q == NULL) {
            abort();
        }
        b->p = q;
        b->cap = cap;
    }
    if (n > 0) {
        memcpy(b->p + b->n, p, n);
    }
    b->n += n;
}

void gb_u8(gb *b, uint8_t v) { gb_bytes(b, &v, 1); }
void gb_u16(gb *b, uint16_t v) {
    uint8_t x[2] = { (uint8_t)v, (uint8_t)(v >> 8) };
    gb_bytes(b, x, 2);
}
void gb_u32(gb *b, uint32_t v) {
    uint8_t x[4];
    for (int i = 0; i < 4; ++i) {
        x[i] = (uint8_t)(v >> (8 * i));
    }
    gb_bytes(b, x, 4);
}
void gb_u64(gb *b, uint64_t v) {
    uint8_t x[8];
    for (int i = 0; i < 8; ++i) {
        x[i] = (uint8_t)(v >> (8 * i));
    }
    gb_bytes(b, x, 8);
}
void gb_str(gb *b, const char *s) {
    gb_u64(b, strlen(s));
    gb_bytes(b, s, strlen(s));
}
void gb_zeros(gb *b, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        gb_u8(b, 0);
    }
}
void gb_pad(gb *b, size_t align) {
    while (b->n % align != 0) {
        gb_u8(b, 0);
    }
}
void gb_header(gb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    gb_bytes(b, "GGUF", 4);
    gb_u32(b, version);
    gb_u64(b, n_tensors);
    gb_u64(b, n_kv);
}
void gb_kv_u32(gb *b, const char *key, uint32_t v) {
    gb_str(b, key);
    gb_u32(b, ANVIL_GGUF_TYPE_U32);
    gb_u32(b, v);
}
void gb_kv_str(gb *b, const char *key, const char *v) {
    gb_str(b, key);
    gb_u32(b, ANVIL_GGUF_TYPE_STRING);
    gb_str(b, v);
}
void gb_tensor(gb *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t offset) {
    gb_str(b, name);
    gb_u32(b, n_dims);
    for (uint32_t i = 0; i < n_dims; ++i) {
        gb_u64(b, ne[i]);
    }
    gb_u32(b, type);
    gb_u64(b, offset);
}

static void pattern(gb *b, size_t n, uint8_t seed) {
    for (size_t i = 0; i < n; ++i) {
        gb_u8(b, (uint8_t)(seed + i * 7));
    }
}

void base_build(base_file *f) {
    memset(f, 0, sizeof *f);
    gb *b = &f->b;
    gb_bytes(b, "GGUF", 4);
    f->after_magic = b->n;
    gb_u32(b, 3);
    f->after_version = b->n;
    gb_u64(b, 2);
    gb_u64(b, 5);
    f->after_counts = b->n;
    gb_kv_str(b, "general.architecture", "llama");
    f->after_kv[0] = b->n;
    gb_str(b, "test.big");
    gb_u32(b, ANVIL_GGUF_TYPE_U64);
    gb_u64(b, 0xFFFFFFFFFFFFFFF0ull);
    f->after_kv[1] = b->n;
    gb_str(b, "tokenizer.ggml.tokens");
    gb_u32(b, ANVIL_GGUF_TYPE_ARRAY);
    gb_u32(b, ANVIL_GGUF_TYPE_STRING);
    gb_u64(b, 3);
    gb_str(b, "a");
    gb_str(b, "bc");
    gb_str(b, "def");
    f->after_kv[2] = b->n;
    gb_str(b, "tokenizer.ggml.scores");
    gb_u32(b, ANVIL_GGUF_TYPE_ARRAY);
    gb_u32(b, ANVIL_GGUF_TYPE_F32);
    gb_u64(b, 3);
    gb_u32(b, 0x3f800000); /* 1.0f */
    gb_u32(b, 0x40000000); /* 2.0f */
    gb_u32(b, 0xbf800000); /* -1.0f */
    f->after_kv[3] = b->n;
    gb_str(b, "test.flag");
    gb_u32(b, ANVIL_GGUF_TYPE_BOOL);
    gb_u8(b, 1);
    f->after_kv[4] = b->n;
    const uint64_t ne_a[2] = { 8, 2 }, ne_b[2] = { 32, 2 };
    gb_tensor(b, "a", 2, ne_a, ANVIL_TYPE_F32, 0);
    f->after_tensor[0] = b->n;
    gb_tensor(b, "b", 2, ne_b, ANVIL_TYPE_Q8_0, 64);
    f->after_tensor[1] = b->n;
    f->after_dir = b->n;
    gb_pad(b, 32);
    f->data_start = b->n;
    pattern(b, 64, 1);
    f->after_a = b->n;
    pattern(b, 68, 2);
    gb_pad(b, 32);
    f->end = b->n;
}

/* ---- hostile cases ---------------------------------------------------------- */

static void truncate_base(gb *b, size_t (*at)(const base_file *)) {
    base_file f;
    base_build(&f);
    f.b.n = at(&f);
    *b = f.b;
}

#define TRUNC_CASE(fn, expr)                                     \
    static size_t fn##_at(const base_file *f) { return (expr); } \
    static void fn(gb *b) { truncate_base(b, fn##_at); }

TRUNC_CASE(trunc_magic, f->after_magic)
TRUNC_CASE(trunc_version, f->after_version)
TRUNC_CASE(trunc_counts_half, f->after_version + 8)
TRUNC_CASE(trunc_counts, f->after_counts)
TRUNC_CASE(trunc_kv0, f->after_kv[0])
TRUNC_CASE(trunc_kv1, f->after_kv[1])
TRUNC_CASE(trunc_kv2, f->after_kv[2])
TRUNC_CASE(trunc_kv3, f->after_kv[3])
TRUNC_CASE(trunc_kvs, f->after_kv[4])
TRUNC_CASE(trunc_tensor0, f->after_tensor[0])
TRUNC_CASE(trunc_dir, f->after_dir)
TRUNC_CASE(trunc_data_start, f->data_start)
TRUNC_CASE(trunc_after_a, f->after_a)
TRUNC_CASE(trunc_last_byte, f->after_a + 67)
TRUNC_CASE(trunc_in_key, f->after_counts + 12)

static void empty_file(gb *b) { (void)b; }
static void magic_partial(gb *b) { gb_bytes(b, "GG", 2); }
static void magic_wrong(gb *b) {
    gb_bytes(b, "ABCD", 4);
    gb_zeros(b, 20);
}
static void magic_ggml(gb *b) {
    gb_bytes(b, "lmgg", 4);
    gb_zeros(b, 28);
}
static void magic_ggmf(gb *b) {
    gb_bytes(b, "fmgg", 4);
    gb_u32(b, 1);
    gb_zeros(b, 24);
}
static void magic_ggjt(gb *b) {
    gb_bytes(b, "tjgg", 4);
    gb_u32(b, 3);
    gb_zeros(b, 24);
}
static void magic_swapped(gb *b) {
    gb_bytes(b, "FUGG", 4);
    gb_zeros(b, 20);
}
static void version_1(gb *b) { gb_header(b, 1, 0, 0); }
static void version_0(gb *b) { gb_header(b, 0, 0, 0); }
static void version_4(gb *b) { gb_header(b, 4, 0, 0); }
static void version_swapped(gb *b) { gb_header(b, 0x03000000u, 0, 0); }
static void header_short(gb *b) {
    gb_bytes(b, "GGUF", 4);
    gb_u32(b, 3);
    gb_u64(b, 0);
}
static void count_tensors_negative(gb *b) { gb_header(b, 3, 1ull << 63, 0); }
static void count_kv_max(gb *b) { gb_header(b, 3, 0, UINT64_MAX); }
static void count_kv_unbacked(gb *b) {
    gb_header(b, 3, 0, 1ull << 40);
    gb_kv_u32(b, "a", 1);
}

static void kv_header(gb *b, uint64_t n_kv) { gb_header(b, 3, 0, n_kv); }

static void key_huge(gb *b) {
    kv_header(b, 1);
    gb_u64(b, 1ull << 63);
    gb_bytes(b, "abc", 3);
}
static void value_str_huge(gb *b) {
    kv_header(b, 1);
    gb_str(b, "k");
    gb_u32(b, ANVIL_GGUF_TYPE_STRING);
    gb_u64(b, UINT64_MAX);
    gb_bytes(b, "abc", 3);
}
static void empty_key(gb *b) {
    kv_header(b, 1);
    gb_str(b, "");
    gb_u32(b, ANVIL_GGUF_TYPE_U8);
    gb_u8(b, 1);
}
static void kv_type_13(gb *b) {
    kv_header(b, 1);
    gb_str(b, "k");
    gb_u32(b, 13);
    gb_u32(b, 0);
}
static void kv_type_negative(gb *b) {
    kv_header(b, 1);
    gb_str(b, "k");
    gb_u32(b, 0xFFFFFFFFu);
    gb_u32(b, 0);
}
static void array_nested(gb *b) {
    kv_header(b, 1);
    gb_str(b, "k");
    gb_u32(b, ANVIL_GGUF_TYPE_ARRAY);
    gb_u32(b, ANVIL_GGUF_TYPE_ARRAY);
    gb_u64(b, 1);
    gb_u32(b, ANVIL_GGUF_TYPE_U8);
    gb_u64(b, 1);
    gb_u8(b, 7);
}
static void array_elem_99(gb *b) {
    kv_header(b, 1);
    gb_str(b, "k");
    gb_u32(b, ANVIL_GGUF_TYPE_ARRAY);
    gb_u32(b, 99);
    gb_u64(b, 1);
    gb_u32(b, 0);
}
static void array_count_overflow(gb *b) {
    kv_header(b, 1);
    gb_str(b, "k");
    gb_u32(b, ANVIL_GGUF_TYPE_ARRAY);
    gb_u32(b, ANVIL_GGUF_TYPE_U32);
    gb_u64(b, 1ull << 62); /* x 4 bytes overflows u64 */
    gb_zeros(b, 16);
}
static void array_count_past_end(gb *b) {
    kv_header(b, 1);
    gb_str(b, "k");
    gb_u32(b, ANVIL_GGUF_TYPE_ARRAY);
    gb_u32(b, ANVIL_GGUF_TYPE_U8);
    gb_u64(b, 1000);
    gb_zeros(b, 10);
}
static void array_str_count_huge(gb *b) {
    kv_header(b, 1);
    gb_str(b, "k");
    gb_u32(b, ANVIL_GGUF_TYPE_ARRAY);
    gb_u32(b, ANVIL_GGUF_TYPE_STRING);
    gb_u64(b, 1ull << 61);
    gb_str(b, "x");
}
static void array_str_elem_huge(gb *b) {
    kv_header(b, 1);
    gb_str(b, "k");
    gb_u32(b, ANVIL_GGUF_TYPE_ARRAY);
    gb_u32(b, ANVIL_GGUF_TYPE_STRING);
    gb_u64(b, 2);
    gb_str(b, "hello");
    gb_u64(b, 1ull << 40);
    gb_bytes(b, "xyz", 3);
}
static void dup_key(gb *b) {
    kv_header(b, 2);
    gb_kv_str(b, "general.name", "a");
    gb_kv_str(b, "general.name", "b");
}

static void align_as(gb *b, uint32_t type, uint64_t value, int width) {
    kv_header(b, 1);
    gb_str(b, ANVIL_GGUF_KEY_ALIGNMENT);
    gb_u32(b, type);
    if (width == 8) {
        gb_u64(b, value);
    } else {
        gb_u32(b, (uint32_t)value);
    }
}
static void align_u64(gb *b) { align_as(b, ANVIL_GGUF_TYPE_U64, 32, 8); }
static void align_i32(gb *b) { align_as(b, ANVIL_GGUF_TYPE_I32, 32, 4); }
static void align_f32(gb *b) { align_as(b, ANVIL_GGUF_TYPE_F32, 0x42000000u, 4); }
static void align_str(gb *b) {
    kv_header(b, 1);
    gb_kv_str(b, ANVIL_GGUF_KEY_ALIGNMENT, "32");
}
static void align_array(gb *b) {
    kv_header(b, 1);
    gb_str(b, ANVIL_GGUF_KEY_ALIGNMENT);
    gb_u32(b, ANVIL_GGUF_TYPE_ARRAY);
    gb_u32(b, ANVIL_GGUF_TYPE_U32);
    gb_u64(b, 1);
    gb_u32(b, 32);
}
static void align_zero(gb *b) { align_as(b, ANVIL_GGUF_TYPE_U32, 0, 4); }
static void align_48(gb *b) { align_as(b, ANVIL_GGUF_TYPE_U32, 48, 4); }
static void align_2mib(gb *b) { align_as(b, ANVIL_GGUF_TYPE_U32, 2u << 20, 4); }
static void align_top_bit(gb *b) { align_as(b, ANVIL_GGUF_TYPE_U32, 0x80000000u, 4); }
static void align_64_ok(gb *b) {
    gb_header(b, 3, 2, 1);
    gb_kv_u32(b, ANVIL_GGUF_KEY_ALIGNMENT, 64);
    const uint64_t ne[1] = { 4 };
    gb_tensor(b, "x", 1, ne, ANVIL_TYPE_F32, 0);
    gb_tensor(b, "y", 1, ne, ANVIL_TYPE_F32, 64);
    gb_pad(b, 64);
    gb_zeros(b, 128); /* canonical: the last tensor padded too */
}

/* One tensor with the given entry and `data` bytes of data. */
static void one_tensor(gb *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t offset,
                       size_t data) {
    gb_header(b, 3, 1, 0);
    gb_tensor(b, name, n_dims, ne, type, offset);
    gb_pad(b, 32);
    gb_zeros(b, data);
}
static void dims_5(gb *b) {
    const uint64_t ne[5] = { 1, 1, 1, 1, 1 };
    one_tensor(b, "t", 5, ne, ANVIL_TYPE_F32, 0, 32);
}
static void dim_negative(gb *b) {
    const uint64_t ne[2] = { 1ull << 63, 1 };
    one_tensor(b, "t", 2, ne, ANVIL_TYPE_F32, 0, 32);
}
static void dims_overflow(gb *b) {
    const uint64_t ne[2] = { 1ull << 32, 1ull << 32 };
    one_tensor(b, "t", 2, ne, ANVIL_TYPE_F32, 0, 32);
}
static void bytes_overflow(gb *b) {
    const uint64_t ne[1] = { 1ull << 62 };
    one_tensor(b, "t", 1, ne, ANVIL_TYPE_F32, 0, 32);
}
static void type_removed(gb *b) {
    const uint64_t ne[1] = { 32 };
    one_tensor(b, "t", 1, ne, 4, 0, 32);
}
static void type_unknown(gb *b) {
    const uint64_t ne[1] = { 32 };
    one_tensor(b, "t", 1, ne, 99, 0, 32);
}
static void type_third_party(gb *b) {
    const uint64_t ne[1] = { 32 };
    one_tensor(b, "t", 1, ne, 1500, 0, 32);
}
static void row_blocks(gb *b) {
    const uint64_t ne[2] = { 172, 64 };
    one_tensor(b, "blk.0.ffn_down.weight", 2, ne, ANVIL_TYPE_Q8_0, 0, 172 / 32 * 34 * 64);
}
static void dup_tensor(gb *b) {
    gb_header(b, 3, 2, 0);
    const uint64_t ne[1] = { 8 };
    gb_tensor(b, "w", 1, ne, ANVIL_TYPE_F32, 0);
    gb_tensor(b, "w", 1, ne, ANVIL_TYPE_F32, 32);
    gb_pad(b, 32);
    gb_zeros(b, 64);
}
static void tensor_name_huge(gb *b) {
    gb_header(b, 3, 1, 0);
    gb_u64(b, 1ull << 62);
    gb_zeros(b, 40);
}
static void tensor_n_dims_truncated(gb *b) {
    gb_header(b, 3, 1, 0);
    gb_str(b, "t");
    gb_u32(b, 4);
    gb_u64(b, 2);
}
static void misaligned(gb *b) {
    const uint64_t ne[1] = { 2 };
    one_tensor(b, "t", 1, ne, ANVIL_TYPE_F32, 8, 64);
}
static void overlap(gb *b) {
    gb_header(b, 3, 2, 0);
    const uint64_t ne[1] = { 16 };
    gb_tensor(b, "first", 1, ne, ANVIL_TYPE_F32, 0);
    gb_tensor(b, "second", 1, ne, ANVIL_TYPE_F32, 32);
    gb_pad(b, 32);
    gb_zeros(b, 96);
}
static void overlap_same(gb *b) {
    gb_header(b, 3, 2, 0);
    const uint64_t ne[1] = { 8 };
    gb_tensor(b, "first", 1, ne, ANVIL_TYPE_F32, 0);
    gb_tensor(b, "second", 1, ne, ANVIL_TYPE_F32, 0);
    gb_pad(b, 32);
    gb_zeros(b, 32);
}
static void offset_overflow(gb *b) {
    const uint64_t ne[1] = { 8 };
    one_tensor(b, "t", 1, ne, ANVIL_TYPE_F32, UINT64_MAX - 31, 32);
}
static void data_past_eof(gb *b) {
    const uint64_t ne[2] = { 1024, 1024 };
    one_tensor(b, "token_embd.weight", 2, ne, ANVIL_TYPE_F32, 0, 1000);
}
static void zero_elements(gb *b) {
    gb_header(b, 3, 3, 0);
    const uint64_t a[2] = { 0, 4 }, q[2] = { 0, 3 }, z[2] = { 32, 0 };
    gb_tensor(b, "empty_f32", 2, a, ANVIL_TYPE_F32, 0);
    gb_tensor(b, "empty_q8_0", 2, q, ANVIL_TYPE_Q8_0, 0);
    gb_tensor(b, "empty_rows", 2, z, ANVIL_TYPE_Q8_0, 0);
    gb_pad(b, 32);
}
static void scalar_0dims(gb *b) { one_tensor(b, "s", 0, NULL, ANVIL_TYPE_F32, 0, 32); }
static void header_only(gb *b) { gb_header(b, 3, 0, 0); }
static void v2_ok(gb *b) {
    gb_header(b, 2, 1, 1);
    gb_kv_str(b, "general.name", "v2");
    const uint64_t ne[1] = { 8 };
    gb_tensor(b, "t", 1, ne, ANVIL_TYPE_F32, 0);
    gb_pad(b, 32);
    gb_zeros(b, 32);
}
static void base_ok(gb *b) {
    base_file f;
    base_build(&f);
    *b = f.b;
}

#define C(name, code, sub) \
    { #name, code, sub, name }
const hostile_case hostile_cases[] = {
    C(base_ok, ANVIL_OK, NULL),
    C(empty_file, ANVIL_E_GGUF_TRUNCATED, "empty"),
    C(magic_partial, ANVIL_E_GGUF_TRUNCATED, "magic"),
    C(magic_wrong, ANVIL_E_GGUF_MAGIC, "expected 'GGUF'"),
    C(magic_ggml, ANVIL_E_GGUF_LEGACY, "pre-GGUF ggml"),
    C(magic_ggmf, ANVIL_E_GGUF_LEGACY, "ggmf"),
    C(magic_ggjt, ANVIL_E_GGUF_LEGACY, "ggjt"),
    C(magic_swapped, ANVIL_E_GGUF_ENDIAN, "big-endian"),
    C(version_1, ANVIL_E_GGUF_VERSION, "GGUF v1 is no longer supported"),
    C(version_0, ANVIL_E_GGUF_VERSION, "version 0"),
    C(version_4, ANVIL_E_GGUF_VERSION, "version 4"),
    C(version_swapped, ANVIL_E_GGUF_ENDIAN, "byte-swapped"),
    C(header_short, ANVIL_E_GGUF_TRUNCATED, "truncated"),
    C(count_tensors_negative, ANVIL_E_GGUF_COUNT, "negative"),
    C(count_kv_max, ANVIL_E_GGUF_COUNT, "18446744073709551615 KVs"),
    C(count_kv_unbacked, ANVIL_E_GGUF_TRUNCATED, "KV 1 of 1099511627776"),
    C(trunc_magic, ANVIL_E_GGUF_TRUNCATED, "version"),
    C(trunc_version, ANVIL_E_GGUF_TRUNCATED, "counts"),
    C(trunc_counts_half, ANVIL_E_GGUF_TRUNCATED, "counts"),
    C(trunc_counts, ANVIL_E_GGUF_TRUNCATED, "KV 0 of 5"),
    C(trunc_kv0, ANVIL_E_GGUF_TRUNCATED, "KV 1 of 5"),
    C(trunc_kv1, ANVIL_E_GGUF_TRUNCATED, "KV 2 of 5"),
    C(trunc_kv2, ANVIL_E_GGUF_TRUNCATED, "KV 3 of 5"),
    C(trunc_kv3, ANVIL_E_GGUF_TRUNCATED, "KV 4 of 5"),
    C(trunc_kvs, ANVIL_E_GGUF_TRUNCATED, "tensor 0 of 2"),
    C(trunc_tensor0, ANVIL_E_GGUF_TRUNCATED, "tensor 1 of 2"),
    C(trunc_dir, ANVIL_E_GGUF_TRUNCATED, "tensor 'a' ends at byte"),
    C(trunc_data_start, ANVIL_E_GGUF_TRUNCATED, "2 of 2 tensors run past the end; the data needs"),
    C(trunc_after_a, ANVIL_E_GGUF_TRUNCATED, "tensor 'b' ends at byte"),
    C(trunc_last_byte, ANVIL_E_GGUF_TRUNCATED, "1 bytes (0.000 GB) short"),
    C(trunc_in_key, ANVIL_E_GGUF_STRING, "runs past the end"),
    C(key_huge, ANVIL_E_GGUF_STRING, "9223372036854775808"),
    C(value_str_huge, ANVIL_E_GGUF_STRING, "18446744073709551615"),
    C(empty_key, ANVIL_E_GGUF_STRING, "empty key"),
    C(kv_type_13, ANVIL_E_GGUF_KV_TYPE, "unknown value type 13"),
    C(kv_type_negative, ANVIL_E_GGUF_KV_TYPE, "4294967295"),
    C(array_nested, ANVIL_E_GGUF_NESTED_ARRAY, "array of arrays"),
    C(array_elem_99, ANVIL_E_GGUF_KV_TYPE, "array of unknown type 99"),
    C(array_count_overflow, ANVIL_E_GGUF_COUNT, "4611686018427387904"),
    C(array_count_past_end, ANVIL_E_GGUF_COUNT, "1000 u8"),
    C(array_str_count_huge, ANVIL_E_GGUF_COUNT, "strings cannot fit"),
    C(array_str_elem_huge, ANVIL_E_GGUF_STRING, "element 1"),
    C(dup_key, ANVIL_E_GGUF_DUP_KEY, "'general.name' appears twice"),
    C(align_u64, ANVIL_E_GGUF_KEY_TYPE, "wire type u64"),
    C(align_i32, ANVIL_E_GGUF_KEY_TYPE, "wire type i32"),
    C(align_f32, ANVIL_E_GGUF_KEY_TYPE, "wire type f32"),
    C(align_str, ANVIL_E_GGUF_KEY_TYPE, "wire type str"),
    C(align_array, ANVIL_E_GGUF_KEY_TYPE, "wire type arr"),
    C(align_zero, ANVIL_E_GGUF_ALIGNMENT, "is 0"),
    C(align_48, ANVIL_E_GGUF_ALIGNMENT, "is 48"),
    C(align_2mib, ANVIL_E_GGUF_ALIGNMENT, "is 2097152"),
    C(align_top_bit, ANVIL_E_GGUF_ALIGNMENT, "is 2147483648"),
    C(align_64_ok, ANVIL_OK, NULL),
    C(dims_5, ANVIL_E_GGUF_DIMS, "5 dims"),
    C(dim_negative, ANVIL_E_GGUF_DIMS, "negative"),
    C(dims_overflow, ANVIL_E_GGUF_DIMS, "overflow the element count"),
    C(bytes_overflow, ANVIL_E_GGUF_DIMS, "overflow a byte count"),
    C(type_removed, ANVIL_E_GGUF_TENSOR_TYPE, "type id 4 (Q4_2) was removed"),
    C(type_unknown, ANVIL_E_GGUF_TENSOR_TYPE, "type id 99"),
    C(type_third_party, ANVIL_E_GGUF_TENSOR_TYPE, "plugin is missing"),
    C(row_blocks, ANVIL_E_GGUF_ROW_BLOCKS, "'blk.0.ffn_down.weight' (q8_0) has rows of 172"),
    C(dup_tensor, ANVIL_E_GGUF_DUP_TENSOR, "'w' appears twice"),
    C(tensor_name_huge, ANVIL_E_GGUF_STRING, "name of tensor 0"),
    C(tensor_n_dims_truncated, ANVIL_E_GGUF_TRUNCATED, "dims of tensor 't'"),
    C(misaligned, ANVIL_E_GGUF_MISALIGNED, "offset 8"),
    C(overlap, ANVIL_E_GGUF_OVERLAP, "'first'"),
    C(overlap_same, ANVIL_E_GGUF_OVERLAP, "'second'"),
    C(offset_overflow, ANVIL_E_GGUF_DATA_RANGE, "outside any possible file"),
    C(data_past_eof, ANVIL_E_GGUF_TRUNCATED, "'token_embd.weight' ends at byte"),
    C(zero_elements, ANVIL_OK, NULL),
    C(scalar_0dims, ANVIL_OK, NULL),
    C(header_only, ANVIL_OK, NULL),
    C(v2_ok, ANVIL_OK, NULL),
};
const size_t hostile_case_count = sizeof hostile_cases / sizeof hostile_cases[0];

/* ---- files ------------------------------------------------------------------ */


int write_whole(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        return -1;
    }
    const int ok = n == 0 || fwrite(p, 1, n, f) == n;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}
