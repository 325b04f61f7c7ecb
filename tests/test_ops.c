/* tests/test_ops.c — every op, every float dtype, against double-precision
 * references written here. Each test runs on every device present. */
#include "test.h"

static int64_t numel(int nd, const int64_t *s) {
  int64_t n = 1;
  int i;
  for (i = 0; i < nd; i++) n *= s[i];
  return n;
}

/* a tensor of garbage to be overwritten, same everywhere */
static dk_tensor *out_tensor(dkt *t, dk_dtype dt, int nd, const int64_t *s, const char *name) {
  return dkt_random(t, t->dev, dt, nd, s, name, -9, 9, NULL);
}

/* ---- elementwise with broadcasting --------------------------------------- */

static double ref_binary(int op, double a, double b) {
  switch (op) {
  case 0: return a + b;
  case 1: return a - b;
  case 2: return a * b;
  default: return a / b;
  }
}

/* element of a broadcast input for output index idx (out shape os, nd dims) */
static double bcast_get(const double *v, int nd, const int64_t *os, int vnd, const int64_t *vs, int64_t idx) {
  int64_t off = 0, stride = 1;
  int i;
  for (i = nd - 1; i >= 0; i--) {
    int64_t c = idx % os[i];
    int k = i - (nd - vnd);
    idx /= os[i];
    if (k >= 0) {
      if (vs[k] != 1) off += c * stride;
      stride *= vs[k];
    }
  }
  return v[off];
}

typedef dk_status (*binary_fn)(dk_tensor *, const dk_tensor *, const dk_tensor *);

DKT_TEST(ops_binary_broadcast, 0) {
  static const struct { int and_; int64_t as[4]; int bnd; int64_t bs[4]; int ond; int64_t os[4]; } cases[] = {
    {2, {37, 19}, 2, {37, 19}, 2, {37, 19}},
    {3, {3, 5, 7}, 2, {5, 1}, 3, {3, 5, 7}},
    {3, {3, 5, 7}, 1, {7}, 3, {3, 5, 7}},
    {1, {1}, 3, {2, 3, 4}, 3, {2, 3, 4}},
    {4, {2, 1, 3, 1}, 3, {4, 1, 5}, 4, {2, 4, 3, 5}},
    {1, {5000}, 1, {5000}, 1, {5000}},
  };
  binary_fn fns[4] = {dk_add, dk_sub, dk_mul, dk_div};
  const char *names[4] = {"add", "sub", "mul", "div"};
  size_t c;
  int d, op;
  for (d = 0; d < 3; d++) {
    dk_dtype dt = dkt_float_types[d];
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      int64_t n = numel(cases[c].ond, cases[c].os), i;
      double *av, *bv, *got = dkt_alloc(n), *want = dkt_alloc(n);
      dk_tensor *a = dkt_random(t, t->dev, dt, cases[c].and_, cases[c].as, "a", -2, 2, &av);
      dk_tensor *b = dkt_random(t, t->dev, dt, cases[c].bnd, cases[c].bs, "b", 0.5, 3, &bv);
      dk_tensor *o = out_tensor(t, dt, cases[c].ond, cases[c].os, "out");
      for (op = 0; op < 4 && a && b && o; op++) {
        char what[96];
        DKT_OK(t, fns[op](o, a, b));
        if (!dkt_read(t, o, got)) break;
        for (i = 0; i < n; i++) {
          want[i] = ref_binary(op, bcast_get(av, cases[c].ond, cases[c].os, cases[c].and_, cases[c].as, i),
                               bcast_get(bv, cases[c].ond, cases[c].os, cases[c].bnd, cases[c].bs, i));
        }
        snprintf(what, sizeof what, "dk_%s %s case %d", names[op], dk_dtype_name(dt), (int)c);
        dkt_close(t, what, got, want, n, dkt_tol(dt, 1), dkt_tol(dt, 1));
      }
      dk_tensor_free(a); dk_tensor_free(b); dk_tensor_free(o);
      free(av); free(bv); free(got); free(want);
    }
  }
}

/* in place: out is the same tensor as a */
DKT_TEST(ops_binary_in_place, 0) {
  int64_t s[2] = {4, 33};
  double *av, *bv, got[132];
  int i;
  dk_tensor *a = dkt_random(t, t->dev, DK_F32, 2, s, "a", -2, 2, &av);
  dk_tensor *b = dkt_random(t, t->dev, DK_F32, 2, s, "b", -2, 2, &bv);
  if (!a || !b) return;
  DKT_OK(t, dk_add(a, a, b));
  if (dkt_read(t, a, got)) {
    double want[132];
    for (i = 0; i < 132; i++) want[i] = (double)(float)(av[i] + bv[i]);
    dkt_close(t, "a += b", got, want, 132, 0, 1e-7);
  }
  dk_tensor_free(a); dk_tensor_free(b); free(av); free(bv);
}

/* ---- unary ---------------------------------------------------------------- */

typedef dk_status (*unary_fn)(dk_tensor *, const dk_tensor *);

static double ref_unary(int k, double x) {
  switch (k) {
  case 0: return x / (1 + exp(-x));
  case 1: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
  case 2: return 0.5 * x * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
  case 3: return x > 0 ? x : 0;
  case 4: return 1 / (1 + exp(-x));
  case 5: return tanh(x);
  default: return exp(x);
  }
}

DKT_TEST(ops_unary, 0) {
  unary_fn fns[7] = {dk_silu, dk_gelu, dk_gelu_tanh, dk_relu, dk_sigmoid, dk_tanh, dk_exp};
  const char *names[7] = {"silu", "gelu", "gelu_tanh", "relu", "sigmoid", "tanh", "exp"};
  int64_t shapes[3][3] = {{1, 1, 7}, {3, 17, 31}, {2, 4100, 3}};
  int d, k, sh;
  for (d = 0; d < 3; d++)
    for (sh = 0; sh < 3; sh++) {
      dk_dtype dt = dkt_float_types[d];
      int64_t n = numel(3, shapes[sh]), i;
      double *xv, *got = dkt_alloc(n), *want = dkt_alloc(n);
      dk_tensor *x = dkt_random(t, t->dev, dt, 3, shapes[sh], "x", -6, 6, &xv);
      dk_tensor *o = out_tensor(t, dt, 3, shapes[sh], "out");
      for (k = 0; k < 7 && x && o; k++) {
        char what[64];
        DKT_OK(t, fns[k](o, x));
        if (!dkt_read(t, o, got)) break;
        for (i = 0; i < n; i++) want[i] = ref_unary(k, xv[i]);
        snprintf(what, sizeof what, "dk_%s %s", names[k], dk_dtype_name(dt));
        /* exp(6) ~ 400: relative tolerance covers it */
        dkt_close(t, what, got, want, n, dkt_tol(dt, 1) * 2, dkt_tol(dt, 1) * 2);
      }
      dk_tensor_free(x); dk_tensor_free(o); free(xv); free(got); free(want);
    }
}

DKT_TEST(ops_scale_swiglu, 0) {
  int64_t s[2] = {5, 77};
  int d;
  for (d = 0; d < 3; d++) {
    dk_dtype dt = dkt_float_types[d];
    double *gv, *uv, got[385], want[385];
    int i;
    dk_tensor *g = dkt_random(t, t->dev, dt, 2, s, "gate", -5, 5, &gv);
    dk_tensor *u = dkt_random(t, t->dev, dt, 2, s, "up", -3, 3, &uv);
    dk_tensor *o = out_tensor(t, dt, 2, s, "out");
    if (g && u && o) {
      DKT_OK(t, dk_scale(o, g, -0.375f));
      if (dkt_read(t, o, got)) {
        for (i = 0; i < 385; i++) want[i] = gv[i] * -0.375;
        dkt_close(t, "dk_scale", got, want, 385, dkt_tol(dt, 1), dkt_tol(dt, 1));
      }
      DKT_OK(t, dk_swiglu(o, g, u));
      if (dkt_read(t, o, got)) {
        for (i = 0; i < 385; i++) want[i] = gv[i] / (1 + exp(-gv[i])) * uv[i];
        dkt_close(t, "dk_swiglu", got, want, 385, dkt_tol(dt, 1) * 2, dkt_tol(dt, 1) * 2);
      }
    }
    dk_tensor_free(g); dk_tensor_free(u); dk_tensor_free(o); free(gv); free(uv);
  }
}

/* ---- norms and softmax ------------------------------------------------------ */

DKT_TEST(ops_rmsnorm_layernorm, 0) {
  /* 8200: past the 8192 values CUDA's cached norm holds per row */
  int64_t dims[5] = {8, 64, 1792, 4096, 8200};
  int d, k, wd;
  for (d = 0; d < 3; d++)
    for (k = 0; k < 5; k++)
      for (wd = 0; wd < 2; wd++) {
        dk_dtype dt = dkt_float_types[d], wdt = wd ? DK_F32 : dt;
        int64_t D = dims[k], s[2] = {3, D}, n = 3 * D, r, j;
        double *xv, *wv, *bv, *got = dkt_alloc(n), *want = dkt_alloc(n);
        dk_tensor *x = dkt_random(t, t->dev, dt, 2, s, "x", -3, 3, &xv);
        dk_tensor *w = dkt_random(t, t->dev, wdt, 1, &D, "w", -2, 2, &wv);
        dk_tensor *b = dkt_random(t, t->dev, wdt, 1, &D, "b", -1, 1, &bv);
        dk_tensor *o = out_tensor(t, dt, 2, s, "out");
        float eps = 1e-5f;
        int variant;
        for (variant = 0; variant < 4 && x && w && b && o; variant++) {
          char what[96];
          /* 0: rmsnorm w, 1: rmsnorm no w, 2: layernorm w b, 3: layernorm none */
          if (variant == 0) DKT_OK(t, dk_rmsnorm(o, x, w, eps));
          if (variant == 1) DKT_OK(t, dk_rmsnorm(o, x, NULL, eps));
          if (variant == 2) DKT_OK(t, dk_layernorm(o, x, w, b, eps));
          if (variant == 3) DKT_OK(t, dk_layernorm(o, x, NULL, NULL, eps));
          if (!dkt_read(t, o, got)) break;
          for (r = 0; r < 3; r++) {
            double mean = 0, var = 0;
            const double *xr = xv + r * D;
            if (variant >= 2) {
              for (j = 0; j < D; j++) mean += xr[j];
              mean /= (double)D;
            }
            for (j = 0; j < D; j++) var += (xr[j] - mean) * (xr[j] - mean);
            var /= (double)D;
            for (j = 0; j < D; j++) {
              double v = (xr[j] - mean) / sqrt(var + eps);
              if (variant == 0 || variant == 2) v *= wv[j];
              if (variant == 2) v += bv[j];
              want[r * D + j] = v;
            }
          }
          snprintf(what, sizeof what, "norm variant %d, %s x, %s w, D=%lld", variant, dk_dtype_name(dt),
                   dk_dtype_name(wdt), (long long)D);
          dkt_close(t, what, got, want, n, dkt_tol(dt, D) * 4, dkt_tol(dt, D) * 2);
        }
        dk_tensor_free(x); dk_tensor_free(w); dk_tensor_free(b); dk_tensor_free(o);
        free(xv); free(wv); free(bv); free(got); free(want);
      }
}

static void ref_softmax(const double *x, double *y, int64_t rows, int64_t n, int64_t rows_per, int masked, double scale,
                        int off) {
  int64_t r, j;
  for (r = 0; r < rows; r++) {
    int64_t lim = n, i = r % rows_per;
    double m = -INFINITY, z = 0;
    if (masked && off >= 0) lim = i + off + 1 < n ? i + off + 1 : n;
    for (j = 0; j < lim; j++) m = fmax(m, x[r * n + j] * scale);
    for (j = 0; j < lim; j++) z += exp(x[r * n + j] * scale - m);
    for (j = 0; j < n; j++) y[r * n + j] = j < lim ? exp(x[r * n + j] * scale - m) / z : 0.0;
  }
}

