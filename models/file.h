/* models/file.h — model files read through a read-only memory mapping: the
 * GGUF, safetensors and llama2.c readers of devkit's model layer.
 *
 * Part of the model layer (models/): header-only, built only on devkit.h's
 * public API (tensors are created with dk_tensor_new_at and filled with
 * dk_tensor_upload_range; errors go through dk_set_error, so dk_last_error()
 * has the message). In exactly one file of a program:
 *
 *     #define DEVKIT_IMPLEMENTATION
 *     #include "devkit.h"
 *     #define DEVKIT_MODELS_IMPLEMENTATION
 *     #include "models/file.h"        (models/llama.h, bpe.h, ... include it)
 *
 * A model file read through a read-only memory mapping: GGUF v2 and v3,
 * safetensors, llama2.c checkpoints (the legacy version-0 layout) and
 * llama2.c tokenizer files. Opening checks every count, offset and size in
 * the file before anything uses it, so a malformed, truncated or hostile file
 * is DK_ERR_FORMAT (DK_ERR_IO when it cannot be read) with the file, the byte
 * offset and the field in the message, and never costs more host memory than
 * a small multiple of the file's own size.
 *
 *   dk_file *f;
 *   dk_tensor *wq;
 *   if (dk_file_open("model.gguf", &f) != DK_OK) { puts(dk_last_error()); ... }
 *   dk_file_meta_int(f, "llama.block_count", &n_layers);
 *   dk_file_load_tensor(f, "blk.0.attn_q.weight", dev, &wq);
 *   dk_file_close(f);     // loaded tensors stay valid
 *
 * Shapes are devkit's, outermost first: a GGUF tensor with ne = [K, N] is
 * [N, K] here. dk_file_load_tensor copies from the mapping straight into the
 * device's memory, in chunks, with no second host copy of the tensor;
 * quantized and f16 data stay as stored. The tensor is named as in the file,
 * and its creation site is "<file>:<tensor>" (e.g.
 * "stories260K.gguf:blk.3.attn_q.weight"), so a misplaced weight is easy to
 * trace in an op's error message.
 *
 * Per format:
 *   GGUF: every metadata type, nested arrays included; general.alignment;
 *     tensors of f32, f16, bf16, i32 and the block formats q8_0, q4_0, q4_1,
 *     q5_0, q5_1, q2_K..q6_K, iq4_nl, iq4_xs, iq3_xxs, iq3_s, iq2_xxs, iq2_xs,
 *     iq2_s load (any mix per file), other GGML types are listed (supported
 *     = 0, type_name says which) and refused by name.
 *   safetensors: F32, F16, BF16, I32 load; other dtypes are listed. The JSON
 *     header is parsed strictly (duplicate keys, unknown fields, ranges that
 *     overlap, leave holes or leave the file are errors). __metadata__ entries
 *     are string metadata.
 *   llama2.c checkpoint: the header's seven int32 fields are metadata
 *     "llama2c.dim", "llama2c.hidden_dim", "llama2c.n_layers",
 *     "llama2c.n_heads", "llama2c.n_kv_heads", "llama2c.vocab_size" (negative:
 *     the classifier is stored separately) and "llama2c.seq_len". The weights
 *     carry no names in the file; they are listed under GGUF's llama names:
 *     token_embd.weight, blk.N.{attn_norm,attn_q,attn_k,attn_v,attn_output,
 *     ffn_norm,ffn_gate,ffn_down,ffn_up}.weight, output_norm.weight, and
 *     output.weight only when the classifier is not shared.
 *   llama2.c tokenizer (its format is not recognizable by content: open it
 *     with dk_file_open_as): "tokenizer.ggml.tokens" (array of strings),
 *     "tokenizer.ggml.scores" (array of f32) and "llama2c.max_token_length",
 *     the same keys a GGUF vocabulary uses. */

#ifndef DK_MODELS_FILE_H
#define DK_MODELS_FILE_H

#include "../devkit.h"
#include <stddef.h>
#include <stdint.h>

#ifndef DK_MODELS_API
#define DK_MODELS_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dk_file dk_file;
typedef enum {
  DK_FILE_AUTO = 0,          /* dk_file_open_as: recognize by content */
  DK_FILE_GGUF,
  DK_FILE_SAFETENSORS,
  DK_FILE_LLAMA2C,           /* checkpoint */
  DK_FILE_LLAMA2C_TOKENIZER,
  DK_FILE_HF                 /* a Hugging Face model directory seen as a GGUF file (models/hf.h: dk_hf_open) */
} dk_file_format;

/* metadata value types, numbered as GGUF numbers them */
typedef enum {
  DK_META_NONE = -1,
  DK_META_U8 = 0, DK_META_I8, DK_META_U16, DK_META_I16, DK_META_U32, DK_META_I32, DK_META_F32,
  DK_META_BOOL, DK_META_STRING, DK_META_ARRAY, DK_META_U64, DK_META_I64, DK_META_F64
} dk_meta_type;

/* One metadata value. Arrays are read element by element with dk_meta_at,
 * which is O(1) for numbers and for walking an array of strings or arrays
 * in order. The fields ending in _ are private. */
typedef struct {
  dk_meta_type type;
  dk_meta_type elem_type;     /* arrays: the elements' type */
  uint64_t count;             /* arrays: elements; strings: bytes */
  const unsigned char *p_, *end_, *cur_p_;
  uint64_t cur_i_;
} dk_meta;

typedef struct {
  const char *name;
  int supported;              /* 0: a type devkit has no dtype for; dtype is meaningless */
  dk_dtype dtype;
  const char *type_name;      /* as the format names it: "q8_0", "q4_K", "F64" */
  int ndim;
  int64_t shape[DEVKIT_MAX_DIMS];   /* outermost first */
  uint64_t offset;            /* of the data, from the start of the file */
  uint64_t nbytes;
} dk_file_tensor;

DK_MODELS_API dk_status dk_file_open(const char *path, dk_file **out);
DK_MODELS_API dk_status dk_file_open_as(const char *path, dk_file_format format, dk_file **out);
/* The same checks on bytes in memory (tests, fuzzing); data must outlive the
 * file; name is what messages call it. */
DK_MODELS_API dk_status dk_file_open_memory(const void *data, size_t size, const char *name, dk_file_format format,
                                         dk_file **out);
DK_MODELS_API void      dk_file_close(dk_file *f);
DK_MODELS_API dk_file_format dk_file_format_of(const dk_file *f);
DK_MODELS_API const char *dk_file_format_name(dk_file_format format);  /* "gguf" */
DK_MODELS_API const char *dk_file_name(const dk_file *f);     /* the base name, as in messages */
DK_MODELS_API int       dk_file_version(const dk_file *f);    /* GGUF: 2 or 3; others 0 */
/* whether f holds GGUF's keys and tensor names: a GGUF file, or the view
 * models/hf.h makes of a Hugging Face directory */
DK_MODELS_API int       dk_file_has_gguf_keys(const dk_file *f);

/* metadata: by position, or by key. A missing key is not an error for
 * dk_file_meta_find (it returns 0); the typed lookups report a missing key or
 * a value of another kind as DK_ERR_FORMAT naming the file and the key. */
DK_MODELS_API int64_t   dk_file_meta_count(const dk_file *f);
DK_MODELS_API dk_status dk_file_meta_at(const dk_file *f, int64_t i, const char **key, dk_meta *value);
DK_MODELS_API int       dk_file_meta_find(const dk_file *f, const char *key, dk_meta *value);
DK_MODELS_API dk_status dk_file_meta_int(const dk_file *f, const char *key, int64_t *out);    /* any integer or bool */
DK_MODELS_API dk_status dk_file_meta_float(const dk_file *f, const char *key, double *out);  /* any number */
/* a string is not NUL-terminated: it points into the file, len bytes long */
DK_MODELS_API dk_status dk_file_meta_string(const dk_file *f, const char *key, const char **s, size_t *len);
DK_MODELS_API dk_status dk_meta_int(const dk_meta *m, int64_t *out);
DK_MODELS_API dk_status dk_meta_float(const dk_meta *m, double *out);
DK_MODELS_API dk_status dk_meta_string(const dk_meta *m, const char **s, size_t *len);
DK_MODELS_API dk_status dk_meta_at(dk_meta *array, uint64_t i, dk_meta *elem);
DK_MODELS_API const char *dk_meta_type_name(dk_meta_type t);  /* "u32", "array" */

/* tensors */
DK_MODELS_API int64_t   dk_file_tensor_count(const dk_file *f);
DK_MODELS_API dk_status dk_file_tensor_at(const dk_file *f, int64_t i, dk_file_tensor *out);
DK_MODELS_API int64_t   dk_file_tensor_find(const dk_file *f, const char *name);   /* index, or -1 */
/* its bytes in the mapping, valid until dk_file_close; NULL for a bad index */
DK_MODELS_API const void *dk_file_tensor_data(const dk_file *f, int64_t i);
/* A new tensor on d with the named tensor's dtype, shape and bytes. A name
 * the file lacks is DK_ERR_FORMAT; a type devkit cannot hold is
 * DK_ERR_UNSUPPORTED; both name the file and the tensor. */
DK_MODELS_API dk_status dk_file_load_tensor(const dk_file *f, const char *name, dk_device d, dk_tensor **out);

#ifdef __cplusplus
}
#endif
#endif /* DK_MODELS_FILE_H */

/* ======================================================================== */
#if defined(DEVKIT_MODELS_IMPLEMENTATION) && !defined(DK_MODELS_FILE_IMPL)
#define DK_MODELS_FILE_IMPL

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define DK_FILE__NAME_LEN 128   /* devkit's tensor names hold 127 bytes */
#define DK_FILE__SITE_LEN 200

static float dk_file__bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static void dk_file__copy_str(char *dst, size_t cap, const char *src) {
  size_t n = src ? strlen(src) : 0;
  if (!cap) return;
  if (n >= cap) n = cap - 1;
  if (n) memcpy(dst, src, n);
  dst[n] = 0;
}

/* Every reader works on (bytes, size) and checks each read against the size
 * before it happens; offsets, sizes and counts are combined with overflow
 * checks; counts are checked against the bytes left before anything is
 * allocated for them, so host memory stays within a small multiple of the
 * file's size whatever the file claims. */


#define DK_FILE__META_DEPTH 8                      /* nested arrays deeper than this are refused */
#define DK_FILE__ST_HEADER_MAX ((uint64_t)100 << 20) /* safetensors' own limit on its JSON header */
#define DK_FILE__LOAD_CHUNK ((size_t)32 << 20)     /* bytes per upload while loading a tensor */

typedef struct {
  char *key;
  dk_meta_type type;
  const unsigned char *val, *end;   /* the value as GGUF encodes it (a string: u64 length, then bytes) */
  uint64_t aoff, alen;              /* while parsing: the value's place in the arena (val is NULL) */
} dk_file__fmeta;

typedef struct {
  char *name;
  int supported;
  dk_dtype dtype;
  const char *type_name;
  int ndim;
  int64_t shape[DEVKIT_MAX_DIMS];
  uint64_t offset, nbytes;          /* offset from the start of the file */
  const dk_file *home;              /* a view's tensor: the file holding its bytes (NULL: this one) */
  char *orig;                       /* a view's tensor: its name there (NULL: name) */
} dk_file__ftensor;

