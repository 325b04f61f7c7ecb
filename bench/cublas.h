/* bench/cublas.h — the cuBLAS reference for devkit's matmul benchmark.
 *
 *   static int dk_bench_cublas_hgemm(int n, int iters, double *tflops,
 *                                    char *note, size_t note_len);
 *
 * Runs C = A . B with A, B, C f16 n x n, f32 accumulation (cublasGemmEx,
 * CUBLAS_COMPUTE_32F, tensor cores allowed) on CUDA device 0, `iters` times
 * after 3 warm-up calls, timed with CUDA events on the default stream, and
 * returns the rate in TFLOP/s (2 n^3 per product) in *tflops. Returns 0 on
 * success; nonzero with the reason in note when there is no driver, no GPU
 * or no cuBLAS.
 *
 * Like the kit, it links nothing: libcuda.so.1 is dlopen'ed for the context,
 * memory and events (driver API only: the primary context of device 0 is made
 * current, which the CUDA runtime inside cuBLAS then uses), and cuBLAS is
 * dlopen'ed as DEVKIT_CUBLAS (a path) or libcublas.so.13 / .12 / .11, also
 * looked up in /usr/local/cuda/lib64 and /usr/local/cuda/lib. No libcudart is
 * loaded by this file (cuBLAS loads its own).
 *
 * The inputs are random f16 values in +-[1/32, 1) (never zeros: a GEMM on
 * zeros runs faster than on data). Include it in one translation unit.
 */
#ifndef DK_BENCH_CUBLAS_H
#define DK_BENCH_CUBLAS_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define DK_BCB_UNUSED __attribute__((unused))
#else
#define DK_BCB_UNUSED
#endif

/* driver API subset (ABI of cuda.h; see backends/cuda.h for the approach) */
typedef unsigned int dk_bcb_res;
struct CUctx_st;
struct CUevent_st;
typedef struct {
  dk_bcb_res (*Init)(unsigned int);
  dk_bcb_res (*GetProcAddress)(const char *, void **, int, uint64_t, unsigned int *);
  dk_bcb_res (*DeviceGet)(int *, int);
  dk_bcb_res (*DevicePrimaryCtxRetain)(struct CUctx_st **, int);
  dk_bcb_res (*DevicePrimaryCtxRelease)(int);
  dk_bcb_res (*CtxSetCurrent)(struct CUctx_st *);
  dk_bcb_res (*MemAlloc)(unsigned long long *, size_t);
  dk_bcb_res (*MemFree)(unsigned long long);
  dk_bcb_res (*MemcpyHtoD)(unsigned long long, const void *, size_t);
  dk_bcb_res (*EventCreate)(struct CUevent_st **, unsigned int);
  dk_bcb_res (*EventRecord)(struct CUevent_st *, void *);
  dk_bcb_res (*EventSynchronize)(struct CUevent_st *);
  dk_bcb_res (*EventElapsedTime)(float *, struct CUevent_st *, struct CUevent_st *);
  dk_bcb_res (*EventDestroy)(struct CUevent_st *);
} dk_bcb_cu;

/* cuBLAS subset (cublas_api.h, library_types.h) */
typedef int (*dk_bcb_create_fn)(void **handle);
typedef int (*dk_bcb_destroy_fn)(void *handle);
typedef int (*dk_bcb_gemmex_fn)(void *handle, int transa, int transb, int m, int n, int k, const void *alpha,
                                const void *A, int Atype, int lda, const void *B, int Btype, int ldb, const void *beta,
                                void *C, int Ctype, int ldc, int computeType, int algo);
#define DK_BCB_OP_N 0
#define DK_BCB_R_16F 2
#define DK_BCB_COMPUTE_32F 68
#define DK_BCB_GEMM_DEFAULT (-1)

static int dk_bcb_sym(const dk_bcb_cu *cu, const char *name, int version, void *out) {
  void *fn = NULL;
  unsigned int st = 1;
  if (cu->GetProcAddress(name, &fn, version, 0, &st) != 0 || st != 0 || !fn) return 0;
  memcpy(out, &fn, sizeof fn);
  return 1;
}

