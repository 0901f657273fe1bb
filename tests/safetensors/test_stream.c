/* SPDX-License-Identifier: MIT */
/* Stream frames: several frames in one stream, read back in order with the
 * position exactly after each; truncated and hostile streams. */
#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "st_test.h"
#include "test_env.h"

#define FRAMES 4

/* Frame k holds k+1 tensors (frame 0: none, only metadata). */
static anvil_st_writer *make_frame(int k, float *store) {
    anvil_st_writer *w = NULL;
    anvil_st_writer_new(&w, NULL);
    char v[16];
    snprintf(v, sizeof v, "%d", k);
    anvil_st_writer_set_metadata(w, "frame", v, NULL);
    for (int i = 0; i < k; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%d.%d", k, i);
        const uint64_t shape[2] = { 2, (uint64_t)i + 1 };
        for (int j = 0; j < 2 * (i + 1); j++) {
            store[16 * i + j] = (float)(k * 100 + i * 10 + j);
        }
        anvil_st_writer_add(w, name, ANVIL_ST_F32, shape, 2, &store[16 * i], (uint64_t)(8 * (i + 1)), NULL);
    }
    return w;
}

static size_t frame_size(anvil_st_writer *w) {
    void *img = NULL;
    size_t size = 0;
    anvil_st_writer_serialize(w, &img, &size, NULL);
    free(img);
    return size;
}

static void check_frame(const anvil_st *st, int k) {
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    char v[16];
    snprintf(v, sizeof v, "%d", k);
    CU_ASSERT_STRING_EQUAL(anvil_st_metadata_get(st, "frame"), v);
    CU_ASSERT_EQUAL_FATAL(anvil_st_count(st), (size_t)k);
    for (int i = 0; i < k; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%d.%d", k, i);
        const anvil_st_tensor *t = anvil_st_find(st, name);
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        float f[16];
        CU_ASSERT_EQUAL_FATAL(anvil_st_tensor_to_f32(t, f, (size_t)(2 * (i + 1)), NULL), ANVIL_OK);
        for (int j = 0; j < 2 * (i + 1); j++) {
            CU_ASSERT(f[j] == (float)(k * 100 + i * 10 + j));
        }
    }
}

static void test_fd_frames(void) {
    char path[4200];
    snprintf(path, sizeof path, "%s/frames.bin", test_tmpdir());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CU_ASSERT_FATAL(fd >= 0);
    float store[FRAMES][64];
    off_t ends[FRAMES];
    off_t pos = 0;
    for (int k = 0; k < FRAMES; k++) {
        anvil_st_writer *w = make_frame(k, store[k]);
        CU_ASSERT_EQUAL(anvil_st_writer_write_fd(w, fd, NULL), ANVIL_OK);
        pos += (off_t)frame_size(w);
        ends[k] = pos;
        CU_ASSERT_EQUAL(lseek(fd, 0, SEEK_CUR), pos);
        anvil_st_writer_free(w);
    }
    /* A trailing sentinel byte after the frames: not part of any frame. */
    CU_ASSERT_EQUAL(write(fd, "Z", 1), 1);
    CU_ASSERT_EQUAL(lseek(fd, 0, SEEK_SET), 0);
    for (int k = 0; k < FRAMES; k++) {
        anvil_st *st = NULL;
        anvil_error err;
        CU_ASSERT_EQUAL(anvil_st_read_frame_fd(&st, fd, &err), ANVIL_OK);
        check_frame(st, k);
        CU_ASSERT_EQUAL(lseek(fd, 0, SEEK_CUR), ends[k]);
        anvil_st_close(st);
    }
    char z = 0;
    CU_ASSERT_EQUAL(read(fd, &z, 1), 1);
    CU_ASSERT_EQUAL(z, 'Z');
    /* Clean end of stream: OK and no frame. */
    anvil_st *st = (anvil_st *)(uintptr_t)1;
    CU_ASSERT_EQUAL(anvil_st_read_frame_fd(&st, fd, NULL), ANVIL_OK);
    CU_ASSERT_PTR_NULL(st);
    close(fd);
}

static void test_file_frames(void) {
    char path[4200];
    snprintf(path, sizeof path, "%s/frames-file.bin", test_tmpdir());
    FILE *f = fopen(path, "w+b");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    float store[FRAMES][64];
    long ends[FRAMES];
    for (int k = 0; k < FRAMES; k++) {
        anvil_st_writer *w = make_frame(k, store[k]);
        CU_ASSERT_EQUAL(anvil_st_writer_write_file(w, f, NULL), ANVIL_OK);
        ends[k] = ftell(f);
        anvil_st_writer_free(w);
    }
    rewind(f);
    for (int k = 0; k < FRAMES; k++) {
        anvil_st *st = NULL;
        CU_ASSERT_EQUAL(anvil_st_read_frame_file(&st, f, NULL), ANVIL_OK);
        check_frame(st, k);
        CU_ASSERT_EQUAL(ftell(f), ends[k]);
        anvil_st_close(st);
    }
    anvil_st *st = (anvil_st *)(uintptr_t)1;
    CU_ASSERT_EQUAL(anvil_st_read_frame_file(&st, f, NULL), ANVIL_OK);
    CU_ASSERT_PTR_NULL(st);
    fclose(f);
}

