#!/usr/bin/env bash
# tools/fuzz.sh [SECONDS] — build the model-file fuzzers with libFuzzer,
# AddressSanitizer and UndefinedBehaviorSanitizer (clang), then run each
# target for SECONDS (default 60) from the seeds in fuzz/corpus/<target>/.
# The growing corpora, crash files and logs go to fuzz/out/ (not committed).
# Then the API fuzzer (fuzz/api.c, a self-driven loop, built with $CC and the
# same sanitizers): SECONDS over cpu:0 + cpu:1, and SECONDS/4 over cpu:0 +
# cpu:1 + vulkan:0 where a Vulkan device exists.
# Exits non-zero if any target found a crash, a leak, UB or a timeout.
#   FUZZ_TARGETS="gguf llama2c" tools/fuzz.sh 300     a subset
#   FUZZ_TARGETS=api API_SEED=7 tools/fuzz.sh 600     only the API fuzzer
#   FUZZ_JOBS=2 tools/fuzz.sh 600                      parallel workers per target
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-60}
TARGETS=${FUZZ_TARGETS:-"gguf safetensors llama2c hf api"}
JOBS=${FUZZ_JOBS:-1}
CLANG=${CLANG:-$(command -v clang || command -v clang-14 || true)}
OUT=fuzz/out
mkdir -p "$OUT"
status=0

# The API fuzzer: its own loop, so no libFuzzer and no clang needed.
run_api() {
  local cc=${CC:-cc} secs=$1 rc seed=${API_SEED:-$(date +%s)}
  echo "[fuzz] building api"
  $cc -g -O1 -std=c11 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined \
    -o "$OUT/api" fuzz/api.c -ldl -lm -lpthread
  for devs in cpu vulkan; do
    local t=$secs
    [ $devs = vulkan ] && t=$(( (secs + 3) / 4 ))
    echo "[fuzz] running api over $devs for ${t}s (seeds from $seed)"
    set +e
    ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 "$OUT/api" -t "$t" -s "$seed" -d $devs > "$OUT/api-$devs.log" 2>&1
    rc=$?
    set -e
    if [ $rc -eq 2 ]; then echo "[fuzz] api over $devs: skipped ($(tail -1 "$OUT/api-$devs.log"))"; continue; fi
    if [ $rc -ne 0 ]; then
      echo "[fuzz] api over $devs: FINDING (exit $rc); see $OUT/api-$devs.log"
      grep -E "FINDING|ERROR|runtime error|SUMMARY" "$OUT/api-$devs.log" | head -5 || true
      status=1
    else
      tail -1 "$OUT/api-$devs.log"
    fi
  done
}

for t in $TARGETS; do
  if [ "$t" = api ]; then run_api "$SECS"; continue; fi
  if [ -z "$CLANG" ]; then echo "[fuzz] clang not found (needs clang with libFuzzer: apt-get install clang libclang-rt-dev)"; exit 1; fi
  echo "[fuzz] building $t"
  "$CLANG" -g -O1 -std=c11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -o "$OUT/$t" "fuzz/$t.c" -ldl -lm -lpthread
  mkdir -p "$OUT/corpus-$t"
  echo "[fuzz] running $t for ${SECS}s"
  par=""
  [ "$JOBS" -gt 1 ] && par="-jobs=$JOBS -workers=$JOBS"
  set +e
  # shellcheck disable=SC2086
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
  "$OUT/$t" -max_total_time="$SECS" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -dict="fuzz/$t.dict" -artifact_prefix="$OUT/$t-" $par \
    "$OUT/corpus-$t" "fuzz/corpus/$t" > "$OUT/$t.log" 2>&1
  rc=$?
  set -e
  # with -jobs the workers' stats are in fuzz-N.log; without, in the log itself
  if [ "$JOBS" -gt 1 ]; then cat fuzz-*.log >> "$OUT/$t.log" 2>/dev/null || true; fi
  execs=$(grep -h "stat::number_of_executed_units" "$OUT/$t.log" | awk '{s += $2} END {print s + 0}')
  cov=$(grep -E "^#[0-9]+" "$OUT/$t.log" | tail -1 | grep -oE "cov: [0-9]+ ft: [0-9]+" || true)
  files=$(ls "$OUT/corpus-$t" | wc -l)
  if [ $rc -ne 0 ] || ls "$OUT/$t-"* >/dev/null 2>&1; then
    echo "[fuzz] $t: FINDING (exit $rc); see $OUT/$t.log and $OUT/$t-*"
    grep -E "ERROR|runtime error|SUMMARY" "$OUT/$t.log" | head -5 || true
    status=1
  else
    echo "[fuzz] $t: ${execs} executions in ${SECS}s, no findings; $cov; corpus $files files"
  fi
  rm -f fuzz-*.log
done
exit $status
