/* backends/cpu_igemm.h — the prompt product (dk_linear with more than
 * DK_CPU_GEMV_MAXM rows) of the block formats in integers: q4_0, q4_1,
 * q5_0, q5_1, q4_K, q5_K (and with VNNI q8_0, q2_K, q3_K, q6_K) weights
 * against activations rounded to q8 in 32-value blocks (dk__cpu_q8x, the
 * decode's rounding). Included by backends/cpu.h, which chooses it in
 * dk__cpu_linear and puts the entries in the kernel tables.
 *
 * Why: the f32 GEMM decoded every weight to f32 and transposed it into
 * panels (35-45 % of a 64-row q4_0/q4_K product beside the micro-kernel),
 * then ran at the FMA ports' 16 multiply-adds a cycle. Here a weight panel
 * holds the unsigned codes of 8 rows, 4 values of each row per 4 bytes
 * (llama.cpp's repacked q4_0x8 layout is the same idea), so one maddubs
 * multiplies 4 values of 8 rows by a 4-value activation group broadcast to
 * all lanes: 32 multiply-adds per instruction, summed in int16 across a
 * block, widened to int32 once, then scaled in f32 per 32 values like the
 * decode dot: w = d*q + mn per block, so y = sum over blocks of
 * d_w*d_x*(q . x) + mn * s_x (s_x = d_x * the activation codes' sum).
 *
 * Integer ranges: codes q <= 15 (4-bit) or 31 (5-bit), activation codes in
 * [-127, 127]. A maddubs pair is at most 2*31*127 = 7874; an int16 lane
 * gathers one pair per 4-value chunk, so 8 chunks (a whole block) of 4-bit
 * codes stay under 8*3810 = 30480 and 5-bit codes are widened every 4 chunks
 * (4*7874 = 31496).
 *
 * q2_K, q3_K and q6_K have a scale per 16 values, so a 32-value block has
 * two: with VNNI (imicro16) their panels carry d and mn for each half, the
 * block's two halves sum into separate int32 registers, and the activation
 * blocks carry their two halves' sums (dk__cpu_q8h): y = sum over halves of
 * d_h*d_x*(q . x)_h + mn_h * s_h. The row form they took before decoded
 * every weight to f32: a 64x2048x768 q2_K product 792 us, q4_K's 403. */
#ifndef DK_BACKEND_CPU_IGEMM_H
#define DK_BACKEND_CPU_IGEMM_H

/* the weight dtypes with an integer prompt product */
#define DK__CPU_IGEMM (DK_BIT(DK_Q4_0) | DK_BIT(DK_Q4_1) | DK_BIT(DK_Q5_0) | DK_BIT(DK_Q5_1) | DK_BIT(DK_Q4_K) | DK_BIT(DK_Q5_K))
/* those with a scale per 16 values (imicro16) */
#define DK__CPU_IGEMM16 (DK_BIT(DK_Q2_K) | DK_BIT(DK_Q3_K) | DK_BIT(DK_Q6_K))
/* the VNNI class's: all of those, and q8_0, whose codes (+128) need
 * vpdpbusd's int32 sums (a maddubs pair of them overflows int16) */
#define DK__CPU_IGEMM_VNNI (DK__CPU_IGEMM | DK__CPU_IGEMM16 | DK_BIT(DK_Q8_0))
#define DK_CPU_IMR 8          /* the most activation rows a micro-kernel call takes (M pads to it) */
#define DK_CPU_INR 8          /* weight rows per panel (the VNNI class's: twice, at twice the bytes) */
#define DK_CPU_IKB 16         /* 32-value blocks per packed k slice (512 values) */
/* a panel block: 8 chunks of [4 codes x 8 rows], then d[8] and mn[8] as f32 */
#define DK__IG_BLK 320
/* the 16-value-scale formats' (16 rows): 8 chunks of [4 codes x 16 rows],
 * then d[16] and mn[16] of the block's first 16 values, and of its second */
#define DK__IG_BLK16 768

#ifdef DK_CPU_X86
/* blocks [b0, b0+nblk) of `rows` (<= 8) weight rows to panel blocks at dst;
 * missing rows are zero (codes, d, mn) */
