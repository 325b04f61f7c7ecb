/* bench/bench.c — per-op throughput on every device, side by side, in one run.
 *
 *   build/bench [-d DEVICE]... [--quick] [--big] [--filter TEXT] [--results FILE]
 *
 * --results FILE appends the run to FILE (./build.sh bench: bench/RESULTS.md)
 * as a section whose heading names the date, machine, CPU model, commit and
 * command, and a table with one fixed layout: a cell per column, numbers
 * with two decimals and no thousands separators.
 *
 * Memory-bound ops report GB/s (bytes read + written / time); linear and
 * matmul report GFLOP/s (2·M·N·K / time), and decode-sized linear also GB/s of
 * weights streamed. Each figure is the median of 5 timed runs, each run long
 * enough (>= 0.1 s, or one call) to swamp the timer, after a warm-up call;
 * every run ends with dk_sync, so queued GPU work is counted. These are
 * figures, never pass/fail.
 */
#define _GNU_SOURCE
#define DEVKIT_IMPLEMENTATION
#include "../devkit.h"
#define DEVKIT_MODELS_IMPLEMENTATION
#include "../models/llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__has_include)
#if __has_include("cublas.h")
#include "cublas.h"
#define DK_BENCH_HAVE_CUBLAS 1
#endif
#endif

#define MAXDEV 8

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef dk_status (*bench_fn)(void *ctx);

/* seconds per call: median of 5 runs of n calls, n grown until a run takes
 * >= min_s; NAN if the op failed */
static double time_op(dk_device dev, bench_fn fn, void *ctx, double min_s) {
  double t[5], t0;
  int n = 1, r, i;
  if (fn(ctx) != DK_OK || dk_sync(dev) != DK_OK) return NAN;
  for (;;) {
    t0 = now();
    for (i = 0; i < n; i++) if (fn(ctx) != DK_OK) return NAN;
    if (dk_sync(dev) != DK_OK) return NAN;
    if (now() - t0 >= min_s || n >= (1 << 20)) break;
    n *= 2;
  }
  for (r = 0; r < 5; r++) {
    t0 = now();
    for (i = 0; i < n; i++) fn(ctx);
    dk_sync(dev);
    t[r] = (now() - t0) / n;
  }
  qsort(t, 5, sizeof t[0], cmp_double);
  return t[2];
}

/* ---- the cases ------------------------------------------------------------- */

typedef struct {
  dk_tensor *a, *b, *c, *d;
  int kind;
} bctx;

static dk_status run_case(void *p) {
  bctx *c = (bctx *)p;
  switch (c->kind) {
  case 0: return dk_copy(c->c, c->a);
  case 1: return dk_add(c->c, c->a, c->b);
  case 2: return dk_silu(c->c, c->a);
  case 3: return dk_rmsnorm(c->c, c->a, c->b, 1e-5f);
  case 4: return dk_softmax(c->c, c->a);
  case 5: return dk_rope(c->c, c->a, c->b, 128, 10000.0f, DK_ROPE_NORMAL);
  case 6: return dk_linear(c->c, c->a, c->b, NULL);
  case 7: return dk_matmul(c->c, c->a, c->b);
  case 8: return dk_copy_to(c->c, c->a);
  case 9: return dk_attention(c->c, c->a, c->b, c->d, 0.088f, 4095);
  case 10: return dk_attention(c->c, c->a, c->b, c->d, 0.125f, 0);
  default: return dk_add(c->c, c->a, c->b);
  }
}

typedef struct {
  const char *name, *size, *unit;
  double value[MAXDEV];
} row;

static row rows[64];
static int nrows = 0;

static row *row_for(const char *name, const char *size, const char *unit) {
  int i;
  for (i = 0; i < nrows; i++)
    if (!strcmp(rows[i].name, name) && !strcmp(rows[i].size, size) && !strcmp(rows[i].unit, unit)) return &rows[i];
  rows[nrows].name = name;
  rows[nrows].size = size;
  rows[nrows].unit = unit;
  for (i = 0; i < MAXDEV; i++) rows[nrows].value[i] = NAN;
  return &rows[nrows++];
}

static dk_tensor *mk(dk_device d, dk_dtype t, int nd, const int64_t *s, const char *name) {
  dk_tensor *x = NULL;
  size_t nb;
  int64_t n = 1;
  float *v;
  int i;
  if (dk_tensor_new(d, t, nd, s, name, &x) != DK_OK) return NULL;
  for (i = 0; i < nd; i++) n *= s[i];
  nb = dk_tensor_nbytes(x);
  v = (float *)malloc((size_t)n * sizeof(float));
  {
    void *q = malloc(nb);
    uint32_t h = 12345;
    int64_t k;
    for (k = 0; k < n; k++) { h = h * 1664525u + 1013904223u; v[k] = ((float)(h >> 8) / 16777216.0f - 0.5f) * 0.2f; }
    if (t == DK_I32) for (k = 0; k < n; k++) ((int32_t *)q)[k] = (int32_t)(k % 4096);
    else dk_quantize(t, v, n, q);
    dk_tensor_upload(x, q, nb);
    free(q);
  }
  free(v);
  return x;
}

