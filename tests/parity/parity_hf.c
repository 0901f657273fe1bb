/* SPDX-License-Identifier: MIT */
/*
 * The "hf" family: `anvil convert` against llama.cpp's convert_hf_to_gguf.py
 * and llama.cpp itself. For every reference pair of
 * ../shared/testdata/hf, of tests/hf/moe (the mixture-of-experts
 * classes; ANVIL_HF_MOE_PAIRS), of tests/hf/gemma (Gemma2ForCausalLM,
 * Gemma3ForCausalLM; ANVIL_HF_GEMMA_PAIRS), of tests/hf/phi3
 * (Phi3ForCausalLM; ANVIL_HF_PHI3_PAIRS) and of tests/hf/fp8 (FP8
 * checkpoints whose float weights have scales too; ANVIL_HF_FP8_PAIRS),
 * of tests/hf/deepseek (DeepseekV3ForCausalLM, BF16 and FP8, partly FP8 with --fp8-as-q8;
 * ANVIL_HF_DEEPSEEK_PAIRS), of tests/hf/glm4moe (Glm4MoeForCausalLM, BF16
 * with an MTP layer, F16, and block-scaled FP8 with an MTP layer;
 * ANVIL_HF_GLM4MOE_PAIRS), of tests/hf/qwen35 (Qwen3_5ForCausalLM and
 * Qwen3_5MoeForCausalLM; ANVIL_HF_QWEN35_PAIRS), of tests/hf/qwen3next (Qwen3NextForCausalLM;
 * ANVIL_HF_QWEN3NEXT_PAIRS) (a checkpoint folder and the GGUF the converter
 * wrote from it with the options in its name: OUTTYPE or vocab, after
 * mtp- or nomtp- for --mtp or --no-mtp, then q8fp8- for --fp8-as-q8),
 * anvil_hf_convert with the
 * same options must give the same file: byte for byte when this build
 * writes the tokenizer, else every non-tokenizer KV (order, wire type,
 * bytes) and every tensor. Then llama.cpp (libllama) loads the converted
 * file and greedy-decodes from it, and the tokens must equal those it
 * decodes from the converter's file (vocab-only files are not run).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../hf/gguf_same.h"
#include "anvil/hf.h"
#include "llama_oracle.h"
#include "parity.h"
#include "test_env.h"

enum { HF_STEPS = 8 };

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* One pair: folder name and option from "<folder>.<opt>.gguf". */
static size_t check_pair(parity_ctx *pc, anvil_ctx *ctx, llama_oracle *lo, const char *ref_dir, const char *file,
                         const char *tmp, size_t *checked) {
    char dir[512], opt[32], in[2048], ref[2048], out[2048], why[1024];
    const char *dot = strchr(file, '.');
    const char *dot2 = dot ? strchr(dot + 1, '.') : NULL;
    if (dot == NULL || dot2 == NULL) return 0;
    snprintf(dir, sizeof dir, "%.*s", (int)(dot - file), file);
    snprintf(opt, sizeof opt, "%.*s", (int)(dot2 - dot - 1), dot + 1);
    snprintf(in, sizeof in, "%s/%s", ref_dir, dir);
    snprintf(ref, sizeof ref, "%s/%s", ref_dir, file);
    snprintf(out, sizeof out, "%s/%s", tmp, file);
    anvil_hf_convert_options o;
    anvil_hf_convert_options_init(&o);
    o.outfile = out;
    /* "mtp-OPT" / "nomtp-OPT": OPT with --mtp / --no-mtp; "q8fp8-OPT": with --fp8-as-q8 */
    const char *t = opt;
    if (strncmp(t, "mtp-", 4) == 0) o.mtp_only = 1, t += 4;
    else if (strncmp(t, "nomtp-", 6) == 0) o.no_mtp = 1, t += 6;
    if (strncmp(t, "q8fp8-", 6) == 0) o.fp8_as_q8 = 1, t += 6;
    o.vocab_only = strcmp(t, "vocab") == 0;
    o.outtype = o.vocab_only ? NULL : t;
    anvil_hf_convert_result r;
    anvil_error err = { 0 };
    size_t bad = 0;
    if (anvil_hf_convert(ctx, in, &o, &r, &err) != ANVIL_OK) {
        printf("  %s: anvil convert failed: %s\n", file, err.message);
        return 1;
    }
    const int whole = r.has_tokenizer;
    anvil_hf_convert_result_free(&r);
    ++*checked;
    if (gguf_same(out, ref, whole ? NULL : "tokenizer.", why, sizeof why) != 0) {
        printf("  %s: differs from convert_hf_to_gguf.py's: %s\n", file, why);
        bad++;
    }
    if (lo != NULL && whole && !o.vocab_only && !o.mtp_only) { /* an MTP head alone is no model to run */
        int32_t a[HF_STEPS], b[HF_STEPS];
        ++*checked;
        if (llama_oracle_generate(lo, ref, HF_STEPS, a, why, sizeof why) != 0 ||
            llama_oracle_generate(lo, out, HF_STEPS, b, why, sizeof why) != 0) {
            printf("  %s: llama.cpp: %s\n", file, why);
            bad++;
        } else if (memcmp(a, b, sizeof a) != 0) {
            printf("  %s: llama.cpp decodes other tokens from anvil's file\n", file);
            bad++;
        } else if (pc->verbose) {
            printf("  %s: llama.cpp decodes %d tokens, the same from both\n", file, HF_STEPS);
        }
    }
    unlink(out);
    return bad;
}

