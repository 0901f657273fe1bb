/* SPDX-License-Identifier: MIT */
/*
 * ECMAScript regular expressions as libstdc++'s std::regex reads them (see
 * ecma_regex.h for the dialect). A recursive-descent parser that follows
 * libstdc++'s scanner and compiler step by step (so the same patterns are
 * accepted and refused) emits a small backtracking program; jumps are
 * relative, so a quantified fragment is repeated by copying it.
 *
 * Searching tries every start position as regex_search does. Without
 * back-references whether a (instruction, position) state can reach a match
 * does not depend on how it was reached, so failed states are remembered
 * and a search costs at most instructions x (length + 1) steps. With
 * back-references captures matter: plain backtracking under a step budget.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ecma_regex.h"

#define RE_MAX_PROGRAM 20000
#define RE_MAX_CLASSES 4096
#define RE_BACKREF_BUDGET 1000000L
#define RE_MAX_DEPTH 500 /* nested groups and lookaheads */

enum {
    OP_CHAR,  /* arg: the byte */
    OP_ANY,   /* any byte but \n \r */
    OP_CLASS, /* arg: class index */
    OP_SPLIT, /* try pc+x, then pc+y */
    OP_JMP,   /* pc += x */
    OP_SAVE,  /* arg: capture slot */
    OP_BOL,
    OP_EOL,
    OP_WORDB,   /* neg: \B */
    OP_LOOK,    /* neg: (?!; sub-program at pc+1 ends with MATCH; continue at pc+x */
    OP_BACKREF, /* arg: group */
    OP_MATCH
};

typedef struct re_inst {
    uint8_t op;
    uint8_t neg;
    uint16_t arg;
    int32_t x, y;
} re_inst;

typedef struct re_class {
    uint32_t bits[8];
} re_class;

struct ecma_re {
    re_inst *prog;
    size_t n;
    re_class *classes;
    size_t n_classes;
    unsigned n_groups; /* capturing groups, not counting group 0 */
    int has_backref;
};

/* ---- fragments ---------------------------------------------------------- */

typedef struct frag {
    re_inst *v;
    size_t n, cap;
} frag;

typedef struct parser {
    const unsigned char *p;
    size_t len, i;
    int err;
    char *why;
    size_t why_size;
    re_class *classes;
    size_t n_classes, cap_classes;
    unsigned n_groups;  /* groups opened so far */
    unsigned open[256]; /* groups not yet closed (for \N checks) */
    unsigned n_open;
    int has_backref;
    int depth; /* groups being parsed */
} parser;

static void fail(parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(parser *ps, const char *fmt, ...) {
    if (ps->err) return;
    ps->err = 1;
    if (ps->why != NULL && ps->why_size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ps->why, ps->why_size, fmt, ap);
        va_end(ap);
    }
}

static int frag_reserve(parser *ps, frag *f, size_t extra) {
    if (ps->err) return -1;
    if (f->n + extra > RE_MAX_PROGRAM) {
        fail(ps, "the pattern is too complex (its repetitions expand to more than %d steps)", RE_MAX_PROGRAM);
        return -1;
    }
    if (f->n + extra > f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        while (cap < f->n + extra) cap *= 2;
        re_inst *v = realloc(f->v, cap * sizeof *v);
        if (v == NULL) {
            fail(ps, "out of memory");
            return -1;
        }
        f->v = v;
        f->cap = cap;
    }
    return 0;
}

static void emit(parser *ps, frag *f, uint8_t op, uint8_t neg, uint16_t arg, int32_t x, int32_t y) {
    if (frag_reserve(ps, f, 1) != 0) return;
    re_inst *in = &f->v[f->n++];
    in->op = op;
    in->neg = neg;
    in->arg = arg;
    in->x = x;
    in->y = y;
}

static void append(parser *ps, frag *a, const frag *b) {
    if (b->n == 0 || frag_reserve(ps, a, b->n) != 0) return;
    memcpy(a->v + a->n, b->v, b->n * sizeof *b->v);
    a->n += b->n;
}

static void frag_free(frag *f) {
    free(f->v);
    memset(f, 0, sizeof *f);
}

/* a | b: the left alternative first. */
static frag alt(parser *ps, frag *a, frag *b) {
    frag r = { 0 };
    emit(ps, &r, OP_SPLIT, 0, 0, 1, (int32_t)a->n + 2);
    append(ps, &r, a);
    emit(ps, &r, OP_JMP, 0, 0, (int32_t)b->n + 1, 0);
    append(ps, &r, b);
    frag_free(a);
    frag_free(b);
    return r;
}

/* a* (loop) or a? : a split before the body, and for a loop a jump back. */
static frag star_or_opt(parser *ps, frag *a, int lazy, int loop) {
    frag r = { 0 };
    const int32_t body = 1, out = (int32_t)a->n + (loop ? 2 : 1);
    emit(ps, &r, OP_SPLIT, 0, 0, lazy ? out : body, lazy ? body : out);
    append(ps, &r, a);
    if (loop) emit(ps, &r, OP_JMP, 0, 0, -((int32_t)a->n + 1), 0);
    frag_free(a);
    return r;
}

