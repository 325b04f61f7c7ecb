// kernels/math.cu — elementwise math with NumPy broadcasting: sqrt, rsqrt,
// log, abs, neg, erf, clamp, pow by a scalar, pow by a tensor, and where
// (i32 mask ? a : b), for f32, f16 and bf16 values. Ran on an H100 on
// 2026-11-25; DEVKIT_CUDA_NEWOPS=0 switches them off (backends/cuda.h).
//
// Launch geometry: 1-D grid of DK_EW_THREADS-thread blocks,
//   grid.x = min(ceil(n / DK_EW_THREADS), DK_MAX_GRID_X),
// and a grid-stride loop over the output index i in [0, n) (64-bit).
//
// Indexing invariants: out is contiguous, element i at i. Unless p.flat, i
// is decomposed row-major over p.shape (p.ndim dims) and each input's
// element is sum_d c_d * stride_d with the stride 0 where it broadcasts (the
// host's dk__cuda_bcast_strides). p.flat: every input has out's shape.
// In place (out the same memory as an input) is safe: one thread reads and
// writes each element.
//
// Semantics are dk__cpu_unary1 / dk__cpu_pow / dk__cpu_where_task in
// backends/cpu.h: f32 math with C's functions (powf, erff, logf, sqrtf).
#include "dk_common.cuh"

static_assert(sizeof(dk_kp_math) == 320, "dk_kp_math layout");

DK_DEV float dk_math1(int op, float x, float f0, float f1) {
  switch (op) {
  case DK_KM_SQRT: return sqrtf(x);
  case DK_KM_RSQRT: return 1.0f / sqrtf(x);
  case DK_KM_LOG: return logf(x);
  case DK_KM_ABS: return fabsf(x);
  case DK_KM_NEG: return -x;
  case DK_KM_ERF: return erff(x);
  case DK_KM_CLAMP: return x != x ? x : (x < f0 ? f0 : (x > f1 ? f1 : x));
  default: return powf(x, f0);
  }
}

template <int DT> __device__ void dk_math_impl(const dk_kp_math &p) {
  void *out = (void *)p.out;
  for (int64_t i = dk_gtid(); i < p.n; i += dk_gstride()) {
    int64_t ia = i, ib = i, ic = i;
    if (!p.flat) {
      int64_t rem = i;
      ia = ib = ic = 0;
      for (int d = p.ndim - 1; d >= 0; d--) {
        const int64_t c = rem % p.shape[d];
        rem /= p.shape[d];
        ia += c * p.as[d];
        ib += c * p.bs[d];
        ic += c * p.cs[d];
      }
    }
    float r;
    if (p.op == DK_KM_WHERE)
      r = ((const int32_t *)p.a)[ia] != 0 ? dk_ld<DT>((const void *)p.b, ib) : dk_ld<DT>((const void *)p.c, ic);
    else if (p.op == DK_KM_POW)
      r = powf(dk_ld<DT>((const void *)p.a, ia), dk_ld<DT>((const void *)p.b, ib));
    else
      r = dk_math1(p.op, dk_ld<DT>((const void *)p.a, ia), p.f0, p.f1);
    dk_st<DT>(out, i, r);
  }
}

extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_math_f32(const __grid_constant__ dk_kp_math p) { dk_grid_wait(); dk_math_impl<DK_KT_F32>(p); }
extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_math_f16(const __grid_constant__ dk_kp_math p) { dk_grid_wait(); dk_math_impl<DK_KT_F16>(p); }
extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_math_bf16(const __grid_constant__ dk_kp_math p) { dk_grid_wait(); dk_math_impl<DK_KT_BF16>(p); }
