// kernels/softmax.cu — softmax over the last dim, plain and masked (scale
// and causal mask), for f32, f16 and bf16.
//
// Launch geometry: grid.x = min(rows, DK_MAX_GRID_X) blocks of
// DK_ROW_THREADS threads; block g handles rows g, g + gridDim.x, ...;
// threads stride over the row's columns.
//
// Indexing invariants: x and out are contiguous [rows, cols], rows = numel /
// cols. For the masked form, row r is row i = r % rows_per of its matrix
// (rows_per = size of the last-but-one dim) and sees columns j < lim =
// min(i + offset + 1, cols); offset < 0 means no mask (lim = cols).
//
// Semantics (dk__cpu_softmax_task): masked: v = x * scale (all columns);
// m = max over j < lim; e_j = expf(v_j - m); sum of e_j in double;
// y_j = (float)(e_j / sum) for j < lim, 0 beyond. The division is done as a
// multiplication by the double reciprocal (the same value to within a
// double ulp before the rounding to f32).
//
// In place (out == x) is safe: the reads of the first two passes are ordered
// before the writes by the barriers in dk_block_reduce; each element of the
// last pass is read and written by one thread.
#include "dk_common.cuh"

template <int DT> __device__ void dk_softmax_impl(const dk_kp_softmax &p) {
  __shared__ float sf[33];
  __shared__ double sd[33];
  const void *x = (const void *)p.x;
  void *out = (void *)p.out;
  const int64_t n = p.cols;
  const float neg_inf = dk_neg_inf();
  for (int64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const int64_t base = r * n;
    int64_t lim = n;
    if (p.masked && p.offset >= 0) {
      const int64_t i = r % p.rows_per;
      lim = i + p.offset + 1 < n ? i + p.offset + 1 : n;
    }
    float m = neg_inf;
    for (int64_t j = threadIdx.x; j < lim; j += blockDim.x) {
      float v = dk_ld<DT>(x, base + j);
      if (p.masked) v *= p.scale;
      m = fmaxf(m, v);
    }
    m = dk_block_reduce(m, sf, dk_op_max(), neg_inf);
    // all -inf (fully masked): shift by 0, so s is 0 and the row zeros, or
    // NaN when the row holds a NaN (devkit.h, dk_softmax)
    if (m == neg_inf) m = 0.0f;
    double s = 0.0;
    for (int64_t j = threadIdx.x; j < lim; j += blockDim.x) {
      float v = dk_ld<DT>(x, base + j);
      if (p.masked) v *= p.scale;
      s += (double)expf(v - m);
    }
    s = dk_block_reduce(s, sd, dk_op_sum(), 0.0);
    const double inv = s == 0.0 ? 0.0 : 1.0 / s;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      float y = 0.0f;
      if (j < lim) {
        float v = dk_ld<DT>(x, base + j);
        if (p.masked) v *= p.scale;
        y = s == 0.0 ? 0.0f : (float)((double)expf(v - m) * inv);
      }
      dk_st<DT>(out, base + j, y);
    }
  }
}

extern "C" __global__ void __launch_bounds__(DK_ROW_THREADS) dk_softmax_f32(const __grid_constant__ dk_kp_softmax p) { dk_grid_wait(); dk_softmax_impl<DK_KT_F32>(p); }
extern "C" __global__ void __launch_bounds__(DK_ROW_THREADS) dk_softmax_f16(const __grid_constant__ dk_kp_softmax p) { dk_grid_wait(); dk_softmax_impl<DK_KT_F16>(p); }
extern "C" __global__ void __launch_bounds__(DK_ROW_THREADS) dk_softmax_bf16(const __grid_constant__ dk_kp_softmax p) { dk_grid_wait(); dk_softmax_impl<DK_KT_BF16>(p); }
