#!/usr/bin/env bash
# tools/ci_cuda.sh — the CUDA backend's checks that need no GPU, for CI:
#   1. the fatbin header is current and its build is deterministic
#      (tools/gen_kernels.sh --check-determinism, when nvcc is present), and
#      git sees no difference in kernels/generated
#   2. backends/cuda.h's driver declarations match the toolkit's cuda.h
#   3. the host code against the mock driver, with ASan+UBSan
#      (tools/check_cuda_host.sh), the probe's notes without a driver, with
#      the stub library and with no GPU
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
tools/check_cuda_host.sh
echo "[ci_cuda] passed"
