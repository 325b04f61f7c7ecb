/* tools/bert_gen.h — writes a BERT model with seeded random weights in the
 * two forms models/bert.h reads, into one directory:
 *   DIR/model.gguf          llama.cpp's `bert` names and keys, its vocabulary in
 *                           llama.cpp's phantom-space form (tokenizer.ggml.model "bert")
 *   DIR/model.safetensors   BertModel's names, + DIR/config.json, DIR/vocab.txt,
 *                           DIR/tokenizer_config.json (a Hugging Face directory)
 * Both hold the same f32 values: the weight w[i] of a tensor is a function of
 * (seed, tensor name, i) only, so any size is reproducible and tools/ref_bert.py
 * (float64 PyTorch) reads the safetensors side to make the reference.
 * Used by tests/test_bert.c and tools/make_bert.c. Needs gguf_writer.h first.
 */
#ifndef DK_BERT_GEN_H
#define DK_BERT_GEN_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
  int dim, layers, heads, ffn, max_pos, types;
  float eps;
  int pooling;            /* 1 mean, 2 cls */
  uint64_t seed;
} bg_config;

/* the vocabulary of the generated models: specials, then pieces enough to
 * spell any lower-case ASCII word (and a few whole words). "##s" is there
 * twice (ids 69 and 103), on purpose: a spelling twice maps to its last id,
 * as in Hugging Face's and llama.cpp's readers. */
static const char *const bg_words[] = {
  "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "!", "?", "'", "-", "(", ")", ":", ";",
  "0", "1", "2", "3", "4", "5", "6", "7", "8", "9",
  "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v", "w", "x", "y", "z",
  "##a", "##b", "##c", "##d", "##e", "##f", "##g", "##h", "##i", "##j", "##k", "##l", "##m", "##n", "##o", "##p", "##q",
  "##r", "##s", "##t", "##u", "##v", "##w", "##x", "##y", "##z", "##0", "##1", "##2", "##3", "##4", "##5", "##6", "##7",
  "##8", "##9", "the", "cat", "dog", "sat", "on", "mat", "is", "are", "run", "##ing", "##ed", "##er", "hello", "world",
  "embed", "##ding", "##s", "cafe", "sentence", "model", "device", "token", "##ization", "quick", "brown", "fox",
  "jump", "over", "lazy", "gpu", "cpu", "and", "of", "to", "in", "it", "this", "that", "with", "for",
};
#define BG_VOCAB ((int)(sizeof bg_words / sizeof bg_words[0]))

static uint64_t bg_mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static uint64_t bg_name_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  while (*s) h = (h ^ (uint8_t)*s++) * 1099511628211ull;
  return h;
}

/* uniform in [-1, 1), 24 bits: exact in f32 and float64 alike */
static float bg_uniform(uint64_t seed, const char *name, uint64_t i) {
  uint64_t r = bg_mix(seed ^ bg_name_hash(name) ^ bg_mix(i));
  return (float)((double)(r >> 40) / 8388608.0 - 1.0);
}

/* one tensor: name in each form, shape, and how its values are made */
typedef struct {
  char gguf[64], hf[96];
  int ndim;
  int64_t shape[2];
  float center, scale;    /* value = center + scale * uniform */
} bg_tensor;

