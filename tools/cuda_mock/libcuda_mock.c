/* tools/cuda_mock/libcuda_mock.c — a fake libcuda.so.1 for checking the
 * CUDA backend's host code on a machine without a GPU.
 *
 * It runs no kernels. It implements the driver entry points backends/cuda.h
 * uses, on host memory (a device pointer is a host pointer), strictly:
 *   - every call that needs a context checks that one is current, and that
 *     the stream / function / event it is given belongs to that context
 *     (the real driver fails such calls; a missing dk__cuda_enter shows up);
 *   - every device range a copy, memset or kernel parameter touches must lie
 *     inside one live allocation (wrong offsets and sizes show up);
 *   - allocations are counted per device against MOCK_CUDA_MEM bytes (OOM
 *     is real), and live ones are reported at exit (leaks show up);
 *   - launches check grid and block limits;
 *   - cuGetProcAddress checks the ABI version asked for each symbol against
 *     the one the mock implements.
 * Some kernels are emulated: dk_embedding_check and dk_embedding_gather (f32
 * table and output) and dk_index_select's, so the device status slot path
 * can be followed end to end; the copies and dk_dequant_rows (f32/f16/bf16/
 * q8_0/q4_0), which with the cuBLAS subset at the end (DEVKIT_CUBLAS=<this
 * library>) carry the prompt-sized products. Streams execute at once, in order.
 *
 * Environment: MOCK_CUDA_DEVICES (2), MOCK_CUDA_MEM (bytes per device, 1 GiB),
 * MOCK_CUDA_NO_POOLS=1, MOCK_CUDA_NO_PINNED=1, MOCK_CUDA_LAUNCH_FAIL=<kernel>
 * (that launch returns CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES),
 * MOCK_CUDA_FAULT_AFTER=<kernel> (after that launch, the context is "faulted":
 * every later call returns CUDA_ERROR_ILLEGAL_ADDRESS, as the driver's sticky
 * errors do), MOCK_CUDA_VERBOSE=1.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../kernels/dk_params.h"

typedef unsigned int CUresult;
typedef unsigned long long CUdeviceptr;

#define OK 0u
#define E_INVALID_VALUE 1u
#define E_OUT_OF_MEMORY 2u
#define E_NOT_INITIALIZED 3u
#define E_INVALID_DEVICE 101u
#define E_INVALID_IMAGE 200u
#define E_INVALID_CONTEXT 201u
#define E_INVALID_HANDLE 400u
#define E_NOT_FOUND 500u
#define E_ILLEGAL_ADDRESS 700u
#define E_LAUNCH_OUT_OF_RESOURCES 701u
#define E_PEER_ALREADY 704u
#define E_CAPTURE_UNSUPPORTED 900u
#define E_CAPTURE_INVALIDATED 901u

#define MAXDEV 8

typedef struct mock_ctx { int magic, dev; } mock_ctx;
struct mock_graph;
typedef struct mock_stream { int magic; mock_ctx *ctx; struct mock_graph *cap; } mock_stream;   /* cap: the capture under way */
/* a captured graph: its launches (kernel and a copy of its parameters) and
 * memsets, in order; a stream holds one graph at a time, so order is enough */
typedef struct { const char *kernel; unsigned char param[320]; CUdeviceptr d; unsigned v; size_t n; } mock_node;
typedef struct mock_graph { int magic; mock_ctx *ctx; mock_node *nodes; int n, cap, broken, execs; } mock_graph;
typedef struct mock_exec { int magic; mock_graph *g; } mock_exec;
static double mock_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
typedef struct mock_event { int magic; mock_ctx *ctx; int recorded; double t; } mock_event;   /* t: host seconds at the last record */
typedef struct mock_module { int magic; mock_ctx *ctx; } mock_module;
typedef struct mock_func { int magic; mock_ctx *ctx; char name[64]; } mock_func;
typedef struct mock_alloc { struct mock_alloc *next; unsigned char *p; size_t n; int dev; } mock_alloc;

static int g_init, g_ndev = 2, g_faulted, g_verbose;
static size_t g_mem = (size_t)1 << 30, g_used[MAXDEV];
static mock_ctx g_ctx[MAXDEV];
static int g_ctx_refs[MAXDEV];
static __thread mock_ctx *g_cur;
static mock_alloc *g_allocs;
static long g_live_hosts;
static int g_peer[MAXDEV][MAXDEV];
/* the real driver is thread-safe, so the mock's shared books are too: devkit's
   thread tests allocate and free on one device from several threads */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
#define LOCK() pthread_mutex_lock(&g_mu)
#define UNLOCK() pthread_mutex_unlock(&g_mu)

#define MAGIC_CTX 0x11
#define MAGIC_STREAM 0x22
#define MAGIC_EVENT 0x33
#define MAGIC_MOD 0x44
#define MAGIC_FUNC 0x55
#define MAGIC_GRAPH 0x66
#define MAGIC_EXEC 0x77
static long g_live_graphs;

static CUresult bad(const char *fn, const char *why, CUresult r) {
  fprintf(stderr, "libcuda_mock: %s: %s\n", fn, why);
  return r;
}

#define NEED_INIT(fn) do { if (!g_init) return bad(fn, "cuInit was not called", E_NOT_INITIALIZED); \
                           if (g_faulted) return E_ILLEGAL_ADDRESS; } while (0)
#define NEED_CTX(fn) do { NEED_INIT(fn); if (!g_cur) return bad(fn, "no current context", E_INVALID_CONTEXT); } while (0)

static CUresult check_stream(const char *fn, void *s) {
  mock_stream *st = (mock_stream *)s;
  if (!st || st->magic != MAGIC_STREAM) return bad(fn, "not a stream (devkit never uses the NULL stream)", E_INVALID_HANDLE);
  if (st->ctx != g_cur) return bad(fn, "the stream belongs to another context than the current one", E_INVALID_CONTEXT);
  return OK;
}

/* the allocation holding [p, p + n), or NULL */
static mock_alloc *find(CUdeviceptr p, size_t n) {
  mock_alloc *a;
  LOCK();
  for (a = g_allocs; a; a = a->next)
    if ((uintptr_t)p >= (uintptr_t)a->p && (uintptr_t)p + n <= (uintptr_t)a->p + a->n) break;
  UNLOCK();
  return a;
}

static CUresult check_range(const char *fn, const char *what, CUdeviceptr p, size_t n) {
  char buf[256];
  if (n == 0 && p == 0) return OK;
  if (find(p, n ? n : 1)) return OK;
  snprintf(buf, sizeof buf, "%s: [%#llx, +%zu) is not inside one live device allocation", what, p, n);
  return bad(fn, buf, E_INVALID_VALUE);
}

/* ---- init, versions, errors ------------------------------------------------ */

CUresult cuInit(unsigned int flags) {
  const char *e = getenv("MOCK_CUDA_DEVICES"), *m = getenv("MOCK_CUDA_MEM");
  int i;
  if (flags != 0) return bad("cuInit", "flags must be 0", E_INVALID_VALUE);
  if (e) g_ndev = atoi(e);
  if (g_ndev < 0) g_ndev = 0;
  if (g_ndev > MAXDEV) g_ndev = MAXDEV;
  if (m) g_mem = (size_t)strtoull(m, NULL, 10);
  g_verbose = getenv("MOCK_CUDA_VERBOSE") != NULL;
  for (i = 0; i < MAXDEV; i++) { g_ctx[i].magic = MAGIC_CTX; g_ctx[i].dev = i; }
  g_init = 1;
  return g_ndev ? OK : 100u;
}

CUresult cuDriverGetVersion(int *v) { *v = 13000; return OK; }

