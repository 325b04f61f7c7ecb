/* backends/cpu_fattn.h — prompt attention in tiles (flash attention's
 * order): a tile of query rows (up to DK_CPU_FA_ROWS: whole tokens, each
 * with the query heads of one KV head) meets the keys a block of
 * DK_CPU_FA_BK at a time; scores, the running max and sum of the softmax
 * (rescaled as the max grows) and the weighted sum of V rows all stay in
 * the task's scratch, in L1/L2. Included by backends/cpu.h, which runs it
 * from dk__cpu_attention for prompts (more than DK_CPU_FA_MINT tokens).
 *
 * Why: the row form (dk__cpu_attention_task) takes one token and one KV
 * head at a time, so every token reads the whole cache up to itself and
 * does a few dot products a key row: 47-67 GFLOP/s, 43 % of a 512-token
 * prompt of the 100M model (Intel Xeon VM, both cores, AMX class). Here
 * both products are small GEMMs: S = Q K^T (K transposed to f32 once a
 * call, for every tile) and O += P V (f32 V rows read where they lie),
 * through one micro-kernel, c[mr][nc] (+)= a[mr][kn] b[kn][nc], of the
 * class (6 x 16 in ymm, 8 x 32 in zmm), and the softmax step of the
 * class (16 exponentials at a time in zmm). 512 tokens, 12/3 heads of 64:
 * 6056 -> 2293 us (176 GFLOP/s; avx2 6289 -> 3141); Gemma's 4/1 heads of
 * 256: 5545 -> 2428 us; 2048 tokens: 125 -> 33 ms.
 *
 * Error: q is scaled before the product (one rounding more than scaling
 * each score); the softmax sums are in f32 per block of keys (the row
 * form's in double over the row). Keys past a query's causal limit (or
 * position), and before its window (dk_attention_window), are masked to
 * zero weight, as in the row form. */
#ifndef DK_BACKEND_CPU_FATTN_H
#define DK_BACKEND_CPU_FATTN_H

#define DK_CPU_FA_BK 64     /* keys a block */
#define DK_CPU_FA_ROWS 64   /* query rows a tile, at most */
/* tokens above which a prompt takes the tiles: at 12 and 16 tokens the row
 * form was 1-2 us faster (of 16-19), at 64 the tiles 25-40 % */
#define DK_CPU_FA_MINT 16
#define DK_CPU_FA_MAXD 512  /* head sizes up to this (a K row is converted on the stack) */

static int64_t dk__cpu_att_lim(const dk_call *c, int64_t t, int64_t S);
static int64_t dk__cpu_att_beg(const dk_call *c, int64_t lim);

typedef struct {
  const dk_call *c;
  int64_t T, Hq, Hkv, D, Dv, S, grp, bt, ntile;   /* bt: tokens a tile */
  int64_t smax, ldk;    /* keys any query sees; kt's row length (smax in whole blocks) */
  float *kt;            /* K^T in f32: [Hkv][D][ldk], made once for every tile */
  const float *vf;      /* V in f32, rows of vs floats (v itself, or a converted copy) */
  int64_t vs;
} dk__cpu_fa;

/* scratch floats a task needs: its q rows, P and O */
static size_t dk__cpu_fa_floats(int64_t D, int64_t Dv) {
  return (size_t)(DK_CPU_FA_ROWS * D + DK_CPU_FA_ROWS * DK_CPU_FA_BK + DK_CPU_FA_ROWS * Dv);
}

#ifdef DK_CPU_X86
/* c[i][0..nc) = (acc ? c[i][0..nc) : 0) + sum_k a[i lda + k] b[k ldb + 0..nc)
 * for rows i < mr (1..famr); nc a multiple of 8 up to the kernel's width. A
 * missing row reads row 0 again and is not stored. */
#define DK__FA_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)

