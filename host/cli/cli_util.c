/* SPDX-License-Identifier: MIT */
/* The plumbing shared by the subcommands: the command table main.c
 * registers (lookups, help texts), errors and exit codes, JSON and
 * terminal-safe text, files, value parsing, output paths, progress. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* ---- state ------------------------------------------------------------------ */

static int json_errors; /* --json given: errors go to stdout as JSON too */

static const char *command_name = "";

void cli_set_json(int on) { json_errors = on; }
const char *cli_command_name(void) { return command_name; }
void cli_set_command_name(const char *name) { command_name = name; }
int cli_json_enabled(void) { return json_errors; }

/* ---- the command table (main.c's, registered) ---------------------------------- */

static const cli_command *commands;
static size_t n_commands;
static const char *main_usage = "";

void cli_set_commands(const cli_command *table, size_t n, const char *usage) {
    commands = table;
    n_commands = n;
    main_usage = usage;
}

size_t cli_command_count(void) { return n_commands; }

const cli_command *cli_command_at(size_t i) { return i < n_commands ? &commands[i] : NULL; }

const cli_command *cli_find_command(const char *name) {
    for (size_t i = 0; i < n_commands; ++i) {
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    }
    return NULL;
}

const char *cli_help_text(const char *cmd) {
    if (cmd[0] == '\0') return main_usage;
    const cli_command *c = cli_find_command(cmd);
    return c != NULL ? c->help : NULL;
}

int cli_help(const char *cmd) {
    const char *h = cli_help_text(cmd);
    if (h != NULL) fputs(h, stdout);
    return 0;
}

anvil_ctx *cli_ctx(cli_globals *g) {
    if (g->ctx == NULL) {
        anvil_error err;
        if (anvil_ctx_open(&g->ctx, g->config_path, &err) != ANVIL_OK) {
            g->ctx = NULL;
            cli_fail_err(command_name[0] ? command_name : "config", &err);
        }
    }
    return g->ctx;
}

/* ---- UTF-8 ------------------------------------------------------------------ */

/* Code point of the valid UTF-8 sequence at p (at most n bytes) and its
 * length; 0 when the bytes there are not valid UTF-8. */
static size_t utf8_decode(const unsigned char *p, size_t n, uint32_t *out) {
    if (p[0] < 0x80) {
        *out = p[0];
        return 1;
    }
    size_t len;
    uint32_t cp;
    if ((p[0] & 0xE0) == 0xC0) {
        len = 2;
        cp = p[0] & 0x1F;
    } else if ((p[0] & 0xF0) == 0xE0) {
        len = 3;
        cp = p[0] & 0x0F;
    } else if ((p[0] & 0xF8) == 0xF0) {
        len = 4;
        cp = p[0] & 0x07;
    } else {
        return 0;
    }
    if (len > n) {
        return 0;
    }
    for (size_t i = 1; i < len; ++i) {
        if ((p[i] & 0xC0) != 0x80) {
            return 0;
        }
        cp = cp << 6 | (p[i] & 0x3F);
    }
    static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        return 0;
    }
    *out = cp;
    return len;
}

/* Code points that act on a terminal or reorder what it shows although they
 * are valid UTF-8: the C1 controls (some terminals obey them) and the
 * bidirectional marks and overrides. */
static int is_hidden_control(uint32_t cp) {
    return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) ||
           cp == 0x200e || cp == 0x200f || cp == 0x061c;
}

/* ---- JSON ------------------------------------------------------------------- */

void cli_json_bytes(FILE *f, const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
    fputc('"', f);
    size_t i = 0;
    while (i < len) {
        const unsigned char c = p[i];
        uint32_t cp;
        size_t k;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
            i++;
        } else if (c == '\n') {
            fputs("\\n", f);
            i++;
        } else if (c == '\r') {
            fputs("\\r", f);
            i++;
        } else if (c == '\t') {
            fputs("\\t", f);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            fprintf(f, "\\u%04x", c);
            i++;
        } else if ((k = utf8_decode(p + i, len - i, &cp)) == 0) {
            fputs("\\ufffd", f);
            i++;
        } else if (is_hidden_control(cp)) {
            fprintf(f, "\\u%04x", (unsigned)cp); /* valid JSON, and safe on a terminal */
            i += k;
        } else {
            fwrite(p + i, 1, k, f);
            i += k;
        }
    }
    fputc('"', f);
}

