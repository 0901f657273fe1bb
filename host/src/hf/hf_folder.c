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

static int ends_with(const char *s, const char *suffix) {
    const size_t a = strlen(s), b = strlen(suffix);
    return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

static int starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static int add_name(char ***names, size_t *n, const char *name) {
    for (size_t i = 0; i < *n; ++i) {
        if (strcmp((*names)[i], name) == 0) return 0;
    }
    char **nn = realloc(*names, (*n + 1) * sizeof *nn);
    if (nn == NULL) return -1;
    *names = nn;
    nn[*n] = strdup(name);
    if (nn[*n] == NULL) return -1;
    (*n)++;
    return 0;
}

/* model*.safetensors in the folder (no index). */
static int list_parts(hf_folder *f, anvil_error *err) {
    DIR *d = opendir(f->dir);
    if (d == NULL) {
        return anvil__error_set(err, ANVIL_E_IO, "cannot read the folder %s: %s", f->dir, strerror(errno));
    }
    int has_bin = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (starts_with(e->d_name, "model") && ends_with(e->d_name, ".safetensors")) {
            if (add_name(&f->part_names, &f->n_parts, e->d_name) != 0) {
                closedir(d);
                return anvil__error_set(err, ANVIL_E_NOMEM, "out of memory listing %s", f->dir);
            }
        } else if (starts_with(e->d_name, "pytorch_model") && ends_with(e->d_name, ".bin")) {
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

static int find_src(const hf_folder *f, const char *name) {
    for (size_t i = 0; i < f->n_tensors; ++i) {
        if (strcmp(f->tensors[i].name, name) == 0) return (int)i;
    }
    return -1;
}

static int add_part_tensors(hf_folder *f, size_t p, const anvil_json_value *map, anvil_error *err) {
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
    qsort(order, n, sizeof *order, cmp_tensor_name);
    int rc = ANVIL_OK;
    for (size_t i = 0; i < n && rc == ANVIL_OK; ++i) {
        const anvil_st_tensor *t = order[i];
        if (map != NULL) {
            const char *where = anvil__json_str(anvil__json_get(map, t->name));
            if (where == NULL || strcmp(where, f->part_names[p]) != 0) {
                rc = anvil__error_set(err, ANVIL_E_FORMAT,
                                      "%s/%s holds tensor \"%s\", which model.safetensors.index.json %s%s; "
                                      "the index and the shards do not belong together: re-download them",
                                      f->dir, f->part_names[p], t->name, where ? "places in " : "does not list",
                                      where ? where : "");
                break;
            }
        }
        int skip = 0;
        char *name = filter_name(t->name, &skip);
        if (skip) continue;
        if (name == NULL) {
            rc = anvil__nomem(err);
            break;
        }
        const int prev = find_src(f, name);
        if (prev >= 0) {
            rc = anvil__error_set(err, ANVIL_E_DUPLICATE,
                                  "tensor \"%s\" is in two shards: %s/%s and %s/%s; "
                                  "remove the stale file",
                                  name, f->dir, f->part_names[f->tensors[prev].part], f->dir, f->part_names[p]);
            free(name);
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

/* Every tensor the index names must have been found in its shard. */
static int check_index_complete(const hf_folder *f, const anvil_json_value *map, anvil_error *err) {
    for (size_t i = 0; i < map->n_items; ++i) {
        const char *name = map->items[i]->key;
        int found = 0;
        for (size_t p = 0; p < f->n_parts && !found; ++p) found = anvil_st_find(f->parts[p], name) != NULL;
        if (!found) {
            return anvil__error_set(err, ANVIL_E_NOT_FOUND,
                                    "tensor \"%s\" is in no shard: model.safetensors.index.json places it in "
                                    "%s/%s, which does not hold it; re-download that shard",
                                    name, f->dir, anvil__json_str(map->items[i]));
        }
    }
    return ANVIL_OK;
}

static int open_parts(hf_folder *f, const anvil_json_value *map, anvil_error *err) {
    qsort(f->part_names, f->n_parts, sizeof *f->part_names, cmp_str);
    f->parts = calloc(f->n_parts, sizeof *f->parts);
    if (f->parts == NULL) return anvil__nomem(err);
    for (size_t p = 0; p < f->n_parts; ++p) {
        if (!hf_file_exists(f->dir, f->part_names[p])) {
            return anvil__error_set(err, ANVIL_E_NOT_FOUND,
                                    "shard %s/%s is missing: model.safetensors.index.json names it; "
                                    "download it (or the whole checkpoint) again",
                                    f->dir, f->part_names[p]);
        }
        char *path = hf_path_join(f->dir, f->part_names[p]);
        if (path == NULL) return anvil__nomem(err);
        const int rc = anvil_st_open(&f->parts[p], path, err);
        if (rc != ANVIL_OK) {
            anvil__error_prefix(err, "%s: ", path);
            free(path);
            return rc;
        }
        free(path);
        const int rc2 = add_part_tensors(f, p, map, err);
        if (rc2 != ANVIL_OK) return rc2;
    }
    return map != NULL ? check_index_complete(f, map, err) : ANVIL_OK;
}

int hf_folder_open(const char *dir, hf_folder *f, anvil_error *err) {
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
    if (rc != ANVIL_OK) return rc;
    anvil_json_value *index = NULL;
    const anvil_json_value *map = NULL;
    if (hf_file_exists(f->dir, "model.safetensors.index.json")) {
        rc = read_index(f, &map, &index, err);
    } else {
        rc = list_parts(f, err);
    }
    if (rc == ANVIL_OK) rc = open_parts(f, map, err);
    anvil__json_free(index);
    if (rc == ANVIL_OK) rc = hf_fp8_pair(f, err);
    return rc;
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