static frag plus(parser *ps, frag *a, int lazy) {
    frag r = { 0 };
    append(ps, &r, a);
    const int32_t back = -(int32_t)a->n, out = 1;
    emit(ps, &r, OP_SPLIT, 0, 0, lazy ? out : back, lazy ? back : out);
    frag_free(a);
    return r;
}

/* a{min,max}; max < 0: unbounded. */
static frag repeat(parser *ps, frag *a, long min, long max, int lazy) {
    frag r = { 0 };
    for (long i = 0; i < min && !ps->err; ++i) append(ps, &r, a);
    if (max < 0) {
        frag c = { 0 };
        append(ps, &c, a);
        frag s = star_or_opt(ps, &c, lazy, 1);
        append(ps, &r, &s);
        frag_free(&s);
    } else {
        const long k = max - min;
        const int32_t step = (int32_t)a->n + 1;
        for (long i = 0; i < k && !ps->err; ++i) {
            const int32_t out = (int32_t)((k - i) * step);
            emit(ps, &r, OP_SPLIT, 0, 0, lazy ? out : 1, lazy ? 1 : out);
            append(ps, &r, a);
        }
    }
    frag_free(a);
    return r;
}

/* ---- character classes (the "C" locale) ---------------------------------- */

enum {
    CC_ALNUM = 1 << 0,
    CC_ALPHA = 1 << 1,
    CC_BLANK = 1 << 2,
    CC_CNTRL = 1 << 3,
    CC_DIGIT = 1 << 4,
    CC_GRAPH = 1 << 5,
    CC_LOWER = 1 << 6,
    CC_PRINT = 1 << 7,
    CC_PUNCT = 1 << 8,
    CC_SPACE = 1 << 9,
    CC_UPPER = 1 << 10,
    CC_XDIGIT = 1 << 11,
    CC_UNDER = 1 << 12 /* "w": alnum or '_' */
};

static unsigned byte_mask(unsigned c) {
    unsigned m = 0;
    const int upper = c >= 'A' && c <= 'Z', lower = c >= 'a' && c <= 'z', digit = c >= '0' && c <= '9';
    if (upper) m |= CC_UPPER | CC_ALPHA;
    if (lower) m |= CC_LOWER | CC_ALPHA;
    if (digit) m |= CC_DIGIT;
    if (upper || lower || digit) m |= CC_ALNUM;
    if (digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) m |= CC_XDIGIT;
    if (c == ' ' || c == '\t') m |= CC_BLANK;
    if (c == ' ' || (c >= '\t' && c <= '\r')) m |= CC_SPACE;
    if (c < 32 || c == 127) m |= CC_CNTRL;
    if (c >= 33 && c <= 126) m |= CC_GRAPH;
    if (c >= 32 && c <= 126) m |= CC_PRINT;
    if (c >= 33 && c <= 126 && !(upper || lower || digit)) m |= CC_PUNCT;
    return m;
}

static int is_word(unsigned c) { return (byte_mask(c) & CC_ALNUM) != 0 || c == '_'; }

/* A class name as libstdc++'s lookup_classname reads it (lower-cased);
 * returns the mask, with CC_UNDER standing for "w"; 0 when unknown. */
static unsigned class_by_name(const unsigned char *s, size_t n) {
    static const struct {
        const char *name;
        unsigned mask;
    } names[] = {
        { "d", CC_DIGIT },     { "w", CC_UNDER },     { "s", CC_SPACE },       { "alnum", CC_ALNUM },
        { "alpha", CC_ALPHA }, { "blank", CC_BLANK }, { "cntrl", CC_CNTRL },   { "digit", CC_DIGIT },
        { "graph", CC_GRAPH }, { "lower", CC_LOWER }, { "print", CC_PRINT },   { "punct", CC_PUNCT },
        { "space", CC_SPACE }, { "upper", CC_UPPER }, { "xdigit", CC_XDIGIT },
    };
    char low[16];
    if (n == 0 || n >= sizeof low) return 0;
    for (size_t i = 0; i < n; ++i) low[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
    low[n] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
        if (strcmp(low, names[i].name) == 0) return names[i].mask;
    }
    return 0;
}

static int in_class(unsigned c, unsigned mask) {
    if (mask & CC_UNDER) return is_word(c);
    return (byte_mask(c) & mask) != 0;
}

/* What a bracket collects, evaluated for all 256 bytes at the end. */
typedef struct bracket {
    int negated;
    uint32_t chars[8];
    struct {
        signed char lo, hi;
    } ranges[256];
    size_t n_ranges;
    unsigned classes[64];
    size_t n_classes;
    unsigned neg_classes[64];
    size_t n_neg_classes;
} bracket;