void cli_json_string(FILE *f, const char *s) {
    if (s == NULL) {
        fputs("null", f);
    } else {
        cli_json_bytes(f, s, strlen(s));
    }
}

static void json_number_fmt(FILE *f, const char *fmt, double v) {
    if (v != v || v > 1.7976931348623157e308 || v < -1.7976931348623157e308) {
        fputs("null", f);
    } else {
        fprintf(f, fmt, v);
    }
}

void cli_json_number(FILE *f, double v) { json_number_fmt(f, "%.17g", v); }

void cli_json_member_number(FILE *f, const char *key, const char *fmt, double v) {
    fputc(',', f);
    cli_json_string(f, key);
    fputc(':', f);
    json_number_fmt(f, fmt, v);
}

void cli_json_begin(FILE *f, const char *cmd) {
    fprintf(f, "{\"schema_version\":%d,\"command\":", CLI_JSON_SCHEMA_VERSION);
    cli_json_string(f, cmd);
}

/* ---- terminal-safe text --------------------------------------------------- */

/* Appends the escaped form of p[0..len) through put(arg, text, n). */
typedef void (*put_fn)(void *arg, const char *text, size_t n);

static void escape_to(put_fn put, void *arg, const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
    size_t i = 0;
    char tmp[16];
    while (i < len) {
        uint32_t cp = 0;
        const size_t k = utf8_decode(p + i, len - i, &cp);
        if (k == 0 || cp < 0x20 || cp == 0x7f) {
            snprintf(tmp, sizeof tmp, "\\x%02x", p[i]);
            put(arg, tmp, 4);
            i++;
        } else if (cp == '\\') {
            put(arg, "\\\\", 2);
            i++;
        } else if (is_hidden_control(cp)) {
            const int n = snprintf(tmp, sizeof tmp, "\\u{%04x}", (unsigned)cp);
            put(arg, tmp, (size_t)n);
            i += k;
        } else {
            put(arg, (const char *)p + i, k);
            i += k;
        }
    }
}

static void put_file(void *arg, const char *text, size_t n) { fwrite(text, 1, n, (FILE *)arg); }

void cli_text_bytes(FILE *f, const char *p, size_t len) { escape_to(put_file, f, p, len); }

typedef struct buf_sink {
    char *buf;
    size_t cap, used;
    int cut;
} buf_sink;

static void put_buf(void *arg, const char *text, size_t n) {
    buf_sink *b = arg;
    if (b->cut) {
        return;
    }
    if (b->used + n + 4 > b->cap) {
        /* Room for "..." and the NUL is kept back. */
        b->cut = 1;
        return;
    }
    memcpy(b->buf + b->used, text, n);
    b->used += n;
}

const char *cli_text_esc(char *buf, size_t cap, const char *p, size_t len) {
    if (cap < 4) {
        if (cap > 0) buf[0] = '\0';
        return buf;
    }
    buf_sink b = { buf, cap, 0, 0 };
    escape_to(put_buf, &b, p, len);
    if (b.cut) {
        memcpy(buf + b.used, "...", 3);
        b.used += 3;
    }
    buf[b.used] = '\0';
    return buf;
}

const char *cli_esc(const char *s) {
    static char slots[8][512];
    static unsigned next;
    char *buf = slots[next++ % 8];
    return cli_text_esc(buf, sizeof slots[0], s != NULL ? s : "(null)", s != NULL ? strlen(s) : 6);
}

/* ---- the stdout guard --------------------------------------------------------- */

/* Text output goes through a filter that escapes what escape_to escapes
 * except the backslash, and keeps newlines and tabs: whatever a command
 * prints -- a name from a file, a plugin's strings -- reaches the terminal as
 * visible text. A UTF-8 sequence cut between two writes is held back until
 * the next one. */
