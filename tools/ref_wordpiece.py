#!/usr/bin/env python3
"""Reference ids for the WordPiece tokenizer (models/wordpiece.h), from
Hugging Face's `tokenizers`, set up as BertTokenizerFast and the
tokenizer.json of BERT models set it up: BertNormalizer + BertPreTokenizer +
WordPiece (max_input_chars_per_word 100) + the [CLS] $A [SEP] template.

    python3 tools/ref_wordpiece.py tests/data/tokenizer/bert-vocab.txt \\
        tests/data/tokenizer/wordpiece_expected.txt

bert-vocab.txt is all-MiniLM-L6-v2's vocab.txt (bert-base-uncased's 30522
tokens). Output lines: MODE <tab> hex of the UTF-8 text <tab> ids, where MODE
is "lower" (do_lower_case, accents stripped), "cased" (neither) or
"trunc16" (lower, max_length 16 with truncation).
Needs: pip install tokenizers
"""
import sys

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

CORPUS = [
    "Hello world",
    "Hello, world! How are you today?",
    "Café déjà vu — naïve façade, Ærøskøbing, São Paulo, Straße, İstanbul, ÅNGSTRÖM",
    "Crème brûlée à la mode; Ελληνικά ΣΟΦΙΑ Ὀδυσσεύς; Русский ТЕКСТ; Việt Nam",
    "日本語のテキストと中文字符，한국어 텍스트。𠀀𪚲 丽",
    "1 12 123 1234 12345 1234567 3.14159 2024-11-25 1,000,000 x2 A100 ٣٤٥ ²³ ½ Ⅻ",
    "a  b   c    d\t\te  \t f",
    "   leading and trailing   ",
    "line1\nline2\n\nline3\r\n  indented\n\t\ttabbed\n",
    "def f(x):\n    return x**2 + 1  # square",
    'int main(void) { printf("%d\\n", 42); return 0; }',
    "I ❤️ 🦀 and 👨\u200d👩\u200d👧! 🎉🎉 ☃ 🥰 🫠",
    "I'm sure you're right, they'll see it's what we'd've: DON'T",
    "The year 1999 was 100% gr8!!! ...??? $100.00 @user #tag https://example.com/path?q=1&r=2",
    "a\u00a0b\u3000c\u2003d\u2028e\u0085f\u000bg\u000ch\u200bi\u00adj",
    "pneumonoultramicroscopicsilicovolcanoconiosis supercalifragilisticexpialidocious",
    "x" * 99 + " " + "y" * 100 + " " + "z" * 101,
    "antidisestablishmentarianism unbelievably transformers tokenization",
    "(hello) [world] {foo} <bar> \"quoted\" 'single' «guillemets» ¿qué? ¡sí! – — … · •",
    "control\u0001chars\u007fhere\ufffdand\u0000nul",
    "e\u0301 combining vs é precomposed, ñ vs n\u0303, ﬁ ligature, Ａ fullwidth, ℌ",
    "ǅ ǈ ǋ titlecase, ß ẞ, ΐ, İ ı, K (kelvin), Å (angstrom)",
    "",
    " ",
    "\n\n\n",
    "[CLS] [SEP] [UNK] [PAD] [MASK] are written here as text",
    "The quick brown fox jumps over the lazy dog. " * 3,
]


def bert(vocab, lower):
    tok = Tokenizer(models.WordPiece.from_file(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None,
                                                lowercase=lower)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    return tok


def main():
    vocab, out = sys.argv[1], sys.argv[2]
    modes = {"lower": bert(vocab, True), "cased": bert(vocab, False)}
    trunc = bert(vocab, True)
    trunc.enable_truncation(16)
    with open(out, "w", encoding="utf-8") as f:
        for text in CORPUS:
            if "[CLS]" in text:
                continue   # special tokens in the text: not handled (models/wordpiece.h says so)
            for name, tok in modes.items():
                ids = tok.encode(text).ids
                f.write("%s\t%s\t%s\n" % (name, text.encode("utf-8").hex(), " ".join(map(str, ids))))
            ids = trunc.encode(text).ids
            f.write("trunc16\t%s\t%s\n" % (text.encode("utf-8").hex(), " ".join(map(str, ids))))


if __name__ == "__main__":
    main()
