#version 450
/* linear for decode on CPU-type devices (lavapipe): one invocation per
 * output row, walking its row of w from start to end, x read at the same
 * index by every lane. A software device runs the lanes of a subgroup as
 * one SIMD vector and pays per lane for every buffer access; here each lane
 * streams its own row with the widest loads the layout allows, and nothing
 * goes through shared memory or barriers; the _t variants (the default on
 * CPU devices) make those loads texel fetches (texel.glsl). (GPUs use
 * matvec.comp, which splits K across a subgroup so that neighbouring lanes
 * read neighbouring bytes.) Accumulation is f32. */
//!variant matvec_rows_f32 -DWT=0
//!variant matvec_rows_f16 -DWT=1
//!variant matvec_rows_bf16 -DWT=2
//!variant matvec_rows_q8_0 -DWT=4
//!variant matvec_rows_q4_0 -DWT=5
//!variant matvec_rows_q4_1 -DWT=6
//!variant matvec_rows_q5_0 -DWT=7
//!variant matvec_rows_q5_1 -DWT=8
//!variant matvec_rows_q2_K -DWT=9
//!variant matvec_rows_q3_K -DWT=10
//!variant matvec_rows_q4_K -DWT=11
//!variant matvec_rows_q5_K -DWT=12
//!variant matvec_rows_q6_K -DWT=13
//!variant matvec_rows_iq4_nl -DWT=14
//!variant matvec_rows_iq4_xs -DWT=15
//!variant matvec_rows_iq3_xxs -DWT=16
//!variant matvec_rows_iq3_s -DWT=17
//!variant matvec_rows_iq2_xxs -DWT=18
//!variant matvec_rows_iq2_xs -DWT=19
//!variant matvec_rows_iq2_s -DWT=20
//!variant matvec_rows_t_f32 -DWT=0 -DTEXW
//!variant matvec_rows_t_f16 -DWT=1 -DTEXW
//!variant matvec_rows_t_bf16 -DWT=2 -DTEXW
//!variant matvec_rows_t_q8_0 -DWT=4 -DTEXW
//!variant matvec_rows_t_q4_0 -DWT=5 -DTEXW
//!variant matvec_rows_t_q4_1 -DWT=6 -DTEXW
//!variant matvec_rows_t_q5_0 -DWT=7 -DTEXW
//!variant matvec_rows_t_q5_1 -DWT=8 -DTEXW
//!variant matvec_rows_t_q2_K -DWT=9 -DTEXW
//!variant matvec_rows_t_q3_K -DWT=10 -DTEXW
//!variant matvec_rows_t_q4_K -DWT=11 -DTEXW
//!variant matvec_rows_t_q5_K -DWT=12 -DTEXW
//!variant matvec_rows_t_q6_K -DWT=13 -DTEXW
//!variant matvec_rows_t_iq4_nl -DWT=14 -DTEXW
//!variant matvec_rows_t_iq4_xs -DWT=15 -DTEXW
//!variant matvec_rows_t_iq3_xxs -DWT=16 -DTEXW
//!variant matvec_rows_t_iq3_s -DWT=17 -DTEXW
//!variant matvec_rows_t_iq2_xxs -DWT=18 -DTEXW
//!variant matvec_rows_t_iq2_xs -DWT=19 -DTEXW
//!variant matvec_rows_t_iq2_s -DWT=20 -DTEXW
#extension GL_GOOGLE_include_directive : require
#define WG 64
#define MMAX 8
layout(local_size_x = WG) in;
#include "common.glsl"

DK_OUT(0, O)
DK_IN(1, X)
DK_IN(2, W)
DK_IN(3, Bias)
/* x and w again, in 16-byte units: four f32 or eight f16/bf16 values */
layout(set = 0, binding = 1) readonly buffer X4_w { uvec4 X4[]; };
layout(set = 0, binding = 2) readonly buffer W4_w { uvec4 W4[]; };

layout(constant_id = 0) const uint DTX = 0u;
layout(constant_id = 1) const uint DTO = 0u;
layout(constant_id = 2) const uint DTB = 0u;
layout(constant_id = 3) const uint HAS_BIAS = 0u;
layout(constant_id = 4) const uint M = 1u;       /* rows of x, 1..MMAX */
/* bit 0: w starts on a 16-byte boundary (every row of it, for the float
 * types); bit 1: so does every row of x; bit 2: every row of w is whole
 * chunks of eight blocks on that grid (the 32-value block formats). A
 * software device runs both sides of a branch with the lanes masked off,
 * so these choices are constants */
layout(constant_id = 5) const uint WIDE = 0u;
/* rows of w each lane walks one after the other (RPL consecutive rows, one
 * stream of memory), so that short rows (Gemma 3's 262144 x 640 q8_0
 * classifier: 680 bytes) still give the CPU's prefetchers long runs */
layout(constant_id = 8) const uint RPL1 = 0u;   /* RPL - 1: zero spec words mean one */
const uint RPL = RPL1 + 1u;

layout(push_constant) uniform P {
  uint N, K, KC;
  uint x_off, w_off, o_off, b_off;  /* w_off in halves for block formats */
  uint ldx, ldo;
} p;