#define DK__IPACK8(T)                                                          \
  int64_t b;                                                                   \
  int r;                                                                       \
  float kd[8][8], km[8][8];                                                    \
  for (b = 0; b < nblk; b++) {                                                 \
    uint8_t *o = dst + b * DK__IG_BLK;                                         \
    __m256i v[8], t[8], u[8];                                                  \
    float d[8], mn[8];                                                         \
    /* the K-quants' 8 scales and mins of a super-block, once a row */       \
    if (((T) == DK_Q4_K || (T) == DK_Q5_K) && (b == 0 || ((b0 + b) & 7) == 0)) \
      for (r = 0; r < rows; r++)                                               \
        dk__cpu_k45_dm(T, w + (size_t)r * wrow, (b0 + b) / 8, kd[r], km[r]);   \
    for (r = 0; r < 8; r++) {                                                  \
      if (r >= rows) {                                                         \
        v[r] = _mm256_setzero_si256(); d[r] = 0.0f; mn[r] = 0.0f;              \
      } else if ((T) == DK_Q4_K || (T) == DK_Q5_K) {                           \
        v[r] = dk__cpu_k45_codes(T, w + (size_t)r * wrow, (b0 + b) / 8, (int)((b0 + b) & 7)); \
        d[r] = kd[r][(b0 + b) & 7]; mn[r] = km[r][(b0 + b) & 7];               \
      } else {                                                                 \
        v[r] = dk__cpu_wblock_i8(T, w + (size_t)r * wrow, b0 + b, &d[r], &mn[r]); \
      }                                                                        \
    }                                                                          \
    /* an 8x8 transpose of 4-byte groups: chunk c = group c of rows 0-7 */    \
    for (r = 0; r < 8; r += 2) {                                               \
      t[r] = _mm256_unpacklo_epi32(v[r], v[r + 1]);                            \
      t[r + 1] = _mm256_unpackhi_epi32(v[r], v[r + 1]);                        \
    }                                                                          \
    for (r = 0; r < 8; r += 4) {                                               \
      u[r] = _mm256_unpacklo_epi64(t[r], t[r + 2]);                            \
      u[r + 1] = _mm256_unpackhi_epi64(t[r], t[r + 2]);                        \
      u[r + 2] = _mm256_unpacklo_epi64(t[r + 1], t[r + 3]);                    \
      u[r + 3] = _mm256_unpackhi_epi64(t[r + 1], t[r + 3]);                    \
    }                                                                          \
    for (r = 0; r < 4; r++) {                                                  \
      _mm256_storeu_si256((__m256i *)(o + 32 * r), _mm256_permute2x128_si256(u[r], u[r + 4], 0x20)); \
      _mm256_storeu_si256((__m256i *)(o + 32 * (r + 4)), _mm256_permute2x128_si256(u[r], u[r + 4], 0x31)); \
    }                                                                          \
    memcpy(o + 256, d, 32);                                                    \
    memcpy(o + 288, mn, 32);                                                   \
  }


/* A 16x8 transpose of 4-byte words in 24 shuffles: z[r] holds rows r and
 * r + 8 (8 words each, in its low and high halves), o[c] gets word c of
 * rows 0-15. Within each half as the 8-row pack above, then one two-source
 * permute per output gathers the four 128-bit pieces. (The maskz forms with
 * every lane set are the plain instructions: GCC 12's C++ front end warns
 * at the plain forms' undefined pass-through.) */
DK_CPU_AVX512VNNI_INLINE void dk__cpu_t16x8(const __m512i *z, __m512i *o) {
  const __m512i lo = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0), hi = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
  __m512i t[8], u[8];
  int r;
  for (r = 0; r < 8; r += 2) {
    t[r] = _mm512_maskz_unpacklo_epi32((__mmask16)0xffff, z[r], z[r + 1]);
    t[r + 1] = _mm512_maskz_unpackhi_epi32((__mmask16)0xffff, z[r], z[r + 1]);
  }
  for (r = 0; r < 8; r += 4) {
    u[r] = _mm512_maskz_unpacklo_epi64((__mmask8)0xff, t[r], t[r + 2]);
    u[r + 1] = _mm512_maskz_unpackhi_epi64((__mmask8)0xff, t[r], t[r + 2]);
    u[r + 2] = _mm512_maskz_unpacklo_epi64((__mmask8)0xff, t[r + 1], t[r + 3]);
    u[r + 3] = _mm512_maskz_unpackhi_epi64((__mmask8)0xff, t[r + 1], t[r + 3]);
  }
  /* u[k] (k < 4): 128-bit pieces [rows 0-3 word k, rows 0-3 word k+4, rows
   * 8-11 word k, rows 8-11 word k+4]; u[4+k] the same of rows 4-7, 12-15 */
  for (r = 0; r < 4; r++) {
    o[r] = _mm512_permutex2var_epi64(u[r], lo, u[r + 4]);
    o[r + 4] = _mm512_permutex2var_epi64(u[r], hi, u[r + 4]);
  }
}

/* 32 bytes at byte `off` of rows r and r + 8 (r < 8) in one zmm, zeros for
 * rows past `rows` (which are not read) */
DK_CPU_AVX512VNNI_INLINE __m512i dk__cpu_ld2rows(const char *w, size_t wrow, int rows, int r, size_t off) {
  const __m256i a = r < rows ? _mm256_loadu_si256((const __m256i *)(w + (size_t)r * wrow + off)) : _mm256_setzero_si256();
  const __m256i b = r + 8 < rows ? _mm256_loadu_si256((const __m256i *)(w + (size_t)(r + 8) * wrow + off))
                                 : _mm256_setzero_si256();
  return _mm512_maskz_inserti64x4((__mmask8)0xff, _mm512_castsi256_si512(a), b, 1);
}

/* q4_K/q5_K super-block sb of `rows` (<= 16) rows to 8 VNNI panel blocks at
 * dst (640 bytes each). A super-block's 32-byte code runs hold two groups
 * (low and high nibbles), so each run of rows r and r + 8 is one zmm load,
 * and the scales are decoded once a row and transposed like the codes: the
 * block-at-a-time pack (decoding the scales for each group, two 8-row
 * transposes a block) was 32 % of a 64-row q4_K product. */
