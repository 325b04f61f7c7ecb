#version 450
/* rmsnorm and layernorm over the last dim: one workgroup per row, f32
 * sums. w and b are optional and may have another float dtype than x. */
//!variant norm -DDK_SUBGROUPS
//!variant norm_nosg
#extension GL_GOOGLE_include_directive : require
#define WG 256
#define DK_REDUCE
layout(local_size_x_id = 7) in;   /* WG at most */
#define WGS gl_WorkGroupSize.x
#include "common.glsl"

DK_OUT(0, O)
DK_IN(1, X)
DK_IN(2, W)
DK_IN(3, Bv)

layout(constant_id = 0) const uint DT = 0u;
layout(constant_id = 1) const uint DTW = 0u;
layout(constant_id = 2) const uint FLAGS = 0u;   /* 1 w, 2 b, 4 layernorm */

layout(push_constant) uniform P {
  uint rows, cols;
  float eps;
  uint o_off, x_off, w_off, b_off;
} p;

void main() {
  uint l = gl_LocalInvocationID.x, n = p.cols;
  bool layer = (FLAGS & 4u) != 0u;
  for (uint row = dk_group(); row < p.rows; row += dk_groups()) {
    uint xb = p.x_off + row * n, ob = p.o_off + row * n;
    float mean = 0.0;
    if (layer) {
      float s = 0.0;
      for (uint j = l; j < n; j += WGS) s += X_ld(DT, xb + j);
      mean = dk_sum(s) / float(n);
    }
    float q = 0.0;
    for (uint j = l; j < n; j += WGS) {
      float v = X_ld(DT, xb + j) - mean;
      q += v * v;
    }
    float inv = 1.0 / sqrt(dk_sum(q) / float(n) + p.eps);
    for (uint j = l; j < n; j += WGS) {
      float v = (X_ld(DT, xb + j) - mean) * inv;
      if ((FLAGS & 1u) != 0u) v *= W_ld(DTW, p.w_off + j);
      if ((FLAGS & 2u) != 0u) v += Bv_ld(DTW, p.b_off + j);
      O_st(DT, ob + j, v);
    }
  }
}