#include "texel.glsl"

float acc[MMAX];

#ifdef TEXW
/* words of texels (the _t variants) */
#define HALF(u, h) ((u[(h) >> 1] >> (16u * ((h) & 1u))) & 0xffffu)
#define HW(u, h) (((h) & 1u) == 0u ? u[(h) >> 1] : (u[(h) >> 1] >> 16) | (u[((h) >> 1) + 1u] << 16))
/* u[4i .. 4i+3] = texel AT (an expression of i) for i < n */
#define TEXELS(u, AT, n) \
  [[unroll]] for (uint i = 0u; i < (n); i++) { \
    uvec4 t = WV(AT); \
    u[4u * i] = t.x; u[4u * i + 1u] = t.y; u[4u * i + 2u] = t.z; u[4u * i + 3u] = t.w; \
  }
/* words i < n of u = halves sh + 2i, sh + 2i + 1 (sh < 8, q = sh / 2): the
 * texels of a lane's row moved to where its blocks start */
#define SHIFT_HALVES(u, n) \
  [[unroll]] for (uint i = 0u; i < (n); i++) { \
    uint w0 = q == 0u ? u[i] : q == 1u ? u[i + 1u] : q == 2u ? u[i + 2u] : u[i + 3u]; \
    uint w1 = q == 0u ? u[i + 1u] : q == 1u ? u[i + 2u] : q == 2u ? u[i + 3u] : u[i + 4u]; \
    u[i] = (sh & 1u) != 0u ? (w0 >> 16) | (w1 << 16) : w0; \
  }
/* words i < ns of u = halves hb + 2i, hb + 2i + 1: the nt texels from the
 * one half hb is in (clamped to the binding's last texel, `last`; zeros
 * after them), shifted to hb. u holds at least 4 nt + 4 words */
#define SPAN_WORDS(u, hb, nt, ns) \
  { \
    uint t0 = (hb) >> 3, sh = (hb) & 7u, q = sh >> 1; \
    TEXELS(u, min(t0 + i, last), nt); \
    [[unroll]] for (uint i = 4u * (nt); i < 4u * (nt) + 4u; i++) u[i] = 0u; \
    SHIFT_HALVES(u, ns); \
  }
#endif

/* One GGUF block of w: its f16 scale and its NW words of quants (q8_0: 17
 * halves, NW = 8; q4_0: 9 halves, NW = 4), from NW 32-bit loads and one
 * 16-bit load instead of 2*NW+1 16-bit ones. Blocks are only 2-byte
 * aligned: at an even half hb the words start with the block (the first
 * holds the scale and two quant bytes; the 16-bit load is the last quant
 * half), at an odd one they start after the scale (the 16-bit load is the
 * scale). Every load stays inside the block. */
#define NW (WT == 4 ? 8u : 4u)
float wblock(uint hb, out uint q[8]) {
  uint e = hb & 1u, a = (hb + 1u) >> 1, v[8];
  [[unroll]] for (uint j = 0u; j < NW; j++) v[j] = W32[a + j];
  uint x = uint(W16[e != 0u ? hb : hb + 2u * NW]);
  [[unroll]] for (uint j = 0u; j < NW; j++)
    q[j] = e != 0u ? v[j] : (v[j] >> 16) | ((j + 1u < NW ? v[j + 1u] : x) << 16);
  return dk_h2f(e != 0u ? x : v[0] & 0xffffu);
}

/* acc[m] += w . x[m, k .. k+7]; k is a multiple of 8. Every lane reads the
 * same x, but a software device still pays per lane for each load: the
 * widest loads x's alignment allows. */
void dot8(float w0, float w1, float w2, float w3, float w4, float w5, float w6, float w7, uint k) {
  [[unroll]] for (uint m = 0u; m < MMAX; m++) {
    if (m >= M) break;
    uint xb = p.x_off + m * p.ldx + k;
    float x0, x1, x2, x3, x4, x5, x6, x7;
    if ((WIDE & 2u) != 0u && DTX == DT_F32) {
      uvec4 a = XV(xb / 4u), c = XV(xb / 4u + 1u);
      x0 = uintBitsToFloat(a.x); x1 = uintBitsToFloat(a.y); x2 = uintBitsToFloat(a.z); x3 = uintBitsToFloat(a.w);
      x4 = uintBitsToFloat(c.x); x5 = uintBitsToFloat(c.y); x6 = uintBitsToFloat(c.z); x7 = uintBitsToFloat(c.w);
    } else if ((WIDE & 2u) != 0u) {
      uvec4 a = XV(xb / 8u);
      x0 = dk_cvt16(DTX, a.x & 0xffffu); x1 = dk_cvt16(DTX, a.x >> 16); x2 = dk_cvt16(DTX, a.y & 0xffffu);
      x3 = dk_cvt16(DTX, a.y >> 16); x4 = dk_cvt16(DTX, a.z & 0xffffu); x5 = dk_cvt16(DTX, a.z >> 16);
      x6 = dk_cvt16(DTX, a.w & 0xffffu); x7 = dk_cvt16(DTX, a.w >> 16);
    } else {
      x0 = X_ld(DTX, xb); x1 = X_ld(DTX, xb + 1u); x2 = X_ld(DTX, xb + 2u); x3 = X_ld(DTX, xb + 3u);
      x4 = X_ld(DTX, xb + 4u); x5 = X_ld(DTX, xb + 5u); x6 = X_ld(DTX, xb + 6u); x7 = X_ld(DTX, xb + 7u);
    }
    acc[m] += w0 * x0 + w1 * x1 + w2 * x2 + w3 * x3 + w4 * x4 + w5 * x5 + w6 * x6 + w7 * x7;
  }
}

