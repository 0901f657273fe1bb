/* SPDX-License-Identifier: MIT */
/* The streaming engine: thread-count invariance, exact sizes, split output
 * and input, atomicity, the quality figures, the rewrite hook. */
#include <CUnit/CUnit.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tc_test.h"
#include "test_env.h"

static const char *synth_path(void) {
    static int written;
    const char *p = tc_path("synth-f16.gguf");
    if (!written) {
        CU_ASSERT_FATAL(tc_write_synth(p, ANVIL_TYPE_F16, 5) == ANVIL_OK);
        written = 1;
    }
    return p;
}

static int same_file(const char *a, const char *b) {
    size_t na = 0, nb = 0;
    unsigned char *x = tc_read(a, &na), *y = tc_read(b, &nb);
    const int same = x != NULL && y != NULL && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

static uint64_t file_size(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static void test_threads_invariant(void) {
    const unsigned threads[] = { 1, 2, 3, 5 };
    const uint32_t types[] = { ANVIL_TYPE_Q4_K, ANVIL_TYPE_IQ4_NL };
    for (size_t ty = 0; ty < 2; ++ty) {
        tc_result first;
        memset(&first, 0, sizeof first);
        char ref[64];
        snprintf(ref, sizeof ref, "threads-%zu-1.gguf", ty);
        for (size_t k = 0; k < 4; ++k) {
            anvil_transcode_options o;
            anvil_transcode_options_init(&o);
            o.dtype = types[ty];
            o.threads = threads[k];
            char name[64];
            snprintf(name, sizeof name, "threads-%zu-%u.gguf", ty, threads[k]);
            tc_result r = tc_transcode(synth_path(), tc_path(name), &o, 0);
            CU_ASSERT_EQUAL_FATAL(r.rc, ANVIL_OK);
            anvil_transcode_summary s;
            anvil_transcode_get_summary(r.t, &s);
            CU_ASSERT_EQUAL(s.threads, threads[k]);
            if (k == 0) {
                first = r;
                continue;
            }
            CU_ASSERT(same_file(tc_path(ref), tc_path(name)));
            for (size_t i = 0; i < anvil_transcode_count(r.t); ++i) {
                const anvil_transcode_tensor *a = anvil_transcode_tensor_at(first.t, i);
                const anvil_transcode_tensor *b = anvil_transcode_tensor_at(r.t, i);
                CU_ASSERT_EQUAL(a->has_quality, b->has_quality);
                CU_ASSERT(memcmp(&a->sum_sq_err, &b->sum_sq_err, sizeof(double)) == 0);
                CU_ASSERT(memcmp(&a->max_abs, &b->max_abs, sizeof(double)) == 0);
            }
            tc_result_free(&r);
        }
        tc_result_free(&first);
    }
}

typedef struct progress_log {
    size_t calls;
    uint64_t last, total;
    int monotonic;
} progress_log;

static void on_progress(void *arg, const anvil_transcode_progress *p) {
    progress_log *l = arg;
    if (p->bytes_done < l->last || p->tensor >= p->n_tensors) l->monotonic = 0;
    l->last = p->bytes_done;
    l->total = p->bytes_total;
    l->calls++;
}

static void test_sizes_and_progress(void) {
    anvil_transcode_options o;
    anvil_transcode_options_init(&o);
    o.dtype = ANVIL_TYPE_Q5_K;
    progress_log log = { 0, 0, 0, 1 };
    o.progress = on_progress;
    o.progress_arg = &log;
    /* The dry run's size is the file's size. */
    tc_result dry = tc_transcode(synth_path(), tc_path("sizes.gguf"), &o, 1);
    CU_ASSERT_EQUAL_FATAL(dry.rc, ANVIL_OK);
    anvil_transcode_summary ds;
    anvil_transcode_get_summary(dry.t, &ds);
    CU_ASSERT_EQUAL(ds.ran, 0);
    CU_ASSERT_EQUAL(file_size(tc_path("sizes.gguf")), 0); /* nothing written */
    CU_ASSERT_EQUAL(log.calls, 0);
    tc_result r = tc_transcode(synth_path(), tc_path("sizes.gguf"), &o, 0);
    CU_ASSERT_EQUAL_FATAL(r.rc, ANVIL_OK);
    anvil_transcode_summary s;
    anvil_transcode_get_summary(r.t, &s);
    CU_ASSERT_EQUAL(file_size(tc_path("sizes.gguf")), ds.out_file_bytes);
    CU_ASSERT_EQUAL(s.out_file_bytes, ds.out_file_bytes);
    CU_ASSERT(s.ran && s.seconds > 0 && s.mb_per_s > 0 && s.peak_rss_bytes > 0);
    CU_ASSERT(log.calls >= anvil_transcode_count(r.t) && log.monotonic);
    CU_ASSERT(log.last == log.total && log.total == s.src_tensor_bytes);
    uint64_t dst = 0;
    for (size_t i = 0; i < anvil_transcode_count(r.t); ++i) dst += anvil_transcode_tensor_at(r.t, i)->dst_bytes;
    CU_ASSERT_EQUAL(dst, s.dst_tensor_bytes);
    tc_result_free(&dry);
    tc_result_free(&r);
    /* A plan runs once. */
    r = tc_transcode(synth_path(), tc_path("sizes2.gguf"), &o, 0);
    CU_ASSERT_EQUAL(anvil_transcode_run(r.t, &r.err), ANVIL_E_STATE);
    tc_result_free(&r);
}

static void test_split_output(void) {
    anvil_transcode_options o;
    anvil_transcode_options_init(&o);
    o.dtype = ANVIL_TYPE_Q8_0;
    tc_result one = tc_transcode(synth_path(), tc_path("whole.gguf"), &o, 0);
    CU_ASSERT_EQUAL_FATAL(one.rc, ANVIL_OK);
    o.split_max_bytes = 300000;
    tc_result r = tc_transcode(synth_path(), tc_path("parts.gguf"), &o, 0);
    CU_ASSERT_EQUAL_FATAL(r.rc, ANVIL_OK);
    anvil_transcode_summary s;
    anvil_transcode_get_summary(r.t, &s);
    CU_ASSERT_FATAL(s.n_parts > 1);
    uint64_t total = 0;
    char want[4200];
    for (uint32_t p = 0; p < s.n_parts; ++p) {
        snprintf(want, sizeof want, "%s-%05u-of-%05u.gguf", tc_path("parts"), p + 1, s.n_parts);
        CU_ASSERT_STRING_EQUAL(anvil_transcode_part_path(r.t, p), want);
        total += file_size(want);
    }
    CU_ASSERT_EQUAL(total, s.out_file_bytes);
    CU_ASSERT_EQUAL(file_size(tc_path("parts.gguf")), 0);
    /* Read back as one set: the same tensors as the single file. */
    anvil_gguf *a = NULL, *b = NULL;
    CU_ASSERT_FATAL(anvil_gguf_open(&a, tc_path("whole.gguf"), tc_ctx(), 0, NULL) == ANVIL_OK);
    CU_ASSERT_FATAL(anvil_gguf_open(&b, anvil_transcode_part_path(r.t, 0), tc_ctx(), 0, NULL) == ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_part_count(b), s.n_parts);
    CU_ASSERT_EQUAL_FATAL(anvil_gguf_tensor_count(a), anvil_gguf_tensor_count(b));
    for (size_t i = 0; i < anvil_gguf_tensor_count(a); ++i) {
        const anvil_gguf_tensor *x = anvil_gguf_tensor_at(a, i), *y = anvil_gguf_tensor_at(b, i);
        CU_ASSERT_STRING_EQUAL(x->name, y->name);
        CU_ASSERT(x->type == y->type && x->n_bytes == y->n_bytes &&
                  memcmp(x->data, y->data, (size_t)x->n_bytes) == 0);
    }
    int64_t v = 0;
    CU_ASSERT(anvil_gguf_get_i64(b, "split.count", &v, NULL) == ANVIL_OK && v == (int64_t)s.n_parts);
    CU_ASSERT(anvil_gguf_get_i64(b, "split.tensors.count", &v, NULL) == ANVIL_OK &&
              v == (int64_t)anvil_gguf_tensor_count(a));
    CU_ASSERT(anvil_gguf_get_i64(b, "general.file_type", &v, NULL) == ANVIL_OK && v == 7);
    anvil_gguf_close(a);
    anvil_gguf_close(b);
    tc_result_free(&r);
    tc_result_free(&one);
}

/* A split input (llama.cpp's layout) transcodes to the same bytes as the
 * merged one: split keys are the input's, not copied. */
static void test_split_input(void) {
    anvil_gguf *src = NULL;
    anvil_error err;
    CU_ASSERT_FATAL(anvil_gguf_open(&src, synth_path(), tc_ctx(), 0, &err) == ANVIL_OK);
    uint32_t parts = 0;
    CU_ASSERT_FATAL(anvil_gguf_split_write(src, tc_path("in-split"), 400000, 0, tc_ctx(), &parts, &err) == ANVIL_OK);
    CU_ASSERT_FATAL(parts > 1);
    anvil_gguf_close(src);
    char first[4200];
    snprintf(first, sizeof first, "%s-00001-of-%05u.gguf", tc_path("in-split"), parts);
    anvil_transcode_options o;
    anvil_transcode_options_init(&o);
    o.dtype = ANVIL_TYPE_Q4_0;
    tc_result a = tc_transcode(synth_path(), tc_path("from-whole.gguf"), &o, 0);
    tc_result b = tc_transcode(first, tc_path("from-split.gguf"), &o, 0);
    CU_ASSERT_EQUAL_FATAL(a.rc, ANVIL_OK);
    CU_ASSERT_EQUAL_FATAL(b.rc, ANVIL_OK);
    CU_ASSERT_EQUAL(anvil_gguf_part_count(b.src), parts);
    CU_ASSERT(same_file(tc_path("from-whole.gguf"), tc_path("from-split.gguf")));
    tc_result_free(&a);
    tc_result_free(&b);
}

static int dir_has_prefix(const char *prefix) {
    DIR *d = opendir(test_tmpdir());
    int found = 0;
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) found |= strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d) closedir(d);
    return found;
}

