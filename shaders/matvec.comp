#version 450
/* linear for decode: out[m, n] = x[m, :] . w[n, :] (+ bias[n]) for M <= 8
 * rows of x. A workgroup owns R rows of w and streams them once; x is staged
 * in shared memory as f32 in chunks of KC columns, so the inner loop reads
 * f32 x and dequantizes w in registers (compile-time variant WT). Partial
 * sums are reduced per subgroup (any subgroup size) and then across
 * subgroups; accumulation is f32 throughout.
 * DK_DOT (opt-in, DEVKIT_VULKAN_INT8_DOT=1): x is quantized to int8 per
 * block of 32 as it is staged, as GGUF's q8_0 does, and each block of w
 * meets it in 4x8-bit integer dot products (SPV_KHR_integer_dot_product).
 * Faster where the GPU has them; x's rounding costs about 0.4% per value. */
//!variant matvec_f32 -DWT=0 -DDK_SUBGROUPS
//!variant matvec_f16 -DWT=1 -DDK_SUBGROUPS
//!variant matvec_bf16 -DWT=2 -DDK_SUBGROUPS
//!variant matvec_q8_0 -DWT=4 -DDK_SUBGROUPS
//!variant matvec_q4_0 -DWT=5 -DDK_SUBGROUPS
//!variant matvec_q8_0_dot -DWT=4 -DDK_SUBGROUPS -DDK_DOT
//!variant matvec_q4_0_dot -DWT=5 -DDK_SUBGROUPS -DDK_DOT
//!variant matvec_f32_nosg -DWT=0
//!variant matvec_f16_nosg -DWT=1
//!variant matvec_bf16_nosg -DWT=2
//!variant matvec_q8_0_nosg -DWT=4
//!variant matvec_q4_0_nosg -DWT=5
#extension GL_GOOGLE_include_directive : require
#define WG 64
#define R 4
#define MMAX 8
#define XS 4096
layout(local_size_x = WG) in;
#include "common.glsl"
#ifdef DK_DOT
#extension GL_EXT_spirv_intrinsics : require
/* OpSDot with PackedVectorFormat4x8Bit: glslang has no GLSL name for it */
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int dk_sdot(uint a, uint b, spirv_literal int fmt);
#endif

DK_OUT(0, O)
DK_IN(1, X)
DK_IN(2, W)
DK_IN(3, Bias)

layout(constant_id = 0) const uint DTX = 0u;
layout(constant_id = 1) const uint DTO = 0u;
layout(constant_id = 2) const uint DTB = 0u;
layout(constant_id = 3) const uint HAS_BIAS = 0u;
layout(constant_id = 4) const uint M = 1u;    /* rows of x, 1..MMAX */

layout(push_constant) uniform P {
  uint N, K, KC;          /* KC: columns of x staged at once, M*KC <= XS */
  uint x_off, w_off, o_off, b_off;  /* w_off in halves for block formats */
  uint ldx, ldo;
} p;

#ifdef DK_DOT
shared uint xq[XS / 4];       /* x as int8, four to a word */
shared float xd[XS / 32];     /* the scale of each block of 32 */
shared int xsum[XS / 32];     /* the sum of its int8 values (q4_0's -8 offset) */
#else
shared float xs[XS];
#endif
shared float red[MMAX * R * WG];

#if WT == 0
#define WLD(i) uintBitsToFloat(W32[i])
#elif WT == 1
#define WLD(i) dk_h2f(uint(W16[i]))
#elif WT == 2
#define WLD(i) dk_bf2f(uint(W16[i]))
#endif

