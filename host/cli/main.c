/* SPDX-License-Identifier: MIT */
/*
 * anvil — command-line front end.
 *
 *   anvil [--config FILE] <command> [options]
 *
 * Subcommands are looked up in the table of cli_help.c; each lives in its
 * own cmd_*.c. The exit codes and the error format are the same for every
 * command (cli.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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
