#version 450
/* Rotary embeddings on x [..., T, H, D] (or [T, D]): one thread per rotated
 * pair (so it may run in place) or per untouched element past n_rot.
 * Normal mode pairs (2i, 2i+1); NeoX pairs (i, i + n_rot/2). */
//!variant rope
#extension GL_GOOGLE_include_directive : require
#define WG 256
layout(local_size_x = WG) in;
#include "common.glsl"

DK_OUT(0, O)
DK_IN(1, X)
DK_IN(2, Pos)

layout(constant_id = 0) const uint DT = 0u;
layout(constant_id = 1) const uint NEOX = 0u;

layout(push_constant) uniform P {
  uint n, D, H, T, n_rot;
  float theta;
  uint o_off, x_off, p_off;
  uint mrow, srow, mh, sh, mt, st;   /* dk_div magic for D - n_rot/2, H and T */
  uint row_base;   /* rows before this dispatch's first (positions count from the tensor's) */
} p;

void main() {
  uint per_row = p.D - p.n_rot / 2u, half_ = p.n_rot / 2u;
  uint stride = dk_groups() * WG;
  for (uint i = dk_group() * WG + gl_LocalInvocationID.x; i < p.n; i += stride) {
    uint r = dk_div(i, p.mrow, p.srow), k = i - r * per_row, rb = r * p.D;
    if (k >= half_) {
      uint j = p.n_rot + (k - half_);
      O_st(DT, p.o_off + rb + j, X_ld(DT, p.x_off + rb + j));
      continue;
    }
    uint tok = dk_div(p.row_base + r, p.mh, p.sh);
    float pos = float(int(Pos32[p.p_off + tok - dk_div(tok, p.mt, p.st) * p.T]));
    float freq = 1.0 / pow(p.theta, float(2u * k) / float(p.n_rot));
    float v = pos * freq;
    /* reduce to [-pi, pi] in two steps: the hardware's sin/cos are only
     * accurate near zero and positions reach thousands of radians */
    float q = roundEven(v * 0.15915494309189535);
    v = (v - q * 6.28125) - q * 1.9353071795864769e-3;
    float cs = cos(v), sn = sin(v);
    uint i0 = NEOX != 0u ? k : 2u * k, i1 = NEOX != 0u ? k + half_ : 2u * k + 1u;
    float a = X_ld(DT, p.x_off + rb + i0), b = X_ld(DT, p.x_off + rb + i1);
    O_st(DT, p.o_off + rb + i0, a * cs - b * sn);
    O_st(DT, p.o_off + rb + i1, a * sn + b * cs);
  }
}
