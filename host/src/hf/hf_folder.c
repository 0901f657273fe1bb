/* SPDX-License-Identifier: MIT */
/*
 * hf_folder: a Hugging Face checkpoint folder as convert_hf_to_gguf.py reads
 * it (ModelBase.index_tensors). config.json must exist and parse. The weights
 * are the model*.safetensors files, or those model.safetensors.index.json
 * names; each is opened through the safetensors reader (validated whole).
 * Order: parts sorted by name, each part's tensors sorted by name (gguf-py's
 * SafetensorsLocal sorts them). Refused, naming file and tensor: no config,
 * no weights, a .bin-only checkpoint, an index whose shard is missing, a
 * tensor in two shards, a tensor the index places elsewhere or not at all.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "hf_checks.h"
#include "hf_internal.h"

char *hf_path_join(const char *dir, const char *name) {
    const size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (p == NULL) return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

/* Present as anything (a FIFO, a folder): the reader that follows refuses
 * what is not a regular file, by name (file_input.h), not as "missing". */
int hf_file_exists(const char *dir, const char *name) {
    char *p = hf_path_join(dir, name);
    struct stat sb;
    const int ok = p != NULL && stat(p, &sb) == 0;
    free(p);
    return ok;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static int add_name(char ***names, size_t *n, const char *name) {
    char **nn = realloc(*names, (*n + 1) * sizeof *nn);
    if (nn == NULL) return -1;
    *names = nn;
    nn[*n] = strdup(name);
    if (nn[*n] == NULL) return -1;
    (*n)++;
    return 0;
}

/* The part names sorted, each once: O(n log n) for an index of 50k entries. */
static void sort_unique(hf_folder *f) {
    if (f->n_parts == 0) return;
    qsort(f->part_names, f->n_parts, sizeof *f->part_names, cmp_str);
    size_t k = 1;
    for (size_t i = 1; i < f->n_parts; ++i) {
        if (strcmp(f->part_names[i], f->part_names[k - 1]) == 0) free(f->part_names[i]);
        else f->part_names[k++] = f->part_names[i];
    }
    f->n_parts = k;
}

/* model*.safetensors in the folder (no index). */
static int list_parts(hf_folder *f, anvil_error *err) {
    DIR *d = opendir(f->dir);
    if (d == NULL) {
        return anvil__error_set(err, ANVIL_E_IO, "cannot read the folder %s: %s", f->dir, strerror(errno));
    }
    int has_bin = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (starts_with(e->d_name, "model") && hf_ends_with(e->d_name, ".safetensors")) {
            if (add_name(&f->part_names, &f->n_parts, e->d_name) != 0) {
                closedir(d);
                return anvil__error_set(err, ANVIL_E_NOMEM, "out of memory listing %s", f->dir);
            }
        } else if (starts_with(e->d_name, "pytorch_model") && hf_ends_with(e->d_name, ".bin")) {
            has_bin = 1;
        }
    }
    closedir(d);
    if (f->n_parts == 0) {
        return anvil__error_set(err, ANVIL_E_NOT_FOUND, "%s holds no weights: no model*.safetensors file%s", f->dir,
                                has_bin ? " (pytorch_model*.bin checkpoints are not read: save the "
                                          "model as safetensors first)"
                                        : "");
    }
    return ANVIL_OK;
}

