/* kernels/dk_params.h — the contract between backends/cuda.h (host, C) and
 * the .cu files in kernels/ (device, CUDA C++).
 *
 * Every kernel takes exactly one parameter: one of the structs below, by
 * value. The host fills it and passes its address to cuLaunchKernel. The
 * layout must be identical on both sides, so the structs hold only int64_t /
 * uint64_t (first), then int32_t / float, and each is padded by hand to a
 * multiple of 8 bytes: no implicit padding, no pointers (device addresses
 * travel as uint64_t, so the host never needs a device pointer type).
 *
 * Strides and shapes are in elements; "addresses" already include the
 * tensor's byte offset into its storage. DK_KMAXD is the most dimensions the
 * kernels handle; it is DEVKIT_MAX_DIMS's upper bound, so any build of
 * devkit.h fits.
 *
 * The kernel list (DK_CUDA_KERNELS) is the single source of the names: the
 * host builds its function table from it, and tools/gen_kernels.sh checks
 * that every name is an entry point of the compiled PTX.
 *
 * This header is plain C89-compatible C and is also included by nvcc.
 */
#ifndef DK_KERNEL_PARAMS_H
#define DK_KERNEL_PARAMS_H

#include <stdint.h>

#define DK_KMAXD 8

/* dtype codes: the same numbers as dk_dtype in devkit.h */
#define DK_KT_F32 0
#define DK_KT_F16 1
#define DK_KT_BF16 2
#define DK_KT_I32 3
#define DK_KT_Q8_0 4
#define DK_KT_Q4_0 5

/* launch geometry shared by host and device (the kernels assume exactly
 * these block sizes; each kernel file's header comment says why) */
#define DK_EW_THREADS 256          /* elementwise, copy, concat, rope, embedding */
#define DK_ROW_THREADS 256         /* norms, softmax, argmax, sample: one block per row */
#define DK_GEMV_THREADS 128        /* 4 warps */
#define DK_GEMV_ROWS_PER_WARP 2
#define DK_GEMV_ROWS_PER_BLOCK 8   /* 4 warps x 2 rows */
#define DK_GEMV_MAXM 4             /* rows of x the decode path takes */
#define DK_GEMV_KC 1024            /* k values per staged chunk */
#define DK_GEMV2_ROWS 2            /* dk_gemv2_*: rows of W per block */
#define DK_GEMV2_QROWS 4           /* dk_gemv2_q8_0/q4_0: rows of W per block */
#define DK_GEMV2K_ROWS 4           /* dk_gemv2k_* (the other block formats): rows of W per block */
/* the alignment kernels/quants.cuh's dkq_piece asks of W and of a row of
 * block type t (devkit's numbering, the kernels' DK_KT_*): q4_K, q5_K 16;
 * q5_1, iq4_xs 8; q4_1, q2_K 4; the rest 2 */
#define DK_PIECE_ALIGN(t) ((t) == 11 || (t) == 12 ? 16 : (t) == 8 || (t) == 15 ? 8 : (t) == 6 || (t) == 9 ? 4 : 2)
#define DK_GEMV2_U 4               /* dk_gemv2_*: 8-value pieces a thread loads ahead, per row */
#define DK_GEMM_THREADS 256
#define DK_GEMM_BM 128
#define DK_GEMM_BN 128
#define DK_ATTN_THREADS 128
#define DK_ATTN_MAXD 512           /* largest head dim (q/k and v) */
#define DK_ATTN_SPLIT_MAXD 256     /* split-K path: head dims multiple of 8, at most this */
#define DK_ATTN_SPLIT_HB 8         /* split-K path: query heads per block */
#define DK_ATTN_SPLIT_MAXN 1024    /* split-K path: most splits of a row */
#define DK_ATTN_FLASH_D 64         /* tensor-core prompt path (DEVKIT_CUDA_FLASH): its head dim */
#define DK_MAX_GRID_X 1048576u     /* grid-stride loops cover the rest */
#define DK_MAX_GRID_YZ 65535u

/* binary ops */
#define DK_KB_ADD 0
#define DK_KB_SUB 1
#define DK_KB_MUL 2
#define DK_KB_DIV 3

