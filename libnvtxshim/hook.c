/* The range every simple wrapper opens and closes: named after the hook. */
#include "hook.h"

#include <stdio.h>

#include "emit.h"
#include "frames.h"

void nvs_call_open(enum nvs_domain domain, enum nvs_hook_id id, uint32_t category, uint32_t color,
                   enum nvs_frame_marker marker)
{
    int saved_errno = errno;
    char buffer[64];
    struct nvs_attributes range = { .domain = domain, .category = category, .color = color };
    NVS_NAME(range.name, domain, (uint64_t)(id + 1) << 56, buffer, "%s", nvs_hook_name(id));
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
