#!/usr/bin/env python3
"""Reference ids for the byte-level BPE tokenizer (models/bpe.h) on two real
vocabularies that pip packages carry as tiktoken files:

  llama3  Llama 3's tokenizer.model   (llama-models==0.3.0, llama_models/llama3/)
  qwen    Qwen's qwen.tiktoken        (dashscope==2.0.2, dashscope/resources/)

  ref_tiktoken.py FAMILY TIKTOKEN_FILE OUT_DIR

writes OUT_DIR/FAMILY-specials.txt (the family's special tokens, "id text",
as the package's own tokenizer code numbers them; tools/tiktoken_vocab.c
puts them in the GGUF) and OUT_DIR/expected_FAMILY.txt (the corpus of
tools/ref_tokenizer.py plus a chat turn, encoded by `tokenizers`).

The `tokenizers` model is built from the tiktoken file by transformers'
TikTokenConverter (its own merge derivation, not tools/tiktoken_vocab.c's),
with the published pre-tokenizers: Llama 3 Split(regex) + ByteLevel with
ignore_merges; Qwen2's NFC + Split(regex with single digits) + ByteLevel. Every
line is also checked against tiktoken itself (the vocabularies' own
implementation) with the special tokens allowed: the two agree on all of it.

Needs: pip install tokenizers transformers tiktoken
"""
import os
import sys

import tiktoken
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
from transformers.convert_slow_tokenizer import TikTokenConverter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ref_tokenizer import CORPUS, LLAMA3, QWEN2  # noqa: E402


def specials(family, n_base):
    if family == "llama3":   # llama_models/llama3/tokenizer.py, 0.3.0
        names = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                 "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|step_id|>",
                 "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>",
                 "<|python_tag|>", "<|image|>"]
        names += ["<|reserved_special_token_%d|>" % (2 + i) for i in range(256 - len(names))]
        return {t: n_base + i for i, t in enumerate(names)}
    # dashscope/tokenizers/qwen_tokenizer.py: from id 151643
    names = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + ["<|extra_%d|>" % i for i in range(205)]
    return {t: 151643 + i for i, t in enumerate(names)}


def main(family, path, out_dir):
    llama3 = family == "llama3"
    pattern = LLAMA3 if llama3 else QWEN2
    vocab, merges = TikTokenConverter(vocab_file=path, pattern=pattern).extract_vocab_merges_from_model(path)
    sp = specials(family, len(vocab))
    tk = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=llama3))
    if not llama3:
        tk.normalizer = normalizers.NFC()
    tk.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tk.decoder = decoders.ByteLevel()
    tk.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in sorted(sp, key=sp.get)])
    assert all(tk.token_to_id(t) == i for t, i in sp.items()), "special ids"

    ranks = tiktoken.load.load_tiktoken_bpe(path)
    enc = tiktoken.Encoding(name=family, pat_str=pattern, mergeable_ranks=ranks, special_tokens=sp)

    corpus = list(CORPUS) + [
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWhat is 12345 + 678?<|eot_id|>",
        "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\n数学 3.14159<|im_end|>\n",
        "    for i in range(10):\n        total += i  # 累计\n",
    ]
    pre = "llama-bpe" if llama3 else "qwen2"
    lines = []
    for text in corpus:
        ids = tk.encode(text, add_special_tokens=False).ids
        assert ids == enc.encode(text, allowed_special="all"), (family, text)
        assert tk.decode(ids, skip_special_tokens=False) == text, (family, text)
        lines.append("%s\t%s\t%s" % (pre, text.encode("utf-8").hex(), " ".join(map(str, ids))))
    head = "# tools/ref_tiktoken.py %s: tokenizers %s, tiktoken %s\n" % (
        family, __import__("tokenizers").__version__, tiktoken.__version__)
    with open(os.path.join(out_dir, "expected_%s.txt" % family), "w") as f:
        f.write(head + "\n".join(lines) + "\n")
    with open(os.path.join(out_dir, "%s-specials.txt" % family), "w") as f:
        f.write("# tools/ref_tiktoken.py: %s special tokens, id text\n" % family)
        f.write("".join("%d %s\n" % (i, t) for t, i in sorted(sp.items(), key=lambda x: x[1])))


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("llama3", "qwen"):
        sys.exit(__doc__)
    main(*sys.argv[1:])
