#!/usr/bin/env bash
# tools/check_cuda_decls.sh — check backends/cuda.h's own driver API
# declarations against the CUDA toolkit's cuda.h and cudaTypedefs.h.
#
# backends/cuda.h declares the few driver types, constants and entry-point
# signatures it uses itself, so that users need no toolkit. This script
# compiles them next to the toolkit's headers and fails if any function
# pointer type is not compatible with cudaTypedefs.h's PFN_cu<name>_v<ABI>
# (the ABI version each entry point is fetched with), or any constant differs.
# A build-time/CI check only: the header never includes cuda.h.
#
#   tools/check_cuda_decls.sh      (CUDA_INCLUDE defaults to /usr/local/cuda/include)
set -euo pipefail
cd "$(dirname "$0")/.."
INC=${CUDA_INCLUDE:-/usr/local/cuda/include}
CC=${CC:-gcc}
[ -f "$INC/cuda.h" ] && [ -f "$INC/cudaTypedefs.h" ] || { echo "[check_cuda_decls] no cuda.h in $INC: skipped"; exit 0; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat > "$TMP/check.c" <<'C'
#include <cuda.h>
#include <cudaTypedefs.h>
#define DEVKIT_IMPLEMENTATION
#include "devkit.h"

#define DKC_SAME(ours, theirs, what) _Static_assert(__builtin_types_compatible_p(ours, theirs), what)
#define DKC_FN(name, ver, req, params) \
  DKC_SAME(__typeof__(((dk__cuda_api_t *)0)->name), PFN_cu##name##_v##ver, "cu" #name ": signature differs from PFN_cu" #name "_v" #ver);
DK_CUDA_API(DKC_FN)
DKC_SAME(__typeof__(((dk__cuda_api_t *)0)->Init), PFN_cuInit_v2000, "cuInit");
DKC_SAME(__typeof__(((dk__cuda_api_t *)0)->DriverGetVersion), PFN_cuDriverGetVersion_v2020, "cuDriverGetVersion");
DKC_SAME(__typeof__(((dk__cuda_api_t *)0)->GetErrorName), PFN_cuGetErrorName_v6000, "cuGetErrorName");
DKC_SAME(__typeof__(((dk__cuda_api_t *)0)->GetProcAddress), PFN_cuGetProcAddress_v12000, "cuGetProcAddress_v2");
DKC_SAME(dk_cu_result, CUresult, "CUresult");
DKC_SAME(dk_cu_ptr, CUdeviceptr, "CUdeviceptr");
DKC_SAME(dk_cu_device, CUdevice, "CUdevice");
DKC_SAME(dk_cu_ctx, CUcontext, "CUcontext");
DKC_SAME(dk_cu_module, CUmodule, "CUmodule");
DKC_SAME(dk_cu_function, CUfunction, "CUfunction");
DKC_SAME(dk_cu_stream, CUstream, "CUstream");
DKC_SAME(dk_cu_event, CUevent, "CUevent");
DKC_SAME(dk_cu_mempool, CUmemoryPool, "CUmemoryPool");
DKC_SAME(dk_cu_graph, CUgraph, "CUgraph");
DKC_SAME(dk_cu_graph_exec, CUgraphExec, "CUgraphExec");
_Static_assert(sizeof(CUuuid) == 16, "CUuuid is 16 bytes");
#include <stddef.h>
#define DKC_FIELD(ours, f, theirs, g) _Static_assert(offsetof(ours, f) == offsetof(theirs, g) && \
  sizeof(((ours *)0)->f) == sizeof(((theirs *)0)->g), #ours "." #f " differs from " #theirs "." #g);
_Static_assert(sizeof(dk_cu_launch_attr) == sizeof(CUlaunchAttribute), "dk_cu_launch_attr size");
DKC_FIELD(dk_cu_launch_attr, id, CUlaunchAttribute, id)
DKC_FIELD(dk_cu_launch_attr, value, CUlaunchAttribute, value)
DKC_FIELD(dk_cu_launch_attr, value.flag, CUlaunchAttribute, value.programmaticStreamSerializationAllowed)
_Static_assert(sizeof(dk_cu_launch_config) == sizeof(CUlaunchConfig), "dk_cu_launch_config size");
DKC_FIELD(dk_cu_launch_config, gx, CUlaunchConfig, gridDimX)
DKC_FIELD(dk_cu_launch_config, bz, CUlaunchConfig, blockDimZ)
DKC_FIELD(dk_cu_launch_config, smem, CUlaunchConfig, sharedMemBytes)
DKC_FIELD(dk_cu_launch_config, stream, CUlaunchConfig, hStream)
DKC_FIELD(dk_cu_launch_config, attrs, CUlaunchConfig, attrs)
DKC_FIELD(dk_cu_launch_config, nattrs, CUlaunchConfig, numAttrs)

#define DKC_EQ(a, b) _Static_assert((a) == (b), #a " != " #b);
DKC_EQ(DK_CU_SUCCESS, CUDA_SUCCESS)
DKC_EQ(DK_CU_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_VALUE)
DKC_EQ(DK_CU_ERROR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY)
DKC_EQ(DK_CU_ERROR_STUB_LIBRARY, CUDA_ERROR_STUB_LIBRARY)
DKC_EQ(DK_CU_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE)
DKC_EQ(DK_CU_ERROR_PEER_ACCESS_ALREADY_ENABLED, CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
DKC_EQ(DK_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
DKC_EQ(DK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
DKC_EQ(DK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
DKC_EQ(DK_CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)
DKC_EQ(DK_CU_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING)
DKC_EQ(DK_CU_EVENT_DISABLE_TIMING, CU_EVENT_DISABLE_TIMING)
DKC_EQ(DK_CU_MEMHOSTALLOC_PORTABLE, CU_MEMHOSTALLOC_PORTABLE)
DKC_EQ(DK_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
DKC_EQ(DK_CU_STREAM_CAPTURE_MODE_RELAXED, CU_STREAM_CAPTURE_MODE_RELAXED)
DKC_EQ(DK_CU_GET_PROC_ADDRESS_DEFAULT, CU_GET_PROC_ADDRESS_DEFAULT)
DKC_EQ(DK_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
DKC_EQ(0, CU_GET_PROC_ADDRESS_SUCCESS)

int main(void) { return 0; }
C
$CC -std=c11 -Wall -Wextra -Werror -I. -I"$INC" -o "$TMP/check" "$TMP/check.c" -ldl -lm -lpthread
N=$(grep -c '^  X(' backends/cuda.h || true)
echo "[check_cuda_decls] backends/cuda.h matches $INC/cuda.h: $((N + 4)) entry points, 9 types, 17 constants, 2 launch structs"
