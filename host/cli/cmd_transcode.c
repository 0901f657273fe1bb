/* SPDX-License-Identifier: MIT */
/*
 * anvil transcode --from IN.gguf --out OUT.gguf --dtype T [options]
 *
 * A thin front end over anvil/transcode.h: parse the options, plan, print the
 * plan (--dry-run) or run it with a progress line, then the report: what was
 * kept and why, the error of every converted tensor, a summary by type, the
 * speed and the peak memory. The report printers are shared with
 * merge-lora (cmd_transcode.h).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


#include "anvil/hf.h"
#include "anvil/quantize.h"
#include "anvil/transcode.h"
#include "cli.h"
#include "cli_gguf.h"
#include "cmd_transcode.h"
#include "ggml_oracle.h"
#include "transcode_compare.h"

#define MAX_RULES 256

const char cli_help_transcode[] =
    "usage: anvil transcode --from IN.gguf|HF_DIR --out OUT.gguf --dtype T [options]\n"
    "\n"
    "Quantize a float model's matrix weights into a block format, out of core: the\n"
    "output header is written first, then one tensor at a time is read, encoded on\n"
    "every core and written, so memory stays bounded by one tensor's output whatever\n"
    "the model's size. The output is identical for any number of threads.\n"
    "\n"
    "Policy (conservative: never silently degrade a model):\n"
    "  - only matrix weights change type: 2+ dims, name ending in .weight, no 'norm'\n"
    "    in the name; everything else is copied as it is;\n"
    "  - an already-quantized tensor is not requantized (two quantization errors would\n"
    "    stack): that is refused unless --allow-requantize; --dtype f16/f32 dequantizes;\n"
    "  - a tensor whose row length is not a multiple of the target's block keeps its\n"
    "    type (no silent fallback to another format) and is listed.\n"
    "\n"
    "options:\n"
    "  --from IN.gguf            input (part 1 of a split set: all parts are read), or a\n"
    "                            Hugging Face checkpoint folder, read as `anvil convert\n"
    "                            HF_DIR --outtype auto` would write it, converted tensor\n"
    "                            by tensor as it is encoded (no intermediate file; not\n"
    "                            with --vs-ggml)\n"
    "  --mtp                     --from HF_DIR only, as convert's --mtp (Glm4MoeForCausalLM,\n"
    "                            Qwen3NextForCausalLM, the Qwen3.5 classes): the MTP layers\n"
    "                            with the embeddings, output norm and head; the bytes of\n"
    "                            convert --outtype auto --mtp + transcode\n"
    "  --no-mtp, --no-nextn      --from HF_DIR only: those classes without their MTP layers\n"
    "                            (convert --no-mtp); other classes refuse both (exit 1)\n"
    "  --out OUT.gguf            output, written atomically (complete or not at all);\n"
    "                            '-' (stdout), a device or a FIFO is written into\n"
    "  --dtype T                 target for matrix weights (q4_K, q8_0, iq4_xs, f16, ...)\n"
    "  --ptqtp K                 PTQTP trit planes (K = 2 or 3) for the matrix weights: the\n"
    "                            same as --dtype ptqtpK (codec-ptqtp plugin). K = 2s or 3s:\n"
    "                            PTQTP-S (ptqtp2s/ptqtp3s), 9 or 27 levels as trit planes\n"
    "                            with 2-bit scales per 16 weights (3.4375 / 5.0625\n"
    "                            bits/weight; ptqtp2s is q3_K's size). --tensor-type rules\n"
    "                            still win, e.g. --tensor-type 'attn_v|output=q6_K'\n"
    "  --allow-requantize        let --dtype/--tensor-type requantize quantized tensors\n"
    "  --experts-dtype T         target for MoE expert tensors (*_exps.weight). Unlike\n"
    "                            --dtype it may requantize already-quantized experts:\n"
    "                            experts are where bytes cost most in decode bandwidth,\n"
    "                            and their redundancy keeps the added error's risk lowest\n"
    "  --tensor-type REGEX=T     tensors whose name matches REGEX (ECMAScript, as\n"
    "                            llama.cpp's; searched) get T; repeatable, first match\n"
    "                            wins, beats every other option. Read as llama-quantize\n"
    "                            reads it: REGEX ends at the first '=', lower-cased\n"
    "  --output-tensor-type T    type of output.weight\n"
    "  --token-embedding-type T  type of token_embd.weight\n"
    "  --split-max-size SIZE     write OUT-00001-of-0000N.gguf ... parts cut as llama.cpp's\n"
    "                            gguf-split cuts them (SIZE: 2G = 2e9 bytes, 500M, 4GiB)\n"
    "  --split-max-tensors N     the same with at most N tensors a part (gguf-split's\n"
    "                            --split-max-tensors)\n"
    "  --threads N               encoding threads (default: the config's [runtime] threads,\n"
    "                            0 there = every online CPU)\n"
    "  --dry-run                 print the per-tensor plan (type and bytes before -> after)\n"
    "                            and the final file size; write nothing\n"
    "  --no-quality              skip the error figures (decode-back) for a faster run\n"
    "  --compare                 afterwards, encode the converted tensors again in other\n"
    "                            formats and set their SNR next to the report's (default\n"
    "                            " CLI_COMPARE_DEFAULT "; another list: --compare-with)\n"
    "  --compare-with T1,T2,...  --compare with these formats\n"
    "  --vs-ggml                 afterwards, time ggml's reference encoders (from the ggml\n"
    "                            build found as for `anvil bench`) against anvil's on the\n"
    "                            same rows, one thread each, and check the bytes agree\n"
    "  --json                    print the summary as JSON on stdout\n"
    "  --quiet                   print nothing but errors\n"
    "  --progress                a plain progress line per tensor on stderr (for logs; on a\n"
    "                            terminal a progress line is shown anyway)\n"
    "\n"
    "general.file_type is set to llama.cpp's file type for the dominant output type\n"
    "and general.quantization_version to 2, as llama-quantize does; every other key\n"
    "is copied byte for byte.\n";

static int parse_type(anvil_ctx *ctx, const char *option, const char *name, uint32_t *out) {
    anvil_error err;
    if (anvil_type_from_name(ctx, name, out, &err) != ANVIL_OK) {
        return cli_usage_error("transcode", "%s '%s': %s", option, name, err.message);
    }
    return 0;
}

typedef struct tc_args {
    const char *from, *out;
    anvil_transcode_options opts;
    anvil_transcode_rule rules[MAX_RULES];
    int dry_run, json, quiet, vs_ggml, progress;
    int mtp_only, no_mtp; /* convert's --mtp, --no-mtp (--no-nextn): --from HF_DIR only */
    const char *ptqtp;    /* --ptqtp K (2, 3, 2s, 3s), or NULL */
    const char *compare;  /* --compare's type list, or NULL */
} tc_args;

