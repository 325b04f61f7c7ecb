/* backends/cpu_quant.h — the GGUF block formats beyond q8_0/q4_0: q4_1, q5_0,
 * q5_1 (32 values per block) and the K-quants q2_K, q3_K, q4_K, q5_K, q6_K
 * (256 values per super-block, split into sub-blocks of 16 or 32 with their
 * own small integer scales).
 *
 * Included by backends/cpu.h. Dequantization follows the layouts and the
 * float arithmetic of GGUF's reference dequantizers (the `gguf` Python
 * package's numpy code: f32 products, no fused multiply-add), so the values
 * are bit for bit the same; tests/test_quant.c checks that against reference
 * files written by tools/quant_ref.py. The quantizers of q4_1, q5_0 and q5_1
 * are the reference's too; the K-quant quantizers are devkit's own (a direct
 * min/max or max-magnitude fit per sub-block, scales quantized against the
 * super-block's largest), made so that every type can be produced.
 *
 * Layouts (bytes, in order; d and m are f16):
 *   q4_1  d, m, qs[16]              x = d*q + m, q in 0..15 (low nibbles first)
 *   q5_0  d, qh[4], qs[16]          x = d*(q - 16), bit 4 of q from qh (LE u32)
 *   q5_1  d, m, qh[4], qs[16]       x = d*q + m
 *   q2_K  scales[16], qs[64], d, dmin          16 groups of 16, 2-bit q,
 *         x = (d*(sc&15))*q - dmin*(sc>>4)
 *   q3_K  hmask[32], qs[64], scales[12], d     16 groups of 16, 6-bit signed
 *         scales, x = (d*(sc-32))*(q2 - (hbit ? 0 : 4))
 *   q4_K  d, dmin, scales[12], qs[128]         8 groups of 32, 6-bit scale
 *         and min each, x = (d*sc)*q - dmin*mn
 *   q5_K  d, dmin, scales[12], qh[32], qs[128] as q4_K with a fifth bit
 *   q6_K  ql[128], qh[64], scales[16] (i8), d  16 groups of 16,
 *         x = (d*sc)*(q - 32), q 6 bits
 *   iq4_nl  d, qs[16]                          x = d*K[q], q 4 bits as q4_1's
 *   iq4_xs  d, scales_h (u16), scales_l[4], qs[128]   8 groups of 32, 6-bit
 *         scales (low 4 bits in scales_l, nibble j%2 of byte j/2; high 2
 *         bits 2j.. of scales_h), x = (d*(sc-32))*K[q], each group's 16
 *         bytes of nibbles as iq4_nl's
 *   K = dk_iq4_levels: 16 levels spaced closer near zero, where most
 *   weights lie (a fixed table of the format, llama.cpp's kvalues_iq4nl).
 *   iq3_xxs  d, qs[64], ss[32]   8 groups of 32: qs[8g..8g+7] index points
 *         of the codebook G3 (4 values each); ss holds group g's u32
 *         (LE): four 7-bit sign codes, one per 8 values (the eighth sign
 *         makes the count of negatives even), and the scale in its top 4
 *         bits, x = (d*(0.5 + sc)*0.5) * G3[i][k] * sign
 *   iq3_s  d, qs[64], qh[8], signs[32], scales[4]   8 groups of 32: point
 *         i (of G3S) = qs[i] + 256 * bit i of qh, value j's sign bit j of
 *         signs, group g's scale nibble g%2 of scales[g/2],
 *         x = (d*(1 + 2*sc)) * G3S[i][k] * sign
 *   G3, G3S: the formats' codebooks, 256 and 512 points of four values in
 *   4..62 and 1..15 (backends/iq_grids.h).
 *   iq2_xxs  d, qs[64]   8 groups of 32, 8 bytes each: four points of G2
 *         (8 values each), then a u32 (LE) as iq3_xxs's: four 7-bit sign
 *         codes with their parity, the scale in the top 4 bits;
 *         x = (d*(0.5 + sc)*0.25) * G2[i][k] * sign
 *   iq2_xs  d, qs[32] (u16), scales[8]   point i (of G2X) the low 9 bits of
 *         qs[i], its 7-bit sign code (parity as above) the top 7; a scale per
 *         16 values, nibble h%2 of scales[h/2], x as iq2_xxs's
 *   iq2_s  d, qs[32], signs[32], qh[8], scales[8]   point i (of G2S) =
 *         qs[i] + 256 * bits 2(i%4).. of qh[i/4], signs byte i (one bit per
 *         value, no parity), scales as iq2_xs's
 *   G2, G2X, G2S: 256, 512 and 1024 points of eight values in {8, 25, 43}.
 */
#ifndef DK_BACKEND_CPU_QUANT_H
#define DK_BACKEND_CPU_QUANT_H

/* The reference computes d*q and then adds m, each rounded to f32; a fused
 * multiply-add would round once and differ in the last bit. */
/* GCC takes it per function; clang per block (DK__NOFMA_HERE opens each such
 * body), so the user's code after this header keeps its own setting. */
#if defined(__clang__)
#define DK__NOFMA
#define DK__NOFMA_HERE _Pragma("clang fp contract(off)")
#elif defined(__GNUC__)
#define DK__NOFMA __attribute__((optimize("fp-contract=off")))
#define DK__NOFMA_HERE
#else
#define DK__NOFMA
#define DK__NOFMA_HERE
#endif

typedef struct { uint16_t d, m; uint8_t qs[16]; } dk_block_q4_1;                      /* 20 */
typedef struct { uint16_t d; uint8_t qh[4], qs[16]; } dk_block_q5_0;                  /* 22 */
typedef struct { uint16_t d, m; uint8_t qh[4], qs[16]; } dk_block_q5_1;               /* 24 */
typedef struct { uint8_t scales[16], qs[64]; uint16_t d, dmin; } dk_block_q2_K;       /* 84 */
typedef struct { uint8_t hmask[32], qs[64], scales[12]; uint16_t d; } dk_block_q3_K;  /* 110 */
typedef struct { uint16_t d, dmin; uint8_t scales[12], qs[128]; } dk_block_q4_K;      /* 144 */
typedef struct { uint16_t d, dmin; uint8_t scales[12], qh[32], qs[128]; } dk_block_q5_K; /* 176 */
typedef struct { uint8_t ql[128], qh[64]; int8_t scales[16]; uint16_t d; } dk_block_q6_K; /* 210 */
typedef struct { uint16_t d; uint8_t qs[16]; } dk_block_iq4_nl;                       /* 18 */
typedef struct { uint16_t d, scales_h; uint8_t scales_l[4], qs[128]; } dk_block_iq4_xs; /* 136 */
static const int8_t dk_iq4_levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
typedef struct { uint16_t d; uint8_t qs[64], ss[32]; } dk_block_iq3_xxs;                 /* 98 */
typedef struct { uint16_t d; uint8_t qs[64], qh[8], signs[32], scales[4]; } dk_block_iq3_s; /* 110 */
/* iq2_xs's qs are u16 in the file; read here as byte pairs (blocks are only
 * 2-byte aligned, and the kernels read them as bytes either way) */
typedef struct { uint16_t d; uint8_t qs[64]; } dk_block_iq2_xxs;                         /* 66 */
typedef struct { uint16_t d; uint8_t qs[64], scales[8]; } dk_block_iq2_xs;               /* 74 */
typedef struct { uint16_t d; uint8_t qs[32], signs[32], qh[8], scales[8]; } dk_block_iq2_s; /* 82 */
#include "iq_grids.h"
#define DK__IQ_V(v) v,
static const uint32_t dk_iq3xxs_grid[256] = {DK_IQ3XXS_GRID(DK__IQ_V)};
static const uint32_t dk_iq3s_grid[512] = {DK_IQ3S_GRID(DK__IQ_V)};
static const uint64_t dk_iq2xxs_grid[256] = {DK_IQ2XXS_GRID(DK__IQ_V)};
static const uint64_t dk_iq2xs_grid[512] = {DK_IQ2XS_GRID(DK__IQ_V)};
static const uint64_t dk_iq2s_grid[1024] = {DK_IQ2S_GRID(DK__IQ_V)};
#undef DK__IQ_V
typedef char dk__quant_sizes_ok[(sizeof(dk_block_iq4_nl) == 18 && sizeof(dk_block_iq4_xs) == 136 &&
                                 sizeof(dk_block_iq3_xxs) == 98 && sizeof(dk_block_iq3_s) == 110 &&
                                 sizeof(dk_block_iq2_xxs) == 66 && sizeof(dk_block_iq2_xs) == 74 &&
                                 sizeof(dk_block_iq2_s) == 82 &&
                                 sizeof(dk_block_q4_1) == 20 && sizeof(dk_block_q5_0) == 22 &&
                                 sizeof(dk_block_q5_1) == 24 && sizeof(dk_block_q2_K) == 84 &&
                                 sizeof(dk_block_q3_K) == 110 && sizeof(dk_block_q4_K) == 144 &&
                                 sizeof(dk_block_q5_K) == 176 && sizeof(dk_block_q6_K) == 210) ? 1 : -1];

/* ==== dequantization, one block ============================================ */

/* the 32 4-bit values of a 16-byte nibble array: low nibbles are 0..15 */
static void dk__quant_nibbles(const uint8_t *qs, uint8_t q[32]) {
  int j;
  for (j = 0; j < 16; j++) { q[j] = qs[j] & 15; q[j + 16] = qs[j] >> 4; }
}

/* q = d*q + m over 32 values, or d*(q + off) when there is no m */
DK__NOFMA static void dk__quant_affine32(float d, float m, int has_m, int off, const uint8_t q[32], float *y) {
  DK__NOFMA_HERE
  int j;
  for (j = 0; j < 32; j++) {
    if (has_m) { float p = d * (float)q[j]; y[j] = p + m; }
    else y[j] = d * (float)(q[j] + off);
  }
}

