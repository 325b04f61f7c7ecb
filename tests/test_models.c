/* tests/test_models.c — the model-file readers, the tokenizer and the llama
 * runner, against files built here and against what llama2.c's run.c and
 * llama.cpp produce from the reference models (../shared/models, or
 * DEVKIT_MODELS; see REFERENCE.md there). Generation tests run on every
 * device present. */
#define _GNU_SOURCE
#include "test.h"
#include "../tools/gguf_writer.h"
#include "../models/spm.h"
#include "../models/llama.h"

#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ==== where the reference models are ===================================== */

static int file_exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The first folder that holds `probe`: weights/ (the model shipped in the
 * repository), then DEVKIT_MODELS, then ../shared/models; relative folders
 * are tried from the working directory (build.sh runs in the repo root) and
 * from the test binary's place (build/tests). */
static const char *find_models_dir(const char *probe_name, char *dir, size_t cap) {
  const char *e = getenv("DEVKIT_MODELS");
  const char *cands[3];
  char probe[1400], exe[1000];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  int i, k = 0;
  cands[k++] = "weights";
  if (e && *e) cands[k++] = e;
  cands[k++] = "../shared/models";
  if (n > 0) {
    exe[n] = 0;
    if (strrchr(exe, '/')) *strrchr(exe, '/') = 0;
  } else {
    exe[0] = 0;
  }
  for (i = 0; i < k; i++) {
    int from_exe;
    for (from_exe = 0; from_exe < 2; from_exe++) {
      if (from_exe && (cands[i][0] == '/' || !exe[0])) continue;
      if (from_exe) snprintf(dir, cap, "%.990s/../%s", exe, cands[i]);
      else snprintf(dir, cap, "%s", cands[i]);
      snprintf(probe, sizeof probe, "%s/%s", dir, probe_name);
      if (file_exists(probe)) return dir;
    }
  }
  return NULL;
}

static const char *models_dir(void) {
  static char dir[1024];
  return find_models_dir("stories260K.bin", dir, sizeof dir);
}

#define NEED_MODELS(t, dirvar)                                                                            \
  const char *dirvar = models_dir();                                                                      \
  if (!dirvar) {                                                                                          \
    dkt_skip((t), "skipped: stories260K not found in weights/, DEVKIT_MODELS or ../shared/models");            \
    return;                                                                                               \
  }

static char *path_in(const char *dir, const char *name) {
  static char buf[4][1200];
  static int k = 0;
  char *p = buf[k++ & 3];
  snprintf(p, 1200, "%s/%s", dir, name);
  return p;
}

static char *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  char *p;
  long len;
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  len = ftell(f);
  fseek(f, 0, SEEK_SET);
  p = (char *)malloc((size_t)len + 1);
  if (p && fread(p, 1, (size_t)len, f) != (size_t)len) { free(p); p = NULL; }
  fclose(f);
  if (p) p[len] = 0;
  if (n) *n = (size_t)len;
  return p;
}

/* ==== the reference outputs (reference_outputs.json) ======================== */
/* Only the few fields used here are read: a key is found inside the span of
 * its case, then its string or its array of integers is parsed. */

#define REF_MAX 300
typedef struct {
  char prompt[256];
  int run_ids[REF_MAX], n_run;       /* run.c: BOS + prompt + generated */
  int cpp_prompt[REF_MAX], n_cpp_prompt;
  int cpp_gen[REF_MAX], n_cpp_gen;   /* llama.cpp CPU: generated ids */
} ref_case;

typedef struct {
  ref_case c[5];
  ref_case f16[4];
  int n_f16;
} refs;

static const char *find_key(const char *p, const char *end, const char *key) {
  size_t kl = strlen(key);
  for (; p && p + kl + 2 < end; p++) {
    if (*p == '"' && !strncmp(p + 1, key, kl) && p[kl + 1] == '"') {
      const char *q = p + kl + 2;
      while (q < end && (*q == ' ' || *q == '\n')) q++;
      if (q < end && *q == ':') return q + 1;
    }
  }
  return NULL;
}

static int parse_ints(const char *p, const char *end, int *out, int max) {
  int n = 0;
  while (p < end && *p != '[') p++;
  if (p >= end) return -1;
  p++;
  while (p < end && *p != ']') {
    char *e;
    long v = strtol(p, &e, 10);
    if (e == p) { p++; continue; }
    if (n < max) out[n++] = (int)v;
    p = e;
  }
  return n;
}

static void parse_str(const char *p, const char *end, char *out, size_t cap) {
  size_t n = 0;
  while (p < end && *p != '"') p++;
  for (p++; p < end && *p != '"' && n + 1 < cap; p++) {
    if (*p == '\\' && p + 1 < end) {
      p++;
      out[n++] = *p == 'n' ? '\n' : *p;
    } else {
      out[n++] = *p;
    }
  }
  out[n] = 0;
}

/* spans of the objects that start at each "prompt" key between from and to */
static int case_spans(const char *from, const char *to, const char **starts, int max) {
  int n = 0;
  const char *p = from;
  while (n < max && (p = find_key(p, to, "prompt")) != NULL) { starts[n++] = p; p++; }
  return n;
}

static int load_refs(dkt *t, const char *dir, refs *r) {
  size_t len;
  char *js = read_all(path_in(dir, "reference_outputs.json"), &len);
  const char *end, *var, *f16, *q8, *st[8];
  int i, n;
  memset(r, 0, sizeof *r);
  if (!js) { dkt_fail_at(t, __FILE__, __LINE__, "cannot read reference_outputs.json in %s", dir); return 0; }
  end = js + len;
  var = find_key(js, end, "variants");
  n = case_spans(js, var ? var : end, st, 5);
  DKT_CHECK(t, n == 5, "reference_outputs.json: %d cases, expected 5", n);
  for (i = 0; i < n; i++) {
    const char *ce = i + 1 < n ? st[i + 1] : (var ? var : end), *k;
    ref_case *c = &r->c[i];
    parse_str(st[i], ce, c->prompt, sizeof c->prompt);
    if ((k = find_key(st[i], ce, "run_ids"))) c->n_run = parse_ints(k, ce, c->run_ids, REF_MAX);
    if ((k = find_key(st[i], ce, "llamacpp_cpu_prompt_ids"))) c->n_cpp_prompt = parse_ints(k, ce, c->cpp_prompt, REF_MAX);
    if ((k = find_key(st[i], ce, "llamacpp_cpu_gen_ids"))) c->n_cpp_gen = parse_ints(k, ce, c->cpp_gen, REF_MAX);
    if ((k = find_key(st[i], ce, "llamacpp_cpu_ids"))) {
      /* the empty prompt: ids are BOS then the generated ones */
      int all[REF_MAX], m = parse_ints(k, ce, all, REF_MAX), j;
      c->n_cpp_prompt = 1;
      c->cpp_prompt[0] = all[0];
      for (j = 1; j < m; j++) c->cpp_gen[j - 1] = all[j];
      c->n_cpp_gen = m - 1;
    }
  }
  f16 = var ? find_key(var, end, "F16") : NULL;
  q8 = var ? find_key(var, end, "Q8_0") : NULL;
  if (f16) {
    r->n_f16 = case_spans(f16, q8 ? q8 : end, st, 4);
    for (i = 0; i < r->n_f16; i++) {
      const char *ce = i + 1 < r->n_f16 ? st[i + 1] : (q8 ? q8 : end), *k;
      parse_str(st[i], ce, r->f16[i].prompt, sizeof r->f16[i].prompt);
      if ((k = find_key(st[i], ce, "llamacpp_cpu_gen_ids")))
        r->f16[i].n_cpp_gen = parse_ints(k, ce, r->f16[i].cpp_gen, REF_MAX);
    }
  }
  free(js);
  DKT_CHECK(t, r->c[0].n_run == 65 && r->c[4].n_run == 257 && r->c[0].n_cpp_gen == 64 && r->c[4].n_cpp_gen == 255 &&
                   r->n_f16 == 4 && r->f16[0].n_cpp_gen == 64,
            "reference_outputs.json did not parse as expected (%d %d %d %d %d)", r->c[0].n_run, r->c[4].n_run,
            r->c[0].n_cpp_gen, r->c[4].n_cpp_gen, r->n_f16);
  return t->failures == 0;
}

/* ==== small files built here ================================================ */

/* a GGUF with every metadata type (nested arrays too) and tensors of the
 * loadable types plus one q8_K (a GGML type devkit does not load); data is
 * deterministic */
static unsigned char *build_gguf(uint32_t version, size_t *size) {
  gw_buf b;
  static const int64_t s_f32[2] = {3, 5}, s_f16[1] = {7}, s_q8[2] = {2, 64}, s_q4[1] = {32}, s_bf[3] = {2, 1, 3},
                       s_i32[1] = {4}, s_qk[1] = {256};
  uint64_t off = 0, offs[7], i;
  uint32_t types[7] = {GW_T_F32, GW_T_F16, GW_T_Q8_0, GW_T_Q4_0, GW_T_BF16, GW_T_I32, 15};
  const int64_t *shapes[7] = {s_f32, s_f16, s_q8, s_q4, s_bf, s_i32, s_qk};
  int nds[7] = {2, 1, 2, 1, 3, 1, 1}, k;
  const char *names[7] = {"w.f32", "w.f16", "w.q8_0", "w.q4_0", "w.bf16", "w.i32", "w.q8_K"};
  uint64_t bytes[7];
  memset(&b, 0, sizeof b);
  gw_header(&b, version, 7, 17);
  gw_key(&b, "t.u8", GW_U8); gw_u8(&b, 200);
  gw_key(&b, "t.i8", GW_I8); gw_u8(&b, (uint8_t)(int8_t)-5);
  gw_key(&b, "t.u16", GW_U16); gw_u8(&b, 0x34); gw_u8(&b, 0x12);
  gw_key(&b, "t.i16", GW_I16); gw_u8(&b, 0xfe); gw_u8(&b, 0xff);
  gw_kv_u32(&b, "t.u32", 4000000000u);
  gw_key(&b, "t.i32", GW_I32); gw_u32(&b, (uint32_t)-123456);
  gw_kv_f32(&b, "t.f32", 1.5f);
  gw_kv_bool(&b, "t.bool", 1);
  gw_kv_str(&b, "t.string", "h\xc3\xa9llo");
  gw_key(&b, "t.u64", GW_U64); gw_u64(&b, 9000000000000000000ull);
  gw_key(&b, "t.i64", GW_I64); gw_u64(&b, (uint64_t)-9000000000000000000ll);
  gw_key(&b, "t.f64", GW_F64);
  { double d = -2.25; uint64_t u; memcpy(&u, &d, 8); gw_u64(&b, u); }
  gw_arr_head(&b, "t.arr_f32", GW_F32, 3); gw_f32(&b, 1); gw_f32(&b, 2); gw_f32(&b, 3);
  gw_arr_head(&b, "t.arr_str", GW_STRING, 3); gw_str(&b, "a"); gw_str(&b, ""); gw_str(&b, "ccc");
  /* [[1, 2], [], [[...]]]: arrays of arrays, one of them nested again */
  gw_arr_head(&b, "t.nested", GW_ARRAY, 3);
  gw_u32(&b, GW_I32); gw_u64(&b, 2); gw_u32(&b, 1); gw_u32(&b, 2);
  gw_u32(&b, GW_STRING); gw_u64(&b, 0);
  gw_u32(&b, GW_ARRAY); gw_u64(&b, 1); gw_u32(&b, GW_STRING); gw_u64(&b, 1); gw_str(&b, "deep");
  gw_arr_head(&b, "t.arr_bool", GW_BOOL, 2); gw_u8(&b, 0); gw_u8(&b, 1);
  gw_kv_u32(&b, "general.alignment", 64);
  for (k = 0; k < 7; k++) {
    uint64_t n = 1;
    int d;
    for (d = 0; d < nds[k]; d++) n *= (uint64_t)shapes[k][d];
    bytes[k] = types[k] == 15 ? n / 256 * 292 : gw_type_bytes(types[k], n);
    offs[k] = off;
    gw_tensor_info(&b, names[k], nds[k], shapes[k], types[k], off);
    off += (bytes[k] + 63) / 64 * 64;
  }
  gw_pad(&b, 64);
  for (k = 0; k < 7; k++) {
    for (i = 0; i < bytes[k]; i++) gw_u8(&b, (uint8_t)(i * 7 + (uint64_t)k * 31 + 1));
    if (k < 6) gw_pad(&b, 64);
  }
  (void)offs;
  *size = b.n;
  return b.p;
}