static const char *err_name(CUresult r) {
  switch (r) {
  case OK: return "CUDA_SUCCESS";
  case E_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
  case E_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
  case E_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
  case E_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
  case E_ILLEGAL_ADDRESS: return "CUDA_ERROR_ILLEGAL_ADDRESS";
  case E_LAUNCH_OUT_OF_RESOURCES: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
  default: return NULL;
  }
}
CUresult cuGetErrorName(CUresult r, const char **s) {
  *s = err_name(r);
  return *s ? OK : E_INVALID_VALUE;
}
static CUresult m_GetErrorString(CUresult r, const char **s) {
  *s = err_name(r) ? "mock error text" : NULL;
  return *s ? OK : E_INVALID_VALUE;
}

/* ---- devices ------------------------------------------------------------------ */

static CUresult m_DeviceGetCount(int *n) { NEED_INIT("cuDeviceGetCount"); *n = g_ndev; return OK; }
static CUresult m_DeviceGet(int *d, int ord) {
  NEED_INIT("cuDeviceGet");
  if (ord < 0 || ord >= g_ndev) return E_INVALID_DEVICE;
  *d = ord;
  return OK;
}
static CUresult m_DeviceGetName(char *name, int len, int dev) {
  NEED_INIT("cuDeviceGetName");
  snprintf(name, (size_t)len, "Mock GPU %d", dev);
  return OK;
}
static CUresult m_DeviceTotalMem(size_t *b, int dev) { NEED_INIT("cuDeviceTotalMem"); (void)dev; *b = g_mem; return OK; }
static CUresult m_DeviceGetAttribute(int *v, unsigned int attr, int dev) {
  NEED_INIT("cuDeviceGetAttribute");
  (void)dev;
  switch (attr) {
  case 16: *v = 132; return OK;
  case 75: *v = 9; return OK;
  case 76: *v = 0; return OK;
  case 115: *v = getenv("MOCK_CUDA_NO_POOLS") ? 0 : 1; return OK;
  default: return bad("cuDeviceGetAttribute", "an attribute the mock does not know", E_INVALID_VALUE);
  }
}
static CUresult m_DeviceGetUuid(void *uuid, int dev) {
  NEED_INIT("cuDeviceGetUuid");
  memset(uuid, 0xa0 + dev, 16);
  return OK;
}
static CUresult m_DeviceCanAccessPeer(int *can, int a, int b) { NEED_INIT("cuDeviceCanAccessPeer"); *can = a != b; return OK; }
static CUresult m_DevicePrimaryCtxRetain(void **ctx, int dev) {
  NEED_INIT("cuDevicePrimaryCtxRetain");
  if (dev < 0 || dev >= g_ndev) return E_INVALID_DEVICE;
  LOCK(); g_ctx_refs[dev]++; UNLOCK();
  *ctx = &g_ctx[dev];
  return OK;
}
static CUresult m_DevicePrimaryCtxRelease(int dev) {
  if (!g_init) return E_NOT_INITIALIZED;
  LOCK();
  if (g_ctx_refs[dev] <= 0) { UNLOCK(); return bad("cuDevicePrimaryCtxRelease", "released more often than retained", E_INVALID_CONTEXT); }
  g_ctx_refs[dev]--;
  UNLOCK();
  return OK;
}
static CUresult m_CtxSetCurrent(void *ctx) {
  if (!g_init) return E_NOT_INITIALIZED;
  if (ctx && ((mock_ctx *)ctx)->magic != MAGIC_CTX) return bad("cuCtxSetCurrent", "not a context", E_INVALID_CONTEXT);
  if (ctx && g_ctx_refs[((mock_ctx *)ctx)->dev] <= 0) return bad("cuCtxSetCurrent", "the context is not retained", E_INVALID_CONTEXT);
  g_cur = (mock_ctx *)ctx;
  return g_faulted ? E_ILLEGAL_ADDRESS : OK;
}
static CUresult m_CtxEnablePeerAccess(void *peer, unsigned int flags) {
  NEED_CTX("cuCtxEnablePeerAccess");
  if (flags) return E_INVALID_VALUE;
  LOCK();
  if (g_peer[g_cur->dev][((mock_ctx *)peer)->dev]) { UNLOCK(); return E_PEER_ALREADY; }
  g_peer[g_cur->dev][((mock_ctx *)peer)->dev] = 1;
  UNLOCK();
  return OK;
}

/* ---- modules and launches ------------------------------------------------------ */

static CUresult m_ModuleLoadData(void **mod, const void *image) {
  mock_module *m;
  NEED_CTX("cuModuleLoadData");
  if (((uintptr_t)image & 15) != 0) return bad("cuModuleLoadData", "the image is not 16-byte aligned", E_INVALID_IMAGE);
  if (memcmp(image, "\x50\xed\x55\xba", 4) != 0) return bad("cuModuleLoadData", "no fatbin magic", E_INVALID_IMAGE);
  m = (mock_module *)calloc(1, sizeof *m);
  m->magic = MAGIC_MOD;
  m->ctx = g_cur;
  *mod = m;
  return OK;
}
static CUresult m_ModuleUnload(void *mod) {
  if (!mod || ((mock_module *)mod)->magic != MAGIC_MOD) return E_INVALID_HANDLE;
  ((mock_module *)mod)->magic = 0;
  free(mod);
  return OK;
}
static mock_func **g_funcs;   /* every handle given out, freed at exit (grows: kernels x module loads) */
static int g_nfuncs, g_capfuncs;
static CUresult m_ModuleGetFunction(void **fn, void *mod, const char *name) {
  mock_func *f;
  NEED_CTX("cuModuleGetFunction");
  if (!mod || ((mock_module *)mod)->magic != MAGIC_MOD) return E_INVALID_HANDLE;
  if (strncmp(name, "dk_", 3) != 0) return E_NOT_FOUND;
  f = (mock_func *)calloc(1, sizeof *f);
  f->magic = MAGIC_FUNC;
  f->ctx = ((mock_module *)mod)->ctx;
  snprintf(f->name, sizeof f->name, "%s", name);
  if (g_nfuncs == g_capfuncs) {
    g_capfuncs = g_capfuncs ? 2 * g_capfuncs : 256;
    g_funcs = (mock_func **)realloc(g_funcs, (size_t)g_capfuncs * sizeof *g_funcs);
  }
  g_funcs[g_nfuncs++] = f;
  *fn = f;
  return OK;
}
__attribute__((destructor)) static void free_funcs(void) {
  int i;
  mock_alloc *a;
  long live = 0;
  for (i = 0; i < g_nfuncs; i++) free(g_funcs[i]);
  free(g_funcs);
  for (a = g_allocs; a; a = a->next) live++;
  if (live || g_live_hosts) fprintf(stderr, "libcuda_mock: at exit %ld device allocation(s) and %ld pinned buffer(s) are live\n", live, g_live_hosts);
  if (g_live_graphs) fprintf(stderr, "libcuda_mock: at exit %ld graph(s) or executable graph(s) are live\n", g_live_graphs);
}

static size_t es_of(int dt) { return dt == DK_KT_F16 || dt == DK_KT_BF16 ? 2 : 4; }

