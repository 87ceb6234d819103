/* What the kernel probe (kernel.bpf.c) and its loader (kernel.c) share. */
#ifndef NVS_KERNEL_H
#define NVS_KERNEL_H

#include "hidden.h"

/* Per watched thread, cumulative since it was first watched. */
struct nvs_thread_figures {
    unsigned long long runnable_ns; /* off CPU but runnable: preempted, or woken and waiting */
    unsigned long long blocked_ns;  /* off CPU asleep, until woken */
    unsigned long long involuntary; /* switched out while runnable (preemptions) */
    unsigned long long voluntary;   /* switched out to sleep */
    unsigned long long migrations;  /* moved to another CPU */
    unsigned long long faults;      /* user page faults */
    unsigned long long urbs;        /* URBs submitted and given back (kernels with USB) */
    unsigned long long urb_ns;      /* their time from submission to giveback */
    unsigned long long unseen;      /* switches the kernel did not report to the probe */
};

enum nvs_thread_state { NVS_THREAD_RUNNING, NVS_THREAD_RUNNABLE, NVS_THREAD_BLOCKED };

/* The value of the watched-threads map. */
struct nvs_thread {
    struct nvs_thread_figures figures;
    unsigned long long since_ns; /* when the current off-CPU state began */
    unsigned int state;          /* enum nvs_thread_state */
    unsigned int pad;
};

/* One long off-CPU interval of a watched thread (ring buffer record). */
struct nvs_offcpu_interval {
    unsigned long long start_ns; /* CLOCK_MONOTONIC, as bpf_ktime_get_ns */
    unsigned long long end_ns;
    unsigned int tid;
    unsigned int state; /* NVS_THREAD_RUNNABLE or NVS_THREAD_BLOCKED */
};

#ifndef __bpf__
/* The library's side (kernel.c): all of it per frame or per thread, never per call. */
#include <stdbool.h>
#include <stdint.h>

#include <stddef.h>

/* Loads libbpf.so.1 (kernel_libbpf.c); false with the reason in WHY. */
bool nvs_libbpf_open(char *why, size_t size);

/* True while the probe runs; the hooks then note which threads make calls. */
extern NVS_HIDDEN bool nvs_kernel_running;
void nvs_kernel_note_thread(void);

/* A program-level hooked call on this thread (cheap unless the probe runs). */
static inline void nvs_kernel_on_call(void)
{
    if (__builtin_expect(nvs_kernel_running, 0))
        nvs_kernel_note_thread();
}

/* Once per process when the library becomes active: loads and attaches the
 * probe when NVTXSHIM_KERNEL=on, or says in one line why not. */
void nvs_kernel_activate(void);
/* Frame NUMBER begins / ends (RANGE: its NVTX range id, for the trace file's
 * args). Called with the frame lock held. */
void nvs_kernel_frame_begin(uint64_t number);
void nvs_kernel_frame_end(uint64_t number, uint64_t range);
/* At exit: the last intervals, the summary line, the probe detached. */
void nvs_kernel_finish(void);
/* In a forked child: the probe stays with the parent. */
void nvs_kernel_reset_after_fork(void);
#endif

#endif
