#version 450
/* Attention with grouped-query heads. A workgroup serves one query token t
 * and HG query heads that share one kv head, so each row of K and V is read
 * once for all of them. Keys are taken WGS at a time: a thread per key
 * scores it against every head, an online softmax per head (running max m
 * and sum l; earlier work rescaled by exp(m - m')), then a thread per output
 * dim accumulates p * V for every head (in shared memory, each dim owned by
 * one thread, so the workgroup size is free). Softmax and sums in f32.
 * q [T,Hq,D], k [S,Hkv,D], v [S,Hkv,Dv], out [T,Hq,Dv]. */
//!variant attention -DDK_SUBGROUPS
//!variant attention_nosg
#extension GL_GOOGLE_include_directive : require
#define WG 256
#define HMAX 8        /* heads per workgroup */
#define QMAX 2048     /* HG * max(D, Dv) <= QMAX (the host picks HG) */
#define DK_REDUCE
layout(local_size_x_id = 7) in;   /* WG at most */
#define WGS gl_WorkGroupSize.x
#include "common.glsl"

DK_OUT(0, O)
DK_IN(1, Q)
DK_IN(2, K)
DK_IN(3, V)

layout(constant_id = 0) const uint DTQ = 0u;
layout(constant_id = 1) const uint DTK = 0u;
layout(constant_id = 2) const uint HG = 1u;    /* query heads per workgroup, <= HMAX */

layout(push_constant) uniform P {
  uint T, Hq, S, Hkv, D, Dv;
  float scale;
  int off;
  uint o_off, q_off, k_off, v_off;
} p;

shared float qs[QMAX];
shared float acc[QMAX];
shared float ps[HMAX * WG];

void main() {
  uint l = gl_LocalInvocationID.x, grp = p.Hq / p.Hkv, per_t = p.Hq / HG;
  for (uint wg = dk_group(); wg < p.T * per_t; wg += dk_groups()) {
    uint t = wg / per_t, h0 = (wg % per_t) * HG, g = h0 / grp, lim = p.S;
    if (p.off >= 0) lim = min(t + uint(p.off) + 1u, p.S);
    DK_BARRIER();
    for (uint i = l; i < HG * p.D; i += WGS) qs[i] = Q_ld(DTQ, p.q_off + (t * p.Hq + h0) * p.D + i);
    for (uint i = l; i < HG * p.Dv; i += WGS) acc[i] = 0.0;
    DK_BARRIER();
    float m[HMAX], lsum[HMAX], alpha[HMAX], sc[HMAX];
    [[unroll]] for (uint h = 0u; h < HG; h++) { m[h] = -1.0 / 0.0; lsum[h] = 0.0; }
    for (uint s0 = 0u; s0 < lim; s0 += WGS) {
      uint s = s0 + l;
      [[unroll]] for (uint h = 0u; h < HG; h++) sc[h] = 0.0;
      if (s < lim) {
        uint kb = p.k_off + (s * p.Hkv + g) * p.D;
        for (uint j = 0u; j < p.D; j++) {
          float kv = K_ld(DTK, kb + j);
          [[unroll]] for (uint h = 0u; h < HG; h++) sc[h] += qs[h * p.D + j] * kv;
        }
      }
      DK_BARRIER();
      [[unroll]] for (uint h = 0u; h < HG; h++) {
        float v = s < lim ? sc[h] * p.scale : -1.0 / 0.0;
        float mn = max(m[h], dk_max(v));
        alpha[h] = exp(m[h] - mn);
        float pk = s < lim ? exp(v - mn) : 0.0;
        ps[h * WG + l] = pk;
        lsum[h] = lsum[h] * alpha[h] + dk_sum(pk);
        m[h] = mn;
      }
      DK_BARRIER();
      uint cnt = min(WGS, lim - s0);
      for (uint j = l; j < p.Dv; j += WGS) {
        float a[HMAX];
        [[unroll]] for (uint h = 0u; h < HG; h++) a[h] = acc[h * p.Dv + j] * alpha[h];
        uint vb = p.v_off + (s0 * p.Hkv + g) * p.Dv + j;
        for (uint k = 0u; k < cnt; k++) {
          float vv = V_ld(DTK, vb + k * p.Hkv * p.Dv);
          [[unroll]] for (uint h = 0u; h < HG; h++) a[h] += ps[h * WG + k] * vv;
        }
        [[unroll]] for (uint h = 0u; h < HG; h++) acc[h * p.Dv + j] = a[h];
      }
    }
    DK_BARRIER();
    for (uint i = l; i < HG * p.Dv; i += WGS) {
      uint h = i / p.Dv;
      float ls = 0.0;
      /* lsum is uniform; pick this element's head without indexing registers */
      [[unroll]] for (uint q = 0u; q < HG; q++)
        if (q == h) ls = lsum[q];
      O_st(DTQ, p.o_off + (t * p.Hq + h0) * p.Dv + i, ls > 0.0 ? acc[i] / ls : 0.0);
    }
  }
}
