#version 450
/* Prompt attention on cooperative matrices (VK_NV_cooperative_matrix, the
 * tensor cores of NVIDIA GPUs): the Vulkan counterpart of CUDA's
 * dk_attn_flash_f16 (kernels/attention.cu), for heads of D = Dv = 64 over an
 * f16 KV cache. q [T,Hq,64], k/v [S,Hkv,64] f16, out [T,Hq,64] (q's dtype).
 *
 * Precision (dk_device_props.attn_x16): q and the probabilities are rounded
 * to f16 (the cache is f16 already); scores, the softmax and the output
 * accumulate in f32. tests/test_ops.c's attention bound covers it.
 *
 * Geometry: workgroup (x, y) takes query rows t0 = 64 x ... t0 + 63 of head
 * h = y (kv head g = h / (Hq / Hkv)); 128 invocations = 4 subgroups of 32
 * (the host takes this path only where the subgroup size is 32); subgroup w
 * owns rows t0 + 16 w ... + 15. Keys go by tiles of 64 over [beg, lim) of
 * the block: beg from its first row (the window's start, 0 without one),
 * lim from its last (limits grow with t):
 *   S = Q_w K^T: 16 x TN matrices, Q_w held in four 16 x 16 matrices from
 *     the start, K's tile in shared memory Ks[key][d]; S goes to the
 *     subgroup's Sw[16][LDS] floats (a matrix's layout is opaque, so the
 *     softmax works on shared memory);
 *   softmax: lane l owns row r = l / 2 and columns / output dims (l % 2) *
 *     32 ... + 31: the row's max and sum through the pair's slots of RedM /
 *     RedS, p = exp(s * scale - m_new) (0 outside the row's [beg, lim)), P
 *     in f16 to the subgroup's Pw[16][LDH], and the lane's 32 output
 *     accumulators o *= exp(m - m_new);
 *   O += P V: matrices again (P from Pw, V's tile Vs[key][d]), through Sw
 *     (S is consumed by then), added to o by the same lane -> (row, dims).
 * At the end out = o / l (0 where a row saw no key).
 *
 * Shared memory: Ks, Vs, QP [64][LDH] halves (QP: the Q tile until the
 * subgroups hold it in matrices, then their Pw), Sw [4][16][LDS] floats:
 * 44.5 KB, under the 48 KB every such device has. Row pitches of 144 and
 * 272 bytes keep every matrix's first element on a 16-byte boundary.
 *
 * DK_COOP_EMU (DEVKIT_VULKAN_FLASH=emu, any device, lavapipe included): the
 * same tiles, limits, softmax, rounding and output, with the two products
 * done by plain f32 FMAs from the f16-rounded values (lane l: its row of Q
 * in registers, its 32 scores, then its 32 output dims), and workgroup
 * barriers for the subgroup ones, so that everything but the matrix
 * operations is tested where no device has them. */
//!variant attn_flash -DTN=16
//!variant attn_flash_n8 -DTN=8
//!variant attn_flash_emu -DTN=16 -DDK_COOP_EMU
#extension GL_GOOGLE_include_directive : require
#ifdef DK_COOP_EMU
#define SG_BARRIER() barrier()
#else
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#define SG_BARRIER() do { subgroupMemoryBarrierShared(); subgroupBarrier(); } while (false)
#endif
#define WG 128
#define D 64
#define BR 64
#define BC 64
#define LDH 72     /* halves a row of Ks, Vs, QP */
#define LDS 68     /* floats a row of Sw */
layout(local_size_x = WG) in;
#include "common.glsl"

DK_OUT(0, O)
DK_IN(1, Q)
DK_IN(2, K)
DK_IN(3, V)

layout(constant_id = 0) const uint DTQ = 0u;   /* q's and out's dtype; k and v are f16 */

/* dk_vk_pc_attn's layout; t0, nsplit, split_len and pos_off are not read */
layout(push_constant) uniform P {
  uint T, Hq, S, Hkv, Dq, Dv;
  float scale;
  int off;
  uint o_off, q_off, k_off, v_off;
  uint t0, nsplit, split_len, pos_off;
  uint win;
} p;

shared float RedM[WG], RedS[WG];
#ifdef DK_COOP_EMU
/* halves in pairs in 32-bit words (16-bit shared types need features the
 * other shaders do not) */
shared uint Ks[BC * LDH / 2], Vs[BC * LDH / 2], Pw[BR * LDH / 2];
float HF(uint w2, uint i) { vec2 v = unpackHalf2x16(w2); return (i & 1u) != 0u ? v.y : v.x; }
#else
shared float16_t Ks[BC * LDH], Vs[BC * LDH], QP[BR * LDH];
shared float Sw[4 * 16 * LDS];
#endif

