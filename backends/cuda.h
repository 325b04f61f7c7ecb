/* backends/cuda.h — the CUDA backend.
 *
 * Included by devkit.h at the end of its implementation part (it sees every
 * core helper). It needs no CUDA toolkit at build time and no libcuda at
 * link time:
 *   - the few driver API types and constants it uses are declared below, with
 *     the same ABI as cuda.h (tools/check_cuda_decls.sh compiles them against
 *     the toolkit's cuda.h and cudaTypedefs.h and fails on any difference);
 *   - libcuda.so.1 (or DEVKIT_CUDA_LIBRARY) is dlopen'ed at probe time;
 *     cuInit, cuDriverGetVersion, cuGetErrorName and cuGetProcAddress_v2 come
 *     from dlsym, every other entry point from cuGetProcAddress with the
 *     explicit ABI version whose signature is declared here (cuda.h renames
 *     cuMemAlloc to cuMemAlloc_v2 and so on; asking by base name and version
 *     gets exactly the function declared);
 *   - the kernels (the .cu files in kernels/) travel as one fatbin inside
 *     kernels/generated/dk_kernels.h and are loaded with cuModuleLoadData.
 * No driver, the toolkit's stub library, no GPU, a driver too old: probe
 * returns 0 and the note says why; the kit works on without CUDA.
 *
 * Devices and execution. Each physical GPU (as the driver numbers it, after
 * CUDA_VISIBLE_DEVICES) uses its primary context and one module. Each logical
 * device (DEVKIT_LOGICAL_DEVICES=cuda=2 splits a GPU) has its own
 * non-blocking stream, its own pinned staging buffer and its own embedding
 * status slots; every op is enqueued on the device's stream and returns.
 * Downloads and dk_sync synchronize the stream and then report, in this
 * order, a device fault (naming the ops enqueued since the last good sync,
 * oldest first) and an out-of-range embedding id (naming the id, its
 * position and the tensors).
 *
 * Memory. Stream-ordered cuMemAllocAsync / cuMemFreeAsync on the device's
 * default memory pool with its release threshold raised to "keep
 * everything" — the pool is the caching allocator, and memory freed by one
 * logical device is reused by the other with the ordering the driver
 * inserts. Where the driver has no memory pools (or DEVKIT_CUDA_NO_POOL=1),
 * a size-bucketed free list per logical device over cuMemAlloc. Out of
 * memory: the cache is emptied and the allocation tried once more; then
 * DK_ERR_OUT_OF_MEMORY names the device, the tensor, the size, the driver's
 * free/total and devkit's own use, and the kit keeps working.
 *
 * Transfers. Upload copies the caller's bytes into pinned staging (two
 * halves, so a memcpy overlaps the previous DMA) and returns; download
 * pipelines DMA and memcpy the same way and synchronizes. cuda<->cuda: one
 * logical device: cuMemcpyDtoDAsync; two logical devices of one GPU: the
 * same, after the destination's stream waits for the source's work (and the
 * source's stream then waits for the copy, so a later free or overwrite of
 * the source stays behind it); two GPUs: cuMemcpyPeerAsync with peer access
 * enabled where cuDeviceCanAccessPeer allows (the driver stages through the
 * host otherwise). cuda<->vulkan goes through the core's host staging.
 *
 * Kernels and precision (details at the top of each kernels/ file). Every op
 * computes in f32 and rounds once to the output dtype, as backends/cpu.h
 * does; no fast-math. dk_linear with M <= DK_GEMV_MAXM (4) rows streams the
 * weights once (GEMV, exact f32 arithmetic for every weight dtype). Larger M,
 * and dk_matmul, go to cuBLAS where it is installed (the cuBLAS section
 * below: f32 activations are rounded to f16 for 16-bit and block-format
 * weights, as llama.cpp's prompt path does; f32 and precise weights keep
 * f32). Without cuBLAS (or DEVKIT_CUBLAS=off) devkit's own tiled GEMMs run:
 * f32 activations on f32 FMA (SIMT: f32-accurate, no TF32),
 * f16/bf16 activations on tensor cores (WMMA) with f32 accumulation, the
 * weights converted to the activation's dtype in shared memory (exact for
 * weights of that dtype; round-to-nearest-even for f32, the other 16-bit
 * dtype, and dequantized q8_0/q4_0). dk_matmul likewise (f32: SIMT; f16/bf16:
 * tensor cores). Softmax, norms, sampling and attention sum in double where
 * the CPU does.
 *
 * The reductions over axes, arg reductions on an axis, sqrt/rsqrt/log/abs/
 * neg/erf/clamp/pow, softmax and log-softmax on an axis, where, cumsum and
 * top-k (kernels/reduce.cu, kernels/math.cu) ran on an H100 on 2026-11-25;
 * DEVKIT_CUDA_NEWOPS=0 switches them off. dk_index_select's kernels
 * (kernels/embedding.cu: the ids checked on the device as dk_embedding's,
 * then the gather) ran on an H200 on 2026-11-26; DEVKIT_CUDA_GATHER=0
 * switches them off. The norm or SwiGLU folded into decode's
 * matrix-vector product, dk_graph as CUDA graphs ("graphs" below) and,
 * with them, dk_attention_pos and dk_index_copy reading positions and ids
 * on the device ran on an H200 on 2026-11-28; DEVKIT_CUDA_FUSED_GEMV=0 and
 * DEVKIT_CUDA_GRAPH=0 switch them off.
 *
 * Limits: compute capability 8.0 or newer (the fatbin holds sm_80/86/89/90
 * cubins and compute_90 PTX, compressed: a CUDA 13 driver, r580+, is
 * needed); dk_attention head dims up to DK_ATTN_MAXD (512).
 */
#ifndef DK_BACKEND_CUDA_H
#define DK_BACKEND_CUDA_H

#include <stddef.h>

#include "../kernels/dk_params.h"
#if defined(__has_include)
#if __has_include("../kernels/generated/dk_kernels.h")
#include "../kernels/generated/dk_kernels.h"
#define DK_CUDA_HAVE_FATBIN 1
#endif
#endif

/* ==== driver API declarations (ABI of cuda.h, CUDA 13.0) =================== */

typedef unsigned int dk_cu_result;        /* CUresult (an enum of non-negative values: unsigned int in the ABI) */
typedef int dk_cu_device;                 /* CUdevice */
typedef unsigned long long dk_cu_ptr;     /* CUdeviceptr on 64-bit hosts */
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
struct CUmemPoolHandle_st;
struct CUuuid_st;                         /* 16 bytes; only ever written through a pointer */
struct CUlaunchConfig_st;                 /* passed as dk_cu_launch_config, below */
typedef struct CUctx_st *dk_cu_ctx;
typedef struct CUmod_st *dk_cu_module;
typedef struct CUfunc_st *dk_cu_function;
typedef struct CUstream_st *dk_cu_stream;
typedef struct CUevent_st *dk_cu_event;
typedef struct CUmemPoolHandle_st *dk_cu_mempool;
typedef struct CUgraph_st *dk_cu_graph;
typedef struct CUgraphExec_st *dk_cu_graph_exec;

#define DK_CU_SUCCESS 0u
#define DK_CU_ERROR_INVALID_VALUE 1u
#define DK_CU_ERROR_OUT_OF_MEMORY 2u
#define DK_CU_ERROR_STUB_LIBRARY 34u
#define DK_CU_ERROR_NO_DEVICE 100u
#define DK_CU_ERROR_PEER_ACCESS_ALREADY_ENABLED 704u
#define DK_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16u
#define DK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75u
#define DK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76u
#define DK_CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED 115u
#define DK_CU_STREAM_NON_BLOCKING 1u
#define DK_CU_EVENT_DISABLE_TIMING 2u
#define DK_CU_MEMHOSTALLOC_PORTABLE 1u
#define DK_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD 4u
#define DK_CU_STREAM_CAPTURE_MODE_RELAXED 2u
#define DK_CU_GET_PROC_ADDRESS_DEFAULT 0u
#define DK_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION 6

/* cuLaunchKernelEx's CUlaunchAttribute and CUlaunchConfig, field for field
 * (tools/check_cuda_decls.sh compares sizes and offsets with cuda.h) */
typedef struct {
  int id;                 /* CUlaunchAttributeID */
  char pad[4];
  union { char bytes[64]; int flag; } value;
} dk_cu_launch_attr;
typedef struct {
  unsigned int gx, gy, gz, bx, by, bz, smem;
  struct CUstream_st *stream;
  dk_cu_launch_attr *attrs;
  unsigned int nattrs;
} dk_cu_launch_config;

/* Entry points fetched with cuGetProcAddress: X(name without "cu", ABI
 * version, required, parameter list). The version is the one in the name of
 * cudaTypedefs.h's PFN_cu<name>_v<version>, whose signature this matches. */
#define DK_CUDA_API(X)                                                                          \
  X(GetErrorString, 6000, 0, (dk_cu_result e, const char **s))                                  \
  X(DeviceGetCount, 2000, 1, (int *count))                                                      \
  X(DeviceGet, 2000, 1, (dk_cu_device *dev, int ordinal))                                       \
  X(DeviceGetName, 2000, 1, (char *name, int len, dk_cu_device dev))                            \
  X(DeviceTotalMem, 3020, 1, (size_t *bytes, dk_cu_device dev))                                 \
  X(DeviceGetAttribute, 2000, 1, (int *v, unsigned int attrib, dk_cu_device dev))               \
  X(DeviceGetUuid, 11040, 0, (struct CUuuid_st *uuid, dk_cu_device dev))                        \
  X(DeviceCanAccessPeer, 4000, 1, (int *can, dk_cu_device dev, dk_cu_device peer))              \
  X(DevicePrimaryCtxRetain, 7000, 1, (dk_cu_ctx *ctx, dk_cu_device dev))                        \
  X(DevicePrimaryCtxRelease, 11000, 1, (dk_cu_device dev))                                      \
  X(CtxSetCurrent, 4000, 1, (dk_cu_ctx ctx))                                                    \
  X(CtxEnablePeerAccess, 4000, 1, (dk_cu_ctx peer, unsigned int flags))                         \
  X(ModuleLoadData, 2000, 1, (dk_cu_module *mod, const void *image))                            \
  X(ModuleUnload, 2000, 1, (dk_cu_module mod))                                                  \
  X(ModuleGetFunction, 2000, 1, (dk_cu_function *fn, dk_cu_module mod, const char *name))       \
  X(LaunchKernel, 4000, 1, (dk_cu_function f, unsigned int gx, unsigned int gy, unsigned int gz, \
                            unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem, \
                            dk_cu_stream stream, void **params, void **extra))                  \
  X(LaunchKernelEx, 11060, 0, (const struct CUlaunchConfig_st *config, dk_cu_function f,         \
                               void **params, void **extra))                                    \
  X(StreamCreate, 2000, 1, (dk_cu_stream *s, unsigned int flags))                               \
  X(StreamDestroy, 4000, 1, (dk_cu_stream s))                                                   \
  X(StreamSynchronize, 2000, 1, (dk_cu_stream s))                                               \
  X(StreamWaitEvent, 3020, 1, (dk_cu_stream s, dk_cu_event e, unsigned int flags))              \
  X(EventCreate, 2000, 1, (dk_cu_event *e, unsigned int flags))                                 \
  X(EventRecord, 2000, 1, (dk_cu_event e, dk_cu_stream s))                                      \
  X(EventSynchronize, 2000, 1, (dk_cu_event e))                                                 \
  X(EventDestroy, 4000, 1, (dk_cu_event e))                                                     \
  X(EventElapsedTime, 2000, 0, (float *ms, dk_cu_event start, dk_cu_event end))                 \
  X(MemAlloc, 3020, 1, (dk_cu_ptr *p, size_t n))                                                \
  X(MemFree, 3020, 1, (dk_cu_ptr p))                                                            \
  X(MemGetInfo, 3020, 1, (size_t *free_bytes, size_t *total_bytes))                             \
  X(MemHostAlloc, 2020, 1, (void **p, size_t n, unsigned int flags))                            \
  X(MemFreeHost, 2000, 1, (void *p))                                                            \
  X(MemcpyHtoDAsync, 3020, 1, (dk_cu_ptr dst, const void *src, size_t n, dk_cu_stream s))      \
  X(MemcpyDtoHAsync, 3020, 1, (void *dst, dk_cu_ptr src, size_t n, dk_cu_stream s))            \
  X(MemcpyDtoDAsync, 3020, 1, (dk_cu_ptr dst, dk_cu_ptr src, size_t n, dk_cu_stream s))        \
  X(MemcpyPeerAsync, 4000, 1, (dk_cu_ptr dst, dk_cu_ctx dctx, dk_cu_ptr src, dk_cu_ctx sctx,    \
                               size_t n, dk_cu_stream s))                                       \
  X(MemsetD32Async, 3020, 1, (dk_cu_ptr dst, unsigned int v, size_t n, dk_cu_stream s))        \
  X(MemAllocAsync, 11020, 0, (dk_cu_ptr *p, size_t n, dk_cu_stream s))                          \
  X(MemFreeAsync, 11020, 0, (dk_cu_ptr p, dk_cu_stream s))                                      \
  X(DeviceGetDefaultMemPool, 11020, 0, (dk_cu_mempool *pool, dk_cu_device dev))                 \
  X(MemPoolSetAttribute, 11020, 0, (dk_cu_mempool pool, unsigned int attr, void *value))        \
  X(MemPoolTrimTo, 11020, 0, (dk_cu_mempool pool, size_t keep))                                \
  X(StreamBeginCapture, 10010, 0, (dk_cu_stream s, unsigned int mode))                         \
  X(StreamEndCapture, 10000, 0, (dk_cu_stream s, dk_cu_graph *graph))                          \
  X(GraphInstantiateWithFlags, 11040, 0, (dk_cu_graph_exec *exec, dk_cu_graph graph,             \
                                          unsigned long long flags))                            \
  X(GraphLaunch, 10000, 0, (dk_cu_graph_exec exec, dk_cu_stream s))                              \
  X(GraphExecDestroy, 10000, 0, (dk_cu_graph_exec exec))                                         \
  X(GraphDestroy, 10000, 0, (dk_cu_graph graph))

#define DK__CU_FIELD(name, ver, req, params) dk_cu_result (*name) params;
typedef struct {
  /* from dlsym */
  dk_cu_result (*Init)(unsigned int flags);
  dk_cu_result (*DriverGetVersion)(int *version);
  dk_cu_result (*GetErrorName)(dk_cu_result e, const char **s);
  dk_cu_result (*GetProcAddress)(const char *symbol, void **fn, int version, uint64_t flags, unsigned int *status);
  /* from cuGetProcAddress */
  DK_CUDA_API(DK__CU_FIELD)
} dk__cuda_api_t;
#undef DK__CU_FIELD

typedef struct { const char *name; int version, required; size_t offset; } dk__cuda_sym;
#define DK__CU_ENTRY(name, ver, req, params) {"cu" #name, ver, req, offsetof(dk__cuda_api_t, name)},
static const dk__cuda_sym dk__cuda_syms[] = {DK_CUDA_API(DK__CU_ENTRY)};
#undef DK__CU_ENTRY

/* the kernels, by the names in kernels/dk_params.h */
#define DK__CU_KID(name, params) DK_CUDA_K_##name,
enum { DK_CUDA_KERNELS(DK__CU_KID) DK_CUDA_NKERNELS };
#undef DK__CU_KID
#define DK__CU_KNAME(name, params) #name,
static const char *const dk__cuda_kernel_names[DK_CUDA_NKERNELS] = {DK_CUDA_KERNELS(DK__CU_KNAME)};
#undef DK__CU_KNAME

/* the parameter structs must have the layout the kernels were built with
 * (kernels/dk_common.cuh asserts the same sizes on the device side) */
typedef char dk__cuda_abi_binary[sizeof(dk_kp_binary) == 240 ? 1 : -1];
typedef char dk__cuda_abi_unary[sizeof(dk_kp_unary) == 40 ? 1 : -1];
typedef char dk__cuda_abi_norm[sizeof(dk_kp_norm) == 72 ? 1 : -1];
typedef char dk__cuda_abi_softmax[sizeof(dk_kp_softmax) == 56 ? 1 : -1];
typedef char dk__cuda_abi_gemv[sizeof(dk_kp_gemv) == 96 ? 1 : -1];
typedef char dk__cuda_abi_gemm[sizeof(dk_kp_gemm) == 304 ? 1 : -1];
typedef char dk__cuda_abi_embedding[sizeof(dk_kp_embedding) == 72 ? 1 : -1];
typedef char dk__cuda_abi_gather[sizeof(dk_kp_gather) == 80 ? 1 : -1];
typedef char dk__cuda_abi_rope[sizeof(dk_kp_rope) == 72 ? 1 : -1];
typedef char dk__cuda_abi_concat[sizeof(dk_kp_concat) == 56 ? 1 : -1];
typedef char dk__cuda_abi_copy[sizeof(dk_kp_copy) == 232 ? 1 : -1];
typedef char dk__cuda_abi_pick[sizeof(dk_kp_pick) == 56 ? 1 : -1];
typedef char dk__cuda_abi_attention[sizeof(dk_kp_attention) == 120 ? 1 : -1];
typedef char dk__cuda_abi_attn_split[sizeof(dk_kp_attn_split) == 152 ? 1 : -1];
typedef char dk__cuda_abi_maxd[DEVKIT_MAX_DIMS <= DK_KMAXD ? 1 : -1];
typedef char dk__cuda_abi_gemv_maxm[DK_GEMV_MAXM >= 1 ? 1 : -1];

/* ==== state ================================================================== */

#define DK_CUDA_STAGE_HALF ((size_t)8 << 20)   /* pinned staging: two halves of 8 MiB */
#define DK_CUDA_STATUS_SLOTS 64                /* embedding ops between two syncs, before a forced check */
#define DK_CUDA_RECENT 16                      /* ops remembered for fault messages */

typedef struct {
  int inited, refs;
  dk_cu_device dev;
  dk_cu_ctx ctx;
  dk_cu_module mod;
  dk_cu_function fn[DK_CUDA_NKERNELS];
  int cc_major, cc_minor, sm_count;
  int use_pool;
  dk_cu_mempool pool;
  char name[256];
  signed char peer[DK_MAX_DEVICES];   /* peer access to physical j: 0 untried, 1 on, -1 unavailable */
} dk__cuda_phys;

typedef struct dk__cuda_block {
  struct dk__cuda_block *next;
  dk_cu_ptr ptr;
  size_t size;
} dk__cuda_block;

typedef struct {
  char ids_name[DK_NAME_LEN], ids_site[DK_SITE_LEN], table_name[DK_NAME_LEN];
  long long rows;
  int axis;                  /* dk_index_select's or dk_index_copy's axis (rows: its size); -1 for dk_embedding */
  int op;
} dk__cuda_emb_note;

/* A dk_graph recorded as a CUDA graph (DEVKIT_CUDA_GRAPH=1; "graphs" below) */
#define DK_CUDA_GRAPH_SLOTS 256      /* ops whose ids the device checks, in one graph */
typedef struct { dk_cu_ptr ptr; size_t size; int busy; } dk__cuda_gscr;
typedef struct dk__cuda_graph {
  dk_cu_graph graph;
  dk_cu_graph_exec exec;
  dk_cu_ptr status;                 /* its own DK_CUDA_GRAPH_SLOTS status words, ~0 = clean */
  int status_used;
  int replayed;                     /* replayed since its words were last read */
  dk__cuda_emb_note notes[DK_CUDA_GRAPH_SLOTS];
  dk__cuda_gscr *scr;               /* its ops' scratch buffers, kept while it lives */
  int nscr, capscr;
  dk__cuda_block *freed;            /* blocks freed while capturing: given back after the capture */
  struct dk__cuda_graph *next;      /* the device's live graphs */
} dk__cuda_graph;

typedef struct {
  int physical;
  dk_cu_stream stream;
  dk_cu_event ev_stage[2];   /* recorded after the DMA that last used each staging half */
  int stage_pending[2];
  dk_cu_event ev_xfer;       /* cross-stream ordering for copies between devices */
  dk_cu_event *prof_ev;      /* dk_profile's marks, made on first use, reused after each sync */
  int prof_n, prof_cap;
  unsigned char *pinned;     /* 2 * DK_CUDA_STAGE_HALF bytes, or NULL (pageable fallback) */
  int pinned_failed;
  dk_cu_ptr status;          /* DK_CUDA_STATUS_SLOTS 64-bit words, ~0 = clean */
  int status_used;
  dk__cuda_emb_note notes[DK_CUDA_STATUS_SLOTS];
  int recent[DK_CUDA_RECENT][2];   /* (op, kernel id) ring since the last good sync */
  int recent_n, recent_next;
  long long recent_dropped;
  char fault[512];           /* the first device fault seen, for later messages */
  char pending[1024];        /* a bad embedding id found early, for the next sync to report */
  dk__cuda_block *cache;     /* free blocks (no memory pools) */
  size_t cache_bytes;
  dk_cu_ptr attn_part;       /* split-K attention's partial results: made once, never moved */
  size_t attn_part_bytes;    /* (a recorded graph may hold its address) */
  int attn_part_failed;
  void *blas;                /* cuBLAS handle on this device's stream, made at the first prompt-sized product */
  dk_cu_ptr blas_ws;         /* its workspace (DK_CUBLAS_WORKSPACE bytes) */
  int blas_state;            /* 0 not made yet, 1 made, -1 devkit's kernels (no cuBLAS, or cublasCreate failed) */
  dk__cuda_graph *grec;      /* the graph whose capture holds the stream, or NULL */
  dk__cuda_graph *graphs;    /* the live (ended) graphs: their status words are read at syncs */
} dk__cuda_dev;
static void dk__cuda_graph_drop(dk__cuda_graph *g);
static void dk__cuda_graph_abandon(dk__cuda_dev *ld);