/* bounds of what a kernel will touch, from its parameter struct */
static CUresult check_params(const char *k, void *param) {
  CUresult r = OK;
#define RANGE(what, p, n) do { if (r == OK) r = check_range(k, what, (p), (size_t)(n)); } while (0)
  if (!strncmp(k, "dk_binary_", 10)) {
    const dk_kp_binary *p = (const dk_kp_binary *)param;
    size_t es = strstr(k, "f32") ? 4 : 2;
    RANGE("out", p->out, p->n * es);
    if (p->flat) { RANGE("a", p->a, p->n * es); RANGE("b", p->b, p->n * es); }
  } else if (!strncmp(k, "dk_unary_", 9)) {
    const dk_kp_unary *p = (const dk_kp_unary *)param;
    size_t es = strstr(k, "f32") ? 4 : 2;
    RANGE("out", p->out, p->n * es);
    RANGE("x", p->x, p->n * es);
    if (p->op == DK_KU_SWIGLU) RANGE("y", p->y, p->n * es);
  } else if (!strncmp(k, "dk_gemv_", 8) || !strncmp(k, "dk_gemv2", 8)) {
    const dk_kp_gemv *p = (const dk_kp_gemv *)param;
    /* dk_gemv_w_more takes any M, a block per (row of W, row of x): grid.y <= 65535 */
    const int64_t maxm = !strcmp(k, "dk_gemv_w_more") ? 65535 : DK_GEMV_MAXM;
    if (p->M < 1 || p->M > maxm) r = bad(k, "M outside 1..DK_GEMV_MAXM (65535 for dk_gemv_w_more)", E_INVALID_VALUE);
    RANGE("out", p->out, p->M * p->N * (int64_t)es_of(p->odt));
    RANGE("x", p->x, p->M * p->K * (int64_t)es_of(p->xdt));
    RANGE("w", p->w, p->N * p->w_row_bytes);
    if (p->has_bias) RANGE("bias", p->bias, p->N * (int64_t)es_of(p->bdt));
    /* the prologue's f32 operand: dk_gemv2n_* the norm weight, dk_gemv2s_* the up rows */
    if (p->aux) RANGE("aux", p->aux, (!strncmp(k, "dk_gemv2s_", 10) ? p->M : 1) * p->K * 4);
  } else if (!strncmp(k, "dk_gemm_", 8)) {
    const dk_kp_gemm *p = (const dk_kp_gemm *)param;
    size_t es = strstr(k, "f32") ? 4 : 2;
    if (p->batch == 1 && p->nbdims == 0) {
      RANGE("a", p->a, ((p->M - 1) * p->lda + p->K) * (int64_t)es);
      if (strstr(k, "_nt")) { RANGE("w", p->b, p->N * p->b_row_bytes); }
      else { RANGE("b", p->b, ((p->K - 1) * p->ldb + p->N) * (int64_t)es); }
    }
    /* _o32: 16-bit inputs, f32 out, ldc >= N (a slab of a wider output) */
    if (strstr(k, "_o32")) { RANGE("c", p->c, ((p->M - 1) * p->ldc + p->N) * 4); }
    else { RANGE("c", p->c, p->batch * p->M * p->N * (int64_t)es); }
  } else if (!strcmp(k, "dk_dequant_rows")) {
    const dk_kp_embedding *p = (const dk_kp_embedding *)param;
    RANGE("out", p->out, p->rows * p->D * (int64_t)es_of(p->odt));
    RANGE("table", p->table, p->rows * p->row_bytes);
  } else if (!strncmp(k, "dk_embedding_", 13)) {
    const dk_kp_embedding *p = (const dk_kp_embedding *)param;
    RANGE("ids", p->ids, p->n_ids * 4);
    RANGE("status", p->status, 8);
    RANGE("out", p->out, p->n_ids * p->D * (int64_t)es_of(p->odt));
    RANGE("table", p->table, p->rows * p->row_bytes);
  } else if (!strncmp(k, "dk_index_select_", 16)) {
    const dk_kp_gather *p = (const dk_kp_gather *)param;
    RANGE("ids", p->ids, p->nids * 4);
    RANGE("status", p->status, 8);
    if (!strcmp(k, "dk_index_select_gather")) {
      RANGE("out", p->out, p->outer * p->nids * p->inner * (int64_t)p->esize);
      RANGE("x", p->x, p->outer * p->n * p->inner * (int64_t)p->esize);
    }
  } else if (!strcmp(k, "dk_index_copy_scatter")) {
    const dk_kp_gather *p = (const dk_kp_gather *)param;
    RANGE("ids", p->ids, p->nids * 4);
    RANGE("status", p->status, 8);
    RANGE("dst", p->out, p->outer * p->n * p->inner * (int64_t)es_of(p->odt));
    RANGE("src", p->x, p->outer * p->nids * p->inner * (int64_t)es_of(p->xdt));
  } else if (!strncmp(k, "dk_attn_split_", 14) || !strncmp(k, "dk_attn_rows_", 13)) {
    const dk_kp_attn_split *p = (const dk_kp_attn_split *)param;
    if (p->pos) RANGE("pos", p->pos, p->T * 4);
    if (p->nsplit > 1) RANGE("part", p->part, p->T * p->Hq * p->nsplit * (p->Dv + 2) * 4);
  } else if (!strncmp(k, "dk_attention_", 13) || !strcmp(k, "dk_attn_flash_f16")) {
    const dk_kp_attention *p = (const dk_kp_attention *)param;
    /* the tensor-core prompt kernel: heads of DK_ATTN_FLASH_D, an f16 cache
     * (16-byte rows); its grid is checked in m_launch */
    if (!strcmp(k, "dk_attn_flash_f16") &&
        (p->D != DK_ATTN_FLASH_D || p->Dv != DK_ATTN_FLASH_D || p->kdt != DK_KT_F16 || p->T < 2 || (p->k | p->v) % 16))
      r = bad(k, "flash attention launched outside its shapes (D = Dv = 64, f16 k/v, T > 1, 16-byte rows)", E_INVALID_VALUE);
    if (p->pos) RANGE("pos", p->pos, p->T * 4);
    RANGE("q", p->q, p->T * p->Hq * p->D * (int64_t)es_of(p->qdt));
    RANGE("k", p->k, p->S * p->Hkv * p->D * (int64_t)es_of(p->kdt));
    RANGE("v", p->v, p->S * p->Hkv * p->Dv * (int64_t)es_of(p->kdt));
    RANGE("out", p->out, p->T * p->Hq * p->Dv * (int64_t)es_of(p->odt));
  } else if (!strncmp(k, "dk_norm_", 8)) {
    const dk_kp_norm *p = (const dk_kp_norm *)param;
    size_t es = strstr(k, "f32") ? 4 : 2;
    RANGE("x", p->x, p->rows * p->cols * (int64_t)es);
    RANGE("out", p->out, p->rows * p->cols * (int64_t)es);
    if (p->w) RANGE("w", p->w, p->cols * (int64_t)es_of(p->wdt));
    if (p->b) RANGE("b", p->b, p->cols * (int64_t)es_of(p->bdt));
  } else if (!strncmp(k, "dk_softmax_", 11)) {
    const dk_kp_softmax *p = (const dk_kp_softmax *)param;
    size_t es = strstr(k, "f32") ? 4 : 2;
    RANGE("x", p->x, p->rows * p->cols * (int64_t)es);
    RANGE("out", p->out, p->rows * p->cols * (int64_t)es);
  } else if (!strcmp(k, "dk_argmax") || !strcmp(k, "dk_sample")) {
    const dk_kp_pick *p = (const dk_kp_pick *)param;
    RANGE("x", p->x, p->rows * p->n * (int64_t)es_of(p->xdt));
    RANGE("out", p->out, p->rows * 4);
  } else if (!strncmp(k, "dk_copy_", 8)) {
    const dk_kp_copy *p = (const dk_kp_copy *)param;
    if (p->contiguous) { RANGE("src", p->src, p->n * (int64_t)es_of(p->sdt)); RANGE("dst", p->dst, p->n * (int64_t)es_of(p->ddt)); }
    else {
      int64_t smax = 0, dmax = 0;
      int i;
      for (i = 0; i < p->ndim; i++) { smax += (p->shape[i] - 1) * p->sstr[i]; dmax += (p->shape[i] - 1) * p->dstr[i]; }
      RANGE("src", p->src, (smax + 1) * (int64_t)es_of(p->sdt));
      RANGE("dst", p->dst, (dmax + 1) * (int64_t)es_of(p->ddt));
    }
  } else if (!strncmp(k, "dk_rope_", 8)) {
    const dk_kp_rope *p = (const dk_kp_rope *)param;
    size_t es = strstr(k, "f32") ? 4 : 2;
    RANGE("x", p->x, p->rows * p->D * (int64_t)es);
    RANGE("out", p->out, p->rows * p->D * (int64_t)es);
    RANGE("pos", p->pos, p->T * 4);
  } else if (!strncmp(k, "dk_concat_", 10)) {
    const dk_kp_concat *p = (const dk_kp_concat *)param;
    size_t es = k[10] == '2' ? 2 : 4;
    RANGE("a", p->a, p->outer * p->ad * p->inner * (int64_t)es);
    RANGE("b", p->b, p->outer * p->bd * p->inner * (int64_t)es);
    RANGE("out", p->out, p->outer * (p->ad + p->bd) * p->inner * (int64_t)es);
  }
#undef RANGE
  return r;
}

