/* tests/test_ops_axes.c — the ops of issue 12 (reductions over axes, arg
 * reductions on any axis, elementwise math, pow, softmax and log-softmax on
 * any axis, where), every float dtype, on every device, against references
 * computed here in double precision from the values the device was given. */
#include "test.h"

static int64_t numel_of(int nd, const int64_t *s) {
  int64_t n = 1;
  int i;
  for (i = 0; i < nd; i++) n *= s[i];
  return n;
}

/* got == want where both are the same special value (NaN, +-inf), else
 * |got - want| <= atol + rtol * |want| */
static int close_special(dkt *t, const char *what, const double *got, const double *want, int64_t n, double atol,
                         double rtol) {
  int64_t i;
  for (i = 0; i < n; i++) {
    int ok;
    if (isnan(want[i])) ok = isnan(got[i]);
    else if (isinf(want[i])) ok = got[i] == want[i];
    else ok = fabs(got[i] - want[i]) <= atol + rtol * fabs(want[i]);
    if (!ok) {
      dkt_fail_at(t, __FILE__, __LINE__, "%s: element %lld is %.9g, want %.9g", what, (long long)i, got[i], want[i]);
      return 0;
    }
  }
  return 1;
}

/* the op on this device's backend, or a skip (CUDA's kernels for these ops
 * are off until verified on a GPU: DEVKIT_CUDA_NEWOPS=1) */
static int lacks(dkt *t, const char *op) {
  if (dk_op_supported(t->dev.backend, op, DK_F32, 0)) return 0;
  dkt_skip(t, "%s is not on the %s backend here%s", op, dk_backend_name(t->dev.backend),
           t->dev.backend != DK_CUDA ? "" : strcmp(op, "dk_index_select") ? " (DEVKIT_CUDA_NEWOPS=0 turned CUDA's off)"
                                                                           : " (its CUDA kernel is off until verified: DEVKIT_CUDA_GATHER=1)");
  return 1;
}

/* ---- the reference reduction ------------------------------------------------ */

/* row-major walk of x's shape: the output index of x element `idx` */
static int64_t out_index(int nd, const int64_t *xs, uint32_t mask, int64_t idx) {
  int64_t o = 0, mul = 1;
  int i;
  for (i = nd - 1; i >= 0; i--) {
    int64_t c = idx % xs[i];
    idx /= xs[i];
    if (!((mask >> i) & 1)) { o += c * mul; mul *= xs[i]; }
  }
  return o;
}

/* op: 0 sum, 1 mean, 2 max, 3 min */
static void ref_reduce(int op, const double *x, int nd, const int64_t *xs, uint32_t mask, double *out, int64_t nout) {
  int64_t n = numel_of(nd, xs), i, *cnt = (int64_t *)calloc((size_t)(nout ? nout : 1), sizeof(int64_t));
  for (i = 0; i < nout; i++) out[i] = op == 2 ? -INFINITY : op == 3 ? INFINITY : 0.0;
  for (i = 0; i < n; i++) {
    int64_t o = out_index(nd, xs, mask, i);
    cnt[o]++;
    if (op <= 1) out[o] += x[i];
    else if (op == 2) out[o] = x[i] > out[o] ? x[i] : out[o];
    else out[o] = x[i] < out[o] ? x[i] : out[o];
  }
  if (op == 1)
    for (i = 0; i < nout; i++) out[i] = cnt[i] ? out[i] / (double)cnt[i] : NAN;
  free(cnt);
}

typedef dk_status (*reduce_fn)(dk_tensor *, const dk_tensor *, const int *, int, int);

DKT_TEST(ops_reduce_axes, 0) {
  if (lacks(t, "dk_reduce_sum")) return;
  static const struct { int nd; int64_t s[4]; int na; int axes[4]; } cases[] = {
    {3, {2, 3, 4}, 1, {1}},        {3, {2, 3, 4}, 2, {0, 2}},     {2, {5, 7}, 0, {0}},
    {4, {3, 1, 5, 2}, 2, {-1, -3}}, {4, {2, 3, 4, 5}, 2, {3, 1}}, {1, {1}, 1, {0}},
    {3, {4, 0, 3}, 1, {1}},        {3, {4, 0, 3}, 1, {0}},        {2, {3, 5000}, 1, {1}},
    {2, {5000, 3}, 1, {0}},        {4, {2, 3, 4, 5}, 4, {0, 1, 2, 3}}, {3, {6, 1, 9}, 1, {1}},
  };
  reduce_fn fns[4] = {dk_reduce_sum, dk_reduce_mean, dk_reduce_max, dk_reduce_min};
  const char *names[4] = {"sum", "mean", "max", "min"};
  size_t c;
  int d, op, keep;
  for (d = 0; d < 3; d++)
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++)
      for (keep = 0; keep < 2; keep++) {
        dk_dtype dt = dkt_float_types[d];
        int nd = cases[c].nd, i, ond = 0;
        uint32_t mask = 0;
        int64_t os[4], nred = 1, nout;
        double *xv, *got, *want;
        dk_tensor *x, *o;
        for (i = 0; i < cases[c].na; i++) mask |= 1u << (cases[c].axes[i] < 0 ? cases[c].axes[i] + nd : cases[c].axes[i]);
        if (cases[c].na == 0) mask = (1u << nd) - 1;
        for (i = 0; i < nd; i++) {
          if ((mask >> i) & 1) { nred *= cases[c].s[i]; if (keep) os[ond++] = 1; }
          else os[ond++] = cases[c].s[i];
        }
        nout = numel_of(ond, os);
        got = dkt_alloc(nout); want = dkt_alloc(nout);
        x = dkt_random(t, t->dev, dt, nd, cases[c].s, "x", -4, 4, &xv);
        o = dkt_random(t, t->dev, dt, ond, os, "out", -9, 9, NULL);
        for (op = 0; op < 4 && x && o; op++) {
          char what[128];
          dk_status s = fns[op](o, x, cases[c].axes, cases[c].na, keep);
          snprintf(what, sizeof what, "dk_reduce_%s %s case %d keepdim %d", names[op], dk_dtype_name(dt), (int)c, keep);
          if (op >= 2 && nred == 0 && nout > 0) {
            DKT_CHECK(t, s == DK_ERR_SHAPE, "%s over an empty axis -> %s, want DK_ERR_SHAPE", what, dk_status_name(s));
            continue;
          }
          DKT_CHECK(t, s == DK_OK, "%s -> %s:\n%s", what, dk_status_name(s), dk_last_error());
          if (s != DK_OK || !dkt_read(t, o, got)) break;
          ref_reduce(op, xv, nd, cases[c].s, mask, want, nout);
          dkt_round_to(dt, want, nout);
          /* max/min pick an element: exact. Sums: relative to the sum of |x| */
          if (op >= 2) {
            close_special(t, what, got, want, nout, 0, 0);
          } else {
            double *absx = dkt_alloc(nout), *z = dkt_alloc(numel_of(nd, cases[c].s));
            int64_t k, nx = numel_of(nd, cases[c].s);
            for (k = 0; k < nx; k++) z[k] = fabs(xv[k]);
            ref_reduce(op, z, nd, cases[c].s, mask, absx, nout);
            for (k = 0; k < nout; k++) {
              /* result rounding is relative to the result, accumulation
               * error to the sum of magnitudes */
              double lim = dkt_tol(dt, nred) * (fabs(want[k]) + (isnan(absx[k]) ? 0 : absx[k]));
              int ok = isnan(want[k]) ? isnan(got[k]) : fabs(got[k] - want[k]) <= lim;
              if (!ok) {
                dkt_fail_at(t, __FILE__, __LINE__, "%s: element %lld is %.9g, want %.9g", what, (long long)k, got[k], want[k]);
                break;
              }
            }
            free(absx); free(z);
          }
        }
        dk_tensor_free(x); dk_tensor_free(o);
        free(xv); free(got); free(want);
      }
}

