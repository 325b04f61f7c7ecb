#!/usr/bin/env bash
# tools/check_vk_decls.sh — check backends/vk_api.h, devkit's own Vulkan
# declarations, against the Vulkan headers' vulkan_core.h.
#
# vk_api.h declares the part of the Vulkan API the backend uses, so that
# building devkit needs no Vulkan headers. This script reads the names it
# declares (structs and their fields, enum constants, macros, typedefs,
# handles) and fails if any differs from vulkan_core.h:
#   - C, two programs: one built on vk_api.h, one on vulkan_core.h, print
#     every struct's size and alignment, every field's offset, every enum's
#     size (also under -fshort-enums), every enum constant and numeric or
#     string macro; the outputs must be equal.
#   - C++, one program holding both headers in two namespaces: every typedef
#     (structs, enums, handles, flags, every PFN_vk* signature) and every
#     field's type must be the same type, where a struct or enum of one
#     header stands for the one of the same name in the other; every macro
#     must have the same type and value (function-like ones at test inputs).
#   - each struct must have as many fields as vulkan_core.h's.
# A build-time/CI check only: devkit never includes vulkan_core.h.
#
#   tools/check_vk_decls.sh      (VULKAN_INCLUDE defaults to /usr/include)
set -euo pipefail
cd "$(dirname "$0")/.."
INC=${VULKAN_INCLUDE:-/usr/include}
CORE=$INC/vulkan/vulkan_core.h
CC=${CC:-gcc}
CXX=${CXX:-g++}
[ -f "$CORE" ] || { echo "[check_vk_decls] no $CORE: skipped"; exit 0; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# ---- what vk_api.h declares, one item a line ---------------------------------
#   M name | F name nargs     object-like / function-like macro
#   S name | f struct field   complete struct and its fields, in order
#   I name                    struct declared but left incomplete
#   E enum | e constant       enum and its constants
#   H name D|N                handle, dispatchable or not
#   T name                    any other typedef (flags, basic types, PFN_vk*)
$CC -fpreprocessed -dD -E -P backends/vk_api.h 2>/dev/null | awk '
  function flush_struct(body,   n, st, i, k, parts, p, nm) {
    n = split(body, st, ";")
    for (i = 1; i <= n; i++) {
      k = split(st[i], parts, ",")
      for (p = 1; p <= k; p++) {
        nm = parts[p]; sub(/\[[^]]*\][ \t]*$/, "", nm); sub(/[ \t]+$/, "", nm)
        if (nm == "") continue
        match(nm, /[A-Za-z_][A-Za-z0-9_]*$/); print "f", sname, substr(nm, RSTART, RLENGTH)
      }
    }
  }
  /^#define / {
    name = $2; args = ""
    if (match(name, /\(/)) { args = substr($0, index($0, "(") + 1); sub(/\).*/, "", args); name = substr(name, 1, RSTART - 1) }
    if (name ~ /^(DK_VK_API_H|VKAPI_(ATTR|CALL|PTR)|VK_DEFINE_(NON_DISPATCHABLE_)?HANDLE)$/ || seen[name]++) next
    if (args != "") print "F", name, split(args, a, ","); else print "M", name
    next
  }
  /^#/ { next }
  /^VK_DEFINE_HANDLE\(/ { s = $0; gsub(/.*\(|\).*/, "", s); print "H", s, "D"; next }
  /^VK_DEFINE_NON_DISPATCHABLE_HANDLE\(/ { s = $0; gsub(/.*\(|\).*/, "", s); print "H", s, "N"; next }
  /^typedef struct [A-Za-z0-9_]+ [A-Za-z0-9_]+;/ { s = $4; sub(/;/, "", s); print "I", s; next }
  /^typedef struct [A-Za-z0-9_]+ \{/ { sname = $3; print "S", sname; body = $0; sub(/^[^{]*\{/, "", body); instruct = 1 }
  /^typedef enum [A-Za-z0-9_]+ \{/ { ename = $3; print "E", ename; inenum = 1 }
  instruct {
    if (!/^typedef struct/) body = body " " $0
    if (/}/) { sub(/}.*/, "", body); flush_struct(body); instruct = 0 }
    next
  }
  inenum {
    s = $0
    while (match(s, /[A-Z_][A-Z0-9_]* *=/)) { c = substr(s, RSTART, RLENGTH); sub(/ *=/, "", c); print "e", ename, c; s = substr(s, RSTART + RLENGTH) }
    if (/}/) inenum = 0
    next
  }
  /^typedef .*\(VKAPI_PTR \*PFN_/ { s = $0; sub(/.*\(VKAPI_PTR \*/, "", s); sub(/\).*/, "", s); print "T", s; next }
  /^typedef [^(]*;/ { s = $NF; sub(/;/, "", s); print "T", s; next }
' > "$TMP/items"

nocompile() { echo "[check_vk_decls] FAILED: a generated check does not compile (a name here that vulkan_core.h lacks?)"; exit 1; }
items() { awk -v k="$1" '$1 == k { $1 = ""; sub(/^ /, ""); print }' "$TMP/items"; }

# ---- C: sizes, offsets and values as the C compiler sees them -----------------
{
  echo '#include <stdio.h>'
  echo '#include <stddef.h>'
  echo '#ifdef DKC_OFFICIAL'
  echo '#include <vulkan/vulkan_core.h>'
  echo '#else'
  echo '#include "backends/vk_api.h"'
  echo '#endif'
  echo '#define TYPE(x) _Generic((x), void *: "void *", char *: "char *", int: "int", unsigned: "unsigned", \'
  echo '  long: "long", unsigned long: "unsigned long", long long: "long long", unsigned long long: "unsigned long long")'
  echo 'int main(void) {'
  items S | while read -r s; do
    echo "  printf(\"$s size %zu align %zu\\n\", sizeof($s), _Alignof($s));"
  done
  items f | while read -r s f; do echo "  printf(\"$s.$f %zu\\n\", offsetof($s, $f));"; done
  items E | while read -r s; do echo "  printf(\"$s size %zu\\n\", sizeof($s));"; done
  items e | while read -r _ c; do echo "  printf(\"$c %lld\\n\", (long long)$c);"; done
  items M | while read -r m; do
    if grep -q "^#define $m \"" backends/vk_api.h; then echo "  printf(\"$m %s %s\\n\", TYPE($m), $m);"
    elif [ "$m" = VK_NULL_HANDLE ]; then echo "  printf(\"$m %s %d\\n\", TYPE($m), $m == 0);"
    else echo "  printf(\"$m %s %llu\\n\", TYPE($m), (unsigned long long)($m));"; fi
  done
  echo '  return 0;'
  echo '}'
} > "$TMP/layout.c"
fail=0
# -fshort-enums too: an enum must keep its 32 bits by a MAX_ENUM constant, as the spec's do
for flags in "" -fshort-enums; do
  $CC -std=c11 -Wall -Werror $flags -I. -o "$TMP/ours" "$TMP/layout.c" || nocompile
  $CC -std=c11 -Wall -Werror $flags -I. -I"$INC" -DVK_NO_PROTOTYPES -DDKC_OFFICIAL -o "$TMP/theirs" "$TMP/layout.c" || nocompile
  "$TMP/ours" > "$TMP/ours.txt"
  "$TMP/theirs" > "$TMP/theirs.txt"
  if ! diff "$TMP/theirs.txt" "$TMP/ours.txt" > "$TMP/layout.diff"; then
    echo "[check_vk_decls] layout or values differ${flags:+ with $flags} (< vulkan_core.h, > vk_api.h):"
    cat "$TMP/layout.diff"
    fail=1
  fi
done

# ---- field counts -------------------------------------------------------------
items S | while read -r s; do
  ours=$(awk -v s="$s" '$1 == "f" && $2 == s' "$TMP/items" | wc -l)
  theirs=$(awk -v s="$s" '$0 ~ "^typedef struct " s " \\{" { p = 1; next } p && /^}/ { exit } p && /;/ { n++ } END { print n + 0 }' "$CORE")
  [ "$ours" = "$theirs" ] || echo "$s: $ours fields here, $theirs in vulkan_core.h"
done > "$TMP/counts"
if [ -s "$TMP/counts" ]; then echo "[check_vk_decls] field counts differ:"; cat "$TMP/counts"; fail=1; fi

# ---- C++: types of typedefs, fields, constants and macros ---------------------
{
  cat <<'CPP'
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <type_traits>
#include <utility>
namespace off {
#include <vulkan/vulkan_core.h>
}
CPP
  # the official macros' values, taken before ours replace them
  items M | while read -r m; do echo "static const auto dkc_off_$m = $m; typedef decltype($m) dkc_offt_$m;"; done
  items F | while read -r m n; do
    ps=""; as=""; for ((i = 0; i < n; i++)); do ps="$ps${ps:+, }uint64_t a$i"; as="$as${as:+, }a$i"; done
    echo "static auto dkc_off_$m = []($ps) { return $m($as); };"
  done
  { items M; items F | cut -d' ' -f1; echo VKAPI_ATTR; echo VKAPI_CALL; echo VKAPI_PTR; echo VK_DEFINE_HANDLE
    echo VK_DEFINE_NON_DISPATCHABLE_HANDLE; echo VULKAN_CORE_H_; } | sed 's/^/#undef /'
  cat <<'CPP'
namespace ours {
#include "backends/vk_api.h"
}
/* a struct, enum or handle of vulkan_core.h stands for ours of the same name */
template <class T> struct tw { typedef void type; };
template <class A, class B> constexpr bool same();
template <class A, class B, bool = std::is_function<A>::value && std::is_function<B>::value> struct fn_same : std::false_type {};
template <class R1, class... P1, class R2, class... P2> struct fn_same<R1(P1...), R2(P2...), true> {
  template <bool eq, class = void> struct params { static constexpr bool value = false; };
  template <class V> struct params<true, V> {
    static constexpr bool value = same<R1, R2>() && std::is_same<std::integer_sequence<bool, true, same<P1, P2>()...>,
                                                                 std::integer_sequence<bool, same<P1, P2>()..., true>>::value;
  };
  static constexpr bool value = params<sizeof...(P1) == sizeof...(P2)>::value;
};
template <class A, class B> constexpr bool same() {
  if constexpr (std::is_same<A, B>::value) return true;
  else if constexpr (std::is_const<A>::value != std::is_const<B>::value || std::is_volatile<A>::value != std::is_volatile<B>::value) return false;
  else if constexpr (std::is_const<A>::value || std::is_volatile<A>::value) return same<std::remove_cv_t<A>, std::remove_cv_t<B>>();
  else if constexpr (std::is_pointer<A>::value && std::is_pointer<B>::value) return same<std::remove_pointer_t<A>, std::remove_pointer_t<B>>();
  else if constexpr (std::is_array<A>::value && std::is_array<B>::value)
    return std::extent<A>::value == std::extent<B>::value && same<std::remove_extent_t<A>, std::remove_extent_t<B>>();
  else if constexpr (std::is_function<A>::value && std::is_function<B>::value) return fn_same<A, B>::value;
  else return std::is_same<typename tw<A>::type, B>::value;
}
template <class A, class B> static bool eq(A a, B b) {
  if constexpr (std::is_same<A, B>::value) return a == b;
  else return (void)a, (void)b, false;
}
static bool eq(const char *a, const char *b) { return strcmp(a, b) == 0; }
CPP
  items S | while read -r s; do echo "template <> struct tw<off::$s> { typedef ours::$s type; };"; done
  items I | while read -r s; do echo "template <> struct tw<off::$s> { typedef ours::$s type; };"; done
  items E | while read -r s; do echo "template <> struct tw<off::$s> { typedef ours::$s type; };"; done
  items H | while read -r h k; do
    [ "$k" = N ] && echo "#if VK_USE_64_BIT_PTR_DEFINES == 1"
    echo "template <> struct tw<off::${h}_T> { typedef ours::${h}_T type; };"
    [ "$k" = N ] && echo "#endif"
  done
  cat <<'CPP'
static int bad, checks;
#define CHECK(cond, ...) do { checks++; if (!(cond)) { printf(__VA_ARGS__); printf("\n"); bad++; } } while (0)
int main() {
CPP
  { items T; items S; items I; items E; items H | cut -d' ' -f1; } | while read -r t; do
    echo "  CHECK((same<off::$t, ours::$t>()), \"type $t differs\");"
  done
  items f | while read -r s f; do
    echo "  CHECK((same<decltype(off::$s::$f), decltype(ours::$s::$f)>()), \"type of $s.$f differs\");"
  done
  items e | while read -r _ c; do
    echo "  CHECK((same<decltype(off::$c), decltype(ours::$c)>()) && (long long)off::$c == (long long)ours::$c, \"$c: %lld here, %lld in vulkan_core.h\", (long long)ours::$c, (long long)off::$c);"
  done
  items M | while read -r m; do
    echo "  CHECK((std::is_same<dkc_offt_$m, decltype($m)>::value) && eq(dkc_off_$m, $m), \"macro $m differs\");"
  done
  items F | while read -r m n; do
    for v in 0 1 0x12345 0xFFFFFFFF 0x2040A0C3 0xFFFFFFFFFFFFFFFF; do
      as=""; for ((i = 0; i < n; i++)); do as="$as${as:+, }(uint64_t)$v + $i"; done
      echo "  CHECK((std::is_same<decltype(dkc_off_$m($as)), decltype($m($as))>::value) && dkc_off_$m($as) == $m($as), \"macro $m($as) differs\");"
    done
  done
  echo '  printf("%d %d\n", checks, bad);'
  echo '  return bad != 0;'
  echo '}'
} > "$TMP/types.cpp"
$CXX -std=c++17 -Wall -Werror -Wno-unused-variable -Wno-unused-function -I. -I"$INC" -DVK_NO_PROTOTYPES -o "$TMP/types" "$TMP/types.cpp" || nocompile
if ! "$TMP/types" > "$TMP/types.txt"; then
  echo "[check_vk_decls] types or macros differ:"
  sed '$d' "$TMP/types.txt"
  fail=1
fi

if [ $fail != 0 ]; then echo "[check_vk_decls] FAILED: backends/vk_api.h differs from $CORE"; exit 1; fi
ver=$(sed -n 's/^#define VK_HEADER_VERSION_COMPLETE VK_MAKE_API_VERSION(0, *\([0-9]*\), *\([0-9]*\),.*/\1.\2./p' "$CORE")
ver=$ver$(sed -n 's/^#define VK_HEADER_VERSION \([0-9]*\).*/\1/p' "$CORE")
echo "[check_vk_decls] backends/vk_api.h matches $CORE (headers $ver): $(items S | wc -l) structs," \
  "$(items f | wc -l) fields, $(items e | wc -l) enum constants, $(($(items M | wc -l) + $(items F | wc -l))) macros," \
  "$(items T | grep -c PFN_vk) entry-point types; $(wc -l < "$TMP/ours.txt") layout lines, $(tail -1 "$TMP/types.txt" | cut -d' ' -f1) type checks"
