#!/usr/bin/env bash
# .ci/newcomer.sh — a newcomer's first ten minutes: clone the repository into
# an empty temporary folder (no ../shared beside it, no DEVKIT_MODELS), run
# the README's two commands there, then the README's first model command;
# fail if any fails or the model prints no text. The commands are read from
# README.md, so the README cannot drift from what works.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$(pwd)
PARENT=$(mktemp -d)
trap 'rm -rf "$PARENT"' EXIT
unset DEVKIT_MODELS
git clone -q "$SRC" "$PARENT/devkit"
cd "$PARENT/devkit"
[ ! -e ../shared ] || { echo "newcomer: ../shared exists beside the clone"; exit 1; }
# the README's two commands: the ./build.sh lines of the block under "## Two commands"
mapfile -t CMDS < <(awk '/^## Two commands/ { s = 1 } s && /^```sh/ { b = 1; next } b && /^```/ { exit }
                         b && /^\.\/build\.sh/ { sub(/[ \t]*#.*/, ""); print }' README.md)
MODEL_CMD=$(grep -m1 '^build/llama -m weights/' README.md)
[ "${#CMDS[@]}" = 2 ] && [ -n "$MODEL_CMD" ] || { echo "newcomer: README commands not found (${CMDS[*]}; $MODEL_CMD)"; exit 1; }
for c in "${CMDS[@]}"; do
  echo "newcomer\$ $c"
  bash -c "$c" 2>&1 | tee "$PARENT/last.log" | tail -3
  [ "${PIPESTATUS[0]}" = 0 ] || { echo "newcomer: '$c' failed"; exit 1; }
done
grep -q ' 0 failed' "$PARENT/last.log" || { echo "newcomer: the suite did not end with 0 failed"; exit 1; }
if grep -q 'skipped:.*not found in weights/' "$PARENT/last.log"; then
  echo "newcomer: a test was skipped for a missing model:"; grep 'not found in weights/' "$PARENT/last.log"; exit 1
fi
echo "newcomer\$ $MODEL_CMD"
bash -c "$MODEL_CMD" > "$PARENT/story.txt" 2> "$PARENT/story.err" || { cat "$PARENT/story.err"; echo "newcomer: the model command failed"; exit 1; }
cat "$PARENT/story.txt"
words=$(wc -w < "$PARENT/story.txt")
[ "$words" -ge 20 ] || { echo "newcomer: the model printed $words words"; exit 1; }
echo "newcomer: ok (two commands and the first model command from a bare clone; the model printed $words words)"
