/* fuzz/api.c — the API fuzzer: random sequences of tensor creation, views,
 * ops, transfers and frees, with random and hostile shapes, dtypes and
 * arguments, run in lockstep on several devices (cpu:0, cpu:1, vulkan:0).
 *
 * Every tensor of a sequence has one replica per device, holding the same
 * bytes. Each call is made on every device, and then:
 *   - a call that fails returns a status and a message, on every device alike
 *     (a backend may lack an op or dtype: DK_ERR_UNSUPPORTED; a device may be
 *     out of memory), and leaves every tensor unchanged;
 *   - a call that succeeds gives the same result on every device, within the
 *     op tests' tolerances, and changes no tensor but its output (and the
 *     tensors that share the output's storage);
 *   - a freed tensor or one from before dk_shutdown is refused with
 *     DK_ERR_INVALID, a double free is reported the same way.
 * A finding is printed with the sequence seed and the call, and counted; the
 * exit status is 1 if there was any (ASan and UBSan abort on their own).
 *
 *   api [-n SEQUENCES] [-t SECONDS] [-s SEED] [-d cpu|vulkan] [-v]
 *     -t         stop after SECONDS (checked every 100 sequences)
 *     -d cpu     cpu:0 and cpu:1 (the default)
 *     -d vulkan  cpu:0, cpu:1 and vulkan:0
 * Built and run by tools/fuzz.sh (`./build.sh fuzz`) with ASan and UBSan. */
#define _DEFAULT_SOURCE
#define DEVKIT_IMPLEMENTATION
#include "../devkit.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NDEV_MAX 3
#define NSLOT 12
#define MAX_ELEMS 4096

typedef struct {
  dk_tensor *r[NDEV_MAX];
  int group;                  /* slots of one group share storage */
  int odd;                    /* may hold NaN/inf, or huge i32 values */
  unsigned char *snap[NDEV_MAX];
  size_t nb;
} fz_slot;

static dk_device fz_dev[NDEV_MAX];
static int fz_nd;
static fz_slot fz_s[NSLOT];
static int fz_groups;
static uint64_t fz_rng;
static uint64_t fz_seq_seed;
static long fz_findings, fz_calls, fz_ok_calls;
static int fz_verbose;
static char fz_what[256];

static uint64_t fz_u64(void) {
  fz_rng ^= fz_rng >> 12; fz_rng ^= fz_rng << 25; fz_rng ^= fz_rng >> 27;
  return fz_rng * 0x2545F4914F6CDD1Dull;
}
static int fz_int(int n) { return (int)(fz_u64() % (uint64_t)n); }
static float fz_unif(float lo, float hi) { return lo + (hi - lo) * (float)(fz_u64() >> 40) / 16777216.0f; }

static void fz_finding(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fz_finding(const char *fmt, ...) {
  va_list ap;
  fz_findings++;
  fprintf(stderr, "FINDING (sequence seed %llu, call %s): ", (unsigned long long)fz_seq_seed, fz_what);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
}

/* ---- hostile numbers ------------------------------------------------------------ */

static int64_t fz_dim(void) {
  static const int64_t small[] = {0, 1, 1, 2, 2, 3, 4, 4, 5, 7, 8, 8, 16, 32, 32, 64};
  static const int64_t hostile[] = {-1, -2, INT64_MIN, INT64_MAX, INT64_MAX - 1, (int64_t)1 << 31, (int64_t)1 << 32,
                                    ((int64_t)1 << 62) + 1, 6148914691236517206LL, 33, 31};
  if (fz_int(40) == 0) return hostile[fz_int((int)(sizeof hostile / sizeof hostile[0]))];
  return small[fz_int((int)(sizeof small / sizeof small[0]))];
}
static int64_t fz_index(int64_t n) {
  switch (fz_int(12)) {
    case 0: return INT64_MIN;
    case 1: return INT64_MAX;
    case 2: return -1;
    case 3: return n;
    case 4: return n < INT64_MAX ? n + 1 : n;
    case 5: return n >= 0 ? INT64_MAX - n : 0;
    default: return n > 0 && n < INT64_MAX ? (int64_t)(fz_u64() % (uint64_t)(n + 1)) : 0;
  }
}
static float fz_param(void) {
  switch (fz_int(16)) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -INFINITY;
    case 3: return 0.0f;
    case 4: return -1.0f;
    case 5: return 1e30f;
    default: return fz_unif(0.05f, 2.0f);
  }
}

/* ---- replicas, snapshots -------------------------------------------------------- */

static int fz_free_slot(void) {
  int i;
  for (i = 0; i < NSLOT; i++) if (!fz_s[i].r[0]) return i;
  return -1;
}

static int fz_pick_live(void) {
  int i, n = 0, c[NSLOT];
  for (i = 0; i < NSLOT; i++) if (fz_s[i].r[0]) c[n++] = i;
  return n ? c[fz_int(n)] : -1;
}

static void fz_snapshot(int i) {
  int d;
  fz_slot *s = &fz_s[i];
  for (d = 0; d < fz_nd; d++) { free(s->snap[d]); s->snap[d] = NULL; }
  if (!s->r[0] || !dk_tensor_is_contiguous(s->r[0])) return;
  s->nb = dk_tensor_nbytes(s->r[0]);
  for (d = 0; d < fz_nd; d++) {
    s->snap[d] = (unsigned char *)malloc(s->nb + 1);
    if (dk_tensor_download(s->r[d], s->snap[d], s->nb) != DK_OK) {
      fz_finding("download of a live tensor '%s' on %s failed: %s", dk_tensor_name(s->r[d]), dk_device_name(fz_dev[d]),
                 dk_last_error());
      free(s->snap[d]);
      s->snap[d] = NULL;
    }
  }
}

static void fz_drop(int i) {
  int d;
  for (d = 0; d < fz_nd; d++) {
    dk_tensor_free(fz_s[i].r[d]);
    fz_s[i].r[d] = NULL;
    free(fz_s[i].snap[d]);
    fz_s[i].snap[d] = NULL;
  }
}

/* every tensor not in group `skip` still holds its snapshot on every device */
static void fz_check_untouched(int skip_group) {
  int i, d;
  for (i = 0; i < NSLOT; i++) {
    fz_slot *s = &fz_s[i];
    if (!s->r[0] || s->group == skip_group) continue;
    for (d = 0; d < fz_nd; d++) {
      unsigned char *now;
      if (!s->snap[d]) continue;
      now = (unsigned char *)malloc(s->nb + 1);
      if (dk_tensor_download(s->r[d], now, s->nb) != DK_OK)
        fz_finding("download of '%s' on %s failed: %s", dk_tensor_name(s->r[d]), dk_device_name(fz_dev[d]), dk_last_error());
      else if (memcmp(now, s->snap[d], s->nb))
        fz_finding("'%s' on %s changed although the call did not write it", dk_tensor_name(s->r[d]),
                   dk_device_name(fz_dev[d]));
      free(now);
    }
  }
}