/* 16-bit floats for the emulated kernels and the cuBLAS mock (round to nearest even) */
static float h2f(uint16_t h) {
  uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023, u;
  float f;
  if (e == 0) { f = (float)m / 16777216.0f; return s ? -f : f; }
  u = e == 31 ? s | 0x7f800000u | (m << 13) : s | ((e + 112) << 23) | (m << 13);
  memcpy(&f, &u, 4);
  return f;
}
static uint16_t f2h(float f) {
  uint32_t u, s, a;
  memcpy(&u, &f, 4);
  s = (u >> 16) & 0x8000u;
  a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) return (uint16_t)(s | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0));
  if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u);
  if (a < 0x38800000u) {   /* subnormal: f * 2^24 rounded to an integer (nearest even) */
    float v;
    memcpy(&v, &a, 4);
    v *= 16777216.0f;
    return (uint16_t)(s | (uint32_t)__builtin_rintf(v));
  }
  a += 0xc8000fffu + ((a >> 13) & 1);
  return (uint16_t)(s | (a >> 13));
}
static float bf2f(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }
static uint16_t f2bf(float f) { uint32_t u; memcpy(&u, &f, 4); return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16); }
static float ld_rt(uint64_t p, int64_t i, int dt) {
  if (dt == DK_KT_F16) return h2f(((const uint16_t *)(uintptr_t)p)[i]);
  if (dt == DK_KT_BF16) return bf2f(((const uint16_t *)(uintptr_t)p)[i]);
  return ((const float *)(uintptr_t)p)[i];
}
static void st_rt(uint64_t p, int64_t i, float v, int dt) {
  if (dt == DK_KT_F16) ((uint16_t *)(uintptr_t)p)[i] = f2h(v);
  else if (dt == DK_KT_BF16) ((uint16_t *)(uintptr_t)p)[i] = f2bf(v);
  else ((float *)(uintptr_t)p)[i] = v;
}
/* value d of a weight row: f32/f16/bf16, q8_0 (34-byte blocks), q4_0 (18-byte blocks) */
static int row_value(const uint8_t *row, int64_t d, int dt, float *v) {
  if (dt == DK_KT_Q8_0) {
    const uint8_t *b = row + (d / 32) * 34;
    *v = h2f((uint16_t)(b[0] | b[1] << 8)) * (float)(int8_t)b[2 + d % 32];
  } else if (dt == DK_KT_Q4_0) {
    const uint8_t *b = row + (d / 32) * 18;
    const int j = (int)(d % 32), q = j < 16 ? b[2 + j] & 15 : b[2 + j - 16] >> 4;
    *v = h2f((uint16_t)(b[0] | b[1] << 8)) * (float)(q - 8);
  } else if (dt == DK_KT_F32 || dt == DK_KT_F16 || dt == DK_KT_BF16) {
    *v = ld_rt((uint64_t)(uintptr_t)row, d, dt);
  } else {
    return 0;
  }
  return 1;
}

/* the emulated kernels: dk_embedding's (f32 table and output only) and
 * dk_index_select's (any element size), the device-side id checks with them */
static void emulate(const char *k, void *param) {
  if (!strncmp(k, "dk_copy_", 8)) {   /* raw2, raw4, convert: strided, any float dtypes */
    const dk_kp_copy *p = (const dk_kp_copy *)param;
    int64_t i;
    for (i = 0; i < p->n; i++) {
      int64_t rem = i, so = 0, dof = 0, c;
      int d;
      if (p->contiguous) so = dof = i;
      else
        for (d = p->ndim - 1; d >= 0; d--) {
          c = rem % p->shape[d];
          rem /= p->shape[d];
          so += c * p->sstr[d];
          dof += c * p->dstr[d];
        }
      if (!strcmp(k, "dk_copy_raw2")) ((uint16_t *)(uintptr_t)p->dst)[dof] = ((const uint16_t *)(uintptr_t)p->src)[so];
      else if (!strcmp(k, "dk_copy_raw4")) ((uint32_t *)(uintptr_t)p->dst)[dof] = ((const uint32_t *)(uintptr_t)p->src)[so];
      else st_rt(p->dst, dof, ld_rt(p->src, so, p->sdt), p->ddt);
    }
    return;
  }
  if (!strcmp(k, "dk_dequant_rows")) {
    const dk_kp_embedding *p = (const dk_kp_embedding *)param;
    int64_t i, d;
    float v;
    for (i = 0; i < p->rows; i++)
      for (d = 0; d < p->D; d++) {
        /* the K-quants and q4_1/q5_x: the launch's ranges were checked; the
         * mock does not decode them, so their rows read as zeros */
        if (!row_value((const uint8_t *)(uintptr_t)p->table + i * p->row_bytes, d, p->tdt, &v)) v = 0.0f;
        st_rt(p->out, i * p->D + d, v, p->odt);
      }
    return;
  }
  if (!strcmp(k, "dk_index_select_check")) {
    const dk_kp_gather *p = (const dk_kp_gather *)param;
    const int32_t *ids = (const int32_t *)(uintptr_t)p->ids;
    unsigned long long *st = (unsigned long long *)(uintptr_t)p->status;
    int64_t i;
    for (i = 0; i < p->nids; i++)
      if (ids[i] < -p->n || ids[i] >= p->n) {
        unsigned long long v = ((unsigned long long)i << 32) | (uint32_t)ids[i];
        if (v < *st) *st = v;
      }
    return;
  }
  if (!strcmp(k, "dk_index_select_gather") || !strcmp(k, "dk_index_copy_scatter")) {
    /* rows (q, k) of [outer, nids, inner] from rows (q, ids[k]) of [outer, n, inner], or the reverse */
    const dk_kp_gather *p = (const dk_kp_gather *)param;
    const int32_t *ids = (const int32_t *)(uintptr_t)p->ids;
    const int scatter = k[9] == 'c';
    int64_t e, total = p->outer * p->nids * p->inner;
    if (*(unsigned long long *)(uintptr_t)p->status != ~0ull) return;
    for (e = 0; e < total; e++) {
      int64_t j = e % p->inner, r = e / p->inner, kk = r % p->nids, q = r / p->nids, row = ids[kk] < 0 ? ids[kk] + p->n : ids[kk];
      int64_t at = (q * p->n + row) * p->inner + j;
      if (scatter) st_rt(p->out, at, ld_rt(p->x, e, p->xdt), p->odt);
      else memcpy((char *)(uintptr_t)p->out + e * p->esize, (const char *)(uintptr_t)p->x + at * p->esize, (size_t)p->esize);
    }
    return;
  }
  if (!strcmp(k, "dk_embedding_check")) {
    const dk_kp_embedding *p = (const dk_kp_embedding *)param;
    const int32_t *ids = (const int32_t *)(uintptr_t)p->ids;
    unsigned long long *st = (unsigned long long *)(uintptr_t)p->status;
    int64_t i;
    for (i = 0; i < p->n_ids; i++)
      if (ids[i] < 0 || ids[i] >= p->rows) {
        unsigned long long v = ((unsigned long long)i << 32) | (uint32_t)ids[i];
        if (v < *st) *st = v;
      }
  } else if (!strcmp(k, "dk_embedding_gather")) {
    const dk_kp_embedding *p = (const dk_kp_embedding *)param;
    const int32_t *ids = (const int32_t *)(uintptr_t)p->ids;
    int64_t i, d;
    if (*(unsigned long long *)(uintptr_t)p->status != ~0ull) return;
    if (p->tdt != DK_KT_F32 || p->odt != DK_KT_F32) return;
    for (i = 0; i < p->n_ids; i++)
      for (d = 0; d < p->D; d++)
        ((float *)(uintptr_t)p->out)[i * p->D + d] = ((const float *)(uintptr_t)(p->table + (uint64_t)ids[i] * (uint64_t)p->row_bytes))[d];
  }
}

