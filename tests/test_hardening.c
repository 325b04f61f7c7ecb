/* tests/test_hardening.c — hostile sizes, tensors used after free or after
 * dk_shutdown, degenerate data (issue 11). Every test runs on every device.
 *
 * The size tests throw INT64_MIN/MAX, +-1 around each limit and products that
 * wrap at every public function that computes a size, offset or stride, and
 * check a clear error and untouched neighbours: a canary tensor is allocated
 * on each side of the victim and must keep its bytes. */
#include "test.h"

#include <limits.h>
#include <stdint.h>
#include <unistd.h>

/* ---- canaries --------------------------------------------------------------- */

typedef struct {
  dk_tensor *t[3];          /* canary, victim, canary */
  unsigned char *bytes[3];  /* what each held after setup */
  size_t n[3];
} nest;

static int nest_make(dkt *t, nest *ns, int ndim, const int64_t *shape) {
  int64_t cs[1] = {256};
  const char *names[3] = {"canary_before", "victim", "canary_after"};
  int k;
  memset(ns, 0, sizeof *ns);
  for (k = 0; k < 3; k++) {
    ns->t[k] = k == 1 ? dkt_random(t, t->dev, DK_F32, ndim, shape, names[k], -1, 1, NULL)
                      : dkt_random(t, t->dev, DK_F32, 1, cs, names[k], -1, 1, NULL);
    if (!ns->t[k]) return 0;
  }
  for (k = 0; k < 3; k++) {
    ns->n[k] = dk_tensor_nbytes(ns->t[k]);
    ns->bytes[k] = (unsigned char *)malloc(ns->n[k] + 1);
    if (dk_tensor_download(ns->t[k], ns->bytes[k], ns->n[k]) != DK_OK) {
      dkt_fail_at(t, __FILE__, __LINE__, "download: %s", dk_last_error());
      return 0;
    }
  }
  return 1;
}

/* every tensor of the nest holds what it did (victim too, unless it was
 * written on purpose: check_victim = 0) */
static void nest_check(dkt *t, nest *ns, int check_victim, const char *when) {
  int k;
  for (k = 0; k < 3; k++) {
    unsigned char *now;
    if (k == 1 && !check_victim) continue;
    now = (unsigned char *)malloc(ns->n[k] + 1);
    if (dk_tensor_download(ns->t[k], now, ns->n[k]) != DK_OK)
      dkt_fail_at(t, __FILE__, __LINE__, "%s: download of '%s': %s", when, dk_tensor_name(ns->t[k]), dk_last_error());
    else
      DKT_CHECK(t, memcmp(now, ns->bytes[k], ns->n[k]) == 0, "%s: '%s' changed", when, dk_tensor_name(ns->t[k]));
    free(now);
  }
}

static void nest_free(nest *ns) {
  int k;
  for (k = 0; k < 3; k++) { dk_tensor_free(ns->t[k]); free(ns->bytes[k]); }
}

static uint64_t used_bytes(dkt *t) {
  dk_device_props p;
  if (dk_device_properties(t->dev, &p) != DK_OK) return (uint64_t)-1;
  return p.memory_used;
}

/* hostile int64 values: the limits, +-1 around them and around the sizes */
static const int64_t hostile[] = {INT64_MIN, INT64_MIN + 1, -((int64_t)1 << 32), -3, -2, -1, 0, 1, 2, 3, 4, 5, 7, 8, 9,
                                  (int64_t)1 << 31, (int64_t)1 << 32, INT64_MAX / 8, INT64_MAX - 4, INT64_MAX - 1,
                                  INT64_MAX};
#define N_HOSTILE ((int)(sizeof hostile / sizeof hostile[0]))

/* ---- dk_narrow ------------------------------------------------------------------ */

DKT_TEST(hardening_narrow_limits, 0) {
  int64_t s[2] = {4, 8};
  int dims[6] = {-3, -2, -1, 0, 1, 2};
  double xv[32];
  int di, a, b, ok_views = 0, refused = 0;
  nest ns;
  if (!nest_make(t, &ns, 2, s)) { nest_free(&ns); return; }
  if (!dkt_read(t, ns.t[1], xv)) { nest_free(&ns); return; }
  for (di = 0; di < 6; di++)
    for (a = 0; a < N_HOSTILE; a++)
      for (b = 0; b < N_HOSTILE; b++) {
        int dim = dims[di], d = dim < 0 ? dim + 2 : dim;
        int64_t start = hostile[a], len = hostile[b];
        dk_tensor *v = (dk_tensor *)(uintptr_t)1;
        int valid = d >= 0 && d < 2 && start >= 0 && len >= 0 && start <= s[d] && len <= s[d] - start;
        dk_status st = dk_narrow(ns.t[1], dim, start, len, &v);
        if (!valid) {
          refused++;
          DKT_CHECK(t, st == DK_ERR_SHAPE && v == NULL, "narrow(dim %d, %lld, %lld) -> %s", dim, (long long)start,
                    (long long)len, dk_status_name(st));
          DKT_CHECK(t, strstr(dk_last_error(), "dk_narrow 'victim'") != NULL, "message: %s", dk_last_error());
          if (d < 0 || d >= 2) {
            char want[32];
            snprintf(want, sizeof want, "dim %d ", dim);   /* the dim as given, not as wrapped */
            DKT_CHECK(t, strstr(dk_last_error(), want) != NULL, "message lacks '%s': %s", want, dk_last_error());
          }
          continue;
        }
        ok_views++;
        if (st != DK_OK) {
          dkt_fail_at(t, __FILE__, __LINE__, "narrow(dim %d, %lld, %lld) -> %s: %s", dim, (long long)start,
                      (long long)len, dk_status_name(st), dk_last_error());
          continue;
        }
        DKT_CHECK(t, dk_tensor_dim(v, d) == len && dk_tensor_dim(v, 1 - d) == s[1 - d], "view shape");
        if (len > 0) {
          /* the view reads exactly the elements it names */
          int64_t cs[2] = {d == 0 ? len : 4, d == 1 ? len : 8}, i, j;
          dk_tensor *c = NULL;
          double got[32];
          DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, cs, "copy", &c));
          if (dk_copy(c, v) == DK_OK && dkt_read(t, c, got)) {
            int bad = 0;
            for (i = 0; i < cs[0]; i++)
              for (j = 0; j < cs[1]; j++) {
                int64_t r = d == 0 ? start + i : i, q = d == 1 ? start + j : j;
                bad += got[i * cs[1] + j] != xv[r * 8 + q];
              }
            DKT_CHECK(t, bad == 0, "narrow(dim %d, %lld, %lld): %d elements differ", dim, (long long)start,
                      (long long)len, bad);
          } else {
            dkt_fail_at(t, __FILE__, __LINE__, "copy of a view: %s", dk_last_error());
          }
          dk_tensor_free(c);
        }
        dk_tensor_free(v);
      }
  DKT_CHECK(t, ok_views > 0 && refused > 0, "both kinds exercised");
  nest_check(t, &ns, 1, "after every narrow");
  {
    /* the last row written through a view lands in the last row only */
    dk_tensor *v = NULL;
    float row[8] = {9, 9, 9, 9, 9, 9, 9, 9};
    double now[32];
    int i;
    DKT_OK(t, dk_narrow(ns.t[1], 0, 3, 1, &v));
    DKT_OK(t, dk_tensor_upload(v, row, sizeof row));
    dk_tensor_free(v);
    nest_check(t, &ns, 0, "after writing the last row");
    if (dkt_read(t, ns.t[1], now))
      for (i = 0; i < 32; i++)
        DKT_CHECK(t, now[i] == (i >= 24 ? 9.0 : xv[i]), "element %d: %g", i, now[i]);
  }
  nest_free(&ns);
}