DK_CPU_AVX512VNNI_INLINE void dk__cpu_ipack16_k45(dk_dtype T, const char *w, size_t wrow, int rows, int64_t sb,
                                                  uint8_t *dst) {
  const __m512i m4 = _mm512_set1_epi8(15), one = _mm512_set1_epi8(1);
  __m512i z[8], zl[8], zh[8], qh[8] = {0}, o[8];
  float kd[16][8], km[16][8];
  int r, j, c;
  for (r = 0; r < 16; r++) {
    if (r < rows) {
      dk__cpu_k45_dm(T, w + (size_t)r * wrow, sb, kd[r], km[r]);
    } else {
      _mm256_storeu_ps(kd[r], _mm256_setzero_ps());
      _mm256_storeu_ps(km[r], _mm256_setzero_ps());
    }
  }
  for (c = 0; c < 2; c++) {   /* d, then mn */
    for (r = 0; r < 8; r++)
      z[r] = _mm512_maskz_inserti64x4((__mmask8)0xff,
                                      _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(c ? km[r] : kd[r]))),
                                      _mm256_loadu_si256((const __m256i *)(c ? km[r + 8] : kd[r + 8])), 1);
    dk__cpu_t16x8(z, o);
    for (r = 0; r < 8; r++) _mm512_storeu_si512((void *)(dst + 640 * r + 512 + 64 * c), o[r]);
  }
  /* byte offsets in a row: the super-block, its qh and qs */
  const size_t sbo = (size_t)sb * (T == DK_Q4_K ? sizeof(dk_block_q4_K) : sizeof(dk_block_q5_K));
  const size_t qso = sbo + (T == DK_Q4_K ? offsetof(dk_block_q4_K, qs) : offsetof(dk_block_q5_K, qs));
  if (T == DK_Q5_K)
    for (r = 0; r < 8; r++) qh[r] = dk__cpu_ld2rows(w, wrow, rows, r, sbo + offsetof(dk_block_q5_K, qh));
  for (j = 0; j < 4; j++) {
    for (r = 0; r < 8; r++) {
      const __m512i v = dk__cpu_ld2rows(w, wrow, rows, r, qso + 32 * (size_t)j);
      zl[r] = _mm512_and_si512(v, m4);
      zh[r] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
      if (T == DK_Q5_K) {
        zl[r] = _mm512_or_si512(zl[r], _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh[r], 2 * j), one), 4));
        zh[r] = _mm512_or_si512(zh[r], _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(qh[r], 2 * j + 1), one), 4));
      }
    }
    dk__cpu_t16x8(zl, o);
    for (c = 0; c < 8; c++) _mm512_storeu_si512((void *)(dst + 640 * (2 * j) + 64 * c), o[c]);
    dk__cpu_t16x8(zh, o);
    for (c = 0; c < 8; c++) _mm512_storeu_si512((void *)(dst + 640 * (2 * j + 1) + 64 * c), o[c]);
  }
}

/* block b of a row as unsigned codes for vpdpbusd: q8_0's signed bytes
 * + 128, the 128 back through the min (mn = -128 d) */
DK_CPU_AVX512VNNI_INLINE __m256i dk__cpu_wblock_u8(dk_dtype T, const char *w, int64_t b, float *d, float *mn) {
  const __m256i v = dk__cpu_wblock_i8(T, w, b, d, mn);
  if (T != DK_Q8_0) return v;
  *mn = -128.0f * *d;
  return _mm256_xor_si256(v, _mm256_set1_epi8((char)0x80));
}

/* the other formats: blocks [b0, b0+nblk) of `rows` (<= 16) rows to VNNI
 * panel blocks at dst, a block at a time, rows r and r + 8 in one zmm */
DK_CPU_AVX512VNNI_INLINE void dk__cpu_ipack16_blocks(dk_dtype T, const char *w, size_t wrow, int rows, int64_t b0,
                                                     int64_t nblk, uint8_t *dst) {
  int64_t b;
  int r;
  for (b = 0; b < nblk; b++) {
    uint8_t *o = dst + b * 640;
    __m512i z[8], t[8];
    float d[16], mn[16];
    for (r = 0; r < 16; r++) d[r] = mn[r] = 0.0f;
    for (r = 0; r < 8; r++) {
      const __m256i lo = r < rows ? dk__cpu_wblock_u8(T, w + (size_t)r * wrow, b0 + b, &d[r], &mn[r]) : _mm256_setzero_si256();
      const __m256i hi = r + 8 < rows ? dk__cpu_wblock_u8(T, w + (size_t)(r + 8) * wrow, b0 + b, &d[r + 8], &mn[r + 8])
                                      : _mm256_setzero_si256();
      z[r] = _mm512_maskz_inserti64x4((__mmask8)0xff, _mm512_castsi256_si512(lo), hi, 1);
    }
    dk__cpu_t16x8(z, t);
    for (r = 0; r < 8; r++) _mm512_storeu_si512((void *)(o + 64 * r), t[r]);
    memcpy(o + 512, d, 64);
    memcpy(o + 576, mn, 64);
  }
}

/* 16 rows: the K-quants a super-block at a time (a k slice of theirs starts
 * and ends on a super-block: DK_CPU_IKB and their K are multiples of 8
 * blocks), the rest a block at a time */
