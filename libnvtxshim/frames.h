/* Frame counting (NVTXSHIM_FRAME) and frame budgets (NVTXSHIM_FRAME_BUDGET). */
#ifndef NVS_FRAMES_H
#define NVS_FRAMES_H

#include <stdbool.h>

#include "config.h"
#include "hooks.h"

/* A program-level call of hook ID begins; EVENT is the marker kind it
 * counts as (NVS_FRAME_OFF for none) and ENDPOINT its USB endpoint or -1.
 * It also drives the capture triggers that count calls, time and signals. */
void nvs_frames_on_call(enum nvs_hook_id id, enum nvs_frame_marker event, int endpoint);

/* The same for an event that is not a call of its own (an asynchronous
 * transfer completing): only frames count it. */
void nvs_frames_on_completion(enum nvs_hook_id id, enum nvs_frame_marker event, int endpoint);

/* Ends the open frame (at exit). */
void nvs_frames_finish(void);

/* In a forked child: counting starts again from frame 1. */
void nvs_frames_reset_after_fork(void);

#endif
