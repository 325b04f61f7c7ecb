/* tests/test_bert.c — BERT sentence embeddings (models/bert.h) on every
 * device against a PyTorch float64 reference.
 *
 * The model: tools/bert_gen.h writes a small BERT with seeded random
 * weights (dim 32, 2 layers, 4 heads, ffn 64, 64 positions) twice, as a
 * llama.cpp-style GGUF and as a Hugging Face directory (config.json,
 * model.safetensors, vocab.txt); tests/data/bert_tiny_ref.txt holds the ids
 * and the mean- and CLS-pooled embeddings tools/ref_bert.py computed from
 * the same weights with its own forward pass. Checked here: the ids, cosine
 * >= 0.9999 and a small max abs error per sentence from both files, each
 * sentence alone and all of them in one batch of different lengths (the
 * packed batch must give what each sentence gives alone), L2 normalisation,
 * a split over two devices, and the errors: a misplaced weight, a truncated
 * file, a config key missing.
 *
 * This file also compiles the model layer's WordPiece, JSON and BERT code
 * for the test binary (tests/test_models.c compiles llama.h's). */
#include "test.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"   /* the writer has more than this file uses */
#include "../tools/gguf_writer.h"
#include "../tools/bert_gen.h"
#pragma GCC diagnostic pop
#include "../models/bert.h"

#include <unistd.h>

#define BT_MAX 16

typedef struct {
  char text[1024];
  int32_t ids[80];
  int n_ids;
  float mean[64], cls[64];
} bt_ref;

static int bt_hex(int c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }

static FILE *bt_open(const char *name, char *path, size_t cap) {
  char exe[1000];
  ssize_t n;
  FILE *f;
  snprintf(path, cap, "tests/data/%s", name);
  if ((f = fopen(path, "rb"))) return f;
  if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) > 0) {
    char *slash;
    exe[n] = 0;
    if ((slash = strrchr(exe, '/'))) *slash = 0;
    snprintf(path, cap, "%s/../tests/data/%s", exe, name);
    f = fopen(path, "rb");
  }
  return f;
}

/* the reference sentences; returns their count */
static int bt_read_ref(dkt *t, bt_ref *r) {
  char path[1200], line[8192];
  FILE *f = bt_open("bert_tiny_ref.txt", path, sizeof path);
  int n = 0;
  if (!f) { dkt_fail_at(t, __FILE__, __LINE__, "cannot open tests/data/bert_tiny_ref.txt"); return 0; }
  while (fgets(line, sizeof line, f)) {
    char *pool = line, *hex, *ids, *vals, *p;
    bt_ref *e;
    int k;
    size_t tl = 0;
    if (line[0] == '#') continue;
    if (!(hex = strchr(pool, '\t')) || !(ids = strchr(hex + 1, '\t')) || !(vals = strchr(ids + 1, '\t'))) continue;
    *hex++ = 0; *ids++ = 0; *vals++ = 0;
    if (!strcmp(pool, "mean")) {
      if (n == BT_MAX) break;
      e = &r[n++];
      memset(e, 0, sizeof *e);
      for (p = hex; p[0] && p[1] && tl + 1 < sizeof e->text; p += 2) e->text[tl++] = (char)(bt_hex(p[0]) * 16 + bt_hex(p[1]));
      for (p = ids; *p && e->n_ids < 80;) {
        e->ids[e->n_ids++] = (int32_t)strtol(p, &p, 10);
        while (*p == ' ') p++;
      }
      for (p = vals, k = 0; k < 64 && *p && *p != '\n'; k++) e->mean[k] = strtof(p, &p);
    } else if (n > 0) {
      for (p = vals, k = 0; k < 64 && *p && *p != '\n'; k++) r[n - 1].cls[k] = strtof(p, &p);
    }
  }
  fclose(f);
  return n;
}

static double bt_worst_cos = 1, bt_worst_err = 0;

/* unit: got must be the L2-normalised want */
static void bt_compare(dkt *t, const char *what, const char *text, const float *got, const float *want_raw, int dim, int unit) {
  double dot = 0, ng = 0, nw = 0, err = 0, w2 = 0, want[64], norm = 0;
  int k;
  for (k = 0; k < dim; k++) norm += (double)want_raw[k] * want_raw[k];
  for (k = 0; k < dim; k++) want[k] = unit ? want_raw[k] / sqrt(norm) : want_raw[k];
  for (k = 0; k < dim; k++) {
    double e = fabs((double)got[k] - want[k]);
    dot += (double)got[k] * want[k];
    ng += (double)got[k] * got[k];
    nw += (double)want[k] * want[k];
    if (e > err) err = e;
    w2 = w2 > fabs(want[k]) ? w2 : fabs(want[k]);
  }
  {
    double cosv = dot / (sqrt(ng) * sqrt(nw) + 1e-30);
    if (cosv < bt_worst_cos) bt_worst_cos = cosv;
    if (err > bt_worst_err) bt_worst_err = err;
    DKT_CHECK(t, cosv >= 0.9999 && err <= 2e-4 * (w2 > 1 ? w2 : 1), "%s '%.40s': cosine %.7f, max abs error %.3g", what, text,
              cosv, err);
    if (unit) DKT_CHECK(t, fabs(sqrt(ng) - 1) < 1e-4, "%s '%.40s': norm %.6f, not 1", what, text, sqrt(ng));
  }
}

