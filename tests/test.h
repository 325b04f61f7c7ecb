/* tests/test.h — the test harness every test file includes.
 *
 * A test is a function of a dkt context; the runner (tests/runner.c) runs it
 * once per device present, each time in its own process, so a crash or a hang
 * is that test's failure and the rest still run. Inputs are random with a
 * printed seed; every result is compared with a reference computed here, in
 * double precision, from the very values the device was given.
 *
 *   DKT_TEST(name, flags) { ... uses t->dev ... }
 *
 * flags: 0, or DKT_ONCE (not per device: runs once, against cpu:0),
 * DKT_MULTI_BACKEND (sees every backend, not only the one under test).
 */
#ifndef DKT_TEST_H
#define DKT_TEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* setenv, strsignal, fork in the tests */
#endif

#include "../devkit.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DKT_ONCE 1
#define DKT_MULTI_BACKEND 2

typedef struct dkt {
  dk_device dev;        /* the device under test (X:0) */
  dk_device dev2;       /* a second logical device of the same backend (X:1) */
  int has_dev2;
  uint64_t rng, seed;
  int failures, skipped;
  const char *name;
  char skip_reason[256];
} dkt;

typedef void (*dkt_fn)(dkt *t);
void dkt_register(const char *name, const char *file, int line, dkt_fn fn, int flags);

#define DKT_TEST(fn, flags)                                                    \
  static void fn(dkt *t);                                                      \
  __attribute__((constructor)) static void fn##_register(void) {               \
    dkt_register(#fn, __FILE__, __LINE__, fn, flags);                          \
  }                                                                            \
  static void fn(dkt *t)

