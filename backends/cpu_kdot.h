/* backends/cpu_kdot.h — the decode product of the K-quants (q2_K-q6_K)
 * against activations rounded to 8 bits (dk__cpu_q8k: a 256-value
 * super-block's codes with a scale per 32, in dword-lane blocks, and sums
 * per 16; with VNNI rounded in 32-value runs and laid out as dk__cpu_q8v,
 * at the end). Included by
 * backends/cpu.h, where the layout is chosen (dk__cpu_linear) and the
 * entries are put in the kernel tables.
 *
 * Why: a K-quant super-block has one f16 scale (and min) for 256 values and
 * small integer scales for its groups of 16 or 32. Against the 32-value
 * activation blocks of the other formats (dk__cpu_q8x), each group's scale
 * was decoded and multiplied in scalar code and the min term summed as
 * scalars: q4_K decoded at 8.5 GB/s where q4_0 did 13, q2_K/q3_K (f32
 * activations) at 2.5 (`build/bench --filter linear`, 4096x4096). Here the
 * group scales multiply the integer sums as integers (madd against the
 * scales, shuffled into place in registers), and the min (q3_K/q6_K: the
 * code offset) term is the group scales against the activations' 16-value
 * sums.
 * One activation scale per 256 values (llama.cpp's q8_K) saves a conversion
 * and an FMA per 32 values, but on Gemma 3 270M Q4_K_M it moved the
 * teacher-forced perplexity by +0.78 % against +0.03 % with a scale per 32,
 * and top-1 agreement from 97.6 % to 96.1 % (tools/test_models.sh's
 * information line): Gemma's activations have outliers. So a scale per 32,
 * but not per 32 consecutive values: block l is the values in dword lane l
 * of each of the super-block's eight 32-value runs, so every run's int32
 * lanes meet the same eight scales, the eight runs' sums add up as
 * integers, and a super-block takes one conversion and one multiply by the
 * scales where a scale per run took eight conversions and eight FMAs with
 * a broadcast each. 4096x4096 at M = 1 on one thread beside llama.cpp's
 * q8_K vec_dot (AMD Zen 3): q2_K 0.78x -> 0.90x, q3_K 0.93x -> 1.06x, q4_K
 * 0.90x -> 1.15x, q6_K 1.17x -> 1.49x; Gemma's decode perplexity +0.11 %,
 * top-1 96.9 %, rms of the log-probability error 0.059 (was 0.062).
 *
 * Integer ranges: codes u <= 63 (q6_K taken unsigned, before its -32), x in
 * [-127, 127]: a maddubs pair is at most 2*63*127 = 16002, inside int16; a
 * group scale is at most 63 (q4_K/q5_K) or 128 in magnitude, so a lane's
 * madd is under 2*128*16002 < 2^22 and its eight runs' sum under 2^25. */
#ifndef DK_BACKEND_CPU_KDOT_H
#define DK_BACKEND_CPU_KDOT_H

/* q3_K's 16 six-bit scales, minus 32, one byte each: the low nibbles are
 * bytes 0-7's (groups 0-7) then their high nibbles (8-15); the top two bits
 * of group i are bits 2*(i/4).. of byte 8 + i%4 */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))
#endif
static inline void dk__cpu_q3k_scales(const uint8_t *s12, uint64_t *lo, uint64_t *hi) {
  uint64_t n;
  uint32_t t;
  memcpy(&n, s12, 8); memcpy(&t, s12 + 8, 4);
  *lo = (n & 0x0f0f0f0f0f0f0f0full) | ((uint64_t)(t & 0x03030303u) | (uint64_t)((t >> 2) & 0x03030303u) << 32) << 4;
  *hi = ((n >> 4) & 0x0f0f0f0f0f0f0f0full) | ((uint64_t)((t >> 4) & 0x03030303u) | (uint64_t)((t >> 6) & 0x03030303u) << 32) << 4;
}

/* super-block sb of a K-quant row as unsigned codes u with a scale per 16
 * values: w = d * sc * (u - off) - dmin * mn */
