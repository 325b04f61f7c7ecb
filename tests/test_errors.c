/* tests/test_errors.c — every refusal: devices, backends, dtypes, shapes,
 * NULLs, views, aliasing, memory; the message content; outputs untouched. */
#include "test.h"
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- one valid call of every op, with operands placed per role ------------ */

typedef struct { dk_dtype dt; int nd; int64_t s[4]; } spec;
typedef struct { const char *name; int n; spec r[4]; } opspec;

#define F DK_F32
static const opspec ops[] = {
  {"dk_add", 3, {{F, 2, {4, 8}}, {F, 2, {4, 8}}, {F, 1, {8}}}},
  {"dk_sub", 3, {{F, 2, {4, 8}}, {F, 2, {4, 8}}, {F, 1, {8}}}},
  {"dk_mul", 3, {{F, 2, {4, 8}}, {F, 2, {4, 8}}, {F, 1, {8}}}},
  {"dk_div", 3, {{F, 2, {4, 8}}, {F, 2, {4, 8}}, {F, 1, {8}}}},
  {"dk_scale", 2, {{F, 2, {4, 8}}, {F, 2, {4, 8}}}},
  {"dk_silu", 2, {{F, 2, {4, 8}}, {F, 2, {4, 8}}}},
  {"dk_gelu", 2, {{F, 2, {4, 8}}, {F, 2, {4, 8}}}},
  {"dk_gelu_tanh", 2, {{F, 2, {4, 8}}, {F, 2, {4, 8}}}},
  {"dk_relu", 2, {{F, 2, {4, 8}}, {F, 2, {4, 8}}}},
  {"dk_sigmoid", 2, {{F, 2, {4, 8}}, {F, 2, {4, 8}}}},
  {"dk_tanh", 2, {{F, 2, {4, 8}}, {F, 2, {4, 8}}}},
  {"dk_exp", 2, {{F, 2, {4, 8}}, {F, 2, {4, 8}}}},
  {"dk_swiglu", 3, {{F, 2, {4, 8}}, {F, 2, {4, 8}}, {F, 2, {4, 8}}}},
  {"dk_rmsnorm", 3, {{F, 2, {4, 8}}, {F, 2, {4, 8}}, {F, 1, {8}}}},
  {"dk_layernorm", 4, {{F, 2, {4, 8}}, {F, 2, {4, 8}}, {F, 1, {8}}, {F, 1, {8}}}},
  {"dk_softmax", 2, {{F, 3, {2, 4, 8}}, {F, 3, {2, 4, 8}}}},
  {"dk_softmax_masked", 2, {{F, 3, {2, 4, 8}}, {F, 3, {2, 4, 8}}}},
  {"dk_matmul", 3, {{F, 2, {4, 5}}, {F, 2, {4, 8}}, {F, 2, {8, 5}}}},
  {"dk_linear", 4, {{F, 2, {4, 16}}, {F, 2, {4, 32}}, {DK_Q8_0, 2, {16, 32}}, {F, 1, {16}}}},
  {"dk_embedding", 3, {{F, 2, {3, 32}}, {DK_Q4_0, 2, {10, 32}}, {DK_I32, 1, {3}}}},
  {"dk_rope", 3, {{F, 3, {3, 2, 8}}, {F, 3, {3, 2, 8}}, {DK_I32, 1, {3}}}},
  {"dk_concat", 3, {{F, 2, {4, 16}}, {F, 2, {4, 8}}, {F, 2, {4, 8}}}},
  {"dk_copy", 2, {{DK_F16, 2, {4, 8}}, {F, 2, {4, 8}}}},
  {"dk_transpose", 2, {{F, 2, {8, 4}}, {F, 2, {4, 8}}}},
  {"dk_argmax", 2, {{DK_I32, 1, {4}}, {F, 2, {4, 8}}}},
  {"dk_sample", 2, {{DK_I32, 1, {4}}, {F, 2, {4, 8}}}},
  {"dk_attention", 4, {{F, 3, {3, 4, 8}}, {F, 3, {3, 4, 8}}, {F, 3, {5, 2, 8}}, {F, 3, {5, 2, 8}}}},
};
#undef F
#define NOPS ((int)(sizeof ops / sizeof ops[0]))
static const char *role_names[][4] = {
  {"out", "a", "b"}, {"out", "a", "b"}, {"out", "a", "b"}, {"out", "a", "b"}, {"out", "x"}, {"out", "x"}, {"out", "x"},
  {"out", "x"}, {"out", "x"}, {"out", "x"}, {"out", "x"}, {"out", "x"}, {"out", "gate", "up"}, {"out", "x", "w"},
  {"out", "x", "w", "b"}, {"out", "x"}, {"out", "x"}, {"out", "a", "b"}, {"out", "x", "w", "bias"},
  {"out", "table", "ids"}, {"out", "x", "positions"}, {"out", "a", "b"}, {"dst", "src"}, {"out", "x"},
  {"out", "x"}, {"out", "logits"}, {"out", "q", "k", "v"},
};

static dk_status call_op(int k, dk_tensor **T) {
  static const int perm[2] = {1, 0};
  switch (k) {
  case 0: return dk_add(T[0], T[1], T[2]);
  case 1: return dk_sub(T[0], T[1], T[2]);
  case 2: return dk_mul(T[0], T[1], T[2]);
  case 3: return dk_div(T[0], T[1], T[2]);
  case 4: return dk_scale(T[0], T[1], 2.0f);
  case 5: return dk_silu(T[0], T[1]);
  case 6: return dk_gelu(T[0], T[1]);
  case 7: return dk_gelu_tanh(T[0], T[1]);
  case 8: return dk_relu(T[0], T[1]);
  case 9: return dk_sigmoid(T[0], T[1]);
  case 10: return dk_tanh(T[0], T[1]);
  case 11: return dk_exp(T[0], T[1]);
  case 12: return dk_swiglu(T[0], T[1], T[2]);
  case 13: return dk_rmsnorm(T[0], T[1], T[2], 1e-5f);
  case 14: return dk_layernorm(T[0], T[1], T[2], T[3], 1e-5f);
  case 15: return dk_softmax(T[0], T[1]);
  case 16: return dk_softmax_masked(T[0], T[1], 0.5f, 0);
  case 17: return dk_matmul(T[0], T[1], T[2]);
  case 18: return dk_linear(T[0], T[1], T[2], T[3]);
  case 19: return dk_embedding(T[0], T[1], T[2]);
  case 20: return dk_rope(T[0], T[1], T[2], 8, 10000.0f, DK_ROPE_NORMAL);
  case 21: return dk_concat(T[0], T[1], T[2], 1);
  case 22: return dk_copy(T[0], T[1]);
  case 23: return dk_transpose(T[0], T[1], perm);
  case 24: return dk_argmax(T[0], T[1]);
  case 25: return dk_sample(T[0], T[1], 0.8f, 3, 0.9f, 7);
  default: return dk_attention(T[0], T[1], T[2], T[3], 0.3f, 2);
  }
}

