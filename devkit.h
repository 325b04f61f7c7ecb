/* devkit.h — a header-only C inference kit where the device is part of every
 * tensor and every op checks it.
 *
 * WHAT IT IS
 *   Tensors live on a device: cpu:N, cuda:N or vulkan:N. Every op goes through
 *   one dispatcher that checks, before anything is enqueued, that its operands
 *   are present, on one backend, on one device, of dtypes the op accepts there,
 *   and of consistent shapes. When a check fails, the op does nothing and the
 *   error message names the op, every operand (role, name, dtype, shape,
 *   device, and the file:line where it was created) and the fix. devkit never
 *   copies between devices on its own: dk_to and dk_copy_to are the only calls
 *   that take two devices.
 *
 * INCLUDING IT
 *   In exactly one C or C++ file:
 *       #define DEVKIT_IMPLEMENTATION
 *       #include "devkit.h"
 *   everywhere else just #include "devkit.h". Build with
 *       cc -O2 app.c -ldl -lm -lpthread
 *   No CUDA toolkit or Vulkan SDK is needed: the GPU code is embedded (kernels/
 *   and shaders/ are compiled by build.sh into generated headers) and the
 *   drivers (libcuda.so.1, libvulkan.so.1) are loaded at run time. A missing
 *   driver means that backend has zero devices, and dk_backend_note() says why.
 *   Copy devkit.h with backends/, kernels/ and shaders/ beside it (only the
 *   generated headers of the last two are used); a backend whose files are
 *   missing is left out, and dk_backend_note() says so.
 *
 *   Model files (GGUF, safetensors, llama2.c), tokenizers and model families
 *   are the model layer, models/ (models/models.h), built only on this
 *   header's public API: a program that runs models includes it too.
 *
 *   Configuration macros (define before the include that has
 *   DEVKIT_IMPLEMENTATION):
 *     DEVKIT_API        linkage of the public functions (default: extern)
 *     DEVKIT_NO_CUDA    leave the CUDA backend out
 *     DEVKIT_NO_VULKAN  leave the Vulkan backend out
 *     DEVKIT_MAX_DIMS   most dimensions of a tensor (default 4, at most 8)
 *
 * TEN LINES
 *     dk_device dev;
 *     dk_tensor *x, *y;
 *     int64_t shape[2] = {2, 3};
 *     float in[6] = {1, -2, 3, -4, 5, -6}, out[6];
 *     if (dk_device_parse("vulkan:0", &dev) != DK_OK) dev.backend = DK_CPU, dev.index = 0;
 *     dk_tensor_new(dev, DK_F32, 2, shape, "x", &x);
 *     dk_tensor_new(dev, DK_F32, 2, shape, "y", &y);
 *     dk_tensor_upload(x, in, sizeof in);
 *     if (dk_silu(y, x) != DK_OK) fprintf(stderr, "%s\n", dk_last_error());
 *     dk_tensor_download(y, out, sizeof out);  dk_tensor_free(x);  dk_tensor_free(y);
 *
 * DEVICES
 *   Text forms: "cpu", "cpu:N", "cuda", "cuda:N", "vulkan", "vulkan:N", "vk:N".
 *   DEVKIT_VISIBLE_DEVICES=cuda:1,vulkan:0 hides every other device and
 *     renumbers the rest in the order given (as CUDA_VISIBLE_DEVICES does);
 *     "cuda" alone keeps all CUDA devices.
 *   DEVKIT_LOGICAL_DEVICES=cpu=2,vulkan=2 splits each physical device of a
 *     backend into that many logical devices, with separate allocations and
 *     queues. They are different devices to every rule, so multi-device code
 *     is tested on a machine with one device, or none.
 *   DEVKIT_DEVICE names the device dk_device_best() returns.
 *
 * ERRORS
 *   Every fallible call returns a dk_status; dk_last_error() is the calling
 *   thread's full message for the last failure. The library never prints,
 *   aborts or exits on its own. DEVKIT_ABORT_ON_ERROR=1 prints each error to
 *   stderr and aborts (for a debugger's backtrace); dk_set_error_handler()
 *   receives every error. Checks, in order: an operand missing (INVALID),
 *   operands on different backends (BACKEND_MISMATCH), on different devices of
 *   one backend (DEVICE_MISMATCH), a dtype the op does not take (DTYPE) or one
 *   the backend lacks (UNSUPPORTED), inconsistent shapes (SHAPE). A refused op
 *   enqueues nothing and leaves its outputs untouched.
 *   Errors only the device can see (an out-of-range id in dk_embedding on a
 *   GPU) are reported by the next call that synchronizes with that device
 *   (dk_tensor_download, dk_sync, dk_to to another backend). On the CPU they
 *   are reported by the op itself, before it writes anything.
 *
 * EXECUTION AND THREADS
 *   Ops are asynchronous per device; downloads synchronize. Upload copies the
 *   caller's bytes before it returns. Tensors on different devices may be used
 *   from different threads at once; calls on one device are serialized by a
 *   per-device lock, so several threads may share a device too. A tensor must
 *   not be freed while another thread uses it.
 *
 * TENSORS
 *   Row-major, shape[0] outermost. dk_narrow and dk_reshape return views that
 *   share storage; storage is reference counted, so freeing the base while a
 *   view lives is safe. Ops take contiguous operands; dk_copy and dk_transpose
 *   also take strided views (narrow along an inner dim), and dk_copy also
 *   writes into one. q8_0 and q4_0 are the GGUF block formats (32 values per
 *   block: an f16 scale then 32 int8, or 16 bytes of 4-bit values); q4_1,
 *   q5_0 and q5_1 are 32-value blocks too, and the K-quants q2_K..q6_K are
 *   256-value super-blocks; iq4_nl (32) and iq4_xs (256) are 4-bit codes
 *   into a fixed table of 16 non-uniform levels, iq3_xxs and iq3_s (256)
 *   code four values at a time as a point of a fixed codebook, and iq2_xxs,
 *   iq2_xs and iq2_s (256) eight at a time, with signs apart (backends/cpu_quant.h has every layout). A
 *   tensor's last dimension is a multiple of its dtype's block.
 *   Sizes are checked: a tensor holds at most 2^62 elements and bytes; a shape,
 *   narrow, reshape or concat whose sizes would overflow is refused with a
 *   status, never wrapped. A shape with a 0 in it is an empty tensor whatever
 *   its other sizes are.
 *
 * TENSOR LIFE
 *   dk_tensor_free marks the tensor freed; dk_shutdown makes every tensor made
 *   before it stale (and releases the device memory of those not freed). An
 *   op, transfer, view or free on a freed or stale tensor is DK_ERR_INVALID
 *   ("tensor 'a' was freed", "... belongs to a kit that was shut down"),
 *   touches no device memory and does not start the kit again. dk_tensor_free
 *   returns nothing, so it reports that (a double free, say) through
 *   dk_last_error()/dk_last_status() and the error handler. Freed tensor
 *   headers are kept, not returned to malloc, and reused only after 1024 later
 *   frees: a use of any of the last 1024 freed tensors is always caught.
 *
 * DEGENERATE INPUTS (every backend)
 *   dk_argmax and dk_sample never pick a NaN (it counts as -inf). A row with
 *   nothing above -inf (all -inf, all NaN, or a mix) gives index 0. In
 *   dk_sample, when the largest kept logit / temperature is +inf, the result
 *   is the first index where it is +inf. dk_softmax and dk_softmax_masked
 *   give a row of zeros for a row that is all -inf (fully masked), and a row
 *   of NaN for a row that holds a NaN where it is not masked. Reductions
 *   over an empty last dim: dk_argmax and dk_sample refuse it (DK_ERR_SHAPE,
 *   no index exists); softmax, rmsnorm and layernorm of an empty row write
 *   nothing. An op whose output has no elements succeeds (after every check)
 *   and runs nothing, whatever the sizes of its empty operands.
 */
#ifndef DEVKIT_H
#define DEVKIT_H

#include <stddef.h>
#include <stdint.h>

#ifndef DEVKIT_API
#define DEVKIT_API extern
#endif
#ifndef DEVKIT_MAX_DIMS
#define DEVKIT_MAX_DIMS 4
#endif
#if DEVKIT_MAX_DIMS < 4 || DEVKIT_MAX_DIMS > 8
#error "DEVKIT_MAX_DIMS must be between 4 and 8"
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { DK_CPU = 0, DK_CUDA = 1, DK_VULKAN = 2 } dk_backend;
#define DK_BACKEND_COUNT 3

typedef struct { dk_backend backend; int index; } dk_device;

typedef enum {
  DK_F32 = 0, DK_F16, DK_BF16, DK_I32, DK_Q8_0, DK_Q4_0,
  /* the other GGUF block formats: 32 values per block ... */
  DK_Q4_1, DK_Q5_0, DK_Q5_1,
  /* ... and the K-quants, 256 values per super-block */
  DK_Q2_K, DK_Q3_K, DK_Q4_K, DK_Q5_K, DK_Q6_K,
  /* the non-linear 4-bit formats: 32 values (iq4_nl), 256 (iq4_xs) */
  DK_IQ4_NL, DK_IQ4_XS,
  /* the 3-bit codebook formats, 256 values per super-block ... */
  DK_IQ3_XXS, DK_IQ3_S,
  /* ... and the 2-bit ones */
  DK_IQ2_XXS, DK_IQ2_XS, DK_IQ2_S
} dk_dtype;
#define DK_DTYPE_COUNT 21

typedef enum {
  DK_OK = 0,
  DK_ERR_INVALID,          /* a bad argument: NULL, out of range, aliasing */
  DK_ERR_BACKEND_MISMATCH, /* operands on different backends (cuda vs vulkan vs cpu) */
  DK_ERR_DEVICE_MISMATCH,  /* operands on different devices of one backend */
  DK_ERR_DTYPE,            /* a dtype the op does not take */
  DK_ERR_SHAPE,            /* shapes that do not fit together, or a strided view */
  DK_ERR_UNSUPPORTED,      /* the op or dtype is not implemented on this backend */
  DK_ERR_NO_DEVICE,        /* no such device */
  DK_ERR_OUT_OF_MEMORY,
  DK_ERR_IO,
  DK_ERR_FORMAT,           /* a malformed model file */
  DK_ERR_BACKEND           /* the driver or a kernel failed */
} dk_status;

typedef struct dk_tensor dk_tensor;

typedef struct {
  char name[256];
  char vendor[64];
  char driver[128];
  uint64_t memory_total;   /* bytes; for logical devices, the physical device's */
  uint64_t memory_free;     /* what allocations can still take (cpu: the kernel's MemAvailable, under
                              any memory cgroup limit and RLIMIT_AS) */
  uint64_t memory_used;    /* bytes devkit holds in tensors on this logical device */
  int physical_index;      /* index of the physical device within its backend */
  int logical_slot;        /* which logical device of that physical device */
  int logical_count;
  uint8_t uuid[16];
  int has_uuid;
  int is_software;         /* lavapipe, the CPU backend */
  int supports_f16, supports_bf16, supports_int8_dot;
  int subgroup_size;       /* 0 where it does not apply */
  int prompt_x16;          /* prompt-sized dk_linear may run f32 x in f16/bf16 on tensor cores or AMX tiles (see dk_linear) */
  int attn_x16;            /* dk_attention over several query rows may too (see dk_attention) */
} dk_device_props;

/* ---- devices ---------------------------------------------------------- */
DEVKIT_API dk_status   dk_init(void);       /* optional: every call initializes lazily */
DEVKIT_API void        dk_shutdown(void);   /* frees every device; tensors left are stale (TENSOR LIFE) */
DEVKIT_API dk_status   dk_device_parse(const char *text, dk_device *out);
DEVKIT_API const char *dk_device_name(dk_device d);      /* "cuda:1" */
DEVKIT_API int         dk_device_count(dk_backend b);
DEVKIT_API int         dk_device_equal(dk_device a, dk_device b);
DEVKIT_API dk_status   dk_device_properties(dk_device d, dk_device_props *out);
DEVKIT_API const char *dk_backend_name(dk_backend b);    /* "cuda" */
DEVKIT_API const char *dk_backend_note(dk_backend b);    /* why a backend has no devices; with devices, what
                                                            it runs on where that varies (cuda: cuBLAS or not), or "" */
DEVKIT_API int         dk_device_list(dk_device *out, int max);  /* every device; returns the count */
DEVKIT_API dk_status   dk_device_best(dk_device *out);   /* DEVKIT_DEVICE, else the first hardware GPU, else cpu:0 */
/* The CPU backend's kernel class: "portable", "avx2" (AVX2+FMA+F16C),
 * "avx512" (F, BW, VL, DQ) or "amx" (avx512's, plus prompt products on AMX
 * tiles: AMX-BF16 and AVX512-BF16, Linux; see dk_linear), chosen once from
 * cpuid at the first CPU op, or by DEVKIT_CPU_ISA=portable|avx2|avx512|amx
 * (avx512 on an AMX machine keeps every product off the tiles). dk_cpu_set_isa changes it for the
 * process (NULL: the best one; for tests and benchmarks, between ops, never
 * while another thread runs a CPU op): DK_ERR_UNSUPPORTED if this CPU lacks it.
 * DEVKIT_CPU_F32_DECODE=1 keeps the activations of products against block
 * weights in f32 rather than q8 (decode-sized ones, and prompt-sized ones of
 * the 4/5-bit formats, and with VNNI of q8_0, q2_K, q3_K, q6_K; slower; for f32
 * reference checks);
 * dk_tensor_set_precise carries one weight's to ~15 bits. */
DEVKIT_API const char *dk_cpu_isa(void);
DEVKIT_API dk_status   dk_cpu_set_isa(const char *name);
DEVKIT_API dk_status   dk_sync(dk_device d);

/* ---- profiling ---------------------------------------------------------
 * dk_profile(1) times every op from then on, on every device, and sums the
 * times by op, device and operands (each one's dtype and shape); dk_profile(0)
 * stops. A CPU op is timed by the host clock (it has finished when it
 * returns); a CUDA op by events recorded on the device's stream before and
 * after its work, a Vulkan op by timestamps written into its command buffer,
 * read back when the device next synchronizes (dk_sync, a download): device
 * time, without the launch gaps between ops (compare the sum with the wall
 * time to see those). A backend without device timestamps (a Vulkan queue
 * without them) is timed by the host clock around the op and a
 * synchronization after it. DEVKIT_PROFILE=1 in the environment turns it on
 * at the first op and prints the table to stderr at dk_shutdown (the only
 * thing devkit prints, and only when asked).
 * dk_profile_report writes the table, longest total first, into buf (up to
 * len bytes, NUL-terminated) and returns the length of the whole table, as
 * snprintf does; dk_profile_reset empties it. Profiling costs a timestamp
 * pair per op; leave it off for figures. */
DEVKIT_API dk_status   dk_profile(int on);
DEVKIT_API size_t      dk_profile_report(char *buf, size_t len);
DEVKIT_API void        dk_profile_reset(void);

/* ---- record and replay ---------------------------------------------------
 * A decode step is the same ops on the same tensors every token; only what
 * the tensors hold changes. dk_graph_begin(d) starts a recording on device
 * d: every op on d from then until dk_graph_end(d) is checked as usual and
 * recorded, and does not run. dk_graph_replay runs the recorded ops in order,
 * on the tensors they were given, with whatever those hold at the time
 * (upload the step's token ids or positions between replays), as often as
 * wanted; dk_graph_free frees it.
 *   - While d records, nothing else may touch it: an upload to, a download
 *     from, dk_sync of, dk_to or dk_copy_to to or from d is DK_ERR_INVALID.
 *     Ops on other devices run as usual. dk_slice uploads, so it cannot be
 *     recorded. An op refused by its checks is not recorded (its error is
 *     returned as ever) and the recording goes on.
 *   - The graph holds the memory of every tensor it uses until it is freed:
 *     freeing a tensor (or a view made for one call) after recording is fine.
 *   - Every parameter and shape is the recorded one at each replay: what
 *     changes per step must live in a tensor. dk_attention_pos and
 *     dk_index_copy take a decode's position from the device for that.
 *   - After dk_shutdown a graph is stale: replaying it is DK_ERR_INVALID, and
 *     dk_graph_free still frees it.
 * How each backend replays (dk_graph_native says which): Vulkan executes a
 * secondary command buffer recorded once, inside its current batch (where
 * the driver has push descriptors); CUDA launches a CUDA graph captured
 * once (DEVKIT_CUDA_GRAPH=0 re-runs the ops instead);
 * the CPU re-runs the ops (their checks were done once, when recorded), and
 * so does every backend without a recording of its own, or with profiling
 * on (each op is then timed on its own). */
typedef struct dk_graph dk_graph;
DEVKIT_API dk_status   dk_graph_begin(dk_device d);
DEVKIT_API dk_status   dk_graph_end(dk_device d, dk_graph **out);
DEVKIT_API dk_status   dk_graph_replay(dk_graph *g);
DEVKIT_API void        dk_graph_free(dk_graph *g);
DEVKIT_API int         dk_graph_ops(const dk_graph *g);    /* ops recorded */
/* 1 when g replays as one recording of the backend's own (Vulkan: a command
 * buffer, submitted whole; CUDA: a CUDA graph), 0 when the core re-runs its
 * calls */
DEVKIT_API int         dk_graph_native(const dk_graph *g);

/* ---- errors ----------------------------------------------------------- */
typedef void (*dk_error_handler)(dk_status status, const char *message, void *user);
DEVKIT_API const char *dk_status_name(dk_status s);
DEVKIT_API const char *dk_last_error(void);
DEVKIT_API dk_status   dk_last_status(void);
DEVKIT_API void        dk_clear_error(void);
DEVKIT_API void        dk_set_error_handler(dk_error_handler fn, void *user);
/* For layers built on devkit (the model layer in models/): report an error
 * through the same channel as the kit's own calls (the calling thread's
 * dk_last_error()/dk_last_status(), the error handler) and return s. */
