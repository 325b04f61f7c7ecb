// tools/cuda_mock/quants_host.cpp — kernels/quants.cuh's block decoders run
// on the host, against the CPU backend's dequantization (bit for bit with
// the `gguf` package's, tests/test_quant.c), for every format the CUDA
// kernels decode that way: dkq_value a value at a time, and dkq_piece (the
// decode GEMV's 8 values a piece, with its own loads for q4_K, q5_K and q6_K)
// against it. The decoders are plain integer and float code; the CUDA
// intrinsics they use have host stand-ins below with the same results
// (__fmul_rn and __fadd_rn: one IEEE operation each, no contraction).
// Then, per format, the decode GEMV built on dkq_piece (kernels/gemv2k.cuh,
// DEVKIT_CUDA_GEMVK) runs on host threads (host_block.h; its warp sums by
// the same butterfly of shuffles) against a double-precision product of
// the dequantized rows.
// No GPU is needed: the iq formats' CUDA values and dk_gemv2k have not run
// on one.
//
//   g++ -std=c++17 -O2 -ffp-contract=off -Wno-unknown-pragmas -I. -o build/quants_host
//       tools/cuda_mock/quants_host.cpp -ldl -lm -lpthread   (tools/ci_cuda.sh runs it)
#define DEVKIT_IMPLEMENTATION
#include "devkit.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define DKQ_HOST_CHECK
#define DK_DEV static inline
#define __constant__ static const
struct uint4 { uint32_t x, y, z, w; };
struct uint2 { uint32_t x, y; };
static inline uint2 make_uint2(uint32_t a, uint32_t b) { return uint2{a, b}; }
static inline float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }
static inline float __fadd_rn(float a, float b) { volatile float r = a + b; return r; }
static inline int __popc(uint32_t v) { return __builtin_popcount(v); }
static inline float dk_h2f(uint16_t h) { return dk_f16_to_f32(h); }
#include "../../kernels/quants.cuh"

