#version 450
/* linear for decode on GPUs with float weights, the design of CUDA's
 * dk_gemv2 (kernels/linear.cu): a workgroup of WG invocations owns R rows
 * of w and all of K, in pieces of 8 values. Invocation i takes pieces i,
 * i + WG, ... of each row, issues the 16-byte loads (f32: two) of U pieces
 * of each row before it uses the first, reads x's matching 8 f32 values
 * straight from the buffer (x is at most MMAX rows: cache-resident), and
 * keeps acc[m][r] in registers; then a subgroup sum and a sum over the
 * subgroups in shared memory. matvec.comp stages x through shared memory
 * between barriers and reads w 2 or 4 bytes per invocation: on NVIDIA's
 * driver its f16 decode reached 291 GB/s of an H100's 3,000.
 * The host takes this path on GPUs (subgroups of 8 or more) for f32 x,
 * K % 8 == 0, and w, x rows that start on 16 bytes (offsets pc.w_off,
 * pc.x_off in 16-byte units); on an H100 through NVIDIA's driver it reads
 * f16 4096x4096 at 3199 GB/s (matvec.comp: 312). f32 accumulation.
 * PRO folds the op before the product into x's loads (dk_rmsnorm_linear,
 * dk_swiglu_linear: one dispatch instead of two, no scratch row): 1: x * nw
 * (binding 4, f32) is dotted, the sum of x^2 gathered from the same loads,
 * and each row's sum scaled by 1 / sqrt(mean + eps) at the end; 2: x =
 * silu(gate) * up, the up rows in binding 4 laid out as x.
 * q8_0 and q4_0 (WT 4, 5; DEVKIT_VULKAN_VECQ=1 until timed on a GPU): w is
 * read as 32-bit words (rows of whole block pairs, K % 64 == 0, so every
 * row starts on 4 bytes; pc.w_off in 4-byte units). A piece is still 8
 * values, a quarter of a block: its 8 bytes (q8_0) or the 8 bytes whose
 * low or high nibbles hold it (q4_0) at a 2-byte offset in even blocks,
 * and the block's f16 scale; the 8 products are summed, then scaled once. */
//!variant matvec_vec_f32 -DWT=0 -DDK_SUBGROUPS
//!variant matvec_vec_f16 -DWT=1 -DDK_SUBGROUPS
//!variant matvec_vec_bf16 -DWT=2 -DDK_SUBGROUPS
//!variant matvec_vec_q8_0 -DWT=4 -DDK_SUBGROUPS
//!variant matvec_vec_q4_0 -DWT=5 -DDK_SUBGROUPS
#extension GL_GOOGLE_include_directive : require
#define WG 128
#define R 2
#define U 4
#define MMAX 8
layout(local_size_x = WG) in;
#include "common.glsl"

DK_OUT(0, O)
layout(set = 0, binding = 1) readonly buffer X4_w { vec4 X4[]; };
#if WT >= 4
layout(set = 0, binding = 2) readonly buffer W1_w { uint W1[]; };
#define BLK (WT == 4 ? 34u : 18u)   /* bytes a block */
#else
layout(set = 0, binding = 2) readonly buffer W4_w { uvec4 W4[]; };
#endif
DK_IN(3, Bias)

layout(constant_id = 1) const uint DTO = 0u;
layout(constant_id = 2) const uint DTB = 0u;
layout(constant_id = 3) const uint HAS_BIAS = 0u;
layout(constant_id = 4) const uint M = 1u;    /* rows of x, 1..MMAX */
layout(constant_id = 9) const uint PRO = 0u;  /* 0: x as it is; 1: rmsnorm; 2: swiglu */
layout(constant_id = 10) const uint EPS_BITS = 0u;   /* rmsnorm's eps, as float bits */
layout(set = 0, binding = 4) readonly buffer A4_w { vec4 A4[]; };

layout(push_constant) uniform P {
  uint N, K, KC;                    /* KC unused here (matvec.comp's layout) */
  uint x_off, w_off, o_off, b_off;  /* x_off, w_off in 16-byte units */
  uint ldx, ldo;                    /* ldx in 16-byte units */
  uint a_off;                       /* binding 4's first 16-byte unit (PRO) */
} p;