/* every reduction of one tensor, also checking that NaN propagates through max/min */
DKT_TEST(ops_reduce_nan, 0) {
  int64_t s[2] = {3, 40}, os[1] = {3};
  int d, ax = 1;
  if (lacks(t, "dk_reduce_max")) return;
  for (d = 0; d < 3; d++) {
    dk_dtype dt = dkt_float_types[d];
    double *xv, got[3];
    dk_tensor *x, *o;
    xv = dkt_alloc(120);
    dkt_fill(t, xv, 120, -2, 2);
    xv[1 * 40 + 17] = NAN;
    x = dkt_tensor(t, t->dev, dt, 2, s, "x", xv);
    o = dkt_random(t, t->dev, dt, 1, os, "out", -1, 1, NULL);
    if (x && o) {
      DKT_OK(t, dk_reduce_max(o, x, &ax, 1, 0));
      if (dkt_read(t, o, got)) DKT_CHECK(t, !isnan(got[0]) && isnan(got[1]) && !isnan(got[2]), "max NaN row: %g %g %g", got[0], got[1], got[2]);
      DKT_OK(t, dk_reduce_min(o, x, &ax, 1, 0));
      if (dkt_read(t, o, got)) DKT_CHECK(t, !isnan(got[0]) && isnan(got[1]) && !isnan(got[2]), "min NaN row: %g %g %g", got[0], got[1], got[2]);
    }
    dk_tensor_free(x); dk_tensor_free(o); free(xv);
  }
}

/* ---- argmax / argmin on an axis ------------------------------------------------ */

DKT_TEST(ops_argminmax_axis, 0) {
  if (lacks(t, "dk_argmax_axis")) return;
  static const struct { int nd; int64_t s[4]; } cases[] = {
    {3, {3, 4, 5}}, {2, {2, 700}}, {1, {1}}, {4, {2, 1, 3, 4}}, {2, {300, 2}},
  };
  size_t c;
  int d;
  for (d = 0; d < 3; d++)
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      dk_dtype dt = dkt_float_types[d];
      int nd = cases[c].nd, axis, i;
      int64_t n = numel_of(nd, cases[c].s), k;
      double *xv = dkt_alloc(n), *got = dkt_alloc(n), want[1];
      dk_tensor *x;
      /* small integers: ties are common; a NaN or two that must never win */
      for (k = 0; k < n; k++) xv[k] = (double)((int64_t)(dkt_u64(t) % 7) - 3);
      if (n > 10) { xv[3] = NAN; xv[n - 2] = NAN; }
      x = dkt_tensor(t, t->dev, dt, nd, cases[c].s, "x", xv);
      for (axis = -1; axis < nd && x; axis++) {
        int a = axis < 0 ? axis + nd : axis, keep, which, last;
        int64_t os[4], ond = 0, nout = 1, L = cases[c].s[a];
        for (i = 0; i < nd; i++) {
          if (i != a) { os[ond++] = cases[c].s[i]; nout *= cases[c].s[i]; }
        }
        for (keep = 0; keep < 2; keep++)
          for (which = 0; which < 2; which++)
            for (last = 0; last < 2; last++) {
              int64_t shp[4], sn = 0, o, inner = 1;
              char what[128];
              dk_tensor *out;
              for (i = 0; i < nd; i++) if (i != a || keep) shp[sn++] = i == a ? 1 : cases[c].s[i];
              for (i = a + 1; i < nd; i++) inner *= cases[c].s[i];
              out = dkt_random(t, t->dev, DK_I32, (int)sn, shp, "out", -9, 9, NULL);
              if (!out) continue;
              snprintf(what, sizeof what, "dk_arg%s_axis %s case %d axis %d keepdim %d last %d", which ? "min" : "max",
                       dk_dtype_name(dt), (int)c, axis, keep, last);
              DKT_OK(t, (which ? dk_argmin_axis : dk_argmax_axis)(out, x, axis, keep, last));
              if (dkt_read(t, out, got))
                for (o = 0; o < nout; o++) {
                  int64_t outer = o / inner, in = o % inner, j, bi = 0;
                  double best = 0;
                  for (j = 0; j < L; j++) {
                    double v = xv[(outer * L + j) * inner + in];
                    v = isnan(v) ? -INFINITY : which ? -v : v;
                    if (j == 0 || v > best || (last && v == best)) { best = v; bi = j; }
                  }
                  want[0] = (double)bi;
                  if (got[o] != want[0]) {
                    dkt_fail_at(t, __FILE__, __LINE__, "%s: output %lld is %g, want %g", what, (long long)o, got[o], want[0]);
                    break;
                  }
                }
              dk_tensor_free(out);
              (void)os; (void)ond;
            }
      }
      dk_tensor_free(x); free(xv); free(got);
    }
}

