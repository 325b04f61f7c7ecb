/* models/hf.h — a Hugging Face model directory opened as the GGUF file
 * llama.cpp's converter would make of it, with no copy of the weights.
 *
 * Part of the model layer (models/): header-only, built only on devkit.h's
 * public API and the layer's file.h and json.h. In exactly one file:
 *
 *     #define DEVKIT_MODELS_IMPLEMENTATION
 *     #include "models/hf.h"          (models/llama.h includes it)
 *
 *   dk_file *f;
 *   if (dk_hf_open("SmolLM2-135M-Instruct/", &f) == DK_OK) {
 *     dk_file_meta_int(f, "llama.block_count", &n);      // from config.json
 *     dk_file_load_tensor(f, "blk.0.attn_q.weight", dev, &t);
 *     // model.layers.0.self_attn.q_proj.weight, from the safetensors mapping
 *   }
 *
 * WHY A VIEW. The llama loader, the tokenizers, the chat templates and the
 * context fit all read GGUF keys and GGUF tensor names. A directory turned
 * into that vocabulary once, here, is read by all of them unchanged, as a
 * GGUF file is; the alternative (a second path through each of them) would
 * copy the loader to change its names. The view is a dk_file of format
 * DK_FILE_HF: its metadata encoded by this file, its tensors those of the
 * safetensors shards (mapped, loaded straight to their devices as any file's).
 *
 * What it reads (what save_pretrained writes):
 *   config.json   model_type: llama and mistral (as llama), qwen2, qwen3,
 *                 gemma3_text and gemma3 (its text_config) become
 *                 general.architecture and the <arch>.* keys llama.cpp uses;
 *                 fields it omits take transformers' defaults for the class
 *   model.safetensors, or the shards model.safetensors.index.json names
 *                 tensors renamed to llama.cpp's (model.layers.3.mlp.up_proj
 *                 -> blk.3.ffn_up); a multimodal Gemma 3's vision tower is
 *                 left out; a name it does not know is an error naming it
 *   tokenizer.json, tokenizer_config.json, chat_template.jinja (optional)
 *                 as tokenizer.ggml.* keys: tokens by id (added tokens typed
 *                 control or user-defined, holes and rows past the tokenizer
 *                 up to the embedding's as [PADn]), BOS/EOS/PAD/UNK, whether
 *                 BOS is added (add_bos_token, else a post-processor template
 *                 that starts with a special token), the chat template; and
 *                 - a byte-level BPE (SmolLM2, Llama 3, Qwen, GPT-2): model
 *                   gpt2, its merges, the pre-tokenizer recognized by its
 *                   regex (llama-bpe, qwen2, smollm, gpt-2), for bpe.h;
 *                 - a SentencePiece-style BPE with byte fallback (Gemma,
 *                   Llama 2, Mistral): model llama, scores from the merges'
 *                   ranks (dk_hf__spm_scores says why that is exact),
 *                   <0xXX> tokens typed byte, add_space_prefix from the
 *                   normalizer or Metaspace, for spm.h.
 *                 Another kind gets no tokenizer keys; the reason is the
 *                 string key "tokenizer.devkit.unsupported".
 *
 * Two differences stay, since a view cannot rewrite bytes, and the llama
 * loader handles them when the format is DK_FILE_HF: llama.cpp permutes the
 * rows of Llama's q and k weights so that RoPE rotates adjacent pairs, while
 * Hugging Face's rotate the two halves of each head (NeoX's order); and it
 * adds 1 to Gemma's norm weights, which Hugging Face applies as (1 + w).
 */
#ifndef DK_MODELS_HF_H
#define DK_MODELS_HF_H

#include "file.h"
#include "json.h"
#include "vocab.h"

#ifdef __cplusplus
extern "C" {
#endif

/* whether path is a directory: what dk_hf_open takes (and, when it is no
 * model directory, says what it lacks) */
DK_MODELS_API int       dk_hf_is_dir(const char *path);
DK_MODELS_API dk_status dk_hf_open(const char *dir, dk_file **out);
/* The same without the tokenizer keys, for a loader of weights: a large
 * tokenizer.json (Gemma's: 33 MB, 262k tokens) is not parsed. */
DK_MODELS_API dk_status dk_hf_open_weights(const char *dir, dk_file **out);
/* A model path as a user gives it: a directory through dk_hf_open, a file
 * through dk_file_open. */
DK_MODELS_API dk_status dk_model_open(const char *path, dk_file **out);

#ifdef __cplusplus
}
#endif
#endif /* DK_MODELS_HF_H */

/* ======================================================================== */
#if defined(DEVKIT_MODELS_IMPLEMENTATION) && !defined(DK_MODELS_HF_IMPL)
#define DK_MODELS_HF_IMPL

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

