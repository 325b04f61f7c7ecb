/* backends/cpu_fgemm.h — the prompt product (dk_linear with more than
 * DK_CPU_GEMV_MAXM rows, up to DK_CPU_FGEMM_MAXM; any on AVX-512) of f16, bf16 and q8_0
 * weights in row form: each output is the dot product of an activation row
 * and a weight row, 4 activation rows by 3 weight rows at a time (AVX2; the
 * AVX-512 form below: 6 by 4 in zmm, rows decoded to f32 first, and every
 * block format the integer GEMM of cpu_igemm.h does not take before it).
 * f16/bf16 weights are converted to f32 in registers as they are loaded;
 * q8_0's three rows are decoded to f32 once per chunk of activation rows (d *
 * q, the dequantization's rounding) and read from L1 by every tile. Included by
 * backends/cpu.h, which chooses it in dk__cpu_linear and puts the entries in
 * the kernel tables.
 *
 * Why not the panel GEMM (a C tile in registers, B converted and transposed
 * into panels): at a prompt's 64 rows every weight is used 64 times, and
 * converting and transposing it cost half as much as those multiply-adds
 * (perf, 100M f16 prompt: packing 25 %, micro-kernel 48 %). Here, per 8
 * values: 3 weight loads (converted), 4 activation loads and 12 FMAs, the 12
 * accumulators reduced once per tile. 2-core EPYC (Zen 3), f16 weights from
 * memory, GFLOP/s panel -> row form: 64x2048x768 78-85 -> 95-118, 64x768x2048
 * 82-92 -> 114-139, 16x2048x768 34-39 -> 65-73, 64x4096x4096 70 -> 111; at
 * 512 rows the two are level (113-116 / 112-114), hence the bound. q8_0:
 * 64x2048x768 77-98 -> 100-117; at K = 2048 its decoded rows (24 KB) crowd
 * L1 (87 -> 66; in 512-value passes level with the panel GEMM), hence
 * DK_CPU_FGEMM_Q8_MAXK. Not kept: f32 weights (nothing to convert; 64 rows
 * 89 -> 86, 512 rows 93 -> 67) and q8_0 decoded in registers per use (a
 * multiply per 8 values on the FMA ports: slower than the panel GEMM).
 *
 * Blocking: activation rows in chunks whose f32 copy stays in L2 (256 KB:
 * 64 rows at K = 768, 16 at K = 4096), so a tile reads its 4 rows from L1/L2
 * and the 3 weight rows (a few KB) from L1 for every chunk row; a piece's
 * weight rows (about 48) are read from memory once, from L2 for the other
 * chunks. */
#ifndef DK_BACKEND_CPU_FGEMM_H
#define DK_BACKEND_CPU_FGEMM_H

#define DK_CPU_FGEMM_MAXM 256
#define DK_CPU_FGROUP 3   /* weight rows per tile (AVX2; AVX-512: DK_CPU_FGROUP512) */
#define DK_CPU_FUNIT 12   /* weight rows the pool deals in: whole tiles of either class */
#define DK_CPU_FWMAX 4    /* the most weight rows a tile decodes to f32 */
/* q8_0 only up to this K: its three decoded f32 rows (12 KB) stay in L1
 * beside a tile's activations */
#define DK_CPU_FGEMM_Q8_MAXK 1024

/* rows of A in a chunk: its f32 copy in about 256 KB, a multiple of 4 in [4, 64] */
#define DK__CPU_FGEMM_CHUNK(K) ((K) >= 16384 ? 4 : (K) <= 1024 ? 64 : 65536 / (K) / 4 * 4)

#ifdef DK_CPU_X86
/* c[m][n] = a_m . w_n for m in [0, M), n in [n0, n1): a f32 rows of K
 * (K a multiple of 8), w rows of wrow bytes, c rows of ldc. A tile's
 * missing rows (M or n1 - n0 not a multiple of 4 or 3) read a present row
 * again and are not stored. */
