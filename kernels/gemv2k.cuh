// kernels/gemv2k.cuh — linear.cu's dk_gemv2k_<type> kernels' code.
// tools/cuda_mock/quants_host.cpp runs it on the host (host_block.h's
// threads) against a double-precision product of the CPU's dequantized
// weights, for every format it takes.
#pragma once

// ---- decode GEMV of the other block formats, rows per block ---------------------------
// dk_gemv_w_more (linear.cu) gives one block to each output value and decodes a
// value at a time, the block's header again for every value: on an H200 a
// 1B Q4_K_M model decoded at 179 tok/s against q4_0's 424 (2026-11-26).
// dk_gemv2k_<type> is dk_gemv2's layout for them (chosen by the host for
// f32 x, aligned to 16 bytes, M <= DK_GEMV_MAXM; DEVKIT_CUDA_GEMVK=1 until it
// has run on a GPU): a block of DK_GEMV_THREADS threads takes
// DK_GEMV2K_ROWS rows of W and all of K in pieces of 8 values, thread i
// pieces i, i + 128, ...; x's 8 values are read once a piece for all the
// rows. A piece is 8 consecutive values of one block (32) or super-block
// (256), so they share its scales (quants.cuh's dkq_piece decodes them once
// for q4_K, q5_K and q6_K). The values are dkq_value's, bit for bit (the
// reference dequantization);
// the products accumulate in f32 as dk_gemv2's, in another order than
// dk_gemv_w_more's.
template <int DT> __device__ void dk_gemv2k_impl(const dk_kp_gemv &p) {
  constexpr int R = DK_GEMV2K_ROWS, NT = DK_GEMV_THREADS;
  constexpr int PB = (DT <= DK_KT_Q5_1 || DT == DK_KT_IQ4_NL ? 32 : 256) / 8;   // pieces a block
  __shared__ float red[NT / 32][R][DK_GEMV_MAXM];
  const int tid = threadIdx.x, M = (int)p.M, bb = dkq_bytes(DT);
  const int64_t npc = p.K / 8;
  const float *x = (const float *)p.x;
  for (int64_t n0 = (int64_t)blockIdx.x * R; n0 < p.N; n0 += (int64_t)gridDim.x * R) {
    const uint8_t *wr[R];
    float acc[R][DK_GEMV_MAXM];
#pragma unroll
    for (int r = 0; r < R; r++) {
      wr[r] = (const uint8_t *)p.w + (n0 + r < p.N ? n0 + r : p.N - 1) * p.w_row_bytes;   // a row past N repeats the last, unstored
#pragma unroll
      for (int m = 0; m < DK_GEMV_MAXM; m++) acc[r][m] = 0.0f;
    }
    for (int64_t pc = tid; pc < npc; pc += NT) {
      const int64_t blk = pc / PB;
      const int j0 = (int)(pc - blk * PB) * 8;
      float xv[DK_GEMV_MAXM][8];
#pragma unroll
      for (int m = 0; m < DK_GEMV_MAXM; m++) {
        if (m >= M) break;
        const float4 x0 = __ldg((const float4 *)(x + m * p.K + pc * 8)), x1 = __ldg((const float4 *)(x + m * p.K + pc * 8 + 4));
        xv[m][0] = x0.x; xv[m][1] = x0.y; xv[m][2] = x0.z; xv[m][3] = x0.w;
        xv[m][4] = x1.x; xv[m][5] = x1.y; xv[m][6] = x1.z; xv[m][7] = x1.w;
      }
#pragma unroll
      for (int r = 0; r < R; r++) {
        const uint8_t *b = wr[r] + blk * bb;
        float v[8];
        dkq_piece<DT>(b, j0, v);
#pragma unroll
        for (int m = 0; m < DK_GEMV_MAXM; m++) {
          if (m >= M) break;
          float a = acc[r][m];
#pragma unroll
          for (int i = 0; i < 8; i++) a = fmaf(v[i], xv[m][i], a);
          acc[r][m] = a;
        }
      }
    }
    dk_gemv_rows_store<R>(p, n0, acc, red, [](int) { return 1.0f; });
  }
}