/* query t's keys [beg, lim): its causal limit (all keys with a negative
 * offset), cut to the last `win` of them where there is a window */
uint row_lim(uint t) { return p.off < 0 ? p.S : min(t + uint(p.off) + 1u, p.S); }
uint row_beg(uint t) { uint lim = row_lim(t); return p.win != 0u && lim > p.win ? lim - p.win : 0u; }

/* a value rounded to f16, as f32 */
float r16(float v) { return unpackHalf2x16(dk_f2h(v)).x; }

void main() {
  const uint l = gl_LocalInvocationID.x, w = l / 32u, lane = l % 32u;
  const uint t0 = gl_WorkGroupID.x * BR, h = gl_WorkGroupID.y, g = h / (p.Hq / p.Hkv);
  const uint r = lane / 2u, c0 = (lane % 2u) * 32u;   /* the lane's row of its subgroup's 16, and its 32 columns */
  const uint t = t0 + w * 16u + r, tl = min(t0 + BR, p.T) - 1u;
  const bool live = t < p.T;
  const uint beg = live ? row_beg(t) : 0u, lim = live ? row_lim(t) : 0u;
  /* the block's keys: from its first row's start to its last row's limit */
  const uint sbeg = (row_beg(t0) / BC) * BC, send = row_lim(tl);
  const float neg_inf = -1.0 / 0.0;
  const uint rs = p.Hkv * D;   /* halves between positions of k and v */

#ifdef DK_COOP_EMU
  /* the loops of the emulation stay loops: unrolled, llvmpipe takes 14 s to
   * compile the shader for each q dtype */
  float qr[D];   /* the lane's row of Q, rounded to f16 (zeros past T) */
  [[dont_unroll]] for (uint d = 0u; d < D; d++) qr[d] = live ? r16(Q_ld(DTQ, p.q_off + (t * p.Hq + h) * D + d)) : 0.0;
#else
  /* the Q tile in f16 (rows past T: zeros), then into each subgroup's matrices */
  for (uint i = l; i < BR * D; i += WG) {
    uint rr = i / D, d = i % D, tq = t0 + rr;
    QP[rr * LDH + d] = float16_t(tq < p.T ? r16(Q_ld(DTQ, p.q_off + (tq * p.Hq + h) * D + d)) : 0.0);
  }
  barrier();
  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> qf[D / 16];
  [[unroll]] for (uint kk = 0u; kk < D / 16u; kk++) coopMatLoadNV(qf[kk], QP, w * 16u * LDH + kk * 16u, LDH, false);
  barrier();   /* QP becomes the subgroups' Pw */
  const uint pw = w * 16u * LDH, sw = w * 16u * LDS;
#endif

  float o[32], m = neg_inf, lsum = 0.0;
  [[unroll]] for (uint i = 0u; i < 32u; i++) o[i] = 0.0;
  for (uint s0 = sbeg; s0 < send; s0 += BC) {
    barrier();   /* every subgroup is done with the previous K and V tiles */
    /* K and V tiles: 64 rows of 32 words (the host checks that k and v
     * start on a word) */
    for (uint i = l; i < BC * (D / 2u); i += WG) {
      uint j = i / (D / 2u), e = (i % (D / 2u)) * 2u;
      uint kw = 0u, vw = 0u;
      if (s0 + j < p.S) {
        kw = K32[(p.k_off + (s0 + j) * rs + g * D + e) / 2u];
        vw = V32[(p.v_off + (s0 + j) * rs + g * D + e) / 2u];
      }
#ifdef DK_COOP_EMU
      Ks[(j * LDH + e) / 2u] = kw;
      Vs[(j * LDH + e) / 2u] = vw;
#else
      vec2 kv = unpackHalf2x16(kw), vv = unpackHalf2x16(vw);
      Ks[j * LDH + e] = float16_t(kv.x);
      Ks[j * LDH + e + 1u] = float16_t(kv.y);
      Vs[j * LDH + e] = float16_t(vv.x);
      Vs[j * LDH + e + 1u] = float16_t(vv.y);
#endif
    }
    barrier();

    /* the lane's 32 scores */
    float s[32], mx = neg_inf;
#ifdef DK_COOP_EMU
    [[dont_unroll]] for (uint i = 0u; i < 32u; i++) {
      float a = 0.0;
      [[dont_unroll]] for (uint d = 0u; d < D; d += 2u) {
        uint kw = Ks[((c0 + i) * LDH + d) / 2u];
        a = fma(qr[d], HF(kw, 0u), a);
        a = fma(qr[d + 1u], HF(kw, 1u), a);
      }
      s[i] = a;
    }
#else
    [[unroll]] for (uint nt = 0u; nt < BC / TN; nt++) {
      fcoopmatNV<32, gl_ScopeSubgroup, 16, TN> sacc = fcoopmatNV<32, gl_ScopeSubgroup, 16, TN>(0.0);
      [[unroll]] for (uint kk = 0u; kk < D / 16u; kk++) {
        /* 16 x TN of K^T: column n = key row n of Ks, column-major with stride LDH */
        fcoopmatNV<16, gl_ScopeSubgroup, 16, TN> kf;
        coopMatLoadNV(kf, Ks, nt * TN * LDH + kk * 16u, LDH, true);
        sacc = coopMatMulAddNV(qf[kk], kf, sacc);
      }
      coopMatStoreNV(sacc, Sw, sw + nt * TN, LDS, false);
    }
    SG_BARRIER();
    [[unroll]] for (uint i = 0u; i < 32u; i++) s[i] = Sw[sw + r * LDS + c0 + i];
#endif
    [[unroll]] for (uint i = 0u; i < 32u; i++) {
      uint key = s0 + c0 + i;
      s[i] = key >= beg && key < lim ? s[i] * p.scale : neg_inf;
      mx = max(mx, s[i]);
    }
    /* the pair's max, then its sum, through shared slots (a shuffle would
     * need the subgroup size the emulation does not have) */
    RedM[l] = mx;
    SG_BARRIER();
    mx = max(mx, RedM[l ^ 1u]);
    const float m_new = max(m, mx);
    /* no key seen yet by this row: nothing to add (p = 0; o and l stay 0) */
    const float a = m_new == neg_inf ? 1.0 : exp(m - m_new);
    float sum = 0.0;
    [[unroll]] for (uint i = 0u; i < 32u; i += 2u) {
      float e0 = s[i] == neg_inf ? 0.0 : exp(s[i] - m_new), e1 = s[i + 1u] == neg_inf ? 0.0 : exp(s[i + 1u] - m_new);
      sum += e0 + e1;   /* the sum of the unrounded p; P goes to the product in f16 */
#ifdef DK_COOP_EMU
      Pw[((w * 16u + r) * LDH + c0 + i) / 2u] = dk_f2h(e0) | (dk_f2h(e1) << 16);
#else
      QP[pw + r * LDH + c0 + i] = float16_t(r16(e0));
      QP[pw + r * LDH + c0 + i + 1u] = float16_t(r16(e1));
#endif
    }
    RedS[l] = sum;
    SG_BARRIER();
    sum += RedS[l ^ 1u];
    lsum = lsum * a + sum;
    m = m_new;
    [[unroll]] for (uint i = 0u; i < 32u; i++) o[i] *= a;

    /* O += P V */
#ifdef DK_COOP_EMU
    [[dont_unroll]] for (uint j = 0u; j < BC; j += 2u) {
      uint pk = Pw[((w * 16u + r) * LDH + j) / 2u];
      float p0 = HF(pk, 0u), p1 = HF(pk, 1u);
      [[dont_unroll]] for (uint i = 0u; i < 32u; i += 2u) {
        uint v0 = Vs[(j * LDH + c0 + i) / 2u], v1 = Vs[((j + 1u) * LDH + c0 + i) / 2u];
        o[i] = fma(p1, HF(v1, 0u), fma(p0, HF(v0, 0u), o[i]));
        o[i + 1u] = fma(p1, HF(v1, 1u), fma(p0, HF(v0, 1u), o[i + 1u]));
      }
    }
#else
    [[unroll]] for (uint nt = 0u; nt < D / TN; nt++) {
      fcoopmatNV<32, gl_ScopeSubgroup, 16, TN> oacc = fcoopmatNV<32, gl_ScopeSubgroup, 16, TN>(0.0);
      [[unroll]] for (uint kk = 0u; kk < BC / 16u; kk++) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> pf;
        fcoopmatNV<16, gl_ScopeSubgroup, 16, TN> vf;   /* (key, d) at Vs[key][d] */
        coopMatLoadNV(pf, QP, pw + kk * 16u, LDH, false);
        coopMatLoadNV(vf, Vs, kk * 16u * LDH + nt * TN, LDH, false);
        oacc = coopMatMulAddNV(pf, vf, oacc);
      }
      coopMatStoreNV(oacc, Sw, sw + nt * TN, LDS, false);
    }
    SG_BARRIER();
    [[unroll]] for (uint i = 0u; i < 32u; i++) o[i] += Sw[sw + r * LDS + c0 + i];
#endif
  }
  if (!live) return;
  const float inv = lsum > 0.0 ? 1.0 / lsum : 0.0;
  [[unroll]] for (uint i = 0u; i < 32u; i++) O_st(DTQ, p.o_off + (t * p.Hq + h) * D + c0 + i, o[i] * inv);
}