struct dk_file {
  dk_file_format format;
  int version;
  char name[256];
  const unsigned char *data;
  uint64_t size;
  void *map;                        /* the mapping; NULL for dk_file_open_memory */
  size_t map_len;
  dk_file__fmeta *meta;
  int64_t n_meta;
  dk_file__ftensor *tensors;
  int64_t n_tensors;
  unsigned char *arena;             /* values devkit re-encoded (safetensors, llama2.c, views) */
  uint64_t arena_len, arena_cap;
  dk_file **parts;                  /* a view: the files its tensors live in, closed with it */
  int n_parts;
};

static const dk_file *dk_file__home(const dk_file *f, const dk_file__ftensor *t) { return t->home ? t->home : f; }

/* ---- little-endian reads and checked arithmetic --------------------------- */

static uint32_t dk_file__le32(const unsigned char *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t dk_file__le64(const unsigned char *p) { return (uint64_t)dk_file__le32(p) | ((uint64_t)dk_file__le32(p + 4) << 32); }
static void dk_file__put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24);
}
static void dk_file__put64(unsigned char *p, uint64_t v) { dk_file__put32(p, (uint32_t)v); dk_file__put32(p + 4, (uint32_t)(v >> 32)); }
static int dk_file__add_ok(uint64_t a, uint64_t b, uint64_t *r) {
  if (a > UINT64_MAX - b) return 0;
  *r = a + b;
  return 1;
}
static int dk_file__mul_ok(uint64_t a, uint64_t b, uint64_t *r) {
  if (a && b > UINT64_MAX / a) return 0;
  *r = a * b;
  return 1;
}
/* *acc += a * b, checked */
static int dk_file__madd(uint64_t *acc, uint64_t a, uint64_t b) {
  uint64_t p;
  return dk_file__mul_ok(a, b, &p) && dk_file__add_ok(*acc, p, acc);
}

static dk_status dk_file__ferr(const char *file, uint64_t off, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static dk_status dk_file__ferr(const char *file, uint64_t off, const char *fmt, ...) {
  char tmp[1536];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  return dk_set_error(DK_ERR_FORMAT, "%s: at byte %llu: %s", file, (unsigned long long)off, tmp);
}

/* a cursor over the file's bytes */
typedef struct {
  const unsigned char *p;
  uint64_t size, off;
  const char *name;
} dk_file__rd;

static dk_status dk_file__rd_need(const dk_file__rd *r, uint64_t n, const char *what) {
  if (r->off > r->size || n > r->size - r->off)
    return dk_file__ferr(r->name, r->off, "%s needs %llu bytes, but the file ends at byte %llu (truncated?)", what,
                    (unsigned long long)n, (unsigned long long)r->size);
  return DK_OK;
}

/* a C string copy of n bytes that must not hold a NUL */
static char *dk_file__strndup_checked(const unsigned char *s, uint64_t n) {
  char *c;
  if (memchr(s, 0, (size_t)n)) return NULL;
  c = (char *)malloc((size_t)n + 1);
  if (!c) return NULL;
  memcpy(c, s, (size_t)n);
  c[n] = 0;
  return c;
}

/* a GGUF string (u64 length, bytes) that becomes a C string: a metadata key
 * or a tensor name, 1..max bytes with no NUL. `whose` names it in messages
 * ("metadata entry #3's key"). */
static dk_status dk_file__rd_name(dk_file__rd *r, const char *whose, uint64_t max, char **out) {
  char what[160];
  uint64_t n;
  dk_status s;
  snprintf(what, sizeof what, "%s length", whose);
  if ((s = dk_file__rd_need(r, 8, what))) return s;
  n = dk_file__le64(r->p + r->off);
  if (n == 0 || n > max)
    return dk_file__ferr(r->name, r->off, "%s length %llu; it must be 1..%llu bytes", whose, (unsigned long long)n,
                    (unsigned long long)max);
  r->off += 8;
  if ((s = dk_file__rd_need(r, n, whose))) return s;
  if (memchr(r->p + r->off, 0, (size_t)n)) return dk_file__ferr(r->name, r->off, "%s holds a NUL byte", whose);
  if (!(*out = dk_file__strndup_checked(r->p + r->off, n)))
    return dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: no host memory for %s", r->name, whose);
  r->off += n;
  return DK_OK;
}

/* the arena grows; values record offsets until parsing ends */
static dk_status dk_file__arena_reserve(dk_file *f, uint64_t n, unsigned char **out) {
  uint64_t need;
  if (!dk_file__add_ok(f->arena_len, n, &need) || need > ((uint64_t)1 << 40))
    return dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: metadata too large to hold", f->name);
  if (need > f->arena_cap) {
    uint64_t cap = f->arena_cap ? f->arena_cap : 256;
    unsigned char *p;
    while (cap < need) cap *= 2;
    p = (unsigned char *)realloc(f->arena, (size_t)cap);
    if (!p) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: no host memory for %llu bytes of metadata", f->name,
                             (unsigned long long)cap);
    f->arena = p;
    f->arena_cap = cap;
  }
  *out = f->arena + f->arena_len;
  f->arena_len = need;
  return DK_OK;
}

static void dk_file__meta_fixup(dk_file *f) {
  int64_t i;
  for (i = 0; i < f->n_meta; i++)
    if (!f->meta[i].val) {
      f->meta[i].val = f->arena + f->meta[i].aoff;
      f->meta[i].end = f->meta[i].val + f->meta[i].alen;
    }
}

static int dk_file__cmp_meta_key(const void *a, const void *b) {
  return strcmp((*(const dk_file__fmeta *const *)a)->key, (*(const dk_file__fmeta *const *)b)->key);
}
static int dk_file__cmp_tensor_name(const void *a, const void *b) {
  return strcmp((*(const dk_file__ftensor *const *)a)->name, (*(const dk_file__ftensor *const *)b)->name);
}
static int dk_file__cmp_tensor_off(const void *a, const void *b) {
  const dk_file__ftensor *x = *(const dk_file__ftensor *const *)a, *y = *(const dk_file__ftensor *const *)b;
  if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
  if (x->nbytes != y->nbytes) return x->nbytes < y->nbytes ? -1 : 1;
  return 0;
}

/* Duplicate keys and tensor names; for tensors also overlapping data (and,
 * with no_holes, bytes of [lo, hi) that belong to no tensor). */
static dk_status dk_file__check_unique(dk_file *f, uint64_t hdr_off, int no_holes, uint64_t lo, uint64_t hi) {
  int64_t i, n = f->n_meta > f->n_tensors ? f->n_meta : f->n_tensors;
  void **v = (void **)malloc(sizeof(void *) * (size_t)(n ? n : 1));
  dk_status s = DK_OK;
  if (!v) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: no host memory to index the file", f->name);
  for (i = 0; i < f->n_meta; i++) v[i] = &f->meta[i];
  qsort(v, (size_t)f->n_meta, sizeof *v, dk_file__cmp_meta_key);
  for (i = 1; i < f->n_meta && s == DK_OK; i++)
    if (!strcmp(((dk_file__fmeta *)v[i])->key, ((dk_file__fmeta *)v[i - 1])->key))
      s = dk_file__ferr(f->name, hdr_off, "metadata key '%s' appears twice", ((dk_file__fmeta *)v[i])->key);
  for (i = 0; i < f->n_tensors && s == DK_OK; i++) v[i] = &f->tensors[i];
  if (s == DK_OK) qsort(v, (size_t)f->n_tensors, sizeof *v, dk_file__cmp_tensor_name);
  for (i = 1; i < f->n_tensors && s == DK_OK; i++)
    if (!strcmp(((dk_file__ftensor *)v[i])->name, ((dk_file__ftensor *)v[i - 1])->name))
      s = dk_file__ferr(f->name, hdr_off, "tensor name '%s' appears twice", ((dk_file__ftensor *)v[i])->name);
  if (s == DK_OK) qsort(v, (size_t)f->n_tensors, sizeof *v, dk_file__cmp_tensor_off);
  {
    uint64_t at = lo;
    const dk_file__ftensor *prev = NULL;
    for (i = 0; i < f->n_tensors && s == DK_OK; i++) {
      const dk_file__ftensor *t = (const dk_file__ftensor *)v[i];
      if (prev && t->nbytes && t->offset < prev->offset + prev->nbytes)
        s = dk_file__ferr(f->name, t->offset, "the data of tensor '%s' [%llu, %llu) overlaps tensor '%s' [%llu, %llu)", t->name,
                     (unsigned long long)t->offset, (unsigned long long)(t->offset + t->nbytes), prev->name,
                     (unsigned long long)prev->offset, (unsigned long long)(prev->offset + prev->nbytes));
      else if (no_holes && t->offset > at)
        s = dk_file__ferr(f->name, at, "bytes [%llu, %llu) belong to no tensor (the data must be fully indexed)",
                     (unsigned long long)at, (unsigned long long)t->offset);
      if (t->offset + t->nbytes > at) at = t->offset + t->nbytes;
      if (t->nbytes) prev = t;
    }
    if (s == DK_OK && no_holes && at < hi)
      s = dk_file__ferr(f->name, at, "bytes [%llu, %llu) at the end belong to no tensor (the data must be fully indexed)",
                   (unsigned long long)at, (unsigned long long)hi);
  }
  free(v);
  return s;
}

/* element count of a shape, checked: at most INT64_MAX */
static int dk_file__shape_numel_ok(int ndim, const int64_t *shape, uint64_t *numel) {
  uint64_t n = 1;
  int i;
  for (i = 0; i < ndim; i++) {
    if (shape[i] < 0 || !dk_file__mul_ok(n, (uint64_t)shape[i], &n) || n > (uint64_t)INT64_MAX) return 0;
  }
  *numel = n;
  return 1;
}

/* ---- metadata values ------------------------------------------------------ */

