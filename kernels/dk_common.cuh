// kernels/dk_common.cuh — device helpers shared by every kernel file.
//
// Loads and stores by dtype (f16/bf16 live in memory as uint16_t bit
// patterns; conversions round to nearest even, as dk_f32_to_f16 and
// dk_f32_to_bf16 do on the host), warp and block reductions, and the
// quantized block layouts. Nothing here uses fast-math intrinsics: expf,
// erff, tanhf, powf, sinf, cosf and division are the IEEE-accurate versions
// (the build passes no --use_fast_math), so results stay within a few ulp of
// the CPU backend.
#pragma once

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>

#include "dk_params.h"

#define DK_DEV __device__ __forceinline__

// Programmatic dependent launch (sm_90+). Every kernel begins with
// dk_grid_wait(): with DEVKIT_CUDA_PDL the host launches a kernel while the
// one before it in the stream still runs, and the wait holds every thread
// until that kernel has finished and its writes are visible, so nothing is
// read or overwritten early; what overlaps is the launch and the block
// scheduling, about a microsecond a kernel at decode. The trigger after it
// lets the next kernel be launched the same way as soon as this one's
// blocks are all resident. Launched the ordinary way, both are no-ops.
// tools/ci_cuda.sh checks that every __global__ kernel begins with it.
DK_DEV void dk_grid_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// One parameter struct per kernel, by value; the ABI is checked on the host.
static_assert(sizeof(dk_kp_binary) == 240, "dk_kp_binary layout");
static_assert(sizeof(dk_kp_unary) == 40, "dk_kp_unary layout");
static_assert(sizeof(dk_kp_norm) == 72, "dk_kp_norm layout");
static_assert(sizeof(dk_kp_softmax) == 56, "dk_kp_softmax layout");
static_assert(sizeof(dk_kp_gemv) == 96, "dk_kp_gemv layout");
static_assert(sizeof(dk_kp_gemm) == 304, "dk_kp_gemm layout");
static_assert(sizeof(dk_kp_embedding) == 72, "dk_kp_embedding layout");
static_assert(sizeof(dk_kp_rope) == 72, "dk_kp_rope layout");
static_assert(sizeof(dk_kp_concat) == 56, "dk_kp_concat layout");
static_assert(sizeof(dk_kp_copy) == 232, "dk_kp_copy layout");
static_assert(sizeof(dk_kp_pick) == 56, "dk_kp_pick layout");
static_assert(sizeof(dk_kp_attention) == 120, "dk_kp_attention layout");
static_assert(sizeof(dk_kp_attn_split) == 152, "dk_kp_attn_split layout");

DK_DEV float dk_neg_inf() { return __int_as_float((int)0xff800000u); }

// ---- scalar conversions ----------------------------------------------------

