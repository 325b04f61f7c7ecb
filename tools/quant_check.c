/* tools/quant_check.c — load every tensor of a model file onto a device and
 * print, per tensor, two sums over the bits of its values dequantized there
 * (an embedding lookup of every row into f32, a chunk of rows at a time):
 *
 *   name dtype n s1 s2      s1 = sum of the f32 bit patterns (mod 2^64),
 *                           s2 = sum of bits * (index + 1) (mod 2^64)
 *
 * tools/quant_check.py computes the same sums from the `gguf` package's
 * dequantization of the same file and compares: any bit that differs changes
 * s1. This is the real-file check (the files are too large to commit).
 *
 *   cc -O2 -std=c11 -o build/quant_check tools/quant_check.c -ldl -lm -lpthread
 *   build/quant_check FILE.gguf [cpu|vulkan:0|...]
 */
#define _DEFAULT_SOURCE
#define DEVKIT_IMPLEMENTATION
#include "../devkit.h"
#define DEVKIT_MODELS_IMPLEMENTATION
#include "../models/file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_ROWS 512

static int check_tensor(const dk_file *f, const dk_file_tensor *ti, dk_device dev) {
  dk_tensor *t = NULL, *tab = NULL, *ids = NULL, *out = NULL;
  int64_t D = ti->shape[ti->ndim - 1], rows = 1, r0, i, idx = 0;
  uint64_t s1 = 0, s2 = 0;
  int32_t *id = NULL;
  float *buf = NULL;
  int ok = 0, d;
  for (d = 0; d < ti->ndim - 1; d++) rows *= ti->shape[d];
  if (dk_file_load_tensor(f, ti->name, dev, &t) != DK_OK) goto done;
  {
    int64_t s2d[2] = {rows, D};
    if (dk_reshape(t, 2, s2d, &tab) != DK_OK) goto done;
  }
  id = (int32_t *)malloc(CHUNK_ROWS * sizeof *id);
  buf = (float *)malloc((size_t)CHUNK_ROWS * (size_t)D * sizeof *buf);
  if (!id || !buf) goto done;
  for (r0 = 0; r0 < rows; r0 += CHUNK_ROWS) {
    int64_t n = rows - r0 < CHUNK_ROWS ? rows - r0 : CHUNK_ROWS, is[1], os[2];
    is[0] = n; os[0] = n; os[1] = D;
    for (i = 0; i < n; i++) id[i] = (int32_t)(r0 + i);
    if (dk_tensor_new(dev, DK_I32, 1, is, "ids", &ids) != DK_OK || dk_tensor_new(dev, DK_F32, 2, os, "out", &out) != DK_OK ||
        dk_tensor_upload(ids, id, (size_t)n * 4) != DK_OK || dk_embedding(out, tab, ids) != DK_OK ||
        dk_tensor_download(out, buf, (size_t)(n * D) * 4) != DK_OK)
      goto done;
    for (i = 0; i < n * D; i++, idx++) {
      uint32_t u;
      memcpy(&u, &buf[i], 4);
      s1 += u;
      s2 += (uint64_t)u * (uint64_t)(idx + 1);
    }
    dk_tensor_free(ids); dk_tensor_free(out);
    ids = out = NULL;
  }
  printf("%s %s %lld %llu %llu\n", ti->name, dk_dtype_name(ti->dtype), (long long)(rows * D), (unsigned long long)s1,
         (unsigned long long)s2);
  ok = 1;
done:
  if (!ok) fprintf(stderr, "quant_check: %s: %s\n", ti->name, dk_last_error());
  dk_tensor_free(ids); dk_tensor_free(out); dk_tensor_free(tab); dk_tensor_free(t);
  free(id); free(buf);
  return ok;
}

int main(int argc, char **argv) {
  dk_file *f = NULL;
  dk_device dev = {DK_CPU, 0};
  int64_t i, n, bad = 0;
  if (argc < 2) { fprintf(stderr, "usage: %s FILE.gguf [device]\n", argv[0]); return 2; }
  if (argc > 2 && dk_device_parse(argv[2], &dev) != DK_OK) { fprintf(stderr, "%s\n", dk_last_error()); return 2; }
  if (dk_file_open(argv[1], &f) != DK_OK) { fprintf(stderr, "%s\n", dk_last_error()); return 1; }
  n = dk_file_tensor_count(f);
  for (i = 0; i < n; i++) {
    dk_file_tensor ti;
    if (dk_file_tensor_at(f, i, &ti) != DK_OK || !check_tensor(f, &ti, dev)) bad++;
  }
  dk_file_close(f);
  return bad ? 1 : 0;
}