/* the 32-value block formats with a path of their own here: q8_0, q4_0,
 * q4_1, q5_0, q5_1, and iq4_nl (q4_0's layout, its nibbles picking levels) */
#define BLK32 ((WT >= 4 && WT <= 8) || WT == 14)
#if BLK32
/* the 32 values of one block of q8_0, q4_0, q4_1, q5_0, q5_1 or iq4_nl: scale d,
 * min m (q4_1/q5_1), the fifth bits qh (q5_0/q5_1), the quants in q[0 .. NW) */
void qblock(float d, float m, uint qh, uint q[8], uint k) {
#if WT == 4
  [[unroll]] for (uint g = 0u; g < 4u; g++) {
    /* words 2g, 2g+1: values 8g .. 8g+7, one signed byte each */
    uint u0 = q[2u * g], u1 = q[2u * g + 1u];
    dot8(d * float(int(u0 << 24) >> 24), d * float(int(u0 << 16) >> 24), d * float(int(u0 << 8) >> 24),
         d * float(int(u0) >> 24), d * float(int(u1 << 24) >> 24), d * float(int(u1 << 16) >> 24),
         d * float(int(u1 << 8) >> 24), d * float(int(u1) >> 24), k + 8u * g);
  }
#else
  [[unroll]] for (uint g = 0u; g < 2u; g++) {
    /* bytes 8g..8g+7 (words 2g, 2g+1): values 8g.. in the low nibbles, 16+8g.. in the high */
    uint u0 = q[2u * g], u1 = q[2u * g + 1u];
    [[unroll]] for (uint hi = 0u; hi < 2u; hi++) {
      float v[8];
      [[unroll]] for (uint i = 0u; i < 8u; i++) {
        uint c = ((i < 4u ? u0 : u1) >> (8u * (i & 3u) + 4u * hi)) & 15u;
        if (WT == 7 || WT == 8) c |= ((qh >> (16u * hi + 8u * g + i)) & 1u) << 4;
        v[i] = WT == 5 ? d * float(int(c) - 8) : WT == 7 ? d * float(int(c) - 16)
             : WT == 14 ? d * float(dkq_iq4(c)) : dkq_affine(d, float(c), m);
      }
      dot8(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], k + 16u * hi + 8u * g);
    }
  }
#endif
}

#ifdef TEXW
/* chunks of eight blocks in whole texels: TB halves a block (q8_0 17, q4_0
 * 9, q4_1 10, q5_0 11, q5_1 12), so TB texels a chunk; the quants from half
 * QO of a block on */
const uint TB = WT == 4 ? 17u : WT == 5 || WT == 14 ? 9u : WT == 6 ? 10u : WT == 7 ? 11u : 12u;
const uint QO = WT <= 5 || WT == 14 ? 1u : WT == 6 ? 2u : WT == 7 ? 3u : 4u;
/* blocks b .. b+nb-1 of the row (nb <= 8, a constant where inlined), block
 * j's first half at half TB*j of the words u */
void qchunk(uint u[4u * TB + 4u], uint b, uint nb) {
  [[unroll]] for (uint j = 0u; j < 8u; j++) {
    if (j >= nb) break;
    uint h = TB * j, q[8], qh = 0u;
    float d = dk_h2f(HALF(u, h)), m = 0.0;
    if (WT == 6 || WT == 8) m = dk_h2f(HALF(u, h + 1u));
    if (WT == 7 || WT == 8) qh = HW(u, h + QO - 2u);
    [[unroll]] for (uint i = 0u; i < NW; i++) q[i] = HW(u, h + QO + 2u * i);
    qblock(d, m, qh, q, (b + j) * 32u);
  }
}
#endif
#endif

#if WT >= 6
/* the block formats beyond q8_0/q4_0, eight values at a time (quants.glsl) */
void generic_blocks(uint row) {
  uint bs = dkq_block(WT), bh = dkq_halves(WT), nbk = p.K / bs;
  for (uint b = 0u; b < nbk; b++) {
    uint hb = p.w_off + (row * nbk + b) * bh;
    for (uint g = 0u; g < bs; g += 8u) {
      float v[8];
      dkq_group8(WT, hb, g, v);
      dot8(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], b * bs + g);
    }
  }
}
#endif

