#!/usr/bin/env python3
"""Random-weight reference models for the architectures devkit runs without a
real file in reach: Llama 3 (with its RoPE scaling), Qwen2, Qwen3 and Gemma 3.

Each model is built from transformers' own class (LlamaForCausalLM,
Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma3ForCausalLM) with random weights
from a fixed seed, written to GGUF by the small writer below (our own, from
the GGUF spec; the tensor names and keys are the ones llama.cpp uses for those
architectures), and run in float64 on fixed token ids. Output, in
tests/data/arch/ (read by tests/test_arch.c):

  NAME.gguf   the model: matrices f16, norms and biases f32 (each < 300 KB)
  hf/NAME/    the same model as a Hugging Face directory (write_hf)
  NAME.ref    reference: the logits of every position of a teacher-forced
              sequence and 16 greedy ids after its first 8 tokens (format in
              write_ref)

The weights are rounded to f16 in the torch model before the reference is
computed, so the reference and the file hold the same numbers.

Run (needs torch and transformers; the test suite does not):
    /work/venv/bin/python tools/ref_arch.py [OUTDIR]
"""
import math
import os
import struct
import sys

import numpy as np
import torch

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data", "arch")
N_SEQ = 24        # teacher-forced length
N_PROMPT = 8      # greedy: prompt length
N_GEN = 16        # greedy: generated tokens

# ---- a GGUF v3 writer ------------------------------------------------------
# Facts from the GGUF spec: little-endian; header "GGUF", u32 version, u64
# tensor count, u64 metadata count; each key a string (u64 length + bytes),
# a u32 value type and the value; each tensor info its name, u32 n_dims, the
# dims innermost first (ggml order: a [rows, cols] matrix is written
# cols, rows), u32 ggml type, u64 offset into the data section; the data
# section starts at the next multiple of general.alignment (32).
T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64 = 4, 5, 6, 7, 8, 9, 10
GGML_F32, GGML_F16 = 0, 1
ALIGN = 32


def _str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def _value(v):
    if isinstance(v, bool):
        return struct.pack("<I", T_BOOL) + struct.pack("<B", int(v))
    if isinstance(v, int):
        return struct.pack("<I", T_U32) + struct.pack("<I", v)
    if isinstance(v, float):
        return struct.pack("<I", T_F32) + struct.pack("<f", v)
    if isinstance(v, str):
        return struct.pack("<I", T_STR) + _str(v)
    raise TypeError(v)


def write_gguf(path, kv, tensors):
    """kv: dict of key -> int/float/str/bool; tensors: list of (name, np array f32/f16)."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
    for k, v in kv.items():
        head += _str(k) + _value(v)
    infos, blobs, off = b"", [], 0
    for name, a in tensors:
        a = np.ascontiguousarray(a)
        typ = {np.dtype(np.float32): GGML_F32, np.dtype(np.float16): GGML_F16}[a.dtype]
        infos += _str(name) + struct.pack("<I", a.ndim)
        for d in reversed(a.shape):
            infos += struct.pack("<Q", d)
        infos += struct.pack("<IQ", typ, off)
        b = a.astype(a.dtype.newbyteorder("<")).tobytes()
        blobs.append(b)
        off += len(b)
        off += (-off) % ALIGN
    out = head + infos
    out += b"\0" * ((-len(out)) % ALIGN)
    for b in blobs:
        out += b + b"\0" * ((-len(b)) % ALIGN)
    with open(path, "wb") as f:
        f.write(out)
    return len(out)


# ---- the reference file ------------------------------------------------------
def write_ref(path, ids, gen, logits, margin):
    """'DKARCHR1', i32 n_seq, vocab, n_prompt, n_gen; i32 ids[n_seq];
    i32 gen[n_gen]; f32 logits[n_seq][vocab]; f32 the smallest top-1/top-2
    logit gap along the greedy path (how much room the greedy check has)."""
    with open(path, "wb") as f:
        f.write(b"DKARCHR1")
        f.write(struct.pack("<4i", len(ids), logits.shape[1], N_PROMPT, len(gen)))
        f.write(np.asarray(ids, "<i4").tobytes())
        f.write(np.asarray(gen, "<i4").tobytes())
        f.write(np.asarray(logits, "<f4").tobytes())
        f.write(struct.pack("<f", margin))


# ---- models ------------------------------------------------------------------
def randomize(model, seed, norm_offset):
    """Weights large enough that logits are spread (the default init gives
    near-uniform ones, and greedy ids that a rounding flips). Matrices are
    rounded to f16, the values the file holds; norms and biases to bf16."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 1:
                if "norm" in name:
                    p.copy_(norm_offset + 0.2 * torch.randn(p.shape, generator=g))
                else:   # biases
                    p.copy_(0.5 * torch.randn(p.shape, generator=g))
                # bf16 values, which the Hugging Face directory holds (the
                # GGUF file holds them in f32, exactly)
                p.copy_(p.bfloat16().float())
            else:
                fan_in = p.shape[1]
                p.copy_((1.5 / math.sqrt(fan_in)) * torch.randn(p.shape, generator=g))
                p.copy_(p.half().float())