/* ---- elementwise math ------------------------------------------------------------ */

typedef dk_status (*unary_fn)(dk_tensor *, const dk_tensor *);

static double ref_math(int k, double x, double p, double q) {
  switch (k) {
  case 0: return sqrt(x);
  case 1: return 1 / sqrt(x);
  case 2: return log(x);
  case 3: return fabs(x);
  case 4: return -x;
  case 5: return erf(x);
  case 6: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
  case 7: return x < p ? p : x > q ? q : x;
  default: return pow(x, p);
  }
}

DKT_TEST(ops_math_unary, 0) {
  static const char *names[9] = {"sqrt", "rsqrt", "log", "abs", "neg", "erf", "gelu", "clamp", "pow_scalar"};
  unary_fn fns[7] = {dk_sqrt, dk_rsqrt, dk_log, dk_abs, dk_neg, dk_erf, dk_gelu};
  static const int64_t shapes[4][3] = {{1, 1, 1}, {3, 17, 31}, {2, 4100, 3}, {2, 0, 5}};
  if (lacks(t, "dk_sqrt")) return;
  /* pow exponents: on positive bases, and integers on signed ones */
  static const float pexp[6] = {2.0f, 3.0f, -1.0f, 0.5f, -1.5f, 0.0f};
  int d, k, sh;
  for (d = 0; d < 3; d++)
    for (sh = 0; sh < 4; sh++) {
      dk_dtype dt = dkt_float_types[d];
      int64_t n = numel_of(3, shapes[sh]), i;
      double *pv, *sv, *got = dkt_alloc(n), *want = dkt_alloc(n);
      dk_tensor *xp = dkt_random(t, t->dev, dt, 3, shapes[sh], "xpos", 0.05, 6, &pv);
      dk_tensor *xs = dkt_random(t, t->dev, dt, 3, shapes[sh], "x", -3, 3, &sv);
      dk_tensor *o = dkt_random(t, t->dev, dt, 3, shapes[sh], "out", -9, 9, NULL);
      for (k = 0; k < 9 + 5 && xp && xs && o; k++) {
        char what[96];
        int fk = k < 9 ? k : 8;
        float p = 0, q = 0;
        const double *in = (k <= 2) ? pv : sv;
        if (k < 7) {
          DKT_OK(t, fns[k](o, k <= 2 ? xp : xs));
        } else if (k == 7) {
          p = -1.0f; q = 0.5f;
          DKT_OK(t, dk_clamp(o, xs, p, q));
        } else {
          p = pexp[k - 8];
          /* fractional exponents on positive bases only */
          in = (p == floorf(p)) ? sv : pv;
          DKT_OK(t, dk_pow_scalar(o, in == sv ? xs : xp, p));
        }
        if (!dkt_read(t, o, got)) break;
        for (i = 0; i < n; i++) want[i] = ref_math(fk, in[i], p, q);
        snprintf(what, sizeof what, "dk_%s %s shape %d p=%g", names[fk], dk_dtype_name(dt), sh, (double)p);
        /* pow's exp2(e*log2(x)) loses |e*log2 x| ulps on GPUs */
        dkt_close(t, what, got, want, n, dkt_tol(dt, 1) * 2, dkt_tol(dt, 1) * (fk == 8 ? 8 : 2));
      }
      dk_tensor_free(xp); dk_tensor_free(xs); dk_tensor_free(o);
      free(pv); free(sv); free(got); free(want);
    }
}

/* element of a broadcast input for output index idx (out shape os, nd dims) */
static int64_t bcast_index(int nd, const int64_t *os, int vnd, const int64_t *vs, int64_t idx) {
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
  return off;
}

DKT_TEST(ops_pow_broadcast, 0) {
  if (lacks(t, "dk_pow")) return;
  static const struct { int and_; int64_t as[4]; int bnd; int64_t bs[4]; int ond; int64_t os[4]; } cases[] = {
    {2, {37, 19}, 2, {37, 19}, 2, {37, 19}},
    {3, {3, 5, 7}, 2, {5, 1}, 3, {3, 5, 7}},
    {1, {1}, 3, {2, 3, 4}, 3, {2, 3, 4}},
    {4, {2, 1, 3, 1}, 3, {4, 1, 5}, 4, {2, 4, 3, 5}},
    {2, {0, 3}, 1, {3}, 2, {0, 3}},
  };
  size_t c;
  int d, neg;
  for (d = 0; d < 3; d++)
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++)
      for (neg = 0; neg < 2; neg++) {
        dk_dtype dt = dkt_float_types[d];
        int64_t n = numel_of(cases[c].ond, cases[c].os), nb = numel_of(cases[c].bnd, cases[c].bs), i;
        double *av, *bv = dkt_alloc(nb), *got = dkt_alloc(n), *want = dkt_alloc(n);
        char what[96];
        dk_tensor *a, *b, *o;
        /* neg: signed bases with integer exponents (the sign rule) */
        /* |a| >= 0.3 keeps a^-3 inside f16's range */
        {
          int64_t na = numel_of(cases[c].and_, cases[c].as);
          av = dkt_alloc(na);
          for (i = 0; i < na; i++) av[i] = (neg && (dkt_u64(t) & 1) ? -1 : 1) * dkt_uniform(t, 0.3, 2.5);
          a = dkt_tensor(t, t->dev, dt, cases[c].and_, cases[c].as, "a", av);
        }
        for (i = 0; i < nb; i++) bv[i] = neg ? (double)((int64_t)(dkt_u64(t) % 7) - 3) : dkt_uniform(t, -2, 2);
        b = dkt_tensor(t, t->dev, dt, cases[c].bnd, cases[c].bs, "b", bv);
        o = dkt_random(t, t->dev, dt, cases[c].ond, cases[c].os, "out", -9, 9, NULL);
        if (a && b && o) {
          DKT_OK(t, dk_pow(o, a, b));
          if (dkt_read(t, o, got)) {
            for (i = 0; i < n; i++)
              want[i] = pow(av[bcast_index(cases[c].ond, cases[c].os, cases[c].and_, cases[c].as, i)],
                            bv[bcast_index(cases[c].ond, cases[c].os, cases[c].bnd, cases[c].bs, i)]);
            snprintf(what, sizeof what, "dk_pow %s case %d neg %d", dk_dtype_name(dt), (int)c, neg);
            dkt_close(t, what, got, want, n, dkt_tol(dt, 1) * 2, dkt_tol(dt, 1) * 8);
          }
        }
        dk_tensor_free(a); dk_tensor_free(b); dk_tensor_free(o);
        free(av); free(bv); free(got); free(want);
      }
}

