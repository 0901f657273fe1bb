/* SPDX-License-Identifier: MIT */
/*
 * anvil quantize [options] IN.gguf [OUT.gguf] TYPE [NTHREADS]
 * anvil quantize [options] IN.gguf [OUT.gguf] --target-size SIZE | --target-bpw B [NTHREADS]
 *
 * llama-quantize's command line over anvil/quantize.h: the same positional
 * form (OUT defaults to <IN's folder>/ggml-model-<TYPE>.gguf; for a Hugging
 * Face folder, HF_DIR/ggml-model-<TYPE>.gguf, inside it), the same
 * options and option syntax, the same bytes out. Options may also come after
 * the positional arguments. anvil's own: --json, --quiet, --no-quality,
 * --no-fallback, convert's --mtp/--no-mtp/--fp8-as-q8 for HF_DIR, and the size target
 * (--target-size/--target-bpw, with --target-weights, --target-rows,
 * --plan-out).
 * Exit: 0 done, 1 the work failed, 2 a usage error.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "anvil/hf.h"
#include "anvil/quantize.h"
#include "cli.h"
#include "cli_gguf.h"
#include "cmd_quantize_sens.h"
#include "cmd_transcode.h"

#define QZ_MAX_LIST 1024

static void print_presets(FILE *f) {
    fprintf(f, "allowed quantization types (TYPE, by name or number):\n");
    for (size_t i = 0; i < anvil_quantize_preset_count(); ++i) {
        const anvil_quantize_preset *p = anvil_quantize_preset_at(i);
        if (strcmp(p->name, "COPY") != 0) {
            fprintf(f, "  %2u  or  ", p->ftype);
        } else {
            fprintf(f, "          ");
        }
        fprintf(f, "%-9s : %s\n", p->name, p->desc);
    }
}

const char cli_help_quantize[] =
    "usage: anvil quantize [options] IN.gguf|HF_DIR [OUT.gguf] TYPE [NTHREADS]\n"
    "       anvil quantize [options] IN.gguf|HF_DIR [OUT.gguf] --target-size SIZE [NTHREADS]\n"
    "       anvil quantize [options] IN.gguf|HF_DIR [OUT.gguf] --target-bpw B [NTHREADS]\n"
    "\n"
    "llama-quantize's job with llama.cpp's policy, byte for byte: the same presets,\n"
    "per-tensor type mixture, fallbacks, overrides, tensor order and metadata as\n"
    "llama_model_quantize, streamed out of core (memory bounded by one tensor). OUT\n"
    "defaults to <IN's folder>/ggml-model-<TYPE>.gguf (for HF_DIR: inside it, where\n"
    "convert puts its output); it may be '-' (stdout), a device or a FIFO (written\n"
    "into, never replaced; `anvil help`, files), never an input of the run (IN,\n"
    "--imatrix, a file of HF_DIR). NTHREADS <= 0: every core.\n"
    "IN may be a Hugging Face checkpoint folder (also with --target-size/-bpw): the\n"
    "output has the bytes of `anvil convert HF_DIR --outtype auto` followed by\n"
    "`anvil quantize` of that file, in one streaming pass: each tensor is converted\n"
    "from the shards as it is quantized, no intermediate file is written (disk use\n"
    "is the output's), memory holds a few tensors.\n"
    "\n"
    "TYPE, a preset name (any case) or its number:\n"
    "  Q1_0 Q2_0 Q4_0 Q4_1 MXFP4_MOE Q5_0 Q5_1 IQ2_XXS IQ2_XS IQ2_S IQ2_M IQ1_S IQ1_M\n"
    "  TQ1_0 TQ2_0 Q2_K Q2_K_S IQ3_XXS IQ3_S IQ3_M Q3_K IQ3_XS Q3_K_S Q3_K_M Q3_K_L\n"
    "  IQ4_NL IQ4_XS Q4_K Q4_K_S Q4_K_M Q5_K Q5_K_S Q5_K_M Q6_K Q8_0 F16 BF16 F32 COPY\n"
    "  (Q3_K, Q4_K, Q5_K are Q3_K_M, Q4_K_M, Q5_K_M; a wrong TYPE lists the numbers)\n"
    "\n"
    "options (llama-quantize's):\n"
    "  --allow-requantize          allow requantizing tensors that are already quantized\n"
    "                              (quality suffers compared with quantizing from 16/32 bit)\n"
    "  --leave-output-tensor       leave output.weight un(re)quantized\n"
    "  --pure                      no k-quant mixture: every tensor gets the preset's type\n"
    "  --imatrix FILE              importance matrix (GGUF or legacy .dat from llama-imatrix)\n"
    "  --include-weights NAME      use the importance matrix only for tensors containing NAME\n"
    "  --exclude-weights NAME      do not use it for tensors containing NAME (not with\n"
    "                              --include-weights)\n"
    "  --output-tensor-type T      ggml type of output.weight\n"
    "  --token-embedding-type T    ggml type of the token embeddings\n"
    "  --tensor-type PATTERN=T     tensors whose name matches PATTERN (ECMAScript regex, as\n"
    "                              llama.cpp's std::regex; lower-cased; searched) get T;\n"
    "                              repeatable, first match wins, e.g. 'blk\\.\\d+\\.attn_v=q8_0'\n"
    "  --tensor-type-file FILE     PATTERN=T items separated by spaces or newlines\n"
    "  --prune-layers L0,L1,...    drop these layers (later ones are renumbered)\n"
    "  --keep-split                one output part per input part (OUT-0000i-of-0000N.gguf)\n"
    "  --override-kv KEY=TYPE:VAL  set a metadata key (TYPE int, float, bool or str)\n"
    "  --dry-run                   print the plan and the final size; write nothing\n"
    "  --max-buffer-size MiB       accepted for compatibility (anvil streams one tensor at a time)\n"
    "anvil's:\n"
    "  --json                      the summary as JSON on stdout\n"
    "  --quiet                     print nothing but errors and warnings\n"
    "  --progress                  a plain progress line per tensor on stderr (for logs; on a\n"
    "                              terminal a progress line is shown anyway)\n"
    "  --no-quality                skip the error figures (decode-back) for a faster run\n"
    "  --no-fallback               with a preset: refuse (exit 1, naming each tensor) instead of\n"
    "                              falling back to another type where rows do not divide its block\n"
    "  --mtp                       HF_DIR only, as convert's --mtp (Glm4MoeForCausalLM,\n"
    "                              Qwen3NextForCausalLM, the Qwen3.5 classes): the MTP\n"
    "                              layers with the embeddings, output norm and head; the\n"
    "                              bytes of convert --outtype auto --mtp + quantize; OUT\n"
    "                              defaults to HF_DIR/mtp-ggml-model-<TYPE>.gguf\n"
    "  --no-mtp, --no-nextn        HF_DIR only: those classes without their MTP layers\n"
    "                              (convert --no-mtp); other classes refuse both (exit 1)\n"
    "  --fp8-as-q8                 HF_DIR only: the bytes of convert --outtype auto --fp8-as-q8\n"
    "                              + quantize: the weights dequantized from FP8 come in as Q8_0,\n"
    "                              so a TYPE that changes them needs --allow-requantize (two\n"
    "                              quantization errors stack); Q8_0 keeps them as they are\n"
    "size target (instead of TYPE; OUT defaults to <IN's folder>/ggml-model-target.gguf,\n"
    "HF_DIR/ggml-model-target.gguf for a folder):\n"
    "  --target-size SIZE          the output file takes at most SIZE bytes (K/M/G: powers of\n"
    "                              1000, KiB/MiB/GiB: of 1024, as --split-max-size)\n"
    "  --target-bpw B              the output file takes at most B * parameters / 8 bytes\n"
    "                              Every tensor llama.cpp quantizes and no --tensor-type,\n"
    "                              --output-tensor-type or --token-embedding-type fixes gets\n"
    "                              the type, among all llama.cpp runs on the CPU (IQ1_S .. Q8_0,\n"
    "                              F16, BF16), that keeps the predicted error sum (W-Q)^2 m_j\n"
    "                              (m_j from --imatrix) least for the file: measured by\n"
    "                              encoding, chosen by convex hull + Lagrange multiplier, then\n"
    "                              the leftover bytes filled greedily. Without --imatrix the\n"
    "                              error is unweighted (RMS-norm weights where they feed the\n"
    "                              tensor) and types that need a matrix are left out. --pure:\n"
    "                              one type for all, the largest that fits. general.file_type\n"
    "                              is 1024 (guessed); quantize.target_size/_bpw are written.\n"
    "  --target-weights R=W,...    scale a role's predicted error (roles: token_embd, attn_q,\n"
    "                              attn_k, attn_v, attn_qkv, attn_kv_b, attn_output, ffn_up,\n"
    "                              ffn_gate, ffn_down, output, other)\n"
    "  --target-rows N             rows measured per tensor (default: every row of a tensor of\n"
    "                              up to 65536 values, else 1/32 of its rows, at least 65536\n"
    "                              values, spread evenly; 0: every row)\n"
    "  --plan-out FILE             write the chosen types as a --tensor-type-file that\n"
    "                              llama-quantize accepts (any preset TYPE then reproduces the\n"
    "                              tensors); with --dry-run, the plan prints per tensor the\n"
    "                              type, bytes and predicted error\n"
    "  --sensitivity FILE          measured error weights (from --measure) instead of the role\n"
    "                              weights: each tensor's own KL divergence (docs/SENSITIVITY.md)\n"
    "  --calibrate TEXT            measure them on TEXT first, then plan (--chunks, --ctx)\n"
    "  --verify TEXT               then run the forward pass on TEXT with the plan and with the\n"
    "                              largest preset's plan that fits, and keep the better (with\n"
    "                              --calibrate: on its text unless --verify names another)\n"
    "\n"
    "measuring (docs/SENSITIVITY.md):\n"
    "  anvil quantize --measure TEXT [--chunks N (4)] [--ctx N (256)] [--threads N]\n"
    "                 [--imatrix F] [--target-rows N] IN.gguf [-o OUT.sens (IN.gguf.sens)]\n"
    "                              per weight tensor the mean KL divergence of the output when\n"
    "                              it alone carries Q4_K's error (same bytes for any --threads)\n";

typedef struct qz_args {
    const char *pos[8];
    int n_pos;
    anvil_quantize_options o;
    anvil_transcode_rule *rules;
    size_t n_rules;
    anvil_kv_override kvs[QZ_MAX_LIST];
    size_t n_kvs;
    int32_t prune[QZ_MAX_LIST];
    size_t n_prune;
    const char *imatrix_path;
    const char *include[QZ_MAX_LIST];
    size_t n_include;
    const char *exclude[QZ_MAX_LIST];
    size_t n_exclude;
    int json, quiet, progress;
    const char *plan_out;
    /* sensitivity (cmd_quantize_sens.c): --measure, --calibrate, --sensitivity */
    const char *measure, *calibrate, *sens_path, *sens_out, *verify;
    unsigned long long chunks, sens_ctx;
    int mtp_only, no_mtp; /* convert's --mtp, --no-mtp (--no-nextn): HF_DIR only */
    int fp8_as_q8;        /* convert's --fp8-as-q8: HF_DIR only */
} qz_args;

