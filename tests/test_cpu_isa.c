/* tests/test_cpu_isa.c — every CPU kernel class this machine runs (portable,
 * avx2, avx512, amx) on the same inputs, for every dtype the CPU linear, matmul,
 * embedding and attention kernels take: each class against the double
 * reference, and each SIMD class against the portable one (a class that is
 * wrong in a way the reference tolerance hides still shows as a difference
 * from portable). The classes this CPU has must all be selectable: a missing
 * one is a failure, not a skip. */
#include "test.h"
#include <pthread.h>

#define ISA_N 4
static const char *const isa_names[ISA_N] = {"portable", "avx2", "avx512", "amx"};

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* which classes this CPU has, from the kernel's view (/proc/cpuinfo, and
 * for amx the tile state Linux supports, ARCH_GET_XCOMP_SUPP), not the
 * library's: the library's choice must agree. Elsewhere: trust it. */
static int isa_expected(int i) {
  static const char *const need[ISA_N][4] = {{NULL}, {"avx2", "fma", "f16c", NULL},
                                             {"avx512f", "avx512bw", "avx512vl", "avx512dq"},
                                             {"amx_tile", "amx_bf16", "avx512_bf16", NULL}};
  char line[8192];
  FILE *f = fopen("/proc/cpuinfo", "r");
  int j, found = -1;
  if (i == 0) { if (f) fclose(f); return 1; }
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "flags", 5) == 0) {
      found = 1;
      line[strcspn(line, "\n")] = ' ';   /* the last flag ends in a space too */
      for (j = 0; j < 4; j++) {
        char key[32];
        if (!need[i][j]) break;
        snprintf(key, sizeof key, " %s ", need[i][j]);
        if (!strstr(line, key)) found = 0;
      }
      break;
    }
  fclose(f);
  if (found && i == 2 && !isa_expected(1)) found = 0;
  if (found && i == 3) {
#if defined(__linux__) && defined(__x86_64__)
    unsigned long long supp = 0;   /* XTILEDATA (bit 18): the kernel saves tile state */
    if (syscall(SYS_arch_prctl, 0x1021 /* ARCH_GET_XCOMP_SUPP */, &supp) != 0 || !((supp >> 18) & 1)) found = 0;
#endif
    if (isa_expected(2) != 1) found = 0;
#if !((defined(__clang__) && __clang_major__ >= 12) || (!defined(__clang__) && __GNUC__ >= 11))
    found = 0;   /* a compiler without AMX intrinsics builds no amx class (backends/cpu_amx.h) */
#endif
  }
  return found;
}

/* one op on fixed tensors, run once per class */
typedef struct {
  char what[96];
  dk_tensor *out;
  int64_t n;                 /* elements of out */
  double *want;              /* double reference */
  double atol, rtol;         /* against the reference */
  double patol, prtol;       /* against portable */
  double amx_atol;           /* added to both in the amx class (x in bf16 on tiles) */
} isa_case;

typedef dk_status (*isa_run_fn)(void *ctx);

static void isa_compare(dkt *t, isa_case *c, isa_run_fn run, void *ctx) {
  double *portable = dkt_alloc(c->n), *got = dkt_alloc(c->n);
  int i, have_portable = 0;
  for (i = 0; i < ISA_N; i++) {
    char what[160];
    dk_status s = dk_cpu_set_isa(isa_names[i]);
    if (s != DK_OK) {
      DKT_CHECK(t, isa_expected(i) != 1, "cpuid has %s but dk_cpu_set_isa refused it: %s", isa_names[i], dk_last_error());
      continue;
    }
    DKT_CHECK(t, strcmp(dk_cpu_isa(), isa_names[i]) == 0, "dk_cpu_isa() is %s after setting %s", dk_cpu_isa(),
              isa_names[i]);
    s = run(ctx);
    if (s != DK_OK) {
      dkt_fail_at(t, __FILE__, __LINE__, "%s with %s kernels: %s: %s", c->what, isa_names[i], dk_status_name(s),
                  dk_last_error());
      continue;
    }
    if (!dkt_read(t, c->out, got)) continue;
    snprintf(what, sizeof what, "%s [%s vs double]", c->what, isa_names[i]);
    dkt_close(t, what, got, c->want, c->n, c->atol + (i == 3 ? c->amx_atol : 0), c->rtol);
    if (i == 0) {
      memcpy(portable, got, (size_t)c->n * sizeof(double));
      have_portable = 1;
    } else if (have_portable) {
      snprintf(what, sizeof what, "%s [%s vs portable]", c->what, isa_names[i]);
      dkt_close(t, what, got, portable, c->n, c->patol + (i == 3 ? c->amx_atol : 0), c->prtol);
    }
  }
  dk_cpu_set_isa(NULL);
  free(portable); free(got);
}