DK_MODELS_API int dk_hf_is_dir(const char *path) {
  struct stat st;
  return path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- the view ------------------------------------------------------------------
 * A dk_file made here rather than read from one file (file.h's struct, which
 * this implementation sees): metadata encoded below and tensors that live in
 * other files, its parts, which it owns and closes. file.h finds a tensor's
 * bytes through its `home` and names its creation site by `orig`. */

static dk_status dk_hf__view_new(const char *name, dk_file_format fmt, dk_file **out) {
  dk_file *f = (dk_file *)calloc(1, sizeof *f);
  *out = NULL;
  if (!f) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no host memory for a view of %s", name);
  dk_file__file_set_name(f, name);
  f->format = fmt;
  *out = f;
  return DK_OK;
}

/* the view owns part from here on, even when this fails */
static dk_status dk_hf__view_add_part(dk_file *f, dk_file *part) {
  dk_file **p = (dk_file **)realloc(f->parts, sizeof *p * (size_t)(f->n_parts + 1));
  if (!p) { dk_file_close(part); return dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: no host memory", f->name); }
  f->parts = p;
  f->parts[f->n_parts++] = part;
  return DK_OK;
}

/* a metadata entry whose value is `n` bytes already in GGUF's encoding */
static dk_status dk_hf__view_meta(dk_file *f, const char *key, dk_meta_type type, const void *val, uint64_t n) {
  dk_file__fmeta *m = (dk_file__fmeta *)realloc(f->meta, sizeof *m * (size_t)(f->n_meta + 1));
  unsigned char *dst;
  dk_status s;
  int64_t i;
  if (!m) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: no host memory", f->name);
  f->meta = m;
  for (i = 0; i < f->n_meta; i++)
    if (!strcmp(f->meta[i].key, key)) return dk_set_error(DK_ERR_FORMAT, "%s: metadata '%s' twice", f->name, key);
  m = &f->meta[f->n_meta];
  memset(m, 0, sizeof *m);
  if (!(m->key = (char *)malloc(strlen(key) + 1))) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: no host memory", f->name);
  strcpy(m->key, key);
  f->n_meta++;
  m->type = type;
  m->aoff = f->arena_len;
  m->alen = n;
  if ((s = dk_file__arena_reserve(f, n, &dst))) return s;
  if (n) memcpy(dst, val, (size_t)n);
  /* the arena may move as it grows: every value is found again from its offset */
  for (i = 0; i < f->n_meta; i++) {
    f->meta[i].val = f->arena + f->meta[i].aoff;
    f->meta[i].end = f->meta[i].val + f->meta[i].alen;
  }
  return DK_OK;
}

/* part's tensor i, in the view under `name` */
static dk_status dk_hf__view_tensor(dk_file *f, const dk_file *part, int64_t i, const char *name) {
  dk_file__ftensor *t = (dk_file__ftensor *)realloc(f->tensors, sizeof *t * (size_t)(f->n_tensors + 1)), *src;
  int64_t k;
  if (!t) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: no host memory", f->name);
  f->tensors = t;
  src = &part->tensors[i];
  for (k = 0; k < f->n_tensors; k++)
    if (!strcmp(f->tensors[k].name, name))
      return dk_set_error(DK_ERR_FORMAT, "%s: tensor '%s' (%s in %s) is there twice (also %s in %s)", f->name, name,
                          src->name, part->name, f->tensors[k].orig ? f->tensors[k].orig : name,
                          dk_file__home(f, &f->tensors[k])->name);
  if (strlen(name) >= DK_FILE__NAME_LEN) return dk_set_error(DK_ERR_FORMAT, "%s: tensor name '%s' is too long", f->name, name);
  t = &f->tensors[f->n_tensors];
  *t = *src;
  t->home = dk_file__home(part, src);
  t->name = (char *)malloc(strlen(name) + 1);
  t->orig = (char *)malloc(strlen(src->orig ? src->orig : src->name) + 1);
  if (!t->name || !t->orig) {
    free(t->name); free(t->orig);
    return dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: no host memory", f->name);
  }
  strcpy(t->name, name);
  strcpy(t->orig, src->orig ? src->orig : src->name);
  f->n_tensors++;
  return DK_OK;
}

/* ---- values in GGUF's encoding ------------------------------------------- */

typedef struct {
  unsigned char *p;
  size_t n, cap;
  int oom;
} dk_hf__buf;

static void dk_hf__put(dk_hf__buf *b, const void *v, size_t n) {
  if (b->oom) return;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    unsigned char *p;
    while (cap < b->n + n) cap *= 2;
    if (!(p = (unsigned char *)realloc(b->p, cap))) { b->oom = 1; return; }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, v, n);
  b->n += n;
}
static void dk_hf__u32(dk_hf__buf *b, uint32_t v) { unsigned char x[4]; dk_file__put32(x, v); dk_hf__put(b, x, 4); }
static void dk_hf__u64(dk_hf__buf *b, uint64_t v) { unsigned char x[8]; dk_file__put64(x, v); dk_hf__put(b, x, 8); }
static void dk_hf__str(dk_hf__buf *b, const char *s, size_t n) { dk_hf__u64(b, n); dk_hf__put(b, s, n); }

/* one metadata entry from a value encoded in b (b is emptied) */
static dk_status dk_hf__meta(dk_file *f, const char *key, dk_meta_type t, dk_hf__buf *b) {
  dk_status s = b->oom ? dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: no host memory for '%s'", dk_file_name(f), key)
                       : dk_hf__view_meta(f, key, t, b->p, b->n);
  b->n = 0;
  b->oom = 0;
  return s;
}
static dk_status dk_hf__meta_u32(dk_file *f, dk_hf__buf *b, const char *key, uint32_t v) {
  dk_hf__u32(b, v);
  return dk_hf__meta(f, key, DK_META_U32, b);
}
static dk_status dk_hf__meta_f32(dk_file *f, dk_hf__buf *b, const char *key, double v) {
  float x = (float)v;
  uint32_t u;
  memcpy(&u, &x, 4);
  dk_hf__u32(b, u);
  return dk_hf__meta(f, key, DK_META_F32, b);
}
static dk_status dk_hf__meta_bool(dk_file *f, dk_hf__buf *b, const char *key, int v) {
  unsigned char x = (unsigned char)(v != 0);
  dk_hf__put(b, &x, 1);
  return dk_hf__meta(f, key, DK_META_BOOL, b);
}
static dk_status dk_hf__meta_str(dk_file *f, dk_hf__buf *b, const char *key, const char *s, size_t n) {
  dk_hf__str(b, s, n);
  return dk_hf__meta(f, key, DK_META_STRING, b);
}

/* ---- config.json ------------------------------------------------------------ */

/* model_type -> general.architecture, and the class defaults of the fields
 * save_pretrained leaves out when they equal them */
typedef struct {
  const char *model_type, *arch;
  double rope_theta, eps;
  /* hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
   * num_key_value_heads (-1: the heads), head_dim (-1: hidden / heads),
   * max_position_embeddings: what transformers' config class takes when
   * config.json leaves one out (Gemma 3 4B's text_config leaves out its heads) */
  int def[7];
} dk_hf__archrow;

static const dk_hf__archrow dk_hf__archs[] = {
  {"llama", "llama", 10000.0, 1e-6, {4096, 11008, 32, 32, -1, -1, 2048}},
  {"mistral", "llama", 10000.0, 1e-6, {4096, 14336, 32, 32, 8, -1, 131072}},
  {"qwen2", "qwen2", 10000.0, 1e-6, {4096, 22016, 32, 32, 32, -1, 32768}},
  {"qwen3", "qwen3", 10000.0, 1e-6, {4096, 22016, 32, 32, 32, 128, 32768}},
  {"gemma3_text", "gemma3", 1e6, 1e-6, {2304, 9216, 26, 8, 4, 256, 131072}},
  {"gemma3", "gemma3", 1e6, 1e-6, {2304, 9216, 26, 8, 4, 256, 131072}},
};

/* a number member of object node; *out untouched when absent */
static dk_status dk_hf__num(const dk_json *j, int node, const char *key, int required, double *out) {
  int k = dk_json_find(j, node, key);
  if (k < 0 || dk_json_type_of(j, k) == DK_JSON_NULL) {
    return required ? dk_set_error(DK_ERR_FORMAT, "config.json: '%s' is missing", key) : DK_OK;
  }
  if (!dk_json_number(j, k, out)) return dk_set_error(DK_ERR_FORMAT, "config.json: '%s' is not a number", key);
  return DK_OK;
}

/* a count member copied to the GGUF key <arch>.<gkey>; absent, def (-1:
 * no key) */
static dk_status dk_hf__count(dk_file *f, dk_hf__buf *b, const dk_json *j, int node, const char *key, int def,
                              const char *arch, const char *gkey) {
  double v = def;
  char k[128];
  dk_status s;
  if ((s = dk_hf__num(j, node, key, 0, &v))) return s;
  if (v == -1) return DK_OK;
  if (v != floor(v) || v < 1 || v > (double)(1 << 30))
    return dk_set_error(DK_ERR_FORMAT, "config.json: '%s' is %g; a count was expected", key, v);
  snprintf(k, sizeof k, "%s.%s", arch, gkey);
  return dk_hf__meta_u32(f, b, k, (uint32_t)v);
}

static int dk_hf__is(const dk_json *j, int node, const char *key, const char *want) {
  const char *v = dk_json_string(j, dk_json_find(j, node, key), NULL);
  return v && !strcmp(v, want);
}

/* config.json's keys as GGUF's; *row the family, *node the object holding
 * the text model's fields (the root, or a multimodal model's text_config) */
static dk_status dk_hf__config(dk_file *f, dk_hf__buf *b, const dk_json *j, const dk_hf__archrow **row, int *node) {
  const char *mt = dk_json_string(j, dk_json_find(j, 0, "model_type"), NULL), *arch, *act;
  int c = 0, k, rs, rp, slide = -1, flag = 0, gemma;
  size_t i;
  double v;
  char key[128];
  dk_status s;
  *row = NULL;
  for (i = 0; mt && i < sizeof dk_hf__archs / sizeof dk_hf__archs[0]; i++)
    if (!strcmp(mt, dk_hf__archs[i].model_type)) *row = &dk_hf__archs[i];
  if (!*row)
    return dk_set_error(DK_ERR_UNSUPPORTED, "config.json: model_type '%.40s' is not one devkit runs from a Hugging Face "
                        "directory (llama, mistral, qwen2, qwen3, gemma3_text, gemma3)", mt ? mt : "(none)");
  arch = (*row)->arch;
  gemma = !strcmp(arch, "gemma3");
  /* a multimodal Gemma 3 keeps the language model's numbers in text_config */
  if (!strcmp(mt, "gemma3") && (c = dk_json_find(j, 0, "text_config")) < 0)
    return dk_set_error(DK_ERR_FORMAT, "config.json: a gemma3 model without its text_config");
  *node = c;
  if ((s = dk_hf__meta_str(f, b, "general.architecture", arch, strlen(arch))) ||
      (s = dk_hf__meta_str(f, b, "general.name", dk_file_name(f), strlen(dk_file_name(f)))) ||
      (s = dk_hf__count(f, b, j, c, "hidden_size", (*row)->def[0], arch, "embedding_length")) ||
      (s = dk_hf__count(f, b, j, c, "intermediate_size", (*row)->def[1], arch, "feed_forward_length")) ||
      (s = dk_hf__count(f, b, j, c, "num_hidden_layers", (*row)->def[2], arch, "block_count")) ||
      (s = dk_hf__count(f, b, j, c, "num_attention_heads", (*row)->def[3], arch, "attention.head_count")) ||
      (s = dk_hf__count(f, b, j, c, "num_key_value_heads", (*row)->def[4], arch, "attention.head_count_kv")) ||
      (s = dk_hf__count(f, b, j, c, "max_position_embeddings", (*row)->def[6], arch, "context_length")) ||
      (s = dk_hf__count(f, b, j, c, "head_dim", (*row)->def[5], arch, "attention.key_length")) ||
      (s = dk_hf__count(f, b, j, c, "head_dim", (*row)->def[5], arch, "attention.value_length")))
    return s;
#define DK_HF_KEY(suffix) (snprintf(key, sizeof key, "%s." suffix, arch), key)
  /* RoPE: rope_theta and rope_scaling, or (transformers 5) rope_parameters
   * holding both, per kind of layer where the kinds differ (Gemma 3) */
  rp = dk_json_find(j, c, "rope_parameters");
  if (rp >= 0 && dk_json_find(j, rp, "full_attention") >= 0) {
    slide = dk_json_find(j, rp, "sliding_attention");
    rp = dk_json_find(j, rp, "full_attention");
  }
  v = (*row)->rope_theta;
  if ((s = dk_hf__num(j, rp, "rope_theta", 0, &v)) || (s = dk_hf__num(j, c, "rope_theta", 0, &v)) ||
      (s = dk_hf__meta_f32(f, b, DK_HF_KEY("rope.freq_base"), v)))
    return s;
  v = (*row)->eps;
  if ((s = dk_hf__num(j, c, "rms_norm_eps", 0, &v)) ||
      (s = dk_hf__meta_f32(f, b, DK_HF_KEY("attention.layer_norm_rms_epsilon"), v)))
    return s;
  /* the activation the block computes: SiLU, Gemma's tanh GELU */
  act = dk_json_string(j, dk_json_find(j, c, gemma ? "hidden_activation" : "hidden_act"), NULL);
  if (!act && gemma) act = dk_json_string(j, dk_json_find(j, c, "hidden_act"), NULL);
  if (act && (gemma ? strcmp(act, "gelu_pytorch_tanh") && strcmp(act, "gelu_tanh") : strcmp(act, "silu") != 0))
    return dk_set_error(DK_ERR_UNSUPPORTED, "config.json: activation '%.40s'; a %s model here computes %s", act, mt,
                        gemma ? "gelu_pytorch_tanh" : "silu");
  {
    /* switches devkit's block for this family does not have (Qwen2's q/k/v
     * biases it has; Mistral's sliding window, as llama.cpp, it ignores) */
    static const char *const no[3] = {"attention_bias", "mlp_bias", "use_sliding_window"};
    for (k = 0; k < 3; k++)
      if (dk_json_bool(j, dk_json_find(j, c, no[k]), &flag) && flag && !(k == 0 && !strcmp(arch, "qwen2")) &&
          !(k == 2 && !strcmp(arch, "gemma3")))
        return dk_set_error(DK_ERR_UNSUPPORTED, "config.json: %s is true; devkit's %s block has no such switch", no[k], arch);
  }
  {
    /* weights packed by a quantizer (GPTQ, AWQ, bitsandbytes, fp8) are not
     * float tensors; "gguf" is transformers' record of a model it
     * dequantized from a GGUF file, whose saved weights are plain */
    int q = dk_json_find(j, 0, "quantization_config");
    const char *qm = dk_json_string(j, dk_json_find(j, q, "quant_method"), NULL);
    if (q >= 0 && dk_json_type_of(j, q) != DK_JSON_NULL && !(qm && !strcmp(qm, "gguf")))
      return dk_set_error(DK_ERR_UNSUPPORTED, "config.json: weights quantized by '%.30s'; devkit reads f32, f16 and bf16 "
                          "safetensors (quantized models: their GGUF files)", qm ? qm : "?");
  }
  {
    /* Gemma 2's soft caps (Gemma 3 has none) */
    static const char *const cap[2] = {"final_logit_softcapping", "attn_logit_softcapping"};
    for (k = 0; k < 2; k++)
      if (dk_json_type_of(j, dk_json_find(j, c, cap[k])) == DK_JSON_NUMBER)
        return dk_set_error(DK_ERR_UNSUPPORTED, "config.json: %s is set; devkit's %s block has no soft cap", cap[k], arch);
    if (dk_json_bool(j, dk_json_find(j, c, "use_bidirectional_attention"), &flag) && flag)
      return dk_set_error(DK_ERR_UNSUPPORTED, "config.json: use_bidirectional_attention is true (an encoder); devkit's %s "
                          "block is causal", arch);
  }
  if (gemma) {
    int lt = dk_json_find(j, c, "layer_types"), e, l = 0;
    double q = 256, win = 4096, pat = 6;
    v = 10000.0;
    if ((s = dk_hf__num(j, slide, "rope_theta", 0, &v)) || (s = dk_hf__num(j, c, "rope_local_base_freq", 0, &v)) ||
        (s = dk_hf__meta_f32(f, b, DK_HF_KEY("rope.freq_base_swa"), v)) ||
        (s = dk_hf__num(j, c, "query_pre_attn_scalar", 0, &q)) || (s = dk_hf__num(j, c, "sliding_window", 0, &win)) ||
        (s = dk_hf__num(j, c, "sliding_window_pattern", 0, &pat)))
      return s;
    if (!(q > 0) || !(win >= 1 && win <= (double)(1 << 30)))
      return dk_set_error(DK_ERR_FORMAT, "config.json: query_pre_attn_scalar %g, sliding_window %g", q, win);
    if ((s = dk_hf__meta_f32(f, b, DK_HF_KEY("attention.scale"), 1.0 / sqrt(q))) ||
        (s = dk_hf__meta_u32(f, b, DK_HF_KEY("attention.sliding_window"), (uint32_t)win)))
      return s;
    /* devkit's gemma3 makes every 6th layer global, as the released models do */
    for (e = dk_json_first(j, lt); e >= 0; e = dk_json_next(j, e), l++) {
      const char *t = dk_json_string(j, e, NULL);
      if (!t || strcmp(t, (l + 1) % 6 ? "sliding_attention" : "full_attention"))
        return dk_set_error(DK_ERR_UNSUPPORTED, "config.json: layer_types[%d] is '%.30s'; devkit's gemma3 makes every 6th layer "
                            "full attention and the others sliding", l, t ? t : "?");
    }
    if (lt < 0 && pat != 6)
      return dk_set_error(DK_ERR_UNSUPPORTED, "config.json: sliding_window_pattern %g; devkit's gemma3 takes 6", pat);
  }
  /* RoPE scaling: the GGUF keys for the kinds the loader knows; another
   * kind's name goes through, for the loader to refuse by name */
  rs = dk_json_find(j, c, "rope_scaling");
  if (rs < 0 || dk_json_type_of(j, rs) != DK_JSON_OBJECT) rs = rp;
  if (rs >= 0 && dk_json_type_of(j, rs) == DK_JSON_OBJECT) {
    const char *t = dk_json_string(j, dk_json_find(j, rs, "rope_type"), NULL);
    double fac = 1, lo = 1, hi = 4, orig = 8192;
    if (!t) t = dk_json_string(j, dk_json_find(j, rs, "type"), NULL);
    if (!t && rs == rp) t = "default";   /* rope_parameters may hold rope_theta alone */
    if (!t) return dk_set_error(DK_ERR_FORMAT, "config.json: rope_scaling names no rope_type");
    if (strcmp(t, "default")) {
      if ((s = dk_hf__meta_str(f, b, DK_HF_KEY("rope.scaling.type"), t, strlen(t))) ||
          (s = dk_hf__num(j, rs, "factor", 0, &fac)) || (s = dk_hf__meta_f32(f, b, DK_HF_KEY("rope.scaling.factor"), fac)))
        return s;
      if (!strcmp(t, "llama3")) {
        if ((s = dk_hf__num(j, rs, "low_freq_factor", 0, &lo)) || (s = dk_hf__num(j, rs, "high_freq_factor", 0, &hi)) ||
            (s = dk_hf__num(j, rs, "original_max_position_embeddings", 0, &orig)) ||
            (s = dk_hf__meta_f32(f, b, DK_HF_KEY("rope.scaling.low_freq_factor"), lo)) ||
            (s = dk_hf__meta_f32(f, b, DK_HF_KEY("rope.scaling.high_freq_factor"), hi)) ||
            (s = dk_hf__meta_u32(f, b, DK_HF_KEY("rope.scaling.original_context_length"),
                                 orig > 0 && orig < 1e9 ? (uint32_t)orig : 0)))
          return s;
      }
    }
  }
#undef DK_HF_KEY
  return DK_OK;
}

/* ---- tensor names -------------------------------------------------------------- */

/* A Hugging Face name as llama.cpp names it, into out: 1; a tensor the
 * language model does not use (a vision tower, RoPE tables): 0; a name this
 * does not know: -1. */
static int dk_hf__name(const char *arch, const char *hf, char *out, size_t cap) {
  static const char *const drop[] = {"vision_tower.", "model.vision_tower.", "multi_modal_projector.",
                                     "model.multi_modal_projector.", "vision_model.", "model.vision_model."};
  static const char *const layer[][3] = {
    /* Hugging Face, llama.cpp, the architecture it is for ("" all) */
    {"input_layernorm.weight", "attn_norm.weight", ""},
    {"self_attn.q_proj.weight", "attn_q.weight", ""},
    {"self_attn.k_proj.weight", "attn_k.weight", ""},
    {"self_attn.v_proj.weight", "attn_v.weight", ""},
    {"self_attn.o_proj.weight", "attn_output.weight", ""},
    {"self_attn.q_proj.bias", "attn_q.bias", ""},
    {"self_attn.k_proj.bias", "attn_k.bias", ""},
    {"self_attn.v_proj.bias", "attn_v.bias", ""},
    {"self_attn.q_norm.weight", "attn_q_norm.weight", ""},
    {"self_attn.k_norm.weight", "attn_k_norm.weight", ""},
    {"post_attention_layernorm.weight", "post_attention_norm.weight", "gemma3"},
    {"post_attention_layernorm.weight", "ffn_norm.weight", ""},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight", "gemma3"},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight", "gemma3"},
    {"mlp.gate_proj.weight", "ffn_gate.weight", ""},
    {"mlp.up_proj.weight", "ffn_up.weight", ""},
    {"mlp.down_proj.weight", "ffn_down.weight", ""},
  };
  char buf[256];
  const char *n = hf, *rest;
  size_t i;
  long l;
  char *end;
  for (i = 0; i < sizeof drop / sizeof drop[0]; i++)
    if (!strncmp(n, drop[i], strlen(drop[i]))) return 0;
  if (strstr(n, "rotary_emb.inv_freq")) return 0;   /* RoPE tables older checkpoints store */
  /* a multimodal checkpoint's language model: language_model.model.X (older
   * transformers) or model.language_model.X (newer) is the text model's model.X */
  if (!strncmp(n, "language_model.model.", 21)) { snprintf(buf, sizeof buf, "model.%s", n + 21); n = buf; }
  else if (!strncmp(n, "model.language_model.", 21)) { snprintf(buf, sizeof buf, "model.%s", n + 21); n = buf; }
  else if (!strncmp(n, "language_model.lm_head.", 23)) { snprintf(buf, sizeof buf, "lm_head.%s", n + 23); n = buf; }
  if (!strcmp(n, "model.embed_tokens.weight")) return snprintf(out, cap, "token_embd.weight"), 1;
  if (!strcmp(n, "model.norm.weight")) return snprintf(out, cap, "output_norm.weight"), 1;
  if (!strcmp(n, "lm_head.weight")) return snprintf(out, cap, "output.weight"), 1;
  if (strncmp(n, "model.layers.", 13)) return -1;
  l = strtol(n + 13, &end, 10);
  if (end == n + 13 || *end != '.' || l < 0 || l > 100000) return -1;
  rest = end + 1;
  for (i = 0; i < sizeof layer / sizeof layer[0]; i++)
    if (!strcmp(rest, layer[i][0]) && (!layer[i][2][0] || !strcmp(layer[i][2], arch)))
      return snprintf(out, cap, "blk.%ld.%s", l, layer[i][1]), 1;
  return -1;
}