typedef struct guard {
    int fd;
    unsigned char carry[4];
    size_t n_carry;
} guard;

static int write_fd(int fd, const char *p, size_t n) {
    while (n > 0) {
        const ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

typedef struct guard_out {
    char buf[4096];
    size_t used;
    int fd, failed;
} guard_out;

static void guard_put(void *arg, const char *text, size_t n) {
    guard_out *o = arg;
    if (o->used + n > sizeof o->buf) {
        o->failed |= write_fd(o->fd, o->buf, o->used);
        o->used = 0;
        if (n > sizeof o->buf) {
            o->failed |= write_fd(o->fd, text, n);
            return;
        }
    }
    memcpy(o->buf + o->used, text, n);
    o->used += n;
}

/* Escape p[0..n) for a terminal, keeping '\n', '\t' and '\\' as they are. */
static void guard_escape(guard_out *o, const unsigned char *p, size_t n) {
    size_t i = 0;
    while (i < n) {
        size_t run = i;
        while (run < n && ((p[run] >= 0x20 && p[run] < 0x7f) || p[run] == '\n' || p[run] == '\t')) run++;
        if (run > i) {
            guard_put(o, (const char *)p + i, run - i);
            i = run;
            continue;
        }
        /* escape_to handles one character (or invalid byte) at a time. */
        uint32_t cp;
        const size_t k = utf8_decode(p + i, n - i, &cp);
        const size_t take = k == 0 ? 1 : k;
        escape_to(guard_put, o, (const char *)p + i, take);
        i += take;
    }
}

/* Bytes a UTF-8 sequence starting with lead has (1 for a byte that cannot
 * start one). */
static size_t utf8_want(unsigned char lead) {
    return (lead & 0xE0) == 0xC0 ? 2 : (lead & 0xF0) == 0xE0 ? 3 : (lead & 0xF8) == 0xF0 ? 4 : 1;
}

static ssize_t guard_write(void *cookie, const char *data, size_t size) {
    guard *g = cookie;
    guard_out o = { .used = 0, .fd = g->fd, .failed = 0 };
    const unsigned char *p = (const unsigned char *)data;
    size_t n = size;
    /* Complete a sequence held back from the last write. */
    if (g->n_carry > 0) {
        const size_t want = utf8_want(g->carry[0]);
        while (n > 0 && (*p & 0xC0) == 0x80 && g->n_carry < want) {
            g->carry[g->n_carry++] = *p++;
            n--;
        }
        if (n == 0 && g->n_carry < want) {
            return (ssize_t)size; /* still incomplete: wait for more */
        }
        guard_escape(&o, g->carry, g->n_carry);
        g->n_carry = 0;
    }
    /* Hold back an incomplete sequence at the end of this write. */
    size_t tail = 0;
    for (size_t back = 1; back <= 3 && back <= n; ++back) {
        const unsigned char c = p[n - back];
        if ((c & 0xC0) == 0x80) continue;
        if (utf8_want(c) > back) tail = back;
        break;
    }
    guard_escape(&o, p, n - tail);
    memcpy(g->carry, p + n - tail, tail);
    g->n_carry = tail;
    o.failed |= write_fd(o.fd, o.buf, o.used);
    return o.failed ? -1 : (ssize_t)size;
}

static int guard_close(void *cookie) {
    guard *g = cookie;
    guard_out o = { .used = 0, .fd = g->fd, .failed = 0 };
    guard_escape(&o, g->carry, g->n_carry); /* a sequence the output ended inside */
    g->n_carry = 0;
    o.failed |= write_fd(o.fd, o.buf, o.used);
    return o.failed ? -1 : 0;
}

void cli_stdout_guard(void) {
    static guard g;
    fflush(stdout);
    g.fd = fileno(stdout);
    const cookie_io_functions_t io = { .read = NULL, .write = guard_write, .seek = NULL, .close = guard_close };
    FILE *f = fopencookie(&g, "w", io);
    if (f == NULL) {
        return; /* unguarded rather than silent */
    }
    setvbuf(f, NULL, isatty(g.fd) ? _IOLBF : _IOFBF, 1 << 16);
    stdout = f;
}

/* ---- errors ----------------------------------------------------------------- */

/* status: the anvil status name ("ANVIL_E_..."), or NULL. */
static void json_error(const char *cmd, const char *kind, const char *status, const char *message, int exit_code) {
    if (!json_errors) {
        return;
    }
    fflush(stdout);
    cli_json_begin(stdout, cmd[0] ? cmd : NULL);
    fputs(",\"error\":{\"kind\":", stdout);
    cli_json_string(stdout, kind);
    fputs(",\"status\":", stdout);
    cli_json_string(stdout, status);
    fputs(",\"message\":", stdout);
    cli_json_string(stdout, message);
    printf(",\"exit_code\":%d}}\n", exit_code);
    fflush(stdout);
}

/* "anvil <cmd>: <message>" with every control byte escaped. */
static void text_error(const char *cmd, const char *message, const char *suffix) {
    fflush(stdout);
    fprintf(stderr, "anvil%s%s: ", cmd[0] ? " " : "", cmd);
    cli_text_bytes(stderr, message, strlen(message));
    fprintf(stderr, "%s\n", suffix != NULL ? suffix : "");
}

int cli_fail(const char *cmd, const char *fmt, ...) {
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    text_error(cmd, msg, NULL);
    json_error(cmd, "failure", NULL, msg, CLI_EXIT_FAIL);
    return CLI_EXIT_FAIL;
}

const char *cli_status_name(int code) {
    /* anvil_strerror: "ANVIL_E_NAME: description", a static string. */
    static char names[8][64];
    static unsigned next;
    char *buf = names[next++ % 8];
    const char *full = anvil_strerror(code);
    snprintf(buf, sizeof names[0], "%.*s", (int)strcspn(full, ":"), full);
    return buf;
}

int cli_fail_err(const char *cmd, const anvil_error *err) {
    char suffix[256];
    snprintf(suffix, sizeof suffix, " (%s)", anvil_strerror(err->code));
    text_error(cmd, err->message, suffix);
    json_error(cmd, "failure", cli_status_name(err->code), err->message, CLI_EXIT_FAIL);
    return CLI_EXIT_FAIL;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    text_error(cmd, msg, NULL);
    /* The synopsis: the help text up to its first blank line. */
    char word[64];
    snprintf(word, sizeof word, "%.*s", (int)strcspn(cmd, " "), cmd);
    const char *help = cli_help_text(word);
    if (help != NULL) {
        const char *end = strstr(help, "\n\n");
        fprintf(stderr, "%.*s\n", (int)(end != NULL ? (size_t)(end - help) : strlen(help)), help);
        if (word[0]) fprintf(stderr, "Run 'anvil help %s' for the options.\n", word);
        else fprintf(stderr, "Run 'anvil help' for the commands.\n");
    } else {
        fprintf(stderr, "Run 'anvil help' for the commands.\n");
    }
    json_error(cmd, "usage", NULL, msg, CLI_EXIT_USAGE);
    return CLI_EXIT_USAGE;
}

int cli_wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
    }
    return 0;
}

