/* backends/vulkan.h — the Vulkan compute backend.
 *
 * Included by devkit.h at the end of its implementation part. No Vulkan SDK
 * or headers are needed to build it: the API's types come from vk_api.h, and
 * the loader (libvulkan.so.1) is dlopen'ed at run time, so a program never
 * links it and runs where it is missing (the backend then has no devices and
 * says why).
 *
 * DESIGN
 *   Devices. Every physical device with a compute queue, Vulkan >= 1.2 and
 *   16-bit storage is a physical device here. Each logical device
 *   (DEVKIT_LOGICAL_DEVICES) gets its own VkDevice, queue, memory, pipelines
 *   and command buffers, so two logical devices on one GPU are as separate
 *   as two GPUs; between them data goes through the host.
 *   Memory. Tensors are sub-allocated from 64 MiB blocks (one VkBuffer per
 *   block; large tensors get their own), aligned to 256 bytes. A view is an
 *   offset into its parent's block. Uploads go through a host-visible staging
 *   ring and are recorded in order with the ops; where device memory is also
 *   host-visible and coherent (lavapipe, integrated GPUs) and nothing in
 *   flight touches the tensor, upload and download are a memcpy.
 *   Execution. Ops are recorded into the device's current command buffer and
 *   submitted at a sync point (download, dk_sync) or after DK_VK_BATCH
 *   commands; frames rotate through a small ring, each with its fence. A
 *   barrier is recorded only where a command touches bytes that an earlier
 *   one wrote (or writes bytes an earlier one read) since the last barrier.
 *   Descriptors are pushed (VK_KHR_push_descriptor) or, without it, taken
 *   from a per-frame pool. Freed tensors whose memory is still in flight are
 *   released when the frame's fence signals.
 *   Shaders. One SPIR-V module per op family and compile-time variant
 *   (shaders/generated/dk_shaders.h); dtypes, op codes and workgroup sizes
 *   are specialization constants, so the driver folds every branch on them,
 *   and pipelines are cached per (module, constants), built on first use.
 *   Linear has two strategies. GPUs: decode-sized x (up to 8 rows) splits K
 *   across a subgroup, prompts use the tiled shared-memory matmul. CPU
 *   devices (each buffer access is paid per lane and barriers switch SIMD
 *   slices): decode takes a row of w per lane with 16-byte loads; prompts
 *   take gemm_rows.comp, 16 rows of x by 8 rows of w in registers per
 *   invocation, w decoded once for all 16 rows, no shared memory.
 *   Large tensors. A binding is limited to maxStorageBufferRange (128 MiB on
 *   lavapipe): linear and embedding bind their weight/table and output in
 *   windows of whole rows; row ops (norms, softmax, rope, argmax, sample),
 *   same-shape elementwise ops and conversions run in row ranges. A tensor
 *   larger than maxMemoryAllocationSize is stored as segments overlapping by
 *   DK_VK_SEG_OVERLAP bytes, so any row up to that size lies whole in one
 *   segment; uploads write every copy of the overlapped bytes. Such tensors
 *   are transferred, copied, and read as linear's weight and embedding's
 *   table; other ops refuse them with DK_ERR_UNSUPPORTED.
 *   Device-side errors. dk_embedding's out-of-range ids are found by the
 *   shader, written to a small host-visible status buffer and reported by the
 *   next call that synchronizes (download, dk_sync).
 *
 * ENVIRONMENT
 *   DEVKIT_VULKAN_VALIDATION=1   Khronos validation layer + synchronization
 *                                validation; every message is counted
 *                                (dk_validation_messages) and fails the op
 *                                that caused it where it can be told.
 *   DEVKIT_VULKAN_DISABLE=a,b    turn device features off to exercise the
 *                                fallbacks: push_descriptor, subgroups,
 *                                direct (host-mapped transfers), robust.
 *   DEVKIT_VULKAN_MATVEC=rows|split   pick the linear strategy (default:
 *                                rows on CPU devices, split on GPUs).
 *   DEVKIT_VULKAN_GEMM=0         linear with more than 8 rows of x through
 *                                the row kernel, 8 rows a dispatch, as before
 *                                gemm_rows.comp (CPU devices) and matmul_qk
 *                                (GPUs, the formats beyond q8_0/q4_0), for
 *                                comparisons.
 *   DEVKIT_VULKAN_WG_ROWS=N      workgroup of the row reductions (power of 2;
 *                                default 256, or the subgroup size on CPUs).
 *   DEVKIT_VULKAN_FUSED=0|1      dk_rmsnorm_linear / dk_swiglu_linear as two
 *                                dispatches (0) or one, matvec_vec.comp
 *                                folding the first op into the product (1;
 *                                the default on GPUs, not on CPU devices).
 *   DEVKIT_VULKAN_VECQ=1         q8_0/q4_0 decode on matvec_vec.comp too (not
 *                                yet timed on a GPU, so off by default).
 *   DEVKIT_VULKAN_COOPMAT=1|emu  prompt linear (more than 8 rows of x) on
 *                                cooperative matrices (gemm_coop.comp, where
 *                                the device has VK_NV_cooperative_matrix;
 *                                x and w in f16, f32 sums; not yet run on a
 *                                GPU, so off by default); =emu its emulated
 *                                variant on any device (the tests).
 *   DEVKIT_VULKAN_FLASH=1|emu    prompt attention (more than one query row,
 *                                heads of 64, an f16 cache) on cooperative
 *                                matrices (attn_flash.comp, where the device
 *                                has them; q and the probabilities in f16,
 *                                f32 sums; not yet run on a GPU, so off by
 *                                default); =emu its emulated variant on any
 *                                device (the tests).
 *   DEVKIT_VULKAN_INT8_DOT=1     quantized decode linear rounds x to int8
 *                                per block and uses integer dot products
 *                                (about 0.4% error per value of x).
 *   DEVKIT_VULKAN_MAX_BINDING=N  pretend maxStorageBufferRange is N bytes.
 *   DEVKIT_VULKAN_MAX_ALLOC=N    pretend maxMemoryAllocationSize is N bytes.
 *   DEVKIT_VULKAN_BATCH=N        commands per submission (default 256).
 *   On lavapipe most of an op's cost is llvmpipe waking its threads (about
 *   30 us per dispatch on 2 cores); LP_NUM_THREADS=0 runs dispatches on the
 *   queue thread (about 2.5 us each), which suits small models.
 */
#ifndef DK_BACKEND_VULKAN_H
#define DK_BACKEND_VULKAN_H

#include <sys/stat.h>
#include "vk_api.h"
#include "../shaders/generated/dk_shaders.h"

#define DK_VK_FRAMES 4
#define DK_VK_MAX_BIND 5  /* storage buffer bindings (attention's positions are the fifth) */
#define DK_VK_VIEWS 4096  /* texel views a block keeps at most (dk_vk_block_view) */
#define DK_VK_TEX 3      /* texel bindings after them: w and x of the row kernels (dk_vk_block_view), the codebooks */
#define DK_VK_CHECKS 64                     /* embedding checks per frame */
#define DK_VK_SPANS 64                      /* hazard list entries before a forced barrier */
#define DK_VK_ALIGN 256
#define DK_VK_BLOCK ((VkDeviceSize)64 << 20)
#define DK_VK_RING ((VkDeviceSize)32 << 20)
#define DK_VK_SEG_OVERLAP ((VkDeviceSize)16 << 20)
#define DK_VK_GROUPS_CAP 4096               /* grid-stride shaders need no more */

/* ==== function tables ===================================================== */

#define DK_VK_INSTANCE_FNS(X)                                                                   \
  X(DestroyInstance) X(EnumeratePhysicalDevices) X(GetPhysicalDeviceProperties)                 \
  X(GetPhysicalDeviceProperties2) X(GetPhysicalDeviceFeatures2)                                 \
  X(GetPhysicalDeviceQueueFamilyProperties) X(GetPhysicalDeviceMemoryProperties)                \
  X(GetPhysicalDeviceMemoryProperties2) X(EnumerateDeviceExtensionProperties) X(CreateDevice)   \
  X(GetDeviceProcAddr)

#define DK_VK_DEVICE_FNS(X)                                                                     \
  X(DestroyDevice) X(GetDeviceQueue) X(AllocateMemory) X(FreeMemory) X(MapMemory)               \
  X(UnmapMemory) X(CreateBuffer) X(DestroyBuffer) X(GetBufferMemoryRequirements)                \
  X(BindBufferMemory) X(CreateShaderModule) X(DestroyShaderModule)                              \
  X(CreateDescriptorSetLayout) X(DestroyDescriptorSetLayout) X(CreatePipelineLayout)            \
  X(DestroyPipelineLayout) X(CreateComputePipelines) X(DestroyPipeline) X(CreateCommandPool)    \
  X(DestroyCommandPool) X(AllocateCommandBuffers) X(FreeCommandBuffers) X(BeginCommandBuffer) X(EndCommandBuffer)     \
  X(ResetCommandBuffer) X(CmdBindPipeline) X(CmdPushConstants) X(CmdDispatch) X(CmdExecuteCommands)                   \
  X(CmdPipelineBarrier) X(CmdCopyBuffer) X(QueueSubmit) X(DeviceWaitIdle) X(CreateFence)        \
  X(DestroyFence) X(ResetFences) X(WaitForFences) X(GetFenceStatus) X(CreateDescriptorPool)     \
  X(DestroyDescriptorPool) X(ResetDescriptorPool) X(AllocateDescriptorSets)                     \
  X(UpdateDescriptorSets) X(CmdBindDescriptorSets) X(CreatePipelineCache) X(DestroyPipelineCache)  \
  X(GetPipelineCacheData) X(CreateQueryPool) X(DestroyQueryPool) X(GetQueryPoolResults)             \
  X(CmdResetQueryPool) X(CmdWriteTimestamp) X(CreateBufferView) X(DestroyBufferView)

#define DK_VK_DECL(n) PFN_vk##n n;
typedef struct { DK_VK_INSTANCE_FNS(DK_VK_DECL) } dk_vk_ifns;
typedef struct {
  DK_VK_DEVICE_FNS(DK_VK_DECL)
  PFN_vkCmdPushDescriptorSetKHR CmdPushDescriptorSetKHR;  /* optional */
} dk_vk_dfns;
#undef DK_VK_DECL

/* ==== types =============================================================== */

/* One VkDeviceMemory with one VkBuffer over all of it; a free list of ranges. */
typedef struct { VkDeviceSize off, range; VkBufferView view; } dk_vk_view;

typedef struct dk_vk_block {
  VkDeviceMemory mem;
  VkBuffer buf;
  VkDeviceSize size, used;
  char *map;                      /* host pointer where the memory is mapped */
  int dedicated;
  int nfree, capfree;
  VkDeviceSize *free_off, *free_size;   /* sorted by offset, coalesced */
  dk_vk_view *views;              /* texel views of byte ranges of it (dk_vk_block_view) */
  int nviews, capviews;
  struct dk_vk_block *next;
} dk_vk_block;

/* What a dk_storage's ptr points at. Segmented tensors (larger than one
 * allocation may be) have nseg > 1 dedicated blocks; segment i covers bytes
 * [i*seg_stride, i*seg_stride + its size). */
typedef struct dk_vk_mem {
  int dev;
  dk_vk_block *block;             /* nseg == 1 */
  VkDeviceSize off, size;
  int nseg;
  VkDeviceSize seg_stride;
  dk_vk_block **seg;
  uint64_t last_use;              /* serial of the last frame that touched it */
  dk_storage *st;
  struct dk_vk_mem *prev, *next;  /* the device's live records */
} dk_vk_mem;

/* A byte range of one buffer, for hazard tracking. */
typedef struct { VkBuffer buf; VkDeviceSize a, b; } dk_vk_span;

typedef struct {
  char ids[DK_NAME_LEN], table[DK_NAME_LEN], site[DK_SITE_LEN];
  long long rows, pos_base;
  int axis;                       /* dk_index_select's or dk_index_copy's axis; -1 for dk_embedding */
  dk_op op;
  uint32_t word;                  /* its 16-byte status slot: frame * DK_VK_CHECKS + index (a graph's: DK_VK_FRAMES * ..) */
} dk_vk_check;

typedef struct {
  VkCommandBuffer cmd;
  VkFence fence;
  VkDescriptorPool dpool;         /* without push descriptors */
  uint64_t serial;
  int state;                      /* 0 free, 1 recording, 2 submitted */
  VkDeviceSize ring_end;
  int ndispatch, nchecks;
  VkPipeline bound;
  dk_vk_check checks[DK_VK_CHECKS];
} dk_vk_frame;

typedef struct { dk_vk_block *block; VkDeviceSize off, size; uint64_t serial; } dk_vk_deferred;

/* Every shader's dtype and op choices are specialization constants 0..5
 * and 8..10 (9, 10: matvec_vec.comp's folded op and its eps): the driver
 * folds the branches on them when it builds the pipeline.
 * Constant 7 is the workgroup size of the row-reduction shaders, and 6 says
 * that such a workgroup is exactly one subgroup (barriers become subgroup
 * barriers); dk_vk_run sets those two for every call. */
#define DK_VK_SPEC 11
typedef struct { int spv; uint32_t spec[DK_VK_SPEC]; VkPipeline pipe; } dk_vk_pipe;

typedef struct {
  VkPhysicalDevice pd;
  VkPhysicalDeviceProperties props;
  VkPhysicalDeviceMemoryProperties mem;
  char driver[128];
  uint8_t uuid[16];
  uint32_t qfam;
  uint32_t ts_bits;               /* the queue's timestampValidBits (0: no timestamps) */
  int has_push, has_budget, has_16bit, has_sg, has_robust, has_int_dot, has_f16;
  uint32_t subgroup_size;
  /* gemm_coop.comp's TN where the device has VK_NV_cooperative_matrix with
   * f16 x f16 + f32 -> f32 matrices of 16 x TN x 16 on subgroups of 32, the
   * shaderFloat16 and vulkanMemoryModel features (16, else 8); 0: none */
  uint32_t coop_tn;
  VkDeviceSize max_range, max_alloc, align;
  VkDeviceSize held;              /* bytes of blocks devkit holds, all logical devices (atomic) */
} dk_vk_phys;

typedef struct {
  int open;
  int logical, physical, slot;
  dk_vk_phys *ph;
  VkDevice dev;
  VkQueue queue;
  dk_vk_dfns fn;
  int push, sg, direct;
  int cpu_threads;                /* CPU devices: the threads that run a dispatch (LP_NUM_THREADS or the CPUs) */
  int rows_force;                 /* DEVKIT_VULKAN_ROWS: matvec_rows' rows a lane, 1-8; 0: dk_vk_rows_per_lane picks */
  int rows_mv;                    /* decode linear: a row per lane (CPU devices) or K split across a subgroup */
  int tex;                        /* the row kernels read w and x through texel views (bindings DK_VK_MAX_BIND..) */
  int gemm_rows;                  /* linear with more than 8 rows of x: gemm_rows.comp (CPU devices) */
  int gemm_off;                   /* DEVKIT_VULKAN_GEMM=0: such products through the row kernel everywhere */
  int vec_mv;                     /* decode linear with float weights: matvec_vec.comp (GPUs; DEVKIT_VULKAN_MATVEC=split: not) */
  int fused;                      /* matvec_vec.comp folds dk_rmsnorm/dk_swiglu into the product (GPUs; DEVKIT_VULKAN_FUSED) */
  int vec_q;                      /* DEVKIT_VULKAN_VECQ=1: matvec_vec.comp takes q8_0/q4_0 weights too */
  int int8_dot;                   /* quantized decode linear through int8 dot products (opt-in) */
  int coop_spv;                   /* DEVKIT_VULKAN_COOPMAT: prompt linear on this gemm_coop.comp variant (-1: off) */
  int flash_spv;                  /* DEVKIT_VULKAN_FLASH: prompt attention on this attn_flash.comp variant (-1: off) */
  uint32_t wg_rows;               /* workgroup of the row reductions (norm, softmax, argmax, sample) */
  uint32_t one_sg;                /* that workgroup is one subgroup */
  uint32_t mt_dev, mt_host;       /* memory types: tensors, staging */
  int dev_mappable;
  VkDeviceSize block_size, max_range, max_alloc;
  dk_vk_block *blocks;
  dk_vk_mem *live;
  /* pipelines, one per (shader, specialization constants) */
  VkDescriptorSetLayout dsl;
  VkPipelineLayout layout;
  dk_vk_pipe *pipes;
  int npipes, cappipes;
  VkPipelineCache pcache;         /* loaded from / saved to dk_vk_cache_path's file (VK_NULL_HANDLE: off) */
  int pcache_new;                 /* pipelines made since: save at close */
  /* execution */
  VkCommandPool pool;
  dk_vk_frame frames[DK_VK_FRAMES + 1];   /* the last: a graph being recorded (dk_vk_graph) */
  int rec;                        /* frame being recorded, or -1 */
  int last;                       /* frame most recently begun */
  uint64_t next_serial, done;
  dk_vk_span rd[DK_VK_SPANS], wr[DK_VK_SPANS];
  int nrd, nwr;
  int full_barrier;               /* the next command waits for everything before it (after a graph) */
  struct dk_vk_graph *grec;       /* the graph being recorded, or NULL */
  uint64_t gcheck;                /* serial of the last replay that uses the graphs' status words */
  int batch;
  int hold;                       /* > 0: a full batch waits (one ring chunk stays in one frame) */
  /* staging ring, status buffer, a tiny buffer for empty bindings */
  dk_vk_block *ring;
  uint64_t ring_head, ring_tail;
  dk_vk_block *status, *dummy;
  dk_vk_block *grids;              /* the iq3 and iq2 codebooks, binding 4 of quants.glsl's shaders (dk_vk_run) */
  VkBufferView grid_view;          /* and as texels, binding 7 of the TEXW ones (shaders/texel.glsl) */
  /* frees waiting for a fence */
  dk_vk_deferred *defer;
  int ndefer, capdefer;
  /* the first device-side error seen, reported at the next sync */
  dk_status pending;
  char pending_msg[1024];
  int lost;
  /* device scratch (attention's split records; the first op's rows of
   * dk_rmsnorm_linear and dk_swiglu_linear), bound through a tensor header
   * so hazards are tracked like any operand's */
  dk_storage part_st;
  dk_tensor part_t;
  /* dk_profile's timestamps: a query pool made on first use, reset by the
   * command buffer that writes the first mark after each sync */
  VkQueryPool prof_pool;
  int prof_n, prof_failed;
} dk_vk_device;

static struct {
  void *lib, *layer_pin;
  PFN_vkGetInstanceProcAddr gipa;
  PFN_vkCreateInstance CreateInstance;
  PFN_vkEnumerateInstanceLayerProperties EnumerateInstanceLayerProperties;
  PFN_vkEnumerateInstanceExtensionProperties EnumerateInstanceExtensionProperties;
  PFN_vkEnumerateInstanceVersion EnumerateInstanceVersion;
  PFN_vkDestroyDebugUtilsMessengerEXT DestroyDebugUtilsMessengerEXT;
  dk_vk_ifns fn;
  VkInstance inst;
  VkDebugUtilsMessengerEXT messenger;
  int validation;
  int nphys;
  dk_vk_phys phys[DK_MAX_DEVICES];
  dk_vk_device *dev[DK_MAX_DEVICES];
} dk_vk;

/* validation messages seen by this thread: an op compares before and after */
static DK_TLS uint64_t dk_vk_tls_msgs;

/* ==== small helpers ======================================================= */

static const char *dk_vk_result(VkResult r) {
  switch (r) {
  case VK_SUCCESS: return "VK_SUCCESS";
  case VK_NOT_READY: return "VK_NOT_READY";
  case VK_TIMEOUT: return "VK_TIMEOUT";
  case VK_INCOMPLETE: return "VK_INCOMPLETE";
  case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
  case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
  case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
  case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
  case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
  case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
  case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
  case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
  case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
  case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
  case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
  default: return "VkResult error";
  }
}

static dk_device dk_vk_devid(int logical) {
  dk_device d;
  d.backend = DK_VULKAN;
  d.index = logical;
  return d;
}

/* a driver call failed: lost devices stay lost */
static dk_status dk_vk_fail(dk_vk_device *d, VkResult r, const char *what) {
  if (r == VK_ERROR_DEVICE_LOST) d->lost = 1;
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
    return dk__error(DK_ERR_OUT_OF_MEMORY, "%s on %s: %s", what, dk_device_name(dk_vk_devid(d->logical)), dk_vk_result(r));
  return dk__error(DK_ERR_BACKEND, "%s on %s failed: %s (%d)", what, dk_device_name(dk_vk_devid(d->logical)),
                   dk_vk_result(r), (int)r);
}

static VkDeviceSize dk_vk_round(VkDeviceSize x, VkDeviceSize a) { return (x + a - 1) / a * a; }

static unsigned long long dk_vk_env_size(const char *name) {
  const char *e = getenv(name);
  char *end;
  unsigned long long v;
  if (!e || !*e) return 0;
  v = strtoull(e, &end, 10);
  if (*end == 'k' || *end == 'K') v <<= 10;
  else if (*end == 'm' || *end == 'M') v <<= 20;
  else if (*end == 'g' || *end == 'G') v <<= 30;
  return v;
}

static int dk_vk_disabled(const char *feature) {
  const char *e = getenv("DEVKIT_VULKAN_DISABLE");
  size_t n = strlen(feature);
  const char *p;
  if (!e) return 0;
  for (p = strstr(e, feature); p; p = strstr(p + 1, feature))
    if ((p == e || p[-1] == ',' || p[-1] == ' ') && (p[n] == 0 || p[n] == ',' || p[n] == ' ')) return 1;
  return 0;
}

/* ==== validation messages ================================================= */

static VKAPI_ATTR VkBool32 VKAPI_CALL dk_vk_debug_cb(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                                    VkDebugUtilsMessageTypeFlagsEXT type,
                                                    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
  (void)user;
  /* the loader's own chatter (GENERAL warnings about other drivers' manifests)
   * is not a finding about our use of the API */
  if (!(sev & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)))
    return VK_FALSE;
  if (!(type & (VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT)) &&
      !(sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT))
    return VK_FALSE;
  dk__validation_note(data && data->pMessage ? data->pMessage : "(no text)");
  dk_vk_tls_msgs++;
  return VK_FALSE;
}

/* ==== probe: loader, instance, physical devices =========================== */

/* Under AddressSanitizer and ThreadSanitizer, the drivers and layers the
 * loader maps are pinned (RTLD_NODELETE): memory they keep in their own
 * globals stays reachable after vkDestroyInstance unloads them (lavapipe
 * keeps such an array, which LeakSanitizer would otherwise report from
 * "<unknown module>"), and TSan's called_from_lib suppressions refuse
 * libraries that go away. Release builds leave the loader's unloading alone. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DK_VK_PIN_DRIVERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DK_VK_PIN_DRIVERS 1
#endif
#endif

#ifdef DK_VK_PIN_DRIVERS
static char *dk_vk_maps(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  char *buf = NULL;
  size_t len = 0, cap = 0, k;
  if (!f) return NULL;
  for (;;) {
    if (len + 4096 + 1 > cap) {
      char *nb = (char *)realloc(buf, cap = cap * 2 + 8192);
      if (!nb) break;
      buf = nb;
    }
    k = fread(buf + len, 1, 4096, f);
    if (!k) break;
    len += k;
  }
  fclose(f);
  if (buf) buf[len] = 0;
  return buf;
}
static void dk_vk_pin_new_objects(const char *before) {
  char *now = dk_vk_maps(), *line;
  if (!now) return;
  for (line = now; *line;) {
    char *end = strchr(line, '\n'), *path;
    if (end) *end = 0;
    path = strchr(line, '/');
    if (path && strstr(path, ".so") && !(before && strstr(before, path))) dlopen(path, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    if (!end) break;
    line = end + 1;
  }
  free(now);
}
#endif


static int dk_vk_has_ext(const VkExtensionProperties *e, uint32_t n, const char *name) {
  uint32_t i;
  for (i = 0; i < n; i++)
    if (!strcmp(e[i].extensionName, name)) return 1;
  return 0;
}

static void dk_vk_unload(void) {
  if (dk_vk.inst) {
    if (dk_vk.messenger && dk_vk.DestroyDebugUtilsMessengerEXT)
      dk_vk.DestroyDebugUtilsMessengerEXT(dk_vk.inst, dk_vk.messenger, NULL);
    dk_vk.fn.DestroyInstance(dk_vk.inst, NULL);
  }
  if (dk_vk.lib) dlclose(dk_vk.lib);
  /* the pinned validation layer stays: RTLD_NODELETE, on purpose */
  {
    void *pin = dk_vk.layer_pin;
    memset(&dk_vk, 0, sizeof dk_vk);
    dk_vk.layer_pin = pin;
  }
}