/* the 256-value formats read as texels, off the 16-byte grid */
#if (WT == 9 || WT == 10 || WT == 13 || WT >= 15) && defined(TEXW)
#define KQ_TEX 1
#else
#define KQ_TEX 0
#endif
#if WT == 11 || WT == 12 || KQ_TEX
/* Super-block b of a row of q4_K/q5_K (rows on the 16-byte grid) or
 * q2_K/q3_K/q6_K/iq4_xs/iq3/iq2 (texels): with XS false into acc[] through dot8 (every row of x read
 * from its binding), with XS true returned as its dot with xv, the
 * super-block's 256 values of x that rows_kquant reads once for all of a
 * lane's rows. XS is a constant where inlined. */
float kq_nox[256];
float kq_super(uint row, uint b, const bool XS, float xv[256]) {
  uint nbk = p.K / 256u;
  float sum = 0.0;
#define KQ_USE(v, j) \
  if (XS) sum += v[0] * xv[(j)] + v[1] * xv[(j) + 1u] + v[2] * xv[(j) + 2u] + v[3] * xv[(j) + 3u] + \
                 v[4] * xv[(j) + 4u] + v[5] * xv[(j) + 5u] + v[6] * xv[(j) + 6u] + v[7] * xv[(j) + 7u]; \
  else dot8(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], b * 256u + (j));
#if WT == 11 || WT == 12
  /* q4_K/q5_K super-blocks are 144/176 bytes, nine/eleven 16-byte words: on
   * rows that start on a 16-byte boundary each lane reads its super-block as
   * whole uvec4s (d, dmin and the scales; q5_K's high bits; the codes), where
   * dkq_group8 spends about one 16-bit load per value, each a gather of the
   * subgroup's lanes on a software device */
  const uint U = WT == 11 ? 9u : 11u, QO = WT == 11 ? 1u : 3u;
  uint a = p.w_off / 8u + (row * nbk + b) * U;
  uvec4 h = WV(a), qh0 = uvec4(0u), qh1 = uvec4(0u);
  float d = dk_h2f(h.x & 0xffffu), dmin = dk_h2f(h.x >> 16);
  if (WT == 12) { qh0 = WV(a + 1u); qh1 = WV(a + 2u); }
  [[unroll]] for (uint s = 0u; s < 8u; s++) {
    /* the 6-bit scale and min of group s (dkq_scale_min, from registers) */
    uint sc, mn;
    if (s < 4u) {
      sc = ((h.y >> (8u * s)) & 63u); mn = ((h.z >> (8u * s)) & 63u);
    } else {
      uint bb = (h.w >> (8u * (s - 4u))) & 255u;
      sc = (bb & 15u) | (((h.y >> (8u * (s - 4u))) >> 6 & 3u) << 4);
      mn = (bb >> 4) | (((h.z >> (8u * (s - 4u))) >> 6 & 3u) << 4);
    }
    float dl = d * float(sc), ml = dmin * float(mn);
    [[unroll]] for (uint hf = 0u; hf < 2u; hf++) {
      /* codes of group s: nibble s&1 of bytes 32*(s/2) + 16*hf .. */
      uvec4 q = WV(a + QO + 2u * (s >> 1) + hf), qh = hf == 0u ? qh0 : qh1;
      [[unroll]] for (uint wi = 0u; wi < 4u; wi += 2u) {
        float v[8];
        [[unroll]] for (uint i = 0u; i < 8u; i++) {
          uint byte = ((i < 4u ? q[wi] : q[wi + 1u]) >> (8u * (i & 3u))) & 255u;
          uint c = (byte >> (4u * (s & 1u))) & 15u;
          if (WT == 12) c |= ((((i < 4u ? qh[wi] : qh[wi + 1u]) >> (8u * (i & 3u))) >> s) & 1u) << 4;
          v[i] = dkq_affine(dl, float(c), -ml);
        }
        KQ_USE(v, 32u * s + 16u * hf + 4u * wi)
      }
    }
  }
#else
  /* q2_K/q3_K/q6_K super-blocks are 84/110/210 bytes, off the 16-byte grid:
   * a lane reads the 7/8/14 texels its super-block spans, shifts the words
   * to where it starts (as q8_0's rows off the grid do) and decodes its 256
   * values from registers, where dkq_group8 spends about one 16-bit texel
   * read a value (q2_K/q3_K 4096 x 4096 on lavapipe: 0.4-0.5 GB/s, a tenth
   * of q4_K's). Each value as dkq_group8 computes it. */
  const uint BH = WT == 9 ? 42u : WT == 10 ? 55u : WT == 15 ? 68u : WT == 16 ? 49u : WT == 17 ? 55u
                : WT == 18 ? 33u : WT == 19 ? 37u : WT == 20 ? 41u : 105u;   /* halves a super-block */
  const uint NT = (BH + 14u) / 8u, NSW = (BH + 1u) / 2u;
  uint last = uint(textureSize(WTX)) - 1u, u[4u * NT + 4u];
  SPAN_WORDS(u, p.w_off + (row * nbk + b) * BH, NT, NSW);
