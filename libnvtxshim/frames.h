/* Frame counting (NVTXSHIM_FRAME) and frame budgets (NVTXSHIM_FRAME_BUDGET). */
#ifndef NVS_FRAMES_H
#define NVS_FRAMES_H

#include <stdatomic.h>
#include <stdbool.h>

#include "config.h"
#include "hooks.h"
#include "kernel.h"

/* What calls must be followed for, beyond their ranges: set once, when the
 * library becomes active, before any call is traced (see hook.h). */
enum nvs_call_work {
    NVS_WORK_FRAMES = 1u << 0,      /* NVTXSHIM_FRAME counts markers */
    NVS_WORK_CAPTURE = 1u << 1,     /* a capture trigger counts calls, time or signals */
};
/* Atomic, read relaxed: every thread whose first hooked call comes before the
 * library is ready stores the same value, and a plain variable written by
 * several threads while others read it is a data race (ThreadSanitizer,
 * test/test_sanitizers.py). A relaxed load costs what a plain one does. */
extern _Atomic unsigned nvs_call_work;

void nvs_frames_follow_call(enum nvs_hook_id id, enum nvs_frame_marker event, int endpoint);
void nvs_frames_count(enum nvs_hook_id id, enum nvs_frame_marker event, int endpoint);

/* A program-level call of hook ID begins; EVENT is the marker kind it
 * counts as (NVS_FRAME_OFF for none) and ENDPOINT its USB endpoint or -1.
 * It also drives the capture triggers that count calls, time and signals,
 * and the kernel probe's thread list. One test when none of them is on. */
static inline void nvs_frames_on_call(enum nvs_hook_id id, enum nvs_frame_marker event, int endpoint)
{
    nvs_kernel_on_call();
    if (__builtin_expect(atomic_load_explicit(&nvs_call_work, memory_order_relaxed) != 0, 0))
        nvs_frames_follow_call(id, event, endpoint);
}

/* The same for an event that is not a call of its own (an asynchronous
 * transfer completing): only frames count it. */
static inline void nvs_frames_on_completion(enum nvs_hook_id id, enum nvs_frame_marker event,
                                            int endpoint)
{
    if (__builtin_expect(atomic_load_explicit(&nvs_call_work, memory_order_relaxed) &
                         NVS_WORK_FRAMES, 0))
        nvs_frames_count(id, event, endpoint);
}

/* Ends the open frame (at exit). */
void nvs_frames_finish(void);

/* Whether this process's image is ours to end (false in a vfork child), and
 * the end of its frames, as at exit: for exec and _exit (init.c). */
bool nvs_owns_image(void);
void nvs_end_frames(void);

/* In a forked child: counting starts again from frame 1. */
void nvs_frames_reset_after_fork(void);

#endif