static void bt_model_dir(char *dir, size_t cap) {
  bg_config c = {32, 2, 4, 64, 64, 2, 1e-12f, 1, 1};
  snprintf(dir, cap, "/tmp/dkt_bert_%d", (int)getpid());
  bg_write_dir(&c, dir);
}

static void bt_rmdir(const char *dir) {
  static const char *const files[] = {"model.gguf", "model.safetensors", "config.json", "vocab.txt", "tokenizer_config.json",
                                      "1_Pooling/config.json"};
  char p[600];
  size_t i;
  for (i = 0; i < sizeof files / sizeof files[0]; i++) { snprintf(p, sizeof p, "%s/%s", dir, files[i]); remove(p); }
  snprintf(p, sizeof p, "%s/1_Pooling", dir);
  rmdir(p);
  rmdir(dir);
}

/* one model file against the reference: ids, each sentence alone, all in one batch */
static void bt_check_model(dkt *t, const char *path, const char *what, int pooling, const bt_ref *r, int n) {
  dk_bert_options o;
  dk_bert_model *m = NULL;
  float alone[BT_MAX][64], batch[BT_MAX * 64];
  const char *texts[BT_MAX] = {0};
  int i, k;
  char label[128];
  bt_worst_cos = 1;
  bt_worst_err = 0;
  memset(&o, 0, sizeof o);
  o.devices = dk_device_name(t->dev);
  o.pooling = pooling;
  o.no_normalize = 1;
  DKT_OK(t, dk_bert_load(path, &o, &m));
  DKT_CHECK(t, dk_bert_dim(m) == 32, "dim %d", dk_bert_dim(m));
  for (i = 0; i < n; i++) {
    int32_t *ids = NULL;
    int nid = 0;
    DKT_OK(t, dk_wordpiece_encode(m->tok, r[i].text, strlen(r[i].text), m->max_tokens, &ids, &nid));
    for (k = 0; k < nid && k < r[i].n_ids && ids[k] == r[i].ids[k]; k++) {}
    DKT_CHECK(t, nid == r[i].n_ids && k == nid, "%s: '%.40s' tokenizes to %d ids, the reference %d (first difference at %d)",
              what, r[i].text, nid, r[i].n_ids, k);
    free(ids);
    texts[i] = r[i].text;
    DKT_OK(t, dk_bert_embed(m, &texts[i], 1, alone[i]));
    snprintf(label, sizeof label, "%s %s alone", what, pooling == DK_BERT_POOL_CLS ? "cls" : "mean");
    bt_compare(t, label, r[i].text, alone[i], pooling == DK_BERT_POOL_CLS ? r[i].cls : r[i].mean, 32, 0);
  }
  DKT_OK(t, dk_bert_embed(m, texts, n, batch));
  for (i = 0; i < n; i++) {
    double d = 0;
    snprintf(label, sizeof label, "%s %s batch", what, pooling == DK_BERT_POOL_CLS ? "cls" : "mean");
    bt_compare(t, label, r[i].text, batch + i * 32, pooling == DK_BERT_POOL_CLS ? r[i].cls : r[i].mean, 32, 0);
    for (k = 0; k < 32; k++) d = fmax(d, fabs(batch[i * 32 + k] - alone[i][k]));
    DKT_CHECK(t, d <= 1e-5, "%s: '%.40s' in a batch of %d differs from alone by %.3g", what, r[i].text, n, d);
  }
  dkt_note(t, "%s %s: %d sentences, worst cosine %.8f, max abs error %.2g", what, pooling == DK_BERT_POOL_CLS ? "cls" : "mean",
           n, bt_worst_cos, bt_worst_err);
  dk_bert_free(m);
}

