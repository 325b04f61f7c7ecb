// kernels/linear.cu — dk_linear: out[M, N] = x[M, K] . W[N, K]^T (+ bias[N]).
//
// Two paths, chosen by the host (backends/cuda.h, dk__cuda_linear):
//   * M <= DK_GEMV_MAXM (decode): dk_gemv_w_<wdtype>, below. It streams W
//     once, at close to memory bandwidth, with the dequantization done in
//     registers and f32 accumulation; every x dtype, every weight dtype.
//     Exact f32 arithmetic, whatever the dtypes.
//   * larger M (prompts): the tiled kernels of gemm.cuh in their NT form:
//     dk_gemm_f32_nt for f32 x (SIMT f32), dk_gemm_tc_<x>_nt for f16/bf16 x
//     (tensor cores; see gemm.cuh for the precision choice), and
//     dk_gemm_tc_<t>_nt_o32 for an f32 x rounded to t, output f32.
//
// ---- GEMV launch geometry ---------------------------------------------------------
// DK_GEMV_THREADS = 128 threads = 4 warps; each warp owns
// DK_GEMV_ROWS_PER_WARP = 2 consecutive rows of W (output columns n), so a
// block owns DK_GEMV_ROWS_PER_BLOCK = 8 rows: block g covers rows
// [8g, 8g + 8), grid.x = min(ceil(N / 8), DK_MAX_GRID_X), grid-stride over g.
//
// K is walked in chunks of DK_GEMV_KC = 1024 values. Per chunk:
//   0. (warp) the 16-byte loads of the chunk's weights are issued into
//      registers first (dk_gemv_load), so that their DRAM latency overlaps
//      the x staging and its two barriers.
//   1. (block) x[0..M)[c0, c0 + kc) is converted to f32 into shared memory
//      xs[m][k + (k / 32) * 4]: four floats of padding after every 32, so
//      that the two read patterns below are free of bank conflicts.
//   2. (warp) float weights: lane l reads groups of 8 consecutive values
//      k = 8 (l + 32 t), t < 4, with one 16-byte load each (two for f32)
//      when the row is 16-byte aligned, and dots them with xs; values past
//      the last full group (kc % 8) and unaligned rows go one by one.
//      Block formats: the warp copies the chunk's bytes of its 2 rows
//      (32 blocks = 576 bytes for q4_0, 1088 for q8_0) from global memory
//      into its own shared buffer with coalesced 16-byte loads (4- or 2-byte
//      ones when the row is less aligned: blocks are only 2-byte aligned),
//      then lane l decodes block l of each row from there and dots its 32
//      values with xs[m][l * 36 ..]. The scale d is applied once per block:
//      acc += d * sum_j q_j x_j, with q_j - 8 (q4_0) or the int8 value (q8_0)
//      formed exactly in f32.
//   3. Partial sums stay in registers (acc[row][m]); after the last chunk
//      they are reduced across the warp and lane 0 writes out[m * N + n]
//      (+ bias[n]) in the output dtype.
// Every warp runs the barriers of step 1 even when its rows are past N
// (then it computes nothing): the barrier count is uniform per block.
//
// Indexing invariants: x is contiguous [M, K]; out contiguous [M, N]; W row
// n starts at byte n * w_row_bytes (w_row_bytes = K * size, or (K / 32) *
// block bytes); for q8_0/q4_0, K % 32 == 0, so a chunk (1024 values, or the
// rest) is a whole number of blocks. xs holds M * 1152 floats (<= 18 KiB).
#include "gemm.cuh"
#include "quants.cuh"

#define DK_GEMV_XPAD (DK_GEMV_KC + DK_GEMV_KC / 32 * 4)
#define DK_GEMV_WARPS (DK_GEMV_THREADS / 32)
#define DK_GEMV_R DK_GEMV_ROWS_PER_WARP

static_assert(DK_GEMV_ROWS_PER_BLOCK == DK_GEMV_WARPS * DK_GEMV_R, "rows per block");
static_assert(DK_GEMV_KC % 256 == 0, "a chunk is whole 8-value groups for every lane");

DK_DEV int dk_xpad(int k) { return k + (k >> 5) * 4; }

// The weights of one chunk, loaded before the block stages x (so the DRAM
// latency of W overlaps the x staging and its barriers), consumed after.
// u[r][t][.]: float weights: group t of row r (f32: two 16-byte halves);
// block formats: the t-th 16-byte piece of row r's chunk (t < 3).
struct dk_gemv_w {
  uint4 u[DK_GEMV_R][4][2];
  const uint8_t *src[DK_GEMV_R];   // row r's chunk
  int kvec[DK_GEMV_R];             // float: values covered by 16-byte loads; -1: row past N
  bool ok[DK_GEMV_R], a16[DK_GEMV_R];
};

