// kernels/sample.cu — dk_argmax and dk_sample: one i32 per row of logits,
// chosen on the device.
//
// Launch geometry (both): grid.x = min(rows, DK_MAX_GRID_X) blocks of
// DK_ROW_THREADS threads; block g handles rows g, g + gridDim.x, ...; the
// threads stride over the row's n values. Row r of x starts at element
// r * n (x contiguous); out is contiguous i32 [rows].
//
// argmax (dk__cpu_argmax_row): the lowest index among the maxima; NaN never
// wins; a row with nothing above -inf gives 0. Each thread scans its
// elements in increasing order with a strict `>`, then (value, index) pairs
// are combined by (larger value, then smaller index).
//
// sample: the rule documented above dk_sample in devkit.h, step by step as
// dk__cpu_sample_row does it (every step is a pass over the row; the row is
// re-read rather than kept, so any vocabulary size works):
//   0. temperature <= 0: argmax. NaN logits are never kept (as -inf).
//      When no kept logit / temperature is finite (all -inf or NaN: 0; some
//      +inf: the first of those), the row's result is that, steps 3-4 skipped.
//   1. top_k (0 < k < n): kth = the k-th largest logit counting repeats,
//      found by a 4-pass radix select (8 bits a pass) on order-preserving
//      32-bit keys of the floats. NaN logits are never kept.
//   2. kept = logit >= kth; v = logit / temperature; m = max kept v;
//      e = expf(v - m); z = sum of e in double; p = (float)(e / z).
//      p is recomputed from the logit in each later pass: the same inputs
//      give the same float every time.
//   3. top_p < 1: thr = the largest p value t whose tokens (all p >= t, ties
//      included) hold at least top_p of the mass: a radix search over the
//      keys of p, summing the mass per 8-bit bin (2^-62 fixed point, see
//      dk_fixed62) from the top down. If even all of the mass stays below top_p, everything is kept
//      (the CPU loop then ends on the smallest p).
//   4. total = sum of kept p (p > 0 and p >= thr); target = u * total with
//      u = dk_sample_uniform(seed, row) (the same splitmix64 code as the
//      host); the token is the first index whose running sum of kept p
//      exceeds target: tiles of DK_ROW_THREADS indices in order, a block
//      inclusive scan in double per tile, the lowest hit index by atomicMin.
//      None: the last kept index, or 0.
// The sums are in double, in another association than the CPU's sequential
// loop; picks can differ from the CPU only where two cumulative sums tie to
// within ~1e-16.
#include "dk_common.cuh"

struct dk_op_maxll {
  DK_DEV long long operator()(long long a, long long b) const { return a > b ? a : b; }
};

// p in (0, 1] as a 2^-62 fixed-point integer: exact for p >= 2^-38 (the
// float's 24 bits then sit above 2^-62), off by < 2^-62 below. The per-bin
// masses are summed in these integers: 64-bit integer atomics are native in
// shared memory on every target (f64 ones are emulated on sm_80), and the sum
// is exact and independent of the order of the additions. The total mass is
// about 1, so the sums stay far below 2^64.
DK_DEV unsigned long long dk_fixed62(float p) { return __float2ull_rz(p * 0x1p62f); }

DK_DEV uint32_t dk_fkey(float f) {   // larger float -> larger key
  const uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
DK_DEV float dk_fkey_inv(uint32_t k) { return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k); }

DK_DEV float dk_sample_uniform_dev(uint64_t seed, int64_t row) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (uint64_t)(row + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (float)(z >> 40) * (1.0f / 16777216.0f);
}

// (value, index) argmax of one row; every thread gets the result
DK_DEV int64_t dk_row_argmax(const void *x, int xdt, int64_t base, int64_t n, float *sv, long long *si) {
  const float neg_inf = dk_neg_inf();
  float bv = neg_inf;
  long long bi = 0x7fffffffffffffffll;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float v = dk_ld_rt(x, base + j, xdt);
    if (v > bv) { bv = v; bi = j; }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
    const long long oi = __shfl_xor_sync(0xffffffffu, bi, o);
    if (ov > bv || (ov == bv && oi < bi)) { bv = ov; bi = oi; }
  }
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
  __syncthreads();   // sv/si may still be read from the previous row
  if (lane == 0) { sv[w] = bv; si[w] = bi; }
  __syncthreads();
  if (w == 0) {
    bv = lane < nw ? sv[lane] : neg_inf;
    bi = lane < nw ? si[lane] : 0x7fffffffffffffffll;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
      const long long oi = __shfl_xor_sync(0xffffffffu, bi, o);
      if (ov > bv || (ov == bv && oi < bi)) { bv = ov; bi = oi; }
    }
    if (lane == 0) { sv[32] = bv; si[32] = bi; }
  }
  __syncthreads();
  return sv[32] > neg_inf ? (int64_t)si[32] : 0;
}

