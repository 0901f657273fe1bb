/*
 * Internal: replacing a file atomically, and the temp files that takes.
 *
 * Every file anvil writes (GGUF, safetensors, raw blocks, the parts of a
 * split set) is written to a temp file in the destination folder, flushed,
 * and renamed over the destination, so a reader sees the old file or the
 * complete new one and a failure leaves the old file as it was.
 *
 * Temp files must not outlive their writer:
 *  - Where the kernel offers it (Linux O_TMPFILE), the temp file has no name
 *    while it is written: a kill leaves nothing behind. It gets a name only
 *    at the end (linkat), for the moment of the rename.
 *  - Named temps are called ".<name>.anvil-<pid>-<random>". Before writing
 *    <name>, a writer removes the named temps of <name> whose process is
 *    gone (kill(pid, 0) answers ESRCH), under the folder lock (below). A
 *    temp whose pid is alive -- another writer, or a recycled pid -- is
 *    never touched: at worst a stale temp survives, never a live one dies.
 *
 * The folder lock: flock() on the destination folder. Writers take it
 * exclusively around their renames (file_set.c) and around the clean-up;
 * readers of a split set take it shared while they open the parts. It is
 * advisory and best effort: a folder that cannot be opened or locked (no
 * read permission, a filesystem without flock) is used unlocked.
 */
#ifndef ANVIL_HOST_ATOMIC_FILE_H
#define ANVIL_HOST_ATOMIC_FILE_H

#include <stddef.h>
#include <sys/types.h>

#include "anvil/anvil.h"

typedef struct afile {
    int fd;             /* open while writing; -1 once held or discarded */
    int anonymous;      /* fd is an O_TMPFILE that has no name yet */
    char *final_path;   /* where the file goes */
    char *tmp_path;     /* its temp name (NULL while anonymous) */
} afile;

/* Clean up after dead writers of path, then open a temp file for it. An
 * existing directory at path is refused here, before anything is written. */
int afile_open(afile *f, const char *path, anvil_error *err);
/* Make the written bytes durable and give the temp file a name: fsync, the
 * destination's mode (an existing file keeps its mode; a new one gets 0666
 * less the umask), a name, and the descriptor closed. The file is complete
 * but not yet in place. */
int afile_hold(afile *f, anvil_error *err);
/* Hold (when not yet) and rename into place; the folder is flushed so the
 * rename survives a power cut. On failure the temp file is removed and the
 * destination is untouched. Always releases f. */
int afile_commit(afile *f, anvil_error *err);
/* Remove the temp file and release f (safe on a zeroed or released afile). */
void afile_discard(afile *f);

/* Write all n bytes to fd (EINTR retried); errors name `what`. */
int afile_write_all(int fd, const void *p, size_t n, const char *what, anvil_error *err);

/* Start writing fd's bytes [offset, offset+n) to disk without waiting
 * (Linux sync_file_range; elsewhere nothing). Advice only: a large output's
 * disk writes then overlap the work that follows, and the final fsync
 * finds little left to do. */
void afile_start_writeback(int fd, uint64_t offset, uint64_t n);
/* The folder part of path ("." when there is none), malloc'ed. */
char *afile_dir_of(const char *path);
/* The last component of path (a pointer into path). */
const char *afile_base_of(const char *path);
/* fsync a folder (best effort: 0, or the errno of a real failure). */
int afile_sync_dir(const char *dir);

/* The folder lock: an fd to pass to afile_unlock_dir, or -1 when the folder
 * could not be locked (then nothing is held). */
int afile_lock_dir(const char *dir, int exclusive);
void afile_unlock_dir(int fd);

/* Under the exclusive folder lock: remove dir's temps of `base` whose
 * writer is gone. Returns how many were removed. */
int afile_remove_stale(const char *dir, const char *base);

/* 1 when name is "." + base + ".anvil-<pid>-..." and that pid is gone. */
int afile_temp_is_stale(const char *name, const char *base);

#endif