/* --ptqtp K: the matrix type is ptqtpK, which the codec-ptqtp plugin defines. */
static int resolve_ptqtp(anvil_ctx *ctx, tc_args *a) {
    if (a->ptqtp == NULL) return 0;
    if (a->opts.dtype != ANVIL_TRANSCODE_NO_TYPE) {
        return cli_usage_error("transcode", "--ptqtp and --dtype both set the matrix type: give one "
                                            "(single tensors: --tensor-type REGEX=T)");
    }
    char name[16];
    snprintf(name, sizeof name, "ptqtp%s", a->ptqtp);
    anvil_error err;
    if (anvil_type_from_name(ctx, name, &a->opts.dtype, &err) != ANVIL_OK) {
        return cli_fail("transcode",
                        "--ptqtp %s: no loaded codec defines '%s'; load the codec-ptqtp plugin "
                        "([plugins] load in %s)",
                        a->ptqtp, name, anvil_ctx_config_path(ctx) ? anvil_ctx_config_path(ctx) : "the config");
    }
    return 0;
}

static int parse_args(anvil_ctx *ctx, int argc, char **argv, tc_args *a) {
    anvil_transcode_options_init(&a->opts);
    a->opts.rules = a->rules;
    for (int i = 1; i < argc; ++i) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        if (strcmp(o, "--from") == 0 && v) {
            a->from = v;
        } else if (strcmp(o, "--out") == 0 && v) {
            a->out = v;
        } else if (strcmp(o, "--dtype") == 0 && v) {
            if (parse_type(ctx, o, v, &a->opts.dtype)) return 2;
        } else if (strcmp(o, "--ptqtp") == 0 && v) {
            if (strcmp(v, "2") != 0 && strcmp(v, "3") != 0 && strcmp(v, "2s") != 0 && strcmp(v, "3s") != 0) {
                return cli_usage_error("transcode",
                                       "--ptqtp '%s': K is 2 or 3 (trit planes per weight), or 2s "
                                       "or 3s (the sub-scaled PTQTP-S formats)",
                                       v);
            }
            a->ptqtp = v;
        } else if (strcmp(o, "--compare-with") == 0 && v) {
            a->compare = v;
        } else if (strcmp(o, "--experts-dtype") == 0 && v) {
            if (parse_type(ctx, o, v, &a->opts.experts_dtype)) return 2;
        } else if (strcmp(o, "--output-tensor-type") == 0 && v) {
            if (parse_type(ctx, o, v, &a->opts.output_type)) return 2;
        } else if (strcmp(o, "--token-embedding-type") == 0 && v) {
            if (parse_type(ctx, o, v, &a->opts.token_embd_type)) return 2;
        } else if (strcmp(o, "--tensor-type") == 0 && v) {
            if (a->opts.n_rules >= MAX_RULES) {
                return cli_usage_error("transcode", "more than %d --tensor-type rules", MAX_RULES);
            }
            anvil_transcode_rule *r = &a->rules[a->opts.n_rules];
            char *pat = NULL;
            anvil_error perr;
            if (anvil_quantize_parse_tensor_type(ctx, v, &pat, &r->type, &perr) != ANVIL_OK) {
                return cli_usage_error("transcode", "--tensor-type %s", perr.message);
            }
            r->pattern = pat;
            a->opts.n_rules++;
        } else if (strcmp(o, "--split-max-size") == 0 && v) {
            unsigned long long s = 0;
            if (cli_parse_size(v, &s) != 0 || s == 0) {
                return cli_usage_error("transcode", "--split-max-size '%s' is not a positive size (e.g. 2G, 500M)",
                                       v);
            }
            a->opts.split_max_bytes = s;
        } else if (strcmp(o, "--split-max-tensors") == 0 && v) {
            unsigned long long n = 0;
            if (cli_parse_count(v, 1, INT32_MAX, &n) != 0) {
                return cli_usage_error("transcode", "--split-max-tensors '%s' is not a positive count (e.g. 128)", v);
            }
            a->opts.split_max_tensors = n;
        } else if (strcmp(o, "--threads") == 0 && v) {
            char *end = NULL;
            const unsigned long n = strtoul(v, &end, 10);
            if (end == v || *end != '\0' || n > 1024 || v[0] == '-') {
                return cli_usage_error("transcode", "--threads '%s' is not a count from 0 to 1024", v);
            }
            a->opts.threads = (unsigned)n;
        } else {
            takes = 0;
            if (strcmp(o, "--dry-run") == 0) {
                a->dry_run = 1;
            } else if (strcmp(o, "--no-quality") == 0) {
                a->opts.skip_quality = 1;
            } else if (strcmp(o, "--allow-requantize") == 0) {
                a->opts.allow_requantize = 1;
            } else if (strcmp(o, "--vs-ggml") == 0) {
                a->vs_ggml = 1;
            } else if (strcmp(o, "--compare") == 0) {
                if (a->compare == NULL) a->compare = CLI_COMPARE_DEFAULT;
            } else if (strcmp(o, "--json") == 0) {
                a->json = 1;
            } else if (strcmp(o, "--quiet") == 0) {
                a->quiet = 1;
            } else if (strcmp(o, "--progress") == 0) {
                a->progress = 1;
            } else if (strcmp(o, "--mtp") == 0) {
                a->mtp_only = 1;
            } else if (strcmp(o, "--no-mtp") == 0 || strcmp(o, "--no-nextn") == 0) {
                a->no_mtp = 1;
            } else {
                return cli_usage_error("transcode", "unknown or incomplete option '%s'", o);
            }
        }
        i += takes;
    }
    if (a->from == NULL || a->out == NULL) {
        return cli_usage_error("transcode", "--from and --out are required");
    }
    if (a->opts.split_max_tensors != 0 && a->opts.split_max_bytes != 0) {
        return cli_usage_error("transcode", "give --split-max-size or --split-max-tensors, not both (as gguf-split)");
    }
    if (a->mtp_only && a->no_mtp) {
        return cli_usage_error("transcode", "--mtp and --no-mtp (--no-nextn) are mutually exclusive");
    }
    const int prc = resolve_ptqtp(ctx, a);
    if (prc != 0) return prc;
    const anvil_transcode_options *p = &a->opts;
    if (p->dtype == ANVIL_TRANSCODE_NO_TYPE && p->experts_dtype == ANVIL_TRANSCODE_NO_TYPE &&
        p->output_type == ANVIL_TRANSCODE_NO_TYPE && p->token_embd_type == ANVIL_TRANSCODE_NO_TYPE &&
        p->n_rules == 0) {
        return cli_usage_error("transcode", "no target type: give --dtype or --ptqtp (or --experts-dtype, "
                                            "--tensor-type, --output-tensor-type, --token-embedding-type)");
    }
    return 0;
}

