#version 450
/* linear for prompts and batches (more than 8 rows of x) on CPU-type
 * devices (lavapipe). llvmpipe runs a workgroup on one CPU thread, eight
 * invocations per SIMD vector, and pays per lane for every buffer and
 * shared-memory access while arithmetic is one vector instruction for all
 * eight; barriers switch between SIMD slices. So the work per load decides
 * the speed: each invocation keeps a TM x TN tile of outputs in registers
 * (TM rows of x against TN rows of w), decodes its w values once per group
 * of eight and uses them for all TM rows, and nothing goes through shared
 * memory. A workgroup's lanes share the same TM rows of x (one address for
 * every lane: cache hits) and walk neighbouring rows of w, TN each, WG*TN
 * rows per workgroup; grid y walks the blocks of TM rows of x. matvec_rows
 * (up to 8 rows of x, one row of w per lane) is this with TN = 1 and reads
 * x once per w value, which is what made prompts slow. Block formats decode
 * through quants.glsl (q8_0/q4_0 here), value for value as the row kernel
 * does. Accumulation is f32. The weight dtype is a specialization constant,
 * not a compile-time variant: one module for all of them keeps the embedded
 * SPIR-V small (the tile is unrolled). gemm_rows_t is the same reading w and
 * x through texel views (texel.glsl), the default on CPU devices. */
//!variant gemm_rows
//!variant gemm_rows_t -DTEXW
#extension GL_GOOGLE_include_directive : require
#define WG 32   /* backends/vulkan.h's DK_VK_GEMM_WG */
#define TM 16   /* DK_VK_GEMM_TM */
#define TN 8    /* DK_VK_GEMM_TN */
layout(local_size_x = WG) in;
#include "common.glsl"

DK_OUT(0, O)
DK_IN(1, X)
DK_IN(2, W)
DK_IN(3, Bias)
/* x and w again, in 16-byte units: four f32 or eight f16/bf16 values */
layout(set = 0, binding = 1) readonly buffer X4_w { uvec4 X4[]; };
layout(set = 0, binding = 2) readonly buffer W4_w { uvec4 W4[]; };

layout(constant_id = 0) const uint DTX = 0u;
layout(constant_id = 1) const uint DTO = 0u;
layout(constant_id = 2) const uint DTB = 0u;
layout(constant_id = 3) const uint HAS_BIAS = 0u;
layout(constant_id = 4) const uint WT = 0u;      /* w's dk_dtype */
/* bit 0: every row of w starts on a 16-byte boundary; bit 1: so do x's */
layout(constant_id = 5) const uint WIDE = 0u;

layout(push_constant) uniform P {
  uint N, K, M;
  uint x_off, w_off, o_off, b_off;  /* w_off in halves for block formats */
  uint ldx, ldo;
} p;
#include "texel.glsl"

float acc[TM][TN];

/* values k .. k+7 of w's row `row` (k a multiple of 8) */
void wgroup8(uint row, uint k, out float v[8]) {
  if (WT >= DT_Q4_1) {
    uint bs = dkq_block(WT), hb = p.w_off + (row * (p.K / bs) + k / bs) * dkq_halves(WT);
    dkq_group8(WT, hb, k % bs, v);
  } else if (WT == DT_Q8_0) {
    /* q8_0: 17 halves, the scale then 32 signed bytes */
    uint hb = p.w_off + (row * (p.K / 32u) + k / 32u) * 17u;
    uvec2 q = dkq_8bytes(hb, 2u + (k & 31u));
    float d = dkq_half(hb, 0u);
    [[unroll]] for (uint i = 0u; i < 8u; i++) v[i] = d * float(int(dkq_lane(q, i) << 24) >> 24);
  } else if (WT == DT_Q4_0) {
    /* q4_0: 9 halves, the scale then 16 bytes: values 0..15 in the low
     * nibbles, 16..31 in the high ones */
    uint hb = p.w_off + (row * (p.K / 32u) + k / 32u) * 9u, sh = (k & 16u) != 0u ? 4u : 0u;
    uvec2 q = dkq_8bytes(hb, 2u + (k & 15u));
    float d = dkq_half(hb, 0u);
    [[unroll]] for (uint i = 0u; i < 8u; i++) v[i] = d * float(int((dkq_lane(q, i) >> sh) & 15u) - 8);
  } else {
    uint wb = p.w_off + row * p.K + k;
    if ((WIDE & 1u) != 0u && WT == DT_F32) {
      uvec4 a = WV(wb / 4u), c = WV(wb / 4u + 1u);
      v[0] = uintBitsToFloat(a.x); v[1] = uintBitsToFloat(a.y); v[2] = uintBitsToFloat(a.z); v[3] = uintBitsToFloat(a.w);
      v[4] = uintBitsToFloat(c.x); v[5] = uintBitsToFloat(c.y); v[6] = uintBitsToFloat(c.z); v[7] = uintBitsToFloat(c.w);
    } else if ((WIDE & 1u) != 0u) {
      uvec4 a = WV(wb / 8u);
      v[0] = dk_cvt16(WT, a.x & 0xffffu); v[1] = dk_cvt16(WT, a.x >> 16); v[2] = dk_cvt16(WT, a.y & 0xffffu);
      v[3] = dk_cvt16(WT, a.y >> 16); v[4] = dk_cvt16(WT, a.z & 0xffffu); v[5] = dk_cvt16(WT, a.z >> 16);
      v[6] = dk_cvt16(WT, a.w & 0xffffu); v[7] = dk_cvt16(WT, a.w >> 16);
    } else {
      [[unroll]] for (uint i = 0u; i < 8u; i++) v[i] = W_ld(WT, wb + i);
    }
  }
}

