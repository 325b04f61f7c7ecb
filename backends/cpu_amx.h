/* backends/cpu_amx.h — the prompt product (dk_linear with at least
 * DK_CPU_AMX_MINM rows) of bf16 and block-format weights on Intel AMX tiles
 * (Sapphire Rapids and later: AMX-TILE, AMX-BF16, AVX512-BF16; Linux, which
 * grants the tile state per process), the "amx" kernel class. Included by
 * backends/cpu.h, which chooses it in dk__cpu_linear.
 *
 * Why bf16 and not AMX's int8: one TDPBF16PS multiplies a 16x32 tile by a
 * 32x16 one (8192 multiply-adds in about 6 ns on a core of the 2-core
 * Emerald Rapids VM: 1.36 TMAC/s, 5x the VNNI integer product's peak) and
 * accumulates in f32, so a weight's per-block scales are applied once, when
 * its values are decoded to bf16. TDPBUSD does twice the multiply-adds in
 * the same time but sums int32 across the whole K: every 32-value block's
 * sum would have to leave the tile (a 1 KB store, then 16 loads, converts
 * and FMAs) to take its scale, as long again as the product, and bf16's
 * rounding of x (2^-9 relative) is finer than q8's (amax/254 per block).
 *
 * Layout. The weights are the A operand: a tile row is 32 consecutive bf16
 * values of one weight row, the natural order, so decoding needs no
 * transpose. The activations are the B operand, in pairs: row p of a tile
 * holds (x[m][2p], x[m][2p+1]) for 16 rows m, a transpose done once per
 * product. C is then W X^T, 16 weight rows by 16 activation rows, which is
 * transposed once per output tile at the end of K.
 *
 * Decoding. 4- and 5-bit codes go through a table: bf16(d*i + mn) for the
 * 16 or 32 codes i of a block (one FMA and one convert per 16 entries),
 * then one vpermw per 32 values; the same bits as converting each value
 * (checksums unchanged) in half the instructions (64x768x2048 q4_K 254 ->
 * 210 us on both cores). q8_0, q2_K, q3_K and q6_K convert each value.
 *
 * Blocking: see dk__cpu_amx_group_avx512amx. 64x768x2048 on both cores
 * (/tmp lin.c, best of 7 x 20), the VNNI integer product -> here: q4_K
 * 376 -> 210 us, q4_0 367 -> 213, q8_0 387 -> 221, q6_K 437 -> 244, bf16
 * (f32 row form) 945 -> 187; 512 rows q4_K 2571 -> 1293 us; 16 rows q4_0
 * 131 -> 118, 8 rows 94 -> 117 (the decoding, a fixed cost, outweighs the
 * product there: hence DK_CPU_AMX_MINM).
 *
 * Error: x rounded to bf16 (relative 2^-9), each decoded weight value too
 * (a block format's d*q+m, a bf16 weight exact), products and sums in f32.
 * DEVKIT_CPU_F32_DECODE and precise weights keep to the f32 paths;
 * DEVKIT_CPU_ISA=avx512 keeps every product off the tiles. */
#ifndef DK_BACKEND_CPU_AMX_H
#define DK_BACKEND_CPU_AMX_H

/* the compilers with AMX intrinsics (GCC 11, clang 12); with older ones the
 * amx class is never chosen */
#if defined(DK_CPU_X86) && defined(__linux__) && \
    ((defined(__clang__) && __clang_major__ >= 12) || (!defined(__clang__) && __GNUC__ >= 11))
#define DK_CPU_HAVE_AMX 1

#define DK_CPU_AMX_MINM 16   /* activation rows from which the product runs here */
#define DK_CPU_AMX_KC 256    /* weight values decoded per chunk */
#define DK_CPU_AMX_G 4       /* 32-row weight pairs sharing a chunk of activations (4 x 32 = DK_CPU_NC) */
/* the weight dtypes it takes (DK_BIT): bf16 and every block format */
#define DK__CPU_AMX_TYPES                                                                                              \
  (DK_BIT(DK_BF16) | DK_BIT(DK_Q8_0) | DK_BIT(DK_Q4_0) | DK_BIT(DK_Q4_1) | DK_BIT(DK_Q5_0) | DK_BIT(DK_Q5_1) |       \
   DK_BIT(DK_Q2_K) | DK_BIT(DK_Q3_K) | DK_BIT(DK_Q4_K) | DK_BIT(DK_Q5_K) | DK_BIT(DK_Q6_K) | DK_BIT(DK_IQ4_NL) |      \
   DK_BIT(DK_IQ4_XS))