#define KQ_BYTE(o) ((u[(o) >> 2] >> (8u * ((o) & 3u))) & 255u)
#if WT == 9
  /* scales[16] (scale | min << 4), qs[64] at 16, d at 80, dmin at 82 */
  float d = dk_h2f(u[20] & 0xffffu), dmin = dk_h2f(u[20] >> 16);
  [[unroll]] for (uint j = 0u; j < 256u; j += 8u) {
    uint sc = KQ_BYTE(j >> 4), o = 16u + (j >> 7) * 32u + (j & 31u), sh = 2u * ((j >> 5) & 3u);
    float dl = d * float(sc & 15u), ml = dmin * float(sc >> 4), v[8];
    [[unroll]] for (uint i = 0u; i < 8u; i++) v[i] = dkq_affine(dl, float((KQ_BYTE(o + i) >> sh) & 3u), -ml);
    KQ_USE(v, j)
  }
#elif WT == 10
  /* hmask[32], qs[64] at 32, the 6-bit scales' 12 bytes at 96, d at 108 */
  float d = dk_h2f(u[27] & 0xffffu);
  [[unroll]] for (uint j = 0u; j < 256u; j += 8u) {
    uint g = j >> 4, o = 32u + (j >> 7) * 32u + (j & 31u), sh = 2u * ((j >> 5) & 3u);
    uint lo = g < 8u ? KQ_BYTE(96u + g) & 15u : KQ_BYTE(88u + g) >> 4;
    uint hi = (KQ_BYTE(104u + (g & 3u)) >> (2u * (g >> 2))) & 3u;
    float dl = d * float(int(lo | (hi << 4)) - 32), v[8];
    [[unroll]] for (uint i = 0u; i < 8u; i++) {
      uint q2 = (KQ_BYTE(o + i) >> sh) & 3u, h = (KQ_BYTE((j & 31u) + i) >> (j >> 5)) & 1u;
      v[i] = dl * float(int(q2) - (h != 0u ? 0 : 4));
    }
    KQ_USE(v, j)
  }
#elif WT == 15
  /* d, scales_h (16 bits), scales_l[4] at 4, group s's 16 bytes of nibbles
   * at 8 + 16s: values 0-15 of the group low, 16-31 high */
  float d = dk_h2f(u[0] & 0xffffu);
  uint sh16 = u[0] >> 16;
  [[unroll]] for (uint j = 0u; j < 256u; j += 8u) {
    uint s = j >> 5, l = j & 31u;
    uint sc = ((KQ_BYTE(4u + (s >> 1)) >> (4u * (s & 1u))) & 15u) | (((sh16 >> (2u * s)) & 3u) << 4);
    uint o = 8u + 16u * s + (l & 15u), sh = (l & 16u) != 0u ? 4u : 0u;
    float dl = d * float(int(sc) - 32), v[8];
    [[unroll]] for (uint i = 0u; i < 8u; i++) v[i] = dl * float(dkq_iq4((KQ_BYTE(o + i) >> sh) & 15u));
    KQ_USE(v, j)
  }
#elif WT == 16 || WT == 17
  /* iq3 (quants.glsl's dkq_iq3_8 from registers): iq3_xxs d, qs[64] at 2,
   * group g's u32 at 66 + 4g (four 7-bit sign codes, the scale in the top
   * 4 bits); iq3_s d, qs[64] at 2, qh[8] at 66, signs[32] at 74, scales[4]
   * at 106 */
  float d = dk_h2f(u[0] & 0xffffu);
  [[unroll]] for (uint g = 0u; g < 8u; g++) {
#if WT == 16
    uint ss = KQ_BYTE(66u + 4u * g) | (KQ_BYTE(67u + 4u * g) << 8) | (KQ_BYTE(68u + 4u * g) << 16) | (KQ_BYTE(69u + 4u * g) << 24);
    precise float dm = d * (0.5 + float(ss >> 28));
    precise float dl = dm * 0.5;
#else
    uint qh = KQ_BYTE(66u + g);
    float dl = d * float(1u + 2u * ((KQ_BYTE(106u + (g >> 1)) >> (4u * (g & 1u))) & 15u));
#endif
    [[unroll]] for (uint l = 0u; l < 4u; l++) {
      uint i = 8u * g + 2u * l, p0, p1, sg;
#if WT == 16
      sg = (ss >> (7u * l)) & 127u;
      sg |= (uint(bitCount(sg)) & 1u) << 7;
      p0 = DKQ_GRID(KQ_BYTE(2u + i));
      p1 = DKQ_GRID(KQ_BYTE(3u + i));
#else
      p0 = DKQ_GRID(DKQ_S3 + (KQ_BYTE(2u + i) | (((qh >> (2u * l)) & 1u) << 8)));
      p1 = DKQ_GRID(DKQ_S3 + (KQ_BYTE(3u + i) | (((qh >> (2u * l + 1u)) & 1u) << 8)));
      sg = KQ_BYTE(74u + 4u * g + l);
#endif
      float v[8];
      [[unroll]] for (uint k = 0u; k < 8u; k++) {
        int c = int(((k < 4u ? p0 : p1) >> (8u * (k & 3u))) & 255u);
        v[k] = dl * float(((sg >> k) & 1u) != 0u ? -c : c);
      }
      KQ_USE(v, 32u * g + 8u * l)
    }
  }
