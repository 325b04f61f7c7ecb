#!/usr/bin/env python3
"""Reference ids for the byte-level BPE tokenizer (models/bpe.h), from the
`tokenizers` package (Hugging Face's own implementation).

  extract SRC.gguf DST.gguf   copy the tokenizer.* keys of a model file into a
                              vocabulary-only GGUF (no tensors): what
                              tests/data/tokenizer/ holds
  expected VOCAB.gguf OUT     write the expected ids of the corpus below, for
                              each pre-tokenizer, to OUT (tests/test_bpe.c reads
                              it), and the pre-tokenizer's words alone to
                              OUT's name with _words (their end offsets in bytes:
                              a check of each regex that no vocabulary hides)

The tokenizer is built from the GGUF's own vocabulary and merges with the
pre-tokenizer, normalizer and model options of each family's published
tokenizer.json (SmolLM2: Digits(individual) + ByteLevel; Llama 3: the Split
regex + ByteLevel without regex, ignore_merges; Qwen2: NFC, Split with single
digits; GPT-2: ByteLevel). Every family is run over the SmolLM2 vocabulary,
so each pre-tokenizer is checked without a download of the other models.

Output lines: PRE <tab> hex of the UTF-8 text <tab> ids (or word ends), space-separated.
Needs: pip install tokenizers gguf numpy
"""
import sys

import numpy as np
from gguf import GGUFReader, GGUFWriter, GGUFValueType
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

LLAMA3 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN2 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"

CORPUS = [
    "Hello world",
    "Hello, world! How are you today?",
    "Café déjà vu — naïve façade, Ærøskøbing, São Paulo, Straße, İstanbul",
    "日本語のテキストと中文字符，한국어 텍스트。",
    "1 12 123 1234 12345 1234567 3.14159 2024-11-25 1,000,000 x2 A100",
    "Arabic-Indic ٣٤٥ and superscripts ²³ and fractions ½ Ⅻ",
    "a  b   c    d\t\te  \t f",
    "   leading and trailing   ",
    "line1\nline2\n\nline3\r\n  indented\n\t\ttabbed\n",
    "  \n  x \n\n y\r\n\r\nz",
    "def f(x):\n    return x**2 + 1  # square\n\nif __name__ == '__main__':\n    print(f(3))\n",
    'int main(void) { printf("%d\\n", 42); return 0; }',
    "I ❤️ 🦀 and 👨‍👩‍👧‍👦! 🎉🎉 ☃",
    "I'm sure you're right, they'll see it's what we'd've: DON'T, I'M, 'Sam', 'RE'",
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|>text<|endoftext|><|endoftext|> <|im_end|>",
    "The year 1999 was 100% gr8!!! ...??? $100.00 @user #tag https://example.com/path?q=1&r=2",
    "Ελληνικά Русский текст العربية हिन्दी ไทย",
    "a\u00a0b\u3000c\u2003d\u2028e",
    "pneumonoultramicroscopicsilicovolcanoconiosis supercalifragilisticexpialidocious",
    "(hello) [world] {foo} <bar> \"quoted\" 'single'",
    "",
    " ",
    "\n\n\n",
    "\t",
    "ok.\n\n\n\nNext paragraph... \t\n  end",
]

PRES = ["gpt-2", "smollm", "llama-bpe", "qwen2"]


def field_value(f):
    return f.contents()


def extract(src, dst):
    r = GGUFReader(src)
    arch = field_value(r.fields["general.architecture"])
    w = GGUFWriter(dst, arch)
    for key, f in r.fields.items():
        if not key.startswith("tokenizer."):
            continue
        vtype = GGUFValueType(f.types[0])
        sub = GGUFValueType(f.types[-1]) if vtype == GGUFValueType.ARRAY else None
        w.add_key_value(key, field_value(f), vtype, sub_type=sub)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def build(gguf_path, pre):
    r = GGUFReader(gguf_path)
    tokens = field_value(r.fields["tokenizer.ggml.tokens"])
    types = field_value(r.fields["tokenizer.ggml.token_type"])
    merges = [tuple(m.split(" ", 1)) for m in field_value(r.fields["tokenizer.ggml.merges"])]
    vocab = {}
    for i, t in enumerate(tokens):
        vocab.setdefault(t, i)
    tk = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=(pre == "llama-bpe")))
    if pre == "gpt-2":
        tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    elif pre == "smollm":
        tk.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    else:
        tk.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3 if pre == "llama-bpe" else QWEN2), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        if pre == "qwen2":
            tk.normalizer = normalizers.NFC()
    tk.decoder = decoders.ByteLevel()
    # the file's control and user-defined tokens are its added tokens
    tk.add_special_tokens([AddedToken(t, special=True, normalized=False)
                           for t, ty in zip(tokens, types) if ty in (3, 4) and t])
    return tk


def expected(gguf_path, out):
    lines = []
    for pre in PRES:
        tk = build(gguf_path, pre)
        for text in CORPUS:
            ids = tk.encode(text, add_special_tokens=False).ids
            back = tk.decode(ids, skip_special_tokens=False)
            assert back == text, (pre, text, back)
            lines.append("%s\t%s\t%s" % (pre, text.encode("utf-8").hex(), " ".join(map(str, ids))))
    words = []
    for pre in PRES:
        tk = build(gguf_path, pre)
        for text in CORPUS:
            norm = tk.normalizer.normalize_str(text) if tk.normalizer else text
            assert norm == text, "the corpus must be NFC"
            # ByteLevel words are byte-mapped: one character per byte
            ends, at = [], 0
            for w, _ in tk.pre_tokenizer.pre_tokenize_str(text):
                at += len(w)
                ends.append(at)
            words.append("%s\t%s\t%s" % (pre, text.encode("utf-8").hex(), " ".join(map(str, ends))))
    head = "# tools/ref_tokenizer.py expected: tokenizers %s\n" % __import__("tokenizers").__version__
    with open(out, "w") as f:
        f.write(head + "\n".join(lines) + "\n")
    with open(out.replace(".txt", "_words.txt"), "w") as f:
        f.write(head + "\n".join(words) + "\n")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "extract":
        extract(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "expected":
        expected(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
