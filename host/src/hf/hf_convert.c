/* SPDX-License-Identifier: MIT */
/*
 * hf_convert: `anvil convert`, convert_hf_to_gguf.py's output from a Hugging
 * Face folder (anvil/hf.h). The steps are convert's: pick the output type
 * (auto: the first matrix's dtype), plan the tensors (hf_tensors.c) and
 * their types (which stay F32, --fp8-as-q8's forced Q8_0, q8_0's F16
 * fallback), the KVs in its order
 * (general.architecture, general.type, general.* metadata, hparams,
 * general.quantization_version, tokenizer), the parts of a split by its
 * rule, the file name; then each tensor is read, permuted, checked for
 * NaN/Inf and encoded while the files stream out (one tensor in memory at a
 * time) under temp names that become the outputs together at the end.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "anvil/hf.h"
#include "anvil/numeric.h"
#include "error.h"
#include "gguf_source.h"
#include "gguf_writer_internal.h"
#include "hf_checks.h"
#include "hf_internal.h"
#include "hf_phi3.h"
#include "hf_vocab_glue.h"

void anvil_hf_convert_options_init(anvil_hf_convert_options *o) {
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
}

int anvil_hf_part_path(char *buf, size_t cap, const char *path, uint32_t i, uint32_t n) {
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    /* Path.stem: the name without its last suffix (a leading dot is no suffix) */
    const size_t stem = (dot != NULL && dot != base) ? (size_t)(dot - path) : strlen(path);
    const int w = snprintf(buf, cap, "%.*s-%05u-of-%05u.gguf", (int)stem, path, i + 1, n);
    return w >= 0 && (size_t)w < cap ? ANVIL_OK : ANVIL_E_INVALID_ARG;
}

typedef struct ftype_info {
    const char *opt, *name;
    uint32_t ftype, type;
} ftype_info;
static const ftype_info k_ftypes[] = {
    { "f32", "F32", 0, ANVIL_TYPE_F32 },
    { "f16", "F16", 1, ANVIL_TYPE_F16 },
    { "bf16", "BF16", 32, ANVIL_TYPE_BF16 },
    { "q8_0", "Q8_0", 7, ANVIL_TYPE_Q8_0 },
};

/* --outtype auto: the first tensor of 2+ dims that is bf16 or f16 decides. */
static const ftype_info *guess_ftype(const hf_folder *f) {
    for (size_t i = 0; i < f->n_tensors; ++i) {
        const anvil_st_tensor *t = f->tensors[i].st;
        if (t->rank < 2) continue;
        if (t->dtype == ANVIL_ST_BF16) return &k_ftypes[2];
        if (t->dtype == ANVIL_ST_F16) return &k_ftypes[1];
    }
    return &k_ftypes[1];
}

static int pick_ftype(const char *opt, const hf_folder *f, const ftype_info **out, anvil_error *err) {
    if (opt == NULL || strcmp(opt, "auto") == 0) {
        *out = guess_ftype(f);
        return ANVIL_OK;
    }
    for (size_t i = 0; i < sizeof k_ftypes / sizeof k_ftypes[0]; ++i) {
        if (strcmp(opt, k_ftypes[i].opt) == 0) {
            *out = &k_ftypes[i];
            return ANVIL_OK;
        }
    }
    return anvil__error_set(err, ANVIL_E_INVALID_ARG, "unknown output type '%s': f32, f16, bf16, q8_0 or auto", opt);
}

/* --fp8-as-q8, read only where the caller's struct holds it. */
static int fp8_as_q8(const anvil_hf_convert_options *o) {
    return o->struct_size >= offsetof(anvil_hf_convert_options, fp8_as_q8) + sizeof o->fp8_as_q8 && o->fp8_as_q8;
}

/* tensor_force_quant's --fp8-as-q8 rule: the source tensor current when
 * convert yields t was dequantized from FP8 (it had a *_scale_inv). */
static int yields_fp8(const hf_folder *f, const hf_out_tensor *t) {
    const int s = t->src >= 0 ? t->src : t->pieces != NULL ? t->yield_src : -1;
    return s >= 0 && (size_t)s < f->n_tensors && f->tensors[s].scale != NULL;
}

/* prepare_tensors' type rule for these architectures, in its order: a
 * forced Q8_0 (--fp8-as-q8), then F32 for 1-D tensors and norms, then, for
 * the others only, F32 for the routers (FFN_GATE_INP, FFN_GATE_INP_SHEXP),
 * SSM_CONV1D and names not ending in .weight, then the outtype; Q8_0 falls
 * back to F16 where rows do not divide into blocks of 32. */
static void plan_types(const hf_folder *f, hf_out_tensor *ts, size_t n, const ftype_info *ft, int q8_fp8) {
    for (size_t i = 0; i < n; ++i) {
        hf_out_tensor *t = &ts[i];
        if (t->mxfp4) continue; /* gpt-oss's repacked experts: MXFP4 whatever the outtype */
        const int forced = q8_fp8 && t->n_dims >= 2 && yields_fp8(f, t);
        if (t->n_dims <= 1 || hf_ends_with(t->name, "_norm.weight")) {
            t->type = ANVIL_TYPE_F32;
        } else if (!forced && (!hf_ends_with(t->name, ".weight") || hf_ends_with(t->name, ".ffn_gate_inp.weight") ||
                               hf_ends_with(t->name, ".ffn_gate_inp_shexp.weight") ||
                               hf_ends_with(t->name, ".ssm_conv1d.weight"))) {
            t->type = ANVIL_TYPE_F32;
        } else {
            t->type = forced ? ANVIL_TYPE_Q8_0 : ft->type;
            if (t->type == ANVIL_TYPE_Q8_0 && t->ne[0] % 32 != 0) t->type = ANVIL_TYPE_F16; /* QuantError fallback */
        }
    }
}

/* 1 when some tensor is written Q8_0. */
static int any_q8_0(const hf_out_tensor *ts, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (ts[i].type == ANVIL_TYPE_Q8_0) return 1;
    return 0;
}

static uint64_t tensor_bytes(const hf_out_tensor *t) {
    switch (t->type) {
    case ANVIL_TYPE_F32: return t->n_elements * 4;
    case ANVIL_TYPE_Q8_0: return t->n_elements / 32 * 34;
    case ANVIL_TYPE_MXFP4: return t->n_elements / 32 * 17;
    default: return t->n_elements * 2;
    }
}

typedef struct run {
    anvil_ctx *ctx;
    const anvil_hf_convert_options *o;
    hf_folder f;
    const hf_arch *arch;
    const ftype_info *ft;
    hf_out_tensor *ts;
    size_t n_ts;
    uint32_t *part_of; /* part of each tensor */
    uint32_t n_parts;
    anvil_gguf_writer *kv; /* the KVs of part 1 (no tensors) */
    hf_meta *meta;
    char out_path[4096];
    int has_tokenizer;
    int as_source; /* anvil_hf_open_as_gguf: no output, so no output name */
} run;

