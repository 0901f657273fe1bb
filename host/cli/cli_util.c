/* Small helpers shared by the subcommands. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

anvil_ctx *cli_ctx(cli_globals *g) {
    if (g->ctx == NULL) {
        anvil_error err;
        if (anvil_ctx_open(&g->ctx, g->config_path, &err) != ANVIL_OK) {
            fprintf(stderr, "anvil: %s\n", err.message);
            g->ctx = NULL;
        }
    }
    return g->ctx;
}

int cli_fail(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "anvil %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

int cli_fail_err(const char *cmd, const anvil_error *err) {
    fprintf(stderr, "anvil %s: %s (%s)\n", cmd, err->message, anvil_strerror(err->code));
    return 1;
}

int cli_wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
    }
    return 0;
}

int cli_read_file(const char *path, void **data, size_t *size, anvil_error *err) {
    *data = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
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

int cli_parse_size(const char *s, unsigned long long *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || v < 0) return -1;
    double mul = 1;
    if (*end != '\0') {
        switch (*end) {
        case 'k': case 'K': mul = 1e3; break;
        case 'm': case 'M': mul = 1e6; break;
        case 'g': case 'G': mul = 1e9; break;
        case 't': case 'T': mul = 1e12; break;
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

void cli_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; ++p) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20) fprintf(f, "\\u%04x", *p);
            else fputc(*p, f);
        }
    }
    fputc('"', f);
}