/* c[0..nn) = the sums of x, y, z (nn <= 3): one masked store, no scalar loop
 * (which GCC turns into a memcpy call) */
DK_CPU_AVX2_INLINE void dk__cpu_hsum3_store(__m256 x, __m256 y, __m256 z, float *c, int nn) {
  const __m128 x4 = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  const __m128 y4 = _mm_add_ps(_mm256_castps256_ps128(y), _mm256_extractf128_ps(y, 1));
  const __m128 z4 = _mm_add_ps(_mm256_castps256_ps128(z), _mm256_extractf128_ps(z, 1));
  const __m128 s = _mm_hadd_ps(_mm_hadd_ps(x4, y4), _mm_hadd_ps(z4, _mm_setzero_ps()));
  _mm_maskstore_ps(c, _mm_cmpgt_epi32(_mm_set1_epi32(nn), _mm_setr_epi32(0, 1, 2, 3)), s);
}

/* three q8_0 rows of K values to f32 rows of K at dst (d * q: the
 * dequantization's one rounding) */
DK_CPU_AVX2_INLINE void dk__cpu_q8_0_rows_f32(const char *w0, const char *w1, const char *w2, int64_t K, float *dst) {
  const char *rows[3];
  int r, j;
  int64_t b;
  rows[0] = w0; rows[1] = w1; rows[2] = w2;
  for (r = 0; r < 3; r++)
    for (b = 0; b < K / 32; b++) {
      const dk_block_q8_0 *p = (const dk_block_q8_0 *)rows[r] + b;
      const __m256 d = _mm256_set1_ps(_cvtsh_ss(p->d));
      for (j = 0; j < 4; j++)
        _mm256_storeu_ps(dst + r * K + b * 32 + 8 * j,
                         _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p->qs + 8 * j))))));
    }
}
/* the dtype the tile loop reads: q8_0 rows come decoded to f32 */
#define DK__FGEMM_WT(T) ((T) == DK_Q8_0 ? DK_F32 : (T))

#define DK__FGEMM_FMA3(AV, C0, C1, C2)                                         \
  C0 = _mm256_fmadd_ps(AV, w0v, C0);                                           \
  C1 = _mm256_fmadd_ps(AV, w1v, C1);                                           \
  C2 = _mm256_fmadd_ps(AV, w2v, C2);
