/* SPDX-License-Identifier: MIT */
/*
 * anvil quantize without the oracle: the option strings, the importance-matrix
 * readers (good and hostile files), presets, and the per-tensor types of
 * every preset against a golden list taken from llama.cpp's own outputs
 * (tests/golden/quantize/types.tsv, written by `anvil-parity --family
 * quantize --write-golden`).
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/gguf.h"
#include "anvil/quantize.h"
#include "anvil/transcode.h"
#include "synth_model.h"
#include "test_env.h"
#include "read_file.h"

static anvil_ctx *g_ctx;

static anvil_ctx *ctx(void) {
    if (g_ctx == NULL) {
        anvil_error err;
        if (anvil_ctx_open(&g_ctx, test_config_path(), &err) != ANVIL_OK) {
            fprintf(stderr, "context: %s\n", err.message);
            return NULL;
        }
    }
    return g_ctx;
}

/* ---- presets and option strings -------------------------------------------------- */

static void test_presets(void) {
    const struct {
        const char *arg, *name;
        uint32_t ftype;
    } ok[] = {
        { "Q4_K_M", "Q4_K_M", 15 },   { "q4_k_m", "Q4_K_M", 15 }, { "Q4_K", "Q4_K", 15 }, { "15", "Q4_K", 15 },
        { " 7abc", "Q8_0", 7 },       { "0", "F32", 0 },          { "COPY", "COPY", 0 },  { "copy", "COPY", 0 },
        { "iq2_xxs", "IQ2_XXS", 19 }, { "+38", "MXFP4_MOE", 38 }, { "41", "Q2_0", 41 },
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; ++i) {
        const anvil_quantize_preset *p = anvil_quantize_preset_find(ok[i].arg);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_STRING_EQUAL(p->name, ok[i].name);
        CU_ASSERT_EQUAL(p->ftype, ok[i].ftype);
    }
    const char *bad[] = { "Q4_K_X", "99", "4", "", "-1", "99999999999", "q4_k_m " };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) CU_ASSERT_PTR_NULL(anvil_quantize_preset_find(bad[i]));
    CU_ASSERT_EQUAL(anvil_quantize_preset_count(), 39);
    CU_ASSERT_EQUAL(anvil_quantize_default_type(15), ANVIL_TYPE_Q4_K);
    CU_ASSERT_EQUAL(anvil_quantize_default_type(28), ANVIL_TYPE_IQ2_XS); /* IQ2_S's default */
    CU_ASSERT_EQUAL(anvil_quantize_default_type(22), ANVIL_TYPE_IQ3_S);  /* IQ3_XS's default */
    CU_ASSERT_EQUAL(anvil_quantize_default_type(5), ANVIL_TRANSCODE_NO_TYPE);
}

