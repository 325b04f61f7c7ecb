/* models/bert.h — BERT-style sentence embeddings (all-MiniLM, bge, e5 ...) on
 * devkit devices, written only against devkit's public API.
 *
 * In exactly one file:
 *     #define DEVKIT_MODELS_IMPLEMENTATION
 *     #include "models/bert.h"
 *
 *     dk_bert_model *m;
 *     dk_bert_load("all-MiniLM-L6-v2/", NULL, &m);        // or a .gguf file
 *     const char *texts[2] = {"a cat", "a dog"};
 *     float *e = malloc(sizeof(float) * 2 * dk_bert_dim(m));
 *     dk_bert_embed(m, texts, 2, e);                      // two unit vectors
 *
 * The forward pass (post-norm, as BERT):
 *   x = LayerNorm(tok_embd[ids] + pos_embd[0..len) + token_types[0])
 *   per layer: q, k, v = x·Wq + bq, x·Wk + bk, x·Wv + bv
 *              a = softmax(q·kᵀ / sqrt(head_dim))·v       (per sentence, every head)
 *              x = LayerNorm(x + a·Wo + bo)
 *              x = LayerNorm(x + gelu(x·Wup + bup)·Wdown + bdown)   (exact erf GELU)
 *   pooled = mean of x over the sentence's tokens, or its first ([CLS]) row;
 *   then divided by its L2 norm (unless options say not to).
 *
 * Batching and the padding mask: the sentences of a batch have different
 * lengths. Their real tokens are packed one after another into one
 * [N_tokens, dim] activation, so every linear, norm and GELU runs once over
 * all of them and no padding token is ever computed. Attention runs per
 * sentence on narrowed views of q, k and v (rows [start, start+len)), with
 * no causal mask: a token sees exactly the tokens of its own sentence. That
 * IS the padding mask (what transformers does with an attention mask of
 * zeros at padded positions), with nothing padded. Mean pooling likewise
 * averages the sentence's own rows only.
 *
 * Files:
 *   - GGUF with llama.cpp's `bert` architecture: bert.embedding_length,
 *     bert.block_count, bert.attention.head_count,
 *     bert.attention.layer_norm_epsilon, bert.feed_forward_length,
 *     bert.context_length, bert.pooling_type (1 mean, 2 cls; absent: mean);
 *     tensors token_embd, position_embd, token_types, token_embd_norm
 *     (weight, bias), blk.N.attn_{q,k,v,output} (weight, bias),
 *     blk.N.attn_output_norm, blk.N.ffn_up, blk.N.ffn_down,
 *     blk.N.layer_output_norm. The vocabulary is tokenizer.ggml.* (models/wordpiece.h).
 *   - A Hugging Face directory: config.json (hidden_size,
 *     num_hidden_layers, num_attention_heads, intermediate_size,
 *     max_position_embeddings, type_vocab_size, vocab_size, layer_norm_eps,
 *     hidden_act gelu), model.safetensors (BertModel names, an optional
 *     "bert." prefix), the tokenizer (tokenizer.json or vocab.txt), and
 *     sentence-transformers' 1_Pooling/config.json for the pooling (absent:
 *     mean) and sentence_bert_config.json's max_seq_length for truncation.
 * Weights: f32, f16, bf16 and the block formats dk_linear takes; norms and biases float.
 *
 * Devices: as models/llama.h, with the same options and messages
 * (dk_llm_place): "cpu:0", "cuda:0,cuda:1" (layers in proportion to free
 * memory), "cpu:0=0-2,vulkan:0=3-5". The embeddings sit on the first layer's
 * device, pooling runs on the last one's; the hidden state crosses devices
 * with dk_copy_to between consecutive layers on different devices, nowhere else.
 */
#ifndef DK_MODELS_BERT_H
#define DK_MODELS_BERT_H

#include "file.h"
#include "llama.h"       /* dk_llm_place: one set of device rules for every model */
#include "wordpiece.h"
#include "json.h"

typedef enum { DK_BERT_POOL_MEAN = 1, DK_BERT_POOL_CLS = 2 } dk_bert_pooling;

typedef struct {
  int vocab, dim, n_layers, n_heads, head_dim, ffn, max_pos, n_types;
  float eps;
  int pooling;             /* dk_bert_pooling */
  int max_seq;             /* sentence-transformers' max_seq_length (tokens per sentence), 0: none given */
} dk_bert_config;

typedef struct {
  const char *devices;     /* as dk_llm_options.devices; NULL: dk_device_best() */
  const int *split;        /* layers per device, as dk_llm_options.split */
  int n_split;
  int allow_same_gpu;
  int pooling;             /* 0: the model's; DK_BERT_POOL_MEAN or DK_BERT_POOL_CLS */
  int no_normalize;        /* 1: leave the pooled vectors as they are */
  int max_tokens;          /* per sentence with [CLS] and [SEP]; 0: max_seq_length of
                              sentence_bert_config.json, else the model's positions */
} dk_bert_options;