#define DK__FGEMM_BODY(T)                                                      \
  const int64_t mch = DK__CPU_FGEMM_CHUNK(K);                                  \
  int64_t mc, m, n, k;                                                         \
  for (mc = 0; mc < M; mc += mch) {                                            \
    const int64_t me = M - mc < mch ? M : mc + mch;                            \
    for (n = n0; n < n1; n += DK_CPU_FGROUP) {                                 \
      const int nn = n1 - n < DK_CPU_FGROUP ? (int)(n1 - n) : DK_CPU_FGROUP;   \
      const char *w0 = w + (size_t)n * wrow, *w1 = w0 + (nn > 1 ? wrow : 0), *w2 = w0 + (nn > 2 ? 2 * wrow : 0); \
      if (T == DK_Q8_0) { /* the group's rows to f32 once, read from L1 by every tile */ \
        dk__cpu_q8_0_rows_f32(w0, w1, w2, K, wbuf);                            \
        w0 = (const char *)wbuf; w1 = (const char *)(wbuf + K); w2 = (const char *)(wbuf + 2 * K); \
      }                                                                        \
      for (m = mc; m < me; m += 4) {                                           \
        const int mm = me - m < 4 ? (int)(me - m) : 4;                         \
        const float *a0 = a + m * K, *a1 = a0 + (mm > 1 ? K : 0), *a2 = a0 + (mm > 2 ? 2 * K : 0), \
                    *a3 = a0 + (mm > 3 ? 3 * K : 0);                            \
        __m256 c00 = _mm256_setzero_ps(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00; \
        __m256 c20 = c00, c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00; \
        for (k = 0; k < K; k += 8) {                                           \
          const __m256 w0v = dk__cpu_load8(DK__FGEMM_WT(T), w0, k), w1v = dk__cpu_load8(DK__FGEMM_WT(T), w1, k), \
                       w2v = dk__cpu_load8(DK__FGEMM_WT(T), w2, k);            \
          __m256 av = _mm256_loadu_ps(a0 + k);                                 \
          DK__FGEMM_FMA3(av, c00, c01, c02)                                    \
          av = _mm256_loadu_ps(a1 + k);                                        \
          DK__FGEMM_FMA3(av, c10, c11, c12)                                    \
          av = _mm256_loadu_ps(a2 + k);                                        \
          DK__FGEMM_FMA3(av, c20, c21, c22)                                    \
          av = _mm256_loadu_ps(a3 + k);                                        \
          DK__FGEMM_FMA3(av, c30, c31, c32)                                    \
        }                                                                      \
        dk__cpu_hsum3_store(c00, c01, c02, c + m * ldc + n, nn);               \
        if (mm > 1) dk__cpu_hsum3_store(c10, c11, c12, c + (m + 1) * ldc + n, nn); \
        if (mm > 2) dk__cpu_hsum3_store(c20, c21, c22, c + (m + 2) * ldc + n, nn); \
        if (mm > 3) dk__cpu_hsum3_store(c30, c31, c32, c + (m + 3) * ldc + n, nn); \
      }                                                                        \
    }                                                                          \
  }

#define DK__FGEMM_ARGS dk_dtype t, const float *a, int64_t M, int64_t K, const char *w, size_t wrow, int64_t n0, int64_t n1, float *c, int64_t ldc, float *wbuf
/* the kernel of a weight dtype (NULL: none) */
#define DK__FGEMM_FNS(CLS, ATTR)                                                           \
  ATTR static void dk__cpu_fgemm_##CLS##_f16(DK__FGEMM_ARGS) { (void)t; DK__FGEMM_BODY(DK_F16) }    \
  ATTR static void dk__cpu_fgemm_##CLS##_bf16(DK__FGEMM_ARGS) { (void)t; DK__FGEMM_BODY(DK_BF16) }  \
  ATTR static void dk__cpu_fgemm_##CLS##_q8_0(DK__FGEMM_ARGS) { (void)t; DK__FGEMM_BODY(DK_Q8_0) }  \
  static dk__cpu_fgemm_fn dk__cpu_fgemm_##CLS(dk_dtype dt) {                               \
    return dt == DK_F16 ? dk__cpu_fgemm_##CLS##_f16 : dt == DK_BF16 ? dk__cpu_fgemm_##CLS##_bf16 :         \
           dt == DK_Q8_0 ? dk__cpu_fgemm_##CLS##_q8_0 : NULL;                                        \
  }
DK__FGEMM_FNS(avx2, DK_CPU_AVX2)

/* AVX-512: the same row form in zmm, 6 activation rows by 4 weight rows a
 * tile (24 accumulators of the 32 registers; per 16 values 4 weight loads,
 * 6 activation loads, 24 FMAs). The group's 4 weight rows are decoded to f32
 * once per chunk of activation rows, in passes of at most DK_CPU_F512_KC
 * values (16 KB of f32 rows beside a tile's 24 KB of activations in L1),
 * and every tile reads them from L1; a pass after the first adds to what
 * the earlier ones stored. A K that is 8 past a multiple of 16 ends in one
 * masked step. Intel Xeon (Emerald Rapids, 2 cores), dk_linear with 64
 * rows, GFLOP/s; "ymm" is the AVX2 body compiled for AVX-512, which ran at
 * the AVX2 class's speed (on Intel only 512-bit FMAs double the multiply-
 * adds a cycle):
 *   f16 64x768x768:   ymm 140-143, zmm converting in registers 210-228,
 *                     zmm from f32 rows 257-277
 *   f16 64x768x2048:  one pass 223, passes of 1024 236-239, of 512 219-224
 *   q8_0 64x768x2048: AVX2 (the panel GEMM past K = 1024) 121, here 252-258
 * The rows come from the class's wdeq (the panel GEMM's dequantization), so
 * the block formats the integer GEMM does not take run here too: q6_K, q2_K
 * and q3_K 64x2048x768 124-127 (panel GEMM) -> 233-247. The 4/5-bit ones stay
 * in integers, level or faster (q4_0 285 there, 263 here). */