/* a safetensors file from a JSON header and n data bytes */
static unsigned char *build_st(const char *json, size_t ndata, size_t *size) {
  size_t hl = strlen(json), i;
  unsigned char *p = (unsigned char *)malloc(8 + hl + ndata + 1);
  for (i = 0; i < 8; i++) p[i] = (unsigned char)((uint64_t)hl >> (8 * i));
  memcpy(p + 8, json, hl);
  for (i = 0; i < ndata; i++) p[8 + hl + i] = (unsigned char)(i * 13 + 5);
  *size = 8 + hl + ndata;
  return p;
}

/* opening must fail with DK_ERR_FORMAT, never crash, and the message must
 * name the file, a byte offset and what is wrong */
static void expect_format(dkt *t, const void *data, size_t n, dk_file_format fmt, const char *what, const char *must_have) {
  dk_file *f = NULL;
  dk_status s = dk_file_open_memory(data, n, "bad.file", fmt, &f);
  DKT_CHECK(t, s == DK_ERR_FORMAT, "%s: status %s, expected DK_ERR_FORMAT (%s)", what, dk_status_name(s), dk_last_error());
  if (s == DK_ERR_FORMAT) {
    DKT_CHECK(t, strstr(dk_last_error(), "bad.file") && strstr(dk_last_error(), "at byte"),
              "%s: the message lacks the file or the offset: %s", what, dk_last_error());
    if (must_have)
      DKT_CHECK(t, strstr(dk_last_error(), must_have) != NULL, "%s: the message lacks \"%s\": %s", what, must_have,
                dk_last_error());
  }
  DKT_CHECK(t, f == NULL, "%s: a refused file still came back", what);
  dk_file_close(f);
}

/* what a fuzzer does with a file that opened: read every value and tensor */
static void walk_file(dk_file *f) {
  int64_t i;
  for (i = 0; i < dk_file_meta_count(f); i++) {
    const char *key;
    dk_meta m, e, e2;
    int64_t iv;
    double fv;
    const char *s;
    size_t n;
    uint64_t j, j2;
    dk_file_meta_at(f, i, &key, &m);
    dk_meta_int(&m, &iv);
    dk_meta_float(&m, &fv);
    dk_meta_string(&m, &s, &n);
    for (j = 0; m.type == DK_META_ARRAY && j < m.count && j < 64; j++) {
      dk_meta_at(&m, j, &e);
      dk_meta_int(&e, &iv);
      dk_meta_string(&e, &s, &n);
      for (j2 = 0; e.type == DK_META_ARRAY && j2 < e.count && j2 < 8; j2++) dk_meta_at(&e, j2, &e2);
    }
  }
  for (i = 0; i < dk_file_tensor_count(f); i++) {
    dk_file_tensor ti;
    const unsigned char *p;
    dk_file_tensor_at(f, i, &ti);
    p = (const unsigned char *)dk_file_tensor_data(f, i);
    if (ti.nbytes) { volatile unsigned char x = p[0]; x = p[ti.nbytes - 1]; (void)x; }
  }
}

/* ==== GGUF ==================================================================== */

/* A GGUF holding one tensor of each block format beyond q8_0/q4_0, as a
 * Q4_K_M, IQ4_XS, IQ3_M or IQ2_M file mixes them: each loads onto the device with its bytes intact,
 * and a row looked up there is the host's dequantization, bit for bit. */
DKT_TEST(models_gguf_quant_mix, 0) {
#define QM_N 15
  static const uint32_t gt[QM_N] = {GW_T_Q4_1,    GW_T_Q5_0,   GW_T_Q5_1,   GW_T_Q2_K,   GW_T_Q3_K,    GW_T_Q4_K,
                                    GW_T_Q5_K,    GW_T_Q6_K,   GW_T_IQ4_NL, GW_T_IQ4_XS, GW_T_IQ3_XXS, GW_T_IQ3_S,
                                    GW_T_IQ2_XXS, GW_T_IQ2_XS, GW_T_IQ2_S};
  static const dk_dtype dt[QM_N] = {DK_Q4_1,    DK_Q5_0,   DK_Q5_1,   DK_Q2_K,   DK_Q3_K,    DK_Q4_K,
                                    DK_Q5_K,    DK_Q6_K,   DK_IQ4_NL, DK_IQ4_XS, DK_IQ3_XXS, DK_IQ3_S,
                                    DK_IQ2_XXS, DK_IQ2_XS, DK_IQ2_S};
  const int64_t shape[2] = {3, 512}, n = 3 * 512;
  unsigned char *data[QM_N];
  uint64_t off = 0, offs[QM_N], nb[QM_N];
  float v[3 * 512], want[512], got[512];
  gw_buf b;
  dk_file *f = NULL;
  int k;
  int64_t i;
  memset(&b, 0, sizeof b);
  gw_header(&b, 3, QM_N, 1);
  gw_kv_u32(&b, "general.alignment", 32);
  for (k = 0; k < QM_N; k++) {
    char name[32];
    for (i = 0; i < n; i++) v[i] = (float)dkt_uniform(t, -1, 1);
    nb[k] = gw_type_bytes(gt[k], (uint64_t)n);
    data[k] = (unsigned char *)malloc(nb[k]);
    DKT_CHECK(t, dk_quantize(dt[k], v, n, data[k]) == nb[k], "%s: %llu bytes", dk_dtype_name(dt[k]), (unsigned long long)nb[k]);
    snprintf(name, sizeof name, "w.%s", dk_dtype_name(dt[k]));
    offs[k] = off;
    gw_tensor_info(&b, name, 2, shape, gt[k], off);
    off += (nb[k] + 31) / 32 * 32;
  }
  gw_pad(&b, 32);
  for (k = 0; k < QM_N; k++) {
    gw_bytes(&b, data[k], nb[k]);
    gw_pad(&b, 32);
  }
  (void)offs;
  if (dk_file_open_memory(b.p, b.n, "mix.gguf", DK_FILE_AUTO, &f) != DK_OK) {
    dkt_fail_at(t, __FILE__, __LINE__, "%s", dk_last_error());
  } else {
    for (k = 0; k < QM_N; k++) {
      char name[32];
      dk_file_tensor ti;
      dk_tensor *w = NULL, *id = NULL, *o = NULL;
      unsigned char *back = (unsigned char *)malloc(nb[k]);
      int32_t one = 1;
      int64_t is[1] = {1}, os[2] = {1, 512};
      snprintf(name, sizeof name, "w.%s", dk_dtype_name(dt[k]));
      DKT_OK(t, dk_file_tensor_at(f, dk_file_tensor_find(f, name), &ti));
      DKT_CHECK(t, ti.supported && ti.dtype == dt[k] && ti.nbytes == nb[k] && ti.shape[0] == 3 && ti.shape[1] == 512,
                "%s listed as %s, %llu bytes", name, ti.type_name, (unsigned long long)ti.nbytes);
      DKT_OK(t, dk_file_load_tensor(f, name, t->dev, &w));
      DKT_OK(t, dk_tensor_download(w, back, nb[k]));
      DKT_CHECK(t, memcmp(back, data[k], nb[k]) == 0, "%s: bytes changed on the way to %s", name, dk_device_name(t->dev));
      if (!dk_op_supported(t->dev.backend, "dk_embedding", dt[k], 1)) {   /* CUDA's iq types unless DEVKIT_CUDA_IQ=1 */
        dkt_note(t, "%s: no dk_embedding on %s", name, dk_device_name(t->dev));
        dk_tensor_free(w);
        free(back);
        continue;
      }
      dk_dequantize(dt[k], data[k] + nb[k] / 3, 512, want);
      DKT_OK(t, dk_tensor_new(t->dev, DK_I32, 1, is, "ids", &id));
      DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, os, "row", &o));
      DKT_OK(t, dk_tensor_upload(id, &one, 4));
      DKT_OK(t, dk_embedding(o, w, id));
      DKT_OK(t, dk_tensor_download(o, got, sizeof got));
      DKT_CHECK(t, memcmp(got, want, sizeof got) == 0, "%s: row 1 on %s differs from dk_dequantize", name,
                dk_device_name(t->dev));
      dk_tensor_free(w); dk_tensor_free(id); dk_tensor_free(o);
      free(back);
    }
    dk_file_close(f);
  }
  for (k = 0; k < QM_N; k++) free(data[k]);
  free(b.p);
#undef QM_N
}

DKT_TEST(models_gguf_every_type, DKT_ONCE) {
  uint32_t ver;
  for (ver = 2; ver <= 3; ver++) {
    size_t n;
    unsigned char *buf = build_gguf(ver, &n);
    dk_file *f;
    dk_meta m, e, e2;
    int64_t iv;
    double fv;
    const char *s;
    size_t sl;
    dk_file_tensor ti;
    int64_t k;
    DKT_OK(t, dk_file_open_memory(buf, n, "every.gguf", DK_FILE_AUTO, &f));
    DKT_CHECK(t, dk_file_format_of(f) == DK_FILE_GGUF && dk_file_version(f) == (int)ver, "format/version");
    DKT_CHECK(t, dk_file_meta_count(f) == 17 && dk_file_tensor_count(f) == 7, "counts %lld %lld",
              (long long)dk_file_meta_count(f), (long long)dk_file_tensor_count(f));
#define INT_IS(key, want) do { DKT_OK(t, dk_file_meta_int(f, key, &iv)); DKT_CHECK(t, iv == (want), "%s = %lld", key, (long long)iv); } while (0)
    INT_IS("t.u8", 200); INT_IS("t.i8", -5); INT_IS("t.u16", 0x1234); INT_IS("t.i16", -2);
    INT_IS("t.u32", 4000000000ll); INT_IS("t.i32", -123456); INT_IS("t.bool", 1);
    INT_IS("t.u64", 9000000000000000000ll); INT_IS("t.i64", -9000000000000000000ll);
#undef INT_IS
    DKT_OK(t, dk_file_meta_float(f, "t.f32", &fv)); DKT_CHECK(t, fv == 1.5, "t.f32 = %g", fv);
    DKT_OK(t, dk_file_meta_float(f, "t.f64", &fv)); DKT_CHECK(t, fv == -2.25, "t.f64 = %g", fv);
    DKT_OK(t, dk_file_meta_string(f, "t.string", &s, &sl));
    DKT_CHECK(t, sl == 6 && !memcmp(s, "h\xc3\xa9llo", 6), "t.string");
    DKT_REFUSED(t, dk_file_meta_int(f, "t.string", &iv), DK_ERR_FORMAT);
    DKT_MSG_HAS(t, "t.string");
    DKT_REFUSED(t, dk_file_meta_int(f, "no.such.key", &iv), DK_ERR_FORMAT);
    DKT_MSG_HAS(t, "no.such.key");
    DKT_CHECK(t, !dk_file_meta_find(f, "no.such.key", &m), "a missing key was found");
    DKT_CHECK(t, dk_file_meta_find(f, "t.arr_f32", &m) && m.type == DK_META_ARRAY && m.elem_type == DK_META_F32 && m.count == 3,
              "t.arr_f32");
    DKT_OK(t, dk_meta_at(&m, 2, &e)); dk_meta_float(&e, &fv); DKT_CHECK(t, fv == 3.0, "t.arr_f32[2] = %g", fv);
    DKT_REFUSED(t, dk_meta_at(&m, 3, &e), DK_ERR_INVALID);
    DKT_CHECK(t, dk_file_meta_find(f, "t.arr_str", &m) && m.count == 3, "t.arr_str");
    /* out of order, then in order: the walk restarts and resumes */
    DKT_OK(t, dk_meta_at(&m, 2, &e)); DKT_OK(t, dk_meta_string(&e, &s, &sl)); DKT_CHECK(t, sl == 3 && !memcmp(s, "ccc", 3), "[2]");
    DKT_OK(t, dk_meta_at(&m, 1, &e)); DKT_OK(t, dk_meta_string(&e, &s, &sl)); DKT_CHECK(t, sl == 0, "[1]");
    DKT_OK(t, dk_meta_at(&m, 0, &e)); DKT_OK(t, dk_meta_string(&e, &s, &sl)); DKT_CHECK(t, sl == 1 && s[0] == 'a', "[0]");
    DKT_CHECK(t, dk_file_meta_find(f, "t.nested", &m) && m.elem_type == DK_META_ARRAY && m.count == 3, "t.nested");
    DKT_OK(t, dk_meta_at(&m, 0, &e)); DKT_CHECK(t, e.elem_type == DK_META_I32 && e.count == 2, "nested[0]");
    DKT_OK(t, dk_meta_at(&e, 1, &e2)); dk_meta_int(&e2, &iv); DKT_CHECK(t, iv == 2, "nested[0][1] = %lld", (long long)iv);
    DKT_OK(t, dk_meta_at(&m, 1, &e)); DKT_CHECK(t, e.elem_type == DK_META_STRING && e.count == 0, "nested[1]");
    DKT_OK(t, dk_meta_at(&m, 2, &e)); DKT_OK(t, dk_meta_at(&e, 0, &e2));
    DKT_CHECK(t, e2.type == DK_META_ARRAY && e2.count == 1, "nested[2][0]");
    DKT_OK(t, dk_meta_at(&e2, 0, &e)); DKT_OK(t, dk_meta_string(&e, &s, &sl));
    DKT_CHECK(t, sl == 4 && !memcmp(s, "deep", 4), "nested[2][0][0]");
    /* tensors: devkit shapes, absolute offsets at the 64-byte alignment */
    k = dk_file_tensor_find(f, "w.q8_0");
    DKT_OK(t, dk_file_tensor_at(f, k, &ti));
    DKT_CHECK(t, ti.supported && ti.dtype == DK_Q8_0 && ti.ndim == 2 && ti.shape[0] == 2 && ti.shape[1] == 64 &&
                     ti.nbytes == 4 * 34 && ti.offset % 64 == 0,
              "w.q8_0: %s [%lld,%lld] %llu bytes at %llu", ti.type_name, (long long)ti.shape[0], (long long)ti.shape[1],
              (unsigned long long)ti.nbytes, (unsigned long long)ti.offset);
    DKT_CHECK(t, (const unsigned char *)dk_file_tensor_data(f, k) == buf + ti.offset, "tensor data pointer");
    DKT_CHECK(t, buf[ti.offset] == (uint8_t)(2 * 31 + 1), "tensor data bytes");
    k = dk_file_tensor_find(f, "w.bf16");
    DKT_OK(t, dk_file_tensor_at(f, k, &ti));
    DKT_CHECK(t, ti.ndim == 3 && ti.shape[0] == 2 && ti.shape[1] == 1 && ti.shape[2] == 3 && ti.dtype == DK_BF16, "w.bf16");
    k = dk_file_tensor_find(f, "w.q8_K");
    DKT_OK(t, dk_file_tensor_at(f, k, &ti));
    DKT_CHECK(t, !ti.supported && !strcmp(ti.type_name, "q8_K") && ti.nbytes == 292, "w.q8_K listed as unsupported");
    {
      dk_tensor *x = NULL;
      DKT_REFUSED(t, dk_file_load_tensor(f, "w.q8_K", t->dev, &x), DK_ERR_UNSUPPORTED);
      DKT_MSG_HAS(t, "q8_K");
      DKT_MSG_HAS(t, "w.q8_K");
      DKT_REFUSED(t, dk_file_load_tensor(f, "w.nope", t->dev, &x), DK_ERR_FORMAT);
      DKT_MSG_HAS(t, "w.nope");
      DKT_CHECK(t, x == NULL, "a refused load returned a tensor");
    }
    walk_file(f);
    dk_file_close(f);
    free(buf);
  }
}