DK_CPU_AVX2 static void dk__cpu_famk_avx2(int mr, int nc, int64_t kn, const float *a, int64_t lda, const float *b,
                                          int64_t ldb, float *c, int64_t ldc, int acc) {
#define DK__FA_DECL(i) const float *a##i = a + (i < mr ? i : 0) * lda; __m256 c##i##0 = _mm256_setzero_ps(), c##i##1 = c##i##0;
#define DK__FA_FMA2(i) { const __m256 av = _mm256_broadcast_ss(a##i + k); c##i##0 = _mm256_fmadd_ps(av, b0, c##i##0); c##i##1 = _mm256_fmadd_ps(av, b1, c##i##1); }
#define DK__FA_FMA1(i) { const __m256 av = _mm256_broadcast_ss(a##i + k); c##i##0 = _mm256_fmadd_ps(av, b0, c##i##0); }
#define DK__FA_STORE(i)                                                                      \
  if (i < mr) {                                                                              \
    float *ci = c + i * ldc;                                                                 \
    if (acc) c##i##0 = _mm256_add_ps(c##i##0, _mm256_loadu_ps(ci));                          \
    _mm256_storeu_ps(ci, c##i##0);                                                           \
    if (nc > 8) {                                                                            \
      if (acc) c##i##1 = _mm256_add_ps(c##i##1, _mm256_loadu_ps(ci + 8));                    \
      _mm256_storeu_ps(ci + 8, c##i##1);                                                     \
    }                                                                                        \
  }
  int64_t k;
  DK__FA_ROWS(DK__FA_DECL)
  if (nc > 8) {
    for (k = 0; k < kn; k++) {
      const __m256 b0 = _mm256_loadu_ps(b + k * ldb), b1 = _mm256_loadu_ps(b + k * ldb + 8);
      DK__FA_ROWS(DK__FA_FMA2)
    }
  } else {
    for (k = 0; k < kn; k++) {
      const __m256 b0 = _mm256_loadu_ps(b + k * ldb);
      DK__FA_ROWS(DK__FA_FMA1)
    }
  }
  DK__FA_ROWS(DK__FA_STORE)
#undef DK__FA_DECL
#undef DK__FA_FMA2
#undef DK__FA_FMA1
#undef DK__FA_STORE
}

#define DK__FA_ROWS8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
/* the same, 8 rows by up to 32 columns: 16 accumulators in zmm */
DK_CPU_AVX512 static void dk__cpu_famk_avx512(int mr, int nc, int64_t kn, const float *a, int64_t lda, const float *b,
                                              int64_t ldb, float *c, int64_t ldc, int acc) {
  /* columns [0, 16) and [16, 32) under masks: nc is 8, 16, 24 or 32 */
  const __mmask16 m0 = (__mmask16)(nc >= 16 ? 0xffff : 0xff), m1 = (__mmask16)(nc >= 32 ? 0xffff : nc > 16 ? 0xff : 0);
#define DK__FA_DECL(i) const float *a##i = a + (i < mr ? i : 0) * lda; __m512 c##i##0 = _mm512_setzero_ps(), c##i##1 = c##i##0;
#define DK__FA_FMA(i) { const __m512 av = _mm512_set1_ps(a##i[k]); c##i##0 = _mm512_fmadd_ps(av, b0, c##i##0); c##i##1 = _mm512_fmadd_ps(av, b1, c##i##1); }
#define DK__FA_STORE(i)                                                                      \
  if (i < mr) {                                                                              \
    float *ci = c + i * ldc;                                                                 \
    if (acc) c##i##0 = _mm512_add_ps(c##i##0, _mm512_maskz_loadu_ps(m0, ci));                \
    _mm512_mask_storeu_ps(ci, m0, c##i##0);                                                  \
    if (m1) {                                                                                \
      if (acc) c##i##1 = _mm512_add_ps(c##i##1, _mm512_maskz_loadu_ps(m1, ci + 16));         \
      _mm512_mask_storeu_ps(ci + 16, m1, c##i##1);                                           \
    }                                                                                        \
  }
  int64_t k;
  DK__FA_ROWS8(DK__FA_DECL)
  for (k = 0; k < kn; k++) {
    const __m512 b0 = _mm512_maskz_loadu_ps(m0, b + k * ldb), b1 = _mm512_maskz_loadu_ps(m1, b + k * ldb + 16);
    DK__FA_ROWS8(DK__FA_FMA)
  }
  DK__FA_ROWS8(DK__FA_STORE)
#undef DK__FA_DECL
#undef DK__FA_FMA
#undef DK__FA_STORE
}
#undef DK__FA_ROWS
#undef DK__FA_ROWS8

/* The softmax step of one block for one row: p[0..lr) are its scores (keys
 * past lr are masked), np the block's columns rounded up to 8. The row's
 * running max *mx and sum *l move to the block's; p becomes the weights
 * exp(s - max), 0 past lr; the row's output o[0..Dv) takes the factor
 * exp(old max - new max) where the max moved. */
DK_CPU_AVX2 static void dk__cpu_fa_softmax_avx2(float *p, int64_t lr, int64_t np, float *mx, float *l, float *o,
                                                int64_t Dv) {
  const __m256 ninf = _mm256_set1_ps(-INFINITY), lo = _mm256_set1_ps(-87.0f);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256 mv = ninf, sv = _mm256_setzero_ps(), sh;
  float m, alpha;
  int64_t j;
  for (j = 0; j < np; j += 8) {
    const __m256 keep = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)(lr - j)), lane));
    const __m256 x = _mm256_blendv_ps(ninf, _mm256_loadu_ps(p + j), keep);
    _mm256_storeu_ps(p + j, x);
    mv = _mm256_max_ps(x, mv);   /* a NaN score is skipped here and comes through the exp */
  }
  m = dk__cpu_hmax(mv);
  m = m > *mx ? m : *mx;
  /* the output is still zero where nothing was seen (*mx -inf) */
  alpha = *mx == -INFINITY || *mx == m ? 1.0f : _mm256_cvtss_f32(dk__cpu_exp8(_mm256_set1_ps(*mx - m)));
  if (alpha != 1.0f)
    for (j = 0; j < Dv; j += 8) _mm256_storeu_ps(o + j, _mm256_mul_ps(_mm256_loadu_ps(o + j), _mm256_set1_ps(alpha)));
  /* nothing above -inf yet: shifting by 0 makes every weight 0 */
  sh = _mm256_set1_ps(m == -INFINITY ? 0.0f : m);
  for (j = 0; j < np; j += 8) {
    const __m256 x = _mm256_sub_ps(_mm256_loadu_ps(p + j), sh);
    __m256 e = _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LT_OQ), dk__cpu_exp8(x));   /* masked: -inf -> 0 */
    e = _mm256_blendv_ps(e, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));                     /* NaN stays NaN */
    _mm256_storeu_ps(p + j, e);
    sv = _mm256_add_ps(sv, e);
  }
  *l = *l * alpha + dk__cpu_hsum(sv);
  *mx = m;
}

