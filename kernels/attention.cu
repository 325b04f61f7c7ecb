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
// S == 0 (no keys) writes zeros, as the CPU's empty sums do. With p.pos
// (dk_attention_pos) the row's limit is min(pos[t] + 1, S) instead, and a
// negative position sees no key (zeros).
//
// Indexing invariants: all four tensors contiguous (a narrow along dim 0 of
// a cache is contiguous); q row (t, h) at (t * Hq + h) * D; k row (s, g) at
// (s * Hkv + g) * D; v row at (s * Hkv + g) * Dv; out row at (t * Hq + h) *
// Dv. D and Dv <= DK_ATTN_MAXD (the host refuses larger heads), so q fits
// in shared memory and each thread owns at most 4 output dims.
#include <mma.h>

#include "dk_common.cuh"

#define DK_ATTN_CHUNK DK_ATTN_THREADS

#include "attn_limits.cuh"
#define DK_ATTN_PER_THREAD (DK_ATTN_MAXD / DK_ATTN_THREADS)

template <int KT, bool WIN> __device__ void dk_attention_impl(const dk_kp_attention &p) {
  __shared__ float qs[DK_ATTN_MAXD];
  __shared__ float sc[DK_ATTN_CHUNK];
  __shared__ float sf[33];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = DK_ATTN_THREADS / 32;
  const void *k = (const void *)p.k, *v = (const void *)p.v;
  const int64_t grp = p.Hq / p.Hkv;
  const float neg_inf = dk_neg_inf();
  for (int64_t row = blockIdx.x; row < p.T * p.Hq; row += gridDim.x) {
    const int64_t t = row / p.Hq, h = row - t * p.Hq, g = h / grp;
    const int64_t lim = dk_attn_lim(p, t);
    __syncthreads();   // qs and sc are still read by the previous row
    for (int64_t d = tid; d < p.D; d += DK_ATTN_THREADS) qs[d] = dk_ld_rt((const void *)p.q, row * p.D + d, p.qdt);
    float acc[DK_ATTN_PER_THREAD];
#pragma unroll
    for (int i = 0; i < DK_ATTN_PER_THREAD; i++) acc[i] = 0.0f;
    float m = neg_inf;
    double z = 0.0;
    __syncthreads();
    const int64_t beg = dk_attn_beg<WIN>(p, lim);
    for (int64_t c0 = beg; c0 < lim; c0 += DK_ATTN_CHUNK) {
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

extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS) dk_attention_kv_f32(const __grid_constant__ dk_kp_attention p) { dk_grid_wait(); dk_attention_impl<DK_KT_F32, false>(p); }
extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS) dk_attention_kv_f16(const __grid_constant__ dk_kp_attention p) { dk_grid_wait(); dk_attention_impl<DK_KT_F16, false>(p); }
extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS) dk_attention_kv_bf16(const __grid_constant__ dk_kp_attention p) { dk_grid_wait(); dk_attention_impl<DK_KT_BF16, false>(p); }
// dk_attention_window: each row's keys start at lim - window (never run on
// a GPU yet: DEVKIT_CUDA_ATTN_WINDOW=1 takes these, backends/cuda.h)
extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS, 1) dk_attention_win_f32(const __grid_constant__ dk_kp_attention p) { dk_grid_wait(); dk_attention_impl<DK_KT_F32, true>(p); }
extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS, 1) dk_attention_win_f16(const __grid_constant__ dk_kp_attention p) { dk_grid_wait(); dk_attention_impl<DK_KT_F16, true>(p); }
extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS, 1) dk_attention_win_bf16(const __grid_constant__ dk_kp_attention p) { dk_grid_wait(); dk_attention_impl<DK_KT_BF16, true>(p); }