static void test_atomic(void) {
    const tc_spec bad[] = {
        { "a.weight", ANVIL_TYPE_F16, 2, { 256, 8 }, 1, -1 },
        { "b.weight", ANVIL_TYPE_F16, 2, { 256, 64 }, 2, 256 * 37 + 5 }, /* NaN at row 37, column 5 */
        { "c.weight", ANVIL_TYPE_F16, 2, { 256, 8 }, 3, -1 },
    };
    CU_ASSERT_FATAL(tc_write_model(tc_path("nan.gguf"), bad, 3) == ANVIL_OK);
    FILE *f = fopen(tc_path("keep-old.gguf"), "wb");
    fputs("OLD", f);
    fclose(f);
    anvil_transcode_options o;
    anvil_transcode_options_init(&o);
    o.dtype = ANVIL_TYPE_Q4_K;
    o.threads = 3;
    tc_result r = tc_transcode(tc_path("nan.gguf"), tc_path("keep-old.gguf"), &o, 0);
    CU_ASSERT_EQUAL(r.rc, ANVIL_E_NONFINITE);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err.message, "tensor 'b.weight' holds NaN at row 37, column 5"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err.message, "--tensor-type '^b.weight$=f16'"));
    size_t n = 0;
    unsigned char *old = tc_read(tc_path("keep-old.gguf"), &n);
    CU_ASSERT(old != NULL && n == 3 && memcmp(old, "OLD", 3) == 0);
    free(old);
    CU_ASSERT_FALSE(dir_has_prefix("keep-old.gguf.")); /* no temp file left */
    tc_result_free(&r);
    /* A split set: no part is left behind. */
    o.split_max_bytes = 40000;
    r = tc_transcode(tc_path("nan.gguf"), tc_path("nan-parts.gguf"), &o, 0);
    CU_ASSERT_EQUAL(r.rc, ANVIL_E_NONFINITE);
    CU_ASSERT_FALSE(dir_has_prefix("nan-parts"));
    tc_result_free(&r);
    /* Keeping the bad tensor as it is, as the message says, works. */
    o.split_max_bytes = 0;
    const anvil_transcode_rule keep[] = { { "^b.weight$", ANVIL_TYPE_F16 } };
    o.rules = keep;
    o.n_rules = 1;
    r = tc_transcode(tc_path("nan.gguf"), tc_path("keep-old.gguf"), &o, 0);
    CU_ASSERT_EQUAL(r.rc, ANVIL_OK);
    CU_ASSERT_EQUAL(tc_find(r.t, "b.weight")->why, ANVIL_TRANSCODE_KEEP_SAME);
    tc_result_free(&r);
}

