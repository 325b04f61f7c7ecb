/* tools/convert.c — a Hugging Face directory (or any model file devkit
 * reads with float weights) written as a GGUF file, in a chosen type: what
 * llama.cpp's convert_hf_to_gguf.py and llama-quantize do, in one step and
 * without Python.
 *
 *   build/convert SmolLM2-135M-Instruct/ -o smollm2-q8_0.gguf --type q8_0
 *   build/convert gemma-3-270m/ -o gemma3-Q4_K_M.gguf --type Q4_K_M
 *
 * The file is the view models/hf.h makes of the directory (llama.cpp's keys
 * and tensor names, the tokenizer as tokenizer.ggml.*), with the two
 * rewrites the view leaves to the loader done here, as llama.cpp's
 * converter does them: the q and k rows of a llama model permuted from
 * Hugging Face's halves order to adjacent pairs, and 1 added to Gemma's
 * norm weights. Norms and biases are f32; the matrices take --type (default:
 * the source's f32, f16 or bf16), with llama.cpp's choices for the mixes
 * (gguf_writer.h: the classifier, or a tied embedding, and some layers'
 * attn_v and ffn_down in q6_K) and its fallbacks for rows that are not whole
 * K-quant super-blocks. Tensors are converted a few rows at a time, so memory
 * stays near one row block whatever the model's size.
 */
#define _DEFAULT_SOURCE
#define DEVKIT_IMPLEMENTATION
#include "../devkit.h"
#define DEVKIT_MODELS_IMPLEMENTATION
#include "../models/file.h"
#include "../models/hf.h"
#include "gguf_writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *usage =
  "usage: convert IN -o OUT.gguf [--type TYPE]\n"
  "  IN     a Hugging Face directory (config.json, safetensors, tokenizer.json) or a model file with float weights\n"
  "  TYPE   f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_K q3_K q4_K q5_K q6_K iq4_nl iq4_xs iq3_xxs iq3_s iq2_xxs iq2_xs iq2_s, or the mixes Q4_K_M Q5_K_M\n"
  "         IQ4_NL IQ4_XS\n"
  "         (default: the source's float type)\n";