static void bracket_add_char(bracket *b, unsigned char c) { b->chars[c >> 5] |= 1u << (c & 31); }

static int add_class(parser *ps, re_class *cls) {
    if (ps->err) return -1;
    if (ps->n_classes >= RE_MAX_CLASSES) {
        fail(ps, "the pattern has more than %d character classes", RE_MAX_CLASSES);
        return -1;
    }
    if (ps->n_classes == ps->cap_classes) {
        const size_t cap = ps->cap_classes ? ps->cap_classes * 2 : 8;
        re_class *v = realloc(ps->classes, cap * sizeof *v);
        if (v == NULL) {
            fail(ps, "out of memory");
            return -1;
        }
        ps->classes = v;
        ps->cap_classes = cap;
    }
    ps->classes[ps->n_classes] = *cls;
    return (int)ps->n_classes++;
}

static int finish_bracket(parser *ps, const bracket *b) {
    re_class cls;
    memset(&cls, 0, sizeof cls);
    for (unsigned c = 0; c < 256; ++c) {
        int m = (b->chars[c >> 5] >> (c & 31)) & 1;
        const signed char sc = (signed char)c;
        for (size_t r = 0; !m && r < b->n_ranges; ++r) m = b->ranges[r].lo <= sc && sc <= b->ranges[r].hi;
        for (size_t k = 0; !m && k < b->n_classes; ++k) m = in_class(c, b->classes[k]);
        for (size_t k = 0; !m && k < b->n_neg_classes; ++k) m = !in_class(c, b->neg_classes[k]);
        if (m ^ b->negated) cls.bits[c >> 5] |= 1u << (c & 31);
    }
    return add_class(ps, &cls);
}

/* ---- scanner pieces -------------------------------------------------------- */

static int at_end(const parser *ps) { return ps->i >= ps->len; }
static int peek(const parser *ps) { return at_end(ps) ? -1 : ps->p[ps->i]; }

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* An escape after '\' (already consumed), as libstdc++'s _M_eat_escape_ecma
 * reads it. */
enum esc_kind { ESC_CHAR, ESC_WORDB, ESC_CLASS, ESC_BACKREF };
typedef struct esc {
    enum esc_kind kind;
    unsigned char c;   /* ESC_CHAR: the byte; ESC_CLASS: d s w D S W; ESC_WORDB: 'p' or 'n' */
    unsigned long ref; /* ESC_BACKREF */
} esc;

static int read_escape(parser *ps, int in_bracket, esc *e) {
    if (at_end(ps)) {
        fail(ps, "the pattern ends with a lone '\\'");
        return -1;
    }
    const unsigned char c = ps->p[ps->i++];
    static const char table[] = "0\0b\bf\fn\nr\rt\tv\v";
    for (size_t k = 0; k + 1 < sizeof table; k += 2) {
        if ((unsigned char)table[k] == c && (c != 'b' || in_bracket)) {
            e->kind = ESC_CHAR;
            e->c = (unsigned char)table[k + 1];
            return 0;
        }
    }
    if (c == 'b' || c == 'B') {
        e->kind = ESC_WORDB;
        e->c = c == 'b' ? 'p' : 'n';
    } else if (strchr("dDsSwW", c) != NULL) {
        e->kind = ESC_CLASS;
        e->c = c;
    } else if (c == 'c') {
        if (at_end(ps)) {
            fail(ps, "invalid '\\cX' control character at the end of the pattern");
            return -1;
        }
        e->kind = ESC_CHAR;
        e->c = ps->p[ps->i++]; /* libstdc++ takes X itself */
    } else if (c == 'x' || c == 'u') {
        const int n = c == 'x' ? 2 : 4;
        unsigned long v = 0;
        for (int k = 0; k < n; ++k) {
            const int h = at_end(ps) ? -1 : hexval(ps->p[ps->i]);
            if (h < 0) {
                fail(ps, "invalid '\\%c' escape: %d hex digits expected", c, n);
                return -1;
            }
            v = v * 16 + (unsigned long)h;
            ps->i++;
        }
        e->kind = ESC_CHAR;
        e->c = (unsigned char)v; /* a char holds the low byte */
    } else if (c >= '1' && c <= '9') {
        unsigned long v = c - '0';
        while (!at_end(ps) && ps->p[ps->i] >= '0' && ps->p[ps->i] <= '9') {
            if (v < 100000000ul) v = v * 10 + (ps->p[ps->i] - '0');
            ps->i++;
        }
        e->kind = ESC_BACKREF;
        e->ref = v;
    } else {
        e->kind = ESC_CHAR;
        e->c = c;
    }
    return 0;
}

/* ---- brackets ----------------------------------------------------------------- */

enum btok { BT_END, BT_DASH, BT_CHAR, BT_COLL, BT_EQUIV, BT_CLASSNAME, BT_QCLASS, BT_OTHER };

typedef struct btoken {
    enum btok t;
    unsigned char c;
    const unsigned char *name;
    size_t name_len;
} btoken;

