/* tools/make_model.c — writes a valid llama GGUF of a chosen shape with
 * seeded random weights, so speed and memory can be measured at sizes that
 * matter without downloading anything.
 *
 *   build/make_model -o m100.gguf --params 100M --type q8_0
 *   build/make_model -o tiny.gguf --dim 64 --layers 2 --heads 4 --kv-heads 2 --hidden 192 --vocab 300
 *
 * --params N picks a llama-like shape near N parameters (head size 64, dim
 * a multiple of 128 near cbrt(N/0.1875), feed-forward 8/3 of dim rounded to
 * 32, one KV head per 4 query heads, as many layers as come nearest N). Weights: f32, f16, q8_0,
 * q4_0, q4_1, q5_0, q5_1, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_nl, iq4_xs, iq3_xxs, iq3_s,
 * iq2_xxs, iq2_xs, iq2_s (quantized with devkit's dk_quantize), or the mixes Q4_K_M and Q5_K_M as llama.cpp makes
 * them: output.weight q6_K; attn_v and ffn_down q6_K in the layers where
 * llama.cpp spends more bits (the first and last eighth, and every third
 * between), the base K type elsewhere; IQ4_NL and IQ4_XS likewise
 * (gguf_writer.h's gw_pick: output q6_K, attn_v q5_K with 4 or more query
 * heads a KV head, ffn_down q5_K in the first eighth). A K-quant tensor whose rows are not a
 * multiple of 256 falls back as llama.cpp does (q4_K -> q5_0, q5_K -> q5_1,
 * q6_K -> q8_0, iq4_xs, iq3 and iq2 -> iq4_nl; q2_K and q3_K -> q4_0, as it did before
 * iq4_nl). Norms stay
 * f32, as llama.cpp's quantizer leaves them. The vocabulary is byte-level: <unk>,
 * <s>, </s>, the 256 <0xXX> byte tokens, the space "▁", then unused filler
 * tokens up to --vocab, so any text tokenizes. The weights are uniform in +-1/sqrt(K)
 * (the embedding in +-1), each tensor from its own seed, so a tensor's
 * values do not depend on the others. Data is streamed to the file: memory
 * stays small even for a 1B-parameter model.
 */
#define _DEFAULT_SOURCE
#define DEVKIT_IMPLEMENTATION
#include "../devkit.h"
#include "gguf_writer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char name[96];
  int ndim;
  int64_t shape[2];
  uint32_t type;
  uint64_t offset, nbytes;
  float scale;             /* uniform in [-scale, scale]; 0: a norm, 1 +- 5% */
} mm_tensor;

static uint64_t mm_hash(const char *s, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  while (*s) h = (h ^ (uint8_t)*s++) * 1099511628211ull;
  return h;
}

/* splitmix64 */
static uint64_t mm_next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static double num(const char *opt, const char *v) {
  char *end;
  double x, mult = 1;
  errno = 0;
  x = strtod(v, &end);
  if (*end == 'K' || *end == 'k') { mult = 1e3; end++; }
  else if (*end == 'M' || *end == 'm') { mult = 1e6; end++; }
  else if (*end == 'B' || *end == 'b' || *end == 'G' || *end == 'g') { mult = 1e9; end++; }
  if (errno || end == v || *end || !(x > 0)) {
    fprintf(stderr, "make_model: error: %s '%s' is not a positive number (K, M, B suffixes allowed)\n", opt, v);
    exit(2);
  }
  return x * mult;
}

static const char *usage =
  "usage: make_model -o OUT.gguf [--params N | --dim D --layers L --heads H [--kv-heads K] [--hidden F]]\n"
  "                  [--vocab V] [--ctx C] [--type TYPE] [--seed S]\n"
  "  TYPE: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_K q3_K q4_K q5_K q6_K iq4_nl iq4_xs iq3_xxs iq3_s iq2_xxs iq2_xs iq2_s, or the mixes Q4_K_M Q5_K_M\n"
  "        IQ4_NL IQ4_XS\n";