static void test_quality(void) {
    anvil_transcode_options o;
    anvil_transcode_options_init(&o);
    o.dtype = ANVIL_TYPE_Q3_K;
    tc_result r = tc_transcode(synth_path(), tc_path("quality.gguf"), &o, 0);
    CU_ASSERT_EQUAL_FATAL(r.rc, ANVIL_OK);
    const anvil_transcode_tensor *it = tc_find(r.t, "blk.1.ffn_down.weight");
    CU_ASSERT_FATAL(it != NULL && it->has_quality);
    const size_t n = (size_t)it->src->n_elements;
    float *x = tc_decode(it->src), *y = malloc(n * sizeof *y);
    unsigned char *q = malloc((size_t)it->dst_bytes);
    CU_ASSERT_FATAL(anvil_encode(tc_ctx(), ANVIL_TYPE_Q3_K, x, n, q, (size_t)it->dst_bytes, NULL) == ANVIL_OK);
    CU_ASSERT_FATAL(anvil_decode(tc_ctx(), ANVIL_TYPE_Q3_K, q, (size_t)it->dst_bytes, y, n, NULL) == ANVIL_OK);
    double se = 0, sig = 0, mx = 0;
    for (size_t i = 0; i < n; ++i) {
        const double e = (double)x[i] - y[i];
        se += e * e;
        sig += (double)x[i] * x[i];
        mx = fmax(mx, fabsf(x[i] - y[i]));
    }
    /* float lanes flushed to double: sums to 4e-6 relative (float_rows.h) */
    CU_ASSERT_DOUBLE_EQUAL(it->rmse, sqrt(se / n), 2e-6 * sqrt(se / n));
    CU_ASSERT_EQUAL(it->max_abs, mx);
    CU_ASSERT_DOUBLE_EQUAL(it->snr_db, 10 * log10(sig / se), 4e-5);
    CU_ASSERT(it->snr_db > 10 && it->snr_db < 40);
    /* The by-type summary covers every q3_K tensor. */
    CU_ASSERT_EQUAL_FATAL(anvil_transcode_quality_count(r.t), 1);
    anvil_transcode_quality qs;
    CU_ASSERT(anvil_transcode_quality_at(r.t, 0, &qs) == ANVIL_OK);
    size_t count = 0;
    for (size_t i = 0; i < anvil_transcode_count(r.t); ++i) count += anvil_transcode_tensor_at(r.t, i)->has_quality;
    CU_ASSERT(qs.type == ANVIL_TYPE_Q3_K && qs.n_tensors == count && qs.max_abs >= mx);
    free(x);
    free(y);
    free(q);
    tc_result_free(&r);
    /* Without quality, no figures. */
    o.skip_quality = 1;
    r = tc_transcode(synth_path(), tc_path("quality2.gguf"), &o, 0);
    CU_ASSERT_EQUAL_FATAL(r.rc, ANVIL_OK);
    CU_ASSERT_FALSE(tc_find(r.t, "blk.1.ffn_down.weight")->has_quality);
    CU_ASSERT_EQUAL(anvil_transcode_quality_count(r.t), 0);
    CU_ASSERT(same_file(tc_path("quality.gguf"), tc_path("quality2.gguf")));
    tc_result_free(&r);
}