DEVKIT_API dk_status   dk_set_error(dk_status s, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Driver diagnostics (Vulkan validation-layer messages when
 * DEVKIT_VULKAN_VALIDATION=1): how many so far, and the last one's text. */
DEVKIT_API uint64_t    dk_validation_messages(void);
DEVKIT_API const char *dk_validation_last(void);

/* ---- dtypes ----------------------------------------------------------- */
DEVKIT_API const char *dk_dtype_name(dk_dtype t);        /* "f32", "q4_0" */
DEVKIT_API int         dk_dtype_block(dk_dtype t);       /* elements per block: 1, 32 or 256 */
DEVKIT_API size_t      dk_dtype_block_bytes(dk_dtype t); /* bytes per block */
DEVKIT_API int         dk_dtype_is_float(dk_dtype t);    /* f32, f16, bf16 */
DEVKIT_API int         dk_dtype_is_quant(dk_dtype t);    /* q8_0, q4_0, q4_1, ..., q6_K, iq4_nl, ..., iq2_s */
DEVKIT_API float       dk_f16_to_f32(uint16_t h);
DEVKIT_API uint16_t    dk_f32_to_f16(float f);           /* round to nearest even */
DEVKIT_API float       dk_bf16_to_f32(uint16_t h);
DEVKIT_API uint16_t    dk_f32_to_bf16(float f);          /* round to nearest even */
/* n values (a multiple of dk_dtype_block(t)) between f32 and dtype t.
 * Dequantization is bit for bit that of GGUF's reference (the `gguf` Python
 * package) for every type; quantization is too for q8_0, q4_0, q4_1, q5_0
 * and q5_1, and the K-quants, iq4 and iq3 get devkit's own search for
 * scales (and codebook points). Returns bytes written. */
DEVKIT_API size_t      dk_quantize(dk_dtype t, const float *src, int64_t n, void *dst);
DEVKIT_API void        dk_dequantize(dk_dtype t, const void *src, int64_t n, float *dst);

/* ---- tensors ---------------------------------------------------------- */
/* The macros below record the caller's file:line as the creation site; the
 * functions of the same names exist too, for taking their addresses. */
DEVKIT_API dk_status dk_tensor_new(dk_device d, dk_dtype t, int ndim, const int64_t *shape,
                                   const char *name, dk_tensor **out);
DEVKIT_API dk_status dk_tensor_new_at(dk_device d, dk_dtype t, int ndim, const int64_t *shape,
                                      const char *name, const char *site, dk_tensor **out);
DEVKIT_API dk_status dk_tensor_upload(dk_tensor *t, const void *src, size_t nbytes);
/* Bytes [offset, offset + nbytes) of a contiguous tensor from host memory:
 * a large tensor filled in pieces (the model layer loads weights straight from
 * a file mapping this way, with no second host copy). */
DEVKIT_API dk_status dk_tensor_upload_range(dk_tensor *t, size_t offset, const void *src, size_t nbytes);
DEVKIT_API dk_status dk_tensor_download(const dk_tensor *t, void *dst, size_t nbytes);
/* NULL: nothing. A freed tensor (double free) or one from before dk_shutdown:
 * DK_ERR_INVALID through dk_last_error()/dk_last_status() and the error
 * handler (see TENSOR LIFE) */
DEVKIT_API void      dk_tensor_free(dk_tensor *t);
DEVKIT_API dk_device dk_tensor_device(const dk_tensor *t);
DEVKIT_API dk_dtype  dk_tensor_dtype(const dk_tensor *t);
DEVKIT_API int       dk_tensor_ndim(const dk_tensor *t);
DEVKIT_API const int64_t *dk_tensor_shape(const dk_tensor *t);
DEVKIT_API int64_t   dk_tensor_dim(const dk_tensor *t, int i);   /* negative i counts from the end */
DEVKIT_API int64_t   dk_tensor_numel(const dk_tensor *t);
DEVKIT_API size_t    dk_tensor_nbytes(const dk_tensor *t);
DEVKIT_API const char *dk_tensor_name(const dk_tensor *t);
DEVKIT_API const char *dk_tensor_site(const dk_tensor *t);       /* "examples/llama.c:212" */
DEVKIT_API void      dk_tensor_set_name(dk_tensor *t, const char *name);
DEVKIT_API void      dk_tensor_set_site(dk_tensor *t, const char *site);
/* A weight whose products keep their activations precise where a backend
 * would otherwise round them for speed: for a classifier, where an error of a
 * quarter of a logit picks another token. The CPU's decode dot (1-4-row
 * dk_linear against block weights) rounds activations to q8 per 32 values;
 * for a precise weight it carries them as two q8 levels (the value, then what
 * its rounding lost; error <= 1/64516 of the block's largest, 254 times
 * below one level) for 1-2 rows, f32 for 3-4. Results stay within the op's
 * documented tolerance either way; this only chooses the closer path. */
DEVKIT_API void      dk_tensor_set_precise(dk_tensor *w, int on);
DEVKIT_API int       dk_tensor_precise(const dk_tensor *w);
DEVKIT_API int       dk_tensor_is_contiguous(const dk_tensor *t);
DEVKIT_API int       dk_tensor_is_view(const dk_tensor *t);
/* Views: share storage with x; free them with dk_tensor_free like any tensor. */
DEVKIT_API dk_status dk_narrow(const dk_tensor *x, int dim, int64_t start, int64_t length, dk_tensor **out);
DEVKIT_API dk_status dk_narrow_at(const dk_tensor *x, int dim, int64_t start, int64_t length,
                                  const char *site, dk_tensor **out);
/* one entry of shape may be -1 (inferred); x must be contiguous */
DEVKIT_API dk_status dk_reshape(const dk_tensor *x, int ndim, const int64_t *shape, dk_tensor **out);
DEVKIT_API dk_status dk_reshape_at(const dk_tensor *x, int ndim, const int64_t *shape,
                                   const char *site, dk_tensor **out);

/* ---- between devices: the only calls that take two devices ------------ */
DEVKIT_API dk_status dk_to(const dk_tensor *src, dk_device d, dk_tensor **out);   /* a new tensor on d */
DEVKIT_API dk_status dk_to_at(const dk_tensor *src, dk_device d, const char *site, dk_tensor **out);
DEVKIT_API dk_status dk_copy_to(dk_tensor *dst, const dk_tensor *src);           /* same dtype and shape */

/* ---- ops: outputs first, allocated by the caller on the same device ----- */
/* elementwise with NumPy broadcasting */
DEVKIT_API dk_status dk_add(dk_tensor *out, const dk_tensor *a, const dk_tensor *b);
DEVKIT_API dk_status dk_sub(dk_tensor *out, const dk_tensor *a, const dk_tensor *b);
DEVKIT_API dk_status dk_mul(dk_tensor *out, const dk_tensor *a, const dk_tensor *b);
DEVKIT_API dk_status dk_div(dk_tensor *out, const dk_tensor *a, const dk_tensor *b);
DEVKIT_API dk_status dk_scale(dk_tensor *out, const dk_tensor *x, float s);
/* activations */
DEVKIT_API dk_status dk_silu(dk_tensor *out, const dk_tensor *x);
DEVKIT_API dk_status dk_gelu(dk_tensor *out, const dk_tensor *x);        /* erf form */
DEVKIT_API dk_status dk_gelu_tanh(dk_tensor *out, const dk_tensor *x);
DEVKIT_API dk_status dk_relu(dk_tensor *out, const dk_tensor *x);
DEVKIT_API dk_status dk_sigmoid(dk_tensor *out, const dk_tensor *x);
DEVKIT_API dk_status dk_tanh(dk_tensor *out, const dk_tensor *x);
DEVKIT_API dk_status dk_exp(dk_tensor *out, const dk_tensor *x);
DEVKIT_API dk_status dk_swiglu(dk_tensor *out, const dk_tensor *gate, const dk_tensor *up); /* silu(gate) * up */
/* normalization over the last dim; w and b may be NULL */
DEVKIT_API dk_status dk_rmsnorm(dk_tensor *out, const dk_tensor *x, const dk_tensor *w, float eps);
DEVKIT_API dk_status dk_layernorm(dk_tensor *out, const dk_tensor *x, const dk_tensor *w,
                                  const dk_tensor *b, float eps);
/* softmax over the last dim. masked: x*scale (scale finite), and row i of the
 * last-but-one dim sees columns <= i + causal_offset; a negative offset
 * disables the mask. A row that is all -inf gives zeros. */
DEVKIT_API dk_status dk_softmax(dk_tensor *out, const dk_tensor *x);
DEVKIT_API dk_status dk_softmax_masked(dk_tensor *out, const dk_tensor *x, float scale, int causal_offset);
/* NumPy matmul: 1-D promotion and batch broadcasting */
DEVKIT_API dk_status dk_matmul(dk_tensor *out, const dk_tensor *a, const dk_tensor *b);
/* out[..., N] = x[..., K] · w[N, K]ᵀ (+ bias[N]); w may be any dtype, block
 * formats included. Where dk_device_props.prompt_x16 is set, a prompt-sized
 * product (more than 4 rows of x on cuda, 8 on vulkan) may run on tensor
 * cores: f32 x rounded to f16 (bf16 for bf16 w), block weights' values to
 * f16, f32 accumulation; f32 and precise weights never are. On the CPU's amx
 * class (16 rows or more, K a multiple of 32; bf16 and block weights only)
 * x and block weights' values are rounded to bf16 instead. */
DEVKIT_API dk_status dk_linear(dk_tensor *out, const dk_tensor *x, const dk_tensor *w, const dk_tensor *bias);
/* dk_linear(out, rmsnorm(x, norm_w, eps), w, bias) as one op, with the
 * result of the two calls (the normed x rounded to x's dtype; norm_w and
 * bias may be NULL): a decode step's norm feeds one product, and a GPU can
 * fold it into that product's read of x instead of a launch of its own
 * (at decode on CUDA and on Vulkan GPUs; DEVKIT_CUDA_FUSED_GEMV=0 and
 * DEVKIT_VULKAN_FUSED=0 keep the two calls: the norm's scale is applied to
 * each output's sum, so its last bits may differ from the two calls') */
DEVKIT_API dk_status dk_rmsnorm_linear(dk_tensor *out, const dk_tensor *x, const dk_tensor *norm_w, const dk_tensor *w,
                                       const dk_tensor *bias, float eps);
/* dk_linear(out, swiglu(gate, up), w, bias) as one op, likewise (a SwiGLU
 * MLP's down projection; gate and up of one shape and dtype) */
DEVKIT_API dk_status dk_swiglu_linear(dk_tensor *out, const dk_tensor *gate, const dk_tensor *up, const dk_tensor *w,
                                      const dk_tensor *bias);
/* out[ids..., D] = table[ids, :]; ids i32; table may be q8_0 or q4_0 */
DEVKIT_API dk_status dk_embedding(dk_tensor *out, const dk_tensor *table, const dk_tensor *ids);
/* x [..., T, H, D] (or [T, D]); positions i32 [T]; rotates the first n_rot of D */
typedef enum { DK_ROPE_NORMAL = 0, DK_ROPE_NEOX = 2 } dk_rope_mode;
DEVKIT_API dk_status dk_rope(dk_tensor *out, const dk_tensor *x, const dk_tensor *positions,
                             int n_rot, float theta, int mode);
DEVKIT_API dk_status dk_concat(dk_tensor *out, const dk_tensor *a, const dk_tensor *b, int dim);
DEVKIT_API dk_status dk_copy(dk_tensor *dst, const dk_tensor *src);    /* dtype conversion, strided views */
DEVKIT_API dk_status dk_transpose(dk_tensor *out, const dk_tensor *x, const int *perm);
/* out i32 has x's shape without the last dim (or with it as 1) */
DEVKIT_API dk_status dk_argmax(dk_tensor *out_i32, const dk_tensor *x);
/* One token per row of logits, chosen on the device:
 *   temperature <= 0: argmax (the lowest index among equal maxima).
 *   else p = softmax(logits / temperature); top_k > 0 keeps tokens whose logit
 *   is >= the k-th largest (ties at the edge kept); top_p < 1 then keeps the
 *   tokens whose probability (renormalized over the kept ones) is >= the
 *   largest threshold t for which those tokens hold at least top_p of the
 *   mass; the token is the first, in index order, whose running sum of kept
 *   probabilities exceeds u * total, u = dk_sample_uniform(seed, row).
 *   The op is stateless: pass a new seed (seed + step) for each step.
 *   NaN logits are never kept; a row with no kept logit / temperature that is
 *   finite gives 0 (all -inf or NaN) or the first index where it is +inf. */
DEVKIT_API dk_status dk_sample(dk_tensor *out_i32, const dk_tensor *logits, float temperature,
                               int top_k, float top_p, uint64_t seed);
DEVKIT_API float     dk_sample_uniform(uint64_t seed, int64_t row);  /* in [0, 1), 24 bits */
/* Attention with grouped-query heads, softmax in f32:
 *   q [T, Hq, D], k [S, Hkv, D], v [S, Hkv, Dv], out [T, Hq, Dv], Hq % Hkv == 0;
 *   query t sees keys s <= t + causal_offset (negative: no mask). k and v may
 *   have another float dtype than q (an f16 KV cache with f32 activations).
 *   Where dk_device_props.attn_x16 is set (cuda with DEVKIT_CUDA_FLASH=1,
 *   vulkan with DEVKIT_VULKAN_FLASH=1 or =emu), a prompt (T > 1) over an f16
 *   cache with head dims 64 runs on tensor cores (or vulkan's emulation of
 *   them): q and the probabilities rounded to f16, scores and sums in f32. */
DEVKIT_API dk_status dk_attention(dk_tensor *out, const dk_tensor *q, const dk_tensor *k,
                                  const dk_tensor *v, float scale, int causal_offset);
/* dk_attention with a sliding window (Gemma 2/3, Mistral): query t sees the
 * last `window` (>= 1) of the keys dk_attention would give it, keys
 * lim - window <= s < lim with lim = min(t + causal_offset + 1, S) (S with
 * a negative offset). One call serves a prompt longer than the window. */
DEVKIT_API dk_status dk_attention_window(dk_tensor *out, const dk_tensor *q, const dk_tensor *k,
                                         const dk_tensor *v, float scale, int causal_offset, int window);
/* dk_attention where query t sees keys s <= positions[t] (positions i32 [T],
 * on the device; a negative one sees none and gives zeros, one past the
 * cache sees all of it): over a whole KV cache, one call (and one recorded
 * graph, see dk_graph) serves every step of a decode, whatever its position.
 * CUDA reads the positions on the device; with DEVKIT_CUDA_GRAPH=0 (and no
 * DEVKIT_CUDA_DEVPOS=1) it reads them back (a sync) and runs dk_attention
 * per query row; dk_index_copy likewise reads its ids */
DEVKIT_API dk_status dk_attention_pos(dk_tensor *out, const dk_tensor *q, const dk_tensor *k, const dk_tensor *v,
                                      const dk_tensor *positions, float scale);
/* dk_attention_pos with a sliding window: query t sees keys lim - window <=
 * s < lim, lim = min(positions[t] + 1, S): a sliding-window layer's decode
 * step recorded once (Gemma 3's; the positions are rows of its cache).
 * CUDA reads the positions back and runs a call per row (a sync, which a
 * recording cannot hold) unless DEVKIT_CUDA_ATTN_WINDOW=1 */
DEVKIT_API dk_status dk_attention_pos_window(dk_tensor *out, const dk_tensor *q, const dk_tensor *k, const dk_tensor *v,
                                             const dk_tensor *positions, float scale, int window);

/* ---- reductions, math, softmax on any axis, select ---------------------- */
/* Reductions over a set of axes (negative axes count from the end; axes NULL
 * or n_axes 0 means every axis). keepdim 1: out has x's ndim with the
 * reduced axes as 1; keepdim 0: they are dropped (reducing every axis gives a
 * 0-dim tensor). out has x's dtype; sums accumulate in f32 or wider. An
 * empty reduced axis gives 0 (sum) or NaN (mean, 0/0); max and min refuse it
 * (DK_ERR_SHAPE). max/min propagate NaN: a NaN anywhere in the reduced
 * elements gives NaN. */
DEVKIT_API dk_status dk_reduce_sum(dk_tensor *out, const dk_tensor *x, const int *axes, int n_axes, int keepdim);
DEVKIT_API dk_status dk_reduce_mean(dk_tensor *out, const dk_tensor *x, const int *axes, int n_axes, int keepdim);
DEVKIT_API dk_status dk_reduce_max(dk_tensor *out, const dk_tensor *x, const int *axes, int n_axes, int keepdim);
DEVKIT_API dk_status dk_reduce_min(dk_tensor *out, const dk_tensor *x, const int *axes, int n_axes, int keepdim);
/* The index (i32, as dk_argmax) of the largest / smallest element along one
 * axis; select_last 0 gives the first index among equal extremes, 1 the last
 * (ONNX select_last_index). NaN never wins (it counts as -inf for argmax and
 * +inf for argmin), so a line that is all NaN ties everywhere. An empty axis
 * is refused (DK_ERR_SHAPE). */
DEVKIT_API dk_status dk_argmax_axis(dk_tensor *out_i32, const dk_tensor *x, int axis, int keepdim, int select_last);
DEVKIT_API dk_status dk_argmin_axis(dk_tensor *out_i32, const dk_tensor *x, int axis, int keepdim, int select_last);
/* elementwise math, out and x of one float dtype and shape; computed in f32.
 * Outside the domain the result is NaN (sqrt, log of x < 0) or +-inf
 * (log 0, rsqrt 0), as in C. dk_gelu above is the exact (erf) GELU. */
DEVKIT_API dk_status dk_sqrt(dk_tensor *out, const dk_tensor *x);
DEVKIT_API dk_status dk_rsqrt(dk_tensor *out, const dk_tensor *x);   /* 1 / sqrt(x) */
DEVKIT_API dk_status dk_log(dk_tensor *out, const dk_tensor *x);     /* natural log */
DEVKIT_API dk_status dk_abs(dk_tensor *out, const dk_tensor *x);
DEVKIT_API dk_status dk_neg(dk_tensor *out, const dk_tensor *x);
DEVKIT_API dk_status dk_erf(dk_tensor *out, const dk_tensor *x);
/* min(max(x, lo), hi); lo <= hi, either may be infinite; NaN stays NaN */
DEVKIT_API dk_status dk_clamp(dk_tensor *out, const dk_tensor *x, float lo, float hi);
/* x ^ e as C's powf: a negative base with an integer exponent keeps its
 * sign rule ((-2)^3 = -8), with any other exponent it is NaN */
DEVKIT_API dk_status dk_pow_scalar(dk_tensor *out, const dk_tensor *x, float e);
/* a ^ b with NumPy broadcasting, as dk_add */
DEVKIT_API dk_status dk_pow(dk_tensor *out, const dk_tensor *a, const dk_tensor *b);
/* softmax and log-softmax along any axis (negative counts from the end);
 * out has x's shape and dtype. A line that is all -inf gives zeros
 * (softmax) or -inf (log-softmax); a NaN in a line makes it NaN. */
DEVKIT_API dk_status dk_softmax_axis(dk_tensor *out, const dk_tensor *x, int axis);
DEVKIT_API dk_status dk_log_softmax(dk_tensor *out, const dk_tensor *x, int axis);
/* out = mask != 0 ? a : b, elementwise with NumPy broadcasting of all three.
 * The mask convention: an i32 tensor, any nonzero value is true (devkit has
 * no bool dtype; dk_copy cannot make one from floats, so build masks as i32,
 * 1 and 0). a, b and out share one float dtype. */
DEVKIT_API dk_status dk_where(dk_tensor *out, const dk_tensor *mask, const dk_tensor *a, const dk_tensor *b);
/* running sum along an axis (ONNX CumSum): out[i] = sum of x[j], j <= i
 * along the axis (exclusive: j < i; reverse: j >= i, or j > i), accumulated
 * in f32 or wider; out has x's shape and dtype */
DEVKIT_API dk_status dk_cumsum(dk_tensor *out, const dk_tensor *x, int axis, int exclusive, int reverse);
/* the k largest (largest 1) or smallest (0) elements along the last axis:
 * values (x's dtype) and their indices (i32), both [..., k], in order (the
 * largest, or the smallest, first); equal values by the lower index first.
 * NaN ranks after every number (as in dk_argmax_axis). 0 <= k <= last dim. */
DEVKIT_API dk_status dk_topk(dk_tensor *values, dk_tensor *indices, const dk_tensor *x, int k, int largest);
/* gather along an axis (ONNX Gather, torch.index_select with any ids shape):
 * out is x with that axis replaced by ids' dims, out[a.., i.., b..] =
 * x[a.., ids[i..], b..]. ids is i32; a negative id counts from the end (-1:
 * the last). An id outside [-n, n) is DK_ERR_INVALID naming the id, its
 * position in ids, the axis and its size: on the CPU from the op itself,
 * before anything is written; on a GPU from the next call that synchronizes
 * (as dk_embedding), with the elements of bad ids left unwritten. */
DEVKIT_API dk_status dk_index_select(dk_tensor *out, const dk_tensor *x, const dk_tensor *ids, int axis);
/* the reverse (torch's index_copy_): dst[.., ids[i], ..] = src[.., i, ..]
 * along axis; the rest of dst is kept. ids i32 [n], src is dst with the
 * axis n long; their float dtypes may differ (converted as dk_copy). A
 * negative id counts from the end; an id outside [-len, len) is refused as
 * in dk_index_select (on a GPU at the next sync, its rows unwritten); with
 * an id twice, which of its rows lands is unspecified. A decode step writes
 * its keys and values into the cache at a position held on the device. */
DEVKIT_API dk_status dk_index_copy(dk_tensor *dst, const dk_tensor *src, const dk_tensor *ids, int axis);
/* A strided copy along one axis, any nonzero step, negative ones included
 * (ONNX Slice, x[start::step] in numpy): out is x with that axis of length
 * m (out's own), out[.., k, ..] = x[.., start + k * step, ..]. start may be
 * negative (from the end). Every index is checked on the host first: one
 * outside x is DK_ERR_INVALID naming it, and nothing runs. It is
 * dk_index_select with the m ids made on x's device (one small upload). */
DEVKIT_API dk_status dk_slice(dk_tensor *out, const dk_tensor *x, int axis, int64_t start, int64_t step);

/* ---- placement ---------------------------------------------------------- */
/* Before anything runs: is every tensor where it is meant to be? Returns DK_OK,
 * or DK_ERR_DEVICE_MISMATCH (DK_ERR_BACKEND_MISMATCH if any is on another
 * backend) with a message listing every misplaced tensor by name, device,
 * expected device and creation site. *n_bad (may be NULL) receives the count,
 * and bad[] (may be NULL, room for n) the indices of the misplaced items. */
typedef struct { const dk_tensor *tensor; dk_device expected; } dk_placement;
DEVKIT_API dk_status dk_check_placement(const dk_placement *items, int n, int *n_bad, int *bad);

/* ---- introspection ---------------------------------------------------- */
/* Whether backend b implements op "name" (e.g. "dk_linear") for dtype t, where
 * t is the activation dtype, or with weight=1 the weight/table/kv dtype. */
DEVKIT_API int dk_op_supported(dk_backend b, const char *op_name, dk_dtype t, int weight);
DEVKIT_API int dk_op_count(void);
DEVKIT_API const char *dk_op_name(int op);

/* creation sites */
#define DK__STR2(x) #x
#define DK__STR(x) DK__STR2(x)
#define DK_SITE __FILE__ ":" DK__STR(__LINE__)
#define dk_tensor_new(d, t, n, s, name, out) dk_tensor_new_at((d), (t), (n), (s), (name), DK_SITE, (out))
#define dk_narrow(x, dim, start, len, out) dk_narrow_at((x), (dim), (start), (len), DK_SITE, (out))
#define dk_reshape(x, n, s, out) dk_reshape_at((x), (n), (s), DK_SITE, (out))
#define dk_to(src, d, out) dk_to_at((src), (d), DK_SITE, (out))

#ifdef __cplusplus
}
#endif
#endif /* DEVKIT_H */

/* ======================================================================== */
/*                              IMPLEMENTATION                              */
/* ======================================================================== */
#if defined(DEVKIT_IMPLEMENTATION) && !defined(DEVKIT_IMPLEMENTATION_DONE)
#define DEVKIT_IMPLEMENTATION_DONE

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <sys/time.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <pthread.h>
#include <dlfcn.h>
#include <unistd.h>

#if defined(__cplusplus)
#define DK_TLS thread_local
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define DK_TLS _Thread_local
#else
#define DK_TLS __thread
#endif

#if defined(__GNUC__) || defined(__clang__)
#define DK__UNUSED __attribute__((unused))
#else
#define DK__UNUSED
#endif

#define DK_MAX_OPERANDS 6
#define DK_MAX_DEVICES 64         /* per backend, logical */
#define DK_NAME_LEN 128
#define DK_SITE_LEN 160


/* ---- internal types shared with the backends ---------------------------- */

/* One allocation on one device, shared by a tensor and its views. */
typedef struct dk_storage {
  int refs;                 /* atomic */
  dk_device device;
  size_t nbytes;
  void *ptr;                /* CPU: host memory. CUDA: device address. Vulkan: backend record */
  uint64_t addr;            /* backend use (offset in a block, device address) */
  void *priv;               /* backend use */
  /* the core's list of live storages, so dk_shutdown can release what the
   * user never freed; released = 1 once the device memory is gone */
  struct dk_storage *prev, *next;
  int released;
} dk_storage;

/* A tensor's magic is DK__LIVE until dk_tensor_free sets DK__FREED; its gen
 * is the kit generation (dk__gen) it was made in, which dk_shutdown bumps.
 * Freed headers are not given back to malloc (see dk__tensor_alloc), so a
 * freed tensor stays readable and recognisable. */
#define DK__LIVE 0x6c766b64u    /* "dkvl" */
#define DK__FREED 0x64656572u   /* "reed" */
struct dk_tensor {
  uint32_t magic;
  uint32_t gen;
  struct dk_tensor *qnext;          /* the quarantine FIFO, while freed */
  dk_device device;
  dk_dtype dtype;
  int ndim;
  int64_t shape[DEVKIT_MAX_DIMS];
  int64_t stride[DEVKIT_MAX_DIMS];  /* in elements; a quantized row is contiguous */
  size_t offset;                    /* bytes from the start of the storage */
  dk_storage *st;
  int is_view;
  int precise;                      /* dk_tensor_set_precise */
  char name[DK_NAME_LEN];
  char site[DK_SITE_LEN];
};

typedef enum {
  DK_OP_ADD = 0, DK_OP_SUB, DK_OP_MUL, DK_OP_DIV, DK_OP_SCALE,
  DK_OP_SILU, DK_OP_GELU, DK_OP_GELU_TANH, DK_OP_RELU, DK_OP_SIGMOID, DK_OP_TANH, DK_OP_EXP,
  DK_OP_SWIGLU,
  DK_OP_RMSNORM, DK_OP_LAYERNORM, DK_OP_SOFTMAX, DK_OP_SOFTMAX_MASKED,
  DK_OP_MATMUL, DK_OP_LINEAR, DK_OP_EMBEDDING, DK_OP_ROPE, DK_OP_CONCAT, DK_OP_COPY,
  DK_OP_TRANSPOSE, DK_OP_ARGMAX, DK_OP_SAMPLE, DK_OP_ATTENTION,
  /* issue 12: reductions over axes, math, softmax on an axis, select */
  DK_OP_REDUCE_SUM, DK_OP_REDUCE_MEAN, DK_OP_REDUCE_MAX, DK_OP_REDUCE_MIN, DK_OP_ARGMAX_AXIS, DK_OP_ARGMIN_AXIS,
  DK_OP_SQRT, DK_OP_RSQRT, DK_OP_LOG, DK_OP_ABS, DK_OP_NEG, DK_OP_ERF, DK_OP_CLAMP, DK_OP_POW_SCALAR,
  DK_OP_POW, DK_OP_SOFTMAX_AXIS, DK_OP_LOG_SOFTMAX, DK_OP_WHERE, DK_OP_CUMSUM, DK_OP_TOPK, DK_OP_INDEX_SELECT,
  /* issue 10: a decode step's fusions */
  DK_OP_RMSNORM_LINEAR, DK_OP_SWIGLU_LINEAR,
  /* a decode step whose position lives on the device (dk_graph) */
  DK_OP_INDEX_COPY, DK_OP_ATTENTION_POS, DK_OP_ATTENTION_WINDOW, DK_OP_ATTENTION_POS_WINDOW,
  DK_OP_COUNT
} dk_op;

/* One op call as the backends see it, after every check has passed.
 * t[] holds the operands in the op's role order (outputs first); an absent
 * optional operand is NULL. Parameters:
 *   scale: f[0]=s.  rmsnorm/layernorm: f[0]=eps.  softmax_masked: f[0]=scale,
 *   i[0]=causal_offset.  rope: i[0]=n_rot, i[1]=mode, f[0]=theta.  concat:
 *   i[0]=dim (0..ndim-1).  transpose: i[0..ndim-1]=perm.  sample: f[0]=temp,
 *   i[0]=top_k, f[1]=top_p, u=seed.  attention: f[0]=scale, i[0]=causal_offset.
 *   reductions (dk_reduce_*, argmax/argmin_axis), softmax_axis, log_softmax,
 *   cumsum: i[0] = the reduced axes as a bit mask (dk__red_layout);
 *   reductions i[1] = keepdim; arg i[2] = select_last; cumsum i[1] =
 *   exclusive, i[2] = reverse.  clamp: f[0]=lo, f[1]=hi.  pow_scalar:
 *   f[0]=e.  topk: i[0]=k, i[1]=largest.  index_select: i[0]=axis (0..).
 *   matmul: i[0..3] = M, N, K, batch count (after broadcasting; see
 *   dk__matmul_batch_offsets). linear: i[0..2] = M (rows of x), N, K.
 *   rmsnorm_linear: t[] = out, x, norm_w, w, bias; f[0]=eps; i[0..2] as
 *   linear. swiglu_linear: t[] = out, gate, up, w, bias; i[0..2] as linear
 *   (K = gate's last dim). index_copy: t[] = dst, src, ids; i[0]=axis
 *   (0..). attention_pos (and attention_pos_window): t[] = out, q, k, v,
 *   positions; f[0]=scale; i[1]=window (0 but for attention_pos_window).
 *   attention (and attention_window): f[0]=scale, i[0]=causal offset
 *   (negative: none), i[1]=window (0 but for attention_window). */
typedef struct dk_call {
  dk_op op;
  dk_device dev;
  dk_tensor *t[DK_MAX_OPERANDS];
  float f[4];
  int64_t i[DEVKIT_MAX_DIMS + 4];
  uint64_t u;
} dk_call;

typedef dk_status (*dk_op_fn)(const dk_call *c);

/* A backend fills one of these. Devices are logical: the core maps them to
 * physical devices (DEVKIT_VISIBLE_DEVICES, DEVKIT_LOGICAL_DEVICES) and calls
 * open_device once per logical device. Every entry may assume its arguments
 * were checked. Errors are reported with dk__error and returned. */
typedef struct dk_backend_impl {
  dk_backend kind;
  /* load the driver and count physical devices; on 0, write why into note */
  int (*probe)(char *note, size_t note_len);
  dk_status (*properties)(int physical, dk_device_props *p);
  dk_status (*open_device)(int logical, int physical, int slot);
  void (*close_all)(void);                 /* free every device and the driver */
  dk_status (*alloc)(dk_device d, size_t nbytes, const char *tensor_name, dk_storage *st);
  void (*release)(dk_storage *st);         /* may defer until the device is done with it */
  dk_status (*upload)(dk_storage *st, size_t off, const void *src, size_t n);
  dk_status (*download)(dk_storage *st, size_t off, void *dst, size_t n);  /* synchronizes */
  /* between two storages of this backend, on one device or two */
  dk_status (*copy)(dk_storage *dst, size_t doff, dk_storage *src, size_t soff, size_t n);
  dk_status (*sync)(dk_device d);
  dk_op_fn ops[DK_OP_COUNT];
  const char *missing[DK_OP_COUNT];  /* where ops[op] is NULL: why, and how to get it (the message's fix) */
  uint32_t dtypes[DK_OP_COUNT];    /* bit per activation dtype the op takes */
  uint32_t wdtypes[DK_OP_COUNT];   /* bit per weight/table/kv dtype (linear, embedding, norms, attention) */
  /* optional: with devices present, what the backend runs on (dk_backend_note) */
  const char *(*active_note)(void);
  /* optional, for dk_profile: prof_mark queues a timestamp after the work
   * queued so far on device d and returns its id, -1 when it has none
   * left before the next synchronization, -2 when d has no timestamps
   * (the core then times the op by the host clock); prof_elapsed gives the seconds
   * between two marks once the device has synchronized; prof_reset frees
   * every mark of d (called after the elapsed times were read). Without
   * them the core times ops by the host clock around the op and a sync. */
  int (*prof_mark)(dk_device d);
  double (*prof_elapsed)(dk_device d, int a, int b);
  void (*prof_reset)(dk_device d);
  /* optional, for dk_graph: the backend records a graph's ops itself (a
   * reusable command buffer, a CUDA graph). graph_begin(d) sends the ops
   * that follow on d into a new recording rather than the device's queue
   * and returns it (NULL: none this time; the core then keeps the calls
   * only); graph_end closes it (on failure the core drops it and re-runs
   * the calls); graph_replay queues it after the work queued so far;
   * graph_free frees it once the device is done with it, or with gone = 1
   * only its host memory (the device went with dk_shutdown). Called under
   * the device's lock, except graph_free with gone = 1. */
  void *(*graph_begin)(dk_device d);
  dk_status (*graph_end)(dk_device d, void *h);
  dk_status (*graph_replay)(dk_device d, void *h);
  void (*graph_free)(dk_device d, void *h, int gone);
} dk_backend_impl;

#define DK_BIT(t) (1u << (t))
#define DK_FLOATS (DK_BIT(DK_F32) | DK_BIT(DK_F16) | DK_BIT(DK_BF16))
#define DK_QUANTS (DK_BIT(DK_Q8_0) | DK_BIT(DK_Q4_0))
/* the block formats beyond q8_0/q4_0 (backends/cpu_quant.h) */
#define DK_QUANTS_MORE (DK_BIT(DK_Q4_1) | DK_BIT(DK_Q5_0) | DK_BIT(DK_Q5_1) | DK_BIT(DK_Q2_K) | DK_BIT(DK_Q3_K) | \
                        DK_BIT(DK_Q4_K) | DK_BIT(DK_Q5_K) | DK_BIT(DK_Q6_K) | DK_BIT(DK_IQ4_NL) | DK_BIT(DK_IQ4_XS) | \
                        DK_BIT(DK_IQ3_XXS) | DK_BIT(DK_IQ3_S) | DK_BIT(DK_IQ2_XXS) | DK_BIT(DK_IQ2_XS) | DK_BIT(DK_IQ2_S))

