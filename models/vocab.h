/* models/vocab.h — a model file's vocabulary: every token's bytes, a hash
 * from spelling to id, scores and token types, the special ids (BOS, EOS,
 * UNK, PAD, EOT) and the end-of-generation set. The tokenizers of the model
 * layer (models/bpe.h; SentencePiece and WordPiece next) start from it.
 *
 * Part of devkit's model layer (models/): header-only, built only on
 * devkit.h's public API (dk_file and its metadata). In exactly one file:
 *
 *     #define DEVKIT_MODELS_IMPLEMENTATION
 *     #include "models/bpe.h"          (it includes this header)
 *
 * What it reads from a GGUF file (the keys llama.cpp writes):
 *   tokenizer.ggml.model        "gpt2" (byte-level BPE), "llama" (SentencePiece), ...
 *   tokenizer.ggml.pre          the pre-tokenizer's name ("llama-bpe", "smollm", ...)
 *   tokenizer.ggml.tokens       array of strings: the id of a token is its index
 *   tokenizer.ggml.scores       array of f32 (optional)
 *   tokenizer.ggml.token_type   array of i32: 1 normal, 2 unknown, 3 control,
 *                               4 user-defined, 5 unused, 6 byte (optional: all normal)
 *   tokenizer.ggml.{bos,eos,unknown,padding,eot,eom}_token_id, add_bos_token, add_eos_token
 *
 * Errors: every fallible call returns a dk_status; the message is in
 * dk_last_error(), as for devkit's own calls (dk_set_error). Nothing here
 * prints or aborts.
 */
#ifndef DK_MODELS_VOCAB_H
#define DK_MODELS_VOCAB_H

#include "file.h"
#include <stddef.h>
#include <stdint.h>

#ifndef DK_MODELS_API
#define DK_MODELS_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* GGUF token types */
enum {
  DK_TOKEN_UNDEFINED = 0, DK_TOKEN_NORMAL = 1, DK_TOKEN_UNKNOWN = 2, DK_TOKEN_CONTROL = 3,
  DK_TOKEN_USER = 4, DK_TOKEN_UNUSED = 5, DK_TOKEN_BYTE = 6
};

#define DK_VOCAB_MAX_EOG 16

typedef struct dk_vocab {
  int32_t n;                 /* tokens */
  char *text;                /* every token's bytes, each NUL-terminated */
  uint64_t *off;             /* token i: text + off[i], len[i] bytes */
  uint32_t *len;
  float *score;              /* NULL when the file has no scores */
  uint8_t *type;             /* DK_TOKEN_* */
  int32_t *hash;             /* open addressing over spellings: ids, -1 empty */
  uint64_t hmask;
  int32_t bos, eos, unk, pad, eot;   /* -1: none */
  int add_bos, add_eos;      /* as the file says (bpe.h applies a pre-tokenizer's default when absent) */
  int has_add_bos;           /* the file has tokenizer.ggml.add_bos_token */
  char model[32];            /* tokenizer.ggml.model */
  char pre[64];              /* tokenizer.ggml.pre, or "" */
  int32_t eog[DK_VOCAB_MAX_EOG];     /* end-of-generation ids: EOS, EOT, EOM and the usual end-of-turn tokens */
  int n_eog;
} dk_vocab;

/* The vocabulary of a GGUF file, copied: f may be closed afterwards. */
DK_MODELS_API dk_status dk_vocab_load(const dk_file *f, dk_vocab **out);
DK_MODELS_API void      dk_vocab_free(dk_vocab *v);
/* The id spelled s[0, n), or -1. */
DK_MODELS_API int32_t   dk_vocab_find(const dk_vocab *v, const char *s, size_t n);
/* The table every vocabulary of the layer keeps (this one, spm.h's,
 * wordpiece.h's): token spellings in one text, hashed with FNV-1a into open
 * addressing over ids (-1 empty). dk_spelling_find: the id spelled s[0, n),
 * or -1. */
DK_MODELS_API uint64_t  dk_spelling_hash(const char *s, size_t n);
DK_MODELS_API int32_t   dk_spelling_find(const int32_t *hash, uint64_t hmask, const char *text, const uint64_t *off,
                                         const uint32_t *len, const char *s, size_t n);
/* Token id's bytes (NUL-terminated; *n their count), or NULL for a bad id. */
DK_MODELS_API const char *dk_vocab_text(const dk_vocab *v, int32_t id, size_t *n);
/* Whether generation ends at id (EOS, end of turn). */
DK_MODELS_API int       dk_vocab_is_eog(const dk_vocab *v, int32_t id);

#ifdef __cplusplus
}
#endif
#endif /* DK_MODELS_VOCAB_H */

/* ======================================================================== */
#if defined(DEVKIT_MODELS_IMPLEMENTATION) && !defined(DK_MODELS_VOCAB_IMPL)
#define DK_MODELS_VOCAB_IMPL

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

