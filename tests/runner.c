/* tests/runner.c — runs every test on every device present, each run in its
 * own process (a crash or hang fails that run only), and ends with
 * "N passed, N failed, N skipped".
 *
 *   build/tests [FILTER...] [--device cpu:0] [--list] [--timeout S] [--no-fork]
 *
 * Environment: DKT_SEED (a number; default 20261121, printed), DKT_TIMEOUT,
 * DKT_NO_VALIDATION=1 (Vulkan without the validation layer). The runner sets
 * DEVKIT_LOGICAL_DEVICES=cpu=2,vulkan=2,cuda=2 unless it is set, so that every
 * backend has a second device for the multi-device tests, and
 * DEVKIT_VULKAN_VALIDATION=1, so that a validation message fails the test.
 */
#define _GNU_SOURCE
#define DEVKIT_IMPLEMENTATION
#include "test.h"
/* the model layer's implementation, once for every test file */
#define DEVKIT_MODELS_IMPLEMENTATION
#include "../models/models.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ==== registry ============================================================ */

typedef struct { const char *name, *file; int line, flags; dkt_fn fn; } dkt_entry;
static dkt_entry dkt_tests[1024];
static int dkt_ntests = 0;

void dkt_register(const char *name, const char *file, int line, dkt_fn fn, int flags) {
  if (dkt_ntests < (int)(sizeof dkt_tests / sizeof dkt_tests[0])) {
    dkt_entry *e = &dkt_tests[dkt_ntests++];
    e->name = name; e->file = file; e->line = line; e->fn = fn; e->flags = flags;
  }
}

static int dkt_order(const void *a, const void *b) {
  const dkt_entry *x = (const dkt_entry *)a, *y = (const dkt_entry *)b;
  int c = strcmp(x->file, y->file);
  return c ? c : x->line - y->line;
}

/* ==== reporting =========================================================== */

void dkt_fail_at(dkt *t, const char *file, int line, const char *fmt, ...) {
  va_list ap;
  const char *f = strrchr(file, '/');
  if (t->failures++ >= 20) return;   /* the first ones say enough */
  printf("    %s:%d: ", f ? f + 1 : file, line);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
}

void dkt_skip(dkt *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t->skip_reason, sizeof t->skip_reason, fmt, ap);
  va_end(ap);
  t->skipped = 1;
}

char *dkt_reinit_env(dkt *t, const char *name, const char *value) {
  const char *e = getenv(name);
  char *was = e ? strdup(e) : NULL;
  dk_status s;
  dk_shutdown();
  if (value) setenv(name, value, 1);
  else unsetenv(name);
  if ((s = dk_init()) != DK_OK)
    dkt_fail_at(t, __FILE__, __LINE__, "dk_init with %s=%s -> %s:\n%s", name, value ? value : "(unset)", dk_status_name(s),
                dk_last_error());
  return was;
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define DKT_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DKT_SANITIZED 1
#endif

static struct rlimit dkt_as_was;
static int dkt_as_on;

int dkt_squeeze(dkt *t, size_t extra) {
#ifdef DKT_SANITIZED
  (void)extra;
  dkt_skip(t, "the sanitizers reserve terabytes of address space; RLIMIT_AS cannot squeeze a process that runs them");
  return 0;
#else
  struct rlimit cap;
  long pages = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f || fscanf(f, "%ld", &pages) != 1) pages = 0;
  if (f) fclose(f);
  if (pages <= 0 || getrlimit(RLIMIT_AS, &dkt_as_was) != 0) { dkt_skip(t, "no /proc/self/statm or RLIMIT_AS here"); return 0; }
  cap = dkt_as_was;
  cap.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (rlim_t)extra;
  if (setrlimit(RLIMIT_AS, &cap) != 0) { dkt_skip(t, "setrlimit(RLIMIT_AS) refused"); return 0; }
  dkt_as_on = 1;
  return 1;
#endif
}

void dkt_unsqueeze(void) {
  if (dkt_as_on) setrlimit(RLIMIT_AS, &dkt_as_was);
  dkt_as_on = 0;
}

void dkt_note(dkt *t, const char *fmt, ...) {
  va_list ap;
  (void)t;
  printf("    note: ");
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
}

/* ==== random numbers ====================================================== */

uint64_t dkt_u64(dkt *t) {
  uint64_t x = t->rng;
  x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
  t->rng = x;
  return x * 0x2545F4914F6CDD1Dull;
}
double dkt_uniform(dkt *t, double lo, double hi) { return lo + (hi - lo) * (double)(dkt_u64(t) >> 11) * 0x1.0p-53; }
void dkt_fill(dkt *t, double *v, int64_t n, double lo, double hi) {
  int64_t i;
  for (i = 0; i < n; i++) {
    double x;
    do x = dkt_uniform(t, lo, hi); while (fabs(x) < 1e-3 && (lo < -1e-3 || hi > 1e-3));
    v[i] = x;
  }
}
double *dkt_alloc(int64_t n) { return (double *)calloc((size_t)(n > 0 ? n : 1), sizeof(double)); }