static void free_ctx(bctx *c) {
  dk_tensor_free(c->a); dk_tensor_free(c->b); dk_tensor_free(c->c); dk_tensor_free(c->d);
  memset(c, 0, sizeof *c);
}

static int want(const char *filter, const char *name) { return !filter || strstr(name, filter); }

/* one figure: time the op, convert with bytes or flops */
static void record(int di, dk_device dev, const char *name, const char *size, bctx *c, double bytes, double flops,
                   double min_s) {
  double s;
  if (!c->a || !c->c) {
    fprintf(stderr, "  %s %s on %s: setup failed: %s\n", name, size, dk_device_name(dev), dk_last_error());
    free_ctx(c);
    return;
  }
  s = time_op(dev, run_case, c, min_s);
  if (s != s) fprintf(stderr, "  %s %s on %s: %s\n", name, size, dk_device_name(dev), dk_last_error());
  if (bytes > 0) row_for(name, size, "GB/s")->value[di] = bytes / s / 1e9;
  if (flops > 0) row_for(name, size, "GFLOP/s")->value[di] = flops / s / 1e9;
  free_ctx(c);
}

static void bench_device(int di, dk_device dev, int quick, int big, const char *filter) {
  bctx c;
  int64_t n = quick ? (1 << 20) : (1 << 24);
  double mb = (double)n * 4;
  int soft;
  dk_device_props p;
  dk_device_properties(dev, &p);
  soft = p.is_software;
  memset(&c, 0, sizeof c);
  fprintf(stderr, "benchmarking %s (%s)...\n", dk_device_name(dev), p.name);

  /* memory-bound ops on n f32 values */
  if (want(filter, "copy")) {
    c.kind = 0; c.a = mk(dev, DK_F32, 1, &n, "a"); c.c = mk(dev, DK_F32, 1, &n, "c");
    record(di, dev, "dk_copy f32", quick ? "1M" : "16M", &c, 2 * mb, 0, 0.1);
    c.kind = 0; c.a = mk(dev, DK_F32, 1, &n, "a"); c.c = mk(dev, DK_F16, 1, &n, "c");
    record(di, dev, "dk_copy f32->f16", quick ? "1M" : "16M", &c, 1.5 * mb, 0, 0.1);
    c.kind = 8; c.a = mk(dev, DK_F32, 1, &n, "a"); c.c = mk(dev, DK_F32, 1, &n, "c");
    record(di, dev, "dk_copy_to same device", quick ? "1M" : "16M", &c, 2 * mb, 0, 0.1);
  }
  if (want(filter, "add")) {
    c.kind = 1; c.a = mk(dev, DK_F32, 1, &n, "a"); c.b = mk(dev, DK_F32, 1, &n, "b"); c.c = mk(dev, DK_F32, 1, &n, "c");
    record(di, dev, "dk_add f32", quick ? "1M" : "16M", &c, 3 * mb, 0, 0.1);
  }
  if (want(filter, "silu")) {
    c.kind = 2; c.a = mk(dev, DK_F32, 1, &n, "a"); c.c = mk(dev, DK_F32, 1, &n, "c");
    record(di, dev, "dk_silu f32", quick ? "1M" : "16M", &c, 2 * mb, 0, 0.1);
  }
  if (want(filter, "rmsnorm")) {
    int64_t s[2] = {n / 4096, 4096}, w = 4096;
    c.kind = 3; c.a = mk(dev, DK_F32, 2, s, "a"); c.b = mk(dev, DK_F32, 1, &w, "w"); c.c = mk(dev, DK_F32, 2, s, "c");
    record(di, dev, "dk_rmsnorm f32", "rows of 4096", &c, 2 * mb, 0, 0.1);
  }
  if (want(filter, "softmax")) {
    int64_t s[2] = {n / 4096, 4096};
    c.kind = 4; c.a = mk(dev, DK_F32, 2, s, "a"); c.c = mk(dev, DK_F32, 2, s, "c");
    record(di, dev, "dk_softmax f32", "rows of 4096", &c, 2 * mb, 0, 0.1);
  }
  if (want(filter, "rope")) {
    int64_t s[3] = {n / 4096, 32, 128}, T = n / 4096;
    c.kind = 5; c.a = mk(dev, DK_F32, 3, s, "a"); c.b = mk(dev, DK_I32, 1, &T, "pos"); c.c = mk(dev, DK_F32, 3, s, "c");
    record(di, dev, "dk_rope f32", "32 heads x 128", &c, 2 * mb, 0, 0.1);
  }
  /* dispatch overhead: tiny ops, many of them, one sync */
  if (want(filter, "tiny")) {
    int64_t s = 64;
    double t;
    c.kind = 1; c.a = mk(dev, DK_F32, 1, &s, "a"); c.b = mk(dev, DK_F32, 1, &s, "b"); c.c = mk(dev, DK_F32, 1, &s, "c");
    t = c.a && c.c ? time_op(dev, run_case, &c, 0.1) : NAN;
    row_for("dk_add tiny (dispatch cost)", "64 values", "us/op")->value[di] = t * 1e6;
    free_ctx(&c);
  }
  /* decode: one row of x against weights, the memory-bound case */
  if (want(filter, "linear")) {
    static const dk_dtype wt[4] = {DK_F32, DK_F16, DK_Q8_0, DK_Q4_0};
    static const char *names[4] = {"dk_linear decode w=f32", "dk_linear decode w=f16", "dk_linear decode w=q8_0",
                                   "dk_linear decode w=q4_0"};
    static const int64_t shapes[2][2] = {{4096, 4096}, {14336, 4096}};
    int k, sh;
    for (sh = 0; sh < (quick ? 1 : 2); sh++)
      for (k = 0; k < 4; k++) {
        int64_t xs[2] = {1, shapes[sh][1]}, os[2] = {1, shapes[sh][0]};
        double wbytes;
        c.kind = 6; c.a = mk(dev, DK_F32, 2, xs, "x"); c.b = mk(dev, wt[k], 2, shapes[sh], "w"); c.c = mk(dev, DK_F32, 2, os, "y");
        wbytes = c.b ? (double)dk_tensor_nbytes(c.b) : 0;
        record(di, dev, names[k], sh ? "N=14336 K=4096" : "N=4096 K=4096", &c, wbytes, 2.0 * shapes[sh][0] * shapes[sh][1], 0.1);
      }
  }
  /* prompt: a batch of rows, compute-bound */
  if (want(filter, "prompt")) {
    int64_t M = quick ? 64 : 512, xs[2] = {M, 4096}, ws[2] = {4096, 4096}, os[2] = {M, 4096};
    static const dk_dtype dts[2] = {DK_F32, DK_F16};
    int k;
    for (k = 0; k < 2; k++) {
      c.kind = 6; c.a = mk(dev, dts[k], 2, xs, "x"); c.b = mk(dev, dts[k], 2, ws, "w"); c.c = mk(dev, dts[k], 2, os, "y");
      record(di, dev, k ? "dk_linear prompt f16" : "dk_linear prompt f32", quick ? "64x4096x4096" : "512x4096x4096", &c, 0,
             2.0 * M * 4096 * 4096, 0.2);
    }
    c.kind = 6;
    {
      int64_t q4s[2] = {4096, 4096};
      c.a = mk(dev, DK_F32, 2, xs, "x"); c.b = mk(dev, DK_Q4_0, 2, q4s, "w"); c.c = mk(dev, DK_F32, 2, os, "y");
      record(di, dev, "dk_linear prompt w=q4_0", quick ? "64x4096x4096" : "512x4096x4096", &c, 0, 2.0 * M * 4096 * 4096, 0.2);
    }
  }
  if (want(filter, "attention")) {
    int64_t qs[3] = {1, 32, 128}, ks[3] = {4096, 8, 128};
    c.kind = 9; c.a = mk(dev, DK_F32, 3, qs, "q"); c.b = mk(dev, DK_F16, 3, ks, "k"); c.d = mk(dev, DK_F16, 3, ks, "v");
    c.c = mk(dev, DK_F32, 3, qs, "o");
    record(di, dev, "dk_attention decode", "32q/8kv heads, 4096 ctx", &c, 2.0 * 4096 * 8 * 128 * 2, 0, 0.1);
  }
  /* a causal prompt (Llama 3.2 1B's heads): the CPU's tiles, CUDA's flash path */
  if (want(filter, "attention")) {
    const int64_t T = quick ? 128 : 512;
    int64_t qs[3] = {T, 32, 64}, ks[3] = {T, 8, 64};
    c.kind = 10; c.a = mk(dev, DK_F32, 3, qs, "q"); c.b = mk(dev, DK_F16, 3, ks, "k"); c.d = mk(dev, DK_F16, 3, ks, "v");
    c.c = mk(dev, DK_F32, 3, qs, "o");
    record(di, dev, "dk_attention prompt", quick ? "32q/8kv heads of 64, 128 tokens" : "32q/8kv heads of 64, 512 tokens", &c, 0,
           2.0 * 2 * T * (T + 1) / 2 * 32 * 64, 0.1);
  }
  /* a big GEMM: only on hardware GPUs unless asked */
  if ((big || !soft) && dev.backend != DK_CPU && want(filter, "matmul")) {
    int64_t s[2] = {4096, 4096};
    c.kind = 7; c.a = mk(dev, DK_F16, 2, s, "a"); c.b = mk(dev, DK_F16, 2, s, "b"); c.c = mk(dev, DK_F16, 2, s, "c");
    record(di, dev, "dk_matmul f16", "4096^3", &c, 0, 2.0 * 4096.0 * 4096.0 * 4096.0, 0.3);
#ifdef DK_BENCH_HAVE_CUBLAS
    if (dev.backend == DK_CUDA) {
      double tf = 0;
      char note[256] = "";
      if (dk_bench_cublas_hgemm(4096, 20, &tf, note, sizeof note) == 0)
        row_for("cuBLAS f16 GEMM (reference)", "4096^3", "GFLOP/s")->value[di] = tf * 1000.0;
      else
        fprintf(stderr, "  cuBLAS: %s\n", note);
    }
#endif
  }
}

