/* Frame counting (NVTXSHIM_FRAME) and frame budgets (NVTXSHIM_FRAME_BUDGET). */
#ifndef NVS_FRAMES_H
#define NVS_FRAMES_H

#include "config.h"
#include "registry/registry.h"

/* A call of hook ID (or an asynchronous transfer's completion) that is a
 * frame marker of kind EVENT (NVS_FRAME_OFF for none), at USB ENDPOINT or -1:
 * a marker begins the next frame (hook.c calls it). */
void nvs_frames_count(enum nvs_hook_id id, enum nvs_frame_marker event, int endpoint);

/* Ends the open frame (at exit). */
void nvs_frames_finish(void);

/* In a forked child: counting starts again from frame 1. */
void nvs_frames_reset_after_fork(void);

#endif