/* ---- values --------------------------------------------------------------------- */

static void fz_decode(const dk_tensor *t, const unsigned char *b, int64_t n, double *out) {
  int64_t i;
  switch (dk_tensor_dtype(t)) {
    case DK_F32: for (i = 0; i < n; i++) { float f; memcpy(&f, b + 4 * i, 4); out[i] = f; } break;
    case DK_F16: for (i = 0; i < n; i++) { uint16_t h; memcpy(&h, b + 2 * i, 2); out[i] = dk_f16_to_f32(h); } break;
    case DK_BF16: for (i = 0; i < n; i++) { uint16_t h; memcpy(&h, b + 2 * i, 2); out[i] = dk_bf16_to_f32(h); } break;
    case DK_I32: for (i = 0; i < n; i++) { int32_t v; memcpy(&v, b + 4 * i, 4); out[i] = v; } break;
    default: {
      float *f = (float *)malloc(sizeof(float) * (size_t)(n ? n : 1));
      dk_dequantize(dk_tensor_dtype(t), b, n, f);
      for (i = 0; i < n; i++) out[i] = f[i];
      free(f);
    }
  }
}

static double fz_tol(dk_dtype t) {
  return t == DK_F32 ? 2e-3 : t == DK_F16 ? 2e-2 : t == DK_BF16 ? 6e-2 : t == DK_I32 ? 0.0 : 6e-2;
}

/* the output slot agrees across devices; op_loose: values may legitimately
 * differ (sampling near ties) and only the range is compared */
static void fz_compare(int o, int kind_index_max, double min_tol) {
  fz_slot *s = &fz_s[o];
  int64_t n = dk_tensor_numel(s->r[0]), i;
  double *ref, *got;
  int d;
  dk_dtype dt = dk_tensor_dtype(s->r[0]);
  double tol = fz_tol(dt) > min_tol ? fz_tol(dt) : min_tol;
  if (!s->snap[0] || n > MAX_ELEMS * 4) return;
  ref = (double *)malloc(sizeof(double) * (size_t)(n + 1));
  got = (double *)malloc(sizeof(double) * (size_t)(n + 1));
  fz_decode(s->r[0], s->snap[0], n, ref);
  for (d = 1; d < fz_nd; d++) {
    int bad = 0;
    int64_t first = -1;
    if (!s->snap[d]) continue;
    fz_decode(s->r[d], s->snap[d], n, got);
    for (i = 0; i < n; i++) {
      double a = ref[i], b = got[i];
      int ok;
      if (kind_index_max) ok = b >= 0 && b < kind_index_max;
      else if (isnan(a) || isnan(b)) ok = isnan(a) && isnan(b);
      else if (isinf(a) || isinf(b)) ok = a == b || fabs(a) > 6e4 || fabs(b) > 6e4;
      else ok = fabs(a - b) <= tol * (1.0 + fabs(a));
      if (!ok) { bad++; if (first < 0) first = i; }
    }
    /* argmax and sampling over near ties, and f16/bf16 rounding feeding a
     * later exp/div, may differ in a few places: a finding is a clear
     * disagreement, more than 1 element in 8 */
    if (bad && (dt != DK_I32 || bad * 8 > n) && bad * 64 > n + 63)
      fz_finding("'%s': %s and %s differ in %d of %lld elements (first at %lld: %g vs %g)", dk_tensor_name(s->r[0]),
                 dk_device_name(fz_dev[0]), dk_device_name(fz_dev[d]), bad, (long long)n, (long long)first,
                 ref[first], got[first]);
  }
  free(ref);
  free(got);
}

/* ---- creation ------------------------------------------------------------------- */

static const dk_dtype fz_dtypes[] = {DK_F32, DK_F32, DK_F32, DK_F16, DK_BF16, DK_I32, DK_Q8_0, DK_Q4_0};

/* a new slot of dtype dt and shape (on every device, same bytes); -1 if refused */
static int fz_new(dk_dtype dt, int ndim, const int64_t *shape, const char *name) {
  int i = fz_free_slot(), d, ok = 1;
  dk_status st[NDEV_MAX];
  if (i < 0) return -1;
  {
    /* tensors between 16K elements and what no device holds would only cost
     * memory and time here: small ones, or absurd ones that must be refused */
    double prod = 1;
    int k;
    for (k = 0; k < ndim && k < DEVKIT_MAX_DIMS; k++) prod *= (double)shape[k];
    if (ndim >= 0 && ndim <= DEVKIT_MAX_DIMS && prod > MAX_ELEMS * 4 && prod < 1e11) return -1;
  }
  snprintf(fz_what, sizeof fz_what, "dk_tensor_new '%s' %s ndim %d", name, dk_dtype_name((dk_dtype)dt), ndim);
  for (d = 0; d < fz_nd; d++) {
    dk_tensor *t = (dk_tensor *)(uintptr_t)8;
    st[d] = dk_tensor_new(fz_dev[d], dt, ndim, shape, name, &t);
    if (st[d] != DK_OK) {
      if (t) fz_finding("refused dk_tensor_new left *out set");
      if (!dk_last_error()[0]) fz_finding("refused without a message");
      if (st[d] != st[0] && st[d] != DK_ERR_OUT_OF_MEMORY && st[0] != DK_ERR_OUT_OF_MEMORY)
        fz_finding("%s on %s but %s on %s", dk_status_name(st[0]), dk_device_name(fz_dev[0]), dk_status_name(st[d]),
                   dk_device_name(fz_dev[d]));
      ok = 0;
      t = NULL;
    }
    fz_s[i].r[d] = t;
  }
  if (!ok) { fz_drop(i); return -1; }
  fz_s[i].group = ++fz_groups;
  fz_s[i].odd = 0;
  {
    /* random bytes that the dtype means as small values */
    int64_t n = dk_tensor_numel(fz_s[i].r[0]), k;
    size_t nb = dk_tensor_nbytes(fz_s[i].r[0]);
    unsigned char *b;
    if (n > MAX_ELEMS * 4) { fz_drop(i); return -1; }
    b = (unsigned char *)malloc(nb + 1);
    if (dk_dtype_is_quant(dt)) {
      /* every block format (a random dtype id may name q4_1 or a K-quant) */
      float *f = (float *)malloc(sizeof(float) * (size_t)(n + 1));
      for (k = 0; k < n; k++) f[k] = fz_unif(-2, 2);
      if (n && dk_quantize(dt, f, n, b) == 0) fz_finding("dk_quantize %s of %lld values: %s", dk_dtype_name(dt), (long long)n,
                                                       dk_last_error());
      free(f);
    } else {
      for (k = 0; k < n; k++) {
        float v = fz_unif(-2, 2);
        if (fz_int(500) == 0) { v = fz_int(2) ? -INFINITY : NAN; fz_s[i].odd = 1; }
        if (dt == DK_F32) memcpy(b + 4 * k, &v, 4);
        else if (dt == DK_F16) { uint16_t h = dk_f32_to_f16(v); memcpy(b + 2 * k, &h, 2); }
        else if (dt == DK_BF16) { uint16_t h = dk_f32_to_bf16(v); memcpy(b + 2 * k, &h, 2); }
        else {
          int32_t iv = fz_int(8) ? fz_int(6) : (int32_t)fz_u64();
          if (iv < 0 || iv >= 6) fz_s[i].odd = 1;
          memcpy(b + 4 * k, &iv, 4);
        }
      }
    }
    for (d = 0; d < fz_nd; d++)
      if (dk_tensor_upload(fz_s[i].r[d], b, nb) != DK_OK) fz_finding("upload into a new tensor: %s", dk_last_error());
    free(b);
  }
  fz_snapshot(i);
  return i;
}

