/* SPDX-License-Identifier: MIT */
/* Internal: the export engine's output thread. Tensors are handed over in
 * file order, one in flight at a time, and written (anvil_gguf_writer_
 * stream_tensor) by a thread of their own, so that the copy of one tensor
 * into the file and its write-back overlap the encoding of the next. */
#ifndef ANVIL_HOST_TC_OUTPUT_H
#define ANVIL_HOST_TC_OUTPUT_H

#include <stdint.h>

#include "anvil/gguf.h"

typedef struct tc_output tc_output;

/* Start the thread; NULL when it cannot be. */
tc_output *tc_output_start(void);
/* Hand over `size` bytes at data for w's next tensor: waits until the
 * previous one is written (so its buffer is free again), then returns. When
 * src is not NULL, the range is src's mapping and is released once written.
 * An earlier write's failure is returned here (err set), and nothing queued. */
int tc_output_put(tc_output *o, anvil_gguf_writer *w, const void *data, uint64_t size, const anvil_gguf *src,
                  anvil_error *err);
/* The same for `size` bytes of w's next tensor, after the parts already
 * handed over (gguf_writer_stream_part): a tensor written slab by slab. */
int tc_output_put_part(tc_output *o, anvil_gguf_writer *w, const void *data, uint64_t size, anvil_error *err);
/* Wait until everything handed over is written; the first failure, if any. */
int tc_output_wait(tc_output *o, anvil_error *err);
/* Wait, stop and free the thread (NULL is fine). */
void tc_output_stop(tc_output *o);

#endif
