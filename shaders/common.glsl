/* shaders/common.glsl — included by every devkit compute shader.
 *
 * Tensors are bound as storage buffers twice over the same binding: as uint
 * words (f32, i32) and as uint16 halves (f16, bf16, and the GGUF blocks,
 * which are only 2-byte aligned). Loads convert to f32 by a dtype code that
 * arrives in push constants, so one pipeline serves every float dtype; the
 * hot loops of linear take their dtypes as compile-time variants instead.
 * Stores round to nearest even by hand: the GPU's own f32->f16 conversion has
 * an implementation-defined rounding mode, and copies must be bit-exact.
 */
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_EXT_control_flow_attributes : enable
#ifdef DK_SUBGROUPS
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

/* dk_dtype values */
#define DT_F32 0u
#define DT_F16 1u
#define DT_BF16 2u
#define DT_I32 3u
#define DT_Q8_0 4u
#define DT_Q4_0 5u

float dk_h2f(uint h) { return unpackHalf2x16(h).x; }
float dk_bf2f(uint h) { return uintBitsToFloat(h << 16); }

uint dk_f2h(float f) {
  uint u = floatBitsToUint(f), s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) return s | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0u);
  if (a >= 0x477ff000u) return s | 0x7c00u;  /* rounds to >= 65520: inf */
  if (a < 0x38800000u) {
    /* below the smallest normal: |f| * 2^24 is exact, round it to an integer */
    return s | uint(roundEven(uintBitsToFloat(a) * 16777216.0));
  }
  uint e = (a >> 23) - 112u, m = a & 0x7fffffu;
  uint h = (e << 10) | (m >> 13), rest = m & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) != 0u)) h++;
  return s | h;
}

uint dk_f2bf(float f) {
  uint u = floatBitsToUint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return ((u >> 16) | 0x40u) & 0xffffu;
  u += 0x7fffu + ((u >> 16) & 1u);
  return u >> 16;
}

float dk_cvt16(uint dt, uint h) { return dt == DT_F16 ? dk_h2f(h) : dk_bf2f(h); }

/* A tensor binding N: N32[] words, N16[] halves, N_ld(dt, i) an element as
 * f32, N_raw(dt, i) its bits (for same-dtype copies). Element indices are in
 * the dtype's own unit; blocks are addressed in halves. */
#define DK_IN(b, N)                                                                        \
  layout(set = 0, binding = b) readonly buffer N##_w { uint N##32[]; };                    \
  layout(set = 0, binding = b) readonly buffer N##_h { uint16_t N##16[]; };                \
  float N##_ld(uint dt, uint i) {                                                          \
    if (dt == DT_F32) return uintBitsToFloat(N##32[i]);                                    \
    if (dt == DT_I32) return float(int(N##32[i]));                                         \
    return dk_cvt16(dt, uint(N##16[i]));                                                   \
  }                                                                                        \
  uint N##_raw(uint dt, uint i) { return (dt == DT_F32 || dt == DT_I32) ? N##32[i] : uint(N##16[i]); }

#define DK_OUT(b, N)                                                                       \
  layout(set = 0, binding = b) buffer N##_w { uint N##32[]; };                             \
  layout(set = 0, binding = b) buffer N##_h { uint16_t N##16[]; };                         \
  void N##_st(uint dt, uint i, float v) {                                                  \
    if (dt == DT_F32) N##32[i] = floatBitsToUint(v);                                       \
    else if (dt == DT_I32) N##32[i] = uint(int(v));                                        \
    else N##16[i] = uint16_t(dt == DT_F16 ? dk_f2h(v) : dk_f2bf(v));                        \
  }                                                                                        \
  void N##_straw(uint dt, uint i, uint bits) {                                             \
    if (dt == DT_F32 || dt == DT_I32) N##32[i] = bits; else N##16[i] = uint16_t(bits);      \
  }

/* n / d for a divisor fixed per dispatch: the host computes m and the two
 * shifts (Granlund-Montgomery); a multiply-high instead of a division,
 * which SIMD hardware (and a CPU running shaders) lacks for integers */
uint dk_div(uint n, uint m, uint sh) {
  uint hi, lo;
  umulExtended(n, m, hi, lo);
  return (hi + ((n - hi) >> (sh & 255u))) >> (sh >> 8);
}

/* the workgroup's linear index when a grid is spread over x and y */
uint dk_group() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }
uint dk_groups() { return gl_NumWorkGroups.x * gl_NumWorkGroups.y; }

/* A workgroup barrier, or only a subgroup one when the workgroup is a single
 * subgroup (specialization constant 6, set by the host where it holds: CPU
 * devices, whose barrier() is a costly switch between SIMD slices). */
#ifdef DK_SUBGROUPS
layout(constant_id = 6) const uint ONE_SG = 0u;
#define DK_BARRIER()                                                           \
  do {                                                                         \
    if (ONE_SG != 0u) { subgroupMemoryBarrierShared(); subgroupBarrier(); }    \
    else barrier();                                                            \
  } while (false)
#else
#define DK_BARRIER() barrier()
#endif

/* ---- workgroup reductions (define WG and DK_REDUCE before including) ----
 * WG is the largest workgroup a shader is built for (the shared arrays'
 * size); the actual size may be smaller, a specialization constant
 * (local_size_x_id = 7) that the host picks per device. */
#ifdef DK_REDUCE
shared float dk_redf[WG];
shared uint dk_redu[WG];

float dk_add2(float a, float b) { return a + b; }

#ifdef DK_SUBGROUPS
/* one subgroup op, then one value per subgroup through shared memory; the
 * subgroup size is whatever the device runs (8 on lavapipe, 32, 64...) */
#define DK_REDUCE_FN(T, NAME, SGOP, ARR, COMBINE)                              \
  T NAME(T v) {                                                                \
    v = SGOP(v);                                                               \
    if (gl_NumSubgroups == 1u) return v;                                       \
    barrier();                                                                 \
    if (subgroupElect()) ARR[gl_SubgroupID] = v;                               \
    barrier();                                                                 \
    T r = ARR[0];                                                              \
    for (uint i = 1u; i < gl_NumSubgroups; i++) r = COMBINE(r, ARR[i]);        \
    return r;                                                                  \
  }
DK_REDUCE_FN(float, dk_sum, subgroupAdd, dk_redf, dk_add2)
DK_REDUCE_FN(float, dk_max, subgroupMax, dk_redf, max)
DK_REDUCE_FN(uint, dk_umin, subgroupMin, dk_redu, min)
#else
/* shared-memory trees for devices without subgroup arithmetic; the
 * workgroup size is a power of two */
#define DK_REDUCE_FN(T, NAME, SGOP, ARR, COMBINE)                              \
  T NAME(T v) {                                                                \
    uint l = gl_LocalInvocationIndex;                                          \
    barrier();                                                                 \
    ARR[l] = v;                                                                \
    barrier();                                                                 \
    for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1u) {                 \
      if (l < s) ARR[l] = COMBINE(ARR[l], ARR[l + s]);                         \
      barrier();                                                               \
    }                                                                          \
    return ARR[0];                                                             \
  }
DK_REDUCE_FN(float, dk_sum, , dk_redf, dk_add2)
DK_REDUCE_FN(float, dk_max, , dk_redf, max)
DK_REDUCE_FN(uint, dk_umin, , dk_redu, min)
#endif
#endif