/* operands of op k; role r goes on devs[r]. Integer operands hold valid ids. */
static int make_operands(dkt *t, int k, const dk_device *devs, dk_tensor **T, char names[4][32]) {
  int r;
  for (r = 0; r < ops[k].n; r++) {
    const spec *s = &ops[k].r[r];
    snprintf(names[r], 32, "%s_%s", ops[k].name + 3, role_names[k][r]);
    if (s->dt == DK_I32) {
      int32_t ids[8] = {1, 0, 2, 3, 1, 0, 2, 3};
      T[r] = dkt_ids(t, devs[r], s->nd, s->s, names[r], ids);
      if (T[r] && r == 0) {
        /* an i32 output: fill with a recognisable pattern */
        int32_t pat[8] = {77, 77, 77, 77, 77, 77, 77, 77};
        dk_tensor_upload(T[r], pat, dk_tensor_nbytes(T[r]));
      }
    } else {
      T[r] = dkt_random(t, devs[r], s->dt, s->nd, s->s, names[r], -1, 1, NULL);
    }
    if (!T[r]) return 0;
  }
  return 1;
}

static void free_operands(dk_tensor **T, int n) {
  int r;
  for (r = 0; r < n; r++) { dk_tensor_free(T[r]); T[r] = NULL; }
}

/* bytes of the output before and after a refused op must be identical */
static void *snapshot(const dk_tensor *x) {
  size_t n = dk_tensor_nbytes(x);
  void *p = malloc(n ? n : 1);
  if (dk_tensor_download(x, p, n) != DK_OK) { free(p); return NULL; }
  return p;
}
static void check_untouched(dkt *t, const char *op, const dk_tensor *out, const void *before) {
  void *after = snapshot(out);
  DKT_CHECK(t, before && after && memcmp(before, after, dk_tensor_nbytes(out)) == 0,
            "%s: the output changed although the op was refused", op);
  free(after);
}

/* The fix each mismatch message ends with is C code: collected here as one
 * function per message, whose parameters are the op's operands named by
 * their roles, and compiled against the public header (hints_compile). */
static char hint_src[1 << 17];
static size_t hint_len;
static int hint_count;

static void hint_add(int k, int odd, const char *m) {
  const char *code = strrchr(m, '\n');
  int r;
  code = code ? code + 1 : m;
  while (*code == ' ') code++;
  hint_len += (size_t)snprintf(hint_src + hint_len, sizeof hint_src - hint_len, "void hint_%d_%d(", k, odd);
  for (r = 0; r < ops[k].n; r++)
    hint_len += (size_t)snprintf(hint_src + hint_len, sizeof hint_src - hint_len, "%sdk_tensor *%s", r ? ", " : "",
                                 role_names[k][r]);
  hint_len += (size_t)snprintf(hint_src + hint_len, sizeof hint_src - hint_len, ") {\n");
  for (r = 0; r < ops[k].n; r++)
    hint_len += (size_t)snprintf(hint_src + hint_len, sizeof hint_src - hint_len, "  (void)%s;\n", role_names[k][r]);
  hint_len += (size_t)snprintf(hint_src + hint_len, sizeof hint_src - hint_len, "  %s\n}\n", code);
  hint_count++;
}