typedef struct {
  dk_device dev;
  dk_tensor *wq, *bq, *wk, *bk, *wv, *bv, *wo, *bo, *attn_norm_w, *attn_norm_b;
  dk_tensor *up, *bup, *down, *bdown, *out_norm_w, *out_norm_b;
} dk_bert_layer;

typedef struct {
  dk_bert_config c;
  char name[256];
  dk_device *layer_dev;
  dk_bert_layer *layers;
  dk_tensor *tok_embd, *pos_embd, *type_embd, *embd_norm_w, *embd_norm_b;
  dk_wordpiece *tok;
  int normalize, max_tokens;
  double load_seconds;
  uint64_t weight_bytes;
} dk_bert_model;

/* A .gguf file or a Hugging Face directory (o may be NULL). */
dk_status dk_bert_load(const char *path, const dk_bert_options *o, dk_bert_model **out);
void      dk_bert_free(dk_bert_model *m);
int       dk_bert_dim(const dk_bert_model *m);
/* Every weight against its layer's device: DK_OK or dk_check_placement's message. */
dk_status dk_bert_check_placement(const dk_bert_model *m);
/* n texts: tokenized (truncated to max_tokens), embedded in one batch;
 * out receives n * dim floats, row by row. */
dk_status dk_bert_embed(dk_bert_model *m, const char *const *texts, int n, float *out);
/* The same from token ids: n sentences, packed (sentence i's lens[i] ids
 * after the ones before it), each with its [CLS] and [SEP]. */
dk_status dk_bert_embed_ids(dk_bert_model *m, const int32_t *ids, const int *lens, int n, float *out);

#endif /* DK_MODELS_BERT_H */

/* ======================================================================== */
#if defined(DEVKIT_MODELS_IMPLEMENTATION) && !defined(DK_MODELS_BERT_IMPL)
#define DK_MODELS_BERT_IMPL

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define DK_BERT_TRY(expr) do { dk_status dk_bert_s_ = (expr); if (dk_bert_s_ != DK_OK) return dk_bert_s_; } while (0)

/* ---- configuration ------------------------------------------------------ */

/* rows of a 2-D tensor of the file, or -1 */
static int dk_bert__rows(const dk_file *f, const char *name) {
  int64_t i = dk_file_tensor_find(f, name);
  dk_file_tensor t;
  if (i < 0 || dk_file_tensor_at(f, i, &t) != DK_OK || t.ndim != 2) return -1;
  return (int)t.shape[0];
}

static dk_status dk_bert__gguf_config(const dk_file *f, dk_bert_config *c) {
  const char *arch;
  size_t alen;
  double eps = 1e-12;
  dk_meta m;
  if (dk_file_meta_string(f, "general.architecture", &arch, &alen) != DK_OK) return DK_ERR_FORMAT;
  if (alen != 4 || memcmp(arch, "bert", 4))
    return dk_set_error(DK_ERR_UNSUPPORTED, "%s: architecture '%.*s'; this runner runs 'bert' GGUF files", dk_file_name(f),
                        (int)(alen > 40 ? 40 : alen), arch);
  DK_BERT_TRY(dk_llm_meta_int(f, "bert.embedding_length", 1, 0, &c->dim));
  DK_BERT_TRY(dk_llm_meta_int(f, "bert.block_count", 1, 0, &c->n_layers));
  DK_BERT_TRY(dk_llm_meta_int(f, "bert.attention.head_count", 1, 0, &c->n_heads));
  DK_BERT_TRY(dk_llm_meta_int(f, "bert.feed_forward_length", 0, -1, &c->ffn));
  DK_BERT_TRY(dk_llm_meta_int(f, "bert.context_length", 0, -1, &c->max_pos));
  DK_BERT_TRY(dk_llm_meta_int(f, "bert.pooling_type", 0, DK_BERT_POOL_MEAN, &c->pooling));
  if (dk_file_meta_find(f, "bert.attention.layer_norm_epsilon", &m) && dk_meta_float(&m, &eps) != DK_OK)
    return dk_set_error(DK_ERR_FORMAT, "%s: bert.attention.layer_norm_epsilon is not a number", dk_file_name(f));
  c->eps = (float)eps;
  c->vocab = dk_bert__rows(f, "token_embd.weight");
  if (c->max_pos < 0) c->max_pos = dk_bert__rows(f, "position_embd.weight");
  if (c->ffn < 0) c->ffn = dk_bert__rows(f, "blk.0.ffn_up.weight");
  c->n_types = dk_bert__rows(f, "token_types.weight");
  return DK_OK;
}

static dk_status dk_bert__json_int(const dk_json *j, const char *file, const char *key, int required, int def, int *out) {
  double v;
  int node = dk_json_find(j, 0, key);
  if (node < 0) {
    if (required) return dk_set_error(DK_ERR_FORMAT, "%s: '%s' is missing", file, key);
    *out = def;
    return DK_OK;
  }
  if (!dk_json_number(j, node, &v) || v != (double)(int)v || v < 0 || v > (1 << 30))
    return dk_set_error(DK_ERR_FORMAT, "%s: '%s' is not a count", file, key);
  *out = (int)v;
  return DK_OK;
}