/* ---- report ------------------------------------------------------------------ */

/* "1.23 GB", "45.6 MB", "789 B": decimal units, as file sizes are quoted. */
static const char *human(uint64_t b, char *buf, size_t size) {
    if (b >= 1000000000ull) {
        snprintf(buf, size, "%.2f GB", b / 1e9);
    } else if (b >= 1000000ull) {
        snprintf(buf, size, "%.2f MB", b / 1e6);
    } else if (b >= 1000ull) {
        snprintf(buf, size, "%.2f KB", b / 1e3);
    } else {
        snprintf(buf, size, "%" PRIu64 " B", b);
    }
    return buf;
}

static const char *shape_str(const anvil_gguf_tensor *t, char *buf, size_t size) {
    size_t at = 0;
    at += (size_t)snprintf(buf + at, size - at, "[");
    for (uint32_t d = 0; d < t->n_dims && at < size; ++d) {
        at += (size_t)snprintf(buf + at, size - at, "%s%" PRIu64, d ? ", " : "", t->shape[d]);
    }
    if (at < size) snprintf(buf + at, size - at, "]");
    return buf;
}

static void fmt_snr(char *buf, size_t size, double snr) {
    if (isinf(snr)) {
        snprintf(buf, size, "exact");
    } else {
        snprintf(buf, size, "%.2f", snr);
    }
}

static int encoded(const anvil_transcode_tensor *it) { return it->why == ANVIL_TRANSCODE_CONVERT || it->rewritten; }

