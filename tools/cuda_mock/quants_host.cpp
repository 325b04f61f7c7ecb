// tools/cuda_mock/quants_host.cpp — kernels/quants.cuh's block decoders run
// on the host, against the CPU backend's dequantization (bit for bit with
// the `gguf` package's, tests/test_quant.c), for every format the CUDA
// kernels decode that way: dkq_value a value at a time, and dkq_piece (the
// decode GEMV's 8 values a piece, with its own loads for q4_K, q5_K and q6_K)
// against it. The decoders are plain integer and float code; the CUDA
// intrinsics they use have host stand-ins below with the same results
// (__fmul_rn and __fadd_rn: one IEEE operation each, no contraction).
// No GPU is needed: the iq formats' CUDA values have not run on one.
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

int main(void) {
  int fail = 0;
  fail |= check<DK_KT_Q4_1>(DK_Q4_1);
  fail |= check<DK_KT_Q5_0>(DK_Q5_0);
  fail |= check<DK_KT_Q5_1>(DK_Q5_1);
  fail |= check<DK_KT_Q2_K>(DK_Q2_K);
  fail |= check<DK_KT_Q3_K>(DK_Q3_K);
  fail |= check<DK_KT_Q4_K>(DK_Q4_K);
  fail |= check<DK_KT_Q5_K>(DK_Q5_K);
  fail |= check<DK_KT_Q6_K>(DK_Q6_K);
  fail |= check<DK_KT_IQ4_NL>(DK_IQ4_NL);
  fail |= check<DK_KT_IQ4_XS>(DK_IQ4_XS);
  fail |= check<DK_KT_IQ3_XXS>(DK_IQ3_XXS);
  fail |= check<DK_KT_IQ3_S>(DK_IQ3_S);
  fail |= check<DK_KT_IQ2_XXS>(DK_IQ2_XXS);
  fail |= check<DK_KT_IQ2_XS>(DK_IQ2_XS);
  fail |= check<DK_KT_IQ2_S>(DK_IQ2_S);
  printf("quants_host: %s\n", fail ? "FAILED" : "passed");
  return fail;
}