/* unary ops */
#define DK_KU_SCALE 0
#define DK_KU_SILU 1
#define DK_KU_GELU 2
#define DK_KU_GELU_TANH 3
#define DK_KU_RELU 4
#define DK_KU_SIGMOID 5
#define DK_KU_TANH 6
#define DK_KU_EXP 7
#define DK_KU_SWIGLU 8

/* out[i] = a[bcast(i)] op b[bcast(i)], all of one float dtype */
typedef struct {
  uint64_t out, a, b;
  int64_t n;                         /* elements of out */
  int64_t shape[DK_KMAXD];           /* out's shape, ndim entries */
  int64_t astr[DK_KMAXD];            /* a's stride per out dim, 0 where a broadcasts */
  int64_t bstr[DK_KMAXD];
  int32_t ndim, op;
  int32_t flat;                      /* a, b and out have one shape: index directly */
  int32_t pad_;
} dk_kp_binary;

typedef struct {
  uint64_t out, x, y;                /* y: swiglu's up */
  int64_t n;
  float s;                           /* scale */
  int32_t op;
} dk_kp_unary;

/* rmsnorm / layernorm over rows of `cols` */
typedef struct {
  uint64_t out, x, w, b;             /* w, b: 0 when absent */
  int64_t rows, cols;
  float eps;
  int32_t layer;                     /* 1: layernorm, 0: rmsnorm */
  int32_t wdt, bdt;
  int32_t cached;                    /* 1: the row is held in registers (cols <= DK_ROW_THREADS * DK_NORM_CACHE) */
  int32_t pad_;
} dk_kp_norm;
#define DK_NORM_CACHE 32             /* values of a row per thread in the cached norm */

typedef struct {
  uint64_t out, x;
  int64_t rows, cols;
  int64_t rows_per;                  /* size of the last-but-one dim (masked) */
  int64_t offset;                    /* causal offset; < 0: no mask */
  float scale;
  int32_t masked;
} dk_kp_softmax;

/* out[M,N] = x[M,K] . w[N,K]^T (+ bias), M <= DK_GEMV_MAXM;
 * dk_gemv2n_*: x rms-normalized first (eps; aux: the f32 norm weight, or 0);
 * dk_gemv2s_*: x is swiglu(x, aux), aux the f32 up rows beside x's gate */
typedef struct {
  uint64_t out, x, w, bias;
  int64_t M, N, K;
  int64_t w_row_bytes;
  int32_t xdt, odt, bdt, has_bias;
  int32_t wdt;                       /* dk_gemv_w_more: the block format */
  float eps;
  uint64_t aux;
} dk_kp_gemv;

/* C[b][M,N] = A[b][M,K] . B[b] (+ bias[N]); C has A's dtype.
 * NN (matmul): B is [K,N] with row stride ldb (elements), A's dtype.
 * NT (linear): B is W [N,K], rows of b_row_bytes bytes, dtype wdt (any
 * weight dtype: the kernels switch on it at run time).
 * Batch item z: A at a + sum_d idx_d*abstr[d] elements (idx over bshape),
 * B likewise with bbstr, C at c + z*M*N elements. */
typedef struct {
  uint64_t a, b, c, bias;
  int64_t M, N, K;
  int64_t lda, ldb, ldc;
  int64_t b_row_bytes;
  int64_t batch;
  int64_t bshape[DK_KMAXD];
  int64_t abstr[DK_KMAXD];
  int64_t bbstr[DK_KMAXD];
  int32_t nbdims, wdt, biasdt, has_bias;
} dk_kp_gemm;

typedef struct {
  uint64_t out, table, ids, status;  /* status: one 64-bit slot, ~0 = no bad id */
  int64_t n_ids, D, rows, row_bytes;
  int32_t tdt, odt;
} dk_kp_embedding;

/* dk_index_select: out [outer, nids, inner] from x [outer, n, inner], same
 * dtype. dk_index_copy (dk_index_copy_scatter) the other way: out [outer, n,
 * inner] (dst) from x [outer, nids, inner] (src), converting x's dtype xdt
 * to out's odt (f32/f16/bf16 kernel codes) */