/* the fifth bits of q5_0/q5_1: bit j of a little-endian u32 */
static void dk__quant_high5(const uint8_t qh[4], uint8_t q[32]) {
  uint32_t h = (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
  int j;
  for (j = 0; j < 32; j++) q[j] |= (uint8_t)(((h >> j) & 1) << 4);
}

static void dk__deq_q4_1(const void *blk, float *y) {
  const dk_block_q4_1 *b = (const dk_block_q4_1 *)blk;
  uint8_t q[32];
  dk__quant_nibbles(b->qs, q);
  dk__quant_affine32(dk_f16_to_f32(b->d), dk_f16_to_f32(b->m), 1, 0, q, y);
}
static void dk__deq_q5_0(const void *blk, float *y) {
  const dk_block_q5_0 *b = (const dk_block_q5_0 *)blk;
  uint8_t q[32];
  dk__quant_nibbles(b->qs, q);
  dk__quant_high5(b->qh, q);
  dk__quant_affine32(dk_f16_to_f32(b->d), 0.0f, 0, -16, q, y);
}
static void dk__deq_q5_1(const void *blk, float *y) {
  const dk_block_q5_1 *b = (const dk_block_q5_1 *)blk;
  uint8_t q[32];
  dk__quant_nibbles(b->qs, q);
  dk__quant_high5(b->qh, q);
  dk__quant_affine32(dk_f16_to_f32(b->d), dk_f16_to_f32(b->m), 1, 0, q, y);
}

/* q4_K/q5_K: 6-bit scale and min of sub-block j (0..7) from the 12 bytes */
static void dk__quant_scale_min_k4(const uint8_t s[12], int j, int *sc, int *mn) {
  if (j < 4) { *sc = s[j] & 63; *mn = s[j + 4] & 63; }
  else {
    *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    *mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

/* y = dl*q - ml for n values (the K-quants with mins) */
DK__NOFMA static void dk__quant_scale_sub(float dl, float ml, const uint8_t *q, int n, float *y) {
  DK__NOFMA_HERE
  int j;
  for (j = 0; j < n; j++) { float p = dl * (float)q[j]; y[j] = p - ml; }
}

static void dk__deq_q2_K(const void *blk, float *y) {
  const dk_block_q2_K *b = (const dk_block_q2_K *)blk;
  float d = dk_f16_to_f32(b->d), dmin = dk_f16_to_f32(b->dmin);
  uint8_t q[256];
  int i, l;
  /* value h*128 + s*32 + l is bits 2s..2s+1 of qs[h*32 + l] */
  for (i = 0; i < 256; i++) { l = i & 31; q[i] = (b->qs[(i >> 7) * 32 + l] >> (2 * ((i >> 5) & 3))) & 3; }
  for (i = 0; i < 16; i++)
    dk__quant_scale_sub(d * (float)(b->scales[i] & 15), dmin * (float)(b->scales[i] >> 4), q + 16 * i, 16, y + 16 * i);
}

static void dk__deq_q3_K(const void *blk, float *y) {
  const dk_block_q3_K *b = (const dk_block_q3_K *)blk;
  float d = dk_f16_to_f32(b->d);
  int i, j;
  for (i = 0; i < 16; i++) {
    int lo = i < 8 ? b->scales[i] & 15 : b->scales[i - 8] >> 4;
    int hi = (b->scales[8 + (i & 3)] >> (2 * (i >> 2))) & 3;
    float dl = d * (float)((lo | hi << 4) - 32);
    for (j = 0; j < 16; j++) {
      int k = 16 * i + j, l = k & 31;
      int q2 = (b->qs[(k >> 7) * 32 + l] >> (2 * ((k >> 5) & 3))) & 3;
      int hb = (b->hmask[l] >> (k >> 5)) & 1;
      y[k] = dl * (float)(q2 - (hb ? 0 : 4));
    }
  }
}

/* q4_K and q5_K: sub-block j takes the low (even j) or high (odd j) nibbles
 * of qs[32*(j/2) ..], and bit j of qh[l] as its fifth bit (q5_K) */
static void dk__deq_k45(const uint8_t *scales, const uint8_t *qs, const uint8_t *qh, uint16_t d16, uint16_t dmin16,
                        float *y) {
  float d = dk_f16_to_f32(d16), dmin = dk_f16_to_f32(dmin16);
  uint8_t q[32];
  int j, l, sc, mn;
  for (j = 0; j < 8; j++) {
    dk__quant_scale_min_k4(scales, j, &sc, &mn);
    for (l = 0; l < 32; l++) {
      q[l] = (qs[32 * (j >> 1) + l] >> (4 * (j & 1))) & 15;
      if (qh) q[l] |= (uint8_t)(((qh[l] >> j) & 1) << 4);
    }
    dk__quant_scale_sub(d * (float)sc, dmin * (float)mn, q, 32, y + 32 * j);
  }
}
static void dk__deq_q4_K(const void *blk, float *y) {
  const dk_block_q4_K *b = (const dk_block_q4_K *)blk;
  dk__deq_k45(b->scales, b->qs, NULL, b->d, b->dmin, y);
}
static void dk__deq_q5_K(const void *blk, float *y) {
  const dk_block_q5_K *b = (const dk_block_q5_K *)blk;
  dk__deq_k45(b->scales, b->qs, b->qh, b->d, b->dmin, y);
}

/* value k = h*128 + s*64 + l (l < 64) is nibble s of ql[h*64 + l]; its two
 * high bits are bits 2t..2t+1 of qh[h*32 + (k & 31)], t = (k >> 5) & 3 */
static int dk__quant_q6(const dk_block_q6_K *b, int k) {
  int h = k >> 7, lo = (b->ql[h * 64 + (k & 63)] >> (4 * ((k >> 6) & 1))) & 15;
  int hi = (b->qh[h * 32 + (k & 31)] >> (2 * ((k >> 5) & 3))) & 3;
  return (lo | hi << 4) - 32;
}
static void dk__deq_q6_K(const void *blk, float *y) {
  const dk_block_q6_K *b = (const dk_block_q6_K *)blk;
  float d = dk_f16_to_f32(b->d);
  int i, j;
  for (i = 0; i < 16; i++) {
    float dl = d * (float)b->scales[i];
    for (j = 0; j < 16; j++) y[16 * i + j] = dl * (float)dk__quant_q6(b, 16 * i + j);
  }
}

/* iq4_nl/iq4_xs: 32 values d * K[q] (the reference's one f32 product) */
static void dk__quant_iq4_32(float d, const uint8_t qs[16], float *y) {
  uint8_t q[32];
  int j;
  dk__quant_nibbles(qs, q);
  for (j = 0; j < 32; j++) y[j] = d * (float)dk_iq4_levels[q[j]];
}
/* iq4_xs group j's 6-bit scale code (0..63; the scale is d * (code - 32)) */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))   /* inside the CPU kernels too, which call nothing (tools/check_cpu_isa.sh) */
#endif
static inline int dk__quant_iq4xs_sc(const dk_block_iq4_xs *b, int j) {
  return ((b->scales_l[j >> 1] >> (4 * (j & 1))) & 15) | (((b->scales_h >> (2 * j)) & 3) << 4);
}
/* iq4 32-value group b of a row (iq4_xs: group b % 8 of super-block b / 8):
 * its 16 bytes of nibbles, its f16 d, and the integer its scale is d times
 * (iq4_nl 1, exact in f32) */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))
#endif
static inline const uint8_t *dk__quant_iq4_group(dk_dtype dt, const char *row, int64_t b, uint16_t *d16, int *sc) {
  if (dt == DK_IQ4_NL) {
    const dk_block_iq4_nl *p = (const dk_block_iq4_nl *)row + b;
    *d16 = p->d;
    *sc = 1;
    return p->qs;
  } else {
    const dk_block_iq4_xs *p = (const dk_block_iq4_xs *)row + b / 8;
    *d16 = p->d;
    *sc = dk__quant_iq4xs_sc(p, (int)(b & 7)) - 32;
    return p->qs + 16 * (b & 7);
  }
}
static void dk__deq_iq4_nl(const void *blk, float *y) {
  const dk_block_iq4_nl *b = (const dk_block_iq4_nl *)blk;
  dk__quant_iq4_32(dk_f16_to_f32(b->d), b->qs, y);
}
static void dk__deq_iq4_xs(const void *blk, float *y) {
  const dk_block_iq4_xs *b = (const dk_block_iq4_xs *)blk;
  float d = dk_f16_to_f32(b->d);
  int j;
  for (j = 0; j < 8; j++) dk__quant_iq4_32(d * (float)(dk__quant_iq4xs_sc(b, j) - 32), b->qs + 16 * j, y + 32 * j);
}

/* iq3_xxs: a group's 32 sign bits (bit j: value j is negative) from its
 * u32: four 7-bit codes, each with the parity of its bits as the eighth,
 * all four at once (the spread puts code l in byte l; the xor-fold, par8,
 * leaves each byte's parity in its bit 0, the fold's spill from the byte
 * above landing only in bits 4-7, which the later steps do not read) */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))
#endif
static inline uint32_t dk__quant_par8(uint32_t t) {
  uint32_t p = t ^ (t >> 4);
  p ^= p >> 2;
  p ^= p >> 1;
  return t | (p & 0x01010101u) << 7;
}
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))
#endif
static inline uint32_t dk__quant_iq3xxs_signs(uint32_t ss) {
  return dk__quant_par8((ss & 0x7fu) | ((ss << 1) & 0x7f00u) | ((ss << 2) & 0x7f0000u) | ((ss << 3) & 0x7f000000u));
}
/* iq2_xs: the same from a group's four u16 (v, LE), whose top 7 bits are
 * the codes: code l from bit 16l + 9 to byte l */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))
#endif
static inline uint32_t dk__quant_iq2xs_signs(uint64_t v) {
  return dk__quant_par8((uint32_t)(((v >> 9) & 0x7fu) | ((v >> 17) & 0x7f00u) | ((v >> 25) & 0x7f0000u) | ((v >> 33) & 0x7f000000u)));
}
/* iq3 group g (32 values) of super-block blk as signed codes (the
 * codebook's values with their signs, |q| <= 62) and the f32 scale they are
 * times, computed from the block's d (as f32: the caller converts it, so
 * that the kernels call nothing) as the reference computes it */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))   /* inside the CPU kernels too */
#endif
static inline float dk__quant_iq3_group(dk_dtype dt, const void *blk, float d, int g, int8_t q[32]) {
  int l, j;
  if (dt == DK_IQ3_XXS) {
    const dk_block_iq3_xxs *p = (const dk_block_iq3_xxs *)blk;
    uint32_t ss = (uint32_t)p->ss[4 * g] | (uint32_t)p->ss[4 * g + 1] << 8 | (uint32_t)p->ss[4 * g + 2] << 16 |
                  (uint32_t)p->ss[4 * g + 3] << 24;
    const uint32_t s32 = dk__quant_iq3xxs_signs(ss);
    for (l = 0; l < 4; l++) {
      uint32_t sg = s32 >> (8 * l);
      uint64_t pt = (uint64_t)dk_iq3xxs_grid[p->qs[8 * g + 2 * l]] | (uint64_t)dk_iq3xxs_grid[p->qs[8 * g + 2 * l + 1]] << 32;
      for (j = 0; j < 8; j++) {
        int v = (int)((pt >> (8 * j)) & 255);
        q[8 * l + j] = (int8_t)((sg >> j) & 1 ? -v : v);
      }
    }
    return d * (0.5f + (float)(ss >> 28)) * 0.5f;
  } else {
    const dk_block_iq3_s *p = (const dk_block_iq3_s *)blk;
    for (l = 0; l < 8; l++) {
      uint32_t pt = dk_iq3s_grid[p->qs[8 * g + l] | ((p->qh[g] >> l) & 1) << 8];
      uint32_t sg = (uint32_t)p->signs[4 * g + (l >> 1)] >> (4 * (l & 1));
      for (j = 0; j < 4; j++) {
        int v = (int)((pt >> (8 * j)) & 255);
        q[4 * l + j] = (int8_t)((sg >> j) & 1 ? -v : v);
      }
    }
    return d * (float)(1 + 2 * ((p->scales[g >> 1] >> (4 * (g & 1))) & 15));
  }
}
static void dk__deq_iq3(dk_dtype dt, const void *blk, float *y) {
  int8_t q[32];
  float d = dk_f16_to_f32(*(const uint16_t *)blk);   /* d leads both layouts */
  int g, j;
  for (g = 0; g < 8; g++) {
    float db = dk__quant_iq3_group(dt, blk, d, g, q);
    for (j = 0; j < 32; j++) y[32 * g + j] = db * (float)q[j];
  }
}
static void dk__deq_iq3_xxs(const void *blk, float *y) { dk__deq_iq3(DK_IQ3_XXS, blk, y); }
static void dk__deq_iq3_s(const void *blk, float *y) { dk__deq_iq3(DK_IQ3_S, blk, y); }