template <int WT> struct dk_gemv_fmt {
  static constexpr bool QUANT = WT == DK_KT_Q8_0 || WT == DK_KT_Q4_0;
  static constexpr int ES = WT == DK_KT_F32 ? 4 : 2;                     // float element size
  static constexpr int BB = WT == DK_KT_Q8_0 ? DK_Q8_BYTES : DK_Q4_BYTES; // block bytes
  static constexpr int NV = (32 * BB + 16 * 32 - 1) / (16 * 32);         // 16-byte pieces per lane: 3 (q8_0), 2 (q4_0)
  static constexpr int GROUPS = DK_GEMV_KC / 8 / 32;                     // 8-value groups per lane per full chunk
};
static_assert(dk_gemv_fmt<DK_KT_Q8_0>::NV <= 4 && dk_gemv_fmt<DK_KT_F16>::GROUPS <= 4, "dk_gemv_w holds 4 pieces per row");

template <int WT> DK_DEV void dk_gemv_load(const dk_kp_gemv &p, int64_t nbase, int64_t c0, int kc, dk_gemv_w &w, int lane) {
  typedef dk_gemv_fmt<WT> F;
#pragma unroll
  for (int r = 0; r < DK_GEMV_R; r++) {
    w.ok[r] = nbase + r < p.N;
    const uint8_t *row = (const uint8_t *)p.w + (w.ok[r] ? (nbase + r) * p.w_row_bytes : 0);
    if constexpr (F::QUANT) {
      const int n16 = (kc / 32) * F::BB / 16;
      w.src[r] = row + (c0 / 32) * F::BB;
      w.a16[r] = w.ok[r] && dk_aligned16(w.src[r]);
      w.kvec[r] = 0;
#pragma unroll
      for (int t = 0; t < F::NV; t++) {
        const int i = lane + 32 * t;
        w.u[r][t][0] = w.a16[r] && i < n16 ? __ldg((const uint4 *)w.src[r] + i) : make_uint4(0, 0, 0, 0);
      }
    } else {
      w.src[r] = row + c0 * F::ES;
      w.a16[r] = w.ok[r] && dk_aligned16(w.src[r]);
      w.kvec[r] = !w.ok[r] ? -1 : w.a16[r] ? (kc / 8) * 8 : 0;
#pragma unroll
      for (int t = 0; t < F::GROUPS; t++) {
        const int k = (lane + 32 * t) * 8;
        const bool in = k < w.kvec[r];
        const uint4 *q = (const uint4 *)(w.src[r] + (int64_t)k * F::ES);
        w.u[r][t][0] = in ? __ldg(q) : make_uint4(0, 0, 0, 0);
        if (F::ES == 4) w.u[r][t][1] = in ? __ldg(q + 1) : make_uint4(0, 0, 0, 0);
      }
    }
  }
}

// ---- float weights: one chunk of the warp's rows ----------------------------------
template <int WT>
DK_DEV void dk_gemv_chunk_float(const dk_kp_gemv &p, int kc, const float (*xs)[DK_GEMV_XPAD], const dk_gemv_w &w,
                                float (&acc)[DK_GEMV_R][DK_GEMV_MAXM], int lane) {
  typedef dk_gemv_fmt<WT> F;
  const int M = (int)p.M;
#pragma unroll
  for (int t = 0; t < F::GROUPS; t++) {
    const int k = (lane + 32 * t) * 8;
    if (k >= kc) break;
    const int xo = dk_xpad(k);   // k % 32 is a multiple of 8: 8 contiguous, 16-byte aligned floats
    float v[DK_GEMV_R][8];
#pragma unroll
    for (int r = 0; r < DK_GEMV_R; r++) dk_cvt8<WT>(w.u[r][t][0], w.u[r][t][1], v[r]);
#pragma unroll
    for (int m = 0; m < DK_GEMV_MAXM; m++) {
      if (m >= M) break;
      const float4 x0 = *(const float4 *)&xs[m][xo], x1 = *(const float4 *)&xs[m][xo + 4];
#pragma unroll
      for (int r = 0; r < DK_GEMV_R; r++) {
        if (k >= w.kvec[r]) continue;   // not loaded: an unaligned row, or past N (0 * inf must not reach acc)
        float s = acc[r][m];
        s = fmaf(v[r][0], x0.x, s); s = fmaf(v[r][1], x0.y, s);
        s = fmaf(v[r][2], x0.z, s); s = fmaf(v[r][3], x0.w, s);
        s = fmaf(v[r][4], x1.x, s); s = fmaf(v[r][5], x1.y, s);
        s = fmaf(v[r][6], x1.z, s); s = fmaf(v[r][7], x1.w, s);
        acc[r][m] = s;
      }
    }
  }
  // scalar part: the tail after the last full group, or a whole unaligned row
#pragma unroll
  for (int r = 0; r < DK_GEMV_R; r++) {
    if (w.kvec[r] < 0) continue;
    for (int k = w.kvec[r] + lane; k < kc; k += 32) {
      const float v = dk_ld<WT>(w.src[r], k);
      const int xo = dk_xpad(k);
#pragma unroll
      for (int m = 0; m < DK_GEMV_MAXM; m++)
        if (m < M) acc[r][m] = fmaf(v, xs[m][xo], acc[r][m]);
    }
  }
}