/* patch a little-endian value into a copy */
static unsigned char *patched(const unsigned char *src, size_t n, size_t at, uint64_t v, int bytes) {
  unsigned char *p = (unsigned char *)malloc(n);
  int i;
  memcpy(p, src, n);
  for (i = 0; i < bytes && at + (size_t)i < n; i++) p[at + i] = (unsigned char)(v >> (8 * i));
  return p;
}

static size_t find_bytes(const unsigned char *h, size_t n, const char *needle) {
  size_t k = strlen(needle), i;
  for (i = 0; i + k <= n; i++)
    if (!memcmp(h + i, needle, k)) return i;
  return (size_t)-1;
}

DKT_TEST(models_gguf_malformed, DKT_ONCE) {
  size_t n, i, at;
  unsigned char *good = build_gguf(3, &n), *p;
  int fails_before;
  /* every truncation: the last tensor's data ends at the end of the file */
  fails_before = t->failures;
  for (i = 0; i < n && t->failures == fails_before; i++) {
    char what[64];
    snprintf(what, sizeof what, "truncated to %zu bytes", i);
    expect_format(t, good, i, DK_FILE_GGUF, what, NULL);
  }
  /* one bad field at a time */
  p = patched(good, n, 0, 'X', 1); expect_format(t, p, n, DK_FILE_GGUF, "magic", "magic"); free(p);
  p = patched(good, n, 4, 1, 4); expect_format(t, p, n, DK_FILE_GGUF, "version 1", "version 1"); free(p);
  p = patched(good, n, 4, 0x03000000, 4); expect_format(t, p, n, DK_FILE_GGUF, "big-endian", "big-endian"); free(p);
  p = patched(good, n, 8, 0xffffffffffffffffull, 8); expect_format(t, p, n, DK_FILE_GGUF, "tensor count", "tensor count"); free(p);
  p = patched(good, n, 16, 1ull << 40, 8); expect_format(t, p, n, DK_FILE_GGUF, "metadata count", "metadata count"); free(p);
  p = patched(good, n, 16, 18, 8); expect_format(t, p, n, DK_FILE_GGUF, "one metadata entry too many", NULL); free(p);
  p = patched(good, n, 24, 0, 8); expect_format(t, p, n, DK_FILE_GGUF, "empty key", "key length"); free(p);
  p = patched(good, n, 24, 0xfffffffffffffff0ull, 8); expect_format(t, p, n, DK_FILE_GGUF, "huge key", "key length"); free(p);
  at = find_bytes(good, n, "t.u8");
  p = patched(good, n, at + 4, 13, 4); expect_format(t, p, n, DK_FILE_GGUF, "value type 13", "value type 13"); free(p);
  p = patched(good, n, at + 1, 0, 1); expect_format(t, p, n, DK_FILE_GGUF, "NUL in a key", "NUL"); free(p);
  at = find_bytes(good, n, "t.bool");
  p = patched(good, n, at + 10, 2, 1); expect_format(t, p, n, DK_FILE_GGUF, "bool 2", "bool"); free(p);
  at = find_bytes(good, n, "t.string");
  p = patched(good, n, at + 12, 1ull << 62, 8); expect_format(t, p, n, DK_FILE_GGUF, "string length", "string"); free(p);
  at = find_bytes(good, n, "t.arr_f32");
  p = patched(good, n, at + 13 + 4, 1ull << 62, 8); expect_format(t, p, n, DK_FILE_GGUF, "array count", "t.arr_f32"); free(p);
  p = patched(good, n, at + 13 + 4, 0x4000000000000001ull, 8); expect_format(t, p, n, DK_FILE_GGUF, "array bytes overflow", "t.arr_f32"); free(p);
  p = patched(good, n, at + 13, 77, 4); expect_format(t, p, n, DK_FILE_GGUF, "array element type", "element type 77"); free(p);
  at = find_bytes(good, n, "t.arr_str");
  p = patched(good, n, at + 13 + 4, 1ull << 60, 8); expect_format(t, p, n, DK_FILE_GGUF, "string array count", "t.arr_str"); free(p);
  at = find_bytes(good, n, "t.nested");
  p = patched(good, n, at + 12 + 4, 1ull << 61, 8); expect_format(t, p, n, DK_FILE_GGUF, "nested count", "t.nested"); free(p);
  /* duplicate key: rename t.i8 to t.u8 */
  at = find_bytes(good, n, "t.i8");
  p = patched(good, n, at + 2, 'u', 1); expect_format(t, p, n, DK_FILE_GGUF, "duplicate key", "t.u8' appears twice"); free(p);
  /* alignment: not a power of two, zero, another type */
  at = find_bytes(good, n, "general.alignment");
  p = patched(good, n, at + 17 + 4, 48, 4); expect_format(t, p, n, DK_FILE_GGUF, "alignment 48", "power of two"); free(p);
  p = patched(good, n, at + 17 + 4, 0, 4); expect_format(t, p, n, DK_FILE_GGUF, "alignment 0", "power of two"); free(p);
  p = patched(good, n, at + 17, GW_I32, 4); expect_format(t, p, n, DK_FILE_GGUF, "alignment type", "u32"); free(p);
  /* tensor infos */
  at = find_bytes(good, n, "w.f16");
  p = patched(good, n, at + 5, 9, 4); expect_format(t, p, n, DK_FILE_GGUF, "9 dims", "dimensions"); free(p);
  p = patched(good, n, at + 5 + 4, 0x8000000000000000ull, 8); expect_format(t, p, n, DK_FILE_GGUF, "dim overflow", "overflow"); free(p);
  p = patched(good, n, at + 5 + 4 + 8, 99, 4); expect_format(t, p, n, DK_FILE_GGUF, "ggml type 99", "type 99"); free(p);
  p = patched(good, n, at + 5 + 4 + 8 + 4, 3, 8); expect_format(t, p, n, DK_FILE_GGUF, "misaligned offset", "alignment"); free(p);
  p = patched(good, n, at + 5 + 4 + 8 + 4, 0, 8); expect_format(t, p, n, DK_FILE_GGUF, "overlap", "overlaps"); free(p);
  p = patched(good, n, at + 5 + 4 + 8 + 4, 1ull << 40, 8); expect_format(t, p, n, DK_FILE_GGUF, "offset past the end", "outside the file"); free(p);
  p = patched(good, n, at + 5 + 4 + 8 + 4, 0xffffffffffffffc0ull, 8); expect_format(t, p, n, DK_FILE_GGUF, "offset wraps", "outside the file"); free(p);
  at = find_bytes(good, n, "w.q8_0");
  p = patched(good, n, at + 6 + 4, 33, 8); expect_format(t, p, n, DK_FILE_GGUF, "q8_0 ne0 33", "multiple of 32"); free(p);
  at = find_bytes(good, n, "w.i32");
  p = patched(good, n, at + 2, 'f', 3); memcpy(p + at + 2, "f16", 3);
  expect_format(t, p, n, DK_FILE_GGUF, "duplicate tensor", "w.f16' appears twice"); free(p);
  /* a deep nest of arrays */
  {
    gw_buf b;
    int d;
    memset(&b, 0, sizeof b);
    gw_header(&b, 3, 0, 1);
    gw_arr_head(&b, "deep", GW_ARRAY, 1);
    for (d = 0; d < 20; d++) { gw_u32(&b, GW_ARRAY); gw_u64(&b, 1); }
    expect_format(t, b.p, b.n, DK_FILE_GGUF, "deep nesting", "nested deeper");
    free(b.p);
  }
  /* a random sweep: every mutated file opens cleanly or is a format error */
  {
    uint64_t r = 12345;
    int it, opened = 0;
    for (it = 0; it < 3000; it++) {
      dk_file *f = NULL;
      dk_status s;
      int k, muts;
      p = (unsigned char *)malloc(n);
      memcpy(p, good, n);
      r = r * 6364136223846793005ull + 1442695040888963407ull;
      muts = 1 + (int)((r >> 60) & 3);
      for (k = 0; k < muts; k++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        p[(r >> 20) % n] = (unsigned char)(r >> 8);
      }
      s = dk_file_open_memory(p, n, "mut.gguf", DK_FILE_AUTO, &f);
      DKT_CHECK(t, s == DK_OK || s == DK_ERR_FORMAT, "mutation %d: %s (%s)", it, dk_status_name(s), dk_last_error());
      if (s == DK_OK) { opened++; walk_file(f); }
      dk_file_close(f);
      free(p);
    }
    dkt_note(t, "3000 random mutations: %d opened (and were walked), the rest were format errors", opened);
  }
  free(good);
}

DKT_TEST(models_gguf_reference_files, DKT_ONCE) {
  NEED_MODELS(t, dir);
  {
    dk_file *f;
    int64_t iv, k;
    double fv;
    dk_file_tensor ti;
    const char *s;
    size_t sl;
    DKT_OK(t, dk_file_open(path_in(dir, "stories260K.gguf"), &f));
    DKT_CHECK(t, dk_file_version(f) == 3 && dk_file_meta_count(f) == 19 && dk_file_tensor_count(f) == 48, "counts");
    DKT_OK(t, dk_file_meta_int(f, "llama.context_length", &iv)); DKT_CHECK(t, iv == 128, "context_length %lld", (long long)iv);
    DKT_OK(t, dk_file_meta_int(f, "llama.block_count", &iv)); DKT_CHECK(t, iv == 5, "block_count");
    DKT_OK(t, dk_file_meta_int(f, "tokenizer.ggml.padding_token_id", &iv)); DKT_CHECK(t, iv == 0xFFFFFFFFll, "padding id");
    DKT_OK(t, dk_file_meta_float(f, "llama.attention.layer_norm_rms_epsilon", &fv));
    DKT_CHECK(t, fabs(fv - 1e-5) < 1e-10, "eps %g", fv);
    DKT_OK(t, dk_file_meta_string(f, "general.architecture", &s, &sl)); DKT_CHECK(t, sl == 5 && !memcmp(s, "llama", 5), "arch");
    k = dk_file_tensor_find(f, "blk.0.ffn_down.weight");
    DKT_OK(t, dk_file_tensor_at(f, k, &ti));
    /* GGUF's ne = [172, 64] is devkit's [64, 172] */
    DKT_CHECK(t, ti.ndim == 2 && ti.shape[0] == 64 && ti.shape[1] == 172 && ti.dtype == DK_F32, "ffn_down shape");
    DKT_OK(t, dk_file_tensor_at(f, 0, &ti));
    DKT_CHECK(t, !strcmp(ti.name, "token_embd.weight") && ti.offset == 14176, "token_embd at %llu", (unsigned long long)ti.offset);
    dk_file_close(f);
    DKT_OK(t, dk_file_open(path_in(dir, "stories260K-Q8_0.gguf"), &f));
    DKT_OK(t, dk_file_tensor_at(f, dk_file_tensor_find(f, "blk.2.attn_q.weight"), &ti));
    DKT_CHECK(t, ti.dtype == DK_Q8_0 && ti.nbytes == 64 * 2 * 34, "q8_0 tensor");
    DKT_OK(t, dk_file_tensor_at(f, dk_file_tensor_find(f, "blk.2.ffn_down.weight"), &ti));
    DKT_CHECK(t, ti.dtype == DK_F16, "ffn_down stays f16");
    dk_file_close(f);
  }
}

