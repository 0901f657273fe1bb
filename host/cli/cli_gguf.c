/* Helpers shared by the GGUF subcommands. */
#include <stdint.h>
#include <string.h>

#include "anvil/safetensors.h"
#include "cli_gguf.h"

cli_sniff cli_gguf_sniff(const char *path) {
    unsigned char b[ANVIL_ST_SNIFF_BYTES];
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return CLI_SNIFF_UNKNOWN;
    }
    const size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    if (n >= 4 && memcmp(b, "GGUF", 4) == 0) {
        return CLI_SNIFF_GGUF;
    }
    /* safetensors: a little-endian u64 header length, then JSON. */
    return anvil_st_sniff(b, n) ? CLI_SNIFF_SAFETENSORS : CLI_SNIFF_UNKNOWN;
}

int cli_gguf_run(cli_globals *g, cli_gguf_op op, void *arg, anvil_error *err) {
    int rc = op(NULL, arg, err);
    if (rc == ANVIL_E_GGUF_TENSOR_TYPE) {
        const anvil_ctx *ctx = cli_ctx(g);
        if (ctx != NULL) {
            rc = op(ctx, arg, err);
        }
    }
    return rc;
}

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *p, size_t n) {
    if (p[0] < 0x80) {
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
    return len;
}

void cli_gguf_json_bytes(FILE *f, const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
    fputc('"', f);
    size_t i = 0;
    while (i < len) {
        const unsigned char c = p[i];
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
        } else {
            const size_t k = utf8_len(p + i, len - i);
            if (k == 0) {
                fputs("\\ufffd", f);
                i++;
            } else {
                fwrite(p + i, 1, k, f);
                i += k;
            }
        }
    }
    fputc('"', f);
}
