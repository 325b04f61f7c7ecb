/* fuzz/gguf.c — libFuzzer target for the GGUF reader, and for the example
 * tokenizer built from whatever vocabulary a file that opens holds. */
#include "fuzz_common.h"
#define DEVKIT_MODELS_IMPLEMENTATION
#include "../models/spm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  dk_file *f = NULL;
  fz_one(data, size, DK_FILE_GGUF);
  if (dk_file_open_memory(data, size, "fuzz.gguf", DK_FILE_GGUF, &f) == DK_OK) {
    dk_spm *tk;
    if (dk_spm_load(f, &tk) == DK_OK) {
      static const char text[] = "Hello w\xc3\xb6rld \xe4\xb8\xad <0x41> \xff\xfe  end";
      int32_t *ids;
      int n, i;
      if (dk_spm_encode(tk, text, sizeof text - 1, 1, &ids, &n) == DK_OK) {
        for (i = 0; i < n; i++) {
          char piece[64];
          if (ids[i] < 0 || ids[i] >= dk_spm_count(tk)) abort();
          dk_spm_piece(tk, i ? ids[i - 1] : -1, ids[i], piece, sizeof piece);
        }
        free(ids);
      }
      dk_spm_free(tk);
    }
    dk_file_close(f);
  }
  return 0;
}