/* The hook: +1 on two tensors, one converted and one kept in its type. */
static int plus_wants(void *arg, const anvil_gguf_tensor *t) {
    (void)arg;
    return strcmp(t->name, "blk.0.attn_q.weight") == 0 || strcmp(t->name, "blk.0.attn_norm.weight") == 0;
}
static int plus_rows(void *arg, const anvil_gguf_tensor *t, uint64_t row0, uint64_t n_rows, float *rows,
                     anvil_error *err) {
    (void)arg;
    (void)row0;
    (void)err;
    for (uint64_t i = 0; i < n_rows * t->ne[0]; ++i) rows[i] += 1.0f;
    return ANVIL_OK;
}

/* anvil_transcode_quality_as is the run's own pass: in the run's type it
 * gives the run's figures bit for bit, for any thread count; in another type
 * it compares every converted tensor and names why it skips the others. */
static void test_quality_as(void) {
    const unsigned threads[] = { 1, 3 };
    double first_q6[64];
    for (size_t k = 0; k < 2; ++k) {
        anvil_transcode_options o;
        anvil_transcode_options_init(&o);
        o.dtype = ANVIL_TYPE_Q4_K;
        o.threads = threads[k];
        tc_result dry = tc_transcode(synth_path(), tc_path("quality-as.gguf"), &o, 1);
        CU_ASSERT_EQUAL_FATAL(dry.rc, ANVIL_OK);
        anvil_transcode_alt_quality q[64];
        anvil_error err;
        CU_ASSERT_EQUAL(anvil_transcode_quality_as(dry.t, ANVIL_TYPE_Q4_K, q, &err), ANVIL_E_STATE);
        tc_result_free(&dry);
        tc_result r = tc_transcode(synth_path(), tc_path("quality-as.gguf"), &o, 0);
        CU_ASSERT_EQUAL_FATAL(r.rc, ANVIL_OK);
        const size_t n = anvil_transcode_count(r.t);
        CU_ASSERT_FATAL(n <= 64);
        CU_ASSERT_EQUAL_FATAL(anvil_transcode_quality_as(r.t, ANVIL_TYPE_Q4_K, q, &err), ANVIL_OK);
        size_t converted = 0;
        for (size_t i = 0; i < n; ++i) {
            const anvil_transcode_tensor *it = anvil_transcode_tensor_at(r.t, i);
            if (!it->has_quality) {
                CU_ASSERT(q[i].why != NULL && strcmp(q[i].why, "not converted") == 0);
                CU_ASSERT(isnan(q[i].sum_sq_err));
                continue;
            }
            converted++;
            CU_ASSERT_PTR_NULL(q[i].why);
            CU_ASSERT(memcmp(&q[i].sum_sq_err, &it->sum_sq_err, sizeof(double)) == 0);
            CU_ASSERT(memcmp(&q[i].sum_sq_signal, &it->sum_sq_signal, sizeof(double)) == 0);
            CU_ASSERT(memcmp(&q[i].max_abs, &it->max_abs, sizeof(double)) == 0);
        }
        CU_ASSERT(converted > 0);
        /* Q6_K: more bits, less error, the same for any thread count. */
        CU_ASSERT_EQUAL_FATAL(anvil_transcode_quality_as(r.t, ANVIL_TYPE_Q6_K, q, &err), ANVIL_OK);
        for (size_t i = 0; i < n; ++i) {
            const anvil_transcode_tensor *it = anvil_transcode_tensor_at(r.t, i);
            if (!it->has_quality) continue;
            CU_ASSERT(q[i].sum_sq_err < it->sum_sq_err);
            CU_ASSERT(q[i].snr_db > it->snr_db);
            if (k == 0) first_q6[i] = q[i].sum_sq_err;
            else CU_ASSERT(memcmp(&first_q6[i], &q[i].sum_sq_err, sizeof(double)) == 0);
        }
        tc_result_free(&r);
    }
}