DKT_TEST(ops_softmax, 0) {
  int64_t shapes[3][3] = {{2, 3, 5}, {1, 7, 300}, {4, 2, 4099}};
  int offs[4] = {0, 2, -1, 100};
  int d, k, m;
  for (d = 0; d < 3; d++)
    for (k = 0; k < 3; k++) {
      dk_dtype dt = dkt_float_types[d];
      int64_t n = numel(3, shapes[k]), cols = shapes[k][2];
      double *xv, *got = dkt_alloc(n), *want = dkt_alloc(n);
      dk_tensor *x = dkt_random(t, t->dev, dt, 3, shapes[k], "scores", -8, 8, &xv);
      dk_tensor *o = out_tensor(t, dt, 3, shapes[k], "probs");
      for (m = -1; m < 4 && x && o; m++) {
        char what[96];
        if (m < 0) DKT_OK(t, dk_softmax(o, x));
        else DKT_OK(t, dk_softmax_masked(o, x, 0.3f, offs[m]));
        if (!dkt_read(t, o, got)) break;
        ref_softmax(xv, want, n / cols, cols, shapes[k][1], m >= 0, m >= 0 ? (double)0.3f : 1.0, m >= 0 ? offs[m] : -1);
        snprintf(what, sizeof what, "softmax %s shape %d mask %d", dk_dtype_name(dt), k, m < 0 ? -99 : offs[m]);
        dkt_close(t, what, got, want, n, dkt_tol(dt, cols) * 0.5, dkt_tol(dt, cols) * 4);
      }
      dk_tensor_free(x); dk_tensor_free(o); free(xv); free(got); free(want);
    }
}

/* ---- matmul ------------------------------------------------------------------ */

static void ref_matmul(const double *a, int and_, const int64_t *as, const double *b, int bnd, const int64_t *bs,
                       double *o, int ond, const int64_t *os) {
  int64_t M = and_ == 1 ? 1 : as[and_ - 2], K = as[and_ - 1], N = bnd == 1 ? 1 : bs[bnd - 1];
  int nb = ond - (and_ > 1) - (bnd > 1), i;
  int64_t batch = 1, bi, m, n, k;
  for (i = 0; i < nb; i++) batch *= os[i];
  for (bi = 0; bi < batch; bi++) {
    /* batch offsets with broadcasting */
    int64_t ao = 0, bo = 0, rem = bi, astr = M * K, bstr = K * N;
    int abat = and_ > 2 ? and_ - 2 : 0, bbat = bnd > 2 ? bnd - 2 : 0;
    for (i = nb - 1; i >= 0; i--) {
      int64_t c = rem % os[i];
      int ia = i - (nb - abat), ib = i - (nb - bbat);
      rem /= os[i];
      if (ia >= 0) { if (as[ia] != 1) ao += c * astr; astr *= as[ia]; }
      if (ib >= 0) { if (bs[ib] != 1) bo += c * bstr; bstr *= bs[ib]; }
    }
    for (m = 0; m < M; m++)
      for (n = 0; n < N; n++) {
        double s = 0;
        for (k = 0; k < K; k++) s += a[ao + m * K + k] * b[bo + k * N + n];
        o[bi * M * N + m * N + n] = s;
      }
  }
}

DKT_TEST(ops_matmul, 0) {
  static const struct { int and_; int64_t as[4]; int bnd; int64_t bs[4]; int ond; int64_t os[4]; } cases[] = {
    {2, {1, 64}, 2, {64, 33}, 2, {1, 33}},
    {2, {37, 70}, 2, {70, 29}, 2, {37, 29}},
    {2, {128, 256}, 2, {256, 96}, 2, {128, 96}},
    {3, {3, 5, 8}, 3, {3, 8, 6}, 3, {3, 5, 6}},
    {4, {2, 1, 4, 9}, 3, {3, 9, 5}, 4, {2, 3, 4, 5}},
    {1, {13}, 2, {13, 4}, 1, {4}},
    {2, {6, 13}, 1, {13}, 1, {6}},
    {1, {13}, 3, {2, 13, 4}, 2, {2, 4}},
  };
  size_t c;
  int d;
  for (d = 0; d < 3; d++)
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      dk_dtype dt = dkt_float_types[d];
      int64_t n = numel(cases[c].ond, cases[c].os), K = cases[c].as[cases[c].and_ - 1];
      double *av, *bv, *got = dkt_alloc(n), *want = dkt_alloc(n);
      dk_tensor *a = dkt_random(t, t->dev, dt, cases[c].and_, cases[c].as, "a", -1, 1, &av);
      dk_tensor *b = dkt_random(t, t->dev, dt, cases[c].bnd, cases[c].bs, "b", -1, 1, &bv);
      dk_tensor *o = out_tensor(t, dt, cases[c].ond, cases[c].os, "out");
      if (a && b && o) {
        char what[64];
        DKT_OK(t, dk_matmul(o, a, b));
        if (dkt_read(t, o, got)) {
          ref_matmul(av, cases[c].and_, cases[c].as, bv, cases[c].bnd, cases[c].bs, want, cases[c].ond, cases[c].os);
          snprintf(what, sizeof what, "matmul %s case %d", dk_dtype_name(dt), (int)c);
          dkt_close(t, what, got, want, n, dkt_tol(dt, K) * sqrt((double)K), dkt_tol(dt, K));
        }
      }
      dk_tensor_free(a); dk_tensor_free(b); dk_tensor_free(o);
      free(av); free(bv); free(got); free(want);
    }
}

/* ---- linear (every weight dtype) --------------------------------------------- */

static int linear_precise;   /* the weights of linear_case get dk_tensor_set_precise */

static void linear_case(dkt *t, dk_dtype xdt, dk_dtype wdt, int64_t M, int64_t N, int64_t K, int with_bias, int x3d) {
  int64_t xs[3] = {x3d ? 2 : M, x3d ? M / 2 : K, K}, ws[2] = {N, K}, os[3] = {x3d ? 2 : M, x3d ? M / 2 : N, N};
  int xnd = x3d ? 3 : 2;
  double *xv, *wv, *bv = NULL, *got = dkt_alloc(M * N), *want = dkt_alloc(M * N);
  dk_tensor *x = dkt_random(t, t->dev, xdt, xnd, xs, "x", -1, 1, &xv);
  dk_tensor *w = dkt_random(t, t->dev, wdt, 2, ws, "w", -1, 1, &wv);
  dk_tensor *b = with_bias ? dkt_random(t, t->dev, xdt, 1, &N, "bias", -1, 1, &bv) : NULL;
  dk_tensor *o = out_tensor(t, xdt, xnd, os, "out");
  int64_t m, n, k;
  if (w) dk_tensor_set_precise(w, linear_precise);
  if (x && w && o && (b || !with_bias)) {
    dk_status s = dk_linear(o, x, w, b);
    if (s != DK_OK) {
      dkt_fail_at(t, __FILE__, __LINE__, "dk_linear %s x %s w -> %s: %s", dk_dtype_name(xdt), dk_dtype_name(wdt),
                  dk_status_name(s), dk_last_error());
    } else if (dkt_read(t, o, got)) {
      char what[96];
      for (m = 0; m < M; m++)
        for (n = 0; n < N; n++) {
          double acc = bv ? bv[n] : 0;
          for (k = 0; k < K; k++) acc += xv[m * K + k] * wv[n * K + k];
          want[m * N + n] = acc;
        }
      snprintf(what, sizeof what, "linear x %s, w %s, M=%lld N=%lld K=%lld%s", dk_dtype_name(xdt), dk_dtype_name(wdt),
               (long long)M, (long long)N, (long long)K, with_bias ? " +bias" : "");
      /* products of values in [-1,1] summed K times: error grows like sqrt(K) */
      /* decode-sized products with block weights may quantize x to q8; a
       * precise weight's to two q8 levels, 254 times finer (amax / 64516) */
      dkt_close(t, what, got, want, M * N,
                dkt_tol(xdt, K) * sqrt((double)K) * 1.5 +
                    (dkt_q8_acts(t->dev.backend == DK_CPU && !(M > 4 && linear_precise), wdt, M) ? dkt_q8_act_bound(xv, wv, M, N, K) / (linear_precise ? 254.0 : 1.0) : 0) +
                    dkt_half_act_bound(t->dev, xdt, wdt, linear_precise, xv, wv, M, N, K),
                dkt_tol(xdt, K));
    }
  }
  dk_tensor_free(x); dk_tensor_free(w); dk_tensor_free(b); dk_tensor_free(o);
  free(xv); free(wv); free(bv); free(got); free(want);
}

DKT_TEST(ops_linear_float, 0) {
  int xd, wd;
  for (xd = 0; xd < 3; xd++)
    for (wd = 0; wd < 3; wd++) {
      linear_case(t, dkt_float_types[xd], dkt_float_types[wd], 1, 67, 128, 0, 0);
      linear_case(t, dkt_float_types[xd], dkt_float_types[wd], 3, 40, 100, 1, 0);
      linear_case(t, dkt_float_types[xd], dkt_float_types[wd], 37, 70, 96, 1, 0);
      linear_case(t, dkt_float_types[xd], dkt_float_types[wd], 8, 33, 64, 0, 1);
      /* no bias: the CPU's row-form product writes f32 out where it lies;
       * rows not a multiple of its 4x3 tile either way */
      linear_case(t, dkt_float_types[xd], dkt_float_types[wd], 38, 71, 104, 0, 0);
    }
  /* K = 2048: the CPU's row form takes activations in 32-row chunks (70 = 2 and a tail) */
  for (wd = 0; wd < 3; wd++) linear_case(t, DK_F32, dkt_float_types[wd], 70, 35, 2048, 0, 0);
}

/* decode products of real layer shapes (the 1B bench's K = 1792 and 4800;
 * K = 4104 crosses a GPU thread's load batch), f32 x as a runner has it,
 * 1 to 4 rows, odd N */
DKT_TEST(ops_linear_decode, 0) {
  int wd;
  for (wd = 0; wd < 3; wd++) {
    linear_case(t, DK_F32, dkt_float_types[wd], 1, 2304, 1792, 0, 0);
    linear_case(t, DK_F32, dkt_float_types[wd], 2, 33, 4104, 1, 0);
    linear_case(t, DK_F32, dkt_float_types[wd], 4, 65, 4800, 1, 0);
    linear_case(t, DK_F32, dkt_float_types[wd], 3, 7, 8, 0, 0);
  }
  /* block formats: K is whole blocks */
  for (wd = 0; wd < 2; wd++) {
    dk_dtype q = wd ? DK_Q4_0 : DK_Q8_0;
    linear_case(t, DK_F32, q, 1, 2304, 1792, 0, 0);
    linear_case(t, DK_F32, q, 2, 33, 4128, 1, 0);
    linear_case(t, DK_F32, q, 4, 65, 4800, 1, 0);
    linear_case(t, DK_F32, q, 3, 7, 32, 0, 0);
  }
}

/* prompt-sized products (more than 4 rows: the matrix-matrix path, cuBLAS on
 * CUDA where present) for the weight dtypes the tiny-model loaders produce,
 * with bias and batched x; the CUDA host check runs this on its mock */
DKT_TEST(ops_linear_prompt, 0) {
  static const dk_dtype w[5] = {DK_F32, DK_F16, DK_BF16, DK_Q8_0, DK_Q4_0};
  int xd, wd;
  for (wd = 0; wd < 5; wd++) {
    linear_case(t, DK_F32, w[wd], 37, 70, 256, 1, 0);
    linear_case(t, DK_F32, w[wd], 64, 33, 96, 0, 1);
  }
  for (xd = 1; xd < 3; xd++)
    for (wd = 0; wd < 5; wd++) linear_case(t, dkt_float_types[xd], w[wd], 12, 40, 128, 1, 0);
}

/* a weight marked precise (a classifier) keeps its decode activations to
 * ~15 bits (the CPU: two q8 levels): the bound with a 254 times smaller
 * rounding term holds (one q8 level misses it by far at these K) */
DKT_TEST(ops_linear_precise, 0) {
  int wd;
  linear_precise = 1;
  for (wd = 0; wd < 2; wd++) {
    dk_dtype q = wd ? DK_Q4_0 : DK_Q8_0;
    linear_case(t, DK_F32, q, 1, 300, 4096, 0, 0);
    linear_case(t, DK_F32, q, 2, 65, 2048, 1, 0);
    linear_case(t, DK_F32, q, 3, 33, 1024, 1, 0);
  }
  linear_case(t, DK_F32, DK_Q4_K, 1, 40, 4096, 0, 0);
  linear_case(t, DK_F32, DK_Q6_K, 1, 40, 4096, 0, 0);
  linear_case(t, DK_F32, DK_Q5_1, 2, 40, 1024, 1, 0);
  /* an odd block count: the CPU's two-level loop takes two blocks a step, then one */
  linear_case(t, DK_F32, DK_Q8_0, 1, 37, 992, 0, 0);
  linear_case(t, DK_F32, DK_Q5_1, 1, 37, 1056, 1, 0);
  /* prompt-sized: f32 arithmetic however the device runs GEMMs */
  linear_case(t, DK_F32, DK_F16, 37, 70, 256, 1, 0);
  linear_case(t, DK_F32, DK_Q8_0, 20, 33, 512, 0, 1);
  linear_case(t, DK_F32, DK_Q4_K, 9, 40, 1024, 1, 0);
  linear_precise = 0;
}