static int fz_new_random(void) {
  int64_t sh[DEVKIT_MAX_DIMS + 2];
  int nd = fz_int(30) == 0 ? (fz_int(2) ? -1 : DEVKIT_MAX_DIMS + 1) : 1 + fz_int(3), k;
  dk_dtype dt = fz_dtypes[fz_int((int)(sizeof fz_dtypes / sizeof fz_dtypes[0]))];
  if (fz_int(60) == 0) dt = (dk_dtype)(7 + fz_int(100));
  for (k = 0; k < DEVKIT_MAX_DIMS + 2; k++) sh[k] = fz_dim();
  if (nd > 0 && dk_dtype_is_quant(dt) && fz_int(4)) sh[nd - 1] = 32 * (1 + fz_int(2));
  return fz_new(dt, nd, sh, "t");
}

/* a fresh slot shaped like slot i (optionally another dtype) */
static int fz_new_like(int i, dk_dtype dt) {
  return fz_new(dt, dk_tensor_ndim(fz_s[i].r[0]), dk_tensor_shape(fz_s[i].r[0]), "out");
}

/* ---- views ---------------------------------------------------------------------- */

static void fz_view(void) {
  int i = fz_pick_live(), j = fz_free_slot(), d, nd;
  dk_status st[NDEV_MAX];
  dk_tensor *v[NDEV_MAX];
  if (i < 0 || j < 0) return;
  nd = dk_tensor_ndim(fz_s[i].r[0]);
  if (fz_int(2)) {
    int dim = fz_int(8) ? fz_int(nd + 1) - (fz_int(2) ? nd : 0) : fz_int(200) - 100;
    int64_t size = nd ? dk_tensor_dim(fz_s[i].r[0], dim) : 0, start = fz_index(size),
            len = fz_index(start >= 0 && start <= size ? size - start : size);
    snprintf(fz_what, sizeof fz_what, "dk_narrow(dim %d, %lld, %lld)", dim, (long long)start, (long long)len);
    for (d = 0; d < fz_nd; d++) st[d] = dk_narrow(fz_s[i].r[d], dim, start, len, &v[d]);
  } else {
    int64_t sh[DEVKIT_MAX_DIMS + 1], n = dk_tensor_numel(fz_s[i].r[0]);
    int k, rn = fz_int(DEVKIT_MAX_DIMS + 1);
    /* a factorization of n, or hostile sizes */
    for (k = 0; k < rn; k++) sh[k] = 1;
    if (rn) sh[fz_int(rn)] = fz_int(4) ? n : fz_dim();
    if (rn > 1 && fz_int(3) == 0) sh[fz_int(rn)] = -1;
    if (rn > 1 && n % 2 == 0 && fz_int(2) && sh[0] >= 0 && sh[0] < (int64_t)1 << 40) { sh[0] *= 2; sh[rn - 1] = sh[rn - 1] == -1 ? -1 : sh[rn - 1] / 2; }
    if (fz_int(20) == 0) sh[0] = fz_dim();
    snprintf(fz_what, sizeof fz_what, "dk_reshape(ndim %d)", rn);
    for (d = 0; d < fz_nd; d++) st[d] = dk_reshape(fz_s[i].r[d], rn, sh, &v[d]);
  }
  fz_calls++;
  for (d = 0; d < fz_nd; d++)
    if (st[d] != st[0]) fz_finding("%s on %s, %s on %s", dk_status_name(st[0]), dk_device_name(fz_dev[0]),
                                   dk_status_name(st[d]), dk_device_name(fz_dev[d]));
  if (st[0] != DK_OK) {
    for (d = 0; d < fz_nd; d++) {
      if (v[d]) fz_finding("a refused view left *out set");
      if (st[d] == DK_OK) dk_tensor_free(v[d]);
    }
    return;
  }
  fz_ok_calls++;
  for (d = 0; d < fz_nd; d++) fz_s[j].r[d] = v[d];
  fz_s[j].group = fz_s[i].group;
  fz_s[j].odd = fz_s[i].odd;
  fz_snapshot(j);
}

/* ---- ops ------------------------------------------------------------------------ */

enum { O_ADD, O_SUB, O_MUL, O_DIV, O_SCALE, O_SILU, O_GELU, O_GELU_TANH, O_RELU, O_SIGMOID, O_TANH, O_EXP, O_SWIGLU,
       O_RMSNORM, O_LAYERNORM, O_SOFTMAX, O_SOFTMAX_MASKED, O_MATMUL, O_LINEAR, O_EMBEDDING, O_ROPE, O_CONCAT, O_COPY,
       O_TRANSPOSE, O_ARGMAX, O_SAMPLE, O_ATTENTION, O_RMSNORM_LINEAR, O_SWIGLU_LINEAR, O_INDEX_COPY, O_ATTENTION_POS, O_ATTENTION_WINDOW, O_ATTENTION_POS_WINDOW, O_COUNT };

typedef struct {
  int op;
  int s[5];     /* out, inputs; -1 absent */
  float f[3];
  int i[DEVKIT_MAX_DIMS];
  uint64_t u;
} fz_call;

