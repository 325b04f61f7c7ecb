// kernels/rope.cu — dk_rope, interleaved (DK_ROPE_NORMAL) and NeoX layouts,
// f32/f16/bf16.
//
// Launch geometry: 1-D grid of DK_EW_THREADS threads, grid.x =
// min(ceil(rows * per_row / DK_EW_THREADS), DK_MAX_GRID_X), grid-stride over
// the flat work index w in [0, rows * per_row), per_row = n_rot / 2 +
// (D - n_rot): work item (r, j) = (w / per_row, w % per_row).
//   j <  n_rot / 2: rotate the pair (i0, i1) of row r, i = j:
//                   normal: (2i, 2i + 1); neox: (i, i + n_rot / 2).
//   j >= n_rot / 2: copy element n_rot + (j - n_rot / 2) unchanged.
//
// Indexing invariants: x and out contiguous; rows = numel / D, row r starts
// at r * D; x is [..., T, H, D] (H = 1 for 2-D x), so row r is token
// (r / H) % T and its position is pos[(r / H) % T]. Every element of a row
// is read and written by exactly one work item, so out == x is safe.
//
// Semantics: the same expression as llama2.c's run.c and dk__cpu_rope_task:
//   freq = 1 / powf(theta, 2i / n_rot), v = pos * freq,
//   (a, b) -> (a cos v - b sin v, a sin v + b cos v), in f32, IEEE powf,
//   cosf and sinf (full-range argument reduction).
#include "dk_common.cuh"

template <int DT> __device__ void dk_rope_impl(const dk_kp_rope &p) {
  const void *x = (const void *)p.x;
  void *out = (void *)p.out;
  const int32_t *pos = (const int32_t *)p.pos;
  const int half = p.n_rot / 2;
  const int64_t per_row = half + (p.D - p.n_rot), total = p.rows * per_row;
  for (int64_t w = dk_gtid(); w < total; w += dk_gstride()) {
    const int64_t r = w / per_row, j = w - r * per_row, base = r * p.D;
    if (j < half) {
      const int i = (int)j;
      const float pr = (float)pos[(r / p.H) % p.T];
      const float freq = 1.0f / powf(p.theta, (float)(2 * i) / (float)p.n_rot), v = pr * freq;
      const float cs = cosf(v), sn = sinf(v);
      const int64_t i0 = p.neox ? i : 2 * i, i1 = p.neox ? i + half : 2 * i + 1;
      const float a = dk_ld<DT>(x, base + i0), b = dk_ld<DT>(x, base + i1);
      dk_st<DT>(out, base + i0, a * cs - b * sn);
      dk_st<DT>(out, base + i1, a * sn + b * cs);
    } else {
      const int64_t e = p.n_rot + (j - half);
      dk_st<DT>(out, base + e, dk_ld<DT>(x, base + e));
    }
  }
}

extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_rope_f32(const __grid_constant__ dk_kp_rope p) { dk_grid_wait(); dk_rope_impl<DK_KT_F32>(p); }
extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_rope_f16(const __grid_constant__ dk_kp_rope p) { dk_grid_wait(); dk_rope_impl<DK_KT_F16>(p); }
extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_rope_bf16(const __grid_constant__ dk_kp_rope p) { dk_grid_wait(); dk_rope_impl<DK_KT_BF16>(p); }