DKT_TEST(ops_linear_quant, 0) {
  dk_dtype q[2] = {DK_Q8_0, DK_Q4_0};
  int xd, wd;
  for (xd = 0; xd < 3; xd++)
    for (wd = 0; wd < 2; wd++) {
      linear_case(t, dkt_float_types[xd], q[wd], 1, 96, 256, 0, 0);
      linear_case(t, dkt_float_types[xd], q[wd], 2, 45, 64, 1, 0);
      linear_case(t, dkt_float_types[xd], q[wd], 33, 65, 160, 1, 0);
      linear_case(t, dkt_float_types[xd], q[wd], 4, 31, 4096, 0, 1);
    }
  /* decode rows of Gemma 3's width (K = 640: rows off the 16-byte grid)
   * in numbers that give lavapipe's row kernel 2 and 8 rows a lane (its
   * block-by-block form); the last lane's rows partly past N */
  for (wd = 0; wd < 2; wd++) {
    linear_case(t, DK_F32, q[wd], 1, 1100, 640, 1, 0);
    linear_case(t, DK_F32, q[wd], 1, 4200, 640, 0, 0);
  }
}

DKT_TEST(ops_linear_large, 0) {
  linear_case(t, DK_F32, DK_F32, 1, 1024, 1024, 0, 0);
  linear_case(t, DK_F32, DK_Q4_0, 1, 512, 2048, 0, 0);
  linear_case(t, DK_F16, DK_F16, 130, 260, 384, 1, 0);
  linear_case(t, DK_F32, DK_Q8_0, 70, 200, 512, 0, 0);
}

/* many-row products (a prompt, a batch of sentences): on CPU-type Vulkan
 * devices they take gemm_rows.comp, 16 rows of x by 8 rows of w per
 * invocation in workgroups of 32 x 8 rows of w, so M (9 .. 600) and N cross
 * and miss those tiles, float K misses its groups of 8; every weight dtype
 * the backend holds, bias on and off, f32 and f16 activations */
DKT_TEST(ops_linear_gemm, 0) {
  static const dk_dtype wts[] = {DK_F32,  DK_F16,  DK_BF16, DK_Q8_0, DK_Q4_0, DK_Q4_1,   DK_Q5_0,  DK_Q5_1,
                                 DK_Q2_K, DK_Q3_K, DK_Q4_K, DK_Q5_K, DK_Q6_K, DK_IQ4_NL, DK_IQ4_XS, DK_IQ3_XXS, DK_IQ3_S,
                                 DK_IQ2_XXS, DK_IQ2_XS, DK_IQ2_S};
  int i;
  for (i = 0; i < (int)(sizeof wts / sizeof wts[0]); i++) {
    dk_dtype w = wts[i];
    int64_t bk = dk_dtype_block(w), K1 = bk == 1 ? 100 : bk == 32 ? 96 : 256, K2 = bk == 1 ? 37 : bk == 32 ? 160 : 512;
    if (!dk_op_supported(t->dev.backend, "dk_linear", w, 1)) continue;
    /* each (x, w, bias) combination is a pipeline to build on lavapipe
     * (about 2 s for this unrolled shader): two per block format */
    linear_case(t, DK_F32, w, 600, 37, K1, 1, 0);
    linear_case(t, DK_F16, w, 17, 257, K2, 0, 0);
    if (bk > 1) continue;
    linear_case(t, DK_F32, w, 9, 131, K1, 1, 0);
    linear_case(t, DK_F16, w, 48, 300, K1, 1, 1);
  }
  linear_case(t, DK_F32, DK_F32, 130, 1030, 8, 1, 0);   /* one group of 8: no K loop to speak of */
}

/* ---- rmsnorm or swiglu folded into the linear that reads it ----------------- */

/* dk_rmsnorm_linear (swiglu 0) or dk_swiglu_linear (swiglu 1) against the
 * two ops on the same device (the same bytes where the device runs them as
 * two: every device but CUDA (unless DEVKIT_CUDA_FUSED_GEMV=0) and Vulkan's
 * GPUs (matvec_vec.comp; DEVKIT_VULKAN_FUSED=0 or =1 decides), whose fused kernels may
 * round differently: the norm's inverse rms applied to the row's sum) and
 * against a double reference of the first op then the product. g is the
 * norm weight (f32/f16/bf16 or none) or the up rows. */
static int fused_folds(dkt *t) {
  const char *e = getenv("DEVKIT_CUDA_FUSED_GEMV"), *mv = getenv("DEVKIT_VULKAN_MATVEC"), *fu = getenv("DEVKIT_VULKAN_FUSED");
  dk_device_props p;
  if (t->dev.backend == DK_CUDA) return !(e && !strcmp(e, "0"));
  if (t->dev.backend != DK_VULKAN || dk_device_properties(t->dev, &p) != DK_OK) return 0;
  /* vulkan.h's d->fused: the vector product (GPUs, or =vec), then on by
   * default where the device is not a CPU */
  if (!(mv && *mv ? !strcmp(mv, "vec") : !p.is_software)) return 0;
  return fu && *fu ? fu[0] == '1' : !p.is_software;
}

static void fused_linear_case(dkt *t, int swiglu, dk_dtype xdt, dk_dtype wdt, dk_dtype gdt, int has_g, int64_t M,
                              int64_t N, int64_t K, int with_bias) {
  int64_t xs[2] = {M, K}, ws[2] = {N, K}, os[2] = {M, N}, m, n, k;
  const float eps = 1e-5f;
  int exact = !fused_folds(t);
  double *xv, *wv, *gv = NULL, *bv = NULL, *xh = dkt_alloc(M * K), *got = dkt_alloc(M * N), *two = dkt_alloc(M * N),
         *want = dkt_alloc(M * N), amax = 0;
  dk_tensor *x = dkt_random(t, t->dev, xdt, 2, xs, swiglu ? "gate" : "x", -1, 1, &xv);
  dk_tensor *w = dkt_random(t, t->dev, wdt, 2, ws, "w", -1, 1, &wv);
  dk_tensor *g = !has_g ? NULL : swiglu ? dkt_random(t, t->dev, xdt, 2, xs, "up", -1, 1, &gv)
                                        : dkt_random(t, t->dev, gdt, 1, &K, "norm_w", -2, 2, &gv);
  dk_tensor *b = with_bias ? dkt_random(t, t->dev, xdt, 1, &N, "bias", -1, 1, &bv) : NULL;
  dk_tensor *o = out_tensor(t, xdt, 2, os, "out"), *o2 = out_tensor(t, xdt, 2, os, "out2"), *xn = out_tensor(t, xdt, 2, xs, "xn");
  char what[128];
  snprintf(what, sizeof what, "%s x %s, w %s, %s %s, M=%lld N=%lld K=%lld%s", swiglu ? "swiglu_linear" : "rmsnorm_linear",
           dk_dtype_name(xdt), dk_dtype_name(wdt), swiglu ? "up" : "norm_w", has_g ? dk_dtype_name(swiglu ? xdt : gdt) : "none",
           (long long)M, (long long)N, (long long)K, with_bias ? " +bias" : "");
  if (x && w && o && o2 && xn && (g || !has_g) && (b || !with_bias)) {
    if (swiglu) {
      DKT_OK(t, dk_swiglu_linear(o, x, g, w, b));
      DKT_OK(t, dk_swiglu(xn, x, g));
    } else {
      DKT_OK(t, dk_rmsnorm_linear(o, x, g, w, b, eps));
      DKT_OK(t, dk_rmsnorm(xn, x, g, eps));
    }
    DKT_OK(t, dk_linear(o2, xn, w, b));
    if (dkt_read(t, o, got) && dkt_read(t, o2, two)) {
      if (exact) {
        int64_t bad = 0, i0 = -1;
        for (m = 0; m < M * N; m++)
          if (memcmp(&got[m], &two[m], sizeof got[m])) { bad++; if (i0 < 0) i0 = m; }
        DKT_CHECK(t, bad == 0, "%s: %lld of %lld results differ from the two ops; first [%lld]: %.9g, want %.9g", what,
                  (long long)bad, (long long)(M * N), (long long)i0, bad ? got[i0] : 0.0, bad ? two[i0] : 0.0);
      } else {
        dkt_close(t, what, got, two, M * N, dkt_tol(xdt, K) * sqrt((double)K) * 4, dkt_tol(xdt, K));
      }
      for (m = 0; m < M; m++) {
        double ss = 0;
        for (k = 0; k < K; k++) ss += xv[m * K + k] * xv[m * K + k];
        ss = 1.0 / sqrt(ss / (double)K + eps);
        for (k = 0; k < K; k++) {
          double v = xv[m * K + k];
          xh[m * K + k] = swiglu ? v / (1.0 + exp(-v)) * gv[m * K + k] : v * ss * (gv ? gv[k] : 1.0);
          if (fabs(xh[m * K + k]) > amax) amax = fabs(xh[m * K + k]);
        }
        for (n = 0; n < N; n++) {
          double acc = bv ? bv[n] : 0;
          for (k = 0; k < K; k++) acc += xh[m * K + k] * wv[n * K + k];
          want[m * N + n] = acc;
        }
      }
      /* linear_case's bound on x-hat, whose values reach amax, not 1 */
      dkt_close(t, what, got, want, M * N,
                dkt_tol(xdt, K) * sqrt((double)K) * 1.5 * (amax > 1 ? amax : 1) +
                    (dkt_q8_acts(t->dev.backend == DK_CPU, wdt, M) ? dkt_q8_act_bound(xh, wv, M, N, K) : 0) +
                    dkt_half_act_bound(t->dev, xdt, wdt, 0, xh, wv, M, N, K),
                dkt_tol(xdt, K));
    }
  }
  dk_tensor_free(x); dk_tensor_free(w); dk_tensor_free(g); dk_tensor_free(b);
  dk_tensor_free(o); dk_tensor_free(o2); dk_tensor_free(xn);
  free(xv); free(wv); free(gv); free(bv); free(xh); free(got); free(two); free(want);
}

/* every weight dtype the model loaders make, at decode rows (1, then 3 or
 * 4: the GPUs' row kernels, CUDA's fused ones under their switch) and
 * prompt rows (9: the matrix paths); K = kb for q8_0/q4_0, kb + 8 for
 * float weights, 512 for the K-quants */
static void fused_linear_sweep(dkt *t, int swiglu, int64_t kb, int64_t M2) {
  static const dk_dtype wts[] = {DK_F32, DK_F16, DK_BF16, DK_Q8_0, DK_Q4_0, DK_Q4_K, DK_Q6_K};
  size_t i;
  for (i = 0; i < sizeof wts / sizeof wts[0]; i++) {
    int bq = dk_dtype_is_quant(wts[i]), kq = wts[i] == DK_Q4_K || wts[i] == DK_Q6_K;
    int64_t K = kq ? 512 : bq ? kb : kb + 8;
    fused_linear_case(t, swiglu, DK_F32, wts[i], DK_F32, 1, 1, 67, K, swiglu);
    fused_linear_case(t, swiglu, DK_F32, wts[i], DK_F32, 1, M2, 40, K, !swiglu);
    fused_linear_case(t, swiglu, DK_F32, wts[i], DK_F32, 1, 9, 33, kq ? 256 : bq ? 128 : 100, 1);
  }
}

/* the sweep at a 1B layer's K, then norm weight f16 or none, K % 8 != 0
 * (CUDA's staged kernel), f16/bf16 activations, a 37-row prompt */
DKT_TEST(ops_rmsnorm_linear, 0) {
  fused_linear_sweep(t, 0, 1792, 3);
  fused_linear_case(t, 0, DK_F32, DK_F16, DK_F32, 0, 1, 300, 768, 0);
  fused_linear_case(t, 0, DK_F32, DK_Q8_0, DK_F16, 1, 2, 65, 4128, 1);
  fused_linear_case(t, 0, DK_F32, DK_F32, DK_F32, 1, 4, 33, 100, 0);
  fused_linear_case(t, 0, DK_F16, DK_F16, DK_F32, 1, 1, 70, 256, 1);
  fused_linear_case(t, 0, DK_F16, DK_Q4_0, DK_F16, 1, 37, 40, 128, 0);
  fused_linear_case(t, 0, DK_BF16, DK_F32, DK_BF16, 1, 2, 20, 64, 1);
}

