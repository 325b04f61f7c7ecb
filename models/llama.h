/* models/llama.h — the llama family of decoder-only transformers on devkit
 * devices, written only against devkit's public API, so the same code runs
 * on every backend. examples/llama.c (the command-line runner),
 * tests/test_models.c, tests/test_arch.c, bench/bench.c and
 * tools/teacher_force.c use it.
 *
 * In exactly one file:
 *     #define DEVKIT_MODELS_IMPLEMENTATION
 *     #include "models/llama.h"
 *
 * ARCHITECTURES. GGUF files whose general.architecture is
 *     llama   Llama 1-3.x, SmolLM2, TinyLlama, Mistral (llama.cpp writes
 *             them all as 'llama'); Llama 3 RoPE scaling (rope_freqs.weight,
 *             or llama.rope.scaling.type = llama3 with its factors) and
 *             linear RoPE scaling
 *     qwen2   Qwen2 / Qwen2.5: biases on q, k and v; NeoX RoPE
 *     qwen3   Qwen3: RMSNorm of each q and k head before RoPE; head size
 *             from qwen3.attention.key_length (need not be dim / heads)
 *     gemma3  Gemma 3 (text): GeGLU (tanh GELU), embedding times sqrt(dim),
 *             q/k norms, norms before and after attention and FFN, sliding-
 *             window layers (every 6th layer global) with their own RoPE base
 * and llama2.c checkpoints. Weights may be f32, f16, bf16 or any block type
 * the kit loads. A Hugging Face directory of one of these families
 * (config.json, safetensors) loads as the GGUF file models/hf.h makes of it;
 * the loader then rotates q/k in NeoX's order (Hugging Face's, for llama too)
 * and adds 1 to Gemma's norms, the two rewrites llama.cpp's converter does
 * on the bytes.
 *
 * WHY ONE FILE AND ONE BLOCK FUNCTION. These families differ from llama in
 * a handful of switches, each one or two ops in the block: biases on the
 * projections, a norm of each q/k head, norms after the attention and FFN,
 * GELU instead of SiLU, a scale after the embedding, sliding-window layers
 * with a second RoPE base. They share everything else: the GGUF tensor
 * names, the loader, per-layer placement over devices, the KV cache, the
 * fused decode projections, sampling. So one table (dk_llm_archs below: one
 * row per general.architecture, a column per switch) and one block forward
 * with an `if` per switch serve all four; a file per family would copy ~600
 * lines of loader, placement and cache code to change ~20. The config is
 * read from the GGUF keys `<arch>.*` for whatever arch the row names, so a
 * new member of the family (the keys and tensor names llama.cpp gives it) is
 * one row in that table. A family whose block is really different (an
 * encoder, a mixture of experts, a state-space model) gets its own file.
 *
 * ROPE. Plain RoPE (one base) is dk_rope. RoPE with a frequency of its own
 * per pair (Llama 3's scaling, linear scaling) is done without a new op: the
 * rotation of each position is a [D, D] matrix, built on the host once per
 * forward (in double, then f32) and applied to all heads of a token with one
 * batched dk_matmul ([T, H, D] x [T, D, D]).
 *
 * PLACEMENT. Weights go from the file's mapping straight to their device.
 * Placement is per layer: every layer has its own device, and its KV cache
 * lives there; the token embedding sits on the first layer's device, the
 * final norm and classifier on the last one's. The hidden state crosses
 * devices with dk_copy_to where consecutive layers differ, and nowhere else.
 *
 * One forward pass takes T tokens at positions pos..pos+T-1 (the prompt in
 * batches of n_batch, then one token at a time):
 *     x = embedding(ids)                       (gemma: x *= sqrt(dim))
 *     per layer: h = rmsnorm(x); q, k, v = h·Wq (+bq), h·Wk (+bk), h·Wv (+bv);
 *       (q, k = rmsnorm per head); rope(q, k);
 *       K/V cache rows [pos, pos+T) = k, v; a = attention(q, cache[0, pos+T))
 *       (sliding-window layers: keys within the window only);
 *       x += a·Wo (gemma: rmsnorm first); h = rmsnorm(x);
 *       x += swiglu(h·Wgate, h·Wup)·Wdown (gemma: geglu, then rmsnorm)
 *     logits = rmsnorm(x)·Wout   (Wout may be the embedding: tied)
 * Where a norm's output has one reader (one token with fused qkv or
 * gate+up weights, and the logits) the two are one dk_rmsnorm_linear; a
 * one-token step's SwiGLU and down projection are one dk_swiglu_linear.
 * Sampling runs on the last device (dk_argmax or dk_sample); only the chosen
 * id is downloaded.
 */
#ifndef DK_MODELS_LLAMA_H
#define DK_MODELS_LLAMA_H

#include "file.h"
#include "hf.h"
#include <stdio.h>

#define DK_LLM_MAX_DEVICES 16
/* tokens of a prompt run at once by default (dk_llm_options.n_batch) */
#define DK_LLM_BATCH 512

/* What sets one family apart from llama: one row per general.architecture.
 * A new member of the family is a row here (see the header comment). */
typedef struct {
  const char *name;        /* general.architecture, and the prefix of its keys */
  int rope_mode;           /* DK_ROPE_NORMAL (llama.cpp permutes llama's q/k rows for it) or DK_ROPE_NEOX */
  int qkv_bias;            /* blk.N.attn_{q,k,v}.bias */
  int qk_norm;             /* blk.N.attn_{q,k}_norm: RMSNorm of each q and k head before RoPE */
  int post_norms;          /* blk.N.post_attention_norm and post_ffw_norm on each block's output (Gemma) */
  int geglu;               /* gelu_tanh(gate) * up instead of silu(gate) * up */
  int embed_scale;         /* x *= sqrt(dim) after the embedding */
  int swa_pattern;         /* sliding-window layers, every n-th layer global; 0: none */
  float eps_default;       /* when <arch>.attention.layer_norm_rms_epsilon is absent */
} dk_llm_arch;

/* RoPE of one kind of layer: base theta over rope_dim, and, when inv_freq is
 * set, a frequency of its own per pair (Llama 3 and linear scaling) */
typedef struct {
  float theta;
  double *inv_freq;        /* [rope_dim / 2] or NULL: dk_rope does it */
} dk_llm_rope;

typedef struct {
  int dim, hidden, n_layers, n_heads, n_kv_heads, head_dim, vocab;
  int ctx_train;           /* the context the file declares */
  int rope_dim, rope_mode; /* DK_ROPE_NORMAL for llama GGUF and llama2.c */
  float rope_theta, eps;
  int tied;                /* the classifier is the token embedding */
  const dk_llm_arch *arch; /* the family's switches */
  float attn_scale;        /* softmax scale: <arch>.attention.scale, else 1/sqrt(head_dim) */
  int swa_window;          /* sliding-window layers see keys (p - window, p]; 0: none */
  float rope_theta_swa;    /* RoPE base of the sliding-window layers */
  char rope_scaling[16];   /* "", "linear" or "llama3", as the file says */
  float rope_factor;       /* <arch>.rope.scaling.factor */
} dk_llm_config;

typedef struct {
  dk_device dev;
  int ws;                  /* index of this device's workspace */
  dk_tensor *attn_norm, *wq, *wk, *wv, *wo, *ffn_norm, *gate, *up, *down;
  dk_tensor *bq, *bk, *bv, *bqkv;     /* qkv_bias: views of bqkv when the weights are fused */
  dk_tensor *q_norm, *k_norm;         /* qk_norm: [head_dim] */
  dk_tensor *post_attn_norm, *post_ffn_norm;  /* post_norms */
  int swa;                 /* a sliding-window layer: its window and the local RoPE */
  /* wq, wk, wv are views of wqkv, and gate, up views of wgu, when the file's
   * weights share a dtype: one token then takes one linear for q, k and v
   * and one for gate and up (fewer dispatches: what a GPU's decode pays for) */
  dk_tensor *wqkv, *wgu;
  dk_tensor *k_cache, *v_cache;   /* [rows, n_kv_heads, head_dim], on dev: n_ctx rows, or m->swa_rows */
  int kv_base;             /* the position cache row 0 holds (see KV CACHE) */
} dk_llm_layer;

/* activations for T tokens on one device */
typedef struct {
  int T;
  dk_tensor *x, *xn, *q, *k, *v, *att, *o, *g, *u, *pos;
  dk_tensor *q3, *k3, *v3, *att3;  /* [T, heads, head_dim] views */
  /* T = 1 only: the fused projections' outputs and their views */
  dk_tensor *qkv, *gu, *fq3, *fk3, *fv3, *fqk3, *fg, *fu;
  /* RoPE by rotation matrices (dk_llm_rope.inv_freq set): rot[kind] is
   * [T, D, D], kind 0 global, 1 sliding-window; qr3, kr3 the rotated q, k */
  dk_tensor *rot[2], *qr3, *kr3;
  /* T = 1 only: x2 is the next residual stream; xb, x2b are x and x2 as
   * [dim] vectors (see dk_llm_residual) */
  dk_tensor *x2, *xb, *x2b;
  /* with sliding-window layers: the cache rows of positions [pos, pos+T)
   * in their caches (see KV CACHE), for a decode step recorded once */
  dk_tensor *pos_swa;
} dk_llm_acts;

typedef struct {
  dk_device dev;
  dk_llm_acts one;            /* T = 1, kept for decoding */
} dk_llm_ws;

typedef struct {
  const char *devices;     /* "cpu:0"; "cuda:0,cuda:1" splits the layers in proportion to the
                              devices' free memory; "cpu:0=0-2,vulkan:0=3-4" gives ranges;
                              NULL: dk_device_best() */
  const int *split;        /* with several devices and no ranges: layers per device (--split 10,22) */
  int n_split;
  int allow_same_gpu;      /* allow two parts on one physical GPU seen through two backends */
  int n_ctx;               /* KV cache length; 0: the file's context length, or what of it fits in the
                              devices' free memory (models/llama.h, FITTING THE CONTEXT) */
  int n_batch;             /* a prompt runs in chunks of this many tokens; 0: DK_LLM_BATCH */
  int kv_f32;              /* keep the KV cache in f32; by default it is f16, as llama.cpp's: half
                              the memory, and decode over a long context reads half the bytes */
  int fast_logits;         /* let the classifier round its input for speed (see dk_tensor_set_precise) */
  int swa_full;            /* sliding-window layers keep every position, as the others (llama.cpp's --swa-full) */
} dk_llm_options;

typedef struct {
  dk_llm_config c;
  char name[256];          /* the file's base name */
  dk_device *layer_dev;    /* where each layer was meant to go */
  int n_ctx, pos;          /* cache length; tokens held in it */
  int n_batch;             /* a prompt's chunk (dk_llm_options.n_batch) */
  int swa_rows;            /* rows of a sliding-window layer's cache; 0: n_ctx (see KV CACHE) */
  int ctx_cut;             /* 1: the file's context did not fit (see FITTING THE CONTEXT); n_ctx is what did, */
  dk_device ctx_cut_dev;   /* on this device, */
  uint64_t ctx_cut_free;   /* which had these bytes free */
  dk_llm_layer *layers;
  dk_llm_ws ws[DK_LLM_MAX_DEVICES];
  int n_ws;
  dk_tensor *tok_embd, *out_norm, *output;   /* output == tok_embd or a copy of it when tied */
  dk_tensor *ids1, *logits1, *next;          /* decode-sized: ids [1] first device; logits [1,vocab], next [1] last */
  dk_tensor *logits_all;                     /* [T, vocab] of the last all_logits call */
  dk_llm_rope rope[2];                       /* 0: global layers, 1: sliding-window layers */
  dk_graph *step;                            /* a decode step recorded once (see DECODE GRAPH) */
  int step_off;                              /* 1: decode runs op by op */
  double load_seconds;
  uint64_t weight_bytes;
} dk_llm_model;

typedef struct {
  float temperature;       /* <= 0: greedy (argmax) */
  int top_k;               /* 0: off */
  float top_p;             /* 1: off */
  uint64_t seed;
} dk_llm_sampler;

