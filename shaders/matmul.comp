#version 450
/* C[M,N] = A[M,K] . B[K,N] (+ bias[N]), tiled through shared memory: BMxBN
 * tiles, BK deep, 4x4 outputs per thread, f32 accumulation. Serves dk_matmul
 * (B dense, b_cs = 1; batches broadcast through per-dim batch strides, the
 * batch index in z) and dk_linear for prompts (B(k,n) = W[n][k]: floats with
 * b_rs = 1, or GGUF blocks dequantized while a tile is loaded: variant BT;
 * BT = 6 takes every other block format, DTB, through quants.glsl). */
//!variant matmul -DBT=0
//!variant matmul_q8_0 -DBT=4
//!variant matmul_q4_0 -DBT=5
//!variant matmul_qk -DBT=6
#extension GL_GOOGLE_include_directive : require
#define WG 256
#define BM 64
#define BN 64
#define BK 32
layout(local_size_x = WG) in;
#include "common.glsl"

DK_OUT(0, O)
DK_IN(1, A)
DK_IN(2, B)
DK_IN(3, Bias)
#if BT == 6
#define DKQ_BUF B16
#include "quants.glsl"
#endif

layout(constant_id = 0) const uint DTA = 0u;
layout(constant_id = 1) const uint DTB = 0u;
layout(constant_id = 2) const uint DTO = 0u;
layout(constant_id = 3) const uint DTBIAS = 0u;
layout(constant_id = 4) const uint HAS_BIAS = 0u;
layout(constant_id = 5) const uint B_ROWS = 1u;  /* B's rows (k) are contiguous: matmul; else W rows: linear */

layout(push_constant) uniform P {
  uint M, N, K;
  uint a_off, b_off, o_off, bias_off;  /* b_off in halves for block formats */
  uint a_rs, b_rs, b_cs, ldo;
  uint nb1, nb2, z_base;
  uint abs0, abs1, abs2, bbs0, bbs1, bbs2, obs;
} p;

shared float As[BK][BM + 1];
shared float Bs[BK][BN + 1];

void main() {
  uint l = gl_LocalInvocationID.x, tm = l / 16u, tn = l % 16u;
  uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  uint z = gl_WorkGroupID.z + p.z_base;
  uint i2 = z % p.nb2, zr = z / p.nb2, i1 = zr % p.nb1, i0 = zr / p.nb1;
  uint ab = p.a_off + i0 * p.abs0 + i1 * p.abs1 + i2 * p.abs2;
  uint bb = p.b_off + i0 * p.bbs0 + i1 * p.bbs1 + i2 * p.bbs2;
  uint ob = p.o_off + z * p.obs;
  float acc[4][4];
  [[unroll]] for (uint i = 0u; i < 4u; i++)
    [[unroll]] for (uint j = 0u; j < 4u; j++) acc[i][j] = 0.0;

  for (uint k0 = 0u; k0 < p.K; k0 += BK) {
    barrier();
    /* A tile: consecutive threads walk k (A rows are contiguous) */
    for (uint e = 0u; e < (BM * BK) / WG; e++) {
      uint idx = l + e * WG, mm = idx / BK, kk = idx % BK;
      uint gm = m0 + mm, gk = k0 + kk;
      As[kk][mm] = (gm < p.M && gk < p.K) ? A_ld(DTA, ab + gm * p.a_rs + gk) : 0.0;
    }
#if BT == 0
    if (B_ROWS != 0u) {
      for (uint e = 0u; e < (BN * BK) / WG; e++) {
        uint idx = l + e * WG, kk = idx / BN, nn = idx % BN;
        uint gn = n0 + nn, gk = k0 + kk;
        Bs[kk][nn] = (gn < p.N && gk < p.K) ? B_ld(DTB, bb + gk * p.b_rs + gn) : 0.0;
      }
    } else {
      for (uint e = 0u; e < (BN * BK) / WG; e++) {
        uint idx = l + e * WG, nn = idx / BK, kk = idx % BK;
        uint gn = n0 + nn, gk = k0 + kk;
        Bs[kk][nn] = (gn < p.N && gk < p.K) ? B_ld(DTB, bb + gk * p.b_rs + gn * p.b_cs) : 0.0;
      }
    }
#else
    {
      /* four threads per w row, eight values each; K is a multiple of 32 */
      uint nn = l / 4u, part = l % 4u, gn = n0 + nn;
      float v[8];
      if (gn < p.N) {
#if BT == 4
        uint hb = bb + (gn * (p.K / 32u) + k0 / 32u) * 17u;
        float d = dk_h2f(uint(B16[hb]));
        [[unroll]] for (uint q = 0u; q < 4u; q++) {
          uint w = uint(B16[hb + 1u + part * 4u + q]);
          v[2u * q] = d * float(int(w << 24) >> 24);
          v[2u * q + 1u] = d * float(int(w << 16) >> 24);
        }
        [[unroll]] for (uint q = 0u; q < 8u; q++) Bs[part * 8u + q][nn] = v[q];
#elif BT == 6
        /* values k0 + 8 part ... of the row's block (K is a multiple of
         * the block: 32 or 256) */
        uint blk = dkq_block(DTB), k = k0 + part * 8u;
        dkq_group8(DTB, bb + (gn * (p.K / blk) + k / blk) * dkq_halves(DTB), k % blk, v);
        [[unroll]] for (uint q = 0u; q < 8u; q++) Bs[part * 8u + q][nn] = v[q];
#else
        uint hb = bb + (gn * (p.K / 32u) + k0 / 32u) * 9u;
        float d = dk_h2f(uint(B16[hb]));
        [[unroll]] for (uint q = 0u; q < 2u; q++) {
          uint w = uint(B16[hb + 1u + part * 2u + q]);
          v[2u * q] = d * float(int(w & 15u) - 8);
          v[2u * q + 1u] = d * float(int((w >> 8) & 15u) - 8);
          v[4u + 2u * q] = d * float(int((w >> 4) & 15u) - 8);
          v[4u + 2u * q + 1u] = d * float(int((w >> 12) & 15u) - 8);
        }
        /* bytes 4part..4part+3 hold values 4part.. (low) and 16+4part.. (high) */
        [[unroll]] for (uint q = 0u; q < 4u; q++) {
          Bs[part * 4u + q][nn] = v[q];
          Bs[16u + part * 4u + q][nn] = v[4u + q];
        }
#endif
      } else {
        [[unroll]] for (uint q = 0u; q < 8u; q++) Bs[part * 8u + q][nn] = 0.0;
      }
    }
#endif
    barrier();
    for (uint kk = 0u; kk < BK; kk++) {
      float a[4], b[4];
      [[unroll]] for (uint i = 0u; i < 4u; i++) a[i] = As[kk][tm + 16u * i];
      [[unroll]] for (uint j = 0u; j < 4u; j++) b[j] = Bs[kk][tn + 16u * j];
      [[unroll]] for (uint i = 0u; i < 4u; i++)
        [[unroll]] for (uint j = 0u; j < 4u; j++) acc[i][j] += a[i] * b[j];
    }
  }
  [[unroll]] for (uint i = 0u; i < 4u; i++) {
    uint gm = m0 + tm + 16u * i;
    if (gm >= p.M) continue;
    [[unroll]] for (uint j = 0u; j < 4u; j++) {
      uint gn = n0 + tn + 16u * j;
      if (gn >= p.N) continue;
      float v = acc[i][j];
      if (HAS_BIAS != 0u) v += Bias_ld(DTBIAS, p.bias_off + gn);
      O_st(DTO, ob + gm * p.ldo + gn, v);
    }
  }
}