/* the safetensors files of the directory: the shards the index names, or
 * model.safetensors */
static dk_status dk_hf__weights(dk_file *f, const char *dir, const char *arch, int tied) {
  char path[4400];
  dk_json *ix = NULL;
  dk_status s = DK_OK;
  int p0, k;
  snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
  {
    FILE *fp = fopen(path, "rb");
    if (fp) { fclose(fp); if ((s = dk_json_load(path, &ix))) return s; }
  }
  if (ix) {
    int wm = dk_json_find(ix, 0, "weight_map"), e, g;
    if (wm < 0 || dk_json_type_of(ix, wm) != DK_JSON_OBJECT) {
      dk_json_free(ix);
      return dk_set_error(DK_ERR_FORMAT, "model.safetensors.index.json: no weight_map object");
    }
    for (e = dk_json_first(ix, wm); e >= 0 && !s; e = dk_json_next(ix, e)) {
      const char *shard = dk_json_string(ix, e, NULL);
      int seen = 0;
      if (!shard || !shard[0] || strchr(shard, '/') || shard[0] == '.') {
        s = dk_set_error(DK_ERR_FORMAT, "model.safetensors.index.json: tensor '%.100s' is in '%.100s', not a file of the "
                         "directory", dk_json_key(ix, e), shard ? shard : "(not a string)");
        break;
      }
      for (g = dk_json_first(ix, wm); g != e && !seen; g = dk_json_next(ix, g))
        seen = !strcmp(dk_json_string(ix, g, NULL), shard);
      if (!seen) {
        dk_file *part;
        snprintf(path, sizeof path, "%s/%s", dir, shard);
        if (!(s = dk_file_open_as(path, DK_FILE_SAFETENSORS, &part))) s = dk_hf__view_add_part(f, part);
      }
    }
    dk_json_free(ix);
    if (s) return s;
  } else {
    dk_file *part;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if ((s = dk_file_open_as(path, DK_FILE_SAFETENSORS, &part))) return s;
    if ((s = dk_hf__view_add_part(f, part))) return s;
  }
  for (p0 = 0; p0 < f->n_parts; p0++) {
    const dk_file *part = f->parts[p0];
    for (k = 0; k < part->n_tensors; k++) {
      char nm[DK_FILE__NAME_LEN];
      int r = dk_hf__name(arch, part->tensors[k].name, nm, sizeof nm);
      if (r < 0)
        return dk_set_error(DK_ERR_UNSUPPORTED, "%s: tensor '%s' is not one a %s model has here (devkit maps Hugging Face's "
                            "names to llama.cpp's)", part->name, part->tensors[k].name, arch);
      /* a tied classifier some checkpoints store anyway: the embedding serves */
      if (r == 0 || (tied && !strcmp(nm, "output.weight"))) continue;
      if ((s = dk_hf__view_tensor(f, part, k, nm))) return s;
    }
  }
  return DK_OK;
}

