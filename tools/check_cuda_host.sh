#!/usr/bin/env bash
# tools/check_cuda_host.sh — check the CUDA backend's host code without a GPU:
# builds the mock driver (tools/cuda_mock/libcuda_mock.c) and the driver
# program (tools/cuda_mock/host_check.c) with AddressSanitizer and
# UndefinedBehaviorSanitizer, runs it, and fails on any failed check, any
# complaint of the mock (a call without a current context, a range outside
# an allocation, a leaked allocation, a wrong ABI version) or any sanitizer
# report. Also checks the no-driver and stub-library paths of the probe, and
# runs the suite's tests that need no kernel result (build/tests, if built)
# with the mock as cuda:0.
set -euo pipefail
cd "$(dirname "$0")/.."
CC=${CC:-gcc}
OUT=${BUILD:-build}/cuda_mock
mkdir -p "$OUT"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
$CC -std=c11 -Wall -Wextra -Werror $SAN -fPIC -shared -pthread -o "$OUT/libcuda_mock.so" tools/cuda_mock/libcuda_mock.c
$CC -std=c11 -Wall -Wextra -Werror $SAN -o "$OUT/host_check" tools/cuda_mock/host_check.c -ldl -lm -lpthread
export ASAN_OPTIONS=detect_leaks=1
LOG="$OUT/host_check.log"
status=0
# first without CUDA graphs (DEVKIT_CUDA_GRAPH=0: the core re-runs a
# recording's calls, positions and ids come back to the host)
DEVKIT_CUDA_GRAPH=0 "$OUT/host_check" "$PWD/$OUT/libcuda_mock.so" > "$LOG" 2>&1 || status=$?
# run NAME [VAR=VALUE...]: host_check with the mock printing each launch into
# $OUT/host_check_NAME.log, everything else appended to $LOG
run() {
  local name=$1; shift
  env "$@" MOCK_CUDA_VERBOSE=1 "$OUT/host_check" "$PWD/$OUT/libcuda_mock.so" > "$OUT/host_check_$name.log" 2>&1 || status=$?
  grep -v "^libcuda_mock: launch " "$OUT/host_check_$name.log" >> "$LOG" || true
}
# launched NAME KERNEL-PREFIX WHAT: that run launched (or captured) the kernel
launched() {
  local n
  n=$(grep -c "^libcuda_mock: launch $2" "$OUT/host_check_$1.log" || true)
  echo "$3: $n launches of $2*"
  [ "${n:-0}" -gt 0 ] || { echo "[check_cuda_host] $3 launched no $2 kernel"; status=1; }
}
# the fused decode kernels of dk_rmsnorm_linear and dk_swiglu_linear (on
# by default): their launches' parameters checked, and
# they must be taken
run norm DEVKIT_CUDA_FUSED_GEMV=1
launched norm dk_gemv2n_ "DEVKIT_CUDA_FUSED_GEMV=1"
launched norm dk_gemv2s_ "DEVKIT_CUDA_FUSED_GEMV=1"
# CUDA graphs and the device-side positions (the default since 2026-11-28):
# captures, replays by the mock, the graph's status words and scratch, no leaks
run graph
launched graph dk_index_copy_scatter "CUDA graphs"
# the prompt product of f32 x on tensor cores without cuBLAS (off by
# default until it runs on a GPU): taken for f16/bf16/q8_0/q4_0 weights and
# for a K-quant through its dequantized slab
run tc DEVKIT_CUDA_PROMPT_TC=1
launched tc dk_gemm_tc_f16_nt_o32 "DEVKIT_CUDA_PROMPT_TC=1"
launched tc dk_gemm_tc_bf16_nt_o32 "DEVKIT_CUDA_PROMPT_TC=1"
launched tc dk_dequant_rows "DEVKIT_CUDA_PROMPT_TC=1"
# the same on the mma.sync kernels, and dk_matmul's NN form (off by default
# until they run on a GPU)
run mma DEVKIT_CUDA_PROMPT_TC=1 DEVKIT_CUDA_MMA=1 DEVKIT_CUBLAS=off
launched mma dk_gemm_mma_f16_nt_o32 "DEVKIT_CUDA_MMA=1"
launched mma dk_gemm_mma_f16_nn "DEVKIT_CUDA_MMA=1"
# the decode product of the other block formats, rows per block (off by
# default until it runs on a GPU)
run gemvk DEVKIT_CUDA_GEMVK=1
launched gemvk dk_gemv2k_q4_k "DEVKIT_CUDA_GEMVK=1"
# prompt attention on tensor cores (off by default until it runs on a GPU)
run flash DEVKIT_CUDA_FLASH=1
launched flash dk_attn_flash_f16 "DEVKIT_CUDA_FLASH=1"
# dk_attention_window in one launch (off by default until it runs on a GPU)
run win DEVKIT_CUDA_ATTN_WINDOW=1
launched win dk_attn_rows_win_ "DEVKIT_CUDA_ATTN_WINDOW=1"
run win1 DEVKIT_CUDA_ATTN_WINDOW=1 DEVKIT_CUDA_ATTN_ROWS=one
launched win1 dk_attn_split_win_ "DEVKIT_CUDA_ATTN_WINDOW=1 DEVKIT_CUDA_ATTN_ROWS=one"
run win0 DEVKIT_CUDA_ATTN_WINDOW=1 DEVKIT_CUDA_ATTN=rows
launched win0 dk_attention_win_ "DEVKIT_CUDA_ATTN_WINDOW=1 DEVKIT_CUDA_ATTN=rows"
cat "$LOG"
if grep -q "libcuda_mock:" "$LOG"; then echo "[check_cuda_host] the mock driver complained (above)"; status=1; fi
if grep -q "ERROR: AddressSanitizer\|runtime error:\|ERROR: LeakSanitizer" "$LOG"; then echo "[check_cuda_host] sanitizer report (above)"; status=1; fi

