#version 450
/* Attention with grouped-query heads. A workgroup serves one query token t,
 * HG query heads that share one kv head (so each row of K and V is read once
 * for all of them) and one split of the positions: [j * split_len, +
 * split_len) cut at the token's causal limit. Keys are taken WGS at a time:
 * a thread per key scores it against every head, an online softmax per head
 * (running max m and sum l; earlier work rescaled by exp(m - m')), then a
 * thread per output dim accumulates p * V for every head (in shared memory,
 * each dim owned by one thread, so the workgroup size is free). Softmax and
 * sums in f32. q [T,Hq,D], k [S,Hkv,D], v [S,Hkv,Dv], out [T,Hq,Dv].
 *
 * Splits (the host picks them): a decode step has few (t, head group) rows,
 * so positions spread over more workgroups fill a GPU; and llvmpipe ends
 * every loop of an invocation once 65535 iterations have run in all loops
 * together (its loop limiter), which bounds what one workgroup may walk.
 * With one split (PART = 0) the workgroup writes out = acc / l; otherwise
 * (PART = 1) binding 0 takes its record (m, l, acc[0..Dv)) as f32 at
 * ((t * Hq + h) * nsplit + j) * (Dv + 2), and the attn_merge variant
 * combines a row's records by the softmax identity:
 *   out = sum_j e^(m_j - M) acc_j / sum_j e^(m_j - M) l_j,  M = max_j m_j.
 * Both run for tokens t0 .. t0 + T - 1 of the call (the host bounds the
 * records' memory by taking the tokens in pieces).
 *
 * attention_rows (CPU devices, DK_ROWS_D): the same rows, splits and
 * records, for f32 or f16 k and v with D = Dv a constant: see there.
 *
 * POSB = 1 (dk_attention_pos): token t sees keys s <= positions[t] (i32,
 * binding 4) instead of s <= t + off, so one recording serves every
 * position of a decode over the whole cache; splits past it are empty. */
//!variant attention -DDK_SUBGROUPS
//!variant attention_nosg
//!variant attention_rows -DDK_SUBGROUPS -DDK_ROWS_D
//!variant attn_merge -DDK_MERGE
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

layout(constant_id = 3) const uint PART = 0u;   /* 1: binding 0 takes records, not out */
layout(constant_id = 4) const uint POSB = 0u;   /* 1: limits from positions (binding 4) */
layout(set = 0, binding = 4) readonly buffer Pos { int pos32[]; };

layout(push_constant) uniform P {
  uint T, Hq, S, Hkv, D, Dv;
  float scale;
  int off;
  uint o_off, q_off, k_off, v_off;
  uint t0, nsplit, split_len, pos_off;
  uint win;   /* dk_attention_window: keys [lim - win, lim) only; 0: all */
} p;

/* workgroup task wg's split sp, token t, first query head h0, kv head g
 * and positions [beg, lim): the split of the causal (or positions') limit,
 * within the window when there is one */
void att_work(uint wg, out uint sp, out uint t, out uint h0, out uint g, out uint beg, out uint lim) {
  uint per_t = p.Hq / HG, row = wg / p.nsplit;
  sp = wg - row * p.nsplit;
  t = p.t0 + row / per_t;
  h0 = (row % per_t) * HG;
  g = h0 / (p.Hq / p.Hkv);
  lim = p.S;
  if (POSB != 0u) lim = uint(clamp(pos32[p.pos_off + t] + 1, 0, int(p.S)));
  else if (p.off >= 0) lim = min(t + uint(p.off) + 1u, p.S);
  beg = min(sp * p.split_len, lim);
  uint lo = p.win != 0u && lim > p.win ? lim - p.win : 0u;
  lim = min(beg + p.split_len, lim);
  beg = min(max(beg, lo), lim);   /* the split's keys in the window; none when it ends before */
}

#ifdef DK_MERGE
/* a workgroup per (t, h) row: its nsplit records (binding 1, f32) into out */
#define MAXN 256u      /* nsplit at most (the host's DK_VK_ATT_MAXN) */
shared float wt[MAXN];