/* Loads a llama GGUF file, a Hugging Face directory (models/hf.h) or a
 * llama2.c checkpoint (o may be NULL). */
dk_status dk_llm_load(const char *path, const dk_llm_options *o, dk_llm_model **out);
void      dk_llm_free(dk_llm_model *m);
/* Each layer's device, from o->devices, o->split and the devices' memory. */
dk_status dk_llm_place(const dk_llm_options *o, int n_layers, dk_device *layer_dev);
/* Every weight and cache of the model against the device its layer was
 * given: DK_OK, or the message of dk_check_placement naming each misplaced
 * tensor. */
dk_status dk_llm_check_placement(const dk_llm_model *m);
/* The device map: layer ranges and bytes per device, one line each. */
void dk_llm_print_device_map(const dk_llm_model *m, FILE *out);

/* Runs T tokens at positions m->pos..; advances m->pos. *logits (on the last
 * device, owned by the model until the next call) is [1, vocab] for the last
 * token, or [T, vocab] with all_logits. A prompt runs in chunks of
 * m->n_batch tokens; when one fails, m->pos counts the tokens of the chunks
 * before it, whose keys and values are in the cache. */
dk_status dk_llm_forward(dk_llm_model *m, const int32_t *ids, int T, int all_logits, dk_tensor **logits);
/* Chooses a token from row `row` of logits on the device; step varies the
 * seed (seed + step), so a run is reproducible. */
dk_status dk_llm_sample(dk_llm_model *m, const dk_tensor *logits, int row, const dk_llm_sampler *s, uint64_t step, int32_t *token);
void      dk_llm_reset(dk_llm_model *m);   /* empties the KV cache */

#endif /* DK_MODELS_LLAMA_H */

/* ======================================================================== */
#if defined(DEVKIT_MODELS_IMPLEMENTATION) && !defined(DK_MODELS_LLAMA_IMPL)
#define DK_MODELS_LLAMA_IMPL

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DK_LLM_TRY(expr) do { dk_status dk_llm_s_ = (expr); if (dk_llm_s_ != DK_OK) return dk_llm_s_; } while (0)

/* timespec_get is C11's own clock: clock_gettime would need POSIX feature
 * macros the including program may not define (the load times it measures
 * are informational). bert.h uses it too (it includes this header). */