/* ---- dk_reshape --------------------------------------------------------------------- */

DKT_TEST(hardening_reshape_limits, 0) {
  int64_t s[1] = {2}, z[1] = {0};
  /* products that wrap to the element count, or past int64 */
  int64_t wraps[][3] = {{3, 6148914691236517206LL, 1}, {INT64_MAX, 2, 1}, {2, INT64_MAX, 1},
                        {(int64_t)1 << 32, (int64_t)1 << 32, 1}, {(int64_t)1 << 31, (int64_t)1 << 31, 4},
                        {-1, INT64_MAX, 2}, {INT64_MAX, INT64_MAX, INT64_MAX}, {0, INT64_MAX, 2}, {INT64_MIN, 1, 1},
                        {-2, 1, 1}, {-1, -1, 2}, {1, 1, 3}, {1, 3, 1}};
  int64_t fine[][3] = {{2, 1, 1}, {1, 2, 1}, {-1, 1, 1}, {2, -1, 1}, {1, 1, 2}};
  int k;
  nest ns;
  dk_tensor *e = NULL, *v;
  if (!nest_make(t, &ns, 1, s)) { nest_free(&ns); return; }
  for (k = 0; k < (int)(sizeof wraps / sizeof wraps[0]); k++) {
    v = (dk_tensor *)(uintptr_t)1;
    DKT_REFUSED(t, dk_reshape(ns.t[1], 3, wraps[k], &v), DK_ERR_SHAPE);
    DKT_CHECK(t, v == NULL, "a refused reshape leaves *out NULL");
    DKT_MSG_HAS(t, "dk_reshape 'victim'");
  }
  DKT_REFUSED(t, dk_reshape(ns.t[1], 2, wraps[0], &v), DK_ERR_SHAPE);
  DKT_MSG_HAS(t, "overflows");
  for (k = 0; k < (int)(sizeof fine / sizeof fine[0]); k++) {
    dk_tensor *o = NULL;
    double in[2], out[2];
    DKT_OK(t, dk_reshape(ns.t[1], 3, fine[k], &v));
    DKT_CHECK(t, dk_tensor_numel(v) == 2, "numel %lld", (long long)dk_tensor_numel(v));
    /* an op on the view computes on the two elements */
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 3, dk_tensor_shape(v), "o", &o));
    DKT_OK(t, dk_relu(o, v));
    if (dkt_read(t, ns.t[1], in) && dkt_read(t, o, out))
      DKT_CHECK(t, out[0] == (in[0] > 0 ? in[0] : 0) && out[1] == (in[1] > 0 ? in[1] : 0), "relu through a reshape");
    dk_tensor_free(o);
    dk_tensor_free(v);
  }
  nest_check(t, &ns, 1, "after every reshape");
  /* an empty tensor reshapes to any empty shape, however large its other dims */
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 1, z, "empty", &e));
  {
    int64_t big[3] = {INT64_MAX, INT64_MAX, 0}, big2[2] = {0, INT64_MAX}, inf[2] = {-1, 0};
    DKT_OK(t, dk_reshape(e, 3, big, &v));
    DKT_CHECK(t, dk_tensor_numel(v) == 0 && dk_tensor_nbytes(v) == 0, "empty view");
    DKT_OK(t, dk_relu(v, v));
    dk_tensor_free(v);
    DKT_OK(t, dk_reshape(e, 2, big2, &v));
    dk_tensor_free(v);
    DKT_REFUSED(t, dk_reshape(e, 2, inf, &v), DK_ERR_SHAPE);   /* -1 beside a 0: nothing to infer from */
  }
  dk_tensor_free(e);
  nest_free(&ns);
}

/* ---- dk_tensor_new ------------------------------------------------------------------ */

