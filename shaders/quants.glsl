/* shaders/quants.glsl — one value of a GGUF block of the formats beyond
 * q8_0/q4_0 (q4_1, q5_0, q5_1, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_nl, iq4_xs,
 * iq3_xxs, iq3_s, iq2_xxs, iq2_xs, iq2_s), read from the
 * 16-bit view DKQ_BUF of a binding (blocks are only 2-byte aligned). The
 * layouts and the f32 arithmetic are those of backends/cpu_quant.h, which is
 * bit-exact with GGUF's reference dequantizers; `precise` keeps d*q + m from
 * becoming a fused multiply-add, whose single rounding would differ. A shader
 * defines DKQ_BUF (e.g. `#define DKQ_BUF W16`) before including this. */
#define DT_Q4_1 6u
#define DT_Q5_0 7u
#define DT_Q5_1 8u
#define DT_Q2_K 9u
#define DT_Q3_K 10u
#define DT_Q4_K 11u
#define DT_Q5_K 12u
#define DT_Q6_K 13u
#define DT_IQ4_NL 14u
#define DT_IQ4_XS 15u
#define DT_IQ3_XXS 16u
#define DT_IQ3_S 17u
#define DT_IQ2_XXS 18u
#define DT_IQ2_XS 19u
#define DT_IQ2_S 20u

/* the iq3 and iq2 codebooks (backends/iq_grids.h: point i's four values are
 * the bytes of entry i, the first in the low byte): iq3_xxs's 256 points,
 * iq3_s's 512 (at DKQ_S3), then as pairs of words (the low four values
 * first) iq2_xxs's 256 (DKQ_X2), iq2_xs's 512 (DKQ_XS2), iq2_s's 1024
 * (DKQ_S2), in a buffer the backend binds at binding 4 of every
 * shader that includes this file. Not a constant array: read at a computed
 * index, lavapipe makes that a private copy and a chain of selects per read
 * (a pipeline took 10-48 s to build); not shared memory: the barrier after
 * filling it makes lavapipe split the shader into coroutines (12-47 s). */
layout(set = 0, binding = 4) readonly buffer DKQ_G { uint dkq_grid[]; };
/* entry i, and entries i, i + 1; texel.glsl reads them as texels */
#ifndef DKQ_GRID
#define DKQ_GRID(i) dkq_grid[i]
#define DKQ_GRID2(i, a, b)                                                     \
  {                                                                            \
    a = dkq_grid[i];                                                           \
    b = dkq_grid[(i) + 1u];                                                    \
  }
#endif
#define DKQ_S3 256u
#define DKQ_X2 768u
#define DKQ_XS2 1280u
#define DKQ_S2 2304u

/* values per block and halves per block */
uint dkq_block(uint dt) { return dt <= DT_Q5_1 || dt == DT_IQ4_NL ? 32u : 256u; }
uint dkq_halves(uint dt) {
  return dt == DT_Q4_1 ? 10u : dt == DT_Q5_0 ? 11u : dt == DT_Q5_1 ? 12u : dt == DT_Q2_K ? 42u
       : dt == DT_Q3_K ? 55u : dt == DT_Q4_K ? 72u : dt == DT_Q5_K ? 88u : dt == DT_IQ4_NL ? 9u
       : dt == DT_IQ4_XS ? 68u : dt == DT_IQ3_XXS ? 49u : dt == DT_IQ3_S ? 55u : dt == DT_IQ2_XXS ? 33u
       : dt == DT_IQ2_XS ? 37u : dt == DT_IQ2_S ? 41u : 105u;
}
/* iq4's level c (0..15; backends/cpu_quant.h's dk_iq4_levels), its byte
 * picked from four words by selects: a table read is a gather per value on
 * a SIMD CPU device (lavapipe) */
int dkq_iq4(uint c) {
  uint w = c < 8u ? (c < 4u ? 0xBFAD9881u : 0xF6EADDCFu) : (c < 12u ? 0x26190D01u : 0x71594535u);
  return int(w << (24u - 8u * (c & 3u))) >> 24;
}

/* half i of the binding; a shader may define DKQ_HALF itself (matvec_rows'
 * texel variants) */
#ifndef DKQ_HALF
#define DKQ_HALF(i) uint(DKQ_BUF[i])
#endif
uint dkq_byte(uint hb, uint o) { return (DKQ_HALF(hb + (o >> 1)) >> ((o & 1u) << 3)) & 255u; }
float dkq_half(uint hb, uint o) { return dk_h2f(DKQ_HALF(hb + (o >> 1))); }

