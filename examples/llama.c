/* examples/llama.c — text generation with a llama-family model on any devkit
 * device. The model code is models/llama.h, the tokenizers
 * models/spm.h (SentencePiece, llama2.c) and models/bpe.h (byte-level
 * BPE: SmolLM2, Llama 3, Qwen); all use devkit's public API only, so this one
 * program runs on the CPU, Vulkan and CUDA backends alike.
 *
 *   build/llama -m stories260K.gguf -p "Once upon a time" -n 64 --temp 0
 *   build/llama -m SmolLM2-135M-Instruct.Q4_1.gguf --chat -p "What is the capital of France?"
 *   build/llama -m stories260K.bin -z tok512.bin -d vulkan:0 -p "Tom and Sue"
 *   build/llama -m model.gguf -d cpu:0=0-11,vulkan:0=12-23 -p "..."   (layers split)
 *
 * -n N generates N tokens after the prompt (as llama.cpp's -n; run.c's -n
 * counts the prompt's positions too); without -n, as many as the context
 * holds. Generation that reaches the end of the context stops and says so. Generation stops early at the end-of-
 * text token (and, for llama2.c checkpoints, at BOS, as run.c does; for a
 * byte-level BPE vocabulary at every end-of-turn token it has) unless
 * --ignore-eos. --chat wraps the prompt in the model's chat format, which
 * the file's tokenizer.chat_template names (ChatML, Llama 3, Gemma), as one
 * user turn followed by the assistant's header. The prompt is processed in batches of up to -b tokens
 * (512), then one token at a time; sampling runs on the device and only the chosen id comes back.
 * Text streams to stdout as it is produced; the timings go to stderr.
 */
#define _DEFAULT_SOURCE
#define DEVKIT_IMPLEMENTATION
#include "../devkit.h"
#define DEVKIT_MODELS_IMPLEMENTATION
#include "../models/llama.h"
#include "../models/spm.h"
#include "../models/bpe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *usage =
  "usage: llama -m MODEL [-z TOKENIZER] [-d DEVICE] [-p PROMPT | --ids 1,2,3] [-n TOKENS]\n"
  "             [--temp T] [--top-k K] [--top-p P] [--seed S] [-c CONTEXT] [-b BATCH] [--print-ids]\n"
  "             [--ignore-eos] [--kv-f32] [--swa-full] [--split N,N,...] [--allow-same-gpu] [--list-devices] [-q]\n"
  "             [--chat] [--system TEXT]\n"
  "  -m MODEL       a GGUF file of the llama family: general.architecture llama (Llama 1-3, SmolLM2,\n"
  "                 TinyLlama, Mistral), qwen2, qwen3 or gemma3 (f32, f16, bf16, q8_0, q4_0..q5_1,\n"
  "                 q2_K..q6_K, iq4_nl, iq4_xs, iq3_xxs, iq3_s, iq2_xxs, iq2_xs, iq2_s, any mix);\n"
  "                 a Hugging Face directory of one (config.json, safetensors, tokenizer.json);\n"
  "                 or a llama2.c checkpoint\n"
  "  -z TOKENIZER   the llama2.c tokenizer file (tok512.bin) for a llama2.c checkpoint\n"
  "  -d DEVICE      cpu:0, vulkan:0, cuda:0, ...; 'cuda:0,cuda:1' splits the layers in proportion\n"
  "                 to the devices' free memory (--split 10,22 gives the counts);\n"
  "                 'cpu:0=0-2,vulkan:0=3-4' places layer ranges (default: DEVKIT_DEVICE or the best device)\n"
  "  -p PROMPT      the text to continue (default: empty, i.e. BOS only)\n"
  "  --chat         an instruct model: -p is the user's message, in the chat format of the file's\n"
  "                 tokenizer.chat_template; generation stops at the end of the assistant's turn\n"
  "  --system TEXT  with --chat, the system message (default: the template's own, if it has one)\n"
  "  --ids LIST     the prompt as token ids, comma-separated (no BOS is added)\n"
  "  -n TOKENS      tokens to generate after the prompt (default: as many as the context holds;\n"
  "                 generation stops at the end of the context and says so)\n"
  "  --temp T       temperature; 0 is greedy (default 0.8)\n"
  "  --top-k K      keep the K most likely tokens; 0 is off (default 40)\n"
  "  --top-p P      keep the smallest set holding P of the probability; 1 is off (default 0.95)\n"
  "  --seed S       sampling seed (default 42); step i uses S + i\n"
  "  -c CONTEXT     KV cache length (default: the file's context length, or what of it fits in the\n"
  "                 device's free memory beside the weights)\n"
  "  -b BATCH       a prompt runs in chunks of BATCH tokens, which bounds its activations' memory\n"
  "                 (default 512, as llama.cpp's -ub)\n"
  "  --print-ids    print the token ids (prompt and generated) instead of text\n"
  "  --ignore-eos   do not stop at the end-of-text token\n"
  "  --warmup       run the prompt and one token once, untimed, before the timed run (as llama-bench\n"
  "                 does: first-use costs such as cuBLAS loading its kernels stay out of the figures)\n"
  "  --kv-f32       keep the KV cache in f32 (default: f16, half the memory, as llama.cpp)\n"
  "  --swa-full     sliding-window layers (Gemma 3) keep the whole context, not just their window\n"
  "  --fast-logits  let the classifier round its input to q8 on the CPU (faster, not exact; see dk_tensor_set_precise)\n"
  "  --split LIST   layers per device for a -d list, e.g. --split 10,22\n"
  "  --allow-same-gpu  allow a split over one GPU seen through two backends (cuda:0 and vulkan:0)\n"
  "  --list-devices print the devices present and exit\n"
  "  -q             no timings on stderr\n";