# the probe's notes without a driver, and with the toolkit's stub
printf '#define DEVKIT_IMPLEMENTATION\n#include "devkit.h"\n#include <stdio.h>\nint main(void) { printf("%%d|%%s\\n", dk_device_count(DK_CUDA), dk_backend_note(DK_CUDA)); dk_shutdown(); return 0; }\n' > "$OUT/note.c"
$CC -std=c11 -Wall -Wextra -Werror $SAN -I. -o "$OUT/note" "$OUT/note.c" -ldl -lm -lpthread
n=$(DEVKIT_CUDA_LIBRARY=/nonexistent/libcuda.so.1 "$OUT/note")
echo "no driver:    $n"
case "$n" in "0|/nonexistent/libcuda.so.1 not found"*) ;; *) echo "[check_cuda_host] unexpected no-driver note"; status=1 ;; esac
STUB=${CUDA_STUB:-/usr/local/cuda/lib/stubs/libcuda.so}
if [ -f "$STUB" ]; then
  n=$(DEVKIT_CUDA_LIBRARY=$STUB "$OUT/note")
  echo "stub library: $n"
  case "$n" in "0|cuInit: CUDA_ERROR_STUB_LIBRARY (34)"*) ;; *) echo "[check_cuda_host] unexpected stub note"; status=1 ;; esac
