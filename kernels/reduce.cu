// kernels/reduce.cu — reductions over any set of axes (sum, mean, max, min),
// argmax/argmin on one axis, softmax / log-softmax and cumsum along one
// axis, and top-k along the last axis, for
// f32, f16 and bf16 x. Ran on an H100 on 2026-11-25; DEVKIT_CUDA_NEWOPS=0
// switches them off (backends/cuda.h).
//
// Launch geometry: grid.x = min(nout, DK_MAX_GRID_X) blocks of
// DK_ROW_THREADS threads; block g handles output elements g, g + gridDim.x,
// ...; threads stride over the reduced index r in [0, nred).
//
// Indexing invariants (dk_kp_reduce, from devkit.h's dk__red_layout): x is
// contiguous; output element o reads x at kept(o) + red(r); kept(o) takes o
// row-major over ks[4] with strides kx, red(r) takes r row-major over rs[4]
// with strides rx (unused dims: size 1). out of the reductions is contiguous
// with nout elements (o is its index); softmax's out has x's shape and
// layout, so it is written at the offsets it is read from.
//
// Semantics are those of dk__cpu_reduce_task / dk__cpu_softmax_axis_task in
// backends/cpu.h: sums in double; max/min NaN when the line holds a NaN;
// argmax/argmin key = NaN ? -inf : (argmin ? -x : x), the first (last = 0)
// or last index of the largest key; softmax of an all -inf line is 0 and
// log-softmax -inf.
#include "dk_common.cuh"

static_assert(sizeof(dk_kp_reduce) == 192, "dk_kp_reduce layout");

struct dk_op_min_u64 {
  DK_DEV unsigned long long operator()(unsigned long long a, unsigned long long b) const { return a < b ? a : b; }
};
struct dk_op_min_i {
  DK_DEV int operator()(int a, int b) const { return a < b ? a : b; }
};

DK_DEV int64_t dk_red_off(const int64_t *s, const int64_t *st, int64_t i) {
  int64_t c3 = i % s[3]; i /= s[3];
  int64_t c2 = i % s[2]; i /= s[2];
  int64_t c1 = i % s[1]; i /= s[1];
  return i * st[0] + c1 * st[1] + c2 * st[2] + c3 * st[3];
}