/* Through a pipe (no seeking): a reader that over-read would lose the start
 * of the next frame. The writer is a child process. */
static void test_pipe_frames(void) {
    int p[2];
    CU_ASSERT_FATAL(pipe(p) == 0);
    const pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        float store[FRAMES][64];
        int ok = 1;
        for (int k = 0; k < FRAMES; k++) {
            anvil_st_writer *w = make_frame(k, store[k]);
            ok &= anvil_st_writer_write_fd(w, p[1], NULL) == ANVIL_OK;
            anvil_st_writer_free(w);
        }
        close(p[1]);
        _exit(ok ? 0 : 1);
    }
    close(p[1]);
    for (int k = 0; k < FRAMES; k++) {
        anvil_st *st = NULL;
        anvil_error err;
        const int rc = anvil_st_read_frame_fd(&st, p[0], &err);
        CU_ASSERT_EQUAL(rc, ANVIL_OK);
        if (rc != ANVIL_OK) {
            fprintf(stderr, "\n  frame %d: %s\n", k, err.message);
            break;
        }
        check_frame(st, k);
        anvil_st_close(st);
    }
    anvil_st *st = NULL;
    CU_ASSERT_EQUAL(anvil_st_read_frame_fd(&st, p[0], NULL), ANVIL_OK);
    CU_ASSERT_PTR_NULL(st);
    close(p[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Feed `len` bytes through a pipe and read one frame. */
static int read_from_bytes(const void *bytes, size_t len, anvil_error *err) {
    char path[4200];
    snprintf(path, sizeof path, "%s/cut.bin", test_tmpdir());
    FILE *f = fopen(path, "w+b");
    if (f == NULL) {
        return -999;
    }
    if (len) {
        fwrite(bytes, 1, len, f);
    }
    rewind(f);
    anvil_st *st = (anvil_st *)(uintptr_t)1;
    const int rc = anvil_st_read_frame_file(&st, f, err);
    if (rc == ANVIL_OK) {
        anvil_st_close(st);
    } else {
        CU_ASSERT_PTR_NULL(st);
    }
    fclose(f);
    return rc;
}

static void test_truncated_streams(void) {
    const unsigned char data[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    size_t size;
    unsigned char *img = st_image("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                                  "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]}}",
                                  data, sizeof data, &size);
    anvil_error err;
    CU_ASSERT_EQUAL(read_from_bytes(img, size, &err), ANVIL_OK);
    /* Every cut point maps to the part of the frame it falls in. */
    const size_t header_end = size - 8;
    for (size_t cut = 1; cut < size; cut++) {
        const int rc = read_from_bytes(img, cut, &err);
        const int want = cut < 8            ? ANVIL_E_ST_TOO_SMALL
                         : cut < header_end ? ANVIL_E_ST_HEADER_PAST_END
                                            : ANVIL_E_TRUNCATED;
        CU_ASSERT_EQUAL(rc, want);
        if (want == ANVIL_E_TRUNCATED) {
            CU_ASSERT_PTR_NOT_NULL(strstr(err.message, cut < header_end + 4 ? "\"a\"" : "\"b\""));
        }
    }
    free(img);
    /* A hostile header claiming 1 TiB of data with 3 bytes behind it fails
     * as truncated, without trying to allocate the terabyte. */
    img = st_image("{\"x\":{\"dtype\":\"U8\",\"shape\":[1099511627776],"
                   "\"data_offsets\":[0,1099511627776]}}",
                   data, 3, &size);
    CU_ASSERT_EQUAL(read_from_bytes(img, size, &err), ANVIL_E_TRUNCATED);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.message, "\"x\""));
    free(img);
    /* Invalid headers are refused before any data is read. */
    img = st_image("{\"x\":{\"dtype\":\"F99\",\"shape\":[1],\"data_offsets\":[0,1]}}", data, 1, &size);
    CU_ASSERT_EQUAL(read_from_bytes(img, size, &err), ANVIL_E_ST_DTYPE);
    free(img);
    img = st_image_raw(200000000ull, "{}", 2, NULL, 0, &size);
    CU_ASSERT_EQUAL(read_from_bytes(img, size, &err), ANVIL_E_ST_HEADER_TOO_LARGE);
    free(img);
    /* Bad arguments. */
    anvil_st *st = NULL;
    CU_ASSERT_EQUAL(anvil_st_read_frame_fd(&st, -1, &err), ANVIL_E_INVALID_ARG);
    CU_ASSERT_EQUAL(anvil_st_read_frame_file(&st, NULL, &err), ANVIL_E_INVALID_ARG);
}

void st_add_stream_tests(void) {
    CU_pSuite s = CU_add_suite("stream frames", NULL, NULL);
    CU_add_test(s, "frames on an fd", test_fd_frames);
    CU_add_test(s, "frames on a FILE*", test_file_frames);
    CU_add_test(s, "frames through a pipe", test_pipe_frames);
    CU_add_test(s, "truncated and hostile streams", test_truncated_streams);
}