static dk_status fz_run(const fz_call *c, int d) {
  dk_tensor *o = c->s[0] >= 0 ? fz_s[c->s[0]].r[d] : NULL;
  dk_tensor *a = c->s[1] >= 0 ? fz_s[c->s[1]].r[d] : NULL;
  dk_tensor *b = c->s[2] >= 0 ? fz_s[c->s[2]].r[d] : NULL;
  dk_tensor *e = c->s[3] >= 0 ? fz_s[c->s[3]].r[d] : NULL;
  dk_tensor *g = c->s[4] >= 0 ? fz_s[c->s[4]].r[d] : NULL;
  switch (c->op) {
    case O_ADD: return dk_add(o, a, b);
    case O_SUB: return dk_sub(o, a, b);
    case O_MUL: return dk_mul(o, a, b);
    case O_DIV: return dk_div(o, a, b);
    case O_SCALE: return dk_scale(o, a, c->f[0]);
    case O_SILU: return dk_silu(o, a);
    case O_GELU: return dk_gelu(o, a);
    case O_GELU_TANH: return dk_gelu_tanh(o, a);
    case O_RELU: return dk_relu(o, a);
    case O_SIGMOID: return dk_sigmoid(o, a);
    case O_TANH: return dk_tanh(o, a);
    case O_EXP: return dk_exp(o, a);
    case O_SWIGLU: return dk_swiglu(o, a, b);
    case O_RMSNORM: return dk_rmsnorm(o, a, b, c->f[0]);
    case O_LAYERNORM: return dk_layernorm(o, a, b, e, c->f[0]);
    case O_SOFTMAX: return dk_softmax(o, a);
    case O_SOFTMAX_MASKED: return dk_softmax_masked(o, a, c->f[0], c->i[0]);
    case O_MATMUL: return dk_matmul(o, a, b);
    case O_LINEAR: return dk_linear(o, a, b, e);
    case O_EMBEDDING: return dk_embedding(o, a, b);
    case O_ROPE: return dk_rope(o, a, b, c->i[0], c->f[0], c->i[1]);
    case O_CONCAT: return dk_concat(o, a, b, c->i[0]);
    case O_COPY: return dk_copy(o, a);
    case O_TRANSPOSE: return dk_transpose(o, a, c->i);
    case O_ARGMAX: return dk_argmax(o, a);
    case O_SAMPLE: return dk_sample(o, a, c->f[0], c->i[0], c->f[1], c->u);
    case O_RMSNORM_LINEAR: return dk_rmsnorm_linear(o, a, b, e, g, c->f[0]);
    case O_SWIGLU_LINEAR: return dk_swiglu_linear(o, a, b, e, g);
    case O_INDEX_COPY: return dk_index_copy(o, a, b, c->i[0]);
    case O_ATTENTION_POS: return dk_attention_pos(o, a, b, e, g, c->f[0]);
    case O_ATTENTION_WINDOW: return dk_attention_window(o, a, b, e, c->f[0], c->i[0], c->i[1]);
    case O_ATTENTION_POS_WINDOW: return dk_attention_pos_window(o, a, b, e, g, c->f[0], c->i[1]);
    default: return dk_attention(o, a, b, e, c->f[0], c->i[0]);
  }
}

/* the call recorded into a graph (dk_graph) and replayed once: what it
 * gives must be what the call alone gives, refusals included (the checks
 * run while recording; a backend's own errors come from the replay) */
static dk_status fz_run_recorded(const fz_call *c, int d) {
  dk_graph *g = NULL;
  dk_status s, e;
  if ((s = dk_graph_begin(fz_dev[d])) != DK_OK) return s;
  s = fz_run(c, d);
  e = dk_graph_end(fz_dev[d], &g);
  if (e != DK_OK) {
    fz_finding("dk_graph_end on %s: %s", dk_device_name(fz_dev[d]), dk_last_error());
    return e;
  }
  /* a call with nothing to do (an empty output, a copy onto itself) records nothing */
  if (s == DK_OK && dk_graph_ops(g) > 1) fz_finding("a graph of one op on %s holds %d", dk_device_name(fz_dev[d]), dk_graph_ops(g));
  if (s == DK_OK) s = dk_graph_replay(g);
  dk_graph_free(g);
  return s;
}

static int fz_pick_or_new(void) {
  int i = fz_pick_live();
  return (i < 0 || fz_int(4) == 0) ? fz_new_random() : i;
}

/* Operands: some calls are built to fit (fresh tensors of matching shapes),
 * the rest take whatever is in the pool, with random parameters. */
