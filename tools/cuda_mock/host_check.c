/* tools/cuda_mock/host_check.c — drives backends/cuda.h against the mock
 * driver (libcuda_mock.c) to check the host side without a GPU: probing,
 * devices and properties, allocation and the caches, staged transfers in
 * every direction, copies between logical devices and GPUs, every op's
 * launch parameters (the mock checks ranges, contexts and grid limits),
 * the embedding status slots, out of memory, launch errors and device faults.
 * Kernels do not run, so no computed value is checked here: that needs a GPU
 * (tests/ on cuda:0).
 *
 * Run by tools/check_cuda_host.sh, which builds both with ASan and UBSan. Exit
 * status 0 when every check passed.
 */
#define _GNU_SOURCE
#define DEVKIT_IMPLEMENTATION
#include "../../devkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int fails = 0, checks = 0;

#define CHECK(cond, ...)                                                   \
  do {                                                                     \
    checks++;                                                              \
    if (!(cond)) {                                                         \
      fails++;                                                             \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                          \
      printf(__VA_ARGS__);                                                 \
      printf("\n");                                                        \
    }                                                                      \
  } while (0)
#define OKS(expr) CHECK((expr) == DK_OK, "%s -> %s: %s", #expr, dk_status_name(dk_last_status()), dk_last_error())
#define HAS(s) CHECK(strstr(dk_last_error(), (s)) != NULL, "message lacks \"%s\": %s", (s), dk_last_error())

static dk_device cuda(int i) { dk_device d; d.backend = DK_CUDA; d.index = i; return d; }
static dk_device cpu0(void) { dk_device d; d.backend = DK_CPU; d.index = 0; return d; }

static unsigned char *pattern(size_t n, unsigned seed) {
  unsigned char *p = (unsigned char *)malloc(n ? n : 1);
  size_t i;
  for (i = 0; i < n; i++) { seed = seed * 1103515245u + 12345u; p[i] = (unsigned char)(seed >> 16); }
  return p;
}

static dk_tensor *make(dk_device d, dk_dtype t, int nd, const int64_t *sh, const char *name) {
  dk_tensor *x = NULL;
  if (dk_tensor_new(d, t, nd, sh, name, &x) != DK_OK) { CHECK(0, "dk_tensor_new %s: %s", name, dk_last_error()); return NULL; }
  {
    size_t n = dk_tensor_nbytes(x);
    unsigned char *p = pattern(n, 7);
    if (t == DK_F32 || t == DK_F16 || t == DK_BF16) memset(p, 0, n);   /* finite values for the op smoke tests */
    OKS(dk_tensor_upload(x, p, n));
    free(p);
  }
  return x;
}

static void roundtrip(dk_device d, dk_dtype t, int64_t n) {
  dk_tensor *x = NULL;
  size_t nb;
  unsigned char *in, *out;
  if (dk_tensor_new(d, t, 1, &n, "roundtrip", &x) != DK_OK) { CHECK(0, "%s", dk_last_error()); return; }
  nb = dk_tensor_nbytes(x);
  in = pattern(nb, (unsigned)n);
  out = (unsigned char *)calloc(nb ? nb : 1, 1);
  OKS(dk_tensor_upload(x, in, nb));
  OKS(dk_tensor_download(x, out, nb));
  CHECK(memcmp(in, out, nb) == 0, "round trip of %zu bytes on %s differs", nb, dk_device_name(d));
  free(in); free(out);
  dk_tensor_free(x);
}

static void check_devices(void) {
  dk_device_props p;
  CHECK(dk_device_count(DK_CUDA) == 4, "4 logical cuda devices (2 mock GPUs x 2), got %d: %s", dk_device_count(DK_CUDA),
        dk_backend_note(DK_CUDA));
  if (dk_device_count(DK_CUDA) < 4) return;
  OKS(dk_device_properties(cuda(0), &p));
  CHECK(!strcmp(p.name, "Mock GPU 0"), "name %s", p.name);
  CHECK(p.has_uuid && p.uuid[0] == 0xa0 && p.uuid[15] == 0xa0, "uuid");
  CHECK(p.memory_total > 0 && p.memory_free <= p.memory_total, "memory %llu/%llu", (unsigned long long)p.memory_free,
        (unsigned long long)p.memory_total);
  CHECK(p.logical_count == 2 && p.logical_slot == 0 && p.physical_index == 0, "logical split");
  CHECK(p.supports_bf16 && p.subgroup_size == 32 && !p.is_software, "capabilities");
  OKS(dk_device_properties(cuda(3), &p));
  CHECK(p.physical_index == 1 && p.logical_slot == 1 && p.uuid[0] == 0xa1, "cuda:3 is GPU 1, slot 1");
}