static void hints_compile(dkt *t) {
  char exe[1024], dir[1100], cmd[3600], out[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  FILE *f;
  size_t got;
  int st;
  if (n <= 0 || hint_count == 0) { dkt_fail_at(t, __FILE__, __LINE__, "no hints collected"); return; }
  exe[n] = 0;
  if (strrchr(exe, '/')) *strrchr(exe, '/') = 0;   /* build/ */
  snprintf(dir, sizeof dir, "/tmp/dkt_hints_%d.c", (int)getpid());
  f = fopen(dir, "w");
  if (!f) { dkt_fail_at(t, __FILE__, __LINE__, "cannot write %s", dir); return; }
  fprintf(f, "#include \"devkit.h\"\n%s", hint_src);
  fclose(f);
  snprintf(cmd, sizeof cmd, "${CC:-cc} -std=c99 -Wall -Wextra -Werror -fsyntax-only -I'%s/..' %s 2>&1",
           exe, dir);
  f = popen(cmd, "r");
  if (!f) { dkt_fail_at(t, __FILE__, __LINE__, "popen failed"); unlink(dir); return; }
  got = fread(out, 1, sizeof out - 1, f);
  out[got] = 0;
  st = pclose(f);
  DKT_CHECK(t, st == 0, "the %d fix hints do not compile as C99 against devkit.h:\n%s\n%.2000s", hint_count, out, hint_src);
  unlink(dir);
}

static void mismatch_case(dkt *t, int k, int odd, dk_device home, dk_device other, dk_status want) {
  dk_device devs[4] = {home, home, home, home};
  dk_tensor *T[4] = {NULL, NULL, NULL, NULL};
  char names[4][32];
  void *before;
  dk_status s;
  devs[odd] = other;
  if (!make_operands(t, k, devs, T, names)) { free_operands(T, 4); return; }
  before = snapshot(T[0]);
  s = call_op(k, T);
  if (s != want) {
    dkt_fail_at(t, __FILE__, __LINE__, "%s with %s on %s: %s, want %s (%s)", ops[k].name, role_names[k][odd],
                dk_device_name(other), dk_status_name(s), dk_status_name(want), dk_last_error());
  } else {
    const char *m = dk_last_error();
    int r;
    DKT_CHECK(t, strncmp(m, ops[k].name, strlen(ops[k].name)) == 0 && m[strlen(ops[k].name)] == ':',
              "message does not start with the op name:\n%s", m);
    for (r = 0; r < ops[k].n; r++) {
      char q[160];
      snprintf(q, sizeof q, "'%s'", names[r]);
      DKT_CHECK(t, strstr(m, q) != NULL, "message lacks operand %s:\n%s", q, m);
    }
    DKT_CHECK(t, strstr(m, dk_device_name(home)) && strstr(m, dk_device_name(other)),
              "message lacks a device name (%s, %s):\n%s", dk_device_name(home), dk_device_name(other), m);
    DKT_CHECK(t, strstr(m, "dk_to(") != NULL, "message lacks the fix (dk_to):\n%s", m);
    hint_add(k, odd, m);
    DKT_CHECK(t, strstr(m, "test_errors.c:") != NULL, "message lacks the creation site:\n%s", m);
    DKT_CHECK(t, strstr(m, "never copies implicitly") != NULL, "message lacks the explanation:\n%s", m);
    check_untouched(t, ops[k].name, T[0], before);
  }
  free(before);
  free_operands(T, 4);
}

DKT_TEST(errors_device_mismatch_every_op, 0) {
  int k, r;
  if (!t->has_dev2) { dkt_skip(t, "needs two devices of one backend (DEVKIT_LOGICAL_DEVICES)"); return; }
  for (k = 0; k < NOPS; k++)
    for (r = 0; r < ops[k].n; r++) mismatch_case(t, k, r, t->dev, t->dev2, DK_ERR_DEVICE_MISMATCH);
  /* the hints are the same text on every backend: compiled once, on cpu */
  if (t->dev.backend == DK_CPU) hints_compile(t);
}

DKT_TEST(errors_backend_mismatch_every_op, DKT_MULTI_BACKEND) {
  dk_device other;
  int k, r, b;
  other.backend = DK_CPU;
  other.index = 0;
  if (t->dev.backend == DK_CPU) {
    for (b = 1; b < DK_BACKEND_COUNT && other.backend == DK_CPU; b++)
      if (dk_device_count((dk_backend)b) > 0) other.backend = (dk_backend)b;
    if (other.backend == DK_CPU) { dkt_skip(t, "needs a second backend; only cpu is present"); return; }
  }
  for (k = 0; k < NOPS; k++)
    for (r = 0; r < ops[k].n; r++) mismatch_case(t, k, r, t->dev, other, DK_ERR_BACKEND_MISMATCH);
}

/* the message DESIGN.md shows, line by line */
DKT_TEST(errors_message_format, 0) {
  int64_t xs[2] = {1, 64}, ws[2] = {64, 64};
  dk_tensor *q = NULL, *x = NULL, *w = NULL;
  const char *m;
  if (!t->has_dev2) { dkt_skip(t, "needs two devices of one backend"); return; }
  DKT_OK(t, dk_tensor_new(t->dev2, DK_F32, 2, xs, "q", &q));
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, xs, "x", &x));
  DKT_OK(t, dk_tensor_new(t->dev2, DK_Q4_0, 2, ws, "blk.0.attn_q.weight", &w));
  dk_tensor_set_site(w, "model.gguf:blk.0.attn_q.weight");
  DKT_REFUSED(t, dk_linear(q, x, w, NULL), DK_ERR_DEVICE_MISMATCH);
  m = dk_last_error();
  DKT_CHECK(t, strstr(m, "dk_linear: operands are on different devices (devkit never copies implicitly):\n") == m,
            "first line:\n%s", m);
  DKT_CHECK(t, strstr(m, "  out 'q'") && strstr(m, "  x   'x'") && strstr(m, "  w   'blk.0.attn_q.weight'"),
            "operand lines:\n%s", m);
  DKT_CHECK(t, strstr(m, "q4_0 [64,64]") && strstr(m, "f32  [1,64]"), "dtype and shape:\n%s", m);
  DKT_CHECK(t, strstr(m, "(model.gguf:blk.0.attn_q.weight)"), "the loader's site:\n%s", m);
  /* two of three are on dev2: x is the one to move */
  {
    char fix[256];
    snprintf(fix, sizeof fix, "move x to %s (or create it there), or put the others on %s:\n"
             "    dk_tensor *x_moved; dk_to(x, dk_tensor_device(out), &x_moved);", dk_device_name(t->dev2),
             dk_device_name(t->dev));
    DKT_CHECK(t, strstr(m, fix) != NULL, "the fix should move x to %s:\n%s", dk_device_name(t->dev2), m);
  }
  DKT_CHECK(t, strstr(m, "bias") == NULL, "an absent optional operand should not be listed:\n%s", m);
  dk_tensor_free(q); dk_tensor_free(x); dk_tensor_free(w);
}

/* ---- dtype, shape, NULL, layout, aliasing ---------------------------------- */

DKT_TEST(errors_dtype, 0) {
  int64_t s[2] = {4, 32}, ws[2] = {8, 32}, os[2] = {4, 8}, r4 = 4;
  dk_tensor *a = dkt_random(t, t->dev, DK_F32, 2, s, "a", -1, 1, NULL);
  dk_tensor *h = dkt_random(t, t->dev, DK_F16, 2, s, "h", -1, 1, NULL);
  dk_tensor *w = dkt_random(t, t->dev, DK_F32, 2, ws, "w", -1, 1, NULL);
  dk_tensor *o = dkt_random(t, t->dev, DK_F32, 2, os, "o", -1, 1, NULL);
  dk_tensor *fid = dkt_random(t, t->dev, DK_F32, 1, &r4, "float_ids", -1, 1, NULL);
  dk_tensor *i = NULL, *q = NULL;
  void *before;
  int32_t ids[128];
  memset(ids, 0, sizeof ids);
  if (!a || !h || !w || !o || !fid) return;
  i = dkt_ids(t, t->dev, 2, s, "ints", ids);
  DKT_OK(t, dk_tensor_new(t->dev, DK_Q8_0, 2, s, "q8", &q));
  before = snapshot(a);
  DKT_REFUSED(t, dk_add(a, a, h), DK_ERR_DTYPE);
  DKT_MSG_HAS(t, "dk_add: 'out' is f32 but 'b' is f16");
  DKT_REFUSED(t, dk_silu(i, i), DK_ERR_DTYPE);
  DKT_MSG_HAS(t, "i32");
  DKT_REFUSED(t, dk_linear(o, a, i, NULL), DK_ERR_DTYPE);
  DKT_MSG_HAS(t, "'w' is i32");
  DKT_REFUSED(t, dk_embedding(a, w, fid), DK_ERR_DTYPE);
  DKT_MSG_HAS(t, "'ids' is f32; it must be i32");
  DKT_REFUSED(t, dk_argmax(fid, a), DK_ERR_DTYPE);
  DKT_REFUSED(t, dk_copy(a, q), DK_ERR_DTYPE);
  DKT_REFUSED(t, dk_copy(a, i), DK_ERR_DTYPE);
  DKT_REFUSED(t, dk_matmul(a, q, a), DK_ERR_DTYPE);
  check_untouched(t, "dtype refusals", a, before);
  free(before);
  dk_tensor_free(a); dk_tensor_free(h); dk_tensor_free(w); dk_tensor_free(o); dk_tensor_free(fid);
  dk_tensor_free(i); dk_tensor_free(q);
}