/* d*q + m, rounded twice as the reference does */
float dkq_affine(float d, float q, float m) {
  precise float p = d * q;
  precise float r = p + m;
  return r;
}

/* q4_K/q5_K: sub-block s's 6-bit scale (x) and min (y) from the 12 bytes at o */
uvec2 dkq_scale_min(uint hb, uint o, uint s) {
  if (s < 4u) return uvec2(dkq_byte(hb, o + s) & 63u, dkq_byte(hb, o + s + 4u) & 63u);
  uint b = dkq_byte(hb, o + s + 4u);
  return uvec2((b & 15u) | ((dkq_byte(hb, o + s - 4u) >> 6) << 4), (b >> 4) | ((dkq_byte(hb, o + s) >> 6) << 4));
}

/* iq4: where the codes of value j (< 32 of a group) start, and its scale:
 * iq4_nl d; iq4_xs d * (sc - 32), sc group j/32's 6 bits (low 4 in byte
 * 4 + s/2, high 2 at bit 2s of the 16 bits at byte 2) */
float dkq_iq4_scale(uint dt, uint hb, uint j, out uint qo) {
  if (dt == DT_IQ4_NL) { qo = 2u; return dkq_half(hb, 0u); }
  uint s = j >> 5;
  uint sc = ((dkq_byte(hb, 4u + (s >> 1)) >> (4u * (s & 1u))) & 15u) | (((DKQ_HALF(hb + 1u) >> (2u * s)) & 3u) << 4);
  qo = 8u + 16u * s;
  return dkq_half(hb, 0u) * float(int(sc) - 32);
}

/* iq3: group g's (32 values) scale, as the reference computes it:
 * iq3_xxs d*(0.5 + sc)*0.5 (sc the top 4 bits of the group's u32 at
 * 66 + 4g), iq3_s d*(1 + 2 sc) (sc nibble g%2 of byte 106 + g/2) */
float dkq_iq3_scale(uint dt, uint hb, uint g) {
  if (dt == DT_IQ3_XXS) {
    /* precise: (d * m) * 0.5 in that order (a denormal d*m loses a bit when halved) */
    precise float dm = dkq_half(hb, 0u) * (0.5 + float(dkq_byte(hb, 69u + 4u * g) >> 4));
    precise float r = dm * 0.5;
    return r;
  }
  return dkq_half(hb, 0u) * float(1u + 2u * ((dkq_byte(hb, 106u + (g >> 1)) >> (4u * (g & 1u))) & 15u));
}
/* iq3: values j .. j+7 (j a multiple of 8) as signed codebook values: two
 * points and eight signs. iq3_xxs: points qs[j/4], qs[j/4 + 1] (bytes 2..),
 * signs the 7-bit code (j/8)%4 of the group's u32 with their parity as the
 * eighth; iq3_s: point i = qs[i] + 256 * bit i of qh (bytes 66..), signs
 * byte 74 + j/8 */
void dkq_iq3_8(uint dt, uint hb, uint j, out int c[8]) {
  uint i = j >> 2, p0, p1, sg;
  if (dt == DT_IQ3_XXS) {
    uint o = 66u + 4u * (j >> 5);
    uint ss = dkq_byte(hb, o) | (dkq_byte(hb, o + 1u) << 8) | (dkq_byte(hb, o + 2u) << 16) | (dkq_byte(hb, o + 3u) << 24);
    sg = (ss >> (7u * ((j >> 3) & 3u))) & 127u;
    sg |= (uint(bitCount(sg)) & 1u) << 7;
    p0 = DKQ_GRID(dkq_byte(hb, 2u + i));
    p1 = DKQ_GRID(dkq_byte(hb, 3u + i));
  } else {
    uint h = dkq_byte(hb, 66u + (i >> 3));
    p0 = DKQ_GRID(DKQ_S3 + (dkq_byte(hb, 2u + i) | (((h >> (i & 7u)) & 1u) << 8)));
    p1 = DKQ_GRID(DKQ_S3 + (dkq_byte(hb, 3u + i) | (((h >> ((i + 1u) & 7u)) & 1u) << 8)));
    sg = dkq_byte(hb, 74u + (j >> 3));
  }
  [[unroll]] for (uint k = 0u; k < 8u; k++) {
    int v = int(((k < 4u ? p0 : p1) >> (8u * (k & 3u))) & 255u);
    c[k] = ((sg >> k) & 1u) != 0u ? -v : v;
  }
}

