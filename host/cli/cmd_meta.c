/* SPDX-License-Identifier: MIT */
/*
 * anvil meta get|set|delete|rename FILE ... [--out OUT] [--json]
 *
 * Edit GGUF metadata without touching the tensor data (llama.cpp's
 * gguf_set_metadata.py and gguf_new_metadata.py in one command). The file
 * is written again through anvil_gguf_write_metadata: only the header is new
 * when the data offset does not move, else the whole file is rewritten,
 * streamed; atomic either way. Entries keep their place; new ones go last.
 */
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "anvil/gguf.h"
#include "cli.h"
#include "cli_gguf.h"

const char cli_help_meta[] = "usage: anvil meta get FILE KEY [--json]\n"
                             "       anvil meta set FILE KEY=[TYPE:]VALUE... [--out OUT] [--realign] [--json]\n"
                             "       anvil meta delete FILE KEY... [--out OUT] [--json]\n"
                             "       anvil meta rename FILE OLD NEW [--out OUT] [--json]\n"
                             "\n"
                             "Read or edit the metadata of a GGUF file without touching its tensor data.\n"
                             "\n"
                             "get     print KEY's value (a string as it is, an array in full)\n"
                             "set     set each KEY to VALUE; TYPE is one of u8 i8 u16 i16 u32 i32 u64 i64 f32\n"
                             "        f64 bool str and may be left out when KEY exists (its type is kept). An\n"
                             "        existing entry keeps its place, a new one is added last. Arrays cannot be\n"
                             "        set from the command line.\n"
                             "delete  remove each KEY\n"
                             "rename  give OLD's value the name NEW (in OLD's place)\n"
                             "\n"
                             "FILE is written again in place (atomically: a temporary file renamed over it),\n"
                             "or to OUT with --out ('-' (stdout), a device or a FIFO: written into, front to\n"
                             "back; FILE itself must be a regular file). When the header keeps its size up to\n"
                             "the data section (as gguf_set_metadata requires), only the header is new and\n"
                             "the tensor bytes are cloned or copied by the kernel; otherwise the whole file is\n"
                             "rewritten.\n"
                             "split.* keys are refused (they tie a split set together); changing\n"
                             "general.alignment moves every tensor and needs --realign.\n"
                             "\n"
                             "  --out OUT   write the result to OUT and leave FILE as it is\n"
                             "  --realign   allow a change of general.alignment (the tensors are laid out again)\n"
                             "  --json      print the result as JSON on stdout (host/cli/JSON.md)\n";

#define MAX_EDITS 64

typedef enum edit_kind { EDIT_SET, EDIT_DELETE, EDIT_RENAME } edit_kind;

typedef struct edit {
    const char *key;     /* for set: a copy of KEY (malloc'd) */
    const char *new_key; /* rename */
    uint32_t type;       /* set: the wire type */
    const char *value;   /* set: the text of the value */
    int existed;
} edit;

typedef struct meta_args {
    edit_kind kind;
    const char *path, *out;
    edit edits[MAX_EDITS];
    size_t n;
    int json, realign;
} meta_args;

/* ---- values ------------------------------------------------------------------------- */

static const struct {
    const char *name;
    uint32_t type;
} type_names[] = {
    { "u8", ANVIL_GGUF_TYPE_U8 },   { "i8", ANVIL_GGUF_TYPE_I8 },     { "u16", ANVIL_GGUF_TYPE_U16 },
    { "i16", ANVIL_GGUF_TYPE_I16 }, { "u32", ANVIL_GGUF_TYPE_U32 },   { "i32", ANVIL_GGUF_TYPE_I32 },
    { "u64", ANVIL_GGUF_TYPE_U64 }, { "i64", ANVIL_GGUF_TYPE_I64 },   { "f32", ANVIL_GGUF_TYPE_F32 },
    { "f64", ANVIL_GGUF_TYPE_F64 }, { "bool", ANVIL_GGUF_TYPE_BOOL }, { "str", ANVIL_GGUF_TYPE_STRING },
};

