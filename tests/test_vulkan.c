/* tests/test_vulkan.c — what only the Vulkan backend has: tensors larger
 * than one binding or one allocation, errors found on the device and
 * reported at the next sync, long batches, frees while work is in flight,
 * out-of-memory recovery, and the fallbacks for missing device features.
 * Some tests reopen devkit with DEVKIT_VULKAN_* settings that make the
 * device's limits small, so the splitting paths run on small tensors too. */
#include "test.h"
#include <dirent.h>
#include <unistd.h>   /* rmdir */

#define VK_ONLY(t)                                                             \
  do {                                                                         \
    if ((t)->dev.backend != DK_VULKAN) { dkt_skip((t), "vulkan only"); return; } \
  } while (0)

/* dk_shutdown, set one environment variable (NULL unsets), dk_init */
static int reopen(dkt *t, const char *name, const char *value) {
  dk_shutdown();
  if (value) setenv(name, value, 1);
  else unsetenv(name);
  dk_init();
  if (dk_device_count(DK_VULKAN) < 1) {
    dkt_fail_at(t, __FILE__, __LINE__, "no Vulkan device after reopening with %s=%s: %s", name, value ? value : "",
                dk_backend_note(DK_VULKAN));
    return 0;
  }
  return 1;
}

/* an exactly representable value for element (r, j) of a big table */
static float table_value(int64_t r, int64_t j) { return (float)((r * 37 + j * 11) % 509 - 254) / 128.0f; }

static dk_tensor *big_table(dkt *t, dk_dtype dt, int64_t V, int64_t D, const char *name) {
  int64_t s[2] = {V, D}, r, j;
  float *f = (float *)malloc((size_t)(V * D) * sizeof(float));
  void *enc;
  size_t nb;
  dk_tensor *x = NULL;
  if (!f) { dkt_fail_at(t, __FILE__, __LINE__, "no host memory"); return NULL; }
  for (r = 0; r < V; r++)
    for (j = 0; j < D; j++) f[r * D + j] = table_value(r, j);
  enc = malloc(dk_dtype_block_bytes(dt) * (size_t)(V * D) / (size_t)dk_dtype_block(dt));
  nb = dk_quantize(dt, f, V * D, enc);
  free(f);
  if (dk_tensor_new(t->dev, dt, 2, s, name, &x) != DK_OK || dk_tensor_upload(x, enc, nb) != DK_OK) {
    dkt_fail_at(t, __FILE__, __LINE__, "big table %s: %s", name, dk_last_error());
    dk_tensor_free(x);
    x = NULL;
  }
  free(enc);
  return x;
}

/* what the device holds for row r of a table made by big_table */
static void table_row(dk_dtype dt, int64_t r, int64_t D, double *out) {
  float *f = (float *)calloc((size_t)D, sizeof(float)), *g = (float *)calloc((size_t)D, sizeof(float));
  void *enc = malloc((size_t)D * 4);
  int64_t j;
  for (j = 0; j < D; j++) f[j] = table_value(r, j);
  dk_quantize(dt, f, D, enc);
  dk_dequantize(dt, enc, D, g);
  for (j = 0; j < D; j++) out[j] = g[j];
  free(f); free(g); free(enc);
}

static void check_embedding(dkt *t, dk_tensor *tab, const int32_t *ids, int64_t n, dk_dtype odt, const char *what) {
  int64_t D = dk_tensor_dim(tab, 1), is = n, os[2] = {n, D}, i;
  double *got = dkt_alloc(n * D), *want = dkt_alloc(n * D);
  dk_tensor *id = dkt_ids(t, t->dev, 1, &is, "ids", ids), *o = NULL;
  if (id && dk_tensor_new(t->dev, odt, 2, os, "rows", &o) == DK_OK) {
    dk_status s = dk_embedding(o, tab, id);
    if (s != DK_OK) dkt_fail_at(t, __FILE__, __LINE__, "%s: %s", what, dk_last_error());
    else if (dkt_read(t, o, got)) {
      for (i = 0; i < n; i++) table_row(dk_tensor_dtype(tab), ids[i], D, want + i * D);
      dkt_round_to(odt, want, n * D);
      dkt_close(t, what, got, want, n * D, 0, 0);
    }
  }
  dk_tensor_free(id); dk_tensor_free(o); free(got); free(want);
}

/* out = x . W^T with W a table made by big_table; x values in [-1, 1] */
static void check_linear(dkt *t, dk_tensor *w, int64_t M, dk_dtype xdt, const char *what) {
  int64_t N = dk_tensor_dim(w, 0), K = dk_tensor_dim(w, 1), xs[2] = {M, K}, os[2] = {M, N}, m, n, k;
  double *xv, *got = dkt_alloc(M * N), *want = dkt_alloc(M * N), *row = dkt_alloc(K);
  dk_tensor *x = dkt_random(t, t->dev, xdt, 2, xs, "x", -1, 1, &xv), *o = NULL;
  if (x && dk_tensor_new(t->dev, xdt, 2, os, "y", &o) == DK_OK) {
    dk_status s = dk_linear(o, x, w, NULL);
    if (s != DK_OK) dkt_fail_at(t, __FILE__, __LINE__, "%s: %s", what, dk_last_error());
    else if (dkt_read(t, o, got)) {
      for (n = 0; n < N; n++) {
        table_row(dk_tensor_dtype(w), n, K, row);
        for (m = 0; m < M; m++) {
          double acc = 0;
          for (k = 0; k < K; k++) acc += xv[m * K + k] * row[k];
          want[m * N + n] = acc;
        }
      }
      dkt_close(t, what, got, want, M * N, dkt_tol(xdt, K) * sqrt((double)K) * 4, dkt_tol(xdt, K));
    }
  }
  dk_tensor_free(x); dk_tensor_free(o); free(xv); free(got); free(want); free(row);
}

