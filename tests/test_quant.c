/* tests/test_quant.c — the GGUF block formats q4_1, q5_0, q5_1, q2_K..q6_K,
 * iq4_nl and iq4_xs (and q4_0, q8_0 against the same references).
 *
 * Dequantization is checked bit for bit against tests/data/quant_<type>.bin,
 * written by tools/quant_ref.py from the `gguf` package's dequantizers (random
 * blocks whose f16 scales include zero, denormals and the largest finite
 * values). On each device the dequantization is an embedding lookup of every
 * row into f32 and f16. Products are checked against a double-precision
 * reference on the dequantized weights. A device that does not hold a type
 * must refuse it with DK_ERR_UNSUPPORTED naming the type and the backend.
 */
#include "test.h"

#include <stdint.h>
#include <unistd.h>

#define QT_NTYPES 17
static const dk_dtype qt_types[QT_NTYPES] = {DK_Q4_0,    DK_Q8_0,  DK_Q4_1,    DK_Q5_0,   DK_Q5_1,  DK_Q2_K,
                                             DK_Q3_K,    DK_Q4_K,  DK_Q5_K,    DK_Q6_K,   DK_IQ4_NL, DK_IQ4_XS,
                                             DK_IQ3_XXS, DK_IQ3_S, DK_IQ2_XXS, DK_IQ2_XS, DK_IQ2_S};
#define QT_NMORE 15
static const dk_dtype qt_more[QT_NMORE] = {DK_Q4_1,   DK_Q5_0,    DK_Q5_1,  DK_Q2_K,    DK_Q3_K,   DK_Q4_K,
                                           DK_Q5_K,   DK_Q6_K,    DK_IQ4_NL, DK_IQ4_XS, DK_IQ3_XXS, DK_IQ3_S,
                                           DK_IQ2_XXS, DK_IQ2_XS, DK_IQ2_S};

typedef struct {
  uint32_t nblocks, bs, bb;
  uint8_t *blocks;
  float *vals;
  void *mem;
} qt_ref;

static uint32_t qt_le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* tests/data/<kind>_<type>.bin from the working directory (the repo root,
 * as build.sh runs the suite) or from beside the test binary (build/tests);
 * kind "quant": blocks then their values, "quantize": values then blocks */
static int qt_load(dkt *t, const char *kind, dk_dtype dt, qt_ref *r) {
  int values_first = !strcmp(kind, "quantize");
  char path[1200], exe[1000];
  FILE *f;
  long sz;
  ssize_t n;
  memset(r, 0, sizeof *r);
  snprintf(path, sizeof path, "tests/data/%s_%s.bin", kind, dk_dtype_name(dt));
  f = fopen(path, "rb");
  if (!f && (n = readlink("/proc/self/exe", exe, sizeof exe - 1)) > 0) {
    char *slash;
    exe[n] = 0;
    if ((slash = strrchr(exe, '/'))) *slash = 0;
    snprintf(path, sizeof path, "%s/../tests/data/%s_%s.bin", exe, kind, dk_dtype_name(dt));
    f = fopen(path, "rb");
  }
  if (!f) { dkt_fail_at(t, __FILE__, __LINE__, "cannot open tests/data/%s_%s.bin", kind, dk_dtype_name(dt)); return 0; }
  fseek(f, 0, SEEK_END);
  sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  r->mem = malloc((size_t)sz);
  if (!r->mem || fread(r->mem, 1, (size_t)sz, f) != (size_t)sz || sz < 20 || memcmp(r->mem, values_first ? "DKQQ" : "DKQR", 4) != 0) {
    fclose(f);
    dkt_fail_at(t, __FILE__, __LINE__, "%s: not a reference file", path);
    return 0;
  }
  fclose(f);
  {
    const uint8_t *p = (const uint8_t *)r->mem;
    r->nblocks = qt_le32(p + 8); r->bs = qt_le32(p + 12); r->bb = qt_le32(p + 16);
    if (r->bs != (uint32_t)dk_dtype_block(dt) || r->bb != dk_dtype_block_bytes(dt) ||
        (size_t)sz != 20 + (size_t)r->nblocks * (r->bb + 4 * r->bs)) {
      dkt_fail_at(t, __FILE__, __LINE__, "%s: block %u x %u bytes, devkit says %d x %zu", path, r->bs, r->bb,
                  dk_dtype_block(dt), dk_dtype_block_bytes(dt));
      return 0;
    }
    if (values_first) {
      r->vals = (float *)((uint8_t *)r->mem + 20);
      r->blocks = (uint8_t *)r->mem + 20 + (size_t)r->nblocks * r->bs * 4;
    } else {
      r->blocks = (uint8_t *)r->mem + 20;
      r->vals = (float *)((uint8_t *)r->mem + 20 + (size_t)r->nblocks * r->bb);
    }
  }
  return 1;
}