int main(int argc, char **argv) {
  const char *out = NULL, *tname = "f32";
  int dim = 0, layers = 0, heads = 0, kv = 0, hidden = 0, vocab = 512, ctx = 2048, i, l;
  double params = 0;
  uint64_t seed = 1;
  uint32_t wtype = GW_T_F32, file_type = 0;
  const gw_type *ty;
  mm_tensor *ts;
  int nt = 0;
  gw_buf h;
  FILE *f;
  uint64_t off = 0, total_params = 0;
  float *buf;
  void *qbuf;
  const size_t chunk = (size_t)1 << 20;   /* elements generated at a time; a multiple of 256 */
  int nth = gw_threads();
  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(usage, stdout); return 0; }
    if (!v) { fprintf(stderr, "make_model: error: %s needs a value\n%s", a, usage); return 2; }
    i++;
    if (!strcmp(a, "-o")) out = v;
    else if (!strcmp(a, "--params")) params = num(a, v);
    else if (!strcmp(a, "--dim")) dim = (int)num(a, v);
    else if (!strcmp(a, "--layers")) layers = (int)num(a, v);
    else if (!strcmp(a, "--heads")) heads = (int)num(a, v);
    else if (!strcmp(a, "--kv-heads")) kv = (int)num(a, v);
    else if (!strcmp(a, "--hidden")) hidden = (int)num(a, v);
    else if (!strcmp(a, "--vocab")) vocab = (int)num(a, v);
    else if (!strcmp(a, "--ctx")) ctx = (int)num(a, v);
    else if (!strcmp(a, "--seed")) seed = (uint64_t)num(a, v);
    else if (!strcmp(a, "--type")) tname = v;
    else { fprintf(stderr, "make_model: error: unknown option '%s'\n%s", a, usage); return 2; }
  }
  if (!out) { fprintf(stderr, "make_model: error: no output file: give -o OUT.gguf\n"); return 2; }
  for (i = 0; i < (int)(sizeof gw_types / sizeof gw_types[0]); i++)
    if (!strcmp(tname, gw_types[i].name)) break;
  if (i == (int)(sizeof gw_types / sizeof gw_types[0])) {
    fprintf(stderr, "make_model: error: --type '%s' is not one of the types below\n%s", tname, usage);
    return 2;
  }
  ty = &gw_types[i];
  wtype = ty->type;
  file_type = ty->file_type;
  if (params > 0) {
    /* a llama-like shape: head size 64, dim near cbrt(P / 0.1875) (which
     * makes layers ~ dim/64) rounded to 128 so the head count is even and
     * grouped-query attention is exercised; then the layer count that comes
     * nearest the target */
    double per, rest;
    dim = (int)(cbrt(params / 0.1875) / 128.0 + 0.5) * 128;
    if (dim < 128) dim = 128;
    heads = dim / 64;
    kv = heads % 4 == 0 ? heads / 4 : heads / 2;
    hidden = (8 * dim / 3 + 31) / 32 * 32;
    per = 2.0 * dim * dim + 2.0 * dim * (kv * 64.0) + 3.0 * dim * hidden + 2.0 * dim;
    rest = params - 2.0 * vocab * dim - dim;
    layers = rest > per ? (int)(rest / per + 0.5) : 1;
  }
  if (!hidden) hidden = (8 * dim / 3 + 31) / 32 * 32;
  if (!kv) kv = heads;
  if (dim <= 0 || layers <= 0 || heads <= 0 || dim % heads || heads % kv || (dim / heads) % 2 || vocab < 260 || ctx <= 0) {
    fprintf(stderr, "make_model: error: a shape needs dim divisible by heads into an even head size, heads divisible by "
            "kv-heads, and a vocabulary of at least 260 (dim %d, heads %d, kv %d, vocab %d)\n", dim, heads, kv, vocab);
    return 2;
  }
  if (wtype != GW_T_F32 && wtype != GW_T_F16 && wtype != GW_T_BF16 && (dim % 32 || hidden % 32)) {
    fprintf(stderr, "make_model: error: %s needs dim and hidden to be multiples of 32 (%d, %d)\n", tname, dim, hidden);
    return 2;
  }

  /* the tensors, in llama.cpp's order */
  ts = (mm_tensor *)calloc((size_t)(9 * layers + 3), sizeof *ts);
  if (!ts) { fprintf(stderr, "make_model: error: out of memory\n"); return 1; }