/* A type given by an option must be one anvil can write. */
static int usable_type(anvil_ctx *ctx, const char *option, const char *name, uint32_t *out) {
    anvil_error err;
    if (anvil_type_from_name(ctx, name, out, &err) != ANVIL_OK) {
        return cli_usage_error("quantize", "%s '%s': %s", option, name, err.message);
    }
    if (*out == ANVIL_TYPE_F32 || *out == ANVIL_TYPE_F16 || *out == ANVIL_TYPE_BF16) return 0;
    const anvil_codec *c = anvil_ctx_codec(ctx, *out);
    anvil_type_info ti;
    const int known = anvil_type_builtin(*out, &ti, NULL) == ANVIL_OK;
    if (c == NULL) {
        return cli_usage_error("quantize", "%s '%s': not a weight format anvil can write here%s%s%s", option, name,
                               known && ti.family_plugin ? " (it comes with the " : "",
                               known && ti.family_plugin ? ti.family_plugin : "",
                               known && ti.family_plugin ? " plugin)" : "");
    }
    if (c->flags & ANVIL_CODEC_ACTIVATION) {
        return cli_usage_error("quantize", "%s '%s': an activation format, not a weight format", option, name);
    }
    return 0;
}

/* std::stoi's reading: white space, sign, digits, the rest ignored. */
static int stoi_like(const char *s, long *v) {
    char *end = NULL;
    while (*s == ' ' || (*s >= '\t' && *s <= '\r')) s++;
    if (!((*s >= '0' && *s <= '9') || ((*s == '-' || *s == '+') && s[1] >= '0' && s[1] <= '9'))) return 0;
    *v = strtol(s, &end, 10);
    return *v >= -2147483647L - 1 && *v <= 2147483647L;
}

