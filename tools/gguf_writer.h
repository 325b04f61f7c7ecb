/* tools/gguf_writer.h — builds the header of a GGUF v3 file in memory:
 * metadata of every type, then tensor infos. tools/make_model.c streams the
 * tensor data after it; the tests and the fuzz seeds build whole small files
 * with it. Header-only, static functions; shapes are given in devkit's
 * order (outermost first) and written ne0-first as GGUF wants.
 *
 * Follows the GGUF specification (ggml's docs/gguf.md): little-endian,
 * strings are a u64 length and bytes, arrays a u32 element type, a u64
 * count and the elements, tensor data aligned to general.alignment (32).
 */
#ifndef TOOLS_GGUF_WRITER_H
#define TOOLS_GGUF_WRITER_H

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* a program uses some of these, not all */
#if defined(__GNUC__)
#define GW_FN static __attribute__((unused))
#else
#define GW_FN static
#endif

/* GGUF metadata value types */
enum { GW_U8 = 0, GW_I8, GW_U16, GW_I16, GW_U32, GW_I32, GW_F32, GW_BOOL, GW_STRING, GW_ARRAY, GW_U64, GW_I64, GW_F64 };
/* GGML tensor types this writer is used with */
enum { GW_T_F32 = 0, GW_T_F16 = 1, GW_T_Q4_0 = 2, GW_T_Q4_1 = 3, GW_T_Q5_0 = 6, GW_T_Q5_1 = 7, GW_T_Q8_0 = 8,
       GW_T_Q2_K = 10, GW_T_Q3_K = 11, GW_T_Q4_K = 12, GW_T_Q5_K = 13, GW_T_Q6_K = 14, GW_T_IQ2_XXS = 16,
       GW_T_IQ2_XS = 17, GW_T_IQ3_XXS = 18, GW_T_IQ4_NL = 20, GW_T_IQ3_S = 21, GW_T_IQ2_S = 22, GW_T_IQ4_XS = 23, GW_T_I32 = 26, GW_T_BF16 = 30 };

typedef struct {
  unsigned char *p;
  size_t n, cap;
  int failed;             /* out of memory somewhere: the buffer is useless */
} gw_buf;

GW_FN void gw_bytes(gw_buf *b, const void *src, size_t n) {
  if (b->failed) return;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 1024;
    unsigned char *p;
    while (cap < b->n + n) cap *= 2;
    p = (unsigned char *)realloc(b->p, cap);
    if (!p) { b->failed = 1; return; }
    b->p = p;
    b->cap = cap;
  }
  if (n) memcpy(b->p + b->n, src, n);
  b->n += n;
}
GW_FN void gw_u8(gw_buf *b, uint8_t v) { gw_bytes(b, &v, 1); }
GW_FN void gw_u32(gw_buf *b, uint32_t v) {
  unsigned char c[4];
  c[0] = (unsigned char)v; c[1] = (unsigned char)(v >> 8); c[2] = (unsigned char)(v >> 16); c[3] = (unsigned char)(v >> 24);
  gw_bytes(b, c, 4);
}
GW_FN void gw_u64(gw_buf *b, uint64_t v) { gw_u32(b, (uint32_t)v); gw_u32(b, (uint32_t)(v >> 32)); }
GW_FN void gw_f32(gw_buf *b, float f) { uint32_t u; memcpy(&u, &f, 4); gw_u32(b, u); }
GW_FN void gw_strn(gw_buf *b, const char *s, size_t n) { gw_u64(b, n); gw_bytes(b, s, n); }
GW_FN void gw_str(gw_buf *b, const char *s) { gw_strn(b, s, strlen(s)); }

/* the file header: magic, version, tensor count, metadata count */
GW_FN void gw_header(gw_buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
  gw_bytes(b, "GGUF", 4);
  gw_u32(b, version);
  gw_u64(b, n_tensors);
  gw_u64(b, n_kv);
}