#elif WT >= 18
  /* iq2 (quants.glsl's dkq_iq2_8 and dkq_iq2_scale from registers): point
   * i = 4g + l of group g; iq2_xxs d, then per group 4 point bytes and a
   * u32 (four 7-bit sign codes, the scale in the top 4 bits) at 2 + 8g;
   * iq2_xs d, u16 i at 2 + 2i (9-bit point, 7-bit sign code), scales at 66;
   * iq2_s d, qs at 2, signs at 34, qh at 66, scales at 74 */
  float d = dk_h2f(u[0] & 0xffffu);
  [[unroll]] for (uint g = 0u; g < 8u; g++) {
#if WT == 18
    uint ss = KQ_BYTE(6u + 8u * g) | (KQ_BYTE(7u + 8u * g) << 8) | (KQ_BYTE(8u + 8u * g) << 16) | (KQ_BYTE(9u + 8u * g) << 24);
#else
    uint scb = KQ_BYTE((WT == 19 ? 66u : 74u) + g);
#endif
    [[unroll]] for (uint l = 0u; l < 4u; l++) {
      uint i = 4u * g + l, pt, sg, sc;
#if WT == 18
      sg = (ss >> (7u * l)) & 127u;
      sg |= (uint(bitCount(sg)) & 1u) << 7;
      pt = DKQ_X2 + 2u * KQ_BYTE(2u + 8u * g + l);
      sc = ss >> 28;
#elif WT == 19
      uint q = KQ_BYTE(2u + 2u * i) | (KQ_BYTE(3u + 2u * i) << 8);
      sg = q >> 9;
      sg |= (uint(bitCount(sg)) & 1u) << 7;
      pt = DKQ_XS2 + 2u * (q & 511u);
      sc = (scb >> (4u * (l >> 1))) & 15u;
#else
      pt = DKQ_S2 + 2u * (KQ_BYTE(2u + i) | (((KQ_BYTE(66u + g) >> (2u * l)) & 3u) << 8));
      sg = KQ_BYTE(34u + i);
      sc = (scb >> (4u * (l >> 1))) & 15u;
#endif
      precise float dm = d * (0.5 + float(sc));
      precise float dl = dm * 0.25;
      uint p0, p1;
      DKQ_GRID2(pt, p0, p1)
      float v[8];
      [[unroll]] for (uint k = 0u; k < 8u; k++) {
        int c = int(((k < 4u ? p0 : p1) >> (8u * (k & 3u))) & 255u);
        v[k] = dl * float(((sg >> k) & 1u) != 0u ? -c : c);
      }
      KQ_USE(v, 32u * g + 8u * l)
    }
  }
#else
  /* ql 0..127, qh 128..191, the int8 scales 192..207, d at 208 */
  float d = dk_h2f(u[52] & 0xffffu);
  [[unroll]] for (uint j = 0u; j < 256u; j += 8u) {
    uint lo = (j >> 7) * 64u + (j & 63u), ho = 128u + (j >> 7) * 32u + (j & 31u);
    uint ls = 4u * ((j >> 6) & 1u), hs = 2u * ((j >> 5) & 3u);
    float dl = d * float(int(KQ_BYTE(192u + (j >> 4)) << 24) >> 24);
    float v[8];
    [[unroll]] for (uint i = 0u; i < 8u; i++)
      v[i] = dl * float(int(((KQ_BYTE(lo + i) >> ls) & 15u) | (((KQ_BYTE(ho + i) >> hs) & 3u) << 4)) - 32);
    KQ_USE(v, j)
  }
#endif
#undef KQ_BYTE
#endif
#undef KQ_USE
  return sum;
}

/* One row of x (f32, on the 16-byte grid) against a lane's RPL > 1 rows,
 * super-block by super-block: x's 256 values of it read once (64 texels)
 * for all the rows, where row_dot reads them again for each row, each a
 * per-lane texel fetch on a software device. */
void rows_kquant(uint lane) {
  uint r0 = lane * RPL;
  float ar[8];
  [[unroll]] for (uint r = 0u; r < 8u; r++) ar[r] = 0.0;
  for (uint b = 0u; b < p.K / 256u; b++) {
    float xv[256];
    [[unroll]] for (uint i = 0u; i < 64u; i++) {
      uvec4 t = XV(p.x_off / 4u + b * 64u + i);
      xv[4u * i] = uintBitsToFloat(t.x); xv[4u * i + 1u] = uintBitsToFloat(t.y);
      xv[4u * i + 2u] = uintBitsToFloat(t.z); xv[4u * i + 3u] = uintBitsToFloat(t.w);
    }
    /* one super-block's code for all the rows (a loop, not unrolled: a
     * software device compiles each copy): row r adds to ar[0], then the
     * sums turn by one, so that after RPL rows each is back in its place */
    [[dont_unroll]] for (uint r = 0u; r < RPL; r++) {
      float a0 = ar[0] + kq_super(min(r0 + r, p.N - 1u), b, true, xv);
      [[unroll]] for (uint i = 0u; i + 1u < 8u; i++)
        if (i + 1u < RPL) ar[i] = ar[i + 1u];
      ar[RPL - 1u] = a0;
    }
  }
  [[unroll]] for (uint r = 0u; r < 8u; r++) {
    uint n = r0 + r;
    if (r >= RPL || n >= p.N) break;
    float v = ar[r];
    if (HAS_BIAS != 0u) v += Bias_ld(DTB, p.b_off + n);
    O_st(DTO, p.o_off + n, v);
  }
}
#endif

