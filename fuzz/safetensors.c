/* fuzz/safetensors.c — libFuzzer target for the safetensors reader and its
 * strict JSON header parser. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_one(data, size, DK_FILE_SAFETENSORS);
  return 0;
}