extern "C" __global__ void __launch_bounds__(DK_ROW_THREADS) dk_argmax(const __grid_constant__ dk_kp_pick p) { dk_grid_wait();
  __shared__ float sv[33];
  __shared__ long long si[33];
  for (int64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const int64_t best = dk_row_argmax((const void *)p.x, p.xdt, r * p.n, p.n, sv, si);
    if (threadIdx.x == 0) ((int32_t *)p.out)[r] = (int32_t)best;
  }
}

// block-wide inclusive prefix sum; *total gets the block's sum. s: 33 doubles.
DK_DEV double dk_block_scan(double v, double *s, double *total) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const double t = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v += t;
  }
  __syncthreads();
  if (lane == 31) s[w] = v;
  __syncthreads();
  if (w == 0) {
    double t = lane < nw ? s[lane] : 0.0;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const double u = __shfl_up_sync(0xffffffffu, t, o);
      if (lane >= o) t += u;
    }
    if (lane < nw) s[lane] = t;   // inclusive sums of the warp totals
  }
  __syncthreads();
  *total = s[nw - 1];
  return v + (w > 0 ? s[w - 1] : 0.0);
}

struct dk_sample_row {
  const void *x;
  int xdt;
  int64_t base;
  float temp, kth, m;
  double z;
  // step 2's probability of token j (0 when top-k drops it)
  DK_DEV float prob(int64_t j) const {
    const float l = dk_ld_rt(x, base + j, xdt);
    if (!(l >= kth)) return 0.0f;
    return (float)((double)expf(l / temp - m) / z);
  }
};