static void print_plan(FILE *f, const anvil_transcode *t, const anvil_ctx *ctx) {
    fprintf(f, "  %-34s %-16s %-7s    %-7s %11s    %11s  %s\n", "tensor", "shape", "from", "to", "bytes", "after",
            "why");
    for (size_t i = 0; i < anvil_transcode_count(t); ++i) {
        const anvil_transcode_tensor *it = anvil_transcode_tensor_at(t, i);
        char sh[96], b0[32], b1[32];
        const char *note = it->why == ANVIL_TRANSCODE_CONVERT ? it->rule : anvil_transcode_why_string(it->why);
        char extra[128] = "";
        if (it->why == ANVIL_TRANSCODE_KEEP_ROWS) {
            anvil_type_info ti;
            if (anvil_type_lookup(ctx, it->want_type, &ti, NULL) == ANVIL_OK) {
                snprintf(extra, sizeof extra, " (%" PRIu64 " is not a multiple of %s's %u)", it->row_len, ti.name,
                         ti.block_elems);
            }
        } else if (it->fallback_from != ANVIL_TRANSCODE_NO_TYPE) {
            snprintf(extra, sizeof extra, " (fallback from %s: rows of %" PRIu64 ")",
                     anvil_type_name(ctx, it->fallback_from), it->row_len);
        } else if (it->why == ANVIL_TRANSCODE_KEEP_QUANTIZED) {
            snprintf(extra, sizeof extra, " (%s asked for %s)", it->rule, anvil_type_name(ctx, it->want_type));
        }
        fprintf(f, "  %-34s %-16s %-7s -> %-7s %11s -> %11s  %s%s%s\n", it->name, shape_str(it->src, sh, sizeof sh),
                anvil_type_name(ctx, it->src_type), encoded(it) ? anvil_type_name(ctx, it->dst_type) : "(kept)",
                human(it->src_bytes, b0, sizeof b0), human(it->dst_bytes, b1, sizeof b1), note ? note : "", extra,
                it->rewritten ? " [rewritten]" : "");
    }
}

static void print_kept_lists(FILE *f, const anvil_transcode *t, const anvil_ctx *ctx) {
    const struct {
        anvil_transcode_why why;
        const char *title;
    } lists[] = {
        { ANVIL_TRANSCODE_KEEP_QUANTIZED,
          "kept as they are: already quantized; only --experts-dtype requantizes (two quantization "
          "errors would stack), copied verbatim" },
        { ANVIL_TRANSCODE_KEEP_ROWS, "kept in their type: row length not a multiple of the target's block" },
        { ANVIL_TRANSCODE_KEEP_SOURCE, "kept as they are: their type cannot be decoded to f32" },
    };
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; ++l) {
        int header = 0;
        for (size_t i = 0; i < anvil_transcode_count(t); ++i) {
            const anvil_transcode_tensor *it = anvil_transcode_tensor_at(t, i);
            if (it->why != lists[l].why) continue;
            if (!header) fprintf(f, "%s:\n", lists[l].title);
            header = 1;
            anvil_type_info ti;
            const int have = anvil_type_lookup(ctx, it->want_type, &ti, NULL) == ANVIL_OK;
            if (it->why == ANVIL_TRANSCODE_KEEP_ROWS && have) {
                fprintf(f, "  %-34s %-6s row length %" PRIu64 ", %s needs a multiple of %u\n", it->name,
                        anvil_type_name(ctx, it->src_type), it->row_len, ti.name, ti.block_elems);
            } else {
                fprintf(f, "  %-34s %-6s (%s asked for %s)\n", it->name, anvil_type_name(ctx, it->src_type),
                        it->rule ? it->rule : "?", have ? ti.name : "?");
            }
        }
    }
}

static void print_quality(FILE *f, const anvil_transcode *t, const anvil_ctx *ctx) {
    int any = 0;
    for (size_t i = 0; i < anvil_transcode_count(t); ++i) {
        const anvil_transcode_tensor *it = anvil_transcode_tensor_at(t, i);
        if (!it->has_quality) continue;
        if (!any) {
            fprintf(f, "quality of every encoded tensor (decode(encode(x)) against x):\n");
            fprintf(f, "  %-34s %-7s    %-7s %12s %12s %9s\n", "tensor", "from", "to", "RMSE", "max |err|", "SNR dB");
        }
        any = 1;
        char snr[32];
        fmt_snr(snr, sizeof snr, it->snr_db);
        fprintf(f, "  %-34s %-7s -> %-7s %12.4g %12.4g %9s\n", it->name, anvil_type_name(ctx, it->src_type),
                anvil_type_name(ctx, it->dst_type), it->rmse, it->max_abs, snr);
    }
    if (anvil_transcode_quality_count(t) > 0) {
        fprintf(f, "summary by target type:\n");
        fprintf(f, "  %-8s %8s %14s %12s %12s %9s\n", "type", "tensors", "elements", "RMSE", "max |err|", "SNR dB");
        for (size_t i = 0; i < anvil_transcode_quality_count(t); ++i) {
            anvil_transcode_quality q;
            anvil_transcode_quality_at(t, i, &q);
            char snr[32];
            fmt_snr(snr, sizeof snr, q.snr_db);
            fprintf(f, "  %-8s %8zu %14" PRIu64 " %12.4g %12.4g %9s\n", anvil_type_name(ctx, q.type), q.n_tensors,
                    q.n_elements, q.rmse, q.max_abs, snr);
        }
    }
}