/* the same for the SwiGLU before a down projection (a 1B layer's hidden K) */
DKT_TEST(ops_swiglu_linear, 0) {
  fused_linear_sweep(t, 1, 4800, 4);
  fused_linear_case(t, 1, DK_F32, DK_F32, DK_F32, 1, 2, 33, 100, 0);      /* K % 8 != 0 */
  fused_linear_case(t, 1, DK_F16, DK_F16, DK_F16, 1, 1, 70, 256, 1);
  fused_linear_case(t, 1, DK_BF16, DK_Q8_0, DK_BF16, 1, 12, 20, 64, 0);
}

/* Vulkan's GPU decode product (matvec_vec.comp) forced on any Vulkan
 * device, lavapipe included, folding the first op into the product
 * (DEVKIT_VULKAN_FUSED=1) and taking q8_0/q4_0 weights (DEVKIT_VULKAN_VECQ=1):
 * 1..8 rows, K on its grid (K % 8 == 0; blocks: K % 64 == 0) and not (the
 * two dispatches; the block formats' matvec.comp); each dk_linear case
 * also goes through linear_case's double reference */
DKT_TEST(ops_fused_linear_vec, 0) {
  static const dk_dtype wts[] = {DK_F32, DK_F16, DK_BF16, DK_Q8_0, DK_Q4_0};
  size_t i;
  int swiglu;
  char *w1, *w2, *w3;
  if (t->dev.backend != DK_VULKAN) { dkt_skip(t, "vulkan only (DEVKIT_VULKAN_MATVEC=vec)"); return; }
  w1 = dkt_reinit_env(t, "DEVKIT_VULKAN_MATVEC", "vec");
  w2 = dkt_reinit_env(t, "DEVKIT_VULKAN_FUSED", "1");
  w3 = dkt_reinit_env(t, "DEVKIT_VULKAN_VECQ", "1");
  for (swiglu = 0; swiglu < 2; swiglu++)
    for (i = 0; i < sizeof wts / sizeof wts[0]; i++) {
      int q = dk_dtype_is_quant(wts[i]);
      fused_linear_case(t, swiglu, DK_F32, wts[i], DK_F32, 1, 1, 67, q ? 1792 : 1800, swiglu);
      if (wts[i] != DK_F16 && !(q && swiglu)) continue;   /* (each case is a pipeline to build on lavapipe) */
      fused_linear_case(t, swiglu, DK_F32, wts[i], DK_F32, 1, 8, 40, q ? 320 : 264, !swiglu);
      fused_linear_case(t, swiglu, DK_F32, wts[i], DK_F32, 1, 3, 33, q ? 96 : 100, 1);   /* off its grid */
    }
  fused_linear_case(t, 0, DK_F32, DK_F16, DK_F16, 1, 2, 50, 256, 0);   /* an f16 norm weight: two dispatches */
  fused_linear_case(t, 0, DK_F32, DK_F16, DK_F32, 0, 2, 50, 256, 0);   /* no norm weight: two dispatches */
  /* the plain product on the block formats, odd row counts, a bias */
  for (i = 3; i < sizeof wts / sizeof wts[0]; i++) {
    linear_case(t, DK_F32, wts[i], 1, 67, 128, 0, 0);
    linear_case(t, DK_F32, wts[i], 3, 41, 192, 1, 0);
    linear_case(t, DK_F32, wts[i], 8, 33, 64, 0, 1);
  }
  free(dkt_reinit_env(t, "DEVKIT_VULKAN_MATVEC", w1));
  free(dkt_reinit_env(t, "DEVKIT_VULKAN_FUSED", w2));
  free(dkt_reinit_env(t, "DEVKIT_VULKAN_VECQ", w3));
  free(w1); free(w2); free(w3);
}

/* Vulkan's prompt product on cooperative matrices (gemm_coop.comp,
 * DEVKIT_VULKAN_COOPMAT): every weight dtype it takes, rows of x and w
 * across its 128 x 128 tiles' edges, K off its 32-value slices (f16 w) and
 * over several, a bias, f16 x and out, 3-D x; then the dtypes it leaves to
 * matmul.comp (f32, bf16, a precise weight) */
static void coop_cases(dkt *t) {
  static const dk_dtype wts[] = {DK_F16,  DK_Q8_0, DK_Q4_0, DK_Q4_1, DK_Q5_0,   DK_Q5_1,  DK_Q2_K,
                                 DK_Q3_K, DK_Q4_K, DK_Q5_K, DK_Q6_K, DK_IQ4_NL, DK_IQ4_XS, DK_IQ3_XXS, DK_IQ3_S,
                                 DK_IQ2_XXS, DK_IQ2_XS, DK_IQ2_S};
  size_t i;
  for (i = 0; i < sizeof wts / sizeof wts[0]; i++) {
    int64_t blk = dk_dtype_block(wts[i]);
    linear_case(t, DK_F32, wts[i], 130, 129, blk == 256 ? 512 : blk == 32 ? 96 : 100, (int)(i % 2), 0);
  }
  linear_case(t, DK_F32, DK_F16, 9, 300, 1000, 1, 0);
  linear_case(t, DK_F16, DK_Q8_0, 40, 70, 256, 1, 0);
  linear_case(t, DK_F16, DK_F16, 260, 33, 64, 0, 1);
  linear_case(t, DK_F32, DK_F32, 20, 40, 64, 1, 0);
  linear_case(t, DK_F32, DK_BF16, 20, 40, 64, 1, 0);
  linear_precise = 1;
  linear_case(t, DK_F32, DK_Q8_0, 20, 40, 64, 0, 0);
  linear_precise = 0;
}

/* coop_cases on the shader's emulated variant (=emu: its staging,
 * dequantization, f16 rounding and output, the multiply in plain f32) on
 * any Vulkan device, then on the real one (=1) where the device has
 * VK_NV_cooperative_matrix; DEVKIT_VULKAN_COOPMAT is restored after */
DKT_TEST(ops_linear_coop, 0) {
  dk_device_props pr;
  char *was;
  if (t->dev.backend != DK_VULKAN) { dkt_skip(t, "vulkan only (DEVKIT_VULKAN_COOPMAT)"); return; }
  was = dkt_reinit_env(t, "DEVKIT_VULKAN_COOPMAT", "emu");
  coop_cases(t);
  free(dkt_reinit_env(t, "DEVKIT_VULKAN_COOPMAT", "1"));
  if (dk_device_properties(t->dev, &pr) == DK_OK && pr.prompt_x16) coop_cases(t);
  else dkt_note(t, "%s has no VK_NV_cooperative_matrix: the emulated variant only", dk_device_name(t->dev));
  free(dkt_reinit_env(t, "DEVKIT_VULKAN_COOPMAT", was));
  free(was);
}

/* the same cases on the CPU's AMX tiles (the amx class: bf16 and block
 * weights, 16 rows or more, K a multiple of 32; the rest of the list takes
 * the other paths beside them): odd N and M, one 16-row activation group
 * left over (130 = 4 pairs + 2), bias, a 3-D x, f16 x, a precise weight */
DKT_TEST(ops_linear_amx, 0) {
  if (t->dev.backend != DK_CPU) { dkt_skip(t, "cpu only (the amx kernel class)"); return; }
  if (strcmp(dk_cpu_isa(), "amx") != 0) {
    dkt_skip(t, "this CPU or OS has no AMX-BF16 tiles (kernel class %s)", dk_cpu_isa());
    return;
  }
  coop_cases(t);
  linear_case(t, DK_F32, DK_Q4_K, 16, 33, 256, 0, 0);    /* the smallest M on tiles: one group */
  linear_case(t, DK_F32, DK_Q8_0, 47, 200, 1056, 1, 0);  /* K past one 256-value chunk, a short last one */
  linear_case(t, DK_F32, DK_BF16, 64, 160, 96, 0, 0);    /* more than one group of 4 weight pairs */
}

/* the ops' own checks: the linear's shapes, the norm weight's length, eps,
 * the up rows' shape */
DKT_TEST(ops_rmsnorm_linear_refusals, 0) {
  int64_t xs[2] = {2, 64}, ws[2] = {16, 64}, wb[2] = {16, 32}, os[2] = {2, 16}, k64 = 64, k32 = 32, n8 = 8;
  dk_tensor *x = dkt_random(t, t->dev, DK_F32, 2, xs, "x", -1, 1, NULL);
  dk_tensor *w = dkt_random(t, t->dev, DK_Q8_0, 2, ws, "w", -1, 1, NULL);
  dk_tensor *w32 = dkt_random(t, t->dev, DK_F32, 2, wb, "w32", -1, 1, NULL);
  dk_tensor *g = dkt_random(t, t->dev, DK_F32, 1, &k64, "g", -1, 1, NULL);
  dk_tensor *g32 = dkt_random(t, t->dev, DK_F32, 1, &k32, "g32", -1, 1, NULL);
  dk_tensor *b8 = dkt_random(t, t->dev, DK_F32, 1, &n8, "b8", -1, 1, NULL);
  dk_tensor *o = out_tensor(t, DK_F32, 2, os, "out");
  if (x && w && w32 && g && g32 && b8 && o) {
    void *before = malloc(dk_tensor_nbytes(o)), *after = malloc(dk_tensor_nbytes(o));
    DKT_OK(t, dk_tensor_download(o, before, dk_tensor_nbytes(o)));
    DKT_REFUSED(t, dk_rmsnorm_linear(o, x, g32, w, NULL, 1e-5f), DK_ERR_SHAPE);
    DKT_MSG_HAS(t, "'norm_w' must hold one value per element of the last dim of 'x' (64)");
    DKT_REFUSED(t, dk_rmsnorm_linear(o, x, g, w32, NULL, 1e-5f), DK_ERR_SHAPE);
    DKT_MSG_HAS(t, "the second dim of 'w' (32)");
    DKT_REFUSED(t, dk_rmsnorm_linear(o, x, g, w, b8, 1e-5f), DK_ERR_SHAPE);
    DKT_MSG_HAS(t, "'bias' must be 1-D [N=16]");
    DKT_REFUSED(t, dk_rmsnorm_linear(o, x, g, w, NULL, -1.0f), DK_ERR_INVALID);
    DKT_MSG_HAS(t, "eps must be a finite value >= 0");
    DKT_REFUSED(t, dk_rmsnorm_linear(o, x, g, x, NULL, 1e-5f), DK_ERR_SHAPE);
    DKT_MSG_HAS(t, "dk_rmsnorm_linear");
    /* swiglu_linear: up must match the gate */
    DKT_REFUSED(t, dk_swiglu_linear(o, x, g, w, NULL), DK_ERR_SHAPE);
    DKT_MSG_HAS(t, "dk_swiglu_linear");
    DKT_MSG_HAS(t, "'up'");
    DKT_REFUSED(t, dk_swiglu_linear(o, x, x, w32, NULL), DK_ERR_SHAPE);
    DKT_MSG_HAS(t, "the second dim of 'w' (32)");
    DKT_OK(t, dk_tensor_download(o, after, dk_tensor_nbytes(o)));
    DKT_CHECK(t, !memcmp(before, after, dk_tensor_nbytes(o)), "a refused fused linear wrote its output");
    free(before); free(after);
  }
  dk_tensor_free(x); dk_tensor_free(w); dk_tensor_free(w32); dk_tensor_free(g); dk_tensor_free(g32);
  dk_tensor_free(b8); dk_tensor_free(o);
}

/* ---- embedding --------------------------------------------------------------- */

DKT_TEST(ops_embedding, 0) {
  dk_dtype tabs[5] = {DK_F32, DK_F16, DK_BF16, DK_Q8_0, DK_Q4_0};
  int64_t V = 50, D = 64, ids_shape[2] = {2, 3}, os[3] = {2, 3, 64}, ts[2] = {50, 64};
  int32_t ids[6] = {0, 49, 7, 7, 23, 1};
  int k, od;
  for (k = 0; k < 5; k++)
    for (od = 0; od < 3; od++) {
      dk_dtype odt = dkt_float_types[od];
      double *tv, got[384], want[384];
      dk_tensor *tab = dkt_random(t, t->dev, tabs[k], 2, ts, "table", -2, 2, &tv);
      dk_tensor *id = dkt_ids(t, t->dev, 2, ids_shape, "ids", ids);
      dk_tensor *o = out_tensor(t, odt, 3, os, "out");
      int i, j;
      (void)V;
      if (tab && id && o) {
        DKT_OK(t, dk_embedding(o, tab, id));
        if (dkt_read(t, o, got)) {
          char what[64];
          for (i = 0; i < 6; i++)
            for (j = 0; j < D; j++) want[i * D + j] = tv[ids[i] * D + j];
          dkt_round_to(odt, want, 384);
          snprintf(what, sizeof what, "embedding %s table -> %s", dk_dtype_name(tabs[k]), dk_dtype_name(odt));
          dkt_close(t, what, got, want, 384, 0, odt == DK_F32 ? 1e-7 : 0);
        }
      }
      dk_tensor_free(tab); dk_tensor_free(id); dk_tensor_free(o); free(tv);
    }
}