/* opening real paths: what cannot be read is DK_ERR_IO, what is not a model
 * file DK_ERR_FORMAT, both naming the path */
DKT_TEST(models_file_open_errors, DKT_ONCE) {
  dk_file *f = NULL;
  char path[128];
  FILE *fp;
  DKT_REFUSED(t, dk_file_open("/nonexistent/dir/model.gguf", &f), DK_ERR_IO);
  DKT_MSG_HAS(t, "/nonexistent/dir/model.gguf");
  DKT_MSG_HAS(t, "No such file");
  DKT_REFUSED(t, dk_file_open("/tmp", &f), DK_ERR_IO);
  DKT_MSG_HAS(t, "not a regular file");
  snprintf(path, sizeof path, "/tmp/devkit_test_empty_%d.bin", (int)getpid());
  fp = fopen(path, "wb");
  if (fp) fclose(fp);
  DKT_REFUSED(t, dk_file_open(path, &f), DK_ERR_FORMAT);
  DKT_MSG_HAS(t, "empty");
  fp = fopen(path, "wb");
  if (fp) { fputs("just some text, long enough to look at: not a model file at all\n", fp); fclose(fp); }
  DKT_REFUSED(t, dk_file_open(path, &f), DK_ERR_FORMAT);
  DKT_MSG_HAS(t, "not a model file devkit knows");
  DKT_MSG_HAS(t, "expected a GGUF file");
  DKT_MSG_HAS(t, "first bytes are 6a 75 73 74 20 73 6f 6d (\"just som\")");
  DKT_REFUSED(t, dk_file_open_as(path, DK_FILE_GGUF, &f), DK_ERR_FORMAT);
  DKT_MSG_HAS(t, "magic");
  DKT_CHECK(t, f == NULL, "a refused open returned a file");
  unlink(path);
}

/* ==== safetensors ================================================================ */

DKT_TEST(models_safetensors, DKT_ONCE) {
  const char *ok_json =
      "{\"__metadata__\":{\"format\":\"pt\",\"note\":\"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\"\"},"
      "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
      " \"b\" : { \"shape\" : [4], \"dtype\" : \"BF16\", \"data_offsets\" : [24, 32] },"
      "\"c\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[32,36]},"
      "\"d\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[36,44]},"
      "\"e\":{\"dtype\":\"F16\",\"shape\":[0,5],\"data_offsets\":[44,44]}}   ";
  size_t n;
  unsigned char *buf = build_st(ok_json, 44, &n);
  dk_file *f;
  dk_file_tensor ti;
  const char *s;
  size_t sl;
  DKT_OK(t, dk_file_open_memory(buf, n, "ok.safetensors", DK_FILE_AUTO, &f));
  DKT_CHECK(t, dk_file_format_of(f) == DK_FILE_SAFETENSORS && dk_file_tensor_count(f) == 5 && dk_file_meta_count(f) == 2,
            "counts");
  DKT_OK(t, dk_file_meta_string(f, "note", &s, &sl));
  DKT_CHECK(t, sl == strlen("caf\xc3\xa9 \xf0\x9f\x98\x80 \"q\"") && !memcmp(s, "caf\xc3\xa9 \xf0\x9f\x98\x80 \"q\"", sl),
            "escapes decode to UTF-8: '%.*s'", (int)sl, s);
  DKT_OK(t, dk_file_tensor_at(f, dk_file_tensor_find(f, "b"), &ti));
  DKT_CHECK(t, ti.dtype == DK_BF16 && ti.ndim == 1 && ti.shape[0] == 4 && ti.offset == 8 + strlen(ok_json) + 24 &&
                   ti.nbytes == 8, "b");
  DKT_OK(t, dk_file_tensor_at(f, dk_file_tensor_find(f, "c"), &ti));
  DKT_CHECK(t, ti.ndim == 0 && ti.dtype == DK_I32 && ti.nbytes == 4, "c: a scalar");
  DKT_OK(t, dk_file_tensor_at(f, dk_file_tensor_find(f, "d"), &ti));
  DKT_CHECK(t, !ti.supported && !strcmp(ti.type_name, "F64"), "d: F64 is listed, not loadable");
  {
    dk_tensor *x;
    float got[6];
    DKT_OK(t, dk_file_load_tensor(f, "a", t->dev, &x));
    DKT_OK(t, dk_tensor_download(x, got, sizeof got));
    DKT_CHECK(t, !memcmp(got, buf + 8 + strlen(ok_json), 24), "a's bytes");
    DKT_CHECK(t, !strcmp(dk_tensor_site(x), "ok.safetensors:a"), "site '%s'", dk_tensor_site(x));
    dk_tensor_free(x);
  }
  walk_file(f);
  dk_file_close(f);
  free(buf);
  {
    static const struct { const char *json; size_t ndata; const char *what, *has; } bad[] = {
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "duplicate tensor", "appears twice"},
      {"{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "duplicate field", "appears twice"},
      {"{\"__metadata__\":{},\"__metadata__\":{},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "duplicate __metadata__", "twice"},
      {"{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, "duplicate metadata key", "appears twice"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "overlap", "overlaps"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "hole at the start", "belong to no tensor"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8, "bytes after the last tensor", "belong to no tensor"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 2, "out of the file", "inside"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", 8, "end before begin", "inside"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,4]}}", 4, "size disagrees with shape", "needs 12"},
      {"{\"a\":{\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "bad dtype", "bad dtype"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"extra\":1}}", 4, "unknown field", "unknown field"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 0, "missing data_offsets", "missing"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "negative dim", "non-negative"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[01],\"data_offsets\":[0,4]}}", 4, "leading zero", "leading zero"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", 4, "a fraction", "fraction"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,4]}}", 4, "a huge number", "too large"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,4]}}", 4, "shape overflow", "overflow"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, "too many dims", "dimensions"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}} x", 4, "trailing bytes", "after the header"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", 4, "unterminated object", "expected"},
      {"{\"\xff\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "invalid UTF-8", "UTF-8"},
      {"{\"\xc0\x80\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "overlong UTF-8", "UTF-8"},
      {"{\"\\ud800\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "lone surrogate", "surrogate"},
      {"{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "NUL in a name", "NUL"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},}", 4, "trailing comma", "string was expected"},
      {"{\"__metadata__\":{\"k\":5}}", 0, "a number in __metadata__", "must be strings"},
      {"{\"a\":[1]}", 0, "an entry that is not an object", "'{' expected"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 4, "three offsets", "']' expected"},
      {"[]", 0, "not an object", "'{' expected"},
    };
    size_t k;
    for (k = 0; k < sizeof bad / sizeof bad[0]; k++) {
      buf = build_st(bad[k].json, bad[k].ndata, &n);
      expect_format(t, buf, n, DK_FILE_SAFETENSORS, bad[k].what, bad[k].has);
      free(buf);
    }
    /* the header length itself */
    buf = build_st("{}", 0, &n);
    buf[0] = 200;
    expect_format(t, buf, n, DK_FILE_SAFETENSORS, "header length past the end", "runs past");
    expect_format(t, buf, 5, DK_FILE_SAFETENSORS, "5 bytes", "8 bytes");
    free(buf);
  }
}

/* ==== llama2.c ======================================================================= */

DKT_TEST(models_llama2c_reader, DKT_ONCE) {
  NEED_MODELS(t, dir);
  {
    dk_file *f;
    int64_t iv;
    dk_file_tensor ti;
    size_t n;
    unsigned char *raw = (unsigned char *)read_all(path_in(dir, "stories260K.bin"), &n), *p;
    DKT_CHECK(t, raw != NULL, "cannot read stories260K.bin");
    if (!raw) return;
    DKT_OK(t, dk_file_open(path_in(dir, "stories260K.bin"), &f));
    DKT_CHECK(t, dk_file_format_of(f) == DK_FILE_LLAMA2C && dk_file_tensor_count(f) == 2 + 9 * 5, "47 tensors (tied)");
    DKT_OK(t, dk_file_meta_int(f, "llama2c.n_kv_heads", &iv)); DKT_CHECK(t, iv == 4, "n_kv_heads");
    DKT_OK(t, dk_file_meta_int(f, "llama2c.vocab_size", &iv)); DKT_CHECK(t, iv == 512, "vocab_size");
    /* wk of layer 3: after the embedding, 5 rms_att, 5 wq, 3 wk */
    DKT_OK(t, dk_file_tensor_at(f, dk_file_tensor_find(f, "blk.3.attn_k.weight"), &ti));
    DKT_CHECK(t, ti.shape[0] == 32 && ti.shape[1] == 64 &&
                     ti.offset == 28 + 4ull * (512 * 64 + 5 * 64 + 5 * 64 * 64 + 3 * 32 * 64), "blk.3.attn_k at %llu",
              (unsigned long long)ti.offset);
    DKT_OK(t, dk_file_tensor_at(f, dk_file_tensor_find(f, "output_norm.weight"), &ti));
    DKT_CHECK(t, ti.offset + ti.nbytes + 2 * 512 * 4 * 4 == n, "the RoPE tables close the file");
    DKT_CHECK(t, dk_file_tensor_find(f, "output.weight") < 0, "tied: no output.weight");
    dk_file_close(f);
    expect_format(t, raw, n - 1, DK_FILE_LLAMA2C, "one byte short", "truncated");
    expect_format(t, raw, 20, DK_FILE_LLAMA2C, "a short header", "28 bytes");
    p = patched(raw, n, 8, 0, 4); expect_format(t, p, n, DK_FILE_LLAMA2C, "n_layers 0", "n_layers"); free(p);
    p = patched(raw, n, 16, 3, 4); expect_format(t, p, n, DK_FILE_LLAMA2C, "n_kv_heads 3", "n_kv_heads"); free(p);
    p = patched(raw, n, 20, (uint32_t)-512, 4); expect_format(t, p, n, DK_FILE_LLAMA2C, "untied but no wcls", "describes"); free(p);
    p = patched(raw, n, 4, 0x7fffffff, 4); expect_format(t, p, n, DK_FILE_LLAMA2C, "huge hidden_dim", "describes"); free(p);
    p = patched(raw, n, 0, 0x616b3432, 4); expect_format(t, p, n, DK_FILE_LLAMA2C, "ak42 magic", "ak42"); free(p);
    /* an untied checkpoint: the same file with vocab_size negated and wcls appended */
    p = (unsigned char *)malloc(n + 512 * 64 * 4);
    memcpy(p, raw, n);
    memcpy(p + n, raw + 28, 512 * 64 * 4);
    p[20] = 0; p[21] = 0xfe; p[22] = 0xff; p[23] = 0xff;   /* -512 */
    DKT_OK(t, dk_file_open_memory(p, n + 512 * 64 * 4, "untied.bin", DK_FILE_LLAMA2C, &f));
    DKT_OK(t, dk_file_tensor_at(f, dk_file_tensor_find(f, "output.weight"), &ti));
    DKT_CHECK(t, ti.offset == n && ti.shape[0] == 512, "wcls after the RoPE tables");
    dk_file_close(f);
    free(p);
    free(raw);
  }
  {
    dk_file *f;
    size_t n;
    unsigned char *raw = (unsigned char *)read_all(path_in(dir, "tok512.bin"), &n), *p;
    dk_meta m, e;
    const char *s;
    size_t sl;
    if (!raw) { dkt_fail_at(t, __FILE__, __LINE__, "cannot read tok512.bin"); return; }
    DKT_OK(t, dk_file_open_as(path_in(dir, "tok512.bin"), DK_FILE_LLAMA2C_TOKENIZER, &f));
    DKT_CHECK(t, dk_file_meta_find(f, "tokenizer.ggml.tokens", &m) && m.count == 512, "512 tokens");
    DKT_OK(t, dk_meta_at(&m, 403, &e)); DKT_OK(t, dk_meta_string(&e, &s, &sl));
    DKT_CHECK(t, sl == 5 && !memcmp(s, " Once", 5), "token 403 is ' Once'");
    dk_file_close(f);
    /* without a hint the file is recognized too */
    DKT_OK(t, dk_file_open(path_in(dir, "tok512.bin"), &f));
    DKT_CHECK(t, dk_file_format_of(f) == DK_FILE_LLAMA2C_TOKENIZER, "auto: tokenizer");
    dk_file_close(f);
    expect_format(t, raw, n - 1, DK_FILE_LLAMA2C_TOKENIZER, "truncated tokenizer", "truncated");
    p = patched(raw, n, 4 + 4, 0x7fffffff, 4); expect_format(t, p, n, DK_FILE_LLAMA2C_TOKENIZER, "huge length", "length"); free(p);
    p = patched(raw, n, 0, 0, 4); expect_format(t, p, n, DK_FILE_LLAMA2C_TOKENIZER, "max_token_length 0", "max_token_length"); free(p);
    free(raw);
  }
}

