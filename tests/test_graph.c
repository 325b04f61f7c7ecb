/* tests/test_graph.c — record and replay (dk_graph_*): a recorded step
 * replayed with new inputs gives, byte for byte, what the same ops issued
 * one by one give, and both match a double-precision reference; what may
 * not happen while a device records is refused. Every test runs on every
 * device present. */
#include "test.h"

static uint64_t used_bytes(dkt *t) {
  dk_device_props p;
  if (dk_device_properties(t->dev, &p) != DK_OK) return ~0ull;
  return p.memory_used;
}

/* the step: e = table[id]; h = rmsnorm(e, nw) · wᵀ + bias; y = silu(h);
 * o = 0.5 · y[:, :N/2] (through a view made, used and freed in the step) */
enum { GV = 11, GD = 96, GN = 40 };
typedef struct { dk_tensor *table, *ids, *nw, *w, *bias, *h, *y, *o; } gstep;

static dk_status step_ops(const gstep *g) {
  dk_tensor *half = NULL;
  dk_status s;
  if ((s = dk_embedding(g->h, g->table, g->ids)) != DK_OK) return s;   /* h [1, GD] holds e first */
  if ((s = dk_rmsnorm_linear(g->y, g->h, g->nw, g->w, g->bias, 1e-5f)) != DK_OK) return s;
  if ((s = dk_silu(g->y, g->y)) != DK_OK) return s;
  if ((s = dk_narrow(g->y, 1, 0, GN / 2, &half)) != DK_OK) return s;
  s = dk_scale(g->o, half, 0.5f);
  dk_tensor_free(half);
  return s;
}

static void step_ref(const double *table, const double *nw, const double *w, const double *bias, int id, double *o) {
  double ss = 0, xn[GD];
  int i, n;
  for (i = 0; i < GD; i++) ss += table[id * GD + i] * table[id * GD + i];
  for (i = 0; i < GD; i++) xn[i] = table[id * GD + i] / sqrt(ss / GD + 1e-5) * nw[i];
  for (n = 0; n < GN / 2; n++) {
    double h = bias[n];
    for (i = 0; i < GD; i++) h += xn[i] * w[n * GD + i];
    o[n] = 0.5 * h / (1 + exp(-h));
  }
}

/* one step's output bytes, run either way, over a NaN-filled output (so a
 * step that writes nothing cannot pass with the last one's figures) */
static int step_out(dkt *t, const gstep *g, dk_graph *graph, int32_t id, float *out) {
  float nan[GN / 2];
  dk_status s;
  int i;
  for (i = 0; i < GN / 2; i++) nan[i] = NAN;
  if (dk_tensor_upload(g->ids, &id, sizeof id) != DK_OK || dk_tensor_upload(g->o, nan, sizeof nan) != DK_OK) {
    dkt_fail_at(t, __FILE__, __LINE__, "%s", dk_last_error());
    return 0;
  }
  s = graph ? dk_graph_replay(graph) : step_ops(g);
  if (s == DK_OK) s = dk_tensor_download(g->o, out, sizeof(float) * (GN / 2));
  if (s != DK_OK) dkt_fail_at(t, __FILE__, __LINE__, "step with id %d: %s", (int)id, dk_last_error());
  return s == DK_OK;
}

static void replay_case(dkt *t, int want_native);

/* native: Vulkan's command buffer; CUDA's graph unless DEVKIT_CUDA_GRAPH=0 */
DKT_TEST(graph_replay, 0) {
  const char *e = getenv("DEVKIT_CUDA_GRAPH");
  replay_case(t, t->dev.backend == DK_VULKAN || (t->dev.backend == DK_CUDA && !(e && !strcmp(e, "0"))));
}

/* Vulkan without push descriptors: the core re-runs the calls */
DKT_TEST(graph_replay_rerun, 0) {
  if (t->dev.backend != DK_VULKAN) { dkt_skip(t, "vulkan only"); return; }
  dk_shutdown();
  setenv("DEVKIT_VULKAN_DISABLE", "push_descriptor", 1);
  DKT_OK(t, dk_init());
  replay_case(t, 0);
}

