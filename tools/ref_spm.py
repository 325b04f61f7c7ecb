#!/usr/bin/env python3
"""Reference ids for the SentencePiece tokenizer (models/spm.h) on Gemma 3's
own vocabulary (262k tokens, from the Gemma 3 270M GGUF that
tools/test_models.sh fetches): the corpus of tools/ref_tokenizer.py plus a
chat turn and indented code, encoded by transformers' tokenizer built from
the same GGUF (a `tokenizers` model: Replace(" " -> U+2581), no dummy
prefix, byte fallback), without BOS.

  ref_spm.py GEMMA3.gguf OUT.txt     (tests/data/tokenizer/expected_gemma3.txt)

Needs: pip install transformers tokenizers gguf sentencepiece
"""
import os
import sys

from transformers import AutoTokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ref_tokenizer import CORPUS  # noqa: E402


def main(path, out):
    tok = AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(path)), gguf_file=os.path.basename(path))
    corpus = list(CORPUS) + [
        "<start_of_turn>user\nWhat is 12345 + 678?<end_of_turn>\n<start_of_turn>model\n",
        "    for i in range(10):\n        total += i  # 累计\n",
    ]
    lines = ["spm\t%s\t%s" % (t.encode("utf-8").hex(), " ".join(map(str, tok.encode(t, add_special_tokens=False))))
             for t in corpus]
    head = "# tools/ref_spm.py: transformers %s (%s)\n" % (__import__("transformers").__version__,
                                                          type(tok).__name__)
    with open(out, "w") as f:
        f.write(head + "\n".join(lines) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
