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
#                                     (verify includes vtime, the model timings, but in a lease)
#                                     (default: all but bench1b and verify)
#   DEADLINE=S: no step starts, and none runs on, past S seconds from the
#   start (less 10 s to pack the logs); a step cut short says so.
#
# A lease is 15 minutes of device time, the machine's start included, so
# the whole list above no longer fits one. The lease takes two commands:
#
#   tools/gpu_check.sh pack     here, on the CPU machine: ./build.sh, then
#                               the stripped binaries into .gl/bin, the test
#                               models into .gl/models, the loader debs
#   tools/gpu_check.sh lease    there, in one run (carry [".gl"],
#                               timeout_s 600): the carried binaries, no
#                               build, DEADLINE 540, and the steps in the
#                               order of their worth: machine, verify (the
#                               tests of every waiting switch, a device's
#                               together, one sanitizer pass over the CUDA
#                               ones), perf, vtime (one on/off round of the
#                               1B model each), bench1b, then the suite on
#                               cuda:0 and vulkan:0 in what time is left
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
LEASE=0
if [ "$STEPS" = lease ]; then
  LEASE=1 STEPS="machine verify perf vtime bench1b suite vulkan" DEADLINE=${DEADLINE:-540} VULKAN_TESTS=${VULKAN_TESTS:-"vulkan_ ops_ quant_ models_"}
fi
T0=$SECONDS
DEADLINE=${DEADLINE:-0}
# tm N CMD...: CMD under `timeout`, N seconds or what is left before
# DEADLINE, whichever is less; 125 without running it when under 15 s are
# left (the step's log then says so)
tm() {
  local n=$1 l
  shift
  if [ "$DEADLINE" -gt 0 ]; then
    l=$((DEADLINE - (SECONDS - T0) - 10))
    [ "$l" -ge 15 ] || { echo "skipped: DEADLINE=$DEADLINE s reached"; return 125; }
    [ "$l" -lt "$n" ] && n=$l
  fi
  timeout "$n" "$@"
}

if [ "$STEPS" = pack ]; then
  # here, on the CPU machine: what the lease carries in .gl (git-ignored)
  ./build.sh || exit 1
  cc -O2 -std=c11 -Wall -Wextra -I. tools/gpu_perf.c -o build/gpu_perf -ldl -lm -lpthread || exit 1
  # the binaries xz'd: raw they are 36 MB, which with the tree (31 MB)
  # passes the 64 MiB a call may carry; each holds the same fatbin and SPIR-V
  rm -rf .gl/bin && mkdir -p .gl/bin .gl/models
  for b in tests llama make_model devices bench gpu_perf; do strip -o ".gl/bin/$b" "build/$b" || exit 1; done
  tar -cJf .gl/bin.tar.xz -C .gl bin && rm -rf .gl/bin || exit 1
  # the commit the binaries are, for the figures' records (.git may not travel)
  echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo '+uncommitted changes')" > .gl/commit
  cp -r ../shared/models/. .gl/models/
  if ! ls .gl/libvulkan1_*.deb > /dev/null 2>&1; then
    mkdir -p /tmp/amd64/partial
    o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
    apt-get $o update > /dev/null && (cd .gl && apt-get $o download libvulkan1 vulkan-validationlayers libglvnd0 libegl1 libgl1 libglx0 libgles2 libopengl0) ||
      echo "gpu_check pack: the loader debs did not download; vulkan steps will skip"
  fi
  du -sh .gl; echo "carry [\".gl\"]; command: tools/gpu_check.sh lease"
  exit 0
fi
# carried binaries (pack) stand in for a build on the lent machine (not
# here: they would replace the build they came from), in build/ so that the
# tests find the tree's files beside them (python3 where tar has no xz)
if [ -f .gl/bin.tar.xz ] && command -v nvidia-smi > /dev/null && ! cmp -s .gl/commit build/.gl_commit; then
  mkdir -p build && cp .gl/commit build/.gl_commit
  tar -xJf .gl/bin.tar.xz -C build --strip-components=1 2> /dev/null ||
    python3 -c 'import sys, tarfile, os; t = tarfile.open(sys.argv[1])