static void dk__cpu_ksb_codes(dk_dtype wdt, const char *row, int64_t sb, uint8_t *u, int *sc, int *mn, int *off, float *d,
                              float *dmin) {
  int i;
  uint64_t a, b;
  *off = 0; *dmin = 0.0f;
  for (i = 0; i < 16; i++) mn[i] = 0;
  if (wdt == DK_Q6_K) {
    const dk_block_q6_K *p = (const dk_block_q6_K *)row + sb;
    for (i = 0; i < 256; i++) u[i] = (uint8_t)(dk__quant_q6(p, i) + 32);
    for (i = 0; i < 16; i++) sc[i] = p->scales[i];
    *off = 32; *d = dk_f16_to_f32(p->d);
  } else if (wdt == DK_Q2_K || wdt == DK_Q3_K) {
    /* value h*128 + s*32 + l: bits 2s.. of qs[h*32 + l]; q3_K's third bit is
     * bit 4h + s of hmask[l] */
    const dk_block_q2_K *p2 = wdt == DK_Q2_K ? (const dk_block_q2_K *)row + sb : NULL;
    const dk_block_q3_K *p3 = wdt == DK_Q3_K ? (const dk_block_q3_K *)row + sb : NULL;
    const uint8_t *qs = p2 ? p2->qs : p3->qs;
    for (i = 0; i < 256; i++) {
      u[i] = (qs[(i >> 7) * 32 + (i & 31)] >> (2 * ((i >> 5) & 3))) & 3;
      if (p3) u[i] |= (uint8_t)(((p3->hmask[i & 31] >> (i >> 5)) & 1) << 2);
    }
    if (p2) {
      for (i = 0; i < 16; i++) { sc[i] = p2->scales[i] & 15; mn[i] = p2->scales[i] >> 4; }
      *d = dk_f16_to_f32(p2->d); *dmin = dk_f16_to_f32(p2->dmin);
    } else {
      dk__cpu_q3k_scales(p3->scales, &a, &b);
      for (i = 0; i < 16; i++) sc[i] = (int)(((i < 8 ? a : b) >> (8 * (i & 7))) & 255) - 32;
      *off = 4; *d = dk_f16_to_f32(p3->d);
    }
  } else {
    /* q4_K/q5_K: group g (32 values) is the low (even g) or high nibbles of
     * qs[32*(g/2) ..]; q5_K's fifth bit is bit g of qh[l] */
    const dk_block_q4_K *p4 = wdt == DK_Q4_K ? (const dk_block_q4_K *)row + sb : NULL;
    const dk_block_q5_K *p5 = wdt == DK_Q5_K ? (const dk_block_q5_K *)row + sb : NULL;
    const uint8_t *qs = p4 ? p4->qs : p5->qs;
    for (i = 0; i < 256; i++) {
      int g = i >> 5;
      u[i] = (qs[32 * (g >> 1) + (i & 31)] >> (4 * (g & 1))) & 15;
      if (p5) u[i] |= (uint8_t)(((p5->qh[i & 31] >> g) & 1) << 4);
    }
    dk__cpu_k45_scales(p4 ? p4->scales : p5->scales, &a, &b);
    for (i = 0; i < 16; i++) { sc[i] = (int)((a >> (8 * (i / 2))) & 255); mn[i] = (int)((b >> (8 * (i / 2))) & 255); }
    *d = dk_f16_to_f32(p4 ? p4->d : p5->d); *dmin = dk_f16_to_f32(p4 ? p4->dmin : p5->dmin);
  }
}

/* the portable class, and the arithmetic every class does: per lane j
 * (activation block j), si_j = the sum of sc * u * x over its values, in
 * integers; the product is the sum over super-blocks of
 * d * (sum_j xd_j * si_j - off * sum_g sc_g * s_g) - dmin * sum_g mn_g * s_g */
