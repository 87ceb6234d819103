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

/* The sets NVTXSHIM_HOOKS turns on and off (hook_sets.def); each traced hook
 * is in one. The device files' sets: cameras (v4l2), USB serial ttys and
 * NVTXSHIM_DEVICES paths (serial), hidraw nodes (hid), I2C nodes (i2c); usbfs
 * nodes are in usb. */
enum nvs_hook_set_number {
#define NVS_HOOK_SET(id, name) NVS_HOOK_SET_NUMBER_##id,
#define NVS_DEVICE_SET(id, name, in, out) NVS_HOOK_SET_NUMBER_##id,
#include "hook_sets.def"
#undef NVS_HOOK_SET
#undef NVS_DEVICE_SET
    NVS_HOOK_SET_COUNT
};

enum nvs_hook_set {
#define NVS_HOOK_SET(id, name) NVS_HOOKS_##id = 1u << NVS_HOOK_SET_NUMBER_##id,
#define NVS_DEVICE_SET(id, name, in, out) NVS_HOOKS_##id = 1u << NVS_HOOK_SET_NUMBER_##id,
#include "hook_sets.def"
#undef NVS_HOOK_SET
#undef NVS_DEVICE_SET
    NVS_HOOKS_DEVICE_FILES = 0
#define NVS_HOOK_SET(id, name)
#define NVS_DEVICE_SET(id, name, in, out) | NVS_HOOKS_##id
#include "hook_sets.def"
#undef NVS_HOOK_SET
#undef NVS_DEVICE_SET
    ,
    NVS_HOOKS_ALL = (1u << NVS_HOOK_SET_COUNT) - 1,
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