// ---- block formats: one chunk of the warp's rows -------------------------------------
template <int WT>
DK_DEV void dk_gemv_chunk_quant(const dk_kp_gemv &p, int kc, const float (*xs)[DK_GEMV_XPAD],
                                uint8_t (*wb)[32 * DK_Q8_BYTES], const dk_gemv_w &w,
                                float (&acc)[DK_GEMV_R][DK_GEMV_MAXM], int lane) {
  typedef dk_gemv_fmt<WT> F;
  const int M = (int)p.M, nb = kc / 32, nbytes = nb * F::BB, n16 = nbytes / 16;
  __syncwarp();   // the previous chunk's decode has finished reading wb
  // aligned rows: the 16-byte pieces loaded before the x staging
#pragma unroll
  for (int r = 0; r < DK_GEMV_R; r++)
#pragma unroll
    for (int t = 0; t < F::NV; t++) {
      const int i = lane + 32 * t;
      if (w.a16[r] && i < n16) ((uint4 *)wb[r])[i] = w.u[r][t][0];
    }
  // the rest: the tail of an aligned row, or all of an unaligned one, by
  // 4-byte words where the row allows it, else by 16-bit words
#pragma unroll
  for (int r = 0; r < DK_GEMV_R; r++) {
    if (!w.ok[r]) continue;
    int start = w.a16[r] ? n16 * 16 : 0;
    if (!w.a16[r] && ((uintptr_t)w.src[r] & 3u) == 0) {
      const int n4 = nbytes / 4;
      for (int i = lane; i < n4; i += 32) ((uint32_t *)wb[r])[i] = __ldg((const uint32_t *)w.src[r] + i);
      start = n4 * 4;
    }
    for (int i = start / 2 + lane; i < nbytes / 2; i += 32) ((uint16_t *)wb[r])[i] = __ldg((const uint16_t *)w.src[r] + i);
  }
  __syncwarp();
  if (lane >= nb) return;
  // lane decodes block `lane` of each row (32 exact f32 values) and dots it
  // with the M rows of x; one row at a time keeps 32 values live, not 64
  const int xo = lane * 36;   // dk_xpad(lane * 32)
#pragma unroll
  for (int r = 0; r < DK_GEMV_R; r++) {
    if (!w.ok[r]) continue;
    float q[32];
    const uint16_t *h = (const uint16_t *)(wb[r] + lane * F::BB);   // BB even: 2-byte aligned
    const float d = dk_h2f(h[0]);
    if constexpr (WT == DK_KT_Q4_0) {
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const uint32_t word = (uint32_t)h[1 + 2 * i] | ((uint32_t)h[2 + 2 * i] << 16);   // qs[4i .. 4i+3]
#pragma unroll
        for (int b = 0; b < 4; b++) {
          const uint32_t lo = (word >> (8 * b)) & 15u, hi = (word >> (8 * b + 4)) & 15u;
          // 2^23 + n as a float, minus 2^23 + 8: exactly n - 8
          q[4 * i + b] = __uint_as_float(0x4b000000u | lo) - 8388616.0f;
          q[16 + 4 * i + b] = __uint_as_float(0x4b000000u | hi) - 8388616.0f;
        }
      }
    } else {
#pragma unroll
      for (int i = 0; i < 8; i++) {
        // flipping the sign bit of each byte maps int8 q to q + 128 in 0..255
        const uint32_t word = ((uint32_t)h[1 + 2 * i] | ((uint32_t)h[2 + 2 * i] << 16)) ^ 0x80808080u;
#pragma unroll
        for (int b = 0; b < 4; b++)
          q[4 * i + b] = __uint_as_float(0x4b000000u | ((word >> (8 * b)) & 0xffu)) - 8388736.0f;
      }
    }
#pragma unroll
    for (int m = 0; m < DK_GEMV_MAXM; m++) {
      if (m >= M) break;
      float s = 0.0f;
#pragma unroll
      for (int j = 0; j < 32; j += 4) {
        const float4 xv = *(const float4 *)&xs[m][xo + j];
        s = fmaf(q[j], xv.x, s);
        s = fmaf(q[j + 1], xv.y, s);
        s = fmaf(q[j + 2], xv.z, s);
        s = fmaf(q[j + 3], xv.w, s);
      }
      acc[r][m] = fmaf(d, s, acc[r][m]);
    }
  }
}