/* ---- linear (gemv for M <= 4, gemm above) ------------------------------------ */

/* whether any class this CPU runs rounds an M-row product's x to q8 (the
 * tolerance is shared: the amx class's tiles take prompts off q8, avx512's
 * VNNI kernels keep them) */
static int isa_any_q8(dk_dtype wdt, int64_t M) {
  int i, any = 0;
  for (i = 0; i < ISA_N; i++)
    if (dk_cpu_set_isa(isa_names[i]) == DK_OK) any |= dkt_q8_acts(1, wdt, M);
  dk_cpu_set_isa(NULL);
  return any;
}

typedef struct { dk_tensor *o, *x, *w, *b; } lin_ctx;
static dk_status lin_run(void *p) { lin_ctx *l = (lin_ctx *)p; return dk_linear(l->o, l->x, l->w, l->b); }

static void isa_linear(dkt *t, dk_dtype xdt, dk_dtype wdt, int64_t M, int64_t N, int64_t K, int with_bias) {
  int64_t xs[2] = {M, K}, ws[2] = {N, K}, os[2] = {M, N}, m, n, k;
  double *xv, *wv, *bv = NULL;
  lin_ctx l;
  isa_case c;
  memset(&c, 0, sizeof c);
  l.x = dkt_random(t, t->dev, xdt, 2, xs, "x", -1, 1, &xv);
  l.w = dkt_random(t, t->dev, wdt, 2, ws, "w", -1, 1, &wv);
  l.b = with_bias ? dkt_random(t, t->dev, xdt, 1, &N, "bias", -1, 1, &bv) : NULL;
  l.o = dkt_tensor(t, t->dev, xdt, 2, os, "out", NULL);
  c.n = M * N;
  c.want = dkt_alloc(c.n);
  c.out = l.o;
  if (l.x && l.w && l.o && (l.b || !with_bias)) {
    for (m = 0; m < M; m++)
      for (n = 0; n < N; n++) {
        double acc = bv ? bv[n] : 0;
        for (k = 0; k < K; k++) acc += xv[m * K + k] * wv[n * K + k];
        c.want[m * N + n] = acc;
      }
    snprintf(c.what, sizeof c.what, "linear x %s w %s M=%lld N=%lld K=%lld", dk_dtype_name(xdt), dk_dtype_name(wdt),
             (long long)M, (long long)N, (long long)K);
    c.rtol = dkt_tol(xdt, K);
    c.atol = c.rtol * sqrt((double)K) * 1.5;
    c.prtol = c.rtol;
    c.patol = c.atol;   /* decode's q8 activations: exact integer sums in every class, so portable stays this close */
    if (isa_any_q8(wdt, M)) {
      const double q8 = dkt_q8_act_bound(xv, wv, M, N, K);
      c.atol += q8;
      if (M > 4) c.patol = c.atol;   /* a prompt's: portable keeps f32 activations */
      /* a K-quant decode: portable rounds x in dword-lane blocks, the VNNI
         classes in 32-value runs (dkt_cpu_kq_lanes) */
      else if (dkt_cpu_vnni() && dkt_kquant(wdt)) c.patol += 2 * q8;
    }
    /* the amx class's bf16 rounding (computed while the best class is in use) */
    if (dk_cpu_set_isa("amx") == DK_OK) c.amx_atol = dkt_half_act_bound(t->dev, xdt, wdt, 0, xv, wv, M, N, K);
    dk_cpu_set_isa(NULL);
    isa_compare(t, &c, lin_run, &l);
  }
  dk_tensor_free(l.x); dk_tensor_free(l.w); dk_tensor_free(l.b); dk_tensor_free(l.o);
  free(xv); free(wv); free(bv); free(c.want);
}

