/*
 * anvil — command-line front end.
 *
 *   anvil [--config FILE] <command> [options]
 *
 * Subcommands are looked up in a table; each lives in its own cmd_*.c.
 * Commands whose file is not part of this build are linked weakly and
 * reported as unavailable instead of failing the link.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#pragma weak cmd_inspect
#pragma weak cmd_reemit
#pragma weak cmd_split
#pragma weak cmd_merge
#pragma weak cmd_transcode
#pragma weak cmd_merge_lora
#pragma weak cmd_quantize
#pragma weak cli_inspect_safetensors
#pragma weak cli_reemit_safetensors

int cmd_demo(cli_globals *g, int argc, char **argv);

typedef int (*cmd_fn)(cli_globals *, int, char **);

typedef struct command {
    const char *name;
    cmd_fn fn;
    const char *summary;
} command;

static const command commands[] = {
    { "plugins", cmd_plugins, "loaded plugins, backends, the kernel chosen per type, CPU features, failures" },
    { "codec", cmd_codec, "list formats; encode/decode raw f32 files" },
    { "bench", cmd_bench, "mat-vec throughput per type (and ggml's, when found)" },
    { "inspect", cmd_inspect, "describe a GGUF or safetensors file" },
    { "reemit", cmd_reemit, "read a GGUF/safetensors file and write it back through anvil's writer" },
    { "split", cmd_split, "split a GGUF file into llama.cpp-style parts" },
    { "merge", cmd_merge, "merge split GGUF parts into one file" },
    { "transcode", cmd_transcode, "quantize a float model's matrix weights into a block format" },
    { "quantize", cmd_quantize, "llama-quantize's job, byte for byte: presets, imatrix, fallbacks, overrides" },
    { "merge-lora", cmd_merge_lora, "fold LoRA adapters into a float base model" },
    { "demo", cmd_demo, "encode/decode an llm-like tensor with every loaded codec" },
};

static void usage(FILE *f) {
    fprintf(f,
            "usage: anvil [--config FILE] <command> [options]\n"
            "\n"
            "anvil reads and writes LLM model files (GGUF, safetensors), encodes and decodes\n"
            "ggml's block-quantization formats byte-for-byte, and runs quantized dot products.\n"
            "\n"
            "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; ++i) {
        fprintf(f, "  %-11s %s%s\n", commands[i].name, commands[i].summary,
                commands[i].fn ? "" : " (not in this build)");
    }
    fprintf(f,
            "\n"
            "global options:\n"
            "  --config FILE   configuration to use (default: $ANVIL_CONFIG, then the config\n"
            "                  next to the anvil library, then the installed one)\n"
            "  --version       print the version\n"
            "  --help          this text; `anvil <command> --help` for a command\n"
            "\n"
            "environment:\n"
            "  ANVIL_CONFIG    configuration file\n"
            "  ANVIL_CPU_MASK  hide CPU features, e.g. -avx512 or -avx512vnni,-avx2\n"
            "  ANVIL_LOG       error | warn (default) | info | debug | quiet\n"
            "  ANVIL_GGML_DIR  folder with ggml's libggml-base.so (for bench comparisons)\n");
}

int main(int argc, char **argv) {
    cli_globals g = { 0 };
    int i = 1;
    for (; i < argc; ++i) {
        const char *a = argv[i];
        if (strcmp(a, "--config") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "anvil: --config needs a file\n");
                return 2;
            }
            g.config_path = argv[++i];
        } else if (strncmp(a, "--config=", 9) == 0) {
            g.config_path = a + 9;
        } else if (strcmp(a, "--version") == 0) {
            printf("anvil %s (plugin ABI %d.%d)\n", anvil_version(), ANVIL_ABI_MAJOR, ANVIL_ABI_MINOR);
            return 0;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-') {
            fprintf(stderr, "anvil: unknown option '%s' (try anvil --help)\n", a);
            return 2;
        } else {
            break;
        }
    }
    if (i >= argc) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[i];
    for (size_t c = 0; c < sizeof commands / sizeof commands[0]; ++c) {
        if (strcmp(commands[c].name, name) == 0) {
            if (commands[c].fn == NULL) {
                fprintf(stderr, "anvil: '%s' is not part of this build\n", name);
                return 2;
            }
            int rc = commands[c].fn(&g, argc - i, argv + i);
            anvil_ctx_close(g.ctx);
            return rc;
        }
    }
    fprintf(stderr, "anvil: unknown command '%s' (try anvil --help)\n", name);
    return 2;
}