template <int WT> __device__ void dk_gemv_impl(const dk_kp_gemv &p) {
  __shared__ __align__(16) float xs[DK_GEMV_MAXM][DK_GEMV_XPAD];
  constexpr bool QUANT = dk_gemv_fmt<WT>::QUANT;
  // per-warp staging for the block formats (sized for q8_0, the larger)
  __shared__ __align__(16) uint8_t wbuf[QUANT ? DK_GEMV_WARPS : 1][DK_GEMV_R][32 * DK_Q8_BYTES];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, M = (int)p.M;
  const void *x = (const void *)p.x;
  for (int64_t g = blockIdx.x; g * DK_GEMV_ROWS_PER_BLOCK < p.N; g += gridDim.x) {
    const int64_t nbase = g * DK_GEMV_ROWS_PER_BLOCK + warp * DK_GEMV_R;
    float acc[DK_GEMV_R][DK_GEMV_MAXM];
#pragma unroll
    for (int r = 0; r < DK_GEMV_R; r++)
#pragma unroll
      for (int m = 0; m < DK_GEMV_MAXM; m++) acc[r][m] = 0.0f;
    for (int64_t c0 = 0; c0 < p.K; c0 += DK_GEMV_KC) {
      const int kc = (int)(p.K - c0 < DK_GEMV_KC ? p.K - c0 : DK_GEMV_KC);
      dk_gemv_w w;
      dk_gemv_load<WT>(p, nbase, c0, kc, w, lane);   // in flight across the barriers below
      __syncthreads();   // every warp is done with the previous chunk of xs
      for (int idx = threadIdx.x; idx < M * kc; idx += blockDim.x) {
        const int m = idx / kc, k = idx - m * kc;
        xs[m][dk_xpad(k)] = dk_ld_rt(x, (int64_t)m * p.K + c0 + k, p.xdt);
      }
      __syncthreads();
      if (nbase < p.N) {
        if constexpr (QUANT) dk_gemv_chunk_quant<WT>(p, kc, xs, wbuf[warp], w, acc, lane);
        else dk_gemv_chunk_float<WT>(p, kc, xs, w, acc, lane);
      }
    }
#pragma unroll
    for (int r = 0; r < DK_GEMV_R; r++)
#pragma unroll
      for (int m = 0; m < DK_GEMV_MAXM; m++) {
        if (m >= M) break;
        const float s = dk_warp_reduce(acc[r][m], dk_op_sum());
        const int64_t n = nbase + r;
        if (lane == 0 && n < p.N) {
          float v = s;
          if (p.has_bias) v += dk_ld_rt((const void *)p.bias, n, p.bdt);
          dk_st_rt((void *)p.out, (int64_t)m * p.N + n, v, p.odt);
        }
      }
  }
}

#define DK_GEMV_KERNEL(name, WT) \
  extern "C" __global__ void __launch_bounds__(DK_GEMV_THREADS) name(const __grid_constant__ dk_kp_gemv p) { dk_grid_wait(); dk_gemv_impl<WT>(p); }
DK_GEMV_KERNEL(dk_gemv_w_f32, DK_KT_F32)
DK_GEMV_KERNEL(dk_gemv_w_f16, DK_KT_F16)
DK_GEMV_KERNEL(dk_gemv_w_bf16, DK_KT_BF16)
DK_GEMV_KERNEL(dk_gemv_w_q8_0, DK_KT_Q8_0)
DK_GEMV_KERNEL(dk_gemv_w_q4_0, DK_KT_Q4_0)

// ---- decode GEMV, rows per block -------------------------------------------------------
// The kernel above stages x in chunks of 1024 through shared memory between
// two barriers and gives 8 rows to a block: with a llama layer's small N
// (1792-9600) that is 2-9 blocks an SM, one chunk of loads in flight per
// warp, and the barriers in between; measured on an H100 it streams f16 at
// 44-65 % of the copy bandwidth (q8_0 14-43 %, q4_0 8-23 %). Here (chosen
// by the host for f32 x, K % 8 == 0, aligned W rows and x) a block of
// DK_GEMV_THREADS threads takes DK_GEMV2_ROWS rows (block formats
// DK_GEMV2_QROWS: x is read from L1 once per piece for all the rows, and a
// q4_0 piece is 4.5 bytes of W against 32 of x) and all of K, in pieces of
// 8 values:
//   thread i takes pieces i, i + 128, ... of each row; it issues the loads
//   of DK_GEMV2_U pieces of each row before it uses the first, reads x's
//   matching 8 values straight from global memory (x is at most 4 rows of
//   K floats: L1-resident after the first warp), and keeps acc[row][m] in
//   registers; then a warp reduction, and a shared-memory sum over the 4
//   warps.
// A piece's bytes (dk_gv2_load): f16/bf16 one 16-byte load, f32 two; q8_0
// piece j of a block is its f16 scale d and int8 values 8j..8j+7; q4_0
// piece j is d and qs bytes 4j..4j+3, which hold values 4j..4j+3 (low
// nibbles) and 4j+16..4j+19 (high): x is read at those positions. Blocks are
// only 2-byte aligned (34 and 18 bytes), so block pieces are read as 16-bit
// words; the 4 threads of a block read neighbouring words, and a warp's
// loads cover 8 consecutive blocks.
// Exact f32 arithmetic: block formats acc += d * sum_j q_j x_j with the
// integer q_j (q4_0: nibble - 8) formed exactly in f32, as in the staged
// kernel; the sum order differs from the staged kernel's.
template <int WT> struct dk_gv2 {
  static constexpr bool Q = WT == DK_KT_Q8_0 || WT == DK_KT_Q4_0;
};