DKT_TEST(cpu_isa_linear, DKT_ONCE) {
  /* every weight dtype the CPU linear takes, backends/cpu_quant.h's included */
  static const dk_dtype wts[20] = {DK_F32,  DK_F16,  DK_BF16, DK_Q8_0, DK_Q4_0, DK_Q4_1,   DK_Q5_0,  DK_Q5_1,
                                   DK_Q2_K, DK_Q3_K, DK_Q4_K, DK_Q5_K, DK_Q6_K, DK_IQ4_NL, DK_IQ4_XS, DK_IQ3_XXS, DK_IQ3_S,
                                   DK_IQ2_XXS, DK_IQ2_XS, DK_IQ2_S};
  static const int64_t Ms[3] = {1, 3, 20};
  int w, x, m;
  for (w = 0; w < 20; w++)
    for (x = 0; x < 3; x++)
      for (m = 0; m < 3; m++) {
        int blk = dk_dtype_block(wts[w]);
        /* float K not a multiple of 8 or 16: every vector tail runs; blocks: several, odd count */
        isa_linear(t, dkt_float_types[x], wts[w], Ms[m], 37, blk == 1 ? 107 : blk == 32 ? 160 : 768, m == 1);
        /* floats with K a multiple of 8: the row-form prompt product (21 rows, 38 columns: tile tails) */
        if (blk == 1 && m == 2) isa_linear(t, dkt_float_types[x], wts[w], 21, 38, 104, 0);
        /* and K past the AVX-512 row form's 1024-value passes (a second, short pass adds to the first) */
        if (m == 2) isa_linear(t, dkt_float_types[x], wts[w], 13, 14, blk == 1 ? 1048 : blk == 32 ? 1056 : 1280, 1);
        /* and more rows than one pass of the row form's copies (256): slices */
        if (m == 2) isa_linear(t, dkt_float_types[x], wts[w], 300, 14, blk == 1 ? 104 : blk == 32 ? 160 : 256, 1);
      }
}

/* ---- matmul (the packed micro-kernel) ---------------------------------------- */

typedef struct { dk_tensor *o, *a, *b; } mm_ctx;
static dk_status mm_run(void *p) { mm_ctx *m = (mm_ctx *)p; return dk_matmul(m->o, m->a, m->b); }

DKT_TEST(cpu_isa_matmul, DKT_ONCE) {
  int d;
  for (d = 0; d < 3; d++) {
    dk_dtype dt = dkt_float_types[d];
    int64_t M = 19, K = 71, N = 45, as[2] = {M, K}, bs[2] = {K, N}, os[2] = {M, N}, i, j, k;
    double *av, *bv;
    mm_ctx mm;
    isa_case c;
    memset(&c, 0, sizeof c);
    mm.a = dkt_random(t, t->dev, dt, 2, as, "a", -1, 1, &av);
    mm.b = dkt_random(t, t->dev, dt, 2, bs, "b", -1, 1, &bv);
    mm.o = dkt_tensor(t, t->dev, dt, 2, os, "out", NULL);
    c.n = M * N;
    c.want = dkt_alloc(c.n);
    c.out = mm.o;
    if (mm.a && mm.b && mm.o) {
      for (i = 0; i < M; i++)
        for (j = 0; j < N; j++) {
          double acc = 0;
          for (k = 0; k < K; k++) acc += av[i * K + k] * bv[k * N + j];
          c.want[i * N + j] = acc;
        }
      snprintf(c.what, sizeof c.what, "matmul %s %lldx%lldx%lld", dk_dtype_name(dt), (long long)M, (long long)K,
               (long long)N);
      c.rtol = c.prtol = dkt_tol(dt, K);
      c.atol = c.patol = c.rtol * sqrt((double)K) * 1.5;
      isa_compare(t, &c, mm_run, &mm);
    }
    dk_tensor_free(mm.a); dk_tensor_free(mm.b); dk_tensor_free(mm.o);
    free(av); free(bv); free(c.want);
  }
}

/* ---- embedding (row dequantization and f16 stores) --------------------------- */

typedef struct { dk_tensor *o, *tab, *ids; } emb_ctx;
static dk_status emb_run(void *p) { emb_ctx *e = (emb_ctx *)p; return dk_embedding(e->o, e->tab, e->ids); }