/* GGUFWriter.add_tensor_info's split rule. */
static int plan_parts(run *r, anvil_error *err) {
    r->part_of = calloc(r->n_ts + 1, sizeof *r->part_of);
    if (r->part_of == NULL) return anvil__nomem(err);
    uint32_t part = r->o->no_tensor_first_split ? 1 : 0;
    uint64_t count = 0, bytes = 0;
    for (size_t i = 0; i < r->n_ts; ++i) {
        const uint64_t b = tensor_bytes(&r->ts[i]);
        if (count > 0 && ((r->o->split_max_tensors != 0 && count >= r->o->split_max_tensors) ||
                          (r->o->split_max_size != 0 && bytes + b > r->o->split_max_size))) {
            ++part;
            count = 0;
            bytes = 0;
        }
        r->part_of[i] = part;
        count++;
        bytes += b;
    }
    r->n_parts = part + 1;
    if (r->n_parts > 99999) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "the split would make %u parts (at most 99999)",
                                r->n_parts);
    }
    return ANVIL_OK;
}

static int64_t total_params(const run *r) {
    int64_t n = 0;
    for (size_t i = 0; i < r->n_ts; ++i) n += (int64_t)r->ts[i].n_elements;
    return n;
}

/* GGUFWriter.get_total_parameter_count: shared params plus one expert's
 * share of each *_exps tensor, and the mean expert count of those. */
static void moe_params(const run *r, hf_meta_opts *mo) {
    int64_t shared = 0, expert = 0;
    uint64_t sum = 0, n = 0;
    for (size_t i = 0; i < r->n_ts; ++i) {
        const hf_out_tensor *t = &r->ts[i];
        if (strstr(t->name, "_exps.") != NULL && t->n_dims >= 3) {
            const uint64_t count = t->ne[strstr(t->name, ".bias") ? 1 : 2];
            expert += (int64_t)(t->n_elements / count);
            sum += count;
            n++;
        } else {
            shared += (int64_t)t->n_elements;
        }
    }
    mo->expert_count = n ? sum / n : 0;
    mo->moe_params = shared + expert;
}

/* The architecture's hparams KVs: the class's own file where it has one. */
/* prepare_metadata: an MXFP4 gpt-oss written as f32/f16/bf16 is
 * MOSTLY_MXFP4_MOE, in its file type and its file name (not for
 * --vocab-only, which never prepares the tensors). */
static int mxfp4_moe(const run *r) {
    return r->arch->id == HF_ARCH_GPTOSS && !r->o->vocab_only && hf_gptoss_is_mxfp4(&r->f) && r->ft->ftype != 7;
}

static const char *output_type(const run *r) { return mxfp4_moe(r) ? "MXFP4_MOE" : r->ft->name; }

static int hparams(const run *r, anvil_error *err) {
    const uint32_t ftype = mxfp4_moe(r) ? 38 : r->ft->ftype;
    if (hf_arch_is_gemma(r->arch)) return hf_gemma_hparams(r->arch, &r->f, ftype, r->kv, err);
    if (r->arch->id == HF_ARCH_DEEPSEEK2) return hf_deepseek_hparams(r->arch, &r->f, ftype, r->kv, err);
    if (r->arch->id == HF_ARCH_GLM4MOE) return hf_glm4moe_hparams(r->arch, &r->f, ftype, r->kv, err);
    if (r->arch->id == HF_ARCH_QWEN35 || r->arch->id == HF_ARCH_QWEN35MOE || r->arch->id == HF_ARCH_QWEN3NEXT)
        return hf_qwen35_hparams(r->arch, &r->f, ftype, r->kv, err);
    if (r->arch->id != HF_ARCH_PHI3) return hf_arch_hparams(r->arch, &r->f, ftype, r->kv, err);
    const int rc = hf_arch_refuse_unhandled(r->arch, &r->f, err);
    return rc == ANVIL_OK ? hf_phi3_hparams(&r->f, ftype, r->kv, err) : rc;
}