DKT_TEST(errors_shape, 0) {
  int64_t s1[2] = {4, 8}, s2[2] = {3, 8}, s3[2] = {8, 4}, s4[2] = {4, 4}, w5[2] = {6, 7}, q3[3] = {2, 3, 8},
          k3[3] = {2, 2, 8}, p2 = 2;
  dk_tensor *a = dkt_random(t, t->dev, DK_F32, 2, s1, "a", -1, 1, NULL);
  dk_tensor *b = dkt_random(t, t->dev, DK_F32, 2, s2, "b", -1, 1, NULL);
  dk_tensor *c = dkt_random(t, t->dev, DK_F32, 2, s3, "c", -1, 1, NULL);
  dk_tensor *o = dkt_random(t, t->dev, DK_F32, 2, s4, "o", -1, 1, NULL);
  dk_tensor *w = dkt_random(t, t->dev, DK_F32, 2, w5, "w", -1, 1, NULL);
  dk_tensor *q = dkt_random(t, t->dev, DK_F32, 3, q3, "q", -1, 1, NULL);
  dk_tensor *k = dkt_random(t, t->dev, DK_F32, 3, k3, "k", -1, 1, NULL);
  int32_t pv[2] = {0, 1};
  dk_tensor *pos = dkt_ids(t, t->dev, 1, &p2, "pos", pv);
  void *before;
  if (!a || !b || !c || !o || !w || !q || !k || !pos) return;
  before = snapshot(o);
  DKT_REFUSED(t, dk_add(a, a, b), DK_ERR_SHAPE);
  DKT_MSG_HAS(t, "do not broadcast");
  DKT_REFUSED(t, dk_add(o, a, a), DK_ERR_SHAPE);
  DKT_REFUSED(t, dk_matmul(o, a, b), DK_ERR_SHAPE);
  DKT_MSG_HAS(t, "inner dimensions differ");
  DKT_REFUSED(t, dk_matmul(o, a, a), DK_ERR_SHAPE);
  DKT_REFUSED(t, dk_linear(o, a, w, NULL), DK_ERR_SHAPE);
  DKT_MSG_HAS(t, "must equal K");
  DKT_REFUSED(t, dk_attention(q, q, k, k, 1.0f, 0), DK_ERR_SHAPE);
  DKT_MSG_HAS(t, "multiple of k's heads");
  DKT_REFUSED(t, dk_rope(a, a, pos, 8, 1e4f, DK_ROPE_NORMAL), DK_ERR_SHAPE);   /* 4 tokens, 2 positions */
  DKT_MSG_HAS(t, "one position per token (4)");
  DKT_REFUSED(t, dk_rope(q, q, pos, 3, 1e4f, DK_ROPE_NORMAL), DK_ERR_INVALID);  /* odd n_rot */
  DKT_REFUSED(t, dk_concat(o, a, c, 1), DK_ERR_SHAPE);
  DKT_REFUSED(t, dk_softmax(o, a), DK_ERR_SHAPE);
  check_untouched(t, "shape refusals", o, before);
  free(before);
  dk_tensor_free(a); dk_tensor_free(b); dk_tensor_free(c); dk_tensor_free(o); dk_tensor_free(w);
  dk_tensor_free(q); dk_tensor_free(k); dk_tensor_free(pos);
}

DKT_TEST(errors_params_null_alias_layout, 0) {
  int64_t s[2] = {4, 8}, big[2] = {8, 8}, ms[2] = {8, 4};
  dk_tensor *a = dkt_random(t, t->dev, DK_F32, 2, s, "a", -1, 1, NULL);
  dk_tensor *base = dkt_random(t, t->dev, DK_F32, 2, big, "base", -1, 1, NULL);
  dk_tensor *strided = NULL, *top = NULL, *bottom = NULL, *m = dkt_random(t, t->dev, DK_F32, 2, ms, "m", -1, 1, NULL);
  dk_tensor *sq = dkt_random(t, t->dev, DK_F32, 2, big, "sq", -1, 1, NULL);
  if (!a || !base || !m || !sq) return;
  DKT_REFUSED(t, dk_add(a, a, NULL), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "dk_add: operand 'b' is NULL");
  DKT_REFUSED(t, dk_rmsnorm(a, a, NULL, -1.0f), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "eps");
  DKT_REFUSED(t, dk_rope(a, a, NULL, 8, 1e4f, 5), DK_ERR_INVALID);
  /* a strided view where the op wants contiguous operands */
  DKT_OK(t, dk_narrow(base, 1, 0, 8, &strided));    /* full width: still contiguous */
  DKT_CHECK(t, dk_tensor_is_contiguous(strided), "a full-width narrow is contiguous");
  dk_tensor_free(strided);
  DKT_OK(t, dk_narrow(base, 1, 2, 4, &strided));
  DKT_REFUSED(t, dk_relu(m, strided), DK_ERR_SHAPE);
  DKT_REFUSED(t, dk_relu(m, strided), DK_ERR_SHAPE);
  DKT_MSG_HAS(t, "strided view");
  DKT_MSG_HAS(t, "dk_copy");
  /* outputs overlapping inputs */
  DKT_OK(t, dk_narrow(sq, 0, 0, 4, &top));
  DKT_OK(t, dk_narrow(sq, 0, 2, 4, &bottom));
  DKT_REFUSED(t, dk_add(top, bottom, bottom), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "overlaps");
  DKT_REFUSED(t, dk_matmul(sq, sq, sq), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "cannot work in place");
  /* in place where it is allowed */
  DKT_OK(t, dk_silu(top, top));
  dk_tensor_free(strided); dk_tensor_free(top); dk_tensor_free(bottom);
  dk_tensor_free(a); dk_tensor_free(base); dk_tensor_free(m); dk_tensor_free(sq);
}