/* iq2 group g (32 values: four points) of super-block blk: the point
 * indices to idx, the 32 sign bits (bit j: value j is negative) returned,
 * the scales of its two 16-value halves (equal for iq2_xxs) computed from
 * the block's d as the reference computes them. iq2_xs's sign codes carry
 * iq3_xxs's parity, so they go through the same fold. The scalar path's
 * (the kernels decode in registers, dk__cpu_iq2_mag). */
static uint32_t dk__quant_iq2_index(dk_dtype dt, const void *blk, float d, int g, uint32_t idx[4], float db[2]) {
  const uint8_t *b = (const uint8_t *)blk + 2;   /* past d */
  uint32_t s32, sc;
  int l;
  if (dt == DK_IQ2_XXS) {
    uint32_t ss = (uint32_t)b[8 * g + 4] | (uint32_t)b[8 * g + 5] << 8 | (uint32_t)b[8 * g + 6] << 16 | (uint32_t)b[8 * g + 7] << 24;
    for (l = 0; l < 4; l++) idx[l] = b[8 * g + l];
    db[0] = db[1] = d * (0.5f + (float)(ss >> 28)) * 0.25f;
    return dk__quant_iq3xxs_signs(ss);
  }
  if (dt == DK_IQ2_XS) {
    uint64_t v = 0;
    for (l = 0; l < 8; l++) v |= (uint64_t)b[8 * g + l] << (8 * l);
    for (l = 0; l < 4; l++) idx[l] = (uint32_t)(v >> (16 * l)) & 511;
    s32 = dk__quant_iq2xs_signs(v);
    sc = b[64 + g];
  } else {
    for (l = 0; l < 4; l++) idx[l] = b[4 * g + l] | ((uint32_t)(b[64 + g] >> (2 * l)) & 3) << 8;
    s32 = (uint32_t)b[32 + 4 * g] | (uint32_t)b[33 + 4 * g] << 8 | (uint32_t)b[34 + 4 * g] << 16 | (uint32_t)b[35 + 4 * g] << 24;
    sc = b[72 + g];
  }
  db[0] = d * (0.5f + (float)(sc & 15)) * 0.25f;
  db[1] = d * (0.5f + (float)(sc >> 4)) * 0.25f;
  return s32;
}
static inline const uint64_t *dk__quant_iq2_grid(dk_dtype dt) {
  return dt == DK_IQ2_XXS ? dk_iq2xxs_grid : dt == DK_IQ2_XS ? dk_iq2xs_grid : dk_iq2s_grid;
}
/* the same as signed codes (|q| <= 43) */
static void dk__quant_iq2_group(dk_dtype dt, const void *blk, float d, int g, int8_t q[32], float db[2]) {
  const uint64_t *grid = dk__quant_iq2_grid(dt);
  uint32_t idx[4], s32 = dk__quant_iq2_index(dt, blk, d, g, idx, db);
  int j;
  for (j = 0; j < 32; j++) {
    int v = (int)((grid[idx[j >> 3]] >> (8 * (j & 7))) & 255);
    q[j] = (int8_t)((s32 >> j) & 1 ? -v : v);
  }
}
static void dk__deq_iq2(dk_dtype dt, const void *blk, float *y) {
  int8_t q[32];
  float d = dk_f16_to_f32(*(const uint16_t *)blk), db[2];
  int g, j;
  for (g = 0; g < 8; g++) {
    dk__quant_iq2_group(dt, blk, d, g, q, db);
    for (j = 0; j < 32; j++) y[32 * g + j] = db[j >> 4] * (float)q[j];
  }
}
static void dk__deq_iq2_xxs(const void *blk, float *y) { dk__deq_iq2(DK_IQ2_XXS, blk, y); }
static void dk__deq_iq2_xs(const void *blk, float *y) { dk__deq_iq2(DK_IQ2_XS, blk, y); }
static void dk__deq_iq2_s(const void *blk, float *y) { dk__deq_iq2(DK_IQ2_S, blk, y); }

typedef void (*dk__deq_fn)(const void *blk, float *y);
static dk__deq_fn dk__quant_deq_fn(dk_dtype t) {
  switch (t) {
  case DK_Q4_1: return dk__deq_q4_1;
  case DK_Q5_0: return dk__deq_q5_0;
  case DK_Q5_1: return dk__deq_q5_1;
  case DK_Q2_K: return dk__deq_q2_K;
  case DK_Q3_K: return dk__deq_q3_K;
  case DK_Q4_K: return dk__deq_q4_K;
  case DK_Q5_K: return dk__deq_q5_K;
  case DK_Q6_K: return dk__deq_q6_K;
  case DK_IQ4_NL: return dk__deq_iq4_nl;
  case DK_IQ4_XS: return dk__deq_iq4_xs;
  case DK_IQ3_XXS: return dk__deq_iq3_xxs;
  case DK_IQ3_S: return dk__deq_iq3_s;
  case DK_IQ2_XXS: return dk__deq_iq2_xxs;
  case DK_IQ2_XS: return dk__deq_iq2_xs;
  case DK_IQ2_S: return dk__deq_iq2_s;
  default: return NULL;
  }
}

static void dk__dequant_more(dk_dtype t, const void *src, int64_t nblocks, float *dst) {
  dk__deq_fn f = dk__quant_deq_fn(t);
  size_t bb = dk_dtype_block_bytes(t);
  int bs = dk_dtype_block(t);
  int64_t b;
  if (!f) return;
  for (b = 0; b < nblocks; b++) f((const char *)src + (size_t)b * bb, dst + b * bs);
}

/* ==== quantization ========================================================= */

static void dk__quant_pack_nibbles(const uint8_t q[32], uint8_t qs[16]) {
  int j;
  for (j = 0; j < 16; j++) qs[j] = (uint8_t)((q[j] & 15) | (q[j + 16] & 15) << 4);
}
static void dk__quant_pack_high5(const uint8_t q[32], uint8_t qh[4]) {
  uint32_t h = 0;
  int j;
  for (j = 0; j < 32; j++) h |= (uint32_t)((q[j] >> 4) & 1) << j;
  for (j = 0; j < 4; j++) qh[j] = (uint8_t)(h >> (8 * j));
}

/* q4_1 / q5_1 as the reference: d = (max-min)/nmax, q = trunc((x-min)/d + 0.5) */
DK__NOFMA static void dk__quant_minmax32(const float *x, int nmax, uint16_t *d16, uint16_t *m16, uint8_t q[32]) {
  DK__NOFMA_HERE
  float mx = x[0], mn = x[0], d, id;
  int j;
  for (j = 1; j < 32; j++) { mx = x[j] > mx ? x[j] : mx; mn = x[j] < mn ? x[j] : mn; }
  d = (mx - mn) / (float)nmax;
  id = d != 0.0f ? 1.0f / d : 0.0f;
  for (j = 0; j < 32; j++) {
    int v = (int)((x[j] - mn) * id + 0.5f);
    q[j] = (uint8_t)(v > nmax ? nmax : v);
  }
  *d16 = dk_f32_to_f16(d);
  *m16 = dk_f32_to_f16(mn);
}

DK__NOFMA static void dk__quant_q5_0_block(const float *x, dk_block_q5_0 *b) {
  DK__NOFMA_HERE
  float amax = 0.0f, mx = 0.0f, d, id;
  uint8_t q[32];
  int j;
  for (j = 0; j < 32; j++)
    if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); mx = x[j]; }
  d = mx / -16.0f;
  id = d != 0.0f ? 1.0f / d : 0.0f;
  for (j = 0; j < 32; j++) {
    int v = (int)(x[j] * id + 16.5f);
    q[j] = (uint8_t)(v > 31 ? 31 : v);
  }
  b->d = dk_f32_to_f16(d);
  dk__quant_pack_nibbles(q, b->qs);
  dk__quant_pack_high5(q, b->qh);
}

static int dk__quant_clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
static int dk__quant_round(float v) { return (int)lrintf(v); }

/* K-quants with mins (q2_K, q4_K, q5_K): sub-blocks of n values fit as
 * x ≈ s*q - m with q in 0..nmax, m >= 0; s and m are then coded as small
 * integers (0..lmax) times the super-block's d and dmin. */
typedef struct { float d, dmin; int ls[16], lm[16]; } dk__quant_kfit;
static void dk__quant_fit_min(const float *x, int nsub, int n, int nmax, int lmax, dk__quant_kfit *f) {
  float s[16], m[16], smax = 0.0f, mmax = 0.0f;
  int i, j;
  for (i = 0; i < nsub; i++) {
    float lo = 0.0f, hi = x[i * n];
    for (j = 0; j < n; j++) {
      lo = x[i * n + j] < lo ? x[i * n + j] : lo;
      hi = x[i * n + j] > hi ? x[i * n + j] : hi;
    }
    s[i] = (hi - lo) / (float)nmax;
    m[i] = -lo;
    smax = s[i] > smax ? s[i] : smax;
    mmax = m[i] > mmax ? m[i] : mmax;
  }
  f->d = dk_f16_to_f32(dk_f32_to_f16(smax / (float)lmax));
  f->dmin = dk_f16_to_f32(dk_f32_to_f16(mmax / (float)lmax));
  for (i = 0; i < nsub; i++) {
    /* the scale rounds up so the largest value still fits in nmax steps */
    f->ls[i] = f->d > 0.0f ? dk__quant_clampi((int)ceilf(s[i] / f->d - 1e-4f), 0, lmax) : 0;
    f->lm[i] = f->dmin > 0.0f ? dk__quant_clampi(dk__quant_round(m[i] / f->dmin), 0, lmax) : 0;
  }
}
/* the integer codes of one sub-block under its coded scale and min */
static void dk__quant_codes_min(const float *x, int n, float dl, float ml, int nmax, uint8_t *q) {
  int j;
  for (j = 0; j < n; j++) q[j] = (uint8_t)(dl > 0.0f ? dk__quant_clampi(dk__quant_round((x[j] + ml) / dl), 0, nmax) : 0);
}

static void dk__quant_k45(const float *x, int nmax, uint16_t *d16, uint16_t *dmin16, uint8_t scales[12],
                          uint8_t qs[128], uint8_t *qh) {
  dk__quant_kfit f;
  uint8_t q[256];
  int j, l;
  dk__quant_fit_min(x, 8, 32, nmax, 63, &f);
  *d16 = dk_f32_to_f16(f.d);
  *dmin16 = dk_f32_to_f16(f.dmin);
  for (j = 0; j < 8; j++) {
    int sc = f.ls[j], mn = f.lm[j];
    if (j < 4) { scales[j] = (uint8_t)sc; scales[j + 4] = (uint8_t)mn; }
    else {
      scales[j + 4] = (uint8_t)((sc & 15) | (mn & 15) << 4);
      scales[j - 4] |= (uint8_t)((sc >> 4) << 6);
      scales[j] |= (uint8_t)((mn >> 4) << 6);
    }
    dk__quant_codes_min(x + 32 * j, 32, f.d * (float)sc, f.dmin * (float)mn, nmax, q + 32 * j);
  }
  memset(qs, 0, 128);
  if (qh) memset(qh, 0, 32);
  for (j = 0; j < 8; j++)
    for (l = 0; l < 32; l++) {
      qs[32 * (j >> 1) + l] |= (uint8_t)((q[32 * j + l] & 15) << (4 * (j & 1)));
      if (qh) qh[l] |= (uint8_t)(((q[32 * j + l] >> 4) & 1) << j);
    }
}

