/* SPDX-License-Identifier: MIT */
/*
 * Internal: a Hugging Face checkpoint folder's tokenizer, as
 * convert_hf_to_gguf.py (llama.cpp de3ff815) writes it into a GGUF: the
 * tokenizer.ggml.* KVs and the chat template, in the converter's order and
 * wire types, for LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM,
 * Qwen3ForCausalLM, Gemma2ForCausalLM and Gemma3ForCausalLM (Gemma: the
 * SentencePiece path below, then tokenizer.ggml.add_space_prefix false;
 * Gemma 2 requires tokenizer.model, Gemma 3 falls back to gpt2), and
 * Phi3ForCausalLM (its own set_vocab: hf_vocab_phi3.c).
 *
 * Which tokenizer (the converter's set_vocab, in its order of tries):
 *   - tokenizer.model present: SentencePiece (_set_vocab_sentencepiece).
 *     The protobuf is read here (a checked wire-format reader): pieces,
 *     scores, types; added_tokens.json and tokenizer_config.json's
 *     added_tokens_decoder as the converter applies them.
 *     model "llama", pre "default", tokens/scores/token_type.
 *   - else, Llama/Mistral only: a tokenizer.json whose model is BPE with
 *     byte_fallback and a Sequence decoder (llama-2 style: LlamaHfVocab).
 *     model "llama", pre "default", tokens/scores (-1000)/token_type.
 *   - else a byte-level BPE tokenizer.json (_set_vocab_gpt2): model "gpt2",
 *     tokens (padded to config.json's vocab_size with "[PAD<i>]", type
 *     UNUSED), token_type, merges ("a b" strings; [a, b] pairs joined with
 *     a space, a space inside a part written as U+0120 as gguf-py does).
 * Then gguf-py's SpecialVocab: merges (gpt2), bos/eos/unk/sep/pad/cls/mask
 * ids (tokenizer_config.json's *_token looked up among tokenizer.json's
 * added_tokens, then config.json's *_token_id), add_*_token (the
 * post_processor's TemplateProcessing/RobertaProcessing, then
 * tokenizer_config.json), chat_template (tokenizer_config.json, else
 * chat_template.jinja / chat_template.json), normalizer lowercase /
 * strip_accents. For Llama/Mistral, tokenizer_config.json's
 * add_prefix_space is written first (tokenizer.ggml.add_space_prefix).
 *
 * The pre-tokenizer name (tokenizer.ggml.pre). The converter names a
 * byte-level BPE pre-tokenizer by hashing what the real tokenizer makes of a
 * test text; that needs the tokenizer itself. anvil names it from the
 * definition in tokenizer.json instead -- its normalizer and pre_tokenizer,
 * matched exactly against the definitions of the published tokenizers the
 * converter's table names:
 *   "llama-bpe": normalizer null; pre_tokenizer Sequence[Split(Regex
 *       "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *       ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+", Isolated, not
 *       inverted), ByteLevel(add_prefix_space false, use_regex false)]
 *       (Meta Llama 3 / 3.1 / 3.2 / 3.3);
 *   "qwen2": normalizer NFC; the same Sequence with \p{N} in place of
 *       \p{N}{1,3} (Qwen 1.5 / 2 / 2.5 / 3).
 * trim_offsets (offsets only, not tokens) is not compared. Anything else is
 * refused, naming tokenizer.json and what differs. Where the converter's
 * table gives a different name to a tokenizer with one of these definitions
 * (e.g. "smaug-bpe", "deepseek-r1-qwen": same pre-tokenizer, other
 * vocabulary), anvil writes the name above: llama.cpp's loader treats them
 * alike (the name selects the pre-tokenizer regexes), but those files differ
 * from the converter's in that one string.
 *
 * Where anvil stops short of the converter (each an error naming the file,
 * never a different output): a folder with vocab.json/merges.txt but no
 * tokenizer.json, additional_chat_templates/
 * (the converter lists their names from a Python set: no fixed order), a
 * Mistral tekken.json without tokenizer.json, HybridDNATokenizer.
 * generation_config.json is not read here: set_vocab does not read it (the
 * general.* metadata does, in hf_meta.c). The fast-tokenizer views are those
 * of the hf-oracle's transformers stand-in the reference outputs were made
 * with (hf_vocab_bpe.c says which).
 *
 * Token texts are kept as the files give them (UTF-8). Errors name the file
 * (and the key or the protobuf offset) and say what to do; nothing is
 * written to the writer unless the whole tokenizer was read.
 */
#ifndef ANVIL_HOST_HF_VOCAB_H
#define ANVIL_HOST_HF_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "anvil/anvil.h"
#include "anvil/gguf.h"

typedef struct anvil__hf_vocab anvil__hf_vocab;

/* Read the tokenizer of the checkpoint folder hf_dir for architecture arch
 * (config.json's architectures[0]; one of the four above, else
 * ANVIL_E_UNSUPPORTED). Reads config.json itself (vocab_size, *_token_id,
 * text_config), tokenizer.model / tokenizer.json, tokenizer_config.json,
 * added_tokens.json, chat_template.jinja|json. *out is freed with
 * hf_vocab_free. */
int hf_vocab_load(const char *hf_dir, const char *arch, anvil__hf_vocab **out, anvil_error *err);

/* Append the KVs to w, in the converter's order (call it where the converter
 * calls set_vocab: after the hparams and general.quantization_version). */
int hf_vocab_write(const anvil__hf_vocab *v, anvil_gguf_writer *w, anvil_error *err);

void hf_vocab_free(anvil__hf_vocab *v);

/* Entries of tokenizer.ggml.tokens (config.json's vocab_size when the
 * converter pads or cuts to it). */
uint64_t hf_vocab_count(const anvil__hf_vocab *v);

/* "spm", "llama-hf" or "gpt2" (which path was taken), and the
 * tokenizer.ggml.pre written ("default", "llama-bpe", "qwen2"), for
 * messages. */
const char *hf_vocab_kind(const anvil__hf_vocab *v);
const char *hf_vocab_pre(const anvil__hf_vocab *v);

#endif