static dk_status dk_vk_create_instance(char *note, size_t note_len) {
  VkApplicationInfo app;
  VkInstanceCreateInfo ci;
  VkDebugUtilsMessengerCreateInfoEXT mi;
  VkValidationFeaturesEXT vf;
  VkValidationFeatureEnableEXT vfe[1];
  const char *layers[1], *exts[4];
  uint32_t nl = 0, ne = 0, i, api = VK_API_VERSION_1_0;
  const char *ev = getenv("DEVKIT_VULKAN_VALIDATION");
  int want_val = ev && ev[0] == '1', have_layer = 0, have_vf = 0, have_du = 0;
  VkResult r;

  if (dk_vk.EnumerateInstanceVersion) dk_vk.EnumerateInstanceVersion(&api);
  if (VK_API_VERSION_MINOR(api) < 2 && VK_API_VERSION_MAJOR(api) <= 1) {
    snprintf(note, note_len, "the Vulkan loader is version %u.%u; devkit needs 1.2", VK_API_VERSION_MAJOR(api),
             VK_API_VERSION_MINOR(api));
    return DK_ERR_NO_DEVICE;
  }
  if (want_val) {
    uint32_t n = 0;
    VkLayerProperties *lp;
    /* keep the layer mapped after the loader's dlclose, so that leak
     * suppressions can name it (TOOLCHAIN.md) */
    if (!dk_vk.layer_pin) dk_vk.layer_pin = dlopen("libVkLayer_khronos_validation.so", RTLD_NOW | RTLD_NODELETE);
    dk_vk.EnumerateInstanceLayerProperties(&n, NULL);
    lp = (VkLayerProperties *)calloc(n ? n : 1, sizeof *lp);
    if (lp && dk_vk.EnumerateInstanceLayerProperties(&n, lp) == VK_SUCCESS)
      for (i = 0; i < n; i++) have_layer |= !strcmp(lp[i].layerName, "VK_LAYER_KHRONOS_validation");
    free(lp);
    if (have_layer) {
      VkExtensionProperties *ep;
      n = 0;
      dk_vk.EnumerateInstanceExtensionProperties("VK_LAYER_KHRONOS_validation", &n, NULL);
      ep = (VkExtensionProperties *)calloc(n ? n : 1, sizeof *ep);
      if (ep && dk_vk.EnumerateInstanceExtensionProperties("VK_LAYER_KHRONOS_validation", &n, ep) == VK_SUCCESS) {
        have_vf = dk_vk_has_ext(ep, n, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
        have_du = dk_vk_has_ext(ep, n, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
      }
      free(ep);
      if (!have_du) {
        n = 0;
        dk_vk.EnumerateInstanceExtensionProperties(NULL, &n, NULL);
        ep = (VkExtensionProperties *)calloc(n ? n : 1, sizeof *ep);
        if (ep && dk_vk.EnumerateInstanceExtensionProperties(NULL, &n, ep) == VK_SUCCESS)
          have_du = dk_vk_has_ext(ep, n, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        free(ep);
      }
    }
  }
  memset(&app, 0, sizeof app);
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "devkit";
  app.pEngineName = "devkit";
  app.apiVersion = VK_API_VERSION_1_2;
  memset(&ci, 0, sizeof ci);
  ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ci.pApplicationInfo = &app;
  memset(&mi, 0, sizeof mi);
  mi.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
  mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  mi.pfnUserCallback = dk_vk_debug_cb;
  if (have_layer && have_du) {
    layers[nl++] = "VK_LAYER_KHRONOS_validation";
    exts[ne++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    /* chained, so instance creation itself is covered too */
    ci.pNext = &mi;
    if (have_vf) {
      exts[ne++] = VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME;
      memset(&vf, 0, sizeof vf);
      vf.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT;
      vfe[0] = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
      vf.enabledValidationFeatureCount = 1;
      vf.pEnabledValidationFeatures = vfe;
      mi.pNext = &vf;
    }
  }
  ci.enabledLayerCount = nl;
  ci.ppEnabledLayerNames = layers;
  ci.enabledExtensionCount = ne;
  ci.ppEnabledExtensionNames = exts;
  r = dk_vk.CreateInstance(&ci, NULL, &dk_vk.inst);
  if (r != VK_SUCCESS) {
    dk_vk.inst = VK_NULL_HANDLE;
    snprintf(note, note_len, "vkCreateInstance failed: %s%s", dk_vk_result(r),
             r == VK_ERROR_INCOMPATIBLE_DRIVER ? " (no Vulkan driver installed)" : "");
    return DK_ERR_NO_DEVICE;
  }
  dk_vk.validation = nl > 0;
#define DK_VK_LOAD_I(n) dk_vk.fn.n = (PFN_vk##n)dk_vk.gipa(dk_vk.inst, "vk" #n);
  DK_VK_INSTANCE_FNS(DK_VK_LOAD_I)
#undef DK_VK_LOAD_I
  if (nl) {
    PFN_vkCreateDebugUtilsMessengerEXT create =
        (PFN_vkCreateDebugUtilsMessengerEXT)dk_vk.gipa(dk_vk.inst, "vkCreateDebugUtilsMessengerEXT");
    dk_vk.DestroyDebugUtilsMessengerEXT =
        (PFN_vkDestroyDebugUtilsMessengerEXT)dk_vk.gipa(dk_vk.inst, "vkDestroyDebugUtilsMessengerEXT");
    mi.pNext = NULL;
    if (create) create(dk_vk.inst, &mi, NULL, &dk_vk.messenger);
  }
  return DK_OK;
}

#define DK_VK_COOP_BM 128  /* gemm_coop.comp's tile: rows of x */
#define DK_VK_COOP_BN 128  /* and rows of w */
#define DK_VK_COOP_SHARED (2 * 128 * 40 * 2 + 8 * 16 * 16 * 4)   /* its shared memory, bytes */

#define DK_VK_FLASH_D 64   /* attn_flash.comp's head dims */
#define DK_VK_FLASH_BR 64  /* and query rows a workgroup */
/* its shared memory, bytes: Ks, Vs, QP, Sw, RedM, RedS (the emulated
 * variant: 3 * 64 * 36 * 4 + 1024, under lavapipe's 32 KB) */
#define DK_VK_FLASH_SHARED (3 * 64 * 72 * 2 + 4 * 16 * 68 * 4 + 2 * 128 * 4)

/* The shader variant a cooperative-matrix switch asks for on this device
 * (-1: none). DEVKIT_VULKAN_COOPMAT (gemm_coop.comp, prompt products) and
 * DEVKIT_VULKAN_FLASH (attn_flash.comp, prompt attention), neither yet run
 * on a GPU: =emu takes the emulated variant on any device (the tests); =1
 * the real one where the device has the matrices (ph->coop_tn: 16, else
 * the TN = 8 variant, which follows the real one in the shader table) and
 * the shared memory the shader needs. */
typedef char dk_vk_n8_follows[DK_SPV_GEMM_COOP_N8 == DK_SPV_GEMM_COOP + 1 && DK_SPV_ATTN_FLASH_N8 == DK_SPV_ATTN_FLASH + 1 ? 1 : -1];
static int dk_vk_coop_variant(const dk_vk_phys *ph, const char *var, int spv, int spv_emu, VkDeviceSize shared) {
  const char *e = getenv(var);
  if (e && !strcmp(e, "emu")) return spv_emu;
  if (!e || strcmp(e, "1") || !ph->coop_tn || ph->props.limits.maxComputeSharedMemorySize < shared) return -1;
  return ph->coop_tn == 16 ? spv : spv + 1;
}
static int dk_vk_coop_spv(const dk_vk_phys *ph) {
  return dk_vk_coop_variant(ph, "DEVKIT_VULKAN_COOPMAT", DK_SPV_GEMM_COOP, DK_SPV_GEMM_COOP_EMU, DK_VK_COOP_SHARED);
}
static int dk_vk_flash_spv(const dk_vk_phys *ph) {
  return dk_vk_coop_variant(ph, "DEVKIT_VULKAN_FLASH", DK_SPV_ATTN_FLASH, DK_SPV_ATTN_FLASH_EMU, DK_VK_FLASH_SHARED);
}

/* gemm_coop.comp's TN from the matrix shapes the device lists (16, else 8;
 * 0: neither) */
static uint32_t dk_vk_coop_tn(VkPhysicalDevice pd) {
  PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV get =
      (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)dk_vk.gipa(dk_vk.inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
  VkCooperativeMatrixPropertiesNV *cp;
  uint32_t n = 0, i, tn = 0;
  if (!get || get(pd, &n, NULL) != VK_SUCCESS || !n) return 0;
  cp = (VkCooperativeMatrixPropertiesNV *)calloc(n, sizeof *cp);
  if (!cp) return 0;
  for (i = 0; i < n; i++) cp[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
  if (get(pd, &n, cp) == VK_SUCCESS)
    for (i = 0; i < n; i++)
      if (cp[i].MSize == 16 && cp[i].KSize == 16 && (cp[i].NSize == 16 || cp[i].NSize == 8) &&
          cp[i].AType == VK_COMPONENT_TYPE_FLOAT16_NV && cp[i].BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
          cp[i].CType == VK_COMPONENT_TYPE_FLOAT32_NV && cp[i].DType == VK_COMPONENT_TYPE_FLOAT32_NV &&
          cp[i].scope == VK_SCOPE_SUBGROUP_NV && cp[i].NSize > tn)
        tn = cp[i].NSize;
  free(cp);
  return tn;
}

/* fill one physical device record; 0 when it cannot serve (no compute
 * queue, Vulkan < 1.2) */
static int dk_vk_describe(VkPhysicalDevice pd, dk_vk_phys *ph) {
  VkPhysicalDeviceProperties2 p2;
  VkPhysicalDeviceIDProperties idp;
  VkPhysicalDeviceDriverProperties drv;
  VkPhysicalDeviceSubgroupProperties sgp;
  VkPhysicalDeviceFeatures2 f2;
  VkPhysicalDeviceVulkan11Features f11;
  VkPhysicalDeviceVulkan12Features f12;
  VkPhysicalDeviceShaderIntegerDotProductFeatures fdot;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV fcm;
  VkQueueFamilyProperties *qf;
  VkExtensionProperties *ext;
  uint32_t nq = 0, ne = 0, i;
  int has_dot_ext, has_coop_ext, api13;
  memset(ph, 0, sizeof *ph);
  ph->pd = pd;
  dk_vk.fn.GetPhysicalDeviceProperties(pd, &ph->props);
  if (VK_API_VERSION_MAJOR(ph->props.apiVersion) == 1 && VK_API_VERSION_MINOR(ph->props.apiVersion) < 2) return 0;
  api13 = VK_API_VERSION_MINOR(ph->props.apiVersion) >= 3;
  dk_vk.fn.GetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
  qf = (VkQueueFamilyProperties *)calloc(nq ? nq : 1, sizeof *qf);
  if (!qf) return 0;
  dk_vk.fn.GetPhysicalDeviceQueueFamilyProperties(pd, &nq, qf);
  ph->qfam = UINT32_MAX;
  /* a compute queue without graphics is the one a GPU keeps for compute */
  for (i = 0; i < nq; i++)
    if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) && qf[i].queueCount) {
      ph->qfam = i;
      break;
    }
  for (i = 0; i < nq && ph->qfam == UINT32_MAX; i++)
    if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && qf[i].queueCount) ph->qfam = i;
  if (ph->qfam != UINT32_MAX) ph->ts_bits = qf[ph->qfam].timestampValidBits;
  free(qf);
  if (ph->qfam == UINT32_MAX) return 0;

  dk_vk.fn.EnumerateDeviceExtensionProperties(pd, NULL, &ne, NULL);
  ext = (VkExtensionProperties *)calloc(ne ? ne : 1, sizeof *ext);
  if (!ext) return 0;
  dk_vk.fn.EnumerateDeviceExtensionProperties(pd, NULL, &ne, ext);
  ph->has_push = dk_vk_has_ext(ext, ne, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  ph->has_budget = dk_vk_has_ext(ext, ne, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  has_dot_ext = dk_vk_has_ext(ext, ne, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  has_coop_ext = dk_vk_has_ext(ext, ne, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  free(ext);

  memset(&p2, 0, sizeof p2);
  memset(&idp, 0, sizeof idp);
  memset(&drv, 0, sizeof drv);
  memset(&sgp, 0, sizeof sgp);
  p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  idp.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES;
  drv.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
  sgp.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  p2.pNext = &idp;
  idp.pNext = &drv;
  drv.pNext = &sgp;
  dk_vk.fn.GetPhysicalDeviceProperties2(pd, &p2);
  memcpy(ph->uuid, idp.deviceUUID, 16);
  snprintf(ph->driver, sizeof ph->driver, "%.60s %.60s", drv.driverName, drv.driverInfo);
  ph->subgroup_size = sgp.subgroupSize;
  ph->has_sg = (sgp.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
               (sgp.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT) &&
               (sgp.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);

  memset(&f2, 0, sizeof f2);
  memset(&f11, 0, sizeof f11);
  memset(&f12, 0, sizeof f12);
  memset(&fdot, 0, sizeof fdot);
  memset(&fcm, 0, sizeof fcm);
  f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  f11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  fdot.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
  fcm.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
  f2.pNext = &f11;
  f11.pNext = &f12;
  if (api13 || has_dot_ext) f12.pNext = &fdot;
  if (has_coop_ext) {
    fcm.pNext = f12.pNext;
    f12.pNext = &fcm;
  }
  dk_vk.fn.GetPhysicalDeviceFeatures2(pd, &f2);
  ph->has_16bit = f11.storageBuffer16BitAccess;
  /* every shader reads f16/bf16 and the GGUF blocks through 16-bit storage */
  if (!ph->has_16bit) return 0;
  ph->has_robust = f2.features.robustBufferAccess;
  ph->has_f16 = f12.shaderFloat16;
  /* the instance asks for Vulkan 1.2, so the feature comes with the KHR
   * extension even where the device has it in core 1.3 */
  ph->has_int_dot = has_dot_ext && fdot.shaderIntegerDotProduct;
  if (has_coop_ext && fcm.cooperativeMatrix && f12.shaderFloat16 && f12.vulkanMemoryModel && ph->subgroup_size == 32 &&
      ph->props.limits.maxComputeSharedMemorySize >= DK_VK_COOP_SHARED)
    ph->coop_tn = dk_vk_coop_tn(pd);

  dk_vk.fn.GetPhysicalDeviceMemoryProperties(pd, &ph->mem);
  ph->max_range = ph->props.limits.maxStorageBufferRange;
  {
    VkPhysicalDeviceMaintenance3Properties m3;
    memset(&m3, 0, sizeof m3);
    memset(&p2, 0, sizeof p2);
    m3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
    p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    p2.pNext = &m3;
    dk_vk.fn.GetPhysicalDeviceProperties2(pd, &p2);
    ph->max_alloc = m3.maxMemoryAllocationSize ? m3.maxMemoryAllocationSize : ((VkDeviceSize)1 << 30);
  }
  ph->align = DK_VK_ALIGN;
  if (ph->props.limits.minStorageBufferOffsetAlignment > ph->align) ph->align = ph->props.limits.minStorageBufferOffsetAlignment;
  if (ph->props.limits.nonCoherentAtomSize > ph->align) ph->align = ph->props.limits.nonCoherentAtomSize;
  return 1;
}

static int dk_vk_probe(char *note, size_t note_len) {
#ifdef DK_VK_PIN_DRIVERS
  char *maps_before;
#endif
  VkPhysicalDevice pds[DK_MAX_DEVICES];
  uint32_t n = DK_MAX_DEVICES, i;
  VkResult r;
  memset(&dk_vk.fn, 0, sizeof dk_vk.fn);
  dk_vk.lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!dk_vk.lib) {
    const char *e = dlerror();
    snprintf(note, note_len, "the Vulkan loader libvulkan.so.1 was not found (%s)", e ? e : "dlopen failed");
    return 0;
  }
  *(void **)&dk_vk.gipa = dlsym(dk_vk.lib, "vkGetInstanceProcAddr");
  if (!dk_vk.gipa) {
    snprintf(note, note_len, "libvulkan.so.1 has no vkGetInstanceProcAddr");
    dk_vk_unload();
    return 0;
  }
  dk_vk.CreateInstance = (PFN_vkCreateInstance)dk_vk.gipa(VK_NULL_HANDLE, "vkCreateInstance");
  dk_vk.EnumerateInstanceLayerProperties =
      (PFN_vkEnumerateInstanceLayerProperties)dk_vk.gipa(VK_NULL_HANDLE, "vkEnumerateInstanceLayerProperties");
  dk_vk.EnumerateInstanceExtensionProperties =
      (PFN_vkEnumerateInstanceExtensionProperties)dk_vk.gipa(VK_NULL_HANDLE, "vkEnumerateInstanceExtensionProperties");
  dk_vk.EnumerateInstanceVersion = (PFN_vkEnumerateInstanceVersion)dk_vk.gipa(VK_NULL_HANDLE, "vkEnumerateInstanceVersion");
  if (!dk_vk.CreateInstance || !dk_vk.EnumerateInstanceLayerProperties || !dk_vk.EnumerateInstanceExtensionProperties) {
    snprintf(note, note_len, "libvulkan.so.1 lacks the global entry points");
    dk_vk_unload();
    return 0;
  }
#ifdef DK_VK_PIN_DRIVERS
  maps_before = dk_vk_maps();
#endif
  if (dk_vk_create_instance(note, note_len) != DK_OK) {
#ifdef DK_VK_PIN_DRIVERS
    free(maps_before);
#endif
    dk_vk_unload();
    return 0;
  }
  r = dk_vk.fn.EnumeratePhysicalDevices(dk_vk.inst, &n, pds);
#ifdef DK_VK_PIN_DRIVERS
  dk_vk_pin_new_objects(maps_before);
  free(maps_before);
#endif
  if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || n == 0) {
    snprintf(note, note_len, "no Vulkan physical device (%s)", r == VK_SUCCESS ? "the driver lists none" : dk_vk_result(r));
    dk_vk_unload();
    return 0;
  }
  dk_vk.nphys = 0;
  for (i = 0; i < n; i++)
    if (dk_vk_describe(pds[i], &dk_vk.phys[dk_vk.nphys])) dk_vk.nphys++;
  if (dk_vk.nphys == 0) {
    snprintf(note, note_len, "%u Vulkan device(s), none with a compute queue, Vulkan 1.2 and storageBuffer16BitAccess", n);
    dk_vk_unload();
    return 0;
  }
  return dk_vk.nphys;
}

static dk_status dk_vk_properties(int physical, dk_device_props *p) {
  dk_vk_phys *ph = &dk_vk.phys[physical];
  uint32_t i;
  uint64_t total = 0, budget = 0, usage = 0;
  static const struct { uint32_t id; const char *name; } vendors[] = {
    {0x10DE, "NVIDIA"}, {0x1002, "AMD"}, {0x1022, "AMD"}, {0x8086, "Intel"}, {0x106B, "Apple"},
    {0x13B5, "ARM"}, {0x5143, "Qualcomm"}, {0x1010, "Imagination"}, {0x10005, "Mesa"}};
  snprintf(p->name, sizeof p->name, "%s", ph->props.deviceName);
  snprintf(p->vendor, sizeof p->vendor, "0x%04x", ph->props.vendorID);
  for (i = 0; i < sizeof vendors / sizeof vendors[0]; i++)
    if (vendors[i].id == ph->props.vendorID) snprintf(p->vendor, sizeof p->vendor, "%s", vendors[i].name);
  snprintf(p->driver, sizeof p->driver, "%s", ph->driver);
  if (ph->has_budget) {
    VkPhysicalDeviceMemoryProperties2 m2;
    VkPhysicalDeviceMemoryBudgetPropertiesEXT b;
    memset(&m2, 0, sizeof m2);
    memset(&b, 0, sizeof b);
    m2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2;
    b.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT;
    m2.pNext = &b;
    dk_vk.fn.GetPhysicalDeviceMemoryProperties2(ph->pd, &m2);
    for (i = 0; i < m2.memoryProperties.memoryHeapCount; i++)
      if (m2.memoryProperties.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) {
        total += m2.memoryProperties.memoryHeaps[i].size;
        budget += b.heapBudget[i];
        usage += b.heapUsage[i];
      }
    p->memory_total = total;
    p->memory_free = budget > usage ? budget - usage : 0;
  } else {
    for (i = 0; i < ph->mem.memoryHeapCount; i++)
      if (ph->mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) total += ph->mem.memoryHeaps[i].size;
    p->memory_total = total;
    uint64_t held = __atomic_load_n(&ph->held, __ATOMIC_RELAXED);
    p->memory_free = total > held ? total - held : 0;
  }
  memcpy(p->uuid, ph->uuid, 16);
  p->has_uuid = 1;
  p->is_software = ph->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
  p->supports_f16 = p->supports_bf16 = ph->has_16bit;
  p->supports_int8_dot = ph->has_int_dot;
  p->subgroup_size = (int)ph->subgroup_size;
  p->prompt_x16 = dk_vk_coop_spv(ph) >= 0;
  p->attn_x16 = dk_vk_flash_spv(ph) >= 0;
  return DK_OK;
}

/* ==== memory ============================================================== */

static int dk_vk_pick_type(dk_vk_phys *ph, uint32_t bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid) {
  uint32_t i;
  for (i = 0; i < ph->mem.memoryTypeCount; i++) {
    VkMemoryPropertyFlags f = ph->mem.memoryTypes[i].propertyFlags;
    if ((bits >> i) & 1 && (f & want) == want && !(f & avoid)) return (int)i;
  }
  return -1;
}

static void dk_vk_block_destroy(dk_vk_device *d, dk_vk_block *b) {
  int i;
  if (!b) return;
  for (i = 0; i < b->nviews; i++) d->fn.DestroyBufferView(d->dev, b->views[i].view, NULL);
  free(b->views);
  if (b->buf) d->fn.DestroyBuffer(d->dev, b->buf, NULL);
  if (b->mem) {
    if (b->map) d->fn.UnmapMemory(d->dev, b->mem);
    d->fn.FreeMemory(d->dev, b->mem, NULL);
    __atomic_sub_fetch(&d->ph->held, b->size, __ATOMIC_RELAXED);
  }
  free(b->free_off);
  free(b->free_size);
  free(b);
}

/* A buffer over a fresh allocation of memory type `type`; mapped when
 * `map`. */
static VkResult dk_vk_block_create(dk_vk_device *d, VkDeviceSize size, uint32_t type, int map, dk_vk_block **out) {
  VkBufferCreateInfo bi;
  VkMemoryAllocateInfo ai;
  VkMemoryRequirements req;
  VkResult r;
  dk_vk_block *b = (dk_vk_block *)calloc(1, sizeof *b);
  *out = NULL;
  if (!b) return VK_ERROR_OUT_OF_HOST_MEMORY;
  memset(&bi, 0, sizeof bi);
  bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bi.size = size;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  if (d->tex) bi.usage |= VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  r = d->fn.CreateBuffer(d->dev, &bi, NULL, &b->buf);
  if (r != VK_SUCCESS) { free(b); return r; }
  d->fn.GetBufferMemoryRequirements(d->dev, b->buf, &req);
  if (!((req.memoryTypeBits >> type) & 1)) {
    d->fn.DestroyBuffer(d->dev, b->buf, NULL);
    free(b);
    return VK_ERROR_FEATURE_NOT_PRESENT;
  }
  memset(&ai, 0, sizeof ai);
  ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = type;
  r = d->fn.AllocateMemory(d->dev, &ai, NULL, &b->mem);
  if (r != VK_SUCCESS) {
    b->mem = VK_NULL_HANDLE;
    d->fn.DestroyBuffer(d->dev, b->buf, NULL);
    free(b);
    return r;
  }
  b->size = size;
  __atomic_add_fetch(&d->ph->held, size, __ATOMIC_RELAXED);
  r = d->fn.BindBufferMemory(d->dev, b->buf, b->mem, 0);
  if (r == VK_SUCCESS && map) r = d->fn.MapMemory(d->dev, b->mem, 0, VK_WHOLE_SIZE, 0, (void **)&b->map);
  if (r != VK_SUCCESS) {
    b->map = NULL;
    dk_vk_block_destroy(d, b);
    return r;
  }
  *out = b;
  return VK_SUCCESS;
}

/* Bytes [off, off + range) of the block as a uniform texel buffer of
 * 16-byte texels (R32G32B32A32_UINT, a format every device must support
 * there), made on first use and kept with the block; VK_NULL_HANDLE where
 * the device reads no weights that way, the range is off the texel grid or
 * past what a view may hold, or the block has DK_VK_VIEWS views already
 * (the row kernels then load as storage buffers). A view as wide as the
 * binding it stands beside, not the whole block: the validation layer (and
 * the hazard tracking here) count a view's whole range as read. Why texels:
 * llvmpipe loads a storage buffer lane by lane, with a branch and a bounds
 * check for each lane and each 32-bit word, but fetches a texel for all
 * its SIMD lanes at once (bench/RESULTS.md, 2026-11-27). */
static VkBufferView dk_vk_block_view(dk_vk_device *d, dk_vk_block *b, VkDeviceSize off, VkDeviceSize range) {
  VkBufferViewCreateInfo vi;
  VkBufferView v = VK_NULL_HANDLE;
  int i;
  for (i = b->nviews - 1; i >= 0; i--)
    if (b->views[i].off == off && b->views[i].range == range) return b->views[i].view;
  if (!d->tex || off % 16 || range % 16 || off + range > b->size ||
      range / 16 > d->ph->props.limits.maxTexelBufferElements || b->nviews == DK_VK_VIEWS)
    return VK_NULL_HANDLE;
  if (b->nviews == b->capviews) {
    int cap = b->capviews ? 2 * b->capviews : 8;
    dk_vk_view *nv = (dk_vk_view *)realloc(b->views, sizeof *nv * (size_t)cap);
    if (!nv) return VK_NULL_HANDLE;
    b->views = nv;
    b->capviews = cap;
  }
  memset(&vi, 0, sizeof vi);
  vi.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO;
  vi.buffer = b->buf;
  vi.format = VK_FORMAT_R32G32B32A32_UINT;
  vi.offset = off;
  vi.range = range;
  if (d->fn.CreateBufferView(d->dev, &vi, NULL, &v) != VK_SUCCESS) return VK_NULL_HANDLE;
  b->views[b->nviews].off = off;
  b->views[b->nviews].range = range;
  b->views[b->nviews++].view = v;
  return v;
}

static int dk_vk_free_grow(dk_vk_block *b) {
  int cap = b->capfree ? b->capfree * 2 : 16;
  VkDeviceSize *o = (VkDeviceSize *)realloc(b->free_off, sizeof(VkDeviceSize) * (size_t)cap);
  VkDeviceSize *s;
  if (!o) return 0;
  b->free_off = o;
  s = (VkDeviceSize *)realloc(b->free_size, sizeof(VkDeviceSize) * (size_t)cap);
  if (!s) return 0;
  b->free_size = s;
  b->capfree = cap;
  return 1;
}

/* best fit in one block's free list; returns the offset or (VkDeviceSize)-1 */
static VkDeviceSize dk_vk_block_take(dk_vk_block *b, VkDeviceSize n) {
  int i, best = -1;
  VkDeviceSize off;
  for (i = 0; i < b->nfree; i++)
    if (b->free_size[i] >= n && (best < 0 || b->free_size[i] < b->free_size[best])) best = i;
  if (best < 0) return (VkDeviceSize)-1;
  off = b->free_off[best];
  b->free_off[best] += n;
  b->free_size[best] -= n;
  if (b->free_size[best] == 0) {
    memmove(b->free_off + best, b->free_off + best + 1, sizeof(VkDeviceSize) * (size_t)(b->nfree - best - 1));
    memmove(b->free_size + best, b->free_size + best + 1, sizeof(VkDeviceSize) * (size_t)(b->nfree - best - 1));
    b->nfree--;
  }
  b->used += n;
  return off;
}

/* give [off, off+n) back, merging with its neighbours */
static void dk_vk_block_give(dk_vk_block *b, VkDeviceSize off, VkDeviceSize n) {
  int i = 0;
  while (i < b->nfree && b->free_off[i] < off) i++;
  b->used -= n;
  if (i > 0 && b->free_off[i - 1] + b->free_size[i - 1] == off) {
    b->free_size[i - 1] += n;
    if (i < b->nfree && off + n == b->free_off[i]) {
      b->free_size[i - 1] += b->free_size[i];
      memmove(b->free_off + i, b->free_off + i + 1, sizeof(VkDeviceSize) * (size_t)(b->nfree - i - 1));
      memmove(b->free_size + i, b->free_size + i + 1, sizeof(VkDeviceSize) * (size_t)(b->nfree - i - 1));
      b->nfree--;
    }
    return;
  }
  if (i < b->nfree && off + n == b->free_off[i]) {
    b->free_off[i] = off;
    b->free_size[i] += n;
    return;
  }
  if (b->nfree == b->capfree && !dk_vk_free_grow(b)) return;  /* the range is lost, not corrupted */
  memmove(b->free_off + i + 1, b->free_off + i, sizeof(VkDeviceSize) * (size_t)(b->nfree - i));
  memmove(b->free_size + i + 1, b->free_size + i, sizeof(VkDeviceSize) * (size_t)(b->nfree - i));
  b->free_off[i] = off;
  b->free_size[i] = n;
  b->nfree++;
}

static void dk_vk_unlink_block(dk_vk_device *d, dk_vk_block *b) {
  dk_vk_block **pp;
  for (pp = &d->blocks; *pp; pp = &(*pp)->next)
    if (*pp == b) { *pp = b->next; return; }
}

/* Return a sub-allocation; empty blocks are freed except one kept for reuse,
 * and dedicated ones always. */
static void dk_vk_give_back(dk_vk_device *d, dk_vk_block *b, VkDeviceSize off, VkDeviceSize n) {
  dk_vk_block *o;
  int empty_others = 0;
  if (b->dedicated) {
    dk_vk_unlink_block(d, b);
    dk_vk_block_destroy(d, b);
    return;
  }
  dk_vk_block_give(b, off, n);
  if (b->used) return;
  for (o = d->blocks; o; o = o->next) empty_others += o != b && !o->dedicated && o->used == 0;
  if (empty_others) {
    dk_vk_unlink_block(d, b);
    dk_vk_block_destroy(d, b);
  }
}

/* free blocks nobody uses (before retrying an allocation that failed) */
static void dk_vk_trim(dk_vk_device *d) {
  dk_vk_block **pp = &d->blocks;
  while (*pp) {
    dk_vk_block *b = *pp;
    if (!b->dedicated && b->used == 0) {
      *pp = b->next;
      dk_vk_block_destroy(d, b);
    } else {
      pp = &b->next;
    }
  }
}

static VkDeviceSize dk_vk_heap_size(dk_vk_device *d);

static VkResult dk_vk_new_block(dk_vk_device *d, VkDeviceSize size, int dedicated, dk_vk_block **out) {
  VkResult r;
  /* drivers do not always refuse an allocation past the heap (lavapipe takes
   * host memory); devkit's own count makes out-of-memory deterministic */
  if (__atomic_load_n(&d->ph->held, __ATOMIC_RELAXED) + size > dk_vk_heap_size(d)) return VK_ERROR_OUT_OF_DEVICE_MEMORY;
  r = dk_vk_block_create(d, size, d->mt_dev, d->dev_mappable, out);
  if (r != VK_SUCCESS) return r;
  (*out)->dedicated = dedicated;
  if (!dedicated) {
    if (!dk_vk_free_grow(*out)) {
      dk_vk_block_destroy(d, *out);
      *out = NULL;
      return VK_ERROR_OUT_OF_HOST_MEMORY;
    }
    (*out)->free_off[0] = 0;
    (*out)->free_size[0] = size;
    (*out)->nfree = 1;
  }
  (*out)->next = d->blocks;
  d->blocks = *out;
  return VK_SUCCESS;
}

/* n bytes (already rounded) from the pools: a slice of a shared block, or a
 * block of its own */
static VkResult dk_vk_suballoc(dk_vk_device *d, VkDeviceSize n, dk_vk_block **blk, VkDeviceSize *off) {
  dk_vk_block *b;
  VkResult r;
  if (n > d->block_size / 4) {
    r = dk_vk_new_block(d, n, 1, blk);
    *off = 0;
    return r;
  }
  for (b = d->blocks; b; b = b->next) {
    if (b->dedicated) continue;
    *off = dk_vk_block_take(b, n);
    if (*off != (VkDeviceSize)-1) { *blk = b; return VK_SUCCESS; }
  }
  r = dk_vk_new_block(d, d->block_size, 0, &b);
  if (r != VK_SUCCESS) return r;
  *off = dk_vk_block_take(b, n);
  *blk = b;
  return VK_SUCCESS;
}

static void dk_vk_mem_link(dk_vk_device *d, dk_vk_mem *m) {
  m->prev = NULL;
  m->next = d->live;
  if (d->live) d->live->prev = m;
  d->live = m;
}
static void dk_vk_mem_unlink(dk_vk_device *d, dk_vk_mem *m) {
  if (m->prev) m->prev->next = m->next; else d->live = m->next;
  if (m->next) m->next->prev = m->prev;
}

/* segment that holds bytes [a, b) of m whole, or -1 */
static int dk_vk_seg_of(const dk_vk_mem *m, VkDeviceSize a, VkDeviceSize b) {
  int i;
  if (m->nseg <= 1) return 0;
  i = (int)(a / m->seg_stride);
  if (i >= m->nseg) i = m->nseg - 1;
  if (b > (VkDeviceSize)i * m->seg_stride + m->seg[i]->size) return -1;
  return i;
}

/* ==== frames: record, submit, complete ==================================== */

static void dk_vk_give_back_deferred(dk_vk_device *d) {
  int i = 0;
  while (i < d->ndefer) {
    if (d->defer[i].serial <= d->done) {
      dk_vk_deferred e = d->defer[i];
      d->defer[i] = d->defer[--d->ndefer];
      dk_vk_give_back(d, e.block, e.off, e.size);
    } else {
      i++;
    }
  }
}

/* the fence of f has signaled */
static void dk_vk_complete(dk_vk_device *d, dk_vk_frame *f) {
  int i;
  if (f->serial > d->done) d->done = f->serial;
  if (f->ring_end > d->ring_tail) d->ring_tail = f->ring_end;
  for (i = 0; i < f->nchecks; i++) {
    const uint32_t *st = (const uint32_t *)(d->status->map + (size_t)f->checks[i].word * 16);
    if (st[0] && d->pending == DK_OK) {
      const dk_vk_check *k = &f->checks[i];
      d->pending = DK_ERR_INVALID;
      if (k->axis >= 0)
        snprintf(d->pending_msg, sizeof d->pending_msg,
                 "%s on %s: ids '%s' holds %d at position %lld, outside [-%lld, %lld) for axis %d of "
                 "'%s' '%s' (size %lld; %s); found on the device and reported at this sync; elements of bad ids were "
                 "not written",
                 dk__op_name(k->op), dk_device_name(dk_vk_devid(d->logical)), k->ids, (int)st[2],
                 (long long)st[1] + k->pos_base, k->rows, k->rows, k->axis, k->op == DK_OP_INDEX_COPY ? "dst" : "x",
                 k->table, k->rows, k->site[0] ? k->site : "site unknown");
      else
      snprintf(d->pending_msg, sizeof d->pending_msg,
               "dk_embedding on %s: ids '%s' holds %d at position %lld, outside table '%s' of %lld rows (%s); "
               "found on the device and reported at this sync; rows for bad ids were not written",
               dk_device_name(dk_vk_devid(d->logical)), k->ids, (int)st[2], (long long)st[1] + k->pos_base,
               k->table, k->rows, k->site[0] ? k->site : "site unknown");
    }
  }
  f->state = 0;
  f->nchecks = 0;
  dk_vk_give_back_deferred(d);
}

/* the submitted frame with the lowest serial, or NULL */
static dk_vk_frame *dk_vk_oldest(dk_vk_device *d) {
  dk_vk_frame *best = NULL;
  int i;
  for (i = 0; i < DK_VK_FRAMES; i++)
    if (d->frames[i].state == 2 && (!best || d->frames[i].serial < best->serial)) best = &d->frames[i];
  return best;
}

/* complete submitted frames in order: up to serial `upto` waiting for them,
 * and any later ones that have already finished */
static dk_status dk_vk_retire(dk_vk_device *d, uint64_t upto) {
  dk_vk_frame *f;
  while ((f = dk_vk_oldest(d)) != NULL) {
    VkResult r;
    if (f->serial <= upto) r = d->fn.WaitForFences(d->dev, 1, &f->fence, VK_TRUE, UINT64_MAX);
    else r = d->fn.GetFenceStatus(d->dev, f->fence);
    if (r == VK_NOT_READY) break;
    if (r != VK_SUCCESS) return dk_vk_fail(d, r, "waiting for the GPU");
    dk_vk_complete(d, f);
  }
  return DK_OK;
}

static dk_status dk_vk_begin(dk_vk_device *d) {
  VkCommandBufferBeginInfo bi;
  dk_vk_frame *f;
  VkResult r;
  dk_status s;
  int i;
  if (d->rec >= 0) return DK_OK;
  if (d->lost) return dk__error(DK_ERR_BACKEND, "%s was lost (VK_ERROR_DEVICE_LOST); reopen devkit",
                                dk_device_name(dk_vk_devid(d->logical)));
  i = (d->last + 1) % DK_VK_FRAMES;
  f = &d->frames[i];
  if (f->state == 2 && (s = dk_vk_retire(d, f->serial)) != DK_OK) return s;
  if ((r = d->fn.ResetFences(d->dev, 1, &f->fence)) != VK_SUCCESS) return dk_vk_fail(d, r, "vkResetFences");
  if ((r = d->fn.ResetCommandBuffer(f->cmd, 0)) != VK_SUCCESS) return dk_vk_fail(d, r, "vkResetCommandBuffer");
  if (f->dpool && (r = d->fn.ResetDescriptorPool(d->dev, f->dpool, 0)) != VK_SUCCESS)
    return dk_vk_fail(d, r, "vkResetDescriptorPool");
  memset(&bi, 0, sizeof bi);
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if ((r = d->fn.BeginCommandBuffer(f->cmd, &bi)) != VK_SUCCESS) return dk_vk_fail(d, r, "vkBeginCommandBuffer");
  f->serial = d->next_serial++;
  f->state = 1;
  f->ndispatch = 0;
  f->nchecks = 0;
  f->bound = VK_NULL_HANDLE;
  d->rec = i;
  d->last = i;
  return DK_OK;
}

static dk_status dk_vk_submit(dk_vk_device *d) {
  dk_vk_frame *f;
  VkMemoryBarrier mb;
  VkSubmitInfo si;
  VkResult r;
  /* a graph's recording is submitted by its replays only */
  if (d->rec < 0 || d->grec) return DK_OK;
  f = &d->frames[d->rec];
  /* device writes become visible to the host once the fence signals */
  memset(&mb, 0, sizeof mb);
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT;
  d->fn.CmdPipelineBarrier(f->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                           VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
  d->rec = -1;
  f->ring_end = d->ring_head;
  if ((r = d->fn.EndCommandBuffer(f->cmd)) != VK_SUCCESS) {
    f->state = 0;
    return dk_vk_fail(d, r, "vkEndCommandBuffer");
  }
  memset(&si, 0, sizeof si);
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &f->cmd;
  if ((r = d->fn.QueueSubmit(d->queue, 1, &si, f->fence)) != VK_SUCCESS) {
    f->state = 0;
    return dk_vk_fail(d, r, "vkQueueSubmit");
  }
  f->state = 2;
  return DK_OK;
}

/* submit what is recorded and wait for all of it */
static dk_status dk_vk_finish(dk_vk_device *d) {
  dk_status s = dk_vk_submit(d);
  if (s != DK_OK) return s;
  return dk_vk_retire(d, UINT64_MAX);
}

/* the device-side error the last frames found, once */
static dk_status dk_vk_take_pending(dk_vk_device *d) {
  dk_status s = d->pending;
  if (s == DK_OK) return DK_OK;
  d->pending = DK_OK;
  return dk__error(s, "%s", d->pending_msg);
}

/* ---- hazards ------------------------------------------------------------- */

static int dk_vk_overlaps(const dk_vk_span *list, int n, const dk_vk_span *x) {
  int i;
  for (i = 0; i < n; i++)
    if (list[i].buf == x->buf && list[i].a < x->b && x->a < list[i].b) return 1;
  return 0;
}

/* every earlier command's writes before any later command's access */
static void dk_vk_full_barrier(dk_vk_device *d, VkCommandBuffer cmd) {
  VkMemoryBarrier mb;
  memset(&mb, 0, sizeof mb);
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  d->fn.CmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                           VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, NULL, 0,
                           NULL);
  d->nrd = d->nwr = 0;
  d->full_barrier = 0;
}

/* a barrier only when this command reads what an earlier one wrote, or
 * writes what an earlier one read or wrote, since the last barrier */
static void dk_vk_hazard(dk_vk_device *d, VkCommandBuffer cmd, const dk_vk_span *rd, int nrd, const dk_vk_span *wr,
                         int nwr) {
  int i, need = d->full_barrier || d->nrd + nrd > DK_VK_SPANS || d->nwr + nwr > DK_VK_SPANS;
  for (i = 0; i < nrd && !need; i++) need = dk_vk_overlaps(d->wr, d->nwr, &rd[i]);
  for (i = 0; i < nwr && !need; i++) need = dk_vk_overlaps(d->wr, d->nwr, &wr[i]) || dk_vk_overlaps(d->rd, d->nrd, &wr[i]);
  if (need) dk_vk_full_barrier(d, cmd);
  for (i = 0; i < nrd; i++) d->rd[d->nrd++] = rd[i];
  for (i = 0; i < nwr; i++) d->wr[d->nwr++] = wr[i];
}

/* ---- pipelines ----------------------------------------------------------- */

static uint32_t dk_vk_pipe_hash(int spv, const uint32_t *spec) {
  uint32_t h = 2166136261u ^ (uint32_t)spv;
  int i;
  for (i = 0; i < DK_VK_SPEC; i++) h = (h ^ spec[i]) * 16777619u;
  return h;
}

static dk_vk_pipe *dk_vk_pipe_slot(dk_vk_pipe *tab, int cap, int spv, const uint32_t *spec) {
  uint32_t i = dk_vk_pipe_hash(spv, spec) & (uint32_t)(cap - 1);
  for (;; i = (i + 1) & (uint32_t)(cap - 1)) {
    dk_vk_pipe *e = &tab[i];
    if (!e->pipe || (e->spv == spv && !memcmp(e->spec, spec, sizeof e->spec))) return e;
  }
}

static dk_status dk_vk_pipeline(dk_vk_device *d, int id, const uint32_t *spec, VkPipeline *out) {
  VkShaderModuleCreateInfo mi;
  VkComputePipelineCreateInfo pi;
  VkSpecializationMapEntry me[DK_VK_SPEC];
  VkSpecializationInfo si;
  VkShaderModule mod;
  dk_vk_pipe *e;
  VkResult r;
  int i;
  if (d->cappipes) {
    e = dk_vk_pipe_slot(d->pipes, d->cappipes, id, spec);
    if (e->pipe) { *out = e->pipe; return DK_OK; }
  }
  if (2 * (d->npipes + 1) > d->cappipes) {
    /* keep the table at most half full */
    int cap = d->cappipes ? d->cappipes * 2 : 64;
    dk_vk_pipe *t = (dk_vk_pipe *)calloc((size_t)cap, sizeof *t);
    if (!t) return dk__error(DK_ERR_OUT_OF_MEMORY, "%s: out of host memory for pipelines", dk_device_name(dk_vk_devid(d->logical)));
    for (i = 0; i < d->cappipes; i++)
      if (d->pipes[i].pipe) *dk_vk_pipe_slot(t, cap, d->pipes[i].spv, d->pipes[i].spec) = d->pipes[i];
    free(d->pipes);
    d->pipes = t;
    d->cappipes = cap;
  }
  e = dk_vk_pipe_slot(d->pipes, d->cappipes, id, spec);
  memset(&mi, 0, sizeof mi);
  mi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  mi.codeSize = dk_spv_table[id].size;
  mi.pCode = dk_spv_table[id].words;
  if ((r = d->fn.CreateShaderModule(d->dev, &mi, NULL, &mod)) != VK_SUCCESS)
    return dk_vk_fail(d, r, dk_spv_table[id].name);
  for (i = 0; i < DK_VK_SPEC; i++) {
    me[i].constantID = (uint32_t)i;
    me[i].offset = (uint32_t)(i * sizeof(uint32_t));
    me[i].size = sizeof(uint32_t);
  }
  si.mapEntryCount = DK_VK_SPEC;
  si.pMapEntries = me;
  si.dataSize = DK_VK_SPEC * sizeof(uint32_t);
  si.pData = spec;
  memset(&pi, 0, sizeof pi);
  pi.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  pi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pi.stage.module = mod;
  pi.stage.pName = "main";
  pi.stage.pSpecializationInfo = &si;
  pi.layout = d->layout;
  r = d->fn.CreateComputePipelines(d->dev, d->pcache, 1, &pi, NULL, &e->pipe);
  d->pcache_new = 1;
  d->fn.DestroyShaderModule(d->dev, mod, NULL);
  if (r != VK_SUCCESS) {
    e->pipe = VK_NULL_HANDLE;
    return dk_vk_fail(d, r, dk_spv_table[id].name);
  }
  e->spv = id;
  memcpy(e->spec, spec, sizeof e->spec);
  d->npipes++;
  *out = e->pipe;
  return DK_OK;
}

/* ---- one command's operands ------------------------------------------------ */

typedef struct {
  VkDescriptorBufferInfo buf[DK_VK_MAX_BIND];
  int nbuf;
  dk_vk_span rd[DK_VK_MAX_BIND + DK_VK_TEX], wr[DK_VK_MAX_BIND];
  int nrd, nwr;
  dk_vk_mem *mem[DK_VK_MAX_BIND];
  int nmem;
  dk_vk_block *blk[DK_VK_MAX_BIND];   /* the block behind each binding, where one is */
  VkBufferView tview[DK_VK_TEX];      /* bindings DK_VK_MAX_BIND.., for the shaders that read as texels */
} dk_vk_args;

static void dk_vk_args_init(dk_vk_args *a) { memset(a, 0, sizeof *a); }

static void dk_vk_arg_raw(dk_vk_args *a, int slot, VkBuffer buf, VkDeviceSize off, VkDeviceSize range) {
  a->buf[slot].buffer = buf;
  a->buf[slot].offset = off;
  a->buf[slot].range = range;
  if (slot + 1 > a->nbuf) a->nbuf = slot + 1;
}

static void dk_vk_arg_dummy(dk_vk_device *d, dk_vk_args *a, int slot) {
  dk_vk_arg_raw(a, slot, d->dummy->buf, 0, d->dummy->size);
}

static void dk_vk_track(dk_vk_args *a, VkBuffer buf, VkDeviceSize lo, VkDeviceSize hi, int write, dk_vk_mem *m) {
  dk_vk_span *s = write ? &a->wr[a->nwr++] : &a->rd[a->nrd++];
  s->buf = buf;
  s->a = lo;
  s->b = hi;
  if (m) a->mem[a->nmem++] = m;
}

/* Binding `slot` also as texel binding DK_VK_MAX_BIND + `tex`, a view of
 * the same bytes rounded up to whole texels (the allocation's alignment
 * keeps them inside it). 0 where there is no such view (dk_vk_block_view). */
static int dk_vk_texels(dk_vk_device *d, dk_vk_args *a, int slot, int tex) {
  VkDeviceSize off = a->buf[slot].offset, range = dk_vk_round(a->buf[slot].range, 16);
  VkBufferView v;
  if (!a->blk[slot] || !(v = dk_vk_block_view(d, a->blk[slot], off, range))) return 0;
  a->tview[tex] = v;
  dk_vk_track(a, a->buf[slot].buffer, off, off + range, 0, NULL);
  return 1;
}

/* Bind bytes [first, first + n) of t's storage (first counted from the
 * tensor's own offset). *elem gets the index, in units of `unit` bytes, of
 * byte `first` inside the binding, whose start is aligned down as the
 * device requires. */
static dk_status dk_vk_arg(dk_vk_device *d, dk_vk_args *a, int slot, const dk_tensor *t, VkDeviceSize first,
                           VkDeviceSize n, int write, unsigned unit, uint32_t *elem, const char *role) {
  dk_vk_mem *m = (dk_vk_mem *)t->st->ptr;
  VkDeviceSize abs = (VkDeviceSize)t->offset + first, boff, base, range;
  dk_vk_block *blk;
  int si;
  if (n == 0) {
    dk_vk_arg_dummy(d, a, slot);
    *elem = 0;
    return DK_OK;
  }
  si = dk_vk_seg_of(m, abs, abs + n);
  if (si < 0)
    return dk__call_error(DK_ERR_UNSUPPORTED, "",
                          "%s '%s' on %s spans %llu bytes, more than one Vulkan allocation holds (%llu); this op "
                          "cannot read it in pieces (linear, embedding and copies can)",
                          role, t->name, dk_device_name(t->device), (unsigned long long)m->size,
                          (unsigned long long)d->max_alloc);
  blk = m->nseg > 1 ? m->seg[si] : m->block;
  boff = m->nseg > 1 ? abs - (VkDeviceSize)si * m->seg_stride : m->off + abs;
  base = boff - boff % d->ph->align;
  range = dk_vk_round(boff + n - base, 4);
  if (base + range > blk->size) range = blk->size - base;
  if (range > d->max_range)
    return dk__call_error(DK_ERR_UNSUPPORTED, "",
                          "%s '%s' on %s: %llu bytes is more than this device binds at once (maxStorageBufferRange "
                          "%llu); this op does not split it (linear, embedding and copies do)",
                          role, t->name, dk_device_name(t->device), (unsigned long long)n,
                          (unsigned long long)d->max_range);
  dk_vk_arg_raw(a, slot, blk->buf, base, range);
  a->blk[slot] = blk;
  /* the hazard is the bound range, not just the bytes used: the binding
   * starts aligned down, and the validation layer (rightly: the shader may
   * touch any of it) counts the whole range as accessed. Two views side by
   * side in one row (a fused q|k|v output with a head boundary off the
   * alignment) otherwise meet with no barrier between them. */
  dk_vk_track(a, blk->buf, base, base + range, write, m);
  *elem = (uint32_t)((boff - base) / unit);
  return DK_OK;
}

/* the bytes a (possibly strided) tensor reaches from its offset */
static VkDeviceSize dk_vk_extent(const dk_tensor *t) {
  int64_t last = 0;
  int i;
  for (i = 0; i < t->ndim; i++) {
    if (t->shape[i] == 0) return 0;
    last += (t->shape[i] - 1) * t->stride[i];
  }
  if (dk_dtype_is_quant(t->dtype)) return dk_tensor_nbytes(t);
  return (VkDeviceSize)dk__elem_offset_bytes(t->dtype, last + 1);
}

static unsigned dk_vk_unit(dk_dtype t) { return (t == DK_F32 || t == DK_I32) ? 4u : 2u; }

/* the whole tensor */
static dk_status dk_vk_arg_t(dk_vk_device *d, dk_vk_args *a, int slot, const dk_tensor *t, int write, uint32_t *elem,
                             const char *role) {
  return dk_vk_arg(d, a, slot, t, 0, dk_vk_extent(t), write, dk_vk_unit(t->dtype), elem, role);
}

static void dk_vk_graph_touch(dk_vk_device *d, dk_vk_args *a);
static void dk_vk_touch(dk_vk_device *d, dk_vk_args *a) {
  int i;
  uint64_t serial = d->frames[d->rec].serial;
  if (d->grec) { dk_vk_graph_touch(d, a); return; }   /* used when replayed */
  for (i = 0; i < a->nmem; i++) a->mem[i]->last_use = serial;
}

/* the shaders that include quants.glsl, which reads the iq3 and iq2
 * codebooks at binding 4 */
static int dk_vk_reads_grids(int spv) {
  return spv == DK_SPV_EMBEDDING || spv == DK_SPV_EMBEDDING_NOSG || (spv >= DK_SPV_GEMM_COOP && spv <= DK_SPV_GEMM_ROWS_T) ||
         (spv >= DK_SPV_MATMUL && spv <= DK_SPV_MATMUL_QK) || (spv >= DK_SPV_MATVEC_ROWS_F32 && spv <= DK_SPV_MATVEC_ROWS_T_IQ2_S);
}

/* record one dispatch */
static dk_status dk_vk_run(dk_vk_device *d, int spv, const uint32_t *spec, dk_vk_args *a, const void *pc,
                           uint32_t pc_size, uint32_t gx, uint32_t gy, uint32_t gz) {
  VkPipeline pipe = VK_NULL_HANDLE;
  dk_vk_frame *f;
  VkWriteDescriptorSet w[DK_VK_MAX_BIND + DK_VK_TEX];
  dk_status s;
  int i, nw;
  uint32_t key[DK_VK_SPEC];
  memcpy(key, spec, sizeof key);
  key[6] = d->one_sg;
  key[7] = d->wg_rows;
  if ((s = dk_vk_begin(d)) != DK_OK || (s = dk_vk_pipeline(d, spv, key, &pipe)) != DK_OK) return s;
  f = &d->frames[d->rec];
  dk_vk_hazard(d, f->cmd, a->rd, a->nrd, a->wr, a->nwr);
  if (f->bound != pipe) {
    d->fn.CmdBindPipeline(f->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
    f->bound = pipe;
  }
  memset(w, 0, sizeof w);
  if (dk_vk_reads_grids(spv)) {
    for (i = a->nbuf; i < 4; i++) dk_vk_arg_dummy(d, a, i);
    dk_vk_arg_raw(a, 4, d->grids->buf, 0, d->grids->size);
    a->tview[2] = d->grid_view;   /* NULL where the device reads no texels */
  }
  for (i = 0; i < a->nbuf; i++) {
    w[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    w[i].dstBinding = (uint32_t)i;
    w[i].descriptorCount = 1;
    w[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w[i].pBufferInfo = &a->buf[i];
  }
  nw = a->nbuf;
  for (i = 0; i < DK_VK_TEX; i++)
    if (a->tview[i]) {
      w[nw].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
      w[nw].dstBinding = (uint32_t)(DK_VK_MAX_BIND + i);
      w[nw].descriptorCount = 1;
      w[nw].descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
      w[nw].pTexelBufferView = &a->tview[i];
      nw++;
    }
  if (d->push) {
    d->fn.CmdPushDescriptorSetKHR(f->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->layout, 0, (uint32_t)nw, w);
  } else {
    VkDescriptorSetAllocateInfo ai;
    VkDescriptorSet set;
    VkResult r;
    memset(&ai, 0, sizeof ai);
    ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    ai.descriptorPool = f->dpool;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &d->dsl;
    if ((r = d->fn.AllocateDescriptorSets(d->dev, &ai, &set)) != VK_SUCCESS)
      return dk_vk_fail(d, r, "vkAllocateDescriptorSets");
    for (i = 0; i < nw; i++) w[i].dstSet = set;
    d->fn.UpdateDescriptorSets(d->dev, (uint32_t)nw, w, 0, NULL);
    d->fn.CmdBindDescriptorSets(f->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->layout, 0, 1, &set, 0, NULL);
  }
  d->fn.CmdPushConstants(f->cmd, d->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, pc_size, pc);
  d->fn.CmdDispatch(f->cmd, gx, gy, gz);
  dk_vk_touch(d, a);
  if (++f->ndispatch >= d->batch && !d->hold) return dk_vk_submit(d);
  return DK_OK;
}

/* record a buffer copy */
static dk_status dk_vk_copy_cmd(dk_vk_device *d, dk_vk_block *src, VkDeviceSize so, dk_vk_mem *ms, dk_vk_block *dst,
                                VkDeviceSize dof, dk_vk_mem *md, VkDeviceSize n) {
  VkBufferCopy region;
  dk_vk_span rs, ws;
  dk_vk_frame *f;
  dk_status s;
  if (n == 0) return DK_OK;
  if ((s = dk_vk_begin(d)) != DK_OK) return s;
  f = &d->frames[d->rec];
  rs.buf = src->buf; rs.a = so; rs.b = so + n;
  ws.buf = dst->buf; ws.a = dof; ws.b = dof + n;
  dk_vk_hazard(d, f->cmd, &rs, 1, &ws, 1);
  region.srcOffset = so;
  region.dstOffset = dof;
  region.size = n;
  d->fn.CmdCopyBuffer(f->cmd, src->buf, dst->buf, 1, &region);
  if (ms) ms->last_use = f->serial;
  if (md) md->last_use = f->serial;
  if (++f->ndispatch >= d->batch && !d->hold) return dk_vk_submit(d);
  return DK_OK;
}

/* A frame releases the ring space up to where the ring stood when it was
 * submitted, so all the copies of one ring chunk must sit in one frame. */
static void dk_vk_ring_copies_begin(dk_vk_device *d) { d->hold++; }
static dk_status dk_vk_ring_copies_end(dk_vk_device *d, dk_status s) {
  d->hold--;
  if (s == DK_OK && !d->hold && d->rec >= 0 && d->frames[d->rec].ndispatch >= d->batch) s = dk_vk_submit(d);
  return s;
}

/* groups for a grid-stride shader, spread over x and y */
static void dk_vk_grid(uint64_t groups, uint32_t cap, uint32_t *gx, uint32_t *gy) {
  if (cap && groups > cap) groups = cap;
  if (groups == 0) groups = 1;
  *gx = groups > 65535 ? 65535 : (uint32_t)groups;
  *gy = (uint32_t)((groups + *gx - 1) / *gx);
}

/* ==== staging ring and transfers ========================================== */

/* n bytes of the host-visible ring, free once the frame that uses them has
 * finished; waits for older frames when the ring is full. n <= ring/2. */
static dk_status dk_vk_ring_alloc(dk_vk_device *d, VkDeviceSize n, VkDeviceSize *off) {
  VkDeviceSize size;
  dk_status s;
  if (!d->ring) {
    VkResult r = dk_vk_block_create(d, DK_VK_RING, d->mt_host, 1, &d->ring);
    if (r != VK_SUCCESS) return dk_vk_fail(d, r, "creating the staging buffer");
    d->ring_head = d->ring_tail = 0;
  }
  /* a graph holds ops only (the core refuses transfers while recording), so
   * this is a bug, not a wait: the loop below would never end */
  if (d->grec) return dk__error(DK_ERR_BACKEND, "vulkan: staging memory asked for while recording a graph");
  size = d->ring->size;
  n = dk_vk_round(n, d->ph->align);
  for (;;) {
    VkDeviceSize pos = d->ring_head % size, skip = pos + n > size ? size - pos : 0;
    dk_vk_frame *f;
    if (d->ring_head + skip + n - d->ring_tail <= size) {
      d->ring_head += skip;
      *off = d->ring_head % size;
      d->ring_head += n;
      return DK_OK;
    }
    if ((f = dk_vk_oldest(d)) != NULL) {
      if ((s = dk_vk_retire(d, f->serial)) != DK_OK) return s;
    } else if (d->rec >= 0) {
      if ((s = dk_vk_submit(d)) != DK_OK) return s;
    } else {
      d->ring_tail = d->ring_head;  /* nothing in flight: all of it is free */
    }
  }
}

static dk_vk_device *dk_vk_dev_of(const dk_vk_mem *m) { return dk_vk.dev[m->dev]; }

/* host memcpy into every copy of bytes [off, off+n) (segments overlap) */
static void dk_vk_host_write(dk_vk_mem *m, VkDeviceSize off, const void *src, VkDeviceSize n) {
  int i;
  if (m->nseg <= 1) {
    memcpy(m->block->map + m->off + off, src, (size_t)n);
    return;
  }
  for (i = 0; i < m->nseg; i++) {
    VkDeviceSize s0 = (VkDeviceSize)i * m->seg_stride, s1 = s0 + m->seg[i]->size;
    VkDeviceSize a = off > s0 ? off : s0, b = off + n < s1 ? off + n : s1;
    if (a < b) memcpy(m->seg[i]->map + (a - s0), (const char *)src + (a - off), (size_t)(b - a));
  }
}

static void dk_vk_host_read(dk_vk_mem *m, VkDeviceSize off, void *dst, VkDeviceSize n) {
  while (n) {
    int i = dk_vk_seg_of(m, off, off + 1);
    VkDeviceSize s0 = m->nseg > 1 ? (VkDeviceSize)i * m->seg_stride : 0;
    dk_vk_block *b = m->nseg > 1 ? m->seg[i] : m->block;
    VkDeviceSize base = m->nseg > 1 ? 0 : m->off, k = s0 + b->size - off;
    if (m->nseg <= 1) k = n;
    if (k > n) k = n;
    memcpy(dst, b->map + base + (off - s0), (size_t)k);
    dst = (char *)dst + k;
    off += k;
    n -= k;
  }
}

/* record copies from a block range into bytes [off, off+n) of m, every copy */
static dk_status dk_vk_cmd_write(dk_vk_device *d, dk_vk_block *src, VkDeviceSize so, dk_vk_mem *ms, dk_vk_mem *m,
                                 VkDeviceSize off, VkDeviceSize n) {
  int i;
  if (m->nseg <= 1) return dk_vk_copy_cmd(d, src, so, ms, m->block, m->off + off, m, n);
  for (i = 0; i < m->nseg; i++) {
    VkDeviceSize s0 = (VkDeviceSize)i * m->seg_stride, s1 = s0 + m->seg[i]->size;
    VkDeviceSize a = off > s0 ? off : s0, b = off + n < s1 ? off + n : s1;
    dk_status s;
    if (a < b && (s = dk_vk_copy_cmd(d, src, so + (a - off), ms, m->seg[i], a - s0, m, b - a)) != DK_OK) return s;
  }
  return DK_OK;
}

/* record copies of bytes [off, off+n) of m into dst (a block range, or a
 * tensor when dm is set) */
static dk_status dk_vk_cmd_read(dk_vk_device *d, dk_vk_mem *m, VkDeviceSize off, VkDeviceSize n, dk_vk_block *dst,
                                VkDeviceSize dof, dk_vk_mem *dm, VkDeviceSize dm_off) {
  while (n) {
    int i = dk_vk_seg_of(m, off, off + 1);
    VkDeviceSize s0 = m->nseg > 1 ? (VkDeviceSize)i * m->seg_stride : 0, k = n;
    dk_vk_block *b = m->nseg > 1 ? m->seg[i] : m->block;
    VkDeviceSize base = m->nseg > 1 ? 0 : m->off;
    dk_status s;
    if (m->nseg > 1 && s0 + b->size - off < k) k = s0 + b->size - off;
    if (dm) s = dk_vk_cmd_write(d, b, base + (off - s0), m, dm, dm_off, k);
    else s = dk_vk_copy_cmd(d, b, base + (off - s0), m, dst, dof, NULL, k);
    if (s != DK_OK) return s;
    off += k;
    dof += k;
    dm_off += k;
    n -= k;
  }
  return DK_OK;
}

static dk_status dk_vk_upload(dk_storage *st, size_t off, const void *src, size_t n) {
  dk_vk_mem *m = (dk_vk_mem *)st->ptr;
  dk_vk_device *d = dk_vk_dev_of(m);
  VkDeviceSize chunk = DK_VK_RING / 2, done = 0;
  dk_status s;
  if (d->lost) return dk_vk_begin(d);
  if (d->direct && m->last_use <= d->done) {
    /* nothing in flight touches it: write it where it lives */
    dk_vk_host_write(m, off, src, n);
    return DK_OK;
  }
  while (done < n) {
    VkDeviceSize k = n - done < chunk ? n - done : chunk, ro;
    if ((s = dk_vk_ring_alloc(d, k, &ro)) != DK_OK) return s;
    memcpy(d->ring->map + ro, (const char *)src + done, (size_t)k);
    dk_vk_ring_copies_begin(d);
    s = dk_vk_ring_copies_end(d, dk_vk_cmd_write(d, d->ring, ro, NULL, m, off + done, k));
    if (s != DK_OK) return s;
    done += k;
  }
  return DK_OK;
}

static dk_status dk_vk_download(dk_storage *st, size_t off, void *dst, size_t n) {
  dk_vk_mem *m = (dk_vk_mem *)st->ptr;
  dk_vk_device *d = dk_vk_dev_of(m);
  VkDeviceSize chunk = DK_VK_RING / 2, done = 0;
  dk_status s;
  if ((s = dk_vk_finish(d)) != DK_OK) return s;
  if (d->direct) {
    dk_vk_host_read(m, off, dst, n);
  } else {
    while (done < n) {
      VkDeviceSize k = n - done < chunk ? n - done : chunk, ro;
      if ((s = dk_vk_ring_alloc(d, k, &ro)) != DK_OK) return s;
      dk_vk_ring_copies_begin(d);
      s = dk_vk_ring_copies_end(d, dk_vk_cmd_read(d, m, off + done, k, d->ring, ro, NULL, 0));
      if (s != DK_OK) return s;
      if ((s = dk_vk_finish(d)) != DK_OK) return s;
      memcpy((char *)dst + done, d->ring->map + ro, (size_t)k);
      done += k;
    }
  }
  return dk_vk_take_pending(d);
}

static dk_status dk_vk_copy(dk_storage *dst, size_t doff, dk_storage *src, size_t soff, size_t n) {
  dk_vk_mem *md = (dk_vk_mem *)dst->ptr, *ms = (dk_vk_mem *)src->ptr;
  dk_vk_device *dd = dk_vk_dev_of(md), *sd = dk_vk_dev_of(ms);
  VkDeviceSize chunk = DK_VK_RING / 2, done = 0;
  dk_status s;
  if (dd == sd) {
    if (dd->lost) return dk_vk_begin(dd);
    return dk_vk_cmd_read(dd, ms, soff, n, NULL, 0, md, doff);
  }
  /* two VkDevices share no memory: through the host */
  if (dd->direct && sd->direct) {
    if ((s = dk_vk_finish(sd)) != DK_OK || (s = dk_vk_take_pending(sd)) != DK_OK) return s;
    if (md->last_use > dd->done && (s = dk_vk_finish(dd)) != DK_OK) return s;
    while (done < n) {
      /* read piecewise from the source's segments, write every destination copy */
      VkDeviceSize k = n - done, s0;
      int i = dk_vk_seg_of(ms, soff + done, soff + done + 1);
      dk_vk_block *b = ms->nseg > 1 ? ms->seg[i] : ms->block;
      s0 = ms->nseg > 1 ? (VkDeviceSize)i * ms->seg_stride : 0;
      if (ms->nseg > 1 && s0 + b->size - (soff + done) < k) k = s0 + b->size - (soff + done);
      dk_vk_host_write(md, doff + done, b->map + (ms->nseg > 1 ? 0 : ms->off) + (soff + done - s0), k);
      done += k;
    }
    return DK_OK;
  }
  while (done < n) {
    VkDeviceSize k = n - done < chunk ? n - done : chunk, ro;
    if ((s = dk_vk_ring_alloc(dd, k, &ro)) != DK_OK) return s;
    if ((s = dk_vk_download(src, soff + done, dd->ring->map + ro, (size_t)k)) != DK_OK) return s;
    dk_vk_ring_copies_begin(dd);
    s = dk_vk_ring_copies_end(dd, dk_vk_cmd_write(dd, dd->ring, ro, NULL, md, doff + done, k));
    if (s != DK_OK) return s;
    done += k;
  }
  return DK_OK;
}

static dk_status dk_vk_sync(dk_device dv) {
  dk_vk_device *d = dk_vk.dev[dv.index];
  dk_status s = dk_vk_finish(d);
  if (s != DK_OK) return s;
  return dk_vk_take_pending(d);
}

/* ==== dk_profile: timestamps around each op in the command buffer ========= */

#define DK_VK_PROF_MAX 16384   /* marks between two syncs; past them ops go untimed */

/* A timestamp after everything recorded so far has finished (bottom of
 * pipe): an op's time is then from the end of the work before it to the
 * end of its own, the barrier it waits at included. */
static int dk_vk_prof_mark(dk_device dv) {
  dk_vk_device *d = dk_vk.dev[dv.index];
  dk_vk_frame *f;
  if (!d || !d->ph->ts_bits || d->prof_failed) return -2;   /* the core times the op by the host clock */
  if (d->prof_n >= DK_VK_PROF_MAX) return -1;
  if (!d->prof_pool) {
    VkQueryPoolCreateInfo qi;
    memset(&qi, 0, sizeof qi);
    qi.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = DK_VK_PROF_MAX;
    if (d->fn.CreateQueryPool(d->dev, &qi, NULL, &d->prof_pool) != VK_SUCCESS) {
      d->prof_pool = VK_NULL_HANDLE;
      d->prof_failed = 1;
      return -2;
    }
  }
  if (dk_vk_begin(d) != DK_OK) return -1;
  f = &d->frames[d->rec];
  if (d->prof_n == 0) d->fn.CmdResetQueryPool(f->cmd, d->prof_pool, 0, DK_VK_PROF_MAX);
  d->fn.CmdWriteTimestamp(f->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, d->prof_pool, (uint32_t)d->prof_n);
  return d->prof_n++;
}

static double dk_vk_prof_elapsed(dk_device dv, int a, int b) {
  dk_vk_device *d = dk_vk.dev[dv.index];
  uint64_t t[2], mask;
  if (!d || !d->prof_pool || a < 0 || b < 0 || a >= d->prof_n || b >= d->prof_n) return -1.0;
  if (d->fn.GetQueryPoolResults(d->dev, d->prof_pool, (uint32_t)a, 1, sizeof t[0], &t[0], sizeof t[0], VK_QUERY_RESULT_64_BIT) != VK_SUCCESS ||
      d->fn.GetQueryPoolResults(d->dev, d->prof_pool, (uint32_t)b, 1, sizeof t[1], &t[1], sizeof t[1], VK_QUERY_RESULT_64_BIT) != VK_SUCCESS)
    return -1.0;
  mask = d->ph->ts_bits >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << d->ph->ts_bits) - 1);
  return (double)((t[1] - t[0]) & mask) * (double)d->ph->props.limits.timestampPeriod * 1e-9;
}

static void dk_vk_prof_reset(dk_device dv) {
  dk_vk_device *d = dk_vk.dev[dv.index];
  if (d) d->prof_n = 0;
}

/* ==== allocation ========================================================== */

static VkDeviceSize dk_vk_heap_size(dk_vk_device *d) {
  return d->ph->mem.memoryHeaps[d->ph->mem.memoryTypes[d->mt_dev].heapIndex].size;
}

static dk_status dk_vk_oom(dk_vk_device *d, const char *name, size_t nbytes, VkResult r) {
  return dk__error(DK_ERR_OUT_OF_MEMORY,
                   "out of memory on %s: tensor '%s' needs %zu bytes (%.1f MiB); devkit holds %llu bytes on this "
                   "GPU, whose memory heap has %llu%s%s",
                   dk_device_name(dk_vk_devid(d->logical)), name, nbytes, (double)nbytes / 1048576.0,
                   (unsigned long long)__atomic_load_n(&d->ph->held, __ATOMIC_RELAXED), (unsigned long long)dk_vk_heap_size(d),
                   r != VK_SUCCESS ? "; driver: " : "",
                   r != VK_SUCCESS ? dk_vk_result(r) : "");
}

/* the blocks of a segmented tensor: dedicated, overlapping by
 * DK_VK_SEG_OVERLAP so that a row up to that size sits whole in one */
static VkResult dk_vk_alloc_segments(dk_vk_device *d, dk_vk_mem *m, VkDeviceSize n) {
  VkDeviceSize cap = d->max_alloc - d->max_alloc % d->ph->align, stride = cap - DK_VK_SEG_OVERLAP;
  int k = (int)((n - cap + stride - 1) / stride) + 1, i;
  m->seg = (dk_vk_block **)calloc((size_t)k, sizeof *m->seg);
  if (!m->seg) return VK_ERROR_OUT_OF_HOST_MEMORY;
  m->nseg = k;
  m->seg_stride = stride;
  for (i = 0; i < k; i++) {
    VkDeviceSize s0 = (VkDeviceSize)i * stride, sz = n - s0 < cap ? n - s0 : cap;
    VkResult r = dk_vk_new_block(d, dk_vk_round(sz, d->ph->align), 1, &m->seg[i]);
    if (r != VK_SUCCESS) {
      while (i-- > 0) {
        dk_vk_unlink_block(d, m->seg[i]);
        dk_vk_block_destroy(d, m->seg[i]);
      }
      free(m->seg);
      m->seg = NULL;
      m->nseg = 1;
      return r;
    }
  }
  return VK_SUCCESS;
}

static VkResult dk_vk_alloc_mem(dk_vk_device *d, dk_vk_mem *m, VkDeviceSize n) {
  if (n > d->max_alloc) return dk_vk_alloc_segments(d, m, n);
  return dk_vk_suballoc(d, n, &m->block, &m->off);
}

static dk_status dk_vk_alloc(dk_device dv, size_t nbytes, const char *name, dk_storage *st) {
  dk_vk_device *d = dk_vk.dev[dv.index];
  dk_vk_mem *m = (dk_vk_mem *)calloc(1, sizeof *m);
  VkDeviceSize n = dk_vk_round(nbytes ? nbytes : 1, d->ph->align);
  VkResult r = VK_SUCCESS;
  if (!m) return dk__error(DK_ERR_OUT_OF_MEMORY, "dk_tensor_new '%s' on %s: out of host memory", name, dk_device_name(dv));
  m->dev = dv.index;
  m->size = nbytes;
  m->nseg = 1;
  m->st = st;
  if (nbytes) {
    int attempt;
    VkDeviceSize heap = dk_vk_heap_size(d);
    if (n > heap) {
      free(m);
      return dk_vk_oom(d, name, nbytes, VK_SUCCESS);
    }
    for (attempt = 0; attempt < 2; attempt++) {
      r = dk_vk_alloc_mem(d, m, n);
      if (r != VK_ERROR_OUT_OF_DEVICE_MEMORY && r != VK_ERROR_OUT_OF_HOST_MEMORY) break;
      /* memory that finished work frees, and empty blocks, may make room */
      if (attempt == 0 && dk_vk_finish(d) == DK_OK) dk_vk_trim(d);
    }
    if (r != VK_SUCCESS) {
      free(m);
      if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) return dk_vk_oom(d, name, nbytes, r);
      return dk_vk_fail(d, r, "allocating device memory");
    }
  }
  dk_vk_mem_link(d, m);
  st->ptr = m;
  return DK_OK;
}

static void dk_vk_defer(dk_vk_device *d, dk_vk_block *b, VkDeviceSize off, VkDeviceSize size, uint64_t serial) {
  if (d->ndefer == d->capdefer) {
    int cap = d->capdefer ? d->capdefer * 2 : 64;
    dk_vk_deferred *p = (dk_vk_deferred *)realloc(d->defer, sizeof *p * (size_t)cap);
    if (!p) return;  /* leaks the range rather than freeing memory in use */
    d->defer = p;
    d->capdefer = cap;
  }
  d->defer[d->ndefer].block = b;
  d->defer[d->ndefer].off = off;
  d->defer[d->ndefer].size = size;
  d->defer[d->ndefer].serial = serial;
  d->ndefer++;
}

static void dk_vk_release(dk_storage *st) {
  dk_vk_mem *m = (dk_vk_mem *)st->ptr;
  dk_vk_device *d;
  if (!m) return;
  st->ptr = NULL;
  d = dk_vk_dev_of(m);
  if (d && d->open) {
    int i, later;
    dk_vk_mem_unlink(d, m);
    if (m->last_use > d->done) dk_vk_retire(d, 0);
    later = m->last_use > d->done;
    if (m->size) {
      VkDeviceSize n = dk_vk_round(m->size, d->ph->align);
      for (i = 0; i < m->nseg; i++) {
        dk_vk_block *b = m->nseg > 1 ? m->seg[i] : m->block;
        VkDeviceSize off = m->nseg > 1 ? 0 : m->off, sz = m->nseg > 1 ? b->size : n;
        if (later) dk_vk_defer(d, b, off, sz, m->last_use);
        else dk_vk_give_back(d, b, off, sz);
      }
    }
  }
  free(m->seg);
  free(m);
}

/* ==== graphs: a reusable command buffer ====================================
 * dk_graph on Vulkan: the ops of a recording go into a secondary command
 * buffer of the graph's own, recorded as in any frame (through the frame
 * slot past the ring, frames[DK_VK_FRAMES], never submitted); a replay is
 * one vkCmdExecuteCommands in the frame being recorded, between full
 * barriers, so it costs what one op costs and shares the frame's submit.
 * Needs push descriptors (descriptor sets from a frame's pool die with the
 * frame); without them the core re-runs the calls. */
typedef struct { dk_storage st; dk_tensor t; } dk_vk_scr;
typedef struct dk_vk_graph {
  VkCommandBuffer cmd;
  uint64_t last;                    /* serial of the frame of its latest replay; 0 before the first */
  int ndispatch;                    /* its dispatches, for the batching */
  int nchecks;
  dk_vk_check *checks;              /* their words are frames[DK_VK_FRAMES]'s, shared by all graphs */
  dk_vk_mem **mems;                 /* what its commands touch: their last use is each replay's frame */
  int nmem, capmem;
  dk_vk_scr **scr;                  /* device scratch made for its ops (dk_vk_scratch) */
  int nscr, capscr;
} dk_vk_graph;

static int dk_vk_grow(void **p, int *cap, size_t elem) {
  int c = *cap ? 2 * *cap : 32;
  void *q = realloc(*p, elem * (size_t)c);
  if (!q) return 0;
  *p = q;
  *cap = c;
  return 1;
}

static void dk_vk_graph_touch(dk_vk_device *d, dk_vk_args *a) {
  dk_vk_graph *g = d->grec;
  int i, j;
  for (i = 0; i < a->nmem; i++) {
    for (j = g->nmem - 1; j >= 0 && g->mems[j] != a->mem[i]; j--) {}
    if (j >= 0) continue;
    /* out of host memory: this one's last use is not moved by replays, and
     * freeing it could give its memory back while a replay still reads it;
     * dk_vk_graph_free waits for the last replay, which covers the graph's
     * own life, and the caller's tensors are held by the core's records */
    if (g->nmem == g->capmem && !dk_vk_grow((void **)&g->mems, &g->capmem, sizeof *g->mems)) continue;
    g->mems[g->nmem++] = a->mem[i];
  }
}

static void *dk_vk_graph_begin(dk_device dv) {
  dk_vk_device *d = dk_vk.dev[dv.index];
  VkCommandBufferAllocateInfo ai;
  VkCommandBufferInheritanceInfo ii;
  VkCommandBufferBeginInfo bi;
  dk_vk_graph *g;
  dk_vk_frame *f = &d->frames[DK_VK_FRAMES];
  /* what is recorded so far is submitted, so that d->rec is free for ours */
  if (!d->push || d->lost || dk_vk_submit(d) != DK_OK) return NULL;
  if (!(g = (dk_vk_graph *)calloc(1, sizeof *g))) return NULL;
  memset(&ai, 0, sizeof ai);
  ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ai.commandPool = d->pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_SECONDARY;
  ai.commandBufferCount = 1;
  memset(&ii, 0, sizeof ii);
  ii.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO;
  memset(&bi, 0, sizeof bi);
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;   /* in several frames in flight, or twice in one */
  bi.pInheritanceInfo = &ii;
  if (d->fn.AllocateCommandBuffers(d->dev, &ai, &g->cmd) != VK_SUCCESS) { free(g); return NULL; }
  if (d->fn.BeginCommandBuffer(g->cmd, &bi) != VK_SUCCESS) {
    d->fn.FreeCommandBuffers(d->dev, d->pool, 1, &g->cmd);
    free(g);
    return NULL;
  }
  memset(f, 0, sizeof *f);
  f->cmd = g->cmd;
  f->state = 1;
  d->rec = DK_VK_FRAMES;
  d->grec = g;
  d->nrd = d->nwr = 0;   /* the replay's barrier comes first */
  return g;
}

/* the recording stops here (ended or not); the device's queue is next */
static void dk_vk_graph_detach(dk_vk_device *d, dk_vk_graph *g) {
  dk_vk_frame *f = &d->frames[DK_VK_FRAMES];
  if (d->grec != g) return;
  g->nchecks = f->nchecks;
  g->ndispatch = f->ndispatch;
  if (g->nchecks && (g->checks = (dk_vk_check *)malloc(sizeof *g->checks * (size_t)g->nchecks)) != NULL)
    memcpy(g->checks, f->checks, sizeof *g->checks * (size_t)g->nchecks);
  memset(f, 0, sizeof *f);
  d->grec = NULL;
  d->rec = -1;
  d->full_barrier = 1;
}

static dk_status dk_vk_graph_end(dk_device dv, void *h) {
  dk_vk_device *d = dk_vk.dev[dv.index];
  dk_vk_graph *g = (dk_vk_graph *)h;
  VkResult r;
  dk_vk_graph_detach(d, g);
  if (g->nchecks && !g->checks) return dk__error(DK_ERR_OUT_OF_MEMORY, "vulkan: no host memory for a graph's checks");
  if ((r = d->fn.EndCommandBuffer(g->cmd)) != VK_SUCCESS) return dk_vk_fail(d, r, "vkEndCommandBuffer (graph)");
  return DK_OK;
}

static dk_status dk_vk_graph_replay(dk_device dv, void *h) {
  dk_vk_device *d = dk_vk.dev[dv.index];
  dk_vk_graph *g = (dk_vk_graph *)h;
  dk_vk_frame *f;
  dk_status s;
  int i;
  if ((s = dk_vk_begin(d)) != DK_OK) return s;
  if (g->nchecks) {
    /* the graphs' status words serve one replay at a time, read when its
     * frame completes: an earlier replay's frame is finished first */
    if (d->gcheck && d->gcheck > d->done) {
      if (d->gcheck == d->frames[d->rec].serial && (s = dk_vk_submit(d)) != DK_OK) return s;
      if ((s = dk_vk_retire(d, d->gcheck)) != DK_OK || (s = dk_vk_begin(d)) != DK_OK) return s;
    }
    if (d->frames[d->rec].nchecks + g->nchecks > DK_VK_CHECKS &&
        ((s = dk_vk_submit(d)) != DK_OK || (s = dk_vk_begin(d)) != DK_OK))
      return s;
    memset(d->status->map + (size_t)DK_VK_FRAMES * DK_VK_CHECKS * 16, 0, (size_t)g->nchecks * 16);
  }
  f = &d->frames[d->rec];
  if (g->nchecks) {
    memcpy(f->checks + f->nchecks, g->checks, sizeof *g->checks * (size_t)g->nchecks);
    f->nchecks += g->nchecks;
    d->gcheck = f->serial;
  }
  dk_vk_full_barrier(d, f->cmd);
  d->fn.CmdExecuteCommands(f->cmd, 1, &g->cmd);
  /* the pipeline and push descriptors bound after it are the secondary's */
  f->bound = VK_NULL_HANDLE;
  d->full_barrier = 1;
  for (i = 0; i < g->nmem; i++) g->mems[i]->last_use = f->serial;
  g->last = f->serial;
  f->ndispatch += g->ndispatch;
  if (f->ndispatch >= d->batch && !d->hold) return dk_vk_submit(d);
  return DK_OK;
}

static void dk_vk_graph_free(dk_device dv, void *h, int gone) {
  dk_vk_graph *g = (dk_vk_graph *)h;
  int i;
  if (!g) return;
  if (!gone) {
    dk_vk_device *d = dk_vk.dev[dv.index];
    dk_vk_graph_detach(d, g);
    /* its buffer and scratch go once the frames that run it are done */
    if (g->last > d->done) {
      if (d->rec >= 0 && d->frames[d->rec].serial <= g->last) dk_vk_submit(d);
      dk_vk_retire(d, g->last);
    }
    d->fn.FreeCommandBuffers(d->dev, d->pool, 1, &g->cmd);
    for (i = 0; i < g->nscr; i++) dk_vk_release(&g->scr[i]->st);
  }
  /* else the device closed with dk_shutdown, and its memory went with it */
  for (i = 0; i < g->nscr; i++) free(g->scr[i]);
  free(g->scr);
  free(g->mems);
  free(g->checks);
  free(g);
}

/* ==== devices ============================================================= */

/* ---- the pipeline cache ---------------------------------------------------------
 * Creating pipelines compiles SPIR-V in the driver: 0.41 s for a first
 * prompt on NVIDIA's driver, seconds of LLVM on lavapipe. The driver's
 * pipeline cache is kept in a file per device and driver version
 * ($XDG_CACHE_HOME/devkit, else ~/.cache/devkit; DEVKIT_VULKAN_CACHE=<dir>
 * moves it, =off turns it off), read when a device opens and rewritten
 * (atomically: a temporary file, then rename) when it closes after making
 * pipelines. Any file whose header does not name this device (Vulkan's
 * VkPipelineCacheHeaderVersionOne: size, version 1, vendor, device, cache
 * UUID) is ignored; a cache is only ever an optimization, so every failure
 * here is silent and deleting the folder is always safe. */
static int dk_vk_cache_path(const dk_vk_device *d, char *path, size_t cap, int make_dirs) {
  const VkPhysicalDeviceProperties *pp = &d->ph->props;
  const char *e = getenv("DEVKIT_VULKAN_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  char dir[768];
  size_t n;
  int i;
  if (e && (!strcmp(e, "off") || !strcmp(e, "0"))) return 0;
  if (e && *e) snprintf(dir, sizeof dir, "%.700s", e);
  else if (xdg && *xdg) snprintf(dir, sizeof dir, "%.700s/devkit", xdg);
  else if (home && *home) snprintf(dir, sizeof dir, "%.680s/.cache/devkit", home);
  else return 0;
  if (make_dirs) {
    /* each missing folder of the path, as mkdir -p */
    for (i = 1; dir[i]; i++)
      if (dir[i] == '/') { dir[i] = 0; mkdir(dir, 0755); dir[i] = '/'; }
    mkdir(dir, 0755);
  }
  n = (size_t)snprintf(path, cap, "%s/vulkan-%04x-%04x-%08x-", dir, pp->vendorID, pp->deviceID, pp->driverVersion);
  for (i = 0; i < (int)VK_UUID_SIZE && n + 3 < cap; i++) n += (size_t)snprintf(path + n, cap - n, "%02x", pp->pipelineCacheUUID[i]);
  return n + 5 < cap && snprintf(path + n, cap - n, ".bin") == 4;
}

/* the cache file's bytes when its header names this device, else NULL */
static void *dk_vk_cache_read(const dk_vk_device *d, const char *path, size_t *size) {
  const VkPhysicalDeviceProperties *pp = &d->ph->props;
  unsigned char *buf = NULL;
  uint32_t h[4];
  long n;
  FILE *f;
  *size = 0;
  if (!(f = fopen(path, "rb"))) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 32 && n <= (256L << 20) && fseek(f, 0, SEEK_SET) == 0 &&
      (buf = (unsigned char *)malloc((size_t)n)) != NULL && fread(buf, 1, (size_t)n, f) == (size_t)n) {
    memcpy(h, buf, sizeof h);
    if (h[0] >= 32 && h[0] <= (uint32_t)n && h[1] == 1 && h[2] == pp->vendorID && h[3] == pp->deviceID &&
        !memcmp(buf + 16, pp->pipelineCacheUUID, VK_UUID_SIZE)) {
      fclose(f);
      *size = (size_t)n;
      return buf;
    }
  }
  free(buf);
  fclose(f);
  return NULL;
}

static void dk_vk_cache_open(dk_vk_device *d) {
  VkPipelineCacheCreateInfo ci;
  size_t n = 0;
  char path[1024];
  void *data;
  if (!dk_vk_cache_path(d, path, sizeof path, 0)) return;   /* off, or no cache folder to use */
  data = dk_vk_cache_read(d, path, &n);
  memset(&ci, 0, sizeof ci);
  ci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  ci.initialDataSize = n;
  ci.pInitialData = data;
  if (d->fn.CreatePipelineCache(d->dev, &ci, NULL, &d->pcache) != VK_SUCCESS) {
    /* the driver refused the data: start empty */
    ci.initialDataSize = 0;
    ci.pInitialData = NULL;
    if (d->fn.CreatePipelineCache(d->dev, &ci, NULL, &d->pcache) != VK_SUCCESS) d->pcache = VK_NULL_HANDLE;
  }
  free(data);
}

static void dk_vk_cache_save(dk_vk_device *d) {
  char path[1024], tmp[1100];
  size_t n = 0;
  void *data;
  FILE *f;
  int ok;
  if (d->fn.GetPipelineCacheData(d->dev, d->pcache, &n, NULL) != VK_SUCCESS || n < 32 || n > (256u << 20)) return;
  if (!(data = malloc(n))) return;
  if (d->fn.GetPipelineCacheData(d->dev, d->pcache, &n, data) == VK_SUCCESS && dk_vk_cache_path(d, path, sizeof path, 1)) {
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    if ((f = fopen(tmp, "wb")) != NULL) {
      ok = fwrite(data, 1, n, f) == n;
      ok = fclose(f) == 0 && ok;
      if (!ok || rename(tmp, path) != 0) remove(tmp);
    }
  }
  free(data);
}

static void dk_vk_close_device(dk_vk_device *d) {
  int i;
  if (!d) return;
  if (d->dev) {
    if (d->rec >= 0) dk_vk_submit(d);
    d->fn.DeviceWaitIdle(d->dev);
    while (d->live) {
      /* tensors the program did not free: their records go with the device */
      dk_vk_mem *m = d->live;
      dk_vk_mem_unlink(d, m);
      if (m->st) m->st->ptr = NULL;
      free(m->seg);
      free(m);
    }
    for (i = 0; i < d->cappipes; i++)
      if (d->pipes[i].pipe) d->fn.DestroyPipeline(d->dev, d->pipes[i].pipe, NULL);
    if (d->pcache) {
      if (d->pcache_new) dk_vk_cache_save(d);
      d->fn.DestroyPipelineCache(d->dev, d->pcache, NULL);
    }
    if (d->layout) d->fn.DestroyPipelineLayout(d->dev, d->layout, NULL);
    if (d->dsl) d->fn.DestroyDescriptorSetLayout(d->dev, d->dsl, NULL);
    for (i = 0; i < DK_VK_FRAMES; i++) {
      if (d->frames[i].fence) d->fn.DestroyFence(d->dev, d->frames[i].fence, NULL);
      if (d->frames[i].dpool) d->fn.DestroyDescriptorPool(d->dev, d->frames[i].dpool, NULL);
    }
    if (d->pool) d->fn.DestroyCommandPool(d->dev, d->pool, NULL);
    if (d->prof_pool) d->fn.DestroyQueryPool(d->dev, d->prof_pool, NULL);
    while (d->blocks) {
      dk_vk_block *b = d->blocks;
      d->blocks = b->next;
      dk_vk_block_destroy(d, b);
    }
    dk_vk_block_destroy(d, d->ring);
    dk_vk_block_destroy(d, d->status);
    dk_vk_block_destroy(d, d->dummy);
    dk_vk_block_destroy(d, d->grids);
    d->fn.DestroyDevice(d->dev, NULL);
  }
  free(d->defer);
  free(d->pipes);
  free(d);
}

static dk_status dk_vk_open(int logical, int physical, int slot) {
  dk_vk_phys *ph = &dk_vk.phys[physical];
  dk_vk_device *d;
  VkDeviceQueueCreateInfo qi;
  VkDeviceCreateInfo ci;
  VkPhysicalDeviceFeatures2 f2;
  VkPhysicalDeviceVulkan11Features f11;
  VkPhysicalDeviceShaderIntegerDotProductFeatures fdot;
  VkPhysicalDeviceVulkan12Features f12;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV fcm;
  VkDescriptorSetLayoutBinding lb[DK_VK_MAX_BIND + DK_VK_TEX];
  VkDescriptorSetLayoutCreateInfo li;
  VkPushConstantRange pcr;
  VkPipelineLayoutCreateInfo pli;
  VkCommandPoolCreateInfo cpi;
  VkCommandBufferAllocateInfo cai;
  VkCommandBuffer cmds[DK_VK_FRAMES];
  VkFenceCreateInfo fi;
  VkBufferCreateInfo bi;
  VkBuffer probe_buf;
  VkMemoryRequirements req;
  const char *exts[4];
  uint32_t ne = 0, i;
  float prio = 1.0f;
  VkResult r;
  int t;
  unsigned long long env;
  const char *e;

  d = (dk_vk_device *)calloc(1, sizeof *d);
  if (!d) return dk__error(DK_ERR_OUT_OF_MEMORY, "opening vulkan:%d: out of host memory", logical);
  d->logical = logical;
  d->physical = physical;
  d->slot = slot;
  d->ph = ph;
  d->rec = -1;
  d->last = DK_VK_FRAMES - 1;
  d->next_serial = 1;
  dk_vk.dev[logical] = d;

  memset(&qi, 0, sizeof qi);
  qi.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qi.queueFamilyIndex = ph->qfam;
  qi.queueCount = 1;
  qi.pQueuePriorities = &prio;
  memset(&f2, 0, sizeof f2);
  memset(&f11, 0, sizeof f11);
  f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  f11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  f2.pNext = &f11;
  f2.features.robustBufferAccess = ph->has_robust && !dk_vk_disabled("robust");
  f11.storageBuffer16BitAccess = VK_TRUE;
  d->push = ph->has_push && !dk_vk_disabled("push_descriptor");
  d->sg = ph->has_sg && !dk_vk_disabled("subgroups");
  /* int8 dot products only when asked for: they round x to 8 bits */
  e = getenv("DEVKIT_VULKAN_INT8_DOT");
  d->int8_dot = e && e[0] == '1' && ph->has_int_dot && d->sg;
  if (d->int8_dot) {
    memset(&fdot, 0, sizeof fdot);
    fdot.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
    fdot.shaderIntegerDotProduct = VK_TRUE;
    f11.pNext = &fdot;
    exts[ne++] = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
  }
  /* prompt products on cooperative matrices (gemm_coop.comp) only when asked
   * for: not yet run on a GPU; they round x to f16 as CUDA's prompt path does */
  d->coop_spv = dk_vk_coop_spv(ph);
  d->flash_spv = dk_vk_flash_spv(ph);   /* prompt attention likewise (attn_flash.comp) */
  if ((d->coop_spv >= 0 && d->coop_spv != DK_SPV_GEMM_COOP_EMU) || (d->flash_spv >= 0 && d->flash_spv != DK_SPV_ATTN_FLASH_EMU)) {
    memset(&f12, 0, sizeof f12);
    memset(&fcm, 0, sizeof fcm);
    f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    f12.shaderFloat16 = VK_TRUE;
    f12.vulkanMemoryModel = VK_TRUE;   /* the shader's subgroup-scoped matrices need the Vulkan memory model */
    fcm.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
    fcm.cooperativeMatrix = VK_TRUE;
    f12.pNext = &fcm;
    fcm.pNext = f11.pNext;
    f11.pNext = &f12;
    exts[ne++] = VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
  }
  if (d->push) exts[ne++] = VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
  if (ph->has_budget) exts[ne++] = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
  memset(&ci, 0, sizeof ci);
  ci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  ci.pNext = &f2;
  ci.queueCreateInfoCount = 1;
  ci.pQueueCreateInfos = &qi;
  ci.enabledExtensionCount = ne;
  ci.ppEnabledExtensionNames = exts;
  if ((r = dk_vk.fn.CreateDevice(ph->pd, &ci, NULL, &d->dev)) != VK_SUCCESS) {
    d->dev = VK_NULL_HANDLE;
    dk_vk.dev[logical] = NULL;
    free(d);
    return dk__error(DK_ERR_BACKEND, "vkCreateDevice for %s failed: %s", ph->props.deviceName, dk_vk_result(r));
  }
#define DK_VK_LOAD_D(n) d->fn.n = (PFN_vk##n)dk_vk.fn.GetDeviceProcAddr(d->dev, "vk" #n);
  DK_VK_DEVICE_FNS(DK_VK_LOAD_D)
#undef DK_VK_LOAD_D
  if (d->push) {
    d->fn.CmdPushDescriptorSetKHR = (PFN_vkCmdPushDescriptorSetKHR)dk_vk.fn.GetDeviceProcAddr(d->dev, "vkCmdPushDescriptorSetKHR");
    d->push = d->fn.CmdPushDescriptorSetKHR != NULL;
  }
  d->fn.GetDeviceQueue(d->dev, ph->qfam, 0, &d->queue);

  /* memory types, from what a storage buffer may live in */
  memset(&bi, 0, sizeof bi);
  bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bi.size = 256;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  if ((r = d->fn.CreateBuffer(d->dev, &bi, NULL, &probe_buf)) != VK_SUCCESS) goto fail;
  d->fn.GetBufferMemoryRequirements(d->dev, probe_buf, &req);
  d->fn.DestroyBuffer(d->dev, probe_buf, NULL);
  t = dk_vk_pick_type(ph, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
  if (t < 0) t = dk_vk_pick_type(ph, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
  if (t < 0) t = dk_vk_pick_type(ph, req.memoryTypeBits, 0, 0);
  d->mt_dev = (uint32_t)t;
  t = dk_vk_pick_type(ph, req.memoryTypeBits,
                      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                          VK_MEMORY_PROPERTY_HOST_CACHED_BIT, 0);
  if (t < 0)
    t = dk_vk_pick_type(ph, req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0);
  if (t < 0) { r = VK_ERROR_FEATURE_NOT_PRESENT; goto fail; }
  d->mt_host = (uint32_t)t;
  d->dev_mappable = (ph->mem.memoryTypes[d->mt_dev].propertyFlags &
                     (VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)) ==
                    (VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  d->direct = d->dev_mappable && !dk_vk_disabled("direct");

  d->max_range = ph->max_range;
  d->max_alloc = ph->max_alloc;
  env = dk_vk_env_size("DEVKIT_VULKAN_MAX_BINDING");
  if (env && env < d->max_range) d->max_range = env;
  env = dk_vk_env_size("DEVKIT_VULKAN_MAX_ALLOC");
  if (env && env < d->max_alloc) d->max_alloc = env;
  if (d->max_alloc < 2 * DK_VK_SEG_OVERLAP) d->max_alloc = 2 * DK_VK_SEG_OVERLAP;
  d->block_size = DK_VK_BLOCK < d->max_alloc ? DK_VK_BLOCK : d->max_alloc - d->max_alloc % ph->align;
  e = getenv("DEVKIT_VULKAN_MATVEC");
  d->rows_mv = e && *e ? !strcmp(e, "rows") : ph->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
  /* llvmpipe's threads for a dispatch: LP_NUM_THREADS, else one a CPU */
  e = getenv("LP_NUM_THREADS");
  d->cpu_threads = e && *e ? atoi(e) : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (d->cpu_threads < 1) d->cpu_threads = 1;
  if (d->cpu_threads > 64) d->cpu_threads = 64;
  e = getenv("DEVKIT_VULKAN_ROWS");
  d->rows_force = e && atoi(e) >= 1 && atoi(e) <= 8 ? atoi(e) : 0;
  /* the row kernels read w and x as texels on CPU devices (dk_vk_block_view);
   * DEVKIT_VULKAN_TEXEL=0 keeps storage-buffer loads */
  e = getenv("DEVKIT_VULKAN_TEXEL");
  d->tex = d->rows_mv && ph->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU && !(e && !strcmp(e, "0"));
  /* float weights on GPUs: matvec_vec.comp (an H100 through NVIDIA's driver,
   * 2026-11-25: f16 4096x4096 312 -> 3199 GB/s); DEVKIT_VULKAN_MATVEC=split
   * keeps matvec.comp, =vec asks for it on any device */
  e = getenv("DEVKIT_VULKAN_MATVEC");
  d->vec_mv = !d->rows_mv && d->sg && ph->subgroup_size >= 8 && !(e && *e && strcmp(e, "vec"));
  /* dk_rmsnorm_linear / dk_swiglu_linear at decode in one dispatch of
   * matvec_vec.comp (PRO): on GPUs (an H200 through NVIDIA's driver,
   * 2026-11-28: 1B f16 decode 297-302 -> 336-337 tok/s), not on CPU devices
   * (lavapipe: 20.6 -> 32.4 ms a 4096x768 rmsnorm_linear); DEVKIT_VULKAN_FUSED
   * =1 or =0 decides */
  e = getenv("DEVKIT_VULKAN_FUSED");
  d->fused = d->vec_mv && (e && *e ? e[0] == '1' : ph->props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU);
  /* q8_0/q4_0 decode on matvec_vec.comp too: on NVIDIA's driver their
   * matvec.comp decode was 196 tok/s (1B q4_0) against f16's 340 on the vec
   * kernel (H200, 2026-11-28); not yet timed on a GPU, so asked for */
  e = getenv("DEVKIT_VULKAN_VECQ");
  d->vec_q = d->vec_mv && e && e[0] == '1';
  /* prompts on CPU devices: gemm_rows.comp; on GPUs the formats beyond
   * q8_0/q4_0 take matmul.comp's matmul_qk; DEVKIT_VULKAN_GEMM=0 keeps the
   * row kernel (8 rows of x per dispatch) for both, for comparisons */
  e = getenv("DEVKIT_VULKAN_GEMM");
  d->gemm_off = e && !strcmp(e, "0");
  d->gemm_rows = d->rows_mv && !d->gemm_off;
  /* llvmpipe runs a barrier as a switch between the workgroup's SIMD
   * slices: on a CPU device a reduction wants few of them */
  d->wg_rows = 256;
  if (ph->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU)
    d->wg_rows = ph->subgroup_size >= 4 && ph->subgroup_size <= 256 && !(ph->subgroup_size & (ph->subgroup_size - 1))
                     ? ph->subgroup_size : 8;
  e = getenv("DEVKIT_VULKAN_WG_ROWS");
  if (e && atoi(e) >= 1 && atoi(e) <= 256 && !(atoi(e) & (atoi(e) - 1))) d->wg_rows = (uint32_t)atoi(e);
  /* only where the subgroup size is fixed (lavapipe: the SIMD width) is a
   * workgroup of that size known to be one subgroup */
  d->one_sg = d->sg && ph->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU && d->wg_rows == ph->subgroup_size;
  e = getenv("DEVKIT_VULKAN_BATCH");
  d->batch = e && atoi(e) > 0 ? atoi(e) : 256;

  /* one layout for every shader: five storage buffers (and, where the row
   * kernels read w and x as texels, three texel buffers: w, x and the iq
   * codebooks), 128 bytes of constants */
  memset(lb, 0, sizeof lb);
  for (i = 0; i < DK_VK_MAX_BIND + DK_VK_TEX; i++) {
    lb[i].binding = i;
    lb[i].descriptorType = i < DK_VK_MAX_BIND ? VK_DESCRIPTOR_TYPE_STORAGE_BUFFER : VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
    lb[i].descriptorCount = 1;
    lb[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  memset(&li, 0, sizeof li);
  li.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  li.flags = d->push ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0;
  li.bindingCount = DK_VK_MAX_BIND + (d->tex ? DK_VK_TEX : 0);
  li.pBindings = lb;
  if ((r = d->fn.CreateDescriptorSetLayout(d->dev, &li, NULL, &d->dsl)) != VK_SUCCESS) goto fail;
  pcr.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  pcr.offset = 0;
  pcr.size = 128;
  memset(&pli, 0, sizeof pli);
  pli.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &d->dsl;
  pli.pushConstantRangeCount = 1;
  pli.pPushConstantRanges = &pcr;
  if ((r = d->fn.CreatePipelineLayout(d->dev, &pli, NULL, &d->layout)) != VK_SUCCESS) goto fail;
  dk_vk_cache_open(d);

  memset(&cpi, 0, sizeof cpi);
  cpi.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  cpi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cpi.queueFamilyIndex = ph->qfam;
  if ((r = d->fn.CreateCommandPool(d->dev, &cpi, NULL, &d->pool)) != VK_SUCCESS) goto fail;
  memset(&cai, 0, sizeof cai);
  cai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  cai.commandPool = d->pool;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = DK_VK_FRAMES;
  if ((r = d->fn.AllocateCommandBuffers(d->dev, &cai, cmds)) != VK_SUCCESS) goto fail;
  memset(&fi, 0, sizeof fi);
  fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  for (i = 0; i < DK_VK_FRAMES; i++) {
    d->frames[i].cmd = cmds[i];
    if ((r = d->fn.CreateFence(d->dev, &fi, NULL, &d->frames[i].fence)) != VK_SUCCESS) goto fail;
    if (!d->push) {
      VkDescriptorPoolSize ps[2];
      VkDescriptorPoolCreateInfo pi;
      ps[0].type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      ps[0].descriptorCount = (uint32_t)d->batch * DK_VK_MAX_BIND;
      ps[1].type = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
      ps[1].descriptorCount = (uint32_t)d->batch * DK_VK_TEX;
      memset(&pi, 0, sizeof pi);
      pi.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
      pi.maxSets = (uint32_t)d->batch;
      pi.poolSizeCount = 1 + (uint32_t)d->tex;
      pi.pPoolSizes = ps;
      if ((r = d->fn.CreateDescriptorPool(d->dev, &pi, NULL, &d->frames[i].dpool)) != VK_SUCCESS) goto fail;
    }
  }
  if ((r = dk_vk_block_create(d, (VkDeviceSize)(DK_VK_FRAMES + 1) * DK_VK_CHECKS * 16, d->mt_host, 1, &d->status)) !=
      VK_SUCCESS)
    goto fail;
  memset(d->status->map, 0, (size_t)d->status->size);
  if ((r = dk_vk_block_create(d, 256, d->mt_dev, 0, &d->dummy)) != VK_SUCCESS) goto fail;
  {
    /* written once from the host: device-local memory the host may map
     * where there is some, else the staging type */
    int gt = dk_vk_pick_type(ph, req.memoryTypeBits,
                             VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                 VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0);
    /* in shaders/quants.glsl's order (DKQ_S3 ...); the iq2 points' 64-bit
     * entries little-endian, their low four values the first word */
    static const struct { const void *p; size_t n; } g[5] = {
        {dk_iq3xxs_grid, sizeof dk_iq3xxs_grid}, {dk_iq3s_grid, sizeof dk_iq3s_grid}, {dk_iq2xxs_grid, sizeof dk_iq2xxs_grid},
        {dk_iq2xs_grid, sizeof dk_iq2xs_grid},   {dk_iq2s_grid, sizeof dk_iq2s_grid}};
    size_t at = 0;
    int i;
    for (i = 0; i < 5; i++) at += g[i].n;
    if ((r = dk_vk_block_create(d, at, gt >= 0 ? (uint32_t)gt : d->mt_host, 1, &d->grids)) != VK_SUCCESS) goto fail;
    for (at = 0, i = 0; i < 5; at += g[i].n, i++) memcpy(d->grids->map + at, g[i].p, g[i].n);
    /* the texel shaders read them as texels too: without the view they are not used */
    if (d->tex && !(d->grid_view = dk_vk_block_view(d, d->grids, 0, dk_vk_round(at, 16)))) d->tex = 0;
  }
  d->open = 1;
  return DK_OK;
fail:
  dk_vk.dev[logical] = NULL;
  dk_vk_close_device(d);
  return dk__error(DK_ERR_BACKEND, "opening vulkan:%d on %s failed: %s", logical, ph->props.deviceName, dk_vk_result(r));
}

static void dk_vk_close_all(void) {
  int i;
  for (i = 0; i < DK_MAX_DEVICES; i++) {
    dk_vk_close_device(dk_vk.dev[i]);
    dk_vk.dev[i] = NULL;
  }
  dk_vk_unload();
}

/* ==== ops ================================================================= */

/* push constant blocks, member for member as the shaders declare them */
typedef struct { uint32_t m, sh; } dk_vk_magic;   /* dk_div in common.glsl */
typedef struct { uint32_t n, o_off, a_off, b_off; float s; uint32_t d1, d2, d3, as[4], bs[4]; dk_vk_magic md[3]; } dk_vk_pc_ew;
typedef struct { uint32_t n, o_off, s_off, d1, d2, d3, os[4], ss[4]; dk_vk_magic md[3]; } dk_vk_pc_copy;
typedef struct { uint32_t rows, cols; float eps; uint32_t o_off, x_off, w_off, b_off; } dk_vk_pc_norm;
typedef struct { uint32_t rows, cols, rows_per; float scale; int32_t off; uint32_t o_off, x_off, row_base; } dk_vk_pc_softmax;
typedef struct { uint32_t n, D, H, T, n_rot; float theta; uint32_t o_off, x_off, p_off; dk_vk_magic mrow, mh, mt; uint32_t row_base; } dk_vk_pc_rope;
typedef struct { uint32_t n, D, o_off, t_off, ids_off, r0, r1, rows, check, slot, n_ids; dk_vk_magic md; } dk_vk_pc_embed;
typedef struct { uint32_t rows, cols, o_off, x_off; } dk_vk_pc_argmax;
typedef struct { uint32_t rows, cols, o_off, x_off; int32_t top_k; float temp, top_p; uint32_t seed_lo, seed_hi, row_base; } dk_vk_pc_sample;
typedef struct {
  uint32_t T, Hq, S, Hkv, D, Dv;
  float scale;
  int32_t off;
  uint32_t o_off, q_off, k_off, v_off, t0, nsplit, split_len, pos_off;
  uint32_t win;   /* dk_attention_window's window; 0: none */
} dk_vk_pc_attn;
/* matvec*.comp; gemm_rows.comp the same with M for KC */
typedef struct { uint32_t N, K, KC, x_off, w_off, o_off, b_off, ldx, ldo, a_off; } dk_vk_pc_mv;   /* a_off: matvec_vec's PRO operand */
typedef struct {
  uint32_t M, N, K, a_off, b_off, o_off, bias_off, a_rs, b_rs, b_cs, ldo;
  uint32_t nb1, nb2, z_base, abs_[3], bbs[3], obs;
} dk_vk_pc_mm;

#define DK_VK_MV_MAXM 8    /* matvec.comp's MMAX */
#define DK_VK_MV_ROWS 4    /* matvec.comp's R */
#define DK_VK_MV_XS 4096   /* matvec.comp's XS */
#define DK_VK_GEMM_WG 32   /* gemm_rows.comp's WG */
#define DK_VK_GEMM_TM 16   /* gemm_rows.comp's TM: rows of x per invocation */
#define DK_VK_GEMM_TN 8    /* gemm_rows.comp's TN: rows of w per invocation */
#define DK_VK_ATT_HMAX 8    /* attention.comp's HMAX */
#define DK_VK_ATT_QMAX 2048 /* attention.comp's QMAX */
#define DK_VK_ATT_MAXN 256  /* attention.comp's MAXN: splits of a row at most */
/* loop iterations one invocation of attention may run: half of the 65535
 * after which llvmpipe ends every loop of the invocation (its loop limiter
 * counts the iterations of all loops together and stops silently) */
#define DK_VK_ATT_LOOPS 32768
#define DK_VK_ATT_PART_BYTES ((VkDeviceSize)64 << 20)   /* split records held at once */

static int dk_vk_pick(dk_vk_device *d, int with_sg, int without_sg) { return d->sg ? with_sg : without_sg; }

/* multiplier and shifts for n / d in shaders, for any 1 <= d < 2^32
 * (Granlund and Montgomery, "Division by invariant integers using
 * multiplication", 1994, figure 4.1) */
static dk_vk_magic dk_vk_magic_for(uint64_t d) {
  dk_vk_magic r;
  uint32_t l = 0;
  if (d < 1) d = 1;
  while (l < 32 && ((uint64_t)1 << l) < d) l++;
  r.m = (uint32_t)(((((uint64_t)1 << l) - d) << 32) / d + 1);
  r.sh = (l < 1 ? l : 1) | ((l > 1 ? l - 1 : 0) << 8);
  return r;
}

/* ---- layouts: shapes with up to three stride arrays, collapsed ----------- */

typedef struct {
  int nd, k;
  int64_t shape[DEVKIT_MAX_DIMS];
  int64_t str[4][DEVKIT_MAX_DIMS];
} dk_vk_lay;

/* drop size-1 dims and merge neighbours that every array walks as one */
static void dk_vk_collapse(dk_vk_lay *l) {
  int i, j, n = 0;
  for (i = 0; i < l->nd; i++) {
    int merge = n > 0;
    if (l->shape[i] == 1) continue;
    for (j = 0; j < l->k && merge; j++) merge = l->str[j][n - 1] == l->str[j][i] * l->shape[i];
    if (merge) {
      l->shape[n - 1] *= l->shape[i];
      for (j = 0; j < l->k; j++) l->str[j][n - 1] = l->str[j][i];
      continue;
    }
    l->shape[n] = l->shape[i];
    for (j = 0; j < l->k; j++) l->str[j][n] = l->str[j][i];
    n++;
  }
  l->nd = n;
}

/* Split a collapsed layout into dispatches of at most `ni` dims: `outer`
 * indexes the dims before the last ni; fills the ni inner dims (padded with
 * size-1 dims in front) and each array's element offset for that outer index. */
static int64_t dk_vk_outer_count(const dk_vk_lay *l, int ni) {
  int64_t n = 1;
  int i;
  for (i = 0; i < l->nd - ni; i++) n *= l->shape[i];
  return n;
}
/* out's shape and strides with each input's, broadcast like the binary ops
 * (stride 0 along a dim the input lacks or holds once), collapsed */
static void dk_vk_lay_broadcast(dk_vk_lay *l, const dk_tensor *o, const dk_tensor *const *in, int nin) {
  int i, k;
  memset(l, 0, sizeof *l);
  l->nd = o->ndim;
  l->k = 1 + nin;
  for (i = 0; i < o->ndim; i++) {
    l->shape[i] = o->shape[i];
    l->str[0][i] = o->stride[i];
    for (k = 0; k < nin; k++) {
      int kk = in[k] ? i - (o->ndim - in[k]->ndim) : -1;
      l->str[1 + k][i] = (kk < 0 || in[k]->shape[kk] == 1) ? 0 : in[k]->stride[kk];
    }
  }
  dk_vk_collapse(l);
}

static void dk_vk_inner(const dk_vk_lay *l, int ni, int64_t outer, int64_t *shape4, int64_t str4[4][4], int64_t *off) {
  int i, j, lead = l->nd > ni ? l->nd - ni : 0;
  for (j = 0; j < l->k; j++) off[j] = 0;
  for (i = lead - 1; i >= 0; i--) {
    int64_t c = outer % l->shape[i];
    outer /= l->shape[i];
    for (j = 0; j < l->k; j++) off[j] += c * l->str[j][i];
  }
  for (i = 0; i < ni; i++) {
    int src = l->nd - ni + i;
    shape4[i] = src >= 0 ? l->shape[src] : 1;
    for (j = 0; j < l->k; j++) str4[j][i] = src >= 0 ? l->str[j][src] : 0;
  }
}

/* ---- elementwise ------------------------------------------------------------ */

static dk_status dk_vk_elementwise(dk_vk_device *d, const dk_call *c) {
  const dk_tensor *o = c->t[0], *a = c->t[1], *b = c->op <= DK_OP_DIV || c->op == DK_OP_SWIGLU ? c->t[2] : NULL;
  dk_vk_pc_ew pc;
  dk_vk_args args;
  dk_vk_lay l;
  uint32_t spec[DK_VK_SPEC];
  int64_t n = dk_tensor_numel(o), outer, ot, shape4[4], str4[4][4], off[4];
  uint32_t gx, gy;
  int i;
  dk_status s;
  if (n == 0) return DK_OK;
  memset(&pc, 0, sizeof pc);
  dk_vk_args_init(&args);
  if ((s = dk_vk_arg_t(d, &args, 0, o, 1, &pc.o_off, "out")) != DK_OK ||
      (s = dk_vk_arg_t(d, &args, 1, a, 0, &pc.a_off, "a")) != DK_OK)
    return s;
  if (b) {
    if ((s = dk_vk_arg_t(d, &args, 2, b, 0, &pc.b_off, "b")) != DK_OK) return s;
  } else {
    dk_vk_arg_dummy(d, &args, 2);
  }
  memset(spec, 0, sizeof spec);
  spec[0] = (uint32_t)c->op;
  spec[1] = (uint32_t)o->dtype;
  pc.s = c->f[0];
  /* the same shape everywhere (always, for unary ops): no index arithmetic */
  spec[2] = dk_tensor_numel(a) == n && (!b || dk_tensor_numel(b) == n);
  if (spec[2]) {
    pc.n = (uint32_t)n;
    pc.d1 = pc.d2 = pc.d3 = 1;
    dk_vk_grid(((uint64_t)n + 4095) / 4096, DK_VK_GROUPS_CAP, &gx, &gy);
    return dk_vk_run(d, DK_SPV_ELEMENTWISE, spec, &args, &pc, sizeof pc, gx, gy, 1);
  }
  {
    const dk_tensor *in[2] = {a, b};
    dk_vk_lay_broadcast(&l, o, in, 2);
  }
  outer = dk_vk_outer_count(&l, 4);
  for (ot = 0; ot < outer; ot++) {
    dk_vk_pc_ew p = pc;
    dk_vk_inner(&l, 4, ot, shape4, str4, off);
    p.n = (uint32_t)(shape4[0] * shape4[1] * shape4[2] * shape4[3]);
    p.d1 = (uint32_t)shape4[1];
    p.d2 = (uint32_t)shape4[2];
    p.d3 = (uint32_t)shape4[3];
    for (i = 0; i < 3; i++) p.md[i] = dk_vk_magic_for((uint64_t)shape4[i + 1]);
    for (i = 0; i < 4; i++) {
      p.as[i] = (uint32_t)str4[1][i];
      p.bs[i] = (uint32_t)str4[2][i];
    }
    /* the output is contiguous: its inner block starts at off[0] */
    p.o_off += (uint32_t)off[0];
    p.a_off += (uint32_t)off[1];
    p.b_off += (uint32_t)off[2];
    dk_vk_grid(((uint64_t)p.n + 255) / 256, DK_VK_GROUPS_CAP, &gx, &gy);
    if ((s = dk_vk_run(d, DK_SPV_ELEMENTWISE, spec, &args, &p, sizeof p, gx, gy, 1)) != DK_OK) return s;
  }
  return DK_OK;
}

/* ---- copies: dk_copy, transpose, concat ------------------------------------ */

/* dst[idx] = src[idx] for idx over `shape`, each with its own strides (in
 * elements) and element offset from its tensor's start */
static dk_status dk_vk_strided_copy(dk_vk_device *d, const dk_tensor *dst, int64_t doff, const int64_t *dstr,
                                    const dk_tensor *src, const int64_t *sstr, int nd, const int64_t *shape) {
  dk_vk_pc_copy pc;
  dk_vk_args args;
  dk_vk_lay l;
  uint32_t spec[DK_VK_SPEC];
  int64_t outer, ot, shape4[4], str4[4][4], off[4], n = 1;
  uint32_t gx, gy;
  int i;
  dk_status s;
  for (i = 0; i < nd; i++) n *= shape[i];
  if (n == 0) return DK_OK;
  memset(&pc, 0, sizeof pc);
  dk_vk_args_init(&args);
  if ((s = dk_vk_arg_t(d, &args, 0, dst, 1, &pc.o_off, "dst")) != DK_OK ||
      (s = dk_vk_arg_t(d, &args, 1, src, 0, &pc.s_off, "src")) != DK_OK)
    return s;
  memset(spec, 0, sizeof spec);
  spec[0] = (uint32_t)dst->dtype;
  spec[1] = (uint32_t)src->dtype;
  pc.o_off += (uint32_t)doff;
  memset(&l, 0, sizeof l);
  l.nd = nd;
  l.k = 2;
  for (i = 0; i < nd; i++) {
    l.shape[i] = shape[i];
    l.str[0][i] = dstr[i];
    l.str[1][i] = sstr[i];
  }
  dk_vk_collapse(&l);
  outer = dk_vk_outer_count(&l, 4);
  for (ot = 0; ot < outer; ot++) {
    dk_vk_pc_copy p = pc;
    dk_vk_inner(&l, 4, ot, shape4, str4, off);
    p.n = (uint32_t)(shape4[0] * shape4[1] * shape4[2] * shape4[3]);
    p.d1 = (uint32_t)shape4[1];
    p.d2 = (uint32_t)shape4[2];
    p.d3 = (uint32_t)shape4[3];
    for (i = 0; i < 3; i++) p.md[i] = dk_vk_magic_for((uint64_t)shape4[i + 1]);
    for (i = 0; i < 4; i++) {
      p.os[i] = (uint32_t)str4[0][i];
      p.ss[i] = (uint32_t)str4[1][i];
    }
    p.o_off += (uint32_t)off[0];
    p.s_off += (uint32_t)off[1];
    dk_vk_grid(((uint64_t)p.n + 255) / 256, DK_VK_GROUPS_CAP, &gx, &gy);
    if ((s = dk_vk_run(d, DK_SPV_COPY, spec, &args, &p, sizeof p, gx, gy, 1)) != DK_OK) return s;
  }
  return DK_OK;
}

static dk_status dk_vk_copy_op(dk_vk_device *d, const dk_call *c) {
  const dk_tensor *o = c->t[0], *x = c->t[1];
  if (o->dtype == x->dtype && dk_tensor_is_contiguous(o) && dk_tensor_is_contiguous(x)) {
    dk_vk_mem *mo = (dk_vk_mem *)o->st->ptr, *mx = (dk_vk_mem *)x->st->ptr;
    if (o->st == x->st && o->offset == x->offset) return DK_OK;
    return dk_vk_cmd_read(d, mx, x->offset, dk_tensor_nbytes(x), NULL, 0, mo, o->offset);
  }
  return dk_vk_strided_copy(d, o, 0, o->stride, x, x->stride, o->ndim, o->shape);
}

static dk_status dk_vk_transpose(dk_vk_device *d, const dk_call *c) {
  const dk_tensor *o = c->t[0], *x = c->t[1];
  int64_t sstr[DEVKIT_MAX_DIMS];
  int i;
  for (i = 0; i < x->ndim; i++) sstr[i] = x->stride[c->i[i]];
  return dk_vk_strided_copy(d, o, 0, o->stride, x, sstr, o->ndim, o->shape);
}

static dk_status dk_vk_concat(dk_vk_device *d, const dk_call *c) {
  const dk_tensor *o = c->t[0], *a = c->t[1], *b = c->t[2];
  int dim = (int)c->i[0];
  dk_status s = dk_vk_strided_copy(d, o, 0, o->stride, a, a->stride, a->ndim, a->shape);
  if (s != DK_OK) return s;
  return dk_vk_strided_copy(d, o, a->shape[dim] * o->stride[dim], o->stride, b, b->stride, b->ndim, b->shape);
}

/* ---- row ops ------------------------------------------------------------------- */

static int64_t dk_vk_cols(const dk_tensor *t) { return t->ndim ? t->shape[t->ndim - 1] : 1; }

static dk_status dk_vk_norm(dk_vk_device *d, const dk_call *c) {
  const dk_tensor *o = c->t[0], *x = c->t[1], *w = c->t[2], *b = c->op == DK_OP_LAYERNORM ? c->t[3] : NULL;
  dk_vk_pc_norm pc;
  dk_vk_args args;
  uint32_t spec[DK_VK_SPEC];
  int64_t cols = dk_vk_cols(x), rows = cols ? dk_tensor_numel(x) / cols : 0;
  uint32_t gx, gy;
  dk_status s;
  if (rows == 0 || cols == 0) return DK_OK;
  memset(&pc, 0, sizeof pc);
  dk_vk_args_init(&args);
  if ((s = dk_vk_arg_t(d, &args, 0, o, 1, &pc.o_off, "out")) != DK_OK ||
      (s = dk_vk_arg_t(d, &args, 1, x, 0, &pc.x_off, "x")) != DK_OK)
    return s;
  if (w && (s = dk_vk_arg_t(d, &args, 2, w, 0, &pc.w_off, "w")) != DK_OK) return s;
  if (!w) dk_vk_arg_dummy(d, &args, 2);
  if (b && (s = dk_vk_arg_t(d, &args, 3, b, 0, &pc.b_off, "b")) != DK_OK) return s;
  if (!b) dk_vk_arg_dummy(d, &args, 3);
  pc.rows = (uint32_t)rows;
  pc.cols = (uint32_t)cols;
  memset(spec, 0, sizeof spec);
  spec[0] = (uint32_t)x->dtype;
  spec[1] = (uint32_t)(w ? w->dtype : b ? b->dtype : DK_F32);
  spec[2] = (w ? 1u : 0u) | (b ? 2u : 0u) | (c->op == DK_OP_LAYERNORM ? 4u : 0u);
  pc.eps = c->f[0];
  dk_vk_grid((uint64_t)rows, DK_VK_GROUPS_CAP, &gx, &gy);
  return dk_vk_run(d, dk_vk_pick(d, DK_SPV_NORM, DK_SPV_NORM_NOSG), spec, &args, &pc, sizeof pc, gx, gy, 1);
}

static dk_status dk_vk_softmax(dk_vk_device *d, const dk_call *c, int64_t row_base, int64_t rows_per) {
  const dk_tensor *o = c->t[0], *x = c->t[1];
  dk_vk_pc_softmax pc;
  dk_vk_args args;
  uint32_t spec[DK_VK_SPEC];
  int64_t cols = dk_vk_cols(x), rows = cols ? dk_tensor_numel(x) / cols : 0;
  uint32_t gx, gy;
  dk_status s;
  if (rows == 0 || cols == 0) return DK_OK;
  memset(&pc, 0, sizeof pc);
  dk_vk_args_init(&args);
  if ((s = dk_vk_arg_t(d, &args, 0, o, 1, &pc.o_off, "out")) != DK_OK ||
      (s = dk_vk_arg_t(d, &args, 1, x, 0, &pc.x_off, "x")) != DK_OK)
    return s;
  pc.rows = (uint32_t)rows;
  pc.cols = (uint32_t)cols;
  memset(spec, 0, sizeof spec);
  spec[0] = (uint32_t)x->dtype;
  pc.row_base = (uint32_t)row_base;
  if (c->op == DK_OP_SOFTMAX_MASKED) {
    pc.rows_per = (uint32_t)rows_per;
    pc.scale = c->f[0];
    pc.off = c->i[0] < 0 ? -1 : (c->i[0] > 0x7fffffff ? 0x7fffffff : (int32_t)c->i[0]);
  } else {
    pc.rows_per = 1;
    pc.scale = 1.0f;
    pc.off = -1;
  }
  if (pc.rows_per == 0) return DK_OK;
  dk_vk_grid((uint64_t)rows, DK_VK_GROUPS_CAP, &gx, &gy);
  return dk_vk_run(d, dk_vk_pick(d, DK_SPV_SOFTMAX, DK_SPV_SOFTMAX_NOSG), spec, &args, &pc, sizeof pc, gx, gy, 1);
}

static dk_status dk_vk_rope(dk_vk_device *d, const dk_call *c, int64_t row_base, int64_t heads) {
  const dk_tensor *o = c->t[0], *x = c->t[1], *pos = c->t[2];
  dk_vk_pc_rope pc;
  dk_vk_args args;
  uint32_t spec[DK_VK_SPEC];
  int64_t D = dk_vk_cols(x), rows = D ? dk_tensor_numel(x) / D : 0;
  uint32_t gx, gy;
  dk_status s;
  if (rows == 0) return DK_OK;
  memset(&pc, 0, sizeof pc);
  dk_vk_args_init(&args);
  if ((s = dk_vk_arg_t(d, &args, 0, o, 1, &pc.o_off, "out")) != DK_OK ||
      (s = dk_vk_arg_t(d, &args, 1, x, 0, &pc.x_off, "x")) != DK_OK ||
      (s = dk_vk_arg_t(d, &args, 2, pos, 0, &pc.p_off, "positions")) != DK_OK)
    return s;
  pc.D = (uint32_t)D;
  pc.H = (uint32_t)heads;
  pc.row_base = (uint32_t)row_base;
  pc.T = (uint32_t)pos->shape[0];
  pc.n_rot = (uint32_t)c->i[0];
  memset(spec, 0, sizeof spec);
  spec[0] = (uint32_t)x->dtype;
  spec[1] = c->i[1] == DK_ROPE_NEOX;
  pc.theta = c->f[0];
  pc.n = (uint32_t)(rows * (D - c->i[0] / 2));
  pc.mrow = dk_vk_magic_for((uint64_t)(D - c->i[0] / 2));
  pc.mh = dk_vk_magic_for(pc.H);
  pc.mt = dk_vk_magic_for(pc.T);
  dk_vk_grid(((uint64_t)pc.n + 255) / 256, DK_VK_GROUPS_CAP, &gx, &gy);
  return dk_vk_run(d, DK_SPV_ROPE, spec, &args, &pc, sizeof pc, gx, gy, 1);
}

static dk_status dk_vk_pick_op(dk_vk_device *d, const dk_call *c, int64_t row_base) {
  const dk_tensor *o = c->t[0], *x = c->t[1];
  dk_vk_args args;
  int64_t cols = dk_vk_cols(x), rows = cols ? dk_tensor_numel(x) / cols : 0;
  uint32_t gx, gy, o_off, x_off, spec[DK_VK_SPEC];
  dk_status s;
  if (rows == 0) return DK_OK;
  memset(spec, 0, sizeof spec);
  spec[0] = (uint32_t)x->dtype;
  dk_vk_args_init(&args);
  if ((s = dk_vk_arg_t(d, &args, 0, o, 1, &o_off, "out")) != DK_OK ||
      (s = dk_vk_arg_t(d, &args, 1, x, 0, &x_off, "x")) != DK_OK)
    return s;
  dk_vk_grid((uint64_t)rows, DK_VK_GROUPS_CAP, &gx, &gy);
  if (c->op == DK_OP_ARGMAX || !(c->f[0] > 0.0f)) {
    dk_vk_pc_argmax pc;
    pc.rows = (uint32_t)rows;
    pc.cols = (uint32_t)cols;
    pc.o_off = o_off;
    pc.x_off = x_off;
    return dk_vk_run(d, dk_vk_pick(d, DK_SPV_ARGMAX, DK_SPV_ARGMAX_NOSG), spec, &args, &pc, sizeof pc, gx, gy, 1);
  } else {
    dk_vk_pc_sample pc;
    pc.rows = (uint32_t)rows;
    pc.cols = (uint32_t)cols;
    pc.o_off = o_off;
    pc.x_off = x_off;
    pc.top_k = c->i[0] > 0x7fffffff ? 0x7fffffff : (c->i[0] < 0 ? 0 : (int32_t)c->i[0]);
    pc.temp = c->f[0];
    pc.top_p = c->f[1];
    pc.row_base = (uint32_t)row_base;
    pc.seed_lo = (uint32_t)(c->u & 0xffffffffu);
    pc.seed_hi = (uint32_t)(c->u >> 32);
    return dk_vk_run(d, dk_vk_pick(d, DK_SPV_SAMPLE, DK_SPV_SAMPLE_NOSG), spec, &args, &pc, sizeof pc, gx, gy, 1);
  }
}

/* The device's scratch of at least n bytes, as an f32 tensor header. A
 * smaller one is released (its memory is given back once the frames that
 * use it are done) and a larger one made. */
/* a tensor header over device scratch of at least n bytes: the device's
 * one, or while recording a graph, one of the graph's own for this op (the
 * device's may be reallocated under a later replay) */
static void dk_vk_scratch_header(dk_tensor *t, dk_storage *st, dk_device dv, VkDeviceSize want) {
  memset(t, 0, sizeof *t);
  t->device = dv;
  t->dtype = DK_F32;
  t->ndim = 1;
  t->shape[0] = (int64_t)(want / 4);
  t->stride[0] = 1;
  t->st = st;
  snprintf(t->name, sizeof t->name, "device scratch");
}

static dk_status dk_vk_scratch(dk_vk_device *d, VkDeviceSize n, const dk_tensor **out) {
  dk_device dv = dk_vk_devid(d->logical);
  dk_status s;
  if (d->grec) {
    dk_vk_graph *g = d->grec;
    dk_vk_scr *x;
    VkDeviceSize want = dk_vk_round(n ? n : 4, 256);
    if (g->nscr == g->capscr && !dk_vk_grow((void **)&g->scr, &g->capscr, sizeof *g->scr))
      return dk__error(DK_ERR_OUT_OF_MEMORY, "vulkan: no host memory for a graph's scratch");
    if (!(x = (dk_vk_scr *)calloc(1, sizeof *x))) return dk__error(DK_ERR_OUT_OF_MEMORY, "vulkan: no host memory for a graph's scratch");
    x->st.device = dv;
    x->st.nbytes = (size_t)want;
    if ((s = dk_vk_alloc(dv, (size_t)want, "graph scratch", &x->st)) != DK_OK) { free(x); return s; }
    dk_vk_scratch_header(&x->t, &x->st, dv, want);
    g->scr[g->nscr++] = x;
    *out = &x->t;
    return DK_OK;
  }
  if (!d->part_st.ptr || d->part_st.nbytes < n) {
    VkDeviceSize want = (VkDeviceSize)1 << 20;
    while (want < n) want *= 2;
    if (d->part_st.ptr) dk_vk_release(&d->part_st);
    memset(&d->part_st, 0, sizeof d->part_st);
    d->part_st.device = dv;
    d->part_st.nbytes = (size_t)want;
    if ((s = dk_vk_alloc(dv, (size_t)want, "device scratch", &d->part_st)) != DK_OK) {
      memset(&d->part_st, 0, sizeof d->part_st);
      return s;
    }
    dk_vk_scratch_header(&d->part_t, &d->part_st, dv, want);
  }
  *out = &d->part_t;
  return DK_OK;
}

/* How many splits a row's positions take (see attention.comp): enough that
 * no invocation runs DK_VK_ATT_LOOPS loop iterations, and on GPUs enough
 * workgroups to fill the device when the rows are few (decode). */
static uint32_t dk_vk_att_splits(const dk_vk_device *d, int64_t rows, int64_t S, int64_t D, int64_t Dv, int64_t hg,
                                 int lanes_d, uint32_t *split_len) {
  const int64_t w = d->wg_rows, cpu = d->ph->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
  const int64_t per_chunk = 1 + D + (Dv + w - 1) / w * (w + 1), fixed = 3 * hg * (D > Dv ? D : Dv) / w + 8;
  int64_t maxlen = (DK_VK_ATT_LOOPS - fixed) / per_chunk * w, n, want, minlen = cpu ? 64 : 256;
  /* attention_rows: its loops over a row's texels and heads are unrolled
   * where the compiler can (Mesa 22.3's can), but counted as loops in case
   * they are not; a key costs ~0.1 us, so a split (and the merge's
   * dispatch) pays off for parallelism only on long rows */
  if (lanes_d) maxlen = (DK_VK_ATT_LOOPS - 64) / (1 + D / (4 * w) * (1 + 2 * hg)), minlen = 512;
  if (maxlen < w) maxlen = w;
  n = (S + maxlen - 1) / maxlen;
  /* spread a step of few rows: a GPU wants some hundreds of workgroups, a
   * CPU device one or two per core */
  want = cpu ? 4 : 256;
  if (rows < want && S > minlen) {
    int64_t par = (want + rows - 1) / rows, most = (S + minlen - 1) / minlen;
    if (par > most) par = most;
    if (par > n) n = par;
  }
  if (n < 1) n = 1;
  if (n > DK_VK_ATT_MAXN) n = DK_VK_ATT_MAXN;
  *split_len = (uint32_t)((S + n - 1) / n);
  if (*split_len == 0) *split_len = 1;
  return (uint32_t)((S + *split_len - 1) / *split_len > 0 ? (S + *split_len - 1) / *split_len : 1);
}

/* the push constants every attention dispatch shares: shapes, scale, the
 * causal offset (-1: no mask) and the window (0: none), both clamped to 32
 * bits */
static void dk_vk_attn_pc(const dk_call *c, dk_vk_pc_attn *pc) {
  const dk_tensor *q = c->t[1], *k = c->t[2], *v = c->t[3];
  memset(pc, 0, sizeof *pc);
  pc->T = (uint32_t)q->shape[0];
  pc->Hq = (uint32_t)q->shape[1];
  pc->D = (uint32_t)q->shape[2];
  pc->S = (uint32_t)k->shape[0];
  pc->Hkv = (uint32_t)k->shape[1];
  pc->Dv = (uint32_t)v->shape[2];
  pc->scale = c->f[0];
  pc->off = c->i[0] < 0 ? -1 : (c->i[0] > 0x7fffffff ? 0x7fffffff : (int32_t)c->i[0]);
  pc->win = c->i[1] > 0 ? (c->i[1] > 0x7fffffff ? 0x7fffffff : (uint32_t)c->i[1]) : 0;
}

/* A prompt's attention on attn_flash.comp (DEVKIT_VULKAN_FLASH): more than
 * one query row, heads of 64, an f16 cache that starts on a 32-bit word,
 * limits from the causal offset (dk_attention, dk_attention_window), not
 * from positions. *taken = 0 leaves the call to attention.comp. */
static dk_status dk_vk_attn_flash(dk_vk_device *d, const dk_call *c, int *taken) {
  const dk_tensor *o = c->t[0], *q = c->t[1], *k = c->t[2], *v = c->t[3];
  int64_t T = q->shape[0], Hq = q->shape[1], S = k->shape[0];
  dk_vk_pc_attn pc;
  dk_vk_args args;
  uint32_t spec[DK_VK_SPEC];
  dk_status s;
  *taken = 0;
  if (d->flash_spv < 0 || T < 2 || c->t[4] || k->dtype != DK_F16 || v->dtype != DK_F16 || q->shape[2] != DK_VK_FLASH_D ||
      v->shape[2] != DK_VK_FLASH_D || (T + DK_VK_FLASH_BR - 1) / DK_VK_FLASH_BR > 65535 || Hq > 65535)
    return DK_OK;
  /* the emulated variant on a CPU device: llvmpipe ends an invocation's
   * loops after 65535 iterations in all, about 1600 a tile of 64 keys */
  if (d->flash_spv == DK_SPV_ATTN_FLASH_EMU && d->ph->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU && S > 2048)
    return DK_OK;
  dk_vk_attn_pc(c, &pc);
  dk_vk_args_init(&args);
  if ((s = dk_vk_arg_t(d, &args, 0, o, 1, &pc.o_off, "out")) != DK_OK ||
      (s = dk_vk_arg_t(d, &args, 1, q, 0, &pc.q_off, "q")) != DK_OK ||
      (s = dk_vk_arg_t(d, &args, 2, k, 0, &pc.k_off, "k")) != DK_OK ||
      (s = dk_vk_arg_t(d, &args, 3, v, 0, &pc.v_off, "v")) != DK_OK)
    return s;
  if (pc.k_off % 2 || pc.v_off % 2) return DK_OK;   /* the tiles are read a word (two halves) at a time */
  dk_vk_arg_dummy(d, &args, 4);
  memset(spec, 0, sizeof spec);
  spec[0] = (uint32_t)q->dtype;
  *taken = 1;
  return dk_vk_run(d, d->flash_spv, spec, &args, &pc, sizeof pc, (uint32_t)((T + DK_VK_FLASH_BR - 1) / DK_VK_FLASH_BR),
                   (uint32_t)Hq, 1);
}

static dk_status dk_vk_attention(dk_vk_device *d, const dk_call *c) {
  const dk_tensor *o = c->t[0], *q = c->t[1], *k = c->t[2], *v = c->t[3], *part = NULL;
  dk_vk_pc_attn pc;
  dk_vk_args args;
  uint32_t gx, gy, spec[DK_VK_SPEC];
  int64_t T = q->shape[0], Hq = q->shape[1], D = q->shape[2], S = k->shape[0], Dv = v->shape[2];
  int64_t rows = T * Hq, dmax = D > Dv ? D : Dv, grp = k->shape[1] ? Hq / k->shape[1] : 1, hg, piece, t0;
  int lanes_d, kvw;
  VkDeviceSize per_token, cap;
  dk_status s;
  if (rows == 0 || Dv == 0) return DK_OK;
  if (d->flash_spv >= 0) {
    int taken;
    if ((s = dk_vk_attn_flash(d, c, &taken)) != DK_OK || taken) return s;
  }
  if (dmax > DK_VK_ATT_QMAX)
    return dk__error(DK_ERR_UNSUPPORTED, "dk_attention on %s: head dims %lld/%lld; the Vulkan kernel takes up to %d",
                     dk_device_name(c->dev), (long long)D, (long long)Dv, DK_VK_ATT_QMAX);
  /* attention_rows on CPU devices (attention.comp): f32 or f16 k and v
   * (both the same) as texels, D = Dv in whole texels a lane, at most 16
   * vec4s a lane and 64 for its heads */
  kvw = k->dtype == DK_F32 ? 4 : 8;   /* values a texel */
  lanes_d = d->tex && d->one_sg && (k->dtype == DK_F32 || k->dtype == DK_F16) && v->dtype == k->dtype && D == Dv &&
            D % (kvw * d->wg_rows) == 0 && D / (4 * d->wg_rows) <= 16;
retry:
  part = NULL;
  /* the query heads of one kv head that a workgroup serves: a divisor of the
   * group, as many as fit, so K and V rows are read once for all of them */
  for (hg = DK_VK_ATT_HMAX; hg > 1; hg--)
    if (grp % hg == 0 && hg * (dmax ? dmax : 1) <= DK_VK_ATT_QMAX &&
        (!lanes_d || hg * D / (4 * d->wg_rows) <= 64))
      break;
  dk_vk_attn_pc(c, &pc);
  pc.nsplit = dk_vk_att_splits(d, T * (Hq / hg), S, D, Dv, hg, lanes_d, &pc.split_len);
  memset(spec, 0, sizeof spec);
  spec[0] = (uint32_t)q->dtype;
  spec[1] = (uint32_t)k->dtype;
  spec[2] = (uint32_t)hg;
  spec[5] = lanes_d ? (uint32_t)D : 0;
  /* with splits, the records of as many tokens as DK_VK_ATT_PART_BYTES (or
   * one binding) holds at a time */
  per_token = (VkDeviceSize)Hq * pc.nsplit * (VkDeviceSize)(Dv + 2) * 4;
  cap = d->max_range < DK_VK_ATT_PART_BYTES ? d->max_range : DK_VK_ATT_PART_BYTES;
  piece = pc.nsplit == 1 ? T : (int64_t)(cap / per_token > 0 ? cap / per_token : 1);
  if (piece > T) piece = T;
  if (pc.nsplit > 1 && (s = dk_vk_scratch(d, per_token * (VkDeviceSize)piece, &part)) != DK_OK) return s;
  for (t0 = 0; t0 < T; t0 += piece) {
    int64_t n = T - t0 < piece ? T - t0 : piece;
    VkDeviceSize rec_bytes = per_token * (VkDeviceSize)n;
    pc.t0 = (uint32_t)t0;
    pc.T = (uint32_t)n;
    dk_vk_args_init(&args);
    if ((part ? (s = dk_vk_arg(d, &args, 0, part, 0, rec_bytes, 1, 4, &pc.o_off, "records"))
              : (s = dk_vk_arg_t(d, &args, 0, o, 1, &pc.o_off, "out"))) != DK_OK ||
        (s = dk_vk_arg_t(d, &args, 1, q, 0, &pc.q_off, "q")) != DK_OK ||
        (s = dk_vk_arg_t(d, &args, 2, k, 0, &pc.k_off, "k")) != DK_OK ||
        (s = dk_vk_arg_t(d, &args, 3, v, 0, &pc.v_off, "v")) != DK_OK)
      return s;
    if (c->t[4]) {
      if ((s = dk_vk_arg_t(d, &args, 4, c->t[4], 0, &pc.pos_off, "positions")) != DK_OK) return s;
    } else {
      dk_vk_arg_dummy(d, &args, 4);
    }
    spec[3] = part != NULL;
    spec[4] = c->t[4] != NULL;
    if (lanes_d && (pc.k_off % kvw || pc.v_off % kvw || !dk_vk_texels(d, &args, 2, 0) || !dk_vk_texels(d, &args, 3, 1))) {
      /* k or v off the texel grid, or no view of them: the general kernel
       * (nothing recorded yet: the first piece decides) */
      lanes_d = 0;
      goto retry;
    }
    dk_vk_grid((uint64_t)(n * (Hq / hg)) * pc.nsplit, 65535u * 16u, &gx, &gy);
    if ((s = dk_vk_run(d, lanes_d ? DK_SPV_ATTENTION_ROWS : dk_vk_pick(d, DK_SPV_ATTENTION, DK_SPV_ATTENTION_NOSG), spec,
                       &args, &pc, sizeof pc, gx, gy, 1)) != DK_OK)
      return s;
    if (part) {
      /* merge: out (binding 0) from the records (binding 1); q_off is the
       * records' offset */
      dk_vk_pc_attn mp = pc;
      uint32_t mspec[DK_VK_SPEC];
      memset(mspec, 0, sizeof mspec);
      mspec[0] = (uint32_t)o->dtype;
      dk_vk_args_init(&args);
      if ((s = dk_vk_arg_t(d, &args, 0, o, 1, &mp.o_off, "out")) != DK_OK ||
          (s = dk_vk_arg(d, &args, 1, part, 0, rec_bytes, 0, 4, &mp.q_off, "records")) != DK_OK)
        return s;
      dk_vk_arg_dummy(d, &args, 2);
      dk_vk_arg_dummy(d, &args, 3);
      dk_vk_arg_dummy(d, &args, 4);
      dk_vk_grid((uint64_t)(n * Hq), 65535u * 16u, &gx, &gy);
      if ((s = dk_vk_run(d, DK_SPV_ATTN_MERGE, mspec, &args, &mp, sizeof mp, gx, gy, 1)) != DK_OK) return s;
    }
  }
  return DK_OK;
}

/* ---- matmul and linear ---------------------------------------------------------- */

static dk_status dk_vk_mm_dispatch(dk_vk_device *d, int spv, const uint32_t *spec, dk_vk_args *args, dk_vk_pc_mm *pc,
                                   uint32_t batch) {
  uint32_t z0;
  uint32_t gx = (pc->N + 63) / 64, gy = (pc->M + 63) / 64;
  dk_status s;
  if (gy > 65535)
    return dk__error(DK_ERR_UNSUPPORTED, "matmul on %s: M = %u rows is more than one dispatch covers (%u)",
                     dk_device_name(dk_vk_devid(d->logical)), pc->M, 65535u * 64u);
  for (z0 = 0; z0 < batch; z0 += 65535) {
    pc->z_base = z0;
    if ((s = dk_vk_run(d, spv, spec, args, pc, sizeof *pc, gx, gy, batch - z0 < 65535 ? batch - z0 : 65535)) != DK_OK)
      return s;
  }
  return DK_OK;
}

static dk_status dk_vk_matmul(dk_vk_device *d, const dk_call *c) {
  const dk_tensor *o = c->t[0], *a = c->t[1], *b = c->t[2];
  int64_t M = c->i[0], N = c->i[1], K = c->i[2], outer, ot, shape4[4], str4[4][4], off[4];
  int abat = a->ndim > 2 ? a->ndim - 2 : 0, bbat = b->ndim > 2 ? b->ndim - 2 : 0;
  int nb = abat > bbat ? abat : bbat, i;
  dk_vk_pc_mm pc;
  dk_vk_args args;
  dk_vk_lay l;
  uint32_t spec[DK_VK_SPEC];
  dk_status s;
  if (M == 0 || N == 0 || c->i[3] == 0) return DK_OK;
  memset(&pc, 0, sizeof pc);
  dk_vk_args_init(&args);
  if ((s = dk_vk_arg_t(d, &args, 0, o, 1, &pc.o_off, "out")) != DK_OK ||
      (s = dk_vk_arg_t(d, &args, 1, a, 0, &pc.a_off, "a")) != DK_OK ||
      (s = dk_vk_arg_t(d, &args, 2, b, 0, &pc.b_off, "b")) != DK_OK)
    return s;
  dk_vk_arg_dummy(d, &args, 3);
  pc.M = (uint32_t)M;
  pc.N = (uint32_t)N;
  pc.K = (uint32_t)K;
  memset(spec, 0, sizeof spec);
  spec[0] = spec[1] = spec[2] = spec[3] = (uint32_t)o->dtype;
  spec[5] = 1;
  pc.a_rs = (uint32_t)(a->ndim >= 2 ? a->stride[a->ndim - 2] : 0);
  pc.b_rs = (uint32_t)(b->ndim >= 2 ? b->stride[b->ndim - 2] : b->stride[0]);
  pc.b_cs = 1;
  pc.ldo = (uint32_t)N;
  pc.obs = (uint32_t)(M * N);
  /* batch dims, broadcast, collapsed; at most three per dispatch */
  memset(&l, 0, sizeof l);
  l.nd = nb;
  l.k = 3;
  for (i = 0; i < nb; i++) {
    int ia = i - (nb - abat), ib = i - (nb - bbat);
    int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    l.shape[i] = da > db ? da : db;
    l.str[1][i] = (ia >= 0 && da != 1) ? a->stride[ia] : 0;
    l.str[2][i] = (ib >= 0 && db != 1) ? b->stride[ib] : 0;
  }
  for (i = nb - 1; i >= 0; i--) l.str[0][i] = i == nb - 1 ? M * N : l.str[0][i + 1] * l.shape[i + 1];
  dk_vk_collapse(&l);
  outer = dk_vk_outer_count(&l, 3);
  for (ot = 0; ot < outer; ot++) {
    dk_vk_pc_mm p = pc;
    dk_vk_inner(&l, 3, ot, shape4, str4, off);
    p.nb1 = (uint32_t)shape4[1];
    p.nb2 = (uint32_t)shape4[2];
    for (i = 0; i < 3; i++) {
      p.abs_[i] = (uint32_t)str4[1][i];
      p.bbs[i] = (uint32_t)str4[2][i];
    }
    p.o_off += (uint32_t)off[0];
    p.a_off += (uint32_t)off[1];
    p.b_off += (uint32_t)off[2];
    if ((s = dk_vk_mm_dispatch(d, DK_SPV_MATMUL, spec, &args, &p, (uint32_t)(shape4[0] * shape4[1] * shape4[2]))) !=
        DK_OK)
      return s;
  }
  return DK_OK;
}

static uint32_t dk_vk_esize(dk_dtype t) { return (uint32_t)dk_dtype_block_bytes(t); }

/* bytes a window may span so that, with its start aligned down for the
 * descriptor and its end rounded up to a word, it still binds */
static VkDeviceSize dk_vk_window_cap(dk_vk_device *d) { return d->max_range - d->ph->align - 4; }

/* how many rows of `rb` bytes from row r0 of m fit in one binding and one
 * segment */
static int64_t dk_vk_rows_fit(dk_vk_device *d, const dk_tensor *t, int64_t r0, int64_t want, VkDeviceSize rb) {
  dk_vk_mem *m = (dk_vk_mem *)t->st->ptr;
  int64_t n = want;
  if (rb == 0) return want;
  if ((VkDeviceSize)n * rb > dk_vk_window_cap(d)) n = (int64_t)(dk_vk_window_cap(d) / rb);
  if (m->nseg > 1) {
    VkDeviceSize a = (VkDeviceSize)t->offset + (VkDeviceSize)r0 * rb;
    int i = (int)(a / m->seg_stride);
    VkDeviceSize end;
    if (i >= m->nseg) i = m->nseg - 1;
    end = (VkDeviceSize)i * m->seg_stride + m->seg[i]->size;
    if ((VkDeviceSize)n * rb > end - a) n = (int64_t)((end - a) / rb);
  }
  return n;
}

static dk_status dk_vk_too_big(const dk_call *c, const dk_tensor *t, const char *role, VkDeviceSize unit) {
  return dk__error(DK_ERR_UNSUPPORTED, "%s on %s: one row of %s '%s' (%llu bytes) does not fit in one binding",
                   dk__op_name(c->op), dk_device_name(c->dev), role, t->name, (unsigned long long)unit);
}

/* the linear kernels' 16-byte-load flags: bit 0 where every row of w starts
 * on 16 bytes, bit 1 where every row of x does (dot8 reads x from multiples
 * of 8); offsets and K in elements (matvec_rows adds bit 2) */
static uint32_t dk_vk_row_align(dk_dtype wdt, uint64_t w_off, dk_dtype xdt, uint64_t x_off, int64_t K) {
  uint32_t f = wdt == DK_F32 ? (w_off % 4 == 0 && K % 4 == 0) : (w_off % 8 == 0 && K % 8 == 0);
  if (xdt == DK_F32 ? (x_off % 4 == 0 && K % 4 == 0) : (x_off % 8 == 0 && K % 8 == 0)) f |= 2u;
  return f;
}

/* rows of w per lane in matvec_rows on CPU devices (its RPL), 1 to 8. A
 * lane walks RPL consecutive rows as one stream, so rows shorter than 4 KB
 * (which the prefetchers barely notice before they end) join into runs, and
 * the block formats read x once for all of them (rows_blockwise,
 * rows_kquant), where each read is a texel fetch per lane. A workgroup of
 * 64 lanes is one task for one of the device's `threads` and costs the same
 * with lanes past N, so the cost counted is the rounds of workgroups a
 * thread runs times (RPL + 1) (the rows, and x's reads at about the cost of
 * one row); the cheapest RPL, the largest of a tie. Gemma 3 270M's 640-row
 * q4_K/q6_K products on two threads (lavapipe, 2026-11-28): RPL 1, 2, 4, 5,
 * 8 took 415, 299, 266, 240, 396 us (q4_K 640 x 2048) */
static uint32_t dk_vk_rows_per_lane(const dk_vk_device *d, dk_dtype wdt, int64_t K, int64_t N) {
  const int threads = d->cpu_threads;
  uint32_t r, best = 1;
  int64_t best_cost = -1;
  if (d->rows_force) return (uint32_t)d->rows_force;
  if (dk__row_bytes(wdt, K) >= 4096) return 1;
  for (r = 1; r <= 8; r++) {
    int64_t groups = (N + 64 * r - 1) / (64 * r), rounds = (groups + threads - 1) / threads, cost = rounds * (r + 1);
    if (best_cost < 0 || cost <= best_cost) best = r, best_cost = cost;
  }
  return best;
}

/* matvec_vec.comp for f32 x and w of dtype wdt at element offsets x_off,
 * w_off: its kernel, with the offsets and x's row stride in pc in 16-byte
 * units (q8_0/q4_0 w: 4-byte units, K % 64 == 0); -1 where x or w is off
 * that grid, or the device does not take wdt there */
static int dk_vk_vec_takes(const dk_vk_device *d, dk_dtype wdt, int64_t K) {
  if (wdt == DK_Q8_0 || wdt == DK_Q4_0) return d->vec_q && K % 64 == 0;
  return (wdt == DK_F32 || wdt == DK_F16 || wdt == DK_BF16) && K % 8 == 0;
}
static int dk_vk_vec_pc(const dk_vk_device *d, dk_vk_pc_mv *pc, dk_dtype wdt, uint32_t x_off, uint32_t w_off, int64_t K) {
  const int q = wdt == DK_Q8_0 || wdt == DK_Q4_0;
  const VkDeviceSize wb = (VkDeviceSize)w_off * dk_vk_unit(wdt), grid = q ? 4 : 16;
  if (!dk_vk_vec_takes(d, wdt, K) || ((VkDeviceSize)x_off * 4) % 16 || wb % grid) return -1;
  pc->x_off = (uint32_t)((VkDeviceSize)x_off * 4 / 16);
  pc->w_off = (uint32_t)(wb / grid);
  pc->ldx = (uint32_t)(K / 4);
  if (q) return wdt == DK_Q8_0 ? DK_SPV_MATVEC_VEC_Q8_0 : DK_SPV_MATVEC_VEC_Q4_0;
  return DK_SPV_MATVEC_VEC_F32 + (wdt == DK_F32 ? 0 : wdt == DK_F16 ? 1 : 2);
}

static dk_status dk_vk_linear(dk_vk_device *d, const dk_call *c) {
  const dk_tensor *o = c->t[0], *x = c->t[1], *w = c->t[2], *bias = c->t[3];
  int64_t M = c->i[0], N = c->i[1], K = c->i[2], n0, m0;
  VkDeviceSize rb = dk__row_bytes(w->dtype, K), xsz = dk_vk_esize(x->dtype), osz = dk_vk_esize(o->dtype);
  VkDeviceSize R = dk_vk_window_cap(d);
  /* the block formats beyond q8_0/q4_0: the row kernel's generic variants
   * at decode, matmul.comp's matmul_qk for prompts on GPUs */
  int more = (DK_QUANTS_MORE >> w->dtype) & 1;
  int quant = dk_dtype_is_quant(w->dtype);
  /* DEVKIT_VULKAN_COOPMAT: gemm_coop.comp for every weight dtype whose
   * products may round x to f16 (dk__cuda_prompt_type's rule) */
  int coop = d->coop_spv >= 0 && M > DK_VK_MV_MAXM && (x->dtype == DK_F32 || x->dtype == DK_F16) &&
             (w->dtype == DK_F16 || quant) && !w->precise;
  /* CPU devices, more rows than the row kernel takes at once: register-tiled
   * gemm_rows.comp for every weight dtype (the row kernel re-reads x per w
   * value; 10-80x slower here) */
  int gemm = !coop && d->gemm_rows && M > DK_VK_MV_MAXM;
  int mv = !gemm && !coop && (M <= DK_VK_MV_MAXM || d->rows_mv || (more && d->gemm_off));
  int64_t mcap = M;
  dk_status s;
  if (M == 0 || N == 0) return DK_OK;
  if (gemm && mcap > (int64_t)65535 * DK_VK_GEMM_TM) mcap = (int64_t)65535 * DK_VK_GEMM_TM;
  if (coop && mcap > (int64_t)65535 * DK_VK_COOP_BM) mcap = (int64_t)65535 * DK_VK_COOP_BM;
  if (mv && mcap > DK_VK_MV_MAXM) mcap = DK_VK_MV_MAXM;
  if (K && (VkDeviceSize)mcap * (VkDeviceSize)K * xsz > R) mcap = (int64_t)(R / ((VkDeviceSize)K * xsz));
  if (mcap < 1) return dk_vk_too_big(c, x, "x", (VkDeviceSize)K * xsz);
  for (n0 = 0; n0 < N;) {
    int64_t nc = dk_vk_rows_fit(d, w, n0, N - n0, rb), mc;
    if ((VkDeviceSize)nc * osz > R) nc = (int64_t)(R / osz);
    if (nc < 1) return dk_vk_too_big(c, w, "w", rb);
    for (m0 = 0; m0 < M; m0 += mc) {
      dk_vk_args args;
      uint32_t o_off, x_off, w_off, b_off = 0, spec[DK_VK_SPEC];
      int64_t mc_out = (int64_t)((R / osz - (VkDeviceSize)nc) / (VkDeviceSize)N) + 1;
      mc = M - m0 < mcap ? M - m0 : mcap;
      if (mc > mc_out) mc = mc_out;
      dk_vk_args_init(&args);
      if ((s = dk_vk_arg(d, &args, 0, o, ((VkDeviceSize)m0 * N + n0) * osz, ((VkDeviceSize)(mc - 1) * N + nc) * osz, 1,
                         dk_vk_unit(o->dtype), &o_off, "out")) != DK_OK ||
          (s = dk_vk_arg(d, &args, 1, x, (VkDeviceSize)m0 * K * xsz, (VkDeviceSize)mc * K * xsz, 0, dk_vk_unit(x->dtype),
                         &x_off, "x")) != DK_OK ||
          (s = dk_vk_arg(d, &args, 2, w, (VkDeviceSize)n0 * rb, (VkDeviceSize)nc * rb, 0, dk_vk_unit(w->dtype), &w_off,
                         "w")) != DK_OK)
        return s;
      if (bias) {
        VkDeviceSize bsz = dk_vk_esize(bias->dtype);
        if ((s = dk_vk_arg(d, &args, 3, bias, (VkDeviceSize)n0 * bsz, (VkDeviceSize)nc * bsz, 0, dk_vk_unit(bias->dtype),
                           &b_off, "bias")) != DK_OK)
          return s;
      } else {
        dk_vk_arg_dummy(d, &args, 3);
      }
      memset(spec, 0, sizeof spec);
      if (gemm || mv) {
        /* the row kernels (matvec*.comp, gemm_rows.comp) share their
         * constants and push constants but the third word: matvec's x chunk
         * KC, gemm_rows' row count M */
        dk_vk_pc_mv pc;
        memset(&pc, 0, sizeof pc);
        spec[0] = (uint32_t)x->dtype;
        spec[1] = (uint32_t)o->dtype;
        spec[2] = (uint32_t)(bias ? bias->dtype : DK_F32);
        spec[3] = bias != NULL;
        spec[5] = dk_vk_row_align(w->dtype, w_off, x->dtype, x_off, K);
        pc.N = (uint32_t)nc;
        pc.K = (uint32_t)K;
        pc.x_off = x_off;
        pc.w_off = w_off;
        pc.o_off = o_off;
        pc.b_off = b_off;
        pc.ldx = (uint32_t)K;
        pc.ldo = (uint32_t)N;
        if (gemm) {
          uint32_t gx = (uint32_t)((nc + DK_VK_GEMM_WG * DK_VK_GEMM_TN - 1) / (DK_VK_GEMM_WG * DK_VK_GEMM_TN));
          uint32_t gy = (uint32_t)((mc + DK_VK_GEMM_TM - 1) / DK_VK_GEMM_TM);
          int spv = DK_SPV_GEMM_ROWS;
          if (gx > 65535) return dk_vk_too_big(c, w, "w", rb);
          spec[4] = (uint32_t)w->dtype;
          pc.KC = (uint32_t)mc;
          if (d->tex && dk_vk_texels(d, &args, 2, 0) && dk_vk_texels(d, &args, 1, 1)) spv = DK_SPV_GEMM_ROWS_T;
          if ((s = dk_vk_run(d, spv, spec, &args, &pc, sizeof pc, gx, gy, 1)) != DK_OK) return s;
        } else {
          int spv = d->rows_mv ? DK_SPV_MATVEC_ROWS_F32 : d->sg ? DK_SPV_MATVEC_F32 : DK_SPV_MATVEC_F32_NOSG, vspv;
          uint32_t gx, gy, per = d->rows_mv || more ? 64 : DK_VK_MV_ROWS;
          spv += w->dtype == DK_F32 ? 0 : w->dtype == DK_F16 ? 1 : w->dtype == DK_BF16 ? 2 : w->dtype == DK_Q8_0 ? 3 : 4;
          if (more) spv = DK_SPV_MATVEC_ROWS_Q4_1 + (int)(w->dtype - DK_Q4_1);
          if (d->int8_dot && !d->rows_mv && quant && !more) spv = w->dtype == DK_Q8_0 ? DK_SPV_MATVEC_Q8_0_DOT : DK_SPV_MATVEC_Q4_0_DOT;
          spec[4] = (uint32_t)mc;
          pc.KC = (uint32_t)((DK_VK_MV_XS / mc) & ~31);
          if (d->vec_mv && !more && x->dtype == DK_F32 && (vspv = dk_vk_vec_pc(d, &pc, w->dtype, x_off, w_off, K)) >= 0) {
            spv = vspv;
            per = 2;   /* its R */
            dk_vk_arg_dummy(d, &args, 4);   /* its PRO operand (dk_vk_fused_vec), unused here */
          }
          if (d->tex && spv >= DK_SPV_MATVEC_ROWS_F32 && spv <= DK_SPV_MATVEC_ROWS_IQ2_S &&
              dk_vk_texels(d, &args, 2, 0) && dk_vk_texels(d, &args, 1, 1))
            /* the same kernel reading w and x as texels (dk_vk_block_view) */
            spv += DK_SPV_MATVEC_ROWS_T_F32 - DK_SPV_MATVEC_ROWS_F32;
          if (spv >= DK_SPV_MATVEC_ROWS_F32 && spv <= DK_SPV_MATVEC_ROWS_T_IQ2_S) {
            uint32_t rpl = d->rows_mv ? dk_vk_rows_per_lane(d, w->dtype, K, nc) : 1;
            if (quant && dk_dtype_block(w->dtype) == 32 && (spec[5] & 1u) && (K / 32) % 8 == 0)
              /* every row of w is whole chunks of eight blocks on the 16-byte
               * grid: a constant, so that a software device does not also run
               * the other path's loops with every lane masked off */
              spec[5] |= 4u;
            spec[8] = rpl - 1;
            per *= rpl;
          }
          dk_vk_grid((uint64_t)(nc + per - 1) / per, 0, &gx, &gy);
          if ((s = dk_vk_run(d, spv, spec, &args, &pc, sizeof pc, gx, gy, 1)) != DK_OK) return s;
        }
      } else {
        dk_vk_pc_mm pc;
        memset(&pc, 0, sizeof pc);
        pc.M = (uint32_t)mc;
        pc.N = (uint32_t)nc;
        pc.K = (uint32_t)K;
        spec[0] = (uint32_t)x->dtype;
        spec[1] = (uint32_t)w->dtype;
        spec[2] = (uint32_t)o->dtype;
        spec[3] = (uint32_t)(bias ? bias->dtype : DK_F32);
        spec[4] = bias != NULL;
        spec[5] = 0;
        pc.a_off = x_off;
        pc.b_off = w_off;
        pc.o_off = o_off;
        pc.bias_off = b_off;
        pc.a_rs = (uint32_t)K;
        pc.b_rs = 1;
        pc.b_cs = (uint32_t)K;
        pc.ldo = (uint32_t)N;
        pc.nb1 = pc.nb2 = 1;
        if (coop) {
          uint32_t gx = (uint32_t)((nc + DK_VK_COOP_BN - 1) / DK_VK_COOP_BN), gy = (uint32_t)((mc + DK_VK_COOP_BM - 1) / DK_VK_COOP_BM);
          if (gx > 65535) return dk_vk_too_big(c, w, "w", rb);
          s = dk_vk_run(d, d->coop_spv, spec, &args, &pc, sizeof pc, gx, gy, 1);
        } else {
          s = dk_vk_mm_dispatch(d, !quant ? DK_SPV_MATMUL : w->dtype == DK_Q8_0 ? DK_SPV_MATMUL_Q8_0
                                   : w->dtype == DK_Q4_0 ? DK_SPV_MATMUL_Q4_0 : DK_SPV_MATMUL_QK, spec, &args, &pc, 1);
        }
        if (s != DK_OK) return s;
      }
    }
    n0 += nc;
  }
  return DK_OK;
}

/* ---- embedding ------------------------------------------------------------------ */

/* a status slot in the frame being recorded, with what the message needs */
static dk_status dk_vk_check_slot(dk_vk_device *d, const dk_call *c, int64_t pos_base, dk_vk_args *a, int bind,
                                  uint32_t *slot) {
  dk_vk_frame *f;
  dk_vk_check *k;
  const dk_tensor *tab;
  uint32_t *words;
  int fi;
  dk_status s;
  if ((s = dk_vk_begin(d)) != DK_OK) return s;
  if (d->grec && d->frames[d->rec].nchecks == DK_VK_CHECKS)
    return dk__error(DK_ERR_UNSUPPORTED, "%s: a graph on %s holds at most %d dk_embedding and dk_index_select calls; "
                     "record fewer in one graph", dk__op_name(c->op), dk_device_name(dk_vk_devid(d->logical)), DK_VK_CHECKS);
  if (d->frames[d->rec].nchecks == DK_VK_CHECKS && ((s = dk_vk_submit(d)) != DK_OK || (s = dk_vk_begin(d)) != DK_OK))
    return s;
  fi = d->rec;
  f = &d->frames[fi];
  *slot = (uint32_t)f->nchecks++;
  k = &f->checks[*slot];
  /* the table: dk_embedding's and dk_index_select's input, dk_index_copy's dst */
  tab = c->t[c->op == DK_OP_INDEX_COPY ? 0 : 1];
  snprintf(k->ids, sizeof k->ids, "%s", c->t[2]->name);
  snprintf(k->table, sizeof k->table, "%s", tab->name);
  snprintf(k->site, sizeof k->site, "%s", c->t[2]->site);
  k->op = c->op;
  k->word = (uint32_t)fi * DK_VK_CHECKS + *slot;
  k->axis = c->op == DK_OP_EMBEDDING ? -1 : (int)c->i[0];
  k->rows = (long long)tab->shape[k->axis >= 0 ? k->axis : 0];
  k->pos_base = (long long)pos_base;
  words = (uint32_t *)(d->status->map + ((size_t)fi * DK_VK_CHECKS + *slot) * 16);
  /* a graph's words are cleared by each replay (another graph's replay may be using them now) */
  if (!d->grec) words[0] = words[1] = words[2] = words[3] = 0;
  dk_vk_arg_raw(a, bind, d->status->buf, (VkDeviceSize)fi * DK_VK_CHECKS * 16, DK_VK_CHECKS * 16);
  dk_vk_track(a, d->status->buf, ((VkDeviceSize)fi * DK_VK_CHECKS + *slot) * 16,
              ((VkDeviceSize)fi * DK_VK_CHECKS + *slot + 1) * 16, 1, NULL);
  return DK_OK;
}

static dk_status dk_vk_embedding(dk_vk_device *d, const dk_call *c) {
  const dk_tensor *o = c->t[0], *tab = c->t[1], *ids = c->t[2];
  int64_t D = tab->shape[1], rows = tab->shape[0], nid = dk_tensor_numel(ids), icap = nid, k0, r0;
  VkDeviceSize rb = dk__row_bytes(tab->dtype, D), osz = dk_vk_esize(o->dtype), R = dk_vk_window_cap(d);
  int spv = dk_vk_pick(d, DK_SPV_EMBEDDING, DK_SPV_EMBEDDING_NOSG);
  dk_status s;
  if (nid == 0) return DK_OK;
  if (D && (VkDeviceSize)icap * (VkDeviceSize)D * osz > R) icap = (int64_t)(R / ((VkDeviceSize)D * osz));
  if ((VkDeviceSize)icap * 4 > R) icap = (int64_t)(R / 4);
  if (icap < 1) return dk_vk_too_big(c, o, "out", (VkDeviceSize)D * osz);
  for (k0 = 0; k0 < nid; k0 += icap) {
    int64_t kc = nid - k0 < icap ? nid - k0 : icap, rc;
    int first = 1;
    for (r0 = 0; first || r0 < rows; r0 += rc) {
      dk_vk_args args;
      dk_vk_pc_embed pc;
      uint32_t gx, gy, spec[DK_VK_SPEC];
      rc = rows > r0 ? dk_vk_rows_fit(d, tab, r0, rows - r0, rb) : 0;
      if (rows > r0 && rc < 1) return dk_vk_too_big(c, tab, "table", rb);
      memset(&pc, 0, sizeof pc);
      dk_vk_args_init(&args);
      if ((s = dk_vk_arg(d, &args, 0, o, (VkDeviceSize)k0 * D * osz, (VkDeviceSize)kc * D * osz, 1, dk_vk_unit(o->dtype),
                         &pc.o_off, "out")) != DK_OK ||
          (s = dk_vk_arg(d, &args, 1, tab, (VkDeviceSize)r0 * rb, (VkDeviceSize)rc * rb, 0, dk_vk_unit(tab->dtype),
                         &pc.t_off, "table")) != DK_OK ||
          (s = dk_vk_arg(d, &args, 2, ids, (VkDeviceSize)k0 * 4, (VkDeviceSize)kc * 4, 0, 4, &pc.ids_off, "ids")) != DK_OK)
        return s;
      if (first) {
        if ((s = dk_vk_check_slot(d, c, k0, &args, 3, &pc.slot)) != DK_OK) return s;
      } else {
        dk_vk_arg_dummy(d, &args, 3);
      }
      pc.n = (uint32_t)(kc * D);
      pc.D = (uint32_t)D;
      pc.md = dk_vk_magic_for((uint64_t)D);
      memset(spec, 0, sizeof spec);
      spec[0] = (uint32_t)tab->dtype;
      spec[1] = (uint32_t)o->dtype;
      pc.r0 = (uint32_t)r0;
      pc.r1 = (uint32_t)(r0 + rc);
      pc.rows = (uint32_t)(rows > 0x7fffffff ? 0x7fffffff : rows);
      pc.check = (uint32_t)first;
      pc.n_ids = (uint32_t)kc;
      dk_vk_grid(((uint64_t)pc.n + 255) / 256, DK_VK_GROUPS_CAP, &gx, &gy);
      if ((s = dk_vk_run(d, spv, spec, &args, &pc, sizeof pc, gx, gy, 1)) != DK_OK) return s;
      first = 0;
      if (rc == 0) break;
    }
  }
  return DK_OK;
}

/* ---- issue 12: reductions over axes, softmax on an axis, math, where ------- */

typedef struct { uint32_t nout, nred, o_off, x_off, ks[4], kx[4], rs[4], rx[4], k, i_off; } dk_vk_pc_reduce;
typedef struct { uint32_t n_out, inner, nids, n, o_off, x_off, ids_off, check, slot; } dk_vk_pc_gather;
typedef struct {
  uint32_t n, o_off, a_off, b_off, c_off;
  float f0, f1;
  uint32_t d1, d2, d3, as[4], bs[4], cs[4];
  dk_vk_magic md[3];
} dk_vk_pc_math;

/* reduce.comp's op codes */
static uint32_t dk_vk_reduce_code(dk_op op) {
  switch (op) {
  case DK_OP_REDUCE_SUM: return 0;
  case DK_OP_REDUCE_MEAN: return 1;
  case DK_OP_REDUCE_MAX: return 2;
  case DK_OP_REDUCE_MIN: return 3;
  case DK_OP_ARGMAX_AXIS: return 4;
  case DK_OP_ARGMIN_AXIS: return 5;
  case DK_OP_SOFTMAX_AXIS: return 6;
  case DK_OP_CUMSUM: return 8;
  case DK_OP_TOPK: return 9;
  default: return 7;   /* log-softmax */
  }
}

/* every reduction, arg reduction and softmax along an axis: one workgroup
 * per output element (per line, for softmax) */
static dk_status dk_vk_reduce(dk_vk_device *d, const dk_call *c) {
  int topk = c->op == DK_OP_TOPK;
  const dk_tensor *o = c->t[0], *x = c->t[topk ? 2 : 1];
  dk__red_lay l;
  dk_vk_pc_reduce pc;
  dk_vk_args args;
  uint32_t spec[DK_VK_SPEC], gx, gy;
  int i;
  dk_status s;
  dk__red_layout(x, topk ? 1u << (x->ndim - 1) : (uint32_t)c->i[0], &l);
  if (l.nout == 0 || (l.nred == 0 && (c->op == DK_OP_SOFTMAX_AXIS || c->op == DK_OP_LOG_SOFTMAX || c->op == DK_OP_CUMSUM)))
    return DK_OK;
  memset(&pc, 0, sizeof pc);
  dk_vk_args_init(&args);
  if ((s = dk_vk_arg_t(d, &args, 0, o, 1, &pc.o_off, topk ? "values" : "out")) != DK_OK ||
      (s = dk_vk_arg_t(d, &args, 1, x, 0, &pc.x_off, "x")) != DK_OK)
    return s;
  if (topk) {
    if ((s = dk_vk_arg_t(d, &args, 2, c->t[1], 1, &pc.i_off, "indices")) != DK_OK) return s;
    pc.k = (uint32_t)c->i[0];
  } else {
    dk_vk_arg_dummy(d, &args, 2);
  }
  /* a binding holds less than 2^32 elements, so every index fits 32 bits */
  pc.nout = (uint32_t)l.nout;
  pc.nred = (uint32_t)l.nred;
  for (i = 0; i < 4; i++) pc.ks[i] = pc.rs[i] = 1;
  for (i = 0; i < l.nk; i++) {
    pc.ks[4 - l.nk + i] = (uint32_t)l.ks[i];
    pc.kx[4 - l.nk + i] = (uint32_t)l.kx[i];
  }
  for (i = 0; i < l.nr; i++) {
    pc.rs[4 - l.nr + i] = (uint32_t)l.rs[i];
    pc.rx[4 - l.nr + i] = (uint32_t)l.rx[i];
  }
  memset(spec, 0, sizeof spec);
  spec[0] = dk_vk_reduce_code(c->op);
  spec[1] = (uint32_t)x->dtype;
  spec[2] = (c->op == DK_OP_ARGMAX_AXIS || c->op == DK_OP_ARGMIN_AXIS) && c->i[2] ? 1u : 0u;
  if (c->op == DK_OP_CUMSUM) spec[3] = (c->i[1] ? 1u : 0u) | (c->i[2] ? 2u : 0u);
  if (topk) spec[3] = c->i[1] ? 4u : 0u;
  /* a workgroup per line where the grid allows (llvmpipe's limit below) */
  dk_vk_grid((uint64_t)l.nout, 65535u * 16u, &gx, &gy);
  if (d->ph->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) {
    /* llvmpipe ends every loop of a shader invocation once 65535 iterations
     * have run in all its loops together, silently: refuse what would reach
     * that rather than return a partial result */
    uint64_t wg = d->wg_rows ? d->wg_rows : 1, groups = (uint64_t)gx * gy, per_lane = (l.nred + wg - 1) / wg, it;
    uint64_t lines = (l.nout + groups - 1) / groups;
    it = c->op == DK_OP_CUMSUM ? (uint64_t)l.nred
         : topk ? (uint64_t)c->i[0] * (per_lane + 1)
         : (c->op == DK_OP_SOFTMAX_AXIS || c->op == DK_OP_LOG_SOFTMAX) ? 3 * per_lane : per_lane;
    if (lines * (it + 1) > 60000u)
      return dk__call_error(DK_ERR_UNSUPPORTED, "run it on cpu, or in pieces along the axis",
                            "%s on %s: a line of %lld elements%s is more than this software device can walk in one "
                            "shader invocation (llvmpipe stops an invocation's loops after 65535 iterations)",
                            dk__op_name(c->op), dk_device_name(c->dev), (long long)l.nred,
                            topk ? " with this k" : "");
  }
  return dk_vk_run(d, dk_vk_pick(d, DK_SPV_REDUCE, DK_SPV_REDUCE_NOSG), spec, &args, &pc, sizeof pc, gx, gy, 1);
}

/* dk_index_select (out [outer, nids, inner] from x [outer, n, inner]) and
 * dk_index_copy (dst [outer, n, inner] from src [outer, nids, inner]):
 * gather.comp, a thread per element of the nids side, its scatter mode for
 * the copy. Bad ids are found by the shader and reported at the next sync. */
static dk_status dk_vk_gather(dk_vk_device *d, const dk_call *c) {
  const dk_tensor *o = c->t[0], *x = c->t[1], *ids = c->t[2];
  const int scatter = c->op == DK_OP_INDEX_COPY;
  const dk_tensor *tab = scatter ? o : x;
  dk_vk_pc_gather pc;
  dk_vk_args args;
  uint32_t spec[DK_VK_SPEC], gx, gy;
  int a = (int)c->i[0], i;
  int64_t inner = 1;
  dk_status s;
  memset(&pc, 0, sizeof pc);
  for (i = a + 1; i < tab->ndim; i++) inner *= tab->shape[i];
  pc.n_out = (uint32_t)dk_tensor_numel(scatter ? x : o);
  if (pc.n_out == 0) return DK_OK;
  pc.inner = (uint32_t)inner;
  pc.nids = (uint32_t)dk_tensor_numel(ids);
  pc.n = (uint32_t)tab->shape[a];
  dk_vk_args_init(&args);
  if ((s = dk_vk_arg_t(d, &args, 0, o, 1, &pc.o_off, scatter ? "dst" : "out")) != DK_OK ||
      (s = dk_vk_arg_t(d, &args, 1, x, 0, &pc.x_off, scatter ? "src" : "x")) != DK_OK ||
      (s = dk_vk_arg_t(d, &args, 2, ids, 0, &pc.ids_off, "ids")) != DK_OK ||
      (s = dk_vk_check_slot(d, c, 0, &args, 3, &pc.slot)) != DK_OK)
    return s;
  pc.check = 1;
  memset(spec, 0, sizeof spec);
  spec[0] = (uint32_t)o->dtype;
  spec[1] = (uint32_t)scatter;
  spec[2] = (uint32_t)x->dtype;
  {
    uint64_t wg = d->wg_rows ? d->wg_rows : 1;
    dk_vk_grid(((uint64_t)pc.n_out + wg - 1) / wg, 65535u * 16u, &gx, &gy);
    /* llvmpipe ends an invocation's loops after 65535 iterations in all:
     * workgroup 0 walks every id once for the check */
    if (d->ph->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU &&
        (uint64_t)pc.nids / wg + (uint64_t)pc.n_out / (wg * gx * gy) + 2 > 60000u)
      return dk__call_error(DK_ERR_UNSUPPORTED, "run it on cpu, or with fewer ids per call",
                            "%s on %s: %u ids are more than this software device checks in one shader "
                            "invocation (llvmpipe stops an invocation's loops after 65535 iterations)",
                            dk__op_name(c->op), dk_device_name(c->dev), pc.nids);
  }
  return dk_vk_run(d, dk_vk_pick(d, DK_SPV_GATHER, DK_SPV_GATHER_NOSG), spec, &args, &pc, sizeof pc, gx, gy, 1);
}

/* math.comp's op codes */
static uint32_t dk_vk_math_code(dk_op op) {
  switch (op) {
  case DK_OP_SQRT: return 0;
  case DK_OP_RSQRT: return 1;
  case DK_OP_LOG: return 2;
  case DK_OP_ABS: return 3;
  case DK_OP_NEG: return 4;
  case DK_OP_ERF: return 5;
  case DK_OP_CLAMP: return 6;
  case DK_OP_POW_SCALAR: return 7;
  case DK_OP_POW: return 8;
  default: return 9;   /* where */
  }
}

static dk_status dk_vk_math(dk_vk_device *d, const dk_call *c) {
  const dk_tensor *o = c->t[0], *in[3];
  static const char *const roles[2][3] = {{"x", "b", ""}, {"mask", "a", "b"}};
  dk_vk_pc_math pc;
  dk_vk_args args;
  dk_vk_lay l;
  uint32_t spec[DK_VK_SPEC], gx, gy, *offs[3];
  int64_t n = dk_tensor_numel(o), outer, ot, shape4[4], str4[4][4], off[4];
  int i, k, nin = c->op == DK_OP_WHERE ? 3 : c->op == DK_OP_POW ? 2 : 1, flat = 1, w = c->op == DK_OP_WHERE;
  dk_status s;
  if (n == 0) return DK_OK;
  memset(&pc, 0, sizeof pc);
  offs[0] = &pc.a_off; offs[1] = &pc.b_off; offs[2] = &pc.c_off;
  dk_vk_args_init(&args);
  if ((s = dk_vk_arg_t(d, &args, 0, o, 1, &pc.o_off, "out")) != DK_OK) return s;
  for (k = 0; k < 3; k++) {
    in[k] = k < nin ? c->t[1 + k] : NULL;
    if (!in[k]) { dk_vk_arg_dummy(d, &args, 1 + k); continue; }
    if ((s = dk_vk_arg_t(d, &args, 1 + k, in[k], 0, offs[k], k == 0 && !w && nin == 2 ? "a" : roles[w][k])) != DK_OK) return s;
    if (dk_tensor_numel(in[k]) != n) flat = 0;
  }
  memset(spec, 0, sizeof spec);
  spec[0] = dk_vk_math_code(c->op);
  spec[1] = (uint32_t)o->dtype;
  spec[2] = (uint32_t)flat;
  pc.f0 = c->f[0];
  pc.f1 = c->f[1];
  if (flat) {
    pc.n = (uint32_t)n;
    pc.d1 = pc.d2 = pc.d3 = 1;
    dk_vk_grid(((uint64_t)n + 4095) / 4096, DK_VK_GROUPS_CAP, &gx, &gy);
    return dk_vk_run(d, DK_SPV_MATH, spec, &args, &pc, sizeof pc, gx, gy, 1);
  }
  dk_vk_lay_broadcast(&l, o, in, 3);
  outer = dk_vk_outer_count(&l, 4);
  for (ot = 0; ot < outer; ot++) {
    dk_vk_pc_math p = pc;
    dk_vk_inner(&l, 4, ot, shape4, str4, off);
    p.n = (uint32_t)(shape4[0] * shape4[1] * shape4[2] * shape4[3]);
    p.d1 = (uint32_t)shape4[1];
    p.d2 = (uint32_t)shape4[2];
    p.d3 = (uint32_t)shape4[3];
    for (i = 0; i < 3; i++) p.md[i] = dk_vk_magic_for((uint64_t)shape4[i + 1]);
    for (i = 0; i < 4; i++) {
      p.as[i] = (uint32_t)str4[1][i];
      p.bs[i] = (uint32_t)str4[2][i];
      p.cs[i] = (uint32_t)str4[3][i];
    }
    p.o_off += (uint32_t)off[0];
    p.a_off += (uint32_t)off[1];
    p.b_off += (uint32_t)off[2];
    p.c_off += (uint32_t)off[3];
    dk_vk_grid(((uint64_t)p.n + 255) / 256, DK_VK_GROUPS_CAP, &gx, &gy);
    if ((s = dk_vk_run(d, DK_SPV_MATH, spec, &args, &p, sizeof p, gx, gy, 1)) != DK_OK) return s;
  }
  return DK_OK;
}

/* ==== the table =========================================================== */

/* ---- ops over rows whose tensors are larger than one binding ---------------- */

/* rows [r0, r0 + n) of a contiguous t, as a stack view (no reference: it
 * lives for one call); `cols` elements per row */
static void dk_vk_row_view(const dk_tensor *t, int64_t cols, int64_t r0, int64_t n, dk_tensor *v) {
  memcpy(v, t, sizeof *v);
  v->ndim = 2;
  v->shape[0] = n;
  v->shape[1] = cols;
  v->stride[0] = cols;
  v->stride[1] = 1;
  v->offset = t->offset + dk__elem_offset_bytes(t->dtype, r0 * cols);
}

static int dk_vk_row_op(const dk_call *c) {
  switch (c->op) {
  case DK_OP_RMSNORM: case DK_OP_LAYERNORM: case DK_OP_SOFTMAX: case DK_OP_SOFTMAX_MASKED: case DK_OP_ROPE:
  case DK_OP_ARGMAX: case DK_OP_SAMPLE: return 1;
  default: return 0;
  }
}

/* One op on rows [r0, r0 + n): the per-row operands become views of those
 * rows; what the shader counts from the whole tensor comes as row_base. */
static dk_status dk_vk_rows_call(dk_vk_device *d, const dk_call *c, int64_t r0, int64_t n, int64_t cols) {
  dk_call cc;
  dk_tensor vo, vx, vb;
  const dk_tensor *x = c->t[1];
  int64_t rows_per = x->ndim >= 2 ? x->shape[x->ndim - 2] : 1;
  memcpy(&cc, c, sizeof cc);
  dk_vk_row_view(c->t[1], cols, r0, n, &vx);
  cc.t[1] = &vx;
  /* argmax/sample write one i32 per row */
  dk_vk_row_view(c->t[0], c->op == DK_OP_ARGMAX || c->op == DK_OP_SAMPLE ? 1 : cols, r0, n, &vo);
  cc.t[0] = &vo;
  if (c->op == DK_OP_SWIGLU || (c->op <= DK_OP_DIV)) {
    dk_vk_row_view(c->t[2], cols, r0, n, &vb);
    cc.t[2] = &vb;
  }
  switch (c->op) {
  case DK_OP_RMSNORM: case DK_OP_LAYERNORM: return dk_vk_norm(d, &cc);
  case DK_OP_SOFTMAX: case DK_OP_SOFTMAX_MASKED: return dk_vk_softmax(d, &cc, r0, rows_per);
  case DK_OP_ROPE: return dk_vk_rope(d, &cc, r0, x->ndim == 2 ? 1 : rows_per);
  case DK_OP_ARGMAX: case DK_OP_SAMPLE: return dk_vk_pick_op(d, &cc, r0);
  case DK_OP_COPY: return dk_vk_copy_op(d, &cc);
  default: return dk_vk_elementwise(d, &cc);
  }
}

/* Row ops, and same-shape elementwise ops and conversions (split as rows of
 * one element block), whose tensors do not fit one binding run in pieces. */
static int dk_vk_split(dk_vk_device *d, const dk_call *c, dk_status *st) {
  const dk_tensor *o = c->t[0], *x = c->t[1];
  int64_t cols, rows, step, r0;
  VkDeviceSize big, cap = dk_vk_window_cap(d);
  int flat = 0, i;
  if (!dk_vk_row_op(c)) {
    /* elementwise on equal shapes, or a contiguous conversion */
    if (c->op == DK_OP_COPY) flat = dk_tensor_is_contiguous(o) && dk_tensor_is_contiguous(x) && o->dtype != x->dtype;
    else if (c->op <= DK_OP_SWIGLU) flat = dk_tensor_numel(x) == dk_tensor_numel(o) &&
                                           (!(c->op <= DK_OP_DIV || c->op == DK_OP_SWIGLU) || dk_tensor_numel(c->t[2]) == dk_tensor_numel(o));
    if (!flat) return 0;
  }
  big = dk_tensor_nbytes(o);
  for (i = 1; i < DK_MAX_OPERANDS; i++)
    if (c->t[i] && (VkDeviceSize)dk_tensor_nbytes(c->t[i]) > big) big = dk_tensor_nbytes(c->t[i]);
  if (big <= cap) return 0;
  /* pieces of a whole number of rows; flat ops use rows of 64 elements */
  cols = flat ? 64 : dk_vk_cols(x);
  rows = cols ? dk_tensor_numel(x) / cols : 0;
  if (flat && dk_tensor_numel(x) % 64) return 0;
  {
    VkDeviceSize row_bytes = 0;
    for (i = 0; i < DK_MAX_OPERANDS; i++)
      if (c->t[i] && (i < 2 || c->op <= DK_OP_DIV || c->op == DK_OP_SWIGLU)) {
        VkDeviceSize rb = dk__row_bytes(c->t[i]->dtype, i == 0 && (c->op == DK_OP_ARGMAX || c->op == DK_OP_SAMPLE) ? 1 : cols);
        if (rb > row_bytes) row_bytes = rb;
      }
    step = row_bytes ? (int64_t)(cap / row_bytes) : rows;
  }
  if (step < 1) return 0;
  *st = DK_OK;
  for (r0 = 0; r0 < rows && *st == DK_OK; r0 += step) *st = dk_vk_rows_call(d, c, r0, rows - r0 < step ? rows - r0 : step, cols);
  return 1;
}

static dk_status dk_vk_op(const dk_call *c);

/* dk_rmsnorm_linear, dk_swiglu_linear in one dispatch of matvec_vec.comp
 * (GPUs' decode product of float weights; q8_0/q4_0 with d->vec_q), which applies the first op to x
 * as it loads it (PRO): returns 0, having recorded nothing, where that
 * kernel does not take the call (then the two dispatches below run). The
 * norm weight or up rows must be f32, all of the call in one binding window
 * and on the kernel's 16-byte grid. On GPUs by default (d->fused): it
 * saves a dispatch and a barrier but every workgroup reads x's partner (the
 * norm weight, the up rows) beside x and, for SwiGLU, computes silu for all
 * of x. On lavapipe (DEVKIT_VULKAN_MATVEC=vec) that costs more than the
 * dispatch (100M f16 decode, per call: rmsnorm_linear 4096x768 20.6 -> 32.4
 * ms, swiglu_linear 768x2048 4.7 -> 6.4 ms); on an H200 through NVIDIA's
 * driver, where x stays in cache, the 1B f16 decode went 300 -> 340 tok/s. */
static int dk_vk_fused_vec(dk_vk_device *d, const dk_call *c, dk_status *st) {
  const dk_tensor *o = c->t[0], *x = c->t[1], *a = c->t[2], *w = c->t[3], *bias = c->t[4];
  const int swiglu = c->op == DK_OP_SWIGLU_LINEAR;
  int64_t M = c->i[0], N = c->i[1], K = c->i[2];
  VkDeviceSize rb = dk__row_bytes(w->dtype, K), R = dk_vk_window_cap(d);
  dk_vk_args args;
  dk_vk_pc_mv pc;
  uint32_t o_off, x_off, w_off, a_off, b_off = 0, spec[DK_VK_SPEC], gx, gy;
  float eps = c->f[0];
  int spv;
  if (!d->fused || !a || x->dtype != DK_F32 || a->dtype != DK_F32 || o->dtype != DK_F32 ||
      !dk_vk_vec_takes(d, w->dtype, K) || M < 1 || M > DK_VK_MV_MAXM || N < 1 ||
      (VkDeviceSize)M * (VkDeviceSize)K * 4 > R || (VkDeviceSize)M * (VkDeviceSize)N * 4 > R ||
      dk_vk_rows_fit(d, w, 0, N, rb) < N || !dk_tensor_is_contiguous(a) || !dk_tensor_is_contiguous(x) ||
      !dk_tensor_is_contiguous(o))
    return 0;
  dk_vk_args_init(&args);
  memset(&pc, 0, sizeof pc);
  if ((*st = dk_vk_arg(d, &args, 0, o, 0, (VkDeviceSize)M * N * 4, 1, dk_vk_unit(o->dtype), &o_off, "out")) != DK_OK ||
      (*st = dk_vk_arg(d, &args, 1, x, 0, (VkDeviceSize)M * K * 4, 0, dk_vk_unit(x->dtype), &x_off, "x")) != DK_OK ||
      (*st = dk_vk_arg(d, &args, 2, w, 0, (VkDeviceSize)N * rb, 0, dk_vk_unit(w->dtype), &w_off, "w")) != DK_OK ||
      (*st = dk_vk_arg(d, &args, 4, a, 0, (VkDeviceSize)(swiglu ? M : 1) * K * 4, 0, dk_vk_unit(a->dtype), &a_off,
                       swiglu ? "up" : "norm_w")) != DK_OK)
    return 1;
  if (((VkDeviceSize)a_off * 4) % 16 || (spv = dk_vk_vec_pc(d, &pc, w->dtype, x_off, w_off, K)) < 0) return 0;
  if (bias) {
    VkDeviceSize bsz = dk_vk_esize(bias->dtype);
    if ((*st = dk_vk_arg(d, &args, 3, bias, 0, (VkDeviceSize)N * bsz, 0, dk_vk_unit(bias->dtype), &b_off, "bias")) != DK_OK)
      return 1;
  } else {
    dk_vk_arg_dummy(d, &args, 3);
  }
  memset(spec, 0, sizeof spec);
  spec[0] = (uint32_t)x->dtype;
  spec[1] = (uint32_t)o->dtype;
  spec[2] = (uint32_t)(bias ? bias->dtype : DK_F32);
  spec[3] = bias != NULL;
  spec[4] = (uint32_t)M;
  spec[9] = swiglu ? 2u : 1u;
  memcpy(&spec[10], &eps, 4);
  pc.N = (uint32_t)N;
  pc.K = (uint32_t)K;
  pc.a_off = (uint32_t)((VkDeviceSize)a_off * 4 / 16);
  pc.o_off = o_off;
  pc.b_off = b_off;
  pc.ldo = (uint32_t)N;
  dk_vk_grid((uint64_t)(N + 1) / 2, 0, &gx, &gy);   /* 2 rows a workgroup (its R) */
  *st = dk_vk_run(d, spv, spec, &args, &pc, sizeof pc, gx, gy, 1);
  return 1;
}

/* dk_rmsnorm_linear, dk_swiglu_linear as their two dispatches, the first
 * op's rows in the device's scratch (the barrier between them comes from
 * the hazard tracking): the two ops' bits. Where matvec_vec.comp takes the
 * call, one dispatch (dk_vk_fused_vec). */
static dk_status dk_vk_fused_linear(dk_vk_device *d, const dk_call *c) {
  const dk_tensor *scr;
  dk_tensor xn;
  dk_call fc, lc;
  dk_status s;
  if (dk_vk_fused_vec(d, c, &s)) return s;
  if ((s = dk_vk_scratch(d, (VkDeviceSize)dk_tensor_nbytes(c->t[1]), &scr)) != DK_OK) return s;
  dk__fused_linear_split(c, scr->st, 0, &xn, &fc, &lc);
  if ((s = dk_vk_op(&fc)) != DK_OK) return s;
  return dk_vk_op(&lc);
}

static dk_status dk_vk_op(const dk_call *c) {
  dk_vk_device *d = dk_vk.dev[c->dev.index];
  uint64_t v0 = dk_vk_tls_msgs;
  const dk_tensor *x = c->t[1];
  dk_status s;
  if (d->lost) return dk_vk_begin(d);
  if (c->op == DK_OP_RMSNORM_LINEAR || c->op == DK_OP_SWIGLU_LINEAR) return dk_vk_fused_linear(d, c);
  if (dk_vk_split(d, c, &s)) goto done;
  switch (c->op) {
  case DK_OP_RMSNORM: case DK_OP_LAYERNORM: s = dk_vk_norm(d, c); break;
  case DK_OP_SOFTMAX: case DK_OP_SOFTMAX_MASKED: s = dk_vk_softmax(d, c, 0, x->ndim >= 2 ? x->shape[x->ndim - 2] : 1); break;
  case DK_OP_MATMUL: s = dk_vk_matmul(d, c); break;
  case DK_OP_LINEAR: s = dk_vk_linear(d, c); break;
  case DK_OP_EMBEDDING: s = dk_vk_embedding(d, c); break;
  case DK_OP_ROPE: s = dk_vk_rope(d, c, 0, x->ndim == 2 ? 1 : x->shape[x->ndim - 2]); break;
  case DK_OP_CONCAT: s = dk_vk_concat(d, c); break;
  case DK_OP_COPY: s = dk_vk_copy_op(d, c); break;
  case DK_OP_TRANSPOSE: s = dk_vk_transpose(d, c); break;
  case DK_OP_ARGMAX: case DK_OP_SAMPLE: s = dk_vk_pick_op(d, c, 0); break;
  case DK_OP_ATTENTION: case DK_OP_ATTENTION_POS: case DK_OP_ATTENTION_WINDOW: case DK_OP_ATTENTION_POS_WINDOW:
    s = dk_vk_attention(d, c);
    break;
  case DK_OP_INDEX_COPY: s = dk_vk_gather(d, c); break;
  case DK_OP_REDUCE_SUM: case DK_OP_REDUCE_MEAN: case DK_OP_REDUCE_MAX: case DK_OP_REDUCE_MIN:
  case DK_OP_ARGMAX_AXIS: case DK_OP_ARGMIN_AXIS: case DK_OP_SOFTMAX_AXIS: case DK_OP_LOG_SOFTMAX:
  case DK_OP_CUMSUM: case DK_OP_TOPK:
    s = dk_vk_reduce(d, c);
    break;
  case DK_OP_INDEX_SELECT: s = dk_vk_gather(d, c); break;
  case DK_OP_SQRT: case DK_OP_RSQRT: case DK_OP_LOG: case DK_OP_ABS: case DK_OP_NEG: case DK_OP_ERF:
  case DK_OP_CLAMP: case DK_OP_POW_SCALAR: case DK_OP_POW: case DK_OP_WHERE:
    s = dk_vk_math(d, c);
    break;
  default: s = dk_vk_elementwise(d, c); break;
  }
done:
  if (s == DK_OK && dk_vk_tls_msgs != v0)
    s = dk__error(DK_ERR_BACKEND, "%s on %s: the Vulkan validation layer reported: %s", dk__op_name(c->op),
                  dk_device_name(c->dev), dk_validation_last());
  return s;
}

static dk_backend_impl dk_vk_impl_table;

static const dk_backend_impl *dk__vk_backend(void) {
  dk_backend_impl *b = &dk_vk_impl_table;
  int op;
  if (b->probe) return b;
  b->kind = DK_VULKAN;
  b->probe = dk_vk_probe;
  b->properties = dk_vk_properties;
  b->open_device = dk_vk_open;
  b->close_all = dk_vk_close_all;
  b->alloc = dk_vk_alloc;
  b->release = dk_vk_release;
  b->upload = dk_vk_upload;
  b->download = dk_vk_download;
  b->copy = dk_vk_copy;
  b->sync = dk_vk_sync;
  b->prof_mark = dk_vk_prof_mark;
  b->prof_elapsed = dk_vk_prof_elapsed;
  b->prof_reset = dk_vk_prof_reset;
  b->graph_begin = dk_vk_graph_begin;
  b->graph_end = dk_vk_graph_end;
  b->graph_replay = dk_vk_graph_replay;
  b->graph_free = dk_vk_graph_free;
  for (op = 0; op < DK_OP_COUNT; op++) {
    b->ops[op] = dk_vk_op;
    b->dtypes[op] = DK_FLOATS;
    b->wdtypes[op] = DK_FLOATS;
  }
  b->wdtypes[DK_OP_LINEAR] = b->wdtypes[DK_OP_EMBEDDING] = b->wdtypes[DK_OP_RMSNORM_LINEAR] =
      b->wdtypes[DK_OP_SWIGLU_LINEAR] = DK_FLOATS | DK_QUANTS | DK_QUANTS_MORE;
  b->dtypes[DK_OP_CONCAT] = b->dtypes[DK_OP_TRANSPOSE] = DK_FLOATS | DK_BIT(DK_I32);
  b->dtypes[DK_OP_COPY] = DK_FLOATS | DK_BIT(DK_I32) | DK_QUANTS | DK_QUANTS_MORE;   /* same-dtype block copies are byte copies */
  return b;
}

#endif /* DK_BACKEND_VULKAN_H */