/* ---- files ------------------------------------------------------------------ */

/* A FIFO, socket or device as input: refused by stat() before any open,
 * which for a FIFO would wait for a writer (the library's inputs follow the
 * same rule, host/src/base/file_input.h). */
static int refuse_unreadable(const char *path, anvil_error *err) {
    struct stat st;
    if (stat(path, &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
        return ANVIL_OK;
    }
    if (err) {
        err->code = ANVIL_E_IO;
        snprintf(err->message, sizeof err->message,
                 "'%s' is %s: anvil needs a regular file as input, not a pipe, a socket or a device; copy it "
                 "to a regular file first (cat '%s' > file) and give that",
                 path,
                 S_ISFIFO(st.st_mode)   ? "a FIFO"
                 : S_ISSOCK(st.st_mode) ? "a socket"
                 : S_ISCHR(st.st_mode)  ? "a character device"
                                        : "a block device",
                 path);
    }
    return ANVIL_E_IO;
}

int cli_read_file(const char *path, void **data, size_t *size, anvil_error *err) {
    *data = NULL;
    *size = 0;
    if (refuse_unreadable(path, err) != ANVIL_OK) {
        return ANVIL_E_IO;
    }
    /* O_NONBLOCK: a path swapped for a FIFO since the check cannot block;
     * the regular-file check below refuses it. */
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (f == NULL) {
        if (fd >= 0) close(fd);
        if (err) {
            err->code = ANVIL_E_IO;
            snprintf(err->message, sizeof err->message, "cannot open %s: %s", path, strerror(errno));
        }
        return ANVIL_E_IO;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        if (err) {
            err->code = ANVIL_E_IO;
            snprintf(err->message, sizeof err->message, "%s is not a regular file", path);
        }
        return ANVIL_E_IO;
    }
    size_t n = (size_t)st.st_size;
    void *buf = malloc(n ? n : 1);
    if (buf == NULL || fread(buf, 1, n, f) != n) {
        free(buf);
        fclose(f);
        if (err) {
            err->code = buf ? ANVIL_E_IO : ANVIL_E_NOMEM;
            snprintf(err->message, sizeof err->message, "cannot read %s (%zu bytes)", path, n);
        }
        return buf ? ANVIL_E_IO : ANVIL_E_NOMEM;
    }
    fclose(f);
    *data = buf;
    *size = n;
    return ANVIL_OK;
}

int cli_write_file_atomic(const char *path, const void *data, size_t size, anvil_error *err) {
    return anvil_file_write_atomic(path, data, size, err);
}

/* "-" and the names of descriptor 1: the file is written to standard output
 * (the library writes into descriptor 1, host/src/base/atomic_file.h). */
static int names_stdout(const char *p) {
    return strcmp(p, "-") == 0 || strcmp(p, "/dev/stdout") == 0 || strcmp(p, "/dev/fd/1") == 0 ||
           strcmp(p, "/proc/self/fd/1") == 0;
}

static int check_output_path(const char *cmd, const char *output) {
    const size_t len = strlen(output);
    struct stat st;
    if (len == 0) {
        return cli_usage_error(cmd, "the output path is empty");
    }
    if (output[len - 1] == '/' || (stat(output, &st) == 0 && S_ISDIR(st.st_mode))) {
        return cli_usage_error(cmd, "the output '%s' is a folder: name the file to write, e.g. %s%smodel.gguf",
                               output, output, output[len - 1] == '/' ? "" : "/");
    }
    /* The folder the temporary file and the output go to must exist. */
    char dir[4096];
    const char *slash = strrchr(output, '/');
    snprintf(dir, sizeof dir, "%.*s",
             slash == NULL     ? 1
             : slash == output ? 1
                               : (int)(slash - output),
             slash == NULL ? "." : output);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        return cli_usage_error(cmd, "the output's folder '%s' does not exist", dir);
    }
    return 0;
}