static int bracket_token(parser *ps, btoken *t) {
    if (at_end(ps)) {
        fail(ps, "'[' without a closing ']'");
        return -1;
    }
    const unsigned char c = ps->p[ps->i++];
    if (c == '-') {
        t->t = BT_DASH;
    } else if (c == '[') {
        if (at_end(ps)) {
            fail(ps, "incomplete '[[' in a bracket expression");
            return -1;
        }
        const unsigned char k = ps->p[ps->i];
        if (k == '.' || k == ':' || k == '=') {
            ps->i++;
            const size_t start = ps->i;
            while (ps->i + 1 < ps->len && !(ps->p[ps->i] == k && ps->p[ps->i + 1] == ']')) ps->i++;
            if (ps->i + 1 >= ps->len) {
                fail(ps, "'[%c' without its closing '%c]'", k, k);
                return -1;
            }
            t->name = ps->p + start;
            t->name_len = ps->i - start;
            ps->i += 2;
            t->t = k == '.' ? BT_COLL : (k == ':' ? BT_CLASSNAME : BT_EQUIV);
        } else {
            t->t = BT_CHAR;
            t->c = '[';
        }
    } else if (c == ']') {
        t->t = BT_END;
    } else if (c == '\\') {
        esc e;
        if (read_escape(ps, 1, &e) != 0) return -1;
        if (e.kind == ESC_CHAR) {
            t->t = BT_CHAR;
            t->c = e.c;
        } else if (e.kind == ESC_CLASS) {
            t->t = BT_QCLASS;
            t->c = e.c;
        } else {
            t->t = BT_OTHER;
        }
    } else {
        t->t = BT_CHAR;
        t->c = c;
    }
    return 0;
}

/* '[' (and a '^') consumed. */
static frag parse_bracket(parser *ps, int negated) {
    frag f = { 0 };
    bracket *b = calloc(1, sizeof *b);
    if (b == NULL) {
        fail(ps, "out of memory");
        return f;
    }
    b->negated = negated;
    enum { LAST_NONE, LAST_CHAR, LAST_CLASS } last = LAST_NONE;
    unsigned char last_c = 0;
    btoken t;
    int first = 1;
    for (;;) {
        if (bracket_token(ps, &t) != 0) break;
        if (first) {
            first = 0;
            if (t.t == BT_CHAR || t.t == BT_DASH) {
                last = LAST_CHAR;
                last_c = t.t == BT_CHAR ? t.c : '-';
                continue;
            }
        }
        if (t.t == BT_END) break;
        if (t.t == BT_COLL || t.t == BT_EQUIV) {
            if (t.name_len != 1) {
                fail(ps, "'[%c%.*s%c]': only single characters are supported here", t.t == BT_COLL ? '.' : '=',
                     (int)t.name_len, (const char *)t.name, t.t == BT_COLL ? '.' : '=');
                break;
            }
            if (last == LAST_CHAR) bracket_add_char(b, last_c);
            if (t.t == BT_COLL) {
                last = LAST_CHAR;
                last_c = t.name[0];
            } else {
                bracket_add_char(b, t.name[0]);
                last = LAST_CLASS;
            }
        } else if (t.t == BT_CLASSNAME || t.t == BT_QCLASS) {
            unsigned mask;
            int neg = 0;
            if (t.t == BT_CLASSNAME) {
                mask = class_by_name(t.name, t.name_len);
                if (mask == 0) {
                    fail(ps, "unknown character class '[:%.*s:]'", (int)t.name_len, (const char *)t.name);
                    break;
                }
            } else {
                const unsigned char lc = t.c >= 'A' && t.c <= 'Z' ? (unsigned char)(t.c + 32) : t.c;
                mask = class_by_name(&lc, 1);
                neg = t.c != lc;
            }
            if (last == LAST_CHAR) bracket_add_char(b, last_c);
            last = LAST_CLASS;
            if (neg) {
                if (b->n_neg_classes < 64) b->neg_classes[b->n_neg_classes++] = mask;
            } else if (b->n_classes < 64) {
                b->classes[b->n_classes++] = mask;
            }
        } else if (t.t == BT_CHAR) {
            if (last == LAST_CHAR) bracket_add_char(b, last_c);
            last = LAST_CHAR;
            last_c = t.c;
        } else if (t.t == BT_DASH) {
            const size_t save = ps->i;
            if (!at_end(ps) && ps->p[ps->i] == ']') {
                ps->i++;
                if (last == LAST_CHAR) bracket_add_char(b, last_c);
                last = LAST_CHAR;
                last_c = '-';
                break;
            }
            if (last == LAST_CLASS) {
                fail(ps, "a range in '[...]' cannot start with a class");
                break;
            }
            if (last == LAST_CHAR) {
                btoken u;
                if (bracket_token(ps, &u) != 0) break;
                unsigned char hi;
                if (u.t == BT_CHAR) {
                    hi = u.c;
                } else if (u.t == BT_DASH) {
                    hi = '-';
                } else {
                    fail(ps, "invalid end of a '[x-y]' range");
                    break;
                }
                if ((signed char)last_c > (signed char)hi) {
                    fail(ps, "invalid range in a bracket expression (the start is after the end)");
                    break;
                }
                if (b->n_ranges >= 256) {
                    fail(ps, "more than 256 ranges in one bracket expression");
                    break;
                }
                b->ranges[b->n_ranges].lo = (signed char)last_c;
                b->ranges[b->n_ranges].hi = (signed char)hi;
                b->n_ranges++;
                last = LAST_NONE;
            } else {
                (void)save;
                last = LAST_CHAR;
                last_c = '-';
            }
        } else {
            fail(ps, "unexpected escape inside '[...]'");
            break;
        }
    }
    if (!ps->err) {
        if (last == LAST_CHAR) bracket_add_char(b, last_c);
        const int k = finish_bracket(ps, b);
        if (k >= 0) emit(ps, &f, OP_CLASS, 0, (uint16_t)k, 0, 0);
    }
    free(b);
    return f;
}