static int parse_prune(qz_args *a, const char *list) {
    const char *p = list;
    for (;;) {
        const char *comma = strchr(p, ',');
        const size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char item[32];
        long v = -1;
        if (n < sizeof item) {
            memcpy(item, p, n);
            item[n] = '\0';
            if (!stoi_like(item, &v)) v = -1;
        }
        if (v < 0) {
            return cli_usage_error("quantize", "--prune-layers: invalid layer id '%.*s'", (int)(n > 30 ? 30 : n), p);
        }
        if (a->n_prune >= QZ_MAX_LIST)
            return cli_usage_error("quantize", "--prune-layers: more than %d layers", QZ_MAX_LIST);
        a->prune[a->n_prune++] = (int32_t)v;
        if (comma == NULL) break;
        p = comma + 1;
    }
    return 0;
}

/* An option that takes a value (v): 0, or a usage error's exit code. */
static int valued_option(anvil_ctx *ctx, qz_args *a, const char *o, const char *v) {
    int rc = 0;
    if (strcmp(o, "--output-tensor-type") == 0) {
        rc = usable_type(ctx, o, v, &a->o.output_tensor_type);
    } else if (strcmp(o, "--token-embedding-type") == 0) {
        rc = usable_type(ctx, o, v, &a->o.token_embedding_type);
    } else if (strcmp(o, "--tensor-type") == 0) {
        char *pat = NULL;
        uint32_t ty = 0;
        anvil_error err;
        if (anvil_quantize_parse_tensor_type(ctx, v, &pat, &ty, &err) != ANVIL_OK) {
            return cli_usage_error("quantize", "--tensor-type: %s", err.message);
        }
        anvil_transcode_rule *r = realloc(a->rules, (a->n_rules + 1) * sizeof *r);
        if (r == NULL) {
            free(pat);
            return 1;
        }
        a->rules = r;
        r[a->n_rules].pattern = pat;
        r[a->n_rules].type = ty;
        a->n_rules++;
        rc = usable_type(ctx, o, v + strlen(pat) + 1, &ty);
    } else if (strcmp(o, "--tensor-type-file") == 0) {
        void *text = NULL;
        size_t len = 0;
        anvil_error err;
        if (cli_read_file(v, &text, &len, &err) != ANVIL_OK) {
            return cli_usage_error("quantize", "--tensor-type-file: %s", err.message);
        }
        const size_t before = a->n_rules;
        const int prc = anvil_quantize_parse_tensor_type_file(ctx, text, len, &a->rules, &a->n_rules, &err);
        free(text);
        if (prc != ANVIL_OK) {
            return cli_usage_error("quantize", "--tensor-type-file %s: %s", v, err.message);
        }
        for (size_t k = before; rc == 0 && k < a->n_rules; ++k) {
            anvil_type_info ti;
            uint32_t ty;
            if (anvil_type_lookup(ctx, a->rules[k].type, &ti, NULL) == ANVIL_OK)
                rc = usable_type(ctx, o, ti.name, &ty);
        }
    } else if (strcmp(o, "--prune-layers") == 0) {
        rc = parse_prune(a, v);
    } else if (strcmp(o, "--override-kv") == 0) {
        anvil_error err;
        if (a->n_kvs >= QZ_MAX_LIST) return cli_usage_error("quantize", "more than %d --override-kv", QZ_MAX_LIST);
        if (anvil_kv_override_parse(v, &a->kvs[a->n_kvs], &err) != ANVIL_OK) {
            return cli_usage_error("quantize", "--override-kv: %s", err.message);
        }
        a->n_kvs++;
    } else if (strcmp(o, "--imatrix") == 0) {
        a->imatrix_path = v;
    } else if (strcmp(o, "--target-size") == 0) {
        unsigned long long sz = 0;
        if (cli_parse_size(v, &sz) != 0 || sz == 0) {
            return cli_usage_error("quantize",
                                   "invalid --target-size '%s' (a decimal byte count > 0, optionally with "
                                   "K/M/G/T, KiB/MiB/GiB/TiB suffixes; no spaces)",
                                   v);
        }
        a->o.target_size = sz;
    } else if (strcmp(o, "--target-bpw") == 0) {
        char *end = NULL;
        const double b = strtod(v, &end);
        if (end == v || *end != '\0' || !(b > 0.0) || !(b < 1e6)) {
            return cli_usage_error("quantize", "invalid --target-bpw '%s' (bits per weight > 0)", v);
        }
        a->o.target_bpw = b;
    } else if (strcmp(o, "--target-weights") == 0) {
        anvil_error err = { 0 };
        if (anvil_quantize_check_target_weights(v, &err) != ANVIL_OK) {
            return cli_usage_error("quantize", "invalid --target-weights '%s': %s", v, err.message);
        }
        a->o.target_weights = v;
    } else if (strcmp(o, "--target-rows") == 0) {
        unsigned long long n = 0;
        if (cli_parse_count(v, 0, UINT64_MAX, &n) != 0) {
            return cli_usage_error("quantize", "invalid --target-rows '%s' (a count; 0: every row)", v);
        }
        a->o.target_sample_rows = n == 0 ? UINT64_MAX : n;
    } else if (strcmp(o, "--plan-out") == 0) {
        a->plan_out = v;
    } else if (strcmp(o, "--measure") == 0) {
        a->measure = v;
    } else if (strcmp(o, "--calibrate") == 0) {
        a->calibrate = v;
    } else if (strcmp(o, "--sensitivity") == 0) {
        a->sens_path = v;
    } else if (strcmp(o, "--verify") == 0) {
        a->verify = v;
    } else if (strcmp(o, "--chunks") == 0 || strcmp(o, "--ctx") == 0) {
        unsigned long long n = 0;
        if (cli_parse_count(v, 1, strcmp(o, "--ctx") == 0 ? 1u << 20 : 1u << 16, &n) != 0 ||
            (strcmp(o, "--ctx") == 0 && n < 4)) {
            return cli_usage_error("quantize", "invalid %s '%s' (a count; --ctx at least 4)", o, v);
        }
        *(strcmp(o, "--ctx") == 0 ? &a->sens_ctx : &a->chunks) = n;
    } else if (strcmp(o, "--threads") == 0) {
        unsigned long long n = 0;
        if (cli_parse_count(v, 0, 1024, &n) != 0) return cli_usage_error("quantize", "invalid --threads '%s'", v);
        a->o.threads = (unsigned)n;
    } else if (strcmp(o, "--include-weights") == 0) {
        if (a->n_include >= QZ_MAX_LIST) return cli_usage_error("quantize", "too many --include-weights");
        a->include[a->n_include++] = v;
    } else if (strcmp(o, "--exclude-weights") == 0) {
        if (a->n_exclude >= QZ_MAX_LIST) return cli_usage_error("quantize", "too many --exclude-weights");
        a->exclude[a->n_exclude++] = v;
    } else if (strcmp(o, "--max-buffer-size") == 0) {
        if (atoi(v) <= 0) return cli_usage_error("quantize", "invalid --max-buffer-size '%s' (MiB, > 0)", v);
    } else {
        return cli_usage_error("quantize", "unknown option '%s'", o);
    }
    return rc;
}

