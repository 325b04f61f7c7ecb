// kernels/gemm_mma.cuh — dk_gemm_mma: the tensor-core GEMM for machines without cuBLAS (issue 20
// part 3), for 16-bit operands that can be copied as they are: A (x) f16 or
// bf16, B the same type (NT: W rows, the f16/bf16 weights or the K-quant
// slabs the prompt path dequantizes; NN: a dense [K, N] matrix). f32
// accumulation; the output in OT (AT, or f32 where an f32 x was rounded for
// the tensor cores).
//
// Against dk_gemm_tc (WMMA, tiles staged through registers, 23 % of cuBLAS
// at 4096^3 on an H100, issue 20), three changes:
// * cp.async: global -> shared without registers, two shared stages, the
//   next k-tile in flight while the tensor cores work on this one;
// * mma.sync.m16n8k16 fed by ldmatrix (x4; .trans for NN's B), so a warp's
//   operands come from shared memory in six ldmatrix a k-step (16 mma);
// * the accumulators go straight from registers to C (no shared staging).
//
// Geometry as dk_gemm_tc's (the host launches both alike): DK_GEMM_THREADS
// (256) threads = 8 warps, a 128 x 128 tile of C a block; warp w computes
// rows (w / 4) * 64 ... + 63, columns (w % 4) * 32 ... + 31: 4 m16 x 4 n8
// mma tiles, 64 f32 accumulators a thread. K by BK = 32 (two k16 steps).
//
// Shared memory (static, 40 KB): 2 stages of A [128][40] halves and B
// (NT: [128][40]; NN: [32][136]). A row pitch of 80 bytes (272 for NN's B)
// puts the 8 rows an ldmatrix reads at once on 8 different 16-byte bank
// groups: no conflicts.
//
// The host takes this kernel only where every copy is a whole, aligned 16
// bytes: K a multiple of 8, A's rows (lda) and batch offsets multiples of 8
// elements, A and B 16-byte aligned, B's rows likewise (NT: b_row_bytes %
// 16; NN: ldb % 8 and N % 8). Rows past M or N and values past K are
// copied as zeros (cp.async's source size 0), so partial tiles add nothing.
//
// Fragment layouts (PTX ISA, mma.m16n8k16, g = lane / 4, t = lane % 4):
//   A: a0 (row g, k 2t..2t+1), a1 (row g + 8, same k), a2 (row g, k 2t + 8
//      ..), a3 (row g + 8, k 2t + 8 ..);
//   B: b0 (k 2t..2t+1, column g), b1 (k 2t + 8 .., column g);
//   C: c0, c1 (row g, columns 2t, 2t + 1), c2, c3 (row g + 8, the same).
// ldmatrix.x4 gives register i the 8x8 matrix whose row addresses lanes 8i
// ... 8i + 7 supply, a lane holding (row lane / 4, elements 2 (lane % 4),
// + 1) of it; .trans the transposed.
//
// tools/cuda_mock/mma_host.cpp runs this very code on the host (DK_MMA_HOST:
// a thread per CUDA thread, the warp-wide ldmatrix and mma emulated as the
// PTX ISA defines them) against a double-precision product, so that the
// index arithmetic is checked where no GPU is.
#pragma once

#define DK_MMA_BK 32
#define DK_MMA_LDK (DK_MMA_BK + 8)       // halves a row of A and of NT's B
#define DK_MMA_LDN (DK_GEMM_BN + 8)      // halves a row of NN's B

#ifndef DK_MMA_HOST
typedef uint32_t dk_saddr;   // a shared-memory address
DK_DEV dk_saddr dk_smem_addr(const void *p) { return (dk_saddr)__cvta_generic_to_shared(p); }

// 16 bytes global -> shared, the source's first `bytes` (16 or 0: zeros)
DK_DEV void dk_cp_async16(dk_saddr dst, const void *src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}
DK_DEV void dk_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> DK_DEV void dk_cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

