/* tools/gpu_perf.c — the GPU backends' performance targets, measured:
 *   decode GEMV (dk_linear, M = 1) in GB/s of weights streamed against the
 *   device-to-device copy bandwidth (dk_copy_to on one device, bytes read +
 *   written): q4_0, q8_0 and f16 weights at an 8B layer's shapes (4096x4096,
 *   14336x4096, 4096x14336, N x K) and the 1B bench model's, every other
 *   type the kit loads (bf16, q4_1, q5_0, q5_1, q2_K-q6_K, and the iq formats
 *   where the device offers them) at 4096x4096 and 9600x1792; then each
 *   type's lowest share of the copy (issue 17's bar: 85 % for every type, on
 *   CUDA and on Vulkan);
 *   f16 matmul 4096^3 in TFLOP/s against cuBLAS (bench/cublas.h), and a
 *   prompt-sized dk_linear (f32 x [4096, 4096], f16 W [4096, 4096]) likewise.
 * Each figure is the median of 5 runs of n calls (n grown until a run lasts
 * >= 0.2 s), every run closed by dk_sync, inputs random (never zeros). Each
 * GEMV result is also checked against cpu:0 (relative error printed), so a
 * fast wrong kernel cannot pass unnoticed.
 *
 *   cc -O2 -I. tools/gpu_perf.c -o build/gpu_perf -ldl -lm -lpthread
 *   build/gpu_perf [cuda:0 | vulkan:0 | ...] [more | matmul]
 * ("more": the copy and the gemv rows of the types after bf16 only;
 * "matmul": the matmul and linear rows only, e.g. under DEVKIT_CUBLAS=off
 * to time devkit's own GEMMs)
 */
#define _GNU_SOURCE
#define DEVKIT_IMPLEMENTATION
#include "../devkit.h"
#include "../bench/cublas.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct { int kind; dk_tensor *a, *b, *c, *d; } job;
static dk_status run(job *j) {
  switch (j->kind) {
  case 0: return dk_copy_to(j->c, j->a);
  case 1: return dk_linear(j->c, j->a, j->b, NULL);
  case 3: return dk_attention(j->c, j->a, j->b, j->d, 0.088f, -1);
  default: return dk_matmul(j->c, j->a, j->b);
  }
}

/* seconds per call, median of 5 runs; NAN on failure */
static double timeit(dk_device d, job *j) {
  double t[5], t0;
  int n = 1, r, i;
  if (run(j) != DK_OK || dk_sync(d) != DK_OK) { printf("  failed: %s\n", dk_last_error()); return NAN; }
  for (;;) {
    t0 = now();
    for (i = 0; i < n; i++) run(j);
    if (dk_sync(d) != DK_OK) { printf("  failed: %s\n", dk_last_error()); return NAN; }
    if (now() - t0 >= 0.2 || n >= (1 << 16)) break;
    n *= 2;
  }
  for (r = 0; r < 5; r++) {
    t0 = now();
    for (i = 0; i < n; i++) run(j);
    dk_sync(d);
    t[r] = (now() - t0) / n;
  }
  qsort(t, 5, sizeof t[0], cmpd);
  return t[2];
}

