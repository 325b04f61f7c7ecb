#!/usr/bin/env bash
# tools/ci_cuda.sh — the CUDA backend's checks that need no GPU, for CI:
#   1. the fatbin header is current and its build is deterministic
#      (tools/gen_kernels.sh --check-determinism, when nvcc is present), and
#      git sees no difference in kernels/generated
#   2. backends/cuda.h's driver declarations match the toolkit's cuda.h, and
#      every kernel begins with dk_grid_wait() (programmatic dependent
#      launch lets a kernel start before the one before it has finished)
#   3. the host code against the mock driver, with ASan+UBSan
#      (tools/check_cuda_host.sh), the probe's notes without a driver, with
#      the stub library and with no GPU
#   4. kernels/quants.cuh's block decoders compiled for the host, against
#      the CPU's dequantization, and the rows-per-block GEMV built on them
#      (kernels/gemv2k.cuh) run on host threads against a double-precision
#      product (tools/cuda_mock/quants_host.cpp)
#   5. kernels/gemm_mma.cuh's GEMM and kernels/attn_flash.cuh's attention
#      run on the host, a thread per CUDA thread, their warp instructions
#      emulated (tools/cuda_mock/mma_host.cpp, flash_host.cpp)
set -euo pipefail
cd "$(dirname "$0")/.."
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [ -x "$NVCC" ]; then
  NVCC=$NVCC tools/gen_kernels.sh --check-determinism
  git diff --exit-code -- kernels/generated || { echo "[ci_cuda] kernels/generated is stale: commit the regenerated header"; exit 1; }
else
  echo "[ci_cuda] no nvcc: the fatbin header is not rebuilt"
fi
tools/check_cuda_decls.sh
nowait=$(grep -n '__global__' kernels/*.cu | grep -v '(const __grid_constant__ [a-z0-9_]* p) { dk_grid_wait();' || true)
[ -z "$nowait" ] || { echo "[ci_cuda] these kernels do not begin with dk_grid_wait():"; echo "$nowait"; exit 1; }
tools/check_cuda_host.sh
${CXX:-g++} -std=c++17 -O2 -ffp-contract=off -Wall -Wextra -Werror -Wno-unknown-pragmas -I. -o "${BUILD:-build}/quants_host" \
  tools/cuda_mock/quants_host.cpp -ldl -lm -lpthread
"${BUILD:-build}/quants_host"
${CXX:-g++} -std=c++17 -O1 -pthread -Wall -Wextra -Werror -Wno-unknown-pragmas -I. -o "${BUILD:-build}/mma_host" \
  tools/cuda_mock/mma_host.cpp -ldl -lm
"${BUILD:-build}/mma_host"
${CXX:-g++} -std=c++17 -O1 -pthread -Wall -Wextra -Werror -Wno-unknown-pragmas -I. -o "${BUILD:-build}/flash_host" \
  tools/cuda_mock/flash_host.cpp -ldl -lm
"${BUILD:-build}/flash_host"
echo "[ci_cuda] passed"