DKT_TEST(errors_tensor_new_and_transfer_args, 0) {
  int64_t neg[2] = {2, -1}, q5[2] = {2, 5}, s[2] = {2, 3}, huge[2] = {(int64_t)1 << 40, (int64_t)1 << 30};
  dk_tensor *x = NULL, *y = NULL;
  float buf[6] = {1, 2, 3, 4, 5, 6};
  DKT_REFUSED(t, dk_tensor_new(t->dev, DK_F32, 2, neg, "neg", &x), DK_ERR_SHAPE);
  DKT_REFUSED(t, dk_tensor_new(t->dev, DK_Q4_0, 2, q5, "q", &x), DK_ERR_SHAPE);
  DKT_MSG_HAS(t, "multiple of 32");
  DKT_REFUSED(t, dk_tensor_new(t->dev, DK_F32, DEVKIT_MAX_DIMS + 1, s, "deep", &x), DK_ERR_SHAPE);
  DKT_REFUSED(t, dk_tensor_new(t->dev, (dk_dtype)99, 2, s, "bad", &x), DK_ERR_DTYPE);
  DKT_REFUSED(t, dk_tensor_new(t->dev, DK_F32, 2, huge, "huge", &x), DK_ERR_OUT_OF_MEMORY);
  DKT_CHECK(t, x == NULL, "a refused dk_tensor_new must leave *out NULL");
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, s, "x", &x));
  DKT_REFUSED(t, dk_tensor_upload(x, buf, 20), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "20 bytes given, the tensor (f32 [2,3]) holds 24");
  DKT_REFUSED(t, dk_tensor_download(x, buf, 28), DK_ERR_INVALID);
  DKT_OK(t, dk_tensor_upload(x, buf, 24));
  {
    /* a range: the bytes land where asked and nowhere else; past the end is refused */
    float two[2] = {-7, -8}, back[6];
    DKT_OK(t, dk_tensor_upload_range(x, 8, two, 8));
    DKT_OK(t, dk_tensor_download(x, back, 24));
    DKT_CHECK(t, back[0] == 1 && back[1] == 2 && back[2] == -7 && back[3] == -8 && back[4] == 5 && back[5] == 6,
              "upload_range wrote %g %g %g %g %g %g", back[0], back[1], back[2], back[3], back[4], back[5]);
    DKT_REFUSED(t, dk_tensor_upload_range(x, 20, two, 8), DK_ERR_INVALID);
    DKT_MSG_HAS(t, "outside the tensor's 24");
    DKT_REFUSED(t, dk_tensor_upload_range(x, (size_t)-4, two, 8), DK_ERR_INVALID);
    DKT_OK(t, dk_tensor_upload_range(x, 24, two, 0));
  }
  DKT_OK(t, dk_tensor_new(t->dev, DK_F16, 2, s, "y", &y));
  DKT_REFUSED(t, dk_copy_to(y, x), DK_ERR_SHAPE);
  DKT_MSG_HAS(t, "same dtype and shape");
  dk_tensor_free(x); dk_tensor_free(y);
}

DKT_TEST(errors_out_of_memory_then_recovers, 0) {
  dk_device_props p;
  int64_t s[1], ok = 1024;
  dk_tensor *x = NULL, *y = NULL;
  const char *m;
  DKT_OK(t, dk_device_properties(t->dev, &p));
  s[0] = (int64_t)(p.memory_total / 4 + (1 << 20));   /* one more MiB of f32 than the device holds */
  DKT_REFUSED(t, dk_tensor_new(t->dev, DK_F32, 1, s, "too_big", &x), DK_ERR_OUT_OF_MEMORY);
  m = dk_last_error();
  DKT_CHECK(t, strstr(m, dk_device_name(t->dev)) && strstr(m, "too_big") && strstr(m, "bytes"),
            "OOM message must name device, tensor and sizes:\n%s", m);
  /* the kit keeps working */
  y = dkt_random(t, t->dev, DK_F32, 1, &ok, "after", -1, 1, NULL);
  DKT_CHECK(t, y != NULL, "allocation after an OOM failed");
  if (y) DKT_OK(t, dk_relu(y, y));
  dk_tensor_free(y);
}

/* ---- views ------------------------------------------------------------------ */

DKT_TEST(views_outlive_their_base, 0) {
  int64_t s[2] = {6, 8}, rs[1] = {24}, s2[2] = {3, 8};
  double *v, got[24], want[24];
  dk_tensor *base = dkt_random(t, t->dev, DK_F32, 2, s, "base", -1, 1, &v);
  dk_tensor *rows = NULL, *flat = NULL, *back = NULL, *sum = NULL;
  int i;
  if (!base) return;
  DKT_OK(t, dk_narrow(base, 0, 2, 3, &rows));
  DKT_OK(t, dk_reshape(rows, 1, rs, &flat));
  DKT_CHECK(t, dk_tensor_is_view(flat) && dk_tensor_numel(flat) == 24, "reshape of a narrow");
  DKT_CHECK(t, strstr(dk_tensor_site(flat), "test_errors.c:") != NULL, "a view records its own site: %s", dk_tensor_site(flat));
  dk_tensor_free(base);   /* the views keep the storage alive */
  DKT_OK(t, dk_reshape(flat, 2, s2, &back));
  sum = dkt_random(t, t->dev, DK_F32, 2, s2, "sum", -1, 1, NULL);
  if (!sum) return;
  DKT_OK(t, dk_add(sum, back, back));
  if (dkt_read(t, sum, got)) {
    for (i = 0; i < 24; i++) want[i] = 2 * v[16 + i];
    dkt_close(t, "rows 2..4 of a freed base, doubled", got, want, 24, 0, 1e-7);
  }
  dk_tensor_free(rows); dk_tensor_free(flat); dk_tensor_free(back); dk_tensor_free(sum);
  free(v);
}

DKT_TEST(views_reshape_rules, 0) {
  int64_t s[2] = {4, 6}, bad[2] = {5, 5}, inf[2] = {-1, 3}, inf2[2] = {-1, 5};
  dk_tensor *x = dkt_random(t, t->dev, DK_F32, 2, s, "x", -1, 1, NULL), *v = NULL, *n = NULL;
  if (!x) return;
  DKT_REFUSED(t, dk_reshape(x, 2, bad, &v), DK_ERR_SHAPE);
  DKT_MSG_HAS(t, "24 elements");
  DKT_OK(t, dk_reshape(x, 2, inf, &v));
  DKT_CHECK(t, dk_tensor_dim(v, 0) == 8 && dk_tensor_dim(v, -1) == 3, "inferred dimension");
  DKT_REFUSED(t, dk_reshape(x, 2, inf2, &n), DK_ERR_SHAPE);
  dk_tensor_free(v);
  v = NULL;
  DKT_OK(t, dk_narrow(x, 1, 1, 2, &n));
  DKT_REFUSED(t, dk_reshape(n, 1, s, &v), DK_ERR_SHAPE);
  DKT_MSG_HAS(t, "strided view");
  DKT_REFUSED(t, dk_narrow(x, 1, 5, 2, &v), DK_ERR_SHAPE);
  DKT_REFUSED(t, dk_narrow(x, 2, 0, 1, &v), DK_ERR_SHAPE);
  dk_tensor_free(n); dk_tensor_free(x);
}