/* the number of values whose bits differ; the first one is reported */
static int64_t qt_bits_differ(dkt *t, const char *what, const uint16_t *g16, const float *g32, const float *want, int64_t n) {
  int64_t i, bad = 0;
  for (i = 0; i < n; i++) {
    uint32_t a, b;
    memcpy(&b, &want[i], 4);
    if (g16) {
      a = g16[i];
      b = dk_f32_to_f16(want[i]);
    } else {
      memcpy(&a, &g32[i], 4);
    }
    if (a != b) {
      if (!bad) dkt_fail_at(t, __FILE__, __LINE__, "%s: value %lld is 0x%08x, gguf gives 0x%08x (%g)", what, (long long)i, a, b,
                            (double)want[i]);
      bad++;
    }
  }
  return bad;
}

DKT_TEST(quant_dequantize_matches_gguf, 0) {
  int k;
  for (k = 0; k < QT_NTYPES; k++) {
    dk_dtype dt = qt_types[k];
    qt_ref r;
    int64_t per_row = dt == DK_Q8_0 || dt == DK_Q4_0 || dk_dtype_block(dt) == 32 ? 2 : 3;
    int64_t rows, D, n, i, ts[2], os[2], is[1];
    float *host = NULL, *g32 = NULL;
    uint16_t *g16 = NULL;
    int32_t *ids = NULL;
    dk_tensor *tab = NULL, *id = NULL, *o32 = NULL, *o16 = NULL;
    char what[96];
    if (!qt_load(t, "quant", dt, &r)) { free(r.mem); continue; }
    n = (int64_t)r.nblocks * r.bs;
    rows = r.nblocks / per_row;
    D = per_row * r.bs;
    /* the library's own function, on the host */
    host = (float *)malloc((size_t)n * 4);
    dk_dequantize(dt, r.blocks, n, host);
    snprintf(what, sizeof what, "dk_dequantize %s", dk_dtype_name(dt));
    qt_bits_differ(t, what, NULL, host, r.vals, n);
    /* the device: every row through an embedding lookup */
    ts[0] = rows; ts[1] = D; os[0] = rows; os[1] = D; is[0] = rows;
    ids = (int32_t *)malloc((size_t)rows * 4);
    for (i = 0; i < rows; i++) ids[i] = (int32_t)(rows - 1 - i);   /* reversed: rows land where they are asked to */
    g32 = (float *)malloc((size_t)n * 4);
    g16 = (uint16_t *)malloc((size_t)n * 2);
    if (dk_tensor_new(t->dev, dt, 2, ts, "table", &tab) != DK_OK || dk_tensor_new(t->dev, DK_I32, 1, is, "ids", &id) != DK_OK ||
        dk_tensor_new(t->dev, DK_F32, 2, os, "out32", &o32) != DK_OK || dk_tensor_new(t->dev, DK_F16, 2, os, "out16", &o16) != DK_OK) {
      dkt_fail_at(t, __FILE__, __LINE__, "tensors for %s: %s", dk_dtype_name(dt), dk_last_error());
    } else if (dk_tensor_upload(tab, r.blocks, (size_t)r.nblocks * r.bb) != DK_OK ||
               dk_tensor_upload(id, ids, (size_t)rows * 4) != DK_OK) {
      dkt_fail_at(t, __FILE__, __LINE__, "upload %s: %s", dk_dtype_name(dt), dk_last_error());
    } else if (!dk_op_supported(t->dev.backend, "dk_embedding", dt, 1)) {
      /* not held here: refused by name, and the output untouched */
      DKT_REFUSED(t, dk_embedding(o32, tab, id), DK_ERR_UNSUPPORTED);
      DKT_MSG_HAS(t, dk_dtype_name(dt));
      DKT_MSG_HAS(t, "dk_embedding");
      dkt_note(t, "%s embedding refused on this backend, as dk_op_supported says", dk_dtype_name(dt));
    } else {
      float *want = (float *)malloc((size_t)n * 4);
      for (i = 0; i < rows; i++) memcpy(want + i * D, r.vals + (rows - 1 - i) * D, (size_t)D * 4);
      if (dk_embedding(o32, tab, id) != DK_OK || dk_embedding(o16, tab, id) != DK_OK ||
          dk_tensor_download(o32, g32, (size_t)n * 4) != DK_OK || dk_tensor_download(o16, g16, (size_t)n * 2) != DK_OK) {
        dkt_fail_at(t, __FILE__, __LINE__, "embedding of %s: %s", dk_dtype_name(dt), dk_last_error());
      } else {
        snprintf(what, sizeof what, "embedding %s -> f32", dk_dtype_name(dt));
        qt_bits_differ(t, what, NULL, g32, want, n);
        snprintf(what, sizeof what, "embedding %s -> f16", dk_dtype_name(dt));
        qt_bits_differ(t, what, g16, NULL, want, n);
      }
      free(want);
    }
    dk_tensor_free(tab); dk_tensor_free(id); dk_tensor_free(o32); dk_tensor_free(o16);
    free(host); free(g32); free(g16); free(ids); free(r.mem);
  }
}