DKT_TEST(hardening_tensor_new_limits, 0) {
  struct { int nd; int64_t s[3]; dk_dtype dt; dk_status want; } cases[] = {
    {1, {INT64_MAX}, DK_F32, DK_ERR_OUT_OF_MEMORY},
    {1, {INT64_MAX - 1}, DK_F16, DK_ERR_OUT_OF_MEMORY},
    {1, {(int64_t)1 << 62}, DK_F32, DK_ERR_OUT_OF_MEMORY},             /* bytes 2^64 wrap to 0 */
    {1, {((int64_t)1 << 60) + 1}, DK_F32, DK_ERR_OUT_OF_MEMORY},       /* just past 2^62 bytes */
    {3, {(int64_t)1 << 31, (int64_t)1 << 31, 4}, DK_F32, DK_ERR_OUT_OF_MEMORY},   /* elements wrap to 0 */
    {3, {(int64_t)1 << 21, (int64_t)1 << 21, (int64_t)1 << 21}, DK_BF16, DK_ERR_OUT_OF_MEMORY},
    {2, {INT64_MAX, INT64_MAX}, DK_I32, DK_ERR_OUT_OF_MEMORY},
    {1, {INT64_MAX - INT64_MAX % 32}, DK_Q4_0, DK_ERR_OUT_OF_MEMORY},
    {2, {3, ((int64_t)1 << 62) / 18 * 32}, DK_Q4_0, DK_ERR_OUT_OF_MEMORY},
    {1, {INT64_MIN}, DK_F32, DK_ERR_SHAPE},
    {2, {4, -1}, DK_F32, DK_ERR_SHAPE},
    {2, {-((int64_t)1 << 32), -((int64_t)1 << 32)}, DK_F32, DK_ERR_SHAPE},   /* negative * negative is positive */
  };
  int64_t empty[][3] = {{(int64_t)1 << 32, (int64_t)1 << 32, 0}, {0, INT64_MAX, INT64_MAX}, {INT64_MAX, 0, INT64_MAX}};
  uint64_t before;
  int k;
  nest ns;
  int64_t s4[1] = {4};
  if (!nest_make(t, &ns, 1, s4)) { nest_free(&ns); return; }
  before = used_bytes(t);
  for (k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
    dk_tensor *x = (dk_tensor *)(uintptr_t)1;
    char want[64];
    dk_status st = dk_tensor_new(t->dev, cases[k].dt, cases[k].nd, cases[k].s, "hostile", &x);
    DKT_CHECK(t, st == cases[k].want && x == NULL, "case %d: %s (want %s): %s", k, dk_status_name(st),
              dk_status_name(cases[k].want), dk_last_error());
    DKT_MSG_HAS(t, "'hostile'");                      /* the tensor is named */
    snprintf(want, sizeof want, "[%lld", (long long)cases[k].s[0]);
    DKT_MSG_HAS(t, want);                             /* and the shape given */
  }
  DKT_CHECK(t, used_bytes(t) == before, "refusals allocated something: %llu -> %llu", (unsigned long long)before,
            (unsigned long long)used_bytes(t));
  for (k = 0; k < 3; k++) {
    dk_tensor *x = NULL, *o = NULL;
    char nothing[1];
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 3, empty[k], "empty", &x));
    DKT_CHECK(t, dk_tensor_numel(x) == 0 && dk_tensor_nbytes(x) == 0, "an empty tensor");
    DKT_OK(t, dk_tensor_upload(x, NULL, 0));
    DKT_OK(t, dk_tensor_download(x, nothing, 0));
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 3, empty[k], "o", &o));
    DKT_OK(t, dk_add(o, x, x));
    DKT_OK(t, dk_copy(o, x));
    dk_tensor_free(x);
    dk_tensor_free(o);
  }
  DKT_CHECK(t, used_bytes(t) == before, "empty tensors left bytes counted");
  nest_check(t, &ns, 1, "after hostile shapes");
  nest_free(&ns);
}

/* ---- transfers and concat ----------------------------------------------------------- */

DKT_TEST(hardening_transfer_and_concat_limits, 0) {
  int64_t s[2] = {2, 3}, e1[2] = {0, INT64_MAX}, e2[2] = {0, 5};
  size_t sizes[] = {0, 1, 23, 25, 48, (size_t)INT64_MAX, (size_t)INT64_MAX + 1, SIZE_MAX - 3, SIZE_MAX};
  unsigned char *buf = (unsigned char *)calloc(64, 1);
  dk_tensor *a = NULL, *b = NULL, *o = NULL;
  int k;
  nest ns;
  if (!nest_make(t, &ns, 2, s)) { nest_free(&ns); free(buf); return; }
  for (k = 0; k < (int)(sizeof sizes / sizeof sizes[0]); k++) {
    DKT_REFUSED(t, dk_tensor_upload(ns.t[1], buf, sizes[k]), DK_ERR_INVALID);
    DKT_MSG_HAS(t, "'victim'");
    DKT_REFUSED(t, dk_tensor_download(ns.t[1], buf, sizes[k]), DK_ERR_INVALID);
  }
  nest_check(t, &ns, 1, "after bad transfer sizes");
  /* concat of empty tensors whose concatenated dim would pass int64 */
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, e1, "a", &a));
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, e1, "b", &b));
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, e2, "o", &o));
  DKT_REFUSED(t, dk_concat(o, a, b, 1), DK_ERR_SHAPE);
  DKT_REFUSED(t, dk_concat(o, a, b, -1), DK_ERR_SHAPE);
  dk_tensor_free(a);
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, e2, "o2", &a));
  DKT_OK(t, dk_concat(a, o, o, 0));   /* 0 + 0 rows */
  dk_tensor_free(a); dk_tensor_free(b); dk_tensor_free(o);
  nest_check(t, &ns, 1, "after concat");
  {
    /* transpose: permutations out of range, at the int limits, or repeated */
    int perms[][2] = {{INT_MIN, 0}, {INT_MAX, 0}, {2, 0}, {-3, 0}, {1, 1}, {INT_MIN + 1, -1}};
    int64_t ts[2] = {3, 2};
    dk_tensor *tr = NULL;
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, ts, "tr", &tr));
    for (k = 0; k < (int)(sizeof perms / sizeof perms[0]); k++) {
      DKT_REFUSED(t, dk_transpose(tr, ns.t[1], perms[k]), DK_ERR_INVALID);
      DKT_MSG_HAS(t, "perm");
    }
    {
      int ok[2] = {-1, -2};   /* negative counts from the end: {1, 0} */
      double in[6], got[6];
      DKT_OK(t, dk_transpose(tr, ns.t[1], ok));
      if (dkt_read(t, ns.t[1], in) && dkt_read(t, tr, got))
        DKT_CHECK(t, got[0] == in[0] && got[1] == in[3] && got[2] == in[1] && got[5] == in[5], "transpose values");
    }
    dk_tensor_free(tr);
  }
  nest_check(t, &ns, 1, "after transpose");
  nest_free(&ns);
  free(buf);
}

