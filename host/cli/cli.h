/* SPDX-License-Identifier: MIT */
/*
 * The `anvil` command: shared state, the plumbing every subcommand uses, and
 * the subcommand table's type (the table itself is main.c's).
 *
 * Each subcommand lives in its own cmd_<name>.c and has the signature
 *     int cmd_<name>(cli_globals *g, int argc, char **argv);
 * where argv[0] is the subcommand name. Its help text is one string,
 * cli_help_<name>, that starts with the "usage:" lines (the synopsis, up to
 * the first blank line): `--help`, `anvil help <name>`, the synopsis printed
 * after a usage error, the man page and the bash completion all come from
 * that one string (cli_help.c, cli_util.c), so they cannot drift apart.
 *
 * Exit codes, the same for every command:
 *   0  success
 *   1  the command line was fine but the work failed: a bad or unreadable
 *      file, an I/O error, a format that cannot be encoded, a plugin that
 *      failed to load
 *   2  usage error: the command line itself is wrong (unknown command or
 *      option, a missing or extra argument, a value that does not parse, an
 *      unknown type name, a bad regex); the message says what, then the
 *      synopsis follows
 * Every error goes to stderr as "anvil <cmd>: <what went wrong>" on its first
 * line; under --json the same error is also printed on stdout as
 * {"schema_version":1,"command":...,"error":{...}} (host/cli/JSON.md).
 */
#ifndef ANVIL_CLI_H
#define ANVIL_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "anvil/anvil.h"

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

/* The version of the JSON documents every command prints (JSON.md). */
#define CLI_JSON_SCHEMA_VERSION 1

typedef struct cli_globals {
    const char *config_path; /* --config, or NULL */
    anvil_ctx *ctx;          /* opened on first use by cli_ctx() */
} cli_globals;

/* The context for this run (opened on first call from --config /
 * ANVIL_CONFIG / the default). NULL after printing the error. */
anvil_ctx *cli_ctx(cli_globals *g);

/* ---- errors ---------------------------------------------------------------- */

/* Print "anvil <cmd>: <message>" on stderr (and the JSON error under
 * --json); returns 1 (CLI_EXIT_FAIL). */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same for an anvil_error: "anvil <cmd>: <message> (<status name>)". */
int cli_fail_err(const char *cmd, const anvil_error *err);
/* A usage error: "anvil <cmd>: <message>" on stderr, then the command's
 * synopsis and where to find the full help; returns 2 (CLI_EXIT_USAGE).
 * cmd may be "codec encode": the synopsis is the first word's. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- help ------------------------------------------------------------------ */

/* True when argv has --help or -h. */
int cli_wants_help(int argc, char **argv);
/* Print cmd's help text on stdout; returns 0. */
int cli_help(const char *cmd);
/* cmd's help text, "" the global usage (NULL when there is no such command). */
const char *cli_help_text(const char *cmd);

/* ---- JSON ------------------------------------------------------------------ */

/* --json was given: errors are printed as JSON on stdout too. main() turns
 * it on when --json is among a command's arguments. */
void cli_set_json(int on);
int cli_json_enabled(void);
/* The command being run ("inspect", "merge-lora", ...; main() sets it). */
const char *cli_command_name(void);
void cli_set_command_name(const char *name);
/* "ANVIL_E_IO" for ANVIL_E_IO: the status's name alone (a static string). */
const char *cli_status_name(int code);
/* Start a command's JSON document: `{"schema_version":1,"command":"<cmd>"`
 * (the caller continues with ,"key":value ... and closes it with "}\n"). */
void cli_json_begin(FILE *f, const char *cmd);
/* A JSON string from bytes that may hold NULs or invalid UTF-8 (an invalid
 * byte becomes U+FFFD), so the output is always valid JSON. */
void cli_json_bytes(FILE *f, const char *p, size_t len);
/* The same for a C string (NULL prints null). */
void cli_json_string(FILE *f, const char *s);
/* A double as JSON: NaN and infinities (which JSON lacks) as null. */
void cli_json_number(FILE *f, double v);
/* `,"key":` and v printed with fmt (a printf conversion for one double, e.g.
 * "%.4f"), or null when v is NaN or infinite (a time of 0, a ratio with
 * nothing to divide by). */
void cli_json_member_number(FILE *f, const char *key, const char *fmt, double v);

/* ---- text ------------------------------------------------------------------ */

/* Terminal-safe text: bytes copied except control bytes (C0, DEL, C1),
 * invalid UTF-8, bidirectional overrides and the backslash, which become
 * \xNN, \u{NNNN} or \\; so a name read from a file can neither move the
 * cursor nor send an escape sequence to the terminal, and a NUL inside it
 * stays visible. */
void cli_text_bytes(FILE *f, const char *p, size_t len);
/* The same into buf (always NUL-terminated; cut with "..." when it does not
 * fit); returns buf, for use in printf column formats. */
const char *cli_text_esc(char *buf, size_t cap, const char *p, size_t len);
/* cli_text_esc of a C string, into a small rotating buffer (8 slots of 512
 * bytes: at most 8 uses per printf call). */
const char *cli_esc(const char *s);

/* From here on, stdout is text for a terminal: every control byte (but
 * newline and tab), invalid UTF-8 byte, C1 control and bidirectional
 * override printed is shown escaped, whatever printed it. main() installs
 * it unless --json is given (JSON escapes those itself). */
void cli_stdout_guard(void);

/* ---- files and values ------------------------------------------------------ */

/* Read a whole file into memory / write atomically (temp + rename). */
int cli_read_file(const char *path, void **data, size_t *size, anvil_error *err);
int cli_write_file_atomic(const char *path, const void *data, size_t size, anvil_error *err);

