/* SPDX-License-Identifier: MIT */
/* backend-avx512: weight encoders (ABI 1.1), byte-identical to the codecs'
 * reference encoders: the shared SIMD sources (plugins/simd-common/
 * simd_enc_*.h, which say how) on the AVX-512 vector layer. Compiled once
 * for both kernel variants (no encoder uses VNNI); with AVX512_EMULATED,
 * through SIMDe for the test build. */
#include "avx512_enc_isa.h"
#include "avx512_kernels.h"
#include "simd_enc_flat.h"
#include "simd_enc_iq4.h"
#include "simd_enc_kquants.h"
#include "simd_enc_ptqtps.h"
#include "simd_enc_small.h"