/* ---- beyond one binding: the real limit (128 MiB on lavapipe) -------------- */

DKT_TEST(vulkan_table_beyond_max_binding, 0) {
  int64_t V = 66000, D = 512;   /* 135 MB of f32 */
  int32_t ids[6] = {0, 65999, 32768, 65536, 1, 40000};
  dk_tensor *tab;
  VK_ONLY(t);
  tab = big_table(t, DK_F32, V, D, "tok_embd");
  if (!tab) return;
  DKT_CHECK(t, dk_tensor_nbytes(tab) > ((size_t)128 << 20), "the table must exceed 128 MiB");
  check_embedding(t, tab, ids, 6, DK_F32, "embedding from a >128 MiB f32 table");
  check_linear(t, tab, 1, DK_F32, "linear (decode) with a >128 MiB f32 weight");
  check_linear(t, tab, 9, DK_F32, "linear (prompt) with a >128 MiB f32 weight");
  dk_tensor_free(tab);
}

/* ---- the same splitting with a pretend 256 KiB limit, every dtype ------------ */

DKT_TEST(vulkan_binding_windows, 0) {
  dk_dtype wd[5] = {DK_F32, DK_F16, DK_BF16, DK_Q8_0, DK_Q4_0};
  int32_t ids[600];
  int k, i;
  VK_ONLY(t);
  if (!reopen(t, "DEVKIT_VULKAN_MAX_BINDING", "262144")) return;
  for (i = 0; i < 600; i++) ids[i] = (int32_t)((i * 7919) % 3000);
  for (k = 0; k < 5; k++) {
    char what[96];
    dk_tensor *w = big_table(t, wd[k], 3000, 512, "w");
    if (!w) return;
    snprintf(what, sizeof what, "embedding, %s table in windows", dk_dtype_name(wd[k]));
    check_embedding(t, w, ids, 600, DK_F32, what);
    snprintf(what, sizeof what, "linear M=1, %s weight in windows", dk_dtype_name(wd[k]));
    check_linear(t, w, 1, DK_F32, what);
    snprintf(what, sizeof what, "linear M=40, %s weight in windows", dk_dtype_name(wd[k]));
    check_linear(t, w, 40, k % 2 ? DK_F16 : DK_F32, what);
    dk_tensor_free(w);
  }
  {
    /* an op that does not split says so, naming the tensor */
    int64_t s = 100000;
    dk_tensor *x = dkt_random(t, t->dev, DK_F32, 1, &s, "activations", -1, 1, NULL);
    if (!x) return;
    DKT_REFUSED(t, dk_relu(x, x), DK_ERR_UNSUPPORTED);
    DKT_MSG_HAS(t, "activations");
    DKT_MSG_HAS(t, "maxStorageBufferRange");
    DKT_MSG_HAS(t, "dk_relu: ");            /* the op and its operand table (issue 11) */
    DKT_MSG_HAS(t, "\n  out 'activations'");
    dk_tensor_free(x);
  }
}

/* ---- row ops and elementwise ops in pieces, against the CPU backend ------------------ */

typedef dk_status (*op_runner)(dk_tensor *o, dk_tensor *x, dk_tensor *aux);

static dk_status run_softmax(dk_tensor *o, dk_tensor *x, dk_tensor *aux) { (void)aux; return dk_softmax_masked(o, x, 0.5f, 5); }
static dk_status run_rmsnorm(dk_tensor *o, dk_tensor *x, dk_tensor *aux) { return dk_rmsnorm(o, x, aux, 1e-5f); }
static dk_status run_silu(dk_tensor *o, dk_tensor *x, dk_tensor *aux) { (void)aux; return dk_silu(o, x); }
static dk_status run_mul(dk_tensor *o, dk_tensor *x, dk_tensor *aux) { return dk_mul(o, x, aux); }
static dk_status run_swiglu(dk_tensor *o, dk_tensor *x, dk_tensor *aux) { return dk_swiglu(o, x, aux); }
static dk_status run_copy(dk_tensor *o, dk_tensor *x, dk_tensor *aux) { (void)aux; return dk_copy(o, x); }
static dk_status run_argmax(dk_tensor *o, dk_tensor *x, dk_tensor *aux) { (void)aux; return dk_argmax(o, x); }
static dk_status run_sample(dk_tensor *o, dk_tensor *x, dk_tensor *aux) { (void)aux; return dk_sample(o, x, 0.8f, 20, 0.9f, 77); }
static dk_status run_rope(dk_tensor *o, dk_tensor *x, dk_tensor *aux) { return dk_rope(o, x, aux, 64, 10000.0f, DK_ROPE_NEOX); }

