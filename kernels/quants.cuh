// kernels/quants.cuh — one value of a GGUF block of the formats beyond
// q8_0/q4_0 (q4_1, q5_0, q5_1, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_nl, iq4_xs,
// iq3_xxs, iq3_s, iq2_xxs, iq2_xs, iq2_s); the layouts and
// the f32 arithmetic of backends/cpu_quant.h (bit-exact with GGUF's
// reference dequantizers). __fmul_rn/__fadd_rn keep nvcc from contracting
// d*q + m into one FMA, whose single rounding would differ.
//
// q4_1..q6_K ran clean on an H100 (2026-11-24); the iq formats have not run
// on a GPU yet, and the backend offers them only under DEVKIT_CUDA_IQ=1.
#ifndef DK_QUANTS_CUH
#define DK_QUANTS_CUH
#ifndef DKQ_HOST_CHECK   // tools/cuda_mock/quants_host.cpp compiles this file for the host
#include "dk_common.cuh"
#endif
#include "../backends/iq_grids.h"

#define DK_KT_Q4_1 6
#define DK_KT_Q5_0 7
#define DK_KT_Q5_1 8
#define DK_KT_Q2_K 9
#define DK_KT_Q3_K 10
#define DK_KT_Q4_K 11
#define DK_KT_Q5_K 12
#define DK_KT_Q6_K 13
#define DK_KT_IQ4_NL 14
#define DK_KT_IQ4_XS 15
#define DK_KT_IQ3_XXS 16
#define DK_KT_IQ3_S 17
#define DK_KT_IQ2_XXS 18
#define DK_KT_IQ2_XS 19
#define DK_KT_IQ2_S 20

// the iq3 and iq2 codebooks (backends/iq_grids.h: point i's four or eight
// values are the bytes of entry i)
#define DKQ_IQ_V(v) v,
__constant__ uint32_t dkq_iq3xxs_grid[256] = {DK_IQ3XXS_GRID(DKQ_IQ_V)};
__constant__ uint32_t dkq_iq3s_grid[512] = {DK_IQ3S_GRID(DKQ_IQ_V)};
__constant__ unsigned long long dkq_iq2xxs_grid[256] = {DK_IQ2XXS_GRID(DKQ_IQ_V)};
__constant__ unsigned long long dkq_iq2xs_grid[512] = {DK_IQ2XS_GRID(DKQ_IQ_V)};
__constant__ unsigned long long dkq_iq2s_grid[1024] = {DK_IQ2S_GRID(DKQ_IQ_V)};
#undef DKQ_IQ_V

DK_DEV int dkq_block(int dt) { return dt <= DK_KT_Q5_1 || dt == DK_KT_IQ4_NL ? 32 : 256; }
DK_DEV int dkq_bytes(int dt) {
  switch (dt) {
  case DK_KT_Q4_1: return 20;
  case DK_KT_Q5_0: return 22;
  case DK_KT_Q5_1: return 24;
  case DK_KT_Q2_K: return 84;
  case DK_KT_Q3_K: return 110;
  case DK_KT_Q4_K: return 144;
  case DK_KT_Q5_K: return 176;
  case DK_KT_IQ4_NL: return 18;
  case DK_KT_IQ4_XS: return 136;
  case DK_KT_IQ3_XXS: return 98;
  case DK_KT_IQ3_S: return 110;
  case DK_KT_IQ2_XXS: return 66;
  case DK_KT_IQ2_XS: return 74;
  case DK_KT_IQ2_S: return 82;
  default: return 210;
  }
}

DK_DEV float dkq_half(const uint8_t *b, int o) { return dk_h2f((uint16_t)(b[o] | (b[o + 1] << 8))); }
DK_DEV float dkq_affine(float d, float q, float m) { return __fadd_rn(__fmul_rn(d, q), m); }

// iq4's level q (0..15): the 16 signed bytes of backends/cpu_quant.h's
// dk_iq4_levels packed in two constants (no table in local memory)
DK_DEV float dkq_iq4_level(int q) {
  const unsigned long long v = q < 8 ? 0xf6eaddcfbfad9881ull : 0x7159453526190d01ull;
  return (float)(int8_t)(v >> (8 * (q & 7)));
}