/* helpers the backends use */
static dk_status dk__error(dk_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int dk__physical_of(dk_device d) DK__UNUSED;
static size_t dk__elem_offset_bytes(dk_dtype t, int64_t elems);
static size_t dk__row_bytes(dk_dtype t, int64_t n);
static const char *dk__op_name(dk_op op);

typedef struct { uint16_t d; int8_t qs[32]; } dk_block_q8_0;    /* 34 bytes */
typedef struct { uint16_t d; uint8_t qs[16]; } dk_block_q4_0;   /* 18 bytes */
/* the other block formats, whole blocks at a time (backends/cpu_quant.h) */
static void dk__dequant_more(dk_dtype t, const void *src, int64_t nblocks, float *dst);
static void dk__quant_more(dk_dtype t, const float *src, int64_t nblocks, void *dst);


/* The backends are included at the end of the implementation; each defines a
 * getter for its table. */
static const dk_backend_impl *dk__cpu_backend(void);
/* a backend is compiled in when all its files are beside this header */
#if !defined(DEVKIT_NO_VULKAN) && defined(__has_include)
#if __has_include("backends/vulkan.h") && __has_include("shaders/generated/dk_shaders.h")
#define DK__HAVE_VULKAN 1
static const dk_backend_impl *dk__vk_backend(void);
#endif
#endif
#if !defined(DEVKIT_NO_CUDA) && defined(__has_include)
#if __has_include("backends/cuda.h") && __has_include("kernels/dk_params.h") && \
    __has_include("kernels/generated/dk_kernels.h")
#define DK__HAVE_CUDA 1
static const dk_backend_impl *dk__cuda_backend(void);
#endif
#endif



/* ==== errors ============================================================== */

static DK_TLS char dk__msg[8192];
static DK_TLS dk_status dk__last_status = DK_OK;
static dk_error_handler dk__handler = NULL;
static void *dk__handler_user = NULL;

DEVKIT_API const char *dk_status_name(dk_status s) {
  static const char *names[] = {"DK_OK", "DK_ERR_INVALID", "DK_ERR_BACKEND_MISMATCH",
    "DK_ERR_DEVICE_MISMATCH", "DK_ERR_DTYPE", "DK_ERR_SHAPE", "DK_ERR_UNSUPPORTED",
    "DK_ERR_NO_DEVICE", "DK_ERR_OUT_OF_MEMORY", "DK_ERR_IO", "DK_ERR_FORMAT", "DK_ERR_BACKEND"};
  if ((int)s < 0 || (int)s >= (int)(sizeof names / sizeof names[0])) return "DK_ERR_?";
  return names[s];
}
DEVKIT_API const char *dk_last_error(void) { return dk__msg; }
DEVKIT_API dk_status dk_last_status(void) { return dk__last_status; }
DEVKIT_API void dk_clear_error(void) { dk__msg[0] = 0; dk__last_status = DK_OK; }
DEVKIT_API void dk_set_error_handler(dk_error_handler fn, void *user) {
  dk__handler = fn;
  dk__handler_user = user;
}

/* Backends count validation messages here (from driver threads too). */
static uint64_t dk__validation_count = 0;
static char dk__validation_text[1024];
static pthread_mutex_t dk__validation_lock = PTHREAD_MUTEX_INITIALIZER;
static void dk__validation_note(const char *text) DK__UNUSED;
static void dk__validation_note(const char *text) {
  pthread_mutex_lock(&dk__validation_lock);
  dk__validation_count++;
  snprintf(dk__validation_text, sizeof dk__validation_text, "%s", text ? text : "");
  pthread_mutex_unlock(&dk__validation_lock);
}
DEVKIT_API uint64_t dk_validation_messages(void) { return __atomic_load_n(&dk__validation_count, __ATOMIC_RELAXED); }
DEVKIT_API const char *dk_validation_last(void) { return dk__validation_text; }

static dk_status dk__raise(dk_status s) {
  const char *e;
  dk__last_status = s;
  if (dk__handler) dk__handler(s, dk__msg, dk__handler_user);
  e = getenv("DEVKIT_ABORT_ON_ERROR");
  if (e && e[0] == '1') { /* asked for: print and stop where the debugger can see it */
    fprintf(stderr, "devkit: %s: %s\n", dk_status_name(s), dk__msg);
    abort();
  }
  return s;
}

static dk_status dk__error(dk_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(dk__msg, sizeof dk__msg, fmt, ap);
  va_end(ap);
  return dk__raise(s);
}

DEVKIT_API dk_status dk_set_error(dk_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (fmt) vsnprintf(dk__msg, sizeof dk__msg, fmt, ap);
  else dk__msg[0] = 0;
  va_end(ap);
  return dk__raise(s);
}

/* A message assembled in pieces (the operand tables): len is what buf
 * holds, want what the whole text needs (as snprintf returns it). */
typedef struct { char *buf; size_t cap, len, want; } dk__sb;
static void dk__sb_init(dk__sb *b, char *buf, size_t cap) {
  b->buf = buf; b->cap = buf ? cap : 0; b->len = b->want = 0;
  if (b->cap) buf[0] = 0;
}
static void dk__sbf(dk__sb *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void dk__sbf(dk__sb *b, const char *fmt, ...) {
  va_list ap;
  int n;
  va_start(ap, fmt);
  n = b->len < b->cap ? vsnprintf(b->buf + b->len, b->cap - b->len, fmt, ap) : vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n <= 0) return;
  b->want += (size_t)n;
  if (b->len < b->cap) b->len += (size_t)n < b->cap - b->len ? (size_t)n : b->cap - b->len - 1;
}

/* ==== dtypes ============================================================== */

DEVKIT_API const char *dk_dtype_name(dk_dtype t) {
  static const char *n[DK_DTYPE_COUNT] = {"f32", "f16", "bf16", "i32", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1",
                                           "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "iq4_nl", "iq4_xs", "iq3_xxs", "iq3_s",
                                           "iq2_xxs", "iq2_xs", "iq2_s"};
  return (unsigned)t < DK_DTYPE_COUNT ? n[t] : "?";
}
DEVKIT_API int dk_dtype_block(dk_dtype t) {
  static const int b[DK_DTYPE_COUNT] = {1, 1, 1, 1, 32, 32, 32, 32, 32, 256, 256, 256, 256, 256, 32, 256, 256, 256, 256, 256, 256};
  return (unsigned)t < DK_DTYPE_COUNT ? b[t] : 1;
}
DEVKIT_API size_t dk_dtype_block_bytes(dk_dtype t) {
  static const size_t b[DK_DTYPE_COUNT] = {4, 2, 2, 4, 34, 18, 20, 22, 24, 84, 110, 144, 176, 210, 18, 136, 98, 110, 66, 74, 82};
  return (unsigned)t < DK_DTYPE_COUNT ? b[t] : 0;
}
DEVKIT_API int dk_dtype_is_float(dk_dtype t) { return t == DK_F32 || t == DK_F16 || t == DK_BF16; }
DEVKIT_API int dk_dtype_is_quant(dk_dtype t) { return (unsigned)t < DK_DTYPE_COUNT && dk_dtype_block(t) > 1; }

static size_t dk__elem_offset_bytes(dk_dtype t, int64_t elems) {
  return (size_t)(elems / dk_dtype_block(t)) * dk_dtype_block_bytes(t);
}
static size_t dk__row_bytes(dk_dtype t, int64_t n) { return dk__elem_offset_bytes(t, n); }

static uint32_t dk__f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float dk__bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

DEVKIT_API float dk_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0) {
    /* zero or subnormal: m * 2^-24, exact in f32 */
    float v = (float)m * 5.9604644775390625e-8f;
    return dk__bits_f32(dk__f32_bits(v) | sign);
  }
  if (e == 31) return dk__bits_f32(sign | 0x7f800000u | (m << 13));
  return dk__bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

DEVKIT_API uint16_t dk_f32_to_f16(float f) {
  uint32_t u = dk__f32_bits(f), sign = (u >> 16) & 0x8000, a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (a > 0x7f800000u ? 0x200 : 0));
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00);  /* rounds to >= 65520: inf */
  if (a < 0x38800000u) {
    /* below the smallest normal: let the FPU round m * 2^24 to an integer */
    float v = dk__bits_f32(a) * 16777216.0f;
    uint32_t m = (uint32_t)lrintf(v);
    return (uint16_t)(sign | m);   /* m == 0x400 becomes the smallest normal */
  }
  {
    uint32_t e = (a >> 23) - 112, m = a & 0x7fffff;
    uint32_t h = (e << 10) | (m >> 13), rest = m & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
    return (uint16_t)(sign | h);
  }
}

DEVKIT_API float dk_bf16_to_f32(uint16_t h) { return dk__bits_f32((uint32_t)h << 16); }
DEVKIT_API uint16_t dk_f32_to_bf16(float f) {
  uint32_t u = dk__f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);  /* quiet NaN */
  u += 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

DEVKIT_API size_t dk_quantize(dk_dtype t, const float *src, int64_t n, void *dst) {
  int64_t i, b;
  int j;
  switch (t) {
  case DK_F32: memcpy(dst, src, (size_t)n * 4); break;
  case DK_F16: for (i = 0; i < n; i++) ((uint16_t *)dst)[i] = dk_f32_to_f16(src[i]); break;
  case DK_BF16: for (i = 0; i < n; i++) ((uint16_t *)dst)[i] = dk_f32_to_bf16(src[i]); break;
  case DK_I32: for (i = 0; i < n; i++) ((int32_t *)dst)[i] = (int32_t)src[i]; break;
  case DK_Q8_0:
    for (b = 0; b < n / 32; b++) {
      dk_block_q8_0 *q = (dk_block_q8_0 *)dst + b;
      const float *x = src + b * 32;
      float amax = 0.0f, d, id;
      for (j = 0; j < 32; j++) amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
      d = amax / 127.0f;
      id = d != 0.0f ? 1.0f / d : 0.0f;
      q->d = dk_f32_to_f16(d);
      for (j = 0; j < 32; j++) q->qs[j] = (int8_t)roundf(x[j] * id);
    }
    break;
  case DK_Q4_0:
    for (b = 0; b < n / 32; b++) {
      dk_block_q4_0 *q = (dk_block_q4_0 *)dst + b;
      const float *x = src + b * 32;
      float amax = 0.0f, mx = 0.0f, d, id;
      for (j = 0; j < 32; j++)
        if (fabsf(x[j]) > amax) { amax = fabsf(x[j]); mx = x[j]; }
      d = mx / -8.0f;
      id = d != 0.0f ? 1.0f / d : 0.0f;
      q->d = dk_f32_to_f16(d);
      for (j = 0; j < 16; j++) {
        int a = (int)(x[j] * id + 8.5f), c = (int)(x[j + 16] * id + 8.5f);
        a = a > 15 ? 15 : a;
        c = c > 15 ? 15 : c;
        q->qs[j] = (uint8_t)(a | (c << 4));
      }
    }
    break;
  default: dk__quant_more(t, src, n / dk_dtype_block(t), dst); break;
  }
  return dk__elem_offset_bytes(t, n);
}

DEVKIT_API void dk_dequantize(dk_dtype t, const void *src, int64_t n, float *dst) {
  int64_t i, b;
  int j;
  switch (t) {
  case DK_F32: memcpy(dst, src, (size_t)n * 4); break;
  case DK_F16: for (i = 0; i < n; i++) dst[i] = dk_f16_to_f32(((const uint16_t *)src)[i]); break;
  case DK_BF16: for (i = 0; i < n; i++) dst[i] = dk_bf16_to_f32(((const uint16_t *)src)[i]); break;
  case DK_I32: for (i = 0; i < n; i++) dst[i] = (float)((const int32_t *)src)[i]; break;
  case DK_Q8_0:
    for (b = 0; b < n / 32; b++) {
      const dk_block_q8_0 *q = (const dk_block_q8_0 *)src + b;
      float d = dk_f16_to_f32(q->d);
      for (j = 0; j < 32; j++) dst[b * 32 + j] = d * (float)q->qs[j];
    }
    break;
  case DK_Q4_0:
    for (b = 0; b < n / 32; b++) {
      const dk_block_q4_0 *q = (const dk_block_q4_0 *)src + b;
      float d = dk_f16_to_f32(q->d);
      for (j = 0; j < 16; j++) {
        dst[b * 32 + j] = d * (float)((q->qs[j] & 15) - 8);
        dst[b * 32 + j + 16] = d * (float)((q->qs[j] >> 4) - 8);
      }
    }
    break;
  default: dk__dequant_more(t, src, n / dk_dtype_block(t), dst); break;
  }
}

/* ==== device registry ===================================================== */

typedef struct {
  int physical, slot;
  uint64_t bytes;         /* held in tensors (atomic) */
  pthread_mutex_t lock;   /* serializes calls on this device */
  dk_graph *rec;          /* the graph being recorded on it (under lock) */
} dk__devslot;

typedef struct {
  const dk_backend_impl *impl;
  int count;              /* logical devices */
  int physical_count;     /* before visibility */
  int per_physical;       /* DEVKIT_LOGICAL_DEVICES */
  dk__devslot dev[DK_MAX_DEVICES];
  char note[512];
} dk__backend_reg;

static dk__backend_reg dk__reg[DK_BACKEND_COUNT];
static pthread_mutex_t dk__init_lock = PTHREAD_MUTEX_INITIALIZER;
static int dk__initialized = 0;
static dk_status dk__init_status = DK_OK;

DEVKIT_API const char *dk_backend_name(dk_backend b) {
  static const char *n[] = {"cpu", "cuda", "vulkan"};
  return (unsigned)b < DK_BACKEND_COUNT ? n[b] : "?";
}

/* "cpu=2,vulkan=2" -> how many logical devices per physical device of b */
static int dk__logical_per_physical(dk_backend b) {
  const char *e = getenv("DEVKIT_LOGICAL_DEVICES"), *p;
  const char *name = dk_backend_name(b);
  size_t nl = strlen(name);
  if (!e) return 1;
  for (p = e; *p;) {
    while (*p == ',' || *p == ' ') p++;
    if ((strncmp(p, name, nl) == 0 && p[nl] == '=') || (b == DK_VULKAN && strncmp(p, "vk=", 3) == 0)) {
      int n = atoi(strchr(p, '=') + 1);
      return n < 1 ? 1 : (n > 16 ? 16 : n);
    }
    while (*p && *p != ',') p++;
  }
  return 1;
}

/* DEVKIT_VISIBLE_DEVICES: fill phys[] with the physical devices of b to keep,
 * in order; returns how many. Absent: all. */
static int dk__visible(dk_backend b, int nphys, int *phys) {
  const char *e = getenv("DEVKIT_VISIBLE_DEVICES"), *p;
  int n = 0, i;
  if (!e || !*e) {
    for (i = 0; i < nphys && i < DK_MAX_DEVICES; i++) phys[n++] = i;
    return n;
  }
  for (p = e; *p;) {
    char item[32];
    size_t k = 0;
    dk_backend ib;
    int idx = -1;
    while (*p == ',' || *p == ' ') p++;
    while (*p && *p != ',' && k + 1 < sizeof item) item[k++] = *p++;
    item[k] = 0;
    while (*p && *p != ',') p++;
    if (!k) continue;
    {
      char *colon = strchr(item, ':');
      if (colon) { *colon = 0; idx = atoi(colon + 1); }
      if (!strcmp(item, "cpu")) ib = DK_CPU;
      else if (!strcmp(item, "cuda")) ib = DK_CUDA;
      else if (!strcmp(item, "vulkan") || !strcmp(item, "vk")) ib = DK_VULKAN;
      else continue;
    }
    if (ib != b) continue;
    if (idx < 0) {
      for (i = 0; i < nphys && n < DK_MAX_DEVICES; i++) phys[n++] = i;
    } else if (idx < nphys && n < DK_MAX_DEVICES) {
      int dup = 0;
      for (i = 0; i < n; i++) dup |= phys[i] == idx;
      if (!dup) phys[n++] = idx;
    }
  }
  return n;
}

static void dk__init_backend(dk_backend b, const dk_backend_impl *impl) {
  dk__backend_reg *r = &dk__reg[b];
  int phys[DK_MAX_DEVICES], nvis, i, s, per;
  r->impl = impl;
  r->count = 0;
  if (!impl) return;
  if (dk__visible(b, DK_MAX_DEVICES, phys) == 0) {
    /* hidden: do not even load its driver */
    snprintf(r->note, sizeof r->note, "hidden by DEVKIT_VISIBLE_DEVICES=%.200s", getenv("DEVKIT_VISIBLE_DEVICES"));
    return;
  }
  r->physical_count = impl->probe(r->note, sizeof r->note);
  if (r->physical_count <= 0) { r->physical_count = 0; return; }
  nvis = dk__visible(b, r->physical_count, phys);
  if (nvis == 0) {
    snprintf(r->note, sizeof r->note, "hidden by DEVKIT_VISIBLE_DEVICES=%.200s (%d present)",
             getenv("DEVKIT_VISIBLE_DEVICES"), r->physical_count);
    return;
  }
  per = dk__logical_per_physical(b);
  r->per_physical = per;
  r->note[0] = 0;
  for (i = 0; i < nvis; i++) {
    for (s = 0; s < per && r->count < DK_MAX_DEVICES; s++) {
      dk__devslot *d = &r->dev[r->count];
      d->physical = phys[i];
      d->slot = s;
      d->bytes = 0;
      if (impl->open_device(r->count, phys[i], s) != DK_OK) {
        /* one device that cannot be used (too old, broken) must not hide the
         * others: skip it and say so in the note */
        size_t k = strlen(r->note);
        snprintf(r->note + k, sizeof r->note - k, "%sphysical %s device %d skipped: %.300s", k ? "; " : "",
                 dk_backend_name(b), phys[i], dk__msg);
        break;
      }
      pthread_mutex_init(&d->lock, NULL);
      r->count++;
    }
  }
}

/* Backends start lazily, each on first use: a program that only names cpu
 * devices never loads libvulkan or libcuda (about 20 ms and 55 MB for a
 * Vulkan driver). dk_device_count(b), a device naming b, dk_device_list,
 * dk_device_best and dk_init start them. */
static int dk__ready[DK_BACKEND_COUNT];   /* read with acquire outside the lock */

static void dk__start_backend_locked(dk_backend b) {
  char saved[sizeof dk__msg];
  memcpy(saved, dk__msg, sizeof saved);
  memset(&dk__reg[b], 0, sizeof dk__reg[b]);
  switch (b) {
  case DK_CPU: dk__init_backend(DK_CPU, dk__cpu_backend()); break;
  case DK_CUDA:
#ifdef DK__HAVE_CUDA
    dk__init_backend(DK_CUDA, dk__cuda_backend());
#else
    snprintf(dk__reg[DK_CUDA].note, sizeof dk__reg[DK_CUDA].note,
             "not compiled in (DEVKIT_NO_CUDA, or backends/cuda.h or kernels/ missing beside devkit.h)");
#endif
    break;
  case DK_VULKAN:
#ifdef DK__HAVE_VULKAN
    dk__init_backend(DK_VULKAN, dk__vk_backend());
#else
    snprintf(dk__reg[DK_VULKAN].note, sizeof dk__reg[DK_VULKAN].note,
             "not compiled in (DEVKIT_NO_VULKAN, or backends/vulkan.h or shaders/generated/ missing beside "
             "devkit.h)");
#endif
    break;
  default: break;
  }
  /* probing may leave driver messages in the thread's error; that is not
   * the caller's error */
  memcpy(dk__msg, saved, sizeof saved);
  dk__initialized = 1;
  __atomic_store_n(&dk__ready[b], 1, __ATOMIC_RELEASE);
}

static void dk__ensure_backend(dk_backend b) {
  if ((unsigned)b >= DK_BACKEND_COUNT || __atomic_load_n(&dk__ready[b], __ATOMIC_ACQUIRE)) return;
  pthread_mutex_lock(&dk__init_lock);
  if (!dk__ready[b]) dk__start_backend_locked(b);
  pthread_mutex_unlock(&dk__init_lock);
}

static void dk__ensure_all(void) {
  int b;
  for (b = 0; b < DK_BACKEND_COUNT; b++) dk__ensure_backend((dk_backend)b);
}

DEVKIT_API dk_status dk_init(void) {
  dk__ensure_all();
  return dk__init_status;
}

/* tensor life (see "tensor headers and their life" below) */
static pthread_mutex_t dk__pool_lock = PTHREAD_MUTEX_INITIALIZER;
static dk_tensor *dk__q_head = NULL, *dk__q_tail = NULL;
static int dk__q_len = 0;
static dk_storage *dk__live_storages = NULL;   /* under dk__pool_lock */
static uint32_t dk__gen = 1;                    /* atomic; bumped by dk_shutdown */
static void dk__storage_device_release(dk_storage *st, int locked);

static void dk__prof_synced(dk_device d);
static void dk__prof_at_shutdown(void);
static void dk__graph_release(dk_graph *g);

DEVKIT_API void dk_shutdown(void) {
  int b, i;
  dk__prof_at_shutdown();
  pthread_mutex_lock(&dk__init_lock);
  if (dk__initialized) {
    /* every tensor made so far becomes stale, and the device memory of those
     * not freed is released here (a freed one would leak, or its count would
     * be subtracted from the next kit's); only started backends hold any */
    __atomic_add_fetch(&dk__gen, 1, __ATOMIC_ACQ_REL);
    pthread_mutex_lock(&dk__pool_lock);
    while (dk__live_storages) dk__storage_device_release(dk__live_storages, 1);
    pthread_mutex_unlock(&dk__pool_lock);
  }
  for (b = DK_BACKEND_COUNT - 1; b >= 0; b--) {
    dk__backend_reg *r = &dk__reg[b];
    if (!dk__ready[b]) continue;
    if (r->impl && r->impl->close_all) r->impl->close_all();
    for (i = 0; i < r->count; i++) {
      /* a recording never ended cannot be ended by the next kit */
      if (r->dev[i].rec) dk__graph_release(r->dev[i].rec);
      r->dev[i].rec = NULL;
      pthread_mutex_destroy(&r->dev[i].lock);
    }
    r->count = 0;
    __atomic_store_n(&dk__ready[b], 0, __ATOMIC_RELEASE);
  }
  dk__initialized = 0;
  pthread_mutex_unlock(&dk__init_lock);
}

DEVKIT_API int dk_device_count(dk_backend b) {
  dk__ensure_backend(b);
  return (unsigned)b < DK_BACKEND_COUNT ? dk__reg[b].count : 0;
}

DEVKIT_API const char *dk_backend_note(dk_backend b) {
  dk__ensure_backend(b);
  if ((unsigned)b >= DK_BACKEND_COUNT) return "no such backend";
  if (dk__reg[b].count > 0 && !dk__reg[b].note[0] && dk__reg[b].impl && dk__reg[b].impl->active_note)
    return dk__reg[b].impl->active_note();
  return dk__reg[b].note;
}

static int dk__device_valid(dk_device d) {
  dk__ensure_backend(d.backend);
  return (unsigned)d.backend < DK_BACKEND_COUNT && d.index >= 0 && d.index < dk__reg[d.backend].count;
}

static int dk__physical_of(dk_device d) { return dk__reg[d.backend].dev[d.index].physical; }

DEVKIT_API int dk_device_equal(dk_device a, dk_device b) {
  return a.backend == b.backend && a.index == b.index;
}

DEVKIT_API const char *dk_device_name(dk_device d) {
  /* a small ring so that two names can sit in one printf */
  static DK_TLS char ring[4][32];
  static DK_TLS int next = 0;
  char *s = ring[next++ & 3];
  snprintf(s, 32, "%s:%d", dk_backend_name(d.backend), d.index);
  return s;
}

DEVKIT_API int dk_device_list(dk_device *out, int max) {
  int b, i, n = 0;
  dk__ensure_all();
  for (b = 0; b < DK_BACKEND_COUNT; b++)
    for (i = 0; i < dk__reg[b].count; i++) {
      if (out && n < max) { out[n].backend = (dk_backend)b; out[n].index = i; }
      n++;
    }
  return n;
}

/* "cpu:0, vulkan:0 (llvmpipe ...)" for messages about a bad device */
static void dk__describe_present(dk__sb *sb) {
  int b, i, first = 1;
  dk__ensure_all();
  for (b = 0; b < DK_BACKEND_COUNT; b++) {
    for (i = 0; i < dk__reg[b].count; i++) {
      dk_device d;
      d.backend = (dk_backend)b;
      d.index = i;
      dk__sbf(sb, "%s%s", first ? "" : ", ", dk_device_name(d));
      first = 0;
    }
  }
  if (first) dk__sbf(sb, "none");
  for (b = 0; b < DK_BACKEND_COUNT; b++)
    if (dk__reg[b].count == 0) dk__sbf(sb, "; %s: %s", dk_backend_name((dk_backend)b), dk__reg[b].note);
}

static dk_status dk__no_device(const char *what, dk_device d) {
  char buf[1024];
  dk__sb sb;
  dk__sb_init(&sb, buf, sizeof buf);
  dk__describe_present(&sb);
  if ((unsigned)d.backend >= DK_BACKEND_COUNT)
    return dk__error(DK_ERR_NO_DEVICE, "%s: invalid device (backend %d); devices present: %s", what,
                     (int)d.backend, buf);
  return dk__error(DK_ERR_NO_DEVICE, "%s: no device %s; devices present: %s", what, dk_device_name(d), buf);
}

DEVKIT_API dk_status dk_device_parse(const char *text, dk_device *out) {
  char word[16];
  size_t k = 0;
  const char *p = text, *num = NULL;
  dk_device d;
  long idx = 0;
  if (!text || !out) return dk__error(DK_ERR_INVALID, "dk_device_parse: NULL argument");
  while (*p == ' ') p++;
  while (*p && *p != ':' && *p != ' ' && k + 1 < sizeof word) word[k++] = *p++;
  word[k] = 0;
  if (*p == ':') num = ++p;
  d.backend = DK_CPU;
  d.index = 0;
  if (!strcmp(word, "cpu")) d.backend = DK_CPU;
  else if (!strcmp(word, "cuda")) d.backend = DK_CUDA;
  else if (!strcmp(word, "vulkan") || !strcmp(word, "vk")) d.backend = DK_VULKAN;
  else goto bad;
  if (num) {
    char *end;
    if (*num < '0' || *num > '9') goto bad;
    idx = strtol(num, &end, 10);
    while (*end == ' ') end++;
    if (*end || idx > 1000000) goto bad;
  } else {
    while (*p == ' ') p++;
    if (*p) goto bad;
  }
  d.index = (int)idx;
  if (!dk__device_valid(d)) return dk__no_device("dk_device_parse", d);
  *out = d;
  return DK_OK;
bad: {
    char buf[1024];
    dk__sb sb;
    dk__sb_init(&sb, buf, sizeof buf);
    dk__describe_present(&sb);
    return dk__error(DK_ERR_INVALID,
                     "dk_device_parse: '%s' is not a device; write cpu, cpu:N, cuda, cuda:N, vulkan:N or vk:N. "
                     "Devices present: %s", text, buf);
  }
}

DEVKIT_API dk_status dk_device_properties(dk_device d, dk_device_props *p) {
  dk__backend_reg *r;
  dk_status s;
  if (!p) return dk__error(DK_ERR_INVALID, "dk_device_properties: NULL argument");
  if (!dk__device_valid(d)) return dk__no_device("dk_device_properties", d);
  r = &dk__reg[d.backend];
  memset(p, 0, sizeof *p);
  s = r->impl->properties(r->dev[d.index].physical, p);
  p->physical_index = r->dev[d.index].physical;
  p->memory_used = __atomic_load_n(&r->dev[d.index].bytes, __ATOMIC_RELAXED);
  p->logical_slot = r->dev[d.index].slot;
  p->logical_count = r->per_physical;
  return s;
}

DEVKIT_API dk_status dk_device_best(dk_device *out) {
  const char *e = getenv("DEVKIT_DEVICE");
  static const dk_backend order[2] = {DK_CUDA, DK_VULKAN};
  int k, i;
  if (!out) return dk__error(DK_ERR_INVALID, "dk_device_best: NULL argument");
  if (e && *e) return dk_device_parse(e, out);
  dk__ensure_all();
  for (k = 0; k < 2; k++)
    for (i = 0; i < dk__reg[order[k]].count; i++) {
      dk_device d;
      dk_device_props p;
      d.backend = order[k];
      d.index = i;
      if (dk_device_properties(d, &p) == DK_OK && !p.is_software) { *out = d; return DK_OK; }
    }
  out->backend = DK_CPU;
  out->index = 0;
  if (dk__reg[DK_CPU].count == 0) return dk__no_device("dk_device_best", *out);
  return DK_OK;
}

static void dk__lock(dk_device d) { pthread_mutex_lock(&dk__reg[d.backend].dev[d.index].lock); }
static void dk__unlock(dk_device d) { pthread_mutex_unlock(&dk__reg[d.backend].dev[d.index].lock); }

/* while d records a graph, only ops may be issued on it (dk_graph_begin) */
static dk_status dk__recording(const char *what, dk_device d) {
  if (!__atomic_load_n(&dk__reg[d.backend].dev[d.index].rec, __ATOMIC_ACQUIRE)) return DK_OK;
  return dk__error(DK_ERR_INVALID, "%s: %s is recording a graph (dk_graph_begin), and a recording holds ops only; "
                   "end it with dk_graph_end first (a step's inputs are uploaded between dk_graph_replay calls)", what,
                   dk_device_name(d));
}