/* ---- the grammar ----------------------------------------------------------- */

static frag parse_disjunction(parser *ps);

static frag class_frag(parser *ps, unsigned char q) {
    frag f = { 0 };
    const unsigned char lc = q >= 'A' && q <= 'Z' ? (unsigned char)(q + 32) : q;
    const unsigned mask = class_by_name(&lc, 1);
    re_class cls;
    memset(&cls, 0, sizeof cls);
    for (unsigned c = 0; c < 256; ++c) {
        if (in_class(c, mask) ^ (q != lc)) cls.bits[c >> 5] |= 1u << (c & 31);
    }
    const int k = add_class(ps, &cls);
    if (k >= 0) emit(ps, &f, OP_CLASS, 0, (uint16_t)k, 0, 0);
    return f;
}

/* Reads a {n,m} quantifier after '{'. */
static int read_count(parser *ps, long *v) {
    if (at_end(ps) || ps->p[ps->i] < '0' || ps->p[ps->i] > '9') return 0;
    long n = 0;
    while (!at_end(ps) && ps->p[ps->i] >= '0' && ps->p[ps->i] <= '9') {
        if (n < 1000000) n = n * 10 + (ps->p[ps->i] - '0');
        ps->i++;
    }
    *v = n;
    return 1;
}

/* An assertion at the cursor (^ $ \b \B (?= (?!), never quantified: 1
 * when one was read into *f, 0 when the next token is none, -1 on an error
 * (ps->err set). Also checks that "(?" opens one of ECMAScript's groups. */
static int parse_assertion(parser *ps, frag *f) {
    const unsigned char c = ps->p[ps->i];
    if (c == '^' || c == '$') {
        ps->i++;
        emit(ps, f, c == '^' ? OP_BOL : OP_EOL, 0, 0, 0, 0);
        return 1;
    }
    if (c == '\\' && ps->i + 1 < ps->len && (ps->p[ps->i + 1] == 'b' || ps->p[ps->i + 1] == 'B')) {
        const int neg = ps->p[ps->i + 1] == 'B';
        ps->i += 2;
        emit(ps, f, OP_WORDB, (uint8_t)neg, 0, 0, 0);
        return 1;
    }
    if (c == '(' && ps->i + 2 < ps->len + 1 && ps->i + 1 < ps->len && ps->p[ps->i + 1] == '?') {
        if (ps->i + 2 >= ps->len) {
            fail(ps, "'(?' at the end of the pattern");
            return -1;
        }
        const unsigned char k = ps->p[ps->i + 2];
        if (k == '=' || k == '!') {
            ps->i += 3;
            frag sub = parse_disjunction(ps);
            if (!ps->err && peek(ps) != ')') fail(ps, "'(?%c' without a closing ')'", k);
            ps->i++;
            emit(ps, f, OP_LOOK, (uint8_t)(k == '!'), 0, (int32_t)sub.n + 2, 0);
            append(ps, f, &sub);
            emit(ps, f, OP_MATCH, 0, 0, 0, 0);
            frag_free(&sub);
            return 1;
        }
        if (k != ':') {
            fail(ps, "'(?%c': only (?:...), (?=...) and (?!...) are ECMAScript groups", k);
            return -1;
        }
    }
    return 0;
}

/* A group atom, "(...)" (capturing) or "(?:...)"; the cursor is on '('.
 * -1 when the term must stop (ps->err set). */