/* ---- freed tensors ------------------------------------------------------------------ */

static int handler_calls;
static dk_status handler_last;
static void count_errors(dk_status s, const char *msg, void *user) {
  (void)msg; (void)user;
  handler_calls++;
  handler_last = s;
}

DKT_TEST(hardening_use_after_free, 0) {
  int64_t s[2] = {3, 5};
  double ov[15], now[15];
  float buf[15] = {0};
  dk_tensor *a, *b, *o, *v = NULL, *moved = NULL;
  uint64_t before = used_bytes(t), with;
  a = dkt_random(t, t->dev, DK_F32, 2, s, "a", -1, 1, NULL);
  b = dkt_random(t, t->dev, DK_F32, 2, s, "b", -1, 1, NULL);
  o = dkt_random(t, t->dev, DK_F32, 2, s, "o", -1, 1, NULL);
  if (!a || !b || !o || !dkt_read(t, o, ov)) return;
  with = used_bytes(t);
  dk_tensor_free(a);
  DKT_CHECK(t, used_bytes(t) == with - 60, "freeing 'a' gave back %llu bytes", (unsigned long long)(with - used_bytes(t)));
  DKT_REFUSED(t, dk_add(o, a, b), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "dk_add: tensor 'a' was freed");
  DKT_MSG_HAS(t, "test_hardening.c:");           /* where it was made */
  DKT_REFUSED(t, dk_add(a, o, b), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_softmax(o, a), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_tensor_upload(a, buf, sizeof buf), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "tensor 'a' was freed");
  DKT_REFUSED(t, dk_tensor_download(a, buf, sizeof buf), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_narrow(a, 0, 0, 1, &v), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_reshape(a, 1, &s[1], &v), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_to(a, t->dev, &moved), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_copy_to(o, a), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_copy_to(a, o), DK_ERR_INVALID);
  DKT_CHECK(t, v == NULL && moved == NULL, "refusals leave *out NULL");
  /* double free: the same error, reported through dk_last_status and the handler */
  handler_calls = 0;
  dk_set_error_handler(count_errors, NULL);
  dk_clear_error();
  dk_tensor_free(a);
  dk_set_error_handler(NULL, NULL);
  DKT_CHECK(t, dk_last_status() == DK_ERR_INVALID && strstr(dk_last_error(), "dk_tensor_free: tensor 'a' was freed"),
            "double free: %s %s", dk_status_name(dk_last_status()), dk_last_error());
  DKT_CHECK(t, handler_calls == 1 && handler_last == DK_ERR_INVALID, "handler saw %d errors", handler_calls);
  DKT_CHECK(t, used_bytes(t) == with - 60, "a double free changed the byte count");
  /* the output was never touched */
  if (dkt_read(t, o, now)) DKT_CHECK(t, !memcmp(ov, now, sizeof ov), "a refused op wrote its output");
  /* a view outlives its base; freeing the view then the base is fine */
  DKT_OK(t, dk_narrow(b, 0, 1, 2, &v));
  dk_tensor_free(b);
  DKT_OK(t, dk_relu(v, v));
  dk_tensor_free(v);
  DKT_REFUSED(t, dk_relu(v, v), DK_ERR_INVALID);
  dk_tensor_free(o);
  DKT_CHECK(t, used_bytes(t) == before, "bytes after every free: %llu, before %llu", (unsigned long long)used_bytes(t),
            (unsigned long long)before);
  /* many frees later, headers are reused and the kit works as before */
  {
    int i;
    for (i = 0; i < 3000; i++) {
      dk_tensor *x = NULL;
      DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, s, "churn", &x));
      dk_tensor_free(x);
    }
  }
}

/* ---- tensors that outlive dk_shutdown ------------------------------------------------ */