template <int WT> DK_DEV void dk_gv2_load(const uint8_t *row, int64_t pc, uint32_t (&raw)[8]) {
  if constexpr (WT == DK_KT_F32 || WT == DK_KT_F16 || WT == DK_KT_BF16) {
    const uint4 *q = (const uint4 *)(row + pc * 8 * (WT == DK_KT_F32 ? 4 : 2));
    const uint4 a = __ldg(q);
    raw[0] = a.x; raw[1] = a.y; raw[2] = a.z; raw[3] = a.w;
    if constexpr (WT == DK_KT_F32) {
      const uint4 b = __ldg(q + 1);
      raw[4] = b.x; raw[5] = b.y; raw[6] = b.z; raw[7] = b.w;
    }
  } else {
    constexpr int BB = WT == DK_KT_Q8_0 ? DK_Q8_BYTES : DK_Q4_BYTES, PW = WT == DK_KT_Q8_0 ? 4 : 2;   // 16-bit words of a piece
    const unsigned short *b = (const unsigned short *)(row + (pc >> 2) * BB), *q = b + 1 + (pc & 3) * PW;
    raw[0] = __ldg(b);
#pragma unroll
    for (int i = 0; i < PW / 2; i++) raw[1 + i] = (uint32_t)__ldg(q + 2 * i) | (uint32_t)__ldg(q + 2 * i + 1) << 16;
  }
}

// The piece's 8 weights (block formats: the integers q_j) and their scale.
// An integer u in [0, 2^23) is the float 2^23 + u with u in the low mantissa
// bits: (0x4b000000 | u) - 2^23 is u exactly, one logic op and one add,
// where an int-to-float conversion runs at a quarter of the FMA rate (it
// held q4_0 at 30 % of the copy bandwidth on an H100). Signed q8_0 bytes
// are biased by 128 first (byte ^ 0x80).
DK_DEV float dk_u2f_magic(uint32_t u, float bias) { return __uint_as_float(0x4b000000u | u) - bias; }
template <int WT> DK_DEV float dk_gv2_cvt(const uint32_t (&raw)[8], float (&v)[8]) {
  if constexpr (WT == DK_KT_Q8_0) {
#pragma unroll
    for (int i = 0; i < 8; i++) v[i] = dk_u2f_magic(((raw[1 + i / 4] ^ 0x80808080u) >> (8 * (i % 4))) & 0xffu, 8388736.0f);
    return dk_h2f((uint16_t)raw[0]);
  } else if constexpr (WT == DK_KT_Q4_0) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
      v[i] = dk_u2f_magic(raw[1] >> (8 * i) & 15u, 8388616.0f);          // nibble - 8
      v[4 + i] = dk_u2f_magic(raw[1] >> (8 * i + 4) & 15u, 8388616.0f);
    }
    return dk_h2f((uint16_t)raw[0]);
  } else {
    dk_cvt8<WT>(make_uint4(raw[0], raw[1], raw[2], raw[3]), make_uint4(raw[4], raw[5], raw[6], raw[7]), v);
    return 1.0f;
  }
}

// where piece pc's 8 values sit in a row of x: [o0, o0 + 4) and [o1, o1 + 4)
template <int WT> DK_DEV void dk_gv2_xoff(int64_t pc, int64_t &o0, int64_t &o1) {
  if constexpr (WT == DK_KT_Q4_0) {
    o0 = (pc >> 2) * 32 + (pc & 3) * 4;
    o1 = o0 + 16;
  } else {
    o0 = pc * 8;
    o1 = o0 + 4;
  }
}