/* ==== dtype encodings, written independently of devkit.h ================== */

/* round x to a float with `mant` explicit mantissa bits, exponent range
 * [emin, emax] (normal numbers), gradual underflow, to nearest even */
static double dkt_round_fmt(double x, int mant, int emin, int emax) {
  int e;
  double m, q, scale;
  if (x == 0.0 || isnan(x) || isinf(x)) return x;
  frexp(x, &e);               /* x = m * 2^e, 0.5 <= |m| < 1 */
  e -= 1;                     /* x = 1.f * 2^e */
  if (e < emin) e = emin;     /* subnormal: fixed quantum */
  scale = ldexp(1.0, mant - e);
  m = x * scale;
  q = nearbyint(m);           /* default rounding mode: to nearest even */
  x = q / scale;
  if (fabs(x) >= ldexp(2.0 - ldexp(1.0, -mant), emax) * (1.0 + 1e-12) ) return x > 0 ? INFINITY : -INFINITY;
  return x;
}
static double dkt_round_f32(double x) { return (double)(float)x; }
static double dkt_round_f16(double x) { return dkt_round_fmt(x, 10, -14, 15); }
static double dkt_round_bf16(double x) { return dkt_round_fmt(x, 7, -126, 127); }

static uint16_t dkt_f16_bits(double x) {     /* x already representable */
  uint16_t s = x < 0 || (x == 0 && signbit(x)) ? 0x8000 : 0;
  double a = fabs(x);
  int e;
  if (isinf(a)) return s | 0x7c00;
  if (isnan(a)) return 0x7e00;
  if (a < ldexp(1.0, -14)) return s | (uint16_t)nearbyint(a * ldexp(1.0, 24));
  frexp(a, &e);
  e -= 1;
  return s | (uint16_t)((e + 15) << 10) | (uint16_t)nearbyint((a / ldexp(1.0, e) - 1.0) * 1024.0);
}
static double dkt_f16_value(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}
static uint16_t dkt_bf16_bits(double x) {
  float f = (float)x;
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);      /* exact: x already has 8 significant bits */
}
static double dkt_bf16_value(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* GGUF q8_0: d = amax/127 (stored as f16), q = round(x/d) computed with the
 * f32 reciprocal, as the reference quantizer does */
static void dkt_q8_block(const double *x, uint8_t *out) {
  float amax = 0, d, id;
  int j;
  for (j = 0; j < 32; j++) amax = fmaxf(amax, fabsf((float)x[j]));
  d = amax / 127.0f;
  id = d != 0.0f ? 1.0f / d : 0.0f;
  {
    uint16_t h = dkt_f16_bits(dkt_round_f16(d));
    memcpy(out, &h, 2);
  }
  for (j = 0; j < 32; j++) out[2 + j] = (uint8_t)(int8_t)roundf((float)x[j] * id);
}
/* GGUF q4_0: d = (value of largest magnitude)/-8, q = min(15, trunc(x/d + 8.5)) */
static void dkt_q4_block(const double *x, uint8_t *out) {
  float amax = 0, mx = 0, d, id;
  int j;
  for (j = 0; j < 32; j++)
    if (fabsf((float)x[j]) > amax) { amax = fabsf((float)x[j]); mx = (float)x[j]; }
  d = mx / -8.0f;
  id = d != 0.0f ? 1.0f / d : 0.0f;
  {
    uint16_t h = dkt_f16_bits(dkt_round_f16(d));
    memcpy(out, &h, 2);
  }
  for (j = 0; j < 16; j++) {
    int a = (int)((float)x[j] * id + 8.5f), b = (int)((float)x[j + 16] * id + 8.5f);
    out[2 + j] = (uint8_t)((a > 15 ? 15 : a) | ((b > 15 ? 15 : b) << 4));
  }
}

/* the other block formats go through the library's own functions, whose
 * dequantization tests/test_quant.c checks bit for bit against gguf's */
static int dkt_more_quant(dk_dtype dt) { return dk_dtype_is_quant(dt) && dt != DK_Q8_0 && dt != DK_Q4_0; }

void dkt_decode(dk_dtype dt, const void *src, int64_t n, double *out) {
  const uint8_t *p = (const uint8_t *)src;
  int64_t i;
  int j;
  if (dkt_more_quant(dt)) {
    float *f = (float *)malloc((size_t)(n ? n : 1) * 4);
    dk_dequantize(dt, src, n, f);
    for (i = 0; i < n; i++) out[i] = f[i];
    free(f);
    return;
  }
  for (i = 0; i < n; i++) {
    switch (dt) {
    case DK_F32: { float f; memcpy(&f, p + 4 * i, 4); out[i] = f; break; }
    case DK_I32: { int32_t v; memcpy(&v, p + 4 * i, 4); out[i] = v; break; }
    case DK_F16: { uint16_t h; memcpy(&h, p + 2 * i, 2); out[i] = dkt_f16_value(h); break; }
    case DK_BF16: { uint16_t h; memcpy(&h, p + 2 * i, 2); out[i] = dkt_bf16_value(h); break; }
    case DK_Q8_0: {
      const uint8_t *b = p + (i / 32) * 34;
      uint16_t h;
      memcpy(&h, b, 2);
      out[i] = dkt_f16_value(h) * (double)(int8_t)b[2 + i % 32];
      break;
    }
    case DK_Q4_0: {
      const uint8_t *b = p + (i / 32) * 18;
      uint16_t h;
      j = (int)(i % 32);
      memcpy(&h, b, 2);
      out[i] = dkt_f16_value(h) * (double)((j < 16 ? (b[2 + j] & 15) : (b[2 + j - 16] >> 4)) - 8);
      break;
    }
    default: break;
    }
  }
}

void *dkt_encode(dk_dtype dt, const double *v, int64_t n, size_t *nbytes) {
  size_t sz = (size_t)(n / dk_dtype_block(dt)) * dk_dtype_block_bytes(dt);
  uint8_t *p = (uint8_t *)malloc(sz ? sz : 1);
  int64_t i;
  if (dkt_more_quant(dt)) {
    float *f = (float *)malloc((size_t)(n ? n : 1) * 4);
    for (i = 0; i < n; i++) f[i] = (float)v[i];
    dk_quantize(dt, f, n, p);
    free(f);
    *nbytes = sz;
    return p;
  }
  for (i = 0; i < n; i++) {
    switch (dt) {
    case DK_F32: { float f = (float)v[i]; memcpy(p + 4 * i, &f, 4); break; }
    case DK_I32: { int32_t x = (int32_t)v[i]; memcpy(p + 4 * i, &x, 4); break; }
    case DK_F16: { uint16_t h = dkt_f16_bits(dkt_round_f16(v[i])); memcpy(p + 2 * i, &h, 2); break; }
    case DK_BF16: { uint16_t h = dkt_bf16_bits(dkt_round_bf16(v[i])); memcpy(p + 2 * i, &h, 2); break; }
    case DK_Q8_0: if (i % 32 == 0) dkt_q8_block(v + i, p + (i / 32) * 34); break;
    case DK_Q4_0: if (i % 32 == 0) dkt_q4_block(v + i, p + (i / 32) * 18); break;
    default: break;
    }
  }
  *nbytes = sz;
  return p;
}

void dkt_round_to(dk_dtype dt, double *v, int64_t n) {
  int64_t i;
  if (dk_dtype_is_quant(dt)) {
    size_t nb;
    void *p = dkt_encode(dt, v, n, &nb);
    dkt_decode(dt, p, n, v);
    free(p);
    return;
  }
  for (i = 0; i < n; i++)
    v[i] = dt == DK_F32 ? dkt_round_f32(v[i]) : dt == DK_F16 ? dkt_round_f16(v[i])
         : dt == DK_BF16 ? dkt_round_bf16(v[i]) : (double)(int32_t)v[i];
}

const dk_dtype dkt_float_types[3] = {DK_F32, DK_F16, DK_BF16};

double dkt_tol(dk_dtype dt, int64_t k) {
  double base = dt == DK_F32 ? 2e-6 : dt == DK_F16 ? 2e-3 : dt == DK_BF16 ? 1.6e-2 : 0.0;
  return base + 2e-7 * sqrt((double)(k > 0 ? k : 1)) * 4.0;
}

/* whether the CPU's kernel class has the integer prompt product of wdt
 * (backends/cpu_igemm.h): the 4/5-bit formats outside the portable class;
 * q8_0, q2_K, q3_K and q6_K in the avx512 class on a CPU with VNNI */
static int dkt_four_five_bit(dk_dtype wdt) {
  return wdt == DK_Q4_0 || wdt == DK_Q4_1 || wdt == DK_Q5_0 || wdt == DK_Q5_1 || wdt == DK_Q4_K || wdt == DK_Q5_K;
}

int dkt_cpu_amx_prompt(dk_dtype wdt, int64_t M) {
  return strcmp(dk_cpu_isa(), "amx") == 0 && M >= 16 && (wdt == DK_BF16 || dk_dtype_is_quant(wdt));
}

int dkt_cpu_vnni(void) {
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
  return __builtin_cpu_supports("avx512vnni");
#else
  return 0;
#endif
}

int dkt_cpu_integer_prompt(dk_dtype wdt, int64_t M) {
  if (strcmp(dk_cpu_isa(), "portable") == 0 || dkt_cpu_amx_prompt(wdt, M)) return 0;
  if (dkt_four_five_bit(wdt)) return 1;
  if (wdt != DK_Q8_0 && wdt != DK_Q2_K && wdt != DK_Q3_K && wdt != DK_Q6_K) return 0;
  if (strcmp(dk_cpu_isa(), "amx") == 0) return 1;   /* avx512's kernels with VNNI, which AMX CPUs have */
  return strcmp(dk_cpu_isa(), "avx512") == 0 && dkt_cpu_vnni();
}

/* whether dk_linear may round x to q8 for this weight: decode-sized products
 * (M <= 4) of every block format; on the CPU, prompt-sized ones of the 4/5-bit
 * formats in any class (a bound, so the portable class's f32 fits too), and of
 * those dkt_cpu_integer_prompt adds */
int dkt_q8_acts(int cpu, dk_dtype wdt, int64_t M) {
  if (M > 4)
    return cpu && (dkt_four_five_bit(wdt) || dkt_cpu_integer_prompt(wdt, M));
  return dk_dtype_is_quant(wdt);
}

/* A prompt-sized dk_linear on tensor cores (dk_device_props.prompt_x16:
 * CUDA's cuBLAS path, more than 4 rows of x; Vulkan's cooperative matrices,
 * more than 8) runs f32 activations in the weight's 16-bit type, f16 (bf16
 * for bf16 weights), unless the weight is f32 or marked precise: each x value
 * carries a relative rounding of at most u = 2^-11 (2^-8), so |error| <= u *
 * sum_k |x_k w_k|. Block weights' values are rounded to f16 too (CUDA's
 * dequantized slab, Vulkan's staged tile): a second rounding, u doubles. The
 * CPU's AMX tiles (16 rows or more, bf16 and block weights) round x, f32 or
 * f16, to bf16 (u = 2^-8), and block weights' values too. */
double dkt_half_act_bound(dk_device dev, dk_dtype xdt, dk_dtype wdt, int precise, const double *x, const double *w,
                          int64_t M, int64_t N, int64_t K) {
  double u = wdt == DK_BF16 ? 1.0 / 256 : 1.0 / 2048;
  double worst = 0;
  int64_t m, n, k;
  dk_device_props pr;
  if (dev.backend == DK_CPU) {
    if (!dkt_cpu_amx_prompt(wdt, M) || xdt == DK_BF16 || precise) return 0;
    u = 1.0 / 256;
  } else if (M <= 4 || xdt != DK_F32 || wdt == DK_F32 || precise) {
    return 0;
  }
  if (dk_device_properties(dev, &pr) != DK_OK || !pr.prompt_x16) return 0;
  if (dk_dtype_is_quant(wdt)) u *= 2;
  for (m = 0; m < M; m++)
    for (n = 0; n < N; n++) {
      double e = 0;
      for (k = 0; k < K; k++) e += fabs(x[m * K + k] * w[n * K + k]);
      worst = fmax(worst, u * e);
    }
  return worst;
}

/* value j's block: the 32 values from j's multiple of 32, or (K-quants,
 * backends/cpu.h dk__cpu_q8k) those in j's dword lane of every 32-value run
 * of its 256; the bound takes the larger max, so it holds for either */
double dkt_q8_act_bound(const double *x, const double *w, int64_t M, int64_t N, int64_t K) {
  double worst = 0, *amax = dkt_alloc(K);
  int64_t m, n, k, j;
  for (m = 0; m < M; m++) {
    const double *xm = x + m * K;
    for (k = 0; k < K; k += 32) {
      double a = 0;
      for (j = k; j < k + 32 && j < K; j++) a = fmax(a, fabs(xm[j]));
      for (j = k; j < k + 32 && j < K; j++) amax[j] = a;
    }
    for (k = 0; k + 256 <= K; k += 256) {
      int l, i;
      for (l = 0; l < 8; l++) {   /* lane l: four values from each 32-value run */
        double a = 0;
        for (i = 0; i < 32; i++) a = fmax(a, fabs(xm[k + 32 * (i >> 2) + 4 * l + (i & 3)]));
        for (i = 0; i < 32; i++) {
          double *am = amax + k + 32 * (i >> 2) + 4 * l + (i & 3);
          *am = fmax(*am, a);
        }
      }
    }
    for (n = 0; n < N; n++) {
      double e = 0;
      for (k = 0; k < K; k++) e += amax[k] / 254.0 * fabs(w[n * K + k]);
      worst = fmax(worst, e);
    }
  }
  free(amax);
  return worst;
}

/* K-quant decode (M <= 4) in the portable, avx2 and avx512 classes rounds x
 * in dword-lane blocks (dk__cpu_q8k), with VNNI (avx512, amx) in 32-value
 * runs (dk__cpu_q8v), as every prompt product that rounds x does */
int dkt_kquant(dk_dtype wdt) {
  return wdt == DK_Q2_K || wdt == DK_Q3_K || wdt == DK_Q4_K || wdt == DK_Q5_K || wdt == DK_Q6_K;
}

int dkt_cpu_kq_lanes(dk_dtype wdt) {
  if (!dkt_kquant(wdt)) return 0;
  return !dkt_cpu_vnni() || strcmp(dk_cpu_isa(), "portable") == 0 || strcmp(dk_cpu_isa(), "avx2") == 0;
}

/* ==== tensors ============================================================= */

dk_tensor *dkt_tensor_at(dkt *t, dk_device dev, dk_dtype dt, int ndim, const int64_t *shape, const char *name,
                         double *v, const char *site) {
  dk_tensor *x = NULL;
  dk_status s = dk_tensor_new_at(dev, dt, ndim, shape, name, site, &x);
  int64_t n = 1;
  int i;
  if (s != DK_OK) {
    dkt_fail_at(t, site, 0, "creating '%s' on %s -> %s:\n%s", name, dk_device_name(dev), dk_status_name(s), dk_last_error());
    return NULL;
  }
  for (i = 0; i < ndim; i++) n *= shape[i];
  if (v) {
    size_t nb;
    void *p;
    /* v becomes what the uploaded bytes hold: a block format is encoded once
     * and decoded (re-quantizing dequantized values need not give the same
     * blocks: the K-quants' fitted scales don't round-trip) */
    if (!dk_dtype_is_quant(dt)) dkt_round_to(dt, v, n);
    p = dkt_encode(dt, v, n, &nb);
    if (dk_dtype_is_quant(dt)) dkt_decode(dt, p, n, v);
    s = dk_tensor_upload(x, p, nb);
    free(p);
    if (s != DK_OK) {
      dkt_fail_at(t, site, 0, "upload of '%s' -> %s:\n%s", name, dk_status_name(s), dk_last_error());
      dk_tensor_free(x);
      return NULL;
    }
  }
  return x;
}

dk_tensor *dkt_random_at(dkt *t, dk_device dev, dk_dtype dt, int ndim, const int64_t *shape, const char *name,
                         double lo, double hi, double **vals, const char *site) {
  int64_t n = 1;
  int i;
  double *v;
  dk_tensor *x;
  for (i = 0; i < ndim; i++) n *= shape[i];
  v = dkt_alloc(n);
  dkt_fill(t, v, n, lo, hi);
  x = dkt_tensor_at(t, dev, dt, ndim, shape, name, v, site);
  if (vals) *vals = v; else free(v);
  return x;
}

dk_tensor *dkt_ids(dkt *t, dk_device dev, int ndim, const int64_t *shape, const char *name, const int32_t *ids) {
  dk_tensor *x = NULL;
  dk_status s = dk_tensor_new_at(dev, DK_I32, ndim, shape, name, "tests/harness", &x);
  if (s != DK_OK) { dkt_fail_at(t, __FILE__, __LINE__, "%s", dk_last_error()); return NULL; }
  s = dk_tensor_upload(x, ids, dk_tensor_nbytes(x));
  if (s != DK_OK) { dkt_fail_at(t, __FILE__, __LINE__, "%s", dk_last_error()); dk_tensor_free(x); return NULL; }
  return x;
}

int dkt_read(dkt *t, const dk_tensor *x, double *out) {
  size_t nb = dk_tensor_nbytes(x);
  void *p = malloc(nb ? nb : 1);
  dk_status s = dk_tensor_download(x, p, nb);
  if (s != DK_OK) {
    dkt_fail_at(t, __FILE__, __LINE__, "download of '%s' -> %s:\n%s", dk_tensor_name(x), dk_status_name(s), dk_last_error());
    free(p);
    return 0;
  }
  dkt_decode(dk_tensor_dtype(x), p, dk_tensor_numel(x), out);
  free(p);
  return 1;
}

int dkt_close(dkt *t, const char *what, const double *got, const double *want, int64_t n, double atol, double rtol) {
  int64_t i, bad = 0, worst = -1;
  double worst_ratio = 0;
  for (i = 0; i < n; i++) {
    double err = fabs(got[i] - want[i]), lim = atol + rtol * fabs(want[i]);
    if (!(err <= lim)) {   /* NaN fails */
      double r = isnan(err) ? INFINITY : err / (lim > 0 ? lim : 1e-300);
      bad++;
      if (worst < 0 || r > worst_ratio) { worst = i; worst_ratio = r; }
    }
  }
  if (bad) {
    dkt_fail_at(t, __FILE__, __LINE__, "%s: %lld of %lld elements off; worst [%lld]: got %.9g, want %.9g (atol %.3g, rtol %.3g)",
                what, (long long)bad, (long long)n, (long long)worst, got[worst], want[worst], atol, rtol);
    return 0;
  }
  return 1;
}

/* ==== the runner ========================================================== */

typedef struct { dk_device dev; char name[200]; } dkt_unit;

double dkt_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t dkt_seed_base(void) {
  const char *e = getenv("DKT_SEED");
  return e ? strtoull(e, NULL, 10) : 20261121ull;
}

static uint64_t dkt_hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  while (*s) h = (h ^ (uint8_t)*s++) * 1099511628211ull;
  return h;
}