/* Every "<folder>.<opt>.gguf" of refs, in name order. */
static size_t check_dir(parity_ctx *pc, anvil_ctx *ctx, llama_oracle *lo, const char *refs, const char *tmp,
                        size_t *checked) {
    DIR *d = opendir(refs);
    char *names[64];
    size_t n = 0, bad = 0;
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL && n < 64;) {
        const size_t l = strlen(e->d_name);
        if (l > 5 && strcmp(e->d_name + l - 5, ".gguf") == 0) names[n++] = strdup(e->d_name);
    }
    if (d != NULL) closedir(d);
    qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; ++i) {
        bad += check_pair(pc, ctx, lo, refs, names[i], tmp, checked);
        free(names[i]);
    }
    return bad;
}

int parity_hf(parity_ctx *pc) {
    const char *ref_dir = test_shared_path("hf");
    if (ref_dir == NULL) {
        printf("hf       skipped: no ../shared/testdata/hf\n");
        return 0;
    }
    char refs[1024];
    snprintf(refs, sizeof refs, "%s", ref_dir);
    char tmp[] = "/tmp/anvil-parity-hf-XXXXXX";
    if (mkdtemp(tmp) == NULL) return 1;
    anvil_ctx *ctx = NULL;
    anvil_error err = { 0 };
    if (anvil_ctx_open(&ctx, parity_config_path(), &err) != ANVIL_OK) {
        printf("hf       cannot open a context: %s\n", err.message);
        rmdir(tmp);
        return 1;
    }
    llama_oracle lo;
    char why[512];
    const int have_llama = llama_oracle_open(&lo, pc->oracle->dir, why, sizeof why) == 0;
    if (!have_llama) printf("hf       llama.cpp not loaded (%s): files are compared, not run\n", why);
    size_t checked = 0, bad = 0;
    bad += check_dir(pc, ctx, have_llama ? &lo : NULL, refs, tmp, &checked);
#ifdef ANVIL_HF_MOE_PAIRS
    bad += check_dir(pc, ctx, have_llama ? &lo : NULL, ANVIL_HF_MOE_PAIRS, tmp, &checked);
#endif
#ifdef ANVIL_HF_GEMMA_PAIRS
    bad += check_dir(pc, ctx, have_llama ? &lo : NULL, ANVIL_HF_GEMMA_PAIRS, tmp, &checked);
#endif
#ifdef ANVIL_HF_PHI3_PAIRS
    bad += check_dir(pc, ctx, have_llama ? &lo : NULL, ANVIL_HF_PHI3_PAIRS, tmp, &checked);
#endif
#ifdef ANVIL_HF_FP8_PAIRS
    bad += check_dir(pc, ctx, have_llama ? &lo : NULL, ANVIL_HF_FP8_PAIRS, tmp, &checked);
#endif
#ifdef ANVIL_HF_GPTOSS_PAIRS /* GptOssForCausalLM: MXFP4 and BF16 sources */
    bad += check_dir(pc, ctx, have_llama ? &lo : NULL, ANVIL_HF_GPTOSS_PAIRS, tmp, &checked);
#endif
#ifdef ANVIL_HF_DEEPSEEK_PAIRS
    bad += check_dir(pc, ctx, have_llama ? &lo : NULL, ANVIL_HF_DEEPSEEK_PAIRS, tmp, &checked);
#endif
#ifdef ANVIL_HF_GLM4MOE_PAIRS
    bad += check_dir(pc, ctx, have_llama ? &lo : NULL, ANVIL_HF_GLM4MOE_PAIRS, tmp, &checked);
#endif
#ifdef ANVIL_HF_QWEN35_PAIRS
    bad += check_dir(pc, ctx, have_llama ? &lo : NULL, ANVIL_HF_QWEN35_PAIRS, tmp, &checked);
#endif
#ifdef ANVIL_HF_QWEN3NEXT_PAIRS
    bad += check_dir(pc, ctx, have_llama ? &lo : NULL, ANVIL_HF_QWEN3NEXT_PAIRS, tmp, &checked);
#endif
    if (have_llama) llama_oracle_close(&lo);
    anvil_ctx_close(ctx);
    rmdir(tmp);
    parity_report(pc, "hf", "convert_hf_to_gguf.py pairs, llama.cpp runs", checked, bad);
    return (int)bad;
}
