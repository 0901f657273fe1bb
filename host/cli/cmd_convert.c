/* SPDX-License-Identifier: MIT */
/*
 * anvil convert HF_DIR [OUT.gguf] [options]
 *
 * convert_hf_to_gguf.py's job without Python: a Hugging Face checkpoint
 * folder to the GGUF it writes, byte for byte, with its option names and
 * defaults. The work is anvil_hf_convert (anvil/hf.h); this file parses the
 * command line and reports.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anvil/hf.h"
#include "cli.h"
#include "cli_gguf.h"

const char cli_help_convert[] =
    "usage: anvil convert HF_DIR [OUT.gguf] [--outtype f32|f16|bf16|q8_0|auto] [--vocab-only]\n"
    "                     [--split-max-size S | --split-max-tensors N] [--no-tensor-first-split]\n"
    "                     [--mtp | --no-mtp] [--fp8-as-q8] [--model-name NAME] [--metadata FILE.json]\n"
    "                     [--dry-run] [--json] [--progress] [--quiet]\n"
    "\n"
    "Convert a Hugging Face checkpoint folder (config.json, *.safetensors shards with\n"
    "model.safetensors.index.json, tokenizer files) to the GGUF llama.cpp's\n"
    "convert_hf_to_gguf.py writes from it with the same options, byte for byte.\n"
    "Architectures: LlamaForCausalLM, MistralForCausalLM, MixtralForCausalLM,\n"
    "Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM,\n"
    "Gemma2ForCausalLM, Gemma3ForCausalLM, Phi3ForCausalLM, GptOssForCausalLM,\n"
    "DeepseekV3ForCausalLM, Glm4MoeForCausalLM, Qwen3NextForCausalLM,\n"
    "Qwen3_5ForCausalLM, Qwen3_5MoeForCausalLM (and the text model of their\n"
    "*ForConditionalGeneration checkpoints); F32, F16 and BF16 weights, block-\n"
    "scaled FP8 ones (quantization_config fp8 with *_scale_inv tensors, dequantized\n"
    "in f32) and gpt-oss's MXFP4 experts (kept MXFP4).\n"
    "\n"
    "  OUT.gguf                 the output (also --outfile); {ftype} becomes the output\n"
    "                           type in lower case, {FTYPE} in upper case; a folder: the\n"
    "                           default name in it. Default: HF_DIR/<Name>-<size>-<TYPE>.gguf,\n"
    "                           named as convert_hf_to_gguf.py names it\n"
    "  --outtype T              f32, f16, bf16, q8_0, or auto (default): bf16 or f16 after\n"
    "                           the checkpoint's first matrix. Norms, biases and other 1-D\n"
    "                           tensors stay F32; q8_0 falls back to F16 for rows that are not\n"
    "                           a multiple of 32\n"
    "  --vocab-only             metadata and tokenizer only, no tensors\n"
    "  --mtp                    Glm4MoeForCausalLM, Qwen3NextForCausalLM and the Qwen3.5\n"
    "                           classes: the multi-token-prediction (MTP) layers only, with\n"
    "                           the embeddings, output norm and head (a speculative draft);\n"
    "                           default name HF_DIR/mtp-<Name>-<TYPE>.gguf\n"
    "  --no-mtp, --no-nextn     those classes without their MTP layers (block_count and\n"
    "                           nextn_predict_layers as without them); other classes refuse\n"
    "                           both, as convert_hf_to_gguf.py does\n"
    "  --fp8-as-q8              tensors made from a weight dequantized from FP8 (one with a\n"
    "                           *_scale_inv; stacked experts: the layer's last expert tensor\n"
    "                           read decides) are written Q8_0 whatever --outtype is (1-D ones\n"
    "                           and norms stay F32, rows not a multiple of 32 F16);\n"
    "                           general.file_type stays --outtype's, as convert_hf_to_gguf.py\n"
    "                           writes it\n"
    "  --split-max-size S       start a new part when the next tensor would take a part's\n"
    "                           tensor bytes over S (K, M, G = 1e3, 1e6, 1e9 bytes)\n"
    "  --split-max-tensors N    at most N tensors a part\n"
    "  --no-tensor-first-split  part 1 holds the metadata only\n"
    "  --model-name NAME        general.name\n"
    "  --metadata FILE.json     general.* overrides, as convert_hf_to_gguf.py reads them\n"
    "  --dry-run                print the plan (files, tensors, bytes); write nothing\n"
    "  --json                   print the report as JSON on stdout\n"
    "  --progress               a plain progress line per tensor on stderr (for logs)\n"
    "  --quiet                  no progress, no report\n"
    "\n"
    "Parts of a split are named OUT-00001-of-0000N.gguf. Outputs appear atomically\n"
    "(a split set as one step); on any error nothing is written. Refused, naming the\n"
    "file and tensor: a folder without config.json or weights, an unsupported\n"
    "architecture, a shard the index names but that is missing, a tensor in no shard\n"
    "or in two, a shape config.json contradicts, NaN or Inf in a weight, a README.md\n"
    "model card whose front matter gives a key the converter uses in a form anvil\n"
    "does not read (it reads strings and lists of strings).\n";

typedef struct convert_args {
    const char *dir, *out;
    anvil_hf_convert_options o;
    cli_write_flags f;
} convert_args;

static int take_value(int argc, char **argv, int *i, const char **v) {
    if (*i + 1 >= argc) return cli_usage_error("convert", "%s needs a value", argv[*i]);
    *v = argv[++*i];
    return 0;
}

static int parse_split(const char *opt, const char *v, convert_args *a) {
    unsigned long long n = 0;
    if (strcmp(opt, "--split-max-size") == 0) {
        if (strcmp(v, "0") != 0 && (cli_parse_size(v, &n) != 0 || n == 0)) {
            return cli_usage_error("convert", "--split-max-size '%s' is not a size (e.g. 2G, 500M)", v);
        }
        a->o.split_max_size = n;
    } else {
        if (cli_parse_count(v, 0, INT32_MAX, &n) != 0) {
            return cli_usage_error("convert", "--split-max-tensors '%s' is not a count", v);
        }
        a->o.split_max_tensors = n;
    }
    return 0;
}

static int parse_args(int argc, char **argv, convert_args *a) {
    for (int i = 1; i < argc; ++i) {
        const char *o = argv[i], *v = NULL;
        int rc = 0;
        if (strcmp(o, "--outtype") == 0) {
            rc = take_value(argc, argv, &i, &a->o.outtype);
            if (rc == 0 && strcmp(a->o.outtype, "f32") && strcmp(a->o.outtype, "f16") &&
                strcmp(a->o.outtype, "bf16") && strcmp(a->o.outtype, "q8_0") && strcmp(a->o.outtype, "auto")) {
                return cli_usage_error("convert", "--outtype '%s': give f32, f16, bf16, q8_0 or auto", a->o.outtype);
            }
        } else if (strcmp(o, "--outfile") == 0) {
            rc = take_value(argc, argv, &i, &a->out);
        } else if (strcmp(o, "--split-max-size") == 0 || strcmp(o, "--split-max-tensors") == 0) {
            rc = take_value(argc, argv, &i, &v);
            if (rc == 0) rc = parse_split(o, v, a);
        } else if (strcmp(o, "--model-name") == 0) {
            rc = take_value(argc, argv, &i, &a->o.model_name);
        } else if (strcmp(o, "--metadata") == 0) {
            rc = take_value(argc, argv, &i, &a->o.metadata_path);
        } else if (strcmp(o, "--vocab-only") == 0) {
            a->o.vocab_only = 1;
        } else if (strcmp(o, "--mtp") == 0) {
            a->o.mtp_only = 1;
        } else if (strcmp(o, "--no-mtp") == 0 || strcmp(o, "--no-nextn") == 0) {
            a->o.no_mtp = 1;
        } else if (strcmp(o, "--fp8-as-q8") == 0) {
            a->o.fp8_as_q8 = 1;
        } else if (strcmp(o, "--no-tensor-first-split") == 0) {
            a->o.no_tensor_first_split = 1;
        } else if (strcmp(o, "--dry-run") == 0) {
            a->o.dry_run = 1;
        } else if (cli_write_flag(o, &a->f)) {
            continue;
        } else if (o[0] == '-' && o[1] != '\0') {
            return cli_usage_error("convert", "unknown option '%s'", o);
        } else if (a->dir == NULL) {
            a->dir = o;
        } else if (a->out == NULL) {
            a->out = o;
        } else {
            return cli_usage_error("convert", "unexpected argument '%s' (needs HF_DIR and OUT.gguf only)", o);
        }
        if (rc != 0) return rc;
    }
    if (a->dir == NULL) return cli_usage_error("convert", "no HF_DIR given");
    if (a->o.mtp_only && a->o.no_mtp) {
        return cli_usage_error("convert", "--mtp and --no-mtp (--no-nextn) are mutually exclusive");
    }
    if (a->o.vocab_only && (a->o.split_max_size || a->o.split_max_tensors || a->o.no_tensor_first_split)) {
        return cli_usage_error("convert", "--vocab-only writes one file: it cannot be split");
    }
    return 0;
}

static void report(const convert_args *a, const anvil_hf_convert_result *r) {
    if (a->f.json) {
        cli_json_begin(stdout, "convert");
        printf(",\"input\":");
        cli_json_string(stdout, a->dir);
        printf(",\"dry_run\":%s,\"architecture\":\"%s\",\"ftype\":\"%s\",\"n_tensors\":%zu"
               ",\"parameters\":%" PRId64 ",\"tokenizer\":%s,\"outputs\":[",
               a->o.dry_run ? "true" : "false", r->arch, r->ftype, r->n_tensors, r->total_params,
               r->has_tokenizer ? "true" : "false");
        for (uint32_t p = 0; p < r->n_parts; ++p) {
            printf("%s{\"path\":", p ? "," : "");
            cli_json_string(stdout, r->outputs[p].path);
            printf(",\"bytes\":%" PRIu64 ",\"n_tensors\":%zu}", r->outputs[p].bytes, r->outputs[p].n_tensors);
        }
        printf("]}\n");
        return;
    }
    printf("%s %s: %s, %zu tensors, %" PRId64 " parameters, %s, %" PRIu32 " file%s, %" PRIu64 " bytes\n",
           a->o.dry_run ? "would write" : "wrote", cli_esc(r->out_path), r->arch, r->n_tensors, r->total_params,
           r->ftype, r->n_parts, r->n_parts == 1 ? "" : "s", r->bytes);
}

int cmd_convert(cli_globals *g, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) return cli_help("convert");
    convert_args a;
    memset(&a, 0, sizeof a);
    anvil_hf_convert_options_init(&a.o);
    const int prc = parse_args(argc, argv, &a);
    if (prc != 0) return prc;
    a.o.outfile = a.out;
    anvil_ctx *ctx = cli_ctx(g); /* its codecs (q8_0) and threads */
    if (ctx == NULL) return CLI_EXIT_FAIL;
    cli_progress progress;
    cli_progress_init(&progress, a.f.progress && !a.o.dry_run, a.f.quiet || a.f.json || a.o.dry_run);
    a.o.progress = progress.mode ? cli_gguf_progress : NULL;
    a.o.progress_arg = &progress;
    anvil_hf_convert_result r;
    anvil_error err = { 0 };
    const int rc = anvil_hf_convert(ctx, a.dir, &a.o, &r, &err);
    cli_progress_end(&progress);
    if (rc != ANVIL_OK) return cli_fail_err("convert", &err);
    if (!r.has_tokenizer && !a.f.quiet) {
        fprintf(stderr,
                "anvil convert: warning: no tokenizer KVs were written (this build has no tokenizer "
                "reader): llama.cpp cannot load %s\n",
                cli_esc(r.out_path));
    }
    if (!a.f.quiet || a.f.json || a.o.dry_run) report(&a, &r);
    anvil_hf_convert_result_free(&r);
    return 0;
}