static void fz_op(void) {
  fz_call c;
  int fit = fz_int(3) != 0, d, k, n_in, deferred = 0, loose = 0, rec;
  dk_status st[NDEV_MAX];
  memset(&c, 0, sizeof c);
  for (k = 0; k < 5; k++) c.s[k] = -1;
  c.op = fz_int(O_COUNT);
  c.f[0] = fz_int(4) ? fz_unif(0.1f, 1.5f) : fz_param();
  c.f[1] = fz_int(4) ? fz_unif(0.5f, 1.0f) : fz_param();
  c.i[0] = fz_int(6) ? fz_int(8) : (fz_int(2) ? -1 - fz_int(4) : 1 << 30);
  c.i[1] = fz_int(2) ? 0 : 2;
  c.u = fz_u64();
  n_in = c.op == O_RMSNORM_LINEAR || c.op == O_SWIGLU_LINEAR || c.op == O_ATTENTION_POS || c.op == O_ATTENTION_POS_WINDOW ? 4
         : c.op == O_LAYERNORM || c.op == O_LINEAR || c.op == O_ATTENTION || c.op == O_ATTENTION_WINDOW ? 3
         : (c.op <= O_DIV || c.op == O_SWIGLU || c.op == O_RMSNORM || c.op == O_MATMUL || c.op == O_EMBEDDING ||
            c.op == O_ROPE || c.op == O_CONCAT || c.op == O_INDEX_COPY) ? 2 : 1;
  /* ids in the pool may repeat, and which of a repeated id's rows lands is
   * unspecified: only fitted calls (distinct ids) are compared */
  if (c.op == O_INDEX_COPY && !fit) loose = 1;
  if (fit) {
    int64_t m = 1 + fz_int(5), n = 1 + fz_int(9), kk = 32 * (1 + fz_int(2));
    int64_t sx[2] = {m, n}, sk[2] = {m, kk}, sw[2] = {n, kk}, sn[1] = {n}, so[2] = {m, n};
    dk_dtype ft = fz_dtypes[fz_int(5)];
    switch (c.op) {
      case O_MATMUL: {
        int64_t sa[2] = {m, kk}, sb[2] = {kk, n};
        c.s[1] = fz_new(ft, 2, sa, "a"); c.s[2] = fz_new(ft, 2, sb, "b"); c.s[0] = fz_new(ft, 2, so, "out");
        break;
      }
      case O_LINEAR:
        c.s[1] = fz_new(ft, 2, sk, "x");
        c.s[2] = fz_new(fz_dtypes[fz_int(8)] == DK_I32 ? DK_Q8_0 : fz_dtypes[fz_int(8)], 2, sw, "w");
        if (c.s[2] >= 0 && dk_tensor_dtype(fz_s[c.s[2]].r[0]) == DK_I32) c.s[2] = -1;
        if (fz_int(2)) c.s[3] = fz_new(DK_F32, 1, sn, "bias");
        c.s[0] = fz_new(ft, 2, so, "out");
        break;
      case O_RMSNORM_LINEAR: case O_SWIGLU_LINEAR: {
        int64_t sg[1] = {kk};
        c.s[1] = fz_new(ft, 2, sk, c.op == O_SWIGLU_LINEAR ? "gate" : "x");
        if (c.op == O_SWIGLU_LINEAR) c.s[2] = fz_new(ft, 2, sk, "up");
        else if (fz_int(4)) c.s[2] = fz_new(DK_F32, 1, sg, "norm_w");
        c.s[3] = fz_new(fz_dtypes[fz_int(8)] == DK_I32 ? DK_Q4_0 : fz_dtypes[fz_int(8)], 2, sw, "w");
        if (c.s[3] >= 0 && dk_tensor_dtype(fz_s[c.s[3]].r[0]) == DK_I32) c.s[3] = -1;
        if (fz_int(2)) c.s[4] = fz_new(DK_F32, 1, sn, "bias");
        c.s[0] = fz_new(ft, 2, so, "out");
        c.f[0] = 1e-5f;
        break;
      }
      case O_EMBEDDING: {
        int64_t si[1] = {m}, st2[2] = {8, kk}, se[2] = {m, kk};
        c.s[1] = fz_new(fz_int(2) ? ft : DK_Q4_0, 2, st2, "table");
        c.s[2] = fz_new(DK_I32, 1, si, "ids");
        c.s[0] = fz_new(ft == DK_I32 ? DK_F32 : ft, 2, se, "out");
        break;
      }
      case O_ATTENTION: case O_ATTENTION_POS: case O_ATTENTION_WINDOW: case O_ATTENTION_POS_WINDOW: {
        int64_t sq[3] = {m, 2, 8}, skv[3] = {n, 1 + fz_int(2), 8}, sp[1] = {m};
        if (skv[1] == 2 || fz_int(2)) skv[1] = fz_int(2) ? 1 : 2;
        c.s[1] = fz_new(ft, 3, sq, "q"); c.s[2] = fz_new(ft, 3, skv, "k"); c.s[3] = fz_new(ft, 3, skv, "v");
        c.s[0] = fz_new(ft, 3, sq, "out");
        c.f[0] = 0.35f;
        if (c.op == O_ATTENTION_WINDOW || c.op == O_ATTENTION_POS_WINDOW) c.i[1] = 1 + fz_int((int)n + 1);   /* from one key to more than all */
        if ((c.op == O_ATTENTION_POS || c.op == O_ATTENTION_POS_WINDOW) && (c.s[4] = fz_new(DK_I32, 1, sp, "positions")) >= 0 &&
            fz_int(4)) {
          /* positions before, inside and past the keys */
          int32_t pos[8];
          for (k = 0; k < m; k++) pos[k] = fz_int((int)n + 4) - 2;
          for (d = 0; d < fz_nd; d++) dk_tensor_upload(fz_s[c.s[4]].r[d], pos, sizeof(int32_t) * (size_t)m);
          fz_s[c.s[4]].odd = 0;
          fz_snapshot(c.s[4]);
        }
        break;
      }
      case O_INDEX_COPY: {
        int64_t rows = n + 2, mm = m < rows ? m : rows, sd[2] = {rows, kk}, ss[2] = {mm, kk}, si[1] = {mm};
        int32_t ids[8], perm[16];
        c.s[0] = fz_new(ft == DK_I32 ? DK_F32 : ft, 2, sd, "dst");
        c.s[1] = fz_new(fz_dtypes[fz_int(5)], 2, ss, "src");
        c.s[2] = fz_new(DK_I32, 1, si, "ids");
        c.i[0] = fz_int(2) ? 0 : -2;
        if (c.s[2] >= 0) {
          /* distinct ids (a shuffled prefix of 0..rows-1), some counted
           * from the end, now and then one outside */
          for (k = 0; k < rows; k++) perm[k] = (int32_t)k;
          for (k = (int)rows - 1; k > 0; k--) { int j = fz_int(k + 1); int32_t tmp = perm[k]; perm[k] = perm[j]; perm[j] = tmp; }
          for (k = 0; k < mm; k++) ids[k] = fz_int(3) ? perm[k] : perm[k] - (int32_t)rows;
          if (fz_int(8) == 0) ids[fz_int((int)mm)] = (int32_t)rows + fz_int(3);
          for (d = 0; d < fz_nd; d++) dk_tensor_upload(fz_s[c.s[2]].r[d], ids, sizeof(int32_t) * (size_t)mm);
          fz_s[c.s[2]].odd = 0;
          fz_snapshot(c.s[2]);
        }
        break;
      }
      case O_ARGMAX: case O_SAMPLE: {
        int64_t sr[1] = {m};
        c.s[1] = fz_new(ft, 2, sx, "logits"); c.s[0] = fz_new(DK_I32, 1, sr, "token");
        break;
      }
      case O_ROPE: {
        int64_t s3[3] = {m, 2, 8}, sp[1] = {m};
        c.s[1] = fz_new(ft, 3, s3, "x"); c.s[2] = fz_new(DK_I32, 1, sp, "pos"); c.s[0] = fz_new(ft, 3, s3, "out");
        if (c.s[2] >= 0 && fz_int(4)) {
          /* positions a model uses (a huge angle's sin differs per device) */
          int32_t pos[8];
          for (k = 0; k < m; k++) pos[k] = fz_int(4096);
          for (d = 0; d < fz_nd; d++) dk_tensor_upload(fz_s[c.s[2]].r[d], pos, sizeof(int32_t) * (size_t)m);
          fz_s[c.s[2]].odd = 0;
          fz_snapshot(c.s[2]);
        }
        c.i[0] = fz_int(4) ? 8 : fz_int(12);
        /* a theta below 1 makes angles so large that sin differs per device:
         * such a call is checked for its status only */
        c.f[0] = fz_int(8) ? 10000.0f : fz_param();
        loose = !(c.f[0] >= 100.0f && c.f[0] <= 1e6f);
        break;
      }
      case O_CONCAT: {
        int64_t sb[2] = {m, n + 1}, sc[2] = {m, 2 * n + 1};
        c.s[1] = fz_new(ft, 2, sx, "a"); c.s[2] = fz_new(ft, 2, sb, "b"); c.s[0] = fz_new(ft, 2, sc, "out");
        c.i[0] = fz_int(2) ? 1 : -1;
        break;
      }
      case O_TRANSPOSE: {
        int64_t st3[2] = {n, m};
        c.s[1] = fz_new(ft, 2, sx, "x"); c.s[0] = fz_new(ft, 2, st3, "out");
        c.i[0] = 1; c.i[1] = 0;
        break;
      }
      case O_RMSNORM: case O_LAYERNORM:
        c.s[1] = fz_new(ft, 2, sx, "x"); c.s[2] = fz_new(DK_F32, 1, sn, "w");
        if (c.op == O_LAYERNORM && fz_int(2)) c.s[3] = fz_new(DK_F32, 1, sn, "b");
        c.s[0] = fz_new(ft, 2, sx, "out");
        c.f[0] = 1e-5f;
        break;
      case O_SOFTMAX_MASKED: {
        int64_t s3[3] = {2, m, n};
        c.s[1] = fz_new(ft, 3, s3, "x"); c.s[0] = fz_new(ft, 3, s3, "out");
        break;
      }
      default:
        if (ft == DK_I32) ft = DK_F32;
        c.s[1] = fz_new(ft, 2, sx, "a");
        if (n_in == 2) c.s[2] = fz_int(3) ? fz_new(ft, 2, sx, "b") : fz_new(ft, 1, sn, "b");
        c.s[0] = fz_int(6) ? fz_new(ft, 2, sx, "out") : c.s[1];
        if (c.op == O_COPY) c.s[0] = fz_new(fz_dtypes[fz_int(5)] == DK_I32 ? DK_F16 : fz_dtypes[fz_int(5)], 2, sx, "dst");
        break;
    }
  } else {
    for (k = 0; k <= n_in; k++) c.s[k] = fz_int(12) ? fz_pick_or_new() : -1;
    if (c.s[0] >= 0 && c.s[1] >= 0 && fz_int(3) == 0) {
      int o = fz_new_like(c.s[1], dk_tensor_dtype(fz_s[c.s[1]].r[0]));
      if (o >= 0) c.s[0] = o;
    }
    if (c.op == O_TRANSPOSE) {
      int nd = c.s[1] >= 0 ? dk_tensor_ndim(fz_s[c.s[1]].r[0]) : 2;
      for (k = 0; k < DEVKIT_MAX_DIMS; k++) c.i[k] = fz_int(10) ? (nd - 1 - k) : fz_int(9) - 4;
    }
  }
  {
    /* a slot that was not created (refused) is absent: the dispatcher's NULL
     * check is part of what is fuzzed */
    static const char *names[O_COUNT] = {"add", "sub", "mul", "div", "scale", "silu", "gelu", "gelu_tanh", "relu",
      "sigmoid", "tanh", "exp", "swiglu", "rmsnorm", "layernorm", "softmax", "softmax_masked", "matmul", "linear",
      "embedding", "rope", "concat", "copy", "transpose", "argmax", "sample", "attention", "rmsnorm_linear", "swiglu_linear",
      "index_copy", "attention_pos", "attention_window", "attention_pos_window"};
    snprintf(fz_what, sizeof fz_what, "dk_%s (%s) slots %d %d %d %d %d f %g %g i %d %d", names[c.op],
             fit ? "fitted" : "chaos", c.s[0], c.s[1], c.s[2], c.s[3], c.s[4], (double)c.f[0], (double)c.f[1], c.i[0],
             c.i[1]);
  }
  fz_calls++;
  if (fz_verbose > 2) {
    fprintf(stderr, "%s\n", fz_what);
    for (k = 0; k < 5; k++) {
      int j;
      if (c.s[k] < 0 || !fz_s[c.s[k]].r[0]) continue;
      fprintf(stderr, "  operand %d: %s [", k, dk_dtype_name(dk_tensor_dtype(fz_s[c.s[k]].r[0])));
      for (j = 0; j < dk_tensor_ndim(fz_s[c.s[k]].r[0]); j++)
        fprintf(stderr, "%s%lld", j ? "," : "", (long long)dk_tensor_dim(fz_s[c.s[k]].r[0], j));
      fprintf(stderr, "]\n");
    }
  }
  rec = fz_int(4) == 0;
  if (rec && strlen(fz_what) + 24 < sizeof fz_what) strcat(fz_what, " (recorded off cpu:0)");
  for (d = 0; d < fz_nd; d++) {
    dk_clear_error();
    st[d] = rec && d > 0 ? fz_run_recorded(&c, d) : fz_run(&c, d);
    if (st[d] != DK_OK && !dk_last_error()[0]) fz_finding("%s without a message on %s", dk_status_name(st[d]),
                                                          dk_device_name(fz_dev[d]));
    if (st[d] != DK_OK && fz_verbose > 1) fprintf(stderr, "  %s: %s\n", dk_device_name(fz_dev[d]), dk_last_error());
  }
  /* an out-of-range id is found by a GPU only when it runs, and reported at
   * the next sync (devkit.h, ERRORS): ask for it, and expect it */
  for (d = 1; d < fz_nd; d++)
    if ((c.op == O_EMBEDDING || c.op == O_INDEX_COPY) && st[0] == DK_ERR_INVALID && st[d] == DK_OK &&
        fz_dev[d].backend != DK_CPU) {
      dk_status ss = dk_sync(fz_dev[d]);
      if (ss != DK_ERR_INVALID || !strstr(dk_last_error(), c.op == O_EMBEDDING ? "outside table" : "outside"))
        fz_finding("a bad id on %s was not reported at the next sync: %s", dk_device_name(fz_dev[d]), dk_status_name(ss));
      st[d] = DK_ERR_INVALID;
      deferred = 1;
    }
  /* the devices agree on the outcome, except where a backend lacks the op or
   * dtype, or memory ran out; the op's output is then out of step, so its
   * replicas are made equal again from cpu:0 */
  {
    int o = c.s[0], resync = deferred, odd = 0;
    for (k = 1; k < 5; k++) if (c.s[k] >= 0 && fz_s[c.s[k]].r[0]) odd |= fz_s[c.s[k]].odd;
    for (d = 1; d < fz_nd; d++) {
      if (st[d] == st[0]) continue;
      if (st[d] == DK_ERR_UNSUPPORTED || st[d] == DK_ERR_OUT_OF_MEMORY || st[0] == DK_ERR_UNSUPPORTED ||
          st[0] == DK_ERR_OUT_OF_MEMORY) { resync = 1; continue; }
      fz_finding("%s on %s but %s on %s", dk_status_name(st[0]), dk_device_name(fz_dev[0]), dk_status_name(st[d]),
                 dk_device_name(fz_dev[d]));
      resync = 1;
    }
    if (st[0] == DK_OK) fz_ok_calls++;
    if (o >= 0 && fz_s[o].r[0]) {
      int grp = fz_s[o].group;
      /* everything outside the output's storage is as it was */
      fz_check_untouched(st[0] == DK_OK || resync ? grp : -1);
      if (resync) {
        /* re-make the group from cpu:0's bytes: simplest is to drop it */
        for (k = 0; k < NSLOT; k++) if (fz_s[k].r[0] && fz_s[k].group == grp) fz_drop(k);
        return;
      }
      if (st[0] == DK_OK) {
        /* values are compared where the devices must agree: non-finite or
         * huge inputs only for the ops whose rule for them is documented
         * (devkit.h, DEGENERATE INPUTS) or that only move values */
        int exact_rule = c.op == O_ARGMAX || c.op == O_SAMPLE || c.op == O_SOFTMAX || c.op == O_SOFTMAX_MASKED ||
                         c.op == O_COPY || c.op == O_CONCAT || c.op == O_TRANSPOSE || c.op == O_RELU ||
                         c.op == O_ADD || c.op == O_SUB || c.op == O_MUL || c.op == O_SCALE;
        for (k = 0; k < NSLOT; k++) if (fz_s[k].r[0] && fz_s[k].group == grp) fz_s[k].odd |= odd;
        for (k = 0; k < NSLOT; k++) if (fz_s[k].r[0] && fz_s[k].group == grp) fz_snapshot(k);
        if (c.op == O_ROPE && !fit) loose = !(c.f[0] >= 100.0f && c.f[0] <= 1e6f);
        /* block weights: the CPU's decode dot (and its integer GEMM) rounds
         * x to q8 per 32 values (README, Devices and errors: about 1e-2
         * relative), other devices keep f32; compared at that precision,
         * and the replicas may then differ, so they go */
        int ws = c.op == O_LINEAR ? c.s[2] : c.op == O_RMSNORM_LINEAR || c.op == O_SWIGLU_LINEAR ? c.s[3] : -1;
        int q8 = ws >= 0 && fz_s[ws].r[0] && dk_dtype_is_quant(dk_tensor_dtype(fz_s[ws].r[0]));
        int compared = !loose && (!odd || exact_rule);
        if (compared)
          fz_compare(o, c.op == O_SAMPLE || c.op == O_ARGMAX ? (int)dk_tensor_dim(fz_s[c.s[1]].r[0], -1) : 0, q8 ? 0.1 : 0);
        /* not compared, or only loosely: the replicas may differ from here on */
        if (!compared || q8)
          for (k = 0; k < NSLOT; k++) if (fz_s[k].r[0] && fz_s[k].group == grp) fz_drop(k);
      }
    } else {
      fz_check_untouched(-1);
    }
  }
}