static void check_transfers(void) {
  int64_t sizes[5] = {0, 1, 3, 1000, 5000000};   /* the last is 20 MB: three staging chunks */
  int i, d;
  for (d = 0; d < 4; d += 3)
    for (i = 0; i < 5; i++) roundtrip(cuda(d), DK_F32, sizes[i]);
  roundtrip(cuda(1), DK_F16, 4097);
  roundtrip(cuda(1), DK_Q4_0, 32 * 1001);
  roundtrip(cuda(2), DK_Q8_0, 32 * 3);
  /* a view: rows 3 and 4 of [8, 1000] */
  {
    int64_t sh[2] = {8, 1000};
    dk_tensor *x = make(cuda(0), DK_I32, 2, sh, "base"), *v = NULL;
    unsigned char *before = (unsigned char *)malloc(32000), *after = (unsigned char *)malloc(32000), *rows = pattern(8000, 3);
    if (x) {
      OKS(dk_tensor_download(x, before, 32000));
      OKS(dk_narrow(x, 0, 3, 2, &v));
      OKS(dk_tensor_upload(v, rows, 8000));
      OKS(dk_tensor_download(x, after, 32000));
      CHECK(!memcmp(after, before, 12000) && !memcmp(after + 12000, rows, 8000) && !memcmp(after + 20000, before + 20000, 12000),
            "upload into a view wrote outside its rows");
      memset(after, 0, 8000);
      OKS(dk_tensor_download(v, after, 8000));
      CHECK(!memcmp(after, rows, 8000), "download of a view");
    }
    dk_tensor_free(v); dk_tensor_free(x); free(before); free(after); free(rows);
  }
  /* cuda:0 -> cuda:1 (same GPU) -> cuda:2 (other GPU) -> cuda:3 -> cpu, and back with dk_copy_to */
  {
    int64_t n = 3000001;
    dk_tensor *a = NULL, *b = NULL, *c = NULL, *e = NULL, *h = NULL, *back = NULL;
    unsigned char *in = pattern((size_t)n * 2, 11), *out = (unsigned char *)calloc((size_t)n, 2);
    OKS(dk_tensor_new(cuda(0), DK_BF16, 1, &n, "chain", &a));
    if (a) {
      OKS(dk_tensor_upload(a, in, (size_t)n * 2));
      OKS(dk_to(a, cuda(1), &b));
      if (b) OKS(dk_to(b, cuda(2), &c));
      if (c) OKS(dk_to(c, cuda(3), &e));
      if (e) OKS(dk_to(e, cpu0(), &h));
      if (h) {
        OKS(dk_tensor_download(h, out, (size_t)n * 2));
        CHECK(!memcmp(in, out, (size_t)n * 2), "bytes changed along cuda:0 -> 1 -> 2 -> 3 -> cpu");
      }
      OKS(dk_tensor_new(cuda(0), DK_BF16, 1, &n, "back", &back));
      if (back && c) {
        OKS(dk_copy_to(back, c));
        memset(out, 0, (size_t)n * 2);
        OKS(dk_tensor_download(back, out, (size_t)n * 2));
        CHECK(!memcmp(in, out, (size_t)n * 2), "dk_copy_to cuda:2 -> cuda:0");
      }
    }
    dk_tensor_free(a); dk_tensor_free(b); dk_tensor_free(c); dk_tensor_free(e); dk_tensor_free(h); dk_tensor_free(back);
    free(in); free(out);
  }
}