static struct {
  void *lib;
  int cuinit_ok;
  int driver_version;
  char libname[256];
  dk__cuda_api_t api;
  int nphys;
  dk__cuda_phys phys[DK_MAX_DEVICES];
  dk__cuda_dev *dev[DK_MAX_DEVICES];
} dk__cu;

static pthread_mutex_t dk__cuda_peer_lock = PTHREAD_MUTEX_INITIALIZER;

/* ==== cuBLAS (optional) ====================================================== */

/* Prompt-sized products (dk_linear with more than DK_GEMV_MAXM rows of x,
 * dk_matmul) go to cuBLAS when it is installed, as llama.cpp's do: NVIDIA's
 * GEMMs are several times faster than devkit's own tiled kernels on every
 * GPU, and cuBLAS ships with the toolkit and with PyTorch's and CuPy's
 * wheels. Like the driver it is dlopen'ed, never linked: DEVKIT_CUBLAS names
 * a library file, or `off` to keep devkit's kernels; otherwise
 * libcublas.so.13 / .12 on the library path, then in /usr/local/cuda.
 * cuBLAS uses the CUDA runtime, which takes the driver context devkit made
 * current (the primary context), so both share one context and one stream
 * per logical device. Its workspace is allocated by devkit, so running out of
 * memory stays a dk_status. Without it, or when a handle cannot be made on a
 * device, devkit's kernels run; dk_backend_note(DK_CUDA) says which. */
#define DK_CUBLAS_OP_N 0
#define DK_CUBLAS_OP_T 1
#define DK_CUDA_R_32F 0               /* cudaDataType_t (library_types.h) */
#define DK_CUDA_R_16F 2
#define DK_CUDA_R_16BF 14
#define DK_CUBLAS_COMPUTE_32F 68      /* cublasComputeType_t: f32 accumulation, no TF32 */
#define DK_CUBLAS_GEMM_DEFAULT (-1)
#define DK_CUBLAS_MIN_MAJOR 11        /* cublasGemmEx with cublasComputeType_t */
#define DK_CUBLAS_WORKSPACE ((size_t)32 << 20)   /* NVIDIA's advice for Hopper; smaller GPUs use part of it */
#define DK_CUDA_DEQUANT_BYTES ((size_t)64 << 20) /* scratch for a weight dequantized for cuBLAS, per product */

typedef int (*dk__cublas_gemm_fn)(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A,
                                  int at, int lda, long long sa, const void *B, int bt, int ldb, long long sb,
                                  const void *beta, void *C, int ct, int ldc, long long sc, int batch, int compute,
                                  int algo);
static struct {
  int state;                  /* 0 not tried, 1 loaded, -1 absent, refused or off */
  void *lib;
  int major, minor, patch;
  char path[256];
  char note[400];             /* what dk_backend_note says about it */
  int (*Create)(void **h);
  int (*Destroy)(void *h);
  int (*SetStream)(void *h, dk_cu_stream s);
  int (*SetWorkspace)(void *h, void *ws, size_t n);
  int (*GetProperty)(int type, int *v);
  dk__cublas_gemm_fn GemmStridedBatchedEx;
} dk__cublas;

/* cuBLAS's status codes by name (cublas_api.h) */
static const char *dk__cublas_err(int s) {
  switch (s) {
  case 0: return "CUBLAS_STATUS_SUCCESS";
  case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
  case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
  case 7: return "CUBLAS_STATUS_INVALID_VALUE";
  case 8: return "CUBLAS_STATUS_ARCH_MISMATCH";
  case 11: return "CUBLAS_STATUS_MAPPING_ERROR";
  case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
  case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
  case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
  case 16: return "CUBLAS_STATUS_LICENSE_ERROR";
  default: return "an unknown cuBLAS status";
  }
}

static void *dk__cublas_open(const char *path) {
  void *h;
  dlerror();
  h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h) snprintf(dk__cublas.path, sizeof dk__cublas.path, "%.250s", path);
  return h;
}

/* Once per process, after the driver probe found a GPU. Never unloaded (the
 * runtime inside it holds the context). */
static void dk__cublas_load(void) {
  static const char *const names[] = {"libcublas.so.13", "libcublas.so.12"};
  static const char *const dirs[] = {"", "/usr/local/cuda/lib64/", "/usr/local/cuda/lib/"};
  const char *env = getenv("DEVKIT_CUBLAS");
  char path[300];
  size_t d, i;
  void *h = NULL;
  if (dk__cublas.state) return;
  dk__cublas.state = -1;
  if (env && (!strcmp(env, "off") || !strcmp(env, "0"))) {
    snprintf(dk__cublas.note, sizeof dk__cublas.note, "prompt GEMMs: devkit's kernels (DEVKIT_CUBLAS=%s)", env);
    return;
  }
  if (env && *env) {
    if (!(h = dk__cublas_open(env))) {
      const char *e = dlerror();
      snprintf(dk__cublas.note, sizeof dk__cublas.note, "prompt GEMMs: devkit's kernels (DEVKIT_CUBLAS=%.200s: %.120s)",
               env, e ? e : "dlopen failed");
      return;
    }
  }
  for (d = 0; !h && d < sizeof dirs / sizeof dirs[0]; d++)
    for (i = 0; !h && i < sizeof names / sizeof names[0]; i++) {
      snprintf(path, sizeof path, "%s%s", dirs[d], names[i]);
      h = dk__cublas_open(path);
    }
  if (!h) {
    snprintf(dk__cublas.note, sizeof dk__cublas.note,
             "prompt GEMMs: devkit's kernels (cuBLAS not found: libcublas.so.13/.12 are not on the library path or in "
             "/usr/local/cuda; DEVKIT_CUBLAS=<file> names one)");
    return;
  }
  *(void **)&dk__cublas.Create = dlsym(h, "cublasCreate_v2");
  *(void **)&dk__cublas.Destroy = dlsym(h, "cublasDestroy_v2");
  *(void **)&dk__cublas.SetStream = dlsym(h, "cublasSetStream_v2");
  *(void **)&dk__cublas.SetWorkspace = dlsym(h, "cublasSetWorkspace_v2");
  *(void **)&dk__cublas.GetProperty = dlsym(h, "cublasGetProperty");
  *(void **)&dk__cublas.GemmStridedBatchedEx = dlsym(h, "cublasGemmStridedBatchedEx");
  if (!dk__cublas.Create || !dk__cublas.Destroy || !dk__cublas.SetStream || !dk__cublas.SetWorkspace ||
      !dk__cublas.GetProperty || !dk__cublas.GemmStridedBatchedEx) {
    snprintf(dk__cublas.note, sizeof dk__cublas.note,
             "prompt GEMMs: devkit's kernels (%.200s lacks cublasCreate_v2/SetWorkspace_v2/GemmStridedBatchedEx: not "
             "a cuBLAS of version %d or newer)", dk__cublas.path, DK_CUBLAS_MIN_MAJOR);
    dlclose(h);   /* nothing of it ran */
    return;
  }
  if (dk__cublas.GetProperty(0, &dk__cublas.major) != 0 || dk__cublas.GetProperty(1, &dk__cublas.minor) != 0 ||
      dk__cublas.GetProperty(2, &dk__cublas.patch) != 0 || dk__cublas.major < DK_CUBLAS_MIN_MAJOR) {
    snprintf(dk__cublas.note, sizeof dk__cublas.note,
             "prompt GEMMs: devkit's kernels (%.200s is cuBLAS %d.%d; devkit needs %d or newer)", dk__cublas.path,
             dk__cublas.major, dk__cublas.minor, DK_CUBLAS_MIN_MAJOR);
    dlclose(h);
    return;
  }
  dk__cublas.lib = h;
  dk__cublas.state = 1;
  snprintf(dk__cublas.note, sizeof dk__cublas.note, "prompt GEMMs: cuBLAS %d.%d.%d (%.200s; DEVKIT_CUBLAS=off for devkit's kernels)",
           dk__cublas.major, dk__cublas.minor, dk__cublas.patch, dk__cublas.path);
}

/* ==== error text ============================================================= */

static const char *dk__cuda_err_name(dk_cu_result r) {
  const char *s = NULL;
  if (dk__cu.api.GetErrorName && dk__cu.api.GetErrorName(r, &s) == DK_CU_SUCCESS && s) return s;
  switch (r) {   /* the stub library and unknown codes give no name */
  case 0: return "CUDA_SUCCESS";
  case 1: return "CUDA_ERROR_INVALID_VALUE";
  case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
  case 3: return "CUDA_ERROR_NOT_INITIALIZED";
  case 4: return "CUDA_ERROR_DEINITIALIZED";
  case 34: return "CUDA_ERROR_STUB_LIBRARY";
  case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
  case 46: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
  case 100: return "CUDA_ERROR_NO_DEVICE";
  case 101: return "CUDA_ERROR_INVALID_DEVICE";
  case 209: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
  case 222: return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
  case 304: return "CUDA_ERROR_OPERATING_SYSTEM";
  case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
  case 719: return "CUDA_ERROR_LAUNCH_FAILED";
  case 803: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
  case 804: return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
  case 999: return "CUDA_ERROR_UNKNOWN";
  default: return "CUDA_ERROR_?";
  }
}

/* "CUDA_ERROR_X (n: description)" in a small thread-local ring, so that two
 * can sit in one message */
static const char *dk__cuda_err(dk_cu_result r) {
  static DK_TLS char ring[4][200];
  static DK_TLS int next = 0;
  char *b = ring[next++ & 3];
  const char *desc = NULL;
  if (!dk__cu.api.GetErrorString || dk__cu.api.GetErrorString(r, &desc) != DK_CU_SUCCESS) desc = NULL;
  if (desc) snprintf(b, 200, "%s (%u: %s)", dk__cuda_err_name(r), r, desc);
  else snprintf(b, 200, "%s (%u)", dk__cuda_err_name(r), r);
  return b;
}

/* errors the driver reports for work that already ran: the context is
 * unusable afterwards, and every later call returns the same code */
static int dk__cuda_is_fault(dk_cu_result r) {
  return r == 700 || r == 702 || r == 709 || r == 710 || (r >= 714 && r <= 719) || r == 999;
}

/* The ops enqueued on ld since the last good sync, oldest first. */
static void dk__cuda_recent_str(const dk__cuda_dev *ld, char *buf, size_t cap) {
  dk__sb sb;
  int i, start = (ld->recent_next - ld->recent_n + DK_CUDA_RECENT) % DK_CUDA_RECENT;
  dk__sb_init(&sb, buf, cap);
  if (ld->recent_n == 0) { dk__sbf(&sb, "none"); return; }
  if (ld->recent_dropped) dk__sbf(&sb, "(%lld earlier) ", ld->recent_dropped);
  for (i = 0; i < ld->recent_n; i++) {
    const int *e = ld->recent[(start + i) % DK_CUDA_RECENT];
    dk__sbf(&sb, "%s%s [%s]", i ? ", " : "", e[0] >= 0 ? dk__op_name((dk_op)e[0]) : "transfer",
            e[1] >= 0 ? dk__cuda_kernel_names[e[1]] : e[1] == -2 ? "cuBLAS GEMM" : "copy");
  }
}

static void dk__cuda_recent_add(dk__cuda_dev *ld, int op, int kid) {
  ld->recent[ld->recent_next][0] = op;
  ld->recent[ld->recent_next][1] = kid;
  ld->recent_next = (ld->recent_next + 1) % DK_CUDA_RECENT;
  if (ld->recent_n < DK_CUDA_RECENT) ld->recent_n++;
  else ld->recent_dropped++;
}

static void dk__cuda_recent_clear(dk__cuda_dev *ld) {
  ld->recent_n = 0;
  ld->recent_dropped = 0;
}

/* Report a failed driver call on logical device `index`: what was being
 * done, the driver's error, and for device faults the ops that may have
 * caused it. */
static dk_status dk__cuda_fail(int index, const char *what, dk_cu_result r) {
  dk__cuda_dev *ld = index >= 0 ? dk__cu.dev[index] : NULL;
  if (ld && dk__cuda_is_fault(r)) {
    char recent[1536];
    dk__cuda_recent_str(ld, recent, sizeof recent);
    if (!ld->fault[0]) {
      snprintf(ld->fault, sizeof ld->fault, "%s", dk__cuda_err(r));
      return dk__error(DK_ERR_BACKEND,
                       "cuda:%d: %s: the device failed while running queued work: %s. Ops enqueued since the "
                       "last good sync, oldest first: %s. The CUDA context of this GPU is unusable from now on "
                       "(a sticky driver error); restart the process to use it again",
                       index, what, dk__cuda_err(r), recent);
    }
    return dk__error(DK_ERR_BACKEND, "cuda:%d: %s: %s; the device already failed earlier (%s) and stays unusable",
                     index, what, dk__cuda_err(r), ld->fault);
  }
  if (index >= 0) return dk__error(DK_ERR_BACKEND, "cuda:%d: %s: %s", index, what, dk__cuda_err(r));
  return dk__error(DK_ERR_BACKEND, "cuda: %s: %s", what, dk__cuda_err(r));
}

/* A switch read once: 1 when the variable equals on_value, 0 when it equals
 * off_value, else dflt. The session that runs a new kernel on a GPU flips
 * its default. */
static int dk__cuda_switch(const char *name, const char *on_value, const char *off_value, int dflt) {
  const char *e = getenv(name);
  if (e && !strcmp(e, on_value)) return 1;
  if (e && !strcmp(e, off_value)) return 0;
  return dflt;
}

/* DEVKIT_CUDA_FLASH=1: prompts' attention on tensor cores (kernels/
 * attention.cu's dk_attn_flash_f16: q and the probabilities in f16; not yet
 * run on a GPU) */
static int dk__cuda_flash_on(void) {
  static int on = -1;
  if (on < 0) on = dk__cuda_switch("DEVKIT_CUDA_FLASH", "1", "0", 0);
  return on;
}

/* DEVKIT_CUDA_ATTN_WINDOW=1: dk_attention_window in one launch, the _win
 * forms of the attention kernels starting each row at its first key (not
 * yet run on a GPU); by default a dk_attention per row past the window */
static int dk__cuda_attn_window_on(void) {
  static int on = -1;
  if (on < 0) on = dk__cuda_switch("DEVKIT_CUDA_ATTN_WINDOW", "1", "0", 0);
  return on;
}

/* DEVKIT_CUDA_GEMVK=1: decode with q4_1..q6_K and iq weights in rows per
 * block, 8 values a thread (kernels/linear.cu's dk_gemv2k_*; not yet run on
 * a GPU); by default dk_gemv_w_more, a value at a time */
static int dk__cuda_gemvk_on(void) {
  static int on = -1;
  if (on < 0) on = dk__cuda_switch("DEVKIT_CUDA_GEMVK", "1", "0", 0);
  return on;
}

/* ==== probe ================================================================== */

static int dk__cuda_probe(char *note, size_t note_len) {
  const char *path = getenv("DEVKIT_CUDA_LIBRARY");
  dk_cu_result r;
  int n = 0;
  size_t i;
  if (!path || !*path) path = "libcuda.so.1";
#ifndef DK_CUDA_HAVE_FATBIN
  snprintf(note, note_len, "kernels/generated/dk_kernels.h is missing: run tools/gen_kernels.sh (needs nvcc)");
  return 0;
#endif
  if (dk__cu.lib && strcmp(dk__cu.libname, path) != 0) {
    snprintf(note, note_len, "%s is already loaded; DEVKIT_CUDA_LIBRARY cannot change within a process", dk__cu.libname);
    return 0;
  }
  if (!dk__cu.lib) {
    const char *e;
    memset(&dk__cu.api, 0, sizeof dk__cu.api);
    dlerror();
    dk__cu.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dk__cu.lib) {
      e = dlerror();
      snprintf(note, note_len, "%s not found (%s)", path, e ? e : "dlopen failed");
      return 0;
    }
    snprintf(dk__cu.libname, sizeof dk__cu.libname, "%s", path);
    /* function pointers from dlsym: the object-pointer-to-function cast goes
     * through the pointer's bytes (ISO C has no direct conversion) */
    *(void **)&dk__cu.api.Init = dlsym(dk__cu.lib, "cuInit");
    *(void **)&dk__cu.api.DriverGetVersion = dlsym(dk__cu.lib, "cuDriverGetVersion");
    *(void **)&dk__cu.api.GetErrorName = dlsym(dk__cu.lib, "cuGetErrorName");
    *(void **)&dk__cu.api.GetProcAddress = dlsym(dk__cu.lib, "cuGetProcAddress_v2");
    if (!dk__cu.api.Init || !dk__cu.api.DriverGetVersion) {
      snprintf(note, note_len, "%s has no cuInit/cuDriverGetVersion: not a CUDA driver", path);
      goto unload;
    }
    r = dk__cu.api.Init(0);
    if (r != DK_CU_SUCCESS) {
      const char *why = r == DK_CU_ERROR_STUB_LIBRARY ? ": this is the CUDA toolkit's stub library, not a driver"
                        : r == DK_CU_ERROR_NO_DEVICE ? ": the driver sees no NVIDIA GPU (check CUDA_VISIBLE_DEVICES)"
                        : r == 35 ? ": the installed driver is older than this libcuda" : "";
      snprintf(note, note_len, "cuInit: %s (%u)%s", dk__cuda_err_name(r), r, why);
      goto unload;
    }
    dk__cu.cuinit_ok = 1;
  }
  if (dk__cu.api.DriverGetVersion(&dk__cu.driver_version) != DK_CU_SUCCESS) dk__cu.driver_version = 0;
  if (!dk__cu.api.GetProcAddress) {
    snprintf(note, note_len, "the CUDA driver (%d.%d) has no cuGetProcAddress_v2; devkit needs a CUDA 12.0 or newer driver",
             dk__cu.driver_version / 1000, dk__cu.driver_version % 1000 / 10);
    return 0;
  }
  for (i = 0; i < sizeof dk__cuda_syms / sizeof dk__cuda_syms[0]; i++) {
    const dk__cuda_sym *s = &dk__cuda_syms[i];
    void *fn = NULL;
    unsigned int found = 0;
    r = dk__cu.api.GetProcAddress(s->name, &fn, s->version, DK_CU_GET_PROC_ADDRESS_DEFAULT, &found);
    if (r != DK_CU_SUCCESS || found != 0) fn = NULL;
    memcpy((char *)&dk__cu.api + s->offset, &fn, sizeof fn);
    if (!fn && s->required) {
      snprintf(note, note_len, "the CUDA driver %d.%d lacks %s (ABI %d.%d): %s", dk__cu.driver_version / 1000,
               dk__cu.driver_version % 1000 / 10, s->name, s->version / 1000, s->version % 1000 / 10,
               r != DK_CU_SUCCESS ? dk__cuda_err(r) : "not found");
      return 0;
    }
  }
  r = dk__cu.api.DeviceGetCount(&n);
  if (r != DK_CU_SUCCESS || n <= 0) {
    snprintf(note, note_len, "no CUDA devices (cuDeviceGetCount: %s, %d devices)", dk__cuda_err_name(r), n);
    return 0;
  }
  if (n > DK_MAX_DEVICES) n = DK_MAX_DEVICES;
  dk__cu.nphys = n;
  dk__cublas_load();
  return n;
unload:
  /* cuInit never succeeded: nothing of the driver is running, so it is safe
   * to unload (a later dk_init may find another library) */
  dlclose(dk__cu.lib);
  dk__cu.lib = NULL;
  dk__cu.libname[0] = 0;
  memset(&dk__cu.api, 0, sizeof dk__cu.api);
  return 0;
}

/* ==== devices ================================================================ */

static dk_status dk__cuda_set_ctx(int physical, int index) {
  dk_cu_result r = dk__cu.api.CtxSetCurrent(dk__cu.phys[physical].ctx);
  return r == DK_CU_SUCCESS ? DK_OK : dk__cuda_fail(index, "cuCtxSetCurrent", r);
}

