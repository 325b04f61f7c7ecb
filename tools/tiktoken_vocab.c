/* tools/tiktoken_vocab.c — a tiktoken vocabulary (the "base64-token rank"
 * lines that Llama 3's tokenizer.model and Qwen's qwen.tiktoken are) as a
 * vocabulary-only GGUF file that models/bpe.h reads: tokenizer.ggml.model
 * "gpt2", the tokens in GPT-2's byte-to-character form, and merges derived
 * from the ranks.
 *
 *   tiktoken_vocab IN.tiktoken SPECIALS.txt PRE OUT.gguf
 *
 * SPECIALS.txt: "id text" per line (the family's special tokens, written by
 * tools/ref_tiktoken.py from the package's own tokenizer code); PRE: the
 * tokenizer.ggml.pre value (llama-bpe, qwen2).
 *
 * Why a tool and not a committed file: the vocabularies are 2-3 MB as
 * tiktoken files and 6-8 MB as GGUF; the test tier fetches the packages that
 * carry them (tools/test_models.sh) and builds the GGUF here.
 *
 * Merges: tiktoken merges the adjacent pair whose concatenation has the
 * lowest rank, whatever the pair. So every split of token r into two tokens
 * is a merge, ranked by r (and, among r's own, by the parts' ranks): the
 * list transformers' TikTokenConverter writes. Only the split tiktoken itself
 * would reach is not enough: some tokens have none (Llama 3's 100421). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"   /* the writer has more than this tool uses */
#include "gguf_writer.h"
#pragma GCC diagnostic pop

typedef struct { uint8_t *p; int n; } tv_tok;
static tv_tok *toks;          /* by rank */
static int ntok;
static int32_t *slots;        /* open addressing: rank + 1, 0 = empty */
static size_t nslots;