fi
# cuBLAS: which library the prompt GEMMs use, and why not (the note with a GPU)
MOCK=$PWD/$OUT/libcuda_mock.so
blas_note() { DEVKIT_CUDA_LIBRARY=$MOCK "$@" "$OUT/note"; }
expect_note() {   # expect_note LABEL PATTERN VAR=VALUE...
  label=$1 pat=$2; shift 2
  n=$(env "$@" DEVKIT_CUDA_LIBRARY=$MOCK "$OUT/note")
  echo "cuBLAS $label: $n"
  case "$n" in 2\|*$pat*) ;; *) echo "[check_cuda_host] unexpected cuBLAS note ($label)"; status=1 ;; esac
}
expect_note "found" "prompt GEMMs: cuBLAS 13.0.0 ($MOCK" DEVKIT_CUBLAS=$MOCK
expect_note "off" "prompt GEMMs: devkit's kernels (DEVKIT_CUBLAS=off)" DEVKIT_CUBLAS=off
expect_note "missing" "DEVKIT_CUBLAS=/nonexistent/libcublas.so.13: " DEVKIT_CUBLAS=/nonexistent/libcublas.so.13
expect_note "old" "is cuBLAS 10.0; devkit needs 11 or newer" DEVKIT_CUBLAS=$MOCK MOCK_CUBLAS_VERSION=10
expect_note "not cuBLAS" "lacks cublasCreate_v2" DEVKIT_CUBLAS=libm.so.6
echo "cuBLAS searched: $(blas_note env -u DEVKIT_CUBLAS)"
n=$(DEVKIT_CUDA_LIBRARY=$PWD/$OUT/libcuda_mock.so MOCK_CUDA_DEVICES=0 "$OUT/note")
echo "no GPU:       $n"
case "$n" in "0|cuInit: CUDA_ERROR_NO_DEVICE (100)"*) ;; *) echo "[check_cuda_host] unexpected no-GPU note"; status=1 ;; esac
# the suite's tests that need no kernel result (refusals, transfers, devices,
# threads, OOM, the embedding id check), on the mock as cuda:0 (a plain build
# of the mock: the runner is not built with ASan)
if [ -x "${BUILD:-build}/tests" ]; then
  $CC -std=c11 -O1 -g -fPIC -shared -pthread -o "$OUT/libcuda_mock_plain.so" tools/cuda_mock/libcuda_mock.c
  DEVKIT_CUDA_LIBRARY=$PWD/$OUT/libcuda_mock_plain.so MOCK_CUDA_MEM=1073741824 \
    "${BUILD:-build}/tests" --device cuda errors_ transfers_ devices_ threads_ placement_ tensors_ views_reshape profile_ \
    > "$OUT/suite.log" 2>&1 || true
  # and the encoder ops switched off: refused, naming the switch
  DEVKIT_CUDA_PDL=0 DEVKIT_CUDA_NEWOPS=0 DEVKIT_CUDA_LIBRARY=$PWD/$OUT/libcuda_mock_plain.so MOCK_CUDA_MEM=1073741824 \
    "${BUILD:-build}/tests" --device cuda errors_cuda_newops devices_op_table > "$OUT/suite_off.log" 2>&1 || true
  grep -E "passed" "$OUT/suite_off.log" || true
  tail -1 "$OUT/suite_off.log" | grep -q " 0 failed" || { echo "[check_cuda_host] DEVKIT_CUDA_NEWOPS=0 tests failed ($OUT/suite_off.log)"; status=1; }
  # dk_index_select's CUDA path (verified on an H200, 2026-11-26) with
  # its kernels emulated by the mock: parameters, the device-side id check and
  # its message at the next sync
  DEVKIT_CUDA_LIBRARY=$PWD/$OUT/libcuda_mock_plain.so MOCK_CUDA_MEM=1073741824 \
    "${BUILD:-build}/tests" --device cuda ops_index_select ops_slice devices_op_table > "$OUT/suite_gather.log" 2>&1 || true
  grep -E "passed" "$OUT/suite_gather.log" || true
  # prompt-sized products through cuBLAS (the mock's subset, in double) and
  # the copies/dequantization around them, with the pool and the free list
  for pool in 0 1; do
    MOCK_CUDA_NO_POOLS=$pool DEVKIT_CUBLAS=$PWD/$OUT/libcuda_mock_plain.so DEVKIT_CUDA_LIBRARY=$PWD/$OUT/libcuda_mock_plain.so \
      MOCK_CUDA_MEM=1073741824 "${BUILD:-build}/tests" --device cuda ops_linear_prompt ops_matmul > "$OUT/suite_blas.log" 2>&1 || true
    grep -E "passed" "$OUT/suite_blas.log" || true
    if ! tail -1 "$OUT/suite_blas.log" | grep -q " 0 failed" || grep -q "libcuda_mock:" "$OUT/suite_blas.log"; then
      echo "[check_cuda_host] cuBLAS-path tests failed (MOCK_CUDA_NO_POOLS=$pool, $OUT/suite_blas.log)"; grep -E "FAIL|libcuda_mock" "$OUT/suite_blas.log" | head; status=1
    fi
  done
  if ! tail -1 "$OUT/suite_gather.log" | grep -q "^4 passed, 0 failed" || grep -q "libcuda_mock:" "$OUT/suite_gather.log"; then
    echo "[check_cuda_host] dk_index_select tests failed on the mock ($OUT/suite_gather.log)"; status=1
  fi
  # programmatic dependent launch, the default on cc 9.0 (the mock's
  # device): every launch through cuLaunchKernelEx, whose config the mock
  # checks; DEVKIT_CUDA_PDL=0 launches the plain way (the NEWOPS=0 run above)
  MOCK_CUDA_REQUIRE_EX=1 DEVKIT_CUDA_LIBRARY=$PWD/$OUT/libcuda_mock_plain.so MOCK_CUDA_MEM=1073741824 \
    "${BUILD:-build}/tests" --device cuda ops_index_select profile_ops transfers_ > "$OUT/suite_pdl.log" 2>&1 || true
  grep -E "passed" "$OUT/suite_pdl.log" || true
  if ! tail -1 "$OUT/suite_pdl.log" | grep -q " 0 failed" || grep -q "libcuda_mock:" "$OUT/suite_pdl.log"; then
    echo "[check_cuda_host] programmatic-launch tests failed on the mock ($OUT/suite_pdl.log)"; grep -E "FAIL|libcuda_mock" "$OUT/suite_pdl.log" | head; status=1
  fi
  grep -E "^  (FAIL|skip)|passed|libcuda_mock" "$OUT/suite.log" || true
  if ! tail -1 "$OUT/suite.log" | grep -q " 0 failed" || grep -q "libcuda_mock:" "$OUT/suite.log"; then
    echo "[check_cuda_host] the suite's host-level tests failed on the mock ($OUT/suite.log)"; status=1
  fi
fi
[ $status = 0 ] && echo "[check_cuda_host] passed" || echo "[check_cuda_host] FAILED"
exit $status
