/* What every wrapper shares: the re-entry guard, errno, and whether a
 * library's calls are traced at all. */
#ifndef NVS_HOOK_H
#define NVS_HOOK_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "capture.h"
#include "config.h"
#include "resolve.h"

/* Depth of hooked calls on this thread: only depth 0 is the program's own
 * call; libusb's sync functions calling its async ones, the CUDA runtime
 * calling the driver, run deeper and pass straight through. */
extern __thread unsigned nvs_hook_depth __attribute__((tls_model("initial-exec")));

#define NVS_GROUPS_READY (1u << 31)
extern _Atomic unsigned nvs_traced_groups_state;
unsigned nvs_traced_groups_init(void);

/* The enum nvs_hook_set bits of libraries whose calls are traced now: the
 * hook is on and an NVTX tool is attached. */
static inline unsigned nvs_traced_groups(void)
{
    unsigned groups = atomic_load_explicit(&nvs_traced_groups_state, memory_order_acquire);
    return (groups & NVS_GROUPS_READY) ? groups : nvs_traced_groups_init();
}

/* True when a call of GROUP surely goes straight to the real function (the
 * library is ready and the group untraced, or the call is nested). Wrappers
 * test it first and tail-call the real function: nothing else is on the way,
 * so the compiler saves no register and moves no argument for it. */
static inline bool nvs_call_passes(unsigned group)
{
    unsigned groups = atomic_load_explicit(&nvs_traced_groups_state, memory_order_acquire);
    return __builtin_expect((groups & NVS_GROUPS_READY) && (!(groups & group) || nvs_hook_depth), 1);
}

/* True when this is a program-level call of a traced library: the caller
 * then emits, calls the real function, and ends with nvs_call_end(). */
static inline bool nvs_call_begin(unsigned group)
{
    if (nvs_hook_depth || !(nvs_traced_groups() & group))
        return false;
    nvs_hook_depth++;
    return true;
}

static inline void nvs_call_end(void)
{
    nvs_hook_depth--;
    if (__builtin_expect(nvs_capture_close_after_call, 0))
        nvs_capture_after_call();
}

/* Opens the range of a program-level call, named after hook ID, and counts the
 * call as a frame marker of kind MARKER; nvs_call_close pops it and ends the
 * call. Both leave errno as they found it. (Domains and markers: emit.h, config.h.) */
enum nvs_domain;
void nvs_call_open(enum nvs_domain domain, enum nvs_hook_id id, uint32_t category, uint32_t color,
                   enum nvs_frame_marker marker);
void nvs_call_close(enum nvs_domain domain);

/* The body of a wrapper: the real function straight away when the call is not
 * traced (or MISSING when no library defines it); otherwise OPEN, the real
 * call, CLOSE. RESULT holds the real call's value inside CLOSE. */
#define NVS_WRAPPER_BODY(group, name, missing, arguments, open, close)                      \
    __typeof__(&name) real = NVS_REAL(name);                                                 \
    if (!real)                                                                               \
        return missing;                                                                      \
    if (nvs_call_passes(group) || !nvs_call_begin(group))                                    \
        return real arguments;                                                               \
    open;                                                                                    \
    __typeof__(real arguments) result = real arguments;                                      \
    close;                                                                                   \
    return result

/* The body of a wrapper that always passes through, then does AFTER (which
 * may read RESULT): entry-point lookups, allocations that empty a cache. */
#define NVS_PASS_THEN(name, missing, arguments, after)                                       \
    __typeof__(&name) real = NVS_REAL(name);                                                 \
    if (!real)                                                                               \
        return missing;                                                                      \
    __typeof__(real arguments) result = real arguments;                                      \
    after;                                                                                   \
    return result

#endif
