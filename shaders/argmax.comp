#version 450
/* argmax over the last dim, one workgroup per row; the lowest index among
 * equal maxima, 0 when nothing beats -inf (as the CPU backend does). */
//!variant argmax -DDK_SUBGROUPS
//!variant argmax_nosg
#extension GL_GOOGLE_include_directive : require
#define WG 256
#define DK_REDUCE
layout(local_size_x_id = 7) in;   /* WG at most */
#define WGS gl_WorkGroupSize.x
#include "common.glsl"

DK_OUT(0, O)
DK_IN(1, X)

layout(constant_id = 0) const uint DT = 0u;

layout(push_constant) uniform P { uint rows, cols, o_off, x_off; } p;

void main() {
  uint l = gl_LocalInvocationID.x;
  for (uint row = dk_group(); row < p.rows; row += dk_groups()) {
    uint xb = p.x_off + row * p.cols, bi = 0xffffffffu;
    float best = -1.0 / 0.0;
    for (uint j = l; j < p.cols; j += WGS) {
      float v = X_ld(DT, xb + j);
      if (v > best) { best = v; bi = j; }
    }
    float m = dk_max(best);
    uint idx = dk_umin(best == m ? bi : 0xffffffffu);
    if (l == 0u) O32[p.o_off + row] = idx == 0xffffffffu ? 0u : idx;
  }
}
