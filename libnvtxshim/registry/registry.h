/* The hook registry: the id of every interposed function and its hook set, generated
 * from the tables beside this file (*.def, one line a hooked symbol), and the names.
 * It sits below every other file of the library and includes none of them. */
#ifndef NVS_HOOKS_H
#define NVS_HOOKS_H

/* The installed cuda.h's CUDA_VERSION, from the Makefile: the tables list the
 * entry points that header declares. */
#ifndef NVS_CUDA_VERSION
#error "NVS_CUDA_VERSION must be defined (the Makefile reads it from cuda.h)"
#endif

/* The sets NVTXSHIM_HOOKS turns on and off; each traced hook is in one. */
enum nvs_hook_set {
    NVS_HOOKS_USB  = 1u << 0,
    NVS_HOOKS_X11  = 1u << 1,
    NVS_HOOKS_CUDA = 1u << 2,
    NVS_HOOKS_V4L2 = 1u << 3,           /* camera device files */
    NVS_HOOKS_SERIAL = 1u << 4,         /* USB serial ttys, NVTXSHIM_DEVICES paths */
    NVS_HOOKS_HID  = 1u << 5,           /* hidraw nodes */
    NVS_HOOKS_DEVICE_FILES = NVS_HOOKS_V4L2 | NVS_HOOKS_SERIAL | NVS_HOOKS_HID,
    NVS_HOOKS_ALL  = NVS_HOOKS_USB | NVS_HOOKS_X11 | NVS_HOOKS_CUDA | NVS_HOOKS_DEVICE_FILES,
};

enum nvs_hook_id {
#define NVS_HOOK(name, library) NVS_ID_##name,
#include "usb.def"
#include "x11.def"
#include "cuda.def"
#include "cudart.def"
#include "devices.def"
#include "descriptors.def"
    /* Hooks before this traced the program's work; the ones after it serve the recorder. */
    NVS_TRACED_HOOK_COUNT,
    NVS_PROCESS_HOOKS_BEFORE = NVS_TRACED_HOOK_COUNT - 1,
#include "process.def"
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