/* what an early exit frees, so that a sanitizer sees no leak on error paths */
static dk_llm_model *g_model;
static dk_spm *g_tok;
static dk_bpe *g_bpe;   /* a byte-level BPE vocabulary (tokenizer.ggml.model = gpt2) instead of g_tok */
static int32_t *g_ids;

static void cleanup(void) {
  free(g_ids);
  dk_spm_free(g_tok);
  dk_bpe_free(g_bpe);
  g_bpe = NULL;
  dk_llm_free(g_model);
  g_ids = NULL; g_tok = NULL; g_model = NULL;
  dk_shutdown();
}

static void die(const char *fmt, const char *a, const char *b) {
  fprintf(stderr, "llama: error: ");
  fprintf(stderr, fmt, a, b);
  fprintf(stderr, "\n");
  cleanup();
  exit(1);
}

/* a whole-string number, or an error naming the option and what it takes */
static double num_arg(const char *opt, const char *v, double lo, double hi) {
  char *end;
  double x;
  errno = 0;
  x = strtod(v, &end);
  if (errno || end == v || *end || !(x >= lo && x <= hi)) {
    fprintf(stderr, "llama: error: %s '%s' is not a number in [%.10g, %.10g]\n", opt, v, lo, hi);
    exit(2);
  }
  return x;
}

static int parse_ids(const char *s, int32_t **out) {
  int n = 0, cap = 16;
  int32_t *ids = (int32_t *)malloc(sizeof *ids * (size_t)cap);
  const char *p = s;
  while (ids && *p) {
    char *end;
    long v;
    errno = 0;
    v = strtol(p, &end, 10);
    if (end == p || errno || v < 0 || v > 0x7fffffff || (*end && *end != ',')) {
      fprintf(stderr, "llama: error: --ids '%s' is not a comma-separated list of token ids (e.g. 1,403,407)\n", s);
      exit(2);
    }
    if (n == cap) ids = (int32_t *)realloc(ids, sizeof *ids * (size_t)(cap *= 2));
    if (ids) ids[n++] = (int32_t)v;
    p = *end ? end + 1 : end;
  }
  if (!ids) die("%s%s", "out of memory", "");
  *out = ids;
  return n;
}