/* one metadata value again in GGUF's encoding, through the public reader */
static void put_value(gw_buf *b, dk_meta *m, int with_type) {
  int64_t iv = 0;
  double fv = 0;
  const char *s;
  size_t n;
  uint64_t i;
  if (with_type) gw_u32(b, (uint32_t)m->type);
  switch (m->type) {
  case DK_META_STRING: dk_meta_string(m, &s, &n); gw_strn(b, s, n); break;
  case DK_META_ARRAY:
    gw_u32(b, (uint32_t)m->elem_type);
    gw_u64(b, m->count);
    for (i = 0; i < m->count; i++) {
      dk_meta e;
      if (dk_meta_at(m, i, &e) != DK_OK) { b->failed = 1; return; }
      put_value(b, &e, 0);
    }
    break;
  case DK_META_F32: dk_meta_float(m, &fv); gw_f32(b, (float)fv); break;
  case DK_META_F64: {
    uint64_t u;
    dk_meta_float(m, &fv);
    memcpy(&u, &fv, 8);
    gw_u64(b, u);
    break;
  }
  default: {
    static const unsigned size[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    uint64_t u;
    dk_meta_int(m, &iv);
    u = (uint64_t)iv;
    if (size[m->type] == 1) gw_u8(b, (uint8_t)u);
    else if (size[m->type] == 2) { gw_u8(b, (uint8_t)u); gw_u8(b, (uint8_t)(u >> 8)); }
    else if (size[m->type] == 4) gw_u32(b, (uint32_t)u);
    else gw_u64(b, u);
  }
  }
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && !strcmp(s + a - b, suffix);
}

typedef struct {
  int64_t index;          /* in the source */
  const char *name;
  int ndim;
  int64_t shape[2];
  uint32_t type;
  uint64_t offset, nbytes;
  int permute_heads;      /* > 0: llama's q or k, permuted in heads of shape[0] / this rows */
  int plus1;              /* a Gemma norm */
} cv_tensor;

int main(int argc, char **argv) {
  const char *in = NULL, *out = NULL, *tname = NULL, *arch = "";
  dk_file *f;
  gw_buf h;
  cv_tensor *ts;
  int64_t nt, i, k, n_meta;
  int layers = 0, heads = 0, kv_heads = 0, llama_hf, gemma, tied, a;
  uint32_t file_type = 0;
  const gw_type *ty;
  uint64_t off = 0;
  FILE *o;
  float *buf;
  void *qbuf, *raw;
  const size_t chunk = (size_t)1 << 22;   /* f32 values converted at a time */
  const int nth = gw_threads();
  for (a = 1; a < argc; a++) {
    if (!strcmp(argv[a], "-o") && a + 1 < argc) out = argv[++a];
    else if (!strcmp(argv[a], "--type") && a + 1 < argc) tname = argv[++a];
    else if (!strcmp(argv[a], "-h") || !strcmp(argv[a], "--help")) { fputs(usage, stdout); return 0; }
    else if (argv[a][0] != '-' && !in) in = argv[a];
    else { fprintf(stderr, "convert: error: unknown argument '%s'\n%s", argv[a], usage); return 2; }
  }
  if (!in || !out) { fputs(usage, stderr); return 2; }
  if (dk_model_open(in, &f) != DK_OK) {
    fprintf(stderr, "convert: error: %s\n", dk_last_error());
    return 1;
  }
  {
    const char *s;
    size_t n;
    char key[128];
    int64_t v;
    static char archbuf[64];
    if (dk_file_meta_string(f, "general.architecture", &s, &n) == DK_OK) {
      snprintf(archbuf, sizeof archbuf, "%.*s", (int)n, s);
      arch = archbuf;
    }
    snprintf(key, sizeof key, "%s.block_count", arch);
    if (dk_file_meta_int(f, key, &v) == DK_OK) layers = (int)v;
    snprintf(key, sizeof key, "%s.attention.head_count", arch);
    if (dk_file_meta_int(f, key, &v) == DK_OK) heads = (int)v;
    snprintf(key, sizeof key, "%s.attention.head_count_kv", arch);
    kv_heads = dk_file_meta_int(f, key, &v) == DK_OK ? (int)v : heads;
  }
  llama_hf = dk_file_format_of(f) == DK_FILE_HF && !strcmp(arch, "llama");
  gemma = dk_file_format_of(f) == DK_FILE_HF && !strcmp(arch, "gemma3");
  tied = dk_file_tensor_find(f, "output.weight") < 0;
  nt = dk_file_tensor_count(f);
  ts = (cv_tensor *)calloc((size_t)(nt ? nt : 1), sizeof *ts);
  if (!ts) { fprintf(stderr, "convert: error: out of memory\n"); return 1; }

  /* the weights' type: --type, else the source's float type */
  for (i = 0; i < nt; i++) {
    dk_file_tensor t;
    dk_file_tensor_at(f, i, &t);
    if (!t.supported || (t.dtype != DK_F32 && t.dtype != DK_F16 && t.dtype != DK_BF16)) {
      fprintf(stderr, "convert: error: %s: tensor '%s' is %s; convert takes f32, f16 and bf16 weights\n", dk_file_name(f),
              t.name, t.type_name);
      return 1;
    }
    if (!tname && t.ndim == 2) tname = dk_dtype_name(t.dtype);
  }
  if (!tname) tname = "f32";
  for (a = 0; a < (int)(sizeof gw_types / sizeof gw_types[0]); a++)
    if (!strcmp(gw_types[a].name, tname)) break;
  if (a == (int)(sizeof gw_types / sizeof gw_types[0])) { fprintf(stderr, "convert: error: unknown type '%s'\n%s", tname, usage); return 2; }
  ty = &gw_types[a];
  file_type = ty->file_type;

  for (i = 0; i < nt; i++) {
    dk_file_tensor t;
    cv_tensor *c = &ts[i];
    uint64_t n;
    dk_file_tensor_at(f, i, &t);
    c->index = i;
    c->name = t.name;
    c->ndim = t.ndim;
    c->shape[0] = t.shape[0];
    c->shape[1] = t.ndim > 1 ? t.shape[1] : 1;
    if (t.ndim != 1 && t.ndim != 2) {
      fprintf(stderr, "convert: error: tensor '%s' has %d dimensions\n", t.name, t.ndim);
      return 1;
    }
    if (t.ndim == 1) {
      c->type = GW_T_F32;
    } else {
      int l = !strncmp(t.name, "blk.", 4) ? atoi(t.name + 4) : -1;
      /* the classifier, or the embedding that serves as one, may get more bits */
      const int role = !strcmp(t.name, "output.weight") || (tied && !strcmp(t.name, "token_embd.weight")) ? 'o'
                       : l >= 0 && ends_with(t.name, ".attn_v.weight")                               ? 'v'
                       : l >= 0 && ends_with(t.name, ".ffn_down.weight")                             ? 'd'
                                                                                                      : 0;
      c->type = gw_fit(gw_pick(ty, role, l, layers, kv_heads > 0 ? heads / kv_heads : 1), c->shape[1]);
      if (c->shape[1] % 32 && c->type != GW_T_F32 && c->type != GW_T_F16 && c->type != GW_T_BF16) c->type = GW_T_F16;
    }
    if (llama_hf && heads > 0 && (ends_with(t.name, ".attn_q.weight") || ends_with(t.name, ".attn_k.weight")))
      c->permute_heads = ends_with(t.name, ".attn_q.weight") ? heads : kv_heads;
    if (c->permute_heads && (c->shape[0] % c->permute_heads || (c->shape[0] / c->permute_heads) % 2)) {
      fprintf(stderr, "convert: error: '%s' has %lld rows, not %d heads of an even size\n", t.name, (long long)c->shape[0],
              c->permute_heads);
      return 1;
    }
    c->plus1 = gemma && t.ndim == 1 && strstr(t.name, "norm") != NULL;
    n = (uint64_t)c->shape[0] * (uint64_t)c->shape[1];
    c->nbytes = gw_type_bytes(c->type, n);
    c->offset = off;
    off += (c->nbytes + 31) / 32 * 32;
  }

  /* the header: the source's metadata, the file type, the tensors */
  memset(&h, 0, sizeof h);
  n_meta = 0;
  for (k = 0; k < dk_file_meta_count(f); k++) {
    const char *key;
    dk_file_meta_at(f, k, &key, NULL);
    if (strcmp(key, "general.file_type") && strcmp(key, "general.alignment") && strncmp(key, "tokenizer.devkit.", 17)) n_meta++;
  }
  gw_header(&h, 3, (uint64_t)nt, (uint64_t)n_meta + 2);
  for (k = 0; k < dk_file_meta_count(f); k++) {
    const char *key;
    dk_meta m;
    dk_file_meta_at(f, k, &key, &m);
    if (!strcmp(key, "general.file_type") || !strcmp(key, "general.alignment") || !strncmp(key, "tokenizer.devkit.", 17)) continue;
    gw_str(&h, key);
    put_value(&h, &m, 1);
  }
  gw_kv_u32(&h, "general.file_type", file_type);
  gw_kv_u32(&h, "general.alignment", 32);
  for (i = 0; i < nt; i++) gw_tensor_info(&h, ts[i].name, ts[i].ndim, ts[i].shape, ts[i].type, ts[i].offset);
  gw_pad(&h, 32);
  if (h.failed) { fprintf(stderr, "convert: error: out of memory\n"); return 1; }

  o = fopen(out, "wb");
  if (!o) { fprintf(stderr, "convert: error: %s: cannot create: %s\n", out, strerror(errno)); return 1; }
  buf = (float *)malloc(chunk * sizeof *buf);
  qbuf = malloc(chunk * sizeof(float));
  raw = malloc(chunk * sizeof(float));
  if (!buf || !qbuf || !raw || fwrite(h.p, 1, h.n, o) != h.n) { fprintf(stderr, "convert: error: writing %s failed\n", out); return 1; }
  for (i = 0; i < nt; i++) {
    cv_tensor *c = &ts[i];
    dk_file_tensor t;
    const void *src = dk_file_tensor_data(f, c->index);
    int64_t K = c->shape[1], row = 0;
    /* whole heads at a time when permuting, else as many rows as fit */
    int64_t step = c->permute_heads ? c->shape[0] / c->permute_heads : 1;
    int64_t rows = (int64_t)(chunk / (size_t)K) / step * step;
    static const unsigned char zero[32] = {0};
    size_t esize;
    dk_file_tensor_at(f, c->index, &t);
    esize = dk_dtype_block_bytes(t.dtype);
    if (rows < step) { fprintf(stderr, "convert: error: '%s': rows of %lld values are too long\n", c->name, (long long)K); return 1; }
    while (row < c->shape[0]) {
      int64_t r, j, nr = c->shape[0] - row < rows ? c->shape[0] - row : rows;
      size_t nb;
      for (r = 0; r < nr; r++) {
        int64_t from = row + r;
        if (c->permute_heads) {
          /* row 2i + j of a head is Hugging Face's row j * hd/2 + i: the
           * pairs RoPE rotates become adjacent */
          int64_t hd = step, base = (row + r) / hd * hd, w = (row + r) % hd;
          from = base + (w % 2) * (hd / 2) + w / 2;
        }
        /* through an aligned copy: safetensors data need not be aligned */
        memcpy(raw, (const char *)src + (size_t)from * (size_t)K * esize, (size_t)K * esize);
        dk_dequantize(t.dtype, raw, K, buf + r * K);
        for (j = 0; c->plus1 && j < K; j++) buf[r * K + j] += 1.0f;
      }
      nb = gw_quantize(gw_dtype(c->type), buf, nr * K, qbuf, nth);
      if (nb == 0 || fwrite(qbuf, 1, nb, o) != nb) { fprintf(stderr, "convert: error: writing %s failed\n", out); return 1; }
      row += nr;
    }
    if (c->nbytes % 32 && fwrite(zero, 1, 32 - c->nbytes % 32, o) != 32 - c->nbytes % 32) {
      fprintf(stderr, "convert: error: writing %s failed\n", out);
      return 1;
    }
  }
  if (fclose(o) != 0) { fprintf(stderr, "convert: error: closing %s failed\n", out); return 1; }
  printf("%s: %s, %lld tensors, %s, %.1f MB\n", out, arch, (long long)nt, tname, (double)(h.n + off) / 1e6);
  dk_file_close(f);
  free(buf);
  free(qbuf);
  free(raw);
  free(h.p);
  free(ts);
  return 0;
}