// A prologue on x as the row kernel reads it (PRO), for the ops that feed
// one product (dk_rmsnorm_linear, dk_swiglu_linear at decode). The first
// form (2026-11-28, H200) made each block compute row m's inverse rms
// before its first weight load and ran SiLU in IEEE expf and division: the
// 1B f16 decode fell from 523 to 454 tok/s. Now nothing comes before the
// weight loads:
//  * DK_GV2_NORM: x * norm_w is dotted, and the sum of squares of x comes
//    from the same loads; the block scales its dot by 1/rms at the end
//    (W·(x·inv·g) = inv·(W·(x·g)), so the bits differ from the two ops').
//  * DK_GV2_SWIGLU: x holds the gate, aux the up rows; g / (1 + e^-g) * u
//    with the fast exponential and division: each block converts all of
//    x for its few rows, and the IEEE forms made the product ALU-bound.
enum { DK_GV2_PLAIN = 0, DK_GV2_NORM = 1, DK_GV2_SWIGLU = 2 };
template <int PRO> DK_DEV float4 dk_gv2_pro(float4 v, const dk_kp_gemv &p, float &ss, int64_t m, int64_t o) {
  if constexpr (PRO == DK_GV2_NORM) {
    ss = fmaf(v.x, v.x, ss); ss = fmaf(v.y, v.y, ss); ss = fmaf(v.z, v.z, ss); ss = fmaf(v.w, v.w, ss);
    if (p.aux) {
      const float4 g = __ldg((const float4 *)((const float *)p.aux + o));
      v.x *= g.x; v.y *= g.y; v.z *= g.z; v.w *= g.w;
    }
  } else if constexpr (PRO == DK_GV2_SWIGLU) {
    const float4 u = __ldg((const float4 *)((const float *)p.aux + m * p.K + o));
    v.x = __fdividef(v.x, 1.0f + __expf(-v.x)) * u.x; v.y = __fdividef(v.y, 1.0f + __expf(-v.y)) * u.y;
    v.z = __fdividef(v.z, 1.0f + __expf(-v.z)) * u.z; v.w = __fdividef(v.w, 1.0f + __expf(-v.w)) * u.w;
  }
  return v;
}

#include "gemv_rows.cuh"

template <int WT, int PRO = DK_GV2_PLAIN> __device__ void dk_gemv2_impl(const dk_kp_gemv &p) {
  constexpr int R = dk_gv2<WT>::Q ? DK_GEMV2_QROWS : DK_GEMV2_ROWS, U = DK_GEMV2_U, NT = DK_GEMV_THREADS;
  constexpr int NS = PRO == DK_GV2_NORM ? DK_GEMV_MAXM : 1;   // sums of squares, one a row of x
  __shared__ float red[NT / 32][R][DK_GEMV_MAXM];
  __shared__ float rss[NT / 32][NS];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, M = (int)p.M;
  const int64_t npc = p.K / 8;
  const float *x = (const float *)p.x;
  for (int64_t n0 = (int64_t)blockIdx.x * R; n0 < p.N; n0 += (int64_t)gridDim.x * R) {
    const uint8_t *wr[R];
    float acc[R][DK_GEMV_MAXM], ss[NS];
#pragma unroll
    for (int m = 0; m < NS; m++) ss[m] = 0.0f;
#pragma unroll
    for (int r = 0; r < R; r++) {
      wr[r] = (const uint8_t *)p.w + (n0 + r < p.N ? n0 + r : p.N - 1) * p.w_row_bytes;   // a row past N repeats the last, unstored
#pragma unroll
      for (int m = 0; m < DK_GEMV_MAXM; m++) acc[r][m] = 0.0f;
    }
    for (int64_t pc0 = tid; pc0 < npc; pc0 += (int64_t)NT * U) {
      uint32_t raw[R][U][8];
#pragma unroll
      for (int u = 0; u < U; u++) {
        const int64_t pc = pc0 + (int64_t)u * NT;
        if (pc < npc)
#pragma unroll
          for (int r = 0; r < R; r++) dk_gv2_load<WT>(wr[r], pc, raw[r][u]);
      }
#pragma unroll
      for (int u = 0; u < U; u++) {
        const int64_t pc = pc0 + (int64_t)u * NT;
        if (pc >= npc) break;
        float wv[R][8], d[R];
        int64_t o0, o1;
        dk_gv2_xoff<WT>(pc, o0, o1);
#pragma unroll
        for (int r = 0; r < R; r++) d[r] = dk_gv2_cvt<WT>(raw[r][u], wv[r]);
#pragma unroll
        for (int m = 0; m < DK_GEMV_MAXM; m++) {
          if (m >= M) break;
          float4 x0 = __ldg((const float4 *)(x + m * p.K + o0)), x1 = __ldg((const float4 *)(x + m * p.K + o1));
          if constexpr (PRO != DK_GV2_PLAIN) {
            x0 = dk_gv2_pro<PRO>(x0, p, ss[m < NS ? m : 0], m, o0);
            x1 = dk_gv2_pro<PRO>(x1, p, ss[m < NS ? m : 0], m, o1);
          }
#pragma unroll
          for (int r = 0; r < R; r++) {
            float a = dk_gv2<WT>::Q ? 0.0f : acc[r][m];
            a = fmaf(wv[r][0], x0.x, a); a = fmaf(wv[r][1], x0.y, a); a = fmaf(wv[r][2], x0.z, a); a = fmaf(wv[r][3], x0.w, a);
            a = fmaf(wv[r][4], x1.x, a); a = fmaf(wv[r][5], x1.y, a); a = fmaf(wv[r][6], x1.z, a); a = fmaf(wv[r][7], x1.w, a);
            acc[r][m] = dk_gv2<WT>::Q ? fmaf(d[r], a, acc[r][m]) : a;
          }
        }
      }
    }
    if constexpr (PRO == DK_GV2_NORM)
#pragma unroll
      for (int m = 0; m < NS; m++) {
        if (m >= M) break;
        const float v = dk_warp_reduce(ss[m], dk_op_sum());
        if (lane == 0) rss[warp][m] = v;
      }
    dk_gemv_rows_store<R>(p, n0, acc, red, [&](int m) {
      if constexpr (PRO == DK_GV2_NORM) {
        // in f32: double's division and square root are calls that spill
        float q = 0.0f;
#pragma unroll
        for (int w = 0; w < NT / 32; w++) q += rss[w][m < NS ? m : 0];
        return 1.0f / sqrtf(q / (float)p.K + p.eps);
      } else {
        return 1.0f;
      }
    });
  }
}