DKT_TEST(tensors_create_free_10k_no_leak, 0) {
  dk_device_props p0, p1;
  int i;
  DKT_OK(t, dk_device_properties(t->dev, &p0));
  for (i = 0; i < 10000; i++) {
    int64_t s[2] = {1 + i % 7, 1 + i % 13};
    dk_tensor *x = NULL, *v = NULL;
    DKT_OK(t, dk_tensor_new(t->dev, (dk_dtype)(i % 3), 2, s, "cycle", &x));
    if (i % 3 == 0) DKT_OK(t, dk_narrow(x, 0, 0, 1, &v));
    if (i % 2) { dk_tensor_free(x); dk_tensor_free(v); }
    else { dk_tensor_free(v); dk_tensor_free(x); }
  }
  DKT_OK(t, dk_sync(t->dev));
  DKT_OK(t, dk_device_properties(t->dev, &p1));
  DKT_CHECK(t, p1.memory_used == p0.memory_used, "devkit holds %llu bytes after 10k create/free cycles, %llu before",
            (unsigned long long)p1.memory_used, (unsigned long long)p0.memory_used);
}

/* ---- embedding ids out of range --------------------------------------------- */

DKT_TEST(errors_embedding_bad_id, 0) {
  int64_t ts[2] = {10, 32}, is = 4, os[2] = {4, 32};
  int32_t ids[4] = {1, 2, 10, 3};
  dk_tensor *tab = dkt_random(t, t->dev, DK_F32, 2, ts, "tok_embd", -1, 1, NULL);
  dk_tensor *id = dkt_ids(t, t->dev, 1, &is, "prompt_ids", ids);
  dk_tensor *o = dkt_random(t, t->dev, DK_F32, 2, os, "emb", -1, 1, NULL);
  void *before;
  dk_status s;
  float tmp[128];
  if (!tab || !id || !o) return;
  before = snapshot(o);
  s = dk_embedding(o, tab, id);
  if (s == DK_OK) {
    /* a GPU sees the id only when it runs: the next sync must report it */
    s = dk_tensor_download(o, tmp, sizeof tmp);
    DKT_CHECK(t, s == DK_ERR_INVALID, "the bad id was not reported at the next sync: %s", dk_status_name(s));
  } else {
    DKT_CHECK(t, s == DK_ERR_INVALID, "bad id: %s", dk_status_name(s));
    check_untouched(t, "dk_embedding refused", o, before);
  }
  DKT_MSG_HAS(t, "10");
  DKT_MSG_HAS(t, "position 2");
  DKT_MSG_HAS(t, "tok_embd");
  /* and the device works afterwards */
  ids[2] = 9;
  DKT_OK(t, dk_tensor_upload(id, ids, sizeof ids));
  DKT_OK(t, dk_embedding(o, tab, id));
  DKT_OK(t, dk_tensor_download(o, tmp, sizeof tmp));
  free(before);
  dk_tensor_free(tab); dk_tensor_free(id); dk_tensor_free(o);
}

/* ---- transfers ----------------------------------------------------------------- */

static void transfer_all_dtypes(dkt *t, dk_device a, dk_device b) {
  dk_dtype types[6] = {DK_F32, DK_F16, DK_BF16, DK_I32, DK_Q8_0, DK_Q4_0};
  int k;
  for (k = 0; k < 6; k++) {
    int64_t s[2] = {37, 64};
    size_t nb;
    uint8_t *src, *dst;
    dk_tensor *x = NULL, *y = NULL, *z = NULL;
    int64_t i;
    DKT_OK(t, dk_tensor_new(a, types[k], 2, s, "src", &x));
    nb = dk_tensor_nbytes(x);
    src = (uint8_t *)malloc(nb);
    dst = (uint8_t *)malloc(nb);
    for (i = 0; i < (int64_t)nb; i++) src[i] = (uint8_t)(dkt_u64(t) >> 56);
    /* keep f16 scales of quantized blocks finite: any bit pattern is bytes to move */
    DKT_OK(t, dk_tensor_upload(x, src, nb));
    DKT_OK(t, dk_to(x, b, &y));
    DKT_CHECK(t, dk_device_equal(dk_tensor_device(y), b), "dk_to put it on %s", dk_device_name(dk_tensor_device(y)));
    DKT_CHECK(t, strstr(dk_tensor_site(y), "test_errors.c:") != NULL, "dk_to records its site: %s", dk_tensor_site(y));
    DKT_OK(t, dk_tensor_download(y, dst, nb));
    DKT_CHECK(t, memcmp(src, dst, nb) == 0, "dk_to %s -> %s of %s is not bit-exact", dk_device_name(a), dk_device_name(b),
              dk_dtype_name(types[k]));
    /* and back into an existing tensor */
    DKT_OK(t, dk_tensor_new(a, types[k], 2, s, "back", &z));
    DKT_OK(t, dk_copy_to(z, y));
    memset(dst, 0, nb);
    DKT_OK(t, dk_tensor_download(z, dst, nb));
    DKT_CHECK(t, memcmp(src, dst, nb) == 0, "dk_copy_to %s -> %s of %s is not bit-exact", dk_device_name(b),
              dk_device_name(a), dk_dtype_name(types[k]));
    dk_tensor_free(x); dk_tensor_free(y); dk_tensor_free(z);
    free(src); free(dst);
  }
}

DKT_TEST(transfers_between_devices_bit_exact, 0) {
  if (!t->has_dev2) { dkt_skip(t, "needs two devices of one backend"); return; }
  transfer_all_dtypes(t, t->dev, t->dev2);
  transfer_all_dtypes(t, t->dev, t->dev);
}

DKT_TEST(transfers_across_backends_bit_exact, DKT_MULTI_BACKEND) {
  int b, done = 0;
  for (b = 0; b < DK_BACKEND_COUNT; b++) {
    dk_device o;
    o.backend = (dk_backend)b;
    o.index = 0;
    if (b == (int)t->dev.backend || dk_device_count((dk_backend)b) == 0) continue;
    transfer_all_dtypes(t, t->dev, o);
    done++;
  }
  if (!done) dkt_skip(t, "needs a second backend; only %s is present", dk_backend_name(t->dev.backend));
}

/* a transfer of a view moves only the view's bytes */
DKT_TEST(transfers_views, 0) {
  int64_t s[2] = {5, 16};
  double *v, got[32];
  dk_tensor *x = dkt_random(t, t->dev, DK_F32, 2, s, "x", -1, 1, &v), *rows = NULL, *y = NULL, *cols = NULL;
  dk_device cpu;
  cpu.backend = DK_CPU;
  cpu.index = 0;
  if (!x) return;
  DKT_OK(t, dk_narrow(x, 0, 3, 2, &rows));
  DKT_OK(t, dk_to(rows, cpu, &y));
  if (dkt_read(t, y, got)) dkt_close(t, "rows 3..4 moved to cpu", got, v + 48, 32, 0, 0);
  DKT_OK(t, dk_narrow(x, 1, 0, 4, &cols));
  dk_tensor_free(y);
  y = NULL;
  DKT_REFUSED(t, dk_to(cols, cpu, &y), DK_ERR_SHAPE);
  DKT_MSG_HAS(t, "strided view");
  dk_tensor_free(x); dk_tensor_free(rows); dk_tensor_free(cols); free(v);
}

