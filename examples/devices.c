/* examples/devices.c — every device devkit sees: backend, index, name, vendor,
 * memory, software or hardware, UUID; and which entries are one physical GPU
 * seen through two backends (cuda:N and vulkan:M share a UUID).
 *
 *   build/devices
 */
#define DEVKIT_IMPLEMENTATION
#include "../devkit.h"

#include <stdio.h>
#include <string.h>

static void uuid_text(const dk_device_props *p, char *out, size_t n) {
  int i;
  size_t k = 0;
  if (!p->has_uuid) { snprintf(out, n, "-"); return; }
  for (i = 0; i < 16 && k + 3 < n; i++) {
    k += (size_t)snprintf(out + k, n - k, "%02x", p->uuid[i]);
    if ((i == 3 || i == 5 || i == 7 || i == 9) && k + 2 < n) out[k++] = '-', out[k] = 0;
  }
}

int main(void) {
  dk_device list[64];
  dk_device_props props[64];
  int n = dk_device_list(list, 64), i, j, b;
  if (n > 64) n = 64;
  printf("%-10s %-40s %-10s %11s %11s %-8s %s\n", "device", "name", "vendor", "total MiB", "free MiB", "kind", "uuid");
  for (i = 0; i < n; i++) {
    char u[48];
    dk_device_properties(list[i], &props[i]);
    uuid_text(&props[i], u, sizeof u);
    printf("%-10s %-40.40s %-10.10s %11.0f %11.0f %-8s %s", dk_device_name(list[i]), props[i].name, props[i].vendor,
           props[i].memory_total / 1048576.0, props[i].memory_free / 1048576.0,
           list[i].backend == DK_CPU ? "host" : props[i].is_software ? "software" : "hardware", u);
    if (props[i].logical_count > 1)
      printf("  (logical %d of %d on physical %d)", props[i].logical_slot + 1, props[i].logical_count,
             props[i].physical_index);
    printf("\n");
  }
  /* one card, two names: the same UUID under two backends */
  for (i = 0; i < n; i++)
    for (j = i + 1; j < n; j++)
      if (props[i].has_uuid && props[j].has_uuid && list[i].backend != list[j].backend &&
          props[i].logical_slot == 0 && props[j].logical_slot == 0 &&
          memcmp(props[i].uuid, props[j].uuid, 16) == 0)
        printf("same physical GPU: %s and %s\n", dk_device_name(list[i]), dk_device_name(list[j]));
  for (b = 0; b < DK_BACKEND_COUNT; b++)
    if (dk_device_count((dk_backend)b) == 0) printf("%s: no devices (%s)\n", dk_backend_name((dk_backend)b), dk_backend_note((dk_backend)b));
  dk_shutdown();
  return 0;
}