static const unsigned dk_file__meta_size[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

DK_MODELS_API const char *dk_meta_type_name(dk_meta_type t) {
  static const char *n[13] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
  return (int)t >= 0 && (int)t < 13 ? n[t] : "none";
}

static void dk_file__meta_make(dk_meta_type t, const unsigned char *v, const unsigned char *end, dk_meta *m) {
  memset(m, 0, sizeof *m);
  m->type = t;
  m->elem_type = DK_META_NONE;
  m->end_ = end;
  if (t == DK_META_STRING) { m->count = dk_file__le64(v); m->p_ = v + 8; }
  else if (t == DK_META_ARRAY) { m->elem_type = (dk_meta_type)dk_file__le32(v); m->count = dk_file__le64(v + 4); m->p_ = v + 12; }
  else { m->count = 1; m->p_ = v; }
  m->cur_p_ = m->p_;
  m->cur_i_ = 0;
}

/* the end of one encoded value (already validated when the file opened) */
static const unsigned char *dk_file__meta_skip(dk_meta_type t, const unsigned char *p) {
  if (t == DK_META_STRING) return p + 8 + dk_file__le64(p);
  if (t == DK_META_ARRAY) {
    dk_meta_type et = (dk_meta_type)dk_file__le32(p);
    uint64_t n = dk_file__le64(p + 4), i;
    p += 12;
    if (et != DK_META_STRING && et != DK_META_ARRAY) return p + n * dk_file__meta_size[et];
    for (i = 0; i < n; i++) p = dk_file__meta_skip(et, p);
    return p;
  }
  return p + dk_file__meta_size[t];
}

DK_MODELS_API dk_status dk_meta_at(dk_meta *a, uint64_t i, dk_meta *elem) {
  const unsigned char *p;
  if (!a || !elem) return dk_set_error(DK_ERR_INVALID, "dk_meta_at: NULL argument");
  if (a->type != DK_META_ARRAY)
    return dk_set_error(DK_ERR_INVALID, "dk_meta_at: the value is a %s, not an array", dk_meta_type_name(a->type));
  if (i >= a->count)
    return dk_set_error(DK_ERR_INVALID, "dk_meta_at: index %llu is outside an array of %llu", (unsigned long long)i,
                     (unsigned long long)a->count);
  if (a->elem_type != DK_META_STRING && a->elem_type != DK_META_ARRAY) {
    p = a->p_ + i * dk_file__meta_size[a->elem_type];
  } else {
    /* variable-sized elements: walk on from the last element read */
    if (i < a->cur_i_) { a->cur_i_ = 0; a->cur_p_ = a->p_; }
    while (a->cur_i_ < i) { a->cur_p_ = dk_file__meta_skip(a->elem_type, a->cur_p_); a->cur_i_++; }
    p = a->cur_p_;
  }
  dk_file__meta_make(a->elem_type, p, a->end_, elem);
  return DK_OK;
}

static int dk_file__meta_is_int(dk_meta_type t) {
  return (t >= DK_META_U8 && t <= DK_META_I32) || t == DK_META_BOOL || t == DK_META_U64 || t == DK_META_I64;
}

DK_MODELS_API dk_status dk_meta_int(const dk_meta *m, int64_t *out) {
  const unsigned char *p;
  if (!m || !out) return dk_set_error(DK_ERR_INVALID, "dk_meta_int: NULL argument");
  p = m->p_;
  switch (m->type) {
  case DK_META_U8: case DK_META_BOOL: *out = p[0]; break;
  case DK_META_I8: *out = (int8_t)p[0]; break;
  case DK_META_U16: *out = (uint16_t)(p[0] | (p[1] << 8)); break;
  case DK_META_I16: *out = (int16_t)(uint16_t)(p[0] | (p[1] << 8)); break;
  case DK_META_U32: *out = dk_file__le32(p); break;
  case DK_META_I32: *out = (int32_t)dk_file__le32(p); break;
  case DK_META_I64: *out = (int64_t)dk_file__le64(p); break;
  case DK_META_U64:
    if (dk_file__le64(p) > (uint64_t)INT64_MAX)
      return dk_set_error(DK_ERR_FORMAT, "dk_meta_int: the u64 value %llu does not fit in int64", (unsigned long long)dk_file__le64(p));
    *out = (int64_t)dk_file__le64(p);
    break;
  default:
    return dk_set_error(DK_ERR_FORMAT, "dk_meta_int: the value is a %s, not an integer", dk_meta_type_name(m->type));
  }
  return DK_OK;
}

DK_MODELS_API dk_status dk_meta_float(const dk_meta *m, double *out) {
  int64_t v;
  dk_status s;
  if (!m || !out) return dk_set_error(DK_ERR_INVALID, "dk_meta_float: NULL argument");
  if (m->type == DK_META_F32) {
    uint32_t u = dk_file__le32(m->p_);
    *out = dk_file__bits_f32(u);
    return DK_OK;
  }
  if (m->type == DK_META_F64) {
    uint64_t u = dk_file__le64(m->p_);
    double d;
    memcpy(&d, &u, 8);
    *out = d;
    return DK_OK;
  }
  if (m->type == DK_META_U64) { *out = (double)dk_file__le64(m->p_); return DK_OK; }
  if (!dk_file__meta_is_int(m->type))
    return dk_set_error(DK_ERR_FORMAT, "dk_meta_float: the value is a %s, not a number", dk_meta_type_name(m->type));
  if ((s = dk_meta_int(m, &v)) != DK_OK) return s;
  *out = (double)v;
  return DK_OK;
}

DK_MODELS_API dk_status dk_meta_string(const dk_meta *m, const char **str, size_t *len) {
  if (!m || !str || !len) return dk_set_error(DK_ERR_INVALID, "dk_meta_string: NULL argument");
  if (m->type != DK_META_STRING)
    return dk_set_error(DK_ERR_FORMAT, "dk_meta_string: the value is a %s, not a string", dk_meta_type_name(m->type));
  *str = (const char *)m->p_;
  *len = (size_t)m->count;
  return DK_OK;
}

/* ---- GGUF ----------------------------------------------------------------- */

typedef struct { const char *name; uint32_t block, bytes; int dt; } dk_file__ggml_type;
/* GGML's type numbers, with the block size and bytes per block of each, so
 * the ranges of types devkit does not load are still checked */
static const dk_file__ggml_type dk_file__ggml_types[40] = {
  {"f32", 1, 4, DK_F32}, {"f16", 1, 2, DK_F16}, {"q4_0", 32, 18, DK_Q4_0}, {"q4_1", 32, 20, DK_Q4_1},
  {NULL, 0, 0, -1}, {NULL, 0, 0, -1}, {"q5_0", 32, 22, DK_Q5_0}, {"q5_1", 32, 24, DK_Q5_1},
  {"q8_0", 32, 34, DK_Q8_0}, {"q8_1", 32, 36, -1}, {"q2_K", 256, 84, DK_Q2_K}, {"q3_K", 256, 110, DK_Q3_K},
  {"q4_K", 256, 144, DK_Q4_K}, {"q5_K", 256, 176, DK_Q5_K}, {"q6_K", 256, 210, DK_Q6_K}, {"q8_K", 256, 292, -1},
  {"iq2_xxs", 256, 66, DK_IQ2_XXS}, {"iq2_xs", 256, 74, DK_IQ2_XS}, {"iq3_xxs", 256, 98, DK_IQ3_XXS}, {"iq1_s", 256, 50, -1},
  {"iq4_nl", 32, 18, DK_IQ4_NL}, {"iq3_s", 256, 110, DK_IQ3_S}, {"iq2_s", 256, 82, DK_IQ2_S}, {"iq4_xs", 256, 136, DK_IQ4_XS},
  {"i8", 1, 1, -1}, {"i16", 1, 2, -1}, {"i32", 1, 4, DK_I32}, {"i64", 1, 8, -1},
  {"f64", 1, 8, -1}, {"iq1_m", 256, 56, -1}, {"bf16", 1, 2, DK_BF16}, {NULL, 0, 0, -1},
  {NULL, 0, 0, -1}, {NULL, 0, 0, -1}, {"tq1_0", 256, 54, -1}, {"tq2_0", 256, 66, -1},
  {NULL, 0, 0, -1}, {NULL, 0, 0, -1}, {NULL, 0, 0, -1}, {"mxfp4", 32, 17, -1},
};

/* check one value of type t at the cursor and step over it */
static dk_status dk_file__gguf_value(dk_file__rd *r, uint32_t t, int depth, const char *key) {
  dk_status s;
  char what[160];
  if (t > 12)
    return dk_file__ferr(r->name, r->off, "metadata '%s': value type %u is not a GGUF type (0..12)", key, t);
  if (t == DK_META_STRING) {
    uint64_t n;
    snprintf(what, sizeof what, "metadata '%.100s': a string's length", key);
    if ((s = dk_file__rd_need(r, 8, what))) return s;
    n = dk_file__le64(r->p + r->off);
    r->off += 8;
    snprintf(what, sizeof what, "metadata '%.100s': a string", key);
    if ((s = dk_file__rd_need(r, n, what))) return s;
    r->off += n;
    return DK_OK;
  }
  if (t == DK_META_ARRAY) {
    uint32_t et;
    uint64_t n, i, bytes;
    if (depth >= DK_FILE__META_DEPTH)
      return dk_file__ferr(r->name, r->off, "metadata '%s': arrays nested deeper than %d", key, DK_FILE__META_DEPTH);
    snprintf(what, sizeof what, "metadata '%.100s': an array's element type and count", key);
    if ((s = dk_file__rd_need(r, 12, what))) return s;
    et = dk_file__le32(r->p + r->off);
    n = dk_file__le64(r->p + r->off + 4);
    if (et > 12)
      return dk_file__ferr(r->name, r->off, "metadata '%s': array element type %u is not a GGUF type (0..12)", key, et);
    r->off += 12;
    if (et != DK_META_STRING && et != DK_META_ARRAY) {
      if (!dk_file__mul_ok(n, dk_file__meta_size[et], &bytes))
        return dk_file__ferr(r->name, r->off - 12, "metadata '%s': an array of %llu %s values cannot fit in any file", key,
                        (unsigned long long)n, dk_meta_type_name((dk_meta_type)et));
      snprintf(what, sizeof what, "metadata '%.100s': an array of %llu %s", key, (unsigned long long)n,
               dk_meta_type_name((dk_meta_type)et));
      if ((s = dk_file__rd_need(r, bytes, what))) return s;
      if (et == DK_META_BOOL)
        for (i = 0; i < n; i++)
          if (r->p[r->off + i] > 1)
            return dk_file__ferr(r->name, r->off + i, "metadata '%s': bool element %llu is %u; a GGUF bool is 0 or 1", key,
                            (unsigned long long)i, r->p[r->off + i]);
      r->off += bytes;
      return DK_OK;
    }
    /* each element takes at least 8 bytes, so a false count runs out of file */
    for (i = 0; i < n; i++)
      if ((s = dk_file__gguf_value(r, et, depth + 1, key))) return s;
    return DK_OK;
  }
  snprintf(what, sizeof what, "metadata '%.100s': a %s", key, dk_meta_type_name((dk_meta_type)t));
  if ((s = dk_file__rd_need(r, dk_file__meta_size[t], what))) return s;
  if (t == DK_META_BOOL && r->p[r->off] > 1)
    return dk_file__ferr(r->name, r->off, "metadata '%s': bool is %u; a GGUF bool is 0 or 1", key, r->p[r->off]);
  r->off += dk_file__meta_size[t];
  return DK_OK;
}

static dk_status dk_file__gguf_parse(dk_file *f) {
  dk_file__rd r;
  dk_status s;
  uint32_t ver;
  uint64_t n_tensors, n_kv, i, align = 32, data_start, avail;
  int64_t k;
  r.p = f->data; r.size = f->size; r.off = 0; r.name = f->name;
  if ((s = dk_file__rd_need(&r, 24, "the GGUF header (magic, version, tensor count, metadata count)"))) return s;
  if (memcmp(r.p, "GGUF", 4))
    return dk_file__ferr(f->name, 0, "the magic is not 'GGUF'");
  ver = dk_file__le32(r.p + 4);
  if (ver == 0x02000000u || ver == 0x03000000u)
    return dk_file__ferr(f->name, 4, "a big-endian GGUF file (version %u byte-swapped); devkit reads little-endian GGUF",
                    ver >> 24);
  if (ver != 2 && ver != 3)
    return dk_file__ferr(f->name, 4, "GGUF version %u; devkit reads versions 2 and 3", ver);
  f->version = (int)ver;
  n_tensors = dk_file__le64(r.p + 8);
  n_kv = dk_file__le64(r.p + 16);
  r.off = 24;
  /* smallest possible entries: a key-value 8+1+4+1 bytes, a tensor info 8+1+4+4+8 */
  if (n_kv > (r.size - r.off) / 14)
    return dk_file__ferr(f->name, 16, "metadata count %llu cannot fit in a file of %llu bytes", (unsigned long long)n_kv,
                    (unsigned long long)r.size);
  if (n_tensors > (r.size - r.off) / 25)
    return dk_file__ferr(f->name, 8, "tensor count %llu cannot fit in a file of %llu bytes", (unsigned long long)n_tensors,
                    (unsigned long long)r.size);
  f->meta = (dk_file__fmeta *)calloc((size_t)(n_kv ? n_kv : 1), sizeof *f->meta);
  f->tensors = (dk_file__ftensor *)calloc((size_t)(n_tensors ? n_tensors : 1), sizeof *f->tensors);
  if (!f->meta || !f->tensors) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: no host memory for the file's index", f->name);

  for (i = 0; i < n_kv; i++) {
    dk_file__fmeta *m = &f->meta[i];
    uint64_t start;
    uint32_t t;
    char what[96];
    snprintf(what, sizeof what, "metadata entry #%llu's key", (unsigned long long)i);
    if ((s = dk_file__rd_name(&r, what, 65535, &m->key))) return s;
    f->n_meta = (int64_t)i + 1;
    snprintf(what, sizeof what, "metadata '%.40s': the value type", m->key);
    if ((s = dk_file__rd_need(&r, 4, what))) return s;
    t = dk_file__le32(r.p + r.off);
    r.off += 4;
    start = r.off;
    if ((s = dk_file__gguf_value(&r, t, 0, m->key))) return s;
    m->type = (dk_meta_type)t;
    m->val = r.p + start;
    m->end = r.p + r.off;
  }

  for (i = 0; i < n_tensors; i++) {
    dk_file__ftensor *t = &f->tensors[i];
    uint64_t numel = 1, blocks, type_off;
    uint32_t nd, type, d;
    char what[200];
    snprintf(what, sizeof what, "tensor #%llu's name", (unsigned long long)i);
    if ((s = dk_file__rd_name(&r, what, DK_FILE__NAME_LEN - 1, &t->name))) return s;
    f->n_tensors = (int64_t)i + 1;
    snprintf(what, sizeof what, "tensor '%s': the dimension count", t->name);
    if ((s = dk_file__rd_need(&r, 4, what))) return s;
    nd = dk_file__le32(r.p + r.off);
    if (nd > DEVKIT_MAX_DIMS)
      return dk_file__ferr(f->name, r.off, "tensor '%s': %u dimensions; devkit takes at most %d (DEVKIT_MAX_DIMS)", t->name,
                      nd, DEVKIT_MAX_DIMS);
    r.off += 4;
    snprintf(what, sizeof what, "tensor '%s': %u dimensions", t->name, nd);
    if ((s = dk_file__rd_need(&r, 8 * (uint64_t)nd + 12, what))) return s;
    t->ndim = (int)nd;
    for (d = 0; d < nd; d++) {
      uint64_t ne = dk_file__le64(r.p + r.off + 8 * d);
      if (ne > (uint64_t)INT64_MAX || !dk_file__mul_ok(numel, ne, &numel) || numel > (uint64_t)INT64_MAX)
        return dk_file__ferr(f->name, r.off + 8 * d, "tensor '%s': dimension ne[%u] = %llu makes the element count overflow",
                        t->name, d, (unsigned long long)ne);
      t->shape[nd - 1 - d] = (int64_t)ne;   /* ne0 is innermost; devkit lists outermost first */
    }
    r.off += 8 * (uint64_t)nd;
    type_off = r.off;
    type = dk_file__le32(r.p + r.off);
    t->offset = dk_file__le64(r.p + r.off + 4);
    r.off += 12;
    if (type >= 40 || !dk_file__ggml_types[type].name)
      return dk_file__ferr(f->name, type_off, "tensor '%s': type %u is not a GGML type this reader knows", t->name, type);
    t->type_name = dk_file__ggml_types[type].name;
    t->supported = dk_file__ggml_types[type].dt >= 0;
    t->dtype = t->supported ? (dk_dtype)dk_file__ggml_types[type].dt : DK_F32;
    if (dk_file__ggml_types[type].block > 1 && (nd == 0 || (uint64_t)t->shape[nd - 1] % dk_file__ggml_types[type].block))
      return dk_file__ferr(f->name, type_off, "tensor '%s': a %s tensor's ne[0] (%lld) must be a multiple of %u", t->name,
                      t->type_name, nd ? (long long)t->shape[nd - 1] : 0LL, dk_file__ggml_types[type].block);
    blocks = numel / dk_file__ggml_types[type].block;
    if (!dk_file__mul_ok(blocks, dk_file__ggml_types[type].bytes, &t->nbytes))
      return dk_file__ferr(f->name, type_off, "tensor '%s': its byte size overflows", t->name);
  }

  /* general.alignment: a power of two, u32 as the spec has it */
  for (k = 0; k < f->n_meta; k++) {
    if (strcmp(f->meta[k].key, "general.alignment")) continue;
    if (f->meta[k].type != DK_META_U32)
      return dk_file__ferr(f->name, (uint64_t)(f->meta[k].val - f->data), "general.alignment is a %s; GGUF has it as u32",
                      dk_meta_type_name(f->meta[k].type));
    align = dk_file__le32(f->meta[k].val);
    if (align == 0 || (align & (align - 1)))
      return dk_file__ferr(f->name, (uint64_t)(f->meta[k].val - f->data), "general.alignment is %llu; it must be a power of two",
                      (unsigned long long)align);
  }
  if (!dk_file__add_ok(r.off, align - 1, &data_start))
    return dk_file__ferr(f->name, r.off, "the data section's start overflows");
  data_start -= data_start % align;
  avail = data_start <= f->size ? f->size - data_start : 0;
  for (k = 0; k < f->n_tensors; k++) {
    dk_file__ftensor *t = &f->tensors[k];
    if (t->offset % align)
      return dk_file__ferr(f->name, data_start, "tensor '%s': data offset %llu is not a multiple of the alignment %llu", t->name,
                      (unsigned long long)t->offset, (unsigned long long)align);
    if (t->offset > avail || t->nbytes > avail - t->offset)
      return dk_file__ferr(f->name, data_start, "tensor '%s': %s data [%llu, %llu) of the data section lies outside the file "
                      "(the data section has %llu bytes, from byte %llu)", t->name, t->type_name,
                      (unsigned long long)t->offset, (unsigned long long)t->offset + t->nbytes,
                      (unsigned long long)avail, (unsigned long long)data_start);
    t->offset += data_start;
  }
  return dk_file__check_unique(f, 24, 0, 0, 0);
}

/* ---- safetensors ------------------------------------------------------------ */

typedef struct {
  const unsigned char *s, *p, *e;   /* the JSON text */
  const char *name;
  uint64_t base;                    /* file offset of s */
} dk_file__js;

static dk_status dk_file__js_err(const dk_file__js *j, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static dk_status dk_file__js_err(const dk_file__js *j, const char *fmt, ...) {
  char tmp[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  return dk_file__ferr(j->name, j->base + (uint64_t)(j->p - j->s), "safetensors header: %s", tmp);
}

static void dk_file__js_ws(dk_file__js *j) {
  while (j->p < j->e && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static dk_status dk_file__js_char(dk_file__js *j, char c, const char *where) {
  dk_file__js_ws(j);
  if (j->p >= j->e) return dk_file__js_err(j, "the header ends where '%c' was expected %s", c, where);
  if (*j->p != (unsigned char)c) return dk_file__js_err(j, "'%c' expected %s, found '%c'", c, where, *j->p >= 0x20 && *j->p < 0x7f ? *j->p : '?');
  j->p++;
  return DK_OK;
}

static int dk_file__hex4(const unsigned char *p, uint32_t *v) {
  int i;
  *v = 0;
  for (i = 0; i < 4; i++) {
    unsigned c = p[i];
    *v <<= 4;
    if (c >= '0' && c <= '9') *v |= c - '0';
    else if (c >= 'a' && c <= 'f') *v |= c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') *v |= c - 'A' + 10;
    else return 0;
  }
  return 1;
}

/* A JSON string, decoded into a new NUL-terminated buffer (which may hold
 * NULs from \u0000; *len says how long it is). Strict: UTF-8 must be valid,
 * control characters must be escaped, surrogates must pair. */
static dk_status dk_file__js_string(dk_file__js *j, char **out, size_t *len) {
  const unsigned char *q;
  char *b;
  size_t n = 0;
  *out = NULL;
  dk_file__js_ws(j);
  if (j->p >= j->e || *j->p != '"') return dk_file__js_err(j, "a string was expected");
  j->p++;
  for (q = j->p; q < j->e && *q != '"'; q++)
    if (*q == '\\') q++;
  if (q >= j->e) return dk_file__js_err(j, "a string is not terminated");
  b = (char *)malloc((size_t)(q - j->p) + 1);
  if (!b) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: no host memory for the header", j->name);
  while (*j->p != '"') {
    unsigned c = *j->p;
    if (c < 0x20) { free(b); return dk_file__js_err(j, "control character 0x%02x inside a string", c); }
    if (c == '\\') {
      uint32_t u;
      c = j->p[1];
      j->p += 2;
      switch (c) {
      case '"': b[n++] = '"'; break;
      case '\\': b[n++] = '\\'; break;
      case '/': b[n++] = '/'; break;
      case 'b': b[n++] = '\b'; break;
      case 'f': b[n++] = '\f'; break;
      case 'n': b[n++] = '\n'; break;
      case 'r': b[n++] = '\r'; break;
      case 't': b[n++] = '\t'; break;
      case 'u':
        if (j->e - j->p < 4 || !dk_file__hex4(j->p, &u)) { j->p -= 2; free(b); return dk_file__js_err(j, "a bad \\u escape"); }
        j->p += 4;
        if (u >= 0xDC00 && u <= 0xDFFF) { j->p -= 6; free(b); return dk_file__js_err(j, "a lone low surrogate \\u%04X", u); }
        if (u >= 0xD800 && u <= 0xDBFF) {
          uint32_t lo;
          if (j->e - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u' || !dk_file__hex4(j->p + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
            free(b);
            return dk_file__js_err(j, "a high surrogate \\u%04X without its low half", u);
          }
          j->p += 6;
          u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
        }
        /* the escape took 6 or 12 bytes; its UTF-8 at most 4 */
        if (u < 0x80) b[n++] = (char)u;
        else if (u < 0x800) { b[n++] = (char)(0xC0 | (u >> 6)); b[n++] = (char)(0x80 | (u & 63)); }
        else if (u < 0x10000) {
          b[n++] = (char)(0xE0 | (u >> 12)); b[n++] = (char)(0x80 | ((u >> 6) & 63)); b[n++] = (char)(0x80 | (u & 63));
        } else {
          b[n++] = (char)(0xF0 | (u >> 18)); b[n++] = (char)(0x80 | ((u >> 12) & 63));
          b[n++] = (char)(0x80 | ((u >> 6) & 63)); b[n++] = (char)(0x80 | (u & 63));
        }
        break;
      default:
        j->p -= 2;
        free(b);
        return dk_file__js_err(j, "an unknown escape");
      }
      continue;
    }
    if (c < 0x80) { b[n++] = (char)c; j->p++; continue; }
    {
      /* one UTF-8 sequence: no overlong forms, no surrogates, at most U+10FFFF */
      int k = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : -1, i;
      uint32_t cp = k == 3 ? (c & 7) : k == 2 ? (c & 15) : (c & 31);
      if (k < 0 || c >= 0xF5 || j->e - j->p <= k) { free(b); return dk_file__js_err(j, "invalid UTF-8 in a string"); }
      for (i = 1; i <= k; i++) {
        if ((j->p[i] & 0xC0) != 0x80) { free(b); return dk_file__js_err(j, "invalid UTF-8 in a string"); }
        cp = (cp << 6) | (j->p[i] & 63);
      }
      if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) || cp > 0x10FFFF ||
          (cp >= 0xD800 && cp <= 0xDFFF)) {
        free(b);
        return dk_file__js_err(j, "invalid UTF-8 in a string");
      }
      memcpy(b + n, j->p, (size_t)k + 1);
      n += (size_t)k + 1;
      j->p += k + 1;
    }
  }
  j->p++;
  b[n] = 0;
  *out = b;
  *len = n;
  return DK_OK;
}

/* a non-negative JSON integer (no sign, fraction or exponent) */
static dk_status dk_file__js_uint(dk_file__js *j, uint64_t *out, const char *what) {
  uint64_t v = 0;
  const unsigned char *start;
  dk_file__js_ws(j);
  start = j->p;
  if (j->p >= j->e || *j->p < '0' || *j->p > '9') return dk_file__js_err(j, "%s: a non-negative integer was expected", what);
  if (*j->p == '0' && j->p + 1 < j->e && j->p[1] >= '0' && j->p[1] <= '9')
    return dk_file__js_err(j, "%s: a number with a leading zero", what);
  while (j->p < j->e && *j->p >= '0' && *j->p <= '9') {
    if (v > ((uint64_t)INT64_MAX - (*j->p - '0')) / 10) { j->p = start; return dk_file__js_err(j, "%s: the number is too large", what); }
    v = v * 10 + (uint64_t)(*j->p - '0');
    j->p++;
  }
  if (j->p < j->e && (*j->p == '.' || *j->p == 'e' || *j->p == 'E'))
    return dk_file__js_err(j, "%s: an integer was expected, not a fraction or exponent", what);
  *out = v;
  return DK_OK;
}

/* safetensors dtypes: name, bytes per element, devkit dtype (or -1) */
typedef struct { const char *name; unsigned bytes; int dt; } dk_file__st_type;
static const dk_file__st_type dk_file__st_types[] = {
  {"F32", 4, DK_F32}, {"F16", 2, DK_F16}, {"BF16", 2, DK_BF16}, {"I32", 4, DK_I32},
  {"F64", 8, -1}, {"I64", 8, -1}, {"U64", 8, -1}, {"U32", 4, -1}, {"I16", 2, -1}, {"U16", 2, -1},
  {"I8", 1, -1}, {"U8", 1, -1}, {"BOOL", 1, -1}, {"F8_E4M3", 1, -1}, {"F8_E5M2", 1, -1},
};

/* {"dtype": ..., "shape": [...], "data_offsets": [begin, end]}, strictly */
static dk_status dk_file__st_tensor(dk_file__js *j, dk_file__ftensor *t, uint64_t *begin, uint64_t *end) {
  int seen_dtype = 0, seen_shape = 0, seen_off = 0;
  unsigned elem = 0;
  dk_status s;
  const unsigned char *obj = j->p;
  if ((s = dk_file__js_char(j, '{', "to open a tensor's entry"))) return s;
  for (;;) {
    char *field;
    size_t flen;
    if ((s = dk_file__js_string(j, &field, &flen))) return s;
    if ((s = dk_file__js_char(j, ':', "after a field name"))) { free(field); return s; }
    if (!strcmp(field, "dtype")) {
      char *dt;
      size_t dlen, k;
      if (seen_dtype++) { free(field); return dk_file__js_err(j, "tensor '%s': \"dtype\" appears twice", t->name); }
      if ((s = dk_file__js_string(j, &dt, &dlen))) { free(field); return s; }
      for (k = 0; k < sizeof dk_file__st_types / sizeof dk_file__st_types[0]; k++)
        if (!strcmp(dt, dk_file__st_types[k].name)) break;
      if (k == sizeof dk_file__st_types / sizeof dk_file__st_types[0]) {
        s = dk_file__js_err(j, "tensor '%s': bad dtype \"%.40s\" (F32, F16, BF16, I32, F64, I64, U64, U32, I16, U16, I8, U8, "
                       "BOOL, F8_E4M3, F8_E5M2)", t->name, dt);
        free(dt); free(field);
        return s;
      }
      free(dt);
      t->type_name = dk_file__st_types[k].name;
      t->supported = dk_file__st_types[k].dt >= 0;
      t->dtype = t->supported ? (dk_dtype)dk_file__st_types[k].dt : DK_F32;
      elem = dk_file__st_types[k].bytes;
    } else if (!strcmp(field, "shape")) {
      if (seen_shape++) { free(field); return dk_file__js_err(j, "tensor '%s': \"shape\" appears twice", t->name); }
      if ((s = dk_file__js_char(j, '[', "to open a shape"))) { free(field); return s; }
      dk_file__js_ws(j);
      if (j->p < j->e && *j->p == ']') j->p++;
      else
        for (;;) {
          uint64_t d;
          if (t->ndim >= DEVKIT_MAX_DIMS) {
            free(field);
            return dk_file__js_err(j, "tensor '%s': more than %d dimensions (DEVKIT_MAX_DIMS)", t->name, DEVKIT_MAX_DIMS);
          }
          if ((s = dk_file__js_uint(j, &d, "a shape entry"))) { free(field); return s; }
          t->shape[t->ndim++] = (int64_t)d;
          dk_file__js_ws(j);
          if (j->p < j->e && *j->p == ',') { j->p++; continue; }
          if ((s = dk_file__js_char(j, ']', "to close a shape"))) { free(field); return s; }
          break;
        }
    } else if (!strcmp(field, "data_offsets")) {
      if (seen_off++) { free(field); return dk_file__js_err(j, "tensor '%s': \"data_offsets\" appears twice", t->name); }
      if ((s = dk_file__js_char(j, '[', "to open data_offsets")) || (s = dk_file__js_uint(j, begin, "data_offsets[0]")) ||
          (s = dk_file__js_char(j, ',', "in data_offsets (it holds two numbers)")) ||
          (s = dk_file__js_uint(j, end, "data_offsets[1]")) || (s = dk_file__js_char(j, ']', "after data_offsets' two numbers"))) {
        free(field);
        return s;
      }
    } else {
      s = dk_file__js_err(j, "tensor '%s': unknown field \"%.60s\" (a tensor has dtype, shape and data_offsets)", t->name, field);
      free(field);
      return s;
    }
    free(field);
    dk_file__js_ws(j);
    if (j->p < j->e && *j->p == ',') { j->p++; continue; }
    if ((s = dk_file__js_char(j, '}', "to close a tensor's entry"))) return s;
    break;
  }
  if (!seen_dtype || !seen_shape || !seen_off) {
    const unsigned char *here = j->p;
    j->p = obj;
    s = dk_file__js_err(j, "tensor '%s': \"%s\" is missing", t->name, !seen_dtype ? "dtype" : !seen_shape ? "shape" : "data_offsets");
    j->p = here;
    return s;
  }
  {
    uint64_t numel;
    if (!dk_file__shape_numel_ok(t->ndim, t->shape, &numel) || !dk_file__mul_ok(numel, elem, &t->nbytes))
      return dk_file__js_err(j, "tensor '%s': the shape's byte size overflows", t->name);
  }
  return DK_OK;
}

static dk_status dk_file__st_parse(dk_file *f) {
  dk_file__js j;
  dk_status s;
  uint64_t hlen, data_off, data_len;
  int64_t cap_t = 0, cap_m = 0, k;
  int seen_meta = 0;
  uint64_t *ranges = NULL;   /* begin, end per tensor, relative to the data */
  if (f->size < 8) return dk_file__ferr(f->name, 0, "the safetensors header length needs 8 bytes; the file has %llu",
                                   (unsigned long long)f->size);
  hlen = dk_file__le64(f->data);
  if (hlen > f->size - 8)
    return dk_file__ferr(f->name, 0, "the header length %llu runs past the end of the file (%llu bytes)", (unsigned long long)hlen,
                    (unsigned long long)f->size);
  if (hlen > DK_FILE__ST_HEADER_MAX)
    return dk_file__ferr(f->name, 0, "the header length %llu is over safetensors' limit of %llu", (unsigned long long)hlen,
                    (unsigned long long)DK_FILE__ST_HEADER_MAX);
  data_off = 8 + hlen;
  data_len = f->size - data_off;
  j.s = j.p = f->data + 8;
  j.e = j.s + hlen;
  j.name = f->name;
  j.base = 8;
  if ((s = dk_file__js_char(&j, '{', "to open the header"))) return s;
  dk_file__js_ws(&j);
  if (j.p < j.e && *j.p == '}') j.p++;
  else
    for (;;) {
      char *key;
      size_t klen;
      const unsigned char *kpos;
      dk_file__js_ws(&j);
      kpos = j.p;
      if ((s = dk_file__js_string(&j, &key, &klen))) goto fail;
      if (strlen(key) != klen) {
        j.p = kpos;
        free(key);
        s = dk_file__js_err(&j, "a key holds a NUL character");
        goto fail;
      }
      if ((s = dk_file__js_char(&j, ':', "after a key"))) { free(key); goto fail; }
      if (!strcmp(key, "__metadata__")) {
        free(key);
        if (seen_meta++) { j.p = kpos; s = dk_file__js_err(&j, "\"__metadata__\" appears twice"); goto fail; }
        if ((s = dk_file__js_char(&j, '{', "to open __metadata__"))) goto fail;
        dk_file__js_ws(&j);
        if (j.p < j.e && *j.p == '}') j.p++;
        else
          for (;;) {
            char *mk, *mv;
            size_t mklen, mvlen;
            unsigned char *dst;
            dk_file__fmeta *m;
            const unsigned char *mpos;
            dk_file__js_ws(&j);
            mpos = j.p;
            if ((s = dk_file__js_string(&j, &mk, &mklen))) goto fail;
            if (strlen(mk) != mklen) { j.p = mpos; free(mk); s = dk_file__js_err(&j, "a __metadata__ key holds a NUL"); goto fail; }
            if ((s = dk_file__js_char(&j, ':', "after a __metadata__ key"))) { free(mk); goto fail; }
            dk_file__js_ws(&j);
            if (j.p < j.e && *j.p != '"') {
              free(mk);
              s = dk_file__js_err(&j, "__metadata__ values must be strings");
              goto fail;
            }
            if ((s = dk_file__js_string(&j, &mv, &mvlen))) { free(mk); goto fail; }
            if (f->n_meta == cap_m) {
              int64_t nc = cap_m ? cap_m * 2 : 16;
              dk_file__fmeta *nm = (dk_file__fmeta *)realloc(f->meta, sizeof *nm * (size_t)nc);
              if (!nm) { free(mk); free(mv); s = dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: no host memory", f->name); goto fail; }
              f->meta = nm;
              cap_m = nc;
            }
            m = &f->meta[f->n_meta++];
            memset(m, 0, sizeof *m);
            m->key = mk;
            m->type = DK_META_STRING;
            m->aoff = f->arena_len;
            m->alen = 8 + mvlen;
            if ((s = dk_file__arena_reserve(f, 8 + mvlen, &dst))) { free(mv); goto fail; }
            dk_file__put64(dst, mvlen);
            memcpy(dst + 8, mv, mvlen);
            free(mv);
            dk_file__js_ws(&j);
            if (j.p < j.e && *j.p == ',') { j.p++; continue; }
            if ((s = dk_file__js_char(&j, '}', "to close __metadata__"))) goto fail;
            break;
          }
      } else {
        dk_file__ftensor *t;
        if (klen == 0 || klen >= DK_FILE__NAME_LEN) {
          j.p = kpos;
          free(key);
          s = dk_file__js_err(&j, "a tensor name of %zu bytes; devkit takes names of 1..%d bytes", klen, DK_FILE__NAME_LEN - 1);
          goto fail;
        }
        if (f->n_tensors == cap_t) {
          int64_t nc = cap_t ? cap_t * 2 : 16;
          dk_file__ftensor *nt = (dk_file__ftensor *)realloc(f->tensors, sizeof *nt * (size_t)nc);
          uint64_t *nr = (uint64_t *)realloc(ranges, sizeof *nr * 2 * (size_t)nc);
          if (nt) f->tensors = nt;
          if (nr) ranges = nr;
          if (!nt || !nr) { free(key); s = dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: no host memory", f->name); goto fail; }
          cap_t = nc;
        }
        t = &f->tensors[f->n_tensors++];
        memset(t, 0, sizeof *t);
        t->name = key;
        if ((s = dk_file__st_tensor(&j, t, &ranges[2 * (f->n_tensors - 1)], &ranges[2 * (f->n_tensors - 1) + 1]))) goto fail;
      }
      dk_file__js_ws(&j);
      if (j.p < j.e && *j.p == ',') { j.p++; continue; }
      if ((s = dk_file__js_char(&j, '}', "to close the header"))) goto fail;
      break;
    }
  dk_file__js_ws(&j);
  if (j.p != j.e) { s = dk_file__js_err(&j, "bytes after the header's closing '}'"); goto fail; }
  /* every range inside the data and the size its dtype and shape give */
  for (k = 0; k < f->n_tensors; k++) {
    dk_file__ftensor *t = &f->tensors[k];
    uint64_t b = ranges[2 * k], e = ranges[2 * k + 1];
    if (e < b || e > data_len) {
      s = dk_file__ferr(f->name, data_off, "tensor '%s': data_offsets [%llu, %llu) are not a range inside the %llu data bytes",
                   t->name, (unsigned long long)b, (unsigned long long)e, (unsigned long long)data_len);
      goto fail;
    }
    if (e - b != t->nbytes) {
      s = dk_file__ferr(f->name, data_off + b, "tensor '%s': data_offsets hold %llu bytes; %s of its shape needs %llu", t->name,
                   (unsigned long long)(e - b), t->type_name, (unsigned long long)t->nbytes);
      goto fail;
    }
    t->offset = data_off + b;
  }
  free(ranges);
  ranges = NULL;
  dk_file__meta_fixup(f);
  return dk_file__check_unique(f, 8, 1, data_off, f->size);
fail:
  free(ranges);
  return s;
}

/* ---- llama2.c ----------------------------------------------------------------- */

static const char *dk_file__l2c_fields[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};

/* Whether the seven header ints look like a checkpoint at all; the reason
 * when not. */
static int dk_file__l2c_header_ok(const int32_t *h, char *why, size_t n) {
  int i;
  for (i = 0; i < 7; i++)
    if (i != 5 && h[i] <= 0) { snprintf(why, n, "header field %s is %d; it must be > 0", dk_file__l2c_fields[i], h[i]); return 0; }
  if (h[5] == 0 || h[5] == INT32_MIN) { snprintf(why, n, "header field vocab_size is %d", h[5]); return 0; }
  if (h[0] % h[3]) { snprintf(why, n, "dim %d is not a multiple of n_heads %d", h[0], h[3]); return 0; }
  if (h[3] % h[4]) { snprintf(why, n, "n_heads %d is not a multiple of n_kv_heads %d", h[3], h[4]); return 0; }
  if ((h[0] / h[3]) % 2) { snprintf(why, n, "the head size %d is odd; RoPE rotates pairs", h[0] / h[3]); return 0; }
  return 1;
}

static dk_status dk_file__l2c_add_tensor(dk_file *f, const char *name, int ndim, int64_t d0, int64_t d1, uint64_t *off) {
  dk_file__ftensor *t = &f->tensors[f->n_tensors];
  t->name = (char *)malloc(strlen(name) + 1);
  if (!t->name) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: no host memory", f->name);
  strcpy(t->name, name);
  f->n_tensors++;
  t->supported = 1;
  t->dtype = DK_F32;
  t->type_name = "f32";
  t->ndim = ndim;
  t->shape[0] = d0;
  t->shape[1] = ndim > 1 ? d1 : 0;
  t->offset = *off;
  t->nbytes = (uint64_t)d0 * (uint64_t)(ndim > 1 ? d1 : 1) * 4;   /* fits: the total was checked */
  *off += t->nbytes;
  return DK_OK;
}

static dk_status dk_file__l2c_parse(dk_file *f) {
  int32_t h[7];
  int i;
  uint64_t dim, hid, L, nh, nkv, vocab, seq, hs, kvd, total = 0, per = 0, tmp, off;
  char why[160];
  dk_status s;
  if (f->size < 28)
    return dk_file__ferr(f->name, 0, "a llama2.c checkpoint header needs 28 bytes (7 int32); the file has %llu",
                    (unsigned long long)f->size);
  if (dk_file__le32(f->data) == 0x616b3432u)
    return dk_file__ferr(f->name, 0, "a llama2.c export with the 'ak42' magic (version 1 or later); devkit reads the legacy "
                    "version-0 layout");
  for (i = 0; i < 7; i++) h[i] = (int32_t)dk_file__le32(f->data + 4 * i);
  if (!dk_file__l2c_header_ok(h, why, sizeof why)) {
    for (i = 0; i < 7 && !(i != 5 && h[i] <= 0) && !(i == 5 && (h[5] == 0 || h[5] == INT32_MIN)); i++) {}
    return dk_file__ferr(f->name, i < 7 ? 4 * (uint64_t)i : 0, "llama2.c checkpoint: %s", why);
  }
  dim = (uint64_t)h[0]; hid = (uint64_t)h[1]; L = (uint64_t)h[2]; nh = (uint64_t)h[3]; nkv = (uint64_t)h[4];
  vocab = (uint64_t)(h[5] < 0 ? -(int64_t)h[5] : h[5]); seq = (uint64_t)h[6];
  hs = dim / nh;
  kvd = nkv * hs;
  /* per layer: 2 norms, wq, wk, wv, wo, w1, w2, w3; every product and sum
   * is checked */
  if (!dk_file__madd(&per, 2, dim) || !dk_file__madd(&per, dim * dim, 2) || !dk_file__madd(&per, dim * kvd, 2) ||
      !dk_file__madd(&per, dim * hid, 3) || !dk_file__madd(&total, per, L) || !dk_file__madd(&total, vocab, dim) ||
      !dk_file__madd(&total, 1, dim) || !dk_file__madd(&total, seq, hs) || (h[5] < 0 && !dk_file__madd(&total, vocab, dim)) ||
      !dk_file__mul_ok(total, 4, &tmp) || !dk_file__add_ok(tmp, 28, &tmp))
    return dk_file__ferr(f->name, 0, "llama2.c checkpoint: the header describes more bytes than any file holds");
  if (tmp != f->size)
    return dk_file__ferr(f->name, tmp < f->size ? tmp : f->size,
                    "llama2.c checkpoint: the header (dim %d, hidden_dim %d, n_layers %d, n_heads %d, n_kv_heads %d, "
                    "vocab_size %d, seq_len %d) describes %llu bytes; the file has %llu%s",
                    h[0], h[1], h[2], h[3], h[4], h[5], h[6], (unsigned long long)tmp, (unsigned long long)f->size,
                    tmp > f->size ? " (truncated?)" : "");
  f->meta = (dk_file__fmeta *)calloc(7, sizeof *f->meta);
  f->tensors = (dk_file__ftensor *)calloc((size_t)(9 * L + 3), sizeof *f->tensors);
  if (!f->meta || !f->tensors) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: no host memory for the index", f->name);
  for (i = 0; i < 7; i++) {
    dk_file__fmeta *m = &f->meta[i];
    char key[32];
    snprintf(key, sizeof key, "llama2c.%s", dk_file__l2c_fields[i]);
    m->key = (char *)malloc(strlen(key) + 1);
    if (!m->key) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: no host memory", f->name);
    strcpy(m->key, key);
    f->n_meta++;
    m->type = DK_META_I32;
    m->val = f->data + 4 * i;
    m->end = m->val + 4;
  }
  /* the file stores each kind for all layers together: [L][...] */
  {
    static const char *kinds[9] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate",
                                   "ffn_down", "ffn_up"};
    int64_t rows[9], cols[9];
    int nd[9] = {1, 2, 2, 2, 2, 1, 2, 2, 2}, kk;
    uint64_t l;
    char name[64];
    rows[0] = (int64_t)dim; cols[0] = 0;
    rows[1] = (int64_t)dim; cols[1] = (int64_t)dim;
    rows[2] = (int64_t)kvd; cols[2] = (int64_t)dim;
    rows[3] = (int64_t)kvd; cols[3] = (int64_t)dim;
    rows[4] = (int64_t)dim; cols[4] = (int64_t)dim;
    rows[5] = (int64_t)dim; cols[5] = 0;
    rows[6] = (int64_t)hid; cols[6] = (int64_t)dim;
    rows[7] = (int64_t)dim; cols[7] = (int64_t)hid;
    rows[8] = (int64_t)hid; cols[8] = (int64_t)dim;
    off = 28;
    if ((s = dk_file__l2c_add_tensor(f, "token_embd.weight", 2, (int64_t)vocab, (int64_t)dim, &off))) return s;
    for (kk = 0; kk < 9; kk++)
      for (l = 0; l < L; l++) {
        snprintf(name, sizeof name, "blk.%llu.%s.weight", (unsigned long long)l, kinds[kk]);
        if ((s = dk_file__l2c_add_tensor(f, name, nd[kk], rows[kk], cols[kk], &off))) return s;
      }
    if ((s = dk_file__l2c_add_tensor(f, "output_norm.weight", 1, (int64_t)dim, 0, &off))) return s;
    off += seq * hs * 4;   /* freq_cis_real and freq_cis_imag: RoPE tables devkit computes itself */
    if (h[5] < 0 && (s = dk_file__l2c_add_tensor(f, "output.weight", 2, (int64_t)vocab, (int64_t)dim, &off))) return s;
  }
  return DK_OK;
}

/* tokenizer: int32 max_token_length, then per token: f32 score, int32 length, bytes */
static dk_status dk_file__l2ctok_parse(dk_file *f) {
  uint64_t off = 4, n = 0, bytes = 0, i;
  int32_t maxlen;
  unsigned char *tok, *sc;
  dk_status s;
  if (f->size < 4) return dk_file__ferr(f->name, 0, "a llama2.c tokenizer starts with an int32 max_token_length; the file has %llu bytes",
                                   (unsigned long long)f->size);
  maxlen = (int32_t)dk_file__le32(f->data);
  if (maxlen <= 0 || maxlen > 65536)
    return dk_file__ferr(f->name, 0, "llama2.c tokenizer: max_token_length is %d; it must be 1..65536", maxlen);
  while (off < f->size) {
    int32_t len;
    if (f->size - off < 8)
      return dk_file__ferr(f->name, off, "llama2.c tokenizer: token %llu's score and length need 8 bytes; %llu are left",
                      (unsigned long long)n, (unsigned long long)(f->size - off));
    len = (int32_t)dk_file__le32(f->data + off + 4);
    if (len < 0 || len > maxlen)
      return dk_file__ferr(f->name, off + 4, "llama2.c tokenizer: token %llu's length is %d; it must be 0..max_token_length (%d)",
                      (unsigned long long)n, len, maxlen);
    if (f->size - off - 8 < (uint64_t)len)
      return dk_file__ferr(f->name, off + 8, "llama2.c tokenizer: token %llu needs %d bytes; %llu are left (truncated?)",
                      (unsigned long long)n, len, (unsigned long long)(f->size - off - 8));
    off += 8 + (uint64_t)len;
    bytes += (uint64_t)len;
    n++;
  }
  if (n == 0) return dk_file__ferr(f->name, 4, "llama2.c tokenizer: no tokens");
  f->meta = (dk_file__fmeta *)calloc(3, sizeof *f->meta);
  if (!f->meta) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: no host memory", f->name);
  {
    static const char *keys[3] = {"tokenizer.ggml.tokens", "tokenizer.ggml.scores", "llama2c.max_token_length"};
    for (i = 0; i < 3; i++) {
      f->meta[i].key = (char *)malloc(strlen(keys[i]) + 1);
      if (!f->meta[i].key) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "%s: no host memory", f->name);
      strcpy(f->meta[i].key, keys[i]);
      f->n_meta++;
    }
  }
  /* re-encoded as GGUF arrays, so a tokenizer reads either file the same way */
  if ((s = dk_file__arena_reserve(f, 12 + 8 * n + bytes, &tok))) return s;
  f->meta[0].type = DK_META_ARRAY;
  f->meta[0].aoff = 0;
  f->meta[0].alen = 12 + 8 * n + bytes;
  if ((s = dk_file__arena_reserve(f, 12 + 4 * n, &sc))) return s;
  tok = f->arena;
  sc = f->arena + f->meta[0].alen;
  f->meta[1].type = DK_META_ARRAY;
  f->meta[1].aoff = f->meta[0].alen;
  f->meta[1].alen = 12 + 4 * n;
  f->meta[2].type = DK_META_I32;
  f->meta[2].val = f->data;
  f->meta[2].end = f->data + 4;
  dk_file__put32(tok, DK_META_STRING); dk_file__put64(tok + 4, n); tok += 12;
  dk_file__put32(sc, DK_META_F32); dk_file__put64(sc + 4, n); sc += 12;
  for (off = 4, i = 0; i < n; i++) {
    uint32_t len = dk_file__le32(f->data + off + 4);
    memcpy(sc + 4 * i, f->data + off, 4);
    dk_file__put64(tok, len);
    memcpy(tok + 8, f->data + off + 8, len);
    tok += 8 + len;
    off += 8 + len;
  }
  dk_file__meta_fixup(f);
  return DK_OK;
}

/* ---- opening ------------------------------------------------------------------ */

DK_MODELS_API const char *dk_file_format_name(dk_file_format fmt) {
  switch (fmt) {
  case DK_FILE_GGUF: return "gguf";
  case DK_FILE_SAFETENSORS: return "safetensors";
  case DK_FILE_LLAMA2C: return "llama2.c checkpoint";
  case DK_FILE_LLAMA2C_TOKENIZER: return "llama2.c tokenizer";
  case DK_FILE_HF: return "Hugging Face directory";
  default: return "auto";
  }
}

static void dk_file__file_reset(dk_file *f) {
  int64_t i;
  for (i = 0; i < f->n_meta; i++) free(f->meta[i].key);
  for (i = 0; i < f->n_tensors; i++) { free(f->tensors[i].name); free(f->tensors[i].orig); }
  free(f->meta);
  free(f->tensors);
  free(f->arena);
  f->meta = NULL; f->tensors = NULL; f->arena = NULL;
  f->n_meta = f->n_tensors = 0;
  f->arena_len = f->arena_cap = 0;
  f->version = 0;
}

static int dk_file__looks_safetensors(const dk_file *f) {
  uint64_t n;
  size_t i;
  if (f->size < 10) return 0;
  n = dk_file__le64(f->data);
  if (n < 2 || n > f->size - 8) return 0;
  for (i = 8; i < f->size && i < 8 + n; i++)
    if (f->data[i] != ' ') return f->data[i] == '{';
  return 0;
}

static dk_status dk_file__file_parse(dk_file *f, dk_file_format fmt) {
  dk_status s;
  if (fmt == DK_FILE_AUTO) {
    int32_t h[7];
    char why[400];
    int i;
    if (f->size >= 4 && !memcmp(f->data, "GGUF", 4)) fmt = DK_FILE_GGUF;
    else if (dk_file__looks_safetensors(f)) fmt = DK_FILE_SAFETENSORS;
    else if (f->size >= 28) {
      for (i = 0; i < 7; i++) h[i] = (int32_t)dk_file__le32(f->data + 4 * i);
      if (dk_file__l2c_header_ok(h, why, sizeof why) || dk_file__le32(f->data) == 0x616b3432u) fmt = DK_FILE_LLAMA2C;
    }
    if (fmt == DK_FILE_AUTO) {
      /* last: a llama2.c tokenizer, which has no magic to recognize */
      s = dk_file__l2ctok_parse(f);
      if (s == DK_OK) { f->format = DK_FILE_LLAMA2C_TOKENIZER; return DK_OK; }
      dk_file__file_reset(f);
      if (s != DK_ERR_FORMAT) return s;
      /* one sentence: what was expected, and what the file starts with */
      {
        char hex[3 * 8 + 1] = "", txt[8 + 1] = "";
        size_t k, nb = f->size < 8 ? (size_t)f->size : 8;
        for (k = 0; k < nb; k++) {
          snprintf(hex + 3 * k, sizeof hex - 3 * k, "%02x ", f->data[k]);
          txt[k] = f->data[k] >= 32 && f->data[k] < 127 ? (char)f->data[k] : '.';
          txt[k + 1] = 0;
        }
        if (nb) hex[3 * nb - 1] = 0;
        return dk_set_error(DK_ERR_FORMAT, "%s is not a model file devkit knows: expected a GGUF file (starting with "
                         "\"GGUF\"), a safetensors file (a length, then a JSON header) or a llama2.c checkpoint or "
                         "tokenizer, but its first bytes are %s (\"%s\")", f->name, hex, txt);
      }
    }
  }
  f->format = fmt;
  switch (fmt) {
  case DK_FILE_GGUF: s = dk_file__gguf_parse(f); break;
  case DK_FILE_SAFETENSORS: s = dk_file__st_parse(f); break;
  case DK_FILE_LLAMA2C: s = dk_file__l2c_parse(f); break;
  case DK_FILE_LLAMA2C_TOKENIZER: s = dk_file__l2ctok_parse(f); break;
  case DK_FILE_HF: return dk_set_error(DK_ERR_INVALID, "%s: a Hugging Face directory is opened with dk_hf_open (models/hf.h)", f->name);
  default: return dk_set_error(DK_ERR_INVALID, "%s: format %d is not a dk_file_format", f->name, (int)fmt);
  }
  return s;
}

static void dk_file__file_set_name(dk_file *f, const char *path) {
  const char *b = strrchr(path, '/');
  dk_file__copy_str(f->name, sizeof f->name, b ? b + 1 : path);
}

DK_MODELS_API dk_status dk_file_open_memory(const void *data, size_t size, const char *name, dk_file_format fmt,
                                         dk_file **out) {
  dk_file *f;
  dk_status s;
  if (!out) return dk_set_error(DK_ERR_INVALID, "dk_file_open_memory: out is NULL");
  *out = NULL;
  if (!data && size) return dk_set_error(DK_ERR_INVALID, "dk_file_open_memory: data is NULL");
  f = (dk_file *)calloc(1, sizeof *f);
  if (!f) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "dk_file_open_memory: no host memory");
  dk_file__file_set_name(f, name ? name : "(memory)");
  f->data = (const unsigned char *)data;
  f->size = size;
  if (size == 0) s = dk_file__ferr(f->name, 0, "the file is empty");
  else s = dk_file__file_parse(f, fmt);
  if (s != DK_OK) { dk_file_close(f); return s; }
  *out = f;
  return DK_OK;
}

DK_MODELS_API dk_status dk_file_open_as(const char *path, dk_file_format fmt, dk_file **out) {
  dk_file *f;
  dk_status s;
  struct stat st;
  int fd, flags = O_RDONLY;
  void *map;
  if (!out) return dk_set_error(DK_ERR_INVALID, "dk_file_open: out is NULL");
  *out = NULL;
  if (!path) return dk_set_error(DK_ERR_INVALID, "dk_file_open: path is NULL");
#ifdef O_CLOEXEC
  flags |= O_CLOEXEC;
#endif
  fd = open(path, flags);
  if (fd < 0) return dk_set_error(DK_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return dk_set_error(DK_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return dk_set_error(DK_ERR_IO, "%s: not a regular file", path);
  }
  if (st.st_size == 0) {
    close(fd);
    return dk_set_error(DK_ERR_FORMAT, "%s: at byte 0: the file is empty", path);
  }
  if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX) {
    close(fd);
    return dk_set_error(DK_ERR_IO, "%s: %lld bytes do not fit in this process's address space", path, (long long)st.st_size);
  }
  map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  {
    int e = errno;
    close(fd);   /* the mapping keeps the file */
    if (map == MAP_FAILED) return dk_set_error(DK_ERR_IO, "%s: cannot map %lld bytes: %s", path, (long long)st.st_size, strerror(e));
  }
  f = (dk_file *)calloc(1, sizeof *f);
  if (!f) {
    munmap(map, (size_t)st.st_size);
    return dk_set_error(DK_ERR_OUT_OF_MEMORY, "dk_file_open: no host memory");
  }
  dk_file__file_set_name(f, path);
  f->map = map;
  f->map_len = (size_t)st.st_size;
  f->data = (const unsigned char *)map;
  f->size = (uint64_t)st.st_size;
  if ((s = dk_file__file_parse(f, fmt)) != DK_OK) { dk_file_close(f); return s; }
  *out = f;
  return DK_OK;
}

DK_MODELS_API dk_status dk_file_open(const char *path, dk_file **out) { return dk_file_open_as(path, DK_FILE_AUTO, out); }

DK_MODELS_API void dk_file_close(dk_file *f) {
  int i;
  if (!f) return;
  dk_file__file_reset(f);
  for (i = 0; i < f->n_parts; i++) dk_file_close(f->parts[i]);
  free(f->parts);
  if (f->map) munmap(f->map, f->map_len);
  free(f);
}

DK_MODELS_API dk_file_format dk_file_format_of(const dk_file *f) { return f ? f->format : DK_FILE_AUTO; }
DK_MODELS_API const char *dk_file_name(const dk_file *f) { return f ? f->name : ""; }
DK_MODELS_API int dk_file_version(const dk_file *f) { return f ? f->version : 0; }
DK_MODELS_API int dk_file_has_gguf_keys(const dk_file *f) {
  return f && (f->format == DK_FILE_GGUF || f->format == DK_FILE_HF);
}

/* ---- lookups ---------------------------------------------------------------------- */

DK_MODELS_API int64_t dk_file_meta_count(const dk_file *f) { return f ? f->n_meta : 0; }

DK_MODELS_API dk_status dk_file_meta_at(const dk_file *f, int64_t i, const char **key, dk_meta *value) {
  if (!f) return dk_set_error(DK_ERR_INVALID, "dk_file_meta_at: f is NULL");
  if (i < 0 || i >= f->n_meta)
    return dk_set_error(DK_ERR_INVALID, "dk_file_meta_at: %s has %lld metadata entries; index %lld is outside", f->name,
                     (long long)f->n_meta, (long long)i);
  if (key) *key = f->meta[i].key;
  if (value) dk_file__meta_make(f->meta[i].type, f->meta[i].val, f->meta[i].end, value);
  return DK_OK;
}

DK_MODELS_API int dk_file_meta_find(const dk_file *f, const char *key, dk_meta *value) {
  int64_t i;
  if (!f || !key) return 0;
  for (i = 0; i < f->n_meta; i++)
    if (!strcmp(f->meta[i].key, key)) {
      if (value) dk_file__meta_make(f->meta[i].type, f->meta[i].val, f->meta[i].end, value);
      return 1;
    }
  return 0;
}

/* the typed lookups: a missing key or a wrong kind names the file and key */
static dk_status dk_file__meta_lookup(const dk_file *f, const char *key, const char *want, dk_meta *m) {
  if (!f || !key) return dk_set_error(DK_ERR_INVALID, "dk_file_meta_%s: NULL argument", want);
  if (!dk_file_meta_find(f, key, m))
    return dk_set_error(DK_ERR_FORMAT, "%s: metadata key '%s' is missing (a %s was expected)", f->name, key, want);
  return DK_OK;
}

DK_MODELS_API dk_status dk_file_meta_int(const dk_file *f, const char *key, int64_t *out) {
  dk_meta m;
  dk_status s;
  if ((s = dk_file__meta_lookup(f, key, "integer", &m))) return s;
  if (!dk_file__meta_is_int(m.type))
    return dk_set_error(DK_ERR_FORMAT, "%s: metadata '%s' is a %s; an integer was expected", f->name, key, dk_meta_type_name(m.type));
  if ((s = dk_meta_int(&m, out))) {
    char why[512];
    dk_file__copy_str(why, sizeof why, dk_last_error());
    return dk_set_error(s, "%s: metadata '%s': %s", f->name, key, why);
  }
  return DK_OK;
}

DK_MODELS_API dk_status dk_file_meta_float(const dk_file *f, const char *key, double *out) {
  dk_meta m;
  dk_status s;
  if ((s = dk_file__meta_lookup(f, key, "number", &m))) return s;
  if (!dk_file__meta_is_int(m.type) && m.type != DK_META_F32 && m.type != DK_META_F64)
    return dk_set_error(DK_ERR_FORMAT, "%s: metadata '%s' is a %s; a number was expected", f->name, key, dk_meta_type_name(m.type));
  return dk_meta_float(&m, out);
}

DK_MODELS_API dk_status dk_file_meta_string(const dk_file *f, const char *key, const char **str, size_t *len) {
  dk_meta m;
  dk_status s;
  if ((s = dk_file__meta_lookup(f, key, "string", &m))) return s;
  if (m.type != DK_META_STRING)
    return dk_set_error(DK_ERR_FORMAT, "%s: metadata '%s' is a %s; a string was expected", f->name, key, dk_meta_type_name(m.type));
  return dk_meta_string(&m, str, len);
}

DK_MODELS_API int64_t dk_file_tensor_count(const dk_file *f) { return f ? f->n_tensors : 0; }

DK_MODELS_API dk_status dk_file_tensor_at(const dk_file *f, int64_t i, dk_file_tensor *out) {
  const dk_file__ftensor *t;
  if (!f || !out) return dk_set_error(DK_ERR_INVALID, "dk_file_tensor_at: NULL argument");
  if (i < 0 || i >= f->n_tensors)
    return dk_set_error(DK_ERR_INVALID, "dk_file_tensor_at: %s has %lld tensors; index %lld is outside", f->name,
                     (long long)f->n_tensors, (long long)i);
  t = &f->tensors[i];
  memset(out, 0, sizeof *out);
  out->name = t->name;
  out->supported = t->supported;
  out->dtype = t->dtype;
  out->type_name = t->type_name;
  out->ndim = t->ndim;
  memcpy(out->shape, t->shape, sizeof out->shape);
  out->offset = t->offset;
  out->nbytes = t->nbytes;
  return DK_OK;
}

DK_MODELS_API int64_t dk_file_tensor_find(const dk_file *f, const char *name) {
  int64_t i;
  if (!f || !name) return -1;
  for (i = 0; i < f->n_tensors; i++)
    if (!strcmp(f->tensors[i].name, name)) return i;
  return -1;
}

DK_MODELS_API const void *dk_file_tensor_data(const dk_file *f, int64_t i) {
  if (!f || i < 0 || i >= f->n_tensors) return NULL;
  return dk_file__home(f, &f->tensors[i])->data + f->tensors[i].offset;
}

/* "<file>:<name>", the creation site of a tensor loaded from f's tensor i:
 * the file its bytes are in and its name there */
static void dk_file__site(const dk_file *f, int64_t i, char *site, size_t cap) {
  const dk_file__ftensor *ft = &f->tensors[i];
  snprintf(site, cap, "%.63s:%.127s", dk_file__home(f, ft)->name, ft->orig ? ft->orig : ft->name);
}

/* tensor i's bytes into t (its dtype and element count, contiguous: a new
 * tensor, or a row range of a fused weight in models/llama.h), straight from
 * the mapping */
static dk_status dk_file__load_bytes(const dk_file *f, int64_t i, dk_tensor *t) {
  const dk_file__ftensor *ft = &f->tensors[i];
  const dk_file *h = dk_file__home(f, ft);
  size_t done = 0, n = (size_t)ft->nbytes;
  dk_status s = DK_OK;
  if (dk_tensor_dtype(t) != ft->dtype || dk_tensor_nbytes(t) != n)
    return dk_set_error(DK_ERR_SHAPE, "%s: tensor '%s' (%s, %zu bytes) does not fit '%s' (%s, %zu bytes)", f->name,
                        ft->name, dk_dtype_name(ft->dtype), n, dk_tensor_name(t), dk_dtype_name(dk_tensor_dtype(t)),
                        dk_tensor_nbytes(t));
  /* a chunk at a time into the device's memory */
  while (done < n && s == DK_OK) {
    size_t k = n - done < DK_FILE__LOAD_CHUNK ? n - done : DK_FILE__LOAD_CHUNK;
    s = dk_tensor_upload_range(t, done, h->data + ft->offset + done, k);
    done += k;
  }
  if (s != DK_OK) return s;
#ifdef MADV_DONTNEED
  if (h->map && n) {
    /* the pages are in the device's copy now; let the kernel drop them so a
     * large model's loading does not hold the file in this process too */
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)(h->data + ft->offset), b = a + n;
    if (pg > 0) {
      a = (a + (uintptr_t)pg - 1) / (uintptr_t)pg * (uintptr_t)pg;
      b = b / (uintptr_t)pg * (uintptr_t)pg;
      if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
    }
  }
#endif
  return DK_OK;
}

/* the index of a tensor devkit holds, or -1 with the error set */
static int64_t dk_file__loadable(const dk_file *f, const char *name) {
  int64_t i = dk_file_tensor_find(f, name);
  if (i < 0)
    return dk_set_error(DK_ERR_FORMAT, "%s: no tensor '%s' (the file has %lld tensors%s%s%s)", f->name, name,
                        (long long)f->n_tensors, f->n_tensors ? ", the first is '" : "", f->n_tensors ? f->tensors[0].name : "",
                        f->n_tensors ? "'" : ""), -1;
  if (!f->tensors[i].supported)
    return dk_set_error(DK_ERR_UNSUPPORTED, "%s: tensor '%s' is %s, which devkit does not hold (it loads f32, f16, bf16, "
                        "i32, q8_0, q4_0, q4_1, q5_0, q5_1, q2_K..q6_K, iq4_nl, iq4_xs, iq3_xxs, iq3_s, iq2_xxs, iq2_xs and iq2_s)", f->name, name, f->tensors[i].type_name), -1;
  return i;
}

DK_MODELS_API dk_status dk_file_load_tensor(const dk_file *f, const char *name, dk_device d, dk_tensor **out) {
  int64_t i;
  const dk_file__ftensor *ft;
  dk_tensor *t;
  dk_status s;
  char site[DK_FILE__SITE_LEN];
  if (!out) return dk_set_error(DK_ERR_INVALID, "dk_file_load_tensor: out is NULL");
  *out = NULL;
  if (!f || !name) return dk_set_error(DK_ERR_INVALID, "dk_file_load_tensor: %s is NULL", f ? "name" : "f");
  if ((i = dk_file__loadable(f, name)) < 0) return dk_last_status();
  ft = &f->tensors[i];
  dk_file__site(f, i, site, sizeof site);
  if ((s = dk_tensor_new_at(d, ft->dtype, ft->ndim, ft->shape, name, site, &t)) != DK_OK) return s;
  if ((s = dk_file__load_bytes(f, i, t)) != DK_OK) { dk_tensor_free(t); return s; }
  *out = t;
  return DK_OK;
}

#endif /* DEVKIT_MODELS_IMPLEMENTATION */
