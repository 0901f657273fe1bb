/* SPDX-License-Identifier: MIT */
/*
 * Everything made from the help texts of the command table (main.c's,
 * read through cli_command_at, cli_util.c): `anvil --help`, `anvil help
 * [CMD]`, the man page (`anvil help --man FILE`, built into
 * share/man/man1/anvil.1) and the bash completion (`anvil help
 * --bash-completion FILE`); the synopsis after a usage error is cli_util.c's.
 * One text per command, so none of these can say something else than
 * --help. Below the commands: no file here names a command's function.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char cli_help_help[] = "usage: anvil help [COMMAND]\n"
                             "\n"
                             "Without COMMAND: the commands, global options, environment and exit codes.\n"
                             "With COMMAND: its help, the same as `anvil COMMAND --help`.\n"
                             "\n"
                             "  --man FILE              write the manual page (troff) made from these texts\n"
                             "  --bash-completion FILE  write the bash completion made from these texts\n";

static const char main_options[] =
    "global options:\n"
    "  --config FILE   configuration to use (default: $ANVIL_CONFIG, then the config\n"
    "                  next to the anvil library, then the installed one)\n"
    "  --version       print the version\n"
    "  --help          this text; `anvil help COMMAND` or `anvil COMMAND --help` for a command\n";

static const char main_environment[] =
    "environment:\n"
    "  ANVIL_CONFIG    configuration file\n"
    "  ANVIL_CPU_MASK  hide CPU features, e.g. -avx512 or -avx512vnni,-avx2\n"
    "  ANVIL_LOG       error | warn (default) | info | debug | quiet\n"
    "  ANVIL_GGML_DIR  folder with ggml's libggml-base.so (for bench comparisons)\n";

static const char main_files[] =
    "files:\n"
    "  Inputs are memory-mapped, so they must be regular files: a FIFO, a socket or a\n"
    "  device is refused at once (exit 1; copy it to a file first). An output that is\n"
    "  a regular file, or does not exist, is written to a temporary file next to it and\n"
    "  renamed into place when complete. An output that is a character or block device\n"
    "  or a FIFO (/dev/null, a named pipe) is written into, front to back, never\n"
    "  replaced; '-' (or /dev/stdout) is standard output, and the command's report then\n"
    "  goes to stderr (--json is refused). A write error there is exit 1 with the\n"
    "  system's reason (/dev/full: No space left on device). A FIFO output waits up to\n"
    "  10 s for its reader. A socket, a terminal, or a link through /proc to a file is\n"
    "  refused, and split sets (whose parts are renamed into place as one) need files.\n"
    "  A symbolic link to a device or FIFO is written through; a symbolic link to a\n"
    "  regular file, or a dangling one, is replaced by the new file (the link itself;\n"
    "  the file it pointed to is left unchanged).\n";

static const char main_exit[] = "exit status (every command):\n"
                                "  0  success\n"
                                "  1  the work failed: a bad or unreadable file, an I/O error, a format that cannot\n"
                                "     be encoded, a plugin that failed to load\n"
                                "  2  usage error: an unknown command or option, a missing or extra argument, a\n"
                                "     value that does not parse, an unknown type name\n"
                                "Errors are printed on stderr as \"anvil COMMAND: what went wrong\"; with --json\n"
                                "also as {\"schema_version\":1,\"command\":...,\"error\":{...}} on stdout.\n";

void cli_usage_main(FILE *f) {
    fprintf(f, "%s\ncommands:\n", cli_help_text(""));
    for (size_t i = 0; i < cli_command_count(); ++i) {
        fprintf(f, "  %-11s %s\n", cli_command_at(i)->name, cli_command_at(i)->summary);
    }
    fprintf(f, "\n%s\n%s\n%s\n%s", main_options, main_files, main_environment, main_exit);
}

/* ---- man page ------------------------------------------------------------------- */

/* A line of plain text as troff: backslashes escaped, '-' as a minus (so
 * options can be searched and copied), a leading '.' or '\'' defused. */
static void troff_line(FILE *f, const char *p, size_t n) {
    if (n > 0 && (p[0] == '.' || p[0] == '\'')) fputs("\\&", f);
    for (size_t i = 0; i < n; ++i) {
        if (p[i] == '\\') fputs("\\e", f);
        else if (p[i] == '-') fputs("\\-", f);
        else fputc(p[i], f);
    }
    fputc('\n', f);
}

/* A block of help text, verbatim (no fill): it is laid out for 80 columns. */
static void troff_block(FILE *f, const char *text) {
    fputs(".nf\n", f);
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        const size_t n = e != NULL ? (size_t)(e - p) : strlen(p);
        troff_line(f, p, n);
        p += n + (e != NULL);
    }
    fputs(".fi\n", f);
}

