/* models/json.h — a small, strict JSON reader for the model layer: the
 * config.json and tokenizer.json of a Hugging Face model directory.
 *
 * devkit.h parses safetensors headers with a JSON parser of its own, kept
 * private there; this one builds a tree the model code can query by key.
 * (The two may be merged later.)
 *
 *     dk_json *j;
 *     if (dk_json_parse(text, len, "config.json", &j) == DK_OK) {
 *       int h = dk_json_find(j, 0, "hidden_size");       // node index, or -1
 *       double v; dk_json_number(j, h, &v);
 *       dk_json_free(j);
 *     }
 *
 * Nodes are numbered; 0 is the root. An object's members and an array's
 * elements are a chain: dk_json_first(j, node), then dk_json_next(j, child);
 * a member's key is dk_json_key. Strings are decoded (escapes, \u with
 * surrogate pairs) and NUL-terminated. Errors name the file and the byte
 * offset. Nesting is limited to 128 levels (no deep recursion on hostile
 * input). Part of the model layer: header-only, DEVKIT_MODELS_IMPLEMENTATION
 * in one file.
 */
#ifndef DK_MODELS_JSON_H
#define DK_MODELS_JSON_H

#include "../devkit.h"
#include <stddef.h>

#ifndef DK_MODELS_API
#define DK_MODELS_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { DK_JSON_NULL, DK_JSON_BOOL, DK_JSON_NUMBER, DK_JSON_STRING, DK_JSON_ARRAY, DK_JSON_OBJECT } dk_json_type;

typedef struct dk_json dk_json;

DK_MODELS_API dk_status dk_json_parse(const char *text, size_t len, const char *name, dk_json **out);
/* reads a whole file (at most 256 MiB) and parses it */
DK_MODELS_API dk_status dk_json_load(const char *path, dk_json **out);
DK_MODELS_API void      dk_json_free(dk_json *j);
DK_MODELS_API dk_json_type dk_json_type_of(const dk_json *j, int node);
/* the member of object `node` named key, or -1 (also when node is not an object) */
DK_MODELS_API int       dk_json_find(const dk_json *j, int node, const char *key);
DK_MODELS_API int       dk_json_first(const dk_json *j, int node);   /* first member / element, or -1 */
DK_MODELS_API int       dk_json_next(const dk_json *j, int node);    /* the next sibling, or -1 */
DK_MODELS_API int       dk_json_count(const dk_json *j, int node);   /* members / elements */
DK_MODELS_API const char *dk_json_key(const dk_json *j, int node);   /* a member's key, or NULL */
/* value accessors: 0 and *out untouched when the node is of another type */
DK_MODELS_API int       dk_json_number(const dk_json *j, int node, double *out);
DK_MODELS_API int       dk_json_bool(const dk_json *j, int node, int *out);
DK_MODELS_API const char *dk_json_string(const dk_json *j, int node, size_t *len);   /* NULL if not a string */

#ifdef __cplusplus
}
#endif
#endif /* DK_MODELS_JSON_H */

/* ======================================================================== */
#if defined(DEVKIT_MODELS_IMPLEMENTATION) && !defined(DK_MODELS_JSON_IMPL)
#define DK_MODELS_JSON_IMPL

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  dk_json_type type;
  int next, first, last, count;
  int key;              /* offset of the key in the arena, or -1 */
  int str;              /* strings: offset in the arena */
  size_t len;
  double num;
} dk_json__node;

struct dk_json {
  dk_json__node *n;
  int count, cap;
  char *arena;          /* decoded strings, each NUL-terminated */
  size_t used, arena_cap;
};

typedef struct {
  const char *s, *name;
  size_t len, i;
  dk_json *j;
} dk_json__p;

#define DK_JSON__MAX_DEPTH 128

static dk_status dk_json__err(dk_json__p *p, const char *what) {
  return dk_set_error(DK_ERR_FORMAT, "%s: JSON: %s at byte %zu", p->name, what, p->i);
}