static dk_status dk__cuda_open_physical(int physical) {
  dk__cuda_phys *ph = &dk__cu.phys[physical];
  const dk__cuda_api_t *a = &dk__cu.api;
  dk_cu_result r;
  int k, pools = 0;
  char what[160];
  const char *nopool = getenv("DEVKIT_CUDA_NO_POOL");
  memset(ph, 0, sizeof *ph);
  if ((r = a->DeviceGet(&ph->dev, physical)) != DK_CU_SUCCESS) return dk__cuda_fail(-1, "cuDeviceGet", r);
  if ((r = a->DeviceGetName(ph->name, (int)sizeof ph->name - 1, ph->dev)) != DK_CU_SUCCESS)
    snprintf(ph->name, sizeof ph->name, "NVIDIA GPU %d", physical);
  if (a->DeviceGetAttribute(&ph->cc_major, DK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ph->dev) != DK_CU_SUCCESS ||
      a->DeviceGetAttribute(&ph->cc_minor, DK_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, ph->dev) != DK_CU_SUCCESS)
    return dk__error(DK_ERR_BACKEND, "cuda: cannot read the compute capability of %s", ph->name);
  if (a->DeviceGetAttribute(&ph->sm_count, DK_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, ph->dev) != DK_CU_SUCCESS)
    ph->sm_count = 0;
  if (ph->cc_major < 8)
    return dk__error(DK_ERR_UNSUPPORTED,
                     "%s has compute capability %d.%d; devkit's CUDA kernels are built for 8.0 (Ampere) and newer",
                     ph->name, ph->cc_major, ph->cc_minor);
  if ((r = a->DevicePrimaryCtxRetain(&ph->ctx, ph->dev)) != DK_CU_SUCCESS)
    return dk__cuda_fail(-1, "cuDevicePrimaryCtxRetain", r);
  if ((r = a->CtxSetCurrent(ph->ctx)) != DK_CU_SUCCESS) {
    a->DevicePrimaryCtxRelease(ph->dev);
    return dk__cuda_fail(-1, "cuCtxSetCurrent", r);
  }
#ifdef DK_CUDA_HAVE_FATBIN
  r = a->ModuleLoadData(&ph->mod, dk_cuda_fatbin);
#else
  r = DK_CU_ERROR_INVALID_VALUE;
#endif
  if (r != DK_CU_SUCCESS) {
    a->DevicePrimaryCtxRelease(ph->dev);
    return dk__error(DK_ERR_BACKEND,
                     "cuModuleLoadData: %s: the embedded kernels (nvcc 13.0: cubins sm_80/86/89/90, PTX compute_90) do "
                     "not load on %s (compute capability %d.%d) with CUDA driver %d.%d; they need a CUDA 13 driver "
                     "(r580 or newer)",
                     dk__cuda_err(r), ph->name, ph->cc_major, ph->cc_minor, dk__cu.driver_version / 1000,
                     dk__cu.driver_version % 1000 / 10);
  }
  for (k = 0; k < DK_CUDA_NKERNELS; k++) {
    if ((r = a->ModuleGetFunction(&ph->fn[k], ph->mod, dk__cuda_kernel_names[k])) != DK_CU_SUCCESS) {
      a->ModuleUnload(ph->mod);
      a->DevicePrimaryCtxRelease(ph->dev);
      snprintf(what, sizeof what, "kernel %s is missing from the module (kernels/generated/dk_kernels.h is stale: "
               "run tools/gen_kernels.sh)", dk__cuda_kernel_names[k]);
      return dk__cuda_fail(-1, what, r);
    }
  }
  if (a->MemAllocAsync && a->MemFreeAsync && a->DeviceGetDefaultMemPool && a->MemPoolSetAttribute &&
      !(nopool && nopool[0] == '1') &&
      a->DeviceGetAttribute(&pools, DK_CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, ph->dev) == DK_CU_SUCCESS && pools &&
      a->DeviceGetDefaultMemPool(&ph->pool, ph->dev) == DK_CU_SUCCESS) {
    /* keep freed memory in the pool instead of returning it at every sync:
     * the pool is devkit's caching allocator */
    uint64_t keep = ~(uint64_t)0;
    ph->use_pool = a->MemPoolSetAttribute(ph->pool, DK_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep) == DK_CU_SUCCESS;
  }
  ph->inited = 1;
  return DK_OK;
}

static void dk__cuda_close_physical(int physical) {
  dk__cuda_phys *ph = &dk__cu.phys[physical];
  if (!ph->inited) return;
  if (dk__cu.api.CtxSetCurrent(ph->ctx) == DK_CU_SUCCESS) {
    if (ph->use_pool && dk__cu.api.MemPoolTrimTo) dk__cu.api.MemPoolTrimTo(ph->pool, 0);
    dk__cu.api.ModuleUnload(ph->mod);
  }
  dk__cu.api.CtxSetCurrent(NULL);
  dk__cu.api.DevicePrimaryCtxRelease(ph->dev);
  ph->inited = 0;
}

static void dk__cuda_free_cache(dk__cuda_dev *ld) {
  while (ld->cache) {
    dk__cuda_block *b = ld->cache;
    ld->cache = b->next;
    dk__cu.api.MemFree(b->ptr);
    free(b);
  }
  ld->cache_bytes = 0;
}

static void dk__cuda_close_logical(int index) {
  dk__cuda_dev *ld = dk__cu.dev[index];
  int i;
  if (!ld) return;
  if (dk__cu.api.CtxSetCurrent(dk__cu.phys[ld->physical].ctx) == DK_CU_SUCCESS) {
    dk__cuda_graph *g;
    dk__cuda_graph_abandon(ld);
    if (ld->stream) dk__cu.api.StreamSynchronize(ld->stream);   /* errors: nothing left to report them to */
    /* live graphs keep only their host memory, freed by dk_graph_free */
    for (g = ld->graphs; g; g = g->next) dk__cuda_graph_drop(g);
    dk__cuda_free_cache(ld);
    if (ld->status) dk__cu.api.MemFree(ld->status);
    if (ld->attn_part) dk__cu.api.MemFree(ld->attn_part);
    if (ld->blas) dk__cublas.Destroy(ld->blas);
    if (ld->blas_ws) dk__cu.api.MemFree(ld->blas_ws);
    for (i = 0; i < 2; i++)
      if (ld->ev_stage[i]) dk__cu.api.EventDestroy(ld->ev_stage[i]);
    if (ld->ev_xfer) dk__cu.api.EventDestroy(ld->ev_xfer);
    for (i = 0; i < ld->prof_cap; i++) dk__cu.api.EventDestroy(ld->prof_ev[i]);
    if (ld->stream) dk__cu.api.StreamDestroy(ld->stream);
    if (ld->pinned) dk__cu.api.MemFreeHost(ld->pinned);
  }
  dk__cu.phys[ld->physical].refs--;
  free(ld->prof_ev);
  free(ld);
  dk__cu.dev[index] = NULL;
}

static dk_status dk__cuda_open(int logical, int physical, int slot) {
  const dk__cuda_api_t *a = &dk__cu.api;
  dk__cuda_dev *ld;
  dk_cu_result r;
  dk_status s;
  int i;
  (void)slot;
  if (logical < 0 || logical >= DK_MAX_DEVICES || physical < 0 || physical >= dk__cu.nphys)
    return dk__error(DK_ERR_NO_DEVICE, "cuda: no physical device %d", physical);
  if (!dk__cu.phys[physical].inited && (s = dk__cuda_open_physical(physical)) != DK_OK) return s;
  ld = (dk__cuda_dev *)calloc(1, sizeof *ld);
  if (!ld) return dk__error(DK_ERR_OUT_OF_MEMORY, "cuda:%d: no host memory for the device record", logical);
  ld->physical = physical;
  dk__cu.dev[logical] = ld;
  dk__cu.phys[physical].refs++;
  if ((s = dk__cuda_set_ctx(physical, logical)) != DK_OK) goto fail;
  if ((r = a->StreamCreate(&ld->stream, DK_CU_STREAM_NON_BLOCKING)) != DK_CU_SUCCESS) { s = dk__cuda_fail(logical, "cuStreamCreate", r); goto fail; }
  for (i = 0; i < 2; i++)
    if ((r = a->EventCreate(&ld->ev_stage[i], DK_CU_EVENT_DISABLE_TIMING)) != DK_CU_SUCCESS) { s = dk__cuda_fail(logical, "cuEventCreate", r); goto fail; }
  if ((r = a->EventCreate(&ld->ev_xfer, DK_CU_EVENT_DISABLE_TIMING)) != DK_CU_SUCCESS) { s = dk__cuda_fail(logical, "cuEventCreate", r); goto fail; }
  if ((r = a->MemAlloc(&ld->status, 8 * DK_CUDA_STATUS_SLOTS)) != DK_CU_SUCCESS) { s = dk__cuda_fail(logical, "cuMemAlloc (status slots)", r); goto fail; }
  if ((r = a->MemsetD32Async(ld->status, 0xffffffffu, 2 * DK_CUDA_STATUS_SLOTS, ld->stream)) != DK_CU_SUCCESS ||
      (r = a->StreamSynchronize(ld->stream)) != DK_CU_SUCCESS) {
    s = dk__cuda_fail(logical, "clearing the status slots", r);
    goto fail;
  }
  return DK_OK;
fail:
  dk__cuda_close_logical(logical);
  if (dk__cu.phys[physical].refs == 0) dk__cuda_close_physical(physical);
  return s;
}

static void dk__cuda_close_all(void) {
  int i;
  if (!dk__cu.lib || !dk__cu.cuinit_ok) return;
  for (i = 0; i < DK_MAX_DEVICES; i++) dk__cuda_close_logical(i);
  for (i = 0; i < dk__cu.nphys; i++) dk__cuda_close_physical(i);
  dk__cu.nphys = 0;
  /* libcuda stays loaded: unloading a driver that has run is not safe, and
   * a later dk_init reuses it */
}

static dk_status dk__cuda_properties(int physical, dk_device_props *p) {
  const dk__cuda_phys *ph;
  size_t total = 0, free_b = 0;
  unsigned char uuid[16];
  if (physical < 0 || physical >= dk__cu.nphys || !dk__cu.phys[physical].inited)
    return dk__error(DK_ERR_NO_DEVICE, "cuda: physical device %d is not open", physical);
  ph = &dk__cu.phys[physical];
  snprintf(p->name, sizeof p->name, "%s", ph->name);
  snprintf(p->vendor, sizeof p->vendor, "NVIDIA");
  snprintf(p->driver, sizeof p->driver, "CUDA driver %d.%d (%.48s), compute capability %d.%d, %d SMs",
           dk__cu.driver_version / 1000, dk__cu.driver_version % 1000 / 10, dk__cu.libname, ph->cc_major,
           ph->cc_minor, ph->sm_count);
  if (dk__cu.api.DeviceTotalMem(&total, ph->dev) == DK_CU_SUCCESS) p->memory_total = total;
  if (dk__cu.api.CtxSetCurrent(ph->ctx) == DK_CU_SUCCESS && dk__cu.api.MemGetInfo(&free_b, &total) == DK_CU_SUCCESS)
    p->memory_free = free_b;
  if (dk__cu.api.DeviceGetUuid && dk__cu.api.DeviceGetUuid((struct CUuuid_st *)(void *)uuid, ph->dev) == DK_CU_SUCCESS) {
    memcpy(p->uuid, uuid, 16);
    p->has_uuid = 1;
  }
  p->is_software = 0;
  p->supports_f16 = 1;
  p->supports_bf16 = ph->cc_major >= 8;
  p->supports_int8_dot = 1;   /* dp4a: every GPU devkit runs on (cc >= 8.0) */
  p->subgroup_size = 32;
  p->prompt_x16 = 1;   /* cuBLAS, or DEVKIT_CUDA_PROMPT_TC's kernels */
  p->attn_x16 = dk__cuda_flash_on();
  return DK_OK;
}

/* ==== memory ================================================================= */

static dk__cuda_dev *dk__cuda_ld(dk_device d) { return dk__cu.dev[d.index]; }

/* The context of d's GPU, current on this thread: every entry point starts here. */
static dk_status dk__cuda_enter(dk_device d) {
  const dk__cuda_dev *ld = dk__cuda_ld(d);
  if (!ld) return dk__error(DK_ERR_NO_DEVICE, "cuda:%d is not open", d.index);
  return dk__cuda_set_ctx(ld->physical, d.index);
}

/* bucket sizes for the free-list cache: powers of two up to 1 MiB, then
 * whole MiB, so a freed block fits the next request of about its size */
static size_t dk__cuda_bucket(size_t n) {
  size_t b = 256;
  if (n > ((size_t)1 << 20)) return (n + ((size_t)1 << 20) - 1) & ~(((size_t)1 << 20) - 1);
  while (b < n) b <<= 1;
  return b;
}

static dk_cu_result dk__cuda_alloc_raw(dk__cuda_dev *ld, size_t n, dk_cu_ptr *p, size_t *got) {
  const dk__cuda_phys *ph = &dk__cu.phys[ld->physical];
  /* while a graph captures the stream a stream-ordered allocation would be
   * captured into it (and made anew at each replay): a tensor made then
   * gets a plain block, marked in bit 0 of its size (sizes are multiples
   * of 256) so that it goes back to the free list, never to the pool */
  if (ph->use_pool && !ld->grec) {
    *got = n;
    return dk__cu.api.MemAllocAsync(p, n, ld->stream);
  } else {
    size_t b = dk__cuda_bucket(n);
    dk__cuda_block **pp;
    for (pp = &ld->cache; *pp; pp = &(*pp)->next) {
      if ((*pp)->size == b) {
        dk__cuda_block *blk = *pp;
        *pp = blk->next;
        *p = blk->ptr;
        *got = ph->use_pool ? b | 1 : b;
        ld->cache_bytes -= b;
        free(blk);
        return DK_CU_SUCCESS;   /* last used on this stream: stream order protects it */
      }
    }
    *got = ph->use_pool ? b | 1 : b;
    return dk__cu.api.MemAlloc(p, b);
  }
}

static dk_status dk__cuda_alloc(dk_device d, size_t nbytes, const char *tensor_name, dk_storage *st) {
  dk__cuda_dev *ld = dk__cuda_ld(d);
  dk__cuda_phys *ph;
  size_t n = nbytes ? (nbytes + 255) & ~(size_t)255 : 256, got = 0, free_b = 0, total = 0;
  dk_cu_ptr p = 0;
  dk_cu_result r;
  dk_status s;
  if ((s = dk__cuda_enter(d)) != DK_OK) return s;
  ph = &dk__cu.phys[ld->physical];
  if (n < nbytes) return dk__error(DK_ERR_OUT_OF_MEMORY, "cuda:%d: tensor '%s': %zu bytes cannot be allocated", d.index, tensor_name, nbytes);
  r = dk__cuda_alloc_raw(ld, n, &p, &got);
  if (r == DK_CU_ERROR_OUT_OF_MEMORY && !ld->grec) {   /* (a capture cannot hold the sync) */
    /* give back what the caches hold once, then try again */
    dk__cu.api.StreamSynchronize(ld->stream);
    dk__cuda_free_cache(ld);
    if (ph->use_pool && dk__cu.api.MemPoolTrimTo) dk__cu.api.MemPoolTrimTo(ph->pool, 0);
    r = dk__cuda_alloc_raw(ld, n, &p, &got);
  }
  if (r == DK_CU_ERROR_OUT_OF_MEMORY) {
    uint64_t mine = __atomic_load_n(&dk__reg[DK_CUDA].dev[d.index].bytes, __ATOMIC_RELAXED);
    dk__cu.api.MemGetInfo(&free_b, &total);
    return dk__error(DK_ERR_OUT_OF_MEMORY,
                     "out of memory on cuda:%d (%s): tensor '%s' needs %zu bytes; the driver reports %zu of %zu bytes "
                     "free; devkit holds %llu bytes in tensors on this device. Free tensors you no longer need, or "
                     "place some on another device",
                     d.index, ph->name, tensor_name, nbytes, free_b, total, (unsigned long long)mine);
  }
  if (r != DK_CU_SUCCESS) {
    char what[200];
    snprintf(what, sizeof what, "allocating %zu bytes for tensor '%s'", nbytes, tensor_name);
    return dk__cuda_fail(d.index, what, r);
  }
  st->addr = p;
  st->ptr = (void *)(uintptr_t)p;
  st->priv = (void *)(uintptr_t)got;   /* the block's real size, for the free-list cache */
  return DK_OK;
}

/* Give a block back after the work queued on ld's stream: to the pool
 * (stream-ordered free) or to the free list (reused only by later work on
 * the same stream). */
static void dk__cuda_free_block(dk__cuda_dev *ld, dk_cu_ptr p, size_t size) {
  dk__cuda_block *b;
  if (dk__cu.phys[ld->physical].use_pool && !(size & 1) && !ld->grec) {
    dk__cu.api.MemFreeAsync(p, ld->stream);   /* after the work already queued that uses it */
    return;
  }
  if (!(b = (dk__cuda_block *)malloc(sizeof *b))) {
    if (ld->grec) return;   /* no host memory, and a capture cannot hold the sync: the block is lost */
    dk__cu.api.StreamSynchronize(ld->stream);
    dk__cu.api.MemFree(p);
    return;
  }
  b->ptr = p;
  b->size = size & ~(size_t)1;   /* (a plain block's mark off; a pool block's size is even) */
  if (ld->grec && dk__cu.phys[ld->physical].use_pool && !(size & 1)) {
    /* a pool block: freed after the capture (a stream-ordered free now
     * would be captured into the graph) */
    b->next = ld->grec->freed;
    ld->grec->freed = b;
    return;
  }
  b->next = ld->cache;
  ld->cache = b;
  ld->cache_bytes += b->size;
}

static void dk__cuda_release(dk_storage *st) {
  dk__cuda_dev *ld = dk__cuda_ld(st->device);
  dk_cu_ptr p = st->addr;
  if (!ld || !p || dk__cuda_enter(st->device) != DK_OK) return;
  dk__cuda_free_block(ld, p, (size_t)(uintptr_t)st->priv);
  st->addr = 0;
  st->ptr = NULL;
}

/* ==== errors found at a sync ================================================= */

/* After the stream is idle: do n status words at base (what each op named
 * in notes) hold a bad id? The first one (in enqueue order) is written into
 * msg and the words are reset; returns 1 then. */
static int dk__cuda_scan_slots(dk_device d, dk_cu_ptr base, int n, const dk__cuda_emb_note *notes, char *msg, size_t cap,
                               dk_cu_result *fail) {
  dk__cuda_dev *ld = dk__cuda_ld(d);
  unsigned long long slots[DK_CUDA_GRAPH_SLOTS > DK_CUDA_STATUS_SLOTS ? DK_CUDA_GRAPH_SLOTS : DK_CUDA_STATUS_SLOTS];
  int i;
  *fail = DK_CU_SUCCESS;
  if (n == 0) return 0;
  if ((*fail = dk__cu.api.MemcpyDtoHAsync(slots, base, 8 * (size_t)n, ld->stream)) != DK_CU_SUCCESS ||
      (*fail = dk__cu.api.StreamSynchronize(ld->stream)) != DK_CU_SUCCESS)
    return 0;
  for (i = 0; i < n; i++)
    if (slots[i] != ~0ull) break;
  if (i == n) return 0;
  if ((*fail = dk__cu.api.MemsetD32Async(base, 0xffffffffu, 2 * (size_t)n, ld->stream)) != DK_CU_SUCCESS) return 0;
  {
    const dk__cuda_emb_note *e = &notes[i];
    const char *op = dk__op_name((dk_op)e->op);
    unsigned long long pos = slots[i] >> 32;
    int id = (int)(int32_t)(uint32_t)(slots[i] & 0xffffffffu);
    if (e->axis >= 0)
      snprintf(msg, cap,
               "%s on cuda:%d: ids '%s' holds %d at position %llu%s, outside [-%lld, %lld) for axis %d of "
               "'%s' '%s' (size %lld; %s); found on the device and reported at this sync; that %s wrote "
               "nothing",
               op, d.index, e->ids_name, id, pos, pos == 0xffffffffull ? " or later" : "", e->rows, e->rows, e->axis,
               e->op == DK_OP_INDEX_COPY ? "dst" : "x", e->table_name, e->rows, e->ids_site[0] ? e->ids_site : "site unknown",
               op);
    else
    snprintf(msg, cap,
             "dk_embedding: ids '%s' holds %d at position %llu%s, outside table '%s' of %lld rows (%s); found by "
             "cuda:%d and reported at this sync; that dk_embedding wrote nothing",
             e->ids_name, id, pos, pos == 0xffffffffull ? " or later" : "", e->table_name, e->rows,
             e->ids_site[0] ? e->ids_site : "site unknown", d.index);
  }
  return 1;
}

/* the device's own status words, then those of the graphs replayed since
 * the last read (a graph's words are not reset by its replays: a bad id
 * stays until read here); one bad id is reported, and a graph not read yet
 * keeps its mark for the next sync */
static int dk__cuda_scan_status(dk_device d, char *msg, size_t cap, dk_cu_result *fail) {
  dk__cuda_dev *ld = dk__cuda_ld(d);
  dk__cuda_graph *g;
  int n = ld->status_used;
  ld->status_used = 0;
  if (dk__cuda_scan_slots(d, ld->status, n, ld->notes, msg, cap, fail) || *fail != DK_CU_SUCCESS) return *fail == DK_CU_SUCCESS;
  for (g = ld->graphs; g; g = g->next) {
    if (!g->replayed) continue;
    g->replayed = 0;
    if (dk__cuda_scan_slots(d, g->status, g->status_used, g->notes, msg, cap, fail) || *fail != DK_CU_SUCCESS)
      return *fail == DK_CU_SUCCESS;
  }
  return 0;
}

/* Wait for d's stream; report a device fault, then a bad embedding id (one
 * found earlier by a check that could not report it, or one found now). */
static dk_status dk__cuda_sync_dev(dk_device d, const char *what) {
  dk__cuda_dev *ld = dk__cuda_ld(d);
  dk_cu_result r = dk__cu.api.StreamSynchronize(ld->stream);
  char msg[1024];
  if (r != DK_CU_SUCCESS) return dk__cuda_fail(d.index, what, r);
  dk__cuda_recent_clear(ld);
  if (ld->pending[0]) {
    dk_status s = dk__error(DK_ERR_INVALID, "%s", ld->pending);
    ld->pending[0] = 0;
    dk__cuda_scan_status(d, ld->pending, sizeof ld->pending, &r);   /* keep a later one for the next sync */
    return s;
  }
  if (dk__cuda_scan_status(d, msg, sizeof msg, &r)) return dk__error(DK_ERR_INVALID, "%s", msg);
  if (r != DK_CU_SUCCESS) return dk__cuda_fail(d.index, "reading the embedding status slots", r);
  return DK_OK;
}

static dk_status dk__cuda_sync(dk_device d) {
  dk_status s = dk__cuda_enter(d);
  return s != DK_OK ? s : dk__cuda_sync_dev(d, "dk_sync");
}