static dk_status dk_bert__hf_config(const char *dir, dk_bert_config *c) {
  char path[4096];
  dk_json *j, *p;
  dk_status s;
  double eps = 1e-12;
  const char *act;
  int b;
  snprintf(path, sizeof path, "%s/config.json", dir);
  if ((s = dk_json_load(path, &j))) return s;
  if ((s = dk_bert__json_int(j, "config.json", "hidden_size", 1, 0, &c->dim)) ||
      (s = dk_bert__json_int(j, "config.json", "num_hidden_layers", 1, 0, &c->n_layers)) ||
      (s = dk_bert__json_int(j, "config.json", "num_attention_heads", 1, 0, &c->n_heads)) ||
      (s = dk_bert__json_int(j, "config.json", "intermediate_size", 1, 0, &c->ffn)) ||
      (s = dk_bert__json_int(j, "config.json", "max_position_embeddings", 1, 0, &c->max_pos)) ||
      (s = dk_bert__json_int(j, "config.json", "vocab_size", 1, 0, &c->vocab)) ||
      (s = dk_bert__json_int(j, "config.json", "type_vocab_size", 0, 2, &c->n_types))) {
    dk_json_free(j);
    return s;
  }
  if (dk_json_find(j, 0, "layer_norm_eps") >= 0 && !dk_json_number(j, dk_json_find(j, 0, "layer_norm_eps"), &eps)) {
    dk_json_free(j);
    return dk_set_error(DK_ERR_FORMAT, "config.json: 'layer_norm_eps' is not a number");
  }
  c->eps = (float)eps;
  act = dk_json_string(j, dk_json_find(j, 0, "hidden_act"), NULL);
  if (act && strcmp(act, "gelu")) {
    s = dk_set_error(DK_ERR_UNSUPPORTED, "config.json: hidden_act '%s'; this runner runs 'gelu' (erf) BERT models", act);
    dk_json_free(j);
    return s;
  }
  act = dk_json_string(j, dk_json_find(j, 0, "position_embedding_type"), NULL);
  if (act && strcmp(act, "absolute")) {
    s = dk_set_error(DK_ERR_UNSUPPORTED, "config.json: position_embedding_type '%s'; only 'absolute' is supported", act);
    dk_json_free(j);
    return s;
  }
  dk_json_free(j);
  c->pooling = DK_BERT_POOL_MEAN;
  /* sentence-transformers truncates to its own max_seq_length (all-MiniLM-L6-v2:
   * 256 of 512 positions) */
  snprintf(path, sizeof path, "%s/sentence_bert_config.json", dir);
  {
    FILE *f = fopen(path, "rb");
    if (f) {
      fclose(f);
      if ((s = dk_json_load(path, &p))) return s;
      s = dk_bert__json_int(p, "sentence_bert_config.json", "max_seq_length", 0, 0, &c->max_seq);
      dk_json_free(p);
      if (s) return s;
    }
  }
  snprintf(path, sizeof path, "%s/1_Pooling/config.json", dir);
  {
    FILE *f = fopen(path, "rb");
    if (f) {
      fclose(f);
      if ((s = dk_json_load(path, &p))) return s;
      if (dk_json_bool(p, dk_json_find(p, 0, "pooling_mode_cls_token"), &b) && b) c->pooling = DK_BERT_POOL_CLS;
      if (dk_json_bool(p, dk_json_find(p, 0, "pooling_mode_mean_tokens"), &b) && b) c->pooling = DK_BERT_POOL_MEAN;
      dk_json_free(p);
    }
  }
  return DK_OK;
}

static dk_status dk_bert__check_config(const char *name, dk_bert_config *c) {
  if (c->dim <= 0 || c->n_layers <= 0 || c->n_heads <= 0 || c->ffn <= 0 || c->max_pos <= 0 || c->vocab <= 0 || c->n_types <= 0)
    return dk_set_error(DK_ERR_FORMAT,
                        "%s: dim %d, layers %d, heads %d, feed-forward %d, positions %d, vocab %d, token types %d: all must be > 0",
                        name, c->dim, c->n_layers, c->n_heads, c->ffn, c->max_pos, c->vocab, c->n_types);
  if (c->dim % c->n_heads) return dk_set_error(DK_ERR_FORMAT, "%s: dim %d is not a multiple of %d heads", name, c->dim, c->n_heads);
  if (c->pooling != DK_BERT_POOL_MEAN && c->pooling != DK_BERT_POOL_CLS)
    return dk_set_error(DK_ERR_UNSUPPORTED, "%s: pooling type %d; mean (1) and cls (2) are supported", name, c->pooling);
  if (!(c->eps >= 0)) return dk_set_error(DK_ERR_FORMAT, "%s: layer norm epsilon %g", name, (double)c->eps);
  c->head_dim = c->dim / c->n_heads;
  return DK_OK;
}

/* ---- loading -------------------------------------------------------------- */

/* the file's names for each weight: GGUF (llama.cpp) and BertModel's */
enum { DK_BERT__GGUF = 0, DK_BERT__HF = 1 };


