#!/usr/bin/env bash
# tools/gpu_check.sh — everything about the CUDA backend that needs a GPU, in
# one call that fits a 10-minute run on the lent machine:
#
#   1. the machine: nvidia-smi, driver, nvcc
#   2. ./build.sh (regenerates the fatbin only if this nvcc differs)
#   3. the whole suite on cuda:0 (and cuda:1, the second logical device)
#   4. the suite's op tests again with the free-list allocator
#      (DEVKIT_CUDA_NO_POOL=1) and with the bad-id / OOM tests
#   5. compute-sanitizer memcheck, racecheck and synccheck over the op tests
#      (where the runtime allows it: Firecracker yes, gVisor no)
#   6. the whole suite on vulkan:0 and vulkan:1 through NVIDIA's Vulkan
#      driver, with the validation layer
#   7. tools/gpu_perf on cuda:0 and vulkan:0: GEMV GB/s of every weight type
#      vs copy bandwidth, matmul vs cuBLAS
#   8. build/bench -d cuda:0 -d vulkan:0 -d cpu:0 --quick
#   9. tools/bench_1b.sh cuda:0 vulkan:0: the GPU issues' end-to-end rows
#      (synthetic 1B, 512-token prompt after a warm-up run, 128 decode
#      tokens; TYPES to narrow), then cuda:0 again with DEVKIT_CUBLAS=off
#  10. verify: the paths that are off until a GPU runs them (VERIFY=
#      "NAME ON OFF [@DEVICE] [VAR=VALUE...] TESTS[;...]", default: the
#      waiting ones below): for each, its tests, racecheck and memcheck, and the 1B
#      model (f16 unless MODEL=) with the switch on and off, alternating; flip the default
#      if clean and faster
#
#   tools/gpu_check.sh [STEP...]      steps: machine build suite alloc sanitize vulkan perf bench bench1b verify
#                                     (default: all but bench1b and verify)
#   SANITIZE_TESTS="ops_attention ops_linear" narrows the sanitizer step,
#   SANITIZE_TOOLS="racecheck" its tools, VULKAN_TESTS="ops_ models_" the
#   vulkan step's tests.
#
# The lent machine has NVIDIA's Vulkan driver but no loader. Fetch the
# loader and the validation layer once, here (.gl/ is git-ignored):
#   mkdir -p .gl /tmp/amd64/partial; o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
#   apt-get $o update; (cd .gl && apt-get $o download libvulkan1 vulkan-validationlayers libglvnd0 libegl1 libgl1 libglx0 libgles2 libopengl0)
# (NVIDIA's Vulkan driver library needs glvnd's: without them the loader
# reports VK_ERROR_INCOMPATIBLE_DRIVER)
# and name .gl in the device tool's `carry`; the vulkan step unpacks it.
#
# Logs go to /tmp/gpu_check (and, under the device tool, to $OUT as
# gpu_logs.tgz); the summary is printed last.
set -uo pipefail
cd "$(dirname "$0")/.."
LOGS=/tmp/gpu_check
mkdir -p "$LOGS"
STEPS=${*:-machine build suite alloc sanitize vulkan perf bench}
# the device tool brings back at most 8 files: the logs go to $OUT as one
# archive and the summary
[ -n "${OUT:-}" ] && trap 'tar -czf "$OUT/gpu_logs.tgz" -C "$LOGS" . 2>/dev/null; cp "$SUM" "$OUT/" 2>/dev/null || true' EXIT
SUM="$LOGS/summary.txt"
[ -n "${GPU_CHECK_APPEND:-}" ] || : > "$SUM"   # GPU_CHECK_APPEND=1: a second call in the same run adds to the summary
note() { echo "$*" | tee -a "$SUM"; }
has() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
export DKT_TIMEOUT=${DKT_TIMEOUT:-300}

