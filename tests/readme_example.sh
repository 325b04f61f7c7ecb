#!/usr/bin/env bash
# tests/readme_example.sh [ROOT] — the README's "Using it" example, exactly as
# written there, against the single-file header: copies only dist/devkit.h
# into an empty folder, compiles the README's code block there as C99 and as
# C++ (-Wall -Wextra -Werror, the README's link line), runs each and compares
# its output with the README's output block; then the same code against the
# in-tree devkit.h. Run by the test suite (tests/test_docs.c).
set -euo pipefail
ROOT=$(cd "${1:-$(dirname "$0")/..}" && pwd)
CC=${CC:-cc}
CXX=${CXX:-c++}
# the fenced block after a marker line in README.md
block() { awk -v m="$1" '$0 == m { f = 1; next } f == 1 && /^```/ { f = 2; next } f == 2 && /^```/ { exit } f == 2' "$ROOT/README.md"; }
[ -f "$ROOT/dist/devkit.h" ] || { echo "no $ROOT/dist/devkit.h: run ./build.sh"; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
mkdir "$TMP/single" "$TMP/intree"
block '<!-- readme-example:code -->' > "$TMP/single/app.c"
block '<!-- readme-example:output -->' > "$TMP/expected"
[ -s "$TMP/single/app.c" ] && [ -s "$TMP/expected" ] || { echo "README.md: example code or output block not found"; exit 1; }
cp "$ROOT/dist/devkit.h" "$TMP/single/"
cp "$TMP/single/app.c" "$TMP/intree/app.c"
status=0
check() {   # label dir binary
  local got
  got=$(cd "$2" && DEVKIT_LOGICAL_DEVICES=cpu=2 "./$3" 2>&1) || { echo "$1: exit status $?"; status=1; }
  if [ "$got" = "$(cat "$TMP/expected")" ]; then echo "$1: output matches the README"
  else echo "$1: output differs from the README:"; diff <(echo "$got") "$TMP/expected" || true; status=1; fi
}
( cd "$TMP/single" && $CC -std=c99 -Wall -Wextra -Werror app.c -o app_c -ldl -lm -lpthread ) && check "C99, single header" "$TMP/single" app_c || status=1
( cd "$TMP/single" && $CXX -x c++ -std=c++11 -Wall -Wextra -Werror app.c -o app_cpp -ldl -lm -lpthread ) && check "C++11, single header" "$TMP/single" app_cpp || status=1
( cd "$TMP/intree" && $CC -std=c99 -Wall -Wextra -Werror -I"$ROOT" app.c -o app_c -ldl -lm -lpthread ) && check "C99, in-tree devkit.h" "$TMP/intree" app_c || status=1
# the GPU code in the single file unpacks to exactly the bytes of the
# in-tree generated headers (base64 and the LZ77 layer round-trip)
cat > "$TMP/blobs.c" <<'C'
#define DEVKIT_IMPLEMENTATION
#include "devkit.h"
#include <stdio.h>
int main(void) {
  FILE *f = stdout;
  size_t i = 0;
#ifdef DK__HAVE_VULKAN
  for (i = 0; i < DK_SPV_COUNT; i++) {
    fprintf(f, "%s %lu\n", dk_spv_table[i].name, (unsigned long)dk_spv_table[i].size);
    fwrite(dk_spv_table[i].words, 1, dk_spv_table[i].size, f);
  }
#endif
#ifdef DK__HAVE_CUDA
  fwrite(dk_cuda_fatbin, 1, sizeof dk_cuda_fatbin, f);
  i++;
#endif
  return i ? 0 : 1;
}
C
cp "$TMP/blobs.c" "$TMP/single/blobs.c"
if ( cd "$TMP/single" && $CC -std=c99 -O1 blobs.c -o blobs -ldl -lm -lpthread && ./blobs > ../blobs.single ) &&
   ( cd "$TMP" && $CC -std=c99 -O1 -I"$ROOT" blobs.c -o blobs -ldl -lm -lpthread && ./blobs > blobs.intree ) &&
   cmp -s "$TMP/blobs.single" "$TMP/blobs.intree"; then
  echo "GPU code: the single file unpacks to the in-tree bytes ($(wc -c < "$TMP/blobs.intree") bytes)"
else
  echo "GPU code: the single file's unpacked blobs DIFFER from the in-tree ones"; status=1
fi
# a backend left out with a macro
if ( cd "$TMP/single" && $CC -std=c99 -Wall -Wextra -Werror -DDEVKIT_NO_CUDA -DDEVKIT_NO_VULKAN app.c -o app_cpu -ldl -lm -lpthread ); then
  check "C99, single header, -DDEVKIT_NO_CUDA -DDEVKIT_NO_VULKAN" "$TMP/single" app_cpu
else
  echo "the single header does not build with -DDEVKIT_NO_CUDA -DDEVKIT_NO_VULKAN"; status=1
fi
# the model layer's single file, beside devkit.h's, alone: it builds as C and
# C++ and reports a malformed file through dk_last_error()
if [ -f "$ROOT/dist/devkit_models.h" ]; then
  cp "$ROOT/dist/devkit_models.h" "$TMP/single/"
  cat > "$TMP/single/models.c" <<'C'
#define DEVKIT_IMPLEMENTATION
#include "devkit.h"
#define DEVKIT_MODELS_IMPLEMENTATION
#include "devkit_models.h"
#include <stdio.h>
#include <string.h>
int main(void) {
  static const unsigned char junk[8] = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
  dk_file *f = NULL;
  if (dk_file_open_memory(junk, sizeof junk, "junk.gguf", DK_FILE_GGUF, &f) != DK_ERR_FORMAT) return 1;
  if (!strstr(dk_last_error(), "junk.gguf")) return 1;
  puts(dk_last_error());
  return 0;
}
C
  if ( cd "$TMP/single" && $CC -std=c11 -Wall -Wextra -Werror models.c -o models_c -ldl -lm -lpthread && ./models_c ) &&
     ( cd "$TMP/single" && $CXX -x c++ -std=c++11 -Wall -Wextra -Werror models.c -o models_cpp -ldl -lm -lpthread && ./models_cpp ); then
    echo "dist/devkit_models.h: builds beside dist/devkit.h alone (C11, C++11) and reports errors"
  else
    echo "dist/devkit_models.h does not build or run beside dist/devkit.h alone"; status=1
  fi
else
  echo "no $ROOT/dist/devkit_models.h: run ./build.sh"; status=1
fi
exit $status