/* ---- devices -------------------------------------------------------------------- */

DKT_TEST(devices_parse, DKT_ONCE) {
  dk_device d;
  DKT_OK(t, dk_device_parse("cpu", &d));
  DKT_CHECK(t, d.backend == DK_CPU && d.index == 0, "cpu -> cpu:0");
  DKT_OK(t, dk_device_parse("cpu:1", &d));
  DKT_CHECK(t, d.index == 1, "cpu:1");
  DKT_CHECK(t, strcmp(dk_device_name(d), "cpu:1") == 0, "name %s", dk_device_name(d));
  DKT_REFUSED(t, dk_device_parse("gpu:0", &d), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "'gpu:0' is not a device");
  DKT_MSG_HAS(t, "cpu:0");      /* lists what is present */
  DKT_MSG_HAS(t, "vulkan:N");   /* and what is accepted */
  DKT_REFUSED(t, dk_device_parse("cpu:", &d), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_device_parse("cpu:x", &d), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_device_parse("cpu:1:2", &d), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_device_parse("cpu:-1", &d), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_device_parse("cpu:99", &d), DK_ERR_NO_DEVICE);
  DKT_MSG_HAS(t, "no device cpu:99");
  DKT_REFUSED(t, dk_device_parse(NULL, &d), DK_ERR_INVALID);
  if (dk_device_count(DK_CUDA) == 0) {
    DKT_REFUSED(t, dk_device_parse("cuda:0", &d), DK_ERR_NO_DEVICE);
    DKT_MSG_HAS(t, "cuda:");
  }
  if (dk_device_count(DK_VULKAN) > 0) {
    DKT_OK(t, dk_device_parse("vk:0", &d));
    DKT_CHECK(t, d.backend == DK_VULKAN, "vk:0 is vulkan");
  }
}

DKT_TEST(devices_properties_and_listing, 0) {
  dk_device_props p;
  dk_device list[64];
  int n = dk_device_list(list, 64), i, found = 0;
  DKT_OK(t, dk_device_properties(t->dev, &p));
  DKT_CHECK(t, p.name[0] != 0, "a device has a name");
  DKT_CHECK(t, p.memory_total > 0, "memory total");
  DKT_CHECK(t, p.logical_count >= 1 && p.logical_slot == 0, "logical slot %d of %d", p.logical_slot, p.logical_count);
  for (i = 0; i < n && i < 64; i++) found += dk_device_equal(list[i], t->dev);
  DKT_CHECK(t, found == 1, "the device under test is listed once");
  if (t->has_dev2) {
    dk_device_props p2;
    DKT_OK(t, dk_device_properties(t->dev2, &p2));
    DKT_CHECK(t, p2.physical_index == p.physical_index && p2.logical_slot == 1, "the second logical device");
  }
  {
    dk_device bad;
    bad.backend = t->dev.backend;
    bad.index = 1000;
    DKT_REFUSED(t, dk_device_properties(bad, &p), DK_ERR_NO_DEVICE);
  }
}

DKT_TEST(devices_op_table_matches_backend, 0) {
  /* every op is implemented for f32 on every backend; q4_0 weights in linear.
   * CUDA's issue-12 ops (dk_reduce_sum to dk_index_select) are off under
   * DEVKIT_CUDA_NEWOPS=0; dk_index_select's under DEVKIT_CUDA_GATHER=0 */
  int op, first_new = -1, last_new = -1;
  const char *e = getenv("DEVKIT_CUDA_NEWOPS"), *g = getenv("DEVKIT_CUDA_GATHER");
  int gather_on = !(g && g[0] == '0');
  for (op = 0; op < dk_op_count(); op++)
    if (!strcmp(dk_op_name(op), "dk_reduce_sum")) first_new = op;
    else if (!strcmp(dk_op_name(op), "dk_index_select")) last_new = op;
  for (op = 0; op < dk_op_count(); op++) {
    if (t->dev.backend == DK_CUDA && first_new >= 0 && op >= first_new && op <= last_new &&
        (!strcmp(dk_op_name(op), "dk_index_select") ? !gather_on : (e && e[0] == '0'))) {
      DKT_CHECK(t, !dk_op_supported(t->dev.backend, dk_op_name(op), DK_F32, 0), "%s is on without DEVKIT_CUDA_NEWOPS",
                dk_op_name(op));
      continue;
    }
    DKT_CHECK(t, dk_op_supported(t->dev.backend, dk_op_name(op), DK_F32, 0), "%s has no f32 version on %s",
              dk_op_name(op), dk_backend_name(t->dev.backend));
  }
  DKT_CHECK(t, dk_op_supported(t->dev.backend, "dk_linear", DK_Q4_0, 1), "q4_0 linear");
  DKT_CHECK(t, dk_op_supported(t->dev.backend, "dk_rmsnorm_linear", DK_Q4_0, 1), "q4_0 rmsnorm_linear");
  DKT_CHECK(t, !dk_op_supported(t->dev.backend, "dk_nonsense", DK_F32, 0), "unknown op");
}

/* ---- the error channel ------------------------------------------------------------ */

typedef struct { int calls; dk_status last; char msg[256]; } handler_log;
static void log_handler(dk_status s, const char *m, void *user) {
  handler_log *h = (handler_log *)user;
  h->calls++;
  h->last = s;
  snprintf(h->msg, sizeof h->msg, "%s", m);
}

DKT_TEST(errors_handler_and_clear, DKT_ONCE) {
  handler_log h;
  dk_device d;
  memset(&h, 0, sizeof h);
  dk_set_error_handler(log_handler, &h);
  DKT_REFUSED(t, dk_device_parse("tpu:0", &d), DK_ERR_INVALID);
  DKT_CHECK(t, h.calls == 1 && h.last == DK_ERR_INVALID && strstr(h.msg, "tpu:0"), "handler got %d calls: %s", h.calls, h.msg);
  DKT_CHECK(t, dk_last_status() == DK_ERR_INVALID, "last status");
  dk_clear_error();
  DKT_CHECK(t, dk_last_status() == DK_OK && dk_last_error()[0] == 0, "clear");
  dk_set_error_handler(NULL, NULL);
  DKT_CHECK(t, strcmp(dk_status_name(DK_ERR_DEVICE_MISMATCH), "DK_ERR_DEVICE_MISMATCH") == 0, "status names");
}