/* ==== graphs ===================================================================
 * A dk_graph is a capture of the device's stream
 * (relaxed mode, so that the plain cuMemAlloc below stays outside it),
 * instantiated at dk_graph_end and replayed by one cuGraphLaunch: a decode
 * step becomes one launch instead of some 300. It turns on the device-side
 * dk_attention_pos and dk_index_copy too (DEVKIT_CUDA_DEVPOS), which a
 * capture needs: a read-back is a sync. On since they ran on an H200
 * (2026-11-28: suite and compute-sanitizer clean; 1B f16 decode 513-521 ->
 * 551-558 tok/s); DEVKIT_CUDA_GRAPH=0 turns both off, and the core then
 * re-runs a graph's calls.
 * While a capture holds the stream:
 *   - ops whose ids the device checks take the graph's own status words,
 *     which replays never reset: a bad id stays there until the next sync
 *     after a replay reads it (dk__cuda_scan_status), so it is reported as
 *     an op's would be, and the op writes nothing while it stands;
 *   - an op's scratch buffer (dk__cuda_scratch) is the graph's, kept until
 *     it is freed, and serves the recording's later ops too (they run in
 *     order: each kernel starts with dk_grid_wait);
 *   - memory freed goes back after the capture and memory allocated is
 *     plain (dk__cuda_alloc_raw, dk__cuda_free_block): a stream-ordered
 *     allocation or free would be captured into the graph. */
static int dk__cuda_graph_on(void) {
  static int on = -1;
  if (on < 0) on = dk__cuda_switch("DEVKIT_CUDA_GRAPH", "1", "0", 1);
  return on;
}

/* the blocks freed during g's capture go back now that it has ended */
static void dk__cuda_graph_give_back(dk__cuda_dev *ld, dk__cuda_graph *g) {
  while (g->freed) {
    dk__cuda_block *b = g->freed;
    g->freed = b->next;
    dk__cuda_free_block(ld, b->ptr, b->size);
    free(b);
  }
}

/* the device memory and driver objects of g (the stream is idle or gone) */
static void dk__cuda_graph_drop(dk__cuda_graph *g) {
  int i;
  if (g->exec) dk__cu.api.GraphExecDestroy(g->exec);
  if (g->graph) dk__cu.api.GraphDestroy(g->graph);
  for (i = 0; i < g->nscr; i++) dk__cu.api.MemFree(g->scr[i].ptr);
  if (g->status) dk__cu.api.MemFree(g->status);
  g->exec = NULL;
  g->graph = NULL;
  g->nscr = 0;
  g->status = 0;
}

/* a capture that will not be used: ended, its partial graph destroyed */
static void dk__cuda_graph_abandon(dk__cuda_dev *ld) {
  dk__cuda_graph *g = ld->grec;
  dk_cu_graph part = NULL;
  if (!g) return;
  ld->grec = NULL;
  if (dk__cu.api.StreamEndCapture(ld->stream, &part) == DK_CU_SUCCESS && part) dk__cu.api.GraphDestroy(part);
  dk__cuda_graph_give_back(ld, g);
}

static void *dk__cuda_graph_begin(dk_device d) {
  const dk__cuda_api_t *a = &dk__cu.api;
  dk__cuda_dev *ld = dk__cuda_ld(d);
  dk__cuda_graph *g;
  if (!dk__cuda_graph_on() || !a->StreamBeginCapture || !a->StreamEndCapture || !a->GraphInstantiateWithFlags ||
      !a->GraphLaunch || !a->GraphExecDestroy || !a->GraphDestroy || !ld || ld->grec || dk__cuda_enter(d) != DK_OK)
    return NULL;
  if (!(g = (dk__cuda_graph *)calloc(1, sizeof *g))) return NULL;
  /* its status words start clean, before the capture (no replay resets them) */
  if (a->MemAlloc(&g->status, 8 * DK_CUDA_GRAPH_SLOTS) != DK_CU_SUCCESS) g->status = 0;
  if (!g->status || a->MemsetD32Async(g->status, 0xffffffffu, 2 * DK_CUDA_GRAPH_SLOTS, ld->stream) != DK_CU_SUCCESS ||
      a->StreamBeginCapture(ld->stream, DK_CU_STREAM_CAPTURE_MODE_RELAXED) != DK_CU_SUCCESS) {
    a->StreamSynchronize(ld->stream);
    dk__cuda_graph_drop(g);
    free(g);
    return NULL;   /* the core keeps the calls */
  }
  ld->grec = g;
  return g;
}

static dk_status dk__cuda_graph_end(dk_device d, void *h) {
  dk__cuda_dev *ld = dk__cuda_ld(d);
  dk__cuda_graph *g = (dk__cuda_graph *)h;
  dk_cu_result r;
  dk_status s;
  if ((s = dk__cuda_enter(d)) != DK_OK) return s;
  if (ld->grec != g) return dk__error(DK_ERR_BACKEND, "cuda:%d: dk_graph_end: no capture of this graph is under way", d.index);
  ld->grec = NULL;
  r = dk__cu.api.StreamEndCapture(ld->stream, &g->graph);
  dk__cuda_graph_give_back(ld, g);
  if (r != DK_CU_SUCCESS) {
    g->graph = NULL;
    return dk__cuda_fail(d.index, "dk_graph_end (cuStreamEndCapture)", r);
  }
  if ((r = dk__cu.api.GraphInstantiateWithFlags(&g->exec, g->graph, 0)) != DK_CU_SUCCESS) {
    g->exec = NULL;
    return dk__cuda_fail(d.index, "dk_graph_end (cuGraphInstantiateWithFlags)", r);
  }
  g->next = ld->graphs;
  ld->graphs = g;
  return DK_OK;
}

static dk_status dk__cuda_graph_replay(dk_device d, void *h) {
  dk__cuda_dev *ld = dk__cuda_ld(d);
  dk__cuda_graph *g = (dk__cuda_graph *)h;
  dk_cu_result r;
  dk_status s;
  if ((s = dk__cuda_enter(d)) != DK_OK) return s;
  if ((r = dk__cu.api.GraphLaunch(g->exec, ld->stream)) != DK_CU_SUCCESS)
    return dk__cuda_fail(d.index, "dk_graph_replay (cuGraphLaunch)", r);
  g->replayed = 1;
  return DK_OK;
}

static void dk__cuda_graph_free(dk_device d, void *h, int gone) {
  dk__cuda_graph *g = (dk__cuda_graph *)h;
  if (!g) return;
  if (!gone) {
    dk__cuda_dev *ld = dk__cuda_ld(d);
    dk__cuda_graph **pp;
    if (ld && dk__cuda_enter(d) == DK_OK) {
      if (ld->grec == g) dk__cuda_graph_abandon(ld);   /* dropped while capturing: an op failed into it */
      for (pp = &ld->graphs; *pp; pp = &(*pp)->next)
        if (*pp == g) { *pp = g->next; break; }
      /* its replays finish before its memory goes; a bad id they met is
       * kept for the next sync to report */
      dk__cu.api.StreamSynchronize(ld->stream);
      if (g->replayed && !ld->pending[0]) {
        dk_cu_result r;
        dk__cuda_scan_slots(d, g->status, g->status_used, g->notes, ld->pending, sizeof ld->pending, &r);
      }
      dk__cuda_graph_drop(g);
    }
  }
  while (g->freed) {   /* (only when the device went first) */
    dk__cuda_block *b = g->freed;
    g->freed = b->next;
    free(b);
  }
  free(g->scr);
  free(g);
}

/* An op's scratch buffer while g captures: a free one of g's, else a new
 * plain block that g keeps */
static dk_status dk__cuda_graph_scratch(const dk_call *c, dk__cuda_graph *g, size_t n, const char *what, dk_storage *st) {
  int i, best = -1;
  dk_cu_ptr p = 0;
  dk_cu_result r;
  for (i = 0; i < g->nscr; i++)
    if (!g->scr[i].busy && g->scr[i].size >= n && (best < 0 || g->scr[i].size < g->scr[best].size)) best = i;
  if (best < 0) {
    if (g->nscr == g->capscr) {
      int cap = g->capscr ? 2 * g->capscr : 16;
      dk__cuda_gscr *ns = (dk__cuda_gscr *)realloc(g->scr, sizeof *ns * (size_t)cap);
      if (!ns) return dk__op_error((dk_call *)c, DK_ERR_OUT_OF_MEMORY, "", "no host memory for a graph's scratch list");
      g->scr = ns;
      g->capscr = cap;
    }
    if ((r = dk__cu.api.MemAlloc(&p, n ? n : 256)) != DK_CU_SUCCESS) {
      char w[160];
      snprintf(w, sizeof w, "%zu bytes for %s in a graph being recorded", n, what);
      return dk__cuda_fail(c->dev.index, w, r);
    }
    best = g->nscr++;
    g->scr[best].ptr = p;
    g->scr[best].size = n ? n : 256;
  }
  g->scr[best].busy = 1;
  st->addr = g->scr[best].ptr;
  st->ptr = (void *)(uintptr_t)st->addr;
  st->priv = NULL;
  return DK_OK;
}

/* ==== transfers ============================================================== */

static int dk__cuda_staging(dk__cuda_dev *ld) {
  void *p = NULL;
  if (ld->pinned) return 1;
  if (ld->pinned_failed) return 0;
  if (dk__cu.api.MemHostAlloc(&p, 2 * DK_CUDA_STAGE_HALF, DK_CU_MEMHOSTALLOC_PORTABLE) != DK_CU_SUCCESS || !p) {
    ld->pinned_failed = 1;   /* pageable copies from now on: slower, still correct */
    return 0;
  }
  ld->pinned = (unsigned char *)p;
  return 1;
}

static dk_status dk__cuda_upload(dk_storage *st, size_t off, const void *src, size_t n) {
  dk_device d = st->device;
  dk__cuda_dev *ld = dk__cuda_ld(d);
  dk_cu_result r;
  dk_status s;
  size_t done = 0;
  int h = 0;
  if ((s = dk__cuda_enter(d)) != DK_OK) return s;
  dk__cuda_recent_add(ld, -1, -1);
  if (!dk__cuda_staging(ld)) {
    /* from pageable memory the driver returns once it holds the bytes */
    r = dk__cu.api.MemcpyHtoDAsync(st->addr + off, src, n, ld->stream);
    return r == DK_CU_SUCCESS ? DK_OK : dk__cuda_fail(d.index, "dk_tensor_upload (cuMemcpyHtoDAsync)", r);
  }
  while (done < n) {
    size_t k = n - done < DK_CUDA_STAGE_HALF ? n - done : DK_CUDA_STAGE_HALF;
    unsigned char *buf = ld->pinned + (size_t)h * DK_CUDA_STAGE_HALF;
    if (ld->stage_pending[h]) {   /* the last DMA out of this half must be done before we overwrite it */
      if ((r = dk__cu.api.EventSynchronize(ld->ev_stage[h])) != DK_CU_SUCCESS)
        return dk__cuda_fail(d.index, "dk_tensor_upload (waiting for the staging buffer)", r);
      ld->stage_pending[h] = 0;
    }
    memcpy(buf, (const unsigned char *)src + done, k);
    if ((r = dk__cu.api.MemcpyHtoDAsync(st->addr + off + done, buf, k, ld->stream)) != DK_CU_SUCCESS ||
        (r = dk__cu.api.EventRecord(ld->ev_stage[h], ld->stream)) != DK_CU_SUCCESS)
      return dk__cuda_fail(d.index, "dk_tensor_upload (cuMemcpyHtoDAsync)", r);
    ld->stage_pending[h] = 1;
    done += k;
    h ^= 1;
  }
  return DK_OK;
}

static dk_status dk__cuda_download(dk_storage *st, size_t off, void *dst, size_t n) {
  dk_device d = st->device;
  dk__cuda_dev *ld = dk__cuda_ld(d);
  dk_cu_result r;
  dk_status s;
  size_t done = 0, prev_k = 0, prev_off = 0;
  int h = 0, have_prev = 0;
  if ((s = dk__cuda_enter(d)) != DK_OK) return s;
  if (!dk__cuda_staging(ld)) {
    r = dk__cu.api.MemcpyDtoHAsync(dst, st->addr + off, n, ld->stream);
    if (r != DK_CU_SUCCESS) return dk__cuda_fail(d.index, "dk_tensor_download (cuMemcpyDtoHAsync)", r);
    return dk__cuda_sync_dev(d, "dk_tensor_download");
  }
  /* chunk i's DMA runs while chunk i-1 is copied out of the other half */
  while (done < n || have_prev) {
    size_t k = n - done < DK_CUDA_STAGE_HALF ? n - done : DK_CUDA_STAGE_HALF;
    if (done < n) {
      unsigned char *buf = ld->pinned + (size_t)h * DK_CUDA_STAGE_HALF;
      if ((r = dk__cu.api.MemcpyDtoHAsync(buf, st->addr + off + done, k, ld->stream)) != DK_CU_SUCCESS ||
          (r = dk__cu.api.EventRecord(ld->ev_stage[h], ld->stream)) != DK_CU_SUCCESS)
        return dk__cuda_fail(d.index, "dk_tensor_download (cuMemcpyDtoHAsync)", r);
      ld->stage_pending[h] = 1;
    }
    if (have_prev) {
      int ph = h ^ 1;
      if ((r = dk__cu.api.EventSynchronize(ld->ev_stage[ph])) != DK_CU_SUCCESS)
        return dk__cuda_fail(d.index, "dk_tensor_download", r);
      ld->stage_pending[ph] = 0;
      memcpy((unsigned char *)dst + prev_off, ld->pinned + (size_t)ph * DK_CUDA_STAGE_HALF, prev_k);
      have_prev = 0;
    }
    if (done < n) {
      prev_k = k;
      prev_off = done;
      have_prev = 1;
      done += k;
      h ^= 1;
    }
  }
  return dk__cuda_sync_dev(d, "dk_tensor_download");
}

/* Turn on peer access between two GPUs once, both ways, where the hardware
 * allows it; cuMemcpyPeerAsync works either way (staged through the host
 * when there is no peer path). */
static void dk__cuda_enable_peer(int pa, int pb) {
  dk__cuda_phys *a = &dk__cu.phys[pa], *b = &dk__cu.phys[pb];
  int can_ab = 0, can_ba = 0;
  pthread_mutex_lock(&dk__cuda_peer_lock);
  if (a->peer[pb] == 0) {
    dk__cu.api.DeviceCanAccessPeer(&can_ab, a->dev, b->dev);
    dk__cu.api.DeviceCanAccessPeer(&can_ba, b->dev, a->dev);
    a->peer[pb] = -1;
    b->peer[pa] = -1;
    if (can_ab && dk__cu.api.CtxSetCurrent(a->ctx) == DK_CU_SUCCESS) {
      dk_cu_result r = dk__cu.api.CtxEnablePeerAccess(b->ctx, 0);
      if (r == DK_CU_SUCCESS || r == DK_CU_ERROR_PEER_ACCESS_ALREADY_ENABLED) a->peer[pb] = 1;
    }
    if (can_ba && dk__cu.api.CtxSetCurrent(b->ctx) == DK_CU_SUCCESS) {
      dk_cu_result r = dk__cu.api.CtxEnablePeerAccess(a->ctx, 0);
      if (r == DK_CU_SUCCESS || r == DK_CU_ERROR_PEER_ACCESS_ALREADY_ENABLED) b->peer[pa] = 1;
    }
  }
  pthread_mutex_unlock(&dk__cuda_peer_lock);
}

static dk_status dk__cuda_copy(dk_storage *dst, size_t doff, dk_storage *src, size_t soff, size_t n) {
  dk_device dd = dst->device, sd = src->device;
  dk__cuda_dev *ldd = dk__cuda_ld(dd), *lds = dk__cuda_ld(sd);
  dk_cu_result r;
  dk_status s;
  if (!n) return DK_OK;
  if (dd.index == sd.index) {
    if ((s = dk__cuda_enter(dd)) != DK_OK) return s;
    dk__cuda_recent_add(ldd, -1, -1);
    r = dk__cu.api.MemcpyDtoDAsync(dst->addr + doff, src->addr + soff, n, ldd->stream);
    return r == DK_CU_SUCCESS ? DK_OK : dk__cuda_fail(dd.index, "dk_copy_to (cuMemcpyDtoDAsync)", r);
  }
  /* 1. the destination's stream waits for the source's queued work */
  if ((s = dk__cuda_enter(sd)) != DK_OK) return s;
  if ((r = dk__cu.api.EventRecord(lds->ev_xfer, lds->stream)) != DK_CU_SUCCESS)
    return dk__cuda_fail(sd.index, "dk_copy_to (cuEventRecord on the source)", r);
  if (ldd->physical != lds->physical) dk__cuda_enable_peer(ldd->physical, lds->physical);
  if ((s = dk__cuda_enter(dd)) != DK_OK) return s;
  if ((r = dk__cu.api.StreamWaitEvent(ldd->stream, lds->ev_xfer, 0)) != DK_CU_SUCCESS)
    return dk__cuda_fail(dd.index, "dk_copy_to (cuStreamWaitEvent)", r);
  /* 2. the copy, on the destination's stream */
  dk__cuda_recent_add(ldd, -1, -1);
  if (ldd->physical == lds->physical)
    r = dk__cu.api.MemcpyDtoDAsync(dst->addr + doff, src->addr + soff, n, ldd->stream);
  else
    r = dk__cu.api.MemcpyPeerAsync(dst->addr + doff, dk__cu.phys[ldd->physical].ctx, src->addr + soff,
                                   dk__cu.phys[lds->physical].ctx, n, ldd->stream);
  if (r != DK_CU_SUCCESS) return dk__cuda_fail(dd.index, "dk_copy_to (device to device)", r);
  /* 3. the source's stream waits for the copy: a later free or overwrite of
   *    the source stays behind it */
  if ((r = dk__cu.api.EventRecord(ldd->ev_xfer, ldd->stream)) != DK_CU_SUCCESS)
    return dk__cuda_fail(dd.index, "dk_copy_to (cuEventRecord on the destination)", r);
  if ((s = dk__cuda_enter(sd)) != DK_OK) return s;
  dk__cuda_recent_add(lds, -1, -1);
  if ((r = dk__cu.api.StreamWaitEvent(lds->stream, ldd->ev_xfer, 0)) != DK_CU_SUCCESS)
    return dk__cuda_fail(sd.index, "dk_copy_to (cuStreamWaitEvent)", r);
  return DK_OK;
}

/* ==== ops ==================================================================== */

static uint64_t dk__cuda_addr(const dk_tensor *t) { return t->st->addr + t->offset; }

static unsigned int dk__cuda_grid(int64_t work, int64_t per_block) {
  int64_t g = (work + per_block - 1) / per_block;
  if (g < 1) g = 1;
  if (g > (int64_t)DK_MAX_GRID_X) g = DK_MAX_GRID_X;
  return (unsigned int)g;
}
static unsigned int dk__cuda_grid_yz(int64_t g) {
  if (g < 1) g = 1;
  if (g > (int64_t)DK_MAX_GRID_YZ) g = DK_MAX_GRID_YZ;
  return (unsigned int)g;
}


/* Programmatic dependent launch (cuLaunchKernelEx with programmatic stream
 * serialization) on compute capability 9.0 and newer: each kernel's launch
 * and block scheduling overlap the end of the kernel before it, which waits
 * in dk_grid_wait. Ran clean on an H200 on 2026-11-27 (the suite, memcheck):
 * 1B decode 446-454 -> 528-531 tok/s, stories260K 2845-2943 -> 3054-3384;
 * on by default, DEVKIT_CUDA_PDL=0 launches the ordinary way. */
static int dk__cuda_pdl(const dk__cuda_dev *ld) {
  static int on = -1;
  if (on < 0) on = dk__cuda_switch("DEVKIT_CUDA_PDL", "1", "0", 1);
  return on && dk__cu.api.LaunchKernelEx && dk__cu.phys[ld->physical].cc_major >= 9;
}

/* Enqueue kernel kid with one parameter struct. A launch error is reported at
 * once, naming the op and the kernel. */
static dk_status dk__cuda_launch(const dk_call *c, int kid, unsigned int gx, unsigned int gy, unsigned int gz,
                                 unsigned int threads, void *params) {
  dk__cuda_dev *ld = dk__cuda_ld(c->dev);
  void *args[1];
  dk_cu_result r;
  args[0] = params;
  dk__cuda_recent_add(ld, (int)c->op, kid);
  if (dk__cuda_pdl(ld)) {
    /* programmatic dependent launch: the kernel may start while the one
     * before it runs; it waits in dk_grid_wait (kernels/dk_common.cuh) */
    dk_cu_launch_attr at;
    dk_cu_launch_config cf;
    memset(&at, 0, sizeof at);
    at.id = DK_CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    at.value.flag = 1;
    cf.gx = gx; cf.gy = gy; cf.gz = gz;
    cf.bx = threads; cf.by = cf.bz = 1;
    cf.smem = 0;
    cf.stream = ld->stream;
    cf.attrs = &at;
    cf.nattrs = 1;
    r = dk__cu.api.LaunchKernelEx((const struct CUlaunchConfig_st *)(const void *)&cf, dk__cu.phys[ld->physical].fn[kid],
                                  args, NULL);
  } else
    r = dk__cu.api.LaunchKernel(dk__cu.phys[ld->physical].fn[kid], gx, gy, gz, threads, 1, 1, 0, ld->stream, args, NULL);
  if (r != DK_CU_SUCCESS) {
    char what[256];
    snprintf(what, sizeof what, "%s: launching kernel %s (grid %u x %u x %u, block %u)", dk__op_name(c->op),
             dk__cuda_kernel_names[kid], gx, gy, gz, threads);
    return dk__cuda_fail(c->dev.index, what, r);
  }
  return DK_OK;
}

static int dk__cuda_kid3(dk_dtype t, int kf32, int kf16, int kbf16) {
  return t == DK_F16 ? kf16 : t == DK_BF16 ? kbf16 : kf32;
}

