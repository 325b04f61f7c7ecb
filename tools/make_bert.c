/* tools/make_bert.c — writes a BERT model with seeded random weights, as a
 * GGUF file (llama.cpp's `bert` layout) and as a Hugging Face directory
 * (config.json, model.safetensors, vocab.txt), both with the same values
 * (tools/bert_gen.h):
 *
 *   build/make_bert -o DIR [--dim 32] [--layers 2] [--heads 4] [--ffn 64]
 *                   [--max-pos 64] [--types 2] [--eps 1e-12] [--cls] [--seed 1]
 *
 * DIR/model.gguf is the GGUF; DIR itself is the Hugging Face directory.
 * tools/ref_bert.py computes reference embeddings from DIR.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"   /* the writer has more than this tool uses */
#include "gguf_writer.h"
#include "bert_gen.h"
#pragma GCC diagnostic pop

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  bg_config c = {32, 2, 4, 64, 64, 2, 1e-12f, 1, 1};
  const char *out = NULL;
  int i;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--cls")) { c.pooling = 2; continue; }
    if (!v) { fprintf(stderr, "make_bert: %s needs a value\n", a); return 2; }
    if (!strcmp(a, "-o")) out = v;
    else if (!strcmp(a, "--dim")) c.dim = atoi(v);
    else if (!strcmp(a, "--layers")) c.layers = atoi(v);
    else if (!strcmp(a, "--heads")) c.heads = atoi(v);
    else if (!strcmp(a, "--ffn")) c.ffn = atoi(v);
    else if (!strcmp(a, "--max-pos")) c.max_pos = atoi(v);
    else if (!strcmp(a, "--types")) c.types = atoi(v);
    else if (!strcmp(a, "--eps")) c.eps = (float)atof(v);
    else if (!strcmp(a, "--seed")) c.seed = strtoull(v, NULL, 10);
    else { fprintf(stderr, "make_bert: unknown option %s\n", a); return 2; }
    i++;
  }
  if (!out || c.dim <= 0 || c.layers <= 0 || c.heads <= 0 || c.dim % c.heads || c.ffn <= 0 || c.max_pos <= 0 || c.types <= 0) {
    fprintf(stderr, "usage: make_bert -o DIR [--dim N] [--layers N] [--heads N (divides dim)] [--ffn N] [--max-pos N] "
                    "[--types N] [--eps X] [--cls] [--seed N]\n");
    return 2;
  }
  if (!bg_write_dir(&c, out)) { fprintf(stderr, "make_bert: cannot write %s\n", out); return 1; }
  printf("%s: dim %d, %d layers, %d heads, ffn %d, %d positions, vocab %d, %s pooling, seed %llu\n", out, c.dim, c.layers,
         c.heads, c.ffn, c.max_pos, BG_VOCAB, c.pooling == 2 ? "cls" : "mean", (unsigned long long)c.seed);
  return 0;
}