DEVKIT_API dk_status dk_sync(dk_device d) {
  dk_status s;
  if (!dk__device_valid(d)) return dk__no_device("dk_sync", d);
  dk__lock(d);
  s = dk__recording("dk_sync", d);
  if (s == DK_OK) s = dk__reg[d.backend].impl->sync(d);
  if (s == DK_OK) dk__prof_synced(d);
  dk__unlock(d);
  return s;
}

/* ==== tensors ============================================================= */

/* ---- checked size arithmetic -------------------------------------------------
 * Every size, offset and stride computed from a caller's numbers on a public
 * path (tensor creation, views, reshape, narrow, concat, transfer ranges) goes
 * through these two, so a hostile shape is an error and never a wrapped
 * value. A tensor holds at most DK__MAX_SIZE elements and bytes, so once one
 * exists, products of its own dims (and byte offsets inside it) fit in int64. */
#define DK__MAX_SIZE ((int64_t)1 << 62)
#if defined(__GNUC__) || defined(__clang__)
static int dk__smul_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_mul_overflow(a, b, r); }
static int dk__sadd_ok(int64_t a, int64_t b, int64_t *r) { return !__builtin_add_overflow(a, b, r); }
#else
static int dk__smul_ok(int64_t a, int64_t b, int64_t *r) {
  if (a && b && (a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a) : (b > 0 ? a < INT64_MIN / b : a < INT64_MAX / b)))
    return 0;
  *r = a * b;
  return 1;
}
static int dk__sadd_ok(int64_t a, int64_t b, int64_t *r) {
  if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) return 0;
  *r = a + b;
  return 1;
}
#endif

/* Elements of a shape of sizes >= 0: 0 when any dim is 0, whatever the
 * others are ([2^32, 2^32, 0] is a valid empty tensor); 0 (not ok) when the
 * product passes DK__MAX_SIZE. */
static int dk__numel_ok(int ndim, const int64_t *shape, int64_t *numel) {
  int64_t n = 1;
  int i;
  for (i = 0; i < ndim; i++)
    if (shape[i] == 0) { *numel = 0; return 1; }
  for (i = 0; i < ndim; i++)
    if (!dk__smul_ok(n, shape[i], &n) || n > DK__MAX_SIZE) return 0;
  *numel = n;
  return 1;
}

/* of a tensor that exists, so it fits, unless a 0 makes it empty (one loop:
 * this is on every op's path) */
static int64_t dk__numel(int ndim, const int64_t *shape) {
  int64_t n = 1;
  int i;
  for (i = 0; i < ndim; i++)
    if (!dk__smul_ok(n, shape[i], &n)) return 0;   /* only an empty tensor's dims overflow */
  return n;
}

/* Strides of a contiguous layout. An empty tensor's dims may multiply past
 * int64; its strides address nothing, so from there on they are 0. */
static void dk__contig_strides(dk_tensor *t) {
  int64_t s = 1;
  int i;
  for (i = t->ndim - 1; i >= 0; i--) {
    t->stride[i] = s;
    if (!dk__smul_ok(s, t->shape[i], &s)) s = 0;
  }
}

DEVKIT_API int dk_tensor_is_contiguous(const dk_tensor *t) {
  int64_t s = 1;
  int i;
  if (!t) return 0;
  for (i = t->ndim - 1; i >= 0; i--) {
    if (t->shape[i] == 0) return 1;   /* nothing to lay out */
    if (t->shape[i] != 1 && t->stride[i] != s) {
      int k;
      for (k = 0; k < i; k++) if (t->shape[k] == 0) return 1;
      return 0;
    }
    if (!dk__smul_ok(s, t->shape[i], &s)) return 1;   /* only an empty tensor's dims overflow */
  }
  return 1;
}

/* ---- tensor headers and their life ------------------------------------------
 * Tensor headers are never given back to malloc. dk_tensor_free marks a header
 * DK__FREED and puts it at the tail of a FIFO; a new tensor takes a header
 * from the head only when more than DK__QUARANTINE are waiting. So a use or a
 * second free of any of the last DK__QUARANTINE freed tensors reads memory
 * that is still ours (ASan stays quiet) and is reported by name, and the
 * memory held is the peak number of live tensors plus that many headers.
 * (A handle table would make the check exact forever, but the contract hands
 * out dk_tensor pointers, and a pointer into a table that grows would have to
 * be an index, not a pointer.) dk_shutdown bumps dk__gen: a tensor made
 * before it is stale, and its device memory was released by the shutdown. */
#define DK__QUARANTINE 1024

static dk_tensor *dk__tensor_alloc(void) {
  dk_tensor *t = NULL;
  pthread_mutex_lock(&dk__pool_lock);
  if (dk__q_len > DK__QUARANTINE) {
    t = dk__q_head;
    dk__q_head = t->qnext;
    if (!dk__q_head) dk__q_tail = NULL;
    dk__q_len--;
  }
  pthread_mutex_unlock(&dk__pool_lock);
  if (!t) t = (dk_tensor *)malloc(sizeof *t);
  if (t) {
    memset(t, 0, sizeof *t);
    t->magic = DK__LIVE;
    t->gen = __atomic_load_n(&dk__gen, __ATOMIC_ACQUIRE);
  }
  return t;
}

static void dk__tensor_retire(dk_tensor *t) {
  pthread_mutex_lock(&dk__pool_lock);
  t->magic = DK__FREED;
  t->qnext = NULL;
  if (dk__q_tail) dk__q_tail->qnext = t; else dk__q_head = t;
  dk__q_tail = t;
  dk__q_len++;
  pthread_mutex_unlock(&dk__pool_lock);
}

static void dk__storage_link(dk_storage *st) {
  pthread_mutex_lock(&dk__pool_lock);
  st->prev = NULL;
  st->next = dk__live_storages;
  if (dk__live_storages) dk__live_storages->prev = st;
  dk__live_storages = st;
  pthread_mutex_unlock(&dk__pool_lock);
}

