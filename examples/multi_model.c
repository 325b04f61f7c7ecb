/* examples/multi_model.c — two independent models on two devices, driven from
 * two threads of one process (the Chai-Lab case, without CUDA_VISIBLE_DEVICES
 * tricks). Each model is first run alone, then both at once; the program
 * checks that every model produced the same tokens both times.
 *
 *   build/multi_model -m MODEL [-m2 MODEL2] [-z TOKENIZER] [-d DEV_A,DEV_B] [-p PROMPT] [-n N]
 *
 * Default devices: two of the best backend (split into logical devices when
 * there is only one). Greedy decoding, so "the same tokens" is exact.
 */
#define _GNU_SOURCE
#define DEVKIT_IMPLEMENTATION
#include "../devkit.h"
#define DEVKIT_MODELS_IMPLEMENTATION
#include "../models/llama.h"
#include "../models/spm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
  const char *path, *tok_path, *prompt;
  dk_device dev;
  int n;
  int32_t *out;
  int n_out;
  double seconds;
  int ok;
  char err[512];
} job;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* load, tokenize, generate: everything a thread of an application would do */
static void *run_job(void *arg) {
  job *j = (job *)arg;
  dk_llm_options o;
  dk_llm_model *m = NULL;
  dk_spm *tk = NULL;
  dk_file *tf = NULL;
  int32_t *ids = NULL;
  int np = 0, i;
  dk_tensor *lg;
  double t0;
  memset(&o, 0, sizeof o);
  o.devices = dk_device_name(j->dev);
  j->ok = 0;
  j->n_out = 0;
  if (dk_file_open_as(j->tok_path ? j->tok_path : j->path, j->tok_path ? DK_FILE_LLAMA2C_TOKENIZER : DK_FILE_AUTO, &tf) != DK_OK ||
      dk_spm_load(tf, &tk) != DK_OK) {
    snprintf(j->err, sizeof j->err, "tokenizer: %.400s", tf ? dk_last_error() : dk_last_error());
    goto done;
  }
  if (dk_llm_load(j->path, &o, &m) != DK_OK) { snprintf(j->err, sizeof j->err, "%.500s", dk_last_error()); goto done; }
  if (dk_spm_encode(tk, j->prompt, strlen(j->prompt), dk_spm_wants_bos(tk), &ids, &np) != DK_OK) {
    snprintf(j->err, sizeof j->err, "%.500s", dk_last_error());
    goto done;
  }
  if (np + j->n > m->n_ctx) j->n = m->n_ctx - np;
  t0 = now();
  if (dk_llm_forward(m, ids, np, 0, &lg) != DK_OK) { snprintf(j->err, sizeof j->err, "%.500s", dk_last_error()); goto done; }
  for (i = 0; i < j->n; i++) {
    if (dk_llm_sample(m, lg, 0, NULL, (uint64_t)i, &j->out[i]) != DK_OK ||
        (i + 1 < j->n && dk_llm_forward(m, &j->out[i], 1, 0, &lg) != DK_OK)) {
      snprintf(j->err, sizeof j->err, "%.500s", dk_last_error());
      goto done;
    }
    j->n_out++;
  }
  j->seconds = now() - t0;
  j->ok = 1;
done:
  free(ids);
  dk_llm_free(m);
  dk_spm_free(tk);
  dk_file_close(tf);
  return NULL;
}

int main(int argc, char **argv) {
  const char *paths[2] = {NULL, NULL}, *tok = NULL, *prompt = "Once upon a time", *devs = NULL;
  dk_device dv[2];
  job alone[2], both[2];
  pthread_t th[2];
  int n = 64, i, k, same = 1;
  for (i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-m")) paths[0] = argv[i + 1];
    else if (!strcmp(argv[i], "-m2")) paths[1] = argv[i + 1];
    else if (!strcmp(argv[i], "-z")) tok = argv[i + 1];
    else if (!strcmp(argv[i], "-d")) devs = argv[i + 1];
    else if (!strcmp(argv[i], "-p")) prompt = argv[i + 1];
    else if (!strcmp(argv[i], "-n")) n = atoi(argv[i + 1]);
    else break;
  }
  if (!paths[0] || i < argc || n < 1 || n > 4096) {
    fprintf(stderr, "usage: multi_model -m MODEL [-m2 MODEL2] [-z TOKENIZER] [-d DEV_A,DEV_B] [-p PROMPT] [-n N (1..4096)]\n");
    return 2;
  }
  if (!paths[1]) paths[1] = paths[0];
  setenv("DEVKIT_LOGICAL_DEVICES", "cpu=2,vulkan=2,cuda=2", 0);
  if (devs) {
    char a[64];
    const char *c = strchr(devs, ',');
    if (!c || (size_t)(c - devs) >= sizeof a) { fprintf(stderr, "multi_model: -d takes two devices, e.g. cuda:0,cuda:1\n"); return 2; }
    memcpy(a, devs, (size_t)(c - devs));
    a[c - devs] = 0;
    if (dk_device_parse(a, &dv[0]) != DK_OK || dk_device_parse(c + 1, &dv[1]) != DK_OK) {
      fprintf(stderr, "multi_model: %s\n", dk_last_error());
      return 2;
    }
  } else {
    if (dk_device_best(&dv[0]) != DK_OK) { fprintf(stderr, "multi_model: %s\n", dk_last_error()); return 2; }
    dv[1] = dv[0];
    dv[1].index = dv[0].index + 1 < dk_device_count(dv[0].backend) ? dv[0].index + 1 : dv[0].index;
  }
  for (k = 0; k < 2; k++) {
    memset(&alone[k], 0, sizeof alone[k]);
    alone[k].path = paths[k];
    alone[k].tok_path = tok;
    alone[k].prompt = prompt;
    alone[k].dev = dv[k];
    alone[k].n = n;
    alone[k].out = (int32_t *)calloc((size_t)n, sizeof(int32_t));
    both[k] = alone[k];
    both[k].out = (int32_t *)calloc((size_t)n, sizeof(int32_t));
  }
  /* each alone, one after the other */
  for (k = 0; k < 2; k++) {
    run_job(&alone[k]);
    if (!alone[k].ok) { fprintf(stderr, "multi_model: model %d on %s: %s\n", k, dk_device_name(dv[k]), alone[k].err); return 1; }
    printf("alone:    model %d on %-9s %d tokens, %.1f tok/s\n", k, dk_device_name(dv[k]), alone[k].n_out,
           alone[k].n_out / alone[k].seconds);
  }
  /* both at once, a thread each */
  for (k = 0; k < 2; k++) pthread_create(&th[k], NULL, run_job, &both[k]);
  for (k = 0; k < 2; k++) pthread_join(th[k], NULL);
  for (k = 0; k < 2; k++) {
    int eq;
    if (!both[k].ok) { fprintf(stderr, "multi_model: model %d in its thread: %s\n", k, both[k].err); return 1; }
    eq = both[k].n_out == alone[k].n_out && !memcmp(both[k].out, alone[k].out, sizeof(int32_t) * (size_t)alone[k].n_out);
    same &= eq;
    printf("together: model %d on %-9s %d tokens, %.1f tok/s, %s\n", k, dk_device_name(dv[k]), both[k].n_out,
           both[k].n_out / both[k].seconds, eq ? "same tokens as alone" : "DIFFERENT tokens from alone");
  }
  for (k = 0; k < 2; k++) { free(alone[k].out); free(both[k].out); }
  dk_shutdown();
  printf("%s\n", same ? "every model produced the same tokens alone and side by side" : "MISMATCH");
  return same ? 0 : 1;
}