static int type_from_name(const char *s, size_t len, uint32_t *out) {
    for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; ++i) {
        if (strlen(type_names[i].name) == len && strncmp(s, type_names[i].name, len) == 0) {
            *out = type_names[i].type;
            return 1;
        }
    }
    return 0;
}

/* Valid UTF-8 (GGUF strings and keys are UTF-8). */
static int utf8_ok(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = *p < 0x80 ? 1 : (*p & 0xE0) == 0xC0 ? 2 : (*p & 0xF0) == 0xE0 ? 3 : (*p & 0xF8) == 0xF0 ? 4 : 0;
        if (n == 0 || (n == 2 && *p < 0xC2)) return 0;
        for (size_t i = 1; i < n; ++i) {
            if ((p[i] & 0xC0) != 0x80) return 0;
        }
        p += n;
    }
    return 1;
}

/* Set key to the text value as wire type `type` on w. Returns 0, 2 (a usage
 * error, printed) or 1 (the writer refused it, printed). */
static int set_value(anvil_gguf_writer *w, const char *cmd, const char *key, uint32_t type, const char *v) {
    anvil_error err = { 0 };
    int rc = ANVIL_OK;
    char *end = NULL;
    errno = 0;
    const char *tn = anvil_gguf_type_name(type);
    switch (type) {
    case ANVIL_GGUF_TYPE_U8:
    case ANVIL_GGUF_TYPE_U16:
    case ANVIL_GGUF_TYPE_U32:
    case ANVIL_GGUF_TYPE_U64: {
        const unsigned long long x = strtoull(v, &end, 0);
        const unsigned long long max = type == ANVIL_GGUF_TYPE_U8    ? UINT8_MAX
                                       : type == ANVIL_GGUF_TYPE_U16 ? UINT16_MAX
                                       : type == ANVIL_GGUF_TYPE_U32 ? UINT32_MAX
                                                                     : UINT64_MAX;
        if (*v == '\0' || *v == '-' || *end != '\0' || errno != 0 || x > max) {
            return cli_usage_error(cmd, "%s: '%s' is not a %s (0 to %llu)", key, v, tn, max);
        }
        rc = type == ANVIL_GGUF_TYPE_U8    ? anvil_gguf_writer_set_u8(w, key, (uint8_t)x, &err)
             : type == ANVIL_GGUF_TYPE_U16 ? anvil_gguf_writer_set_u16(w, key, (uint16_t)x, &err)
             : type == ANVIL_GGUF_TYPE_U32 ? anvil_gguf_writer_set_u32(w, key, (uint32_t)x, &err)
                                           : anvil_gguf_writer_set_u64(w, key, (uint64_t)x, &err);
        break;
    }
    case ANVIL_GGUF_TYPE_I8:
    case ANVIL_GGUF_TYPE_I16:
    case ANVIL_GGUF_TYPE_I32:
    case ANVIL_GGUF_TYPE_I64: {
        const long long x = strtoll(v, &end, 0);
        const long long max = type == ANVIL_GGUF_TYPE_I8    ? INT8_MAX
                              : type == ANVIL_GGUF_TYPE_I16 ? INT16_MAX
                              : type == ANVIL_GGUF_TYPE_I32 ? INT32_MAX
                                                            : INT64_MAX;
        if (*v == '\0' || *end != '\0' || errno != 0 || x > max || x < -max - 1) {
            return cli_usage_error(cmd, "%s: '%s' is not an %s (%lld to %lld)", key, v, tn, -max - 1, max);
        }
        rc = type == ANVIL_GGUF_TYPE_I8    ? anvil_gguf_writer_set_i8(w, key, (int8_t)x, &err)
             : type == ANVIL_GGUF_TYPE_I16 ? anvil_gguf_writer_set_i16(w, key, (int16_t)x, &err)
             : type == ANVIL_GGUF_TYPE_I32 ? anvil_gguf_writer_set_i32(w, key, (int32_t)x, &err)
                                           : anvil_gguf_writer_set_i64(w, key, (int64_t)x, &err);
        break;
    }
    case ANVIL_GGUF_TYPE_F32:
    case ANVIL_GGUF_TYPE_F64: {
        const double x = strtod(v, &end);
        if (*v == '\0' || *end != '\0' || (errno != 0 && isinf(x)) ||
            (type == ANVIL_GGUF_TYPE_F32 && isfinite(x) && fabs(x) > FLT_MAX)) {
            return cli_usage_error(cmd, "%s: '%s' is not an %s", key, v, tn);
        }
        rc = type == ANVIL_GGUF_TYPE_F32 ? anvil_gguf_writer_set_f32(w, key, (float)x, &err)
                                         : anvil_gguf_writer_set_f64(w, key, x, &err);
        break;
    }
    case ANVIL_GGUF_TYPE_BOOL: {
        const int t = strcmp(v, "true") == 0 || strcmp(v, "1") == 0;
        if (!t && strcmp(v, "false") != 0 && strcmp(v, "0") != 0) {
            return cli_usage_error(cmd, "%s: '%s' is not a bool (true, false, 1, 0)", key, v);
        }
        rc = anvil_gguf_writer_set_bool(w, key, t, &err);
        break;
    }
    case ANVIL_GGUF_TYPE_STRING:
        if (!utf8_ok(v)) {
            return cli_usage_error(cmd, "%s: the value is not valid UTF-8", key);
        }
        rc = anvil_gguf_writer_set_string(w, key, v, &err);
        break;
    default:
        return cli_usage_error(cmd, "%s: a %s cannot be set from the command line (only scalars and strings)", key,
                               tn != NULL ? tn : "value of this type");
    }
    return rc == ANVIL_OK ? 0 : cli_fail_err(cmd, &err);
}