#define DK__IPACK16(T)                                                         \
  if ((T) == DK_Q4_K || (T) == DK_Q5_K) {                                      \
    int64_t s_;                                                                \
    for (s_ = 0; s_ < nblk; s_ += 8) dk__cpu_ipack16_k45(T, w, wrow, rows, (b0 + s_) / 8, dst + s_ * 640); \
  } else {                                                                     \
    dk__cpu_ipack16_blocks(T, w, wrow, rows, b0, nblk, dst);                   \
  }
#define DK__IPACK_ARGS dk_dtype dt, const char *w, size_t wrow, int rows, int64_t b0, int64_t nblk, uint8_t *dst
#define DK__IPACK_FNS(CLS, ATTR, PACK)                                                                   \
  ATTR static void dk__cpu_ipack_##CLS##_q4_0(DK__IPACK_ARGS) { PACK(DK_Q4_0) (void)dt; } \
  ATTR static void dk__cpu_ipack_##CLS##_q4_1(DK__IPACK_ARGS) { PACK(DK_Q4_1) (void)dt; } \
  ATTR static void dk__cpu_ipack_##CLS##_q5_0(DK__IPACK_ARGS) { PACK(DK_Q5_0) (void)dt; } \
  ATTR static void dk__cpu_ipack_##CLS##_q5_1(DK__IPACK_ARGS) { PACK(DK_Q5_1) (void)dt; } \
  ATTR static void dk__cpu_ipack_##CLS##_q4_K(DK__IPACK_ARGS) { PACK(DK_Q4_K) (void)dt; } \
  ATTR static void dk__cpu_ipack_##CLS##_q5_K(DK__IPACK_ARGS) { PACK(DK_Q5_K) (void)dt; } \
  ATTR static void dk__cpu_ipack_##CLS(DK__IPACK_ARGS) {                                           \
    switch (dt) {                                                                                   \
    case DK_Q4_0: dk__cpu_ipack_##CLS##_q4_0(dt, w, wrow, rows, b0, nblk, dst); break;              \
    case DK_Q4_1: dk__cpu_ipack_##CLS##_q4_1(dt, w, wrow, rows, b0, nblk, dst); break;              \
    case DK_Q5_0: dk__cpu_ipack_##CLS##_q5_0(dt, w, wrow, rows, b0, nblk, dst); break;              \
    case DK_Q5_1: dk__cpu_ipack_##CLS##_q5_1(dt, w, wrow, rows, b0, nblk, dst); break;              \
    case DK_Q4_K: dk__cpu_ipack_##CLS##_q4_K(dt, w, wrow, rows, b0, nblk, dst); break;              \
    default: dk__cpu_ipack_##CLS##_q5_K(dt, w, wrow, rows, b0, nblk, dst); break;                   \
    }                                                                                               \
  }

/* c[i][j] += sum over blocks [0, nblk) of activation row i (a + i * lda)
 * against panel row j, i < 4, j < 8; FL: chunks summed in int16 before the
 * widening (8: 4-bit codes, 4: 5-bit) */
#define DK__IMICRO_BODY(FL)                                                    \
  const __m256i one = _mm256_set1_epi16(1);                                    \
  __m256 f0 = _mm256_setzero_ps(), f1 = f0, f2 = f0, f3 = f0;                  \
  int64_t b;                                                                   \
  int c, c0;                                                                   \
  for (b = 0; b < nblk; b++) {                                                 \
    const uint8_t *wb = wp + b * DK__IG_BLK;                                   \
    const dk__cpu_q8x *a0 = a + b, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda; \
    __m256i i0 = _mm256_setzero_si256(), i1 = i0, i2 = i0, i3 = i0;            \
    __m256 dw, mw;                                                             \
    DK__UNROLL8                                                                \
    for (c0 = 0; c0 < 8; c0 += FL) {                                           \
      __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;          \
      DK__UNROLL8                                                              \
      for (c = c0; c < c0 + FL; c++) {                                         \
        const __m256i wv = _mm256_loadu_si256((const __m256i *)(wb + 32 * c)); \
        int32_t g0, g1, g2, g3;                                                \
        memcpy(&g0, a0->qs + 4 * c, 4); memcpy(&g1, a1->qs + 4 * c, 4);       \
        memcpy(&g2, a2->qs + 4 * c, 4); memcpy(&g3, a3->qs + 4 * c, 4);       \
        s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(wv, _mm256_set1_epi32(g0))); \
        s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(wv, _mm256_set1_epi32(g1))); \
        s2 = _mm256_add_epi16(s2, _mm256_maddubs_epi16(wv, _mm256_set1_epi32(g2))); \
        s3 = _mm256_add_epi16(s3, _mm256_maddubs_epi16(wv, _mm256_set1_epi32(g3))); \
      }                                                                        \
      i0 = _mm256_add_epi32(i0, _mm256_madd_epi16(s0, one));                   \
      i1 = _mm256_add_epi32(i1, _mm256_madd_epi16(s1, one));                   \
      i2 = _mm256_add_epi32(i2, _mm256_madd_epi16(s2, one));                   \
      i3 = _mm256_add_epi32(i3, _mm256_madd_epi16(s3, one));                   \
    }                                                                          \
    dw = _mm256_loadu_ps((const float *)(wb + 256));                           \
    mw = _mm256_loadu_ps((const float *)(wb + 288));                           \
    f0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i0), _mm256_mul_ps(dw, _mm256_set1_ps(a0->d)), f0); \
    f1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i1), _mm256_mul_ps(dw, _mm256_set1_ps(a1->d)), f1); \
    f2 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i2), _mm256_mul_ps(dw, _mm256_set1_ps(a2->d)), f2); \
    f3 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i3), _mm256_mul_ps(dw, _mm256_set1_ps(a3->d)), f3); \
    f0 = _mm256_fmadd_ps(mw, _mm256_set1_ps(a0->s), f0);                       \
    f1 = _mm256_fmadd_ps(mw, _mm256_set1_ps(a1->s), f1);                       \
    f2 = _mm256_fmadd_ps(mw, _mm256_set1_ps(a2->s), f2);                       \
    f3 = _mm256_fmadd_ps(mw, _mm256_set1_ps(a3->s), f3);                       \
  }                                                                            \
  _mm256_storeu_ps(cc, _mm256_add_ps(_mm256_loadu_ps(cc), f0));                \
  _mm256_storeu_ps(cc + ldc, _mm256_add_ps(_mm256_loadu_ps(cc + ldc), f1));    \
  _mm256_storeu_ps(cc + 2 * ldc, _mm256_add_ps(_mm256_loadu_ps(cc + 2 * ldc), f2)); \
  _mm256_storeu_ps(cc + 3 * ldc, _mm256_add_ps(_mm256_loadu_ps(cc + 3 * ldc), f3));