/* output column n of every row of x */
void row_dot(uint n) {
  uint row = min(n, p.N - 1u);   /* lanes past N walk the last row and store nothing */
  [[unroll]] for (uint m = 0u; m < MMAX; m++) acc[m] = 0.0;
#if defined(TEXW) && BLK32
  /* the 32-value block formats, eight blocks at a time from whole texels
   * (9 to 17 of them). Rows on the 16-byte grid (the row a multiple of eight
   * blocks) start on a texel; q8_0/q4_0 rows off it (Gemma 3's q8_0
   * classifier, K = 640) read one texel more and shift each lane's words by
   * where its row starts in the first. The last nbk % 8 blocks come one at a
   * time from the two or three texels each spans: through the storage buffer
   * they cost several times more a block (K = 640: 4 of 20 blocks, once 60 %
   * of the time) */
  uint nbk = p.K / 32u, b = 0u, last = uint(textureSize(WTX)) - 1u;
  if ((WIDE & 4u) != 0u) {
    for (; b < nbk; b += 8u) {
      uint u[4u * TB + 4u];
      uint t0 = (p.w_off + (row * nbk + b) * TB) >> 3;
      TEXELS(u, t0 + i, TB);
      qchunk(u, b, 8u);
    }
  } else {
#if WT >= 6 && WT != 14
    /* q4_1/q5_0/q5_1 rows off the grid keep quants.glsl's 16-bit texel
     * reads: with the shift below and the tail they were slower on
     * SmolLM2's q4_1 960 x 576 (0.42-0.48 against 0.25-0.31 ms a call,
     * measured while the chunk test was still a runtime branch) */
    generic_blocks(row);
  }
#else
    for (; b + 8u <= nbk; b += 8u) {
      uint hb = p.w_off + (row * nbk + b) * TB, t0 = hb >> 3, sh = hb & 7u, q = sh >> 1;
      uint u[4u * TB + 4u];
      TEXELS(u, min(t0 + i, last), TB + 1u);
      SHIFT_HALVES(u, 4u * TB);
      qchunk(u, b, 8u);
    }
  }
  /* a block's TB halves from half sh (< 8) of TT texels; its (TB + 1) / 2
   * words after the shift */
  const uint TT = (TB + 14u) / 8u, NS = (TB + 1u) / 2u;
  for (; b < nbk; b++) {
    uint u[4u * TB + 4u];
    SPAN_WORDS(u, p.w_off + (row * nbk + b) * TB, TT, NS);
    qchunk(u, b, 1u);
  }
#endif
#elif WT >= 6
#if WT == 11 || WT == 12
  if ((WIDE & 1u) != 0u) {
    for (uint b = 0u; b < p.K / 256u; b++) kq_super(row, b, false, kq_nox);
  } else
#endif
#if KQ_TEX
  for (uint b = 0u; b < p.K / 256u; b++) kq_super(row, b, false, kq_nox);
#else
  generic_blocks(row);
#endif
#elif WT >= 4
  uint nbk = p.K / 32u, b = 0u;
  for (; b < nbk; b++) {
    uint q[8];
    float d = wblock(p.w_off + (row * nbk + b) * (WT == 4 ? 17u : 9u), q);
    qblock(d, 0.0, 0u, q, b * 32u);
  }
#else
  uint wb = p.w_off + row * p.K, k = 0u;
  if ((WIDE & 1u) != 0u) {
#if WT == 0
    for (; k + 8u <= p.K; k += 8u) {
      uvec4 a = WV((wb + k) / 4u), c = WV((wb + k) / 4u + 1u);
      dot8(uintBitsToFloat(a.x), uintBitsToFloat(a.y), uintBitsToFloat(a.z), uintBitsToFloat(a.w),
           uintBitsToFloat(c.x), uintBitsToFloat(c.y), uintBitsToFloat(c.z), uintBitsToFloat(c.w), k);
    }
#else
    for (; k + 8u <= p.K; k += 8u) {
      uvec4 a = WV((wb + k) / 8u);
      dot8(dk_cvt16(WT, a.x & 0xffffu), dk_cvt16(WT, a.x >> 16), dk_cvt16(WT, a.y & 0xffffu), dk_cvt16(WT, a.y >> 16),
           dk_cvt16(WT, a.z & 0xffffu), dk_cvt16(WT, a.z >> 16), dk_cvt16(WT, a.w & 0xffffu), dk_cvt16(WT, a.w >> 16), k);
    }
#endif
  }
  for (; k < p.K; k++) {
    float w = W_ld(WT, wb + k);
    [[unroll]] for (uint m = 0u; m < MMAX; m++) {
      if (m >= M) break;
      acc[m] += w * X_ld(DTX, p.x_off + m * p.ldx + k);
    }
  }
