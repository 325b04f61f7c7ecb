#version 450
/* rmsnorm and layernorm over the last dim: one workgroup per row, f32
 * sums. w and b are optional and may have another float dtype than x. */
//!variant norm -DDK_SUBGROUPS
//!variant norm_nosg
#extension GL_GOOGLE_include_directive : require
#define WG 256
#define DK_REDUCE
#include "common.glsl"
layout(local_size_x = WG) in;

DK_OUT(0, O)
DK_IN(1, X)
DK_IN(2, W)
DK_IN(3, Bv)

layout(push_constant) uniform P {
  uint rows, cols, dt, dtw, flags;  /* flags: 1 w, 2 b, 4 layernorm */
  float eps;
  uint o_off, x_off, w_off, b_off;
} p;

void main() {
  uint l = gl_LocalInvocationID.x, n = p.cols;
  bool layer = (p.flags & 4u) != 0u;
  for (uint row = dk_group(); row < p.rows; row += dk_groups()) {
    uint xb = p.x_off + row * n, ob = p.o_off + row * n;
    float mean = 0.0;
    if (layer) {
      float s = 0.0;
      for (uint j = l; j < n; j += WG) s += X_ld(p.dt, xb + j);
      mean = dk_sum(s) / float(n);
    }
    float q = 0.0;
    for (uint j = l; j < n; j += WG) {
      float v = X_ld(p.dt, xb + j) - mean;
      q += v * v;
    }
    float inv = 1.0 / sqrt(dk_sum(q) / float(n) + p.eps);
    for (uint j = l; j < n; j += WG) {
      float v = (X_ld(p.dt, xb + j) - mean) * inv;
      if ((p.flags & 1u) != 0u) v *= W_ld(p.dtw, p.w_off + j);
      if ((p.flags & 2u) != 0u) v += Bv_ld(p.dtw, p.b_off + j);
      O_st(p.dt, ob + j, v);
    }
  }
}
