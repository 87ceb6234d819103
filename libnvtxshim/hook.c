/* The call path (hook.h): whether calls are traced, and the one place that
 * opens and closes a call's range and tells the rest of the library about
 * the call. */
#include "hook.h"

#include "capture.h"
#include "frames.h"
#include "init.h"
#include "kernel.h"

__thread unsigned nvs_hook_depth __attribute__((tls_model("initial-exec")));
__thread bool nvs_call_after_work __attribute__((tls_model("initial-exec")));
_Atomic unsigned nvs_traced_groups_state NVS_ONCE_DATA;

/* What calls must be followed for, beyond their ranges: set once, when the
 * library becomes active, before any call is traced. Atomic, read relaxed:
 * every thread whose first hooked call comes before the library is ready
 * stores the same value, and a plain variable written by several threads
 * while others read it is a data race (ThreadSanitizer). A relaxed load costs
 * what a plain one does. */
enum call_work {
    WORK_FRAMES = 1u << 0,      /* NVTXSHIM_FRAME counts markers */
    WORK_CAPTURE = 1u << 1,     /* a capture trigger counts calls, time or signals */
};
static _Atomic unsigned call_work;

unsigned nvs_traced_groups_init(void)
{
    const struct nvs_config *config = nvs_config();
    if (!nvs_init_activate()) {
        atomic_store_explicit(&nvs_traced_groups_state, NVS_GROUPS_READY, memory_order_release);
        return 0;
    }
    /* Calls are followed when a tool takes the ranges, or when a capture trigger
     * must count them (under nsys -c cudaProfilerApi without -t nvtx, no NVTX
     * tool is attached, yet frames decide the capture). */
    bool followed = nvs_emit_active() || config->capture != NVS_CAPTURE_OFF;
    unsigned groups = (config->hooks && followed) ? config->hooks : 0;
    atomic_store_explicit(&call_work,
                          (config->frame != NVS_FRAME_OFF ? WORK_FRAMES : 0) |
                          (config->capture == NVS_CAPTURE_CALLS || config->capture == NVS_CAPTURE_TIME ||
                           config->capture == NVS_CAPTURE_SIGNAL ? WORK_CAPTURE : 0),
                          memory_order_relaxed);
    /* Release: a thread that sees the groups sees the work too. */
    atomic_store_explicit(&nvs_traced_groups_state, groups | NVS_GROUPS_READY,
                          memory_order_release);
    return groups;
}

void nvs_call_do_after_work(void)
{
    nvs_call_after_work = false;
    nvs_capture_after_call();
}

/* A program-level call of hook ID begins, before its range: the kernel
 * probe's thread list, the capture triggers, frames. One test when none of
 * them is on. */
static void dispatch(enum nvs_hook_id id, enum nvs_frame_marker marker, int endpoint,
                     enum nvs_domain domain)
{
    /* A cuProfilerStart/Stop that waits for a thread with a CUDA context. */
    if (domain == NVS_DOMAIN_CUDA)
        nvs_capture_on_cuda_call();
    nvs_kernel_on_call();
    unsigned work = atomic_load_explicit(&call_work, memory_order_relaxed);
    if (__builtin_expect(work != 0, 0)) {
        if (work & WORK_CAPTURE)
            nvs_capture_on_call(id);
        if (work & WORK_FRAMES)
            nvs_frames_count(id, marker, endpoint);
    }
}

void nvs_call_completed(enum nvs_hook_id id, enum nvs_frame_marker marker, int endpoint)
{
    if (__builtin_expect(atomic_load_explicit(&call_work, memory_order_relaxed) & WORK_FRAMES, 0))
        nvs_frames_count(id, marker, endpoint);
}

void nvs_call_open(enum nvs_hook_id id, enum nvs_frame_marker marker, int endpoint,
                   nvs_call_describe *describe, const void *what)
{
    int saved_errno = errno;
    struct nvs_call_range range = { .attributes = { .domain = NVS_DOMAIN_SHIM } };
    describe(&range, id, what);
    dispatch(id, marker, endpoint, range.attributes.domain);
    nvs_range_push(&range.attributes);
    errno = saved_errno;
}

uint64_t nvs_call_open_async(enum nvs_hook_id id, enum nvs_frame_marker marker, int endpoint,
                             nvs_call_describe *describe, const void *what)
{
    int saved_errno = errno;
    struct nvs_call_range range = { .attributes = { .domain = NVS_DOMAIN_SHIM } };
    describe(&range, id, what);
    dispatch(id, marker, endpoint, range.attributes.domain);
    uint64_t started = nvs_range_start(&range.attributes);
    errno = saved_errno;
    return started;
}

void nvs_call_close(enum nvs_domain domain)
{
    int saved_errno = errno;
    nvs_range_pop(domain);
    nvs_call_leave();
    errno = saved_errno;
}

/* ---- the stock description ------------------------------------------------------ */

/* The registered name of each hook's range, by id: no hashing on the way in. */
static _Atomic(nvtxStringHandle_t) hook_names[NVS_HOOK_COUNT];

void nvs_call_describe_kind(struct nvs_call_range *range, enum nvs_hook_id id, const void *what)
{
    const struct nvs_call_kind *kind = what;
    struct nvs_attributes *attributes = &range->attributes;
    attributes->domain = kind->domain;
    attributes->category = kind->category;
    attributes->color = nvs_category_color(kind->domain, kind->category);
    attributes->name.registered = atomic_load_explicit(&hook_names[id], memory_order_acquire);
    if (!attributes->name.registered) {
        attributes->name = nvs_name_store(kind->domain, nvs_call_name_key(id, 0), nvs_hook_name(id));
        if (attributes->name.registered)
            atomic_store_explicit(&hook_names[id], attributes->name.registered,
                                  memory_order_release);
    }
}