// value j of the block of type dt at b
DK_DEV float dkq_value(int dt, const uint8_t *b, int j) {
  if (dt == DK_KT_IQ2_XXS || dt == DK_KT_IQ2_XS || dt == DK_KT_IQ2_S) {
    // point i (8 values) of group g (32): iq2_xxs d, then per group four
    // point bytes and a u32 as iq3_xxs's (scale /4 instead of /2); iq2_xs
    // d, qs u16[32] (9-bit point, 7-bit sign code), scales[8] at 66;
    // iq2_s d, qs[32], signs[32] at 34, qh[8] at 66, scales[8] at 74
    const int g = j >> 5, i = j >> 3, k = j & 7;
    unsigned long long pt;
    int neg, sc;
    if (dt == DK_KT_IQ2_S) {
      pt = dkq_iq2s_grid[b[2 + i] | (((b[66 + (i >> 2)] >> (2 * (i & 3))) & 3) << 8)];
      neg = (b[34 + i] >> k) & 1;
      sc = (b[74 + g] >> (4 * ((j >> 4) & 1))) & 15;
    } else {
      uint32_t sg;
      if (dt == DK_KT_IQ2_XXS) {
        const uint32_t ss = b[6 + 8 * g] | (b[7 + 8 * g] << 8) | (b[8 + 8 * g] << 16) | ((uint32_t)b[9 + 8 * g] << 24);
        pt = dkq_iq2xxs_grid[b[2 + 8 * g + (i & 3)]];
        sg = (ss >> (7 * (i & 3))) & 127;
        sc = (int)(ss >> 28);
      } else {
        const uint32_t q = b[2 + 2 * i] | (b[3 + 2 * i] << 8);
        pt = dkq_iq2xs_grid[q & 511];
        sg = q >> 9;
        sc = (b[66 + g] >> (4 * ((j >> 4) & 1))) & 15;
      }
      neg = k < 7 ? (sg >> k) & 1 : __popc(sg) & 1;
    }
    const float db = __fmul_rn(__fmul_rn(dkq_half(b, 0), __fadd_rn(0.5f, (float)sc)), 0.25f);
    const float v = __fmul_rn(db, (float)((pt >> (8 * k)) & 255));
    return neg ? -v : v;
  }
  if (dt == DK_KT_IQ3_XXS) {
    // d, qs[64], then group g's u32: four 7-bit sign codes (the eighth sign
    // their parity) and the scale in the top 4 bits
    const int g = j >> 5, l = (j >> 3) & 3, k = j & 7;
    const uint32_t ss = b[66 + 4 * g] | (b[67 + 4 * g] << 8) | (b[68 + 4 * g] << 16) | ((uint32_t)b[69 + 4 * g] << 24);
    const uint32_t sg = (ss >> (7 * l)) & 127;
    const int neg = k < 7 ? (sg >> k) & 1 : __popc(sg) & 1;
    const float db = __fmul_rn(__fmul_rn(dkq_half(b, 0), __fadd_rn(0.5f, (float)(ss >> 28))), 0.5f);
    const float v = __fmul_rn(db, (float)((dkq_iq3xxs_grid[b[2 + 8 * g + 2 * l + (k >> 2)]] >> (8 * (k & 3))) & 255));
    return neg ? -v : v;
  }
  if (dt == DK_KT_IQ3_S) {
    // d, qs[64], qh[8], signs[32], scales[4]; point i = qs[i] + 256 * bit i of qh
    const int g = j >> 5, i = j >> 2;
    const float db = __fmul_rn(dkq_half(b, 0), (float)(1 + 2 * ((b[106 + (g >> 1)] >> (4 * (g & 1))) & 15)));
    const float v = __fmul_rn(db, (float)((dkq_iq3s_grid[b[2 + i] | (((b[66 + (i >> 3)] >> (i & 7)) & 1) << 8)] >> (8 * (j & 3))) & 255));
    return (b[74 + (j >> 3)] >> (j & 7)) & 1 ? -v : v;
  }
  if (dt == DK_KT_IQ4_NL) return __fmul_rn(dkq_half(b, 0), dkq_iq4_level((b[2 + (j & 15)] >> (j < 16 ? 0 : 4)) & 15));
  if (dt == DK_KT_IQ4_XS) {
    // group s: its 6-bit scale (low 4 bits in byte 4 + s/2, high 2 at bit 2s of the u16 at 2), then as iq4_nl
    const int s = j >> 5, l = j & 31;
    const int ls = ((b[4 + (s >> 1)] >> (4 * (s & 1))) & 15) | ((((b[2] | (b[3] << 8)) >> (2 * s)) & 3) << 4);
    const float dl = __fmul_rn(dkq_half(b, 0), (float)(ls - 32));
    return __fmul_rn(dl, dkq_iq4_level((b[8 + 16 * s + (l & 15)] >> (l < 16 ? 0 : 4)) & 15));
  }
  if (dt == DK_KT_Q4_1 || dt == DK_KT_Q5_0 || dt == DK_KT_Q5_1) {
    const int qo = dt == DK_KT_Q4_1 ? 4 : dt == DK_KT_Q5_0 ? 6 : 8;
    int q = (b[qo + (j & 15)] >> (j < 16 ? 0 : 4)) & 15;
    if (dt != DK_KT_Q4_1) q |= ((b[qo - 4 + (j >> 3)] >> (j & 7)) & 1) << 4;
    if (dt == DK_KT_Q5_0) return __fmul_rn(dkq_half(b, 0), (float)(q - 16));
    return dkq_affine(dkq_half(b, 0), (float)q, dkq_half(b, 2));
  }
  if (dt == DK_KT_Q2_K) {
    const int sc = b[j >> 4], q = (b[16 + (j >> 7) * 32 + (j & 31)] >> (2 * ((j >> 5) & 3))) & 3;
    const float dl = __fmul_rn(dkq_half(b, 80), (float)(sc & 15)), ml = __fmul_rn(dkq_half(b, 82), (float)(sc >> 4));
    return dkq_affine(dl, (float)q, -ml);
  }
  if (dt == DK_KT_Q3_K) {
    const int i = j >> 4;
    const int lo = i < 8 ? b[96 + i] & 15 : b[88 + i] >> 4, hi = (b[104 + (i & 3)] >> (2 * (i >> 2))) & 3;
    const float dl = __fmul_rn(dkq_half(b, 108), (float)((lo | (hi << 4)) - 32));
    const int q2 = (b[32 + (j >> 7) * 32 + (j & 31)] >> (2 * ((j >> 5) & 3))) & 3, h = (b[j & 31] >> (j >> 5)) & 1;
    return __fmul_rn(dl, (float)(q2 - (h ? 0 : 4)));
  }
  if (dt == DK_KT_Q4_K || dt == DK_KT_Q5_K) {
    const int s = j >> 5, qo = dt == DK_KT_Q4_K ? 16 : 48;
    const uint8_t *sc = b + 4;
    int scale, mn;
    if (s < 4) { scale = sc[s] & 63; mn = sc[s + 4] & 63; }
    else { scale = (sc[s + 4] & 15) | ((sc[s - 4] >> 6) << 4); mn = (sc[s + 4] >> 4) | ((sc[s] >> 6) << 4); }
    int q = (b[qo + 32 * (s >> 1) + (j & 31)] >> (4 * (s & 1))) & 15;
    if (dt == DK_KT_Q5_K) q |= ((b[16 + (j & 31)] >> s) & 1) << 4;
    const float dl = __fmul_rn(dkq_half(b, 0), (float)scale), ml = __fmul_rn(dkq_half(b, 2), (float)mn);
    return dkq_affine(dl, (float)q, -ml);
  }
  // q6_K
  const int h = j >> 7;
  const int lo = (b[h * 64 + (j & 63)] >> (4 * ((j >> 6) & 1))) & 15;
  const int hi = (b[128 + h * 32 + (j & 31)] >> (2 * ((j >> 5) & 3))) & 3;
  const float dl = __fmul_rn(dkq_half(b, 208), (float)(int8_t)b[192 + (j >> 4)]);
  return __fmul_rn(dl, (float)((lo | (hi << 4)) - 32));
}