/* a float 1-D weight is used in f32 (layernorm and bias arguments share the
 * activations' dtype): an f16 one from a GGUF is converted on its device */
static dk_status dk_bert__f32(dk_tensor **t) {
  dk_tensor *c;
  dk_status s;
  if (dk_tensor_dtype(*t) == DK_F32) return DK_OK;
  if ((s = dk_tensor_new(dk_tensor_device(*t), DK_F32, dk_tensor_ndim(*t), dk_tensor_shape(*t), dk_tensor_name(*t), &c))) return s;
  dk_tensor_set_site(c, dk_tensor_site(*t));
  if ((s = dk_copy(c, *t))) { dk_tensor_free(c); return s; }
  dk_tensor_free(*t);
  *t = c;
  return DK_OK;
}

static dk_status dk_bert__load_weights(const dk_file *f, int kind, const char *prefix, dk_bert_model *m) {
  const dk_bert_config *c = &m->c;
  uint64_t *wb = &m->weight_bytes;
  dk_device first = m->layer_dev[0];
  char nm[256];
  int l;
#define DK_BERT_W(dst, nd, a, b, dev, gg, hf)                                                          \
  do {                                                                                                \
    if (kind == DK_BERT__GGUF) snprintf(nm, sizeof nm, "%s", gg);                                    \
    else snprintf(nm, sizeof nm, "%s%s", prefix, hf);                                                \
    DK_BERT_TRY(dk_llm_weight(f, nm, dev, nd, a, b, &(dst), wb));                                  \
    if ((nd) == 1) DK_BERT_TRY(dk_bert__f32(&(dst)));                                                \
  } while (0)
  DK_BERT_W(m->tok_embd, 2, c->vocab, c->dim, first, "token_embd.weight", "embeddings.word_embeddings.weight");
  DK_BERT_W(m->pos_embd, 2, c->max_pos, c->dim, first, "position_embd.weight", "embeddings.position_embeddings.weight");
  DK_BERT_W(m->type_embd, 2, c->n_types, c->dim, first, "token_types.weight", "embeddings.token_type_embeddings.weight");
  DK_BERT_W(m->embd_norm_w, 1, c->dim, 0, first, "token_embd_norm.weight", "embeddings.LayerNorm.weight");
  DK_BERT_W(m->embd_norm_b, 1, c->dim, 0, first, "token_embd_norm.bias", "embeddings.LayerNorm.bias");
  for (l = 0; l < c->n_layers; l++) {
    dk_bert_layer *L = &m->layers[l];
    char g[96], h[128];
    L->dev = m->layer_dev[l];
#define DK_BERT_LW(dst, nd, a, b, gg, hf)                                       \
    snprintf(g, sizeof g, "blk.%d.%s", l, gg);                                \
    snprintf(h, sizeof h, "encoder.layer.%d.%s", l, hf);                      \
    DK_BERT_W(dst, nd, a, b, L->dev, g, h);
    DK_BERT_LW(L->wq, 2, c->dim, c->dim, "attn_q.weight", "attention.self.query.weight")
    DK_BERT_LW(L->bq, 1, c->dim, 0, "attn_q.bias", "attention.self.query.bias")
    DK_BERT_LW(L->wk, 2, c->dim, c->dim, "attn_k.weight", "attention.self.key.weight")
    DK_BERT_LW(L->bk, 1, c->dim, 0, "attn_k.bias", "attention.self.key.bias")
    DK_BERT_LW(L->wv, 2, c->dim, c->dim, "attn_v.weight", "attention.self.value.weight")
    DK_BERT_LW(L->bv, 1, c->dim, 0, "attn_v.bias", "attention.self.value.bias")
    DK_BERT_LW(L->wo, 2, c->dim, c->dim, "attn_output.weight", "attention.output.dense.weight")
    DK_BERT_LW(L->bo, 1, c->dim, 0, "attn_output.bias", "attention.output.dense.bias")
    DK_BERT_LW(L->attn_norm_w, 1, c->dim, 0, "attn_output_norm.weight", "attention.output.LayerNorm.weight")
    DK_BERT_LW(L->attn_norm_b, 1, c->dim, 0, "attn_output_norm.bias", "attention.output.LayerNorm.bias")
    DK_BERT_LW(L->up, 2, c->ffn, c->dim, "ffn_up.weight", "intermediate.dense.weight")
    DK_BERT_LW(L->bup, 1, c->ffn, 0, "ffn_up.bias", "intermediate.dense.bias")
    DK_BERT_LW(L->down, 2, c->dim, c->ffn, "ffn_down.weight", "output.dense.weight")
    DK_BERT_LW(L->bdown, 1, c->dim, 0, "ffn_down.bias", "output.dense.bias")
    DK_BERT_LW(L->out_norm_w, 1, c->dim, 0, "layer_output_norm.weight", "output.LayerNorm.weight")
    DK_BERT_LW(L->out_norm_b, 1, c->dim, 0, "layer_output_norm.bias", "output.LayerNorm.bias")
#undef DK_BERT_LW
  }
#undef DK_BERT_W
  return DK_OK;
}