/* In the child: run one test on one device. Exit 0 pass, 1 fail, 77 skip. */
static int dkt_child(const dkt_entry *e, dk_device dev) {
  dkt t;
  dk_device d2;
  uint64_t v0;
  memset(&t, 0, sizeof t);
  t.name = e->name;
  t.dev = dev;
  t.seed = dkt_seed_base() ^ dkt_hash(e->name) ^ (uint64_t)(dev.backend * 7919);
  t.rng = t.seed | 1;
  /* only the backend under test starts here (dk_device_count below): the
   * others start when a test names them, as in a program (dk_init would
   * start them all) */
  d2 = dev;
  d2.index = dev.index + 1;
  t.has_dev2 = d2.index < dk_device_count(dev.backend);
  t.dev2 = t.has_dev2 ? d2 : dev;
  v0 = dk_validation_messages();
  e->fn(&t);
  if (dk_validation_messages() != v0) {
    t.failures++;
    printf("    %llu validation message(s); the last:\n    %s\n", (unsigned long long)(dk_validation_messages() - v0),
           dk_validation_last());
  }
  if (t.failures) printf("    (seed %llu: DKT_SEED=%llu reproduces)\n", (unsigned long long)t.seed,
                         (unsigned long long)dkt_seed_base());
  else if (t.skipped) printf("%s", t.skip_reason);
  fflush(stdout);
  dk_shutdown();
  return t.failures ? 1 : t.skipped ? 77 : 0;
}