DK_MODELS_API uint64_t dk_spelling_hash(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;   /* FNV-1a */
  size_t i;
  for (i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
  return h;
}

DK_MODELS_API int32_t dk_spelling_find(const int32_t *hash, uint64_t hmask, const char *text, const uint64_t *off,
                                       const uint32_t *len, const char *s, size_t n) {
  uint64_t h = dk_spelling_hash(s, n) & hmask;
  for (;;) {
    int32_t id = hash[h];
    if (id < 0) return -1;
    if (len[id] == n && !memcmp(text + off[id], s, n)) return id;
    h = (h + 1) & hmask;
  }
}

DK_MODELS_API int32_t dk_vocab_find(const dk_vocab *v, const char *s, size_t n) {
  return dk_spelling_find(v->hash, v->hmask, v->text, v->off, v->len, s, n);
}

static void dk_vocab__insert(dk_vocab *v, int32_t id) {
  uint64_t h = dk_spelling_hash(v->text + v->off[id], v->len[id]) & v->hmask;
  for (;;) {
    int32_t o = v->hash[h];
    if (o < 0) { v->hash[h] = id; return; }
    /* a spelling that appears twice keeps its first id (a vocabulary that
     * came from a tokenizer.json, a map, cannot have any) */
    if (v->len[o] == v->len[id] && !memcmp(v->text + v->off[o], v->text + v->off[id], v->len[id])) return;
    h = (h + 1) & v->hmask;
  }
}

DK_MODELS_API const char *dk_vocab_text(const dk_vocab *v, int32_t id, size_t *n) {
  if (!v || id < 0 || id >= v->n) { if (n) *n = 0; return NULL; }
  if (n) *n = v->len[id];
  return v->text + v->off[id];
}

DK_MODELS_API int dk_vocab_is_eog(const dk_vocab *v, int32_t id) {
  int i;
  for (i = 0; i < v->n_eog; i++)
    if (v->eog[i] == id) return 1;
  return 0;
}

DK_MODELS_API void dk_vocab_free(dk_vocab *v) {
  if (!v) return;
  free(v->text); free(v->off); free(v->len); free(v->score); free(v->type); free(v->hash);
  free(v);
}

/* an optional integer key: absent leaves *out as def; a non-integer is an error */
static dk_status dk_vocab__int(const dk_file *f, const char *key, int64_t def, int64_t *out, int *present) {
  dk_meta m;
  *out = def;
  if (present) *present = 0;
  if (!dk_file_meta_find(f, key, &m)) return DK_OK;
  if (present) *present = 1;
  if (dk_meta_int(&m, out) != DK_OK)
    return dk_set_error(DK_ERR_FORMAT, "%s: %s is a %s, not an integer", dk_file_name(f), key, dk_meta_type_name(m.type));
  return DK_OK;
}

static void dk_vocab__add_eog(dk_vocab *v, int32_t id) {
  if (id < 0 || id >= v->n || dk_vocab_is_eog(v, id) || v->n_eog == DK_VOCAB_MAX_EOG) return;
  v->eog[v->n_eog++] = id;
}

DK_MODELS_API dk_status dk_vocab_load(const dk_file *f, dk_vocab **out) {
  dk_meta toks, scores, types;
  dk_vocab *v;
  uint64_t i, total = 0, cap;
  int has_scores, has_types, present;
  const char *s;
  size_t n;
  int64_t x;
  dk_status st;
  static const char *const eog_names[] = {"<|eot_id|>", "<|im_end|>", "<|endoftext|>", "<end_of_turn>", "<|eom_id|>",
                                          "<|end|>", "<EOT>", "<|end_of_text|>"};
  if (!f || !out) return dk_set_error(DK_ERR_INVALID, "dk_vocab_load: NULL argument");
  *out = NULL;
  if (!dk_file_has_gguf_keys(f))
    return dk_set_error(DK_ERR_FORMAT, "%s: a %s file holds no GGUF vocabulary", dk_file_name(f),
                           dk_file_format_name(dk_file_format_of(f)));
  if (!dk_file_meta_find(f, "tokenizer.ggml.tokens", &toks) || toks.type != DK_META_ARRAY ||
      toks.elem_type != DK_META_STRING)
    return dk_set_error(DK_ERR_FORMAT, "%s: tokenizer.ggml.tokens (an array of strings) is missing", dk_file_name(f));
  if (toks.count == 0 || toks.count > 0x7fffffff)
    return dk_set_error(DK_ERR_FORMAT, "%s: the vocabulary has %llu tokens", dk_file_name(f),
                           (unsigned long long)toks.count);
  has_scores = dk_file_meta_find(f, "tokenizer.ggml.scores", &scores);
  if (has_scores && (scores.type != DK_META_ARRAY || scores.elem_type != DK_META_F32 || scores.count != toks.count))
    return dk_set_error(DK_ERR_FORMAT, "%s: tokenizer.ggml.scores must be an array of %llu f32", dk_file_name(f),
                           (unsigned long long)toks.count);
  has_types = dk_file_meta_find(f, "tokenizer.ggml.token_type", &types);
  if (has_types && (types.type != DK_META_ARRAY || types.elem_type != DK_META_I32 || types.count != toks.count))
    return dk_set_error(DK_ERR_FORMAT, "%s: tokenizer.ggml.token_type must be an array of %llu i32", dk_file_name(f),
                           (unsigned long long)toks.count);
  v = (dk_vocab *)calloc(1, sizeof *v);
  if (!v) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no memory for a vocabulary");
  if (dk_file_meta_string(f, "tokenizer.ggml.model", &s, &n) == DK_OK)
    snprintf(v->model, sizeof v->model, "%.*s", (int)(n < 31 ? n : 31), s);
  if (dk_file_meta_find(f, "tokenizer.ggml.pre", NULL) && dk_file_meta_string(f, "tokenizer.ggml.pre", &s, &n) == DK_OK)
    snprintf(v->pre, sizeof v->pre, "%.*s", (int)(n < 63 ? n : 63), s);
  v->n = (int32_t)toks.count;
  for (i = 0; i < toks.count; i++) {
    dk_meta e;
    dk_meta_at(&toks, i, &e);
    total += e.count + 1;
  }
  for (cap = 16; cap < 2 * toks.count; cap *= 2) {}
  v->text = (char *)malloc(total);
  v->off = (uint64_t *)malloc(sizeof *v->off * toks.count);
  v->len = (uint32_t *)malloc(sizeof *v->len * toks.count);
  v->score = has_scores ? (float *)malloc(sizeof *v->score * toks.count) : NULL;
  v->type = (uint8_t *)malloc(toks.count);
  v->hash = (int32_t *)malloc(sizeof *v->hash * cap);
  if (!v->text || !v->off || !v->len || (has_scores && !v->score) || !v->type || !v->hash) {
    dk_vocab_free(v);
    return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no memory for a vocabulary of %llu tokens", (unsigned long long)toks.count);
  }
  v->hmask = cap - 1;
  memset(v->hash, 0xff, sizeof *v->hash * cap);
  for (i = 0, total = 0; i < toks.count; i++) {
    dk_meta e;
    s = "";
    n = 0;
    dk_meta_at(&toks, i, &e);
    dk_meta_string(&e, &s, &n);
    if (n > 0xffffffffu) {
      dk_vocab_free(v);
      return dk_set_error(DK_ERR_FORMAT, "%s: token %llu is too long", dk_file_name(f), (unsigned long long)i);
    }
    memcpy(v->text + total, s, n);
    v->text[total + n] = 0;
    v->off[i] = total;
    v->len[i] = (uint32_t)n;
    total += n + 1;
    if (has_scores) {
      double sc;
      dk_meta_at(&scores, i, &e);
      dk_meta_float(&e, &sc);
      v->score[i] = (float)sc;
    }
    v->type[i] = DK_TOKEN_NORMAL;
    if (has_types) {
      dk_meta_at(&types, i, &e);
      dk_meta_int(&e, &x);
      v->type[i] = (uint8_t)(x >= 0 && x <= 7 ? x : (int64_t)DK_TOKEN_NORMAL);
    }
  }
  for (i = 0; i < toks.count; i++) dk_vocab__insert(v, (int32_t)i);
  {
    static const char *const keys[5] = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                                        "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id",
                                        "tokenizer.ggml.eot_token_id"};
    int32_t *dst[5];
    int k;
    dst[0] = &v->bos; dst[1] = &v->eos; dst[2] = &v->unk; dst[3] = &v->pad; dst[4] = &v->eot;
    for (k = 0; k < 5; k++) {
      if ((st = dk_vocab__int(f, keys[k], -1, &x, &present))) { dk_vocab_free(v); return st; }
      /* an id the file names but the vocabulary lacks is a broken file */
      if (present && (x < 0 || x >= v->n)) {
        int nn = v->n;
        dk_vocab_free(v);
        return dk_set_error(DK_ERR_FORMAT, "%s: %s is %lld, outside the vocabulary of %d tokens", dk_file_name(f),
                               keys[k], (long long)x, nn);
      }
      *dst[k] = (int32_t)x;
    }
  }
  if ((st = dk_vocab__int(f, "tokenizer.ggml.add_bos_token", 0, &x, &v->has_add_bos))) { dk_vocab_free(v); return st; }
  v->add_bos = x != 0;
  if ((st = dk_vocab__int(f, "tokenizer.ggml.add_eos_token", 0, &x, NULL))) { dk_vocab_free(v); return st; }
  v->add_eos = x != 0;
  dk_vocab__add_eog(v, v->eos);
  dk_vocab__add_eog(v, v->eot);
  if (dk_vocab__int(f, "tokenizer.ggml.eom_token_id", -1, &x, NULL) == DK_OK) dk_vocab__add_eog(v, (int32_t)x);
  /* files often name only EOS while the chat format ends a turn with another
   * control token; those are found by spelling, as llama.cpp does */
  {
    size_t k;
    for (k = 0; k < sizeof eog_names / sizeof eog_names[0]; k++) {
      int32_t id = dk_vocab_find(v, eog_names[k], strlen(eog_names[k]));
      if (id >= 0 && (v->type[id] == DK_TOKEN_CONTROL || v->type[id] == DK_TOKEN_USER)) dk_vocab__add_eog(v, id);
    }
  }
  *out = v;
  return DK_OK;
}

#endif /* DEVKIT_MODELS_IMPLEMENTATION */
