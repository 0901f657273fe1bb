/* SPDX-License-Identifier: MIT */
/*
 * anvil SDK — status codes shared by the host and every plugin.
 *
 * 0 is success, every error is negative. Values are part of the ABI: they are
 * never renumbered and never reused; new codes are appended inside their
 * range. The host's anvil_strerror() names each one.
 *
 * Ranges: generic -1..-49, config/plugins -50..-99, GGUF -100..-149,
 * safetensors -150..-199, tools -200..-249.
 */
#ifndef ANVIL_STATUS_H
#define ANVIL_STATUS_H

typedef enum anvil_status {
    ANVIL_OK = 0,

    /* generic */
    ANVIL_E_INVALID_ARG = -1,         /* a caller passed an impossible argument */
    ANVIL_E_NOMEM = -2,               /* allocation failed */
    ANVIL_E_IO = -3,                  /* open/read/write/mmap/rename failed */
    ANVIL_E_OVERFLOW = -4,            /* a size or count computation overflowed */
    ANVIL_E_UNSUPPORTED = -5,         /* valid request this build cannot serve */
    ANVIL_E_NONFINITE = -6,           /* NaN or Inf given to an encoder */
    ANVIL_E_ENCODER_UNAVAILABLE = -7, /* format has no byte-exact encoder */
    ANVIL_E_BLOCK_MISMATCH = -8,      /* length is not a whole number of blocks */
    ANVIL_E_UNKNOWN_TYPE = -9,        /* type id/name no loaded plugin provides */
    ANVIL_E_NO_KERNEL = -10,          /* no backend kernel and no fallback */
    ANVIL_E_BUFFER_TOO_SMALL = -11,   /* output buffer shorter than needed */
    ANVIL_E_INTERNAL = -12,           /* a bug: please report */
    ANVIL_E_NOT_FOUND = -13,          /* named item (key, tensor, file) absent */
    ANVIL_E_DUPLICATE = -14,          /* named item already present */
    ANVIL_E_STATE = -15,              /* call out of order (e.g. stream writer) */
    ANVIL_E_FORMAT = -16,             /* input bytes are not the expected format */
    ANVIL_E_TRUNCATED = -17,          /* input ends before its structure does */
    ANVIL_E_NEEDS_IMATRIX = -18,      /* format encodes only with an importance matrix */

    /* configuration and plugins */
    ANVIL_E_CONFIG_SYNTAX = -50,    /* INI line does not parse */
    ANVIL_E_CONFIG_UNKNOWN = -51,   /* unknown section or key */
    ANVIL_E_CONFIG_VALUE = -52,     /* value does not parse or is out of range */
    ANVIL_E_PLUGIN_NOT_FOUND = -53, /* named plugin not in the search path */
    ANVIL_E_PLUGIN_LOAD = -54,      /* dlopen failed */
    ANVIL_E_PLUGIN_NO_ENTRY = -55,  /* no anvil_plugin_entry symbol */
    ANVIL_E_ABI_MISMATCH = -56,     /* plugin cannot serve the host's ABI major */
    ANVIL_E_PLUGIN_INVALID = -57,   /* descriptor malformed (NULL, bad sizes) */
    ANVIL_E_DUPLICATE_TYPE = -58,   /* two plugins claim one type id / backend */
    ANVIL_E_CPU_UNSUPPORTED = -59,  /* backend scored 0 on this CPU */
    ANVIL_E_PLUGIN_INIT = -60,      /* plugin init() failed */
    ANVIL_E_UNTRUSTED = -61,        /* plugin/config file or folder writable or owned by another user */

    /* GGUF */
    ANVIL_E_GGUF_MAGIC = -100,        /* not a GGUF file */
    ANVIL_E_GGUF_VERSION = -101,      /* unsupported version (1, or > 3) */
    ANVIL_E_GGUF_ENDIAN = -102,       /* byte-swapped (big-endian) file */
    ANVIL_E_GGUF_LEGACY = -103,       /* pre-GGUF ggml/ggmf/ggjt file */
    ANVIL_E_GGUF_TRUNCATED = -104,    /* file ends inside the header or data */
    ANVIL_E_GGUF_KV_TYPE = -105,      /* unknown or invalid KV wire type */
    ANVIL_E_GGUF_DUP_KEY = -106,      /* a key appears twice */
    ANVIL_E_GGUF_DUP_TENSOR = -107,   /* a tensor name appears twice */
    ANVIL_E_GGUF_ALIGNMENT = -108,    /* general.alignment invalid */
    ANVIL_E_GGUF_DIMS = -109,         /* n_dims or a dim out of range */
    ANVIL_E_GGUF_TENSOR_TYPE = -110,  /* unknown or removed tensor type id */
    ANVIL_E_GGUF_ROW_BLOCKS = -111,   /* row length not a whole number of blocks */
    ANVIL_E_GGUF_DATA_RANGE = -112,   /* tensor data outside the file */
    ANVIL_E_GGUF_MISALIGNED = -113,   /* tensor offset not aligned */
    ANVIL_E_GGUF_OVERLAP = -114,      /* two tensors' data overlap */
    ANVIL_E_GGUF_STRING = -115,       /* string length invalid */
    ANVIL_E_GGUF_NESTED_ARRAY = -116, /* array of arrays */
    ANVIL_E_GGUF_SPLIT = -117,        /* split set inconsistent or part missing */
    ANVIL_E_GGUF_KEY_TYPE = -118,     /* a known key has the wrong wire type */
    ANVIL_E_GGUF_COUNT = -119,        /* a count exceeds what the bytes can hold */
    ANVIL_E_GGUF_WRITER = -120,       /* writer misuse: order, lengths, missing */

    /* safetensors */
    ANVIL_E_ST_TOO_SMALL = -150,        /* fewer than 8 bytes */
    ANVIL_E_ST_HEADER_TOO_LARGE = -151, /* header length > 100,000,000 */
    ANVIL_E_ST_HEADER_PAST_END = -152,  /* header length past the end */
    ANVIL_E_ST_UTF8 = -153,             /* header is not valid UTF-8 */
    ANVIL_E_ST_JSON = -154,             /* header is not a JSON object */
    ANVIL_E_ST_DTYPE = -155,            /* unknown dtype */
    ANVIL_E_ST_OVERFLOW = -156,         /* shape product / byte size overflows */
    ANVIL_E_ST_OFFSETS = -157,          /* offsets not contiguous from 0 */
    ANVIL_E_ST_SIZE_MISMATCH = -158,    /* byte length != shape x dtype size */
    ANVIL_E_ST_TRAILING = -159,         /* bytes after the last tensor */
    ANVIL_E_ST_DUP_KEY = -160,          /* duplicate JSON key */
    ANVIL_E_ST_METADATA = -161,         /* __metadata__ not a string->string map */
    ANVIL_E_ST_CONVERSION = -162,       /* dtype unsupported for f32 conversion */
    ANVIL_E_ST_SUBBYTE = -163,          /* sub-byte dtype length not whole bytes */
    ANVIL_E_ST_ENTRY = -164,            /* tensor entry malformed (fields/types) */

    /* tools (transcode, merge-lora) */
    ANVIL_E_POLICY = -200, /* refused by the conservative policy */
    ANVIL_E_SHAPE = -201   /* shapes do not match */
} anvil_status;

#endif /* ANVIL_STATUS_H */