void dk_bert_free(dk_bert_model *m) {
  int l;
  if (!m) return;
  if (m->layers)
    for (l = 0; l < m->c.n_layers; l++) {
      dk_bert_layer *L = &m->layers[l];
      dk_tensor *all[16];
      int i;
      all[0] = L->wq; all[1] = L->bq; all[2] = L->wk; all[3] = L->bk; all[4] = L->wv; all[5] = L->bv; all[6] = L->wo;
      all[7] = L->bo; all[8] = L->attn_norm_w; all[9] = L->attn_norm_b; all[10] = L->up; all[11] = L->bup;
      all[12] = L->down; all[13] = L->bdown; all[14] = L->out_norm_w; all[15] = L->out_norm_b;
      for (i = 0; i < 16; i++) dk_tensor_free(all[i]);
    }
  free(m->layers);
  free(m->layer_dev);
  dk_tensor_free(m->tok_embd); dk_tensor_free(m->pos_embd); dk_tensor_free(m->type_embd);
  dk_tensor_free(m->embd_norm_w); dk_tensor_free(m->embd_norm_b);
  dk_wordpiece_free(m->tok);
  free(m);
}

int dk_bert_dim(const dk_bert_model *m) { return m ? m->c.dim : 0; }


static dk_status dk_bert__place(const dk_bert_options *o, dk_bert_model *m) {
  dk_llm_options lo;
  memset(&lo, 0, sizeof lo);
  if (o) {
    lo.devices = o->devices;
    lo.split = o->split;
    lo.n_split = o->n_split;
    lo.allow_same_gpu = o->allow_same_gpu;
  }
  m->layer_dev = (dk_device *)calloc((size_t)m->c.n_layers, sizeof *m->layer_dev);
  m->layers = (dk_bert_layer *)calloc((size_t)m->c.n_layers, sizeof *m->layers);
  if (!m->layer_dev || !m->layers) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no host memory for %d layers", m->c.n_layers);
  return dk_llm_place(&lo, m->c.n_layers, m->layer_dev);
}

static dk_status dk_bert__load(const char *path, const dk_bert_options *o, dk_bert_model *m) {
  struct stat st;
  dk_file *f = NULL;
  dk_status s;
  char file[4096];
  const char *prefix = "";
  int kind;
  if (stat(path, &st) != 0) return dk_set_error(DK_ERR_IO, "%s: no such file or directory", path);
  if (S_ISDIR(st.st_mode)) {
    kind = DK_BERT__HF;
    if ((s = dk_bert__hf_config(path, &m->c))) return s;
    snprintf(file, sizeof file, "%s/model.safetensors", path);
    if ((s = dk_file_open(file, &f))) return s;
    if (dk_file_tensor_find(f, "embeddings.word_embeddings.weight") < 0 && dk_file_tensor_find(f, "bert.embeddings.word_embeddings.weight") >= 0)
      prefix = "bert.";
    if ((s = dk_wordpiece_load_dir(path, &m->tok))) { dk_file_close(f); return s; }
  } else {
    kind = DK_BERT__GGUF;
    if ((s = dk_file_open(path, &f))) return s;
    if (dk_file_format_of(f) != DK_FILE_GGUF) {
      s = dk_set_error(DK_ERR_UNSUPPORTED, "%s: a %s file; give a BERT GGUF file or a Hugging Face directory (config.json, "
                       "model.safetensors, vocab.txt or tokenizer.json)", dk_file_name(f), dk_file_format_name(dk_file_format_of(f)));
      dk_file_close(f);
      return s;
    }
    if ((s = dk_bert__gguf_config(f, &m->c)) || (s = dk_wordpiece_load_gguf(f, &m->tok))) { dk_file_close(f); return s; }
  }
  if (o && o->pooling) m->c.pooling = o->pooling;
  if ((s = dk_bert__check_config(dk_file_name(f), &m->c))) { dk_file_close(f); return s; }
  if (dk_wordpiece_vocab_size(m->tok) > m->c.vocab) {
    s = dk_set_error(DK_ERR_FORMAT, "%s: the tokenizer has %d tokens, the embedding table %d rows", dk_file_name(f),
                     (int)dk_wordpiece_vocab_size(m->tok), m->c.vocab);
    dk_file_close(f);
    return s;
  }
  m->normalize = !(o && o->no_normalize);
  m->max_tokens = o && o->max_tokens > 0 ? o->max_tokens : m->c.max_seq > 0 ? m->c.max_seq : m->c.max_pos;
  if (m->max_tokens > m->c.max_pos) m->max_tokens = m->c.max_pos;
  if (m->max_tokens < 2) m->max_tokens = 2;
  if ((s = dk_bert__place(o, m)) || (s = dk_bert__load_weights(f, kind, prefix, m))) { dk_file_close(f); return s; }
  dk_file_close(f);
  return DK_OK;
}