static int build_kvs(run *r, anvil_error *err) {
    int rc = anvil_gguf_writer_new(&r->kv, r->ctx, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_string(r->kv, "general.architecture", r->arch->gguf_name, err);
    /* Phi3MiniModel adds its longrope attn_factor while preparing the tensors, before any other KV */
    if (rc == ANVIL_OK && r->arch->id == HF_ARCH_PHI3 && !r->o->vocab_only) rc = hf_phi3_extra_kvs(&r->f, r->kv, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_string(r->kv, "general.type", "model", err);
    hf_meta_opts mo = { r->o->model_name, r->o->metadata_path, 0, 0 };
    moe_params(r, &mo);
    if (rc == ANVIL_OK) rc = hf_meta_load(&r->f, &mo, r->o->vocab_only ? 0 : total_params(r), &r->meta, err);
    if (rc == ANVIL_OK) rc = hf_meta_write(r->meta, r->kv, err);
    if (rc == ANVIL_OK) rc = hparams(r, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_u32(r->kv, "general.quantization_version", 2, err);
    /* the vocabulary as the class whose set_vocab convert runs: the Qwen
     * MoE classes take TextModel's (gpt2, never tokenizer.model) */
    hf_arch va = *r->arch;
    va.hf_name = r->arch->vocab_as;
    if (rc == ANVIL_OK && strcmp(va.hf_name, r->arch->hf_name) != 0 && !va.undo_permute &&
        hf_file_exists(r->f.dir, "tokenizer.model")) {
        rc = anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                              "%s/tokenizer.model: convert_hf_to_gguf.py reads %s's vocabulary from "
                              "tokenizer.json only (byte-level BPE); anvil convert does not guess which it "
                              "would use here: remove tokenizer.model, or use convert_hf_to_gguf.py",
                              r->f.dir, r->arch->hf_name);
    }
    if (rc == ANVIL_OK) rc = hf_vocab_glue_write(&r->f, &va, r->kv, &r->has_tokenizer, err);
    return rc;
}

static int is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int output_path(run *r, anvil_error *err) {
    char name[1024];
    const char *out = r->o->outfile;
    if (out == NULL || is_dir(out)) {
        int rc = r->f.mtp_mode == HF_MTP_ONLY
                     ? hf_meta_mtp_name(r->meta, output_type(r), name, sizeof name, err)
                     : hf_meta_default_name(r->meta, output_type(r), r->o->vocab_only, name, sizeof name, err);
        if (rc != ANVIL_OK) return rc;
        const char *dir = out ? out : r->f.dir;
        const size_t dl = strlen(dir);
        const int w =
            snprintf(r->out_path, sizeof r->out_path, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", name);
        return w >= 0 && (size_t)w < sizeof r->out_path
                   ? ANVIL_OK
                   : anvil__error_set(err, ANVIL_E_INVALID_ARG, "output path too long");
    }
    const char *slash = strrchr(out, '/');
    const size_t dl = slash ? (size_t)(slash - out + 1) : 0;
    int rc = hf_fill_template(out + dl, output_type(r), name, sizeof name, err);
    if (rc != ANVIL_OK) return rc;
    const int w = snprintf(r->out_path, sizeof r->out_path, "%.*s%s", (int)dl, out, name);
    return w >= 0 && (size_t)w < sizeof r->out_path
               ? ANVIL_OK
               : anvil__error_set(err, ANVIL_E_INVALID_ARG, "output path too long");
}

static void run_free(run *r) {
    hf_plan_free(r->ts, r->n_ts);
    free(r->part_of);
    anvil_gguf_writer_free(r->kv);
    hf_meta_free(r->meta);
    hf_folder_close(&r->f);
}

static int part_path(const run *r, uint32_t p, char *buf, size_t cap, anvil_error *err);

/* No output (each part of a split) replaces a file the run reads. */
static int check_outputs(const run *r, anvil_error *err) {
    int rc = ANVIL_OK;
    for (uint32_t p = 0; p < r->n_parts && rc == ANVIL_OK; ++p) {
        char path[4200];
        rc = part_path(r, p, path, sizeof path, err);
        if (rc == ANVIL_OK) rc = anvil_hf_output_check(r->f.dir, path, err);
        if (rc == ANVIL_OK) rc = anvil_output_check(path, &r->o->metadata_path, 1, err);
    }
    return rc;
}

static int prepare(run *r, const char *dir, anvil_error *err) {
    /* the architecture before the shards are indexed: a refusal is quick */
    int rc = hf_folder_open_config(dir, &r->f, err);
    char cfg[4200];
    snprintf(cfg, sizeof cfg, "%s/config.json", r->f.dir ? r->f.dir : dir);
    if (rc == ANVIL_OK) rc = hf_arch_find(r->f.config, cfg, &r->arch, err);
    if (rc == ANVIL_OK) rc = hf_mtp_mode(r->arch, &r->f, r->o->mtp_only, r->o->no_mtp, err);
    if (rc == ANVIL_OK) rc = hf_folder_index(&r->f, err);
    if (rc == ANVIL_OK) rc = hf_qwen35_filter(r->arch, &r->f, err);
    if (rc == ANVIL_OK) rc = hf_mtp_filter(r->arch, &r->f, err);
    if (rc == ANVIL_OK) rc = hf_check_vocab_size(&r->f, err);
    if (rc == ANVIL_OK) rc = hf_arch_refuse_variants(r->arch, &r->f, r->o->vocab_only, err);
    if (rc == ANVIL_OK) rc = pick_ftype(r->o->outtype, &r->f, &r->ft, err);
    if (rc == ANVIL_OK && !r->o->vocab_only) rc = hf_arch_plan(r->arch, &r->f, &r->ts, &r->n_ts, err);
    if (rc == ANVIL_OK && !r->o->vocab_only) rc = hf_check_plan(r->arch, &r->f, r->ts, r->n_ts, err);
    if (rc != ANVIL_OK) return rc;
    plan_types(&r->f, r->ts, r->n_ts, r->ft, fp8_as_q8(r->o));
    if (r->ctx == NULL && (r->ft->type == ANVIL_TYPE_Q8_0 || any_q8_0(r->ts, r->n_ts))) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "q8_0 output needs a context with the q8_0 codec");
    }
    rc = plan_parts(r, err);
    if (rc == ANVIL_OK) rc = build_kvs(r, err);
    /* anvil_hf_open_as_gguf writes nothing: no output name, nothing to check */
    if (rc == ANVIL_OK && !r->as_source) rc = output_path(r, err);
    if (rc == ANVIL_OK && !r->as_source) rc = check_outputs(r, err);
    return rc;
}

/* The source row of output row r: LlamaModel.permute's
 * reshape(heads, 2, rows/heads/2, ...).swapaxes(1, 2) for Q/K, else r. */
static uint64_t source_row(uint64_t r, uint64_t rows, int heads) {
    if (heads <= 0) return r;
    const uint64_t per = rows / (uint64_t)heads, half = per / 2;
    const uint64_t h = r / per, k = r % per, i = k / 2, j = k % 2;
    return h * per + j * half + i;
}

static int check_finite(const run *r, int src, const float *x, uint64_t n, uint64_t first, anvil_error *err) {
    for (uint64_t i = 0; i < n; ++i) {
        if (!isfinite(x[i])) {
            const hf_src_tensor *s = &r->f.tensors[src];
            return anvil__error_set(err, ANVIL_E_NONFINITE,
                                    "%s/%s: tensor \"%s\" holds %s at element %llu; "
                                    "the checkpoint is damaged (re-download it)",
                                    r->f.dir, r->f.part_names[s->part], s->name, isnan(x[i]) ? "NaN" : "Inf",
                                    (unsigned long long)(first + i));
        }
    }
    return ANVIL_OK;
}

static int encode(const run *r, const hf_out_tensor *t, const float *x, uint64_t n, void *dst, anvil_error *err) {
    switch (t->type) {
    case ANVIL_TYPE_F32: memcpy(dst, x, n * sizeof(float)); return ANVIL_OK;
    case ANVIL_TYPE_F16:
        for (uint64_t i = 0; i < n; ++i) ((uint16_t *)dst)[i] = anvil_fp32_to_fp16(x[i]);
        return ANVIL_OK;
    case ANVIL_TYPE_BF16:
        for (uint64_t i = 0; i < n; ++i) ((uint16_t *)dst)[i] = anvil_fp32_to_bf16(x[i]);
        return ANVIL_OK;
    default: return anvil_encode_rows(r->ctx, t->type, x, n / t->ne[0], t->ne[0], NULL, dst, n / 32 * 34, err);
    }
}

/* Drop bytes [off, off + n) of source tensor t's mapping from this process
 * once converted: the mapping is read-only and file-backed, so this only
 * frees memory (the page cache keeps the bytes; a page read again is
 * faulted back in). The kernel maps the pages around each faulting one
 * that are cached (fault-around, 64 KiB): RELEASE_MARGIN on each side,
 * within the part's data, drops those too, or each tensor would keep its
 * neighbours' edges and RSS would grow with the tensor count. RSS stays at
 * one window's sources, not the checkpoint. */
enum { RELEASE_MARGIN = 128u << 10 };

static void release_range(const run *r, const anvil_st_tensor *t, uint64_t off, uint64_t n) {
    if (t == NULL || t->data == NULL || n == 0) return;
    uintptr_t lo = 0, hi = 0; /* the data of t's part */
    const uintptr_t p = (uintptr_t)t->data;
    for (size_t i = 0; i < r->f.n_parts && hi == 0; ++i) {
        const anvil_st_tensor *first = anvil_st_tensor_at(r->f.parts[i], 0);
        if (first == NULL || first->data == NULL) continue;
        const uintptr_t b = (uintptr_t)first->data - (uintptr_t)first->begin;
        const uintptr_t e = b + (uintptr_t)anvil_st_data_size(r->f.parts[i]);
        if (p >= b && p < e) lo = b, hi = e;
    }
    if (hi == 0) return;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = p + (uintptr_t)off, z = p + (uintptr_t)(off + n);
    a = a - lo > RELEASE_MARGIN ? a - RELEASE_MARGIN : lo;
    z = hi - z > RELEASE_MARGIN ? z + RELEASE_MARGIN : hi;
    /* the pages holding [a, z): all within the file's mapping (parts are
     * mapped whole, from a page boundary: anvil_st_open) */
    a &= ~(page - 1);
    z = (z + page - 1) & ~(page - 1);
    if (z > a) (void)madvise((void *)a, z - a, MADV_DONTNEED);
}

static void release_source(const run *r, const anvil_st_tensor *t) {
    if (t != NULL) release_range(r, t, 0, t->size);
}

/* Elements [at, at + n) of source tensor s. */
static void release_elems(const run *r, const anvil_st_tensor *s, uint64_t at, uint64_t n) {
    if (s->n_elements == 0 || s->size % s->n_elements != 0) {
        release_source(r, s);
        return;
    }
    const uint64_t es = s->size / s->n_elements;
    release_range(r, s, at * es, n * es);
}

/* A tensor is made as tasks, each one contiguous run of its output bytes,
 * in order; the tasks run a window at a time (on the context's threads),
 * each window's bytes written out (or into the caller's whole-tensor
 * buffer) and its sources released before the next. Memory is bounded by
 * one window, whatever the tensor's size: WINDOW_BYTES of output (or one
 * task's, when larger: CHUNK_ELEMS values, one expert for gpt-oss's), each
 * running task's CHUNK_ELEMS f32 scratch, and the window's source pages. */
enum { CHUNK_ELEMS = 1 << 20 };   /* f32 values a task decodes at a time (4 MiB) */
enum { WINDOW_BYTES = 8u << 20 }; /* output bytes a window makes (at least; 2 tasks a thread) */

/* A composed or plain tensor's run: n elements of source src from
 * element off, making output elements from out on. */
typedef struct sub_piece {
    int src;
    uint64_t off, len, out;
} sub_piece;

typedef struct tjob tjob;
struct tjob {
    const run *r;
    const hf_out_tensor *t;
    size_t n_tasks;
    void (*task)(tjob *j, size_t k, uint8_t *dst, anvil_error *err, int *rc);
    uint64_t (*task_off)(const tjob *j, size_t k); /* task k's first byte; k == n_tasks: the size */
    void (*release)(const tjob *j, size_t k0, size_t k1);
    /* the window being run */
    size_t base;
    uint8_t *dst;
    uint64_t dst_off;
    int *rc;
    anvil_error *errs;
    /* the kinds' state */
    hf_reader rd;                  /* rows, strided */
    uint64_t per_chunk, row_bytes; /* rows: rows a task, output bytes a row */
    uint64_t first, end;           /* rows: the rows made; pieces: the output elements made */
    sub_piece *subs;               /* pieces */
};

/* Where a tensor's bytes go: the part's writer, through buf (cap bytes),
 * or (w NULL) `whole`, the caller's buffer for output rows [row0, row0 +
 * rows) of the tensor (all of them but for source_fill_rows). */
typedef struct tsink {
    anvil_gguf_writer *w;
    uint8_t *buf;
    uint64_t cap;
    uint8_t *whole;
    uint64_t row0, rows;
} tsink;

static void window_task(void *arg, size_t i) {
    tjob *j = arg;
    const size_t k = j->base + i;
    j->task(j, k, j->dst + (j->task_off(j, k) - j->dst_off), &j->errs[i], &j->rc[i]);
}

/* The largest number of bytes one window holds (the buffer run_windows
 * needs). */
static uint64_t window_cap(const run *r) {
    const unsigned th = r->ctx != NULL ? anvil_ctx_threads(r->ctx) : 1;
    const uint64_t w = (uint64_t)th * CHUNK_ELEMS * 4; /* two bf16 tasks a thread */
    return w > WINDOW_BYTES ? w : WINDOW_BYTES;
}

static int run_windows(tjob *j, tsink *s, anvil_error *err) {
    const run *r = j->r;
    const uint64_t cap = window_cap(r);
    j->rc = calloc(j->n_tasks + 1, sizeof *j->rc);
    j->errs = calloc(j->n_tasks + 1, sizeof *j->errs);
    int rc = j->rc == NULL || j->errs == NULL ? anvil__nomem(err) : ANVIL_OK;
    for (size_t k0 = 0; k0 < j->n_tasks && rc == ANVIL_OK;) {
        const uint64_t off0 = j->task_off(j, k0);
        size_t k1 = k0 + 1;
        while (k1 < j->n_tasks && j->task_off(j, k1 + 1) - off0 <= cap) ++k1;
        const uint64_t n = j->task_off(j, k1) - off0;
        if (s->whole != NULL) j->dst = s->whole + (off0 - j->task_off(j, 0));
        else {
            if (n > s->cap) { /* one task larger than a window (a gpt-oss expert) */
                free(s->buf);
                s->buf = malloc(n + 1);
                s->cap = s->buf != NULL ? n : 0;
                if (s->buf == NULL) {
                    rc = anvil__error_set(err, ANVIL_E_NOMEM, "tensor %s: out of memory (%llu bytes)", j->t->name,
                                          (unsigned long long)n);
                    break;
                }
            }
            j->dst = s->buf;
        }
        j->base = k0;
        j->dst_off = off0;
        if (r->ctx != NULL && k1 - k0 > 1) rc = anvil_ctx_run_tasks(r->ctx, k1 - k0, window_task, j);
        else
            for (size_t i = 0; i < k1 - k0; ++i) window_task(j, i);
        for (size_t i = 0; i < k1 - k0 && rc == ANVIL_OK; ++i) {
            if (j->rc[i] != ANVIL_OK) {
                *err = j->errs[i];
                rc = j->rc[i];
            }
        }
        if (rc == ANVIL_OK && s->w != NULL) rc = gguf_writer_stream_part(s->w, j->dst, n, err);
        if (j->release != NULL) j->release(j, k0, k1);
        k0 = k1;
    }
    /* an empty tensor is written as such */
    if (rc == ANVIL_OK && s->w != NULL && j->n_tasks == 0) rc = gguf_writer_stream_part(s->w, NULL, 0, err);
    free(j->rc);
    free(j->errs);
    return rc;
}

/* Gemma's norms: data_torch + shift as prepare_tensors hands it to
 * modify_tensors -- bf16 already widened to float32 (the sum in float32),
 * f16 still f16 (PyTorch adds in float32 and rounds the sum to f16). */
static void shift_values(float *a, uint64_t n, float shift, int dtype) {
    for (uint64_t i = 0; i < n; ++i) {
        const float v = a[i] + shift;
        a[i] = dtype == ANVIL_ST_F16 ? anvil_fp16_to_fp32(anvil_fp32_to_fp16(v)) : v;
    }
}

/* Qwen3.5's V-head order (_reorder_v_heads): output unit u = r * K + k
 * of the tiled order holds source unit k * R + r of the grouped one. */
static uint64_t vr_source(const hf_out_tensor *t, uint64_t x) {
    if (x < t->vr_first) return x;
    const uint64_t y = x - t->vr_first, u = y / t->vr_d, within = y % t->vr_d;
    if (u >= t->vr_k * t->vr_r) return x;
    const uint64_t r = u / t->vr_k, kk = u % t->vr_k;
    return t->vr_first + (kk * t->vr_r + r) * t->vr_d + within;
}

/* Qwen3NextModel's in_proj_qkvz split: output row x's source row. */
static uint64_t qz_source(const hf_out_tensor *t, uint64_t x) {
    const uint64_t per = 2 * t->qz_dk + 2 * t->qz_vd, qk = t->qz_k * t->qz_dk;
    if (t->qz_z) return x / t->qz_vd * per + 2 * t->qz_dk + t->qz_vd + x % t->qz_vd;
    if (x < qk) return x / t->qz_dk * per + x % t->qz_dk;
    if (x < 2 * qk) return (x - qk) / t->qz_dk * per + t->qz_dk + (x - qk) % t->qz_dk;
    return (x - 2 * qk) / t->qz_vd * per + 2 * t->qz_dk + (x - 2 * qk) % t->qz_vd;
}

/* Qwen3NextModel's A_log: -torch.exp(x) on what prepare_tensors hands it
 * (bf16 widened to float32; f16 kept: exp in float32 rounded to f16). */
static void neg_exp_values(float *a, uint64_t n, int dtype) {
    for (uint64_t i = 0; i < n; ++i) {
        const float e = hf_torch_expf(a[i]);
        a[i] = -(dtype == ANVIL_ST_F16 ? anvil_fp16_to_fp32(anvil_fp32_to_fp16(e)) : e);
    }
}

/* Output row x's source row (llama's Q/K permutation, Qwen3.5's V heads,
 * Qwen3-Next's split). */
static uint64_t row_source(const tjob *j, uint64_t x) {
    const hf_out_tensor *t = j->t;
    uint64_t sr = source_row(x, j->rd.rows, t->permute_heads);
    if (t->vr_k > 0 && !t->vr_cols) sr = vr_source(t, sr);
    if (t->qz_k > 0) sr = qz_source(t, sr);
    return sr;
}

/* ---- rows: a tensor whose rows move (hf_out_tensor's row maps) ---- */

static uint64_t rows_off(const tjob *j, size_t k) {
    const uint64_t r0 = j->first + (uint64_t)k * j->per_chunk;
    return (r0 < j->end ? r0 : j->end) * j->row_bytes;
}

/* Task k: rows [k * per_chunk, ...) decoded (moved as the maps say),
 * checked for NaN/Inf, encoded. */
static void rows_task(tjob *j, size_t k, uint8_t *dst, anvil_error *err, int *rcp) {
    const uint64_t L = j->rd.row_len, r0 = j->first + (uint64_t)k * j->per_chunk;
    const uint64_t nr = j->end - r0 < j->per_chunk ? j->end - r0 : j->per_chunk;
    const hf_out_tensor *t = j->t;
    float *a = malloc(nr * L * sizeof *a + 1);
    float *row = t->vr_k > 0 && t->vr_cols ? malloc(L * sizeof *row + 1) : NULL;
    if (a == NULL || (t->vr_k > 0 && t->vr_cols && row == NULL)) {
        free(a);
        free(row);
        *rcp = anvil__nomem(err);
        return;
    }
    for (uint64_t i = 0; i < nr; ++i) {
        const uint64_t sr = row_source(j, r0 + i);
        if (row == NULL) {
            hf_reader_row(&j->rd, sr, a + i * L);
            continue;
        }
        hf_reader_row(&j->rd, sr, row);
        for (uint64_t c = 0; c < L; ++c) a[i * L + c] = row[vr_source(t, c)];
    }
    free(row);
    int rc = check_finite(j->r, t->src, a, nr * L, r0 * L, err);
    if (rc == ANVIL_OK && t->neg_exp) neg_exp_values(a, nr * L, j->rd.s->st->dtype);
    if (rc == ANVIL_OK && t->shift != 0.0f) shift_values(a, nr * L, t->shift, j->rd.s->st->dtype);
    if (rc == ANVIL_OK) rc = encode(j->r, t, a, nr * L, dst, err);
    *rcp = rc;
    free(a);
}

/* The source rows the window's rows came from, as one span. */
static void rows_release(const tjob *j, size_t k0, size_t k1) {
    const uint64_t a = j->first + (uint64_t)k0 * j->per_chunk;
    const uint64_t b = j->first + (uint64_t)k1 * j->per_chunk < j->end ? j->first + (uint64_t)k1 * j->per_chunk
                                                                       : j->end;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint64_t x = a; x < b; ++x) {
        const uint64_t sr = row_source(j, x);
        lo = sr < lo ? sr : lo;
        hi = sr > hi ? sr : hi;
    }
    if (lo <= hi) release_elems(j->r, j->rd.s->st, lo * j->rd.row_len, (hi - lo + 1) * j->rd.row_len);
}