/* weights of dtype wdt: random values quantized by dk_quantize; *ref gets
 * what they dequantize to (checked bit-exact against gguf above) */
static dk_tensor *qt_weights(dkt *t, dk_dtype wdt, int64_t N, int64_t K, double **ref) {
  int64_t n = N * K, i, s[2];
  float *v = (float *)malloc((size_t)n * 4), *back = (float *)malloc((size_t)n * 4);
  size_t nb = (size_t)(n / dk_dtype_block(wdt)) * dk_dtype_block_bytes(wdt);
  void *q = malloc(nb);
  dk_tensor *w = NULL;
  s[0] = N; s[1] = K;
  for (i = 0; i < n; i++) v[i] = (float)dkt_uniform(t, -1, 1);
  if (dk_quantize(wdt, v, n, q) != nb) dkt_fail_at(t, __FILE__, __LINE__, "dk_quantize %s wrote a wrong size", dk_dtype_name(wdt));
  dk_dequantize(wdt, q, n, back);
  *ref = dkt_alloc(n);
  for (i = 0; i < n; i++) (*ref)[i] = back[i];
  if (dk_tensor_new(t->dev, wdt, 2, s, "w", &w) != DK_OK || dk_tensor_upload(w, q, nb) != DK_OK) {
    dkt_fail_at(t, __FILE__, __LINE__, "weights %s: %s", dk_dtype_name(wdt), dk_last_error());
    dk_tensor_free(w);
    w = NULL;
  }
  free(v); free(back); free(q);
  return w;
}