void dkt_fail_at(dkt *t, const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void dkt_skip(dkt *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void dkt_note(dkt *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* devkit shut down and initialized again with the environment variable name
 * set to value (NULL: unset), since the backends read their switches when a
 * device opens; returns the previous value (malloc'd, or NULL) to restore
 * with the same call: free(dkt_reinit_env(t, name, was)); free(was); */
char *dkt_reinit_env(dkt *t, const char *name, const char *value);
/* Out of host memory on purpose: dkt_squeeze(extra) limits the address
 * space (RLIMIT_AS) to what the process holds plus `extra` bytes and
 * returns 1, or skips the test and returns 0 where it cannot (no
 * /proc/self/statm or setrlimit; under ASan/TSan, which reserve terabytes);
 * dkt_unsqueeze() lifts it. */
int dkt_squeeze(dkt *t, size_t extra);
void dkt_unsqueeze(void);
double dkt_now(void);   /* seconds, monotonic */

#define DKT_CHECK(t, cond, ...)                                                \
  do {                                                                         \
    if (!(cond)) dkt_fail_at((t), __FILE__, __LINE__, __VA_ARGS__);            \
  } while (0)

/* a call that must succeed; on failure the test stops */
#define DKT_OK(t, expr)                                                        \
  do {                                                                         \
    dk_status dkt_s_ = (expr);                                                 \
    if (dkt_s_ != DK_OK) {                                                     \
      dkt_fail_at((t), __FILE__, __LINE__, "%s -> %s:\n%s", #expr,             \
                  dk_status_name(dkt_s_), dk_last_error());                    \
      return;                                                                  \
    }                                                                          \
  } while (0)

/* a call that must fail with status st */
#define DKT_REFUSED(t, expr, st)                                               \
  do {                                                                         \
    dk_status dkt_s_ = (expr);                                                 \
    if (dkt_s_ != (st))                                                        \
      dkt_fail_at((t), __FILE__, __LINE__, "%s -> %s, expected %s (%s)", #expr, \
                  dk_status_name(dkt_s_), dk_status_name(st), dk_last_error()); \
  } while (0)

/* the thread's last error message must contain s */
#define DKT_MSG_HAS(t, s)                                                      \
  DKT_CHECK((t), strstr(dk_last_error(), (s)) != NULL,                         \
            "message lacks \"%s\":\n%s", (s), dk_last_error())

/* random numbers: xorshift64*, seeded per test */
uint64_t dkt_u64(dkt *t);
double dkt_uniform(dkt *t, double lo, double hi);
/* n values in [lo, hi], none of them within 1e-3 of zero */
void dkt_fill(dkt *t, double *v, int64_t n, double lo, double hi);
double *dkt_alloc(int64_t n);   /* zeroed doubles; free with free() */

/* what the device will hold for these values: f16/bf16 rounding, the GGUF
 * block quantization (written here independently of the library) */
void dkt_round_to(dk_dtype dt, double *v, int64_t n);
/* bytes of dtype dt for these values (quantized as GGUF does) */
void *dkt_encode(dk_dtype dt, const double *v, int64_t n, size_t *nbytes);
void dkt_decode(dk_dtype dt, const void *src, int64_t n, double *out);

/* a tensor on dev holding v (rounded in place to what dt can hold; NULL
 * leaves it uninitialized). Returns NULL after reporting a failure. */
dk_tensor *dkt_tensor_at(dkt *t, dk_device dev, dk_dtype dt, int ndim, const int64_t *shape, const char *name,
                         double *v, const char *site);
#define dkt_tensor(t, dev, dt, nd, sh, name, v) dkt_tensor_at((t), (dev), (dt), (nd), (sh), (name), (v), DK_SITE)
/* random contents in [lo, hi]; *vals receives the values (rounded), caller frees */
dk_tensor *dkt_random_at(dkt *t, dk_device dev, dk_dtype dt, int ndim, const int64_t *shape, const char *name,
                         double lo, double hi, double **vals, const char *site);
#define dkt_random(t, dev, dt, nd, sh, name, lo, hi, vals) \
  dkt_random_at((t), (dev), (dt), (nd), (sh), (name), (lo), (hi), (vals), DK_SITE)
dk_tensor *dkt_ids(dkt *t, dk_device dev, int ndim, const int64_t *shape, const char *name, const int32_t *ids);
/* download into doubles (n = numel); returns 0 on failure (reported) */
int dkt_read(dkt *t, const dk_tensor *x, double *out);

/* compare: |got - want| <= atol + rtol*|want| for every element, NaN never
 * passes; reports the worst element and the count of misses */
int dkt_close(dkt *t, const char *what, const double *got, const double *want, int64_t n, double atol, double rtol);
/* tolerance for results of dtype dt after a reduction of length k */
double dkt_tol(dk_dtype dt, int64_t k);
/* the most that quantizing the M x K activations to q8 per 32-value block
 * (the CPU's decode path for block weights, as llama.cpp does) can move any
 * of the M x N results of x . W^T: sum over values of |w| * max|x| of the
 * value's block / 254, in either of the CPU's block layouts */
double dkt_q8_act_bound(const double *x, const double *w, int64_t M, int64_t N, int64_t K);
/* whether the CPU's current class rounds a K-quant decode's x in dword-lane
 * blocks (dk__cpu_q8k), where its prompt products and the VNNI classes'
 * decode round 32-value runs: then the two differ by up to twice the bound */
int dkt_cpu_kq_lanes(dk_dtype wdt);
/* q2_K-q6_K */
int dkt_kquant(dk_dtype wdt);
/* whether this CPU has AVX-512 VNNI (the avx512 and amx classes' integer kernels) */
int dkt_cpu_vnni(void);
double dkt_half_act_bound(dk_device dev, dk_dtype xdt, dk_dtype wdt, int precise, const double *x, const double *w,
                          int64_t M, int64_t N, int64_t K);
/* whether an M-row dk_linear against wdt weights may round its activations
 * to q8 (the CPU's decode dot: every block format, M <= 4; its prompt
 * product, dkt_cpu_integer_prompt) */
int dkt_q8_acts(int cpu, dk_dtype wdt, int64_t M);
/* whether the CPU's current kernel class runs an M-row product against wdt
 * weights in integers against q8 activations (M > 4; not on AMX tiles) */
int dkt_cpu_integer_prompt(dk_dtype wdt, int64_t M);
/* whether it runs it on AMX tiles, x rounded to bf16 (the amx class, M >= 16) */
int dkt_cpu_amx_prompt(dk_dtype wdt, int64_t M);

/* float dtypes under test */
extern const dk_dtype dkt_float_types[3];

#endif
