/* examples/tokenizer.h — the SentencePiece-style tokenizer of llama-family
 * models, read from a model file through devkit's readers.
 *
 * It works from a GGUF vocabulary (tokenizer.ggml.model = "llama": the
 * tokens, scores and token types, the BOS/EOS ids, add_bos_token and
 * add_space_prefix) or from a llama2.c tokenizer file (tok512.bin,
 * tokenizer.bin: scores and byte strings; BOS 1, EOS 2). Both readers expose
 * the same "tokenizer.ggml.tokens" and "tokenizer.ggml.scores" arrays, so
 * one algorithm serves both:
 *
 *   1. a non-empty text gets the dummy-prefix space; in a GGUF vocabulary
 *      spaces are written U+2581 "▁" (llama2.c's files keep ' ');
 *   2. the text is split into UTF-8 characters;
 *   3. the adjacent pair whose concatenation is a token with the highest
 *      score is merged (ties: the leftmost), until no pair is a token;
 *   4. a piece that is not a token is spelled with its bytes' <0xXX> tokens
 *      (byte fallback), or <unk> where even those are missing.
 *
 * This reproduces llama.cpp's SPM tokenizer (its test vectors pass exactly)
 * and llama2.c's run.c encoder. Decoding strips the space a piece starts with
 * right after BOS, as run.c does.
 */
#ifndef EXAMPLES_TOKENIZER_H
#define EXAMPLES_TOKENIZER_H

#include "../devkit.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tokenizer tokenizer;

/* The vocabulary of f, copied: f may be closed afterwards. On failure the
 * message is in tokenizer_last_error(). */
dk_status   tokenizer_load(const dk_file *f, tokenizer **out);
void        tokenizer_free(tokenizer *t);
const char *tokenizer_last_error(void);

int32_t tokenizer_count(const tokenizer *t);
int32_t tokenizer_bos(const tokenizer *t);
int32_t tokenizer_eos(const tokenizer *t);
int     tokenizer_wants_bos(const tokenizer *t);   /* whether prompts start with BOS */

/* The ids of text[0, len), BOS first when add_bos; *ids is allocated
 * (free() it), *n the count. */
dk_status tokenizer_encode(const tokenizer *t, const char *text, size_t len, int add_bos, int32_t **ids, int *n);

/* The bytes id stands for when it follows prev (-1: nothing before), into
 * buf (NUL-terminated); returns their count. Control tokens are empty. */
size_t tokenizer_piece(const tokenizer *t, int32_t prev, int32_t id, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
