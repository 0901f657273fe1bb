/* SPDX-License-Identifier: MIT */
/*
 * anvil merge-lora --from BASE.gguf --adapters FILE_OR_DIR --alpha A --out OUT.gguf [--dtype T]
 *
 * Fold LoRA adapters into a float base (anvil/transcode.h: anvil_lora_*),
 * streamed through the transcode engine: adapted tensors are rewritten
 * (and, with --dtype, encoded under the transcode policy), everything else
 * is copied or transcoded as `anvil transcode` would.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "anvil/transcode.h"
#include "cli.h"
#include "cli_gguf.h"
#include "cmd_transcode.h"

const char cli_help_merge_lora[] =
    "usage: anvil merge-lora --from BASE.gguf --adapters FILE_OR_DIR --alpha A --out OUT.gguf\n"
    "                        [--dtype T] [--threads N] [--dry-run] [--json] [--progress] [--quiet]\n"
    "\n"
    "W' = W + (alpha / r) * B * A for every weight the adapters change (r: the rank, from\n"
    "A's shape), computed in double and rounded once; the rest of the base is copied.\n"
    "\n"
    "  --adapters FILE_OR_DIR  a safetensors file, or a folder of them (e.g. PEFT's output)\n"
    "                          GGUF-named: '<tensor>.lora_a' [r, in] / '.lora_b' [out, r], as\n"
    "                          llama.cpp's LoRA adapters name them; PEFT-named:\n"
    "                          'base_model.model.<module>.lora_A.weight' / '.lora_B.weight',\n"
    "                          mapped to GGUF names by the llama map (model.layers.N -> blk.N,\n"
    "                          self_attn.{q,k,v,o}_proj -> attn_{q,k,v,output},\n"
    "                          mlp.{gate,up,down}_proj -> ffn_{gate,up,down}) or the gpt2 map\n"
    "                          (transformer.h.N -> blk.N, attn.c_attn -> attn_qkv, attn.c_proj\n"
    "                          -> attn_output, mlp.c_fc -> ffn_up, mlp.c_proj -> ffn_down).\n"
    "                          A PEFT tensor without lora_A/lora_B (a module saved whole, e.g.\n"
    "                          a classifier head) replaces the base tensor it maps to.\n"
    "  --alpha A               required: adapter files do not carry it (PEFT keeps lora_alpha\n"
    "                          in adapter_config.json)\n"
    "  --dtype T               also transcode the merged model's matrix weights to T, under\n"
    "                          `anvil transcode`'s policy (see anvil transcode --help)\n"
    "  --threads N             encoding threads (0: the config's [runtime] threads)\n"
    "  --dry-run               print the plan; write nothing\n"
    "  --json                  print the summary as JSON on stdout\n"
    "  --progress              a plain progress line per tensor on stderr (for logs)\n"
    "  --quiet                 print nothing but errors\n"
    "\n"
    "Every adapter tensor must match a base tensor of the right shape, or nothing is\n"
    "written and the error names it. Quantized base tensors are refused: merge on a\n"
    "float base (F32/F16/BF16), transcode afterwards. OUT is written atomically, or\n"
    "into it when it is '-' (stdout), a device or a FIFO (`anvil help`, files).\n";

static void print_targets(FILE *f, const anvil_lora *l) {
    fprintf(f, "adapters change %zu base tensors:\n", anvil_lora_target_count(l));
    for (size_t i = 0; i < anvil_lora_target_count(l); ++i) {
        anvil_lora_target tg;
        anvil_lora_target_at(l, i, &tg);
        if (tg.b_name == NULL) {
            fprintf(f, "  %-34s replaced by %s\n", tg.base_name, tg.a_name);
        } else {
            fprintf(f, "  %-34s rank %-4u scale %-10.6g %s\n", tg.base_name, tg.rank, tg.scale, tg.a_name);
        }
    }
}

int cmd_merge_lora(cli_globals *g, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) return cli_help("merge-lora");
    const char *from = NULL, *adapters = NULL, *out = NULL, *alpha_s = NULL, *dtype_s = NULL;
    int json = 0, quiet = 0, dry_run = 0, progress = 0;
    anvil_transcode_options opts;
    anvil_transcode_options_init(&opts);
    for (int i = 1; i < argc; ++i) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(o, "--from") == 0 && v) {
            from = argv[++i];
        } else if (strcmp(o, "--adapters") == 0 && v) {
            adapters = argv[++i];
        } else if (strcmp(o, "--out") == 0 && v) {
            out = argv[++i];
        } else if (strcmp(o, "--alpha") == 0 && v) {
            alpha_s = argv[++i];
        } else if (strcmp(o, "--dtype") == 0 && v) {
            dtype_s = argv[++i];
        } else if (strcmp(o, "--threads") == 0 && v) {
            char *end = NULL;
            const unsigned long n = strtoul(v, &end, 10);
            if (end == v || *end != '\0' || n > 1024 || v[0] == '-') {
                return cli_usage_error("merge-lora", "--threads '%s' is not a count from 0 to 1024", v);
            }
            opts.threads = (unsigned)n;
            ++i;
        } else if (strcmp(o, "--json") == 0) {
            json = 1;
        } else if (strcmp(o, "--quiet") == 0) {
            quiet = 1;
        } else if (strcmp(o, "--dry-run") == 0) {
            dry_run = 1;
        } else if (strcmp(o, "--progress") == 0) {
            progress = 1;
        } else {
            return cli_usage_error("merge-lora", "unknown or incomplete option '%s'", o);
        }
    }
    if (from == NULL || adapters == NULL || out == NULL) {
        return cli_usage_error("merge-lora", "--from, --adapters and --out are required");
    }
    if (alpha_s == NULL) {
        return cli_usage_error("merge-lora", "--alpha is required: adapter files do not carry it (PEFT keeps "
                                             "it as lora_alpha in adapter_config.json)");
    }
    char *end = NULL;
    const double alpha = strtod(alpha_s, &end);
    if (end == alpha_s || *end != '\0' || !isfinite(alpha)) {
        return cli_usage_error("merge-lora", "--alpha '%s' is not a finite number", alpha_s);
    }
    int same = 0;
    const int checked = cli_check_output("merge-lora", out, from, &same);
    if (checked != 0) return checked;
    anvil_ctx *ctx = cli_ctx(g);
    if (ctx == NULL) return 1;
    anvil_error err = { 0 };
    if (dtype_s != NULL && anvil_type_from_name(ctx, dtype_s, &opts.dtype, &err) != ANVIL_OK) {
        return cli_usage_error("merge-lora", "--dtype '%s': %s", dtype_s, err.message);
    }
    cli_progress pr;
    cli_progress_init(&pr, progress && !dry_run, quiet || json || dry_run);
    if (pr.mode != 0) {
        opts.progress = cli_transcode_progress;
        opts.progress_arg = &pr;
    }
    anvil_gguf *base = NULL;
    anvil_lora *lora = NULL;
    anvil_transcode *t = NULL;
    int rc = anvil_gguf_open(&base, from, ctx, 0, &err);
    if (rc == ANVIL_OK) rc = anvil_lora_open(&lora, adapters, &err);
    if (rc == ANVIL_OK) rc = anvil_lora_bind(lora, base, alpha, &err);
    if (rc == ANVIL_OK) {
        opts.hook = anvil_lora_hook(lora);
        rc = anvil_transcode_plan(&t, ctx, base, out, &opts, &err);
    }
    if (rc == ANVIL_OK && !dry_run) rc = anvil_transcode_run(t, &err);
    cli_progress_end(&pr);
    if (rc != ANVIL_OK) {
        anvil_transcode_free(t);
        anvil_lora_close(lora);
        anvil_gguf_close(base);
        return cli_fail_err("merge-lora", &err);
    }
    if (json) {
        cli_transcode_json(stdout, t, &(cli_report){ ctx, from, dry_run, NULL, NULL });
    } else if (!quiet) {
        print_targets(stdout, lora);
        cli_transcode_report(stdout, t, &(cli_report){ ctx, from, dry_run, NULL, NULL });
    }
    if (same && !json && !quiet && !dry_run) printf("note: %s was replaced (atomically) by the output\n", out);
    anvil_transcode_free(t);
    anvil_lora_close(lora);
    anvil_gguf_close(base);
    return 0;
}
