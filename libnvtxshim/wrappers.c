/* The wrappers' table, generated from the registry's tables: each hook's wrapper,
 * the function this library exports under its name. Kept free of library
 * headers so the wrappers can be declared by their assembler names alone.
 * It names every wrapper, so it sits on top beside init.c, which hands it to
 * resolve.c at load (nvs_resolve_set_wrappers): resolve.c, which every wrapper
 * calls, refers to no wrapper itself, and the registry below knows none. */
#include "registry/registry.h"
#include "resolve.h"

#define NVS_HOOK(name, library) extern void nvs_wrapper_##name(void) __asm__(#name);
#include "registry/usb.def"
#include "registry/x11.def"
#include "registry/cuda.def"
#include "registry/cudart.def"
#include "registry/devices.def"
#include "registry/descriptors.def"
#include "registry/process.def"
#undef NVS_HOOK

void *const nvs_hook_wrappers[NVS_HOOK_COUNT] = {
#define NVS_HOOK(name, library) [NVS_ID_##name] = (void *)nvs_wrapper_##name,
#include "registry/usb.def"
#include "registry/x11.def"
#include "registry/cuda.def"
#include "registry/cudart.def"
#include "registry/devices.def"
#include "registry/descriptors.def"
#include "registry/process.def"
#undef NVS_HOOK
};