DK_DEV void dk_ldsm_x4(uint32_t (&r)[4], dk_saddr addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
DK_DEV void dk_ldsm_x4_t(uint32_t (&r)[4], dk_saddr addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

template <int AT> DK_DEV void dk_mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (AT == DK_KT_F16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif

template <int AT, bool NT, int OT = AT> __device__ void dk_gemm_mma(const dk_kp_gemm &p) {
#if defined(DK_MMA_HOST) || (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800)
  __shared__ __align__(128) uint16_t sA[2][DK_GEMM_BM * DK_MMA_LDK];
  __shared__ __align__(128) uint16_t sB[2][NT ? DK_GEMM_BN * DK_MMA_LDK : DK_MMA_BK * DK_MMA_LDN];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wm = warp >> 2, wn = warp & 3;
  const int g = lane >> 2, t4 = lane & 3;
  const int64_t M = p.M, N = p.N, K = p.K;
  const int64_t ktiles = (K + DK_MMA_BK - 1) / DK_MMA_BK;

  dk_gemm_tiles(p, [&](int64_t z, int64_t aoff, int64_t boff, int64_t m0, int64_t n0) {
    const uint16_t *A = (const uint16_t *)p.a + aoff;
    const uint8_t *B = (const uint8_t *)p.b + (NT ? 0 : boff * 2);
    void *C = (void *)p.c;
    const int64_t cbase = z * M * N;
    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int j = 0; j < 4; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) acc[i][j][e] = 0.0f;

    // k-tile kt into stage st: 512 copies of 16 bytes each for A and B,
    // two a thread (A/NT-B copy q -> row q / 4, k (q % 4) * 8; NN-B:
    // k row q / 16, n (q % 16) * 8)
    auto load = [&](int64_t kt, int st) {
      const int64_t k0 = kt * DK_MMA_BK;
#pragma unroll
      for (int h = 0; h < 2; h++) {
        const int q = tid + DK_GEMM_THREADS * h, r = q >> 2, kg = (q & 3) * 8;
        const int64_t k = k0 + kg, m = m0 + r;
        const bool ina = m < M && k < K;
        dk_cp_async16(dk_smem_addr(&sA[st][r * DK_MMA_LDK + kg]), ina ? (const void *)(A + m * p.lda + k) : (const void *)A,
                      ina ? 16 : 0);
        if constexpr (NT) {
          const int64_t n = n0 + r;
          const bool inb = n < N && k < K;
          dk_cp_async16(dk_smem_addr(&sB[st][r * DK_MMA_LDK + kg]),
                        inb ? (const void *)(B + n * p.b_row_bytes + k * 2) : (const void *)B, inb ? 16 : 0);
        } else {
          const int kr = q >> 4, ng = (q & 15) * 8;
          const int64_t kk = k0 + kr, n = n0 + ng;
          const bool inb = kk < K && n < N;
          dk_cp_async16(dk_smem_addr(&sB[st][kr * DK_MMA_LDN + ng]),
                        inb ? (const void *)((const uint16_t *)B + kk * p.ldb + n) : (const void *)B, inb ? 16 : 0);
        }
      }
    };

    load(0, 0);
    dk_cp_async_commit();
    for (int64_t kt = 0; kt < ktiles; kt++) {
      const int st = (int)(kt & 1);
      if (kt + 1 < ktiles) load(kt + 1, st ^ 1);   // into the stage the last pass read (it ended in a barrier)
      dk_cp_async_commit();                          // (an empty group on the last pass)
      dk_cp_async_wait<1>();                         // this thread's copies of tile kt have landed
      __syncthreads();                               // and everyone's
#pragma unroll
      for (int kk = 0; kk < DK_MMA_BK; kk += 16) {
        uint32_t af[4][4], bf[2][4];
        // A: the four m16 tiles of the warp's 64 rows; lane -> row
        // (lane % 16), k (lane / 16) * 8 of the 16 x 16 tile
#pragma unroll
        for (int i = 0; i < 4; i++)
          dk_ldsm_x4(af[i], dk_smem_addr(&sA[st][(wm * 64 + i * 16 + (lane & 15)) * DK_MMA_LDK + kk + (lane >> 4) * 8]));
        // B: two pairs of n8 tiles of the warp's 32 columns; bf[jp] =
        // {b0, b1} of tile 2 jp, then {b0, b1} of tile 2 jp + 1
#pragma unroll
        for (int jp = 0; jp < 2; jp++) {
          const int nb = wn * 32 + jp * 16;
          if constexpr (NT) {
            // matrices (n, k): (nb, kk), (nb, kk + 8), (nb + 8, kk), (nb + 8, kk + 8)
            dk_ldsm_x4(bf[jp], dk_smem_addr(&sB[st][(nb + (lane & 7) + ((lane >> 4) << 3)) * DK_MMA_LDK + kk +
                                                     ((lane >> 3) & 1) * 8]));
          } else {
            // stored (k, n), transposed: (kk, nb), (kk + 8, nb), (kk, nb + 8), (kk + 8, nb + 8)
            dk_ldsm_x4_t(bf[jp], dk_smem_addr(&sB[st][(kk + (lane & 7) + ((lane >> 3) & 1) * 8) * DK_MMA_LDN + nb +
                                                       (lane >> 4) * 8]));
          }
        }
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
          for (int j = 0; j < 4; j++) dk_mma16816<AT>(acc[i][j], af[i], bf[j >> 1][(j & 1) * 2], bf[j >> 1][(j & 1) * 2 + 1]);
      }
      __syncthreads();   // every warp is done with stage st before the next pass copies into it
    }
    dk_cp_async_wait<0>();

    // epilogue: c0, c1 at (row g, columns 2 t4, + 1), c2, c3 eight rows down
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int j = 0; j < 4; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int64_t m = m0 + wm * 64 + i * 16 + g + (e >> 1) * 8, n = n0 + wn * 32 + j * 8 + t4 * 2 + (e & 1);
          if (m < M && n < N) {
            float v = acc[i][j][e];
            if (p.has_bias) v += dk_ld_rt((const void *)p.bias, n, p.biasdt);
            dk_st<OT>(C, cbase + m * p.ldc + n, v);
          }
        }
  });
#else
  // not built for these architectures (the fatbin holds sm_80+ only); the
  // host never launches it there
  (void)p;
  __trap();
#endif
}