/* (VNNI too, which every AMX CPU has: the K-quant code helpers are compiled for it) */
#define DK__CPU_AMX_TARGET "avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512bf16,amx-tile,amx-bf16,avx2,fma,f16c"
#define DK_CPU_AMX __attribute__((target(DK__CPU_AMX_TARGET)))
#define DK_CPU_AMX_INLINE __attribute__((target(DK__CPU_AMX_TARGET), always_inline)) static inline

/* the tile configuration (palette 1): every tile 16 rows of 64 bytes */
typedef struct {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} dk__cpu_tilecfg;

/* whether this CPU and OS run AMX-BF16 tiles: cpuid, XCR0's tile state, and
 * Linux's per-process permission for the 8 KB of tile data (asked once; a
 * process without it gets SIGILL at the first tile instruction) */
static int dk__cpu_amx_usable(void) {
  static int state = -1;   /* racing first callers compute, and store, the same */
  unsigned a, b, c, d, lo, hi;
  long ret = -1;
  int known = __atomic_load_n(&state, __ATOMIC_RELAXED);
  if (known >= 0) return known;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && ((d >> 22) & 1) && ((d >> 24) & 1) &&   /* AMX-BF16, -TILE */
      __get_cpuid_count(7, 1, &a, &b, &c, &d) && ((a >> 5) & 1)) {                       /* AVX512-BF16 */
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    /* XTILECFG and XTILEDATA in XCR0, then arch_prctl(ARCH_REQ_XCOMP_PERM,
     * XFEATURE_XTILEDATA) by the syscall instruction: libc declares
     * syscall() only under _DEFAULT_SOURCE */
    if (((lo >> 17) & 3) == 3)
      __asm__ volatile("syscall" : "=a"(ret) : "0"(158L /* SYS_arch_prctl */), "D"(0x1023L), "S"(18L) : "rcx", "r11", "memory");
  }
  __atomic_store_n(&state, ret == 0, __ATOMIC_RELAXED);
  return ret == 0;
}

/* r[i] (16 dwords each) to r[j] = dword j of every r[i]: four rounds of 16
 * shuffles (maskz forms: the plain ones' undefined-register idiom trips g++
 * 12's -Wmaybe-uninitialized) */