/* ---- printing ----------------------------------------------------------------------- */

static void print_value(const anvil_gguf_kv *kv, int json) {
    anvil_gguf_value v;
    anvil_gguf_kv_value(kv, &v);
    if (v.kind != ANVIL_GGUF_KIND_ARRAY) {
        cli_gguf_scalar(stdout, &v, json ? CLI_VALUE_JSON : CLI_VALUE_RAW, 0);
        return;
    }
    putchar('[');
    cli_gguf_array(stdout, &v.a, v.a.count, json ? CLI_VALUE_JSON : CLI_VALUE_RAW, SIZE_MAX);
    putchar(']');
}

static int cmd_get(cli_globals *g, const meta_args *a) {
    anvil_gguf *f = NULL;
    anvil_error err = { 0 };
    if (anvil_gguf_open(&f, a->path, g->ctx, ANVIL_GGUF_OPEN_SINGLE_PART, &err) != ANVIL_OK) {
        return cli_fail_err("meta get", &err);
    }
    const anvil_gguf_kv *kv = anvil_gguf_find_kv(f, a->edits[0].key);
    if (kv == NULL) {
        anvil_gguf_close(f);
        return cli_fail("meta get", "%s has no key '%s'", a->path, a->edits[0].key);
    }
    if (a->json) {
        cli_json_begin(stdout, "meta get");
        fputs(",\"input\":", stdout);
        cli_json_string(stdout, a->path);
        fputs(",\"kv\":{\"key\":", stdout);
        cli_json_bytes(stdout, kv->key, kv->key_len);
        printf(",\"type\":\"%s\"", anvil_gguf_type_name(kv->type));
        if (kv->type == ANVIL_GGUF_TYPE_ARRAY) {
            printf(",\"elem_type\":\"%s\",\"count\":%" PRIu64 ",\"truncated\":false",
                   anvil_gguf_type_name(kv->elem_type), kv->count);
        }
        fputs(",\"value\":", stdout);
        print_value(kv, 1);
        fputs("}}\n", stdout);
    } else {
        print_value(kv, 0);
        putchar('\n');
    }
    anvil_gguf_close(f);
    return 0;
}

/* ---- editing ------------------------------------------------------------------------ */