#define DK__IMICRO_ARGS int64_t nblk, const dk__cpu_q8x *a, int64_t lda, const uint8_t *wp, float *cc, int64_t ldc
/* both widenings in one function: a kernel calls into nothing (tools/check_cpu_isa.sh) */
#define DK__IMICRO_FNS(CLS, ATTR)                                                        \
  ATTR static void dk__cpu_imicro_##CLS(int five, DK__IMICRO_ARGS) {                     \
    if (five) { DK__IMICRO_BODY(4) } else { DK__IMICRO_BODY(8) }                         \
  }
DK__IPACK_FNS(avx2, DK_CPU_AVX2, DK__IPACK8)
DK__IPACK_FNS(avx512, DK_CPU_AVX512, DK__IPACK8)
DK__IMICRO_FNS(avx2, DK_CPU_AVX2)
DK__IMICRO_FNS(avx512, DK_CPU_AVX512)

/* AVX-512 VNNI (dk__cpu_best_class puts both in where cpuid has it): a
 * panel of 16 weight rows, so one zmm holds 4 codes of each of the 16 rows
 * and one vpdpbusd multiplies them by a 4-value activation group broadcast
 * from memory, adding into the 16 rows' int32 sums: no int16 sums, no
 * widening (and no 5-bit special case), no horizontal step. 8 activation
 * rows a call: a block's 8 chunks are 8 weight loads for 64 vpdpbusd, and
 * its scaling 4 instructions per row for 16 outputs. The earlier kernel (8
 * rows of two chunks a zmm, 4 activation rows) summed each row's two halves
 * and narrowed them at every block's end, more instructions than its dot:
 * a 64x2048x768 q4_K product 754 us (267 GOP/s on both cores). */
DK__IPACK_FNS(avx512vnni, DK_CPU_AVX512VNNI, DK__IPACK16)
/* i[r] += chunks [c0, c1) of a VNNI panel block wb against activation rows
 * r = 0-7 (codes at qs + r * rs bytes), each 4-code group broadcast */
DK_CPU_AVX512VNNI_INLINE void dk__cpu_ichunks(__m512i *i, const uint8_t *wb, const int8_t *qs, size_t rs, int c0, int c1) {
  int r, c;
  DK__UNROLL8
  for (c = c0; c < c1; c++) {
    const __m512i wv = _mm512_loadu_si512((const void *)(wb + 64 * c));
    DK__UNROLL8
    for (r = 0; r < 8; r++) {
      int32_t g;
      memcpy(&g, qs + r * rs + 4 * c, 4);
      i[r] = _mm512_dpbusd_epi32(i[r], wv, _mm512_set1_epi32(g));
    }
  }
}

DK_CPU_AVX512VNNI static void dk__cpu_imicro_avx512vnni(int five, DK__IMICRO_ARGS) {
  __m512 f[8];
  int64_t b;
  int r;
  (void)five;
  DK__UNROLL8
  for (r = 0; r < 8; r++) f[r] = _mm512_setzero_ps();
  for (b = 0; b < nblk; b++) {
    const uint8_t *wb = wp + b * 2 * DK__IG_BLK;
    const dk__cpu_q8x *ab = a + b;
    __m512i i[8];
    __m512 dw, mw;
    DK__UNROLL8
    for (r = 0; r < 8; r++) i[r] = _mm512_setzero_si512();
    dk__cpu_ichunks(i, wb, ab->qs, (size_t)lda * sizeof *ab, 0, 8);
    dw = _mm512_loadu_ps((const float *)(wb + 512));
    mw = _mm512_loadu_ps((const float *)(wb + 576));
    DK__UNROLL8
    for (r = 0; r < 8; r++) {
      f[r] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps((__mmask16)0xffff, i[r]), /* maskz: GCC 12 warns at the plain form in C++ */
                             _mm512_mul_ps(dw, _mm512_set1_ps(ab[r * lda].d)), f[r]);
      f[r] = _mm512_fmadd_ps(mw, _mm512_set1_ps(ab[r * lda].s), f[r]);
    }
  }
  DK__UNROLL8
  for (r = 0; r < 8; r++) _mm512_storeu_ps(cc + r * ldc, _mm512_add_ps(_mm512_loadu_ps(cc + r * ldc), f[r]));
}