static void dk__quant_q2_K_block(const float *x, dk_block_q2_K *b) {
  dk__quant_kfit f;
  uint8_t q[256];
  int i;
  dk__quant_fit_min(x, 16, 16, 3, 15, &f);
  b->d = dk_f32_to_f16(f.d);
  b->dmin = dk_f32_to_f16(f.dmin);
  for (i = 0; i < 16; i++) {
    b->scales[i] = (uint8_t)(f.ls[i] | f.lm[i] << 4);
    dk__quant_codes_min(x + 16 * i, 16, f.d * (float)f.ls[i], f.dmin * (float)f.lm[i], 3, q + 16 * i);
  }
  memset(b->qs, 0, sizeof b->qs);
  for (i = 0; i < 256; i++) b->qs[(i >> 7) * 32 + (i & 31)] |= (uint8_t)(q[i] << (2 * ((i >> 5) & 3)));
}

/* symmetric K-quants (q3_K, q6_K): groups of 16 fit as x ≈ s*q with q in
 * qmin..-qmin-1; s is the signed value of largest magnitude over qmin, so
 * that value lands exactly on qmin. Scales are coded as integers in
 * -lmax..lmax times d. Returns d; ls and q receive the codes. */
static float dk__quant_fit_sym(const float *x, int qmin, int lmax, int ls[16], int q[256]) {
  float s[16], smax = 0.0f, d;
  int i, j;
  for (i = 0; i < 16; i++) {
    float amax = 0.0f, v = 0.0f;
    for (j = 0; j < 16; j++)
      if (fabsf(x[16 * i + j]) > amax) { amax = fabsf(x[16 * i + j]); v = x[16 * i + j]; }
    s[i] = v / (float)qmin;
    smax = fabsf(s[i]) > smax ? fabsf(s[i]) : smax;
  }
  d = dk_f16_to_f32(dk_f32_to_f16(smax / (float)lmax));
  for (i = 0; i < 16; i++) {
    float dl;
    ls[i] = d > 0.0f ? dk__quant_clampi(dk__quant_round(s[i] / d), -lmax, lmax) : 0;
    dl = d * (float)ls[i];
    for (j = 0; j < 16; j++)
      q[16 * i + j] = dl != 0.0f ? dk__quant_clampi(dk__quant_round(x[16 * i + j] / dl), qmin, -qmin - 1) : 0;
  }
  return d;
}

static void dk__quant_q3_K_block(const float *x, dk_block_q3_K *b) {
  int ls[16], q[256], i;
  b->d = dk_f32_to_f16(dk__quant_fit_sym(x, -4, 31, ls, q));
  memset(b->scales, 0, sizeof b->scales);
  memset(b->qs, 0, sizeof b->qs);
  memset(b->hmask, 0, sizeof b->hmask);
  for (i = 0; i < 16; i++) {
    int c = ls[i] + 32;
    b->scales[i & 7] |= (uint8_t)((c & 15) << (4 * (i >> 3)));
    b->scales[8 + (i & 3)] |= (uint8_t)((c >> 4) << (2 * (i >> 2)));
  }
  for (i = 0; i < 256; i++) {
    int u = q[i] + 4;   /* 0..7: two low bits in qs, the third in hmask */
    b->qs[(i >> 7) * 32 + (i & 31)] |= (uint8_t)((u & 3) << (2 * ((i >> 5) & 3)));
    b->hmask[i & 31] |= (uint8_t)((u >> 2) << (i >> 5));
  }
}

static void dk__quant_q6_K_block(const float *x, dk_block_q6_K *b) {
  int ls[16], q[256], i;
  b->d = dk_f32_to_f16(dk__quant_fit_sym(x, -32, 127, ls, q));
  for (i = 0; i < 16; i++) b->scales[i] = (int8_t)ls[i];
  memset(b->ql, 0, sizeof b->ql);
  memset(b->qh, 0, sizeof b->qh);
  for (i = 0; i < 256; i++) {
    int u = q[i] + 32, h = i >> 7;
    b->ql[h * 64 + (i & 63)] |= (uint8_t)((u & 15) << (4 * ((i >> 6) & 1)));
    b->qh[h * 32 + (i & 31)] |= (uint8_t)((u >> 4) << (2 * ((i >> 5) & 3)));
  }
}

/* iq4: the level nearest v (in units of the scale), ties to the lower. A
 * search took four mispredicted branches a value (the iq4 quantizers ran at
 * 1 M values/s: 15 minutes for a 1B model). The levels lie 11 or more apart,
 * so a cell of 8 holds at most one midpoint: the level nearest the cell's
 * left edge, then the comparison with the next level (the search's own
 * comparison, so ties go as they did). The same as the search for all 2^32
 * floats, NaN and the infinities included (checked once, when written);
 * test_quant.c's quant_iq4_codes_nearest checks the codes it gives. */
static const uint8_t dk__iq4_cell[32] = {0, 0, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7,
                                         8, 9, 9, 10, 11, 11, 12, 12, 13, 13, 14, 14, 14, 15, 15, 15};
static inline int dk__quant_iq4_nearest(float v) {
  float u = (v + 128.0f) * 0.125f;
  int n = dk__iq4_cell[u < 0.0f ? 0 : u < 31.0f ? (int)u : 31];
  return n + (n < 15 && v - (float)dk_iq4_levels[n] > (float)dk_iq4_levels[n + 1] - v);
}
/* One group of n values as s * K[q]: the scales that put the value of
 * largest magnitude on each of the levels near the table's ends, each
 * tried with the nearest levels and then the least-squares s for those
 * levels; the fit of least squared error wins. Returns s, codes to q. */
static float dk__quant_iq4_fit(const float *x, int n, uint8_t *q) {
  static const int ends[6] = {0, 1, 2, 13, 14, 15};
  float amax = 0.0f, mx = 0.0f, best = -1.0f, bs = 0.0f;
  uint8_t c[32];
  int e, t, j;
  for (j = 0; j < n; j++)
    if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); mx = x[j]; }
  if (amax == 0.0f) { memset(q, 8, (size_t)n); return 0.0f; }
  for (e = 0; e < 6; e++)
    for (t = -4; t <= 4; t++) {
      float s = mx / ((float)dk_iq4_levels[ends[e]] * (1.0f + 0.02f * (float)t)), id, sxl = 0.0f, sll = 0.0f, err = 0.0f;
      id = 1.0f / s;
      for (j = 0; j < n; j++) {
        float l;
        c[j] = (uint8_t)dk__quant_iq4_nearest(x[j] * id);
        l = (float)dk_iq4_levels[c[j]];
        sxl += x[j] * l;
        sll += l * l;
      }
      s = sxl / sll;
      for (j = 0; j < n; j++) { float r = x[j] - s * (float)dk_iq4_levels[c[j]]; err += r * r; }
      if (best < 0.0f || err < best) { best = err; bs = s; memcpy(q, c, (size_t)n); }
    }
  return bs;
}
static void dk__quant_iq4_nl_block(const float *x, dk_block_iq4_nl *b) {
  uint8_t q[32];
  float d = dk__quant_iq4_fit(x, 32, q);
  b->d = dk_f32_to_f16(d);
  dk__quant_pack_nibbles(q, b->qs);
}
/* iq4_xs: each group's own best scale, then those coded as d * (-32..31)
 * with the largest on -32 (its sign folded into d), and every value's level
 * chosen again under its coded scale */
static void dk__quant_iq4_xs_block(const float *x, dk_block_iq4_xs *b) {
  float s[8], smax = 0.0f, d;
  uint8_t q[32];
  int j, k;
  for (j = 0; j < 8; j++) {
    s[j] = dk__quant_iq4_fit(x + 32 * j, 32, q);
    if (fabsf(s[j]) > fabsf(smax)) smax = s[j];
  }
  d = dk_f16_to_f32(dk_f32_to_f16(smax / -32.0f));
  b->d = dk_f32_to_f16(d);
  b->scales_h = 0;
  memset(b->scales_l, 0, sizeof b->scales_l);
  for (j = 0; j < 8; j++) {
    int ls = d != 0.0f ? dk__quant_clampi(dk__quant_round(s[j] / d), -32, 31) : 0;
    float dl = d * (float)ls;
    b->scales_l[j >> 1] |= (uint8_t)(((ls + 32) & 15) << (4 * (j & 1)));
    b->scales_h |= (uint16_t)(((ls + 32) >> 4) << (2 * j));
    for (k = 0; k < 32; k++) q[k] = (uint8_t)(dl != 0.0f ? dk__quant_iq4_nearest(x[32 * j + k] / dl) : 8);
    dk__quant_pack_nibbles(q, b->qs + 16 * j);
  }
}

/* iq3 and iq2: four or eight magnitudes at a time as a codebook point. The
 * point nearest a group is looked up by the point of the levels' lattice
 * nearest it (each coordinate rounded to the magnitudes the codebook uses:
 * eight for iq3, three for iq2): near[key] caches, per lattice point, the
 * codebook point nearest it and whether it is that point itself, cand[key]
 * its DK__IQ_NC nearest. The scale search takes the cached point; the final
 * codes, where the lattice point is not a codebook point, the best of its
 * candidates for the values themselves (the whole codebook where cand could
 * not be allocated; that search had taken half the iq3 quantizer's time).
 * Error is plain squared error. */
#define DK__IQ_NC 8
#define DK__IQ_KEYS 6561   /* 8^4 lattice points for iq3, 3^8 for iq2 */
typedef struct {
  const uint32_t *g4;   /* iq3's points, or NULL */
  const uint64_t *g8;   /* iq2's */
  int npts, dim, nlv;
  const uint8_t *lv;    /* the nlv magnitudes, rising */
  uint16_t near[DK__IQ_KEYS];  /* point | 0x8000 when exact; 0xffff unknown */
  uint16_t *cand;       /* [DK__IQ_KEYS][DK__IQ_NC], filled with near; or NULL */
} dk__iq_book;
static const uint8_t dk__iq_levels[3][8] = {{4, 12, 20, 28, 36, 44, 52, 62}, {1, 3, 5, 7, 9, 11, 13, 15}, {8, 25, 43}};

static void dk__iq_book_init(dk__iq_book *bk, dk_dtype dt) {
  const int two = dt == DK_IQ2_XXS || dt == DK_IQ2_XS || dt == DK_IQ2_S;
  bk->g4 = dt == DK_IQ3_XXS ? dk_iq3xxs_grid : dt == DK_IQ3_S ? dk_iq3s_grid : NULL;
  bk->g8 = two ? dk__quant_iq2_grid(dt) : NULL;
  bk->npts = dt == DK_IQ3_XXS || dt == DK_IQ2_XXS ? 256 : dt == DK_IQ2_S ? 1024 : 512;
  bk->dim = two ? 8 : 4;
  bk->nlv = two ? 3 : 8;
  bk->lv = dk__iq_levels[two ? 2 : dt == DK_IQ3_XXS ? 0 : 1];
  memset(bk->near, 0xff, sizeof bk->near);
  bk->cand = (uint16_t *)malloc(sizeof(uint16_t) * DK__IQ_KEYS * DK__IQ_NC);
}
/* magnitude k of point i */
static int dk__iq_at(const dk__iq_book *bk, int i, int k) {
  return bk->g4 ? (int)((bk->g4[i] >> (8 * k)) & 255) : (int)((bk->g8[i] >> (8 * k)) & 255);
}
/* squared distance of dim magnitudes u from point i */
static float dk__iq_dist(const dk__iq_book *bk, const float *u, int i) {
  float e = 0.0f;
  int k;
  for (k = 0; k < bk->dim; k++) {
    float r = u[k] - (float)dk__iq_at(bk, i, k);
    e += r * r;
  }
  return e;
}
/* the codebook point nearest u (magnitudes in the levels' units); the nc
 * nearest, nearest first, to nc_out when given */