/* ---- softmax and log-softmax on an axis ------------------------------------------ */

DKT_TEST(ops_softmax_axis, 0) {
  if (lacks(t, "dk_softmax_axis")) return;
  static const struct { int nd; int64_t s[4]; } cases[] = {
    {3, {3, 4, 5}}, {3, {2, 300, 3}}, {1, {1}}, {3, {4, 1, 3}}, {2, {0, 4}}, {2, {3, 1000}},
  };
  size_t c;
  int d, lg, axis;
  for (d = 0; d < 3; d++)
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      dk_dtype dt = dkt_float_types[d];
      int nd = cases[c].nd, i;
      int64_t n = numel_of(nd, cases[c].s);
      double *xv, *got = dkt_alloc(n), *want = dkt_alloc(n);
      dk_tensor *x = dkt_random(t, t->dev, dt, nd, cases[c].s, "x", -6, 6, &xv);
      dk_tensor *o = dkt_random(t, t->dev, dt, nd, cases[c].s, "out", -9, 9, NULL);
      for (axis = -1; axis < nd && x && o; axis++)
        for (lg = 0; lg < 2; lg++) {
          int a = axis < 0 ? axis + nd : axis;
          int64_t L = cases[c].s[a], inner = 1, outer, k;
          char what[96];
          for (i = a + 1; i < nd; i++) inner *= cases[c].s[i];
          outer = L && inner ? n / (L * inner) : 0;
          DKT_OK(t, (lg ? dk_log_softmax : dk_softmax_axis)(o, x, axis));
          if (!dkt_read(t, o, got)) break;
          for (k = 0; k < outer * inner; k++) {
            int64_t ou = k / inner, in = k % inner, j;
            double m = -INFINITY, z = 0;
            for (j = 0; j < L; j++) m = fmax(m, xv[(ou * L + j) * inner + in]);
            for (j = 0; j < L; j++) z += exp(xv[(ou * L + j) * inner + in] - m);
            for (j = 0; j < L; j++) {
              int64_t e = (ou * L + j) * inner + in;
              want[e] = lg ? xv[e] - m - log(z) : exp(xv[e] - m) / z;
            }
          }
          snprintf(what, sizeof what, "dk_%s %s case %d axis %d", lg ? "log_softmax" : "softmax_axis", dk_dtype_name(dt),
                   (int)c, axis);
          dkt_close(t, what, got, want, n, dkt_tol(dt, L) * (lg ? 8 : 1), dkt_tol(dt, L) * 2);
        }
      dk_tensor_free(x); dk_tensor_free(o); free(xv); free(got); free(want);
    }
}

/* a line of -inf: zeros (softmax) and -inf (log-softmax); a NaN: NaN */
DKT_TEST(ops_softmax_axis_degenerate, 0) {
  int64_t s[2] = {3, 4};
  double xv[12], got[12], want[12];
  int d, j, lg;
  if (lacks(t, "dk_log_softmax")) return;
  for (d = 0; d < 3; d++) {
    dk_dtype dt = dkt_float_types[d];
    dk_tensor *x, *o;
    for (j = 0; j < 12; j++) xv[j] = 0.25 * j - 1;
    for (j = 0; j < 3; j++) xv[j * 4 + 1] = -INFINITY;   /* column 1 (axis 0 line) all -inf */
    xv[2] = NAN;                                         /* column 2 holds a NaN */
    x = dkt_tensor(t, t->dev, dt, 2, s, "x", xv);
    o = dkt_random(t, t->dev, dt, 2, s, "out", -1, 1, NULL);
    for (lg = 0; lg < 2 && x && o; lg++) {
      DKT_OK(t, (lg ? dk_log_softmax : dk_softmax_axis)(o, x, 0));
      if (!dkt_read(t, o, got)) break;
      for (j = 0; j < 12; j++) {
        int col = j % 4, r;
        double m = -INFINITY, z = 0;
        for (r = 0; r < 3; r++) m = fmax(m, xv[r * 4 + col]);
        if (col == 1) { want[j] = lg ? -INFINITY : 0.0; continue; }
        if (col == 2) { want[j] = NAN; continue; }
        for (r = 0; r < 3; r++) z += exp(xv[r * 4 + col] - m);
        want[j] = lg ? xv[j] - m - log(z) : exp(xv[j] - m) / z;
      }
      close_special(t, lg ? "log_softmax degenerate" : "softmax_axis degenerate", got, want, 12, dkt_tol(dt, 3) * 4,
                    dkt_tol(dt, 3) * 4);
    }
    dk_tensor_free(x); dk_tensor_free(o);
  }
}

/* ---- where ----------------------------------------------------------------------- */