/* 32-value block j of super-block sb of a q2_K/q3_K/q6_K row as unsigned codes */
DK_CPU_AVX512VNNI_INLINE __m256i dk__cpu_g16_codes(dk_dtype T, const char *row, int64_t sb, int j) {
  if (T == DK_Q6_K) return dk__cpu_q6k_u8((const dk_block_q6_K *)row + sb, j);
  if (T == DK_Q3_K) return dk__cpu_k23_u8(((const dk_block_q3_K *)row + sb)->qs, ((const dk_block_q3_K *)row + sb)->hmask, j);
  return dk__cpu_k23_u8(((const dk_block_q2_K *)row + sb)->qs, NULL, j);
}

/* q2_K/q3_K/q6_K super-block sb of `rows` (<= 16) rows to 8 panel blocks of
 * DK__IG_BLK16 bytes at dst: codes as the other formats', then the 16
 * scales of each row transposed like the codes (group g of the super-block
 * is half g % 2 of block g / 2) */
DK_CPU_AVX512VNNI_INLINE void dk__cpu_ipack16_g16(dk_dtype T, const char *w, size_t wrow, int rows, int64_t sb,
                                                  uint8_t *dst) {
  float kd[16][16], km[16][16];
  __m512i z[8], o[8];
  int r, j, c, h;
  for (r = 0; r < 16; r++) {
    if (r < rows) {
      __m512 d, mn;
      dk__cpu_kq_dm16(T, w + (size_t)r * wrow, sb, &d, &mn);
      _mm512_storeu_ps(kd[r], d);
      _mm512_storeu_ps(km[r], mn);
    } else {
      _mm512_storeu_ps(kd[r], _mm512_setzero_ps());
      _mm512_storeu_ps(km[r], _mm512_setzero_ps());
    }
  }
  for (c = 0; c < 2; c++)     /* d, then mn */
    for (h = 0; h < 2; h++) { /* groups 0-7 (blocks 0-3), then 8-15 */
      for (r = 0; r < 8; r++)
        z[r] = _mm512_maskz_inserti64x4(
            (__mmask8)0xff, _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)((c ? km[r] : kd[r]) + 8 * h))),
            _mm256_loadu_si256((const __m256i *)((c ? km[r + 8] : kd[r + 8]) + 8 * h)), 1);
      dk__cpu_t16x8(z, o);
      for (r = 0; r < 8; r++)
        _mm512_storeu_si512((void *)(dst + DK__IG_BLK16 * (4 * h + r / 2) + 512 + 128 * c + 64 * (r & 1)), o[r]);
    }
  for (j = 0; j < 8; j++) {
    for (r = 0; r < 8; r++) {
      const __m256i lo = r < rows ? dk__cpu_g16_codes(T, w + (size_t)r * wrow, sb, j) : _mm256_setzero_si256();
      const __m256i hi = r + 8 < rows ? dk__cpu_g16_codes(T, w + (size_t)(r + 8) * wrow, sb, j) : _mm256_setzero_si256();
      z[r] = _mm512_maskz_inserti64x4((__mmask8)0xff, _mm512_castsi256_si512(lo), hi, 1);
    }
    dk__cpu_t16x8(z, o);
    for (c = 0; c < 8; c++) _mm512_storeu_si512((void *)(dst + DK__IG_BLK16 * j + 64 * c), o[c]);
  }
}

/* the VNNI class's ipack: the 16-value-scale formats a super-block at a
 * time (their k slices start and end on one, as the K-quants' above),
 * q8_0 a block at a time, the rest as dk__cpu_ipack_avx512vnni */
#define DK__IPACK_G16(T)                                                       \
  {                                                                            \
    int64_t s_;                                                                \
    for (s_ = 0; s_ < nblk; s_ += 8) dk__cpu_ipack16_g16(T, w, wrow, rows, (b0 + s_) / 8, dst + s_ * DK__IG_BLK16); \
  }