static int parse_group(parser *ps, frag *f) {
    ps->i++;
    int capture = 1;
    if (peek(ps) == '?') {
        ps->i += 2; /* "?:" checked by parse_assertion */
        capture = 0;
    }
    unsigned g = 0;
    if (capture) {
        g = ++ps->n_groups;
        if (g > 255) {
            fail(ps, "more than 255 groups");
            return -1;
        }
        ps->open[ps->n_open++] = g;
    }
    frag sub = parse_disjunction(ps);
    if (!ps->err && peek(ps) != ')') fail(ps, "'(' without a closing ')'");
    ps->i++;
    if (capture) {
        ps->n_open--;
        emit(ps, f, OP_SAVE, 0, (uint16_t)(2 * g), 0, 0);
    }
    append(ps, f, &sub);
    if (capture) emit(ps, f, OP_SAVE, 0, (uint16_t)(2 * g + 1), 0, 0);
    frag_free(&sub);
    return 0;
}

/* An escape atom (a character, a class, a back-reference); the cursor is on
 * the backslash. -1 when the term must stop (ps->err set). */
static int parse_escape_atom(parser *ps, frag *f) {
    ps->i++;
    esc e;
    if (read_escape(ps, 0, &e) != 0) return -1;
    if (e.kind == ESC_CHAR) {
        emit(ps, f, OP_CHAR, 0, e.c, 0, 0);
    } else if (e.kind == ESC_CLASS) {
        *f = class_frag(ps, e.c);
    } else if (e.kind == ESC_BACKREF) {
        if (e.ref > ps->n_groups) {
            fail(ps, "back-reference \\%lu: the pattern has only %u groups before it", e.ref, ps->n_groups);
            return -1;
        }
        for (unsigned k = 0; k < ps->n_open; ++k) {
            if (ps->open[k] == e.ref) {
                fail(ps, "back-reference \\%lu refers to a group that is still open", e.ref);
                return -1;
            }
        }
        ps->has_backref = 1;
        emit(ps, f, OP_BACKREF, 0, (uint16_t)e.ref, 0, 0);
    } else {
        fail(ps, "internal: word boundary as an atom");
        return -1;
    }
    return 0;
}

/* "{min}", "{min,}", "{min,max}" after an atom, the cursor past '{'; 0 with
 * ps->err set when malformed. */
static int read_braces(parser *ps, long *min, long *max) {
    *max = -1;
    if (!read_count(ps, min)) {
        fail(ps, "'{' must start a repetition count like {2}, {2,} or {2,5}");
        return 0;
    }
    int infinite = 0;
    if (peek(ps) == ',') {
        ps->i++;
        if (!read_count(ps, max)) infinite = 1;
    } else {
        *max = *min;
    }
    if (peek(ps) != '}') {
        fail(ps, "a repetition count must end with '}'");
        return 0;
    }
    ps->i++;
    if (!infinite && *max < *min) {
        fail(ps, "invalid repetition {%ld,%ld}: the maximum is below the minimum", *min, *max);
        return 0;
    }
    if (*min > RE_MAX_PROGRAM || *max > RE_MAX_PROGRAM) {
        fail(ps, "the pattern is too complex (a repetition count above %d)", RE_MAX_PROGRAM);
        return 0;
    }
    if (infinite) *max = -1;
    return 1;
}

/* The quantifiers after an atom, stacked as libstdc++ allows. */
static frag parse_quantifiers(parser *ps, frag f) {
    while (!ps->err && !at_end(ps)) {
        const unsigned char q = ps->p[ps->i];
        if (q == '*' || q == '+' || q == '?') {
            ps->i++;
            int lazy = 0;
            if (peek(ps) == '?') {
                lazy = 1;
                ps->i++;
            }
            f = q == '+' ? plus(ps, &f, lazy) : star_or_opt(ps, &f, lazy, q == '*');
        } else if (q == '{') {
            ps->i++;
            long min = 0, max = -1;
            if (!read_braces(ps, &min, &max)) break;
            int lazy = 0;
            if (peek(ps) == '?') {
                lazy = 1;
                ps->i++;
            }
            f = repeat(ps, &f, min, max, lazy);
        } else {
            break;
        }
    }
    return f;
}

/* One term: an assertion, or an atom with its quantifiers. *got = 0 when
 * the next token cannot start a term. */
static frag parse_term(parser *ps, int *got) {
    frag f = { 0 };
    *got = 0;
    if (at_end(ps) || ps->err) return f;
    const int assertion = parse_assertion(ps, &f);
    if (assertion != 0) {
        *got = assertion > 0;
        return f;
    }
    const unsigned char c = ps->p[ps->i];
    if (c == '.') {
        ps->i++;
        emit(ps, &f, OP_ANY, 0, 0, 0, 0);
    } else if (c == '(') {
        if (parse_group(ps, &f) != 0) return f;
    } else if (c == '[') {
        ps->i++;
        int neg = 0;
        if (peek(ps) == '^') {
            neg = 1;
            ps->i++;
        }
        f = parse_bracket(ps, neg);
    } else if (c == '\\') {
        if (parse_escape_atom(ps, &f) != 0) return f;
    } else if (c == '*' || c == '+' || c == '?' || c == '{' || c == '|' || c == ')') {
        return f; /* not a term */
    } else {
        ps->i++;
        emit(ps, &f, OP_CHAR, 0, c, 0, 0); /* includes ']' and '}' */
    }
    *got = 1;
    return parse_quantifiers(ps, f);
}