typedef struct { int status; char *out; size_t len; double secs; } dkt_result;

static dkt_result dkt_run_forked(const dkt_entry *e, dk_device dev, double timeout, int nofork) {
  dkt_result r;
  int fd[2], st = 0;
  pid_t pid;
  double t0 = dkt_now();
  size_t cap = 4096;
  memset(&r, 0, sizeof r);
  r.out = (char *)malloc(cap);
  r.out[0] = 0;
  if (nofork) {
    r.status = dkt_child(e, dev);
    r.secs = dkt_now() - t0;
    return r;
  }
  if (pipe(fd) != 0) { r.status = 1; return r; }
  fflush(stdout);
  pid = fork();
  if (pid == 0) {
    int code;
    close(fd[0]);
    dup2(fd[1], 1);
    dup2(fd[1], 2);
    close(fd[1]);
    if (!(e->flags & DKT_MULTI_BACKEND) && !getenv("DEVKIT_VISIBLE_DEVICES")) {
      char vis[64];
      snprintf(vis, sizeof vis, "cpu,%s", dk_backend_name(dev.backend));
      setenv("DEVKIT_VISIBLE_DEVICES", vis, 1);
    }
    code = dkt_child(e, dev);
    exit(code);   /* not _exit: LeakSanitizer checks at exit */
  }
  close(fd[1]);
  for (;;) {
    struct pollfd p;
    double left = timeout - (dkt_now() - t0);
    int k;
    if (left <= 0) {
      kill(pid, SIGKILL);
      snprintf(r.out + r.len, cap - r.len, "    timed out after %.0f s (DKT_TIMEOUT)\n", timeout);
      r.len = strlen(r.out);
      break;
    }
    p.fd = fd[0];
    p.events = POLLIN;
    k = poll(&p, 1, (int)(left * 1000) + 1);
    if (k < 0 && errno == EINTR) continue;
    if (k > 0) {
      ssize_t n;
      if (r.len + 4096 > cap) { cap = cap * 2 + 4096; r.out = (char *)realloc(r.out, cap); }
      n = read(fd[0], r.out + r.len, cap - r.len - 1);
      if (n <= 0) break;
      r.len += (size_t)n;
      r.out[r.len] = 0;
    }
  }
  close(fd[0]);
  waitpid(pid, &st, 0);
  r.secs = dkt_now() - t0;
  if (WIFSIGNALED(st)) {
    char msg[128];
    snprintf(msg, sizeof msg, "    crashed: signal %d (%s)\n", WTERMSIG(st), strsignal(WTERMSIG(st)));
    if (r.len + sizeof msg + 1 > cap) { cap = r.len + sizeof msg + 1; r.out = (char *)realloc(r.out, cap); }
    strcpy(r.out + r.len, msg);
    r.len += strlen(msg);
    r.status = 1;
  } else {
    r.status = WEXITSTATUS(st);
    if (r.status != 0 && r.status != 1 && r.status != 77) {
      char msg[128];
      snprintf(msg, sizeof msg, "    exited with code %d (a sanitizer report?)\n", r.status);
      if (r.len + sizeof msg + 1 > cap) { cap = r.len + sizeof msg + 1; r.out = (char *)realloc(r.out, cap); }
      strcpy(r.out + r.len, msg);
      r.len += strlen(msg);
      r.status = 1;
    }
  }
  return r;
}