/* the same in zmm: 16 exponentials at a time */
/* (maskz forms with every lane: g++ 12's plain ones read an undefined
 * vector, which its -Werror C++ build refuses) */
#define DK__FA_ALL ((__mmask16)0xffff)
#define DK__FA_HALF(v, i) _mm512_maskz_extractf32x8_ps((__mmask8)0xff, v, i)   /* ymm half i of zmm v */
DK_CPU_AVX512_INLINE __m512 dk__cpu_exp16(__m512 x) {   /* dk__cpu_exp8's polynomial */
  const __m512 l2e = _mm512_set1_ps(1.44269504088896341f), c1 = _mm512_set1_ps(0.693359375f),
               c2 = _mm512_set1_ps(-2.12194440e-4f);
  __m512 n, r, r2, p;
  __m512i e;
  x = _mm512_maskz_min_ps(DK__FA_ALL, _mm512_maskz_max_ps(DK__FA_ALL, x, _mm512_set1_ps(-87.0f)), _mm512_set1_ps(88.0f));
  n = _mm512_maskz_roundscale_ps(DK__FA_ALL, _mm512_mul_ps(x, l2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm512_fnmadd_ps(n, c1, x);
  r = _mm512_fnmadd_ps(n, c2, r);
  p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  r2 = _mm512_mul_ps(r, r);
  p = _mm512_fmadd_ps(p, r2, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  e = _mm512_maskz_slli_epi32(DK__FA_ALL, _mm512_add_epi32(_mm512_maskz_cvtps_epi32(DK__FA_ALL, n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}
DK_CPU_AVX512 static void dk__cpu_fa_softmax_avx512(float *p, int64_t lr, int64_t np, float *mx, float *l, float *o,
                                                    int64_t Dv) {
  const __m512 ninf = _mm512_set1_ps(-INFINITY), lo = _mm512_set1_ps(-87.0f);
  __m512 mv = ninf, sv = _mm512_setzero_ps(), sh;
  float m, alpha;
  int64_t j;
  for (j = 0; j < np; j += 16) {
    const __mmask16 in = (__mmask16)(np - j >= 16 ? 0xffff : 0xff);   /* np is a multiple of 8 */
    const __mmask16 keep = (__mmask16)(lr - j >= 16 ? 0xffff : lr - j <= 0 ? 0 : (1u << (lr - j)) - 1);
    const __m512 x = _mm512_mask_loadu_ps(ninf, keep, p + j);
    _mm512_mask_storeu_ps(p + j, in, x);
    mv = _mm512_maskz_max_ps(DK__FA_ALL, x, mv);   /* a NaN score is skipped here and comes through the exp */
  }
  m = dk__cpu_hmax(_mm256_max_ps(DK__FA_HALF(mv, 0), DK__FA_HALF(mv, 1)));
  m = m > *mx ? m : *mx;
  alpha = *mx == -INFINITY || *mx == m ? 1.0f : _mm_cvtss_f32(_mm512_maskz_extractf32x4_ps((__mmask8)0xf, dk__cpu_exp16(_mm512_set1_ps(*mx - m)), 0));
  if (alpha != 1.0f)   /* Dv is a multiple of 8 */
    for (j = 0; j < Dv; j += 16) {
      const __mmask16 in = (__mmask16)(Dv - j >= 16 ? 0xffff : 0xff);
      _mm512_mask_storeu_ps(o + j, in, _mm512_mul_ps(_mm512_maskz_loadu_ps(in, o + j), _mm512_set1_ps(alpha)));
    }
  sh = _mm512_set1_ps(m == -INFINITY ? 0.0f : m);   /* as in the avx2 form */
  for (j = 0; j < np; j += 16) {
    const __mmask16 in = (__mmask16)(np - j >= 16 ? 0xffff : 0xff);
    const __m512 x = _mm512_sub_ps(_mm512_maskz_loadu_ps(in, p + j), sh);
    /* masked keys (-inf) and lanes past np: 0 */
    __m512 e = _mm512_maskz_mov_ps(in & _mm512_cmp_ps_mask(x, lo, _CMP_NLT_UQ), dk__cpu_exp16(x));
    e = _mm512_mask_mov_ps(e, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);                     /* NaN stays NaN */
    _mm512_mask_storeu_ps(p + j, in, e);
    sv = _mm512_add_ps(sv, e);
  }
  *l = *l * alpha + dk__cpu_hsum(_mm256_add_ps(DK__FA_HALF(sv, 0), DK__FA_HALF(sv, 1)));
  *mx = m;
}
#undef DK__FA_ALL
#undef DK__FA_HALF

#endif

/* one tile: tokens [t0, t1) of KV head g (plain C: the class's kernels do
 * the vector work, and this calls dk__cpu_load/store, which the kernels
 * must not: tools/check_cpu_isa.sh) */
static void dk__cpu_fa_tile(const dk__cpu_fa *f, int64_t t0, int64_t t1, int64_t g, float *ws) {
  const dk_call *c = f->c;
  const dk_tensor *o = c->t[0], *q = c->t[1];
  const int64_t D = f->D, Dv = f->Dv, grp = f->grp, BK = DK_CPU_FA_BK, R = (t1 - t0) * grp;
  const int nr = dk__cpu_k->fanr, fmr = dk__cpu_k->famr;
  float *qs = ws, *p = qs + DK_CPU_FA_ROWS * D, *ob = p + DK_CPU_FA_ROWS * BK;
  const float *kt = f->kt + g * D * f->ldk;
  float mx[DK_CPU_FA_ROWS], l[DK_CPU_FA_ROWS];
  int64_t lim[DK_CPU_FA_ROWS], beg[DK_CPU_FA_ROWS], smax = 0, smin = f->S, s0, t, i, j;
  for (t = t0; t < t1; t++) {
    lim[t - t0] = dk__cpu_att_lim(c, t, f->S);
    beg[t - t0] = dk__cpu_att_beg(c, lim[t - t0]);
    smax = lim[t - t0] > smax ? lim[t - t0] : smax;
    smin = beg[t - t0] < smin ? beg[t - t0] : smin;
    dk__cpu_load(q->dtype, dk__cpu_ptr(q), (t * f->Hq + g * grp) * D, 1, grp * D, qs + (t - t0) * grp * D);
  }
  for (j = 0; j < R * D; j++) qs[j] *= c->f[0];
  for (i = 0; i < R; i++) { mx[i] = -INFINITY; l[i] = 0.0f; }
  memset(ob, 0, (size_t)(R * Dv) * sizeof(float));
  /* from the first block any row's window reaches (dk_attention_window) */
  for (s0 = smin / BK * BK; s0 < smax; s0 += BK) {
    const int64_t nk = smax - s0 < BK ? smax - s0 : BK, np = (nk + 7) / 8 * 8;
    const float *vr = f->vf + s0 * f->vs + g * Dv;
    for (i = 0; i < R; i += fmr) {
      const int mr = R - i < fmr ? (int)(R - i) : fmr;
      for (j = 0; j < np; j += nr) {
        const int nc = np - j < nr ? (int)(np - j) : nr;
        dk__cpu_k->famk(mr, nc, D, qs + i * D, D, kt + s0 + j, f->ldk, p + i * BK + j, BK, 0);
      }
    }
    for (i = 0; i < R; i++) {
      const int64_t lr = lim[i / grp] - s0 < 0 ? 0 : lim[i / grp] - s0, lb = beg[i / grp] - s0;
      /* keys before the row's window: -inf, which the step weighs 0 */
      for (j = 0; j < lb && j < np; j++) p[i * BK + j] = -INFINITY;
      dk__cpu_k->fasm(p + i * BK, lr < nk ? lr : nk, np, &mx[i], &l[i], ob + i * Dv, Dv);
    }
    for (i = 0; i < R; i += fmr) {
      const int mr = R - i < fmr ? (int)(R - i) : fmr;
      for (j = 0; j < Dv; j += nr) {
        const int nc = Dv - j < nr ? (int)(Dv - j) : nr;
        dk__cpu_k->famk(mr, nc, nk, p + i * BK, BK, vr + j, f->vs, ob + i * Dv + j, Dv, 1);
      }
    }
  }
  for (i = 0; i < R; i++) {   /* no key seen (a negative position): zeros */
    const float z = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
    for (j = 0; j < Dv; j++) ob[i * Dv + j] *= z;
  }
  for (t = t0; t < t1; t++)
    dk__cpu_store(o->dtype, dk__cpu_ptr(o), (t * f->Hq + g * grp) * Dv, grp * Dv, ob + (t - t0) * grp * Dv);
}

/* tasks r: the heaviest tiles (the last tokens, which see the most keys) first */
static void dk__cpu_fa_task(void *ctx, int64_t r0, int64_t r1) {
  const dk__cpu_fa *f = (const dk__cpu_fa *)ctx;
  float *ws = dk__cpu_scratch(0, dk__cpu_fa_floats(f->D, f->Dv));
  int64_t r;
  if (!ws) return;   /* dk__cpu_run_op reports it */
  for (r = r0; r < r1; r++) {
    const int64_t tile = f->ntile - 1 - r / f->Hkv, t0 = tile * f->bt, t1 = t0 + f->bt < f->T ? t0 + f->bt : f->T;
    dk__cpu_fa_tile(f, t0, t1, r % f->Hkv, ws);
  }
}

/* whether this call takes the tiles: a class with the micro-kernel, a
 * prompt, heads in whole vectors, a KV head's queries within a tile */
static int dk__cpu_fa_takes(const dk_call *c) {
  const dk_tensor *q = c->t[1], *k = c->t[2], *v = c->t[3];
  const int64_t D = q->shape[2], Dv = v->shape[2], grp = q->shape[1] / k->shape[1];
  return dk__cpu_k->famk && q->shape[0] > DK_CPU_FA_MINT && D % 8 == 0 && Dv % 8 == 0 && D <= DK_CPU_FA_MAXD &&
         Dv <= DK_CPU_FA_MAXD && grp <= DK_CPU_FA_ROWS && k->shape[0] > 0;
}

/* K^T for key blocks [b0, b1) of every KV head (and V in f32, where it is
 * not), once for all the tiles; the columns past smax zero */
static void dk__cpu_fa_prep_task(void *ctx, int64_t b0, int64_t b1) {
  const dk__cpu_fa *f = (const dk__cpu_fa *)ctx;
  const dk_tensor *k = f->c->t[2], *v = f->c->t[3];
  const int64_t D = f->D, Hkv = f->Hkv;
  float row[DK_CPU_FA_MAXD];
  int64_t s, g, d;
  for (s = b0 * DK_CPU_FA_BK; s < b1 * DK_CPU_FA_BK; s++) {
    for (g = 0; g < Hkv; g++) {
      float *kt = f->kt + g * D * f->ldk + s;
      if (s >= f->smax) {
        for (d = 0; d < D; d++) kt[d * f->ldk] = 0.0f;
        continue;
      }
      dk__cpu_load(k->dtype, dk__cpu_ptr(k), (s * Hkv + g) * D, 1, D, row);
      for (d = 0; d < D; d++) kt[d * f->ldk] = row[d];
    }
    if (v->dtype != DK_F32 && s < f->smax)
      dk__cpu_load(v->dtype, dk__cpu_ptr(v), s * f->vs, 1, f->vs, (float *)f->vf + s * f->vs);
  }
}

static dk_status dk__cpu_fa_run(const dk_call *c) {
  dk__cpu_fa f;
  const dk_tensor *v = c->t[3];
  float *buf;
  int64_t t, nb;
  f.c = c;
  f.T = c->t[1]->shape[0]; f.Hq = c->t[1]->shape[1]; f.D = c->t[1]->shape[2];
  f.S = c->t[2]->shape[0]; f.Hkv = c->t[2]->shape[1]; f.Dv = v->shape[2];
  f.grp = f.Hq / f.Hkv;
  f.bt = DK_CPU_FA_ROWS / f.grp;
  f.ntile = (f.T + f.bt - 1) / f.bt;
  f.vs = f.Hkv * f.Dv;
  f.smax = 0;
  for (t = 0; t < f.T; t++) {
    int64_t l = dk__cpu_att_lim(c, t, f.S);
    f.smax = l > f.smax ? l : f.smax;
  }
  nb = (f.smax + DK_CPU_FA_BK - 1) / DK_CPU_FA_BK;
  f.ldk = nb * DK_CPU_FA_BK;
  /* the caller's slot 4 (the tasks use 0): kept between layers */
  buf = dk__cpu_scratch(4, (size_t)(f.Hkv * f.D * f.ldk + (v->dtype != DK_F32 ? f.smax * f.vs : 0) + 1));
  if (!buf)
    return dk__error(DK_ERR_OUT_OF_MEMORY, "dk_attention on cpu: no memory for the keys of %lld positions in f32",
                     (long long)f.smax);
  f.kt = buf;
  f.vf = v->dtype != DK_F32 ? buf + f.Hkv * f.D * f.ldk : (const float *)dk__cpu_ptr(v);
  dk__cpu_parallel(nb, 1 + 16384 / (f.Hkv * (f.D + f.Dv) * DK_CPU_FA_BK), dk__cpu_fa_prep_task, &f);
  dk__cpu_parallel(f.ntile * f.Hkv, 1, dk__cpu_fa_task, &f);
  return DK_OK;
}

#endif