DK_CPU_AMX_INLINE void dk__cpu_tr16_avx512amx(__m512i r[16]) {
  __m512i t[16];
  int i, j;
  for (i = 0; i < 16; i += 2) {
    t[i] = _mm512_maskz_unpacklo_epi32((__mmask16)0xffff, r[i], r[i + 1]);
    t[i + 1] = _mm512_maskz_unpackhi_epi32((__mmask16)0xffff, r[i], r[i + 1]);
  }
  for (i = 0; i < 16; i += 4) {   /* lane L of r[i + j]: column 4L + j of rows i..i+3 */
    r[i] = _mm512_maskz_unpacklo_epi64((__mmask8)0xff, t[i], t[i + 2]);
    r[i + 1] = _mm512_maskz_unpackhi_epi64((__mmask8)0xff, t[i], t[i + 2]);
    r[i + 2] = _mm512_maskz_unpacklo_epi64((__mmask8)0xff, t[i + 1], t[i + 3]);
    r[i + 3] = _mm512_maskz_unpackhi_epi64((__mmask8)0xff, t[i + 1], t[i + 3]);
  }
  for (j = 0; j < 4; j++) {
    t[j] = _mm512_maskz_shuffle_i32x4((__mmask16)0xffff, r[j], r[4 + j], 0x88);        /* lanes 0, 2 of each */
    t[4 + j] = _mm512_maskz_shuffle_i32x4((__mmask16)0xffff, r[j], r[4 + j], 0xdd);    /* lanes 1, 3 */
    t[8 + j] = _mm512_maskz_shuffle_i32x4((__mmask16)0xffff, r[8 + j], r[12 + j], 0x88);
    t[12 + j] = _mm512_maskz_shuffle_i32x4((__mmask16)0xffff, r[8 + j], r[12 + j], 0xdd);
  }
  for (j = 0; j < 4; j++) {
    r[j] = _mm512_maskz_shuffle_i32x4((__mmask16)0xffff, t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_maskz_shuffle_i32x4((__mmask16)0xffff, t[j], t[8 + j], 0xdd);
    r[4 + j] = _mm512_maskz_shuffle_i32x4((__mmask16)0xffff, t[4 + j], t[12 + j], 0x88);
    r[12 + j] = _mm512_maskz_shuffle_i32x4((__mmask16)0xffff, t[4 + j], t[12 + j], 0xdd);
  }
}

/* 32 f32 values to 32 bf16 (round to nearest even), in order */
DK_CPU_AMX_INLINE __m512i dk__cpu_bf16x32_avx512amx(const float *p) {
  return (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(p + 16), _mm512_loadu_ps(p));
}

/* 32 codes (bytes; q8_0's signed, the others' under 128) as w = d*q + mn,
 * d and mn for each 16-value half, to 32 bf16 values */
DK_CPU_AMX_INLINE __m512i dk__cpu_bf16_block_avx512amx(__m256i v, float d0, float m0, float d1, float m1) {
  const __m512 lo = _mm512_maskz_cvtepi32_ps((__mmask16)0xffff,
                                             _mm512_maskz_cvtepi8_epi32((__mmask16)0xffff, _mm256_castsi256_si128(v)));
  const __m512 hi = _mm512_maskz_cvtepi32_ps((__mmask16)0xffff,
                                             _mm512_maskz_cvtepi8_epi32((__mmask16)0xffff, _mm256_extracti128_si256(v, 1)));
  return (__m512i)_mm512_cvtne2ps_pbh(_mm512_fmadd_ps(hi, _mm512_set1_ps(d1), _mm512_set1_ps(m1)),
                                      _mm512_fmadd_ps(lo, _mm512_set1_ps(d0), _mm512_set1_ps(m0)));
}

/* 32 values by table: idx holds 32 word indices into bf16(d*i + mn) for i
 * in [0, 16) (dup: the table's entries 16-31 repeat them, so an index's bit
 * 4 may be set or not) or [0, 32): the same bits as the arithmetic above
 * (one FMA per value, rounded once), in 4 instructions for 16 values'
 * table instead of a convert, an FMA and a widening for each 16 values */
DK_CPU_AMX_INLINE __m512i dk__cpu_bf16_lut_avx512amx(__m512i idx, float d, float mn, int dup) {
  const __m512 lo = _mm512_fmadd_ps(_mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_ps(d),
                                    _mm512_set1_ps(mn));
  const __m512 hi = dup ? lo
                        : _mm512_fmadd_ps(_mm512_setr_ps(16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31),
                                          _mm512_set1_ps(d), _mm512_set1_ps(mn));
  return _mm512_permutexvar_epi16(idx, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
}

/* 16 bytes of nibbles (q4_0 .. q5_1: value i the low nibble of byte i,
 * value 16 + i its high one) as 32 word indices, bit 4 left as it falls */
DK_CPU_AMX_INLINE __m512i dk__cpu_nib_idx_avx512amx(const uint8_t *qs) {
  const __m512i w = _mm512_maskz_cvtepu8_epi16((__mmask32)0xffffffffu, _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs)));
  return _mm512_srlv_epi16(w, _mm512_set_epi64(0x0004000400040004LL, 0x0004000400040004LL, 0x0004000400040004LL,
                                               0x0004000400040004LL, 0, 0, 0, 0));
}

/* values [k0, k0 + kc) of one weight row of dtype T (k0, kc multiples of
 * 32) to bf16: 32 at dst + s * ld per step s; T a constant where inlined */