#endif
  if (n >= p.N) return;
  [[unroll]] for (uint m = 0u; m < MMAX; m++) {
    if (m >= M) break;
    float v = acc[m];
    if (HAS_BIAS != 0u) v += Bias_ld(DTB, p.b_off + n);
    O_st(DTO, p.o_off + m * p.ldo + n, v);
  }
}

#if defined(TEXW) && BLK32
/* One row of x (f32, on the 16-byte grid) against a lane's RPL > 1 rows of
 * a 32-value block format, block by block: the block's 32 values of x are
 * read once (8 texels) for all RPL rows. Row by row (row_dot) a software
 * device reads them again for each row, each read a per-lane texel fetch:
 * 30 % of Gemma 3's 262144 x 640 q8_0 classifier. Each row's block comes
 * from the TT texels it spans, shifted to its start (row_dot's tail); the
 * scale is applied to the block's sum, and the min of q4_1/q5_1 to x's. */
void rows_blockwise(uint lane) {
  const uint TT = (TB + 14u) / 8u, NS = (TB + 1u) / 2u;
  uint nbk = p.K / 32u, last = uint(textureSize(WTX)) - 1u, r0 = lane * RPL;
  float ar[8];   /* RPL <= 8 (dk_vk_rows_per_lane) */
  [[unroll]] for (uint r = 0u; r < 8u; r++) ar[r] = 0.0;
  for (uint b = 0u; b < nbk; b++) {
    float xv[32], xs = 0.0;
    [[unroll]] for (uint i = 0u; i < 8u; i++) {
      uvec4 t = XV(p.x_off / 4u + b * 8u + i);
      xv[4u * i] = uintBitsToFloat(t.x); xv[4u * i + 1u] = uintBitsToFloat(t.y);
      xv[4u * i + 2u] = uintBitsToFloat(t.z); xv[4u * i + 3u] = uintBitsToFloat(t.w);
    }
    if (WT == 6 || WT == 8) [[unroll]] for (uint i = 0u; i < 32u; i++) xs += xv[i];
    [[unroll]] for (uint r = 0u; r < 8u; r++) {
      if (r >= RPL) break;
      uint row = min(r0 + r, p.N - 1u);
      uint u[4u * TT + 4u];
      SPAN_WORDS(u, p.w_off + (row * nbk + b) * TB, TT, NS);
      float d = dk_h2f(HALF(u, 0u)), sum = 0.0;
#if WT == 7 || WT == 8
      uint qh = HW(u, QO - 2u);
#else
      uint qh = 0u;
#endif
      [[unroll]] for (uint i = 0u; i < NW; i++) {
        uint w = HW(u, QO + 2u * i);
#if WT == 4
        [[unroll]] for (uint e = 0u; e < 4u; e++) sum += float(int(w << (24u - 8u * e)) >> 24) * xv[4u * i + e];
#else
        /* byte 4i+e: value 4i+e in the low nibble, 16+4i+e in the high;
         * q5_0/q5_1: bit j of qh is value j's fifth */
        [[unroll]] for (uint e = 0u; e < 4u; e++) {
          uint c = (w >> (8u * e)) & 255u, j = 4u * i + e;
          uint lo = (c & 15u) | (((qh >> j) & 1u) << 4), hi = (c >> 4) | (((qh >> (16u + j)) & 1u) << 4);
#if WT == 14
          sum += float(dkq_iq4(lo)) * xv[j] + float(dkq_iq4(hi)) * xv[16u + j];
#else
          int z = WT == 5 ? 8 : WT == 7 ? 16 : 0;
          sum += float(int(lo) - z) * xv[j] + float(int(hi) - z) * xv[16u + j];
#endif
        }
#endif
      }
      ar[r] += d * sum;
      if (WT == 6 || WT == 8) ar[r] += dk_h2f(HALF(u, 1u)) * xs;
    }
  }
  [[unroll]] for (uint r = 0u; r < 8u; r++) {
    uint n = r0 + r;
    if (r >= RPL || n >= p.N) break;
    float v = ar[r];
    if (HAS_BIAS != 0u) v += Bias_ld(DTB, p.b_off + n);
    O_st(DTO, p.o_off + n, v);
  }
}
#endif

void main() {
  uint lane = dk_group() * WG + gl_LocalInvocationID.x;
#if defined(TEXW) && BLK32
  if (M == 1u && RPL > 1u && DTX == DT_F32 && (WIDE & 2u) != 0u) {
    rows_blockwise(lane);
    return;
  }
#endif
#if WT == 11 || WT == 12 || KQ_TEX
  if (M == 1u && RPL > 1u && DTX == DT_F32 && (WIDE & 2u) != 0u && ((WT != 11 && WT != 12) || (WIDE & 1u) != 0u)) {
    rows_kquant(lane);
    return;
  }
#endif
  for (uint r = 0u; r < RPL; r++) row_dot(lane * RPL + r);
}