/* ---- prompt products with the other GGUF block formats ----------------------- */

/* dk_linear Mx4096x4096 (64 rows, or 512 unless --quick) with q4_K and q5_0
 * weights (Gemma 3's prompt products), iq4_xs (an IQ4_XS file's) and iq3_s
 * (an IQ3_M file's): the many-row path of the block formats beyond
 * q8_0/q4_0 */
static void bench_quant_prompt(int di, dk_device dev, int quick, const char *filter) {
  static const dk_dtype wt[4] = {DK_Q4_K, DK_Q5_0, DK_IQ4_XS, DK_IQ3_S};
  static const char *names[4] = {"dk_linear prompt w=q4_K", "dk_linear prompt w=q5_0", "dk_linear prompt w=iq4_xs",
                                 "dk_linear prompt w=iq3_s"};
  int64_t M = quick ? 64 : 512, ws[2] = {4096, 4096}, xs[2] = {M, 4096}, os[2] = {M, 4096};
  int k;
  if (!want(filter, "prompt")) return;
  for (k = 0; k < 4; k++) {
    bctx c;
    memset(&c, 0, sizeof c);
    if (!dk_op_supported(dev.backend, "dk_linear", wt[k], 1)) continue;
    c.kind = 6; c.a = mk(dev, DK_F32, 2, xs, "x"); c.b = mk(dev, wt[k], 2, ws, "w"); c.c = mk(dev, DK_F32, 2, os, "y");
    record(di, dev, names[k], quick ? "64x4096x4096" : "512x4096x4096", &c, 0, 2.0 * M * 4096 * 4096, 0.2);
  }
}

