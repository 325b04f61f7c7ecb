// kernels/gemm_walk.cuh — how the tensor-core GEMMs (gemm.cuh's dk_gemm_tc,
// gemm_mma.cuh's dk_gemm_mma) walk their tiles: batch items over grid.z,
// 128-row tiles over grid.y and 128-column tiles over grid.x, each a
// grid-stride loop (the host caps the grid), with the batch item's element
// offsets into A and B. Plain integer code: tools/cuda_mock/mma_host.cpp
// includes it with its own blockIdx and gridDim. (dk_gemm_simt walks the
// same way in its own loops: it ran on GPUs as it is, and taking this
// function changes its machine code, where dk_gemm_tc's stays byte for
// byte the same.)
#pragma once

// Batch item z: A's element offset = sum_d idx_d * abstr[d] where idx is z
// decomposed row-major over bshape[0..nbdims); B's likewise with bbstr
// (dk__matmul_batch_offsets' rule)
DK_DEV void dk_gemm_batch(const dk_kp_gemm &p, int64_t z, int64_t *ao, int64_t *bo) {
  int64_t rem = z, a = 0, b = 0;
  for (int d = p.nbdims - 1; d >= 0; d--) {
    int64_t idx = rem % p.bshape[d];
    rem /= p.bshape[d];
    a += idx * p.abstr[d];
    b += idx * p.bbstr[d];
  }
  *ao = a;
  *bo = b;
}

// tile(z, aoff, boff, m0, n0) for each tile of C this block computes
template <typename F> DK_DEV void dk_gemm_tiles(const dk_kp_gemm &p, F &&tile) {
  const int64_t mtiles = (p.M + DK_GEMM_BM - 1) / DK_GEMM_BM, ntiles = (p.N + DK_GEMM_BN - 1) / DK_GEMM_BN;
  for (int64_t z = blockIdx.z; z < p.batch; z += gridDim.z) {
    int64_t aoff, boff;
    dk_gemm_batch(p, z, &aoff, &boff);
    for (int64_t mt = blockIdx.y; mt < mtiles; mt += gridDim.y)
      for (int64_t nt = blockIdx.x; nt < ntiles; nt += gridDim.x) tile(z, aoff, boff, mt * DK_GEMM_BM, nt * DK_GEMM_BN);
  }
}