/* every op once: the mock checks what each launch touches */
static void check_ops(void) {
  dk_device d = cuda(1);
  int64_t s23[2] = {2, 3}, s3[1] = {3}, s2x5x64[3] = {2, 5, 64}, s64[1] = {64};
  int64_t sq[3] = {5, 4, 16}, skv[3] = {9, 2, 16}, sp[1] = {5}, sid[2] = {2, 3}, stab[2] = {50, 64}, sout[3] = {2, 3, 64};
  dk_dtype dts[3] = {DK_F32, DK_F16, DK_BF16}, wdts[5] = {DK_F32, DK_F16, DK_BF16, DK_Q8_0, DK_Q4_0};
  int i, j, perm[3] = {2, 0, 1};
  int32_t ids[6] = {0, 49, 7, 7, 23, 1}, pos[5] = {0, 1, 2, 3, 4};
  for (i = 0; i < 3; i++) {
    dk_dtype t = dts[i];
    dk_tensor *a = make(d, t, 2, s23, "a"), *b = make(d, t, 1, s3, "b"), *o = make(d, t, 2, s23, "o");
    dk_tensor *x = make(d, t, 3, s2x5x64, "x"), *y = make(d, t, 3, s2x5x64, "y"), *w = make(d, DK_F32, 1, s64, "w");
    dk_tensor *q = make(d, t, 3, sq, "q"), *k = make(d, DK_F16, 3, skv, "k"), *v = make(d, DK_F16, 3, skv, "v");
    dk_tensor *ao = make(d, t, 3, sq, "attn_out"), *p = NULL, *ii = NULL, *tab = NULL, *eo = make(d, t, 3, sout, "emb_out");
    dk_tensor *tr = NULL, *am = NULL, *view = NULL, *cc = NULL;
    int64_t str[3] = {64, 2, 5}, sam[2] = {2, 5}, scc[3] = {2, 10, 64};
    OKS(dk_add(o, a, b)); OKS(dk_div(o, a, a)); OKS(dk_mul(a, a, b));
    OKS(dk_silu(y, x)); OKS(dk_scale(y, x, 2.0f)); OKS(dk_swiglu(y, x, y)); OKS(dk_gelu(x, x));
    OKS(dk_rmsnorm(y, x, w, 1e-5f)); OKS(dk_layernorm(y, x, w, w, 1e-5f)); OKS(dk_rmsnorm(y, x, NULL, 1e-5f));
    OKS(dk_softmax(y, x)); OKS(dk_softmax_masked(y, x, 0.5f, 0));
    OKS(dk_tensor_new(d, DK_I32, 1, sp, "pos", &p));
    if (p) OKS(dk_tensor_upload(p, pos, sizeof pos));
    if (p) {
      /* x [2, 5, 64] is [T, H, D]: 2 positions */
      dk_tensor *p2 = NULL;
      OKS(dk_narrow(p, 0, 0, 2, &p2));
      if (p2) { OKS(dk_rope(y, x, p2, 64, 10000.0f, DK_ROPE_NORMAL)); OKS(dk_rope(y, x, p2, 32, 500.0f, DK_ROPE_NEOX)); }
      dk_tensor_free(p2);
    }
    OKS(dk_attention(ao, q, k, v, 0.25f, 4)); OKS(dk_attention(ao, q, k, v, 0.25f, -1));
    if (p) OKS(dk_attention_pos(ao, q, k, v, p, 0.25f));
    if (p) OKS(dk_attention_pos_window(ao, q, k, v, p, 0.25f, 2));
    /* a window: the rows in it as one call, then a call a row (the mock checks each range) */
    OKS(dk_attention_window(ao, q, k, v, 0.25f, 4, 3)); OKS(dk_attention_window(ao, q, k, v, 0.25f, -1, 2));
    OKS(dk_attention_window(ao, q, k, v, 0.25f, 0, 6));
    {
      /* a prompt with heads of 64 over an f16 cache (DEVKIT_CUDA_FLASH's kernel) */
      int64_t sq2[3] = {70, 4, 64}, skv2[3] = {80, 2, 64};
      dk_tensor *q2 = make(d, t, 3, sq2, "q64"), *k2 = make(d, DK_F16, 3, skv2, "k64");
      dk_tensor *v2 = make(d, DK_F16, 3, skv2, "v64"), *o2 = make(d, t, 3, sq2, "attn_out64");
      OKS(dk_attention(o2, q2, k2, v2, 0.125f, 10));
      /* and with a window (DEVKIT_CUDA_ATTN_WINDOW's kernels, several rows a block) */
      OKS(dk_attention_window(o2, q2, k2, v2, 0.125f, 10, 16));
      dk_tensor_free(q2); dk_tensor_free(k2); dk_tensor_free(v2); dk_tensor_free(o2);
    }
    OKS(dk_tensor_new(d, DK_I32, 2, sid, "ids", &ii));
    if (ii) OKS(dk_tensor_upload(ii, ids, sizeof ids));
    for (j = 0; j < 5 && ii; j++) {
      tab = make(d, wdts[j], 2, stab, "table");
      OKS(dk_embedding(eo, tab, ii));
      dk_tensor_free(tab);
    }
    OKS(dk_tensor_new(d, t, 3, str, "transposed", &tr));
    if (tr) OKS(dk_transpose(tr, x, perm));
    OKS(dk_tensor_new(d, DK_I32, 2, sam, "argmax", &am));
    if (am) { OKS(dk_argmax(am, x)); OKS(dk_sample(am, x, 0.8f, 5, 0.9f, 42)); OKS(dk_sample(am, x, 0.0f, 0, 1.0f, 1)); }
    OKS(dk_tensor_new(d, t, 3, scc, "cat", &cc));
    if (cc) OKS(dk_concat(cc, x, y, 1));
    OKS(dk_narrow(cc, 1, 2, 5, &view));
    if (view) { OKS(dk_copy(view, x)); OKS(dk_copy(y, view)); }
    OKS(dk_copy(y, x));
    /* linear: decode (M = 1, 3, 4) and prompt (M = 37) for every weight dtype */
    for (j = 0; j < 5; j++) {
      int64_t ws[2] = {33, 64}, xs[2] = {37, 64}, os[2] = {37, 33}, bs[1] = {33}, ms[3] = {1, 3, 4};
      dk_tensor *W = make(d, wdts[j], 2, ws, "W"), *bias = make(d, t, 1, bs, "bias");
      int m;
      for (m = 0; m < 4; m++) {
        int64_t M = m < 3 ? ms[m] : 37;
        dk_tensor *X, *O;
        xs[0] = os[0] = M;
        X = make(d, t, 2, xs, "X");
        O = make(d, t, 2, os, "O");
        OKS(dk_linear(O, X, W, m & 1 ? bias : NULL));
        /* the norm folded in (DEVKIT_CUDA_FUSED_GEMV=1: dk_gemv2n_*, its norm weight checked) */
        OKS(dk_rmsnorm_linear(O, X, m & 2 ? NULL : w, W, m & 1 ? bias : NULL, 1e-5f));
        OKS(dk_swiglu_linear(O, X, X, W, m & 1 ? bias : NULL));
        dk_tensor_free(X); dk_tensor_free(O);
      }
      dk_tensor_free(W); dk_tensor_free(bias);
    }
    /* a K-quant weight at prompt size (dequantized a slab at a time where
     * cuBLAS or DEVKIT_CUDA_PROMPT_TC=1 takes it) and at decode */
    {
      int64_t ws[2] = {33, 256}, xs[2] = {37, 256}, os[2] = {37, 33};
      dk_tensor *W = make(d, DK_Q4_K, 2, ws, "W_q4_K"), *X = make(d, t, 2, xs, "X"), *O = make(d, t, 2, os, "O");
      OKS(dk_linear(O, X, W, NULL));
      dk_tensor_free(X); dk_tensor_free(O);
      /* decode: dk_gemv_w_more, or dk_gemv2k_q4_k for f32 x (DEVKIT_CUDA_GEMVK=1) */
      xs[0] = os[0] = 3;
      X = make(d, t, 2, xs, "X"); O = make(d, t, 2, os, "O");
      OKS(dk_linear(O, X, W, NULL));
      dk_tensor_free(W); dk_tensor_free(X); dk_tensor_free(O);
    }
    /* matmul: plain, batched with broadcasting, 1-D */
    {
      int64_t as[4] = {2, 1, 4, 9}, bsh[3] = {3, 9, 5}, os[4] = {2, 3, 4, 5}, a1[1] = {9}, b2[2] = {9, 5}, o1[1] = {5};
      dk_tensor *A = make(d, t, 4, as, "A"), *B = make(d, t, 3, bsh, "B"), *O = make(d, t, 4, os, "O");
      dk_tensor *A1 = make(d, t, 1, a1, "A1"), *B2 = make(d, t, 2, b2, "B2"), *O1 = make(d, t, 1, o1, "O1");
      OKS(dk_matmul(O, A, B)); OKS(dk_matmul(O1, A1, B2));
      dk_tensor_free(A); dk_tensor_free(B); dk_tensor_free(O); dk_tensor_free(A1); dk_tensor_free(B2); dk_tensor_free(O1);
    }
    { /* matmul with rows of whole 16 bytes (DEVKIT_CUDA_MMA=1: dk_gemm_mma_*_nn), batched */
      int64_t as[3] = {2, 40, 64}, bsh[3] = {2, 64, 136}, os[3] = {2, 40, 136};
      dk_tensor *A = make(d, t, 3, as, "A8"), *B = make(d, t, 3, bsh, "B8"), *O = make(d, t, 3, os, "O8");
      OKS(dk_matmul(O, A, B));
      dk_tensor_free(A); dk_tensor_free(B); dk_tensor_free(O);
    }
    OKS(dk_sync(d));
    dk_tensor_free(a); dk_tensor_free(b); dk_tensor_free(o); dk_tensor_free(x); dk_tensor_free(y); dk_tensor_free(w);
    dk_tensor_free(q); dk_tensor_free(k); dk_tensor_free(v); dk_tensor_free(ao); dk_tensor_free(p); dk_tensor_free(ii);
    dk_tensor_free(eo); dk_tensor_free(tr); dk_tensor_free(am); dk_tensor_free(view); dk_tensor_free(cc);
  }
}

