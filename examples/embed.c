/* examples/embed.c — sentence embeddings with a BERT-style model
 * (all-MiniLM-L6-v2, bge, e5 ...) on any devkit device. The model code is
 * models/bert.h, the tokenizer models/wordpiece.h; both use devkit's public
 * API only, so this one program runs on the CPU, Vulkan and CUDA backends.
 *
 *   build/embed -m all-MiniLM-L6-v2/ "A man is eating food." "A man is eating bread." "A girl plays."
 *   build/embed -m all-minilm-l6-v2-f16.gguf -d vulkan:0 "first" "second"
 *   build/embed -m model/ --batch < sentences.txt        (one sentence a line)
 *   build/embed -m model/ -d cpu:0=0-2,vulkan:0=3-5 "..."  (layers split)
 *
 * -m takes a GGUF file (llama.cpp's bert architecture) or a Hugging Face
 * directory (config.json, model.safetensors, vocab.txt or tokenizer.json).
 * It prints each embedding's first values and the cosine-similarity matrix
 * (up to 16 sentences), and the embedding rate in sentences/s (timed from
 * the text to the vectors on the host, tokenization included, the load not).
 * --batch reads lines from stdin and embeds them --batch-size at a time.
 * --ref FILE compares with reference embeddings (tools/ref_bert.py's
 * format: POOL, hex text, ids, values per line): exit status 1 when a
 * sentence's cosine is below 0.9999 (tools/test_models.sh uses it).
 */
#define _DEFAULT_SOURCE
#define DEVKIT_IMPLEMENTATION
#include "../devkit.h"
#define DEVKIT_MODELS_IMPLEMENTATION
#include "../models/bert.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *usage =
  "usage: embed -m MODEL [-d DEVICE] [--batch] [--batch-size N] [--cls | --mean] [--no-normalize]\n"
  "             [--max-tokens N] [--ref FILE] [--repeat N] [-q] [SENTENCE ...]\n"
  "  -m MODEL        a BERT GGUF file or a Hugging Face directory (config.json, model.safetensors, vocab.txt)\n"
  "  -d DEVICE       cpu:0, vulkan:0, cuda:0, ...; 'cpu:0=0-2,vulkan:0=3-5' places layer ranges\n"
  "                  (default: DEVKIT_DEVICE or the best device)\n"
  "  --batch         read the sentences from stdin, one a line\n"
  "  --batch-size N  sentences per forward pass (default 32)\n"
  "  --cls, --mean   pooling (default: the model's: GGUF bert.pooling_type, 1_Pooling/config.json, else mean)\n"
  "  --no-normalize  leave the pooled vectors unnormalised (default: unit length)\n"
  "  --max-tokens N  tokens per sentence, [CLS] and [SEP] included (default: the model's positions)\n"
  "  --ref FILE      compare with reference embeddings (the sentences come from FILE); exit 1 below cosine 0.9999\n"
  "  --repeat N      embed everything N times (for a steadier sentences/s)\n"
  "  -q              print only the summary\n";

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int hexv(int c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }

typedef struct {
  char **text;
  float **ref;      /* --ref: the reference vector of each sentence */
  int n, cap;
} sentences;

static void add_sentence(sentences *s, const char *text, size_t len, float *ref) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 64;
    s->text = (char **)realloc(s->text, sizeof *s->text * (size_t)s->cap);
    s->ref = (float **)realloc(s->ref, sizeof *s->ref * (size_t)s->cap);
    if (!s->text || !s->ref) { fprintf(stderr, "embed: out of memory\n"); exit(1); }
  }
  s->text[s->n] = (char *)malloc(len + 1);
  memcpy(s->text[s->n], text, len);
  s->text[s->n][len] = 0;
  s->ref[s->n] = ref;
  s->n++;
}

/* one line at a time, any length */
static char *read_line(FILE *f, size_t *len) {
  size_t cap = 256, n = 0;
  char *b = (char *)malloc(cap);
  int c;
  while ((c = fgetc(f)) != EOF && c != '\n') {
    if (n + 1 == cap) b = (char *)realloc(b, cap *= 2);
    b[n++] = (char)c;
  }
  if (c == EOF && n == 0) { free(b); return NULL; }
  if (n && b[n - 1] == '\r') n--;
  b[n] = 0;
  *len = n;
  return b;
}

static int read_ref(const char *path, int dim, sentences *s) {
  FILE *f = fopen(path, "rb");
  char *line;
  size_t len;
  if (!f) { fprintf(stderr, "embed: error: cannot open %s\n", path); return 0; }
  while ((line = read_line(f, &len))) {
    char *hex, *ids, *vals, *p, *text;
    float *v;
    size_t tl = 0;
    int k;
    if (line[0] == '#' || !(hex = strchr(line, '\t')) || !(ids = strchr(hex + 1, '\t')) || !(vals = strchr(ids + 1, '\t'))) {
      free(line);
      continue;
    }
    *ids = 0;
    text = (char *)malloc(strlen(hex) / 2 + 1);
    for (p = hex + 1; p[0] && p[1]; p += 2) text[tl++] = (char)(hexv(p[0]) * 16 + hexv(p[1]));
    v = (float *)calloc((size_t)dim, sizeof *v);
    for (p = vals + 1, k = 0; k < dim && *p; k++) v[k] = strtof(p, &p);
    if (k != dim) { fprintf(stderr, "embed: error: %s has %d values per line; the model has %d\n", path, k, dim); return 0; }
    add_sentence(s, text, tl, v);
    free(text);
    free(line);
  }
  fclose(f);
  return 1;
}