DK_CPU_AVX512VNNI static void dk__cpu_ipack_avx512vnni_q2_K(DK__IPACK_ARGS) { DK__IPACK_G16(DK_Q2_K) (void)dt; }
DK_CPU_AVX512VNNI static void dk__cpu_ipack_avx512vnni_q3_K(DK__IPACK_ARGS) { DK__IPACK_G16(DK_Q3_K) (void)dt; }
DK_CPU_AVX512VNNI static void dk__cpu_ipack_avx512vnni_q6_K(DK__IPACK_ARGS) { DK__IPACK_G16(DK_Q6_K) (void)dt; }
DK_CPU_AVX512VNNI static void dk__cpu_ipack_avx512vnni_q8_0(DK__IPACK_ARGS) {
  dk__cpu_ipack16_blocks(DK_Q8_0, w, wrow, rows, b0, nblk, dst);
  (void)dt;
}
DK_CPU_AVX512VNNI static void dk__cpu_ipack_avx512vnni_any(DK__IPACK_ARGS) {
  switch (dt) {
  case DK_Q2_K: dk__cpu_ipack_avx512vnni_q2_K(dt, w, wrow, rows, b0, nblk, dst); break;
  case DK_Q3_K: dk__cpu_ipack_avx512vnni_q3_K(dt, w, wrow, rows, b0, nblk, dst); break;
  case DK_Q6_K: dk__cpu_ipack_avx512vnni_q6_K(dt, w, wrow, rows, b0, nblk, dst); break;
  case DK_Q8_0: dk__cpu_ipack_avx512vnni_q8_0(dt, w, wrow, rows, b0, nblk, dst); break;
  default: dk__cpu_ipack_avx512vnni(dt, w, wrow, rows, b0, nblk, dst); break;
  }
}

/* 8 activation rows against a 16-row panel of a 16-value-scale format:
 * as dk__cpu_imicro_avx512vnni, with a block's chunks 0-3 and 4-7 (its two
 * halves) summed apart and scaled by their own d; then the halves' min
 * terms against the activations' half sums */
DK_CPU_AVX512VNNI static void dk__cpu_imicro16_avx512vnni(int64_t nblk, const dk__cpu_q8h *a, int64_t lda, const uint8_t *wp,
                                                          float *cc, int64_t ldc) {
  __m512 f[8];
  int64_t b;
  int r;
  DK__UNROLL8
  for (r = 0; r < 8; r++) f[r] = _mm512_setzero_ps();
  for (b = 0; b < nblk; b++) {
    const uint8_t *wb = wp + b * DK__IG_BLK16;
    const dk__cpu_q8h *ab = a + b;
    __m512i i[8];
    __m512 u[8], dw;
    DK__UNROLL8
    for (r = 0; r < 8; r++) i[r] = _mm512_setzero_si512();
    dk__cpu_ichunks(i, wb, ab->qs, (size_t)lda * sizeof *ab, 0, 4);
    dw = _mm512_loadu_ps((const float *)(wb + 512));
    DK__UNROLL8
    for (r = 0; r < 8; r++) {
      u[r] = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps((__mmask16)0xffff, i[r]), dw);
      i[r] = _mm512_setzero_si512();
    }
    dk__cpu_ichunks(i, wb, ab->qs, (size_t)lda * sizeof *ab, 4, 8);
    dw = _mm512_loadu_ps((const float *)(wb + 576));
    DK__UNROLL8
    for (r = 0; r < 8; r++) {
      const dk__cpu_q8h *x = ab + r * lda;
      u[r] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps((__mmask16)0xffff, i[r]), dw, u[r]);
      f[r] = _mm512_fmadd_ps(u[r], _mm512_set1_ps(x->d), f[r]);
      f[r] = _mm512_fmadd_ps(_mm512_loadu_ps((const float *)(wb + 640)), _mm512_set1_ps(x->s[0]), f[r]);
      f[r] = _mm512_fmadd_ps(_mm512_loadu_ps((const float *)(wb + 704)), _mm512_set1_ps(x->s[1]), f[r]);
    }
  }
  DK__UNROLL8
  for (r = 0; r < 8; r++) _mm512_storeu_ps(cc + r * ldc, _mm512_add_ps(_mm512_loadu_ps(cc + r * ldc), f[r]));
}
#endif

/* whether this class's integer prompt product takes weights of dtype dt */
static int dk__cpu_igemm_takes(dk_dtype dt) { return (dk__cpu_k->itypes >> dt) & 1; }

typedef struct {
  const float *x;            /* M rows of K, f32 (x itself, or a converted copy) */
  dk__cpu_q8x *xq;           /* mpad rows of nb blocks; rows past M zero */
  dk__cpu_q8h *xh;           /* or so, for a DK__CPU_IGEMM16 weight (xq NULL) */
  int64_t M, mpad, N, K, nb;
  dk_dtype wdt, odt, bias_dt;
  const char *w;
  size_t wrow;
  void *o;
  const void *bias;
} dk__cpu_igemm;

static void dk__cpu_igemm_quant_task(void *ctx, int64_t m0, int64_t m1) {
  const dk__cpu_igemm *g = (const dk__cpu_igemm *)ctx;
  if (g->xh) dk__cpu_quantize_xh(g->x + m0 * g->K, m1 - m0, g->K, g->xh + m0 * g->nb);
  else dk__cpu_quantize_x(g->x + m0 * g->K, m1 - m0, g->K, g->xq + m0 * g->nb, NULL);
}

/* output columns [t0 * NC, t1 * NC): per k slice, the slice's panels are
 * packed, then every 4-row activation panel meets every weight panel */
