/* backends/cpu_fgemm.h — the prompt product (dk_linear with more than
 * DK_CPU_GEMV_MAXM rows, in slices of DK_CPU_FGEMM_MAXM) of f16,
 * bf16 and every block format the integer GEMM of cpu_igemm.h does not take
 * (q8_0, q6_K, q2_K, q3_K without VNNI; precise weights), in row form: each
 * output is the dot product of an activation row and a weight row, 4
 * activation rows by 3 weight rows at a time in ymm (AVX2), 6 by 4 in zmm
 * (AVX-512, below). A group's weight rows are decoded to f32 once per
 * chunk of activation rows (by the class's wdeq, the panel GEMM's
 * dequantization) in passes over K, and read from L1 by every tile; a pass
 * after the first adds to what the earlier ones stored. From 32 rows the
 * AVX2 class runs the whole panels of 16 in a transposed form instead (below
 * DK__FGEMM_ARGS). Included by backends/cpu.h, which chooses it in
 * dk__cpu_linear and puts the entries in the kernel tables.
 *
 * Why not the panel GEMM (a C tile in registers, B converted and transposed
 * into panels): at a prompt's 64 rows every weight is used 64 times, and
 * converting and transposing it cost half as much as those multiply-adds
 * (perf, 100M f16 prompt: packing 25 %, micro-kernel 48 %). Here, per 8
 * values: 3 weight loads, 4 activation loads and 12 FMAs, the 12
 * accumulators reduced once per tile. 2-core EPYC (Zen 3), f16 weights
 * converted in registers as they were loaded (this file's first form),
 * GFLOP/s panel -> row form: 64x2048x768 78-85 -> 95-118, 64x768x2048 82-92
 * -> 114-139, 16x2048x768 34-39 -> 65-73, 64x4096x4096 70 -> 111; at 512
 * rows the two were level (113-116 / 112-114), and the panel GEMM took the
 * AVX2 class's products past 256 rows until the transposed form below beat
 * it there too (2026-12-06, 512 rows, in one process, GFLOP/s, panel ->
 * transposed: f16 x2048x768 149-153 -> 150-169, x768x2048 134-166 ->
 * 132-174, x768x768 129-163 -> 146-180, x192x768 90-108 -> 151-172; q8_0
 * and q6_K x2048x768 165-167 -> 172-176). q8_0 rows
 * decoded to f32 whole: 64x2048x768 77-98 -> 100-117, but at K = 2048 the
 * rows (24 KB) crowded L1 (87 -> 66; in passes of 512 level with the panel
 * GEMM). Hence passes (DK_CPU_F2_KC). Intel Xeon (Emerald Rapids), the AVX2
 * class, GFLOP/s, f16 in registers / q8_0 to K = 1024 then the panel GEMM
 * / q6_K and q3_K in the panel GEMM -> every dtype from f32 rows in passes
 * of 1024: f16 64x2048x768 142-144 -> 158, 64x768x2048 151-152 -> 150-151,
 * 64x768x768 150-152 -> 164; q8_0 64x768x2048 101-128 -> 154-157; q6_K
 * 123-136 -> 139-159; q3_K 120-131 -> 133-155 (passes of 512 on that
 * machine: f16 3-5 % below 1024; on AMD Zen 3 too, DK_CPU_F2_KC). Not kept: f32
 * weights (nothing to convert; 64 rows 89 -> 86, 512 rows 93 -> 67) and q8_0
 * decoded in registers per use (a multiply per 8 values on the FMA ports:
 * slower than the panel GEMM).
 *
 * Blocking: activation rows in chunks whose f32 copy stays in L2 (256 KB:
 * 64 rows at K = 768, 16 at K = 4096), so a tile reads its 4 rows from L1/L2
 * and the 3 weight rows (a few KB) from L1 for every chunk row; a piece's
 * weight rows (about 48) are read from memory once, from L2 for the other
 * chunks. */
