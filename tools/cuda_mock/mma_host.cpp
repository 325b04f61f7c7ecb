// tools/cuda_mock/mma_host.cpp — kernels/gemm_mma.cuh's GEMM run on the host
// (host_block.h: a std::thread per CUDA thread, blocks one after another),
// the warp-wide instructions emulated as the PTX ISA defines them:
//   ldmatrix.m8n8.x4 (.trans): lanes 8i .. 8i + 7 give the row addresses of
//     matrix i; lane l receives in register i the elements (l / 4, 2 (l %
//     4)) and (l / 4, 2 (l % 4) + 1) of matrix i (of its transpose);
//   mma.m16n8k16.row.col: A's 16 x 16 from a0 (row g, k 2t, 2t + 1), a1 (row
//     g + 8), a2 (k + 8), a3 (both), B's 16 x 8 from b0 (k 2t, 2t + 1, column
//     g), b1 (k + 8), C's 16 x 8 as c0, c1 (row g, columns 2t, 2t + 1), c2, c3
//     (row g + 8), g = lane / 4, t = lane % 4; the sums in double here;
//   cp.async: the copy at once (its stages are the GPU's business; the
//     barriers they need are the kernel's own and run here as written).
// Each case fills A and B with random 16-bit values, poisons C, runs the
// kernel's own code and compares C with a double-precision product of the
// same 16-bit values: every element written, none wrong. No GPU is needed:
// the kernels have not run on one (DEVKIT_CUDA_MMA is off until they do).
//
//   g++ -std=c++17 -O1 -pthread -Wno-unknown-pragmas -I. -o build/mma_host tools/cuda_mock/mma_host.cpp -ldl -lm
//   (tools/ci_cuda.sh runs it)
#define DEVKIT_IMPLEMENTATION
#include "devkit.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "../../kernels/dk_params.h"

#include "host_block.h"

// ---- the kernel's primitives ------------------------------------------------
#define DK_MMA_HOST
#define DK_DEV static inline
#define __device__
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
typedef const void *dk_saddr;
DK_DEV dk_saddr dk_smem_addr(const void *p) { return p; }
DK_DEV void dk_cp_async16(dk_saddr dst, const void *src, int bytes) {
  memset((void *)dst, 0, 16);
  if (bytes) memcpy((void *)dst, src, (size_t)bytes);
}
DK_DEV void dk_cp_async_commit() {}
template <int N> DK_DEV void dk_cp_async_wait() {}

// what each lane of a warp hands to a warp-wide instruction
static const void *slot_addr[DK_GEMM_THREADS];
static uint32_t slot_a[DK_GEMM_THREADS][4], slot_b[DK_GEMM_THREADS][2];

static uint16_t h16(const void *row, int e) { uint16_t v; memcpy(&v, (const uint8_t *)row + 2 * e, 2); return v; }

template <bool TRANS> static void ldsm_x4(uint32_t (&r)[4], dk_saddr addr) {
  const int l = lane_of(), w = warp_base();
  slot_addr[threadIdx.x] = addr;
  warp_sync();
  for (int i = 0; i < 4; i++) {
    uint16_t lo, hi;
    if (!TRANS) {   // row l / 4 of matrix i, elements 2 (l % 4), + 1
      const void *row = slot_addr[w + 8 * i + l / 4];
      lo = h16(row, 2 * (l % 4));
      hi = h16(row, 2 * (l % 4) + 1);
    } else {        // the transpose: rows 2 (l % 4), + 1 of matrix i, element l / 4
      lo = h16(slot_addr[w + 8 * i + 2 * (l % 4)], l / 4);
      hi = h16(slot_addr[w + 8 * i + 2 * (l % 4) + 1], l / 4);
    }
    r[i] = (uint32_t)lo | ((uint32_t)hi << 16);
  }
  warp_sync();   // the slots are read before the next instruction writes them
}
DK_DEV void dk_ldsm_x4(uint32_t (&r)[4], dk_saddr addr) { ldsm_x4<false>(r, addr); }
DK_DEV void dk_ldsm_x4_t(uint32_t (&r)[4], dk_saddr addr) { ldsm_x4<true>(r, addr); }