static void test_hook(void) {
    anvil_transcode_options o;
    anvil_transcode_options_init(&o);
    o.dtype = ANVIL_TYPE_Q8_0;
    o.hook.wants = plus_wants;
    o.hook.rows = plus_rows;
    tc_result r = tc_transcode(synth_path(), tc_path("hook.gguf"), &o, 0);
    CU_ASSERT_EQUAL_FATAL(r.rc, ANVIL_OK);
    const anvil_transcode_tensor *q = tc_find(r.t, "blk.0.attn_q.weight"),
                                 *nm = tc_find(r.t, "blk.0.attn_norm.weight");
    CU_ASSERT(q->rewritten && q->why == ANVIL_TRANSCODE_CONVERT);
    CU_ASSERT(nm->rewritten && nm->why == ANVIL_TRANSCODE_KEEP_POLICY && nm->dst_type == ANVIL_TYPE_F32);
    CU_ASSERT_FALSE(tc_find(r.t, "blk.0.attn_k.weight")->rewritten);
    anvil_gguf *g = NULL;
    CU_ASSERT_FATAL(anvil_gguf_open(&g, tc_path("hook.gguf"), tc_ctx(), 0, NULL) == ANVIL_OK);
    const anvil_transcode_tensor *its[2] = { q, nm };
    for (int k = 0; k < 2; ++k) {
        const size_t n = (size_t)its[k]->src->n_elements;
        float *x = tc_decode(its[k]->src);
        for (size_t i = 0; i < n; ++i) x[i] += 1.0f;
        unsigned char *want = malloc((size_t)its[k]->dst_bytes);
        CU_ASSERT(anvil_encode(tc_ctx(), its[k]->dst_type, x, n, want, (size_t)its[k]->dst_bytes, NULL) == ANVIL_OK);
        const anvil_gguf_tensor *ot = anvil_gguf_find_tensor(g, its[k]->name);
        CU_ASSERT(ot != NULL && memcmp(ot->data, want, (size_t)its[k]->dst_bytes) == 0);
        free(want);
        free(x);
    }
    anvil_gguf_close(g);
    tc_result_free(&r);
}

void tc_add_stream_tests(void) {
    CU_pSuite s = CU_add_suite("transcode streaming", NULL, NULL);
    CU_add_test(s, "output and quality identical for 1, 2, 3, 5 threads", test_threads_invariant);
    CU_add_test(s, "dry-run size is the file size; progress", test_sizes_and_progress);
    CU_add_test(s, "split output reads back as the single file", test_split_output);
    CU_add_test(s, "split input gives the same bytes", test_split_input);
    CU_add_test(s, "atomic: a failure leaves the old file, no temp", test_atomic);
    CU_add_test(s, "quality figures equal a direct computation", test_quality);
    CU_add_test(s, "rewrite hook", test_hook);
    CU_add_test(s, "quality_as: the run's pass in another type", test_quality_as);
}