static int bg_tensors(const bg_config *c, bg_tensor *t) {
  int n = 0, l;
  float sd = 1.0f / sqrtf((float)c->dim), sf = 1.0f / sqrtf((float)c->ffn);
#define BG_T(g, h, nd, a, b, ce, sc)                                                                  \
  do {                                                                                                \
    snprintf(t[n].gguf, sizeof t[n].gguf, "%s", g); snprintf(t[n].hf, sizeof t[n].hf, "%s", h);      \
    t[n].ndim = nd; t[n].shape[0] = a; t[n].shape[1] = b; t[n].center = ce; t[n].scale = sc; n++;    \
  } while (0)
  BG_T("token_embd.weight", "embeddings.word_embeddings.weight", 2, BG_VOCAB, c->dim, 0, 1);
  BG_T("position_embd.weight", "embeddings.position_embeddings.weight", 2, c->max_pos, c->dim, 0, 0.5f);
  BG_T("token_types.weight", "embeddings.token_type_embeddings.weight", 2, c->types, c->dim, 0, 0.5f);
  BG_T("token_embd_norm.weight", "embeddings.LayerNorm.weight", 1, c->dim, 0, 1, 0.2f);
  BG_T("token_embd_norm.bias", "embeddings.LayerNorm.bias", 1, c->dim, 0, 0, 0.2f);
  for (l = 0; l < c->layers; l++) {
    char g[64], h[96];
#define BG_L(gs, hs, nd, a, b, ce, sc)                                                 \
    snprintf(g, sizeof g, "blk.%d.%s", l, gs);                                        \
    snprintf(h, sizeof h, "encoder.layer.%d.%s", l, hs);                              \
    BG_T(g, h, nd, a, b, ce, sc);
    BG_L("attn_q.weight", "attention.self.query.weight", 2, c->dim, c->dim, 0, 2 * sd)
    BG_L("attn_q.bias", "attention.self.query.bias", 1, c->dim, 0, 0, 0.1f)
    BG_L("attn_k.weight", "attention.self.key.weight", 2, c->dim, c->dim, 0, 2 * sd)
    BG_L("attn_k.bias", "attention.self.key.bias", 1, c->dim, 0, 0, 0.1f)
    BG_L("attn_v.weight", "attention.self.value.weight", 2, c->dim, c->dim, 0, sd)
    BG_L("attn_v.bias", "attention.self.value.bias", 1, c->dim, 0, 0, 0.1f)
    BG_L("attn_output.weight", "attention.output.dense.weight", 2, c->dim, c->dim, 0, sd)
    BG_L("attn_output.bias", "attention.output.dense.bias", 1, c->dim, 0, 0, 0.1f)
    BG_L("attn_output_norm.weight", "attention.output.LayerNorm.weight", 1, c->dim, 0, 1, 0.2f)
    BG_L("attn_output_norm.bias", "attention.output.LayerNorm.bias", 1, c->dim, 0, 0, 0.1f)
    BG_L("ffn_up.weight", "intermediate.dense.weight", 2, c->ffn, c->dim, 0, sd)
    BG_L("ffn_up.bias", "intermediate.dense.bias", 1, c->ffn, 0, 0, 0.1f)
    BG_L("ffn_down.weight", "output.dense.weight", 2, c->dim, c->ffn, 0, sf)
    BG_L("ffn_down.bias", "output.dense.bias", 1, c->dim, 0, 0, 0.1f)
    BG_L("layer_output_norm.weight", "output.LayerNorm.weight", 1, c->dim, 0, 1, 0.2f)
    BG_L("layer_output_norm.bias", "output.LayerNorm.bias", 1, c->dim, 0, 0, 0.1f)
#undef BG_L
  }
#undef BG_T
  return n;
}

static int64_t bg_numel(const bg_tensor *t) { return t->ndim == 1 ? t->shape[0] : t->shape[0] * t->shape[1]; }

/* the values of t, into v (numel floats); named by the HF name, so both
 * files agree */
static void bg_values(const bg_config *c, const bg_tensor *t, float *v) {
  int64_t i, n = bg_numel(t);
  for (i = 0; i < n; i++) v[i] = t->center + t->scale * bg_uniform(c->seed, t->hf, (uint64_t)i);
}

static int bg_write_all(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  int ok = f && fwrite(p, 1, n, f) == n;
  if (f && fclose(f)) ok = 0;
  return ok;
}