static frag parse_alternative(parser *ps) {
    frag f = { 0 };
    for (;;) {
        int got = 0;
        frag t = parse_term(ps, &got);
        if (!got || ps->err) {
            frag_free(&t);
            break;
        }
        append(ps, &f, &t);
        frag_free(&t);
    }
    return f;
}

static frag parse_disjunction(parser *ps) {
    if (++ps->depth > RE_MAX_DEPTH) {
        fail(ps, "groups nested more than %d deep", RE_MAX_DEPTH);
        frag none = { 0 };
        return none;
    }
    frag a = parse_alternative(ps);
    while (!ps->err && peek(ps) == '|') {
        ps->i++;
        frag b = parse_alternative(ps);
        a = alt(ps, &a, &b);
    }
    ps->depth--;
    return a;
}

int ecma_re_compile(const char *pattern, size_t len, ecma_re **out, char *why, size_t why_size) {
    *out = NULL;
    if (why != NULL && why_size > 0) why[0] = '\0';
    parser ps;
    memset(&ps, 0, sizeof ps);
    ps.p = (const unsigned char *)pattern;
    ps.len = len;
    ps.why = why;
    ps.why_size = why_size;
    frag f = parse_disjunction(&ps);
    if (!ps.err && !at_end(&ps)) {
        const unsigned char c = ps.p[ps.i];
        if (c == ')') {
            fail(&ps, "')' without an opening '(' at offset %zu", ps.i);
        } else {
            fail(&ps, "'%c' at offset %zu has nothing to repeat", c, ps.i);
        }
    }
    emit(&ps, &f, OP_MATCH, 0, 0, 0, 0);
    ecma_re *re = NULL;
    if (!ps.err) {
        re = calloc(1, sizeof *re);
        if (re == NULL) fail(&ps, "out of memory");
    }
    if (ps.err) {
        frag_free(&f);
        free(ps.classes);
        return -1;
    }
    re->prog = f.v;
    re->n = f.n;
    re->classes = ps.classes;
    re->n_classes = ps.n_classes;
    re->n_groups = ps.n_groups;
    re->has_backref = ps.has_backref;
    *out = re;
    return 0;
}

void ecma_re_free(ecma_re *re) {
    if (re == NULL) return;
    free(re->prog);
    free(re->classes);
    free(re);
}

/* ---- matching ------------------------------------------------------------------- */

typedef struct vm {
    const ecma_re *re;
    const unsigned char *s;
    size_t n;
    int prev_avail; /* the search is past its first start position */
    long budget;
} vm;

typedef struct frame {
    size_t pc, pos;
    int restore; /* 1: restore caps[slot] = value instead */
    size_t slot;
    ptrdiff_t value;
} frame;

typedef struct stack {
    frame *v;
    size_t n, cap;
} stack;

static int push(stack *st, frame f) {
    if (st->n == st->cap) {
        const size_t cap = st->cap ? st->cap * 2 : 64;
        frame *v = realloc(st->v, cap * sizeof *v);
        if (v == NULL) return -1;
        st->v = v;
        st->cap = cap;
    }
    st->v[st->n++] = f;
    return 0;
}

static int run(vm *m, size_t pc0, size_t pos0, size_t base, ptrdiff_t *caps, uint8_t *seen);

/* Whether a state may still lead to a match: seen[] marks states already
 * tried (only kept without back-references). */
static int mark(const vm *m, uint8_t *seen, size_t pc, size_t pos) {
    if (seen == NULL) return 0;
    const size_t bit = pc * (m->n + 1) + pos;
    if (seen[bit >> 3] & (1u << (bit & 7))) return 1;
    seen[bit >> 3] |= (uint8_t)(1u << (bit & 7));
    return 0;
}

static uint8_t *new_seen(const vm *m) {
    if (m->re->has_backref) return NULL;
    const size_t bits = m->re->n * (m->n + 1);
    return calloc(bits / 8 + 1, 1);
}

static int lookahead(vm *m, size_t pc, size_t pos, ptrdiff_t *caps, stack *st, int *ok) {
    const size_t nc = 2 * ((size_t)m->re->n_groups + 1);
    ptrdiff_t *sub = NULL;
    uint8_t *seen = NULL;
    if (caps != NULL) {
        sub = malloc(nc * sizeof *sub);
        if (sub == NULL) return -1;
        memcpy(sub, caps, nc * sizeof *sub);
    } else {
        seen = new_seen(m);
        if (seen == NULL) return -1;
    }
    const int r = run(m, pc + 1, pos, pos, sub, seen);
    if (r == 1 && caps != NULL) {
        /* A positive lookahead keeps its captures; undone on backtracking. */
        for (size_t k = 0; k < nc; ++k) {
            if (sub[k] != caps[k]) {
                frame f = { 0, 0, 1, k, caps[k] };
                if (push(st, f) != 0) {
                    free(sub);
                    return -1;
                }
                caps[k] = sub[k];
            }
        }
    }
    free(sub);
    free(seen);
    if (r < 0) return r;
    *ok = r == 1;
    return 0;
}

