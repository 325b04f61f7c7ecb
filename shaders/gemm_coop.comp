#version 450
/* dk_linear for prompts on cooperative matrices (VK_NV_cooperative_matrix,
 * the tensor cores of NVIDIA GPUs): out[M,N] = x[M,K] . W[N,K]^T (+ bias[N]).
 *
 * Precision: x (f32 or f16) and W (f16, or any block format dequantized in
 * f32 exactly as quants.glsl and the CPU do) are rounded to f16 when a tile
 * is staged in shared memory; the products accumulate in f32. This is the
 * rule of CUDA's prompt path (dk__cuda_prompt_type): the host sends neither
 * f32/bf16 weights nor precise ones here.
 *
 * Geometry: a workgroup of WG = 256 invocations computes a BM x BN = 128 x
 * 128 tile of out. The host takes this path only where the subgroup size is
 * 32, so the workgroup is 8 subgroups; subgroup s owns the WM x WN = 64 x 32
 * block at rows (s / 4) * 64, columns (s % 4) * 32 of the tile, as FM x FN
 * matrices of TM x TN (TN = 16, or 8 where the device lists only 16x8x16).
 * K goes by BK = 32: every invocation loads 16 values of one x row and 16 of
 * one W row (row l / 2, values (l % 2) * 16 ...) into registers, stores them
 * to shared memory, and fetches the next slice while the subgroups multiply
 * (a register prefetch; two shared stages would not fit beside the output
 * staging in 48 KB on every device).
 *
 * Indexing: x row m at a_off + m * a_rs (elements); W row n at b_off + n *
 * b_cs (elements, float weights) or halves b_off + n * (K / block) * halves
 * per block (block formats; K is a multiple of the block, the format's rule).
 * Rows past M or N and values past K are staged as zeros; out is written
 * only inside [M, N], element (m, n) at o_off + m * ldo + n. Shared rows are
 * BKP = 40 halves (80 bytes): loads start on 16-byte boundaries, and
 * consecutive rows fall on different banks.
 *
 * DK_COOP_EMU (DEVKIT_VULKAN_COOPMAT=emu, any device, lavapipe included):
 * the same staging, rounding and output, with the multiply done by plain f32
 * FMAs from the f16-rounded tiles (invocation l: rows (l / 16) * 8 ..., columns
 * (l % 16) * 8 ... of the tile), so that everything but the matrix
 * operations is tested where no device has them. */
//!variant gemm_coop -DTN=16
//!variant gemm_coop_n8 -DTN=8
//!variant gemm_coop_emu -DTN=16 -DDK_COOP_EMU
#extension GL_GOOGLE_include_directive : require
#ifdef DK_COOP_EMU
/* the registers hold f32; the tiles hold f16 pairs in 32-bit words (20 KB,
 * as the real shader's; 16-bit shared types need features the other
 * shaders do not) */
#define HT float
#define H(v) (v)
#else
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#define HT float16_t
#define H(v) float16_t(v)
#endif
#define WG 256
#define BM 128
#define BN 128
#define BK 32
#define BKP 40
#define WM 64
#define WN 32
#define TM 16
#define TK 16
#define FM (WM / TM)
#define FN (WN / TN)
layout(local_size_x = WG) in;
#include "common.glsl"

DK_OUT(0, O)
DK_IN(1, A)
DK_IN(2, B)
DK_IN(3, Bias)
#define DKQ_BUF B16
#include "quants.glsl"

layout(constant_id = 0) const uint DTA = 0u;
layout(constant_id = 1) const uint DTB = 1u;
layout(constant_id = 2) const uint DTO = 0u;
layout(constant_id = 3) const uint DTBIAS = 0u;
layout(constant_id = 4) const uint HAS_BIAS = 0u;

/* dk_vk_pc_mm's layout; only the fields named in the comment above are read */
layout(push_constant) uniform P {
  uint M, N, K;
  uint a_off, b_off, o_off, bias_off;
  uint a_rs, b_rs, b_cs, ldo;
  uint nb1, nb2, z_base;
  uint abs0, abs1, abs2, bbs0, bbs1, bbs2, obs;
} p;