/* GGUF: tokenizer keys in llama.cpp's form; used alone for a vocabulary-only file */
static void bg_gguf_vocab(gw_buf *b, const char *const *tok, int n) {
  int i;
  gw_kv_str(b, "tokenizer.ggml.model", "bert");
  gw_arr_head(b, "tokenizer.ggml.tokens", GW_STRING, (uint64_t)n);
  for (i = 0; i < n; i++) {
    const char *s = tok[i];
    size_t l = strlen(s);
    int control = l > 2 && s[0] == '[' && s[l - 1] == ']' &&
                  (!strcmp(s, "[PAD]") || !strcmp(s, "[UNK]") || !strcmp(s, "[CLS]") || !strcmp(s, "[SEP]") || !strcmp(s, "[MASK]"));
    if (control) gw_str(b, s);
    else if (l >= 2 && s[0] == '#' && s[1] == '#') gw_strn(b, s + 2, l - 2);
    else {
      char buf[512];
      snprintf(buf, sizeof buf, "\xE2\x96\x81%s", s);
      gw_str(b, buf);
    }
  }
  gw_arr_head(b, "tokenizer.ggml.token_type", GW_I32, (uint64_t)n);
  for (i = 0; i < n; i++) {
    const char *s = tok[i];
    int control = !strcmp(s, "[PAD]") || !strcmp(s, "[UNK]") || !strcmp(s, "[CLS]") || !strcmp(s, "[SEP]") || !strcmp(s, "[MASK]");
    gw_u32(b, control ? 3u : 1u);
  }
}
#define BG_VOCAB_KVS 3

static int bg_find(const char *const *tok, int n, const char *s) {
  int i;
  for (i = 0; i < n; i++) if (!strcmp(tok[i], s)) return i;
  return 0;
}

static int bg_write_gguf(const bg_config *c, const char *path) {
  bg_tensor *t = (bg_tensor *)calloc((size_t)(5 + 16 * c->layers), sizeof *t);
  int n, i, ok;
  gw_buf b = {0};
  uint64_t off = 0;
  if (!t) return 0;
  n = bg_tensors(c, t);
  gw_header(&b, 3, (uint64_t)n, 12 + BG_VOCAB_KVS + 4);
  gw_kv_str(&b, "general.architecture", "bert");
  gw_kv_str(&b, "general.name", "devkit random bert");
  gw_kv_u32(&b, "bert.context_length", (uint32_t)c->max_pos);
  gw_kv_u32(&b, "bert.embedding_length", (uint32_t)c->dim);
  gw_kv_u32(&b, "bert.feed_forward_length", (uint32_t)c->ffn);
  gw_kv_u32(&b, "bert.block_count", (uint32_t)c->layers);
  gw_kv_u32(&b, "bert.attention.head_count", (uint32_t)c->heads);
  gw_kv_f32(&b, "bert.attention.layer_norm_epsilon", c->eps);
  gw_kv_bool(&b, "bert.attention.causal", 0);
  gw_kv_u32(&b, "bert.pooling_type", (uint32_t)c->pooling);
  gw_kv_u32(&b, "general.file_type", 0);
  gw_kv_u32(&b, "tokenizer.ggml.token_type_count", (uint32_t)c->types);
  bg_gguf_vocab(&b, bg_words, BG_VOCAB);
  gw_kv_u32(&b, "tokenizer.ggml.bos_token_id", (uint32_t)bg_find(bg_words, BG_VOCAB, "[CLS]"));
  gw_kv_u32(&b, "tokenizer.ggml.seperator_token_id", (uint32_t)bg_find(bg_words, BG_VOCAB, "[SEP]"));
  gw_kv_u32(&b, "tokenizer.ggml.unknown_token_id", (uint32_t)bg_find(bg_words, BG_VOCAB, "[UNK]"));
  gw_kv_u32(&b, "tokenizer.ggml.padding_token_id", (uint32_t)bg_find(bg_words, BG_VOCAB, "[PAD]"));
  for (i = 0; i < n; i++) {
    gw_tensor_info(&b, t[i].gguf, t[i].ndim, t[i].shape, GW_T_F32, off);
    off += (uint64_t)bg_numel(&t[i]) * 4;
    off = (off + 31) / 32 * 32;
  }
  gw_pad(&b, 32);
  for (i = 0; i < n; i++) {
    float *v = (float *)malloc(sizeof *v * (size_t)bg_numel(&t[i]));
    if (!v) { b.failed = 1; break; }
    bg_values(c, &t[i], v);
    gw_bytes(&b, v, sizeof *v * (size_t)bg_numel(&t[i]));
    gw_pad(&b, 32);
    free(v);
  }
  ok = !b.failed && bg_write_all(path, b.p, b.n);
  free(b.p);
  free(t);
  return ok;
}

