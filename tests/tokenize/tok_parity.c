/* SPDX-License-Identifier: MIT */
/*
 * anvil_tokenize against llama.cpp's llama_tokenize (libllama of the npm
 * package, dlopen'd as tests/parity/llama_oracle.c does): for each vocabulary
 * (SPM, Llama 3, Qwen2 files of ../shared/testdata), every text file of
 * quality/ whole and cut into chunks at arbitrary bytes, and hostile text
 * (invalid UTF-8, control bytes, long runs of one byte, every special
 * token's text alone and inside text, random bytes, random strings of
 * vocabulary pieces), with the four add_special/parse_special combinations
 * on the hostile set. A text anvil refuses (a code point above U+10FFFF in
 * BPE text) must be one llama_tokenize dies on (checked in a child process).
 * Prints texts and bytes compared, differences (0 to
 * pass) and the time of both tokenizers on the same quality chunks.
 *
 *   tok-parity [--oracle DIR] [--golden OUT] [MODEL.gguf...]
 *
 * --golden writes the small fixture test_tokenize reads (tests/tokenize/golden.tsv).
 * Exit 0: no difference; 1: differences or errors; 77: no oracle.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "anvil/tokenize.h"
#include "llama_oracle.h"

typedef struct run {
    llama_oracle *lo;
    const void *vocab;
    anvil_tokenizer *t;
    const char *name, *rel; /* rel: the path under ../shared/testdata */
    unsigned long long texts, bytes, diffs, skipped;
    double t_anvil, t_llama;
    int32_t *a, *b;
    size_t cap;
    FILE *golden;
    unsigned golden_left, golden_seen;
} run;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void grow(run *r, size_t n) {
    if (n <= r->cap) return;
    r->cap = n;
    r->a = realloc(r->a, n * sizeof *r->a);
    r->b = realloc(r->b, n * sizeof *r->b);
    if (r->a == NULL || r->b == NULL) abort();
}

static void golden_line(run *r, const char *s, size_t len, unsigned flags, const int32_t *ids, size_t n) {
    if (r->golden == NULL || r->golden_left == 0 || len > 48 || r->golden_seen++ % 6 != 0) return;
    r->golden_left--;
    fprintf(r->golden, "%s\t%u\t", r->rel, flags);
    for (size_t i = 0; i < len; ++i) fprintf(r->golden, "%02x", (unsigned char)s[i]);
    fprintf(r->golden, "\t");
    for (size_t i = 0; i < n; ++i) fprintf(r->golden, "%s%d", i ? "," : "", ids[i]);
    fprintf(r->golden, "\n");
}

/* 1 when llama_tokenize kills its process on this text (run in a child). */
static int llama_dies_on(run *r, const char *s, size_t len, bool add, bool parse) {
    fflush(NULL);
    const pid_t pid = fork();
    if (pid == 0) {
        const int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) dup2(fd, 1), dup2(fd, 2);
        setenv("GGML_NO_BACKTRACE", "1", 1); /* no gdb attached to print one */
        r->lo->tokenize(r->vocab, s, (int32_t)len, r->b, (int32_t)r->cap, add, parse);
        _exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return 0;
    return WIFSIGNALED(status);
}

/* Compare one text under flags; timed says whether it counts for speed. */
static void check(run *r, const char *s, size_t len, unsigned flags, int timed) {
    grow(r, len + 16);
    size_t na = 0;
    anvil_error err = { 0 };
    double t0 = now();
    int rc = anvil_tokenize(r->t, s, len, flags, r->a, r->cap, &na, &err);
    double t1 = now();
    const bool add = flags & ANVIL_TOKENIZE_ADD_SPECIAL, parse = flags & ANVIL_TOKENIZE_PARSE_SPECIAL;
    if (rc == ANVIL_E_FORMAT && strstr(err.message, "U+10FFFF")) {
        /* llama.cpp throws on it (the process dies): seen in a child. */
        if (llama_dies_on(r, s, len, add, parse)) {
            r->skipped++;
        } else if (r->diffs++ < 5) {
            fprintf(stderr, "%s: anvil refused a text llama.cpp tokenizes: %s\n", r->name, err.message);
        }
        return;
    }
    int32_t nb = r->lo->tokenize(r->vocab, s, (int32_t)len, r->b, (int32_t)r->cap, add, parse);
    double t2 = now();
    if (timed) {
        r->t_anvil += t1 - t0;
        r->t_llama += t2 - t1;
    }
    r->texts++;
    r->bytes += len;
    if (rc != ANVIL_OK || nb < 0 || (size_t)nb != na || memcmp(r->a, r->b, na * sizeof *r->a) != 0) {
        if (r->diffs++ < 5) {
            fprintf(stderr, "%s: DIFF flags=%u len=%zu rc=%d (%s) anvil %zu ids, llama %d ids\n  text:", r->name,
                    flags, len, rc, err.message, na, nb);
            for (size_t i = 0; i < len && i < 80; ++i) fprintf(stderr, " %02x", (unsigned char)s[i]);
            fprintf(stderr, "\n  anvil:");
            for (size_t i = 0; i < na && i < 30; ++i) fprintf(stderr, " %d", r->a[i]);
            fprintf(stderr, "\n  llama:");
            for (int32_t i = 0; i < nb && i < 30; ++i) fprintf(stderr, " %d", r->b[i]);
            fprintf(stderr, "\n");
        }
        return;
    }
    golden_line(r, s, len, flags, r->a, na);
}