static uint64_t rng = 88172645463325252ull;
static float frand(void) {
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* a tensor of random values on d (quantized through dk_quantize) */
static dk_tensor *rnd(dk_device d, dk_dtype t, int64_t r, int64_t c, float **keep) {
  int64_t s[2] = {r, c}, n = r * c, i;
  float *v = (float *)malloc((size_t)n * 4);
  void *bytes = malloc((size_t)n * 4);
  dk_tensor *x = NULL;
  for (i = 0; i < n; i++) v[i] = frand();
  if (dk_tensor_new(d, t, 2, s, "perf", &x) != DK_OK) { printf("  %s\n", dk_last_error()); free(v); free(bytes); return NULL; }
  dk_tensor_upload(x, bytes, dk_quantize(t, v, n, bytes));
  if (keep) *keep = v; else free(v);
  free(bytes);
  return x;
}

/* TFLOP/s of a 4096^3 product: dk_matmul (kind 2) or dk_linear (kind 1)
 * of a and out in xt with f16 b */
static double tflops4096(dk_device d, int kind, dk_dtype xt) {
  job j;
  double tf = NAN;
  j.kind = kind;
  j.a = rnd(d, xt, 4096, 4096, NULL);
  j.b = rnd(d, DK_F16, 4096, 4096, NULL);
  j.c = rnd(d, xt, 4096, 4096, NULL);
  if (j.a && j.b && j.c) tf = 2.0 * 4096.0 * 4096.0 * 4096.0 / timeit(d, &j) / 1e12;
  dk_tensor_free(j.a); dk_tensor_free(j.b); dk_tensor_free(j.c);
  return tf;
}

int main(int argc, char **argv) {
  dk_device d, cpu;
  dk_device_props p;
  double copy_gbs = NAN, mm = NAN, tf = 0.0;
  char note[512];
  /* an 8B layer's shapes, then the 1B bench model's (qkv, gate+up, down) */
  static const int64_t shapes[6][2] = {{4096, 4096}, {14336, 4096}, {4096, 14336}, {2304, 1792}, {9600, 1792}, {1792, 4800}};
  /* the first three types at every shape, the rest at shapes 0 and 4 (the
   * iq formats where the device offers them: CUDA under DEVKIT_CUDA_IQ=1) */
  enum { NW = 19 };
  static const dk_dtype wts[NW] = {DK_Q4_0,   DK_Q8_0,   DK_F16,     DK_BF16,  DK_Q4_1,    DK_Q5_0,   DK_Q5_1,
                                   DK_Q2_K,   DK_Q3_K,   DK_Q4_K,    DK_Q5_K,  DK_Q6_K,    DK_IQ4_NL, DK_IQ4_XS,
                                   DK_IQ3_XXS, DK_IQ3_S, DK_IQ2_XXS, DK_IQ2_XS, DK_IQ2_S};
  /* "more": only the gemv rows of the formats after bf16 (a second run
   * under a switch of theirs) */
  const int more = argc > 2 && !strcmp(argv[2], "more"), mmonly = argc > 2 && !strcmp(argv[2], "matmul");
  double lin = NAN;
  double worst[NW];
  int s, w;
  setvbuf(stdout, NULL, _IOLBF, 0);   /* rows survive a timeout */
  if (dk_device_parse(argc > 1 ? argv[1] : "cuda:0", &d) != DK_OK) { printf("%s\n", dk_last_error()); return 1; }
  cpu.backend = DK_CPU; cpu.index = 0;
  dk_device_properties(d, &p);
  printf("%s: %s (%s)\n\n", dk_device_name(d), p.name, p.driver);
  if (mmonly) goto matmul;

  { /* device-to-device copy, 1 GiB (256 MiB where that does not fit) */
    int64_t side;
    for (side = 16384; side >= 8192 && isnan(copy_gbs); side /= 2) {
      job j;
      char what[64];
      j.kind = 0;
      j.a = rnd(d, DK_F32, side, side, NULL);
      j.c = j.a ? rnd(d, DK_F32, side, side, NULL) : NULL;
      j.b = NULL;
      if (j.a && j.c) {
        copy_gbs = 2.0 * 4.0 * (double)(side * side) / timeit(d, &j) / 1e9;
        snprintf(what, sizeof what, "copy %lld MiB device to device", (long long)(side * side * 4 >> 20));
        printf("%-34s %10.1f GB/s (read + write)\n", what, copy_gbs);
      }
      dk_tensor_free(j.a); dk_tensor_free(j.c);
    }
  }
  for (w = 0; w < NW; w++) worst[w] = NAN;
  for (s = 0; s < 6; s++)
    for (w = more ? 4 : 0; w < NW; w++) {
      int64_t N = shapes[s][0], K = shapes[s][1], n;
      float *xv = NULL, *wv = NULL;
      job j, jc;
      double sec, gbs, err = 0, ref = 0;
      char what[64];
      float *yg, *yc;
      if (w >= 3 && s != 0 && s != 4) continue;
      if (!dk_op_supported(d.backend, "dk_linear", wts[w], 1)) continue;
      j.kind = 1;
      j.a = rnd(d, DK_F32, 1, K, &xv);
      j.b = rnd(d, wts[w], N, K, &wv);
      j.c = rnd(d, DK_F32, 1, N, NULL);
      if (!j.a || !j.b || !j.c) return 1;
      sec = timeit(d, &j);
      gbs = (double)dk_tensor_nbytes(j.b) / sec / 1e9;
      if (isnan(worst[w]) || 100.0 * gbs / copy_gbs < worst[w]) worst[w] = 100.0 * gbs / copy_gbs;
      /* the same product on the CPU */
      jc.kind = 1;
      dk_to(j.a, cpu, &jc.a);
      dk_to(j.b, cpu, &jc.b);
      dk_to(j.c, cpu, &jc.c);
      run(&jc);
      yg = (float *)malloc((size_t)N * 4);
      yc = (float *)malloc((size_t)N * 4);
      dk_tensor_download(j.c, yg, (size_t)N * 4);
      dk_tensor_download(jc.c, yc, (size_t)N * 4);
      for (n = 0; n < N; n++) { err += ((double)yg[n] - yc[n]) * ((double)yg[n] - yc[n]); ref += (double)yc[n] * yc[n]; }
      snprintf(what, sizeof what, "gemv %s N=%lld K=%lld", dk_dtype_name(wts[w]), (long long)N, (long long)K);
      printf("%-34s %10.1f GB/s  %5.1f %% of copy  %7.1f us  rel.err vs cpu %.1e\n", what, gbs, 100.0 * gbs / copy_gbs,
             sec * 1e6, sqrt(err / (ref > 0 ? ref : 1)));
      free(xv); free(wv); free(yg); free(yc);
      dk_tensor_free(j.a); dk_tensor_free(j.b); dk_tensor_free(j.c);
      dk_tensor_free(jc.a); dk_tensor_free(jc.b); dk_tensor_free(jc.c);
    }
  printf("gemv, each type's lowest %% of copy (bar 85, * under):");
  for (w = 0; w < NW; w++)
    if (!isnan(worst[w])) printf(" %s %.1f%s", dk_dtype_name(wts[w]), worst[w], worst[w] >= 85.0 ? "" : "*");
  printf("\n");
  if (more) return 0;
  { /* decode attention: one token, 32 query heads over 8 kv heads of 128,
     * f16 cache; bytes = the K and V rows read */
    static const int64_t ctx[3] = {512, 4096, 32768};
    int c;
    for (c = 0; c < 3; c++) {
      int64_t qs[3] = {1, 32, 128}, ks[3] = {ctx[c], 8, 128};
      job j;
      double sec, gbs;
      char what[64];
      dk_tensor *q2 = rnd(d, DK_F32, 32, 128, NULL), *k2 = rnd(d, DK_F16, ctx[c] * 8, 128, NULL);
      dk_tensor *v2 = rnd(d, DK_F16, ctx[c] * 8, 128, NULL), *o2 = rnd(d, DK_F32, 32, 128, NULL);
      j.kind = 3;
      j.a = j.b = j.c = j.d = NULL;
      if (!q2 || !k2 || !v2 || !o2 || dk_reshape(q2, 3, qs, &j.a) || dk_reshape(k2, 3, ks, &j.b) ||
          dk_reshape(v2, 3, ks, &j.d) || dk_reshape(o2, 3, qs, &j.c)) {
        printf("  failed: %s\n", dk_last_error());
      } else {
        sec = timeit(d, &j);
        gbs = 2.0 * (double)dk_tensor_nbytes(j.b) / sec / 1e9;
        snprintf(what, sizeof what, "attention decode 32q/8kv x128 ctx %lld", (long long)ctx[c]);
        printf("%-34s %10.1f GB/s  %5.1f %% of copy  %7.1f us\n", what, gbs, 100.0 * gbs / copy_gbs, sec * 1e6);
      }
      dk_tensor_free(j.a); dk_tensor_free(j.b); dk_tensor_free(j.c); dk_tensor_free(j.d);
      dk_tensor_free(q2); dk_tensor_free(k2); dk_tensor_free(v2); dk_tensor_free(o2);
    }
  }
matmul:
  mm = tflops4096(d, 2, DK_F16);    /* f16 matmul */
  lin = tflops4096(d, 1, DK_F32);   /* a prompt's dk_linear: f32 x . f16 W^T */
  if (dk_bench_cublas_hgemm(4096, 20, &tf, note, sizeof note) != 0) tf = NAN;
  printf("%-34s %10.1f TFLOP/s  %5.1f %% of cuBLAS\n", "matmul f16 4096^3", mm, 100.0 * mm / tf);
  printf("%-34s %10.1f TFLOP/s  %5.1f %% of cuBLAS\n", "linear f32 x f16 W 4096^3", lin, 100.0 * lin / tf);
  printf("%-34s %10.1f TFLOP/s  (%s)\n", "cuBLAS f16 GEMM 4096^3", tf, note);
  dk_shutdown();
  return 0;
}