static int dk__iq_search(const dk__iq_book *bk, const float *u, uint16_t *nc_out) {
  float bd[DK__IQ_NC];
  uint16_t bi[DK__IQ_NC];
  int i, j, n = 0;
  for (i = 0; i < bk->npts; i++) {
    float e = dk__iq_dist(bk, u, i);
    if (n == DK__IQ_NC && e >= bd[n - 1]) continue;
    for (j = n < DK__IQ_NC ? n++ : n - 1; j > 0 && bd[j - 1] > e; j--) { bd[j] = bd[j - 1]; bi[j] = bi[j - 1]; }
    bd[j] = e;
    bi[j] = (uint16_t)i;
  }
  if (nc_out) memcpy(nc_out, bi, sizeof bi);
  return bi[0];
}
static int dk__iq_point(dk__iq_book *bk, const float *u, int exact_search) {
  int key = 0, k, e, mul = 1, dig[8];
  for (k = 0; k < bk->dim; k++) {
    int i = 0;
    while (i < bk->nlv - 1 && u[k] > 0.5f * (float)(bk->lv[i] + bk->lv[i + 1])) i++;
    dig[k] = i;
    key += i * mul;
    mul *= bk->nlv;
  }
  e = bk->near[key];
  if (e == 0xffff) {
    float c[8];
    int pt, same = 1;
    for (k = 0; k < bk->dim; k++) c[k] = (float)bk->lv[dig[k]];
    pt = dk__iq_search(bk, c, bk->cand ? bk->cand + DK__IQ_NC * key : NULL);
    for (k = 0; k < bk->dim; k++) same &= dk__iq_at(bk, pt, k) == bk->lv[dig[k]];
    e = bk->near[key] = (uint16_t)(pt | (same ? 0x8000 : 0));
  }
  if ((e & 0x8000) || !exact_search) return e & 0x7fff;
  if (!bk->cand) return dk__iq_search(bk, u, NULL);
  {
    const uint16_t *c = bk->cand + DK__IQ_NC * key;
    float best = dk__iq_dist(bk, u, c[0]);
    int i, bi = c[0];
    for (i = 1; i < DK__IQ_NC; i++) {
      float d = dk__iq_dist(bk, u, c[i]);
      if (d < best) { best = d; bi = c[i]; }
    }
    return bi;
  }
}
/* n (a multiple of dim) values as s * (+-points): the points for scale s,
 * their magnitudes to m; returns the squared error */
static float dk__iq_code(dk__iq_book *bk, const float *x, int n, float s, int exact, uint16_t *pts, float *m) {
  float err = 0.0f, id = s > 0.0f ? 1.0f / s : 0.0f;
  int j, k;
  for (j = 0; j < n; j += bk->dim) {
    float u[8];
    for (k = 0; k < bk->dim; k++) u[k] = fabsf(x[j + k]) * id;
    pts[j / bk->dim] = (uint16_t)dk__iq_point(bk, u, exact);
    for (k = 0; k < bk->dim; k++) {
      float r;
      m[j + k] = (float)dk__iq_at(bk, pts[j / bk->dim], k);
      r = fabsf(x[j + k]) - s * m[j + k];
      err += r * r;
    }
  }
  return err;
}
/* a group's (n <= 32 values) best scale: the largest magnitude on each of
 * the top levels, give or take, each followed by the least-squares scale
 * for its points */
static float dk__iq_fit(dk__iq_book *bk, const float *x, int n) {
  float amax = 0.0f, best = -1.0f, bs = 0.0f, m[32];
  uint16_t pts[8];
  int j, t, e;
  for (j = 0; j < n; j++) amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
  if (amax == 0.0f) return 0.0f;
  for (e = bk->nlv - 3; e < bk->nlv; e++)
    for (t = -3; t <= 3; t++) {
      float s = amax / ((float)bk->lv[e] * (1.0f + 0.04f * (float)t)), err, sxm = 0.0f, smm = 0.0f;
      dk__iq_code(bk, x, n, s, 0, pts, m);
      for (j = 0; j < n; j++) { sxm += fabsf(x[j]) * m[j]; smm += m[j] * m[j]; }
      if (smm > 0.0f) s = sxm / smm;
      err = dk__iq_code(bk, x, n, s, 1, pts, m);
      if (best < 0.0f || err < best) { best = err; bs = s; }
    }
  return bs;
}
/* a group's scale for code sc: iq3_xxs d*(0.5 + sc)*0.5, iq3_s d*(1 + 2 sc),
 * iq2 d*(0.5 + sc)*0.25 */
static float dk__iq_db(dk_dtype dt, float d, int sc) {
  return dt == DK_IQ3_XXS ? d * (0.5f + (float)sc) * 0.5f : dt == DK_IQ3_S ? d * (float)(1 + 2 * sc)
                                                                             : d * (0.5f + (float)sc) * 0.25f;
}
/* the formats whose sign codes carry their parity (an even count of
 * negatives per 8 values) */
#define DK__IQ_PARITY(dt) ((dt) == DK_IQ3_XXS || (dt) == DK_IQ2_XXS || (dt) == DK_IQ2_XS)
/* iq3_xxs's eight signs of values x[0..7] (magnitudes m) with an even count
 * of negatives: when odd, the value whose flip costs least (|x| times its
 * magnitude) takes the wrong one; that cost (in units of 4 db) to *cost */
static uint32_t dk__iq_signs8(const float *x, const float *m, float *cost) {
  uint32_t sgn = 0;
  int k, par = 0, cheap = 0;
  for (k = 0; k < 8; k++) {
    int neg = x[k] < 0.0f;
    sgn |= (uint32_t)neg << k;
    par ^= neg;
    if (fabsf(x[k]) * m[k] < fabsf(x[cheap]) * m[cheap]) cheap = k;
  }
  *cost = par ? fabsf(x[cheap]) * m[cheap] : 0.0f;
  return par ? sgn ^ (1u << cheap) : sgn;
}
/* a group's (n values: 32, or iq2_xs/iq2_s's 16) points under the coded
 * scales sc - 1 .. sc + 1 (the rounding of its own best scale may not be
 * the best code), the least error wins: its code returned, its points to
 * pts, magnitudes to m */
static int dk__iq_group_code(dk__iq_book *bk, dk_dtype dt, const float *xg, int n, float d, int sc, uint16_t pts[8],
                             float m[32]) {
  float best = -1.0f, tm[32];
  uint16_t tp[8];
  int c, l, bc = sc;
  for (c = sc - 1; c <= sc + 1; c++) {
    float db, err, cost;
    if (c < 0 || c > 15) continue;
    db = dk__iq_db(dt, d, c);
    err = dk__iq_code(bk, xg, n, db, 1, tp, tm);
    if (DK__IQ_PARITY(dt))
      for (l = 0; l < n / 8; l++) {
        dk__iq_signs8(xg + 8 * l, tm + 8 * l, &cost);
        err += 4.0f * db * cost;
      }
    if (best < 0.0f || err < best) {
      best = err;
      bc = c;
      memcpy(pts, tp, sizeof tp);
      memcpy(m, tm, sizeof tm);
    }
  }
  return bc;
}
/* a super-block: each group's scale, those coded as D * (2 sc + 1) against
 * the largest, then every group's points searched under its coded scale */
static void dk__quant_iq3_block(dk__iq_book *bk, dk_dtype dt, const float *x, void *out) {
  float sg[8], smax = 0.0f, D, m[32], d, cost;
  uint16_t pts[8];
  int g, j, l;
  for (g = 0; g < 8; g++) {
    sg[g] = dk__iq_fit(bk, x + 32 * g, 32);
    smax = sg[g] > smax ? sg[g] : smax;
  }
  D = smax / 31.0f;
  if (dt == DK_IQ3_XXS) {
    dk_block_iq3_xxs *b = (dk_block_iq3_xxs *)out;
    b->d = dk_f32_to_f16(4.0f * D);   /* its group scale is d * (2 sc + 1) / 4 */
    d = dk_f16_to_f32(b->d);
    for (g = 0; g < 8; g++) {
      const float *xg = x + 32 * g;
      int sc = 0;
      uint32_t ss;
      if (d > 0.0f)
        sc = dk__iq_group_code(bk, dt, xg, 32, d, dk__quant_clampi(dk__quant_round((4.0f * sg[g] / d - 1.0f) * 0.5f), 0, 15), pts, m);
      else
        dk__iq_code(bk, xg, 32, 0.0f, 1, pts, m);
      ss = (uint32_t)sc << 28;
      for (j = 0; j < 8; j++) b->qs[8 * g + j] = (uint8_t)pts[j];
      for (l = 0; l < 4; l++) ss |= (dk__iq_signs8(xg + 8 * l, m + 8 * l, &cost) & 127) << (7 * l);
      for (j = 0; j < 4; j++) b->ss[4 * g + j] = (uint8_t)(ss >> (8 * j));
    }
  } else {
    dk_block_iq3_s *b = (dk_block_iq3_s *)out;
    b->d = dk_f32_to_f16(D);
    d = dk_f16_to_f32(b->d);
    memset(b->qh, 0, sizeof b->qh);
    memset(b->signs, 0, sizeof b->signs);
    memset(b->scales, 0, sizeof b->scales);
    for (g = 0; g < 8; g++) {
      const float *xg = x + 32 * g;
      int sc = 0;
      if (d > 0.0f)
        sc = dk__iq_group_code(bk, dt, xg, 32, d, dk__quant_clampi(dk__quant_round((sg[g] / d - 1.0f) * 0.5f), 0, 15), pts, m);
      else
        dk__iq_code(bk, xg, 32, 0.0f, 1, pts, m);
      b->scales[g >> 1] |= (uint8_t)(sc << (4 * (g & 1)));
      for (l = 0; l < 8; l++) {
        b->qs[8 * g + l] = (uint8_t)(pts[l] & 255);
        b->qh[g] |= (uint8_t)((pts[l] >> 8) << l);
      }
      for (j = 0; j < 32; j++) b->signs[4 * g + j / 8] |= (uint8_t)((xg[j] < 0.0f) << (j & 7));
    }
  }
}

/* an iq2 super-block as iq3's: each group's scale (per 32 values for
 * iq2_xxs, 16 for the others), coded as D * (2 sc + 1) against the largest,
 * then every group's points under its coded scale; the packing by layout */
