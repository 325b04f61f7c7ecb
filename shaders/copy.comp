#version 450
/* dst[idx] = src[idx] over any strides (in elements), converting the dtype;
 * bit copies when the dtypes agree. Also serves transpose (permuted source
 * strides) and concat (two copies into strided parts of the output). The
 * host collapses to four dims, d3 innermost. */
//!variant copy
#extension GL_GOOGLE_include_directive : require
#define WG 256
#include "common.glsl"
layout(local_size_x = WG) in;

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
} p;

void main() {
  uint stride = dk_groups() * WG;
  for (uint i = dk_group() * WG + gl_LocalInvocationID.x; i < p.n; i += stride) {
    uint r = i, c3 = r % p.d3;
    r /= p.d3;
    uint c2 = r % p.d2;
    r /= p.d2;
    uint c1 = r % p.d1, c0 = r / p.d1;
    uint oi = p.o_off + c0 * p.os0 + c1 * p.os1 + c2 * p.os2 + c3 * p.os3;
    uint si = p.s_off + c0 * p.ss0 + c1 * p.ss1 + c2 * p.ss2 + c3 * p.ss3;
    if (DTO == DTS) O_straw(DTO, oi, S_raw(DTS, si));
    else O_st(DTO, oi, S_ld(DTS, si));
  }
}