/* the parameter struct's size of every kernel, for the copies a capture keeps */
#define PSIZE(name, T) {#name, sizeof(T)},
static const struct { const char *name; size_t size; } g_psize[] = { DK_CUDA_KERNELS(PSIZE) };
#undef PSIZE

static CUresult capture_node(mock_graph *g, const char *kernel, const void *param, CUdeviceptr d, unsigned v, size_t n) {
  mock_node *nd;
  size_t i, sz = 0;
  if (g->n == g->cap) {
    g->cap = g->cap ? 2 * g->cap : 64;
    g->nodes = (mock_node *)realloc(g->nodes, sizeof *g->nodes * (size_t)g->cap);
  }
  nd = &g->nodes[g->n++];
  memset(nd, 0, sizeof *nd);
  nd->kernel = kernel;
  if (kernel) {
    for (i = 0; i < sizeof g_psize / sizeof g_psize[0]; i++)
      if (!strcmp(g_psize[i].name, kernel)) sz = g_psize[i].size;
    if (!sz || sz > sizeof nd->param) return bad("capture", "a kernel the mock does not know the parameters of", E_INVALID_VALUE);
    memcpy(nd->param, param, sz);
  }
  nd->d = d;
  nd->v = v;
  nd->n = n;
  return OK;
}

/* a call that cannot be captured, on a capturing stream: the real driver
 * fails it and invalidates the capture; devkit should never make one */
static CUresult no_capture(const char *fn, void *stream) {
  mock_stream *st = (mock_stream *)stream;
  if (!st || st->magic != MAGIC_STREAM || !st->cap) return OK;
  st->cap->broken = 1;
  return bad(fn, "not allowed on a stream being captured", E_CAPTURE_UNSUPPORTED);
}

static CUresult m_launch(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                         unsigned smem, void *stream, void **params, void **extra) {
  mock_func *f = (mock_func *)fn;
  const char *fail = getenv("MOCK_CUDA_LAUNCH_FAIL"), *fault = getenv("MOCK_CUDA_FAULT_AFTER");
  CUresult r;
  NEED_CTX("cuLaunchKernel");
  if (!f || f->magic != MAGIC_FUNC) return bad("cuLaunchKernel", "not a function", E_INVALID_HANDLE);
  if (f->ctx != g_cur) return bad("cuLaunchKernel", "the function's module belongs to another context", E_INVALID_CONTEXT);
  if ((r = check_stream("cuLaunchKernel", stream)) != OK) return r;
  if (!gx || !gy || !gz || gx > 0x7fffffffu || gy > 65535 || gz > 65535) return bad(f->name, "grid dimensions out of range", E_INVALID_VALUE);
  if (!bx || !by || !bz || bx * by * bz > 1024 || bx % 32) return bad(f->name, "block size out of range", E_INVALID_VALUE);
  if (smem) return bad(f->name, "devkit launches with static shared memory only", E_INVALID_VALUE);
  if (!params || !params[0] || extra) return bad(f->name, "expected one parameter struct", E_INVALID_VALUE);
  if (g_verbose) fprintf(stderr, "libcuda_mock: launch %s grid %u,%u,%u block %u\n", f->name, gx, gy, gz, bx);
  if (fail && !strcmp(fail, f->name)) return E_LAUNCH_OUT_OF_RESOURCES;
  if ((r = check_params(f->name, params[0])) != OK) return r;
  if (!strcmp(f->name, "dk_attn_flash_f16")) {
    /* a 64-row tile of one head per block of 128 threads */
    const dk_kp_attention *p = (const dk_kp_attention *)params[0];
    if (gx != (unsigned)((p->T + 63) / 64) || gy != (unsigned)p->Hq || gz != 1 || bx != 128)
      return bad(f->name, "flash attention's grid must be (ceil(T / 64), Hq, 1), 128 threads", E_INVALID_VALUE);
  }
  if (((mock_stream *)stream)->cap) return capture_node(((mock_stream *)stream)->cap, f->name, params[0], 0, 0, 0);
  emulate(f->name, params[0]);
  if (fault && !strcmp(fault, f->name)) g_faulted = 1;   /* reported by the next call, like an asynchronous fault */
  return OK;
}
/* MOCK_CUDA_REQUIRE_EX=1: every launch must come through cuLaunchKernelEx
 * (tools/check_cuda_host.sh's DEVKIT_CUDA_PDL=1 run) */
static CUresult m_LaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                               unsigned smem, void *stream, void **params, void **extra) {
  if (getenv("MOCK_CUDA_REQUIRE_EX")) return bad("cuLaunchKernel", "a plain launch where cuLaunchKernelEx was expected", E_INVALID_VALUE);
  return m_launch(fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra);
}

/* cuLaunchKernelEx: devkit passes one attribute, programmatic stream
 * serialization (DEVKIT_CUDA_PDL); the layout is CUlaunchConfig's */
typedef struct { int id; char pad[4]; union { char bytes[64]; int flag; } value; } mock_launch_attr;
typedef struct {
  unsigned gx, gy, gz, bx, by, bz, smem;
  void *stream;
  mock_launch_attr *attrs;
  unsigned nattrs;
} mock_launch_config;
static CUresult m_LaunchKernelEx(const void *config, void *fn, void **params, void **extra) {
  const mock_launch_config *c = (const mock_launch_config *)config;
  if (!c) return bad("cuLaunchKernelEx", "no config", E_INVALID_VALUE);
  if (c->nattrs != 1 || !c->attrs || c->attrs[0].id != 6 || c->attrs[0].value.flag != 1)
    return bad("cuLaunchKernelEx", "expected one attribute: programmatic stream serialization, on", E_INVALID_VALUE);
  return m_launch(fn, c->gx, c->gy, c->gz, c->bx, c->by, c->bz, c->smem, c->stream, params, extra);
}

/* ---- streams and events ----------------------------------------------------------- */

