/* backends/cpu.h — the CPU backend: every op, multi-threaded, synchronous.
 *
 * Included by devkit.h at the end of its implementation part; it sees every
 * core helper. It is the reference the GPU backends are checked against in
 * spirit (the tests have their own double-precision references) and a usable
 * fallback: linear and matmul pack their operands into panels for a register-
 * blocked kernel (prompt-sized linear of the 4/5-bit formats, and with VNNI
 * q8_0/q2_K/q3_K/q6_K, in integers, cpu_igemm.h; of the other weights as row
 * dot products, cpu_fgemm.h), and
 * decode-sized linear streams the weights once with the dequantization in
 * registers. x86-64 gets AVX2/FMA/F16C versions of the hot
 * loops, chosen at run time, so the header still builds with plain `cc -O2`.
 */
#ifndef DK_BACKEND_CPU_H
#define DK_BACKEND_CPU_H

#include <sys/resource.h>   /* getrlimit: the room under ulimit -v (dk__cpu_ram_free) */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define DK_CPU_X86 1
/* Kernel classes. Each kernel is compiled with its class's target and
 * inlines only helpers of the same (or a subset) target, so no hot loop calls
 * code compiled for another class: an AVX loop that calls SSE-encoded code
 * pays the AVX->SSE transition on Intel at every call (43 % of q8_0 decode
 * was that, through a per-block f16 scale conversion). */
#define DK_CPU_AVX2 __attribute__((target("avx2,fma,f16c")))
#define DK_CPU_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define DK_CPU_AVX512VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define DK_CPU_AVX512VNNI_INLINE \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c"), always_inline)) static inline
#define DK_CPU_AVX2_INLINE __attribute__((target("avx2,fma,f16c"), always_inline)) static inline
#define DK_CPU_AVX512_INLINE __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c"), always_inline)) static inline
#endif

typedef enum { DK__CPU_PORTABLE, DK__CPU_AVX2, DK__CPU_AVX512, DK__CPU_AMX, DK__CPU_NCLASS } dk__cpu_class;
#include "cpu_quant.h"   /* q4_1, q5_0, q5_1, q2_K..q6_K, iq4_nl, iq4_xs */


/* ==== thread pool ========================================================= */

typedef void (*dk_cpu_task)(void *ctx, int64_t begin, int64_t end);

typedef struct {
  pthread_mutex_t mu, job_lock;
  pthread_cond_t wake, done_cv;
  pthread_t th[256];
  int nthreads;          /* workers + the caller */
  int started, stop;
  uint64_t gen;          /* atomics: a new job bumps it (wakes the workers) */
  uint64_t claim;        /* atomics: job id << 48 | pieces << 24 | next piece (dk__cpu_run_chunks) */
  int64_t done;          /* atomics: pieces of the current job finished */
  int sleepers, waiting; /* atomics: workers asleep on wake; the caller asleep on done */
  dk_cpu_task fn;
  void *ctx;
  int64_t n, chunk;
  size_t short_of;       /* atomics: scratch bytes a piece of the current job could not get (0: none) */
} dk__cpu_pool_t;

/* The largest scratch request this thread could not get since its op began
 * (0: none). A task has no status to return: it stops, and this carries the
 * failure to dk__cpu_run_op, which makes it the op's error. */
static DK_TLS size_t dk__cpu_short;
static void dk__cpu_note_short(size_t bytes) { if (bytes > dk__cpu_short) dk__cpu_short = bytes; }

static dk__cpu_pool_t dk__cpu_pool;   /* started by the first open_device, under the init lock */

/* A decode step is a few hundred parallel jobs microseconds apart; waking a
 * worker through the kernel at each cost 18 % of SmolLM2-135M's decode
 * (perf: futex wake-ups and task switches). Workers and the caller first
 * spin this many pauses (~30-60 us) on the job counter, then sleep on the
 * condition variable as before, so an idle pool costs nothing. */
#define DK_CPU_SPIN 4000
static inline void dk__cpu_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

/* Take pieces of whatever job the claim word holds until it has none left.
 * A piece index below the word's piece count is a claim on that job, which
 * cannot finish before the piece is reported done, so its fields are
 * stable (and were published before the word); a worker that arrives late,
 * even a job late, only bumps an exhausted index and touches nothing else.
 * So the caller waits for pieces, not workers: a worker the OS has not run
 * (another process on the cores) costs nothing unless it holds a piece.
 * (It used to count every worker out of every job: on a loaded machine
 * each job then waited a whole time slice for one, a 5x slower decode.) */
#define DK_CPU_PIECE_MASK ((uint64_t)0xffffff)
static void dk__cpu_run_chunks(dk__cpu_pool_t *p) {
  for (;;) {
    const uint64_t w = __atomic_fetch_add(&p->claim, 1, __ATOMIC_ACQ_REL);
    const int64_t i = (int64_t)(w & DK_CPU_PIECE_MASK), pieces = (int64_t)((w >> 24) & DK_CPU_PIECE_MASK);
    int64_t b;
    if (i >= pieces) break;   /* before any field is read: they may be the next job's, being written */
    b = i * p->chunk;
    p->fn(p->ctx, b, b + p->chunk < p->n ? b + p->chunk : p->n);
    if (dk__cpu_short) {   /* published by the done count below, read by the caller after it */
      __atomic_store_n(&p->short_of, dk__cpu_short, __ATOMIC_RELAXED);
      dk__cpu_short = 0;
    }
    if (__atomic_add_fetch(&p->done, 1, __ATOMIC_SEQ_CST) == pieces && __atomic_load_n(&p->waiting, __ATOMIC_SEQ_CST)) {
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->done_cv);
      pthread_mutex_unlock(&p->mu);
    }
  }
}

/* The sleep handshakes are Dekker's: the sleeper publishes itself
 * (sleepers/waiting, seq_cst) and then re-reads the condition; the waker
 * changes the condition (seq_cst) and then reads the sleeper flag, so one of
 * the two always sees the other; the wait itself rechecks under the mutex. */
static void *dk__cpu_worker(void *arg) {
  dk__cpu_pool_t *p = (dk__cpu_pool_t *)arg;
  uint64_t seen = 0;   /* the pool starts at generation 0; a job may be posted before we get here */
  for (;;) {
    int i;
    for (i = 0; i < DK_CPU_SPIN && __atomic_load_n(&p->gen, __ATOMIC_ACQUIRE) == seen &&
                !__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE); i++)
      dk__cpu_pause();
    if (__atomic_load_n(&p->gen, __ATOMIC_ACQUIRE) == seen) {
      pthread_mutex_lock(&p->mu);
      __atomic_add_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
      while (__atomic_load_n(&p->gen, __ATOMIC_SEQ_CST) == seen && !p->stop) pthread_cond_wait(&p->wake, &p->mu);
      __atomic_sub_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
      pthread_mutex_unlock(&p->mu);
    }
    if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) break;
    seen = __atomic_load_n(&p->gen, __ATOMIC_ACQUIRE);
    dk__cpu_run_chunks(p);
  }
  return NULL;
}

static int dk__cpu_thread_count(void) {
  const char *e = getenv("DEVKIT_CPU_THREADS");
  long n = e ? atol(e) : sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  if (n > 257) n = 257;
  return (int)n;
}

static void dk__cpu_pool_start(void) {
  dk__cpu_pool_t *p = &dk__cpu_pool;
  int i;
  if (p->started) return;
  pthread_mutex_init(&p->mu, NULL);
  pthread_mutex_init(&p->job_lock, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done_cv, NULL);
  p->nthreads = dk__cpu_thread_count();
  p->stop = 0;
  p->gen = 0;
  p->claim = 0;   /* job 0, no pieces */
  p->done = 0;
  p->sleepers = p->waiting = 0;
  for (i = 0; i < p->nthreads - 1; i++)
    if (pthread_create(&p->th[i], NULL, dk__cpu_worker, p) != 0) break;
  p->nthreads = i + 1;   /* whatever could be started */
  p->started = 1;
}

static void dk__cpu_pool_stop(void) {
  dk__cpu_pool_t *p = &dk__cpu_pool;
  int i;
  if (!p->started) return;
  pthread_mutex_lock(&p->mu);
  __atomic_store_n(&p->stop, 1, __ATOMIC_SEQ_CST);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (i = 0; i < p->nthreads - 1; i++) pthread_join(p->th[i], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_mutex_destroy(&p->job_lock);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done_cv);
  p->started = 0;
}

/* Run fn over [0, n) in pieces of about `grain` or more, of equal size;
 * jobs of less than one and a half grains run inline, since even a
 * spinning pool costs a few microseconds (pieces of at least a grain each,
 * the last one short, made stories260K's 512-row classifier two pieces of
 * 505 and 7 rows: a sync for nothing). Callers from several threads
 * (several logical CPU devices) take turns. */
static void dk__cpu_parallel(int64_t n, int64_t grain, dk_cpu_task fn, void *ctx) {
  dk__cpu_pool_t *p = &dk__cpu_pool;
  int64_t pieces, chunk;
  uint64_t job;
  int i;
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  pieces = n / grain + (n % grain >= (grain + 1) / 2);   /* n / grain, rounded */
  if (pieces > (int64_t)p->nthreads * 4) pieces = (int64_t)p->nthreads * 4;
  if (!p->started || p->nthreads == 1 || pieces <= 1) { fn(ctx, 0, n); return; }
  chunk = (n + pieces - 1) / pieces;
  pieces = (n + chunk - 1) / chunk;   /* <= 4 * nthreads, far below the word's 2^24 */
  pthread_mutex_lock(&p->job_lock);
  p->fn = fn; p->ctx = ctx; p->n = n; p->chunk = chunk;
  __atomic_store_n(&p->short_of, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&p->done, 0, __ATOMIC_RELAXED);
  job = ((__atomic_load_n(&p->claim, __ATOMIC_RELAXED) >> 48) + 1) & 0xffff;
  __atomic_store_n(&p->claim, job << 48 | (uint64_t)pieces << 24, __ATOMIC_SEQ_CST);   /* publishes the fields above */
  __atomic_add_fetch(&p->gen, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&p->sleepers, __ATOMIC_SEQ_CST)) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
  }
  dk__cpu_run_chunks(p);
  for (i = 0; i < DK_CPU_SPIN && __atomic_load_n(&p->done, __ATOMIC_ACQUIRE) < pieces; i++) dk__cpu_pause();
  if (__atomic_load_n(&p->done, __ATOMIC_ACQUIRE) < pieces) {
    pthread_mutex_lock(&p->mu);
    __atomic_store_n(&p->waiting, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&p->done, __ATOMIC_SEQ_CST) < pieces) pthread_cond_wait(&p->done_cv, &p->mu);
    __atomic_store_n(&p->waiting, 0, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&p->mu);
  }
  dk__cpu_note_short(__atomic_load_n(&p->short_of, __ATOMIC_RELAXED));
  pthread_mutex_unlock(&p->job_lock);
}

/* ==== devices and memory ================================================== */

static uint64_t dk__cpu_used[DK_MAX_DEVICES];

static uint64_t dk__cpu_ram_total(void) {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : ((uint64_t)1 << 34);
}

/* the first number after `key` at a line's start in a text file (key ""
 * reads the first line); 0 when the file or the key is absent, or the
 * value is a word ("max": a cgroup v2 limit that is none) */
static uint64_t dk__cpu_file_u64(const char *path, const char *key) {
  char line[256];
  size_t kn = strlen(key);
  uint64_t v = 0;
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, key, kn)) { v = strtoull(line + kn, NULL, 10); break; }
  fclose(f);
  return v;
}

/* The bytes this process can still take on the host, for placement and for
 * fitting a model's context (models/llama.h): the least of
 *  - the kernel's MemAvailable: free pages and the page cache it can drop
 *    (sysconf's _SC_AVPHYS_PAGES counts free pages only, and a machine
 *    that has just read a model file holds much of its memory as cache);
 *  - the room under each memory cgroup limit from the process's group up
 *    (a container's --memory): the limit less what is charged, page cache
 *    excepted (v2 memory.max/current/stat "file", v1 limit_in_bytes/
 *    usage_in_bytes/stat "total_cache");
 *  - the room under RLIMIT_AS (ulimit -v) above the address space in use. */
static uint64_t dk__cpu_ram_free(void) {
  long size = sysconf(_SC_PAGESIZE), av = sysconf(_SC_AVPHYS_PAGES);
  uint64_t fr = dk__cpu_file_u64("/proc/meminfo", "MemAvailable:") * 1024;
  char line[512], dir[1024];
  FILE *f;
  struct rlimit rl;
  if (!fr && av > 0 && size > 0) fr = (uint64_t)av * (uint64_t)size;
  if ((f = fopen("/proc/self/cgroup", "r"))) {
    while (fgets(line, sizeof line, f)) {
      /* "0::/path" (v2) or "4:memory:/path" (v1) */
      char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
      int v2 = c1 && c2 == c1 + 1;
      const char *files[3];
      size_t root;
      if (!c2 || (!v2 && !strstr(c1, "memory"))) continue;
      c2[1 + strcspn(c2 + 1, "\n")] = 0;
      files[0] = v2 ? "memory.max" : "memory.limit_in_bytes";
      files[1] = v2 ? "memory.current" : "memory.usage_in_bytes";
      files[2] = v2 ? "file " : "total_cache ";
      root = (size_t)snprintf(dir, sizeof dir, "/sys/fs/cgroup%s", v2 ? "" : "/memory");
      snprintf(dir + root, sizeof dir - root, "%s", c2 + 1);
      for (;;) {
        char path[1100];
        size_t n = strlen(dir);
        uint64_t lim, use, cache, room;
        while (n > 1 && dir[n - 1] == '/') dir[--n] = 0;
        snprintf(path, sizeof path, "%s/%s", dir, files[0]);
        lim = dk__cpu_file_u64(path, "");
        if (lim > 0 && lim < ((uint64_t)1 << 60)) {
          snprintf(path, sizeof path, "%s/%s", dir, files[1]);
          use = dk__cpu_file_u64(path, "");
          snprintf(path, sizeof path, "%s/memory.stat", dir);
          cache = dk__cpu_file_u64(path, files[2]);
          use -= cache < use ? cache : use;
          room = use < lim ? lim - use : 0;
          if (room < fr) fr = room;
        }
        if (n <= root) break;   /* up to /sys/fs/cgroup[/memory] */
        *strrchr(dir, '/') = 0;
      }
    }
    fclose(f);
  }
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && size > 0) {
    uint64_t vm = dk__cpu_file_u64("/proc/self/statm", "") * (uint64_t)size;
    uint64_t room = (uint64_t)rl.rlim_cur > vm ? (uint64_t)rl.rlim_cur - vm : 0;
    if (room < fr) fr = room;
  }
  return fr;
}

static int dk__cpu_probe(char *note, size_t n) {
  (void)note; (void)n;
  return 1;
}

static void dk__cpu_pick_kernels(void);
static int dk__cpu_amx_on(void);
static dk_status dk__cpu_properties(int physical, dk_device_props *p) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  (void)physical;
  snprintf(p->name, sizeof p->name, "CPU");
  if (f) {
    char line[512];
    while (fgets(line, sizeof line, f)) {
      if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
        char *v = strchr(line, ':') + 1;
        while (*v == ' ') v++;
        v[strcspn(v, "\n")] = 0;
        snprintf(p->name, sizeof p->name, "%s", v);
        break;
      }
    }
    fclose(f);
  }
  snprintf(p->vendor, sizeof p->vendor, "host");
  snprintf(p->driver, sizeof p->driver, "devkit cpu backend, %d threads", dk__cpu_thread_count());
  p->memory_total = dk__cpu_ram_total();
  p->memory_free = dk__cpu_ram_free();
  p->is_software = 1;
  p->supports_f16 = p->supports_bf16 = 1;
  p->prompt_x16 = dk__cpu_amx_on();   /* the amx class's bf16 tiles (backends/cpu_amx.h) */
  return DK_OK;
}
static dk_status dk__cpu_open(int logical, int physical, int slot) {
  (void)physical; (void)slot;
  dk__cpu_pick_kernels();
  dk__cpu_used[logical] = 0;
  dk__cpu_pool_start();
  return DK_OK;
}

static void dk__cpu_scratch_release(void);
static void dk__cpu_close_all(void) {
  dk__cpu_pool_stop();
  dk__cpu_scratch_release();
}

static dk_status dk__cpu_alloc(dk_device d, size_t nbytes, const char *name, dk_storage *st) {
  void *p = NULL;
  uint64_t total = dk__cpu_ram_total(), used = __atomic_load_n(&dk__cpu_used[d.index], __ATOMIC_RELAXED);
  if (nbytes > total || used + nbytes > total)
    return dk__error(DK_ERR_OUT_OF_MEMORY,
                     "out of memory on %s: tensor '%s' needs %zu bytes; %llu of %llu bytes are in use on this device",
                     dk_device_name(d), name, nbytes, (unsigned long long)used, (unsigned long long)total);
  if (posix_memalign(&p, 64, nbytes ? nbytes : 64) != 0 || !p)
    return dk__error(DK_ERR_OUT_OF_MEMORY, "out of memory on %s: tensor '%s' needs %zu bytes (malloc failed)",
                     dk_device_name(d), name, nbytes);
  __atomic_add_fetch(&dk__cpu_used[d.index], nbytes, __ATOMIC_RELAXED);
  st->ptr = p;
  return DK_OK;
}

static void dk__cpu_release(dk_storage *st) {
  __atomic_sub_fetch(&dk__cpu_used[st->device.index], st->nbytes, __ATOMIC_RELAXED);
  free(st->ptr);
  st->ptr = NULL;
}

static dk_status dk__cpu_upload(dk_storage *st, size_t off, const void *src, size_t n) {
  memcpy((char *)st->ptr + off, src, n);
  return DK_OK;
}
static dk_status dk__cpu_download(dk_storage *st, size_t off, void *dst, size_t n) {
  memcpy(dst, (const char *)st->ptr + off, n);
  return DK_OK;
}
static dk_status dk__cpu_copy(dk_storage *dst, size_t doff, dk_storage *src, size_t soff, size_t n) {
  memmove((char *)dst->ptr + doff, (const char *)src->ptr + soff, n);
  return DK_OK;
}
static dk_status dk__cpu_sync(dk_device d) { (void)d; return DK_OK; }

/* ==== element access ====================================================== */

static void *dk__cpu_ptr(const dk_tensor *t) { return (char *)t->st->ptr + t->offset; }

/* The kernels of one class, chosen once (dk__cpu_pick_kernels). Entries
 * left NULL fall back to the portable code. rowdot is per weight dtype: a
 * new dtype (backends/cpu_quant.h) slots in by filling its entry in each
 * class's table; with no entry it runs through dk__cpu_dequant_row. */
typedef void (*dk__cpu_micro_fn)(int kc, const float *a, const float *b, float *c, int64_t ldc);
/* out[m] = W row . x_m for M <= DK_CPU_GEMV_MAXM activation rows of K */
typedef void (*dk__cpu_rowdot_fn)(dk_dtype wdt, const char *w, const float *x, int64_t K, int M, float *out);
/* An activation block quantized to 8 bits, once per token (decode), so a
 * quantized weight block is dotted in integers: scale * (sum of int8 x int8).
 * The scale stays f32 (no f16 rounding on the activation side). */
/* 32 activations rounded to int8 with one scale; s = d * (their codes' sum),
 * for the min term of the formats whose weights are d*q + m (q4_1, q5_1) */
typedef struct { float d, s; int8_t qs[32]; } dk__cpu_q8x;
/* the same with the sum split at 16 values (s[h] = d * the codes' sum of
 * half h): the prompt product of the formats with a scale per 16 values
 * (q2_K, q3_K, q6_K; backends/cpu_igemm.h) */
typedef struct { float d, s[2]; int8_t qs[32]; } dk__cpu_q8h;
/* the same with M rows of nb such blocks, xq[m * nb + b] */
/* the 32-value weight dtypes whose decode products may round activations to q8 */
/* (iq4_xs, iq3 and iq2 too: their 32-value groups are blocks with a scale
 * of their own, or two) */
#define DK__CPU_Q8_DOT (DK_BIT(DK_Q8_0) | DK_BIT(DK_Q4_0) | DK_BIT(DK_Q4_1) | DK_BIT(DK_Q5_0) | DK_BIT(DK_Q5_1) | \
                        DK_BIT(DK_IQ4_NL) | DK_BIT(DK_IQ4_XS) | DK_BIT(DK_IQ3_XXS) | DK_BIT(DK_IQ3_S) | DK__CPU_IQ2)
#define DK__CPU_IQ2 (DK_BIT(DK_IQ2_XXS) | DK_BIT(DK_IQ2_XS) | DK_BIT(DK_IQ2_S))
/* The formats whose 32-value block has a scale per 16-value half (iq2_xs,
 * iq2_s; iq2_xxs's two are one): their block decodes (dk__cpu_wblock_codes,
 * dk__cpu_wblock_i8) give the second half's scale where the others give the
 * min, since a signed-code format has none. A block's integer dot lanes 0-3
 * hold its first 16 values' products, lanes 4-7 the rest, so the scales
 * meet them as one vector (DK__WD). */
#define DK__HALVES(T) (((DK__CPU_IQ2 >> (T)) & 1) != 0)
/* 256 activations rounded to int8, in order, with a scale per 32: block j
 * is the values whose dword lane in their 32-value run is j (values 32r + 4j
 * .. 32r + 4j + 3 of every run r), so one vector of scales meets a whole
 * super-block's integer sums; s[g] is 16-value group g's sum of scale times
 * code. The K-quants' decode dot (backends/cpu_kdot.h says why) */
typedef struct { int8_t qs[256]; float d[8], s[16]; } dk__cpu_q8k;
/* the same for the VNNI class's dot (backends/cpu_kdot.h says why): the
 * codes in four 64-byte registers, dword lane g of register p holding values
 * 16g + 4p .. 16g + 4p + 3; each 16-value half's scale (its 32-value block's)
 * and that times its codes' sum */
typedef struct { int8_t qs[256]; float d[16], s[16]; } dk__cpu_q8v;
#define DK__CPU_Q8K_DOT (DK_BIT(DK_Q2_K) | DK_BIT(DK_Q3_K) | DK_BIT(DK_Q4_K) | DK_BIT(DK_Q5_K) | DK_BIT(DK_Q6_K))
/* rows [0, rows) of W (wrow bytes apart) against M rows of nb q8 blocks:
 * y[m * ldy + r]; one function per weight dtype */
typedef void (*dk__cpu_rowdot_q8_fn)(dk_dtype wdt, const char *w, size_t wrow, int64_t rows, const dk__cpu_q8x *xq, int64_t nb, int M,
                                     float *y, int64_t ldy);
/* the same for the K-quants against M rows of nsb q8k super-blocks */
typedef void (*dk__cpu_rowdot_q8k_fn)(dk_dtype wdt, const char *w, size_t wrow, int64_t rows, const dk__cpu_q8k *xk,
                                      int64_t nsb, int M, float *y, int64_t ldy);
typedef void (*dk__cpu_rowdot_q8v_fn)(dk_dtype wdt, const char *w, size_t wrow, int64_t rows, const dk__cpu_q8v *xv,
                                      int64_t nsb, int M, float *y, int64_t ldy);
/* c[m][n] = a_m . w_n, m in [0, M), n in [n0, n1) (backends/cpu_fgemm.h) */
typedef void (*dk__cpu_fgemm_fn)(dk_dtype wdt, const float *a, const float *xt, int64_t M, int64_t K, const char *w,
                                 size_t wrow, int64_t n0, int64_t n1, float *c, int64_t ldc, float *wbuf);
typedef void (*dk__cpu_wsum_fn)(float *ob, int64_t nh, int64_t Dv, const float *v, int64_t vs, int64_t s0, int64_t s1,
                                const float *p, int64_t ps);
typedef struct {
  const char *name;
  dk__cpu_micro_fn micro;
  void (*dots)(const float *q, int64_t qs, int nq, const float *k, int64_t n, float *out);
  void (*axpy)(float *y, float p, const float *x, int64_t n);
  /* SiLU, SwiGLU (x = silu(x) * u), GELU tanh form, sigmoid in place; NULL: libm one value at a time */
  void (*act)(dk_op op, float *x, const float *u, int64_t n);
  /* softmax's numerators: row[j] = exp(row[j] - max) in place, their sum in
   * double, the max to *mx if mx (dk__cpu_exp_shift; NULL: its scalar loops) */
  double (*expsum)(float *row, int64_t n, float *mx);
  void (*f16_to_f32)(const uint16_t *p, int64_t n, float *dst);
  void (*f32_to_f16)(const float *src, int64_t n, uint16_t *p);
  dk__cpu_rowdot_fn rowdot[DK_DTYPE_COUNT];
  /* block dtypes whose decode dot runs in integers against q8 activations;
   * an entry here takes precedence over rowdot for M <= DK_CPU_GEMV_MAXM */
  dk__cpu_rowdot_q8_fn rowdot_q8[DK_DTYPE_COUNT];
  /* the prompt GEMM's weight packing (dk__cpu_pack_w): values [k0, k0+kc)
   * (kc a multiple of 8) of `rows` weight rows as f32 rows of ldd in dst;
   * 0: this dtype is not handled (the portable dequantization runs) */
  int (*wdeq)(dk_dtype dt, const char *w, size_t wrow, int64_t rows, int64_t k0, int64_t kc, float *dst, int64_t ldd);
  /* DK_CPU_NR rows of lds floats to a panel [k][DK_CPU_NR], kc a multiple of 8 */
  void (*wpack)(const float *src, int64_t lds, int64_t kc, float *panel);
  /* decode, one activation row, f32/f16/bf16 weights: y[r] = W row r . x for rows [0, rows) */
  void (*gemv1)(dk_dtype dt, const char *w, size_t wrow, int64_t rows, const float *x, int64_t K, float *y);
  /* the K-quants' decode dot against q8k activations (backends/cpu_kdot.h) */
  dk__cpu_rowdot_q8k_fn rowdot_q8k[DK_DTYPE_COUNT];
  /* 32 activations to int8 codes, as dk__cpu_round32 (NULL: its scalar loop) */
  float (*round32)(const float *v, int8_t *q, float *res);
  /* the integer prompt product of the 4/5-bit block formats (backends/cpu_igemm.h):
   * weight panels of codes, and the imr x inr micro-kernel (NULL: the f32 GEMM runs) */
  void (*ipack)(dk_dtype dt, const char *w, size_t wrow, int rows, int64_t b0, int64_t nblk, uint8_t *dst);
  void (*imicro)(int five, int64_t nblk, const dk__cpu_q8x *a, int64_t lda, const uint8_t *wp, float *cc, int64_t ldc);
  /* the row-form prompt product of f16/bf16 and block-format weights
   * (backends/cpu_fgemm.h; NULL: the panel GEMM runs) */
  dk__cpu_fgemm_fn (*fgemm)(dk_dtype dt);
  /* attention's weighted sum of f32 V rows for nh query heads (see
   * dk__cpu_wsum_avx2; NULL: an axpy per position and head) */
  dk__cpu_wsum_fn wsum;
  /* imicro's activation rows (<= DK_CPU_IMR) and ipack's panel rows (8 or 16) */
  int imr, inr;
  /* the same product of the formats with a scale per 16 values, against
   * q8h activations, where itypes names them; ipack packs theirs too */
  void (*imicro16)(int64_t nblk, const dk__cpu_q8h *a, int64_t lda, const uint8_t *wp, float *cc, int64_t ldc);
  /* the K-quants' decode dot against q8v activations; where set, it takes
   * precedence over rowdot_q8k */
  dk__cpu_rowdot_q8v_fn rowdot_q8v[DK_DTYPE_COUNT];
  /* the weight dtypes (DK_BIT) the integer prompt product takes */
  unsigned itypes;
  /* and those the AMX tile product takes (backends/cpu_amx.h; 0: none) */
  unsigned amxtypes;
  /* prompt attention's micro-kernel, fanr columns wide (backends/cpu_fattn.h;
   * NULL: the row form runs) */
  void (*famk)(int mr, int nc, int64_t kn, const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
               int64_t ldc, int acc);
  int famr, fanr;
  /* its softmax step over a row of a block's scores (dk__cpu_fa_softmax_avx2) */
  void (*fasm)(float *p, int64_t lr, int64_t np, float *mx, float *l, float *o, int64_t Dv);
  /* from this many activation rows fgemm takes them also packed in panels
   * of 16, [K][16] (its xt argument; 0: never) */
  int xt_minm;
} dk__cpu_kernels;
static const dk__cpu_kernels *dk__cpu_k;   /* set by dk__cpu_pick_kernels at open */

#ifdef DK_CPU_X86
/* contiguous f16 <-> f32 rows with F16C / AVX-512: the conversion is most of
 * the cost of every f16 op otherwise; tails too, so nothing here calls the
 * core's scalar (SSE-compiled) converters */