/* The combinations of options that cannot go together, and the positionals. */
static int check_args(const qz_args *a) {
    if (a->n_include > 0 && a->n_exclude > 0) {
        return cli_usage_error("quantize", "--include-weights and --exclude-weights cannot be used together");
    }
    if (a->mtp_only && a->no_mtp) {
        return cli_usage_error("quantize", "--mtp and --no-mtp (--no-nextn) are mutually exclusive");
    }
    if ((a->mtp_only || a->no_mtp || a->fp8_as_q8) && (a->measure || a->calibrate || a->verify)) {
        return cli_usage_error("quantize", "--mtp, --no-mtp (--no-nextn) and --fp8-as-q8 shape the model converted "
                                           "from HF_DIR; --measure, --calibrate and --verify run IN itself: not "
                                           "together");
    }
    const int target = a->o.target_size > 0 || a->o.target_bpw > 0.0;
    if (a->o.target_size > 0 && a->o.target_bpw > 0.0) {
        return cli_usage_error("quantize", "give --target-size or --target-bpw, not both");
    }
    if (!target && (a->o.target_weights != NULL || (a->o.target_sample_rows != 0 && a->measure == NULL) ||
                    a->plan_out != NULL)) {
        return cli_usage_error("quantize", "--target-weights, --target-rows and --plan-out go with --target-size "
                                           "or --target-bpw");
    }
    if (a->measure != NULL) {
        if (target || a->calibrate || a->sens_path || a->verify) {
            return cli_usage_error("quantize", "--measure only measures: give --target-size/-bpw with "
                                               "--sensitivity FILE afterwards");
        }
        if (a->n_pos < 1 || a->n_pos > 2) return cli_usage_error("quantize", "--measure TEXT IN.gguf [OUT.sens]");
        return 0;
    }
    if ((a->calibrate || a->sens_path || a->verify) && !target) {
        return cli_usage_error("quantize",
                               "--calibrate, --sensitivity and --verify go with --target-size or --target-bpw");
    }
    if (a->calibrate && a->sens_path) {
        return cli_usage_error("quantize", "give --calibrate TEXT or --sensitivity FILE, not both");
    }
    if ((a->chunks || a->sens_ctx) && !a->calibrate && !a->verify) {
        return cli_usage_error("quantize", "--chunks and --ctx go with --measure, --calibrate or --verify");
    }
    if (target && a->o.no_fallback) {
        return cli_usage_error("quantize", "--no-fallback is for presets: a size target never falls back");
    }
    if (a->n_pos < (target ? 1 : 2)) {
        return cli_usage_error("quantize", a->n_pos == 0 ? (target ? "no IN.gguf given" : "no IN.gguf and TYPE given")
                                                         : "no TYPE given");
    }
    return 0;
}

static int parse_args(anvil_ctx *ctx, int argc, char **argv, qz_args *a) {
    anvil_quantize_options_init(&a->o);
    for (int i = 1; i < argc; ++i) {
        const char *o = argv[i];
        if (strncmp(o, "--", 2) != 0 || strcmp(o, "--") == 0) {
            if (strcmp(o, "--") == 0) {
                for (++i; i < argc; ++i) {
                    if (a->n_pos >= 8) return cli_usage_error("quantize", "unexpected argument '%s'", argv[i]);
                    a->pos[a->n_pos++] = argv[i];
                }
                break;
            }
            if (strcmp(o, "-o") == 0 && i + 1 < argc) {
                a->sens_out = argv[++i];
                continue;
            }
            if (a->n_pos >= 4) return cli_usage_error("quantize", "unexpected argument '%s'", o);
            a->pos[a->n_pos++] = o;
            continue;
        }
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (strcmp(o, "--leave-output-tensor") == 0) {
            a->o.leave_output_tensor = 1;
        } else if (strcmp(o, "--allow-requantize") == 0) {
            a->o.allow_requantize = 1;
        } else if (strcmp(o, "--pure") == 0) {
            a->o.pure = 1;
        } else if (strcmp(o, "--keep-split") == 0) {
            a->o.keep_split = 1;
        } else if (strcmp(o, "--dry-run") == 0) {
            a->o.dry_run = 1;
        } else if (strcmp(o, "--json") == 0) {
            a->json = 1;
        } else if (strcmp(o, "--quiet") == 0) {
            a->quiet = 1;
        } else if (strcmp(o, "--no-quality") == 0) {
            a->o.skip_quality = 1;
        } else if (strcmp(o, "--progress") == 0) {
            a->progress = 1;
        } else if (strcmp(o, "--no-fallback") == 0) {
            a->o.no_fallback = 1;
        } else if (strcmp(o, "--mtp") == 0) {
            a->mtp_only = 1;
        } else if (strcmp(o, "--no-mtp") == 0 || strcmp(o, "--no-nextn") == 0) {
            a->no_mtp = 1;
        } else if (strcmp(o, "--fp8-as-q8") == 0) {
            a->fp8_as_q8 = 1;
        } else if (v == NULL) {
            return cli_usage_error("quantize", "unknown option or missing value: '%s'", o);
        } else {
            i++;
            rc = valued_option(ctx, a, o, v);
        }
        if (rc != 0) return rc;
    }
    return check_args(a);
}

/* OUT's default, <dir>ggml-model-<what><ext>: dir is IN's folder for a
 * file (as llama-quantize), IN itself for a Hugging Face folder (where
 * convert_hf_to_gguf.py puts its default output: two sibling checkpoints
 * never write the same file); with --mtp <dir>mtp-ggml-model-<what><ext>
 * (convert's mtp- prefix: the draft never replaces the model). NULL when
 * out of memory. */
