/* Frame N begins when the Nth marker call begins and ends when the next one
 * begins, or at exit. Frames are start/end ranges in domain nvtxshim because
 * marker calls may come from different threads. */
#include "frames.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "capture.h"
#include "emit.h"
#include "kernel.h"
#include "spin.h"

struct frame {
    uint64_t number; /* the last frame begun; 0 before the first */
    uint64_t start_ns;
    nvtxRangeId_t range;
    bool open;
};

static struct frame current;
/* Held for a handful of instructions per frame, not per hooked call: frames
 * come at loop rate, and two threads only meet here when both mark a frame. */
static struct nvs_spin current_lock;

static bool is_marker(const struct nvs_config *config, enum nvs_hook_id id,
                      enum nvs_frame_marker event, int endpoint)
{
    if (config->frame == NVS_FRAME_CALL)
        return (int)id == config->frame_call;
    return event == config->frame &&
        (config->frame_endpoint < 0 || config->frame_endpoint == endpoint);
}

/* The frame's range ends at END_NS, and its over-budget mark, where there is one, says
 * how long it took from the same two times the range has: in the trace file there is
 * a mark exactly for each frame range longer than the budget. A duration that only
 * shows over the budget in more digits gets them ("5.000412 ms > 5.000 ms"). */
static void close_frame(const struct frame *frame, uint64_t end_ns, uint64_t budget_ns)
{
    if (!frame->open)
        return;
    nvs_kernel_frame_end(frame->number, frame->range);
    nvs_range_end_at(NVS_DOMAIN_SHIM, frame->range, end_ns);
    uint64_t took_ns = end_ns - frame->start_ns;
    if (budget_ns && took_ns > budget_ns) {
        char text[NVS_OVER_BUDGET_TEXT_MAX];
        nvs_over_budget_text(text, frame->number, took_ns, budget_ns);
        struct nvs_attributes mark = NVS_ATTRIBUTES_PAYLOAD(NVS_DOMAIN_SHIM, NVS_SHIM_WARNING,
                                                            NVS_COLOR_ERROR, took_ns);
        nvs_attributes_name(&mark, (struct nvs_name){ NULL, text });
        nvs_mark(&mark);
    }
}

void nvs_frames_count(enum nvs_hook_id id, enum nvs_frame_marker event, int endpoint)
{
    const struct nvs_config *config = nvs_config();
    if (config->frame == NVS_FRAME_OFF || !is_marker(config, id, event, endpoint))
        return;

    if (!nvs_spin_lock(&current_lock))
        return;
    /* Read under the lock: a time read before it could be older than the start
     * of a frame another thread began in between, and the frame would end
     * before it began. */
    uint64_t now = nvs_now_ns();
    struct frame previous = current;
    current.number = previous.number + 1;
    current.start_ns = now;
    current.open = true;
    char text[32];
    snprintf(text, sizeof text, NVS_FRAME_PREFIX "%" PRIu64, current.number);
    struct nvs_attributes range = NVS_ATTRIBUTES_PAYLOAD(NVS_DOMAIN_SHIM, NVS_SHIM_FRAME,
                                                         NVS_COLOR_FRAME, current.number);
    nvs_attributes_name(&range, (struct nvs_name){ NULL, text });
    close_frame(&previous, now, config->frame_budget_ns);
    nvs_kernel_frame_begin(current.number);
    /* A capture closes after its last frame ends and opens before its first begins. */
    nvs_capture_on_frame(previous.open ? previous.number : 0, current.number);
    /* Opening a capture can take nsys a while (it starts collecting then): the
     * new frame starts after, as its range does. */
    if (config->capture != NVS_CAPTURE_OFF)
        current.start_ns = nvs_now_ns();
    current.range = nvs_range_start_at(&range, current.start_ns);
    nvs_spin_unlock(&current_lock);
    /* What a crash can lose is bounded by the frame: the frame that ended is
     * in the file now. */
    if (previous.open)
        nvs_emit_frame_ended();
}

void nvs_frames_finish(void)
{
    /* From exit or _exit in a handler that interrupted this thread while it
     * changed frames: the frame stays open in the trace, and the exit goes on. */
    if (!nvs_spin_lock(&current_lock))
        return;
    close_frame(&current, nvs_now_ns(), nvs_config()->frame_budget_ns);
    nvs_capture_on_frame(current.open ? current.number : 0, 0);
    current.open = false;
    nvs_spin_unlock(&current_lock);
}

void nvs_frames_reset_after_fork(void)
{
    current.number = 0;
    current.open = false;
    nvs_spin_reset(&current_lock);
}
