/* SPDX-License-Identifier: MIT */
/* backend-scalar: weight encoders (ABI 1.1), byte-identical to the codecs'
 * reference encoders: the shared SIMD sources (plugins/simd-common/
 * simd_enc_*.h, which say how) on the portable generic-vector layer, so
 * the scalar backend encodes at vector speed on any CPU the compiler
 * targets, with no instruction-set flags. */
#include "portable_enc_isa.h"
#include "kernel_tables.h"
#include "simd_enc_flat.h"
#include "simd_enc_iq4.h"
#include "simd_enc_kquants.h"
#include "simd_enc_ptqtps.h"
#include "simd_enc_small.h"
