/* SPDX-License-Identifier: MIT */
/* The strict JSON parser under the safetensors header and the HF converter
 * (host/src/base/json.h), and the tree built on it. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file_input.h"
#include "json.h"
#include "base_test.h"

/* Re-serialises the events compactly, so a test can compare one string. */
typedef struct canon {
    char out[8192];
    size_t len;
    int need_comma[ANVIL_JSON_MAX_DEPTH + 2];
    int in_array[ANVIL_JSON_MAX_DEPTH + 2];
    int bad_len;
    int stop_after; /* stop the parse after this many events (0: never) */
    int events;
} canon;

static void put(canon *c, const char *s, size_t n) {
    if (c->len + n < sizeof c->out) {
        memcpy(c->out + c->len, s, n);
        c->len += n;
        c->out[c->len] = '\0';
    }
}

/* Strings and keys come out as <text> so escapes need not be redone. */
static int on_event(void *user, const anvil_json_event *ev) {
    canon *c = user;
    c->events++;
    const int d = ev->depth;
    const int is_end = ev->kind == ANVIL_JSON_OBJECT_END || ev->kind == ANVIL_JSON_ARRAY_END;
    if (!is_end && d > 0 && (ev->kind == ANVIL_JSON_KEY || c->in_array[d])) {
        if (c->need_comma[d]) {
            put(c, ",", 1);
        }
        c->need_comma[d] = 1;
    }
    switch (ev->kind) {
    case ANVIL_JSON_OBJECT_BEGIN:
    case ANVIL_JSON_ARRAY_BEGIN:
        put(c, ev->kind == ANVIL_JSON_OBJECT_BEGIN ? "{" : "[", 1);
        c->need_comma[d + 1] = 0;
        c->in_array[d + 1] = ev->kind == ANVIL_JSON_ARRAY_BEGIN;
        break;
    case ANVIL_JSON_OBJECT_END: put(c, "}", 1); break;
    case ANVIL_JSON_ARRAY_END: put(c, "]", 1); break;
    case ANVIL_JSON_KEY:
    case ANVIL_JSON_STRING:
        put(c, "<", 1);
        put(c, ev->text, ev->len);
        put(c, ev->kind == ANVIL_JSON_KEY ? ">:" : ">", ev->kind == ANVIL_JSON_KEY ? 2 : 1);
        c->bad_len |= strlen(ev->text) != ev->len;
        break;
    case ANVIL_JSON_NUMBER: put(c, ev->text, ev->len); break;
    case ANVIL_JSON_TRUE: put(c, "true", 4); break;
    case ANVIL_JSON_FALSE: put(c, "false", 5); break;
    case ANVIL_JSON_NULL: put(c, "null", 4); break;
    }
    return c->stop_after != 0 && c->events >= c->stop_after;
}

static anvil_json_status parse(const char *text, canon *c, anvil_json_error *e) {
    memset(c, 0, sizeof *c);
    return anvil__json_parse(text, strlen(text), on_event, c, e);
}

static anvil_json_status status_of(const char *text) {
    canon c;
    anvil_json_error e;
    const anvil_json_status st = parse(text, &c, &e);
    if (st != ANVIL_JSON_OK) {
        CU_ASSERT(strlen(e.message) > 0);
        CU_ASSERT_EQUAL(e.status, st);
    }
    return st;
}

static void test_valid_document(void) {
    canon c;
    anvil_json_error e;
    const char *text = " {\"a\" : [1, -2.5e+3, 0, true, false, null],\n"
                       "\t\"s\":\"x\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\xc3\xa9\","
                       " \"o\":{}, \"e\":[], \"n\":{\"m\":[[],{\"k\":1}]}} \r\n";
    CU_ASSERT_EQUAL_FATAL(parse(text, &c, &e), ANVIL_JSON_OK);
    /* x " \ / BS FF LF CR TAB é (escaped) U+1F600 (surrogate pair) é (raw) */
    const char *want = "{<a>:[1,-2.5e+3,0,true,false,null],"
                       "<s>:<x\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80\xc3\xa9>,"
                       "<o>:{},<e>:[],<n>:{<m>:[[],{<k>:1}]}}";
    CU_ASSERT_STRING_EQUAL(c.out, want);
    CU_ASSERT_EQUAL(c.bad_len, 0);
}