DK_DEV float dk_h2f(uint16_t h) { return __half2float(__ushort_as_half(h)); }
DK_DEV float dk_b2f(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
DK_DEV uint16_t dk_f2h(float f) { return __half_as_ushort(__float2half_rn(f)); }
DK_DEV uint16_t dk_f2b(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }

// element i of a float tensor of dtype DT, as f32
template <int DT> DK_DEV float dk_ld(const void *p, int64_t i);
template <> DK_DEV float dk_ld<DK_KT_F32>(const void *p, int64_t i) { return ((const float *)p)[i]; }
template <> DK_DEV float dk_ld<DK_KT_F16>(const void *p, int64_t i) { return dk_h2f(((const uint16_t *)p)[i]); }
template <> DK_DEV float dk_ld<DK_KT_BF16>(const void *p, int64_t i) { return dk_b2f(((const uint16_t *)p)[i]); }

template <int DT> DK_DEV void dk_st(void *p, int64_t i, float v);
template <> DK_DEV void dk_st<DK_KT_F32>(void *p, int64_t i, float v) { ((float *)p)[i] = v; }
template <> DK_DEV void dk_st<DK_KT_F16>(void *p, int64_t i, float v) { ((uint16_t *)p)[i] = dk_f2h(v); }
template <> DK_DEV void dk_st<DK_KT_BF16>(void *p, int64_t i, float v) { ((uint16_t *)p)[i] = dk_f2b(v); }

// the same with the dtype known only at run time (operands whose dtype may
// differ from the kernel's main one: norm weights, bias, activations staged
// once into shared memory); a switch costs nothing next to the memory access
DK_DEV float dk_ld_rt(const void *p, int64_t i, int dt) {
  switch (dt) {
  case DK_KT_F16: return dk_h2f(((const uint16_t *)p)[i]);
  case DK_KT_BF16: return dk_b2f(((const uint16_t *)p)[i]);
  default: return ((const float *)p)[i];
  }
}
DK_DEV void dk_st_rt(void *p, int64_t i, float v, int dt) {
  switch (dt) {
  case DK_KT_F16: ((uint16_t *)p)[i] = dk_f2h(v); break;
  case DK_KT_BF16: ((uint16_t *)p)[i] = dk_f2b(v); break;
  default: ((float *)p)[i] = v; break;
  }
}

// 8 values of a float dtype from their raw 16 (f32: 32) bytes: the GEMV's
// weights and split-K attention's K/V rows, loaded as 16-byte vectors
template <int WT> DK_DEV void dk_cvt8(const uint4 &a, const uint4 &b, float *v) {
  if constexpr (WT == DK_KT_F32) {
    v[0] = __uint_as_float(a.x); v[1] = __uint_as_float(a.y); v[2] = __uint_as_float(a.z); v[3] = __uint_as_float(a.w);
    v[4] = __uint_as_float(b.x); v[5] = __uint_as_float(b.y); v[6] = __uint_as_float(b.z); v[7] = __uint_as_float(b.w);
  } else {
    const uint32_t w4[4] = {a.x, a.y, a.z, a.w};
    (void)b;
#pragma unroll
    for (int i = 0; i < 4; i++) {
      if constexpr (WT == DK_KT_F16) {
        const float2 f = __half22float2(*(const __half2 *)&w4[i]);
        v[2 * i] = f.x;
        v[2 * i + 1] = f.y;
      } else {
        v[2 * i] = __uint_as_float(w4[i] << 16);
        v[2 * i + 1] = __uint_as_float(w4[i] & 0xffff0000u);
      }
    }
  }
}

// ---- quantized blocks (GGUF) -------------------------------------------------
// q8_0: f16 d, then 32 int8: value j = d * qs[j]                    (34 bytes)
// q4_0: f16 d, then 16 bytes: value j = d * ((qs[j] & 15) - 8),
//                             value j + 16 = d * ((qs[j] >> 4) - 8) (18 bytes)
// Blocks are only 2-byte aligned (34 and 18 are not multiples of 4), so they
// are read with 16-bit loads unless a caller proved more alignment.
#define DK_Q8_BYTES 34
#define DK_Q4_BYTES 18

// value j (0..31) of the block at blk (2-byte aligned), as f32
DK_DEV float dk_q8_value(const uint8_t *blk, int j) {
  float d = dk_h2f(*(const uint16_t *)blk);
  return d * (float)(int8_t)blk[2 + j];
}
DK_DEV float dk_q4_value(const uint8_t *blk, int j) {
  float d = dk_h2f(*(const uint16_t *)blk);
  int q = j < 16 ? (blk[2 + j] & 15) : (blk[2 + j - 16] >> 4);
  return d * (float)(q - 8);
}

// ---- reductions --------------------------------------------------------------

struct dk_op_sum {
  template <class T> DK_DEV T operator()(T a, T b) const { return a + b; }
};
struct dk_op_max {
  // fmaxf ignores a NaN operand, as the CPU's `v > m ? v : m` does
  DK_DEV float operator()(float a, float b) const { return fmaxf(a, b); }
};

template <class T, class F> DK_DEV T dk_warp_reduce(T v, F f) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Every thread of the block must call it (blockDim.x a multiple of 32, at
// most 1024); every thread gets the result. s: 33 entries of shared memory.
// The leading barrier protects s from the previous call's readers.
template <class T, class F> DK_DEV T dk_block_reduce(T v, T *s, F f, T ident) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  v = dk_warp_reduce(v, f);
  __syncthreads();
  if (lane == 0) s[w] = v;
  __syncthreads();
  if (w == 0) {
    T x = lane < nw ? s[lane] : ident;
    x = dk_warp_reduce(x, f);
    if (lane == 0) s[32] = x;
  }
  __syncthreads();
  return s[32];
}

// grid-stride helpers: 64-bit indices everywhere (tensors may exceed 2^31)
DK_DEV int64_t dk_gtid() { return (int64_t)blockIdx.x * blockDim.x + threadIdx.x; }
DK_DEV int64_t dk_gstride() { return (int64_t)gridDim.x * blockDim.x; }