#ifndef DK_BACKEND_CPU_FGEMM_H
#define DK_BACKEND_CPU_FGEMM_H

#define DK_CPU_FGEMM_MAXM 256   /* rows a slice: x's f32 copy and panels hold one */
#define DK_CPU_FGROUP 3   /* weight rows per tile (AVX2; AVX-512: DK_CPU_FGROUP512) */
#define DK_CPU_FUNIT 12   /* weight rows the pool deals in: whole tiles of either class */
#define DK_CPU_FWMAX 4    /* the most weight rows a tile decodes to f32 */
/* AVX2: weight rows decoded to f32 in passes of this many values (three
 * rows, 12 KB, beside a tile's four activation rows, 16 KB). Also where L1d
 * is 32 KB: passes of 512 there (AMD Zen 3) had been assumed, not measured,
 * and were slower. One thread, f16, GFLOP/s, 512 -> 1024: 64x2048x768
 * 74-76 -> 81-85, 64x768x2048 70-72 -> 75-77, 64x1024x4096 49-58 -> 56-62;
 * q8_0, q6_K and q3_K 64x768x768 71-76 -> 78-81 */
#define DK_CPU_F2_KC 1024

/* rows of A in a chunk: its f32 copy in about 256 KB, a multiple of 4 in [4, 64] */
#define DK__CPU_FGEMM_CHUNK(K) ((K) >= 16384 ? 4 : (K) <= 1024 ? 64 : 65536 / (K) / 4 * 4)

#ifdef DK_CPU_X86
/* c[m][n] = a_m . w_n for m in [0, M), n in [n0, n1): a f32 rows of K
 * (K a multiple of 8), w rows of wrow bytes, c rows of ldc. A tile's
 * missing rows (M or n1 - n0 not a multiple of 4 or 3) read a present row
 * again and are not stored. */
#define DK__FGEMM_FMA3(AV, C0, C1, C2)                                         \
  C0 = _mm256_fmadd_ps(AV, w0v, C0);                                           \
  C1 = _mm256_fmadd_ps(AV, w1v, C1);                                           \
  C2 = _mm256_fmadd_ps(AV, w2v, C2);
/* the class's weight dequantization (backends/cpu.h, after this file) */
DK_CPU_AVX2 static int dk__cpu_wdeq_avx2(dk_dtype dt, const char *w, size_t wrow, int64_t rows, int64_t k0, int64_t kc,
                                         float *dst, int64_t ldd);
/* c[0..nn) (+)= the sums of x, y, z: add to what is there when add */
DK_CPU_AVX2_INLINE void dk__cpu_hsum3_acc(__m256 x, __m256 y, __m256 z, float *c, int nn, int add) {
  const __m128i mask = _mm_cmpgt_epi32(_mm_set1_epi32(nn), _mm_setr_epi32(0, 1, 2, 3));
  const __m128 x4 = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  const __m128 y4 = _mm_add_ps(_mm256_castps256_ps128(y), _mm256_extractf128_ps(y, 1));
  const __m128 z4 = _mm_add_ps(_mm256_castps256_ps128(z), _mm256_extractf128_ps(z, 1));
  __m128 s = _mm_hadd_ps(_mm_hadd_ps(x4, y4), _mm_hadd_ps(z4, _mm_setzero_ps()));
  if (add) s = _mm_add_ps(s, _mm_maskload_ps(c, mask));
  _mm_maskstore_ps(c, mask, s);
}
#define DK__FGEMM_ARGS                                                         \
  dk_dtype t, const float *a, const float *xt, int64_t M, int64_t K, const char *w, size_t wrow, int64_t n0, int64_t n1, \
      float *c, int64_t ldc, float *wbuf