DK_CPU_AVX2 static void dk__cpu_f16_to_f32_row_avx2(const uint16_t *p, int64_t n, float *dst) {
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) _mm256_storeu_ps(dst + k, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + k))));
  for (; k < n; k++) dst[k] = _cvtsh_ss(p[k]);
}
DK_CPU_AVX2 static void dk__cpu_f32_to_f16_row_avx2(const float *src, int64_t n, uint16_t *p) {
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    _mm_storeu_si128((__m128i *)(p + k), _mm256_cvtps_ph(_mm256_loadu_ps(src + k), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; k < n; k++) p[k] = _cvtss_sh(src[k], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* (maskz forms throughout: the plain conversions' undefined-register idiom
 * trips g++ 12's -Wmaybe-uninitialized) */
DK_CPU_AVX512 static void dk__cpu_f16_to_f32_row_avx512(const uint16_t *p, int64_t n, float *dst) {
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) _mm512_storeu_ps(dst + k, _mm512_maskz_cvtph_ps((__mmask16)0xffff, _mm256_loadu_si256((const __m256i *)(p + k))));
  if (k < n) {   /* a masked tail */
    __mmask16 mk = (__mmask16)((1u << (n - k)) - 1);
    _mm512_mask_storeu_ps(dst + k, mk, _mm512_maskz_cvtph_ps((__mmask16)0xffff, _mm256_maskz_loadu_epi16(mk, p + k)));
  }
}
DK_CPU_AVX512 static void dk__cpu_f32_to_f16_row_avx512(const float *src, int64_t n, uint16_t *p) {
  int64_t k = 0;
  for (; k + 16 <= n; k += 16)
    _mm256_storeu_si256((__m256i *)(p + k), _mm512_maskz_cvtps_ph((__mmask16)0xffff, _mm512_loadu_ps(src + k), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  if (k < n) {
    __mmask16 mk = (__mmask16)((1u << (n - k)) - 1);
    _mm256_mask_storeu_epi16(p + k, mk, _mm512_maskz_cvtps_ph((__mmask16)0xffff, _mm512_maskz_loadu_ps(mk, src + k), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
}
#endif

/* n elements of a float/i32 tensor starting at element i, with a step, as f32 */
static void dk__cpu_load(dk_dtype dt, const void *base, int64_t i, int64_t step, int64_t n, float *dst) {
  int64_t k;
  switch (dt) {
  case DK_F32: {
    const float *p = (const float *)base + i;
    if (step == 1) memcpy(dst, p, (size_t)n * 4);
    else for (k = 0; k < n; k++) dst[k] = p[k * step];
    break;
  }
  case DK_F16: {
    const uint16_t *p = (const uint16_t *)base + i;
    if (step == 1 && dk__cpu_k && dk__cpu_k->f16_to_f32) { dk__cpu_k->f16_to_f32(p, n, dst); break; }
    for (k = 0; k < n; k++) dst[k] = dk_f16_to_f32(p[k * step]);
    break;
  }
  case DK_BF16: {
    const uint16_t *p = (const uint16_t *)base + i;
    for (k = 0; k < n; k++) dst[k] = dk_bf16_to_f32(p[k * step]);
    break;
  }
  default: {
    const int32_t *p = (const int32_t *)base + i;
    for (k = 0; k < n; k++) dst[k] = (float)p[k * step];
    break;
  }
  }
}

static void dk__cpu_store(dk_dtype dt, void *base, int64_t i, int64_t n, const float *src) {
  int64_t k;
  switch (dt) {
  case DK_F32: memcpy((float *)base + i, src, (size_t)n * 4); break;
  case DK_F16: {
    uint16_t *p = (uint16_t *)base + i;
    if (dk__cpu_k && dk__cpu_k->f32_to_f16) { dk__cpu_k->f32_to_f16(src, n, p); break; }
    for (k = 0; k < n; k++) p[k] = dk_f32_to_f16(src[k]);
    break;
  }
  case DK_BF16: { uint16_t *p = (uint16_t *)base + i; for (k = 0; k < n; k++) p[k] = dk_f32_to_bf16(src[k]); break; }
  default: { int32_t *p = (int32_t *)base + i; for (k = 0; k < n; k++) p[k] = (int32_t)src[k]; break; }
  }
}

/* one row of a weight/table of any dtype (quantized too) as f32; k0 and n
 * are multiples of 32 for the block formats */
static void dk__cpu_dequant_row(dk_dtype dt, const void *row, int64_t k0, int64_t n, float *dst) {
  int64_t b, j;
  if (dt == DK_Q8_0) {
    const dk_block_q8_0 *q = (const dk_block_q8_0 *)row + k0 / 32;
    for (b = 0; b < n / 32; b++) {
      float d = dk_f16_to_f32(q[b].d);
      for (j = 0; j < 32; j++) dst[b * 32 + j] = d * (float)q[b].qs[j];
    }
  } else if (dt == DK_Q4_0) {
    const dk_block_q4_0 *q = (const dk_block_q4_0 *)row + k0 / 32;
    for (b = 0; b < n / 32; b++) {
      float d = dk_f16_to_f32(q[b].d);
      for (j = 0; j < 16; j++) {
        dst[b * 32 + j] = d * (float)((q[b].qs[j] & 15) - 8);
        dst[b * 32 + j + 16] = d * (float)((q[b].qs[j] >> 4) - 8);
      }
    }
  } else if ((DK_QUANTS_MORE >> dt) & 1) {
    dk__cpu_quant_row(dt, row, k0, n, dst);
  } else {
    dk__cpu_load(dt, row, k0, 1, n, dst);
  }
}

/* Scratch buffers per thread, grown on demand and kept: hot ops must not call
 * malloc per row. A thread-specific key (not plain TLS) frees them when the
 * thread exits, pool worker or user thread alike. */
/* slots 0-3 for tasks, 4-5 for an op's own buffers that its tasks (run
 * on the calling thread too) must not clobber, 6 for the rows a fused
 * linear's first op hands to dk__cpu_linear (which uses 0-5) */
#define DK__CPU_SLOTS 7
typedef struct { float *p[DK__CPU_SLOTS]; size_t n[DK__CPU_SLOTS]; } dk__cpu_scratch_t;
static pthread_key_t dk__cpu_key;
static pthread_once_t dk__cpu_key_once = PTHREAD_ONCE_INIT;

static void dk__cpu_scratch_destroy(void *v) {
  dk__cpu_scratch_t *s = (dk__cpu_scratch_t *)v;
  int i;
  if (!s) return;
  for (i = 0; i < DK__CPU_SLOTS; i++) free(s->p[i]);
  free(s);
}
static void dk__cpu_key_init(void) { pthread_key_create(&dk__cpu_key, dk__cpu_scratch_destroy); }

static float *dk__cpu_scratch(int slot, size_t n) {
  dk__cpu_scratch_t *s;
  pthread_once(&dk__cpu_key_once, dk__cpu_key_init);
  s = (dk__cpu_scratch_t *)pthread_getspecific(dk__cpu_key);
  if (!s) {
    s = (dk__cpu_scratch_t *)calloc(1, sizeof *s);
    if (!s) { dk__cpu_note_short(sizeof *s); return NULL; }
    pthread_setspecific(dk__cpu_key, s);
  }
  if (s->n[slot] < n) {
    void *p = NULL;
    free(s->p[slot]);
    s->p[slot] = NULL;
    s->n[slot] = 0;
    if (posix_memalign(&p, 64, n * sizeof(float) + 64) != 0) { dk__cpu_note_short(n * sizeof(float) + 64); return NULL; }
    s->p[slot] = (float *)p;
    s->n[slot] = n;
  }
  return s->p[slot];
}

/* the calling thread's scratch, at shutdown */
static void dk__cpu_scratch_release(void) {
  pthread_once(&dk__cpu_key_once, dk__cpu_key_init);
  dk__cpu_scratch_destroy(pthread_getspecific(dk__cpu_key));
  pthread_setspecific(dk__cpu_key, NULL);
}

/* ==== elementwise ========================================================= */

typedef struct {
  const dk_call *c;
  int64_t rows, cols;                 /* of the output */
  int64_t astr[DEVKIT_MAX_DIMS], bstr[DEVKIT_MAX_DIMS];  /* broadcast strides aligned to out */
  int64_t pieces;                     /* binary ops: tasks a row (DK_CPU_PIECE columns each) */
} dk__cpu_ew;

/* C's powf rules for a float exponent (what the GPU backends copy) */
static float dk__cpu_pow(float x, float e) { return powf(x, e); }

static float dk__cpu_unary1(dk_op op, float x, const float *f) {
  float s = f[0];
  switch (op) {
  case DK_OP_SQRT: return sqrtf(x);
  case DK_OP_RSQRT: return 1.0f / sqrtf(x);
  case DK_OP_LOG: return logf(x);
  case DK_OP_ABS: return fabsf(x);
  case DK_OP_NEG: return -x;
  case DK_OP_ERF: return erff(x);
  case DK_OP_CLAMP: return x != x ? x : (x < f[0] ? f[0] : (x > f[1] ? f[1] : x));
  case DK_OP_POW_SCALAR: return dk__cpu_pow(x, s);
  case DK_OP_SCALE: return x * s;
  case DK_OP_SILU: return x / (1.0f + expf(-x));
  case DK_OP_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  case DK_OP_GELU_TANH: return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
  case DK_OP_RELU: return x > 0.0f ? x : 0.0f;
  case DK_OP_SIGMOID: return 1.0f / (1.0f + expf(-x));
  case DK_OP_TANH: return tanhf(x);
  case DK_OP_EXP: return expf(x);
  default: return x;
  }
}

/* unary ops run over the flat tensor in pieces of DK_CPU_PIECE elements */
#define DK_CPU_PIECE 4096

static void dk__cpu_unary_task(void *ctx, int64_t p0, int64_t p1) {
  const dk__cpu_ew *e = (const dk__cpu_ew *)ctx;
  const dk_call *c = e->c;
  const dk_tensor *o = c->t[0], *x = c->t[1];
  float *buf = dk__cpu_scratch(0, DK_CPU_PIECE), *u = dk__cpu_scratch(1, DK_CPU_PIECE);
  int64_t p, j;
  if (!buf || !u) return;
  for (p = p0; p < p1; p++) {
    int64_t i0 = p * DK_CPU_PIECE, n = e->cols - i0 < DK_CPU_PIECE ? e->cols - i0 : DK_CPU_PIECE;
    dk__cpu_load(x->dtype, dk__cpu_ptr(x), i0, 1, n, buf);
    if (c->op == DK_OP_SWIGLU) dk__cpu_load(c->t[2]->dtype, dk__cpu_ptr(c->t[2]), i0, 1, n, u);
    if (dk__cpu_k->act && (c->op == DK_OP_SILU || c->op == DK_OP_SWIGLU || c->op == DK_OP_GELU_TANH ||
                           c->op == DK_OP_SIGMOID)) {
      dk__cpu_k->act(c->op, buf, u, n);
    } else if (c->op == DK_OP_SWIGLU) {
      for (j = 0; j < n; j++) buf[j] = buf[j] / (1.0f + expf(-buf[j])) * u[j];
    } else {
      for (j = 0; j < n; j++) buf[j] = dk__cpu_unary1(c->op, buf[j], c->f);
    }
    dk__cpu_store(o->dtype, dk__cpu_ptr(o), i0, n, buf);
  }
}

static dk_status dk__cpu_unary(const dk_call *c) {
  dk__cpu_ew e;
  memset(&e, 0, sizeof e);
  e.c = c;
  e.cols = dk_tensor_numel(c->t[0]);   /* all elements, in pieces */
  e.rows = (e.cols + DK_CPU_PIECE - 1) / DK_CPU_PIECE;
  dk__cpu_parallel(e.rows, 4, dk__cpu_unary_task, &e);
  return DK_OK;
}

/* element offset of input for output row r (all dims but the last) */
static int64_t dk__cpu_bcast_off(const dk_tensor *o, const int64_t *str, int64_t r) {
  int64_t off = 0;
  int i;
  for (i = o->ndim - 2; i >= 0; i--) {
    off += (r % o->shape[i]) * str[i];
    r /= o->shape[i];
  }
  return off;
}

/* Tasks are pieces of DK_CPU_PIECE columns of a row: a few long rows (a
 * flat tensor is one) still split over the threads, and a piece's
 * converted operands stay in L1 (one task a row, with its whole row
 * converted: a 16M-element dk_add ran on one thread through two 64 MB
 * buffers at 5.2 GB/s) */
static void dk__cpu_binary_task(void *ctx, int64_t t0, int64_t t1) {
  const dk__cpu_ew *e = (const dk__cpu_ew *)ctx;
  const dk_call *c = e->c;
  const dk_tensor *o = c->t[0], *a = c->t[1], *b = c->t[2];
  int nd = o->ndim;
  int64_t as = nd ? e->astr[nd - 1] : 0, bs = nd ? e->bstr[nd - 1] : 0, t, j;
  float *x = dk__cpu_scratch(0, DK_CPU_PIECE), *y = dk__cpu_scratch(1, DK_CPU_PIECE);
  if (!x || !y) return;
  for (t = t0; t < t1; t++) {
    int64_t r = t / e->pieces, c0 = t % e->pieces * DK_CPU_PIECE;
    int64_t n = e->cols - c0 < DK_CPU_PIECE ? e->cols - c0 : DK_CPU_PIECE;
    dk__cpu_load(a->dtype, dk__cpu_ptr(a), dk__cpu_bcast_off(o, e->astr, r) + c0 * as, as, n, x);
    dk__cpu_load(b->dtype, dk__cpu_ptr(b), dk__cpu_bcast_off(o, e->bstr, r) + c0 * bs, bs, n, y);
    switch (c->op) {
    case DK_OP_ADD: for (j = 0; j < n; j++) x[j] += y[j]; break;
    case DK_OP_SUB: for (j = 0; j < n; j++) x[j] -= y[j]; break;
    case DK_OP_MUL: for (j = 0; j < n; j++) x[j] *= y[j]; break;
    case DK_OP_POW: for (j = 0; j < n; j++) x[j] = dk__cpu_pow(x[j], y[j]); break;
    default: for (j = 0; j < n; j++) x[j] /= y[j]; break;
    }
    dk__cpu_store(o->dtype, dk__cpu_ptr(o), r * e->cols + c0, n, x);
  }
}

/* strides of t aligned to out's dims, 0 where t broadcasts */
static void dk__cpu_bcast_strides(const dk_tensor *o, const dk_tensor *t, int64_t *str) {
  int i, off = o->ndim - t->ndim;
  for (i = 0; i < o->ndim; i++) {
    int k = i - off;
    str[i] = (k < 0 || t->shape[k] == 1) ? 0 : t->stride[k];
  }
}

static dk_status dk__cpu_binary(const dk_call *c) {
  dk__cpu_ew e;
  const dk_tensor *o = c->t[0];
  memset(&e, 0, sizeof e);
  e.c = c;
  e.cols = o->ndim ? o->shape[o->ndim - 1] : 1;
  if (e.cols == 0) return DK_OK;
  e.rows = dk_tensor_numel(o) / e.cols;
  dk__cpu_bcast_strides(o, c->t[1], e.astr);
  dk__cpu_bcast_strides(o, c->t[2], e.bstr);
  e.pieces = (e.cols + DK_CPU_PIECE - 1) / DK_CPU_PIECE;
  dk__cpu_parallel(e.rows * e.pieces, 1 + 16384 / (e.cols < DK_CPU_PIECE ? e.cols : DK_CPU_PIECE), dk__cpu_binary_task, &e);
  return DK_OK;
}

/* ==== norms and softmax (row-wise) ========================================= */

typedef struct { const dk_call *c; int64_t rows, cols; } dk__cpu_rows;

static void dk__cpu_norm_task(void *ctx, int64_t r0, int64_t r1) {
  const dk__cpu_rows *e = (const dk__cpu_rows *)ctx;
  const dk_call *c = e->c;
  const dk_tensor *o = c->t[0], *x = c->t[1], *w = c->t[2], *b = c->op == DK_OP_LAYERNORM ? c->t[3] : NULL;
  int64_t n = e->cols, r, j;
  float *buf = dk__cpu_scratch(0, (size_t)(3 * n)), *wb = buf + n, *bb = buf + 2 * n;
  if (!buf) return;
  if (w) dk__cpu_load(w->dtype, dk__cpu_ptr(w), 0, 1, n, wb);
  if (b) dk__cpu_load(b->dtype, dk__cpu_ptr(b), 0, 1, n, bb);
  for (r = r0; r < r1; r++) {
    double mean = 0.0, var = 0.0;
    float inv;
    dk__cpu_load(x->dtype, dk__cpu_ptr(x), r * n, 1, n, buf);
    if (c->op == DK_OP_LAYERNORM) {
      for (j = 0; j < n; j++) mean += buf[j];
      mean /= (double)n;
      for (j = 0; j < n; j++) var += ((double)buf[j] - mean) * ((double)buf[j] - mean);
    } else {
      /* four chains: one chain of dependent double adds was most of a
       * 64-wide norm (stories260K calls eleven a token) */
      double v0 = 0.0, v1 = 0.0, v2 = 0.0, v3 = 0.0;
      for (j = 0; j + 4 <= n; j += 4) {
        v0 += (double)buf[j] * buf[j];
        v1 += (double)buf[j + 1] * buf[j + 1];
        v2 += (double)buf[j + 2] * buf[j + 2];
        v3 += (double)buf[j + 3] * buf[j + 3];
      }
      for (; j < n; j++) v0 += (double)buf[j] * buf[j];
      var = (v0 + v1) + (v2 + v3);
    }
    inv = (float)(1.0 / sqrt(var / (double)n + (double)c->f[0]));
    for (j = 0; j < n; j++) {
      float v = ((float)(buf[j] - mean)) * inv;
      if (w) v *= wb[j];
      if (b) v += bb[j];
      buf[j] = v;
    }
    dk__cpu_store(o->dtype, dk__cpu_ptr(o), r * n, n, buf);
  }
}

/* row[i] = exp(row[i] - max) for i < n, the softmax numerators; returns
 * their sum (in double) and the max in *mx (softmax, attention) */
static double dk__cpu_exp_shift(float *row, int64_t n, float *mx) {
  float m = -INFINITY;
  double z = 0.0;
  int64_t j;
  if (dk__cpu_k && dk__cpu_k->expsum) return dk__cpu_k->expsum(row, n, mx);
  for (j = 0; j < n; j++) m = row[j] > m ? row[j] : m;
  /* nothing above -inf (a fully masked row): shifting by 0 instead makes
   * every numerator 0 (sum 0), or NaN where the row holds a NaN */
  if (mx) *mx = m;
  {
    float s = m == -INFINITY ? 0.0f : m;
    for (j = 0; j < n; j++) { row[j] = expf(row[j] - s); z += row[j]; }
  }
  return z;
}

static void dk__cpu_softmax_task(void *ctx, int64_t r0, int64_t r1) {
  const dk__cpu_rows *e = (const dk__cpu_rows *)ctx;
  const dk_call *c = e->c;
  const dk_tensor *o = c->t[0], *x = c->t[1];
  int masked = c->op == DK_OP_SOFTMAX_MASKED;
  int64_t n = e->cols, r, j, rows_per = masked ? x->shape[x->ndim - 2] : 1;
  float *buf = dk__cpu_scratch(0, (size_t)n);
  if (!buf) return;
  for (r = r0; r < r1; r++) {
    int64_t lim = n;
    double sum;
    dk__cpu_load(x->dtype, dk__cpu_ptr(x), r * n, 1, n, buf);
    if (masked) {
      int64_t i = r % rows_per;
      if (c->i[0] >= 0) lim = i + c->i[0] + 1 < n ? i + c->i[0] + 1 : n;
      for (j = 0; j < n; j++) buf[j] *= c->f[0];
    }
    sum = dk__cpu_exp_shift(buf, lim, NULL);
    /* all -inf: zeros; a NaN anywhere makes the sum, and so the row, NaN */
    for (j = 0; j < lim; j++) buf[j] = sum == 0.0 ? 0.0f : (float)(buf[j] / sum);
    for (j = lim; j < n; j++) buf[j] = 0.0f;
    dk__cpu_store(o->dtype, dk__cpu_ptr(o), r * n, n, buf);
  }
}

static dk_status dk__cpu_rowwise(const dk_call *c, dk_cpu_task fn) {
  dk__cpu_rows e;
  const dk_tensor *x = c->t[1];
  e.c = c;
  e.cols = x->ndim ? x->shape[x->ndim - 1] : 1;
  if (e.cols == 0) return DK_OK;
  e.rows = dk_tensor_numel(x) / e.cols;
  dk__cpu_parallel(e.rows, 1 + 8192 / e.cols, fn, &e);
  return DK_OK;
}
static dk_status dk__cpu_norm(const dk_call *c) { return dk__cpu_rowwise(c, dk__cpu_norm_task); }
static dk_status dk__cpu_softmax(const dk_call *c) { return dk__cpu_rowwise(c, dk__cpu_softmax_task); }

/* ==== horizontal sums ===================================================== */

#ifdef DK_CPU_X86
DK_CPU_AVX2_INLINE float dk__cpu_hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
/* the largest of the eight (a NaN lane loses to any number, as maxps goes) */
DK_CPU_AVX2_INLINE float dk__cpu_hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/* The sums of four vectors at once, lane i for the i-th: two rounds of
 * pairwise adds and one across the halves, each lane the tree
 * ((v0+v1)+(v2+v3))+((v4+v5)+(v6+v7)) of its vector's elements v. */
DK_CPU_AVX2_INLINE __m128 dk__cpu_hsum4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  __m256 s = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}
/* the sums of eight, as two groups of four: a dot summed in a group of four
 * has the bits it would have had in a group of eight */
DK_CPU_AVX2_INLINE __m256 dk__cpu_hsum8(const __m256 *a) {
  return _mm256_set_m128(dk__cpu_hsum4(a[4], a[5], a[6], a[7]), dk__cpu_hsum4(a[0], a[1], a[2], a[3]));
}
#endif

/* ==== GEMM: C[M,N] = A[M,K] · B[K,N] ======================================= */

/* Panels: A is packed once into MR-row panels [K][MR]; each task packs its
 * own KC×NC slice of B into NR-column panels and accumulates an f32 tile of
 * C, so f16/bf16 outputs are rounded once, at the end. */
#define DK_CPU_MR 6
#define DK_CPU_NR 16
#define DK_CPU_KC 256
#define DK_CPU_NC 128

typedef float dk__v8 __attribute__((vector_size(32)));

/* c[MR][NR] += a[kc][MR] * b[kc][NR], c with row stride ldc */
#define DK__MICRO_BODY                                                         \
  dk__v8 acc[DK_CPU_MR][2];                                                    \
  int i, p;                                                                    \
  for (i = 0; i < DK_CPU_MR; i++) {                                            \
    memcpy(&acc[i][0], c + i * ldc, 32);                                       \
    memcpy(&acc[i][1], c + i * ldc + 8, 32);                                   \
  }                                                                            \
  for (p = 0; p < kc; p++) {                                                   \
    dk__v8 b0, b1;                                                             \
    memcpy(&b0, b + p * DK_CPU_NR, 32);                                        \
    memcpy(&b1, b + p * DK_CPU_NR + 8, 32);                                    \
    for (i = 0; i < DK_CPU_MR; i++) {                                          \
      float av = a[p * DK_CPU_MR + i];                                         \
      dk__v8 va = {av, av, av, av, av, av, av, av};                            \
      acc[i][0] += va * b0;                                                    \
      acc[i][1] += va * b1;                                                    \
    }                                                                          \
  }                                                                            \
  for (i = 0; i < DK_CPU_MR; i++) {                                            \
    memcpy(c + i * ldc, &acc[i][0], 32);                                       \
    memcpy(c + i * ldc + 8, &acc[i][1], 32);                                   \
  }

static void dk__cpu_micro_generic(int kc, const float *a, const float *b, float *c, int64_t ldc) { DK__MICRO_BODY }
#ifdef DK_CPU_X86
/* The x86 micro-kernel in intrinsics: compiled from the vector-extension
 * body above (at -O2 -std=c99), the 12 accumulators lived on the stack, the 6
 * rows were a loop, and nothing fused (ISO C turns FP contraction off): 30
 * GFLOP/s on two cores. Here they stay in 12 ymm registers; per k, 2 loads
 * of B, 6 broadcasts of A and 12 FMAs. */
#define DK__MICRO_ROW(i)                                                       \
  av = _mm256_broadcast_ss(ap + i);                                            \
  c##i##a = _mm256_fmadd_ps(av, b0, c##i##a);                                  \
  c##i##b = _mm256_fmadd_ps(av, b1, c##i##b);
#define DK__MICRO_X86_BODY                                                     \
  __m256 c0a = _mm256_loadu_ps(c), c0b = _mm256_loadu_ps(c + 8);               \
  __m256 c1a = _mm256_loadu_ps(c + ldc), c1b = _mm256_loadu_ps(c + ldc + 8);   \
  __m256 c2a = _mm256_loadu_ps(c + 2 * ldc), c2b = _mm256_loadu_ps(c + 2 * ldc + 8); \
  __m256 c3a = _mm256_loadu_ps(c + 3 * ldc), c3b = _mm256_loadu_ps(c + 3 * ldc + 8); \
  __m256 c4a = _mm256_loadu_ps(c + 4 * ldc), c4b = _mm256_loadu_ps(c + 4 * ldc + 8); \
  __m256 c5a = _mm256_loadu_ps(c + 5 * ldc), c5b = _mm256_loadu_ps(c + 5 * ldc + 8); \
  int p;                                                                       \
  for (p = 0; p < kc; p++) {                                                   \
    const float *ap = a + p * DK_CPU_MR;                                       \
    __m256 b0 = _mm256_loadu_ps(b + p * DK_CPU_NR), b1 = _mm256_loadu_ps(b + p * DK_CPU_NR + 8), av; \
    DK__MICRO_ROW(0) DK__MICRO_ROW(1) DK__MICRO_ROW(2)                         \
    DK__MICRO_ROW(3) DK__MICRO_ROW(4) DK__MICRO_ROW(5)                         \
  }                                                                            \
  _mm256_storeu_ps(c, c0a); _mm256_storeu_ps(c + 8, c0b);                      \
  _mm256_storeu_ps(c + ldc, c1a); _mm256_storeu_ps(c + ldc + 8, c1b);          \
  _mm256_storeu_ps(c + 2 * ldc, c2a); _mm256_storeu_ps(c + 2 * ldc + 8, c2b);  \
  _mm256_storeu_ps(c + 3 * ldc, c3a); _mm256_storeu_ps(c + 3 * ldc + 8, c3b);  \
  _mm256_storeu_ps(c + 4 * ldc, c4a); _mm256_storeu_ps(c + 4 * ldc + 8, c4b);  \
  _mm256_storeu_ps(c + 5 * ldc, c5a); _mm256_storeu_ps(c + 5 * ldc + 8, c5b);
DK_CPU_AVX2 static void dk__cpu_micro_avx2(int kc, const float *a, const float *b, float *c, int64_t ldc) { DK__MICRO_X86_BODY }
DK_CPU_AVX512 static void dk__cpu_micro_avx512(int kc, const float *a, const float *b, float *c, int64_t ldc) { DK__MICRO_X86_BODY }
#endif

/* a*b + c: the generic code's two roundings; the x86 classes' one FMA (the
 * compiler does not fuse in ISO C mode) */
#define DK__MADD(a, b, c) ((c) + (a) * (b))
#ifdef DK_CPU_X86
#define DK__FMADD(a, b, c) _mm256_fmadd_ps(a, b, c)
#endif

/* out[i] = q_i . k for nq rows q_i = q + i*qs (up to 4 at a time): k is
 * loaded once per 8 values for all of them. Attention's query heads that
 * share a KV head. */
#define DK__DOTS_BODY(FMA)                                                     \
  int i0, i, j;                                                                \
  for (i0 = 0; i0 < nq; i0 += 4) {                                             \
    int m = nq - i0 < 4 ? nq - i0 : 4;                                         \
    dk__v8 acc[4] = {{0}, {0}, {0}, {0}};                                      \
    int64_t kk = 0;                                                            \
    for (; kk + 8 <= n; kk += 8) {                                             \
      dk__v8 kv;                                                               \
      memcpy(&kv, k + kk, 32);                                                 \
      for (i = 0; i < m; i++) {                                                \
        dk__v8 qv;                                                             \
        memcpy(&qv, q + (i0 + i) * qs + kk, 32);                               \
        acc[i] = FMA(qv, kv, acc[i]);                                          \
      }                                                                        \
    }                                                                          \
    for (i = 0; i < m; i++) {                                                  \
      /* a tree, not a chain of 8 dependent adds: at a head size of 8 the   \
       * sum is most of the dot */                                             \
      float t = ((acc[i][0] + acc[i][4]) + (acc[i][2] + acc[i][6])) + ((acc[i][1] + acc[i][5]) + (acc[i][3] + acc[i][7])); \
      for (j = (int)kk; j < n; j++) t += q[(i0 + i) * qs + j] * k[j];          \
      out[i0 + i] = t;                                                         \
    }                                                                          \
  }

static void dk__cpu_dots_generic(const float *q, int64_t qs, int nq, const float *k, int64_t n, float *out) {
  DK__DOTS_BODY(DK__MADD)
}
#ifdef DK_CPU_X86
/* The x86 classes: eight rows at a time, summed together by dk__cpu_hsum8.
 * With a head of 8 values a dot is one multiply, and taking its lanes apart
 * one by one was half of decode attention (stories260K: 22 cycles a dot).
 * The rows past the last eight go four at a time with the same chain and
 * tree, so a score's bits do not depend on where its group of positions
 * began. */
#define DK__DOTS8_FMA(i) a[i] = _mm256_fmadd_ps(_mm256_loadu_ps(q0 + (i) * qs + kk), kv, a[i]);
#define DK__DOTS_X86_BODY                                                      \
  int i0 = 0, i;                                                               \
  int64_t kk, j;                                                               \
  for (; i0 + 8 <= nq; i0 += 8) {                                              \
    const float *q0 = q + i0 * qs;                                             \
    __m256 a[8];                                                               \
    float t[8];                                                                \
    for (i = 0; i < 8; i++) a[i] = _mm256_setzero_ps();                        \
    for (kk = 0; kk + 8 <= n; kk += 8) {                                       \
      const __m256 kv = _mm256_loadu_ps(k + kk);                               \
      DK__DOTS8_FMA(0) DK__DOTS8_FMA(1) DK__DOTS8_FMA(2) DK__DOTS8_FMA(3)      \
      DK__DOTS8_FMA(4) DK__DOTS8_FMA(5) DK__DOTS8_FMA(6) DK__DOTS8_FMA(7)      \
    }                                                                          \
    _mm256_storeu_ps(t, dk__cpu_hsum8(a));                                     \
    for (i = 0; i < 8; i++) {                                                  \
      for (j = kk; j < n; j++) t[i] += q0[i * qs + j] * k[j];                  \
      out[i0 + i] = t[i];                                                      \
    }                                                                          \
  }                                                                            \
  for (; i0 < nq; i0 += 4) {                                                   \
    /* four chains side by side, always: a loop to a runtime count kept them \
     * in memory, a store and a reload per FMA (46 % of a 64-wide decode    \
     * attention). Rows past nq repeat row 0 and are not stored. */          \
    const float *q0 = q + i0 * qs;                                             \
    const int m = nq - i0 < 4 ? nq - i0 : 4;                                   \
    const float *q1 = q0 + (m > 1 ? qs : 0), *q2 = q0 + (m > 2 ? 2 * qs : 0), *q3 = q0 + (m > 3 ? 3 * qs : 0); \
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                \
    float t4[4];                                                               \
    for (kk = 0; kk + 8 <= n; kk += 8) {                                       \
      const __m256 kv = _mm256_loadu_ps(k + kk);                               \
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q0 + kk), kv, a0);                  \
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q1 + kk), kv, a1);                  \
      a2 = _mm256_fmadd_ps(_mm256_loadu_ps(q2 + kk), kv, a2);                  \
      a3 = _mm256_fmadd_ps(_mm256_loadu_ps(q3 + kk), kv, a3);                  \
    }                                                                          \
    _mm_storeu_ps(t4, dk__cpu_hsum4(a0, a1, a2, a3));                          \
    for (i = 0; i < m; i++) {                                                  \
      for (j = kk; j < n; j++) t4[i] += q0[i * qs + j] * k[j];                 \
      out[i0 + i] = t4[i];                                                     \
    }                                                                          \
  }
DK_CPU_AVX2 static void dk__cpu_dots_avx2(const float *q, int64_t qs, int nq, const float *k, int64_t n, float *out) {
  DK__DOTS_X86_BODY
}
DK_CPU_AVX512 static void dk__cpu_dots_avx512(const float *q, int64_t qs, int nq, const float *k, int64_t n, float *out) {
  DK__DOTS_X86_BODY
}
#endif
static void dk__cpu_dots(const float *q, int64_t qs, int nq, const float *k, int64_t n, float *out) {
  dk__cpu_k->dots(q, qs, nq, k, n, out);
}

/* y += p * x, eight lanes at a time (attention's weighted sum of V rows:
 * -O2 leaves a loop of runtime length scalar) */
#define DK__AXPY_BODY(FMA)                                                     \
  dk__v8 pv = {p, p, p, p, p, p, p, p};                                        \
  int64_t k = 0;                                                               \
  for (; k + 8 <= n; k += 8) {                                                 \
    dk__v8 xv, yv;                                                             \
    memcpy(&xv, x + k, 32);                                                    \
    memcpy(&yv, y + k, 32);                                                    \
    yv = FMA(pv, xv, yv);                                                      \
    memcpy(y + k, &yv, 32);                                                    \
  }                                                                            \
  for (; k < n; k++) y[k] += p * x[k];

static void dk__cpu_axpy_generic(float *y, float p, const float *x, int64_t n) { DK__AXPY_BODY(DK__MADD) }
#ifdef DK_CPU_X86
DK_CPU_AVX2 static void dk__cpu_axpy_avx2(float *y, float p, const float *x, int64_t n) { DK__AXPY_BODY(DK__FMADD) }
DK_CPU_AVX512 static void dk__cpu_axpy_avx512(float *y, float p, const float *x, int64_t n) { DK__AXPY_BODY(DK__FMADD) }
#endif
static void dk__cpu_axpy(float *y, float p, const float *x, int64_t n) { dk__cpu_k->axpy(y, p, x, n); }

#ifdef DK_CPU_X86
/* ob[h * Dv + j] += sum over s in [s0, s1) of p[h * ps + s - s0] * v[s * vs + j]
 * for h < nh: a head's outputs stay in registers, 64 at a time, over all
 * its positions, where an axpy per position and head loaded and stored them
 * every time (29 % of a 64-wide decode attention). Same order, same FMAs:
 * the axpy loop's bits. */
#define DK__WSUM_FMA(i) a##i = _mm256_fmadd_ps(w, _mm256_loadu_ps(vr + 8 * (i)), a##i);
DK_CPU_AVX2 static void dk__cpu_wsum_avx2(float *ob, int64_t nh, int64_t Dv, const float *v, int64_t vs, int64_t s0,
                                          int64_t s1, const float *p, int64_t ps) {
  int64_t h, s, j;
  for (h = 0; h < nh; h++) {
    float *o = ob + h * Dv;
    const float *ph = p + h * ps;   /* weight of position s: ph[s - s0] */
    for (j = 0; j + 64 <= Dv; j += 64) {
      __m256 a0 = _mm256_loadu_ps(o + j), a1 = _mm256_loadu_ps(o + j + 8), a2 = _mm256_loadu_ps(o + j + 16);
      __m256 a3 = _mm256_loadu_ps(o + j + 24), a4 = _mm256_loadu_ps(o + j + 32), a5 = _mm256_loadu_ps(o + j + 40);
      __m256 a6 = _mm256_loadu_ps(o + j + 48), a7 = _mm256_loadu_ps(o + j + 56);
      for (s = s0; s < s1; s++) {
        const __m256 w = _mm256_set1_ps(ph[s - s0]);
        const float *vr = v + s * vs + j;
        DK__WSUM_FMA(0) DK__WSUM_FMA(1) DK__WSUM_FMA(2) DK__WSUM_FMA(3)
        DK__WSUM_FMA(4) DK__WSUM_FMA(5) DK__WSUM_FMA(6) DK__WSUM_FMA(7)
      }
      _mm256_storeu_ps(o + j, a0); _mm256_storeu_ps(o + j + 8, a1); _mm256_storeu_ps(o + j + 16, a2);
      _mm256_storeu_ps(o + j + 24, a3); _mm256_storeu_ps(o + j + 32, a4); _mm256_storeu_ps(o + j + 40, a5);
      _mm256_storeu_ps(o + j + 48, a6); _mm256_storeu_ps(o + j + 56, a7);
    }
    for (; j + 8 <= Dv; j += 8) {
      __m256 a0 = _mm256_loadu_ps(o + j);
      for (s = s0; s < s1; s++) {
        const __m256 w = _mm256_set1_ps(ph[s - s0]);
        const float *vr = v + s * vs + j;
        DK__WSUM_FMA(0)
      }
      _mm256_storeu_ps(o + j, a0);
    }
    for (; j < Dv; j++)
      for (s = s0; s < s1; s++) o[j] += ph[s - s0] * v[s * vs + j];
  }
}
#endif

/* ---- activations: SiLU, SwiGLU, GELU (tanh form), sigmoid, 8 lanes at a time -----
 * libm's expf/tanhf one value at a time were a tenth of a Gemma 3 prompt.
 * exp: x = n ln2 + r (|r| <= ln2 / 2, ln2 in two parts), e^r by Cephes'
 * expf polynomial (about 1 ulp), 2^n through the exponent bits; x clamped
 * to [-87, 88] so 2^n stays a normal float (the activations below divide
 * by 1 + e^x, and take the sigmoid as 0 past the upper clamp).
 * The tanh-form GELU is rewritten exactly as x * sigmoid(2y):
 * 0.5 x (1 + tanh y) = x e^{2y} / (1 + e^{2y}). NaN inputs stay NaN. */
#ifdef DK_CPU_X86
DK_CPU_AVX2_INLINE __m256 dk__cpu_exp8(__m256 x) {
  const __m256 l2e = _mm256_set1_ps(1.44269504088896341f), c1 = _mm256_set1_ps(0.693359375f),
               c2 = _mm256_set1_ps(-2.12194440e-4f);
  __m256 n, r, r2, p;
  __m256i e;
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  n = _mm256_round_ps(_mm256_mul_ps(x, l2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm256_fnmadd_ps(n, c1, x);
  r = _mm256_fnmadd_ps(n, c2, r);
  p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  r2 = _mm256_mul_ps(r, r);
  p = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

/* op on x[0..n) in place (SwiGLU: x = silu(x) * u) */
DK_CPU_AVX2 static void dk__cpu_act_avx2(dk_op op, float *x, const float *u, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f), k0 = _mm256_set1_ps(-2.0f * 0.79788456080286536f),
               k1 = _mm256_set1_ps(0.044715f);
  int64_t j;
  for (j = 0; j < n; j += 8) {
    /* the last piece through masked loads and stores: no scalar tail (which
     * would call out of this kernel class) */
    const int left = n - j < 8 ? (int)(n - j) : 8;
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 v = _mm256_maskload_ps(x + j, m);
    __m256 z, y;
    if (op == DK_OP_GELU_TANH) {
      /* z = -2 * 0.79788456 * (v + 0.044715 v^3) */
      z = _mm256_mul_ps(k0, _mm256_fmadd_ps(_mm256_mul_ps(k1, v), _mm256_mul_ps(v, v), v));
    } else {
      z = _mm256_sub_ps(_mm256_setzero_ps(), v);
    }
    y = _mm256_div_ps(one, _mm256_add_ps(one, dk__cpu_exp8(z)));   /* sigmoid(-z) */
    /* past exp8's clamp at 88 the sigmoid is 0, as 1 / (1 + expf(z)) is:
     * x times it is then -0 for a huge negative x, not x e^-88, and NaN at
     * -inf (what the portable class and the GPUs give) */
    y = _mm256_andnot_ps(_mm256_cmp_ps(z, _mm256_set1_ps(88.0f), _CMP_GT_OQ), y);
    if (op != DK_OP_SIGMOID) y = _mm256_mul_ps(v, y);
    if (op == DK_OP_SWIGLU) y = _mm256_mul_ps(y, _mm256_maskload_ps(u + j, m));
    y = _mm256_blendv_ps(y, v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));   /* NaN in, NaN out */
    _mm256_maskstore_ps(x + j, m, y);
  }
}

/* row[j] = exp(row[j] - s), returning the sum: exp8 where x = row[j] - s >=
 * -87 (below it, and at -inf, 0: libm's expf gives at most 1.6e-38 there),
 * NaN kept; the sum in double as the scalar loop keeps it. libm's expf one
 * value at a time was 10 % of a stories260K decode (head size 8). */
DK_CPU_AVX2 static double dk__cpu_expsum_avx2(float *row, int64_t n, float *mx) {
  const __m256 lo = _mm256_set1_ps(-87.0f), ninf = _mm256_set1_ps(-INFINITY);
  __m256 sv = ninf;
  __m256d z0 = _mm256_setzero_pd(), z1 = z0;
  __m128d h;
  float t;
  int64_t j;
  /* the max: maxps returns its second operand where the first is NaN, so a
   * NaN is skipped as the scalar compare skips it; lanes past n are -inf */
  for (j = 0; j < n; j += 8) {
    const int left = n - j < 8 ? (int)(n - j) : 8;
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    sv = _mm256_max_ps(_mm256_blendv_ps(ninf, _mm256_maskload_ps(row + j, m), _mm256_castsi256_ps(m)), sv);
  }
  t = dk__cpu_hmax(sv);
  if (mx) *mx = t;
  /* nothing above -inf (a fully masked row): shifting by 0 instead makes
   * every numerator 0 (sum 0), or NaN where the row holds a NaN */
  sv = _mm256_set1_ps(t == -INFINITY ? 0.0f : t);
  for (j = 0; j < n; j += 8) {
    const int left = n - j < 8 ? (int)(n - j) : 8;
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 x = _mm256_sub_ps(_mm256_maskload_ps(row + j, m), sv);
    __m256 e = _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LT_OQ), dk__cpu_exp8(x));
    e = _mm256_blendv_ps(e, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    e = _mm256_and_ps(e, _mm256_castsi256_ps(m));   /* lanes past n: 0 in the sum */
    _mm256_maskstore_ps(row + j, m, e);
    z0 = _mm256_add_pd(z0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    z1 = _mm256_add_pd(z1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  z0 = _mm256_add_pd(z0, z1);
  h = _mm_add_pd(_mm256_castpd256_pd128(z0), _mm256_extractf128_pd(z0, 1));
  return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
}
#endif

/* How A and B are read. A: dtype, base, row stride, col stride (elements).
 * B: either a dense matrix B[k][n] (rs, cs) or, for linear, rows of W[n][k]. */
typedef struct {
  dk_dtype adt, bdt, cdt;
  const void *a, *b;
  void *c;
  int64_t M, N, K;
  int64_t a_rs, a_cs, b_rs, b_cs;   /* b strides for a dense B */
  int b_is_w;                        /* B[k][n] = W[n][k], W rows of K elements */
  const void *bias;
  dk_dtype bias_dt;
  float *apack;                      /* ceil(M/MR) panels of K*MR */
  int64_t mpanels;
  int threaded;
} dk__cpu_gemm;

static void dk__cpu_pack_a_task(void *ctx, int64_t p0, int64_t p1) {
  const dk__cpu_gemm *g = (const dk__cpu_gemm *)ctx;
  float *row = dk__cpu_scratch(0, (size_t)g->K);
  int64_t p, i, k;
  if (!row) return;
  for (p = p0; p < p1; p++) {
    float *dst = g->apack + p * g->K * DK_CPU_MR;
    for (i = 0; i < DK_CPU_MR; i++) {
      int64_t m = p * DK_CPU_MR + i;
      if (m < g->M) dk__cpu_load(g->adt, g->a, m * g->a_rs, g->a_cs, g->K, row);
      else memset(row, 0, (size_t)g->K * 4);
      for (k = 0; k < g->K; k++) dst[k * DK_CPU_MR + i] = row[k];
    }
  }
}

/* the next panel's weight bytes (the `rows` rows after this panel's, from
 * w) while this one is decoded: 16 rows a few KB apart are 16 streams, more
 * than the hardware prefetcher follows */
static void dk__cpu_prefetch_rows(const dk__cpu_gemm *g, const char *w, size_t wrow, int64_t rows, int64_t k0, int64_t kc) {
#if defined(__GNUC__) || defined(__clang__)
  const size_t off = dk__row_bytes(g->bdt, k0), len = dk__row_bytes(g->bdt, kc);
  int64_t r;
  size_t b;
  if (rows > DK_CPU_NR) rows = DK_CPU_NR;
  for (r = 0; r < rows; r++)
    for (b = 0; b < len; b += 64) __builtin_prefetch(w + (size_t)(DK_CPU_NR + r) * wrow + off + b);
#else
  (void)g; (void)w; (void)wrow; (void)rows; (void)k0; (void)kc;
#endif
}

/* B = W^T: columns [n0, n0+nc) are weight rows, each panel's NR rows
 * decoded into tmp (NR rows of kc) and transposed, by the class's kernels
 * where it has them (a dtype they lack: the portable dequantization; a kc
 * tail under 8 values, float dtypes only: scalar) */
static void dk__cpu_pack_w(const dk__cpu_gemm *g, int64_t k0, int64_t kc, int64_t n0, int64_t nc, float *dst, float *tmp) {
  const size_t wrow = dk__row_bytes(g->bdt, g->K);
  const int64_t kc8 = dk__cpu_k->wpack ? kc / 8 * 8 : 0;
  int64_t jp, j, k;
  for (jp = 0; jp < nc; jp += DK_CPU_NR) {
    const int64_t rows = nc - jp < DK_CPU_NR ? nc - jp : DK_CPU_NR;
    const char *w = (const char *)g->b + (size_t)(n0 + jp) * wrow;
    float *panel = dst + jp * kc;
    dk__cpu_prefetch_rows(g, w, wrow, nc - jp - DK_CPU_NR, k0, kc);
    if (kc8 && dk__cpu_k->wdeq(g->bdt, w, wrow, rows, k0, kc8, tmp, kc)) {
      if (kc8 < kc)
        for (j = 0; j < rows; j++) dk__cpu_load(g->bdt, w + (size_t)j * wrow, k0 + kc8, 1, kc - kc8, tmp + j * kc + kc8);
    } else {
      for (j = 0; j < rows; j++) dk__cpu_dequant_row(g->bdt, w + (size_t)j * wrow, k0, kc, tmp + j * kc);
    }
    for (j = rows; j < DK_CPU_NR; j++) memset(tmp + j * kc, 0, (size_t)kc * 4);
    if (kc8) dk__cpu_k->wpack(tmp, kc, kc8, panel);
    for (k = kc8; k < kc; k++)
      for (j = 0; j < DK_CPU_NR; j++) panel[k * DK_CPU_NR + j] = tmp[j * kc + k];
  }
}

/* a dense B (dk_matmul): columns [n0, n0+nc) of rows [k0, k0+kc), as NR-wide panels [kc][NR] */
static void dk__cpu_pack_b(const dk__cpu_gemm *g, int64_t k0, int64_t kc, int64_t n0, int64_t nc, float *dst, float *tmp) {
  int64_t jp, j, k;
  for (jp = 0; jp < nc; jp += DK_CPU_NR) {
    float *panel = dst + jp * kc;
    for (j = 0; j < DK_CPU_NR; j++) {
      int64_t n = n0 + jp + j;
      if (jp + j >= nc) {
        for (k = 0; k < kc; k++) panel[k * DK_CPU_NR + j] = 0.0f;
        continue;
      }
      dk__cpu_load(g->bdt, g->b, k0 * g->b_rs + n * g->b_cs, g->b_rs, kc, tmp);
      for (k = 0; k < kc; k++) panel[k * DK_CPU_NR + j] = tmp[k];
    }
  }
}

/* a GEMM task's result: columns [n0, n0+nc) of M rows accumulated in cacc
 * (rows DK_CPU_NC apart), plus the bias (loaded into tmp), stored to c */
static void dk__cpu_store_cols(float *cacc, int64_t M, int64_t N, int64_t n0, int64_t nc, const void *bias,
                               dk_dtype bias_dt, float *tmp, dk_dtype cdt, void *c) {
  int64_t m, j;
  if (bias) dk__cpu_load(bias_dt, bias, n0, 1, nc, tmp);
  for (m = 0; m < M; m++) {
    float *row = cacc + m * DK_CPU_NC;
    if (bias) for (j = 0; j < nc; j++) row[j] += tmp[j];
    dk__cpu_store(cdt, c, m * N + n0, nc, row);
  }
}

/* y (M rows of N, f32) plus the bias, stored to rows [m0, m0 + M) of o:
 * dk_linear's products that leave an f32 result (decode, the row-form
 * prompt product, a slice of rows at a time) */
static dk_status dk__cpu_bias_store(const dk_tensor *o, const dk_tensor *bias, float *y, int64_t m0, int64_t M,
                                    int64_t N) {
  if (bias) {
    float *bb = dk__cpu_scratch(0, (size_t)N);
    int64_t m, j;
    if (!bb) return dk__error(DK_ERR_OUT_OF_MEMORY, "dk_linear on cpu: no scratch memory");
    dk__cpu_load(bias->dtype, dk__cpu_ptr(bias), 0, 1, N, bb);
    for (m = 0; m < M; m++) for (j = 0; j < N; j++) y[m * N + j] += bb[j];
  }
  dk__cpu_store(o->dtype, dk__cpu_ptr(o), m0 * N, M * N, y);
  return DK_OK;
}

static void dk__cpu_gemm_task(void *ctx, int64_t t0, int64_t t1) {
  const dk__cpu_gemm *g = (const dk__cpu_gemm *)ctx;
  int64_t mpad = g->mpanels * DK_CPU_MR, t;
  float *cacc = dk__cpu_scratch(1, (size_t)(mpad * DK_CPU_NC));
  float *bp = dk__cpu_scratch(2, (size_t)(DK_CPU_KC * DK_CPU_NC));
  float *tmp = dk__cpu_scratch(3, DK_CPU_NR * DK_CPU_KC);
  float *bias = dk__cpu_scratch(0, DK_CPU_NC);
  if (!cacc || !bp || !tmp || !bias) return;
  for (t = t0; t < t1; t++) {
    int64_t n0 = t * DK_CPU_NC, nc = g->N - n0 < DK_CPU_NC ? g->N - n0 : DK_CPU_NC, k0, ip, jp;
    int64_t ncp = (nc + DK_CPU_NR - 1) / DK_CPU_NR * DK_CPU_NR;
    memset(cacc, 0, (size_t)(mpad * DK_CPU_NC) * 4);
    for (k0 = 0; k0 < g->K; k0 += DK_CPU_KC) {
      int64_t kc = g->K - k0 < DK_CPU_KC ? g->K - k0 : DK_CPU_KC;
      if (g->b_is_w) dk__cpu_pack_w(g, k0, kc, n0, nc, bp, tmp);
      else dk__cpu_pack_b(g, k0, kc, n0, nc, bp, tmp);
      for (ip = 0; ip < g->mpanels; ip++)
        for (jp = 0; jp < ncp; jp += DK_CPU_NR)
          dk__cpu_k->micro((int)kc, g->apack + ip * g->K * DK_CPU_MR + k0 * DK_CPU_MR, bp + jp * kc,
                        cacc + ip * DK_CPU_MR * DK_CPU_NC + jp, DK_CPU_NC);
    }
    dk__cpu_store_cols(cacc, g->M, g->N, n0, nc, g->bias, g->bias_dt, bias, g->cdt, g->c);
  }
}

static dk_status dk__cpu_gemm_run(dk__cpu_gemm *g) {
  int64_t ntasks;
  void *p = NULL;
  size_t asz;
  if (g->M == 0 || g->N == 0) return DK_OK;
  dk__cpu_pick_kernels();
  g->mpanels = (g->M + DK_CPU_MR - 1) / DK_CPU_MR;
  asz = (size_t)(g->mpanels * DK_CPU_MR) * (size_t)(g->K ? g->K : 1) * sizeof(float);
  if (posix_memalign(&p, 64, asz) != 0)
    return dk__error(DK_ERR_OUT_OF_MEMORY, "matmul on cpu: no memory to pack a %lldx%lld operand",
                     (long long)g->M, (long long)g->K);
  g->apack = (float *)p;
  ntasks = (g->N + DK_CPU_NC - 1) / DK_CPU_NC;
  if (g->threaded) {
    dk__cpu_parallel(g->mpanels, 1 + 65536 / (g->K + 1), dk__cpu_pack_a_task, g);
    dk__cpu_parallel(ntasks, (g->M * g->K * DK_CPU_NC > (1 << 18)) ? 1 : ntasks, dk__cpu_gemm_task, g);
  } else {
    dk__cpu_pack_a_task(g, 0, g->mpanels);
    dk__cpu_gemm_task(g, 0, ntasks);
  }
  free(g->apack);
  g->apack = NULL;
  return DK_OK;
}

/* ==== GEMV: decode-sized linear, weights streamed once ==================== */

#define DK_CPU_GEMV_MAXM 4

/* How far ahead of its loads a decode loop prefetches its weight stream,
 * in bytes (one stream a thread: rows are consecutive, so past a row's end
 * is the next row's start). Decode reads every weight once from memory; on
 * the 2-core Intel VM a thread's sequential read of DRAM gets 14-16 GB/s
 * with the hardware prefetcher alone in a plain loop, but a dot-product
 * loop over the same stream got 10.6 without a software prefetch, 12.5 at
 * 1 KB ahead and 14.2 at 2 KB (latency x bandwidth: about 3 KB in flight).
 * Both threads, the 100M model's 64 products a token from memory
 * (/tmp bench, GB/s): f16 none 20.2, 1 KB 24.2, 2 KB 26.7, 3-4 KB 26.7;
 * q8_0 1 KB (the distance before, chosen on AMD Zen 3 against none)
 * 21.2, 2 KB 24.2, 3 KB 25.6, 4 KB 25.5. */
#define DK__PF_AHEAD 3072
/* every line of the n bytes DK__PF_AHEAD past p: a loop a super-block of
 * n bytes wider than a line must fetch each of the lines it moves past (one
 * prefetch a 136-byte iq4_xs super-block left every other line to the
 * hardware: a 100M IQ4_XS model decoded at 5.5 GB/s a thread, q4_K's loop,
 * four lines a super-block, at 10.5) */
#define DK__PF_SPAN(p, n)                                                      \
  {                                                                            \
    size_t pf_o;                                                               \
    for (pf_o = 0; pf_o < (size_t)(n); pf_o += 64) _mm_prefetch((const char *)((uintptr_t)(p) + DK__PF_AHEAD + pf_o), _MM_HINT_T0); \
  }

typedef struct {
  const float *x;        /* M rows of K, f32 */
  int64_t M, N, K;
  dk_dtype wdt;
  const char *w;
  size_t wrow;
  float *y;              /* M rows of N, f32 */
  const dk__cpu_q8x *xq; /* x quantized (M rows of K/32 blocks), or NULL */
  const dk__cpu_q8k *xk; /* or in super-blocks (M rows of K/256), K-quant weights */
  const dk__cpu_q8v *xv; /* or so, for the class's rowdot_q8v */
} dk__cpu_gemv;

static float dk__cpu_dot_generic(dk_dtype wdt, const char *w, const float *x, int64_t K) {
  float buf[32], acc = 0.0f;
  int64_t k, j;
  for (k = 0; k < K; k += 32) {
    int64_t n = K - k < 32 ? K - k : 32;
    float s = 0.0f;
    dk__cpu_dequant_row(wdt, w, k, n, buf);
    for (j = 0; j < n; j++) s += buf[j] * x[k + j];
    acc += s;
  }
  return acc;
}

/* 32 activations to int8 codes with one scale, returned: d = max|v| / 127.
 * res, unless NULL, gets what the rounding lost (v - d*q): a precise
 * weight's second level. The class's round32 where it has one. */
static float dk__cpu_round32(const float *v, int8_t *q, float *res) {
  float amax = 0.0f, id, d;
  int j;
  if (dk__cpu_k->round32) return dk__cpu_k->round32(v, q, res);
  for (j = 0; j < 32; j++) amax = fabsf(v[j]) > amax ? fabsf(v[j]) : amax;
  d = amax / 127.0f;
  id = amax > 0.0f ? 127.0f / amax : 0.0f;
  for (j = 0; j < 32; j++) q[j] = (int8_t)lrintf(v[j] * id);
  if (res)
    for (j = 0; j < 32; j++) res[j] = v[j] - d * (float)q[j];
  return d;
}

/* x rows (M x K, K a multiple of 32) to q8 blocks */
static void dk__cpu_quantize_x(const float *x, int64_t M, int64_t K, dk__cpu_q8x *xq, float *res) {
  int64_t b;
  int j, sum;
  for (b = 0; b < M * (K / 32); b++) {
    xq[b].d = dk__cpu_round32(x + b * 32, xq[b].qs, res ? res + b * 32 : NULL);
    for (sum = 0, j = 0; j < 32; j++) sum += xq[b].qs[j];
    xq[b].s = xq[b].d * (float)sum;
  }
}

/* x rows (M x K, K a multiple of 32) to q8h blocks: q8 blocks with their halves' sums */
static void dk__cpu_quantize_xh(const float *x, int64_t M, int64_t K, dk__cpu_q8h *xh) {
  int64_t b;
  int h, j, sum;
  for (b = 0; b < M * (K / 32); b++) {
    xh[b].d = dk__cpu_round32(x + b * 32, xh[b].qs, NULL);
    for (h = 0; h < 2; h++) {
      for (sum = 0, j = 16 * h; j < 16 * h + 16; j++) sum += xh[b].qs[j];
      xh[b].s[h] = xh[b].d * (float)sum;
    }
  }
}

/* x rows (M x K, K a multiple of 256) to q8v super-blocks: the q8k rounding, laid out for the VNNI dot */
static void dk__cpu_quantize_xv(const float *x, int64_t M, int64_t K, dk__cpu_q8v *xv, float *res) {
  int64_t b;
  int g, p, j, sum;
  int8_t q[256];
  for (b = 0; b < M * (K / 256); b++) {
    for (g = 0; g < 8; g++)
      xv[b].d[2 * g] = xv[b].d[2 * g + 1] = dk__cpu_round32(x + b * 256 + 32 * g, q + 32 * g, res ? res + b * 256 + 32 * g : NULL);
    for (g = 0; g < 16; g++) {
      for (sum = 0, j = 0; j < 16; j++) sum += q[16 * g + j];
      xv[b].s[g] = xv[b].d[g] * (float)sum;
      for (p = 0; p < 4; p++) memcpy(xv[b].qs + 64 * p + 4 * g, q + 16 * g + 4 * p, 4);
    }
  }
}

/* x rows (M x K, K a multiple of 256) to q8k super-blocks: each lane's
 * 32 values gathered, rounded and put back, then the 16-value sums */
static void dk__cpu_quantize_xk(const float *x, int64_t M, int64_t K, dk__cpu_q8k *xk, float *res) {
  int64_t b;
  int g, j, i;
  float v[32], e[32];
  int8_t q[32];
  for (b = 0; b < M * (K / 256); b++) {
    const float *xb = x + b * 256;
    for (j = 0; j < 8; j++) {   /* four values of each run: whole 16- and 4-byte moves */
      for (i = 0; i < 8; i++) memcpy(v + 4 * i, xb + 32 * i + 4 * j, 16);
      xk[b].d[j] = dk__cpu_round32(v, q, res ? e : NULL);
      for (i = 0; i < 8; i++) {
        memcpy(xk[b].qs + 32 * i + 4 * j, q + 4 * i, 4);
        if (res) memcpy(res + b * 256 + 32 * i + 4 * j, e + 4 * i, 16);
      }
    }
    for (g = 0; g < 16; g++) {   /* group g: lanes 4(g%2).. of run g/2, four values each */
      float sum = 0.0f;
      for (j = 0; j < 4; j++) {
        const int8_t *c = xk[b].qs + 16 * g + 4 * j;
        sum += xk[b].d[4 * (g & 1) + j] * (float)(c[0] + c[1] + c[2] + c[3]);
      }
      xk[b].s[g] = sum;
    }
  }
}

/* x rows to the decode dot's activations: form 0 q8x, 1 q8k, 2 q8v */
static void dk__cpu_quantize_acts(int form, const float *x, int64_t M, int64_t K, void *dst, float *res) {
  if (form == 2) dk__cpu_quantize_xv(x, M, K, (dk__cpu_q8v *)dst, res);
  else if (form == 1) dk__cpu_quantize_xk(x, M, K, (dk__cpu_q8k *)dst, res);
  else dk__cpu_quantize_x(x, M, K, (dk__cpu_q8x *)dst, res);
}

/* the 8 six-bit scales and the 8 mins of a q4_K/q5_K super-block, one byte
 * each (group g in byte g), from the 12 packed bytes: groups 0-3 are the low
 * 6 bits of bytes 0-3 (scales) and 4-7 (mins); groups 4-7 take bytes 8-11's
 * nibbles and the top two bits of bytes 0-3 (scales) or 4-7 (mins). Always
 * inlined: the AVX kernels call it, and a kernel class never calls out of its
 * own code (tools/check_cpu_isa.sh) */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))
#endif
static inline void dk__cpu_k45_scales(const uint8_t *s12, uint64_t *sc, uint64_t *mn) {
  uint32_t a0, a1, a2;
  memcpy(&a0, s12, 4); memcpy(&a1, s12 + 4, 4); memcpy(&a2, s12 + 8, 4);
  *sc = (a0 & 0x3f3f3f3fu) | (uint64_t)((a2 & 0x0f0f0f0fu) | ((a0 >> 2) & 0x30303030u)) << 32;
  *mn = (a1 & 0x3f3f3f3fu) | (uint64_t)(((a2 >> 4) & 0x0f0f0f0fu) | ((a1 >> 2) & 0x30303030u)) << 32;
}

/* a 32-value weight block of a format the q8 dot takes, as int8 codes q with
 * w = d*q + mn: q8_0, q4_0 (q - 8), q5_0 (q - 16), q4_1 and q5_1 (+ m),
 * iq4_nl and iq4_xs's group b % 8 (the levels themselves), iq3's (the
 * signed codebook values) */
static void dk__cpu_wblock_codes(dk_dtype wdt, const char *w, int64_t b, int8_t *q, float *d, float *mn) {
  const uint8_t *qs = NULL;
  uint32_t qh = 0;
  int j, off = 0;
  *mn = 0.0f;
  if (wdt == DK_IQ4_NL || wdt == DK_IQ4_XS) {
    uint16_t d16;
    int sc;
    qs = dk__quant_iq4_group(wdt, w, b, &d16, &sc);
    *d = dk_f16_to_f32(d16) * (float)sc;
    for (j = 0; j < 16; j++) { q[j] = dk_iq4_levels[qs[j] & 15]; q[j + 16] = dk_iq4_levels[qs[j] >> 4]; }
    return;
  }
  if (wdt == DK_IQ3_XXS || wdt == DK_IQ3_S) {
    const char *blk = w + (size_t)(b / 8) * dk_dtype_block_bytes(wdt);
    *d = dk__quant_iq3_group(wdt, blk, dk_f16_to_f32(*(const uint16_t *)blk), (int)(b & 7), q);
    return;
  }
  if (DK__HALVES(wdt)) {
    const char *blk = w + (size_t)(b / 8) * dk_dtype_block_bytes(wdt);
    float db[2];
    dk__quant_iq2_group(wdt, blk, dk_f16_to_f32(*(const uint16_t *)blk), (int)(b & 7), q, db);
    *d = db[0];
    *mn = db[1];
    return;
  }
  switch (wdt) {
  case DK_Q8_0: {
    const dk_block_q8_0 *p = (const dk_block_q8_0 *)w + b;
    for (j = 0; j < 32; j++) q[j] = p->qs[j];
    *d = dk_f16_to_f32(p->d);
    return;
  }
  case DK_Q4_0: { const dk_block_q4_0 *p = (const dk_block_q4_0 *)w + b; qs = p->qs; *d = dk_f16_to_f32(p->d); off = 8; break; }
  case DK_Q4_1: {
    const dk_block_q4_1 *p = (const dk_block_q4_1 *)w + b;
    qs = p->qs; *d = dk_f16_to_f32(p->d); *mn = dk_f16_to_f32(p->m);
    break;
  }
  case DK_Q5_0: {
    const dk_block_q5_0 *p = (const dk_block_q5_0 *)w + b;
    qs = p->qs; memcpy(&qh, p->qh, 4); *d = dk_f16_to_f32(p->d); off = 16;
    break;
  }
  default: {
    const dk_block_q5_1 *p = (const dk_block_q5_1 *)w + b;
    qs = p->qs; memcpy(&qh, p->qh, 4); *d = dk_f16_to_f32(p->d); *mn = dk_f16_to_f32(p->m);
    break;
  }
  }
  for (j = 0; j < 16; j++) {
    q[j] = (int8_t)((qs[j] & 15) + (((qh >> j) & 1) << 4) - off);
    q[j + 16] = (int8_t)((qs[j] >> 4) + (((qh >> (j + 16)) & 1) << 4) - off);
  }
}

/* the integer sums are exact, so every class gives the portable result up
 * to the order of the f32 scale-weighted additions */
static void dk__cpu_rows_q8_generic(dk_dtype wdt, const char *w, size_t wrow, int64_t rows, const dk__cpu_q8x *xq,
                                    int64_t nb, int M, float *y, int64_t ldy) {
  int64_t r, b;
  int m, j;
  for (r = 0; r < rows; r++) {
    const char *wr = w + (size_t)r * wrow;
    for (m = 0; m < M; m++) {
      float acc = 0.0f;
      for (b = 0; b < nb; b++) {
        const dk__cpu_q8x *xb = &xq[m * nb + b];
        int8_t q[32];
        int32_t s = 0, s1 = 0;
        float dw, mn;
        dk__cpu_wblock_codes(wdt, wr, b, q, &dw, &mn);
        if (DK__HALVES(wdt)) {
          for (j = 0; j < 16; j++) { s += q[j] * xb->qs[j]; s1 += q[j + 16] * xb->qs[j + 16]; }
          acc += dw * xb->d * (float)s + mn * xb->d * (float)s1;
          continue;
        }
        for (j = 0; j < 32; j++) s += q[j] * xb->qs[j];
        acc += dw * xb->d * (float)s + mn * xb->s;
      }
      y[m * ldy + r] = acc;
    }
  }
}

/* short loops unrolled. The integer kernels' (cpu_kdot.h, cpu_igemm.h):
 * GCC -O2 kept the prompt product's chunk loops rolled, with register
 * copies between iterations: 64x4096x4096 w=q5_0 117-141 -> 162-193
 * GFLOP/s; q4_0/q4_K (one int16 widening per block) within noise. The
 * decode loops over a super-block's group pairs (below): the scale words'
 * shuffle control then is a constant, not built each step */
#if defined(__GNUC__) && !defined(__clang__)
#define DK__UNROLL8 _Pragma("GCC unroll 8")
#define DK__UNROLL4 _Pragma("GCC unroll 4")
#elif defined(__clang__)
#define DK__UNROLL8 _Pragma("unroll 8")
#define DK__UNROLL4 _Pragma("unroll 4")
#else
#define DK__UNROLL8
#define DK__UNROLL4
#endif
#ifdef DK_CPU_X86
/* dk__cpu_round32's scalar loop in vectors, the same codes bit for bit: the same
 * max, the same single product v * (127 / max), rounded to nearest even by
 * the conversion as lrintf does. Scalar, it was 2.4-2.8 % of a 100M decode. */
DK_CPU_AVX2 static float dk__cpu_round32_avx2(const float *v, int8_t *q, float *res) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 x[4], m = _mm256_setzero_ps();
  __m256i c[4], p;
  float amax, id, d;
  int i;
  for (i = 0; i < 4; i++) {
    x[i] = _mm256_loadu_ps(v + 8 * i);
    m = _mm256_max_ps(_mm256_andnot_ps(sign, x[i]), m);   /* a NaN value is skipped, as the scalar compare skips it */
  }
  amax = dk__cpu_hmax(m);
  d = amax / 127.0f;
  id = amax > 0.0f ? 127.0f / amax : 0.0f;
  for (i = 0; i < 4; i++) c[i] = _mm256_cvtps_epi32(_mm256_mul_ps(x[i], _mm256_set1_ps(id)));
  /* the packs work within 128-bit lanes: dwords 0,4,1,5,... put the bytes back in order */
  p = _mm256_packs_epi16(_mm256_packs_epi32(c[0], c[1]), _mm256_packs_epi32(c[2], c[3]));
  _mm256_storeu_si256((__m256i *)q, _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  if (res)
    for (i = 0; i < 4; i++)
      _mm256_storeu_ps(res + 8 * i, _mm256_sub_ps(x[i], _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(c[i]))));
  return d;
}

/* 8 weights at w[k..k+8) of a float dtype, as f32 */
DK_CPU_AVX2_INLINE __m256 dk__cpu_load8(dk_dtype wdt, const char *w, int64_t k) {
  if (wdt == DK_F32) return _mm256_loadu_ps((const float *)w + k);
  if (wdt == DK_F16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)w + k)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)w + k))), 16));
}