/* Depth and offsets of the events. */
typedef struct trace {
    anvil_json_event ev[32];
    int n;
} trace;

static int on_trace(void *user, const anvil_json_event *ev) {
    trace *t = user;
    if (t->n < 32) {
        t->ev[t->n] = *ev;
        t->ev[t->n].text = NULL; /* only valid during the call */
    }
    t->n++;
    return 0;
}

static void test_event_depth_and_offsets(void) {
    trace t = { 0 };
    const char *text = "{\"w\":{\"shape\":[2,3]}}";
    CU_ASSERT_EQUAL_FATAL(anvil__json_parse(text, strlen(text), on_trace, &t, NULL), ANVIL_JSON_OK);
    CU_ASSERT_EQUAL_FATAL(t.n, 10);
    const struct {
        anvil_json_event_kind kind;
        int depth;
        size_t offset;
    } want[10] = {
        { ANVIL_JSON_OBJECT_BEGIN, 0, 0 }, { ANVIL_JSON_KEY, 1, 1 },          { ANVIL_JSON_OBJECT_BEGIN, 1, 5 },
        { ANVIL_JSON_KEY, 2, 6 },          { ANVIL_JSON_ARRAY_BEGIN, 2, 14 }, { ANVIL_JSON_NUMBER, 3, 15 },
        { ANVIL_JSON_NUMBER, 3, 17 },      { ANVIL_JSON_ARRAY_END, 2, 18 },   { ANVIL_JSON_OBJECT_END, 1, 19 },
        { ANVIL_JSON_OBJECT_END, 0, 20 },
    };
    for (int i = 0; i < 10; i++) {
        CU_ASSERT_EQUAL(t.ev[i].kind, want[i].kind);
        CU_ASSERT_EQUAL(t.ev[i].depth, want[i].depth);
        CU_ASSERT_EQUAL(t.ev[i].offset, want[i].offset);
    }
}

static void test_handler_stop(void) {
    canon c;
    memset(&c, 0, sizeof c);
    c.stop_after = 3;
    anvil_json_error e;
    CU_ASSERT_EQUAL(anvil__json_parse("[1,2,3,4]", 9, on_event, &c, &e), ANVIL_JSON_E_STOPPED);
    CU_ASSERT_EQUAL(c.events, 3);
    CU_ASSERT_EQUAL(e.status, ANVIL_JSON_E_STOPPED);
    /* No handler at all: a validator. */
    CU_ASSERT_EQUAL(anvil__json_parse("[1,{\"a\":2}]", 11, NULL, NULL, NULL), ANVIL_JSON_OK);
    CU_ASSERT_EQUAL(anvil__json_parse("[1,{\"a\":2,\"a\":3}]", 17, NULL, NULL, NULL), ANVIL_JSON_E_DUP_KEY);
}

