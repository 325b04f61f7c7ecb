/* tools/quantize_file.c — dk_quantize over a raw little-endian f32 file, for
 * comparing devkit's quantizers with others (tools/quant_rmse.py):
 *
 *   build/quantize_file IN.f32 TYPE OUT.bin      (TYPE: q4_0, q4_K, ...)
 */
#define _DEFAULT_SOURCE
#define DEVKIT_IMPLEMENTATION
#include "../devkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  FILE *f;
  long sz;
  float *x;
  void *q;
  int64_t n;
  size_t nb;
  int t;
  if (argc != 4) { fprintf(stderr, "usage: %s IN.f32 TYPE OUT.bin\n", argv[0]); return 2; }
  for (t = 0; t < DK_DTYPE_COUNT; t++)
    if (!strcmp(dk_dtype_name((dk_dtype)t), argv[2])) break;
  if (t == DK_DTYPE_COUNT) { fprintf(stderr, "quantize_file: unknown type '%s'\n", argv[2]); return 2; }
  if (!(f = fopen(argv[1], "rb"))) { perror(argv[1]); return 1; }
  fseek(f, 0, SEEK_END);
  sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  n = sz / 4;
  if (n % dk_dtype_block((dk_dtype)t)) { fprintf(stderr, "quantize_file: %lld values are not whole blocks\n", (long long)n); return 1; }
  x = (float *)malloc((size_t)sz);
  q = malloc((size_t)sz);
  if (!x || !q || fread(x, 4, (size_t)n, f) != (size_t)n) { fprintf(stderr, "quantize_file: cannot read %s\n", argv[1]); return 1; }
  fclose(f);
  nb = dk_quantize((dk_dtype)t, x, n, q);
  if (!(f = fopen(argv[3], "wb")) || fwrite(q, 1, nb, f) != nb || fclose(f)) { perror(argv[3]); return 1; }
  free(x);
  free(q);
  return 0;
}