/* ---- transfers, frees, stale tensors -------------------------------------------------- */

static void fz_transfer(void) {
  int i = fz_pick_live(), j = fz_pick_live(), d;
  dk_status st[NDEV_MAX];
  if (i < 0 || j < 0) return;
  fz_calls++;
  if (fz_int(2)) {
    /* dk_copy_to from device d's replica of j into device (d+1)'s replica of i */
    snprintf(fz_what, sizeof fz_what, "dk_copy_to slots %d <- %d", i, j);
    for (d = 0; d < fz_nd; d++) st[d] = dk_copy_to(fz_s[i].r[(d + 1) % fz_nd], fz_s[j].r[d]);
    for (d = 1; d < fz_nd; d++)
      if (st[d] != st[0]) fz_finding("%s vs %s", dk_status_name(st[0]), dk_status_name(st[d]));
    if (st[0] == DK_OK) {
      int k;
      fz_ok_calls++;
      fz_check_untouched(fz_s[i].group);
      for (k = 0; k < NSLOT; k++) if (fz_s[k].r[0] && fz_s[k].group == fz_s[i].group) fz_snapshot(k);
      fz_compare(i, 0, 0);
    } else {
      fz_check_untouched(-1);
    }
  } else {
    /* dk_to from each device to the next, into a new slot */
    int o = fz_free_slot();
    dk_tensor *t[NDEV_MAX];
    if (o < 0) return;
    snprintf(fz_what, sizeof fz_what, "dk_to slot %d", j);
    for (d = 0; d < fz_nd; d++) st[d] = dk_to(fz_s[j].r[(d + fz_nd - 1) % fz_nd], fz_dev[d], &t[d]);
    for (d = 0; d < fz_nd; d++) {
      if (st[d] != st[0] && st[d] != DK_ERR_OUT_OF_MEMORY) fz_finding("%s vs %s", dk_status_name(st[0]), dk_status_name(st[d]));
      if (st[d] != DK_OK && t[d]) fz_finding("a refused dk_to left *out set");
    }
    for (d = 0; d < fz_nd; d++) if (st[d] != st[0]) break;
    if (d < fz_nd || st[0] != DK_OK) {
      for (d = 0; d < fz_nd; d++) if (st[d] == DK_OK) dk_tensor_free(t[d]);
      return;
    }
    fz_ok_calls++;
    for (d = 0; d < fz_nd; d++) fz_s[o].r[d] = t[d];
    fz_s[o].group = ++fz_groups;
    fz_s[o].odd = fz_s[j].odd;
    fz_snapshot(o);
    fz_compare(o, 0, 0);
  }
}