static void test_syntax_refused(void) {
    const char *bad[] = {
        "",           /* empty */
        "   ",        /* only whitespace */
        "{",          /* unterminated object */
        "{\"a\":1,}", /* trailing comma */
        "[1,2,]",     /* trailing comma */
        "{\"a\" 1}",  /* missing colon */
        "{a:1}",      /* unquoted key */
        "{'a':1}",    /* single quotes */
        "[01]",       /* leading zero */
        "[1.]",       /* no fraction digits */
        "[.5]",       /* no integer part */
        "[1e]",       /* empty exponent */
        "[+1]",       /* plus sign */
        "[-]",        /* lone minus */
        "[NaN]",      /* not JSON */
        "[Infinity]",
        "[tru]",                  /* truncated literal */
        "[True]",                 /* wrong case */
        "{} x",                   /* trailing data */
        "{}{}",                   /* two values */
        "{\"a\":1} // c",         /* comment */
        "[\"a\x01\"]",            /* raw control character */
        "[\"a\tb\"]",             /* raw tab */
        "[\"\\x41\"]",            /* invalid escape */
        "[\"\\u12\"]",            /* short \u */
        "[\"\\u12G4\"]",          /* bad hex */
        "[\"\\ud800\"]",          /* lone high surrogate */
        "[\"\\ud800\\u0041\"]",   /* high surrogate + non-low */
        "[\"\\udc00\"]",          /* lone low surrogate */
        "[\"\\u0000\"]",          /* NUL refused */
        "[\"abc",                 /* unterminated string */
        "[\"abc\\\"]",            /* escaped closing quote */
        "[\"\xc0\x80\"]",         /* overlong UTF-8 */
        "[\"\xed\xa0\x80\"]",     /* UTF-8 surrogate */
        "[\"\xf4\x90\x80\x80\"]", /* past U+10FFFF */
        "[\"\xe2\x82\"]",         /* truncated sequence */
        "[\xc3\xa9]",             /* non-ASCII outside a string */
        "{\"a\":1 \"b\":2}",      /* missing comma */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const anvil_json_status st = status_of(bad[i]);
        if (st != ANVIL_JSON_E_SYNTAX) {
            fprintf(stderr, "\n  accepted or misreported: [%s] -> %d\n", bad[i], (int)st);
        }
        CU_ASSERT_EQUAL(st, ANVIL_JSON_E_SYNTAX);
    }
    /* An embedded NUL byte (not an escape) is a raw control character. */
    CU_ASSERT_EQUAL(anvil__json_parse("[\"a\0b\"]", 7, NULL, NULL, NULL), ANVIL_JSON_E_SYNTAX);
}

static void test_error_position_and_path(void) {
    canon c;
    anvil_json_error e;
    CU_ASSERT_EQUAL(parse("{\"w\":{\"shape\":[1,2,x]}}", &c, &e), ANVIL_JSON_E_SYNTAX);
    CU_ASSERT_EQUAL(e.offset, 19);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.message, "byte 19"));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.message, "\"w\".\"shape\"[2]"));
}

static void test_depth_limit(void) {
    char deep[2 * ANVIL_JSON_MAX_DEPTH + 8];
    size_t n = 0;
    for (int i = 0; i < ANVIL_JSON_MAX_DEPTH; i++) {
        deep[n++] = '[';
    }
    for (int i = 0; i < ANVIL_JSON_MAX_DEPTH; i++) {
        deep[n++] = ']';
    }
    deep[n] = '\0';
    CU_ASSERT_EQUAL(status_of(deep), ANVIL_JSON_OK);
    /* One more level is refused, not a stack overflow. */
    char deeper[2 * ANVIL_JSON_MAX_DEPTH + 8];
    deeper[0] = '[';
    memcpy(deeper + 1, deep, n);
    deeper[n + 1] = ']';
    deeper[n + 2] = '\0';
    CU_ASSERT_EQUAL(status_of(deeper), ANVIL_JSON_E_SYNTAX);
    /* A hostile 100k-deep nest fails fast and cleanly. */
    const size_t big = 100000;
    char *nest = malloc(big + 1);
    memset(nest, '[', big);
    nest[big] = '\0';
    CU_ASSERT_EQUAL(status_of(nest), ANVIL_JSON_E_SYNTAX);
    free(nest);
}