/* the two tokenizers behind one face */
static int32_t tok_count(void) { return g_bpe ? dk_bpe_vocab(g_bpe)->n : dk_spm_count(g_tok); }

static void put_piece(int32_t prev, int32_t id) {
  char piece[512];
  if (g_bpe) {
    size_t n = dk_bpe_decode(g_bpe, id, 0, piece, sizeof piece);
    fwrite(piece, 1, n < sizeof piece ? n : sizeof piece - 1, stdout);
  } else {
    dk_spm_piece(g_tok, prev, id, piece, sizeof piece);
    fputs(piece, stdout);
  }
}

/* where generation ends: for BPE every end-of-turn token of the vocabulary */
static int is_stop(int32_t id, int32_t stop2) {
  if (g_bpe) return dk_vocab_is_eog(dk_bpe_vocab(g_bpe), id);
  return id == dk_spm_eos(g_tok) || id == stop2;
}

static int has_text(const char *t, size_t n, const char *s) {
  size_t k = strlen(s), i;
  for (i = 0; i + k <= n; i++)
    if (!memcmp(t + i, s, k)) return 1;
  return 0;
}

/* the text of a string literal that follows `after` in the template, up to
 * `end`, when it is plain text (no template code in it); "" otherwise */
static void template_default(const char *tmpl, size_t tlen, const char *after, const char *end, char *out, size_t cap) {
  const char *a, *e;
  size_t n;
  out[0] = 0;
  for (a = tmpl; a && a < tmpl + tlen; a++)
    if (!strncmp(a, after, strlen(after))) break;
  if (!a || a >= tmpl + tlen) return;
  a += strlen(after);
  e = strstr(a, end);
  if (!e || e > tmpl + tlen) return;
  n = (size_t)(e - a);
  if (n >= cap || memchr(a, '{', n) || memchr(a, '\'', n) || memchr(a, '+', n)) return;
  memcpy(out, a, n);
  out[n] = 0;
}

/* the prompt of one user turn in the chat format the file's template names,
 * with the assistant's header after it (add_generation_prompt) */
static char *chat_prompt(const char *model_path, const char *user, const char *sys) {
  dk_file *f;
  const char *tmpl;
  size_t tlen, cap = strlen(user) + (sys ? strlen(sys) : 0) + 4096;
  char def[1024], *out = (char *)malloc(cap);
  if (!out) die("%s%s", "out of memory", "");
  if (dk_model_open(model_path, &f) != DK_OK) die("%s%s", dk_last_error(), "");
  if (dk_file_meta_string(f, "tokenizer.chat_template", &tmpl, &tlen) != DK_OK) {
    dk_file_close(f);
    free(out);
    die("--chat: %s has no tokenizer.chat_template; it is not an instruct model, or give the formatted prompt with -p%s",
        model_path, "");
  }
  if (has_text(tmpl, tlen, "<|im_start|>")) {             /* ChatML: SmolLM2, Qwen */
    if (!sys) { template_default(tmpl, tlen, "<|im_start|>system\n", "<|im_end|>", def, sizeof def); if (def[0]) sys = def; }
    snprintf(out, cap, "%s%s%s<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n", sys ? "<|im_start|>system\n" : "",
             sys ? sys : "", sys ? "<|im_end|>\n" : "", user);
  } else if (has_text(tmpl, tlen, "<|start_header_id|>")) {   /* Llama 3 */
    snprintf(out, cap, "%s%s%s<|start_header_id|>user<|end_header_id|>\n\n%s<|eot_id|>"
             "<|start_header_id|>assistant<|end_header_id|>\n\n", sys ? "<|start_header_id|>system<|end_header_id|>\n\n" : "",
             sys ? sys : "", sys ? "<|eot_id|>" : "", user);
  } else if (has_text(tmpl, tlen, "<start_of_turn>")) {       /* Gemma: the system text opens the user's turn */
    snprintf(out, cap, "<start_of_turn>user\n%s%s%s<end_of_turn>\n<start_of_turn>model\n", sys ? sys : "", sys ? "\n\n" : "",
             user);
  } else {
    dk_file_close(f);
    free(out);
    die("--chat: the chat template of %s is none this runner knows (ChatML, Llama 3, Gemma); give the formatted "
        "prompt with -p%s", model_path, "");
  }
  dk_file_close(f);
  return out;
}