/* Parse a byte size like "2G", "500M", "4GiB", "123456". Returns 0 on success. */
int cli_parse_size(const char *s, unsigned long long *out);
/* Parse a whole decimal count in [min, max]. Returns 0 on success. */
int cli_parse_count(const char *s, unsigned long long min, unsigned long long max, unsigned long long *out);

/* An output path for `cmd`: refused (usage error, returns 2) when it names a
 * directory or its folder does not exist; returns 0 when fine, and sets
 * *same_as_input when it is the same regular file as `input` (may be NULL).
 * "-" (or /dev/stdout, /dev/fd/1): the file goes to standard output, so from
 * here on everything the command prints on stdout goes to stderr, and
 * --json is refused (usage error). A device, a FIFO or a socket is the
 * library's to write into or refuse (host/src/base/atomic_file.h). */
int cli_check_output(const char *cmd, const char *output, const char *input, int *same_as_input);
/* 1 when path is a folder (a Hugging Face checkpoint, for quantize and transcode). */
int cli_is_dir(const char *path);
/* 0, or the command's error (exit 1) when out is in, a file of the folder
 * in, or one of more[] (cli_outcheck.c). */
int cli_output_not_input(const char *cmd, const char *out, const char *in, const char *const *more, size_t n_more);
/* The same for a split set's OUT_PREFIX: standard output is refused. */
int cli_check_prefix(const char *cmd, const char *prefix);

/* Progress of a long write: on a TTY (stderr) a self-erasing line, with
 * --progress a plain line per step for logs, otherwise nothing. */
typedef struct cli_progress {
    int mode; /* 0 off, 1 TTY line, 2 plain lines */
    double start, last;
    int shown;
    size_t last_step;   /* plain lines: one per step */
    size_t steps_total; /* the last step's total, counted in every mode */
} cli_progress;
/* mode from --progress (forced) / --quiet / the TTY-ness of stderr. */
void cli_progress_init(cli_progress *p, int forced, int quiet);
/* Step `done` of `total` (1-based) with a label; bytes may be 0 if unknown. */
void cli_progress_step(cli_progress *p, size_t done, size_t total, unsigned long long bytes_done,
                       unsigned long long bytes_total, const char *label);
/* Erase the TTY line, if one is shown. */
void cli_progress_end(cli_progress *p);

/* ---- subcommands ----------------------------------------------------------- */

typedef int (*cli_cmd_fn)(cli_globals *, int, char **);
typedef struct cli_command {
    const char *name;
    cli_cmd_fn fn;
    const char *summary;
    const char *help; /* the command's cli_help_<name> */
} cli_command;
/* The table is main.c's (as git.c holds git's); main registers it, with
 * the global usage text, before anything else runs, and the help, the
 * usage errors, the man page and the completion read it here
 * (cli_util.c), so no file below main.c names a command's function. */
void cli_set_commands(const cli_command *table, size_t n, const char *usage);
size_t cli_command_count(void);
/* Entry i of the table; NULL past its end. */
const cli_command *cli_command_at(size_t i);
const cli_command *cli_find_command(const char *name);

/* `anvil help [CMD]`, `anvil help --man`, `anvil help --bash-completion`. */
int cmd_help(cli_globals *g, int argc, char **argv);
/* The global usage (anvil --help). */
void cli_usage_main(FILE *f);

int cmd_plugins(cli_globals *g, int argc, char **argv);
int cmd_codec(cli_globals *g, int argc, char **argv);
int cmd_bench(cli_globals *g, int argc, char **argv);
int cmd_inspect(cli_globals *g, int argc, char **argv);
int cmd_meta(cli_globals *g, int argc, char **argv);
int cmd_reemit(cli_globals *g, int argc, char **argv);
int cmd_split(cli_globals *g, int argc, char **argv);
int cmd_merge(cli_globals *g, int argc, char **argv);
int cmd_transcode(cli_globals *g, int argc, char **argv);
int cmd_merge_lora(cli_globals *g, int argc, char **argv);
int cmd_quantize(cli_globals *g, int argc, char **argv);
int cmd_perplexity(cli_globals *g, int argc, char **argv);
int cmd_imatrix(cli_globals *g, int argc, char **argv);
int cmd_convert(cli_globals *g, int argc, char **argv);
int cmd_demo(cli_globals *g, int argc, char **argv);
int cmd_tokenize(cli_globals *g, int argc, char **argv);

extern const char cli_help_help[];
extern const char cli_help_plugins[];
extern const char cli_help_codec[];
extern const char cli_help_bench[];
extern const char cli_help_inspect[];
extern const char cli_help_meta[];
extern const char cli_help_reemit[];
extern const char cli_help_split[];
extern const char cli_help_merge[];
extern const char cli_help_transcode[];
extern const char cli_help_merge_lora[];
extern const char cli_help_quantize[];
extern const char cli_help_perplexity[];
extern const char cli_help_imatrix[];
extern const char cli_help_convert[];
extern const char cli_help_demo[];
extern const char cli_help_tokenize[];

/* safetensors side of inspect/reemit (cli/safetensors_cmds.c); the GGUF
 * commands call these when the content is not GGUF. */
typedef struct cli_inspect_opts {
    int json, markdown, no_tensors;
    unsigned long long arrays; /* array elements shown; ULLONG_MAX = all */
} cli_inspect_opts;
int cli_inspect_safetensors(cli_globals *g, const char *path, const cli_inspect_opts *o);
int cli_reemit_safetensors(cli_globals *g, const char *in, const char *out, int json, int same_as_input);

#endif