/* ---- the tokenizer ------------------------------------------------------------ */

/* the regexes of the pre-tokenizers bpe.h writes out by hand, as the
 * tokenizer.json of each family spells them */
static const char *const dk_hf__re_llama3 =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char *const dk_hf__re_qwen2 =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* The pre-tokenizer's name from tokenizer.json's pre_tokenizer, or NULL:
 * a Split by one of the regexes above then ByteLevel without its own regex
 * (Llama 3, Qwen2), Digits one at a time then ByteLevel with GPT-2's regex
 * (SmolLM2), or ByteLevel with it alone (GPT-2). */
static const char *dk_hf__pre(const dk_json *j, int pt) {
  int items[8], n = 0, e, i, bl = -1, digits = 0, bl_regex = 1;
  const char *re = NULL;
  if (pt < 0) return NULL;
  if (dk_hf__is(j, pt, "type", "Sequence")) {
    for (e = dk_json_first(j, dk_json_find(j, pt, "pretokenizers")); e >= 0 && n < 8; e = dk_json_next(j, e)) items[n++] = e;
    if (e >= 0) return NULL;
  } else {
    items[n++] = pt;
  }
  for (i = 0; i < n; i++) {
    int it = items[i], flag;
    if (dk_hf__is(j, it, "type", "ByteLevel")) {
      bl = it;
      if (dk_json_bool(j, dk_json_find(j, it, "use_regex"), &flag)) bl_regex = flag;
      if (dk_json_bool(j, dk_json_find(j, it, "add_prefix_space"), &flag) && flag) return NULL;
    } else if (dk_hf__is(j, it, "type", "Digits")) {
      if (!(dk_json_bool(j, dk_json_find(j, it, "individual_digits"), &flag) && flag) || re || bl >= 0) return NULL;
      digits = 1;
    } else if (dk_hf__is(j, it, "type", "Split")) {
      if (re || bl >= 0 || !dk_hf__is(j, it, "behavior", "Isolated")) return NULL;
      re = dk_json_string(j, dk_json_find(j, dk_json_find(j, it, "pattern"), "Regex"), NULL);
      if (!re) return NULL;
    } else {
      return NULL;
    }
  }
  if (bl < 0) return NULL;
  if (re && !digits && !bl_regex) {
    if (!strcmp(re, dk_hf__re_llama3)) return "llama-bpe";
    if (!strcmp(re, dk_hf__re_qwen2)) return "qwen2";
    return NULL;
  }
  if (!re && bl_regex) return digits ? "smollm" : "gpt-2";
  return NULL;
}