DKT_TEST(ops_where, 0) {
  if (lacks(t, "dk_where")) return;
  static const struct { int mnd; int64_t ms[4]; int and_; int64_t as[4]; int bnd; int64_t bs[4]; int ond; int64_t os[4]; } cases[] = {
    {2, {2, 3}, 2, {2, 3}, 2, {2, 3}, 2, {2, 3}},
    {3, {3, 1, 5}, 2, {4, 5}, 3, {3, 4, 1}, 3, {3, 4, 5}},
    {1, {1}, 2, {7, 300}, 1, {300}, 2, {7, 300}},
    {2, {5, 1}, 1, {1}, 2, {1, 6}, 2, {5, 6}},
    {2, {0, 3}, 1, {3}, 1, {3}, 2, {0, 3}},
  };
  static const int32_t pick[5] = {-2, 0, 0, 1, 5};
  size_t c;
  int d;
  for (d = 0; d < 3; d++)
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      dk_dtype dt = dkt_float_types[d];
      int64_t n = numel_of(cases[c].ond, cases[c].os), nm = numel_of(cases[c].mnd, cases[c].ms), i;
      int32_t *mv = (int32_t *)calloc((size_t)(nm ? nm : 1), 4);
      double *av, *bv, *got = dkt_alloc(n), *want = dkt_alloc(n);
      dk_tensor *m, *a, *b, *o;
      char what[64];
      for (i = 0; i < nm; i++) mv[i] = pick[dkt_u64(t) % 5];
      m = dkt_ids(t, t->dev, cases[c].mnd, cases[c].ms, "mask", mv);
      a = dkt_random(t, t->dev, dt, cases[c].and_, cases[c].as, "a", -3, 3, &av);
      b = dkt_random(t, t->dev, dt, cases[c].bnd, cases[c].bs, "b", -3, 3, &bv);
      o = dkt_random(t, t->dev, dt, cases[c].ond, cases[c].os, "out", -9, 9, NULL);
      if (m && a && b && o) {
        DKT_OK(t, dk_where(o, m, a, b));
        if (dkt_read(t, o, got)) {
          for (i = 0; i < n; i++) {
            int32_t mk = mv[bcast_index(cases[c].ond, cases[c].os, cases[c].mnd, cases[c].ms, i)];
            want[i] = mk ? av[bcast_index(cases[c].ond, cases[c].os, cases[c].and_, cases[c].as, i)]
                         : bv[bcast_index(cases[c].ond, cases[c].os, cases[c].bnd, cases[c].bs, i)];
          }
          snprintf(what, sizeof what, "dk_where %s case %d", dk_dtype_name(dt), (int)c);
          dkt_close(t, what, got, want, n, 0, 0);   /* a selection: exact */
        }
      }
      dk_tensor_free(m); dk_tensor_free(a); dk_tensor_free(b); dk_tensor_free(o);
      free(mv); free(av); free(bv); free(got); free(want);
    }
}

/* ---- the dispatcher's refusals for the new ops ---------------------------------- */

DKT_TEST(ops_axes_errors, 0) {
  int64_t s[3] = {2, 3, 4}, s2[2] = {2, 4}, s3[2] = {2, 3}, wide[2] = {3, 8};
  int ax1 = 1, dup[2] = {1, -2}, bad = 3;
  dk_tensor *x = dkt_random(t, t->dev, DK_F32, 3, s, "x", -1, 1, NULL);
  dk_tensor *o = dkt_random(t, t->dev, DK_F32, 2, s2, "o", -1, 1, NULL);
  dk_tensor *oh = dkt_random(t, t->dev, DK_F16, 2, s2, "o16", -1, 1, NULL);
  dk_tensor *wrong = dkt_random(t, t->dev, DK_F32, 2, s3, "wrong", -1, 1, NULL);
  dk_tensor *ids = NULL, *w = NULL, *view = NULL, *xo = NULL;
  int32_t zeros[8] = {0};
  if (!x || !o || !oh || !wrong) goto done;
  ids = dkt_ids(t, t->dev, 2, s2, "ids", zeros);
  w = dkt_random(t, t->dev, DK_F32, 2, wide, "w", -1, 1, NULL);
  if (!ids || !w) goto done;
  DKT_REFUSED(t, dk_reduce_sum(o, x, &ax1, 1, 0),
              dk_op_supported(t->dev.backend, "dk_reduce_sum", DK_F32, 0) ? DK_OK : DK_ERR_UNSUPPORTED);
  DKT_REFUSED(t, dk_reduce_sum(oh, x, &ax1, 1, 0), DK_ERR_DTYPE);
  DKT_MSG_HAS(t, "dk_reduce_sum");
  DKT_REFUSED(t, dk_reduce_sum(wrong, x, &ax1, 1, 0), DK_ERR_SHAPE);
  DKT_MSG_HAS(t, "without the reduced axes");
  DKT_REFUSED(t, dk_reduce_mean(o, x, &bad, 1, 0), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "out of range");
  DKT_REFUSED(t, dk_reduce_max(o, x, dup, 2, 0), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "twice");
  DKT_REFUSED(t, dk_reduce_min(o, x, NULL, 2, 0), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_argmax_axis(o, x, 1, 0, 0), DK_ERR_DTYPE);
  DKT_MSG_HAS(t, "must be i32");
  DKT_REFUSED(t, dk_argmin_axis(ids, x, 2, 0, 0), DK_ERR_SHAPE);
  DKT_REFUSED(t, dk_argmax_axis(ids, x, -4, 0, 0), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_clamp(x, x, 1.0f, -1.0f), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "lo <= hi");
  DKT_REFUSED(t, dk_sqrt(oh, o), DK_ERR_DTYPE);
  DKT_REFUSED(t, dk_log(wrong, o), DK_ERR_SHAPE);
  DKT_REFUSED(t, dk_softmax_axis(x, x, 3), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_log_softmax(o, x, 0), DK_ERR_SHAPE);
  DKT_REFUSED(t, dk_pow(o, x, wrong), DK_ERR_SHAPE);
  DKT_REFUSED(t, dk_where(o, o, o, o), DK_ERR_DTYPE);
  DKT_MSG_HAS(t, "'mask' is f32; it must be i32");
  DKT_REFUSED(t, dk_where(o, ids, o, oh), DK_ERR_DTYPE);
  DKT_REFUSED(t, dk_where(o, ids, wrong, o), DK_ERR_SHAPE);
  DKT_MSG_HAS(t, "do not broadcast");
  DKT_REFUSED(t, dk_reduce_sum(o, NULL, &ax1, 1, 0), DK_ERR_INVALID);
  /* the layout check comes after the backend's (CUDA without the switch) */
  if (!dk_op_supported(t->dev.backend, "dk_reduce_sum", DK_F32, 0)) goto done;
  /* a strided view (narrow along the last dim): make it contiguous first */
  DKT_OK(t, dk_narrow(w, 1, 2, 3, &view));
  {
    int64_t os[1] = {3};
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 1, os, "sum", &xo));
    DKT_REFUSED(t, dk_reduce_sum(xo, view, &ax1, 1, 0), DK_ERR_SHAPE);
    DKT_MSG_HAS(t, "strided view");
  }
  /* operands on two devices of one backend */
  if (t->has_dev2) {
    dk_tensor *o2 = dkt_random(t, t->dev2, DK_F32, 2, s2, "o_dev2", -1, 1, NULL);
    if (o2) {
      DKT_REFUSED(t, dk_reduce_sum(o2, x, &ax1, 1, 0), DK_ERR_DEVICE_MISMATCH);
      DKT_MSG_HAS(t, "different devices");
      DKT_REFUSED(t, dk_where(o2, ids, o, o), DK_ERR_DEVICE_MISMATCH);
    }
    dk_tensor_free(o2);
  }