/* 1 match, 0 none, -1 out of budget or memory. base: where this (sub)search
 * began, for ^ and \b at its first position. */
static int run(vm *m, size_t pc0, size_t pos0, size_t base, ptrdiff_t *caps, uint8_t *seen) {
    const re_inst *prog = m->re->prog;
    const unsigned char *s = m->s;
    stack st = { 0 };
    int result = 0;
    frame start = { pc0, pos0, 0, 0, 0 };
    if (push(&st, start) != 0) return -1;
    while (st.n > 0 && result == 0) {
        frame fr = st.v[--st.n];
        if (fr.restore) {
            caps[fr.slot] = fr.value;
            continue;
        }
        size_t pc = fr.pc, pos = fr.pos;
        for (;;) {
            if (mark(m, seen, pc, pos)) break;
            if (caps != NULL && --m->budget < 0) {
                result = -1;
                break;
            }
            const re_inst *in = &prog[pc];
            int ok = 0;
            switch (in->op) {
            case OP_CHAR:
                ok = pos < m->n && s[pos] == in->arg;
                if (ok) pos++;
                pc++;
                break;
            case OP_ANY:
                ok = pos < m->n && s[pos] != '\n' && s[pos] != '\r';
                if (ok) pos++;
                pc++;
                break;
            case OP_CLASS: {
                const re_class *c = &m->re->classes[in->arg];
                ok = pos < m->n && ((c->bits[s[pos] >> 5] >> (s[pos] & 31)) & 1u);
                if (ok) pos++;
                pc++;
                break;
            }
            case OP_SPLIT: {
                frame alt_fr = { (size_t)((ptrdiff_t)pc + in->y), pos, 0, 0, 0 };
                if (push(&st, alt_fr) != 0) {
                    result = -1;
                    break;
                }
                pc = (size_t)((ptrdiff_t)pc + in->x);
                ok = 1;
                break;
            }
            case OP_JMP:
                pc = (size_t)((ptrdiff_t)pc + in->x);
                ok = 1;
                break;
            case OP_SAVE:
                if (caps != NULL) {
                    frame f = { 0, 0, 1, in->arg, caps[in->arg] };
                    if (push(&st, f) != 0) {
                        result = -1;
                        break;
                    }
                    caps[in->arg] = (ptrdiff_t)pos;
                }
                pc++;
                ok = 1;
                break;
            case OP_BOL:
                ok = pos == base && !m->prev_avail;
                pc++;
                break;
            case OP_EOL:
                ok = pos == m->n;
                pc++;
                break;
            case OP_WORDB: {
                const int left = (pos > base || m->prev_avail) && pos > 0 && is_word(s[pos - 1]);
                const int right = pos < m->n && is_word(s[pos]);
                ok = (left != right) != in->neg;
                pc++;
                break;
            }
            case OP_LOOK: {
                int got = 0;
                if (lookahead(m, pc, pos, caps, &st, &got) != 0) {
                    result = -1;
                    break;
                }
                ok = got != in->neg;
                pc = (size_t)((ptrdiff_t)pc + in->x);
                break;
            }
            case OP_BACKREF: {
                const ptrdiff_t a = caps[2 * in->arg], b = caps[2 * in->arg + 1];
                if (a < 0 || b < 0 || b < a) {
                    ok = 1; /* an unset group matches the empty string */
                } else {
                    const size_t len = (size_t)(b - a);
                    ok = pos + len <= m->n && memcmp(s + a, s + pos, len) == 0;
                    if (ok) pos += len;
                }
                pc++;
                break;
            }
            case OP_MATCH: result = 1; break;
            }
            if (result != 0 || !ok) break;
        }
    }
    free(st.v);
    return result;
}

int ecma_re_search(const ecma_re *re, const char *s, size_t len) {
    vm m;
    m.re = re;
    m.s = (const unsigned char *)s;
    m.n = len;
    m.budget = RE_BACKREF_BUDGET;
    m.prev_avail = 0;
    const size_t nc = 2 * ((size_t)re->n_groups + 1);
    ptrdiff_t *caps = NULL;
    uint8_t *seen = NULL;
    if (re->has_backref) {
        caps = malloc(nc * sizeof *caps);
        if (caps == NULL) return -1;
    } else {
        seen = new_seen(&m);
        if (seen == NULL) return -1;
    }
    int r = 0;
    for (size_t start = 0; start <= len && r == 0; ++start) {
        m.prev_avail = start > 0;
        if (caps != NULL) {
            for (size_t k = 0; k < nc; ++k) caps[k] = -1;
        }
        r = run(&m, 0, start, start, caps, seen);
    }
    free(caps);
    free(seen);
    return r;
}