/* one weight of a float dtype, for the tails: F16C and a shift, never the
 * core's scalar converters */
DK_CPU_AVX2_INLINE float dk__cpu_load1(dk_dtype wdt, const char *w, int64_t k) {
  uint32_t u;
  float f;
  if (wdt == DK_F32) return ((const float *)w)[k];
  if (wdt == DK_F16) return _cvtsh_ss(((const uint16_t *)w)[k]);
  u = (uint32_t)((const uint16_t *)w)[k] << 16;
  memcpy(&f, &u, 4);
  return f;
}

/* the 32 values of a q8_0/q4_0 block as 4 vectors of 8 integers-as-floats;
 * the block scale is applied once, to the block's partial sum, converted
 * with F16C in line (this was a call to SSE code per block) */
DK_CPU_AVX2_INLINE float dk__cpu_block(dk_dtype wdt, const char *w, int64_t b, __m256 q[4]) {
  int j;
  if (wdt == DK_Q8_0) {
    const dk_block_q8_0 *p = (const dk_block_q8_0 *)w + b;
    for (j = 0; j < 4; j++) q[j] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p->qs + 8 * j))));
    return _cvtsh_ss(p->d);
  } else {
    const dk_block_q4_0 *p = (const dk_block_q4_0 *)w + b;
    const __m128i lo4 = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
    __m128i raw = _mm_loadu_si128((const __m128i *)p->qs);
    __m128i lo = _mm_sub_epi8(_mm_and_si128(raw, lo4), eight);
    __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(raw, 4), lo4), eight);
    q[0] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo));
    q[1] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)));
    q[2] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi));
    q[3] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)));
    return _cvtsh_ss(p->d);
  }
}