typedef struct {
  uint64_t out, x, ids, status;      /* status: as dk_kp_embedding's */
  int64_t outer, n, nids, inner;
  int32_t esize;                     /* bytes per element: 4 or 2 (gather; scatter when xdt == odt) */
  int32_t xdt, odt;
  int32_t pad_;
} dk_kp_gather;

typedef struct {
  uint64_t out, x, pos;
  int64_t rows, D, H, T;
  float theta;
  int32_t n_rot, neox;
  int32_t pad_;
} dk_kp_rope;

typedef struct {
  uint64_t out, a, b;
  int64_t outer, inner, ad, bd;      /* out is [outer, (ad + bd) * inner] */
} dk_kp_concat;

/* dst[idx] = convert(src[idx]) over a shape with any strides */
typedef struct {
  uint64_t dst, src;
  int64_t n;
  int64_t shape[DK_KMAXD];
  int64_t dstr[DK_KMAXD];
  int64_t sstr[DK_KMAXD];
  int32_t ndim, sdt, ddt;
  int32_t contiguous;                /* both dense in row-major order */
} dk_kp_copy;

/* argmax and sample: one block per row of n values */
typedef struct {
  uint64_t out, x;
  int64_t rows, n;
  uint64_t seed;
  float temp, top_p;
  int32_t top_k, xdt;
} dk_kp_pick;

/* pos (dk_attention_pos), when not 0: i32 positions [T] on the device;
 * query row t sees keys s <= pos[t] (none when negative) and causal_offset
 * is not used */
typedef struct {
  uint64_t out, q, k, v, pos;
  int64_t T, S, Hq, Hkv, D, Dv;
  int64_t causal_offset;             /* < 0: no mask */
  float scale;
  int32_t qdt, kdt, odt;
  int64_t window;                    /* the _win kernels (dk_attention_window): row t sees [lim - window, lim);
                                        last, so the other kernels' fields keep their offsets */
} dk_kp_attention;

/* split-K attention (kernels/attention.cu, second half): grid (nsplit,
 * Hkv * nbatch, ceil(T / tq)); block (j, g * nbatch + b, r) takes positions
 * [j * split_len, (j + 1) * split_len) of kv head g for its query heads
 * g * grp + b * hb ... (+ hb, within the group) of the query rows r * tq ...
 * (+ tq, within T); hb * tq <= DK_ATTN_SPLIT_HB. part: nsplit > 1 only,
 * T * Hq * nsplit records of (m, z, acc[Dv]) floats. */
typedef struct {
  uint64_t out, q, k, v, part, pos;  /* pos: as dk_kp_attention's */
  int64_t T, S, Hq, Hkv, D, Dv;
  int64_t causal_offset;             /* < 0: no mask */
  int64_t split_len;
  float scale;
  int32_t qdt, odt, nsplit, hb, nbatch, tq;
  int64_t window;                    /* as dk_kp_attention's */
} dk_kp_attn_split;

/* Every kernel, by name. X(name, param struct). */
/* issue 12 (kernels/reduce.cu, kernels/math.cu; off the default path until
 * they have run on a GPU: DEVKIT_CUDA_NEWOPS=1) */
#define DK_KR_SUM 0                  /* reduce ops: the same codes as shaders/reduce.comp */
#define DK_KR_MEAN 1
#define DK_KR_MAX 2
#define DK_KR_MIN 3
#define DK_KR_ARGMAX 4
#define DK_KR_ARGMIN 5
#define DK_KR_SOFTMAX 6
#define DK_KR_LOG_SOFTMAX 7
#define DK_KR_CUMSUM 8
#define DK_KR_TOPK 9
#define DK_KM_SQRT 0                 /* math ops: the same codes as shaders/math.comp */
#define DK_KM_RSQRT 1
#define DK_KM_LOG 2
#define DK_KM_ABS 3
#define DK_KM_NEG 4
#define DK_KM_ERF 5
#define DK_KM_CLAMP 6
#define DK_KM_POW_SCALAR 7
#define DK_KM_POW 8
#define DK_KM_WHERE 9