extern "C" __global__ void __launch_bounds__(DK_ROW_THREADS, 1) dk_sample(const __grid_constant__ dk_kp_pick p) { dk_grid_wait();
  __shared__ float sv[33];
  __shared__ long long si[33];
  __shared__ double sd[33];
  __shared__ unsigned int hist[256];
  __shared__ unsigned long long mass[256];
  __shared__ uint32_t s_prefix;
  __shared__ long long s_left;
  __shared__ double s_above;
  __shared__ int s_keep_all;
  __shared__ unsigned long long s_pick;
  const int tid = threadIdx.x;
  const float neg_inf = dk_neg_inf();
  const int64_t n = p.n;
  for (int64_t r = blockIdx.x; r < p.rows; r += gridDim.x) {
    int32_t *out = (int32_t *)p.out + r;
    if (!(p.temp > 0.0f)) {
      const int64_t best = dk_row_argmax((const void *)p.x, p.xdt, r * n, n, sv, si);
      if (tid == 0) *out = (int32_t)best;
      continue;
    }
    dk_sample_row row;
    row.x = (const void *)p.x;
    row.xdt = p.xdt;
    row.base = r * n;
    row.temp = p.temp;
    row.kth = neg_inf;
    row.m = 0.0f;
    row.z = 1.0;

    // ---- 1. top-k threshold: radix select of the k-th largest logit
    if (p.top_k > 0 && (int64_t)p.top_k < n) {
      uint32_t prefix = 0, mask = 0;
      long long left = p.top_k;
      for (int shift = 24; shift >= 0; shift -= 8) {
        __syncthreads();   // the previous pass's readers of hist / s_* are done
        for (int b = tid; b < 256; b += blockDim.x) hist[b] = 0;
        __syncthreads();
        for (int64_t j = tid; j < n; j += blockDim.x) {
          const float l = dk_ld_rt(row.x, row.base + j, row.xdt);
          if (l != l) continue;   // NaN: never kept
          const uint32_t k = dk_fkey(l);
          if ((k & mask) == prefix) atomicAdd(&hist[(k >> shift) & 255u], 1u);
        }
        __syncthreads();
        if (tid == 0) {
          int chosen = 0;
          long long l2 = left;
          for (int b = 255; b >= 0; b--) {
            if (l2 <= (long long)hist[b]) { chosen = b; break; }
            l2 -= hist[b];
          }
          s_prefix = prefix | ((uint32_t)chosen << shift);
          s_left = l2;
        }
        __syncthreads();
        prefix = s_prefix;
        left = s_left;
        mask |= 255u << shift;
      }
      row.kth = dk_fkey_inv(prefix);
    }

    // ---- 2. softmax over the kept logits / temperature
    float m = neg_inf;
    for (int64_t j = tid; j < n; j += blockDim.x) {
      const float l = dk_ld_rt(row.x, row.base + j, row.xdt);
      if (l >= row.kth) m = fmaxf(m, l / row.temp);
    }
    row.m = dk_block_reduce(m, sv, dk_op_max(), neg_inf);
    if (!(row.m > neg_inf) || row.m == -neg_inf) {
      // the degenerate rule (devkit.h, dk_sample): no kept logit above -inf
      // gives 0; a largest logit / temperature of +inf gives its first index.
      // row.m is the block's reduction, so every thread takes this branch.
      __syncthreads();
      if (tid == 0) s_pick = ~0ull;
      __syncthreads();
      if (row.m == -neg_inf)
        for (int64_t j = tid; j < n; j += blockDim.x) {
          const float l = dk_ld_rt(row.x, row.base + j, row.xdt);
          if (l >= row.kth && l / row.temp == row.m) { atomicMin(&s_pick, (unsigned long long)j); break; }
        }
      __syncthreads();
      if (tid == 0) *out = s_pick == ~0ull ? 0 : (int32_t)s_pick;
      __syncthreads();
      continue;
    }
    double z = 0.0;
    for (int64_t j = tid; j < n; j += blockDim.x) {
      const float l = dk_ld_rt(row.x, row.base + j, row.xdt);
      if (l >= row.kth) z += (double)expf(l / row.temp - row.m);
    }
    row.z = dk_block_reduce(z, sd, dk_op_sum(), 0.0);

    // ---- 3. top-p threshold: radix search over the keys of p
    float thr = 0.0f;
    if (p.top_p < 1.0f) {
      const double top_p = (double)p.top_p;
      uint32_t prefix = 0, mask = 0;
      double above = 0.0;
      int keep_all = 0;
      for (int shift = 24; shift >= 0 && !keep_all; shift -= 8) {
        __syncthreads();
        for (int b = tid; b < 256; b += blockDim.x) mass[b] = 0ull;
        __syncthreads();
        for (int64_t j = tid; j < n; j += blockDim.x) {
          const float pj = row.prob(j);
          if (!(pj > 0.0f)) continue;
          const uint32_t k = dk_fkey(pj);
          if ((k & mask) == prefix) atomicAdd(&mass[(k >> shift) & 255u], dk_fixed62(pj));
        }
        __syncthreads();
        if (tid == 0) {
          int chosen = -1, lowest = -1;
          double cum = above, cum_before = above;
          for (int b = 255; b >= 0; b--) {
            if (mass[b] == 0ull) continue;
            lowest = b;
            cum_before = cum;
            cum += (double)mass[b] * 0x1p-62;
            if (cum >= top_p) { chosen = b; break; }
          }
          int ka = 0;
          if (chosen < 0) {
            // the whole (remaining) mass stays below top_p: at the top level
            // that means keep everything; deeper it can only be rounding
            // between two association orders, so take the lowest bin
            if (shift == 24 || lowest < 0) ka = 1;
            else chosen = lowest;
          }
          s_keep_all = ka;
          s_prefix = prefix | ((uint32_t)(chosen < 0 ? 0 : chosen) << shift);
          s_above = cum_before;
        }
        __syncthreads();
        keep_all = s_keep_all;
        prefix = s_prefix;
        above = s_above;
        mask |= 255u << shift;
      }
      if (!keep_all) thr = dk_fkey_inv(prefix);
    }

    // ---- 4. the draw
    double total = 0.0;
    for (int64_t j = tid; j < n; j += blockDim.x) {
      const float pj = row.prob(j);
      if (pj > 0.0f && pj >= thr) total += (double)pj;
    }
    total = dk_block_reduce(total, sd, dk_op_sum(), 0.0);
    const double target = (double)dk_sample_uniform_dev(p.seed, r) * total;
    double run = 0.0;
    __syncthreads();
    if (tid == 0) s_pick = ~0ull;
    __syncthreads();
    for (int64_t base = 0; base < n; base += blockDim.x) {
      const int64_t j = base + tid;
      double pk = 0.0;
      if (j < n) {
        const float pj = row.prob(j);
        if (pj > 0.0f && pj >= thr) pk = (double)pj;
      }
      double tile;
      const double incl = dk_block_scan(pk, sd, &tile);
      if (pk > 0.0 && run + incl > target) atomicMin(&s_pick, (unsigned long long)j);
      __syncthreads();
      if (s_pick != ~0ull) break;   // uniform: every thread read it after the barrier
      run += tile;
    }
    if (s_pick == ~0ull) {
      // nothing exceeded the target (rounding at the very end): the last kept
      // index, or 0
      long long last = -1;
      for (int64_t j = tid; j < n; j += blockDim.x) {
        const float pj = row.prob(j);
        if (pj > 0.0f && pj >= thr) last = j;
      }
      last = dk_warp_reduce(last, dk_op_maxll());
      __syncthreads();
      if ((tid & 31) == 0) si[tid >> 5] = last;
      __syncthreads();
      if (tid == 0) {
        long long best = -1;
        for (int w = 0; w < (int)(blockDim.x >> 5); w++) best = si[w] > best ? si[w] : best;
        *out = (int32_t)(best > 0 ? best : 0);
      }
    } else if (tid == 0) {
      *out = (int32_t)s_pick;
    }
    __syncthreads();   // s_pick and si are reused by the next row
  }
}