void cli_transcode_report(FILE *f, const anvil_transcode *t, const cli_report *r) {
    const anvil_ctx *ctx = r->ctx;
    anvil_transcode_summary s;
    anvil_transcode_get_summary(t, &s);
    char a[32], b[32], c[32];
    if (r->dry_run) {
        fprintf(f, "plan for %s (%zu tensors; nothing written):\n", r->input, s.n_tensors);
        print_plan(f, t, ctx);
    } else {
        print_quality(f, t, ctx);
    }
    if (!r->dry_run && r->compare != NULL) cli_compare_print(f, r->compare, t, ctx);
    print_kept_lists(f, t, ctx);
    for (size_t i = 0; i < anvil_transcode_warning_count(t); ++i) {
        fprintf(f, "warning: %s\n", cli_esc(anvil_transcode_warning_at(t, i)));
    }
    fprintf(f, "input   %s: %zu tensors, %s of tensor data\n", r->input, s.n_tensors,
            human(s.src_tensor_bytes, a, sizeof a));
    fprintf(f, "output  %s%s: %s of tensor data, %s on disk in %u file%s; %zu tensors encoded\n",
            anvil_transcode_part_path(t, 0), s.n_parts > 1 ? " ..." : "", human(s.dst_tensor_bytes, b, sizeof b),
            human(s.out_file_bytes, c, sizeof c), s.n_parts, s.n_parts == 1 ? "" : "s", s.n_converted);
    if (s.file_type != UINT32_MAX) {
        fprintf(f, "        general.file_type = %u (dominant type %s), general.quantization_version = 2\n",
                s.file_type, anvil_type_name(ctx, s.dominant_type));
    }
    if (s.ran) {
        fprintf(f, "run     %.2f s, %.1f MB/s of source read, %u thread%s, peak RSS %.1f MB\n", s.seconds, s.mb_per_s,
                s.threads, s.threads == 1 ? "" : "s", s.peak_rss_bytes / 1e6);
    }
    if (r->cmp != NULL) {
        if (!r->cmp->ran) {
            fprintf(f, "vs ggml %s\n", r->cmp->note);
        } else {
            fprintf(f,
                    "vs ggml reference encoders (ggml_quantize_chunk) on the same rows (%zu tensors, %.1f MB of "
                    "source), one thread each:\n"
                    "        ggml %.1f MB/s, anvil %.1f MB/s (x%.2f); bytes %s\n",
                    r->cmp->tensors, r->cmp->src_bytes / 1e6, r->cmp->ggml_mb_per_s, r->cmp->anvil_mb_per_s,
                    r->cmp->ggml_mb_per_s > 0 ? r->cmp->anvil_mb_per_s / r->cmp->ggml_mb_per_s : 0,
                    r->cmp->mismatched == 0 ? "identical" : "DIFFER");
        }
    }
}

static void json_num(FILE *f, double v) {
    if (isfinite(v)) {
        fprintf(f, "%.17g", v);
    } else {
        fputs("null", f);
    }
}

/* The "outputs" array: each part's path, size and tensor count. */
static void json_outputs(FILE *f, const anvil_transcode *t, const anvil_transcode_summary *sum, int dry_run) {
    fprintf(f, ",\"outputs\":[");
    for (uint32_t p = 0; p < sum->n_parts; ++p) {
        size_t n = 0;
        for (size_t i = 0; i < anvil_transcode_count(t); ++i) n += anvil_transcode_tensor_at(t, i)->part == p;
        struct stat st;
        const char *path = anvil_transcode_part_path(t, p);
        fprintf(f, "%s{\"path\":", p ? "," : "");
        cli_json_string(f, path);
        fprintf(f, ",\"bytes\":");
        if (!dry_run && strcmp(path, "-") != 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            fprintf(f, "%llu", (unsigned long long)st.st_size);
        } else if (sum->n_parts == 1) {
            fprintf(f, "%" PRIu64, sum->out_file_bytes);
        } else {
            fputs("null", f);
        }
        fprintf(f, ",\"n_tensors\":%zu}", n);
    }
    fputc(']', f);
}

/* One element of the "tensors" array (i: its index). */
static void json_tensor(FILE *f, const anvil_ctx *ctx, const anvil_transcode *t, size_t i) {
    const anvil_transcode_tensor *it = anvil_transcode_tensor_at(t, i);
    fprintf(f, "%s{\"name\":", i ? "," : "");
    cli_json_string(f, it->name);
    fprintf(f, ",\"from\":\"%s\",\"to\":\"%s\",\"encoded\":%s,\"why\":", anvil_type_name(ctx, it->src_type),
            anvil_type_name(ctx, it->dst_type), encoded(it) ? "true" : "false");
    cli_json_string(f, anvil_transcode_why_string(it->why));
    fprintf(f, ",\"wanted\":");
    if (it->want_type == ANVIL_TRANSCODE_NO_TYPE) {
        fputs("null", f);
    } else {
        fprintf(f, "\"%s\"", anvil_type_name(ctx, it->want_type));
    }
    fprintf(f, ",\"rule\":");
    if (it->rule) {
        cli_json_string(f, it->rule);
    } else {
        fputs("null", f);
    }
    fprintf(f, ",\"rewritten\":%s,\"bytes_before\":%" PRIu64 ",\"bytes_after\":%" PRIu64 ",\"part\":%u",
            it->rewritten ? "true" : "false", it->src_bytes, it->dst_bytes, it->part + 1);
    if (it->fallback_from != ANVIL_TRANSCODE_NO_TYPE) {
        fprintf(f, ",\"fallback_from\":\"%s\"", anvil_type_name(ctx, it->fallback_from));
    }
    if (it->imatrix != NULL) {
        fprintf(f, ",\"imatrix\":");
        cli_json_string(f, it->imatrix_name);
    }
    double pe;
    if (anvil_quantize_predicted_error(t, i, &pe) == ANVIL_OK && it->rule != NULL &&
        strncmp(it->rule, "--target-", 9) == 0) {
        fprintf(f, ",\"predicted_error\":");
        json_num(f, pe);
    }
    if (it->has_quality) {
        fprintf(f, ",\"rmse\":");
        json_num(f, it->rmse);
        fprintf(f, ",\"max_abs_err\":");
        json_num(f, it->max_abs);
        fprintf(f, ",\"snr_db\":");
        json_num(f, it->snr_db);
    }
    fputc('}', f);
}