static int convert_rows(const run *r, const hf_out_tensor *t, tsink *s, anvil_error *err) {
    tjob j = { .r = r, .t = t, .task = rows_task, .task_off = rows_off, .release = rows_release };
    int rc = hf_reader_open(&j.rd, &r->f, &r->f.tensors[t->src], err);
    const uint64_t L = j.rd.row_len ? j.rd.row_len : 1;
    if (rc == ANVIL_OK && t->n_elements / L < j.rd.rows) j.rd.rows = t->n_elements / L; /* the first rows */
    j.per_chunk = L >= CHUNK_ELEMS ? 1 : CHUNK_ELEMS / L;
    j.row_bytes = j.rd.rows ? tensor_bytes(t) / j.rd.rows : 0;
    /* output rows are source rows here (2-D, or rows of ne[0]... as the source's) */
    j.first = s->row0 < j.rd.rows ? s->row0 : j.rd.rows;
    j.end = s->rows < j.rd.rows - j.first ? j.first + s->rows : j.rd.rows;
    j.n_tasks = (size_t)((j.end - j.first + j.per_chunk - 1) / j.per_chunk);
    if (rc == ANVIL_OK) rc = run_windows(&j, s, err);
    hf_reader_close(&j.rd);
    return rc;
}

/* ---- pieces: runs of sources in order (experts stacked, a fused gate_up
 * halved, or a plain tensor as one run), each cut into runs of whole output
 * rows of at most CHUNK_ELEMS values (a transposed one is kept whole) ---- */