int cli_check_output(const char *cmd, const char *output, const char *input, int *same_as_input) {
    if (same_as_input != NULL) {
        *same_as_input = 0;
    }
    if (names_stdout(output)) {
        /* The file's bytes own descriptor 1: the report goes to stderr, and
         * --json, whose document is stdout, is refused. */
        if (cli_json_enabled()) {
            return cli_usage_error(cmd, "--json prints on standard output, which is the output file here: drop "
                                        "--json or name an output file");
        }
        fflush(stdout);
        stdout = stderr; /* as cli_stdout_guard does: glibc's stdout is a variable */
        return 0;
    }
    const int rc = check_output_path(cmd, output);
    if (rc != 0) {
        return rc;
    }
    struct stat st, in_st;
    if (input != NULL && same_as_input != NULL && stat(output, &st) == 0 && S_ISREG(st.st_mode) &&
        stat(input, &in_st) == 0 && st.st_dev == in_st.st_dev && st.st_ino == in_st.st_ino) {
        *same_as_input = 1;
    }
    return 0;
}

int cli_check_prefix(const char *cmd, const char *prefix) {
    if (names_stdout(prefix)) {
        return cli_usage_error(cmd,
                               "'%s' is standard output, but a split set is files "
                               "(PREFIX-00001-of-0000N.gguf, ...): give a file prefix",
                               prefix);
    }
    return check_output_path(cmd, prefix);
}