/* a special token of tokenizer_config.json: "text" or {"content": "text"} */
static const char *dk_hf__tok_text(const dk_json *j, int node) {
  if (node < 0) return NULL;
  if (dk_json_type_of(j, node) == DK_JSON_OBJECT) node = dk_json_find(j, node, "content");
  return dk_json_string(j, node, NULL);
}

typedef struct {
  const char **text;   /* by id; NULL: a hole */
  size_t *len;
  uint8_t *type;
  int32_t n;
} dk_hf__toks;

static int32_t dk_hf__id_of(const dk_hf__toks *t, const char *s) {
  int32_t i;
  size_t n;
  if (!s) return -1;
  n = strlen(s);
  for (i = 0; i < t->n; i++)
    if (t->text[i] && t->len[i] == n && !memcmp(t->text[i], s, n)) return i;
  return -1;
}

/* merge e of tokenizer.json: "a b", or ["a", "b"] (tokenizers 0.20 and later) */
static dk_status dk_hf__merge(const dk_json *j, int e, const char **a, size_t *la, const char **c, size_t *lc) {
  const char *sp;
  *a = dk_json_string(j, e, la);
  if (*a) {
    /* the first space splits: byte-level and SentencePiece tokens hold none */
    if (!(sp = (const char *)memchr(*a, ' ', *la)))
      return dk_set_error(DK_ERR_FORMAT, "tokenizer.json: merge '%.60s' has no space", *a);
    *c = sp + 1;
    *lc = *la - (size_t)(sp + 1 - *a);
    *la = (size_t)(sp - *a);
    return DK_OK;
  }
  *a = dk_json_string(j, dk_json_first(j, e), la);
  *c = dk_json_string(j, dk_json_next(j, dk_json_first(j, e)), lc);
  if (dk_json_count(j, e) != 2 || !*a || !*c)
    return dk_set_error(DK_ERR_FORMAT, "tokenizer.json: a merge that is not two strings");
  return DK_OK;
}