static void dk__quant_iq2_block(dk__iq_book *bk, dk_dtype dt, const float *x, void *out) {
  const int n = dt == DK_IQ2_XXS ? 32 : 16, ng = 256 / n;
  float sg[16], smax = 0.0f, d, m[32], cost;
  uint16_t pts[8];
  uint8_t *b = (uint8_t *)out + 2;   /* past d */
  int g, l;
  for (g = 0; g < ng; g++) {
    sg[g] = dk__iq_fit(bk, x + n * g, n);
    smax = sg[g] > smax ? sg[g] : smax;
  }
  uint16_t d16 = dk_f32_to_f16(8.0f * smax / 31.0f);   /* a group's scale is d * (2 sc + 1) / 8 */
  memcpy(out, &d16, 2);
  d = dk_f16_to_f32(d16);
  memset(b, 0, dk_dtype_block_bytes(dt) - 2);
  for (g = 0; g < ng; g++) {
    const float *xg = x + n * g;
    int sc = 0;
    uint32_t ss = 0;
    if (d > 0.0f)
      sc = dk__iq_group_code(bk, dt, xg, n, d, dk__quant_clampi(dk__quant_round((8.0f * sg[g] / d - 1.0f) * 0.5f), 0, 15), pts, m);
    else
      dk__iq_code(bk, xg, n, 0.0f, 1, pts, m);
    for (l = 0; l < n / 8; l++) {
      const int i = g * n / 8 + l;   /* the point's index in the super-block */
      uint32_t sgn = 0;
      int k;
      if (DK__IQ_PARITY(dt)) sgn = dk__iq_signs8(xg + 8 * l, m + 8 * l, &cost) & 127;
      else for (k = 0; k < 8; k++) sgn |= (uint32_t)(xg[8 * l + k] < 0.0f) << k;
      if (dt == DK_IQ2_XXS) {
        b[8 * g + l] = (uint8_t)pts[l];
        ss |= sgn << (7 * l);
      } else if (dt == DK_IQ2_XS) {
        b[2 * i] = (uint8_t)(pts[l] & 255);
        b[2 * i + 1] = (uint8_t)((pts[l] >> 8) | sgn << 1);
      } else {
        b[i] = (uint8_t)(pts[l] & 255);
        b[64 + i / 4] |= (uint8_t)((pts[l] >> 8) << (2 * (i & 3)));
        b[32 + i] = (uint8_t)sgn;
      }
    }
    if (dt == DK_IQ2_XXS) {
      ss |= (uint32_t)sc << 28;
      for (l = 0; l < 4; l++) b[8 * g + 4 + l] = (uint8_t)(ss >> (8 * l));
    } else {
      b[(dt == DK_IQ2_XS ? 64 : 72) + g / 2] |= (uint8_t)(sc << (4 * (g & 1)));
    }
  }
}

static void dk__quant_more(dk_dtype t, const float *src, int64_t nblocks, void *dst) {
  int64_t b;
  dk__iq_book bk;
  if (t == DK_IQ3_XXS || t == DK_IQ3_S || t == DK_IQ2_XXS || t == DK_IQ2_XS || t == DK_IQ2_S) {
    dk__iq_book_init(&bk, t);
    for (b = 0; b < nblocks; b++) {
      void *o = (char *)dst + (size_t)b * dk_dtype_block_bytes(t);
      if (t == DK_IQ3_XXS || t == DK_IQ3_S) dk__quant_iq3_block(&bk, t, src + 256 * b, o);
      else dk__quant_iq2_block(&bk, t, src + 256 * b, o);
    }
    free(bk.cand);
    return;
  }
  for (b = 0; b < nblocks; b++) {
    const float *x = src + b * dk_dtype_block(t);
    void *p = (char *)dst + (size_t)b * dk_dtype_block_bytes(t);
    uint8_t q[32];
    switch (t) {
    case DK_Q4_1: {
      dk_block_q4_1 *o = (dk_block_q4_1 *)p;
      dk__quant_minmax32(x, 15, &o->d, &o->m, q);
      dk__quant_pack_nibbles(q, o->qs);
      break;
    }
    case DK_Q5_1: {
      dk_block_q5_1 *o = (dk_block_q5_1 *)p;
      dk__quant_minmax32(x, 31, &o->d, &o->m, q);
      dk__quant_pack_nibbles(q, o->qs);
      dk__quant_pack_high5(q, o->qh);
      break;
    }
    case DK_Q5_0: dk__quant_q5_0_block(x, (dk_block_q5_0 *)p); break;
    case DK_Q2_K: dk__quant_q2_K_block(x, (dk_block_q2_K *)p); break;
    case DK_Q3_K: dk__quant_q3_K_block(x, (dk_block_q3_K *)p); break;
    case DK_Q4_K: {
      dk_block_q4_K *o = (dk_block_q4_K *)p;
      memset(o->scales, 0, sizeof o->scales);
      dk__quant_k45(x, 15, &o->d, &o->dmin, o->scales, o->qs, NULL);
      break;
    }
    case DK_Q5_K: {
      dk_block_q5_K *o = (dk_block_q5_K *)p;
      memset(o->scales, 0, sizeof o->scales);
      dk__quant_k45(x, 31, &o->d, &o->dmin, o->scales, o->qs, o->qh);
      break;
    }
    case DK_Q6_K: dk__quant_q6_K_block(x, (dk_block_q6_K *)p); break;
    case DK_IQ4_NL: dk__quant_iq4_nl_block(x, (dk_block_iq4_nl *)p); break;
    case DK_IQ4_XS: dk__quant_iq4_xs_block(x, (dk_block_iq4_xs *)p); break;
    default: return;
    }
  }
}

/* ==== the CPU backend's hooks ============================================== */

/* values [k0, k0+n) of one row as f32; k0 and n are whole blocks */
static void dk__cpu_quant_row(dk_dtype dt, const void *row, int64_t k0, int64_t n, float *dst) {
  int bs = dk_dtype_block(dt);
  dk__dequant_more(dt, (const char *)row + (size_t)(k0 / bs) * dk_dtype_block_bytes(dt), n / bs, dst);
}

/* dot of one row with x (K values), a block at a time */
static float dk__cpu_quant_dot(dk_dtype dt, const char *row, const float *x, int64_t K) {
  dk__deq_fn f = dk__quant_deq_fn(dt);
  size_t bb = dk_dtype_block_bytes(dt);
  int bs = dk_dtype_block(dt), j;
  float buf[256], acc = 0.0f;
  int64_t b;
  for (b = 0; b < K / bs; b++) {
    float s = 0.0f;
    f(row + (size_t)b * bb, buf);
    for (j = 0; j < bs; j++) s += buf[j] * x[b * bs + j];
    acc += s;
  }
  return acc;
}


#ifdef DK_CPU_X86
/* ==== AVX2 row dots ========================================================
 * A block's integer codes are unpacked with byte shuffles into q[], its
 * sub-block scales (dl) and mins (ml) into floats, and then
 *   dot = sum over groups g of dl[g] * (q_g . x_g) - ml[g] * sum(x_g),
 * eight lanes at a time. Everything called here is AVX2-targeted or an
 * intrinsic (F16C for the scales), so the loop stays in one ISA. */
DK_CPU_AVX2 static float dk__cpu_q_h2f(uint16_t h) { return _cvtsh_ss(h); }

/* acc += dl[g] * (q_g . x_g) - ml[g] * sum(x_g) over ng groups of n (16 or 32) */
DK_CPU_AVX2 static __m256 dk__cpu_q_groups(const uint8_t *q, int sgn, const float *x, const float *dl, const float *ml,
                                           int ng, int n, __m256 acc) {
  int g, i;
  for (g = 0; g < ng; g++) {
    __m256 s = _mm256_setzero_ps(), t = _mm256_setzero_ps();
    for (i = 0; i < n; i += 8) {
      __m128i b = _mm_loadl_epi64((const __m128i *)(q + g * n + i));
      __m256 qf = _mm256_cvtepi32_ps(sgn ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b));
      __m256 xv = _mm256_loadu_ps(x + g * n + i);
      s = _mm256_fmadd_ps(qf, xv, s);
      if (ml) t = _mm256_add_ps(t, xv);
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(dl[g]), s, acc);
    if (ml) acc = _mm256_fnmadd_ps(_mm256_set1_ps(ml[g]), t, acc);
  }
  return acc;
}

/* 32 bytes of nibbles: low nibbles to lo[0..32), high to hi[0..32) */
DK_CPU_AVX2 static void dk__cpu_q_split32(const uint8_t *qs, uint8_t *lo, uint8_t *hi) {
  const __m256i m = _mm256_set1_epi8(15);
  __m256i raw = _mm256_loadu_si256((const __m256i *)qs);
  _mm256_storeu_si256((__m256i *)lo, _mm256_and_si256(raw, m));
  _mm256_storeu_si256((__m256i *)hi, _mm256_and_si256(_mm256_srli_epi16(raw, 4), m));
}

/* bit j of the 32-bit h as 0x10 in byte j (the fifth bit of q5_0) */
DK_CPU_AVX2 static __m256i dk__cpu_q_bits32(uint32_t h) {
  const __m256i sel = _mm256_set_epi64x(0x0303030303030303ll, 0x0202020202020202ll, 0x0101010101010101ll, 0);
  const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
  __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)h), sel);
  v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
  return _mm256_and_si256(v, _mm256_set1_epi8(0x10));
}

/* q4_K and q5_K: 8 groups of 32 with scale and min */
DK_CPU_AVX2_INLINE __m256 dk__cpu_q_k45(const uint8_t *sc12, const uint8_t *qs, const uint8_t *qh, uint16_t d16,
                                        uint16_t dmin16, const float *x, __m256 acc) {
  uint8_t q[256];
  float dl[8], ml[8], d = dk__cpu_q_h2f(d16), dmin = dk__cpu_q_h2f(dmin16);
  int j;
  for (j = 0; j < 4; j++) dk__cpu_q_split32(qs + 32 * j, q + 64 * j, q + 64 * j + 32);
  if (qh) {
    __m256i h = _mm256_loadu_si256((const __m256i *)qh);
    for (j = 0; j < 8; j++) {
      __m256i b = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, j), _mm256_set1_epi8(1)), 4);
      __m256i v = _mm256_loadu_si256((const __m256i *)(q + 32 * j));
      _mm256_storeu_si256((__m256i *)(q + 32 * j), _mm256_or_si256(v, b));
    }
  }
  for (j = 0; j < 8; j++) {
    int s, m;
    if (j < 4) { s = sc12[j] & 63; m = sc12[j + 4] & 63; }
    else { s = (sc12[j + 4] & 15) | ((sc12[j - 4] >> 6) << 4); m = (sc12[j + 4] >> 4) | ((sc12[j] >> 6) << 4); }
    dl[j] = d * (float)s;
    ml[j] = dmin * (float)m;
  }
  return dk__cpu_q_groups(q, 0, x, dl, ml, 8, 32, acc);
}

DK_CPU_AVX2_INLINE __m256 dk__cpu_q_q6_K(const dk_block_q6_K *b, const float *x, __m256 acc) {
  int8_t q[256];
  float dl[16], d = dk__cpu_q_h2f(b->d);
  const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3), off = _mm256_set1_epi8(32);
  int h, i;
  for (h = 0; h < 2; h++) {
    __m256i l0 = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h));
    __m256i l1 = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h + 32));
    __m256i hb = _mm256_loadu_si256((const __m256i *)(b->qh + 32 * h));
    __m256i lo[4], t;
    lo[0] = _mm256_and_si256(l0, m4);
    lo[1] = _mm256_and_si256(l1, m4);
    lo[2] = _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4);
    lo[3] = _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4);
    for (i = 0; i < 4; i++) {
      t = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * i), m2), 4);
      _mm256_storeu_si256((__m256i *)(q + 128 * h + 32 * i), _mm256_sub_epi8(_mm256_or_si256(lo[i], t), off));
    }
  }
  for (i = 0; i < 16; i++) dl[i] = d * (float)b->scales[i];
  return dk__cpu_q_groups((const uint8_t *)q, 1, x, dl, NULL, 16, 16, acc);
}