done:
  dk_tensor_free(x); dk_tensor_free(o); dk_tensor_free(oh); dk_tensor_free(wrong);
  dk_tensor_free(ids); dk_tensor_free(w); dk_tensor_free(view); dk_tensor_free(xo);
}

/* Under DEVKIT_CUDA_NEWOPS=0 CUDA refuses these ops, naming the op, the
 * device and the switch (run it so, on a GPU or on tools/check_cuda_host.sh's
 * mock driver) */
DKT_TEST(errors_cuda_newops_gated, 0) {
  int64_t s[2] = {2, 3}, os[1] = {2};
  int ax = 1;
  const char *e = getenv("DEVKIT_CUDA_NEWOPS");
  dk_tensor *x = NULL, *o = NULL;
  if (t->dev.backend != DK_CUDA) { dkt_skip(t, "a CUDA rule"); return; }
  if (!(e && e[0] == '0')) { dkt_skip(t, "the kernels are on (DEVKIT_CUDA_NEWOPS=0 turns them off)"); return; }
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, s, "x", &x));
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 1, os, "sum", &o));
  DKT_REFUSED(t, dk_reduce_sum(o, x, &ax, 1, 0), DK_ERR_UNSUPPORTED);
  DKT_MSG_HAS(t, "dk_reduce_sum");
  DKT_MSG_HAS(t, dk_device_name(t->dev));
  DKT_MSG_HAS(t, "DEVKIT_CUDA_NEWOPS=0");
  DKT_REFUSED(t, dk_sqrt(x, x), DK_ERR_UNSUPPORTED);
  DKT_MSG_HAS(t, "dk_sqrt");
  dk_tensor_free(x); dk_tensor_free(o);
}

/* ---- cumsum, top-k, index_select ---------------------------------------------------- */

DKT_TEST(ops_cumsum, 0) {
  if (lacks(t, "dk_cumsum")) return;
  static const struct { int nd; int64_t s[4]; } cases[] = {
    {3, {3, 4, 5}}, {1, {1}}, {3, {2, 0, 3}}, {2, {2, 1000}}, {4, {2, 3, 1, 7}},
  };
  size_t c;
  int d, axis, fl;
  for (d = 0; d < 3; d++)
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      dk_dtype dt = dkt_float_types[d];
      int nd = cases[c].nd, i;
      int64_t n = numel_of(nd, cases[c].s);
      double *xv, *got = dkt_alloc(n), *want = dkt_alloc(n), *mag = dkt_alloc(n);
      dk_tensor *x = dkt_random(t, t->dev, dt, nd, cases[c].s, "x", -2, 2, &xv);
      dk_tensor *o = dkt_random(t, t->dev, dt, nd, cases[c].s, "out", -9, 9, NULL);
      for (axis = -1; axis < nd && x && o; axis++)
        for (fl = 0; fl < 4; fl++) {
          int a = axis < 0 ? axis + nd : axis, excl = fl & 1, rev = fl >> 1;
          int64_t L = cases[c].s[a], inner = 1, outer, k;
          char what[96];
          for (i = a + 1; i < nd; i++) inner *= cases[c].s[i];
          outer = L && inner ? n / (L * inner) : 0;
          DKT_OK(t, dk_cumsum(o, x, axis, excl, rev));
          if (!dkt_read(t, o, got)) break;
          for (k = 0; k < outer * inner; k++) {
            int64_t ou = k / inner, in = k % inner, j;
            double acc = 0, am = 0;
            for (j = 0; j < L; j++) {
              int64_t e = (ou * L + (rev ? L - 1 - j : j)) * inner + in;
              if (!excl) { acc += xv[e]; am += fabs(xv[e]); }
              want[e] = acc;
              mag[e] = am;
              if (excl) { acc += xv[e]; am += fabs(xv[e]); }
            }
          }
          dkt_round_to(dt, want, n);
          snprintf(what, sizeof what, "dk_cumsum %s case %d axis %d excl %d rev %d", dk_dtype_name(dt), (int)c, axis, excl, rev);
          for (k = 0; k < n; k++)
            if (!(fabs(got[k] - want[k]) <= dkt_tol(dt, L) * (fabs(want[k]) + mag[k]) + 1e-30)) {
              dkt_fail_at(t, __FILE__, __LINE__, "%s: element %lld is %.9g, want %.9g", what, (long long)k, got[k], want[k]);
              break;
            }
        }
      dk_tensor_free(x); dk_tensor_free(o); free(xv); free(got); free(want); free(mag);
    }
}