DKT_TEST(cpu_isa_embedding, DKT_ONCE) {
  static const dk_dtype tabs[5] = {DK_F32, DK_F16, DK_BF16, DK_Q8_0, DK_Q4_0};
  static const int32_t ids[5] = {0, 40, 7, 7, 23};
  int k, od;
  for (k = 0; k < 5; k++)
    for (od = 0; od < 3; od++) {
      dk_dtype odt = dkt_float_types[od];
      int quant = tabs[k] == DK_Q8_0 || tabs[k] == DK_Q4_0;
      int64_t D = quant ? 96 : 83, ts[2] = {41, D}, ns = 5, os[2] = {5, D}, i, j;
      double *tv;
      emb_ctx e;
      isa_case c;
      memset(&c, 0, sizeof c);
      e.tab = dkt_random(t, t->dev, tabs[k], 2, ts, "table", -2, 2, &tv);
      e.ids = dkt_ids(t, t->dev, 1, &ns, "ids", ids);
      e.o = dkt_tensor(t, t->dev, odt, 2, os, "out", NULL);
      c.n = 5 * D;
      c.want = dkt_alloc(c.n);
      c.out = e.o;
      if (e.tab && e.ids && e.o) {
        for (i = 0; i < 5; i++)
          for (j = 0; j < D; j++) c.want[i * D + j] = tv[ids[i] * D + j];
        dkt_round_to(odt, c.want, c.n);
        snprintf(c.what, sizeof c.what, "embedding %s -> %s", dk_dtype_name(tabs[k]), dk_dtype_name(odt));
        c.rtol = odt == DK_F32 ? 1e-7 : 0;   /* a copy: exact after rounding */
        isa_compare(t, &c, emb_run, &e);
      }
      dk_tensor_free(e.tab); dk_tensor_free(e.ids); dk_tensor_free(e.o);
      free(tv); free(c.want);
    }
}

/* ---- attention (dots, axpy, f16/bf16 caches) --------------------------------- */

typedef struct { dk_tensor *o, *q, *k, *v; float scale; int off; } att_ctx;
static dk_status att_run(void *p) {
  att_ctx *a = (att_ctx *)p;
  return dk_attention(a->o, a->q, a->k, a->v, a->scale, a->off);
}

static void isa_attention(dkt *t, dk_dtype qdt, dk_dtype kdt, int64_t T, int64_t S, int off, int64_t Hq, int64_t Hkv,
                          int64_t D) {
  int64_t qs[3] = {T, Hq, D}, ks[3] = {S, Hkv, D}, os[3] = {T, Hq, D}, tt, h, s, j;
  double *qv, *kv, *vv;
  att_ctx a;
  isa_case c;
  memset(&c, 0, sizeof c);
  a.q = dkt_random(t, t->dev, qdt, 3, qs, "q", -1, 1, &qv);
  a.k = dkt_random(t, t->dev, kdt, 3, ks, "k", -1, 1, &kv);
  a.v = dkt_random(t, t->dev, kdt, 3, ks, "v", -1, 1, &vv);
  a.o = dkt_tensor(t, t->dev, qdt, 3, os, "out", NULL);
  a.scale = (float)(1.0 / sqrt((double)D));
  a.off = off;
  c.n = T * Hq * D;
  c.want = dkt_alloc(c.n);
  c.out = a.o;
  if (a.q && a.k && a.v && a.o) {
    double *sc = dkt_alloc(S);
    for (tt = 0; tt < T; tt++)
      for (h = 0; h < Hq; h++) {
        int64_t g = h / (Hq / Hkv), lim = tt + off + 1 < S ? tt + off + 1 : S;
        double mx = -INFINITY, z = 0;
        for (s = 0; s < lim; s++) {
          double dot = 0;
          for (j = 0; j < D; j++) dot += qv[(tt * Hq + h) * D + j] * kv[(s * Hkv + g) * D + j];
          sc[s] = dot * (double)a.scale;
          mx = fmax(mx, sc[s]);
        }
        for (s = 0; s < lim; s++) { sc[s] = exp(sc[s] - mx); z += sc[s]; }
        for (j = 0; j < D; j++) {
          double acc = 0;
          for (s = 0; s < lim; s++) acc += sc[s] / z * vv[(s * Hkv + g) * D + j];
          c.want[(tt * Hq + h) * D + j] = acc;
        }
      }
    free(sc);
    snprintf(c.what, sizeof c.what, "attention q %s kv %s T=%lld S=%lld Hq=%lld Hkv=%lld D=%lld", dk_dtype_name(qdt),
             dk_dtype_name(kdt), (long long)T, (long long)S, (long long)Hq, (long long)Hkv, (long long)D);
    c.atol = c.rtol = c.patol = c.prtol = dkt_tol(qdt, D) * 2;
    isa_compare(t, &c, att_run, &a);
  }
  dk_tensor_free(a.q); dk_tensor_free(a.k); dk_tensor_free(a.v); dk_tensor_free(a.o);
  free(qv); free(kv); free(vv); free(c.want);
}