// ---- dk_gemv2k (kernels/gemv2k.cuh, DEVKIT_CUDA_GEMVK) on host threads ----------------
#include <cmath>
#include <vector>
#include "../../kernels/dk_params.h"
#include "host_block.h"
#define __device__
#define __shared__ static
struct float4 { float x, y, z, w; };
static inline float4 __ldg(const float4 *p) { float4 v; memcpy(&v, p, 16); return v; }
struct dk_op_sum {};
// dk_common.cuh's warp sum: the same butterfly (xor 16, 8, ... 1)
static inline float dk_warp_reduce(float v, dk_op_sum) {
  for (int o = 16; o > 0; o >>= 1) v = v + __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
#include "../../kernels/gemv_rows.cuh"
#include "../../kernels/gemv2k.cuh"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (uint32_t)(rng >> 16); }

// random blocks of dt (f16 fields with finite, moderate exponents, as a
// quantizer writes), each decoded by the CPU, dkq_value and dkq_piece
template <int DT> static int check(dk_dtype dt) {
  enum { NB = 4000 };
  const int bs = dk_dtype_block(dt), bb = (int)dk_dtype_block_bytes(dt);
  uint8_t *blk = (uint8_t *)aligned_alloc(16, (size_t)NB * 256);   // 256 >= any block, keeps 16-byte alignment
  float *ref = (float *)malloc((size_t)bs * sizeof(float));
  int b, j, bad = 0;
  for (b = 0; b < NB; b++) {
    uint8_t *p = blk + (size_t)b * 256;
    for (j = 0; j < bb; j++) p[j] = (uint8_t)next();
    // the f16 scales: d (and dmin) at the start, q6_K's d at 208, q2_K's and q3_K's at the end
    const int scales[4] = {0, 2, bb - 4, bb - 2};
    for (int o : scales)
      if (o >= 0 && o + 1 < bb) p[o + 1] = (uint8_t)((p[o + 1] & 0x83) | 0x38);
    dk_dequantize(dt, p, bs, ref);
    for (j = 0; j < bs; j += 8) {
      float v[8];
      dkq_piece<DT>(p, j, v);
      for (int i = 0; i < 8; i++) {
        const float one = dkq_value(DT, p, j + i);
        if ((memcmp(&one, &ref[j + i], 4) || memcmp(&v[i], &ref[j + i], 4)) && bad++ < 3)
          printf("quants_host: %s block %d value %d: cpu %.9g, dkq_value %.9g, dkq_piece %.9g\n", dk_dtype_name(dt), b,
                 j + i, ref[j + i], one, v[i]);
      }
    }
  }
  printf("quants_host: %-8s %d blocks, %d values differ\n", dk_dtype_name(dt), NB, bad);
  free(blk);
  free(ref);
  return bad != 0;
}

// out[M, N] = x[M, K] . W[N, K]^T (+ bias) through dk_gemv2k_impl<DT> on the
// launch's grid (a block a DK_GEMV2K_ROWS rows, capped so the grid-stride
// loop runs too), against a double-precision product of the CPU's
// dequantization of the same rows: every element written (out poisoned),
// each within the f32 sums' bound
template <int DT> static int gemv_check(dk_dtype dt, int64_t M, int64_t N, int64_t K, int bias, unsigned cap) {
  const int64_t rb = (int64_t)(K / dk_dtype_block(dt)) * (int64_t)dk_dtype_block_bytes(dt);
  std::vector<float> wf((size_t)(N * K)), x((size_t)(M * K)), wd((size_t)(N * K)), bv((size_t)N), out((size_t)(M * N), NAN);
  uint8_t *w = (uint8_t *)aligned_alloc(16, (size_t)((N * rb + 15) / 16 * 16));
  for (auto &v : wf) v = (float)(int32_t)next() / 2147483648.0f;
  for (auto &v : x) v = (float)(int32_t)next() / 2147483648.0f;
  for (auto &v : bv) v = (float)(int32_t)next() / 2147483648.0f;
  for (int64_t n = 0; n < N; n++) {   // row by row, as GGUF stores them
    dk_quantize(dt, &wf[(size_t)(n * K)], K, w + n * rb);
    dk_dequantize(dt, w + n * rb, K, &wd[(size_t)(n * K)]);
  }
  dk_kp_gemv p;
  memset(&p, 0, sizeof p);
  p.out = (uint64_t)(uintptr_t)out.data();
  p.x = (uint64_t)(uintptr_t)x.data();
  p.w = (uint64_t)(uintptr_t)w;
  p.bias = bias ? (uint64_t)(uintptr_t)bv.data() : 0;
  p.M = M; p.N = N; p.K = K;
  p.w_row_bytes = rb;
  p.xdt = DK_KT_F32; p.odt = DK_KT_F32; p.bdt = DK_KT_F32; p.has_bias = bias;
  p.wdt = DT;
  const unsigned blocks = (unsigned)((N + DK_GEMV2K_ROWS - 1) / DK_GEMV2K_ROWS);
  run_grid({blocks < cap ? blocks : cap, 1, 1}, DK_GEMV_THREADS, [&p] { dk_gemv2k_impl<DT>(p); });
  int bad = 0;
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      double s = bias ? bv[(size_t)n] : 0, mag = fabs(s);
      for (int64_t k = 0; k < K; k++) {
        s += (double)wd[(size_t)(n * K + k)] * x[(size_t)(m * K + k)];
        mag += fabs((double)wd[(size_t)(n * K + k)] * x[(size_t)(m * K + k)]);
      }
      const double got = out[(size_t)(m * N + n)];
      if (!(fabs(got - s) <= mag * (K + 2) * 1.2e-7) && bad++ < 3)
        printf("quants_host: gemv2k %s [%lld, %lld]: got %.9g, want %.9g\n", dk_dtype_name(dt), (long long)m, (long long)n, got, s);
    }
  printf("quants_host: gemv2k %-8s M %lld N %3lld K %4lld%s: %s\n", dk_dtype_name(dt), (long long)M, (long long)N,
         (long long)K, bias ? " bias" : "", bad ? "FAILED" : "ok");
  free(w);
  return bad != 0;
}

// one format's decoders, then its rows-per-block GEMV: M of 1 and 4, N off
// the 4-row blocks, K of several blocks (and past one thread's pieces)
template <int DT> static int check_all(dk_dtype dt) {
  const int64_t bs = dk_dtype_block(dt);
  int fail = check<DT>(dt);
  fail |= gemv_check<DT>(dt, 1, 37, bs * 40, 1, 64);
  fail |= gemv_check<DT>(dt, 4, 10, bs * 4, 0, 2);
  return fail;
}

int main(void) {
  int fail = 0;
  fail |= check_all<DK_KT_Q4_1>(DK_Q4_1);
  fail |= check_all<DK_KT_Q5_0>(DK_Q5_0);
  fail |= check_all<DK_KT_Q5_1>(DK_Q5_1);
  fail |= check_all<DK_KT_Q2_K>(DK_Q2_K);
  fail |= check_all<DK_KT_Q3_K>(DK_Q3_K);
  fail |= check_all<DK_KT_Q4_K>(DK_Q4_K);
  fail |= check_all<DK_KT_Q5_K>(DK_Q5_K);
  fail |= check_all<DK_KT_Q6_K>(DK_Q6_K);
  fail |= check_all<DK_KT_IQ4_NL>(DK_IQ4_NL);
  fail |= check_all<DK_KT_IQ4_XS>(DK_IQ4_XS);
  fail |= check_all<DK_KT_IQ3_XXS>(DK_IQ3_XXS);
  fail |= check_all<DK_KT_IQ3_S>(DK_IQ3_S);
  fail |= check_all<DK_KT_IQ2_XXS>(DK_IQ2_XXS);
  fail |= check_all<DK_KT_IQ2_XS>(DK_IQ2_XS);
  fail |= check_all<DK_KT_IQ2_S>(DK_IQ2_S);
  printf("quants_host: %s\n", fail ? "FAILED" : "passed");
  return fail;
}
