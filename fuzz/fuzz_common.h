/* fuzz/fuzz_common.h — what every model-file fuzz target does with a file
 * that opened: read every metadata value (nested arrays included), every
 * tensor's info and bytes, and load every loadable tensor onto cpu:0, so
 * that a wrong bound anywhere reads outside the input and ASan reports it. */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#define _DEFAULT_SOURCE
#define DEVKIT_IMPLEMENTATION
#include "../devkit.h"
#define DEVKIT_MODELS_IMPLEMENTATION
#include "../models/file.h"

#include <stdlib.h>

static dk_device fz_cpu;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc; (void)argv;
  /* the CPU only, one thread: the readers are what is fuzzed */
  setenv("DEVKIT_VISIBLE_DEVICES", "cpu", 1);
  setenv("DEVKIT_CPU_THREADS", "1", 1);
  dk_init();
  fz_cpu.backend = DK_CPU;
  fz_cpu.index = 0;
  return 0;
}

static void fz_value(dk_meta *m, int depth) {
  int64_t iv;
  double fv;
  const char *s;
  size_t n;
  uint64_t i;
  dk_meta_int(m, &iv);
  dk_meta_float(m, &fv);
  if (dk_meta_string(m, &s, &n) == DK_OK && n) { volatile char c = s[0]; c = s[n - 1]; (void)c; }
  if (m->type != DK_META_ARRAY) return;
  for (i = 0; i < m->count && i < 256; i++) {
    dk_meta e;
    if (dk_meta_at(m, i, &e) != DK_OK) break;
    if (depth < 10) fz_value(&e, depth + 1);
  }
  /* the last element too, and an index out of range */
  if (m->count) {
    dk_meta e;
    if (dk_meta_at(m, m->count - 1, &e) == DK_OK && depth < 10) fz_value(&e, depth + 1);
  }
  {
    dk_meta e;
    dk_meta_at(m, m->count, &e);
  }
}

static void fz_walk(dk_file *f) {
  int64_t i;
  for (i = 0; i < dk_file_meta_count(f); i++) {
    const char *key;
    dk_meta m;
    int64_t iv;
    double fv;
    const char *s;
    size_t n;
    if (dk_file_meta_at(f, i, &key, &m) != DK_OK) continue;
    fz_value(&m, 0);
    dk_file_meta_int(f, key, &iv);
    dk_file_meta_float(f, key, &fv);
    dk_file_meta_string(f, key, &s, &n);
  }
  for (i = 0; i < dk_file_tensor_count(f); i++) {
    dk_file_tensor t;
    const unsigned char *p;
    if (dk_file_tensor_at(f, i, &t) != DK_OK) continue;
    p = (const unsigned char *)dk_file_tensor_data(f, i);
    if (t.nbytes) { volatile unsigned char c = p[0]; c = p[t.nbytes - 1]; (void)c; }
    if (dk_file_tensor_find(f, t.name) < 0) abort();   /* every listed name must be found */
    if (t.supported) {
      dk_tensor *x = NULL;
      if (dk_file_load_tensor(f, t.name, fz_cpu, &x) == DK_OK) {
        if (dk_tensor_nbytes(x) != t.nbytes) abort();
        dk_tensor_free(x);
      }
    }
  }
}

/* open as fmt; on success walk and close. A status other than OK or a
 * format error (say, out of memory for a tiny input) is a finding. */
static void fz_one(const uint8_t *data, size_t size, dk_file_format fmt) {
  dk_file *f = NULL;
  dk_status s = dk_file_open_memory(data, size, "fuzz.bin", fmt, &f);
  if (s == DK_OK) {
    fz_walk(f);
    dk_file_close(f);
  } else if (s != DK_ERR_FORMAT) {
    abort();
  }
}

#endif
