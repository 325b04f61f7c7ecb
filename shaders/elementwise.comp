#version 450
/* Binary ops with NumPy broadcasting, activations, scale and swiglu: one
 * thread per output element, grid-stride. The op code is dk_op's value. The
 * host collapses shapes to four dims (d3 innermost) and gives each input's
 * strides in elements, 0 where it broadcasts. */
//!variant elementwise
#extension GL_GOOGLE_include_directive : require
#define WG 256
layout(local_size_x = WG) in;
#include "common.glsl"

DK_OUT(0, O)
DK_IN(1, A)
DK_IN(2, B)

/* dtype and op are specialization constants: the driver folds every branch
 * on them when it builds the pipeline (a software rasterizer pays for
 * branches it cannot see through) */
layout(constant_id = 0) const uint OP = 0u;
layout(constant_id = 1) const uint DT = 0u;
layout(constant_id = 2) const uint FLAT = 1u;

layout(push_constant) uniform P {
  uint n;
  uint o_off, a_off, b_off;
  float s;
  uint d1, d2, d3;
  uint as0, as1, as2, as3;
  uint bs0, bs1, bs2, bs3;
  uint m1, s1, m2, s2, m3, s3;   /* dk_div magic for d1, d2, d3 */
} p;

/* accurate for small |y|, where exp(y) - 1 cancels */
float dk_expm1(float y) {
  if (abs(y) < 0.5)
    return y * (1.0 + y * (1.0 / 2.0 + y * (1.0 / 6.0 + y * (1.0 / 24.0 + y * (1.0 / 120.0 +
           y * (1.0 / 720.0 + y * (1.0 / 5040.0 + y * (1.0 / 40320.0))))))));
  return exp(y) - 1.0;
}
float dk_tanh(float x) {
  float a = abs(x);
  if (a > 15.0) return sign(x);
  float e = dk_expm1(2.0 * a);
  return sign(x) * (e / (e + 2.0));
}
/* Abramowitz-Stegun 7.1.26, |error| < 1.5e-7 */
float dk_erf(float x) {
  float a = abs(x), t = 1.0 / (1.0 + 0.3275911 * a);
  float y = 1.0 - t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))) * exp(-a * a);
  return sign(x) * y;
}

float unary(uint op, float x) {
  switch (op) {
  case 4u: return x * p.s;
  case 5u: return x / (1.0 + exp(-x));
  case 6u: return 0.5 * x * (1.0 + dk_erf(x * 0.70710678118654752));
  case 7u: return 0.5 * x * (1.0 + dk_tanh(0.79788456080286536 * (x + 0.044715 * x * x * x)));
  case 8u: return x > 0.0 ? x : 0.0;
  case 9u: return 1.0 / (1.0 + exp(-x));
  case 10u: return dk_tanh(x);
  case 11u: return exp(x);
  }
  return x;
}

void main() {
  uint stride = dk_groups() * WG;
  for (uint i = dk_group() * WG + gl_LocalInvocationID.x; i < p.n; i += stride) {
    uint ai = i, bi = i;
    if (FLAT == 0u) {
      uint r = dk_div(i, p.m3, p.s3), c3 = i - r * p.d3;
      uint q = dk_div(r, p.m2, p.s2), c2 = r - q * p.d2;
      uint c0 = dk_div(q, p.m1, p.s1), c1 = q - c0 * p.d1;
      ai = c0 * p.as0 + c1 * p.as1 + c2 * p.as2 + c3 * p.as3;
      bi = c0 * p.bs0 + c1 * p.bs1 + c2 * p.bs2 + c3 * p.bs3;
    }
    float a = A_ld(DT, p.a_off + ai), v;
    if (OP <= 3u) {
      float b = B_ld(DT, p.b_off + bi);
      v = OP == 0u ? a + b : OP == 1u ? a - b : OP == 2u ? a * b : a / b;
    } else if (OP == 12u) {
      v = a / (1.0 + exp(-a)) * B_ld(DT, p.b_off + bi);
    } else {
      v = unary(OP, a);
    }
    O_st(DT, p.o_off + i, v);
  }
}