/* ---- rope -------------------------------------------------------------------- */

static void ref_rope(const double *x, double *y, int64_t rows, int64_t H, int64_t T, int64_t D, const int32_t *pos,
                     int n_rot, double theta, int neox) {
  int64_t r, i;
  memcpy(y, x, sizeof(double) * (size_t)(rows * D));
  for (r = 0; r < rows; r++) {
    double p = pos[(r / H) % T];
    for (i = 0; i < n_rot / 2; i++) {
      double ang = p * pow(theta, -2.0 * (double)i / n_rot), cs = cos(ang), sn = sin(ang);
      int64_t i0 = neox ? i : 2 * i, i1 = neox ? i + n_rot / 2 : 2 * i + 1;
      double a = x[r * D + i0], b = x[r * D + i1];
      y[r * D + i0] = a * cs - b * sn;
      y[r * D + i1] = a * sn + b * cs;
    }
  }
}

DKT_TEST(ops_rope, 0) {
  int32_t pos[5] = {0, 1, 17, 300, 4095};
  int d, mode, sh;
  for (d = 0; d < 3; d++)
    for (mode = 0; mode < 2; mode++)
      for (sh = 0; sh < 3; sh++) {
        dk_dtype dt = dkt_float_types[d];
        int64_t shapes[3][4] = {{5, 64}, {5, 4, 16}, {2, 5, 3, 32}};
        int nds[3] = {2, 3, 4}, n_rots[3] = {64, 16, 24};
        int nd = nds[sh], n_rot = n_rots[sh];
        int64_t n = numel(nd, shapes[sh]), D = shapes[sh][nd - 1], H = nd == 2 ? 1 : shapes[sh][nd - 2], T = 5, np = 5;
        double *xv, *got = dkt_alloc(n), *want = dkt_alloc(n);
        dk_tensor *x = dkt_random(t, t->dev, dt, nd, shapes[sh], "q", -2, 2, &xv);
        dk_tensor *p = dkt_ids(t, t->dev, 1, &np, "positions", pos);
        dk_tensor *o = out_tensor(t, dt, nd, shapes[sh], "out");
        if (x && p && o) {
          char what[64];
          DKT_OK(t, dk_rope(o, x, p, n_rot, 10000.0f, mode ? DK_ROPE_NEOX : DK_ROPE_NORMAL));
          if (dkt_read(t, o, got)) {
            ref_rope(xv, want, n / D, H, T, D, pos, n_rot, 10000.0, mode);
            snprintf(what, sizeof what, "rope %s %s %dD", dk_dtype_name(dt), mode ? "neox" : "normal", nd);
            /* angles up to 4095 rad: float argument reduction costs ~4e-4 */
            dkt_close(t, what, got, want, n, dkt_tol(dt, 1) * 2 + 2e-3, dkt_tol(dt, 1) * 2);
          }
        }
        dk_tensor_free(x); dk_tensor_free(p); dk_tensor_free(o); free(xv); free(got); free(want);
      }
}

/* ---- concat, copy, transpose -------------------------------------------------- */

DKT_TEST(ops_concat, 0) {
  dk_dtype types[4] = {DK_F32, DK_F16, DK_BF16, DK_I32};
  int k, dim;
  for (k = 0; k < 4; k++)
    for (dim = 0; dim < 3; dim++) {
      int64_t as[3] = {2, 3, 4}, bs[3] = {2, 3, 4}, os[3] = {2, 3, 4};
      double *av, *bv, *got, *want;
      dk_tensor *a, *b, *o;
      int64_t i0, i1, i2;
      bs[dim] = 5;
      os[dim] = as[dim] + 5;
      a = dkt_random(t, t->dev, types[k], 3, as, "a", -50, 50, &av);
      b = dkt_random(t, t->dev, types[k], 3, bs, "b", -50, 50, &bv);
      o = out_tensor(t, types[k], 3, os, "out");
      got = dkt_alloc(numel(3, os));
      want = dkt_alloc(numel(3, os));
      if (a && b && o) {
        char what[64];
        DKT_OK(t, dk_concat(o, a, b, dim - 3));  /* negative dims count from the end */
        for (i0 = 0; i0 < os[0]; i0++)
          for (i1 = 0; i1 < os[1]; i1++)
            for (i2 = 0; i2 < os[2]; i2++) {
              int64_t idx[3] = {i0, i1, i2}, oi = (i0 * os[1] + i1) * os[2] + i2;
              if (idx[dim] < as[dim]) want[oi] = av[(i0 * as[1] + i1) * as[2] + i2];
              else {
                idx[dim] -= as[dim];
                want[oi] = bv[(idx[0] * bs[1] + idx[1]) * bs[2] + idx[2]];
              }
            }
        if (dkt_read(t, o, got)) {
          snprintf(what, sizeof what, "concat %s dim %d", dk_dtype_name(types[k]), dim);
          dkt_close(t, what, got, want, numel(3, os), 0, 0);
        }
      }
      dk_tensor_free(a); dk_tensor_free(b); dk_tensor_free(o);
      free(av); free(bv); free(got); free(want);
    }
}

DKT_TEST(ops_copy_convert, 0) {
  dk_dtype types[3] = {DK_F32, DK_F16, DK_BF16};
  int64_t s[2] = {7, 45};
  int a, b;
  for (a = 0; a < 3; a++)
    for (b = 0; b < 3; b++) {
      double *xv, got[315];
      dk_tensor *x = dkt_random(t, t->dev, types[a], 2, s, "src", -100, 100, &xv);
      dk_tensor *o = out_tensor(t, types[b], 2, s, "dst");
      if (x && o) {
        char what[64];
        DKT_OK(t, dk_copy(o, x));
        dkt_round_to(types[b], xv, 315);
        if (dkt_read(t, o, got)) {
          snprintf(what, sizeof what, "copy %s -> %s", dk_dtype_name(types[a]), dk_dtype_name(types[b]));
          dkt_close(t, what, got, xv, 315, 0, 0);
        }
      }
      dk_tensor_free(x); dk_tensor_free(o); free(xv);
    }
}

/* narrow views: strided -> contiguous, and contiguous -> strided (a KV cache write) */
DKT_TEST(ops_copy_strided, 0) {
  int64_t cs[3] = {4, 10, 6}, ns[3] = {4, 3, 6};
  int d;
  for (d = 0; d < 3; d++) {
    dk_dtype dt = dkt_float_types[d];
    double *cv, *nv, got[240], want[240];
    dk_tensor *cache = dkt_random(t, t->dev, dt, 3, cs, "cache", -5, 5, &cv);
    dk_tensor *newk = dkt_random(t, t->dev, DK_F32, 3, ns, "k_new", -5, 5, &nv);
    dk_tensor *view = NULL, *dense = out_tensor(t, dt, 3, ns, "dense");
    int64_t i, j, k;
    if (!cache || !newk || !dense) return;
    DKT_OK(t, dk_narrow(cache, 1, 5, 3, &view));
    DKT_CHECK(t, !dk_tensor_is_contiguous(view), "a narrow along dim 1 should be strided");
    /* contiguous f32 -> strided dt, converting */
    DKT_OK(t, dk_copy(view, newk));
    if (dkt_read(t, cache, got)) {
      for (i = 0; i < 4; i++)
        for (j = 0; j < 10; j++)
          for (k = 0; k < 6; k++) {
            double v = (j >= 5 && j < 8) ? nv[(i * 3 + (j - 5)) * 6 + k] : cv[(i * 10 + j) * 6 + k];
            want[(i * 10 + j) * 6 + k] = v;
          }
      dkt_round_to(dt, want, 240);
      dkt_close(t, "copy into a strided view", got, want, 240, 0, 0);
    }
    /* strided -> contiguous */
    DKT_OK(t, dk_copy(dense, view));
    if (dkt_read(t, dense, got)) {
      for (i = 0; i < 72; i++) want[i] = nv[i];
      dkt_round_to(dt, want, 72);
      dkt_close(t, "copy out of a strided view", got, want, 72, 0, 0);
    }
    dk_tensor_free(view); dk_tensor_free(cache); dk_tensor_free(newk); dk_tensor_free(dense);
    free(cv); free(nv);
  }
}

DKT_TEST(ops_transpose, 0) {
  dk_dtype types[4] = {DK_F32, DK_F16, DK_BF16, DK_I32};
  int perms[4][4] = {{1, 0, 2, 3}, {0, 2, 1, 3}, {3, 2, 1, 0}, {2, 0, 3, 1}};
  int64_t xs[4] = {2, 3, 4, 5};
  int k, p, strided;
  for (k = 0; k < 4; k++)
    for (p = 0; p < 4; p++)
      for (strided = 0; strided < 2; strided++) {
        int64_t bs[4] = {2, 3, 9, 5}, os[4], i, n = 120;
        double *bv, got[120], want[120];
        dk_tensor *base = dkt_random(t, t->dev, types[k], 4, strided ? bs : xs, "x", -9, 9, &bv);
        dk_tensor *x = NULL, *o;
        int j;
        for (j = 0; j < 4; j++) os[j] = xs[perms[p][j]];
        o = out_tensor(t, types[k], 4, os, "out");
        if (!base || !o) return;
        if (strided) DKT_OK(t, dk_narrow(base, 2, 3, 4, &x));
        DKT_OK(t, dk_transpose(o, strided ? x : base, perms[p]));
        for (i = 0; i < n; i++) {
          int64_t oi[4], xi[4], rem = i, off;
          for (j = 3; j >= 0; j--) { oi[j] = rem % os[j]; rem /= os[j]; }
          for (j = 0; j < 4; j++) xi[perms[p][j]] = oi[j];
          if (strided) off = ((xi[0] * 3 + xi[1]) * 9 + xi[2] + 3) * 5 + xi[3];
          else off = ((xi[0] * 3 + xi[1]) * 4 + xi[2]) * 5 + xi[3];
          want[i] = bv[off];
        }
        if (dkt_read(t, o, got)) {
          char what[64];
          snprintf(what, sizeof what, "transpose %s perm %d%s", dk_dtype_name(types[k]), p, strided ? " strided" : "");
          dkt_close(t, what, got, want, n, 0, 0);
        }
        dk_tensor_free(x); dk_tensor_free(base); dk_tensor_free(o); free(bv);
      }
}

/* ---- argmax and sampling -------------------------------------------------------- */

DKT_TEST(ops_argmax, 0) {
  int64_t s[2] = {6, 1000}, os = 6;
  int d;
  for (d = 0; d < 3; d++) {
    double *xv, got[6];
    dk_tensor *x = dkt_random(t, t->dev, dkt_float_types[d], 2, s, "logits", -10, 10, &xv);
    dk_tensor *o = NULL;
    int r, j;
    if (!x) return;
    /* make row 2 tie: the lowest index must win */
    xv[2 * 1000 + 10] = xv[2 * 1000 + 900] = 50;
    xv[5 * 1000 + 999] = 60;
    {
      size_t nb;
      void *p = dkt_encode(dkt_float_types[d], xv, 6000, &nb);
      DKT_OK(t, dk_tensor_upload(x, p, nb));
      free(p);
    }
    DKT_OK(t, dk_tensor_new(t->dev, DK_I32, 1, &os, "ids", &o));
    DKT_OK(t, dk_argmax(o, x));
    if (dkt_read(t, o, got))
      for (r = 0; r < 6; r++) {
        int best = 0;
        for (j = 1; j < 1000; j++) if (xv[r * 1000 + j] > xv[r * 1000 + best]) best = j;
        DKT_CHECK(t, (int)got[r] == best, "%s row %d: argmax %d, want %d", dk_dtype_name(dkt_float_types[d]), r,
                  (int)got[r], best);
      }
    dk_tensor_free(x); dk_tensor_free(o); free(xv);
  }
}

