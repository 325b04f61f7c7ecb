// kernels/attn_flash.cuh — prompt attention on tensor cores (attention.cu
// launches it as dk_attn_flash_f16). tools/cuda_mock/flash_host.cpp runs
// this very code on the host (a thread per CUDA thread, WMMA and the warp
// shuffles emulated) against a double-precision attention.
#pragma once

// ==== prompt attention on tensor cores (DEVKIT_CUDA_FLASH=1) ====================
// Not yet run on a GPU, hence off by default. The host takes it for prompts
// (T > 1) with an f16 KV cache, head dims D = Dv = DK_FA_D (64: Llama 3.2
// 1B, SmolLM2, Qwen2.5 0.5B, the synthetic 1B) and 16-byte aligned K/V.
//
// Precision: q is rounded to f16 and so are the probabilities before they
// meet V (the rule of dk_device_props.attn_x16); scores, the softmax's max
// and sum, and the output accumulate in f32. (The f16 KV cache is exact.)
//
// Geometry: grid (ceil(T / 64), Hq); a block of DK_ATTN_THREADS = 128 = 4
// warps takes query rows t0 = 64 * blockIdx.x ... t0 + 63 of head h =
// blockIdx.y (kv head g = h / (Hq / Hkv)); warp w owns rows t0 + 16w ... +
// 15. Keys go by tiles of 64 up to the largest limit of the block's rows:
//   S = Q_w K^T: WMMA 16x16x16 (f16 in, f32 out), Q_w held in fragments from
//     the start, K's tile in shared memory Ks[key][d]; S goes to the warp's
//     Sw[16][DK_FA_LDS] floats (the fragments' layout is opaque, so the
//     softmax works on shared memory);
//   softmax: lane l owns row r = l / 2 and columns / output dims (l % 2) *
//     32 ... + 31: the row's max through one shuffle, m_new, p = exp(s *
//     scale - m_new) (0 past the row's limit), the row sum l = l * a + sum
//     p with a = exp(m - m_new), P in f16 to the warp's Pw[16][DK_FA_LDH],
//     and the lane's 32 output accumulators o *= a;
//   O += P V: WMMA again (P from Pw, V's tile Vs[key][d]), through Sw (S is
//     consumed by then), added to o by the same lane -> (row, dims) map.
// At the end out = o / l (0 where a row saw no key).
//
// Shared memory (static, under 48 KiB): Ks, Vs [64][DK_FA_LDH] halves; Sw
// [4][16][DK_FA_LDS] floats; QP [64][DK_FA_LDH] halves: the Q tile until the
// warps hold it in fragments, then the warps' Pw. WMMA loads and stores
// start on 32-byte boundaries: the row pitches (144 and 272 bytes) and the
// 16-column offsets keep every tile's first element there.
#define DK_FA_D DK_ATTN_FLASH_D
#define DK_FA_BR 64                  // query rows a block
#define DK_FA_BC 64                  // keys a tile
#define DK_FA_LDH (DK_FA_D + 8)      // halves a row of Ks, Vs, QP (144 bytes)
#define DK_FA_LDS (DK_FA_BC + 4)     // floats a row of Sw (272 bytes)
static_assert(DK_FA_BC == DK_FA_D, "Sw holds a 16 x 64 S tile, then a 16 x 64 PV tile");
static_assert(2 * DK_FA_BC * DK_FA_LDH * 2 + 4 * 16 * DK_FA_LDS * 4 + DK_FA_BR * DK_FA_LDH * 2 <= 48 * 1024, "static smem");