/* The transposed form (AVX2, DK_CPU_XT_MINM rows and up): 6 weight rows by
 * 16 activation rows a tile, as c^T = W x^T. The activations are packed once
 * a call (dk__cpu_fgemm_run) into panels of 16 rows, [K][16]; the group's 6
 * weight rows are decoded to f32 rows and broadcast a value at a time. Per k:
 * 2 panel loads, 6 broadcasts, 12 FMAs, the accumulators kept over a pass of
 * up to DK_CPU_XT_KC values. Against the row form below, which reads 4
 * activation vectors (128 bytes) from L2 every 12 FMAs, a tile reads 64 (the
 * panel) and 24 (the broadcasts, from L1). The tile's sums go to c through
 * a 6x16 buffer, transposed by scalar stores (about 2 % of a pass of 768).
 * The next group's weight bytes are prefetched a slice per activation panel:
 * past L3 the decode otherwise waits on memory between groups.
 * 2-core EPYC (Zen 3), f16, the kernels called from one thread / two,
 * GFLOP/s, row form -> transposed form, alternating in one process:
 *   64x2048x768, weights in L3:      85 / 170 -> 91 / 180
 *   64x768x2048, weights in L3:      78 / 152-155 -> 88-89 / 175-177
 *   weights past L3 (32 matrices): 1.07-1.33x with the prefetch, 0.98-1.2x
 *   without; 16 rows level, 24 rows (panels padded to 32) 0.86x, hence
 *   DK_CPU_XT_MINM, and rows past the last whole panel run in the row form.
 * The micro-kernel alone, panels in L2: 98-101 (FMA peak about 130).
 * dk_linear, two threads, beside ggml's mul_mat (OMP_WAIT_POLICY=passive):
 * 64x2048x768 1.04-1.07x, 64x768x2048 0.94-0.99x, 256 rows 1.03-1.05x. At a
 * model's 64-row prompt (100M, build/llama, three alternations) f16 654-664
 * -> 698-746 tok/s, q6_K 619-633 -> 680-732, q8_0 637-688 -> 647-747; at 512
 * rows both forms run 512x2048x768 at about 160 (no change). */