static void dk__cpu_rows_q8k_generic(dk_dtype wdt, const char *w, size_t wrow, int64_t rows, const dk__cpu_q8k *xk,
                                     int64_t nsb, int M, float *y, int64_t ldy) {
  uint8_t u[256];
  int sc[16], mn[16], off, g, i, j;
  int64_t r, sb;
  int m;
  for (r = 0; r < rows; r++)
    for (m = 0; m < M; m++) {
      float acc = 0.0f, macc = 0.0f, d, dmin;
      for (sb = 0; sb < nsb; sb++) {
        const dk__cpu_q8k *x = xk + m * nsb + sb;
        int32_t si[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        float a = 0.0f, ma = 0.0f;
        dk__cpu_ksb_codes(wdt, w + (size_t)r * wrow, sb, u, sc, mn, &off, &d, &dmin);
        for (i = 0; i < 256; i++) si[(i >> 2) & 7] += sc[i >> 4] * u[i] * x->qs[i];
        for (j = 0; j < 8; j++) a += x->d[j] * (float)si[j];
        for (g = 0; g < 16; g++) {
          a -= (float)(off * sc[g]) * x->s[g];
          ma += (float)mn[g] * x->s[g];
        }
        acc += d * a;
        macc += dmin * ma;
      }
      y[m * ldy + r] = acc - macc;
    }
}

#ifdef DK_CPU_X86
/* the scale words' shuffle controls DK__KW and DK__KW2: backends/cpu.h */
/* 32 values (run j): si += u . x, pairs times the scale words, in int32;
 * dword lane l is activation block l's in every run */
#define DK__KGRP(u, j, scw)                                                    \
  si = _mm256_add_epi32(si, _mm256_madd_epi16(                                 \
                                _mm256_maddubs_epi16(u, _mm256_loadu_si256((const __m256i *)(x->qs + 32 * (j)))), scw))
/* the super-block's integer sums times the activation blocks' scales */
#define DK__KSI() _mm256_mul_ps(_mm256_cvtepi32_ps(si), _mm256_loadu_ps(x->d))
/* the 16-value-group term: 16 bytes c (scales or mins, cvt: signed or
 * unsigned) against x's group sums s, eight lanes to be summed */
#define DK__KS16(cvt, c)                                                       \
  _mm256_fmadd_ps(_mm256_cvtepi32_ps(cvt(c)), _mm256_loadu_ps(x->s),           \
                  _mm256_mul_ps(_mm256_cvtepi32_ps(cvt(_mm_srli_si128(c, 8))), _mm256_loadu_ps(x->s + 8)))

/* q4_K/q5_K: groups 2j and 2j+1 are the low and high nibbles of 32 bytes;
 * q5_K's fifth bits are bits 2j and 2j+1 of qh, shifted down as j goes */
/* a field of super-block sb of row wr, whichever of the two types T is */
#define DK__K45_F(T, f) ((T) == DK_Q4_K ? ((const dk_block_q4_K *)wr + sb)->f : ((const dk_block_q5_K *)wr + sb)->f)
#define DK__K45_SB(T)                                                          \
  {                                                                            \
    const uint8_t *qs = DK__K45_F(T, qs);                                      \
    const __m256i lo = _mm256_set1_epi8(15);                                   \
    uint64_t sc, mn;                                                           \
    __m256i sc16, hm = _mm256_setzero_si256(), si = _mm256_setzero_si256();   \
    __m128i m8;                                                                \
    dk__cpu_k45_scales(DK__K45_F(T, scales), &sc, &mn);                        \
    /* group g's min against its two 16-value sums: the min in both bytes */  \
    m8 = _mm_cvtsi64_si128((long long)mn);                                     \
    macc = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(DK__K45_F(T, dmin))),     \
                           DK__KS16(_mm256_cvtepu8_epi32, _mm_unpacklo_epi8(m8, m8)), macc); \
    sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)sc))); \
    if (T == DK_Q5_K) hm = _mm256_loadu_si256((const __m256i *)((const dk_block_q5_K *)wr + sb)->qh); \
    DK__K45_PAIR(T, 0) DK__K45_PAIR(T, 1) DK__K45_PAIR(T, 2) DK__K45_PAIR(T, 3) \
    acc = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(DK__K45_F(T, d))), DK__KSI(), acc); \
  }
#define DK__K45_PAIR(T, j)                                                     \
  {                                                                            \
    const __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * (j)));    \
    __m256i u0 = _mm256_and_si256(v, lo), u1 = _mm256_and_si256(_mm256_srli_epi16(v, 4), lo); \
    if (T == DK_Q5_K) {                                                        \
      u0 = _mm256_or_si256(u0, _mm256_and_si256(_mm256_slli_epi16(hm, 4), _mm256_set1_epi8(16))); \
      u1 = _mm256_or_si256(u1, _mm256_and_si256(_mm256_slli_epi16(hm, 3), _mm256_set1_epi8(16))); \
      hm = _mm256_srli_epi16(hm, 2);                                           \
    }                                                                          \
    DK__KGRP(u0, 2 * (j), _mm256_shuffle_epi8(sc16, DK__KW(2 * (j))));         \
    DK__KGRP(u1, 2 * (j) + 1, _mm256_shuffle_epi8(sc16, DK__KW(2 * (j) + 1)));  \
  }

/* q6_K: codes taken unsigned (0-63) so maddubs takes them as they are; the
 * -32 comes back through the scales . the activations' 16-value sums. A
 * 32-value block j spans groups 2j (the maddubs' low half) and 2j+1 (its
 * high half) */