/* Dot of one weight row with M (<= 4) activation rows. Independent
 * accumulator chains hide the FMA latency: four for one row, since decode is
 * M = 1 and a single chain would run at a quarter of the FMA rate. The body
 * is compiled once per x86 class; its helpers above are inlined into each. */
#define DK__ROWDOT_BODY                                                        \
  __m256 acc[DK_CPU_GEMV_MAXM][4];                                             \
  int64_t k = 0, b;                                                            \
  int m, j;                                                                    \
  for (m = 0; m < DK_CPU_GEMV_MAXM; m++) /* all: clang makes M a memset call */ \
    for (j = 0; j < 4; j++) acc[m][j] = _mm256_setzero_ps();                   \
  if (wdt == DK_F32 || wdt == DK_F16 || wdt == DK_BF16) {                      \
    if (M == 1) {                                                              \
      for (; k + 32 <= K; k += 32)                                             \
        for (j = 0; j < 4; j++)                                                \
          acc[0][j] = _mm256_fmadd_ps(dk__cpu_load8(wdt, w, k + 8 * j), _mm256_loadu_ps(x + k + 8 * j), acc[0][j]); \
    }                                                                          \
    for (; k + 8 <= K; k += 8) {                                               \
      __m256 wv = dk__cpu_load8(wdt, w, k);                                    \
      for (m = 0; m < M; m++) acc[m][0] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + m * K + k), acc[m][0]); \
    }                                                                          \
  } else if (M == 1) { /* two chains in registers, not acc[][b & 3] */        \
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();                \
    for (b = 0; b < K / 32; b++, k += 32) {                                    \
      __m256 q[4], s, t;                                                       \
      __m256 d = _mm256_set1_ps(dk__cpu_block(wdt, w, b, q));                  \
      s = _mm256_mul_ps(q[0], _mm256_loadu_ps(x + k));                         \
      t = _mm256_mul_ps(q[1], _mm256_loadu_ps(x + k + 8));                     \
      s = _mm256_fmadd_ps(q[2], _mm256_loadu_ps(x + k + 16), s);               \
      t = _mm256_fmadd_ps(q[3], _mm256_loadu_ps(x + k + 24), t);               \
      if (b & 1) a1 = _mm256_fmadd_ps(d, _mm256_add_ps(s, t), a1);             \
      else a0 = _mm256_fmadd_ps(d, _mm256_add_ps(s, t), a0);                   \
    }                                                                          \
    acc[0][0] = _mm256_add_ps(a0, a1);                                         \
  } else {                                                                     \
    for (b = 0; b < K / 32; b++, k += 32) {                                    \
      __m256 q[4];                                                             \
      __m256 d = _mm256_set1_ps(dk__cpu_block(wdt, w, b, q));                  \
      for (m = 0; m < M; m++) {                                                \
        const float *xm = x + m * K + k;                                       \
        __m256 s = _mm256_mul_ps(q[0], _mm256_loadu_ps(xm));                   \
        __m256 t = _mm256_mul_ps(q[1], _mm256_loadu_ps(xm + 8));               \
        s = _mm256_fmadd_ps(q[2], _mm256_loadu_ps(xm + 16), s);                \
        t = _mm256_fmadd_ps(q[3], _mm256_loadu_ps(xm + 24), t);                \
        acc[m][b & 3] = _mm256_fmadd_ps(d, _mm256_add_ps(s, t), acc[m][b & 3]); \
      }                                                                        \
    }                                                                          \
  }                                                                            \
  for (m = 0; m < M; m++) {                                                    \
    float s = dk__cpu_hsum(_mm256_add_ps(_mm256_add_ps(acc[m][0], acc[m][1]), _mm256_add_ps(acc[m][2], acc[m][3]))); \
    int64_t kk;                                                                \
    for (kk = k; kk < K; kk++) s += dk__cpu_load1(wdt, w, kk) * x[m * K + kk]; /* float tails */ \
    out[m] = s;                                                                \
  }

DK_CPU_AVX2 static void dk__cpu_rowdot_avx2(dk_dtype wdt, const char *w, const float *x, int64_t K, int M, float *out) {
  DK__ROWDOT_BODY
}
DK_CPU_AVX512 static void dk__cpu_rowdot_avx512(dk_dtype wdt, const char *w, const float *x, int64_t K, int M, float *out) {
  DK__ROWDOT_BODY
}

/* Decode (one activation row) against f32/f16/bf16 weights, a range of rows
 * in one call, the dtype a constant in each copy of the loop (a call per
 * row, with the dtype tested at every load, held f16 at 10 GB/s where f32
 * reached 19). One row at a time, four chains: a thread reads one
 * sequential stream. Four rows in lockstep, sharing each load of x, were a
 * little faster from L3 but slower from memory, where decode reads its
 * weights: a 100M f16 model 72.6-80.8 -> 85.7-91.0 tok/s (alternating, with
 * llama.cpp's CPU build at 89.0-91.7 beside them). The prefetch
 * (DK__PF_AHEAD) took it from 91-96 to 118-131 tok/s (Intel VM). Short
 * rows (K <= DK__GEMV1_SHORT, stories260K's 64 and 172) go eight at a time:
 * eight adjacent rows are one stream still, one reduction serves eight
 * where a row's own horizontal sum cost as much as its two steps, and
 * eight chains hide the FMA latency (stories260K's 512x64 classifier: 2.14
 * us a call, 1.48-1.56 now; 64x172 0.80 -> 0.64; from L2, at its rate). */
#define DK__GEMV1_SHORT 256
#define DK__GEMV1_BODY(T)                                                      \
  /* the short rows' prefetch: only where the range is past L2 (1 MB) */    \
  pf8 = (size_t)rows * wrow > ((size_t)1 << 20);                               \
  if (K <= DK__GEMV1_SHORT)                                                     \
    for (; r + 8 <= rows; r += 8) {                                            \
      const char *w0 = w + (size_t)r * wrow;                                   \
      __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, h0, h1; \
      size_t o;                                                                \
      int i;                                                                   \
      /* the eight rows DK__PF_AHEAD on, as in the long rows below: a       \
         1048576x256 f16 product from memory 20.3 -> 24.3 GB/s; in L2        \
         (stories260K's) it cost 10 % */                                       \
      if (pf8)                                                                 \
        for (o = 0; o < 8 * wrow; o += 64) _mm_prefetch((const char *)((uintptr_t)w0 + o + DK__PF_AHEAD), _MM_HINT_T0); \
      for (k = 0; k + 8 <= K; k += 8) {   /* written out: a loop over an array spilled it */ \
        const __m256 xv = _mm256_loadu_ps(x + k);                              \
        a0 = _mm256_fmadd_ps(dk__cpu_load8(T, w0, k), xv, a0);                 \
        a1 = _mm256_fmadd_ps(dk__cpu_load8(T, w0 + wrow, k), xv, a1);          \
        a2 = _mm256_fmadd_ps(dk__cpu_load8(T, w0 + 2 * wrow, k), xv, a2);      \
        a3 = _mm256_fmadd_ps(dk__cpu_load8(T, w0 + 3 * wrow, k), xv, a3);      \
        a4 = _mm256_fmadd_ps(dk__cpu_load8(T, w0 + 4 * wrow, k), xv, a4);      \
        a5 = _mm256_fmadd_ps(dk__cpu_load8(T, w0 + 5 * wrow, k), xv, a5);      \
        a6 = _mm256_fmadd_ps(dk__cpu_load8(T, w0 + 6 * wrow, k), xv, a6);      \
        a7 = _mm256_fmadd_ps(dk__cpu_load8(T, w0 + 7 * wrow, k), xv, a7);      \
      }                                                                        \
      /* h0: lanes [r0 r1 r2 r3 | r0 r1 r2 r3], h1 rows 4-7, each half a    \
         partial sum; then the halves added, rows 0-7 in order */             \
      h0 = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));     \
      h1 = _mm256_hadd_ps(_mm256_hadd_ps(a4, a5), _mm256_hadd_ps(a6, a7));     \
      _mm256_storeu_ps(y + r, _mm256_add_ps(_mm256_permute2f128_ps(h0, h1, 0x20), _mm256_permute2f128_ps(h0, h1, 0x31))); \
      if (k < K)                                                               \
        for (i = 0; i < 8; i++) {                                              \
          int64_t kk;                                                          \
          for (kk = k; kk < K; kk++) y[r + i] += dk__cpu_load1(T, w0 + i * wrow, kk) * x[kk]; \
        }                                                                      \
    }                                                                          \
  for (; r < rows; r++) {                                                      \
    const char *w0 = w + (size_t)r * wrow;                                     \
    __m256 a0 = _mm256_setzero_ps(), b0 = a0, c0 = a0, d0 = a0;                \
    for (k = 0; k + 32 <= K; k += 32) {                                        \
      /* the line(s) DK__PF_AHEAD on (64 bytes a step, 128 for f32): an     \
         address, it may lie past the end */                                   \
      const char *pf = (const char *)((uintptr_t)w0 + (size_t)k * ((T) == DK_F32 ? 4 : 2) + DK__PF_AHEAD); \
      _mm_prefetch(pf, _MM_HINT_T0);                                           \
      if ((T) == DK_F32) _mm_prefetch(pf + 64, _MM_HINT_T0);                   \
      a0 = _mm256_fmadd_ps(dk__cpu_load8(T, w0, k), _mm256_loadu_ps(x + k), a0); \
      b0 = _mm256_fmadd_ps(dk__cpu_load8(T, w0, k + 8), _mm256_loadu_ps(x + k + 8), b0); \
      c0 = _mm256_fmadd_ps(dk__cpu_load8(T, w0, k + 16), _mm256_loadu_ps(x + k + 16), c0); \
      d0 = _mm256_fmadd_ps(dk__cpu_load8(T, w0, k + 24), _mm256_loadu_ps(x + k + 24), d0); \
    }                                                                          \
    for (; k + 8 <= K; k += 8) a0 = _mm256_fmadd_ps(dk__cpu_load8(T, w0, k), _mm256_loadu_ps(x + k), a0); \
    {                                                                          \
      float s = dk__cpu_hsum(_mm256_add_ps(_mm256_add_ps(a0, c0), _mm256_add_ps(b0, d0))); \
      int64_t kk;                                                              \
      for (kk = k; kk < K; kk++) s += dk__cpu_load1(T, w0, kk) * x[kk];        \
      y[r] = s;                                                                \
    }                                                                          \
  }
#define DK__GEMV1_ARGS dk_dtype dt, const char *w, size_t wrow, int64_t rows, const float *x, int64_t K, float *y
#define DK__GEMV1_FN                                                           \
  int64_t r = 0, k;                                                            \
  int pf8;                                                                     \
  if (dt == DK_F32) { DK__GEMV1_BODY(DK_F32) }                                 \
  else if (dt == DK_F16) { DK__GEMV1_BODY(DK_F16) }                            \
  else { DK__GEMV1_BODY(DK_BF16) }
DK_CPU_AVX2 static void dk__cpu_gemv1_avx2(DK__GEMV1_ARGS) { DK__GEMV1_FN }
DK_CPU_AVX512 static void dk__cpu_gemv1_avx512(DK__GEMV1_ARGS) { DK__GEMV1_FN }

/* q4_K/q5_K: the codes of 32-value group g (0-7) of super-block sb, 0-31 */
DK_CPU_AVX2_INLINE __m256i dk__cpu_k45_codes(dk_dtype wdt, const char *w, int64_t sb, int g) {
  const __m256i lo = _mm256_set1_epi8(15);
  const uint8_t *qs = wdt == DK_Q4_K ? ((const dk_block_q4_K *)w + sb)->qs : ((const dk_block_q5_K *)w + sb)->qs;
  __m256i v = _mm256_and_si256(_mm256_srli_epi16(_mm256_loadu_si256((const __m256i *)(qs + 32 * (g >> 1))), 4 * (g & 1)), lo);
  if (wdt == DK_Q5_K) {
    const __m256i hb = _mm256_loadu_si256((const __m256i *)((const dk_block_q5_K *)w + sb)->qh);
    v = _mm256_or_si256(v, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, g), _mm256_set1_epi8(1)), 4));
  }
  return v;
}

/* q4_K/q5_K: the 8 groups' d (scale x d) and mn (-min x dmin) of super-block
 * sb, as dk__cpu_wblock_i8 gives them one group at a time */
DK_CPU_AVX2_INLINE void dk__cpu_k45_dm(dk_dtype wdt, const char *w, int64_t sb, float *d, float *mn) {
  const dk_block_q4_K *p4 = (const dk_block_q4_K *)w + sb;
  const dk_block_q5_K *p5 = (const dk_block_q5_K *)w + sb;
  uint64_t sc, mi;
  dk__cpu_k45_scales(wdt == DK_Q4_K ? p4->scales : p5->scales, &sc, &mi);
  _mm256_storeu_ps(d, _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(wdt == DK_Q4_K ? p4->d : p5->d)),
                                    _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)sc)))));
  _mm256_storeu_ps(mn, _mm256_mul_ps(_mm256_set1_ps(-_cvtsh_ss(wdt == DK_Q4_K ? p4->dmin : p5->dmin)),
                                     _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)mi)))));
}

/* A 32-value weight block in a register as w = d*q + mn*(1 per value): q8_0
 * and the iq4 levels signed bytes (mn 0); every other format unsigned codes 0-31 with its offset
 * in the min (q4_0: -8d, q5_0: -16d), since maddubs takes unsigned codes
 * as they are and a signed operand needs two sign fixes per block. The min
 * term is mn times the activation block's sum (dk__cpu_q8x.s). */
DK_CPU_AVX2_INLINE __m256i dk__cpu_wblock_i8(dk_dtype wdt, const char *w, int64_t b, float *d, float *mn) {
  const __m128i lo4 = _mm_set1_epi8(15);
  const uint8_t *qs;
  __m128i raw;
  __m256i v;
  uint32_t h;
  *mn = 0.0f;
  if (wdt == DK_Q4_K || wdt == DK_Q5_K) {
    /* group g's scale and min alone (the packs take a super-block's eight
     * at once, dk__cpu_k45_dm) */
    const int g = (int)(b & 7);
    const dk_block_q4_K *p4 = (const dk_block_q4_K *)w + b / 8;
    const dk_block_q5_K *p5 = (const dk_block_q5_K *)w + b / 8;
    uint64_t sc, mi;
    dk__cpu_k45_scales(wdt == DK_Q4_K ? p4->scales : p5->scales, &sc, &mi);
    *d = _cvtsh_ss(wdt == DK_Q4_K ? p4->d : p5->d) * (float)((sc >> (8 * g)) & 255);
    *mn = -_cvtsh_ss(wdt == DK_Q4_K ? p4->dmin : p5->dmin) * (float)((mi >> (8 * g)) & 255);
    return dk__cpu_k45_codes(wdt, w, b / 8, g);
  }
  if (wdt == DK_IQ4_NL || wdt == DK_IQ4_XS) {
    const __m128i tab = _mm_loadu_si128((const __m128i *)dk_iq4_levels);
    uint16_t d16;
    int sc;
    qs = dk__quant_iq4_group(wdt, w, b, &d16, &sc);
    *d = _cvtsh_ss(d16) * (float)sc;
    raw = _mm_loadu_si128((const __m128i *)qs);
    return _mm256_set_m128i(_mm_shuffle_epi8(tab, _mm_and_si128(_mm_srli_epi16(raw, 4), lo4)),
                            _mm_shuffle_epi8(tab, _mm_and_si128(raw, lo4)));
  }
  if (wdt == DK_IQ3_XXS || wdt == DK_IQ3_S)
    return dk__cpu_q_iq3(wdt, w + (size_t)(b / 8) * (wdt == DK_IQ3_XXS ? sizeof(dk_block_iq3_xxs) : sizeof(dk_block_iq3_s)),
                         (int)(b & 7), d);
  if (DK__HALVES(wdt)) {
    float dh[2];
    __m256i v = dk__cpu_q_iq2(wdt, w + (size_t)(b / 8) * (wdt == DK_IQ2_XXS ? sizeof(dk_block_iq2_xxs) : wdt == DK_IQ2_XS ? sizeof(dk_block_iq2_xs) : sizeof(dk_block_iq2_s)),
                              (int)(b & 7), dh);
    *d = dh[0];
    *mn = dh[1];
    return v;
  }
  switch (wdt) {
  case DK_Q8_0: {
    const dk_block_q8_0 *p = (const dk_block_q8_0 *)w + b;
    *d = _cvtsh_ss(p->d);
    return _mm256_loadu_si256((const __m256i *)p->qs);
  }
  case DK_Q4_0: { const dk_block_q4_0 *p = (const dk_block_q4_0 *)w + b; qs = p->qs; *d = _cvtsh_ss(p->d); *mn = -8.0f * *d; break; }
  case DK_Q4_1: {
    const dk_block_q4_1 *p = (const dk_block_q4_1 *)w + b;
    qs = p->qs; *d = _cvtsh_ss(p->d); *mn = _cvtsh_ss(p->m);
    break;
  }
  case DK_Q5_0: { const dk_block_q5_0 *p = (const dk_block_q5_0 *)w + b; qs = p->qs; *d = _cvtsh_ss(p->d); *mn = -16.0f * *d; break; }
  default: {
    const dk_block_q5_1 *p = (const dk_block_q5_1 *)w + b;
    qs = p->qs; *d = _cvtsh_ss(p->d); *mn = _cvtsh_ss(p->m);
    break;
  }
  }
  raw = _mm_loadu_si128((const __m128i *)qs);
  v = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), lo4), _mm_and_si128(raw, lo4));
  if (wdt == DK_Q4_0 || wdt == DK_Q4_1) return v;
  /* the fifth bit: value j's is bit j of qh */
  memcpy(&h, wdt == DK_Q5_0 ? ((const dk_block_q5_0 *)w + b)->qh : ((const dk_block_q5_1 *)w + b)->qh, 4);
  return _mm256_or_si256(v, dk__cpu_q_bits32(h));
}

/* int8 . int8 in 8 lanes of 4 products as f32. maddubs takes unsigned codes
 * (0-31: a pair sums to at most 2*31*127, inside int16) against signed
 * activations; q8_0's signed weights go through it as |w| and x carrying w's
 * sign (|w| <= 128, a pair at most 2*128*127) */