/* op on vulkan and on cpu:0 with the same inputs; the results must agree */
static void same_as_cpu(dkt *t, const char *what, op_runner fn, dk_dtype odt, int nd, const int64_t *xs, int ond,
                        const int64_t *os, int aux_kind, int64_t aux_n, double tol) {
  dk_device cpu;
  dk_tensor *xc = NULL, *ac = NULL, *oc = NULL, *xv = NULL, *av = NULL, *ov = NULL;
  int64_t n = 1, i;
  double *got, *want;
  cpu.backend = DK_CPU;
  cpu.index = 0;
  for (i = 0; i < ond; i++) n *= os[i];
  got = dkt_alloc(n);
  want = dkt_alloc(n);
  xc = dkt_random(t, cpu, DK_F32, nd, xs, "x", -4, 4, NULL);
  if (aux_kind == 1) ac = dkt_random(t, cpu, DK_F32, 1, &aux_n, "w", -2, 2, NULL);
  if (aux_kind == 2) ac = dkt_random(t, cpu, DK_F32, nd, xs, "b", -2, 2, NULL);
  if (aux_kind == 3) {
    int32_t *pos = (int32_t *)malloc(sizeof(int32_t) * (size_t)aux_n);
    for (i = 0; i < aux_n; i++) pos[i] = (int32_t)(i * 37 % 4000);
    ac = dkt_ids(t, cpu, 1, &aux_n, "positions", pos);
    free(pos);
  }
  if (xc && (aux_kind == 0 || ac) && dk_tensor_new(cpu, odt, ond, os, "out", &oc) == DK_OK &&
      dk_to(xc, t->dev, &xv) == DK_OK && (!ac || dk_to(ac, t->dev, &av) == DK_OK) &&
      dk_tensor_new(t->dev, odt, ond, os, "out", &ov) == DK_OK) {
    dk_status s = fn(ov, xv, av);
    if (s != DK_OK) dkt_fail_at(t, __FILE__, __LINE__, "%s on vulkan: %s", what, dk_last_error());
    else if (fn(oc, xc, ac) != DK_OK) dkt_fail_at(t, __FILE__, __LINE__, "%s on cpu: %s", what, dk_last_error());
    else if (dkt_read(t, ov, got) && dkt_read(t, oc, want)) dkt_close(t, what, got, want, n, tol, tol);
  } else {
    dkt_fail_at(t, __FILE__, __LINE__, "%s: setting up: %s", what, dk_last_error());
  }
  dk_tensor_free(xc); dk_tensor_free(ac); dk_tensor_free(oc);
  dk_tensor_free(xv); dk_tensor_free(av); dk_tensor_free(ov);
  free(got); free(want);
}

DKT_TEST(vulkan_ops_in_pieces, 0) {
  int64_t xs[3] = {2, 48, 320}, rows[1] = {96}, x2[2] = {96, 320}, rs[3] = {64, 4, 128};
  VK_ONLY(t);
  /* 120 KB tensors against a 64 KiB binding: every op below runs in pieces */
  if (!reopen(t, "DEVKIT_VULKAN_MAX_BINDING", "65536")) return;
  same_as_cpu(t, "masked softmax in pieces", run_softmax, DK_F32, 3, xs, 3, xs, 0, 0, 1e-6);
  same_as_cpu(t, "rmsnorm in pieces", run_rmsnorm, DK_F32, 2, x2, 2, x2, 1, 320, 1e-5);
  same_as_cpu(t, "silu in pieces", run_silu, DK_F32, 2, x2, 2, x2, 0, 0, 1e-6);
  same_as_cpu(t, "mul in pieces", run_mul, DK_F32, 2, x2, 2, x2, 2, 0, 1e-6);
  same_as_cpu(t, "swiglu in pieces", run_swiglu, DK_F32, 2, x2, 2, x2, 2, 0, 1e-6);
  same_as_cpu(t, "f32 -> f16 copy in pieces", run_copy, DK_F16, 2, x2, 2, x2, 0, 0, 0);
  same_as_cpu(t, "argmax in pieces", run_argmax, DK_I32, 2, x2, 1, rows, 0, 0, 0);
  same_as_cpu(t, "sample in pieces", run_sample, DK_I32, 2, x2, 1, rows, 0, 0, 0);
  same_as_cpu(t, "rope in pieces", run_rope, DK_F32, 3, rs, 3, rs, 3, 64, 2e-3);
}

/* ---- beyond one allocation: overlapping segments ------------------------------- */

static void segmented_round(dkt *t) {
  int64_t V = 25000, D = 1000;   /* 100 MB of f32 over 32 MiB allocations; rows straddle */
  int32_t ids[5] = {0, 24999, 4194, 4195, 12583};
  dk_tensor *tab = big_table(t, DK_F32, V, D, "big"), *cpu = NULL, *other = NULL, *same = NULL;
  dk_device c0;
  size_t nb;
  float *a = NULL, *b = NULL;
  if (!tab) return;
  nb = dk_tensor_nbytes(tab);
  a = (float *)malloc(nb);
  b = (float *)malloc(nb);
  /* download: bit-exact, across segment boundaries */
  DKT_OK(t, dk_tensor_download(tab, a, nb));
  {
    int64_t r, j, bad = 0;
    for (r = 0; r < V; r++)
      for (j = 0; j < D; j++) bad += a[r * D + j] != table_value(r, j);
    DKT_CHECK(t, bad == 0, "%lld values differ after upload/download of a segmented tensor", (long long)bad);
  }
  check_embedding(t, tab, ids, 5, DK_F16, "embedding from a segmented table");
  check_linear(t, tab, 2, DK_F32, "linear with a segmented weight");
  /* to the CPU, to the other logical device, and a device-side copy */
  c0.backend = DK_CPU;
  c0.index = 0;
  DKT_OK(t, dk_to(tab, c0, &cpu));
  DKT_OK(t, dk_tensor_download(cpu, b, nb));
  DKT_CHECK(t, memcmp(a, b, nb) == 0, "dk_to cpu of a segmented tensor is not bit-exact");
  if (t->has_dev2) {
    DKT_OK(t, dk_to(tab, t->dev2, &other));
    memset(b, 0, nb);
    DKT_OK(t, dk_tensor_download(other, b, nb));
    DKT_CHECK(t, memcmp(a, b, nb) == 0, "dk_to vulkan:1 of a segmented tensor is not bit-exact");
  }
  {
    int64_t s[2] = {V, D};
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, s, "copy", &same));
    DKT_OK(t, dk_copy(same, tab));
    memset(b, 0, nb);
    DKT_OK(t, dk_tensor_download(same, b, nb));
    DKT_CHECK(t, memcmp(a, b, nb) == 0, "dk_copy of a segmented tensor is not bit-exact");
  }
  /* ops that cannot read it in pieces refuse, naming it */
  DKT_REFUSED(t, dk_relu(same, same), DK_ERR_UNSUPPORTED);
  DKT_MSG_HAS(t, "copy");
  dk_tensor_free(tab); dk_tensor_free(cpu); dk_tensor_free(other); dk_tensor_free(same);
  free(a); free(b);
}