static void qt_linear_case(dkt *t, dk_dtype xdt, dk_dtype wdt, int64_t M, int64_t N, int64_t K) {
  int64_t xs[2] = {M, K}, os[2] = {M, N}, m, n, k;
  double *xv = NULL, *wv = NULL, *got = dkt_alloc(M * N), *want = dkt_alloc(M * N);
  dk_tensor *x = dkt_random(t, t->dev, xdt, 2, xs, "x", -1, 1, &xv);
  dk_tensor *w = qt_weights(t, wdt, N, K, &wv);
  dk_tensor *o = dkt_random(t, t->dev, xdt, 2, os, "out", -9, 9, NULL);
  if (x && w && o) {
    if (!dk_op_supported(t->dev.backend, "dk_linear", wdt, 1)) {
      DKT_REFUSED(t, dk_linear(o, x, w, NULL), DK_ERR_UNSUPPORTED);
      DKT_MSG_HAS(t, dk_dtype_name(wdt));
      DKT_MSG_HAS(t, "dk_linear");
    } else {
      dk_status s = dk_linear(o, x, w, NULL);
      if (s != DK_OK) {
        dkt_fail_at(t, __FILE__, __LINE__, "dk_linear w %s: %s", dk_dtype_name(wdt), dk_last_error());
      } else if (dkt_read(t, o, got)) {
        char what[96];
        for (m = 0; m < M; m++)
          for (n = 0; n < N; n++) {
            double acc = 0;
            for (k = 0; k < K; k++) acc += xv[m * K + k] * wv[n * K + k];
            want[m * N + n] = acc;
          }
        snprintf(what, sizeof what, "linear x %s, w %s, M=%lld N=%lld K=%lld", dk_dtype_name(xdt), dk_dtype_name(wdt),
                 (long long)M, (long long)N, (long long)K);
        dkt_close(t, what, got, want, M * N,
                  dkt_tol(xdt, K) * sqrt((double)K) * 1.5 + (dkt_q8_acts(t->dev.backend == DK_CPU, wdt, M) ? dkt_q8_act_bound(xv, wv, M, N, K) : 0) +
                      dkt_half_act_bound(t->dev, xdt, wdt, 0, xv, wv, M, N, K),
                  dkt_tol(xdt, K));
      }
    }
  }
  dk_tensor_free(x); dk_tensor_free(w); dk_tensor_free(o);
  free(xv); free(wv); free(got); free(want);
}

DKT_TEST(quant_linear, 0) {
  int k;
  for (k = 0; k < QT_NMORE; k++) {
    dk_dtype wdt = qt_more[k];
    int big = dk_dtype_block(wdt) == 256;
    /* K: whole blocks, and for the 32-value formats not a multiple of 256 */
    qt_linear_case(t, DK_F32, wdt, 1, 37, big ? 512 : 96);
    qt_linear_case(t, DK_F16, wdt, 3, 20, big ? 256 : 160);
    qt_linear_case(t, DK_F32, wdt, 19, 45, big ? 768 : 288);   /* the matrix-matrix path */
    qt_linear_case(t, DK_BF16, wdt, 6, 9, big ? 256 : 32);
    /* decode over many rows (lavapipe's row kernel: 2 and 8 rows a lane) */
    qt_linear_case(t, DK_F32, wdt, 1, 1100, big ? 512 : 640);
    if (!big) qt_linear_case(t, DK_F32, wdt, 1, 4200, 640);
    /* rows of whole chunks of eight blocks on the 16-byte grid (lavapipe's texel chunks) */
    if (!big) qt_linear_case(t, DK_F32, wdt, 1, 1100, 512);
    if (!big) qt_linear_case(t, DK_F32, wdt, 3, 40, 512);
  }
}

/* Vulkan's GPU kernels for these formats, forced onto any Vulkan device
 * (DEVKIT_VULKAN_MATVEC=split, lavapipe included): matvec.comp at decode,
 * matmul.comp's matmul_qk for prompts (rows of x past one 64-row tile,
 * f16 x and out, a 768-wide K of three super-blocks) */
DKT_TEST(quant_linear_gpu_kernels, 0) {
  char *was;
  int k;
  if (t->dev.backend != DK_VULKAN) { dkt_skip(t, "vulkan only (DEVKIT_VULKAN_MATVEC=split)"); return; }
  was = dkt_reinit_env(t, "DEVKIT_VULKAN_MATVEC", "split");
  for (k = 0; k < QT_NMORE; k++) {
    dk_dtype wdt = qt_more[k];
    int big = dk_dtype_block(wdt) == 256;
    qt_linear_case(t, DK_F32, wdt, 2, 37, big ? 512 : 96);
    qt_linear_case(t, DK_F32, wdt, 70, 45, big ? 768 : 288);
    qt_linear_case(t, DK_F16, wdt, 12, 65, big ? 256 : 160);
  }
  free(dkt_reinit_env(t, "DEVKIT_VULKAN_MATVEC", was));
  free(was);
}

