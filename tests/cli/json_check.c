/* SPDX-License-Identifier: MIT */
/*
 * json_check: does a document printed by `anvil ... --json` follow the
 * schema documented in host/cli/JSON.md?
 *
 *   json_check JSON.md [FILE]        check FILE (default: stdin)
 *   json_check JSON.md --list        print the schema ids found
 *
 * The document must be exactly one JSON value (RFC 8259, strict: no trailing
 * commas, valid UTF-8, no raw control characters, no duplicate keys); it is
 * checked against the fenced ```json block whose "$id" its "command" names
 * (or "error" when it has an "error" member). The schema language is the
 * subset JSON.md describes. Its own parser, on purpose: the checker shares
 * no code with what it checks. Exit 0 when valid, 1 with the reasons.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- values --------------------------------------------------------------------- */

typedef enum { J_NULL, J_BOOL, J_INT, J_NUM, J_STR, J_ARR, J_OBJ } jkind;

typedef struct jv {
    jkind kind;
    int b;
    double num;
    char *str; /* J_STR (may hold NULs: len) */
    size_t len;
    struct jv **items; /* J_ARR, J_OBJ values */
    char **keys;       /* J_OBJ */
    size_t n, cap;
} jv;

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "json_check: out of memory\n");
        exit(2);
    }
    return p;
}

static jv *jnew(jkind k) {
    jv *v = xmalloc(sizeof *v);
    memset(v, 0, sizeof *v);
    v->kind = k;
    return v;
}

static void jpush(jv *c, char *key, jv *item) {
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 8;
        jv **items = xmalloc(c->cap * sizeof *items);
        char **keys = xmalloc(c->cap * sizeof *keys);
        if (c->n) {
            memcpy(items, c->items, c->n * sizeof *items);
            memcpy(keys, c->keys, c->n * sizeof *keys);
        }
        free(c->items);
        free(c->keys);
        c->items = items;
        c->keys = keys;
    }
    c->keys[c->n] = key;
    c->items[c->n++] = item;
}

