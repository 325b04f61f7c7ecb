// kernels/attention.cu — dk_attention with grouped-query heads:
//   q [T, Hq, D], k [S, Hkv, D], v [S, Hkv, Dv], out [T, Hq, Dv];
//   head h reads kv head g = h / (Hq / Hkv); query t sees keys
//   s < lim = min(t + causal_offset + 1, S) (causal_offset < 0: lim = S).
// q and out are f32/f16/bf16 (runtime p.qdt / p.odt); k and v share one
// float dtype, the kernel's template parameter (an f16 KV cache with f32
// activations is the common case).
//
// Launch geometry: grid.x = min(T * Hq, DK_MAX_GRID_X) blocks of
// DK_ATTN_THREADS = 128 threads (4 warps); block g handles the (t, h) rows
// g, g + gridDim.x, ... (row index t * Hq + h).
//
// Per row, keys are taken in chunks of 128 (one score per thread slot):
//   scores: warp w computes keys s = c0 + w, c0 + w + 4, ...; its lanes
//     stride over D (coalesced loads of the key row), a warp sum gives the
//     dot, lane 0 stores dot * scale into sc[s - c0] (as on the CPU: an f32
//     dot, then times scale).
//   online softmax: chunk max -> m_new = max(m, chunk max); the running sum
//     z (double) and the output accumulators (f32, thread i owns output
//     dims i, i + 128, ... < Dv) are rescaled by expf(m - m_new); then
//     e_s = expf(sc - m_new) is added to z and e_s * v[s] to the outputs.
//   end: out = acc / z. Mathematically the CPU's two-pass softmax (p = e/z,
//   then sum p v); the rounding differs by a few f32 ulps.
// S == 0 (no keys) writes zeros, as the CPU's empty sums do.
//
// Indexing invariants: all four tensors contiguous (a narrow along dim 0 of
// a cache is contiguous); q row (t, h) at (t * Hq + h) * D; k row (s, g) at
// (s * Hkv + g) * D; v row at (s * Hkv + g) * Dv; out row at (t * Hq + h) *
// Dv. D and Dv <= DK_ATTN_MAXD (the host refuses larger heads), so q fits
// in shared memory and each thread owns at most 4 output dims.
#include "dk_common.cuh"

#define DK_ATTN_CHUNK DK_ATTN_THREADS
#define DK_ATTN_PER_THREAD (DK_ATTN_MAXD / DK_ATTN_THREADS)

template <int KT> __device__ void dk_attention_impl(const dk_kp_attention &p) {
  __shared__ float qs[DK_ATTN_MAXD];
  __shared__ float sc[DK_ATTN_CHUNK];
  __shared__ float sf[33];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = DK_ATTN_THREADS / 32;
  const void *k = (const void *)p.k, *v = (const void *)p.v;
  const int64_t grp = p.Hq / p.Hkv;
  const float neg_inf = dk_neg_inf();
  for (int64_t row = blockIdx.x; row < p.T * p.Hq; row += gridDim.x) {
    const int64_t t = row / p.Hq, h = row - t * p.Hq, g = h / grp;
    int64_t lim = p.S;
    if (p.causal_offset >= 0) lim = t + p.causal_offset + 1 < p.S ? t + p.causal_offset + 1 : p.S;
    __syncthreads();   // qs and sc are still read by the previous row
    for (int64_t d = tid; d < p.D; d += DK_ATTN_THREADS) qs[d] = dk_ld_rt((const void *)p.q, row * p.D + d, p.qdt);
    float acc[DK_ATTN_PER_THREAD];
#pragma unroll
    for (int i = 0; i < DK_ATTN_PER_THREAD; i++) acc[i] = 0.0f;
    float m = neg_inf;
    double z = 0.0;
    __syncthreads();
    for (int64_t c0 = 0; c0 < lim; c0 += DK_ATTN_CHUNK) {
      const int cn = (int)(lim - c0 < DK_ATTN_CHUNK ? lim - c0 : DK_ATTN_CHUNK);
      for (int si = warp; si < cn; si += nwarps) {
        const int64_t krow = ((c0 + si) * p.Hkv + g) * p.D;
        float dot = 0.0f;
        for (int64_t d = lane; d < p.D; d += 32) dot = fmaf(qs[d], dk_ld<KT>(k, krow + d), dot);
        dot = dk_warp_reduce(dot, dk_op_sum());
        if (lane == 0) sc[si] = dot * p.scale;
      }
      __syncthreads();
      float cm = neg_inf;
      for (int si = tid; si < cn; si += DK_ATTN_THREADS) cm = fmaxf(cm, sc[si]);
      cm = dk_block_reduce(cm, sf, dk_op_max(), neg_inf);   // its barriers also publish sc
      const float m_new = fmaxf(m, cm);
      // every score so far is -inf: nothing to add. (Uniform across the block;
      // sc was last read inside dk_block_reduce, before its barriers, so the
      // next chunk may rewrite it.)
      if (m_new == neg_inf) continue;
      const float factor = expf(m - m_new);   // m = -inf on the first chunk: 0
      // each thread walks all cn scores in the same order, so z comes out
      // identical in every thread without a reduction
      double zc = 0.0;
#pragma unroll
      for (int i = 0; i < DK_ATTN_PER_THREAD; i++) acc[i] *= factor;
      for (int si = 0; si < cn; si++) {
        const float es = expf(sc[si] - m_new);
        zc += (double)es;
        const int64_t vrow = ((c0 + si) * p.Hkv + g) * p.Dv;
#pragma unroll
        for (int i = 0; i < DK_ATTN_PER_THREAD; i++) {
          const int64_t d = tid + (int64_t)i * DK_ATTN_THREADS;
          if (d < p.Dv) acc[i] = fmaf(es, dk_ld<KT>(v, vrow + d), acc[i]);
        }
      }
      z = z * (double)factor + zc;
      m = m_new;
      __syncthreads();   // every thread is done with sc before the next chunk's scores
    }
    const float inv = z > 0.0 ? (float)(1.0 / z) : 0.0f;
#pragma unroll
    for (int i = 0; i < DK_ATTN_PER_THREAD; i++) {
      const int64_t d = tid + (int64_t)i * DK_ATTN_THREADS;
      if (d < p.Dv) dk_st_rt((void *)p.out, row * p.Dv + d, z > 0.0 ? acc[i] * inv : 0.0f, p.odt);
    }
  }
}

extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS) dk_attention_kv_f32(const __grid_constant__ dk_kp_attention p) { dk_attention_impl<DK_KT_F32>(p); }
extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS) dk_attention_kv_f16(const __grid_constant__ dk_kp_attention p) { dk_attention_impl<DK_KT_F16>(p); }
extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS) dk_attention_kv_bf16(const __grid_constant__ dk_kp_attention p) { dk_attention_impl<DK_KT_BF16>(p); }
