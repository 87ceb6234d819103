/* Hook ids over every interposed library, generated from the hooks/ tables. */
#ifndef NVS_HOOKS_H
#define NVS_HOOKS_H

/* The installed cuda.h's CUDA_VERSION, from the Makefile: the tables list the
 * entry points that header declares. */
#ifndef NVS_CUDA_VERSION
#error "NVS_CUDA_VERSION must be defined (the Makefile reads it from cuda.h)"
#endif

enum nvs_hook_id {
#define NVS_HOOK(name, library) NVS_ID_##name,
#include "hooks/usb.def"
#include "hooks/x11.def"
#include "hooks/cuda.def"
#include "hooks/cudart.def"
#include "hooks/devices.def"
#include "hooks/descriptors.def"
    /* Hooks before this traced the program's work; the ones after it serve the recorder. */
    NVS_TRACED_HOOK_COUNT,
    NVS_PROCESS_HOOKS_BEFORE = NVS_TRACED_HOOK_COUNT - 1,
#include "hooks/process.def"
#undef NVS_HOOK
    NVS_HOOK_COUNT
};

#define NVS_HOOK_ID(name) NVS_ID_##name

/* The documented name of a hook, "libusb_bulk_transfer". */
const char *nvs_hook_name(enum nvs_hook_id id);
/* The soname of the library that defines the real function of hook ID. */
const char *nvs_hook_library(enum nvs_hook_id id);
/* The length of NAME without its version and stream suffixes: of
 * "cuMemcpyHtoDAsync_v2_ptsz", the documented "cuMemcpyHtoDAsync". */
int nvs_api_name_length(const char *name);
/* The hook whose name is NAME, or -1. */
int nvs_hook_find(const char *name);
/* The NVTXSHIM_HOOKS bit (enum nvs_hook_set) of a traced hook; 0 for the libc ones. */
unsigned nvs_hook_group(enum nvs_hook_id id);

#endif
