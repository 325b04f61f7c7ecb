/* tests/test_wordpiece.c — the WordPiece tokenizer (models/wordpiece.h)
 * against Hugging Face's `tokenizers`: tests/data/tokenizer/bert-vocab.txt is
 * all-MiniLM-L6-v2's vocab.txt (bert-base-uncased's), wordpiece_expected.txt
 * the ids tokenizers gives for a corpus with accents, CJK, punctuation,
 * digits, whitespace runs, long words and emoji, lower-cased, cased and
 * truncated (tools/ref_wordpiece.py wrote it). Exact ids, from each way of
 * loading: vocab.txt, a Hugging Face directory (tokenizer.json; vocab.txt
 * with tokenizer_config.json) and a GGUF vocabulary as llama.cpp writes it.
 * (The implementation is compiled in tests/test_bert.c.) */
#include "test.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"   /* the writer has more than this file uses */
#include "../tools/gguf_writer.h"
#include "../tools/bert_gen.h"
#pragma GCC diagnostic pop
#include "../models/wordpiece.h"

#include <unistd.h>

static FILE *wp_open_data(const char *name, char *path, size_t cap) {
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

static int wp_hex(int c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }

/* every line of the expected file whose mode is `mode`: the same ids;
 * returns the number of lines checked */
static int wp_check(dkt *t, const dk_wordpiece *w, const char *mode, const char *via) {
  char path[1200], line[65536], *text = (char *)malloc(32768);
  FILE *f = wp_open_data("wordpiece_expected.txt", path, sizeof path);
  int lines = 0, bad = 0;
  if (!f || !text) { dkt_fail_at(t, __FILE__, __LINE__, "cannot open tests/data/tokenizer/wordpiece_expected.txt"); free(text); if (f) fclose(f); return 0; }
  while (fgets(line, sizeof line, f)) {
    char *hex = strchr(line, '\t'), *idstr, *p;
    int32_t want[4096], *got = NULL;
    int nw = 0, ng = 0, i, max_len = 0;
    size_t tl = 0;
    if (!hex || !(idstr = strchr(hex + 1, '\t'))) continue;
    *hex++ = 0;
    *idstr++ = 0;
    if (!strcmp(mode, "lower") && !strcmp(line, "trunc16")) max_len = 16;
    else if (strcmp(line, mode)) continue;
    for (p = hex; p[0] && p[1] && tl < 32767; p += 2) text[tl++] = (char)(wp_hex(p[0]) * 16 + wp_hex(p[1]));
    for (p = idstr; *p && *p != '\n' && nw < 4096;) {
      want[nw++] = (int32_t)strtol(p, &p, 10);
      while (*p == ' ') p++;
    }
    lines++;
    if (dk_wordpiece_encode(w, text, tl, max_len, &got, &ng) != DK_OK) {
      dkt_fail_at(t, __FILE__, __LINE__, "%s: %s", via, dk_last_error());
      break;
    }
    for (i = 0; i < ng && i < nw && got[i] == want[i]; i++) {}
    if (ng != nw || i < nw) {
      bad++;
      dkt_fail_at(t, __FILE__, __LINE__, "%s %s%s '%.*s': %d ids, tokenizers %d; first difference at %d: %d (%s), want %d (%s)",
                  via, line, max_len ? "(max 16)" : "", (int)(tl > 60 ? 60 : tl), text, ng, nw, i, i < ng ? got[i] : -1,
                  i < ng ? dk_wordpiece_token(w, got[i]) : "", i < nw ? want[i] : -1, i < nw ? dk_wordpiece_token(w, want[i]) : "");
    }
    free(got);
  }
  fclose(f);
  free(text);
  DKT_CHECK(t, lines >= 20, "%s: only %d %s cases", via, lines, mode);
  dkt_note(t, "%s: %d %s texts, %d differ", via, lines, mode, bad);
  return lines;
}

DKT_TEST(wordpiece_matches_tokenizers, DKT_ONCE) {
  char path[1200];
  FILE *f = wp_open_data("bert-vocab.txt", path, sizeof path);
  dk_wordpiece *w = NULL;
  if (!f) { dkt_fail_at(t, __FILE__, __LINE__, "cannot open tests/data/tokenizer/bert-vocab.txt"); return; }
  fclose(f);
  DKT_OK(t, dk_wordpiece_load_vocab_txt(path, 1, -1, &w));
  DKT_CHECK(t, dk_wordpiece_vocab_size(w) == 30522 && dk_wordpiece_special(w, 'c') == 101 && dk_wordpiece_special(w, 's') == 102 &&
                   dk_wordpiece_special(w, 'u') == 100 && dk_wordpiece_special(w, 'p') == 0,
            "vocab %d, cls %d sep %d unk %d pad %d", dk_wordpiece_vocab_size(w), dk_wordpiece_special(w, 'c'),
            dk_wordpiece_special(w, 's'), dk_wordpiece_special(w, 'u'), dk_wordpiece_special(w, 'p'));
  wp_check(t, w, "lower", "vocab.txt");
  dk_wordpiece_set_case(w, 0, -1);
  wp_check(t, w, "cased", "vocab.txt");
  dk_wordpiece_free(w);
}

/* a vocabulary-only GGUF in llama.cpp's phantom-space form */
DKT_TEST(wordpiece_gguf_vocab, DKT_ONCE) {
  char path[1200], line[512];
  FILE *f = wp_open_data("bert-vocab.txt", path, sizeof path);
  char **tok = NULL;
  int n = 0, cap = 0, i;
  gw_buf b = {0};
  dk_file *file = NULL;
  dk_wordpiece *w = NULL;
  dk_status s;
  if (!f) { dkt_fail_at(t, __FILE__, __LINE__, "cannot open bert-vocab.txt"); return; }
  while (fgets(line, sizeof line, f)) {
    size_t l = strlen(line);
    if (l && line[l - 1] == '\n') line[--l] = 0;
    if (n == cap) { cap = cap ? cap * 2 : 1024; tok = (char **)realloc(tok, sizeof *tok * (size_t)cap); }
    tok[n++] = strdup(line);
  }
  fclose(f);
  gw_header(&b, 3, 0, 1 + BG_VOCAB_KVS + 3);
  gw_kv_str(&b, "general.architecture", "bert");
  bg_gguf_vocab(&b, (const char *const *)tok, n);
  gw_kv_u32(&b, "tokenizer.ggml.bos_token_id", 101);
  gw_kv_u32(&b, "tokenizer.ggml.seperator_token_id", 102);
  gw_kv_u32(&b, "tokenizer.ggml.unknown_token_id", 100);
  s = dk_file_open_memory(b.p, b.n, "bert-vocab.gguf", DK_FILE_GGUF, &file);
  if (s == DK_OK) s = dk_wordpiece_load_gguf(file, &w);
  if (s != DK_OK) dkt_fail_at(t, __FILE__, __LINE__, "%s", dk_last_error());
  else {
    DKT_CHECK(t, !strcmp(dk_wordpiece_token(w, 2023), "this") && !strcmp(dk_wordpiece_token(w, 2015), "##s") &&
                     !strcmp(dk_wordpiece_token(w, 101), "[CLS]") && !strcmp(dk_wordpiece_token(w, 1), "[unused0]"),
              "phantom-space tokens read back wrong: %s %s %s %s", dk_wordpiece_token(w, 2023), dk_wordpiece_token(w, 2015),
              dk_wordpiece_token(w, 101), dk_wordpiece_token(w, 1));
    DKT_CHECK(t, dk_wordpiece_lowercases(w), "a GGUF vocabulary lower-cases (as llama.cpp)");
    wp_check(t, w, "lower", "gguf");
    dk_wordpiece_free(w);
  }
  dk_file_close(file);
  /* another tokenizer model is refused by name */
  {
    gw_buf c = {0};
    dk_file *g = NULL;
    gw_header(&c, 3, 0, 2);
    gw_kv_str(&c, "tokenizer.ggml.model", "gpt2");
    gw_arr_head(&c, "tokenizer.ggml.tokens", GW_STRING, 1);
    gw_str(&c, "a");
    DKT_OK(t, dk_file_open_memory(c.p, c.n, "gpt2.gguf", DK_FILE_GGUF, &g));
    w = NULL;
    DKT_REFUSED(t, dk_wordpiece_load_gguf(g, &w), DK_ERR_UNSUPPORTED);
    DKT_MSG_HAS(t, "gpt2");
    dk_file_close(g);
    free(c.p);
  }
  for (i = 0; i < n; i++) free(tok[i]);
  free(tok);
  free(b.p);
}

/* a Hugging Face directory: tokenizer.json first, else vocab.txt with tokenizer_config.json */
DKT_TEST(wordpiece_hf_directory, DKT_ONCE) {
  char path[1200], dir[256], file[512], line[512];
  FILE *f = wp_open_data("bert-vocab.txt", path, sizeof path), *o;
  dk_wordpiece *w = NULL;
  int id = 0;
  if (!f) { dkt_fail_at(t, __FILE__, __LINE__, "cannot open bert-vocab.txt"); return; }
  snprintf(dir, sizeof dir, "/tmp/dkt_wordpiece_%d", (int)getpid());
  mkdir(dir, 0755);
  /* tokenizer.json as BERT models ship it (the parts WordPiece reads), with
   * every token JSON-escaped */
  snprintf(file, sizeof file, "%s/tokenizer.json", dir);
  o = fopen(file, "wb");
  fprintf(o, "{\"version\": \"1.0\", \"added_tokens\": [], \"normalizer\": {\"type\": \"BertNormalizer\", \"clean_text\": true, "
             "\"handle_chinese_chars\": true, \"strip_accents\": null, \"lowercase\": true},\n\"pre_tokenizer\": {\"type\": "
             "\"BertPreTokenizer\"}, \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", \"continuing_subword_prefix\": "
             "\"##\", \"max_input_chars_per_word\": 100, \"vocab\": {");
  while (fgets(line, sizeof line, f)) {
    char *p;
    size_t l = strlen(line);
    if (l && line[l - 1] == '\n') line[--l] = 0;
    fprintf(o, "%s\"", id ? ", " : "");
    for (p = line; *p; p++) {
      if (*p == '"' || *p == '\\') fprintf(o, "\\%c", *p);
      else if ((unsigned char)*p < 0x20) fprintf(o, "\\u%04x", *p);
      else if (*p == 'a' && id % 7 == 0) fprintf(o, "\\u0061");   /* escapes are read too */
      else fputc(*p, o);
    }
    fprintf(o, "\": %d", id++);
  }
  fprintf(o, "}}}\n");
  fclose(o);
  rewind(f);
  DKT_OK(t, dk_wordpiece_load_dir(dir, &w));
  wp_check(t, w, "lower", "tokenizer.json");
  dk_wordpiece_free(w);
  remove(file);
  /* vocab.txt + tokenizer_config.json saying the model is cased */
  snprintf(file, sizeof file, "%s/vocab.txt", dir);
  o = fopen(file, "wb");
  while (fgets(line, sizeof line, f)) fputs(line, o);
  fclose(o);
  fclose(f);
  snprintf(file, sizeof file, "%s/tokenizer_config.json", dir);
  o = fopen(file, "wb");
  fprintf(o, "{\"do_lower_case\": false, \"tokenizer_class\": \"BertTokenizer\"}\n");
  fclose(o);
  w = NULL;
  DKT_OK(t, dk_wordpiece_load_dir(dir, &w));
  wp_check(t, w, "cased", "vocab.txt+tokenizer_config.json");
  dk_wordpiece_free(w);
  /* a tokenizer.json with a normalizer this reader does not run: vocab.txt
   * and tokenizer_config.json beside it are used instead */
  {
    char tj[600];
    snprintf(tj, sizeof tj, "%s/tokenizer.json", dir);
    o = fopen(tj, "wb");
    fprintf(o, "{\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": []}, \"model\": {\"type\": \"WordPiece\", "
               "\"vocab\": {\"[CLS]\": 0, \"[SEP]\": 1, \"[UNK]\": 2}}}\n");
    fclose(o);
    w = NULL;
    DKT_OK(t, dk_wordpiece_load_dir(dir, &w));
    DKT_CHECK(t, dk_wordpiece_vocab_size(w) == 30522, "the fallback read %d tokens", dk_wordpiece_vocab_size(w));
    wp_check(t, w, "cased", "tokenizer.json (Sequence) -> vocab.txt");
    dk_wordpiece_free(w);
    remove(tj);
  }
  /* broken JSON: an error with the offset, not a crash */
  o = fopen(file, "wb");
  fprintf(o, "{\"do_lower_case\": fals}\n");
  fclose(o);
  w = NULL;
  DKT_REFUSED(t, dk_wordpiece_load_dir(dir, &w), DK_ERR_FORMAT);
  DKT_MSG_HAS(t, "tokenizer_config.json: JSON");
  remove(file);
  snprintf(file, sizeof file, "%s/vocab.txt", dir);
  remove(file);
  DKT_REFUSED(t, dk_wordpiece_load_dir(dir, &w), DK_ERR_IO);
  rmdir(dir);
}

