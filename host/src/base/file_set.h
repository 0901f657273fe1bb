/* SPDX-License-Identifier: MIT */
/*
 * Internal: a set of files (the parts of a split GGUF) replaced as one.
 *
 * DESIGN. A split set is found through its first part: llama.cpp and anvil
 * open <prefix>-00001-of-0000N.gguf and derive the other names from it. N
 * renames cannot be one atomic step, so the commit is ordered around that
 * entry point, journaled, and undoable:
 *
 *   0. Every new part is complete, flushed and named (a temp in the folder),
 *      and carries the set mark (below). The writer holds the folder lock
 *      exclusively from here to the end.
 *   1. A journal, ".<part 1>.anvil-commit", is written and flushed: for each
 *      part its name, its temp, a backup name, the inode of the new part and
 *      of the old file it replaces (0 for none).
 *   2. The old part 1 is moved aside (renamed to its backup name): from now
 *      on no reader can start on the old set, and none can start on the new
 *      one either -- a reader that does not know the journal (llama.cpp)
 *      finds no first part and fails; it never meets a mix.
 *   3. Parts 2..N: the old part is moved aside, the new one renamed in.
 *   4. The new part 1 is renamed in: the new set is visible, complete.
 *   5. Backups and journal are removed.
 * No old part is removed before every new part is in place (step 5 comes
 * after step 4), and every step is a rename, so at every moment each part's
 * new file is at its temp name or its final name and each old file is at
 * its final name or its backup name. The journal records inodes, so which
 * is where can always be told, and both directions stay possible:
 *   - a rename fails (a folder squatting on a name, EIO, ...): the writer
 *     rolls back (old files renamed back, part 1 last) and reports it;
 *   - the writer is killed: its journal stays. The next anvil writer in that
 *     folder (afile_open, under the exclusive lock) rolls it forward when
 *     every new part is still there, else back, and clears the leftovers.
 *     anvil's reader (shared lock) meanwhile reads the set the journal
 *     resolves to, without changing anything.
 * The folder lock keeps anvil's readers from opening parts while a commit
 * renames them.
 *
 * Set identity without changing a byte: the parts must stay byte-identical
 * to llama.cpp's (gguf-split, llama-quantize --keep-split), so no metadata
 * key can say which set a part belongs to. Instead every part of a set
 * anvil writes carries an extended attribute, user.anvil.set =
 * "<128-bit random id in hex> <part no> <count>". anvil's reader refuses a
 * set whose parts carry different ids, or where some carry one and others
 * none, naming the part. Files without marks (llama.cpp's, copies that
 * dropped xattrs, filesystems without user xattrs) are read as before.
 */
#ifndef ANVIL_HOST_FILE_SET_H
#define ANVIL_HOST_FILE_SET_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/anvil.h"
#include "atomic_file.h"

#define FILE_SET_MARK_XATTR "user.anvil.set"
#define FILE_SET_ID_HEX 32

/* Rename n held parts (afile_hold done; all in one folder) into place as
 * one set, as described above. On failure the old files are back in place
 * and the temps are removed. Always releases the afiles. */
int file_set_commit(afile *parts, size_t n, anvil_error *err);

/* Finish or undo every interrupted commit in dir. Call with the folder
 * locked exclusively (file_set_output_open does). */
void file_set_recover_dir(const char *dir);

/* What every writer opens its output with: where the output will be
 * replaced (AFILE_REPLACE), first the interrupted set commits in its folder
 * are finished (a killed writer's journal, above), then afile_open. This
 * lives here, not in atomic_file.c, so that the dependency runs one way:
 * file_set -> atomic_file. */
int file_set_output_open(afile *f, const char *path, anvil_error *err);

/* A part of a set must be a file that can be replaced: a path that is a
 * device, a FIFO, a descriptor name or a socket is refused (naming it and
 * why) before any part is written. */
int file_set_check_part(const char *path, anvil_error *err);

/* The reader's view of the set whose first part is first_path: the folder
 * locked shared, and where an interrupted commit left a journal, the file
 * to read for each part. */
typedef struct file_set_view {
    int lock_fd;
    size_t n;     /* 0: no journal, read the parts by their names */
    char **paths; /* n paths when n > 0 */
} file_set_view;

int file_set_view_open(file_set_view *v, const char *first_path, size_t n_parts, anvil_error *err);
void file_set_view_close(file_set_view *v);

/* The set mark of a file: 1 and the fields when it has one, 0 when not. */
int file_set_read_mark(const char *path, char id[FILE_SET_ID_HEX + 1], uint32_t *no, uint32_t *count);

#endif