/* Whether a SentencePiece-style tokenizer.json puts the dummy prefix "▁"
 * before the text (Llama 2's Prepend normalizer or Metaspace pre-tokenizer
 * with prepend_scheme first/always: 1) or not (Gemma: 0); -1 for a
 * normalizer or pre-tokenizer that is neither. */
static int dk_hf__spm_prefix(const dk_json *j) {
  int nz = dk_json_find(j, 0, "normalizer"), pt = dk_json_find(j, 0, "pre_tokenizer"), items[8], n = 0, e, i, prefix = 0;
  if (dk_json_type_of(j, nz) == DK_JSON_OBJECT) {
    if (dk_hf__is(j, nz, "type", "Sequence")) {
      for (e = dk_json_first(j, dk_json_find(j, nz, "normalizers")); e >= 0 && n < 8; e = dk_json_next(j, e)) items[n++] = e;
      if (e >= 0) return -1;
    } else {
      items[n++] = nz;
    }
    for (i = 0; i < n; i++) {
      if (dk_hf__is(j, items[i], "type", "Prepend") && dk_hf__is(j, items[i], "prepend", "\xe2\x96\x81")) prefix = 1;
      else if (!(dk_hf__is(j, items[i], "type", "Replace") &&
                 dk_hf__is(j, dk_json_find(j, items[i], "pattern"), "String", " ") &&
                 dk_hf__is(j, items[i], "content", "\xe2\x96\x81")))
        return -1;
    }
  }
  if (dk_json_type_of(j, pt) == DK_JSON_OBJECT) {
    if (dk_hf__is(j, pt, "type", "Metaspace")) {
      const char *ps = dk_json_string(j, dk_json_find(j, pt, "prepend_scheme"), NULL);
      int ap = 0;
      if (!dk_hf__is(j, pt, "replacement", "\xe2\x96\x81")) return -1;
      if (ps ? strcmp(ps, "never") != 0 : dk_json_bool(j, dk_json_find(j, pt, "add_prefix_space"), &ap) && ap) prefix = 1;
    } else if (!(dk_hf__is(j, pt, "type", "Split") && dk_hf__is(j, dk_json_find(j, pt, "pattern"), "String", " "))) {
      /* Gemma's Split on " " never matches after its normalizer made every space "▁" */
      return -1;
    }
  }
  return prefix;
}

/* SentencePiece's scores from a BPE's merges: the merge of rank r makes a
 * piece of score -r (the first merge that makes it), so that merging the
 * pair of the highest score (spm.h) merges what BPE's lowest rank would.
 * Hugging Face's converter wrote the merges in the order of the pieces'
 * SentencePiece scores, so this gives that order back. Pieces no merge
 * makes (characters, bytes, added tokens) never result from a merge. */
static dk_status dk_hf__spm_scores(dk_file *f, dk_hf__buf *b, const dk_json *j, int merges, const dk_hf__toks *t) {
  uint64_t cap = 1, h;
  int32_t *hash, i;
  float *score = (float *)malloc(sizeof *score * (size_t)t->n);
  char *cat = (char *)malloc(4096);
  int e, r = 0;
  dk_status s = DK_OK;
  while (cap < 2 * (uint64_t)t->n) cap *= 2;
  hash = (int32_t *)malloc(sizeof *hash * (size_t)cap);
  if (!score || !hash || !cat) {
    free(score); free(hash); free(cat);
    return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no host memory");
  }
  for (h = 0; h < cap; h++) hash[h] = -1;
  for (i = 0; i < t->n; i++) {
    score[i] = -1e9f;
    if (!t->text[i]) continue;
    for (h = dk_spelling_hash(t->text[i], t->len[i]) & (cap - 1); hash[h] >= 0; h = (h + 1) & (cap - 1)) {}
    hash[h] = i;
  }
  for (e = dk_json_first(j, merges); e >= 0 && !s; e = dk_json_next(j, e), r++) {
    const char *a, *c;
    size_t la, lc;
    if ((s = dk_hf__merge(j, e, &a, &la, &c, &lc))) break;
    if (la + lc > 4096) continue;
    memcpy(cat, a, la);
    memcpy(cat + la, c, lc);
    for (h = dk_spelling_hash(cat, la + lc) & (cap - 1); hash[h] >= 0; h = (h + 1) & (cap - 1)) {
      i = hash[h];
      if (t->len[i] == la + lc && !memcmp(t->text[i], cat, la + lc)) {
        if (score[i] == -1e9f) score[i] = -(float)r;
        break;
      }
    }
  }
  if (!s) {
    dk_hf__u32(b, DK_META_F32);
    dk_hf__u64(b, (uint64_t)t->n);
    for (i = 0; i < t->n; i++) {
      uint32_t u;
      memcpy(&u, &score[i], 4);
      dk_hf__u32(b, u);
    }
    s = dk_hf__meta(f, "tokenizer.ggml.scores", DK_META_ARRAY, b);
  }
  free(score);
  free(hash);
  free(cat);
  return s;
}

/* tokenizer.json (and tokenizer_config.json) as tokenizer.ggml.* keys; a
 * kind it does not turn into them leaves its reason in
 * tokenizer.devkit.unsupported */