GW_FN void gw_key(gw_buf *b, const char *key, uint32_t type) { gw_str(b, key); gw_u32(b, type); }
GW_FN void gw_kv_u32(gw_buf *b, const char *key, uint32_t v) { gw_key(b, key, GW_U32); gw_u32(b, v); }
GW_FN void gw_kv_f32(gw_buf *b, const char *key, float v) { gw_key(b, key, GW_F32); gw_f32(b, v); }
GW_FN void gw_kv_bool(gw_buf *b, const char *key, int v) { gw_key(b, key, GW_BOOL); gw_u8(b, (uint8_t)(v != 0)); }
GW_FN void gw_kv_str(gw_buf *b, const char *key, const char *v) { gw_key(b, key, GW_STRING); gw_str(b, v); }
GW_FN void gw_arr_head(gw_buf *b, const char *key, uint32_t elem, uint64_t n) {
  gw_key(b, key, GW_ARRAY);
  gw_u32(b, elem);
  gw_u64(b, n);
}

/* a tensor info; offset is from the start of the data section */
GW_FN void gw_tensor_info(gw_buf *b, const char *name, int ndim, const int64_t *shape, uint32_t type, uint64_t offset) {
  int d;
  gw_str(b, name);
  gw_u32(b, (uint32_t)ndim);
  for (d = ndim - 1; d >= 0; d--) gw_u64(b, (uint64_t)shape[d]);
  gw_u32(b, type);
  gw_u64(b, offset);
}

/* zero bytes up to the next multiple of align */
GW_FN void gw_pad(gw_buf *b, size_t align) {
  static const unsigned char zero[64] = {0};
  while (b->n % align) gw_bytes(b, zero, align - b->n % align < 64 ? align - b->n % align : 64);
}

/* bytes of a tensor of n elements of a GGML type */
GW_FN uint64_t gw_type_bytes(uint32_t type, uint64_t n) {
  switch (type) {
  case GW_T_F32: case GW_T_I32: return 4 * n;
  case GW_T_F16: case GW_T_BF16: return 2 * n;
  case GW_T_Q8_0: return n / 32 * 34;
  case GW_T_Q4_0: return n / 32 * 18;
  case GW_T_Q4_1: return n / 32 * 20;
  case GW_T_Q5_0: return n / 32 * 22;
  case GW_T_Q5_1: return n / 32 * 24;
  case GW_T_Q2_K: return n / 256 * 84;
  case GW_T_Q3_K: return n / 256 * 110;
  case GW_T_Q4_K: return n / 256 * 144;
  case GW_T_Q5_K: return n / 256 * 176;
  case GW_T_Q6_K: return n / 256 * 210;
  case GW_T_IQ4_NL: return n / 32 * 18;
  case GW_T_IQ4_XS: return n / 256 * 136;
  case GW_T_IQ3_XXS: return n / 256 * 98;
  case GW_T_IQ3_S: return n / 256 * 110;
  case GW_T_IQ2_XXS: return n / 256 * 66;
  case GW_T_IQ2_XS: return n / 256 * 74;
  case GW_T_IQ2_S: return n / 256 * 82;
  default: return 0;
  }
}

#ifdef DEVKIT_H
/* ---- the weights' types, as llama.cpp's quantizer picks them (make_model,
 * convert) ----
 * A --type: the GGML type of the weights, llama.cpp's file type number, and
 * for the mixes the type of the classifier (and of the tensors that get
 * more bits in the K mixes); iq: the mix is llama.cpp's IQ4_NL/IQ4_XS
 * (gw_pick). Lowercase names are one type throughout (llama-quantize
 * --pure), but for the fallbacks of gw_fit. */
