/* Hook names, generated from the hooks/ tables (config.c needs these alone). */
#include <string.h>

#include "../hooks.h"

static const char *const hook_names[NVS_HOOK_COUNT] = {
#define NVS_HOOK(name) [NVS_ID_##name] = #name,
#include "usb.def"
#include "process.def"
#undef NVS_HOOK
};

const char *nvs_hook_name(enum nvs_hook_id id)
{
    return (unsigned)id < NVS_HOOK_COUNT ? hook_names[id] : "?";
}

int nvs_hook_find(const char *name)
{
    for (int id = 0; id < NVS_HOOK_COUNT; id++) {
        if (!strcmp(hook_names[id], name))
            return id;
    }
    return -1;
}