#ifdef DK_COOP_EMU
shared uint As[BM * BKP / 2];
shared uint Bs[BN * BKP / 2];
float HF(uint w2, uint i) { vec2 v = unpackHalf2x16(w2); return (i & 1u) != 0u ? v.y : v.x; }
#else
shared float Cs[(WG / 32) * TM * TN];   /* one accumulator per subgroup, on its way out */
shared HT As[BM * BKP];
shared HT Bs[BN * BKP];
#endif

/* the invocation's next 16 values of x and of W (module scope: passing
 * arrays to functions copies them element by element) */
HT ra[16], rb[16];

/* 16 values of x row gm from k: f32 or f16, zeros outside */
void load_x(uint gm, uint k) {
  [[unroll]] for (uint e = 0u; e < 16u; e++)
    ra[e] = H(gm < p.M && k + e < p.K ? A_ld(DTA, p.a_off + gm * p.a_rs + k + e) : 0.0);
}

/* 8 values of W row gn from k (k % 8 == 0), as f32 */
void w_group8(uint gn, uint k, out float v[8]) {
  if (DTB == DT_F16 || DTB == DT_F32 || DTB == DT_BF16) {
    [[unroll]] for (uint e = 0u; e < 8u; e++) v[e] = k + e < p.K ? B_ld(DTB, p.b_off + gn * p.b_cs + k + e) : 0.0;
  } else if (DTB == DT_Q8_0) {
    uint hb = p.b_off + (gn * (p.K / 32u) + k / 32u) * 17u, j = k % 32u;
    float d = dk_h2f(uint(B16[hb]));
    [[unroll]] for (uint q = 0u; q < 4u; q++) {
      uint w = uint(B16[hb + 1u + j / 2u + q]);
      v[2u * q] = d * float(int(w << 24) >> 24);
      v[2u * q + 1u] = d * float(int(w << 16) >> 24);
    }
  } else if (DTB == DT_Q4_0) {
    /* value j < 16: low nibble of byte j; j >= 16: high nibble of byte j - 16 */
    uint hb = p.b_off + (gn * (p.K / 32u) + k / 32u) * 9u, j = k % 32u, sh = j < 16u ? 0u : 4u;
    float d = dk_h2f(uint(B16[hb]));
    [[unroll]] for (uint q = 0u; q < 4u; q++) {
      uint w = uint(B16[hb + 1u + (j % 16u) / 2u + q]);
      v[2u * q] = d * float(int((w >> sh) & 15u) - 8);
      v[2u * q + 1u] = d * float(int((w >> (8u + sh)) & 15u) - 8);
    }
  } else {
    uint blk = dkq_block(DTB);
    dkq_group8(DTB, p.b_off + (gn * (p.K / blk) + k / blk) * dkq_halves(DTB), k % blk, v);
  }
}

void load_w(uint gn, uint k) {
  float v[8];
  for (uint h = 0u; h < 2u; h++) {
    if (gn < p.N) w_group8(gn, k + 8u * h, v);
    else [[unroll]] for (uint e = 0u; e < 8u; e++) v[e] = 0.0;
    [[unroll]] for (uint e = 0u; e < 8u; e++) rb[8u * h + e] = H(v[e]);
  }
}

