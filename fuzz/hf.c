/* fuzz/hf.c — libFuzzer target for models/hf.h: a Hugging Face directory
 * whose config.json, tokenizer.json, tokenizer_config.json or
 * model.safetensors.index.json is the input (its first byte says which;
 * the others stay the valid files written at start), opened as a view, its
 * metadata and tensors walked and loaded as fuzz_common.h does, and its
 * tokenizer, when it has one, loaded and run on a short text. */
#include "fuzz_common.h"
#include "../models/hf.h"
#include "../models/bpe.h"
#include "../models/spm.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char hf_dir[64];

static void hf_put(const char *file, const void *p, size_t n) {
  char path[128];
  FILE *f;
  snprintf(path, sizeof path, "%s/%s", hf_dir, file);
  if ((f = fopen(path, "wb"))) { fwrite(p, 1, n, f); fclose(f); }
}

static const char *const hf_files[4] = {"config.json", "tokenizer.json", "tokenizer_config.json",
                                        "model.safetensors.index.json"};
static const char *const hf_valid[4] = {
  "{\"model_type\": \"llama\", \"hidden_size\": 2, \"intermediate_size\": 4, \"num_hidden_layers\": 1,"
  " \"num_attention_heads\": 1, \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8}}",
  "{\"added_tokens\": [{\"id\": 3, \"content\": \"<s>\", \"special\": true}], \"pre_tokenizer\": {\"type\": \"ByteLevel\","
  " \"use_regex\": true}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [\"a b\"]}}",
  "{\"bos_token\": \"<s>\", \"chat_template\": \"x\"}",
  NULL};

static void hf_st(void) {
  static const char hdr[] = "{\"model.norm.weight\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                            "\"model.embed_tokens.weight\":{\"dtype\":\"BF16\",\"shape\":[4,2],\"data_offsets\":[8,24]}}";
  unsigned char buf[512];
  uint64_t hl = sizeof hdr - 1;
  size_t i;
  for (i = 0; i < 8; i++) buf[i] = (unsigned char)(hl >> (8 * i));
  memcpy(buf + 8, hdr, hl);
  for (i = 0; i < 24; i++) buf[8 + hl + i] = (unsigned char)(i * 37 + 1);
  hf_put("model.safetensors", buf, 8 + hl + 24);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int which, k;
  dk_file *f;
  if (!hf_dir[0]) {
    snprintf(hf_dir, sizeof hf_dir, "/tmp/dk_fuzz_hf_%d", (int)getpid());
    mkdir(hf_dir, 0700);
    hf_st();
  }
  if (size < 1) return 0;
  which = data[0] % 4;
  for (k = 0; k < 4; k++) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", hf_dir, hf_files[k]);
    if (k == which) hf_put(hf_files[k], data + 1, size - 1);
    else if (hf_valid[k]) hf_put(hf_files[k], hf_valid[k], strlen(hf_valid[k]));
    else remove(path);
  }
  if (dk_hf_open(hf_dir, &f) != DK_OK) return 0;
  fz_walk(f);
  {
    dk_bpe *b = NULL;
    dk_spm *s = NULL;
    int32_t *ids = NULL;
    int n = 0;
    if (dk_bpe_load(f, NULL, &b) == DK_OK) {
      dk_bpe_encode(b, "ab a<s>", 7, DK_BPE_ADD_BOS | DK_BPE_SPECIAL, &ids, &n);
      free(ids);
      dk_bpe_free(b);
    } else if (dk_spm_load(f, &s) == DK_OK) {
      dk_spm_encode(s, "ab a", 4, 1, &ids, &n);
      free(ids);
      dk_spm_free(s);
    }
  }
  dk_file_close(f);
  return 0;
}
