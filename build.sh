#!/usr/bin/env bash
# devkit's one build command.
#   ./build.sh          install what is missing, regenerate kernel/shader blobs where the tools exist, build
#   ./build.sh test     build, then run every test on every device present
#   ./build.sh asan     the suite built with AddressSanitizer + UndefinedBehaviorSanitizer
#   ./build.sh tsan     the concurrency tests under ThreadSanitizer
#   ./build.sh demo     build and run the main demo
#   ./build.sh bench    build and run the benchmarks
#   ./build.sh check-generated   fail if a generated header is stale against its sources
#   ./build.sh fuzz [SECONDS]   run the model-file fuzzers
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(pwd)
CMD=${1:-build}
CC=${CC:-cc}
CXX=${CXX:-c++}
BUILD=${BUILD:-build}
WARN="-Wall -Wextra -Werror"
CFLAGS=${CFLAGS:-"-O2 -g"}
LIBS="-ldl -lm -lpthread"

say() { printf '[build] %s\n' "$*"; }

# ---- dependencies --------------------------------------------------------
# Debian packages: the Vulkan loader, its headers (read only by
# tools/check_vk_decls.sh; devkit builds without them), lavapipe (mesa's software
# Vulkan, the device CI tests on), the validation layer, glslc and spirv-val
# for the shaders, xxd for the CUDA fatbin header.
PKGS="libvulkan-dev libvulkan1 mesa-vulkan-drivers vulkan-validationlayers glslc spirv-tools xxd"
install_deps() {
  local missing=""
  for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
  done
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=120 $missing >/dev/null 2>&1 || {
      apt-get update -o DPkg::Lock::Timeout=120 >/dev/null 2>&1
      apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=120 $missing >/dev/null
    }
  else
    say "missing packages:$missing"
    say "install them with: sudo apt-get install -y --no-install-recommends$missing"
  fi
}

# ---- generated blobs ------------------------------------------------------
gen_shaders() {
  [ -d shaders ] || return 0
  if command -v glslc >/dev/null && command -v spirv-val >/dev/null; then
    tools/gen_shaders.sh
  else
    say "glslc/spirv-val not found: using the committed shaders/generated header"
  fi
}
gen_kernels() {
  [ -d kernels ] || return 0
  local nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  if [ -x "$nvcc" ]; then
    NVCC=$nvcc tools/gen_kernels.sh
  else
    say "nvcc not found: using the committed kernels/generated header"
  fi
}

# ---- builds ---------------------------------------------------------------
build_all() {
  local out=$1 flags=$2 ld=${3:-$CC}
  mkdir -p "$out"
  # the test runner, one binary for the whole suite
  $ld $flags -std=c11 $WARN -o "$out/tests" tests/*.c $LIBS
  for ex in examples/*.c; do
    [ -e "$ex" ] || continue
    local name; name=$(basename "$ex" .c)
    [ "$name" = tokenizer ] && continue
    local extra=""
    # the programs that run models link the tokenizer
    grep -q "tokenizer.h" "$ex" && extra="examples/tokenizer.c"
    $ld $flags -std=c11 $WARN -o "$out/$name" "$ex" $extra $LIBS
  done
  if [ -d bench ] && ls bench/*.c >/dev/null 2>&1; then
    $ld $flags -std=c11 $WARN -o "$out/bench" bench/*.c $LIBS
  fi
  build_model_tools "$out" "$flags" "$ld"
}

# ---- model-file tools (from the models branch) ------------------------------
# tools/model_info.c (print a model file), tools/make_model.c (synthetic llama
# GGUF files), fuzz/seeds.c (the fuzzers' seed files)
build_model_tools() {
  local out=$1 flags=$2 ld=$3 t
  for t in model_info make_model; do
    [ -f "tools/$t.c" ] && $ld $flags -std=c11 $WARN -o "$out/$t" "tools/$t.c" $LIBS
  done
  if [ -f fuzz/seeds.c ]; then $ld $flags -std=c11 $WARN -o "$out/fuzz_seeds" fuzz/seeds.c; fi
}

build() {
  install_deps
  gen_shaders
  gen_kernels
  say "compiling into $BUILD/ ($CC $CFLAGS)"
  build_all "$BUILD" "$CFLAGS"
  # the header must also build as C99 and as C++ for users
  mkdir -p "$BUILD/compat"
  printf '#define DEVKIT_IMPLEMENTATION\n#include "devkit.h"\nint main(void) { return dk_init() == DK_OK ? 0 : 1; }\n' > "$BUILD/compat/app.c"
  cp "$BUILD/compat/app.c" "$BUILD/compat/app.cpp"
  $CC -std=c99 $WARN -O2 -I. -o "$BUILD/compat/app_c99" "$BUILD/compat/app.c" $LIBS
  $CXX -std=c++11 $WARN -O2 -I. -o "$BUILD/compat/app_cpp" "$BUILD/compat/app.cpp" $LIBS
  $CC $CFLAGS -std=c11 $WARN -o "$BUILD/optable" tools/optable.c $LIBS
  update_readme_table
  say "built: $(ls "$BUILD" | tr '\n' ' ')"
}

# The README's op table is printed from the dispatch tables (tools/optable.c)
# and replaced between its markers on every build.
update_readme_table() {
  [ -f README.md ] && grep -q '<!-- optable:begin -->' README.md || return 0
  local table; table=$("$BUILD/optable")
  python3 - "$table" <<'PY'
import sys
t = sys.argv[1]
s = open("README.md").read()
a = s.index("<!-- optable:begin -->") + len("<!-- optable:begin -->")
b = s.index("<!-- optable:end -->")
new = s[:a] + "\n" + t + "\n" + s[b:]
if new != s:
    open("README.md", "w").write(new)
PY
}

export VK_LOADER_DEBUG=${VK_LOADER_DEBUG:-none}

case "$CMD" in
  build) build ;;
  test)
    build
    "$BUILD/tests" "${@:2}"
    ;;
  asan)
    install_deps
    say "building with -fsanitize=address,undefined into $BUILD-asan/"
    build_all "$BUILD-asan" "-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
    # the validation layer leaks a little inside itself (TOOLCHAIN.md); that
    # one library is suppressed, nothing of ours
    export LSAN_OPTIONS="suppressions=$ROOT/tests/lsan.supp:print_suppressions=0"
    export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
    DKT_TIMEOUT=${DKT_TIMEOUT:-1200} "$BUILD-asan/tests" "${@:2}"
    ;;
  tsan)
    install_deps
    say "building with -fsanitize=thread into $BUILD-tsan/"
    build_all "$BUILD-tsan" "-O1 -g -fsanitize=thread"
    export TSAN_OPTIONS="suppressions=$ROOT/tests/tsan.supp halt_on_error=1"
    DKT_NO_VALIDATION=1 "$BUILD-tsan/tests" thread "${@:2}"
    ;;
  demo)
    build
    if [ -x "$BUILD/demo.sh" ] || [ -f examples/demo.sh ]; then bash examples/demo.sh "$BUILD"; else "$BUILD/device_rules"; fi
    ;;
  bench)
    build
    "$BUILD/bench" "${@:2}"
    ;;
  check-generated)
    build
    git diff --exit-code -- shaders/generated kernels/generated README.md || { say "generated files are stale: run ./build.sh and commit them"; exit 1; }
    say "generated headers are up to date"
    ;;
  fuzz)
    build
    tools/fuzz.sh "${2:-60}"
    ;;
  *) echo "usage: ./build.sh [build|test|asan|tsan|demo|bench|check-generated|fuzz]"; exit 2 ;;
esac