DKT_TEST(vulkan_tensor_beyond_max_allocation, 0) {
  VK_ONLY(t);
  if (!reopen(t, "DEVKIT_VULKAN_MAX_ALLOC", "33554432")) return;
  segmented_round(t);
  /* again through the staging ring instead of mapped memory */
  if (!reopen(t, "DEVKIT_VULKAN_DISABLE", "direct")) return;
  segmented_round(t);
}

/* ---- errors found on the device ------------------------------------------------- */

DKT_TEST(vulkan_embedding_error_at_next_sync, 0) {
  int64_t ts[2] = {50, 64}, is = 8, os[2] = {8, 64}, n = 64;
  int32_t ids[8] = {3, 4, 5, -7, 6, 99, 50, 1};
  dk_tensor *tab, *id, *o, *x;
  float tmp[512];
  int i;
  VK_ONLY(t);
  tab = dkt_random(t, t->dev, DK_Q4_0, 2, ts, "tok_embd", -1, 1, NULL);
  id = dkt_ids(t, t->dev, 1, &is, "batch_ids", ids);
  o = dkt_random(t, t->dev, DK_F32, 2, os, "emb", -1, 1, NULL);
  x = dkt_random(t, t->dev, DK_F32, 1, &n, "x", -1, 1, NULL);
  if (!tab || !id || !o || !x) return;
  DKT_OK(t, dk_embedding(o, tab, id));   /* enqueued: the ids are on the device */
  for (i = 0; i < 300; i++) DKT_OK(t, dk_add(x, x, x));   /* more work, past one batch */
  DKT_REFUSED(t, dk_sync(t->dev), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "-7");                  /* the first bad id, by position */
  DKT_MSG_HAS(t, "position 3");
  DKT_MSG_HAS(t, "batch_ids");
  DKT_MSG_HAS(t, "tok_embd");
  DKT_MSG_HAS(t, "50 rows");
  /* reported once; the device keeps working */
  DKT_OK(t, dk_tensor_download(o, tmp, sizeof tmp));
  ids[3] = 0; ids[5] = 1; ids[6] = 49;
  DKT_OK(t, dk_tensor_upload(id, ids, sizeof ids));
  DKT_OK(t, dk_embedding(o, tab, id));
  DKT_OK(t, dk_tensor_download(o, tmp, sizeof tmp));
  /* and through a download of an unrelated tensor */
  ids[7] = 50;
  DKT_OK(t, dk_tensor_upload(id, ids, sizeof ids));
  DKT_OK(t, dk_embedding(o, tab, id));
  DKT_REFUSED(t, dk_tensor_download(x, tmp, 64 * sizeof(float)), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "position 7");
  dk_tensor_free(tab); dk_tensor_free(id); dk_tensor_free(o); dk_tensor_free(x);
}

/* ---- batching, ordering, frees in flight ------------------------------------------ */

DKT_TEST(vulkan_thousand_ops_one_sync, 0) {
  int64_t n = 1000, i;
  double *av, *bv, got[1000], want[1000];
  dk_tensor *a, *b;
  int k;
  VK_ONLY(t);
  a = dkt_random(t, t->dev, DK_F32, 1, &n, "acc", -1, 1, &av);
  b = dkt_random(t, t->dev, DK_F32, 1, &n, "step", -1e-3, 1e-3, &bv);
  if (!a || !b) return;
  for (k = 0; k < 1000; k++) DKT_OK(t, dk_add(a, a, b));
  if (dkt_read(t, a, got)) {
    for (i = 0; i < n; i++) {
      float f = (float)av[i];
      for (k = 0; k < 1000; k++) f = f + (float)bv[i];
      want[i] = f;
    }
    dkt_close(t, "1000 dependent adds, one sync", got, want, n, 0, 0);
  }
  dk_tensor_free(a); dk_tensor_free(b); free(av); free(bv);
}

/* an upload lands between the ops recorded before and after it */
DKT_TEST(vulkan_upload_ordered_with_ops, 0) {
  int64_t n = 64, i;
  float one[64], five[64], y[64], z[64];
  dk_tensor *x = NULL, *ya = NULL, *za = NULL;
  VK_ONLY(t);
  for (i = 0; i < n; i++) { one[i] = 1.0f + (float)i; five[i] = 5.0f * (float)i; }
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 1, &n, "x", &x));
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 1, &n, "y", &ya));
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 1, &n, "z", &za));
  DKT_OK(t, dk_tensor_upload(x, one, sizeof one));
  DKT_OK(t, dk_add(ya, x, x));              /* still pending */
  DKT_OK(t, dk_tensor_upload(x, five, sizeof five));
  DKT_OK(t, dk_add(za, x, x));
  DKT_OK(t, dk_tensor_download(ya, y, sizeof y));
  DKT_OK(t, dk_tensor_download(za, z, sizeof z));
  for (i = 0; i < n; i++) {
    DKT_CHECK(t, y[i] == 2 * one[i], "y[%lld] = %g saw the later upload", (long long)i, y[i]);
    DKT_CHECK(t, z[i] == 2 * five[i], "z[%lld] = %g missed the upload", (long long)i, z[i]);
    if (t->failures) break;
  }
  dk_tensor_free(x); dk_tensor_free(ya); dk_tensor_free(za);
}