/* A reduction (or softmax) over x as devkit.h's dk__red_layout describes it:
 * output element o, row-major over the kept dims ks (x strides kx), reads x
 * at kept(o) + red(r) for r in [0, nred), r row-major over rs (strides rx).
 * Unused dims are size 1, stride 0, in front. One block per output element. */
typedef struct {
  uint64_t out, x;
  uint64_t out2;                     /* top-k: the indices (i32) */
  int64_t nout, nred;
  int64_t k;                         /* top-k: values per row */
  int64_t ks[4], kx[4], rs[4], rx[4];
  int32_t op, last;                  /* last: argmax/argmin take the last index among ties */
  int32_t flags;                     /* cumsum: 1 exclusive, 2 reverse; top-k: 4 largest */
  int32_t pad_;
} dk_kp_reduce;

/* out[i] = op(a, b, c at bcast(i)): a = x (unary), a^b (pow), where: a = the
 * i32 mask, b and c the values */
typedef struct {
  uint64_t out, a, b, c;
  int64_t n;
  int64_t shape[DK_KMAXD];
  int64_t as[DK_KMAXD], bs[DK_KMAXD], cs[DK_KMAXD];
  float f0, f1;                      /* clamp: lo, hi; pow_scalar: the exponent */
  int32_t ndim, op;
  int32_t flat;                      /* every input has out's shape: index directly */
  int32_t pad_;
} dk_kp_math;