static void test_duplicate_keys(void) {
    canon c;
    anvil_json_error e;
    CU_ASSERT_EQUAL(parse("{\"a\":1,\"b\":2,\"a\":3}", &c, &e), ANVIL_JSON_E_DUP_KEY);
    CU_ASSERT_EQUAL(e.offset, 13);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.message, "\"a\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.message, "first at byte 1"));
    /* Escapes are decoded before comparing: "\u0061" is "a". */
    CU_ASSERT_EQUAL(status_of("{\"a\":1,\"\\u0061\":2}"), ANVIL_JSON_E_DUP_KEY);
    /* Nested objects are checked too, and the path names the parent. */
    CU_ASSERT_EQUAL(parse("{\"t\":{\"dtype\":\"F32\",\"dtype\":\"F16\"}}", &c, &e), ANVIL_JSON_E_DUP_KEY);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.message, "(in \"t\")"));
    /* A syntax error anywhere beats a duplicate found earlier. */
    CU_ASSERT_EQUAL(parse("{\"t\":{\"a\":1,\"a\":2},\"u\":[01]}", &c, &e), ANVIL_JSON_E_SYNTAX);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.message, "leading zero"));
    /* Two duplicates: the one whose second copy comes first is reported. */
    CU_ASSERT_EQUAL(parse("{\"x\":1,\"y\":1,\"y\":2,\"x\":2}", &c, &e), ANVIL_JSON_E_DUP_KEY);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.message, "\"y\""));
    /* Same key in different objects is fine; keys that are prefixes too. */
    CU_ASSERT_EQUAL(status_of("{\"a\":{\"a\":1},\"b\":{\"a\":2},\"ab\":0,\"\":1}"), ANVIL_JSON_OK);
    /* Keys of a closed inner object do not clash with the outer's. */
    CU_ASSERT_EQUAL(status_of("{\"a\":{\"b\":1},\"b\":{\"a\":2}}"), ANVIL_JSON_OK);
    /* Many keys, one duplicate far apart. */
    const size_t cap = 64 * 1024;
    char *buf = malloc(cap);
    size_t n = 0;
    n += (size_t)snprintf(buf + n, cap - n, "{");
    for (int i = 0; i < 1000; i++) {
        n += (size_t)snprintf(buf + n, cap - n, "\"k%d\":{\"v\":%d},", i, i);
    }
    n += (size_t)snprintf(buf + n, cap - n, "\"k7\":0}");
    CU_ASSERT_FATAL(n < cap);
    CU_ASSERT_EQUAL(anvil__json_parse(buf, n, NULL, NULL, NULL), ANVIL_JSON_E_DUP_KEY);
    free(buf);
}