/* ==== loading onto a device ============================================================ */

DKT_TEST(models_load_tensor, 0) {
  NEED_MODELS(t, dir);
  {
    static const char *files[3] = {"stories260K.gguf", "stories260K-F16.gguf", "stories260K-Q8_0.gguf"};
    static const dk_dtype want[3] = {DK_F32, DK_F16, DK_Q8_0};
    int k;
    for (k = 0; k < 3; k++) {
      dk_file *f;
      dk_tensor *w;
      dk_file_tensor ti;
      unsigned char *got;
      int64_t i;
      DKT_OK(t, dk_file_open(path_in(dir, files[k]), &f));
      DKT_OK(t, dk_file_load_tensor(f, "blk.3.attn_q.weight", t->dev, &w));
      i = dk_file_tensor_find(f, "blk.3.attn_q.weight");
      dk_file_tensor_at(f, i, &ti);
      DKT_CHECK(t, dk_tensor_dtype(w) == want[k] && dk_tensor_dim(w, 0) == 64 && dk_tensor_dim(w, 1) == 64 &&
                       dk_device_equal(dk_tensor_device(w), t->dev), "%s: dtype, shape or device", files[k]);
      DKT_CHECK(t, !strcmp(dk_tensor_name(w), "blk.3.attn_q.weight"), "name '%s'", dk_tensor_name(w));
      {
        char site[128];
        snprintf(site, sizeof site, "%s:blk.3.attn_q.weight", files[k]);
        DKT_CHECK(t, !strcmp(dk_tensor_site(w), site), "site '%s'", dk_tensor_site(w));
      }
      /* the bytes as stored: quantized and f16 data are not converted */
      got = (unsigned char *)malloc(ti.nbytes);
      DKT_OK(t, dk_tensor_download(w, got, ti.nbytes));
      DKT_CHECK(t, !memcmp(got, dk_file_tensor_data(f, i), ti.nbytes), "%s: the device holds other bytes", files[k]);
      free(got);
      /* the site shows up where the weight is misused */
      if (t->has_dev2) {
        dk_tensor *x = NULL, *y = NULL;
        int64_t sx[2] = {1, 64};
        DKT_OK(t, dk_tensor_new(t->dev2, DK_F32, 2, sx, "x", &x));
        DKT_OK(t, dk_tensor_new(t->dev2, DK_F32, 2, sx, "y", &y));
        DKT_REFUSED(t, dk_linear(y, x, w, NULL), DK_ERR_DEVICE_MISMATCH);
        {
          char site[128];
          snprintf(site, sizeof site, "%s:blk.3.attn_q.weight", files[k]);
          DKT_MSG_HAS(t, site);
        }
        dk_tensor_free(x);
        dk_tensor_free(y);
      }
      dk_tensor_free(w);
      dk_file_close(f);
    }
  }
}

/* ==== tokenizer ============================================================================ */

static dk_spm *load_tok(dkt *t, const char *path, dk_file_format fmt) {
  dk_file *f;
  dk_spm *tk = NULL;
  if (dk_file_open_as(path, fmt, &f) != DK_OK) { dkt_fail_at(t, __FILE__, __LINE__, "%s", dk_last_error()); return NULL; }
  if (dk_spm_load(f, &tk) != DK_OK) dkt_fail_at(t, __FILE__, __LINE__, "%s", dk_last_error());
  dk_file_close(f);
  return tk;
}

DKT_TEST(models_tokenizer_llama_spm, DKT_ONCE) {
  /* the Llama 2 vocabulary is under Meta's license, so it is not shipped in
   * weights/; it comes from DEVKIT_MODELS or ../shared/models */
  static char vdir[1024];
  const char *dir = find_models_dir("llama.cpp-vocab/ggml-vocab-llama-spm.gguf", vdir, sizeof vdir);
  if (!dir) {
    dkt_skip(t, "skipped: needs llama.cpp-vocab/ (the Llama 2 vocabulary, not redistributable) in DEVKIT_MODELS or ../shared/models");
    return;
  }
  {
    size_t ni, no;
    char *inp = read_all(path_in(dir, "llama.cpp-vocab/ggml-vocab-llama-spm.gguf.inp"), &ni);
    char *outp = read_all(path_in(dir, "llama.cpp-vocab/ggml-vocab-llama-spm.gguf.out"), &no);
    dk_spm *tk = load_tok(t, path_in(dir, "llama.cpp-vocab/ggml-vocab-llama-spm.gguf"), DK_FILE_AUTO);
    const char *sep = "\n__ggml_vocab_test__\n", *p, *o;
    int cases = 0, bad = 0;
    if (!inp || !outp || !tk) { dkt_fail_at(t, __FILE__, __LINE__, "vocab test files missing"); return; }
    DKT_CHECK(t, dk_spm_count(tk) == 32000, "32000 tokens");
    for (p = inp, o = outp; *p && *o; cases++) {
      const char *e = strstr(p, sep), *oe = strchr(o, '\n');
      int32_t *ids, want[512];
      int n, nw = 0, i, same;
      if (!e || !oe) break;
      {
        char *q = (char *)o;
        while (q < oe) {
          char *end;
          long v = strtol(q, &end, 10);
          if (end == q) break;
          if (nw < 512) want[nw++] = (int32_t)v;
          q = end;
        }
      }
      DKT_OK(t, dk_spm_encode(tk, p, (size_t)(e - p), 0, &ids, &n));
      same = n == nw;
      for (i = 0; same && i < n; i++) same = ids[i] == want[i];
      if (!same && bad++ < 5) {
        char got[2048];
        int k = 0;
        for (i = 0; i < n && k < 2000; i++) k += snprintf(got + k, sizeof got - (size_t)k, " %d", ids[i]);
        dkt_fail_at(t, __FILE__, __LINE__, "case %d '%.*s': got%s; want %.*s", cases, (int)(e - p > 60 ? 60 : e - p), p, got,
                    (int)(oe - o), o);
      }
      free(ids);
      p = e + strlen(sep);
      o = oe + 1;
    }
    DKT_CHECK(t, cases == 46, "%d vocab test cases, expected 46", cases);
    DKT_CHECK(t, bad == 0, "%d of %d cases differ", bad, cases);
    dk_spm_free(tk);
    free(inp);
    free(outp);
  }
}

DKT_TEST(models_tokenizer_prompts, DKT_ONCE) {
  NEED_MODELS(t, dir);
  {
    refs r;
    dk_spm *tks[2];
    int k, c;
    if (!load_refs(t, dir, &r)) return;
    tks[0] = load_tok(t, path_in(dir, "tok512.bin"), DK_FILE_LLAMA2C_TOKENIZER);
    tks[1] = load_tok(t, path_in(dir, "stories260K.gguf"), DK_FILE_AUTO);
    if (!tks[0] || !tks[1]) return;
    for (k = 0; k < 2; k++)
      for (c = 0; c < 5; c++) {
        int32_t *ids;
        int n, i, np = c < 4 ? r.c[c].n_cpp_prompt : 1, same;
        char text[1024];
        size_t len = 0;
        DKT_OK(t, dk_spm_encode(tks[k], r.c[c].prompt, strlen(r.c[c].prompt), 1, &ids, &n));
        same = n == np;
        /* run.c's ids start with the same prompt ids */
        for (i = 0; same && i < n; i++) same = ids[i] == r.c[c].run_ids[i] && (c == 4 || ids[i] == r.c[c].cpp_prompt[i]);
        DKT_CHECK(t, same, "%s: prompt '%s' tokenized differently (%d ids, want %d)", k ? "gguf" : "tok512", r.c[c].prompt, n, np);
        /* and decodes back to the prompt */
        for (i = 0; i < n; i++) len += dk_spm_piece(tks[k], i ? ids[i - 1] : -1, ids[i], text + len, sizeof text - len);
        DKT_CHECK(t, !strcmp(text, r.c[c].prompt), "%s: '%s' decodes to '%s'", k ? "gguf" : "tok512", r.c[c].prompt, text);
        free(ids);
      }
    /* byte fallback: a character outside the 512-token vocabulary is
     * spelled with its UTF-8 bytes' tokens <0xE4> <0xB8> <0xAD> */
    {
      int32_t *ids;
      int n;
      char text[64];
      size_t len = 0;
      int i;
      DKT_OK(t, dk_spm_encode(tks[0], "\xe4\xb8\xad", 3, 0, &ids, &n));
      DKT_CHECK(t, n == 4 && ids[1] == 3 + 0xe4 && ids[2] == 3 + 0xb8 && ids[3] == 3 + 0xad, "byte fallback: %d ids", n);
      for (i = 0; i < n; i++) len += dk_spm_piece(tks[0], i ? ids[i - 1] : -1, ids[i], text + len, sizeof text - len);
      DKT_CHECK(t, !strcmp(text, " \xe4\xb8\xad"), "bytes decode back");
      free(ids);
    }
    dk_spm_free(tks[0]);
    dk_spm_free(tks[1]);
  }
}

/* ==== generation against run.c and llama.cpp ============================================== */

static dk_llm_model *load_model(dkt *t, const char *path, const char *devices, int n_ctx) {
  dk_llm_options o;
  dk_llm_model *m = NULL;
  memset(&o, 0, sizeof o);
  o.devices = devices;
  o.n_ctx = n_ctx;
  if (dk_llm_load(path, &o, &m) != DK_OK) dkt_fail_at(t, __FILE__, __LINE__, "loading %s: %s", path, dk_last_error());
  return m;
}

/* greedy: the prompt in one batch, then one token at a time */
static int generate(dkt *t, dk_llm_model *m, const int32_t *prompt, int np, int n, int32_t *out) {
  dk_tensor *lg;
  int i;
  dk_llm_reset(m);
  if (dk_llm_forward(m, prompt, np, 0, &lg) != DK_OK) { dkt_fail_at(t, __FILE__, __LINE__, "%s", dk_last_error()); return 0; }
  for (i = 0; i < n; i++) {
    if (dk_llm_sample(m, lg, 0, NULL, (uint64_t)i, &out[i]) != DK_OK) { dkt_fail_at(t, __FILE__, __LINE__, "%s", dk_last_error()); return 0; }
    if (i + 1 < n && dk_llm_forward(m, &out[i], 1, 0, &lg) != DK_OK) { dkt_fail_at(t, __FILE__, __LINE__, "%s", dk_last_error()); return 0; }
  }
  return 1;
}

static int first_diff(const int32_t *a, const int *b, int n) {
  int i;
  for (i = 0; i < n; i++)
    if (a[i] != b[i]) return i;
  return -1;
}

/* every case: the prompt ids from the tokenizer, then greedy generation;
 * which = 0 llama2.c (vs run.c), 1 GGUF f32 (vs llama.cpp), 2 GGUF f16 */
