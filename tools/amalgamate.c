/* tools/amalgamate.c — writes the single-file devkit.h users copy.
 *
 *   build/amalgamate devkit.h dist/devkit.h
 *
 * Starting from one header it follows every local `#include "..."` (a path
 * relative to the including file that exists in the tree) recursively and
 * puts the file's text in its place, once; an include of a file already
 * placed is dropped. `__has_include("...")` of a file that will be placed is
 * replaced by 1, so a backend that the tree has is compiled in, and the
 * user leaves it out with DEVKIT_NO_CUDA / DEVKIT_NO_VULKAN as before.
 * Nothing here names devkit's files: when headers move (the model layer in
 * models/), the same rule follows them.
 *
 * Size: the GPU code in files under a generated/ folder is written as C
 * arrays of numbers ("0x07230203," is 11 characters for 4 bytes; xxd's
 * "0x50, " is 6 for 1). Each such array `static const T NAME[] = {...};`
 * (T: unsigned char or uint32_t) becomes a zero-filled `static T NAME[N]`
 * that keeps its type, size and attributes, plus its bytes as a base64
 * string (1.33 characters a byte) decoded into it by a constructor when the
 * program loads (about 1 MB, 2-4 ms on a 2-core VM). Tables that point at the
 * arrays stay constant initializers. Before base64, a blob that shrinks by
 * a tenth or more is compressed with a small LZ77 (the LZ4 block layout:
 * a token of literal and match lengths, the literals, a 2-byte offset):
 * SPIR-V compresses about 3x; the CUDA fatbin is already zstd-compressed by
 * nvcc and is stored as it is. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#define MAX_FILES 256

static char *placed[MAX_FILES];
static int n_placed;
/* --keep FILE: a file another amalgamation holds (the model layer's keeps
 * devkit.h); an include of it stays an include, of its base name, since the
 * two single files sit side by side */
static const char *keep[8];
static int n_keep;
static FILE *out;
static long blob_bytes, stored_bytes, blob_count;

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  char *p;
  long n;
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  p = (char *)malloc((size_t)n + 1);
  if (!p || fread(p, 1, (size_t)n, f) != (size_t)n) { fclose(f); free(p); return NULL; }
  p[n] = 0;
  fclose(f);
  return p;
}

/* dir/rel with "x/../" folded, so one file has one name */
static void resolve(const char *from, const char *rel, char *outp, size_t cap) {
  char buf[2048], *parts[128], *s;
  int n = 0, i;
  const char *slash = strrchr(from, '/');
  if (slash) snprintf(buf, sizeof buf, "%.*s/%s", (int)(slash - from), from, rel);
  else snprintf(buf, sizeof buf, "%s", rel);
  for (s = strtok(buf, "/"); s && n < 128; s = strtok(NULL, "/")) {
    if (!strcmp(s, ".")) continue;
    if (!strcmp(s, "..") && n > 0 && strcmp(parts[n - 1], "..")) { n--; continue; }
    parts[n++] = s;
  }
  outp[0] = 0;
  for (i = 0; i < n; i++) {
    size_t l = strlen(outp);
    snprintf(outp + l, cap - l, "%s%s", i ? "/" : "", parts[i]);
  }
}

static int exists(const char *p) {
  FILE *f = fopen(p, "rb");
  if (f) fclose(f);
  return f != NULL;
}

static int was_placed(const char *p) {
  int i;
  for (i = 0; i < n_placed; i++)
    if (!strcmp(placed[i], p)) return 1;
  return 0;
}