/* freeing a tensor that pending work reads: its memory must not be reused early */
DKT_TEST(vulkan_free_while_in_flight, 0) {
  int64_t n = 1 << 16, i;
  double *av, *got, *want;
  float *junk;
  dk_tensor *a, *b = NULL;
  int round;
  VK_ONLY(t);
  a = dkt_random(t, t->dev, DK_F32, 1, &n, "a", -1, 1, &av);
  if (!a) return;
  got = dkt_alloc(n);
  want = dkt_alloc(n);
  junk = (float *)malloc((size_t)n * sizeof(float));
  for (i = 0; i < n; i++) junk[i] = 1e30f;
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 1, &n, "b", &b));
  for (round = 0; round < 3; round++) DKT_OK(t, dk_exp(b, a));
  dk_tensor_free(a);   /* still read by the pending exps */
  for (round = 0; round < 8; round++) {
    dk_tensor *c = NULL;
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 1, &n, "reuse", &c));
    DKT_OK(t, dk_tensor_upload(c, junk, (size_t)n * sizeof(float)));
    dk_tensor_free(c);
  }
  if (dkt_read(t, b, got)) {
    for (i = 0; i < n; i++) want[i] = exp(av[i]);
    dkt_close(t, "exp of a tensor freed while in flight", got, want, n, 1e-6, 1e-6);
  }
  dk_tensor_free(b); free(av); free(got); free(want); free(junk);
}

/* ---- out of memory ------------------------------------------------------------------- */

DKT_TEST(vulkan_fill_memory_then_recover, 0) {
  dk_tensor *held[64];
  int64_t s = (int64_t)64 << 20, small = 4096;   /* 256 MiB of f32 each */
  int n = 0, i;
  dk_status st = DK_OK;
  dk_device_props p;
  VK_ONLY(t);
  DKT_OK(t, dk_device_properties(t->dev, &p));
  if (p.memory_total > ((uint64_t)16 << 30)) { dkt_skip(t, "a device this large takes too long to fill"); return; }
  while (n < 64 && (st = dk_tensor_new(t->dev, DK_F32, 1, &s, "filler", &held[n])) == DK_OK) n++;
  DKT_CHECK(t, st == DK_ERR_OUT_OF_MEMORY, "filling the device ended with %s", dk_status_name(st));
  DKT_MSG_HAS(t, "filler");
  DKT_MSG_HAS(t, "vulkan:0");
  DKT_MSG_HAS(t, "268435456 bytes");
  for (i = 0; i < n; i++) dk_tensor_free(held[i]);
  {
    double *v, got[4096], want[4096];
    dk_tensor *x = dkt_random(t, t->dev, DK_F32, 1, &small, "after", -2, 2, &v), *y = NULL;
    if (!x) return;
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 1, &s, "big_again", &y));   /* the memory came back */
    dk_tensor_free(y);
    DKT_OK(t, dk_silu(x, x));
    if (dkt_read(t, x, got)) {
      for (i = 0; i < 4096; i++) want[i] = v[i] / (1 + exp(-v[i]));
      dkt_close(t, "silu after running out of memory", got, want, 4096, 1e-6, 1e-6);
    }
    dk_tensor_free(x);
    free(v);
  }
}

/* ---- the pipeline cache ------------------------------------------------------------------ */

/* one op on the device (makes pipelines); 1 on success */
static int cache_op(dkt *t) {
  int64_t s[2] = {8, 64};
  double *av = NULL, *bv = NULL;
  dk_tensor *a = dkt_random(t, t->dev, DK_F32, 2, s, "a", -1, 1, &av);
  dk_tensor *b = dkt_random(t, t->dev, DK_F32, 2, s, "b", -1, 1, &bv);
  dk_tensor *o = dkt_random(t, t->dev, DK_F32, 2, s, "o", -1, 1, NULL);
  float got[8 * 64];
  int ok = a && b && o && dk_add(o, a, b) == DK_OK && dk_tensor_download(o, got, sizeof got) == DK_OK &&
           fabs(got[9] - (av[9] + bv[9])) < 1e-6;
  dk_tensor_free(a); dk_tensor_free(b); dk_tensor_free(o);
  free(av); free(bv);
  return ok;
}

/* the folder's one cache file, its header checked (size >= 32, version 1) */
static int cache_file(const char *dir, char *path, size_t cap) {
  DIR *dp = opendir(dir);
  struct dirent *e;
  FILE *f;
  uint32_t h[2] = {0, 0};
  int n = 0;
  if (!dp) return -1;
  while ((e = readdir(dp)) != NULL) {
    if (e->d_name[0] == '.') continue;
    if (!strncmp(e->d_name, "vulkan-", 7) && strstr(e->d_name, ".bin")) { snprintf(path, cap, "%s/%s", dir, e->d_name); n++; }
    else n += 100;   /* anything else (a temporary left over) is a failure */
  }
  closedir(dp);
  if (n != 1) return n;
  if (!(f = fopen(path, "rb"))) return -1;
  n = fread(h, 4, 2, f) == 2 && h[0] >= 32 && h[1] == 1 ? 1 : -2;
  fclose(f);
  return n;
}

/* pipelines are saved at close into DEVKIT_VULKAN_CACHE's folder, read at
 * open, a file of another device or garbage is ignored (and replaced), and
 * =off writes nothing */
