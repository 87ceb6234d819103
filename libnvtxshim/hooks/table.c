/* The hook table, generated from the hooks/ tables: wrapper address and the
 * library that defines the real function. Kept free of library headers so
 * the wrappers can be declared by their assembler names alone. */
#include "../hooks.h"
#include "../resolve.h"

#define NVS_HOOK(name, library) extern void nvs_wrapper_##name(void) __asm__(#name);
#include "usb.def"
#include "x11.def"
#include "cuda.def"
#include "cudart.def"
#include "devices.def"
#include "descriptors.def"
#include "process.def"
#undef NVS_HOOK

const struct nvs_hook_info nvs_hook_table[NVS_HOOK_COUNT] = {
#define NVS_HOOK(name, library) [NVS_ID_##name] = { (void *)nvs_wrapper_##name, library },
#include "usb.def"
#include "x11.def"
#include "cuda.def"
#include "cudart.def"
#include "devices.def"
#include "descriptors.def"
#include "process.def"
#undef NVS_HOOK
};