template <int DT> __device__ void dk_reduce_impl(const dk_kp_reduce &p) {
  __shared__ float sf[33];
  __shared__ double sd[33];
  __shared__ int si[33];
  __shared__ unsigned long long su[33];
  const void *x = (const void *)p.x;
  void *out = (void *)p.out;
  const float neg_inf = dk_neg_inf();
  for (int64_t o = blockIdx.x; o < p.nout; o += gridDim.x) {
    const int64_t base = dk_red_off(p.ks, p.kx, o);
    if (p.op == DK_KR_SUM || p.op == DK_KR_MEAN) {
      double s = 0.0;
      for (int64_t j = threadIdx.x; j < p.nred; j += blockDim.x) s += (double)dk_ld<DT>(x, base + dk_red_off(p.rs, p.rx, j));
      s = dk_block_reduce(s, sd, dk_op_sum(), 0.0);
      if (threadIdx.x == 0) dk_st<DT>(out, o, (float)(p.op == DK_KR_MEAN ? s / (double)p.nred : s));
    } else if (p.op == DK_KR_MAX || p.op == DK_KR_MIN) {
      float m = neg_inf;
      int clean = 1;
      for (int64_t j = threadIdx.x; j < p.nred; j += blockDim.x) {
        float v = dk_ld<DT>(x, base + dk_red_off(p.rs, p.rx, j));
        if (v != v) clean = 0;
        else m = fmaxf(m, p.op == DK_KR_MAX ? v : -v);
      }
      m = dk_block_reduce(m, sf, dk_op_max(), neg_inf);
      clean = dk_block_reduce(clean, si, dk_op_min_i(), 1);
      if (threadIdx.x == 0) dk_st<DT>(out, o, clean ? (p.op == DK_KR_MAX ? m : -m) : __int_as_float(0x7fc00000));
    } else if (p.op == DK_KR_ARGMAX || p.op == DK_KR_ARGMIN) {
      float best = neg_inf;
      int64_t bi = -1;
      for (int64_t j = threadIdx.x; j < p.nred; j += blockDim.x) {
        float v = dk_ld<DT>(x, base + dk_red_off(p.rs, p.rx, j));
        float key = v != v ? neg_inf : (p.op == DK_KR_ARGMIN ? -v : v);
        if (bi < 0 || key > best || (p.last && key == best)) { best = key; bi = j; }
      }
      const float m = dk_block_reduce(best, sf, dk_op_max(), neg_inf);
      // the smallest (first) or largest (last, as ~index) index holding m
      const unsigned long long none = ~0ull;
      unsigned long long mine = none;
      if (bi >= 0 && best == m) mine = p.last ? ~(unsigned long long)bi : (unsigned long long)bi;
      mine = dk_block_reduce(mine, su, dk_op_min_u64(), none);
      if (threadIdx.x == 0) ((int32_t *)out)[o] = (int32_t)(p.last ? ~mine : mine);
    } else if (p.op == DK_KR_CUMSUM) {
      // one thread walks the line in order, in double (as the CPU)
      if (threadIdx.x == 0) {
        double acc = 0.0;
        for (int64_t j = 0; j < p.nred; j++) {
          const int64_t e = base + dk_red_off(p.rs, p.rx, (p.flags & 2) ? p.nred - 1 - j : j);
          const double v = (double)dk_ld<DT>(x, e);
          if (!(p.flags & 1)) acc += v;
          dk_st<DT>(out, e, (float)acc);
          if (p.flags & 1) acc += v;
        }
      }
    } else if (p.op == DK_KR_TOPK) {
      // k rounds; round t takes the best element ranked after round t-1's
      // (key descending, then index ascending: a total order)
      float pk = 0.0f;
      int64_t pi = -1;
      for (int64_t t = 0; t < p.k; t++) {
        float best = neg_inf;
        int64_t bi = -1;
        for (int64_t j = threadIdx.x; j < p.nred; j += blockDim.x) {
          const float v = dk_ld<DT>(x, base + dk_red_off(p.rs, p.rx, j));
          const float key = v != v ? neg_inf : ((p.flags & 4) ? v : -v);
          const bool after = pi < 0 || key < pk || (key == pk && j > pi);
          if (after && (bi < 0 || key > best)) { best = key; bi = j; }
        }
        const float m = dk_block_reduce(best, sf, dk_op_max(), neg_inf);
        unsigned long long mine = (bi >= 0 && best == m) ? (unsigned long long)bi : ~0ull;
        mine = dk_block_reduce(mine, su, dk_op_min_u64(), ~0ull);
        if (threadIdx.x == 0) {
          dk_st<DT>(out, o * p.k + t, dk_ld<DT>(x, base + dk_red_off(p.rs, p.rx, (int64_t)mine)));
          ((int32_t *)p.out2)[o * p.k + t] = (int32_t)mine;
        }
        pk = m;
        pi = (int64_t)mine;
      }
    } else {
      float m = neg_inf;
      for (int64_t j = threadIdx.x; j < p.nred; j += blockDim.x) {
        float v = dk_ld<DT>(x, base + dk_red_off(p.rs, p.rx, j));
        m = v > m ? v : m;
      }
      m = dk_block_reduce(m, sf, dk_op_max(), neg_inf);
      if (m == neg_inf) m = 0.0f;   // all -inf: the sum is 0
      double z = 0.0;
      for (int64_t j = threadIdx.x; j < p.nred; j += blockDim.x)
        z += (double)expf(dk_ld<DT>(x, base + dk_red_off(p.rs, p.rx, j)) - m);
      z = dk_block_reduce(z, sd, dk_op_sum(), 0.0);
      const double lz = log(z);
      for (int64_t j = threadIdx.x; j < p.nred; j += blockDim.x) {
        const int64_t e = base + dk_red_off(p.rs, p.rx, j);
        const float v = dk_ld<DT>(x, e);
        float y;
        if (p.op == DK_KR_LOG_SOFTMAX) y = z == 0.0 ? neg_inf : (float)(((double)v - m) - lz);
        else y = z == 0.0 ? 0.0f : (float)((double)expf(v - m) / z);
        dk_st<DT>(out, e, y);
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(DK_ROW_THREADS) dk_reduce_f32(const __grid_constant__ dk_kp_reduce p) { dk_grid_wait(); dk_reduce_impl<DK_KT_F32>(p); }
extern "C" __global__ void __launch_bounds__(DK_ROW_THREADS) dk_reduce_f16(const __grid_constant__ dk_kp_reduce p) { dk_grid_wait(); dk_reduce_impl<DK_KT_F16>(p); }
extern "C" __global__ void __launch_bounds__(DK_ROW_THREADS) dk_reduce_bf16(const __grid_constant__ dk_kp_reduce p) { dk_grid_wait(); dk_reduce_impl<DK_KT_BF16>(p); }