// ==== split-K attention ==========================================================
// The kernel above gives one (query row, head) to one block, which walks
// every cached position alone: at decode that is Hq blocks on a GPU of 100+
// SMs, each reading its K/V rows once per query head. This path (chosen by
// the host when the head dims are multiples of 8, at most
// DK_ATTN_SPLIT_MAXD, and K/V are 16-byte aligned) instead
//   * splits the positions [0, S) into nsplit ranges of split_len, one per
//     block (grid.x), so a decode step fills the GPU;
//   * serves up to hb = DK_ATTN_SPLIT_HB query heads of one kv head from one
//     read of each K/V row (grid.y = Hkv * nbatch; a group of grp = Hq / Hkv
//     heads is cut into nbatch batches of hb, the last one shorter);
//   * reads K and V rows 8 values (16 bytes; f32: 32) per load;
//   * in a prompt, serves tq consecutive query rows too (grid.z = ceil(T /
//     tq)): the block's hb * tq <= DK_ATTN_SPLIT_HB "slots" are the pairs
//     (row t0 + i / hb, head h0 + i % hb), each with its own causal limit,
//     so each K/V row read serves tq times more scores (a 512-token prompt
//     with 4 heads a kv head: 2 rows a block, half the K/V traffic).
// Per block, positions go by chunks of DK_ATTN_THREADS = 128:
//   scores:  thread i takes position c0 + i and dots its K row with each
//            slot's q (held in shared memory, read as broadcasts), times
//            scale: sc[h][i] (-inf past the slot's causal limit / the split);
//   softmax: warp w takes heads w, w + 4: chunk max, m_new = max(m, it),
//            p = exp(sc - m_new) in place, z = z * exp(m - m_new) + sum p;
//            fac[h] = exp(m - m_new) rescales the accumulators (all scores
//            -inf so far: p = 0 and fac = 1);
//   values:  thread i owns the 8-value piece pc = i % P of the V row
//            (P = Dv / 8) for rows rg = i / P, rg + RG, ... (RG = 128 / P;
//            threads past P * RG idle): acc[h][e] = acc * fac + sum p v.
// At the end the RG partial accumulators are summed through shared memory.
// nsplit == 1: out = acc / z (0 where z = 0, as the CPU's empty sums).
// With p.pos the splits cover all of [0, S) and those past a row's position
// are empty (m = -inf, z = 0: weight 0 in the merge), so the launch does not
// depend on the position.
// nsplit > 1: record (m, z, acc[0..Dv)) at part + ((t*Hq + h)*nsplit + j) *
// (Dv + 2) floats, and dk_attn_merge combines the records of a row by the
// softmax identity: out = sum_j e^(m_j - M) acc_j / sum_j e^(m_j - M) z_j.
// f32 throughout (the old kernel's double z is not needed: z is a sum of at
// most split_len terms <= 1 each, then of nsplit such sums).
//
// Shared memory: the loop uses qs[hb][D] + sc[hb][128] floats (<= 12 KiB);
// the final reduction reuses the same words as red[RG][hb][Dv] (<= RG * P *
// 8 * hb <= 1024 * hb floats = 32 KiB), hence one 32 KiB array.
#define DK_AS_WORDS (1024 * DK_ATTN_SPLIT_HB)
#define DK_AS_LOADS 4   // K/V pieces (16 bytes; f32: 32) a thread loads before using the first
static_assert(DK_ATTN_SPLIT_HB * (DK_ATTN_SPLIT_MAXD + DK_ATTN_THREADS) <= DK_AS_WORDS, "qs + sc fit");

