/* SPDX-License-Identifier: MIT */
/*
 * anvil — command-line front end.
 *
 *   anvil [--config FILE] <command> [options]
 *
 * The command table is here, as git.c holds git's: main is the only file
 * that names every command; each lives in its own cmd_*.c, and the help,
 * the usage errors, the man page and the completion (cli_help.c,
 * cli_util.c) read the table main registers, so calls go one way: main ->
 * commands -> the shared plumbing. The exit codes and the error format are
 * the same for every command (cli.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The commands, in the order `anvil --help` lists them. A new command is
 * one row here, its cmd_<name>.c and its cli_help_<name> text. */
static const cli_command commands[] = {
    { "plugins", cmd_plugins, "loaded plugins, backends, the kernel chosen per type, CPU features, failures",
      cli_help_plugins },
    { "codec", cmd_codec, "list formats; encode/decode raw f32 files", cli_help_codec },
    { "bench", cmd_bench, "mat-vec throughput per type (and ggml's, when found)", cli_help_bench },
    { "inspect", cmd_inspect, "describe a GGUF or safetensors file (what can be read of a damaged one too)",
      cli_help_inspect },
    { "meta", cmd_meta, "get, set, delete or rename GGUF metadata without touching the tensor data", cli_help_meta },
    { "reemit", cmd_reemit, "read a GGUF/safetensors file and write it back through anvil's writer",
      cli_help_reemit },
    { "split", cmd_split, "split a GGUF file into llama.cpp-style parts", cli_help_split },
    { "merge", cmd_merge, "merge split GGUF parts into one file", cli_help_merge },
    { "transcode", cmd_transcode, "quantize a float model's matrix weights into a block format", cli_help_transcode },
    { "convert", cmd_convert, "a Hugging Face checkpoint folder to the GGUF convert_hf_to_gguf.py writes",
      cli_help_convert },
    { "quantize", cmd_quantize, "llama-quantize's job, byte for byte: presets, imatrix, fallbacks, overrides",
      cli_help_quantize },
    { "tokenize", cmd_tokenize, "text to token ids with a model's tokenizer, as llama.cpp's llama_tokenize",
      cli_help_tokenize },
    { "perplexity", cmd_perplexity, "perplexity and KL divergence on anvil's forward pass, as llama-perplexity",
      cli_help_perplexity },
    { "imatrix", cmd_imatrix, "llama-imatrix's importance matrix on anvil's forward pass; convert, merge, stats",
      cli_help_imatrix },
    { "merge-lora", cmd_merge_lora, "fold LoRA adapters into a float base model", cli_help_merge_lora },
    { "demo", cmd_demo, "encode/decode an llm-like tensor with every loaded codec; --model: the main job",
      cli_help_demo },
    { "help", cmd_help, "this overview, or a command's help", cli_help_help },
};

static const char main_intro[] =
    "usage: anvil [--config FILE] <command> [options]\n"
    "\n"
    "anvil reads and writes LLM model files (GGUF, safetensors), encodes and decodes\n"
    "ggml's block-quantization formats byte-for-byte, and runs quantized dot products.\n";


/* Commands that open a context only when a file needs a plugin: they still
 * read a config named explicitly (--config, $ANVIL_CONFIG) and refuse a
 * missing or broken one, instead of ignoring it. */
static int reads_config_lazily(const char *name) {
    static const char *const lazy[] = { "inspect", "meta", "reemit", "split", "merge" };
    for (size_t i = 0; i < sizeof lazy / sizeof lazy[0]; ++i) {
        if (strcmp(lazy[i], name) == 0) return 1;
    }
    return 0;
}

static int config_named(const cli_globals *g) {
    const char *env = getenv("ANVIL_CONFIG");
    return g->config_path != NULL || (env != NULL && *env != '\0');
}

int main(int argc, char **argv) {
    cli_globals g = { 0 };
    cli_set_commands(commands, sizeof commands / sizeof commands[0], main_intro);
    /* Under --json, every error is also a JSON document, even one found
     * before the command is known. */
    int json = 0;
    for (int k = 1; k < argc; ++k) {
        if (strcmp(argv[k], "--json") == 0) json = 1;
    }
    cli_set_json(json);
    int i = 1;
    for (; i < argc; ++i) {
        const char *a = argv[i];
        if (strcmp(a, "--config") == 0) {
            if (i + 1 >= argc) {
                return cli_usage_error("", "--config needs a file");
            }
            g.config_path = argv[++i];
        } else if (strncmp(a, "--config=", 9) == 0) {
            g.config_path = a + 9;
        } else if (strcmp(a, "--version") == 0) {
            printf("anvil %s (plugin ABI %d.%d)\n", anvil_version(), ANVIL_ABI_MAJOR, ANVIL_ABI_MINOR);
            return 0;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            cli_usage_main(stdout);
            return 0;
        } else if (a[0] == '-') {
            return cli_usage_error("", "unknown option '%s'", a);
        } else {
            break;
        }
    }
    if (i >= argc) {
        return cli_usage_error("", "no command given");
    }
    const cli_command *c = cli_find_command(argv[i]);
    if (c == NULL) {
        return cli_usage_error("", "unknown command '%s'", argv[i]);
    }
    cli_set_command_name(c->name);
    if (!json) {
        cli_stdout_guard();
    }
    if (reads_config_lazily(c->name) && config_named(&g) && !cli_wants_help(argc - i, argv + i) &&
        cli_ctx(&g) == NULL) {
        return CLI_EXIT_FAIL;
    }
    const int rc = c->fn(&g, argc - i, argv + i);
    anvil_ctx_close(g.ctx);
    if (fflush(stdout) != 0 && rc == 0) {
        fprintf(stderr, "anvil %s: writing the output failed\n", c->name);
        return CLI_EXIT_FAIL;
    }
    return rc;
}