void main() {
  const uint l = gl_LocalInvocationID.x;
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  const uint lr = l / 2u, lk = (l % 2u) * 16u;
#ifdef DK_COOP_EMU
  const uint er = (l / 16u) * 8u, ec = (l % 16u) * 8u;
  float acc[64];
  [[unroll]] for (uint i = 0u; i < 64u; i++) acc[i] = 0.0;
#else
  const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint wm = (sg / 4u) * WM, wn = (sg % 4u) * WN;
  fcoopmatNV<32, gl_ScopeSubgroup, TM, TN> acc[FM * FN];
  [[unroll]] for (uint i = 0u; i < FM * FN; i++) acc[i] = fcoopmatNV<32, gl_ScopeSubgroup, TM, TN>(0.0);
#endif

  /* pass i stages slice i - 1 (loaded in the pass before), loads slice i
   * and multiplies slice i - 1: one load site keeps the module small */
  for (uint k0 = 0u; k0 < p.K + BK; k0 += BK) {
    if (k0 != 0u) {
      barrier();   /* every subgroup is done with the slice before */
#ifdef DK_COOP_EMU
      [[unroll]] for (uint e = 0u; e < 16u; e += 2u) {
        As[(lr * BKP + lk + e) / 2u] = packHalf2x16(vec2(ra[e], ra[e + 1u]));
        Bs[(lr * BKP + lk + e) / 2u] = packHalf2x16(vec2(rb[e], rb[e + 1u]));
      }
#else
      [[unroll]] for (uint e = 0u; e < 16u; e++) {
        As[lr * BKP + lk + e] = ra[e];
        Bs[lr * BKP + lk + e] = rb[e];
      }
#endif
      barrier();
    }
    if (k0 < p.K) {
      load_x(m0 + lr, k0 + lk);
      load_w(n0 + lr, k0 + lk);
    }
    if (k0 == 0u) continue;
#ifdef DK_COOP_EMU
    for (uint kk = 0u; kk < BK; kk++) {
      float a[8], b[8];
      [[unroll]] for (uint i = 0u; i < 8u; i++) a[i] = HF(As[((er + i) * BKP + kk) / 2u], kk);
      [[unroll]] for (uint j = 0u; j < 8u; j++) b[j] = HF(Bs[((ec + j) * BKP + kk) / 2u], kk);
      [[unroll]] for (uint i = 0u; i < 8u; i++)
        [[unroll]] for (uint j = 0u; j < 8u; j++) acc[i * 8u + j] = fma(a[i], b[j], acc[i * 8u + j]);
    }
#else
    [[unroll]] for (uint kk = 0u; kk < BK; kk += TK) {
      fcoopmatNV<16, gl_ScopeSubgroup, TM, TK> a[FM];
      fcoopmatNV<16, gl_ScopeSubgroup, TK, TN> b[FN];
      /* a: rows of x, row-major; b: K x TN with column n = W row n, which is
       * column-major with stride BKP in Bs */
      [[unroll]] for (uint i = 0u; i < FM; i++) coopMatLoadNV(a[i], As, (wm + i * TM) * BKP + kk, BKP, false);
      [[unroll]] for (uint j = 0u; j < FN; j++) coopMatLoadNV(b[j], Bs, (wn + j * TN) * BKP + kk, BKP, true);
      [[unroll]] for (uint i = 0u; i < FM; i++)
        [[unroll]] for (uint j = 0u; j < FN; j++) acc[i * FN + j] = coopMatMulAddNV(a[i], b[j], acc[i * FN + j]);
    }
#endif
  }

#ifdef DK_COOP_EMU
  for (uint i = 0u; i < 8u; i++)
    for (uint j = 0u; j < 8u; j++) {
      uint gm = m0 + er + i, gn = n0 + ec + j;
      if (gm < p.M && gn < p.N) {
        float v = acc[i * 8u + j];
        if (HAS_BIAS != 0u) v += Bias_ld(DTBIAS, p.bias_off + gn);
        O_st(DTO, p.o_off + gm * p.ldo + gn, v);
      }
    }
#else

  /* each accumulator through the subgroup's slice of Cs, then out with the
   * bias and the output dtype's rounding */
  const uint cs = sg * TM * TN;
  [[unroll]] for (uint i = 0u; i < FM; i++)
    [[unroll]] for (uint j = 0u; j < FN; j++) {
      coopMatStoreNV(acc[i * FN + j], Cs, cs, TN, false);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      for (uint e = lane; e < TM * TN; e += gl_SubgroupSize) {
        uint gm = m0 + wm + i * TM + e / TN, gn = n0 + wn + j * TN + e % TN;
        if (gm < p.M && gn < p.N) {
          float v = Cs[cs + e];
          if (HAS_BIAS != 0u) v += Bias_ld(DTBIAS, p.bias_off + gn);
          O_st(DTO, p.o_off + gm * p.ldo + gn, v);
        }
      }
      subgroupBarrier();   /* read before the next store */
    }
#endif
}
