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
 */
#ifndef ANVIL_HOST_FILE_INPUT_H
#define ANVIL_HOST_FILE_INPUT_H

#include "anvil/anvil.h"

/* ANVIL_OK, or ANVIL_E_IO naming path, what it is and what to do. */
int file_input_check(const char *path, anvil_error *err);

#endif
