/* SPDX-License-Identifier: MIT */
/* Internal: the host log sink (log.c). */
#ifndef ANVIL_HOST_LOG_H
#define ANVIL_HOST_LOG_H

/* Log at level (ANVIL_LOG_*) to stderr as "anvil: <level>: <who>: <text>",
 * when $ANVIL_LOG lets that level through. who may be NULL. */
void anvil__log(int level, const char *who, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