dk_status dk_bert_load(const char *path, const dk_bert_options *o, dk_bert_model **out) {
  dk_bert_model *m;
  dk_status s;
  const char *b;
  double t0 = dk_llm_now();
  int l;
  if (!path || !out) return dk_set_error(DK_ERR_INVALID, "dk_bert_load: NULL argument");
  *out = NULL;
  if (!(m = (dk_bert_model *)calloc(1, sizeof *m))) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no host memory for the model");
  b = strrchr(path, '/');
  snprintf(m->name, sizeof m->name, "%s", b && b[1] ? b + 1 : path);
  if ((s = dk_bert__load(path, o, m)) != DK_OK) { dk_bert_free(m); return s; }
  for (l = 0; l < m->c.n_layers; l++)
    if ((s = dk_sync(m->layer_dev[l]))) { dk_bert_free(m); return s; }
  m->load_seconds = dk_llm_now() - t0;
  *out = m;
  return DK_OK;
}

dk_status dk_bert_check_placement(const dk_bert_model *m) {
  int n = m->c.n_layers * 16 + 5, k = 0, l, i;
  dk_placement *p = (dk_placement *)malloc(sizeof *p * (size_t)n);
  dk_status s;
  if (!p) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no host memory");
#define DK_BERT_P(t, d) do { p[k].tensor = (t); p[k].expected = (d); k++; } while (0)
  DK_BERT_P(m->tok_embd, m->layer_dev[0]); DK_BERT_P(m->pos_embd, m->layer_dev[0]); DK_BERT_P(m->type_embd, m->layer_dev[0]);
  DK_BERT_P(m->embd_norm_w, m->layer_dev[0]); DK_BERT_P(m->embd_norm_b, m->layer_dev[0]);
  for (l = 0; l < m->c.n_layers; l++) {
    const dk_bert_layer *L = &m->layers[l];
    const dk_tensor *all[16];
    all[0] = L->wq; all[1] = L->bq; all[2] = L->wk; all[3] = L->bk; all[4] = L->wv; all[5] = L->bv; all[6] = L->wo;
    all[7] = L->bo; all[8] = L->attn_norm_w; all[9] = L->attn_norm_b; all[10] = L->up; all[11] = L->bup;
    all[12] = L->down; all[13] = L->bdown; all[14] = L->out_norm_w; all[15] = L->out_norm_b;
    for (i = 0; i < 16; i++) DK_BERT_P(all[i], m->layer_dev[l]);
  }
#undef DK_BERT_P
  s = dk_check_placement(p, k, NULL, NULL);
  free(p);
  return s;
}

/* ---- the forward pass ------------------------------------------------------ */

/* activations for N packed tokens on one device */
typedef struct {
  dk_device dev;
  dk_tensor *x, *q, *k, *v, *att, *o, *h, *q3, *k3, *v3, *att3;
} dk_bert__acts;

static void dk_bert__acts_free(dk_bert__acts *a) {
  dk_tensor *all[11];
  int i;
  all[0] = a->x; all[1] = a->q; all[2] = a->k; all[3] = a->v; all[4] = a->att; all[5] = a->o; all[6] = a->h;
  all[7] = a->q3; all[8] = a->k3; all[9] = a->v3; all[10] = a->att3;
  for (i = 0; i < 11; i++) dk_tensor_free(all[i]);
  memset(a, 0, sizeof *a);
}

static dk_status dk_bert__acts_new(const dk_bert_config *c, dk_device d, int64_t N, dk_bert__acts *a) {
  int64_t sx[2], sh[2], s3[3];
  dk_status s;
  memset(a, 0, sizeof *a);
  a->dev = d;
  sx[0] = N; sx[1] = c->dim;
  sh[0] = N; sh[1] = c->ffn;
  s3[0] = N; s3[1] = c->n_heads; s3[2] = c->head_dim;
  if ((s = dk_tensor_new(d, DK_F32, 2, sx, "x", &a->x)) || (s = dk_tensor_new(d, DK_F32, 2, sx, "q", &a->q)) ||
      (s = dk_tensor_new(d, DK_F32, 2, sx, "k", &a->k)) || (s = dk_tensor_new(d, DK_F32, 2, sx, "v", &a->v)) ||
      (s = dk_tensor_new(d, DK_F32, 2, sx, "attn", &a->att)) || (s = dk_tensor_new(d, DK_F32, 2, sx, "proj", &a->o)) ||
      (s = dk_tensor_new(d, DK_F32, 2, sh, "ffn_up", &a->h)) || (s = dk_reshape(a->q, 3, s3, &a->q3)) ||
      (s = dk_reshape(a->k, 3, s3, &a->k3)) || (s = dk_reshape(a->v, 3, s3, &a->v3)) ||
      (s = dk_reshape(a->att, 3, s3, &a->att3))) {
    dk_bert__acts_free(a);
    return s;
  }
  return DK_OK;
}

