// kernels/matmul.cu — dk_matmul (NumPy semantics: 1-D promotion, batch
// broadcasting) for f32, f16 and bf16: the NN form of the tiled kernels in
// gemm.cuh. f32 runs on the SIMT f32 kernel (f32-accurate); f16 and bf16 on
// the tensor-core kernel (inputs used as stored, f32 accumulation, one
// rounding at the store).
//
// Launch geometry and indexing: see gemm.cuh. The host passes M, N, K after
// 1-D promotion (a 1-D a is one row, a 1-D b one column: ldb = 1), lda and
// ldb from the operands' row strides, ldc = N, and the batch dims of the
// output with per-operand strides (0 where an operand broadcasts).
#include "gemm.cuh"

extern "C" __global__ void __launch_bounds__(DK_GEMM_THREADS) dk_gemm_f32_nn(const __grid_constant__ dk_kp_gemm p) { dk_grid_wait(); dk_gemm_simt<false>(p); }
// f16 NN fits in 128 registers without spilling (checked for every target by
// the build's spill check), so it asks for two blocks per SM; the others spill
// under that cap and run one block per SM.
extern "C" __global__ void __launch_bounds__(DK_GEMM_THREADS, 2) dk_gemm_tc_f16_nn(const __grid_constant__ dk_kp_gemm p) { dk_grid_wait(); dk_gemm_tc<DK_KT_F16, false>(p); }
extern "C" __global__ void __launch_bounds__(DK_GEMM_THREADS) dk_gemm_tc_bf16_nn(const __grid_constant__ dk_kp_gemm p) { dk_grid_wait(); dk_gemm_tc<DK_KT_BF16, false>(p); }
// on mma.sync with cp.async stages (gemm.cuh): under DEVKIT_CUDA_MMA=1 only
// until a GPU runs it
extern "C" __global__ void __launch_bounds__(DK_GEMM_THREADS) dk_gemm_mma_f16_nn(const __grid_constant__ dk_kp_gemm p) { dk_grid_wait(); dk_gemm_mma<DK_KT_F16, false>(p); }
extern "C" __global__ void __launch_bounds__(DK_GEMM_THREADS) dk_gemm_mma_bf16_nn(const __grid_constant__ dk_kp_gemm p) { dk_grid_wait(); dk_gemm_mma<DK_KT_BF16, false>(p); }