static void check_embedding_status(void) {
  int64_t ts[2] = {10, 4}, is[1] = {3}, os[2] = {3, 4};
  float table[40], out[12], sevens[12];
  int32_t bad_ids[3] = {1, 12, -1}, good_ids[3] = {1, 2, 9};
  dk_tensor *tab = NULL, *ids = NULL, *o = NULL;
  int i;
  for (i = 0; i < 40; i++) table[i] = (float)i;
  for (i = 0; i < 12; i++) sevens[i] = 7.0f;
  OKS(dk_tensor_new(cuda(0), DK_F32, 2, ts, "tok_embeddings", &tab));
  OKS(dk_tensor_new(cuda(0), DK_I32, 1, is, "tokens", &ids));
  OKS(dk_tensor_new(cuda(0), DK_F32, 2, os, "emb", &o));
  if (!tab || !ids || !o) return;
  OKS(dk_tensor_upload(tab, table, sizeof table));
  OKS(dk_tensor_upload(o, sevens, sizeof sevens));
  OKS(dk_tensor_upload(ids, bad_ids, sizeof bad_ids));
  OKS(dk_embedding(o, tab, ids));   /* the device finds out; the op itself succeeds */
  CHECK(dk_tensor_download(o, out, sizeof out) == DK_ERR_INVALID, "the bad id must be reported at the download");
  HAS("holds 12 at position 1"); HAS("tok_embeddings"); HAS("'tokens'"); HAS("10 rows");
  CHECK(!memcmp(out, sevens, sizeof out), "a dk_embedding with a bad id must write nothing");
  OKS(dk_sync(cuda(0)));   /* reported once */
  OKS(dk_tensor_upload(ids, good_ids, sizeof good_ids));
  OKS(dk_embedding(o, tab, ids));
  OKS(dk_tensor_download(o, out, sizeof out));
  CHECK(out[0] == 4.0f && out[4] == 8.0f && out[11] == 39.0f, "gather (emulated by the mock)");
  /* more embeddings than status slots between two syncs, the bad one in the
   * middle: every op succeeds, the next sync reports it, the one after is clean */
  for (i = 0; i < 150; i++) {
    OKS(dk_tensor_upload(ids, i == 30 ? bad_ids : good_ids, sizeof good_ids));
    OKS(dk_embedding(o, tab, ids));
  }
  CHECK(dk_sync(cuda(0)) == DK_ERR_INVALID, "a bad id found when the slots were recycled is reported at the next sync");
  HAS("holds 12 at position 1");
  OKS(dk_sync(cuda(0)));
  dk_tensor_free(tab); dk_tensor_free(ids); dk_tensor_free(o);
}