__device__ void dk_attn_flash_impl(const dk_kp_attention &p) {
  using namespace nvcuda;
  __shared__ __align__(32) __half Ks[DK_FA_BC * DK_FA_LDH];
  __shared__ __align__(32) __half Vs[DK_FA_BC * DK_FA_LDH];
  __shared__ __align__(32) __half QP[DK_FA_BR * DK_FA_LDH];
  __shared__ __align__(32) float Sw[4 * 16 * DK_FA_LDS];
  __shared__ int64_t smax;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t t0 = (int64_t)blockIdx.x * DK_FA_BR, h = blockIdx.y, g = h / (p.Hq / p.Hkv);
  const int r = lane >> 1, c0 = (lane & 1) * 32;   // the lane's row of the warp's 16 and its 32 columns
  const int64_t t = t0 + warp * 16 + r;
  const int64_t lim = t < p.T ? dk_attn_lim(p, t) : 0;
  const float neg_inf = dk_neg_inf();
  float *sw = Sw + warp * 16 * DK_FA_LDS;
  __half *pw = QP + warp * 16 * DK_FA_LDH;

  if (tid == 0) smax = 0;
  // the Q tile in f16 (rows past T: zeros)
  for (int i = tid; i < DK_FA_BR * DK_FA_D; i += DK_ATTN_THREADS) {
    const int rr = i / DK_FA_D, d = i % DK_FA_D;
    const int64_t tq = t0 + rr;
    const float v = tq < p.T ? dk_ld_rt((const void *)p.q, (tq * p.Hq + h) * DK_FA_D + d, p.qdt) : 0.0f;
    QP[rr * DK_FA_LDH + d] = __float2half_rn(v);
  }
  __syncthreads();
  atomicMax((unsigned long long *)&smax, (unsigned long long)lim);
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> qf[DK_FA_D / 16];
#pragma unroll
  for (int kk = 0; kk < DK_FA_D / 16; kk++) wmma::load_matrix_sync(qf[kk], QP + warp * 16 * DK_FA_LDH + kk * 16, DK_FA_LDH);
  __syncthreads();   // QP becomes the warps' Pw; smax is final
  const int64_t send = smax;

  float o[32], m = neg_inf, l = 0.0f;
#pragma unroll
  for (int i = 0; i < 32; i++) o[i] = 0.0f;
  const int64_t rs = p.Hkv * DK_FA_D;   // halves between positions
  for (int64_t s0 = 0; s0 < send; s0 += DK_FA_BC) {
    __syncthreads();   // every warp is done with the previous K and V tiles
    // K and V tiles: 64 rows of 8 pieces of 16 bytes each
    for (int i = tid; i < DK_FA_BC * (DK_FA_D / 8); i += DK_ATTN_THREADS) {
      const int j = i / (DK_FA_D / 8), pc = (i % (DK_FA_D / 8)) * 8;
      uint4 kv = make_uint4(0, 0, 0, 0), vv = kv;
      if (s0 + j < p.S) {
        kv = __ldg((const uint4 *)((const uint16_t *)p.k + (s0 + j) * rs + g * DK_FA_D + pc));
        vv = __ldg((const uint4 *)((const uint16_t *)p.v + (s0 + j) * rs + g * DK_FA_D + pc));
      }
      *(uint4 *)&Ks[j * DK_FA_LDH + pc] = kv;
      *(uint4 *)&Vs[j * DK_FA_LDH + pc] = vv;
    }
    __syncthreads();
    // S = Q_w K^T into Sw
#pragma unroll
    for (int nt = 0; nt < DK_FA_BC / 16; nt++) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> sacc;
      wmma::fill_fragment(sacc, 0.0f);
#pragma unroll
      for (int kk = 0; kk < DK_FA_D / 16; kk++) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> kf;   // (d, key) at Ks[key][d]
        wmma::load_matrix_sync(kf, Ks + nt * 16 * DK_FA_LDH + kk * 16, DK_FA_LDH);
        wmma::mma_sync(sacc, qf[kk], kf, sacc);
      }
      wmma::store_matrix_sync(sw + nt * 16, sacc, DK_FA_LDS, wmma::mem_row_major);
    }
    __syncwarp();
    // the online softmax of the lane's half row
    float s[32], mx = neg_inf;
#pragma unroll
    for (int i = 0; i < 32; i++) {
      s[i] = s0 + c0 + i < lim ? sw[r * DK_FA_LDS + c0 + i] * p.scale : neg_inf;
      mx = fmaxf(mx, s[i]);
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    const float m_new = fmaxf(m, mx);
    // no key seen yet by this row: nothing to add (p = 0, o and l stay 0)
    const float a = m_new == neg_inf ? 1.0f : __expf(m - m_new);
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < 32; i++) {
      const float e = s[i] == neg_inf ? 0.0f : __expf(s[i] - m_new);
      sum += e;
      pw[r * DK_FA_LDH + c0 + i] = __float2half_rn(e);
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    l = l * a + sum;
    m = m_new;
#pragma unroll
    for (int i = 0; i < 32; i++) o[i] *= a;
    __syncwarp();   // P is written and S read: Sw may take P V
#pragma unroll
    for (int nt = 0; nt < DK_FA_D / 16; nt++) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> oacc;
      wmma::fill_fragment(oacc, 0.0f);
#pragma unroll
      for (int kk = 0; kk < DK_FA_BC / 16; kk++) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> pf;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> vf;   // (key, d) at Vs[key][d]
        wmma::load_matrix_sync(pf, pw + kk * 16, DK_FA_LDH);
        wmma::load_matrix_sync(vf, Vs + kk * 16 * DK_FA_LDH + nt * 16, DK_FA_LDH);
        wmma::mma_sync(oacc, pf, vf, oacc);
      }
      wmma::store_matrix_sync(sw + nt * 16, oacc, DK_FA_LDS, wmma::mem_row_major);
    }
    __syncwarp();
#pragma unroll
    for (int i = 0; i < 32; i++) o[i] += sw[r * DK_FA_LDS + c0 + i];
    __syncwarp();   // read before the next tile's S
  }
  if (t >= p.T) return;
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
  for (int i = 0; i < 32; i++) dk_st_rt((void *)p.out, (t * p.Hq + h) * DK_FA_D + c0 + i, o[i] * inv, p.odt);
}