/* free a slot, then check that every use of the dangling pointers is refused */
static void fz_free_and_poke(void) {
  int i = fz_pick_live(), d;
  dk_tensor *dead[NDEV_MAX];
  float buf[4];
  if (i < 0) return;
  snprintf(fz_what, sizeof fz_what, "dk_tensor_free slot %d then use", i);
  for (d = 0; d < fz_nd; d++) dead[d] = fz_s[i].r[d];
  for (d = 0; d < fz_nd; d++) {
    dk_clear_error();
    dk_tensor_free(dead[d]);
    if (dk_last_status() != DK_OK) fz_finding("freeing a live tensor reported %s", dk_last_error());
    fz_s[i].r[d] = NULL;
    free(fz_s[i].snap[d]);
    fz_s[i].snap[d] = NULL;
  }
  fz_calls += 3;
  for (d = 0; d < fz_nd; d++) {
    int o = fz_pick_live();
    dk_tensor *x = NULL;
    dk_status s = fz_int(2) ? dk_relu(dead[d], dead[d]) : dk_tensor_download(dead[d], buf, 0);
    if (s != DK_ERR_INVALID || !strstr(dk_last_error(), "was freed")) fz_finding("use after free: %s %s", dk_status_name(s), dk_last_error());
    if (o >= 0 && dk_add(fz_s[o].r[d], dead[d], fz_s[o].r[d]) != DK_ERR_INVALID) fz_finding("add with a freed operand");
    if (dk_narrow(dead[d], 0, 0, 0, &x) != DK_ERR_INVALID || x) fz_finding("narrow of a freed tensor");
    dk_clear_error();
    if (fz_int(4) == 0) {
      dk_tensor_free(dead[d]);
      if (dk_last_status() != DK_ERR_INVALID) fz_finding("double free not reported");
    }
  }
  fz_check_untouched(-1);
}

