/* NVTXSHIM_CAPTURE: opens and closes the Nsight Systems capture range by itself
 * (an NVTX range for `-c nvtx`, cuProfilerStart/Stop for `-c cudaProfilerApi`). */
#ifndef NVS_CAPTURE_H
#define NVS_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "hidden.h"
#include "registry/registry.h"

/* A program-level call of hook ID begins (before its range): counts calls,
 * follows the clock, acts on signals. True: the call must be followed by
 * nvs_capture_after_call when it ends. */
bool nvs_capture_on_call(enum nvs_hook_id id);

/* A CUDA copy is about to be traced on this thread: a cuProfilerStart/Stop
 * that had to wait for a thread with a current context happens now. */
void nvs_capture_on_cuda_call(void);

/* The call after which the capture closes (calls:NAME:S+C, its last counted
 * call: nvs_capture_on_call said so) has ended. When the
 * window's first call, on another thread, has not opened it yet, that call
 * closes it as it ends instead. */
void nvs_capture_after_call(void);

/* Between frames: frame ENDED (0: none) has just ended and frame BEGINNING (0:
 * none, at exit) is about to begin. Called with the frame lock held. */
void nvs_capture_on_frame(uint64_t ended, uint64_t beginning);

/* Once per process, when the library becomes active (a hooked library is
 * there): installs the signal trigger and says which nsys options match. */
void nvs_capture_activate(void);

/* With the signal trigger installed, the program's sigaction/signal calls for
 * its signal land here: the program's handler is kept, ours stays in front
 * and calls it. Returns 0 like sigaction. */
struct sigaction;
bool nvs_capture_keeps_signal(int number);
int nvs_capture_program_sigaction(int number, const struct sigaction *action,
                                  struct sigaction *old);

/* At exit: closes an open capture. */
void nvs_capture_finish(void);

/* In a forked child: nothing open, counting from the start. */
void nvs_capture_reset_after_fork(void);

#endif