static void test_kv_override(void) {
    anvil_kv_override o;
    anvil_error err;
    CU_ASSERT(anvil_kv_override_parse("a.b=int:-5", &o, &err) == ANVIL_OK && o.tag == ANVIL_KV_OVERRIDE_INT &&
              o.i == -5);
    CU_ASSERT_STRING_EQUAL(o.key, "a.b");
    CU_ASSERT(anvil_kv_override_parse("x=int:12abc", &o, &err) == ANVIL_OK && o.i == 12); /* atol */
    CU_ASSERT(anvil_kv_override_parse("x=int:", &o, &err) == ANVIL_OK && o.i == 0);
    CU_ASSERT(anvil_kv_override_parse("x=float:0.25", &o, &err) == ANVIL_OK && o.tag == ANVIL_KV_OVERRIDE_FLOAT &&
              o.f == 0.25);
    CU_ASSERT(anvil_kv_override_parse("x=bool:true", &o, &err) == ANVIL_OK && o.tag == ANVIL_KV_OVERRIDE_BOOL &&
              o.b == 1);
    CU_ASSERT(anvil_kv_override_parse("x=bool:false", &o, &err) == ANVIL_OK && o.b == 0);
    CU_ASSERT(anvil_kv_override_parse("x=str:a=b c", &o, &err) == ANVIL_OK && o.tag == ANVIL_KV_OVERRIDE_STR);
    CU_ASSERT_STRING_EQUAL(o.str, "a=b c");
    CU_ASSERT(anvil_kv_override_parse("x=bool:yes", &o, &err) == ANVIL_E_INVALID_ARG);
    CU_ASSERT(strstr(err.message, "invalid boolean") != NULL);
    CU_ASSERT(anvil_kv_override_parse("x=blob:1", &o, &err) == ANVIL_E_INVALID_ARG);
    CU_ASSERT(strstr(err.message, "invalid type") != NULL);
    CU_ASSERT(anvil_kv_override_parse("novalue", &o, &err) == ANVIL_E_INVALID_ARG);
    CU_ASSERT(anvil_kv_override_parse("=int:1", &o, &err) == ANVIL_E_INVALID_ARG);
    char longkey[200];
    memset(longkey, 'k', 128);
    strcpy(longkey + 128, "=int:1");
    CU_ASSERT(anvil_kv_override_parse(longkey, &o, &err) == ANVIL_E_INVALID_ARG);
    longkey[127] = '=';
    strcpy(longkey + 128, "int:1");
    CU_ASSERT(anvil_kv_override_parse(longkey, &o, &err) == ANVIL_OK && strlen(o.key) == 127);
    char longstr[300] = "x=str:";
    memset(longstr + 6, 's', 128);
    longstr[134] = '\0';
    CU_ASSERT(anvil_kv_override_parse(longstr, &o, &err) == ANVIL_E_INVALID_ARG);
    longstr[133] = '\0';
    CU_ASSERT(anvil_kv_override_parse(longstr, &o, &err) == ANVIL_OK && strlen(o.str) == 127);
}

