/* SPDX-License-Identifier: MIT */
/* Atomic save: replaces PATH in one step, keeps it intact on any failure,
 * and a process killed mid-write leaves the previous file readable. */
#include <CUnit/CUnit.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "st_test.h"
#include "test_env.h"

/* A writer holding one U8 tensor of n bytes of `fill`. */
static anvil_st_writer *writer_of(unsigned char *buf, size_t n, unsigned char fill) {
    memset(buf, fill, n);
    anvil_st_writer *w = NULL;
    anvil_st_writer_new(&w, NULL);
    const uint64_t shape[1] = { n };
    anvil_st_writer_set_metadata(w, "fill", fill == 'A' ? "A" : "B", NULL);
    anvil_st_writer_add(w, "blob", ANVIL_ST_U8, shape, 1, buf, n, NULL);
    return w;
}

/* Names in dir starting with prefix (temp leftovers). */
static int count_prefixed(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    if (d == NULL) {
        return -1;
    }
    int n = 0;
    const size_t len = strlen(prefix);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, len) == 0) {
            n++;
        }
    }
    closedir(d);
    return n;
}

/* The file at path holds the 'fill' image of n bytes. */
static int holds(const char *path, size_t n, unsigned char fill) {
    anvil_st *st = NULL;
    if (anvil_st_open(&st, path, NULL) != ANVIL_OK) {
        return 0;
    }
    const anvil_st_tensor *t = anvil_st_find(st, "blob");
    int ok = t != NULL && t->size == n;
    for (uint64_t i = 0; ok && i < n; i++) {
        ok = ((const unsigned char *)t->data)[i] == fill;
    }
    ok = ok && anvil_st_metadata_get(st, "fill") != NULL && anvil_st_metadata_get(st, "fill")[0] == (char)fill;
    anvil_st_close(st);
    return ok;
}

static void test_save_and_replace(void) {
    const char *dir = test_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unsigned char buf[4096];
    anvil_st_writer *w = writer_of(buf, sizeof buf, 'A');
    anvil_error err;
    CU_ASSERT_EQUAL(anvil_st_writer_save(w, path, &err), ANVIL_OK);
    CU_ASSERT_TRUE(holds(path, sizeof buf, 'A'));
    /* Same bytes as serialize(). */
    void *img = NULL;
    size_t size = 0, fsize = 0;
    anvil_st_writer_serialize(w, &img, &size, NULL);
    unsigned char *file = st_read_file(path, &fsize);
    CU_ASSERT(file != NULL && fsize == size && memcmp(file, img, size) == 0);
    free(file);
    free(img);
    anvil_st_writer_free(w);
    /* Replacing keeps the old file's permission bits. */
    CU_ASSERT_EQUAL(chmod(path, 0640), 0);
    w = writer_of(buf, 100, 'B');
    CU_ASSERT_EQUAL(anvil_st_writer_save(w, path, &err), ANVIL_OK);
    anvil_st_writer_free(w);
    CU_ASSERT_TRUE(holds(path, 100, 'B'));
    struct stat sb;
    CU_ASSERT_EQUAL(stat(path, &sb), 0);
    CU_ASSERT_EQUAL(sb.st_mode & 0777, 0640);
    CU_ASSERT_EQUAL(count_prefixed(dir, ".model.safetensors.anvil-"), 0);
    /* A relative path (folder ".") works too. */
    char cwd[4096];
    CU_ASSERT_PTR_NOT_NULL_FATAL(getcwd(cwd, sizeof cwd));
    CU_ASSERT_EQUAL_FATAL(chdir(dir), 0);
    w = writer_of(buf, 10, 'A');
    CU_ASSERT_EQUAL(anvil_st_writer_save(w, "rel.safetensors", &err), ANVIL_OK);
    anvil_st_writer_free(w);
    CU_ASSERT_TRUE(holds("rel.safetensors", 10, 'A'));
    CU_ASSERT_EQUAL(chdir(cwd), 0);
}

static void test_save_failures(void) {
    const char *dir = test_tmpdir();
    unsigned char buf[64];
    anvil_st_writer *w = writer_of(buf, sizeof buf, 'A');
    anvil_error err;
    /* No such folder: nothing created. */
    CU_ASSERT_EQUAL(anvil_st_writer_save(w, "/nonexistent-anvil-dir/x.safetensors", &err), ANVIL_E_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "/nonexistent-anvil-dir/x.safetensors"));
    /* PATH is a folder: the rename fails, the temp file is removed and the
     * folder is untouched. */
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/adir", dir);
    CU_ASSERT_EQUAL_FATAL(mkdir(sub, 0755), 0);
    CU_ASSERT_EQUAL(anvil_st_writer_save(w, sub, &err), ANVIL_E_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "left untouched"));
    CU_ASSERT_EQUAL(count_prefixed(dir, ".adir.anvil-"), 0);
    struct stat sb;
    CU_ASSERT(stat(sub, &sb) == 0 && S_ISDIR(sb.st_mode));
    /* A writer that cannot be laid out touches nothing. */
    const uint64_t two[1] = { 2 };
    anvil_st_writer_add(w, "d", ANVIL_ST_U8, two, 1, buf, 2, NULL);
    anvil_st_writer_add(w, "d", ANVIL_ST_U8, two, 1, buf, 2, NULL);
    char path[4200];
    snprintf(path, sizeof path, "%s/never.safetensors", dir);
    CU_ASSERT_EQUAL(anvil_st_writer_save(w, path, &err), ANVIL_E_DUPLICATE);
    CU_ASSERT_NOT_EQUAL(access(path, F_OK), 0);
    CU_ASSERT_EQUAL(count_prefixed(dir, "never.safetensors"), 0);
    anvil_st_writer_free(w);
}

