/* models/bpe.h — GPT-2-style byte-level BPE (GGUF tokenizer.ggml.model =
 * "gpt2"): the tokenizer of Llama 3, SmolLM2, Qwen2/2.5/3, GPT-2 and most
 * models people download today.
 *
 * Part of devkit's model layer (models/): header-only, built only on
 * devkit.h's public API. In exactly one file:
 *
 *     #define DEVKIT_MODELS_IMPLEMENTATION
 *     #include "models/bpe.h"
 *
 *     dk_bpe *tok;
 *     dk_bpe_load(file, NULL, &tok);                 // the file's own pre-tokenizer
 *     dk_bpe_encode(tok, text, len, DK_BPE_ADD_BOS | DK_BPE_SPECIAL, &ids, &n);
 *     dk_bpe_decode(tok, ids[i], 0, buf, sizeof buf); // the bytes of one token
 *
 * Encoding, as the `tokenizers` package does with each model's tokenizer.json:
 *   1. special tokens (control and user-defined tokens of the vocabulary: the
 *      file's added tokens) are found in the text first, leftmost and then
 *      longest; they become their ids and split the text (DK_BPE_SPECIAL;
 *      without it the whole text is ordinary);
 *   2. each ordinary span is cut into words by the pre-tokenizer that
 *      tokenizer.ggml.pre names, its regex written out by hand over Unicode
 *      classes (models/unicode_tables.h):
 *        gpt-2      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *        smollm     every \p{N} alone (tokenizers' Digits(individual_digits)), then gpt-2's
 *        llama-bpe  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *                   ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *        qwen2      llama-bpe's with \p{N} one at a time
 *      (a few other names that use these same expressions are accepted;
 *      an unknown name is an error, not a guess);
 *   3. a word's bytes become the 256 byte symbols of GPT-2's byte<->unicode
 *      map, and the adjacent pair with the lowest merge rank is merged
 *      (ties: the leftmost), until no pair has a rank: a min-heap over the
 *      adjacent pairs, stale entries skipped. Llama 3's tokenizer.json sets
 *      ignore_merges: a word that is itself a token is that token.
 * BOS comes first when DK_BPE_ADD_BOS and the file's add_bos_token say so
 * (absent: on for llama-bpe only, as llama.cpp does).
 *
 * Limits, said plainly: Qwen's tokenizer.json normalizes to NFC first; this
 * tokenizer does not normalize, so text must already be NFC (nearly all
 * text is). Case-insensitive contractions fold ASCII only. The Unicode
 * classes are those of the tables' Unicode version.
 *
 * Decoding maps a token's characters back through the byte map; control and
 * user-defined tokens are their text (control tokens only with `special`).
 * Decoding the ids of encode(text) gives back its bytes, for any text whose
 * bytes each have a token (every valid UTF-8 text but for the few control
 * characters a vocabulary may lack; a byte without a token becomes UNK).
 */
#ifndef DK_MODELS_BPE_H
#define DK_MODELS_BPE_H

#include "vocab.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  DK_BPE_PRE_GPT2 = 0, DK_BPE_PRE_SMOLLM, DK_BPE_PRE_LLAMA3, DK_BPE_PRE_QWEN2
} dk_bpe_pre;

enum {
  DK_BPE_ADD_BOS = 1,        /* BOS first, if the vocabulary wants one */
  DK_BPE_SPECIAL = 2         /* special tokens' text in the input becomes their ids */
};

typedef struct dk_bpe dk_bpe;

/* The tokenizer of GGUF file f (tokenizer.ggml.model "gpt2"); pre, when not
 * NULL, overrides tokenizer.ggml.pre. f may be closed afterwards. */
DK_MODELS_API dk_status dk_bpe_load(const dk_file *f, const char *pre, dk_bpe **out);
DK_MODELS_API void      dk_bpe_free(dk_bpe *b);
DK_MODELS_API const dk_vocab *dk_bpe_vocab(const dk_bpe *b);
DK_MODELS_API dk_bpe_pre dk_bpe_pre_type(const dk_bpe *b);
DK_MODELS_API const char *dk_bpe_pre_name(dk_bpe_pre p);
/* Whether DK_BPE_ADD_BOS adds one (the file's flag, or the pre-tokenizer's default). */
DK_MODELS_API int       dk_bpe_wants_bos(const dk_bpe *b);
/* The ids of text[0, len): *ids is allocated (free() it), *n the count. */
DK_MODELS_API dk_status dk_bpe_encode(const dk_bpe *b, const char *text, size_t len, int flags, int32_t **ids, int *n);
/* The pre-tokenizer alone: the end offsets (bytes) of the words it cuts
 * text[0, len) into, no special tokens looked for; *ends is allocated. */