static dk_status dk__cuda_binary(const dk_call *c) {
  const dk_tensor *o = c->t[0], *a = c->t[1], *b = c->t[2];
  dk_kp_binary p;
  int i, flat = a->ndim == o->ndim && b->ndim == o->ndim;
  memset(&p, 0, sizeof p);
  p.n = dk_tensor_numel(o);
  if (p.n == 0) return DK_OK;
  p.out = dk__cuda_addr(o);
  p.a = dk__cuda_addr(a);
  p.b = dk__cuda_addr(b);
  p.ndim = o->ndim;
  p.op = c->op == DK_OP_ADD ? DK_KB_ADD : c->op == DK_OP_SUB ? DK_KB_SUB : c->op == DK_OP_MUL ? DK_KB_MUL : DK_KB_DIV;
  for (i = 0; i < o->ndim; i++) {
    int ka = i - (o->ndim - a->ndim), kb = i - (o->ndim - b->ndim);
    p.shape[i] = o->shape[i];
    p.astr[i] = (ka < 0 || a->shape[ka] == 1) ? 0 : a->stride[ka];
    p.bstr[i] = (kb < 0 || b->shape[kb] == 1) ? 0 : b->stride[kb];
    if (flat && (a->shape[i] != o->shape[i] || b->shape[i] != o->shape[i])) flat = 0;
  }
  p.flat = flat;   /* every operand contiguous (the dispatcher's rule) with out's shape */
  return dk__cuda_launch(c, dk__cuda_kid3(o->dtype, DK_CUDA_K_dk_binary_f32, DK_CUDA_K_dk_binary_f16, DK_CUDA_K_dk_binary_bf16),
                         dk__cuda_grid(p.n, DK_EW_THREADS), 1, 1, DK_EW_THREADS, &p);
}

static dk_status dk__cuda_unary(const dk_call *c) {
  const dk_tensor *o = c->t[0];
  dk_kp_unary p;
  memset(&p, 0, sizeof p);
  p.n = dk_tensor_numel(o);
  if (p.n == 0) return DK_OK;
  p.out = dk__cuda_addr(o);
  p.x = dk__cuda_addr(c->t[1]);
  p.y = c->op == DK_OP_SWIGLU ? dk__cuda_addr(c->t[2]) : 0;
  p.s = c->f[0];
  switch (c->op) {
  case DK_OP_SCALE: p.op = DK_KU_SCALE; break;
  case DK_OP_SILU: p.op = DK_KU_SILU; break;
  case DK_OP_GELU: p.op = DK_KU_GELU; break;
  case DK_OP_GELU_TANH: p.op = DK_KU_GELU_TANH; break;
  case DK_OP_RELU: p.op = DK_KU_RELU; break;
  case DK_OP_SIGMOID: p.op = DK_KU_SIGMOID; break;
  case DK_OP_TANH: p.op = DK_KU_TANH; break;
  case DK_OP_EXP: p.op = DK_KU_EXP; break;
  default: p.op = DK_KU_SWIGLU; break;
  }
  return dk__cuda_launch(c, dk__cuda_kid3(o->dtype, DK_CUDA_K_dk_unary_f32, DK_CUDA_K_dk_unary_f16, DK_CUDA_K_dk_unary_bf16),
                         dk__cuda_grid(p.n, DK_EW_THREADS), 1, 1, DK_EW_THREADS, &p);
}

static dk_status dk__cuda_norm(const dk_call *c) {
  const dk_tensor *o = c->t[0], *x = c->t[1], *w = c->t[2], *b = c->op == DK_OP_LAYERNORM ? c->t[3] : NULL;
  dk_kp_norm p;
  memset(&p, 0, sizeof p);
  p.cols = x->ndim ? x->shape[x->ndim - 1] : 1;
  if (p.cols == 0 || dk_tensor_numel(x) == 0) return DK_OK;
  p.rows = dk_tensor_numel(x) / p.cols;
  p.out = dk__cuda_addr(o);
  p.x = dk__cuda_addr(x);
  p.w = w ? dk__cuda_addr(w) : 0;
  p.b = b ? dk__cuda_addr(b) : 0;
  p.wdt = w ? (int32_t)w->dtype : DK_KT_F32;
  p.bdt = b ? (int32_t)b->dtype : DK_KT_F32;
  p.eps = c->f[0];
  p.layer = c->op == DK_OP_LAYERNORM;
  {
    /* the row held in registers (kernels/norm.cu; ran clean on an H100
     * 2026-11-25); DEVKIT_CUDA_NORM=loop keeps the loop */
    static int cached = -1;
    if (cached < 0) cached = dk__cuda_switch("DEVKIT_CUDA_NORM", "cached", "loop", 1);
    p.cached = cached && p.cols <= (int64_t)DK_ROW_THREADS * DK_NORM_CACHE;
  }
  return dk__cuda_launch(c, dk__cuda_kid3(o->dtype, DK_CUDA_K_dk_norm_f32, DK_CUDA_K_dk_norm_f16, DK_CUDA_K_dk_norm_bf16),
                         dk__cuda_grid(p.rows, 1), 1, 1, DK_ROW_THREADS, &p);
}

static dk_status dk__cuda_softmax(const dk_call *c) {
  const dk_tensor *o = c->t[0], *x = c->t[1];
  dk_kp_softmax p;
  memset(&p, 0, sizeof p);
  p.cols = x->shape[x->ndim - 1];
  if (p.cols == 0 || dk_tensor_numel(x) == 0) return DK_OK;
  p.rows = dk_tensor_numel(x) / p.cols;
  p.out = dk__cuda_addr(o);
  p.x = dk__cuda_addr(x);
  p.masked = c->op == DK_OP_SOFTMAX_MASKED;
  p.rows_per = p.masked ? x->shape[x->ndim - 2] : 1;
  if (p.rows_per < 1) p.rows_per = 1;
  p.offset = p.masked ? c->i[0] : -1;
  p.scale = p.masked ? c->f[0] : 1.0f;
  return dk__cuda_launch(c, dk__cuda_kid3(o->dtype, DK_CUDA_K_dk_softmax_f32, DK_CUDA_K_dk_softmax_f16, DK_CUDA_K_dk_softmax_bf16),
                         dk__cuda_grid(p.rows, 1), 1, 1, DK_ROW_THREADS, &p);
}

/* DEVKIT_CUDA_MMA=1 (not yet run on a GPU): a dk_gemm_tc_* launch goes to
 * its dk_gemm_mma_* twin (kernels/gemm_mma.cuh: mma.sync, ldmatrix, cp.async
 * stages) where the kernel can copy every tile as whole, aligned 16 bytes:
 * K, A's rows and batch offsets multiples of 8 elements, A and B 16-byte
 * aligned, B's rows too (NT: 16-bit weights of x's type, rows a multiple
 * of 16 bytes; NN: ldb and N multiples of 8). Else kid unchanged. */
static int dk__cuda_mma_kid(int kid, const dk_kp_gemm *p) {
  static const int tc[6] = {DK_CUDA_K_dk_gemm_tc_f16_nt, DK_CUDA_K_dk_gemm_tc_bf16_nt, DK_CUDA_K_dk_gemm_tc_f16_nt_o32,
                            DK_CUDA_K_dk_gemm_tc_bf16_nt_o32, DK_CUDA_K_dk_gemm_tc_f16_nn, DK_CUDA_K_dk_gemm_tc_bf16_nn};
  static const int mma[6] = {DK_CUDA_K_dk_gemm_mma_f16_nt, DK_CUDA_K_dk_gemm_mma_bf16_nt, DK_CUDA_K_dk_gemm_mma_f16_nt_o32,
                             DK_CUDA_K_dk_gemm_mma_bf16_nt_o32, DK_CUDA_K_dk_gemm_mma_f16_nn, DK_CUDA_K_dk_gemm_mma_bf16_nn};
  static int on = -1;
  int i, k, nt, at;
  if (on < 0) on = dk__cuda_switch("DEVKIT_CUDA_MMA", "1", "0", 0);
  for (k = 0; k < 6 && tc[k] != kid; k++) {}
  if (!on || k == 6) return kid;
  nt = k < 4;
  at = k % 2 ? DK_BF16 : DK_F16;
  if (p->K % 8 || p->lda % 8 || p->a % 16 || p->b % 16) return kid;
  for (i = 0; i < p->nbdims; i++)
    if (p->abstr[i] % 8 || p->bbstr[i] % 8) return kid;
  if (nt ? p->wdt != at || p->b_row_bytes % 16 : p->ldb % 8 || p->N % 8) return kid;
  return mma[k];
}

/* tiled GEMM launch: grid x over N tiles, y over M tiles, z over batch items */
static dk_status dk__cuda_gemm_launch(const dk_call *c, int kid, dk_kp_gemm *p) {
  kid = dk__cuda_mma_kid(kid, p);
  return dk__cuda_launch(c, kid, dk__cuda_grid(p->N, DK_GEMM_BN), dk__cuda_grid_yz((p->M + DK_GEMM_BM - 1) / DK_GEMM_BM),
                         dk__cuda_grid_yz(p->batch), DK_GEMM_THREADS, p);
}

/* the gemv parameters of linear for rows [m0, m0+mc) of x and out */
static void dk__cuda_gemv_params(const dk_call *c, int64_t m0, int64_t mc, dk_kp_gemv *p) {
  const dk_tensor *o = c->t[0], *x = c->t[1], *w = c->t[2], *bias = c->t[3];
  int64_t N = c->i[1], K = c->i[2];
  memset(p, 0, sizeof *p);
  p->out = dk__cuda_addr(o) + (uint64_t)m0 * (uint64_t)N * dk_dtype_block_bytes(o->dtype);
  p->x = dk__cuda_addr(x) + (uint64_t)m0 * (uint64_t)K * dk_dtype_block_bytes(x->dtype);
  p->w = dk__cuda_addr(w);
  p->bias = bias ? dk__cuda_addr(bias) : 0;
  p->M = mc; p->N = N; p->K = K;
  p->w_row_bytes = (int64_t)dk__row_bytes(w->dtype, K);
  p->xdt = (int32_t)x->dtype;
  p->odt = (int32_t)o->dtype;
  p->bdt = bias ? (int32_t)bias->dtype : DK_KT_F32;
  p->has_bias = bias != NULL;
  p->wdt = (int32_t)w->dtype;
}

/* q4_1, q5_0, q5_1, q2_K..q6_K weights: one kernel for any M, grid.y over rows of x, up to 65535 per launch */
static dk_status dk__cuda_linear_more(const dk_call *c) {
  int64_t M = c->i[0], N = c->i[1], m0;
  for (m0 = 0; m0 < M; m0 += 65535) {
    int64_t mc = M - m0 < 65535 ? M - m0 : 65535;
    dk_kp_gemv p;
    dk_status s;
    dk__cuda_gemv_params(c, m0, mc, &p);
    if ((s = dk__cuda_launch(c, DK_CUDA_K_dk_gemv_w_more, (unsigned)N, (unsigned)mc, 1, DK_GEMV_THREADS, &p)) != DK_OK) return s;
  }
  return DK_OK;
}

/* ---- prompt-sized products on cuBLAS ------------------------------------------ */

static dk_status dk__cuda_strided(const dk_call *c, const dk_tensor *d, const dk_tensor *s, const int64_t *sstr,
                                  int contiguous);

/* The logical device's cuBLAS handle, made at its first prompt-sized product
 * (the context is current: every op enters it). NULL with *s == DK_OK: run
 * devkit's kernels (no cuBLAS, or cublasCreate failed on this device: the
 * backend note says so). */
static void *dk__cuda_blas(const dk_call *c, dk_status *s) {
  dk__cuda_dev *ld = dk__cuda_ld(c->dev);
  dk_cu_result r;
  int st = 0;
  *s = DK_OK;
  if (ld->blas_state) return ld->blas_state > 0 ? ld->blas : NULL;
  if (dk__cublas.state != 1) { ld->blas_state = -1; return NULL; }
  r = dk__cu.api.MemAlloc(&ld->blas_ws, DK_CUBLAS_WORKSPACE);
  if (r != DK_CU_SUCCESS) {
    ld->blas_ws = 0;   /* not remembered: a later product tries again */
    if (r == DK_CU_ERROR_OUT_OF_MEMORY)
      *s = dk__error(DK_ERR_OUT_OF_MEMORY,
                     "out of memory on cuda:%d: %s needs %zu MiB of workspace for cuBLAS at its first prompt-sized "
                     "product. Free tensors you no longer need, or set DEVKIT_CUBLAS=off (devkit's kernels need none)",
                     c->dev.index, dk__op_name(c->op), DK_CUBLAS_WORKSPACE >> 20);
    else
      *s = dk__cuda_fail(c->dev.index, "allocating cuBLAS's workspace", r);
    return NULL;
  }
  if ((st = dk__cublas.Create(&ld->blas)) != 0 || (st = dk__cublas.SetStream(ld->blas, ld->stream)) != 0 ||
      (st = dk__cublas.SetWorkspace(ld->blas, (void *)(uintptr_t)ld->blas_ws, DK_CUBLAS_WORKSPACE)) != 0) {
    size_t k = strlen(dk__cublas.note);
    if (ld->blas) dk__cublas.Destroy(ld->blas);
    ld->blas = NULL;
    dk__cu.api.MemFree(ld->blas_ws);
    ld->blas_ws = 0;
    ld->blas_state = -1;
    snprintf(dk__cublas.note + k, sizeof dk__cublas.note - k, "; cuda:%d: cuBLAS could not start (%s), devkit's kernels run there",
             c->dev.index, dk__cublas_err(st));
    return NULL;
  }
  ld->blas_state = 1;
  return ld->blas;
}

static int dk__cuda_r_type(dk_dtype t) { return t == DK_F16 ? DK_CUDA_R_16F : t == DK_BF16 ? DK_CUDA_R_16BF : DK_CUDA_R_32F; }

/* C[z] = A[z] . B[z] (+ C[z] when accumulate) in cuBLAS's column-major terms
 * (m, n, k, op(A) T when ta), f32 accumulation, batch items at the strides */
static dk_status dk__cuda_blas_gemm(const dk_call *c, void *h, int ta, int64_t m, int64_t n, int64_t k, uint64_t A,
                                    dk_dtype at, int64_t lda, int64_t sa, uint64_t B, dk_dtype bt, int64_t ldb,
                                    int64_t sb, uint64_t C, dk_dtype ct, int64_t ldc, int64_t sc, int64_t batch,
                                    int accumulate) {
  const float one = 1.0f, zero = 0.0f;
  int st;
  dk__cuda_recent_add(dk__cuda_ld(c->dev), (int)c->op, -2);   /* -2: a cuBLAS call */
  st = dk__cublas.GemmStridedBatchedEx(h, ta ? DK_CUBLAS_OP_T : DK_CUBLAS_OP_N, DK_CUBLAS_OP_N, (int)m, (int)n, (int)k, &one,
                                       (const void *)(uintptr_t)A, dk__cuda_r_type(at), (int)lda, sa,
                                       (const void *)(uintptr_t)B, dk__cuda_r_type(bt), (int)ldb, sb,
                                       accumulate ? &one : &zero, (void *)(uintptr_t)C, dk__cuda_r_type(ct), (int)ldc,
                                       sc, (int)batch, DK_CUBLAS_COMPUTE_32F, DK_CUBLAS_GEMM_DEFAULT);
  if (st != 0)
    return dk__error(DK_ERR_BACKEND, "cuda:%d: %s: cublasGemmStridedBatchedEx (m %lld, n %lld, k %lld, batch %lld): %s",
                     c->dev.index, dk__op_name(c->op), (long long)m, (long long)n, (long long)k, (long long)batch,
                     dk__cublas_err(st));
  return DK_OK;
}

/* cuBLAS takes int sizes: products past them stay on devkit's kernels */
static int dk__cuda_blas_fits(int64_t a, int64_t b, int64_t c) {
  return a > 0 && b > 0 && c > 0 && a < INT32_MAX && b < INT32_MAX && c < INT32_MAX;
}

/* A device buffer for an operand copy, given back by dk__cuda_scratch_done
 * after the queued work (while a graph captures, one of the graph's) */
static dk_status dk__cuda_scratch(const dk_call *c, size_t n, const char *what, dk_storage *st) {
  dk__cuda_dev *ld = dk__cuda_ld(c->dev);
  memset(st, 0, sizeof *st);
  st->device = c->dev;
  if (ld->grec) return dk__cuda_graph_scratch(c, ld->grec, n, what, st);
  return dk__cuda_alloc(c->dev, n, what, st);
}

static void dk__cuda_scratch_done(dk__cuda_dev *ld, dk_storage *st) {
  int i;
  if (!st->addr) return;
  if (!ld->grec) {
    dk__cuda_free_block(ld, st->addr, (size_t)(uintptr_t)st->priv);
    return;
  }
  for (i = 0; i < ld->grec->nscr; i++)
    if (ld->grec->scr[i].ptr == st->addr) ld->grec->scr[i].busy = 0;
}

/* the type a prompt-sized dk_linear computes in on tensor cores: x's when it
 * is 16-bit, else the weight's 16-bit type (f16; bf16 for bf16 weights);
 * DK_F32 where f32 x meets f32 or precise weights (f32 arithmetic) */
static dk_dtype dk__cuda_prompt_type(const dk_tensor *x, const dk_tensor *w) {
  if (x->dtype != DK_F32) return x->dtype;
  return w->dtype == DK_F32 || w->precise ? DK_F32 : w->dtype == DK_BF16 ? DK_BF16 : DK_F16;
}

/* DEVKIT_CUDA_PROMPT_TC=1: dk__cuda_linear_tc below (not yet run on a GPU) */
static int dk__cuda_prompt_tc_on(void) {
  static int on = -1;
  if (on < 0) on = dk__cuda_switch("DEVKIT_CUDA_PROMPT_TC", "1", "0", 0);
  return on;
}

/* dk_linear's x rounded to the 16-bit type ht once, by the dtype-converting
 * copy, into a scratch buffer (the prompt paths on tensor cores) */
static dk_status dk__cuda_round_x(const dk_call *c, dk_dtype ht, dk_storage *xs) {
  const dk_tensor *x = c->t[1];
  dk_tensor xt = *x;
  dk_status s;
  if ((s = dk__cuda_scratch(c, (size_t)(c->i[0] * c->i[2]) * 2, "16-bit copy of dk_linear's x", xs)) != DK_OK) return s;
  xt.dtype = ht;
  xt.st = xs;
  xt.offset = 0;
  return dk__cuda_strided(c, &xt, x, x->stride, 1);
}

/* how many rows of dk_linear's weight a slab dequantized to ht holds: at
 * most DK_CUDA_DEQUANT_BYTES (a 262k-row classifier in f32 would be 670 MB) */
static int64_t dk__cuda_slab_rows(const dk_call *c, dk_dtype ht) {
  const int64_t N = c->i[1];
  int64_t nc = (int64_t)(DK_CUDA_DEQUANT_BYTES / ((size_t)c->i[2] * dk_dtype_block_bytes(ht)));
  return nc < 1 ? 1 : nc > N ? N : nc;
}

/* rows [n0, n0 + nn) of dk_linear's weight dequantized to ht at dst */
static dk_status dk__cuda_dequant_slab(const dk_call *c, dk_dtype ht, int64_t n0, int64_t nn, uint64_t dst) {
  const dk_tensor *w = c->t[2];
  const int64_t K = c->i[2];
  dk_kp_embedding p;
  memset(&p, 0, sizeof p);
  p.out = dst;
  p.table = dk__cuda_addr(w) + (uint64_t)n0 * dk__row_bytes(w->dtype, K);
  p.rows = nn;
  p.D = K;
  p.row_bytes = (int64_t)dk__row_bytes(w->dtype, K);
  p.tdt = (int32_t)w->dtype;
  p.odt = (int32_t)ht;
  return dk__cuda_launch(c, DK_CUDA_K_dk_dequant_rows, dk__cuda_grid(nn, 1), 1, 1, DK_EW_THREADS, &p);
}

/* Prompt-sized dk_linear on cuBLAS: out = x . W^T (+ bias). Rows of x run in
 * the weight's 16-bit type (f16; bf16 for bf16 weights) on tensor cores with
 * f32 accumulation, as llama.cpp's CUDA prompt path does: f32 activations are
 * rounded to f16 once (a relative error of 2^-11 per value), block-format
 * weights are dequantized to f16 into a scratch buffer. f32 weights, and
 * weights marked dk_tensor_set_precise with f32 activations, keep f32
 * arithmetic (no TF32). f16/bf16 x: W in x's dtype (rounded where it is
 * another type, as devkit's tensor-core kernel does). Returns DK_OK with
 * *done 0 when this product stays on devkit's kernels. */
static dk_status dk__cuda_linear_blas(const dk_call *c, int *done) {
  const dk_tensor *o = c->t[0], *x = c->t[1], *w = c->t[2], *bias = c->t[3];
  const int64_t M = c->i[0], N = c->i[1], K = c->i[2];
  dk__cuda_dev *ld = dk__cuda_ld(c->dev);
  dk_storage xs, ws;
  const dk_dtype ht = dk__cuda_prompt_type(x, w);   /* 16-bit x: W rounded to it */
  uint64_t A, B;
  dk_status s;
  void *h;
  *done = 0;
  if (!dk__cuda_blas_fits(M, N, K)) return DK_OK;
  h = dk__cuda_blas(c, &s);
  if (!h) return s;
  memset(&xs, 0, sizeof xs);
  memset(&ws, 0, sizeof ws);
  A = dk__cuda_addr(w);
  B = dk__cuda_addr(x);
  if (x->dtype != ht) {
    if ((s = dk__cuda_round_x(c, ht, &xs)) != DK_OK) goto out;
    B = xs.addr;
  }
  if (bias) {
    /* out starts as the bias row repeated, and the product adds to it */
    int64_t bstr[DEVKIT_MAX_DIMS];
    int i;
    for (i = 0; i < o->ndim; i++) bstr[i] = 0;
    bstr[o->ndim - 1] = bias->stride[0];
    if ((s = dk__cuda_strided(c, o, bias, bstr, 0)) != DK_OK) goto out;
  }
  if (w->dtype == ht) {
    /* out^T [N, M] = W [N, K] . x^T in column-major terms: W is op T of a
     * K x N column-major matrix, x^T the K x M column-major view of x */
    s = dk__cuda_blas_gemm(c, h, 1, N, M, K, A, ht, K, 0, B, ht, K, 0, dk__cuda_addr(o), o->dtype, N, 0, 1, bias != NULL);
  } else {
    /* the weight dequantized a slab of rows at a time */
    const int64_t nc = dk__cuda_slab_rows(c, ht);
    int64_t n0;
    if ((s = dk__cuda_scratch(c, (size_t)(nc * K) * dk_dtype_block_bytes(ht), "dequantized dk_linear weight", &ws)) != DK_OK)
      goto out;
    for (n0 = 0; n0 < N && s == DK_OK; n0 += nc) {
      const int64_t nn = N - n0 < nc ? N - n0 : nc;
      if ((s = dk__cuda_dequant_slab(c, ht, n0, nn, ws.addr)) != DK_OK) break;
      s = dk__cuda_blas_gemm(c, h, 1, nn, M, K, ws.addr, ht, K, 0, B, ht, K, 0,
                             dk__cuda_addr(o) + (uint64_t)n0 * dk_dtype_block_bytes(o->dtype), o->dtype, N, 0, 1,
                             bias != NULL);
    }
  }
  if (s == DK_OK) *done = 1;
out:
  dk__cuda_scratch_done(ld, &xs);
  dk__cuda_scratch_done(ld, &ws);
  return s;
}