DK_CPU_AMX_INLINE void dk__cpu_amx_wdec_t(dk_dtype T, const char *row, int64_t k0, int64_t kc, uint16_t *dst, int64_t ld) {
  int64_t b, s;
  if (T == DK_BF16) {
    for (s = 0; s < kc / 32; s++)
      _mm512_storeu_si512(dst + s * ld, _mm512_loadu_si512((const void *)((const uint16_t *)row + k0 + 32 * s)));
  } else if ((DK__CPU_Q8K_DOT >> T) & 1) {   /* the K-quants: a super-block's 16 scales at a time */
    float dd[16], mm[16];
    for (b = k0 / 32, s = 0; s < kc / 32; b++, s++) {
      const int j = (int)(b & 7);
      if (j == 0 || s == 0) {
        __m512 d, mn;
        dk__cpu_kq_dm16(T, row, b / 8, &d, &mn);
        _mm512_storeu_ps(dd, d);
        _mm512_storeu_ps(mm, mn);
      }
      if (T == DK_Q4_K || T == DK_Q5_K) {
        /* group j: the low (j even) or high nibbles of 32 bytes, q5_K's fifth bit bit j of qh */
        const uint8_t *qs = T == DK_Q4_K ? ((const dk_block_q4_K *)row + b / 8)->qs : ((const dk_block_q5_K *)row + b / 8)->qs;
        __m512i idx = _mm512_maskz_cvtepu8_epi16((__mmask32)0xffffffffu, _mm256_loadu_si256((const __m256i *)(qs + 32 * (j >> 1))));
        if (j & 1) idx = _mm512_srli_epi16(idx, 4);
        if (T == DK_Q5_K) {
          const __m512i h = _mm512_maskz_cvtepu8_epi16((__mmask32)0xffffffffu,
                                                       _mm256_loadu_si256((const __m256i *)((const dk_block_q5_K *)row + b / 8)->qh));
          idx = _mm512_mask_add_epi16(_mm512_and_si512(idx, _mm512_set1_epi16(15)),
                                      _mm512_test_epi16_mask(h, _mm512_set1_epi16((short)(1 << j))),
                                      _mm512_and_si512(idx, _mm512_set1_epi16(15)), _mm512_set1_epi16(16));
        }
        _mm512_storeu_si512(dst + s * ld, dk__cpu_bf16_lut_avx512amx(idx, dd[2 * j], mm[2 * j], T == DK_Q4_K));
      } else {
        const __m256i v = dk__cpu_g16_codes(T, row, b / 8, j);
        _mm512_storeu_si512(dst + s * ld, dk__cpu_bf16_block_avx512amx(v, dd[2 * j], mm[2 * j], dd[2 * j + 1], mm[2 * j + 1]));
      }
    }
  } else if (T == DK_IQ4_NL || T == DK_IQ4_XS) {   /* the levels as signed bytes, d the group's scale */
    for (b = k0 / 32, s = 0; s < kc / 32; b++, s++) {
      float d, mn;
      const __m256i v = dk__cpu_wblock_i8(T, row, b, &d, &mn);
      _mm512_storeu_si512(dst + s * ld, dk__cpu_bf16_block_avx512amx(v, d, 0, d, 0));
    }
  } else if (T == DK_Q8_0) {
    for (b = k0 / 32, s = 0; s < kc / 32; b++, s++) {
      const dk_block_q8_0 *p = (const dk_block_q8_0 *)row + b;
      const float d = _cvtsh_ss(p->d);
      _mm512_storeu_si512(dst + s * ld, dk__cpu_bf16_block_avx512amx(_mm256_loadu_si256((const __m256i *)p->qs), d, 0, d, 0));
    }
  } else {   /* q4_0, q4_1, q5_0, q5_1: by table */
    for (b = k0 / 32, s = 0; s < kc / 32; b++, s++) {
      float d, mn;
      const uint8_t *qs;
      uint32_t qh = 0;
      __m512i idx;
      if (T == DK_Q4_0) {
        const dk_block_q4_0 *p = (const dk_block_q4_0 *)row + b;
        qs = p->qs; d = _cvtsh_ss(p->d); mn = -8.0f * d;
      } else if (T == DK_Q4_1) {
        const dk_block_q4_1 *p = (const dk_block_q4_1 *)row + b;
        qs = p->qs; d = _cvtsh_ss(p->d); mn = _cvtsh_ss(p->m);
      } else if (T == DK_Q5_0) {
        const dk_block_q5_0 *p = (const dk_block_q5_0 *)row + b;
        qs = p->qs; d = _cvtsh_ss(p->d); mn = -16.0f * d; memcpy(&qh, p->qh, 4);
      } else {
        const dk_block_q5_1 *p = (const dk_block_q5_1 *)row + b;
        qs = p->qs; d = _cvtsh_ss(p->d); mn = _cvtsh_ss(p->m); memcpy(&qh, p->qh, 4);
      }
      idx = dk__cpu_nib_idx_avx512amx(qs);
      if (T == DK_Q5_0 || T == DK_Q5_1) {   /* value i's fifth bit: bit i of qh */
        idx = _mm512_and_si512(idx, _mm512_set1_epi16(15));
        idx = _mm512_mask_add_epi16(idx, (__mmask32)qh, idx, _mm512_set1_epi16(16));
      }
      _mm512_storeu_si512(dst + s * ld, dk__cpu_bf16_lut_avx512amx(idx, d, mn, T == DK_Q4_0 || T == DK_Q4_1));
    }
  }
}