/* iq2: the scale of value j's 16 (iq2_xxs: 32), as the reference computes
 * it, d*(0.5 + sc)*0.25: iq2_xxs sc the top 4 bits of group g's u32 at
 * 6 + 8g; iq2_xs/iq2_s nibble (j/16)%2 of byte 66/74 + g */
float dkq_iq2_scale(uint dt, uint hb, uint j) {
  uint g = j >> 5;
  uint sc = dt == DT_IQ2_XXS ? dkq_byte(hb, 9u + 8u * g) >> 4
                             : (dkq_byte(hb, (dt == DT_IQ2_XS ? 66u : 74u) + g) >> (4u * ((j >> 4) & 1u))) & 15u;
  precise float dm = dkq_half(hb, 0u) * (0.5 + float(sc));
  precise float r = dm * 0.25;
  return r;
}
/* iq2: values j .. j+7 (point i = j/8) as signed codebook values.
 * iq2_xxs: point byte 2 + 8g + i%4, its 7-bit sign code (i%4) of the
 * group's u32 at 6 + 8g, parity the eighth; iq2_xs: the u16 at 2 + 2i,
 * point its low 9 bits, sign code the top 7; iq2_s: point qs[i] (byte
 * 2 + i) + 256 * bits 2(i%4).. of byte 66 + i/4, signs byte 34 + i */
void dkq_iq2_8(uint dt, uint hb, uint j, out int c[8]) {
  uint i = j >> 3, pt, sg;
  if (dt == DT_IQ2_XXS) {
    uint o = 6u + 8u * (j >> 5);
    uint ss = dkq_byte(hb, o) | (dkq_byte(hb, o + 1u) << 8) | (dkq_byte(hb, o + 2u) << 16) | (dkq_byte(hb, o + 3u) << 24);
    sg = (ss >> (7u * (i & 3u))) & 127u;
    sg |= (uint(bitCount(sg)) & 1u) << 7;
    pt = DKQ_X2 + 2u * dkq_byte(hb, o - 4u + (i & 3u));
  } else if (dt == DT_IQ2_XS) {
    uint q = DKQ_HALF(hb + 1u + i);
    sg = q >> 9;
    sg |= (uint(bitCount(sg)) & 1u) << 7;
    pt = DKQ_XS2 + 2u * (q & 511u);
  } else {
    pt = DKQ_S2 + 2u * (dkq_byte(hb, 2u + i) | (((dkq_byte(hb, 66u + (i >> 2)) >> (2u * (i & 3u))) & 3u) << 8));
    sg = dkq_byte(hb, 34u + i);
  }
  uint p0, p1;
  DKQ_GRID2(pt, p0, p1)
  [[unroll]] for (uint k = 0u; k < 8u; k++) {
    int v = int(((k < 4u ? p0 : p1) >> (8u * (k & 3u))) & 255u);
    c[k] = ((sg >> k) & 1u) != 0u ? -v : v;
  }
}