DKT_TEST(vulkan_pipeline_cache, 0) {
  char dir[] = "/tmp/dkt_vkcacheXXXXXX", path[1024], cmd[1200];
  FILE *f;
  int n;
  VK_ONLY(t);
  if (!mkdtemp(dir)) { dkt_fail_at(t, __FILE__, __LINE__, "mkdtemp failed"); return; }
  if (!reopen(t, "DEVKIT_VULKAN_CACHE", dir)) return;
  DKT_CHECK(t, cache_op(t), "an op with a cache folder failed: %s", dk_last_error());
  if (!reopen(t, "DEVKIT_VULKAN_CACHE", dir)) return;   /* closing saves */
  n = cache_file(dir, path, sizeof path);
  DKT_CHECK(t, n == 1, "after a run: %d cache files (or a bad header) in %s, want 1", n, dir);
  DKT_CHECK(t, cache_op(t), "an op with the cache loaded failed: %s", dk_last_error());
  if (n == 1 && (f = fopen(path, "r+b")) != NULL) {
    /* a header naming another device: ignored, then replaced at close */
    uint32_t bad[8] = {32, 1, 0xdead, 0xbeef, 1, 2, 3, 4};
    fwrite(bad, 4, 8, f);
    fclose(f);
  }
  if (!reopen(t, "DEVKIT_VULKAN_CACHE", dir)) return;
  DKT_CHECK(t, cache_op(t), "an op after a foreign cache file failed: %s", dk_last_error());
  if (!reopen(t, "DEVKIT_VULKAN_CACHE", dir)) return;
  n = cache_file(dir, path, sizeof path);
  DKT_CHECK(t, n == 1, "after a foreign file: %d cache files (or a bad header), want 1 rewritten", n);
  if ((f = fopen(path, "rb")) != NULL) {
    uint32_t h[4] = {0, 0, 0, 0};
    DKT_CHECK(t, fread(h, 4, 4, f) == 4 && h[2] != 0xdead, "the foreign cache file was not replaced");
    fclose(f);
  }
  snprintf(cmd, sizeof cmd, "rm -f %s/vulkan-*.bin", dir);
  DKT_CHECK(t, system(cmd) == 0, "%s failed", cmd);
  if (!reopen(t, "DEVKIT_VULKAN_CACHE", "off")) return;
  DKT_CHECK(t, cache_op(t), "an op with the cache off failed: %s", dk_last_error());
  reopen(t, "DEVKIT_VULKAN_CACHE", NULL);
  n = cache_file(dir, path, sizeof path);
  DKT_CHECK(t, n == 0, "DEVKIT_VULKAN_CACHE=off wrote %d files into %s", n, dir);
  rmdir(dir);
}

/* ---- properties ------------------------------------------------------------------------ */

DKT_TEST(vulkan_properties, 0) {
  dk_device_props p, q;
  VK_ONLY(t);
  DKT_OK(t, dk_device_properties(t->dev, &p));
  DKT_CHECK(t, p.name[0] && p.vendor[0] && p.driver[0], "name '%s' vendor '%s' driver '%s'", p.name, p.vendor, p.driver);
  DKT_CHECK(t, p.has_uuid, "Vulkan devices have a deviceUUID");
  DKT_CHECK(t, p.memory_total > 0 && p.memory_free <= p.memory_total, "memory %llu free of %llu",
            (unsigned long long)p.memory_free, (unsigned long long)p.memory_total);
  DKT_CHECK(t, p.subgroup_size > 0 && (p.subgroup_size & (p.subgroup_size - 1)) == 0, "subgroup size %d",
            p.subgroup_size);
  if (strstr(p.name, "llvmpipe")) DKT_CHECK(t, p.is_software, "lavapipe is a software device");
  if (t->has_dev2) {
    DKT_OK(t, dk_device_properties(t->dev2, &q));
    DKT_CHECK(t, memcmp(p.uuid, q.uuid, 16) == 0 && p.physical_index == q.physical_index,
              "two logical devices on one GPU share its UUID and physical index");
    DKT_CHECK(t, p.logical_slot == 0 && q.logical_slot == 1 && q.logical_count == 2, "slots %d %d of %d",
              p.logical_slot, q.logical_slot, q.logical_count);
  }
}

/* ---- both linear strategies: rows of w per lane, 8 rows of x at a time (CPU
 * devices), and K split over a subgroup for decode with the tiled kernel for
 * prompts (GPUs); M = 37 takes the prompt path of each ---- */

static void decode_kernels_round(dkt *t, int64_t kf, int64_t kq, int64_t kk, int64_t N) {
  dk_dtype wd[13] = {DK_F32, DK_F16, DK_BF16, DK_Q8_0, DK_Q4_0, DK_Q4_1, DK_Q5_0, DK_Q5_1,
                     DK_Q2_K, DK_Q3_K, DK_Q4_K, DK_Q5_K, DK_Q6_K};
  /* many rows only in the row kernel's reach (M <= 8): the reference's time */
  int64_t Ms[4] = {1, 3, 8, 37}, nm = N > 1000 ? 2 : 4;
  int k, m;
  for (k = 0; k < (kk ? 13 : 8); k++) {
    /* K = 196 (float) leaves a tail past the 8-wide loads, kq = 288 (nine
     * blocks) rows off the 16-byte grid and one block past the eight-block
     * chunks; kk the K of the 256-value formats (0: none); w starts a row
     * in, a narrow view. N in the thousands makes matvec_rows walk several
     * rows a lane (dk_vk_rows_per_lane), the last lanes past N */
    int64_t K = k < 3 ? kf : k < 8 ? kq : kk;
    dk_tensor *base = big_table(t, wd[k], N + 1, K, "w_base"), *w = NULL;
    if (!base) return;
    if (dk_narrow(base, 0, 1, N, &w) != DK_OK) { dkt_fail_at(t, __FILE__, __LINE__, "%s", dk_last_error()); return; }
    for (m = 0; m < nm; m++) {
      char what[96];
      int64_t xs[2] = {Ms[m], K}, os[2] = {Ms[m], N}, i, j, q;
      double *xv, *bv, *got = dkt_alloc(Ms[m] * N), *want = dkt_alloc(Ms[m] * N), *row = dkt_alloc(K);
      dk_dtype xdt = k == 1 ? DK_BF16 : DK_F32;
      dk_tensor *x = dkt_random(t, t->dev, xdt, 2, xs, "x", -1, 1, &xv);
      dk_tensor *b = dkt_random(t, t->dev, DK_F16, 1, &N, "bias", -1, 1, &bv), *o = NULL;
      if (x && b && dk_tensor_new(t->dev, xdt, 2, os, "y", &o) == DK_OK && dk_linear(o, x, w, b) == DK_OK &&
          dkt_read(t, o, got)) {
        for (j = 0; j < N; j++) {
          table_row(wd[k], j + 1, K, row);
          for (i = 0; i < Ms[m]; i++) {
            double acc = bv[j];
            for (q = 0; q < K; q++) acc += xv[i * K + q] * row[q];
            want[i * N + j] = acc;
          }
        }
        snprintf(what, sizeof what, "linear M=%lld N=%lld, %s weight view, f16 bias", (long long)Ms[m], (long long)N,
                 dk_dtype_name(wd[k]));
        dkt_close(t, what, got, want, Ms[m] * N, dkt_tol(xdt, K) * sqrt((double)K) * 4, dkt_tol(xdt, K));
      } else if (!t->failures) {
        dkt_fail_at(t, __FILE__, __LINE__, "linear M=%lld %s: %s", (long long)Ms[m], dk_dtype_name(wd[k]), dk_last_error());
      }
      dk_tensor_free(x); dk_tensor_free(b); dk_tensor_free(o);
      free(xv); free(bv); free(got); free(want); free(row);
    }
    dk_tensor_free(w); dk_tensor_free(base);
  }
}