static void dk_json__ws(dk_json__p *p) {
  while (p->i < p->len && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r')) p->i++;
}

static int dk_json__new(dk_json__p *p, dk_json_type t) {
  dk_json *j = p->j;
  if (j->count == j->cap) {
    int nc = j->cap ? j->cap * 2 : 256;
    dk_json__node *nn = (dk_json__node *)realloc(j->n, sizeof *nn * (size_t)nc);
    if (!nn) return -1;
    j->n = nn;
    j->cap = nc;
  }
  memset(&j->n[j->count], 0, sizeof j->n[0]);
  j->n[j->count].type = t;
  j->n[j->count].next = j->n[j->count].first = j->n[j->count].last = -1;
  j->n[j->count].key = -1;
  return j->count++;
}

static int dk_json__hex4(const char *s, uint32_t *out) {
  int k;
  *out = 0;
  for (k = 0; k < 4; k++) {
    char c = s[k];
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (v < 0) return 0;
    *out = *out * 16 + (uint32_t)v;
  }
  return 1;
}

/* a string at p->i (the opening quote), decoded into the arena; *off its start */
static dk_status dk_json__string(dk_json__p *p, int *off, size_t *olen) {
  dk_json *j = p->j;
  size_t start = j->used;
  p->i++;
  for (;;) {
    unsigned char c;
    if (p->i >= p->len) return dk_json__err(p, "unterminated string");
    c = (unsigned char)p->s[p->i];
    if (c == '"') { p->i++; break; }
    if (c < 0x20) return dk_json__err(p, "control character in a string");
    if (c != '\\') { j->arena[j->used++] = (char)c; p->i++; continue; }
    if (p->i + 1 >= p->len) return dk_json__err(p, "unterminated escape");
    c = (unsigned char)p->s[p->i + 1];
    p->i += 2;
    switch (c) {
      case '"': case '\\': case '/': j->arena[j->used++] = (char)c; break;
      case 'b': j->arena[j->used++] = '\b'; break;
      case 'f': j->arena[j->used++] = '\f'; break;
      case 'n': j->arena[j->used++] = '\n'; break;
      case 'r': j->arena[j->used++] = '\r'; break;
      case 't': j->arena[j->used++] = '\t'; break;
      case 'u': {
        uint32_t cp, lo;
        if (p->i + 4 > p->len || !dk_json__hex4(p->s + p->i, &cp)) return dk_json__err(p, "bad \\u escape");
        p->i += 4;
        if (cp >= 0xD800 && cp < 0xDC00) {
          if (p->i + 6 > p->len || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u' || !dk_json__hex4(p->s + p->i + 2, &lo) ||
              lo < 0xDC00 || lo > 0xDFFF)
            return dk_json__err(p, "unpaired surrogate");
          p->i += 6;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          return dk_json__err(p, "unpaired surrogate");
        }
        /* at most 4 bytes from 6 or 12 source bytes: the arena (as long as
         * the text) cannot overflow */
        if (cp < 0x80) j->arena[j->used++] = (char)cp;
        else if (cp < 0x800) { j->arena[j->used++] = (char)(0xC0 | cp >> 6); j->arena[j->used++] = (char)(0x80 | (cp & 63)); }
        else if (cp < 0x10000) {
          j->arena[j->used++] = (char)(0xE0 | cp >> 12); j->arena[j->used++] = (char)(0x80 | ((cp >> 6) & 63));
          j->arena[j->used++] = (char)(0x80 | (cp & 63));
        } else {
          j->arena[j->used++] = (char)(0xF0 | cp >> 18); j->arena[j->used++] = (char)(0x80 | ((cp >> 12) & 63));
          j->arena[j->used++] = (char)(0x80 | ((cp >> 6) & 63)); j->arena[j->used++] = (char)(0x80 | (cp & 63));
        }
        break;
      }
      default: return dk_json__err(p, "unknown escape");
    }
  }
  *off = (int)start;
  *olen = j->used - start;
  j->arena[j->used++] = 0;
  return DK_OK;
}

static dk_status dk_json__value(dk_json__p *p, int depth, int *out);

static void dk_json__append(dk_json *j, int parent, int child) {
  dk_json__node *pn = &j->n[parent];
  if (pn->last < 0) pn->first = child;
  else j->n[pn->last].next = child;
  j->n[parent].last = child;
  j->n[parent].count++;
}

static dk_status dk_json__value(dk_json__p *p, int depth, int *out) {
  dk_status s;
  int node;
  char c;
  if (depth > DK_JSON__MAX_DEPTH) return dk_json__err(p, "nesting deeper than 128");
  dk_json__ws(p);
  if (p->i >= p->len) return dk_json__err(p, "a value was expected");
  c = p->s[p->i];
  if (c == '{' || c == '[') {
    int obj = c == '{';
    if ((node = dk_json__new(p, obj ? DK_JSON_OBJECT : DK_JSON_ARRAY)) < 0) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: JSON: no memory", p->name);
    p->i++;
    dk_json__ws(p);
    if (p->i < p->len && p->s[p->i] == (obj ? '}' : ']')) { p->i++; *out = node; return DK_OK; }
    for (;;) {
      int key = -1, child;
      size_t kl;
      dk_json__ws(p);
      if (obj) {
        if (p->i >= p->len || p->s[p->i] != '"') return dk_json__err(p, "a key was expected");
        if ((s = dk_json__string(p, &key, &kl))) return s;
        dk_json__ws(p);
        if (p->i >= p->len || p->s[p->i] != ':') return dk_json__err(p, "':' was expected");
        p->i++;
      }
      if ((s = dk_json__value(p, depth + 1, &child))) return s;
      p->j->n[child].key = key;
      dk_json__append(p->j, node, child);
      dk_json__ws(p);
      if (p->i < p->len && p->s[p->i] == ',') { p->i++; continue; }
      if (p->i < p->len && p->s[p->i] == (obj ? '}' : ']')) { p->i++; break; }
      return dk_json__err(p, obj ? "',' or '}' was expected" : "',' or ']' was expected");
    }
    *out = node;
    return DK_OK;
  }
  if (c == '"') {
    int off;
    size_t l;
    if ((node = dk_json__new(p, DK_JSON_STRING)) < 0) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: JSON: no memory", p->name);
    if ((s = dk_json__string(p, &off, &l))) return s;
    p->j->n[node].str = off;
    p->j->n[node].len = l;
    *out = node;
    return DK_OK;
  }
  {
    static const char *const words[3] = {"null", "true", "false"};
    int k;
    for (k = 0; k < 3; k++) {
      size_t wl = strlen(words[k]);
      if (p->len - p->i >= wl && !memcmp(p->s + p->i, words[k], wl)) {
        if ((node = dk_json__new(p, k == 0 ? DK_JSON_NULL : DK_JSON_BOOL)) < 0)
          return dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: JSON: no memory", p->name);
        p->j->n[node].num = k == 1;
        p->i += wl;
        *out = node;
        return DK_OK;
      }
    }
  }
  if (c == '-' || (c >= '0' && c <= '9')) {
    char buf[64], *end;
    size_t k = 0, st = p->i;
    while (p->i < p->len && k + 1 < sizeof buf && strchr("+-0123456789.eE", p->s[p->i])) buf[k++] = p->s[p->i++];
    buf[k] = 0;
    if ((node = dk_json__new(p, DK_JSON_NUMBER)) < 0) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: JSON: no memory", p->name);
    p->j->n[node].num = strtod(buf, &end);
    if (*end || k == 0) { p->i = st; return dk_json__err(p, "bad number"); }
    *out = node;
    return DK_OK;
  }
  return dk_json__err(p, "unexpected character");
}

DK_MODELS_API void dk_json_free(dk_json *j) {
  if (!j) return;
  free(j->n);
  free(j->arena);
  free(j);
}

DK_MODELS_API dk_status dk_json_parse(const char *text, size_t len, const char *name, dk_json **out) {
  dk_json__p p;
  dk_json *j;
  dk_status s;
  int root;
  *out = NULL;
  j = (dk_json *)calloc(1, sizeof *j);
  if (!j || !(j->arena = (char *)malloc(len + 1))) { free(j); return dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: JSON: no memory", name); }
  j->arena_cap = len + 1;
  p.s = text; p.len = len; p.i = 0; p.j = j; p.name = name;
  s = dk_json__value(&p, 0, &root);
  if (s == DK_OK) {
    dk_json__ws(&p);
    if (p.i != p.len) s = dk_json__err(&p, "text after the value");
  }
  if (s != DK_OK) { dk_json_free(j); return s; }
  *out = j;
  return DK_OK;
}

DK_MODELS_API dk_status dk_json_load(const char *path, dk_json **out) {
  FILE *f = fopen(path, "rb");
  long n;
  char *buf;
  const char *base = strrchr(path, '/');
  dk_status s;
  *out = NULL;
  if (!f) return dk_set_error(DK_ERR_IO, "cannot open %s", path);
  if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || n > (256L << 20) || fseek(f, 0, SEEK_SET)) {
    fclose(f);
    return dk_set_error(DK_ERR_IO, "%s: cannot read it, or it is over 256 MiB", path);
  }
  buf = (char *)malloc((size_t)n + 1);
  if (!buf) { fclose(f); return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no memory for %s", path); }
  if (fread(buf, 1, (size_t)n, f) != (size_t)n) { fclose(f); free(buf); return dk_set_error(DK_ERR_IO, "%s: read failed", path); }
  fclose(f);
  s = dk_json_parse(buf, (size_t)n, base ? base + 1 : path, out);
  free(buf);
  return s;
}

static int dk_json__ok(const dk_json *j, int node) { return j && node >= 0 && node < j->count; }

DK_MODELS_API dk_json_type dk_json_type_of(const dk_json *j, int node) {
  return dk_json__ok(j, node) ? j->n[node].type : DK_JSON_NULL;
}
DK_MODELS_API int dk_json_first(const dk_json *j, int node) { return dk_json__ok(j, node) ? j->n[node].first : -1; }
DK_MODELS_API int dk_json_next(const dk_json *j, int node) { return dk_json__ok(j, node) ? j->n[node].next : -1; }
DK_MODELS_API int dk_json_count(const dk_json *j, int node) { return dk_json__ok(j, node) ? j->n[node].count : 0; }
DK_MODELS_API const char *dk_json_key(const dk_json *j, int node) {
  return dk_json__ok(j, node) && j->n[node].key >= 0 ? j->arena + j->n[node].key : NULL;
}
DK_MODELS_API int dk_json_find(const dk_json *j, int node, const char *key) {
  int c;
  if (!dk_json__ok(j, node) || j->n[node].type != DK_JSON_OBJECT) return -1;
  /* the last of duplicate keys wins, as in Python's json */
  {
    int found = -1;
    for (c = j->n[node].first; c >= 0; c = j->n[c].next)
      if (!strcmp(j->arena + j->n[c].key, key)) found = c;
    return found;
  }
}
DK_MODELS_API int dk_json_number(const dk_json *j, int node, double *out) {
  if (!dk_json__ok(j, node) || j->n[node].type != DK_JSON_NUMBER) return 0;
  *out = j->n[node].num;
  return 1;
}
DK_MODELS_API int dk_json_bool(const dk_json *j, int node, int *out) {
  if (!dk_json__ok(j, node) || j->n[node].type != DK_JSON_BOOL) return 0;
  *out = j->n[node].num != 0;
  return 1;
}
DK_MODELS_API const char *dk_json_string(const dk_json *j, int node, size_t *len) {
  if (!dk_json__ok(j, node) || j->n[node].type != DK_JSON_STRING) return NULL;
  if (len) *len = j->n[node].len;
  return j->arena + j->n[node].str;
}

#endif /* DEVKIT_MODELS_IMPLEMENTATION */