template <int KT, bool ROWS, bool WIN> __device__ void dk_attn_split_impl(const dk_kp_attn_split &p) {
  constexpr int ES = KT == DK_KT_F32 ? 4 : 2, HB = DK_ATTN_SPLIT_HB, NT = DK_ATTN_THREADS;
  __shared__ __align__(16) float sm[DK_AS_WORDS];
  __shared__ float mz[3][HB];   // m, z, fac per slot
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t tq = ROWS ? p.tq : 1, t0 = (int64_t)blockIdx.z * tq, grp = p.Hq / p.Hkv;
  const int64_t g = blockIdx.y / p.nbatch, b = blockIdx.y - g * p.nbatch;
  const int64_t h0 = g * grp + b * p.hb;   // first query head of this block
  const int nh = (int)(b * p.hb + p.hb <= grp ? p.hb : grp - b * p.hb);   // heads of this block
  const int hb = ROWS ? nh * (int)(t0 + tq <= p.T ? tq : p.T - t0) : nh;   // live slots: (row t0 + i / nh, head h0 + i % nh)
  const int D = (int)p.D, Dv = (int)p.Dv, P = Dv / 8, RG = NT / P;
  const float neg_inf = dk_neg_inf();
  float *qs = sm, *sc = sm + HB * DK_ATTN_SPLIT_MAXD;
  // the largest limit of the block's rows bounds its positions (with a
  // causal mask, the last row's); the other rows mask theirs. With a
  // window, so does the smallest first key (the first row's)
  int64_t lim = 0, beg = INT64_MAX;
  for (int64_t t = t0; t < t0 + hb / nh; t++) {
    const int64_t l = dk_attn_lim(p, t), bg = dk_attn_beg<WIN>(p, l);
    lim = l > lim ? l : lim;
    beg = bg < beg ? bg : beg;
  }
  const int64_t s0 = WIN && beg > (int64_t)blockIdx.x * p.split_len ? beg : (int64_t)blockIdx.x * p.split_len;
  const int64_t s1 = (int64_t)blockIdx.x * p.split_len + p.split_len < lim ? (int64_t)blockIdx.x * p.split_len + p.split_len : lim;
  for (int i = tid; i < hb * D; i += NT) {
    const int sl = i / D;
    const int64_t row = ROWS ? (t0 + sl / nh) * p.Hq + h0 + sl % nh : t0 * p.Hq + h0 + sl;
    qs[sl * DK_ATTN_SPLIT_MAXD + i % D] = dk_ld_rt((const void *)p.q, row * p.D + i % D, p.qdt);
  }
  if (tid < HB) { mz[0][tid] = neg_inf; mz[1][tid] = 0.0f; }
  float acc[HB][8];
#pragma unroll
  for (int h = 0; h < HB; h++)
#pragma unroll
    for (int e = 0; e < 8; e++) acc[h][e] = 0.0f;
  const int pc = tid % P, rg = tid / P;
  const int64_t krs = p.Hkv * p.D * ES, vrs = p.Hkv * p.Dv * ES;   // bytes between positions
  const uint8_t *kb = (const uint8_t *)p.k + g * p.D * ES, *vb = (const uint8_t *)p.v + g * p.Dv * ES + pc * 8 * ES;
  __syncthreads();
  for (int64_t c0 = s0; c0 < s1; c0 += NT) {
    const int cn = (int)(s1 - c0 < NT ? s1 - c0 : NT);
    // scores
    {
      float s[HB];
#pragma unroll
      for (int h = 0; h < HB; h++) s[h] = 0.0f;
      if (tid < cn) {
        const uint8_t *kr = kb + (c0 + tid) * krs;
        // DK_AS_LOADS pieces of the row in flight before the first is used:
        // one position per thread has no other memory parallelism
        for (int d0 = 0; d0 < D; d0 += 8 * DK_AS_LOADS) {
          uint4 raw[DK_AS_LOADS][2];
#pragma unroll
          for (int u = 0; u < DK_AS_LOADS; u++)
            if (d0 + 8 * u < D) {
              raw[u][0] = __ldg((const uint4 *)(kr + (d0 + 8 * u) * ES));
              raw[u][1] = ES == 4 ? __ldg((const uint4 *)(kr + (d0 + 8 * u) * ES) + 1) : raw[u][0];
            }
#pragma unroll
          for (int u = 0; u < DK_AS_LOADS; u++) {
            const int d = d0 + 8 * u;
            if (d >= D) break;
            float kv[8];
            dk_cvt8<KT>(raw[u][0], raw[u][1], kv);
#pragma unroll
            for (int h = 0; h < HB; h++) {
              if (h >= hb) break;
              const float4 q0 = *(const float4 *)&qs[h * DK_ATTN_SPLIT_MAXD + d], q1 = *(const float4 *)&qs[h * DK_ATTN_SPLIT_MAXD + d + 4];
              float a = s[h];
              a = fmaf(q0.x, kv[0], a); a = fmaf(q0.y, kv[1], a); a = fmaf(q0.z, kv[2], a); a = fmaf(q0.w, kv[3], a);
              a = fmaf(q1.x, kv[4], a); a = fmaf(q1.y, kv[5], a); a = fmaf(q1.z, kv[6], a); a = fmaf(q1.w, kv[7], a);
              s[h] = a;
            }
          }
        }
      }
#pragma unroll
      for (int h = 0; h < HB; h++)
        if (h < hb) {
          // slot h's row sees positions < its limit (and, with a window,
          // from its first key on)
          bool live = tid < cn && (!ROWS || c0 + tid < dk_attn_lim(p, t0 + h / nh));
          if (WIN && ROWS) live = live && c0 + tid >= dk_attn_beg<WIN>(p, dk_attn_lim(p, t0 + h / nh));
          sc[h * NT + tid] = live ? s[h] * p.scale : neg_inf;
        }
    }
    __syncthreads();
    // softmax bookkeeping, a warp per head
    for (int h = warp; h < hb; h += NT / 32) {
      float x[NT / 32], cm = neg_inf;
#pragma unroll
      for (int j = 0; j < NT / 32; j++) { x[j] = sc[h * NT + lane + 32 * j]; cm = fmaxf(cm, x[j]); }
      cm = dk_warp_reduce(cm, dk_op_max());
      const float m = mz[0][h], mn = fmaxf(m, cm);
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < NT / 32; j++) {
        const float e = mn == neg_inf ? 0.0f : expf(x[j] - mn);
        sc[h * NT + lane + 32 * j] = e;
        sum += e;
      }
      sum = dk_warp_reduce(sum, dk_op_sum());
      __syncwarp();   // every lane has read mz[.][h] before lane 0 writes it (racecheck does not count the shuffles)
      if (lane == 0) {
        const float f = mn == neg_inf ? 1.0f : expf(m - mn);   // m = -inf: 0
        mz[2][h] = f;
        mz[1][h] = mz[1][h] * f + sum;
        mz[0][h] = mn;
      }
    }
    __syncthreads();
    // values
    if (rg < RG) {
#pragma unroll
      for (int h = 0; h < HB; h++) {
        if (h >= hb) break;
        const float f = mz[2][h];
#pragma unroll
        for (int e = 0; e < 8; e++) acc[h][e] *= f;
      }
      for (int s0 = rg; s0 < cn; s0 += RG * DK_AS_LOADS) {
        uint4 raw[DK_AS_LOADS][2];
#pragma unroll
        for (int u = 0; u < DK_AS_LOADS; u++)
          if (s0 + u * RG < cn) {
            const uint8_t *vr = vb + (c0 + s0 + u * RG) * vrs;
            raw[u][0] = __ldg((const uint4 *)vr);
            raw[u][1] = ES == 4 ? __ldg((const uint4 *)vr + 1) : raw[u][0];
          }
#pragma unroll
        for (int u = 0; u < DK_AS_LOADS; u++) {
          const int si = s0 + u * RG;
          if (si >= cn) break;
          float vv[8];
          dk_cvt8<KT>(raw[u][0], raw[u][1], vv);
#pragma unroll
          for (int h = 0; h < HB; h++) {
            if (h >= hb) break;
            const float pr = sc[h * NT + si];
#pragma unroll
            for (int e = 0; e < 8; e++) acc[h][e] = fmaf(pr, vv[e], acc[h][e]);
          }
        }
      }
    }
    __syncthreads();   // sc is rewritten by the next chunk
  }
  // sum the RG partial accumulators: red[rg][h][d] over the same words
  float *red = sm;
  if (rg < RG) {
#pragma unroll
    for (int h = 0; h < HB; h++) {
      if (h >= hb) break;
#pragma unroll
      for (int e = 0; e < 8; e++) red[(rg * hb + h) * Dv + pc * 8 + e] = acc[h][e];
    }
  }
  __syncthreads();
  for (int i = tid; i < hb * Dv; i += NT) {
    const int h = i / Dv, d = i - h * Dv;
    float a = 0.0f;
    for (int r = 0; r < RG; r++) a += red[(r * hb + h) * Dv + d];
    const int64_t row = ROWS ? (t0 + h / nh) * p.Hq + h0 + h % nh : t0 * p.Hq + h0 + h;
    const float z = mz[1][h];
    if (p.nsplit == 1) {
      dk_st_rt((void *)p.out, row * p.Dv + d, z > 0.0f ? a * __frcp_rn(z) : 0.0f, p.odt);   // (a division here made ptxas spill around its slow-path call)
    } else {
      float *rec = (float *)p.part + (row * p.nsplit + blockIdx.x) * (p.Dv + 2);
      if (d == 0) { rec[0] = mz[0][h]; rec[1] = z; }
      rec[2 + d] = a;
    }
  }
}