DKT_TEST(hardening_after_shutdown, 0) {
  int64_t s[2] = {4, 8};
  float buf[32];
  dk_tensor *a, *b, *o, *v = NULL, *moved = NULL, *n = NULL;
  a = dkt_random(t, t->dev, DK_F32, 2, s, "a", -1, 1, NULL);
  b = dkt_random(t, t->dev, DK_F32, 2, s, "b", -1, 1, NULL);
  o = dkt_random(t, t->dev, DK_F32, 2, s, "o", -1, 1, NULL);
  if (!a || !b || !o) return;
  DKT_OK(t, dk_narrow(a, 0, 1, 2, &v));
  dk_shutdown();
  /* no re-initialisation, no device memory touched: a clear refusal */
  DKT_REFUSED(t, dk_add(o, a, b), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "tensor 'o' belongs to a kit that was shut down");
  DKT_REFUSED(t, dk_softmax(v, v), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_tensor_upload(a, buf, sizeof buf), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "belongs to a kit that was shut down");
  DKT_REFUSED(t, dk_tensor_download(a, buf, sizeof buf), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_to(a, t->dev, &moved), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_copy_to(a, b), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_narrow(a, 0, 0, 1, &n), DK_ERR_INVALID);
  dk_clear_error();
  dk_tensor_free(a);
  DKT_CHECK(t, dk_last_status() == DK_ERR_INVALID && strstr(dk_last_error(), "shut down"), "free after shutdown: %s",
            dk_last_error());
  dk_tensor_free(a);
  DKT_CHECK(t, strstr(dk_last_error(), "tensor 'a' was freed") != NULL, "second free: %s", dk_last_error());
  /* a new kit starts at zero bytes and works; the old tensors never count */
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, s, "new", &n));
  DKT_CHECK(t, used_bytes(t) == 128, "bytes in use in the new kit: %llu", (unsigned long long)used_bytes(t));
  dk_tensor_free(b);
  dk_tensor_free(v);
  dk_tensor_free(o);
  DKT_CHECK(t, used_bytes(t) == 128, "freeing old tensors changed the new kit's count: %llu",
            (unsigned long long)used_bytes(t));
  DKT_OK(t, dk_relu(n, n));
  dk_tensor_free(n);
  DKT_CHECK(t, used_bytes(t) == 0, "bytes after the last free: %llu", (unsigned long long)used_bytes(t));
}

/* ---- degenerate rows: the rule in devkit.h's DEGENERATE INPUTS ---------------------- */

#define DG_N 37
static dk_tensor *logits_of(dkt *t, dk_dtype dt, const float *v, int rows) {
  int64_t s[2];
  dk_tensor *x = NULL;
  size_t nb;
  void *bytes;
  int i;
  s[0] = rows; s[1] = DG_N;
  if (dk_tensor_new(t->dev, dt, 2, s, "logits", &x) != DK_OK) return NULL;
  nb = dk_tensor_nbytes(x);
  bytes = malloc(nb);
  for (i = 0; i < rows * DG_N; i++) {
    if (dt == DK_F32) ((float *)bytes)[i] = v[i];
    else if (dt == DK_F16) ((uint16_t *)bytes)[i] = dk_f32_to_f16(v[i]);
    else ((uint16_t *)bytes)[i] = dk_f32_to_bf16(v[i]);
  }
  if (dk_tensor_upload(x, bytes, nb) != DK_OK) { dk_tensor_free(x); x = NULL; }
  free(bytes);
  return x;
}

DKT_TEST(hardening_degenerate_pick, 0) {
  enum { R = 7 };
  float v[R * DG_N];
  /* expected with temperature 0.7, top_k 1 (and argmax) */
  int want[R] = {0, 0, 0, 20, 11, 5, 0};
  int k, r, j;
  for (j = 0; j < R * DG_N; j++) v[j] = (float)dkt_uniform(t, -3, 3);
  for (j = 0; j < DG_N; j++) {
    v[0 * DG_N + j] = -INFINITY;                       /* all -inf */
    v[1 * DG_N + j] = NAN;                             /* all NaN */
    v[2 * DG_N + j] = j % 2 ? NAN : -INFINITY;         /* a mix */
    if (j % 3 == 0) v[5 * DG_N + j] = -INFINITY;       /* -inf sprinkled */
    v[6 * DG_N + j] = j == 0 ? -INFINITY : NAN;
  }
  v[3 * DG_N + 0] = NAN; v[3 * DG_N + 20] = 50;      /* NaN first, a clear max */
  v[4 * DG_N + 11] = INFINITY; v[4 * DG_N + 29] = INFINITY;   /* +inf: the first wins */
  v[5 * DG_N + 5] = 40;
  DKT_CHECK(t, isnan(dk_f16_to_f32(dk_f32_to_f16(NAN))) && isnan(dk_bf16_to_f32(dk_f32_to_bf16(NAN))), "NaN encodes");
  for (k = 0; k < 3; k++) {
    dk_dtype dt = dkt_float_types[k];
    dk_tensor *x = logits_of(t, dt, v, R), *o = NULL;
    int64_t os[1] = {R};
    int32_t got[R];
    if (!x) { dkt_fail_at(t, __FILE__, __LINE__, "logits: %s", dk_last_error()); return; }
    DKT_OK(t, dk_tensor_new(t->dev, DK_I32, 1, os, "token", &o));
    DKT_OK(t, dk_argmax(o, x));
    DKT_OK(t, dk_tensor_download(o, got, sizeof got));
    for (r = 0; r < R; r++) DKT_CHECK(t, got[r] == want[r], "%s argmax row %d: %d, want %d", dk_dtype_name(dt), r, got[r], want[r]);
    DKT_OK(t, dk_sample(o, x, 0.7f, 1, 1.0f, 1234));
    DKT_OK(t, dk_tensor_download(o, got, sizeof got));
    for (r = 0; r < R; r++) DKT_CHECK(t, got[r] == want[r], "%s sample top_k=1 row %d: %d, want %d", dk_dtype_name(dt), r, got[r], want[r]);
    /* full sampling: the degenerate rows are fixed, the others pick a finite logit */
    for (j = 0; j < 4; j++) {
      DKT_OK(t, dk_sample(o, x, 0.7f + 0.5f * (float)j, j % 2 ? 3 : 0, j >= 2 ? 0.9f : 1.0f, 99 + (uint64_t)j));
      DKT_OK(t, dk_tensor_download(o, got, sizeof got));
      for (r = 0; r < R; r++) {
        if (r == 3 || r == 5) {
          float l = got[r] >= 0 && got[r] < DG_N ? v[r * DG_N + got[r]] : NAN;
          DKT_CHECK(t, isfinite(l), "%s sample row %d picked %d (logit %g)", dk_dtype_name(dt), r, got[r], (double)l);
        } else {
          DKT_CHECK(t, got[r] == want[r], "%s sample (%d) row %d: %d, want %d", dk_dtype_name(dt), j, r, got[r], want[r]);
        }
      }
    }
    dk_tensor_free(o);
    dk_tensor_free(x);
  }
}