static void dk__cpu_igemm_task(void *ctx, int64_t t0, int64_t t1) {
  const dk__cpu_igemm *g = (const dk__cpu_igemm *)ctx;
  const int five = g->wdt == DK_Q5_0 || g->wdt == DK_Q5_1 || g->wdt == DK_Q5_K;
  const int imr = dk__cpu_k->imr, inr = dk__cpu_k->inr;
  const int64_t pblk = g->xh ? DK__IG_BLK16 : inr / 8 * DK__IG_BLK;   /* bytes of a panel block */
  float *cacc = dk__cpu_scratch(1, (size_t)(g->mpad * DK_CPU_NC));
  /* sized for the largest panel block a row: DK__IG_BLK16 / 16 */
  uint8_t *bp = (uint8_t *)dk__cpu_scratch(2, (size_t)(DK_CPU_NC / 16 * DK_CPU_IKB * DK__IG_BLK16 / 4));
  float *bias = dk__cpu_scratch(0, DK_CPU_NC);
  int64_t t;
  if (!cacc || !bp || !bias) return;
  for (t = t0; t < t1; t++) {
    const int64_t n0 = t * DK_CPU_NC, nc = g->N - n0 < DK_CPU_NC ? g->N - n0 : DK_CPU_NC;
    const int64_t npan = (nc + inr - 1) / inr;
    int64_t b0, ip, jp;
    memset(cacc, 0, (size_t)(g->mpad * DK_CPU_NC) * 4);
    for (b0 = 0; b0 < g->nb; b0 += DK_CPU_IKB) {
      const int64_t nblk = g->nb - b0 < DK_CPU_IKB ? g->nb - b0 : DK_CPU_IKB;
      for (jp = 0; jp < npan; jp++) {
        const int rows = (int)(nc - jp * inr < inr ? nc - jp * inr : inr);
        dk__cpu_k->ipack(g->wdt, g->w + (size_t)(n0 + jp * inr) * g->wrow, g->wrow, rows, b0, nblk,
                         bp + jp * nblk * pblk);
      }
      for (ip = 0; ip < g->mpad; ip += imr)
        for (jp = 0; jp < npan; jp++)
          if (g->xh)
            dk__cpu_k->imicro16(nblk, g->xh + ip * g->nb + b0, g->nb, bp + jp * nblk * pblk,
                                cacc + ip * DK_CPU_NC + jp * inr, DK_CPU_NC);
          else
            dk__cpu_k->imicro(five, nblk, g->xq + ip * g->nb + b0, g->nb, bp + jp * nblk * pblk,
                              cacc + ip * DK_CPU_NC + jp * inr, DK_CPU_NC);
    }
    dk__cpu_store_cols(cacc, g->M, g->N, n0, nc, g->bias, g->bias_dt, bias, g->odt, g->o);
  }
}

/* o = x W^T (+ bias) for a weight dk__cpu_igemm_takes, K a multiple of 32 */
static dk_status dk__cpu_igemm_run(const dk_tensor *o, const dk_tensor *x, const dk_tensor *w, const dk_tensor *bias,
                                   int64_t M, int64_t N, int64_t K) {
  dk__cpu_igemm g;
  void *p = NULL, *q = NULL;
  const int half = (DK__CPU_IGEMM16 >> w->dtype) & 1;
  const size_t bsz = half ? sizeof(dk__cpu_q8h) : sizeof(dk__cpu_q8x);
  size_t qsz;
  if (M == 0 || N == 0) return DK_OK;
  g.M = M; g.N = N; g.K = K; g.nb = K / 32;
  g.mpad = (M + DK_CPU_IMR - 1) / DK_CPU_IMR * DK_CPU_IMR;
  g.wdt = w->dtype; g.odt = o->dtype; g.w = (const char *)dk__cpu_ptr(w); g.wrow = dk__row_bytes(w->dtype, K);
  g.o = dk__cpu_ptr(o);
  g.bias = bias ? dk__cpu_ptr(bias) : NULL;
  g.bias_dt = bias ? bias->dtype : DK_F32;
  qsz = (size_t)(g.mpad * g.nb) * bsz;
  /* f32 x is rounded where it lies; f16/bf16 x through an f32 copy */
  if ((x->dtype != DK_F32 && posix_memalign(&p, 64, (size_t)(M * K) * sizeof(float)) != 0) ||
      posix_memalign(&q, 64, qsz) != 0) {
    free(p);
    return dk__error(DK_ERR_OUT_OF_MEMORY, "dk_linear on cpu: no memory to round a %lldx%lld activation to q8",
                     (long long)M, (long long)K);
  }
  if (p) dk__cpu_load(x->dtype, dk__cpu_ptr(x), 0, 1, M * K, (float *)p);
  g.x = p ? (const float *)p : (const float *)dk__cpu_ptr(x);
  g.xq = half ? NULL : (dk__cpu_q8x *)q;
  g.xh = half ? (dk__cpu_q8h *)q : NULL;
  memset((char *)q + (size_t)(M * g.nb) * bsz, 0, (size_t)((g.mpad - M) * g.nb) * bsz);
  dk__cpu_parallel(M, 1 + 16384 / (K + 1), dk__cpu_igemm_quant_task, &g);
  dk__cpu_parallel((N + DK_CPU_NC - 1) / DK_CPU_NC, 1, dk__cpu_igemm_task, &g);
  free(p);
  free(q);
  return DK_OK;
}

#endif