static void check_oom(void) {
  int64_t big = (int64_t)1 << 29, small = 1000;   /* 2 GiB of f32 on a 1 GiB mock GPU */
  dk_tensor *x = NULL, *y = NULL;
  CHECK(dk_tensor_new(cuda(2), DK_F32, 1, &big, "kv_cache", &x) == DK_ERR_OUT_OF_MEMORY, "2 GiB on a 1 GiB device");
  HAS("out of memory on cuda:2"); HAS("'kv_cache'"); HAS("2147483648 bytes"); HAS("free");
  CHECK(x == NULL, "no tensor after OOM");
  OKS(dk_tensor_new(cuda(2), DK_F32, 1, &small, "after_oom", &y));
  roundtrip(cuda(2), DK_F32, 1234);
  dk_tensor_free(y);
}

static void check_launch_error(void) {
  int64_t s[1] = {100};
  dk_tensor *a = make(cuda(0), DK_F32, 1, s, "a"), *o = make(cuda(0), DK_F32, 1, s, "o");
  setenv("MOCK_CUDA_LAUNCH_FAIL", "dk_binary_f32", 1);
  CHECK(dk_add(o, a, a) == DK_ERR_BACKEND, "a failed launch is DK_ERR_BACKEND");
  HAS("dk_add"); HAS("dk_binary_f32"); HAS("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES");
  unsetenv("MOCK_CUDA_LAUNCH_FAIL");
  OKS(dk_add(o, a, a));
  OKS(dk_sync(cuda(0)));
  dk_tensor_free(a); dk_tensor_free(o);
}