/* values k .. k+7 of x's row r */
void xgroup8(uint r, uint k, out float x[8]) {
  uint xb = p.x_off + r * p.ldx + k;
  if ((WIDE & 2u) != 0u && DTX == DT_F32) {
    uvec4 a = XV(xb / 4u), c = XV(xb / 4u + 1u);
    x[0] = uintBitsToFloat(a.x); x[1] = uintBitsToFloat(a.y); x[2] = uintBitsToFloat(a.z); x[3] = uintBitsToFloat(a.w);
    x[4] = uintBitsToFloat(c.x); x[5] = uintBitsToFloat(c.y); x[6] = uintBitsToFloat(c.z); x[7] = uintBitsToFloat(c.w);
  } else if ((WIDE & 2u) != 0u) {
    uvec4 a = XV(xb / 8u);
    x[0] = dk_cvt16(DTX, a.x & 0xffffu); x[1] = dk_cvt16(DTX, a.x >> 16); x[2] = dk_cvt16(DTX, a.y & 0xffffu);
    x[3] = dk_cvt16(DTX, a.y >> 16); x[4] = dk_cvt16(DTX, a.z & 0xffffu); x[5] = dk_cvt16(DTX, a.z >> 16);
    x[6] = dk_cvt16(DTX, a.w & 0xffffu); x[7] = dk_cvt16(DTX, a.w >> 16);
  } else {
    [[unroll]] for (uint i = 0u; i < 8u; i++) x[i] = X_ld(DTX, xb + i);
  }
}

void main() {
  uint n0 = (gl_WorkGroupID.x * WG + gl_LocalInvocationID.x) * TN, m0 = gl_WorkGroupID.y * TM;
  /* rows past N or M repeat the last one and store nothing */
  uint rows[TN], xr[TM];
  [[unroll]] for (uint j = 0u; j < TN; j++) rows[j] = min(n0 + j, p.N - 1u);
  [[unroll]] for (uint m = 0u; m < TM; m++) xr[m] = min(m0 + m, p.M - 1u);
  [[unroll]] for (uint m = 0u; m < TM; m++)
    [[unroll]] for (uint j = 0u; j < TN; j++) acc[m][j] = 0.0;
  uint k = 0u;
  for (; k + 8u <= p.K; k += 8u) {
    float w[TN][8];
    [[unroll]] for (uint j = 0u; j < TN; j++) wgroup8(rows[j], k, w[j]);
    [[unroll]] for (uint m = 0u; m < TM; m++) {
      float x[8];
      xgroup8(xr[m], k, x);
      [[unroll]] for (uint j = 0u; j < TN; j++)
        acc[m][j] += w[j][0] * x[0] + w[j][1] * x[1] + w[j][2] * x[2] + w[j][3] * x[3] + w[j][4] * x[4] +
                     w[j][5] * x[5] + w[j][6] * x[6] + w[j][7] * x[7];
    }
  }
  /* float weights: K need not be a multiple of 8 (blocks: it is) */
  for (; WT < DT_Q8_0 && k < p.K; k++) {
    float w[TN];
    [[unroll]] for (uint j = 0u; j < TN; j++) w[j] = W_ld(WT, p.w_off + rows[j] * p.K + k);
    [[unroll]] for (uint m = 0u; m < TM; m++) {
      float x = X_ld(DTX, p.x_off + xr[m] * p.ldx + k);
      [[unroll]] for (uint j = 0u; j < TN; j++) acc[m][j] += w[j] * x;
    }
  }
  [[unroll]] for (uint j = 0u; j < TN; j++) {
    uint n = n0 + j;
    if (n >= p.N) break;
    float b = HAS_BIAS != 0u ? Bias_ld(DTB, p.b_off + n) : 0.0;
    [[unroll]] for (uint m = 0u; m < TM; m++) {
      if (m0 + m >= p.M) break;
      O_st(DTO, p.o_off + (m0 + m) * p.ldo + n, acc[m][j] + b);
    }
  }
}
