#!/usr/bin/env bash
# tests/build_offline.sh — ./build.sh on a machine where packages are missing
# and no package server can be reached (an air-gapped GPU box): apt-get and
# dpkg-query are replaced by shims that fail (dpkg-query knows no package;
# apt-get fails as it does without network), and glslc, spirv-val and nvcc
# are absent. The build must warn with the install line, skip the steps that
# need those tools (saying so), and still build every program.
# Builds into build-offline/ (a copy of build/ when it exists, so only what
# is stale compiles). Run by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/bin"
cat > "$TMP/bin/apt-get" <<'SH'
#!/bin/sh
echo "apt-get $*" >> "$SHIM_LOG"
echo "E: Failed to fetch http://deb.debian.org/debian/dists/bookworm/InRelease  Temporary failure resolving 'deb.debian.org'" >&2
exit 100
SH
cat > "$TMP/bin/dpkg-query" <<'SH'
#!/bin/sh
echo "dpkg-query $*" >> "$SHIM_LOG"
echo "dpkg-query: no packages found matching $*" >&2
exit 1
SH
chmod +x "$TMP/bin/"*
export SHIM_LOG=$TMP/shim.log
: > "$SHIM_LOG"
rm -rf build-offline
[ -d build ] && cp -a build build-offline
status=0
PATH="$TMP/bin:$PATH" GLSLC=/nonexistent/glslc SPIRV_VAL=/nonexistent/spirv-val NVCC=/nonexistent/nvcc \
  BUILD=build-offline ./build.sh > "$TMP/out" 2>&1 || status=$?
cat "$TMP/out"
fail() { echo "build_offline: FAILED: $*"; exit 1; }
[ $status = 0 ] || fail "./build.sh exited with $status"
grep -q "dpkg-query" "$SHIM_LOG" || fail "the dpkg-query shim was not called"
if [ "$(id -u)" = 0 ]; then
  grep -q "apt-get install" "$SHIM_LOG" || fail "the apt-get shim was not called"
  grep -q "warning: could not install" "$TMP/out" || fail "no warning that packages could not be installed"
fi
grep -q "apt-get install -y --no-install-recommends" "$TMP/out" || fail "no install line"
grep -q "glslc/spirv-val not found: skipped" "$TMP/out" || fail "the shader step did not say it was skipped"
grep -q "nvcc not found: skipped" "$TMP/out" || fail "the CUDA step did not say it was skipped"
for p in tests llama device_rules bench; do [ -x "build-offline/$p" ] || fail "build-offline/$p was not built"; done
git diff --quiet -- shaders/generated kernels/generated || fail "the committed generated headers changed"
rm -rf build-offline
echo "build_offline: ok (packages unreachable: warned, tool steps skipped, every program built)"
