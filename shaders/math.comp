#version 450
/* Elementwise math with NumPy broadcasting of up to three inputs: sqrt,
 * rsqrt, log, abs, neg, erf, clamp, pow by a scalar, pow by a tensor, and
 * where (mask ? a : b). One thread per output element, grid-stride. The host
 * collapses shapes to four dims (d3 innermost) and gives each input's strides
 * in elements, 0 where it broadcasts. The op codes are this shader's own
 * (backends/vulkan.h, dk_vk_math_code), not dk_op values. */
//!variant math
#extension GL_GOOGLE_include_directive : require
#define WG 256
layout(local_size_x = WG) in;
#include "common.glsl"

DK_OUT(0, O)
DK_IN(1, A)
DK_IN(2, B)
DK_IN(3, C)

/* 0 sqrt 1 rsqrt 2 log 3 abs 4 neg 5 erf 6 clamp 7 pow_scalar 8 pow 9 where */
layout(constant_id = 0) const uint OP = 0u;
layout(constant_id = 1) const uint DT = 0u;
layout(constant_id = 2) const uint FLAT = 1u;

layout(push_constant) uniform P {
  uint n;
  uint o_off, a_off, b_off, c_off;
  float f0, f1;
  uint d1, d2, d3;
  uint as0, as1, as2, as3;
  uint bs0, bs1, bs2, bs3;
  uint cs0, cs1, cs2, cs3;
  uint m1, s1, m2, s2, m3, s3;   /* dk_div magic for d1, d2, d3 */
} p;

#define NAN_ uintBitsToFloat(0x7fc00000u)
const float INF = 1.0 / 0.0;

/* Abramowitz-Stegun 7.1.26, |error| < 1.5e-7 (as elementwise.comp's gelu) */
float dk_erf(float x) {
  float a = abs(x), t = 1.0 / (1.0 + 0.3275911 * a);
  float y = 1.0 - t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))) * exp(-a * a);
  return sign(x) * y;
}

/* C's powf rules: GLSL's pow is undefined for x < 0 and for x = 0, e <= 0 */
float dk_pow(float x, float e) {
  if (e == 0.0 || x == 1.0) return 1.0;
  if (isnan(x) || isnan(e)) return NAN_;
  float ax = abs(x);
  bool ei = floor(e) == e;   /* +-inf count as even integers */
  bool odd = ei && abs(e) < 16777216.0 && (uint(abs(e)) & 1u) == 1u;
  if (x < 0.0 && !ei && !isinf(x)) return NAN_;
  float r;
  if (ax == 0.0) r = e < 0.0 ? INF : 0.0;
  else if (isinf(e)) r = ax == 1.0 ? 1.0 : ((ax > 1.0) == (e > 0.0) ? INF : 0.0);
  else if (isinf(ax)) r = e < 0.0 ? 0.0 : INF;
  else r = exp2(e * log2(ax));
  return ((floatBitsToUint(x) >> 31) != 0u && odd) ? -r : r;
}

float unary(float x) {
  switch (OP) {
  case 0u: return sqrt(x);
  case 1u: return 1.0 / sqrt(x);
  case 2u: return log(x);
  case 3u: return abs(x);
  case 4u: return -x;
  case 5u: return dk_erf(x);
  case 6u: return isnan(x) ? x : min(max(x, p.f0), p.f1);
  case 7u: return dk_pow(x, p.f0);
  }
  return x;
}

void main() {
  uint stride = dk_groups() * WG;
  for (uint i = dk_group() * WG + gl_LocalInvocationID.x; i < p.n; i += stride) {
    uint ai = i, bi = i, ci = i;
    if (FLAT == 0u) {
      uint r = dk_div(i, p.m3, p.s3), c3 = i - r * p.d3;
      uint q = dk_div(r, p.m2, p.s2), c2 = r - q * p.d2;
      uint c0 = dk_div(q, p.m1, p.s1), c1 = q - c0 * p.d1;
      ai = c0 * p.as0 + c1 * p.as1 + c2 * p.as2 + c3 * p.as3;
      bi = c0 * p.bs0 + c1 * p.bs1 + c2 * p.bs2 + c3 * p.bs3;
      ci = c0 * p.cs0 + c1 * p.cs1 + c2 * p.cs2 + c3 * p.cs3;
    }
    float v;
    if (OP == 9u) {
      /* the mask is i32: any nonzero value selects a */
      v = A32[p.a_off + ai] != 0u ? B_ld(DT, p.b_off + bi) : C_ld(DT, p.c_off + ci);
    } else if (OP == 8u) {
      v = dk_pow(A_ld(DT, p.a_off + ai), B_ld(DT, p.b_off + bi));
    } else {
      v = unary(A_ld(DT, p.a_off + ai));
    }
    O_st(DT, p.o_off + i, v);
  }
}
