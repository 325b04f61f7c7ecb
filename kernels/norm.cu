// kernels/norm.cu — rmsnorm and layernorm over the last dim, for f32, f16 and
// bf16 activations; the weight w and bias b may be any float dtype (their
// dtypes arrive at run time in p.wdt / p.bdt).
//
// Launch geometry: grid.x = min(rows, DK_MAX_GRID_X) blocks of
// DK_ROW_THREADS threads; block g handles rows g, g + gridDim.x, ...; the
// threads of a block stride over the row's p.cols columns.
//
// Indexing invariants: x and out are contiguous [rows, cols]; w and b are
// contiguous [cols] (the dispatcher checked numel == cols). Row r starts at
// element r * cols.
//
// Semantics (dk__cpu_norm_task): layernorm: mean = sum(x)/n, var = sum((x -
// mean)^2)/n (two passes, not E[x^2] - mean^2); rmsnorm: mean = 0, var =
// sum(x^2)/n; inv = 1/sqrt(var + eps) computed in double; y = (x - mean) *
// inv, then * w, then + b, rounded once at the store. The sums are
// accumulated in double, as on the CPU.
//
// In place (out == x) is safe: every read of the row in the first passes is
// ordered before the writes of the last pass by the barriers inside
// dk_block_reduce, and each element is written by the thread that reads it.
#include "dk_common.cuh"

// The cached path (p.cached, a row of at most DK_ROW_THREADS * DK_NORM_CACHE
// values): each thread loads its values of the row into registers with all
// the loads issued before the first use, then reduces and scales from
// registers. The loop below walks the row three times with one dependent
// load per trip: on an H100 a 1792-wide decode rmsnorm took 9.3 us, all of
// it load latency. Same arithmetic as the loop (double sums, one rounding
// at the store).
template <int DT, int WDT>
DK_DEV void dk_norm_store(const dk_kp_norm &p, void *out, int64_t base, const float (&v)[DK_NORM_CACHE], double mean,
                          float inv) {
  const int64_t n = p.cols;
  float wv[DK_NORM_CACHE];
#pragma unroll
  for (int i = 0; i < DK_NORM_CACHE; i++) {
    const int64_t j = threadIdx.x + (int64_t)i * blockDim.x;
    wv[i] = p.w && j < n ? dk_ld<WDT>((const void *)p.w, j) : 1.0f;
  }
#pragma unroll
  for (int i = 0; i < DK_NORM_CACHE; i++) {
    const int64_t j = threadIdx.x + (int64_t)i * blockDim.x;
    if (j < n) {
      float y = (float)((double)v[i] - mean) * inv;
      if (p.w) y *= wv[i];
      if (p.b) y += dk_ld_rt((const void *)p.b, j, p.bdt);
      dk_st<DT>(out, base + j, y);
    }
  }
}

template <int DT> DK_DEV void dk_norm_cached(const dk_kp_norm &p, double *sd) {
  void *out = (void *)p.out;
  const int64_t n = p.cols;
  for (int64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const int64_t base = r * n;
    float v[DK_NORM_CACHE];
#pragma unroll
    for (int i = 0; i < DK_NORM_CACHE; i++) {
      const int64_t j = threadIdx.x + (int64_t)i * blockDim.x;
      v[i] = j < n ? dk_ld<DT>((const void *)p.x, base + j) : 0.0f;
    }
    double mean = 0.0, acc = 0.0;
    if (p.layer) {
#pragma unroll
      for (int i = 0; i < DK_NORM_CACHE; i++) acc += (double)v[i];   // the padding is 0
      mean = dk_block_reduce(acc, sd, dk_op_sum(), 0.0) / (double)n;
      acc = 0.0;
    }
#pragma unroll
    for (int i = 0; i < DK_NORM_CACHE; i++) {
      const int64_t j = threadIdx.x + (int64_t)i * blockDim.x;
      const double d = j < n ? (double)v[i] - mean : 0.0;
      acc += d * d;
    }
    const double var = dk_block_reduce(acc, sd, dk_op_sum(), 0.0);
    const float inv = (float)(1.0 / sqrt(var / (double)n + (double)p.eps));
    switch (p.wdt) {
    case DK_KT_F16: dk_norm_store<DT, DK_KT_F16>(p, out, base, v, mean, inv); break;
    case DK_KT_BF16: dk_norm_store<DT, DK_KT_BF16>(p, out, base, v, mean, inv); break;
    default: dk_norm_store<DT, DK_KT_F32>(p, out, base, v, mean, inv); break;
    }
  }
}

template <int DT> __device__ void dk_norm_impl(const dk_kp_norm &p) {
  __shared__ double sd[33];
  if (p.cached) {
    dk_norm_cached<DT>(p, sd);
    return;
  }
  const void *x = (const void *)p.x, *w = (const void *)p.w, *b = (const void *)p.b;
  void *out = (void *)p.out;
  const int64_t n = p.cols;
  for (int64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const int64_t base = r * n;
    double mean = 0.0, acc = 0.0;
    if (p.layer) {
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x) acc += (double)dk_ld<DT>(x, base + j);
      mean = dk_block_reduce(acc, sd, dk_op_sum(), 0.0) / (double)n;
      acc = 0.0;
    }
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      double d = (double)dk_ld<DT>(x, base + j) - mean;
      acc += d * d;
    }
    const double var = dk_block_reduce(acc, sd, dk_op_sum(), 0.0);
    const float inv = (float)(1.0 / sqrt(var / (double)n + (double)p.eps));
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      float v = (float)((double)dk_ld<DT>(x, base + j) - mean) * inv;
      if (w) v *= dk_ld_rt(w, j, p.wdt);
      if (b) v += dk_ld_rt(b, j, p.bdt);
      dk_st<DT>(out, base + j, v);
    }
  }
}

extern "C" __global__ void __launch_bounds__(DK_ROW_THREADS) dk_norm_f32(const __grid_constant__ dk_kp_norm p) { dk_grid_wait(); dk_norm_impl<DK_KT_F32>(p); }
extern "C" __global__ void __launch_bounds__(DK_ROW_THREADS) dk_norm_f16(const __grid_constant__ dk_kp_norm p) { dk_grid_wait(); dk_norm_impl<DK_KT_F16>(p); }
extern "C" __global__ void __launch_bounds__(DK_ROW_THREADS) dk_norm_bf16(const __grid_constant__ dk_kp_norm p) { dk_grid_wait(); dk_norm_impl<DK_KT_BF16>(p); }