#define DK_GEMV2_KERNEL(name, WT) \
  extern "C" __global__ void __launch_bounds__(DK_GEMV_THREADS) name(const __grid_constant__ dk_kp_gemv p) { dk_grid_wait(); dk_gemv2_impl<WT>(p); }
DK_GEMV2_KERNEL(dk_gemv2_f32, DK_KT_F32)
DK_GEMV2_KERNEL(dk_gemv2_f16, DK_KT_F16)
DK_GEMV2_KERNEL(dk_gemv2_bf16, DK_KT_BF16)
DK_GEMV2_KERNEL(dk_gemv2_q8_0, DK_KT_Q8_0)
DK_GEMV2_KERNEL(dk_gemv2_q4_0, DK_KT_Q4_0)

#define DK_GEMV2P_KERNEL(name, WT, PRO) \
  extern "C" __global__ void __launch_bounds__(DK_GEMV_THREADS) name(const __grid_constant__ dk_kp_gemv p) { dk_grid_wait(); dk_gemv2_impl<WT, PRO>(p); }
DK_GEMV2P_KERNEL(dk_gemv2n_f32, DK_KT_F32, DK_GV2_NORM)
DK_GEMV2P_KERNEL(dk_gemv2n_f16, DK_KT_F16, DK_GV2_NORM)
DK_GEMV2P_KERNEL(dk_gemv2n_bf16, DK_KT_BF16, DK_GV2_NORM)
DK_GEMV2P_KERNEL(dk_gemv2n_q8_0, DK_KT_Q8_0, DK_GV2_NORM)
DK_GEMV2P_KERNEL(dk_gemv2n_q4_0, DK_KT_Q4_0, DK_GV2_NORM)
DK_GEMV2P_KERNEL(dk_gemv2s_f32, DK_KT_F32, DK_GV2_SWIGLU)
DK_GEMV2P_KERNEL(dk_gemv2s_f16, DK_KT_F16, DK_GV2_SWIGLU)
DK_GEMV2P_KERNEL(dk_gemv2s_bf16, DK_KT_BF16, DK_GV2_SWIGLU)
DK_GEMV2P_KERNEL(dk_gemv2s_q8_0, DK_KT_Q8_0, DK_GV2_SWIGLU)
DK_GEMV2P_KERNEL(dk_gemv2s_q4_0, DK_KT_Q4_0, DK_GV2_SWIGLU)

// The other block formats (quants.cuh), any M: one block of DK_GEMV_THREADS
// per output row n (grid.x = N, grid.y = M), threads striding over k and
// decoding one value at a time, then a block reduction. Correct first; not
// tuned (ran clean on an H100, 2026-11-24; DEVKIT_CUDA_KQUANTS=0 refuses).
extern "C" __global__ void __launch_bounds__(DK_GEMV_THREADS) dk_gemv_w_more(const __grid_constant__ dk_kp_gemv p) { dk_grid_wait();
  __shared__ float red[33];
  const int64_t n = blockIdx.x, m = blockIdx.y;
  const uint8_t *row = (const uint8_t *)p.w + n * p.w_row_bytes;
  float acc = 0.0f;
  for (int64_t k = threadIdx.x; k < p.K; k += blockDim.x)
    acc += dkq_row_value(p.wdt, row, k) * dk_ld_rt((const void *)p.x, m * p.K + k, p.xdt);
  acc = dk_block_reduce(acc, red, dk_op_sum(), 0.0f);
  if (threadIdx.x == 0) {
    if (p.has_bias) acc += dk_ld_rt((const void *)p.bias, n, p.bdt);
    dk_st_rt((void *)p.out, m * p.N + n, acc, p.odt);
  }
}

#include "gemv2k.cuh"
#define DK_GEMV2K_KERNEL(name, DT) \
  extern "C" __global__ void __launch_bounds__(DK_GEMV_THREADS) name(const __grid_constant__ dk_kp_gemv p) { dk_grid_wait(); dk_gemv2k_impl<DT>(p); }