static void list_devices(void) {
  dk_device d[64];
  int n = dk_device_list(d, 64), i, b;
  for (i = 0; i < n && i < 64; i++) {
    dk_device_props p;
    if (dk_device_properties(d[i], &p) == DK_OK)
      printf("%-10s %s%s\n", dk_device_name(d[i]), p.name, p.is_software ? " (software)" : "");
  }
  for (b = 0; b < DK_BACKEND_COUNT; b++)
    if (dk_device_count((dk_backend)b) == 0)
      printf("%-10s none: %s\n", dk_backend_name((dk_backend)b), dk_backend_note((dk_backend)b));
}

int main(int argc, char **argv) {
  const char *model_path = NULL, *tok_path = NULL, *prompt = "", *ids_arg = NULL, *system = NULL;
  int n_gen = -1, print_ids = 0, ignore_eos = 0, quiet = 0, i, n_prompt = 0, chat = 0, warmup = 0;
  char *chat_text = NULL;
  dk_llm_options opt;
  int split[DK_LLM_MAX_DEVICES];
  dk_llm_sampler sp;
  dk_llm_model *m = NULL;
  dk_spm *tok = NULL;
  int32_t *ids = NULL, prev, token, stop2 = -1;
  dk_tensor *logits;
  double t0, t1, t2;
  int generated = 0, ctx_limited = 0;
  memset(&opt, 0, sizeof opt);
  sp.temperature = 0.8f; sp.top_k = 40; sp.top_p = 0.95f; sp.seed = 42;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has = i + 1 < argc;
#define VAL() (has ? argv[++i] : (fprintf(stderr, "llama: error: %s needs a value\n%s", a, usage), exit(2), ""))
    if (!strcmp(a, "-m")) model_path = VAL();
    else if (!strcmp(a, "-z")) tok_path = VAL();
    else if (!strcmp(a, "-d")) opt.devices = VAL();
    else if (!strcmp(a, "-p")) prompt = VAL();
    else if (!strcmp(a, "--ids")) ids_arg = VAL();
    else if (!strcmp(a, "-n")) n_gen = (int)num_arg(a, VAL(), 0, 1 << 24);
    else if (!strcmp(a, "--temp")) sp.temperature = (float)num_arg(a, VAL(), 0, 1e6);
    else if (!strcmp(a, "--top-k")) sp.top_k = (int)num_arg(a, VAL(), 0, 1 << 30);
    else if (!strcmp(a, "--top-p")) sp.top_p = (float)num_arg(a, VAL(), 1e-6, 1);
    else if (!strcmp(a, "--seed")) sp.seed = (uint64_t)num_arg(a, VAL(), 0, 1.8e19);
    else if (!strcmp(a, "-c")) opt.n_ctx = (int)num_arg(a, VAL(), 1, 1 << 24);
    else if (!strcmp(a, "-b")) opt.n_batch = (int)num_arg(a, VAL(), 1, 1 << 24);
    else if (!strcmp(a, "--print-ids")) print_ids = 1;
    else if (!strcmp(a, "--ignore-eos")) ignore_eos = 1;
    else if (!strcmp(a, "--warmup")) warmup = 1;
    else if (!strcmp(a, "--chat")) chat = 1;
    else if (!strcmp(a, "--system")) system = VAL();
    else if (!strcmp(a, "--kv-f32")) opt.kv_f32 = 1;
    else if (!strcmp(a, "--kv-f16")) opt.kv_f32 = 0;   /* the default; kept for older scripts */
    else if (!strcmp(a, "--fast-logits")) opt.fast_logits = 1;
    else if (!strcmp(a, "--swa-full")) opt.swa_full = 1;
    else if (!strcmp(a, "--allow-same-gpu")) opt.allow_same_gpu = 1;
    else if (!strcmp(a, "--split")) {
      const char *v = VAL();
      char *end;
      opt.n_split = 0;
      while (*v) {
        long k = strtol(v, &end, 10);
        if (end == v || k < 1 || k > 1 << 20 || opt.n_split == DK_LLM_MAX_DEVICES || (*end && *end != ',')) {
          fprintf(stderr, "llama: error: --split '%s' is not a list of layer counts like 10,22\n", argv[i]);
          return 2;
        }
        split[opt.n_split++] = (int)k;
        v = *end ? end + 1 : end;
      }
      opt.split = split;
    }
    else if (!strcmp(a, "-q")) quiet = 1;
    else if (!strcmp(a, "--list-devices")) { list_devices(); return 0; }
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fputs(usage, stdout); return 0; }
    else { fprintf(stderr, "llama: error: unknown option '%s'\n%s", a, usage); return 2; }