static const edit *edit_for(const meta_args *a, const anvil_gguf_kv *kv) {
    for (size_t i = 0; i < a->n; ++i) {
        if (strlen(a->edits[i].key) == kv->key_len && memcmp(a->edits[i].key, kv->key, kv->key_len) == 0) {
            return &a->edits[i];
        }
    }
    return NULL;
}

static int is_split_key(const char *k) { return strncmp(k, "split.", 6) == 0; }

/* Check the edits against the file; fill the types a set leaves out. */
static int check_edits(const char *cmd, meta_args *a, const anvil_gguf *f) {
    for (size_t i = 0; i < a->n; ++i) {
        edit *e = &a->edits[i];
        const anvil_gguf_kv *kv = anvil_gguf_find_kv(f, e->key);
        e->existed = kv != NULL;
        const char *touched = e->new_key != NULL && is_split_key(e->new_key) ? e->new_key : e->key;
        if (is_split_key(touched)) {
            return cli_usage_error(cmd,
                                   "'%s' is one of the keys that tie a split set together: use anvil split / "
                                   "anvil merge",
                                   touched);
        }
        const int alignment = strcmp(e->key, ANVIL_GGUF_KEY_ALIGNMENT) == 0 ||
                              (e->new_key != NULL && strcmp(e->new_key, ANVIL_GGUF_KEY_ALIGNMENT) == 0);
        if (alignment && !a->realign) {
            return cli_usage_error(cmd, "changing general.alignment moves every tensor: add --realign to lay the "
                                        "data out again");
        }
        if (a->kind != EDIT_SET && kv == NULL) {
            return cli_fail(cmd, "%s has no key '%s'", a->path, e->key);
        }
        if (a->kind == EDIT_RENAME && anvil_gguf_find_kv(f, e->new_key) != NULL) {
            return cli_fail(cmd, "%s already has a key '%s': delete it first", a->path, e->new_key);
        }
        if (a->kind == EDIT_SET && e->type == UINT32_MAX) {
            if (kv == NULL) {
                return cli_usage_error(cmd, "'%s' is a new key: give its type, e.g. %s=str:VALUE or %s=u32:1", e->key,
                                       e->key, e->key);
            }
            e->type = kv->type;
        }
    }
    return 0;
}

/* The writer: the file's KVs in order with the edits applied, then its tensors. */
static int build(const char *cmd, const meta_args *a, const anvil_gguf *f, anvil_gguf_writer *w) {
    anvil_error err = { 0 };
    for (size_t i = 0; i < anvil_gguf_kv_count(f); ++i) {
        const anvil_gguf_kv *kv = anvil_gguf_kv_at(f, i);
        const edit *e = edit_for(a, kv);
        int rc = ANVIL_OK;
        if (e == NULL) {
            rc = anvil_gguf_writer_copy_kv(w, kv, &err);
        } else if (a->kind == EDIT_SET) {
            const int r = set_value(w, cmd, e->key, e->type, e->value);
            if (r != 0) return r;
        } else if (a->kind == EDIT_RENAME) {
            rc = anvil_gguf_writer_copy_kv_as(w, kv, e->new_key, &err);
        } /* EDIT_DELETE: left out */
        if (rc != ANVIL_OK) return cli_fail_err(cmd, &err);
    }
    for (size_t i = 0; a->kind == EDIT_SET && i < a->n; ++i) {
        if (!a->edits[i].existed) {
            const int r = set_value(w, cmd, a->edits[i].key, a->edits[i].type, a->edits[i].value);
            if (r != 0) return r;
        }
    }
    if (anvil_gguf_writer_copy_from(w, f, ANVIL_GGUF_COPY_TENSORS, &err) != ANVIL_OK) {
        return cli_fail_err(cmd, &err);
    }
    return 0;
}

/* offset and bytes: the written file's, as the writer laid it out (so also
 * for an output that cannot be read back: a device, a FIFO, stdout). */