#define DK_CPU_FGROUP512 4
/* the all-lanes mask: the maskz forms, as in cpu.h's f16 rows (the plain
 * ones start from an undefined vector, which trips g++ 12's -Wmaybe-uninitialized) */
#define DK__M16 ((__mmask16)0xffff)
#define DK_CPU_F512_KC 1024
/* c[0..nn) (+)= the sums of a, b, c, d (nn <= 4): 128-bit lanes folded
 * pairwise, then within each lane, then one masked store */
DK_CPU_AVX512_INLINE void dk__cpu_hsum4_store512(__m512 a, __m512 b, __m512 c, __m512 d, float *out, int nn, int add) {
  const __mmask8 mk = (__mmask8)((1u << nn) - 1);
  const __m512 ab = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(DK__M16, a, b, 0x44), _mm512_maskz_shuffle_f32x4(DK__M16, a, b, 0xEE));
  const __m512 cd = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(DK__M16, c, d, 0x44), _mm512_maskz_shuffle_f32x4(DK__M16, c, d, 0xEE));
  __m512 u = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(DK__M16, ab, cd, 0x88), _mm512_maskz_shuffle_f32x4(DK__M16, ab, cd, 0xDD));
  __m128 r;
  u = _mm512_add_ps(u, _mm512_maskz_permute_ps(DK__M16, u, 0x4E));
  u = _mm512_add_ps(u, _mm512_maskz_permute_ps(DK__M16, u, 0xB1));
  r = _mm512_maskz_extractf32x4_ps((__mmask8)0xf, _mm512_maskz_permutexvar_ps(DK__M16, _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), u), 0);
  if (add) r = _mm_add_ps(r, _mm_maskz_loadu_ps(mk, out));
  _mm_mask_storeu_ps(out, mk, r);
}
/* the class's weight dequantization (backends/cpu.h, after this file) */
DK_CPU_AVX512 static int dk__cpu_wdeq_avx512(dk_dtype dt, const char *w, size_t wrow, int64_t rows, int64_t k0, int64_t kc,
                                             float *dst, int64_t ldd);
#define DK__FG512_FMA4(AP, LA, C0, C1, C2, C3)                                 \
  av = LA(AP);                                                                 \
  C0 = _mm512_fmadd_ps(av, w0v, C0);                                           \
  C1 = _mm512_fmadd_ps(av, w1v, C1);                                           \
  C2 = _mm512_fmadd_ps(av, w2v, C2);                                           \
  C3 = _mm512_fmadd_ps(av, w3v, C3);
#define DK__FG512_L(P) _mm512_loadu_ps((P) + k)
#define DK__FG512_LM(P) _mm512_maskz_loadu_ps(tail, (P) + k)
#define DK__FG512_STEP(L)                                                      \
  {                                                                            \
    const __m512 w0v = L(wbuf), w1v = L(wbuf + kl), w2v = L(wbuf + 2 * kl), w3v = L(wbuf + 3 * kl); \
    __m512 av;                                                                 \
    DK__FG512_FMA4(a0, L, c00, c01, c02, c03)                                  \
    DK__FG512_FMA4(a1, L, c10, c11, c12, c13)                                  \
    DK__FG512_FMA4(a2, L, c20, c21, c22, c23)                                  \
    DK__FG512_FMA4(a3, L, c30, c31, c32, c33)                                  \
    DK__FG512_FMA4(a4, L, c40, c41, c42, c43)                                  \
    DK__FG512_FMA4(a5, L, c50, c51, c52, c53)                                  \
  }