# NVIDIA's Vulkan driver through the loader carried in .gl/ (see the top)
vk_setup() {
  if ! ldconfig -p | grep -q libvulkan.so.1 && ls .gl/*.deb > /dev/null 2>&1; then
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
  fi
  icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  [ -f "$icd" ] || icd=$(find /usr/local/nvidia /usr/share/vulkan /etc/vulkan -name 'nvidia_icd*.json' 2>/dev/null | head -1)
  [ -z "${VK_DRIVER_FILES:-}" ] && [ -n "$icd" ] && [ -f "$icd" ] && export VK_DRIVER_FILES=$icd
  return 0
}
vk_setup   # before the suite too: its cross-backend tests want a Vulkan device

if has machine; then
  { nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv; nvcc --version | tail -2; uname -r; } > "$LOGS/machine.log" 2>&1
  note "machine: $(nvidia-smi -L 2>/dev/null | head -1); driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
fi

if has build; then
  if ./build.sh > "$LOGS/build.log" 2>&1; then note "build: ok ($(grep -o 'fatbin: .*' "$LOGS/build.log" || echo 'fatbin header up to date'))"
  else note "build: FAILED (build.log)"; tail -20 "$LOGS/build.log"; exit 1; fi
  cc -O2 -std=c11 -Wall -Wextra -Werror -I. tools/gpu_perf.c -o build/gpu_perf -ldl -lm -lpthread >> "$LOGS/build.log" 2>&1 || note "gpu_perf: build FAILED"
fi

if has suite; then
  timeout 420 build/tests --device cuda > "$LOGS/suite.log" 2>&1
  note "suite on cuda: $(tail -1 "$LOGS/suite.log")"
  grep -E "^  (FAIL|skip)" "$LOGS/suite.log" | head -40 | tee -a "$SUM"
  grep -E "^  cuda|^  .*none" "$LOGS/suite.log" | head -5 | tee -a "$SUM"
fi

if has alloc; then
  DEVKIT_CUDA_NO_POOL=1 timeout 300 build/tests --device cuda ops_ errors_ tensors_ > "$LOGS/suite_nopool.log" 2>&1
  note "suite with the free-list allocator: $(tail -1 "$LOGS/suite_nopool.log")"
  grep -E "^  FAIL" "$LOGS/suite_nopool.log" | head -20 | tee -a "$SUM"
  DEVKIT_LOGICAL_DEVICES=cuda=1 timeout 200 build/tests --device cuda ops_linear ops_matmul > "$LOGS/suite_one_logical.log" 2>&1
  note "linear/matmul with one logical device: $(tail -1 "$LOGS/suite_one_logical.log")"
fi

if has sanitize; then
  if command -v compute-sanitizer > /dev/null; then
    for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
      # the runner forks a child per test: follow every process
      timeout 170 compute-sanitizer --tool $tool --target-processes all --error-exitcode 99 \
        build/tests --device cuda ${SANITIZE_TESTS:-ops_ errors_embedding} > "$LOGS/sanitize_$tool.log" 2>&1
      rc=$?
      errs=$(grep -c "========= \(Invalid\|Race\|Barrier\|Error\|.*hazard\)" "$LOGS/sanitize_$tool.log" || true)
      note "compute-sanitizer $tool: exit $rc, $errs report lines; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/sanitize_$tool.log" | sort | uniq -c | tr '\n' ' ')"
    done
  else
    note "compute-sanitizer: not on this machine"
  fi
fi

if has vulkan; then
  build/devices > "$LOGS/devices.log" 2>&1
  cat "$LOGS/devices.log" | tee -a "$SUM"
  timeout 300 build/tests --device vulkan ${VULKAN_TESTS:-} > "$LOGS/suite_vulkan.log" 2>&1
  note "suite on vulkan: $(tail -1 "$LOGS/suite_vulkan.log")"
  grep -E "^  vulkan|^  .*none|validation" "$LOGS/suite_vulkan.log" | head -5 | tee -a "$SUM"
  grep -E "^  (FAIL|skip)" "$LOGS/suite_vulkan.log" | head -40 | tee -a "$SUM"
fi

if has perf; then
  timeout 200 build/gpu_perf cuda:0 > "$LOGS/perf.log" 2>&1
  # issue 17's bar is on Vulkan too
  ldconfig -p | grep -q libvulkan.so.1 && { echo; timeout 200 build/gpu_perf vulkan:0; } >> "$LOGS/perf.log" 2>&1
  note "perf (targets: gemv >= 85 % of copy for every type, matmul >= 70 % of cuBLAS):"
  cat "$LOGS/perf.log" | tee -a "$SUM"
fi

if has bench; then
  timeout 240 build/bench -d cuda:0 -d vulkan:0 -d cpu:0 --quick > "$LOGS/bench.log" 2>&1
  note "bench: $(wc -l < "$LOGS/bench.log") lines (bench.log)"
fi

if has bench1b; then
  vk=""
  ldconfig -p | grep -q libvulkan.so.1 && vk=vulkan:0
  timeout 300 tools/bench_1b.sh cuda:0 $vk > "$LOGS/bench_1b.log" 2>&1
  DEVKIT_CUBLAS=off timeout 200 tools/bench_1b.sh cuda:0 | sed 's/$/ (DEVKIT_CUBLAS=off)/' >> "$LOGS/bench_1b.log" 2>&1
  note "end-to-end (512-token prompt, 128 decode tokens):"
  cat "$LOGS/bench_1b.log" | tee -a "$SUM"
fi

if has verify; then
  # VERIFY="NAME ON OFF [@DEVICE] [VAR=VALUE...] TESTS[;...]": the switch
  # of each path that has not run on a GPU, its on and off values, the
  # device (cuda:0 unless named), other settings the path needs (MODEL=T
  # times the 1B model of type T instead of f16; MODEL=- times none), and
  # the tests that cover it, e.g.
  #   VERIFY="DEVKIT_CUDA_GRAPH 1 0 graph_ ops_index_copy models_;DEVKIT_VULKAN_FUSED 1 0 @vulkan:0 ops_fused_linear_vec"
  # Waiting today: prompt attention on tensor cores (DEVKIT_CUDA_FLASH), the
  # prompt product of f32 x on tensor cores without
  # cuBLAS (hence DEVKIT_CUBLAS=off; its K-quant slabs too), Vulkan's
  # vector decode product for q8_0/q4_0 weights, and Vulkan's prompt product
  # on cooperative matrices (ops_linear_coop runs the real shader when the
  # device has VK_NV_cooperative_matrix, whatever the switch). Also timed:
  # matmul_qk, on by default (checked on lavapipe through
  # quant_linear_gpu_kernels), against the row kernel it replaced for
  # K-quant prompts on GPUs (DEVKIT_VULKAN_GEMM=0). And dk_attention_window
  # in one launch (DEVKIT_CUDA_ATTN_WINDOW; the 1B llama model has no
  # window to time, Gemma 3's tests and window op cover it). And CUDA's
  # iq4_nl/iq4_xs/iq3/iq2 values (DEVKIT_CUDA_IQ; off, the 1B IQ4_XS
  # model does not load, so only the on rounds time it).
  VERIFY=${VERIFY:-"DEVKIT_CUDA_IQ 1 0 MODEL=iq4_xs quant_ models_gguf_quant_mix ops_linear_gemm;DEVKIT_CUDA_ATTN_WINDOW 1 0 MODEL=- ops_attention_window ops_attention models_arch_gemma3;DEVKIT_CUDA_FLASH 1 0 ops_attention graph_ models_;DEVKIT_CUDA_PROMPT_TC 1 0 DEVKIT_CUBLAS=off ops_linear_ quant_linear ops_rmsnorm_linear models_;DEVKIT_VULKAN_VECQ 1 0 @vulkan:0 MODEL=q4_0 ops_fused_linear_vec ops_linear_ quant_linear ops_rmsnorm_linear ops_swiglu_linear models_;DEVKIT_VULKAN_COOPMAT 1 0 @vulkan:0 ops_linear_ quant_linear ops_rmsnorm_linear ops_swiglu_linear models_;DEVKIT_VULKAN_GEMM 1 0 @vulkan:0 MODEL=q4_K quant_linear models_"}
  [ -n "$VERIFY" ] || note "verify: no switch is waiting for a GPU (VERIFY= names some)"
  IFS=';' read -r -a ventries <<< "$VERIFY"
  for ventry in "${ventries[@]}"; do
    read -r vname von voff vtests <<< "$ventry"
    vdev=cuda:0
    case "$vtests" in @*) vdev=${vtests%% *}; vdev=${vdev#@}; vtests=${vtests#* } ;; esac
    venv=() vtype=f16
    while case "${vtests%% *}" in *=*) true ;; *) false ;; esac; do
      case "${vtests%% *}" in MODEL=*) vtype=${vtests%% *}; vtype=${vtype#MODEL=} ;; *) venv+=("${vtests%% *}") ;; esac
      vtests=${vtests#* }
    done
    env "${venv[@]}" "$vname=$von" timeout 200 build/tests --device "$vdev" $vtests > "$LOGS/verify_$vname.log" 2>&1
    note "$vname=$von ${venv[*]} tests: $(tail -1 "$LOGS/verify_$vname.log")"
    grep -A3 "FAIL" "$LOGS/verify_$vname.log" | head -12 | tee -a "$SUM"
    for tool in racecheck memcheck; do
      [ "${vdev%%:*}" = cuda ] || continue   # (compute-sanitizer sees CUDA only)
      env "${venv[@]}" "$vname=$von" timeout 100 compute-sanitizer --tool $tool --target-processes all --error-exitcode 99 \
        build/tests --device "$vdev" $vtests > "$LOGS/verify_${vname}_$tool.log" 2>&1
      note "$vname=$von $tool: exit $?; $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$LOGS/verify_${vname}_$tool.log" | sort | uniq -c | tr '\n' ' ')"
    done
    [ "$vtype" = - ] && continue
    f=${DEVKIT_BENCH_MODELS:-/tmp/devkit-bench}/synth_1000M_$vtype.gguf
    mkdir -p "$(dirname "$f")"
    [ -f "$f" ] || build/make_model --params 1000M --type "$vtype" -o "$f" > /dev/null
    ids=$(seq 1 512 | awk '{printf "%s%d", (NR > 1 ? "," : ""), 1 + ($1 * 7) % 500}')
    for rep in 1 2 3; do
      for v in "$von" "$voff"; do
        line=$(env "${venv[@]}" "$vname=$v" timeout 60 build/llama -m "$f" -d "$vdev" --ids "$ids" -n 128 --temp 0 --ignore-eos --warmup -c 1024 2>&1 > /dev/null | grep -o 'prompt 512 tokens.*')
        note "1B $vtype $vname=$v ${venv[*]}: $line"
      done
    done
  done
fi

echo
echo "==== summary ($LOGS/summary.txt)"
cat "$SUM"