/* attention of each sentence over its own rows: the padding mask */
static dk_status dk_bert__attention(const dk_bert_config *c, dk_bert__acts *a, const int *lens, int n) {
  int64_t start = 0;
  int i;
  float scale = 1.0f / sqrtf((float)c->head_dim);
  for (i = 0; i < n; i++) {
    dk_tensor *q = NULL, *k = NULL, *v = NULL, *o = NULL;
    dk_status s;
    if ((s = dk_narrow(a->q3, 0, start, lens[i], &q)) == DK_OK && (s = dk_narrow(a->k3, 0, start, lens[i], &k)) == DK_OK &&
        (s = dk_narrow(a->v3, 0, start, lens[i], &v)) == DK_OK && (s = dk_narrow(a->att3, 0, start, lens[i], &o)) == DK_OK)
      s = dk_attention(o, q, k, v, scale, -1);
    dk_tensor_free(q); dk_tensor_free(k); dk_tensor_free(v); dk_tensor_free(o);
    if (s) return s;
    start += lens[i];
  }
  return DK_OK;
}

static dk_status dk_bert__layer(const dk_bert_config *c, const dk_bert_layer *L, dk_bert__acts *a, const int *lens, int n) {
  DK_BERT_TRY(dk_linear(a->q, a->x, L->wq, L->bq));
  DK_BERT_TRY(dk_linear(a->k, a->x, L->wk, L->bk));
  DK_BERT_TRY(dk_linear(a->v, a->x, L->wv, L->bv));
  DK_BERT_TRY(dk_bert__attention(c, a, lens, n));
  DK_BERT_TRY(dk_linear(a->o, a->att, L->wo, L->bo));
  DK_BERT_TRY(dk_add(a->o, a->o, a->x));
  DK_BERT_TRY(dk_layernorm(a->x, a->o, L->attn_norm_w, L->attn_norm_b, c->eps));
  DK_BERT_TRY(dk_linear(a->h, a->x, L->up, L->bup));
  DK_BERT_TRY(dk_gelu(a->h, a->h));
  DK_BERT_TRY(dk_linear(a->o, a->h, L->down, L->bdown));
  DK_BERT_TRY(dk_add(a->o, a->o, a->x));
  DK_BERT_TRY(dk_layernorm(a->x, a->o, L->out_norm_w, L->out_norm_b, c->eps));
  return DK_OK;
}

/* pooled [n, dim] on a's device from a->x: mean of each sentence's rows or its first row */
static dk_status dk_bert__pool(const dk_bert_model *m, dk_bert__acts *a, const int *lens, int n, dk_tensor *pooled) {
  int64_t start = 0;
  int i, axis0 = 0;
  for (i = 0; i < n; i++) {
    dk_tensor *rows = NULL, *dst = NULL;
    dk_status s;
    if ((s = dk_narrow(pooled, 0, i, 1, &dst)) == DK_OK) {
      if (m->c.pooling == DK_BERT_POOL_CLS) {
        if ((s = dk_narrow(a->x, 0, start, 1, &rows)) == DK_OK) s = dk_copy(dst, rows);
      } else if ((s = dk_narrow(a->x, 0, start, lens[i], &rows)) == DK_OK) {
        s = dk_reduce_mean(dst, rows, &axis0, 1, 1);
      }
    }
    dk_tensor_free(rows);
    dk_tensor_free(dst);
    if (s) return s;
    start += lens[i];
  }
  return DK_OK;
}

/* pooled /= max(||pooled||, 1e-12) per row, as torch's F.normalize */
static dk_status dk_bert__normalize(dk_tensor *pooled) {
  dk_tensor *sq = NULL, *ss = NULL;
  int64_t sh[2];
  int axis1 = 1;
  dk_status s;
  sh[0] = dk_tensor_dim(pooled, 0); sh[1] = 1;
  if ((s = dk_tensor_new(dk_tensor_device(pooled), DK_F32, 2, dk_tensor_shape(pooled), "squares", &sq)) == DK_OK &&
      (s = dk_tensor_new(dk_tensor_device(pooled), DK_F32, 2, sh, "norm", &ss)) == DK_OK &&
      (s = dk_mul(sq, pooled, pooled)) == DK_OK && (s = dk_reduce_sum(ss, sq, &axis1, 1, 1)) == DK_OK &&
      (s = dk_clamp(ss, ss, 1e-24f, INFINITY)) == DK_OK && (s = dk_rsqrt(ss, ss)) == DK_OK)
    s = dk_mul(pooled, pooled, ss);
  dk_tensor_free(sq);
  dk_tensor_free(ss);
  return s;
}