// values j0..j0+7 of the block of type DT at b (j0 a multiple of 8), each
// dkq_value's bit for bit, for the decode GEMV's pieces (kernels/linear.cu):
// the block's scales decoded once a piece, its bytes read in few loads. A
// piece's 8 quant bytes (or 8 bytes of high bits) are consecutive, and lie
// as aligned as the block, which is as aligned as its row (the host asks
// DK_PIECE_ALIGN of W and of the row length; every block's size is a
// multiple of its format's). The iq3 and iq2 formats take dkq_value a value
// at a time (the type a constant: the compiler shares what it can).
DK_DEV uint32_t dkq_u16x2(const uint8_t *p) {
  return (uint32_t)*(const uint16_t *)p | (uint32_t)*(const uint16_t *)(p + 2) << 16;
}
// 8 bytes at p, which is A-aligned
template <int A> DK_DEV uint2 dkq_ld8(const uint8_t *p) {
  if constexpr (A >= 8) return *(const uint2 *)p;
  else if constexpr (A >= 4) return make_uint2(*(const uint32_t *)p, *(const uint32_t *)(p + 4));
  else return make_uint2(dkq_u16x2(p), dkq_u16x2(p + 4));
}
// byte i of 8 held in registers (i a constant after unrolling)
DK_DEV uint32_t dkq_b8(uint2 u, int i) { return ((i < 4 ? u.x : u.y) >> (8 * (i & 3))) & 255u; }
// byte k (< 16, not a constant) of 16 held in registers
DK_DEV int dkq_byte16(uint4 u, int k) {
  const uint32_t w = k < 8 ? (k < 4 ? u.x : u.y) : (k < 12 ? u.z : u.w);
  return (int)((w >> (8 * (k & 3))) & 255u);
}
template <int DT> DK_DEV void dkq_piece(const uint8_t *b, int j0, float (&v)[8]) {
  constexpr int A = DK_PIECE_ALIGN(DT);
  if constexpr (DT == DK_KT_Q4_1 || DT == DK_KT_Q5_0 || DT == DK_KT_Q5_1 || DT == DK_KT_IQ4_NL) {
    // a 32-value block: d (and m); q5's high bits, one byte a piece; the
    // nibbles of values j and j + 16 share a byte
    constexpr int QO = DT == DK_KT_Q4_1 ? 4 : DT == DK_KT_Q5_0 ? 6 : DT == DK_KT_Q5_1 ? 8 : 2;
    const uint2 q = dkq_ld8<A>(b + QO + (j0 & 15));
    const float d = dkq_half(b, 0), m = DT == DK_KT_Q4_1 || DT == DK_KT_Q5_1 ? dkq_half(b, 2) : 0.0f;
    const int sh = j0 < 16 ? 0 : 4;
    const uint32_t hb = DT == DK_KT_Q5_0 || DT == DK_KT_Q5_1 ? b[QO - 4 + (j0 >> 3)] : 0u;
#pragma unroll
    for (int i = 0; i < 8; i++) {
      int qv = (int)((dkq_b8(q, i) >> sh) & 15);
      if constexpr (DT == DK_KT_Q5_0 || DT == DK_KT_Q5_1) qv |= (int)((hb >> i) & 1) << 4;
      if constexpr (DT == DK_KT_IQ4_NL) v[i] = __fmul_rn(d, dkq_iq4_level(qv));
      else if constexpr (DT == DK_KT_Q5_0) v[i] = __fmul_rn(d, (float)(qv - 16));
      else v[i] = dkq_affine(d, (float)qv, m);
    }
  } else if constexpr (DT == DK_KT_IQ4_XS) {
    // d, scales_h, scales_l[4] in one 8-byte load
    const uint2 hd = *(const uint2 *)b;
    const int s = j0 >> 5;
    const int ls = (int)((dkq_b8(hd, 4 + (s >> 1)) >> (4 * (s & 1))) & 15) | (int)(((hd.x >> 16) >> (2 * s)) & 3) << 4;
    const float dl = __fmul_rn(dk_h2f((uint16_t)hd.x), (float)(ls - 32));
    const uint2 q = dkq_ld8<A>(b + 8 + 16 * s + (j0 & 15));
    const int sh = (j0 & 31) < 16 ? 0 : 4;
#pragma unroll
    for (int i = 0; i < 8; i++) v[i] = __fmul_rn(dl, dkq_iq4_level((int)((dkq_b8(q, i) >> sh) & 15)));
  } else if constexpr (DT == DK_KT_Q2_K || DT == DK_KT_Q3_K) {
    // 2-bit values at qs + (j / 128) * 32 + j % 32, bits 2 ((j / 32) % 4); a
    // scale per 16 values; q3_K's high bits at hmask[j % 32], bit j / 32
    constexpr int QS = DT == DK_KT_Q2_K ? 16 : 32;
    const uint2 q = dkq_ld8<A>(b + QS + (j0 >> 7) * 32 + (j0 & 31));
    const int sh = 2 * ((j0 >> 5) & 3), g = j0 >> 4;
    float dl, ml = 0.0f;
    uint2 h = make_uint2(0, 0);
    if constexpr (DT == DK_KT_Q2_K) {
      const int sc = b[g];
      dl = __fmul_rn(dkq_half(b, 80), (float)(sc & 15));
      ml = __fmul_rn(dkq_half(b, 82), (float)(sc >> 4));
    } else {
      const int lo = g < 8 ? b[96 + g] & 15 : b[88 + g] >> 4, hi = (b[104 + (g & 3)] >> (2 * (g >> 2))) & 3;
      dl = __fmul_rn(dkq_half(b, 108), (float)((lo | (hi << 4)) - 32));
      h = dkq_ld8<A>(b + (j0 & 31));
    }
#pragma unroll
    for (int i = 0; i < 8; i++) {
      const int q2 = (int)((dkq_b8(q, i) >> sh) & 3);
      if constexpr (DT == DK_KT_Q2_K) v[i] = dkq_affine(dl, (float)q2, -ml);
      else v[i] = __fmul_rn(dl, (float)(q2 - ((dkq_b8(h, i) >> (j0 >> 5)) & 1 ? 0 : 4)));
    }
  } else if constexpr (DT == DK_KT_Q4_K || DT == DK_KT_Q5_K) {
    // d, dmin and the 12 scale bytes in one 16-byte load
    const uint4 hd = *(const uint4 *)b;
    const int s = j0 >> 5;
    const int a = dkq_byte16(hd, 4 + s), c = dkq_byte16(hd, 8 + s);   // sc[s], sc[s + 4]
    const int scale = s < 4 ? a & 63 : (c & 15) | ((dkq_byte16(hd, s) >> 6) << 4);
    const int mn = s < 4 ? c & 63 : (c >> 4) | ((a >> 6) << 4);
    const uint2 q = dkq_ld8<A>(b + (DT == DK_KT_Q4_K ? 16 : 48) + 32 * (s >> 1) + (j0 & 31));
    uint2 h = make_uint2(0, 0);
    if constexpr (DT == DK_KT_Q5_K) h = dkq_ld8<A>(b + 16 + (j0 & 31));
    const float dl = __fmul_rn(dk_h2f((uint16_t)hd.x), (float)scale), ml = __fmul_rn(dk_h2f((uint16_t)(hd.x >> 16)), (float)mn);
#pragma unroll
    for (int i = 0; i < 8; i++) {
      int qv = (int)((dkq_b8(q, i) >> (4 * (s & 1))) & 15);
      if constexpr (DT == DK_KT_Q5_K) qv |= (int)((dkq_b8(h, i) >> s) & 1) << 4;
      v[i] = dkq_affine(dl, (float)qv, -ml);
    }
  } else if constexpr (DT == DK_KT_Q6_K) {
    const int hf = j0 >> 7;
    const uint2 lo = dkq_ld8<A>(b + hf * 64 + (j0 & 63)), hi = dkq_ld8<A>(b + 128 + hf * 32 + (j0 & 31));
    const float dl = __fmul_rn(dkq_half(b, 208), (float)(int8_t)b[192 + (j0 >> 4)]);
#pragma unroll
    for (int i = 0; i < 8; i++) {
      const int q = (int)((dkq_b8(lo, i) >> (4 * ((j0 >> 6) & 1))) & 15) | (int)((dkq_b8(hi, i) >> (2 * ((j0 >> 5) & 3))) & 3) << 4;
      v[i] = __fmul_rn(dl, (float)(q - 32));
    }
  } else {
#pragma unroll
    for (int i = 0; i < 8; i++) v[i] = dkq_value(DT, b, j0 + i);
  }
}
// value k of a row of type dt
DK_DEV float dkq_row_value(int dt, const uint8_t *row, int64_t k) {
  const int bs = dkq_block(dt);
  return dkq_value(dt, row + (k / bs) * dkq_bytes(dt), (int)(k % bs));
}
#endif