#define DK_CUDA_KERNELS(X)                                                   \
  X(dk_binary_f32, dk_kp_binary) X(dk_binary_f16, dk_kp_binary)              \
  X(dk_binary_bf16, dk_kp_binary)                                            \
  X(dk_unary_f32, dk_kp_unary) X(dk_unary_f16, dk_kp_unary)                  \
  X(dk_unary_bf16, dk_kp_unary)                                              \
  X(dk_norm_f32, dk_kp_norm) X(dk_norm_f16, dk_kp_norm)                      \
  X(dk_norm_bf16, dk_kp_norm)                                                \
  X(dk_softmax_f32, dk_kp_softmax) X(dk_softmax_f16, dk_kp_softmax)          \
  X(dk_softmax_bf16, dk_kp_softmax)                                          \
  X(dk_gemv_w_f32, dk_kp_gemv) X(dk_gemv_w_f16, dk_kp_gemv)                  \
  X(dk_gemv_w_bf16, dk_kp_gemv) X(dk_gemv_w_q8_0, dk_kp_gemv)                \
  X(dk_gemv_w_q4_0, dk_kp_gemv) X(dk_gemv_w_more, dk_kp_gemv)                \
  X(dk_gemv2_f32, dk_kp_gemv) X(dk_gemv2_f16, dk_kp_gemv) X(dk_gemv2_bf16, dk_kp_gemv) \
  X(dk_gemv2_q8_0, dk_kp_gemv) X(dk_gemv2_q4_0, dk_kp_gemv)                  \
  X(dk_gemv2n_f32, dk_kp_gemv) X(dk_gemv2n_f16, dk_kp_gemv) X(dk_gemv2n_bf16, dk_kp_gemv) \
  X(dk_gemv2n_q8_0, dk_kp_gemv) X(dk_gemv2n_q4_0, dk_kp_gemv)                \
  X(dk_gemv2s_f32, dk_kp_gemv) X(dk_gemv2s_f16, dk_kp_gemv) X(dk_gemv2s_bf16, dk_kp_gemv) \
  X(dk_gemv2s_q8_0, dk_kp_gemv) X(dk_gemv2s_q4_0, dk_kp_gemv)                \
  X(dk_gemv2k_q4_1, dk_kp_gemv) X(dk_gemv2k_q5_0, dk_kp_gemv) X(dk_gemv2k_q5_1, dk_kp_gemv) \
  X(dk_gemv2k_q2_k, dk_kp_gemv) X(dk_gemv2k_q3_k, dk_kp_gemv) X(dk_gemv2k_q4_k, dk_kp_gemv) \
  X(dk_gemv2k_q5_k, dk_kp_gemv) X(dk_gemv2k_q6_k, dk_kp_gemv) X(dk_gemv2k_iq4_nl, dk_kp_gemv) \
  X(dk_gemv2k_iq4_xs, dk_kp_gemv) X(dk_gemv2k_iq3_xxs, dk_kp_gemv) X(dk_gemv2k_iq3_s, dk_kp_gemv) \
  X(dk_gemv2k_iq2_xxs, dk_kp_gemv) X(dk_gemv2k_iq2_xs, dk_kp_gemv) X(dk_gemv2k_iq2_s, dk_kp_gemv) \
  X(dk_gemm_f32_nn, dk_kp_gemm) X(dk_gemm_f32_nt, dk_kp_gemm)               \
  X(dk_gemm_tc_f16_nn, dk_kp_gemm) X(dk_gemm_tc_bf16_nn, dk_kp_gemm)         \
  X(dk_gemm_tc_f16_nt, dk_kp_gemm) X(dk_gemm_tc_bf16_nt, dk_kp_gemm)         \
  X(dk_gemm_tc_f16_nt_o32, dk_kp_gemm) X(dk_gemm_tc_bf16_nt_o32, dk_kp_gemm) \
  X(dk_gemm_mma_f16_nt, dk_kp_gemm) X(dk_gemm_mma_bf16_nt, dk_kp_gemm)       \
  X(dk_gemm_mma_f16_nt_o32, dk_kp_gemm) X(dk_gemm_mma_bf16_nt_o32, dk_kp_gemm) \
  X(dk_gemm_mma_f16_nn, dk_kp_gemm) X(dk_gemm_mma_bf16_nn, dk_kp_gemm)       \
  X(dk_embedding_check, dk_kp_embedding) X(dk_embedding_gather, dk_kp_embedding) \
  X(dk_dequant_rows, dk_kp_embedding)                                        \
  X(dk_index_select_check, dk_kp_gather) X(dk_index_select_gather, dk_kp_gather) \
  X(dk_index_copy_scatter, dk_kp_gather)                                      \
  X(dk_rope_f32, dk_kp_rope) X(dk_rope_f16, dk_kp_rope) X(dk_rope_bf16, dk_kp_rope) \
  X(dk_concat_2, dk_kp_concat) X(dk_concat_4, dk_kp_concat)                  \
  X(dk_copy_raw2, dk_kp_copy) X(dk_copy_raw4, dk_kp_copy)                    \
  X(dk_copy_convert, dk_kp_copy)                                             \
  X(dk_argmax, dk_kp_pick) X(dk_sample, dk_kp_pick)                          \
  X(dk_attention_kv_f32, dk_kp_attention) X(dk_attention_kv_f16, dk_kp_attention) \
  X(dk_attention_kv_bf16, dk_kp_attention)                                   \
  X(dk_attn_split_f32, dk_kp_attn_split) X(dk_attn_split_f16, dk_kp_attn_split) \
  X(dk_attn_split_bf16, dk_kp_attn_split) X(dk_attn_merge, dk_kp_attn_split) \
  X(dk_attn_rows_f32, dk_kp_attn_split) X(dk_attn_rows_f16, dk_kp_attn_split) \
  X(dk_attn_rows_bf16, dk_kp_attn_split) X(dk_attn_flash_f16, dk_kp_attention) \
  X(dk_attention_win_f32, dk_kp_attention) X(dk_attention_win_f16, dk_kp_attention) \
  X(dk_attention_win_bf16, dk_kp_attention)                                  \
  X(dk_attn_split_win_f32, dk_kp_attn_split) X(dk_attn_split_win_f16, dk_kp_attn_split) \
  X(dk_attn_split_win_bf16, dk_kp_attn_split)                                \
  X(dk_attn_rows_win_f32, dk_kp_attn_split) X(dk_attn_rows_win_f16, dk_kp_attn_split) \
  X(dk_attn_rows_win_bf16, dk_kp_attn_split)                                 \
  X(dk_reduce_f32, dk_kp_reduce) X(dk_reduce_f16, dk_kp_reduce)              \
  X(dk_reduce_bf16, dk_kp_reduce)                                            \
  X(dk_math_f32, dk_kp_math) X(dk_math_f16, dk_kp_math) X(dk_math_bf16, dk_kp_math)

#endif /* DK_KERNEL_PARAMS_H */
