/* fuzz/seeds.c — writes the small seed files in fuzz/corpus/ (committed;
 * rerun after a format change): build/fuzz_seeds fuzz/corpus
 * gguf: a file with every metadata type and nested arrays, a v2 file, and a
 * two-layer llama with a byte vocabulary; safetensors: a few headers;
 * llama2c: a tied and an untied one-layer checkpoint and a tokenizer. */
#define _DEFAULT_SOURCE
#include "../tools/gguf_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *dir;

static void put(const char *sub, const char *name, const void *p, size_t n) {
  char path[512];
  FILE *f;
  snprintf(path, sizeof path, "%s/%s/%s", dir, sub, name);
  f = fopen(path, "wb");
  if (!f || fwrite(p, 1, n, f) != n) { fprintf(stderr, "cannot write %s\n", path); exit(1); }
  fclose(f);
}

static void every_type(uint32_t version, const char *name) {
  gw_buf b;
  int64_t s2[2] = {2, 32}, s1[1] = {3};
  int i;
  memset(&b, 0, sizeof b);
  gw_header(&b, version, 3, 10);
  gw_key(&b, "a.u8", GW_U8); gw_u8(&b, 7);
  gw_key(&b, "a.i16", GW_I16); gw_u8(&b, 1); gw_u8(&b, 0x80);
  gw_kv_u32(&b, "a.u32", 5);
  gw_kv_f32(&b, "a.f32", 0.5f);
  gw_kv_bool(&b, "a.bool", 1);
  gw_kv_str(&b, "a.str", "text");
  gw_key(&b, "a.i64", GW_I64); gw_u64(&b, 3);
  gw_arr_head(&b, "a.strs", GW_STRING, 2); gw_str(&b, "x"); gw_str(&b, "yz");
  gw_arr_head(&b, "a.nest", GW_ARRAY, 2);
  gw_u32(&b, GW_U16); gw_u64(&b, 1); gw_u8(&b, 1); gw_u8(&b, 0);
  gw_u32(&b, GW_ARRAY); gw_u64(&b, 1); gw_u32(&b, GW_F64); gw_u64(&b, 1); gw_u64(&b, 0);
  gw_kv_u32(&b, "general.alignment", 32);
  gw_tensor_info(&b, "q8", 2, s2, GW_T_Q8_0, 0);
  gw_tensor_info(&b, "f16", 1, s1, GW_T_F16, 96);
  gw_tensor_info(&b, "q4", 1, s2 + 1, GW_T_Q4_0, 128);
  gw_pad(&b, 32);
  for (i = 0; i < 146; i++) gw_u8(&b, (uint8_t)(i * 37));
  put("gguf", name, b.p, b.n);
  free(b.p);
}

