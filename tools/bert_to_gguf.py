#!/usr/bin/env python3
"""Writes a Hugging Face BERT directory (config.json, model.safetensors,
vocab.txt) as a GGUF file laid out as llama.cpp's convert_hf_to_gguf.py lays
out its `bert` architecture: the keys bert.*, the tensor names token_embd,
position_embd, token_types, token_embd_norm, blk.N.attn_{q,k,v,output},
attn_output_norm, ffn_up, ffn_down, layer_output_norm, the vocabulary in its
phantom-space form (a word-initial piece X as "\\u2581X", a "##X" piece as
"X", control tokens as they are), [CLS] as bos, [SEP] as the separator, the
pooling type from 1_Pooling/config.json. 2-D weights in f16 with --f16, as
llama.cpp's f16 output; norms and biases stay f32. For checking models/bert.h
on a real model's GGUF form when llama.cpp is not at hand.

    python3 tools/bert_to_gguf.py DIR OUT.gguf [--f16]
Needs: pip install gguf numpy safetensors
"""
import json
import os
import sys

import numpy as np
from gguf import GGUFWriter, PoolingType, TokenType
from safetensors.numpy import load_file

SPECIAL = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}


def main():
    d, out, f16 = sys.argv[1], sys.argv[2], "--f16" in sys.argv[3:]
    cfg = json.load(open(os.path.join(d, "config.json")))
    tokens = [l.rstrip("\n") for l in open(os.path.join(d, "vocab.txt"), encoding="utf-8")]
    pooling = PoolingType.MEAN
    pc = os.path.join(d, "1_Pooling", "config.json")
    if os.path.exists(pc) and json.load(open(pc)).get("pooling_mode_cls_token"):
        pooling = PoolingType.CLS
    w = GGUFWriter(out, "bert")
    w.add_name(os.path.basename(os.path.normpath(d)))
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_layer_norm_eps(cfg.get("layer_norm_eps", 1e-12))
    w.add_causal_attention(False)
    w.add_pooling_type(pooling)
    w.add_file_type(1 if f16 else 0)
    w.add_token_type_count(cfg.get("type_vocab_size", 2))
    types = [TokenType.CONTROL if t in SPECIAL else TokenType.NORMAL for t in tokens]
    phantom = [t if ty == TokenType.CONTROL else t[2:] if t.startswith("##") else "\u2581" + t for t, ty in zip(tokens, types)]
    w.add_tokenizer_model("bert")
    w.add_token_list(phantom)
    w.add_token_types(types)
    w.add_bos_token_id(tokens.index("[CLS]"))
    w.add_sep_token_id(tokens.index("[SEP]"))
    w.add_unk_token_id(tokens.index("[UNK]"))
    w.add_pad_token_id(tokens.index("[PAD]"))
    W = load_file(os.path.join(d, "model.safetensors"))
    names = {"embeddings.word_embeddings.weight": "token_embd.weight",
             "embeddings.position_embeddings.weight": "position_embd.weight",
             "embeddings.token_type_embeddings.weight": "token_types.weight",
             "embeddings.LayerNorm.weight": "token_embd_norm.weight",
             "embeddings.LayerNorm.bias": "token_embd_norm.bias"}
    per = {"attention.self.query": "attn_q", "attention.self.key": "attn_k", "attention.self.value": "attn_v",
           "attention.output.dense": "attn_output", "attention.output.LayerNorm": "attn_output_norm",
           "intermediate.dense": "ffn_up", "output.dense": "ffn_down", "output.LayerNorm": "layer_output_norm"}
    for l in range(cfg["num_hidden_layers"]):
        for hf, gg in per.items():
            for kind in ("weight", "bias"):
                names["encoder.layer.%d.%s.%s" % (l, hf, kind)] = "blk.%d.%s.%s" % (l, gg, kind)
    for hf, gg in names.items():
        t = W[hf].astype(np.float32)
        if f16 and t.ndim == 2:
            t = t.astype(np.float16)
        w.add_tensor(gg, t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
