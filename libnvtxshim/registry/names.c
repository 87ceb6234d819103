/* Each hook's name, set and library, generated from the tables beside this file
 * (config.c needs these alone; so does the command, for call:NAME). */
#include <string.h>

#include "registry.h"

static const char *const hook_names[NVS_HOOK_COUNT] = {
#define NVS_HOOK(name, library) [NVS_ID_##name] = #name,
#include "usb.def"
#include "x11.def"
#include "cuda.def"
#include "cudart.def"
#include "devices.def"
#include "descriptors.def"
#include "process.def"
#undef NVS_HOOK
};

static const unsigned char hook_groups[NVS_HOOK_COUNT] = {
#define NVS_HOOK(name, library) [NVS_ID_##name] = NVS_GROUP,
#define NVS_GROUP NVS_HOOKS_USB
#include "usb.def"
#undef NVS_GROUP
#define NVS_GROUP NVS_HOOKS_X11
#include "x11.def"
#undef NVS_GROUP
#define NVS_GROUP NVS_HOOKS_CUDA
#include "cuda.def"
#include "cudart.def"
#undef NVS_GROUP
/* The descriptor calls serve every device kind. */
#define NVS_GROUP (NVS_HOOKS_DEVICE_FILES | NVS_HOOKS_USB)
#include "devices.def"
#include "descriptors.def"
#undef NVS_GROUP
#undef NVS_HOOK
};

/* The soname that defines each hook's real function. */
static const char *const hook_libraries[NVS_HOOK_COUNT] = {
#define NVS_HOOK(name, library) [NVS_ID_##name] = library,
#include "usb.def"
#include "x11.def"
#include "cuda.def"
#include "cudart.def"
#include "devices.def"
#include "descriptors.def"
#include "process.def"
#undef NVS_HOOK
};

const char *nvs_hook_library(enum nvs_hook_id id)
{
    return (unsigned)id < NVS_HOOK_COUNT ? hook_libraries[id] : "";
}

unsigned nvs_hook_group(enum nvs_hook_id id)
{
    return (unsigned)id < NVS_HOOK_COUNT ? hook_groups[id] : 0;
}

const char *nvs_hook_name(enum nvs_hook_id id)
{
    return (unsigned)id < NVS_HOOK_COUNT ? hook_names[id] : "?";
}

int nvs_api_name_length(const char *name)
{
    static const char *const suffixes[] = { "_ptds", "_ptsz", "_v2", "_v3" };
    size_t length = strlen(name);
    for (int stripped = 1; stripped;) {
        stripped = 0;
        for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
            size_t n = strlen(suffixes[i]);
            if (length > n && !strncmp(name + length - n, suffixes[i], n)) {
                length -= n;
                stripped = 1;
            }
        }
    }
    return (int)length;
}

int nvs_hook_find(const char *name)
{
    for (int id = 0; id < NVS_HOOK_COUNT; id++) {
        if (!strcmp(hook_names[id], name))
            return id;
    }
    return -1;
}