/* text without its first line (the section title of the main texts). */
static const char *after_first_line(const char *text) {
    const char *e = strchr(text, '\n');
    return e != NULL ? e + 1 : "";
}

static void write_man(FILE *f) {
    fprintf(f, ".\\\" Generated by `anvil help --man` from the --help texts; do not edit.\n");
    fprintf(f, ".TH ANVIL 1 \"\" \"anvil %s\" \"User Commands\"\n", anvil_version());
    fputs(".SH NAME\nanvil \\- read, write, inspect and quantize GGUF and safetensors model files\n", f);
    fputs(".SH SYNOPSIS\n.B anvil\n[\\fB\\-\\-config\\fR \\fIFILE\\fR] \\fICOMMAND\\fR [\\fIoptions\\fR]\n", f);
    fputs(".SH DESCRIPTION\n", f);
    troff_block(f, after_first_line(cli_help_text("")) + 1);
    fputs(".SH COMMANDS\n", f);
    for (size_t i = 0; i < cli_command_count(); ++i) {
        fprintf(f, ".SS %s\n", cli_command_at(i)->name);
        troff_block(f, cli_command_at(i)->help);
    }
    fputs(".SH OPTIONS\n", f);
    troff_block(f, after_first_line(main_options));
    fputs(".SH FILES\n", f);
    troff_block(f, after_first_line(main_files));
    fputs(".SH ENVIRONMENT\n", f);
    troff_block(f, after_first_line(main_environment));
    fputs(".SH EXIT STATUS\n", f);
    troff_block(f, after_first_line(main_exit));
    fputs(".SH JSON\nEvery --json document and its schema: JSON.md next to the CLI sources "
          "(host/cli/JSON.md).\n",
          f);
}

/* ---- bash completion ------------------------------------------------------------- */

/* Every "--option" in a help text, space-separated, each once; into out. */
static void options_of(const char *help, char *out, size_t cap) {
    size_t used = 0;
    out[0] = '\0';
    for (const char *p = help; (p = strstr(p, "--")) != NULL;) {
        if (p > help && (p[-1] == '-' || (p[-1] >= 'a' && p[-1] <= 'z'))) {
            p += 2;
            continue;
        }
        size_t n = 2;
        while ((p[n] >= 'a' && p[n] <= 'z') || (p[n] >= '0' && p[n] <= '9') || p[n] == '-') n++;
        if (n > 2 && p[n - 1] != '-') {
            char opt[64];
            snprintf(opt, sizeof opt, " %.*s ", (int)(n < 60 ? n : 60), p);
            char padded[8192];
            snprintf(padded, sizeof padded, " %s ", out);
            if (strstr(padded, opt) == NULL && used + n + 2 < cap) {
                used += (size_t)snprintf(out + used, cap - used, "%s%.*s", used ? " " : "", (int)n, p);
            }
        }
        p += n;
    }
}

/* Options whose value is a type name: "--opt T" or "--opt TYPE" in a help text. */
static void type_options_of(const char *help, char *out, size_t cap, size_t *used) {
    for (const char *p = help; (p = strstr(p, "--")) != NULL;) {
        size_t n = 2;
        while ((p[n] >= 'a' && p[n] <= 'z') || (p[n] >= '0' && p[n] <= '9') || p[n] == '-') n++;
        const char *v = p + n;
        const int is_type =
            (strncmp(v, " T", 2) == 0 && (v[2] == ' ' || v[2] == '\n' || v[2] == ']' || v[2] == '.')) ||
            (strncmp(v, " TYPE", 5) == 0 && (v[5] == ' ' || v[5] == '\n' || v[5] == ']'));
        if (n > 2 && is_type) {
            char opt[80];
            snprintf(opt, sizeof opt, "|%.*s|", (int)(n < 60 ? n : 60), p);
            char padded[4096];
            snprintf(padded, sizeof padded, "|%s|", out);
            if (strstr(padded, opt) == NULL && *used + n + 2 < cap) {
                *used += (size_t)snprintf(out + *used, cap - *used, "%s%.*s", *used ? "|" : "", (int)n, p);
            }
        }
        p += n;
    }
}

