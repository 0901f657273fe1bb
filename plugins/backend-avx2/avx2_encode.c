/* SPDX-License-Identifier: MIT */
/* backend-avx2: weight encoders (ABI 1.1), byte-identical to the codecs'
 * reference encoders: the shared SIMD sources (plugins/simd-common/
 * simd_enc_*.h, which say how) on the AVX2 vector layer. */
#include "avx2_enc_isa.h"
#include "avx2_kernels.h"
#include "simd_enc_flat.h"
#include "simd_enc_iq4.h"
#include "simd_enc_kquants.h"
#include "simd_enc_ptqtps.h"
#include "simd_enc_small.h"