static CUresult m_StreamCreate(void **s, unsigned int flags) {
  mock_stream *st;
  NEED_CTX("cuStreamCreate");
  if (flags != 1) return bad("cuStreamCreate", "devkit's streams should be non-blocking", E_INVALID_VALUE);
  st = (mock_stream *)calloc(1, sizeof *st);
  st->magic = MAGIC_STREAM;
  st->ctx = g_cur;
  *s = st;
  return OK;
}
static CUresult m_StreamDestroy(void *s) {
  if (!s || ((mock_stream *)s)->magic != MAGIC_STREAM) return E_INVALID_HANDLE;
  ((mock_stream *)s)->magic = 0;
  free(s);
  return OK;
}
static CUresult m_StreamSynchronize(void *s) {
  CUresult r;
  if (!s || ((mock_stream *)s)->magic != MAGIC_STREAM) return bad("cuStreamSynchronize", "not a stream", E_INVALID_HANDLE);
  if ((r = no_capture("cuStreamSynchronize", s)) != OK) return r;
  return g_faulted ? E_ILLEGAL_ADDRESS : OK;
}
static CUresult m_StreamWaitEvent(void *s, void *e, unsigned int flags) {
  CUresult r;
  NEED_CTX("cuStreamWaitEvent");
  if ((r = check_stream("cuStreamWaitEvent", s)) != OK) return r;
  if (!e || ((mock_event *)e)->magic != MAGIC_EVENT || flags) return E_INVALID_HANDLE;   /* any context's event */
  return OK;
}
static CUresult m_EventCreate(void **e, unsigned int flags) {
  mock_event *ev;
  NEED_CTX("cuEventCreate");
  (void)flags;
  ev = (mock_event *)calloc(1, sizeof *ev);
  ev->magic = MAGIC_EVENT;
  ev->ctx = g_cur;
  *e = ev;
  return OK;
}
static CUresult m_EventRecord(void *e, void *s) {
  CUresult r;
  NEED_CTX("cuEventRecord");
  if ((r = check_stream("cuEventRecord", s)) != OK) return r;
  if (!e || ((mock_event *)e)->magic != MAGIC_EVENT) return E_INVALID_HANDLE;
  if (((mock_event *)e)->ctx != ((mock_stream *)s)->ctx) return bad("cuEventRecord", "event and stream of different contexts", E_INVALID_HANDLE);
  ((mock_event *)e)->recorded = 1;
  ((mock_event *)e)->t = mock_clock();   /* the mock runs kernels at launch: the stream is done here */
  return OK;
}
/* as the driver: both events recorded and timing-enabled, in ms */
static CUresult m_EventElapsedTime(float *ms, void *a, void *b) {
  const mock_event *ea = (const mock_event *)a, *eb = (const mock_event *)b;
  if (!ms || !ea || !eb || ea->magic != MAGIC_EVENT || eb->magic != MAGIC_EVENT) return bad("cuEventElapsedTime", "not an event", E_INVALID_HANDLE);
  if (!ea->recorded || !eb->recorded) return E_INVALID_HANDLE;
  *ms = (float)((eb->t - ea->t) * 1e3);
  return OK;
}
static CUresult m_EventSynchronize(void *e) {
  if (!e || ((mock_event *)e)->magic != MAGIC_EVENT) return E_INVALID_HANDLE;
  return g_faulted ? E_ILLEGAL_ADDRESS : OK;
}
static CUresult m_EventDestroy(void *e) {
  if (!e || ((mock_event *)e)->magic != MAGIC_EVENT) return E_INVALID_HANDLE;
  ((mock_event *)e)->magic = 0;
  free(e);
  return OK;
}

/* ---- memory ----------------------------------------------------------------------- */

static CUresult do_alloc(const char *fn, CUdeviceptr *p, size_t n) {
  mock_alloc *a;
  int dev = g_cur->dev;
  if (n == 0) return bad(fn, "zero-byte allocation", E_INVALID_VALUE);
  LOCK();
  if (g_used[dev] + n > g_mem) { UNLOCK(); return E_OUT_OF_MEMORY; }
  g_used[dev] += n;
  UNLOCK();
  a = (mock_alloc *)calloc(1, sizeof *a);
  a->p = (unsigned char *)malloc(n);
  if (!a->p) { free(a); LOCK(); g_used[dev] -= n; UNLOCK(); return E_OUT_OF_MEMORY; }
  memset(a->p, 0xcd, n);   /* garbage, as fresh device memory is */
  a->n = n;
  a->dev = dev;
  LOCK();
  a->next = g_allocs;
  g_allocs = a;
  UNLOCK();
  *p = (CUdeviceptr)(uintptr_t)a->p;
  if (((uintptr_t)a->p & 15) != 0) return bad(fn, "host malloc gave less than 16-byte alignment", E_INVALID_VALUE);
  return OK;
}
static CUresult do_free(const char *fn, CUdeviceptr p) {
  mock_alloc **pp;
  LOCK();
  for (pp = &g_allocs; *pp; pp = &(*pp)->next)
    if ((uintptr_t)(*pp)->p == (uintptr_t)p) {
      mock_alloc *a = *pp;
      *pp = a->next;
      g_used[a->dev] -= a->n;
      UNLOCK();
      free(a->p);
      free(a);
      return OK;
    }
  UNLOCK();
  return bad(fn, "not the start of a live allocation", E_INVALID_VALUE);
}
static CUresult m_MemAlloc(CUdeviceptr *p, size_t n) { NEED_CTX("cuMemAlloc"); return do_alloc("cuMemAlloc", p, n); }
static CUresult m_MemFree(CUdeviceptr p) { NEED_CTX("cuMemFree"); return do_free("cuMemFree", p); }
static CUresult m_MemAllocAsync(CUdeviceptr *p, size_t n, void *s) {
  CUresult r;
  NEED_CTX("cuMemAllocAsync");
  if ((r = check_stream("cuMemAllocAsync", s)) != OK || (r = no_capture("cuMemAllocAsync", s)) != OK) return r;
  return do_alloc("cuMemAllocAsync", p, n);
}
static CUresult m_MemFreeAsync(CUdeviceptr p, void *s) {
  CUresult r;
  NEED_CTX("cuMemFreeAsync");
  if ((r = check_stream("cuMemFreeAsync", s)) != OK || (r = no_capture("cuMemFreeAsync", s)) != OK) return r;
  return do_free("cuMemFreeAsync", p);
}
static CUresult m_MemGetInfo(size_t *f, size_t *t) {
  NEED_CTX("cuMemGetInfo");
  *t = g_mem;
  LOCK(); *f = g_mem - g_used[g_cur->dev]; UNLOCK();
  return OK;
}
static CUresult m_MemHostAlloc(void **p, size_t n, unsigned int flags) {
  NEED_INIT("cuMemHostAlloc");
  (void)flags;
  if (getenv("MOCK_CUDA_NO_PINNED")) return E_OUT_OF_MEMORY;
  *p = malloc(n);
  if (*p) { LOCK(); g_live_hosts++; UNLOCK(); }
  return *p ? OK : E_OUT_OF_MEMORY;
}
static CUresult m_MemFreeHost(void *p) { free(p); LOCK(); g_live_hosts--; UNLOCK(); return OK; }
static CUresult m_MemcpyHtoDAsync(CUdeviceptr d, const void *s, size_t n, void *st) {
  CUresult r;
  NEED_CTX("cuMemcpyHtoDAsync");
  if ((r = no_capture("cuMemcpyHtoDAsync", st)) != OK) return r;
  if ((r = check_stream("cuMemcpyHtoDAsync", st)) != OK || (r = check_range("cuMemcpyHtoDAsync", "dst", d, n)) != OK) return r;
  memcpy((void *)(uintptr_t)d, s, n);
  return OK;
}
static CUresult m_MemcpyDtoHAsync(void *d, CUdeviceptr s, size_t n, void *st) {
  CUresult r;
  NEED_CTX("cuMemcpyDtoHAsync");
  if ((r = no_capture("cuMemcpyDtoHAsync", st)) != OK) return r;
  if ((r = check_stream("cuMemcpyDtoHAsync", st)) != OK || (r = check_range("cuMemcpyDtoHAsync", "src", s, n)) != OK) return r;
  memcpy(d, (const void *)(uintptr_t)s, n);
  return OK;
}
static CUresult m_MemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, void *st) {
  CUresult r;
  NEED_CTX("cuMemcpyDtoDAsync");
  if ((r = no_capture("cuMemcpyDtoDAsync", st)) != OK) return r;
  if ((r = check_stream("cuMemcpyDtoDAsync", st)) != OK || (r = check_range("cuMemcpyDtoDAsync", "src", s, n)) != OK ||
      (r = check_range("cuMemcpyDtoDAsync", "dst", d, n)) != OK)
    return r;
  if (find(s, n)->dev != g_cur->dev || find(d, n)->dev != g_cur->dev)
    return bad("cuMemcpyDtoDAsync", "a pointer of another GPU (use cuMemcpyPeerAsync)", E_INVALID_VALUE);
  memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
  return OK;
}
static CUresult m_MemcpyPeerAsync(CUdeviceptr d, void *dctx, CUdeviceptr s, void *sctx, size_t n, void *st) {
  CUresult r;
  NEED_CTX("cuMemcpyPeerAsync");
  if ((r = no_capture("cuMemcpyPeerAsync", st)) != OK) return r;
  if ((r = check_stream("cuMemcpyPeerAsync", st)) != OK || (r = check_range("cuMemcpyPeerAsync", "src", s, n)) != OK ||
      (r = check_range("cuMemcpyPeerAsync", "dst", d, n)) != OK)
    return r;
  if (find(s, n)->dev != ((mock_ctx *)sctx)->dev || find(d, n)->dev != ((mock_ctx *)dctx)->dev)
    return bad("cuMemcpyPeerAsync", "a pointer does not belong to the context given with it", E_INVALID_VALUE);
  memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
  return OK;
}
static CUresult m_MemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, void *st) {
  CUresult r;
  size_t i;
  NEED_CTX("cuMemsetD32Async");
  if ((r = check_stream("cuMemsetD32Async", st)) != OK || (r = check_range("cuMemsetD32Async", "dst", d, n * 4)) != OK) return r;
  if (((mock_stream *)st)->cap) return capture_node(((mock_stream *)st)->cap, NULL, NULL, d, v, n);
  for (i = 0; i < n; i++) ((unsigned int *)(uintptr_t)d)[i] = v;
  return OK;
}
static CUresult m_DeviceGetDefaultMemPool(void **pool, int dev) { NEED_INIT("cuDeviceGetDefaultMemPool"); *pool = &g_ctx[dev]; return OK; }
static CUresult m_MemPoolSetAttribute(void *pool, unsigned int attr, void *value) {
  NEED_INIT("cuMemPoolSetAttribute");
  (void)pool;
  if (attr != 4 || *(uint64_t *)value != ~(uint64_t)0) return bad("cuMemPoolSetAttribute", "unexpected attribute", E_INVALID_VALUE);
  return OK;
}
static CUresult m_MemPoolTrimTo(void *pool, size_t keep) { NEED_INIT("cuMemPoolTrimTo"); (void)pool; (void)keep; return OK; }

