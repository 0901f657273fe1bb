/* SPDX-License-Identifier: MIT */
/*
 * hf_mtp: convert_hf_to_gguf.py's --mtp and --no-mtp (--no-nextn) for the
 * classes that set supports_mtp_export (Glm4MoeModel, _QwenMtpMixin's
 * Qwen3.5 hybrids):
 *
 *  - hf_mtp_mode: main()'s checks, before any shard is read: both flags
 *    are refused ("mutually exclusive"), either on a class without MTP
 *    export is refused naming the class; else f->mtp_mode is set. The
 *    block count, nextn_predict_layers and the output name follow it in
 *    each class's file (hf_glm4moe.c, hf_qwen35.c) and hf_meta.c;
 *  - hf_mtp_filter: Glm4MoeModel.filter_tensors: a tensor model.layers.N.*
 *    with N >= the config's layer count is an MTP layer's; --no-mtp drops
 *    those, --mtp drops every other tensor but model.embed_tokens.weight,
 *    model.norm.weight and lm_head.weight. The Qwen3.5 classes tell MTP
 *    tensors by their mtp. prefix instead (hf_qwen35_filter applies the
 *    mode while it renames them, through hf_mtp_compact).
 *
 * Dropped tensors leave hf_folder.tensors as if the checkpoint never had
 * them (the converter filters them while indexing), so --outtype auto,
 * the parameter count and the size label follow the kept ones.
 */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hf_internal.h"

int hf_mtp_mode(const hf_arch *a, hf_folder *f, int mtp_only, int no_mtp, anvil_error *err) {
    f->mtp_mode = HF_MTP_ALL;
    if (!mtp_only && !no_mtp) return ANVIL_OK;
    if (mtp_only && no_mtp) {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG,
                                "--mtp and --no-mtp (--no-nextn) are mutually exclusive (as in "
                                "convert_hf_to_gguf.py): give one");
    }
    const int supported = a->id == HF_ARCH_GLM4MOE || a->id == HF_ARCH_QWEN35 || a->id == HF_ARCH_QWEN35MOE ||
                          a->id == HF_ARCH_QWEN3NEXT;
    if (!supported) {
        return anvil__error_set(err, ANVIL_E_UNSUPPORTED,
                                "%s/config.json: --mtp / --no-nextn are not supported for %s (convert_hf_to_gguf.py "
                                "refuses them too): only Glm4MoeForCausalLM, Qwen3NextForCausalLM and the Qwen3.5 "
                                "classes export "
                                "their multi-token-prediction layers; run again without the flag",
                                f->dir, a->hf_name);
    }
    f->mtp_mode = mtp_only ? HF_MTP_ONLY : HF_MTP_NONE;
    return ANVIL_OK;
}

int hf_mtp_keep_shared(const char *name) {
    return strcmp(name, "model.embed_tokens.weight") == 0 || strcmp(name, "model.norm.weight") == 0 ||
           strcmp(name, "lm_head.weight") == 0;
}

void hf_mtp_compact(hf_folder *f, const unsigned char *drop) {
    size_t k = 0;
    for (size_t i = 0; i < f->n_tensors; ++i) {
        if (drop[i]) {
            free(f->tensors[i].name);
            continue;
        }
        f->tensors[k++] = f->tensors[i];
    }
    f->n_tensors = k;
}

/* re.match(r"model\.layers\.(\d+)\.", name) with the number >= n_main. */
static int is_mtp_layer(const char *name, uint64_t n_main) {
    static const char prefix[] = "model.layers.";
    if (strncmp(name, prefix, sizeof prefix - 1) != 0) return 0;
    const char *p = name + sizeof prefix - 1;
    uint64_t n = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9'; ++p, ++digits) {
        if (n >= n_main) continue; /* already past: no need for the whole value */
        n = n * 10 + (uint64_t)(*p - '0');
    }
    return digits > 0 && *p == '.' && n >= n_main;
}

int hf_mtp_filter(const hf_arch *a, hf_folder *f, anvil_error *err) {
    if (f->mtp_mode == HF_MTP_ALL || a->id != HF_ARCH_GLM4MOE) return ANVIL_OK;
    uint64_t n_main = 0;
    int rc = hf_arch_block_count(f, &n_main, err);
    if (rc != ANVIL_OK) return rc;
    unsigned char *drop = calloc(f->n_tensors + 1, 1);
    if (drop == NULL) return anvil__nomem(err);
    for (size_t i = 0; i < f->n_tensors; ++i) {
        const char *nm = f->tensors[i].name;
        const int mtp = is_mtp_layer(nm, n_main);
        drop[i] = f->mtp_mode == HF_MTP_NONE ? mtp : !mtp && !hf_mtp_keep_shared(nm);
    }
    hf_mtp_compact(f, drop);
    free(drop);
    return ANVIL_OK;
}
