#version 450
/* out[i, :] = table[ids[i], :], one thread per output element. A table
 * larger than one binding may be is bound in windows of rows [r0, r1): each
 * dispatch writes the rows whose id falls in its window. Workgroup 0 of the
 * dispatch with check=1 finds the first id outside [0, rows) and writes
 * {1, position, id} into status slot `slot`, which the host reads at the next
 * sync (the only place the error can surface on a GPU). */
//!variant embedding -DDK_SUBGROUPS
//!variant embedding_nosg
#extension GL_GOOGLE_include_directive : require
#define WG 256
#define DK_REDUCE
layout(local_size_x_id = 7) in;   /* WG at most */
#define WGS gl_WorkGroupSize.x
#include "common.glsl"

DK_OUT(0, O)
DK_IN(1, T)
DK_IN(2, Ids)
layout(set = 0, binding = 3) buffer Status { uint status[]; };

#define DKQ_BUF T16
#include "quants.glsl"

layout(constant_id = 0) const uint DTT = 0u;
layout(constant_id = 1) const uint DTO = 0u;

layout(push_constant) uniform P {
  uint n, D;
  uint o_off, t_off, ids_off;   /* t_off in halves for block formats */
  uint r0, r1, rows, check, slot, n_ids;
  uint md, sd;   /* dk_div magic for D */
} p;

float table_at(uint row, uint j) {
  if (DTT == DT_Q8_0) {
    uint hb = p.t_off + row * (p.D / 32u) * 17u + (j / 32u) * 17u, q = j % 32u;
    uint w = uint(T16[hb + 1u + q / 2u]);
    int v = int(((q & 1u) != 0u ? w >> 8 : w) << 24) >> 24;
    return dk_h2f(uint(T16[hb])) * float(v);
  }
  if (DTT == DT_Q4_0) {
    uint hb = p.t_off + row * (p.D / 32u) * 9u + (j / 32u) * 9u, q = j % 32u, bi = q % 16u;
    uint w = uint(T16[hb + 1u + bi / 2u]);
    uint byte_ = ((bi & 1u) != 0u ? w >> 8 : w) & 255u;
    uint nib = q < 16u ? (byte_ & 15u) : (byte_ >> 4);
    return dk_h2f(uint(T16[hb])) * float(int(nib) - 8);
  }
  if (DTT >= DT_Q4_1) {
    uint bs = dkq_block(DTT), bh = dkq_halves(DTT);
    return dkq_value(DTT, p.t_off + row * (p.D / bs) * bh + (j / bs) * bh, j % bs);
  }
  return T_ld(DTT, p.t_off + row * p.D + j);
}

void main() {
  if (p.check != 0u && dk_group() == 0u) {
    uint first = 0xffffffffu;
    for (uint k = gl_LocalInvocationID.x; k < p.n_ids; k += WGS) {
      int id = int(Ids32[p.ids_off + k]);
      if (id < 0 || id >= int(p.rows)) first = min(first, k);
    }
    first = dk_umin(first);
    if (gl_LocalInvocationID.x == 0u && first != 0xffffffffu) {
      status[p.slot * 4u + 1u] = first;
      status[p.slot * 4u + 2u] = Ids32[p.ids_off + first];
      status[p.slot * 4u] = 1u;
    }
  }
  uint stride = dk_groups() * WGS;
  for (uint i = dk_group() * WGS + gl_LocalInvocationID.x; i < p.n; i += stride) {
    uint k = dk_div(i, p.md, p.sd), j = i - k * p.D;
    int id = int(Ids32[p.ids_off + k]);
    if (id < int(p.r0) || id >= int(p.r1)) continue;
    O_st(DTO, p.o_off + i, table_at(uint(id) - p.r0, j));
  }
}