/* the documented rule, in double */
static int ref_sample(const double *l, int n, double temp, int top_k, double top_p, double u) {
  double *p = dkt_alloc(n), *sorted = dkt_alloc(n), kth = -INFINITY, m = -INFINITY, z = 0, acc = 0, thr = 0, total = 0;
  int j, i, cnt = 0, pick = n - 1;
  if (top_k > 0 && top_k < n) {
    for (j = 0; j < n; j++) sorted[j] = l[j];
    for (i = 0; i < top_k; i++)   /* selection of the k largest */
      for (j = i + 1; j < n; j++)
        if (sorted[j] > sorted[i]) { double tmp = sorted[i]; sorted[i] = sorted[j]; sorted[j] = tmp; }
    kth = sorted[top_k - 1];
  }
  for (j = 0; j < n; j++) if (l[j] >= kth) m = fmax(m, l[j] / temp);
  for (j = 0; j < n; j++) { p[j] = l[j] >= kth ? exp(l[j] / temp - m) : 0; z += p[j]; }
  for (j = 0; j < n; j++) p[j] /= z;
  if (top_p < 1) {
    for (j = 0; j < n; j++) if (p[j] > 0) sorted[cnt++] = p[j];
    for (i = 0; i < cnt; i++)
      for (j = i + 1; j < cnt; j++)
        if (sorted[j] > sorted[i]) { double tmp = sorted[i]; sorted[i] = sorted[j]; sorted[j] = tmp; }
    for (i = 0; i < cnt; i++) { acc += sorted[i]; thr = sorted[i]; if (acc >= top_p) break; }
    for (j = 0; j < n; j++) if (p[j] < thr) p[j] = 0;
  }
  for (j = 0; j < n; j++) total += p[j];
  acc = 0;
  for (j = 0; j < n; j++) {
    if (p[j] <= 0) continue;
    acc += p[j];
    if (acc > u * total) { pick = j; break; }
  }
  free(p); free(sorted);
  return pick;
}

DKT_TEST(ops_sample_rule, 0) {
  /* well separated logits, so float vs double rounding cannot flip a pick */
  int64_t s[2] = {64, 40}, os = 64;
  double lv[64 * 40], got[64];
  int r, j, cfg;
  struct { float temp; int k; float p; } cfgs[5] = {{1.0f, 0, 1.0f}, {0.7f, 5, 1.0f}, {1.3f, 0, 0.6f}, {0.9f, 8, 0.8f},
                                                   {0.0f, 0, 1.0f}};
  dk_tensor *x, *o = NULL;
  for (r = 0; r < 64; r++)
    for (j = 0; j < 40; j++) lv[r * 40 + j] = (double)((j * 7 + r * 3) % 40) * 0.25 - 4;
  x = dkt_tensor(t, t->dev, DK_F32, 2, s, "logits", lv);
  if (!x) return;
  DKT_OK(t, dk_tensor_new(t->dev, DK_I32, 1, &os, "tokens", &o));
  for (cfg = 0; cfg < 5; cfg++) {
    int bad = 0;
    DKT_OK(t, dk_sample(o, x, cfgs[cfg].temp, cfgs[cfg].k, cfgs[cfg].p, 1234 + cfg));
    if (!dkt_read(t, o, got)) break;
    for (r = 0; r < 64; r++) {
      int want = cfgs[cfg].temp > 0
                     ? ref_sample(lv + r * 40, 40, cfgs[cfg].temp, cfgs[cfg].k, cfgs[cfg].p, dk_sample_uniform(1234 + cfg, r))
                     : 0;
      if (cfgs[cfg].temp <= 0) {
        for (j = 1; j < 40; j++) if (lv[r * 40 + j] > lv[r * 40 + want]) want = j;
      }
      if ((int)got[r] != want && bad++ < 3)
        dkt_fail_at(t, __FILE__, __LINE__, "config %d row %d: sampled %d, the rule gives %d", cfg, r, (int)got[r], want);
    }
  }
  dk_tensor_free(x); dk_tensor_free(o);
}

/* the draw follows the distribution: 4000 rows of the same logits */
DKT_TEST(ops_sample_distribution, 0) {
  enum { R = 4000, V = 6 };
  int64_t s[2] = {R, V}, os = R;
  double lv[R * V], *got = dkt_alloc(R), p[V], z = 0, chi = 0;
  int r, j, hist[V] = {0};
  dk_tensor *x, *o = NULL;
  for (j = 0; j < V; j++) { p[j] = exp(0.5 * j); z += p[j]; }
  for (r = 0; r < R; r++)
    for (j = 0; j < V; j++) lv[r * V + j] = 0.5 * j;
  x = dkt_tensor(t, t->dev, DK_F32, 2, s, "logits", lv);
  if (!x) { free(got); return; }
  DKT_OK(t, dk_tensor_new(t->dev, DK_I32, 1, &os, "tokens", &o));
  DKT_OK(t, dk_sample(o, x, 1.0f, 0, 1.0f, 99));
  if (dkt_read(t, o, got)) {
    for (r = 0; r < R; r++) hist[(int)got[r]]++;
    for (j = 0; j < V; j++) {
      double e = R * p[j] / z;
      chi += (hist[j] - e) * (hist[j] - e) / e;
    }
    /* 5 degrees of freedom: chi2 > 25 has p < 0.0002 */
    DKT_CHECK(t, chi < 25, "sampled histogram far from softmax: chi2 = %.1f", chi);
  }
  dk_tensor_free(x); dk_tensor_free(o); free(got);
}

/* ---- attention --------------------------------------------------------------------- */

/* One attention case against the double-precision reference: with pos
 * NULL dk_attention at causal offset off, else dk_attention_pos with these
 * positions (query t sees keys s <= pos[t]).
 * Prompt attention on tensor cores (dk_device_props.attn_x16, T > 1, an f16
 * cache) widens the bound: each score s = scale q.k carries |ds| <= scale
 * 2^-11 sum |q k| from q's rounding to f16, which moves a normalized
 * probability by a factor within exp(+-2 max|ds|); each probability meets V
 * rounded by 2^-11 more. So |error| <= (2 max|ds| + 2^-11) sum p |v| (+ a
 * quarter for the exponentials and f32 sums), the largest over the rows. */
static void attention_case_win(dkt *t, const char *tag, int64_t T, int64_t S, int64_t Hq, int64_t Hkv, int64_t D,
                               int64_t Dv, int off, const int32_t *pos, int win, dk_dtype qdt, dk_dtype kdt) {
  int64_t qs[3] = {T, Hq, D}, ks[3] = {S, Hkv, D}, vs[3] = {S, Hkv, Dv}, os[3] = {T, Hq, Dv};
  double *qv, *kv, *vv, *got = dkt_alloc(T * Hq * Dv), *want = dkt_alloc(T * Hq * Dv), *sc = dkt_alloc(S > 0 ? S : 1);
  dk_tensor *q = dkt_random(t, t->dev, qdt, 3, qs, "q", -1, 1, &qv);
  dk_tensor *k = dkt_random(t, t->dev, kdt, 3, ks, "k", -1, 1, &kv);
  dk_tensor *v = dkt_random(t, t->dev, kdt, 3, vs, "v", -1, 1, &vv);
  dk_tensor *o = out_tensor(t, qdt, 3, os, "out");
  dk_tensor *pt = NULL;
  double scale = 1.0 / sqrt((double)D), half_bound = 0;
  dk_device_props pr;
  int half = T > 1 && kdt == DK_F16 && dk_device_properties(t->dev, &pr) == DK_OK && pr.attn_x16;
  if (pos) {
    int64_t ps[1] = {T};
    pt = dkt_ids(t, t->dev, 1, ps, "positions", pos);
  }
  if (q && k && v && o && (pt || !pos)) {
    int64_t tt, h, s2, j;
    if (pos && win) DKT_OK(t, dk_attention_pos_window(o, q, k, v, pt, (float)scale, win));
    else if (pos) DKT_OK(t, dk_attention_pos(o, q, k, v, pt, (float)scale));
    else if (win) DKT_OK(t, dk_attention_window(o, q, k, v, (float)scale, off, win));
    else DKT_OK(t, dk_attention(o, q, k, v, (float)scale, off));
    for (tt = 0; tt < T; tt++)
      for (h = 0; h < Hq; h++) {
        int64_t g = h / (Hq / Hkv), lim = off < 0 ? S : (tt + off + 1 < S ? tt + off + 1 : S);
        if (pos) lim = pos[tt] < 0 ? 0 : pos[tt] + 1 < S ? pos[tt] + 1 : S;
        int64_t beg = win && lim > win ? lim - win : 0;   /* the window's first key */
        double m = -INFINITY, z = 0, ds = 0;
        for (s2 = beg; s2 < lim; s2++) {
          double dot = 0, mag = 0;
          for (j = 0; j < D; j++) {
            dot += qv[(tt * Hq + h) * D + j] * kv[(s2 * Hkv + g) * D + j];
            mag += fabs(qv[(tt * Hq + h) * D + j] * kv[(s2 * Hkv + g) * D + j]);
          }
          sc[s2] = dot * (double)(float)scale;
          m = fmax(m, sc[s2]);
          ds = fmax(ds, scale * mag / 2048.0);
        }
        for (s2 = beg; s2 < lim; s2++) { sc[s2] = exp(sc[s2] - m); z += sc[s2]; }
        for (j = 0; j < Dv; j++) {
          double acc = 0, e = 0;
          for (s2 = beg; s2 < lim; s2++) {
            acc += sc[s2] / z * vv[(s2 * Hkv + g) * Dv + j];
            e += sc[s2] / z * fabs(vv[(s2 * Hkv + g) * Dv + j]);
          }
          want[(tt * Hq + h) * Dv + j] = acc;   /* no key: 0 */
          if (half) half_bound = fmax(half_bound, 1.25 * (2 * ds + 1.0 / 2048) * e);
        }
      }
    if (dkt_read(t, o, got)) {
      char what[160];
      double atol = dkt_tol(qdt, D) * 2 + half_bound;
      snprintf(what, sizeof what, "attention %s T=%lld S=%lld Hq=%lld Hkv=%lld D=%lld Dv=%lld off=%d%s window %d q %s kv %s",
               tag, (long long)T, (long long)S, (long long)Hq, (long long)Hkv, (long long)D, (long long)Dv, off,
               pos ? " (positions)" : "", win, dk_dtype_name(qdt), dk_dtype_name(kdt));
      dkt_close(t, what, got, want, T * Hq * Dv, atol, dkt_tol(qdt, D) * 2);
    }
  }
  dk_tensor_free(q); dk_tensor_free(k); dk_tensor_free(v); dk_tensor_free(o); dk_tensor_free(pt);
  free(qv); free(kv); free(vv); free(got); free(want); free(sc);
}
static void attention_case_pos(dkt *t, const char *tag, int64_t T, int64_t S, int64_t Hq, int64_t Hkv, int64_t D,
                               int64_t Dv, int off, const int32_t *pos, dk_dtype qdt, dk_dtype kdt) {
  attention_case_win(t, tag, T, S, Hq, Hkv, D, Dv, off, pos, 0, qdt, kdt);
}
static void attention_case(dkt *t, const char *tag, int64_t T, int64_t S, int64_t Hq, int64_t Hkv, int64_t D, int64_t Dv,
                           int off, dk_dtype qdt, dk_dtype kdt) {
  attention_case_pos(t, tag, T, S, Hq, Hkv, D, Dv, off, NULL, qdt, kdt);
}

/* dk_attention_window (Gemma 3's sliding layers): each query over the last
 * `window` keys of its causal range. A prompt past the window in the CPU's
 * tiles and in lavapipe's rows kernel (heads of 256, f16 and f32), a decode
 * over a long cache (the CPU's chunks, Vulkan's splits), the row form (heads
 * of 8), no mask (offset -1: the last keys of all), a window longer than the
 * cache (all of it), and a window of 1 (each query's own key) */
DKT_TEST(ops_attention_window, 0) {
  static const struct { int64_t T, S, Hq, Hkv, D, Dv; int off, win; } cases[] = {
    {100, 100, 8, 2, 64, 64, 0, 30}, {40, 90, 4, 1, 256, 256, 50, 16}, {3, 700, 8, 2, 64, 64, 697, 200},
    {12, 40, 6, 3, 8, 8, 28, 5},    {5, 60, 4, 2, 32, 16, -1, 7},      {20, 20, 4, 4, 16, 16, 0, 64},
    {30, 30, 2, 1, 64, 64, 0, 1},
  };
  size_t c;
  int qd, kd;
  for (c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (qd = 0; qd < 2; qd++)
      for (kd = 0; kd < 2; kd++)
        attention_case_win(t, "window", cases[c].T, cases[c].S, cases[c].Hq, cases[c].Hkv, cases[c].D, cases[c].Dv,
                           cases[c].off, NULL, cases[c].win, dkt_float_types[qd], dkt_float_types[kd]);
  {   /* a window of no key is refused, naming the op and the fix */
    int64_t qs[3] = {2, 2, 8}, ks[3] = {4, 2, 8};
    dk_tensor *q = NULL, *k = NULL, *o = NULL;
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 3, qs, "q", &q));
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 3, ks, "k", &k));
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 3, qs, "out", &o));
    if (q && k && o) {
      DKT_REFUSED(t, dk_attention_window(o, q, k, k, 0.5f, 0, 0), DK_ERR_INVALID);
      DKT_MSG_HAS(t, "dk_attention_window");
      DKT_MSG_HAS(t, "window 0");
    }
    dk_tensor_free(q); dk_tensor_free(k); dk_tensor_free(o);
  }
}