#define DK__Q6K_SB                                                             \
  {                                                                            \
    const dk_block_q6_K *p = (const dk_block_q6_K *)wr + sb;                   \
    const __m128i s8 = _mm_loadu_si128((const __m128i *)p->scales);           \
    const __m256i s16 = _mm256_cvtepi8_epi16(s8);                              \
    const __m256i sa = _mm256_permute4x64_epi64(s16, 0x44), sbk = _mm256_permute4x64_epi64(s16, 0xee); \
    __m256i si = _mm256_setzero_si256();                                       \
    DK__Q6K_BLK(0, sa, 0) DK__Q6K_BLK(1, sa, 1) DK__Q6K_BLK(2, sa, 2) DK__Q6K_BLK(3, sa, 3) \
    DK__Q6K_BLK(4, sbk, 0) DK__Q6K_BLK(5, sbk, 1) DK__Q6K_BLK(6, sbk, 2) DK__Q6K_BLK(7, sbk, 3) \
    acc = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(p->d)),                     \
                          _mm256_fmadd_ps(_mm256_set1_ps(-32.0f), DK__KS16(_mm256_cvtepi8_epi32, s8), DK__KSI()), acc); \
  }
/* block j's groups 2j and 2j+1 are words 2i and 2i+1 of sv (i = j % 4) */
#define DK__Q6K_BLK(j, sv, i) \
  DK__KGRP(dk__cpu_q6k_u8(p, j), j, _mm256_shuffle_epi8(sv, DK__KW2(2 * (i), 2 * (i) + 1)));

/* q2_K/q3_K: 16 groups of 16, 2-bit codes (value h*128 + s*32 + l is bits
 * 2s.. of qs[h*32 + l]); q2_K's scale and min are a byte's two nibbles;
 * q3_K's third bit is bit 4h + s of hmask[l], its scales signed 6-bit, and
 * its codes 0-7 carry -4 (back through the scales . 16-value sums) */
#define DK__K23_SB(T)                                                          \
  {                                                                            \
    const uint8_t *hm = NULL;                                                  \
    const uint8_t *qs = T == DK_Q2_K ? ((const dk_block_q2_K *)wr + sb)->qs : ((const dk_block_q3_K *)wr + sb)->qs; \
    __m256i s16, sa, sbk, si = _mm256_setzero_si256();                        \
    __m128i s8;                                                                \
    float d;                                                                   \
    if (T == DK_Q2_K) {                                                        \
      const dk_block_q2_K *p = (const dk_block_q2_K *)wr + sb;                 \
      const __m128i l4 = _mm_set1_epi8(15);                                    \
      s8 = _mm_loadu_si128((const __m128i *)p->scales);                        \
      macc = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(p->dmin)),              \
                             DK__KS16(_mm256_cvtepu8_epi32, _mm_and_si128(_mm_srli_epi16(s8, 4), l4)), macc); \
      s8 = _mm_and_si128(s8, l4);                                              \
      s16 = _mm256_cvtepu8_epi16(s8);                                          \
      d = _cvtsh_ss(p->d);                                                     \
    } else {                                                                   \
      const dk_block_q3_K *p = (const dk_block_q3_K *)wr + sb;                 \
      uint64_t slo, shi;                                                       \
      dk__cpu_q3k_scales(p->scales, &slo, &shi);                               \
      s8 = _mm_sub_epi8(_mm_set_epi64x((long long)shi, (long long)slo), _mm_set1_epi8(32)); \
      s16 = _mm256_cvtepi8_epi16(s8);                                          \
      hm = p->hmask;                                                           \
      d = _cvtsh_ss(p->d);                                                     \
    }                                                                          \
    sa = _mm256_permute4x64_epi64(s16, 0x44); sbk = _mm256_permute4x64_epi64(s16, 0xee); \
    DK__K23_HALF(0, sa) DK__K23_HALF(1, sbk)                                   \
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d),                                   \
                          T == DK_Q2_K ? DK__KSI()                             \
                                       : _mm256_fmadd_ps(_mm256_set1_ps(-4.0f), DK__KS16(_mm256_cvtepi8_epi32, s8), DK__KSI()), \
                          acc);                                                \
  }
#define DK__K23_HALF(h, sv)                                                    \
  DK__K23_RUN(h, 0, sv) DK__K23_RUN(h, 1, sv) DK__K23_RUN(h, 2, sv) DK__K23_RUN(h, 3, sv)
#define DK__K23_RUN(h, s, sv)                                                  \
  DK__KGRP(dk__cpu_k23_u8(qs, hm, 4 * (h) + (s)), 4 * (h) + (s), _mm256_shuffle_epi8(sv, DK__KW2(2 * (s), 2 * (s) + 1)));

/* the bytes DK__PF_AHEAD past the super-block, into L1. In a model (weights
 * from DRAM, not the cache a 4096x4096 bench fits in) the first load of
 * each q6_K super-block took 39 % of the product's samples (perf), and a
 * 100M q6_K model decoded at 114-146 tok/s; with this, 136-196 (five
 * alternating pairs, ratio median 1.32; q4_K, q5_K and Q4_K_M 1.05-1.36).
 * Rows are consecutive, so past a row's end is the next row's start. The
 * distance was 1536 (AMD); 3072 took a 100M q4_K model from 297-333 to
 * 343-356 tok/s (Intel, alternating). */