static float val16(uint32_t bits, int at) { return at == DK_KT_F16 ? dk_f16_to_f32((uint16_t)bits) : dk_bf16_to_f32((uint16_t)bits); }
static float half_of(uint32_t reg, int hi, int at) { return val16(hi ? reg >> 16 : reg & 0xffffu, at); }

template <int AT> DK_DEV void dk_mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  const int l = lane_of(), w = warp_base(), g = l / 4, t = l % 4;
  float A[16][16], B[16][8];
  memcpy(slot_a[threadIdx.x], a, sizeof slot_a[0]);
  slot_b[threadIdx.x][0] = b0;
  slot_b[threadIdx.x][1] = b1;
  warp_sync();
  for (int q = 0; q < 32; q++) {   // lane q's fragments into the matrices
    const int gq = q / 4, tq = q % 4;
    for (int e = 0; e < 2; e++) {
      A[gq][2 * tq + e] = half_of(slot_a[w + q][0], e, AT);
      A[gq + 8][2 * tq + e] = half_of(slot_a[w + q][1], e, AT);
      A[gq][2 * tq + 8 + e] = half_of(slot_a[w + q][2], e, AT);
      A[gq + 8][2 * tq + 8 + e] = half_of(slot_a[w + q][3], e, AT);
      B[2 * tq + e][gq] = half_of(slot_b[w + q][0], e, AT);
      B[2 * tq + 8 + e][gq] = half_of(slot_b[w + q][1], e, AT);
    }
  }
  warp_sync();
  for (int e = 0; e < 4; e++) {
    const int r = g + (e >> 1) * 8, col = 2 * t + (e & 1);
    double s = c[e];
    for (int k = 0; k < 16; k++) s += (double)A[r][k] * B[k][col];
    c[e] = (float)s;
  }
}

// ---- what dk_common.cuh gives the kernel (with host_block.h's dk_ld_rt) --------
template <int OT> static void dk_st(void *p, int64_t i, float v) {
  if (OT == DK_KT_F32) ((float *)p)[i] = v;
  else ((uint16_t *)p)[i] = OT == DK_KT_F16 ? dk_f32_to_f16(v) : dk_f32_to_bf16(v);
}

#include "../../kernels/gemm_walk.cuh"
#include "../../kernels/gemm_mma.cuh"

// ---- the cases ------------------------------------------------------------------
static uint64_t rng = 0x2545f4914f6cdd1dull;
static double urand() { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (double)(rng >> 11) / 9007199254740992.0 * 2 - 1; }

