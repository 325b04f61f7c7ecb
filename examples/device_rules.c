/* examples/device_rules.c — the five failures devkit was started for
 * (../shared/seeds: Chai-Lab, Outlines, MiniCPM-V, privateGPT, Petals), each
 * reproduced on two devices, with devkit's message, then done right with an
 * explicit dk_to.
 *
 *   build/device_rules [-d DEV0,DEV1]
 *
 * Without -d it takes two devices of the best backend present; on a machine
 * with one device (or none) it splits it into logical devices
 * (DEVKIT_LOGICAL_DEVICES), which obey every rule two real GPUs do.
 */
#define _GNU_SOURCE
#define DEVKIT_IMPLEMENTATION
#include "../devkit.h"
#define DEVKIT_MODELS_IMPLEMENTATION
#include "../models/bert.h"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"   /* the writer has more than this program uses */
#include "../tools/gguf_writer.h"
#include "../tools/bert_gen.h"   /* a small BERT with random weights, so nothing is downloaded */
#pragma GCC diagnostic pop

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures = 0;

/* print what devkit said, and count a scenario that was NOT refused */
static void expect_refusal(dk_status s) {
  if (s == DK_OK) {
    printf("  !! devkit accepted this; it should have been refused\n");
    failures++;
    return;
  }
  printf("  devkit says (%s):\n", dk_status_name(s));
  {
    const char *m = dk_last_error(), *p;
    for (p = m; *p;) {
      const char *e = strchr(p, '\n');
      int len = e ? (int)(e - p) : (int)strlen(p);
      printf("    | %.*s\n", len, p);
      p += len + (e ? 1 : 0);
    }
  }
}

static void check_ok(dk_status s, const char *what) {
  if (s != DK_OK) {
    printf("  !! %s failed: %s\n", what, dk_last_error());
    failures++;
  }
}

/* a tensor with some values; the macro passes the caller's file:line on */
#define filled(d, t, nd, shape, name, base) filled_at((d), (t), (nd), (shape), (name), (base), DK_SITE)
static dk_tensor *filled_at(dk_device d, dk_dtype t, int nd, const int64_t *shape, const char *name, float base,
                            const char *site) {
  dk_tensor *x = NULL;
  int64_t n = 1, i;
  float *v;
  int k;
  for (k = 0; k < nd; k++) n *= shape[k];
  if (dk_tensor_new_at(d, t, nd, shape, name, site, &x) != DK_OK) {
    printf("  !! cannot create %s: %s\n", name, dk_last_error());
    exit(1);
  }
  v = (float *)malloc((size_t)n * sizeof(float));
  for (i = 0; i < n; i++) v[i] = base + 0.01f * (float)(i % 97);
  if (t == DK_F32) dk_tensor_upload(x, v, (size_t)n * 4);
  free(v);
  return x;
}

