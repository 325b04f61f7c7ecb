/* fuzz/llama2c.c — libFuzzer target for the llama2.c readers: the same bytes
 * as a checkpoint, as a tokenizer file, and through format detection. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_one(data, size, DK_FILE_LLAMA2C);
  fz_one(data, size, DK_FILE_LLAMA2C_TOKENIZER);
  fz_one(data, size, DK_FILE_AUTO);
  return 0;
}
