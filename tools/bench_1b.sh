#!/usr/bin/env bash
# tools/bench_1b.sh DEVICE... — end-to-end prompt and decode speed of a
# synthetic model (tools/make_model --params 1000M: dim 1792, 29 layers, 28
# heads, 7 KV heads, hidden 4800, vocab 512) in f16, q8_0 and q4_0: a
# 512-token prompt, then 128 greedy tokens, per device, as build/llama
# reports them, after one untimed warm-up run (--warmup, as llama-bench's).
# The shapes of the GPU issues' llama.cpp comparison.
#   TYPES="f16 q4_0" PARAMS=100M tools/bench_1b.sh cuda:0 vulkan:0
# Models are made once under $DEVKIT_BENCH_MODELS (default /tmp/devkit-bench).
set -uo pipefail
cd "$(dirname "$0")/.."
DIR=${DEVKIT_BENCH_MODELS:-/tmp/devkit-bench}
PARAMS=${PARAMS:-1000M}
mkdir -p "$DIR"
IDS=$(seq 1 512 | awk '{printf "%s%d", (NR > 1 ? "," : ""), 1 + ($1 * 7) % 500}')
for t in ${TYPES:-f16 q8_0 q4_0}; do
  f="$DIR/synth_${PARAMS}_$t.gguf"
  [ -f "$f" ] || build/make_model --params "$PARAMS" --type "$t" -o "$f" > /dev/null || { echo "make_model $PARAMS $t failed"; exit 1; }
  for d in "$@"; do
    line=$(build/llama -m "$f" -d "$d" --ids "$IDS" -n 128 --temp 0 --ignore-eos --warmup -c 1024 2>&1 > /dev/null | grep "llama: prompt")
    echo "$PARAMS $t $d: ${line#llama: }"
  done
done