#define DK__AMX_WDEC(T)                                                                                                \
  DK_CPU_AMX static void dk__cpu_amx_wdec_##T##_avx512amx(const char *row, int64_t k0, int64_t kc, uint16_t *dst,     \
                                                           int64_t ld) {                                               \
    dk__cpu_amx_wdec_t(DK_##T, row, k0, kc, dst, ld);                                                                  \
  }
DK__AMX_WDEC(BF16) DK__AMX_WDEC(Q8_0) DK__AMX_WDEC(Q4_0) DK__AMX_WDEC(Q4_1) DK__AMX_WDEC(Q5_0) DK__AMX_WDEC(Q5_1)
DK__AMX_WDEC(Q2_K) DK__AMX_WDEC(Q3_K) DK__AMX_WDEC(Q4_K) DK__AMX_WDEC(Q5_K) DK__AMX_WDEC(Q6_K)
DK__AMX_WDEC(IQ4_NL) DK__AMX_WDEC(IQ4_XS)
typedef struct {
  const float *x;        /* M rows of K, f32 */
  uint16_t *xb;          /* the activations as B tiles: group g's at step s at ((g / 2) * K / 32 + s) * 1024 + (g & 1) * 512 */
  int64_t M, ng, N, K;   /* ng: 16-row activation groups (a last pair may hold one) */
  dk_dtype wdt, odt, bias_dt;
  const char *w;
  size_t wrow;
  void *o;
  const void *bias;
} dk__cpu_amx;

/* activation groups [g0, g1): 16 rows (zeros past M) of each 32-value step,
 * to bf16, transposed as dword pairs. The rows are read 8 steps (1 KB) at
 * a time into a small buffer whose rows are 9 cache lines apart, then
 * transposed from there: read a step at a time straight from x, rows 8 KB
 * apart (K = 2048) fell in one L1 set, and 512x2048 took 1 ms a core. */
DK_CPU_AMX static void dk__cpu_amx_xpack_avx512amx(void *ctx, int64_t g0, int64_t g1) {
  const dk__cpu_amx *g = (const dk__cpu_amx *)ctx;
  const int64_t nstep = g->K / 32;
  uint16_t buf[16][9 * 32];
  int64_t gi, s0, s;
  int i;
  for (gi = g0; gi < g1; gi++)
    for (s0 = 0; s0 < nstep; s0 += 8) {
      const int64_t ns = nstep - s0 < 8 ? nstep - s0 : 8;
      for (i = 0; i < 16; i++) {
        const int64_t m = gi * 16 + i;
        for (s = 0; s < ns; s++)
          _mm512_storeu_si512(buf[i] + 32 * s, m < g->M ? dk__cpu_bf16x32_avx512amx(g->x + m * g->K + (s0 + s) * 32)
                                                        : _mm512_setzero_si512());
      }
      for (s = 0; s < ns; s++) {
        uint16_t *tile = g->xb + ((gi / 2) * nstep + s0 + s) * 1024 + (gi & 1) * 512;
        __m512i r[16];
        for (i = 0; i < 16; i++) r[i] = _mm512_loadu_si512(buf[i] + 32 * s);
        dk__cpu_tr16_avx512amx(r);
        for (i = 0; i < 16; i++) _mm512_storeu_si512(tile + i * 32, r[i]);
      }
    }
}

/* values [k0, k0 + kc) of rows [i0, i1) of the 32 weight rows n0.. (nr of
 * them; the rest zeros) to bf16 in a chunk's A tiles: step s's pair at
 * ab + s * 1024, row r at + r * 32 (direct calls, so tools/check_cpu_isa.sh
 * sees every callee) */
DK_CPU_AMX static void dk__cpu_amx_wrows_avx512amx(const dk__cpu_amx *g, int64_t n0, int64_t nr, int64_t k0, int64_t kc,
                                                    uint16_t *ab, int64_t i0, int64_t i1) {
  int64_t i, s;
  for (i = i0; i < i1; i++) {
    const char *row;
    if (i >= nr) {
      for (s = 0; s < kc / 32; s++) _mm512_storeu_si512(ab + s * 1024 + i * 32, _mm512_setzero_si512());
      continue;
    }
    row = g->w + (size_t)(n0 + i) * g->wrow;
    switch (g->wdt) {
    case DK_BF16: dk__cpu_amx_wdec_BF16_avx512amx(row, k0, kc, ab + i * 32, 1024); break;
    case DK_Q8_0: dk__cpu_amx_wdec_Q8_0_avx512amx(row, k0, kc, ab + i * 32, 1024); break;
    case DK_Q4_0: dk__cpu_amx_wdec_Q4_0_avx512amx(row, k0, kc, ab + i * 32, 1024); break;
    case DK_Q4_1: dk__cpu_amx_wdec_Q4_1_avx512amx(row, k0, kc, ab + i * 32, 1024); break;
    case DK_Q5_0: dk__cpu_amx_wdec_Q5_0_avx512amx(row, k0, kc, ab + i * 32, 1024); break;
    case DK_Q5_1: dk__cpu_amx_wdec_Q5_1_avx512amx(row, k0, kc, ab + i * 32, 1024); break;
    case DK_Q2_K: dk__cpu_amx_wdec_Q2_K_avx512amx(row, k0, kc, ab + i * 32, 1024); break;
    case DK_Q3_K: dk__cpu_amx_wdec_Q3_K_avx512amx(row, k0, kc, ab + i * 32, 1024); break;
    case DK_Q4_K: dk__cpu_amx_wdec_Q4_K_avx512amx(row, k0, kc, ab + i * 32, 1024); break;
    case DK_Q5_K: dk__cpu_amx_wdec_Q5_K_avx512amx(row, k0, kc, ab + i * 32, 1024); break;
    case DK_IQ4_NL: dk__cpu_amx_wdec_IQ4_NL_avx512amx(row, k0, kc, ab + i * 32, 1024); break;
    case DK_IQ4_XS: dk__cpu_amx_wdec_IQ4_XS_avx512amx(row, k0, kc, ab + i * 32, 1024); break;
    default: dk__cpu_amx_wdec_Q6_K_avx512amx(row, k0, kc, ab + i * 32, 1024); break;
    }
  }
}

/* the bytes of values [k0, k0 + kc) of weight rows n0.. (nr of them) into
 * L2, a pair ahead of their decoding: rows read a chunk at a time (144 of
 * a q4_K row's 432 bytes at K = 768) defeat the hardware prefetcher, and a
 * 64x2048x768 product whose weights came from memory, as a model's do, took
 * 300 us against 230 from cache */
DK_CPU_AMX_INLINE void dk__cpu_amx_prefetch(const dk__cpu_amx *g, int64_t n0, int64_t nr, int64_t k0, int64_t kc) {
  const size_t b0 = dk__row_bytes(g->wdt, k0), b1 = dk__row_bytes(g->wdt, k0 + kc);
  int64_t i;
  size_t b;
  for (i = 0; i < nr; i++)
    for (b = b0; b < b1; b += 64) _mm_prefetch(g->w + (size_t)(n0 + i) * g->wrow + b, _MM_HINT_T1);
}

/* weight rows [n0, n0 + nc) (ng pairs of 16-row A tiles, nc <= 32 ng)
 * against every activation row, into cacc (rows DK_CPU_NC apart; nnext: the
 * task's rows after these, whose first chunk is prefetched). Work item q
 * is chunk q / ng of K for weight pair q % ng: its rows are decoded to bf16,
 * then meet every activation pair, so a chunk's activations (M x
 * DK_CPU_AMX_KC bf16: 256 KB at M = 512) are read from L2 by every pair of
 * the group. Streaming all of x per weight pair instead (the K loop
 * inside) read it from L3: 512x768x2048 3.1 ms, 2.3x the tiles' time. C
 * waits in cb between chunks.
 *
 * Software pipelined: item q + 1's rows are decoded between item q's tile
 * steps (ab holds two items), so the vector decoding overlaps the tiles'
 * work instead of following it; the rows a step are spread evenly. q4_K on
 * both cores, decoded then multiplied -> pipelined: 64x768x2048 205 -> 190
 * us, 64x2048x768 from memory 248 -> 226, 512x768x2048 1242 -> 1177 (the
 * decoding and the tiles share issue ports, so the overlap is partial). */
DK_CPU_AMX static void dk__cpu_amx_group_avx512amx(const dk__cpu_amx *g, int64_t n0, int64_t ng, int64_t nc, int64_t nnext,
                                                    uint16_t *ab, float *cb, float *cacc) {
  static const dk__cpu_tilecfg cfg = {1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};
  const int64_t npair = (g->ng + 1) / 2, nstep = g->K / 32;
  const int64_t nq = (g->K + DK_CPU_AMX_KC - 1) / DK_CPU_AMX_KC * ng;
  int64_t q, p, s, i, j, u;
#define DK__AMX_K0(q) ((q) / ng * DK_CPU_AMX_KC)
#define DK__AMX_KC(q) (g->K - DK__AMX_K0(q) < DK_CPU_AMX_KC ? g->K - DK__AMX_K0(q) : DK_CPU_AMX_KC)
#define DK__AMX_NR(q) (nc - 32 * ((q) % ng) < 32 ? nc - 32 * ((q) % ng) : 32)
#define DK__AMX_ROWS(q, buf, i0, i1)                                                                                   \
  dk__cpu_amx_wrows_avx512amx(g, n0 + 32 * ((q) % ng), DK__AMX_NR(q), DK__AMX_K0(q), DK__AMX_KC(q), buf, i0, i1)
  _tile_loadconfig(&cfg);
  if (nq > 1) dk__cpu_amx_prefetch(g, n0 + 32 * (1 % ng), DK__AMX_NR(1), DK__AMX_K0(1), DK__AMX_KC(1));
  DK__AMX_ROWS(0, ab, 0, 32);
  for (q = 0; q < nq; q++) {
    const int64_t k0 = DK__AMX_K0(q), kc = DK__AMX_KC(q), nsteps = npair * (kc / 32);
    uint16_t *cur = ab + (q & 1) * DK_CPU_AMX_KC * 32, *nxt = ab + ((q + 1) & 1) * DK_CPU_AMX_KC * 32;
    int64_t done = 0, t = 0;
    u = q % ng;
    /* the item after next into L2 (or the task's next group's first) */
    if (q + 2 < nq) dk__cpu_amx_prefetch(g, n0 + 32 * ((q + 2) % ng), DK__AMX_NR(q + 2), DK__AMX_K0(q + 2), DK__AMX_KC(q + 2));
    else if ((q + 2 == nq || nq == 1) && nnext > 0) dk__cpu_amx_prefetch(g, n0 + nc, nnext < 32 ? nnext : 32, 0, DK__AMX_KC(0));
    for (p = 0; p < npair; p++) {
      float *cp = cb + (u * npair + p) * 1024;
      const uint16_t *xb = g->xb + (p * nstep + k0 / 32) * 1024;
      const int two = 2 * p + 1 < g->ng;   /* two activation groups: 2x2 tiles; else the last one alone */
      if (k0 == 0) {
        _tile_zero(0); _tile_zero(2);
        if (two) { _tile_zero(1); _tile_zero(3); }
      } else {
        _tile_loadd(0, cp, 64); _tile_loadd(2, cp + 512, 64);
        if (two) { _tile_loadd(1, cp + 256, 64); _tile_loadd(3, cp + 768, 64); }
      }
      for (s = 0; s < kc / 32; s++) {
        _tile_loadd(4, cur + s * 1024, 64);
        _tile_loadd(5, cur + s * 1024 + 512, 64);
        _tile_loadd(6, xb + s * 1024, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(2, 5, 6);
        if (two) {   /* (a lone group: M = 16 did twice the work in zeros) */
          _tile_loadd(7, xb + s * 1024 + 512, 64);
          _tile_dpbf16ps(1, 4, 7);
          _tile_dpbf16ps(3, 5, 7);
        }
        if (q + 1 < nq) {   /* the next item's share of rows, while the tiles work */
          const int64_t to = 32 * ++t / nsteps;
          if (to > done) DK__AMX_ROWS(q + 1, nxt, done, to);
          done = to;
        }
      }
      _tile_stored(0, cp, 64); _tile_stored(2, cp + 512, 64);
      if (two) { _tile_stored(1, cp + 256, 64); _tile_stored(3, cp + 768, 64); }
    }
    if (q + 1 < nq && done < 32) DK__AMX_ROWS(q + 1, nxt, done, 32);
  }
#undef DK__AMX_K0
#undef DK__AMX_KC
#undef DK__AMX_NR
#undef DK__AMX_ROWS
  /* C tile c of weight pair u, activation pair p: weight rows 32u + 16 (c >> 1) + r, activation rows 32p + 16 (c & 1) + j */
  for (u = 0; u < ng; u++)
    for (p = 0; p < npair; p++)
      for (i = 0; i < 4; i += 2 * p + 1 < g->ng ? 1 : 2) {   /* a single group's pair: C tiles 0 and 2 */
        const float *ct = cb + (u * npair + p) * 1024 + i * 256;
        const int64_t nb = 32 * u + 16 * (i >> 1), mb = 32 * p + 16 * (i & 1);
        __m512i r[16];
        for (j = 0; j < 16; j++) r[j] = _mm512_loadu_si512(ct + 16 * j);
        dk__cpu_tr16_avx512amx(r);
        for (j = 0; j < 16; j++) _mm512_storeu_si512(cacc + (mb + j) * DK_CPU_NC + nb, r[j]);
      }
  _tile_release();
}

/* weight rows [32 t0, 32 t1) against every activation row, DK_CPU_AMX_G
 * pairs at a time */
static void dk__cpu_amx_task(void *ctx, int64_t t0, int64_t t1) {
  dk__cpu_amx *g = (dk__cpu_amx *)ctx;
  const int64_t npair = (g->ng + 1) / 2, mpad = g->ng * 16;
  uint16_t *ab = (uint16_t *)dk__cpu_scratch(2, DK_CPU_AMX_KC * 32);   /* two chunks' bf16 weights */
  float *cb = dk__cpu_scratch(4, (size_t)(DK_CPU_AMX_G * npair * 1024));   /* the group's C tiles */
  float *cacc = dk__cpu_scratch(1, (size_t)(mpad * DK_CPU_NC));
  float *bias = dk__cpu_scratch(0, DK_CPU_NC);
  int64_t t;
  if (!ab || !cb || !cacc || !bias) return;   /* dk__cpu_run_op reports it */
  for (t = t0; t < t1; t += DK_CPU_AMX_G) {
    const int64_t ng = t1 - t < DK_CPU_AMX_G ? t1 - t : DK_CPU_AMX_G, n0 = t * 32;
    const int64_t nc = g->N - n0 < 32 * ng ? g->N - n0 : 32 * ng;
    const int64_t nend = 32 * t1 < g->N ? 32 * t1 : g->N;
    dk__cpu_amx_group_avx512amx(g, n0, ng, nc, nend - n0 - nc, ab, cb, cacc);
    dk__cpu_store_cols(cacc, g->M, g->N, n0, nc, g->bias, g->bias_dt, bias, g->odt, g->o);
  }
}

/* o = x W^T (+ bias) on tiles: W bf16 or a block format, K a multiple of 32 */
static dk_status dk__cpu_amx_run(const dk_tensor *o, const dk_tensor *x, const dk_tensor *w, const dk_tensor *bias,
                                 int64_t M, int64_t N, int64_t K) {
  dk__cpu_amx g;
  void *p = NULL, *q;
  if (M == 0 || N == 0) return DK_OK;
  g.M = M; g.N = N; g.K = K; g.ng = (M + 15) / 16;
  g.wdt = w->dtype; g.odt = o->dtype; g.w = (const char *)dk__cpu_ptr(w); g.wrow = dk__row_bytes(w->dtype, K);
  g.o = dk__cpu_ptr(o);
  g.bias = bias ? dk__cpu_ptr(bias) : NULL;
  g.bias_dt = bias ? bias->dtype : DK_F32;
  /* the bf16 tiles in the caller's slot 5 (the tasks use 0-4; slot 6 may hold
   * x itself, dk__cpu_fused_linear's): kept between calls, since a fresh
   * 2 MB buffer a call costs its page faults every time */
  q = dk__cpu_scratch(5, (size_t)((g.ng + 1) / 2 * 16 * K));   /* whole pairs of 16 x K bf16 */
  if (!q || (x->dtype != DK_F32 && posix_memalign(&p, 64, (size_t)(M * K) * sizeof(float)) != 0)) {
    return dk__error(DK_ERR_OUT_OF_MEMORY, "dk_linear on cpu: no memory to round a %lldx%lld activation to bf16",
                     (long long)M, (long long)K);
  }
  if (p) dk__cpu_load(x->dtype, dk__cpu_ptr(x), 0, 1, M * K, (float *)p);
  g.x = p ? (const float *)p : (const float *)dk__cpu_ptr(x);
  g.xb = (uint16_t *)q;
  dk__cpu_parallel(g.ng, 1 + 4096 / (K + 1), dk__cpu_amx_xpack_avx512amx, &g);
  dk__cpu_parallel((N + 31) / 32, 1, dk__cpu_amx_task, &g);
  free(p);
  return DK_OK;
}

#endif
#endif