/* The "target" object of a --target-size/--target-bpw plan (nothing for
 * a preset): the budget, the summed predicted error, the planner's note. */
static void json_target(FILE *f, const anvil_transcode *t) {
    double pe;
    if (anvil_quantize_predicted_error(t, 0, &pe) != ANVIL_OK) return;
    uint64_t budget = 0;
    double total = 0.0;
    anvil_quantize_target_info(t, &budget);
    for (size_t i = 0; i < anvil_transcode_count(t); ++i) {
        if (anvil_quantize_predicted_error(t, i, &pe) == ANVIL_OK) total += pe;
    }
    fprintf(f, ",\"target\":{\"bytes\":%" PRIu64 ",\"predicted_error\":", budget);
    json_num(f, total);
    fprintf(f, ",\"note\":");
    if (anvil_quantize_target_note(t) != NULL) {
        cli_json_string(f, anvil_quantize_target_note(t));
    } else {
        fputs("null", f);
    }
    fputc('}', f);
}

void cli_transcode_json(FILE *f, const anvil_transcode *t, const cli_report *r) {
    const anvil_ctx *ctx = r->ctx;
    anvil_transcode_summary s;
    anvil_transcode_get_summary(t, &s);
    cli_json_begin(f, cli_command_name());
    fprintf(f, ",\"input\":");
    cli_json_string(f, r->input);
    json_outputs(f, t, &s, r->dry_run);
    fprintf(f, ",\"dry_run\":%s,\"tensors\":[", r->dry_run ? "true" : "false");
    for (size_t i = 0; i < anvil_transcode_count(t); ++i) json_tensor(f, ctx, t, i);
    fprintf(f, "],\"quality_by_type\":[");
    for (size_t i = 0; i < anvil_transcode_quality_count(t); ++i) {
        anvil_transcode_quality q;
        anvil_transcode_quality_at(t, i, &q);
        fprintf(f, "%s{\"type\":\"%s\",\"n_tensors\":%zu,\"elements\":%" PRIu64 ",\"rmse\":", i ? "," : "",
                anvil_type_name(ctx, q.type), q.n_tensors, q.n_elements);
        json_num(f, q.rmse);
        fprintf(f, ",\"max_abs_err\":");
        json_num(f, q.max_abs);
        fprintf(f, ",\"snr_db\":");
        json_num(f, q.snr_db);
        fputc('}', f);
    }
    fprintf(f,
            "],\"n_tensors\":%zu,\"n_encoded\":%zu,\"n_kept_quantized\":%zu,\"n_kept_rows\":%zu,"
            "\"n_kept_source\":%zu,\"src_tensor_bytes\":%" PRIu64 ",\"dst_tensor_bytes\":%" PRIu64
            ",\"out_file_bytes\":%" PRIu64 ",\"n_parts\":%u,\"dominant_type\":\"%s\",\"file_type\":",
            s.n_tensors, s.n_converted, s.n_kept_quantized, s.n_kept_rows, s.n_kept_source, s.src_tensor_bytes,
            s.dst_tensor_bytes, s.out_file_bytes, s.n_parts, anvil_type_name(ctx, s.dominant_type));
    if (s.file_type == UINT32_MAX) {
        fputs("null", f);
    } else {
        fprintf(f, "%u", s.file_type);
    }
    fprintf(f, ",\"n_fallback\":%zu,\"warnings\":[", s.n_fallback);
    for (size_t i = 0; i < anvil_transcode_warning_count(t); ++i) {
        if (i) fputc(',', f);
        cli_json_string(f, anvil_transcode_warning_at(t, i));
    }
    fprintf(f, "],\"threads\":%u", s.threads);
    json_target(f, t);
    if (s.ran) {
        fprintf(f, ",\"seconds\":");
        json_num(f, s.seconds);
        fprintf(f, ",\"mb_per_s\":");
        json_num(f, s.mb_per_s);
        fprintf(f, ",\"peak_rss_bytes\":%" PRIu64, s.peak_rss_bytes);
    }
    if (r->cmp != NULL) {
        fprintf(f, ",\"vs_ggml\":{\"ran\":%s,\"note\":", r->cmp->ran ? "true" : "false");
        cli_json_string(f, r->cmp->note);
        if (r->cmp->ran) {
            fprintf(f, ",\"n_tensors\":%zu,\"mismatched\":%zu,\"src_bytes\":%" PRIu64 ",\"ggml_mb_per_s\":",
                    r->cmp->tensors, r->cmp->mismatched, r->cmp->src_bytes);
            json_num(f, r->cmp->ggml_mb_per_s);
            fprintf(f, ",\"anvil_mb_per_s\":");
            json_num(f, r->cmp->anvil_mb_per_s);
        }
        fputc('}', f);
    }
    if (!r->dry_run && r->compare != NULL) {
        fprintf(f, ",\"compare\":");
        cli_compare_json(f, r->compare, t);
    }
    fprintf(f, "}\n");
}