/* the "path" of `#include "path"` on this line, or NULL */
static const char *local_include(const char *line, char *path, size_t cap) {
  const char *p = line, *q;
  while (*p == ' ' || *p == '\t') p++;
  if (*p++ != '#') return NULL;
  while (*p == ' ' || *p == '\t') p++;
  if (strncmp(p, "include", 7)) return NULL;
  p += 7;
  while (*p == ' ' || *p == '\t') p++;
  if (*p++ != '"' || !(q = strchr(p, '"')) || (size_t)(q - p) >= cap) return NULL;
  memcpy(path, p, (size_t)(q - p));
  path[q - p] = 0;
  return path;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* the decoder every blob uses, written once per conditional block that may
 * hold blobs (guarded, so a second copy is skipped) */
static void emit_decoder(void) {
  fputs("#ifndef DK__AMALG_B64\n"
        "#define DK__AMALG_B64\n"
        "/* amalgamation: the GPU code below is stored as base64 and decoded into\n"
        " * its array when the program loads (tools/amalgamate.c) */\n"
        "/* LZ77 in the LZ4 block layout; src holds exactly one block for n bytes */\n"
        "static size_t dk__amalg_lz(const unsigned char *src, size_t sn, unsigned char *dst, size_t n) {\n"
        "  size_t i = 0, o = 0;\n"
        "  while (i < sn) {\n"
        "    unsigned tok = src[i++];\n"
        "    size_t lit = tok >> 4, len = (tok & 15) + 4, off, k;\n"
        "    if (lit == 15) while (i < sn) { unsigned b = src[i++]; lit += b; if (b != 255) break; }\n"
        "    if (lit > sn - i || lit > n - o) return 0;\n"
        "    memcpy(dst + o, src + i, lit);\n"
        "    i += lit; o += lit;\n"
        "    if (i >= sn) break;\n"
        "    if (sn - i < 2) return 0;\n"
        "    off = (size_t)src[i] | (size_t)src[i + 1] << 8;\n"
        "    i += 2;\n"
        "    if ((tok & 15) == 15) while (i < sn) { unsigned b = src[i++]; len += b; if (b != 255) break; }\n"
        "    if (off == 0 || off > o || len > n - o) return 0;\n"
        "    for (k = 0; k < len; k++, o++) dst[o] = dst[o - off];   /* overlapping copies repeat */\n"
        "  }\n"
        "  return o;\n"
        "}\n"
        "/* base64 text -> bytes (lz: then LZ-decompressed); elem 4: little-endian words */\n"
        "static void dk__amalg_unpack(const char *s, unsigned char *dst, size_t n, size_t elem, size_t lz) {\n"
        "  size_t i = 0, k;\n"
        "  unsigned v = 0, bits = 0;\n"
        "  unsigned char *raw = lz ? (unsigned char *)malloc(lz) : dst;\n"
        "  size_t cap = lz ? lz : n;\n"
        "  if (!raw) return;   /* the backend then finds its code all zeros and refuses to load it */\n"
        "  static const char a64[] = \"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/\";\n"
        "  unsigned char val[256];\n"
        "  memset(val, 64, sizeof val);\n"
        "  for (k = 0; k < 64; k++) val[(unsigned char)a64[k]] = (unsigned char)k;\n"
        "  for (; *s && i < cap; s++) {\n"
        "    unsigned d = val[(unsigned char)*s];\n"
        "    if (d == 64) continue;   /* '=' padding */\n"
        "    v = (v << 6) | d;\n"
        "    bits += 6;\n"
        "    if (bits >= 8) { bits -= 8; raw[i++] = (unsigned char)(v >> bits); }\n"
        "  }\n"
        "  if (lz) {\n"
        "    if (dk__amalg_lz(raw, i, dst, n) != n) memset(dst, 0, n);\n"
        "    free(raw);\n"
        "  }\n"
        "  /* the bytes are little-endian words; put them in host order */\n"
        "  if (elem == 4) {\n"
        "    for (k = 0; k + 4 <= n; k += 4) {\n"
        "      uint32_t w = (uint32_t)dst[k] | (uint32_t)dst[k + 1] << 8 | (uint32_t)dst[k + 2] << 16 |\n"
        "                   (uint32_t)dst[k + 3] << 24;\n"
        "      memcpy(dst + k, &w, 4);\n"
        "    }\n"
        "  }\n"
        "}\n"
        "#endif\n",
        out);
}

/* LZ77 in the LZ4 block layout, greedy with a hash of 4 bytes; matches
 * end 5 bytes before the end, so the last sequence is literals only. */
static void put_len(unsigned char *o, size_t *on, size_t v) {
  while (v >= 255) { o[(*on)++] = 255; v -= 255; }
  o[(*on)++] = (unsigned char)v;
}
static size_t lz_compress(const unsigned char *in, size_t n, unsigned char *o) {
  static size_t table[1 << 16];
  size_t i = 0, anchor = 0, on = 0, k;
  for (k = 0; k < (1 << 16); k++) table[k] = (size_t)-1;
  while (n >= 12 && i + 12 <= n) {
    unsigned h = (unsigned)(((uint32_t)in[i] | (uint32_t)in[i + 1] << 8 | (uint32_t)in[i + 2] << 16 |
                             (uint32_t)in[i + 3] << 24) * 2654435761u >> 16);
    size_t cand = table[h], len, lit;
    table[h] = i;
    if (cand == (size_t)-1 || i - cand > 65535 || memcmp(in + cand, in + i, 4)) { i++; continue; }
    for (len = 4; i + len + 5 < n && in[cand + len] == in[i + len]; len++) {}
    lit = i - anchor;
    o[on++] = (unsigned char)((lit >= 15 ? 15 : lit) << 4 | (len - 4 >= 15 ? 15 : len - 4));
    if (lit >= 15) put_len(o, &on, lit - 15);
    memcpy(o + on, in + anchor, lit);
    on += lit;
    o[on++] = (unsigned char)((i - cand) & 255);
    o[on++] = (unsigned char)((i - cand) >> 8);
    if (len - 4 >= 15) put_len(o, &on, len - 4 - 15);
    i += len;
    anchor = i;
  }
  k = n - anchor;
  o[on++] = (unsigned char)((k >= 15 ? 15 : k) << 4);
  if (k >= 15) put_len(o, &on, k - 15);
  memcpy(o + on, in + anchor, k);
  return on + k;
}

/* `static const T NAME[] ATTRS = {numbers};` starting at *pp: rewritten as
 * described at the top; returns 0 if the text is not such an array */
static int blob(const char **pp) {
  const char *p = *pp, *name, *ne, *attrs, *ae, *open, *close, *q;
  int elem;
  const char *type;
  unsigned char *bytes;
  size_t n = 0, cap, i, col, raw_n, lz_size = 0;
  if (!strncmp(p, "static const unsigned char ", 27)) { type = "unsigned char"; elem = 1; name = p + 27; }
  else if (!strncmp(p, "static const uint32_t ", 22)) { type = "uint32_t"; elem = 4; name = p + 22; }
  else return 0;
  for (ne = name; *ne == '_' || (*ne >= 'a' && *ne <= 'z') || (*ne >= 'A' && *ne <= 'Z') || (*ne >= '0' && *ne <= '9'); ne++) {}
  if (ne == name || strncmp(ne, "[]", 2)) return 0;
  attrs = ne + 2;
  ae = strchr(attrs, '=');
  if (!ae || memchr(attrs, '\n', (size_t)(ae - attrs)) || memchr(attrs, ';', (size_t)(ae - attrs))) return 0;
  for (open = ae + 1; *open == ' ' || *open == '\n'; open++) {}
  if (*open != '{' || !(close = strchr(open, '}'))) return 0;
  for (q = close + 1; *q == ' ' || *q == '\n'; q++) {}
  if (*q != ';') return 0;
  cap = (size_t)(close - open) / 2 + 16;
  bytes = (unsigned char *)malloc(cap * 4);
  if (!bytes) return 0;
  for (q = open + 1; q < close;) {
    char *e;
    unsigned long v = strtoul(q, &e, 0);
    if (e == q) { q++; continue; }
    for (i = 0; i < (size_t)elem; i++) bytes[n++] = (unsigned char)(v >> (8 * i));
    q = e;
  }
  {
    /* compressed if that saves a tenth; the worst case grows by n/255 + 16 */
    unsigned char *z = (unsigned char *)malloc(n + n / 255 + 16);
    size_t zn = z ? lz_compress(bytes, n, z) : n;
    if (z && zn < n - n / 10) {
      free(bytes);
      bytes = z;
      lz_size = zn;
    } else {
      free(z);
    }
  }
  while (attrs < ae && attrs[0] == ' ') attrs++;
  emit_decoder();
  raw_n = n;
  if (lz_size) n = lz_size;
  fprintf(out, "static %s %.*s[%lu]%s%.*s;\n", type, (int)(ne - name), name, (unsigned long)(raw_n / (size_t)elem),
          ae > attrs ? " " : "", (int)(ae - attrs), attrs);
  fprintf(out, "static const char %.*s__b64[] =\n\"", (int)(ne - name), name);
  for (i = 0, col = 0; i < n; i += 3) {
    unsigned v = (unsigned)bytes[i] << 16 | (i + 1 < n ? (unsigned)bytes[i + 1] << 8 : 0) | (i + 2 < n ? bytes[i + 2] : 0);
    fputc(b64[v >> 18 & 63], out);
    fputc(b64[v >> 12 & 63], out);
    fputc(i + 1 < n ? b64[v >> 6 & 63] : '=', out);
    fputc(i + 2 < n ? b64[v & 63] : '=', out);
    if ((col += 4) >= 96 && i + 3 < n) { fputs("\"\n\"", out); col = 0; }
  }
  fputs("\";\n", out);
  fprintf(out, "static void %.*s__load(void) __attribute__((constructor));\n", (int)(ne - name), name);
  fprintf(out, "static void %.*s__load(void) { dk__amalg_unpack(%.*s__b64, (unsigned char *)%.*s, sizeof %.*s, %d, %lu); }\n",
          (int)(ne - name), name, (int)(ne - name), name, (int)(ne - name), name, (int)(ne - name), name, elem,
          (unsigned long)lz_size);
  blob_bytes += (long)raw_n;
  stored_bytes += (long)n;
  blob_count++;
  free(bytes);
  *pp = q + 1;
  if (**pp == '\n') (*pp)++;
  return 1;
}

static int place(const char *path) {
  char *text = read_file(path), inc[1024], res[2048];
  const char *p, *eol;
  int generated = strstr(path, "generated/") != NULL;
  if (!text) { fprintf(stderr, "amalgamate: cannot read %s\n", path); return 1; }
  if (n_placed == MAX_FILES) { fprintf(stderr, "amalgamate: more than %d files\n", MAX_FILES); return 1; }
  placed[n_placed++] = strdup(path);
  fprintf(out, "/* ==== %s ==== */\n", path);
  for (p = text; *p; p = eol) {
    size_t len;
    char line[4096];
    if (generated && blob(&p)) { eol = p; continue; }
    eol = strchr(p, '\n');
    eol = eol ? eol + 1 : p + strlen(p);
    len = (size_t)(eol - p);
    if (local_include(p, inc, sizeof inc) && len < sizeof line) {
      int k;
      resolve(path, inc, res, sizeof res);
      for (k = 0; k < n_keep; k++)
        if (!strcmp(res, keep[k])) break;
      if (k < n_keep) {
        const char *b = strrchr(res, '/');
        if (!was_placed(res)) fprintf(out, "#include \"%s\"\n", b ? b + 1 : res);
        if (!was_placed(res) && n_placed < MAX_FILES) placed[n_placed++] = strdup(res);
        continue;
      }
      if (exists(res)) {
        if (!was_placed(res) && place(res)) return 1;
        continue;
      }
    }
    /* __has_include("x") of a file in the tree: it is placed here, so 1 */
    if (len < sizeof line) {
      memcpy(line, p, len);
      line[len] = 0;
    }
    if (len < sizeof line && strstr(line, "__has_include(\"")) {
      char *h, *e;
      while ((h = strstr(line, "__has_include(\"")) && (e = strstr(h + 15, "\")"))) {
        char rel[1024];
        snprintf(rel, sizeof rel, "%.*s", (int)(e - (h + 15)), h + 15);
        resolve(path, rel, res, sizeof res);
        if (!exists(res)) break;
        *h = '1';
        memmove(h + 1, e + 2, strlen(e + 2) + 1);
      }
      fputs(line, out);
      continue;
    }
    fwrite(p, 1, len, out);
  }
  fprintf(out, "/* ==== end of %s ==== */\n", path);
  free(text);
  return 0;
}

int main(int argc, char **argv) {
  char tmp[2048];
  const char *ob;
  int i;
  for (i = 3; i + 1 < argc && !strcmp(argv[i], "--keep") && n_keep < 8; i += 2) keep[n_keep++] = argv[i + 1];
  if (argc < 3 || i != argc) { fprintf(stderr, "usage: amalgamate ROOT_HEADER OUTPUT [--keep FILE]...\n"); return 2; }
  snprintf(tmp, sizeof tmp, "%s.tmp", argv[2]);
  out = fopen(tmp, "wb");
  if (!out) { fprintf(stderr, "amalgamate: cannot write %s\n", tmp); return 1; }
  ob = strrchr(argv[2], '/');
  ob = ob ? ob + 1 : argv[2];
  if (n_keep)
    fprintf(out, "/* %s — the single-file amalgamation of %s and what it includes, beside\n"
                 " * devkit.h's own. Generated by tools/amalgamate.c; do not edit (edit the sources\n"
                 " * and run ./build.sh). */\n", ob, argv[1]);
  else
    fprintf(out, "/* devkit.h — the single-file amalgamation of devkit: the core, the CPU, CUDA and\n"
                 " * Vulkan backends and their GPU code in one header. Generated by tools/amalgamate.c\n"
                 " * from the repository's %s; do not edit (edit the sources and run ./build.sh).\n"
                 " * Leave a backend out with -DDEVKIT_NO_CUDA or -DDEVKIT_NO_VULKAN. */\n", argv[1]);
  if (place(argv[1])) { fclose(out); remove(tmp); return 1; }
  if (fclose(out) != 0 || rename(tmp, argv[2]) != 0) { fprintf(stderr, "amalgamate: cannot write %s\n", argv[2]); return 1; }
  fprintf(stderr, "[amalgamate] %s: %d files, %ld blobs (%ld bytes of GPU code, %ld stored, as base64)\n", argv[2],
          n_placed, blob_count, blob_bytes, stored_bytes);
  return 0;
}