static void check_generation(dkt *t, int which) {
  NEED_MODELS(t, dir);
  {
    static const char *files[3] = {"stories260K.bin", "stories260K.gguf", "stories260K-F16.gguf"};
    refs r;
    dk_llm_model *m;
    dk_spm *tk;
    int c;
    if (!load_refs(t, dir, &r)) return;
    /* 512 positions: the empty prompt's 256 tokens pass the GGUF's declared 128
     * (REFERENCE.md: the converter hard-codes it; llama.cpp ran with more) */
    m = load_model(t, path_in(dir, files[which]), dk_device_name(t->dev), 512);
    tk = which == 0 ? load_tok(t, path_in(dir, "tok512.bin"), DK_FILE_LLAMA2C_TOKENIZER)
                    : load_tok(t, path_in(dir, files[which]), DK_FILE_AUTO);
    if (!m || !tk) { dk_llm_free(m); dk_spm_free(tk); return; }
    for (c = 0; c < 5; c++) {
      int32_t *ids, out[REF_MAX];
      int np, n, d;
      const int *want;
      const char *against;
      DKT_OK(t, dk_spm_encode(tk, r.c[c].prompt, strlen(r.c[c].prompt), 1, &ids, &np));
      if (which == 0) {
        n = r.c[c].n_run - np;
        want = r.c[c].run_ids + np;
        against = "run.c";
      } else if (which == 1 || c == 4) {
        /* f16's empty prompt has no llama.cpp run of its own; llama.cpp's f16
         * and f32 agree on all four others, so its f32 ids stand in */
        n = r.c[c].n_cpp_gen;
        want = r.c[c].cpp_gen;
        against = which == 1 ? "llama.cpp" : "llama.cpp (f32 ids)";
      } else {
        n = r.f16[c].n_cpp_gen;
        want = r.f16[c].cpp_gen;
        against = "llama.cpp f16";
      }
      if (generate(t, m, ids, np, n, out)) {
        d = first_diff(out, want, n);
        DKT_CHECK(t, d < 0, "%s on %s, prompt '%s': generated id %d is %d, %s has %d", files[which],
                  dk_device_name(t->dev), r.c[c].prompt, d, d >= 0 ? out[d] : 0, against, d >= 0 ? want[d] : 0);
        /* and llama.cpp and run.c agree with each other here, so both are matched */
        if (which == 1) {
          int k = r.c[c].n_run - np < n ? r.c[c].n_run - np : n;
          DKT_CHECK(t, first_diff(out, r.c[c].run_ids + np, k) < 0, "prompt '%s': differs from run.c", r.c[c].prompt);
        }
      }
      free(ids);
    }
    dk_llm_free(m);
    dk_spm_free(tk);
  }
}

DKT_TEST(models_generate_llama2c_vs_runc, 0) { check_generation(t, 0); }
DKT_TEST(models_generate_gguf_f32_vs_llamacpp, 0) { check_generation(t, 1); }
DKT_TEST(models_generate_gguf_f16_vs_llamacpp, 0) { check_generation(t, 2); }

/* The prompt processed in one batch must give the logits that feeding it one
 * token at a time gives: the KV cache, the causal offset and RoPE positions
 * all enter. */
DKT_TEST(models_batch_equals_stepwise, 0) {
  NEED_MODELS(t, dir);
  {
    static const int32_t ids[12] = {1, 291, 376, 400, 428, 286, 296, 418, 329, 429, 412, 425};
    dk_llm_model *m = load_model(t, path_in(dir, "stories260K.gguf"), dk_device_name(t->dev), 0);
    dk_tensor *lg;
    double *a = dkt_alloc(12 * 512), *b = dkt_alloc(512);
    int i;
    if (!m) return;
    DKT_OK(t, dk_llm_forward(m, ids, 12, 1, &lg));
    if (!dkt_read(t, lg, a)) return;
    dk_llm_reset(m);
    for (i = 0; i < 12; i++) {
      char what[64];
      DKT_OK(t, dk_llm_forward(m, &ids[i], 1, 0, &lg));
      if (!dkt_read(t, lg, b)) return;
      snprintf(what, sizeof what, "position %d: batch vs one at a time", i);
      /* f32 sums in another order: logits of magnitude ~10 agree to ~1e-5 */
      dkt_close(t, what, a + 512 * i, b, 512, 2e-4, 1e-4);
    }
    free(a);
    free(b);
    dk_llm_free(m);
  }
}

/* A prompt run in chunks (dk_llm_options.n_batch) gives the logits of one
 * batch: each chunk appends to the cache and the next attends to it. Chunks
 * of 5 (a remainder of 2), and of 1 (every chunk a decode-sized step that
 * yields no logits but the last); every row with all_logits, the last
 * alone without. */
DKT_TEST(models_batch_in_chunks, 0) {
  NEED_MODELS(t, dir);
  {
    static const int32_t ids[12] = {1, 291, 376, 400, 428, 286, 296, 418, 329, 429, 412, 425};
    static const int chunks[3] = {5, 1, 11};
    dk_llm_model *m = load_model(t, path_in(dir, "stories260K.gguf"), dk_device_name(t->dev), 0);
    dk_tensor *lg;
    double *a = dkt_alloc(12 * 512), *b = dkt_alloc(12 * 512);
    int k;
    if (!m) return;
    DKT_CHECK(t, m->n_batch == DK_LLM_BATCH, "default chunk %d", m->n_batch);
    DKT_OK(t, dk_llm_forward(m, ids, 12, 1, &lg));
    if (!dkt_read(t, lg, a)) return;
    for (k = 0; k < 3; k++) {
      char what[96];
      m->n_batch = chunks[k];
      dk_llm_reset(m);
      DKT_OK(t, dk_llm_forward(m, ids, 12, 1, &lg));
      DKT_CHECK(t, m->pos == 12 && dk_tensor_dim(lg, 0) == 12, "chunks of %d: pos %d, %lld rows", chunks[k], m->pos,
                (long long)dk_tensor_dim(lg, 0));
      if (!dkt_read(t, lg, b)) return;
      snprintf(what, sizeof what, "chunks of %d, every row, vs one batch", chunks[k]);
      dkt_close(t, what, a, b, 12 * 512, 2e-4, 1e-4);
      dk_llm_reset(m);
      DKT_OK(t, dk_llm_forward(m, ids, 12, 0, &lg));
      DKT_CHECK(t, m->pos == 12 && dk_tensor_dim(lg, 0) == 1, "chunks of %d, last row: pos %d", chunks[k], m->pos);
      if (!dkt_read(t, lg, b)) return;
      snprintf(what, sizeof what, "chunks of %d, the last row, vs one batch", chunks[k]);
      dkt_close(t, what, a + 11 * 512, b, 512, 2e-4, 1e-4);
    }
    free(a);
    free(b);
    dk_llm_free(m);
  }
}

/* Q8_0 against devkit's own f32, position by position on the run.c
 * sequences (teacher forcing). The bound: q8_0 rounds each weight to 1/254 of
 * its block's largest magnitude: an rms error of about 0.23% of the block max,
 * some 0.7% of a typical weight, which adds up randomly in each dot product
 * and passes through 5 layers and the residual stream. We require max
 * |dlogit| <= 4% of the f32 logits' range (max - min) at every position
 * (measured: 1.1% at worst, on the CPU), and the same top-1 token at >= 90%
 * of positions (measured 258/260; llama.cpp's own q8_0 runs leave the f32
 * story after 16 tokens on one prompt, so exact ids are not asked for). */
DKT_TEST(models_q8_0_teacher_forcing, 0) {
  NEED_MODELS(t, dir);
  {
    refs r;
    dk_llm_model *mf, *mq;
    int c, agree = 0, total = 0;
    double worst = 0;
    if (!load_refs(t, dir, &r)) return;
    mf = load_model(t, path_in(dir, "stories260K.gguf"), dk_device_name(t->dev), 0);
    mq = load_model(t, path_in(dir, "stories260K-Q8_0.gguf"), dk_device_name(t->dev), 0);
    if (!mf || !mq) { dk_llm_free(mf); dk_llm_free(mq); return; }
    for (c = 0; c < 4; c++) {
      int n = r.c[c].n_run, i, j;
      int32_t ids[REF_MAX];
      double *lf = dkt_alloc((int64_t)n * 512), *lq = dkt_alloc((int64_t)n * 512);
      dk_tensor *lg;
      for (i = 0; i < n; i++) ids[i] = r.c[c].run_ids[i];
      dk_llm_reset(mf);
      dk_llm_reset(mq);
      DKT_OK(t, dk_llm_forward(mf, ids, n, 1, &lg));
      if (!dkt_read(t, lg, lf)) return;
      DKT_OK(t, dk_llm_forward(mq, ids, n, 1, &lg));
      if (!dkt_read(t, lg, lq)) return;
      for (i = 0; i < n; i++) {
        double lo = 1e300, hi = -1e300, md = 0;
        int af = 0, aq = 0;
        for (j = 0; j < 512; j++) {
          double f = lf[i * 512 + j], q = lq[i * 512 + j];
          lo = f < lo ? f : lo;
          hi = f > hi ? f : hi;
          md = fabs(f - q) > md ? fabs(f - q) : md;
          if (f > lf[i * 512 + af]) af = j;
          if (q > lq[i * 512 + aq]) aq = j;
        }
        if (md / (hi - lo) > worst) worst = md / (hi - lo);
        DKT_CHECK(t, md <= 0.04 * (hi - lo), "prompt %d position %d: max |dlogit| %.4f is over 4%% of the range %.3f", c, i,
                  md, hi - lo);
        agree += af == aq;
        total++;
      }
      free(lf);
      free(lq);
    }
    DKT_CHECK(t, agree >= 0.9 * total, "q8_0 and f32 agree on the top token at %d of %d positions", agree, total);
    dkt_note(t, "q8_0 vs f32: worst max|dlogit|/range %.4f; top-1 agreement %d/%d", worst, agree, total);
    dk_llm_free(mf);
    dk_llm_free(mq);
  }
}

/* The layers split over two devices: the hidden state crosses once, each
 * layer's cache is on its device, and the tokens do not change. */
DKT_TEST(models_split_layers, 0) {
  NEED_MODELS(t, dir);
  if (!t->has_dev2) { dkt_skip(t, "skipped: needs a second logical device"); return; }
  {
    refs r;
    char spec[128];
    dk_llm_model *m;
    int c, l;
    if (!load_refs(t, dir, &r)) return;
    snprintf(spec, sizeof spec, "%s=0-1,%s=2-4", dk_device_name(t->dev), dk_device_name(t->dev2));
    /* the llama2.c file ties its classifier: the second device gets its own copy */
    m = load_model(t, path_in(dir, "stories260K.bin"), spec, 0);
    if (!m) return;
    DKT_CHECK(t, m->n_ws == 2 && m->output != m->tok_embd, "two devices, classifier copied");
    for (l = 0; l < 5; l++)
      DKT_CHECK(t, dk_device_equal(dk_tensor_device(m->layers[l].k_cache), l < 2 ? t->dev : t->dev2) &&
                       dk_device_equal(dk_tensor_device(m->layers[l].wq), l < 2 ? t->dev : t->dev2),
                "layer %d's weights or cache on the wrong device", l);
    DKT_CHECK(t, dk_device_equal(dk_tensor_device(m->output), t->dev2) && dk_device_equal(dk_tensor_device(m->tok_embd), t->dev),
              "embedding on the first device, classifier on the last");
    for (c = 0; c < 4; c++) {
      int32_t ids[REF_MAX], out[REF_MAX];
      int np = r.c[c].n_cpp_prompt, n = r.c[c].n_run - np, i;
      for (i = 0; i < np; i++) ids[i] = r.c[c].run_ids[i];
      if (generate(t, m, ids, np, n, out))
        DKT_CHECK(t, first_diff(out, r.c[c].run_ids + np, n) < 0, "split run differs from run.c on prompt %d", c);
    }
    dk_llm_free(m);
    /* an even split names the devices only */
    snprintf(spec, sizeof spec, "%s,%s", dk_device_name(t->dev), dk_device_name(t->dev2));
    m = load_model(t, path_in(dir, "stories260K.gguf"), spec, 0);
    if (m) {
      DKT_CHECK(t, dk_device_equal(m->layers[1].dev, t->dev) && dk_device_equal(m->layers[2].dev, t->dev2), "even split 2+3");
      dk_llm_free(m);
    }
  }
}

/* sampling: reproducible for one seed, different for another, inside top-k */
DKT_TEST(models_sampling, 0) {
  NEED_MODELS(t, dir);
  {
    dk_llm_model *m = load_model(t, path_in(dir, "stories260K.gguf"), dk_device_name(t->dev), 0);
    dk_llm_sampler sp;
    int32_t runs[3][40], prompt[1] = {1};
    int k, i, same01 = 1, same02 = 1;
    if (!m) return;
    for (k = 0; k < 3; k++) {
      dk_tensor *lg;
      sp.temperature = 1.0f; sp.top_k = 40; sp.top_p = 0.95f; sp.seed = k == 2 ? 99 : 7;
      dk_llm_reset(m);
      DKT_OK(t, dk_llm_forward(m, prompt, 1, 0, &lg));
      for (i = 0; i < 40; i++) {
        DKT_OK(t, dk_llm_sample(m, lg, 0, &sp, (uint64_t)i, &runs[k][i]));
        DKT_CHECK(t, runs[k][i] >= 0 && runs[k][i] < 512, "token %d out of range", runs[k][i]);
        if (i + 1 < 40) DKT_OK(t, dk_llm_forward(m, &runs[k][i], 1, 0, &lg));
      }
    }
    for (i = 0; i < 40; i++) { same01 &= runs[0][i] == runs[1][i]; same02 &= runs[0][i] == runs[2][i]; }
    DKT_CHECK(t, same01, "the same seed gave other tokens");
    DKT_CHECK(t, !same02, "another seed gave the same 40 tokens");
    dk_llm_free(m);
  }
}