#if WT == 0
#define PW 2u   /* 16-byte words per piece */
#else
#define PW 1u   /* (the block formats: one uvec4 of 32-bit words, dk_qload) */
#endif

shared float red[MMAX * (R + 1)][WG / 8];   /* one slot per subgroup (subgroups of 8 or more); rows MMAX*R..: PRO 1's sums of squares */

void dk_cvt(uvec4 a, uvec4 b, out float v[8]) {
#if WT == 0
  v[0] = uintBitsToFloat(a.x); v[1] = uintBitsToFloat(a.y); v[2] = uintBitsToFloat(a.z); v[3] = uintBitsToFloat(a.w);
  v[4] = uintBitsToFloat(b.x); v[5] = uintBitsToFloat(b.y); v[6] = uintBitsToFloat(b.z); v[7] = uintBitsToFloat(b.w);
#elif WT == 1
  vec2 f;
  f = unpackHalf2x16(a.x); v[0] = f.x; v[1] = f.y;
  f = unpackHalf2x16(a.y); v[2] = f.x; v[3] = f.y;
  f = unpackHalf2x16(a.z); v[4] = f.x; v[5] = f.y;
  f = unpackHalf2x16(a.w); v[6] = f.x; v[7] = f.y;
#else
  v[0] = uintBitsToFloat(a.x << 16); v[1] = uintBitsToFloat(a.x & 0xffff0000u);
  v[2] = uintBitsToFloat(a.y << 16); v[3] = uintBitsToFloat(a.y & 0xffff0000u);
  v[4] = uintBitsToFloat(a.z << 16); v[5] = uintBitsToFloat(a.z & 0xffff0000u);
  v[6] = uintBitsToFloat(a.w << 16); v[7] = uintBitsToFloat(a.w & 0xffff0000u);
#endif
}

#if WT >= 4
/* piece pc of the row whose first word is base: the three words that hold
 * its 8 bytes (the third only where they start 2 bytes into a word) and
 * the word holding the block's scale */
uvec4 dk_qload(uint base, uint pc) {
  uint bb = (pc >> 2u) * BLK, a = bb + 2u + 8u * (WT == 4 ? (pc & 3u) : (pc & 1u)), i = base + (a >> 2u);
  return uvec4(W1[i], W1[i + 1u], (a & 2u) != 0u ? W1[i + 2u] : 0u, W1[base + (bb >> 2u)]);
}

/* its 8 values before the scale, which it returns */
float dk_qcvt(uvec4 q, uint pc, out float v[8]) {
  uint bb = (pc >> 2u) * BLK;
  bool odd = ((bb + 2u) & 2u) != 0u;
  uint lo = odd ? (q.x >> 16u) | (q.y << 16u) : q.x, hi = odd ? (q.y >> 16u) | (q.z << 16u) : q.y;
#if WT == 4
  [[unroll]] for (int i = 0; i < 4; i++) {
    v[i] = float(bitfieldExtract(int(lo), 8 * i, 8));
    v[i + 4] = float(bitfieldExtract(int(hi), 8 * i, 8));
  }
#else
  uint sh = (pc & 2u) != 0u ? 4u : 0u;   /* values 16..31 of a block: the high nibbles */
  [[unroll]] for (int i = 0; i < 4; i++) {
    v[i] = float(int(bitfieldExtract(lo >> sh, 8 * i, 4)) - 8);
    v[i + 4] = float(int(bitfieldExtract(hi >> sh, 8 * i, 4)) - 8);
  }
#endif
  return unpackHalf2x16((bb & 2u) != 0u ? q.w >> 16u : q.w).x;
}
#endif