/* ---- ggml comparison ------------------------------------------------------ */

static double now_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Up to this many elements of each converted tensor are timed. */
#define VS_GGML_MAX_ELEMS ((uint64_t)4 << 20)

static int vs_ggml(anvil_ctx *ctx, const anvil_transcode *t, cli_vs_ggml *res) {
    static ggml_oracle oracle;
    char why[2048];
    memset(res, 0, sizeof *res);
    if (ggml_oracle_open(&oracle, NULL, why, sizeof why) != 0) {
        snprintf(res->note, sizeof res->note, "ggml not found: %.2100s", why);
        return 0;
    }
    snprintf(res->note, sizeof res->note, "ggml %.1000s", oracle.dir);
    double t_ggml = 0, t_anvil = 0;
    for (size_t i = 0; i < anvil_transcode_count(t); ++i) {
        const anvil_transcode_tensor *it = anvil_transcode_tensor_at(t, i);
        if (it->why != ANVIL_TRANSCODE_CONVERT || it->n_rows == 0) continue;
        uint64_t rows = VS_GGML_MAX_ELEMS / it->row_len;
        if (rows == 0) rows = 1;
        if (rows > it->n_rows) rows = it->n_rows;
        const size_t n = (size_t)(rows * it->row_len);
        const size_t src_bytes = (size_t)(it->src_bytes / it->n_rows * rows);
        const size_t dst_bytes = (size_t)(it->dst_bytes / it->n_rows * rows);
        float *x = malloc(n * sizeof *x);
        unsigned char *a = malloc(dst_bytes + 1), *b = malloc(dst_bytes + 1);
        int ok = x && a && b && anvil_decode(ctx, it->src_type, it->src->data, src_bytes, x, n, NULL) == ANVIL_OK;
        if (ok) {
            if (oracle.quantize_init) oracle.quantize_init((int)it->dst_type);
            double t0 = now_sec();
            const size_t got =
                oracle.quantize_chunk((int)it->dst_type, x, b, 0, (int64_t)rows, (int64_t)it->row_len, NULL);
            double t1 = now_sec();
            ok = anvil_encode(ctx, it->dst_type, x, n, a, dst_bytes, NULL) == ANVIL_OK;
            double t2 = now_sec();
            if (ok && got == dst_bytes) {
                t_ggml += t1 - t0;
                t_anvil += t2 - t1;
                res->elements += n;
                res->src_bytes += src_bytes;
                res->tensors++;
                if (memcmp(a, b, dst_bytes) != 0) res->mismatched++;
            }
        }
        free(x);
        free(a);
        free(b);
    }
    res->ran = res->tensors > 0;
    res->ggml_mb_per_s = t_ggml > 0 ? res->src_bytes / 1e6 / t_ggml : 0;
    res->anvil_mb_per_s = t_anvil > 0 ? res->src_bytes / 1e6 / t_anvil : 0;
    return 0;
}

/* ---- progress ---------------------------------------------------------------- */

typedef struct progress_state {
    double last;
    int shown;
} progress_state;

static void progress_line(void *arg, const anvil_transcode_progress *p) {
    progress_state *ps = arg;
    const double now = p->seconds;
    if (now - ps->last < 0.1 && p->bytes_done < p->bytes_total) return;
    ps->last = now;
    ps->shown = 1;
    const double rate = now > 0 ? p->bytes_done / 1e6 / now : 0;
    const double left = rate > 0 ? (p->bytes_total - p->bytes_done) / 1e6 / rate : 0;
    fprintf(stderr, "\r\033[K  [%zu/%zu] %.1f%%  %.0f/%.0f MB  %.1f MB/s  ETA %.0fs  %s", p->tensor + 1, p->n_tensors,
            p->bytes_total ? 100.0 * p->bytes_done / p->bytes_total : 100.0, p->bytes_done / 1e6,
            p->bytes_total / 1e6, rate, left, cli_esc(p->name));
    fflush(stderr);
}

/* Nothing encoded is almost never what was meant: say why, loudly. */
static void warn_nothing_encoded(const anvil_transcode *t, const anvil_ctx *ctx, const char *from) {
    anvil_transcode_summary s;
    anvil_transcode_get_summary(t, &s);
    if (s.n_converted > 0) return;
    size_t rows = 0, policy = 0, same = 0, none = 0;
    uint32_t want = ANVIL_TRANSCODE_NO_TYPE;
    for (size_t i = 0; i < anvil_transcode_count(t); ++i) {
        const anvil_transcode_tensor *it = anvil_transcode_tensor_at(t, i);
        if (it->why == ANVIL_TRANSCODE_KEEP_ROWS) {
            rows++;
            want = it->want_type;
        }
        policy += it->why == ANVIL_TRANSCODE_KEEP_POLICY;
        same += it->why == ANVIL_TRANSCODE_KEEP_SAME;
        none += it->why == ANVIL_TRANSCODE_KEEP_NO_RULE;
    }
    fprintf(stderr, "anvil transcode: WARNING: 0 tensors encoded; the output holds the input's tensors as they "
                    "are. Why: ");
    if (rows > 0) {
        fprintf(stderr,
                "%zu matrix weight%s ha%s rows that are not a multiple of %s's block (transcode keeps "
                "their type)",
                rows, rows == 1 ? "" : "s", rows == 1 ? "s" : "ve", anvil_type_name(ctx, want));
    } else if (same > 0) {
        fprintf(stderr, "%zu matrix weight%s already in the target type", same, same == 1 ? " is" : "s are");
    } else if (none > 0) {
        fprintf(stderr, "no option gives a type to %zu matrix weight%s", none, none == 1 ? "" : "s");
    } else {
        fprintf(stderr, "the model has no matrix weights transcode may change (%zu tensors kept by policy)", policy);
    }
    fprintf(stderr,
            ".\nllama-quantize's policy falls back to a type that fits such rows: try `anvil quantize "
            "%s OUT.gguf Q4_K_M` (or another preset).\n",
            cli_esc(from));
}