static void fz_shutdown_and_poke(void) {
  int i, d;
  snprintf(fz_what, sizeof fz_what, "dk_shutdown then use");
  dk_shutdown();
  fz_calls++;
  for (i = 0; i < NSLOT; i++) {
    if (!fz_s[i].r[0]) continue;
    for (d = 0; d < fz_nd; d++) {
      if (dk_relu(fz_s[i].r[d], fz_s[i].r[d]) != DK_ERR_INVALID || !strstr(dk_last_error(), "shut down"))
        fz_finding("op on a tensor from before dk_shutdown: %s", dk_last_error());
      dk_clear_error();
      dk_tensor_free(fz_s[i].r[d]);
      if (dk_last_status() != DK_ERR_INVALID) fz_finding("free after shutdown not reported");
      fz_s[i].r[d] = NULL;
      free(fz_s[i].snap[d]);
      fz_s[i].snap[d] = NULL;
    }
  }
  dk_init();
  for (d = 0; d < fz_nd; d++) {
    dk_device_props p;
    if (dk_device_properties(fz_dev[d], &p) != DK_OK || p.memory_used != 0)
      fz_finding("%s holds %llu bytes in a fresh kit", dk_device_name(fz_dev[d]), (unsigned long long)p.memory_used);
  }
}

/* ---- driver --------------------------------------------------------------------------- */

static void fz_sequence(uint64_t seed, int allow_shutdown) {
  int steps, k, i;
  fz_seq_seed = seed;
  fz_rng = seed * 0x9E3779B97F4A7C15ull + 1;
  steps = 4 + fz_int(16);
  for (k = 0; k < steps; k++) {
    int r = fz_int(100);
    if (r < 15) fz_new_random();
    else if (r < 30) fz_view();
    else if (r < 80) fz_op();
    else if (r < 90) fz_transfer();
    else fz_free_and_poke();
  }
  if (allow_shutdown && fz_int(2000) == 0) fz_shutdown_and_poke();
  for (i = 0; i < NSLOT; i++) if (fz_s[i].r[0]) fz_drop(i);
  for (i = 0; i < fz_nd; i++) {
    dk_device_props p;
    if (dk_device_properties(fz_dev[i], &p) == DK_OK && p.memory_used != 0)
      fz_finding("%s holds %llu bytes after every tensor of the sequence was freed", dk_device_name(fz_dev[i]),
                 (unsigned long long)p.memory_used);
  }
}

int main(int argc, char **argv) {
  long n = 10000, s;
  double secs = 0;
  uint64_t seed = 1;
  time_t t0 = time(NULL);
  const char *devs = "cpu";
  int k;
  for (k = 1; k < argc; k++) {
    if (!strcmp(argv[k], "-n") && k + 1 < argc) n = atol(argv[++k]);
    else if (!strcmp(argv[k], "-t") && k + 1 < argc) { secs = atof(argv[++k]); n = 1L << 62; }
    else if (!strcmp(argv[k], "-s") && k + 1 < argc) seed = strtoull(argv[++k], NULL, 10);
    else if (!strcmp(argv[k], "-d") && k + 1 < argc) devs = argv[++k];
    else if (!strcmp(argv[k], "-v")) fz_verbose++;
    else { fprintf(stderr, "usage: api [-n SEQUENCES] [-t SECONDS] [-s SEED] [-d cpu|vulkan] [-v]\n"); return 2; }
  }
  setenv("DEVKIT_LOGICAL_DEVICES", "cpu=2", 0);
  setenv("DEVKIT_CPU_THREADS", "1", 0);
  if (dk_init() != DK_OK || dk_device_count(DK_CPU) < 2) { fprintf(stderr, "api: need cpu:0 and cpu:1\n"); return 2; }
  fz_dev[0].backend = DK_CPU; fz_dev[0].index = 0;
  fz_dev[1].backend = DK_CPU; fz_dev[1].index = 1;
  fz_nd = 2;
  if (!strcmp(devs, "vulkan")) {
    if (dk_device_count(DK_VULKAN) < 1) { fprintf(stderr, "api: no vulkan:0 (%s)\n", dk_backend_note(DK_VULKAN)); return 2; }
    fz_dev[2].backend = DK_VULKAN; fz_dev[2].index = 0;
    fz_nd = 3;
  }
  for (s = 0; s < n; s++) {
    if (secs > 0 && s % 100 == 0 && difftime(time(NULL), t0) >= secs) break;
    fz_sequence(seed + (uint64_t)s, fz_nd == 2);
    if (fz_verbose && (s + 1) % 10000 == 0)
      fprintf(stderr, "[api] %ld sequences, %ld calls (%ld succeeded), %ld findings\n", s + 1, fz_calls, fz_ok_calls,
              fz_findings);
  }
  dk_shutdown();
  printf("[api] devices %s: %ld sequences (seeds %llu..%llu), %ld calls, %ld succeeded, %ld findings\n",
         fz_nd == 3 ? "cpu:0 cpu:1 vulkan:0" : "cpu:0 cpu:1", s, (unsigned long long)seed,
         (unsigned long long)(seed + (uint64_t)s - 1), fz_calls, fz_ok_calls, fz_findings);
  return fz_findings ? 1 : 0;
}