def run_reference(model, ids):
    model = model.double().eval()
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].numpy()
        seq, gen, margin = list(ids[:N_PROMPT]), [], float("inf")
        for _ in range(N_GEN):
            last = model(torch.tensor([seq])).logits[0, -1].numpy()
            top = np.argsort(-last)
            margin = min(margin, float(last[top[0]] - last[top[1]]))
            gen.append(int(top[0]))
            seq.append(int(top[0]))
    return logits, gen, margin


def llama_permute(w, n_head):
    """llama.cpp's converter reorders each q/k head's rows from HF's halves
    layout to adjacent pairs (so the file is rotated with the normal RoPE)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def f16(t):
    return t.detach().float().numpy().astype(np.float16)


def f32(t):
    return t.detach().float().numpy().astype(np.float32)


def common_kv(arch, cfg, head_dim, ctx):
    kv = {
        "general.architecture": arch,
        "general.name": "devkit random " + arch,
        "general.alignment": ALIGN,
        arch + ".context_length": ctx,
        arch + ".embedding_length": cfg.hidden_size,
        arch + ".block_count": cfg.num_hidden_layers,
        arch + ".feed_forward_length": cfg.intermediate_size,
        arch + ".attention.head_count": cfg.num_attention_heads,
        arch + ".attention.head_count_kv": cfg.num_key_value_heads,
        arch + ".attention.layer_norm_rms_epsilon": float(cfg.rms_norm_eps),
        arch + ".rope.dimension_count": head_dim,
    }
    return kv


def layer_tensors(model, arch, cfg, head_dim, norm_shift=0.0):
    t = []
    for i, L in enumerate(model.model.layers):
        a, m = L.self_attn, L.mlp
        wq, wk = a.q_proj.weight, a.k_proj.weight
        if arch == "llama":
            wq, wk = llama_permute(wq, cfg.num_attention_heads), llama_permute(wk, cfg.num_key_value_heads)
        p = "blk.%d." % i
        t += [(p + "attn_norm.weight", f32(L.input_layernorm.weight + norm_shift)),
              (p + "attn_q.weight", f16(wq)), (p + "attn_k.weight", f16(wk)), (p + "attn_v.weight", f16(a.v_proj.weight)),
              (p + "attn_output.weight", f16(a.o_proj.weight))]
        if a.q_proj.bias is not None:
            t += [(p + "attn_q.bias", f32(a.q_proj.bias)), (p + "attn_k.bias", f32(a.k_proj.bias)),
                  (p + "attn_v.bias", f32(a.v_proj.bias))]
        if hasattr(a, "q_norm"):
            t += [(p + "attn_q_norm.weight", f32(a.q_norm.weight + norm_shift)),
                  (p + "attn_k_norm.weight", f32(a.k_norm.weight + norm_shift))]
        if arch == "gemma3":
            t += [(p + "post_attention_norm.weight", f32(L.post_attention_layernorm.weight + norm_shift)),
                  (p + "ffn_norm.weight", f32(L.pre_feedforward_layernorm.weight + norm_shift)),
                  (p + "post_ffw_norm.weight", f32(L.post_feedforward_layernorm.weight + norm_shift))]
        else:
            t += [(p + "ffn_norm.weight", f32(L.post_attention_layernorm.weight))]
        t += [(p + "ffn_gate.weight", f16(m.gate_proj.weight)), (p + "ffn_up.weight", f16(m.up_proj.weight)),
              (p + "ffn_down.weight", f16(m.down_proj.weight))]
    return t


def head_tensors(model, cfg, norm_shift=0.0):
    t = [("token_embd.weight", f16(model.model.embed_tokens.weight)),
         ("output_norm.weight", f32(model.model.norm.weight + norm_shift))]
    if not cfg.tie_word_embeddings:
        t.append(("output.weight", f16(model.lm_head.weight)))
    return t


def build(name, seed):
    from transformers import (Gemma3ForCausalLM, Gemma3TextConfig, LlamaConfig, LlamaForCausalLM, Qwen2Config,
                              Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM)
    torch.manual_seed(seed)
    base = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=64)
    files = []   # (file name, kv, tensors)
    if name == "llama3":
        # original context 32, so Llama 3's rule changes the frequencies that
        # matter within 24 positions (with 8192 it would touch only ones whose
        # angle stays near 0 here, and the test could not fail)
        rope = {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
                "high_freq_factor": 4.0, "original_max_position_embeddings": 32}
        cfg = LlamaConfig(**base, rms_norm_eps=1e-5, tie_word_embeddings=False, rope_parameters=rope,
                          attention_bias=False, mlp_bias=False)
        model = LlamaForCausalLM(cfg)
        randomize(model, seed, 1.0)
        hd = cfg.hidden_size // cfg.num_attention_heads
        kv = common_kv("llama", cfg, hd, 64)
        kv.update({"llama.rope.freq_base": 10000.0, "llama.rope.scaling.type": "llama3", "llama.rope.scaling.factor": 8.0,
                   "llama.rope.scaling.low_freq_factor": 1.0, "llama.rope.scaling.high_freq_factor": 4.0,
                   "llama.rope.scaling.original_context_length": 32})
        t = head_tensors(model, cfg) + layer_tensors(model, "llama", cfg, hd)
        # llama.cpp's converter writes the divisor of each pair's frequency
        # as rope_freqs.weight: plain inv_freq over the scaled one (HF's own)
        plain = 1.0 / (10000.0 ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
        scaled = model.model.rotary_emb.inv_freq.double()
        freqs = (plain / scaled).float().numpy()
        assert not np.allclose(freqs, 1.0)
        files.append(("llama3.gguf", kv, t + [("rope_freqs.weight", freqs.astype(np.float32))]))
        files.append(("llama3_keys.gguf", kv, t))   # the same model from the keys alone
    elif name == "qwen2":
        cfg = Qwen2Config(**base, rms_norm_eps=1e-6, tie_word_embeddings=False,
                          rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})
        model = Qwen2ForCausalLM(cfg)
        randomize(model, seed, 1.0)
        hd = cfg.hidden_size // cfg.num_attention_heads
        kv = common_kv("qwen2", cfg, hd, 64)
        kv["qwen2.rope.freq_base"] = 1000000.0
        files.append(("qwen2.gguf", kv, head_tensors(model, cfg) + layer_tensors(model, "qwen2", cfg, hd)))
    elif name == "qwen3":
        # head size 32 with 4 heads on a 64-wide model: q is 128 wide
        cfg = Qwen3Config(**dict(base, intermediate_size=96), head_dim=32, rms_norm_eps=1e-6, tie_word_embeddings=True,
                          rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})
        model = Qwen3ForCausalLM(cfg)
        randomize(model, seed, 1.0)
        kv = common_kv("qwen3", cfg, 32, 64)
        kv.update({"qwen3.rope.freq_base": 1000000.0, "qwen3.attention.key_length": 32, "qwen3.attention.value_length": 32})
        files.append(("qwen3.gguf", kv, head_tensors(model, cfg) + layer_tensors(model, "qwen3", cfg, 32)))
    elif name == "gemma3":
        # six layers: five sliding-window (window 8, so 24 tokens cross it)
        # and a global sixth, as llama.cpp's pattern of 6 says
        cfg = Gemma3TextConfig(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=6,
                               num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=64,
                               sliding_window=8, query_pre_attn_scalar=16, rms_norm_eps=1e-6, tie_word_embeddings=True,
                               hidden_activation="gelu_pytorch_tanh", final_logit_softcapping=None,
                               attn_logit_softcapping=None,
                               rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                                                "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})
        cfg._attn_implementation = "eager"
        model = Gemma3ForCausalLM(cfg)
        assert model.config.layer_types == ["sliding_attention"] * 5 + ["full_attention"], model.config.layer_types
        # Gemma's RMSNorm multiplies by (1 + w): weights near 0; llama.cpp's
        # converter stores w + 1
        randomize(model, seed, 0.0)
        kv = common_kv("gemma3", cfg, 16, 64)
        kv.update({"gemma3.rope.freq_base": 1000000.0, "gemma3.attention.key_length": 16,
                   "gemma3.attention.value_length": 16, "gemma3.attention.sliding_window": 8})
        files.append(("gemma3.gguf", kv, head_tensors(model, cfg, 1.0) + layer_tensors(model, "gemma3", cfg, 16, 1.0)))
    else:
        raise ValueError(name)
    return model, files


def write_hf(path, name, model, cfg, shards=1):
    """The model as save_pretrained lays it out (config.json, safetensors with
    Hugging Face's names; a tied lm_head left out), matrices in f16 and
    vectors in bf16: the values the reference ran on. llama3 keeps the
    transformers 4 keys (rope_theta, rope_scaling), which most published
    configs have; the others transformers 5's rope_parameters. shards > 1:
    split, with model.safetensors.index.json."""
    import json
    from safetensors.torch import save_file
    os.makedirs(path, exist_ok=True)
    sd = {}
    for k, v in model.state_dict().items():
        if k == "lm_head.weight" and cfg.tie_word_embeddings:
            continue
        sd[k] = v.detach().to(torch.float16 if v.ndim == 2 else torch.bfloat16).contiguous()
    cfg.save_pretrained(path)
    if name == "llama3":
        with open(os.path.join(path, "config.json")) as f:
            c = json.load(f)
        rp = c.pop("rope_parameters")
        c["rope_theta"] = rp.pop("rope_theta")
        c["rope_scaling"] = rp
        with open(os.path.join(path, "config.json"), "w") as f:
            json.dump(c, f, indent=2)
    for old in os.listdir(path):
        if old.endswith(".safetensors") or old.endswith(".index.json"):
            os.remove(os.path.join(path, old))
    if shards == 1:
        save_file(sd, os.path.join(path, "model.safetensors"), metadata={"format": "pt"})
        return
    keys = sorted(sd)
    wm = {}
    for i in range(shards):
        fn = "model-%05d-of-%05d.safetensors" % (i + 1, shards)
        part = {k: sd[k] for k in keys[i::shards]}
        save_file(part, os.path.join(path, fn), metadata={"format": "pt"})
        wm.update({k: fn for k in part})
    with open(os.path.join(path, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": sum(v.numel() * v.element_size() for v in sd.values())}, "weight_map": wm},
                  f, indent=2)


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(1234)
    for seed, name in enumerate(["llama3", "qwen2", "qwen3", "gemma3"], start=7):
        model, files = build(name, seed)
        write_hf(os.path.join(OUT, "hf", name), name, model, model.config, shards=2 if name == "llama3" else 1)
        for fname, kv, tensors in files:
            n = write_gguf(os.path.join(OUT, fname), kv, tensors)
            print("%-18s %7d bytes, %d tensors" % (fname, n, len(tensors)))
        ids = [int(x) for x in rng.integers(0, 256, N_SEQ)]
        logits, gen, margin = run_reference(model, ids)
        write_ref(os.path.join(OUT, name + ".ref"), ids, gen, logits, margin)
        print("%-18s logits max |x| %.3f, greedy %s, smallest top-1/top-2 gap %.4f" %
              (name + ".ref", np.abs(logits).max(), gen, margin))
    # a file of an architecture the runner does not know: refused by name
    write_gguf(os.path.join(OUT, "unknown_arch.gguf"),
               {"general.architecture": "mamba9", "general.alignment": ALIGN, "mamba9.block_count": 1},
               [("token_embd.weight", np.zeros((4, 8), np.float16))])


if __name__ == "__main__":
    main()