static char *default_out(const char *in, int mtp, const char *what, const char *ext) {
    size_t dir;
    const char *sep = "";
    if (cli_is_dir(in)) {
        dir = strlen(in);
        if (dir == 0 || in[dir - 1] != '/') sep = "/";
    } else {
        const char *slash = strrchr(in, '/');
        const char *bslash = strrchr(in, '\\');
        if (bslash != NULL && (slash == NULL || bslash > slash)) slash = bslash;
        dir = slash ? (size_t)(slash - in + 1) : 0;
    }
    const char *pre = mtp ? "mtp-" : "";
    const size_t n = dir + strlen(sep) + strlen(pre) + strlen("ggml-model-") + strlen(what) + strlen(ext) + 1;
    char *out = malloc(n);
    if (out != NULL) snprintf(out, n, "%.*s%s%sggml-model-%s%s", (int)dir, in, sep, pre, what, ext);
    return out;
}

/* IN [OUT] [NTHREADS] with a size target: a TYPE is a usage error. */
static int positional_target(qz_args *a, char **out) {
    const char *in = a->pos[0];
    int k = 1;
    for (int i = 1; i < a->n_pos && i < 3; ++i) {
        long n;
        if (anvil_quantize_preset_find(a->pos[i]) != NULL && !(i == a->n_pos - 1 && stoi_like(a->pos[i], &n))) {
            return cli_usage_error("quantize",
                                   "TYPE '%s' given with a size target: the target chooses every type; "
                                   "drop one or the other",
                                   a->pos[i]);
        }
    }
    if (a->n_pos > 1 && !(a->n_pos == 2 && stoi_like(a->pos[1], &(long){ 0 }))) {
        *out = strdup(a->pos[1]);
        k = 2;
    } else {
        *out = default_out(in, a->mtp_only, "target", ".gguf");
    }
    if (*out == NULL) return 1;
    if (a->n_pos > k) {
        long n;
        if (!stoi_like(a->pos[k], &n)) return cli_usage_error("quantize", "invalid nthread '%s'", a->pos[k]);
        a->o.threads = n > 0 ? (unsigned)(n > 1024 ? 1024 : n) : 0;
        k++;
    }
    if (a->n_pos > k) return cli_usage_error("quantize", "unexpected argument '%s'", a->pos[k]);
    return 0;
}

/* IN [OUT] TYPE [NTHREADS], as llama-quantize tells OUT from TYPE. */
static int positional(qz_args *a, char **out, const anvil_quantize_preset **preset) {
    const char *in = a->pos[0];
    int k = 1;
    *preset = anvil_quantize_preset_find(a->pos[1]);
    if (*preset != NULL) {
        *out = default_out(in, a->mtp_only, (*preset)->name, a->o.keep_split ? "" : ".gguf");
        if (*out == NULL) return 1;
        k = 2;
    } else {
        *out = strdup(a->pos[1]);
        if (*out == NULL) return 1;
        if (a->o.keep_split && strstr(*out, ".gguf") != NULL) (*out)[strlen(*out) - 5] = '\0';
        if (a->n_pos < 3) {
            const int rc = cli_usage_error("quantize", "'%s' is no TYPE (and no TYPE follows it)", a->pos[1]);
            print_presets(stderr);
            return rc;
        }
        *preset = anvil_quantize_preset_find(a->pos[2]);
        if (*preset == NULL) {
            const int rc = cli_usage_error("quantize", "invalid TYPE '%s'", a->pos[2]);
            print_presets(stderr);
            return rc;
        }
        k = 3;
    }
    if (a->n_pos > k) {
        long n;
        if (!stoi_like(a->pos[k], &n)) return cli_usage_error("quantize", "invalid nthread '%s'", a->pos[k]);
        a->o.threads = n > 0 ? (unsigned)(n > 1024 ? 1024 : n) : 0;
        k++;
    }
    if (a->n_pos > k) return cli_usage_error("quantize", "unexpected argument '%s'", a->pos[k]);
    return 0;
}

/* The target plan: per chosen tensor its type, bytes and predicted error. */
static void print_target(FILE *f, const anvil_transcode *t, const anvil_quantize_options *o, int dry_run) {
    anvil_transcode_summary s;
    anvil_transcode_get_summary(t, &s);
    uint64_t params = 0;
    double total = 0.0;
    for (size_t i = 0; i < anvil_transcode_count(t); ++i) params += anvil_transcode_tensor_at(t, i)->src->n_elements;
    fprintf(f, "%-40s %-8s %12s %14s\n", "tensor (chosen by the target)", "type", "bytes", "pred. error");
    for (size_t i = 0; i < anvil_transcode_count(t); ++i) {
        const anvil_transcode_tensor *it = anvil_transcode_tensor_at(t, i);
        double e = 0.0;
        if (it->rule == NULL || strncmp(it->rule, "--target-", 9) != 0) continue;
        anvil_quantize_predicted_error(t, i, &e);
        total += e;
        anvil_type_info ti;
        fprintf(f, "%-40s %-8s %12" PRIu64 " %14.6g\n", cli_esc(it->name),
                anvil_type_builtin(it->dst_type, &ti, NULL) == ANVIL_OK ? ti.name : "?", it->dst_bytes, e);
    }
    char target[64];
    if (o->target_size > 0) {
        snprintf(target, sizeof target, "--target-size %" PRIu64, o->target_size);
    } else {
        snprintf(target, sizeof target, "--target-bpw %g", o->target_bpw);
    }
    fprintf(f,
            "%s: %" PRIu64 " bytes (%.4f bpw of the file over %" PRIu64 " parameters), predicted error %.6g, "
            "general.file_type %u\n",
            target, s.out_file_bytes, params ? (double)s.out_file_bytes * 8.0 / (double)params : 0.0, params, total,
            s.file_type);
    (void)dry_run;
}

/* --keep-split names its parts only once the plan knows them: each part is
 * checked as OUT is without it (the library already refused a part that is
 * a part of the input GGUF; here the imatrix and a folder's files). */
static int parts_not_inputs(const anvil_transcode *t, const char *in, const char *imatrix, anvil_error *err) {
    anvil_transcode_summary s;
    anvil_transcode_get_summary(t, &s);
    int rc = ANVIL_OK;
    for (uint32_t p = 0; rc == ANVIL_OK && p < s.n_parts; ++p) {
        const char *part = anvil_transcode_part_path(t, p);
        if (cli_is_dir(in)) rc = anvil_hf_output_check(in, part, err);
        if (rc == ANVIL_OK) rc = anvil_output_check(part, &imatrix, imatrix != NULL, err);
    }
    return rc;
}

static void free_args(qz_args *a) { anvil_quantize_rules_free(a->rules, a->n_rules); }

static int load_imatrix(const qz_args *a, anvil_imatrix **im, anvil_error *err) {
    *im = NULL;
    if (a->imatrix_path == NULL) return ANVIL_OK;
    int rc = anvil_imatrix_load(im, a->imatrix_path, err);
    if (rc == ANVIL_OK) rc = anvil_imatrix_filter(*im, a->include, a->n_include, a->exclude, a->n_exclude, err);
    return rc;
}