#define DK_CPU_XT_MINM 32
#define DK_CPU_XT_KC 768
#define DK__XT_ROW(i)                                                          \
  av = _mm256_broadcast_ss(w##i + p);                                          \
  c##i##a = _mm256_fmadd_ps(av, b0, c##i##a);                                  \
  c##i##b = _mm256_fmadd_ps(av, b1, c##i##b);
#define DK__XT_ST(i)                                                           \
  _mm256_storeu_ps(out + i * 16, c##i##a);                                     \
  _mm256_storeu_ps(out + i * 16 + 8, c##i##b);
/* out[i][j] = sum over p < kc of wr[i][p] * xt[p][j], i < 6, j < 16 */
DK_CPU_AVX2 static void dk__cpu_xt_micro_avx2(int64_t kc, const float *const *wr, const float *xt, float *out) {
  const float *w0 = wr[0], *w1 = wr[1], *w2 = wr[2], *w3 = wr[3], *w4 = wr[4], *w5 = wr[5];
  __m256 c0a = _mm256_setzero_ps(), c0b = c0a, c1a = c0a, c1b = c0a, c2a = c0a, c2b = c0a, c3a = c0a, c3b = c0a;
  __m256 c4a = c0a, c4b = c0a, c5a = c0a, c5b = c0a, av;
  int64_t p;
  for (p = 0; p < kc; p++) {
    const __m256 b0 = _mm256_loadu_ps(xt + p * 16), b1 = _mm256_loadu_ps(xt + p * 16 + 8);
    DK__XT_ROW(0) DK__XT_ROW(1) DK__XT_ROW(2) DK__XT_ROW(3) DK__XT_ROW(4) DK__XT_ROW(5)
  }
  DK__XT_ST(0) DK__XT_ST(1) DK__XT_ST(2) DK__XT_ST(3) DK__XT_ST(4) DK__XT_ST(5)
}
/* rows [0, M16) of c, M16 a multiple of 16, from xt's panels */
DK_CPU_AVX2 static void dk__cpu_xt_gemm_avx2(dk_dtype t, const float *xt, int64_t M16, int64_t K, const char *w, size_t wrow,
                                             int64_t n0, int64_t n1, float *c, int64_t ldc, float *wbuf) {
  /* passes of equal length on the 256-value grid (every block format's) */
  const int64_t np = (K + DK_CPU_XT_KC - 1) / DK_CPU_XT_KC, kcp = ((K + np - 1) / np + 255) / 256 * 256;
  const int64_t panels = M16 / 16;
  float out[96];
  int64_t k0, n, m, i, j;
  for (k0 = 0; k0 < K; k0 += kcp) {
    const int64_t kl = K - k0 < kcp ? K - k0 : kcp;
    const size_t off = dk__row_bytes(t, k0), lpr = (dk__row_bytes(t, kl) + 63) / 64;   /* cache lines a row */
    for (n = n0; n < n1; n += 6) {
      const int nn = n1 - n < 6 ? (int)(n1 - n) : 6;
      const int64_t nx = n1 - n - nn < 6 ? n1 - n - nn : 6;   /* the next group's rows */
      const size_t lines = (size_t)nx * lpr, per = (lines + (size_t)panels - 1) / (size_t)panels;
      const float *wr[6];
      size_t li = 0;
      dk__cpu_wdeq_avx2(t, w + (size_t)n * wrow, wrow, nn, k0, kl, wbuf, kl);
      for (i = 0; i < 6; i++) wr[i] = wbuf + (i < nn ? i : 0) * kl;   /* a missing row: computed, not stored */
      for (m = 0; m < M16; m += 16) {
        const size_t le = li + per < lines ? li + per : lines;
        for (; li < le; li++) _mm_prefetch(w + (size_t)(n + nn + (int64_t)(li / lpr)) * wrow + off + li % lpr * 64, _MM_HINT_T0);
        dk__cpu_xt_micro_avx2(kl, wr, xt + m * K + k0 * 16, out);
        for (j = 0; j < 16; j++) {
          float *cr = c + (m + j) * ldc + n;
          if (k0)
            for (i = 0; i < nn; i++) cr[i] += out[i * 16 + j];
          else
            for (i = 0; i < nn; i++) cr[i] = out[i * 16 + j];
        }
      }
    }
  }
}
DK_CPU_AVX2 static void dk__cpu_fgemm_avx2_any(DK__FGEMM_ARGS) {
  const int64_t mch = DK__CPU_FGEMM_CHUNK(K);
  int64_t mc = 0, m, n, k, k0;
  if (xt) {   /* whole panels in the transposed form, the rest (under 16 rows) here */
    mc = M / 16 * 16;
    dk__cpu_xt_gemm_avx2(t, xt, mc, K, w, wrow, n0, n1, c, ldc, wbuf);
  }
  for (; mc < M; mc += mch) {
    const int64_t me = M - mc < mch ? M : mc + mch;
    for (k0 = 0; k0 < K; k0 += DK_CPU_F2_KC) {
      const int64_t kl = K - k0 < DK_CPU_F2_KC ? K - k0 : DK_CPU_F2_KC;
      for (n = n0; n < n1; n += DK_CPU_FGROUP) {
        const int nn = n1 - n < DK_CPU_FGROUP ? (int)(n1 - n) : DK_CPU_FGROUP;
        /* the group's rows in f32 (a missing one reads the first: computed, not stored) */
        const float *w0 = wbuf, *w1 = nn > 1 ? wbuf + kl : wbuf, *w2 = nn > 2 ? wbuf + 2 * kl : wbuf;
        dk__cpu_wdeq_avx2(t, w + (size_t)n * wrow, wrow, nn, k0, kl, wbuf, kl);
        for (m = mc; m < me; m += 4) {
          const int mm = me - m < 4 ? (int)(me - m) : 4;
          const float *a0 = a + m * K + k0, *a1 = a0 + (mm > 1 ? K : 0), *a2 = a0 + (mm > 2 ? 2 * K : 0),
                      *a3 = a0 + (mm > 3 ? 3 * K : 0);
          __m256 c00 = _mm256_setzero_ps(), c01 = c00, c02 = c00, c10 = c00, c11 = c00, c12 = c00;
          __m256 c20 = c00, c21 = c00, c22 = c00, c30 = c00, c31 = c00, c32 = c00;
          for (k = 0; k < kl; k += 8) {
            const __m256 w0v = _mm256_loadu_ps(w0 + k), w1v = _mm256_loadu_ps(w1 + k), w2v = _mm256_loadu_ps(w2 + k);
            __m256 av = _mm256_loadu_ps(a0 + k);
            DK__FGEMM_FMA3(av, c00, c01, c02)
            av = _mm256_loadu_ps(a1 + k);
            DK__FGEMM_FMA3(av, c10, c11, c12)
            av = _mm256_loadu_ps(a2 + k);
            DK__FGEMM_FMA3(av, c20, c21, c22)
            av = _mm256_loadu_ps(a3 + k);
            DK__FGEMM_FMA3(av, c30, c31, c32)
          }
          dk__cpu_hsum3_acc(c00, c01, c02, c + m * ldc + n, nn, k0 > 0);
          if (mm > 1) dk__cpu_hsum3_acc(c10, c11, c12, c + (m + 1) * ldc + n, nn, k0 > 0);
          if (mm > 2) dk__cpu_hsum3_acc(c20, c21, c22, c + (m + 2) * ldc + n, nn, k0 > 0);
          if (mm > 3) dk__cpu_hsum3_acc(c30, c31, c32, c + (m + 3) * ldc + n, nn, k0 > 0);
        }
      }
    }
  }
}
/* every dtype the class's dequantization takes but f32 (nothing to convert:
 * the panel GEMM runs) */
static dk__cpu_fgemm_fn dk__cpu_fgemm_avx2(dk_dtype dt) {
  return dt == DK_F16 || dt == DK_BF16 || dk_dtype_is_quant(dt) ? dk__cpu_fgemm_avx2_any : NULL;
}

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
  (void)xt;   /* its class packs none (xt_minm 0) */
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
        for (r = nn; r < DK_CPU_FGROUP512; r++)   /* in registers: clang made a memcpy a call out of the kernel */
          for (k = 0; k < kl; k += 16) {
            const __mmask16 mk = k + 16 <= kl ? (__mmask16)0xffff : tail;
            _mm512_mask_storeu_ps(wbuf + r * kl + k, mk, _mm512_maskz_loadu_ps(mk, wbuf + k));
          }
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
  float *xt;           /* x's whole panels of 16 rows, [K][16] each (NULL: none) */
  int64_t M, N, K;
  dk_dtype wdt;
  const char *w;
  size_t wrow;
  float *y;            /* M rows of N */
} dk__cpu_fgemm;

/* weight-row groups [g0, g1) */
static void dk__cpu_fgemm_task(void *ctx, int64_t g0, int64_t g1) {
  dk__cpu_fgemm *g = (dk__cpu_fgemm *)ctx;
  const int64_t n1 = g1 * DK_CPU_FUNIT < g->N ? g1 * DK_CPU_FUNIT : g->N;
  /* a group's rows in f32: 3 or 4 whole rows (the row forms), 6 of a pass (the transposed form) */
  const int64_t xtn = 6 * (g->K < DK_CPU_XT_KC ? g->K : DK_CPU_XT_KC);
  float *wbuf = dk__cpu_scratch(0, (size_t)(DK_CPU_FWMAX * g->K > xtn ? DK_CPU_FWMAX * g->K : xtn));
  if (!wbuf) return;   /* dk__cpu_run_op reports it */
  dk__cpu_k->fgemm(g->wdt)(g->wdt, g->x, g->xt, g->M, g->K, g->w, g->wrow, g0 * DK_CPU_FUNIT, n1, g->y, g->N, wbuf);
}

/* panels [p0, p1) of x into xt */
static void dk__cpu_fgemm_xt_task(void *ctx, int64_t p0, int64_t p1) {
  dk__cpu_fgemm *g = (dk__cpu_fgemm *)ctx;
  for (; p0 < p1; p0++) dk__cpu_k->wpack(g->x + p0 * 16 * g->K, g->K, g->K, g->xt + p0 * 16 * g->K);
}

/* o = x W^T (+ bias) for a weight the class's fgemm takes, K a multiple of 8 */
static dk_status dk__cpu_fgemm_run(const dk_tensor *o, const dk_tensor *x, const dk_tensor *w, const dk_tensor *bias,
                                   int64_t M, int64_t N, int64_t K) {
  dk__cpu_fgemm g;
  void *p = NULL, *q = NULL, *xb = NULL;
  const char *xp = (const char *)dk__cpu_ptr(x), *op = (const char *)dk__cpu_ptr(o);
  const int alias = op < xp + dk_tensor_nbytes(x) && xp < op + dk_tensor_nbytes(o);
  /* rows a pass: the copies below hold one slice (AVX-512 runs any M here),
   * except where o overlaps x, which is read whole before anything is written */
  const int64_t ms = alias || M < DK_CPU_FGEMM_MAXM ? M : DK_CPU_FGEMM_MAXM;
  int64_t m0;
  dk_status st = DK_OK;
  const int xtp = dk__cpu_k->xt_minm && ms >= dk__cpu_k->xt_minm;   /* pack panels of 16 */
  if (M == 0 || N == 0) return DK_OK;
  g.N = N; g.K = K;
  g.wdt = w->dtype; g.w = (const char *)dk__cpu_ptr(w); g.wrow = dk__row_bytes(w->dtype, K);
  /* f32 x is read where it lies, f32 o without a bias written where it
   * lies; otherwise (or where o overlaps x) through f32 copies */
  if (((x->dtype != DK_F32 || alias) && posix_memalign(&p, 64, (size_t)(ms * K) * sizeof(float)) != 0) ||
      ((o->dtype != DK_F32 || bias || alias) && posix_memalign(&q, 64, (size_t)(ms * N) * sizeof(float)) != 0) ||
      (xtp && posix_memalign(&xb, 64, (size_t)(ms / 16 * 16 * K) * sizeof(float)) != 0)) {
    free(p);
    free(q);
    return dk__error(DK_ERR_OUT_OF_MEMORY, "dk_linear on cpu: no memory for a %lldx%lld product",
                     (long long)ms, (long long)N);
  }
  for (m0 = 0; m0 < M && st == DK_OK && !dk__cpu_short; m0 += ms) {
    g.M = M - m0 < ms ? M - m0 : ms;
    if (p) dk__cpu_load(x->dtype, xp, m0 * K, 1, g.M * K, (float *)p);
    g.x = p ? (const float *)p : (const float *)xp + m0 * K;
    g.y = q ? (float *)q : (float *)op + m0 * N;
    g.xt = xb && g.M >= dk__cpu_k->xt_minm ? (float *)xb : NULL;   /* a short last slice: the row form */
    if (g.xt) dk__cpu_parallel(g.M / 16, 1, dk__cpu_fgemm_xt_task, &g);
    /* about 48 weight rows a piece: a piece's rows stay in L2 across chunks */
    dk__cpu_parallel((N + DK_CPU_FUNIT - 1) / DK_CPU_FUNIT, 4, dk__cpu_fgemm_task, &g);
    if (q && !dk__cpu_short) st = dk__cpu_bias_store(o, bias, g.y, m0, g.M, N);
  }
  free(p);
  free(q);
  free(xb);
  return st;
}

#endif