static void check_all_flags(run *r, const char *s, size_t len) {
    for (unsigned f = 0; f < 4; ++f) check(r, s, len, f, 0);
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (b == NULL || fread(b, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(b);
        return NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void quality_texts(run *r, const char *dir) {
    DIR *d = opendir(dir);
    if (d == NULL) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const size_t nl = strlen(e->d_name);
        if (nl < 4 || (strcmp(e->d_name + nl - 4, ".txt") != 0 && strcmp(e->d_name + nl - 3, ".md") != 0)) continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len = 0;
        char *text = read_all(path, &len);
        if (text == NULL) continue;
        check(r, text, len, ANVIL_TOKENIZE_ADD_SPECIAL, 1);
        for (size_t off = 0; off < len;) {
            size_t n = 1 + (size_t)(rnd() % 2048);
            if (n > len - off) n = len - off;
            check(r, text + off, n, ANVIL_TOKENIZE_ADD_SPECIAL, 1);
            check(r, text + off, n, ANVIL_TOKENIZE_PARSE_SPECIAL, 1);
            off += n;
        }
        free(text);
    }
    closedir(d);
}

static void hostile(run *r) {
    char buf[8192];
    static const char *const fixed[] = {
        "",
        " ",
        "  ",
        "\n",
        "\r\n",
        " \n \n",
        "\t\t x",
        "Hello world",
        " Hello",
        "it's I'M we'LL you'Re",
        "123456789 1 22 333 4444",
        "\xef\xbb\xbf"
        "BOM",
        "caf\xc3\xa9 na\xc3\xafve \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",
        "\xf0\x9f\x98\x80 emoji \xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd",
        "\xc3",
        "\xc3(",
        "\xa0\xa1",
        "\xe2\x82",
        "\xe2\x82(",
        "\xf0\x90\x8c",
        "\xf8\x88\x80\x80\x80",
        "\xed\xa0\x80",
        "\xc0\xaf",
        "\xe0\x80\xaf",
        "\xf0\x80\x80\xaf",
        "a\xe3\x80\x80"
        "b\xc2\xa0"
        "c\xe2\x80\xa8"
        "d",
        "\xe2\x96\x81\xe2\x96\x81"
        "x",
        "<s>",
        "</s>",
        "<unk>",
        "<s><s>a</s>",
        "<|begin_of_text|>hi<|eot_id|>",
        "<|im_start|>user\nhi<|im_end|>",
        "<|endoftext|>",
        "x<|endoftext|>  y",
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; ++i) check_all_flags(r, fixed[i], strlen(fixed[i]));
    for (int c = 0; c < 32; ++c) {
        int n = snprintf(buf, sizeof buf, "a%cb %c c%c%c", c, c, c, c);
        check_all_flags(r, buf, (size_t)n);
    }
    static const unsigned char run_bytes[] = { ' ', '\n', 'a', '0', '\'', '!', 0x80, 0xc3, 0xff, '\t', 0 };
    static const size_t run_lens[] = { 1, 2, 3, 4, 7, 16, 100, 1000, 5000 };
    for (size_t i = 0; i < sizeof run_bytes; ++i)
        for (size_t j = 0; j < sizeof run_lens / sizeof run_lens[0]; ++j) {
            memset(buf, run_bytes[i], run_lens[j]);
            check(r, buf, run_lens[j], 1, 0);
            check(r, buf, run_lens[j], 2, 0);
        }
    /* Every special token's text, alone and inside text. */
    anvil_tokenizer_info info = { .size = sizeof info };
    anvil_tokenizer_info_get(r->t, &info);
    for (uint32_t id = 0; id < info.n_tokens; ++id) {
        size_t tl = 0;
        const char *tt = anvil_tokenizer_token_text(r->t, (int32_t)id, &tl);
        const int special = tl > 2 && ((tt[0] == '<' && tt[tl - 1] == '>') || (tt[0] == '[' && tt[tl - 1] == ']'));
        if (!special || tl > 200) continue;
        check_all_flags(r, tt, tl);
        int n = snprintf(buf, sizeof buf, "x %.*s\n y%.*s", (int)tl, tt, (int)tl, tt);
        check_all_flags(r, buf, (size_t)n);
    }
    /* Random bytes, and random strings of vocabulary pieces. */
    for (int k = 0; k < 3000; ++k) {
        const size_t n = (size_t)(rnd() % 200);
        for (size_t i = 0; i < n; ++i) {
            const uint64_t v = rnd();
            buf[i] = (char)(v % 4 == 0 ? ' ' : v % 7 == 0 ? '\n' : (v >> 8));
        }
        check(r, buf, n, (unsigned)(rnd() % 4), 0);
    }
    for (int k = 0; k < 3000; ++k) {
        size_t n = 0;
        const int pieces = 1 + (int)(rnd() % 12);
        for (int p = 0; p < pieces; ++p) {
            size_t tl = 0;
            const char *tt = anvil_tokenizer_token_text(r->t, (int32_t)(rnd() % info.n_tokens), &tl);
            if (n + tl + 1 >= sizeof buf) break;
            memcpy(buf + n, tt, tl);
            n += tl;
            if (rnd() % 3 == 0) buf[n++] = ' ';
        }
        check(r, buf, n, (unsigned)(rnd() % 4), 0);
    }
}

static const char *const default_models[] = {
    "ggml-vocab-llama-spm.gguf", "quality/tiny-code-llama.f16.gguf", "hf/llama-spm-sharded.f16.gguf",
    "hf/llama3-bpe.f16.gguf",    "hf/vocab-llama3.vocab.gguf",       "hf/qwen2-bpe.bf16.gguf",
};

int main(int argc, char **argv) {
    const char *oracle = ANVIL_DEFAULT_ORACLE_DIR, *golden = NULL;
    const char *models[32];
    int n_models = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--oracle") == 0 && i + 1 < argc) oracle = argv[++i];
        else if (strcmp(argv[i], "--golden") == 0 && i + 1 < argc) golden = argv[++i];
        else if (n_models < 32) models[n_models++] = argv[i];
    }
    char paths[8][1024];
    if (n_models == 0) {
        for (int i = 0; i < 6; ++i) {
            snprintf(paths[i], sizeof paths[i], "%s/%s", ANVIL_SHARED_TESTDATA, default_models[i]);
            models[n_models++] = paths[i];
        }
    }
    static llama_oracle lo;
    char why[1024];
    if (oracle[0] == '\0' || llama_oracle_open(&lo, oracle, why, sizeof why) != 0) {
        printf("tok-parity: SKIP: no llama.cpp oracle (%s)\n", oracle[0] ? why : "ANVIL_ORACLE_DIR unset");
        return 77;
    }
    FILE *gf = golden ? fopen(golden, "w") : NULL;
    if (gf) fprintf(gf, "# vocab\tflags\ttext (hex)\tids  -- generated by tok-parity --golden from llama_tokenize\n");
    unsigned long long texts = 0, bytes = 0, diffs = 0, skipped = 0;
    int bad = 0;
    for (int m = 0; m < n_models; ++m) {
        run r = { .lo = &lo,
                  .name = strrchr(models[m], '/') ? strrchr(models[m], '/') + 1 : models[m],
                  .golden = gf,
                  .golden_left = 400 };
        anvil_error err = { 0 };
        if (anvil_tokenizer_open(&r.t, models[m], &err) != ANVIL_OK) {
            fprintf(stderr, "%s: %s\n", models[m], err.message);
            bad = 1;
            continue;
        }
        lq_model_params mp = lo.mdefaults;
        mp.vocab_only = true;
        void *model = lo.load_model(models[m], mp);
        if (model == NULL) {
            fprintf(stderr, "%s: libllama cannot load it\n", models[m]);
            anvil_tokenizer_free(r.t);
            bad = 1;
            continue;
        }
        r.vocab = lo.model_vocab(model);
        for (int k = 0; k < 6; ++k)
            if (strstr(models[m], default_models[k]) != NULL) r.rel = default_models[k];
        rng_state = 0x9E3779B97F4A7C15ull + (uint64_t)m;
        quality_texts(&r, ANVIL_SHARED_TESTDATA "/quality");
        hostile(&r);
        printf("%-32s texts %8llu  bytes %10llu  diffs %llu  skipped %llu  quality time: anvil %.3f s, llama %.3f s "
               "(%.2fx)\n",
               r.name, r.texts, r.bytes, r.diffs, r.skipped, r.t_anvil, r.t_llama,
               r.t_anvil > 0 ? r.t_llama / r.t_anvil : 0.0);
        texts += r.texts, bytes += r.bytes, diffs += r.diffs, skipped += r.skipped;
        lo.free_model(model);
        anvil_tokenizer_free(r.t);
        free(r.a);
        free(r.b);
    }
    if (gf) fclose(gf);
    printf("tok-parity: %d vocabularies, %llu texts, %llu bytes, %llu differences (%llu texts skipped that "
           "anvil refuses and llama.cpp dies on)\n",
           n_models, texts, bytes, diffs, skipped);
    llama_oracle_close(&lo);
    return diffs == 0 && !bad ? 0 : 1;
}