DK_CPU_AVX2_INLINE __m256 dk__cpu_idot_avx2(__m256i u, __m256i x) {
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1)));
}
/* AVX-512 VNNI: the four products summed into int32 in one instruction */
__attribute__((target("avx512f,avx512vl,avx512vnni,avx2"), always_inline)) static inline __m256 dk__cpu_idot_vnni(__m256i u, __m256i x) {
  return _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(_mm256_setzero_si256(), u, x));
}
/* the weight dtypes whose codes are signed bytes, in at most +-128 (q8_0),
 * +-127 (the iq4 levels), +-62 (iq3) or +-43 (iq2): maddubs takes them as
 * |w| and x carrying w's sign */
#define DK__SIGNED_W(T) ((T) == DK_Q8_0 || (T) == DK_IQ4_NL || (T) == DK_IQ4_XS || (T) == DK_IQ3_XXS || (T) == DK_IQ3_S || DK__HALVES(T))
/* a weight block's scale (dw, and mn the second half's: DK__HALVES) times
 * an activation block's xd, for its integer dot's eight lanes */
#define DK__WD(T, dw, mn, xd) \
  (DK__HALVES(T) ? _mm256_set_m128(_mm_set1_ps((mn) * (xd)), _mm_set1_ps((dw) * (xd))) : _mm256_set1_ps((dw) * (xd)))
#define DK__IDOT(IDOT, T, v, x) (DK__SIGNED_W(T) ? IDOT(_mm256_sign_epi8(v, v), _mm256_sign_epi8(x, v)) : IDOT(v, x))
#define DK__HAS_MIN(T) (!DK__SIGNED_W(T))

/* Decode's four-rows-per-pass form (below), for the 4/5-bit formats. Two
 * weight rows share a register: the 16 code bytes of row 0 (values 0-15 in
 * the low nibbles) in the low half, of row 1 in the high half (*lo), values
 * 16-31 likewise (*hi); the activation block's halves are broadcast to both
 * lanes to meet them. The fifth bits of q5_0/q5_1 take the same order: bits
 * 0-15 of both rows' qh for *lo. */
DK_CPU_AVX2_INLINE void dk__cpu_wpair_i8(dk_dtype T, const char *w0, const char *w1, int64_t b, __m256i *lo, __m256i *hi) {
  const __m256i lo4 = _mm256_set1_epi8(15);
  const uint8_t *q0, *q1;
  __m256i v;
  uint32_t h0, h1;
  switch (T) {
  case DK_Q4_0: q0 = ((const dk_block_q4_0 *)w0 + b)->qs; q1 = ((const dk_block_q4_0 *)w1 + b)->qs; break;
  case DK_Q4_1: q0 = ((const dk_block_q4_1 *)w0 + b)->qs; q1 = ((const dk_block_q4_1 *)w1 + b)->qs; break;
  case DK_Q5_0: q0 = ((const dk_block_q5_0 *)w0 + b)->qs; q1 = ((const dk_block_q5_0 *)w1 + b)->qs; break;
  case DK_IQ4_NL: q0 = ((const dk_block_iq4_nl *)w0 + b)->qs; q1 = ((const dk_block_iq4_nl *)w1 + b)->qs; break;
  default: q0 = ((const dk_block_q5_1 *)w0 + b)->qs; q1 = ((const dk_block_q5_1 *)w1 + b)->qs; break;
  }
  v = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)q0)), _mm_loadu_si128((const __m128i *)q1), 1);
  *lo = _mm256_and_si256(v, lo4);
  *hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), lo4);
  if (T == DK_IQ4_NL) {   /* the levels + 128 as unsigned bytes (VNNI only: two such maddubs overflow int16) */
    const __m256i tab = _mm256_xor_si256(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)dk_iq4_levels)),
                                         _mm256_set1_epi8((char)0x80));
    *lo = _mm256_shuffle_epi8(tab, *lo);
    *hi = _mm256_shuffle_epi8(tab, *hi);
  }
  if (T == DK_Q5_0 || T == DK_Q5_1) {   /* qh sits right before qs */
    memcpy(&h0, q0 - 4, 4);
    memcpy(&h1, q1 - 4, 4);
    *lo = _mm256_or_si256(*lo, dk__cpu_q_bits32((h0 & 0xffffu) | (h1 << 16)));
    *hi = _mm256_or_si256(*hi, dk__cpu_q_bits32((h0 >> 16) | (h1 & 0xffff0000u)));
  }
}
/* four f16 values at the same offset of four blocks, as f32 in one convert */
DK_CPU_AVX2_INLINE __m128 dk__cpu_h4(const char *p0, const char *p1, const char *p2, const char *p3) {
  uint16_t a, b, c, d;
  memcpy(&a, p0, 2); memcpy(&b, p1, 2); memcpy(&c, p2, 2); memcpy(&d, p3, 2);
  return _mm_cvtph_ps(_mm_cvtsi64_si128((long long)((uint64_t)a | (uint64_t)b << 16 | (uint64_t)c << 32 | (uint64_t)d << 48)));
}
/* the int32 sums of a register pair of codes (below 32) against the
 * activation halves: the two maddubs fit one int16 add */
DK_CPU_AVX2_INLINE __m256i dk__cpu_i2dot_avx2(__m256i u1, __m256i x1, __m256i u2, __m256i x2) {
  return _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(u1, x1), _mm256_maddubs_epi16(u2, x2)), _mm256_set1_epi16(1));
}
__attribute__((target("avx512f,avx512vl,avx512vnni,avx2"), always_inline)) static inline __m256i
dk__cpu_i2dot_vnni(__m256i u1, __m256i x1, __m256i u2, __m256i x2) {
  return _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), u1, x1), u2, x2);
}
/* Decode (M = 1) of q4_0, q4_1, q5_0, q5_1, four weight rows per pass. One
 * hadd folds the two pairs' int32 partial sums into lanes [r0 r0 r2 r2 | r1
 * r1 r3 r3], so one convert and one FMA take four rows, whose four f16
 * scales convert in one instruction and whose min terms are one 4-lane FMA.
 * The two-row form spent a scalar convert, multiply, broadcast and min chain
 * per row and block: q4_0 ran at 12-14 GB/s from L3 where q4_K's loop ran
 * at 16-17 (`build/bench --filter linear`, 4096x4096). The prefetch runs
 * one group ahead: the next four rows' bytes, at four times this group's
 * offset, so it reaches their end as this group ends. Prefetching 1 KB
 * ahead in each of the four rows (short rows: into the rows being read)
 * held a 100M q4_0 model at 146-171 tok/s from memory; a group ahead,
 * 198-251 (alternating; llama.cpp's CPU build 231-261 the same hour).
 * q8_0 does not take it: four rows of it, as 16-byte halves, ran faster from
 * L3 (20 -> 25 GB/s) but slower from memory (98-112 tok/s against 108-150).
 * DK__PF_GROUP bytes further on still: a 100M q4_0 model 296-419 -> 403-450
 * tok/s at 1 KB, 434-452 at 2 KB (three alternating rounds, Intel). */
#define DK__PF_GROUP 2048
/* VN: the class has VNNI, whose dot sums u8 x s8 products in int32, so
 * iq4_nl's levels + 128 (up to 241) go through it too, their min -128 d */
#define DK__Q8_ROWS4_BODY(I2DOT, T, VN)                                        \
  if (M == 1 && (!DK__SIGNED_W(T) || ((T) == DK_IQ4_NL && (VN))))              \
    for (; r + 4 <= rows; r += 4) {                                            \
      const char *w0 = w + (size_t)r * wrow, *w1 = w0 + wrow, *w2 = w1 + wrow, *w3 = w2 + wrow; \
      const size_t bsz = wrow / (size_t)nb;                                    \
      const __m256i perm = _mm256_setr_epi32(0, 0, 2, 2, 1, 1, 3, 3);          \
      __m256 acc = _mm256_setzero_ps();                                        \
      __m128 accm = _mm_setzero_ps(), s4;                                      \
      for (b = 0; b < nb; b++) {                                               \
        const __m256i x = _mm256_loadu_si256((const __m256i *)xq[b].qs);      \
        const __m256i xl = _mm256_permute2x128_si256(x, x, 0x00), xh = _mm256_permute2x128_si256(x, x, 0x11); \
        const size_t o = (size_t)b * bsz;                                      \
        __m256i l01, h01, l23, h23, p;                                         \
        __m128 d4;                                                             \
        /* the next four rows, as one stream at the pace this one is read:  \
           an address, it may lie past the end */                              \
        _mm_prefetch((const char *)((uintptr_t)w0 + 4 * wrow + 4 * o + DK__PF_GROUP), _MM_HINT_T0); \
        dk__cpu_wpair_i8(T, w0, w1, b, &l01, &h01);                            \
        dk__cpu_wpair_i8(T, w2, w3, b, &l23, &h23);                            \
        p = _mm256_hadd_epi32(I2DOT(l01, xl, h01, xh), I2DOT(l23, xl, h23, xh)); \
        d4 = dk__cpu_h4(w0 + o, w1 + o, w2 + o, w3 + o);                       \
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p),                           \
                              _mm256_mul_ps(_mm256_permutevar8x32_ps(_mm256_castps128_ps256(d4), perm), \
                                            _mm256_set1_ps(xq[b].d)), acc);    \
        if ((T) == DK_Q4_1 || (T) == DK_Q5_1)                                  \
          accm = _mm_fmadd_ps(dk__cpu_h4(w0 + o + 2, w1 + o + 2, w2 + o + 2, w3 + o + 2), _mm_set1_ps(xq[b].s), accm); \
        else                                                                   \
          accm = _mm_fmadd_ps(d4, _mm_set1_ps(xq[b].s), accm);                 \
      }                                                                        \
      s4 = _mm_hadd_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1)); /* r0 r2 r1 r3 */ \
      s4 = _mm_permute_ps(s4, _MM_SHUFFLE(3, 1, 2, 0));                        \
      /* the min per unit of d: q4_0 -8, q5_0 -16, iq4_nl -128; q4_1/q5_1 carry m itself */ \
      s4 = _mm_fmadd_ps(accm, _mm_set1_ps((T) == DK_Q4_0 ? -8.0f : (T) == DK_Q5_0 ? -16.0f : (T) == DK_IQ4_NL ? -128.0f : 1.0f), s4); \
      _mm_storeu_ps(y + r, s4);                                                \
    }

/* iq4_xs decode (M = 1), a super-block at a time: its eight groups' scales
 * found once as int16 words (a group at a time, as dk__cpu_wblock_i8 gives
 * them, held the 4096x4096 product at 12 GB/s, half of iq4_nl's), two
 * groups' levels from one 32-byte load and two shuffles. A group's scale
 * multiplies its integer sums in the madd that widens them (as the
 * K-quants', backends/cpu_kdot.h) and d the super-block's sum once: as
 * float scales (d * sc times x's scale, a multiply and a broadcast a
 * group) a 4096x4096 product took 0.98 ms on one AMD Zen 3 core */
DK_CPU_AVX2_INLINE __m256i dk__cpu_iq4xs_sc16(const dk_block_iq4_xs *p) {
  /* group j's 6 bits: nibble j of scales_l (a u32), bits 2j.. of scales_h;
   * minus 32, as int16 words 0-7 of both halves */
  uint32_t lo;
  __m256i sc;
  __m128i w;
  memcpy(&lo, p->scales_l, 4);
  sc = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)lo), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                        _mm256_set1_epi32(15));
  sc = _mm256_or_si256(sc, _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(p->scales_h),
                                                                                 _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                                                                _mm256_set1_epi32(3)), 4));
  sc = _mm256_sub_epi32(sc, _mm256_set1_epi32(32));
  w = _mm_packs_epi32(_mm256_castsi256_si128(sc), _mm256_extracti128_si256(sc, 1));
  return _mm256_broadcastsi128_si256(w);
}
/* int16 word g of each 128-bit half, in all eight words of that half (the
 * scale words' shuffle control, here and in cpu_kdot.h) */
#define DK__KW(g) _mm256_set1_epi16((short)(((2 * (g) + 1) << 8) | (2 * (g))))
/* the two halves' words may differ: lo in the low half, hi in the high */
#define DK__KW2(lo, hi) _mm256_set_m128i(_mm_set1_epi16((short)(((2 * (hi) + 1) << 8) | (2 * (hi)))), \
                                         _mm_set1_epi16((short)(((2 * (lo) + 1) << 8) | (2 * (lo)))))
#define DK__IQ4XS_ROWS1_BODY(T)                                                \
  if ((T) == DK_IQ4_XS && M == 1)                                              \
    for (; r < rows; r++) {                                                    \
      const dk_block_iq4_xs *p = (const dk_block_iq4_xs *)(w + (size_t)r * wrow); \
      const __m256i tab = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)dk_iq4_levels)); \
      const __m256i m4 = _mm256_set1_epi8(15);                                \
      __m256 acc = _mm256_setzero_ps();                                        \
      int64_t sb;                                                              \
      int j;                                                                   \
      for (sb = 0; sb < nb / 8; sb++, p++) {                                   \
        const __m256i sc16 = dk__cpu_iq4xs_sc16(p);                            \
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();            \
        DK__PF_SPAN(p, sizeof *p)                                              \
        DK__UNROLL4                                                            \
        for (j = 0; j < 8; j += 2) {                                           \
          /* groups j, j+1 as [j lo | j+1 lo] (values 0-15 of each) and     \
             [j hi | j+1 hi] (16-31), against x's halves laid out the same  \
             way by the loads: int32 lanes 0-3 are group j's, 4-7 j+1's,    \
             whose scales one shuffle and one madd a register apply */      \
          const __m256i raw = _mm256_loadu_si256((const __m256i *)(p->qs + 16 * j)); \
          const __m256i lo = _mm256_shuffle_epi8(tab, _mm256_and_si256(raw, m4)); \
          const __m256i hi = _mm256_shuffle_epi8(tab, _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4)); \
          const dk__cpu_q8x *x0 = xq + 8 * sb + j;                             \
          const __m256i xl = _mm256_loadu2_m128i((const __m128i *)x0[1].qs, (const __m128i *)x0[0].qs); \
          const __m256i xh = _mm256_loadu2_m128i((const __m128i *)(x0[1].qs + 16), (const __m128i *)(x0[0].qs + 16)); \
          const __m256i scw = _mm256_shuffle_epi8(sc16, DK__KW2(j, j + 1));          \
          const __m256i pl = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(lo, lo), _mm256_sign_epi8(xl, lo)), scw); \
          const __m256i ph = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(hi, hi), _mm256_sign_epi8(xh, hi)), scw); \
          const __m256 xd = _mm256_blend_ps(_mm256_broadcast_ss(&x0[0].d), _mm256_broadcast_ss(&x0[1].d), 0xf0); \
          if (j & 2) a1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(pl, ph)), xd, a1); \
          else a0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(pl, ph)), xd, a0); \
        }                                                                      \
        acc = _mm256_fmadd_ps(_mm256_set1_ps(_cvtsh_ss(p->d)), _mm256_add_ps(a0, a1), acc); \
      }                                                                        \
      y[r] = dk__cpu_hsum(acc);                                                \
    }

/* Decode (M = 1) of iq2 and iq3, a super-block at a time: the signs go
 * onto the activations (their sign bytes, as llama.cpp's kernel does) so
 * the point magnitudes (<= 43, <= 62) meet them as maddubs' unsigned
 * operand, and the odd scale multipliers 2 sc + 1 (iq2's two halves',
 * iq3's one, in both nibbles of s0) are one int16 madd, exact; one f32
 * multiply-add a group, d times 1/8 (iq2), 1/4 (iq3_xxs) or 1 (iq3_s) times
 * the activations' scale. Through the generic loop (signed codes, a scale
 * vector a group) a 100M IQ2_XXS model decoded at 104 tok/s, here 174-181;
 * a 4096x4096 product on one thread, iq3_xxs 2.4-2.5 -> 1.5 ms, iq3_s
 * 2.0-2.1 -> 1.5-1.7 ms. */
#define DK__IQ_CODEBOOK(T) (DK__HALVES(T) || (T) == DK_IQ3_XXS || (T) == DK_IQ3_S)
/* the multiplier 2 sc + 1 in all int16 words: iq2_xxs and iq3 (one scale a
 * group, in both nibbles of s); iq2_xs/iq2_s's halves take dk__cpu_iq2_scv */
#define DK__IQ_SCW(s) _mm256_set1_epi16((short)(2 * ((s) & 15) + 1))
/* iq2_xs/iq2_s: the eight groups' halves' multipliers 2 sc + 1 of a
 * super-block (the scale bytes at sc8: low nibble the first half's) as
 * int16 words, the first halves' in the low 128 bits, the second halves'
 * in the high: DK__KW(g) then puts group g's pair in place in one shuffle
 * (per group, from the byte, they took six instructions) */
DK_CPU_AVX2_INLINE __m256i dk__cpu_iq2_scv(const uint8_t *sc8) {
  const __m128i b = _mm_loadl_epi64((const __m128i *)sc8), l4 = _mm_set1_epi8(15);
  const __m256i v = _mm256_set_m128i(_mm_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(b, 4), l4)),
                                     _mm_cvtepu8_epi16(_mm_and_si128(b, l4)));
  return _mm256_add_epi16(_mm256_add_epi16(v, v), _mm256_set1_epi16(1));
}
#define DK__IQ2_SCB(T) ((T) == DK_IQ2_XS || (T) == DK_IQ2_S)
/* iq2_s's indices, and iq3_s's without the gather (VN 0): ix[ixc] this
 * super-block's, ix[ixc ^ 1] the next's (dk__cpu_iq2s_idx,
 * dk__cpu_iq3s_idx), across the rows */
#define DK__IQ_IX(T, VN) ((T) == DK_IQ2_S || ((T) == DK_IQ3_S && !(VN)))
#define DK__IQ_IDX(T, blk, ix)                                                 \
  {                                                                            \
    if ((T) == DK_IQ2_S) dk__cpu_iq2s_idx((const dk_block_iq2_s *)(blk), ix);  \
    else dk__cpu_iq3s_idx((const dk_block_iq3_s *)(blk), ix);                  \
  }
#define DK__IQ_ROWS1_BODY(T, VN)                                              \
  if (DK__IQ_CODEBOOK(T) && M == 1) {                                          \
    const size_t bsz = dk_dtype_block_bytes(T);                                \
    uint16_t ix[2][64];                                                        \
    int ixc = 0;                                                               \
    if (DK__IQ_IX(T, VN) && r < rows) DK__IQ_IDX(T, w + (size_t)r * wrow, ix[0]) \
    for (; r < rows; r++) {                                                    \
      const char *wr = w + (size_t)r * wrow;                                   \
      __m256 acc = _mm256_setzero_ps();                                        \
      int64_t sb;                                                              \
      int g;                                                                   \
      for (sb = 0; sb < nb / 8; sb++, ixc ^= 1) {                              \
        const char *blk = wr + (size_t)sb * bsz;                               \
        const float d8 = _cvtsh_ss(*(const uint16_t *)blk) * (DK__HALVES(T) ? 0.125f : (T) == DK_IQ3_XXS ? 0.25f : 1.0f); \
        const __m256i scv = DK__IQ2_SCB(T) ? dk__cpu_iq2_scv((T) == DK_IQ2_XS ? ((const dk_block_iq2_xs *)blk)->scales : ((const dk_block_iq2_s *)blk)->scales) \
                                           : _mm256_setzero_si256();           \
        __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();            \
        DK__PF_SPAN(blk, bsz)                                                  \
        if (DK__IQ_IX(T, VN)) {   /* the next super-block, in this row or the next */ \
          const char *nx = sb + 1 < nb / 8 ? blk + bsz : r + 1 < rows ? wr + wrow : NULL; \
          if (nx) DK__IQ_IDX(T, nx, ix[ixc ^ 1])                               \
        }                                                                      \
        DK__UNROLL4                                                            \
        for (g = 0; g < 8; g += 2) {                                           \
          const dk__cpu_q8x *x0 = xq + 8 * sb + g;                             \
          __m256i n0, n1, m0, m1, p0, p1;                                      \
          uint32_t s0, s1;                                                     \
          const uint16_t *ixp = DK__IQ_IX(T, VN) ? ix[ixc] : NULL;             \
          m0 = DK__HALVES(T) ? dk__cpu_iq2_mag(T, blk, g, ixp, &n0, &s0) : dk__cpu_iq3_mag(T, blk, g, VN, ixp, &n0, &s0); \
          m1 = DK__HALVES(T) ? dk__cpu_iq2_mag(T, blk, g + 1, ixp, &n1, &s1) : dk__cpu_iq3_mag(T, blk, g + 1, VN, ixp, &n1, &s1); \
          p0 = _mm256_maddubs_epi16(m0, _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)x0[0].qs), n0)); \
          p1 = _mm256_maddubs_epi16(m1, _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)x0[1].qs), n1)); \
          p0 = _mm256_madd_epi16(p0, DK__IQ2_SCB(T) ? _mm256_shuffle_epi8(scv, DK__KW(g)) : DK__IQ_SCW(s0)); \
          p1 = _mm256_madd_epi16(p1, DK__IQ2_SCB(T) ? _mm256_shuffle_epi8(scv, DK__KW(g + 1)) : DK__IQ_SCW(s1)); \
          a0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_broadcast_ss(&x0[0].d), a0); \
          a1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1), _mm256_broadcast_ss(&x0[1].d), a1); \
        }                                                                      \
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d8), _mm256_add_ps(a0, a1), acc); \
      }                                                                        \
      y[r] = dk__cpu_hsum(acc);                                                \
    }                                                                          \
  }

/* Rows [0, rows) of a weight matrix (wrow bytes apart) against M q8
 * activation rows of nb blocks: y[m * ldy + r]. One function per weight
 * dtype and class: the dtype is a constant in it, so the block decode folds
 * to straight-line code (a per-block switch on a runtime dtype, accumulators
 * indexed by a runtime row count spilled to the stack, and a call per row
 * held the decode dot at a third of the memory bandwidth). Decode (M = 1)
 * of q8_0 (and the 4/5-bit formats' last rows) takes one row at a time, two
 * blocks per step: a thread then reads one sequential stream, which this
 * VM's memory serves faster than two or four rows in lockstep (a 100M q8_0
 * model from memory: 110-115 tok/s with two rows, 135-147 with one,
 * alternating). The min term (mn * the block's activation sum) is a scalar
 * chain. The K-quants have their own loop (backends/cpu_kdot.h). */
/* the decode loop prefetches DK__PF_AHEAD bytes ahead in its row: a 100M
 * q8_0 model decoded at 83-96 tok/s without it, 103-133 with 1 KB (AMD);
 * 193-205 at 1 KB, 221-245 at 3 KB (Intel) */
#define DK__Q8_ROWS_BODY(IDOT, I2DOT, T, VN)                                 \
  const dk_dtype wdt = T;                                                      \
  int64_t r = 0, b;                                                            \
  int m;                                                                       \
  DK__Q8_ROWS4_BODY(I2DOT, T, VN)                                              \
  DK__IQ4XS_ROWS1_BODY(T)                                                      \
  DK__IQ_ROWS1_BODY(T, VN)                                                    \
  if (M == 1)                                                                  \
    for (; r < rows; r++) {                                                    \
      const char *w0 = w + (size_t)r * wrow;                                   \
      __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();              \
      float m0 = 0.0f, m1 = 0.0f;                                              \
      for (b = 0; b + 2 <= nb; b += 2) {                                       \
        float d0, d1, mn0, mn1;                                                \
        _mm_prefetch((const char *)((uintptr_t)w0 + (size_t)b * (wrow / nb) + DK__PF_AHEAD), _MM_HINT_T0); \
        __m256i v0 = dk__cpu_wblock_i8(wdt, w0, b, &d0, &mn0);                 \
        __m256i v1 = dk__cpu_wblock_i8(wdt, w0, b + 1, &d1, &mn1);             \
        a0 = _mm256_fmadd_ps(DK__IDOT(IDOT, T, v0, _mm256_loadu_si256((const __m256i *)xq[b].qs)), DK__WD(T, d0, mn0, xq[b].d), a0); \
        a1 = _mm256_fmadd_ps(DK__IDOT(IDOT, T, v1, _mm256_loadu_si256((const __m256i *)xq[b + 1].qs)), DK__WD(T, d1, mn1, xq[b + 1].d), a1); \
        if (DK__HAS_MIN(T)) { m0 += mn0 * xq[b].s; m1 += mn1 * xq[b + 1].s; } \
      }                                                                        \
      for (; b < nb; b++) {                                                    \
        float d0, mn0;                                                         \
        __m256i v0 = dk__cpu_wblock_i8(wdt, w0, b, &d0, &mn0);                 \
        a0 = _mm256_fmadd_ps(DK__IDOT(IDOT, T, v0, _mm256_loadu_si256((const __m256i *)xq[b].qs)), DK__WD(T, d0, mn0, xq[b].d), a0); \
        if (DK__HAS_MIN(T)) m0 += mn0 * xq[b].s;                               \
      }                                                                        \
      y[r] = dk__cpu_hsum(_mm256_add_ps(a0, a1)) + m0 + m1;                    \
    }                                                                          \
  if (M == 2) /* a precise weight's two activation levels (dk__cpu_linear): \
    * as M = 1, two blocks a step and the prefetch, four FMA chains (one      \
    * block a step, no prefetch: Gemma 3's 262144x640 classifier held decode  \
    * at 54 tok/s, against 68 now and 72 with one level) */                  \
    for (; r < rows; r++) {                                                    \
      const char *wr = w + (size_t)r * wrow;                                   \
      __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), c0 = a0, c1 = a0; \
      float m0 = 0.0f, m1 = 0.0f;                                              \
      for (b = 0; b + 2 <= nb; b += 2) {                                       \
        float dw0, dw1, mn0, mn1;                                              \
        const dk__cpu_q8x *x0 = xq + b, *x1 = xq + nb + b;                     \
        _mm_prefetch((const char *)((uintptr_t)wr + (size_t)b * (wrow / nb) + DK__PF_AHEAD), _MM_HINT_T0); \
        __m256i v0 = dk__cpu_wblock_i8(wdt, wr, b, &dw0, &mn0);                \
        __m256i v1 = dk__cpu_wblock_i8(wdt, wr, b + 1, &dw1, &mn1);            \
        a0 = _mm256_fmadd_ps(DK__IDOT(IDOT, T, v0, _mm256_loadu_si256((const __m256i *)x0[0].qs)), \
                             DK__WD(T, dw0, mn0, x0[0].d), a0);               \
        c0 = _mm256_fmadd_ps(DK__IDOT(IDOT, T, v1, _mm256_loadu_si256((const __m256i *)x0[1].qs)), \
                             DK__WD(T, dw1, mn1, x0[1].d), c0);               \
        a1 = _mm256_fmadd_ps(DK__IDOT(IDOT, T, v0, _mm256_loadu_si256((const __m256i *)x1[0].qs)), \
                             DK__WD(T, dw0, mn0, x1[0].d), a1);               \
        c1 = _mm256_fmadd_ps(DK__IDOT(IDOT, T, v1, _mm256_loadu_si256((const __m256i *)x1[1].qs)), \
                             DK__WD(T, dw1, mn1, x1[1].d), c1);               \
        if (DK__HAS_MIN(T)) { m0 += mn0 * x0[0].s + mn1 * x0[1].s; m1 += mn0 * x1[0].s + mn1 * x1[1].s; } \
      }                                                                        \
      a0 = _mm256_add_ps(a0, c0);                                              \
      a1 = _mm256_add_ps(a1, c1);                                              \
      for (; b < nb; b++) {                                                    \
        float dw, mn;                                                          \
        const dk__cpu_q8x *x0 = xq + b, *x1 = xq + nb + b;                     \
        __m256i v = dk__cpu_wblock_i8(wdt, wr, b, &dw, &mn);                   \
        a0 = _mm256_fmadd_ps(DK__IDOT(IDOT, T, v, _mm256_loadu_si256((const __m256i *)x0->qs)), \
                             DK__WD(T, dw, mn, x0->d), a0);                  \
        a1 = _mm256_fmadd_ps(DK__IDOT(IDOT, T, v, _mm256_loadu_si256((const __m256i *)x1->qs)), \
                             DK__WD(T, dw, mn, x1->d), a1);                  \
        if (DK__HAS_MIN(T)) { m0 += mn * x0->s; m1 += mn * x1->s; }           \
      }                                                                        \
      y[r] = dk__cpu_hsum(a0) + m0;                                            \
      y[ldy + r] = dk__cpu_hsum(a1) + m1;                                      \
    }                                                                          \
  for (; r < rows; r++) {                                                      \
    const char *wr = w + (size_t)r * wrow;                                     \
    __m256 acc[DK_CPU_GEMV_MAXM];                                              \
    float macc[DK_CPU_GEMV_MAXM];                                              \
    for (m = 0; m < DK_CPU_GEMV_MAXM; m++) { acc[m] = _mm256_setzero_ps(); macc[m] = 0.0f; } \
    for (b = 0; b < nb; b++) {                                                 \
      float dw, mn;                                                            \
      __m256i wv = dk__cpu_wblock_i8(wdt, wr, b, &dw, &mn);                    \
      for (m = 0; m < M; m++) {                                                \
        const dk__cpu_q8x *xb = xq + m * nb + b;                               \
        __m256i x = _mm256_loadu_si256((const __m256i *)xb->qs);              \
        acc[m] = _mm256_fmadd_ps(DK__IDOT(IDOT, T, wv, x), DK__WD(T, dw, mn, xb->d), acc[m]); \
        if (DK__HAS_MIN(T)) macc[m] += mn * xb->s;                              \
      }                                                                        \
    }                                                                          \
    for (m = 0; m < M; m++) y[m * ldy + r] = dk__cpu_hsum(acc[m]) + macc[m];   \
  }