DKT_TEST(bert_matches_reference, 0) {
  bt_ref r[BT_MAX];
  char dir[256], gguf[300];
  int n = bt_read_ref(t, r);
  if (n < 5) { dkt_fail_at(t, __FILE__, __LINE__, "only %d reference sentences", n); return; }
  bt_model_dir(dir, sizeof dir);
  snprintf(gguf, sizeof gguf, "%s/model.gguf", dir);
  bt_check_model(t, gguf, "gguf", DK_BERT_POOL_MEAN, r, n);
  bt_check_model(t, dir, "safetensors", DK_BERT_POOL_MEAN, r, n);
  bt_check_model(t, gguf, "gguf", DK_BERT_POOL_CLS, r, n);
  bt_check_model(t, dir, "safetensors", DK_BERT_POOL_CLS, r, n);
  bt_rmdir(dir);
}

/* default options: L2-normalised rows; the same directions as the reference */
DKT_TEST(bert_normalized, 0) {
  bt_ref r[BT_MAX];
  char dir[256];
  dk_bert_options o;
  dk_bert_model *m = NULL;
  const char *texts[BT_MAX] = {0};
  float out[BT_MAX * 32];
  int n = bt_read_ref(t, r), i;
  if (n < 5) return;
  bt_model_dir(dir, sizeof dir);
  memset(&o, 0, sizeof o);
  o.devices = dk_device_name(t->dev);
  DKT_OK(t, dk_bert_load(dir, &o, &m));
  for (i = 0; i < n; i++) texts[i] = r[i].text;
  DKT_OK(t, dk_bert_embed(m, texts, n, out));
  for (i = 0; i < n; i++) bt_compare(t, "normalised", r[i].text, out + i * 32, r[i].mean, 32, 1);
  dk_bert_free(m);
  bt_rmdir(dir);
}

/* layers 0 and 1 on two devices: the hidden state crosses once, same result */
DKT_TEST(bert_split_devices, 0) {
  bt_ref r[BT_MAX];
  char dir[256], spec[128], gguf[300];
  dk_bert_options o;
  dk_bert_model *m = NULL;
  const char *texts[BT_MAX] = {0};
  float out[BT_MAX * 32];
  int n, i;
  if (!t->has_dev2) { dkt_skip(t, "skipped: needs a second logical device"); return; }
  n = bt_read_ref(t, r);
  if (n < 5) return;
  bt_model_dir(dir, sizeof dir);
  snprintf(gguf, sizeof gguf, "%s/model.gguf", dir);
  snprintf(spec, sizeof spec, "%s=0-0,%s=1-1", dk_device_name(t->dev), dk_device_name(t->dev2));
  memset(&o, 0, sizeof o);
  o.devices = spec;
  o.no_normalize = 1;
  DKT_OK(t, dk_bert_load(gguf, &o, &m));
  DKT_CHECK(t, dk_device_equal(dk_tensor_device(m->layers[0].wq), t->dev) && dk_device_equal(dk_tensor_device(m->layers[1].wq), t->dev2) &&
                   dk_device_equal(dk_tensor_device(m->tok_embd), t->dev),
            "layers not where the split put them");
  DKT_OK(t, dk_bert_check_placement(m));
  for (i = 0; i < n; i++) texts[i] = r[i].text;
  DKT_OK(t, dk_bert_embed(m, texts, n, out));
  for (i = 0; i < n; i++) bt_compare(t, "split", r[i].text, out + i * 32, r[i].mean, 32, 0);
  /* the same device rules and messages as llama */
  dk_bert_free(m);
  m = NULL;
  snprintf(spec, sizeof spec, "%s,%s", dk_device_name(t->dev), dk_device_name(t->dev));
  o.devices = spec;
  DKT_REFUSED(t, dk_bert_load(gguf, &o, &m), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "is named twice");
  bt_rmdir(dir);
}

/* a weight moved to another device: named by dk_bert_check_placement, and
 * the forward pass stops at the op with the operands' devices */
DKT_TEST(bert_misplaced_weight, 0) {
  char dir[256], gguf[300];
  dk_bert_options o;
  dk_bert_model *m = NULL;
  dk_tensor *moved = NULL;
  const char *text = "hello world";
  float out[32];
  if (!t->has_dev2) { dkt_skip(t, "skipped: needs a second logical device"); return; }
  bt_model_dir(dir, sizeof dir);
  snprintf(gguf, sizeof gguf, "%s/model.gguf", dir);
  memset(&o, 0, sizeof o);
  o.devices = dk_device_name(t->dev);
  DKT_OK(t, dk_bert_load(gguf, &o, &m));
  DKT_OK(t, dk_to(m->layers[1].wk, t->dev2, &moved));
  dk_tensor_free(m->layers[1].wk);
  m->layers[1].wk = moved;
  DKT_REFUSED(t, dk_bert_check_placement(m), DK_ERR_DEVICE_MISMATCH);
  DKT_MSG_HAS(t, "blk.1.attn_k.weight");
  DKT_MSG_HAS(t, dk_device_name(t->dev2));
  DKT_REFUSED(t, dk_bert_embed(m, &text, 1, out), DK_ERR_DEVICE_MISMATCH);
  DKT_MSG_HAS(t, "dk_linear");
  DKT_MSG_HAS(t, "blk.1.attn_k.weight");
  dk_bert_free(m);
  bt_rmdir(dir);
}

