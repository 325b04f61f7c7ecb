// tools/cuda_mock/flash_host.cpp — kernels/attn_flash.cuh's prompt attention
// (dk_attn_flash_f16, DEVKIT_CUDA_FLASH) run on the host: host_block.h's
// threads, and the warp-wide operations emulated by what they compute:
//   WMMA: a fragment is its whole 16 x 16 matrix (the hardware's spread over
//     the lanes is opaque, and the kernel never looks inside one);
//     load_matrix_sync reads it in the layout named, mma_sync multiplies,
//     store_matrix_sync writes it (one lane, the warp meeting on either
//     side, as the collective it is);
//   __shfl_xor_sync: the partner lane's value; atomicMax under a lock.
// Each case draws q (f32, f16 or bf16), an f16 K/V cache and a causal offset,
// poisons the output, runs the kernel's own code over the launch's grid
// (ceil(T / 64), Hq) and compares every element with a double-precision
// attention of q rounded to f16 (the kernel's rounding), within what the
// probabilities' f16 rounding and f32 sums allow. No GPU is needed: the
// kernel has not run on one (DEVKIT_CUDA_FLASH is off until it does).
//
//   g++ -std=c++17 -O1 -pthread -Wno-unknown-pragmas -I. -o build/flash_host tools/cuda_mock/flash_host.cpp -ldl -lm
//   (tools/ci_cuda.sh runs it)
#define DEVKIT_IMPLEMENTATION
#include "devkit.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "../../kernels/dk_params.h"

#include "host_block.h"

// ---- what the kernel uses of CUDA and dk_common.cuh ------------------------------
#define DK_DEV static inline
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
struct __half { uint16_t x; };
static inline __half __float2half_rn(float f) { return __half{dk_f32_to_f16(f)}; }
struct uint4 { uint32_t x, y, z, w; };
static inline uint4 make_uint4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) { return uint4{a, b, c, d}; }
static inline uint4 __ldg(const uint4 *p) { uint4 v; memcpy(&v, p, 16); return v; }
#define __expf(x) expf(x)   /* (glibc declares an __expf of its own) */
static inline void __syncwarp() { warp_sync(); }
static std::mutex atomic_lock;
static inline unsigned long long atomicMax(unsigned long long *p, unsigned long long v) {
  std::lock_guard<std::mutex> g(atomic_lock);
  const unsigned long long old = *p;
  if (v > old) *p = v;
  return old;
}
static inline float dk_neg_inf() { return -INFINITY; }

namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };
template <typename Use, int M, int N, int K, typename T = float, typename L = void> struct fragment { float v[16][16]; };
template <typename F> static void fill_fragment(F &f, float x) {
  for (auto &row : f.v)
    for (auto &e : row) e = x;
}
template <typename Use, typename L> static void load_matrix_sync(fragment<Use, 16, 16, 16, __half, L> &f, const __half *p, unsigned ld) {
  // matrix_a row_major: (r, c) at p[r ld + c]; matrix_b col_major: (k, n) at
  // p[n ld + k]; matrix_b row_major: (k, n) at p[k ld + n]
  constexpr bool cm = std::is_same<L, col_major>::value;
  for (int r = 0; r < 16; r++)
    for (int c = 0; c < 16; c++) f.v[r][c] = dk_f16_to_f32(p[cm ? c * ld + r : r * ld + c].x);
}
template <typename LA, typename LB>
static void mma_sync(fragment<accumulator, 16, 16, 16, float> &d, const fragment<matrix_a, 16, 16, 16, __half, LA> &a,
                     const fragment<matrix_b, 16, 16, 16, __half, LB> &b, const fragment<accumulator, 16, 16, 16, float> &c) {
  float out[16][16];
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) {
      double s = c.v[i][j];
      for (int k = 0; k < 16; k++) s += (double)a.v[i][k] * b.v[k][j];
      out[i][j] = (float)s;
    }
  memcpy(d.v, out, sizeof out);
}
static void store_matrix_sync(float *p, const fragment<accumulator, 16, 16, 16, float> &f, unsigned ld, layout_t) {
  warp_sync();
  if (lane_of() == 0)
    for (int r = 0; r < 16; r++)
      for (int c = 0; c < 16; c++) p[r * ld + c] = f.v[r][c];
  warp_sync();
}
}  // namespace wmma
}  // namespace nvcuda

#include "../../kernels/attn_limits.cuh"
#include "../../kernels/attn_flash.cuh"

// ---- the cases ------------------------------------------------------------------
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double urand() { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (double)(rng >> 11) / 9007199254740992.0 * 2 - 1; }
static double f16r(double v) { return dk_f16_to_f32(dk_f32_to_f16((float)v)); }

