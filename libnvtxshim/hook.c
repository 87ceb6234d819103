/* The range every simple wrapper opens and closes: named after the hook. */
#include "hook.h"

#include <stdio.h>

#include "emit.h"
#include "frames.h"

/* The registered name of each hook's range, by id: no hashing on the way in. */
static _Atomic(nvtxStringHandle_t) hook_names[NVS_HOOK_COUNT];

static struct nvs_name hook_range_name(enum nvs_domain domain, enum nvs_hook_id id)
{
    struct nvs_name name = { atomic_load_explicit(&hook_names[id], memory_order_acquire), NULL };
    if (!name.registered) {
        name = nvs_name_store(domain, (uint64_t)(id + 1) << 56, nvs_hook_name(id));
        if (name.registered)
            atomic_store_explicit(&hook_names[id], name.registered, memory_order_release);
    }
    return name;
}

void nvs_call_open(enum nvs_domain domain, enum nvs_hook_id id, uint32_t category, uint32_t color,
                   enum nvs_frame_marker marker)
{
    int saved_errno = errno;
    struct nvs_attributes range = { .domain = domain, .category = category, .color = color };
    range.name = hook_range_name(domain, id);
    nvs_frames_on_call(id, marker, -1);
    nvs_range_push(&range);
    errno = saved_errno;
}

void nvs_call_close(enum nvs_domain domain)
{
    int saved_errno = errno;
    nvs_range_pop(domain);
    nvs_call_end();
    errno = saved_errno;
}
