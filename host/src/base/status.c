/* SPDX-License-Identifier: MIT */
/* Status names and error-message plumbing. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "anvil/anvil.h"
#include "error.h"

ANVIL_API const char *anvil_version(void) { return ANVIL_VERSION_STRING; }

ANVIL_API const char *anvil_strerror(int status) {
    switch (status) {
    case ANVIL_OK: return "ANVIL_OK: success";
    case ANVIL_E_INVALID_ARG: return "ANVIL_E_INVALID_ARG: invalid argument";
    case ANVIL_E_NOMEM: return "ANVIL_E_NOMEM: out of memory";
    case ANVIL_E_IO: return "ANVIL_E_IO: input/output error";
    case ANVIL_E_OVERFLOW: return "ANVIL_E_OVERFLOW: size computation overflows";
    case ANVIL_E_UNSUPPORTED: return "ANVIL_E_UNSUPPORTED: not supported";
    case ANVIL_E_NONFINITE: return "ANVIL_E_NONFINITE: non-finite input";
    case ANVIL_E_ENCODER_UNAVAILABLE: return "ANVIL_E_ENCODER_UNAVAILABLE: no byte-exact encoder for this format";
    case ANVIL_E_BLOCK_MISMATCH: return "ANVIL_E_BLOCK_MISMATCH: length is not a whole number of blocks";
    case ANVIL_E_UNKNOWN_TYPE: return "ANVIL_E_UNKNOWN_TYPE: unknown type";
    case ANVIL_E_NO_KERNEL: return "ANVIL_E_NO_KERNEL: no kernel for this type";
    case ANVIL_E_BUFFER_TOO_SMALL: return "ANVIL_E_BUFFER_TOO_SMALL: buffer too small";
    case ANVIL_E_INTERNAL: return "ANVIL_E_INTERNAL: internal error";
    case ANVIL_E_NOT_FOUND: return "ANVIL_E_NOT_FOUND: not found";
    case ANVIL_E_DUPLICATE: return "ANVIL_E_DUPLICATE: already present";
    case ANVIL_E_STATE: return "ANVIL_E_STATE: call out of order";
    case ANVIL_E_FORMAT: return "ANVIL_E_FORMAT: malformed input";
    case ANVIL_E_TRUNCATED: return "ANVIL_E_TRUNCATED: input is truncated";
    case ANVIL_E_NEEDS_IMATRIX: return "ANVIL_E_NEEDS_IMATRIX: this format encodes only with an importance matrix";
    case ANVIL_E_CONFIG_SYNTAX: return "ANVIL_E_CONFIG_SYNTAX: config syntax error";
    case ANVIL_E_CONFIG_UNKNOWN: return "ANVIL_E_CONFIG_UNKNOWN: unknown config section or key";
    case ANVIL_E_CONFIG_VALUE: return "ANVIL_E_CONFIG_VALUE: bad config value";
    case ANVIL_E_PLUGIN_NOT_FOUND: return "ANVIL_E_PLUGIN_NOT_FOUND: plugin not found";
    case ANVIL_E_PLUGIN_LOAD: return "ANVIL_E_PLUGIN_LOAD: plugin failed to load";
    case ANVIL_E_PLUGIN_NO_ENTRY: return "ANVIL_E_PLUGIN_NO_ENTRY: plugin has no entry symbol";
    case ANVIL_E_ABI_MISMATCH: return "ANVIL_E_ABI_MISMATCH: plugin ABI mismatch";
    case ANVIL_E_PLUGIN_INVALID: return "ANVIL_E_PLUGIN_INVALID: malformed plugin descriptor";
    case ANVIL_E_DUPLICATE_TYPE: return "ANVIL_E_DUPLICATE_TYPE: type or backend claimed twice";
    case ANVIL_E_CPU_UNSUPPORTED: return "ANVIL_E_CPU_UNSUPPORTED: backend cannot run on this CPU";
    case ANVIL_E_PLUGIN_INIT: return "ANVIL_E_PLUGIN_INIT: plugin initialisation failed";
    case ANVIL_E_UNTRUSTED: return "ANVIL_E_UNTRUSTED: file or folder another user could change";
    case ANVIL_E_GGUF_MAGIC: return "ANVIL_E_GGUF_MAGIC: not a GGUF file";
    case ANVIL_E_GGUF_VERSION: return "ANVIL_E_GGUF_VERSION: unsupported GGUF version";
    case ANVIL_E_GGUF_ENDIAN: return "ANVIL_E_GGUF_ENDIAN: GGUF byte order mismatch";
    case ANVIL_E_GGUF_LEGACY: return "ANVIL_E_GGUF_LEGACY: pre-GGUF ggml file";
    case ANVIL_E_GGUF_TRUNCATED: return "ANVIL_E_GGUF_TRUNCATED: GGUF file is truncated";
    case ANVIL_E_GGUF_KV_TYPE: return "ANVIL_E_GGUF_KV_TYPE: invalid GGUF value type";
    case ANVIL_E_GGUF_DUP_KEY: return "ANVIL_E_GGUF_DUP_KEY: duplicate GGUF key";
    case ANVIL_E_GGUF_DUP_TENSOR: return "ANVIL_E_GGUF_DUP_TENSOR: duplicate GGUF tensor name";
    case ANVIL_E_GGUF_ALIGNMENT: return "ANVIL_E_GGUF_ALIGNMENT: invalid GGUF alignment";
    case ANVIL_E_GGUF_DIMS: return "ANVIL_E_GGUF_DIMS: invalid GGUF tensor dimensions";
    case ANVIL_E_GGUF_TENSOR_TYPE: return "ANVIL_E_GGUF_TENSOR_TYPE: unknown GGUF tensor type";
    case ANVIL_E_GGUF_ROW_BLOCKS: return "ANVIL_E_GGUF_ROW_BLOCKS: row is not a whole number of blocks";
    case ANVIL_E_GGUF_DATA_RANGE: return "ANVIL_E_GGUF_DATA_RANGE: tensor data outside the file";
    case ANVIL_E_GGUF_MISALIGNED: return "ANVIL_E_GGUF_MISALIGNED: tensor data misaligned";
    case ANVIL_E_GGUF_OVERLAP: return "ANVIL_E_GGUF_OVERLAP: tensor data overlaps";
    case ANVIL_E_GGUF_STRING: return "ANVIL_E_GGUF_STRING: invalid GGUF string";
    case ANVIL_E_GGUF_NESTED_ARRAY: return "ANVIL_E_GGUF_NESTED_ARRAY: nested GGUF array";
    case ANVIL_E_GGUF_SPLIT: return "ANVIL_E_GGUF_SPLIT: inconsistent split GGUF";
    case ANVIL_E_GGUF_KEY_TYPE: return "ANVIL_E_GGUF_KEY_TYPE: GGUF key has the wrong type";
    case ANVIL_E_GGUF_COUNT: return "ANVIL_E_GGUF_COUNT: GGUF count exceeds the file";
    case ANVIL_E_GGUF_WRITER: return "ANVIL_E_GGUF_WRITER: GGUF writer misuse";
    case ANVIL_E_ST_TOO_SMALL: return "ANVIL_E_ST_TOO_SMALL: safetensors buffer under 8 bytes";
    case ANVIL_E_ST_HEADER_TOO_LARGE: return "ANVIL_E_ST_HEADER_TOO_LARGE: safetensors header too large";
    case ANVIL_E_ST_HEADER_PAST_END: return "ANVIL_E_ST_HEADER_PAST_END: safetensors header runs past the end";
    case ANVIL_E_ST_UTF8: return "ANVIL_E_ST_UTF8: safetensors header is not UTF-8";
    case ANVIL_E_ST_JSON: return "ANVIL_E_ST_JSON: safetensors header is not a JSON object";
    case ANVIL_E_ST_DTYPE: return "ANVIL_E_ST_DTYPE: unknown safetensors dtype";
    case ANVIL_E_ST_OVERFLOW: return "ANVIL_E_ST_OVERFLOW: safetensors shape overflows";
    case ANVIL_E_ST_OFFSETS: return "ANVIL_E_ST_OFFSETS: safetensors offsets not contiguous";
    case ANVIL_E_ST_SIZE_MISMATCH: return "ANVIL_E_ST_SIZE_MISMATCH: safetensors tensor size mismatch";
    case ANVIL_E_ST_TRAILING: return "ANVIL_E_ST_TRAILING: bytes after the last safetensors tensor";
    case ANVIL_E_ST_DUP_KEY: return "ANVIL_E_ST_DUP_KEY: duplicate safetensors key";
    case ANVIL_E_ST_METADATA: return "ANVIL_E_ST_METADATA: invalid safetensors __metadata__";
    case ANVIL_E_ST_CONVERSION: return "ANVIL_E_ST_CONVERSION: dtype unsupported for conversion";
    case ANVIL_E_ST_SUBBYTE: return "ANVIL_E_ST_SUBBYTE: sub-byte dtype length not whole bytes";
    case ANVIL_E_ST_ENTRY: return "ANVIL_E_ST_ENTRY: malformed safetensors tensor entry";
    case ANVIL_E_POLICY: return "ANVIL_E_POLICY: refused by policy";
    case ANVIL_E_SHAPE: return "ANVIL_E_SHAPE: shape mismatch";
    default: return "unknown anvil status";
    }
}

int anvil__error_set(anvil_error *err, int code, const char *fmt, ...) {
    if (err != NULL) {
        err->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

void anvil__error_clear(anvil_error *err) {
    if (err != NULL) {
        err->code = ANVIL_OK;
        err->message[0] = '\0';
    }
}

void anvil__error_prefix(anvil_error *err, const char *fmt, ...) {
    if (err == NULL) {
        return;
    }
    char prefix[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    /* prefix + ": " + old message, truncated to the buffer. */
    const size_t cap = sizeof err->message;
    const size_t plen = strnlen(prefix, sizeof prefix);
    const size_t add = plen + 2 < cap ? plen + 2 : cap - 1;
    const size_t olen = strnlen(err->message, cap - 1);
    const size_t keep = olen + add < cap ? olen : cap - 1 - add;
    memmove(err->message + add, err->message, keep);
    err->message[add + keep] = '\0';
    memcpy(err->message, prefix, add >= 2 ? add - 2 : add);
    if (add >= 2) {
        err->message[add - 2] = ':';
        err->message[add - 1] = ' ';
    }
}
