#version 450
/* dk_sample's documented rule, one workgroup per row (temperature > 0; the
 * host runs argmax otherwise):
 *   kth: the k-th largest logit, found by bisection over the bits of an
 *        order-preserving integer key (exact, ties kept);
 *   p_j = exp(l_j/temp - m) / z over the kept logits;
 *   thr: the largest probability t whose set {p >= t} holds >= top_p of the
 *        mass, by the same bisection;
 *   the token: the first index whose running sum of kept p exceeds u*total,
 *        u = splitmix64(seed, row) as dk_sample_uniform computes it.
 * NaN logits count as -inf; when m is not finite the row's result is the
 * first index at m = +inf, or 0 (devkit.h's degenerate rule).
 * The running sum is a prefix over contiguous chunks, one per thread. */
//!variant sample -DDK_SUBGROUPS
//!variant sample_nosg
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
  uint rows, cols, o_off, x_off;
  int top_k;
  float temp, top_p;
  uint seed_lo, seed_hi;
  uint row_base;   /* rows before this dispatch's first (the draw counts from the tensor's) */
} p;

shared float sh_part[WG];
shared float sh_total;

uint fkey(float f) {
  uint u = floatBitsToUint(f);
  return (u & 0x80000000u) != 0u ? ~u : (u | 0x80000000u);
}
float kfloat(uint k) { return uintBitsToFloat((k & 0x80000000u) != 0u ? (k & 0x7fffffffu) : ~k); }

/* 64-bit arithmetic on (lo, hi) pairs: no shaderInt64 needed */
uvec2 add64(uvec2 a, uvec2 b) {
  uint c;
  uint lo = uaddCarry(a.x, b.x, c);
  return uvec2(lo, a.y + b.y + c);
}
uvec2 mul64(uvec2 a, uvec2 b) {
  uint hi, lo;
  umulExtended(a.x, b.x, hi, lo);
  return uvec2(lo, hi + a.x * b.y + a.y * b.x);
}
uvec2 xorshr(uvec2 a, uint s) { return a ^ uvec2((a.x >> s) | (a.y << (32u - s)), a.y >> s); }

float uniform01(uint row) {
  uvec2 z = add64(uvec2(p.seed_lo, p.seed_hi), mul64(uvec2(0x7F4A7C15u, 0x9E3779B9u), uvec2(row + 1u, row == 0xffffffffu ? 1u : 0u)));
  z = mul64(xorshr(z, 30u), uvec2(0x1CE4E5B9u, 0xBF58476Du));
  z = mul64(xorshr(z, 27u), uvec2(0x133111EBu, 0x94D049BBu));
  z = xorshr(z, 31u);
  return float(z.y >> 8) * (1.0 / 16777216.0);
}

uint xb;
float kth, m, z, thr;

/* a logit; NaN is never kept, as -inf */
float lg(uint j) {
  float v = X_ld(DT, xb + j);
  return isnan(v) ? -1.0 / 0.0 : v;
}

float prob(uint j) {
  float l = lg(j);
  return l >= kth ? exp(l / p.temp - m) / z : 0.0;
}
float kept(uint j) {
  float q = prob(j);
  return q > 0.0 && q >= thr ? q : 0.0;
}

void main() {
  uint l = gl_LocalInvocationID.x, n = p.cols;
  for (uint row = dk_group(); row < p.rows; row += dk_groups()) {
    xb = p.x_off + row * n;
    kth = -1.0 / 0.0;
    if (p.top_k > 0 && uint(p.top_k) < n) {
      uint t = 0u;
      for (int bit = 31; bit >= 0; bit--) {
        uint cand = t | (1u << uint(bit));
        float c = 0.0;
        for (uint j = l; j < n; j += WGS) c += fkey(lg(j)) >= cand ? 1.0 : 0.0;
        if (dk_sum(c) >= float(p.top_k)) t = cand;
      }
      kth = kfloat(t);
    }
    float mm = -1.0 / 0.0;
    for (uint j = l; j < n; j += WGS) {
      float v = lg(j);
      if (v >= kth) mm = max(mm, v / p.temp);
    }
    m = dk_max(mm);
    if (isinf(m)) {
      /* nothing finite to weigh (devkit.h, dk_sample): 0 when every logit is
       * -inf or NaN, else the first whose logit / temperature is +inf. m is
       * the group's reduction, so the whole group takes this branch. */
      uint first = 0xffffffffu;
      if (m > 0.0)
        for (uint j = l; j < n; j += WGS) {
          float v = lg(j);
          if (v >= kth && v / p.temp == m) { first = j; break; }
        }
      first = dk_umin(first);
      if (l == 0u) O32[p.o_off + row] = first == 0xffffffffu ? 0u : first;
      continue;
    }
    z = 1.0;
    thr = 0.0;
    float zz = 0.0;
    for (uint j = l; j < n; j += WGS) zz += prob(j);
    z = dk_sum(zz);
    if (p.top_p < 1.0) {
      uint t = 0u;
      for (int bit = 31; bit >= 0; bit--) {
        uint cand = t | (1u << uint(bit));
        float s = 0.0;
        for (uint j = l; j < n; j += WGS) {
          float q = prob(j);
          if (q > 0.0 && fkey(q) >= cand) s += q;
        }
        if (dk_sum(s) >= p.top_p) t = cand;
      }
      thr = t >= 0x80000000u ? kfloat(t) : 0.0;
    }
    /* prefix over contiguous chunks */
    uint chunk = (n + WGS - 1u) / WGS, j0 = min(n, l * chunk), j1 = min(n, j0 + chunk);
    float part = 0.0;
    uint last = 0xffffffffu;
    for (uint j = j0; j < j1; j++) {
      float q = kept(j);
      part += q;
      if (q > 0.0) last = j;
    }
    DK_BARRIER();
    sh_part[l] = part;
    DK_BARRIER();
    if (l == 0u) {
      float acc = 0.0;
      for (uint t = 0u; t < WGS; t++) {
        float v = sh_part[t];
        sh_part[t] = acc;
        acc += v;
      }
      sh_total = acc;
    }
    DK_BARRIER();
    float target = uniform01(p.row_base + row) * sh_total, excl = sh_part[l];
    uint pick = 0xffffffffu;
    if (excl <= target && excl + part > target) {
      float acc = excl;
      for (uint j = j0; j < j1; j++) {
        float q = kept(j);
        if (q <= 0.0) continue;
        acc += q;
        if (acc > target) { pick = j; break; }
      }
      if (pick == 0xffffffffu) pick = last;
    }
    pick = dk_umin(pick);
    /* rounding left nothing above the target: the last kept token */
    uint lastinv = dk_umin(last == 0xffffffffu ? 0xffffffffu : 0xfffffffeu - last);
    if (l == 0u) {
      uint r = pick != 0xffffffffu ? pick : (lastinv != 0xffffffffu ? 0xfffffffeu - lastinv : 0u);
      O32[p.o_off + row] = r;
    }
  }
}