#define DK__FG512_STORE(I, C0, C1, C2, C3)                                     \
  if (mm > I) dk__cpu_hsum4_store512(C0, C1, C2, C3, c + (m + I) * ldc + n, nn, k0 > 0);
DK_CPU_AVX512 static void dk__cpu_fgemm_avx512_any(DK__FGEMM_ARGS) {
  /* chunks of a multiple of 6 rows, so only a chunk's last tile runs short */
  const int64_t mch = (DK__CPU_FGEMM_CHUNK(K) + 5) / 6 * 6;
  int64_t mc, m, n, k, k0;
  for (mc = 0; mc < M; mc += mch) {
    const int64_t me = M - mc < mch ? M : mc + mch;
    for (k0 = 0; k0 < K; k0 += DK_CPU_F512_KC) {
      const int64_t kl = K - k0 < DK_CPU_F512_KC ? K - k0 : DK_CPU_F512_KC, K16 = kl & ~(int64_t)15;
      const __mmask16 tail = (__mmask16)((1u << (kl - K16)) - 1);
      for (n = n0; n < n1; n += DK_CPU_FGROUP512) {
        const int nn = n1 - n < DK_CPU_FGROUP512 ? (int)(n1 - n) : DK_CPU_FGROUP512;
        int r;
        /* the group's rows in f32 (missing ones repeat the first: computed, not stored) */
        dk__cpu_wdeq_avx512(t, w + (size_t)n * wrow, wrow, nn, k0, kl, wbuf, kl);
        for (r = nn; r < DK_CPU_FGROUP512; r++) memcpy(wbuf + r * kl, wbuf, (size_t)kl * sizeof(float));
        for (m = mc; m < me; m += 6) {
          const int mm = me - m < 6 ? (int)(me - m) : 6;
          const float *a0 = a + m * K + k0, *a1 = a0 + (mm > 1 ? K : 0), *a2 = a0 + (mm > 2 ? 2 * K : 0),
                      *a3 = a0 + (mm > 3 ? 3 * K : 0), *a4 = a0 + (mm > 4 ? 4 * K : 0), *a5 = a0 + (mm > 5 ? 5 * K : 0);
          __m512 c00 = _mm512_setzero_ps(), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00,
                 c13 = c00, c20 = c00, c21 = c00, c22 = c00, c23 = c00, c30 = c00, c31 = c00, c32 = c00,
                 c33 = c00, c40 = c00, c41 = c00, c42 = c00, c43 = c00, c50 = c00, c51 = c00, c52 = c00, c53 = c00;
          for (k = 0; k < K16; k += 16) DK__FG512_STEP(DK__FG512_L)
          if (K16 < kl) DK__FG512_STEP(DK__FG512_LM)
          DK__FG512_STORE(0, c00, c01, c02, c03)
          DK__FG512_STORE(1, c10, c11, c12, c13)
          DK__FG512_STORE(2, c20, c21, c22, c23)
          DK__FG512_STORE(3, c30, c31, c32, c33)
          DK__FG512_STORE(4, c40, c41, c42, c43)
          DK__FG512_STORE(5, c50, c51, c52, c53)
        }
      }
    }
  }
}
/* every dtype the class's dequantization takes but f32 (nothing to convert:
 * the panel GEMM runs) */
static dk__cpu_fgemm_fn dk__cpu_fgemm_avx512(dk_dtype dt) {
  return dt == DK_F16 || dt == DK_BF16 || dk_dtype_is_quant(dt) ? dk__cpu_fgemm_avx512_any : NULL;
}
#endif