/* ---- decode with the other GGUF block formats ------------------------------ */

/* dk_linear 1x4096x4096, GB/s of weights streamed, per block format beyond
 * q8_0/q4_0 (issue 17); a device that does not hold a type shows "-" */
static void bench_quant_decode(int di, dk_device dev, const char *filter) {
  static const dk_dtype wt[15] = {DK_Q4_1,   DK_Q5_0,    DK_Q5_1,  DK_Q2_K,    DK_Q3_K,   DK_Q4_K,  DK_Q5_K, DK_Q6_K,
                                  DK_IQ4_NL, DK_IQ4_XS, DK_IQ3_XXS, DK_IQ3_S, DK_IQ2_XXS, DK_IQ2_XS, DK_IQ2_S};
  static const char *names[15] = {"dk_linear decode w=q4_1",    "dk_linear decode w=q5_0",    "dk_linear decode w=q5_1",
                                  "dk_linear decode w=q2_K",    "dk_linear decode w=q3_K",    "dk_linear decode w=q4_K",
                                  "dk_linear decode w=q5_K",    "dk_linear decode w=q6_K",    "dk_linear decode w=iq4_nl",
                                  "dk_linear decode w=iq4_xs",  "dk_linear decode w=iq3_xxs", "dk_linear decode w=iq3_s",
                                  "dk_linear decode w=iq2_xxs", "dk_linear decode w=iq2_xs",  "dk_linear decode w=iq2_s"};
  int64_t ws[2] = {4096, 4096}, xs[2] = {1, 4096}, os[2] = {1, 4096};
  int k;
  if (!want(filter, "linear") && !want(filter, "quant")) return;
  for (k = 0; k < 15; k++) {
    bctx c;
    memset(&c, 0, sizeof c);
    if (!dk_op_supported(dev.backend, "dk_linear", wt[k], 1)) continue;
    c.kind = 6; c.a = mk(dev, DK_F32, 2, xs, "x"); c.b = mk(dev, wt[k], 2, ws, "w"); c.c = mk(dev, DK_F32, 2, os, "y");
    record(di, dev, names[k], "N=4096 K=4096", &c, c.b ? (double)dk_tensor_nbytes(c.b) : 0, 0, 0.1);
  }
}

/* ---- the llama runner: prompt and decode tokens/s ---------------------------- */

/* a model file for the bench: stories260K from weights/ (shipped in the
 * repository), DEVKIT_MODELS or ../shared/models, or a synthetic one made
 * once with make_model */
static int model_path(const char *self, const char *what, char *out, size_t n) {
  const char *env = getenv("DEVKIT_MODELS");
  const char *dirs[3];
  FILE *f;
  int i, k = 0;
  if (!strncmp(what, "stories", 7)) {
    dirs[k++] = "weights";
    if (env && *env) dirs[k++] = env;
    dirs[k++] = "../shared/models";
    for (i = 0; i < k; i++) {
      snprintf(out, n, "%s/%s", dirs[i], what);
      f = fopen(out, "rb");
      if (f) { fclose(f); return 1; }
    }
    return 0;
  } else {
    /* "100M:f16" */
    char params[16], type[16], cmd[4096], tool[1024];
    const char *colon = strchr(what, ':'), *slash = strrchr(self, '/');
    snprintf(params, sizeof params, "%.*s", (int)(colon - what), what);
    snprintf(type, sizeof type, "%s", colon + 1);
    snprintf(out, n, "bench/out/synthetic-%s-%s.gguf", params, type);
    f = fopen(out, "rb");
    if (f) { fclose(f); return 1; }
    snprintf(tool, sizeof tool, "%.*smake_model", slash ? (int)(slash - self + 1) : 0, self);
    snprintf(cmd, sizeof cmd, "mkdir -p bench/out && '%.1000s' -o '%.1000s' --params %s --type %s > /dev/null", tool, out, params, type);
    fprintf(stderr, "making %s ...\n", out);
    return system(cmd) == 0;
  }
}

