/* tools/vkperf.c — the Vulkan backend's own measurements (not the bench/
 * suite): per-op overhead, linear bandwidth for decode, matmul throughput.
 *   cc -O2 -I. tools/vkperf.c -o build/vkperf -ldl -lm -lpthread
 *   build/vkperf [device]            (default vulkan:0)
 * Each figure is the median of several timed runs after a warm-up. */
#define _GNU_SOURCE
#define DEVKIT_IMPLEMENTATION
#include "../devkit.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

static dk_tensor *filled(dk_device d, dk_dtype t, int nd, const int64_t *s, const char *name) {
  dk_tensor *x = NULL;
  int64_t n = 1, i;
  float *f;
  void *enc;
  size_t nb;
  for (i = 0; i < nd; i++) n *= s[i];
  if (dk_tensor_new(d, t, nd, s, name, &x) != DK_OK) {
    fprintf(stderr, "%s\n", dk_last_error());
    exit(1);
  }
  f = (float *)malloc((size_t)n * sizeof(float));
  enc = malloc((size_t)n * 4 + 64);
  for (i = 0; i < n; i++) f[i] = (float)((i * 7919) % 2001 - 1000) / 4000.0f;
  nb = dk_quantize(t, f, n, enc);
  dk_tensor_upload(x, enc, nb);
  free(f);
  free(enc);
  return x;
}

#define CHECK(expr)                                                            \
  do {                                                                         \
    if ((expr) != DK_OK) { fprintf(stderr, "%s: %s\n", #expr, dk_last_error()); exit(1); } \
  } while (0)

int main(int argc, char **argv) {
  dk_device d;
  double t[9];
  int r, k;
  dk_init();
  if (dk_device_parse(argc > 1 ? argv[1] : "vulkan:0", &d) != DK_OK) {
    fprintf(stderr, "%s\n", dk_last_error());
    return 1;
  }
  {
    dk_device_props p;
    dk_device_properties(d, &p);
    printf("device %s: %s (%s)\n", dk_device_name(d), p.name, p.driver);
  }

  /* 1000 small adds and one download: the cost of an op on the host */
  {
    int64_t n = 4096;
    dk_tensor *a = filled(d, DK_F32, 1, &n, "a"), *b = filled(d, DK_F32, 1, &n, "b");
    float out[4096];
    for (r = 0; r < 6; r++) {
      double t0 = now();
      for (k = 0; k < 1000; k++) CHECK(dk_add(a, a, b));
      CHECK(dk_tensor_download(a, out, sizeof out));
      t[r] = now() - t0;
    }
    printf("1000 x dk_add [4096] f32 + 1 download: %.2f ms  (%.1f us per op)\n", median(t + 1, 5) * 1e3,
           median(t + 1, 5) * 1e3);
    for (r = 0; r < 6; r++) {
      double t0 = now();
      for (k = 0; k < 1000; k++) CHECK(dk_add(a, a, b));
      t[r] = now() - t0;
      CHECK(dk_sync(d));
    }
    printf("  recording alone: %.1f us per op\n", median(t + 1, 5) * 1e3);
    dk_tensor_free(a);
    dk_tensor_free(b);
  }

  /* decode linear: 1 x 4096 . (4096 x 4096)^T */
  {
    dk_dtype wt[4] = {DK_F32, DK_F16, DK_Q8_0, DK_Q4_0};
    int64_t xs[2] = {1, 4096}, ws[2] = {4096, 4096};
    dk_tensor *x = filled(d, DK_F32, 2, xs, "x"), *y = filled(d, DK_F32, 2, xs, "y");
    int w;
    for (w = 0; w < 4; w++) {
      dk_tensor *W = filled(d, wt[w], 2, ws, "w");
      double med;
      CHECK(dk_linear(y, x, W, NULL));
      CHECK(dk_sync(d));
      for (r = 0; r < 7; r++) {
        double t0 = now();
        for (k = 0; k < 10; k++) CHECK(dk_linear(y, x, W, NULL));
        CHECK(dk_sync(d));
        t[r] = (now() - t0) / 10;
      }
      med = median(t, 7);
      printf("linear 1x4096x4096 f32 x, %-4s w: %7.3f ms  %6.2f GB/s of weights\n", dk_dtype_name(wt[w]), med * 1e3,
             (double)dk_tensor_nbytes(W) / med / 1e9);
      dk_tensor_free(W);
    }
    dk_tensor_free(x);
    dk_tensor_free(y);
  }

  /* prompt-sized matmul: 512 x 4096 . 4096 x 4096 */
  {
    int64_t as[2] = {512, 4096}, bs[2] = {4096, 4096}, os[2] = {512, 4096};
    dk_tensor *a = filled(d, DK_F32, 2, as, "a"), *b = filled(d, DK_F32, 2, bs, "b"), *o = filled(d, DK_F32, 2, os, "o");
    double med;
    CHECK(dk_matmul(o, a, b));
    CHECK(dk_sync(d));
    for (r = 0; r < 3; r++) {
      double t0 = now();
      CHECK(dk_matmul(o, a, b));
      CHECK(dk_sync(d));
      t[r] = now() - t0;
    }
    med = median(t, 3);
    printf("matmul 512x4096x4096 f32: %.1f ms  %.1f GFLOP/s\n", med * 1e3, 2.0 * 512 * 4096 * 4096 / med / 1e9);
    {
      dk_tensor *w = filled(d, DK_Q4_0, 2, bs, "wq");
      CHECK(dk_linear(o, a, w, NULL));
      CHECK(dk_sync(d));
      for (r = 0; r < 3; r++) {
        double t0 = now();
        CHECK(dk_linear(o, a, w, NULL));
        CHECK(dk_sync(d));
        t[r] = now() - t0;
      }
      med = median(t, 3);
      printf("linear 512x4096x4096 q4_0 w: %.1f ms  %.1f GFLOP/s\n", med * 1e3, 2.0 * 512 * 4096 * 4096 / med / 1e9);
      dk_tensor_free(w);
    }
    dk_tensor_free(a);
    dk_tensor_free(b);
    dk_tensor_free(o);
  }
  dk_shutdown();
  return 0;
}