#define MM_T(nm, nd, d0, d1, ty, sc)                                                   \
  do {                                                                                 \
    mm_tensor *t_ = &ts[nt++];                                                         \
    snprintf(t_->name, sizeof t_->name, "%s", nm);                                     \
    t_->ndim = nd; t_->shape[0] = d0; t_->shape[1] = d1; t_->type = ty; t_->scale = sc; \
  } while (0)
  MM_T("token_embd.weight", 2, vocab, dim, wtype, 1.0f);
  MM_T("output_norm.weight", 1, dim, 1, GW_T_F32, 0.0f);
  MM_T("output.weight", 2, vocab, dim, gw_pick(ty, 'o', -1, layers, heads / kv), (float)(1.0 / sqrt((double)dim)));
  for (l = 0; l < layers; l++) {
    char nm[96];
    int hd = dim / heads;
    float sd = (float)(1.0 / sqrt((double)dim)), sh = (float)(1.0 / sqrt((double)hidden));
#define MM_L(kind, nd, d0, d1, ty, sc) snprintf(nm, sizeof nm, "blk.%d." kind ".weight", l); MM_T(nm, nd, d0, d1, ty, sc)
    MM_L("attn_norm", 1, dim, 1, GW_T_F32, 0.0f);
    MM_L("attn_q", 2, dim, dim, wtype, sd);
    MM_L("attn_k", 2, kv * hd, dim, wtype, sd);
    MM_L("attn_v", 2, kv * hd, dim, gw_pick(ty, 'v', l, layers, heads / kv), sd);
    MM_L("attn_output", 2, dim, dim, wtype, sd);
    MM_L("ffn_norm", 1, dim, 1, GW_T_F32, 0.0f);
    MM_L("ffn_gate", 2, hidden, dim, wtype, sd);
    MM_L("ffn_down", 2, dim, hidden, gw_pick(ty, 'd', l, layers, heads / kv), sh);
    MM_L("ffn_up", 2, hidden, dim, wtype, sd);
#undef MM_L
  }
  for (i = 0; i < nt; i++) {
    uint64_t n = (uint64_t)ts[i].shape[0] * (uint64_t)(ts[i].ndim > 1 ? ts[i].shape[1] : 1);
    if (ts[i].ndim > 1) ts[i].type = gw_fit(ts[i].type, ts[i].shape[1]);
    ts[i].nbytes = gw_type_bytes(ts[i].type, n);
    ts[i].offset = off;
    off += (ts[i].nbytes + 31) / 32 * 32;
    total_params += n;
  }

  memset(&h, 0, sizeof h);
  gw_header(&h, 3, (uint64_t)nt, 21);
  gw_kv_str(&h, "general.architecture", "llama");
  {
    char name[64];
    snprintf(name, sizeof name, "synthetic-%.0fM-%s", (double)total_params / 1e6, tname);
    gw_kv_str(&h, "general.name", name);
  }
  gw_kv_u32(&h, "general.file_type", file_type);
  gw_kv_u32(&h, "general.alignment", 32);
  gw_kv_u32(&h, "llama.context_length", (uint32_t)ctx);
  gw_kv_u32(&h, "llama.embedding_length", (uint32_t)dim);
  gw_kv_u32(&h, "llama.feed_forward_length", (uint32_t)hidden);
  gw_kv_u32(&h, "llama.block_count", (uint32_t)layers);
  gw_kv_u32(&h, "llama.attention.head_count", (uint32_t)heads);
  gw_kv_u32(&h, "llama.attention.head_count_kv", (uint32_t)kv);
  gw_kv_u32(&h, "llama.rope.dimension_count", (uint32_t)(dim / heads));
  gw_kv_f32(&h, "llama.rope.freq_base", 10000.0f);
  gw_kv_f32(&h, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
  gw_kv_str(&h, "tokenizer.ggml.model", "llama");
  gw_arr_head(&h, "tokenizer.ggml.tokens", GW_STRING, (uint64_t)vocab);
  for (i = 0; i < vocab; i++) {
    char tok[32];
    if (i == 0) snprintf(tok, sizeof tok, "<unk>");
    else if (i == 1) snprintf(tok, sizeof tok, "<s>");
    else if (i == 2) snprintf(tok, sizeof tok, "</s>");
    else if (i < 259) snprintf(tok, sizeof tok, "<0x%02X>", i - 3);
    else if (i == 259) snprintf(tok, sizeof tok, "\xe2\x96\x81");   /* the SentencePiece space */
    else snprintf(tok, sizeof tok, "<unused%d>", i - 260);
    gw_str(&h, tok);
  }
  gw_arr_head(&h, "tokenizer.ggml.scores", GW_F32, (uint64_t)vocab);
  for (i = 0; i < vocab; i++) gw_f32(&h, 0.0f);
  gw_arr_head(&h, "tokenizer.ggml.token_type", GW_I32, (uint64_t)vocab);
  for (i = 0; i < vocab; i++) gw_u32(&h, i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : i == 259 ? 1 : 5);
  gw_kv_u32(&h, "tokenizer.ggml.bos_token_id", 1);
  gw_kv_u32(&h, "tokenizer.ggml.eos_token_id", 2);
  gw_kv_u32(&h, "tokenizer.ggml.unknown_token_id", 0);
  gw_kv_bool(&h, "tokenizer.ggml.add_bos_token", 1);
  for (i = 0; i < nt; i++) gw_tensor_info(&h, ts[i].name, ts[i].ndim, ts[i].shape, ts[i].type, ts[i].offset);
  gw_pad(&h, 32);
  if (h.failed) { fprintf(stderr, "make_model: error: out of memory\n"); return 1; }

  f = fopen(out, "wb");
  if (!f) { fprintf(stderr, "make_model: error: %s: cannot create: %s\n", out, strerror(errno)); return 1; }
  buf = (float *)malloc(chunk * sizeof *buf);
  qbuf = malloc(chunk * sizeof(float));
  if (!buf || !qbuf || fwrite(h.p, 1, h.n, f) != h.n) { fprintf(stderr, "make_model: error: writing %s failed\n", out); return 1; }
  for (i = 0; i < nt; i++) {
    uint64_t n = (uint64_t)ts[i].shape[0] * (uint64_t)(ts[i].ndim > 1 ? ts[i].shape[1] : 1), done = 0;
    uint64_t rng = mm_hash(ts[i].name, seed);
    static const unsigned char zero[32] = {0};
    dk_dtype dt = gw_dtype(ts[i].type);
    while (done < n) {
      size_t k = n - done < chunk ? (size_t)(n - done) : chunk, j, nb;
      for (j = 0; j < k; j++) {
        double u = (double)(mm_next(&rng) >> 11) * (1.0 / 9007199254740992.0);
        buf[j] = ts[i].scale == 0.0f ? (float)(1.0 + 0.1 * (u - 0.5)) : (float)((2.0 * u - 1.0) * ts[i].scale);
      }
      nb = gw_quantize(dt, buf, (int64_t)k, qbuf, nth);
      if (nb == 0 || fwrite(qbuf, 1, nb, f) != nb) { fprintf(stderr, "make_model: error: writing %s failed\n", out); return 1; }
      done += k;
    }
    if (ts[i].nbytes % 32 && fwrite(zero, 1, 32 - ts[i].nbytes % 32, f) != 32 - ts[i].nbytes % 32) {
      fprintf(stderr, "make_model: error: writing %s failed\n", out);
      return 1;
    }
  }
  if (fclose(f) != 0) { fprintf(stderr, "make_model: error: closing %s failed\n", out); return 1; }
  printf("%s: llama, %.1fM parameters (dim %d, %d layers, %d heads, %d kv heads, hidden %d, vocab %d, ctx %d), %s, "
         "%.1f MB\n", out, (double)total_params / 1e6, dim, layers, heads, kv, hidden, vocab, ctx, tname,
         (double)(h.n + off) / 1e6);
  free(buf);
  free(qbuf);
  free(h.p);
  free(ts);
  return 0;
}
