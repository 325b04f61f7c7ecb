/* tools/model_info.c — print what a model file holds: its format, every
 * metadata entry (arrays shortened) and every tensor with its devkit shape.
 *
 *   build/model_info FILE [--format gguf|safetensors|llama2c|llama2c-tokenizer]
 *   build/model_info DIR     (a Hugging Face directory: the GGUF file models/hf.h makes of it)
 */
#define _DEFAULT_SOURCE
#define DEVKIT_IMPLEMENTATION
#include "../devkit.h"
#define DEVKIT_MODELS_IMPLEMENTATION
#include "../models/file.h"
#include "../models/hf.h"

#include <stdio.h>
#include <string.h>

static void print_value(dk_meta *m, int depth) {
  int64_t iv;
  double fv;
  const char *s;
  size_t n;
  if (m->type == DK_META_STRING) {
    dk_meta_string(m, &s, &n);
    printf("\"%.*s\"%s", (int)(n > 60 ? 60 : n), s, n > 60 ? "..." : "");
  } else if (m->type == DK_META_ARRAY) {
    uint64_t i, show = m->count < 8 ? m->count : 8;
    printf("%s[%llu]{", dk_meta_type_name(m->elem_type), (unsigned long long)m->count);
    for (i = 0; i < show; i++) {
      dk_meta e;
      if (dk_meta_at(m, i, &e) != DK_OK) break;
      if (i) printf(", ");
      if (depth < 3) print_value(&e, depth + 1); else printf("...");
    }
    printf("%s}", m->count > show ? ", ..." : "");
  } else if (m->type == DK_META_F32 || m->type == DK_META_F64) {
    dk_meta_float(m, &fv);
    printf("%g", fv);
  } else if (dk_meta_int(m, &iv) == DK_OK) {
    printf("%lld", (long long)iv);
  } else {
    printf("?");
  }
}

int main(int argc, char **argv) {
  dk_file *f;
  dk_file_format fmt = DK_FILE_AUTO;
  int64_t i;
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE|DIR [--format gguf|safetensors|llama2c|llama2c-tokenizer]\n", argv[0]);
    return 2;
  }
  if (argc > 3 && !strcmp(argv[2], "--format")) {
    if (!strcmp(argv[3], "gguf")) fmt = DK_FILE_GGUF;
    else if (!strcmp(argv[3], "safetensors")) fmt = DK_FILE_SAFETENSORS;
    else if (!strcmp(argv[3], "llama2c")) fmt = DK_FILE_LLAMA2C;
    else if (!strcmp(argv[3], "llama2c-tokenizer")) fmt = DK_FILE_LLAMA2C_TOKENIZER;
    else { fprintf(stderr, "error: format '%s' is not gguf, safetensors, llama2c or llama2c-tokenizer\n", argv[3]); return 2; }
  }
  /* a Hugging Face directory: the GGUF file models/hf.h sees in it */
  if ((fmt == DK_FILE_AUTO && dk_hf_is_dir(argv[1]) ? dk_hf_open(argv[1], &f) : dk_file_open_as(argv[1], fmt, &f)) != DK_OK) {
    fprintf(stderr, "error: %s\n", dk_last_error());
    return 1;
  }
  printf("%s: %s", dk_file_name(f), dk_file_format_name(dk_file_format_of(f)));
  if (dk_file_version(f)) printf(" v%d", dk_file_version(f));
  printf(", %lld metadata entries, %lld tensors\n", (long long)dk_file_meta_count(f), (long long)dk_file_tensor_count(f));
  for (i = 0; i < dk_file_meta_count(f); i++) {
    const char *key;
    dk_meta m;
    dk_file_meta_at(f, i, &key, &m);
    printf("  %-44s %-6s ", key, dk_meta_type_name(m.type));
    print_value(&m, 0);
    printf("\n");
  }
  for (i = 0; i < dk_file_tensor_count(f); i++) {
    dk_file_tensor t;
    char shape[96];
    int d, k = 0;
    dk_file_tensor_at(f, i, &t);
    k += snprintf(shape + k, sizeof shape - (size_t)k, "[");
    for (d = 0; d < t.ndim; d++) k += snprintf(shape + k, sizeof shape - (size_t)k, "%s%lld", d ? "," : "", (long long)t.shape[d]);
    snprintf(shape + k, sizeof shape - (size_t)k, "]");
    printf("  %-36s %-6s %-16s at %-10llu %llu bytes%s\n", t.name, t.type_name, shape, (unsigned long long)t.offset,
           (unsigned long long)t.nbytes, t.supported ? "" : "  (devkit does not load this type)");
  }
  dk_file_close(f);
  return 0;
}