static void bench_model(int di, dk_device dev, const char *label, const char *path, int prompt_len, int gen) {
  dk_llm_options o;
  dk_llm_model *m = NULL;
  int32_t *ids, tok;
  dk_tensor *lg;
  double t0, t1, t2;
  int i;
  char size[64];
  memset(&o, 0, sizeof o);
  o.devices = dk_device_name(dev);
  o.n_ctx = prompt_len + gen + 1;
  if (dk_llm_load(path, &o, &m) != DK_OK) {
    fprintf(stderr, "  %s on %s: %s\n", label, dk_device_name(dev), dk_last_error());
    return;
  }
  ids = (int32_t *)malloc(sizeof *ids * (size_t)prompt_len);
  for (i = 0; i < prompt_len; i++) ids[i] = i == 0 ? 1 : 3 + (i * 37) % (m->c.vocab - 3);
  /* one warm-up pass (pipelines, JIT, first-touch), then the timed run */
  if (dk_llm_forward(m, ids, prompt_len, 0, &lg) != DK_OK || dk_llm_sample(m, lg, 0, NULL, 0, &tok) != DK_OK) goto fail;
  dk_llm_reset(m);
  t0 = now();
  if (dk_llm_forward(m, ids, prompt_len, 0, &lg) != DK_OK || dk_llm_sample(m, lg, 0, NULL, 0, &tok) != DK_OK) goto fail;
  t1 = now();
  for (i = 0; i < gen; i++)
    if (dk_llm_forward(m, &tok, 1, 0, &lg) != DK_OK || dk_llm_sample(m, lg, 0, NULL, (uint64_t)i, &tok) != DK_OK) goto fail;
  t2 = now();
  snprintf(size, sizeof size, "%s", label);
  row_for("llama prompt", strdup(size), "tok/s")->value[di] = prompt_len / (t1 - t0);
  row_for("llama decode", strdup(size), "tok/s")->value[di] = gen / (t2 - t1);
  free(ids);
  dk_llm_free(m);
  return;
fail:
  fprintf(stderr, "  %s on %s: %s\n", label, dk_device_name(dev), dk_last_error());
  free(ids);
  dk_llm_free(m);
}

static void bench_models(dk_device *devs, int ndev, const char *self, int quick, const char *filter) {
  static const char *models[3] = {"stories260K.gguf", "100M:f16", "100M:q8_0"};
  static const char *labels[3] = {"stories260K f32", "synthetic 100M f16", "synthetic 100M q8_0"};
  int k, i;
  if (!want(filter, "llama")) return;
  for (k = 0; k < (quick ? 1 : 3); k++) {
    char path[1024];
    if (!model_path(self, models[k], path, sizeof path)) {
      fprintf(stderr, "  %s: not found or not made, skipped\n", labels[k]);
      continue;
    }
    for (i = 0; i < ndev; i++) {
      fprintf(stderr, "benchmarking %s on %s...\n", labels[k], dk_device_name(devs[i]));
      bench_model(i, devs[i], labels[k], path, k ? 64 : 32, k ? 16 : 200);
    }
  }
}

/* ---- CPU backend rows (issue 14): memory ceiling, decode kernels, attention vs context ---- */

#include <pthread.h>
#include <unistd.h>

/* the threads the memory rows use: one a core, at most 64 */
static int bench_threads(void) {
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  return ncpu < 1 ? 1 : ncpu > 64 ? 64 : (int)ncpu;
}
/* [*b, *e): part i of n units split over nth */
static void split_part(size_t n, int nth, int i, size_t *b, size_t *e) {
  *b = n / (size_t)nth * (size_t)i;
  *e = i + 1 == nth ? n : n / (size_t)nth * (size_t)(i + 1);
}
/* fn on parts 0 .. nth-1 (size bytes apart), each but the first on a thread of its own */
static void run_parts(void *(*fn)(void *), void *parts, size_t size, int nth) {
  pthread_t th[64];
  int i;
  for (i = 1; i < nth; i++) pthread_create(&th[i], NULL, fn, (char *)parts + (size_t)i * size);
  fn(parts);
  for (i = 1; i < nth; i++) pthread_join(th[i], NULL);
}

typedef struct { char *dst; const char *src; size_t n; } copy_part;
static void *copy_part_run(void *p) { copy_part *c = (copy_part *)p; memcpy(c->dst, c->src, c->n); return NULL; }
typedef struct { char *dst, *src; size_t n; int nth; } copy_ctx;
/* memcpy of n bytes split over nth threads: the machine's copy bandwidth, the
 * ceiling a weight-streaming decode is measured against */
static dk_status copy_run(void *p) {
  copy_ctx *c = (copy_ctx *)p;
  copy_part part[64] = {{0}};   /* nth >= 1, which the compiler cannot see */
  int i;
  for (i = 0; i < c->nth; i++) {
    size_t b, e;
    split_part(c->n, c->nth, i, &b, &e);
    part[i].dst = c->dst + b; part[i].src = c->src + b; part[i].n = e - b;
  }
  run_parts(copy_part_run, part, sizeof part[0], c->nth);
  return DK_OK;
}

