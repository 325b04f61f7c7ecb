#!/usr/bin/env python3
"""Reference sentence embeddings for models/bert.h, from a BERT forward pass
written out here in PyTorch, in float64 (not transformers' model code).

  tiny DIR OUT     DIR from `build/make_bert -o DIR` (tools/bert_gen.h, its
                   defaults): the embeddings of the sentences below, mean- and
                   CLS-pooled, before L2 normalisation -> tests/data/bert_tiny_ref.txt
  real DIR OUT     a Hugging Face BERT directory (all-MiniLM-L6-v2): mean-pooled
                   and L2-normalised, as sentence-transformers does, checked here
                   against transformers' BertModel (float64) -> tests/data/minilm_ref.txt

Tokens come from Hugging Face's `tokenizers` (BertNormalizer, BertPreTokenizer,
WordPiece from DIR's vocab.txt, lower case), truncated to the model's positions.
Output lines: POOL <tab> hex of the UTF-8 text <tab> ids <tab> values (%.9g).
Needs: pip install torch safetensors tokenizers numpy (transformers for `real`)
"""
import json
import math
import os
import sys

import numpy as np
import torch
from safetensors.numpy import load_file
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

TINY = [
    "hello world",
    "The cat sat on the mat.",
    "a",
    "Quick brown fox, lazy dog!",
    "Embedding sentences on the GPU and the CPU with devkit: tokenization of words like cafe and Café.",
    "the " * 40 + "end",
    "xylophone zebra quantum 12345",
]

REAL = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "Café déjà vu, naïve façade: 日本語のテキスト.",
    "Embeddings on every device: cpu, vulkan and cuda.",
    "",
    "A long document is cut at max_seq_length (256 tokens for all-MiniLM-L6-v2). " * 30,
]


def tokenizer(d, max_len):
    tok = Tokenizer(models.WordPiece.from_file(os.path.join(d, "vocab.txt"), unk_token="[UNK]",
                                               max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None,
                                                lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    tok.enable_truncation(max_len)
    return tok


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * w + b


def gelu(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def forward(W, cfg, ids):
    """hidden states [T, dim] of one sentence (no padding: nothing to mask)"""
    g = lambda n: W[n]
    T = len(ids)
    H = cfg["num_attention_heads"]
    D = cfg["hidden_size"] // H
    eps = cfg.get("layer_norm_eps", 1e-12)
    ids_t = torch.tensor(ids)
    x = g("embeddings.word_embeddings.weight")[ids_t] + g("embeddings.position_embeddings.weight")[:T] + \
        g("embeddings.token_type_embeddings.weight")[0]
    x = layer_norm(x, g("embeddings.LayerNorm.weight"), g("embeddings.LayerNorm.bias"), eps)
    for l in range(cfg["num_hidden_layers"]):
        p = "encoder.layer.%d." % l
        lin = lambda v, n: v @ g(p + n + ".weight").T + g(p + n + ".bias")
        q = lin(x, "attention.self.query").view(T, H, D).transpose(0, 1)
        k = lin(x, "attention.self.key").view(T, H, D).transpose(0, 1)
        v = lin(x, "attention.self.value").view(T, H, D).transpose(0, 1)
        a = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(D), dim=-1) @ v
        a = a.transpose(0, 1).reshape(T, H * D)
        x = layer_norm(x + lin(a, "attention.output.dense"), g(p + "attention.output.LayerNorm.weight"),
                       g(p + "attention.output.LayerNorm.bias"), eps)
        h = gelu(lin(x, "intermediate.dense"))
        x = layer_norm(x + lin(h, "output.dense"), g(p + "output.LayerNorm.weight"), g(p + "output.LayerNorm.bias"), eps)
    return x


def load(d):
    cfg = json.load(open(os.path.join(d, "config.json")))
    W = {k: torch.from_numpy(v.astype(np.float64)) for k, v in load_file(os.path.join(d, "model.safetensors")).items()
         if v.dtype != np.int64}
    return cfg, W


def line(pool, text, ids, vec):
    return "%s\t%s\t%s\t%s\n" % (pool, text.encode("utf-8").hex(), " ".join(map(str, ids)),
                                 " ".join("%.9g" % v for v in vec.tolist()))


def main():
    mode, d, out = sys.argv[1], sys.argv[2], sys.argv[3]
    cfg, W = load(d)
    tok = tokenizer(d, cfg["max_position_embeddings"] if mode == "tiny" else 256)
    with open(out, "w", encoding="utf-8") as f:
        if mode == "tiny":
            f.write("# tools/ref_bert.py tiny: build/make_bert defaults (dim 32, 2 layers, 4 heads, ffn 64, 64 positions, seed 1)\n")
            for text in TINY:
                ids = tok.encode(text).ids
                x = forward(W, cfg, ids)
                f.write(line("mean", text, ids, x.mean(0)))
                f.write(line("cls", text, ids, x[0]))
        else:
            from transformers import BertModel
            m = BertModel.from_pretrained(d, add_pooling_layer=False).double().eval()
            f.write("# tools/ref_bert.py real: all-MiniLM-L6-v2, mean pooling, L2-normalised; max 256 tokens\n")
            for text in REAL:
                ids = tok.encode(text).ids
                x = forward(W, cfg, ids)
                with torch.no_grad():
                    y = m(torch.tensor([ids])).last_hidden_state[0]
                assert (x - y).abs().max() < 1e-9, "the forward pass here and transformers' differ"
                e = x.mean(0)
                f.write(line("mean", text, ids, e / e.norm()))


if __name__ == "__main__":
    main()
