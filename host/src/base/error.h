/* SPDX-License-Identifier: MIT */
/* Internal: filling anvil_error. */
#ifndef ANVIL_HOST_ERROR_H
#define ANVIL_HOST_ERROR_H

#include "anvil/anvil.h"

/* Set err (if non-NULL) to code and a formatted message; returns code. */
int anvil__error_set(anvil_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Clear err to ANVIL_OK. */
void anvil__error_clear(anvil_error *err);
/* Prefix the existing message with "<prefix>: ". */
void anvil__error_prefix(anvil_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The one out-of-memory error: sets err, returns ANVIL_E_NOMEM. */
static inline int anvil__nomem(anvil_error *err) { return anvil__error_set(err, ANVIL_E_NOMEM, "out of memory"); }

#endif
