/* SPDX-License-Identifier: MIT */
/* The quantize family's --target-size case (parity_quantize_target.c). */
#ifndef ANVIL_PARITY_QUANTIZE_TARGET_H
#define ANVIL_PARITY_QUANTIZE_TARGET_H

#include "anvil/anvil.h"
#include "llama_oracle.h"
#include "parity.h"

/* anvil quantize --target-size of the trained model in
 * ../shared/testdata/quality at two budgets, its --plan-out file read the
 * way llama-quantize reads a --tensor-type-file and handed to
 * llama_model_quantize with the same importance matrix: every tensor must
 * come out with the same type and the same bytes. Files go to dir.
 * Returns the number of failures (0 when the test data is absent: said). */
int parity_quantize_target(parity_ctx *pc, llama_oracle *lo, anvil_ctx *ctx, const char *dir);

#endif