int main(int argc, char **argv) {
  dk_device a, b;
  int i;
  const char *pair = NULL;
  for (i = 1; i + 1 < argc; i++)
    if (!strcmp(argv[i], "-d")) pair = argv[i + 1];
  setenv("DEVKIT_LOGICAL_DEVICES", "cpu=2,vulkan=2,cuda=2", 0);
  if (pair) {
    char first[64];
    const char *comma = strchr(pair, ',');
    if (!comma || (size_t)(comma - pair) >= sizeof first) {
      fprintf(stderr, "device_rules: -d takes two devices, e.g. -d cuda:0,cuda:1\n");
      return 2;
    }
    memcpy(first, pair, (size_t)(comma - pair));
    first[comma - pair] = 0;
    if (dk_device_parse(first, &a) != DK_OK || dk_device_parse(comma + 1, &b) != DK_OK) {
      fprintf(stderr, "device_rules: %s\n", dk_last_error());
      return 2;
    }
  } else {
    if (dk_device_best(&a) != DK_OK) { fprintf(stderr, "device_rules: %s\n", dk_last_error()); return 2; }
    b = a;
    b.index = a.index + 1;
    if (b.index >= dk_device_count(a.backend)) {
      fprintf(stderr, "device_rules: %s has no second device; pass -d DEV0,DEV1\n", dk_device_name(a));
      return 2;
    }
  }
  printf("devkit device rules, on %s and %s\n\n", dk_device_name(a), dk_device_name(b));

  /* 1. privateGPT: a BERT embedding's index_select with the ids on cuda:0 and
   *    the table on cuda:1. The real path: a BERT model (models/bert.h; a
   *    small one with random weights, written by tools/bert_gen.h) is loaded
   *    onto b, the app tokenizes on the host and puts the ids on a. */
  {
    bg_config cfg = {32, 2, 4, 64, 64, 2, 1e-12f, 1, 7};
    char dir[128], path[200];
    const char *text = "the quick brown fox";
    dk_bert_options o;
    dk_bert_model *m = NULL;
    int32_t *ids = NULL;
    int n = 0;
    int64_t os[2];
    dk_tensor *input_ids = NULL, *out = NULL, *ids_b = NULL;
    snprintf(dir, sizeof dir, "/tmp/device_rules_bert_%d", (int)getpid());
    snprintf(path, sizeof path, "%s/model.gguf", dir);
    memset(&o, 0, sizeof o);
    o.devices = dk_device_name(b);
    if (!bg_write_dir(&cfg, dir) || dk_bert_load(path, &o, &m) != DK_OK) {
      printf("  !! cannot write or load a BERT model in %s: %s\n", dir, dk_last_error());
      return 1;
    }
    check_ok(dk_wordpiece_encode(m->tok, text, strlen(text), 0, &ids, &n), "dk_wordpiece_encode");
    os[0] = n; os[1] = dk_bert_dim(m);
    dk_tensor_new(a, DK_I32, 1, os, "input_ids", &input_ids);
    dk_tensor_upload(input_ids, ids, sizeof *ids * (size_t)n);
    dk_tensor_new(b, DK_F32, 2, os, "inputs_embeds", &out);
    printf("1. a BERT embedding's index_select with the ids on another device (privateGPT)\n");
    expect_refusal(dk_index_select(out, m->tok_embd, input_ids, 0));
    printf("  fixed: move the ids to the table's device first\n");
    check_ok(dk_to(input_ids, b, &ids_b), "dk_to");
    {
      dk_status fs = dk_index_select(out, m->tok_embd, ids_b, 0);
      if (fs == DK_ERR_UNSUPPORTED) {   /* CUDA has no index_select kernel yet: the embedding op is the same lookup */
        printf("  (%s: dk_index_select is not there yet; dk_embedding does the same lookup)\n", dk_device_name(b));
        fs = dk_embedding(out, m->tok_embd, ids_b);
      }
      check_ok(fs, "dk_index_select");
    }
    {
      float e[32];
      check_ok(dk_bert_embed(m, &text, 1, e), "dk_bert_embed");
      printf("  ok: rows looked up on %s; the whole model embeds '%s' there: %.4f %.4f %.4f ...\n\n", dk_device_name(b),
             text, e[0], e[1], e[2]);
    }
    free(ids);
    dk_tensor_free(input_ids); dk_tensor_free(out); dk_tensor_free(ids_b);
    dk_bert_free(m);
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    if (system(path) != 0) printf("  (could not remove %s)\n", dir);
  }

  /* 2. Outlines: the sampler's logit bias (the "weights" of a logits
   *    processor) sits on cuda:0 while the model ran on cuda:1. */
  {
    int64_t ls[2] = {1, 512}, os = 1;
    dk_tensor *logits = filled(b, DK_F32, 2, ls, "logits", -1.0f);
    dk_tensor *bias = filled(a, DK_F32, 2, ls, "logit_bias", 0.0f), *bias_b = NULL, *token = NULL;
    dk_tensor_new(b, DK_I32, 1, &os, "next_token", &token);
    printf("2. a sampler whose weights are on another device (Outlines)\n");
    expect_refusal(dk_add(logits, logits, bias));
    printf("  fixed: bring the bias to the logits' device once, then sample there\n");
    check_ok(dk_to(bias, b, &bias_b), "dk_to");
    check_ok(dk_add(logits, logits, bias_b), "dk_add");
    check_ok(dk_sample(token, logits, 0.8f, 40, 0.95f, 1), "dk_sample");
    printf("  ok: the token stays on %s\n\n", dk_device_name(b));
    dk_tensor_free(logits); dk_tensor_free(bias); dk_tensor_free(bias_b); dk_tensor_free(token);
  }

  /* 3. Petals: torch.cat of the past keys (kept on the CPU) with the new key
   *    states (on the GPU). */
  {
    int64_t ps[3] = {7, 4, 16}, ns[3] = {1, 4, 16}, cs[3] = {8, 4, 16};
    dk_tensor *past = filled(a, DK_F32, 3, ps, "past_key_value[0]", 0.5f);
    dk_tensor *newk = filled(b, DK_F32, 3, ns, "key_states", 0.2f);
    dk_tensor *cat = filled(b, DK_F32, 3, cs, "keys", 0), *past_b = NULL;
    printf("3. a KV-cache concat across devices (Petals)\n");
    expect_refusal(dk_concat(cat, past, newk, 0));
    printf("  fixed: keep the cache on the layer's device (here: move it once)\n");
    check_ok(dk_to(past, b, &past_b), "dk_to");
    check_ok(dk_concat(cat, past_b, newk, 0), "dk_concat");
    printf("  ok: 8 positions of keys on %s\n\n", dk_device_name(b));
    dk_tensor_free(past); dk_tensor_free(newk); dk_tensor_free(cat); dk_tensor_free(past_b);
  }

  /* 4. MiniCPM-V: the model was placed on one device and the input arrived on
   *    another. */
  {
    int64_t xs[2] = {1, 64}, ws[2] = {32, 64}, os[2] = {1, 32};
    dk_tensor *w = filled(b, DK_F32, 2, ws, "vpm.encoder.layers.0.mlp.fc1.weight", 0.01f);
    dk_tensor *x = filled(a, DK_F32, 2, xs, "pixel_embeds", 0.3f);
    dk_tensor *y = filled(b, DK_F32, 2, os, "fc1_out", 0), *x_b = NULL;
    dk_tensor_set_site(w, "minicpm.gguf:vpm.encoder.layers.0.mlp.fc1.weight");
    printf("4. a model on one device fed input from another (MiniCPM-V)\n");
    expect_refusal(dk_linear(y, x, w, NULL));
    printf("  fixed: move the input to the model's device\n");
    check_ok(dk_to(x, b, &x_b), "dk_to");
    check_ok(dk_linear(y, x_b, w, NULL), "dk_linear");
    printf("  ok\n\n");
    dk_tensor_free(w); dk_tensor_free(x); dk_tensor_free(y); dk_tensor_free(x_b);
  }

  /* 5. Chai-Lab: an exported graph with its device baked in. Here, a helper
   *    that makes its scratch on a fixed device, while the caller's data is
   *    elsewhere. */
  {
    int64_t s[2] = {16, 16};
    dk_device baked = a;   /* "cuda:0", written into the code long ago */
    dk_tensor *h = filled(b, DK_F32, 2, s, "pair_repr", 0.4f);
    dk_tensor *mask = filled(baked, DK_F32, 2, s, "baked_mask", 1.0f), *mask2 = NULL;
    printf("5. a baked device (Chai-Lab)\n");
    expect_refusal(dk_mul(h, h, mask));
    printf("  fixed: make scratch where the data is: dk_tensor_device(h)\n");
    check_ok(dk_tensor_new(dk_tensor_device(h), DK_F32, 2, s, "mask", &mask2), "dk_tensor_new");
    check_ok(dk_copy_to(mask2, mask), "dk_copy_to");
    check_ok(dk_mul(h, h, mask2), "dk_mul");
    printf("  ok: computed on %s\n\n", dk_device_name(dk_tensor_device(h)));
    dk_tensor_free(h); dk_tensor_free(mask); dk_tensor_free(mask2);
  }

  check_ok(dk_sync(a), "dk_sync");
  check_ok(dk_sync(b), "dk_sync");
  dk_shutdown();
  if (failures) {
    printf("%d scenario(s) did not behave as devkit promises\n", failures);
    return 1;
  }
  printf("all five mistakes were refused before anything ran, and each fix worked\n");
  return 0;
}