DKT_TEST(hardening_degenerate_softmax, 0) {
  enum { R = 5 };   /* the last row holds a NaN: compared apart */
  float v[R * DG_N];
  int k, r, j;
  for (j = 0; j < R * DG_N; j++) v[j] = (float)dkt_uniform(t, -3, 3);
  for (j = 0; j < DG_N; j++) {
    v[1 * DG_N + j] = -INFINITY;                   /* fully masked */
    if (j % 4 == 1) v[2 * DG_N + j] = -INFINITY;   /* partly masked */
    if (j % 5 == 0) v[4 * DG_N + j] = -INFINITY;
  }
  v[4 * DG_N + 7] = NAN;
  for (k = 0; k < 3; k++) {
    dk_dtype dt = dkt_float_types[k];
    dk_tensor *x = logits_of(t, dt, v, R), *o = NULL;
    double in[R * DG_N], got[R * DG_N], want[R * DG_N];
    int pass;
    if (!x || !dkt_read(t, x, in)) { dkt_fail_at(t, __FILE__, __LINE__, "logits: %s", dk_last_error()); return; }
    DKT_OK(t, dk_tensor_new(t->dev, dt, 2, dk_tensor_shape(x), "out", &o));
    for (pass = 0; pass < 2; pass++) {
      double scale = pass ? 0.5 : 1.0;
      if (pass == 0) DKT_OK(t, dk_softmax(o, x));
      else DKT_OK(t, dk_softmax_masked(o, x, 0.5f, -1));
      for (r = 0; r < R; r++) {
        double m = -INFINITY, z = 0;
        for (j = 0; j < DG_N; j++) m = in[r * DG_N + j] * scale > m ? in[r * DG_N + j] * scale : m;
        for (j = 0; j < DG_N; j++) z += m == -INFINITY ? 0 : exp(in[r * DG_N + j] * scale - m);
        for (j = 0; j < DG_N; j++) want[r * DG_N + j] = m == -INFINITY ? 0.0 : exp(in[r * DG_N + j] * scale - m) / z;
      }
      if (dkt_read(t, o, got)) dkt_close(t, pass ? "softmax_masked" : "softmax", got, want, (R - 1) * DG_N, dkt_tol(dt, DG_N), dkt_tol(dt, DG_N));
      for (j = 0; j < DG_N; j++) {
        DKT_CHECK(t, got[DG_N + j] == 0.0, "%s all -inf row: element %d is %g, want 0", dk_dtype_name(dt), j, got[DG_N + j]);
        DKT_CHECK(t, isnan(got[4 * DG_N + j]), "%s row with a NaN: element %d is %g, want NaN", dk_dtype_name(dt), j,
                  got[4 * DG_N + j]);
      }
    }
    dk_tensor_free(o);
    dk_tensor_free(x);
  }
}

DKT_TEST(hardening_zero_size_reductions, 0) {
  int64_t rows0[2] = {0, 5}, cols0[2] = {3, 0}, none[1] = {0}, three[1] = {3}, w0[1] = {0};
  dk_tensor *x = NULL, *o = NULL, *ids = NULL, *w = NULL, *y = NULL;
  /* no rows: every row-wise op succeeds and writes nothing */
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, rows0, "x", &x));
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, rows0, "y", &y));
  DKT_OK(t, dk_tensor_new(t->dev, DK_I32, 1, none, "ids", &ids));
  DKT_OK(t, dk_argmax(ids, x));
  DKT_OK(t, dk_sample(ids, x, 1.0f, 0, 1.0f, 7));
  DKT_OK(t, dk_softmax(y, x));
  DKT_OK(t, dk_silu(y, x));
  dk_tensor_free(x); dk_tensor_free(y); dk_tensor_free(ids);
  /* an empty last dim: argmax and sample have no index to give */
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, cols0, "x", &x));
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, cols0, "y", &y));
  DKT_OK(t, dk_tensor_new(t->dev, DK_I32, 1, three, "ids", &ids));
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 1, w0, "w", &w));
  {
    int32_t keep[3] = {-5, -6, -7}, got[3];
    DKT_OK(t, dk_tensor_upload(ids, keep, sizeof keep));
    DKT_REFUSED(t, dk_argmax(ids, x), DK_ERR_SHAPE);
    DKT_MSG_HAS(t, "empty");
    DKT_REFUSED(t, dk_sample(ids, x, 1.0f, 0, 1.0f, 7), DK_ERR_SHAPE);
    DKT_OK(t, dk_tensor_download(ids, got, sizeof got));
    DKT_CHECK(t, !memcmp(got, keep, sizeof keep), "a refused argmax wrote its output");
  }
  DKT_OK(t, dk_softmax(y, x));
  DKT_OK(t, dk_rmsnorm(y, x, w, 1e-5f));
  DKT_OK(t, dk_layernorm(y, x, w, NULL, 1e-5f));
  dk_tensor_free(x); dk_tensor_free(y); dk_tensor_free(ids); dk_tensor_free(w);
  (void)o;
}

/* ---- the smaller messages of issue 11, item 6 ------------------------------------- */