#define DK__KPREFETCH                                                          \
  {                                                                            \
    const size_t bb = wrow / (size_t)nsb;   /* the super-block's bytes */    \
    const char *pf = wr + (size_t)sb * bb + DK__PF_AHEAD;                        \
    _mm_prefetch(pf, _MM_HINT_T0); _mm_prefetch(pf + 64, _MM_HINT_T0);         \
    _mm_prefetch(pf + 128, _MM_HINT_T0); if (bb > 192) _mm_prefetch(pf + 192, _MM_HINT_T0); \
  }

/* rows [0, rows) against M activation rows, row outer (a row's weights stay
 * in L1 for the second activation row of a precise weight) */
#define DK__KDOT_BODY(T)                                                       \
  int64_t r, sb;                                                               \
  int m;                                                                       \
  for (r = 0; r < rows; r++) {                                                 \
    const char *wr = w + (size_t)r * wrow;                                     \
    for (m = 0; m < M; m++) {                                                  \
      __m256 acc = _mm256_setzero_ps(), macc = _mm256_setzero_ps();           \
      for (sb = 0; sb < nsb; sb++) {                                           \
        const dk__cpu_q8k *x = xk + m * nsb + sb;                              \
        DK__KPREFETCH                                                          \
        if (T == DK_Q6_K) DK__Q6K_SB                                           \
        else if (T == DK_Q2_K || T == DK_Q3_K) DK__K23_SB(T)                   \
        else DK__K45_SB(T)                                                     \
      }                                                                        \
      y[m * ldy + r] = dk__cpu_hsum(_mm256_sub_ps(acc, macc));                 \
    }                                                                          \
  }
#define DK__KDOT_ARGS dk_dtype dt, const char *w, size_t wrow, int64_t rows, const dk__cpu_q8k *xk, int64_t nsb, int M, float *y, int64_t ldy
#define DK__KDOT_FNS(CLS, ATTR)                                                                       \
  ATTR static void dk__cpu_rows_q8k_##CLS##_q2_K(DK__KDOT_ARGS) { DK__KDOT_BODY(DK_Q2_K) (void)dt; } \
  ATTR static void dk__cpu_rows_q8k_##CLS##_q3_K(DK__KDOT_ARGS) { DK__KDOT_BODY(DK_Q3_K) (void)dt; } \
  ATTR static void dk__cpu_rows_q8k_##CLS##_q4_K(DK__KDOT_ARGS) { DK__KDOT_BODY(DK_Q4_K) (void)dt; } \
  ATTR static void dk__cpu_rows_q8k_##CLS##_q5_K(DK__KDOT_ARGS) { DK__KDOT_BODY(DK_Q5_K) (void)dt; } \
  ATTR static void dk__cpu_rows_q8k_##CLS##_q6_K(DK__KDOT_ARGS) { DK__KDOT_BODY(DK_Q6_K) (void)dt; } \
  static dk__cpu_rowdot_q8k_fn dk__cpu_rows_q8k_##CLS(dk_dtype dt) {                                 \
    return dt == DK_Q2_K ? dk__cpu_rows_q8k_##CLS##_q2_K : dt == DK_Q3_K ? dk__cpu_rows_q8k_##CLS##_q3_K \
           : dt == DK_Q4_K ? dk__cpu_rows_q8k_##CLS##_q4_K : dt == DK_Q5_K ? dk__cpu_rows_q8k_##CLS##_q5_K \
           : dt == DK_Q6_K ? dk__cpu_rows_q8k_##CLS##_q6_K : NULL;                                  \
  }
DK__KDOT_FNS(avx2, DK_CPU_AVX2)
DK__KDOT_FNS(avx512, DK_CPU_AVX512)

/* ---- AVX-512 VNNI (dk__cpu_best_class puts these in where cpuid has it) ----
 * Why: the forms above take 32 values an instruction and spend five
 * (maddubs, the scale words' shuffle, madd, convert, FMA) on each 32, plus
 * the codes' extraction: q2_K and q3_K decoded at 19-20 GB/s and q4_K at 31
 * where q4_0's VNNI rows did 44 (16384x4096 at M = 1, both cores, Intel VM).
 * Doing the same in zmm registers (64 codes, one vpdpbusd, then the scales
 * permuted to each register's halves, convert, FMA) ran no faster: zmm
 * instructions issue on two ports, not three. What saves instructions is
 * the layout: dword lane g of every register holds four values of the
 * super-block's 16-value half g (register p: values 16g + 4p ..), so all
 * four registers' lanes carry the same scale and activation scale, their
 * vpdpbusd sums add up in int32, and a super-block takes one convert and
 * one FMA. The activations are laid out so once a token (dk__cpu_q8v); the
 * weight codes are gathered into it by one dword permute a register, with
 * per-lane shifts. The min (and q3_K/q6_K's code offset) term is the 16
 * halves' mn times the activations' half sums, one FMA a super-block.
 * 16384x4096 at M = 1 on both cores, before and after: q2_K 1152 -> 887 us,
 * q3_K 1462 -> 1108, q4_K 1198 -> 987, q5_K 1458 -> 1265, q6_K 1405 -> 1036
 * (q6_K 53 GB/s; q2_K's 25 GB/s is its scales' decoding and the codes'
 * gathering, about 35 instructions a super-block). */