DKT_TEST(cpu_isa_attention, DKT_ONCE) {
  int qd, kd;
  for (qd = 0; qd < 3; qd++)
    for (kd = 0; kd < 3; kd++) {
      isa_attention(t, dkt_float_types[qd], dkt_float_types[kd], 1, 300, 299, 8, 2, 40);   /* decode over a long cache */
      isa_attention(t, dkt_float_types[qd], dkt_float_types[kd], 6, 6, 0, 8, 2, 40);       /* a causal prompt */
      /* a prompt in tiles (backends/cpu_fattn.h): 16 tokens a tile, keys in blocks of 64 */
      isa_attention(t, dkt_float_types[qd], dkt_float_types[kd], 40, 100, 60, 8, 2, 64);
    }
  /* tiles of 9 tokens of a group of 7 heads (63 rows: a short micro-kernel
   * call), heads of 40 (a column tail in either width) after a cache; one
   * head a group (64 tokens a tile) of 24 */
  isa_attention(t, DK_F32, DK_F32, 70, 100, 30, 7, 1, 40);
  isa_attention(t, DK_F32, DK_F32, 130, 130, 0, 3, 3, 24);
  /* the SIMD dots take eight rows at a time and the rest four by four: a
   * group of 19 query heads (two eights and three) with a row tail (D = 20),
   * and stories260K's heads of 8, whose scores take key rows eight at a time
   * (37 positions: a tail; 200: the split over positions) */
  isa_attention(t, DK_F32, DK_F32, 1, 70, 69, 19, 1, 20);
  /* the weighted sum of V keeps 64 outputs in registers, then 8, then one:
   * 100 = 64 + 32 + 4, per (token, head) task and split over positions */
  isa_attention(t, DK_F32, DK_F32, 1, 70, 69, 6, 2, 100);
  isa_attention(t, DK_F32, DK_F32, 1, 150, 149, 6, 2, 100);
  isa_attention(t, DK_F32, DK_F32, 4, 40, 36, 6, 3, 64);
  isa_attention(t, DK_F32, DK_F32, 1, 37, 36, 8, 4, 8);
  isa_attention(t, DK_F32, DK_F32, 1, 200, 199, 8, 4, 8);
  isa_attention(t, DK_F32, DK_F32, 3, 37, 34, 8, 4, 8);
}

DKT_TEST(cpu_isa_select, DKT_ONCE) {
  int i, n = 0;
  DKT_REFUSED(t, dk_cpu_set_isa("sse9"), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "sse9");
  for (i = 0; i < ISA_N; i++) {
    dk_status s = dk_cpu_set_isa(isa_names[i]);
    int want = isa_expected(i);
    DKT_CHECK(t, want < 0 || (s == DK_OK) == want, "%s: dk_cpu_set_isa -> %s, /proc/cpuinfo says %s", isa_names[i],
              dk_status_name(s), want ? "present" : "absent");
    if (s == DK_OK) n++;
    else DKT_CHECK(t, s == DK_ERR_UNSUPPORTED, "%s refused with %s", isa_names[i], dk_status_name(s));
  }
  DKT_OK(t, dk_cpu_set_isa(NULL));
  dkt_note(t, "kernel classes on this CPU: %d, default %s", n, dk_cpu_isa());
}

/* ---- lazy backends -------------------------------------------------------- */

/* is a shared object whose path holds `name` mapped into this process? */
static int lib_mapped(const char *name) {
  char line[1024];
  int found = 0;
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  while (!found && fgets(line, sizeof line, f)) found = strstr(line, name) != NULL;
  fclose(f);
  return found;
}

/* A program that names only cpu devices never loads a GPU driver; naming
 * another backend starts it then. Runs in its own process (the runner forks
 * per test and never initializes devkit in the parent). */
DKT_TEST(lazy_backends_cpu_only, DKT_ONCE | DKT_MULTI_BACKEND) {
  dk_device d;
  dk_tensor *x = NULL, *y = NULL;
  int64_t n = 64;
  int n_vk;
  if (lib_mapped("libvulkan") != 0 || lib_mapped("libcuda") != 0) {
    dkt_skip(t, "a GPU driver is already mapped before the test (or no /proc/self/maps)");
    return;
  }
  DKT_OK(t, dk_device_parse("cpu", &d));
  x = dkt_random(t, d, DK_F32, 1, &n, "x", -1, 1, NULL);
  y = dkt_tensor(t, d, DK_F32, 1, &n, "y", NULL);
  if (x && y) DKT_OK(t, dk_silu(y, x));
  DKT_CHECK(t, dk_device_count(DK_CPU) >= 1, "no cpu device");
  DKT_CHECK(t, lib_mapped("libvulkan") == 0, "libvulkan was loaded by a cpu-only program");
  DKT_CHECK(t, lib_mapped("libcuda") == 0, "libcuda was loaded by a cpu-only program");
  n_vk = dk_device_count(DK_VULKAN);   /* naming the backend starts it */
  if (n_vk > 0) DKT_CHECK(t, lib_mapped("libvulkan") == 1, "%d vulkan devices without libvulkan mapped", n_vk);
  else dkt_note(t, "vulkan: %s", dk_backend_note(DK_VULKAN));
  dk_tensor_free(x); dk_tensor_free(y);
}

