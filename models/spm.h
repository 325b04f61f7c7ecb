/* models/spm.h — the SentencePiece-style tokenizer of llama-family
 * models, read from a model file through devkit's readers.
 *
 * It works from a GGUF vocabulary (tokenizer.ggml.model = "llama": the
 * tokens, scores and token types, the BOS/EOS ids, add_bos_token and
 * add_space_prefix) or from a llama2.c tokenizer file (tok512.bin,
 * tokenizer.bin: scores and byte strings; BOS 1, EOS 2). Both readers expose
 * the same "tokenizer.ggml.tokens" and "tokenizer.ggml.scores" arrays, so
 * one algorithm serves both:
 *
 *   1. a non-empty text gets the dummy-prefix space; in a GGUF vocabulary
 *      spaces are written U+2581 "▁" (llama2.c's files keep ' ');
 *   2. the text is split into UTF-8 characters;
 *   3. the adjacent pair whose concatenation is a token with the highest
 *      score is merged (ties: the leftmost), until no pair is a token;
 *   4. a piece that is not a token is spelled with its bytes' <0xXX> tokens
 *      (byte fallback), or <unk> where even those are missing.
 * Before step 3, the text is cut at user-defined and control tokens
 * (token types 4 and 3: Gemma's runs of spaces and tabs, <start_of_turn>),
 * leftmost-longest: each is one token of its own and nothing merges across
 * it, as SentencePiece's user-defined symbols and transformers' added tokens
 * behave (so a prompt may spell a control token; llama-cli parses them too).
 *
 * This reproduces llama.cpp's SPM tokenizer (its test vectors pass exactly)
 * and llama2.c's run.c encoder. Decoding strips the space a piece starts with
 * right after BOS, as run.c does.
 */
#ifndef DK_MODELS_SPM_H
#define DK_MODELS_SPM_H

#include "vocab.h"   /* the spelling table (dk_spelling_find) */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dk_spm dk_spm;

/* The vocabulary of f, copied: f may be closed afterwards. On failure the
 * message is in dk_last_error(). */
dk_status   dk_spm_load(const dk_file *f, dk_spm **out);
void        dk_spm_free(dk_spm *t);

int32_t dk_spm_count(const dk_spm *t);
int32_t dk_spm_bos(const dk_spm *t);
int32_t dk_spm_eos(const dk_spm *t);
int     dk_spm_wants_bos(const dk_spm *t);   /* whether prompts start with BOS */

/* The ids of text[0, len), BOS first when add_bos; *ids is allocated
 * (free() it), *n the count. */
dk_status dk_spm_encode(const dk_spm *t, const char *text, size_t len, int add_bos, int32_t **ids, int *n);

/* The bytes id stands for when it follows prev (-1: nothing before), into
 * buf (NUL-terminated); returns their count. Control tokens are empty. */