DKT_TEST(hardening_messages, 0) {
  int64_t neg[2] = {2, -1}, huge[2] = {(int64_t)1 << 40, (int64_t)1 << 30}, s[3] = {2, 3, 4};
  dk_tensor *x = NULL, *v = NULL, *o = NULL;
  DKT_REFUSED(t, dk_tensor_new(t->dev, DK_F32, 2, neg, "neg", &x), DK_ERR_SHAPE);
  DKT_MSG_HAS(t, "dk_tensor_new 'neg'");
  DKT_MSG_HAS(t, "[2,-1]");
  DKT_REFUSED(t, dk_tensor_new(t->dev, DK_F32, 2, huge, "huge", &x), DK_ERR_OUT_OF_MEMORY);
  DKT_MSG_HAS(t, "'huge'");
  DKT_MSG_HAS(t, "[1099511627776,1073741824]");
  DKT_MSG_HAS(t, "4 bytes per 1 elements");
  x = dkt_random(t, t->dev, DK_F32, 3, s, "x", -1, 1, NULL);
  if (!x) return;
  DKT_REFUSED(t, dk_narrow(x, -4, 0, 1, &v), DK_ERR_SHAPE);
  DKT_MSG_HAS(t, "dim -4 is outside a 3-D tensor (valid: -3..2)");
  DKT_REFUSED(t, dk_narrow(x, 3, 0, 1, &v), DK_ERR_SHAPE);
  DKT_MSG_HAS(t, "dim 3 ");
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 3, s, "o", &o));
  DKT_REFUSED(t, dk_softmax_masked(o, x, NAN, 0), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "dk_softmax_masked: scale must be finite");
  DKT_REFUSED(t, dk_softmax_masked(o, x, INFINITY, 0), DK_ERR_INVALID);
  DKT_OK(t, dk_softmax_masked(o, x, 0.125f, 0));
  /* the same for attention's scale (found by fuzz/api.c: cpu gave NaN, vulkan 0) */
  DKT_REFUSED(t, dk_attention(o, x, x, x, NAN, 0), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "dk_attention: scale must be finite");
  DKT_REFUSED(t, dk_attention(o, x, x, x, -INFINITY, -1), DK_ERR_INVALID);
  DKT_OK(t, dk_attention(o, x, x, x, 0.5f, -1));
  dk_tensor_free(x);
  dk_tensor_free(o);
}

/* ---- empty operands with huge dims reach no backend loop (found by fuzz/api.c) ----- */

DKT_TEST(hardening_empty_huge_every_op, 0) {
  int64_t s3[3] = {INT64_MAX - 1, 32, 0}, w0[1] = {0}, bm[3] = {INT64_MAX - 1, 0, 0};
  dk_dtype dts[2] = {DK_F16, DK_F32};
  int k;
  for (k = 0; k < 2; k++) {
    dk_tensor *o = NULL, *a = NULL, *b = NULL, *w = NULL, *ids = NULL, *m = NULL;
    int perm[3] = {0, 1, 2};
    DKT_OK(t, dk_tensor_new(t->dev, dts[k], 3, s3, "o", &o));
    DKT_OK(t, dk_tensor_new(t->dev, dts[k], 3, s3, "a", &a));
    DKT_OK(t, dk_tensor_new(t->dev, dts[k], 3, s3, "b", &b));
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 1, w0, "w", &w));
    {
      int64_t si[2] = {0, INT64_MAX - 1}, sx[3] = {0, INT64_MAX - 1, INT64_MAX - 1};
      dk_tensor *x = NULL;
      DKT_OK(t, dk_tensor_new(t->dev, DK_I32, 2, si, "ids", &ids));
      DKT_OK(t, dk_tensor_new(t->dev, dts[k], 3, sx, "x", &x));
      DKT_OK(t, dk_argmax(ids, x));
      DKT_OK(t, dk_sample(ids, x, 0.8f, 3, 0.9f, 5));
      dk_tensor_free(x);
    }
    DKT_OK(t, dk_tensor_new(t->dev, dts[k], 3, bm, "m", &m));
    DKT_OK(t, dk_attention(o, a, b, b, 0.5f, 7));
    DKT_OK(t, dk_add(o, a, b));
    DKT_OK(t, dk_silu(o, a));
    DKT_OK(t, dk_softmax_masked(o, a, 0.5f, 3));
    DKT_OK(t, dk_rmsnorm(o, a, w, 1e-5f));
    DKT_OK(t, dk_transpose(o, a, perm));
    DKT_OK(t, dk_copy(o, a));
    DKT_OK(t, dk_matmul(o, a, m));
    dk_tensor_free(o); dk_tensor_free(a); dk_tensor_free(b); dk_tensor_free(w);
    dk_tensor_free(ids); dk_tensor_free(m);
  }
}

/* ---- a worker thread without scratch memory ------------------------------------ */

/* A CPU product's pieces take per-thread scratch (64 MB here: 128 output
 * columns of 131072 rows); an address-space limit just above what the
 * process holds refuses it. The op must then say out-of-memory, not return
 * DK_OK over an output it never wrote, and the kit must work once memory
 * is back. Every ISA class this CPU has runs it (each has its own prompt
 * product); one whose path needs no such buffer passes through the DK_OK
 * branch, which checks the output. */