/* the device's byte count never goes below zero, whatever happens */
static void dk__bytes_sub(uint64_t *bytes, uint64_t n) {
  uint64_t cur = __atomic_load_n(bytes, __ATOMIC_RELAXED), next;
  do next = cur > n ? cur - n : 0;
  while (!__atomic_compare_exchange_n(bytes, &cur, next, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

/* Give a storage's device memory back, once: from the last free of a tensor
 * on it, or from dk_shutdown (with dk__pool_lock held: locked = 1). */
static void dk__storage_device_release(dk_storage *st, int locked) {
  dk_device d = st->device;
  if (!locked) pthread_mutex_lock(&dk__pool_lock);
  if (st->released) { if (!locked) pthread_mutex_unlock(&dk__pool_lock); return; }
  st->released = 1;
  if (st->prev) st->prev->next = st->next; else dk__live_storages = st->next;
  if (st->next) st->next->prev = st->prev;
  if (!locked) pthread_mutex_unlock(&dk__pool_lock);
  dk__lock(d);
  dk__reg[d.backend].impl->release(st);
  dk__unlock(d);
  dk__bytes_sub(&dk__reg[d.backend].dev[d.index].bytes, st->nbytes);
}

/* DK_OK when t is a live tensor of the running kit; else DK_ERR_INVALID with a
 * message naming it. The check reads only the header, never device memory,
 * and never initializes the kit. */
static dk_status dk__tensor_dead(const char *what, const char *role, const dk_tensor *t) {
  char r[64] = "";
  const char *site = t->site[0] ? t->site : "a site unknown";
  if (role) snprintf(r, sizeof r, "operand '%s', ", role);
  if (t->magic == DK__FREED)
    return dk__error(DK_ERR_INVALID, "%s: tensor '%s' was freed (%smade at %s); a tensor cannot be used or freed "
                     "after dk_tensor_free", what, t->name, r, site);
  if (t->magic != DK__LIVE)
    return dk__error(DK_ERR_INVALID, "%s: %s%p is not a devkit tensor (never made by dk_tensor_new, or overwritten)",
                     what, r, (const void *)t);
  return dk__error(DK_ERR_INVALID, "%s: tensor '%s' belongs to a kit that was shut down (%smade at %s before "
                   "dk_shutdown); free tensors before dk_shutdown and make new ones after it", what, t->name, r, site);
}
#define DK__IS_LIVE(t) ((t)->magic == DK__LIVE && (t)->gen == __atomic_load_n(&dk__gen, __ATOMIC_RELAXED))
#define DK__CHECK_LIVE(what, role, t) \
  do { if (!DK__IS_LIVE(t)) return dk__tensor_dead((what), (role), (t)); } while (0)

static void dk__copy_str(char *dst, size_t cap, const char *src) {
  size_t n = src ? strlen(src) : 0;
  if (n >= cap) n = cap - 1;
  if (n) memcpy(dst, src, n);
  dst[n] = 0;
}

/* The site as the user wrote it, without the build directory's prefix:
 * from its first "/examples/", else "/tests/", else "/bench/". One pass
 * over the slashes: three strstr calls were 12 % of making a view, which a
 * decode step does four times a layer. */
static const char *dk__short_site(const char *site) {
  static const char *const dirs[3] = {"examples/", "tests/", "bench/"};
  const char *p, *best[3] = {NULL, NULL, NULL};
  int i;
  if (!site) return "";
  for (p = strchr(site, '/'); p; p = strchr(p + 1, '/'))
    for (i = 0; i < 3; i++)
      if (!best[i] && !strncmp(p + 1, dirs[i], strlen(dirs[i]))) best[i] = p + 1;
  for (i = 0; i < 3; i++)
    if (best[i]) return best[i];
  return site;
}

/* shape text "[1,4096]" */
static void dk__shape_text(int ndim, const int64_t *shape, char *buf, size_t cap) {
  dk__sb sb;
  int i;
  dk__sb_init(&sb, buf, cap);
  dk__sbf(&sb, "[");
  for (i = 0; i < ndim; i++) dk__sbf(&sb, "%s%lld", i ? "," : "", (long long)shape[i]);
  dk__sbf(&sb, "]");
}
static void dk__shape_str(const dk_tensor *t, char *buf, size_t cap) { dk__shape_text(t->ndim, t->shape, buf, cap); }

static dk_status dk__check_shape_arg(const char *what, int ndim, const int64_t *shape, int allow_infer) {
  int i, inferred = 0;
  if (ndim < 0 || ndim > DEVKIT_MAX_DIMS)
    return dk__error(DK_ERR_SHAPE, "%s: ndim %d is outside 0..%d (DEVKIT_MAX_DIMS)", what, ndim, DEVKIT_MAX_DIMS);
  if (ndim > 0 && !shape) return dk__error(DK_ERR_INVALID, "%s: shape is NULL", what);
  for (i = 0; i < ndim; i++) {
    if (allow_infer && shape[i] == -1 && !inferred) { inferred = 1; continue; }
    if (shape[i] < 0) {
      char sh[256];
      dk__shape_text(ndim, shape, sh, sizeof sh);
      return dk__error(DK_ERR_SHAPE, "%s: dimension %d of %s is %lld; sizes must be >= 0%s", what, i, sh,
                       (long long)shape[i], allow_infer ? " (one may be -1, inferred)" : "");
    }
  }
  return DK_OK;
}

/* elements and bytes of a contiguous tensor of this shape, or 0 (not ok)
 * when either passes DK__MAX_SIZE */
static int dk__nbytes_ok(dk_dtype t, int ndim, const int64_t *shape, int64_t *numel, size_t *nbytes) {
  int64_t n, b;
  if (!dk__numel_ok(ndim, shape, &n)) return 0;
  if (!dk__smul_ok(n / dk_dtype_block(t), (int64_t)dk_dtype_block_bytes(t), &b) || b > DK__MAX_SIZE) return 0;
  *numel = n;
  *nbytes = (size_t)b;
  return 1;
}

DEVKIT_API dk_status dk_tensor_new_at(dk_device d, dk_dtype dt, int ndim, const int64_t *shape,
                                      const char *name, const char *site, dk_tensor **out) {
  dk_tensor *t;
  dk_storage *st;
  dk_status s;
  size_t nbytes;
  int64_t numel;
  char what[DK_NAME_LEN + 24];
  if (!out) return dk__error(DK_ERR_INVALID, "dk_tensor_new '%s': out is NULL", name ? name : "");
  *out = NULL;
  snprintf(what, sizeof what, "dk_tensor_new '%s'", name ? name : "");
  if ((unsigned)dt >= DK_DTYPE_COUNT) return dk__error(DK_ERR_DTYPE, "%s: invalid dtype %d", what, (int)dt);
  if ((s = dk__check_shape_arg(what, ndim, shape, 0)) != DK_OK) return s;
  if (dk_dtype_block(dt) > 1 && (ndim == 0 || shape[ndim - 1] % dk_dtype_block(dt) != 0))
    return dk__error(DK_ERR_SHAPE, "%s: a %s tensor's last dimension must be a multiple of %d, got %lld", what,
                     dk_dtype_name(dt), dk_dtype_block(dt), ndim ? (long long)shape[ndim - 1] : 0LL);
  if (!dk__device_valid(d)) return dk__no_device("dk_tensor_new", d);
  if (!dk__nbytes_ok(dt, ndim, shape, &numel, &nbytes)) {
    char sh[256];
    dk__shape_text(ndim, shape, sh, sizeof sh);
    return dk__error(DK_ERR_OUT_OF_MEMORY, "%s on %s: the shape %s of %s (%zu bytes per %d elements) holds more than "
                     "%lld elements or bytes, the most a tensor can address", what, dk_device_name(d), sh,
                     dk_dtype_name(dt), dk_dtype_block_bytes(dt), dk_dtype_block(dt), (long long)DK__MAX_SIZE);
  }
  (void)numel;
  t = dk__tensor_alloc();
  st = (dk_storage *)calloc(1, sizeof *st);
  if (!t || !st) {
    if (t) dk__tensor_retire(t);
    free(st);
    return dk__error(DK_ERR_OUT_OF_MEMORY, "%s: out of host memory for the tensor record", what);
  }
  t->device = d;
  t->dtype = dt;
  t->ndim = ndim;
  if (ndim) memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
  dk__contig_strides(t);
  dk__copy_str(t->name, sizeof t->name, name ? name : "");
  dk__copy_str(t->site, sizeof t->site, dk__short_site(site));
  st->refs = 1;
  st->device = d;
  st->nbytes = nbytes;
  dk__lock(d);
  s = dk__reg[d.backend].impl->alloc(d, nbytes, t->name, st);
  dk__unlock(d);
  if (s != DK_OK) { dk__tensor_retire(t); free(st); return s; }
  __atomic_add_fetch(&dk__reg[d.backend].dev[d.index].bytes, nbytes, __ATOMIC_RELAXED);
  dk__storage_link(st);
  t->st = st;
  *out = t;
  return DK_OK;
}

#undef dk_tensor_new
DEVKIT_API dk_status dk_tensor_new(dk_device d, dk_dtype t, int ndim, const int64_t *shape,
                                   const char *name, dk_tensor **out) {
  return dk_tensor_new_at(d, t, ndim, shape, name, "", out);
}
#define dk_tensor_new(d, t, n, s, name, out) dk_tensor_new_at((d), (t), (n), (s), (name), DK_SITE, (out))

static void dk__storage_release(dk_storage *st) {
  if (__atomic_sub_fetch(&st->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    dk__storage_device_release(st, 0);
    free(st);
  }
}

/* dk_tensor_free returns nothing (the contract); a freed tensor, one from a
 * kit that was shut down, or something else is reported as DK_ERR_INVALID
 * through dk_last_error()/dk_last_status() and the error handler. A stale
 * tensor's header and storage record are still released (its device memory
 * went with dk_shutdown); a freed one is left alone. */
DEVKIT_API void dk_tensor_free(dk_tensor *t) {
  if (!t) return;
  if (!DK__IS_LIVE(t)) {
    int stale = t->magic == DK__LIVE;
    dk__tensor_dead("dk_tensor_free", NULL, t);
    if (!stale) return;
  }
  if (t->st) dk__storage_release(t->st);
  t->st = NULL;
  dk__tensor_retire(t);
}

DEVKIT_API dk_device dk_tensor_device(const dk_tensor *t) {
  dk_device d;
  d.backend = DK_CPU; d.index = -1;
  return t ? t->device : d;
}
DEVKIT_API dk_dtype dk_tensor_dtype(const dk_tensor *t) { return t ? t->dtype : DK_F32; }
DEVKIT_API int dk_tensor_ndim(const dk_tensor *t) { return t ? t->ndim : 0; }
DEVKIT_API const int64_t *dk_tensor_shape(const dk_tensor *t) { return t ? t->shape : NULL; }
DEVKIT_API int64_t dk_tensor_dim(const dk_tensor *t, int i) {
  if (!t) return 0;
  if (i < 0) i += t->ndim;
  return (i >= 0 && i < t->ndim) ? t->shape[i] : 0;
}
DEVKIT_API int64_t dk_tensor_numel(const dk_tensor *t) { return t ? dk__numel(t->ndim, t->shape) : 0; }
DEVKIT_API size_t dk_tensor_nbytes(const dk_tensor *t) {
  return t ? dk__elem_offset_bytes(t->dtype, dk__numel(t->ndim, t->shape)) : 0;
}
DEVKIT_API const char *dk_tensor_name(const dk_tensor *t) { return t ? t->name : ""; }
DEVKIT_API const char *dk_tensor_site(const dk_tensor *t) { return t ? t->site : ""; }
DEVKIT_API void dk_tensor_set_name(dk_tensor *t, const char *name) { if (t) dk__copy_str(t->name, sizeof t->name, name); }
DEVKIT_API void dk_tensor_set_site(dk_tensor *t, const char *site) { if (t) dk__copy_str(t->site, sizeof t->site, site); }
DEVKIT_API void dk_tensor_set_precise(dk_tensor *w, int on) { if (w) w->precise = on != 0; }
DEVKIT_API int dk_tensor_precise(const dk_tensor *w) { return w ? w->precise : 0; }
DEVKIT_API int dk_tensor_is_view(const dk_tensor *t) { return t ? t->is_view : 0; }

static dk_status dk__view_of(const dk_tensor *x, const char *site, const char *what, dk_tensor **out) {
  dk_tensor *v = dk__tensor_alloc();
  if (!v) return dk__error(DK_ERR_OUT_OF_MEMORY, "%s: out of host memory", what);
  memcpy(v, x, sizeof *v);
  v->qnext = NULL;
  v->is_view = 1;
  dk__copy_str(v->site, sizeof v->site, dk__short_site(site));
  __atomic_add_fetch(&x->st->refs, 1, __ATOMIC_ACQ_REL);
  *out = v;
  return DK_OK;
}

DEVKIT_API dk_status dk_narrow_at(const dk_tensor *x, int dim, int64_t start, int64_t length,
                                  const char *site, dk_tensor **out) {
  dk_tensor *v;
  dk_status s;
  int d = dim;
  int64_t off;
  if (!out) return dk__error(DK_ERR_INVALID, "dk_narrow: out is NULL");
  *out = NULL;
  if (!x) return dk__error(DK_ERR_INVALID, "dk_narrow: x is NULL");
  DK__CHECK_LIVE("dk_narrow", "x", x);
  if (d < 0) d += x->ndim;
  if (d < 0 || d >= x->ndim)
    return dk__error(DK_ERR_SHAPE, "dk_narrow '%s': dim %d is outside a %d-D tensor (valid: %d..%d)", x->name, dim,
                     x->ndim, -x->ndim, x->ndim - 1);
  /* start + length may not fit in int64: compare without adding */
  if (start < 0 || length < 0 || start > x->shape[d] || length > x->shape[d] - start)
    return dk__error(DK_ERR_SHAPE, "dk_narrow '%s': start %lld, length %lld is outside dimension %d of size %lld "
                     "(needs 0 <= start, 0 <= length, start + length <= %lld)", x->name, (long long)start,
                     (long long)length, d, (long long)x->shape[d], (long long)x->shape[d]);
  if (dk_dtype_is_quant(x->dtype) && d == x->ndim - 1 && (start % 32 || length % 32))
    return dk__error(DK_ERR_SHAPE, "dk_narrow '%s': a %s tensor can only be narrowed along its last dim in whole blocks of 32",
                     x->name, dk_dtype_name(x->dtype));
  /* the offset stays inside the tensor (start < shape[d]), so it fits; an
   * empty view (length 0, or an empty tensor) keeps its base offset */
  off = 0;
  if (length > 0 && dk__numel(x->ndim, x->shape) > 0 && !dk__smul_ok(start, x->stride[d], &off))
    return dk__error(DK_ERR_SHAPE, "dk_narrow '%s': offset %lld x %lld overflows", x->name, (long long)start,
                     (long long)x->stride[d]);
  if ((s = dk__view_of(x, site, "dk_narrow", &v)) != DK_OK) return s;
  v->offset += dk__elem_offset_bytes(x->dtype, off);
  v->shape[d] = length;
  *out = v;
  return DK_OK;
}
#undef dk_narrow
DEVKIT_API dk_status dk_narrow(const dk_tensor *x, int dim, int64_t start, int64_t length, dk_tensor **out) {
  return dk_narrow_at(x, dim, start, length, "", out);
}
#define dk_narrow(x, dim, start, len, out) dk_narrow_at((x), (dim), (start), (len), DK_SITE, (out))

DEVKIT_API dk_status dk_reshape_at(const dk_tensor *x, int ndim, const int64_t *shape, const char *site,
                                   dk_tensor **out) {
  int64_t sh[DEVKIT_MAX_DIMS], known = 1, n;
  int i, infer = -1, zero = 0;
  dk_tensor *v;
  dk_status s;
  char what[DK_NAME_LEN + 24];
  if (!out) return dk__error(DK_ERR_INVALID, "dk_reshape: out is NULL");
  *out = NULL;
  if (!x) return dk__error(DK_ERR_INVALID, "dk_reshape: x is NULL");
  DK__CHECK_LIVE("dk_reshape", "x", x);
  snprintf(what, sizeof what, "dk_reshape '%s'", x->name);
  if ((s = dk__check_shape_arg(what, ndim, shape, 1)) != DK_OK) return s;
  if (!dk_tensor_is_contiguous(x))
    return dk__error(DK_ERR_SHAPE, "%s: the tensor is a strided view; make it contiguous with dk_copy first", what);
  n = dk__numel(x->ndim, x->shape);
  for (i = 0; i < ndim; i++) {
    sh[i] = shape[i];
    if (shape[i] == -1) infer = i;
    else if (shape[i] == 0) zero = 1;
  }
  /* the product of the given sizes, checked (an empty shape is 0 whatever
   * the other sizes are) */
  for (i = 0; i < ndim && !zero; i++) {
    if (i == infer) continue;
    if (!dk__smul_ok(known, shape[i], &known) || known > DK__MAX_SIZE) {
      char a[96], b[256];
      dk__shape_str(x, a, sizeof a);
      dk__shape_text(ndim, shape, b, sizeof b);
      return dk__error(DK_ERR_SHAPE, "%s: the new shape %s holds more than %lld elements (the product overflows); "
                       "%s has %lld", what, b, (long long)DK__MAX_SIZE, a, (long long)n);
    }
  }
  if (zero) known = 0;
  if (infer >= 0) {
    if (known == 0 || n % known)
      return dk__error(DK_ERR_SHAPE, "%s: cannot infer a dimension: %lld elements do not divide by %lld", what,
                       (long long)n, (long long)known);
    sh[infer] = n / known;
    known *= sh[infer];
  }
  if (known != n) {
    char a[96], b[256];
    dk__shape_str(x, a, sizeof a);
    dk__shape_text(ndim, shape, b, sizeof b);
    return dk__error(DK_ERR_SHAPE, "%s: %s has %lld elements; the new shape %s has %lld", what, a, (long long)n, b,
                     (long long)known);
  }
  if (dk_dtype_is_quant(x->dtype) && (ndim == 0 || sh[ndim - 1] % 32))
    return dk__error(DK_ERR_SHAPE, "%s: a %s tensor's last dimension must stay a multiple of 32", what,
                     dk_dtype_name(x->dtype));
  if ((s = dk__view_of(x, site, "dk_reshape", &v)) != DK_OK) return s;
  v->ndim = ndim;
  for (i = 0; i < DEVKIT_MAX_DIMS; i++) v->shape[i] = i < ndim ? sh[i] : 0;
  dk__contig_strides(v);
  *out = v;
  return DK_OK;
}
#undef dk_reshape
DEVKIT_API dk_status dk_reshape(const dk_tensor *x, int ndim, const int64_t *shape, dk_tensor **out) {
  return dk_reshape_at(x, ndim, shape, "", out);
}
#define dk_reshape(x, n, s, out) dk_reshape_at((x), (n), (s), DK_SITE, (out))

static dk_status dk__check_transfer_len(const char *what, const dk_tensor *t, size_t nbytes) {
  size_t want;
  if (!dk__device_valid(t->device)) return dk__no_device(what, t->device);
  if (!dk_tensor_is_contiguous(t))
    return dk__error(DK_ERR_SHAPE, "%s '%s': the tensor is a strided view; dk_copy it into a contiguous tensor first",
                     what, t->name);
  want = dk_tensor_nbytes(t);
  if (nbytes != want) {
    char sh[96];
    dk__shape_str(t, sh, sizeof sh);
    return dk__error(DK_ERR_INVALID, "%s '%s': %zu bytes given, the tensor (%s %s) holds %zu", what, t->name, nbytes,
                     dk_dtype_name(t->dtype), sh, want);
  }
  return DK_OK;
}

DEVKIT_API dk_status dk_tensor_upload(dk_tensor *t, const void *src, size_t nbytes) {
  dk_status s;
  if (!t || (!src && nbytes)) return dk__error(DK_ERR_INVALID, "dk_tensor_upload: NULL argument");
  DK__CHECK_LIVE("dk_tensor_upload", NULL, t);
  if ((s = dk__check_transfer_len("dk_tensor_upload", t, nbytes)) != DK_OK) return s;
  if (!nbytes) return DK_OK;
  dk__lock(t->device);
  if ((s = dk__recording("dk_tensor_upload", t->device)) == DK_OK)
    s = dk__reg[t->device.backend].impl->upload(t->st, t->offset, src, nbytes);
  dk__unlock(t->device);
  return s;
}

DEVKIT_API dk_status dk_tensor_upload_range(dk_tensor *t, size_t offset, const void *src, size_t nbytes) {
  dk_status s;
  size_t have;
  if (!t || (!src && nbytes)) return dk__error(DK_ERR_INVALID, "dk_tensor_upload_range: NULL argument");
  DK__CHECK_LIVE("dk_tensor_upload_range", NULL, t);
  if (!dk_tensor_is_contiguous(t))
    return dk__error(DK_ERR_SHAPE, "dk_tensor_upload_range '%s': the tensor is a strided view; dk_copy it into a "
                     "contiguous tensor first", t->name);
  have = dk_tensor_nbytes(t);
  if (offset > have || nbytes > have - offset)
    return dk__error(DK_ERR_INVALID, "dk_tensor_upload_range '%s': bytes [%zu, %zu + %zu) are outside the tensor's %zu",
                     t->name, offset, offset, nbytes, have);
  if (!nbytes) return DK_OK;
  dk__lock(t->device);
  if ((s = dk__recording("dk_tensor_upload_range", t->device)) == DK_OK)
    s = dk__reg[t->device.backend].impl->upload(t->st, t->offset + offset, src, nbytes);
  dk__unlock(t->device);
  return s;
}

DEVKIT_API dk_status dk_tensor_download(const dk_tensor *t, void *dst, size_t nbytes) {
  dk_status s;
  if (!t || (!dst && nbytes)) return dk__error(DK_ERR_INVALID, "dk_tensor_download: NULL argument");
  DK__CHECK_LIVE("dk_tensor_download", NULL, t);
  if ((s = dk__check_transfer_len("dk_tensor_download", t, nbytes)) != DK_OK) return s;
  dk__lock(t->device);
  if ((s = dk__recording("dk_tensor_download", t->device)) != DK_OK) {}
  else if (nbytes) s = dk__reg[t->device.backend].impl->download(t->st, t->offset, dst, nbytes);
  else s = dk__reg[t->device.backend].impl->sync(t->device);
  if (s == DK_OK) dk__prof_synced(t->device);
  dk__unlock(t->device);
  return s;
}

/* ==== the operand table in messages ======================================== */

static void dk__describe_operand(dk__sb *sb, const char *role, const dk_tensor *t, int role_w, int name_w) {
  char sh[96], nm[DK_NAME_LEN + 2];
  if (!t) { dk__sbf(sb, "  %-*s (none)\n", role_w, role); return; }
  dk__shape_str(t, sh, sizeof sh);
  snprintf(nm, sizeof nm, "'%s'", t->name);
  dk__sbf(sb, "  %-*s %-*s %-4s %-16s %-9s (%s)\n", role_w, role, name_w, nm, dk_dtype_name(t->dtype), sh,
          dk_device_name(t->device), t->site[0] ? t->site : "site unknown");
}

/* ==== op descriptions ===================================================== */

typedef dk_status (*dk__check_fn)(dk_call *c);

typedef struct {
  const char *name;
  int n_out, n_in;
  const char *roles[DK_MAX_OPERANDS];
  unsigned optional;         /* bit per operand index */
  int primary;               /* operand whose dtype is "the" dtype for backend support */
  int secondary;             /* operand whose dtype is the weight dtype, or -1 */
  int strided_ok;            /* bit per operand that may be a strided view */
  int alias_ok;              /* outputs may be the very same memory as an input */
} dk__opinfo;

/* role tables */
#define DK__R2 {"out", "x", NULL, NULL, NULL, NULL}
#define DK__R3 {"out", "a", "b", NULL, NULL, NULL}
static const dk__opinfo dk__ops[DK_OP_COUNT] = {
  {"dk_add", 1, 2, DK__R3, 0, 1, -1, 0, 1},
  {"dk_sub", 1, 2, DK__R3, 0, 1, -1, 0, 1},
  {"dk_mul", 1, 2, DK__R3, 0, 1, -1, 0, 1},
  {"dk_div", 1, 2, DK__R3, 0, 1, -1, 0, 1},
  {"dk_scale", 1, 1, DK__R2, 0, 1, -1, 0, 1},
  {"dk_silu", 1, 1, DK__R2, 0, 1, -1, 0, 1},
  {"dk_gelu", 1, 1, DK__R2, 0, 1, -1, 0, 1},
  {"dk_gelu_tanh", 1, 1, DK__R2, 0, 1, -1, 0, 1},
  {"dk_relu", 1, 1, DK__R2, 0, 1, -1, 0, 1},
  {"dk_sigmoid", 1, 1, DK__R2, 0, 1, -1, 0, 1},
  {"dk_tanh", 1, 1, DK__R2, 0, 1, -1, 0, 1},
  {"dk_exp", 1, 1, DK__R2, 0, 1, -1, 0, 1},
  {"dk_swiglu", 1, 2, {"out", "gate", "up", NULL, NULL, NULL}, 0, 1, -1, 0, 1},
  {"dk_rmsnorm", 1, 2, {"out", "x", "w", NULL, NULL, NULL}, 1u << 2, 1, 2, 0, 1},
  {"dk_layernorm", 1, 3, {"out", "x", "w", "b", NULL, NULL}, (1u << 2) | (1u << 3), 1, 2, 0, 1},
  {"dk_softmax", 1, 1, DK__R2, 0, 1, -1, 0, 1},
  {"dk_softmax_masked", 1, 1, DK__R2, 0, 1, -1, 0, 1},
  {"dk_matmul", 1, 2, DK__R3, 0, 1, -1, 0, 0},
  {"dk_linear", 1, 3, {"out", "x", "w", "bias", NULL, NULL}, 1u << 3, 1, 2, 0, 0},
  {"dk_embedding", 1, 2, {"out", "table", "ids", NULL, NULL, NULL}, 0, 0, 1, 0, 0},
  {"dk_rope", 1, 2, {"out", "x", "positions", NULL, NULL, NULL}, 0, 1, -1, 0, 1},
  {"dk_concat", 1, 2, DK__R3, 0, 1, -1, 0, 0},
  {"dk_copy", 1, 1, {"dst", "src", NULL, NULL, NULL, NULL}, 0, 1, -1, 3, 1},
  {"dk_transpose", 1, 1, DK__R2, 0, 1, -1, 2, 0},
  {"dk_argmax", 1, 1, {"out", "x", NULL, NULL, NULL, NULL}, 0, 1, -1, 0, 0},
  {"dk_sample", 1, 1, {"out", "logits", NULL, NULL, NULL, NULL}, 0, 1, -1, 0, 0},
  {"dk_attention", 1, 3, {"out", "q", "k", "v", NULL, NULL}, 0, 1, 2, 0, 0},
  {"dk_reduce_sum", 1, 1, DK__R2, 0, 1, -1, 0, 0},
  {"dk_reduce_mean", 1, 1, DK__R2, 0, 1, -1, 0, 0},
  {"dk_reduce_max", 1, 1, DK__R2, 0, 1, -1, 0, 0},
  {"dk_reduce_min", 1, 1, DK__R2, 0, 1, -1, 0, 0},
  {"dk_argmax_axis", 1, 1, DK__R2, 0, 1, -1, 0, 0},
  {"dk_argmin_axis", 1, 1, DK__R2, 0, 1, -1, 0, 0},
  {"dk_sqrt", 1, 1, DK__R2, 0, 1, -1, 0, 1},
  {"dk_rsqrt", 1, 1, DK__R2, 0, 1, -1, 0, 1},
  {"dk_log", 1, 1, DK__R2, 0, 1, -1, 0, 1},
  {"dk_abs", 1, 1, DK__R2, 0, 1, -1, 0, 1},
  {"dk_neg", 1, 1, DK__R2, 0, 1, -1, 0, 1},
  {"dk_erf", 1, 1, DK__R2, 0, 1, -1, 0, 1},
  {"dk_clamp", 1, 1, DK__R2, 0, 1, -1, 0, 1},
  {"dk_pow_scalar", 1, 1, DK__R2, 0, 1, -1, 0, 1},
  {"dk_pow", 1, 2, DK__R3, 0, 1, -1, 0, 1},
  {"dk_softmax_axis", 1, 1, DK__R2, 0, 1, -1, 0, 1},
  {"dk_log_softmax", 1, 1, DK__R2, 0, 1, -1, 0, 1},
  {"dk_where", 1, 3, {"out", "mask", "a", "b", NULL, NULL}, 0, 2, -1, 0, 1},
  {"dk_cumsum", 1, 1, DK__R2, 0, 1, -1, 0, 1},
  {"dk_topk", 2, 1, {"values", "indices", "x", NULL, NULL, NULL}, 0, 2, -1, 0, 0},
  {"dk_index_select", 1, 2, {"out", "x", "ids", NULL, NULL, NULL}, 0, 1, -1, 0, 0},
  {"dk_rmsnorm_linear", 1, 4, {"out", "x", "norm_w", "w", "bias", NULL}, (1u << 2) | (1u << 4), 1, 3, 0, 0},
  {"dk_swiglu_linear", 1, 4, {"out", "gate", "up", "w", "bias", NULL}, 1u << 4, 1, 3, 0, 0},
  {"dk_index_copy", 1, 2, {"dst", "src", "ids", NULL, NULL, NULL}, 0, 0, -1, 0, 0},
  {"dk_attention_pos", 1, 4, {"out", "q", "k", "v", "positions", NULL}, 0, 1, 2, 0, 0},
  {"dk_attention_window", 1, 3, {"out", "q", "k", "v", NULL, NULL}, 0, 1, 2, 0, 0},
  {"dk_attention_pos_window", 1, 4, {"out", "q", "k", "v", "positions", NULL}, 0, 1, 2, 0, 0},
};

static const char *dk__op_name(dk_op op) { return (unsigned)op < DK_OP_COUNT ? dk__ops[op].name : "?"; }
DEVKIT_API int dk_op_count(void) { return DK_OP_COUNT; }
DEVKIT_API const char *dk_op_name(int op) { return dk__op_name((dk_op)op); }

DEVKIT_API int dk_op_supported(dk_backend b, const char *name, dk_dtype t, int weight) {
  int op;
  const dk_backend_impl *impl;
  if ((unsigned)b >= DK_BACKEND_COUNT || !name) return 0;
  dk__ensure_backend(b);
  impl = dk__reg[b].impl;
  if (!impl) return 0;
  for (op = 0; op < DK_OP_COUNT; op++) {
    if (strcmp(dk__ops[op].name, name)) continue;
    if (!impl->ops[op]) return 0;
    return ((weight ? impl->wdtypes[op] : impl->dtypes[op]) >> t) & 1;
  }
  return 0;
}

/* message: header line, then the operand table, then the fix */
static dk_status dk__op_error(dk_call *c, dk_status s, const char *fix, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static dk_status dk__op_verror(const dk_call *c, dk_status s, const char *fix, const char *fmt, va_list ap) {
  const dk__opinfo *oi = &dk__ops[c->op];
  dk__sb sb;
  int i, n = oi->n_out + oi->n_in, role_w = 0, name_w = 0;
  char tmp[sizeof dk__msg];
  dk__sb_init(&sb, tmp, sizeof tmp);
  dk__sbf(&sb, "%s: ", oi->name);
  if (sb.len < sb.cap) {
    int k = vsnprintf(sb.buf + sb.len, sb.cap - sb.len, fmt, ap);
    if (k > 0) sb.len += (size_t)k < sb.cap - sb.len ? (size_t)k : sb.cap - sb.len - 1;
  }
  dk__sbf(&sb, "\n");
  for (i = 0; i < n; i++) {
    int rl = (int)strlen(oi->roles[i]), nl = c->t[i] ? (int)strlen(c->t[i]->name) + 2 : 0;
    if (!c->t[i] && ((oi->optional >> i) & 1)) continue;   /* absent optional operands are not listed */
    if (rl > role_w) role_w = rl;
    if (nl > name_w) name_w = nl;
  }
  for (i = 0; i < n; i++)
    if (c->t[i] || !((oi->optional >> i) & 1)) dk__describe_operand(&sb, oi->roles[i], c->t[i], role_w, name_w);
  if (fix && *fix) dk__sbf(&sb, "  %s", fix);
  else if (sb.len && tmp[sb.len - 1] == '\n') tmp[--sb.len] = 0;
  memcpy(dk__msg, tmp, sb.len + 1);
  return dk__raise(s);
}
static dk_status dk__op_error(dk_call *c, dk_status s, const char *fix, const char *fmt, ...) {
  va_list ap;
  dk_status r;
  va_start(ap, fmt);
  r = dk__op_verror(c, s, fix, fmt, ap);
  va_end(ap);
  return r;
}

/* The op a backend is running on this thread (set by dk__dispatch), so a
 * backend's own refusal can carry the op's name and operand table. */
static DK_TLS const dk_call *dk__cur_call = NULL;
static dk_status dk__call_error(dk_status s, const char *fix, const char *fmt, ...) DK__UNUSED
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static dk_status dk__call_error(dk_status s, const char *fix, const char *fmt, ...) {
  va_list ap;
  dk_status r;
  va_start(ap, fmt);
  if (dk__cur_call) {
    r = dk__op_verror(dk__cur_call, s, fix, fmt, ap);
  } else {
    vsnprintf(dk__msg, sizeof dk__msg, fmt, ap);
    r = dk__raise(s);
  }
  va_end(ap);
  return r;
}

/* The device check's fix: the device most operands are on (ties: the
 * output's) is where the op belongs; name the others and how to move them. */
static dk_status dk__mismatch(dk_call *c, int backend_level) {
  const dk__opinfo *oi = &dk__ops[c->op];
  int n = oi->n_out + oi->n_in, i, j, best = -1, best_votes = 0, first_odd = -1;
  char fix[1024], list[512];
  dk__sb f, l;
  dk_device target;
  for (i = 0; i < n; i++) {
    int votes = 0;
    if (!c->t[i]) continue;
    for (j = 0; j < n; j++)
      if (c->t[j] && dk_device_equal(c->t[j]->device, c->t[i]->device)) votes++;
    if (votes > best_votes) { best = i; best_votes = votes; }
  }
  target = c->t[best]->device;
  dk__sb_init(&l, list, sizeof list);
  for (i = 0; i < n; i++) {
    if (!c->t[i] || dk_device_equal(c->t[i]->device, target)) continue;
    if (first_odd < 0) first_odd = i;
    dk__sbf(&l, "%s%s", l.len ? ", " : "", oi->roles[i]);
  }
  dk__sb_init(&f, fix, sizeof fix);
  {
    char tname[32], oname[32];
    snprintf(tname, sizeof tname, "%s", dk_device_name(target));
    snprintf(oname, sizeof oname, "%s", dk_device_name(c->t[first_odd]->device));
    /* the fix's code is valid C against the public API, with the operands
     * named by their roles (tests/test_errors.c compiles it) */
    dk__sbf(&f, "move %s to %s (or create %s there), or put the others on %s:\n    dk_tensor *%s_moved; "
            "dk_to(%s, dk_tensor_device(%s), &%s_moved);", list, tname, strchr(list, ',') ? "them" : "it", oname,
            oi->roles[first_odd], oi->roles[first_odd], oi->roles[best], oi->roles[first_odd]);
  }
  if (backend_level)
    return dk__op_error(c, DK_ERR_BACKEND_MISMATCH, fix,
                        "operands are on different backends (devkit never copies implicitly):");
  return dk__op_error(c, DK_ERR_DEVICE_MISMATCH, fix,
                      "operands are on different devices (devkit never copies implicitly):");
}

static int dk__overlaps(const dk_tensor *a, const dk_tensor *b) {
  size_t a0, a1, b0, b1;
  if (a->st != b->st || dk__numel(a->ndim, a->shape) == 0 || dk__numel(b->ndim, b->shape) == 0) return 0;
  a0 = a->offset; a1 = a0 + dk_tensor_nbytes(a);
  b0 = b->offset; b1 = b0 + dk_tensor_nbytes(b);
  if (!dk_tensor_is_contiguous(a) || !dk_tensor_is_contiguous(b)) {
    /* a strided view spans to its last element; be conservative */
    int i;
    int64_t ea = 0, eb = 0;
    for (i = 0; i < a->ndim; i++) ea += (a->shape[i] - 1) * a->stride[i];
    for (i = 0; i < b->ndim; i++) eb += (b->shape[i] - 1) * b->stride[i];
    a1 = a0 + dk__elem_offset_bytes(a->dtype, ea + 1);
    b1 = b0 + dk__elem_offset_bytes(b->dtype, eb + 1);
  }
  return a0 < b1 && b0 < a1;
}

static int dk__same_layout(const dk_tensor *a, const dk_tensor *b) {
  int i;
  if (a->st != b->st || a->offset != b->offset || a->dtype != b->dtype || a->ndim != b->ndim) return 0;
  for (i = 0; i < a->ndim; i++)
    if (a->shape[i] != b->shape[i] || a->stride[i] != b->stride[i]) return 0;
  return 1;
}

/* ---- dtype and shape rules, one per op family ------------------------------ */

static dk_status dk__want_same_dtype(dk_call *c, int a, int b) {
  if (c->t[a]->dtype == c->t[b]->dtype) return DK_OK;
  return dk__op_error(c, DK_ERR_DTYPE, "convert one with dk_copy into a tensor of the other's dtype",
                      "'%s' is %s but '%s' is %s; they must match", dk__ops[c->op].roles[a], dk_dtype_name(c->t[a]->dtype),
                      dk__ops[c->op].roles[b], dk_dtype_name(c->t[b]->dtype));
}
static dk_status dk__want_float(dk_call *c, int a) {
  if (dk_dtype_is_float(c->t[a]->dtype)) return DK_OK;
  return dk__op_error(c, DK_ERR_DTYPE, "", "'%s' is %s; this op takes f32, f16 or bf16", dk__ops[c->op].roles[a],
                      dk_dtype_name(c->t[a]->dtype));
}
static dk_status dk__want_dtype(dk_call *c, int a, dk_dtype t) {
  if (c->t[a]->dtype == t) return DK_OK;
  return dk__op_error(c, DK_ERR_DTYPE, "", "'%s' is %s; it must be %s", dk__ops[c->op].roles[a],
                      dk_dtype_name(c->t[a]->dtype), dk_dtype_name(t));
}
static dk_status dk__want_shape_eq(dk_call *c, int a, int b) {
  const dk_tensor *x = c->t[a], *y = c->t[b];
  int i, ok = x->ndim == y->ndim;
  for (i = 0; ok && i < x->ndim; i++) ok = x->shape[i] == y->shape[i];
  if (ok) return DK_OK;
  return dk__op_error(c, DK_ERR_SHAPE, "", "'%s' and '%s' must have the same shape", dk__ops[c->op].roles[a],
                      dk__ops[c->op].roles[b]);
}
static dk_status dk__want_ndim_min(dk_call *c, int a, int nd) {
  if (c->t[a]->ndim >= nd) return DK_OK;
  return dk__op_error(c, DK_ERR_SHAPE, "", "'%s' must have at least %d dimension%s", dk__ops[c->op].roles[a], nd,
                      nd == 1 ? "" : "s");
}
static int64_t dk__last(const dk_tensor *t) { return t->ndim ? t->shape[t->ndim - 1] : 1; }

/* all operands: one float dtype; out shape == x shape */
static dk_status dk__check_unary(dk_call *c) {
  dk_status s;
  if ((s = dk__want_float(c, 1)) || (s = dk__want_same_dtype(c, 0, 1))) return s;
  return dk__want_shape_eq(c, 0, 1);
}

static dk_status dk__check_binary(dk_call *c) {
  const dk_tensor *o = c->t[0], *a = c->t[1], *b = c->t[2];
  int nd = a->ndim > b->ndim ? a->ndim : b->ndim, i, ok;
  dk_status s;
  if ((s = dk__want_float(c, 1)) || (s = dk__want_same_dtype(c, 0, 1)) || (s = dk__want_same_dtype(c, 0, 2))) return s;
  ok = o->ndim == nd;
  for (i = 0; i < nd && ok; i++) {
    int64_t da = i - (nd - a->ndim) >= 0 ? a->shape[i - (nd - a->ndim)] : 1;
    int64_t db = i - (nd - b->ndim) >= 0 ? b->shape[i - (nd - b->ndim)] : 1;
    if (da != db && da != 1 && db != 1)
      return dk__op_error(c, DK_ERR_SHAPE, "", "'a' and 'b' do not broadcast: dimension %d (from the left, after aligning "
                          "the right ends) is %lld vs %lld", i, (long long)da, (long long)db);
    ok = o->shape[i] == (da == 1 ? db : da);
  }
  if (!ok) return dk__op_error(c, DK_ERR_SHAPE, "", "'out' must have the broadcast shape of 'a' and 'b'");
  return DK_OK;
}

static dk_status dk__check_swiglu(dk_call *c) {
  dk_status s;
  if ((s = dk__want_float(c, 1)) || (s = dk__want_same_dtype(c, 0, 1)) || (s = dk__want_same_dtype(c, 0, 2))) return s;
  if ((s = dk__want_shape_eq(c, 0, 1)) || (s = dk__want_shape_eq(c, 0, 2))) return s;
  return DK_OK;
}

static dk_status dk__check_vec_param(dk_call *c, int k, int64_t n) {
  const dk_tensor *w = c->t[k];
  if (!w) return DK_OK;
  if (!dk_dtype_is_float(w->dtype)) return dk__want_float(c, k);
  if (dk__numel(w->ndim, w->shape) != n || w->ndim < 1 || w->shape[w->ndim - 1] != n)
    return dk__op_error(c, DK_ERR_SHAPE, "", "'%s' must hold one value per element of the last dim of 'x' (%lld)",
                        dk__ops[c->op].roles[k], (long long)n);
  return DK_OK;
}

static dk_status dk__want_eps(dk_call *c) {
  if (!(c->f[0] >= 0.0f) || !isfinite(c->f[0]))
    return dk__op_error(c, DK_ERR_INVALID, "", "eps must be a finite value >= 0, got %g", (double)c->f[0]);
  return DK_OK;
}

static dk_status dk__check_norm(dk_call *c) {
  dk_status s;
  if ((s = dk__check_unary(c)) || (s = dk__want_ndim_min(c, 1, 1))) return s;
  if ((s = dk__check_vec_param(c, 2, dk__last(c->t[1])))) return s;
  if (c->op == DK_OP_LAYERNORM && (s = dk__check_vec_param(c, 3, dk__last(c->t[1])))) return s;
  if (c->op == DK_OP_LAYERNORM && c->t[2] && c->t[3] && c->t[2]->dtype != c->t[3]->dtype)
    return dk__want_same_dtype(c, 2, 3);
  return dk__want_eps(c);
}

static dk_status dk__check_softmax(dk_call *c) {
  dk_status s;
  if ((s = dk__check_unary(c)) || (s = dk__want_ndim_min(c, 1, c->op == DK_OP_SOFTMAX_MASKED ? 2 : 1))) return s;
  if (c->op == DK_OP_SOFTMAX_MASKED && !isfinite(c->f[0]))
    return dk__op_error(c, DK_ERR_INVALID, "", "scale must be finite, got %g", (double)c->f[0]);
  return DK_OK;
}

/* NumPy matmul: a [..., M, K] b [..., K, N]; 1-D a is [1, K] with M dropped,
 * 1-D b is [K, 1] with N dropped; batch dims broadcast. */
static dk_status dk__check_matmul(dk_call *c) {
  const dk_tensor *o = c->t[0], *a = c->t[1], *b = c->t[2];
  int64_t M, N, K, Kb, batch = 1, want[DEVKIT_MAX_DIMS + 2];
  int abat, bbat, nb, nw = 0, i, ok;
  dk_status s;
  if ((s = dk__want_float(c, 1)) || (s = dk__want_same_dtype(c, 0, 1)) || (s = dk__want_same_dtype(c, 0, 2))) return s;
  if (a->ndim < 1 || b->ndim < 1) return dk__op_error(c, DK_ERR_SHAPE, "", "'a' and 'b' must have at least 1 dimension");
  M = a->ndim == 1 ? 1 : a->shape[a->ndim - 2];
  K = a->shape[a->ndim - 1];
  Kb = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];
  N = b->ndim == 1 ? 1 : b->shape[b->ndim - 1];
  if (K != Kb)
    return dk__op_error(c, DK_ERR_SHAPE, "", "inner dimensions differ: 'a' has K=%lld, 'b' has K=%lld", (long long)K,
                        (long long)Kb);
  abat = a->ndim > 2 ? a->ndim - 2 : 0;
  bbat = b->ndim > 2 ? b->ndim - 2 : 0;
  nb = abat > bbat ? abat : bbat;
  for (i = 0; i < nb; i++) {
    int64_t da = i - (nb - abat) >= 0 ? a->shape[i - (nb - abat)] : 1;
    int64_t db = i - (nb - bbat) >= 0 ? b->shape[i - (nb - bbat)] : 1;
    if (da != db && da != 1 && db != 1)
      return dk__op_error(c, DK_ERR_SHAPE, "", "batch dimensions do not broadcast: %lld vs %lld", (long long)da, (long long)db);
    want[nw++] = da == 1 ? db : da;
    batch *= want[nw - 1];
  }
  if (a->ndim > 1) want[nw++] = M;
  if (b->ndim > 1) want[nw++] = N;
  ok = o->ndim == nw;
  for (i = 0; ok && i < nw; i++) ok = o->shape[i] == want[i];
  if (!ok) return dk__op_error(c, DK_ERR_SHAPE, "", "'out' must have the shape of the NumPy matmul of 'a' and 'b'");
  c->i[0] = M; c->i[1] = N; c->i[2] = K; c->i[3] = batch;
  return DK_OK;
}

/* out = x . w^T + bias with w in operand wi and bias in wi + 1 (linear: 2;
 * rmsnorm_linear: 3, after the norm's weight) */
static dk_status dk__check_linear_at(dk_call *c, int wi) {
  const dk_tensor *o = c->t[0], *x = c->t[1], *w = c->t[wi], *bias = c->t[wi + 1];
  int i, ok;
  dk_status s;
  if ((s = dk__want_float(c, 1)) || (s = dk__want_same_dtype(c, 0, 1))) return s;
  if (!dk_dtype_is_float(w->dtype) && !dk_dtype_is_quant(w->dtype))
    return dk__op_error(c, DK_ERR_DTYPE, "", "'%s' is %s; it must be a float or a GGUF block dtype", dk__ops[c->op].roles[wi],
                        dk_dtype_name(w->dtype));
  if (bias && (s = dk__want_float(c, wi + 1))) return s;
  if (w->ndim != 2) return dk__op_error(c, DK_ERR_SHAPE, "", "'%s' must be 2-D [N, K]", dk__ops[c->op].roles[wi]);
  if ((s = dk__want_ndim_min(c, 1, 1))) return s;
  if (dk__last(x) != w->shape[1])
    return dk__op_error(c, DK_ERR_SHAPE, "", "the last dim of 'x' (%lld) must equal K, the second dim of '%s' (%lld)",
                        (long long)dk__last(x), dk__ops[c->op].roles[wi], (long long)w->shape[1]);
  ok = o->ndim == x->ndim && dk__last(o) == w->shape[0];
  for (i = 0; ok && i < x->ndim - 1; i++) ok = o->shape[i] == x->shape[i];
  if (!ok) return dk__op_error(c, DK_ERR_SHAPE, "", "'out' must be [..., N]: the shape of 'x' with its last dim N=%lld",
                               (long long)w->shape[0]);
  if (bias && (bias->ndim != 1 || bias->shape[0] != w->shape[0]))
    return dk__op_error(c, DK_ERR_SHAPE, "", "'bias' must be 1-D [N=%lld]", (long long)w->shape[0]);
  c->i[0] = dk__numel(x->ndim, x->shape) / (w->shape[1] ? w->shape[1] : 1);
  if (w->shape[1] == 0) c->i[0] = dk__numel(x->ndim - 1, x->shape);
  c->i[1] = w->shape[0];
  c->i[2] = w->shape[1];
  return DK_OK;
}

static dk_status dk__check_linear(dk_call *c) { return dk__check_linear_at(c, 2); }

static dk_status dk__check_swiglu_linear(dk_call *c) {
  dk_status s;
  if ((s = dk__check_linear_at(c, 3)) || (s = dk__want_same_dtype(c, 1, 2))) return s;
  return dk__want_shape_eq(c, 1, 2);
}

static dk_status dk__check_rmsnorm_linear(dk_call *c) {
  dk_status s;
  if ((s = dk__check_linear_at(c, 3)) || (s = dk__check_vec_param(c, 2, dk__last(c->t[1])))) return s;
  return dk__want_eps(c);
}

static dk_status dk__check_embedding(dk_call *c) {
  const dk_tensor *o = c->t[0], *tab = c->t[1], *ids = c->t[2];
  int i, ok;
  dk_status s;
  if ((s = dk__want_float(c, 0)) || (s = dk__want_dtype(c, 2, DK_I32))) return s;
  if (!dk_dtype_is_float(tab->dtype) && !dk_dtype_is_quant(tab->dtype))
    return dk__op_error(c, DK_ERR_DTYPE, "", "'table' is %s; it must be a float or a GGUF block dtype", dk_dtype_name(tab->dtype));
  if (tab->ndim != 2) return dk__op_error(c, DK_ERR_SHAPE, "", "'table' must be 2-D [rows, D]");
  if (ids->ndim + 1 > DEVKIT_MAX_DIMS) return dk__op_error(c, DK_ERR_SHAPE, "", "'ids' has too many dimensions");
  ok = o->ndim == ids->ndim + 1 && dk__last(o) == tab->shape[1];
  for (i = 0; ok && i < ids->ndim; i++) ok = o->shape[i] == ids->shape[i];
  if (!ok) return dk__op_error(c, DK_ERR_SHAPE, "", "'out' must be the shape of 'ids' followed by D=%lld", (long long)tab->shape[1]);
  return DK_OK;
}

static dk_status dk__check_rope(dk_call *c) {
  const dk_tensor *x = c->t[1], *pos = c->t[2];
  int64_t T, D;
  dk_status s;
  if ((s = dk__check_unary(c)) || (s = dk__want_dtype(c, 2, DK_I32)) || (s = dk__want_ndim_min(c, 1, 2))) return s;
  T = x->ndim == 2 ? x->shape[0] : x->shape[x->ndim - 3];
  D = dk__last(x);
  if (pos->ndim != 1 || pos->shape[0] != T)
    return dk__op_error(c, DK_ERR_SHAPE, "", "'positions' must be 1-D with one position per token (%lld)", (long long)T);
  if (c->i[0] <= 0 || c->i[0] % 2 || c->i[0] > D)
    return dk__op_error(c, DK_ERR_INVALID, "", "n_rot is %lld; it must be even, > 0 and <= the head dim %lld",
                        (long long)c->i[0], (long long)D);
  if (c->i[1] != DK_ROPE_NORMAL && c->i[1] != DK_ROPE_NEOX)
    return dk__op_error(c, DK_ERR_INVALID, "", "mode %lld is neither DK_ROPE_NORMAL nor DK_ROPE_NEOX", (long long)c->i[1]);
  if (!(c->f[0] > 0.0f) || !isfinite(c->f[0]))
    return dk__op_error(c, DK_ERR_INVALID, "", "theta must be a finite value > 0, got %g", (double)c->f[0]);
  return DK_OK;
}

static dk_status dk__check_concat(dk_call *c) {
  const dk_tensor *o = c->t[0], *a = c->t[1], *b = c->t[2];
  int64_t dim = c->i[0];
  int i;
  dk_status s;
  if ((s = dk__want_same_dtype(c, 0, 1)) || (s = dk__want_same_dtype(c, 0, 2))) return s;
  if (dk_dtype_is_quant(a->dtype))
    return dk__op_error(c, DK_ERR_DTYPE, "", "'a' is %s; concat takes f32, f16, bf16 or i32", dk_dtype_name(a->dtype));
  if (a->ndim != b->ndim || o->ndim != a->ndim || a->ndim == 0)
    return dk__op_error(c, DK_ERR_SHAPE, "", "'out', 'a' and 'b' must have the same number of dimensions (at least 1)");
  if (dim < 0) dim += a->ndim;
  if (dim < 0 || dim >= a->ndim)
    return dk__op_error(c, DK_ERR_INVALID, "", "dim %lld is outside a %d-D tensor", (long long)c->i[0], a->ndim);
  for (i = 0; i < a->ndim; i++) {
    if (i == dim) continue;
    if (a->shape[i] != b->shape[i] || o->shape[i] != a->shape[i])
      return dk__op_error(c, DK_ERR_SHAPE, "", "dimension %d differs; all dims but %lld must match", i, (long long)dim);
  }
  {
    int64_t sum;
    if (!dk__sadd_ok(a->shape[dim], b->shape[dim], &sum) || o->shape[dim] != sum)
      return dk__op_error(c, DK_ERR_SHAPE, "", "'out' dim %lld must be %lld + %lld", (long long)dim,
                          (long long)a->shape[dim], (long long)b->shape[dim]);
  }
  c->i[0] = dim;
  return DK_OK;
}

static dk_status dk__check_copy(dk_call *c) {
  const dk_tensor *d = c->t[0], *s0 = c->t[1];
  dk_status s;
  if (dk_dtype_is_quant(d->dtype) || dk_dtype_is_quant(s0->dtype)) {
    if (d->dtype != s0->dtype)
      return dk__op_error(c, DK_ERR_DTYPE, "", "quantized tensors are copied only to the same dtype");
    if (!dk_tensor_is_contiguous(d) || !dk_tensor_is_contiguous(s0))
      return dk__op_error(c, DK_ERR_SHAPE, "", "quantized tensors are copied only between contiguous tensors");
  }
  if ((d->dtype == DK_I32) != (s0->dtype == DK_I32))
    return dk__op_error(c, DK_ERR_DTYPE, "", "i32 is copied only to i32 (%s -> %s)", dk_dtype_name(s0->dtype),
                        dk_dtype_name(d->dtype));
  if ((s = dk__want_shape_eq(c, 0, 1))) return s;
  return DK_OK;
}

static dk_status dk__check_transpose(dk_call *c) {
  const dk_tensor *o = c->t[0], *x = c->t[1];
  int seen[DEVKIT_MAX_DIMS], i;
  dk_status s;
  if ((s = dk__want_same_dtype(c, 0, 1))) return s;
  if (dk_dtype_is_quant(x->dtype))
    return dk__op_error(c, DK_ERR_DTYPE, "", "'x' is %s; transpose takes f32, f16, bf16 or i32", dk_dtype_name(x->dtype));
  if (o->ndim != x->ndim) return dk__op_error(c, DK_ERR_SHAPE, "", "'out' and 'x' must have the same number of dims");
  memset(seen, 0, sizeof seen);
  for (i = 0; i < x->ndim; i++) {
    int64_t p = c->i[i];
    if (p < 0) p += x->ndim;
    if (p < 0 || p >= x->ndim || seen[p])
      return dk__op_error(c, DK_ERR_INVALID, "", "perm is not a permutation of 0..%d", x->ndim - 1);
    seen[p] = 1;
    c->i[i] = p;
    if (o->shape[i] != x->shape[p])
      return dk__op_error(c, DK_ERR_SHAPE, "", "'out' dim %d must be 'x' dim %lld (%lld)", i, (long long)p,
                          (long long)x->shape[p]);
  }
  return DK_OK;
}

static dk_status dk__check_reduce_last(dk_call *c) {
  const dk_tensor *o = c->t[0], *x = c->t[1];
  int i, ok;
  dk_status s;
  if ((s = dk__want_dtype(c, 0, DK_I32)) || (s = dk__want_float(c, 1)) || (s = dk__want_ndim_min(c, 1, 1))) return s;
  if (dk__last(x) == 0) return dk__op_error(c, DK_ERR_SHAPE, "", "the last dim of '%s' is empty", dk__ops[c->op].roles[1]);
  ok = o->ndim == x->ndim - 1 || (o->ndim == x->ndim && dk__last(o) == 1);
  for (i = 0; ok && i < x->ndim - 1; i++) ok = o->shape[i] == x->shape[i];
  if (!ok) return dk__op_error(c, DK_ERR_SHAPE, "", "'%s' must have the shape of '%s' without its last dim (or with it as 1)",
                               dk__ops[c->op].roles[0], dk__ops[c->op].roles[1]);
  if (c->op == DK_OP_SAMPLE && (!(c->f[1] > 0.0f) || c->f[1] > 1.0f || !isfinite(c->f[0])))
    return dk__op_error(c, DK_ERR_INVALID, "", "top_p must be in (0, 1] and temperature finite (got %g, %g)",
                        (double)c->f[1], (double)c->f[0]);
  return DK_OK;
}

static dk_status dk__check_attention(dk_call *c) {
  const dk_tensor *o = c->t[0], *q = c->t[1], *k = c->t[2], *v = c->t[3];
  dk_status s;
  if ((s = dk__want_float(c, 1)) || (s = dk__want_same_dtype(c, 0, 1)) || (s = dk__want_float(c, 2)) ||
      (s = dk__want_same_dtype(c, 2, 3)))
    return s;
  if (q->ndim != 3 || k->ndim != 3 || v->ndim != 3 || o->ndim != 3)
    return dk__op_error(c, DK_ERR_SHAPE, "", "q, k, v and out must be 3-D: q [T,Hq,D], k [S,Hkv,D], v [S,Hkv,Dv], out [T,Hq,Dv]");
  if (k->shape[2] != q->shape[2] || v->shape[0] != k->shape[0] || v->shape[1] != k->shape[1])
    return dk__op_error(c, DK_ERR_SHAPE, "", "k must be [S,Hkv,D] with q's D, and v [S,Hkv,Dv] with k's S and Hkv");
  if (k->shape[1] == 0 || q->shape[1] % k->shape[1])
    return dk__op_error(c, DK_ERR_SHAPE, "", "q's heads (%lld) must be a multiple of k's heads (%lld)",
                        (long long)q->shape[1], (long long)k->shape[1]);
  if (o->shape[0] != q->shape[0] || o->shape[1] != q->shape[1] || o->shape[2] != v->shape[2])
    return dk__op_error(c, DK_ERR_SHAPE, "", "'out' must be [T,Hq,Dv]");
  if (!isfinite(c->f[0]))   /* the backends would disagree on what a NaN scale means */
    return dk__op_error(c, DK_ERR_INVALID, "", "scale must be finite, got %g", (double)c->f[0]);
  return DK_OK;
}

/* ---- issue 12 ops: reductions over axes, math, softmax on an axis, where --- */

/* The iteration space of a reduction (or of a softmax along an axis) over a
 * contiguous x: the kept dims and the reduced dims, each collapsed (size-1
 * dims dropped, neighbours of one class merged), with x's strides. Output
 * element o (row-major over the kept dims, which is the output's own order
 * with or without keepdim) reads x at kept_off(o) + red_off(r) for r in
 * [0, nred), r row-major over the reduced dims. On a contiguous x the two
 * classes alternate, so each has at most ceil(DEVKIT_MAX_DIMS / 2) <= 4
 * dims. Shared by every backend. */
typedef struct {
  int nk, nr;
  int64_t ks[4], kx[4];   /* kept: sizes and x strides, outermost first */
  int64_t rs[4], rx[4];   /* reduced */
  int64_t nout, nred;
} dk__red_lay;

static void dk__red_layout(const dk_tensor *x, uint32_t mask, dk__red_lay *l) DK__UNUSED;
static void dk__red_layout(const dk_tensor *x, uint32_t mask, dk__red_lay *l) {
  int i, prev = -1;   /* class of the last dim appended: 0 kept, 1 reduced */
  memset(l, 0, sizeof *l);
  l->nout = l->nred = 1;
  for (i = 0; i < x->ndim; i++) {
    int red = (int)((mask >> i) & 1);
    int64_t n = x->shape[i], st = x->stride[i];
    if (red) l->nred *= n; else l->nout *= n;
    if (n == 1) continue;
    if (prev == red) {
      /* merge into the previous dim of this class: contiguous x makes its
       * stride this one's times this size */
      if (red) { l->rs[l->nr - 1] *= n; l->rx[l->nr - 1] = st; }
      else { l->ks[l->nk - 1] *= n; l->kx[l->nk - 1] = st; }
    } else if (red) {
      l->rs[l->nr] = n; l->rx[l->nr] = st; l->nr++;
    } else {
      l->ks[l->nk] = n; l->kx[l->nk] = st; l->nk++;
    }
    prev = red;
  }
}

/* axis in [-ndim, ndim) -> [0, ndim), or -1 */
static int dk__axis(const dk_tensor *x, int64_t a) {
  if (a < 0) a += x->ndim;
  return a >= 0 && a < x->ndim ? (int)a : -1;
}

/* out's shape for a reduction of x over `mask` */
static dk_status dk__want_reduced_shape(dk_call *c, uint32_t mask, int keepdim) {
  const dk_tensor *o = c->t[0], *x = c->t[1];
  int i, k = 0, ok = 1;
  for (i = 0; i < x->ndim && ok; i++) {
    int red = (int)((mask >> i) & 1);
    if (keepdim) ok = k < o->ndim && o->shape[k++] == (red ? 1 : x->shape[i]);
    else if (!red) ok = k < o->ndim && o->shape[k++] == x->shape[i];
  }
  if (ok && k == o->ndim) return DK_OK;
  return dk__op_error(c, DK_ERR_SHAPE, "", "'out' must have the shape of 'x' %s (keepdim=%d)",
                      keepdim ? "with the reduced axes as 1" : "without the reduced axes", keepdim);
}

/* reductions: i[0] = number of axes (-1: all), i[1] = keepdim, axes in
 * i[2..]; after the check i[0] = the axes as a bit mask. argmax/argmin_axis:
 * i[0] = axis, i[1] = keepdim, i[2] = select_last; after: i[0] = the mask. */
static dk_status dk__check_reduce(dk_call *c) {
  const dk_tensor *x = c->t[1];
  uint32_t mask = 0;
  int i, keepdim = c->i[1] != 0, arg = c->op == DK_OP_ARGMAX_AXIS || c->op == DK_OP_ARGMIN_AXIS;
  dk_status s;
  if (arg) {
    if ((s = dk__want_dtype(c, 0, DK_I32)) || (s = dk__want_float(c, 1))) return s;
    if ((i = dk__axis(x, c->i[0])) < 0)
      return dk__op_error(c, DK_ERR_INVALID, "", "axis %lld is out of range for 'x' with %d dims", (long long)c->i[0], x->ndim);
    mask = 1u << i;
  } else {
    if ((s = dk__want_float(c, 1)) || (s = dk__want_same_dtype(c, 0, 1))) return s;
    if (c->i[0] < 0) {
      mask = x->ndim ? (uint32_t)((1u << x->ndim) - 1) : 0;
    } else {
      for (i = 0; i < c->i[0]; i++) {
        int a = dk__axis(x, c->i[2 + i]);
        if (a < 0)
          return dk__op_error(c, DK_ERR_INVALID, "", "axes[%d] = %lld is out of range for 'x' with %d dims", i,
                              (long long)c->i[2 + i], x->ndim);
        if ((mask >> a) & 1)
          return dk__op_error(c, DK_ERR_INVALID, "", "axes[%d] = %lld names axis %d twice", i, (long long)c->i[2 + i], a);
        mask |= 1u << a;
      }
    }
  }
  if ((s = dk__want_reduced_shape(c, mask, keepdim))) return s;
  if (c->op != DK_OP_REDUCE_SUM && c->op != DK_OP_REDUCE_MEAN && dk__numel(c->t[0]->ndim, c->t[0]->shape))
    for (i = 0; i < x->ndim; i++)
      if (((mask >> i) & 1) && x->shape[i] == 0)
        return dk__op_error(c, DK_ERR_SHAPE, "", "axis %d of 'x' is empty: no %s exists", i,
                            arg ? "index" : c->op == DK_OP_REDUCE_MAX ? "maximum" : "minimum");
  c->i[0] = mask;
  return DK_OK;
}

static dk_status dk__check_math(dk_call *c) {
  dk_status s;
  if ((s = dk__check_unary(c))) return s;
  if (c->op == DK_OP_CLAMP && (isnan(c->f[0]) || isnan(c->f[1]) || c->f[0] > c->f[1]))
    return dk__op_error(c, DK_ERR_INVALID, "", "clamp needs lo <= hi (neither NaN), got lo=%g hi=%g", (double)c->f[0],
                        (double)c->f[1]);
  if (c->op == DK_OP_POW_SCALAR && isnan(c->f[0]))
    return dk__op_error(c, DK_ERR_INVALID, "", "the exponent is NaN");
  return DK_OK;
}

static dk_status dk__check_softmax_axis(dk_call *c) {
  dk_status s;
  int a;
  if ((s = dk__check_unary(c))) return s;
  if ((a = dk__axis(c->t[1], c->i[0])) < 0)
    return dk__op_error(c, DK_ERR_INVALID, "", "axis %lld is out of range for 'x' with %d dims", (long long)c->i[0],
                        c->t[1]->ndim);
  c->i[0] = 1u << a;   /* as a reduction's mask */
  return DK_OK;
}

/* where: mask i32; out, a, b one float dtype; out = broadcast(mask, a, b) */
static dk_status dk__check_where(dk_call *c) {
  const dk_tensor *o = c->t[0];
  int nd = 0, i, k;
  dk_status s;
  if ((s = dk__want_dtype(c, 1, DK_I32)) || (s = dk__want_float(c, 2)) || (s = dk__want_same_dtype(c, 0, 2)) ||
      (s = dk__want_same_dtype(c, 0, 3)))
    return s;
  for (k = 1; k < 4; k++) nd = c->t[k]->ndim > nd ? c->t[k]->ndim : nd;
  if (o->ndim != nd) return dk__op_error(c, DK_ERR_SHAPE, "", "'out' must have the broadcast shape of 'mask', 'a' and 'b'");
  for (i = 0; i < nd; i++) {
    int64_t want = 1;
    for (k = 1; k < 4; k++) {
      const dk_tensor *t = c->t[k];
      int64_t dd = i - (nd - t->ndim) >= 0 ? t->shape[i - (nd - t->ndim)] : 1;
      if (dd == 1) continue;
      if (want != 1 && dd != want)
        return dk__op_error(c, DK_ERR_SHAPE, "", "'mask', 'a' and 'b' do not broadcast: dimension %d (from the left, after "
                            "aligning the right ends) is %lld in '%s' but %lld in another", i, (long long)dd,
                            dk__ops[c->op].roles[k], (long long)want);
      want = dd;
    }
    if (o->shape[i] != want)
      return dk__op_error(c, DK_ERR_SHAPE, "", "'out' must have the broadcast shape of 'mask', 'a' and 'b'");
  }
  return DK_OK;
}

/* cumsum: i[0] = axis (after: its mask), i[1] = exclusive, i[2] = reverse */
static dk_status dk__check_cumsum(dk_call *c) { return dk__check_softmax_axis(c); }

/* topk: i[0] = k, i[1] = largest */
static dk_status dk__check_topk(dk_call *c) {
  const dk_tensor *v = c->t[0], *ix = c->t[1], *x = c->t[2];
  int i, ok;
  dk_status s;
  if ((s = dk__want_float(c, 2)) || (s = dk__want_same_dtype(c, 0, 2)) || (s = dk__want_dtype(c, 1, DK_I32)) ||
      (s = dk__want_ndim_min(c, 2, 1)))
    return s;
  if (c->i[0] < 0 || c->i[0] > dk__last(x))
    return dk__op_error(c, DK_ERR_INVALID, "", "k = %lld; it must be in [0, %lld] (the last dim of 'x')", (long long)c->i[0],
                        (long long)dk__last(x));
  ok = v->ndim == x->ndim && ix->ndim == x->ndim;
  for (i = 0; ok && i < x->ndim; i++) {
    int64_t want = i == x->ndim - 1 ? c->i[0] : x->shape[i];
    ok = v->shape[i] == want && ix->shape[i] == want;
  }
  if (!ok) return dk__op_error(c, DK_ERR_SHAPE, "", "'values' and 'indices' must have the shape of 'x' with its last dim k = %lld",
                               (long long)c->i[0]);
  return DK_OK;
}

/* index_select: i[0] = axis */
/* dst[.., ids[i], ..] = src[.., i, ..] along axis a: src is dst with axis a
 * as long as ids; the float dtypes may differ (converted as dk_copy does) */
static dk_status dk__check_index_copy(dk_call *c) {
  const dk_tensor *dst = c->t[0], *src = c->t[1], *ids = c->t[2];
  int a, i, ok;
  dk_status s;
  if ((s = dk__want_float(c, 0)) || (s = dk__want_float(c, 1)) || (s = dk__want_dtype(c, 2, DK_I32))) return s;
  if (ids->ndim != 1) return dk__op_error(c, DK_ERR_SHAPE, "", "'ids' must be 1-D, got %d dims", ids->ndim);
  if ((a = dk__axis(dst, c->i[0])) < 0)
    return dk__op_error(c, DK_ERR_INVALID, "", "axis %lld is out of range for 'dst' with %d dims", (long long)c->i[0],
                        dst->ndim);
  ok = src->ndim == dst->ndim;
  for (i = 0; ok && i < dst->ndim; i++) ok = src->shape[i] == (i == a ? ids->shape[0] : dst->shape[i]);
  if (!ok)
    return dk__op_error(c, DK_ERR_SHAPE, "", "'src' must have the shape of 'dst' with axis %d as long as 'ids' (%lld)", a,
                        (long long)ids->shape[0]);
  if (dst->shape[a] == 0 && ids->shape[0] && dk__numel(src->ndim, src->shape))
    return dk__op_error(c, DK_ERR_INVALID, "", "axis %d of 'dst' is empty: no id can select into it", a);
  c->i[0] = a;
  return DK_OK;
}

/* a window of at least one key */
static dk_status dk__check_window(dk_call *c, const char *fix) {
  if (c->i[1] < 1)
    return dk__op_error(c, DK_ERR_INVALID, fix, "window %lld: a query must see at least its own key (window >= 1)",
                        (long long)c->i[1]);
  return DK_OK;
}

/* dk_attention's shapes and a window */
static dk_status dk__check_attention_window(dk_call *c) {
  dk_status s = dk__check_window(c, "dk_attention takes every key the causal offset allows");
  return s ? s : dk__check_attention(c);
}

/* dk_attention's shapes, and positions i32 [T] in place of the offset */
static dk_status dk__check_attention_pos(dk_call *c) {
  dk_status s;
  c->i[0] = -1;
  if ((s = dk__check_attention(c)) || (s = dk__want_dtype(c, 4, DK_I32))) return s;
  if (c->t[4]->ndim != 1 || c->t[4]->shape[0] != c->t[1]->shape[0])
    return dk__op_error(c, DK_ERR_SHAPE, "", "'positions' must be [T] (T = %lld, q's first dim)",
                        (long long)c->t[1]->shape[0]);
  return DK_OK;
}

/* dk_attention_pos's and a window */
static dk_status dk__check_attention_pos_window(dk_call *c) {
  dk_status s = dk__check_window(c, "dk_attention_pos takes every key up to each position");
  return s ? s : dk__check_attention_pos(c);
}

static dk_status dk__check_index_select(dk_call *c) {
  const dk_tensor *o = c->t[0], *x = c->t[1], *ids = c->t[2];
  int a, i, ok;
  dk_status s;
  if ((s = dk__want_float(c, 1)) || (s = dk__want_same_dtype(c, 0, 1)) || (s = dk__want_dtype(c, 2, DK_I32))) return s;
  if ((a = dk__axis(x, c->i[0])) < 0)
    return dk__op_error(c, DK_ERR_INVALID, "", "axis %lld is out of range for 'x' with %d dims", (long long)c->i[0], x->ndim);
  ok = o->ndim == x->ndim - 1 + ids->ndim;
  for (i = 0; ok && i < o->ndim; i++) {
    int64_t want = i < a ? x->shape[i] : i < a + ids->ndim ? ids->shape[i - a] : x->shape[i - ids->ndim + 1];
    ok = o->shape[i] == want;
  }
  if (!ok) return dk__op_error(c, DK_ERR_SHAPE, "", "'out' must have the shape of 'x' with axis %d replaced by the shape of 'ids'", a);
  if (x->shape[a] == 0 && dk__numel(ids->ndim, ids->shape) && dk__numel(o->ndim, o->shape))
    return dk__op_error(c, DK_ERR_INVALID, "", "axis %d of 'x' is empty: no id can select from it", a);
  c->i[0] = a;
  return DK_OK;
}

/* dtype then shape rules, per op, in dk_op order */
static const dk__check_fn dk__checks[DK_OP_COUNT] = {
  dk__check_binary, dk__check_binary, dk__check_binary, dk__check_binary, dk__check_unary,
  dk__check_unary, dk__check_unary, dk__check_unary, dk__check_unary, dk__check_unary, dk__check_unary, dk__check_unary,
  dk__check_swiglu,
  dk__check_norm, dk__check_norm, dk__check_softmax, dk__check_softmax,
  dk__check_matmul, dk__check_linear, dk__check_embedding, dk__check_rope, dk__check_concat, dk__check_copy,
  dk__check_transpose, dk__check_reduce_last, dk__check_reduce_last, dk__check_attention,
  dk__check_reduce, dk__check_reduce, dk__check_reduce, dk__check_reduce, dk__check_reduce, dk__check_reduce,
  dk__check_math, dk__check_math, dk__check_math, dk__check_math, dk__check_math, dk__check_math, dk__check_math,
  dk__check_math, dk__check_binary, dk__check_softmax_axis, dk__check_softmax_axis, dk__check_where,
  dk__check_cumsum, dk__check_topk, dk__check_index_select, dk__check_rmsnorm_linear, dk__check_swiglu_linear,
  dk__check_index_copy, dk__check_attention_pos, dk__check_attention_window, dk__check_attention_pos_window,
};

/* The one entry point of every op. */
/* ==== profiling (dk_profile) ==============================================
 * A row per (op, device, operands); ops on a GPU leave a pending pair of
 * marks per call, turned into seconds when that device next synchronizes.
 * Everything here is under dk__prof_lock, taken inside a device's lock. */
#define DK__PROF_ROWS 512
#define DK__PROF_KEY 200
typedef struct {
  int op;
  dk_device dev;
  char key[DK__PROF_KEY];   /* "out f32[1,2688]  x f32[1,1792]  w f16[2688,1792]" */
  uint64_t calls, untimed;
  double sec;
} dk__prof_row;
typedef struct { int row, a, b; } dk__prof_pend;
static struct {
  int on, env_done, print_at_shutdown;
  int marked;   /* a backend has queued marks: from then on syncs read them (before, a sync costs one load) */
  dk__prof_row rows[DK__PROF_ROWS];
  int nrows;
  uint64_t lost;   /* calls of a kind past the table's DK__PROF_ROWS rows */
  dk__prof_pend *pend[DK_BACKEND_COUNT][DK_MAX_DEVICES];
  int npend[DK_BACKEND_COUNT][DK_MAX_DEVICES], cap[DK_BACKEND_COUNT][DK_MAX_DEVICES];
} dk__prof;
static pthread_mutex_t dk__prof_lock = PTHREAD_MUTEX_INITIALIZER;

/* a monotonic clock where the including program's feature macros declare
 * one, else the wall clock (C99 and C++11 have none of their own) */
static double dk__prof_clock(void) {
#if defined(CLOCK_MONOTONIC)
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#else
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
#endif
}

DEVKIT_API dk_status dk_profile(int on) {
  __atomic_store_n(&dk__prof.env_done, 1, __ATOMIC_RELAXED);   /* the call wins over DEVKIT_PROFILE */
  __atomic_store_n(&dk__prof.on, on ? 1 : 0, __ATOMIC_RELEASE);
  return DK_OK;
}

static int dk__prof_enabled(void) {
  if (!__atomic_load_n(&dk__prof.env_done, __ATOMIC_ACQUIRE)) {
    const char *e = getenv("DEVKIT_PROFILE");
    pthread_mutex_lock(&dk__prof_lock);
    if (!dk__prof.env_done) {
      if (e && e[0] && strcmp(e, "0") != 0) {
        dk__prof.on = 1;
        dk__prof.print_at_shutdown = 1;
      }
      __atomic_store_n(&dk__prof.env_done, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&dk__prof_lock);
  }
  return __atomic_load_n(&dk__prof.on, __ATOMIC_ACQUIRE);
}

/* the row of this call (made on first use), or -1 when the table is full */
static int dk__prof_row_of(const dk_call *c) {
  const dk__opinfo *oi = &dk__ops[c->op];
  char key[DK__PROF_KEY], sh[96];
  dk__sb sb;
  int i, n = oi->n_out + oi->n_in;
  dk__sb_init(&sb, key, sizeof key);
  for (i = 0; i < n; i++) {
    if (!c->t[i]) continue;
    dk__shape_str(c->t[i], sh, sizeof sh);
    /* attention's k and v are the cache up to the current position: keyed
     * by that length, a decode would make a row per token */
    if ((c->op == DK_OP_ATTENTION || c->op == DK_OP_ATTENTION_WINDOW) && (!strcmp(oi->roles[i], "k") || !strcmp(oi->roles[i], "v")) && c->t[i]->ndim > 1) {
      char *comma = strchr(sh, ',');
      if (comma) memmove(sh + 2, comma, strlen(comma) + 1), sh[1] = '*';
    }
    dk__sbf(&sb, "%s%s %s%s", sb.len ? "  " : "", oi->roles[i], dk_dtype_name(c->t[i]->dtype), sh);
  }
  for (i = 0; i < dk__prof.nrows; i++) {
    const dk__prof_row *r = &dk__prof.rows[i];
    if (r->op == (int)c->op && dk_device_equal(r->dev, c->dev) && !strcmp(r->key, key)) return i;
  }
  if (dk__prof.nrows == DK__PROF_ROWS) return -1;
  i = dk__prof.nrows++;
  memset(&dk__prof.rows[i], 0, sizeof dk__prof.rows[i]);
  dk__prof.rows[i].op = (int)c->op;
  dk__prof.rows[i].dev = c->dev;
  memcpy(dk__prof.rows[i].key, key, sizeof key);
  return i;
}

/* one call done: host seconds (sec >= 0), or a pair of device marks */
static void dk__prof_record(const dk_call *c, double sec, int a, int b) {
  int row, bk = (int)c->dev.backend, di = c->dev.index;
  pthread_mutex_lock(&dk__prof_lock);
  row = dk__prof_row_of(c);
  if (row < 0) {
    dk__prof.lost++;
  } else {
    dk__prof.rows[row].calls++;
    if (sec >= 0) {
      dk__prof.rows[row].sec += sec;
    } else if (a < 0 || b < 0) {
      dk__prof.rows[row].untimed++;
    } else {
      if (dk__prof.npend[bk][di] == dk__prof.cap[bk][di]) {
        int cap = dk__prof.cap[bk][di] ? 2 * dk__prof.cap[bk][di] : 256;
        dk__prof_pend *p = (dk__prof_pend *)realloc(dk__prof.pend[bk][di], (size_t)cap * sizeof *p);
        if (p) { dk__prof.pend[bk][di] = p; dk__prof.cap[bk][di] = cap; }
      }
      if (dk__prof.npend[bk][di] < dk__prof.cap[bk][di]) {
        dk__prof_pend *p = &dk__prof.pend[bk][di][dk__prof.npend[bk][di]++];
        p->row = row; p->a = a; p->b = b;
      } else {
        dk__prof.rows[row].untimed++;
      }
    }
  }
  pthread_mutex_unlock(&dk__prof_lock);
}

/* device d has finished everything queued (under its lock): read the marks */
static void dk__prof_synced(dk_device d) {
  const dk_backend_impl *impl = dk__reg[d.backend].impl;
  int i, bk = (int)d.backend, di = d.index;
  if (!__atomic_load_n(&dk__prof.marked, __ATOMIC_ACQUIRE) || !impl || !impl->prof_elapsed || (unsigned)di >= DK_MAX_DEVICES)
    return;
  pthread_mutex_lock(&dk__prof_lock);
  if (dk__prof.npend[bk][di]) {
    for (i = 0; i < dk__prof.npend[bk][di]; i++) {
      const dk__prof_pend *p = &dk__prof.pend[bk][di][i];
      const double sec = impl->prof_elapsed(d, p->a, p->b);
      if (sec >= 0) dk__prof.rows[p->row].sec += sec;
      else dk__prof.rows[p->row].untimed++;
    }
    dk__prof.npend[bk][di] = 0;
  }
  pthread_mutex_unlock(&dk__prof_lock);
  if (impl->prof_reset) impl->prof_reset(d);
}

DEVKIT_API size_t dk_profile_report(char *buf, size_t len) {
  dk__sb o;
  int idx[DK__PROF_ROWS], n, i, j;
  double total = 0;
  uint64_t calls = 0, untimed = 0, pending = 0;
  dk__sb_init(&o, buf, len);
  pthread_mutex_lock(&dk__prof_lock);
  n = dk__prof.nrows;
  for (i = 0; i < n; i++) {
    idx[i] = i;
    total += dk__prof.rows[i].sec;
    calls += dk__prof.rows[i].calls;
    untimed += dk__prof.rows[i].untimed;
  }
  for (i = 0; i < DK_BACKEND_COUNT; i++)
    for (j = 0; j < DK_MAX_DEVICES; j++) pending += (uint64_t)dk__prof.npend[i][j];
  for (i = 1; i < n; i++)   /* insertion sort, longest first: a table is a few hundred rows at most */
    for (j = i; j > 0 && dk__prof.rows[idx[j]].sec > dk__prof.rows[idx[j - 1]].sec; j--) {
      int t = idx[j]; idx[j] = idx[j - 1]; idx[j - 1] = t;
    }
  dk__sbf(&o, "devkit profile: %llu op calls, %.3f ms of op time", (unsigned long long)calls, total * 1e3);
  if (pending) dk__sbf(&o, ", %llu calls not yet read back (no dk_sync since)", (unsigned long long)pending);
  if (untimed) dk__sbf(&o, ", %llu calls untimed", (unsigned long long)untimed);
  if (dk__prof.lost) dk__sbf(&o, ", %llu calls past the table's %d rows", (unsigned long long)dk__prof.lost, DK__PROF_ROWS);
  /* by op and device: the rows of one op summed (a group's first row is
   * its longest, so the groups come out longest first too) */
  dk__sbf(&o, "\nby op:\n%10s %6s %8s %10s  %-9s %s\n", "total ms", "share", "calls", "us/call", "device", "op");
  for (i = 0; i < n; i++) {
    const dk__prof_row *r = &dk__prof.rows[idx[i]];
    double sec = 0;
    uint64_t gc = 0, gu = 0;
    for (j = 0; j < i; j++)
      if (dk__prof.rows[idx[j]].op == r->op && dk_device_equal(dk__prof.rows[idx[j]].dev, r->dev)) break;
    if (j < i) continue;   /* summed with an earlier row */
    for (j = i; j < n; j++) {
      const dk__prof_row *q = &dk__prof.rows[idx[j]];
      if (q->op != r->op || !dk_device_equal(q->dev, r->dev)) continue;
      sec += q->sec; gc += q->calls; gu += q->untimed;
    }
    dk__sbf(&o, "%10.3f %5.1f%% %8llu %10.2f  %-9s %s\n", sec * 1e3, total > 0 ? 100.0 * sec / total : 0.0,
                 (unsigned long long)gc, gc > gu ? sec * 1e6 / (double)(gc - gu) : 0.0, dk_device_name(r->dev),
                 dk__ops[r->op].name);
  }
  dk__sbf(&o, "\nby op and operands:\n%10s %6s %8s %10s  %-9s %-20s %s\n", "total ms", "share", "calls", "us/call",
               "device", "op", "operands");
  for (i = 0; i < n; i++) {
    const dk__prof_row *r = &dk__prof.rows[idx[i]];
    const uint64_t timed = r->calls - r->untimed;
    dk__sbf(&o, "%10.3f %5.1f%% %8llu %10.2f  %-9s %-20s %s\n", r->sec * 1e3, total > 0 ? 100.0 * r->sec / total : 0.0,
                 (unsigned long long)r->calls, timed ? r->sec * 1e6 / (double)timed : 0.0, dk_device_name(r->dev),
                 dk__ops[r->op].name, r->key);
  }
  pthread_mutex_unlock(&dk__prof_lock);
  return o.want;
}

DEVKIT_API void dk_profile_reset(void) {
  int i, j;
  pthread_mutex_lock(&dk__prof_lock);
  dk__prof.nrows = 0;
  dk__prof.lost = 0;
  for (i = 0; i < DK_BACKEND_COUNT; i++)
    for (j = 0; j < DK_MAX_DEVICES; j++) dk__prof.npend[i][j] = 0;   /* their marks are freed at the next sync */
  pthread_mutex_unlock(&dk__prof_lock);
}

/* DEVKIT_PROFILE=1: the table on stderr when the kit shuts down */
static void dk__prof_at_shutdown(void) {
  size_t n;
  char *buf;
  int i, j;
  if (dk__prof.print_at_shutdown && dk__prof.nrows && (n = dk_profile_report(NULL, 0) + 1) && (buf = (char *)malloc(n))) {
    dk_profile_report(buf, n);
    fputs(buf, stderr);
    free(buf);
  }
  /* the marks of devices about to close mean nothing to the next kit */
  pthread_mutex_lock(&dk__prof_lock);
  for (i = 0; i < DK_BACKEND_COUNT; i++)
    for (j = 0; j < DK_MAX_DEVICES; j++) {
      free(dk__prof.pend[i][j]);
      dk__prof.pend[i][j] = NULL;
      dk__prof.npend[i][j] = dk__prof.cap[i][j] = 0;
    }
  pthread_mutex_unlock(&dk__prof_lock);
}

/* the backend's op, timed when profiling (under the device's lock) */
static dk_status dk__run_op(const dk_backend_impl *impl, dk_call *c) {
  dk_status s;
  double t0;
  int a, b;
  if (!dk__prof_enabled()) return impl->ops[c->op](c);
  if (impl->prof_mark && (a = impl->prof_mark(c->dev)) != -2) {
    if (a >= 0) __atomic_store_n(&dk__prof.marked, 1, __ATOMIC_RELEASE);
    s = impl->ops[c->op](c);
    b = a >= 0 ? impl->prof_mark(c->dev) : -1;
    dk__prof_record(c, -1.0, a, b);
    return s;
  }
  t0 = dk__prof_clock();
  s = impl->ops[c->op](c);
  if (s == DK_OK) s = impl->sync(c->dev);
  dk__prof_record(c, dk__prof_clock() - t0, -1, -1);
  return s;
}

/* the op under the device's lock, named in the errors it reports */
static dk_status dk__run_call(const dk_backend_impl *impl, dk_call *c) {
  dk_status s;
  dk__cur_call = c;
  s = dk__run_op(impl, c);
  dk__cur_call = NULL;
  return s;
}

/* dk_rmsnorm_linear and dk_swiglu_linear on a backend that runs them as
 * their two ops: the call of the first op (rmsnorm or swiglu) into xn and of
 * the linear from xn, where xn is a header over the backend's scratch st at
 * byte off (the first input's dtype and shape, contiguous, as the tensor the
 * op alone would write), so the result is the two ops' bit for bit */
static void dk__fused_linear_split(const dk_call *c, dk_storage *st, size_t off, dk_tensor *xn, dk_call *first,
                                   dk_call *lin) {
  *xn = *c->t[1];
  xn->st = st;
  xn->offset = off;
  xn->is_view = 0;
  dk__contig_strides(xn);
  snprintf(xn->name, sizeof xn->name, "%s's %s", dk__op_name(c->op), c->op == DK_OP_SWIGLU_LINEAR ? "swiglu" : "normed x");
  *first = *c;
  first->op = c->op == DK_OP_SWIGLU_LINEAR ? DK_OP_SWIGLU : DK_OP_RMSNORM;
  first->t[0] = xn; first->t[1] = c->t[1]; first->t[2] = c->t[2]; first->t[3] = first->t[4] = NULL;
  *lin = *c;
  lin->op = DK_OP_LINEAR;
  lin->t[0] = c->t[0]; lin->t[1] = xn; lin->t[2] = c->t[3]; lin->t[3] = c->t[4]; lin->t[4] = NULL;
}

static dk_status dk__graph_add(const dk_backend_impl *impl, dk_graph *g, dk_call *c);

static dk_status dk__dispatch(dk_call *c) {
  const dk__opinfo *oi = &dk__ops[c->op];
  const dk_backend_impl *impl;
  int n = oi->n_out + oi->n_in, i, j, first = -1;
  dk_status s;
  dk_device d;
  /* 1. present, and live: not freed, not from before a dk_shutdown. Checked
   * before anything that would initialize the kit (a live tensor means the
   * kit that made it is running) and without touching device memory. */
  for (i = 0; i < n; i++) {
    if (c->t[i]) {
      if (first < 0) first = i;
      if (!DK__IS_LIVE(c->t[i])) return dk__tensor_dead(oi->name, oi->roles[i], c->t[i]);
      continue;
    }
    if (!((oi->optional >> i) & 1))
      return dk__op_error(c, DK_ERR_INVALID, "", "operand '%s' is NULL", oi->roles[i]);
  }
  d = c->t[first]->device;
  for (i = 0; i < n; i++)
    if (c->t[i] && !dk__device_valid(c->t[i]->device))
      return dk__op_error(c, DK_ERR_NO_DEVICE, "", "operand '%s' is on %s, which does not exist (after dk_shutdown?)",
                          oi->roles[i], dk_device_name(c->t[i]->device));
  /* 2. one backend, 3. one device */
  for (i = 0; i < n; i++)
    if (c->t[i] && c->t[i]->device.backend != d.backend) return dk__mismatch(c, 1);
  for (i = 0; i < n; i++)
    if (c->t[i] && c->t[i]->device.index != d.index) return dk__mismatch(c, 0);
  c->dev = d;
  impl = dk__reg[d.backend].impl;
  /* 4. dtypes (the op's own rules, then what this backend has) and 5. shapes */
  if ((s = dk__checks[c->op](c)) != DK_OK) return s;
  if (!impl->ops[c->op])
    return dk__op_error(c, DK_ERR_UNSUPPORTED, impl->missing[c->op] ? impl->missing[c->op] : "",
                        "not implemented on the %s backend (%s)", dk_backend_name(d.backend), dk_device_name(d));
  if (!((impl->dtypes[c->op] >> c->t[oi->primary]->dtype) & 1))
    return dk__op_error(c, DK_ERR_UNSUPPORTED, "", "the %s backend has no %s version for %s '%s'",
                        dk_backend_name(d.backend), dk_dtype_name(c->t[oi->primary]->dtype), oi->roles[oi->primary],
                        c->t[oi->primary]->name);
  if (oi->secondary >= 0 && c->t[oi->secondary] && !((impl->wdtypes[c->op] >> c->t[oi->secondary]->dtype) & 1))
    return dk__op_error(c, DK_ERR_UNSUPPORTED, "", "the %s backend has no version for a %s %s ('%s')",
                        dk_backend_name(d.backend), dk_dtype_name(c->t[oi->secondary]->dtype), oi->roles[oi->secondary],
                        c->t[oi->secondary]->name);
  /* layout: strided views only where the op takes them */
  for (i = 0; i < n; i++)
    if (c->t[i] && !((oi->strided_ok >> i) & 1) && !dk_tensor_is_contiguous(c->t[i]))
      return dk__op_error(c, DK_ERR_SHAPE, "make it contiguous with dk_copy into a new tensor",
                          "'%s' is a strided view (a narrow along an inner dimension); this op takes contiguous operands",
                          oi->roles[i]);
  /* outputs must not overlap inputs (except the same memory, where allowed) */
  for (i = 0; i < oi->n_out; i++)
    for (j = oi->n_out; j < n; j++) {
      if (!c->t[i] || !c->t[j] || !dk__overlaps(c->t[i], c->t[j])) continue;
      if (oi->alias_ok && dk__same_layout(c->t[i], c->t[j])) continue;
      return dk__op_error(c, DK_ERR_INVALID, "use a separate output tensor",
                          "output '%s' overlaps input '%s'%s", oi->roles[i], oi->roles[j],
                          oi->alias_ok ? " without being the same memory" : "; this op cannot work in place");
    }
  /* nothing to write: done, without the backend, whose loops then never
   * meet an empty tensor's other dims (they may be as large as int64 goes) */
  for (i = 0; i < oi->n_out; i++)
    if (dk__numel(c->t[i]->ndim, c->t[i]->shape)) break;
  if (i == oi->n_out) return DK_OK;
  dk__lock(d);
  if (dk__reg[d.backend].dev[d.index].rec) s = dk__graph_add(impl, dk__reg[d.backend].dev[d.index].rec, c);
  else s = dk__run_call(impl, c);
  dk__unlock(d);
  return s;
}

/* ---- record and replay ------------------------------------------------------
 * A graph is the checked calls, each with copies of its operands' headers
 * (the caller's may be freed, views especially) that hold a reference on
 * their storage, so the memory every call uses outlives the caller's
 * tensors. Replay hands the calls to the backend as dk__dispatch would. */
#define DK__GRAPH_LIVE 0x68707267u    /* "grph" */
struct dk_graph {
  uint32_t magic, gen;
  dk_device dev;
  int n, cap;
  dk_call *calls;
  void *native;       /* the backend's own recording (graph_begin), or NULL */
  int native_broken;  /* an op failed into it: dropped at dk_graph_end */
};

static void dk__graph_drop_call(dk_call *k) {
  int j;
  for (j = 0; j < DK_MAX_OPERANDS; j++)
    if (k->t[j]) {
      dk__storage_release(k->t[j]->st);
      free(k->t[j]);
      k->t[j] = NULL;
    }
}

/* the native recording goes first: it may wait for the device to finish
 * with memory the calls' references keep */
static void dk__graph_drop_native(dk_graph *g, int gone) {
  if (g->native) dk__reg[g->dev.backend].impl->graph_free(g->dev, g->native, gone);
  g->native = NULL;
}

static void dk__graph_release(dk_graph *g) {
  int i, gone = g->gen != __atomic_load_n(&dk__gen, __ATOMIC_RELAXED) || !dk__device_valid(g->dev);
  if (g->native && !gone) {
    dk__lock(g->dev);
    dk__graph_drop_native(g, 0);
    dk__unlock(g->dev);
  }
  dk__graph_drop_native(g, 1);
  for (i = 0; i < g->n; i++) dk__graph_drop_call(&g->calls[i]);
  free(g->calls);
  g->magic = 0;
  free(g);
}

/* under the device's lock: keep the call, and with a native recording
 * have the backend record it there */
static dk_status dk__graph_add(const dk_backend_impl *impl, dk_graph *g, dk_call *c) {
  dk_call *k;
  dk_status s;
  int j;
  if (g->n == g->cap) {
    int cap = g->cap ? 2 * g->cap : 64;
    dk_call *nc = (dk_call *)realloc(g->calls, sizeof *nc * (size_t)cap);
    if (!nc) return dk__op_error(c, DK_ERR_OUT_OF_MEMORY, "", "out of host memory for the graph being recorded");
    g->calls = nc;
    g->cap = cap;
  }
  k = &g->calls[g->n];
  *k = *c;
  for (j = 0; j < DK_MAX_OPERANDS; j++) {
    if (!c->t[j]) continue;
    if (!(k->t[j] = (dk_tensor *)malloc(sizeof *k->t[j]))) {
      /* the copies made so far go; the rest are still the caller's */
      while (j < DK_MAX_OPERANDS) k->t[j++] = NULL;
      dk__graph_drop_call(k);
      return dk__op_error(c, DK_ERR_OUT_OF_MEMORY, "", "out of host memory for the graph being recorded");
    }
    *k->t[j] = *c->t[j];
    k->t[j]->qnext = NULL;
    __atomic_add_fetch(&k->t[j]->st->refs, 1, __ATOMIC_ACQ_REL);
  }
  if (g->native && !g->native_broken) {
    dk__cur_call = k;
    s = impl->ops[k->op](k);
    dk__cur_call = NULL;
    if (s != DK_OK) {
      /* part of the op may be in the recording: it is dropped at the end,
       * and the op's error is the caller's */
      g->native_broken = 1;
      dk__graph_drop_call(k);
      return s;
    }
  }
  g->n++;
  return DK_OK;
}

DEVKIT_API dk_status dk_graph_begin(dk_device d) {
  dk__devslot *ds;
  dk_graph *g;
  if (!dk__device_valid(d)) return dk__no_device("dk_graph_begin", d);
  if (!(g = (dk_graph *)calloc(1, sizeof *g))) return dk__error(DK_ERR_OUT_OF_MEMORY, "dk_graph_begin: out of host memory");
  g->magic = DK__GRAPH_LIVE;
  g->gen = __atomic_load_n(&dk__gen, __ATOMIC_RELAXED);
  g->dev = d;
  ds = &dk__reg[d.backend].dev[d.index];
  dk__lock(d);
  if (ds->rec) {
    dk__unlock(d);
    free(g);
    return dk__error(DK_ERR_INVALID, "dk_graph_begin: %s is already recording a graph; end that one with dk_graph_end",
                     dk_device_name(d));
  }
  /* profiled ops are timed one by one, so a profiled recording is kept as
   * calls only */
  if (dk__reg[d.backend].impl->graph_begin && !dk__prof_enabled()) g->native = dk__reg[d.backend].impl->graph_begin(d);
  __atomic_store_n(&ds->rec, g, __ATOMIC_RELEASE);
  dk__unlock(d);
  return DK_OK;
}

DEVKIT_API dk_status dk_graph_end(dk_device d, dk_graph **out) {
  dk__devslot *ds;
  dk_graph *g;
  if (!out) return dk__error(DK_ERR_INVALID, "dk_graph_end: out is NULL");
  *out = NULL;
  if (!dk__device_valid(d)) return dk__no_device("dk_graph_end", d);
  ds = &dk__reg[d.backend].dev[d.index];
  dk__lock(d);
  g = ds->rec;
  __atomic_store_n(&ds->rec, NULL, __ATOMIC_RELEASE);
  if (g && g->native && (g->native_broken || dk__reg[d.backend].impl->graph_end(d, g->native) != DK_OK))
    dk__graph_drop_native(g, 0);   /* the calls remain, and are re-run */
  dk__unlock(d);
  if (!g) return dk__error(DK_ERR_INVALID, "dk_graph_end: %s is not recording (start with dk_graph_begin)", dk_device_name(d));
  *out = g;
  return DK_OK;
}

static dk_status dk__graph_usable(const char *what, const dk_graph *g) {
  if (!g) return dk__error(DK_ERR_INVALID, "%s: the graph is NULL", what);
  if (g->magic != DK__GRAPH_LIVE) return dk__error(DK_ERR_INVALID, "%s: not a graph (freed already?)", what);
  if (g->gen != __atomic_load_n(&dk__gen, __ATOMIC_RELAXED))
    return dk__error(DK_ERR_INVALID, "%s: the graph was recorded on %s before dk_shutdown, which released its device; "
                     "record it again", what, dk_device_name(g->dev));
  return DK_OK;
}

DEVKIT_API dk_status dk_graph_replay(dk_graph *g) {
  const dk_backend_impl *impl;
  dk_status s;
  int i;
  if ((s = dk__graph_usable("dk_graph_replay", g)) != DK_OK) return s;
  if (!dk__device_valid(g->dev)) return dk__no_device("dk_graph_replay", g->dev);
  impl = dk__reg[g->dev.backend].impl;
  dk__lock(g->dev);
  if ((s = dk__recording("dk_graph_replay", g->dev)) != DK_OK) {}
  else if (g->native && !dk__prof_enabled()) s = impl->graph_replay(g->dev, g->native);
  else
    for (i = 0; i < g->n && s == DK_OK; i++) s = dk__run_call(impl, &g->calls[i]);
  dk__unlock(g->dev);
  return s;
}

DEVKIT_API int dk_graph_ops(const dk_graph *g) { return g && g->magic == DK__GRAPH_LIVE ? g->n : 0; }
DEVKIT_API int dk_graph_native(const dk_graph *g) { return g && g->magic == DK__GRAPH_LIVE && g->native; }

DEVKIT_API void dk_graph_free(dk_graph *g) {
  if (!g) return;
  if (g->magic != DK__GRAPH_LIVE) {
    dk__error(DK_ERR_INVALID, "dk_graph_free: not a graph (freed already?)");
    return;
  }
  /* after dk_shutdown the storages' device memory is gone already, and
   * releasing them frees only their records (as dk_tensor_free does) */
  dk__graph_release(g);
}

/* ---- the public op functions: pack the call, dispatch ------------------- */

static void dk__call_init(dk_call *c, dk_op op) {
  memset(c, 0, sizeof *c);
  c->op = op;
}
#define DK__CAST(t) ((dk_tensor *)(t))

static dk_status dk__op3(dk_op op, dk_tensor *o, const dk_tensor *a, const dk_tensor *b) {
  dk_call c;
  dk__call_init(&c, op);
  c.t[0] = o; c.t[1] = DK__CAST(a); c.t[2] = DK__CAST(b);
  return dk__dispatch(&c);
}
static dk_status dk__op2f(dk_op op, dk_tensor *o, const dk_tensor *x, float f) {
  dk_call c;
  dk__call_init(&c, op);
  c.t[0] = o; c.t[1] = DK__CAST(x); c.f[0] = f;
  return dk__dispatch(&c);
}

DEVKIT_API dk_status dk_add(dk_tensor *o, const dk_tensor *a, const dk_tensor *b) { return dk__op3(DK_OP_ADD, o, a, b); }
DEVKIT_API dk_status dk_sub(dk_tensor *o, const dk_tensor *a, const dk_tensor *b) { return dk__op3(DK_OP_SUB, o, a, b); }
DEVKIT_API dk_status dk_mul(dk_tensor *o, const dk_tensor *a, const dk_tensor *b) { return dk__op3(DK_OP_MUL, o, a, b); }
DEVKIT_API dk_status dk_div(dk_tensor *o, const dk_tensor *a, const dk_tensor *b) { return dk__op3(DK_OP_DIV, o, a, b); }
DEVKIT_API dk_status dk_scale(dk_tensor *o, const dk_tensor *x, float s) { return dk__op2f(DK_OP_SCALE, o, x, s); }
DEVKIT_API dk_status dk_silu(dk_tensor *o, const dk_tensor *x) { return dk__op2f(DK_OP_SILU, o, x, 0); }
DEVKIT_API dk_status dk_gelu(dk_tensor *o, const dk_tensor *x) { return dk__op2f(DK_OP_GELU, o, x, 0); }
DEVKIT_API dk_status dk_gelu_tanh(dk_tensor *o, const dk_tensor *x) { return dk__op2f(DK_OP_GELU_TANH, o, x, 0); }
DEVKIT_API dk_status dk_relu(dk_tensor *o, const dk_tensor *x) { return dk__op2f(DK_OP_RELU, o, x, 0); }
DEVKIT_API dk_status dk_sigmoid(dk_tensor *o, const dk_tensor *x) { return dk__op2f(DK_OP_SIGMOID, o, x, 0); }
DEVKIT_API dk_status dk_tanh(dk_tensor *o, const dk_tensor *x) { return dk__op2f(DK_OP_TANH, o, x, 0); }
DEVKIT_API dk_status dk_exp(dk_tensor *o, const dk_tensor *x) { return dk__op2f(DK_OP_EXP, o, x, 0); }
DEVKIT_API dk_status dk_swiglu(dk_tensor *o, const dk_tensor *g, const dk_tensor *u) { return dk__op3(DK_OP_SWIGLU, o, g, u); }
DEVKIT_API dk_status dk_softmax(dk_tensor *o, const dk_tensor *x) { return dk__op2f(DK_OP_SOFTMAX, o, x, 0); }
DEVKIT_API dk_status dk_matmul(dk_tensor *o, const dk_tensor *a, const dk_tensor *b) { return dk__op3(DK_OP_MATMUL, o, a, b); }
DEVKIT_API dk_status dk_embedding(dk_tensor *o, const dk_tensor *t, const dk_tensor *ids) { return dk__op3(DK_OP_EMBEDDING, o, t, ids); }
DEVKIT_API dk_status dk_copy(dk_tensor *d, const dk_tensor *s) { return dk__op2f(DK_OP_COPY, d, s, 0); }
DEVKIT_API dk_status dk_argmax(dk_tensor *o, const dk_tensor *x) { return dk__op2f(DK_OP_ARGMAX, o, x, 0); }

DEVKIT_API dk_status dk_rmsnorm(dk_tensor *o, const dk_tensor *x, const dk_tensor *w, float eps) {
  dk_call c;
  dk__call_init(&c, DK_OP_RMSNORM);
  c.t[0] = o; c.t[1] = DK__CAST(x); c.t[2] = DK__CAST(w); c.f[0] = eps;
  return dk__dispatch(&c);
}
DEVKIT_API dk_status dk_layernorm(dk_tensor *o, const dk_tensor *x, const dk_tensor *w, const dk_tensor *b, float eps) {
  dk_call c;
  dk__call_init(&c, DK_OP_LAYERNORM);
  c.t[0] = o; c.t[1] = DK__CAST(x); c.t[2] = DK__CAST(w); c.t[3] = DK__CAST(b); c.f[0] = eps;
  return dk__dispatch(&c);
}
DEVKIT_API dk_status dk_softmax_masked(dk_tensor *o, const dk_tensor *x, float scale, int causal_offset) {
  dk_call c;
  dk__call_init(&c, DK_OP_SOFTMAX_MASKED);
  c.t[0] = o; c.t[1] = DK__CAST(x); c.f[0] = scale; c.i[0] = causal_offset;
  return dk__dispatch(&c);
}
DEVKIT_API dk_status dk_linear(dk_tensor *o, const dk_tensor *x, const dk_tensor *w, const dk_tensor *bias) {
  dk_call c;
  dk__call_init(&c, DK_OP_LINEAR);
  c.t[0] = o; c.t[1] = DK__CAST(x); c.t[2] = DK__CAST(w); c.t[3] = DK__CAST(bias);
  return dk__dispatch(&c);
}
DEVKIT_API dk_status dk_rmsnorm_linear(dk_tensor *o, const dk_tensor *x, const dk_tensor *norm_w, const dk_tensor *w,
                                       const dk_tensor *bias, float eps) {
  dk_call c;
  dk__call_init(&c, DK_OP_RMSNORM_LINEAR);
  c.t[0] = o; c.t[1] = DK__CAST(x); c.t[2] = DK__CAST(norm_w); c.t[3] = DK__CAST(w); c.t[4] = DK__CAST(bias);
  c.f[0] = eps;
  return dk__dispatch(&c);
}
DEVKIT_API dk_status dk_swiglu_linear(dk_tensor *o, const dk_tensor *gate, const dk_tensor *up, const dk_tensor *w,
                                      const dk_tensor *bias) {
  dk_call c;
  dk__call_init(&c, DK_OP_SWIGLU_LINEAR);
  c.t[0] = o; c.t[1] = DK__CAST(gate); c.t[2] = DK__CAST(up); c.t[3] = DK__CAST(w); c.t[4] = DK__CAST(bias);
  return dk__dispatch(&c);
}
DEVKIT_API dk_status dk_rope(dk_tensor *o, const dk_tensor *x, const dk_tensor *pos, int n_rot, float theta, int mode) {
  dk_call c;
  dk__call_init(&c, DK_OP_ROPE);
  c.t[0] = o; c.t[1] = DK__CAST(x); c.t[2] = DK__CAST(pos);
  c.i[0] = n_rot; c.i[1] = mode; c.f[0] = theta;
  return dk__dispatch(&c);
}
DEVKIT_API dk_status dk_concat(dk_tensor *o, const dk_tensor *a, const dk_tensor *b, int dim) {
  dk_call c;
  dk__call_init(&c, DK_OP_CONCAT);
  c.t[0] = o; c.t[1] = DK__CAST(a); c.t[2] = DK__CAST(b); c.i[0] = dim;
  return dk__dispatch(&c);
}
DEVKIT_API dk_status dk_transpose(dk_tensor *o, const dk_tensor *x, const int *perm) {
  dk_call c;
  int i;
  dk__call_init(&c, DK_OP_TRANSPOSE);
  c.t[0] = o; c.t[1] = DK__CAST(x);
  if (!perm) return dk__op_error(&c, DK_ERR_INVALID, "", "perm is NULL");
  for (i = 0; x && i < x->ndim; i++) c.i[i] = perm[i];
  return dk__dispatch(&c);
}
DEVKIT_API dk_status dk_sample(dk_tensor *o, const dk_tensor *logits, float temperature, int top_k, float top_p,
                               uint64_t seed) {
  dk_call c;
  dk__call_init(&c, DK_OP_SAMPLE);
  c.t[0] = o; c.t[1] = DK__CAST(logits);
  c.f[0] = temperature; c.i[0] = top_k; c.f[1] = top_p; c.u = seed;
  return dk__dispatch(&c);
}
/* the four attention ops' call: positions NULL but for the _pos forms
 * (whose check sets i[0] to -1), window 0 but for the _window forms */
static dk_status dk__attention_op(dk_op op, dk_tensor *o, const dk_tensor *q, const dk_tensor *k, const dk_tensor *v,
                                  const dk_tensor *positions, float scale, int causal_offset, int window) {
  dk_call c;
  dk__call_init(&c, op);
  c.t[0] = o; c.t[1] = DK__CAST(q); c.t[2] = DK__CAST(k); c.t[3] = DK__CAST(v); c.t[4] = DK__CAST(positions);
  c.f[0] = scale; c.i[0] = causal_offset; c.i[1] = window;
  return dk__dispatch(&c);
}
DEVKIT_API dk_status dk_attention(dk_tensor *o, const dk_tensor *q, const dk_tensor *k, const dk_tensor *v, float scale,
                                  int causal_offset) {
  return dk__attention_op(DK_OP_ATTENTION, o, q, k, v, NULL, scale, causal_offset, 0);
}
DEVKIT_API dk_status dk_attention_window(dk_tensor *o, const dk_tensor *q, const dk_tensor *k, const dk_tensor *v,
                                         float scale, int causal_offset, int window) {
  return dk__attention_op(DK_OP_ATTENTION_WINDOW, o, q, k, v, NULL, scale, causal_offset, window);
}

static dk_status dk__reduce_op(dk_op op, dk_tensor *o, const dk_tensor *x, const int *axes, int n_axes, int keepdim) {
  dk_call c;
  int i;
  dk__call_init(&c, op);
  c.t[0] = o; c.t[1] = DK__CAST(x);
  if (n_axes < 0 || n_axes > DEVKIT_MAX_DIMS || (n_axes > 0 && !axes))
    return dk__op_error(&c, DK_ERR_INVALID, "", "n_axes is %d with axes %s; it must be 0..%d with the axes given", n_axes,
                        axes ? "given" : "NULL", DEVKIT_MAX_DIMS);
  c.i[0] = n_axes == 0 ? -1 : n_axes;
  c.i[1] = keepdim;
  for (i = 0; i < n_axes; i++) c.i[2 + i] = axes[i];
  return dk__dispatch(&c);
}
DEVKIT_API dk_status dk_reduce_sum(dk_tensor *o, const dk_tensor *x, const int *axes, int n, int keepdim) {
  return dk__reduce_op(DK_OP_REDUCE_SUM, o, x, axes, n, keepdim);
}
DEVKIT_API dk_status dk_reduce_mean(dk_tensor *o, const dk_tensor *x, const int *axes, int n, int keepdim) {
  return dk__reduce_op(DK_OP_REDUCE_MEAN, o, x, axes, n, keepdim);
}
DEVKIT_API dk_status dk_reduce_max(dk_tensor *o, const dk_tensor *x, const int *axes, int n, int keepdim) {
  return dk__reduce_op(DK_OP_REDUCE_MAX, o, x, axes, n, keepdim);
}
DEVKIT_API dk_status dk_reduce_min(dk_tensor *o, const dk_tensor *x, const int *axes, int n, int keepdim) {
  return dk__reduce_op(DK_OP_REDUCE_MIN, o, x, axes, n, keepdim);
}
static dk_status dk__arg_op(dk_op op, dk_tensor *o, const dk_tensor *x, int axis, int keepdim, int last) {
  dk_call c;
  dk__call_init(&c, op);
  c.t[0] = o; c.t[1] = DK__CAST(x);
  c.i[0] = axis; c.i[1] = keepdim; c.i[2] = last != 0;
  return dk__dispatch(&c);
}
DEVKIT_API dk_status dk_argmax_axis(dk_tensor *o, const dk_tensor *x, int axis, int keepdim, int select_last) {
  return dk__arg_op(DK_OP_ARGMAX_AXIS, o, x, axis, keepdim, select_last);
}
DEVKIT_API dk_status dk_argmin_axis(dk_tensor *o, const dk_tensor *x, int axis, int keepdim, int select_last) {
  return dk__arg_op(DK_OP_ARGMIN_AXIS, o, x, axis, keepdim, select_last);
}
DEVKIT_API dk_status dk_sqrt(dk_tensor *o, const dk_tensor *x) { return dk__op2f(DK_OP_SQRT, o, x, 0); }
DEVKIT_API dk_status dk_rsqrt(dk_tensor *o, const dk_tensor *x) { return dk__op2f(DK_OP_RSQRT, o, x, 0); }
DEVKIT_API dk_status dk_log(dk_tensor *o, const dk_tensor *x) { return dk__op2f(DK_OP_LOG, o, x, 0); }
DEVKIT_API dk_status dk_abs(dk_tensor *o, const dk_tensor *x) { return dk__op2f(DK_OP_ABS, o, x, 0); }
DEVKIT_API dk_status dk_neg(dk_tensor *o, const dk_tensor *x) { return dk__op2f(DK_OP_NEG, o, x, 0); }
DEVKIT_API dk_status dk_erf(dk_tensor *o, const dk_tensor *x) { return dk__op2f(DK_OP_ERF, o, x, 0); }
DEVKIT_API dk_status dk_pow_scalar(dk_tensor *o, const dk_tensor *x, float e) { return dk__op2f(DK_OP_POW_SCALAR, o, x, e); }
DEVKIT_API dk_status dk_pow(dk_tensor *o, const dk_tensor *a, const dk_tensor *b) { return dk__op3(DK_OP_POW, o, a, b); }
DEVKIT_API dk_status dk_clamp(dk_tensor *o, const dk_tensor *x, float lo, float hi) {
  dk_call c;
  dk__call_init(&c, DK_OP_CLAMP);
  c.t[0] = o; c.t[1] = DK__CAST(x); c.f[0] = lo; c.f[1] = hi;
  return dk__dispatch(&c);
}
DEVKIT_API dk_status dk_softmax_axis(dk_tensor *o, const dk_tensor *x, int axis) {
  dk_call c;
  dk__call_init(&c, DK_OP_SOFTMAX_AXIS);
  c.t[0] = o; c.t[1] = DK__CAST(x); c.i[0] = axis;
  return dk__dispatch(&c);
}
DEVKIT_API dk_status dk_log_softmax(dk_tensor *o, const dk_tensor *x, int axis) {
  dk_call c;
  dk__call_init(&c, DK_OP_LOG_SOFTMAX);
  c.t[0] = o; c.t[1] = DK__CAST(x); c.i[0] = axis;
  return dk__dispatch(&c);
}
DEVKIT_API dk_status dk_where(dk_tensor *o, const dk_tensor *mask, const dk_tensor *a, const dk_tensor *b) {
  dk_call c;
  dk__call_init(&c, DK_OP_WHERE);
  c.t[0] = o; c.t[1] = DK__CAST(mask); c.t[2] = DK__CAST(a); c.t[3] = DK__CAST(b);
  return dk__dispatch(&c);
}

DEVKIT_API dk_status dk_cumsum(dk_tensor *o, const dk_tensor *x, int axis, int exclusive, int reverse) {
  dk_call c;
  dk__call_init(&c, DK_OP_CUMSUM);
  c.t[0] = o; c.t[1] = DK__CAST(x); c.i[0] = axis; c.i[1] = exclusive != 0; c.i[2] = reverse != 0;
  return dk__dispatch(&c);
}
DEVKIT_API dk_status dk_topk(dk_tensor *values, dk_tensor *indices, const dk_tensor *x, int k, int largest) {
  dk_call c;
  dk__call_init(&c, DK_OP_TOPK);
  c.t[0] = values; c.t[1] = indices; c.t[2] = DK__CAST(x); c.i[0] = k; c.i[1] = largest != 0;
  return dk__dispatch(&c);
}
/* dk_index_select and dk_index_copy: two tensors, ids, an axis */
static dk_status dk__op_ids(dk_op op, dk_tensor *o, const dk_tensor *x, const dk_tensor *ids, int axis) {
  dk_call c;
  dk__call_init(&c, op);
  c.t[0] = o; c.t[1] = DK__CAST(x); c.t[2] = DK__CAST(ids); c.i[0] = axis;
  return dk__dispatch(&c);
}
DEVKIT_API dk_status dk_index_copy(dk_tensor *dst, const dk_tensor *src, const dk_tensor *ids, int axis) {
  return dk__op_ids(DK_OP_INDEX_COPY, dst, src, ids, axis);
}
DEVKIT_API dk_status dk_attention_pos(dk_tensor *o, const dk_tensor *q, const dk_tensor *k, const dk_tensor *v,
                                      const dk_tensor *positions, float scale) {
  return dk__attention_op(DK_OP_ATTENTION_POS, o, q, k, v, positions, scale, -1, 0);
}
DEVKIT_API dk_status dk_attention_pos_window(dk_tensor *o, const dk_tensor *q, const dk_tensor *k, const dk_tensor *v,
                                             const dk_tensor *positions, float scale, int window) {
  return dk__attention_op(DK_OP_ATTENTION_POS_WINDOW, o, q, k, v, positions, scale, -1, window);
}
DEVKIT_API dk_status dk_index_select(dk_tensor *o, const dk_tensor *x, const dk_tensor *ids, int axis) {
  return dk__op_ids(DK_OP_INDEX_SELECT, o, x, ids, axis);
}

DEVKIT_API dk_status dk_slice(dk_tensor *o, const dk_tensor *x, int axis, int64_t start, int64_t step) {
  int a, i;
  int64_t n, m, k, last;
  int32_t *idv;
  dk_tensor *ids = NULL;
  dk_status s;
  if (!o || !x) return dk__error(DK_ERR_INVALID, "dk_slice: %s is NULL", o ? "x" : "out");
  DK__CHECK_LIVE("dk_slice", "x", x);
  DK__CHECK_LIVE("dk_slice", "out", o);
  if ((a = dk__axis(x, axis)) < 0)
    return dk__error(DK_ERR_INVALID, "dk_slice: axis %d is out of range for 'x' '%s' with %d dims", axis, x->name, x->ndim);
  if (o->ndim != x->ndim)
    return dk__error(DK_ERR_SHAPE, "dk_slice: 'out' '%s' has %d dims; it must have x's %d", o->name, o->ndim, x->ndim);
  for (i = 0; i < x->ndim; i++)
    if (i != a && o->shape[i] != x->shape[i])
      return dk__error(DK_ERR_SHAPE, "dk_slice: 'out' '%s' differs from 'x' '%s' in dim %d (%lld, %lld); only axis %d may",
                       o->name, x->name, i, (long long)o->shape[i], (long long)x->shape[i], a);
  if (step == 0) return dk__error(DK_ERR_INVALID, "dk_slice: step 0 selects nothing; give a nonzero step (negative: backwards)");
  n = x->shape[a];
  m = o->shape[a];
  if (start < 0) start += n;
  last = start + (m - 1) * step;
  if (m > 0 && (start < 0 || start >= n || last < 0 || last >= n || m - 1 > (step > 0 ? (n - 1) / step : (n - 1) / -step)))
    return dk__error(DK_ERR_INVALID, "dk_slice: %lld elements from %lld by step %lld run outside axis %d of 'x' '%s' (size %lld)",
                     (long long)m, (long long)start, (long long)step, a, x->name, (long long)n);
  if (m > INT32_MAX || n > INT32_MAX)
    return dk__error(DK_ERR_UNSUPPORTED, "dk_slice: axis %d of 'x' '%s' has %lld elements; i32 ids reach 2^31", a, x->name,
                     (long long)n);
  if (m == 0 || dk_tensor_numel(o) == 0) return DK_OK;
  idv = (int32_t *)malloc(sizeof *idv * (size_t)m);
  if (!idv) return dk__error(DK_ERR_OUT_OF_MEMORY, "dk_slice: no host memory for %lld ids", (long long)m);
  for (k = 0; k < m; k++) idv[k] = (int32_t)(start + k * step);
  s = dk_tensor_new_at(x->device, DK_I32, 1, &m, "dk_slice ids", DK_SITE, &ids);
  if (s == DK_OK) s = dk_tensor_upload(ids, idv, sizeof *idv * (size_t)m);
  if (s == DK_OK) s = dk_index_select(o, x, ids, a);
  free(idv);
  dk_tensor_free(ids);   /* the device keeps it alive until the gather has run */
  return s;
}

/* splitmix64: the same few lines in every backend make the same draw */
DEVKIT_API float dk_sample_uniform(uint64_t seed, int64_t row) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (uint64_t)(row + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (float)(z >> 40) * (1.0f / 16777216.0f);
}

/* ==== transfers =========================================================== */

/* Stage through host memory in chunks, so a large tensor never needs a
 * second full copy on the host. */
static dk_status dk__staged_copy(dk_storage *dst, size_t doff, dk_storage *src, size_t soff, size_t n) {
  const dk_backend_impl *si = dk__reg[src->device.backend].impl, *di = dk__reg[dst->device.backend].impl;
  size_t chunk = n < ((size_t)64 << 20) ? n : ((size_t)64 << 20), done = 0;
  void *buf = malloc(chunk ? chunk : 1);
  dk_status s = DK_OK;
  if (!buf) return dk__error(DK_ERR_OUT_OF_MEMORY, "dk_copy_to: no host memory for a %zu-byte staging buffer", chunk);
  while (done < n && s == DK_OK) {
    size_t k = n - done < chunk ? n - done : chunk;
    dk__lock(src->device);
    s = si->download(src, soff + done, buf, k);
    dk__unlock(src->device);
    if (s != DK_OK) break;
    dk__lock(dst->device);
    s = di->upload(dst, doff + done, buf, k);
    dk__unlock(dst->device);
    done += k;
  }
  free(buf);
  return s;
}

static dk_status dk__transfer(const char *what, dk_tensor *dst, const dk_tensor *src) {
  dk_backend sb = src->device.backend, db = dst->device.backend;
  size_t n = dk_tensor_nbytes(src);
  dk_status s;
  if ((s = dk__recording(what, src->device)) != DK_OK || (s = dk__recording(what, dst->device)) != DK_OK) return s;
  if (!n) return DK_OK;
  if (sb == db) {
    /* the backend orders the copy after the source's pending work */
    if (dk_device_equal(src->device, dst->device)) {
      dk__lock(src->device);
      s = dk__reg[sb].impl->copy(dst->st, dst->offset, src->st, src->offset, n);
      dk__unlock(src->device);
    } else {
      /* lock both in a fixed order so two threads copying both ways cannot deadlock */
      dk_device a = src->device.index < dst->device.index ? src->device : dst->device;
      dk_device b = src->device.index < dst->device.index ? dst->device : src->device;
      dk__lock(a); dk__lock(b);
      s = dk__reg[sb].impl->copy(dst->st, dst->offset, src->st, src->offset, n);
      dk__unlock(b); dk__unlock(a);
    }
    return s;
  }
  if (sb == DK_CPU) {
    dk__lock(dst->device);
    s = dk__reg[db].impl->upload(dst->st, dst->offset, (const char *)src->st->ptr + src->offset, n);
    dk__unlock(dst->device);
    return s;
  }
  if (db == DK_CPU) {
    dk__lock(src->device);
    s = dk__reg[sb].impl->download(src->st, src->offset, (char *)dst->st->ptr + dst->offset, n);
    if (s == DK_OK) dk__prof_synced(src->device);
    dk__unlock(src->device);
    return s;
  }
  return dk__staged_copy(dst->st, dst->offset, src->st, src->offset, n);
}

DEVKIT_API dk_status dk_copy_to(dk_tensor *dst, const dk_tensor *src) {
  dk_status s;
  char a[96], b[96];
  if (!dst || !src) return dk__error(DK_ERR_INVALID, "dk_copy_to: %s is NULL", dst ? "src" : "dst");
  DK__CHECK_LIVE("dk_copy_to", "dst", dst);
  DK__CHECK_LIVE("dk_copy_to", "src", src);
  if (!dk__device_valid(src->device)) return dk__no_device("dk_copy_to", src->device);
  if (!dk__device_valid(dst->device)) return dk__no_device("dk_copy_to", dst->device);
  dk__shape_str(dst, a, sizeof a);
  dk__shape_str(src, b, sizeof b);
  if (dst->dtype != src->dtype || strcmp(a, b))
    return dk__error(DK_ERR_SHAPE,
                     "dk_copy_to: dst '%s' is %s %s but src '%s' is %s %s; dk_copy_to moves bytes between devices and "
                     "needs the same dtype and shape (convert with dk_copy on one device)",
                     dst->name, dk_dtype_name(dst->dtype), a, src->name, dk_dtype_name(src->dtype), b);
  if (!dk_tensor_is_contiguous(dst) || !dk_tensor_is_contiguous(src))
    return dk__error(DK_ERR_SHAPE, "dk_copy_to: '%s' is a strided view; dk_copy it into a contiguous tensor first",
                     dk_tensor_is_contiguous(dst) ? src->name : dst->name);
  if (dst->st == src->st && dk__overlaps(dst, src)) {
    if (dst->offset == src->offset) return DK_OK;
    return dk__error(DK_ERR_INVALID, "dk_copy_to: '%s' and '%s' overlap", dst->name, src->name);
  }
  s = dk__transfer("dk_copy_to", dst, src);
  return s;
}

DEVKIT_API dk_status dk_to_at(const dk_tensor *src, dk_device d, const char *site, dk_tensor **out) {
  dk_tensor *t;
  dk_status s;
  if (!out) return dk__error(DK_ERR_INVALID, "dk_to: out is NULL");
  *out = NULL;
  if (!src) return dk__error(DK_ERR_INVALID, "dk_to: src is NULL");
  DK__CHECK_LIVE("dk_to", "src", src);
  if (!dk__device_valid(d)) return dk__no_device("dk_to", d);
  if (!dk_tensor_is_contiguous(src))
    return dk__error(DK_ERR_SHAPE, "dk_to: '%s' is a strided view; dk_copy it into a contiguous tensor first", src->name);
  if ((s = dk__recording("dk_to", src->device)) != DK_OK || (s = dk__recording("dk_to", d)) != DK_OK) return s;
  if ((s = dk_tensor_new_at(d, src->dtype, src->ndim, src->shape, src->name, site, &t)) != DK_OK) return s;
  if ((s = dk__transfer("dk_to", t, src)) != DK_OK) { dk_tensor_free(t); return s; }
  *out = t;
  return DK_OK;
}
#undef dk_to
DEVKIT_API dk_status dk_to(const dk_tensor *src, dk_device d, dk_tensor **out) { return dk_to_at(src, d, "", out); }
#define dk_to(src, d, out) dk_to_at((src), (d), DK_SITE, (out))

/* ==== placement check ===================================================== */

DEVKIT_API dk_status dk_check_placement(const dk_placement *items, int n, int *n_bad, int *bad) {
  dk__sb sb;
  int i, nb = 0, k = 0, other_backend = 0, name_w = 4;
  if (n_bad) *n_bad = 0;
  if (n < 0 || (n > 0 && !items)) return dk__error(DK_ERR_INVALID, "dk_check_placement: no items");
  for (i = 0; i < n; i++) {
    const dk_tensor *t = items[i].tensor;
    if (!t) return dk__error(DK_ERR_INVALID, "dk_check_placement: item %d has no tensor", i);
    DK__CHECK_LIVE("dk_check_placement", NULL, t);
    if (dk_device_equal(t->device, items[i].expected)) continue;
    nb++;
    other_backend |= t->device.backend != items[i].expected.backend;
    if ((int)strlen(t->name) + 2 > name_w) name_w = (int)strlen(t->name) + 2;
  }
  if (n_bad) *n_bad = nb;
  if (!nb) return DK_OK;
  if (name_w > 48) name_w = 48;
  dk__sb_init(&sb, dk__msg, sizeof dk__msg);
  dk__sbf(&sb, "dk_check_placement: %d of %d tensors are not where they are meant to be:\n", nb, n);
  for (i = 0; i < n; i++) {
    const dk_tensor *t = items[i].tensor;
    char nm[DK_NAME_LEN + 2], sh[96], dev[32];
    if (dk_device_equal(t->device, items[i].expected)) continue;
    if (bad) bad[k] = i;
    k++;
    snprintf(nm, sizeof nm, "'%s'", t->name);
    snprintf(dev, sizeof dev, "%s", dk_device_name(t->device));
    dk__shape_str(t, sh, sizeof sh);
    dk__sbf(&sb, "  %-*s %-4s %-16s on %-9s expected %-9s (%s)\n", name_w, nm, dk_dtype_name(t->dtype), sh, dev,
            dk_device_name(items[i].expected), t->site[0] ? t->site : "site unknown");
  }
  dk__sbf(&sb, "  move each with dk_to(tensor, expected, &moved), or load it onto the expected device");
  return dk__raise(other_backend ? DK_ERR_BACKEND_MISMATCH : DK_ERR_DEVICE_MISMATCH);
}

/* ==== matmul batch addressing, shared by the backends ====================== */

/* For batch index bi of a matmul (after broadcasting), the element offsets of
 * a and b. Batch dims broadcast NumPy-style; 1-D operands have none. */
static void dk__matmul_batch_offsets(const dk_tensor *o, const dk_tensor *a, const dk_tensor *b, int64_t bi,
                                     int64_t *aoff, int64_t *boff) {
  int abat = a->ndim > 2 ? a->ndim - 2 : 0, bbat = b->ndim > 2 ? b->ndim - 2 : 0;
  int nb = abat > bbat ? abat : bbat, i;
  int64_t ao = 0, bo = 0, rem = bi;
  (void)o;
  for (i = nb - 1; i >= 0; i--) {
    int ia = i - (nb - abat), ib = i - (nb - bbat);
    int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    int64_t dn = da > db ? da : db, idx = rem % dn;
    rem /= dn;
    if (ia >= 0 && da != 1) ao += idx * a->stride[ia];
    if (ib >= 0 && db != 1) bo += idx * b->stride[ib];
  }
  *aoff = ao;
  *boff = bo;
}


#include "backends/cpu.h"
#ifdef DK__HAVE_VULKAN
#include "backends/vulkan.h"
#endif
#ifdef DK__HAVE_CUDA
#include "backends/cuda.h"
#endif

#endif /* DEVKIT_IMPLEMENTATION */