/* model.safetensors.index.json: the parts are the weight_map's values. */
static int read_index(hf_folder *f, const anvil_json_value **map_out, anvil_json_value **index_out,
                      anvil_error *err) {
    char *path = hf_path_join(f->dir, "model.safetensors.index.json");
    if (path == NULL) return anvil__nomem(err);
    int rc = anvil__json_tree_load(path, index_out, err);
    if (rc != ANVIL_OK) {
        free(path);
        return rc;
    }
    const anvil_json_value *map = anvil__json_get(*index_out, "weight_map");
    if (map == NULL || map->kind != ANVIL_JSON_OBJECT_BEGIN) {
        rc = anvil__error_set(err, ANVIL_E_FORMAT, "%s: no \"weight_map\" object; re-download the index", path);
        free(path);
        return rc;
    }
    if (map->n_items == 0) {
        rc = anvil__error_set(err, ANVIL_E_FORMAT,
                              "%s: \"weight_map\" is empty: the index names no tensor; re-download it", path);
        free(path);
        return rc;
    }
    for (size_t i = 0; i < map->n_items; ++i) {
        const char *part = anvil__json_str(map->items[i]);
        if (part == NULL || strchr(part, '/') != NULL || part[0] == '\0' || part[0] == '.') {
            rc = anvil__error_set(err, ANVIL_E_FORMAT,
                                  "%s: tensor \"%s\" is mapped to %s, not a file name in the folder", path,
                                  map->items[i]->key, part ? part : "a non-string");
            free(path);
            return rc;
        }
        if (add_name(&f->part_names, &f->n_parts, part) != 0) {
            free(path);
            return anvil__nomem(err);
        }
    }
    free(path);
    *map_out = map;
    return ANVIL_OK;
}

/* convert's filter_tensors: multimodal tensors dropped, prefixes removed.
 * Returns a malloc'd name, or NULL with *skip set. */
static char *filter_name(const char *name, int *skip) {
    static const char *const start[] = {
        "mlp",     "vit.",       "vpm.",           "siglip2.",          "conformer.",
        "merger.", "resampler.", "sound_encoder.", "sound_projection.", "speech_embeddings."
    };
    static const char *const inside[] = {
        "visual.",          "vision.",         "audio.",      "talker.",         "vision_",
        "audio_",           "token2wav.",      "code2wav.",   "projector.",      "pre_mm_projector_norm",
        "image_newline",    "view_seperator",  "patch_embed", "patch_embedding", "patch_merger.",
        "patch_merge_mlp.", "model.connector."
    };
    *skip = 0;
    for (size_t i = 0; i < sizeof start / sizeof start[0]; ++i) {
        if (starts_with(name, start[i])) *skip = 1;
    }
    for (size_t i = 0; i < sizeof inside / sizeof inside[0]; ++i) {
        if (strstr(name, inside[i]) != NULL) *skip = 1;
    }
    if (*skip) return NULL;
    /* LlamaModel: "text_model." removed; ModelBase: "language_model." removed
     * (str.replace: every occurrence). */
    char *s = strdup(name);
    static const char *const drop[] = { "text_model.", "language_model." };
    for (size_t k = 0; s != NULL && k < 2; ++k) {
        const size_t dl = strlen(drop[k]);
        for (char *p; (p = strstr(s, drop[k])) != NULL;) memmove(p, p + dl, strlen(p + dl) + 1);
    }
    return s;
}

static int cmp_tensor_name(const void *a, const void *b) {
    const anvil_st_tensor *x = *(const anvil_st_tensor *const *)a;
    const anvil_st_tensor *y = *(const anvil_st_tensor *const *)b;
    return strcmp(x->name, y->name);
}

/* The index's weight_map sorted by tensor name, each entry marked once a
 * shard is found to hold it. */
typedef struct map_entry {
    const char *name, *part;
    int found;
} map_entry;

typedef struct index_map {
    map_entry *e;
    size_t n;
} index_map;

static int cmp_entry(const void *a, const void *b) {
    return strcmp(((const map_entry *)a)->name, ((const map_entry *)b)->name);
}

static int map_build(index_map *m, const anvil_json_value *map) {
    m->n = 0;
    m->e = NULL;
    if (map == NULL) return ANVIL_OK;
    m->e = calloc(map->n_items + 1, sizeof *m->e);
    if (m->e == NULL) return ANVIL_E_NOMEM;
    for (size_t i = 0; i < map->n_items; ++i) {
        m->e[i].name = map->items[i]->key;
        m->e[i].part = anvil__json_str(map->items[i]);
    }
    m->n = map->n_items;
    qsort(m->e, m->n, sizeof *m->e, cmp_entry);
    return ANVIL_OK;
}

static map_entry *map_find(const index_map *m, const char *name) {
    const map_entry key = { name, NULL, 0 };
    return m->n ? bsearch(&key, m->e, m->n, sizeof *m->e, cmp_entry) : NULL;
}