DKT_TEST(bert_bad_files, DKT_ONCE) {
  char dir[256], p[400];
  dk_bert_model *m = NULL;
  FILE *f;
  long size;
  char *buf;
  int32_t ids[3] = {2, 500, 3};
  int lens[1] = {3};
  float out[32];
  bt_model_dir(dir, sizeof dir);
  /* a GGUF cut short */
  snprintf(p, sizeof p, "%s/model.gguf", dir);
  f = fopen(p, "rb");
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  rewind(f);
  buf = (char *)malloc((size_t)size);
  if (fread(buf, 1, (size_t)size, f) != (size_t)size) size = 0;
  fclose(f);
  f = fopen(p, "wb");
  fwrite(buf, 1, (size_t)size / 2, f);
  fclose(f);
  free(buf);
  DKT_CHECK(t, dk_bert_load(p, NULL, &m) == DK_ERR_FORMAT && !m, "a truncated GGUF loaded: %s", dk_last_error());
  DKT_MSG_HAS(t, "model.gguf");
  /* config.json without a key */
  snprintf(p, sizeof p, "%s/config.json", dir);
  f = fopen(p, "wb");
  fprintf(f, "{\"hidden_size\": 32, \"num_hidden_layers\": 2, \"intermediate_size\": 64, \"max_position_embeddings\": 64, "
             "\"vocab_size\": 127}\n");
  fclose(f);
  DKT_REFUSED(t, dk_bert_load(dir, NULL, &m), DK_ERR_FORMAT);
  DKT_MSG_HAS(t, "num_attention_heads");
  /* a safetensors file cut short */
  f = fopen(p, "wb");
  fprintf(f, "{\"hidden_size\": 32, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"intermediate_size\": 64, "
             "\"max_position_embeddings\": 64, \"vocab_size\": 127, \"hidden_act\": \"gelu\"}\n");
  fclose(f);
  {
    dk_bert_options o;
    memset(&o, 0, sizeof o);
    o.devices = "cpu:0";
    DKT_OK(t, dk_bert_load(dir, &o, &m));
    DKT_REFUSED(t, dk_bert_embed_ids(m, ids, lens, 1, out), DK_ERR_INVALID);
    DKT_MSG_HAS(t, "token id 500");
    dk_bert_free(m);
    m = NULL;
  }
  snprintf(p, sizeof p, "%s/model.safetensors", dir);
  if (truncate(p, 1000) != 0) dkt_fail_at(t, __FILE__, __LINE__, "truncate %s failed", p);
  DKT_REFUSED(t, dk_bert_load(dir, NULL, &m), DK_ERR_FORMAT);
  DKT_MSG_HAS(t, "model.safetensors");
  DKT_REFUSED(t, dk_bert_load("/nonexistent/model", NULL, &m), DK_ERR_IO);
  bt_rmdir(dir);
}

/* layers split over two backends (cpu:0 and vulkan:0 here): the hidden
 * state crosses with dk_copy_to, the embeddings are the reference's */
DKT_TEST(bert_split_backends, DKT_MULTI_BACKEND) {
  bt_ref r[BT_MAX];
  char dir[256], spec[128];
  dk_bert_options o;
  dk_bert_model *m = NULL;
  const char *texts[BT_MAX] = {0};
  float out[BT_MAX * 32];
  dk_device other;
  int n, i;
  other.backend = t->dev.backend == DK_CPU ? DK_VULKAN : DK_CPU;
  other.index = 0;
  if (dk_device_count(other.backend) < 1) { dkt_skip(t, "skipped: no %s device beside %s", dk_backend_name(other.backend), dk_device_name(t->dev)); return; }
  n = bt_read_ref(t, r);
  if (n < 5) return;
  bt_model_dir(dir, sizeof dir);
  snprintf(spec, sizeof spec, "%s=0-0,%s=1-1", dk_device_name(t->dev), dk_device_name(other));
  memset(&o, 0, sizeof o);
  o.devices = spec;
  o.no_normalize = 1;
  DKT_OK(t, dk_bert_load(dir, &o, &m));
  DKT_OK(t, dk_bert_check_placement(m));
  for (i = 0; i < n; i++) texts[i] = r[i].text;
  DKT_OK(t, dk_bert_embed(m, texts, n, out));
  for (i = 0; i < n; i++) bt_compare(t, spec, r[i].text, out + i * 32, r[i].mean, 32, 0);
  dk_bert_free(m);
  bt_rmdir(dir);
}