static cli_sens_opts sens_opts(const qz_args *a) {
    cli_sens_opts so = { .chunks = a->chunks ? (size_t)a->chunks : 4,
                         .n_ctx = a->sens_ctx ? (size_t)a->sens_ctx : 256,
                         .progress = a->progress && !a->quiet && !a->json };
    return so;
}

/* anvil quantize --measure TEXT IN [OUT]: the sensitivity file only. */
static int measure_only(anvil_ctx *ctx, qz_args *a) {
    const char *in = a->pos[0];
    char *out = NULL;
    if (a->sens_out != NULL || a->n_pos == 2) {
        out = strdup(a->sens_out != NULL ? a->sens_out : a->pos[1]);
    } else {
        out = malloc(strlen(in) + 6);
        if (out != NULL) sprintf(out, "%s.sens", in);
    }
    anvil_error err = { 0 };
    anvil_imatrix *im = NULL;
    char *json = NULL;
    size_t len = 0;
    const cli_sens_opts so = sens_opts(a);
    int rc = out != NULL ? load_imatrix(a, &im, &err) : ANVIL_E_NOMEM;
    /* The candidates' relative errors, as --target-size measures them with
     * this importance matrix and --target-rows: stored in the file (version
     * 3) so that a plan with the same inputs measures nothing. */
    anvil_quantize_cache *errs = rc == ANVIL_OK ? anvil_quantize_cache_new() : NULL;
    if (rc == ANVIL_OK && errs == NULL) {
        snprintf(err.message, sizeof err.message, "out of memory");
        rc = err.code = ANVIL_E_NOMEM;
    }
    anvil_gguf *src = NULL;
    if (rc == ANVIL_OK) rc = anvil_gguf_open(&src, in, ctx, 0, &err);
    if (rc == ANVIL_OK) {
        anvil_quantize_options po;
        anvil_quantize_options_init(&po);
        po.imatrix = im;
        po.imatrix_path = a->imatrix_path;
        po.threads = a->o.threads;
        po.dry_run = 1;
        po.skip_quality = 1;
        po.target_size = (uint64_t)1 << 62; /* every candidate fits: measured, none chosen for */
        po.target_sample_rows = a->o.target_sample_rows;
        po.target_cache = errs;
        anvil_transcode *tp = NULL;
        rc = anvil_quantize_plan(&tp, ctx, src, "measure.gguf", &po, &err);
        anvil_transcode_free(tp);
    }
    anvil_gguf_close(src);
    if (rc == ANVIL_OK) rc = cli_sens_measure(ctx, in, a->measure, im, &so, errs, &json, &len, &err);
    anvil_quantize_cache_free(errs);
    if (rc == ANVIL_OK) rc = cli_write_file_atomic(out, json, len, &err);
    if (rc == ANVIL_OK && !a->quiet) printf("measured %s on %s: %s\n", in, a->measure, out);
    free(json);
    free(out);
    anvil_imatrix_free(im);
    return rc == ANVIL_OK ? 0 : cli_fail_err("quantize", &err);
}

/* --calibrate TEXT (measured now) or --sensitivity FILE into *s. */
static int load_sens(anvil_ctx *ctx, const qz_args *a, const anvil_imatrix *im, anvil_quantize_sens **s,
                     anvil_error *err) {
    void *data = NULL;
    size_t len = 0;
    int rc;
    if (a->calibrate != NULL) {
        const cli_sens_opts so = sens_opts(a);
        rc = cli_sens_measure(ctx, a->pos[0], a->calibrate, im, &so, NULL, (char **)&data, &len, err);
    } else {
        rc = cli_read_file(a->sens_path, &data, &len, err);
    }
    if (rc == ANVIL_OK) rc = anvil_quantize_sens_parse(s, data, len, err);
    if (rc != ANVIL_OK && a->sens_path != NULL) {
        char msg[sizeof err->message + 300];
        snprintf(msg, sizeof msg, "--sensitivity %.256s: %s", a->sens_path, err->message);
        const size_t n = strlen(msg) < sizeof err->message - 1 ? strlen(msg) : sizeof err->message - 1;
        memcpy(err->message, msg, n);
        err->message[n] = '\0';
    }
    free(data);
    return rc;
}

/* Is a's plan (types) the same as b's? */
static int same_types(const anvil_transcode *a, const anvil_transcode *b) {
    if (anvil_transcode_count(a) != anvil_transcode_count(b)) return 0;
    for (size_t i = 0; i < anvil_transcode_count(a); ++i) {
        if (anvil_transcode_tensor_at(a, i)->dst_type != anvil_transcode_tensor_at(b, i)->dst_type) return 0;
    }
    return 1;
}

#define QZ_VERIFY_MAX 12

/* The floors (bits per weight) of the target's variants --verify tries. */
static const double qz_floors[] = { 2.0, 2.5, 3.0 };
#define QZ_N_FLOORS (sizeof qz_floors / sizeof qz_floors[0])

/* Is tp the same file as one of plans[0..n)? */
static int seen(anvil_transcode *const *plans, size_t n, const anvil_transcode *tp) {
    for (size_t k = 0; k < n; ++k) {
        if (same_types(plans[k], tp)) return 1;
    }
    return 0;
}

/* --verify: the target plan *t, its variants with the candidate types
 * floored at qz_floors bits per weight, and the presets' plans of the
 * largest size that fits the budget (llama-quantize's presets, the same
 * options and importance matrix), by the forward pass's mean KL divergence
 * on TEXT (cli_sens_verify); *t becomes the best (ties: the earlier), and
 * *kept_preset names the preset when it is one. The verdict goes to info. */