/* 16 bytes, unsigned or signed (cvt8), to 16 floats */
#define DK__B16_PS(cvt8, v) _mm512_maskz_cvtepi32_ps((__mmask16)0xffff, cvt8((__mmask16)0xffff, v))
/* super-block sb of a K-quant row as w = d*u + mn per 16 values, u the
 * unsigned codes (dk__cpu_k23_u8, dk__cpu_q6k_u8, dk__cpu_kq_pair): q2_K
 * d*sc and -dmin*m; q3_K and q6_K d*sc and their code offset's -4 or -32
 * times that; q4_K/q5_K each 32-value group's d*sc and -dmin*m in both its
 * halves. Also the VNNI prompt product's packing (backends/cpu_igemm.h) */
DK_CPU_AVX512VNNI_INLINE void dk__cpu_kq_dm16(dk_dtype T, const char *row, int64_t sb, __m512 *d, __m512 *mn) {
  if (T == DK_Q2_K) {
    const dk_block_q2_K *p = (const dk_block_q2_K *)row + sb;
    const __m128i s8 = _mm_loadu_si128((const __m128i *)p->scales), l4 = _mm_set1_epi8(15);
    *d = _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(p->d)), DK__B16_PS(_mm512_maskz_cvtepu8_epi32, _mm_and_si128(s8, l4)));
    *mn = _mm512_mul_ps(_mm512_set1_ps(-_cvtsh_ss(p->dmin)),
                        DK__B16_PS(_mm512_maskz_cvtepu8_epi32, _mm_and_si128(_mm_srli_epi16(s8, 4), l4)));
  } else if (T == DK_Q3_K) {
    const dk_block_q3_K *p = (const dk_block_q3_K *)row + sb;
    uint64_t lo, hi;
    dk__cpu_q3k_scales(p->scales, &lo, &hi);
    *d = _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(p->d)),
                       DK__B16_PS(_mm512_maskz_cvtepi8_epi32,
                                  _mm_sub_epi8(_mm_set_epi64x((long long)hi, (long long)lo), _mm_set1_epi8(32))));
    *mn = _mm512_mul_ps(_mm512_set1_ps(-4.0f), *d);
  } else if (T == DK_Q6_K) {
    const dk_block_q6_K *p = (const dk_block_q6_K *)row + sb;
    *d = _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(p->d)),
                       DK__B16_PS(_mm512_maskz_cvtepi8_epi32, _mm_loadu_si128((const __m128i *)p->scales)));
    *mn = _mm512_mul_ps(_mm512_set1_ps(-32.0f), *d);
  } else {
    const dk_block_q4_K *p4 = (const dk_block_q4_K *)row + sb;
    const dk_block_q5_K *p5 = (const dk_block_q5_K *)row + sb;
    uint64_t sc, mi;
    __m128i v;
    dk__cpu_k45_scales(T == DK_Q4_K ? p4->scales : p5->scales, &sc, &mi);
    v = _mm_cvtsi64_si128((long long)sc);
    *d = _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(T == DK_Q4_K ? p4->d : p5->d)),
                       DK__B16_PS(_mm512_maskz_cvtepu8_epi32, _mm_unpacklo_epi8(v, v)));
    v = _mm_cvtsi64_si128((long long)mi);
    *mn = _mm512_mul_ps(_mm512_set1_ps(-_cvtsh_ss(T == DK_Q4_K ? p4->dmin : p5->dmin)),
                        DK__B16_PS(_mm512_maskz_cvtepu8_epi32, _mm_unpacklo_epi8(v, v)));
  }
}

/* a dword vector of f(g) in lane g, for the lane patterns below (p, the
 * register, is a constant where they are used) */
#define DK__KV_LANES(f) \
  _mm512_set_epi32(f(15), f(14), f(13), f(12), f(11), f(10), f(9), f(8), f(7), f(6), f(5), f(4), f(3), f(2), f(1), f(0))