/* ==== bad input ============================================================================== */

static unsigned char *tiny_arch_gguf(const char *arch, size_t *n) {
  gw_buf b;
  memset(&b, 0, sizeof b);
  gw_header(&b, 3, 0, 1);
  gw_kv_str(&b, "general.architecture", arch);
  *n = b.n;
  return b.p;
}

DKT_TEST(models_bad_input_api, DKT_ONCE) {
  dk_llm_model *m = NULL;
  dk_llm_options o;
  char path[256];
  size_t n;
  unsigned char *g;
  FILE *f;
  memset(&o, 0, sizeof o);
  o.devices = "cpu:0";
  DKT_CHECK(t, dk_llm_load("/nonexistent/model.gguf", &o, &m) == DK_ERR_IO && strstr(dk_last_error(), "/nonexistent/model.gguf"),
            "missing file: %s", dk_last_error());
  snprintf(path, sizeof path, "/tmp/devkit_test_gpt2_%d.gguf", (int)getpid());
  g = tiny_arch_gguf("gpt2", &n);
  f = fopen(path, "wb");
  if (f) { fwrite(g, 1, n, f); fclose(f); }
  free(g);
  DKT_CHECK(t, dk_llm_load(path, &o, &m) == DK_ERR_UNSUPPORTED && strstr(dk_last_error(), "architecture 'gpt2'") &&
                   strstr(dk_last_error(), "llama"), "gpt2: %s", dk_last_error());
  unlink(path);
  NEED_MODELS(t, dir);
  o.devices = "cpu:9";
  DKT_CHECK(t, dk_llm_load(path_in(dir, "stories260K.gguf"), &o, &m) == DK_ERR_NO_DEVICE && strstr(dk_last_error(), "cpu:9") &&
                   strstr(dk_last_error(), "cpu:0"), "no cpu:9: %s", dk_last_error());
  o.devices = "cpu:0=0-2";
  DKT_CHECK(t, dk_llm_load(path_in(dir, "stories260K.gguf"), &o, &m) == DK_ERR_INVALID && strstr(dk_last_error(), "layer 3"),
            "layers 3-4 unplaced: %s", dk_last_error());
  o.devices = "cpu:0=0-9";
  DKT_CHECK(t, dk_llm_load(path_in(dir, "stories260K.gguf"), &o, &m) == DK_ERR_INVALID && strstr(dk_last_error(), "0-4"),
            "range past the layers: %s", dk_last_error());
  o.devices = "gpu:0";
  DKT_CHECK(t, dk_llm_load(path_in(dir, "stories260K.gguf"), &o, &m) == DK_ERR_INVALID && strstr(dk_last_error(), "vulkan:N"),
            "bad device name: %s", dk_last_error());
  o.devices = "cpu:0";
  DKT_CHECK(t, dk_llm_load(path_in(dir, "tok512.bin"), &o, &m) != DK_OK, "a tokenizer is not a model");
  DKT_OK(t, dk_llm_load(path_in(dir, "stories260K.gguf"), &o, &m));
  {
    int32_t ids[130];
    dk_tensor *lg;
    int i;
    for (i = 0; i < 130; i++) ids[i] = 300;
    DKT_CHECK(t, dk_llm_forward(m, ids, 129, 0, &lg) == DK_ERR_INVALID && strstr(dk_last_error(), "128"),
              "a prompt over the context: %s", dk_last_error());
    ids[3] = 512;
    DKT_CHECK(t, dk_llm_forward(m, ids, 5, 0, &lg) == DK_ERR_INVALID && strstr(dk_last_error(), "512"), "id 512: %s",
              dk_last_error());
    DKT_CHECK(t, m->pos == 0, "a refused forward moved the position");
  }
  dk_llm_free(m);
}

/* A context that does not fit (a file's own can be 32K-128K positions):
 * the load fails with out-of-memory naming the KV cache, what a layer's
 * cache takes and the fix, leaks nothing, and a load that fits works after.
 * On the CPU, an address-space limit makes stories260K's cache of 2^24
 * positions (1 GiB a tensor in f16) fail for certain. */
DKT_TEST(models_kv_cache_out_of_memory, 0) {
  char dev[32];
  dk_llm_model *m = NULL;
  dk_llm_options o;
  dk_status s;
  NEED_MODELS(t, dir);
  if (t->dev.backend != DK_CPU) { dkt_skip(t, "host memory can be squeezed on purpose; device memory cannot"); return; }
  snprintf(dev, sizeof dev, "%s", dk_device_name(t->dev));
  memset(&o, 0, sizeof o);
  o.devices = dev;
  o.n_ctx = 1 << 24;
  if (!dkt_squeeze(t, (size_t)64 << 20)) return;
  s = dk_llm_load(path_in(dir, "stories260K.gguf"), &o, &m);
  dkt_unsqueeze();
  DKT_CHECK(t, s == DK_ERR_OUT_OF_MEMORY && !m, "a context of 2^24 under 64 MB: %s, %s", dk_status_name(s), dk_last_error());
  DKT_MSG_HAS(t, "_cache'");
  DKT_MSG_HAS(t, "16777216 positions");
  DKT_MSG_HAS(t, "MiB a layer in f16");
  DKT_MSG_HAS(t, "shorter context");
  o.n_ctx = 256;
  DKT_OK(t, dk_llm_load(path_in(dir, "stories260K.gguf"), &o, &m));
  dk_llm_free(m);
}

/* n_ctx 0 asks for the file's context; where its cache does not fit in the
 * free memory beside the weights, the loader cuts it to what fits (steps of
 * 256) and says which device set it. stories260K with its context_length
 * raised to 2^22 (a 2.5 GiB f16 cache) under an address space 256 MB above
 * what the process holds: loads, with a context below 256 MB's worth, and
 * runs. Asked for explicitly, that context fails as before. */
DKT_TEST(models_context_fits_free_memory, 0) {
  char dev[32], path[256];
  dk_llm_model *m = NULL;
  dk_llm_options o;
  dk_status s;
  size_t n, i, kl = strlen("llama.context_length");
  char *g;
  FILE *f;
  int patched = 0, cut = 0, n_ctx = 0;
  NEED_MODELS(t, dir);
  if (t->dev.backend != DK_CPU) { dkt_skip(t, "host memory can be squeezed on purpose; device memory cannot"); return; }
  if (!(g = read_all(path_in(dir, "stories260K.gguf"), &n))) { dkt_fail_at(t, __FILE__, __LINE__, "cannot read stories260K.gguf"); return; }
  /* the key, then its type (u32 = 4) and value */
  for (i = 0; i + kl + 8 <= n && !patched; i++)
    if (!memcmp(g + i, "llama.context_length", kl) && g[i + kl] == 4 && !g[i + kl + 1] && !g[i + kl + 2] && !g[i + kl + 3]) {
      uint32_t v = 1u << 22;
      memcpy(g + i + kl + 4, &v, 4);   /* GGUF is little-endian, as this machine */
      patched = 1;
    }
  DKT_CHECK(t, patched, "no u32 llama.context_length in stories260K.gguf");
  snprintf(path, sizeof path, "/tmp/devkit_test_ctx_%d.gguf", (int)getpid());
  if ((f = fopen(path, "wb"))) { patched &= fwrite(g, 1, n, f) == n; fclose(f); }
  free(g);
  if (!patched) { dkt_fail_at(t, __FILE__, __LINE__, "cannot write %s", path); return; }
  snprintf(dev, sizeof dev, "%s", dk_device_name(t->dev));
  memset(&o, 0, sizeof o);
  o.devices = dev;
  if (!dkt_squeeze(t, (size_t)256 << 20)) { unlink(path); return; }
  s = dk_llm_load(path, &o, &m);
  if (s == DK_OK) {
    static const int32_t ids[5] = {1, 291, 376, 400, 428};
    dk_tensor *lg;
    cut = m->ctx_cut;
    dkt_note(t, "context %d of %d, set by %s with %.1f MB free", m->n_ctx, m->c.ctx_train, dk_device_name(m->ctx_cut_dev), m->ctx_cut_free / 1e6);
    n_ctx = m->n_ctx;
    s = dk_llm_forward(m, ids, 5, 0, &lg);
  }
  dkt_unsqueeze();
  DKT_CHECK(t, s == DK_OK, "the file's context under 256 MB: %s, %s", dk_status_name(s), dk_last_error());
  if (m) {
    DKT_CHECK(t, m->c.ctx_train == 1 << 22, "the file says %d", m->c.ctx_train);
    /* 640 bytes a position (5 layers, k and v of 32 f16 values) */
    DKT_CHECK(t, cut && n_ctx >= 256 && n_ctx % 256 == 0 && (uint64_t)n_ctx * 640 < ((uint64_t)256 << 20),
              "cut %d, context %d", cut, n_ctx);
    DKT_CHECK(t, dk_device_equal(m->ctx_cut_dev, t->dev) && m->ctx_cut_free <= ((uint64_t)256 << 20),
              "set by %s with %llu bytes free", dk_device_name(m->ctx_cut_dev), (unsigned long long)m->ctx_cut_free);
    dk_llm_free(m);
    m = NULL;
  }
  o.n_ctx = 1 << 22;
  if (dkt_squeeze(t, (size_t)256 << 20)) {
    s = dk_llm_load(path, &o, &m);
    dkt_unsqueeze();
    DKT_CHECK(t, s == DK_ERR_OUT_OF_MEMORY && !m && strstr(dk_last_error(), "shorter context"), "asked for 2^22: %s, %s",
              dk_status_name(s), dk_last_error());
    dk_llm_free(m);
  }
  unlink(path);
}

/* The command line: each mistake is one line on stderr naming what is wrong,
 * and a non-zero exit. Runs build/llama from beside the test binary. */
DKT_TEST(models_bad_input_cli, DKT_ONCE) {
  char exe[1024], llama[1200];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  const char *dir = models_dir();
  char gguf[1200], cmd[4096];
  static const struct { const char *args, *has; int needs_models; } cases[] = {
    {"-m /nonexistent.gguf -p hi", "/nonexistent.gguf: cannot open", 0},
    {"-p hi", "no model", 0},
    {"-m %s -d cpu:7 -p hi", "cpu:7", 1},
    {"-m %s -d tpu:0 -p hi", "tpu:0", 1},
    {"-m %s -p hi -n -3", "-n '-3'", 1},
    {"-m %s -p hi --temp abc", "--temp 'abc'", 1},
    {"-m %s --bogus", "unknown option '--bogus'", 1},
    {"-m %s -c 2 --ids 1,403", "context holds 2", 1},
    {"-m %s --ids 1,2,x", "--ids", 1},
    {"-m %s --ids 1,99999 -n 1", "outside the vocabulary", 1},
    {"-m %s -c 4 -p 'Once upon a time, there was'", "context holds 4", 1},
    {"-m %s -z %s -p hi", "tokenizer", 1},
    {"-m /proc/self/exe -p hi", "first bytes are 7f 45 4c 46", 0},
  };
  size_t k;
  if (n <= 0) { dkt_skip(t, "skipped: no /proc/self/exe"); return; }
  exe[n] = 0;
  if (strrchr(exe, '/')) *strrchr(exe, '/') = 0;
  snprintf(llama, sizeof llama, "%s/llama", exe);
  if (!file_exists(llama)) { dkt_skip(t, "skipped: %s not built", llama); return; }
  snprintf(gguf, sizeof gguf, "%s/stories260K.gguf", dir ? dir : ".");
  for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char args[2600], out[4096];
    FILE *p;
    size_t got;
    int st, lines = 0;
    const char *q;
    if (cases[k].needs_models && !dir) continue;
    snprintf(args, sizeof args, cases[k].args, gguf, gguf);
    snprintf(cmd, sizeof cmd, "DEVKIT_VISIBLE_DEVICES=cpu %s %s 2>&1 >/dev/null", llama, args);
    p = popen(cmd, "r");
    if (!p) continue;
    got = fread(out, 1, sizeof out - 1, p);
    out[got] = 0;
    st = pclose(p);
    for (q = out; *q; q++) lines += *q == '\n';
    DKT_CHECK(t, WIFEXITED(st) && WEXITSTATUS(st) != 0, "llama %s: exit status %d", args, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    DKT_CHECK(t, strstr(out, "error") && strstr(out, cases[k].has), "llama %s: stderr lacks \"%s\":\n%s", args, cases[k].has, out);
    /* one line, except where the usage text follows an unknown option */
    DKT_CHECK(t, lines == 1 || strstr(out, "usage:"), "llama %s: %d lines on stderr:\n%s", args, lines, out);
  }
}

