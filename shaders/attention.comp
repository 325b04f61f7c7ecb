#version 450
/* Attention with grouped-query heads: one workgroup per (query t, head h).
 * Keys are taken WG at a time: a thread per key for the scores, an online
 * softmax (running max m and sum l, earlier work rescaled by exp(m - m')),
 * then a thread per output dim accumulates p * V in registers. Softmax and
 * sums in f32. q [T,Hq,D], k [S,Hkv,D], v [S,Hkv,Dv], out [T,Hq,Dv]. */
//!variant attention -DDK_SUBGROUPS
//!variant attention_nosg
#extension GL_GOOGLE_include_directive : require
#define WG 64
#define DMAX 512
#define NJ (DMAX / WG)
#define DK_REDUCE
#include "common.glsl"
layout(local_size_x = WG) in;

DK_OUT(0, O)
DK_IN(1, Q)
DK_IN(2, K)
DK_IN(3, V)

layout(constant_id = 0) const uint DTQ = 0u;
layout(constant_id = 1) const uint DTK = 0u;

layout(push_constant) uniform P {
  uint T, Hq, S, Hkv, D, Dv;
  float scale;
  int off;
  uint o_off, q_off, k_off, v_off;
} p;

shared float qs[DMAX];
shared float ps[WG];

void main() {
  uint l = gl_LocalInvocationID.x, grp = p.Hq / p.Hkv;
  for (uint row = dk_group(); row < p.T * p.Hq; row += dk_groups()) {
    uint t = row / p.Hq, h = row % p.Hq, g = h / grp, lim = p.S;
    if (p.off >= 0) lim = min(t + uint(p.off) + 1u, p.S);
    barrier();
    for (uint j = l; j < p.D; j += WG) qs[j] = Q_ld(DTQ, p.q_off + row * p.D + j);
    barrier();
    float acc[NJ];
    [[unroll]] for (uint i = 0u; i < NJ; i++) acc[i] = 0.0;
    float m = -1.0 / 0.0, lsum = 0.0;
    for (uint s0 = 0u; s0 < lim; s0 += WG) {
      uint s = s0 + l;
      float sc = -1.0 / 0.0;
      if (s < lim) {
        uint kb = p.k_off + (s * p.Hkv + g) * p.D;
        float d = 0.0;
        for (uint j = 0u; j < p.D; j++) d += qs[j] * K_ld(DTK, kb + j);
        sc = d * p.scale;
      }
      float mn = max(m, dk_max(sc));
      float alpha = exp(m - mn), pk = s < lim ? exp(sc - mn) : 0.0;
      barrier();
      ps[l] = pk;
      barrier();
      lsum = lsum * alpha + dk_sum(pk);
      m = mn;
      uint cnt = min(uint(WG), lim - s0);
      [[unroll]] for (uint i = 0u; i < NJ; i++) {
        uint j = l + i * WG;
        if (j >= p.Dv) break;
        float a = acc[i] * alpha;
        uint vb = p.v_off + (s0 * p.Hkv + g) * p.Dv + j;
        for (uint k = 0u; k < cnt; k++) a += ps[k] * V_ld(DTK, vb + k * p.Hkv * p.Dv);
        acc[i] = a;
      }
    }
    [[unroll]] for (uint i = 0u; i < NJ; i++) {
      uint j = l + i * WG;
      if (j >= p.Dv) break;
      O_st(DTQ, p.o_off + row * p.Dv + j, lsum > 0.0 ? acc[i] / lsum : 0.0);
    }
  }
}