/* q2_K/q3_K: half g is bits 2*((g/2) % 4) of qs[32*(g/8) + 16*(g%2) ..];
 * q3_K's third bit is bit g/2 of hmask[16*(g%2) ..], rotated to bit 2 */
#define DK__KV_Q2D(g) (8 * ((g) >> 3) + 4 * ((g) & 1) + p)
#define DK__KV_Q2S(g) (2 * (((g) >> 1) & 3))
#define DK__KV_HD(g) (4 * ((g) & 1) + p)
#define DK__KV_Q3R(g) ((2 - ((g) >> 1)) & 31)
/* q4_K/q5_K: half g is the (g/2 odd: high) nibbles of qs[32*(g/4) + 16*(g%2) ..];
 * q5_K's fifth bit is bit g/2 of qh[16*(g%2) ..], rotated to bit 4 */
#define DK__KV_Q4D(g) (8 * ((g) >> 2) + 4 * ((g) & 1) + p)
#define DK__KV_Q4S(g) (4 * (((g) >> 1) & 1))
#define DK__KV_Q5R(g) ((4 - ((g) >> 1)) & 31)
/* q6_K: half g (block j = g/2) is the (j % 4 >= 2: high) nibbles of
 * ql[64*(j/4) + 32*(j%2) + 16*(g%2) ..] and bits 2*(j%4) of
 * qh[32*(j/4) + 16*(g%2) ..], rotated to bits 4-5 */
#define DK__KV_Q6D(g) (16 * ((g) >> 3) + 8 * (((g) >> 1) & 1) + 4 * ((g) & 1) + p)
#define DK__KV_Q6S(g) (4 * (((g) >> 2) & 1))
#define DK__KV_Q6HD(g) (8 * ((g) >> 3) + 4 * ((g) & 1) + p)
#define DK__KV_Q6R(g) ((4 - 2 * (((g) >> 1) & 3)) & 31)

/* register p (0-3) of super-block sb of a K-quant row as unsigned codes:
 * dword lane g holds values 16g + 4p .. 16g + 4p + 3 */
DK_CPU_AVX512VNNI_INLINE __m512i dk__cpu_kq_run(dk_dtype T, const char *row, int64_t sb, int p) {
  if (T == DK_Q2_K || T == DK_Q3_K) {
    const uint8_t *qs = T == DK_Q2_K ? ((const dk_block_q2_K *)row + sb)->qs : ((const dk_block_q3_K *)row + sb)->qs;
    __m512i u = _mm512_maskz_permutexvar_epi32((__mmask16)0xffff, DK__KV_LANES(DK__KV_Q2D), _mm512_loadu_si512((const void *)qs));
    u = _mm512_and_si512(_mm512_maskz_srlv_epi32((__mmask16)0xffff, u, DK__KV_LANES(DK__KV_Q2S)), _mm512_set1_epi8(3));
    if (T == DK_Q3_K) {
      const __m512i h = _mm512_maskz_permutexvar_epi32((__mmask16)0xffff, 
          DK__KV_LANES(DK__KV_HD), _mm512_maskz_loadu_epi32((__mmask16)0xff, ((const dk_block_q3_K *)row + sb)->hmask));
      u = _mm512_ternarylogic_epi32(u, _mm512_maskz_rolv_epi32((__mmask16)0xffff, h, DK__KV_LANES(DK__KV_Q3R)), _mm512_set1_epi8(4), 0xf8);   /* u | (h & 4) */
    }
    return u;
  }
  if (T == DK_Q6_K) {
    const dk_block_q6_K *q = (const dk_block_q6_K *)row + sb;
    const __m512i lo = _mm512_maskz_permutex2var_epi32((__mmask16)0xffff, _mm512_loadu_si512((const void *)q->ql), DK__KV_LANES(DK__KV_Q6D),
                                                 _mm512_loadu_si512((const void *)(q->ql + 64)));
    const __m512i h = _mm512_maskz_permutexvar_epi32((__mmask16)0xffff, DK__KV_LANES(DK__KV_Q6HD), _mm512_loadu_si512((const void *)q->qh));
    return _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_maskz_srlv_epi32((__mmask16)0xffff, lo, DK__KV_LANES(DK__KV_Q6S)), _mm512_set1_epi8(15)),
                                     _mm512_maskz_rolv_epi32((__mmask16)0xffff, h, DK__KV_LANES(DK__KV_Q6R)), _mm512_set1_epi8(0x30), 0xf8);
  }
  {
    const uint8_t *qs = T == DK_Q4_K ? ((const dk_block_q4_K *)row + sb)->qs : ((const dk_block_q5_K *)row + sb)->qs;
    __m512i u = _mm512_maskz_permutex2var_epi32((__mmask16)0xffff, _mm512_loadu_si512((const void *)qs), DK__KV_LANES(DK__KV_Q4D),
                                          _mm512_loadu_si512((const void *)(qs + 64)));
    u = _mm512_and_si512(_mm512_maskz_srlv_epi32((__mmask16)0xffff, u, DK__KV_LANES(DK__KV_Q4S)), _mm512_set1_epi8(15));
    if (T == DK_Q5_K) {
      const __m512i h = _mm512_maskz_permutexvar_epi32((__mmask16)0xffff, 
          DK__KV_LANES(DK__KV_HD), _mm512_maskz_loadu_epi32((__mmask16)0xff, ((const dk_block_q5_K *)row + sb)->qh));
      u = _mm512_ternarylogic_epi32(u, _mm512_maskz_rolv_epi32((__mmask16)0xffff, h, DK__KV_LANES(DK__KV_Q5R)), _mm512_set1_epi8(16), 0xf8);
    }
    return u;
  }
}

