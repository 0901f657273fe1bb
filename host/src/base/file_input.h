/* SPDX-License-Identifier: MIT */
/*
 * Internal: what anvil accepts as an input file, decided before anything
 * can block.
 *
 * anvil memory-maps its inputs (GGUF, safetensors, importance matrices):
 * only a regular file can be mapped. A FIFO, a socket or a device given as
 * an input is refused at once, by stat() alone, with a message that says
 * so and what to do (copy it to a file) -- never opened first: opening a
 * FIFO to read waits until some process opens it to write, forever if none
 * does. The open that follows adds O_NONBLOCK, so a path swapped for a
 * FIFO between the check and the open still cannot block (the caller's
 * fstat regular-file check then refuses it). Missing paths, folders, empty
 * files and /proc files (regular files of size 0) pass through to the
 * caller's own messages, as before.
 *
 * file_input_read reads a small whole file (a JSON or text file of a
 * checkpoint folder) into memory, refused the same way first; it also
 * refuses a folder ("PATH is a folder, not a regular file"), and opens with
 * O_NONBLOCK then checks the open file is regular.
 */
#ifndef ANVIL_HOST_FILE_INPUT_H
#define ANVIL_HOST_FILE_INPUT_H

#include <stddef.h>
#include <stdio.h>

#include "anvil/anvil.h"

/* ANVIL_OK, or ANVIL_E_IO naming path, what it is and what to do. */
int file_input_check(const char *path, anvil_error *err);

/* path opened to read (*out; fclose it), refused unless a regular file:
 * "PATH is a folder, not a regular file (KIND is expected there)...".
 * ANVIL_E_NOT_FOUND when path does not exist, else ANVIL_E_IO. */
int file_input_open(const char *path, const char *kind, FILE **out, anvil_error *err);

/* The whole of path in *out (malloc'd, NUL-terminated after its *len bytes;
 * free it). A file over max_bytes is refused as "PATH is over N GiB: not
 * KIND" (kind: "a config file"; N in GiB, MiB or bytes). ANVIL_E_NOT_FOUND when path does not exist,
 * ANVIL_E_IO when it cannot be opened or read, ANVIL_E_NOMEM. */
int file_input_read(const char *path, size_t max_bytes, const char *kind, char **out, size_t *len, anvil_error *err);

#endif
