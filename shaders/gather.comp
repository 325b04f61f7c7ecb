#version 450
/* index_select along an axis: out [outer, nids, inner] from x [outer, n,
 * inner], out[q, k, j] = x[q, id_k, j], a negative id counting from the end.
 * With SCATTER = 1 the reverse (dk_index_copy): binding 0 is dst [outer, n,
 * inner], binding 1 src [outer, nids, inner] of dtype DTS, dst[q, id_k, j] =
 * src[q, k, j]; n_out counts src's elements. One thread per element of the
 * smaller side, grid-stride. With check=1, workgroup 0
 * also finds the first id outside [-n, n) and writes {1, position, id} into
 * status slot `slot`, which the host reports at the next sync (as
 * embedding.comp does); elements of bad ids are not written. */
//!variant gather -DDK_SUBGROUPS
//!variant gather_nosg
#extension GL_GOOGLE_include_directive : require
#define WG 256
#define DK_REDUCE
layout(local_size_x_id = 7) in;   /* WG at most */
#define WGS gl_WorkGroupSize.x
#include "common.glsl"

DK_OUT(0, O)
DK_IN(1, X)
DK_IN(2, Ids)
layout(set = 0, binding = 3) buffer Status { uint status[]; };

layout(constant_id = 0) const uint DT = 0u;
layout(constant_id = 1) const uint SCATTER = 0u;
layout(constant_id = 2) const uint DTS = 0u;    /* src's dtype (SCATTER) */

layout(push_constant) uniform P {
  uint n_out, inner, nids, n;
  uint o_off, x_off, ids_off;
  uint check, slot;
} p;

void main() {
  if (p.check != 0u && dk_group() == 0u) {
    uint first = 0xffffffffu;
    for (uint k = gl_LocalInvocationID.x; k < p.nids; k += WGS) {
      int id = int(Ids32[p.ids_off + k]);
      if (id < -int(p.n) || id >= int(p.n)) first = min(first, k);
    }
    first = dk_umin(first);
    if (gl_LocalInvocationID.x == 0u && first != 0xffffffffu) {
      status[p.slot * 4u + 1u] = first;
      status[p.slot * 4u + 2u] = Ids32[p.ids_off + first];
      status[p.slot * 4u] = 1u;
    }
  }
  uint stride = dk_groups() * WGS;
  for (uint i = dk_group() * WGS + gl_LocalInvocationID.x; i < p.n_out; i += stride) {
    uint j = i % p.inner, r = i / p.inner, k = r % p.nids, q = r / p.nids;
    int id = int(Ids32[p.ids_off + k]);
    if (id < 0) id += int(p.n);
    if (id < 0 || id >= int(p.n)) continue;
    if (SCATTER != 0u) O_st(DT, p.o_off + (q * p.n + uint(id)) * p.inner + j, X_ld(DTS, p.x_off + i));
    else O_st(DT, p.o_off + i, X_ld(DT, p.x_off + (q * p.n + uint(id)) * p.inner + j));
  }
}