/* the NT tile kernels' parameters for dk_linear with x's rows at a */
static void dk__cuda_nt_params(const dk_call *c, uint64_t a, dk_kp_gemm *p) {
  const dk_tensor *o = c->t[0], *w = c->t[2], *bias = c->t[3];
  const int64_t M = c->i[0], N = c->i[1], K = c->i[2];
  memset(p, 0, sizeof *p);
  p->a = a;
  p->b = dk__cuda_addr(w);
  p->c = dk__cuda_addr(o);
  p->bias = bias ? dk__cuda_addr(bias) : 0;
  p->M = M; p->N = N; p->K = K;
  p->lda = K; p->ldb = K; p->ldc = N;
  p->b_row_bytes = (int64_t)dk__row_bytes(w->dtype, K);
  p->batch = 1;
  p->wdt = (int32_t)w->dtype;
  p->biasdt = bias ? (int32_t)bias->dtype : DK_KT_F32;
  p->has_bias = bias != NULL;
}

/* A prompt-sized dk_linear of f32 x without cuBLAS, on the tensor cores,
 * rounded as the cuBLAS path rounds: x to f16 (bf16 for bf16 weights), the
 * K-quants dequantized to it a slab of rows at a time; f32 out
 * (dk_gemm_tc_*_nt_o32, kernels/linear.cu). Before it, such a product ran
 * on the SIMT f32 kernel: the 1B f16 prompt at 4505 tok/s on an H200
 * against cuBLAS's 43882 (RESULTS.md, 2026-11-26). Not yet run on a GPU,
 * so only under DEVKIT_CUDA_PROMPT_TC=1. */
static dk_status dk__cuda_linear_tc(const dk_call *c, int *done) {
  const dk_tensor *o = c->t[0], *x = c->t[1], *w = c->t[2], *bias = c->t[3];
  const int64_t N = c->i[1], K = c->i[2];
  const dk_dtype ht = dk__cuda_prompt_type(x, w);
  const int kid = ht == DK_BF16 ? DK_CUDA_K_dk_gemm_tc_bf16_nt_o32 : DK_CUDA_K_dk_gemm_tc_f16_nt_o32;
  dk__cuda_dev *ld = dk__cuda_ld(c->dev);
  dk_storage xs, ws;
  dk_kp_gemm p;
  dk_status s;
  *done = 0;
  if (!dk__cuda_prompt_tc_on() || x->dtype != DK_F32 || o->dtype != DK_F32 || ht == DK_F32) return DK_OK;
  memset(&xs, 0, sizeof xs);
  memset(&ws, 0, sizeof ws);
  if ((s = dk__cuda_round_x(c, ht, &xs)) != DK_OK) goto out;
  dk__cuda_nt_params(c, xs.addr, &p);
  if (!((DK_QUANTS_MORE >> w->dtype) & 1)) {
    s = dk__cuda_gemm_launch(c, kid, &p);   /* the tile loader converts f16/bf16/q8_0/q4_0 rows itself */
  } else {
    const int64_t nc = dk__cuda_slab_rows(c, ht);
    int64_t n0;
    if ((s = dk__cuda_scratch(c, (size_t)(nc * K) * 2, "dequantized dk_linear weight", &ws)) != DK_OK) goto out;
    p.b = ws.addr;
    p.wdt = (int32_t)ht;
    p.b_row_bytes = K * 2;
    for (n0 = 0; n0 < N && s == DK_OK; n0 += nc) {
      p.N = N - n0 < nc ? N - n0 : nc;
      p.c = dk__cuda_addr(o) + (uint64_t)n0 * 4;
      p.bias = bias ? dk__cuda_addr(bias) + (uint64_t)n0 * dk_dtype_block_bytes(bias->dtype) : 0;
      if ((s = dk__cuda_dequant_slab(c, ht, n0, p.N, ws.addr)) == DK_OK) s = dk__cuda_gemm_launch(c, kid, &p);
    }
  }
  if (s == DK_OK) *done = 1;
out:
  dk__cuda_scratch_done(ld, &xs);
  dk__cuda_scratch_done(ld, &ws);
  return s;
}

/* dk_gemv2_* (kernels/linear.cu): float weights with 16-byte aligned rows
 * and an f32 x it can read 16 bytes at a time; the staged kernel takes the
 * rest, and everything under DEVKIT_CUDA_GEMV=staged. */
/* kernels/linear.cu's rows-per-block decode GEMV for floats, q8_0 and q4_0
 * (run on an H100 2026-11-25: q4_0 1.3-1.7x, q8_0 1.1-2.0x the staged
 * kernel); DEVKIT_CUDA_GEMV=staged keeps the staged kernel for all,
 * DEVKIT_CUDA_GEMVQ=0 for the block formats */
static int dk__cuda_gemv2_ok(const dk_kp_gemv *p, const dk_tensor *x, const dk_tensor *w) {
  static int fl = -1, q = -1;
  if (fl < 0) {
    fl = dk__cuda_switch("DEVKIT_CUDA_GEMV", "rows", "staged", 1);
    q = fl && dk__cuda_switch("DEVKIT_CUDA_GEMVQ", "1", "0", 1);
  }
  if (x->dtype != DK_F32 || p->K % 8 != 0 || p->x % 16 != 0) return 0;
  if (w->dtype == DK_F32 || w->dtype == DK_F16 || w->dtype == DK_BF16) return fl && (p->w | p->w_row_bytes) % 16 == 0;
  if (w->dtype == DK_Q8_0 || w->dtype == DK_Q4_0) return q && (p->w | p->w_row_bytes) % 2 == 0;
  return 0;
}

static dk_status dk__cuda_linear(const dk_call *c) {
  const dk_tensor *x = c->t[1], *w = c->t[2];
  int64_t M = c->i[0], N = c->i[1];
  if (M == 0 || N == 0) return DK_OK;
  if (M > DK_GEMV_MAXM) {
    int done = 0;
    dk_status s = dk__cuda_linear_blas(c, &done);
    if (s == DK_OK && !done) s = dk__cuda_linear_tc(c, &done);
    if (s != DK_OK || done) return s;
  }
  if ((DK_QUANTS_MORE >> w->dtype) & 1) {
    static const int kk[DK_DTYPE_COUNT] = {
        0, 0, 0, 0, 0, 0, DK_CUDA_K_dk_gemv2k_q4_1, DK_CUDA_K_dk_gemv2k_q5_0, DK_CUDA_K_dk_gemv2k_q5_1,
        DK_CUDA_K_dk_gemv2k_q2_k, DK_CUDA_K_dk_gemv2k_q3_k, DK_CUDA_K_dk_gemv2k_q4_k, DK_CUDA_K_dk_gemv2k_q5_k,
        DK_CUDA_K_dk_gemv2k_q6_k, DK_CUDA_K_dk_gemv2k_iq4_nl, DK_CUDA_K_dk_gemv2k_iq4_xs, DK_CUDA_K_dk_gemv2k_iq3_xxs,
        DK_CUDA_K_dk_gemv2k_iq3_s, DK_CUDA_K_dk_gemv2k_iq2_xxs, DK_CUDA_K_dk_gemv2k_iq2_xs, DK_CUDA_K_dk_gemv2k_iq2_s};
    if (M <= DK_GEMV_MAXM && x->dtype == DK_F32 && kk[w->dtype] && dk__cuda_gemvk_on()) {
      dk_kp_gemv p;
      dk__cuda_gemv_params(c, 0, M, &p);
      if (p.x % 16 == 0 && (p.w | (uint64_t)p.w_row_bytes) % DK_PIECE_ALIGN(w->dtype) == 0)
        return dk__cuda_launch(c, kk[w->dtype], dk__cuda_grid(N, DK_GEMV2K_ROWS), 1, 1, DK_GEMV_THREADS, &p);
    }
    return dk__cuda_linear_more(c);
  }
  if (M <= DK_GEMV_MAXM) {
    /* decode: stream W once */
    dk_kp_gemv p;
    static const int kid[DK_DTYPE_COUNT] = {DK_CUDA_K_dk_gemv_w_f32, DK_CUDA_K_dk_gemv_w_f16, DK_CUDA_K_dk_gemv_w_bf16, 0,
                                            DK_CUDA_K_dk_gemv_w_q8_0, DK_CUDA_K_dk_gemv_w_q4_0};
    dk__cuda_gemv_params(c, 0, M, &p);
    static const int kid2[DK_DTYPE_COUNT] = {DK_CUDA_K_dk_gemv2_f32, DK_CUDA_K_dk_gemv2_f16, DK_CUDA_K_dk_gemv2_bf16, 0,
                                             DK_CUDA_K_dk_gemv2_q8_0, DK_CUDA_K_dk_gemv2_q4_0};
    if (dk__cuda_gemv2_ok(&p, x, w))
      return dk__cuda_launch(c, kid2[w->dtype], dk__cuda_grid(N, w->dtype >= DK_Q8_0 ? DK_GEMV2_QROWS : DK_GEMV2_ROWS), 1, 1,
                             DK_GEMV_THREADS, &p);
    return dk__cuda_launch(c, kid[w->dtype], dk__cuda_grid(N, DK_GEMV_ROWS_PER_BLOCK), 1, 1, DK_GEMV_THREADS, &p);
  } else {
    /* prompt without cuBLAS: NT tiles; f32 x on the SIMT f32 kernel,
     * f16/bf16 x on tensor cores */
    dk_kp_gemm p;
    dk__cuda_nt_params(c, dk__cuda_addr(x), &p);
    return dk__cuda_gemm_launch(c, dk__cuda_kid3(x->dtype, DK_CUDA_K_dk_gemm_f32_nt, DK_CUDA_K_dk_gemm_tc_f16_nt,
                                                 DK_CUDA_K_dk_gemm_tc_bf16_nt), &p);
  }
}

/* dk_rmsnorm_linear, dk_swiglu_linear. Default: the first op (dk_norm or the
 * swiglu) then dk_linear through a scratch buffer (their bits).
 * At decode, where the row kernel takes the product (f32 x, aligned rows),
 * one launch of dk_gemv2n_* / dk_gemv2s_* (kernels/linear.cu) that applies
 * the first op to x as it reads it: a 1B decode step's norms were about a
 * fifth of its GPU time and its swiglus 3 % (ncu, H200, 2026-11-26). On an
 * H200 (2026-11-28) with graphs: f16 551-558 -> 587-589 tok/s, q4_0 565 ->
 * 633. DEVKIT_CUDA_FUSED_GEMV=0 keeps the two ops. */
static dk_status dk__cuda_fused_linear(const dk_call *c) {
  static int fused = -1;
  const dk_tensor *x = c->t[1], *aux = c->t[2], *w = c->t[3];
  const int64_t M = c->i[0], N = c->i[1];
  const int swiglu = c->op == DK_OP_SWIGLU_LINEAR;
  dk_tensor xn;
  dk_call fc, lc;
  dk_storage st;
  dk_status s;
  if (fused < 0) fused = dk__cuda_switch("DEVKIT_CUDA_FUSED_GEMV", "1", "0", 1);
  if (M == 0 || N == 0) return DK_OK;
  if (fused && M <= DK_GEMV_MAXM && (!aux || (aux->dtype == DK_F32 && dk__cuda_addr(aux) % 16 == 0)) &&
      (w->dtype == DK_F32 || w->dtype == DK_F16 || w->dtype == DK_BF16 || w->dtype == DK_Q8_0 || w->dtype == DK_Q4_0)) {
    static const int kn[DK_DTYPE_COUNT] = {DK_CUDA_K_dk_gemv2n_f32, DK_CUDA_K_dk_gemv2n_f16, DK_CUDA_K_dk_gemv2n_bf16, 0,
                                           DK_CUDA_K_dk_gemv2n_q8_0, DK_CUDA_K_dk_gemv2n_q4_0};
    static const int ks[DK_DTYPE_COUNT] = {DK_CUDA_K_dk_gemv2s_f32, DK_CUDA_K_dk_gemv2s_f16, DK_CUDA_K_dk_gemv2s_bf16, 0,
                                           DK_CUDA_K_dk_gemv2s_q8_0, DK_CUDA_K_dk_gemv2s_q4_0};
    dk_kp_gemv p;
    lc = *c;
    lc.op = DK_OP_LINEAR;
    lc.t[2] = c->t[3]; lc.t[3] = c->t[4]; lc.t[4] = NULL;
    dk__cuda_gemv_params(&lc, 0, M, &p);
    if (dk__cuda_gemv2_ok(&p, x, w)) {
      p.aux = aux ? dk__cuda_addr(aux) : 0;
      p.eps = c->f[0];
      return dk__cuda_launch(c, (swiglu ? ks : kn)[w->dtype],
                             dk__cuda_grid(N, w->dtype >= DK_Q8_0 ? DK_GEMV2_QROWS : DK_GEMV2_ROWS), 1, 1, DK_GEMV_THREADS, &p);
    }
  }
  if ((s = dk__cuda_scratch(c, dk_tensor_nbytes(x), swiglu ? "dk_swiglu_linear's swiglu" : "dk_rmsnorm_linear's normed x",
                            &st)) != DK_OK)
    return s;
  dk__fused_linear_split(c, &st, 0, &xn, &fc, &lc);
  if ((s = fc.op == DK_OP_RMSNORM ? dk__cuda_norm(&fc) : dk__cuda_unary(&fc)) == DK_OK) s = dk__cuda_linear(&lc);
  dk__cuda_scratch_done(dk__cuda_ld(c->dev), &st);
  return s;
}

/* the one stride of an operand over the flattened batch, when its batch dims
 * nest (each outer stride the inner one times the inner extent, or all 0) */
static int dk__cuda_batch_stride(const dk_kp_gemm *p, const int64_t *str, int64_t *out) {
  int64_t s = 0, span = 0;
  int d;
  for (d = p->nbdims - 1; d >= 0; d--) {
    if (p->bshape[d] == 1) continue;
    if (!span) { s = str[d]; span = p->bshape[d]; }
    else if (str[d] != s * span) return 0;
    else span *= p->bshape[d];
  }
  *out = s;
  return 1;
}

/* dk_matmul on cuBLAS (p: the parameters devkit's kernel would get): f32
 * products in f32 (no TF32), f16/bf16 on tensor cores with f32 accumulation,
 * as devkit's kernels compute them. One call when each operand's batch dims
 * nest, else one per outer batch item. */
static dk_status dk__cuda_matmul_blas(const dk_call *c, const dk_kp_gemm *p, int *done) {
  const dk_tensor *o = c->t[0], *a = c->t[1], *b = c->t[2];
  const int64_t es = (int64_t)dk_dtype_block_bytes(o->dtype);
  int64_t sa, sb, z, inner, outer;
  dk_status s;
  void *h;
  *done = 0;
  if (a->dtype != o->dtype || b->dtype != o->dtype || !dk__cuda_blas_fits(p->M, p->N, p->K) ||
      !dk__cuda_blas_fits(p->lda, p->ldb, p->batch) || p->ldb < p->N || p->lda < p->K)
    return DK_OK;
  h = dk__cuda_blas(c, &s);
  if (!h) return s;
  /* C^T [N, M] = B^T . A^T in column-major terms: row-major B [K, N] is the
   * N x K column-major B^T (ld = B's row stride), likewise A */
  if (dk__cuda_batch_stride(p, p->abstr, &sa) && dk__cuda_batch_stride(p, p->bbstr, &sb)) {
    s = dk__cuda_blas_gemm(c, h, 0, p->N, p->M, p->K, p->b, o->dtype, p->ldb, sb, p->a, o->dtype, p->lda, sa, p->c,
                           o->dtype, p->N, p->M * p->N, p->batch, 0);
    if (s == DK_OK) *done = 1;
    return s;
  }
  inner = p->bshape[p->nbdims - 1];
  outer = p->batch / inner;
  for (z = 0; z < outer; z++) {
    int64_t rem = z, ao = 0, bo = 0;
    int d;
    for (d = p->nbdims - 2; d >= 0; d--) {
      const int64_t idx = rem % p->bshape[d];
      rem /= p->bshape[d];
      ao += idx * p->abstr[d];
      bo += idx * p->bbstr[d];
    }
    s = dk__cuda_blas_gemm(c, h, 0, p->N, p->M, p->K, p->b + (uint64_t)(bo * es), o->dtype, p->ldb,
                           p->bbstr[p->nbdims - 1], p->a + (uint64_t)(ao * es), o->dtype, p->lda,
                           p->abstr[p->nbdims - 1], p->c + (uint64_t)(z * inner * p->M * p->N * es), o->dtype, p->N,
                           p->M * p->N, inner, 0);
    if (s != DK_OK) return s;
  }
  *done = 1;
  return DK_OK;
}

static dk_status dk__cuda_matmul(const dk_call *c) {
  const dk_tensor *o = c->t[0], *a = c->t[1], *b = c->t[2];
  int abat = a->ndim > 2 ? a->ndim - 2 : 0, bbat = b->ndim > 2 ? b->ndim - 2 : 0;
  int nb = abat > bbat ? abat : bbat, i;
  dk_kp_gemm p;
  memset(&p, 0, sizeof p);
  p.M = c->i[0]; p.N = c->i[1]; p.K = c->i[2]; p.batch = c->i[3];
  if (p.M == 0 || p.N == 0 || p.batch == 0) return DK_OK;
  p.a = dk__cuda_addr(a);
  p.b = dk__cuda_addr(b);
  p.c = dk__cuda_addr(o);
  /* 1-D promotion: a 1-D a is one row (lda unused), a 1-D b one column
   * (its K elements at stride 1) */
  p.lda = a->ndim >= 2 ? a->stride[a->ndim - 2] : p.K;
  p.ldb = b->ndim >= 2 ? b->stride[b->ndim - 2] : b->stride[0];
  p.ldc = p.N;
  /* batch dims after broadcasting, as dk__matmul_batch_offsets walks them */
  p.nbdims = nb;
  for (i = 0; i < nb; i++) {
    int ia = i - (nb - abat), ib = i - (nb - bbat);
    int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    p.bshape[i] = da > db ? da : db;
    p.abstr[i] = (ia >= 0 && da != 1) ? a->stride[ia] : 0;
    p.bbstr[i] = (ib >= 0 && db != 1) ? b->stride[ib] : 0;
  }
  p.wdt = (int32_t)b->dtype;
  {
    int done = 0;
    dk_status s = dk__cuda_matmul_blas(c, &p, &done);
    if (s != DK_OK || done) return s;
  }
  return dk__cuda_gemm_launch(c, dk__cuda_kid3(o->dtype, DK_CUDA_K_dk_gemm_f32_nn, DK_CUDA_K_dk_gemm_tc_f16_nn,
                                               DK_CUDA_K_dk_gemm_tc_bf16_nn), &p);
}

/* A status slot for an op whose ids the device checks (dk_embedding,
 * dk_index_select), with what its message will name; *status: the slot's
 * device address */
static dk_status dk__cuda_id_slot(const dk_call *c, const dk_tensor *ids, const dk_tensor *table, long long rows, int axis,
                                  uint64_t *status) {
  dk__cuda_dev *ld = dk__cuda_ld(c->dev);
  dk__cuda_emb_note *note;
  const char *op = dk__op_name(c->op);
  dk__cuda_graph *g = ld->grec;   /* a graph being captured: one of its own words */
  char what[96];
  int slot;
  if (g && g->status_used == DK_CUDA_GRAPH_SLOTS)
    return dk__op_error((dk_call *)c, DK_ERR_UNSUPPORTED, "record fewer such ops into one graph",
                        "a CUDA graph holds at most %d ops whose ids the device checks (dk_embedding, dk_index_select, "
                        "dk_index_copy)", DK_CUDA_GRAPH_SLOTS);
  if (!g && ld->status_used == DK_CUDA_STATUS_SLOTS) {
    /* every slot is taken since the last sync: read them now (this waits for
     * the stream). A bad id found here belongs to an earlier op: it is kept
     * and reported by the next call that synchronizes, not by this one. */
    dk_cu_result r = dk__cu.api.StreamSynchronize(ld->stream);
    snprintf(what, sizeof what, "%s (waiting to reuse the status slots)", op);
    if (r != DK_CU_SUCCESS) return dk__cuda_fail(c->dev.index, what, r);
    if (ld->pending[0]) {
      char later[1024];
      (void)dk__cuda_scan_status(c->dev, later, sizeof later, &r);   /* the first bad id is the one kept */
    } else {
      dk__cuda_scan_status(c->dev, ld->pending, sizeof ld->pending, &r);
    }
    snprintf(what, sizeof what, "%s (reading the status slots)", op);
    if (r != DK_CU_SUCCESS) return dk__cuda_fail(c->dev.index, what, r);
  }
  slot = g ? g->status_used++ : ld->status_used++;
  note = g ? &g->notes[slot] : &ld->notes[slot];
  *status = (g ? g->status : ld->status) + 8 * (uint64_t)slot;
  dk__copy_str(note->ids_name, sizeof note->ids_name, ids->name);
  dk__copy_str(note->ids_site, sizeof note->ids_site, ids->site);
  dk__copy_str(note->table_name, sizeof note->table_name, table->name);
  note->rows = rows;
  note->axis = axis;
  note->op = (int)c->op;
  return DK_OK;
}