static void test_tensor_type(void) {
    char *pat = NULL;
    uint32_t ty = 0;
    anvil_error err;
    CU_ASSERT_FATAL(anvil_quantize_parse_tensor_type(ctx(), "BLK\\.\\D+\\.ATTN_V=Q8_0", &pat, &ty, &err) == ANVIL_OK);
    CU_ASSERT_STRING_EQUAL(pat, "blk\\.\\d+\\.attn_v"); /* lower-cased, as llama-quantize does */
    CU_ASSERT_EQUAL(ty, ANVIL_TYPE_Q8_0);
    free(pat);
    CU_ASSERT(anvil_quantize_parse_tensor_type(ctx(), "attn_v=", &pat, &ty, &err) == ANVIL_E_INVALID_ARG);
    CU_ASSERT(strstr(err.message, "missing quantization type") != NULL);
    CU_ASSERT(anvil_quantize_parse_tensor_type(ctx(), "=q8_0", &pat, &ty, &err) == ANVIL_E_INVALID_ARG);
    CU_ASSERT(anvil_quantize_parse_tensor_type(ctx(), "attn_v", &pat, &ty, &err) == ANVIL_E_INVALID_ARG);
    CU_ASSERT(anvil_quantize_parse_tensor_type(ctx(), "a=b=q8_0", &pat, &ty, &err) == ANVIL_E_UNKNOWN_TYPE);
    CU_ASSERT(anvil_quantize_parse_tensor_type(ctx(), "attn_(=q8_0", &pat, &ty, &err) == ANVIL_E_INVALID_ARG);
    CU_ASSERT(strstr(err.message, "ECMAScript") != NULL);
    CU_ASSERT(anvil_tensor_pattern_check("(?<=a)b", &err) == ANVIL_E_INVALID_ARG);
    CU_ASSERT(anvil_tensor_pattern_check("(?!blk\\.1\\.)blk", &err) == ANVIL_OK);

    const char text[] = "a=q8_0\n  B=Q4_0\t\\D=f16\r\n\n";
    anvil_transcode_rule *rules = NULL;
    size_t n = 0;
    CU_ASSERT_FATAL(anvil_quantize_parse_tensor_type_file(ctx(), text, sizeof text - 1, &rules, &n, &err) ==
                    ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    CU_ASSERT_STRING_EQUAL(rules[1].pattern, "b");
    CU_ASSERT_STRING_EQUAL(rules[2].pattern, "\\d");
    CU_ASSERT_EQUAL(rules[2].type, ANVIL_TYPE_F16);
    /* An item holding a NUL is read up to it (c_str()), then fails. */
    const char bad[] = "a=q8_0\nbad\0x=q8_0\n";
    CU_ASSERT(anvil_quantize_parse_tensor_type_file(ctx(), bad, sizeof bad - 1, &rules, &n, &err) ==
              ANVIL_E_INVALID_ARG);
    CU_ASSERT(strstr(err.message, "line 2") != NULL);
    anvil_quantize_rules_free(rules, n);
}

/* ---- importance matrices ----------------------------------------------------------- */

typedef struct buf {
    unsigned char *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *p, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}
static void put_i32(buf *b, int32_t v) { put(b, &v, 4); }
static void put_f32(buf *b, float v) { put(b, &v, 4); }

/* A legacy .dat: entries of (name, ncall, values). */
static buf legacy(int with_trailer) {
    buf b = { 0 };
    put_i32(&b, 2);
    put_i32(&b, 14);
    put(&b, "blk.0.q.weight", 14);
    put_i32(&b, 4); /* ncall */
    put_i32(&b, 3);
    put_f32(&b, 4.0f);
    put_f32(&b, 8.0f);
    put_f32(&b, 2.0f);
    put_i32(&b, 5);
    put(&b, "a\0bcd", 5); /* a name cut at its NUL */
    put_i32(&b, 0);       /* ncall 0: values as they are */
    put_i32(&b, 1);
    put_f32(&b, 7.0f);
    if (with_trailer) {
        put_i32(&b, 33);
        put_i32(&b, 7);
        put(&b, "wiki.tx", 7);
    }
    return b;
}

static void test_imatrix_legacy(void) {
    buf b = legacy(1);
    anvil_imatrix *im = NULL;
    anvil_error err;
    CU_ASSERT_FATAL(anvil_imatrix_load_buffer(&im, b.p, b.n, &err) == ANVIL_OK);
    CU_ASSERT(anvil_imatrix_is_legacy(im));
    CU_ASSERT_EQUAL(anvil_imatrix_count(im), 2);
    CU_ASSERT_EQUAL(anvil_imatrix_chunk_count(im), 33);
    CU_ASSERT_EQUAL_FATAL(anvil_imatrix_dataset_count(im), 1);
    CU_ASSERT_STRING_EQUAL(anvil_imatrix_dataset_at(im, 0), "wiki.tx");
    const anvil_imatrix_entry *e = anvil_imatrix_find(im, "blk.0.q.weight");
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT(e->n_values == 3 && e->values[0] == 1.0f && e->values[1] == 2.0f && e->values[2] == 0.5f);
    e = anvil_imatrix_find(im, "a");
    CU_ASSERT(e != NULL && e->n_values == 1 && e->values[0] == 7.0f);
    anvil_imatrix_free(im);
    /* Without the trailer: no chunk count, no dataset. A 2-byte trailer
     * keeps the 2 bytes that were there (istream::read). */
    buf c = legacy(0);
    CU_ASSERT_FATAL(anvil_imatrix_load_buffer(&im, c.p, c.n, &err) == ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_imatrix_chunk_count(im), 0);
    CU_ASSERT_EQUAL(anvil_imatrix_dataset_count(im), 0);
    anvil_imatrix_free(im);
    put(&c, "\x05\x01", 2);
    CU_ASSERT_FATAL(anvil_imatrix_load_buffer(&im, c.p, c.n, &err) == ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_imatrix_chunk_count(im), 0x105);
    anvil_imatrix_free(im);
    /* Filters. */
    CU_ASSERT_FATAL(anvil_imatrix_load_buffer(&im, b.p, b.n, &err) == ANVIL_OK);
    const char *inc[] = { "q.w" }, *exc[] = { "a" };
    CU_ASSERT(anvil_imatrix_filter(im, inc, 1, exc, 1, &err) == ANVIL_E_INVALID_ARG);
    CU_ASSERT(anvil_imatrix_filter(im, inc, 1, NULL, 0, &err) == ANVIL_OK && anvil_imatrix_count(im) == 1);
    CU_ASSERT(anvil_imatrix_filter(im, NULL, 0, exc, 1, &err) == ANVIL_OK && anvil_imatrix_count(im) == 1);
    const char *exc2[] = { "blk" };
    CU_ASSERT(anvil_imatrix_filter(im, NULL, 0, exc2, 1, &err) == ANVIL_OK && anvil_imatrix_count(im) == 0);
    anvil_imatrix_free(im);
    free(b.p);
    free(c.p);
}

static void expect_bad(const void *p, size_t n, const char *needle) {
    anvil_imatrix *im = NULL;
    anvil_error err;
    const int rc = anvil_imatrix_load_buffer(&im, p, n, &err);
    CU_ASSERT(rc != ANVIL_OK);
    CU_ASSERT_PTR_NULL(im);
    if (rc != ANVIL_OK && needle != NULL && strstr(err.message, needle) == NULL) {
        fprintf(stderr, "\n  '%s' lacks '%s'", err.message, needle);
        CU_FAIL("message");
    }
    anvil_imatrix_free(im);
}

static void test_imatrix_hostile_legacy(void) {
    buf b = legacy(1);
    expect_bad(b.p, 0, "no data");
    expect_bad(b.p, 3, "no data");
    const int32_t zero = 0, neg = -7;
    expect_bad(&zero, 4, "no data");
    expect_bad(&neg, 4, "no data");
    /* Every truncation of a good file is refused or reads what it holds. */
    for (size_t cut = 4; cut < b.n; ++cut) {
        anvil_imatrix *im = NULL;
        if (anvil_imatrix_load_buffer(&im, b.p, cut, NULL) == ANVIL_OK) CU_ASSERT(cut >= 63); /* past the entries */
        anvil_imatrix_free(im);
    }
    /* A negative name length, a length past the end, nval 0, nval huge. */
    buf c = { 0 };
    put_i32(&c, 1);
    put_i32(&c, -1);
    expect_bad(c.p, c.n, "bad or truncated name");
    c.n = 4;
    put_i32(&c, 1000000);
    put(&c, "abc", 3);
    expect_bad(c.p, c.n, "bad or truncated name");
    c.n = 4;
    put_i32(&c, 1);
    put(&c, "x", 1);
    put_i32(&c, 1);
    put_i32(&c, 0);
    expect_bad(c.p, c.n, "number of values");
    c.n -= 4;
    put_i32(&c, 0x7fffffff);
    put_f32(&c, 1.0f);
    expect_bad(c.p, c.n, "only 4 bytes are left");
    free(b.p);
    free(c.p);
}

/* A GGUF imatrix: <name>.in_sum2 [n, n_mat] and <name>.counts [1, n_mat]. */
static int write_gguf_imatrix(const char *path, int with_meta, uint32_t counts_type, float count1) {
    anvil_gguf_writer *w = NULL;
    anvil_error err;
    if (anvil_gguf_writer_new(&w, NULL, &err) != ANVIL_OK) return -1;
    const char *ds[] = { "calib.txt", "more.txt" };
    int rc = ANVIL_OK;
    if (with_meta) {
        rc = anvil_gguf_writer_set_string_array(w, "imatrix.datasets", ds, 2, &err);
        if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "imatrix.chunk_count", 12, &err);
        if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(w, "imatrix.chunk_size", 512, &err);
    }
    const float sums[6] = { 2, 4, 6, 8, 10, 12 }; /* 3 values x 2 experts */
    const float counts[2] = { 2.0f, count1 };
    const uint16_t counts16[2] = { 0x4000, 0 };
    const uint64_t ne_s[2] = { 3, 2 }, ne_c[2] = { 1, 2 };
    if (rc == ANVIL_OK)
        rc = anvil_gguf_writer_add_tensor(w, "e.weight.in_sum2", ANVIL_TYPE_F32, 2, ne_s, sums, 24, &err);
    if (rc == ANVIL_OK) {
        rc = counts_type == ANVIL_TYPE_F32
                 ? anvil_gguf_writer_add_tensor(w, "e.weight.counts", ANVIL_TYPE_F32, 2, ne_c, counts, 8, &err)
                 : anvil_gguf_writer_add_tensor(w, "e.weight.counts", ANVIL_TYPE_F16, 2, ne_c, counts16, 4, &err);
    }
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_write_file(w, path, &err);
    anvil_gguf_writer_free(w);
    return rc;
}