typedef struct {
  const float *x;      /* M rows of K, f32 (x itself, or a converted copy) */
  int64_t M, N, K;
  dk_dtype wdt;
  const char *w;
  size_t wrow;
  float *y;            /* M rows of N */
  int failed;          /* a task found no scratch memory */
} dk__cpu_fgemm;

/* weight-row groups [g0, g1) */
static void dk__cpu_fgemm_task(void *ctx, int64_t g0, int64_t g1) {
  dk__cpu_fgemm *g = (dk__cpu_fgemm *)ctx;
  const int64_t n1 = g1 * DK_CPU_FUNIT < g->N ? g1 * DK_CPU_FUNIT : g->N;
  /* a group's rows in f32: q8_0's (AVX2), any dtype's (AVX-512) */
  float *wbuf = dk__cpu_scratch(0, (size_t)(DK_CPU_FWMAX * g->K));
  if (!wbuf) { __atomic_store_n(&g->failed, 1, __ATOMIC_RELAXED); return; }
  dk__cpu_k->fgemm(g->wdt)(g->wdt, g->x, g->M, g->K, g->w, g->wrow, g0 * DK_CPU_FUNIT, n1, g->y, g->N, wbuf);
}

/* o = x W^T (+ bias) for a weight the class's fgemm takes, K a multiple of 8 */
static dk_status dk__cpu_fgemm_run(const dk_tensor *o, const dk_tensor *x, const dk_tensor *w, const dk_tensor *bias,
                                   int64_t M, int64_t N, int64_t K) {
  dk__cpu_fgemm g;
  void *p = NULL, *q = NULL;
  const char *xp = (const char *)dk__cpu_ptr(x), *op = (const char *)dk__cpu_ptr(o);
  const int alias = op < xp + dk_tensor_nbytes(x) && xp < op + dk_tensor_nbytes(o);
  /* rows a pass: the copies below hold one slice (AVX-512 runs any M here),
   * except where o overlaps x, which is read whole before anything is written */
  const int64_t ms = alias || M < DK_CPU_FGEMM_MAXM ? M : DK_CPU_FGEMM_MAXM;
  int64_t m0;
  dk_status st = DK_OK;
  if (M == 0 || N == 0) return DK_OK;
  g.N = N; g.K = K; g.failed = 0;
  g.wdt = w->dtype; g.w = (const char *)dk__cpu_ptr(w); g.wrow = dk__row_bytes(w->dtype, K);
  /* f32 x is read where it lies, f32 o without a bias written where it
   * lies; otherwise (or where o overlaps x) through f32 copies */
  if (((x->dtype != DK_F32 || alias) && posix_memalign(&p, 64, (size_t)(ms * K) * sizeof(float)) != 0) ||
      ((o->dtype != DK_F32 || bias || alias) && posix_memalign(&q, 64, (size_t)(ms * N) * sizeof(float)) != 0)) {
    free(p);
    return dk__error(DK_ERR_OUT_OF_MEMORY, "dk_linear on cpu: no memory for a %lldx%lld product",
                     (long long)ms, (long long)N);
  }
  for (m0 = 0; m0 < M && st == DK_OK; m0 += ms) {
    g.M = M - m0 < ms ? M - m0 : ms;
    if (p) dk__cpu_load(x->dtype, xp, m0 * K, 1, g.M * K, (float *)p);
    g.x = p ? (const float *)p : (const float *)xp + m0 * K;
    g.y = q ? (float *)q : (float *)op + m0 * N;
    /* about 48 weight rows a piece: a piece's rows stay in L2 across chunks */
    dk__cpu_parallel((N + DK_CPU_FUNIT - 1) / DK_CPU_FUNIT, 4, dk__cpu_fgemm_task, &g);
    if (g.failed) st = dk__error(DK_ERR_OUT_OF_MEMORY, "dk_linear on cpu: no scratch memory");
    else if (q) st = dk__cpu_bias_store(o, bias, g.y, m0, g.M, N);
  }
  free(p);
  free(q);
  return st;
}

#endif