for m in t.getmembers():
    if m.isfile(): m.name = os.path.basename(m.name); t.extract(m, sys.argv[2])' .gl/bin.tar.xz build
  STEPS=${STEPS//build/}
fi
[ -d .gl/models ] && export DEVKIT_MODELS=${DEVKIT_MODELS:-$PWD/.gl/models}
# the device tool brings back at most 8 files: the logs go to $OUT as one
# archive and the summary, which is written there as it grows: a run killed
# at its limit still brings it back
[ -n "${OUT:-}" ] && trap 'tar -czf "$OUT/gpu_logs.tgz" -C "$LOGS" . 2>/dev/null || true' EXIT
SUM="${OUT:-$LOGS}/summary.txt"
[ -n "${GPU_CHECK_APPEND:-}" ] || : > "$SUM"   # GPU_CHECK_APPEND=1: a second call in the same run adds to the summary
note() { echo "$*" | tee -a "$SUM"; }
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

step_machine() {
  { nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv; nvcc --version | tail -2; uname -r; } > "$LOGS/machine.log" 2>&1
  note "machine: $(nvidia-smi -L 2>/dev/null | head -1); driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1); commit $(cat .gl/commit 2>/dev/null || git rev-parse --short HEAD 2>/dev/null)"
}

step_build() {
  if ./build.sh > "$LOGS/build.log" 2>&1; then note "build: ok ($(grep -o 'fatbin: .*' "$LOGS/build.log" || echo 'fatbin header up to date'))"
  else note "build: FAILED (build.log)"; tail -20 "$LOGS/build.log"; exit 1; fi
  cc -O2 -std=c11 -Wall -Wextra -Werror -I. tools/gpu_perf.c -o build/gpu_perf -ldl -lm -lpthread >> "$LOGS/build.log" 2>&1 || note "gpu_perf: build FAILED"
}

step_suite() {
  tm 420 build/tests --device cuda > "$LOGS/suite.log" 2>&1
  note "suite on cuda: $(tail -1 "$LOGS/suite.log")"
  grep -E "^  (FAIL|skip)" "$LOGS/suite.log" | head -40 | tee -a "$SUM"
  grep -E "^  cuda|^  .*none" "$LOGS/suite.log" | head -5 | tee -a "$SUM"
}

step_alloc() {
  DEVKIT_CUDA_NO_POOL=1 tm 300 build/tests --device cuda ops_ errors_ tensors_ > "$LOGS/suite_nopool.log" 2>&1
  note "suite with the free-list allocator: $(tail -1 "$LOGS/suite_nopool.log")"
  grep -E "^  FAIL" "$LOGS/suite_nopool.log" | head -20 | tee -a "$SUM"
  DEVKIT_LOGICAL_DEVICES=cuda=1 tm 200 build/tests --device cuda ops_linear ops_matmul > "$LOGS/suite_one_logical.log" 2>&1
  note "linear/matmul with one logical device: $(tail -1 "$LOGS/suite_one_logical.log")"
}

# sanitize NAME SECONDS TESTS...: compute-sanitizer's memcheck, racecheck
# and synccheck (SANITIZE_TOOLS narrows) over the tests, on cuda, in the
# caller's environment
sanitize() {
  local name=$1 secs=$2 tool rc errs
  shift 2
  if ! command -v compute-sanitizer > /dev/null; then note "compute-sanitizer: not on this machine"; return; fi
  for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
    # the runner forks a child per test: follow every process
    tm "$secs" compute-sanitizer --tool $tool --target-processes all --error-exitcode 99 \
      build/tests --device cuda "$@" > "$LOGS/sanitize_${name}_$tool.log" 2>&1
    rc=$?
    errs=$(grep -c "========= \(Invalid\|Race\|Barrier\|Error\|.*hazard\)" "$LOGS/sanitize_${name}_$tool.log" || true)
    note "compute-sanitizer $tool ($name): exit $rc, $errs report lines; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|skipped: DEADLINE' "$LOGS/sanitize_${name}_$tool.log" | sort | uniq -c | tr '\n' ' ')"
  done
}

step_sanitize() { sanitize ops 170 ${SANITIZE_TESTS:-ops_ errors_embedding}; }

step_vulkan() {
  build/devices > "$LOGS/devices.log" 2>&1
  cat "$LOGS/devices.log" | tee -a "$SUM"
  tm 300 build/tests --device vulkan ${VULKAN_TESTS:-} > "$LOGS/suite_vulkan.log" 2>&1
  note "suite on vulkan: $(tail -1 "$LOGS/suite_vulkan.log")"
  grep -E "^  vulkan|^  .*none|validation" "$LOGS/suite_vulkan.log" | head -5 | tee -a "$SUM"
  grep -E "^  (FAIL|skip)" "$LOGS/suite_vulkan.log" | head -40 | tee -a "$SUM"
}

step_perf() {
  tm 200 build/gpu_perf cuda:0 > "$LOGS/perf.log" 2>&1
  # the other block formats' rows-per-block decode product, waiting for a GPU
  { echo; echo "DEVKIT_CUDA_GEMVK=1 DEVKIT_CUDA_IQ=1:"; DEVKIT_CUDA_GEMVK=1 DEVKIT_CUDA_IQ=1 tm 150 build/gpu_perf cuda:0 more; } >> "$LOGS/perf.log" 2>&1
  # devkit's own GEMMs (issue 20: 50 % of cuBLAS at 4096^3): WMMA, then
  # the mma.sync kernels waiting for a GPU
  { echo; echo "DEVKIT_CUBLAS=off DEVKIT_CUDA_PROMPT_TC=1:"; DEVKIT_CUBLAS=off DEVKIT_CUDA_PROMPT_TC=1 tm 60 build/gpu_perf cuda:0 matmul
    echo; echo "DEVKIT_CUBLAS=off DEVKIT_CUDA_PROMPT_TC=1 DEVKIT_CUDA_MMA=1:"
    DEVKIT_CUBLAS=off DEVKIT_CUDA_PROMPT_TC=1 DEVKIT_CUDA_MMA=1 tm 60 build/gpu_perf cuda:0 matmul; } >> "$LOGS/perf.log" 2>&1
  # issue 17's bar is on Vulkan too
  ldconfig -p | grep -q libvulkan.so.1 && { echo; tm 200 build/gpu_perf vulkan:0; } >> "$LOGS/perf.log" 2>&1
  note "perf (targets: gemv >= 85 % of copy for every type, matmul >= 70 % of cuBLAS):"
  cat "$LOGS/perf.log" | tee -a "$SUM"
  [ -z "${OUT:-}" ] || cp "$LOGS/perf.log" "$OUT/"
}

step_bench() {
  tm 240 build/bench -d cuda:0 -d vulkan:0 -d cpu:0 --quick > "$LOGS/bench.log" 2>&1
  note "bench: $(wc -l < "$LOGS/bench.log") lines (bench.log)"
}

step_bench1b() {
  local vk=""
  ldconfig -p | grep -q libvulkan.so.1 && vk=vulkan:0
  tm 300 tools/bench_1b.sh cuda:0 $vk > "$LOGS/bench_1b.log" 2>&1
  DEVKIT_CUBLAS=off tm 200 tools/bench_1b.sh cuda:0 | sed 's/$/ (DEVKIT_CUBLAS=off)/' >> "$LOGS/bench_1b.log" 2>&1
  note "end-to-end (512-token prompt, 128 decode tokens):"
  cat "$LOGS/bench_1b.log" | tee -a "$SUM"
}

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
# device has VK_NV_cooperative_matrix, whatever the switch), and Vulkan's
# prompt attention on them (DEVKIT_VULKAN_FLASH; ops_attention_flash runs
# the real shader where the device has them, whatever the switch). Also timed:
# matmul_qk, on by default (checked on lavapipe through
# quant_linear_gpu_kernels), against the row kernel it replaced for
# K-quant prompts on GPUs (DEVKIT_VULKAN_GEMM=0). And dk_attention_window
# in one launch (DEVKIT_CUDA_ATTN_WINDOW; the 1B llama model has no
# window to time, Gemma 3's tests and window op cover it). And CUDA's
# iq4_nl/iq4_xs/iq3/iq2 values (DEVKIT_CUDA_IQ; off, the 1B IQ4_XS
# model does not load, so only the on rounds time it). And the decode
# product of q4_1..q6_K and the iq formats, rows per block
# (DEVKIT_CUDA_GEMVK; with DEVKIT_CUDA_IQ on, the lease's one test run
# takes it for the iq formats too). And the mma.sync GEMMs with cp.async
# stages for machines without cuBLAS (DEVKIT_CUDA_MMA; with
# DEVKIT_CUDA_PROMPT_TC on, so the f32 x of a prompt reaches them).
# In a lease each device's entries share one test run and (CUDA) one
# sanitizer pass, every switch on, and each model is timed one round, on
# then off.
VERIFY=${VERIFY:-"DEVKIT_CUDA_GEMVK 1 0 MODEL=Q4_K_M quant_ ops_linear_ ops_rmsnorm_linear ops_swiglu_linear models_gguf_quant_mix;DEVKIT_CUDA_IQ 1 0 MODEL=iq4_xs quant_ models_gguf_quant_mix ops_linear_gemm;DEVKIT_CUDA_ATTN_WINDOW 1 0 MODEL=- ops_attention_window ops_attention models_arch_gemma3;DEVKIT_CUDA_FLASH 1 0 ops_attention graph_ models_;DEVKIT_CUDA_PROMPT_TC 1 0 DEVKIT_CUBLAS=off ops_linear_ quant_linear ops_rmsnorm_linear models_;DEVKIT_CUDA_MMA 1 0 DEVKIT_CUBLAS=off DEVKIT_CUDA_PROMPT_TC=1 ops_linear_ ops_matmul quant_linear models_;DEVKIT_VULKAN_VECQ 1 0 @vulkan:0 MODEL=q4_0 ops_fused_linear_vec ops_linear_ quant_linear ops_rmsnorm_linear ops_swiglu_linear models_;DEVKIT_VULKAN_COOPMAT 1 0 @vulkan:0 ops_linear_ quant_linear ops_rmsnorm_linear ops_swiglu_linear models_;DEVKIT_VULKAN_FLASH 1 0 @vulkan:0 ops_attention models_;DEVKIT_VULKAN_GEMM 1 0 @vulkan:0 MODEL=q4_K quant_linear models_"}

# one VERIFY entry, parsed: vname von voff vdev vtype vtests, venv (array)
vparse() {
  read -r vname von voff vtests <<< "$1"
  vdev=cuda:0
  case "$vtests" in @*) vdev=${vtests%% *}; vdev=${vdev#@}; vtests=${vtests#* } ;; esac
  venv=() vtype=f16
  while case "${vtests%% *}" in *=*) true ;; *) false ;; esac; do
    case "${vtests%% *}" in MODEL=*) vtype=${vtests%% *}; vtype=${vtype#MODEL=} ;; *) venv+=("${vtests%% *}") ;; esac
    vtests=${vtests#* }
  done
}

# the tests of a list of entries, every switch on, in one run on DEVICE
# (names sorted once: the runner would run a name twice)
vtests_together() {
  local dev=$1 e allenv=() all=""
  shift
  for e in "$@"; do vparse "$e"; allenv+=("${venv[@]}" "$vname=$von"); all+=" $vtests"; done
  all=$(echo $all | tr ' ' '\n' | sort -u | tr '\n' ' ')
  tm 240 env "${allenv[@]}" build/tests --device "$dev" $all > "$LOGS/verify_${dev%%:*}.log" 2>&1
  note "${allenv[*]} tests on $dev: $(tail -1 "$LOGS/verify_${dev%%:*}.log")"
  grep -A3 "FAIL" "$LOGS/verify_${dev%%:*}.log" | head -16 | tee -a "$SUM"
  if [ "${dev%%:*}" = cuda ]; then   # (compute-sanitizer sees CUDA only)
    (export "${allenv[@]}"; SANITIZE_TOOLS=${SANITIZE_TOOLS:-"memcheck racecheck"} sanitize verify 70 $all)
  fi
}

# verify; in a lease only the tests and sanitizers (vtime times the models
# after perf)
step_verify() {
  local ventries ventry cu=() vk=()
  [ -n "$VERIFY" ] || note "verify: no switch is waiting for a GPU (VERIFY= names some)"
  IFS=';' read -r -a ventries <<< "$VERIFY"
  if [ $LEASE = 1 ]; then
    # a lease tests the switches of a device together: one run, one
    # sanitizer pass; a failure names its tests, and so the switch
    for ventry in "${ventries[@]}"; do vparse "$ventry"; if [ "${vdev%%:*}" = cuda ]; then cu+=("$ventry"); else vk+=("$ventry"); fi; done
    [ ${#cu[@]} -gt 0 ] && vtests_together cuda:0 "${cu[@]}"
    [ ${#vk[@]} -gt 0 ] && vtests_together vulkan:0 "${vk[@]}"
    return 0
  fi
  step_vtime
}

# each waiting switch's 1B model on and off (three rounds; a lease one)
step_vtime() {
  local ventries ventry f ids rep v line
  IFS=';' read -r -a ventries <<< "$VERIFY"
  for ventry in "${ventries[@]}"; do
    vparse "$ventry"
    if [ $LEASE = 0 ]; then
      tm 200 env "${venv[@]}" "$vname=$von" build/tests --device "$vdev" $vtests > "$LOGS/verify_$vname.log" 2>&1
      note "$vname=$von ${venv[*]} tests: $(tail -1 "$LOGS/verify_$vname.log")"
      grep -A3 "FAIL" "$LOGS/verify_$vname.log" | head -12 | tee -a "$SUM"
      [ "${vdev%%:*}" = cuda ] && (export "${venv[@]}" "$vname=$von"; SANITIZE_TOOLS=${SANITIZE_TOOLS:-"racecheck memcheck"} sanitize "$vname" 100 $vtests)
    fi
    [ "$vtype" = - ] && continue
    f=${DEVKIT_BENCH_MODELS:-/tmp/devkit-bench}/synth_1000M_$vtype.gguf
    mkdir -p "$(dirname "$f")"
    [ -f "$f" ] || tm 120 build/make_model --params 1000M --type "$vtype" -o "$f" > /dev/null || { note "1B $vtype: make_model failed, timed out or was past DEADLINE"; rm -f "$f"; continue; }
    ids=$(seq 1 512 | awk '{printf "%s%d", (NR > 1 ? "," : ""), 1 + ($1 * 7) % 500}')
    for rep in $(seq 1 $((LEASE ? 1 : 3))); do
      for v in "$von" "$voff"; do
        line=$(tm 60 env "${venv[@]}" "$vname=$v" build/llama -m "$f" -d "$vdev" --ids "$ids" -n 128 --temp 0 --ignore-eos --warmup -c 1024 2>&1 > /dev/null | grep -o 'prompt 512 tokens.*\|skipped: .*')
        note "1B $vtype $vname=$v ${venv[*]}: $line"
      done
    done
  done
}

for s in $STEPS; do
  if declare -F "step_$s" > /dev/null; then "step_$s"; else note "gpu_check: no step '$s'"; fi
done

echo
echo "==== summary ($LOGS/summary.txt)"
cat "$SUM"
