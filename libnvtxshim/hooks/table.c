/* The wrappers' table, generated from the hooks/ tables: each hook's wrapper,
 * the function this library exports under its name. Kept free of library
 * headers so the wrappers can be declared by their assembler names alone.
 * init.c hands it to resolve.c at load (nvs_resolve_set_wrappers): resolve.c,
 * which every wrapper calls, refers to no wrapper itself. */
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

void *const nvs_hook_wrappers[NVS_HOOK_COUNT] = {
#define NVS_HOOK(name, library) [NVS_ID_##name] = (void *)nvs_wrapper_##name,
#include "usb.def"
#include "x11.def"
#include "cuda.def"
#include "cudart.def"
#include "devices.def"
#include "descriptors.def"
#include "process.def"
#undef NVS_HOOK
};