static int add_part_tensors(hf_folder *f, size_t p, const index_map *map, anvil_error *err) {
    const size_t n = anvil_st_count(f->parts[p]);
    const anvil_st_tensor **order = malloc((n ? n : 1) * sizeof *order);
    hf_src_tensor *grown = realloc(f->tensors, (f->n_tensors + n + 1) * sizeof *grown);
    if (order == NULL || grown == NULL) {
        free(order);
        if (grown != NULL) f->tensors = grown;
        return anvil__error_set(err, ANVIL_E_NOMEM, "out of memory indexing %s", f->part_names[p]);
    }
    f->tensors = grown;
    for (size_t i = 0; i < n; ++i) order[i] = anvil_st_tensor_at(f->parts[p], i);
    if (n > 0) qsort(order, n, sizeof *order, cmp_tensor_name);
    int rc = ANVIL_OK;
    for (size_t i = 0; i < n && rc == ANVIL_OK; ++i) {
        const anvil_st_tensor *t = order[i];
        if (map != NULL && map->e != NULL) {
            map_entry *me = map_find(map, t->name);
            const char *where = me ? me->part : NULL;
            if (where == NULL || strcmp(where, f->part_names[p]) != 0) {
                rc = anvil__error_set(err, ANVIL_E_FORMAT,
                                      "%s/%s holds tensor \"%s\", which model.safetensors.index.json %s%s; "
                                      "the index and the shards do not belong together: re-download them",
                                      f->dir, f->part_names[p], t->name, where ? "places in " : "does not list",
                                      where ? where : "");
                break;
            }
            me->found = 1;
        }
        int skip = 0;
        char *name = filter_name(t->name, &skip);
        if (skip) continue;
        if (name == NULL) {
            rc = anvil__nomem(err);
            break;
        }
        f->tensors[f->n_tensors].name = name;
        f->tensors[f->n_tensors].st = t;
        f->tensors[f->n_tensors].part = p;
        f->tensors[f->n_tensors].scale = NULL;
        f->n_tensors++;
    }
    free(order);
    return rc;
}

typedef struct name_at {
    const char *name;
    size_t i;
} name_at;

static int cmp_name_at(const void *a, const void *b) {
    const name_at *x = a, *y = b;
    const int c = strcmp(x->name, y->name);
    return c != 0 ? c : (x->i > y->i) - (x->i < y->i);
}

/* No name twice (after convert's filters): sorted, neighbours compared. */
static int check_duplicates(const hf_folder *f, anvil_error *err) {
    if (f->n_tensors < 2) return ANVIL_OK;
    name_at *idx = malloc(f->n_tensors * sizeof *idx);
    if (idx == NULL) return anvil__nomem(err);
    for (size_t i = 0; i < f->n_tensors; ++i) idx[i] = (name_at){ f->tensors[i].name, i };
    qsort(idx, f->n_tensors, sizeof *idx, cmp_name_at);
    int rc = ANVIL_OK;
    for (size_t i = 1; i < f->n_tensors && rc == ANVIL_OK; ++i) {
        const hf_src_tensor *a = &f->tensors[idx[i - 1].i], *b = &f->tensors[idx[i].i];
        if (strcmp(a->name, b->name) != 0) continue;
        rc = anvil__error_set(err, ANVIL_E_DUPLICATE,
                              "tensor \"%s\" is in two shards: %s/%s and %s/%s; "
                              "remove the stale file",
                              a->name, f->dir, f->part_names[a->part], f->dir, f->part_names[b->part]);
    }
    free(idx);
    return rc;
}

/* Every tensor the index names must have been found in its shard. */
static int check_index_complete(const hf_folder *f, const index_map *map, anvil_error *err) {
    for (size_t i = 0; i < map->n; ++i) {
        if (map->e[i].found) continue;
        return anvil__error_set(err, ANVIL_E_NOT_FOUND,
                                "tensor \"%s\" is in no shard: model.safetensors.index.json places it in "
                                "%s/%s, which does not hold it; re-download that shard",
                                map->e[i].name, f->dir, map->e[i].part);
    }
    return ANVIL_OK;
}