/* ---- stream capture and graphs ------------------------------------------------------
 * A capture keeps the stream's launches and memsets (checked as they are
 * made) instead of running them; a launch of the instantiated graph runs
 * them in order, checking every range again (memory freed since shows up).
 * What cannot be captured (a sync, a host copy, a stream-ordered allocation)
 * fails and breaks the capture, as the driver does. */
static CUresult m_StreamBeginCapture(void *s, unsigned int mode) {
  mock_stream *st = (mock_stream *)s;
  CUresult r;
  NEED_CTX("cuStreamBeginCapture");
  if ((r = check_stream("cuStreamBeginCapture", s)) != OK) return r;
  if (st->cap) return bad("cuStreamBeginCapture", "the stream is capturing already", E_INVALID_VALUE);
  if (mode != 2) return bad("cuStreamBeginCapture", "devkit captures in relaxed mode (its scratch cuMemAlloc)", E_INVALID_VALUE);
  st->cap = (mock_graph *)calloc(1, sizeof *st->cap);
  st->cap->magic = MAGIC_GRAPH;
  st->cap->ctx = g_cur;
  LOCK(); g_live_graphs++; UNLOCK();
  return OK;
}
static void graph_free(mock_graph *g) {
  g->magic = 0;
  free(g->nodes);
  free(g);
  LOCK(); g_live_graphs--; UNLOCK();
}
static CUresult m_StreamEndCapture(void *s, void **graph) {
  mock_stream *st = (mock_stream *)s;
  mock_graph *g;
  CUresult r;
  NEED_CTX("cuStreamEndCapture");
  *graph = NULL;
  if ((r = check_stream("cuStreamEndCapture", s)) != OK) return r;
  if (!(g = st->cap)) return bad("cuStreamEndCapture", "the stream is not capturing", E_INVALID_VALUE);
  st->cap = NULL;
  if (g->broken) { graph_free(g); return E_CAPTURE_INVALIDATED; }
  *graph = g;
  return OK;
}
static CUresult m_GraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
  mock_graph *g = (mock_graph *)graph;
  mock_exec *e;
  NEED_CTX("cuGraphInstantiateWithFlags");
  if (!g || g->magic != MAGIC_GRAPH) return bad("cuGraphInstantiateWithFlags", "not a graph", E_INVALID_HANDLE);
  if (flags) return bad("cuGraphInstantiateWithFlags", "unexpected flags", E_INVALID_VALUE);
  e = (mock_exec *)calloc(1, sizeof *e);
  e->magic = MAGIC_EXEC;
  e->g = g;
  g->execs++;
  *exec = e;
  LOCK(); g_live_graphs++; UNLOCK();
  return OK;
}
static CUresult m_GraphLaunch(void *exec, void *s) {
  mock_exec *e = (mock_exec *)exec;
  const char *fault = getenv("MOCK_CUDA_FAULT_AFTER");
  CUresult r;
  int i;
  NEED_CTX("cuGraphLaunch");
  if ((r = check_stream("cuGraphLaunch", s)) != OK || (r = no_capture("cuGraphLaunch", s)) != OK) return r;
  if (!e || e->magic != MAGIC_EXEC || !e->g || e->g->magic != MAGIC_GRAPH)
    return bad("cuGraphLaunch", "not an executable graph (or its graph was destroyed)", E_INVALID_HANDLE);
  if (e->g->ctx != g_cur) return bad("cuGraphLaunch", "the graph belongs to another context", E_INVALID_CONTEXT);
  for (i = 0; i < e->g->n; i++) {
    mock_node *nd = &e->g->nodes[i];
    if (nd->kernel) {
      if ((r = check_params(nd->kernel, nd->param)) != OK) return r;
      emulate(nd->kernel, nd->param);
      if (fault && !strcmp(fault, nd->kernel)) g_faulted = 1;
    } else {
      size_t j;
      if ((r = check_range("cuGraphLaunch (memset node)", "dst", nd->d, nd->n * 4)) != OK) return r;
      for (j = 0; j < nd->n; j++) ((unsigned int *)(uintptr_t)nd->d)[j] = nd->v;
    }
  }
  return OK;
}
static CUresult m_GraphExecDestroy(void *exec) {
  mock_exec *e = (mock_exec *)exec;
  NEED_INIT("cuGraphExecDestroy");
  if (!e || e->magic != MAGIC_EXEC) return bad("cuGraphExecDestroy", "not an executable graph", E_INVALID_HANDLE);
  if (e->g && e->g->magic == MAGIC_GRAPH) e->g->execs--;
  e->magic = 0;
  free(e);
  LOCK(); g_live_graphs--; UNLOCK();
  return OK;
}
static CUresult m_GraphDestroy(void *graph) {
  mock_graph *g = (mock_graph *)graph;
  NEED_INIT("cuGraphDestroy");
  if (!g || g->magic != MAGIC_GRAPH) return bad("cuGraphDestroy", "not a graph", E_INVALID_HANDLE);
  /* an executable graph is independent of its graph in the driver; the
   * mock's shares the nodes, so devkit's order (exec first) is required */
  if (g->execs) return bad("cuGraphDestroy", "the mock wants its executable graphs destroyed first", E_INVALID_VALUE);
  graph_free(g);
  return OK;
}

/* ---- cuGetProcAddress ---------------------------------------------------------------- */