/* value j of the block of type dt starting at half hb */
float dkq_value(uint dt, uint hb, uint j) {
  if (dt == DT_IQ2_XXS || dt == DT_IQ2_XS || dt == DT_IQ2_S) {
    int c[8];
    dkq_iq2_8(dt, hb, j & ~7u, c);
    return dkq_iq2_scale(dt, hb, j) * float(c[j & 7u]);
  }
  if (dt == DT_IQ3_XXS || dt == DT_IQ3_S) {
    int c[8];
    dkq_iq3_8(dt, hb, j & ~7u, c);
    return dkq_iq3_scale(dt, hb, j >> 5) * float(c[j & 7u]);
  }
  if (dt == DT_IQ4_NL || dt == DT_IQ4_XS) {
    uint qo;
    float dl = dkq_iq4_scale(dt, hb, j, qo);
    return dl * float(dkq_iq4((dkq_byte(hb, qo + (j & 15u)) >> ((j & 16u) != 0u ? 4u : 0u)) & 15u));
  }
  if (dt == DT_Q4_1 || dt == DT_Q5_0 || dt == DT_Q5_1) {
    /* d, [m], [qh: 4 bytes], qs: 16 bytes of nibbles */
    uint qo = dt == DT_Q4_1 ? 4u : dt == DT_Q5_0 ? 6u : 8u;
    uint q = (dkq_byte(hb, qo + (j & 15u)) >> (j < 16u ? 0u : 4u)) & 15u;
    if (dt != DT_Q4_1) q |= ((dkq_byte(hb, qo - 4u + (j >> 3)) >> (j & 7u)) & 1u) << 4;
    if (dt == DT_Q5_0) return dkq_half(hb, 0u) * float(int(q) - 16);
    return dkq_affine(dkq_half(hb, 0u), float(q), dkq_half(hb, 2u));
  }
  if (dt == DT_Q2_K) {
    uint sc = dkq_byte(hb, j >> 4), q = (dkq_byte(hb, 16u + (j >> 7) * 32u + (j & 31u)) >> (2u * ((j >> 5) & 3u))) & 3u;
    float dl = dkq_half(hb, 80u) * float(sc & 15u), ml = dkq_half(hb, 82u) * float(sc >> 4);
    return dkq_affine(dl, float(q), -ml);
  }
  if (dt == DT_Q3_K) {
    uint i = j >> 4;
    uint lo = i < 8u ? dkq_byte(hb, 96u + i) & 15u : dkq_byte(hb, 88u + i) >> 4;
    uint hi = (dkq_byte(hb, 104u + (i & 3u)) >> (2u * (i >> 2))) & 3u;
    float dl = dkq_half(hb, 108u) * float(int(lo | (hi << 4)) - 32);
    uint q2 = (dkq_byte(hb, 32u + (j >> 7) * 32u + (j & 31u)) >> (2u * ((j >> 5) & 3u))) & 3u;
    uint h = (dkq_byte(hb, j & 31u) >> (j >> 5)) & 1u;
    return dl * float(int(q2) - (h != 0u ? 0 : 4));
  }
  if (dt == DT_Q4_K || dt == DT_Q5_K) {
    uint s = j >> 5, qo = dt == DT_Q4_K ? 16u : 48u;
    uvec2 sm = dkq_scale_min(hb, 4u, s);
    uint q = (dkq_byte(hb, qo + 32u * (s >> 1) + (j & 31u)) >> (4u * (s & 1u))) & 15u;
    if (dt == DT_Q5_K) q |= ((dkq_byte(hb, 16u + (j & 31u)) >> s) & 1u) << 4;
    float dl = dkq_half(hb, 0u) * float(sm.x), ml = dkq_half(hb, 2u) * float(sm.y);
    return dkq_affine(dl, float(q), -ml);
  }
  /* q6_K: ql[128], qh[64], scales[16] (i8), d */
  uint h = j >> 7;
  uint lo = (dkq_byte(hb, h * 64u + (j & 63u)) >> (4u * ((j >> 6) & 1u))) & 15u;
  uint hi = (dkq_byte(hb, 128u + h * 32u + (j & 31u)) >> (2u * ((j >> 5) & 3u))) & 3u;
  int sc = int(dkq_byte(hb, 192u + (j >> 4)) << 24) >> 24;
  float dl = dkq_half(hb, 208u) * float(sc);
  return dl * float(int(lo | (hi << 4)) - 32);
}

/* Values j .. j+7 (j a multiple of 8) of the block at hb: they share one
 * sub-block, so its scale and min are found once, and their code bytes are
 * read as four halves (every such run starts at an even byte). The row
 * kernel's path; each value is computed as dkq_value computes it. */
uvec2 dkq_8bytes(uint hb, uint o) {
  uint a = hb + (o >> 1);
  return uvec2(DKQ_HALF(a) | (DKQ_HALF(a + 1u) << 16), DKQ_HALF(a + 2u) | (DKQ_HALF(a + 3u) << 16));
}
uint dkq_lane(uvec2 w, uint i) { return ((i < 4u ? w.x : w.y) >> (8u * (i & 3u))) & 255u; }