/* q6_K's 32-value block j (0-7) of super-block p as unsigned codes 0..63
 * (the value is the code - 32), in value order: low nibbles from ql (the
 * upper nibble for j & 2), two high bits from qh (shifted by 2 * (j & 3));
 * the decode dot (backends/cpu_kdot.h) and the GEMM packing */
DK_CPU_AVX2_INLINE __m256i dk__cpu_q6k_u8(const dk_block_q6_K *p, int j) {
  const int h = j >> 2, jj = j & 3;
  __m256i lo = _mm256_loadu_si256((const __m256i *)(p->ql + h * 64 + (jj & 1) * 32));
  __m256i hi = _mm256_loadu_si256((const __m256i *)(p->qh + h * 32));
  lo = _mm256_and_si256(jj >> 1 ? _mm256_srli_epi16(lo, 4) : lo, _mm256_set1_epi8(15));
  hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hi, 2 * jj), _mm256_set1_epi8(3)), 4);
  return _mm256_or_si256(lo, hi);
}

/* q2_K/q3_K's 32-value block j (0-7) of super-block (qs, hmask) as unsigned
 * codes: bits 2*(j%4).. of qs[32*(j/4) ..] (q2_K 0..3), and for q3_K (hmask
 * not NULL) bit j of hmask as the third (0..7; the value is the code - 4);
 * the decode dot and the GEMM packing */
DK_CPU_AVX2_INLINE __m256i dk__cpu_k23_u8(const uint8_t *qs, const uint8_t *hmask, int j) {
  __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * (j >> 2)));
  v = _mm256_and_si256(_mm256_srli_epi16(v, 2 * (j & 3)), _mm256_set1_epi8(3));
  if (hmask) {
    const __m256i hb = _mm256_loadu_si256((const __m256i *)hmask);
    v = _mm256_or_si256(v, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, j), _mm256_set1_epi8(1)), 2));
  }
  return v;
}

#define DK__Q8_ROWS_ARGS dk_dtype dt, const char *w, size_t wrow, int64_t rows, const dk__cpu_q8x *xq, int64_t nb, int M, float *y, int64_t ldy
#define DK__Q8_ROWS_FNS(CLS, ATTR, IDOT, I2DOT, VN)                                                 \
  ATTR static void dk__cpu_rows_q8_##CLS##_q8_0(DK__Q8_ROWS_ARGS) { DK__Q8_ROWS_BODY(IDOT, I2DOT, DK_Q8_0, VN) (void)dt; } \
  ATTR static void dk__cpu_rows_q8_##CLS##_q4_0(DK__Q8_ROWS_ARGS) { DK__Q8_ROWS_BODY(IDOT, I2DOT, DK_Q4_0, VN) (void)dt; } \
  ATTR static void dk__cpu_rows_q8_##CLS##_q4_1(DK__Q8_ROWS_ARGS) { DK__Q8_ROWS_BODY(IDOT, I2DOT, DK_Q4_1, VN) (void)dt; } \
  ATTR static void dk__cpu_rows_q8_##CLS##_q5_0(DK__Q8_ROWS_ARGS) { DK__Q8_ROWS_BODY(IDOT, I2DOT, DK_Q5_0, VN) (void)dt; } \
  ATTR static void dk__cpu_rows_q8_##CLS##_q5_1(DK__Q8_ROWS_ARGS) { DK__Q8_ROWS_BODY(IDOT, I2DOT, DK_Q5_1, VN) (void)dt; } \
  ATTR static void dk__cpu_rows_q8_##CLS##_iq4_nl(DK__Q8_ROWS_ARGS) { DK__Q8_ROWS_BODY(IDOT, I2DOT, DK_IQ4_NL, VN) (void)dt; } \
  ATTR static void dk__cpu_rows_q8_##CLS##_iq4_xs(DK__Q8_ROWS_ARGS) { DK__Q8_ROWS_BODY(IDOT, I2DOT, DK_IQ4_XS, VN) (void)dt; } \
  ATTR static void dk__cpu_rows_q8_##CLS##_iq3_xxs(DK__Q8_ROWS_ARGS) { DK__Q8_ROWS_BODY(IDOT, I2DOT, DK_IQ3_XXS, VN) (void)dt; } \
  ATTR static void dk__cpu_rows_q8_##CLS##_iq3_s(DK__Q8_ROWS_ARGS) { DK__Q8_ROWS_BODY(IDOT, I2DOT, DK_IQ3_S, VN) (void)dt; } \
  ATTR static void dk__cpu_rows_q8_##CLS##_iq2_xxs(DK__Q8_ROWS_ARGS) { DK__Q8_ROWS_BODY(IDOT, I2DOT, DK_IQ2_XXS, VN) (void)dt; } \
  ATTR static void dk__cpu_rows_q8_##CLS##_iq2_xs(DK__Q8_ROWS_ARGS) { DK__Q8_ROWS_BODY(IDOT, I2DOT, DK_IQ2_XS, VN) (void)dt; } \
  ATTR static void dk__cpu_rows_q8_##CLS##_iq2_s(DK__Q8_ROWS_ARGS) { DK__Q8_ROWS_BODY(IDOT, I2DOT, DK_IQ2_S, VN) (void)dt; } \
  static dk__cpu_rowdot_q8_fn dk__cpu_rows_q8_##CLS(dk_dtype dt) {                                    \
    switch (dt) {                                                                                     \
    case DK_Q8_0: return dk__cpu_rows_q8_##CLS##_q8_0;                                                \
    case DK_Q4_0: return dk__cpu_rows_q8_##CLS##_q4_0;                                                \
    case DK_Q4_1: return dk__cpu_rows_q8_##CLS##_q4_1;                                                \
    case DK_Q5_0: return dk__cpu_rows_q8_##CLS##_q5_0;                                                \
    case DK_Q5_1: return dk__cpu_rows_q8_##CLS##_q5_1;                                                \
    case DK_IQ4_NL: return dk__cpu_rows_q8_##CLS##_iq4_nl;                                            \
    case DK_IQ4_XS: return dk__cpu_rows_q8_##CLS##_iq4_xs;                                            \
    case DK_IQ3_XXS: return dk__cpu_rows_q8_##CLS##_iq3_xxs;                                          \
    case DK_IQ3_S: return dk__cpu_rows_q8_##CLS##_iq3_s;                                              \
    case DK_IQ2_XXS: return dk__cpu_rows_q8_##CLS##_iq2_xxs;                                          \
    case DK_IQ2_XS: return dk__cpu_rows_q8_##CLS##_iq2_xs;                                            \
    case DK_IQ2_S: return dk__cpu_rows_q8_##CLS##_iq2_s;                                              \
    default: return NULL;                                                                             \
    }                                                                                                 \
  }
DK__Q8_ROWS_FNS(avx2, DK_CPU_AVX2, dk__cpu_idot_avx2, dk__cpu_i2dot_avx2, 0)
DK__Q8_ROWS_FNS(avx512, DK_CPU_AVX512, dk__cpu_idot_avx2, dk__cpu_i2dot_avx2, 0)
DK__Q8_ROWS_FNS(avx512vnni, DK_CPU_AVX512VNNI, dk__cpu_idot_vnni, dk__cpu_i2dot_vnni, 1)
#endif

#include "cpu_kdot.h"   /* the K-quants' decode dot */
#include "cpu_igemm.h"  /* the block formats' integer prompt product */
#include "cpu_fgemm.h"  /* the float formats' row-form prompt product */
#include "cpu_amx.h"    /* the prompt product on AMX tiles */
#include "cpu_fattn.h"  /* prompt attention in tiles */

#ifdef DK_CPU_X86

/* ---- the prompt GEMM's weight packing ----------------------------------
 * Each KC x NC slice of W goes into NR-column panels [k][NR]. A value at a
 * time (the portable dequantization, then a strided store per value) that
 * was 45 % of a 64-row q4_K product and 35 % of an f16 one. Here each row's
 * values are decoded 8 at a time (the block formats through the decode dot's
 * dk__cpu_wblock_i8: w = d*q + mn, one FMA), then 8x8 tiles are transposed in
 * registers. */
/* 8 int8 codes (bytes 8c..8c+7 of v) as f32 */
#define DK__I8_CHUNK(v, c)                                                     \
  _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32((c) & 1 ? _mm_srli_si128((c) < 2 ? _mm256_castsi256_si128(v) : _mm256_extracti128_si256(v, 1), 8) \
                                                  : ((c) < 2 ? _mm256_castsi256_si128(v) : _mm256_extracti128_si256(v, 1))))
#define DK__WDEQ_BODY                                                          \
  int64_t r, k, b;                                                             \
  if (dt == DK_F32 || dt == DK_F16 || dt == DK_BF16) {                         \
    for (r = 0; r < rows; r++) {                                               \
      const char *p = w + (size_t)r * wrow;                                    \
      float *o = dst + r * ldd;                                                \
      for (k = 0; k < kc; k += 8) _mm256_storeu_ps(o + k, dk__cpu_load8(dt, p, k0 + k)); \
    }                                                                          \
    return 1;                                                                  \
  }                                                                            \
  if (dt == DK_Q6_K) {                                                         \
    /* 16-value scales: chunks 0-1 of a 32-value block take one, 2-3 the next */ \
    for (r = 0; r < rows; r++)                                                 \
      for (b = k0 / 32; b < (k0 + kc) / 32; b++) {                             \
        const dk_block_q6_K *p = (const dk_block_q6_K *)(w + (size_t)r * wrow) + b / 8; \
        const int j = (int)(b & 7);                                            \
        const __m256i v = _mm256_sub_epi8(dk__cpu_q6k_u8(p, j), _mm256_set1_epi8(32)); \
        float d = _cvtsh_ss(p->d), *o = dst + r * ldd + (b * 32 - k0);        \
        __m256 s0 = _mm256_set1_ps(d * (float)p->scales[2 * j]), s1 = _mm256_set1_ps(d * (float)p->scales[2 * j + 1]); \
        _mm256_storeu_ps(o, _mm256_mul_ps(s0, DK__I8_CHUNK(v, 0)));            \
        _mm256_storeu_ps(o + 8, _mm256_mul_ps(s0, DK__I8_CHUNK(v, 1)));        \
        _mm256_storeu_ps(o + 16, _mm256_mul_ps(s1, DK__I8_CHUNK(v, 2)));       \
        _mm256_storeu_ps(o + 24, _mm256_mul_ps(s1, DK__I8_CHUNK(v, 3)));       \
      }                                                                        \
    return 1;                                                                  \
  }                                                                            \
  if (dt == DK_Q2_K || dt == DK_Q3_K) {                                        \
    /* 32-value block j of a super-block (q3_K's codes minus 4): groups 2j \
     * and 2j+1 with a scale (and q2_K a min) each */                        \
    for (r = 0; r < rows; r++)                                                 \
      for (b = k0 / 32; b < (k0 + kc) / 32; b++) {                             \
        const int j = (int)(b & 7);                                            \
        float d0, d1, m0 = 0.0f, m1 = 0.0f, *o = dst + r * ldd + (b * 32 - k0); \
        __m256i v;                                                             \
        if (dt == DK_Q2_K) {                                                   \
          const dk_block_q2_K *p = (const dk_block_q2_K *)(w + (size_t)r * wrow) + b / 8; \
          const float d = _cvtsh_ss(p->d), dmin = _cvtsh_ss(p->dmin);          \
          v = dk__cpu_k23_u8(p->qs, NULL, j);                                  \
          d0 = d * (float)(p->scales[2 * j] & 15); m0 = -dmin * (float)(p->scales[2 * j] >> 4); \
          d1 = d * (float)(p->scales[2 * j + 1] & 15); m1 = -dmin * (float)(p->scales[2 * j + 1] >> 4); \
        } else {                                                               \
          const dk_block_q3_K *p = (const dk_block_q3_K *)(w + (size_t)r * wrow) + b / 8; \
          const float d = _cvtsh_ss(p->d);                                     \
          uint64_t slo, shi, sc;                                               \
          v = _mm256_sub_epi8(dk__cpu_k23_u8(p->qs, p->hmask, j), _mm256_set1_epi8(4)); \
          dk__cpu_q3k_scales(p->scales, &slo, &shi);                           \
          sc = j < 4 ? slo : shi;                                              \
          d0 = d * (float)((int)((sc >> (16 * (j & 3))) & 255) - 32);          \
          d1 = d * (float)((int)((sc >> (16 * (j & 3) + 8)) & 255) - 32);      \
        }                                                                      \
        _mm256_storeu_ps(o, _mm256_fmadd_ps(_mm256_set1_ps(d0), DK__I8_CHUNK(v, 0), _mm256_set1_ps(m0))); \
        _mm256_storeu_ps(o + 8, _mm256_fmadd_ps(_mm256_set1_ps(d0), DK__I8_CHUNK(v, 1), _mm256_set1_ps(m0))); \
        _mm256_storeu_ps(o + 16, _mm256_fmadd_ps(_mm256_set1_ps(d1), DK__I8_CHUNK(v, 2), _mm256_set1_ps(m1))); \
        _mm256_storeu_ps(o + 24, _mm256_fmadd_ps(_mm256_set1_ps(d1), DK__I8_CHUNK(v, 3), _mm256_set1_ps(m1))); \
      }                                                                        \
    return 1;                                                                  \
  }                                                                            \
  if (!(((DK__CPU_Q8_DOT | DK_BIT(DK_Q4_K) | DK_BIT(DK_Q5_K)) >> dt) & 1)) return 0; \
  for (r = 0; r < rows; r++)                                                   \
    for (b = k0 / 32; b < (k0 + kc) / 32; b++) {                               \
      float d, mn, *o = dst + r * ldd + (b * 32 - k0);                         \
      __m256i v = dk__cpu_wblock_i8(dt, w + (size_t)r * wrow, b, &d, &mn);     \
      /* the second half's scale in mn for the DK__HALVES formats */          \
      const int hv = DK__HALVES(dt);                                          \
      __m256 dv = _mm256_set1_ps(d), dv1 = hv ? _mm256_set1_ps(mn) : dv, mv = _mm256_set1_ps(hv ? 0.0f : mn); \
      _mm256_storeu_ps(o, _mm256_fmadd_ps(dv, DK__I8_CHUNK(v, 0), mv));        \
      _mm256_storeu_ps(o + 8, _mm256_fmadd_ps(dv, DK__I8_CHUNK(v, 1), mv));    \
      _mm256_storeu_ps(o + 16, _mm256_fmadd_ps(dv1, DK__I8_CHUNK(v, 2), mv));  \
      _mm256_storeu_ps(o + 24, _mm256_fmadd_ps(dv1, DK__I8_CHUNK(v, 3), mv));  \
    }                                                                          \
  return 1;

/* panel[k][j] = src[j][k] for DK_CPU_NR (16) rows: two 8-row halves, 8x8 tiles */
#define DK__WPACK_BODY                                                         \
  int64_t k;                                                                   \
  int h, i;                                                                    \
  for (k = 0; k < kc; k += 8)                                                  \
    for (h = 0; h < 2; h++) {                                                  \
      __m256 r[8], t[8];                                                       \
      for (i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + (8 * h + i) * lds + k); \
      for (i = 0; i < 8; i += 2) {                                             \
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);                             \
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);                         \
      }                                                                        \
      for (i = 0; i < 8; i += 4) {                                             \
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);                        \
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);                    \
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);                \
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);                \
      }                                                                        \
      for (i = 0; i < 4; i++) {                                                \
        _mm256_storeu_ps(panel + (k + i) * DK_CPU_NR + 8 * h, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20)); \
        _mm256_storeu_ps(panel + (k + i + 4) * DK_CPU_NR + 8 * h, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31)); \
      }                                                                        \
    }

#define DK__WPACK_ARGS const float *src, int64_t lds, int64_t kc, float *panel
#define DK__WDEQ_ARGS dk_dtype dt, const char *w, size_t wrow, int64_t rows, int64_t k0, int64_t kc, float *dst, int64_t ldd
DK_CPU_AVX2 static int dk__cpu_wdeq_avx2(DK__WDEQ_ARGS) { DK__WDEQ_BODY }
DK_CPU_AVX512 static int dk__cpu_wdeq_avx512(DK__WDEQ_ARGS) { DK__WDEQ_BODY }
DK_CPU_AVX2 static void dk__cpu_wpack_avx2(DK__WPACK_ARGS) { DK__WPACK_BODY }
DK_CPU_AVX512 static void dk__cpu_wpack_avx512(DK__WPACK_ARGS) { DK__WPACK_BODY }
#endif

static void dk__cpu_gemv_task(void *ctx, int64_t n0, int64_t n1) {
  const dk__cpu_gemv *g = (const dk__cpu_gemv *)ctx;
  dk__cpu_rowdot_fn dot = dk__cpu_k->rowdot[g->wdt];
  dk__cpu_rowdot_q8_fn idot = dk__cpu_k->rowdot_q8[g->wdt];
  int64_t n;
  int m;
  if (g->xq && idot) {   /* the whole range in one call: its rows share the activations' loads */
    idot(g->wdt, g->w + (size_t)n0 * g->wrow, g->wrow, n1 - n0, g->xq, g->K / 32, (int)g->M, g->y + n0, g->N);
    return;
  }
  if (g->xv) {
    dk__cpu_k->rowdot_q8v[g->wdt](g->wdt, g->w + (size_t)n0 * g->wrow, g->wrow, n1 - n0, g->xv, g->K / 256, (int)g->M,
                                  g->y + n0, g->N);
    return;
  }
  if (g->xk) {
    dk__cpu_k->rowdot_q8k[g->wdt](g->wdt, g->w + (size_t)n0 * g->wrow, g->wrow, n1 - n0, g->xk, g->K / 256, (int)g->M,
                                  g->y + n0, g->N);
    return;
  }
  if (g->M == 1 && dk__cpu_k->gemv1 && (g->wdt == DK_F32 || g->wdt == DK_F16 || g->wdt == DK_BF16)) {
    dk__cpu_k->gemv1(g->wdt, g->w + (size_t)n0 * g->wrow, g->wrow, n1 - n0, g->x, g->K, g->y + n0);
    return;
  }
  for (n = n0; n < n1; n++) {
    const char *w = g->w + (size_t)n * g->wrow;
    float r[DK_CPU_GEMV_MAXM];
    if (dot) {
      dot(g->wdt, w, g->x, g->K, (int)g->M, r);
      for (m = 0; m < g->M; m++) g->y[m * g->N + n] = r[m];
    } else {
      for (m = 0; m < g->M; m++) g->y[m * g->N + n] = dk__cpu_dot_generic(g->wdt, w, g->x + m * g->K, g->K);
    }
  }
}

/* The block types of backends/cpu_quant.h as rowdot entries: one row dotted
 * with each of the M activation rows (their dots decode a block in registers) */
static void dk__cpu_rowdot_more(dk_dtype wdt, const char *w, const float *x, int64_t K, int M, float *out) {
  int m;
  for (m = 0; m < M; m++) out[m] = dk__cpu_quant_dot(wdt, w, x + m * K, K);
}
#ifdef DK_CPU_X86
DK_CPU_AVX2 static void dk__cpu_rowdot_more_avx2(dk_dtype wdt, const char *w, const float *x, int64_t K, int M,
                                                 float *out) {
  int m;
  for (m = 0; m < M; m++) out[m] = dk__cpu_quant_dot_avx2(wdt, w, x + m * K, K);
}
#endif

/* ==== kernel classes: the tables and the choice ============================ */

/* not const: dk__cpu_pick_kernels adds the cpu_quant.h types' entries */
static dk__cpu_kernels dk__cpu_portable = {
  "portable", dk__cpu_micro_generic, dk__cpu_dots_generic, dk__cpu_axpy_generic, NULL, NULL,
  NULL, NULL, {NULL},
  {NULL}, NULL, NULL, NULL, {NULL}, NULL, NULL, NULL, NULL, NULL, 0, 0, NULL, {NULL}, 0, 0, NULL, 0, 0, NULL, 0
};
#ifdef DK_CPU_X86
static dk__cpu_kernels dk__cpu_avx2 = {
  "avx2", dk__cpu_micro_avx2, dk__cpu_dots_avx2, dk__cpu_axpy_avx2, dk__cpu_act_avx2, dk__cpu_expsum_avx2,
  dk__cpu_f16_to_f32_row_avx2, dk__cpu_f32_to_f16_row_avx2,
  {dk__cpu_rowdot_avx2, dk__cpu_rowdot_avx2, dk__cpu_rowdot_avx2, NULL, dk__cpu_rowdot_avx2, dk__cpu_rowdot_avx2},
  {NULL}, dk__cpu_wdeq_avx2, dk__cpu_wpack_avx2, dk__cpu_gemv1_avx2, {NULL}, dk__cpu_round32_avx2,
  dk__cpu_ipack_avx2, dk__cpu_imicro_avx2, dk__cpu_fgemm_avx2, dk__cpu_wsum_avx2, 4, 8, NULL, {NULL}, DK__CPU_IGEMM, 0,
  dk__cpu_famk_avx2, 6, 16, dk__cpu_fa_softmax_avx2, DK_CPU_XT_MINM
};
/* dk__cpu_best_class also puts the VNNI dot in where cpuid has it */
static dk__cpu_kernels dk__cpu_avx512 = {
  "avx512", dk__cpu_micro_avx512, dk__cpu_dots_avx512, dk__cpu_axpy_avx512, dk__cpu_act_avx2, dk__cpu_expsum_avx2,
  dk__cpu_f16_to_f32_row_avx512, dk__cpu_f32_to_f16_row_avx512,
  {dk__cpu_rowdot_avx512, dk__cpu_rowdot_avx512, dk__cpu_rowdot_avx512, NULL, dk__cpu_rowdot_avx512, dk__cpu_rowdot_avx512},
  {NULL}, dk__cpu_wdeq_avx512, dk__cpu_wpack_avx512, dk__cpu_gemv1_avx512, {NULL}, dk__cpu_round32_avx2,
  dk__cpu_ipack_avx512, dk__cpu_imicro_avx512, dk__cpu_fgemm_avx512, dk__cpu_wsum_avx2, 4, 8, NULL, {NULL}, DK__CPU_IGEMM, 0,
  dk__cpu_famk_avx512, 8, 32, dk__cpu_fa_softmax_avx512, 0
};
/* the avx512 class (VNNI too) plus the AMX tile product: dk__cpu_pick_kernels
 * fills it where this CPU and OS run AMX (elsewhere only its name is set,
 * so dk_cpu_set_isa("amx") is refused as unsupported, not unknown) */
static dk__cpu_kernels dk__cpu_amxc = {
  "amx", NULL, NULL, NULL, NULL, NULL, NULL, NULL, {NULL}, {NULL}, NULL, NULL, NULL, {NULL}, NULL, NULL, NULL, NULL, NULL,
  0, 0, NULL, {NULL}, 0, 0, NULL, 0, 0, NULL, 0
};
#endif
static const dk__cpu_kernels *const dk__cpu_classes[DK__CPU_NCLASS] = {
  &dk__cpu_portable,
#ifdef DK_CPU_X86
  &dk__cpu_avx2, &dk__cpu_avx512, &dk__cpu_amxc
#endif
};

/* the best class this CPU and its OS run: cpuid for the instructions,
 * XGETBV for the register state the OS saves (ymm; zmm and mask registers) */
static int dk__cpu_best_class(void) {
#ifdef DK_CPU_X86
  unsigned a, b, c, d, lo, hi;
  int best = DK__CPU_PORTABLE;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1) || !((c >> 28) & 1)) return best;   /* OSXSAVE, AVX */
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & 6) != 6) return best;
  if (((c >> 12) & 1) && ((c >> 29) & 1) && __get_cpuid_count(7, 0, &a, &b, &c, &d) && ((b >> 5) & 1))
    best = DK__CPU_AVX2;   /* FMA, F16C, AVX2 */
  if (best == DK__CPU_AVX2 && (lo & 0xe0) == 0xe0 && ((b >> 16) & 1) && ((b >> 17) & 1) && ((b >> 30) & 1) &&
      ((b >> 31) & 1))
    best = DK__CPU_AVX512;   /* F, DQ, BW, VL */
  if (best == DK__CPU_AVX512 && ((c >> 11) & 1)) {   /* VNNI: the quantized decode dot in one instruction */
    int dt;
    for (dt = 0; dt < DK_DTYPE_COUNT; dt++)
      if ((DK__CPU_Q8_DOT >> dt) & 1) dk__cpu_avx512.rowdot_q8[dt] = dk__cpu_rows_q8_avx512vnni((dk_dtype)dt);
    /* and the integer prompt product (a pair: the kernel reads the packing's layout) */
    for (dt = 0; dt < DK_DTYPE_COUNT; dt++)
      if ((DK__CPU_Q8K_DOT >> dt) & 1) dk__cpu_avx512.rowdot_q8v[dt] = dk__cpu_rows_q8v_avx512vnni((dk_dtype)dt);
    dk__cpu_avx512.ipack = dk__cpu_ipack_avx512vnni_any;
    dk__cpu_avx512.imicro = dk__cpu_imicro_avx512vnni;
    dk__cpu_avx512.imicro16 = dk__cpu_imicro16_avx512vnni;
    dk__cpu_avx512.itypes = DK__CPU_IGEMM_VNNI;
    dk__cpu_avx512.imr = 8;
    dk__cpu_avx512.inr = 16;
  }
#ifdef DK_CPU_HAVE_AMX
  /* dk__cpu_pick_kernels makes the amx class, once the avx512 table is whole */
  if (best == DK__CPU_AVX512 && dk__cpu_amx_usable()) best = DK__CPU_AMX;
#endif
  (void)hi;
  return best;
#else
  return DK__CPU_PORTABLE;
#endif
}

static int dk__cpu_class_named(const char *name) {
  int i;
  for (i = 0; i < DK__CPU_NCLASS; i++)
    if (dk__cpu_classes[i] && strcmp(dk__cpu_classes[i]->name, name) == 0) return i;
  return -1;
}

/* once, at the first open: the best class, or DEVKIT_CPU_ISA's if this CPU
 * has it (a class it lacks falls back to the best one it has) */
/* DEVKIT_CPU_F32_DECODE=1: products against block weights keep their
 * activations in f32 instead of the q8 integer dot (1-4 rows) and the
 * integer prompt product (more rows, 4/5-bit formats): slower, for checks
 * against an f32 reference, where q8 activations move logits by a few
 * tenths (a q8_0 classifier, as SmolLM2's tied embedding, shows it most).
 * The name predates the prompt product. */
static int dk__cpu_f32_decode;

static void dk__cpu_pick_kernels(void) {
  const char *env;
  int best, want, dt;
  if (__atomic_load_n(&dk__cpu_k, __ATOMIC_ACQUIRE)) return;
  env = getenv("DEVKIT_CPU_F32_DECODE");
  dk__cpu_f32_decode = env && *env && strcmp(env, "0");
  best = dk__cpu_best_class();
  for (dt = 0; dt < DK_DTYPE_COUNT; dt++) {
    if ((DK_QUANTS_MORE >> dt) & 1) {
      dk__cpu_portable.rowdot[dt] = dk__cpu_rowdot_more;
#ifdef DK_CPU_X86
      dk__cpu_avx2.rowdot[dt] = dk__cpu_avx512.rowdot[dt] = dk__cpu_rowdot_more_avx2;
#endif
    }
    if ((DK__CPU_Q8K_DOT >> dt) & 1) {   /* the K-quants: against q8k super-blocks */
      dk__cpu_portable.rowdot_q8k[dt] = dk__cpu_rows_q8k_generic;
#ifdef DK_CPU_X86
      dk__cpu_avx2.rowdot_q8k[dt] = dk__cpu_rows_q8k_avx2((dk_dtype)dt);
      dk__cpu_avx512.rowdot_q8k[dt] = dk__cpu_rows_q8k_avx512((dk_dtype)dt);
#endif
    }
    if (!((DK__CPU_Q8_DOT >> dt) & 1)) continue;
    /* the 32-value formats also take the q8 integer dot in decode */
    dk__cpu_portable.rowdot_q8[dt] = dk__cpu_rows_q8_generic;
#ifdef DK_CPU_X86
    dk__cpu_avx2.rowdot_q8[dt] = dk__cpu_rows_q8_avx2((dk_dtype)dt);
    if (!dk__cpu_avx512.rowdot_q8[dt]) dk__cpu_avx512.rowdot_q8[dt] = dk__cpu_rows_q8_avx512((dk_dtype)dt);   /* VNNI's stays */
#endif
  }
#ifdef DK_CPU_HAVE_AMX
  if (best == DK__CPU_AMX) {   /* avx512's table with the AMX tile product */
    dk__cpu_amxc = dk__cpu_avx512;
    dk__cpu_amxc.name = "amx";
    dk__cpu_amxc.amxtypes = DK__CPU_AMX_TYPES;
  }
#endif
  env = getenv("DEVKIT_CPU_ISA");
  want = env ? dk__cpu_class_named(env) : -1;
  if (getenv("DEVKIT_CPU_NO_SIMD")) want = DK__CPU_PORTABLE;   /* the older switch */
  __atomic_store_n(&dk__cpu_k, dk__cpu_classes[want >= 0 && want <= best ? want : best], __ATOMIC_RELEASE);
}

/* whether the class in use runs prompt products on AMX tiles */
static int dk__cpu_amx_on(void) {
  dk__cpu_pick_kernels();
  return dk__cpu_k->amxtypes != 0;
}