static uint64_t subs_off(const tjob *j, size_t k) {
    const uint64_t rows = j->t->ne[0] ? j->t->n_elements / j->t->ne[0] : 0;
    if (rows == 0) return 0;
    const uint64_t row_bytes = tensor_bytes(j->t) / rows;
    const uint64_t out = k < j->n_tasks ? j->subs[k].out : j->end;
    return out / j->t->ne[0] * row_bytes;
}

static int sub_read(const run *r, const sub_piece *p, float *a, anvil_error *err) {
    hf_reader rd;
    const int rc = hf_reader_open(&rd, &r->f, &r->f.tensors[p->src], err);
    if (rc == ANVIL_OK) hf_reader_span(&rd, p->off, p->len, a);
    hf_reader_close(&rd);
    return rc;
}

/* a: rows x (len / rows) row-major, transposed in place (through a copy). */
static int transpose_piece(float *a, uint64_t rows, uint64_t len, anvil_error *err) {
    const uint64_t cols = len / rows;
    float *b = malloc(len * sizeof *b + 1);
    if (b == NULL) return anvil__nomem(err);
    for (uint64_t r = 0; r < rows; ++r)
        for (uint64_t c = 0; c < cols; ++c) b[c * rows + r] = a[r * cols + c];
    memcpy(a, b, len * sizeof *b);
    free(b);
    return ANVIL_OK;
}

static void subs_task(tjob *j, size_t k, uint8_t *dst, anvil_error *err, int *rcp) {
    const sub_piece *p = &j->subs[k];
    const hf_out_tensor *t = j->t;
    const int dtype = j->r->f.tensors[p->src].st->dtype;
    float *a = malloc(p->len * sizeof *a + 1);
    int rc = a != NULL ? sub_read(j->r, p, a, err) : anvil__nomem(err);
    if (rc == ANVIL_OK) rc = check_finite(j->r, p->src, a, p->len, p->off, err);
    if (rc == ANVIL_OK && t->neg_exp) neg_exp_values(a, p->len, dtype);
    if (rc == ANVIL_OK && t->shift != 0.0f) shift_values(a, p->len, t->shift, dtype);
    if (rc == ANVIL_OK && t->tr_rows > 0) rc = transpose_piece(a, t->tr_rows, p->len, err);
    if (rc == ANVIL_OK) rc = encode(j->r, t, a, p->len, dst, err);
    *rcp = rc;
    free(a);
}