DK_GEMV2K_KERNEL(dk_gemv2k_q4_1, DK_KT_Q4_1)
DK_GEMV2K_KERNEL(dk_gemv2k_q5_0, DK_KT_Q5_0)
DK_GEMV2K_KERNEL(dk_gemv2k_q5_1, DK_KT_Q5_1)
DK_GEMV2K_KERNEL(dk_gemv2k_q2_k, DK_KT_Q2_K)
DK_GEMV2K_KERNEL(dk_gemv2k_q3_k, DK_KT_Q3_K)
DK_GEMV2K_KERNEL(dk_gemv2k_q4_k, DK_KT_Q4_K)
DK_GEMV2K_KERNEL(dk_gemv2k_q5_k, DK_KT_Q5_K)
DK_GEMV2K_KERNEL(dk_gemv2k_q6_k, DK_KT_Q6_K)
DK_GEMV2K_KERNEL(dk_gemv2k_iq4_nl, DK_KT_IQ4_NL)
DK_GEMV2K_KERNEL(dk_gemv2k_iq4_xs, DK_KT_IQ4_XS)
DK_GEMV2K_KERNEL(dk_gemv2k_iq3_xxs, DK_KT_IQ3_XXS)
DK_GEMV2K_KERNEL(dk_gemv2k_iq3_s, DK_KT_IQ3_S)
DK_GEMV2K_KERNEL(dk_gemv2k_iq2_xxs, DK_KT_IQ2_XXS)
DK_GEMV2K_KERNEL(dk_gemv2k_iq2_xs, DK_KT_IQ2_XS)
DK_GEMV2K_KERNEL(dk_gemv2k_iq2_s, DK_KT_IQ2_S)

// ---- prompt-sized linear: NT tiles (the weight dtype is p.wdt) ------------------------
extern "C" __global__ void __launch_bounds__(DK_GEMM_THREADS) dk_gemm_f32_nt(const __grid_constant__ dk_kp_gemm p) { dk_grid_wait(); dk_gemm_simt<true>(p); }
extern "C" __global__ void __launch_bounds__(DK_GEMM_THREADS) dk_gemm_tc_f16_nt(const __grid_constant__ dk_kp_gemm p) { dk_grid_wait(); dk_gemm_tc<DK_KT_F16, true>(p); }
extern "C" __global__ void __launch_bounds__(DK_GEMM_THREADS) dk_gemm_tc_bf16_nt(const __grid_constant__ dk_kp_gemm p) { dk_grid_wait(); dk_gemm_tc<DK_KT_BF16, true>(p); }
// an f32 x rounded to f16 / bf16 (by the host, into a scratch copy) for the
// tensor cores, the output in f32: the prompt path without cuBLAS, with the
// same roundings as the cuBLAS one (backends/cuda.h, dk__cuda_linear_tc).
// Not yet run on a GPU: taken under DEVKIT_CUDA_PROMPT_TC=1 only.
extern "C" __global__ void __launch_bounds__(DK_GEMM_THREADS) dk_gemm_tc_f16_nt_o32(const __grid_constant__ dk_kp_gemm p) { dk_grid_wait(); dk_gemm_tc<DK_KT_F16, true, DK_KT_F32>(p); }
extern "C" __global__ void __launch_bounds__(DK_GEMM_THREADS) dk_gemm_tc_bf16_nt_o32(const __grid_constant__ dk_kp_gemm p) { dk_grid_wait(); dk_gemm_tc<DK_KT_BF16, true, DK_KT_F32>(p); }
// the same four on mma.sync with cp.async stages (gemm.cuh, dk_gemm_mma)
// where every copy is a whole aligned 16 bytes. Not yet run on a GPU:
// taken under DEVKIT_CUDA_MMA=1 only (backends/cuda.h, dk__cuda_mma_kid).
extern "C" __global__ void __launch_bounds__(DK_GEMM_THREADS) dk_gemm_mma_f16_nt(const __grid_constant__ dk_kp_gemm p) { dk_grid_wait(); dk_gemm_mma<DK_KT_F16, true>(p); }
extern "C" __global__ void __launch_bounds__(DK_GEMM_THREADS) dk_gemm_mma_bf16_nt(const __grid_constant__ dk_kp_gemm p) { dk_grid_wait(); dk_gemm_mma<DK_KT_BF16, true>(p); }
extern "C" __global__ void __launch_bounds__(DK_GEMM_THREADS) dk_gemm_mma_f16_nt_o32(const __grid_constant__ dk_kp_gemm p) { dk_grid_wait(); dk_gemm_mma<DK_KT_F16, true, DK_KT_F32>(p); }
extern "C" __global__ void __launch_bounds__(DK_GEMM_THREADS) dk_gemm_mma_bf16_nt_o32(const __grid_constant__ dk_kp_gemm p) { dk_grid_wait(); dk_gemm_mma<DK_KT_BF16, true, DK_KT_F32>(p); }
