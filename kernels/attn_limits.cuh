// kernels/attn_limits.cuh — the keys each query row of an attention kernel
// sees (attention.cu's kernels, attn_flash.cuh's). Plain integer code:
// tools/cuda_mock/flash_host.cpp includes it too.
#pragma once

// the keys query row t sees: [0, lim). dk_attention_pos (p.pos != 0) reads
// the row's position from the device, so one recorded decode step serves
// every position
template <class P> __device__ __forceinline__ int64_t dk_attn_lim(const P &p, int64_t t) {
  if (p.pos) {
    const int64_t ps = ((const int32_t *)p.pos)[t];
    return ps < 0 ? 0 : ps + 1 < p.S ? ps + 1 : p.S;
  }
  if (p.causal_offset >= 0) return t + p.causal_offset + 1 < p.S ? t + p.causal_offset + 1 : p.S;
  return p.S;
}
// the first key row t sees, its limit lim: 0, or with a window (the _win
// kernels, dk_attention_window) lim - window
template <bool WIN, class P> __device__ __forceinline__ int64_t dk_attn_beg(const P &p, int64_t lim) {
  return WIN && lim > p.window ? lim - p.window : 0;
}