/* A write that fails part-way (file size limit: EFBIG) leaves the old file
 * and no temp file. Runs in a child so the limit stays there. */
static void test_save_write_error(void) {
    const char *dir = test_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/efbig.safetensors", dir);
    static unsigned char big[1 << 20];
    anvil_st_writer *w = writer_of(big, 4096, 'A');
    CU_ASSERT_EQUAL_FATAL(anvil_st_writer_save(w, path, NULL), ANVIL_OK);
    anvil_st_writer_free(w);
    const pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN); /* get EFBIG instead of the signal */
        struct rlimit rl = { 64 * 1024, 64 * 1024 };
        setrlimit(RLIMIT_FSIZE, &rl);
        anvil_st_writer *cw = writer_of(big, sizeof big, 'B');
        anvil_error err;
        const int rc = anvil_st_writer_save(cw, path, &err);
        anvil_st_writer_free(cw);
        _exit(rc == ANVIL_E_IO && strstr(err.message, "left untouched") != NULL ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CU_ASSERT_TRUE(holds(path, 4096, 'A'));
    CU_ASSERT_EQUAL(count_prefixed(dir, ".efbig.safetensors.anvil-"), 0);
}

static void stop_self(int sig) {
    (void)sig;
    raise(SIGSTOP); /* async-signal-safe; the parent takes it from here */
}

/* Kill a child mid-write: the child hits a file size limit part-way through
 * the temp file, stops itself there, and the parent SIGKILLs it. The old
 * file must be intact and readable while the write is in flight and after
 * the crash. */
static void test_crash_during_save(void) {
    const char *dir = test_tmpdir();
    char path[4200];
    snprintf(path, sizeof path, "%s/crash.safetensors", dir);
    static unsigned char big[1 << 20];
    anvil_st_writer *w = writer_of(big, 8192, 'A');
    CU_ASSERT_EQUAL_FATAL(anvil_st_writer_save(w, path, NULL), ANVIL_OK);
    anvil_st_writer_free(w);
    size_t old_size = 0;
    unsigned char *old = st_read_file(path, &old_size);
    CU_ASSERT_PTR_NOT_NULL_FATAL(old);

    const pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = stop_self;
        sigaction(SIGXFSZ, &sa, NULL);
        struct rlimit rl = { 256 * 1024, 256 * 1024 };
        setrlimit(RLIMIT_FSIZE, &rl);
        anvil_st_writer *cw = writer_of(big, sizeof big, 'B');
        anvil_st_writer_save(cw, path, NULL);
        _exit(3); /* not reached: killed while stopped */
    }
    int status = 0;
    CU_ASSERT_EQUAL_FATAL(waitpid(pid, &status, WUNTRACED), pid);
    CU_ASSERT_TRUE(WIFSTOPPED(status));
    /* Mid-write: the partial temp file has no name where the OS allows
     * (O_TMPFILE), else one; the original is untouched. */
    CU_ASSERT(count_prefixed(dir, ".crash.safetensors.anvil-") <= 1);
    CU_ASSERT_TRUE(holds(path, 8192, 'A'));
    kill(pid, SIGKILL);
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    /* After the crash: the previous file, byte for byte, and readable. */
    size_t now_size = 0;
    unsigned char *now = st_read_file(path, &now_size);
    CU_ASSERT(now != NULL && now_size == old_size && memcmp(now, old, old_size) == 0);
    CU_ASSERT_TRUE(holds(path, 8192, 'A'));
    /* A crash leaves at most the dead writer's named temp, and the next save
     * of the same file removes it. */
    w = writer_of(big, 4096, 'B');
    CU_ASSERT_EQUAL(anvil_st_writer_save(w, path, NULL), ANVIL_OK);
    anvil_st_writer_free(w);
    CU_ASSERT_TRUE(holds(path, 4096, 'B'));
    CU_ASSERT_EQUAL(count_prefixed(dir, ".crash.safetensors.anvil-"), 0);
    free(now);
    free(old);
}

void st_add_save_tests(void) {
    CU_pSuite s = CU_add_suite("atomic save", NULL, NULL);
    CU_add_test(s, "save and replace", test_save_and_replace);
    CU_add_test(s, "failures leave PATH untouched", test_save_failures);
    CU_add_test(s, "write error part-way", test_save_write_error);
    CU_add_test(s, "crash during save", test_crash_during_save);
}
