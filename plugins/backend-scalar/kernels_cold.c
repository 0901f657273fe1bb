/* backend-scalar: cold kernels -- this family has not landed yet (empty table). */
#include "kernel_tables.h"

const anvil_act_quantizer *const anvil_scalar_quantizers_cold[] = { NULL };
const anvil_kernel *const anvil_scalar_kernels_cold[] = { NULL };
