/* The call path (hook.h): whether calls are traced, and the one place that
 * opens and closes a call's range and tells the rest of the library about
 * the call. */
#include "hook.h"

#include <stdio.h>

#include "capture.h"
#include "frames.h"
#include "activation.h"
#include "kernel.h"

__thread unsigned nvs_hook_depth __attribute__((tls_model("initial-exec")));
_Atomic unsigned nvs_traced_groups_state NVS_ONCE_DATA;

/* What calls are dispatched to beyond their ranges: set once, when the
 * library becomes active, before any call is traced; 0 (one load and a test
 * per call) unless one of them is asked for. Atomic, read relaxed: every
 * thread whose first hooked call comes before the library is ready stores
 * the same value, and a plain variable written by several threads while
 * others read it is a data race (ThreadSanitizer). A relaxed load costs what
 * a plain one does. */
enum call_work {
    WORK_FRAMES = 1u << 0,       /* NVTXSHIM_FRAME counts markers */
    WORK_CAPTURE = 1u << 1,      /* a capture trigger counts calls, time or signals */
    WORK_CUDA_CAPTURE = 1u << 2, /* cuProfilerStart/Stop may wait for a CUDA thread */
    WORK_KERNEL = 1u << 3,       /* the kernel probe lists the threads that make calls */
};
_Atomic unsigned nvs_call_work;

_Atomic intptr_t nvs_errno_offset;

unsigned nvs_traced_groups_init(void)
{
    /* emit.h's nvs_errno_address: before any call is traced. Relaxed: every
     * thread that gets here stores the same value, and the groups' release
     * store below publishes it. */
    atomic_store_explicit(&nvs_errno_offset, (char *)&errno - (char *)__builtin_thread_pointer(),
                          memory_order_relaxed);
    const struct nvs_config *config = nvs_config();
    if (!nvs_activate()) {
        atomic_store_explicit(&nvs_traced_groups_state, NVS_GROUPS_READY, memory_order_release);
        return 0;
    }
    /* Calls are followed when a tool takes the ranges, or when a capture trigger
     * must count them (under nsys -c cudaProfilerApi without -t nvtx, no NVTX
     * tool is attached, yet frames decide the capture). */
    bool followed = nvs_emit_active() || config->capture != NVS_CAPTURE_OFF;
    unsigned groups = (config->hooks && followed) ? config->hooks : 0;
    atomic_store_explicit(
        &nvs_call_work,
        (config->frame != NVS_FRAME_OFF ? WORK_FRAMES : 0) |
            (config->capture == NVS_CAPTURE_CALLS || config->capture == NVS_CAPTURE_TIME ||
                     config->capture == NVS_CAPTURE_SIGNAL
                 ? WORK_CAPTURE
                 : 0) |
            (config->capture != NVS_CAPTURE_OFF && config->capture_via != NVS_VIA_NVTX
                 ? WORK_CUDA_CAPTURE
                 : 0) |
            (config->kernel ? WORK_KERNEL : 0),
        memory_order_relaxed);
    /* Release: a thread that sees the groups sees the work too. */
    atomic_store_explicit(&nvs_traced_groups_state, groups | NVS_GROUPS_READY,
                          memory_order_release);
    return groups;
}

void nvs_call_do_after_work(void)
{
    int saved_errno = errno;
    nvs_hook_depth &= ~NVS_DEPTH_AFTER_WORK;
    nvs_capture_after_call();
    errno = saved_errno;
}

/* A program-level call of hook ID begins, before its range: a pending
 * cuProfilerStart/Stop, the kernel probe's thread list, the capture triggers,
 * frames (nvs_call_open calls it when nvs_call_work says there is work). */
void nvs_call_dispatch(enum nvs_hook_id id, enum nvs_frame_marker marker, int endpoint,
                       enum nvs_domain domain)
{
    int saved_errno = errno;
    unsigned work = atomic_load_explicit(&nvs_call_work, memory_order_relaxed);
    if ((work & WORK_CUDA_CAPTURE) && domain == NVS_DOMAIN_CUDA)
        nvs_capture_on_cuda_call();
    if (work & WORK_KERNEL)
        nvs_kernel_on_call();
    if ((work & WORK_CAPTURE) && nvs_capture_on_call(id))
        nvs_call_after_work();
    if (work & WORK_FRAMES)
        nvs_frames_count(id, marker, endpoint);
    errno = saved_errno;
}

void nvs_call_completed(enum nvs_hook_id id, enum nvs_frame_marker marker, int endpoint)
{
    if (__builtin_expect(atomic_load_explicit(&nvs_call_work, memory_order_relaxed) & WORK_FRAMES,
                         0))
        nvs_frames_count(id, marker, endpoint);
}

_Atomic(nvtxStringHandle_t) nvs_call_hook_names[NVS_HOOK_COUNT];

/* The documented name, without _v2, _ptsz or _ptds ("cuStreamSynchronize"
 * for cuStreamSynchronize_ptsz). A name that finds no slot in the table goes
 * out as the hook's own name: static text, valid until the push. */
struct nvs_name nvs_call_register_hook_name(enum nvs_domain domain, enum nvs_hook_id id)
{
    int saved_errno = errno;
    const char *hook = nvs_hook_name(id);
    char text[NVS_CALL_TEXT_MAX];
    snprintf(text, sizeof text, "%.*s", nvs_api_name_length(hook), hook);
    struct nvs_name name = nvs_name_store(domain, nvs_call_name_key(id, 0), text);
    errno = saved_errno;
    if (name.registered)
        atomic_store_explicit(&nvs_call_hook_names[id], name.registered, memory_order_release);
    else
        name.text = hook;
    return name;
}

_Atomic(const struct nvs_attributes *) nvs_call_hook_ranges[NVS_HOOK_COUNT];
static struct nvs_attributes hook_ranges[NVS_HOOK_COUNT];
static atomic_bool hook_range_taken[NVS_HOOK_COUNT];

/* The first calls of a hook whose range is the same at every call: the range
 * is made for the call; once the hook's name is registered, the first thread
 * to take the hook's entry keeps it there and publishes it (release: whoever
 * loads the pointer sees the attributes). errno is kept (the name's
 * registration and the dispatch keep it, nvs_call_open does not read it). */
void nvs_call_push_first(enum nvs_hook_id id, enum nvs_domain domain, uint32_t category,
                         uint32_t color)
{
    struct nvs_attributes range = NVS_ATTRIBUTES(domain, category, color);
    struct nvs_name name = nvs_call_hook_name(domain, id);
    nvs_attributes_name(&range, name);
    if (name.registered && !atomic_load_explicit(&hook_range_taken[id], memory_order_relaxed) &&
        !atomic_exchange_explicit(&hook_range_taken[id], true, memory_order_relaxed)) {
        hook_ranges[id] = range;
        atomic_store_explicit(&nvs_call_hook_ranges[id], &hook_ranges[id], memory_order_release);
    }
    nvs_range_push(&range);
}

NVS_ONCE void nvs_end_frames(void)
{
    if (atomic_load(&nvs_traced_groups_state) & ~NVS_GROUPS_READY)
        nvs_frames_finish();
}
