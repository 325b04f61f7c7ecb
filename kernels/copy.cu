// kernels/copy.cu — the layout ops: dk_copy (dtype conversion, strided views
// on either side), dk_transpose (a copy whose source strides are permuted)
// and dk_concat.
//
// Launch geometry (all): 1-D grid of DK_EW_THREADS threads, grid.x =
// min(ceil(n / DK_EW_THREADS), DK_MAX_GRID_X), grid-stride over the flat
// output index i in [0, n) (row-major over p.shape).
//
// Copy indexing: coordinates c_d of i over p.shape (ndim dims, row-major);
// source element sum_d c_d * sstr[d], destination sum_d c_d * dstr[d]
// (strides in elements; a narrow's strides may exceed the shape's). When
// both tensors are dense (p.contiguous) both use i. Raw kernels copy the
// 2- or 4-byte element bit for bit (same dtype: f16/bf16 or f32/i32);
// dk_copy_convert loads as f32 and rounds to nearest even into the
// destination dtype (f32 <-> f16 <-> bf16), as dk__cpu_strided_copy does.
// Source and destination either do not overlap or are the very same
// elements (the dispatcher's rule), so the order of the writes is free.
//
// Concat indexing: out is [outer, (ad + bd) * inner] viewed flat; for i,
// r = i / ((ad + bd) * inner), c = i % ((ad + bd) * inner); c < ad * inner
// reads a[r * ad * inner + c], else b[r * bd * inner + c - ad * inner].
#include "dk_common.cuh"

DK_DEV void dk_copy_offsets(const dk_kp_copy &p, int64_t i, int64_t *so, int64_t *dof) {
  if (p.contiguous) {
    *so = i;
    *dof = i;
    return;
  }
  int64_t rem = i, s = 0, d = 0;
  for (int k = p.ndim - 1; k >= 0; k--) {
    const int64_t c = rem % p.shape[k];
    rem /= p.shape[k];
    s += c * p.sstr[k];
    d += c * p.dstr[k];
  }
  *so = s;
  *dof = d;
}

template <class E> __device__ void dk_copy_raw(const dk_kp_copy &p) {
  const E *src = (const E *)p.src;
  E *dst = (E *)p.dst;
  for (int64_t i = dk_gtid(); i < p.n; i += dk_gstride()) {
    int64_t so, dof;
    dk_copy_offsets(p, i, &so, &dof);
    dst[dof] = src[so];
  }
}

extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_copy_raw2(const __grid_constant__ dk_kp_copy p) { dk_grid_wait(); dk_copy_raw<uint16_t>(p); }
extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_copy_raw4(const __grid_constant__ dk_kp_copy p) { dk_grid_wait(); dk_copy_raw<uint32_t>(p); }

extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_copy_convert(const __grid_constant__ dk_kp_copy p) { dk_grid_wait();
  for (int64_t i = dk_gtid(); i < p.n; i += dk_gstride()) {
    int64_t so, dof;
    dk_copy_offsets(p, i, &so, &dof);
    dk_st_rt((void *)p.dst, dof, dk_ld_rt((const void *)p.src, so, p.sdt), p.ddt);
  }
}

template <class E> __device__ void dk_concat_impl(const dk_kp_concat &p) {
  const E *a = (const E *)p.a, *b = (const E *)p.b;
  E *out = (E *)p.out;
  const int64_t ar = p.ad * p.inner, br = p.bd * p.inner, orow = ar + br, n = p.outer * orow;
  for (int64_t i = dk_gtid(); i < n; i += dk_gstride()) {
    const int64_t r = i / orow, c = i - r * orow;
    out[i] = c < ar ? a[r * ar + c] : b[r * br + (c - ar)];
  }
}

extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_concat_2(const __grid_constant__ dk_kp_concat p) { dk_grid_wait(); dk_concat_impl<uint16_t>(p); }
extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_concat_4(const __grid_constant__ dk_kp_concat p) { dk_grid_wait(); dk_concat_impl<uint32_t>(p); }