/* rows [0, rows) against M rows of nsb q8v super-blocks, row outer as above */
#define DK__KV_BODY(T)                                                         \
  int64_t r, sb;                                                               \
  int m, p;                                                                    \
  for (r = 0; r < rows; r++) {                                                 \
    const char *wr = w + (size_t)r * wrow;                                     \
    for (m = 0; m < M; m++) {                                                  \
      __m512 acc = _mm512_setzero_ps(), macc = _mm512_setzero_ps();            \
      for (sb = 0; sb < nsb; sb++) {                                           \
        const dk__cpu_q8v *x = xv + m * nsb + sb;                              \
        __m512i s = _mm512_setzero_si512();                                    \
        __m512 dw, mw;                                                         \
        DK__KPREFETCH                                                          \
        dk__cpu_kq_dm16(T, wr, sb, &dw, &mw);                                  \
        DK__UNROLL8                                                            \
        for (p = 0; p < 4; p++)                                                \
          s = _mm512_dpbusd_epi32(s, dk__cpu_kq_run(T, wr, sb, p), _mm512_loadu_si512((const void *)(x->qs + 64 * p))); \
        acc = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps((__mmask16)0xffff, s), _mm512_mul_ps(dw, _mm512_loadu_ps(x->d)), acc); \
        macc = _mm512_fmadd_ps(mw, _mm512_loadu_ps(x->s), macc);               \
      }                                                                        \
      acc = _mm512_add_ps(acc, macc);                                          \
      y[m * ldy + r] =                                                         \
          dk__cpu_hsum(_mm256_add_ps(_mm512_maskz_extractf32x8_ps((__mmask8)0xff, acc, 0), _mm512_maskz_extractf32x8_ps((__mmask8)0xff, acc, 1))); \
    }                                                                          \
  }
#define DK__KV_ARGS dk_dtype dt, const char *w, size_t wrow, int64_t rows, const dk__cpu_q8v *xv, int64_t nsb, int M, float *y, int64_t ldy
DK_CPU_AVX512VNNI static void dk__cpu_rows_q8v_avx512vnni_q2_K(DK__KV_ARGS) { DK__KV_BODY(DK_Q2_K) (void)dt; }
DK_CPU_AVX512VNNI static void dk__cpu_rows_q8v_avx512vnni_q3_K(DK__KV_ARGS) { DK__KV_BODY(DK_Q3_K) (void)dt; }
DK_CPU_AVX512VNNI static void dk__cpu_rows_q8v_avx512vnni_q4_K(DK__KV_ARGS) { DK__KV_BODY(DK_Q4_K) (void)dt; }
DK_CPU_AVX512VNNI static void dk__cpu_rows_q8v_avx512vnni_q5_K(DK__KV_ARGS) { DK__KV_BODY(DK_Q5_K) (void)dt; }
DK_CPU_AVX512VNNI static void dk__cpu_rows_q8v_avx512vnni_q6_K(DK__KV_ARGS) { DK__KV_BODY(DK_Q6_K) (void)dt; }
static dk__cpu_rowdot_q8v_fn dk__cpu_rows_q8v_avx512vnni(dk_dtype dt) {
  return dt == DK_Q2_K ? dk__cpu_rows_q8v_avx512vnni_q2_K : dt == DK_Q3_K ? dk__cpu_rows_q8v_avx512vnni_q3_K : dt == DK_Q4_K ? dk__cpu_rows_q8v_avx512vnni_q4_K
         : dt == DK_Q5_K ? dk__cpu_rows_q8v_avx512vnni_q5_K : dt == DK_Q6_K ? dk__cpu_rows_q8v_avx512vnni_q6_K : NULL;
}
#endif

#endif
