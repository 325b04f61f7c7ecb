/* tools/teacher_force.c — a model against a reference with teacher forcing:
 * the ids of a text go through the model, and at every position the kit's
 * top-1 token and the log-probability it gives the true next token are
 * compared with the reference's (the tf_ lines of a file that
 * tools/ref_smollm2.py writes: tf_ids, tf_top1, tf_lp, tf_ppl).
 *
 *   build/teacher_force -m MODEL.gguf -d cpu:0 --ref tests/data/smollm2_ref.txt
 *        [--mode batch|decode|both] [--min-top1 99] [--max-ppl-diff 1]
 *
 * batch runs the text as one prompt (every position's logits from one
 * pass); decode runs it one token at a time, as generation does (on the
 * CPU that path quantizes activations to q8 for quantized weights). Exits 1
 * when a bar is missed: top-1 agreement below --min-top1 percent, or a
 * perplexity further than --max-ppl-diff percent from the reference's.
 */
#define _DEFAULT_SOURCE
#define DEVKIT_IMPLEMENTATION
#include "../devkit.h"
#define DEVKIT_MODELS_IMPLEMENTATION
#include "../models/llama.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TF_MAX 4096

static int read_ints(const char *s, int32_t *out, int max) {
  int n = 0;
  char *end;
  while (*s && n < max) {
    long v = strtol(s, &end, 10);
    if (end == s) break;
    out[n++] = (int32_t)v;
    s = end;
  }
  return n;
}

static int read_doubles(const char *s, double *out, int max) {
  int n = 0;
  char *end;
  while (*s && n < max) {
    double v = strtod(s, &end);
    if (end == s) break;
    out[n++] = v;
    s = end;
  }
  return n;
}

/* the top-1 id and log softmax(row)[want] */
static void score_row(const float *row, int vocab, int32_t want, int32_t *top, double *lp) {
  int j, best = 0;
  double mx = row[0], sum = 0;
  for (j = 1; j < vocab; j++)
    if (row[j] > row[best]) best = j;
  mx = row[best];
  for (j = 0; j < vocab; j++) sum += exp((double)row[j] - mx);
  *top = best;
  *lp = (double)row[want] - mx - log(sum);
}