DKT_TEST(vulkan_decode_kernels, 0) {
  VK_ONLY(t);
  if (!reopen(t, "DEVKIT_VULKAN_MATVEC", "rows")) return;
  /* on a CPU device the row kernels read w and x as texels, eight blocks at
   * a time where rows sit on 16 bytes (K = 200, 256), eight rows a lane
   * where N = 4100; then as storage buffers, the path of GPUs and of
   * DEVKIT_VULKAN_TEXEL=0 */
  decode_kernels_round(t, 196, 256, 0, 70);
  decode_kernels_round(t, 200, 288, 0, 70);
  decode_kernels_round(t, 196, 288, 0, 4100);
  if (!reopen(t, "DEVKIT_VULKAN_TEXEL", "0")) return;
  decode_kernels_round(t, 196, 256, 0, 70);
  if (!reopen(t, "DEVKIT_VULKAN_TEXEL", NULL)) return;
  if (!reopen(t, "DEVKIT_VULKAN_MATVEC", "split")) return;
  decode_kernels_round(t, 196, 256, 0, 70);
  /* matvec_vec.comp, a GPU's default, forced on any device: K = 200 keeps
   * the narrowed rows on 16 bytes (its path), 196 does not (the fallback) */
  if (!reopen(t, "DEVKIT_VULKAN_MATVEC", "vec")) return;
  decode_kernels_round(t, 200, 256, 0, 70);
  decode_kernels_round(t, 196, 256, 0, 70);
}

/* matvec_rows with the rows a lane forced (DEVKIT_VULKAN_ROWS), as
 * dk_vk_rows_per_lane picks them by the device's threads: one row of x
 * against several rows a lane reads x once for all of them, block by block
 * (rows_blockwise: K = 640, 20 blocks, and 512) and super-block by super-
 * block (rows_kquant: K = 512, 768), each row's sum kept in its place as
 * the sums turn; N = 300 leaves lanes past N */
DKT_TEST(vulkan_decode_rows_per_lane, 0) {
  static const char *rows[3] = {"2", "5", "8"};
  int i;
  VK_ONLY(t);
  if (!reopen(t, "DEVKIT_VULKAN_MATVEC", "rows")) return;
  for (i = 0; i < 3; i++) {
    if (!reopen(t, "DEVKIT_VULKAN_ROWS", rows[i])) return;
    decode_kernels_round(t, 200, 640, 512, 300);
  }
  decode_kernels_round(t, 200, 512, 768, 300);
  if (!reopen(t, "DEVKIT_VULKAN_ROWS", NULL)) return;
  reopen(t, "DEVKIT_VULKAN_MATVEC", NULL);
}

/* ---- opt-in int8 dot products: x rounded to int8 per block of 32 ------------------------ */

DKT_TEST(vulkan_int8_dot_decode, 0) {
  dk_dtype wd[2] = {DK_Q8_0, DK_Q4_0};
  int64_t K = 512, N = 96, xs[2] = {2, 512}, os[2] = {2, 96}, i, j, b, q;
  int k;
  dk_device_props p;
  VK_ONLY(t);
  DKT_OK(t, dk_device_properties(t->dev, &p));
  if (!p.supports_int8_dot) { dkt_skip(t, "no shaderIntegerDotProduct"); return; }
  setenv("DEVKIT_VULKAN_MATVEC", "split", 1);
  for (k = 0; k < 2; k++) {
    double *xv, *exact = dkt_alloc(2 * N), *got = dkt_alloc(2 * N), *row = dkt_alloc(K);
    dk_tensor *w, *x, *o = NULL;
    int64_t differ = 0;
    char what[64];
    if (!reopen(t, "DEVKIT_VULKAN_INT8_DOT", NULL)) return;
    w = big_table(t, wd[k], N, K, "w");
    x = dkt_random(t, t->dev, DK_F32, 2, xs, "x", -1, 1, &xv);
    if (!w || !x) return;
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, os, "y", &o));
    DKT_OK(t, dk_linear(o, x, w, NULL));
    if (!dkt_read(t, o, exact)) return;
    dk_tensor_free(w); dk_tensor_free(x); dk_tensor_free(o);
    o = NULL;
    /* the same inputs through the int8 kernels */
    if (!reopen(t, "DEVKIT_VULKAN_INT8_DOT", "1")) return;
    w = big_table(t, wd[k], N, K, "w");
    x = dkt_tensor(t, t->dev, DK_F32, 2, xs, "x", xv);
    if (!w || !x) return;
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, os, "y", &o));
    DKT_OK(t, dk_linear(o, x, w, NULL));
    if (dkt_read(t, o, got)) {
      for (j = 0; j < N; j++) {
        table_row(wd[k], j, K, row);
        for (i = 0; i < 2; i++) {
          /* |x - round(x/d)*d| <= d/2, d = amax/127 per block */
          double bound = 1e-4;
          for (b = 0; b < K / 32; b++) {
            double amax = 0, wsum = 0;
            for (q = 0; q < 32; q++) {
              amax = fmax(amax, fabs(xv[i * K + b * 32 + q]));
              wsum += fabs(row[b * 32 + q]);
            }
            bound += amax / 254.0 * wsum;
          }
          DKT_CHECK(t, fabs(got[i * N + j] - exact[i * N + j]) <= bound, "%s row %lld col %lld: %g vs exact %g, bound %g",
                    dk_dtype_name(wd[k]), (long long)i, (long long)j, got[i * N + j], exact[i * N + j], bound);
          differ += got[i * N + j] != exact[i * N + j];
          if (t->failures) break;
        }
      }
      snprintf(what, sizeof what, "%s: int8 kernel ran", dk_dtype_name(wd[k]));
      DKT_CHECK(t, differ > N / 2, "%s (only %lld of %lld results differ from the f32 kernel)", what, (long long)differ,
                (long long)(2 * N));
    }
    dk_tensor_free(w); dk_tensor_free(x); dk_tensor_free(o);
    free(xv); free(exact); free(got); free(row);
  }
}