static int verify_target(anvil_ctx *ctx, const qz_args *a, const anvil_quantize_options *o, const anvil_gguf *src,
                         const char *out, const anvil_imatrix *im, anvil_transcode **t,
                         const anvil_quantize_preset **kept_preset, FILE *info, anvil_error *err) {
    *kept_preset = NULL;
    const char *text = a->verify ? a->verify : a->calibrate;
    uint64_t budget = 0;
    int rc = anvil_quantize_target_info(*t, &budget);
    if (rc != ANVIL_OK) snprintf(err->message, sizeof err->message, "--verify: not a target plan");
    anvil_transcode *plans[QZ_VERIFY_MAX];
    const anvil_quantize_preset *which[QZ_VERIFY_MAX];
    double floor_of[QZ_VERIFY_MAX];
    uint64_t bytes[QZ_VERIFY_MAX];
    size_t n = 1;
    plans[0] = *t;
    which[0] = NULL;
    floor_of[0] = o->target_min_bpw;
    for (size_t f = 0; rc == ANVIL_OK && f < QZ_N_FLOORS; ++f) {
        if (qz_floors[f] <= o->target_min_bpw) continue;
        anvil_quantize_options po = *o;
        po.target_min_bpw = qz_floors[f];
        po.progress = NULL;
        anvil_transcode *tp = NULL;
        anvil_error pe = { 0 };
        if (anvil_quantize_plan(&tp, ctx, src, out, &po, &pe) != ANVIL_OK) continue; /* does not fit */
        if (seen(plans, n, tp)) {
            anvil_transcode_free(tp);
            continue;
        }
        which[n] = NULL;
        floor_of[n] = qz_floors[f];
        plans[n++] = tp;
    }
    const size_t n_target = n;
    uint64_t best = 0;
    for (size_t i = 0; rc == ANVIL_OK && i < anvil_quantize_preset_count(); ++i) {
        const anvil_quantize_preset *p = anvil_quantize_preset_at(i);
        if (!strcmp(p->name, "COPY") || !strcmp(p->name, "F32") || !strcmp(p->name, "F16") ||
            !strcmp(p->name, "BF16") || (p->desc != NULL && strncmp(p->desc, "alias for ", 10) == 0)) {
            continue;
        }
        anvil_quantize_options po = *o;
        po.ftype = p->ftype;
        po.target_size = 0;
        po.target_bpw = 0.0;
        po.target_weights = NULL;
        po.sensitivity = NULL;
        po.target_min_bpw = 0.0;
        po.target_cache = NULL;
        po.progress = NULL;
        anvil_transcode *tp = NULL;
        anvil_error pe = { 0 };
        if (anvil_quantize_plan(&tp, ctx, src, out, &po, &pe) != ANVIL_OK) continue; /* not for this model */
        anvil_transcode_summary s;
        anvil_transcode_get_summary(tp, &s);
        int keep = !s.needs_imatrix && s.out_file_bytes <= budget && s.out_file_bytes >= best;
        if (keep && s.out_file_bytes > best) { /* a larger size: the smaller ones go */
            for (size_t k = n_target; k < n; ++k) anvil_transcode_free(plans[k]);
            n = n_target;
            best = s.out_file_bytes;
        }
        if (keep && !seen(plans + n_target, n - n_target, tp) && n < QZ_VERIFY_MAX) {
            which[n] = p;
            floor_of[n] = 0.0;
            bytes[n] = s.out_file_bytes;
            plans[n++] = tp;
            tp = NULL;
        }
        anvil_transcode_free(tp);
    }
    double kld[QZ_VERIFY_MAX];
    if (rc == ANVIL_OK && n > 1) {
        const cli_sens_opts so = sens_opts(a);
        rc = cli_sens_verify(ctx, a->pos[0], text, im, &so, plans, n, kld, err);
    }
    size_t win = 0;
    for (size_t k = 1; rc == ANVIL_OK && k < n; ++k) {
        if (kld[k] < kld[win]) win = k;
    }
    if (rc == ANVIL_OK && info != NULL) {
        if (n == 1) {
            fprintf(info, "verify on %s: no variant and no preset's file to compare within %" PRIu64 " bytes\n", text,
                    budget);
        } else {
            fprintf(info, "verify on %s: KL divergence of the target's plan %.6g", text, kld[0]);
            for (size_t k = 1; k < n; ++k) {
                if (which[k] != NULL) {
                    fprintf(info, ", preset %s's (%" PRIu64 " bytes) %.6g", which[k]->name, bytes[k], kld[k]);
                } else {
                    fprintf(info, ", with types of >= %.1f bpw %.6g", floor_of[k], kld[k]);
                }
            }
            if (which[win] != NULL) {
                fprintf(info, ": preset %s's plan kept (llama-quantize %s's file)\n", which[win]->name,
                        which[win]->name);
            } else if (win > 0) {
                fprintf(info, ": the target's plan with types of >= %.1f bpw kept\n", floor_of[win]);
            } else {
                fprintf(info, ": the target's plan kept\n");
            }
        }
    }
    if (rc == ANVIL_OK && which[win] != NULL) {
        /* the preset's plan, made for real (not a dry run unless asked) */
        anvil_quantize_options po = *o;
        po.ftype = which[win]->ftype;
        po.target_size = 0;
        po.target_bpw = 0.0;
        po.target_weights = NULL;
        po.sensitivity = NULL;
        po.target_min_bpw = 0.0;
        po.target_cache = NULL;
        anvil_transcode *tp = NULL;
        rc = anvil_quantize_plan(&tp, ctx, src, out, &po, err);
        if (rc == ANVIL_OK) {
            anvil_transcode_free(*t);
            *t = tp;
            *kept_preset = which[win];
        }
    } else if (rc == ANVIL_OK && win > 0) {
        anvil_transcode_free(*t);
        *t = plans[win];
        plans[win] = NULL;
    }
    for (size_t k = 1; k < n; ++k) anvil_transcode_free(plans[k]);
    return rc;
}