#undef VAL
  }
  if (!model_path) { fprintf(stderr, "llama: error: no model: give -m MODEL (a GGUF file: llama, qwen2, qwen3, gemma3; a Hugging Face directory of one; or a llama2.c checkpoint)\n"); return 2; }
  if (ids_arg) { n_prompt = parse_ids(ids_arg, &ids); g_ids = ids; }
  if (chat && (ids_arg || tok_path)) die("--chat takes the message as -p TEXT, with the model file's own vocabulary%s%s", "", "");
  if (system && !chat) die("--system goes with --chat%s%s", "", "");

  /* the tokenizer: -z, or the model file's own vocabulary */
  if (!ids_arg || tok_path) {
    dk_file *tf;
    const char *tp = tok_path ? tok_path : model_path;
    if ((tok_path ? dk_file_open_as(tp, DK_FILE_LLAMA2C_TOKENIZER, &tf) : dk_model_open(tp, &tf)) != DK_OK)
      die("%s%s", dk_last_error(), "");
    if (!tok_path && dk_file_format_of(tf) == DK_FILE_LLAMA2C) {
      dk_file_close(tf);
      die("%s is a llama2.c checkpoint, which holds no vocabulary: pass its tokenizer with -z (e.g. -z tok512.bin), or "
          "the prompt as --ids%s", model_path, "");
    }
    {
      const char *model;
      size_t mlen;
      /* byte-level BPE (SmolLM2, Llama 3, Qwen) from the model layer; SentencePiece here */
      const char *why;
      /* a directory whose tokenizer.json is of a kind hf.h does not read */
      if (!tok_path && dk_file_meta_string(tf, "tokenizer.devkit.unsupported", &why, &mlen) == DK_OK) {
        char msg[400];
        snprintf(msg, sizeof msg, "%.*s", (int)(mlen < 300 ? mlen : 300), why);
        dk_file_close(tf);
        die("%s: give the prompt as token ids (--ids 2,651,...) or use the model's GGUF file%s", msg, "");
      }
      if (!tok_path && dk_file_has_gguf_keys(tf) &&
          dk_file_meta_string(tf, "tokenizer.ggml.model", &model, &mlen) == DK_OK && mlen == 4 && !memcmp(model, "gpt2", 4)) {
        if (dk_bpe_load(tf, NULL, &g_bpe) != DK_OK) { dk_file_close(tf); die("%s%s", dk_last_error(), ""); }
      } else if (dk_spm_load(tf, &tok) != DK_OK) {
        dk_file_close(tf);
        die("%s%s", dk_last_error(), "");
      }
    }
    dk_file_close(tf);
    g_tok = tok;
    if (chat && !g_bpe && !tok) die("--chat needs the model's own vocabulary%s%s", "", "");
    if (!tok_path) stop2 = -1;
    else if (tok) stop2 = dk_spm_bos(tok);   /* run.c ends a llama2.c story at BOS */
  }

  if (dk_llm_load(model_path, &opt, &m) != DK_OK) die("%s%s", dk_last_error(), "");
  g_model = m;
  if (m->ctx_cut)   /* said even with -q: the context is not what the file gives */
    fprintf(stderr, "llama: the KV cache of the file's context (%d positions) does not fit beside the weights in the %.2f "
            "GiB free on %s; the context is %d (-c sets it)\n", m->c.ctx_train, (double)m->ctx_cut_free / 1073741824.0,
            dk_device_name(m->ctx_cut_dev), m->n_ctx);
  /* before anything runs: is every weight and cache where its layer is? */
  if (dk_llm_check_placement(m) != DK_OK) die("%s%s", dk_last_error(), "");
  if ((tok || g_bpe) && tok_count() != m->c.vocab) {
    char msg[64];
    snprintf(msg, sizeof msg, "%d", m->c.vocab);
    die("the tokenizer has a different vocabulary size than the model (%s tokens): is -z the model's tokenizer? (%s)", msg,
        tok_path ? tok_path : model_path);
  }
  if (chat) prompt = chat_text = chat_prompt(model_path, prompt, system);
  if (!ids_arg && g_bpe) {
    /* special tokens' text is parsed, as tokenizers does: a chat prompt needs it */
    dk_status st = dk_bpe_encode(g_bpe, prompt, strlen(prompt), DK_BPE_ADD_BOS | DK_BPE_SPECIAL, &ids, &n_prompt);
    free(chat_text);
    if (st != DK_OK) die("%s%s", dk_last_error(), "");
  } else if (!ids_arg) {
    /* control tokens' text is cut out as their ids (spm.h), as a chat prompt needs */
    dk_status st = dk_spm_encode(tok, prompt, strlen(prompt), dk_spm_wants_bos(tok), &ids, &n_prompt);
    if (st == DK_OK && chat) {
      /* SentencePiece vocabularies (Gemma) name no end-of-turn id: the turn's end marker is one control token */
      int32_t *end = NULL;
      int n_end = 0;
      if (dk_spm_encode(tok, "<end_of_turn>", 13, 0, &end, &n_end) == DK_OK && n_end == 1) stop2 = end[0];
      free(end);
    }
    free(chat_text);
    if (st != DK_OK) die("%s%s", dk_last_error(), "");
  }
  g_ids = ids;
  if (!tok && !g_bpe) print_ids = 1;   /* --ids without a tokenizer: ids are all there is to print */
  if (n_prompt == 0) die("the prompt is empty and the tokenizer adds no BOS: give -p TEXT or --ids%s%s", "", "");
  for (i = 0; i < n_prompt; i++)
    if (ids[i] >= m->c.vocab) {
      fprintf(stderr, "llama: error: --ids: token id %d is outside the vocabulary (0..%d)\n", ids[i], m->c.vocab - 1);
      cleanup();
      return 1;
    }
  if (n_prompt >= m->n_ctx) {
    fprintf(stderr, "llama: error: the prompt (%d tokens) leaves no room to generate; the context holds %d "
            "(raise it with -c, or shorten the prompt)\n", n_prompt, m->n_ctx);
    cleanup();
    return 1;
  }
  /* -n defaults to what fits; a larger -n stops at the end of the context
   * (said on stderr after the text), as llama.cpp's CLI does */
  if (n_gen < 0 || n_prompt + n_gen > m->n_ctx) {
    ctx_limited = 1;
    n_gen = m->n_ctx - n_prompt;
  }
  if (!quiet) {
    fprintf(stderr, "llama: %s: %d layers, dim %d, %d heads (%d kv), vocab %d, context %d; %.1f MB of weights on",
            m->name, m->c.n_layers, m->c.dim, m->c.n_heads, m->c.n_kv_heads, m->c.vocab, m->n_ctx,
            (double)m->weight_bytes / 1e6);
    for (i = 0; i < m->n_ws; i++) fprintf(stderr, "%s%s", i ? "," : " ", dk_device_name(m->ws[i].dev));
    fprintf(stderr, "; loaded in %.2f s\n", m->load_seconds);
    dk_llm_print_device_map(m, stderr);
  }

  /* the prompt: echo it (a chat prompt's template is not echoed), then run it (in batches of -b tokens) */
  for (i = 0; i < n_prompt; i++) {
    if (print_ids) printf("%s%d", i ? " " : "", ids[i]);
    else if (!chat) put_piece(i ? ids[i - 1] : -1, ids[i]);
  }
  fflush(stdout);
  if (warmup && n_gen > 0) {
    /* the same prompt and one decode step, then an empty cache again */
    if (dk_llm_forward(m, ids, n_prompt, 0, &logits) != DK_OK ||
        dk_llm_sample(m, logits, 0, &sp, 0, &token) != DK_OK || dk_llm_forward(m, &token, 1, 0, &logits) != DK_OK ||
        dk_llm_sample(m, logits, 0, &sp, 1, &token) != DK_OK)
      die("%s%s", dk_last_error(), "");
    dk_llm_reset(m);
  }
  t0 = dk_llm_now();
  t1 = t0;
  prev = ids[n_prompt - 1];
  if (n_gen > 0) {
    if (dk_llm_forward(m, ids, n_prompt, 0, &logits) != DK_OK) die("%s%s", dk_last_error(), "");
    for (i = 0; i < n_gen; i++) {
      if (dk_llm_sample(m, logits, 0, &sp, (uint64_t)i, &token) != DK_OK) die("%s%s", dk_last_error(), "");
      if (i == 0) t1 = dk_llm_now();   /* the prompt's time ends with its first token */
      generated++;
      if (!ignore_eos && (tok || g_bpe) && is_stop(token, stop2)) break;
      if (print_ids) printf(" %d", token);
      else put_piece(prev, token);
      fflush(stdout);
      prev = token;
      if (i + 1 < n_gen && dk_llm_forward(m, &token, 1, 0, &logits) != DK_OK) die("%s%s", dk_last_error(), "");
    }
  }
  t2 = dk_llm_now();
  printf("\n");
  fflush(stdout);
  if (ctx_limited && generated == n_gen)
    fprintf(stderr, "llama: stopped at the end of the context (%d positions) after %d tokens; raise it with -c\n",
            m->n_ctx, generated);
  if (!quiet) {
    /* a rate only over work that was timed: the prompt's time ends with its
     * first token, and the generation rate counts the tokens after it */
    if (n_gen == 0) fprintf(stderr, "llama: prompt %d tokens (not run: -n 0)", n_prompt);
    else if (t1 > t0) fprintf(stderr, "llama: prompt %d tokens in %.3f s (%.1f tok/s)", n_prompt, t1 - t0, n_prompt / (t1 - t0));
    else fprintf(stderr, "llama: prompt %d tokens", n_prompt);
    if (generated > 1 && t2 > t1)
      fprintf(stderr, "; generated %d tokens in %.3f s (%.1f tok/s) on", generated, t2 - t1, (generated - 1) / (t2 - t1));
    else
      fprintf(stderr, "; generated %d token%s (too few to time) on", generated, generated == 1 ? "" : "s");
    for (i = 0; i < m->n_ws; i++) fprintf(stderr, "%s%s", i ? "," : " ", dk_device_name(m->ws[i].dev));
    fprintf(stderr, "\n");
  }
  cleanup();
  return 0;
}
