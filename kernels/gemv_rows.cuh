// kernels/gemv_rows.cuh — the end every rows-per-block GEMV of linear.cu
// shares (dk_gemv2, dk_gemv2n/s, dk_gemv2k). tools/cuda_mock/quants_host.cpp
// includes it too, with its own warp reduction.
#pragma once

// The end of a rows-per-block GEMV's rows [n0, n0 + R): each warp's sums to
// red, then thread r * M + m adds the warps' and stores out[m][n0 + r],
// times scale(m) (the folded norm's 1/rms; 1 otherwise), plus the bias.
// Both barriers are the whole block's.
template <int R, typename S>
DK_DEV void dk_gemv_rows_store(const dk_kp_gemv &p, int64_t n0, const float (&acc)[R][DK_GEMV_MAXM],
                               float (*red)[R][DK_GEMV_MAXM], S scale) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, M = (int)p.M;
#pragma unroll
  for (int r = 0; r < R; r++)
#pragma unroll
    for (int m = 0; m < DK_GEMV_MAXM; m++) {
      if (m >= M) break;
      const float v = dk_warp_reduce(acc[r][m], dk_op_sum());
      if (lane == 0) red[warp][r][m] = v;
    }
  __syncthreads();
  if (tid < R * M) {
    const int r = tid / M, m = tid - r * M;
    const int64_t n = n0 + r;
    if (n < p.N) {
      float v = 0.0f;
#pragma unroll
      for (int w = 0; w < DK_GEMV_THREADS / 32; w++) v += red[w][r][m];
      v *= scale(m);
      if (p.has_bias) v += dk_ld_rt((const void *)p.bias, n, p.bdt);
      dk_st_rt((void *)p.out, (int64_t)m * p.N + n, v, p.odt);
    }
  }
  __syncthreads();   // red is rewritten by the next rows
}