int cmd_quantize(cli_globals *g, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) return cli_help("quantize");
    anvil_ctx *ctx = cli_ctx(g);
    if (ctx == NULL) return 1;
    qz_args *a = calloc(1, sizeof *a);
    if (a == NULL) return 1;
    char *out = NULL;
    const anvil_quantize_preset *preset = NULL;
    int rc = parse_args(ctx, argc, argv, a);
    if (rc == 0 && a->o.threads > 0) anvil_ctx_set_threads(ctx, a->o.threads);
    if (rc == 0 && a->measure != NULL) {
        rc = measure_only(ctx, a);
        free_args(a);
        free(a);
        return rc;
    }
    const int target = a->o.target_size > 0 || a->o.target_bpw > 0.0;
    if (rc == 0 && (a->mtp_only || a->no_mtp || a->fp8_as_q8) && !cli_is_dir(a->pos[0])) {
        rc = cli_usage_error("quantize",
                             "%s is for a Hugging Face folder (HF_DIR), as convert's; '%s' is no folder (a GGUF "
                             "is converted already: quantize it as it is)",
                             a->mtp_only ? "--mtp"
                             : a->no_mtp ? "--no-mtp (--no-nextn)"
                                         : "--fp8-as-q8",
                             a->pos[0]);
    }
    if (rc == 0) rc = target ? positional_target(a, &out) : positional(a, &out, &preset);
    int replaces = 0;
    const char *more[] = { a->imatrix_path };
    if (rc == 0 && !a->o.keep_split) rc = cli_output_not_input("quantize", out, a->pos[0], more, 1);
    if (rc == 0 && !a->o.dry_run && !a->o.keep_split) rc = cli_check_output("quantize", out, a->pos[0], &replaces);
    if (rc != 0) {
        free_args(a);
        free(a);
        free(out);
        return rc;
    }
    anvil_quantize_options *o = &a->o;
    o->ftype = target ? 0 : preset->ftype;
    o->only_copy = !target && strcmp(preset->name, "COPY") == 0;
    o->tensor_types = a->rules;
    o->n_tensor_types = a->n_rules;
    o->kv_overrides = a->kvs;
    o->n_kv_overrides = a->n_kvs;
    o->prune_layers = a->prune;
    o->n_prune_layers = a->n_prune;
    const char *in = a->pos[0];
    FILE *info = a->json || a->quiet ? NULL : stdout;

    anvil_error err = { 0 };
    anvil_imatrix *im = NULL;
    anvil_gguf *src = NULL;
    anvil_transcode *t = NULL;
    int status = ANVIL_OK;
    if (a->imatrix_path != NULL) {
        status = anvil_imatrix_load(&im, a->imatrix_path, &err);
        if (status == ANVIL_OK)
            status = anvil_imatrix_filter(im, a->include, a->n_include, a->exclude, a->n_exclude, &err);
        if (status == ANVIL_OK) {
            if (info) {
                fprintf(info, "loaded %zu importance matrix entries from %s computed on %d chunks%s\n",
                        anvil_imatrix_count(im), a->imatrix_path, (int)anvil_imatrix_chunk_count(im),
                        anvil_imatrix_is_legacy(im) ? " (legacy .dat)" : "");
            }
            if (anvil_imatrix_count(im) == 0) {
                fprintf(stderr, "anvil quantize: warning: no importance matrix entry is left after "
                                "--include/--exclude-weights: quantizing without one\n");
            }
            o->imatrix = im;
            o->imatrix_path = a->imatrix_path;
        }
    }
    cli_progress ps;
    cli_progress_init(&ps, a->progress, a->quiet || a->json);
    if (!o->dry_run && ps.mode != 0) {
        o->progress = cli_transcode_progress;
        o->progress_arg = &ps;
    }
    if (status == ANVIL_OK && cli_is_dir(in)) {
        /* a Hugging Face folder: converted (--outtype auto) tensor by tensor as the run reads it */
        anvil_hf_convert_options ho;
        anvil_hf_convert_options_init(&ho);
        ho.mtp_only = a->mtp_only;
        ho.no_mtp = a->no_mtp;
        ho.fp8_as_q8 = a->fp8_as_q8;
        status = anvil_hf_open_as_gguf_opts(ctx, in, &ho, &src, &err);
    } else if (status == ANVIL_OK) {
        status = anvil_gguf_open(&src, in, ctx, 0, &err);
    }
    anvil_quantize_sens *sens = NULL;
    if (status == ANVIL_OK && (a->calibrate || a->sens_path)) {
        status = load_sens(ctx, a, im, &sens, &err);
        o->sensitivity = sens;
    }
    if (status == ANVIL_OK && target && info) {
        if (sens != NULL) {
            fprintf(info, "error weights: measured (%s%s)%s\n", a->sens_path ? a->sens_path : "--calibrate ",
                    a->sens_path ? "" : a->calibrate,
                    anvil_quantize_sens_version(sens) >= 2
                        ? ", a response curve per tensor through two reference types"
                        : ", version 1 file: one reference type, error scaled linearly (measure again with "
                          "--measure for the two-point curve)");
        } else {
            fprintf(info, "error weights: role-weight proxy, no calibration text\n");
        }
    }
    anvil_quantize_cache *cache = NULL;
    if (status == ANVIL_OK && target && (a->verify || a->calibrate)) {
        cache = anvil_quantize_cache_new(); /* the variants measure nothing twice */
        o->target_cache = cache;
    }
    if (status == ANVIL_OK) status = anvil_quantize_plan(&t, ctx, src, out, o, &err);
    const anvil_quantize_preset *kept = NULL;
    if (status == ANVIL_OK && target && (a->verify || a->calibrate)) {
        status = verify_target(ctx, a, o, src, out, im, &t, &kept, info, &err);
    }
    if (status == ANVIL_OK && o->keep_split) status = parts_not_inputs(t, in, a->imatrix_path, &err);
    if (status == ANVIL_OK && a->plan_out != NULL) status = anvil_quantize_write_plan(t, a->plan_out, &err);
    if (status == ANVIL_OK && !o->dry_run) status = anvil_transcode_run(t, &err);
    cli_progress_end(&ps);
    if (status == ANVIL_OK) {
        anvil_transcode_summary s;
        anvil_transcode_get_summary(t, &s);
        if (a->json) {
            cli_transcode_json(stdout, t, &(cli_report){ ctx, in, o->dry_run, NULL, NULL });
        } else if (!a->quiet) {
            if (kept != NULL) {
                fprintf(stdout, "%s %s as %s (general.file_type %u): --verify kept the preset's plan\n",
                        o->dry_run ? "planned" : "quantized", in, kept->name, s.file_type);
            } else if (target) {
                print_target(stdout, t, o, o->dry_run);
            } else {
                fprintf(stdout, "%s %s as %s (general.file_type %u)%s\n", o->dry_run ? "planned" : "quantized", in,
                        preset->name, s.file_type, o->pure ? ", --pure" : "");
            }
            cli_transcode_report(stdout, t, &(cli_report){ ctx, in, o->dry_run, NULL, NULL });
            if (replaces) printf("note: %s was replaced (atomically) by the output\n", cli_esc(in));
        } else {
            for (size_t i = 0; i < anvil_transcode_warning_count(t); ++i) {
                fprintf(stderr, "anvil quantize: warning: %s\n", anvil_transcode_warning_at(t, i));
            }
        }
        if (o->dry_run && s.needs_imatrix) {
            fprintf(stderr, "anvil quantize: WARNING: the dry run completed, but actually quantizing will require "
                            "an importance matrix (--imatrix)\n");
        }
    }
    anvil_transcode_free(t);
    anvil_quantize_cache_free(cache);
    anvil_gguf_close(src);
    anvil_imatrix_free(im);
    anvil_quantize_sens_free(sens);
    free_args(a);
    free(a);
    free(out);
    return status == ANVIL_OK ? 0 : cli_fail_err("quantize", &err);
}