static void replay_case(dkt *t, int want_native) {
  int64_t st[2] = {GV, GD}, sn[1] = {GD}, sw[2] = {GN, GD}, sb[1] = {GN}, sh[2] = {1, GD}, sy[2] = {1, GN},
          so[2] = {1, GN / 2}, si[1] = {1};
  static const int32_t steps[4] = {3, 0, 10, 3};
  double *vt = NULL, *vn = NULL, *vw = NULL, *vb = NULL, want[GN / 2], got[GN / 2];
  float direct[GN / 2], replayed[GN / 2], sentinel[GN / 2];
  int32_t id0 = 5;
  gstep g;
  dk_graph *graph = NULL;
  int i, k;
  memset(&g, 0, sizeof g);
  g.table = dkt_random(t, t->dev, DK_F32, 2, st, "table", -1, 1, &vt);
  g.nw = dkt_random(t, t->dev, DK_F32, 1, sn, "norm_w", 0.5, 1.5, &vn);
  g.w = dkt_random(t, t->dev, DK_F16, 2, sw, "w", -1, 1, &vw);
  g.bias = dkt_random(t, t->dev, DK_F32, 1, sb, "bias", -1, 1, &vb);
  g.h = dkt_random(t, t->dev, DK_F32, 2, sh, "h", -9, 9, NULL);
  g.y = dkt_random(t, t->dev, DK_F32, 2, sy, "y", -9, 9, NULL);
  g.o = dkt_random(t, t->dev, DK_F32, 2, so, "o", -9, 9, NULL);
  g.ids = dkt_ids(t, t->dev, 1, si, "ids", &id0);
  if (!g.table || !g.nw || !g.w || !g.bias || !g.h || !g.y || !g.o || !g.ids) goto done;
  DKT_OK(t, dk_tensor_download(g.o, sentinel, sizeof sentinel));
  DKT_OK(t, dk_graph_begin(t->dev));
  DKT_OK(t, step_ops(&g));
  DKT_OK(t, dk_graph_end(t->dev, &graph));
  DKT_CHECK(t, dk_graph_ops(graph) == 4, "%d ops recorded, 4 issued", dk_graph_ops(graph));
  DKT_CHECK(t, dk_graph_native(graph) == want_native, "native: %d, expected %d", dk_graph_native(graph), want_native);
  /* recorded, not run: o still holds what it held */
  DKT_OK(t, dk_tensor_download(g.o, replayed, sizeof replayed));
  DKT_CHECK(t, !memcmp(replayed, sentinel, sizeof sentinel), "recording ran the ops");
  for (k = 0; k < 4; k++) {
    if (!step_out(t, &g, NULL, steps[k], direct) || !step_out(t, &g, graph, steps[k], replayed)) goto done;
    DKT_CHECK(t, !memcmp(direct, replayed, sizeof direct), "step %d (id %d): replay differs from the ops issued one by one",
              k, (int)steps[k]);
    step_ref(vt, vn, vw, vb, steps[k], want);
    for (i = 0; i < GN / 2; i++) got[i] = replayed[i];
    dkt_close(t, "replayed step", got, want, GN / 2, 2e-3, 2e-3);
  }
  /* in order with the ops around it, with no sync between: a copy of the
   * last step's o queued before a replay, another after it */
  {
    dk_tensor *before = NULL, *after = NULL;
    float b[GN / 2], a[GN / 2];
    int32_t id = 1;
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, so, "before", &before));
    DKT_OK(t, dk_tensor_new(t->dev, DK_F32, 2, so, "after", &after));
    DKT_OK(t, dk_copy(before, g.o));
    DKT_OK(t, dk_tensor_upload(g.ids, &id, sizeof id));
    DKT_OK(t, dk_graph_replay(graph));
    DKT_OK(t, dk_scale(after, g.o, 1.0f));
    DKT_OK(t, dk_tensor_download(before, b, sizeof b));
    DKT_OK(t, dk_tensor_download(after, a, sizeof a));
    DKT_CHECK(t, !memcmp(b, replayed, sizeof b), "an op queued before the replay saw its result");
    step_ref(vt, vn, vw, vb, id, want);
    for (i = 0; i < GN / 2; i++) got[i] = a[i];
    dkt_close(t, "an op queued after the replay", got, want, GN / 2, 2e-3, 2e-3);
    dk_tensor_free(before); dk_tensor_free(after);
  }
  /* the graph holds what it uses: the caller's tensors may go */
  dk_tensor_free(g.w); g.w = NULL;
  dk_tensor_free(g.table); g.table = NULL;
  dk_tensor_free(g.y); g.y = NULL;
  DKT_CHECK(t, used_bytes(t) > 0, "the graph's memory was released with the tensors");
  {
    int32_t id = 7;
    if (!step_out(t, &g, graph, id, replayed)) goto done;
    step_ref(vt, vn, vw, vb, id, want);
    for (i = 0; i < GN / 2; i++) got[i] = replayed[i];
    dkt_close(t, "replay after freeing the tensors", got, want, GN / 2, 2e-3, 2e-3);
  }
  /* a bad id found at replay: from the replay on the CPU, from the next
   * synchronizing call on a GPU, as for the op issued alone */
  {
    int32_t bad = GV + 4;
    dk_status s;
    DKT_OK(t, dk_tensor_upload(g.ids, &bad, sizeof bad));
    s = dk_graph_replay(graph);
    if (s == DK_OK) s = dk_tensor_download(g.o, replayed, sizeof replayed);
    DKT_CHECK(t, s == DK_ERR_INVALID && strstr(dk_last_error(), "outside"), "a bad id at replay: %s, %s",
              dk_status_name(s), dk_last_error());
  }
  dk_graph_free(graph); graph = NULL;
  dk_tensor_free(g.nw); dk_tensor_free(g.bias); dk_tensor_free(g.h); dk_tensor_free(g.o); dk_tensor_free(g.ids);
  memset(&g, 0, sizeof g);
  DKT_CHECK(t, used_bytes(t) == 0, "%llu bytes left after freeing the graph and every tensor",
            (unsigned long long)used_bytes(t));
