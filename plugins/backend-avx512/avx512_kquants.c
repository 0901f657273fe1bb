/* backend-avx512: kquants kernels (placeholder table, filled in by later commits). */
#include "avx512_common.h"
#include "avx512_kernels.h"

const anvil_kernel *const AVX512_SYM(anvil_avx512_kernels_kquants)[] = { NULL };