/* a plain read of n bytes split over nth threads, one load a 64-byte line
 * (memory moves whole lines): the rate a decode streaming its weights from
 * memory can reach. memcpy's "read" is lower (its writes share the memory),
 * and so is a loop loading every 16 bytes (Intel VM: 21 against 28-32 GB/s;
 * the loads of a line already in flight fill the core's window, so fewer
 * lines are requested at once) */
typedef struct { const uint64_t *p; size_t n; uint64_t x; } read_part;
static void *read_part_run(void *v) {
  read_part *r = (read_part *)v;
  uint64_t a = 0, b = 0, c = 0, d = 0;
  size_t i;
  for (i = 0; i + 32 <= r->n; i += 32) { a ^= r->p[i]; b ^= r->p[i + 8]; c ^= r->p[i + 16]; d ^= r->p[i + 24]; }
  r->x = a ^ b ^ c ^ d;
  return NULL;
}
typedef struct { const uint64_t *buf; size_t n; int nth; uint64_t sink; } read_ctx;
static dk_status read_run(void *v) {
  read_ctx *c = (read_ctx *)v;
  read_part part[64] = {{0}};
  int i;
  for (i = 0; i < c->nth; i++) {
    size_t b, e;
    split_part(c->n / 8, c->nth, i, &b, &e);
    part[i].p = c->buf + b; part[i].n = e - b;
  }
  run_parts(read_part_run, part, sizeof part[0], c->nth);
  for (i = 0; i < c->nth; i++) c->sink ^= part[i].x;   /* the loads are used */
  return DK_OK;
}
/* decode against a ring of 4096 x 4096 weights larger than the last-level
 * cache: every call reads them all from memory, as a model's decode does
 * (one 4096 x 4096 matrix, 32 MB of f16, fits the 260 MB L3 of some VMs,
 * where the plain decode rows then read the cache, not memory) */
typedef struct { dk_tensor *x, *y, *w[64]; int nw; } ring_ctx;
static dk_status ring_run(void *v) {
  ring_ctx *r = (ring_ctx *)v;
  int i;
  for (i = 0; i < r->nw; i++) {
    dk_status s = dk_linear(r->y, r->x, r->w[i], NULL);
    if (s != DK_OK) return s;
  }
  return DK_OK;
}
static void bench_from_memory(int di, dk_device dev, const char *filter) {
  static const dk_dtype wt[4] = {DK_F16, DK_Q8_0, DK_Q4_0, DK_Q4_K};
  static const char *names[4] = {"dk_linear decode from memory w=f16", "dk_linear decode from memory w=q8_0",
                                 "dk_linear decode from memory w=q4_0", "dk_linear decode from memory w=q4_K"};
  static char sizes[5][48];
  long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  /* twice the LLC, 256 MB to 1 GB (512 MB where the LLC is not reported) */
  size_t n = llc > 0 ? 2 * (size_t)llc : (size_t)512 << 20;
  int64_t ws[2] = {4096, 4096}, xs[2] = {1, 4096};
  int k, i;
  if (!want(filter, "linear") && !want(filter, "memory")) return;
  n = n < ((size_t)256 << 20) ? (size_t)256 << 20 : n > ((size_t)1 << 30) ? (size_t)1 << 30 : n;
  {
    read_ctx rc;
    rc.n = n; rc.nth = bench_threads(); rc.sink = 0;
    rc.buf = (const uint64_t *)malloc(n);
    if (rc.buf) {
      memset((void *)rc.buf, 1, n);
      snprintf(sizes[4], sizeof sizes[4], "%zu MB", n >> 20);
      row_for("memory read (all cores)", sizes[4], "GB/s")->value[di] = (double)n / time_op(dev, read_run, &rc, 0.2) / 1e9;
    }
    free((void *)rc.buf);
  }
  for (k = 0; k < 4; k++) {
    ring_ctx r;
    double bytes = 0, t;
    memset(&r, 0, sizeof r);
    r.x = mk(dev, DK_F32, 2, xs, "x");
    r.y = mk(dev, DK_F32, 2, xs, "y");
    r.w[0] = mk(dev, wt[k], 2, ws, "w");
    if (!r.x || !r.y || !r.w[0]) goto next;
    r.nw = 1;
    bytes = (double)dk_tensor_nbytes(r.w[0]);
    while (r.nw < 64 && bytes < (double)n) {   /* copies of the first: the same speed, no quantizing */
      if (dk_tensor_new(dev, wt[k], 2, ws, "w", &r.w[r.nw]) != DK_OK) break;
      if (dk_copy(r.w[r.nw], r.w[0]) != DK_OK) { dk_tensor_free(r.w[r.nw]); break; }
      bytes += (double)dk_tensor_nbytes(r.w[r.nw++]);
    }
    t = time_op(dev, ring_run, &r, 0.2);
    if (t != t) fprintf(stderr, "  %s on %s: %s\n", names[k], dk_device_name(dev), dk_last_error());
    snprintf(sizes[k], sizeof sizes[k], "4096x4096 x%d (%.0f MB)", r.nw, bytes / 1048576.0);
    row_for(names[k], sizes[k], "GB/s")->value[di] = bytes / t / 1e9;
  next:
    dk_tensor_free(r.x); dk_tensor_free(r.y);
    for (i = 0; i < r.nw; i++) dk_tensor_free(r.w[i]);
  }
}