/* The parent never initializes devkit itself (drivers are not fork-safe):
 * a child lists the devices through a pipe. */
static int dkt_enumerate(dkt_unit *units, int max, char notes[DK_BACKEND_COUNT][300], int counts[DK_BACKEND_COUNT]) {
  int fd[2], n = 0, st;
  pid_t pid;
  FILE *f;
  char line[600];
  if (pipe(fd) != 0) return 0;
  pid = fork();
  if (pid == 0) {
    int b;
    FILE *o;
    close(fd[0]);
    o = fdopen(fd[1], "w");
    dk_init();
    for (b = 0; b < DK_BACKEND_COUNT; b++) {
      dk_device d;
      dk_device_props p;
      d.backend = (dk_backend)b;
      d.index = 0;
      fprintf(o, "count %d %d\n", b, dk_device_count((dk_backend)b));
      fprintf(o, "note %d %s\n", b, dk_backend_note((dk_backend)b));
      if (dk_device_count((dk_backend)b) > 0 && dk_device_properties(d, &p) == DK_OK)
        fprintf(o, "unit %d %s\n", b, p.name);
    }
    fclose(o);
    dk_shutdown();
    _exit(0);
  }
  close(fd[1]);
  f = fdopen(fd[0], "r");
  while (f && fgets(line, sizeof line, f)) {
    int b = 0, c = 0, k = 0;
    line[strcspn(line, "\n")] = 0;
    if (sscanf(line, "count %d %d", &b, &c) == 2 && b >= 0 && b < DK_BACKEND_COUNT) counts[b] = c;
    else if (sscanf(line, "note %d %n", &b, &k) == 1 && b >= 0 && b < DK_BACKEND_COUNT) snprintf(notes[b], 300, "%s", line + k);
    else if (sscanf(line, "unit %d %n", &b, &k) == 1 && n < max) {
      units[n].dev.backend = (dk_backend)b;
      units[n].dev.index = 0;
      snprintf(units[n].name, sizeof units[n].name, "%s", line + k);
      n++;
    }
  }
  if (f) fclose(f);
  waitpid(pid, &st, 0);
  return n;
}