done:
  dk_graph_free(graph);
  dk_tensor_free(g.table); dk_tensor_free(g.nw); dk_tensor_free(g.w); dk_tensor_free(g.bias);
  dk_tensor_free(g.h); dk_tensor_free(g.y); dk_tensor_free(g.o); dk_tensor_free(g.ids);
  free(vt); free(vn); free(vw); free(vb);
}

DKT_TEST(graph_refusals, 0) {
  int64_t s[2] = {4, 8}, s3[2] = {4, 3}, si[1] = {2};
  float buf[32];
  dk_tensor *a = dkt_random(t, t->dev, DK_F32, 2, s, "a", -1, 1, NULL);
  dk_tensor *b = dkt_random(t, t->dev, DK_F32, 2, s, "b", -1, 1, NULL);
  dk_tensor *c3 = dkt_random(t, t->dev, DK_F32, 2, s3, "c3", -1, 1, NULL);
  dk_tensor *moved = NULL, *other = NULL;
  dk_graph *g = NULL, *g2 = NULL;
  dk_device cpu = {DK_CPU, 0};
  if (!a || !b || !c3) goto done;
  DKT_REFUSED(t, dk_graph_end(t->dev, &g), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "is not recording");
  DKT_REFUSED(t, dk_graph_replay(NULL), DK_ERR_INVALID);
  dk_graph_free(NULL);
  DKT_OK(t, dk_graph_begin(t->dev));
  DKT_REFUSED(t, dk_graph_begin(t->dev), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "already recording");
  DKT_OK(t, dk_add(b, a, a));
  /* an op its checks refuse is not recorded, and the recording goes on */
  DKT_REFUSED(t, dk_add(c3, a, a), DK_ERR_SHAPE);
  /* only ops */
  DKT_REFUSED(t, dk_tensor_upload(a, buf, sizeof buf), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "is recording a graph (dk_graph_begin)");
  DKT_REFUSED(t, dk_tensor_upload_range(a, 0, buf, 16), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_tensor_download(a, buf, sizeof buf), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "dk_tensor_download");
  DKT_REFUSED(t, dk_sync(t->dev), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_to(a, cpu, &moved), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_copy_to(b, a), DK_ERR_INVALID);
  DKT_REFUSED(t, dk_slice(b, a, 0, 0, 1), DK_ERR_INVALID);
  if (t->has_dev2) {
    /* another device runs as usual */
    DKT_OK(t, dk_tensor_new(t->dev2, DK_F32, 1, si, "other", &other));
    DKT_OK(t, dk_tensor_upload(other, buf, 8));
    DKT_OK(t, dk_relu(other, other));
    DKT_OK(t, dk_tensor_download(other, buf, 8));
  }
  DKT_OK(t, dk_scale(b, b, 2.0f));
  DKT_OK(t, dk_graph_end(t->dev, &g));
  DKT_CHECK(t, dk_graph_ops(g) == 2, "%d ops recorded, 2 accepted", dk_graph_ops(g));
  /* replaying while recording another */
  DKT_OK(t, dk_graph_begin(t->dev));
  DKT_REFUSED(t, dk_graph_replay(g), DK_ERR_INVALID);
  DKT_OK(t, dk_graph_end(t->dev, &g2));
  DKT_CHECK(t, dk_graph_ops(g2) == 0, "an empty recording holds %d ops", dk_graph_ops(g2));
  DKT_OK(t, dk_graph_replay(g2));
  dk_graph_free(g2); g2 = NULL;
  DKT_OK(t, dk_graph_replay(g));
  DKT_OK(t, dk_tensor_download(b, buf, sizeof buf));
  /* a recording left open at dk_shutdown goes with the kit; a graph made
   * before it is stale */
  DKT_OK(t, dk_graph_begin(t->dev));
  DKT_OK(t, dk_relu(b, a));
  dk_shutdown();
  DKT_REFUSED(t, dk_graph_end(t->dev, &g2), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "is not recording");
  DKT_REFUSED(t, dk_graph_replay(g), DK_ERR_INVALID);
  DKT_MSG_HAS(t, "before dk_shutdown");
  dk_graph_free(g); g = NULL;
  dk_tensor_free(a); dk_tensor_free(b); dk_tensor_free(c3); dk_tensor_free(other);
  DKT_CHECK(t, used_bytes(t) == 0, "the new kit holds %llu bytes", (unsigned long long)used_bytes(t));
  return;
done:
  dk_graph_free(g); dk_graph_free(g2);
  dk_tensor_free(a); dk_tensor_free(b); dk_tensor_free(c3); dk_tensor_free(other);
}