typedef struct { const char *name; uint32_t type, file_type, more; int iq; } gw_type;
static const gw_type gw_types[] = {
  {"f32", GW_T_F32, 0, 0, 0}, {"f16", GW_T_F16, 1, 0, 0}, {"bf16", GW_T_BF16, 32, 0, 0}, {"q4_0", GW_T_Q4_0, 2, 0, 0}, {"q4_1", GW_T_Q4_1, 3, 0, 0},
  {"q8_0", GW_T_Q8_0, 7, 0, 0}, {"q5_0", GW_T_Q5_0, 8, 0, 0}, {"q5_1", GW_T_Q5_1, 9, 0, 0}, {"q2_K", GW_T_Q2_K, 10, 0, 0},
  {"q3_K", GW_T_Q3_K, 11, 0, 0}, {"q4_K", GW_T_Q4_K, 14, 0, 0}, {"q5_K", GW_T_Q5_K, 16, 0, 0}, {"q6_K", GW_T_Q6_K, 18, 0, 0},
  {"iq4_nl", GW_T_IQ4_NL, 25, 0, 0}, {"iq4_xs", GW_T_IQ4_XS, 30, 0, 0}, {"iq3_xxs", GW_T_IQ3_XXS, 23, 0, 0},
  {"iq3_s", GW_T_IQ3_S, 26, 0, 0}, {"iq2_xxs", GW_T_IQ2_XXS, 19, 0, 0}, {"iq2_xs", GW_T_IQ2_XS, 20, 0, 0},
  {"iq2_s", GW_T_IQ2_S, 28, 0, 0},
  {"Q4_K_M", GW_T_Q4_K, 15, GW_T_Q6_K, 0}, {"Q5_K_M", GW_T_Q5_K, 17, GW_T_Q6_K, 0},
  {"IQ4_NL", GW_T_IQ4_NL, 25, GW_T_Q6_K, 1}, {"IQ4_XS", GW_T_IQ4_XS, 30, GW_T_Q6_K, 1},
};

/* devkit's dtype of a GGML type (needs devkit.h before this header) */
GW_FN dk_dtype gw_dtype(uint32_t gw) {
  switch (gw) {
  case GW_T_F16: return DK_F16;
  case GW_T_BF16: return DK_BF16;
  case GW_T_Q8_0: return DK_Q8_0;
  case GW_T_Q4_0: return DK_Q4_0;
  case GW_T_Q4_1: return DK_Q4_1;
  case GW_T_Q5_0: return DK_Q5_0;
  case GW_T_Q5_1: return DK_Q5_1;
  case GW_T_Q2_K: return DK_Q2_K;
  case GW_T_Q3_K: return DK_Q3_K;
  case GW_T_Q4_K: return DK_Q4_K;
  case GW_T_Q5_K: return DK_Q5_K;
  case GW_T_Q6_K: return DK_Q6_K;
  case GW_T_IQ4_NL: return DK_IQ4_NL;
  case GW_T_IQ4_XS: return DK_IQ4_XS;
  case GW_T_IQ3_XXS: return DK_IQ3_XXS;
  case GW_T_IQ3_S: return DK_IQ3_S;
  case GW_T_IQ2_XXS: return DK_IQ2_XXS;
  case GW_T_IQ2_XS: return DK_IQ2_XS;
  case GW_T_IQ2_S: return DK_IQ2_S;
  default: return DK_F32;
  }
}

/* dk_quantize on every core: the quantizers are pure functions of their
 * blocks, so a chunk's blocks are shared out (a 1B model in iq4_xs took 17
 * minutes on one core). One thread's share: */
typedef struct { dk_dtype dt; const float *src; int64_t n; void *dst; size_t wrote; } gw_part;
GW_FN void *gw_quant_part(void *arg) {
  gw_part *p = (gw_part *)arg;
  p->wrote = p->n > 0 ? dk_quantize(p->dt, p->src, p->n, p->dst) : 0;
  return NULL;
}
/* dk_quantize of n values (a multiple of the block) on up to nth threads;
 * returns the bytes written, 0 if a share failed */
