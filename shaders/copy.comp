#version 450
/* dst[idx] = src[idx] over any strides (in elements), converting the dtype;
 * bit copies when the dtypes agree. Also serves transpose (permuted source
 * strides) and concat (two copies into strided parts of the output). The
 * host collapses to four dims, d3 innermost. */
//!variant copy
#extension GL_GOOGLE_include_directive : require
#define WG 256
layout(local_size_x = WG) in;
#include "common.glsl"

DK_OUT(0, O)
DK_IN(1, S)

layout(constant_id = 0) const uint DTO = 0u;
layout(constant_id = 1) const uint DTS = 0u;

layout(push_constant) uniform P {
  uint n;
  uint o_off, s_off;
  uint d1, d2, d3;
  uint os0, os1, os2, os3;
  uint ss0, ss1, ss2, ss3;
  uint m1, s1, m2, s2, m3, s3;   /* dk_div magic for d1, d2, d3 */
} p;

void main() {
  uint stride = dk_groups() * WG;
  for (uint i = dk_group() * WG + gl_LocalInvocationID.x; i < p.n; i += stride) {
    uint r = dk_div(i, p.m3, p.s3), c3 = i - r * p.d3;
    uint q = dk_div(r, p.m2, p.s2), c2 = r - q * p.d2;
    uint c0 = dk_div(q, p.m1, p.s1), c1 = q - c0 * p.d1;
    uint oi = p.o_off + c0 * p.os0 + c1 * p.os1 + c2 * p.os2 + c3 * p.os3;
    uint si = p.s_off + c0 * p.ss0 + c1 * p.ss1 + c2 * p.ss2 + c3 * p.ss3;
    if (DTO == DTS) O_straw(DTO, oi, S_raw(DTS, si));
    else O_st(DTO, oi, S_ld(DTS, si));
  }
}