static void jfree(jv *v) {
    if (v == NULL) return;
    for (size_t i = 0; i < v->n; ++i) {
        jfree(v->items[i]);
        free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

static const jv *jget(const jv *o, const char *key) {
    if (o == NULL || o->kind != J_OBJ) return NULL;
    for (size_t i = 0; i < o->n; ++i) {
        if (strcmp(o->keys[i], key) == 0) return o->items[i];
    }
    return NULL;
}

/* ---- parser ----------------------------------------------------------------------- */

typedef struct parser {
    const unsigned char *s;
    size_t n, pos;
    char err[512];
} parser;

static jv *fail(parser *p, const char *fmt, ...) {
    if (p->err[0] == '\0') {
        va_list ap;
        va_start(ap, fmt);
        int k = snprintf(p->err, sizeof p->err, "byte %zu: ", p->pos);
        vsnprintf(p->err + k, sizeof p->err - (size_t)k, fmt, ap);
        va_end(ap);
    }
    return NULL;
}

static void ws(parser *p) {
    while (p->pos < p->n && strchr(" \t\r\n", p->s[p->pos]) != NULL && p->s[p->pos]) p->pos++;
}

static int hex4(parser *p, unsigned *out) {
    if (p->pos + 4 > p->n) return 0;
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
        const unsigned char c = p->s[p->pos++];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= c - '0';
        else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
        else return 0;
    }
    *out = v;
    return 1;
}

static size_t put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Length of the valid UTF-8 sequence at s, 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    if (s[0] < 0x80) return 1;
    size_t len = (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
    if (len == 0 || len > n) return 0;
    unsigned cp = s[0] & (0x7F >> len);
    for (size_t i = 1; i < len; ++i) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    static const unsigned min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

static char *parse_string(parser *p, size_t *len) {
    p->pos++; /* the quote */
    char *o = xmalloc(p->n - p->pos + 1);
    size_t k = 0;
    while (p->pos < p->n) {
        const unsigned char c = p->s[p->pos];
        if (c == '"') {
            p->pos++;
            o[k] = '\0';
            *len = k;
            return o;
        }
        if (c < 0x20) {
            free(o);
            return (char *)fail(p, "raw control character 0x%02x in a string", c);
        }
        if (c == '\\') {
            if (++p->pos >= p->n) break;
            const unsigned char e = p->s[p->pos++];
            const char *simple = strchr("\"\\/bfnrt", e);
            if (simple != NULL && e) {
                static const char map[] = "\"\\/\b\f\n\r\t";
                o[k++] = map[simple - "\"\\/bfnrt"];
                continue;
            }
            unsigned cp;
            if (e != 'u' || !hex4(p, &cp)) {
                free(o);
                return (char *)fail(p, "bad escape in a string");
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned lo;
                if (p->pos + 2 > p->n || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u' ||
                    (p->pos += 2, !hex4(p, &lo)) || lo < 0xDC00 || lo > 0xDFFF) {
                    free(o);
                    return (char *)fail(p, "lone surrogate escape");
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                free(o);
                return (char *)fail(p, "lone surrogate escape");
            }
            k += put_utf8(o + k, cp);
            continue;
        }
        const size_t u = utf8_seq(p->s + p->pos, p->n - p->pos);
        if (u == 0) {
            free(o);
            return (char *)fail(p, "invalid UTF-8 in a string");
        }
        memcpy(o + k, p->s + p->pos, u);
        k += u;
        p->pos += u;
    }
    free(o);
    return (char *)fail(p, "unterminated string");
}

static jv *parse_value(parser *p, int depth);

/* What printf makes of a non-finite double ("inf", "-nan", "Infinity" from
 * other writers): not JSON, named so the failure says which figure to make
 * null. NULL when the text at pos is none of them. */
static const char *nonfinite_token(const parser *p) {
    static const char *const words[] = { "infinity", "inf", "nan" };
    size_t at = p->pos;
    if (at < p->n && (p->s[at] == '-' || p->s[at] == '+')) at++;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; ++i) {
        const size_t l = strlen(words[i]);
        if (p->n - at >= l && strncasecmp((const char *)p->s + at, words[i], l) == 0) return words[i];
    }
    return NULL;
}

static jv *parse_number(parser *p) {
    const size_t start = p->pos;
    int is_int = 1;
    const char *nf = nonfinite_token(p);
    if (nf != NULL) return fail(p, "non-finite number '%s' (JSON has no NaN or infinity: print null)", nf);
    if (p->s[p->pos] == '-') p->pos++;
    if (p->pos < p->n && p->s[p->pos] == '0') {
        p->pos++;
    } else if (p->pos < p->n && p->s[p->pos] >= '1' && p->s[p->pos] <= '9') {
        while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
    } else {
        return fail(p, "bad number");
    }
    if (p->pos < p->n && p->s[p->pos] == '.') {
        is_int = 0;
        p->pos++;
        if (p->pos >= p->n || p->s[p->pos] < '0' || p->s[p->pos] > '9') return fail(p, "bad fraction");
        while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
    }
    if (p->pos < p->n && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
        is_int = 0;
        p->pos++;
        if (p->pos < p->n && (p->s[p->pos] == '+' || p->s[p->pos] == '-')) p->pos++;
        if (p->pos >= p->n || p->s[p->pos] < '0' || p->s[p->pos] > '9') return fail(p, "bad exponent");
        while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
    }
    char buf[64];
    snprintf(buf, sizeof buf, "%.*s", (int)(p->pos - start < 63 ? p->pos - start : 63), (const char *)p->s + start);
    jv *v = jnew(is_int ? J_INT : J_NUM);
    v->num = strtod(buf, NULL);
    if (!isfinite(v->num)) {
        free(v);
        return fail(p, "number '%s' overflows a double (a reader gets inf)", buf);
    }
    return v;
}

static jv *parse_container(parser *p, int depth, int is_obj) {
    if (depth > 64) return fail(p, "nested too deeply");
    jv *c = jnew(is_obj ? J_OBJ : J_ARR);
    p->pos++;
    ws(p);
    const char close = is_obj ? '}' : ']';
    if (p->pos < p->n && p->s[p->pos] == close) {
        p->pos++;
        return c;
    }
    for (;;) {
        char *key = NULL;
        ws(p);
        if (is_obj) {
            size_t klen;
            if (p->pos >= p->n || p->s[p->pos] != '"') break;
            key = parse_string(p, &klen);
            if (key == NULL) break;
            if (jget(c, key) != NULL) {
                fail(p, "duplicate key \"%s\"", key);
                free(key);
                break;
            }
            ws(p);
            if (p->pos >= p->n || p->s[p->pos] != ':') {
                free(key);
                break;
            }
            p->pos++;
        }
        jv *item = parse_value(p, depth + 1);
        if (item == NULL) {
            free(key);
            break;
        }
        jpush(c, key, item);
        ws(p);
        if (p->pos < p->n && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->n && p->s[p->pos] == close) {
            p->pos++;
            return c;
        }
        break;
    }
    fail(p, "expected %s", is_obj ? "a key, ':', ',' or '}'" : "',' or ']'");
    jfree(c);
    return NULL;
}

static jv *parse_value(parser *p, int depth) {
    ws(p);
    if (p->pos >= p->n) return fail(p, "unexpected end of input");
    const unsigned char c = p->s[p->pos];
    if (c == '{' || c == '[') return parse_container(p, depth, c == '{');
    if (c == '"') {
        jv *v = jnew(J_STR);
        v->str = parse_string(p, &v->len);
        if (v->str == NULL) {
            free(v);
            return NULL;
        }
        return v;
    }
    if (c == '-' || c == '+' || (c >= '0' && c <= '9') || nonfinite_token(p) != NULL) return parse_number(p);
    static const struct {
        const char *word;
        jkind kind;
        int b;
    } lits[] = { { "true", J_BOOL, 1 }, { "false", J_BOOL, 0 }, { "null", J_NULL, 0 } };
    for (size_t i = 0; i < 3; ++i) {
        const size_t l = strlen(lits[i].word);
        if (p->n - p->pos >= l && memcmp(p->s + p->pos, lits[i].word, l) == 0) {
            p->pos += l;
            jv *v = jnew(lits[i].kind);
            v->b = lits[i].b;
            return v;
        }
    }
    return fail(p, "unexpected character '%c'", c);
}

/* Exactly one value with whitespace around it. */
static jv *parse_document(const char *s, size_t n, char *err, size_t cap) {
    parser p = { (const unsigned char *)s, n, 0, "" };
    jv *v = parse_value(&p, 0);
    if (v != NULL) {
        ws(&p);
        if (p.pos != p.n) {
            jfree(v);
            v = fail(&p, "more than one JSON value (extra text after the document)");
        }
    }
    if (v == NULL) snprintf(err, cap, "%s", p.err);
    return v;
}

/* ---- schemas ---------------------------------------------------------------------- */

typedef struct schemas {
    jv **blocks;
    size_t n;
} schemas;

static const jv *schema_by_id(const schemas *S, const char *id) {
    for (size_t i = 0; i < S->n; ++i) {
        const jv *s = jget(S->blocks[i], "$id");
        if (s != NULL && s->kind == J_STR && strcmp(s->str, id) == 0) return S->blocks[i];
    }
    return NULL;
}

static int errors;

static void problem(const char *path, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "json_check: %s: ", path[0] ? path : "(document)");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    errors++;
}

static const char *kind_name(const jv *v) {
    static const char *const names[] = { "null", "boolean", "integer", "number", "string", "array", "object" };
    return names[v->kind];
}

static int type_matches(const char *t, const jv *v) {
    if (strcmp(t, "number") == 0) return v->kind == J_NUM || v->kind == J_INT;
    return strcmp(t, kind_name(v)) == 0;
}

static int equal(const jv *a, const jv *b) {
    if (a->kind != b->kind && !((a->kind == J_INT || a->kind == J_NUM) && (b->kind == J_INT || b->kind == J_NUM)))
        return 0;
    switch (a->kind) {
    case J_NULL: return 1;
    case J_BOOL: return a->b == b->b;
    case J_INT:
    case J_NUM: return a->num == b->num;
    case J_STR: return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
    default: return 0;
    }
}

static void check(const schemas *S, const jv *schema, const jv *v, const char *path);

static void check(const schemas *S, const jv *schema, const jv *v, const char *path) {
    const jv *ref = jget(schema, "$ref");
    if (ref != NULL) {
        const jv *target = schema_by_id(S, ref->str);
        if (target == NULL) {
            problem(path, "schema error: $ref to unknown id \"%s\"", ref->str);
            return;
        }
        check(S, target, v, path);
        return;
    }
    const jv *t = jget(schema, "type");
    if (t != NULL) {
        int ok = 0;
        if (t->kind == J_STR) ok = type_matches(t->str, v);
        for (size_t i = 0; t->kind == J_ARR && i < t->n; ++i) ok |= type_matches(t->items[i]->str, v);
        if (!ok) {
            problem(path, "is %s, the schema wants %s", kind_name(v), t->kind == J_STR ? t->str : "another type");
            return;
        }
    }
    const jv *cst = jget(schema, "const");
    if (cst != NULL && !equal(cst, v)) problem(path, "is not the constant the schema says");
    const jv *en = jget(schema, "enum");
    if (en != NULL) {
        int ok = 0;
        for (size_t i = 0; i < en->n; ++i) ok |= equal(en->items[i], v);
        if (!ok)
            problem(path, "%s%s%s is not one of the values the schema allows", v->kind == J_STR ? "\"" : "",
                    v->kind == J_STR ? v->str : kind_name(v), v->kind == J_STR ? "\"" : "");
    }
    char sub[1024];
    if (v->kind == J_ARR) {
        const jv *items = jget(schema, "items");
        for (size_t i = 0; items != NULL && i < v->n; ++i) {
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            check(S, items, v->items[i], sub);
        }
    }
    if (v->kind == J_OBJ) {
        const jv *props = jget(schema, "properties");
        const jv *req = jget(schema, "required");
        const jv *extra = jget(schema, "additionalProperties");
        for (size_t i = 0; req != NULL && i < req->n; ++i) {
            if (jget(v, req->items[i]->str) == NULL)
                problem(path, "lacks the required member \"%s\"", req->items[i]->str);
        }
        for (size_t i = 0; i < v->n; ++i) {
            snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", v->keys[i]);
            const jv *ps = jget(props, v->keys[i]);
            if (ps != NULL) {
                check(S, ps, v->items[i], sub);
            } else if (extra != NULL && extra->kind == J_BOOL && !extra->b) {
                problem(sub, "is not documented in the schema (add it to JSON.md)");
            } else if (extra != NULL && extra->kind == J_OBJ) {
                check(S, extra, v->items[i], sub);
            }
        }
    }
}

/* ---- files ------------------------------------------------------------------------- */

static char *slurp(FILE *f, size_t *n) {
    size_t cap = 1 << 16, len = 0;
    char *buf = xmalloc(cap);
    size_t r;
    while ((r = fread(buf + len, 1, cap - len, f)) > 0) {
        len += r;
        if (len == cap) {
            char *nb = xmalloc(cap * 2);
            memcpy(nb, buf, len);
            free(buf);
            buf = nb;
            cap *= 2;
        }
    }
    *n = len;
    return buf;
}

/* Every ```json block of the markdown file. */
static int load_schemas(const char *md_path, schemas *S) {
    FILE *f = fopen(md_path, "rb");
    if (f == NULL) {
        fprintf(stderr, "json_check: cannot open %s\n", md_path);
        return -1;
    }
    size_t n;
    char *md = slurp(f, &n);
    fclose(f);
    md[n < 1 ? 0 : n] = '\0';
    S->blocks = xmalloc(256 * sizeof *S->blocks);
    S->n = 0;
    for (char *p = md; (p = strstr(p, "```json\n")) != NULL && S->n < 256;) {
        p += 8;
        char *end = strstr(p, "\n```");
        if (end == NULL) break;
        char err[600];
        jv *b = parse_document(p, (size_t)(end - p), err, sizeof err);
        if (b == NULL || jget(b, "$id") == NULL) {
            fprintf(stderr, "json_check: %s: a json block is not a schema with an $id: %s\n", md_path,
                    b == NULL ? err : "no $id");
            jfree(b);
            free(md);
            return -1;
        }
        S->blocks[S->n++] = b;
        p = end + 4;
    }
    free(md);
    return 0;
}

/* The schema id a document follows. */
static const char *id_for(const jv *doc) {
    if (jget(doc, "error") != NULL) return "error";
    const jv *c = jget(doc, "command");
    if (c == NULL || c->kind != J_STR) return NULL;
    static const char *const aliases[][2] = {
        { "reemit", "written" },
        { "split", "written" },
        { "merge", "written" },
        { "meta set", "meta edit" },
        { "meta delete", "meta edit" },
        { "meta rename", "meta edit" },
        { "codec decode", "codec encode" },
        { "merge-lora", "transcode" },
        { "quantize", "transcode" },
    };
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; ++i) {
        if (strcmp(c->str, aliases[i][0]) == 0) return aliases[i][1];
    }
    return c->str;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: json_check JSON.md [FILE | --list]\n");
        return 2;
    }
    schemas S;
    if (load_schemas(argv[1], &S) != 0) return 2;
    if (argc == 3 && strcmp(argv[2], "--list") == 0) {
        for (size_t i = 0; i < S.n; ++i) printf("%s\n", jget(S.blocks[i], "$id")->str);
        return 0;
    }
    FILE *f = argc == 3 ? fopen(argv[2], "rb") : stdin;
    if (f == NULL) {
        fprintf(stderr, "json_check: cannot open %s\n", argv[2]);
        return 2;
    }
    size_t n;
    char *text = slurp(f, &n);
    if (f != stdin) fclose(f);
    char err[600];
    jv *doc = parse_document(text, n, err, sizeof err);
    if (doc == NULL) {
        fprintf(stderr, "json_check: not one valid JSON document: %s\n", err);
        free(text);
        return 1;
    }
    if (n == 0 || text[n - 1] != '\n') problem("", "does not end with a newline");
    const char *id = id_for(doc);
    const jv *schema = id != NULL ? schema_by_id(&S, id) : NULL;
    if (schema == NULL) {
        fprintf(stderr, "json_check: no schema for this document (command %s) in %s\n", id ? id : "(none)", argv[1]);
        return 1;
    }
    check(&S, schema, doc, "");
    jfree(doc);
    free(text);
    for (size_t i = 0; i < S.n; ++i) jfree(S.blocks[i]);
    free(S.blocks);
    return errors ? 1 : 0;
}