// (.., 1): without a floor of one block, ptxas capped sm_80's f16 variant at
// 128 registers and spilled; it takes about 150 (sm_90 f32: 167, 3 blocks an SM).
extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS, 1) dk_attn_split_f32(const __grid_constant__ dk_kp_attn_split p) { dk_grid_wait(); dk_attn_split_impl<DK_KT_F32, false, false>(p); }
extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS, 1) dk_attn_split_f16(const __grid_constant__ dk_kp_attn_split p) { dk_grid_wait(); dk_attn_split_impl<DK_KT_F16, false, false>(p); }
extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS, 1) dk_attn_split_bf16(const __grid_constant__ dk_kp_attn_split p) { dk_grid_wait(); dk_attn_split_impl<DK_KT_BF16, false, false>(p); }
// Several query rows a block (prompts). On an H200 (2026-11-26) the first
// version of this path, at 176 registers (2 blocks an SM), was 12 % faster
// than itself with one row a block (1B f16 prompt 42.6k vs 38.0k tok/s) but
// no faster than the one-row kernel above at 167 registers (3 blocks an SM,
// 43.9k on another lease): the floor of 3 blocks keeps it at <= 168
// registers. That build ran on an H200 on 2026-11-26 (1B f16 prompt 43.3k
// -> 46.6-48.3k tok/s, racecheck and memcheck clean) and is the default;
// DEVKIT_CUDA_ATTN_ROWS=one keeps the one-row kernel for prompts too.
extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS, 3) dk_attn_rows_f32(const __grid_constant__ dk_kp_attn_split p) { dk_grid_wait(); dk_attn_split_impl<DK_KT_F32, true, false>(p); }
extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS, 3) dk_attn_rows_f16(const __grid_constant__ dk_kp_attn_split p) { dk_grid_wait(); dk_attn_split_impl<DK_KT_F16, true, false>(p); }
extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS, 3) dk_attn_rows_bf16(const __grid_constant__ dk_kp_attn_split p) { dk_grid_wait(); dk_attn_split_impl<DK_KT_BF16, true, false>(p); }
// dk_attention_window's forms of the two above: a split's positions start
// at the block's first key, each slot masks keys before its own (never run
// on a GPU yet: DEVKIT_CUDA_ATTN_WINDOW=1 takes them, backends/cuda.h)
extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS, 1) dk_attn_split_win_f32(const __grid_constant__ dk_kp_attn_split p) { dk_grid_wait(); dk_attn_split_impl<DK_KT_F32, false, true>(p); }
extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS, 1) dk_attn_split_win_f16(const __grid_constant__ dk_kp_attn_split p) { dk_grid_wait(); dk_attn_split_impl<DK_KT_F16, false, true>(p); }
extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS, 1) dk_attn_split_win_bf16(const __grid_constant__ dk_kp_attn_split p) { dk_grid_wait(); dk_attn_split_impl<DK_KT_BF16, false, true>(p); }
extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS, 3) dk_attn_rows_win_f32(const __grid_constant__ dk_kp_attn_split p) { dk_grid_wait(); dk_attn_split_impl<DK_KT_F32, true, true>(p); }
extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS, 3) dk_attn_rows_win_f16(const __grid_constant__ dk_kp_attn_split p) { dk_grid_wait(); dk_attn_split_impl<DK_KT_F16, true, true>(p); }
extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS, 3) dk_attn_rows_win_bf16(const __grid_constant__ dk_kp_attn_split p) { dk_grid_wait(); dk_attn_split_impl<DK_KT_BF16, true, true>(p); }