DEVKIT_API const char *dk_cpu_isa(void) {
  dk__cpu_pick_kernels();
  return dk__cpu_k->name;
}

DEVKIT_API dk_status dk_cpu_set_isa(const char *name) {
  int c;
  dk__cpu_pick_kernels();   /* the tables filled in first (the amx class made) */
  c = name ? dk__cpu_class_named(name) : dk__cpu_best_class();
  if (c < 0)
    return dk__error(DK_ERR_INVALID, "dk_cpu_set_isa: unknown kernel class '%s' (portable, avx2, avx512 or amx)", name);
  if (c > dk__cpu_best_class())
    return dk__error(DK_ERR_UNSUPPORTED, "dk_cpu_set_isa: this CPU cannot run the '%s' kernels (best: %s)", name,
                     dk__cpu_classes[dk__cpu_best_class()]->name);
  __atomic_store_n(&dk__cpu_k, dk__cpu_classes[c], __ATOMIC_RELEASE);
  return DK_OK;
}


static dk_status dk__cpu_linear(const dk_call *c) {
  const dk_tensor *o = c->t[0], *x = c->t[1], *w = c->t[2], *bias = c->t[3];
  int64_t M = c->i[0], N = c->i[1], K = c->i[2];
  dk__cpu_pick_kernels();
  if (M <= DK_CPU_GEMV_MAXM) {
    /* the caller's scratch (slots 2, 3): the gemv tasks themselves use none */
    dk__cpu_gemv g;
    float *xb = dk__cpu_scratch(2, (size_t)(M * K + 8)), *yb = dk__cpu_scratch(3, (size_t)(M * N + 8));
    int64_t m;
    if (!xb || !yb) return dk__error(DK_ERR_OUT_OF_MEMORY, "dk_linear on cpu: no scratch memory");
    dk__cpu_load(x->dtype, dk__cpu_ptr(x), 0, 1, M * K, xb);
    g.x = xb; g.M = M; g.N = N; g.K = K; g.wdt = w->dtype; g.w = (const char *)dk__cpu_ptr(w);
    g.wrow = dk__row_bytes(w->dtype, K); g.y = yb; g.xq = NULL; g.xk = NULL; g.xv = NULL;
    if ((dk__cpu_k->rowdot_q8[w->dtype] || dk__cpu_k->rowdot_q8k[w->dtype]) && !dk__cpu_f32_decode &&
        (!w->precise || 2 * M <= DK_CPU_GEMV_MAXM)) {
      /* x to q8 once for all N rows (slot 4: the tasks do not touch it): in
       * 32-value blocks, or 256-value super-blocks for the K-quants. A
       * precise weight (a classifier) gets two q8 levels: x rounded, then
       * what that rounding lost rounded with its own scale, as M more rows;
       * the two products add up to x carried to ~15 bits (error <= amax /
       * 64516 per block, 254 times below one level's), at the integer dot's
       * speed: Gemma 3's f32-activation classifier was 63 % of its decode */
      const int kq = dk__cpu_k->rowdot_q8[w->dtype] == NULL, form = kq && dk__cpu_k->rowdot_q8v[w->dtype] ? 2 : kq;
      const size_t bsz = form == 2 ? sizeof(dk__cpu_q8v) : kq ? sizeof(dk__cpu_q8k) : sizeof(dk__cpu_q8x);
      int64_t MQ = w->precise ? 2 * M : M, nb = M * (K / (kq ? 256 : 32));
      char *xq = (char *)dk__cpu_scratch(4, (size_t)(MQ * (K / (kq ? 256 : 32))) * bsz / sizeof(float) + 1);
      float *yq = w->precise ? dk__cpu_scratch(5, (size_t)(MQ * N + 8)) : yb;
      float *res = w->precise ? dk__cpu_scratch(0, (size_t)(M * K + 8)) : NULL;   /* slot 0 is free until the bias */
      if (!xq || !yq || (w->precise && !res)) return dk__error(DK_ERR_OUT_OF_MEMORY, "dk_linear on cpu: no scratch memory");
      dk__cpu_quantize_acts(form, xb, M, K, xq, res);
      if (res) dk__cpu_quantize_acts(form, res, M, K, xq + (size_t)nb * bsz, NULL);
      if (form == 2) g.xv = (const dk__cpu_q8v *)xq;
      else if (kq) g.xk = (const dk__cpu_q8k *)xq;
      else g.xq = (const dk__cpu_q8x *)xq;
      g.M = MQ; g.y = yq;
    }
    dk__cpu_parallel(N, 1 + 32768 / (K + 1), dk__cpu_gemv_task, &g);
    if (g.y != yb)   /* a precise weight's two levels */
      for (m = 0; m < M * N; m++) yb[m] = g.y[m] + g.y[M * N + m];
    return dk__cpu_bias_store(o, bias, yb, 0, M, N);
  } else {
    dk__cpu_gemm g;
#ifdef DK_CPU_HAVE_AMX
    /* bf16 and block weights on AMX tiles, activations rounded to bf16 */
    if (((dk__cpu_k->amxtypes >> w->dtype) & 1) && M >= DK_CPU_AMX_MINM && K % 32 == 0 && !w->precise &&
        !dk__cpu_f32_decode)
      return dk__cpu_amx_run(o, x, w, bias, M, N, K);
#endif
    /* the 4/5-bit formats (with VNNI q8_0/q2_K/q3_K/q6_K too) in integers, activations rounded to q8 as in decode */
    if (dk__cpu_igemm_takes(w->dtype) && !w->precise && !dk__cpu_f32_decode)
      return dk__cpu_igemm_run(o, x, w, bias, M, N, K);
    /* in row form (AVX2: transposed, from 32 rows): f16/bf16 and every
     * block format, at any M in slices of DK_CPU_FGEMM_MAXM rows (the panel
     * GEMM ran at half the speed on AVX-512 at 512 rows; on AVX2 at 512 rows
     * 0.6-1.0x the transposed form, 2026-12-06) */
    if (dk__cpu_k->fgemm && dk__cpu_k->fgemm(w->dtype) && K % 8 == 0)
      return dk__cpu_fgemm_run(o, x, w, bias, M, N, K);
    memset(&g, 0, sizeof g);
    g.adt = x->dtype; g.bdt = w->dtype; g.cdt = o->dtype;
    g.a = dk__cpu_ptr(x); g.b = dk__cpu_ptr(w); g.c = dk__cpu_ptr(o);
    g.M = M; g.N = N; g.K = K; g.a_rs = K; g.a_cs = 1; g.b_is_w = 1;
    g.bias = bias ? dk__cpu_ptr(bias) : NULL;
    g.bias_dt = bias ? bias->dtype : DK_F32;
    g.threaded = 1;
    return dk__cpu_gemm_run(&g);
  }
}

/* dk_rmsnorm_linear, dk_swiglu_linear: the first op's rows into slot 6 of
 * this thread's scratch, then the product from there: the two ops' bits
 * (the rows in x's dtype), without a tensor between them */
static dk_status dk__cpu_fused_linear(const dk_call *c) {
  dk_storage st;
  dk_tensor xn;
  dk_call fc, lc;
  dk_status s;
  memset(&st, 0, sizeof st);
  st.device = c->dev;
  st.nbytes = dk_tensor_nbytes(c->t[1]);
  st.ptr = dk__cpu_scratch(6, st.nbytes / sizeof(float) + 1);
  if (!st.ptr) return dk__error(DK_ERR_OUT_OF_MEMORY, "%s on cpu: no scratch memory", dk__op_name(c->op));
  dk__fused_linear_split(c, &st, 0, &xn, &fc, &lc);
  if ((s = fc.op == DK_OP_RMSNORM ? dk__cpu_norm(&fc) : dk__cpu_unary(&fc)) != DK_OK) return s;
  return dk__cpu_linear(&lc);
}

typedef struct { const dk_call *c; dk_status status; } dk__cpu_mm_ctx;

static dk_status dk__cpu_matmul_one(const dk_call *c, int64_t bi, int threaded) {
  const dk_tensor *o = c->t[0], *a = c->t[1], *b = c->t[2];
  int64_t aoff, boff, M = c->i[0], N = c->i[1], K = c->i[2];
  dk__cpu_gemm g;
  memset(&g, 0, sizeof g);
  dk__matmul_batch_offsets(o, a, b, bi, &aoff, &boff);
  g.adt = a->dtype; g.bdt = b->dtype; g.cdt = o->dtype;
  g.a = (const char *)dk__cpu_ptr(a) + dk__elem_offset_bytes(a->dtype, aoff);
  g.b = (const char *)dk__cpu_ptr(b) + dk__elem_offset_bytes(b->dtype, boff);
  g.c = (char *)dk__cpu_ptr(o) + dk__elem_offset_bytes(o->dtype, bi * M * N);
  g.M = M; g.N = N; g.K = K;
  g.a_rs = a->ndim >= 2 ? a->stride[a->ndim - 2] : 0;
  g.a_cs = a->stride[a->ndim - 1];
  g.b_rs = b->ndim >= 2 ? b->stride[b->ndim - 2] : b->stride[0];
  g.b_cs = b->ndim >= 2 ? b->stride[b->ndim - 1] : 0;
  g.threaded = threaded;
  return dk__cpu_gemm_run(&g);
}

static void dk__cpu_matmul_task(void *ctx, int64_t b0, int64_t b1) {
  dk__cpu_mm_ctx *m = (dk__cpu_mm_ctx *)ctx;
  int64_t b;
  for (b = b0; b < b1; b++)
    if (dk__cpu_matmul_one(m->c, b, 0) != DK_OK) m->status = DK_ERR_OUT_OF_MEMORY;
}

static dk_status dk__cpu_matmul(const dk_call *c) {
  int64_t M = c->i[0], N = c->i[1], K = c->i[2], batch = c->i[3], b;
  dk__cpu_pick_kernels();
  if (batch > 1 && M * N * K < (1 << 22)) {
    /* many small products: one per task */
    dk__cpu_mm_ctx m;
    m.c = c;
    m.status = DK_OK;
    dk__cpu_parallel(batch, 1 + (1 << 16) / (M * N * K + 1), dk__cpu_matmul_task, &m);
    return m.status;
  }
  for (b = 0; b < batch; b++) {
    dk_status s = dk__cpu_matmul_one(c, b, 1);
    if (s != DK_OK) return s;
  }
  return DK_OK;
}

/* ==== embedding, rope, layout ops ========================================= */

static dk_status dk__cpu_embedding(const dk_call *c) {
  const dk_tensor *o = c->t[0], *tab = c->t[1], *ids = c->t[2];
  const int32_t *id = (const int32_t *)dk__cpu_ptr(ids);
  int64_t n = dk_tensor_numel(ids), D = tab->shape[1], rows = tab->shape[0], i;
  size_t rb = dk__row_bytes(tab->dtype, D);
  float *buf;
  /* every id is checked before anything is written */
  for (i = 0; i < n; i++)
    if (id[i] < 0 || id[i] >= rows)
      return dk__error(DK_ERR_INVALID, "dk_embedding: ids '%s' holds %d at position %lld, outside table '%s' of %lld rows "
                       "(%s); nothing was written", ids->name, id[i], (long long)i, tab->name, (long long)rows,
                       ids->site);
  buf = dk__cpu_scratch(0, (size_t)D);
  if (!buf) return dk__error(DK_ERR_OUT_OF_MEMORY, "dk_embedding: no scratch memory");
  for (i = 0; i < n; i++) {
    dk__cpu_dequant_row(tab->dtype, (const char *)dk__cpu_ptr(tab) + (size_t)id[i] * rb, 0, D, buf);
    dk__cpu_store(o->dtype, dk__cpu_ptr(o), i * D, D, buf);
  }
  return DK_OK;
}

static void dk__cpu_rope_task(void *ctx, int64_t r0, int64_t r1) {
  const dk__cpu_rows *e = (const dk__cpu_rows *)ctx;
  const dk_call *c = e->c;
  const dk_tensor *o = c->t[0], *x = c->t[1];
  const int32_t *pos = (const int32_t *)dk__cpu_ptr(c->t[2]);
  int64_t D = e->cols, H = x->ndim == 2 ? 1 : x->shape[x->ndim - 2], T = c->t[2]->shape[0], r, i;
  int n_rot = (int)c->i[0], neox = c->i[1] == DK_ROPE_NEOX, have = 0;
  float theta = c->f[0], *buf = dk__cpu_scratch(0, (size_t)D), *cs = dk__cpu_scratch(1, (size_t)n_rot);
  int32_t last = 0;
  if (!buf || !cs) return;
  for (r = r0; r < r1; r++) {
    int32_t p = pos[(r / H) % T];
    if (!have || p != last) {
      /* the heads of one token share the angles; the expression is llama2.c's run.c's */
      for (i = 0; i < n_rot / 2; i++) {
        float freq = 1.0f / powf(theta, (float)(2 * i) / (float)n_rot), v = (float)p * freq;
        cs[2 * i] = cosf(v);
        cs[2 * i + 1] = sinf(v);
      }
      have = 1;
      last = p;
    }
    dk__cpu_load(x->dtype, dk__cpu_ptr(x), r * D, 1, D, buf);
    for (i = 0; i < n_rot / 2; i++) {
      int64_t i0 = neox ? i : 2 * i, i1 = neox ? i + n_rot / 2 : 2 * i + 1;
      float a = buf[i0], b = buf[i1];
      buf[i0] = a * cs[2 * i] - b * cs[2 * i + 1];
      buf[i1] = a * cs[2 * i + 1] + b * cs[2 * i];
    }
    dk__cpu_store(o->dtype, dk__cpu_ptr(o), r * D, D, buf);
  }
}
static dk_status dk__cpu_rope(const dk_call *c) { return dk__cpu_rowwise(c, dk__cpu_rope_task); }

static dk_status dk__cpu_concat(const dk_call *c) {
  const dk_tensor *o = c->t[0], *a = c->t[1], *b = c->t[2];
  int dim = (int)c->i[0], i;
  int64_t outer = 1, inner = 1, r;
  size_t es = dk_dtype_block_bytes(o->dtype), ab, bb;
  char *dst = (char *)dk__cpu_ptr(o);
  const char *pa = (const char *)dk__cpu_ptr(a), *pb = (const char *)dk__cpu_ptr(b);
  for (i = 0; i < dim; i++) outer *= o->shape[i];
  for (i = dim + 1; i < o->ndim; i++) inner *= o->shape[i];
  ab = (size_t)(a->shape[dim] * inner) * es;
  bb = (size_t)(b->shape[dim] * inner) * es;
  for (r = 0; r < outer; r++) {
    memcpy(dst, pa + r * ab, ab); dst += ab;
    memcpy(dst, pb + r * bb, bb); dst += bb;
  }
  return DK_OK;
}

/* dst[idx] = src[idx] over any strides, converting dtype; rows along the last
 * dim keep the inner loop tight */
static void dk__cpu_strided_copy(const dk_tensor *d, const int64_t *dstr, const dk_tensor *s, const int64_t *sstr) {
  int nd = d->ndim, i;
  int64_t cols = nd ? d->shape[nd - 1] : 1, rows = cols ? dk_tensor_numel(d) / cols : 0, r;
  float *buf = dk__cpu_scratch(0, (size_t)(cols ? cols : 1));
  if (!buf) return;
  for (r = 0; r < rows; r++) {
    int64_t so = 0, doff = 0, rem = r;
    for (i = nd - 2; i >= 0; i--) {
      int64_t idx = rem % d->shape[i];
      rem /= d->shape[i];
      so += idx * sstr[i];
      doff += idx * dstr[i];
    }
    if (d->dtype == s->dtype && (nd == 0 || (dstr[nd - 1] == 1 && sstr[nd - 1] == 1))) {
      size_t es = dk_dtype_block_bytes(d->dtype);
      memcpy((char *)dk__cpu_ptr(d) + doff * es, (const char *)dk__cpu_ptr(s) + so * es, (size_t)cols * es);
    } else if (d->dtype == DK_I32) {
      const int32_t *sp = (const int32_t *)dk__cpu_ptr(s) + so;
      int32_t *dp = (int32_t *)dk__cpu_ptr(d) + doff;
      int64_t j;
      for (j = 0; j < cols; j++) dp[j * (nd ? dstr[nd - 1] : 1)] = sp[j * (nd ? sstr[nd - 1] : 1)];
    } else {
      int64_t ds = nd ? dstr[nd - 1] : 1, j;
      dk__cpu_load(s->dtype, dk__cpu_ptr(s), so, nd ? sstr[nd - 1] : 1, cols, buf);
      if (ds == 1) dk__cpu_store(d->dtype, dk__cpu_ptr(d), doff, cols, buf);
      else for (j = 0; j < cols; j++) dk__cpu_store(d->dtype, dk__cpu_ptr(d), doff + j * ds, 1, buf + j);
    }
  }
}

static dk_status dk__cpu_copy_op(const dk_call *c) {
  const dk_tensor *d = c->t[0], *s = c->t[1];
  if (dk_tensor_is_contiguous(d) && dk_tensor_is_contiguous(s) && d->dtype == s->dtype) {
    memmove(dk__cpu_ptr(d), dk__cpu_ptr(s), dk_tensor_nbytes(d));
    return DK_OK;
  }
  dk__cpu_strided_copy(d, d->stride, s, s->stride);
  return DK_OK;
}

static dk_status dk__cpu_transpose(const dk_call *c) {
  const dk_tensor *o = c->t[0], *x = c->t[1];
  int64_t sstr[DEVKIT_MAX_DIMS];
  int i;
  for (i = 0; i < x->ndim; i++) sstr[i] = x->stride[c->i[i]];
  dk__cpu_strided_copy(o, o->stride, x, sstr);
  return DK_OK;
}

/* ==== argmax, sampling, attention ========================================== */

/* the first index of the largest value (NaN never wins; 0 when nothing
 * beats -inf). The max first, in eight independent chains of compare-selects
 * (maxss), then the first index that holds it: one compare-and-branch chain
 * was 1.4 ns a value, 375 us of a Gemma 3 step's 262144 logits. */
static int64_t dk__cpu_argmax_row(const float *v, int64_t n) {
  float c[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY}, m;
  int64_t j;
  int i;
  for (j = 0; j + 8 <= n; j += 8)
    for (i = 0; i < 8; i++) c[i] = v[j + i] > c[i] ? v[j + i] : c[i];
  for (; j < n; j++) c[0] = v[j] > c[0] ? v[j] : c[0];
  for (m = c[0], i = 1; i < 8; i++) m = c[i] > m ? c[i] : m;
  if (!(m > -INFINITY)) return 0;
  for (j = 0; v[j] != m; j++) {}
  return j;
}

static int dk__cpu_desc(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? 1 : (x > y ? -1 : 0);
}

/* The documented sampling rule, one row. */
static int64_t dk__cpu_sample_row(float *l, int64_t n, float temp, int top_k, float top_p, float u, float *sorted) {
  int64_t j, cnt;
  float m = -INFINITY, kth = -INFINITY, thr = 0.0f;
  double z = 0.0, acc = 0.0, total = 0.0, target;
  if (!(temp > 0.0f)) return dk__cpu_argmax_row(l, n);
  for (j = 0; j < n; j++) if (l[j] != l[j]) l[j] = -INFINITY;   /* NaN is never kept */
  if (top_k > 0 && top_k < n) {
    memcpy(sorted, l, (size_t)n * 4);
    qsort(sorted, (size_t)n, 4, dk__cpu_desc);
    kth = sorted[top_k - 1];
  }
  for (j = 0; j < n; j++) {
    l[j] = l[j] >= kth ? l[j] / temp : -INFINITY;
    m = l[j] > m ? l[j] : m;
  }
  /* nothing finite to weigh: 0 when every logit is -inf or NaN, else the
   * first whose logit / temperature is +inf (dk_sample's degenerate rule) */
  if (!(m > -INFINITY) || m == INFINITY) return dk__cpu_argmax_row(l, n);
  for (j = 0; j < n; j++) { l[j] = l[j] == -INFINITY ? 0.0f : expf(l[j] - m); z += l[j]; }
  for (j = 0; j < n; j++) l[j] = (float)(l[j] / z);
  if (top_p < 1.0f) {
    for (j = 0, cnt = 0; j < n; j++) if (l[j] > 0.0f) sorted[cnt++] = l[j];
    qsort(sorted, (size_t)cnt, 4, dk__cpu_desc);
    for (j = 0; j < cnt; j++) {
      acc += sorted[j];
      thr = sorted[j];
      if (acc >= top_p) break;
    }
    for (j = 0; j < n; j++) if (l[j] < thr) l[j] = 0.0f;
  }
  for (j = 0; j < n; j++) total += l[j];
  target = (double)u * total;
  acc = 0.0;
  for (j = 0; j < n; j++) {
    if (l[j] <= 0.0f) continue;
    acc += l[j];
    if (acc > target) return j;
  }
  for (j = n - 1; j > 0 && l[j] <= 0.0f; j--) {}
  return j;
}

static dk_status dk__cpu_pick(const dk_call *c) {
  const dk_tensor *o = c->t[0], *x = c->t[1];
  int64_t n = x->shape[x->ndim - 1], rows = dk_tensor_numel(x) / n, r;
  float *buf = dk__cpu_scratch(0, (size_t)n), *tmp = dk__cpu_scratch(1, (size_t)n);
  int32_t *out = (int32_t *)dk__cpu_ptr(o);
  if (!buf || !tmp) return dk__error(DK_ERR_OUT_OF_MEMORY, "%s: no scratch memory", dk__op_name(c->op));
  for (r = 0; r < rows; r++) {
    const float *v = buf;
    /* argmax reads f32 in place: the copy cost as much as the search */
    if (c->op == DK_OP_ARGMAX && x->dtype == DK_F32) v = (const float *)dk__cpu_ptr(x) + r * n;
    else dk__cpu_load(x->dtype, dk__cpu_ptr(x), r * n, 1, n, buf);
    if (c->op == DK_OP_ARGMAX) out[r] = (int32_t)dk__cpu_argmax_row(v, n);
    else out[r] = (int32_t)dk__cpu_sample_row(buf, n, c->f[0], (int)c->i[0], c->f[1], dk_sample_uniform(c->u, r), tmp);
  }
  return DK_OK;
}

/* Heads of a few dimensions (stories260K's 8): a call per position would
 * cost more than its arithmetic, so the scores come a query at a time over
 * up to 64 positions per call, the key rows taking the queries' place in
 * dk__cpu_dots (the same products and sums, so the same bits), and the
 * weighted sum of V rows is a plain loop. sc[h * ss + s - s0] for the
 * group's nh queries qb[h * D] over positions [s0, s1) of the rows at
 * kp + s * ks. */
#define DK_CPU_ATTN_SMALL_D 16
static void dk__cpu_scores_small(const float *qb, int64_t nh, int64_t D, const float *kp, int64_t ks, int64_t s0,
                                 int64_t s1, float scale, float *sc, int64_t ss) {
  int64_t h, s;
  for (h = 0; h < nh; h++)
    for (s = s0; s < s1; s += 64) {
      float d[64];
      int n = (int)(s1 - s < 64 ? s1 - s : 64), i;
      dk__cpu_dots(kp + s * ks, ks, n, qb + h * D, D, d);
      for (i = 0; i < n; i++) sc[h * ss + s - s0 + i] = d[i] * scale;
    }
}
/* ob[h * Dv + j] += sum over s in [s0, s1) of p[h * ps + s - s0] * vp[s * vs + j] */
static void dk__cpu_wsum_small(float *ob, int64_t nh, int64_t Dv, const float *vp, int64_t vs, int64_t s0, int64_t s1,
                               const float *p, int64_t ps) {
  int64_t h, s, j;
  if (Dv == 8) {
    /* a fixed width: the row of sums stays in registers */
    for (h = 0; h < nh; h++) {
      float a[8];
      memcpy(a, ob + h * 8, sizeof a);
      for (s = s0; s < s1; s++) {
        const float w = p[h * ps + s - s0], *vr = vp + s * vs;
        for (j = 0; j < 8; j++) a[j] += w * vr[j];
      }
      memcpy(ob + h * 8, a, sizeof a);
    }
    return;
  }
  for (s = s0; s < s1; s++) {
    const float *vr = vp + s * vs;
    for (h = 0; h < nh; h++) {
      const float w = p[h * ps + s - s0];
      float *oh = ob + h * Dv;
      for (j = 0; j < Dv; j++) oh[j] += w * vr[j];
    }
  }
}

/* attention's weighted sum of f32 V rows for heads of Dv values: a fixed
 * width of 8 in registers for small heads, else the class's kernel (NULL:
 * the caller's axpy per position and head) */
static dk__cpu_wsum_fn dk__cpu_wsum_for(int64_t Dv) {
  return Dv <= DK_CPU_ATTN_SMALL_D ? dk__cpu_wsum_small : dk__cpu_k->wsum;
}

/* query t's keys are [0, lim): the causal offset's, or with positions
 * (dk_attention_pos) those up to positions[t] */
static int64_t dk__cpu_att_lim(const dk_call *c, int64_t t, int64_t S) {
  if (c->t[4]) {
    int64_t p = ((const int32_t *)dk__cpu_ptr(c->t[4]))[t];
    return p < 0 ? 0 : p + 1 < S ? p + 1 : S;
  }
  if (c->i[0] >= 0) return t + c->i[0] + 1 < S ? t + c->i[0] + 1 : S;
  return S;
}
/* and from key beg(lim) on: dk_attention_window's last i[1] keys, else 0 */
static int64_t dk__cpu_att_beg(const dk_call *c, int64_t lim) { return c->i[1] > 0 && lim > c->i[1] ? lim - c->i[1] : 0; }

/* One task per (token, KV head): each K and V row is read (and converted)
 * once for all the query heads that share it. */
static void dk__cpu_attention_task(void *ctx, int64_t r0, int64_t r1) {
  const dk__cpu_rows *e = (const dk__cpu_rows *)ctx;
  const dk_call *c = e->c;
  const dk_tensor *o = c->t[0], *q = c->t[1], *k = c->t[2], *v = c->t[3];
  int64_t Hq = q->shape[1], D = q->shape[2], S = k->shape[0], Hkv = k->shape[1], Dv = v->shape[2];
  int64_t grp = Hq / Hkv, r, s, j, h;
  int kf32 = k->dtype == DK_F32;   /* an f32 cache is read in place; others are converted per row */
  float *qb = dk__cpu_scratch(0, (size_t)(grp * D)), *kb = dk__cpu_scratch(1, (size_t)(D > Dv ? D : Dv));
  /* sc: the group's scores, then their sums of exponentials */
  float *sc = dk__cpu_scratch(2, (size_t)(grp * (S ? S : 1) + grp)), *ob = dk__cpu_scratch(3, (size_t)(grp * Dv));
  const float *kp = (const float *)dk__cpu_ptr(k), *vp = (const float *)dk__cpu_ptr(v);
  float *zs = sc + grp * S;
  const dk__cpu_wsum_fn wsum = dk__cpu_wsum_for(Dv);
  if (!qb || !kb || !sc || !ob) return;
  for (r = r0; r < r1; r++) {
    int64_t t = r / Hkv, g = r % Hkv, lim = dk__cpu_att_lim(c, t, S), beg = dk__cpu_att_beg(c, lim);
    dk__cpu_load(q->dtype, dk__cpu_ptr(q), (t * Hq + g * grp) * D, 1, grp * D, qb);
    /* scores of keys [beg, lim) at sc[h * S + s]: sc + beg holds them from 0 */
    if (kf32 && D <= DK_CPU_ATTN_SMALL_D)
      dk__cpu_scores_small(qb, grp, D, kp + g * D, Hkv * D, beg, lim, c->f[0], sc + beg, S);
    else
      for (s = beg; s < lim; s++) {
        const float *kr = kp + (s * Hkv + g) * D;
        if (!kf32) { dk__cpu_load(k->dtype, dk__cpu_ptr(k), (s * Hkv + g) * D, 1, D, kb); kr = kb; }
        for (h = 0; h < grp; h += 64) {   /* the group's queries against one read of the key row */
          float d[64];
          int nq = (int)(grp - h < 64 ? grp - h : 64), i;
          dk__cpu_dots(qb + h * D, D, nq, kr, D, d);
          for (i = 0; i < nq; i++) sc[(h + i) * S + s] = d[i] * c->f[0];
        }
      }
    /* the numerators weigh V; their sum divides the Dv outputs, not the S weights */
    for (h = 0; h < grp; h++) zs[h] = (float)dk__cpu_exp_shift(sc + h * S + beg, lim - beg, NULL);
    for (j = 0; j < grp * Dv; j++) ob[j] = 0.0f;
    if (kf32 && wsum)
      wsum(ob, grp, Dv, vp + g * Dv, Hkv * Dv, beg, lim, sc + beg, S);
    else
      for (s = beg; s < lim; s++) {
        const float *vr = vp + (s * Hkv + g) * Dv;
        if (!kf32) { dk__cpu_load(v->dtype, dk__cpu_ptr(v), (s * Hkv + g) * Dv, 1, Dv, kb); vr = kb; }
        for (h = 0; h < grp; h++) dk__cpu_axpy(ob + h * Dv, sc[h * S + s], vr, Dv);
      }
    for (h = 0; h < grp; h++)   /* no key seen (a negative position): zeros */
      for (j = 0; j < Dv; j++) ob[h * Dv + j] = zs[h] > 0.0f ? (float)((double)ob[h * Dv + j] / zs[h]) : 0.0f;
    dk__cpu_store(o->dtype, dk__cpu_ptr(o), (t * Hq + g * grp) * Dv, grp * Dv, ob);
  }
}