static void test_imatrix_gguf(void) {
    char path[600];
    snprintf(path, sizeof path, "%s/im.gguf", test_tmpdir());
    CU_ASSERT_FATAL(write_gguf_imatrix(path, 1, ANVIL_TYPE_F32, 0.0f) == ANVIL_OK);
    anvil_imatrix *im = NULL;
    anvil_error err;
    CU_ASSERT_FATAL(anvil_imatrix_load(&im, path, &err) == ANVIL_OK);
    CU_ASSERT(!anvil_imatrix_is_legacy(im));
    CU_ASSERT_EQUAL(anvil_imatrix_chunk_count(im), 12);
    CU_ASSERT_EQUAL(anvil_imatrix_dataset_count(im), 2);
    const anvil_imatrix_entry *e = anvil_imatrix_find(im, "e.weight");
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_EQUAL_FATAL(e->n_values, 6);
    /* Expert 0: sums / 2; expert 1 never seen: weights 1. */
    CU_ASSERT(e->values[0] == 1.0f && e->values[2] == 3.0f && e->values[3] == 1.0f && e->values[5] == 1.0f);
    anvil_imatrix_free(im);
    /* Without the metadata keys llama-quantize refuses a GGUF imatrix. */
    CU_ASSERT_FATAL(write_gguf_imatrix(path, 0, ANVIL_TYPE_F32, 3.0f) == ANVIL_OK);
    CU_ASSERT(anvil_imatrix_load(&im, path, &err) == ANVIL_E_FORMAT);
    CU_ASSERT(strstr(err.message, "missing imatrix metadata") != NULL);
    CU_ASSERT_FATAL(write_gguf_imatrix(path, 1, ANVIL_TYPE_F16, 3.0f) == ANVIL_OK);
    CU_ASSERT(anvil_imatrix_load(&im, path, &err) == ANVIL_E_FORMAT);
    CU_ASSERT(strstr(err.message, "must be F32") != NULL);
    CU_ASSERT_FATAL(write_gguf_imatrix(path, 1, ANVIL_TYPE_F32, NAN) == ANVIL_OK);
    CU_ASSERT(anvil_imatrix_load(&im, path, &err) == ANVIL_E_FORMAT);
    CU_ASSERT(strstr(err.message, "not a token count") != NULL);
    CU_ASSERT(anvil_imatrix_load(&im, "/nonexistent/x.imatrix", &err) == ANVIL_E_IO);
    /* Every truncation and every byte flip of the header: no crash, and a
     * refusal or a matrix. */
    size_t n = 0;
    CU_ASSERT_FATAL(write_gguf_imatrix(path, 1, ANVIL_TYPE_F32, 3.0f) == ANVIL_OK);
    unsigned char *p = (unsigned char *)test_read_file(path, &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    for (size_t cut = 0; cut < n; ++cut) {
        if (anvil_imatrix_load_buffer(&im, p, cut, NULL) == ANVIL_OK) anvil_imatrix_free(im);
    }
    for (size_t at = 0; at < n && at < 512; ++at) {
        p[at] ^= 0x80;
        if (anvil_imatrix_load_buffer(&im, p, n, NULL) == ANVIL_OK) anvil_imatrix_free(im);
        p[at] ^= 0x80;
    }
    free(p);
}

/* ---- per-tensor types of every preset: llama.cpp's, from the golden ---------------- */

static int write_model(const char *path, const char *which) {
    synth_model m;
    memset(&m, 0, sizeof m);
    m.type = ANVIL_TYPE_F16;
    m.seed = 1;
    m.n_embd = 256;
    m.n_head = 4;
    m.n_vocab = 512; /* the parity model has 32000: the types depend on n_embd only */
    if (strcmp(which, "spm") == 0) {
        m.n_ff = 256;
        m.n_layer = 16;
        m.n_head_kv = 2;
        m.tied_embeddings = 1;
    } else {
        m.n_ff = 256;
        m.n_layer = 4;
        m.n_head_kv = 1;
        m.n_expert = 8;
        m.n_expert_used = 2;
    }
    anvil_error err;
    return synth_model_write(path, &m, NULL, &err);
}

static void test_golden_types(void) {
    size_t n = 0;
    char *text = test_read_file(test_source_path("golden/quantize/types.tsv"), &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    char spm[600], moe[600];
    snprintf(spm, sizeof spm, "%s/spm.gguf", test_tmpdir());
    snprintf(moe, sizeof moe, "%s/moe.gguf", test_tmpdir());
    CU_ASSERT_FATAL(write_model(spm, "spm") == ANVIL_OK && write_model(moe, "moe") == ANVIL_OK);
    anvil_gguf *gs = NULL, *gm = NULL;
    CU_ASSERT_FATAL(anvil_gguf_open(&gs, spm, ctx(), 0, NULL) == ANVIL_OK);
    CU_ASSERT_FATAL(anvil_gguf_open(&gm, moe, ctx(), 0, NULL) == ANVIL_OK);
    size_t cases = 0, bad = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#') continue;
        char model[16], preset[16];
        int pure = 0, off = 0;
        if (sscanf(line, "%15s %15s %d %n", model, preset, &pure, &off) != 3) continue;
        const char *want = line + off;
        const anvil_quantize_preset *p = anvil_quantize_preset_find(preset);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        anvil_quantize_options o;
        anvil_quantize_options_init(&o);
        o.ftype = p->ftype;
        o.only_copy = strcmp(preset, "COPY") == 0;
        o.pure = pure;
        o.dry_run = 1;
        anvil_transcode *t = NULL;
        anvil_error err;
        const int rc =
            anvil_quantize_plan(&t, ctx(), strcmp(model, "spm") == 0 ? gs : gm, "/dev/null/unused.gguf", &o, &err);
        char got[8192] = "";
        size_t at = 0;
        for (size_t i = 0; rc == ANVIL_OK && i < anvil_transcode_count(t); ++i) {
            anvil_type_info ti;
            anvil_type_builtin(anvil_transcode_tensor_at(t, i)->dst_type, &ti, NULL);
            at += (size_t)snprintf(got + at, sizeof got - at, "%s%s", i ? "," : "", ti.name);
        }
        cases++;
        if (rc != ANVIL_OK || strcmp(got, want) != 0) {
            bad++;
            fprintf(stderr, "\n  %s %s%s: %s\n    llama.cpp: %s\n    anvil:     %s", model, preset,
                    pure ? " --pure" : "", rc == ANVIL_OK ? "types differ" : err.message, want, got);
        }
        anvil_transcode_free(t);
    }
    anvil_gguf_close(gs);
    anvil_gguf_close(gm);
    free(text);
    CU_ASSERT(cases >= 100);
    CU_ASSERT_EQUAL(bad, 0);
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("quantize", NULL, NULL);
    CU_add_test(s, "presets by name and number", test_presets);
    CU_add_test(s, "--override-kv strings", test_kv_override);
    CU_add_test(s, "--tensor-type and --tensor-type-file", test_tensor_type);
    CU_add_test(s, "legacy .dat importance matrix", test_imatrix_legacy);
    CU_add_test(s, "legacy .dat: hostile files", test_imatrix_hostile_legacy);
    CU_add_test(s, "GGUF importance matrix, good and hostile", test_imatrix_gguf);
    CU_add_test(s, "every preset's tensor types = llama.cpp's (golden)", test_golden_types);
    const int rc = test_run_cunit();
    anvil_ctx_close(g_ctx);
    test_tmpdir_cleanup();
    return rc;
}