static int run(dk_llm_model *m, const char *mode, const int32_t *ids, int n, const int32_t *ref_top, const double *ref_lp,
               double ref_ppl, double min_top1, double max_diff) {
  int vocab = m->c.vocab, t, agree = 0, T = n - 1, ok;
  float *buf = (float *)malloc(sizeof(float) * (size_t)vocab * (size_t)n);
  double nll = 0, worst = 0, sq = 0, ppl, diff, t0;
  dk_tensor *logits;
  if (!buf) { fprintf(stderr, "teacher_force: out of memory\n"); return 2; }
  t0 = dk_llm_now();
  dk_llm_reset(m);
  if (!strcmp(mode, "batch")) {
    if (dk_llm_forward(m, ids, n, 1, &logits) != DK_OK ||
        dk_tensor_download(logits, buf, sizeof(float) * (size_t)vocab * (size_t)n) != DK_OK) {
      fprintf(stderr, "teacher_force: %s %s\n", dk_last_error(), dk_last_error());
      free(buf);
      return 2;
    }
  } else {
    for (t = 0; t < T; t++)
      if (dk_llm_forward(m, &ids[t], 1, 0, &logits) != DK_OK ||
          dk_tensor_download(logits, buf + (size_t)t * vocab, sizeof(float) * (size_t)vocab) != DK_OK) {
        fprintf(stderr, "teacher_force: %s %s\n", dk_last_error(), dk_last_error());
        free(buf);
        return 2;
      }
  }
  for (t = 0; t < T; t++) {
    int32_t top;
    double lp;
    score_row(buf + (size_t)t * vocab, vocab, ids[t + 1], &top, &lp);
    agree += top == ref_top[t];
    if (getenv("TF_VERBOSE") && (top != ref_top[t] || fabs(lp - ref_lp[t]) > 0.01))
      fprintf(stderr, "  position %d: top-1 %d (reference %d), log p %.4f (reference %.4f)\n", t, top, ref_top[t], lp, ref_lp[t]);
    nll -= lp;
    if (fabs(lp - ref_lp[t]) > worst) worst = fabs(lp - ref_lp[t]);
    sq += (lp - ref_lp[t]) * (lp - ref_lp[t]);
  }
  ppl = exp(nll / T);
  diff = 100.0 * (ppl - ref_ppl) / ref_ppl;
  ok = 100.0 * agree / T >= min_top1 && fabs(diff) <= max_diff;
  printf("%s %-6s top-1 %d/%d (%.2f %%), perplexity %.4f vs reference %.4f (%+.3f %%), largest |log p - ref| %.4f, "
         "rms %.4f: %s (%.1f s)\n", dk_device_name(m->ws[0].dev), mode, agree, T, 100.0 * agree / T, ppl, ref_ppl, diff, worst,
         sqrt(sq / T),
         ok ? "ok" : "FAIL", dk_llm_now() - t0);
  fflush(stdout);
  free(buf);
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  const char *model = NULL, *ref = NULL, *mode = "both";
  double min_top1 = 99, max_diff = 1, ref_ppl = 0, *ref_lp = (double *)malloc(sizeof(double) * TF_MAX);
  int32_t *ids = (int32_t *)malloc(sizeof(int32_t) * TF_MAX), *ref_top = (int32_t *)malloc(sizeof(int32_t) * TF_MAX);
  int n = 0, nt = 0, nl = 0, i, rc = 0;
  dk_llm_options opt;
  dk_llm_model *m;
  FILE *f;
  static char line[1 << 20];
  memset(&opt, 0, sizeof opt);
  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) { fprintf(stderr, "teacher_force: %s needs a value\n", a); return 2; }
    if (!strcmp(a, "-m")) model = v;
    else if (!strcmp(a, "-d")) opt.devices = v;
    else if (!strcmp(a, "--ref")) ref = v;
    else if (!strcmp(a, "--mode")) mode = v;
    else if (!strcmp(a, "--min-top1")) min_top1 = atof(v);
    else if (!strcmp(a, "--max-ppl-diff")) max_diff = atof(v);
    else { fprintf(stderr, "teacher_force: unknown option %s\n", a); return 2; }
    i++;
  }
  if (!model || !ref || !ids || !ref_top || !ref_lp) {
    fprintf(stderr, "usage: teacher_force -m MODEL -d DEVICE --ref REF.txt [--mode batch|decode|both]\n");
    return 2;
  }
  if (!(f = fopen(ref, "r"))) { fprintf(stderr, "teacher_force: cannot open %s\n", ref); return 2; }
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, "tf_ids\t", 7)) n = read_ints(line + 7, ids, TF_MAX);
    else if (!strncmp(line, "tf_top1\t", 8)) nt = read_ints(line + 8, ref_top, TF_MAX);
    else if (!strncmp(line, "tf_lp\t", 6)) nl = read_doubles(line + 6, ref_lp, TF_MAX);
    else if (!strncmp(line, "tf_ppl\t", 7)) ref_ppl = atof(line + 7);
  }
  fclose(f);
  if (n < 2 || nt != n - 1 || nl != n - 1 || !(ref_ppl > 0)) {
    fprintf(stderr, "teacher_force: %s lacks the tf_ lines (%d ids, %d top-1, %d log-probabilities)\n", ref, n, nt, nl);
    return 2;
  }
  opt.n_ctx = n;
  if (dk_llm_load(model, &opt, &m) != DK_OK) { fprintf(stderr, "teacher_force: %s\n", dk_last_error()); return 2; }
  if (strcmp(mode, "decode")) rc |= run(m, "batch", ids, n, ref_top, ref_lp, ref_ppl, min_top1, max_diff);
  if (strcmp(mode, "batch")) rc |= run(m, "decode", ids, n, ref_top, ref_lp, ref_ppl, min_top1, max_diff);
  dk_llm_free(m);
  dk_shutdown();
  free(ids); free(ref_top); free(ref_lp);
  return rc;
}