DKT_TEST(hardening_cpu_scratch_out_of_memory, 0) {
  enum { M = 131072, N = 64, K = 64 };
  static const char *isas[] = {"portable", "avx2", "avx512", "amx"};
  int64_t ws[2] = {N, K}, xs[2] = {M, K}, ys[2] = {M, N};
  double *wv = NULL;
  float *x = NULL, *y = NULL;
  dk_tensor *W = NULL, *X = NULL, *Y = NULL;
  int pass, i, c, refused = 0;
  if (t->dev.backend != DK_CPU) { dkt_skip(t, "scratch memory of worker threads is the CPU backend's"); return; }
  x = (float *)malloc((size_t)M * K * sizeof(float));
  y = (float *)malloc((size_t)M * N * sizeof(float));
  if (!x || !y) goto done;
  for (i = 0; i < M * K; i++) x[i] = (float)((i * 7 + i / K * 3) % 129 - 64) / 64.0f;
  for (c = 0; c < 4; c++) {
    /* scratch grown by earlier ops stays with its thread: start afresh
     * (which makes every tensor anew) */
    dk_tensor_free(W); dk_tensor_free(X); dk_tensor_free(Y);
    W = X = Y = NULL;
    free(wv);
    wv = NULL;
    free(dkt_reinit_env(t, "DEVKIT_TEST_UNUSED", NULL));
    if (dk_cpu_set_isa(isas[c]) != DK_OK) continue;   /* not on this CPU */
    if (!(W = dkt_random(t, t->dev, DK_Q8_0, 2, ws, "w", -1, 1, &wv))) goto done;
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, xs, "x", &X));
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, ys, "y", &Y));
    DKT_OK(t, dk_tensor_upload(X, x, (size_t)M * K * sizeof(float)));
    for (pass = 0; pass < 2; pass++) {   /* 0: squeezed, 1: memory back */
      dk_status st;
      for (i = 0; i < M * N; i++) y[i] = 1e30f;
      DKT_OK(t, dk_tensor_upload(Y, y, (size_t)M * N * sizeof(float)));
      if (pass == 0 && !dkt_squeeze(t, (size_t)40 << 20)) goto done;
      st = dk_linear(Y, X, W, NULL);
      dkt_unsqueeze();
      if (st != DK_OK) {
        DKT_CHECK(t, pass == 0 && st == DK_ERR_OUT_OF_MEMORY, "%s, pass %d: dk_linear -> %s:\n%s", isas[c], pass,
                  dk_status_name(st), dk_last_error());
        DKT_MSG_HAS(t, "linear");
        DKT_MSG_HAS(t, "memory");
        refused++;
        continue;
      }
      DKT_OK(t, dk_tensor_download(Y, y, (size_t)M * N * sizeof(float)));
      for (i = 0; i < M; i += 997) {   /* rows across every piece, against f64 on the stored weights */
        int n, k;
        for (n = 0; n < N; n++) {
          double s = 0, a = 0;
          for (k = 0; k < K; k++) {
            s += (double)x[(size_t)i * K + k] * wv[n * K + k];
            a += fabs((double)x[(size_t)i * K + k] * wv[n * K + k]);
          }
          if (fabs(y[(size_t)i * N + n] - s) > 1e-2 * a + 1e-5) {
            dkt_fail_at(t, __FILE__, __LINE__, "%s, pass %d: dk_linear returned DK_OK but y[%d][%d] = %g, want %g", isas[c],
                        pass, i, n, y[(size_t)i * N + n], s);
            goto done;
          }
        }
      }
    }
  }
  dkt_note(t, "%d of the ISA classes refused the squeezed product", refused);
done:
  dk_cpu_set_isa(NULL);
  dk_tensor_free(W); dk_tensor_free(X); dk_tensor_free(Y);
  free(wv); free(x); free(y);
}

/* ---- activations at the extremes (found by fuzz/api.c, seed 1795930256) ---------
 * silu, sigmoid, gelu (tanh form) of -inf, +inf, huge and large values,
 * against the formulas in double: x times a vanishing sigmoid is -0, and
 * -inf times it NaN, on every device and in every CPU kernel class (the
 * SIMD exponential clamps its argument at 88, which left 1/(1 + e^88) in
 * place of 0: gelu_tanh(-1e30) was -6e-9 and gelu_tanh(-inf) -inf on the CPU,
 * NaN on Vulkan and in the portable class). */
static double act_ref(int op, double x) {
  if (op == 0) return x / (1.0 + exp(-x));
  if (op == 1) return 1.0 / (1.0 + exp(-x));
  return 0.5 * x * (1.0 + tanh(0.79788456080286536 * (x + 0.044715 * x * x * x)));
}

DKT_TEST(hardening_activations_at_the_extremes, 0) {
  static const float in[16] = {-INFINITY, INFINITY, -1e30f, 1e30f, -1e5f, 1e5f, -100.0f, 100.0f,
                               -20.0f, -10.0f, -3.0f, 0.0f, -0.0f, 1.5f, 45.0f, -45.0f};
  static const char *isas[] = {NULL, "portable", "avx2", "avx512", "amx"};
  static const char *names[3] = {"silu", "sigmoid", "gelu_tanh"};
  int64_t n = 16;
  float got[16];
  dk_tensor *x = NULL, *o = NULL;
  int c, op, i;
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 1, &n, "x", &x));
  DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 1, &n, "o", &o));
  DKT_OK(t, dk_tensor_upload(x, in, sizeof in));
  for (c = 0; c < (t->dev.backend == DK_CPU ? 5 : 1); c++) {
    if (c && dk_cpu_set_isa(isas[c]) != DK_OK) continue;   /* not on this CPU */
    for (op = 0; op < 3; op++) {
      DKT_OK(t, op == 0 ? dk_silu(o, x) : op == 1 ? dk_sigmoid(o, x) : dk_gelu_tanh(o, x));
      DKT_OK(t, dk_tensor_download(o, got, sizeof got));
      for (i = 0; i < 16; i++) {
        const double want = act_ref(op, in[i]);
        const int ok = isnan(want) ? isnan(got[i]) : isinf(want) ? got[i] == want
                                                   : fabs(got[i] - want) <= 1e-4 * fabs(want) + 1e-30;
        DKT_CHECK(t, ok, "%s(%g) = %g, want %g (%s)", names[op], in[i], got[i], want, c ? isas[c] : "default class");
      }
    }
  }
  if (t->dev.backend == DK_CPU) dk_cpu_set_isa(NULL);
  dk_tensor_free(x);
  dk_tensor_free(o);
}