size_t dk_spm_piece(const dk_spm *t, int32_t prev, int32_t id, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* DK_MODELS_SPM_H */

/* ======================================================================== */
#if defined(DEVKIT_MODELS_IMPLEMENTATION) && !defined(DK_MODELS_SPM_IMPL)
#define DK_MODELS_SPM_IMPL

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GGUF token types */
#define TOK_NORMAL 1
#define TOK_UNKNOWN 2
#define TOK_CONTROL 3
#define TOK_USER 4
#define TOK_UNUSED 5
#define TOK_BYTE 6

struct dk_spm {
  int32_t n;
  char *text;          /* every token's bytes, each NUL-terminated */
  uint64_t *off;       /* token i at text + off[i], len[i] bytes */
  uint32_t *len;
  float *score;
  uint8_t *type;
  int32_t *hash;       /* open addressing: token ids, -1 empty */
  uint64_t hmask;
  int32_t bos, eos, unk;
  int32_t byte_id[256];
  int add_bos, add_prefix;
  int spm_space;       /* spaces are written U+2581 (GGUF) rather than ' ' (llama2.c) */
  int strip_after_bos;
  uint8_t sp_len[64];  /* sp_len[n]: some user-defined or control token is n bytes long */
  int sp_max;          /* the longest such token, at most 63 bytes; 0: none */
};


/* the id of the token spelled s[0, n), or -1 */
static int32_t tok_find(const dk_spm *t, const char *s, size_t n) {
  return dk_spelling_find(t->hash, t->hmask, t->text, t->off, t->len, s, n);
}

static void tok_insert(dk_spm *t, int32_t id) {
  uint64_t h = dk_spelling_hash(t->text + t->off[id], t->len[id]) & t->hmask;
  for (;;) {
    int32_t o = t->hash[h];
    if (o < 0) { t->hash[h] = id; return; }
    /* a spelling that appears twice maps to its last id, as llama.cpp's map does */
    if (t->len[o] == t->len[id] && !memcmp(t->text + t->off[o], t->text + t->off[id], t->len[id])) { t->hash[h] = id; return; }
    h = (h + 1) & t->hmask;
  }
}

static int meta_int_or(const dk_file *f, const char *key, int64_t def, int64_t *out) {
  dk_meta m;
  *out = def;
  if (!dk_file_meta_find(f, key, &m)) return 1;
  return dk_meta_int(&m, out) == DK_OK;
}

void dk_spm_free(dk_spm *t) {
  if (!t) return;
  free(t->text); free(t->off); free(t->len); free(t->score); free(t->type); free(t->hash);
  free(t);
}

dk_status dk_spm_load(const dk_file *f, dk_spm **out) {
  dk_meta toks, scores, types;
  dk_spm *t;
  uint64_t i, total = 0, cap;
  int has_types, l2c = dk_file_format_of(f) == DK_FILE_LLAMA2C_TOKENIZER;
  int64_t v;
  *out = NULL;
  if (!l2c) {
    const char *model;
    size_t mlen;
    if (!dk_file_has_gguf_keys(f))
      return dk_set_error(DK_ERR_FORMAT, "%s: a %s file holds no tokenizer; use a GGUF file or a llama2.c tokenizer (-z)",
                      dk_file_name(f), dk_file_format_name(dk_file_format_of(f)));
    if (dk_file_meta_string(f, "tokenizer.ggml.model", &model, &mlen) != DK_OK)
      return dk_set_error(DK_ERR_FORMAT, "%s", dk_last_error());
    if (mlen != 5 || memcmp(model, "llama", 5))
      return dk_set_error(DK_ERR_UNSUPPORTED, "%s: tokenizer.ggml.model is '%.*s'; this tokenizer handles 'llama' (SentencePiece)",
                      dk_file_name(f), (int)(mlen > 40 ? 40 : mlen), model);
  }
  if (!dk_file_meta_find(f, "tokenizer.ggml.tokens", &toks) || toks.type != DK_META_ARRAY ||
      toks.elem_type != DK_META_STRING)
    return dk_set_error(DK_ERR_FORMAT, "%s: tokenizer.ggml.tokens (an array of strings) is missing", dk_file_name(f));
  if (!dk_file_meta_find(f, "tokenizer.ggml.scores", &scores) || scores.type != DK_META_ARRAY ||
      scores.elem_type != DK_META_F32 || scores.count != toks.count)
    return dk_set_error(DK_ERR_FORMAT, "%s: tokenizer.ggml.scores must be an array of %llu f32", dk_file_name(f),
                    (unsigned long long)toks.count);
  has_types = dk_file_meta_find(f, "tokenizer.ggml.token_type", &types);
  if (has_types && (types.type != DK_META_ARRAY || types.elem_type != DK_META_I32 || types.count != toks.count))
    return dk_set_error(DK_ERR_FORMAT, "%s: tokenizer.ggml.token_type must be an array of %llu i32", dk_file_name(f),
                    (unsigned long long)toks.count);
  if (toks.count == 0 || toks.count > 0x7fffffff)
    return dk_set_error(DK_ERR_FORMAT, "%s: the vocabulary has %llu tokens", dk_file_name(f), (unsigned long long)toks.count);
  t = (dk_spm *)calloc(1, sizeof *t);
  if (!t) return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no memory for the tokenizer");
  t->n = (int32_t)toks.count;
  for (i = 0; i < toks.count; i++) {
    dk_meta e;
    dk_meta_at(&toks, i, &e);
    total += e.count + 1;
  }
  for (cap = 16; cap < 2 * toks.count; cap *= 2) {}
  t->text = (char *)malloc(total);
  t->off = (uint64_t *)malloc(sizeof *t->off * toks.count);
  t->len = (uint32_t *)malloc(sizeof *t->len * toks.count);
  t->score = (float *)malloc(sizeof *t->score * toks.count);
  t->type = (uint8_t *)malloc(toks.count);
  t->hash = (int32_t *)malloc(sizeof *t->hash * cap);
  if (!t->text || !t->off || !t->len || !t->score || !t->type || !t->hash) {
    dk_spm_free(t);
    return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no memory for a vocabulary of %d tokens", (int)toks.count);
  }
  t->hmask = cap - 1;
  memset(t->hash, 0xff, sizeof *t->hash * cap);
  for (i = 0, total = 0; i < toks.count; i++) {
    dk_meta e;
    const char *s = "";
    size_t n = 0;
    double sc;
    dk_meta_at(&toks, i, &e);
    dk_meta_string(&e, &s, &n);
    if (n > 0xffffffffu) { dk_spm_free(t); return dk_set_error(DK_ERR_FORMAT, "%s: token %llu is too long", dk_file_name(f), (unsigned long long)i); }
    memcpy(t->text + total, s, n);
    t->text[total + n] = 0;
    t->off[i] = total;
    t->len[i] = (uint32_t)n;
    total += n + 1;
    dk_meta_at(&scores, i, &e);
    dk_meta_float(&e, &sc);
    t->score[i] = (float)sc;
    t->type[i] = TOK_NORMAL;
    if (has_types) {
      dk_meta_at(&types, i, &e);
      dk_meta_int(&e, &v);
      t->type[i] = (uint8_t)(v >= 0 && v <= 7 ? v : TOK_NORMAL);
    }
  }
  for (i = 0; i < toks.count; i++) {
    tok_insert(t, (int32_t)i);
    /* the lengths worth trying when the text is cut at these tokens */
    if (!l2c && (t->type[i] == TOK_USER || t->type[i] == TOK_CONTROL) && t->len[i] > 0 && t->len[i] < 64) {
      t->sp_len[t->len[i]] = 1;
      if ((int)t->len[i] > t->sp_max) t->sp_max = (int)t->len[i];
    }
  }
  /* byte-fallback tokens are found by spelling, wherever the vocabulary has them */
  for (i = 0; i < 256; i++) {
    char b[8];
    snprintf(b, sizeof b, "<0x%02X>", (unsigned)i);
    t->byte_id[i] = tok_find(t, b, 6);
  }
  if (l2c) {
    t->bos = 1; t->eos = 2; t->unk = 0;
    t->add_bos = 1; t->add_prefix = 1; t->spm_space = 0;
    if (t->n > 2) t->type[1] = t->type[2] = TOK_CONTROL;
  } else {
    int64_t bos, eos, unk, ab, ap;
    if (!meta_int_or(f, "tokenizer.ggml.bos_token_id", 1, &bos) || !meta_int_or(f, "tokenizer.ggml.eos_token_id", 2, &eos) ||
        !meta_int_or(f, "tokenizer.ggml.unknown_token_id", 0, &unk) ||
        !meta_int_or(f, "tokenizer.ggml.add_bos_token", 1, &ab) || !meta_int_or(f, "tokenizer.ggml.add_space_prefix", 1, &ap)) {
      dk_spm_free(t);
      return dk_set_error(DK_ERR_FORMAT, "%s: a tokenizer id or flag is not an integer: %s", dk_file_name(f), dk_last_error());
    }
    /* an id the file names but the vocabulary lacks is a broken file, not a
     * token to drop without a word (the default, absent key, may be missing) */
    if (dk_file_meta_find(f, "tokenizer.ggml.bos_token_id", NULL) && (bos < 0 || bos >= t->n)) {
      int n = t->n;
      dk_spm_free(t);
      return dk_set_error(DK_ERR_FORMAT, "%s: tokenizer.ggml.bos_token_id is %lld, outside the vocabulary of %d tokens",
                      dk_file_name(f), (long long)bos, n);
    }
    t->bos = bos >= 0 && bos < t->n ? (int32_t)bos : -1;
    t->eos = eos >= 0 && eos < t->n ? (int32_t)eos : -1;
    t->unk = unk >= 0 && unk < t->n ? (int32_t)unk : -1;
    t->add_bos = ab != 0 && t->bos >= 0;
    t->add_prefix = ap != 0;
    t->spm_space = 1;
  }
  t->strip_after_bos = 1;
  *out = t;
  return DK_OK;
}

int32_t dk_spm_count(const dk_spm *t) { return t->n; }
int32_t dk_spm_bos(const dk_spm *t) { return t->bos; }
int32_t dk_spm_eos(const dk_spm *t) { return t->eos; }
int dk_spm_wants_bos(const dk_spm *t) { return t->add_bos; }

/* ---- encoding -------------------------------------------------------------- */

typedef struct { int prev, next; const char *s; size_t n; int fixed; } tok_sym;
typedef struct { int left, right; float score; size_t n; } tok_pair;

/* a max-heap of pairs: higher score first, then the leftmost */
static int pair_before(const tok_pair *a, const tok_pair *b) {
  return a->score > b->score || (a->score == b->score && a->left < b->left);
}
static void heap_push(tok_pair *h, int *n, tok_pair p) {
  int i = (*n)++;
  while (i > 0 && pair_before(&p, &h[(i - 1) / 2])) { h[i] = h[(i - 1) / 2]; i = (i - 1) / 2; }
  h[i] = p;
}
static tok_pair heap_pop(tok_pair *h, int *n) {
  tok_pair top = h[0], last = h[--(*n)];
  int i = 0;
  for (;;) {
    int c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && pair_before(&h[c + 1], &h[c])) c++;
    if (!pair_before(&h[c], &last)) break;
    h[i] = h[c];
    i = c;
  }
  h[i] = last;
  return top;
}

