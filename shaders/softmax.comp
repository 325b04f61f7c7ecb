#version 450
/* softmax over the last dim, one workgroup per row. Masked: x*scale, and
 * row i of the last-but-one dim sees columns <= i + off (off < 0: all). */
//!variant softmax -DDK_SUBGROUPS
//!variant softmax_nosg
#extension GL_GOOGLE_include_directive : require
#define WG 256
#define DK_REDUCE
layout(local_size_x_id = 7) in;   /* WG at most */
#define WGS gl_WorkGroupSize.x
#include "common.glsl"

DK_OUT(0, O)
DK_IN(1, X)

layout(constant_id = 0) const uint DT = 0u;

layout(push_constant) uniform P {
  uint rows, cols, rows_per;
  float scale;
  int off;
  uint o_off, x_off;
  uint row_base;   /* rows before this dispatch's first (the mask counts from the tensor's) */
} p;

void main() {
  uint l = gl_LocalInvocationID.x, n = p.cols;
  for (uint row = dk_group(); row < p.rows; row += dk_groups()) {
    uint xb = p.x_off + row * n, ob = p.o_off + row * n, lim = n;
    if (p.off >= 0) lim = min((p.row_base + row) % p.rows_per + uint(p.off) + 1u, n);
    float m = -1.0 / 0.0;
    for (uint j = l; j < lim; j += WGS) m = max(m, X_ld(DT, xb + j) * p.scale);
    m = dk_max(m);
    /* all -inf (fully masked): shift by 0, so z is 0 and the row zeros, or
     * NaN when the row holds a NaN (then the row is NaN, as anywhere else) */
    if (m == -1.0 / 0.0) m = 0.0;
    float z = 0.0;
    for (uint j = l; j < lim; j += WGS) z += exp(X_ld(DT, xb + j) * p.scale - m);
    z = dk_sum(z);
    for (uint j = l; j < n; j += WGS) {
      float v = j < lim && z != 0.0 ? exp(X_ld(DT, xb + j) * p.scale - m) / z : 0.0;
      O_st(DT, ob + j, v);
    }
  }
}