dk_status dk_bert_embed_ids(dk_bert_model *m, const int32_t *ids, const int *lens, int n, float *out) {
  const dk_bert_config *c = &m->c;
  dk_bert__acts acts[DK_LLM_MAX_DEVICES];
  int n_acts = 0, cur, i, l;
  int64_t N = 0, sh[2];
  int32_t *pos = NULL;
  dk_tensor *ids_t = NULL, *pos_t = NULL, *pe = NULL, *type0 = NULL, *pooled = NULL;
  dk_status s = DK_OK;
  if (!m || !ids || !lens || n <= 0 || !out) return dk_set_error(DK_ERR_INVALID, "dk_bert_embed_ids: bad argument (n %d)", n);
  for (i = 0; i < n; i++) {
    if (lens[i] < 1 || lens[i] > c->max_pos)
      return dk_set_error(DK_ERR_INVALID, "dk_bert_embed_ids: sentence %d has %d tokens; the model takes 1 to %d", i, lens[i],
                          c->max_pos);
    N += lens[i];
  }
  for (i = 0; i < N; i++)
    if (ids[i] < 0 || ids[i] >= c->vocab)
      return dk_set_error(DK_ERR_INVALID, "token id %d at position %d is outside the vocabulary (0..%d)", ids[i], i, c->vocab - 1);
  memset(acts, 0, sizeof acts);
  if (!(pos = (int32_t *)malloc(sizeof *pos * (size_t)N))) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no host memory");
  {
    int64_t k = 0;
    int j;
    for (i = 0; i < n; i++)
      for (j = 0; j < lens[i]; j++) pos[k++] = j;
  }
  /* one activation set per device the layers use, made in layer order */
  for (l = 0; l < c->n_layers && s == DK_OK; l++) {
    int found = 0;
    for (i = 0; i < n_acts; i++) found |= dk_device_equal(acts[i].dev, m->layer_dev[l]);
    if (!found) s = dk_bert__acts_new(c, m->layer_dev[l], N, &acts[n_acts++]);
  }
  if (s) goto done;
  cur = 0;
  sh[0] = N; sh[1] = c->dim;
  if ((s = dk_tensor_new(m->layer_dev[0], DK_I32, 1, &N, "token_ids", &ids_t)) ||
      (s = dk_tensor_new(m->layer_dev[0], DK_I32, 1, &N, "positions", &pos_t)) ||
      (s = dk_tensor_new(m->layer_dev[0], DK_F32, 2, sh, "pos_embd", &pe)) ||
      (s = dk_tensor_upload(ids_t, ids, sizeof *ids * (size_t)N)) || (s = dk_tensor_upload(pos_t, pos, sizeof *pos * (size_t)N)) ||
      (s = dk_embedding(acts[0].x, m->tok_embd, ids_t)) || (s = dk_embedding(pe, m->pos_embd, pos_t)) ||
      (s = dk_add(pe, pe, acts[0].x)) || (s = dk_narrow(m->type_embd, 0, 0, 1, &type0)))
    goto done;
  /* every token is of type 0 (one sentence each); the row is added broadcast */
  if (dk_tensor_dtype(type0) == DK_F32) s = dk_add(pe, pe, type0);
  else {
    dk_tensor *t32 = NULL;
    int64_t one[2];
    one[0] = 1; one[1] = c->dim;
    if ((s = dk_tensor_new(m->layer_dev[0], DK_F32, 2, one, "token_type_0", &t32)) == DK_OK && (s = dk_copy(t32, type0)) == DK_OK)
      s = dk_add(pe, pe, t32);
    dk_tensor_free(t32);
  }
  /* layernorm out of place: no op here reads and writes one tensor in a
   * reduction */
  if (s || (s = dk_layernorm(acts[0].x, pe, m->embd_norm_w, m->embd_norm_b, c->eps))) goto done;
  for (l = 0; l < c->n_layers; l++) {
    if (!dk_device_equal(acts[cur].dev, m->layer_dev[l])) {
      int next = 0;
      while (!dk_device_equal(acts[next].dev, m->layer_dev[l])) next++;
      /* the hidden state moves to the next layer's device: the one crossing */
      if ((s = dk_copy_to(acts[next].x, acts[cur].x))) goto done;
      cur = next;
    }
    if ((s = dk_bert__layer(c, &m->layers[l], &acts[cur], lens, n))) goto done;
  }
  sh[0] = n;
  if ((s = dk_tensor_new(acts[cur].dev, DK_F32, 2, sh, "embeddings", &pooled)) || (s = dk_bert__pool(m, &acts[cur], lens, n, pooled)))
    goto done;
  if (m->normalize && (s = dk_bert__normalize(pooled))) goto done;
  s = dk_tensor_download(pooled, out, sizeof *out * (size_t)n * (size_t)c->dim);
done:
  dk_tensor_free(ids_t); dk_tensor_free(pos_t); dk_tensor_free(pe); dk_tensor_free(type0); dk_tensor_free(pooled);
  for (i = 0; i < n_acts; i++) dk_bert__acts_free(&acts[i]);
  free(pos);
  return s;
}

dk_status dk_bert_embed(dk_bert_model *m, const char *const *texts, int n, float *out) {
  int32_t *ids = NULL;
  int *lens = NULL;
  dk_status s;
  if (!m || !texts || n <= 0 || !out) return dk_set_error(DK_ERR_INVALID, "dk_bert_embed: bad argument (n %d)", n);
  if ((s = dk_wordpiece_encode_batch(m->tok, texts, n, m->max_tokens, &ids, &lens))) return s;
  s = dk_bert_embed_ids(m, ids, lens, n, out);
  free(ids);
  free(lens);
  return s;
}

#endif /* DEVKIT_MODELS_IMPLEMENTATION */