static void bench_cpu_rows(int di, dk_device dev, int quick, const char *filter) {
  bctx c;
  if (dev.backend != DK_CPU) return;
  memset(&c, 0, sizeof c);
  row_for("cpu kernel class (1 avx2, 2 avx512, 3 amx)", dk_cpu_isa(), "class")->value[di] =
      !strcmp(dk_cpu_isa(), "amx") ? 3 : !strcmp(dk_cpu_isa(), "avx512") ? 2 : !strcmp(dk_cpu_isa(), "avx2") ? 1 : 0;
  if (want(filter, "copy bandwidth") || want(filter, "linear")) {
    copy_ctx cc;
    double t;
    cc.n = (size_t)(quick ? 64 : 256) << 20;
    cc.nth = bench_threads();
    cc.src = (char *)malloc(cc.n); cc.dst = (char *)malloc(cc.n);
    if (cc.src && cc.dst) {
      memset(cc.src, 1, cc.n); memset(cc.dst, 2, cc.n);
      t = time_op(dev, copy_run, &cc, 0.2);
      row_for("memcpy (all cores): read", quick ? "64 MB" : "256 MB", "GB/s")->value[di] = (double)cc.n / t / 1e9;
      row_for("memcpy (all cores): read+write", quick ? "64 MB" : "256 MB", "GB/s")->value[di] = 2.0 * (double)cc.n / t / 1e9;
    }
    free(cc.src); free(cc.dst);
  }
  /* decode rows at 4096 x 4096 for the dtypes the generic rows leave out;
   * from memory, below */
  if (want(filter, "linear")) {
    int64_t ws[2] = {4096, 4096}, xs[2] = {1, 4096};
    c.kind = 6; c.a = mk(dev, DK_F32, 2, xs, "x"); c.b = mk(dev, DK_BF16, 2, ws, "w"); c.c = mk(dev, DK_F32, 2, xs, "y");
    record(di, dev, "dk_linear decode w=bf16", "N=4096 K=4096", &c, 4096.0 * 4096 * 2, 2.0 * 4096 * 4096, 0.1);
  }
  bench_from_memory(di, dev, filter);
  /* decode attention: the cost per cached position should stay flat */
  if (want(filter, "attention")) {
    static const int64_t lens[3] = {128, 1024, 4096};
    static const char *names[3] = {"128 positions", "1024 positions", "4096 positions"};
    int k;
    for (k = 0; k < 3; k++) {
      int64_t qs[3] = {1, 32, 128}, ks[3] = {lens[k], 8, 128};
      double t;
      c.kind = 9; c.a = mk(dev, DK_F32, 3, qs, "q"); c.b = mk(dev, DK_F16, 3, ks, "k"); c.d = mk(dev, DK_F16, 3, ks, "v");
      c.c = mk(dev, DK_F32, 3, qs, "o");
      t = c.a && c.b && c.c && c.d ? time_op(dev, run_case, &c, 0.1) : NAN;
      row_for("dk_attention decode per position", names[k], "ns/pos")->value[di] = t / (double)lens[k] * 1e9;
      free_ctx(&c);
    }
  }
}

/* ---- where a figure comes from, and figures known to mislead ----------------- */

static void cpu_model(char *out, size_t n) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  snprintf(out, n, "unknown CPU");
  while (f && fgets(line, sizeof line, f)) {
    char *c = strchr(line, ':');
    if (!strncmp(line, "model name", 10) && c) {
      c += 2;
      c[strcspn(c, "\n")] = 0;
      snprintf(out, n, "%s", c);
      break;
    }
  }
  if (f) fclose(f);
}

static const row *find_row(const char *name_prefix, const char *unit) {
  int i;
  for (i = 0; i < nrows; i++)
    if (!strncmp(rows[i].name, name_prefix, strlen(name_prefix)) && !strcmp(rows[i].unit, unit)) return &rows[i];
  return NULL;
}

/* A SIMD path known to be slow on some CPUs (the q8_0/q4_0 decode kernels on
 * Intel before the CPU issue's fix): said when it is seen, from the figures
 * themselves, so a table that contradicts the README carries its reason.
 * Decode streams weights, so a quantized row far below f32 (which reads 4x
 * and 7x more bytes) is a slow kernel, not slow memory. */
static int slow_simd_note(const dk_device *devs, int ndev, char *out, size_t n) {
  const row *f = find_row("dk_linear decode w=f32", "GB/s"), *q8 = find_row("dk_linear decode w=q8_0", "GB/s"),
            *q4 = find_row("dk_linear decode w=q4_0", "GB/s");
  int i;
  out[0] = 0;
  for (i = 0; i < ndev && f; i++) {
    double ref = f->value[i], w8 = q8 ? q8->value[i] : NAN, w4 = q4 ? q4->value[i] : NAN;
    if (devs[i].backend != DK_CPU || !(ref > 0)) continue;
    if ((w8 == w8 && w8 < ref / 8) || (w4 == w4 && w4 < ref / 8)) {
      char cpu[256];
      cpu_model(cpu, sizeof cpu);
      snprintf(out, n, "warning: on %s (%s) q8_0/q4_0 decode runs at %.2f/%.2f GB/s against %.2f for f32: a SIMD path "
               "known to be slow on this CPU (see the CPU issue); these rows are not comparable with the README's",
               dk_device_name(devs[i]), cpu, w8, w4, ref);
      return 1;
    }
  }
  return 0;
}