static void test_to_u64(void) {
    const struct {
        const char *text;
        int rc;
        uint64_t v;
    } cases[] = {
        { "0", 0, 0 },
        { "18446744073709551615", 0, UINT64_MAX },
        { "18446744073709551616", 2, 0 },
        { "99999999999999999999999", 2, 0 },
        { "-1", 1, 0 },
        { "-0", 1, 0 },
        { "1.0", 1, 0 },
        { "1e3", 1, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t v = 7;
        CU_ASSERT_EQUAL(anvil__json_number_u64(cases[i].text, strlen(cases[i].text), &v), cases[i].rc);
        if (cases[i].rc == 0) {
            CU_ASSERT_EQUAL(v, cases[i].v);
        }
    }
}

static void test_utf8(void) {
    struct {
        const char *s;
        size_t valid;
    } cases[] = {
        { "plain ascii", 11 },
        { "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9 }, /* é € U+1F600 */
        { "\xf4\x8f\xbf\xbf", 4 },                     /* U+10FFFF */
        { "ab\x80", 2 },                               /* stray continuation */
        { "ab\xc1\xbf", 2 },                           /* overlong 2-byte */
        { "\xe0\x9f\xbf", 0 },                         /* overlong 3-byte */
        { "\xf0\x8f\xbf\xbf", 0 },                     /* overlong 4-byte */
        { "x\xed\xa0\x80", 1 },                        /* surrogate D800 */
        { "\xed\x9f\xbf", 3 },                         /* U+D7FF is fine */
        { "\xf4\x90\x80\x80", 0 },                     /* past U+10FFFF */
        { "\xf5\x80\x80\x80", 0 },                     /* invalid lead */
        { "\xff", 0 },
        { "ok\xe2\x82", 2 }, /* truncated at the end */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const size_t got = anvil__utf8_valid_prefix((const unsigned char *)cases[i].s, strlen(cases[i].s));
        CU_ASSERT_EQUAL(got, cases[i].valid);
    }
}

static void test_quote_for_message(void) {
    char out[64];
    anvil__json_quote_for_message(out, sizeof out, "a\"b\n\xc3\xa9", 6, 100);
    CU_ASSERT_STRING_EQUAL(out, "\"a\\\"b\\x0a\xc3\xa9\"");
    anvil__json_quote_for_message(out, sizeof out, "abcdef", 6, 3);
    CU_ASSERT_STRING_EQUAL(out, "\"abc\"...");
    /* A tiny buffer still gets a terminated string. */
    char tiny[4];
    anvil__json_quote_for_message(tiny, sizeof tiny, "abcdef", 6, 100);
    CU_ASSERT(strlen(tiny) < sizeof tiny);
}

/* The tree (json_tree.c): members in file order, numbers as written,
 * lookups, and the parser's refusals carried through. */
static void test_tree(void) {
    const char *doc = "{\"b\": 10000, \"a\": 1e4, \"c\": [true, null, \"x\\u00e9\"], \"n\": -9223372036854775808,"
                      " \"big\": 9223372036854775808, \"f\": 2.5}";
    anvil_json_value *root = NULL;
    anvil_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(anvil__json_tree_parse(doc, strlen(doc), "doc", &root, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(root->kind, ANVIL_JSON_OBJECT_BEGIN);
    CU_ASSERT_EQUAL_FATAL(root->n_items, 6);
    CU_ASSERT_STRING_EQUAL(root->items[0]->key, "b");
    CU_ASSERT_STRING_EQUAL(root->items[1]->key, "a");
    const anvil_json_value *b = anvil__json_get(root, "b"), *a = anvil__json_get(root, "a");
    CU_ASSERT_STRING_EQUAL(b->text, "10000");
    CU_ASSERT_STRING_EQUAL(a->text, "1e4");
    CU_ASSERT(anvil__json_is_int(b));
    CU_ASSERT(!anvil__json_is_int(a) && anvil__json_is_number(a));
    CU_ASSERT_DOUBLE_EQUAL(anvil__json_f64(a), 10000.0, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(anvil__json_f64(anvil__json_get(root, "f")), 2.5, 0.0);
    int64_t v = 0;
    CU_ASSERT_EQUAL(anvil__json_i64(anvil__json_get(root, "n"), &v), 0);
    CU_ASSERT_EQUAL(v, INT64_MIN);
    CU_ASSERT_EQUAL(anvil__json_i64(anvil__json_get(root, "big"), &v), -1); /* out of range */
    CU_ASSERT_EQUAL(anvil__json_i64(a, &v), -1);                            /* not an int */
    const anvil_json_value *c = anvil__json_get(root, "c");
    CU_ASSERT_EQUAL_FATAL(c->n_items, 3);
    CU_ASSERT_EQUAL(c->items[0]->kind, ANVIL_JSON_TRUE);
    CU_ASSERT(anvil__json_is_null(c->items[1]));
    CU_ASSERT_STRING_EQUAL(anvil__json_str(c->items[2]), "x\xc3\xa9");
    CU_ASSERT_EQUAL(c->items[2]->len, 3);
    CU_ASSERT_PTR_NULL(anvil__json_str(b));
    CU_ASSERT_PTR_NULL(anvil__json_get(root, "missing"));
    CU_ASSERT(anvil__json_is_null(anvil__json_get(root, "missing")));
    CU_ASSERT_PTR_NULL(anvil__json_get(c, "a")); /* an array has no members */
    anvil__json_free(root);

    root = NULL;
    CU_ASSERT_EQUAL(anvil__json_tree_parse("{\"k\":1,\"k\":2}", 13, "dup.json", &root, &err), ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NULL(root);
    CU_ASSERT(strstr(err.message, "dup.json is not valid JSON") != NULL);
    CU_ASSERT_EQUAL(anvil__json_tree_parse("[1,]", 4, "t.json", &root, &err), ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NULL(root);
}

/* A tree built by hand; many children grow the array without losing one. */
static void test_tree_build(void) {
    anvil_json_value *list = anvil__json_new(ANVIL_JSON_ARRAY_BEGIN, "list", NULL, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(list);
    CU_ASSERT_STRING_EQUAL(list->key, "list");
    char num[32];
    for (int i = 0; i < 100000; ++i) {
        const int n = snprintf(num, sizeof num, "%d", i);
        anvil_json_value *item = anvil__json_new(ANVIL_JSON_NUMBER, NULL, num, (size_t)n);
        CU_ASSERT_PTR_NOT_NULL_FATAL(item);
        CU_ASSERT_EQUAL_FATAL(anvil__json_append(list, item), 0);
    }
    CU_ASSERT_EQUAL(list->n_items, 100000);
    CU_ASSERT(list->cap_items >= list->n_items && list->cap_items < 2 * list->n_items + 8);
    int64_t v = 0;
    CU_ASSERT_EQUAL(anvil__json_i64(list->items[99999], &v), 0);
    CU_ASSERT_EQUAL(v, 99999);
    /* text is copied: len bytes, NUL-terminated */
    anvil_json_value *s = anvil__json_new(ANVIL_JSON_STRING, NULL, "abcdef", 3);
    CU_ASSERT_STRING_EQUAL(s->text, "abc");
    CU_ASSERT_EQUAL(s->len, 3);
    anvil__json_free(s);
    anvil__json_free(list);
    anvil__json_free(NULL);
}

/* anvil__json_tree_load reads through file_input_read: the whole file, a
 * missing one ANVIL_E_NOT_FOUND; file_input_read refuses a byte too many. */
static void test_tree_load(void) {
    char path[] = "/tmp/anvil_json_tree_XXXXXX";
    const int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    const char *doc = "{\"vocab_size\": 32000}";
    CU_ASSERT_EQUAL_FATAL(write(fd, doc, strlen(doc)), (ssize_t)strlen(doc));
    close(fd);
    anvil_json_value *root = NULL;
    anvil_error err = { 0 };
    CU_ASSERT_EQUAL_FATAL(anvil__json_tree_load(path, &root, &err), ANVIL_OK);
    int64_t v = 0;
    CU_ASSERT_EQUAL(anvil__json_i64(anvil__json_get(root, "vocab_size"), &v), 0);
    CU_ASSERT_EQUAL(v, 32000);
    anvil__json_free(root);
    char *buf = NULL;
    size_t len = 0;
    CU_ASSERT_EQUAL(file_input_read(path, strlen(doc), "a test file", &buf, &len, &err), ANVIL_OK);
    CU_ASSERT_EQUAL(len, strlen(doc));
    CU_ASSERT_STRING_EQUAL(buf, doc);
    free(buf);
    CU_ASSERT_EQUAL(file_input_read(path, strlen(doc) - 1, "a test file", &buf, &len, &err), ANVIL_E_FORMAT);
    CU_ASSERT_PTR_NULL(buf);
    CU_ASSERT(strstr(err.message, "not a test file") != NULL);
    unlink(path);
    CU_ASSERT_EQUAL(anvil__json_tree_load(path, &root, &err), ANVIL_E_NOT_FOUND);
    CU_ASSERT_PTR_NULL(root);
}

void base_add_json_tests(void) {
    CU_pSuite s = CU_add_suite("json", NULL, NULL);
    CU_add_test(s, "valid document", test_valid_document);
    CU_add_test(s, "event depth and offsets", test_event_depth_and_offsets);
    CU_add_test(s, "handler stop", test_handler_stop);
    CU_add_test(s, "syntax refused", test_syntax_refused);
    CU_add_test(s, "error position and path", test_error_position_and_path);
    CU_add_test(s, "depth limit", test_depth_limit);
    CU_add_test(s, "duplicate keys", test_duplicate_keys);
    CU_add_test(s, "u64 conversion", test_to_u64);
    CU_add_test(s, "utf-8 validation", test_utf8);
    CU_add_test(s, "quote for message", test_quote_for_message);
    CU_add_test(s, "tree", test_tree);
    CU_add_test(s, "tree built by hand", test_tree_build);
    CU_add_test(s, "tree load", test_tree_load);
}