static int open_parts(hf_folder *f, const anvil_json_value *json_map, anvil_error *err) {
    int rc = hf_shard_sets_check(f, json_map != NULL, err);
    if (rc != ANVIL_OK) return rc;
    index_map map;
    if (map_build(&map, json_map) != ANVIL_OK) return anvil__nomem(err);
    f->parts = calloc(f->n_parts + 1, sizeof *f->parts);
    if (f->parts == NULL) rc = anvil__nomem(err);
    for (size_t p = 0; p < f->n_parts && rc == ANVIL_OK; ++p) {
        if (!hf_file_exists(f->dir, f->part_names[p])) {
            rc = anvil__error_set(err, ANVIL_E_NOT_FOUND,
                                  "shard %s/%s is missing: model.safetensors.index.json names it; "
                                  "download it (or the whole checkpoint) again",
                                  f->dir, f->part_names[p]);
            break;
        }
        char *path = hf_path_join(f->dir, f->part_names[p]);
        if (path == NULL) {
            rc = anvil__nomem(err);
            break;
        }
        rc = anvil_st_open(&f->parts[p], path, err);
        /* the reader names the file itself; the prefix adds its own ": " */
        if (rc != ANVIL_OK && err != NULL && strstr(err->message, path) == NULL) anvil__error_prefix(err, "%s", path);
        free(path);
        if (rc == ANVIL_OK) rc = add_part_tensors(f, p, json_map ? &map : NULL, err);
    }
    if (rc == ANVIL_OK) rc = check_duplicates(f, err);
    if (rc == ANVIL_OK && json_map != NULL) rc = check_index_complete(f, &map, err);
    free(map.e);
    return rc;
}

int hf_folder_open_config(const char *dir, hf_folder *f, anvil_error *err) {
    memset(f, 0, sizeof *f);
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        return anvil__error_set(err, ANVIL_E_NOT_FOUND,
                                "%s is not a folder: give a Hugging Face checkpoint "
                                "folder (config.json, *.safetensors)",
                                dir);
    }
    f->dir = strdup(dir);
    if (f->dir == NULL) return anvil__nomem(err);
    for (size_t n = strlen(f->dir); n > 1 && f->dir[n - 1] == '/'; --n) f->dir[n - 1] = '\0';
    if (!hf_file_exists(f->dir, "config.json")) {
        return anvil__error_set(err, ANVIL_E_NOT_FOUND,
                                "%s/config.json is missing: not a Hugging Face "
                                "checkpoint folder (download config.json with the weights)",
                                f->dir);
    }
    char *cfg = hf_path_join(f->dir, "config.json");
    if (cfg == NULL) return anvil__nomem(err);
    int rc = anvil__json_tree_load(cfg, &f->config, err);
    if (rc == ANVIL_OK && f->config->kind != ANVIL_JSON_OBJECT_BEGIN) {
        rc = anvil__error_set(err, ANVIL_E_FORMAT, "%s is not a JSON object", cfg);
    }
    free(cfg);
    return rc;
}

int hf_folder_index(hf_folder *f, anvil_error *err) {
    anvil_json_value *index = NULL;
    const anvil_json_value *map = NULL;
    int rc;
    if (hf_file_exists(f->dir, "model.safetensors.index.json")) {
        rc = read_index(f, &map, &index, err);
    } else {
        rc = list_parts(f, err);
    }
    sort_unique(f);
    if (rc == ANVIL_OK) rc = open_parts(f, map, err);
    anvil__json_free(index);
    if (rc == ANVIL_OK) rc = hf_fp8_pair(f, err);
    return rc;
}

int hf_folder_open(const char *dir, hf_folder *f, anvil_error *err) {
    const int rc = hf_folder_open_config(dir, f, err);
    return rc == ANVIL_OK ? hf_folder_index(f, err) : rc;
}

void hf_folder_close(hf_folder *f) {
    for (size_t i = 0; i < f->n_tensors; ++i) free(f->tensors[i].name);
    free(f->tensors);
    for (size_t p = 0; p < f->n_parts; ++p) {
        if (f->parts != NULL) anvil_st_close(f->parts[p]);
        free(f->part_names[p]);
    }
    free(f->parts);
    free(f->part_names);
    anvil__json_free(f->config);
    free(f->dir);
    memset(f, 0, sizeof *f);
}