static uint64_t tv_hash(const uint8_t *p, int n) {
  uint64_t h = 1469598103934665603ull;
  int i;
  for (i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}
static int tv_rank(const uint8_t *p, int n) {
  size_t i = (size_t)tv_hash(p, n) & (nslots - 1);
  for (; slots[i]; i = (i + 1) & (nslots - 1)) {
    const tv_tok *t = &toks[slots[i] - 1];
    if (t->n == n && !memcmp(t->p, p, (size_t)n)) return slots[i] - 1;
  }
  return -1;
}

static int tv_b64(int c) {
  return c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52
         : c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* GPT-2's map: printable Latin-1 bytes stand for themselves, the others for
 * U+0100 upward in byte order; appended as UTF-8 */
static int tv_map(const uint8_t *p, int n, char *out) {
  static int code[256];
  int i, o = 0;
  if (!code['!']) {
    int b, extra = 0;
    for (b = 0; b < 256; b++)
      code[b] = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae) ? b : 256 + extra++;
  }
  for (i = 0; i < n; i++) {
    int c = code[p[i]];
    if (c < 0x80) out[o++] = (char)c;
    else { out[o++] = (char)(0xc0 | (c >> 6)); out[o++] = (char)(0x80 | (c & 63)); }
  }
  out[o] = 0;
  return o;
}

/* the merges that make token r: every split into two tokens, ordered by
 * their ranks (left, then right); out[] gets the left parts' lengths */
static int tv_splits(int r, int *out) {
  const tv_tok *t = &toks[r];
  int i, j, n = 0, rl[1024], rr[1024];
  for (i = 1; i < t->n && i < 1024; i++) {
    const int a = tv_rank(t->p, i), b = a >= 0 ? tv_rank(t->p + i, t->n - i) : -1;
    if (b < 0) continue;
    for (j = n; j > 0 && (rl[j - 1] > a || (rl[j - 1] == a && rr[j - 1] > b)); j--) {
      rl[j] = rl[j - 1];
      rr[j] = rr[j - 1];
      out[j] = out[j - 1];
    }
    rl[j] = a;
    rr[j] = b;
    out[j] = i;
    n++;
  }
  return n;
}

int main(int argc, char **argv) {
  FILE *f;
  static char line[4096];
  char *mapped;
  int *sp_id = NULL, nsp = 0, cap = 0, i, nmerge = 0, vocab;
  char **sp_text = NULL;
  gw_buf g = {0}, mg = {0};
  if (argc != 5) { fprintf(stderr, "usage: tiktoken_vocab IN.tiktoken SPECIALS.txt PRE OUT.gguf\n"); return 2; }
  if (!(f = fopen(argv[1], "r"))) { fprintf(stderr, "tiktoken_vocab: cannot open %s\n", argv[1]); return 1; }
  while (fgets(line, sizeof line, f)) {
    char *sp = strchr(line, ' ');
    int bits = 0, acc = 0, n = 0, rank;
    char *c;
    uint8_t buf[3072];   /* a line's 4095 base64 characters at most */
    if (!sp) continue;
    rank = atoi(sp + 1);
    for (c = line; c < sp; c++) {
      int v = tv_b64((unsigned char)*c);
      if (v < 0) continue;   /* '=' padding */
      acc = (acc << 6) | v; bits += 6;
      if (bits >= 8) { bits -= 8; buf[n++] = (uint8_t)(acc >> bits); acc &= (1 << bits) - 1; }
    }
    if (rank != ntok) { fprintf(stderr, "tiktoken_vocab: rank %d where %d was expected\n", rank, ntok); return 1; }
    if (ntok % 65536 == 0) toks = (tv_tok *)realloc(toks, (size_t)(ntok + 65536) * sizeof *toks);
    if (!toks || !(toks[ntok].p = (uint8_t *)malloc((size_t)n + 1))) { fprintf(stderr, "tiktoken_vocab: out of memory\n"); return 1; }
    memcpy(toks[ntok].p, buf, (size_t)n);
    toks[ntok++].n = n;
  }
  fclose(f);
  for (nslots = 1; nslots < (size_t)ntok * 2; nslots *= 2) {}
  slots = (int32_t *)calloc(nslots, sizeof *slots);
  if (!slots) { fprintf(stderr, "tiktoken_vocab: out of memory\n"); return 1; }
  for (i = 0; i < ntok; i++) {
    size_t s = (size_t)tv_hash(toks[i].p, toks[i].n) & (nslots - 1);
    while (slots[s]) s = (s + 1) & (nslots - 1);
    slots[s] = i + 1;
  }
  if (!(f = fopen(argv[2], "r"))) { fprintf(stderr, "tiktoken_vocab: cannot open %s\n", argv[2]); return 1; }
  while (fgets(line, sizeof line, f)) {
    char *sp = strchr(line, ' ');
    if (line[0] == '#' || !sp) continue;
    if (nsp == cap) {
      cap = cap ? 2 * cap : 64;
      sp_id = (int *)realloc(sp_id, (size_t)cap * sizeof *sp_id);
      sp_text = (char **)realloc(sp_text, (size_t)cap * sizeof *sp_text);
    }
    sp[strcspn(sp, "\r\n")] = 0;
    if (!sp_id || !sp_text || !(sp_text[nsp] = (char *)malloc(strlen(sp + 1) + 1))) {
      fprintf(stderr, "tiktoken_vocab: out of memory\n");
      return 1;
    }
    sp_id[nsp] = atoi(line);
    strcpy(sp_text[nsp++], sp + 1);
  }
  fclose(f);
  vocab = ntok;
  for (i = 0; i < nsp; i++) if (sp_id[i] + 1 > vocab) vocab = sp_id[i] + 1;
  mapped = (char *)malloc(8192);
  if (!mapped) { fprintf(stderr, "tiktoken_vocab: out of memory\n"); return 1; }
  for (i = 0; i < ntok; i++) {   /* the merges, in rank order, into their own buffer: the count goes first */
    int cut[1024], k, n = toks[i].n >= 2 ? tv_splits(i, cut) : 0;
    for (k = 0; k < n; k++) {
      int o = tv_map(toks[i].p, cut[k], mapped);
      mapped[o++] = ' ';
      tv_map(toks[i].p + cut[k], toks[i].n - cut[k], mapped + o);
      gw_str(&mg, mapped);
    }
    nmerge += n;
  }
  gw_header(&g, 3, 0, 7);
  gw_kv_str(&g, "general.architecture", "llama");
  gw_kv_str(&g, "tokenizer.ggml.model", "gpt2");
  gw_kv_str(&g, "tokenizer.ggml.pre", argv[3]);
  gw_arr_head(&g, "tokenizer.ggml.tokens", GW_STRING, (uint64_t)vocab);
  for (i = 0; i < vocab; i++) {
    int k;
    if (i < ntok) { tv_map(toks[i].p, toks[i].n, mapped); gw_str(&g, mapped); continue; }
    for (k = 0; k < nsp && sp_id[k] != i; k++) {}
    if (k < nsp) gw_str(&g, sp_text[k]);
    else { snprintf(mapped, 64, "[PAD%d]", i); gw_str(&g, mapped); }   /* ids no token holds */
  }
  gw_arr_head(&g, "tokenizer.ggml.token_type", GW_I32, (uint64_t)vocab);
  for (i = 0; i < vocab; i++) gw_u32(&g, i < ntok ? 1u : 3u);
  gw_arr_head(&g, "tokenizer.ggml.merges", GW_STRING, (uint64_t)nmerge);
  gw_bytes(&g, mg.p, mg.n);
  gw_kv_bool(&g, "tokenizer.ggml.add_bos_token", 0);
  if (g.failed || mg.failed) { fprintf(stderr, "tiktoken_vocab: out of memory\n"); return 1; }
  if (!(f = fopen(argv[4], "wb")) || fwrite(g.p, 1, g.n, f) != g.n || fclose(f) != 0) {
    fprintf(stderr, "tiktoken_vocab: cannot write %s\n", argv[4]);
    return 1;
  }
  printf("tiktoken_vocab: %s: %d tokens (%d special), %d merges\n", argv[4], vocab, nsp, nmerge);
  return 0;
}