static void subs_release(const tjob *j, size_t k0, size_t k1) {
    for (size_t k = k0; k < k1; ++k)
        release_elems(j->r, j->r->f.tensors[j->subs[k].src].st, j->subs[k].off, j->subs[k].len);
}

static int convert_subs(const run *r, const hf_out_tensor *t, const hf_piece *ps, size_t n, tsink *s,
                        anvil_error *err) {
    const uint64_t ne0 = t->ne[0] ? t->ne[0] : 1;
    const uint64_t most = CHUNK_ELEMS / ne0 > 0 ? CHUNK_ELEMS / ne0 * ne0 : ne0;
    /* the output elements asked for: whole rows (a transposed piece whole) */
    const uint64_t rows = t->n_elements / ne0, r0 = s->row0 < rows ? s->row0 : rows;
    const uint64_t lo = r0 * ne0, hi = (s->rows < rows - r0 ? r0 + s->rows : rows) * ne0;
    size_t n_subs = 0;
    for (size_t i = 0; i < n; ++i) n_subs += t->tr_rows > 0 ? 1 : (size_t)((ps[i].len + most - 1) / most) + 2;
    tjob j = { .r = r, .t = t, .task = subs_task, .task_off = subs_off, .release = subs_release };
    j.subs = malloc((n_subs + 1) * sizeof *j.subs);
    if (j.subs == NULL) return anvil__nomem(err);
    j.end = hi;
    uint64_t out = 0;
    for (size_t i = 0; i < n; ++i) {
        /* this piece's part of [lo, hi) */
        const uint64_t a = lo > out ? (lo - out < ps[i].len ? lo - out : ps[i].len) : 0;
        const uint64_t b = hi > out ? (hi - out < ps[i].len ? hi - out : ps[i].len) : 0;
        for (uint64_t at = a; at < b;) {
            const uint64_t len = t->tr_rows > 0 || b - at < most ? b - at : most;
            j.subs[j.n_tasks++] = (sub_piece){ ps[i].src, ps[i].off + at, len, out + at };
            at += len;
        }
        out += ps[i].len;
    }
    const int rc = run_windows(&j, s, err);
    for (size_t i = 0; i < n; ++i)
        if (r->f.tensors[ps[i].src].scale != NULL) release_source(r, r->f.tensors[ps[i].src].scale);
    free(j.subs);
    return rc;
}

/* ---- gpt-oss's MXFP4 experts (GptOssModel.repack_mxfp4): per 32-value
 * block the scale byte, then the 16 bytes of nibbles reordered as
 * transform_nibble_layout does: out[2j] = lo(b[j]) | lo(b[j+8]) << 4,
 * out[2j+1] = hi(b[j]) | hi(b[j+8]) << 4. Bytes moved, never inflated; a
 * task an expert. ---- */

static uint64_t expert_off(const tjob *j, size_t e) { return tensor_bytes(j->t) / j->t->ne[2] * e; }

static void mxfp4_task(tjob *j, size_t e, uint8_t *dst, anvil_error *err, int *rcp) {
    (void)err;
    const hf_out_tensor *t = j->t;
    const anvil_st_tensor *bt = j->r->f.tensors[t->src].st, *st = j->r->f.tensors[t->mx_scales].st;
    const uint8_t *B = bt->data, *S = st->data;
    const uint64_t R = t->ne[1], nb = t->ne[0] / 32, rs = bt->shape[1];
    for (uint64_t row = 0; row < R; ++row) {
        const uint64_t sr = e * rs + row * t->mx_step + t->mx_off;
        uint8_t *o = dst + row * nb * 17;
        for (uint64_t b = 0; b < nb; ++b, o += 17) {
            const uint8_t *x = B + (sr * nb + b) * 16;
            o[0] = S[sr * nb + b];
            for (int q = 0; q < 8; ++q) {
                o[1 + 2 * q] = (uint8_t)((x[q] & 0x0F) | (x[q + 8] & 0x0F) << 4);
                o[2 + 2 * q] = (uint8_t)((x[q] >> 4) | (x[q + 8] >> 4) << 4);
            }
        }
    }
    *rcp = ANVIL_OK;
}

static void mxfp4_release(const tjob *j, size_t e0, size_t e1) {
    const anvil_st_tensor *bt = j->r->f.tensors[j->t->src].st, *st = j->r->f.tensors[j->t->mx_scales].st;
    const uint64_t per = bt->shape[0] ? bt->n_elements / bt->shape[0] : 0;
    const uint64_t sper = st->shape[0] ? st->n_elements / st->shape[0] : 0;
    release_elems(j->r, bt, e0 * per, (e1 - e0) * per);
    release_elems(j->r, st, e0 * sper, (e1 - e0) * sper);
}

static int convert_mxfp4(const run *r, const hf_out_tensor *t, tsink *s, anvil_error *err) {
    tjob j = { .r = r, .t = t, .task = mxfp4_task, .task_off = expert_off, .release = mxfp4_release };
    j.n_tasks = (size_t)t->ne[2];
    return run_windows(&j, s, err);
}

/* ---- gpt-oss's float experts: output expert e gathered from source
 * expert e (hf_out_tensor.strided: transposed, every other row or value);
 * a task an expert ---- */

static void strided_task(tjob *j, size_t e, uint8_t *dst, anvil_error *err, int *rcp) {
    const hf_out_tensor *t = j->t;
    const uint64_t C = t->ne[0], per = t->n_elements / j->rd.rows, R = per / C;
    float *src = malloc(j->rd.row_len * sizeof *src + 1), *a = malloc(per * sizeof *a + 1);
    int rc = src && a ? ANVIL_OK : anvil__nomem(err);
    if (rc == ANVIL_OK) {
        hf_reader_row(&j->rd, e, src);
        rc = check_finite(j->r, t->src, src, j->rd.row_len, e * j->rd.row_len, err);
    }
    for (uint64_t row = 0; rc == ANVIL_OK && row < R; ++row)
        for (uint64_t c = 0; c < C; ++c) a[row * C + c] = src[t->s_base + row * t->s_r + c * t->s_c];
    if (rc == ANVIL_OK) rc = encode(j->r, t, a, per, dst, err);
    *rcp = rc;
    free(src);
    free(a);
}

static uint64_t strided_off(const tjob *j, size_t e) { return tensor_bytes(j->t) / j->rd.rows * e; }

static void strided_release(const tjob *j, size_t e0, size_t e1) {
    release_elems(j->r, j->rd.s->st, e0 * j->rd.row_len, (e1 - e0) * j->rd.row_len);
}

static int convert_strided(const run *r, const hf_out_tensor *t, tsink *s, anvil_error *err) {
    tjob j = { .r = r, .t = t, .task = strided_task, .task_off = strided_off, .release = strided_release };
    int rc = hf_reader_open(&j.rd, &r->f, &r->f.tensors[t->src], err);
    j.n_tasks = (size_t)j.rd.rows;
    if (rc == ANVIL_OK) rc = run_windows(&j, s, err);
    hf_reader_close(&j.rd);
    return rc;
}

/* One tensor's bytes in its output type, in order, to s; on the context's
 * threads when there is one. The bytes do not depend on the thread count
 * or the window size. */