// One block per (t, h) row (grid-stride): the weights e^(m_j - M) of the
// row's nsplit (<= DK_ATTN_SPLIT_MAXN) records go to shared memory once,
// then each thread combines its output dims.
extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS) dk_attn_merge(const __grid_constant__ dk_kp_attn_split p) { dk_grid_wait();
  __shared__ float wt[DK_ATTN_SPLIT_MAXN], wt2[DK_ATTN_SPLIT_MAXD];
  __shared__ float sf[33];
  const float neg_inf = dk_neg_inf();
  const int64_t rs = p.Dv + 2;
  const int n = p.nsplit;
  for (int64_t row = blockIdx.x; row < p.T * p.Hq; row += gridDim.x) {
    const float *rec = (const float *)p.part + row * n * rs;
    float M = neg_inf;
    for (int j = threadIdx.x; j < n; j += blockDim.x) M = fmaxf(M, rec[j * rs]);
    M = dk_block_reduce(M, sf, dk_op_max(), neg_inf);   // its barriers also end the last row's reads of wt
    float Z = 0.0f;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      const float m = rec[j * rs], w = m == neg_inf ? 0.0f : expf(m - M);
      wt[j] = w;
      Z += w * rec[j * rs + 1];
    }
    Z = dk_block_reduce(Z, sf, dk_op_sum(), 0.0f);   // publishes wt too
    const float inv = Z > 0.0f ? 1.0f / Z : 0.0f;
    for (int64_t d = threadIdx.x; d < p.Dv; d += blockDim.x) {
      float a = 0.0f;
      for (int j = 0; j < n; j++) a = fmaf(wt[j], rec[j * rs + 2 + d], a);
      wt2[d] = a * inv;
    }
    __syncthreads();
    // the store by dtype outside the loop above: a dk_st_rt there made ptxas
    // spill on sm_80-89
    for (int64_t d = threadIdx.x; d < p.Dv; d += blockDim.x) dk_st_rt((void *)p.out, row * p.Dv + d, wt2[d], p.odt);
  }
}

#include "attn_flash.cuh"

extern "C" __global__ void __launch_bounds__(DK_ATTN_THREADS) dk_attn_flash_f16(const __grid_constant__ dk_kp_attention p) { dk_grid_wait(); dk_attn_flash_impl(p); }