void main() {
#if WT >= 4
  uint l = gl_LocalInvocationID.x, npc = p.K / 8u, row_words = p.K / 32u * BLK / 4u;
#else
  uint l = gl_LocalInvocationID.x, npc = p.K / 8u, row_words = npc * PW;
#endif
  for (uint n0 = dk_group() * R; n0 < p.N; n0 += dk_groups() * R) {
    uint wr[R];
    float acc[MMAX][R], ss[MMAX];
    [[unroll]] for (uint r = 0u; r < R; r++) {
      wr[r] = p.w_off + min(n0 + r, p.N - 1u) * row_words;   /* a row past N repeats the last, unstored */
      [[unroll]] for (uint m = 0u; m < MMAX; m++) acc[m][r] = 0.0;
    }
    [[unroll]] for (uint m = 0u; m < MMAX; m++) ss[m] = 0.0;
    for (uint pc0 = l; pc0 < npc; pc0 += WG * U) {
      uvec4 raw[U][R][PW];
      [[unroll]] for (uint u = 0u; u < U; u++) {
        uint pc = pc0 + u * WG;
        if (pc < npc)
          [[unroll]] for (uint r = 0u; r < R; r++)
#if WT >= 4
            raw[u][r][0] = dk_qload(wr[r], pc);
#else
            [[unroll]] for (uint h = 0u; h < PW; h++) raw[u][r][h] = W4[wr[r] + pc * PW + h];
#endif
      }
      [[unroll]] for (uint u = 0u; u < U; u++) {
        uint pc = pc0 + u * WG;
        if (pc >= npc) break;
        float wv[R][8], sc[R];
#if WT >= 4
        [[unroll]] for (uint r = 0u; r < R; r++) sc[r] = dk_qcvt(raw[u][r][0], pc, wv[r]);
#else
        [[unroll]] for (uint r = 0u; r < R; r++) dk_cvt(raw[u][r][0], raw[u][r][PW - 1u], wv[r]);
#endif
        [[unroll]] for (uint m = 0u; m < MMAX; m++) {
          if (m >= M) break;
          vec4 x0 = X4[p.x_off + m * p.ldx + pc * 2u], x1 = X4[p.x_off + m * p.ldx + pc * 2u + 1u];
          if (PRO == 1u) {
            ss[m] += dot(x0, x0) + dot(x1, x1);
            x0 *= A4[p.a_off + pc * 2u];
            x1 *= A4[p.a_off + pc * 2u + 1u];
          } else if (PRO == 2u) {
            x0 = x0 / (1.0 + exp(-x0)) * A4[p.a_off + m * p.ldx + pc * 2u];
            x1 = x1 / (1.0 + exp(-x1)) * A4[p.a_off + m * p.ldx + pc * 2u + 1u];
          }
          [[unroll]] for (uint r = 0u; r < R; r++) {
            float a = WT >= 4 ? 0.0 : acc[m][r];
            a = fma(wv[r][0], x0.x, a); a = fma(wv[r][1], x0.y, a); a = fma(wv[r][2], x0.z, a); a = fma(wv[r][3], x0.w, a);
            a = fma(wv[r][4], x1.x, a); a = fma(wv[r][5], x1.y, a); a = fma(wv[r][6], x1.z, a); a = fma(wv[r][7], x1.w, a);
            acc[m][r] = WT >= 4 ? fma(sc[r], a, acc[m][r]) : a;
          }
        }
      }
    }
    uint slot = gl_SubgroupID, nslots = gl_NumSubgroups;
    barrier();   /* the previous rows' reads of red are done */
    [[unroll]] for (uint m = 0u; m < MMAX; m++) {
      if (m >= M) break;
      [[unroll]] for (uint r = 0u; r < R; r++) {
        float v = subgroupAdd(acc[m][r]);
        if (subgroupElect()) red[m * R + r][slot] = v;
      }
      if (PRO == 1u) {
        float v = subgroupAdd(ss[m]);
        if (subgroupElect()) red[MMAX * R + m][slot] = v;
      }
    }
    barrier();
    if (l < M * R) {
      uint m = l / R, r = l % R, n = n0 + r;
      if (n < p.N) {
        float v = 0.0;
        for (uint i = 0u; i < nslots; i++) v += red[l][i];
        if (PRO == 1u) {
          float q = 0.0;
          for (uint i = 0u; i < nslots; i++) q += red[MMAX * R + m][i];
          v *= 1.0 / sqrt(q / float(p.K) + uintBitsToFloat(EPS_BITS));
        }
        if (HAS_BIAS != 0u) v += Bias_ld(DTB, p.b_off + n);
        O_st(DTO, p.o_off + m * p.ldo + n, v);
      }
    }
  }
}