static int bg_write_safetensors(const bg_config *c, const char *path) {
  bg_tensor *t = (bg_tensor *)calloc((size_t)(5 + 16 * c->layers), sizeof *t);
  int n, i, ok;
  gw_buf h = {0}, d = {0};
  uint64_t off = 0, hl;
  char item[256];
  if (!t) return 0;
  n = bg_tensors(c, t);
  gw_bytes(&h, "{", 1);
  for (i = 0; i < n; i++) {
    uint64_t nb = (uint64_t)bg_numel(&t[i]) * 4;
    if (t[i].ndim == 1)
      snprintf(item, sizeof item, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%lld],\"data_offsets\":[%llu,%llu]}", i ? "," : "",
               t[i].hf, (long long)t[i].shape[0], (unsigned long long)off, (unsigned long long)(off + nb));
    else
      snprintf(item, sizeof item, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%lld,%lld],\"data_offsets\":[%llu,%llu]}",
               i ? "," : "", t[i].hf, (long long)t[i].shape[0], (long long)t[i].shape[1], (unsigned long long)off,
               (unsigned long long)(off + nb));
    gw_bytes(&h, item, strlen(item));
    off += nb;
  }
  gw_bytes(&h, "}", 1);
  while (h.n % 8) gw_bytes(&h, " ", 1);
  hl = h.n;
  gw_u64(&d, hl);
  gw_bytes(&d, h.p, h.n);
  for (i = 0; i < n; i++) {
    float *v = (float *)malloc(sizeof *v * (size_t)bg_numel(&t[i]));
    if (!v) { d.failed = 1; break; }
    bg_values(c, &t[i], v);
    gw_bytes(&d, v, sizeof *v * (size_t)bg_numel(&t[i]));
    free(v);
  }
  ok = !d.failed && !h.failed && bg_write_all(path, d.p, d.n);
  free(h.p);
  free(d.p);
  free(t);
  return ok;
}

/* the whole directory; 1 on success */
static int bg_write_dir(const bg_config *c, const char *dir) {
  char path[4096], text[1024];
  FILE *f;
  int i;
  mkdir(dir, 0755);
  snprintf(path, sizeof path, "%s/model.gguf", dir);
  if (!bg_write_gguf(c, path)) return 0;
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  if (!bg_write_safetensors(c, path)) return 0;
  snprintf(path, sizeof path, "%s/config.json", dir);
  snprintf(text, sizeof text,
           "{\n  \"architectures\": [\"BertModel\"],\n  \"model_type\": \"bert\",\n  \"hidden_act\": \"gelu\",\n"
           "  \"hidden_size\": %d,\n  \"num_hidden_layers\": %d,\n  \"num_attention_heads\": %d,\n"
           "  \"intermediate_size\": %d,\n  \"max_position_embeddings\": %d,\n  \"type_vocab_size\": %d,\n"
           "  \"vocab_size\": %d,\n  \"layer_norm_eps\": %.9g,\n  \"position_embedding_type\": \"absolute\",\n"
           "  \"pad_token_id\": 0\n}\n",
           c->dim, c->layers, c->heads, c->ffn, c->max_pos, c->types, BG_VOCAB, (double)c->eps);
  if (!bg_write_all(path, text, strlen(text))) return 0;
  snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
  snprintf(text, sizeof text, "{\"do_lower_case\": true, \"tokenizer_class\": \"BertTokenizer\", \"model_max_length\": %d}\n", c->max_pos);
  if (!bg_write_all(path, text, strlen(text))) return 0;
  if (c->pooling == 2) {
    snprintf(path, sizeof path, "%s/1_Pooling", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/1_Pooling/config.json", dir);
    snprintf(text, sizeof text, "{\"word_embedding_dimension\": %d, \"pooling_mode_cls_token\": true, \"pooling_mode_mean_tokens\": false}\n", c->dim);
    if (!bg_write_all(path, text, strlen(text))) return 0;
  }
  snprintf(path, sizeof path, "%s/vocab.txt", dir);
  if (!(f = fopen(path, "wb"))) return 0;
  for (i = 0; i < BG_VOCAB; i++) fprintf(f, "%s\n", bg_words[i]);
  return fclose(f) == 0;
}

#endif