static void write_completion(FILE *f) {
    char types[4096] = "", type_opts[2048] = "", opts[4096];
    size_t used = 0, topts = 0;
    for (uint32_t id = 0; id < ANVIL_TYPE_GGML_COUNT; ++id) {
        anvil_type_info t;
        /* The types a model is stored in: float and block formats, not the
         * integer storage types. */
        if (anvil_type_builtin(id, &t, NULL) != ANVIL_OK) continue;
        const int wanted = t.is_quantized || id == ANVIL_TYPE_F32 || id == ANVIL_TYPE_F16 || id == ANVIL_TYPE_BF16;
        if (wanted && used + strlen(t.name) + 2 < sizeof types) {
            used += (size_t)snprintf(types + used, sizeof types - used, "%s%s", used ? " " : "", t.name);
        }
    }
    for (size_t i = 0; i < cli_command_count(); ++i)
        type_options_of(cli_command_at(i)->help, type_opts, sizeof type_opts, &topts);
    fputs("# bash completion for anvil -- generated by `anvil help --bash-completion` from the\n"
          "# --help texts; do not edit.\n"
          "_anvil() {\n"
          "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n",
          f);
    fprintf(f, "    local types=\"%s\"\n", types);
    fputs(
        "    local cmd=\"\" sub=\"\" i\n"
        "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
        "        case ${COMP_WORDS[i]} in\n"
        "            --config) ((i++)) ;;\n"
        "            -*) ;;\n"
        "            *) if [ -z \"$cmd\" ]; then cmd=${COMP_WORDS[i]}; elif [ -z \"$sub\" ]; then sub=${COMP_WORDS[i]}; fi ;;\n"
        "        esac\n"
        "    done\n",
        f);
    if (topts > 0) {
        fprintf(f, "    case $prev in\n        %s)\n", type_opts);
        fputs("            COMPREPLY=($(compgen -W \"$types\" -- \"$cur\")); return ;;\n    esac\n", f);
    }
    fputs("    if [ -z \"$cmd\" ]; then\n        COMPREPLY=($(compgen -W \"", f);
    for (size_t i = 0; i < cli_command_count(); ++i) fprintf(f, "%s ", cli_command_at(i)->name);
    fputs("--config --version --help\" -- \"$cur\"))\n        return\n    fi\n", f);
    fputs("    local opts=\"\" words=\"\" files=\"\"\n    case $cmd in\n", f);
    for (size_t i = 0; i < cli_command_count(); ++i) {
        options_of(cli_command_at(i)->help, opts, sizeof opts);
        fprintf(f, "        %s) opts=\"%s --help\" ;;\n", cli_command_at(i)->name, opts);
    }
    fputs("    esac\n", f);
    /* Words in first position after the command. */
    fputs("    case $cmd in\n"
          "        codec) [ -z \"$sub\" ] && words=\"list encode decode\"\n"
          "               [ \"$prev\" = encode ] || [ \"$prev\" = decode ] && words=$types ;;\n"
          "        meta) [ -z \"$sub\" ] && words=\"get set delete rename\" ;;\n"
          "        imatrix) [ -z \"$sub\" ] && words=\"convert merge stats\" && files=1 ;;\n"
          "        help) [ -z \"$sub\" ] && words=\"",
          f);
    for (size_t i = 0; i < cli_command_count(); ++i) fprintf(f, "%s ", cli_command_at(i)->name);
    fputs("\" ;;\n    esac\n"
          "    if [[ $cur == -* ]]; then\n"
          "        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
          "    elif [ -n \"$words\" ]; then\n"
          "        COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
          "        [ -n \"$files\" ] && COMPREPLY+=($(compgen -f -- \"$cur\"))\n"
          "    else\n"
          "        COMPREPLY=($(compgen -f -- \"$cur\"))\n"
          "    fi\n"
          "}\n"
          "complete -o filenames -F _anvil anvil\n",
          f);
}

/* ---- anvil help ------------------------------------------------------------------- */

static int write_generated(const char *what, const char *path, void (*gen)(FILE *)) {
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (f == NULL) return cli_fail("help", "cannot write %s to %s", what, path);
    gen(f);
    const int bad = ferror(f) != 0;
    if (f != stdout ? fclose(f) != 0 || bad : fflush(f) != 0 || bad) {
        return cli_fail("help", "writing %s to %s failed", what, path);
    }
    return 0;
}

int cmd_help(cli_globals *g, int argc, char **argv) {
    (void)g;
    if (argc == 1) {
        cli_usage_main(stdout);
        return 0;
    }
    const char *a = argv[1];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return cli_help("help");
    if (strcmp(a, "--man") == 0 || strcmp(a, "--bash-completion") == 0) {
        if (argc != 3) return cli_usage_error("help", "%s needs a FILE ('-' for stdout)", a);
        return a[2] == 'm' ? write_generated("the man page", argv[2], write_man)
                           : write_generated("the bash completion", argv[2], write_completion);
    }
    if (a[0] == '-') return cli_usage_error("help", "unknown option '%s'", a);
    if (argc > 2) return cli_usage_error("help", "one command at a time (got '%s' and '%s')", a, argv[2]);
    if (cli_find_command(a) == NULL) return cli_usage_error("help", "unknown command '%s'", a);
    return cli_help(a);
}