static void *dk_bcb_open_cublas(char *tried, size_t cap) {
  static const char *names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"};
  static const char *dirs[] = {"", "/usr/local/cuda/lib64/", "/usr/local/cuda/lib/"};
  const char *env = getenv("DEVKIT_CUBLAS");
  char path[512];
  size_t d, i;
  void *h;
  tried[0] = 0;
  if (env && *env) {
    if ((h = dlopen(env, RTLD_NOW | RTLD_LOCAL)) != NULL) return h;
    snprintf(tried, cap, "%s: %s", env, dlerror());
    return NULL;
  }
  for (d = 0; d < sizeof dirs / sizeof dirs[0]; d++)
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
      snprintf(path, sizeof path, "%s%s", dirs[d], names[i]);
      if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) != NULL) return h;
    }
  snprintf(tried, cap, "libcublas.so.13/.12/.11 not found (also in /usr/local/cuda/lib64 and lib; set DEVKIT_CUBLAS)");
  return NULL;
}

static int dk_bench_cublas_hgemm(int n, int iters, double *tflops, char *note, size_t note_len) DK_BCB_UNUSED;
static int dk_bench_cublas_hgemm(int n, int iters, double *tflops, char *note, size_t note_len) {
  dk_bcb_cu cu;
  void *lib = NULL, *blas = NULL, *handle = NULL;
  dk_bcb_create_fn create = NULL;
  dk_bcb_destroy_fn destroy = NULL;
  dk_bcb_gemmex_fn gemm = NULL;
  struct CUctx_st *ctx = NULL;
  struct CUevent_st *e0 = NULL, *e1 = NULL;
  unsigned long long A = 0, B = 0, C = 0;
  uint16_t *host = NULL;
  size_t bytes = (size_t)n * (size_t)n * 2, i;
  float alpha = 1.0f, beta = 0.0f, ms = 0.0f;
  int dev = 0, rc = 1, it, st;
  dk_bcb_res r;
  uint32_t seed = 12345u;
  memset(&cu, 0, sizeof cu);
  *tflops = 0.0;
  note[0] = 0;
  if (n <= 0 || iters <= 0) { snprintf(note, note_len, "n and iters must be > 0"); return 1; }
  lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) { snprintf(note, note_len, "libcuda.so.1 not found: no CUDA driver"); return 1; }
  *(void **)&cu.Init = dlsym(lib, "cuInit");
  *(void **)&cu.GetProcAddress = dlsym(lib, "cuGetProcAddress_v2");
  if (!cu.Init || !cu.GetProcAddress) { snprintf(note, note_len, "libcuda.so.1 lacks cuInit or cuGetProcAddress_v2"); goto out; }
  if ((r = cu.Init(0)) != 0) { snprintf(note, note_len, "cuInit failed (%u): no usable GPU", r); goto out; }
  if (!dk_bcb_sym(&cu, "cuDeviceGet", 2000, &cu.DeviceGet) ||
      !dk_bcb_sym(&cu, "cuDevicePrimaryCtxRetain", 7000, &cu.DevicePrimaryCtxRetain) ||
      !dk_bcb_sym(&cu, "cuDevicePrimaryCtxRelease", 11000, &cu.DevicePrimaryCtxRelease) ||
      !dk_bcb_sym(&cu, "cuCtxSetCurrent", 4000, &cu.CtxSetCurrent) ||
      !dk_bcb_sym(&cu, "cuMemAlloc", 3020, &cu.MemAlloc) || !dk_bcb_sym(&cu, "cuMemFree", 3020, &cu.MemFree) ||
      !dk_bcb_sym(&cu, "cuMemcpyHtoD", 3020, &cu.MemcpyHtoD) ||
      !dk_bcb_sym(&cu, "cuEventCreate", 2000, &cu.EventCreate) ||
      !dk_bcb_sym(&cu, "cuEventRecord", 2000, &cu.EventRecord) ||
      !dk_bcb_sym(&cu, "cuEventSynchronize", 2000, &cu.EventSynchronize) ||
      !(dk_bcb_sym(&cu, "cuEventElapsedTime", 12080, &cu.EventElapsedTime) ||
        dk_bcb_sym(&cu, "cuEventElapsedTime", 2000, &cu.EventElapsedTime)) ||
      !dk_bcb_sym(&cu, "cuEventDestroy", 4000, &cu.EventDestroy)) {
    snprintf(note, note_len, "the CUDA driver lacks an entry point the benchmark needs");
    goto out;
  }
  if (cu.DeviceGet(&dev, 0) != 0 || cu.DevicePrimaryCtxRetain(&ctx, dev) != 0 || cu.CtxSetCurrent(ctx) != 0) {
    snprintf(note, note_len, "no context on CUDA device 0");
    ctx = NULL;
    goto out;
  }
  blas = dk_bcb_open_cublas(note, note_len);   /* the reason lands in note */
  if (!blas) goto out;
  *(void **)&create = dlsym(blas, "cublasCreate_v2");
  *(void **)&destroy = dlsym(blas, "cublasDestroy_v2");
  *(void **)&gemm = dlsym(blas, "cublasGemmEx");
  if (!create || !destroy || !gemm) { snprintf(note, note_len, "cuBLAS lacks cublasCreate_v2/cublasGemmEx"); goto out; }
  if ((st = create(&handle)) != 0) { snprintf(note, note_len, "cublasCreate failed (status %d)", st); handle = NULL; goto out; }
  host = (uint16_t *)malloc(bytes);
  if (!host) { snprintf(note, note_len, "no host memory for %zu bytes", bytes); goto out; }
  for (i = 0; i < (size_t)n * (size_t)n; i++) {
    /* a random normal f16: sign, exponent 2^-5 .. 2^-1, mantissa */
    seed = seed * 1664525u + 1013904223u;
    host[i] = (uint16_t)(((seed >> 31) << 15) | ((10u + (seed >> 24) % 5u) << 10) | ((seed >> 8) & 0x3ffu));
  }
  if (cu.MemAlloc(&A, bytes) != 0 || cu.MemAlloc(&B, bytes) != 0 || cu.MemAlloc(&C, bytes) != 0) {
    snprintf(note, note_len, "cuMemAlloc of 3 x %zu bytes failed", bytes);
    goto out;
  }
  if (cu.MemcpyHtoD(A, host, bytes) != 0 || cu.MemcpyHtoD(B, host, bytes) != 0 || cu.MemcpyHtoD(C, host, bytes) != 0 ||
      cu.EventCreate(&e0, 0) != 0 || cu.EventCreate(&e1, 0) != 0) {
    snprintf(note, note_len, "uploading the inputs failed");
    goto out;
  }
  for (it = 0; it < 3 + iters; it++) {
    if (it == 3 && cu.EventRecord(e0, NULL) != 0) { snprintf(note, note_len, "cuEventRecord failed"); goto out; }
    st = gemm(handle, DK_BCB_OP_N, DK_BCB_OP_N, n, n, n, &alpha, (const void *)(uintptr_t)A, DK_BCB_R_16F, n,
              (const void *)(uintptr_t)B, DK_BCB_R_16F, n, &beta, (void *)(uintptr_t)C, DK_BCB_R_16F, n,
              DK_BCB_COMPUTE_32F, DK_BCB_GEMM_DEFAULT);
    if (st != 0) { snprintf(note, note_len, "cublasGemmEx failed (status %d)", st); goto out; }
  }
  if (cu.EventRecord(e1, NULL) != 0 || cu.EventSynchronize(e1) != 0 || cu.EventElapsedTime(&ms, e0, e1) != 0 || ms <= 0.0f) {
    snprintf(note, note_len, "timing with CUDA events failed (a device fault?)");
    goto out;
  }
  *tflops = 2.0 * (double)n * (double)n * (double)n * (double)iters / ((double)ms * 1e-3) / 1e12;
  snprintf(note, note_len, "cuBLAS GemmEx f16 in/out, f32 accumulate, %dx%dx%d, %d iterations in %.3f ms", n, n, n, iters,
           (double)ms);
  rc = 0;
out:
  if (e0) cu.EventDestroy(e0);
  if (e1) cu.EventDestroy(e1);
  if (A) cu.MemFree(A);
  if (B) cu.MemFree(B);
  if (C) cu.MemFree(C);
  if (handle) destroy(handle);
  free(host);
  if (ctx) cu.DevicePrimaryCtxRelease(dev);
  /* cuBLAS and the driver stay loaded: unloading them after use is not safe */
  if (!ctx && lib && !cu.GetProcAddress) dlclose(lib);
  return rc;
}

#endif /* DK_BENCH_CUBLAS_H */