DKT_TEST(ops_attention, 0) {
  static const struct { int64_t T, S, Hq, Hkv, D, Dv; int off; } cases[] = {
    {1, 1, 2, 1, 8, 8, 0}, {1, 37, 8, 4, 16, 16, 36}, {5, 5, 4, 4, 32, 32, 0},
    {7, 20, 6, 2, 8, 12, 13}, {4, 9, 2, 2, 64, 64, -1}, {3, 300, 4, 1, 64, 64, 297},
    /* decode-sized over a long cache (the CPU backend splits positions into
     * chunks): later chunks past token 0's causal limit are empty */
    {4, 200, 8, 2, 32, 16, 10}, {1, 1000, 8, 8, 20, 20, -1},
    /* a prompt: CUDA's split-K kernel packs several query rows a block */
    {45, 45, 8, 2, 128, 128, 0}, {21, 30, 9, 3, 64, 64, 9},
    /* CUDA's tensor-core prompt path (DEVKIT_CUDA_FLASH): three 64-row
     * tiles, keys across 64-key tiles; a prompt after a cache */
    {130, 130, 8, 2, 64, 64, 0}, {70, 300, 4, 4, 64, 64, 200},
    /* heads of at most 16 dims (the CPU's per-query score runs over 64
     * positions, the fixed-width sum at Dv 8), per task and split */
    {1, 100, 8, 4, 8, 8, 99}, {2, 300, 8, 4, 8, 8, 290}, {1, 150, 6, 2, 16, 12, 149},
    /* the CPU's prompt tiles (backends/cpu_fattn.h): a group of 7 heads (9
     * tokens, 63 rows a tile) with V of 80; one head a group (64 tokens a
     * tile) with K of 40 and V of 24; 16 heads a group (4 tokens a tile)
     * after a cache; the fewest tokens that take tiles, heads of 8 */
    {100, 100, 7, 1, 80, 80, 0}, {66, 90, 2, 2, 40, 24, 24}, {20, 200, 16, 1, 64, 64, 150}, {17, 17, 4, 2, 8, 8, 0},
  };
  size_t c;
  int qd, kd;
  for (c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (qd = 0; qd < 3; qd++)
      for (kd = 0; kd < 3; kd++)
        attention_case(t, "case", cases[c].T, cases[c].S, cases[c].Hq, cases[c].Hkv, cases[c].D, cases[c].Dv, cases[c].off,
                       dkt_float_types[qd], dkt_float_types[kd]);
}

/* Vulkan's prompt attention on cooperative matrices (attn_flash.comp,
 * DEVKIT_VULKAN_FLASH): heads of 64 over an f16 cache, query rows across its
 * 64-row tiles' edges (65, 130), keys across 64-key tiles, a prompt after a
 * cache, no mask, grouped heads (9 over 3), windows whose first key is
 * inside a tile, a cache of 2048, and q in every float dtype; then the shapes it leaves to
 * attention.comp (an f32 cache, heads of 128, one query row). On the
 * emulated variant (=emu, any Vulkan device), then on the real one (=1)
 * where the device has VK_NV_cooperative_matrix; the variable is restored
 * after. The bound is attention_case_win's for dk_device_props.attn_x16. */
static void flash_cases(dkt *t) {
  static const struct { int64_t T, S, Hq, Hkv; int off, win; } cases[] = {
    {130, 130, 8, 2, 0, 0}, {70, 300, 4, 4, 200, 0}, {21, 30, 9, 3, 9, 0}, {4, 9, 2, 2, -1, 0},
    {65, 65, 2, 1, 0, 0},   {2, 1, 1, 1, 0, 0},     {100, 100, 8, 2, 0, 30}, {40, 200, 4, 1, 160, 50},
    /* the longest cache the emulation takes on a CPU device (llvmpipe's
     * loop limit; the host's bound) */
    {64, 2048, 4, 1, 1984, 0},
  };
  size_t c;
  int qd;
  for (c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (qd = 0; qd < 3; qd++)
      attention_case_win(t, "flash", cases[c].T, cases[c].S, cases[c].Hq, cases[c].Hkv, 64, 64, cases[c].off, NULL,
                         cases[c].win, dkt_float_types[qd], DK_F16);
  attention_case(t, "flash", 70, 70, 4, 2, 64, 64, 0, DK_F32, DK_F32);
  attention_case(t, "flash", 45, 45, 4, 2, 128, 128, 0, DK_F32, DK_F16);
  attention_case(t, "flash", 1, 300, 4, 1, 64, 64, 299, DK_F32, DK_F16);
}

DKT_TEST(ops_attention_flash, 0) {
  dk_device_props pr;
  char *was;
  if (t->dev.backend != DK_VULKAN) { dkt_skip(t, "vulkan only (DEVKIT_VULKAN_FLASH)"); return; }
  was = dkt_reinit_env(t, "DEVKIT_VULKAN_FLASH", "emu");
  flash_cases(t);
  free(dkt_reinit_env(t, "DEVKIT_VULKAN_FLASH", "1"));
  if (dk_device_properties(t->dev, &pr) == DK_OK && pr.attn_x16) flash_cases(t);
  else dkt_note(t, "%s has no VK_NV_cooperative_matrix: the emulated variant only", dk_device_name(t->dev));
  free(dkt_reinit_env(t, "DEVKIT_VULKAN_FLASH", was));
  free(was);
}

/* dk_attention_pos: limits from the device. Decode over a whole cache at an
 * early position (splits past it are empty), positions out of order,
 * negative (zeros), and past the cache (all of it) */
DKT_TEST(ops_attention_pos, 0) {
  static const int32_t p1[1] = {37}, p1b[1] = {0}, p1c[1] = {4095}, p3[3] = {5, 1, 299}, p4[4] = {-1, 7, 500, 2};
  static const int32_t p5[5] = {4, 4, 0, 3, 2}, p18[18] = {-1, 3, 3, 0, 70, 11, 2, 5, 400, 1, 9, 30, 64, 63, 65, 17, -5, 79};
  attention_case_pos(t, "pos", 1, 1024, 8, 2, 64, 64, 0, p1, DK_F32, DK_F16);
  attention_case_pos(t, "pos", 1, 1024, 8, 2, 64, 64, 0, p1b, DK_F32, DK_F32);
  attention_case_pos(t, "pos", 1, 4096, 28, 7, 64, 64, 0, p1c, DK_F16, DK_F16);
  attention_case_pos(t, "pos", 3, 300, 4, 1, 72, 72, 0, p3, DK_F32, DK_BF16);
  attention_case_pos(t, "pos", 4, 300, 6, 3, 8, 8, 0, p4, DK_F32, DK_F32);
  attention_case_pos(t, "pos", 5, 5, 4, 4, 32, 32, 0, p5, DK_F16, DK_F32);
  /* a prompt in the CPU's tiles: a negative position (zeros), repeats, out
   * of order, past the cache, across key blocks */
  attention_case_pos(t, "pos", 18, 80, 6, 2, 32, 16, 0, p18, DK_F32, DK_F32);
  attention_case_pos(t, "pos", 18, 80, 6, 2, 32, 16, 0, p18, DK_F16, DK_BF16);
}

/* dk_attention_pos_window (a window layer's recorded decode step): each
 * query over the last `window` keys up to its position. Decode over a long
 * cache (splits before the window empty), Gemma 3's heads of 256 with the
 * window inside and across the cache's start, a window of 1, and rows of a
 * prompt with a negative position, repeats and positions past the cache */
DKT_TEST(ops_attention_pos_window, 0) {
  static const int32_t p1[1] = {700}, p1b[1] = {37}, p1c[1] = {4095}, p1d[1] = {5};
  static const int32_t p18[18] = {-1, 3, 3, 0, 70, 11, 2, 5, 400, 1, 9, 30, 64, 63, 65, 17, -5, 79};
  attention_case_win(t, "pos window", 1, 1024, 8, 2, 64, 64, 0, p1, 100, DK_F32, DK_F16);
  attention_case_win(t, "pos window", 1, 1024, 8, 2, 64, 64, 0, p1b, 1, DK_F32, DK_F32);
  attention_case_win(t, "pos window", 1, 4096, 4, 1, 256, 256, 0, p1c, 512, DK_F32, DK_F16);
  attention_case_win(t, "pos window", 1, 600, 4, 1, 256, 256, 0, p1d, 512, DK_F32, DK_F16);
  attention_case_win(t, "pos window", 18, 80, 6, 2, 32, 16, 0, p18, 7, DK_F32, DK_F32);
  attention_case_win(t, "pos window", 18, 80, 6, 2, 32, 16, 0, p18, 7, DK_F16, DK_BF16);
  {   /* a window of no key is refused, naming the op */
    int64_t qs[3] = {1, 2, 8}, ks[3] = {4, 2, 8}, ps[1] = {1};
    static const int32_t p0[1] = {2};
    dk_tensor *q = NULL, *k = NULL, *o = NULL, *pt = dkt_ids(t, t->dev, 1, ps, "positions", p0);
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 3, qs, "q", &q));
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 3, ks, "k", &k));
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 3, qs, "out", &o));
    if (q && k && o && pt) {
      DKT_REFUSED(t, dk_attention_pos_window(o, q, k, k, pt, 0.5f, 0), DK_ERR_INVALID);
      DKT_MSG_HAS(t, "dk_attention_pos_window");
      DKT_MSG_HAS(t, "window 0");
    }
    dk_tensor_free(q); dk_tensor_free(k); dk_tensor_free(o); dk_tensor_free(pt);
  }
}

/* dk_index_copy: rows of src into dst at ids along an axis, the rest of dst
 * kept; dtypes converted; bad ids refused (on a GPU at the next sync) */