static dk_status dk_hf__tokenizer(dk_file *f, dk_hf__buf *b, const char *dir, int vocab_rows) {
  char path[4400], why[300] = "";
  dk_json *j = NULL, *tc = NULL;
  dk_hf__toks t;
  dk_status s = DK_OK;
  int model, vocab, merges, e, added, pp, spm = 0, prefix = 0, r;
  const char *pre;
  int32_t i, n = 0, bos = -1, eos = -1, pad = -1, unk = -1;
  FILE *fp;
  memset(&t, 0, sizeof t);
  snprintf(path, sizeof path, "%s/tokenizer.json", dir);
  if (!(fp = fopen(path, "rb"))) return DK_OK;   /* no tokenizer: ids only (llama --ids) */
  fclose(fp);
  if ((s = dk_json_load(path, &j))) return s;
  model = dk_json_find(j, 0, "model");
  vocab = dk_json_find(j, model, "vocab");
  merges = dk_json_find(j, model, "merges");
  pre = dk_hf__pre(j, dk_json_find(j, 0, "pre_tokenizer"));
  dk_json_bool(j, dk_json_find(j, model, "byte_fallback"), &spm);
  {
    const char *mtype = dk_json_string(j, dk_json_find(j, model, "type"), NULL);
    if (!dk_hf__is(j, model, "type", "BPE") || dk_json_type_of(j, vocab) != DK_JSON_OBJECT ||
        dk_json_type_of(j, merges) != DK_JSON_ARRAY)
      snprintf(why, sizeof why, "tokenizer.json: a %.20s model; devkit reads BPE tokenizers from it", mtype ? mtype : "?");
    else if (spm && (prefix = dk_hf__spm_prefix(j)) < 0)
      snprintf(why, sizeof why, "tokenizer.json: a SentencePiece-style BPE whose normalizer or pre-tokenizer is not one "
               "devkit recognizes (it knows Gemma's, Llama 2's and Mistral's)");
    else if (!spm && dk_json_type_of(j, dk_json_find(j, 0, "normalizer")) == DK_JSON_OBJECT &&
             !dk_hf__is(j, dk_json_find(j, 0, "normalizer"), "type", "NFC"))
      /* Qwen's NFC is bpe.h's documented assumption about its input; any
       * other normalizer would change the ids without a word */
      snprintf(why, sizeof why, "tokenizer.json: a byte-level BPE with a '%.20s' normalizer, which devkit does not apply",
               dk_json_string(j, dk_json_find(j, dk_json_find(j, 0, "normalizer"), "type"), NULL) ?
               dk_json_string(j, dk_json_find(j, dk_json_find(j, 0, "normalizer"), "type"), NULL) : "?");
    else if (!spm && !pre)
      snprintf(why, sizeof why, "tokenizer.json: a pre-tokenizer devkit does not recognize (it knows Llama 3's, Qwen2's, "
               "SmolLM2's and GPT-2's)");
  }
  if (why[0]) { dk_json_free(j); return dk_hf__meta_str(f, b, "tokenizer.devkit.unsupported", why, strlen(why)); }
  /* ids: the vocabulary's and the added tokens' */
  for (e = dk_json_first(j, vocab); e >= 0; e = dk_json_next(j, e)) {
    double id = 0;
    if (!dk_json_number(j, e, &id) || id != floor(id) || id < 0 || id >= (1 << 24)) {
      s = dk_set_error(DK_ERR_FORMAT, "tokenizer.json: token '%.60s' has no id in 0..2^24", dk_json_key(j, e));
      goto done;
    }
    if ((int32_t)id >= n) n = (int32_t)id + 1;
  }
  added = dk_json_find(j, 0, "added_tokens");
  for (e = dk_json_first(j, added); e >= 0; e = dk_json_next(j, e)) {
    double id = -1;
    if (!dk_json_number(j, dk_json_find(j, e, "id"), &id) || id != floor(id) || id < 0 || id >= (1 << 24) ||
        !dk_json_string(j, dk_json_find(j, e, "content"), NULL)) {
      s = dk_set_error(DK_ERR_FORMAT, "tokenizer.json: an added token without an id in 0..2^24 or its content");
      goto done;
    }
    if ((int32_t)id >= n) n = (int32_t)id + 1;
  }
  /* ids are dense (a few holes at most): a file that claims more costs no
   * more memory than its entries */
  if ((int64_t)n > (int64_t)dk_json_count(j, vocab) + dk_json_count(j, added) + vocab_rows + 1024) {
    s = dk_set_error(DK_ERR_FORMAT, "tokenizer.json: ids up to %d for %d tokens", n - 1,
                     dk_json_count(j, vocab) + dk_json_count(j, added));
    goto done;
  }
  /* the embedding may have more rows than the tokenizer has ids (Qwen):
   * llama.cpp's converter fills them with [PADn], and so does this */
  if (vocab_rows > n) n = vocab_rows;
  t.n = n;
  t.text = (const char **)calloc((size_t)n, sizeof *t.text);
  t.len = (size_t *)calloc((size_t)n, sizeof *t.len);
  t.type = (uint8_t *)calloc((size_t)n, 1);
  if (!t.text || !t.len || !t.type) { s = dk_set_error(DK_ERR_OUT_OF_MEMORY, "no host memory for %d tokens", n); goto done; }
  for (e = dk_json_first(j, vocab); e >= 0; e = dk_json_next(j, e)) {
    double id = 0;
    dk_json_number(j, e, &id);
    t.text[(int32_t)id] = dk_json_key(j, e);
    t.len[(int32_t)id] = strlen(dk_json_key(j, e));
    t.type[(int32_t)id] = DK_TOKEN_NORMAL;
  }
  for (e = dk_json_first(j, added); e >= 0; e = dk_json_next(j, e)) {
    double id = 0;
    int sp = 0;
    size_t len = 0;
    dk_json_number(j, dk_json_find(j, e, "id"), &id);
    dk_json_bool(j, dk_json_find(j, e, "special"), &sp);
    t.text[(int32_t)id] = dk_json_string(j, dk_json_find(j, e, "content"), &len);
    t.len[(int32_t)id] = len;
    t.type[(int32_t)id] = sp ? DK_TOKEN_CONTROL : DK_TOKEN_USER;
  }
  if (spm) {
    /* the bytes' own tokens, <0x00>..<0xFF>, and the unknown token */
    for (i = 0; i < n; i++)
      if (t.text[i] && t.len[i] == 6 && !memcmp(t.text[i], "<0x", 3) && t.text[i][5] == '>' &&
          isxdigit((unsigned char)t.text[i][3]) &&
          isxdigit((unsigned char)t.text[i][4]))
        t.type[i] = DK_TOKEN_BYTE;
    unk = dk_hf__id_of(&t, dk_json_string(j, dk_json_find(j, model, "unk_token"), NULL));
    if (unk >= 0) t.type[unk] = DK_TOKEN_UNKNOWN;
  }
  dk_hf__u32(b, DK_META_STRING);
  dk_hf__u64(b, (uint64_t)n);
  for (i = 0; i < n; i++) {
    if (t.text[i]) { dk_hf__str(b, t.text[i], t.len[i]); continue; }
    snprintf(path, sizeof path, "[PAD%d]", (int)i);
    dk_hf__str(b, path, strlen(path));
    t.type[i] = DK_TOKEN_UNUSED;
  }
  if ((s = dk_hf__meta(f, "tokenizer.ggml.tokens", DK_META_ARRAY, b))) goto done;
  dk_hf__u32(b, DK_META_I32);
  dk_hf__u64(b, (uint64_t)n);
  for (i = 0; i < n; i++) dk_hf__u32(b, t.type[i]);
  if ((s = dk_hf__meta(f, "tokenizer.ggml.token_type", DK_META_ARRAY, b))) goto done;
  if (spm) {
    if ((s = dk_hf__spm_scores(f, b, j, merges, &t)) || (s = dk_hf__meta_str(f, b, "tokenizer.ggml.model", "llama", 5)) ||
        (s = dk_hf__meta_bool(f, b, "tokenizer.ggml.add_space_prefix", prefix)))
      goto done;
  } else {
    /* merges as GGUF has them, "a b" */
    dk_hf__u32(b, DK_META_STRING);
    dk_hf__u64(b, (uint64_t)dk_json_count(j, merges));
    for (e = dk_json_first(j, merges); e >= 0; e = dk_json_next(j, e)) {
      const char *a, *c;
      size_t la, lc;
      if ((s = dk_hf__merge(j, e, &a, &la, &c, &lc))) goto done;
      dk_hf__u64(b, la + 1 + lc);
      dk_hf__put(b, a, la);
      dk_hf__put(b, " ", 1);
      dk_hf__put(b, c, lc);
    }
    if ((s = dk_hf__meta(f, "tokenizer.ggml.merges", DK_META_ARRAY, b)) ||
        (s = dk_hf__meta_str(f, b, "tokenizer.ggml.model", "gpt2", 4)) ||
        (s = dk_hf__meta_str(f, b, "tokenizer.ggml.pre", pre, strlen(pre))))
      goto done;
  }
  /* special ids: tokenizer_config.json's, BOS from the post-processor's template */
  snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
  if ((fp = fopen(path, "rb"))) { fclose(fp); if ((s = dk_json_load(path, &tc))) goto done; }
  if (tc) {
    bos = dk_hf__id_of(&t, dk_hf__tok_text(tc, dk_json_find(tc, 0, "bos_token")));
    eos = dk_hf__id_of(&t, dk_hf__tok_text(tc, dk_json_find(tc, 0, "eos_token")));
    pad = dk_hf__id_of(&t, dk_hf__tok_text(tc, dk_json_find(tc, 0, "pad_token")));
    if ((r = dk_hf__id_of(&t, dk_hf__tok_text(tc, dk_json_find(tc, 0, "unk_token")))) >= 0) unk = r;
  }
  {
    int add_bos = 0, have = tc && dk_json_bool(tc, dk_json_find(tc, 0, "add_bos_token"), &add_bos);
    pp = dk_json_find(j, 0, "post_processor");
    /* Llama 3.1's: a Sequence of ByteLevel and the TemplateProcessing */
    if (dk_hf__is(j, pp, "type", "Sequence")) {
      for (e = dk_json_first(j, dk_json_find(j, pp, "processors")); e >= 0; e = dk_json_next(j, e))
        if (dk_hf__is(j, e, "type", "TemplateProcessing")) break;
      pp = e;
    }
    /* a TemplateProcessing whose single sequence starts with a special token adds it (Llama 3's BOS) */
    if (dk_hf__is(j, pp, "type", "TemplateProcessing")) {
      int first = dk_json_first(j, dk_json_find(j, pp, "single"));
      const char *sp = dk_json_string(j, dk_json_find(j, dk_json_find(j, first, "SpecialToken"), "id"), NULL);
      if (sp && !have) {
        add_bos = 1;
        have = 1;
        if (bos < 0) bos = dk_hf__id_of(&t, sp);
      }
    }
    if ((s = dk_hf__meta_bool(f, b, "tokenizer.ggml.add_bos_token", have && add_bos))) goto done;
  }
  if ((bos >= 0 && (s = dk_hf__meta_u32(f, b, "tokenizer.ggml.bos_token_id", (uint32_t)bos))) ||
      (eos >= 0 && (s = dk_hf__meta_u32(f, b, "tokenizer.ggml.eos_token_id", (uint32_t)eos))) ||
      (pad >= 0 && (s = dk_hf__meta_u32(f, b, "tokenizer.ggml.padding_token_id", (uint32_t)pad))) ||
      (unk >= 0 && (s = dk_hf__meta_u32(f, b, "tokenizer.ggml.unknown_token_id", (uint32_t)unk))))
    goto done;
  /* the chat template: tokenizer_config.json's (a string, or a list of named
   * ones: "default"), else chat_template.jinja, where newer transformers put it */
  {
    int ct = tc ? dk_json_find(tc, 0, "chat_template") : -1;
    size_t len = 0;
    const char *tx = dk_json_string(tc, ct, &len);
    for (e = dk_json_first(tc, ct); !tx && e >= 0; e = dk_json_next(tc, e))
      if (dk_hf__is(tc, e, "name", "default")) tx = dk_json_string(tc, dk_json_find(tc, e, "template"), &len);
    if (tx) {
      s = dk_hf__meta_str(f, b, "tokenizer.chat_template", tx, len);
    } else {
      snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
      if ((fp = fopen(path, "rb"))) {
        char *text = (char *)malloc(1 << 20);
        len = text ? fread(text, 1, 1 << 20, fp) : 0;
        fclose(fp);
        if (text && len < (1 << 20)) s = dk_hf__meta_str(f, b, "tokenizer.chat_template", text, len);
        free(text);
      }
    }
  }
done:
  free(t.text);
  free(t.len);
  free(t.type);
  dk_json_free(tc);
  dk_json_free(j);
  return s;
}

