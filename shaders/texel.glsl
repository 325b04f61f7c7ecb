/* shaders/texel.glsl — 16-byte word i of w (binding 2) and of x (binding 1),
 * counted from their bindings' starts, for the row kernels (matvec_rows,
 * gemm_rows); half i of w for quants.glsl. Their TEXW variants fetch the
 * words from texel views of the same bytes (bindings 5 and 6;
 * backends/vulkan.h dk_vk_texels): llvmpipe (Mesa 22) loads
 * a storage buffer one lane and one 32-bit word at a time, each with a
 * branch and a bounds check, even at an offset every lane shares, but
 * fetches a texel for all its SIMD lanes at once. A shader declares X4, W4,
 * and W16 before including this. */
#ifdef TEXW
layout(set = 0, binding = 5) uniform usamplerBuffer WTX;
layout(set = 0, binding = 6) uniform usamplerBuffer XTX;
/* the codebooks (quants.glsl's binding 4) as texels too: the storage
 * buffer's per-lane loads were three quarters of an iq3_xxs decode product
 * on lavapipe (reading no codebook: 7.2 -> 26.8 tok/s, 100M iq3_xxs) */
layout(set = 0, binding = 7) uniform usamplerBuffer GTX;
#define DKQ_GRID(i) texelFetch(GTX, int((i) >> 2u))[(i) & 3u]
/* entries i, i + 1 (i even: an iq2 point) from one texel */
#define DKQ_GRID2(i, a, b)                                                     \
  {                                                                            \
    uvec4 gt_ = texelFetch(GTX, int((i) >> 2u));                               \
    bool hi_ = ((i) & 2u) != 0u;                                               \
    a = hi_ ? gt_.z : gt_.x;                                                   \
    b = hi_ ? gt_.w : gt_.y;                                                   \
  }
#define WV(i) texelFetch(WTX, int(i))
#define XV(i) texelFetch(XTX, int(i))
uint dk_wt_half(uint i) { return (WV(i >> 3)[(i >> 1) & 3u] >> ((i & 1u) << 4)) & 0xffffu; }
#define DKQ_HALF(i) dk_wt_half(i)
#else
#define WV(i) W4[i]
#define XV(i) X4[i]
#endif
#define DKQ_BUF W16
#include "quants.glsl"