static void report(const char *cmd, const meta_args *a, const char *out, int header_only, uint64_t offset,
                   uint64_t bytes) {
    struct stat st;
    const int regular = strcmp(out, "-") != 0 && stat(out, &st) == 0 && S_ISREG(st.st_mode);
    static const char *const verbs[] = { "set", "deleted", "renamed" };
    if (a->json) {
        cli_json_begin(stdout, cmd);
        fputs(",\"input\":", stdout);
        cli_json_string(stdout, a->path);
        fputs(",\"output\":", stdout);
        cli_json_string(stdout, out);
        printf(",\"in_place\":%s,\"changes\":[", header_only && regular ? "true" : "false");
        for (size_t i = 0; i < a->n; ++i) {
            const edit *e = &a->edits[i];
            printf("%s{\"key\":", i ? "," : "");
            cli_json_string(stdout, e->key);
            printf(",\"action\":\"%s\"", a->kind == EDIT_SET && !e->existed ? "added" : verbs[a->kind]);
            if (e->new_key != NULL) {
                fputs(",\"new_key\":", stdout);
                cli_json_string(stdout, e->new_key);
            }
            if (a->kind == EDIT_SET) printf(",\"type\":\"%s\"", anvil_gguf_type_name(e->type));
            putchar('}');
        }
        printf("],\"data_offset\":%" PRIu64 ",\"bytes\":%" PRIu64 "}\n", offset, bytes);
        return;
    }
    for (size_t i = 0; i < a->n; ++i) {
        const edit *e = &a->edits[i];
        printf("%s %s%s%s\n", a->kind == EDIT_SET && !e->existed ? "added" : verbs[a->kind], cli_esc(e->key),
               e->new_key ? " -> " : "", e->new_key ? cli_esc(e->new_key) : "");
    }
    printf("wrote %s (%" PRIu64 " bytes): %s\n", cli_esc(out), bytes,
           !regular      ? "written in one pass (not a regular file)"
           : header_only ? "only the header was rewritten (the data offset did not move)"
                         : "the whole file was rewritten (the data offset moved)");
}

static int cmd_edit(cli_globals *g, meta_args *a, const char *cmd) {
    const char *out = a->out != NULL ? a->out : a->path;
    int rc = cli_check_output(cmd, out, a->path, NULL);
    if (rc != 0) return rc;
    anvil_gguf *f = NULL;
    anvil_error err = { 0 };
    if (anvil_gguf_open(&f, a->path, g->ctx, ANVIL_GGUF_OPEN_SINGLE_PART, &err) != ANVIL_OK) {
        return cli_fail_err(cmd, &err);
    }
    anvil_gguf_writer *w = NULL;
    rc = check_edits(cmd, a, f);
    if (rc == 0 && anvil_gguf_writer_new(&w, g->ctx, &err) != ANVIL_OK) rc = cli_fail_err(cmd, &err);
    if (rc == 0) rc = build(cmd, a, f, w);
    int header_only = 0;
    uint64_t offset = 0, bytes = 0;
    if (rc == 0 && (anvil_gguf_writer_header_size(w, &offset, &err) != ANVIL_OK ||
                    anvil_gguf_writer_file_size(w, &bytes, &err) != ANVIL_OK ||
                    anvil_gguf_write_metadata(f, w, out, &header_only, &err) != ANVIL_OK)) {
        rc = cli_fail_err(cmd, &err);
    }
    anvil_gguf_writer_free(w);
    anvil_gguf_close(f);
    if (rc == 0) report(cmd, a, out, header_only, offset, bytes);
    return rc;
}

/* ---- the command --------------------------------------------------------------------- */