static int run_case(int64_t T, int64_t S, int64_t Hq, int64_t Hkv, int64_t off, int qdt) {
  const int64_t D = DK_FA_D;
  std::vector<float> qf((size_t)(T * Hq * D));
  std::vector<uint16_t> q16(qf.size()), k((size_t)(S * Hkv * D)), v(k.size());
  std::vector<uint8_t> out((size_t)(T * Hq * D * 4), 0xff);   // poisoned: NaN
  for (size_t i = 0; i < qf.size(); i++) {
    qf[i] = (float)(urand() * 2);
    q16[i] = qdt == DK_KT_F16 ? dk_f32_to_f16(qf[i]) : dk_f32_to_bf16(qf[i]);
  }
  for (auto &e : k) e = dk_f32_to_f16((float)urand());
  for (auto &e : v) e = dk_f32_to_f16((float)urand());
  dk_kp_attention p;
  memset(&p, 0, sizeof p);
  p.out = (uint64_t)(uintptr_t)out.data();
  p.q = (uint64_t)(uintptr_t)(qdt == DK_KT_F32 ? (const void *)qf.data() : (const void *)q16.data());
  p.k = (uint64_t)(uintptr_t)k.data();
  p.v = (uint64_t)(uintptr_t)v.data();
  p.T = T; p.S = S; p.Hq = Hq; p.Hkv = Hkv; p.D = p.Dv = D;
  p.causal_offset = off;
  p.scale = 1.0f / 8.0f;
  p.qdt = qdt; p.kdt = DK_KT_F16; p.odt = DK_KT_F32;
  run_grid({(unsigned)((T + DK_FA_BR - 1) / DK_FA_BR), (unsigned)Hq, 1}, DK_ATTN_THREADS, [&p] { dk_attn_flash_impl(p); });
  int bad = 0;
  double worst = 0;
  std::vector<double> sc((size_t)S);
  for (int64_t t = 0; t < T; t++)
    for (int64_t h = 0; h < Hq; h++) {
      const int64_t g = h / (Hq / Hkv), lim = off < 0 ? S : std::min<int64_t>(t + off + 1, S);
      double mx = -INFINITY, z = 0;
      for (int64_t s = 0; s < lim; s++) {
        double dot = 0;
        for (int64_t d = 0; d < D; d++) {
          const double qv = dk_ld_rt(qdt == DK_KT_F32 ? (const void *)qf.data() : (const void *)q16.data(), (t * Hq + h) * D + d, qdt);
          dot += f16r(qv) * dk_f16_to_f32(k[(size_t)((s * Hkv + g) * D + d)]);
        }
        sc[(size_t)s] = dot * p.scale;
        mx = std::max(mx, sc[(size_t)s]);
      }
      for (int64_t s = 0; s < lim; s++) z += (sc[(size_t)s] = exp(sc[(size_t)s] - mx));
      for (int64_t d = 0; d < D; d++) {
        double want = 0;
        for (int64_t s = 0; s < lim; s++) want += sc[(size_t)s] / z * dk_f16_to_f32(v[(size_t)((s * Hkv + g) * D + d)]);
        float got;
        memcpy(&got, &out[(size_t)((t * Hq + h) * D + d) * 4], 4);
        // |v| <= 1: the probabilities' f16 rounding (2^-11 of each), f32 sums
        const double err = fabs(got - want), tol = 1.0 / 1024;
        if (!(err <= tol)) {
          if (bad++ < 3) printf("  [t %lld, h %lld, d %lld] got %.6g want %.6g\n", (long long)t, (long long)h, (long long)d, got, want);
        } else if (err > worst) {
          worst = err;
        }
      }
    }
  printf("T %4lld S %4lld Hq %2lld Hkv %lld offset %5lld q %-4s: %s (worst error %.3g)\n", (long long)T, (long long)S,
         (long long)Hq, (long long)Hkv, (long long)off, qdt == DK_KT_F32 ? "f32" : qdt == DK_KT_F16 ? "f16" : "bf16",
         bad ? "FAILED" : "ok", worst);
  return bad != 0;
}

int main() {
  int fail = 0;
  // the attention tests' tensor-core shapes (three 64-row tiles; a prompt
  // after a cache), rows and keys off the tiles, grouped heads, no mask
  fail |= run_case(130, 130, 4, 2, 0, DK_KT_F32);
  fail |= run_case(70, 300, 4, 4, 230, DK_KT_F16);
  fail |= run_case(21, 30, 6, 3, 9, DK_KT_BF16);
  fail |= run_case(5, 9, 2, 2, -1, DK_KT_F32);
  fail |= run_case(65, 65, 2, 1, 0, DK_KT_F32);
  printf("[flash_host] %s\n", fail ? "FAILED" : "passed");
  dk_shutdown();
  return fail;
}