DK_MODELS_API dk_status dk_bpe_split(const dk_bpe *b, const char *text, size_t len, int32_t **ends, int *n);
/* The bytes of token id into buf (NUL-terminated if room); returns their
 * count, which may exceed cap (then buf holds the first cap-1). Control
 * tokens give their text only when special is set, otherwise nothing. */
DK_MODELS_API size_t    dk_bpe_decode(const dk_bpe *b, int32_t id, int special, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* DK_MODELS_BPE_H */

/* ======================================================================== */
#if defined(DEVKIT_MODELS_IMPLEMENTATION) && !defined(DK_MODELS_BPE_IMPL)
#define DK_MODELS_BPE_IMPL

#include "unicode_tables.h"
#include <stdlib.h>
#include <string.h>

struct dk_bpe {
  dk_vocab *v;
  dk_bpe_pre pre;
  int ignore_merges;         /* Llama 3: a word that is a token is taken whole */
  int add_bos;
  int32_t byte_tok[256];     /* the token of each byte's mapped character, -1 if missing */
  char byte_chr[256][3];     /* the mapped character's UTF-8 */
  uint8_t byte_chr_len[256];
  /* merges: (left id, right id) -> rank and merged id, open addressing */
  uint64_t *mkey;            /* (l << 32 | r) + 1; 0 empty */
  int32_t *mrank, *mres;
  uint64_t mmask;
  /* every token's decoded bytes */
  char *dec;
  uint64_t *dec_off;
  uint32_t *dec_len;
  /* special tokens, longest first, and for each first byte whether any starts with it */
  int32_t *special;
  int n_special;
  uint8_t special_first[256];
};

/* ---- Unicode classes ------------------------------------------------------- */

enum { DK_BPE__L = 1, DK_BPE__N = 2, DK_BPE__S = 4 };

static int dk_bpe__in(const uint32_t (*r)[2], int n, uint32_t cp) {
  int lo = 0, hi = n - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (cp < r[mid][0]) hi = mid - 1;
    else if (cp > r[mid][1]) lo = mid + 1;
    else return 1;
  }
  return 0;
}

static int dk_bpe__class(uint32_t cp) {
  if (cp < 128) {
    if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return DK_BPE__L;
    if (cp >= '0' && cp <= '9') return DK_BPE__N;
    if (cp == ' ' || (cp >= 9 && cp <= 13)) return DK_BPE__S;
    return 0;
  }
#define DK_BPE__N_OF(t) ((int)(sizeof t / sizeof t[0]))
  if (dk_bpe__in(dk_uni_letter, DK_BPE__N_OF(dk_uni_letter), cp)) return DK_BPE__L;
  if (dk_bpe__in(dk_uni_number, DK_BPE__N_OF(dk_uni_number), cp)) return DK_BPE__N;
  if (dk_bpe__in(dk_uni_space, DK_BPE__N_OF(dk_uni_space), cp)) return DK_BPE__S;
#undef DK_BPE__N_OF
  return 0;
}

/* one UTF-8 character at s[0, n): its code point and length; a byte that
 * starts no valid character is one character of its own (class: other) */
static size_t dk_bpe__utf8(const unsigned char *s, size_t n, uint32_t *cp) {
  uint32_t c = s[0];
  size_t len, i;
  if (c < 0x80) { *cp = c; return 1; }
  if (c >= 0xc2 && c < 0xe0) { len = 2; c &= 0x1f; }
  else if (c >= 0xe0 && c < 0xf0) { len = 3; c &= 0x0f; }
  else if (c >= 0xf0 && c < 0xf5) { len = 4; c &= 0x07; }
  else { *cp = 0xfffd; return 1; }
  if (len > n) { *cp = 0xfffd; return 1; }
  for (i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) { *cp = 0xfffd; return 1; }
    c = (c << 6) | (s[i] & 0x3f);
  }
  if ((len == 3 && (c < 0x800 || (c >= 0xd800 && c < 0xe000))) || (len == 4 && (c < 0x10000 || c > 0x10ffff))) {
    *cp = 0xfffd;
    return 1;
  }
  *cp = c;
  return len;
}

/* ---- pre-tokenizers: the end of the match at character i of [i, e) ------ */

typedef struct { uint32_t cp; uint8_t cls; } dk_bpe__ch;