/* in a child: the fault is sticky, as on a real GPU */
static void check_fault(void) {
  pid_t pid;
  int st = 0;
  fflush(stdout);
  pid = fork();
  if (pid == 0) {
    int64_t s[1] = {100};
    dk_tensor *a = make(cuda(0), DK_F32, 1, s, "a"), *o = make(cuda(0), DK_F32, 1, s, "o");
    fails = 0;
    OKS(dk_sync(cuda(0)));
    setenv("MOCK_CUDA_FAULT_AFTER", "dk_unary_f32", 1);
    OKS(dk_add(o, a, a));
    OKS(dk_silu(o, a));   /* faults "on the device": not visible yet */
    CHECK(dk_sync(cuda(0)) == DK_ERR_BACKEND, "the fault is reported at the sync");
    HAS("CUDA_ERROR_ILLEGAL_ADDRESS"); HAS("dk_add [dk_binary_f32], dk_silu [dk_unary_f32]"); HAS("restart the process");
    CHECK(dk_sync(cuda(0)) == DK_ERR_BACKEND, "and stays");
    HAS("already failed earlier");
    fflush(stdout);
    _exit(fails ? 1 : 0);   /* no cleanup: the context is gone, like a real one */
  }
  waitpid(pid, &st, 0);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fault checks (child) failed");
}

/* dk_graph on cuda:0: a decode-like step (a token's embedding row written
 * into a cache at a position, both read on the device, then a normed
 * product that takes a scratch buffer) recorded once and replayed with new
 * ids and positions. By default it is a captured CUDA graph (the mock runs
 * its launches at each cuGraphLaunch); with DEVKIT_CUDA_GRAPH=0 the core
 * re-runs the calls; the results and the errors must be the same. */