/* q2_K and q3_K: 16 groups of 16, 2-bit codes (value h*128 + s*32 + l is
 * bits 2s.. of qs[h*32 + l]); q3_K adds the hmask bit and signed scales */
DK_CPU_AVX2 static __m256 dk__cpu_q_k23(dk_dtype dt, const char *blk, const float *x, __m256 acc) {
  int8_t q[256];
  float dl[16], ml[16];
  const __m256i m2 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1), four = _mm256_set1_epi8(4);
  const uint8_t *qs = dt == DK_Q2_K ? ((const dk_block_q2_K *)blk)->qs : ((const dk_block_q3_K *)blk)->qs;
  __m256i hm = dt == DK_Q3_K ? _mm256_loadu_si256((const __m256i *)((const dk_block_q3_K *)blk)->hmask) : _mm256_setzero_si256();
  int h, s, i;
  for (h = 0; h < 2; h++) {
    __m256i raw = _mm256_loadu_si256((const __m256i *)(qs + 32 * h));
    for (s = 0; s < 4; s++) {
      __m256i v = _mm256_and_si256(_mm256_srli_epi16(raw, 2 * s), m2);
      if (dt == DK_Q3_K) {
        /* minus 4 where the hmask bit of this run (4h + s) is clear */
        __m256i bit = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + s), one);
        v = _mm256_sub_epi8(v, _mm256_andnot_si256(_mm256_cmpeq_epi8(bit, one), four));
      }
      _mm256_storeu_si256((__m256i *)(q + 128 * h + 32 * s), v);
    }
  }
  if (dt == DK_Q2_K) {
    const dk_block_q2_K *b = (const dk_block_q2_K *)blk;
    float d = dk__cpu_q_h2f(b->d), dmin = dk__cpu_q_h2f(b->dmin);
    for (i = 0; i < 16; i++) { dl[i] = d * (float)(b->scales[i] & 15); ml[i] = dmin * (float)(b->scales[i] >> 4); }
    return dk__cpu_q_groups((const uint8_t *)q, 0, x, dl, ml, 16, 16, acc);
  } else {
    const dk_block_q3_K *b = (const dk_block_q3_K *)blk;
    float d = dk__cpu_q_h2f(b->d);
    for (i = 0; i < 16; i++) {
      int lo = i < 8 ? b->scales[i] & 15 : b->scales[i - 8] >> 4, hi = (b->scales[8 + (i & 3)] >> (2 * (i >> 2))) & 3;
      dl[i] = d * (float)((lo | hi << 4) - 32);
    }
    return dk__cpu_q_groups((const uint8_t *)q, 1, x, dl, NULL, 16, 16, acc);
  }
}

/* iq4 group(s): 16 bytes of nibbles each to 32 signed levels by a byte shuffle */
DK_CPU_AVX2_INLINE void dk__cpu_q_iq4(const uint8_t *qs, int ng, int8_t *q) {
  const __m128i tab = _mm_loadu_si128((const __m128i *)dk_iq4_levels), m4 = _mm_set1_epi8(15);
  int g;
  for (g = 0; g < ng; g++) {
    __m128i raw = _mm_loadu_si128((const __m128i *)(qs + 16 * g));
    _mm_storeu_si128((__m128i *)(q + 32 * g), _mm_shuffle_epi8(tab, _mm_and_si128(raw, m4)));
    _mm_storeu_si128((__m128i *)(q + 32 * g + 16), _mm_shuffle_epi8(tab, _mm_and_si128(_mm_srli_epi16(raw, 4), m4)));
  }
}

/* eight signs as the bytes _mm256_sign_epi8 takes (0xff: negative, 0x01:
 * positive), for a 7-bit code with its parity as the eighth (iq2_xxs,
 * iq2_xs): a group's signs are four loads */
#define DK__SG1(i, k) ((((i) >> (k)) & 1) ? 0xffull : 0x01ull) << (8 * (k))
#define DK__SG8(i) (DK__SG1(i, 0) | DK__SG1(i, 1) | DK__SG1(i, 2) | DK__SG1(i, 3) | DK__SG1(i, 4) | DK__SG1(i, 5) | DK__SG1(i, 6) | DK__SG1(i, 7))
#define DK__SG7(c) DK__SG8((c) | (((c) ^ (c) >> 1 ^ (c) >> 2 ^ (c) >> 3 ^ (c) >> 4 ^ (c) >> 5 ^ (c) >> 6) & 1) << 7)
#define DK__SG_4(M, i) M(i), M((i) + 1), M((i) + 2), M((i) + 3)
#define DK__SG_16(M, i) DK__SG_4(M, i), DK__SG_4(M, (i) + 4), DK__SG_4(M, (i) + 8), DK__SG_4(M, (i) + 12)
#define DK__SG_64(M, i) DK__SG_16(M, i), DK__SG_16(M, (i) + 16), DK__SG_16(M, (i) + 32), DK__SG_16(M, (i) + 48)
static const uint64_t dk__iq2_sgn7[128] = {DK__SG_64(DK__SG7, 0), DK__SG_64(DK__SG7, 64)};
#undef DK__SG1
#undef DK__SG8
#undef DK__SG7
#undef DK__SG_4
#undef DK__SG_16
#undef DK__SG_64

/* Codebook indices of more than eight bits (iq2_s's ten, iq3_s's nine) as
 * uint16, by vector, a super-block at a time: the decode loop builds the
 * next super-block's while it reads this one's. The scalar form (a byte of
 * qs with bits of qh, three shifts and masks a point) was a quarter of
 * iq2_s's product; loads right behind the vector stores waited on them
 * (store forwarding) and ran slower than that, as did the indices taken
 * from the vector into general registers (the transfers' latency) or a
 * gather. A super-block ahead, 4096 x 4096 on one thread (AMD Zen 3):
 * iq2_s 1.44-1.53 -> 1.21-1.24 ms, iq3_s 2.15-2.23 -> 1.91-2.00. */
/* 16 indices to ix: bytes qs[0..16) or'ed with the qh byte ctl picks for
 * each word, masked by mk's word and moved to bit 8 by mu's (a power of 2) */
DK_CPU_AVX2_INLINE void dk__cpu_iq_ix16(const uint8_t *qs, __m128i qh, __m128i ctl, __m256i mk, __m256i mu, uint16_t *ix) {
  const __m256i h = _mm256_mullo_epi16(_mm256_and_si256(_mm256_cvtepu8_epi16(_mm_shuffle_epi8(qh, ctl)), mk), mu);
  _mm256_storeu_si256((__m256i *)ix, _mm256_or_si256(_mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)qs)), h));
}
/* iq2_s: index i is qs[i] with bits 2 (i % 4).. of qh[i / 4] as bits 8-9 */
DK_CPU_AVX2_INLINE void dk__cpu_iq2s_idx(const dk_block_iq2_s *p, uint16_t *ix) {
  const __m128i qh = _mm_loadl_epi64((const __m128i *)p->qh);
  const __m128i c0 = _mm_set_epi32(0x03030303, 0x02020202, 0x01010101, 0);
  /* word k of each four: bits 2k, 2k + 1, times 2^(8 - 2k) */
  const __m256i mk = _mm256_set1_epi64x(0x00c00030000c0003ll), mu = _mm256_set1_epi64x(0x0004001000400100ll);
  dk__cpu_iq_ix16(p->qs, qh, c0, mk, mu, ix);
  dk__cpu_iq_ix16(p->qs + 16, qh, _mm_add_epi8(c0, _mm_set1_epi8(4)), mk, mu, ix + 16);
}
/* iq3_s: index i is qs[i] with bit i % 8 of qh[i / 8] as bit 8 */
DK_CPU_AVX2_INLINE void dk__cpu_iq3s_idx(const dk_block_iq3_s *p, uint16_t *ix) {
  const __m128i qh = _mm_loadl_epi64((const __m128i *)p->qh);
  /* word k of each eight: bit k, times 2^(8 - k) */
  const __m256i mk = _mm256_set_epi64x(0x0080004000200010ll, 0x0008000400020001ll, 0x0080004000200010ll, 0x0008000400020001ll);
  const __m256i mu = _mm256_set_epi64x(0x0002000400080010ll, 0x0020004000800100ll, 0x0002000400080010ll, 0x0020004000800100ll);
  int c;
  for (c = 0; c < 4; c++)   /* words 0-7 from qh[2c], 8-15 from qh[2c + 1] */
    dk__cpu_iq_ix16(p->qs + 16 * c, qh, _mm_set_epi64x(0x0101010101010101ll * (2 * c + 1), 0x0101010101010101ll * (2 * c)), mk, mu,
                    ix + 16 * c);
}

/* iq3 group g (32 values) of super-block blk: its eight codebook points'
 * magnitudes (unsigned, <= 62) by one gather (gather 0: eight loads, iq3_s's
 * at the indices from dk__cpu_iq3s_idx in ix), its signs as
 * sign bytes to *sgn (iq3_xxs's four 7-bit codes through dk__iq2_sgn7,
 * iq3_s's sign bits spread by a shuffle and compare), its 4-bit scale code
 * to *scp, twice (both nibbles, as iq2's two halves) */
DK_CPU_AVX2_INLINE __m256i dk__cpu_iq3_mag(dk_dtype dt, const char *blk, int g, int gather, const uint16_t *ix, __m256i *sgn, uint32_t *scp) {
  __m256i idx;
  if (dt == DK_IQ3_XXS) {
    const dk_block_iq3_xxs *p = (const dk_block_iq3_xxs *)blk;
    uint32_t ss;
    memcpy(&ss, p->ss + 4 * g, 4);
    *sgn = _mm256_set_epi64x((long long)dk__iq2_sgn7[(ss >> 21) & 127], (long long)dk__iq2_sgn7[(ss >> 14) & 127],
                             (long long)dk__iq2_sgn7[(ss >> 7) & 127], (long long)dk__iq2_sgn7[ss & 127]);
    *scp = (ss >> 28) * 17;
    if (!gather) {
      const uint8_t *q = p->qs + 8 * g;
      const uint32_t *G = dk_iq3xxs_grid;
      return _mm256_setr_epi32((int)G[q[0]], (int)G[q[1]], (int)G[q[2]], (int)G[q[3]], (int)G[q[4]], (int)G[q[5]],
                               (int)G[q[6]], (int)G[q[7]]);
    }
    idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p->qs + 8 * g)));
    return _mm256_i32gather_epi32((const int *)dk_iq3xxs_grid, idx, 4);
  } else {
    const __m256i sel = _mm256_set_epi64x(0x0303030303030303ll, 0x0202020202020202ll, 0x0101010101010101ll, 0);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const dk_block_iq3_s *p = (const dk_block_iq3_s *)blk;
    const __m256i hi = _mm256_srlv_epi32(_mm256_set1_epi32(p->qh[g]), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    uint32_t s32;
    __m256i n;
    memcpy(&s32, p->signs + 4 * g, 4);
    n = _mm256_shuffle_epi8(_mm256_set1_epi32((int)s32), sel);
    *sgn = _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_and_si256(n, bit), bit), _mm256_set1_epi8(1));
    *scp = ((p->scales[g >> 1] >> (4 * (g & 1))) & 15) * 17;
    if (!gather) {   /* the decode loop's indices (dk__cpu_iq3s_idx) */
      const uint32_t *G = dk_iq3s_grid;
      const uint16_t *i8 = ix + 8 * g;
      return _mm256_setr_epi32((int)G[i8[0]], (int)G[i8[1]], (int)G[i8[2]], (int)G[i8[3]], (int)G[i8[4]], (int)G[i8[5]],
                               (int)G[i8[6]], (int)G[i8[7]]);
    }
    idx = _mm256_or_si256(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p->qs + 8 * g))),
                          _mm256_slli_epi32(_mm256_and_si256(hi, _mm256_set1_epi32(1)), 8));
    return _mm256_i32gather_epi32((const int *)dk_iq3s_grid, idx, 4);
  }
}
/* the same as 32 signed codes in a register, the group's scale, as the
 * reference computes it, to *d (the scalar dk__quant_iq3_group held a 100M
 * IQ3_S model's decode at 17 tok/s) */