/* Prompt-sized and one-row products of the same weights and activations.
 * On the CPU both round x to q8 in 32-value blocks the same way (the
 * integer prompt product of backends/cpu_igemm.h, the decode dot), so each
 * prompt row equals its one-row product up to float summation order: far
 * tighter than the q8 bound the double-reference tests allow, so a wrong
 * panel layout, scale or min that hides in that bound shows here. Elsewhere
 * (and in the portable kernel class, DEVKIT_CPU_ISA=portable, which has no
 * integer prompt product) the two differ by at most the activations'
 * rounding. q8_0, q2_K, q3_K and q6_K have the integer prompt product only
 * in the avx512 class on a CPU with VNNI; elsewhere they too take the wider
 * bound. So do 16 rows or more in the amx class (x in bf16 on AMX tiles),
 * plus their bf16 rounding.
 * Shapes: N not a
 * multiple of the 8- or 16-row panel, one panel's second half empty (150 =
 * 128 + 16 + 6), more than one 128-column tile, more 32-value blocks than
 * one packed k slice (16), M not a multiple of the 4- or 8-row micro-kernel. */
DKT_TEST(quant_prompt_rows_match_decode, 0) {
  static const dk_dtype types[17] = {DK_Q4_0,   DK_Q4_1,   DK_Q5_0,    DK_Q5_1,  DK_Q4_K,    DK_Q5_K,   DK_Q2_K,
                                     DK_Q3_K,   DK_Q6_K,   DK_Q8_0,    DK_IQ4_NL, DK_IQ4_XS, DK_IQ3_XXS, DK_IQ3_S,
                                     DK_IQ2_XXS, DK_IQ2_XS, DK_IQ2_S};
  int k, iprompt, lanes;
  for (k = 0; k < 34; k++) {
    const dk_dtype wdt = types[k % 17];
    const int64_t M = k < 17 ? 13 : 21, N = k < 17 ? 21 : 150, K = dk_dtype_block(wdt) == 256 ? 768 : 608;
    int64_t xs[2] = {M, K}, os[2] = {M, N}, x1s[2] = {1, K}, o1s[2] = {1, N}, m;
    double *xv = NULL, *wv = NULL, *got = dkt_alloc(M * N), *one = dkt_alloc(M * N);
    dk_tensor *x = dkt_random(t, t->dev, DK_F32, 2, xs, "x", -1, 1, &xv), *w = qt_weights(t, wdt, N, K, &wv);
    dk_tensor *o = dkt_tensor(t, t->dev, DK_F32, 2, os, "o", NULL), *o1 = dkt_tensor(t, t->dev, DK_F32, 2, o1s, "o1", NULL);
    char what[96];
    if (!x || !w || !o || !o1 || !dk_op_supported(t->dev.backend, "dk_linear", wdt, 1)) goto next;
    if (dk_linear(o, x, w, NULL) != DK_OK || !dkt_read(t, o, got)) {
      dkt_fail_at(t, __FILE__, __LINE__, "dk_linear w %s, %lld rows: %s", dk_dtype_name(wdt), (long long)M, dk_last_error());
      goto next;
    }
    for (m = 0; m < M; m++) {
      dk_tensor *x1 = dkt_tensor(t, t->dev, DK_F32, 2, x1s, "x1", xv + m * K);
      if (!x1 || dk_linear(o1, x1, w, NULL) != DK_OK || !dkt_read(t, o1, one + m * N)) {
        dkt_fail_at(t, __FILE__, __LINE__, "dk_linear w %s, row %lld alone: %s", dk_dtype_name(wdt), (long long)m, dk_last_error());
        dk_tensor_free(x1);
        goto next;
      }
      dk_tensor_free(x1);
    }
    snprintf(what, sizeof what, "linear w %s, %lld rows at once vs one at a time", dk_dtype_name(wdt), (long long)M);
    /* the CPU's integer prompt product rounds x as its decode does, but for
       the K-quants in the classes whose decode rounds dword-lane blocks */
    iprompt = t->dev.backend == DK_CPU && dkt_cpu_integer_prompt(wdt, M);
    lanes = iprompt && dkt_cpu_kq_lanes(wdt);
    dkt_close(t, what, got, one, M * N,
              iprompt && !lanes ? 1e-6 * sqrt((double)K)
                                : (lanes ? 2 : 1) * dkt_q8_act_bound(xv, wv, M, N, K) + dkt_tol(DK_F32, K) * sqrt((double)K) +
                                      dkt_half_act_bound(t->dev, DK_F32, wdt, 0, xv, wv, M, N, K),
              1e-6);
  next:
    dk_tensor_free(x); dk_tensor_free(w); dk_tensor_free(o); dk_tensor_free(o1);
    free(xv); free(wv); free(got); free(one);
  }
}