static void tiny_llama(void) {
  gw_buf b;
  static const char *kinds[9] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_down", "ffn_up"};
  int64_t shapes[9][2] = {{32, 0}, {32, 32}, {16, 32}, {16, 32}, {32, 32}, {32, 0}, {64, 32}, {32, 64}, {64, 32}};
  int nd[9] = {1, 2, 2, 2, 2, 1, 2, 2, 2}, i, l, k;
  uint64_t off = 0, total;
  int64_t emb[2] = {260, 32}, nrm[1] = {32};
  memset(&b, 0, sizeof b);
  gw_header(&b, 3, 2 + 9 * 2, 12);
  gw_kv_str(&b, "general.architecture", "llama");
  gw_kv_u32(&b, "llama.context_length", 16);
  gw_kv_u32(&b, "llama.embedding_length", 32);
  gw_kv_u32(&b, "llama.feed_forward_length", 64);
  gw_kv_u32(&b, "llama.block_count", 2);
  gw_kv_u32(&b, "llama.attention.head_count", 4);
  gw_kv_u32(&b, "llama.attention.head_count_kv", 2);
  gw_kv_str(&b, "tokenizer.ggml.model", "llama");
  gw_arr_head(&b, "tokenizer.ggml.tokens", GW_STRING, 260);
  for (i = 0; i < 260; i++) {
    char t[16];
    if (i < 3) snprintf(t, sizeof t, "%s", i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
    else if (i < 259) snprintf(t, sizeof t, "<0x%02X>", i - 3);
    else snprintf(t, sizeof t, "\xe2\x96\x81");
    gw_str(&b, t);
  }
  gw_arr_head(&b, "tokenizer.ggml.scores", GW_F32, 260);
  for (i = 0; i < 260; i++) gw_f32(&b, (float)-i);
  gw_arr_head(&b, "tokenizer.ggml.token_type", GW_I32, 260);
  for (i = 0; i < 260; i++) gw_u32(&b, i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1);
  gw_kv_u32(&b, "tokenizer.ggml.bos_token_id", 1);
  gw_tensor_info(&b, "token_embd.weight", 2, emb, GW_T_Q8_0, off); off += (260 * 34 + 31) / 32 * 32;
  gw_tensor_info(&b, "output_norm.weight", 1, nrm, GW_T_F32, off); off += 128;
  for (l = 0; l < 2; l++)
    for (k = 0; k < 9; k++) {
      char nm[64];
      uint64_t n = (uint64_t)shapes[k][0] * (nd[k] > 1 ? (uint64_t)shapes[k][1] : 1);
      uint32_t ty = nd[k] == 1 ? GW_T_F32 : k == 7 ? GW_T_F16 : GW_T_Q4_0;
      snprintf(nm, sizeof nm, "blk.%d.%s.weight", l, kinds[k]);
      gw_tensor_info(&b, nm, nd[k], shapes[k], ty, off);
      off += (gw_type_bytes(ty, n) + 31) / 32 * 32;
    }
  gw_pad(&b, 32);
  total = b.n + off;
  while (b.n < total) gw_u8(&b, (uint8_t)(b.n * 131 >> 3));
  put("gguf", "tiny_llama.gguf", b.p, b.n);
  free(b.p);
}

static void st(const char *name, const char *json, size_t ndata) {
  size_t hl = strlen(json), i;
  unsigned char *p = (unsigned char *)malloc(8 + hl + ndata);
  for (i = 0; i < 8; i++) p[i] = (unsigned char)((uint64_t)hl >> (8 * i));
  memcpy(p + 8, json, hl);
  for (i = 0; i < ndata; i++) p[8 + hl + i] = (unsigned char)(i * 29 + 3);
  put("safetensors", name, p, 8 + hl + ndata);
  free(p);
}

/* a fuzz/hf.c input: which file, then its text */
static void hf(int which, const char *name, const char *text) {
  size_t n = strlen(text);
  unsigned char *p = (unsigned char *)malloc(n + 1);
  p[0] = (unsigned char)which;
  memcpy(p + 1, text, n);
  put("hf", name, p, n + 1);
  free(p);
}

/* dim 8, hidden 16, 1 layer, 2 heads, 1 kv head, vocab 8 (negative: untied), seq 4 */
static void l2c(const char *name, int untied) {
  int32_t h[7] = {8, 16, 1, 2, 1, 8, 4};
  size_t floats = 8 * 8 + 1 * (8 + 64 + 32 + 32 + 64 + 8 + 3 * 128) + 8 + 2 * 4 * 2 + (untied ? 64 : 0), i;
  gw_buf b;
  memset(&b, 0, sizeof b);
  if (untied) h[5] = -8;
  for (i = 0; i < 7; i++) gw_u32(&b, (uint32_t)h[i]);
  for (i = 0; i < floats; i++) gw_f32(&b, (float)((int)(i % 17) - 8) / 8.0f);
  put("llama2c", name, b.p, b.n);
  free(b.p);
}

static void l2c_tok(void) {
  static const char *toks[8] = {"<unk>", "\n<s>\n", "\n</s>\n", "<0x41>", " ", "a", " a", "ab"};
  gw_buf b;
  int i;
  memset(&b, 0, sizeof b);
  gw_u32(&b, 6);
  for (i = 0; i < 8; i++) {
    gw_f32(&b, (float)-i);
    gw_u32(&b, (uint32_t)strlen(toks[i]));
    gw_bytes(&b, toks[i], strlen(toks[i]));
  }
  put("llama2c", "tok8.bin", b.p, b.n);
  free(b.p);
}

int main(int argc, char **argv) {
  dir = argc > 1 ? argv[1] : "fuzz/corpus";
  every_type(3, "every_type_v3.gguf");
  every_type(2, "every_type_v2.gguf");
  tiny_llama();
  st("three.safetensors",
     "{\"__metadata__\":{\"format\":\"pt\",\"n\":\"caf\\u00e9\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
     "\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[16,24]},\"c\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[24,32]}}", 32);
  st("empty.safetensors", "{}", 0);
  st("padded.safetensors", "{\"x\":{\"dtype\":\"F16\",\"shape\":[1,3],\"data_offsets\":[0,6]}}      ", 6);
  l2c("tied.bin", 0);
  l2c("untied.bin", 1);
  l2c_tok();
  /* models/hf.h: the first byte picks the file (fuzz/hf.c) */
  hf(0, "config_qwen2.json", "{\"model_type\": \"qwen2\", \"hidden_size\": 2, \"intermediate_size\": 4, \"num_hidden_layers\": 1,"
     " \"num_attention_heads\": 1, \"num_key_value_heads\": 1, \"rope_parameters\": {\"rope_type\": \"default\","
     " \"rope_theta\": 1000000.0}, \"tie_word_embeddings\": true}");
  hf(0, "config_gemma3.json", "{\"model_type\": \"gemma3\", \"text_config\": {\"hidden_size\": 2, \"intermediate_size\": 4,"
     " \"num_hidden_layers\": 2, \"num_attention_heads\": 1, \"layer_types\": [\"sliding_attention\", \"sliding_attention\"],"
     " \"rope_parameters\": {\"full_attention\": {\"rope_theta\": 1e6}, \"sliding_attention\": {\"rope_theta\": 1e4}}}}");
  hf(1, "tokenizer_spm.json", "{\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", \"prepend\":"
     " \"\\u2581\"}, {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\\u2581\"}]}, \"model\":"
     " {\"type\": \"BPE\", \"byte_fallback\": true, \"unk_token\": \"<unk>\", \"vocab\": {\"<unk>\": 0, \"\\u2581\": 1,"
     " \"a\": 2, \"\\u2581a\": 3, \"<0x62>\": 4}, \"merges\": [[\"\\u2581\", \"a\"]]}}");
  hf(1, "tokenizer_llama3.json", "{\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\","
     " \"pattern\": {\"Regex\": \"\\\\p{N}{1,3}\"}, \"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\", \"use_regex\": false}]},"
     " \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\"}}]},"
     " \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"<s>\": 1}, \"merges\": []}}");
  hf(2, "tokenizer_config.json", "{\"bos_token\": {\"content\": \"<s>\"}, \"eos_token\": \"a\", \"add_bos_token\": true,"
     " \"chat_template\": [{\"name\": \"default\", \"template\": \"{{ x }}\"}]}");
  hf(3, "index.json", "{\"weight_map\": {\"model.norm.weight\": \"model.safetensors\","
     " \"model.embed_tokens.weight\": \"model.safetensors\"}}");
  return 0;
}