static int convert_tensor(const run *r, const hf_out_tensor *t, tsink *s, anvil_error *err) {
    if (t->generated != NULL) {
        const uint64_t n = tensor_bytes(t);
        uint8_t *dst = s->whole != NULL ? s->whole : malloc(n + 1);
        int rc = dst != NULL ? encode(r, t, t->generated, t->n_elements, dst, err) : anvil__nomem(err);
        if (rc == ANVIL_OK && s->w != NULL) rc = gguf_writer_stream_part(s->w, dst, n, err);
        if (dst != s->whole) free(dst);
        return rc;
    }
    if (t->pieces != NULL) return convert_subs(r, t, t->pieces, t->n_pieces, s, err);
    if (t->mxfp4) return convert_mxfp4(r, t, s, err);
    if (t->strided) return convert_strided(r, t, s, err);
    const hf_src_tensor *src = &r->f.tensors[t->src];
    int rc;
    if (t->permute_heads > 0 || t->vr_k > 0 || t->qz_k > 0) rc = convert_rows(r, t, s, err);
    else {
        /* a plain tensor: its first n_elements values as one run */
        const hf_piece whole = { t->src, 0, t->n_elements };
        rc = convert_subs(r, t, &whole, 1, s, err);
    }
    release_source(r, src->st);
    if (src->scale != NULL) release_source(r, src->scale);
    return rc;
}

/* A writer per part: part 1 is r->kv (all KVs), the others only the split
 * keys; split.* appended last, as GGUFWriter.add_shard_kv_data does. */
static int declare_parts(run *r, anvil_gguf_writer **w, anvil_error *err) {
    w[0] = r->kv;
    r->kv = NULL;
    int rc = ANVIL_OK;
    for (uint32_t p = 1; p < r->n_parts && rc == ANVIL_OK; ++p) rc = anvil_gguf_writer_new(&w[p], r->ctx, err);
    for (size_t i = 0; i < r->n_ts && rc == ANVIL_OK; ++i) {
        const hf_out_tensor *t = &r->ts[i];
        rc = anvil_gguf_writer_add_tensor(w[r->part_of[i]], t->name, t->type, t->n_dims, t->ne, NULL, 0, err);
        if (rc == ANVIL_OK) rc = gguf_writer_exact_dims(w[r->part_of[i]], t->n_dims, err);
    }
    for (uint32_t p = 0; p < r->n_parts && r->n_parts > 1 && rc == ANVIL_OK; ++p) {
        rc = anvil_gguf_writer_set_u16(w[p], ANVIL_GGUF_KEY_SPLIT_NO, (uint16_t)p, err);
        if (rc == ANVIL_OK)
            rc = anvil_gguf_writer_set_u16(w[p], ANVIL_GGUF_KEY_SPLIT_COUNT, (uint16_t)r->n_parts, err);
        if (rc == ANVIL_OK) rc = anvil_gguf_writer_set_i32(w[p], ANVIL_GGUF_KEY_SPLIT_TENSORS, (int32_t)r->n_ts, err);
    }
    return rc;
}

static int part_path(const run *r, uint32_t p, char *buf, size_t cap, anvil_error *err) {
    if (r->n_parts == 1) {
        snprintf(buf, cap, "%s", r->out_path);
        return ANVIL_OK;
    }
    return anvil_hf_part_path(buf, cap, r->out_path, p, r->n_parts) == ANVIL_OK
               ? ANVIL_OK
               : anvil__error_set(err, ANVIL_E_INVALID_ARG, "output path too long");
}

static int stream_parts(run *r, anvil_gguf_writer **w, anvil_error *err) {
    tsink s = { .rows = UINT64_MAX };
    s.cap = window_cap(r);
    s.buf = malloc(s.cap + 1);
    int rc =
        s.buf ? ANVIL_OK
              : anvil__error_set(err, ANVIL_E_NOMEM, "out of memory (a %llu-byte window)", (unsigned long long)s.cap);
    uint64_t done = 0, total = 0;
    for (size_t i = 0; i < r->n_ts; ++i) total += tensor_bytes(&r->ts[i]);
    size_t next = 0;
    for (uint32_t p = 0; p < r->n_parts && rc == ANVIL_OK; ++p) {
        char path[4200];
        rc = part_path(r, p, path, sizeof path, err);
        if (rc == ANVIL_OK) rc = anvil_gguf_writer_stream_begin(w[p], path, err);
        s.w = w[p];
        for (; next < r->n_ts && r->part_of[next] == p && rc == ANVIL_OK; ++next) {
            const hf_out_tensor *t = &r->ts[next];
            rc = convert_tensor(r, t, &s, err);
            done += tensor_bytes(t);
            if (rc == ANVIL_OK && r->o->progress != NULL) {
                const anvil_gguf_progress pr = { next + 1, r->n_ts, done, total, t->name, p + 1, r->n_parts };
                r->o->progress(r->o->progress_arg, &pr);
            }
        }
        if (rc == ANVIL_OK) {
            rc = r->n_parts == 1 ? anvil_gguf_writer_stream_finish(w[p], err)
                                 : anvil_gguf_writer_stream_hold(w[p], err);
        }
    }
    if (rc == ANVIL_OK && r->n_parts > 1) rc = anvil_gguf_writer_commit_set(w, r->n_parts, err);
    free(s.buf);
    return rc;
}

void anvil_hf_convert_result_free(anvil_hf_convert_result *r) {
    if (r == NULL) return;
    free(r->outputs);
    r->outputs = NULL;
}

/* --vocab-only: GGUFWriter.write_vocab writes the header and the KVs and
 * stops -- no padding after them. The bytes up to the end of the last KV. */
static int write_vocab_only(run *r, anvil_gguf_writer *w, anvil_hf_convert_result *res, anvil_error *err) {
    uint8_t *bytes = NULL;
    size_t size = 0;
    anvil_gguf *g = NULL;
    int rc = gguf_writer_header_bytes(w, &bytes, &size, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_open_buffer(&g, bytes, size, r->ctx, err);
    if (rc == ANVIL_OK) {
        const size_t n = anvil_gguf_kv_count(g);
        const anvil_gguf_kv *last = n ? anvil_gguf_kv_at(g, n - 1) : NULL;
        size_t end = last ? (size_t)((const uint8_t *)last->raw + last->raw_size - bytes) : 24;
        res->outputs[0].bytes = res->bytes = end;
        if (!r->o->dry_run) rc = anvil_file_write_atomic(r->out_path, bytes, end, err);
    }
    anvil_gguf_close(g);
    free(bytes);
    return rc;
}

static int write_all(run *r, anvil_hf_convert_result *res, anvil_error *err) {
    anvil_gguf_writer **w = calloc(r->n_parts, sizeof *w);
    res->outputs = calloc(r->n_parts, sizeof *res->outputs);
    if (w == NULL || res->outputs == NULL) {
        free(w);
        return anvil__nomem(err);
    }
    int rc = declare_parts(r, w, err);
    for (uint32_t p = 0; p < r->n_parts && rc == ANVIL_OK; ++p) {
        anvil_hf_output *out = &res->outputs[p];
        rc = anvil_gguf_writer_file_size(w[p], &out->bytes, err);
        if (rc == ANVIL_OK) rc = part_path(r, p, out->path, sizeof out->path, err);
        out->n_tensors = anvil_gguf_writer_tensor_count(w[p]);
        res->bytes += out->bytes;
    }
    if (rc == ANVIL_OK && r->n_parts > 1) rc = part_path(r, 0, res->out_path, sizeof res->out_path, err);
    if (rc == ANVIL_OK && r->o->vocab_only) rc = write_vocab_only(r, w[0], res, err);
    else if (rc == ANVIL_OK && !r->o->dry_run) rc = stream_parts(r, w, err);
    for (uint32_t p = 0; p < r->n_parts; ++p) anvil_gguf_writer_free(w[p]);
    free(w);
    return rc;
}

int anvil_hf_convert(anvil_ctx *ctx, const char *hf_dir, const anvil_hf_convert_options *o,
                     anvil_hf_convert_result *res, anvil_error *err) {
    anvil_hf_convert_options defaults;
    if (o == NULL) {
        anvil_hf_convert_options_init(&defaults);
        o = &defaults;
    }
    if (hf_dir == NULL || res == NULL) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "no folder given");
    memset(res, 0, sizeof *res);
    run r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.o = o;
    int rc = prepare(&r, hf_dir, err);
    if (rc == ANVIL_OK) {
        snprintf(res->ftype, sizeof res->ftype, "%s", r.ft->name);
        res->arch = r.arch->gguf_name;
        res->n_parts = r.n_parts;
        res->n_tensors = r.n_ts;
        res->total_params = total_params(&r);
        res->has_tokenizer = r.has_tokenizer;
        snprintf(res->out_path, sizeof res->out_path, "%s", r.out_path);
        rc = write_all(&r, res, err);
    }
    run_free(&r);
    if (rc != ANVIL_OK) anvil_hf_convert_result_free(res);
    return rc;
}