/* ---- opening -------------------------------------------------------------------- */

static dk_status dk_hf__open(const char *dir, int with_tokenizer, dk_file **out) {
  char path[4400], name[256];
  dk_json *j;
  dk_file *f;
  dk_hf__buf b;
  const dk_hf__archrow *row;
  dk_status s;
  int tied = -1, rows = 0, c = 0;
  const char *e;
  size_t n;
  if (!out) return dk_set_error(DK_ERR_INVALID, "dk_hf_open: out is NULL");
  *out = NULL;
  if (!dir) return dk_set_error(DK_ERR_INVALID, "dk_hf_open: dir is NULL");
  /* the directory's own name names the view in messages */
  n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  for (e = dir + n; e > dir && e[-1] != '/'; e--) {}
  snprintf(name, sizeof name, "%.*s", (int)(dir + n - e), e);
  snprintf(path, sizeof path, "%s/config.json", dir);
  {
    FILE *fp = fopen(path, "rb");
    if (!fp)
      return dk_set_error(DK_ERR_IO, "%s: a directory without config.json; a Hugging Face model directory holds config.json, "
                          "model.safetensors (or its shards) and tokenizer.json", dir);
    fclose(fp);
  }
  if ((s = dk_json_load(path, &j))) return s;
  if ((s = dk_hf__view_new(name, DK_FILE_HF, &f))) { dk_json_free(j); return s; }
  memset(&b, 0, sizeof b);
  s = dk_hf__config(f, &b, j, &row, &c);
  /* tied: as config.json says (absent: transformers' default, tied), and
   * always when there is no lm_head */
  if (!s && !dk_json_bool(j, dk_json_find(j, c, "tie_word_embeddings"), &tied) &&
      !dk_json_bool(j, dk_json_find(j, 0, "tie_word_embeddings"), &tied))
    tied = 1;
  dk_json_free(j);
  if (!s) s = dk_hf__weights(f, dir, row->arch, tied);
  if (!s) {
    int64_t ti = dk_file_tensor_find(f, "token_embd.weight");
    if (ti >= 0 && f->tensors[ti].ndim == 2 && f->tensors[ti].shape[0] < (1 << 24)) rows = (int)f->tensors[ti].shape[0];
    if (with_tokenizer) s = dk_hf__tokenizer(f, &b, dir, rows);
  }
  free(b.p);
  if (s) { dk_file_close(f); return s; }
  *out = f;
  return DK_OK;
}

DK_MODELS_API dk_status dk_hf_open(const char *dir, dk_file **out) { return dk_hf__open(dir, 1, out); }
DK_MODELS_API dk_status dk_hf_open_weights(const char *dir, dk_file **out) { return dk_hf__open(dir, 0, out); }
DK_MODELS_API dk_status dk_model_open(const char *path, dk_file **out) {
  return dk_hf_is_dir(path) ? dk_hf_open(path, out) : dk_file_open(path, out);
}

#endif /* DEVKIT_MODELS_IMPLEMENTATION */
