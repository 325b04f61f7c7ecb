/* models/models.h — the whole model layer in one include: model files
 * (file.h: GGUF, safetensors, llama2.c; hf.h: a Hugging Face directory as
 * a GGUF file; json.h: its config files), vocabularies and tokenizers (vocab.h, bpe.h, spm.h,
 * wordpiece.h) and the model families (llama.h, bert.h).
 *
 * The model layer is devkit's second layer: header-only, written only
 * against devkit.h's public API, so every model runs on every device the kit
 * has. devkit.h holds tensors, devices, dispatch, ops and errors; models/
 * holds what turns a file someone downloaded into those calls. A program
 * includes devkit.h's implementation once and the model layer's once:
 *
 *     #define DEVKIT_IMPLEMENTATION
 *     #include "devkit.h"
 *     #define DEVKIT_MODELS_IMPLEMENTATION
 *     #include "models/models.h"
 *
 * (or only the headers it uses: each includes what it needs). Errors come
 * back as a dk_status with the message in dk_last_error(), as from the kit. */
#ifndef DK_MODELS_MODELS_H
#define DK_MODELS_MODELS_H
#include "file.h"
#include "hf.h"
#include "vocab.h"
#include "bpe.h"
#include "spm.h"
#include "llama.h"
#include "json.h"
#include "wordpiece.h"
#include "bert.h"
#endif

/* the implementations: each header guards its own (DK_MODELS_<NAME>_IMPL), so
 * including one again here after a direct include is harmless */
#if defined(DEVKIT_MODELS_IMPLEMENTATION)
#include "file.h"
#include "hf.h"
#include "vocab.h"
#include "bpe.h"
#include "spm.h"
#include "llama.h"
#include "json.h"
#include "wordpiece.h"
#include "bert.h"
#endif