DKT_TEST(wordpiece_errors, DKT_ONCE) {
  char path[1200];
  FILE *f = wp_open_data("bert-vocab.txt", path, sizeof path);
  dk_wordpiece *w = NULL;
  int32_t *ids = NULL;
  int n = 0;
  if (!f) { dkt_fail_at(t, __FILE__, __LINE__, "cannot open bert-vocab.txt"); return; }
  fclose(f);
  DKT_OK(t, dk_wordpiece_load_vocab_txt(path, 1, -1, &w));
  DKT_REFUSED(t, dk_wordpiece_encode(w, "a", 1, 1, &ids, &n), DK_ERR_INVALID);
  /* max_len 2 keeps [CLS] [SEP] only */
  DKT_OK(t, dk_wordpiece_encode(w, "hello world", 11, 2, &ids, &n));
  DKT_CHECK(t, n == 2 && ids[0] == 101 && ids[1] == 102, "max_len 2 gave %d ids", n);
  free(ids);
  /* invalid UTF-8 is dropped as U+FFFD is, never read past the end */
  DKT_OK(t, dk_wordpiece_encode(w, "a\xff\xc3", 3, 0, &ids, &n));
  DKT_CHECK(t, n == 3 && ids[1] == 1037, "broken UTF-8: %d ids", n);
  free(ids);
  dk_wordpiece_free(w);
  /* a vocabulary without [CLS] */
  {
    char p2[256];
    FILE *o;
    snprintf(p2, sizeof p2, "/tmp/dkt_wp_vocab_%d.txt", (int)getpid());
    o = fopen(p2, "wb");
    fprintf(o, "[PAD]\n[UNK]\n[SEP]\na\n");
    fclose(o);
    w = NULL;
    DKT_REFUSED(t, dk_wordpiece_load_vocab_txt(p2, 1, -1, &w), DK_ERR_FORMAT);
    DKT_MSG_HAS(t, "[CLS]");
    remove(p2);
  }
}
