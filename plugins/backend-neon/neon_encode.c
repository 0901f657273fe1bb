/* SPDX-License-Identifier: MIT */
/* backend-neon: weight encoders (ABI 1.1), byte-identical to the codecs'
 * reference encoders: the shared SIMD sources (plugins/simd-common/
 * simd_enc_*.h, which say how) on the Advanced SIMD vector layer. One copy
 * for every variant: no encoder uses an integer dot. */
#include "neon_enc_isa.h"
#include "neon_kernels.h"
#include "simd_enc_flat.h"
#include "simd_enc_iq4.h"
#include "simd_enc_kquants.h"
#include "simd_enc_ptqtps.h"
#include "simd_enc_small.h"