GW_FN size_t gw_quantize(dk_dtype dt, const float *src, int64_t n, void *dst, int nth) {
  enum { MAXT = 64 };
  gw_part part[MAXT];
  pthread_t th[MAXT];
  int started[MAXT] = {0}, t;
  size_t wrote = 0;
  int64_t blk = dk_dtype_block(dt), nb = n / blk, at = 0;
  if (nth > MAXT) nth = MAXT;
  if (nth > nb) nth = (int)nb;
  if (nth < 1) nth = 1;
  for (t = 0; t < nth; t++) {
    int64_t cnt = nb / nth + (t < nb % nth);
    part[t].dt = dt;
    part[t].src = src + at * blk;
    part[t].n = cnt * blk;
    part[t].dst = (char *)dst + (size_t)at * dk_dtype_block_bytes(dt);
    at += cnt;
    /* thread 0's share runs here; a thread that cannot start runs here too */
    if (t > 0) started[t] = pthread_create(&th[t], NULL, gw_quant_part, &part[t]) == 0;
  }
  gw_quant_part(&part[0]);
  for (t = 1; t < nth; t++) {
    if (started[t]) pthread_join(th[t], NULL);
    else gw_quant_part(&part[t]);
  }
  for (t = 0; t < nth; t++) {
    if (part[t].n > 0 && part[t].wrote == 0) return 0;
    wrote += part[t].wrote;
  }
  return wrote;
}

/* threads for gw_quantize: DEVKIT_CPU_THREADS, as the library, else the
 * online cores */
GW_FN int gw_threads(void) {
  const char *e = getenv("DEVKIT_CPU_THREADS");
  long n = e ? atol(e) : 1;
#ifdef _SC_NPROCESSORS_ONLN
  if (!e) n = sysconf(_SC_NPROCESSORS_ONLN);
#endif
  return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

/* llama.cpp's choice of the layers that get more bits in the _M mixes */
GW_FN int gw_more_bits(int layer, int layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

/* The type of a matrix under --type t (before gw_fit): role 'o' is the
 * classifier, or the embedding that serves as one; 'v' a layer's attn_v,
 * 'd' its ffn_down; 0 any other. The K mixes give their `more` type to the
 * classifier and to gw_more_bits's layers' attn_v and ffn_down; the IQ4
 * mixes (as llama.cpp makes them without an importance matrix) q6_K to
 * the classifier, q5_K to attn_v when 4 or more query heads share a KV
 * head, and to ffn_down in the first eighth of the layers. */
GW_FN uint32_t gw_pick(const gw_type *t, int role, int layer, int layers, int gqa) {
  if (!t->more) return t->type;
  if (role == 'o') return t->more;
  if (t->iq) {
    if (role == 'v' && gqa >= 4) return GW_T_Q5_K;
    if (role == 'd' && layer < layers / 8) return GW_T_Q5_K;
    return t->type;
  }
  return (role == 'v' || role == 'd') && gw_more_bits(layer, layers) ? t->more : t->type;
}

/* a K-quant (or iq4_xs, iq3, iq2) needs rows of whole 256-value super-blocks;
 * otherwise the 32-value format llama.cpp falls back to */
GW_FN uint32_t gw_fit(uint32_t type, int64_t row) {
  if (row % 256 == 0) return type;
  switch (type) {
  case GW_T_Q2_K: case GW_T_Q3_K: return GW_T_Q4_0;
  case GW_T_Q4_K: return GW_T_Q5_0;
  case GW_T_Q5_K: return GW_T_Q5_1;
  case GW_T_Q6_K: return GW_T_Q8_0;
  case GW_T_IQ4_XS: case GW_T_IQ3_XXS: case GW_T_IQ3_S: case GW_T_IQ2_XXS: case GW_T_IQ2_XS: case GW_T_IQ2_S:
    return GW_T_IQ4_NL;
  default: return type;
  }
}

#endif

#endif
