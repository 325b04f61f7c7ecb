#!/usr/bin/env bash
# examples/demo.sh BUILD_DIR — devkit's main job: one llama runner, every
# device present. Runs build/llama greedily on a small model on each device
# (and with the layers split over two devices), prints tokens/s per run, and
# says whether every run produced the same tokens (exit 1 if not).
#
# The model: stories260K (llama2.c checkpoint + tok512.bin) from weights/,
# DEVKIT_MODELS or ../shared/models, else a synthetic 1M-param
# llama GGUF made by build/make_model (nothing is downloaded).
set -euo pipefail
B=${1:-build}
cd "$(dirname "$0")/.."
LLAMA="$B/llama"
[ -x "$LLAMA" ] || { echo "demo: $LLAMA is not built (run ./build.sh)"; exit 1; }
N=${DEMO_TOKENS:-200}
PROMPT=${DEMO_PROMPT:-"Once upon a time"}

# weights/ (shipped in the repository) first, then DEVKIT_MODELS, then ../shared/models
MODELS=weights
for d in weights ${DEVKIT_MODELS:-} ../shared/models; do
  if [ -f "$d/stories260K.bin" ] && [ -f "$d/tok512.bin" ]; then MODELS=$d; break; fi
done
if [ -f "$MODELS/stories260K.bin" ] && [ -f "$MODELS/tok512.bin" ]; then
  ARGS=(-m "$MODELS/stories260K.bin" -z "$MODELS/tok512.bin")
  WHAT="stories260K.bin (llama2.c checkpoint, f32) from $MODELS"
else
  SYN="$B/demo-synthetic-1M.gguf"
  [ -f "$SYN" ] || "$B/make_model" -o "$SYN" --params 1M --type q8_0 --seed 7 >/dev/null
  ARGS=(-m "$SYN")
  WHAT="a synthetic 1M-parameter llama (q8_0, random weights; made by make_model: no reference models found in $MODELS)"
fi

# every device the runner sees, and, with two logical CPU devices, a split run
mapfile -t DEVS < <("$LLAMA" --list-devices | awk '$2 != "none:" {print $1}')
echo "demo: $WHAT"
echo "demo: greedy, prompt \"$PROMPT\", $N tokens; devices: ${DEVS[*]}"
echo

run() {   # label, device spec, extra env
  local label=$1 spec=$2 env=$3 out err ids tps pps
  err=$(mktemp)
  if ! out=$(env $env "$LLAMA" "${ARGS[@]}" -d "$spec" -p "$PROMPT" -n "$N" --temp 0 --ignore-eos --print-ids 2>"$err"); then
    printf '  %-34s FAILED: %s\n' "$label" "$(grep error "$err" | head -1)"
    rm -f "$err"
    FAILED=1
    return
  fi
  tps=$(grep -oE 'generated [0-9]+ tokens in [0-9.]+ s \([0-9.]+ tok/s\)' "$err" | grep -oE '[0-9.]+ tok/s' | cut -d' ' -f1)
  pps=$(grep -oE 'prompt [0-9]+ tokens in [0-9.]+ s \([0-9.]+ tok/s\)' "$err" | grep -oE '[0-9.]+ tok/s' | cut -d' ' -f1)
  rm -f "$err"
  ids=$(echo "$out" | tr -s ' \n' ' ' | sed 's/ $//')
  printf '  %-34s %10s tok/s generation  %10s tok/s prompt\n' "$label" "$tps" "$pps"
  LABELS+=("$label")
  RESULTS+=("$ids")
}

LABELS=()
RESULTS=()
FAILED=0
printf '  %-34s %s\n' "device" "(one run each; timings on a shared machine are noisy)"
for d in "${DEVS[@]}"; do run "$d" "$d" ""; done
# the same model with its layers on two devices: the hidden state crosses once
run "cpu:0 + cpu:1 (layers split)" "cpu:0,cpu:1" "DEVKIT_LOGICAL_DEVICES=cpu=2"
for d in "${DEVS[@]}"; do
  case "$d" in vulkan:0|cuda:0) run "cpu:0 + $d (layers split)" "cpu:0,$d" "" ;; esac
done

echo
echo "text (from ${LABELS[0]:-?}):"
"$LLAMA" "${ARGS[@]}" -d cpu:0 -p "$PROMPT" -n "$N" --temp 0 --ignore-eos -q | fold -s -w 100 | sed 's/^/  /'
echo

same=1
for i in "${!RESULTS[@]}"; do
  if [ "${RESULTS[$i]}" != "${RESULTS[0]}" ]; then
    same=0
    echo "demo: ${LABELS[$i]} produced other tokens than ${LABELS[0]}:"
    echo "  ${LABELS[0]}: ${RESULTS[0]:0:200}"
    echo "  ${LABELS[$i]}: ${RESULTS[$i]:0:200}"
  fi
done
if [ $same = 1 ] && [ $FAILED = 0 ]; then
  echo "demo: all ${#RESULTS[@]} runs produced identical tokens ($(echo "${RESULTS[0]}" | wc -w) ids each)"
else
  echo "demo: the runs did NOT all produce identical tokens"
  exit 1
fi