/* ---- AMX tiles from two threads ---------------------------------------------- */

/* each thread sets up its own tiles (configuration, the B tiles in its
 * caller scratch): two threads' products on cpu:0 and cpu:1 at once give
 * the bits each gives alone */
typedef struct {
  dk_tensor *o, *x, *w;
  float *got;
  int64_t n;
  int ok;
} amx_job;

static void *amx_thread(void *arg) {
  amx_job *j = (amx_job *)arg;
  int i;
  j->ok = 1;
  for (i = 0; i < 40 && j->ok; i++) {
    float *cur = (float *)malloc((size_t)j->n * sizeof(float));
    if (!cur || dk_linear(j->o, j->x, j->w, NULL) != DK_OK || dk_tensor_download(j->o, cur, (size_t)j->n * 4) != DK_OK ||
        (i > 0 && memcmp(cur, j->got, (size_t)j->n * 4) != 0))
      j->ok = 0;
    if (i == 0 && cur) memcpy(j->got, cur, (size_t)j->n * 4);
    free(cur);
  }
  return NULL;
}

DKT_TEST(cpu_amx_two_threads, 0) {
  const int64_t M = 40, N = 70, K = 512, xs[2] = {M, K}, ws[2] = {N, K}, os[2] = {M, N};
  amx_job j[2];
  pthread_t th[2];
  float *solo[2];
  int k;
  if (t->dev.backend != DK_CPU) { dkt_skip(t, "cpu only (the amx kernel class)"); return; }
  if (strcmp(dk_cpu_isa(), "amx") != 0) {
    dkt_skip(t, "this CPU or OS has no AMX-BF16 tiles (kernel class %s)", dk_cpu_isa());
    return;
  }
  if (!t->has_dev2) { dkt_skip(t, "needs a second logical device"); return; }
  for (k = 0; k < 2; k++) {
    dk_device d = k ? t->dev2 : t->dev;
    j[k].x = dkt_random(t, d, DK_F32, 2, xs, "x", -1, 1, NULL);
    j[k].w = dkt_random(t, d, k ? DK_Q4_K : DK_Q8_0, 2, ws, "w", -1, 1, NULL);
    j[k].o = dkt_tensor(t, d, DK_F32, 2, os, "out", NULL);
    j[k].n = M * N;
    j[k].got = (float *)calloc((size_t)(M * N), sizeof(float));
    solo[k] = (float *)calloc((size_t)(M * N), sizeof(float));
  }
  if (j[0].x && j[0].w && j[0].o && j[1].x && j[1].w && j[1].o && solo[0] && solo[1] && j[0].got && j[1].got) {
    for (k = 0; k < 2; k++) {
      amx_thread(&j[k]);
      DKT_CHECK(t, j[k].ok, "thread %d's products alone differ from run to run or failed: %s", k, dk_last_error());
      memcpy(solo[k], j[k].got, (size_t)(M * N) * 4);
    }
    for (k = 0; k < 2; k++) pthread_create(&th[k], NULL, amx_thread, &j[k]);
    for (k = 0; k < 2; k++) pthread_join(th[k], NULL);
    for (k = 0; k < 2; k++) {
      DKT_CHECK(t, j[k].ok, "product %d on %s: differs from run to run beside the other thread", k,
                dk_device_name(k ? t->dev2 : t->dev));
      DKT_CHECK(t, memcmp(j[k].got, solo[k], (size_t)(M * N) * 4) == 0, "product %d on %s: other bits beside the other thread",
                k, dk_device_name(k ? t->dev2 : t->dev));
    }
  }
  for (k = 0; k < 2; k++) {
    dk_tensor_free(j[k].x); dk_tensor_free(j[k].w); dk_tensor_free(j[k].o);
    free(j[k].got); free(solo[k]);
  }
}
