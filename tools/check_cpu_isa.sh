#!/usr/bin/env bash
# tools/check_cpu_isa.sh — structural check of the CPU backend's x86 kernel
# classes: disassemble every avx2/avx512 kernel and fail if one holds an
# SSE-encoded (non-VEX) vector instruction or calls out (into code that may be
# compiled for another class: the AVX->SSE transition penalty on Intel). A
# call (or tail jump) to another kernel this script checks is allowed: it
# holds no SSE either (the AVX-512 row-form product calls its class's
# dequantization; the VNNI packing's switch jumps to its per-type packs).
# Usage: tools/check_cpu_isa.sh [CC]   (needs objdump; x86-64 only)
set -euo pipefail
cd "$(dirname "$0")/.."
CC=${1:-${CC:-cc}}
CFLAGS=${CFLAGS:--O2}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
printf '#define DEVKIT_IMPLEMENTATION\n#include "devkit.h"\n' > "$TMP/k.c"
$CC $CFLAGS -I. -c -o "$TMP/k.o" "$TMP/k.c"
objdump -dr --no-show-raw-insn "$TMP/k.o" > "$TMP/k.s"
fns=$(grep -oE '<dk__cpu_[a-z0-9_]*_avx(2|512)[^>]*>:' "$TMP/k.s" | tr -d '<>:' | sort -u)
[ -n "$fns" ] || { echo "[check_cpu_isa] no avx2/avx512 kernels found"; exit 1; }
bad=0
for f in $fns; do
  body=$(awk -v f="<$f>:" '$0 ~ f {on=1; next} on && /^$/ {exit} on' "$TMP/k.s")
  n=$(printf '%s\n' "$body" | wc -l)
  # a vector register in an instruction whose mnemonic lacks the VEX/EVEX v
  sse=$(printf '%s\n' "$body" | awk -F'\t' '$2 ~ /%[xyz]mm/ && $2 !~ /^(\{evex\} )?v/ {print}' || true)
  # any call (an unresolved one in a .o points at itself), any jump out
  calls=$(printf '%s\n' "$body" | awk -F'\t' -v f="<$f" -v ok=" $(echo $fns) " '
    $2 ~ /^call/ || ($2 ~ /^jmp/ && index($2, f) == 0 && $2 !~ /\*/) {
      t = $2; sub(/^[^<]*</, "", t); sub(/>.*$/, "", t)
      if (!index(ok, " " t " ")) print
    }' || true)
  printf '  %-40s %4d instructions, %s SSE-encoded, %s calls out\n' "$f" "$n" \
    "$( [ -n "$sse" ] && printf '%s\n' "$sse" | wc -l || echo 0)" "$( [ -n "$calls" ] && printf '%s\n' "$calls" | wc -l || echo 0)"
  if [ -n "$sse" ] || [ -n "$calls" ]; then bad=1; printf '%s\n%s\n' "$sse" "$calls" | sed 's/^/      /'; fi
done
[ $bad = 0 ] && echo "[check_cpu_isa] ok: no SSE-encoded instruction and no call out in $(echo "$fns" | wc -w) kernels" || { echo "[check_cpu_isa] FAILED"; exit 1; }