DKT_TEST(ops_topk, 0) {
  if (lacks(t, "dk_topk")) return;
  static const struct { int nd; int64_t s[3]; int k; } cases[] = {
    {2, {3, 10}, 3}, {2, {3, 10}, 10}, {3, {2, 3, 700}, 5}, {1, {1}, 1}, {2, {4, 9}, 0}, {2, {0, 5}, 2}, {1, {300}, 1},
  };
  size_t c;
  int d, largest;
  for (d = 0; d < 3; d++)
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      dk_dtype dt = dkt_float_types[d];
      int nd = cases[c].nd, k = cases[c].k, i;
      int64_t n = numel_of(nd, cases[c].s), L = cases[c].s[nd - 1], rows = L ? n / L : 0, os[3], r;
      double *xv = dkt_alloc(n), *gv = dkt_alloc(rows * k), *gi = dkt_alloc(rows * k);
      dk_tensor *x, *vo, *io;
      /* few distinct values: ties; NaNs that rank last */
      for (r = 0; r < n; r++) xv[r] = (double)((int64_t)(dkt_u64(t) % 9) - 4) * 0.5;
      if (n > 12) { xv[2] = NAN; xv[n - 5] = NAN; }
      for (i = 0; i < nd; i++) os[i] = i == nd - 1 ? k : cases[c].s[i];
      x = dkt_tensor(t, t->dev, dt, nd, cases[c].s, "x", xv);
      vo = dkt_random(t, t->dev, dt, nd, os, "values", -9, 9, NULL);
      io = dkt_random(t, t->dev, DK_I32, nd, os, "indices", -9, 9, NULL);
      for (largest = 0; largest < 2 && x && vo && io; largest++) {
        char what[96];
        DKT_OK(t, dk_topk(vo, io, x, k, largest));
        if (!dkt_read(t, vo, gv) || !dkt_read(t, io, gi)) break;
        snprintf(what, sizeof what, "dk_topk %s case %d k %d largest %d", dk_dtype_name(dt), (int)c, k, largest);
        for (r = 0; r < rows; r++) {
          /* the reference: rank by (key desc, index asc), one at a time */
          int64_t prev = -1, j, t2;
          double pk = 0;
          for (t2 = 0; t2 < k; t2++) {
            int64_t bi = -1;
            double best = 0;
            for (j = 0; j < L; j++) {
              double v = xv[r * L + j], key = isnan(v) ? -INFINITY : largest ? v : -v;
              int after = prev < 0 || key < pk || (key == pk && j > prev);
              if (after && (bi < 0 || key > best)) { best = key; bi = j; }
            }
            if (gi[r * k + t2] != (double)bi || !(gv[r * k + t2] == xv[r * L + bi] || (isnan(gv[r * k + t2]) && isnan(xv[r * L + bi])))) {
              dkt_fail_at(t, __FILE__, __LINE__, "%s: row %lld rank %lld is [%g] = %g, want [%lld] = %g", what, (long long)r,
                          (long long)t2, gi[r * k + t2], gv[r * k + t2], (long long)bi, xv[r * L + bi]);
              r = rows;
              break;
            }
            pk = best;
            prev = bi;
          }
        }
      }
      dk_tensor_free(x); dk_tensor_free(vo); dk_tensor_free(io); free(xv); free(gv); free(gi);
    }
}

DKT_TEST(ops_index_select, 0) {
  if (lacks(t, "dk_index_select")) return;
  static const struct { int nd; int64_t s[3]; int ind; int64_t is[2]; } cases[] = {
    {3, {4, 5, 6}, 1, {3}}, {3, {4, 5, 6}, 2, {2, 2}}, {1, {1}, 1, {1}}, {2, {3, 7}, 1, {0}}, {2, {300, 2}, 1, {5}},
  };
  size_t c;
  int d, axis;
  for (d = 0; d < 3; d++)
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      dk_dtype dt = dkt_float_types[d];
      int nd = cases[c].nd, i;
      int64_t n = numel_of(nd, cases[c].s), nids = numel_of(cases[c].ind, cases[c].is);
      double *xv;
      dk_tensor *x = dkt_random(t, t->dev, dt, nd, cases[c].s, "x", -3, 3, &xv);
      for (axis = -1; axis < nd && x; axis++) {
        int a = axis < 0 ? axis + nd : axis, ond = 0;
        int64_t os[5], L = cases[c].s[a], inner = 1, outer = 1, no, q, k, j;
        int32_t ids[8];
        double *got, *want;
        dk_tensor *id, *o;
        char what[96];
        for (i = 0; i < a; i++) { os[ond++] = cases[c].s[i]; outer *= cases[c].s[i]; }
        for (i = 0; i < cases[c].ind; i++) os[ond++] = cases[c].is[i];
        for (i = a + 1; i < nd; i++) { os[ond++] = cases[c].s[i]; inner *= cases[c].s[i]; }
        /* negative ids too: -L .. L-1 */
        for (k = 0; k < nids; k++) ids[k] = (int32_t)((int64_t)(dkt_u64(t) % (uint64_t)(2 * L)) - L);
        no = numel_of(ond, os);
        got = dkt_alloc(no); want = dkt_alloc(no);
        id = dkt_ids(t, t->dev, cases[c].ind, cases[c].is, "ids", ids);
        o = dkt_random(t, t->dev, dt, ond, os, "out", -9, 9, NULL);
        if (id && o) {
          DKT_OK(t, dk_index_select(o, x, id, axis));
          if (dkt_read(t, o, got)) {
            for (q = 0; q < outer; q++)
              for (k = 0; k < nids; k++)
                for (j = 0; j < inner; j++)
                  want[(q * nids + k) * inner + j] = xv[(q * L + (ids[k] < 0 ? ids[k] + L : ids[k])) * inner + j];
            snprintf(what, sizeof what, "dk_index_select %s case %d axis %d", dk_dtype_name(dt), (int)c, axis);
            dkt_close(t, what, got, want, no, 0, 0);
          }
        }
        dk_tensor_free(id); dk_tensor_free(o); free(got); free(want);
      }
      dk_tensor_free(x); free(xv);
      (void)n;
    }
}

/* an id out of range names the id and its position: at once on the CPU, at
 * the next sync on a GPU */
DKT_TEST(ops_index_select_bad_id, 0) {
  int64_t s[2] = {4, 3}, is[1] = {4}, os[2] = {4, 4};
  int32_t ids[4] = {0, -3, 7, 1};
  float got[16];
  dk_tensor *x = dkt_random(t, t->dev, DK_F32, 2, s, "x", -1, 1, NULL);
  dk_tensor *id = dkt_ids(t, t->dev, 1, is, "ids", ids);
  dk_tensor *o = dkt_random(t, t->dev, DK_F32, 2, os, "out", -1, 1, NULL);
  if (lacks(t, "dk_index_select")) return;
  if (x && id && o) {
    dk_status s1 = dk_index_select(o, x, id, 1), s2 = DK_OK;
    if (s1 == DK_OK) s2 = dk_tensor_download(o, got, sizeof got);
    DKT_CHECK(t, (s1 == DK_ERR_INVALID) != (s2 == DK_ERR_INVALID), "a bad id -> %s then %s", dk_status_name(s1),
              dk_status_name(s2));
    DKT_CHECK(t, t->dev.backend != DK_CPU || s1 == DK_ERR_INVALID, "the CPU reports it from the op");
    DKT_MSG_HAS(t, "holds 7 at position 2");
    DKT_MSG_HAS(t, "axis 1");
    DKT_MSG_HAS(t, "'ids'");
    /* the device is usable afterwards */
    ids[2] = -1;
    DKT_OK(t, dk_tensor_upload(id, ids, sizeof ids));
    DKT_OK(t, dk_index_select(o, x, id, 1));
    DKT_OK(t, dk_tensor_download(o, got, sizeof got));
  }
  dk_tensor_free(x); dk_tensor_free(id); dk_tensor_free(o);
}