// one launch, the host's grid (dk__cuda_gemm_launch's, with small caps so
// the grid-stride loops run too); NT: C[z] = A[z] . W^T, NN: C[z] = A[z] . B[z]
template <int AT, bool NT, int OT> static int run_case(int64_t M, int64_t N, int64_t K, int64_t batch, int bcast, int bias,
                                                       unsigned capx, unsigned capy) {
  const int16_t dt = AT;
  const int64_t lda = K, ldb = N;
  const int64_t asz = batch * M * K, bsz = NT ? N * K : (bcast ? 1 : batch) * K * N;
  std::vector<uint16_t> A((size_t)asz), B((size_t)bsz), bv((size_t)N);
  std::vector<uint8_t> C((size_t)(batch * M * N * (OT == DK_KT_F32 ? 4 : 2)), 0xff);   // poisoned: NaN either way
  auto to16 = [&](double v) { return AT == DK_KT_F16 ? dk_f32_to_f16((float)v) : dk_f32_to_bf16((float)v); };
  for (auto &v : A) v = to16(urand());
  for (auto &v : B) v = to16(urand());
  for (auto &v : bv) v = to16(urand());
  dk_kp_gemm p;
  memset(&p, 0, sizeof p);
  p.a = (uint64_t)(uintptr_t)A.data();
  p.b = (uint64_t)(uintptr_t)B.data();
  p.c = (uint64_t)(uintptr_t)C.data();
  p.bias = bias ? (uint64_t)(uintptr_t)bv.data() : 0;
  p.M = M; p.N = N; p.K = K;
  p.lda = lda; p.ldb = ldb; p.ldc = N;
  p.b_row_bytes = K * 2;
  p.batch = batch;
  p.nbdims = batch > 1 ? 1 : 0;
  p.bshape[0] = batch;
  p.abstr[0] = M * K;
  p.bbstr[0] = NT || bcast ? 0 : K * N;
  p.wdt = dt;
  p.biasdt = dt;
  p.has_bias = bias;
  unsigned gx = (unsigned)((N + DK_GEMM_BN - 1) / DK_GEMM_BN), gy = (unsigned)((M + DK_GEMM_BM - 1) / DK_GEMM_BM);
  run_grid({gx < capx ? gx : capx, gy < capy ? gy : capy, (unsigned)(batch < 2 ? batch : 2)}, DK_GEMM_THREADS,
           [&p] { dk_gemm_mma<AT, NT, OT>(p); });
  int bad = 0;
  double worst = 0;
  for (int64_t z = 0; z < batch; z++)
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        double s = bias ? val16(bv[n], AT) : 0, mag = fabs(s);
        for (int64_t k = 0; k < K; k++) {
          double a = val16(A[(size_t)(z * M * K + m * lda + k)], AT);
          double b = NT ? val16(B[(size_t)(n * K + k)], AT) : val16(B[(size_t)((bcast ? 0 : z) * K * N + k * ldb + n)], AT);
          s += a * b;
          mag += fabs(a * b);
        }
        const int64_t i = z * M * N + m * N + n;
        double got;
        if (OT == DK_KT_F32) { float f; memcpy(&f, &C[(size_t)i * 4], 4); got = f; }
        else { uint16_t h; memcpy(&h, &C[(size_t)i * 2], 2); got = val16(h, OT); }
        // f32 sums of K products, then the output's rounding
        const double tol = mag * (K + 2) * 1.2e-7 + fabs(s) * (OT == DK_KT_F32 ? 0 : OT == DK_KT_F16 ? 1.0 / 2048 : 1.0 / 256);
        const double err = fabs(got - s);
        if (!(err <= tol)) {
          if (bad++ < 3)
            printf("  [%lld,%lld,%lld] got %.6g want %.6g (tol %.3g)\n", (long long)z, (long long)m, (long long)n, got, s, tol);
        } else if (err > worst) {
          worst = err;
        }
      }
  printf("%-4s %s out %-4s M %4lld N %4lld K %4lld batch %lld%s%s grid %ux%ux%u: %s (worst error %.3g)\n",
         AT == DK_KT_F16 ? "f16" : "bf16", NT ? "NT" : "NN", OT == DK_KT_F32 ? "f32" : AT == DK_KT_F16 ? "f16" : "bf16",
         (long long)M, (long long)N, (long long)K, (long long)batch, bcast ? " (B broadcast)" : "", bias ? " bias" : "",
         gridDim.x, gridDim.y, gridDim.z, bad ? "FAILED" : "ok", worst);
  return bad != 0;
}

int main() {
  int fail = 0;
  // partial tiles in M and N, K across several 32-value tiles and one
  // short of a tile (K % 8 == 0 only), a grid smaller than the tiles
  fail |= run_case<DK_KT_F16, true, DK_KT_F16>(130, 136, 72, 1, 0, 1, 8, 8);
  fail |= run_case<DK_KT_BF16, true, DK_KT_BF16>(64, 40, 264, 1, 0, 0, 8, 8);
  fail |= run_case<DK_KT_F16, true, DK_KT_F32>(257, 128, 40, 1, 0, 1, 1, 1);
  fail |= run_case<DK_KT_BF16, true, DK_KT_F32>(37, 33 * 8, 64, 1, 0, 0, 8, 8);
  fail |= run_case<DK_KT_F16, false, DK_KT_F16>(70, 200, 96, 3, 0, 0, 8, 8);
  fail |= run_case<DK_KT_BF16, false, DK_KT_BF16>(128, 136, 8, 2, 1, 0, 1, 1);
  fail |= run_case<DK_KT_F16, false, DK_KT_F16>(1, 8, 16, 1, 0, 0, 8, 8);
  printf("[mma_host] %s\n", fail ? "FAILED" : "passed");
  dk_shutdown();
  return fail;
}