int cmd_transcode(cli_globals *g, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) return cli_help("transcode");
    anvil_ctx *ctx = cli_ctx(g);
    if (ctx == NULL) return 1;
    tc_args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(ctx, argc, argv, &a);
    cli_compare cq; /* --compare: its types are checked before the run */
    memset(&cq, 0, sizeof cq);
    if (rc == 0 && a.compare != NULL) rc = cli_compare_parse(ctx, a.compare, &cq);
    if (rc != 0) {
        for (size_t i = 0; i < a.opts.n_rules; ++i) free((char *)a.rules[i].pattern);
        return rc;
    }
    const int from_dir = cli_is_dir(a.from);
    if (from_dir && a.vs_ggml) {
        rc = cli_usage_error("transcode",
                             "--vs-ggml reads the source file's bytes; with a Hugging Face folder "
                             "(%s) there is none: convert it first (anvil convert), or drop --vs-ggml",
                             a.from);
    }
    if (rc == 0 && !from_dir && (a.mtp_only || a.no_mtp)) {
        rc = cli_usage_error("transcode",
                             "%s is for a Hugging Face folder (--from HF_DIR), as convert's; '%s' is no folder (a "
                             "GGUF is converted already: transcode it as it is)",
                             a.mtp_only ? "--mtp" : "--no-mtp (--no-nextn)", a.from);
    }
    int same = 0;
    if (rc == 0) rc = cli_output_not_input("transcode", a.out, a.from, NULL, 0);
    if (rc == 0) rc = cli_check_output("transcode", a.out, a.from, &same);
    if (rc != 0) {
        for (size_t i = 0; i < a.opts.n_rules; ++i) free((char *)a.rules[i].pattern);
        return rc;
    }
    anvil_error err = { 0 };
    anvil_gguf *src = NULL;
    anvil_transcode *t = NULL;
    progress_state ps = { 0, 0 };
    cli_progress plain;
    if (a.progress && !a.dry_run) {
        cli_progress_init(&plain, 1, 0);
        a.opts.progress = cli_transcode_progress;
        a.opts.progress_arg = &plain;
    } else if (!a.quiet && !a.dry_run && isatty(fileno(stderr))) {
        a.opts.progress = progress_line;
        a.opts.progress_arg = &ps;
    }
    /* a Hugging Face folder: converted (--outtype auto) tensor by tensor as the run reads it */
    int status = from_dir ? anvil_hf_open_as_gguf_mtp(ctx, a.from, a.mtp_only, a.no_mtp, &src, &err)
                          : anvil_gguf_open(&src, a.from, ctx, 0, &err);
    if (status == ANVIL_OK) status = anvil_transcode_plan(&t, ctx, src, a.out, &a.opts, &err);
    if (status == ANVIL_OK && !a.dry_run) status = anvil_transcode_run(t, &err);
    if (ps.shown) fprintf(stderr, "\r\033[K");
    for (size_t i = 0; i < a.opts.n_rules; ++i) free((char *)a.rules[i].pattern);
    if (status != ANVIL_OK) {
        anvil_transcode_free(t);
        anvil_gguf_close(src);
        return cli_fail_err("transcode", &err);
    }
    cli_vs_ggml cmp;
    memset(&cmp, 0, sizeof cmp);
    if (a.vs_ggml && !a.dry_run) vs_ggml(ctx, t, &cmp);
    if (a.compare != NULL && !a.dry_run) {
        if (cli_compare_run(t, &cq, &err) != ANVIL_OK) {
            cli_compare_free(&cq);
            anvil_transcode_free(t);
            anvil_gguf_close(src);
            return cli_fail_err("transcode", &err);
        }
    }
    const cli_report rep = { ctx, a.from, a.dry_run, a.vs_ggml && !a.dry_run ? &cmp : NULL,
                             a.compare != NULL && !a.dry_run ? &cq : NULL };
    if (a.json) {
        cli_transcode_json(stdout, t, &rep);
    } else if (!a.quiet) {
        cli_transcode_report(stdout, t, &rep);
    }
    if (same && !a.json && !a.quiet && !a.dry_run)
        printf("note: %s was replaced (atomically) by the output\n", a.out);
    cli_compare_free(&cq);
    warn_nothing_encoded(t, ctx, a.from);
    anvil_transcode_free(t);
    anvil_gguf_close(src);
    return 0;
}