/* every type's quantizer keeps the round trip within a bound set by its code:
 * uniform values in [-1, 1] with a step h between codes have an RMS error
 * near h/sqrt(12); h is about 2/15 (q4_1, q4_K), 2/32 (q5_0), 2/31 (q5_1,
 * q5_K), 1.8/3 (q2_K, groups of 16), 1/4 (q3_K), 1/32 (q6_K). The bounds are
 * 1.25x those; iq4_nl and iq4_xs (16 levels, spaced 9-24 apart out of 127)
 * take q4_1's. iq3_xxs and iq3_s have 16 levels too (8 magnitudes, signed:
 * 0.037 unconstrained), but four values at a time take only the codebook's
 * points (256 or 512 of the 4096), and iq3_xxs's signs an even count of
 * negatives: no closed form, so about 1.25x what the quantizer gave when
 * written (0.109, 0.068), a guard against it getting worse. The iq2
 * formats likewise (three magnitudes, eight values to a point of 256, 512
 * or 1024 of the 6561; 0.187, 0.162, 0.132). */
DKT_TEST(quant_roundtrip_error, DKT_ONCE) {
  static const double bound[QT_NMORE] = {0.048, 0.023, 0.023, 0.22, 0.09, 0.048, 0.023, 0.0113, 0.048, 0.048, 0.136, 0.085,
                                         0.234, 0.203, 0.165};
  int64_t n = 256 * 64, i;
  float *v = (float *)malloc((size_t)n * 4), *back = (float *)malloc((size_t)n * 4);
  void *q = malloc((size_t)n * 2);
  int k;
  for (i = 0; i < n; i++) v[i] = (float)dkt_uniform(t, -1, 1);
  for (k = 0; k < QT_NMORE; k++) {
    double se = 0;
    memset(back, 0, (size_t)n * 4);
    dk_quantize(qt_more[k], v, n, q);
    dk_dequantize(qt_more[k], q, n, back);
    for (i = 0; i < n; i++) se += ((double)back[i] - v[i]) * ((double)back[i] - v[i]);
    se = sqrt(se / (double)n);
    dkt_note(t, "%s: rmse %.5f (bound %.4f)", dk_dtype_name(qt_more[k]), se, bound[k]);
    DKT_CHECK(t, se < bound[k], "%s round trip rmse %.5f, over the bound %.4f", dk_dtype_name(qt_more[k]), se, bound[k]);
  }
  free(v); free(back); free(q);
}

/* Every backend holds every type in linear, embedding and copy; CUDA refuses
 * the types after q4_0 under DEVKIT_CUDA_KQUANTS=0 (the dispatcher's
 * DK_ERR_UNSUPPORTED naming op, type and backend), and the iq types unless
 * DEVKIT_CUDA_IQ=1 (their kernels have not run on a GPU yet). */
DKT_TEST(quant_backends_offer, DKT_ONCE) {
  const char *e = getenv("DEVKIT_CUDA_KQUANTS"), *e4 = getenv("DEVKIT_CUDA_IQ");
  int on = !(e && e[0] == '0'), on4 = on && e4 && e4[0] == '1', k, b;
  for (b = 0; b < DK_BACKEND_COUNT; b++) {
    if (!dk_op_supported((dk_backend)b, "dk_linear", DK_F32, 1)) {
      dkt_note(t, "backend %d not compiled in", b);
      continue;
    }
    for (k = 0; k < QT_NMORE; k++) {
      int iq = qt_more[k] >= DK_IQ4_NL, want = b == DK_CUDA ? (iq ? on4 : on) : 1;
      DKT_CHECK(t, dk_op_supported((dk_backend)b, "dk_linear", qt_more[k], 1) == want, "backend %d linear %s: want %d", b,
                dk_dtype_name(qt_more[k]), want);
      DKT_CHECK(t, dk_op_supported((dk_backend)b, "dk_embedding", qt_more[k], 1) == want, "backend %d embedding %s", b,
                dk_dtype_name(qt_more[k]));
      DKT_CHECK(t, dk_op_supported((dk_backend)b, "dk_copy", qt_more[k], 0), "backend %d copy %s", b,
                dk_dtype_name(qt_more[k]));
    }
  }
}