#define DK_BPE__O(c) ((c).cls == 0)   /* [^\s\p{L}\p{N}] */
#define DK_BPE__NL(c) ((c).cp == '\r' || (c).cp == '\n')

static uint32_t dk_bpe__lower(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* 's 't 're 've 'm 'll 'd at i: the match's length, or 0 */
static int dk_bpe__contraction(const dk_bpe__ch *c, int i, int e, int fold) {
  uint32_t a, b;
  if (c[i].cp != '\'' || i + 1 >= e) return 0;
  a = fold ? dk_bpe__lower(c[i + 1].cp) : c[i + 1].cp;
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 >= e) return 0;
  b = fold ? dk_bpe__lower(c[i + 2].cp) : c[i + 2].cp;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

/* \s+(?!\S)|\s+ at i (a whitespace character): the run, less its last
 * character when a non-space follows and the run is longer than one */
static int dk_bpe__spaces(const dk_bpe__ch *c, int i, int e) {
  int j = i;
  while (j < e && (c[j].cls & DK_BPE__S)) j++;
  if (j == e) return j;
  return j - i > 1 ? j - 1 : i + 1;
}

static int dk_bpe__match_gpt2(const dk_bpe__ch *c, int i, int e) {
  int k = dk_bpe__contraction(c, i, e, 0), j;
  if (k) return i + k;
  /* ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+': one class's run after an
   * optional space (every character is exactly one of L, N, S, other) */
  j = c[i].cp == ' ' && i + 1 < e && !(c[i + 1].cls & DK_BPE__S) ? i + 1 : i;
  if (!(c[j].cls & DK_BPE__S)) {
    int m = j;
    while (m < e && c[m].cls == c[j].cls) m++;
    return m;
  }
  return dk_bpe__spaces(c, i, e);
}

static int dk_bpe__match_llama3(const dk_bpe__ch *c, int i, int e, int max_digits) {
  int k = dk_bpe__contraction(c, i, e, 1), j;
  if (k) return i + k;
  /* [^\r\n\p{L}\p{N}]?\p{L}+ */
  j = i;
  if (!(c[i].cls & (DK_BPE__L | DK_BPE__N)) && !DK_BPE__NL(c[i]) && i + 1 < e && (c[i + 1].cls & DK_BPE__L)) j = i + 1;
  if (c[j].cls & DK_BPE__L) {
    while (j < e && (c[j].cls & DK_BPE__L)) j++;
    return j;
  }
  /* \p{N}{1,max} */
  if (c[i].cls & DK_BPE__N) {
    for (j = i; j < e && j - i < max_digits && (c[j].cls & DK_BPE__N); j++) {}
    return j;
  }
  /* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
  j = c[i].cp == ' ' && i + 1 < e && DK_BPE__O(c[i + 1]) ? i + 1 : i;
  if (DK_BPE__O(c[j])) {
    while (j < e && DK_BPE__O(c[j])) j++;
    while (j < e && DK_BPE__NL(c[j])) j++;
    return j;
  }
  /* \s*[\r\n]+: the whitespace run up to its last line break */
  if (c[i].cls & DK_BPE__S) {
    int last = -1;
    for (j = i; j < e && (c[j].cls & DK_BPE__S); j++)
      if (DK_BPE__NL(c[j])) last = j;
    if (last >= 0) return last + 1;
    return dk_bpe__spaces(c, i, e);
  }
  return i + 1;
}

/* ---- loading ------------------------------------------------------------------ */

static const struct { const char *name; dk_bpe_pre pre; } dk_bpe__pres[] = {
  {"gpt-2", DK_BPE_PRE_GPT2}, {"gpt2", DK_BPE_PRE_GPT2}, {"phi-2", DK_BPE_PRE_GPT2}, {"jina-es", DK_BPE_PRE_GPT2},
  {"smollm", DK_BPE_PRE_SMOLLM},
  {"llama-bpe", DK_BPE_PRE_LLAMA3}, {"llama3", DK_BPE_PRE_LLAMA3}, {"dbrx", DK_BPE_PRE_LLAMA3},
  {"smaug-bpe", DK_BPE_PRE_LLAMA3},
  {"qwen2", DK_BPE_PRE_QWEN2}, {"deepseek-r1-qwen", DK_BPE_PRE_QWEN2},
};

DK_MODELS_API const char *dk_bpe_pre_name(dk_bpe_pre p) {
  switch (p) {
  case DK_BPE_PRE_GPT2: return "gpt-2";
  case DK_BPE_PRE_SMOLLM: return "smollm";
  case DK_BPE_PRE_LLAMA3: return "llama-bpe";
  case DK_BPE_PRE_QWEN2: return "qwen2";
  }
  return "?";
}

DK_MODELS_API void dk_bpe_free(dk_bpe *b) {
  if (!b) return;
  dk_vocab_free(b->v);
  free(b->mkey); free(b->mrank); free(b->mres);
  free(b->dec); free(b->dec_off); free(b->dec_len);
  free(b->special);
  free(b);
}

DK_MODELS_API const dk_vocab *dk_bpe_vocab(const dk_bpe *b) { return b->v; }
DK_MODELS_API dk_bpe_pre dk_bpe_pre_type(const dk_bpe *b) { return b->pre; }
DK_MODELS_API int dk_bpe_wants_bos(const dk_bpe *b) { return b->add_bos; }

static uint64_t dk_bpe__pair_hash(uint64_t k) {
  k ^= k >> 33; k *= 0xff51afd7ed558ccdull; k ^= k >> 33;
  return k;
}

static int dk_bpe__merge_find(const dk_bpe *b, int32_t l, int32_t r, int32_t *rank, int32_t *res) {
  uint64_t key = ((uint64_t)(uint32_t)l << 32 | (uint32_t)r) + 1, h;
  if (!b->mkey) return 0;
  for (h = dk_bpe__pair_hash(key) & b->mmask; b->mkey[h]; h = (h + 1) & b->mmask)
    if (b->mkey[h] == key) { *rank = b->mrank[h]; *res = b->mres[h]; return 1; }
  return 0;
}

/* GPT-2's map: printable bytes stand for themselves, the other 68 bytes for
 * U+0100 onwards in byte order (so a token's text is printable and has no space) */
static uint32_t dk_bpe__byte_cp(int byte, int *next_extra) {
  if ((byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || byte >= 174) return (uint32_t)byte;
  return 256 + (uint32_t)(*next_extra)++;
}

static size_t dk_bpe__put_utf8(uint32_t cp, char *o) {
  if (cp < 0x80) { o[0] = (char)cp; return 1; }
  if (cp < 0x800) { o[0] = (char)(0xc0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3f)); return 2; }
  if (cp < 0x10000) {
    o[0] = (char)(0xe0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3f)); o[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  o[0] = (char)(0xf0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3f)); o[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

/* keys (~len << 32 | id): ascending order is longest first, then lowest id */
static int dk_bpe__cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

static dk_status dk_bpe__build(dk_bpe *b, const dk_file *f) {
  dk_vocab *v = b->v;
  dk_meta merges;
  int extra = 0, i;
  int16_t inv[0x200];        /* mapped code point (all < 0x200) -> byte */
  uint64_t total = 0, cap, k;
  int32_t id;
  memset(inv, 0xff, sizeof inv);
  for (i = 0; i < 256; i++) {
    uint32_t cp = dk_bpe__byte_cp(i, &extra);
    b->byte_chr_len[i] = (uint8_t)dk_bpe__put_utf8(cp, b->byte_chr[i]);
    b->byte_tok[i] = dk_vocab_find(v, b->byte_chr[i], b->byte_chr_len[i]);
    inv[cp] = (int16_t)i;
  }
  /* merges "left right" -> the pair of ids, its rank (its index) and the merged token */
  if (!dk_file_meta_find(f, "tokenizer.ggml.merges", &merges) || merges.type != DK_META_ARRAY ||
      merges.elem_type != DK_META_STRING)
    return dk_set_error(DK_ERR_FORMAT, "%s: tokenizer.ggml.merges (an array of strings) is missing", dk_file_name(f));
  if (merges.count > 0x7fffffff) return dk_set_error(DK_ERR_FORMAT, "%s: too many merges", dk_file_name(f));
  for (cap = 16; cap < 2 * merges.count + 16; cap *= 2) {}
  b->mkey = (uint64_t *)calloc(cap, sizeof *b->mkey);
  b->mrank = (int32_t *)malloc(sizeof *b->mrank * cap);
  b->mres = (int32_t *)malloc(sizeof *b->mres * cap);
  if (!b->mkey || !b->mrank || !b->mres) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no memory for the merges");
  b->mmask = cap - 1;
  for (k = 0; k < merges.count; k++) {
    dk_meta e;
    const char *s, *sp;
    size_t n;
    char both[1024];
    int32_t l, r, res;
    uint64_t key, h;
    s = "";
    n = 0;
    if (dk_meta_at(&merges, k, &e) != DK_OK || dk_meta_string(&e, &s, &n) != DK_OK)
      return dk_set_error(DK_ERR_FORMAT, "%s: merge %llu is not a string", dk_file_name(f), (unsigned long long)k);
    /* the space separates; the left part never starts with one (byte-level
     * tokens spell spaces as U+0120), so look from its second byte */
    sp = n > 1 ? (const char *)memchr(s + 1, ' ', n - 1) : NULL;
    if (!sp || n >= sizeof both)
      return dk_set_error(DK_ERR_FORMAT, "%s: merge %llu '%.*s' is not two tokens separated by a space", dk_file_name(f),
                             (unsigned long long)k, (int)(n > 60 ? 60 : n), s);
    l = dk_vocab_find(v, s, (size_t)(sp - s));
    r = dk_vocab_find(v, sp + 1, n - (size_t)(sp - s) - 1);
    memcpy(both, s, (size_t)(sp - s));
    memcpy(both + (sp - s), sp + 1, n - (size_t)(sp - s) - 1);
    res = dk_vocab_find(v, both, n - 1);
    /* a merge of or into a token the vocabulary lacks can never apply */
    if (l < 0 || r < 0 || res < 0) continue;
    key = ((uint64_t)(uint32_t)l << 32 | (uint32_t)r) + 1;
    for (h = dk_bpe__pair_hash(key) & b->mmask; b->mkey[h] && b->mkey[h] != key; h = (h + 1) & b->mmask) {}
    if (b->mkey[h]) continue;   /* a repeated merge keeps its first (best) rank */
    b->mkey[h] = key;
    b->mrank[h] = (int32_t)k;
    b->mres[h] = res;
  }
  /* decoded bytes: normal tokens through the inverse map; the rest are their text */
  for (id = 0; id < v->n; id++) total += v->len[id] + 1;
  b->dec = (char *)malloc(total);
  b->dec_off = (uint64_t *)malloc(sizeof *b->dec_off * (size_t)v->n);
  b->dec_len = (uint32_t *)malloc(sizeof *b->dec_len * (size_t)v->n);
  b->special = (int32_t *)malloc(sizeof *b->special * (size_t)v->n);
  if (!b->dec || !b->dec_off || !b->dec_len || !b->special) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no memory for the vocabulary");
  for (id = 0, total = 0; id < v->n; id++) {
    const unsigned char *s = (const unsigned char *)v->text + v->off[id];
    size_t n = v->len[id], p = 0, o = 0;
    int t = v->type[id];
    b->dec_off[id] = total;
    if (t == DK_TOKEN_NORMAL || t == DK_TOKEN_UNDEFINED || t == DK_TOKEN_BYTE) {
      while (p < n) {
        uint32_t cp;
        size_t cl = dk_bpe__utf8(s + p, n - p, &cp);
        if (cl > 0 && cp < 0x200 && inv[cp] >= 0) b->dec[total + o++] = (char)inv[cp];
        else { memcpy(b->dec + total + o, s + p, cl); o += cl; }   /* not a mapped character: as written */
        p += cl;
      }
    } else {
      memcpy(b->dec + total, s, n);
      o = n;
    }
    b->dec[total + o] = 0;
    b->dec_len[id] = (uint32_t)o;
    total += o + 1;
    if ((t == DK_TOKEN_CONTROL || t == DK_TOKEN_USER || t == DK_TOKEN_UNKNOWN) && n > 0) {
      b->special[b->n_special++] = id;
      b->special_first[s[0]] = 1;
    }
  }
  if (b->n_special > 0) {
    uint64_t *keys = (uint64_t *)malloc(sizeof *keys * (size_t)b->n_special);
    if (!keys) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no memory for the special tokens");
    for (i = 0; i < b->n_special; i++)
      keys[i] = (uint64_t)(0xffffffffu - v->len[b->special[i]]) << 32 | (uint32_t)b->special[i];
    qsort(keys, (size_t)b->n_special, sizeof *keys, dk_bpe__cmp_u64);
    for (i = 0; i < b->n_special; i++) b->special[i] = (int32_t)(keys[i] & 0xffffffffu);
    free(keys);
  }
  return DK_OK;
}

DK_MODELS_API dk_status dk_bpe_load(const dk_file *f, const char *pre, dk_bpe **out) {
  dk_bpe *b;
  dk_status s;
  size_t k;
  const char *name;
  if (!f || !out) return dk_set_error(DK_ERR_INVALID, "dk_bpe_load: NULL argument");
  *out = NULL;
  b = (dk_bpe *)calloc(1, sizeof *b);
  if (!b) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no memory for a tokenizer");
  if ((s = dk_vocab_load(f, &b->v))) { free(b); return s; }
  if (strcmp(b->v->model, "gpt2")) {
    s = dk_set_error(DK_ERR_UNSUPPORTED, "%s: tokenizer.ggml.model is '%s'; byte-level BPE is 'gpt2'", dk_file_name(f),
                        b->v->model);
    dk_bpe_free(b);
    return s;
  }
  /* no name at all: GPT-2's own expression, as llama.cpp falls back to */
  name = pre ? pre : b->v->pre[0] ? b->v->pre : "gpt-2";
  for (k = 0; k < sizeof dk_bpe__pres / sizeof dk_bpe__pres[0]; k++)
    if (!strcmp(name, dk_bpe__pres[k].name)) break;
  if (k == sizeof dk_bpe__pres / sizeof dk_bpe__pres[0]) {
    s = dk_set_error(DK_ERR_UNSUPPORTED, "%s: pre-tokenizer '%s' (tokenizer.ggml.pre) is not one this tokenizer knows "
                        "(gpt-2, smollm, llama-bpe, qwen2)", dk_file_name(f), name);
    dk_bpe_free(b);
    return s;
  }
  b->pre = dk_bpe__pres[k].pre;
  b->ignore_merges = b->pre == DK_BPE_PRE_LLAMA3;
  b->add_bos = (b->v->has_add_bos ? b->v->add_bos : b->pre == DK_BPE_PRE_LLAMA3) && b->v->bos >= 0;
  if ((s = dk_bpe__build(b, f))) { dk_bpe_free(b); return s; }
  *out = b;
  return DK_OK;
}

/* ---- encoding -------------------------------------------------------------- */

typedef struct { int32_t rank, left, right, lid, rid; } dk_bpe__pair;
typedef struct { int32_t id; int prev, next; } dk_bpe__sym;

typedef struct {
  int32_t *ids; int n, cap;
  dk_bpe__ch *ch; size_t *choff; int nch_cap;   /* a span's characters and their byte offsets */
  dk_bpe__sym *sym; dk_bpe__pair *heap; int sym_cap;
  char *word; size_t word_cap;
  const unsigned char *base;   /* dk_bpe_split: words' ends from here, no BPE */
} dk_bpe__work;

static int dk_bpe__pair_before(const dk_bpe__pair *a, const dk_bpe__pair *b) {
  return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static void dk_bpe__push(dk_bpe__pair *h, int *n, dk_bpe__pair p) {
  int i = (*n)++;
  while (i > 0 && dk_bpe__pair_before(&p, &h[(i - 1) / 2])) { h[i] = h[(i - 1) / 2]; i = (i - 1) / 2; }
  h[i] = p;
}

static dk_bpe__pair dk_bpe__pop(dk_bpe__pair *h, int *n) {
  dk_bpe__pair top = h[0], last = h[--(*n)];
  int i = 0;
  for (;;) {
    int c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && dk_bpe__pair_before(&h[c + 1], &h[c])) c++;
    if (!dk_bpe__pair_before(&h[c], &last)) break;
    h[i] = h[c];
    i = c;
  }
  h[i] = last;
  return top;
}

static int dk_bpe__emit(dk_bpe__work *w, int32_t id) {
  if (w->n == w->cap) {
    int nc = w->cap ? 2 * w->cap : 64;
    int32_t *p = (int32_t *)realloc(w->ids, sizeof *p * (size_t)nc);
    if (!p) return 0;
    w->ids = p;
    w->cap = nc;
  }
  w->ids[w->n++] = id;
  return 1;
}

static void dk_bpe__try_pair(const dk_bpe *b, dk_bpe__work *w, int l, int r, int *nh) {
  dk_bpe__pair p;
  int32_t rank, res;
  if (l < 0 || r < 0) return;
  if (!dk_bpe__merge_find(b, w->sym[l].id, w->sym[r].id, &rank, &res)) return;
  p.rank = rank; p.left = l; p.right = r; p.lid = w->sym[l].id; p.rid = w->sym[r].id;
  dk_bpe__push(w->heap, nh, p);
}

/* one word (the bytes s[0, n)): its tokens */
static dk_status dk_bpe__word(const dk_bpe *b, dk_bpe__work *w, const unsigned char *s, size_t n) {
  size_t i;
  int k, nh = 0;
  if ((size_t)w->sym_cap < n) {
    dk_bpe__sym *ns = (dk_bpe__sym *)realloc(w->sym, sizeof *ns * n);
    dk_bpe__pair *np;
    if (ns) w->sym = ns;
    np = (dk_bpe__pair *)realloc(w->heap, sizeof *np * 3 * n);
    if (np) w->heap = np;
    if (!ns || !np) return DK_ERR_OUT_OF_MEMORY;
    w->sym_cap = (int)n;
  }
  if (b->ignore_merges) {
    size_t o = 0;
    int32_t id;
    if (w->word_cap < 2 * n) {
      char *nw = (char *)realloc(w->word, 2 * n);
      if (!nw) return DK_ERR_OUT_OF_MEMORY;
      w->word = nw;
      w->word_cap = 2 * n;
    }
    for (i = 0; i < n; i++) { memcpy(w->word + o, b->byte_chr[s[i]], b->byte_chr_len[s[i]]); o += b->byte_chr_len[s[i]]; }
    id = dk_vocab_find(b->v, w->word, o);
    if (id >= 0) return dk_bpe__emit(w, id) ? DK_OK : DK_ERR_OUT_OF_MEMORY;
  }
  for (i = 0; i < n; i++) {
    w->sym[i].id = b->byte_tok[s[i]];
    w->sym[i].prev = (int)i - 1;
    w->sym[i].next = i + 1 < n ? (int)i + 1 : -1;
  }
  for (k = 0; k + 1 < (int)n; k++) dk_bpe__try_pair(b, w, k, k + 1, &nh);
  while (nh > 0) {
    dk_bpe__pair p = dk_bpe__pop(w->heap, &nh);
    dk_bpe__sym *l = &w->sym[p.left], *r = &w->sym[p.right];
    int32_t rank, res;
    /* a pair whose symbols changed since it was queued is stale */
    if (l->id != p.lid || l->next != p.right || r->id != p.rid || r->id < 0) continue;
    dk_bpe__merge_find(b, p.lid, p.rid, &rank, &res);
    l->id = res;
    l->next = r->next;
    r->id = -2;   /* gone */
    if (r->next >= 0) w->sym[r->next].prev = p.left;
    dk_bpe__try_pair(b, w, l->prev, p.left, &nh);
    dk_bpe__try_pair(b, w, p.left, l->next, &nh);
  }
  for (k = 0; k >= 0; k = w->sym[k].next) {
    /* a byte with no token of its own (a vocabulary that lacks some): UNK */
    int32_t id = w->sym[k].id >= 0 ? w->sym[k].id : b->v->unk;
    if (id >= 0 && !dk_bpe__emit(w, id)) return DK_ERR_OUT_OF_MEMORY;
  }
  return DK_OK;
}

/* one span of ordinary text: its words, then each word's tokens */
static dk_status dk_bpe__span(const dk_bpe *b, dk_bpe__work *w, const unsigned char *s, size_t n) {
  size_t p = 0;
  int nch = 0, i, start;
  dk_status st;
  if (n == 0) return DK_OK;
  if ((size_t)w->nch_cap < n + 1) {
    dk_bpe__ch *nc = (dk_bpe__ch *)realloc(w->ch, sizeof *nc * (n + 1));
    size_t *no;
    if (nc) w->ch = nc;
    no = (size_t *)realloc(w->choff, sizeof *no * (n + 1));
    if (no) w->choff = no;
    if (!nc || !no) return DK_ERR_OUT_OF_MEMORY;
    w->nch_cap = (int)n + 1;
  }
  while (p < n) {
    uint32_t cp;
    size_t cl = dk_bpe__utf8(s + p, n - p, &cp);
    w->ch[nch].cp = cp;
    w->ch[nch].cls = (uint8_t)dk_bpe__class(cp);
    w->choff[nch++] = p;
    p += cl;
  }
  w->choff[nch] = n;
  for (start = 0; start < nch;) {
    /* smollm: each number character is a segment of its own, and gpt-2's
     * expression runs inside the segments between them */
    int e = nch;
    if (b->pre == DK_BPE_PRE_SMOLLM) {
      if (w->ch[start].cls & DK_BPE__N) e = start + 1;
      else for (e = start; e < nch && !(w->ch[e].cls & DK_BPE__N); e++) {}
    }
    for (i = start; i < e;) {
      int j;
      switch (b->pre) {
      case DK_BPE_PRE_LLAMA3: j = dk_bpe__match_llama3(w->ch, i, e, 3); break;
      case DK_BPE_PRE_QWEN2: j = dk_bpe__match_llama3(w->ch, i, e, 1); break;
      default: j = dk_bpe__match_gpt2(w->ch, i, e); break;
      }
      if (j <= i) j = i + 1;
      if (w->base) {
        if (!dk_bpe__emit(w, (int32_t)(s + w->choff[j] - w->base))) return DK_ERR_OUT_OF_MEMORY;
      } else if ((st = dk_bpe__word(b, w, s + w->choff[i], w->choff[j] - w->choff[i]))) return st;
      i = j;
    }
    start = e;
  }
  return DK_OK;
}

DK_MODELS_API dk_status dk_bpe_encode(const dk_bpe *b, const char *text, size_t len, int flags, int32_t **ids, int *n) {
  dk_bpe__work w;
  const unsigned char *s = (const unsigned char *)text;
  size_t i, span = 0;
  dk_status st = DK_OK;
  if (!b || (!text && len) || !ids || !n) return dk_set_error(DK_ERR_INVALID, "dk_bpe_encode: NULL argument");
  *ids = NULL;
  *n = 0;
  if (len > ((size_t)1 << 30)) return dk_set_error(DK_ERR_INVALID, "the text (%zu bytes) is too long to tokenize", len);
  memset(&w, 0, sizeof w);
  if ((flags & DK_BPE_ADD_BOS) && b->add_bos && !dk_bpe__emit(&w, b->v->bos)) st = DK_ERR_OUT_OF_MEMORY;
  for (i = 0; i < len && !st;) {
    int k;
    int32_t hit = -1;
    if ((flags & DK_BPE_SPECIAL) && b->special_first[s[i]])
      for (k = 0; k < b->n_special; k++) {
        int32_t id = b->special[k];
        uint32_t l = b->v->len[id];
        if (l <= len - i && !memcmp(s + i, b->v->text + b->v->off[id], l)) { hit = id; break; }
      }
    if (hit < 0) { i++; continue; }
    if ((st = dk_bpe__span(b, &w, s + span, i - span))) break;
    if (!dk_bpe__emit(&w, hit)) { st = DK_ERR_OUT_OF_MEMORY; break; }
    i += b->v->len[hit];
    span = i;
  }
  if (!st) st = dk_bpe__span(b, &w, s + span, len - span);
  free(w.ch); free(w.choff); free(w.sym); free(w.heap); free(w.word);
  if (st) {
    free(w.ids);
    return dk_set_error(st, "no memory to tokenize %zu bytes", len);
  }
  if (!w.ids) w.ids = (int32_t *)malloc(sizeof *w.ids);   /* an empty result is still a pointer to free */
  if (!w.ids) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no memory to tokenize");
  *ids = w.ids;
  *n = w.n;
  return DK_OK;
}

DK_MODELS_API dk_status dk_bpe_split(const dk_bpe *b, const char *text, size_t len, int32_t **ends, int *n) {
  dk_bpe__work w;
  dk_status st;
  if (!b || (!text && len) || !ends || !n) return dk_set_error(DK_ERR_INVALID, "dk_bpe_split: NULL argument");
  *ends = NULL;
  *n = 0;
  if (len > ((size_t)1 << 30)) return dk_set_error(DK_ERR_INVALID, "the text (%zu bytes) is too long to split", len);
  memset(&w, 0, sizeof w);
  w.base = (const unsigned char *)text;
  st = dk_bpe__span(b, &w, w.base, len);
  free(w.ch); free(w.choff); free(w.sym); free(w.heap); free(w.word);
  if (!st && !w.ids) w.ids = (int32_t *)malloc(sizeof *w.ids);
  if (st || !w.ids) { free(w.ids); return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no memory to split %zu bytes", len); }
  *ends = w.ids;
  *n = w.n;
  return DK_OK;
}

/* ---- decoding ------------------------------------------------------------------ */

DK_MODELS_API size_t dk_bpe_decode(const dk_bpe *b, int32_t id, int special, char *buf, size_t cap) {
  size_t n;
  if (cap) buf[0] = 0;
  if (!b || id < 0 || id >= b->v->n) return 0;
  if (!special && (b->v->type[id] == DK_TOKEN_CONTROL || b->v->type[id] == DK_TOKEN_UNUSED)) return 0;
  n = b->dec_len[id];
  if (cap) {
    size_t c = n < cap ? n : cap - 1;
    memcpy(buf, b->dec + b->dec_off[id], c);
    buf[c] = 0;
  }
  return n;
}

#endif /* DEVKIT_MODELS_IMPLEMENTATION */
