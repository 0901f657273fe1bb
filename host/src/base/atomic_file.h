/* SPDX-License-Identifier: MIT */
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
 * Only a regular file (or a missing path) is replaced that way. An output
 * that exists as something else is never renamed over (afile_output_kind):
 * a character or block device, a FIFO, or a name for an open descriptor
 * ("-" and /dev/stdout are descriptor 1, /dev/stderr 2, /dev/fd/N and
 * /proc/self/fd/N are N) is written into, once, front to back -- every
 * writer that goes through here writes sequentially and never seeks -- and
 * a socket, a folder, a terminal, or a link that leads through /proc to a
 * regular file (another open file of a process: no folder to rename in)
 * is refused before anything is written. A symbolic link is followed to
 * see what it names: a link to a device or FIFO is written through; a link
 * to a regular file, and a dangling link, is replaced by the new file (the
 * link itself, as rename() does; the file it pointed to is left as it was).
 *
 * Layering: this file is a base utility and calls nothing above it. Split
 * sets (file_set.c) stand on it, never the reverse: the writers' entry
 * point that also finishes a folder's interrupted set commits is
 * file_set_output_open, in file_set.c.
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
    int fd;           /* open while writing; -1 once held or discarded */
    int anonymous;    /* fd is an O_TMPFILE that has no name yet */
    int stream;       /* fd is the output itself (device, FIFO, descriptor):
                           written in one pass, nothing to rename */
    char *final_path; /* where the file goes (for a stream: its name in messages) */
    char *tmp_path;   /* its temp name (NULL while anonymous, and for a stream) */
} afile;

/* What writing to path means, decided from its name and stat() alone --
 * nothing is opened, so nothing can block:
 *   AFILE_REPLACE  a missing path, a regular file, a link to one or a
 *                  dangling link: a temp file renamed over path;
 *   AFILE_STREAM   a character or block device, a FIFO, a link to one, or a
 *                  descriptor name ("-", /dev/stdout, ...): written into;
 *   < 0            refused (a folder, a socket, a link through /proc to a
 *                  regular file); err says what and what to do. */
#define AFILE_REPLACE 0
#define AFILE_STREAM 1
int afile_output_kind(const char *path, anvil_error *err);

/* Open path for writing as afile_output_kind says. AFILE_REPLACE: clean up
 * after dead writers of path, then open a temp file for it. AFILE_STREAM:
 * open the device or FIFO (a FIFO nobody reads, or a terminal, is refused
 * rather than waited on or written to) or duplicate the named descriptor.
 * A refused kind fails here, before anything is written. Writers call
 * file_set_output_open (file_set.h), which first finishes the folder's
 * interrupted split-set commits. */
int afile_open(afile *f, const char *path, anvil_error *err);
/* Make the written bytes durable and give the temp file a name: fsync, the
 * destination's mode (an existing file keeps its mode; a new one gets 0666
 * less the umask), a name, and the descriptor closed. The file is complete
 * but not yet in place. A stream cannot be held (ANVIL_E_STATE). */
int afile_hold(afile *f, anvil_error *err);
/* Hold (when not yet) and rename into place; the folder is flushed so the
 * rename survives a power cut. On failure the temp file is removed and the
 * destination is untouched. A stream is flushed (a block device or a file
 * behind a descriptor: fsync) and closed; a failure there is an error. Always
 * releases f. */
int afile_commit(afile *f, anvil_error *err);
/* Remove the temp file and release f (safe on a zeroed or released afile).
 * A stream is closed: what was written into it stays written. */
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