/* dk_slice: any nonzero step on any axis, negative ones included (ONNX
 * Slice), exact copies; bad arguments refused before anything runs */
DKT_TEST(ops_slice, 0) {
  static const struct { int64_t start, step, m; } cases[] = {
    {-1, -1, 7}, {6, -2, 4}, {0, 3, 3}, {-3, 1, 3}, {5, -5, 2}, {2, 1, 0}, {0, 1, 7},
  };
  int64_t s[3] = {3, 7, 5};
  size_t c;
  int d, axis;
  if (lacks(t, "dk_index_select")) return;
  for (d = 0; d < 3; d++) {
    dk_dtype dt = dkt_float_types[d];
    double *xv;
    dk_tensor *x = dkt_random(t, t->dev, dt, 3, s, "x", -3, 3, &xv);
    for (axis = 0; axis < 3 && x; axis++)
      for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t os[3] = {s[0], s[1], s[2]}, L = s[axis], start = cases[c].start < 0 ? cases[c].start + L : cases[c].start;
        int64_t m = cases[c].m, no, e, k, last = start + (m - 1) * cases[c].step;
        double *got, *want;
        dk_tensor *o;
        char what[96];
        if (m > 0 && (start < 0 || start >= L || last < 0 || last >= L)) continue;   /* this axis is too short for the case */
        os[axis] = m;
        no = os[0] * os[1] * os[2];
        got = dkt_alloc(no); want = dkt_alloc(no);
        o = dkt_random(t, t->dev, dt, 3, os, "out", -9, 9, NULL);
        if (o) {
          DKT_OK(t, dk_slice(o, x, axis, cases[c].start, cases[c].step));
          if (no && dkt_read(t, o, got)) {
            for (e = 0; e < no; e++) {
              int64_t idx[3] = {e / (os[1] * os[2]), (e / os[2]) % os[1], e % os[2]};
              k = idx[axis];
              idx[axis] = start + k * cases[c].step;
              want[e] = xv[(idx[0] * s[1] + idx[1]) * s[2] + idx[2]];
            }
            snprintf(what, sizeof what, "dk_slice %s axis %d start %lld step %lld", dk_dtype_name(dt), axis,
                     (long long)cases[c].start, (long long)cases[c].step);
            dkt_close(t, what, got, want, no, 0, 0);
          }
        }
        dk_tensor_free(o); free(got); free(want);
      }
    if (x && d == 0) {
      int64_t bad[3] = {3, 4, 5};
      dk_tensor *o = dkt_random(t, t->dev, dt, 3, bad, "out", -1, 1, NULL);
      DKT_REFUSED(t, dk_slice(o, x, 1, 0, 0), DK_ERR_INVALID);
      DKT_MSG_HAS(t, "step 0");
      DKT_REFUSED(t, dk_slice(o, x, 1, 6, 1), DK_ERR_INVALID);   /* 6, 7, 8, 9: past the end */
      DKT_MSG_HAS(t, "outside axis 1");
      DKT_REFUSED(t, dk_slice(o, x, 1, 2, -1), DK_ERR_INVALID);  /* 2, 1, 0, -1 */
      DKT_REFUSED(t, dk_slice(o, x, 0, 0, 1), DK_ERR_SHAPE);     /* out differs in dim 1 */
      DKT_REFUSED(t, dk_slice(o, x, 3, 0, 1), DK_ERR_INVALID);
      dk_tensor_free(o);
    }
    dk_tensor_free(x); free(xv);
  }
}

/* long lines: exact on the CPU; a software Vulkan device (llvmpipe stops a
 * shader invocation after 65535 loop iterations) must refuse, never return
 * a partial result */
DKT_TEST(ops_long_lines, 0) {
  int64_t n = 600000, one = 1, i;
  float *ones = (float *)malloc((size_t)n * 4), *got = (float *)malloc((size_t)n * 4);
  dk_tensor *x = NULL, *o = NULL, *s = NULL;
  dk_status st;
  if (lacks(t, "dk_cumsum")) goto done;
  for (i = 0; i < n; i++) ones[i] = 1.0f;
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 1, &n, "x", &x));
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 1, &n, "out", &o));
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 0, &one, "sum", &s));
  DKT_OK(t, dk_tensor_upload(x, ones, (size_t)n * 4));
  st = dk_cumsum(o, x, 0, 0, 0);
  if (st == DK_ERR_UNSUPPORTED && t->dev.backend == DK_VULKAN) {
    DKT_MSG_HAS(t, "65535");
  } else {
    DKT_CHECK(t, st == DK_OK, "cumsum of %lld -> %s: %s", (long long)n, dk_status_name(st), dk_last_error());
    if (st == DK_OK && dk_tensor_download(o, got, (size_t)n * 4) == DK_OK)
      for (i = 0; i < n; i += 9973)
        if (got[i] != (float)(i + 1)) { DKT_CHECK(t, 0, "cumsum[%lld] = %g", (long long)i, (double)got[i]); break; }
  }
  st = dk_reduce_sum(s, x, NULL, 0, 0);
  if (st == DK_ERR_UNSUPPORTED && t->dev.backend == DK_VULKAN) {
    DKT_MSG_HAS(t, "65535");
  } else {
    DKT_CHECK(t, st == DK_OK, "sum of %lld -> %s: %s", (long long)n, dk_status_name(st), dk_last_error());
    if (st == DK_OK && dk_tensor_download(s, got, 4) == DK_OK) DKT_CHECK(t, got[0] == (float)n, "sum = %g", (double)got[0]);
  }
done:
  dk_tensor_free(x); dk_tensor_free(o); dk_tensor_free(s); free(ones); free(got);
}
