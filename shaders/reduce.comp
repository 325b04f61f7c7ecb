#version 450
/* Reductions over any set of axes (sum, mean, max, min), argmax/argmin on
 * one axis, and softmax / log-softmax along one axis: one workgroup per
 * output element (a "line" of x), threads striding over the line. The host
 * (dk__red_layout in devkit.h) describes x as up to four kept dims and up to
 * four reduced dims, each with x's strides, padded in front with size 1;
 * output element o is row-major over the kept dims and reads x at
 * kept_off(o) + red_off(r), r in [0, nred). Softmax writes out (x's shape,
 * contiguous like x) at the same offsets.
 * Semantics are the CPU backend's (backends/cpu.h, dk__cpu_reduce_task):
 * max/min give NaN when the line holds one; argmax/argmin count NaN as -inf
 * after negating for argmin, and take the first (LAST=0) or last index of
 * the largest key; softmax of a line that is all -inf is 0 (log: -inf). */
//!variant reduce -DDK_SUBGROUPS
//!variant reduce_nosg
#extension GL_GOOGLE_include_directive : require
#define WG 256
#define DK_REDUCE
layout(local_size_x_id = 7) in;   /* WG at most */
#define WGS gl_WorkGroupSize.x
#include "common.glsl"

DK_OUT(0, O)
DK_IN(1, X)
DK_OUT(2, I)   /* top-k's indices (i32); a dummy binding for the others */

/* 0 sum, 1 mean, 2 max, 3 min, 4 argmax, 5 argmin, 6 softmax, 7 log-softmax,
 * 8 cumsum, 9 top-k */
layout(constant_id = 0) const uint OP = 0u;
layout(constant_id = 1) const uint DT = 0u;
layout(constant_id = 2) const uint LAST = 0u;
layout(constant_id = 3) const uint FLAGS = 0u;   /* cumsum: 1 exclusive, 2 reverse; top-k: 4 largest */

layout(push_constant) uniform P {
  uint nout, nred, o_off, x_off;
  uint ks0, ks1, ks2, ks3;   /* kept sizes */
  uint kx0, kx1, kx2, kx3;   /* their strides in x */
  uint rs0, rs1, rs2, rs3;   /* reduced sizes */
  uint rx0, rx1, rx2, rx3;
  uint k, i_off;             /* top-k: k, and the indices' element offset */
} p;

uint kept_off(uint o) {
  uint c3 = o % p.ks3; o /= p.ks3;
  uint c2 = o % p.ks2; o /= p.ks2;
  uint c1 = o % p.ks1; o /= p.ks1;
  return o * p.kx0 + c1 * p.kx1 + c2 * p.kx2 + c3 * p.kx3;
}
uint red_off(uint r) {
  uint c3 = r % p.rs3; r /= p.rs3;
  uint c2 = r % p.rs2; r /= p.rs2;
  uint c1 = r % p.rs1; r /= p.rs1;
  return r * p.rx0 + c1 * p.rx1 + c2 * p.rx2 + c3 * p.rx3;
}

const float NEG_INF = -1.0 / 0.0;
const uint NONE = 0xffffffffu;

void main() {
  uint l = gl_LocalInvocationID.x;
  for (uint row = dk_group(); row < p.nout; row += dk_groups()) {
    uint base = p.x_off + kept_off(row), ob = p.o_off + kept_off(row);
    if (OP <= 1u) {
      float s = 0.0;
      for (uint j = l; j < p.nred; j += WGS) s += X_ld(DT, base + red_off(j));
      s = dk_sum(s);
      if (l == 0u) O_st(DT, p.o_off + row, OP == 1u ? s / float(p.nred) : s);
    } else if (OP <= 3u) {
      /* max over the non-NaN values (min as -max of -x), and whether any is NaN */
      float m = NEG_INF;
      uint clean = 1u;
      for (uint j = l; j < p.nred; j += WGS) {
        float v = X_ld(DT, base + red_off(j));
        if (isnan(v)) clean = 0u;
        else m = max(m, OP == 2u ? v : -v);
      }
      m = dk_max(m);
      clean = dk_umin(clean);
      if (l == 0u) O_st(DT, p.o_off + row, clean == 0u ? uintBitsToFloat(0x7fc00000u) : (OP == 2u ? m : -m));
    } else if (OP <= 5u) {
      float best = NEG_INF;
      uint bi = NONE;
      for (uint j = l; j < p.nred; j += WGS) {
        float v = X_ld(DT, base + red_off(j));
        float key = isnan(v) ? NEG_INF : (OP == 5u ? -v : v);
        if (bi == NONE || key > best || (LAST != 0u && key == best)) { best = key; bi = j; }
      }
      float m = dk_max(best);
      /* the smallest (first) or largest (last) index holding the best key */
      uint mine = (bi != NONE && best == m) ? (LAST != 0u ? NONE - 1u - bi : bi) : NONE;
      uint idx = dk_umin(mine);
      if (l == 0u) O32[p.o_off + row] = LAST != 0u ? NONE - 1u - idx : idx;
    } else if (OP == 8u) {
      /* one thread walks the line in order: simple, and exact in its order */
      if (l == 0u) {
        float acc = 0.0;
        for (uint j = 0u; j < p.nred; j++) {
          uint r = red_off((FLAGS & 2u) != 0u ? p.nred - 1u - j : j);
          float v = X_ld(DT, base + r);
          if ((FLAGS & 1u) == 0u) acc += v;
          O_st(DT, ob + r, acc);
          if ((FLAGS & 1u) != 0u) acc += v;
        }
      }
    } else if (OP == 9u) {
      /* k rounds; round t takes the best element ranked after round t-1's
       * (rank: key descending, then index ascending, a total order) */
      float pk = 0.0;
      uint pi = NONE;
      for (uint t = 0u; t < p.k; t++) {
        float best = NEG_INF;
        uint bi = NONE;
        for (uint j = l; j < p.nred; j += WGS) {
          float v = X_ld(DT, base + red_off(j));
          float key = isnan(v) ? NEG_INF : ((FLAGS & 4u) != 0u ? v : -v);
          bool after = pi == NONE || key < pk || (key == pk && j > pi);
          if (after && (bi == NONE || key > best)) { best = key; bi = j; }
        }
        float m = dk_max(best);
        uint idx = dk_umin((bi != NONE && best == m) ? bi : NONE);
        if (l == 0u) {
          O_st(DT, p.o_off + row * p.k + t, X_ld(DT, base + red_off(idx)));
          I32[p.i_off + row * p.k + t] = idx;
        }
        pk = m;
        pi = idx;
      }
    } else {
      float m = NEG_INF;
      for (uint j = l; j < p.nred; j += WGS) {
        float v = X_ld(DT, base + red_off(j));
        m = v > m ? v : m;
      }
      m = dk_max(m);
      if (m == NEG_INF) m = 0.0;   /* all -inf: z is 0 */
      float z = 0.0;
      for (uint j = l; j < p.nred; j += WGS) z += exp(X_ld(DT, base + red_off(j)) - m);
      z = dk_sum(z);
      float lz = log(z);
      for (uint j = l; j < p.nred; j += WGS) {
        uint r = red_off(j);
        float v = X_ld(DT, base + r), y;
        if (OP == 7u) y = z == 0.0 ? NEG_INF : (v - m) - lz;
        else y = z == 0.0 ? 0.0 : exp(v - m) / z;
        O_st(DT, ob + r, y);
      }
    }
  }
}