void main() {
  uint l = gl_LocalInvocationID.x, n = p.nsplit, rs = p.Dv + 2u;
  for (uint r = dk_group(); r < p.T * p.Hq; r += dk_groups()) {
    uint rec = p.q_off + (r * n) * rs;
    float M = -1.0 / 0.0, Z = 0.0;
    for (uint j = 0u; j < n; j++) M = max(M, Q_ld(DT_F32, rec + j * rs));
    DK_BARRIER();   /* the last row's reads of wt are done */
    for (uint j = l; j < n; j += WGS) {
      float m = Q_ld(DT_F32, rec + j * rs);
      wt[j] = m == -1.0 / 0.0 ? 0.0 : exp(m - M);
    }
    DK_BARRIER();
    for (uint j = 0u; j < n; j++) Z += wt[j] * Q_ld(DT_F32, rec + j * rs + 1u);
    for (uint d = l; d < p.Dv; d += WGS) {
      float a = 0.0;
      for (uint j = 0u; j < n; j++) a += wt[j] * Q_ld(DT_F32, rec + j * rs + 2u + d);
      O_st(DTQ, p.o_off + (p.t0 * p.Hq + r) * p.Dv + d, Z > 0.0 ? a / Z : 0.0);
    }
  }
}
#elif defined(DK_ROWS_D)
/* A software device (lavapipe) runs a workgroup's lanes as one SIMD
 * vector and loads shared memory and storage buffers one lane at a time,
 * each with a branch: the kernel below, a thread per key, spent ~3 us a key
 * on Gemma 3's decode (4 heads of 256). Here the workgroup is one subgroup
 * whose lanes split the head dim: lane l holds texels l, l + WGS, ... of
 * each query head's row (4 values each) in registers, reads the same
 * texels of each key's and value's row (bindings 5 and 6: texel views of k
 * and v), and subgroupAdd sums a score. Keys one at a time, an online
 * softmax per head, no shared memory and no barriers. */
layout(constant_id = 5) const uint DC = 4u;    /* D = Dv, a multiple of 4 WGS (f16: 8 WGS) */
layout(set = 0, binding = 5) uniform usamplerBuffer KTX;
layout(set = 0, binding = 6) uniform usamplerBuffer VTX;
const uint NT = DC / (4u * WGS);                /* vec4s of a row a lane: <= 16 (the host checks) */
/* An f16 cache (llama.cpp's default and the runner's) in the same shape:
 * a texel holds 8 values, so lane l's vec4 i is half i & 1 of its texel
 * i >> 1 (texels l, l + WGS, ...); f32: vec4 i is texel i. */
const uint HF = DTK == DT_F16 ? 2u : 1u;
uint unit_dim(uint i, uint l) { return HF == 1u ? 4u * (i * WGS + l) : 8u * ((i >> 1) * WGS + l) + 4u * (i & 1u); }
vec4 unit_of(uvec4 x, uint i) {
  if (HF == 1u) return uintBitsToFloat(x);
  return (i & 1u) == 0u ? vec4(unpackHalf2x16(x.x), unpackHalf2x16(x.y)) : vec4(unpackHalf2x16(x.z), unpackHalf2x16(x.w));
}