/* ---- fallbacks: no push descriptors, no subgroups, no mapped transfers -------------------- */

static void ref_rmsnorm(const double *x, const double *w, double *y, int64_t rows, int64_t n) {
  int64_t r, j;
  for (r = 0; r < rows; r++) {
    double q = 0;
    for (j = 0; j < n; j++) q += x[r * n + j] * x[r * n + j];
    q = 1 / sqrt(q / (double)n + 1e-5);
    for (j = 0; j < n; j++) y[r * n + j] = x[r * n + j] * q * w[j];
  }
}

DKT_TEST(vulkan_fallback_paths, 0) {
  int64_t xs[2] = {5, 1024}, ws = 1024, ids_s = 5, ts[2] = {40, 1024}, os[1] = {5}, n = 5120, i, j;
  int32_t ids[5] = {0, 39, 7, 7, 20};
  double *xv, *wv, *tv, *got, *want;
  dk_tensor *x, *w, *tab, *id, *y = NULL, *tok = NULL;
  VK_ONLY(t);
  if (!reopen(t, "DEVKIT_VULKAN_DISABLE", "push_descriptor,subgroups,direct")) return;
  got = dkt_alloc(n);
  want = dkt_alloc(n);
  x = dkt_random(t, t->dev, DK_F32, 2, xs, "x", -3, 3, &xv);
  w = dkt_random(t, t->dev, DK_F16, 1, &ws, "w", -1, 1, &wv);
  tab = dkt_random(t, t->dev, DK_Q4_0, 2, ts, "table", -1, 1, &tv);
  id = dkt_ids(t, t->dev, 1, &ids_s, "ids", ids);
  if (!x || !w || !tab || !id) return;
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, xs, "y", &y));
  DKT_OK(t, dk_rmsnorm(y, x, w, 1e-5f));
  if (dkt_read(t, y, got)) {
    ref_rmsnorm(xv, wv, want, 5, 1024);
    dkt_close(t, "rmsnorm without subgroups", got, want, n, 1e-4, 1e-4);
  }
  DKT_OK(t, dk_softmax(y, x));
  if (dkt_read(t, y, got)) {
    for (i = 0; i < 5; i++) {
      double m = -INFINITY, z = 0;
      for (j = 0; j < 1024; j++) m = fmax(m, xv[i * 1024 + j]);
      for (j = 0; j < 1024; j++) z += exp(xv[i * 1024 + j] - m);
      for (j = 0; j < 1024; j++) want[i * 1024 + j] = exp(xv[i * 1024 + j] - m) / z;
    }
    dkt_close(t, "softmax without subgroups", got, want, n, 1e-6, 1e-4);
  }
  DKT_OK(t, dk_tensor_new(t->dev, DK_I32, 1, os, "tok", &tok));
  DKT_OK(t, dk_argmax(tok, x));
  if (dkt_read(t, tok, got))
    for (i = 0; i < 5; i++) {
      int64_t best = 0;
      for (j = 1; j < 1024; j++) if (xv[i * 1024 + j] > xv[i * 1024 + best]) best = j;
      DKT_CHECK(t, (int64_t)got[i] == best, "argmax row %lld: %lld, want %lld", (long long)i, (long long)got[i],
                (long long)best);
    }
  DKT_OK(t, dk_embedding(y, tab, id));
  if (dkt_read(t, y, got)) {
    for (i = 0; i < 5; i++)
      for (j = 0; j < 1024; j++) want[i * 1024 + j] = tv[ids[i] * 1024 + j];
    dkt_close(t, "q4_0 embedding through a descriptor pool", got, want, n, 0, 1e-7);
  }
  {
    int64_t ls[2] = {5, 40};
    dk_tensor *o = NULL;
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, ls, "logits", &o));
    DKT_OK(t, dk_linear(o, x, tab, NULL));
    if (dkt_read(t, o, got)) {
      for (i = 0; i < 5; i++)
        for (j = 0; j < 40; j++) {
          double acc = 0;
          int64_t k;
          for (k = 0; k < 1024; k++) acc += xv[i * 1024 + k] * tv[j * 1024 + k];
          want[i * 40 + j] = acc;
        }
      dkt_close(t, "q4_0 linear without subgroups", got, want, 200, 1e-3, 1e-5);
    }
    dk_tensor_free(o);
  }
  dk_tensor_free(x); dk_tensor_free(w); dk_tensor_free(tab); dk_tensor_free(id); dk_tensor_free(y);
  dk_tensor_free(tok);
  free(xv); free(wv); free(tv); free(got); free(want);
}