/* Decode (a few tokens over a cache of 32 positions or more): split the
 * positions into chunks instead. A task takes one token and one chunk for
 * every head, so it reads whole cache rows [Hkv, D] front to back, where a
 * (token, head) task reads D of every Hkv*D elements. Each chunk leaves its
 * max, its sum of exponentials and its unnormalized output; the merge
 * rescales them (the split-softmax identity). From 32 positions, not 128:
 * the (token, head) tasks convert an f16 cache a row at a time and weigh V
 * by an axpy per position and head; a 100M model's decode attention (12
 * heads, 3 KV heads of 64, f16 cache), one thread, at 64 positions 27 ->
 * 12.6 us, at 100 45 -> 20 (f32 cache 21 -> 17); q2_K decode 112-124 ->
 * 133-167 tok/s. */
typedef struct {
  const dk_call *c;
  int64_t C, CS;      /* chunks per token, positions per chunk */
  int64_t SB;         /* positions per block within a chunk (cache rows converted at once) */
  float *part;        /* [T][C][Hq][Dv + 2]: output, max, sum */
} dk__cpu_attn_split;

static void dk__cpu_attention_split_task(void *ctx, int64_t r0, int64_t r1) {
  dk__cpu_attn_split *e = (dk__cpu_attn_split *)ctx;
  const dk_call *c = e->c;
  const dk_tensor *q = c->t[1], *k = c->t[2], *v = c->t[3];
  int64_t Hq = q->shape[1], D = q->shape[2], S = k->shape[0], Hkv = k->shape[1], Dv = v->shape[2];
  int64_t grp = Hq / Hkv, CS = e->CS, SB = e->SB, r, s, a, b, h, j;
  int kf32 = k->dtype == DK_F32, vf32 = v->dtype == DK_F32;
  float *qb = dk__cpu_scratch(0, (size_t)(Hq * D)), *rb = dk__cpu_scratch(1, (size_t)(SB * Hkv * (D > Dv ? D : Dv)));
  float *sc = dk__cpu_scratch(2, (size_t)(Hq * CS)), *ob = dk__cpu_scratch(3, (size_t)(Hq * Dv));
  const dk__cpu_wsum_fn wsum = dk__cpu_wsum_for(Dv);
  if (!qb || !rb || !sc || !ob) return;   /* dk__cpu_run_op reports it */
  for (r = r0; r < r1; r++) {
    int64_t t = r / e->C, s0 = (r % e->C) * CS, lim = dk__cpu_att_lim(c, t, S), s1, beg = dk__cpu_att_beg(c, lim);
    float *pt = e->part + r * Hq * (Dv + 2);
    s1 = s0 + CS < lim ? s0 + CS : lim;
    s0 = s0 > beg ? s0 : beg;   /* the chunk's keys in the window; none when s0 >= s1 */
    for (j = 0; j < Hq * Dv; j++) ob[j] = 0.0f;
    if (s0 < s1) dk__cpu_load(q->dtype, dk__cpu_ptr(q), t * Hq * D, 1, Hq * D, qb);
    /* positions [a, b) of the chunk at a time: an f16/bf16 cache is
     * converted a block of SB rows at once (one vector pass, the block
     * staying in L2), an f32 one read in place; the same kernels after */
    for (a = s0; a < s1; a = b) {
      const float *kr = (const float *)dk__cpu_ptr(k) + a * Hkv * D;
      b = a + SB < s1 ? a + SB : s1;
      if (!kf32) { dk__cpu_load(k->dtype, dk__cpu_ptr(k), a * Hkv * D, 1, (b - a) * Hkv * D, rb); kr = rb; }
      if (D <= DK_CPU_ATTN_SMALL_D) {
        for (h = 0; h < Hkv; h++)
          dk__cpu_scores_small(qb + h * grp * D, grp, D, kr + h * D, Hkv * D, 0, b - a, c->f[0],
                               sc + h * grp * CS + a - s0, CS);
        continue;
      }
      /* a query against 64 key rows a call: the dots' eight-row form, eight
         independent chains, where a key row against its group's queries
         (four in GQA) ran four chains of D/8 FMAs each, latency-bound, and
         a call per row: 45 % of a 512-position decode attention. The same
         products and tree either way (dk__cpu_dots), so the same bits */
      for (s = 0; s < b - a; s += 64) {
        float d[64];
        const int ns = (int)(b - a - s < 64 ? b - a - s : 64);
        int i;
        for (h = 0; h < Hq; h++) {
          dk__cpu_dots(kr + s * Hkv * D + h / grp * D, Hkv * D, ns, qb + h * D, D, d);
          for (i = 0; i < ns; i++) sc[h * CS + a - s0 + s + i] = d[i] * c->f[0];
        }
      }
    }
    for (h = 0; h < Hq; h++) {
      float *ph = pt + h * (Dv + 2);
      ph[Dv + 1] = (float)dk__cpu_exp_shift(sc + h * CS, s1 - s0, &ph[Dv]);
    }
    for (a = s0; a < s1; a = b) {
      const float *vr = (const float *)dk__cpu_ptr(v) + a * Hkv * Dv;
      b = a + SB < s1 ? a + SB : s1;
      if (!vf32) { dk__cpu_load(v->dtype, dk__cpu_ptr(v), a * Hkv * Dv, 1, (b - a) * Hkv * Dv, rb); vr = rb; }
      if (wsum)
        for (h = 0; h < Hkv; h++)
          wsum(ob + h * grp * Dv, grp, Dv, vr + h * Dv, Hkv * Dv, 0, b - a, sc + h * grp * CS + a - s0, CS);
      else
        for (s = 0; s < b - a; s++)
          for (h = 0; h < Hq; h++) dk__cpu_axpy(ob + h * Dv, sc[h * CS + a - s0 + s], vr + s * Hkv * Dv + h / grp * Dv, Dv);
    }
    for (h = 0; h < Hq; h++) memcpy(pt + h * (Dv + 2), ob + h * Dv, (size_t)Dv * sizeof(float));
  }
}

static dk_status dk__cpu_attention_split(const dk_call *c) {
  const dk_tensor *o = c->t[0], *q = c->t[1], *k = c->t[2], *v = c->t[3];
  int64_t T = q->shape[0], Hq = q->shape[1], S = k->shape[0], Dv = v->shape[2], D = q->shape[2], t, h, ch, j;
  int64_t want = (int64_t)(dk__cpu_pool.nthreads > 1 ? dk__cpu_pool.nthreads : 1) * 4;   /* chunks per token */
  dk__cpu_attn_split e;
  float *out;
  e.c = c;
  e.CS = (S + want - 1) / want < 64 ? 64 : (S + want - 1) / want;
  e.C = (S + e.CS - 1) / e.CS;
  /* 16K floats (64 KB) of cache rows a block: they stay in L2 between
   * the conversion and the kernels */
  e.SB = k->shape[1] * (D > Dv ? D : Dv);   /* empty heads pass through */
  e.SB = e.SB > 0 ? 16384 / e.SB : e.CS;
  e.SB = e.SB < 8 ? 8 : e.SB > e.CS ? e.CS : e.SB;
  /* per-thread scratch, not malloc: this runs once per layer per token */
  e.part = dk__cpu_scratch(4, (size_t)(T * e.C * Hq * (Dv + 2)));
  out = dk__cpu_scratch(5, (size_t)(Hq * Dv));
  if (!e.part || !out) {
    return dk__error(DK_ERR_OUT_OF_MEMORY, "dk_attention: no host memory for %lld partial results",
                     (long long)(T * e.C * Hq));
  }
  dk__cpu_parallel(T * e.C, 1, dk__cpu_attention_split_task, &e);
  for (t = 0; t < T && !dk__cpu_short; t++) {   /* not from partial results a task could not make */
    for (h = 0; h < Hq; h++) {
      float M = -INFINITY, *oh = out + h * Dv;
      double Z = 0.0;
      for (ch = 0; ch < e.C; ch++) {
        float m = e.part[((t * e.C + ch) * Hq + h) * (Dv + 2) + Dv];
        M = m > M ? m : M;
      }
      for (j = 0; j < Dv; j++) oh[j] = 0.0f;
      for (ch = 0; ch < e.C; ch++) {
        const float *pc = e.part + ((t * e.C + ch) * Hq + h) * (Dv + 2);
        float w;
        if (pc[Dv] == -INFINITY) continue;   /* an empty chunk (past the causal limit) */
        w = expf(pc[Dv] - M);
        Z += (double)pc[Dv + 1] * w;
        dk__cpu_axpy(oh, w, pc, Dv);
      }
      for (j = 0; j < Dv; j++) oh[j] = Z > 0.0 ? (float)(oh[j] / Z) : 0.0f;
    }
    dk__cpu_store(o->dtype, dk__cpu_ptr(o), t * Hq * Dv, Hq * Dv, out);
  }
  return DK_OK;
}

static dk_status dk__cpu_attention(const dk_call *c) {
  dk__cpu_rows e;
  const dk_tensor *q = c->t[1], *k = c->t[2];
  dk_tensor kn, vn;
  dk_call cn;
  if (c->t[4]) {
    /* positions: the keys any query sees, [0, most), as if k and v were
     * that long (the work and scratch follow the positions, not the cache) */
    int64_t t, most = 0;
    for (t = 0; t < q->shape[0]; t++) {
      int64_t l = dk__cpu_att_lim(c, t, k->shape[0]);
      most = l > most ? l : most;
    }
    kn = *k; vn = *c->t[3];
    kn.shape[0] = vn.shape[0] = most;
    cn = *c;
    cn.t[2] = &kn; cn.t[3] = &vn;
    c = &cn;
    k = &kn;
  }
  if (q->shape[0] <= 8 && k->shape[0] >= 32) return dk__cpu_attention_split(c);
  if (dk__cpu_fa_takes(c)) return dk__cpu_fa_run(c);
  e.c = c;
  e.rows = q->shape[0] * k->shape[1];
  e.cols = q->shape[2];
  dk__cpu_parallel(e.rows, 1 + 16384 / (k->shape[0] * q->shape[2] * (q->shape[1] / k->shape[1]) + 1), dk__cpu_attention_task, &e);
  return DK_OK;
}

/* ==== reductions over axes, softmax on an axis, where (issue 12) ========== */

static float dk__cpu_get1(dk_dtype dt, const void *p, int64_t i) {
  switch (dt) {
  case DK_F32: return ((const float *)p)[i];
  case DK_F16: return dk_f16_to_f32(((const uint16_t *)p)[i]);
  case DK_BF16: return dk_bf16_to_f32(((const uint16_t *)p)[i]);
  default: return (float)((const int32_t *)p)[i];
  }
}

typedef struct { const dk_call *c; dk__red_lay l; } dk__cpu_red;

/* x's element offset of output element o (row-major over the kept dims) */
static int64_t dk__cpu_kept_off(const dk__red_lay *l, int64_t o) {
  int64_t off = 0;
  int i;
  for (i = l->nk - 1; i >= 0; i--) {
    off += (o % l->ks[i]) * l->kx[i];
    o /= l->ks[i];
  }
  return off;
}

/* the next reduced element's offset: an odometer over the reduced dims */
#define DK__CPU_RED_STEP(l, idx, off)                                          \
  do {                                                                         \
    int k_;                                                                    \
    for (k_ = (l)->nr - 1; k_ >= 0; k_--) {                                    \
      (off) += (l)->rx[k_];                                                    \
      if (++(idx)[k_] < (l)->rs[k_]) break;                                    \
      (off) -= (l)->rs[k_] * (l)->rx[k_];                                      \
      (idx)[k_] = 0;                                                           \
    }                                                                          \
  } while (0)

static void dk__cpu_reduce_task(void *ctx, int64_t o0, int64_t o1) {
  const dk__cpu_red *e = (const dk__cpu_red *)ctx;
  const dk__red_lay *l = &e->l;
  const dk_call *c = e->c;
  const dk_tensor *out = c->t[0], *x = c->t[1];
  const void *xp = dk__cpu_ptr(x);
  int64_t o, r;
  for (o = o0; o < o1; o++) {
    int64_t base = dk__cpu_kept_off(l, o), idx[4] = {0, 0, 0, 0}, off = 0;
    if (c->op == DK_OP_ARGMAX_AXIS || c->op == DK_OP_ARGMIN_AXIS) {
      /* key: the value (argmin: negated), NaN as -inf; the first or last
       * index of the largest key */
      float best = 0.0f;
      int64_t bi = 0;
      int neg = c->op == DK_OP_ARGMIN_AXIS, last = c->i[2] != 0;
      for (r = 0; r < l->nred; r++) {
        float v = dk__cpu_get1(x->dtype, xp, base + off);
        v = v != v ? -INFINITY : (neg ? -v : v);
        if (r == 0 || v > best || (last && v == best)) { best = v; bi = r; }
        DK__CPU_RED_STEP(l, idx, off);
      }
      ((int32_t *)dk__cpu_ptr(out))[o] = (int32_t)bi;
    } else if (c->op == DK_OP_REDUCE_MAX || c->op == DK_OP_REDUCE_MIN) {
      float m = dk__cpu_get1(x->dtype, xp, base);
      int mx = c->op == DK_OP_REDUCE_MAX;
      for (r = 0; r < l->nred; r++) {
        float v = dk__cpu_get1(x->dtype, xp, base + off);
        if (v != v || m != m) m = v != v ? v : m;   /* NaN wins, and stays */
        else if (mx ? v > m : v < m) m = v;
        DK__CPU_RED_STEP(l, idx, off);
      }
      dk__cpu_store(out->dtype, dk__cpu_ptr(out), o, 1, &m);
    } else {
      double sum = 0.0;
      float v;
      for (r = 0; r < l->nred; r++) {
        sum += dk__cpu_get1(x->dtype, xp, base + off);
        DK__CPU_RED_STEP(l, idx, off);
      }
      v = (float)(c->op == DK_OP_REDUCE_MEAN ? sum / (double)l->nred : sum);
      dk__cpu_store(out->dtype, dk__cpu_ptr(out), o, 1, &v);
    }
  }
}

static dk_status dk__cpu_reduce(const dk_call *c) {
  dk__cpu_red e;
  e.c = c;
  dk__red_layout(c->t[1], (uint32_t)c->i[0], &e.l);
  dk__cpu_parallel(e.l.nout, 1 + 16384 / (e.l.nred > 0 ? e.l.nred : 1), dk__cpu_reduce_task, &e);
  return DK_OK;
}

/* softmax / log-softmax of each line along the axis: the line is gathered
 * into scratch, and written back at the same offsets of out (x's shape) */
static void dk__cpu_softmax_axis_task(void *ctx, int64_t o0, int64_t o1) {
  const dk__cpu_red *e = (const dk__cpu_red *)ctx;
  const dk__red_lay *l = &e->l;
  const dk_call *c = e->c;
  const dk_tensor *out = c->t[0], *x = c->t[1];
  int64_t n = l->nred, st = l->nr ? l->rx[0] : 1, o, j;
  float *buf = dk__cpu_scratch(0, (size_t)(n ? n : 1));
  if (!buf) return;
  for (o = o0; o < o1; o++) {
    int64_t base = dk__cpu_kept_off(l, o);
    double m = -INFINITY, z = 0.0, lz;
    for (j = 0; j < n; j++) {
      buf[j] = dk__cpu_get1(x->dtype, dk__cpu_ptr(x), base + j * st);
      m = buf[j] > m ? buf[j] : m;
    }
    /* all -inf: shift by 0, the sum is 0; a NaN makes the sum NaN */
    if (m == -INFINITY) m = 0.0;
    for (j = 0; j < n; j++) z += exp((double)buf[j] - m);
    lz = log(z);
    for (j = 0; j < n; j++) {
      float v;
      if (c->op == DK_OP_LOG_SOFTMAX) v = z == 0.0 ? -INFINITY : (float)(((double)buf[j] - m) - lz);
      else v = z == 0.0 ? 0.0f : (float)(exp((double)buf[j] - m) / z);
      dk__cpu_store(out->dtype, dk__cpu_ptr(out), base + j * st, 1, &v);
    }
  }
}

static dk_status dk__cpu_softmax_axis(const dk_call *c) {
  dk__cpu_red e;
  e.c = c;
  dk__red_layout(c->t[1], (uint32_t)c->i[0], &e.l);
  if (e.l.nred == 0) return DK_OK;
  dk__cpu_parallel(e.l.nout, 1 + 8192 / e.l.nred, dk__cpu_softmax_axis_task, &e);
  return DK_OK;
}

/* cumsum along the axis: each line in order (reverse: from its end), in double */
static void dk__cpu_cumsum_task(void *ctx, int64_t o0, int64_t o1) {
  const dk__cpu_red *e = (const dk__cpu_red *)ctx;
  const dk__red_lay *l = &e->l;
  const dk_call *c = e->c;
  const dk_tensor *out = c->t[0], *x = c->t[1];
  int64_t n = l->nred, st = l->nr ? l->rx[0] : 1, o, j;
  int excl = c->i[1] != 0, rev = c->i[2] != 0;
  for (o = o0; o < o1; o++) {
    int64_t base = dk__cpu_kept_off(l, o);
    double acc = 0.0;
    for (j = 0; j < n; j++) {
      int64_t e2 = base + (rev ? n - 1 - j : j) * st;
      double v = dk__cpu_get1(x->dtype, dk__cpu_ptr(x), e2);
      float y;
      if (!excl) acc += v;
      y = (float)acc;
      if (excl) acc += v;
      dk__cpu_store(out->dtype, dk__cpu_ptr(out), e2, 1, &y);
    }
  }
}

static dk_status dk__cpu_cumsum(const dk_call *c) {
  dk__cpu_red e;
  e.c = c;
  dk__red_layout(c->t[1], (uint32_t)c->i[0], &e.l);
  if (e.l.nred == 0) return DK_OK;
  dk__cpu_parallel(e.l.nout, 1 + 8192 / e.l.nred, dk__cpu_cumsum_task, &e);
  return DK_OK;
}

/* top-k: rank (key desc, index asc), key = NaN ? -inf : (largest ? x : -x) */
typedef struct { float key; int32_t idx; } dk__cpu_kv;
static int dk__cpu_kv_cmp(const void *pa, const void *pb) {
  const dk__cpu_kv *a = (const dk__cpu_kv *)pa, *b = (const dk__cpu_kv *)pb;
  if (a->key != b->key) return a->key > b->key ? -1 : 1;
  return a->idx < b->idx ? -1 : (a->idx > b->idx);
}

static dk_status dk__cpu_topk(const dk_call *c) {
  const dk_tensor *vo = c->t[0], *io = c->t[1], *x = c->t[2];
  int64_t n = x->shape[x->ndim - 1], k = c->i[0], rows = n ? dk_tensor_numel(x) / n : 0, r, j;
  int largest = c->i[1] != 0;
  dk__cpu_kv *kv;
  if (k == 0 || rows == 0) return DK_OK;
  kv = (dk__cpu_kv *)malloc((size_t)n * sizeof *kv);
  if (!kv) return dk__call_error(DK_ERR_OUT_OF_MEMORY, "", "no host memory for %lld sort keys", (long long)n);
  for (r = 0; r < rows; r++) {
    for (j = 0; j < n; j++) {
      float v = dk__cpu_get1(x->dtype, dk__cpu_ptr(x), r * n + j);
      kv[j].key = v != v ? -INFINITY : (largest ? v : -v);
      kv[j].idx = (int32_t)j;
    }
    qsort(kv, (size_t)n, sizeof *kv, dk__cpu_kv_cmp);
    for (j = 0; j < k; j++) {
      float v = dk__cpu_get1(x->dtype, dk__cpu_ptr(x), r * n + kv[j].idx);
      dk__cpu_store(vo->dtype, dk__cpu_ptr(vo), r * k + j, 1, &v);
      ((int32_t *)dk__cpu_ptr(io))[r * k + j] = kv[j].idx;
    }
  }
  free(kv);
  return DK_OK;
}

/* index_select: out [outer, nids, inner] from x [outer, n, inner]; every id
 * is checked before anything is written */
/* dk_index_select (out [outer, nids, inner] from x [outer, n, inner]) and
 * dk_index_copy (dst [outer, n, inner] from src [outer, nids, inner]): every
 * id is checked before anything is written */
static dk_status dk__cpu_gather(const dk_call *c) {
  const dk_tensor *o = c->t[0], *x = c->t[1], *ids = c->t[2];
  const int scatter = c->op == DK_OP_INDEX_COPY;
  const dk_tensor *tab = scatter ? o : x;
  int a = (int)c->i[0], i;
  int64_t n = tab->shape[a], outer = 1, inner = 1, nids = dk_tensor_numel(ids), q, k;
  const int32_t *id = (const int32_t *)dk__cpu_ptr(ids);
  float *buf;
  for (i = 0; i < a; i++) outer *= tab->shape[i];
  for (i = a + 1; i < tab->ndim; i++) inner *= tab->shape[i];
  for (k = 0; k < nids; k++)
    if (id[k] < -n || id[k] >= n)
      return dk__call_error(DK_ERR_INVALID, "ids count from 0, or from the end when negative (-1 is the last)",
                            "ids '%s' holds %d at position %lld, outside [-%lld, %lld) for axis %d of '%s' '%s' (size "
                            "%lld); nothing was written", ids->name, (int)id[k], (long long)k, (long long)n, (long long)n,
                            a, scatter ? "dst" : "x", tab->name, (long long)n);
  buf = dk__cpu_scratch(0, (size_t)(inner ? inner : 1));
  if (!buf) return dk__call_error(DK_ERR_OUT_OF_MEMORY, "", "no scratch memory");
  for (q = 0; q < outer; q++)
    for (k = 0; k < nids; k++) {
      int64_t row = (id[k] < 0 ? id[k] + n : id[k]) + q * n, at = q * nids + k;
      dk__cpu_load(x->dtype, dk__cpu_ptr(x), (scatter ? at : row) * inner, 1, inner, buf);
      dk__cpu_store(o->dtype, dk__cpu_ptr(o), (scatter ? row : at) * inner, inner, buf);
    }
  return DK_OK;
}

typedef struct {
  const dk_call *c;
  int64_t rows, cols;
  int64_t str[3][DEVKIT_MAX_DIMS];   /* mask, a, b: broadcast strides aligned to out */
} dk__cpu_where_ctx;

static void dk__cpu_where_task(void *ctx, int64_t r0, int64_t r1) {
  const dk__cpu_where_ctx *e = (const dk__cpu_where_ctx *)ctx;
  const dk_call *c = e->c;
  const dk_tensor *o = c->t[0], *m = c->t[1], *a = c->t[2], *b = c->t[3];
  int nd = o->ndim;
  int64_t ms = nd ? e->str[0][nd - 1] : 0, as = nd ? e->str[1][nd - 1] : 0, bs = nd ? e->str[2][nd - 1] : 0, r, j;
  float *x = dk__cpu_scratch(0, (size_t)e->cols), *y = dk__cpu_scratch(1, (size_t)e->cols);
  if (!x || !y) return;
  for (r = r0; r < r1; r++) {
    const int32_t *mp = (const int32_t *)dk__cpu_ptr(m) + dk__cpu_bcast_off(o, e->str[0], r);
    dk__cpu_load(a->dtype, dk__cpu_ptr(a), dk__cpu_bcast_off(o, e->str[1], r), as, e->cols, x);
    dk__cpu_load(b->dtype, dk__cpu_ptr(b), dk__cpu_bcast_off(o, e->str[2], r), bs, e->cols, y);
    for (j = 0; j < e->cols; j++)
      if (!mp[j * ms]) x[j] = y[j];
    dk__cpu_store(o->dtype, dk__cpu_ptr(o), r * e->cols, e->cols, x);
  }
}

static dk_status dk__cpu_where(const dk_call *c) {
  dk__cpu_where_ctx e;
  const dk_tensor *o = c->t[0];
  int k;
  memset(&e, 0, sizeof e);
  e.c = c;
  e.cols = o->ndim ? o->shape[o->ndim - 1] : 1;
  if (e.cols == 0) return DK_OK;
  e.rows = dk_tensor_numel(o) / e.cols;
  for (k = 0; k < 3; k++) dk__cpu_bcast_strides(o, c->t[1 + k], e.str[k]);
  dk__cpu_parallel(e.rows, 1 + 16384 / e.cols, dk__cpu_where_task, &e);
  return DK_OK;
}

/* ==== the table =========================================================== */

static dk_backend_impl dk__cpu_impl_table;
static dk_op_fn dk__cpu_opfn[DK_OP_COUNT];

/* Every CPU op runs through here. A piece of work that finds no scratch
 * memory stops early (dk__cpu_scratch notes it in dk__cpu_short); the op
 * then returns out-of-memory instead of an output it did not write. */
static dk_status dk__cpu_run_op(const dk_call *c) {
  dk_status s;
  dk__cpu_short = 0;
  s = dk__cpu_opfn[c->op](c);
  if (s == DK_OK && dk__cpu_short)
    s = dk__call_error(DK_ERR_OUT_OF_MEMORY, "free some tensors, or run the op on fewer rows at a time",
                       "out of memory on the CPU: a worker thread could not get %zu bytes of scratch; the output is incomplete",
                       dk__cpu_short);
  return s;
}

static const dk_backend_impl *dk__cpu_backend(void) {
  dk_backend_impl *b = &dk__cpu_impl_table;
  int op;
  if (b->probe) return b;
  b->kind = DK_CPU;
  b->probe = dk__cpu_probe;
  b->properties = dk__cpu_properties;
  b->open_device = dk__cpu_open;
  b->close_all = dk__cpu_close_all;
  b->alloc = dk__cpu_alloc;
  b->release = dk__cpu_release;
  b->upload = dk__cpu_upload;
  b->download = dk__cpu_download;
  b->copy = dk__cpu_copy;
  b->sync = dk__cpu_sync;
  for (op = DK_OP_ADD; op <= DK_OP_DIV; op++) b->ops[op] = dk__cpu_binary;
  for (op = DK_OP_SCALE; op <= DK_OP_SWIGLU; op++) b->ops[op] = dk__cpu_unary;
  b->ops[DK_OP_RMSNORM] = b->ops[DK_OP_LAYERNORM] = dk__cpu_norm;
  b->ops[DK_OP_SOFTMAX] = b->ops[DK_OP_SOFTMAX_MASKED] = dk__cpu_softmax;
  b->ops[DK_OP_MATMUL] = dk__cpu_matmul;
  b->ops[DK_OP_LINEAR] = dk__cpu_linear;
  b->ops[DK_OP_EMBEDDING] = dk__cpu_embedding;
  b->ops[DK_OP_ROPE] = dk__cpu_rope;
  b->ops[DK_OP_CONCAT] = dk__cpu_concat;
  b->ops[DK_OP_COPY] = dk__cpu_copy_op;
  b->ops[DK_OP_TRANSPOSE] = dk__cpu_transpose;
  b->ops[DK_OP_ARGMAX] = b->ops[DK_OP_SAMPLE] = dk__cpu_pick;
  b->ops[DK_OP_ATTENTION] = b->ops[DK_OP_ATTENTION_POS] = dk__cpu_attention;
  b->ops[DK_OP_ATTENTION_WINDOW] = b->ops[DK_OP_ATTENTION_POS_WINDOW] = dk__cpu_attention;
  b->ops[DK_OP_INDEX_COPY] = dk__cpu_gather;
  for (op = DK_OP_REDUCE_SUM; op <= DK_OP_ARGMIN_AXIS; op++) b->ops[op] = dk__cpu_reduce;
  for (op = DK_OP_SQRT; op <= DK_OP_POW_SCALAR; op++) b->ops[op] = dk__cpu_unary;
  b->ops[DK_OP_POW] = dk__cpu_binary;
  b->ops[DK_OP_SOFTMAX_AXIS] = b->ops[DK_OP_LOG_SOFTMAX] = dk__cpu_softmax_axis;
  b->ops[DK_OP_WHERE] = dk__cpu_where;
  b->ops[DK_OP_CUMSUM] = dk__cpu_cumsum;
  b->ops[DK_OP_TOPK] = dk__cpu_topk;
  b->ops[DK_OP_INDEX_SELECT] = dk__cpu_gather;
  b->ops[DK_OP_RMSNORM_LINEAR] = b->ops[DK_OP_SWIGLU_LINEAR] = dk__cpu_fused_linear;
  for (op = 0; op < DK_OP_COUNT; op++)
    if (b->ops[op]) { dk__cpu_opfn[op] = b->ops[op]; b->ops[op] = dk__cpu_run_op; }
  for (op = 0; op < DK_OP_COUNT; op++) {
    b->dtypes[op] = DK_FLOATS;
    b->wdtypes[op] = DK_FLOATS;
  }
  b->wdtypes[DK_OP_LINEAR] = b->wdtypes[DK_OP_EMBEDDING] = b->wdtypes[DK_OP_RMSNORM_LINEAR] =
      b->wdtypes[DK_OP_SWIGLU_LINEAR] = DK_FLOATS | DK_QUANTS | DK_QUANTS_MORE;
  b->dtypes[DK_OP_CONCAT] = b->dtypes[DK_OP_COPY] = b->dtypes[DK_OP_TRANSPOSE] = DK_FLOATS | DK_BIT(DK_I32) | DK_QUANTS | DK_QUANTS_MORE;
  b->dtypes[DK_OP_CONCAT] &= ~(DK_QUANTS | DK_QUANTS_MORE);
  b->dtypes[DK_OP_TRANSPOSE] &= ~(DK_QUANTS | DK_QUANTS_MORE);
  return b;
}

#endif /* DK_BACKEND_CPU_H */
