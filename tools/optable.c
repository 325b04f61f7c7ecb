/* tools/optable.c — prints the op table (op x backend x dtype) from the
 * dispatch tables themselves, as Markdown. build.sh writes it into
 * README.md between the optable markers, so the README cannot lie. */
#define DEVKIT_IMPLEMENTATION
#include "../devkit.h"
#include <stdio.h>
#include <string.h>

int main(void) {
  static const dk_dtype acts[3] = {DK_F32, DK_F16, DK_BF16};
  static const dk_dtype wts[5] = {DK_F32, DK_F16, DK_BF16, DK_Q8_0, DK_Q4_0};
  int op, b, k;
  dk_init();   /* the tables exist for every backend compiled in, device or not */
  printf("| op |");
  for (b = 0; b < DK_BACKEND_COUNT; b++) printf(" %s |", dk_backend_name((dk_backend)b));
  printf("\n|---|");
  for (b = 0; b < DK_BACKEND_COUNT; b++) printf("---|");
  printf("\n");
  for (op = 0; op < dk_op_count(); op++) {
    const char *name = dk_op_name(op);
    int has_w = !strcmp(name, "dk_linear") || !strcmp(name, "dk_embedding") || !strcmp(name, "dk_attention") ||
                !strcmp(name, "dk_rmsnorm") || !strcmp(name, "dk_layernorm") || !strcmp(name, "dk_rmsnorm_linear") ||
                !strcmp(name, "dk_swiglu_linear") || !strcmp(name, "dk_attention_pos") ||
                !strcmp(name, "dk_attention_window") || !strcmp(name, "dk_attention_pos_window");
    printf("| `%s` |", name);
    for (b = 0; b < DK_BACKEND_COUNT; b++) {
      int any = 0;
      char cell[128] = "";
      for (k = 0; k < 3; k++)
        if (dk_op_supported((dk_backend)b, name, acts[k], 0)) {
          strcat(cell, any ? "/" : "");
          strcat(cell, dk_dtype_name(acts[k]));
          any = 1;
        }
      if (!strcmp(name, "dk_concat") || !strcmp(name, "dk_copy") || !strcmp(name, "dk_transpose"))
        if (dk_op_supported((dk_backend)b, name, DK_I32, 0)) { strcat(cell, any ? "/" : ""); strcat(cell, "i32"); any = 1; }
      if (any && has_w) {
        int wany = 0;
        strcat(cell, !strncmp(name, "dk_attention", 12) ? "; kv " : !strcmp(name, "dk_embedding") ? "; table " : "; w ");
        for (k = 0; k < 5; k++)
          if (dk_op_supported((dk_backend)b, name, wts[k], 1)) {
            strcat(cell, wany ? "/" : "");
            strcat(cell, dk_dtype_name(wts[k]));
            wany = 1;
          }
      }
      printf(" %s |", any ? cell : "—");
    }
    printf("\n");
  }
  dk_shutdown();
  return 0;
}