DKT_TEST(ops_index_copy, 0) {
  static const struct { int nd; int64_t ds[3]; int axis, n; int32_t ids[4]; } cases[] = {
    {3, {16, 2, 8}, 0, 1, {6}},            /* a KV cache row at a position */
    {3, {16, 2, 8}, 0, 3, {3, -1, 0}},     /* several, one from the end */
    {2, {5, 7}, 1, 2, {6, 2}},             /* along the last axis */
    {3, {4, 9, 3}, 1, 4, {8, 0, 5, 4}},    /* a middle axis: outer and inner both > 1 */
  };
  size_t c;
  int dd, sd;
  for (c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (dd = 0; dd < 3; dd++)
      for (sd = 0; sd < 3; sd++) {
        int nd = cases[c].nd, a = cases[c].axis, i;
        int64_t ss[3], is[1] = {cases[c].n}, n = 1, ns, outer = 1, inner = 1, len = cases[c].ds[a], q, k, j;
        dk_dtype ddt = dkt_float_types[dd], sdt = dkt_float_types[sd];
        double *dv, *sv, *want, *got, *sr;
        dk_tensor *dst, *src, *ids;
        for (i = 0; i < nd; i++) { ss[i] = i == a ? cases[c].n : cases[c].ds[i]; n *= cases[c].ds[i]; }
        ns = n / len * cases[c].n;
        for (i = 0; i < a; i++) outer *= cases[c].ds[i];
        for (i = a + 1; i < nd; i++) inner *= cases[c].ds[i];
        dst = dkt_random(t, t->dev, ddt, nd, cases[c].ds, "dst", -1, 1, &dv);
        src = dkt_random(t, t->dev, sdt, nd, ss, "src", -1, 1, &sv);
        ids = dkt_ids(t, t->dev, 1, is, "ids", cases[c].ids);
        want = dkt_alloc(n); got = dkt_alloc(n); sr = dkt_alloc(ns);
        if (dst && src && ids) {
          memcpy(want, dv, sizeof *want * (size_t)n);
          memcpy(sr, sv, sizeof *sr * (size_t)ns);
          dkt_round_to(ddt, sr, ns);   /* what dst's dtype holds of src */
          for (q = 0; q < outer; q++)
            for (k = 0; k < cases[c].n; k++) {
              int64_t r = cases[c].ids[k] < 0 ? cases[c].ids[k] + len : cases[c].ids[k];
              for (j = 0; j < inner; j++) want[(q * len + r) * inner + j] = sr[(q * cases[c].n + k) * inner + j];
            }
          DKT_OK(t, dk_index_copy(dst, src, ids, a));
          if (dkt_read(t, dst, got)) {
            char what[96];
            snprintf(what, sizeof what, "index_copy case %d dst %s src %s", (int)c, dk_dtype_name(ddt), dk_dtype_name(sdt));
            dkt_close(t, what, got, want, n, 0, 0);
          }
        }
        dk_tensor_free(dst); dk_tensor_free(src); dk_tensor_free(ids);
        free(dv); free(sv); free(want); free(got); free(sr);
      }
  {
    /* an id outside: an error naming it, and dst untouched */
    int64_t ds[2] = {4, 8}, ss[2] = {2, 8}, is[1] = {2};
    int32_t bad[2] = {1, 4};
    double *dv, *got = dkt_alloc(32);
    dk_tensor *dst = dkt_random(t, t->dev, DK_F32, 2, ds, "cache", -1, 1, &dv);
    dk_tensor *src = dkt_random(t, t->dev, DK_F32, 2, ss, "rows", -1, 1, NULL);
    dk_tensor *ids = dkt_ids(t, t->dev, 1, is, "where", bad);
    if (dst && src && ids) {
      dk_status s = dk_index_copy(dst, src, ids, 0);
      if (s == DK_OK) s = dk_sync(t->dev);
      DKT_CHECK(t, s == DK_ERR_INVALID, "a bad id: %s", dk_status_name(s));
      DKT_MSG_HAS(t, "'where' holds 4 at position 1");
      DKT_MSG_HAS(t, "dk_index_copy");
      if (t->dev.backend == DK_CPU && dkt_read(t, dst, got)) dkt_close(t, "dst after a refused copy", got, dv, 32, 0, 0);
    }
    dk_tensor_free(dst); dk_tensor_free(src); dk_tensor_free(ids);
    free(dv); free(got);
  }
}

/* The shapes of decode steps of real models, over long caches: on GPUs the
 * positions are split across blocks and merged, the query heads of a kv
 * head share one read of K/V (grouped 1, 4, 6 + 6, 16 = 8 + 8 to a kv head),
 * head dims 64 / 128 / 256 and 80 (V rows not a power of two pieces), and
 * 72 / 20 (not multiples of 8: the one-row kernel). */
DKT_TEST(ops_attention_decode, 0) {
  static const struct { int64_t T, S, Hq, Hkv, D, Dv; int off; } cases[] = {
    {1, 4097, 28, 7, 64, 64, 4096}, {1, 1000, 32, 2, 128, 128, 999}, {1, 65, 12, 1, 256, 256, 64},
    {1, 777, 8, 8, 80, 80, -1}, {1, 300, 4, 1, 72, 72, 299}, {3, 2000, 8, 2, 64, 80, 1990},
    {2, 129, 6, 3, 64, 64, 0}, {1, 1, 16, 4, 64, 64, 0}, {1, 2500, 4, 4, 20, 20, -1},
  };
  size_t c;
  for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    dk_dtype kdt = c % 3 == 0 ? DK_F16 : c % 3 == 1 ? DK_F32 : DK_BF16;
    attention_case(t, "decode", cases[c].T, cases[c].S, cases[c].Hq, cases[c].Hkv, cases[c].D, cases[c].Dv, cases[c].off,
                   c % 2 ? DK_F16 : DK_F32, kdt);
  }
}

/* attention over a narrowed KV cache [max_seq, Hkv, D]: the runner's pattern */
DKT_TEST(ops_attention_cache_view, 0) {
  int64_t cs[3] = {16, 2, 8}, qs[3] = {1, 4, 8}, os[3] = {1, 4, 8};
  double *kv, *vv, *qv, got[32], want[32];
  dk_tensor *kc = dkt_random(t, t->dev, DK_F16, 3, cs, "k_cache", -1, 1, &kv);
  dk_tensor *vc = dkt_random(t, t->dev, DK_F16, 3, cs, "v_cache", -1, 1, &vv);
  dk_tensor *q = dkt_random(t, t->dev, DK_F32, 3, qs, "q", -1, 1, &qv);
  dk_tensor *o = out_tensor(t, DK_F32, 3, os, "out"), *kview = NULL, *vview = NULL;
  int64_t h, s, j, pos = 6;
  if (!kc || !vc || !q || !o) return;
  DKT_OK(t, dk_narrow(kc, 0, 0, pos + 1, &kview));
  DKT_OK(t, dk_narrow(vc, 0, 0, pos + 1, &vview));
  DKT_OK(t, dk_attention(o, q, kview, vview, 0.35f, pos));
  for (h = 0; h < 4; h++) {
    double sc[7], m = -INFINITY, z = 0;
    for (s = 0; s <= pos; s++) {
      double d = 0;
      for (j = 0; j < 8; j++) d += qv[h * 8 + j] * kv[(s * 2 + h / 2) * 8 + j];
      sc[s] = d * (double)0.35f;
      m = fmax(m, sc[s]);
    }
    for (s = 0; s <= pos; s++) { sc[s] = exp(sc[s] - m); z += sc[s]; }
    for (j = 0; j < 8; j++) {
      double acc = 0;
      for (s = 0; s <= pos; s++) acc += sc[s] / z * vv[(s * 2 + h / 2) * 8 + j];
      want[h * 8 + j] = acc;
    }
  }
  if (dkt_read(t, o, got)) dkt_close(t, "attention over a cache view", got, want, 32, 1e-5, 1e-5);
  dk_tensor_free(kview); dk_tensor_free(vview);
  dk_tensor_free(kc); dk_tensor_free(vc); dk_tensor_free(q); dk_tensor_free(o);
  free(kv); free(vv); free(qv);
}

/* k and v one element past the 16-byte grid (views of flat buffers): CPU
 * Vulkan devices read k and v as texels in attention_rows and fall back to
 * the general kernel here; every backend gives the same answer */
DKT_TEST(ops_attention_off_grid, 0) {
  enum { S = 9, D = 32, H = 2 };
  int64_t fs[1] = {1 + S * D}, ks[3] = {S, 1, D}, qs[3] = {1, H, D};
  double *kv, *vv, *qv, got[H * D], want[H * D];
  dk_tensor *kf = dkt_random(t, t->dev, DK_F32, 1, fs, "k_flat", -1, 1, &kv);
  dk_tensor *vf = dkt_random(t, t->dev, DK_F32, 1, fs, "v_flat", -1, 1, &vv);
  dk_tensor *q = dkt_random(t, t->dev, DK_F32, 3, qs, "q", -1, 1, &qv);
  dk_tensor *o = out_tensor(t, DK_F32, 3, qs, "out"), *kn = NULL, *vn = NULL, *k = NULL, *v = NULL;
  int64_t h, s, j;
  if (!kf || !vf || !q || !o) return;
  DKT_OK(t, dk_narrow(kf, 0, 1, S * D, &kn));
  DKT_OK(t, dk_narrow(vf, 0, 1, S * D, &vn));
  DKT_OK(t, dk_reshape(kn, 3, ks, &k));
  DKT_OK(t, dk_reshape(vn, 3, ks, &v));
  DKT_OK(t, dk_attention(o, q, k, v, 0.2f, S - 1));
  for (h = 0; h < H; h++) {
    double sc[S], m = -INFINITY, z = 0;
    for (s = 0; s < S; s++) {
      double d = 0;
      for (j = 0; j < D; j++) d += qv[h * D + j] * kv[1 + s * D + j];
      sc[s] = d * (double)0.2f;
      m = fmax(m, sc[s]);
    }
    for (s = 0; s < S; s++) { sc[s] = exp(sc[s] - m); z += sc[s]; }
    for (j = 0; j < D; j++) {
      double acc = 0;
      for (s = 0; s < S; s++) acc += sc[s] / z * vv[1 + s * D + j];
      want[h * D + j] = acc;
    }
  }
  if (dkt_read(t, o, got)) dkt_close(t, "attention over k and v off the 16-byte grid", got, want, H * D, 1e-5, 1e-5);
  dk_tensor_free(k); dk_tensor_free(v); dk_tensor_free(kn); dk_tensor_free(vn);
  dk_tensor_free(kf); dk_tensor_free(vf); dk_tensor_free(q); dk_tensor_free(o);
  free(kv); free(vv); free(qv);
}

/* ---- dk_profile ------------------------------------------------------------- */

/* one row of the table's part that starts with `part` (up to the next
 * blank line): its figures, or 0 when no row names this op on dev */
static int profile_row(const char *table, const char *part, const char *dev, const char *op, double *ms,
                       unsigned long long *calls) {
  const char *line = strstr(table, part);
  while (line && (line = strchr(line, '\n')) && *++line && *line != '\n') {
    char d[32], o[64];
    double share, us;
    if (sscanf(line, "%lf %lf%% %llu %lf %31s %63s", ms, &share, calls, &us, d, o) == 6 && !strcmp(d, dev) &&
        !strcmp(o, op))
      return 1;
  }
  return 0;
}

DKT_TEST(profile_ops, 0) {
  int64_t sx[2] = {64, 128}, sw[2] = {96, 128}, so[2] = {64, 96};
  dk_tensor *x = dkt_random(t, t->dev, DK_F32, 2, sx, "x", -1, 1, NULL);
  dk_tensor *w = dkt_random(t, t->dev, DK_F32, 2, sw, "w", -1, 1, NULL);
  dk_tensor *o = out_tensor(t, DK_F32, 2, so, "out");
  char table[8192], small[16];
  const char *dev = dk_device_name(t->dev);
  double ms_lin = 0, ms_add = 0, t0, wall;
  unsigned long long calls_lin = 0, calls_add = 0;
  size_t n;
  int i;
  if (!x || !w || !o) goto done;
  DKT_OK(t, dk_sync(t->dev));   /* the uploads are not ops, and stay out of the figures */
  dk_profile_reset();
  DKT_OK(t, dk_profile(1));
  t0 = dkt_now();
  for (i = 0; i < 3; i++) DKT_OK(t, dk_linear(o, x, w, NULL));
  for (i = 0; i < 2; i++) DKT_OK(t, dk_add(o, o, o));
  DKT_OK(t, dk_sync(t->dev));
  wall = dkt_now() - t0;
  DKT_OK(t, dk_profile(0));
  DKT_OK(t, dk_add(o, o, o));   /* not counted */
  DKT_OK(t, dk_sync(t->dev));
  n = dk_profile_report(table, sizeof table);
  DKT_CHECK(t, n == strlen(table), "dk_profile_report returned %zu for a table of %zu bytes", n, strlen(table));
  DKT_CHECK(t, profile_row(table, "by op and operands:", dev, "dk_linear", &ms_lin, &calls_lin) && calls_lin == 3,
            "dk_linear on %s: %llu calls in the table, 3 made:\n%s", dev, calls_lin, table);
  DKT_CHECK(t, profile_row(table, "by op and operands:", dev, "dk_add", &ms_add, &calls_add) && calls_add == 2,
            "dk_add on %s: %llu calls in the table, 2 made while on:\n%s", dev, calls_add, table);
  DKT_CHECK(t, strstr(table, "out f32[64,96]  x f32[64,128]  w f32[96,128]") != NULL, "operands not named:\n%s", table);
  {   /* the summary by op: each op's one row */
    double ms = 0;
    unsigned long long calls = 0;
    DKT_CHECK(t, profile_row(table, "by op:", dev, "dk_add", &ms, &calls) && calls == 2 && fabs(ms - ms_add) < 1.5e-3,
              "the by-op line of dk_add: %llu calls, %g ms:\n%s", calls, ms, table);
  }
  DKT_CHECK(t, !strstr(table, "untimed") && !strstr(table, "not yet read"), "ops left untimed:\n%s", table);
  /* device time: positive, and inside the wall time around it */
  DKT_CHECK(t, ms_lin + ms_add > 0 && ms_lin >= 0 && ms_add >= 0, "times %g and %g ms", ms_lin, ms_add);
  DKT_CHECK(t, (ms_lin + ms_add) * 1e-3 <= wall * 1.01 + 1e-6, "op time %g ms over the %g ms wall time", ms_lin + ms_add,
            wall * 1e3);
  /* a short buffer: cut, terminated, the whole length still returned */
  DKT_CHECK(t, dk_profile_report(small, sizeof small) == n && strlen(small) == sizeof small - 1, "short buffer");
  dk_profile_reset();
  n = dk_profile_report(table, sizeof table);
  DKT_CHECK(t, strstr(table, " 0 op calls") && !profile_row(table, "by op:", dev, "dk_linear", &ms_lin, &calls_lin),
            "after dk_profile_reset:\n%s", table);
done:
  dk_tensor_free(x); dk_tensor_free(w); dk_tensor_free(o);
}