/* The folder as a GGUF source (gguf_source.h): the plan and KVs of
 * --outtype auto, each tensor converted when the reader asks for it. */
typedef struct hf_source {
    run r;
    anvil_hf_convert_options o;
} hf_source;

static int source_fill(void *arg, size_t i, void *dst, uint64_t n, anvil_error *err) {
    hf_source *s = arg;
    if (i >= s->r.n_ts || tensor_bytes(&s->r.ts[i]) != n) {
        return anvil__error_set(err, ANVIL_E_INTERNAL, "converted tensor %zu: no such tensor of %llu bytes", i,
                                (unsigned long long)n);
    }
    tsink sink = { .whole = dst, .rows = UINT64_MAX };
    return convert_tensor(&s->r, &s->r.ts[i], &sink, err);
}

/* Tensors whose output rows convert_tensor makes a range of: a plain one,
 * stacked experts or a fused half (not transposed per piece), and a 2-D
 * one whose rows move (each output row one source row). */
static int rows_ok(const hf_out_tensor *t, const run *r) {
    if (t->generated != NULL || t->mxfp4 || t->strided || t->ne[0] == 0) return 0;
    if (t->pieces != NULL) return t->tr_rows == 0;
    if (t->permute_heads > 0 || t->vr_k > 0 || t->qz_k > 0) {
        const anvil_st_tensor *st = r->f.tensors[t->src].st;
        return t->n_dims == 2 && st->rank == 2 && st->shape[1] == t->ne[0] && !t->vr_cols;
    }
    return 1;
}

static int source_rows_ok(void *arg, size_t i) {
    const hf_source *s = arg;
    return i < s->r.n_ts && rows_ok(&s->r.ts[i], &s->r);
}

static int source_fill_rows(void *arg, size_t i, uint64_t row0, uint64_t n_rows, void *dst, uint64_t n,
                            anvil_error *err) {
    hf_source *s = arg;
    const hf_out_tensor *t = i < s->r.n_ts ? &s->r.ts[i] : NULL;
    const uint64_t rows = t != NULL && t->ne[0] ? t->n_elements / t->ne[0] : 0;
    if (t == NULL || !rows_ok(t, &s->r) || row0 > rows || n_rows > rows - row0 ||
        tensor_bytes(t) / rows * n_rows != n) {
        return anvil__error_set(err, ANVIL_E_INTERNAL, "converted tensor %zu: no rows %llu..+%llu of %llu bytes", i,
                                (unsigned long long)row0, (unsigned long long)n_rows, (unsigned long long)n);
    }
    tsink sink = { .whole = dst, .row0 = row0, .rows = n_rows };
    return convert_tensor(&s->r, t, &sink, err);
}

static void source_free(void *arg) {
    hf_source *s = arg;
    run_free(&s->r);
    free(s);
}

int anvil_hf_open_as_gguf(anvil_ctx *ctx, const char *hf_dir, anvil_gguf **out, anvil_error *err) {
    return anvil_hf_open_as_gguf_opts(ctx, hf_dir, NULL, out, err);
}

int anvil_hf_open_as_gguf_mtp(anvil_ctx *ctx, const char *hf_dir, int mtp_only, int no_mtp, anvil_gguf **out,
                              anvil_error *err) {
    anvil_hf_convert_options o;
    anvil_hf_convert_options_init(&o);
    o.mtp_only = mtp_only;
    o.no_mtp = no_mtp;
    return anvil_hf_open_as_gguf_opts(ctx, hf_dir, &o, out, err);
}

int anvil_hf_open_as_gguf_opts(anvil_ctx *ctx, const char *hf_dir, const anvil_hf_convert_options *o,
                               anvil_gguf **out, anvil_error *err) {
    if (out == NULL || hf_dir == NULL) return anvil__error_set(err, ANVIL_E_INVALID_ARG, "no folder given");
    *out = NULL;
    if (o != NULL && ((o->outtype != NULL && strcmp(o->outtype, "auto") != 0) || o->vocab_only)) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "%s: a folder opened as a GGUF source is convert --outtype auto's model (outtype "
                                "'%s'%s given)",
                                hf_dir, o->outtype ? o->outtype : "auto", o->vocab_only ? ", vocab_only" : "");
    }
    hf_source *s = calloc(1, sizeof *s);
    if (s == NULL) return anvil__nomem(err);
    anvil_hf_convert_options_init(&s->o);
    if (o != NULL) {
        s->o.mtp_only = o->mtp_only;
        s->o.no_mtp = o->no_mtp;
        s->o.fp8_as_q8 = fp8_as_q8(o);
    }
    s->r.ctx = ctx;
    s->r.o = &s->o;
    s->r.as_source = 1;
    anvil_gguf_writer *w = NULL;
    uint8_t *header = NULL;
    size_t size = 0;
    uint64_t file_size = 0;
    int rc = prepare(&s->r, hf_dir, err);
    if (rc == ANVIL_OK && s->r.n_parts != 1) rc = anvil__error_set(err, ANVIL_E_INTERNAL, "a split source");
    if (rc == ANVIL_OK) rc = declare_parts(&s->r, &w, err);
    if (rc == ANVIL_OK) rc = gguf_writer_header_bytes(w, &header, &size, err);
    if (rc == ANVIL_OK) rc = anvil_gguf_writer_file_size(w, &file_size, err);
    if (rc == ANVIL_OK) {
        rc = anvil__gguf_open_source(out, header, size, file_size, source_fill, source_free, s, ctx, err);
    }
    if (rc == ANVIL_OK) anvil__gguf_source_rows(*out, source_fill_rows, source_rows_ok);
    free(header);
    anvil_gguf_writer_free(w);
    if (rc != ANVIL_OK) source_free(s);
    return rc;
}