static double dk_llm_now(void) {
  struct timespec ts;
  if (!timespec_get(&ts, TIME_UTC)) return 0;
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- configuration ---------------------------------------------------------- */

/* name, rope_mode, qkv_bias, qk_norm, post_norms, geglu, embed_scale, swa_pattern, eps */
static const dk_llm_arch dk_llm_archs[] = {
  {"llama", DK_ROPE_NORMAL, 0, 0, 0, 0, 0, 0, 1e-5f},
  {"qwen2", DK_ROPE_NEOX, 1, 0, 0, 0, 0, 0, 1e-6f},
  {"qwen3", DK_ROPE_NEOX, 0, 1, 0, 0, 0, 0, 1e-6f},
  {"gemma3", DK_ROPE_NEOX, 0, 1, 1, 1, 1, 6, 1e-6f},
};

/* "'llama', 'qwen2', 'qwen3' and 'gemma3'", for messages, into buf */
static const char *dk_llm_arch_list(char *buf, size_t cap) {
  size_t i, n = sizeof dk_llm_archs / sizeof dk_llm_archs[0], at = 0;
  buf[0] = 0;
  for (i = 0; i < n && at < cap; i++)
    at += (size_t)snprintf(buf + at, cap - at, "%s'%s'", i == 0 ? "" : i + 1 == n ? " and " : ", ", dk_llm_archs[i].name);
  return buf;
}

static dk_status dk_llm_meta_int(const dk_file *f, const char *key, int required, int64_t def, int *out) {
  int64_t v = def;
  dk_meta m;
  if (dk_file_meta_find(f, key, &m)) {
    if (dk_meta_int(&m, &v) != DK_OK)
      return dk_set_error(DK_ERR_FORMAT, "%s: metadata '%s' is a %s; an integer was expected", dk_file_name(f), key,
                      dk_meta_type_name(m.type));
  } else if (required) {
    return dk_set_error(DK_ERR_FORMAT, "%s: metadata '%s' is missing", dk_file_name(f), key);
  }
  if (v < 0 || v > (1 << 30)) return dk_set_error(DK_ERR_FORMAT, "%s: metadata '%s' is %lld", dk_file_name(f), key, (long long)v);
  *out = (int)v;
  return DK_OK;
}

static dk_status dk_llm_meta_float(const dk_file *f, const char *key, double def, float *out) {
  double v = def;
  dk_meta m;
  if (dk_file_meta_find(f, key, &m) && dk_meta_float(&m, &v) != DK_OK)
    return dk_set_error(DK_ERR_FORMAT, "%s: metadata '%s' is a %s; a number was expected", dk_file_name(f), key,
                    dk_meta_type_name(m.type));
  *out = (float)v;
  return DK_OK;
}

static dk_status dk_llm_read_config(const dk_file *f, dk_llm_config *c) {
  dk_status s;
  char names[128];
  memset(c, 0, sizeof *c);
  c->rope_mode = DK_ROPE_NORMAL;   /* llama GGUF and llama2.c rotate adjacent pairs */
  if (dk_file_format_of(f) == DK_FILE_LLAMA2C) {
    int64_t h[7];
    static const char *k[7] = {"llama2c.dim", "llama2c.hidden_dim", "llama2c.n_layers", "llama2c.n_heads",
                               "llama2c.n_kv_heads", "llama2c.vocab_size", "llama2c.seq_len"};
    int i;
    for (i = 0; i < 7; i++)
      if (dk_file_meta_int(f, k[i], &h[i]) != DK_OK) return DK_ERR_FORMAT;
    c->dim = (int)h[0]; c->hidden = (int)h[1]; c->n_layers = (int)h[2]; c->n_heads = (int)h[3];
    c->n_kv_heads = (int)h[4]; c->vocab = (int)(h[5] < 0 ? -h[5] : h[5]); c->ctx_train = (int)h[6];
    c->tied = h[5] > 0;
    c->arch = &dk_llm_archs[0];
    c->rope_theta = 10000.0f;   /* run.c's constants */
    c->eps = 1e-5f;
    c->head_dim = c->dim / c->n_heads;
    c->rope_dim = c->head_dim;
    c->attn_scale = 1.0f / sqrtf((float)c->head_dim);
    c->rope_theta_swa = c->rope_theta;
    c->rope_factor = 1.0f;
    return DK_OK;
  }
  if (dk_file_has_gguf_keys(f)) {
    const char *arch;
    size_t alen, i;
    dk_meta m;
    int64_t ti;
    char k[128];
    const char *a;
    if (dk_file_meta_string(f, "general.architecture", &arch, &alen) != DK_OK) return DK_ERR_FORMAT;
    for (i = 0; i < sizeof dk_llm_archs / sizeof dk_llm_archs[0]; i++)
      if (strlen(dk_llm_archs[i].name) == alen && !memcmp(arch, dk_llm_archs[i].name, alen)) c->arch = &dk_llm_archs[i];
    if (!c->arch)
      return dk_set_error(DK_ERR_UNSUPPORTED, "%s: architecture '%.*s' is not one this runner knows (it runs %s GGUF files "
                      "and llama2.c checkpoints)", dk_file_name(f), (int)(alen > 40 ? 40 : alen), arch,
                      dk_llm_arch_list(names, sizeof names));
    a = c->arch->name;
    c->rope_mode = c->arch->rope_mode;
    /* Hugging Face's q and k rows are in the order NeoX rotates (the two
     * halves of a head) in every family: llama.cpp permutes llama's for
     * adjacent pairs when it converts, a view does not (models/hf.h) */
    if (dk_file_format_of(f) == DK_FILE_HF) c->rope_mode = DK_ROPE_NEOX;
#define DK_LLM_K(suffix) (snprintf(k, sizeof k, "%s." suffix, a), k)
    if ((s = dk_llm_meta_int(f, DK_LLM_K("embedding_length"), 1, 0, &c->dim)) ||
        (s = dk_llm_meta_int(f, DK_LLM_K("feed_forward_length"), 1, 0, &c->hidden)) ||
        (s = dk_llm_meta_int(f, DK_LLM_K("block_count"), 1, 0, &c->n_layers)) ||
        (s = dk_llm_meta_int(f, DK_LLM_K("attention.head_count"), 1, 0, &c->n_heads)) ||
        (s = dk_llm_meta_int(f, DK_LLM_K("attention.head_count_kv"), 0, c->n_heads, &c->n_kv_heads)) ||
        (s = dk_llm_meta_int(f, DK_LLM_K("context_length"), 0, 2048, &c->ctx_train)) ||
        (s = dk_llm_meta_float(f, DK_LLM_K("rope.freq_base"), 10000.0, &c->rope_theta)) ||
        (s = dk_llm_meta_float(f, DK_LLM_K("rope.freq_base_swa"), 10000.0, &c->rope_theta_swa)) ||
        (s = dk_llm_meta_float(f, DK_LLM_K("attention.layer_norm_rms_epsilon"), c->arch->eps_default, &c->eps)))
      return s;
    if (c->n_heads <= 0 || (!dk_file_meta_find(f, DK_LLM_K("attention.key_length"), &m) && c->dim % c->n_heads))
      return dk_set_error(DK_ERR_FORMAT, "%s: embedding_length %d is not a multiple of head_count %d", dk_file_name(f), c->dim,
                      c->n_heads);
    /* the head size: key_length where the file gives it (Qwen3, Gemma 3), else dim / heads */
    if ((s = dk_llm_meta_int(f, DK_LLM_K("attention.key_length"), 0, c->dim / c->n_heads, &c->head_dim))) return s;
    {
      int vlen;
      if ((s = dk_llm_meta_int(f, DK_LLM_K("attention.value_length"), 0, c->head_dim, &vlen))) return s;
      if (vlen != c->head_dim)
        return dk_set_error(DK_ERR_UNSUPPORTED, "%s: %s.attention.value_length %d differs from key_length %d; this runner "
                        "takes one head size", dk_file_name(f), a, vlen, c->head_dim);
    }
    if ((s = dk_llm_meta_int(f, DK_LLM_K("rope.dimension_count"), 0, c->head_dim, &c->rope_dim))) return s;
    c->attn_scale = 1.0f / sqrtf((float)c->head_dim);
    if ((s = dk_llm_meta_float(f, DK_LLM_K("attention.scale"), c->attn_scale, &c->attn_scale))) return s;
    if (c->arch->swa_pattern && (s = dk_llm_meta_int(f, DK_LLM_K("attention.sliding_window"), 0, 0, &c->swa_window)))
      return s;
    c->rope_factor = 1.0f;
    if (dk_file_meta_find(f, DK_LLM_K("rope.scaling.type"), &m)) {
      const char *st;
      size_t sl;
      if (dk_meta_string(&m, &st, &sl) != DK_OK) return dk_set_error(DK_ERR_FORMAT, "%s: %s is not a string", dk_file_name(f), k);
      if (!(sl == 4 && !memcmp(st, "none", 4)) && !(sl == 6 && !memcmp(st, "linear", 6)) && !(sl == 6 && !memcmp(st, "llama3", 6)))
        return dk_set_error(DK_ERR_UNSUPPORTED, "%s: RoPE scaling '%.*s' (%s) is not supported (none, linear and llama3 are)",
                        dk_file_name(f), (int)(sl > 20 ? 20 : sl), st, k);
      if (!(sl == 4 && !memcmp(st, "none", 4))) snprintf(c->rope_scaling, sizeof c->rope_scaling, "%.*s", (int)sl, st);
      if ((s = dk_llm_meta_float(f, DK_LLM_K("rope.scaling.factor"), 1.0, &c->rope_factor))) return s;
      if (!(c->rope_factor > 0))
        return dk_set_error(DK_ERR_FORMAT, "%s: %s.rope.scaling.factor %g is out of range", dk_file_name(f), a, (double)c->rope_factor);
    }
#undef DK_LLM_K
    ti = dk_file_tensor_find(f, "token_embd.weight");
    if (ti >= 0) {
      dk_file_tensor t;
      dk_file_tensor_at(f, ti, &t);
      c->vocab = t.ndim == 2 ? (int)t.shape[0] : 0;
    }
    c->tied = dk_file_tensor_find(f, "output.weight") < 0;
    return DK_OK;
  }
  return dk_set_error(DK_ERR_UNSUPPORTED, "%s: a %s file; this runner runs %s GGUF files and llama2.c checkpoints",
                  dk_file_name(f), dk_file_format_name(dk_file_format_of(f)), dk_llm_arch_list(names, sizeof names));
}

static dk_status dk_llm_check_config(const char *name, const dk_llm_config *c) {
  if (c->dim <= 0 || c->hidden <= 0 || c->n_layers <= 0 || c->n_heads <= 0 || c->n_kv_heads <= 0 || c->vocab <= 0)
    return dk_set_error(DK_ERR_FORMAT, "%s: dim %d, hidden %d, layers %d, heads %d, kv heads %d, vocab %d: all must be > 0", name,
                    c->dim, c->hidden, c->n_layers, c->n_heads, c->n_kv_heads, c->vocab);
  if (c->n_heads % c->n_kv_heads || c->head_dim <= 0 || c->head_dim > 4096)
    return dk_set_error(DK_ERR_FORMAT, "%s: heads %d, kv heads %d, head size %d do not fit together", name, c->n_heads,
                    c->n_kv_heads, c->head_dim);
  if (c->swa_window < 0 || !(c->rope_theta_swa > 0) || !(c->attn_scale > 0))
    return dk_set_error(DK_ERR_FORMAT, "%s: sliding window %d, local rope theta %g, attention scale %g are out of range", name,
                    c->swa_window, (double)c->rope_theta_swa, (double)c->attn_scale);
  if (c->rope_dim <= 0 || c->rope_dim % 2 || c->rope_dim > c->head_dim)
    return dk_set_error(DK_ERR_FORMAT, "%s: rope dimension %d must be even and at most the head size %d", name, c->rope_dim,
                    c->head_dim);
  if (!(c->rope_theta > 0) || !(c->eps >= 0))
    return dk_set_error(DK_ERR_FORMAT, "%s: rope theta %g and eps %g are out of range", name, (double)c->rope_theta, (double)c->eps);
  return DK_OK;
}

/* The per-pair RoPE frequencies of the global layers when they are not
 * plain theta^(-2i/d): the file's rope_freqs.weight (what llama.cpp's
 * converter writes for Llama 3: the divisor of each pair's frequency),
 * else Llama 3's formula from the rope.scaling keys, else linear scaling. */
static dk_status dk_llm_rope_setup(const dk_file *f, dk_llm_model *m) {
  const dk_llm_config *c = &m->c;
  int n = c->rope_dim / 2, i, llama3 = !strcmp(c->rope_scaling, "llama3"), linear = !strcmp(c->rope_scaling, "linear");
  int64_t ti = dk_file_has_gguf_keys(f) ? dk_file_tensor_find(f, "rope_freqs.weight") : -1;
  const float *ff = NULL;
  double *inv;
  m->rope[0].theta = c->rope_theta;
  m->rope[1].theta = c->arch->swa_pattern ? c->rope_theta_swa : c->rope_theta;
  if (ti >= 0) {
    dk_file_tensor t;
    dk_file_tensor_at(f, ti, &t);
    if (!t.supported || t.dtype != DK_F32 || t.ndim != 1 || t.shape[0] != n)
      return dk_set_error(DK_ERR_FORMAT, "%s: rope_freqs.weight is %s with %lld values; f32 [%d] (rope dimension / 2) was "
                      "expected", dk_file_name(f), t.type_name, (long long)t.shape[0], n);
    ff = (const float *)dk_file_tensor_data(f, ti);
    if (!ff) return dk_set_error(DK_ERR_IO, "%s: rope_freqs.weight cannot be read", dk_file_name(f));
  } else if (!llama3 && !(linear && c->rope_factor != 1.0f)) {
    return DK_OK;   /* plain RoPE: dk_rope */
  }
  inv = (double *)malloc(sizeof *inv * (size_t)n);
  if (!inv) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no host memory");
  m->rope[0].inv_freq = inv;
  {
    float lo = 1.0f, hi = 4.0f;
    int orig = 8192;
    dk_status s;
    char k[128];
    if (llama3 && !ff) {
      snprintf(k, sizeof k, "%s.rope.scaling.low_freq_factor", c->arch->name);
      if ((s = dk_llm_meta_float(f, k, 1.0, &lo))) return s;
      snprintf(k, sizeof k, "%s.rope.scaling.high_freq_factor", c->arch->name);
      if ((s = dk_llm_meta_float(f, k, 4.0, &hi))) return s;
      snprintf(k, sizeof k, "%s.rope.scaling.original_context_length", c->arch->name);
      if ((s = dk_llm_meta_int(f, k, 0, 8192, &orig))) return s;
      if (!(hi > lo) || orig <= 0)
        return dk_set_error(DK_ERR_FORMAT, "%s: llama3 RoPE scaling with low_freq_factor %g, high_freq_factor %g, original "
                        "context %d", dk_file_name(f), (double)lo, (double)hi, orig);
    }
    for (i = 0; i < n; i++) {
      double fr = pow((double)c->rope_theta, -2.0 * i / c->rope_dim);
      if (ff) {
        if (!(ff[i] > 0)) return dk_set_error(DK_ERR_FORMAT, "%s: rope_freqs.weight[%d] is %g", dk_file_name(f), i, (double)ff[i]);
        fr /= ff[i];
      } else if (llama3) {
        /* Meta's rule: short wavelengths kept, long ones divided by the
         * factor, a smooth blend between the two bounds */
        double wavelen = 2.0 * 3.14159265358979323846 / fr, lo_wl = orig / lo, hi_wl = orig / hi;
        if (wavelen > lo_wl) fr /= c->rope_factor;
        else if (wavelen >= hi_wl) {
          double sm = (orig / wavelen - lo) / (hi - lo);
          fr = (1.0 - sm) * fr / c->rope_factor + sm * fr;
        }
      } else {
        fr /= c->rope_factor;
      }
      inv[i] = fr;
    }
  }
  return DK_OK;
}

/* The rotation of each of T positions as a [D, D] matrix M (row i: input
 * dim i), so that x[t] (H x D) · M[t] is the rotated heads; dims past
 * rope_dim pass through. */
static dk_status dk_llm_rot_fill(const dk_llm_config *c, const dk_llm_rope *r, int pos, int T, dk_tensor *rot) {
  int D = c->head_dim, n = c->rope_dim / 2, t, i;
  size_t per = (size_t)D * D;
  float *M = (float *)calloc(per * (size_t)T, sizeof *M);
  dk_status s;
  if (!M) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no host memory for %d RoPE matrices", T);
  for (t = 0; t < T; t++) {
    float *A = M + per * (size_t)t;
    for (i = n * 2; i < D; i++) A[(size_t)i * D + i] = 1.0f;
    for (i = 0; i < n; i++) {
      double ang = (double)(pos + t) * r->inv_freq[i];
      float cs = (float)cos(ang), sn = (float)sin(ang);
      int a = c->rope_mode == DK_ROPE_NEOX ? i : 2 * i, b = c->rope_mode == DK_ROPE_NEOX ? i + n : 2 * i + 1;
      /* out_a = x_a cos - x_b sin, out_b = x_a sin + x_b cos */
      A[(size_t)a * D + a] = cs; A[(size_t)b * D + a] = -sn;
      A[(size_t)a * D + b] = sn; A[(size_t)b * D + b] = cs;
    }
  }
  s = dk_tensor_upload(rot, M, per * (size_t)T * sizeof *M);
  free(M);
  return s;
}

/* ---- placement -------------------------------------------------------------- */

/* Layers in proportion to weights w[i] (free memory), at least one each,
 * by largest remainder. */
static void dk_llm_proportional(int n_layers, int n, const double *w, int *count) {
  double total = 0, rem[DK_LLM_MAX_DEVICES];
  int i, given = 0;
  for (i = 0; i < n; i++) total += w[i] > 0 ? w[i] : 0;
  for (i = 0; i < n; i++) {
    double share = total > 0 ? (w[i] > 0 ? w[i] : 0) / total * (n_layers - n) : (double)(n_layers - n) / n;
    count[i] = 1 + (int)share;
    rem[i] = share - (int)share;
    given += count[i];
  }
  while (given < n_layers) {
    int best = 0;
    for (i = 1; i < n; i++) if (rem[i] >= rem[best]) best = i;   /* ties: later devices, as an even split */
    count[best]++;
    rem[best] = -1;
    given++;
  }
}

dk_status dk_llm_place(const dk_llm_options *o, int n_layers, dk_device *layer_dev) {
  char item[128];
  const char *text = o ? o->devices : NULL, *p = text;
  dk_device devs[DK_LLM_MAX_DEVICES];
  int first[DK_LLM_MAX_DEVICES], last[DK_LLM_MAX_DEVICES], n = 0, ranged = 0, i, j, l;
  if (text && !*text)   /* -d '' is a mistake, not a request for the default */
    return dk_set_error(DK_ERR_INVALID, "devices '': no device named; write cpu:0, vulkan:0, cuda:0, ... or leave the "
                    "option out for the default (DEVKIT_DEVICE or the best device)");
  if (!text) {
    dk_device d;
    if (dk_device_best(&d) != DK_OK) return DK_ERR_NO_DEVICE;
    for (l = 0; l < n_layers; l++) layer_dev[l] = d;
    return DK_OK;
  }
  while (*p) {
    size_t k = 0;
    char *eq;
    while (*p && *p != ',' && k + 1 < sizeof item) item[k++] = *p++;
    item[k] = 0;
    if (*p == ',') p++;
    if (n == DK_LLM_MAX_DEVICES) return dk_set_error(DK_ERR_INVALID, "devices '%s': at most %d parts", text, DK_LLM_MAX_DEVICES);
    first[n] = last[n] = -1;
    eq = strchr(item, '=');
    if (eq) {
      *eq = 0;
      if (sscanf(eq + 1, "%d-%d", &first[n], &last[n]) != 2 && sscanf(eq + 1, "%d", &first[n]) == 1) last[n] = first[n];
      if (first[n] < 0 || last[n] < first[n] || last[n] >= n_layers)
        return dk_set_error(DK_ERR_INVALID, "devices '%s': '%s' is not a layer range within 0-%d (write DEVICE=FIRST-LAST)", text,
                        eq + 1, n_layers - 1);
      ranged++;
    }
    {
      dk_status s = dk_device_parse(item, &devs[n]);
      if (s != DK_OK) return s;
    }
    for (j = 0; j < n; j++)
      if (dk_device_equal(devs[j], devs[n]) && !ranged)
        return dk_set_error(DK_ERR_INVALID, "devices '%s': %s is named twice", text, dk_device_name(devs[n]));
    n++;
  }
  if (n == 0) return dk_set_error(DK_ERR_INVALID, "devices '%s': no device named", text);
  if (ranged && ranged != n)
    return dk_set_error(DK_ERR_INVALID, "devices '%s': give every part a layer range, or none (a split by memory)", text);
  if (ranged && o->n_split)
    return dk_set_error(DK_ERR_INVALID, "devices '%s' has layer ranges; --split is for a list of devices without them", text);
  /* one physical GPU seen through two backends (cuda:0 and vulkan:0 of the
   * same card): a split over it only doubles the memory it needs */
  for (i = 0; i < n; i++)
    for (j = i + 1; j < n; j++) {
      dk_device_props a, b;
      if (devs[i].backend == devs[j].backend || o->allow_same_gpu) continue;
      if (dk_device_properties(devs[i], &a) || dk_device_properties(devs[j], &b)) continue;
      if (a.has_uuid && b.has_uuid && !memcmp(a.uuid, b.uuid, 16))
        return dk_set_error(DK_ERR_INVALID,
                        "devices '%s': %s and %s are one physical GPU (%s) seen through two backends; a split over them "
                        "gains nothing. Name one of them, or pass --allow-same-gpu",
                        text, dk_device_name(devs[i]), dk_device_name(devs[j]), a.name);
    }
  if (!ranged) {
    int count[DK_LLM_MAX_DEVICES], total = 0;
    if (n > n_layers) return dk_set_error(DK_ERR_INVALID, "devices '%s': %d devices for %d layers", text, n, n_layers);
    if (o->n_split) {
      if (o->n_split != n)
        return dk_set_error(DK_ERR_INVALID, "--split gives %d counts for %d devices", o->n_split, n);
      for (i = 0; i < n; i++) {
        if (o->split[i] < 1) return dk_set_error(DK_ERR_INVALID, "--split: every device takes at least one layer");
        count[i] = o->split[i];
        total += count[i];
      }
      if (total != n_layers)
        return dk_set_error(DK_ERR_INVALID, "--split counts add up to %d; the model has %d layers", total, n_layers);
    } else {
      double w[DK_LLM_MAX_DEVICES];
      for (i = 0; i < n; i++) {
        dk_device_props pr;
        /* logical devices of one physical device report its free memory
         * each; share it among them */
        w[i] = dk_device_properties(devs[i], &pr) == DK_OK ? (double)pr.memory_free / (pr.logical_count > 0 ? pr.logical_count : 1) : 1.0;
      }
      dk_llm_proportional(n_layers, n, w, count);
    }
    for (i = 0, l = 0; i < n; i++) {
      first[i] = l;
      last[i] = l + count[i] - 1;
      l += count[i];
    }
  }
  for (l = 0; l < n_layers; l++) layer_dev[l].index = -1;
  for (i = 0; i < n; i++)
    for (l = first[i]; l <= last[i]; l++) {
      if (layer_dev[l].index >= 0) return dk_set_error(DK_ERR_INVALID, "devices '%s': layer %d is placed twice", text, l);
      layer_dev[l] = devs[i];
    }
  for (l = 0; l < n_layers; l++)
    if (layer_dev[l].index < 0) return dk_set_error(DK_ERR_INVALID, "devices '%s': layer %d is on no device", text, l);
  return DK_OK;
}

/* llama.cpp's rule: with a pattern of n, layer l is global when (l + 1) % n == 0 */
static int dk_llm_layer_swa(const dk_llm_config *c, int l) {
  return c->arch->swa_pattern > 0 && c->swa_window > 0 && (l + 1) % c->arch->swa_pattern != 0;
}

/* ---- KV CACHE -------------------------------------------------------------------
 * Row r of a layer's cache holds position L->kv_base + r. A global layer's
 * cache has n_ctx rows and kv_base stays 0. A sliding-window layer (Gemma
 * 3: 5 of 6, window W) needs only the last W positions, so, as llama.cpp's
 * SWA cache, it holds m->swa_rows = 2W + n_batch rows when that is fewer:
 * before a chunk at pos would write past its end, the W - 1 positions the
 * chunk's first query still sees move to the front and kv_base becomes
 * the first of them. Chunks of at most n_batch tokens then leave more than
 * W rows between where those positions were and the front, so the copy
 * never overlaps itself, and it comes once every W + n_batch tokens or so.
 * Gemma 3 270M at its 32768 positions: 15 of 18 layers hold 1536 rows,
 * 118.5 MiB of f16 cache in all instead of 576. dk_llm_options.swa_full keeps
 * n_ctx rows everywhere. */
static int dk_llm_swa_rows(const dk_llm_config *c, int n_ctx, int n_batch, int full) {
  int64_t r = 2 * (int64_t)c->swa_window + n_batch;
  return !full && c->swa_window > 0 && r < n_ctx ? (int)r : 0;
}

/* room in L's cache for T positions from pos */
static dk_status dk_llm_kv_room(dk_llm_layer *L, int pos, int T, int W) {
  int64_t rows = dk_tensor_dim(L->k_cache, 0);
  int keep = pos + 1 > W ? pos + 1 - W : 0, n = pos - keep, i;
  dk_status s = DK_OK;
  if (pos + T - L->kv_base <= rows) return DK_OK;
  if (keep < L->kv_base || (int64_t)T + n > rows || keep - L->kv_base < n)
    return dk_set_error(DK_ERR_INVALID, "the cache of %s holds %lld rows from position %d: no room for %d at %d",
                        dk_tensor_name(L->k_cache), (long long)rows, L->kv_base, T, pos);
  for (i = 0; i < 2 && s == DK_OK && n > 0; i++) {
    dk_tensor *c = i ? L->v_cache : L->k_cache, *from = NULL, *to = NULL;
    if ((s = dk_narrow(c, 0, keep - L->kv_base, n, &from)) == DK_OK && (s = dk_narrow(c, 0, 0, n, &to)) == DK_OK)
      s = dk_copy(to, from);
    dk_tensor_free(from);
    dk_tensor_free(to);
  }
  if (s == DK_OK) L->kv_base = keep;
  return s;
}

/* ---- FITTING THE CONTEXT ---------------------------------------------------
 * n_ctx 0 asks for the file's context, and files give 32K-128K positions:
 * Llama 3.1 8B's cache at 131072 positions takes 16 GiB in f16, three times
 * its Q4_K_M weights. So, as llama.cpp's fit step does, the loader checks,
 * before it allocates anything, that the weights, a prompt chunk's
 * activations, a margin and the cache fit in the memory free on each
 * device; where they do not, the context is cut to the positions that fit,
 * in steps of 256, and m->ctx_cut names the device that set it (the runner
 * says so). A context given (n_ctx > 0) is taken as asked; if its cache
 * does not fit, the load fails with its size and the fix. */
#define DK_LLM_FIT_STEP 256
/* kept free beyond the estimate, for the backends' own buffers (staging,
 * scratch, graphs, a GEMM library's workspace): lavapipe's free memory fell
 * 40-57 MB more than the tensors it held after loading SmolLM2 and Gemma 3 */
#define DK_LLM_FIT_MARGIN(free_bytes) (((uint64_t)128 << 20) + (free_bytes) / 64)

/* bytes of a prompt chunk's activations per token (dk_llm_acts_new) */
static uint64_t dk_llm_act_bytes(const dk_llm_model *m) {
  const dk_llm_config *c = &m->c;
  uint64_t qd = (uint64_t)c->n_heads * c->head_dim, kvd = (uint64_t)c->n_kv_heads * c->head_dim, n;
  n = 3 * (uint64_t)c->dim + 2 * qd + 2 * kvd + 2 * (uint64_t)c->hidden + 1;
  if (m->rope[0].inv_freq || m->rope[1].inv_freq) n += qd + kvd;
  n += (uint64_t)((m->rope[0].inv_freq != NULL) + (m->rope[1].inv_freq != NULL)) * c->head_dim * c->head_dim;
  return 4 * n;
}

static void dk_llm_fit_ctx(const dk_file *f, dk_llm_model *m, const dk_device *ldev, size_t kv_elem, int swa_full) {
  const dk_llm_config *c = &m->c;
  const uint64_t row = 2 * (uint64_t)c->n_kv_heads * c->head_dim * kv_elem;   /* a position's k and v */
  const int swa_rows = dk_llm_swa_rows(c, c->ctx_train, m->n_batch, swa_full);
  dk_device dev[DK_LLM_MAX_DEVICES];
  uint64_t w[DK_LLM_MAX_DEVICES], nl[DK_LLM_MAX_DEVICES], embd = 0;
  int nd = 0, i, j, l, slot[2], has_output = dk_file_tensor_find(f, "output.weight") >= 0, limit = -1;
  int64_t k, n = c->ctx_train;
  dk_device_props pr[DK_LLM_MAX_DEVICES];
  int *of = (int *)malloc(sizeof *of * (size_t)c->n_layers);
  if (!of) return;   /* no fit: the allocations below will say what ran out */
  for (l = 0; l < c->n_layers; l++) {
    for (i = 0; i < nd && !dk_device_equal(dev[i], ldev[l]); i++) {}
    if (i == nd) { if (nd == DK_LLM_MAX_DEVICES) { free(of); return; } dev[nd] = ldev[l]; w[nd] = nl[nd] = 0; nd++; }
    of[l] = i;
    /* a layer's cache: a row per position, or (a window's) a fixed size */
    if (swa_rows && dk_llm_layer_swa(c, l)) w[i] += (uint64_t)swa_rows * row;
    else nl[i]++;
  }
  slot[0] = of[0];
  slot[1] = of[c->n_layers - 1];
  /* the file's bytes where the loader will put them */
  for (k = 0; k < dk_file_tensor_count(f); k++) {
    dk_file_tensor t;
    const char *nm;
    if (dk_file_tensor_at(f, k, &t) != DK_OK) continue;
    nm = t.name;
    if (!strncmp(nm, "blk.", 4)) {
      l = atoi(nm + 4);
      if (l >= 0 && l < c->n_layers) w[of[l]] += t.nbytes;
    } else if (!strcmp(nm, "output.weight") || !strcmp(nm, "output_norm.weight")) {
      w[slot[1]] += t.nbytes;
    } else {
      w[slot[0]] += t.nbytes;
      if (!strcmp(nm, "token_embd.weight")) embd = t.nbytes;
    }
  }
  if (!has_output && slot[0] != slot[1]) w[slot[1]] += embd;   /* a tied classifier's copy */
  free(of);
  for (i = 0; i < nd; i++)
    if (dk_device_properties(dev[i], &pr[i]) != DK_OK) return;
  /* devices that share one physical device share its free memory */
  for (i = 0; i < nd; i++) {
    uint64_t need = DK_LLM_FIT_MARGIN(pr[i].memory_free) + (uint64_t)(m->n_batch < n ? m->n_batch : n) * dk_llm_act_bytes(m);
    uint64_t per = 0, fit;
    int first = 1;
    for (j = 0; j < nd; j++) {
      if (dev[j].backend != dev[i].backend || pr[j].physical_index != pr[i].physical_index) continue;
      if (j < i) { first = 0; break; }
      need += w[j] + (j == slot[1] ? (uint64_t)c->vocab * 4 : 0);
      per += nl[j] * row;
    }
    if (!first) continue;
    fit = pr[i].memory_free > need ? per ? (pr[i].memory_free - need) / per : (uint64_t)n : 0;
    if ((uint64_t)n > fit) {
      n = (int64_t)fit;
      limit = i;
    }
  }
  if (limit < 0) return;
  n = n / DK_LLM_FIT_STEP * DK_LLM_FIT_STEP;
  /* too little for even that: the allocations will say what ran out */
  if (n < DK_LLM_FIT_STEP) n = DK_LLM_FIT_STEP;
  if (n >= c->ctx_train) return;
  m->n_ctx = (int)n;
  m->ctx_cut = 1;
  m->ctx_cut_dev = dev[limit];
  m->ctx_cut_free = pr[limit].memory_free;
}

/* ---- loading ----------------------------------------------------------------- */

/* a weight of the file on d, checked against the shape the config implies */
/* the file's tensor `name` is what the model's dimensions need: [d0] or [d0, d1] of a type the runner takes */
static dk_status dk_llm_weight_ok(const dk_file *f, const char *name, int ndim, int64_t d0, int64_t d1, uint64_t *bytes) {
  int64_t i = dk_file_tensor_find(f, name);
  dk_file_tensor t;
  if (i < 0) return dk_set_error(DK_ERR_FORMAT, "%s: the model has no tensor '%s'", dk_file_name(f), name);
  dk_file_tensor_at(f, i, &t);
  if (t.ndim != ndim || t.shape[0] != d0 || (ndim == 2 && t.shape[1] != d1)) {
    if (ndim == 2)
      return dk_set_error(DK_ERR_FORMAT, "%s: tensor '%s' is %dD [%lld%s%lld]; the model's dimensions need [%lld,%lld]",
                      dk_file_name(f), name, t.ndim, (long long)t.shape[0], t.ndim > 1 ? "," : "",
                      t.ndim > 1 ? (long long)t.shape[1] : 0LL, (long long)d0, (long long)d1);
    return dk_set_error(DK_ERR_FORMAT, "%s: tensor '%s' must be [%lld]", dk_file_name(f), name, (long long)d0);
  }
  if (!t.supported || (ndim == 1 && !dk_dtype_is_float(t.dtype)) || t.dtype == DK_I32)
    return dk_set_error(DK_ERR_UNSUPPORTED, "%s: tensor '%s' is %s, which this runner does not take there", dk_file_name(f), name,
                    t.type_name);
  *bytes += t.nbytes;
  return DK_OK;
}

/* A norm's or bias's vector of a Hugging Face directory, in f32 (what the
 * GGUF converter writes, and what the norm and bias ops take from any
 * file), plus 1 for Gemma's norms: Hugging Face's Gemma scales by (1 + w),
 * llama.cpp's converter stores 1 + w. */
static dk_status dk_llm_hf_vector(const dk_file *f, const char *name, dk_device d, dk_tensor **out) {
  int64_t i = dk_file_tensor_find(f, name), k;
  dk_file_tensor t;
  const unsigned char *p = (const unsigned char *)dk_file_tensor_data(f, i);
  const char *arch;
  size_t alen;
  char site[300];
  float *v;
  dk_status s;
  int plus1 = strstr(name, "norm") && dk_file_meta_string(f, "general.architecture", &arch, &alen) == DK_OK && alen == 6 &&
              !memcmp(arch, "gemma3", 6);
  dk_file_tensor_at(f, i, &t);
  if (!p || (t.dtype != DK_F32 && t.dtype != DK_F16 && t.dtype != DK_BF16))
    return dk_set_error(DK_ERR_UNSUPPORTED, "%s: tensor '%s' is %s; a vector of f32, f16 or bf16 was expected", dk_file_name(f),
                        name, t.type_name);
  /* the values, then an aligned copy of the bytes behind them (safetensors
   * data need not be aligned) */
  if (!(v = (float *)malloc(2 * sizeof *v * (size_t)t.shape[0]))) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no host memory");
  memcpy(v + t.shape[0], p, (size_t)t.nbytes);
  dk_dequantize(t.dtype, v + t.shape[0], t.shape[0], v);
  for (k = 0; plus1 && k < t.shape[0]; k++) v[k] += 1.0f;
  dk_file__site(f, i, site, sizeof site);
  s = dk_tensor_new_at(d, DK_F32, 1, t.shape, name, site, out);
  if (!s && (s = dk_tensor_upload(*out, v, sizeof *v * (size_t)t.shape[0]))) { dk_tensor_free(*out); *out = NULL; }
  free(v);
  return s;
}

static dk_status dk_llm_weight(const dk_file *f, const char *name, dk_device d, int ndim, int64_t d0, int64_t d1,
                            dk_tensor **out, uint64_t *bytes) {
  dk_status s = dk_llm_weight_ok(f, name, ndim, d0, d1, bytes);
  if (s) return s;
  if (ndim == 1 && dk_file_format_of(f) == DK_FILE_HF) return dk_llm_hf_vector(f, name, d, out);
  return dk_file_load_tensor(f, name, d, out);
}

/* the file's tensor `name` into dst, a contiguous view of its dtype and size */
static dk_status dk_llm_load_into(const dk_file *f, const char *name, dk_tensor *dst) {
  int64_t i = dk_file__loadable(f, name);
  return i < 0 ? dk_last_status() : dk_file__load_bytes(f, i, dst);
}

static void dk_llm_acts_free(dk_llm_acts *a) {
  dk_tensor **all[30];
  int i;
  all[0] = &a->x; all[1] = &a->xn; all[2] = &a->q; all[3] = &a->k; all[4] = &a->v; all[5] = &a->att; all[6] = &a->o;
  all[7] = &a->g; all[8] = &a->u; all[9] = &a->pos; all[10] = &a->q3; all[11] = &a->k3; all[12] = &a->v3; all[13] = &a->att3;
  all[14] = &a->qkv; all[15] = &a->gu; all[16] = &a->fq3; all[17] = &a->fk3; all[18] = &a->fv3; all[19] = &a->fqk3;
  all[20] = &a->fg; all[21] = &a->fu; all[22] = &a->rot[0]; all[23] = &a->rot[1]; all[24] = &a->qr3; all[25] = &a->kr3;
  all[26] = &a->x2; all[27] = &a->xb; all[28] = &a->x2b; all[29] = &a->pos_swa;
  for (i = 0; i < 30; i++) { dk_tensor_free(*all[i]); *all[i] = NULL; }
  a->T = 0;
}

/* a [1, heads*head_dim] slice of a fused [1, N] row, as [1, heads, head_dim] */
static dk_status dk_llm_slice3(dk_tensor *row, int64_t start, int64_t heads, int64_t head_dim, dk_tensor **out) {
  dk_tensor *n = NULL;
  int64_t sh[3];
  dk_status s;
  sh[0] = 1; sh[1] = heads; sh[2] = head_dim;
  if ((s = dk_narrow(row, 1, start, heads * head_dim, &n)) == DK_OK) s = dk_reshape(n, 3, sh, out);
  dk_tensor_free(n);
  return s;
}

static dk_status dk_llm_acts_new(const dk_llm_model *m, dk_device d, int T, dk_llm_acts *a) {
  const dk_llm_config *c = &m->c;
  int64_t sx[2], sq[2], skv[2], sh[2], s3q[3], s3kv[3], sp[1];
  dk_status s;
  memset(a, 0, sizeof *a);
  sx[0] = T; sx[1] = c->dim;
  sq[0] = T; sq[1] = (int64_t)c->n_heads * c->head_dim;
  skv[0] = T; skv[1] = (int64_t)c->n_kv_heads * c->head_dim;
  sh[0] = T; sh[1] = c->hidden;
  s3q[0] = T; s3q[1] = c->n_heads; s3q[2] = c->head_dim;
  s3kv[0] = T; s3kv[1] = c->n_kv_heads; s3kv[2] = c->head_dim;
  sp[0] = T;
  a->T = T;
  if ((s = dk_tensor_new(d, DK_F32, 2, sx, "x", &a->x)) || (s = dk_tensor_new(d, DK_F32, 2, sx, "x_norm", &a->xn)) ||
      (s = dk_tensor_new(d, DK_F32, 2, sq, "q", &a->q)) || (s = dk_tensor_new(d, DK_F32, 2, skv, "k", &a->k)) ||
      (s = dk_tensor_new(d, DK_F32, 2, skv, "v", &a->v)) || (s = dk_tensor_new(d, DK_F32, 2, sq, "attn", &a->att)) ||
      (s = dk_tensor_new(d, DK_F32, 2, sx, "proj", &a->o)) || (s = dk_tensor_new(d, DK_F32, 2, sh, "ffn_gate", &a->g)) ||
      (s = dk_tensor_new(d, DK_F32, 2, sh, "ffn_up", &a->u)) || (s = dk_tensor_new(d, DK_I32, 1, sp, "positions", &a->pos)) ||
      (s = dk_reshape(a->q, 3, s3q, &a->q3)) || (s = dk_reshape(a->k, 3, s3kv, &a->k3)) ||
      (s = dk_reshape(a->v, 3, s3kv, &a->v3)) || (s = dk_reshape(a->att, 3, s3q, &a->att3)) ||
      (c->swa_window > 0 && (s = dk_tensor_new(d, DK_I32, 1, sp, "cache_rows_swa", &a->pos_swa)))) {
    dk_llm_acts_free(a);
    return s;
  }
  if (m->rope[0].inv_freq || m->rope[1].inv_freq) {
    int64_t sr[3];
    int k;
    sr[0] = T; sr[1] = sr[2] = c->head_dim;
    if ((s = dk_tensor_new(d, DK_F32, 3, s3q, "q_rotated", &a->qr3)) || (s = dk_tensor_new(d, DK_F32, 3, s3kv, "k_rotated", &a->kr3))) {
      dk_llm_acts_free(a);
      return s;
    }
    for (k = 0; k < 2; k++)
      if (m->rope[k].inv_freq && (s = dk_tensor_new(d, DK_F32, 3, sr, k ? "rope_rot_local" : "rope_rot", &a->rot[k]))) {
        dk_llm_acts_free(a);
        return s;
      }
  }
  if (T == 1) {
    /* one row: narrowing it along dim 1 keeps every slice contiguous */
    int64_t nq = (int64_t)c->n_heads * c->head_dim, nkv = (int64_t)c->n_kv_heads * c->head_dim, sqkv[2], sgu[2], sd[1];
    sqkv[0] = 1; sqkv[1] = nq + 2 * nkv;
    sgu[0] = 1; sgu[1] = 2 * (int64_t)c->hidden;
    sd[0] = c->dim;
    if ((s = dk_tensor_new(d, DK_F32, 2, sqkv, "qkv", &a->qkv)) || (s = dk_tensor_new(d, DK_F32, 2, sgu, "ffn_gate_up", &a->gu)) ||
        (s = dk_tensor_new(d, DK_F32, 2, sx, "x_next", &a->x2)) || (s = dk_reshape(a->x, 1, sd, &a->xb)) ||
        (s = dk_reshape(a->x2, 1, sd, &a->x2b)) ||
        (s = dk_llm_slice3(a->qkv, 0, c->n_heads, c->head_dim, &a->fq3)) ||
        (s = dk_llm_slice3(a->qkv, nq, c->n_kv_heads, c->head_dim, &a->fk3)) ||
        (s = dk_llm_slice3(a->qkv, nq + nkv, c->n_kv_heads, c->head_dim, &a->fv3)) ||
        (s = dk_llm_slice3(a->qkv, 0, c->n_heads + c->n_kv_heads, c->head_dim, &a->fqk3)) ||
        (s = dk_narrow(a->gu, 1, 0, c->hidden, &a->fg)) || (s = dk_narrow(a->gu, 1, c->hidden, c->hidden, &a->fu))) {
      dk_llm_acts_free(a);
      return s;
    }
  }
  return DK_OK;
}

void dk_llm_free(dk_llm_model *m) {
  int l, i;
  if (!m) return;
  if (m->layers)
    for (l = 0; l < m->c.n_layers; l++) {
      dk_llm_layer *L = &m->layers[l];
      dk_tensor_free(L->attn_norm); dk_tensor_free(L->wq); dk_tensor_free(L->wk); dk_tensor_free(L->wv);
      dk_tensor_free(L->wo); dk_tensor_free(L->ffn_norm); dk_tensor_free(L->gate); dk_tensor_free(L->up);
      dk_tensor_free(L->down); dk_tensor_free(L->k_cache); dk_tensor_free(L->v_cache);
      dk_tensor_free(L->wqkv); dk_tensor_free(L->wgu);
      dk_tensor_free(L->bq); dk_tensor_free(L->bk); dk_tensor_free(L->bv); dk_tensor_free(L->bqkv);
      dk_tensor_free(L->q_norm); dk_tensor_free(L->k_norm); dk_tensor_free(L->post_attn_norm); dk_tensor_free(L->post_ffn_norm);
    }
  dk_graph_free(m->step);
  free(m->layers);
  free(m->layer_dev);
  for (i = 0; i < m->n_ws; i++) dk_llm_acts_free(&m->ws[i].one);
  if (m->output != m->tok_embd) dk_tensor_free(m->output);
  dk_tensor_free(m->tok_embd);
  dk_tensor_free(m->out_norm);
  dk_tensor_free(m->ids1);
  dk_tensor_free(m->logits1);
  dk_tensor_free(m->next);
  dk_tensor_free(m->logits_all);
  free(m->rope[0].inv_freq);
  free(m->rope[1].inv_freq);
  free(m);
}

/* Weights of one [rows_i, K] family (q, k, v; gate, up) loaded into one
 * fused [sum rows, K] tensor when the file stores them in one dtype, each
 * then a view of its rows, named and sited as in the file. Otherwise each
 * is loaded on its own and *fused stays NULL. */
static dk_status dk_llm_fused(const dk_file *f, int l, int n, const char *const *kinds, const int64_t *rows, int64_t K,
                           dk_device d, dk_tensor **fused, dk_tensor ***outs, uint64_t *bytes) {
  char nm[96], site[400];
  dk_file_tensor info;
  int64_t total = 0, at = 0, idx;
  dk_dtype dt = DK_F32;
  int i, same = 1;
  dk_status s;
  *fused = NULL;
  for (i = 0; i < n; i++) {
    snprintf(nm, sizeof nm, "blk.%d.%s.weight", l, kinds[i]);
    idx = dk_file_tensor_find(f, nm);
    if (idx < 0 || dk_file_tensor_at(f, idx, &info) != DK_OK || !info.supported) { same = 0; break; }
    if (i == 0) dt = info.dtype;
    same &= info.dtype == dt;
    total += rows[i];
  }
  if (!same) {
    /* dk_llm_weight reports what is wrong with each, or loads it */
    for (i = 0; i < n; i++) {
      snprintf(nm, sizeof nm, "blk.%d.%s.weight", l, kinds[i]);
      if ((s = dk_llm_weight(f, nm, d, 2, rows[i], K, outs[i], bytes))) return s;
    }
    return DK_OK;
  }
  {
    int64_t sh[2];
    char fname[96];
    sh[0] = total; sh[1] = K;
    snprintf(fname, sizeof fname, "blk.%d.%s+%s", l, kinds[0], kinds[n - 1]);
    if ((s = dk_tensor_new(d, dt, 2, sh, fname, fused))) return s;
  }
  for (i = 0; i < n; i++) {
    /* each part straight from the file into its rows (a load and a copy
     * through a temporary tensor was a fifth of loading a 100M f16 model) */
    snprintf(nm, sizeof nm, "blk.%d.%s.weight", l, kinds[i]);
    if ((s = dk_llm_weight_ok(f, nm, 2, rows[i], K, bytes)) || (s = dk_narrow(*fused, 0, at, rows[i], outs[i])) ||
        (s = dk_llm_load_into(f, nm, *outs[i])))
      return s;
    dk_tensor_set_name(*outs[i], nm);
    dk_file__site(f, dk_file_tensor_find(f, nm), site, sizeof site);
    dk_tensor_set_site(*outs[i], site);
    at += rows[i];
  }
  return DK_OK;
}

/* q, k and v biases; one [nq + 2 nkv] tensor with three views when the
 * weights are fused, so the fused linear adds all three at once */
static dk_status dk_llm_qkv_bias(const dk_file *f, int l, const dk_llm_config *c, dk_llm_layer *L, uint64_t *bytes) {
  static const char *const kinds[3] = {"attn_q", "attn_k", "attn_v"};
  dk_tensor **outs[3];
  int64_t rows[3], at = 0, total;
  char nm[96];
  int i;
  dk_status s;
  rows[0] = (int64_t)c->n_heads * c->head_dim; rows[1] = rows[2] = (int64_t)c->n_kv_heads * c->head_dim;
  total = rows[0] + rows[1] + rows[2];
  outs[0] = &L->bq; outs[1] = &L->bk; outs[2] = &L->bv;
  if (L->wqkv) {
    snprintf(nm, sizeof nm, "blk.%d.attn_qkv.bias", l);
    if ((s = dk_tensor_new(L->dev, DK_F32, 1, &total, nm, &L->bqkv))) return s;
  }
  for (i = 0; i < 3; i++) {
    dk_tensor *tmp = NULL;
    snprintf(nm, sizeof nm, "blk.%d.%s.bias", l, kinds[i]);
    if ((s = dk_llm_weight(f, nm, L->dev, 1, rows[i], 0, L->bqkv ? &tmp : outs[i], bytes))) return s;
    if (!L->bqkv) continue;
    if ((s = dk_narrow(L->bqkv, 0, at, rows[i], outs[i])) == DK_OK) s = dk_copy(*outs[i], tmp);
    dk_tensor_free(tmp);
    if (s) return s;
    dk_tensor_set_name(*outs[i], nm);
    at += rows[i];
  }
  return DK_OK;
}

static int dk_llm_ws_of(dk_llm_model *m, dk_device d) {
  int i;
  for (i = 0; i < m->n_ws; i++)
    if (dk_device_equal(m->ws[i].dev, d)) return i;
  m->ws[m->n_ws].dev = d;
  return m->n_ws++;
}

static dk_status dk_llm_load_file(const dk_file *f, const dk_llm_options *o, dk_llm_model *m) {
  dk_llm_config *c = &m->c;
  dk_device *ldev;
  int l, kvd;
  dk_status s;
  const dk_dtype kv_dt = o && o->kv_f32 ? DK_F32 : DK_F16;
  uint64_t *wb = &m->weight_bytes;
  dk_device first, last;
  if ((s = dk_llm_read_config(f, c)) || (s = dk_llm_check_config(dk_file_name(f), c)) || (s = dk_llm_rope_setup(f, m)))
    return s;
  m->n_ctx = o && o->n_ctx > 0 ? o->n_ctx : c->ctx_train;
  m->n_batch = o && o->n_batch > 0 ? o->n_batch : DK_LLM_BATCH;
  if (m->n_ctx <= 0 || m->n_ctx > (1 << 24)) return dk_set_error(DK_ERR_INVALID, "a context of %d tokens is out of range", m->n_ctx);
  kvd = c->n_kv_heads * c->head_dim;
  ldev = (dk_device *)calloc((size_t)c->n_layers, sizeof *ldev);
  m->layers = (dk_llm_layer *)calloc((size_t)c->n_layers, sizeof *m->layers);
  m->layer_dev = ldev;   /* owned by the model from here on: dk_llm_free frees it */
  if (!ldev || !m->layers) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no host memory for %d layers", c->n_layers);
  if ((s = dk_llm_place(o, c->n_layers, ldev))) return s;
  if (!(o && o->n_ctx > 0)) dk_llm_fit_ctx(f, m, ldev, dk_dtype_block_bytes(kv_dt), o && o->swa_full);
  m->swa_rows = dk_llm_swa_rows(c, m->n_ctx, m->n_batch, o && o->swa_full);
  for (l = 0; l < c->n_layers; l++) {
    dk_llm_layer *L = &m->layers[l];
    char nm[96];
    int64_t kv_shape[3];
    L->dev = ldev[l];
    L->ws = dk_llm_ws_of(m, ldev[l]);
#define DK_LLM_W(field, kind, nd, a, b)                                                    \
    snprintf(nm, sizeof nm, "blk.%d." kind ".weight", l);                                \
    if ((s = dk_llm_weight(f, nm, L->dev, nd, a, b, &L->field, wb))) return s;
    DK_LLM_W(attn_norm, "attn_norm", 1, c->dim, 0)
    {
      static const char *const qkv[3] = {"attn_q", "attn_k", "attn_v"}, *const gu[2] = {"ffn_gate", "ffn_up"};
      int64_t qkv_rows[3], gu_rows[2];
      dk_tensor **qkv_out[3], **gu_out[2];
      qkv_rows[0] = (int64_t)c->n_heads * c->head_dim; qkv_rows[1] = qkv_rows[2] = kvd;
      gu_rows[0] = gu_rows[1] = c->hidden;
      qkv_out[0] = &L->wq; qkv_out[1] = &L->wk; qkv_out[2] = &L->wv;
      gu_out[0] = &L->gate; gu_out[1] = &L->up;
      if ((s = dk_llm_fused(f, l, 3, qkv, qkv_rows, c->dim, L->dev, &L->wqkv, qkv_out, wb)) ||
          (s = dk_llm_fused(f, l, 2, gu, gu_rows, c->dim, L->dev, &L->wgu, gu_out, wb)))
        return s;
    }
    DK_LLM_W(wo, "attn_output", 2, c->dim, (int64_t)c->n_heads * c->head_dim)
    DK_LLM_W(ffn_norm, "ffn_norm", 1, c->dim, 0)
    DK_LLM_W(down, "ffn_down", 2, c->dim, c->hidden)
    if (c->arch->qk_norm) {
      DK_LLM_W(q_norm, "attn_q_norm", 1, c->head_dim, 0)
      DK_LLM_W(k_norm, "attn_k_norm", 1, c->head_dim, 0)
    }
    if (c->arch->post_norms) {
      DK_LLM_W(post_attn_norm, "post_attention_norm", 1, c->dim, 0)
      DK_LLM_W(post_ffn_norm, "post_ffw_norm", 1, c->dim, 0)
    }
#undef DK_LLM_W
    if (c->arch->qkv_bias && (s = dk_llm_qkv_bias(f, l, c, L, wb))) return s;
    L->swa = dk_llm_layer_swa(c, l);
    kv_shape[0] = L->swa && m->swa_rows ? m->swa_rows : m->n_ctx; kv_shape[1] = c->n_kv_heads; kv_shape[2] = c->head_dim;
    snprintf(nm, sizeof nm, "blk.%d.k_cache", l);
    if (!(s = dk_tensor_new(L->dev, kv_dt, 3, kv_shape, nm, &L->k_cache))) {
      snprintf(nm, sizeof nm, "blk.%d.v_cache", l);
      s = dk_tensor_new(L->dev, kv_dt, 3, kv_shape, nm, &L->v_cache);
    }
    /* the context is the usual culprit (a file's own is often 32K-128K
     * positions): say so, and what one layer's cache costs */
    if (s == DK_ERR_OUT_OF_MEMORY) {
      char was[1024];
      double mib = 2.0 * m->n_ctx * kvd * (double)dk_dtype_block_bytes(kv_dt) / 1048576.0;
      snprintf(was, sizeof was, "%.1000s", dk_last_error());
      return dk_set_error(s, "%s; the KV cache of a context of %d positions takes %.1f MiB a layer in %s on %s: load "
                          "with a shorter context (dk_llm_options.n_ctx, llama -c)", was, m->n_ctx, mib,
                          dk_dtype_name(kv_dt), dk_device_name(L->dev));
    }
    if (s) return s;
  }
  first = ldev[0];
  last = ldev[c->n_layers - 1];
  if ((s = dk_llm_weight(f, "token_embd.weight", first, 2, c->vocab, c->dim, &m->tok_embd, wb))) return s;
  if ((s = dk_llm_weight(f, "output_norm.weight", last, 1, c->dim, 0, &m->out_norm, wb))) return s;
  if (!c->tied) {
    if ((s = dk_llm_weight(f, "output.weight", last, 2, c->vocab, c->dim, &m->output, wb))) return s;
  } else if (dk_device_equal(first, last)) {
    m->output = m->tok_embd;
  } else {
    /* tied, but the classifier's device is another: it gets its own copy */
    if ((s = dk_llm_weight(f, "token_embd.weight", last, 2, c->vocab, c->dim, &m->output, wb))) return s;
  }
  /* the classifier picks the token: its products keep precise activations
   * (a q8-rounded input moves SmolLM2's logits by up to a quarter and flips
   * near-ties against an f32 reference; the CPU carries them as two q8
   * levels, at most 1.6x the cost of one). o->fast_logits keeps one level. */
  dk_tensor_set_precise(m->output, !(o && o->fast_logits));
  {
    int64_t one = 1, lg[2];
    int i;
    lg[0] = 1; lg[1] = c->vocab;
    for (i = 0; i < m->n_ws; i++)
      if ((s = dk_llm_acts_new(m, m->ws[i].dev, 1, &m->ws[i].one))) return s;
    if ((s = dk_tensor_new(first, DK_I32, 1, &one, "token_ids", &m->ids1)) ||
        (s = dk_tensor_new(last, DK_F32, 2, lg, "logits", &m->logits1)) ||
        (s = dk_tensor_new(last, DK_I32, 1, &one, "next_token", &m->next)))
      return s;
  }
  return DK_OK;
}

dk_status dk_llm_load(const char *path, const dk_llm_options *o, dk_llm_model **out) {
  dk_file *f;
  dk_llm_model *m;
  dk_status s;
  const char *b;
  double t0 = dk_llm_now();
  *out = NULL;
  if ((s = dk_hf_is_dir(path) ? dk_hf_open_weights(path, &f) : dk_file_open(path, &f)) != DK_OK) return s;
  m = (dk_llm_model *)calloc(1, sizeof *m);
  if (!m) { dk_file_close(f); return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no host memory for the model"); }
  b = strrchr(path, '/');
  snprintf(m->name, sizeof m->name, "%s", dk_file_format_of(f) == DK_FILE_HF ? dk_file_name(f) : b ? b + 1 : path);
  s = dk_llm_load_file(f, o, m);
  dk_file_close(f);
  if (s != DK_OK) { dk_llm_free(m); return s; }
  /* weights are uploaded; wait for the devices so the load time is honest */
  {
    int i;
    for (i = 0; i < m->n_ws; i++)
      if ((s = dk_sync(m->ws[i].dev)) != DK_OK) { dk_llm_free(m); return s; }
  }
  m->load_seconds = dk_llm_now() - t0;
  *out = m;
  return DK_OK;
}

void dk_llm_reset(dk_llm_model *m) {
  int l;
  m->pos = 0;
  for (l = 0; l < m->c.n_layers; l++) m->layers[l].kv_base = 0;
}

/* ---- placement check and device map --------------------------------------- */

/* every tensor of the model with the device it belongs on; returns the count */
static int dk_llm_placements(const dk_llm_model *m, dk_placement *p, int max) {
  int l, n = 0;
#define DK_LLM_P(t, d) do { if ((t) && n < max) { p[n].tensor = (t); p[n].expected = (d); n++; } } while (0)
  for (l = 0; l < m->c.n_layers; l++) {
    const dk_llm_layer *L = &m->layers[l];
    dk_device d = m->layer_dev[l];
    DK_LLM_P(L->attn_norm, d); DK_LLM_P(L->wq, d); DK_LLM_P(L->wk, d); DK_LLM_P(L->wv, d); DK_LLM_P(L->wo, d);
    DK_LLM_P(L->ffn_norm, d); DK_LLM_P(L->gate, d); DK_LLM_P(L->up, d); DK_LLM_P(L->down, d);
    DK_LLM_P(L->k_cache, d); DK_LLM_P(L->v_cache, d);
    DK_LLM_P(L->bq, d); DK_LLM_P(L->bk, d); DK_LLM_P(L->bv, d); DK_LLM_P(L->q_norm, d); DK_LLM_P(L->k_norm, d);
    DK_LLM_P(L->post_attn_norm, d); DK_LLM_P(L->post_ffn_norm, d);
  }
  DK_LLM_P(m->tok_embd, m->layer_dev[0]);
  DK_LLM_P(m->out_norm, m->layer_dev[m->c.n_layers - 1]);
  if (m->output != m->tok_embd) DK_LLM_P(m->output, m->layer_dev[m->c.n_layers - 1]);
#undef DK_LLM_P
  return n;
}

dk_status dk_llm_check_placement(const dk_llm_model *m) {
  int n = m->c.n_layers * 18 + 3;
  dk_placement *p = (dk_placement *)malloc(sizeof *p * (size_t)n);
  dk_status s;
  if (!p) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no host memory");
  n = dk_llm_placements(m, p, n);
  s = dk_check_placement(p, n, NULL, NULL);
  free(p);
  return s;
}

void dk_llm_print_device_map(const dk_llm_model *m, FILE *out) {
  int n = m->c.n_layers * 18 + 3, i, k, l;
  dk_placement *p = (dk_placement *)malloc(sizeof *p * (size_t)n);
  if (!p) return;
  n = dk_llm_placements(m, p, n);
  fprintf(out, "device map:\n");
  for (i = 0; i < m->n_ws; i++) {
    dk_device d = m->ws[i].dev;
    double wb = 0, kb = 0;
    int runs = 0;
    for (k = 0; k < n; k++) {
      if (!dk_device_equal(dk_tensor_device(p[k].tensor), d)) continue;
      if (strstr(dk_tensor_name(p[k].tensor), "_cache")) kb += (double)dk_tensor_nbytes(p[k].tensor);
      else wb += (double)dk_tensor_nbytes(p[k].tensor);
    }
    fprintf(out, "  %-10s layers ", dk_device_name(d));
    for (l = 0; l < m->c.n_layers; l++) {
      int b = l;
      if (!dk_device_equal(m->layer_dev[l], d)) continue;
      while (l + 1 < m->c.n_layers && dk_device_equal(m->layer_dev[l + 1], d)) l++;
      fprintf(out, "%s%d-%d", runs++ ? "," : "", b, l);
    }
    fprintf(out, "  weights %.2f MiB, kv cache %.2f MiB\n", wb / 1048576.0, kb / 1048576.0);
  }
  free(p);
}

/* ---- the forward pass ------------------------------------------------------- */

/* attention of T queries at positions pos.. over the cache; a sliding-
 * window layer sees only keys (p - window, p] from position p: one
 * dk_attention_window over the keys from the first query's window on (one
 * query: its window is all of them) */
static dk_status dk_llm_attend(const dk_llm_config *c, dk_llm_layer *L, dk_llm_acts *a, dk_tensor *q3, int pos) {
  int T = a->T, W = L->swa ? c->swa_window : 0, start = W && pos + 1 > W ? pos + 1 - W : 0;
  dk_tensor *k = NULL, *v = NULL;
  dk_status s;
  if ((s = dk_narrow(L->k_cache, 0, start - L->kv_base, pos + T - start, &k)) == DK_OK &&
      (s = dk_narrow(L->v_cache, 0, start - L->kv_base, pos + T - start, &v)) == DK_OK)
    s = W && T > 1 && pos + T > W
            ? dk_attention_window(a->att3, q3, k, v, c->attn_scale, pos - start, W)
            : dk_attention(a->att3, q3, k, v, c->attn_scale, pos - start);   /* no query reaches past its window */
  dk_tensor_free(k); dk_tensor_free(v);
  return s;
}

/* x += w·in, or x += rmsnorm(w·in) with a post-norm (Gemma 3). Without one,
 * a one-token step does it in one linear: x goes in as the bias and the sum
 * lands in x2, which then becomes x: an add and its dispatch fewer, twice a
 * layer (the bias is added to the finished dot product, so the result is
 * the add's, bit for bit). With up, in and up are a SwiGLU's gate and up:
 * in that one linear (dk_swiglu_linear), else into a->g first */
static dk_status dk_llm_residual(const dk_llm_config *c, dk_llm_acts *a, const dk_tensor *in, const dk_tensor *up,
                                 const dk_tensor *w, const dk_tensor *post_norm) {
  dk_tensor *t;
  dk_status s;
  if (post_norm || !a->x2) {
    if (up) {
      if ((s = dk_swiglu(a->g, in, up))) return s;
      in = a->g;
    }
    if ((s = dk_linear(a->o, in, w, NULL))) return s;
    if (post_norm && (s = dk_rmsnorm(a->o, a->o, post_norm, c->eps))) return s;
    return dk_add(a->x, a->x, a->o);
  }
  if ((s = up ? dk_swiglu_linear(a->x2, in, up, w, a->xb) : dk_linear(a->x2, in, w, a->xb))) return s;
  t = a->x; a->x = a->x2; a->x2 = t;
  t = a->xb; a->xb = a->x2b; a->x2b = t;
  return DK_OK;
}

/* dev_pos: the position is read from a->pos on the device (a decode step
 * recorded once): the cache row is written with dk_index_copy, and the
 * attention covers the whole cache up to it (dk_attention_pos) */
static dk_status dk_llm_layer_forward(dk_llm_model *m, dk_llm_layer *L, dk_llm_acts *a, int pos, int dev_pos) {
  const dk_llm_config *c = &m->c;
  const dk_llm_arch *ar = c->arch;
  const dk_llm_rope *rp = &m->rope[L->swa];
  int T = a->T;
  dk_tensor *kslot = NULL, *vslot = NULL;
  dk_status s;
  dk_tensor *q3 = a->q3, *k3 = a->k3, *v3 = a->v3;
  int fused = T == 1 && L->wqkv;
  if (fused) {
    /* one token: q, k and v (and their biases) from one linear, the norm
     * inside it (its one reader) */
    DK_LLM_TRY(dk_rmsnorm_linear(a->qkv, a->x, L->attn_norm, L->wqkv, L->bqkv, c->eps));
    q3 = a->fq3; k3 = a->fk3; v3 = a->fv3;
  } else {
    DK_LLM_TRY(dk_rmsnorm(a->xn, a->x, L->attn_norm, c->eps));
    DK_LLM_TRY(dk_linear(a->q, a->xn, L->wq, L->bq));
    DK_LLM_TRY(dk_linear(a->k, a->xn, L->wk, L->bk));
    DK_LLM_TRY(dk_linear(a->v, a->xn, L->wv, L->bv));
  }
  if (ar->qk_norm) {
    /* rmsnorm over the last axis of [T, H, D]: each head on its own */
    DK_LLM_TRY(dk_rmsnorm(q3, q3, L->q_norm, c->eps));
    DK_LLM_TRY(dk_rmsnorm(k3, k3, L->k_norm, c->eps));
  }
  if (rp->inv_freq) {
    /* a frequency per pair: this forward's rotation matrices (see ROPE) */
    DK_LLM_TRY(dk_matmul(a->qr3, q3, a->rot[L->swa]));
    DK_LLM_TRY(dk_matmul(a->kr3, k3, a->rot[L->swa]));
    q3 = a->qr3; k3 = a->kr3;
  } else if (fused) {
    /* q's and k's heads sit side by side in the fused row: one rope */
    DK_LLM_TRY(dk_rope(a->fqk3, a->fqk3, a->pos, c->rope_dim, rp->theta, c->rope_mode));
  } else {
    DK_LLM_TRY(dk_rope(q3, q3, a->pos, c->rope_dim, rp->theta, c->rope_mode));
    DK_LLM_TRY(dk_rope(k3, k3, a->pos, c->rope_dim, rp->theta, c->rope_mode));
  }
  /* the new keys and values go into rows [pos, pos+T) of the cache */
  if (dev_pos) {
    /* a window layer's rows are its positions less kv_base, its keys the last W */
    const dk_tensor *rows = L->swa ? a->pos_swa : a->pos;
    DK_LLM_TRY(dk_index_copy(L->k_cache, k3, rows, 0));
    DK_LLM_TRY(dk_index_copy(L->v_cache, v3, rows, 0));
    if (L->swa) DK_LLM_TRY(dk_attention_pos_window(a->att3, q3, L->k_cache, L->v_cache, rows, c->attn_scale, c->swa_window));
    else DK_LLM_TRY(dk_attention_pos(a->att3, q3, L->k_cache, L->v_cache, a->pos, c->attn_scale));
  } else {
    if ((s = dk_narrow(L->k_cache, 0, pos - L->kv_base, T, &kslot)) == DK_OK &&
        (s = dk_narrow(L->v_cache, 0, pos - L->kv_base, T, &vslot)) == DK_OK &&
        (s = dk_copy(kslot, k3)) == DK_OK)
      s = dk_copy(vslot, v3);
    dk_tensor_free(kslot); dk_tensor_free(vslot);
    if (s != DK_OK) return s;
    DK_LLM_TRY(dk_llm_attend(c, L, a, q3, pos));
  }
  DK_LLM_TRY(dk_llm_residual(c, a, a->att, NULL, L->wo, ar->post_norms ? L->post_attn_norm : NULL));
  {
    dk_tensor *g = a->g, *u = a->u;
    if (T == 1 && L->wgu) {
      DK_LLM_TRY(dk_rmsnorm_linear(a->gu, a->x, L->ffn_norm, L->wgu, NULL, c->eps));
      g = a->fg; u = a->fu;
    } else {
      DK_LLM_TRY(dk_rmsnorm(a->xn, a->x, L->ffn_norm, c->eps));
      DK_LLM_TRY(dk_linear(a->g, a->xn, L->gate, NULL));
      DK_LLM_TRY(dk_linear(a->u, a->xn, L->up, NULL));
    }
    if (ar->geglu) {
      DK_LLM_TRY(dk_gelu_tanh(a->g, g));
      DK_LLM_TRY(dk_mul(a->g, a->g, u));
      DK_LLM_TRY(dk_llm_residual(c, a, a->g, NULL, L->down, ar->post_norms ? L->post_ffn_norm : NULL));
    } else {
      DK_LLM_TRY(dk_llm_residual(c, a, g, u, L->down, ar->post_norms ? L->post_ffn_norm : NULL));
    }
  }
  return DK_OK;
}

/* The forward pass from the ids on the device to the logits lg: the
 * embedding, the layers (crossing devices where they change), the last
 * norm and the classifier (of the last token only unless all_logits). */
static dk_status dk_llm_run(dk_llm_model *m, dk_llm_acts **acts, dk_tensor *ids_t, int T, dk_tensor *lg, int all_logits,
                            int dev_pos) {
  const dk_llm_config *c = &m->c;
  dk_tensor *xl = NULL;
  dk_status s;
  int l, cur = m->layers[0].ws;
  DK_LLM_TRY(dk_embedding(acts[cur]->x, m->tok_embd, ids_t));
  if (c->arch->embed_scale) DK_LLM_TRY(dk_scale(acts[cur]->x, acts[cur]->x, sqrtf((float)c->dim)));
  for (l = 0; l < c->n_layers; l++) {
    dk_llm_layer *L = &m->layers[l];
    if (L->ws != cur) {
      /* the hidden state moves to the next layer's device: the one crossing */
      DK_LLM_TRY(dk_copy_to(acts[L->ws]->x, acts[cur]->x));
      cur = L->ws;
    }
    DK_LLM_TRY(dk_llm_layer_forward(m, L, acts[cur], m->pos, dev_pos));
  }
  if (!lg) return DK_OK;   /* a prompt's chunk before the last */
  if (all_logits || T == 1) return dk_rmsnorm_linear(lg, acts[cur]->x, m->out_norm, m->output, NULL, c->eps);
  /* only the last token's logits are needed */
  if ((s = dk_narrow(acts[cur]->x, 0, T - 1, 1, &xl)) == DK_OK)
    s = dk_rmsnorm_linear(lg, xl, m->out_norm, m->output, NULL, c->eps);
  dk_tensor_free(xl);
  return s;
}

/* ---- DECODE GRAPH -------------------------------------------------------------
 * A decode step is the same ops on the same tensors every token: only the
 * token id (ids1) and the position (acts->pos, and the rotation matrices of
 * a per-pair RoPE) change, and they are uploaded before the step. So the
 * first step is recorded (dk_graph, with the position read on the device:
 * dk_index_copy into the cache, dk_attention_pos over all of it) and every
 * step replays it: on Vulkan one command buffer per token instead of some
 * 300 ops recorded by the host, on CUDA one graph launch (unless
 * DEVKIT_CUDA_GRAPH=0). Where the backend would only re-run the calls (cpu;
 * cuda with DEVKIT_CUDA_GRAPH=0) the steps stay op by op; so do models over
 * several devices (the crossing is a transfer, which a recording cannot
 * hold). Sliding-window layers read their cache rows from acts->pos_swa
 * and attend with dk_attention_pos_window; their caches make room before
 * the step, outside the recording (KV CACHE). DEVKIT_LLM_GRAPH=0 turns it
 * off, =1 uses it on every backend. */
static int dk_llm_step_graph(dk_llm_model *m, dk_llm_acts **acts, dk_status *st) {
  const char *e = getenv("DEVKIT_LLM_GRAPH");
  int force = e && e[0] == '1';
  dk_device d = m->ws[0].dev;
  dk_graph *g = NULL;
  dk_status s;
  *st = DK_OK;
  if ((m->step_off && !force) || m->n_ws != 1 || (e && e[0] == '0') || !dk_op_supported(d.backend, "dk_index_copy", DK_F32, 0) ||
      !dk_op_supported(d.backend, "dk_attention_pos", DK_F32, 0) ||
      (m->c.swa_window > 0 && !dk_op_supported(d.backend, "dk_attention_pos_window", DK_F32, 0)))
    return 0;
  if (!m->step) {
    /* record; anything refused (an op some backend lacks) or a recording
     * the backend would only re-run leaves decode op by op, as before */
    if (dk_graph_begin(d) != DK_OK) { m->step_off = 1; return 0; }
    s = dk_llm_run(m, acts, m->ids1, 1, m->logits1, 0, 1);
    if (dk_graph_end(d, &g) != DK_OK || s != DK_OK || (!dk_graph_native(g) && !force)) {
      dk_graph_free(g);
      dk_clear_error();
      m->step_off = 1;
      return 0;
    }
    m->step = g;
  }
  *st = dk_graph_replay(m->step);
  return 1;
}

/* one chunk of a forward pass: T tokens at m->pos.., ids_t holding them on
 * the first device; logits into lg (the last token's, or every token's
 * with all_logits), none with lg NULL. acts[i] are sized for T. */
static dk_status dk_llm_chunk(dk_llm_model *m, dk_llm_acts **acts, dk_tensor *ids_t, int T, dk_tensor *lg, int all_logits) {
  const dk_llm_config *c = &m->c;
  int32_t *pos;
  int i, l;
  dk_status s = DK_OK;
  int base = 0;
  /* window layers: room in their caches first, then where the positions go
   * (a recorded step reads the rows from acts->pos_swa; KV CACHE) */
  for (l = 0; l < c->n_layers && s == DK_OK; l++)
    if (m->layers[l].swa) {
      s = dk_llm_kv_room(&m->layers[l], m->pos, T, c->swa_window);
      base = m->layers[l].kv_base;   /* the same in every window layer: they move together */
    }
  if (s != DK_OK) return s;
  if (!(pos = (int32_t *)malloc(sizeof *pos * (size_t)T))) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no host memory");
  for (i = 0; i < T; i++) pos[i] = m->pos + i;
  for (i = 0; i < m->n_ws && s == DK_OK; i++) {
    s = dk_tensor_upload(acts[i]->pos, pos, sizeof *pos * (size_t)T);
    for (l = 0; l < 2 && s == DK_OK; l++)
      if (m->rope[l].inv_freq) s = dk_llm_rot_fill(c, &m->rope[l], m->pos, T, acts[i]->rot[l]);
  }
  for (i = 0; i < T; i++) pos[i] -= base;
  for (i = 0; i < m->n_ws && s == DK_OK; i++)
    if (acts[i]->pos_swa) s = dk_tensor_upload(acts[i]->pos_swa, pos, sizeof *pos * (size_t)T);
  free(pos);
  /* a recorded decode step reads ids1 and writes logits1 */
  if (s == DK_OK && !(T == 1 && ids_t == m->ids1 && lg == m->logits1 && dk_llm_step_graph(m, acts, &s)))
    s = dk_llm_run(m, acts, ids_t, T, lg, all_logits, 0);
  if (s == DK_OK) m->pos += T;
  return s;
}

dk_status dk_llm_forward(dk_llm_model *m, const int32_t *ids, int T, int all_logits, dk_tensor **logits) {
  const dk_llm_config *c = &m->c;
  dk_llm_acts big[DK_LLM_MAX_DEVICES], *acts[DK_LLM_MAX_DEVICES];
  dk_tensor *ids_t = NULL, *idv = NULL, *lv = NULL;
  int i, t0, n, B = m->n_batch > 0 ? m->n_batch : DK_LLM_BATCH;
  dk_status s = DK_OK;
  *logits = NULL;
  if (T <= 0) return dk_set_error(DK_ERR_INVALID, "dk_llm_forward: %d tokens", T);
  if (m->pos + T > m->n_ctx)
    return dk_set_error(DK_ERR_INVALID, "the context holds %d tokens: %d are in it and %d more do not fit (raise it with -c)",
                    m->n_ctx, m->pos, T);
  for (i = 0; i < T; i++)
    if (ids[i] < 0 || ids[i] >= c->vocab)
      return dk_set_error(DK_ERR_INVALID, "token id %d at position %d is outside the vocabulary (0..%d)", ids[i], i, c->vocab - 1);
  /* a window's cache takes chunks of what it was sized for (KV CACHE) */
  if (m->swa_rows && B > m->swa_rows - 2 * c->swa_window) B = m->swa_rows - 2 * c->swa_window;
  memset(big, 0, sizeof big);
  dk_tensor_free(m->logits_all);
  m->logits_all = NULL;
  if (T == 1) {
    /* decode: the T=1 activations and ids the model keeps */
    for (i = 0; i < m->n_ws; i++) acts[i] = &m->ws[i].one;
    if ((s = dk_tensor_upload(m->ids1, ids, sizeof *ids)) || (s = dk_llm_chunk(m, acts, m->ids1, 1, m->logits1, all_logits)))
      return s;
    *logits = m->logits1;
    return DK_OK;
  }
  {
    int64_t st = T;
    if ((s = dk_tensor_new(m->layers[0].dev, DK_I32, 1, &st, "token_ids", &ids_t)) ||
        (s = dk_tensor_upload(ids_t, ids, sizeof *ids * (size_t)T)))
      goto done;
  }
  if (all_logits) {
    int64_t sh[2];
    sh[0] = T; sh[1] = c->vocab;
    if ((s = dk_tensor_new(m->layers[c->n_layers - 1].dev, DK_F32, 2, sh, "logits", &m->logits_all))) goto done;
  }
  /* A long prompt runs in chunks of B tokens (m->n_batch), as llama.cpp's
   * batches: the activations (each [T, hidden] buffer, a per-pair RoPE's
   * [T, D, D] rotations) stay a chunk's size whatever the prompt's length.
   * Each chunk appends to the cache and the next attends to it, as decode
   * steps do. Only the last chunk's last token needs logits, unless all
   * are asked for. */
  for (t0 = 0; t0 < T && s == DK_OK; t0 += n) {
    n = T - t0 < B ? T - t0 : B;
    if (n != big[0].T)
      for (i = 0; i < m->n_ws && s == DK_OK; i++) {
        dk_llm_acts_free(&big[i]);
        if (n == 1) acts[i] = &m->ws[i].one;
        else if ((s = dk_llm_acts_new(m, m->ws[i].dev, n, &big[i])) == DK_OK) acts[i] = &big[i];
      }
    if (s == DK_OK) s = dk_narrow(ids_t, 0, t0, n, &idv);
    if (s == DK_OK && all_logits) s = dk_narrow(m->logits_all, 0, t0, n, &lv);
    if (s == DK_OK) s = dk_llm_chunk(m, acts, idv, n, all_logits ? lv : t0 + n == T ? m->logits1 : NULL, all_logits);
    dk_tensor_free(idv);
    dk_tensor_free(lv);
    idv = lv = NULL;
  }
  if (s == DK_OK) *logits = all_logits ? m->logits_all : m->logits1;
done:
  /* a failed call leaves the chunks it finished in the context (m->pos) */
  dk_tensor_free(ids_t);
  for (i = 0; i < m->n_ws; i++) dk_llm_acts_free(&big[i]);
  return s;
}

dk_status dk_llm_sample(dk_llm_model *m, const dk_tensor *logits, int row, const dk_llm_sampler *sp, uint64_t step, int32_t *token) {
  dk_tensor *r = NULL;
  dk_status s;
  if (dk_tensor_dim(logits, 0) == 1) s = DK_OK;
  else s = dk_narrow(logits, 0, row, 1, &r);
  if (s == DK_OK) {
    const dk_tensor *x = r ? r : logits;
    if (!sp || !(sp->temperature > 0.0f)) s = dk_argmax(m->next, x);
    else s = dk_sample(m->next, x, sp->temperature, sp->top_k, sp->top_p, sp->seed + step);
  }
  /* the one value that crosses to the host each step */
  if (s == DK_OK) s = dk_tensor_download(m->next, token, sizeof *token);
  dk_tensor_free(r);
  return s;
}

#endif /* DEVKIT_MODELS_IMPLEMENTATION */