void dkq_group8(uint dt, uint hb, uint j, out float v[8]) {
  if (dt == DT_IQ2_XXS || dt == DT_IQ2_XS || dt == DT_IQ2_S) {
    int c[8];
    float dl = dkq_iq2_scale(dt, hb, j);
    dkq_iq2_8(dt, hb, j, c);
    [[unroll]] for (uint i = 0u; i < 8u; i++) v[i] = dl * float(c[i]);
  } else if (dt == DT_IQ3_XXS || dt == DT_IQ3_S) {
    int c[8];
    float dl = dkq_iq3_scale(dt, hb, j >> 5);
    dkq_iq3_8(dt, hb, j, c);
    [[unroll]] for (uint i = 0u; i < 8u; i++) v[i] = dl * float(c[i]);
  } else if (dt == DT_IQ4_NL || dt == DT_IQ4_XS) {
    uint qo;
    float dl = dkq_iq4_scale(dt, hb, j, qo);
    uvec2 w = dkq_8bytes(hb, qo + (j & 15u));
    uint sh = (j & 16u) != 0u ? 4u : 0u;
    [[unroll]] for (uint i = 0u; i < 8u; i++) v[i] = dl * float(dkq_iq4((dkq_lane(w, i) >> sh) & 15u));
  } else if (dt == DT_Q4_1 || dt == DT_Q5_0 || dt == DT_Q5_1) {
    uint qo = dt == DT_Q4_1 ? 4u : dt == DT_Q5_0 ? 6u : 8u, sh = j < 16u ? 0u : 4u;
    uvec2 w = dkq_8bytes(hb, qo + (j & 15u));
    uint hbits = dt != DT_Q4_1 ? dkq_byte(hb, qo - 4u + (j >> 3)) : 0u;
    float d = dkq_half(hb, 0u), m = dt == DT_Q5_0 ? 0.0 : dkq_half(hb, 2u);
    [[unroll]] for (uint i = 0u; i < 8u; i++) {
      uint q = ((dkq_lane(w, i) >> sh) & 15u) | (((hbits >> i) & 1u) << 4);
      v[i] = dt == DT_Q5_0 ? d * float(int(q) - 16) : dkq_affine(d, float(q), m);
    }
  } else if (dt == DT_Q2_K || dt == DT_Q3_K) {
    uint base = dt == DT_Q2_K ? 16u : 32u, sh = 2u * ((j >> 5) & 3u);
    uvec2 w = dkq_8bytes(hb, base + (j >> 7) * 32u + (j & 31u));
    if (dt == DT_Q2_K) {
      uint sc = dkq_byte(hb, j >> 4);
      float dl = dkq_half(hb, 80u) * float(sc & 15u), ml = dkq_half(hb, 82u) * float(sc >> 4);
      [[unroll]] for (uint i = 0u; i < 8u; i++) v[i] = dkq_affine(dl, float((dkq_lane(w, i) >> sh) & 3u), -ml);
    } else {
      uint g = j >> 4;
      uint lo = g < 8u ? dkq_byte(hb, 96u + g) & 15u : dkq_byte(hb, 88u + g) >> 4;
      uint hi = (dkq_byte(hb, 104u + (g & 3u)) >> (2u * (g >> 2))) & 3u;
      float dl = dkq_half(hb, 108u) * float(int(lo | (hi << 4)) - 32);
      uvec2 hm = dkq_8bytes(hb, j & 31u);
      [[unroll]] for (uint i = 0u; i < 8u; i++) {
        uint q2 = (dkq_lane(w, i) >> sh) & 3u, h = (dkq_lane(hm, i) >> (j >> 5)) & 1u;
        v[i] = dl * float(int(q2) - (h != 0u ? 0 : 4));
      }
    }
  } else if (dt == DT_Q4_K || dt == DT_Q5_K) {
    uint s = j >> 5, qo = dt == DT_Q4_K ? 16u : 48u;
    uvec2 sm = dkq_scale_min(hb, 4u, s);
    uvec2 w = dkq_8bytes(hb, qo + 32u * (s >> 1) + (j & 31u));
    uvec2 qh = dt == DT_Q5_K ? dkq_8bytes(hb, 16u + (j & 31u)) : uvec2(0u);
    float dl = dkq_half(hb, 0u) * float(sm.x), ml = dkq_half(hb, 2u) * float(sm.y);
    [[unroll]] for (uint i = 0u; i < 8u; i++) {
      uint q = ((dkq_lane(w, i) >> (4u * (s & 1u))) & 15u) | (((dkq_lane(qh, i) >> s) & 1u) << 4);
      v[i] = dkq_affine(dl, float(q), -ml);
    }
  } else {
    uint h = j >> 7;
    uvec2 l = dkq_8bytes(hb, h * 64u + (j & 63u)), hh = dkq_8bytes(hb, 128u + h * 32u + (j & 31u));
    uint ls = 4u * ((j >> 6) & 1u), hs = 2u * ((j >> 5) & 3u);
    int sc = int(dkq_byte(hb, 192u + (j >> 4)) << 24) >> 24;
    float dl = dkq_half(hb, 208u) * float(sc);
    [[unroll]] for (uint i = 0u; i < 8u; i++)
      v[i] = dl * float(int(((dkq_lane(l, i) >> ls) & 15u) | (((dkq_lane(hh, i) >> hs) & 3u) << 4)) - 32);
  }
}
