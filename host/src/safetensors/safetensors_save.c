/* SPDX-License-Identifier: MIT */
/*
 * Atomic save: the new file is written to a temp file beside the old one
 * (atomic_file.c: anonymous where the OS allows, so a kill leaves nothing),
 * flushed to disk, then renamed over PATH, and the folder is flushed so the
 * rename itself survives a power cut. rename() within one folder replaces
 * PATH in one step, so a reader (or a crash) sees either the old file or the
 * complete new one, never a mix. Any failure before the rename removes the
 * temp file and leaves PATH as it was. A PATH that is a device, a FIFO or
 * standard output is written into instead (atomic_file.h): the writer goes
 * front to back and never seeks.
 */
#include "anvil/safetensors.h"
#include "file_set.h"
#include "error.h"
#include "safetensors_internal.h"

ANVIL_API int anvil_st_writer_save(const anvil_st_writer *w, const char *path, anvil_error *err) {
    if (w == NULL || path == NULL || *path == '\0') {
        return anvil__error_set(err, ANVIL_E_INVALID_ARG, "anvil_st_writer_save: bad argument");
    }
    /* Everything that can fail without touching the filesystem, first. */
    anvil_st_plan plan;
    int rc = anvil__st_writer_plan(w, &plan, err);
    if (rc != ANVIL_OK) {
        return rc;
    }
    afile f;
    rc = file_set_output_open(&f, path, err);
    const int stream = rc == ANVIL_OK && f.stream;
    if (rc == ANVIL_OK) {
        rc = anvil__st_plan_write_fd(&plan, f.fd, path, err);
        if (rc == ANVIL_OK) {
            rc = afile_commit(&f, err);
        } else {
            afile_discard(&f);
        }
    }
    anvil__st_plan_free(&plan);
    if (rc != ANVIL_OK) {
        anvil__error_prefix(err, stream ? "%s: not saved completely" : "%s: not saved, left untouched", path);
        return rc;
    }
    anvil__error_clear(err);
    return ANVIL_OK;
}