int cmd_meta(cli_globals *g, int argc, char **argv) {
    if (cli_wants_help(argc, argv)) return cli_help("meta");
    if (argc < 2) return cli_usage_error("meta", "say what to do: get, set, delete or rename");
    static const char *const subs[] = { "set", "delete", "rename", "get" };
    int sub = -1;
    for (int i = 0; i < 4; ++i) {
        if (strcmp(argv[1], subs[i]) == 0) sub = i;
    }
    if (sub < 0) return cli_usage_error("meta", "unknown subcommand '%s' (get, set, delete or rename)", argv[1]);
    char cmd[32];
    snprintf(cmd, sizeof cmd, "meta %s", subs[sub]);
    meta_args a;
    memset(&a, 0, sizeof a);
    a.kind = sub == 3 ? EDIT_SET : (edit_kind)sub;
    const char *pos[MAX_EDITS + 2];
    size_t n_pos = 0;
    for (int i = 2; i < argc; ++i) {
        const char *o = argv[i];
        if (strcmp(o, "--json") == 0) {
            a.json = 1;
        } else if (strcmp(o, "--realign") == 0 && sub != 3) {
            a.realign = 1;
        } else if (strcmp(o, "--out") == 0 && sub != 3) {
            if (i + 1 >= argc) return cli_usage_error(cmd, "--out needs a file");
            a.out = argv[++i];
        } else if (o[0] == '-' && o[1] == '-') {
            return cli_usage_error(cmd, "unknown option '%s'", o);
        } else if (n_pos < MAX_EDITS + 2) {
            pos[n_pos++] = o;
        } else {
            return cli_usage_error(cmd, "more than %d edits at once", MAX_EDITS);
        }
    }
    if (n_pos < 1) return cli_usage_error(cmd, "no FILE given");
    a.path = pos[0];
    if (sub == 3 && n_pos != 2) return cli_usage_error(cmd, "needs FILE and one KEY");
    if (sub == 2 && n_pos != 3) return cli_usage_error(cmd, "needs FILE, OLD and NEW");
    if (n_pos < 2) return cli_usage_error(cmd, "no %s given", sub == 0 ? "KEY=VALUE" : "KEY");
    char *owned[MAX_EDITS];
    size_t n_owned = 0;
    int rc = 0;
    for (size_t i = 1; i < n_pos && rc == 0; ++i) {
        edit *e = &a.edits[a.n];
        e->type = UINT32_MAX;
        if (sub == 2) {
            e->key = pos[1];
            e->new_key = pos[2];
            a.n = 1;
            break;
        }
        if (sub != 0) {
            e->key = pos[i];
        } else {
            const char *eq = strchr(pos[i], '=');
            if (eq == NULL || eq == pos[i]) {
                rc = cli_usage_error(cmd, "'%s' is not KEY=[TYPE:]VALUE", pos[i]);
                break;
            }
            char *key = strndup(pos[i], (size_t)(eq - pos[i]));
            if (key == NULL) {
                rc = cli_fail(cmd, "out of memory");
                break;
            }
            owned[n_owned++] = key;
            e->key = key;
            e->value = eq + 1;
            const char *colon = strchr(eq + 1, ':');
            if (colon != NULL && type_from_name(eq + 1, (size_t)(colon - eq - 1), &e->type)) {
                e->value = colon + 1;
            } else if (colon != NULL && strncmp(eq + 1, "arr", 3) == 0) {
                rc = cli_usage_error(cmd, "%s: arrays cannot be set from the command line", key);
            }
        }
        if (rc == 0 &&
            (e->key[0] == '\0' || !utf8_ok(e->key) || (e->new_key && (!utf8_ok(e->new_key) || !e->new_key[0])))) {
            rc = cli_usage_error(cmd, "keys must be non-empty UTF-8");
        }
        for (size_t k = 0; rc == 0 && k < a.n; ++k) {
            if (strcmp(a.edits[k].key, e->key) == 0) rc = cli_usage_error(cmd, "'%s' is given twice", e->key);
        }
        a.n++;
    }
    if (rc == 0 && sub == 2 && (a.edits[0].new_key[0] == '\0' || !utf8_ok(a.edits[0].new_key))) {
        rc = cli_usage_error(cmd, "keys must be non-empty UTF-8");
    }
    if (rc == 0) rc = sub == 3 ? cmd_get(g, &a) : cmd_edit(g, &a, cmd);
    for (size_t i = 0; i < n_owned; ++i) free(owned[i]);
    return rc;
}