/* ---- values ----------------------------------------------------------------- */

int cli_parse_size(const char *s, unsigned long long *out) {
    /* one strict form: decimal digits with at most one '.', then the suffix;
     * no space, sign, exponent or hex (strtod would take " 2M" and 0x100000) */
    size_t n = 0, dots = 0, digs = 0;
    for (; (s[n] >= '0' && s[n] <= '9') || s[n] == '.'; ++n) {
        if (s[n] == '.') dots++;
        else digs++;
    }
    if (digs == 0 || dots > 1) return -1;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end != s + n || v < 0 || v != v) return -1;
    double mul = 1;
    if (*end != '\0') {
        switch (*end) {
        case 'k':
        case 'K': mul = 1e3; break;
        case 'm':
        case 'M': mul = 1e6; break;
        case 'g':
        case 'G': mul = 1e9; break;
        case 't':
        case 'T': mul = 1e12; break;
        default: return -1;
        }
        ++end;
        if (*end == 'i' || *end == 'I') {
            /* KiB-style suffix: powers of 1024 */
            mul = mul == 1e3 ? 1024.0 : mul == 1e6 ? 1048576.0 : mul == 1e9 ? 1073741824.0 : 1099511627776.0;
            ++end;
        }
        if (*end == 'b' || *end == 'B') ++end;
        if (*end != '\0') return -1;
    }
    double r = v * mul;
    if (r > 1.8e19) return -1;
    *out = (unsigned long long)r;
    return 0;
}

int cli_parse_count(const char *s, unsigned long long min, unsigned long long max, unsigned long long *out) {
    if (s == NULL || *s < '0' || *s > '9') return -1;
    char *end = NULL;
    errno = 0;
    const unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max) return -1;
    *out = v;
    return 0;
}

/* ---- progress --------------------------------------------------------------- */

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cli_progress_init(cli_progress *p, int forced, int quiet) {
    memset(p, 0, sizeof *p);
    p->mode = forced ? 2 : (!quiet && isatty(fileno(stderr))) ? 1 : 0;
    p->start = now_seconds();
    p->last = -1;
}

void cli_progress_step(cli_progress *p, size_t done, size_t total, unsigned long long bytes_done,
                       unsigned long long bytes_total, const char *label) {
    p->steps_total = total;
    if (p->mode == 0) {
        return;
    }
    const double t = now_seconds() - p->start;
    const double pct = bytes_total > 0 ? 100.0 * (double)bytes_done / (double)bytes_total
                       : total > 0     ? 100.0 * (double)done / (double)total
                                       : 100.0;
    if (p->mode == 2) {
        if (done == p->last_step) {
            return; /* the same step again (a transcode reports slabs of rows) */
        }
        p->last_step = done;
        fprintf(stderr, "[%zu/%zu] %5.1f%% %.1fs %s\n", done, total, pct, t, cli_esc(label));
        return;
    }
    if (t - p->last < 0.1 && done < total) {
        return; /* a TTY line at most 10 times a second */
    }
    p->last = t;
    p->shown = 1;
    const double rate = t > 0 ? (double)bytes_done / 1e6 / t : 0;
    fprintf(stderr, "\r\033[K  [%zu/%zu] %.1f%%  %.0f/%.0f MB  %.1f MB/s  %s", done, total, pct,
            (double)bytes_done / 1e6, (double)bytes_total / 1e6, rate, cli_esc(label));
    fflush(stderr);
}

void cli_progress_end(cli_progress *p) {
    if (p->shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        p->shown = 0;
    }
}

int cli_is_dir(const char *path) {
    struct stat st;
    return path != NULL && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}
