/* SPDX-License-Identifier: MIT */
/* Every SDK header, alone, with nothing but sdk/include on the include path:
 * compiled as strict C99 (-std=c99 -pedantic-errors) and, via
 * sdk_headers.cpp, as C++17. A plugin author's compiler must accept them. */
#include "anvil/abi.h"
#include "anvil/backend.h"
#include "anvil/blocks.h"
#include "anvil/codec.h"
#include "anvil/formats/ptqtp.h"
#include "anvil/formats/ptqtps.h"
#include "anvil/numeric.h"
#include "anvil/status.h"

/* Use a little of everything so the inline helpers are instantiated. */
const anvil_plugin_desc *sdk_header_check(uint32_t major, uint32_t minor);
const anvil_plugin_desc *sdk_header_check(uint32_t major, uint32_t minor) {
    static anvil_plugin_desc desc;
    anvil_half h = anvil_fp32_to_fp16(1.5f);
    float back = anvil_fp16_to_fp32(h) + anvil_bf16_to_fp32(anvil_fp32_to_bf16(2.0f));
    desc.struct_size =
        (uint32_t)sizeof desc + 0 * (uint32_t)sizeof(anvil_block_ptqtp3) + 0 * (uint32_t)sizeof(anvil_block_ptqtp2s);
    desc.abi_major = major;
    desc.abi_minor = minor + (uint32_t)anvil_nearest_int(back);
    return ANVIL_HAS_FIELD(&desc, anvil_plugin_desc, backends) ? &desc : 0;
}