/* The defaults a newcomer meets: no -n generates what the context holds and
 * says where it stopped; a larger -n stops there too instead of failing;
 * -n 0 prints no rate for work that was not done. */
DKT_TEST(models_cli_defaults, DKT_ONCE) {
  char exe[1024], cmd[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  static const struct { const char *args, *has, *lacks; } cases[] = {
    {"-p 'Once upon a time' --temp 0 --ignore-eos", "end of the context (128 positions) after 123 tokens", "error"},
    {"-p 'Once upon a time' --temp 0 --ignore-eos -n 500", "end of the context (128 positions) after 123 tokens", "error"},
    {"-p 'Once upon a time' -n 0", "not run: -n 0", "tok/s"},
    {"-p 'Once upon a time' -n 1", "generated 1 token (too few to time)", "error"},
    {"-p 'Once upon a time' --temp 0 --ignore-eos -b 2", "end of the context (128 positions) after 123 tokens", "error"},
  };
  size_t k;
  NEED_MODELS(t, dir);
  if (n <= 0) { dkt_skip(t, "skipped: no /proc/self/exe"); return; }
  exe[n] = 0;
  if (strrchr(exe, '/')) *strrchr(exe, '/') = 0;
  snprintf(cmd, sizeof cmd, "%s/llama", exe);
  if (!file_exists(cmd)) { dkt_skip(t, "skipped: %s not built", cmd); return; }
  for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char out[8192];
    FILE *p;
    size_t got;
    int st;
    snprintf(cmd, sizeof cmd, "DEVKIT_VISIBLE_DEVICES=cpu %s/llama -m %s/stories260K.gguf %s 2>&1", exe, dir, cases[k].args);
    p = popen(cmd, "r");
    if (!p) { dkt_skip(t, "skipped: popen failed"); return; }
    got = fread(out, 1, sizeof out - 1, p);
    out[got] = 0;
    st = pclose(p);
    DKT_CHECK(t, WIFEXITED(st) && WEXITSTATUS(st) == 0, "llama %s: exit status %d:\n%s", cases[k].args,
              WIFEXITED(st) ? WEXITSTATUS(st) : -1, out);
    DKT_CHECK(t, strstr(out, cases[k].has) != NULL, "llama %s: output lacks \"%s\":\n%s", cases[k].args, cases[k].has, out);
    DKT_CHECK(t, strstr(out, cases[k].lacks) == NULL, "llama %s: output has \"%s\":\n%s", cases[k].args, cases[k].lacks,
              out);
  }
  {
    /* the prompt in chunks of 2 tokens writes the text of one batch */
    char text[2][8192];
    for (k = 0; k < 2; k++) {
      FILE *p;
      size_t got = 0;
      snprintf(cmd, sizeof cmd, "DEVKIT_VISIBLE_DEVICES=cpu %s/llama -m %s/stories260K.gguf -p 'Once upon a time there was' "
               "--temp 0 -n 60 --ignore-eos %s 2>/dev/null", exe, dir, k ? "-b 2" : "");
      if ((p = popen(cmd, "r"))) {
        got = fread(text[k], 1, sizeof text[k] - 1, p);
        pclose(p);
      }
      text[k][got] = 0;
    }
    DKT_CHECK(t, strlen(text[0]) > 60 && !strcmp(text[0], text[1]), "-b 2 vs one batch:\n%s\n---\n%s", text[0], text[1]);
  }
}

/* ==== several devices at once =============================================================== */

/* the layers over two backends (the device under test and another), with
 * the hidden state crossing between them: the same ids as run.c */
DKT_TEST(models_split_across_backends, DKT_MULTI_BACKEND) {
  NEED_MODELS(t, dir);
  {
    dk_device other;
    refs r;
    char spec[128];
    dk_llm_model *m;
    int c, b, found = 0;
    for (b = 0; b < DK_BACKEND_COUNT && !found; b++)
      if (b != (int)t->dev.backend && dk_device_count((dk_backend)b) > 0) {
        other.backend = (dk_backend)b;
        other.index = 0;
        found = 1;
      }
    if (!found) { dkt_skip(t, "skipped: needs a second backend; only %s is present", dk_backend_name(t->dev.backend)); return; }
    if (!load_refs(t, dir, &r)) return;
    snprintf(spec, sizeof spec, "%s=0-2,%s=3-4", dk_device_name(t->dev), dk_device_name(other));
    m = load_model(t, path_in(dir, "stories260K.gguf"), spec, 0);
    if (!m) return;
    DKT_OK(t, dk_llm_check_placement(m));
    for (c = 0; c < 4; c++) {
      int32_t ids[REF_MAX], out[REF_MAX];
      int np = r.c[c].n_cpp_prompt, n = r.c[c].n_run - np, i;
      for (i = 0; i < np; i++) ids[i] = r.c[c].run_ids[i];
      if (generate(t, m, ids, np, n, out))
        DKT_CHECK(t, first_diff(out, r.c[c].run_ids + np, n) < 0, "%s split differs from run.c on prompt %d", spec, c);
    }
    dk_llm_free(m);
  }
}

/* two models, two devices, two threads, one process: each gives the tokens it
 * gives alone (the Chai-Lab case, without CUDA_VISIBLE_DEVICES) */
typedef struct { const char *path; dk_device dev; int n; int32_t out[64]; int ok; char err[256]; } model_job;

static void *model_thread(void *arg) {
  model_job *j = (model_job *)arg;
  dk_llm_options o;
  dk_llm_model *m = NULL;
  int32_t prompt[5] = {1, 403, 407, 261, 378};
  dk_tensor *lg;
  int i;
  memset(&o, 0, sizeof o);
  o.devices = dk_device_name(j->dev);
  j->ok = 0;
  if (dk_llm_load(j->path, &o, &m) != DK_OK) { snprintf(j->err, sizeof j->err, "%.250s", dk_last_error()); return NULL; }
  if (dk_llm_forward(m, prompt, 5, 0, &lg) != DK_OK) goto fail;
  for (i = 0; i < j->n; i++) {
    if (dk_llm_sample(m, lg, 0, NULL, (uint64_t)i, &j->out[i]) != DK_OK) goto fail;
    if (i + 1 < j->n && dk_llm_forward(m, &j->out[i], 1, 0, &lg) != DK_OK) goto fail;
  }
  j->ok = 1;
  dk_llm_free(m);
  return NULL;
fail:
  snprintf(j->err, sizeof j->err, "%.250s", dk_last_error());
  dk_llm_free(m);
  return NULL;
}

DKT_TEST(models_two_models_two_threads, 0) {
  NEED_MODELS(t, dir);
  if (!t->has_dev2) { dkt_skip(t, "skipped: needs a second logical device"); return; }
  {
    model_job solo[2], both[2];
    pthread_t th[2];
    char p0[1024], p1[1024];
    int k;
    snprintf(p0, sizeof p0, "%s", path_in(dir, "stories260K.gguf"));
    snprintf(p1, sizeof p1, "%s", path_in(dir, "stories260K-F16.gguf"));
    for (k = 0; k < 2; k++) {
      memset(&solo[k], 0, sizeof solo[k]);
      solo[k].path = k ? p1 : p0;
      solo[k].dev = k ? t->dev2 : t->dev;
      solo[k].n = 48;
      model_thread(&solo[k]);
      DKT_CHECK(t, solo[k].ok, "model %d alone: %s", k, solo[k].err);
      both[k] = solo[k];
      memset(both[k].out, 0, sizeof both[k].out);
    }
    for (k = 0; k < 2; k++) pthread_create(&th[k], NULL, model_thread, &both[k]);
    for (k = 0; k < 2; k++) pthread_join(th[k], NULL);
    for (k = 0; k < 2; k++) {
      DKT_CHECK(t, both[k].ok, "model %d in its thread: %s", k, both[k].err);
      DKT_CHECK(t, memcmp(both[k].out, solo[k].out, sizeof solo[k].out) == 0,
                "model %d on %s gave other tokens beside the other model than alone", k, dk_device_name(both[k].dev));
    }
  }
}

/* the placement check on a loaded model where a few tensors were moved by
 * mistake: it names every one of them, and only them */
DKT_TEST(models_placement_check_finds_moved_tensors, 0) {
  NEED_MODELS(t, dir);
  if (!t->has_dev2) { dkt_skip(t, "skipped: needs a second logical device"); return; }
  {
    dk_llm_model *m = load_model(t, path_in(dir, "stories260K.gguf"), dk_device_name(t->dev), 0);
    dk_tensor *moved[3] = {NULL, NULL, NULL}, *orig[3];
    dk_tensor **slot[3];
    const char *m_err;
    int k;
    if (!m) return;
    DKT_OK(t, dk_llm_check_placement(m));
    slot[0] = &m->layers[1].wq;
    slot[1] = &m->layers[3].v_cache;
    slot[2] = &m->out_norm;
    for (k = 0; k < 3; k++) {
      orig[k] = *slot[k];
      DKT_OK(t, dk_to(orig[k], t->dev2, &moved[k]));
      *slot[k] = moved[k];
    }
    DKT_REFUSED(t, dk_llm_check_placement(m), DK_ERR_DEVICE_MISMATCH);
    m_err = dk_last_error();
    DKT_CHECK(t, strstr(m_err, "3 of ") != NULL, "three misplaced:\n%s", m_err);
    DKT_CHECK(t, strstr(m_err, "'blk.1.attn_q.weight'") && strstr(m_err, "'blk.3.v_cache'") && strstr(m_err, "'output_norm.weight'"),
              "each moved tensor is named:\n%s", m_err);
    DKT_CHECK(t, strstr(m_err, "'blk.1.attn_k.weight'") == NULL, "a tensor in place is not listed:\n%s", m_err);
    DKT_CHECK(t, strstr(m_err, dk_device_name(t->dev2)) != NULL, "where they are:\n%s", m_err);
    for (k = 0; k < 3; k++) {
      *slot[k] = orig[k];
      dk_tensor_free(moved[k]);
    }
    DKT_OK(t, dk_llm_check_placement(m));
    dk_llm_free(m);
  }
}

/* ==== hardening (issue 11): a BOS id outside the vocabulary, an empty device list ========== */

static unsigned char *tok_gguf_with_bos(uint32_t bos, size_t *size) {
  gw_buf b;
  const char *toks[3] = {"<unk>", "<s>", "a"};
  int i;
  memset(&b, 0, sizeof b);
  gw_header(&b, 3, 0, 5);
  gw_kv_str(&b, "tokenizer.ggml.model", "llama");
  gw_arr_head(&b, "tokenizer.ggml.tokens", GW_STRING, 3);
  for (i = 0; i < 3; i++) gw_str(&b, toks[i]);
  gw_arr_head(&b, "tokenizer.ggml.scores", GW_F32, 3);
  for (i = 0; i < 3; i++) gw_f32(&b, (float)-i);
  gw_kv_u32(&b, "tokenizer.ggml.bos_token_id", bos);
  gw_kv_u32(&b, "general.alignment", 32);
  *size = b.n;
  return b.p;
}

DKT_TEST(hardening_tokenizer_bos_out_of_range, DKT_ONCE) {
  uint32_t bos[3] = {1, 3, 0xffffffffu};
  int k;
  for (k = 0; k < 3; k++) {
    size_t n;
    unsigned char *g = tok_gguf_with_bos(bos[k], &n);
    dk_file *f = NULL;
    dk_spm *tk = NULL;
    dk_status s;
    if (dk_file_open_memory(g, n, "bos.gguf", DK_FILE_GGUF, &f) != DK_OK) {
      dkt_fail_at(t, __FILE__, __LINE__, "open: %s", dk_last_error());
      free(g);
      return;
    }
    s = dk_spm_load(f, &tk);
    if (k == 0) {
      DKT_CHECK(t, s == DK_OK, "bos 1 of 3 tokens: %s", dk_last_error());
    } else {
      DKT_CHECK(t, s == DK_ERR_FORMAT && tk == NULL, "bos %u of 3 tokens loaded (%s)", bos[k], dk_status_name(s));
      DKT_CHECK(t, strstr(dk_last_error(), "bos_token_id") && strstr(dk_last_error(), "3 tokens"),
                "message: %s", dk_last_error());
    }
    dk_spm_free(tk);
    dk_file_close(f);
    free(g);
  }
}

DKT_TEST(hardening_llm_empty_device_list, DKT_ONCE) {
  dk_llm_options o;
  dk_device devs[8];
  memset(&o, 0, sizeof o);
  o.devices = "";
  DKT_CHECK(t, dk_llm_place(&o, 4, devs) == DK_ERR_INVALID && strstr(dk_last_error(), "no device named"),
            "-d '': %s", dk_last_error());
  o.devices = NULL;
  DKT_CHECK(t, dk_llm_place(&o, 4, devs) == DK_OK, "no -d: %s", dk_last_error());
}