typedef struct { const char *name; int version; void *fn; } mock_sym;
#define S(n, v) {"cu" #n, v, (void *)m_##n}
static const mock_sym g_syms[] = {
  S(GetErrorString, 6000), S(DeviceGetCount, 2000), S(DeviceGet, 2000), S(DeviceGetName, 2000),
  S(DeviceTotalMem, 3020), S(DeviceGetAttribute, 2000), S(DeviceGetUuid, 11040), S(DeviceCanAccessPeer, 4000),
  S(DevicePrimaryCtxRetain, 7000), S(DevicePrimaryCtxRelease, 11000), S(CtxSetCurrent, 4000),
  S(CtxEnablePeerAccess, 4000), S(ModuleLoadData, 2000), S(ModuleUnload, 2000), S(ModuleGetFunction, 2000),
  S(LaunchKernel, 4000), S(LaunchKernelEx, 11060), S(StreamCreate, 2000), S(StreamDestroy, 4000), S(StreamSynchronize, 2000),
  S(StreamWaitEvent, 3020), S(EventCreate, 2000), S(EventRecord, 2000), S(EventSynchronize, 2000),
  S(EventDestroy, 4000), S(EventElapsedTime, 2000), S(MemAlloc, 3020), S(MemFree, 3020), S(MemGetInfo, 3020), S(MemHostAlloc, 2020),
  S(MemFreeHost, 2000), S(MemcpyHtoDAsync, 3020), S(MemcpyDtoHAsync, 3020), S(MemcpyDtoDAsync, 3020),
  S(MemcpyPeerAsync, 4000), S(MemsetD32Async, 3020), S(MemAllocAsync, 11020), S(MemFreeAsync, 11020),
  S(DeviceGetDefaultMemPool, 11020), S(MemPoolSetAttribute, 11020), S(MemPoolTrimTo, 11020),
  S(StreamBeginCapture, 10010), S(StreamEndCapture, 10000), S(GraphInstantiateWithFlags, 11040), S(GraphLaunch, 10000),
  S(GraphExecDestroy, 10000), S(GraphDestroy, 10000),
};
#undef S

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags, unsigned int *status) {
  size_t i;
  if (flags != 0) return bad("cuGetProcAddress", "flags should be CU_GET_PROC_ADDRESS_DEFAULT", E_INVALID_VALUE);
  for (i = 0; i < sizeof g_syms / sizeof g_syms[0]; i++) {
    if (strcmp(g_syms[i].name, symbol)) continue;
    if (version != g_syms[i].version) {
      char buf[160];
      snprintf(buf, sizeof buf, "%s asked with ABI version %d; the mock implements %d", symbol, version, g_syms[i].version);
      return bad("cuGetProcAddress", buf, E_INVALID_VALUE);
    }
    *pfn = g_syms[i].fn;
    if (status) *status = 0;
    return OK;
  }
  *pfn = NULL;
  if (status) *status = 1;   /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
  return E_NOT_FOUND;
}

/* ---- cuBLAS, for DEVKIT_CUBLAS=<this library> ---------------------------------------
 * The subset backends/cuda.h loads, on host memory, strictly: the handle's
 * context must be current, a stream and a workspace inside a live allocation
 * set before a GEMM, every operand range inside one allocation, and the
 * leading dimensions valid for the sizes. MOCK_CUBLAS_VERSION=<major> (13)
 * reports another version; MOCK_CUBLAS_CREATE_FAIL=1 makes cublasCreate_v2
 * fail (CUBLAS_STATUS_NOT_INITIALIZED). Products are summed in double. */
#define MAGIC_BLAS 0x66
typedef struct { int magic; mock_ctx *ctx; void *stream; void *ws; size_t wsn; } mock_blas;

int cublasGetProperty(int type, int *v) {
  const char *e = getenv("MOCK_CUBLAS_VERSION");
  *v = type == 0 ? (e ? atoi(e) : 13) : 0;
  return 0;
}
int cublasCreate_v2(void **h) {
  mock_blas *b;
  if (!g_cur) { bad("cublasCreate_v2", "no current context", 0); return 1; }
  if (getenv("MOCK_CUBLAS_CREATE_FAIL")) return 1;
  b = (mock_blas *)calloc(1, sizeof *b);
  b->magic = MAGIC_BLAS;
  b->ctx = g_cur;
  *h = b;
  return 0;
}
int cublasDestroy_v2(void *h) {
  mock_blas *b = (mock_blas *)h;
  if (!b || b->magic != MAGIC_BLAS) { bad("cublasDestroy_v2", "not a handle", 0); return 7; }
  b->magic = 0;
  free(b);
  return 0;
}
int cublasSetStream_v2(void *h, void *s) {
  mock_blas *b = (mock_blas *)h;
  if (!b || b->magic != MAGIC_BLAS || check_stream("cublasSetStream_v2", s) != OK) return 7;
  b->stream = s;
  return 0;
}
int cublasSetWorkspace_v2(void *h, void *ws, size_t n) {
  mock_blas *b = (mock_blas *)h;
  if (!b || b->magic != MAGIC_BLAS || check_range("cublasSetWorkspace_v2", "workspace", (CUdeviceptr)(uintptr_t)ws, n) != OK) return 7;
  b->ws = ws;
  b->wsn = n;
  return 0;
}
static int blas_dt(int t) { return t == 0 ? DK_KT_F32 : t == 2 ? DK_KT_F16 : t == 14 ? DK_KT_BF16 : -1; }
int cublasGemmStridedBatchedEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A, int at,
                               int lda, long long sa, const void *B, int bt, int ldb, long long sb, const void *beta,
                               void *C, int ct, int ldc, long long sc, int batch, int compute, int algo) {
  mock_blas *b = (mock_blas *)h;
  const char *fn = "cublasGemmStridedBatchedEx";
  int adt = blas_dt(at), bdt = blas_dt(bt), cdt = blas_dt(ct), z, i, j, l;
  const int ar = ta ? k : m, br = tb ? n : k;   /* rows of A and B as stored (column-major) */
  const long long acols = ta ? m : k, bcols = tb ? k : n;
  const float al = *(const float *)alpha, be = *(const float *)beta;
  if (!b || b->magic != MAGIC_BLAS) { bad(fn, "not a handle", 0); return 7; }
  if (b->ctx != g_cur) { bad(fn, "the handle's context is not current", 0); return 1; }
  if (!b->stream || !b->ws) { bad(fn, "no stream or workspace set", 0); return 7; }
  if (compute != 68 || algo != -1) { bad(fn, "devkit asks CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT", 0); return 7; }
  if (adt < 0 || adt != bdt || cdt < 0 || (cdt != adt && cdt != DK_KT_F32)) { bad(fn, "unsupported type combination", 0); return 15; }
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0 || lda < (ar > 1 ? ar : 1) || ldb < (br > 1 ? br : 1) || ldc < (m > 1 ? m : 1)) {
    bad(fn, "invalid sizes or leading dimensions", 0);
    return 7;
  }
  for (z = 0; z < batch; z++) {
    const uint64_t Az = (uint64_t)(uintptr_t)A + (uint64_t)(z * sa * (long long)es_of(adt));
    const uint64_t Bz = (uint64_t)(uintptr_t)B + (uint64_t)(z * sb * (long long)es_of(bdt));
    const uint64_t Cz = (uint64_t)(uintptr_t)C + (uint64_t)(z * sc * (long long)es_of(cdt));
    if (check_range(fn, "A", Az, (size_t)(((acols - 1) * lda + ar) * (long long)es_of(adt))) != OK ||
        check_range(fn, "B", Bz, (size_t)(((bcols - 1) * ldb + br) * (long long)es_of(bdt))) != OK ||
        check_range(fn, "C", Cz, (size_t)(((long long)(n - 1) * ldc + m) * (long long)es_of(cdt))) != OK)
      return 7;
    for (j = 0; j < n; j++)
      for (i = 0; i < m; i++) {
        double acc = 0;
        for (l = 0; l < k; l++)
          acc += (double)ld_rt(Az, ta ? l + (int64_t)i * lda : i + (int64_t)l * lda, adt) *
                 (double)ld_rt(Bz, tb ? j + (int64_t)l * ldb : l + (int64_t)j * ldb, bdt);
        acc *= al;
        if (be != 0) acc += (double)be * ld_rt(Cz, i + (int64_t)j * ldc, cdt);
        st_rt(Cz, i + (int64_t)j * ldc, (float)acc, cdt);
      }
  }
  return 0;
}