static void check_graph(void) {
  dk_device d = cuda(0);
  const char *e = getenv("DEVKIT_CUDA_GRAPH");
  int native = !(e && !strcmp(e, "0")), step, j, ok;
  int64_t ts[2] = {10, 4}, one[1] = {1}, es[2] = {1, 4}, cs[2] = {6, 4}, ws[2] = {8, 4}, os[2] = {1, 8}, w1[1] = {4};
  float table[40], cache[24], before[24];
  int32_t id, p;
  dk_tensor *tab = make(d, DK_F32, 2, ts, "tok_embeddings"), *ids = make(d, DK_I32, 1, one, "token");
  dk_tensor *pos = make(d, DK_I32, 1, one, "position"), *emb = make(d, DK_F32, 2, es, "x");
  dk_tensor *kv = make(d, DK_F32, 2, cs, "k_cache"), *W = make(d, DK_F16, 2, ws, "W"), *nw = make(d, DK_F32, 1, w1, "norm");
  dk_tensor *o = make(d, DK_F32, 2, os, "out");
  dk_graph *g = NULL;
  dk_status s;
  if (!tab || !ids || !pos || !emb || !kv || !W || !nw || !o) return;
  for (j = 0; j < 40; j++) table[j] = (float)j;
  OKS(dk_tensor_upload(tab, table, sizeof table));
  id = 0; p = 0;
  OKS(dk_tensor_upload(ids, &id, 4));
  OKS(dk_tensor_upload(pos, &p, 4));
  OKS(dk_graph_begin(d));
  OKS(dk_embedding(emb, tab, ids));
  OKS(dk_index_copy(kv, emb, pos, 0));
  OKS(dk_rmsnorm_linear(o, emb, nw, W, NULL, 1e-5f));
  OKS(dk_graph_end(d, &g));
  CHECK(dk_graph_native(g) == native, "dk_graph_native %d with DEVKIT_CUDA_GRAPH=%s", dk_graph_native(g), e ? e : "(unset)");
  CHECK(dk_graph_ops(g) == 3, "3 ops recorded, not %d", dk_graph_ops(g));
  for (step = 0; step < 6; step++) {
    id = 9 - step; p = step;
    OKS(dk_tensor_upload(ids, &id, 4));
    OKS(dk_tensor_upload(pos, &p, 4));
    OKS(dk_graph_replay(g));
  }
  OKS(dk_tensor_download(kv, cache, sizeof cache));
  for (ok = 1, step = 0; step < 6; step++)
    for (j = 0; j < 4; j++) ok &= cache[step * 4 + j] == table[(9 - step) * 4 + j];
  CHECK(ok, "each replay wrote its token's row at its position (emulated by the mock)");
  /* a bad token id: reported at the next sync, naming the op; nothing written */
  id = 12; p = 0;
  OKS(dk_tensor_upload(ids, &id, 4));
  OKS(dk_tensor_upload(pos, &p, 4));
  /* (re-run calls meet it at dk_index_copy's read-back of its ids) */
  if ((s = dk_graph_replay(g)) == DK_OK) s = dk_sync(d);
  CHECK(s == DK_ERR_INVALID, "a bad id in a replay is reported at the next sync");
  HAS("dk_embedding"); HAS("holds 12 at position 0"); HAS("'token'");
  OKS(dk_sync(d));   /* once */
  OKS(dk_tensor_download(kv, before, sizeof before));
  /* a position past the cache: reported (by the op without the device
   * check, at the sync with it), naming dk_index_copy and the cache */
  id = 3; p = 7;
  OKS(dk_tensor_upload(ids, &id, 4));
  OKS(dk_tensor_upload(pos, &p, 4));
  if ((s = dk_graph_replay(g)) == DK_OK) s = dk_sync(d);
  CHECK(s == DK_ERR_INVALID, "a position past the cache is refused");
  HAS("dk_index_copy"); HAS("holds 7 at position 0"); HAS("outside [-6, 6)"); HAS("k_cache");
  OKS(dk_sync(d));
  OKS(dk_tensor_download(kv, cache, sizeof cache));
  CHECK(!memcmp(cache, before, sizeof cache), "a replay with a bad position wrote nothing into the cache");
  /* and the graph goes on as before */
  id = 1; p = -1;   /* the last row */
  OKS(dk_tensor_upload(ids, &id, 4));
  OKS(dk_tensor_upload(pos, &p, 4));
  OKS(dk_graph_replay(g));
  OKS(dk_tensor_download(kv, cache, sizeof cache));
  CHECK(cache[20] == 4.0f && cache[23] == 7.0f, "a negative position counts from the end");
  /* freed with a bad id not read yet: still reported, at the next sync */
  id = 10;
  OKS(dk_tensor_upload(ids, &id, 4));
  if ((s = dk_graph_replay(g)) == DK_OK) {
    dk_graph_free(g);
    s = dk_sync(d);
  } else {
    dk_graph_free(g);
  }
  CHECK(s == DK_ERR_INVALID, "a bad id of a replay before dk_graph_free is reported at the next sync");
  HAS("holds 10 at position 0");
  OKS(dk_sync(d));
  {
    /* a window layer's step (dk_attention_pos_window) is captured only with
     * DEVKIT_CUDA_ATTN_WINDOW=1; else its read-back of the positions is
     * refused inside the capture, the recording is dropped, and the device
     * goes on (the model layer then runs the step op by op) */
    int64_t sq[3] = {1, 2, 8}, skv[3] = {6, 1, 8};
    dk_tensor *q = make(d, DK_F32, 3, sq, "q"), *kc = make(d, DK_F32, 3, skv, "kc"), *ao = make(d, DK_F32, 3, sq, "att");
    const char *w = getenv("DEVKIT_CUDA_ATTN_WINDOW");
    int win_on = w && !strcmp(w, "1");
    dk_graph *g2 = NULL;
    dk_status se;
    p = 4;
    OKS(dk_tensor_upload(pos, &p, 4));
    OKS(dk_graph_begin(d));
    s = dk_attention_pos_window(ao, q, kc, kc, pos, 0.5f, 3);
    if (native && !win_on) {
      CHECK(s == DK_ERR_UNSUPPORTED, "dk_attention_pos_window in a capture without the window kernels: %d", (int)s);
      HAS("dk_attention_pos_window"); HAS("DEVKIT_CUDA_ATTN_WINDOW=1");
    } else {
      CHECK(s == DK_OK, "dk_attention_pos_window recorded: %s", dk_last_error());
    }
    se = dk_graph_end(d, &g2);
    if (s == DK_OK) {
      CHECK(se == DK_OK, "the recording ends: %s", dk_last_error());
      if (g2) OKS(dk_graph_replay(g2));
    }
    dk_graph_free(g2);
    OKS(dk_attention_pos_window(ao, q, kc, kc, pos, 0.5f, 3));   /* eagerly: always */
    OKS(dk_sync(d));
    dk_tensor_free(q); dk_tensor_free(kc); dk_tensor_free(ao);
  }
  dk_tensor_free(tab); dk_tensor_free(ids); dk_tensor_free(pos); dk_tensor_free(emb);
  dk_tensor_free(kv); dk_tensor_free(W); dk_tensor_free(nw); dk_tensor_free(o);
}