static void write_results(const char *path, const dk_device *devs, int ndev, int argc, char **argv, const char *note) {
  FILE *f = fopen(path, "a");
  char cpu[256], date[32], cmd[1024] = "build/bench";
  const char *commit = getenv("DEVKIT_COMMIT");
  time_t now_s = time(NULL);
  int i, r;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (!f) { fprintf(stderr, "bench: cannot append to %s\n", path); return; }
  cpu_model(cpu, sizeof cpu);
  strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now_s));
  for (i = 1; i < argc; i++) {
    size_t l = strlen(cmd);
    snprintf(cmd + l, sizeof cmd - l, " %s", argv[i]);
  }
  fprintf(f, "\n## %s · %ld cores, %s · commit %s\n\n", date, cores, cpu, commit && *commit ? commit : "unknown");
  fprintf(f, "Written by the bench (`%s`, from `./build.sh bench`).", cmd);
  for (i = 0; i < ndev; i++) {
    dk_device_props p;
    if (dk_device_properties(devs[i], &p) == DK_OK) fprintf(f, " %s = %s.", dk_device_name(devs[i]), p.name);
  }
  fprintf(f, "\n\n");
  if (note[0]) fprintf(f, "%s.\n\n", note);
  fprintf(f, "| op | size | unit |");
  for (i = 0; i < ndev; i++) fprintf(f, " %s |", dk_device_name(devs[i]));
  fprintf(f, "\n|---|---|---|");
  for (i = 0; i < ndev; i++) fprintf(f, "---:|");
  fprintf(f, "\n");
  for (r = 0; r < nrows; r++) {
    fprintf(f, "| %s | %s | %s |", rows[r].name, rows[r].size, rows[r].unit);
    for (i = 0; i < ndev; i++) {
      if (rows[r].value[i] != rows[r].value[i]) fprintf(f, " - |");
      else fprintf(f, " %.2f |", rows[r].value[i]);
    }
    fprintf(f, "\n");
  }
  fclose(f);
  fprintf(stderr, "bench: appended this run to %s\n", path);
}

int main(int argc, char **argv) {
  dk_device devs[MAXDEV];
  int ndev = 0, quick = 0, big = 0, i, r;
  const char *filter = NULL, *results = NULL;
  char note[1024];
  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--results") && i + 1 < argc) results = argv[++i];
    else if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--big")) big = 1;
    else if (!strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
    else if (!strcmp(argv[i], "-d") && i + 1 < argc) {
      if (ndev < MAXDEV && dk_device_parse(argv[++i], &devs[ndev]) == DK_OK) ndev++;
      else { fprintf(stderr, "bench: %s\n", dk_last_error()); return 2; }
    } else {
      fprintf(stderr, "usage: bench [-d DEVICE]... [--quick] [--big] [--filter TEXT] [--results FILE]\n");
      return 2;
    }
  }
  if (!ndev) {
    /* the first device of each backend */
    int b;
    for (b = 0; b < DK_BACKEND_COUNT && ndev < MAXDEV; b++)
      if (dk_device_count((dk_backend)b) > 0) { devs[ndev].backend = (dk_backend)b; devs[ndev].index = 0; ndev++; }
  }
  for (i = 0; i < ndev; i++) bench_device(i, devs[i], quick, big, filter);
  for (i = 0; i < ndev; i++) bench_quant_decode(i, devs[i], filter);
  for (i = 0; i < ndev; i++) bench_quant_prompt(i, devs[i], quick, filter);
  for (i = 0; i < ndev; i++) bench_cpu_rows(i, devs[i], quick, filter);
  bench_models(devs, ndev, argv[0], quick, filter);

  printf("\n%-30s %-24s %-8s", "op", "size", "unit");
  for (i = 0; i < ndev; i++) printf(" %12s", dk_device_name(devs[i]));
  printf("\n");
  for (r = 0; r < nrows; r++) {
    printf("%-30s %-24s %-8s", rows[r].name, rows[r].size, rows[r].unit);
    for (i = 0; i < ndev; i++) {
      if (rows[r].value[i] != rows[r].value[i]) printf(" %12s", "-");
      else printf(" %12.2f", rows[r].value[i]);
    }
    printf("\n");
  }
  printf("\ndevices:\n");
  for (i = 0; i < ndev; i++) {
    dk_device_props p;
    dk_device_properties(devs[i], &p);
    printf("  %-10s %s (%s)\n", dk_device_name(devs[i]), p.name, p.driver);
  }
  if (slow_simd_note(devs, ndev, note, sizeof note)) printf("\n%s\n", note);
  if (results) write_results(results, devs, ndev, argc, argv, note);
  dk_shutdown();
  return 0;
}