static void *thread_error(void *arg) {
  dk_device d;
  (void)arg;
  dk_device_parse("npu:3", &d);
  return strstr(dk_last_error(), "npu:3") ? (void *)1 : NULL;
}

DKT_TEST(errors_last_error_is_per_thread, DKT_ONCE) {
  pthread_t th;
  void *ret = NULL;
  dk_device d;
  dk_device_parse("abc", &d);
  pthread_create(&th, NULL, thread_error, NULL);
  pthread_join(th, &ret);
  DKT_CHECK(t, ret != NULL, "the thread saw its own error");
  DKT_CHECK(t, strstr(dk_last_error(), "'abc'") != NULL && strstr(dk_last_error(), "npu") == NULL,
            "the main thread's error was replaced: %s", dk_last_error());
}

DKT_TEST(errors_abort_on_error_env, DKT_ONCE) {
  int fd[2], st = 0;
  pid_t pid;
  char buf[2048] = "";
  ssize_t n;
  if (pipe(fd) != 0) { dkt_fail_at(t, __FILE__, __LINE__, "pipe"); return; }
  pid = fork();
  if (pid == 0) {
    dk_device d;
    close(fd[0]);
    dup2(fd[1], 2);
    setenv("DEVKIT_ABORT_ON_ERROR", "1", 1);
    dk_device_parse("qpu:1", &d);
    _exit(0);   /* not reached if it aborted */
  }
  close(fd[1]);
  n = read(fd[0], buf, sizeof buf - 1);
  if (n > 0) buf[n] = 0;
  close(fd[0]);
  waitpid(pid, &st, 0);
  DKT_CHECK(t, WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "DEVKIT_ABORT_ON_ERROR=1 should abort");
  DKT_CHECK(t, strstr(buf, "qpu:1") != NULL, "and print the message first: %s", buf);
}

/* ---- threads: two devices at once, and one device shared ------------------------ */

typedef struct { dk_device dev; int iters; int ok; double result[64]; char err[512]; } work;

static void *thread_work(void *arg) {
  work *w = (work *)arg;
  int64_t s[2] = {8, 64}, ws[2] = {64, 64};
  float xv[512], wv[4096], out[512];
  dk_tensor *x = NULL, *wt = NULL, *y = NULL;
  int i, it;
  w->ok = 0;
  for (i = 0; i < 512; i++) xv[i] = (float)((i * 37) % 17) / 17.0f - 0.5f;
  for (i = 0; i < 4096; i++) wv[i] = (float)((i * 13) % 29) / 29.0f - 0.5f;
  if (dk_tensor_new(w->dev, DK_F32, 2, s, "x", &x) || dk_tensor_new(w->dev, DK_F32, 2, ws, "w", &wt) ||
      dk_tensor_new(w->dev, DK_F32, 2, s, "y", &y))
    goto done;
  if (dk_tensor_upload(x, xv, sizeof xv) || dk_tensor_upload(wt, wv, sizeof wv)) goto done;
  for (it = 0; it < w->iters; it++) {
    if (dk_linear(y, x, wt, NULL) || dk_rmsnorm(x, y, NULL, 1e-5f)) goto done;
  }
  if (dk_tensor_download(x, out, sizeof out)) goto done;
  for (i = 0; i < 64; i++) w->result[i] = out[i];
  w->ok = 1;
done:
  if (!w->ok) snprintf(w->err, sizeof w->err, "%s", dk_last_error());   /* per thread: keep it for the report */
  dk_tensor_free(x); dk_tensor_free(wt); dk_tensor_free(y);
  return NULL;
}

DKT_TEST(threads_two_devices_and_shared_device, 0) {
  work solo, a, b, c;
  pthread_t ta, tb, tc;
  memset(&solo, 0, sizeof solo);
  solo.dev = t->dev;
  solo.iters = 50;
  thread_work(&solo);
  DKT_CHECK(t, solo.ok, "single run failed: %s", dk_last_error());
  a = solo; b = solo; c = solo;
  b.dev = t->dev2;   /* a second device if there is one, else the same */
  pthread_create(&ta, NULL, thread_work, &a);
  pthread_create(&tb, NULL, thread_work, &b);
  pthread_create(&tc, NULL, thread_work, &c);   /* shares a's device */
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  pthread_join(tc, NULL);
  DKT_CHECK(t, a.ok && b.ok && c.ok, "a thread failed: %s", !a.ok ? a.err : !b.ok ? b.err : c.err);
  DKT_CHECK(t, memcmp(a.result, solo.result, sizeof solo.result) == 0 && memcmp(b.result, solo.result, sizeof solo.result) == 0 &&
                   memcmp(c.result, solo.result, sizeof solo.result) == 0,
            "concurrent results differ from the single-threaded run");
}

/* ---- the placement check ---------------------------------------------------- */

DKT_TEST(placement_check_finds_every_misplaced_tensor, 0) {
  enum { N = 12 };
  dk_placement items[N];
  dk_tensor *ts[N];
  int64_t s[2] = {4, 8};
  int i, nbad = -1, bad[N];
  char name[32];
  if (!t->has_dev2) { dkt_skip(t, "needs two devices of one backend"); return; }
  for (i = 0; i < N; i++) {
    /* tensors 3, 7 and 8 "moved by mistake" */
    int misplaced = i == 3 || i == 7 || i == 8;
    snprintf(name, sizeof name, "blk.%d.weight", i);
    ts[i] = dkt_random(t, misplaced ? t->dev2 : t->dev, DK_F32, 2, s, name, -1, 1, NULL);
    if (!ts[i]) return;
    items[i].tensor = ts[i];
    items[i].expected = t->dev;
  }
  DKT_REFUSED(t, dk_check_placement(items, N, &nbad, bad), DK_ERR_DEVICE_MISMATCH);
  DKT_CHECK(t, nbad == 3 && bad[0] == 3 && bad[1] == 7 && bad[2] == 8, "found %d misplaced", nbad);
  DKT_MSG_HAS(t, "3 of 12 tensors");
  DKT_MSG_HAS(t, "'blk.7.weight'");
  DKT_MSG_HAS(t, "test_errors.c:");
  DKT_CHECK(t, strstr(dk_last_error(), "'blk.2.weight'") == NULL, "a well-placed tensor was listed:\n%s", dk_last_error());
  /* everything in place */
  for (i = 0; i < N; i++) items[i].expected = dk_tensor_device(ts[i]);
  DKT_OK(t, dk_check_placement(items, N, &nbad, NULL));
  DKT_CHECK(t, nbad == 0, "none misplaced");
  for (i = 0; i < N; i++) dk_tensor_free(ts[i]);
}