static int dkt_matches(const dkt_entry *e, int nfilters, char **filters) {
  int i;
  if (!nfilters) return 1;
  for (i = 0; i < nfilters; i++)
    if (strstr(e->name, filters[i]) || strstr(e->file, filters[i])) return 1;
  return 0;
}

static void dkt_print_indented(const char *s) {
  if (s && *s) fputs(s, stdout);
  if (s && *s && s[strlen(s) - 1] != '\n') putchar('\n');
}

int main(int argc, char **argv) {
  dkt_unit units[DK_BACKEND_COUNT];
  char notes[DK_BACKEND_COUNT][300];
  int counts[DK_BACKEND_COUNT] = {0, 0, 0};
  char *filters[64];
  int nfilters = 0, nunits, i, u, list = 0, nofork = 0, passed = 0, failed = 0, skipped = 0, b;
  const char *only = NULL;
  double timeout = getenv("DKT_TIMEOUT") ? atof(getenv("DKT_TIMEOUT")) : 600.0, t0 = dkt_now();
  char failed_names[8192] = "";
  for (i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--list")) list = 1;
    else if (!strcmp(argv[i], "--no-fork")) nofork = 1;
    else if (!strcmp(argv[i], "--device") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) timeout = atof(argv[++i]);
    else if (nfilters < 64) filters[nfilters++] = argv[i];
  }
  setenv("DEVKIT_LOGICAL_DEVICES", getenv("DEVKIT_LOGICAL_DEVICES") ? getenv("DEVKIT_LOGICAL_DEVICES")
                                                                      : "cpu=2,vulkan=2,cuda=2", 1);
  if (!getenv("DKT_NO_VALIDATION")) setenv("DEVKIT_VULKAN_VALIDATION", "1", 0);
  unsetenv("DEVKIT_ABORT_ON_ERROR");
  qsort(dkt_tests, (size_t)dkt_ntests, sizeof dkt_tests[0], dkt_order);
  if (list) {
    for (i = 0; i < dkt_ntests; i++) printf("%s  (%s:%d)\n", dkt_tests[i].name, dkt_tests[i].file, dkt_tests[i].line);
    return 0;
  }
  memset(notes, 0, sizeof notes);
  nunits = dkt_enumerate(units, DK_BACKEND_COUNT, notes, counts);
  if (only) {
    dk_device d;
    int k = 0;
    /* a parse without devkit: backend name and index */
    d.backend = !strncmp(only, "cuda", 4) ? DK_CUDA : (!strncmp(only, "vk", 2) || !strncmp(only, "vulkan", 6)) ? DK_VULKAN : DK_CPU;
    for (u = 0; u < nunits; u++) if (units[u].dev.backend == d.backend) units[k++] = units[u];
    nunits = k;
  }
  printf("devkit tests: seed %llu, %s validation, logical devices %s\n", (unsigned long long)dkt_seed_base(),
         getenv("DKT_NO_VALIDATION") ? "no Vulkan" : "Vulkan", getenv("DEVKIT_LOGICAL_DEVICES"));
  for (u = 0; u < nunits; u++)
    printf("  %s:0  %s  (%d logical)\n", dk_backend_name(units[u].dev.backend), units[u].name, counts[units[u].dev.backend]);
  for (b = 0; b < DK_BACKEND_COUNT; b++)
    if (counts[b] == 0) printf("  %s: none (%s)\n", dk_backend_name((dk_backend)b), notes[b]);
  fflush(stdout);

  for (i = 0; i < dkt_ntests; i++) {
    const dkt_entry *e = &dkt_tests[i];
    int runs = (e->flags & DKT_ONCE) ? 1 : nunits;
    if (!dkt_matches(e, nfilters, filters)) continue;
    for (u = 0; u < runs; u++) {
      dk_device dev;
      dkt_result r;
      char devname[32];
      if (e->flags & DKT_ONCE) { dev.backend = DK_CPU; dev.index = 0; snprintf(devname, sizeof devname, "-"); }
      else { dev = units[u].dev; snprintf(devname, sizeof devname, "%s:0", dk_backend_name(dev.backend)); }
      r = dkt_run_forked(e, dev, timeout, nofork);
      if (r.status == 0) {
        passed++;
        printf("  ok    %-40s %-9s %6.2f s\n", e->name, devname, r.secs);
        if (getenv("DKT_VERBOSE")) dkt_print_indented(r.out);
      } else if (r.status == 77) {
        skipped++;
        printf("  skip  %-40s %-9s %s\n", e->name, devname, r.out);
      } else {
        failed++;
        printf("  FAIL  %-40s %-9s %6.2f s\n", e->name, devname, r.secs);
        dkt_print_indented(r.out);
        if (strlen(failed_names) + strlen(e->name) + 40 < sizeof failed_names) {
          strcat(failed_names, "  ");
          strcat(failed_names, e->name);
          strcat(failed_names, " on ");
          strcat(failed_names, devname);
          strcat(failed_names, "\n");
        }
      }
      fflush(stdout);
      free(r.out);
    }
  }
  /* every test that would have run on an absent backend is a skip, said once */
  {
    int per_device = 0;
    for (i = 0; i < dkt_ntests; i++)
      if (!(dkt_tests[i].flags & DKT_ONCE) && dkt_matches(&dkt_tests[i], nfilters, filters)) per_device++;
    for (b = 0; b < DK_BACKEND_COUNT; b++) {
      if (counts[b] > 0) continue;
      if (only) continue;
      skipped += per_device;
      printf("skipped %d tests on %s: %s\n", per_device, dk_backend_name((dk_backend)b), notes[b]);
    }
  }
  if (failed) printf("failed:\n%s", failed_names);
  printf("time %.1f s\n", dkt_now() - t0);
  printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  return failed ? 1 : 0;
}