void main() {
  uint l = gl_LocalInvocationID.x, n0 = dk_group() * R;
  if (n0 >= p.N) return;  /* uniform: the whole workgroup leaves */
  float acc[MMAX][R];
  [[unroll]] for (uint m = 0u; m < MMAX; m++)
    [[unroll]] for (uint r = 0u; r < R; r++) acc[m][r] = 0.0;
  for (uint kc0 = 0u; kc0 < p.K; kc0 += p.KC) {
    uint kcn = min(p.KC, p.K - kc0);
    barrier();
#ifdef DK_DOT
    for (uint i = l; i < M * (kcn / 32u); i += WG) {
      uint m = i / (kcn / 32u), b = i % (kcn / 32u), xb = p.x_off + m * p.ldx + kc0 + b * 32u;
      float amax = 0.0;
      for (uint j = 0u; j < 32u; j++) amax = max(amax, abs(X_ld(DTX, xb + j)));
      float dd = amax / 127.0, id = dd != 0.0 ? 1.0 / dd : 0.0;
      int sum = 0;
      for (uint w = 0u; w < 8u; w++) {
        uint word = 0u;
        for (uint q = 0u; q < 4u; q++) {
          int v = int(round(X_ld(DTX, xb + 4u * w + q) * id));
          sum += v;
          word |= (uint(v) & 255u) << (8u * q);
        }
        xq[(m * p.KC + b * 32u) / 4u + w] = word;
      }
      xd[(m * p.KC) / 32u + b] = dd;
      xsum[(m * p.KC) / 32u + b] = sum;
    }
#else
    for (uint i = l; i < M * kcn; i += WG) {
      uint m = i / kcn, k = i % kcn;
      xs[m * p.KC + k] = X_ld(DTX, p.x_off + m * p.ldx + kc0 + k);
    }
#endif
    barrier();
#if WT >= 4
    uint nbk = p.K / 32u;
    for (uint b = kc0 / 32u + l; b < (kc0 + kcn) / 32u; b += WG) {
      uint xb = b * 32u - kc0;
      [[unroll]] for (uint r = 0u; r < R; r++) {
        uint n = n0 + r;
        if (n >= p.N) break;
        float s[MMAX];
        [[unroll]] for (uint m = 0u; m < MMAX; m++) s[m] = 0.0;
#ifdef DK_DOT
#if WT == 4
        uint hb = p.w_off + (n * nbk + b) * 17u;
        uint wq[8];
        [[unroll]] for (uint i = 0u; i < 8u; i++) wq[i] = uint(W16[hb + 1u + 2u * i]) | (uint(W16[hb + 2u + 2u * i]) << 16);
        [[unroll]] for (uint m = 0u; m < MMAX; m++) {
          if (m >= M) break;
          uint xw = (m * p.KC + xb) / 4u;
          int dot = 0;
          [[unroll]] for (uint i = 0u; i < 8u; i++) dot += dk_sdot(wq[i], xq[xw + i], 0);
          s[m] = float(dot) * xd[xw / 8u];
        }
#else
        uint hb = p.w_off + (n * nbk + b) * 9u;
        uint wq[4];
        [[unroll]] for (uint i = 0u; i < 4u; i++) wq[i] = uint(W16[hb + 1u + 2u * i]) | (uint(W16[hb + 2u + 2u * i]) << 16);
        [[unroll]] for (uint m = 0u; m < MMAX; m++) {
          if (m >= M) break;
          uint xw = (m * p.KC + xb) / 4u;
          /* unsigned nibbles against x, then the -8 of every value at once */
          int dot = -8 * xsum[xw / 8u];
          [[unroll]] for (uint i = 0u; i < 4u; i++)
            dot += dk_sdot(wq[i] & 0x0F0F0F0Fu, xq[xw + i], 0) + dk_sdot((wq[i] >> 4) & 0x0F0F0F0Fu, xq[xw + 4u + i], 0);
          s[m] = float(dot) * xd[xw / 8u];
        }
#endif
#elif WT == 4
        uint hb = p.w_off + (n * nbk + b) * 17u;
        [[unroll]] for (uint q = 0u; q < 16u; q++) {
          uint w = uint(W16[hb + 1u + q]);
          float w0 = float(int(w << 24) >> 24), w1 = float(int(w << 16) >> 24);
          [[unroll]] for (uint m = 0u; m < MMAX; m++) {
            if (m >= M) break;
            s[m] += w0 * xs[m * p.KC + xb + 2u * q] + w1 * xs[m * p.KC + xb + 2u * q + 1u];
          }
        }
#else
        uint hb = p.w_off + (n * nbk + b) * 9u;
        [[unroll]] for (uint q = 0u; q < 8u; q++) {
          uint w = uint(W16[hb + 1u + q]);
          float lo0 = float(int(w & 15u) - 8), hi0 = float(int((w >> 4) & 15u) - 8);
          float lo1 = float(int((w >> 8) & 15u) - 8), hi1 = float(int((w >> 12) & 15u) - 8);
          [[unroll]] for (uint m = 0u; m < MMAX; m++) {
            if (m >= M) break;
            uint xi = m * p.KC + xb + 2u * q;
            s[m] += lo0 * xs[xi] + lo1 * xs[xi + 1u] + hi0 * xs[xi + 16u] + hi1 * xs[xi + 17u];
          }
        }
#endif
        float d = dk_h2f(uint(W16[hb]));
        [[unroll]] for (uint m = 0u; m < MMAX; m++) acc[m][r] += d * s[m];
      }
    }
#else
    for (uint k = l; k < kcn; k += WG) {
      [[unroll]] for (uint r = 0u; r < R; r++) {
        uint n = n0 + r;
        if (n >= p.N) break;
        float w = WLD(p.w_off + n * p.K + kc0 + k);
        [[unroll]] for (uint m = 0u; m < MMAX; m++) {
          if (m >= M) break;
          acc[m][r] += w * xs[m * p.KC + k];
        }
      }
    }
#endif
  }
  /* acc -> one value per (m, r): subgroups first where the device has them */
#ifdef DK_SUBGROUPS
  uint slot = gl_SubgroupID, nslots = gl_NumSubgroups;
#else
  uint slot = l, nslots = WG;
#endif
  [[unroll]] for (uint m = 0u; m < MMAX; m++) {
    if (m >= M) break;
    [[unroll]] for (uint r = 0u; r < R; r++) {
#ifdef DK_SUBGROUPS
      float v = subgroupAdd(acc[m][r]);
      if (subgroupElect()) red[(m * R + r) * WG + slot] = v;
#else
      red[(m * R + r) * WG + slot] = acc[m][r];
#endif
    }
  }
  barrier();
  if (l < M * R) {
    uint m = l / R, r = l % R, n = n0 + r;
    if (n < p.N) {
      float v = 0.0;
      for (uint i = 0u; i < nslots; i++) v += red[l * WG + i];
      if (HAS_BIAS != 0u) v += Bias_ld(DTB, p.b_off + n);
      O_st(DTO, p.o_off + m * p.ldo + n, v);
    }
  }
}