static void try_pair(const dk_spm *t, const tok_sym *sym, int l, int r, tok_pair *heap, int *nh) {
  int32_t id;
  tok_pair p;
  if (l < 0 || r < 0 || sym[l].fixed || sym[r].fixed) return;
  /* the two symbols are adjacent in the text, so their concatenation is contiguous */
  id = tok_find(t, sym[l].s, sym[l].n + sym[r].n);
  if (id < 0) return;
  p.left = l; p.right = r; p.score = t->score[id]; p.n = sym[l].n + sym[r].n;
  heap_push(heap, nh, p);
}

/* bytes of the UTF-8 character starting with byte c (1 for a stray continuation byte) */
static size_t utf8_len(unsigned char c) {
  static const size_t lens[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return lens[c >> 4];
}

dk_status dk_spm_encode(const dk_spm *t, const char *text, size_t len, int add_bos, int32_t **ids, int *n) {
  char *buf;
  size_t blen = 0, i, cap;
  tok_sym *sym;
  tok_pair *heap;
  int nsym = 0, nh = 0, k, out_n = 0;
  int32_t *out;
  *ids = NULL;
  *n = 0;
  if (len > ((size_t)1 << 28)) return dk_set_error(DK_ERR_INVALID, "the text (%zu bytes) is too long to tokenize", len);
  /* every byte may become "▁" (3 bytes); one more for the prefix */
  cap = 3 * len + 4;
  buf = (char *)malloc(cap);
  sym = (tok_sym *)malloc(sizeof *sym * (len + 2));
  heap = (tok_pair *)malloc(sizeof *heap * (3 * len + 6));   /* pushes: one per pair, two per merge */
  out = (int32_t *)malloc(sizeof *out * (4 * len + 4));   /* bytes of a piece may each become a token */
  if (!buf || !sym || !heap || !out) {
    free(buf); free(sym); free(heap); free(out);
    return dk_set_error(DK_ERR_OUT_OF_MEMORY, "no memory to tokenize %zu bytes", len);
  }
  if (add_bos && t->bos >= 0) out[out_n++] = t->bos;
  /* the text becomes symbols (characters, and the special tokens it spells,
   * matched on the raw text: Gemma's space runs are stored with ' ') while
   * its spaces become "▁" */
  if (len > 0 && t->add_prefix) {
    if (t->spm_space) { memcpy(buf, "\xe2\x96\x81", 3); blen = 3; }
    else buf[blen++] = ' ';
    sym[nsym].s = buf; sym[nsym].n = blen; sym[nsym].fixed = 0;
    nsym++;
  }
  for (i = 0; i < len;) {
    size_t cl = utf8_len((unsigned char)text[i]), L, at = blen;
    int fixed = 0;
    if (cl > len - i) cl = len - i;
    /* the longest user-defined or control token that starts here */
    for (L = (size_t)t->sp_max < len - i ? (size_t)t->sp_max : len - i; L > 0 && !fixed; L--) {
      int32_t id;
      if (!t->sp_len[L]) continue;
      id = tok_find(t, text + i, L);
      if (id >= 0 && (t->type[id] == TOK_USER || t->type[id] == TOK_CONTROL)) { cl = L; fixed = 1; }
    }
    if (!fixed && text[i] == ' ' && t->spm_space) { memcpy(buf + blen, "\xe2\x96\x81", 3); blen += 3; }
    else { memcpy(buf + blen, text + i, cl); blen += cl; }
    sym[nsym].s = buf + at;
    sym[nsym].n = blen - at;
    sym[nsym].fixed = fixed;
    nsym++;
    i += cl;
  }
  for (k = 0; k < nsym; k++) {
    sym[k].prev = k - 1;
    sym[k].next = k + 1 < nsym ? k + 1 : -1;
  }
  for (k = 0; k + 1 < nsym; k++) try_pair(t, sym, k, k + 1, heap, &nh);
  while (nh > 0) {
    tok_pair p = heap_pop(heap, &nh);
    tok_sym *l = &sym[p.left], *r = &sym[p.right];
    /* a pair whose symbols changed since it was queued is stale */
    if (l->n == 0 || r->n == 0 || l->n + r->n != p.n || l->next != p.right) continue;
    l->n += r->n;
    r->n = 0;
    l->next = r->next;
    if (r->next >= 0) sym[r->next].prev = p.left;
    try_pair(t, sym, l->prev, p.left, heap, &nh);
    try_pair(t, sym, p.left, l->next, heap, &nh);
  }
  for (k = nsym > 0 ? 0 : -1; k >= 0; k = sym[k].next) {
    int32_t id = tok_find(t, sym[k].s, sym[k].n);
    if (id >= 0) { out[out_n++] = id; continue; }
    for (i = 0; i < sym[k].n; i++) {
      int32_t b = t->byte_id[(unsigned char)sym[k].s[i]];
      out[out_n++] = b >= 0 ? b : t->unk;
    }
  }
  free(buf); free(sym); free(heap);
  *ids = out;
  *n = out_n;
  return DK_OK;
}

/* ---- decoding ---------------------------------------------------------------- */

size_t dk_spm_piece(const dk_spm *t, int32_t prev, int32_t id, char *buf, size_t cap) {
  const char *s;
  size_t n, o = 0, i;
  if (!cap) return 0;
  buf[0] = 0;
  if (id < 0 || id >= t->n) return 0;
  if (t->type[id] == TOK_CONTROL || t->type[id] == TOK_UNUSED || id == t->bos || id == t->eos) return 0;
  s = t->text + t->off[id];
  n = t->len[id];
  if (t->type[id] == TOK_UNKNOWN) { s = " \xe2\x81\x87 "; n = 5; }
  /* <0xXX>: the byte itself */
  if (n == 6 && s[0] == '<' && s[1] == '0' && s[2] == 'x' && s[5] == '>') {
    unsigned v;
    char hex[3];
    hex[0] = s[3]; hex[1] = s[4]; hex[2] = 0;
    if (sscanf(hex, "%2x", &v) == 1 && cap > 1) {
      buf[0] = (char)v;
      buf[1] = 0;
      return 1;
    }
  }
  for (i = 0; i < n && o + 1 < cap;) {
    if (t->spm_space && n - i >= 3 && !memcmp(s + i, "\xe2\x96\x81", 3)) { buf[o++] = ' '; i += 3; }
    else buf[o++] = s[i++];
  }
  buf[o] = 0;
  if (t->strip_after_bos && prev == t->bos && o > 0 && buf[0] == ' ') {
    memmove(buf, buf + 1, o);
    o--;
  }
  return o;
}

#endif /* DEVKIT_MODELS_IMPLEMENTATION */