DK_CPU_AVX2_INLINE __m256i dk__cpu_q_iq3(dk_dtype dt, const char *blk, int g, float *d) {
  const float d0 = _cvtsh_ss(*(const uint16_t *)blk);
  uint32_t sc;
  __m256i sgn, v = dk__cpu_iq3_mag(dt, blk, g, 1, NULL, &sgn, &sc);
  sc &= 15;
  *d = dt == DK_IQ3_XXS ? d0 * (0.5f + (float)sc) * 0.5f : d0 * (float)(1 + 2 * sc);
  return _mm256_sign_epi8(v, sgn);
}

/* iq2 group g (32 values) of super-block blk: its four 8-byte points'
 * magnitudes (unsigned, <= 43) by four loads (a gather was no faster), its
 * signs as sign bytes to *sgn, its two halves' 4-bit scale codes to *sc
 * (low nibble the first half's). iq2_xxs/iq2_xs's signs by table: built
 * from the bits with the parity fold, a shuffle and a compare, a 4096 x
 * 4096 iq2_xxs product took 1.60 ms on one thread, by table 1.26-1.35.
 * iq2_s's indices from dk__cpu_iq2s_idx in ix, or by shifts where NULL. */
DK_CPU_AVX2_INLINE __m256i dk__cpu_iq2_mag(dk_dtype dt, const char *blk, int g, const uint16_t *ix, __m256i *sgn, uint32_t *scp) {
  const uint8_t *b = (const uint8_t *)blk + 2;   /* past d */
  const uint64_t *grid;
  uint32_t sc, w, i0, i1, i2, i3, c0, c1, c2, c3;
  uint64_t q;
  if (dt == DK_IQ2_XXS) {
    memcpy(&w, b + 8 * g, 4);
    memcpy(&sc, b + 8 * g + 4, 4);
    c0 = sc & 127; c1 = (sc >> 7) & 127; c2 = (sc >> 14) & 127; c3 = (sc >> 21) & 127;
    sc = (sc >> 28) * 17;   /* both halves' nibble */
    i0 = w & 255; i1 = (w >> 8) & 255; i2 = (w >> 16) & 255; i3 = w >> 24;
    grid = dk_iq2xxs_grid;
  } else if (dt == DK_IQ2_XS) {
    memcpy(&q, b + 8 * g, 8);
    c0 = (uint32_t)(q >> 9) & 127; c1 = (uint32_t)(q >> 25) & 127; c2 = (uint32_t)(q >> 41) & 127; c3 = (uint32_t)(q >> 57);
    sc = b[64 + g];
    i0 = (uint32_t)q & 511; i1 = (uint32_t)(q >> 16) & 511; i2 = (uint32_t)(q >> 32) & 511; i3 = (uint32_t)(q >> 48) & 511;
    grid = dk_iq2xs_grid;
  } else {
    /* iq2_s's sign bytes are the bits themselves: spread by a shuffle and
     * compare (four table loads were slower here) */
    const __m256i sel = _mm256_set_epi64x(0x0303030303030303ll, 0x0202020202020202ll, 0x0101010101010101ll, 0);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    const uint32_t h = b[64 + g];
    __m256i n;
    uint32_t s32;
    memcpy(&s32, b + 32 + 4 * g, 4);
    *scp = b[72 + g];
    if (ix) {
      i0 = ix[4 * g]; i1 = ix[4 * g + 1]; i2 = ix[4 * g + 2]; i3 = ix[4 * g + 3];
    } else {
      memcpy(&w, b + 4 * g, 4);
      i0 = (w & 255) | (h & 3) << 8; i1 = ((w >> 8) & 255) | (h & 12) << 6;
      i2 = ((w >> 16) & 255) | (h & 48) << 4; i3 = (w >> 24) | (h & 192) << 2;
    }
    n = _mm256_shuffle_epi8(_mm256_set1_epi32((int)s32), sel);
    *sgn = _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_and_si256(n, bit), bit), _mm256_set1_epi8(1));
    return _mm256_set_epi64x((long long)dk_iq2s_grid[i3], (long long)dk_iq2s_grid[i2], (long long)dk_iq2s_grid[i1],
                             (long long)dk_iq2s_grid[i0]);
  }
  *scp = sc;
  *sgn = _mm256_set_epi64x((long long)dk__iq2_sgn7[c3], (long long)dk__iq2_sgn7[c2], (long long)dk__iq2_sgn7[c1],
                           (long long)dk__iq2_sgn7[c0]);
  return _mm256_set_epi64x((long long)grid[i3], (long long)grid[i2], (long long)grid[i1], (long long)grid[i0]);
}
/* the same as 32 signed codes, the halves' scales to d[0], d[1] as the
 * reference computes them */
DK_CPU_AVX2_INLINE __m256i dk__cpu_q_iq2(dk_dtype dt, const char *blk, int g, float d[2]) {
  const float d0 = _cvtsh_ss(*(const uint16_t *)blk);
  __m256i sgn, v;
  uint32_t sc;
  v = dk__cpu_iq2_mag(dt, blk, g, NULL, &sgn, &sc);
  d[0] = d0 * (0.5f + (float)(sc & 15)) * 0.25f;
  d[1] = d0 * (0.5f + (float)(sc >> 4)) * 0.25f;
  return _mm256_sign_epi8(v, sgn);
}

/* takes every type of this file (DK_QUANTS_MORE) */
DK_CPU_AVX2_INLINE float dk__cpu_quant_dot_avx2(dk_dtype dt, const char *row, const float *x, int64_t K) {
  __m256 acc = _mm256_setzero_ps();
  __m128 s;
  int64_t b;
  for (b = 0; b < K / dk_dtype_block(dt); b++) {
    const char *blk = row + (size_t)b * dk_dtype_block_bytes(dt);
    if (dt == DK_Q4_K) {
      const dk_block_q4_K *p = (const dk_block_q4_K *)blk;
      acc = dk__cpu_q_k45(p->scales, p->qs, NULL, p->d, p->dmin, x + 256 * b, acc);
    } else if (dt == DK_Q5_K) {
      const dk_block_q5_K *p = (const dk_block_q5_K *)blk;
      acc = dk__cpu_q_k45(p->scales, p->qs, p->qh, p->d, p->dmin, x + 256 * b, acc);
    } else if (dt == DK_Q6_K) {
      acc = dk__cpu_q_q6_K((const dk_block_q6_K *)blk, x + 256 * b, acc);
    } else if (dt == DK_Q2_K || dt == DK_Q3_K) {
      acc = dk__cpu_q_k23(dt, blk, x + 256 * b, acc);
    } else if (dt == DK_IQ4_NL) {
      int8_t q[32];
      float d = dk__cpu_q_h2f(((const dk_block_iq4_nl *)blk)->d);
      dk__cpu_q_iq4(((const dk_block_iq4_nl *)blk)->qs, 1, q);
      acc = dk__cpu_q_groups((const uint8_t *)q, 1, x + 32 * b, &d, NULL, 1, 32, acc);
    } else if (dt == DK_IQ4_XS) {
      const dk_block_iq4_xs *p = (const dk_block_iq4_xs *)blk;
      int8_t q[256];
      float dl[8], d = dk__cpu_q_h2f(p->d);
      int j;
      for (j = 0; j < 8; j++) dl[j] = d * (float)(dk__quant_iq4xs_sc(p, j) - 32);
      dk__cpu_q_iq4(p->qs, 8, q);
      acc = dk__cpu_q_groups((const uint8_t *)q, 1, x + 256 * b, dl, NULL, 8, 32, acc);
    } else if (dt == DK_IQ3_XXS || dt == DK_IQ3_S) {
      int8_t q[256];
      float dl[8];
      int g;
      for (g = 0; g < 8; g++) _mm256_storeu_si256((__m256i *)(q + 32 * g), dk__cpu_q_iq3(dt, blk, g, dl + g));
      acc = dk__cpu_q_groups((const uint8_t *)q, 1, x + 256 * b, dl, NULL, 8, 32, acc);
    } else if (dt == DK_IQ2_XXS || dt == DK_IQ2_XS || dt == DK_IQ2_S) {
      int8_t q[256];
      float dl[16];
      int g;
      for (g = 0; g < 8; g++) _mm256_storeu_si256((__m256i *)(q + 32 * g), dk__cpu_q_iq2(dt, blk, g, dl + 2 * g));
      acc = dk__cpu_q_groups((const uint8_t *)q, 1, x + 256 * b, dl, NULL, 16, 16, acc);
    } else {
      /* q4_1, q5_1: d*q + m; q5_0: d*(q - 16); the fifth bit from qh */
      uint8_t q[32];
      float d, m;
      const __m128i m4 = _mm_set1_epi8(15);
      const uint8_t *qs = dt == DK_Q4_1 ? ((const dk_block_q4_1 *)blk)->qs
                          : dt == DK_Q5_0 ? ((const dk_block_q5_0 *)blk)->qs : ((const dk_block_q5_1 *)blk)->qs;
      __m128i raw = _mm_loadu_si128((const __m128i *)qs);
      __m256i v = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), m4), _mm_and_si128(raw, m4));
      if (dt == DK_Q5_0) {
        const dk_block_q5_0 *p = (const dk_block_q5_0 *)blk;
        uint32_t h;
        memcpy(&h, p->qh, 4);
        v = _mm256_sub_epi8(_mm256_or_si256(v, dk__cpu_q_bits32(h)), _mm256_set1_epi8(16));
        d = dk__cpu_q_h2f(p->d);
        m = 0.0f;
      } else if (dt == DK_Q5_1) {
        const dk_block_q5_1 *p = (const dk_block_q5_1 *)blk;
        uint32_t h;
        memcpy(&h, p->qh, 4);
        v = _mm256_or_si256(v, dk__cpu_q_bits32(h));
        d = dk__cpu_q_h2f(p->d);
        m = -dk__cpu_q_h2f(p->m);
      } else {
        d = dk__cpu_q_h2f(((const dk_block_q4_1 *)blk)->d);
        m = -dk__cpu_q_h2f(((const dk_block_q4_1 *)blk)->m);
      }
      _mm256_storeu_si256((__m256i *)q, v);
      acc = dk__cpu_q_groups(q, dt == DK_Q5_0, x + 32 * b, &d, dt == DK_Q5_0 ? NULL : &m, 1, 32, acc);
    }
  }
  s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#endif

#endif