static dk_status dk__cuda_embedding(const dk_call *c) {
  const dk_tensor *o = c->t[0], *tab = c->t[1], *ids = c->t[2];
  dk_kp_embedding p;
  dk_status s;
  memset(&p, 0, sizeof p);
  p.n_ids = dk_tensor_numel(ids);
  if (p.n_ids == 0) return DK_OK;
  if ((s = dk__cuda_id_slot(c, ids, tab, (long long)tab->shape[0], -1, &p.status)) != DK_OK) return s;
  p.out = dk__cuda_addr(o);
  p.table = dk__cuda_addr(tab);
  p.ids = dk__cuda_addr(ids);
  p.D = tab->shape[1];
  p.rows = tab->shape[0];
  p.row_bytes = (int64_t)dk__row_bytes(tab->dtype, p.D);
  p.tdt = (int32_t)tab->dtype;
  p.odt = (int32_t)o->dtype;
  if ((s = dk__cuda_launch(c, DK_CUDA_K_dk_embedding_check, dk__cuda_grid(p.n_ids, DK_EW_THREADS), 1, 1, DK_EW_THREADS, &p)) != DK_OK)
    return s;
  if (p.D == 0) return DK_OK;
  return dk__cuda_launch(c, DK_CUDA_K_dk_embedding_gather, dk__cuda_grid(p.n_ids, 1), 1, 1, DK_EW_THREADS, &p);
}

/* index_select: out [outer, nids, inner] from x [outer, n, inner]; with
 * DEVKIT_CUDA_DEVPOS, index_copy the other way: dst [outer, n, inner] from
 * src [outer, nids, inner], converted. The ids are checked on the device
 * first (dk__cuda_id_slot), as dk_embedding's. */
static dk_status dk__cuda_index_select(const dk_call *c) {
  const dk_tensor *o = c->t[0], *x = c->t[1], *ids = c->t[2];
  const int scatter = c->op == DK_OP_INDEX_COPY;
  const dk_tensor *big = scatter ? o : x;   /* the tensor the ids index */
  int a = (int)c->i[0], i;
  dk_kp_gather p;
  dk_status s;
  memset(&p, 0, sizeof p);
  p.outer = p.inner = 1;
  for (i = 0; i < a; i++) p.outer *= big->shape[i];
  for (i = a + 1; i < big->ndim; i++) p.inner *= big->shape[i];
  p.n = big->shape[a];
  p.nids = dk_tensor_numel(ids);
  if (p.nids == 0) return DK_OK;
  if ((s = dk__cuda_id_slot(c, ids, big, (long long)p.n, a, &p.status)) != DK_OK) return s;
  p.out = dk__cuda_addr(o);
  p.x = dk__cuda_addr(x);
  p.ids = dk__cuda_addr(ids);
  p.esize = (int32_t)dk_dtype_block_bytes(o->dtype);   /* a float dtype: its element size */
  p.xdt = (int32_t)x->dtype;
  p.odt = (int32_t)o->dtype;
  if ((s = dk__cuda_launch(c, DK_CUDA_K_dk_index_select_check, dk__cuda_grid(p.nids, DK_EW_THREADS), 1, 1, DK_EW_THREADS, &p)) != DK_OK)
    return s;
  if (p.outer * p.inner == 0) return DK_OK;
  return dk__cuda_launch(c, scatter ? DK_CUDA_K_dk_index_copy_scatter : DK_CUDA_K_dk_index_select_gather,
                         dk__cuda_grid(p.outer * p.nids, 1), 1, 1, DK_EW_THREADS, &p);
}

static dk_status dk__cuda_rope(const dk_call *c) {
  const dk_tensor *o = c->t[0], *x = c->t[1], *pos = c->t[2];
  dk_kp_rope p;
  memset(&p, 0, sizeof p);
  p.D = x->shape[x->ndim - 1];
  if (p.D == 0 || dk_tensor_numel(x) == 0) return DK_OK;
  p.rows = dk_tensor_numel(x) / p.D;
  p.H = x->ndim == 2 ? 1 : x->shape[x->ndim - 2];
  p.T = pos->shape[0];
  if (p.H == 0 || p.T == 0) return DK_OK;
  p.out = dk__cuda_addr(o);
  p.x = dk__cuda_addr(x);
  p.pos = dk__cuda_addr(pos);
  p.n_rot = (int32_t)c->i[0];
  p.neox = c->i[1] == DK_ROPE_NEOX;
  p.theta = c->f[0];
  return dk__cuda_launch(c, dk__cuda_kid3(o->dtype, DK_CUDA_K_dk_rope_f32, DK_CUDA_K_dk_rope_f16, DK_CUDA_K_dk_rope_bf16),
                         dk__cuda_grid(p.rows * (p.n_rot / 2 + (p.D - p.n_rot)), DK_EW_THREADS), 1, 1, DK_EW_THREADS, &p);
}

static dk_status dk__cuda_concat(const dk_call *c) {
  const dk_tensor *o = c->t[0], *a = c->t[1], *b = c->t[2];
  int dim = (int)c->i[0], i;
  dk_kp_concat p;
  memset(&p, 0, sizeof p);
  if (dk_tensor_numel(o) == 0) return DK_OK;
  p.outer = 1;
  p.inner = 1;
  for (i = 0; i < dim; i++) p.outer *= o->shape[i];
  for (i = dim + 1; i < o->ndim; i++) p.inner *= o->shape[i];
  p.ad = a->shape[dim];
  p.bd = b->shape[dim];
  p.out = dk__cuda_addr(o);
  p.a = dk__cuda_addr(a);
  p.b = dk__cuda_addr(b);
  return dk__cuda_launch(c, dk_dtype_block_bytes(o->dtype) == 2 ? DK_CUDA_K_dk_concat_2 : DK_CUDA_K_dk_concat_4,
                         dk__cuda_grid(dk_tensor_numel(o), DK_EW_THREADS), 1, 1, DK_EW_THREADS, &p);
}

/* dst[idx] = src[idx] with src read through sstr (elements per dim) */
static dk_status dk__cuda_strided(const dk_call *c, const dk_tensor *d, const dk_tensor *s, const int64_t *sstr,
                                  int contiguous) {
  dk_kp_copy p;
  int i, kid;
  memset(&p, 0, sizeof p);
  p.n = dk_tensor_numel(d);
  if (p.n == 0) return DK_OK;
  p.dst = dk__cuda_addr(d);
  p.src = dk__cuda_addr(s);
  p.ndim = d->ndim;
  for (i = 0; i < d->ndim; i++) {
    p.shape[i] = d->shape[i];
    p.dstr[i] = d->stride[i];
    p.sstr[i] = sstr[i];
  }
  p.sdt = (int32_t)s->dtype;
  p.ddt = (int32_t)d->dtype;
  p.contiguous = contiguous;
  if (d->dtype != s->dtype) kid = DK_CUDA_K_dk_copy_convert;
  else kid = dk_dtype_block_bytes(d->dtype) == 2 ? DK_CUDA_K_dk_copy_raw2 : DK_CUDA_K_dk_copy_raw4;
  return dk__cuda_launch(c, kid, dk__cuda_grid(p.n, DK_EW_THREADS), 1, 1, DK_EW_THREADS, &p);
}

static dk_status dk__cuda_copy_op(const dk_call *c) {
  const dk_tensor *d = c->t[0], *s = c->t[1];
  int dc = dk_tensor_is_contiguous(d), sc = dk_tensor_is_contiguous(s);
  if (dc && sc && d->dtype == s->dtype) {
    /* same bytes: a plain device copy (quantized tensors always take this path) */
    dk__cuda_dev *ld = dk__cuda_ld(c->dev);
    size_t n = dk_tensor_nbytes(d);
    dk_cu_result r;
    if (n == 0 || dk__cuda_addr(d) == dk__cuda_addr(s)) return DK_OK;
    dk__cuda_recent_add(ld, (int)c->op, -1);
    r = dk__cu.api.MemcpyDtoDAsync(dk__cuda_addr(d), dk__cuda_addr(s), n, ld->stream);
    return r == DK_CU_SUCCESS ? DK_OK : dk__cuda_fail(c->dev.index, "dk_copy (cuMemcpyDtoDAsync)", r);
  }
  return dk__cuda_strided(c, d, s, s->stride, dc && sc);
}

static dk_status dk__cuda_transpose(const dk_call *c) {
  const dk_tensor *o = c->t[0], *x = c->t[1];
  int64_t sstr[DEVKIT_MAX_DIMS];
  int i;
  for (i = 0; i < x->ndim; i++) sstr[i] = x->stride[c->i[i]];
  return dk__cuda_strided(c, o, x, sstr, 0);
}

static dk_status dk__cuda_pick(const dk_call *c) {
  const dk_tensor *o = c->t[0], *x = c->t[1];
  dk_kp_pick p;
  memset(&p, 0, sizeof p);
  p.n = x->shape[x->ndim - 1];
  if (p.n == 0 || dk_tensor_numel(x) == 0) return DK_OK;
  p.rows = dk_tensor_numel(x) / p.n;
  p.out = dk__cuda_addr(o);
  p.x = dk__cuda_addr(x);
  p.xdt = (int32_t)x->dtype;
  p.temp = c->f[0];
  p.top_k = (int32_t)c->i[0];
  p.top_p = c->f[1];
  p.seed = c->u;
  return dk__cuda_launch(c, c->op == DK_OP_ARGMAX ? DK_CUDA_K_dk_argmax : DK_CUDA_K_dk_sample, dk__cuda_grid(p.rows, 1), 1,
                         1, DK_ROW_THREADS, &p);
}

/* The split-K path (kernels/attention.cu, dk_attn_split_*) serves all query
 * heads of a kv head from one read of K/V and spreads the positions over
 * blocks; the one-row-per-block kernel stays for what it does not take
 * (head dims not multiples of 8 or above DK_ATTN_SPLIT_MAXD, unaligned K/V)
 * and for DEVKIT_CUDA_ATTN=rows. Returns 0 when the split path does not
 * apply. */
static int dk__cuda_attn_split_on(void) {
  const char *e = getenv("DEVKIT_CUDA_ATTN");
  return !(e && !strcmp(e, "rows"));
}

/* several query rows per split-K block in prompts (kernels/attention.cu's
 * dk_attn_rows_*): its first build ran clean on an H200 but was no faster
 * than the one-row kernel (its registers cost an SM's third block); this
 * build, capped to keep it, ran on an H200 on 2026-11-26 (ops_attention,
 * models_, ops_linear_prompt pass; racecheck and memcheck clean; 1B f16
 * prompt 43.3k -> 46.6-47.2k tok/s), so it is the default:
 * DEVKIT_CUDA_ATTN_ROWS=one keeps one row a block */
static int dk__cuda_attn_rows_on(void) {
  static int on = -1;
  if (on < 0) on = dk__cuda_switch("DEVKIT_CUDA_ATTN_ROWS", "many", "one", 1);
  return on;
}

static int dk__cuda_attn_split_plan(dk__cuda_dev *ld, dk_kp_attn_split *p) {
  const int sms = dk__cu.phys[ld->physical].sm_count > 0 ? dk__cu.phys[ld->physical].sm_count : 132;
  const int64_t target = 2 * (int64_t)sms;   /* two blocks per SM: enough to hide latency, few partial records */
  const int64_t grp = p->Hq / p->Hkv, cap_records = 4 * target * DK_ATTN_SPLIT_HB;
  int64_t base, nsplit = 1, len;
  if (p->D % 8 || p->Dv % 8 || p->D > DK_ATTN_SPLIT_MAXD || p->Dv > DK_ATTN_SPLIT_MAXD) return 0;
  if ((p->k | p->v) % 16) return 0;
  p->nbatch = (int32_t)((grp + DK_ATTN_SPLIT_HB - 1) / DK_ATTN_SPLIT_HB);
  p->hb = (int32_t)((grp + p->nbatch - 1) / p->nbatch);
  /* a prompt fills the block's free head slots with more query rows: each
   * K/V row read then serves them all */
  p->tq = p->T > 1 && dk__cuda_attn_rows_on() ? DK_ATTN_SPLIT_HB / p->hb : 1;
  if (p->Hkv * p->nbatch > (int64_t)DK_MAX_GRID_YZ || (p->T + p->tq - 1) / p->tq > (int64_t)DK_MAX_GRID_YZ) return 0;
  base = (p->T + p->tq - 1) / p->tq * p->Hkv * p->nbatch;
  if (base < target && p->S > 64) {
    nsplit = (target + base - 1) / base;
    if (nsplit > (p->S + 63) / 64) nsplit = (p->S + 63) / 64;   /* at least 64 positions a split */
    if (nsplit > DK_ATTN_SPLIT_MAXN) nsplit = DK_ATTN_SPLIT_MAXN;
    if (nsplit * p->T * p->Hq > cap_records) nsplit = cap_records / (p->T * p->Hq);
    if (nsplit < 1) nsplit = 1;
  }
  if (nsplit > 1 && !ld->attn_part && !ld->attn_part_failed) {
    /* the bound above: cap_records records of (Dv + 2) floats, made once at
     * its largest so the address never changes (graphs may hold it) */
    size_t n = (size_t)cap_records * (DK_ATTN_SPLIT_MAXD + 2) * sizeof(float);
    if (dk__cu.api.MemAlloc(&ld->attn_part, n) == DK_CU_SUCCESS) ld->attn_part_bytes = n;
    else { ld->attn_part = 0; ld->attn_part_failed = 1; }   /* out of memory: one split, slower but right */
  }
  if (!ld->attn_part) nsplit = 1;
  len = p->S > 0 ? (p->S + nsplit - 1) / nsplit : 1;
  len = (len + 31) / 32 * 32;
  p->split_len = len;
  p->nsplit = (int32_t)(p->S > 0 ? (p->S + len - 1) / len : 1);
  p->part = ld->attn_part;
  return 1;
}

/* dk_attention, or with pos (a device address: dk_attention_pos's
 * positions) each row's limit read on the device; window > 0: each row's
 * keys start at its limit - window (dk_attention_window's _win kernels) */
static dk_status dk__cuda_attend(const dk_call *c, dk_cu_ptr pos, int64_t window) {
  const dk_tensor *o = c->t[0], *q = c->t[1], *k = c->t[2], *v = c->t[3];
  dk_kp_attention p;
  memset(&p, 0, sizeof p);
  p.T = q->shape[0];
  p.Hq = q->shape[1];
  p.D = q->shape[2];
  p.S = k->shape[0];
  p.Hkv = k->shape[1];
  p.Dv = v->shape[2];
  if (p.D > DK_ATTN_MAXD || p.Dv > DK_ATTN_MAXD)
    return dk__op_error((dk_call *)c, DK_ERR_UNSUPPORTED, "", "head dims %lld (q, k) and %lld (v): the cuda backend takes at most %d",
                        (long long)p.D, (long long)p.Dv, DK_ATTN_MAXD);
  if (p.T * p.Hq == 0 || p.Dv == 0) return DK_OK;
  p.out = dk__cuda_addr(o);
  p.q = dk__cuda_addr(q);
  p.k = dk__cuda_addr(k);
  p.v = dk__cuda_addr(v);
  p.pos = pos;
  p.causal_offset = pos ? -1 : c->i[0];
  p.window = window;
  p.scale = c->f[0];
  p.qdt = (int32_t)q->dtype;
  p.kdt = (int32_t)k->dtype;
  p.odt = (int32_t)o->dtype;
  if (p.T > 1 && k->dtype == DK_F16 && p.D == DK_ATTN_FLASH_D && p.Dv == DK_ATTN_FLASH_D && !((p.k | p.v) % 16) &&
      p.Hq <= (int64_t)DK_MAX_GRID_YZ && !window && dk__cuda_flash_on())
    return dk__cuda_launch(c, DK_CUDA_K_dk_attn_flash_f16, (unsigned)((p.T + 63) / 64), (unsigned)p.Hq, 1, DK_ATTN_THREADS, &p);
  if (dk__cuda_attn_split_on()) {
    dk__cuda_dev *ld = dk__cuda_ld(c->dev);
    dk_kp_attn_split sp;
    memset(&sp, 0, sizeof sp);
    sp.out = p.out, sp.q = p.q, sp.k = p.k, sp.v = p.v, sp.pos = p.pos;
    sp.T = p.T, sp.S = p.S, sp.Hq = p.Hq, sp.Hkv = p.Hkv, sp.D = p.D, sp.Dv = p.Dv;
    sp.causal_offset = p.causal_offset;
    sp.window = window;
    sp.scale = p.scale;
    sp.qdt = p.qdt, sp.odt = p.odt;
    if (dk__cuda_attn_split_plan(ld, &sp)) {
      int kid = sp.tq > 1 ? window ? dk__cuda_kid3(k->dtype, DK_CUDA_K_dk_attn_rows_win_f32, DK_CUDA_K_dk_attn_rows_win_f16,
                                                   DK_CUDA_K_dk_attn_rows_win_bf16)
                                   : dk__cuda_kid3(k->dtype, DK_CUDA_K_dk_attn_rows_f32, DK_CUDA_K_dk_attn_rows_f16,
                                                   DK_CUDA_K_dk_attn_rows_bf16)
                : window ? dk__cuda_kid3(k->dtype, DK_CUDA_K_dk_attn_split_win_f32, DK_CUDA_K_dk_attn_split_win_f16,
                                         DK_CUDA_K_dk_attn_split_win_bf16)
                         : dk__cuda_kid3(k->dtype, DK_CUDA_K_dk_attn_split_f32, DK_CUDA_K_dk_attn_split_f16,
                                         DK_CUDA_K_dk_attn_split_bf16);
      dk_status s = dk__cuda_launch(c, kid,
                                    (unsigned)sp.nsplit, (unsigned)(sp.Hkv * sp.nbatch), (unsigned)((sp.T + sp.tq - 1) / sp.tq),
                                    DK_ATTN_THREADS, &sp);
      if (s != DK_OK || sp.nsplit == 1) return s;
      return dk__cuda_launch(c, DK_CUDA_K_dk_attn_merge, dk__cuda_grid(sp.T * sp.Hq, 1), 1, 1, DK_ATTN_THREADS, &sp);
    }
  }
  return dk__cuda_launch(c, window ? dk__cuda_kid3(k->dtype, DK_CUDA_K_dk_attention_win_f32, DK_CUDA_K_dk_attention_win_f16,
                                                   DK_CUDA_K_dk_attention_win_bf16)
                                  : dk__cuda_kid3(k->dtype, DK_CUDA_K_dk_attention_kv_f32, DK_CUDA_K_dk_attention_kv_f16,
                                                  DK_CUDA_K_dk_attention_kv_bf16),
                         dk__cuda_grid(p.T * p.Hq, 1), 1, 1, DK_ATTN_THREADS, &p);
}

static dk_status dk__cuda_attention(const dk_call *c) { return dk__cuda_attend(c, 0, 0); }

/* query row t of c's q as a dk_attention over keys [beg, lim) of its k and
 * v: the per-row form of dk_attention_window and dk_attention_pos on the
 * kernels a GPU has run */
static dk_status dk__cuda_attend_row(const dk_call *c, int64_t t, int64_t beg, int64_t lim) {
  const dk_tensor *o = c->t[0], *q = c->t[1], *k = c->t[2], *v = c->t[3];
  int64_t T = q->shape[0], S = k->shape[0];
  dk_tensor ot = *o, qt = *q, kt = *k, vt = *v;
  dk_call a = *c;
  ot.shape[0] = qt.shape[0] = 1;
  ot.offset += (size_t)t * (dk_tensor_nbytes(o) / (size_t)T);
  qt.offset += (size_t)t * (dk_tensor_nbytes(q) / (size_t)T);
  kt.shape[0] = vt.shape[0] = lim - beg;
  kt.offset += (size_t)beg * (dk_tensor_nbytes(k) / (size_t)S);
  vt.offset += (size_t)beg * (dk_tensor_nbytes(v) / (size_t)S);
  a.op = DK_OP_ATTENTION;
  a.t[0] = &ot; a.t[1] = &qt; a.t[2] = &kt; a.t[3] = &vt; a.t[4] = NULL;
  a.i[0] = -1;   /* every key of the narrowed cache */
  a.i[1] = 0;
  return dk__cuda_attention(&a);
}

/* dk_attention_window: with DEVKIT_CUDA_ATTN_WINDOW=1 one launch of the
 * _win kernels; by default (those have not run on a GPU yet) each query
 * row is a dk_attention over the keys of its window (the runner's loop
 * before the op existed), rows whose windows start at 0 together, as one
 * call. */
