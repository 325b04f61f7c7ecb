// kernels/elementwise.cu — binary ops with NumPy broadcasting (add, sub,
// mul, div) and unary ops (scale, silu, gelu, gelu_tanh, relu, sigmoid, tanh,
// exp, swiglu), for f32, f16 and bf16 (one dtype for every operand).
//
// Launch geometry: 1-D grid of DK_EW_THREADS-thread blocks,
//   grid.x = min(ceil(n / DK_EW_THREADS), DK_MAX_GRID_X),
// and a grid-stride loop over the output index i in [0, n) (64-bit).
//
// Indexing invariants:
//   - out is contiguous (the dispatcher refuses strided outputs), so element
//     i of out is at i.
//   - binary, general case: i is decomposed row-major over p.shape (out's
//     shape, p.ndim dims); a's element is sum_d c_d * p.astr[d], where the
//     host set astr[d] = 0 for every dim in which a broadcasts (size 1 or
//     missing on the left) and a's real stride otherwise. Same for b.
//   - binary, p.flat: a, b and out have one shape and are contiguous, so all
//     three use i. The host sets flat only then.
//   - unary: x (and swiglu's y) have out's shape and are contiguous: index i.
//   - in place (out == a or out == x, same layout) is allowed by the
//     dispatcher: each thread reads its element before writing it, and no
//     other thread touches that element.
//
// Semantics are those of dk__cpu_binary / dk__cpu_unary in backends/cpu.h:
// load as f32, compute in f32 with the same expressions, round once at the
// store (round to nearest even for f16/bf16).
#include "dk_common.cuh"

template <int DT> __device__ void dk_binary_impl(const dk_kp_binary &p) {
  const void *a = (const void *)p.a, *b = (const void *)p.b;
  void *out = (void *)p.out;
  for (int64_t i = dk_gtid(); i < p.n; i += dk_gstride()) {
    int64_t ia = i, ib = i;
    if (!p.flat) {
      int64_t rem = i;
      ia = 0;
      ib = 0;
      for (int d = p.ndim - 1; d >= 0; d--) {
        int64_t c = rem % p.shape[d];
        rem /= p.shape[d];
        ia += c * p.astr[d];
        ib += c * p.bstr[d];
      }
    }
    float x = dk_ld<DT>(a, ia), y = dk_ld<DT>(b, ib), r;
    switch (p.op) {
    case DK_KB_ADD: r = x + y; break;
    case DK_KB_SUB: r = x - y; break;
    case DK_KB_MUL: r = x * y; break;
    default: r = x / y; break;
    }
    dk_st<DT>(out, i, r);
  }
}

DK_DEV float dk_unary1(int op, float x, float s) {
  switch (op) {
  case DK_KU_SCALE: return x * s;
  case DK_KU_SILU: return x / (1.0f + expf(-x));
  case DK_KU_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  case DK_KU_GELU_TANH: return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
  case DK_KU_RELU: return x > 0.0f ? x : 0.0f;
  case DK_KU_SIGMOID: return 1.0f / (1.0f + expf(-x));
  case DK_KU_TANH: return tanhf(x);
  case DK_KU_EXP: return expf(x);
  default: return x;
  }
}

template <int DT> __device__ void dk_unary_impl(const dk_kp_unary &p) {
  const void *x = (const void *)p.x, *y = (const void *)p.y;
  void *out = (void *)p.out;
  for (int64_t i = dk_gtid(); i < p.n; i += dk_gstride()) {
    float v = dk_ld<DT>(x, i), r;
    if (p.op == DK_KU_SWIGLU) r = v / (1.0f + expf(-v)) * dk_ld<DT>(y, i);
    else r = dk_unary1(p.op, v, p.s);
    dk_st<DT>(out, i, r);
  }
}

extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_binary_f32(const __grid_constant__ dk_kp_binary p) { dk_grid_wait(); dk_binary_impl<DK_KT_F32>(p); }
extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_binary_f16(const __grid_constant__ dk_kp_binary p) { dk_grid_wait(); dk_binary_impl<DK_KT_F16>(p); }
extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_binary_bf16(const __grid_constant__ dk_kp_binary p) { dk_grid_wait(); dk_binary_impl<DK_KT_BF16>(p); }
extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_unary_f32(const __grid_constant__ dk_kp_unary p) { dk_grid_wait(); dk_unary_impl<DK_KT_F32>(p); }
extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_unary_f16(const __grid_constant__ dk_kp_unary p) { dk_grid_wait(); dk_unary_impl<DK_KT_F16>(p); }
extern "C" __global__ void __launch_bounds__(DK_EW_THREADS) dk_unary_bf16(const __grid_constant__ dk_kp_unary p) { dk_grid_wait(); dk_unary_impl<DK_KT_BF16>(p); }