void main() {
  uint l = gl_LocalInvocationID.x, per_t = p.Hq / HG;
  for (uint wg = dk_group(); wg < p.T * per_t * p.nsplit; wg += dk_groups()) {
    uint sp, t, h0, g, beg, lim;
    att_work(wg, sp, t, h0, g, beg, lim);
    /* head h's texel j of this lane: qr[h * NT + j] (HG NT <= 64, the host checks) */
    vec4 qr[64], ac[64];
    float m[HMAX], ls[HMAX];
    [[unroll]] for (uint h = 0u; h < HMAX; h++) {
      if (h >= HG) break;
      m[h] = -1.0 / 0.0; ls[h] = 0.0;
      [[unroll]] for (uint j = 0u; j < 16u; j++) {
        if (j >= NT) break;
        uint qb = p.q_off + (t * p.Hq + h0 + h) * DC + unit_dim(j, l);
        qr[h * NT + j] = vec4(Q_ld(DTQ, qb), Q_ld(DTQ, qb + 1u), Q_ld(DTQ, qb + 2u), Q_ld(DTQ, qb + 3u));
        ac[h * NT + j] = vec4(0.0);
      }
    }
    for (uint s = beg; s < lim; s++) {
      uint kt = (p.k_off + (s * p.Hkv + g) * DC) / (4u * HF) + l, vt = (p.v_off + (s * p.Hkv + g) * DC) / (4u * HF) + l;
      vec4 kv[16];
      float pr[HMAX], al[HMAX];
      [[unroll]] for (uint j = 0u; j < 16u; j++) {
        if (j >= NT) break;
        kv[j] = unit_of(texelFetch(KTX, int(kt + j / HF * WGS)), j);
      }
      [[unroll]] for (uint h = 0u; h < HMAX; h++) {
        if (h >= HG) break;
        float dt = 0.0;
        [[unroll]] for (uint j = 0u; j < 16u; j++) {
          if (j >= NT) break;
          dt += dot(qr[h * NT + j], kv[j]);
        }
        float sc = subgroupAdd(dt) * p.scale, mn = max(m[h], sc);
        al[h] = exp(m[h] - mn);
        pr[h] = exp(sc - mn);
        ls[h] = ls[h] * al[h] + pr[h];
        m[h] = mn;
      }
      [[unroll]] for (uint j = 0u; j < 16u; j++) {
        if (j >= NT) break;
        vec4 vv = unit_of(texelFetch(VTX, int(vt + j / HF * WGS)), j);
        [[unroll]] for (uint h = 0u; h < HMAX; h++) {
          if (h >= HG) break;
          ac[h * NT + j] = ac[h * NT + j] * al[h] + pr[h] * vv;
        }
      }
    }
    [[unroll]] for (uint h = 0u; h < HMAX; h++) {
      if (h >= HG) break;
      [[unroll]] for (uint j = 0u; j < 16u; j++) {
        if (j >= NT) break;
        uint dim = unit_dim(j, l);
        vec4 a = ac[h * NT + j];
        if (PART == 0u) {
          uint ob = p.o_off + (t * p.Hq + h0 + h) * DC + dim;
          vec4 r = ls[h] > 0.0 ? a / ls[h] : vec4(0.0);
          O_st(DTQ, ob, r.x); O_st(DTQ, ob + 1u, r.y); O_st(DTQ, ob + 2u, r.z); O_st(DTQ, ob + 3u, r.w);
        } else {
          uint rec = p.o_off + (((t - p.t0) * p.Hq + h0 + h) * p.nsplit + sp) * (DC + 2u);
          if (dim == 0u) { O_st(DT_F32, rec, m[h]); O_st(DT_F32, rec + 1u, ls[h]); }
          O_st(DT_F32, rec + 2u + dim, a.x); O_st(DT_F32, rec + 3u + dim, a.y);
          O_st(DT_F32, rec + 4u + dim, a.z); O_st(DT_F32, rec + 5u + dim, a.w);
        }
      }
    }
  }
}
#else

shared float qs[QMAX];
shared float acc[QMAX];
shared float ps[HMAX * WG];

void main() {
  uint l = gl_LocalInvocationID.x, per_t = p.Hq / HG;
  for (uint wg = dk_group(); wg < p.T * per_t * p.nsplit; wg += dk_groups()) {
    uint sp, t, h0, g, beg, lim;
    att_work(wg, sp, t, h0, g, beg, lim);
    DK_BARRIER();
    for (uint i = l; i < HG * p.D; i += WGS) qs[i] = Q_ld(DTQ, p.q_off + (t * p.Hq + h0) * p.D + i);
    for (uint i = l; i < HG * p.Dv; i += WGS) acc[i] = 0.0;
    DK_BARRIER();
    float m[HMAX], lsum[HMAX], alpha[HMAX], sc[HMAX];
    [[unroll]] for (uint h = 0u; h < HG; h++) { m[h] = -1.0 / 0.0; lsum[h] = 0.0; }
    for (uint s0 = beg; s0 < lim; s0 += WGS) {
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
      float ls = 0.0, mh = 0.0;
      /* lsum and m are uniform; pick this element's head without indexing registers */
      [[unroll]] for (uint q = 0u; q < HG; q++)
        if (q == h) { ls = lsum[q]; mh = m[q]; }
      if (PART == 0u) {
        O_st(DTQ, p.o_off + (t * p.Hq + h0) * p.Dv + i, ls > 0.0 ? acc[i] / ls : 0.0);
      } else {
        uint rec = p.o_off + (((t - p.t0) * p.Hq + h0 + h) * p.nsplit + sp) * (p.Dv + 2u);
        uint d = i - h * p.Dv;
        if (d == 0u) { O_st(DT_F32, rec, mh); O_st(DT_F32, rec + 1u, ls); }
        O_st(DT_F32, rec + 2u + d, acc[i]);
      }
    }
  }
}
#endif