static double cosine(const float *a, const float *b, int n) {
  double d = 0, na = 0, nb = 0;
  int k;
  for (k = 0; k < n; k++) { d += (double)a[k] * b[k]; na += (double)a[k] * a[k]; nb += (double)b[k] * b[k]; }
  return d / (sqrt(na) * sqrt(nb) + 1e-30);
}

int main(int argc, char **argv) {
  const char *model = NULL, *ref = NULL;
  dk_bert_options o;
  dk_bert_model *m = NULL;
  sentences s = {0};
  int i, batch = 0, bs = 32, quiet = 0, repeat = 1, dim, r;
  float *emb;
  double t0, secs;
  dk_status st;
  memset(&o, 0, sizeof o);
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has = i + 1 < argc;
#define VAL() (has ? argv[++i] : (fprintf(stderr, "embed: error: %s needs a value\n%s", a, usage), exit(2), ""))
    if (!strcmp(a, "-m")) model = VAL();
    else if (!strcmp(a, "-d")) o.devices = VAL();
    else if (!strcmp(a, "--batch")) batch = 1;
    else if (!strcmp(a, "--batch-size")) bs = atoi(VAL());
    else if (!strcmp(a, "--cls")) o.pooling = DK_BERT_POOL_CLS;
    else if (!strcmp(a, "--mean")) o.pooling = DK_BERT_POOL_MEAN;
    else if (!strcmp(a, "--no-normalize")) o.no_normalize = 1;
    else if (!strcmp(a, "--max-tokens")) o.max_tokens = atoi(VAL());
    else if (!strcmp(a, "--ref")) ref = VAL();
    else if (!strcmp(a, "--repeat")) repeat = atoi(VAL());
    else if (!strcmp(a, "-q")) quiet = 1;
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(usage, stdout); return 0; }
    else if (a[0] == '-' && a[1]) { fprintf(stderr, "embed: error: unknown option %s\n%s", a, usage); return 2; }
    else add_sentence(&s, a, strlen(a), NULL);
#undef VAL
  }
  if (!model || bs < 1 || repeat < 1) { fputs(usage, stderr); return 2; }
  t0 = now_s();
  if ((st = dk_bert_load(model, &o, &m)) != DK_OK) {
    fprintf(stderr, "embed: error: %s\n", dk_last_error());
    return 1;
  }
  dim = dk_bert_dim(m);
  fprintf(stderr, "embed: %s: dim %d, %d layers, %d heads, %s pooling, on %s; loaded in %.2f s\n", m->name, dim, m->c.n_layers,
          m->c.n_heads, m->c.pooling == DK_BERT_POOL_CLS ? "cls" : "mean", o.devices ? o.devices : dk_device_name(m->layer_dev[0]),
          now_s() - t0);
  if (ref && !read_ref(ref, dim, &s)) return 1;
  if (batch) {
    char *line;
    size_t len;
    while ((line = read_line(stdin, &len))) { add_sentence(&s, line, len, NULL); free(line); }
  }
  if (s.n == 0) { fprintf(stderr, "embed: error: no sentences (give them as arguments, or --batch on stdin)\n"); return 2; }
  emb = (float *)malloc(sizeof *emb * (size_t)s.n * (size_t)dim);
  t0 = now_s();
  for (r = 0; r < repeat; r++)
    for (i = 0; i < s.n; i += bs) {
      int n = s.n - i < bs ? s.n - i : bs;
      if ((st = dk_bert_embed(m, (const char *const *)s.text + i, n, emb + (size_t)i * dim)) != DK_OK) {
        fprintf(stderr, "embed: error: %s\n", dk_last_error());
        return 1;
      }
    }
  secs = now_s() - t0;
  if (!quiet) {
    for (i = 0; i < s.n; i++) {
      int k;
      printf("[%d] ", i);
      for (k = 0; k < dim && k < 8; k++) printf("%s%.5f", k ? " " : "", emb[(size_t)i * dim + k]);
      printf(" ...  %.60s\n", s.text[i]);
    }
    if (s.n > 1 && s.n <= 16) {
      int j;
      printf("cosine similarity:\n     ");
      for (j = 0; j < s.n; j++) printf(" [%2d] ", j);
      printf("\n");
      for (i = 0; i < s.n; i++) {
        printf("[%2d] ", i);
        for (j = 0; j < s.n; j++) printf(" %.3f", cosine(emb + (size_t)i * dim, emb + (size_t)j * dim, dim));
        printf("\n");
      }
    }
  }
  fprintf(stderr, "embed: %d sentences x %d in %.3f s: %.1f sentences/s (batch size %d)\n", s.n, repeat, secs,
          secs > 0 ? s.n * repeat / secs : 0.0, bs);
  if (ref) {
    double worst = 1;
    int bad = 0;
    for (i = 0; i < s.n; i++) {
      double c;
      if (!s.ref[i]) continue;
      c = cosine(emb + (size_t)i * dim, s.ref[i], dim);
      if (c < worst) worst = c;
      if (c < 0.9999) { bad++; fprintf(stderr, "embed: '%.60s': cosine %.6f with the reference\n", s.text[i], c); }
    }
    printf("reference: worst cosine %.9f over %d sentences, %d below 0.9999\n", worst, s.n, bad);
    if (bad) return 1;
  }
  for (i = 0; i < s.n; i++) { free(s.text[i]); free(s.ref[i]); }
  free(s.text);
  free(s.ref);
  free(emb);
  dk_bert_free(m);
  return 0;
}