static dk_status dk__cuda_attention_window(const dk_call *c) {
  const dk_tensor *o = c->t[0], *q = c->t[1];
  int64_t T = q->shape[0], S = c->t[2]->shape[0], t, off = c->i[0], w = c->i[1], n0;
  dk_status s = DK_OK;
  if (dk__cuda_attn_window_on()) return dk__cuda_attend(c, 0, w);
  /* the first n0 rows see every key up to their limit: all rows when the
   * cache fits the window, else those with t + off + 1 <= w */
  n0 = S <= w ? T : off < 0 ? 0 : w - off < 0 ? 0 : w - off < T ? w - off : T;
  if (n0 > 0) {
    dk_tensor ot = *o, qt = *q;
    dk_call a = *c;
    a.op = DK_OP_ATTENTION;
    a.i[1] = 0;
    a.t[0] = &ot; a.t[1] = &qt;
    ot.shape[0] = qt.shape[0] = n0;
    s = dk__cuda_attention(&a);
  }
  for (t = n0; t < T && s == DK_OK; t++) {
    int64_t lim = off < 0 ? S : (t + off + 1 < S ? t + off + 1 : S);
    s = dk__cuda_attend_row(c, t, lim - w, lim);
  }
  return s;
}

/* ---- issue 12: reductions over axes, softmax on an axis, math, where --------
 * kernels/reduce.cu and kernels/math.cu ran on an H100 (2026-11-25, the suite's tests of these ops passing);
 * DEVKIT_CUDA_NEWOPS=0 unregisters them (DK_ERR_UNSUPPORTED with that hint). */

/* dk_attention_pos and dk_index_copy read their positions and ids on the
 * device with DEVKIT_CUDA_DEVPOS=1 (kernels/attention.cu's p.pos,
 * kernels/embedding.cu's dk_index_copy_scatter after the ids' device check):
 * no sync, so a decode step can be a CUDA graph; on with the graphs (the
 * default; a recording cannot hold a sync). With DEVKIT_CUDA_GRAPH=0 (and
 * for strided operands) the positions or ids come back to the host (the
 * call synchronizes), then each query row is a dk_attention over the keys
 * it sees and each id a dk_copy of one row. Alone, without the graphs, the
 * device-side form was no faster on an H200 (1B f16 decode 514-518 tok/s
 * vs 523-524). */
static int dk__cuda_devpos(void) {
  static int on = -1;
  if (on < 0) on = dk__cuda_switch("DEVKIT_CUDA_DEVPOS", "1", "0", 0) || dk__cuda_graph_on();
  return on;
}

static dk_status dk__cuda_read_i32(const dk_tensor *t, int32_t **out) {
  size_t n = dk_tensor_nbytes(t);
  if (!(*out = (int32_t *)malloc(n ? n : 4))) return dk__error(DK_ERR_OUT_OF_MEMORY, "no host memory for %zu bytes of ids", n);
  return n ? dk__cuda_download(t->st, t->offset, *out, n) : DK_OK;
}

static dk_status dk__cuda_attention_pos(const dk_call *c) {
  const dk_tensor *o = c->t[0];
  int64_t T = c->t[1]->shape[0], S = c->t[2]->shape[0], t, w = c->i[1];   /* w: dk_attention_pos_window's window */
  size_t orow = dk_tensor_nbytes(o) / (size_t)(T ? T : 1);
  int32_t *pos = NULL;
  dk_status s;
  /* a window on the device takes the _win kernels, which have not run on a GPU yet */
  if (dk__cuda_devpos() && (!w || dk__cuda_attn_window_on())) return dk__cuda_attend(c, dk__cuda_addr(c->t[4]), w);
  /* the positions come back to the host: a sync, which a capture cannot hold
   * (refused before the stream is touched, so the capture is dropped clean) */
  if (dk__cuda_ld(c->dev)->grec)
    return dk__op_error((dk_call *)c, DK_ERR_UNSUPPORTED, w ? "DEVKIT_CUDA_ATTN_WINDOW=1 reads them on the device" : "",
                        "a graph cannot record it on CUDA here: it reads its positions back to the host");
  s = dk__cuda_read_i32(c->t[4], &pos);
  for (t = 0; t < T && s == DK_OK; t++) {
    int64_t lim = pos[t] < 0 ? 0 : (int64_t)pos[t] + 1 < S ? (int64_t)pos[t] + 1 : S;
    if (lim == 0) {
      /* no key seen: zeros, as dk_attention gives a row that sees none */
      dk_cu_result r;
      uint64_t row = dk__cuda_addr(o) + (uint64_t)t * orow;
      if (orow % 4 || row % 4)
        s = dk__op_error((dk_call *)c, DK_ERR_UNSUPPORTED, "", "a negative position with an out row of %zu bytes (not whole "
                         "words) on CUDA", orow);
      else if ((r = dk__cu.api.MemsetD32Async(row, 0, orow / 4, dk__cuda_ld(c->dev)->stream)) != DK_CU_SUCCESS)
        s = dk__cuda_fail(c->dev.index, "dk_attention_pos (cuMemsetD32Async)", r);
      continue;
    }
    s = dk__cuda_attend_row(c, t, w > 0 && lim > w ? lim - w : 0, lim);
  }
  free(pos);
  return s;
}

static dk_status dk__cuda_index_copy(const dk_call *c) {
  const dk_tensor *dst = c->t[0], *src = c->t[1], *ids = c->t[2];
  int a = (int)c->i[0];
  int64_t n = dst->shape[a], m = ids->shape[0], k;
  int32_t *id = NULL;
  dk_status s;
  if (dk__cuda_devpos() && dk_tensor_is_contiguous(dst) && dk_tensor_is_contiguous(src)) return dk__cuda_index_select(c);
  s = dk__cuda_read_i32(ids, &id);
  for (k = 0; k < m && s == DK_OK; k++)
    if (id[k] < -n || id[k] >= n)
      s = dk__op_error((dk_call *)c, DK_ERR_INVALID, "ids count from 0, or from the end when negative (-1 is the last)",
                       "ids '%s' holds %d at position %lld, outside [-%lld, %lld) for axis %d of 'dst' '%s' (size %lld); "
                       "nothing was written", ids->name, (int)id[k], (long long)k, (long long)n, (long long)n, a, dst->name,
                       (long long)n);
  for (k = 0; k < m && s == DK_OK; k++) {
    int64_t row = id[k] < 0 ? id[k] + n : id[k];
    dk_tensor dt = *dst, st = *src;
    dk_call cp = *c;
    dt.shape[a] = st.shape[a] = 1;
    dt.offset += dk__elem_offset_bytes(dst->dtype, row * dst->stride[a]);
    st.offset += dk__elem_offset_bytes(src->dtype, k * src->stride[a]);
    cp.op = DK_OP_COPY;
    cp.t[0] = &dt; cp.t[1] = &st; cp.t[2] = NULL;
    s = dk__cuda_copy_op(&cp);
  }
  free(id);
  return s;
}

static int dk__cuda_reduce_code(dk_op op) {
  switch (op) {
  case DK_OP_REDUCE_SUM: return DK_KR_SUM;
  case DK_OP_REDUCE_MEAN: return DK_KR_MEAN;
  case DK_OP_REDUCE_MAX: return DK_KR_MAX;
  case DK_OP_REDUCE_MIN: return DK_KR_MIN;
  case DK_OP_ARGMAX_AXIS: return DK_KR_ARGMAX;
  case DK_OP_ARGMIN_AXIS: return DK_KR_ARGMIN;
  case DK_OP_SOFTMAX_AXIS: return DK_KR_SOFTMAX;
  case DK_OP_CUMSUM: return DK_KR_CUMSUM;
  case DK_OP_TOPK: return DK_KR_TOPK;
  default: return DK_KR_LOG_SOFTMAX;
  }
}

static dk_status dk__cuda_reduce(const dk_call *c) {
  int topk = c->op == DK_OP_TOPK;
  const dk_tensor *x = c->t[topk ? 2 : 1];
  dk__red_lay l;
  dk_kp_reduce p;
  int i;
  dk__red_layout(x, topk ? 1u << (x->ndim - 1) : (uint32_t)c->i[0], &l);
  if (l.nout == 0 || (l.nred == 0 && (c->op == DK_OP_SOFTMAX_AXIS || c->op == DK_OP_LOG_SOFTMAX || c->op == DK_OP_CUMSUM)))
    return DK_OK;
  memset(&p, 0, sizeof p);
  p.out = dk__cuda_addr(c->t[0]);
  p.x = dk__cuda_addr(x);
  if (topk) {
    p.out2 = dk__cuda_addr(c->t[1]);
    p.k = c->i[0];
    p.flags = c->i[1] ? 4 : 0;
  }
  if (c->op == DK_OP_CUMSUM) p.flags = (c->i[1] ? 1 : 0) | (c->i[2] ? 2 : 0);
  p.nout = l.nout;
  p.nred = l.nred;
  for (i = 0; i < 4; i++) p.ks[i] = p.rs[i] = 1;
  for (i = 0; i < l.nk; i++) { p.ks[4 - l.nk + i] = l.ks[i]; p.kx[4 - l.nk + i] = l.kx[i]; }
  for (i = 0; i < l.nr; i++) { p.rs[4 - l.nr + i] = l.rs[i]; p.rx[4 - l.nr + i] = l.rx[i]; }
  p.op = dk__cuda_reduce_code(c->op);
  p.last = (c->op == DK_OP_ARGMAX_AXIS || c->op == DK_OP_ARGMIN_AXIS) && c->i[2] ? 1 : 0;
  return dk__cuda_launch(c, dk__cuda_kid3(x->dtype, DK_CUDA_K_dk_reduce_f32, DK_CUDA_K_dk_reduce_f16, DK_CUDA_K_dk_reduce_bf16),
                         dk__cuda_grid(l.nout, 1), 1, 1, DK_ROW_THREADS, &p);
}

static int dk__cuda_math_code(dk_op op) {
  switch (op) {
  case DK_OP_SQRT: return DK_KM_SQRT;
  case DK_OP_RSQRT: return DK_KM_RSQRT;
  case DK_OP_LOG: return DK_KM_LOG;
  case DK_OP_ABS: return DK_KM_ABS;
  case DK_OP_NEG: return DK_KM_NEG;
  case DK_OP_ERF: return DK_KM_ERF;
  case DK_OP_CLAMP: return DK_KM_CLAMP;
  case DK_OP_POW_SCALAR: return DK_KM_POW_SCALAR;
  case DK_OP_POW: return DK_KM_POW;
  default: return DK_KM_WHERE;
  }
}

static dk_status dk__cuda_math(const dk_call *c) {
  const dk_tensor *o = c->t[0];
  int nin = c->op == DK_OP_WHERE ? 3 : c->op == DK_OP_POW ? 2 : 1, i, k;
  int64_t *str[3];
  uint64_t *addr[3];
  dk_kp_math p;
  memset(&p, 0, sizeof p);
  p.n = dk_tensor_numel(o);
  if (p.n == 0) return DK_OK;
  str[0] = p.as; str[1] = p.bs; str[2] = p.cs;
  addr[0] = &p.a; addr[1] = &p.b; addr[2] = &p.c;
  p.out = dk__cuda_addr(o);
  p.ndim = o->ndim;
  p.op = dk__cuda_math_code(c->op);
  p.f0 = c->f[0];
  p.f1 = c->f[1];
  p.flat = 1;
  for (k = 0; k < nin; k++) {
    const dk_tensor *t = c->t[1 + k];
    *addr[k] = dk__cuda_addr(t);
    if (dk_tensor_numel(t) != p.n) p.flat = 0;
    for (i = 0; i < o->ndim; i++) {
      int kk = i - (o->ndim - t->ndim);
      str[k][i] = (kk < 0 || t->shape[kk] == 1) ? 0 : t->stride[kk];
    }
  }
  for (i = 0; i < o->ndim; i++) p.shape[i] = o->shape[i];
  return dk__cuda_launch(c, dk__cuda_kid3(o->dtype, DK_CUDA_K_dk_math_f32, DK_CUDA_K_dk_math_f16, DK_CUDA_K_dk_math_bf16),
                         dk__cuda_grid(p.n, DK_EW_THREADS), 1, 1, DK_EW_THREADS, &p);
}

/* Every op enters here: the context current, then the op's own function. */
typedef dk_status (*dk__cuda_op_fn)(const dk_call *c);
static dk__cuda_op_fn dk__cuda_ops[DK_OP_COUNT];

static dk_status dk__cuda_op(const dk_call *c) {
  dk_status s = dk__cuda_enter(c->dev);
  if (s != DK_OK) return s;
  return dk__cuda_ops[c->op](c);
}

/* ==== dk_profile: events around each op on the device's stream ============== */

#define DK_CUDA_PROF_MAX 65536   /* marks between two syncs; past them ops go untimed */

static int dk__cuda_prof_mark(dk_device d) {
  dk__cuda_dev *ld = dk__cuda_ld(d);
  if (!ld || !dk__cu.api.EventElapsedTime) return -2;   /* the core times the op by the host clock */
  if (dk__cu.api.CtxSetCurrent(dk__cu.phys[ld->physical].ctx) != DK_CU_SUCCESS) return -1;
  if (ld->prof_n == ld->prof_cap) {
    const int cap = ld->prof_cap ? 2 * ld->prof_cap : 512;
    dk_cu_event *ev;
    if (cap > DK_CUDA_PROF_MAX || !(ev = (dk_cu_event *)realloc(ld->prof_ev, (size_t)cap * sizeof *ev))) return -1;
    ld->prof_ev = ev;
    while (ld->prof_cap < cap && dk__cu.api.EventCreate(&ev[ld->prof_cap], 0) == DK_CU_SUCCESS) ld->prof_cap++;
    if (ld->prof_n == ld->prof_cap) return -1;
  }
  if (dk__cu.api.EventRecord(ld->prof_ev[ld->prof_n], ld->stream) != DK_CU_SUCCESS) return -1;
  return ld->prof_n++;
}

static double dk__cuda_prof_elapsed(dk_device d, int a, int b) {
  dk__cuda_dev *ld = dk__cuda_ld(d);
  float ms = 0;
  if (!ld || a < 0 || b < 0 || a >= ld->prof_n || b >= ld->prof_n ||
      dk__cu.api.EventElapsedTime(&ms, ld->prof_ev[a], ld->prof_ev[b]) != DK_CU_SUCCESS)
    return -1.0;
  return 1e-3 * (double)ms;
}

static void dk__cuda_prof_reset(dk_device d) {
  dk__cuda_dev *ld = dk__cuda_ld(d);
  if (ld) ld->prof_n = 0;
}

/* ==== the table ============================================================== */

/* dk_backend_note(DK_CUDA) with GPUs present: which GEMM prompts run on */
static const char *dk__cuda_active_note(void) {
  static char note[sizeof dk__cublas.note + 96];
  if (!dk__cuda_prompt_tc_on() || strncmp(dk__cublas.note, "prompt GEMMs: devkit's", 22))
    return dk__cublas.note;
  snprintf(note, sizeof note, "%s; f32 x rounded to f16 for the tensor cores (DEVKIT_CUDA_PROMPT_TC=1)", dk__cublas.note);
  return note;
}

static dk_backend_impl dk__cuda_impl_table;

static const dk_backend_impl *dk__cuda_backend(void) {
  dk_backend_impl *b = &dk__cuda_impl_table;
  int op;
  if (b->probe) return b;
  b->kind = DK_CUDA;
  b->probe = dk__cuda_probe;
  b->active_note = dk__cuda_active_note;
  b->properties = dk__cuda_properties;
  b->open_device = dk__cuda_open;
  b->close_all = dk__cuda_close_all;
  b->alloc = dk__cuda_alloc;
  b->release = dk__cuda_release;
  b->upload = dk__cuda_upload;
  b->download = dk__cuda_download;
  b->copy = dk__cuda_copy;
  b->sync = dk__cuda_sync;
  b->prof_mark = dk__cuda_prof_mark;
  b->prof_elapsed = dk__cuda_prof_elapsed;
  b->prof_reset = dk__cuda_prof_reset;
  b->graph_begin = dk__cuda_graph_begin;
  b->graph_end = dk__cuda_graph_end;
  b->graph_replay = dk__cuda_graph_replay;
  b->graph_free = dk__cuda_graph_free;
  for (op = DK_OP_ADD; op <= DK_OP_DIV; op++) dk__cuda_ops[op] = dk__cuda_binary;
  for (op = DK_OP_SCALE; op <= DK_OP_SWIGLU; op++) dk__cuda_ops[op] = dk__cuda_unary;
  dk__cuda_ops[DK_OP_RMSNORM] = dk__cuda_ops[DK_OP_LAYERNORM] = dk__cuda_norm;
  dk__cuda_ops[DK_OP_SOFTMAX] = dk__cuda_ops[DK_OP_SOFTMAX_MASKED] = dk__cuda_softmax;
  dk__cuda_ops[DK_OP_MATMUL] = dk__cuda_matmul;
  dk__cuda_ops[DK_OP_LINEAR] = dk__cuda_linear;
  dk__cuda_ops[DK_OP_EMBEDDING] = dk__cuda_embedding;
  dk__cuda_ops[DK_OP_ROPE] = dk__cuda_rope;
  dk__cuda_ops[DK_OP_CONCAT] = dk__cuda_concat;
  dk__cuda_ops[DK_OP_COPY] = dk__cuda_copy_op;
  dk__cuda_ops[DK_OP_TRANSPOSE] = dk__cuda_transpose;
  dk__cuda_ops[DK_OP_ARGMAX] = dk__cuda_ops[DK_OP_SAMPLE] = dk__cuda_pick;
  dk__cuda_ops[DK_OP_ATTENTION] = dk__cuda_attention;
  dk__cuda_ops[DK_OP_ATTENTION_WINDOW] = dk__cuda_attention_window;
  dk__cuda_ops[DK_OP_RMSNORM_LINEAR] = dk__cuda_ops[DK_OP_SWIGLU_LINEAR] = dk__cuda_fused_linear;
  {
    const char *e = getenv("DEVKIT_CUDA_NEWOPS");
    for (op = DK_OP_REDUCE_SUM; op <= DK_OP_INDEX_SELECT; op++) {
      if (op == DK_OP_INDEX_SELECT) {
        /* kernels/embedding.cu's gather ran clean on an H200 (2026-11-26:
         * ops_index_select, ops_slice, bert_*, compute-sanitizer memcheck);
         * DEVKIT_CUDA_GATHER=0 refuses it */
        const char *g = getenv("DEVKIT_CUDA_GATHER");
        if (!(g && g[0] == '0')) {
          dk__cuda_ops[op] = dk__cuda_index_select;
        } else {
          dk__cuda_ops[op] = NULL;
          b->missing[op] = "dk_index_select's CUDA kernel is switched off by DEVKIT_CUDA_GATHER=0: unset it, or run the "
                           "op on cpu or vulkan";
        }
      } else if (!(e && e[0] == '0')) {
        dk__cuda_ops[op] = op == DK_OP_REDUCE_SUM || op == DK_OP_REDUCE_MEAN || op == DK_OP_REDUCE_MAX ||
                                   op == DK_OP_REDUCE_MIN || op == DK_OP_ARGMAX_AXIS || op == DK_OP_ARGMIN_AXIS ||
                                   op == DK_OP_SOFTMAX_AXIS || op == DK_OP_LOG_SOFTMAX || op == DK_OP_CUMSUM ||
                                   op == DK_OP_TOPK
                               ? dk__cuda_reduce
                               : dk__cuda_math;
      } else {
        dk__cuda_ops[op] = NULL;
        b->missing[op] = "its CUDA kernels (kernels/reduce.cu, kernels/math.cu) are switched off by DEVKIT_CUDA_NEWOPS=0: "
                         "unset it, or run the op on cpu or vulkan";
      }
    }
  }
  dk__cuda_ops[DK_OP_INDEX_COPY] = dk__cuda_index_copy;
  dk__cuda_ops[DK_OP_ATTENTION_POS] = dk__cuda_ops[DK_OP_ATTENTION_POS_WINDOW] = dk__cuda_attention_pos;
  for (op = 0; op < DK_OP_COUNT; op++) {
    b->ops[op] = dk__cuda_ops[op] ? dk__cuda_op : NULL;
    b->dtypes[op] = DK_FLOATS;
    b->wdtypes[op] = DK_FLOATS;
  }
  b->wdtypes[DK_OP_LINEAR] = b->wdtypes[DK_OP_EMBEDDING] = DK_FLOATS | DK_QUANTS;
  {
    /* kernels/quants.cuh ran clean on an H100 (2026-11-24): on unless
     * DEVKIT_CUDA_KQUANTS=0 asks the backend to refuse these types; its
     * iq4_nl/iq4_xs/iq3_xxs/iq3_s/iq2_xxs/iq2_xs/iq2_s values have not run
     * on a GPU yet: off unless DEVKIT_CUDA_IQ=1 (the session that runs them
     * flips this) */
    const char *e = getenv("DEVKIT_CUDA_KQUANTS"), *e4 = getenv("DEVKIT_CUDA_IQ");
    const unsigned iq = DK_BIT(DK_IQ4_NL) | DK_BIT(DK_IQ4_XS) | DK_BIT(DK_IQ3_XXS) | DK_BIT(DK_IQ3_S) |
                        DK_BIT(DK_IQ2_XXS) | DK_BIT(DK_IQ2_XS) | DK_BIT(DK_IQ2_S);
    if (!(e && e[0] == '0'))
      b->wdtypes[DK_OP_LINEAR] = b->wdtypes[DK_OP_EMBEDDING] |= DK_QUANTS_MORE & (e4 && e4[0] == '1' ? ~0u : ~iq);
    b->wdtypes[DK_OP_RMSNORM_LINEAR] = b->wdtypes[DK_OP_SWIGLU_LINEAR] = b->wdtypes[DK_OP_LINEAR];
  }
  b->dtypes[DK_OP_CONCAT] = b->dtypes[DK_OP_TRANSPOSE] = DK_FLOATS | DK_BIT(DK_I32);
  b->dtypes[DK_OP_COPY] = DK_FLOATS | DK_BIT(DK_I32) | DK_QUANTS | DK_QUANTS_MORE;   /* same-dtype block copies are byte copies */
  return b;
}

#endif /* DK_BACKEND_CUDA_H */