static void run_all(const char *label) {
  printf("-- %s\n", label);
  OKS(dk_init());
  check_devices();
  if (dk_device_count(DK_CUDA) < 4) return;
  check_transfers();
  check_ops();
  check_embedding_status();
  check_graph();
  check_oom();
  check_launch_error();
  dk_shutdown();
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: host_check path/to/libcuda_mock.so\n"); return 2; }
  setenv("DEVKIT_CUDA_LIBRARY", argv[1], 1);
  setenv("DEVKIT_LOGICAL_DEVICES", "cuda=2", 1);
  setenv("MOCK_CUDA_MEM", "1073741824", 1);
  run_all("memory pools, pinned staging");
  setenv("MOCK_CUDA_NO_PINNED", "1", 1);
  run_all("no pinned memory: pageable transfers");
  unsetenv("MOCK_CUDA_NO_PINNED");
  setenv("DEVKIT_CUDA_NO_POOL", "1", 1);
  run_all("no memory pools: the free-list cache");
  unsetenv("DEVKIT_CUDA_NO_POOL");
  OKS(dk_init());
  check_fault();
  dk_shutdown();
  /* no driver at all, and the stub: probe says why */
  setenv("DEVKIT_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  printf("%d checks, %d failed\n", checks, fails);
  return fails ? 1 : 0;
}