/* dk_quantize writes gguf's bytes for the types gguf quantizes (values of
 * every magnitude, zero and constant blocks, ties in magnitude) */
DKT_TEST(quant_quantize_matches_gguf, DKT_ONCE) {
  static const dk_dtype types[5] = {DK_Q8_0, DK_Q4_0, DK_Q4_1, DK_Q5_0, DK_Q5_1};
  int k;
  for (k = 0; k < 5; k++) {
    qt_ref r;
    size_t nb, i;
    uint8_t *got;
    if (!qt_load(t, "quantize", types[k], &r)) { free(r.mem); continue; }
    nb = (size_t)r.nblocks * r.bb;
    got = (uint8_t *)malloc(nb);
    DKT_CHECK(t, dk_quantize(types[k], r.vals, (int64_t)r.nblocks * r.bs, got) == nb, "%s: size", dk_dtype_name(types[k]));
    for (i = 0; i < nb; i++)
      if (got[i] != r.blocks[i]) {
        dkt_fail_at(t, __FILE__, __LINE__, "%s: byte %zu (block %zu) is 0x%02x, gguf wrote 0x%02x", dk_dtype_name(types[k]), i,
                    i / r.bb, got[i], r.blocks[i]);
        break;
      }
    free(got);
    free(r.mem);
  }
}

/* iq4_xs's quantizer gives every value the level nearest it under its
 * group's coded scale (ties to the lower): the codes, read from the blocks
 * as GGUF lays them out, against a search of the 16 levels here. The
 * quantizer finds that level by a cell table (cpu_quant.h), which must agree
 * with a search everywhere: values uniform, heavy-tailed and with an
 * outlier a group, so that x / scale crosses every cell. */
DKT_TEST(quant_iq4_codes_nearest, DKT_ONCE) {
  static const int lv[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  enum { NB = 96 };
  float *v = (float *)malloc(NB * 256 * sizeof *v);
  uint8_t *q = (uint8_t *)malloc(NB * 136);
  int64_t b, bad = 0, i;
  for (i = 0; i < NB * 256; i++) {
    double u = dkt_uniform(t, -1, 1);
    v[i] = (float)(i / 256 % 3 == 0 ? u : i / 256 % 3 == 1 ? u * u * u : (i % 32 == 5 ? 8 * u : u));
  }
  DKT_CHECK(t, dk_quantize(DK_IQ4_XS, v, NB * 256, q) == NB * 136, "iq4_xs: size");
  for (b = 0; b < NB; b++) {
    const uint8_t *blk = q + b * 136;
    float d = dk_f16_to_f32((uint16_t)(blk[0] | blk[1] << 8));
    int sh = blk[2] | blk[3] << 8, j, k;
    for (j = 0; j < 8; j++) {
      int ls = ((blk[4 + j / 2] >> (4 * (j & 1)) & 15) | ((sh >> (2 * j)) & 3) << 4) - 32;
      float dl = d * (float)ls;
      for (k = 0; k < 32; k++) {
        int code = (blk[8 + 16 * j + (k & 15)] >> (k < 16 ? 0 : 4)) & 15, want = 8, l;
        if (dl != 0.0f) {
          double x = (double)(v[b * 256 + 32 * j + k] / dl), best = 1e300;
          for (l = 0; l < 16; l++)
            if (fabs(x - lv[l]) < best) { best = fabs(x - lv[l]); want = l; }
        }
        if (code != want && bad++ < 3)
          dkt_fail_at(t, __FILE__, __LINE__, "iq4_xs block %lld group %d value %d: code %d, nearest level %d", (long long)b, j, k, code, want);
      }
    }
  }
  DKT_CHECK(t, bad == 0, "iq4_xs: %lld codes not the nearest level", (long long)bad);
  free(v);
  free(q);
}
