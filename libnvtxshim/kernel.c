/* The kernel probe's loader and reader (NVTXSHIM_KERNEL=on): what only the
 * kernel knows about the control loop's threads — why they did not run.
 *
 * The BPF side (kernel.bpf.c, embedded as a libbpf skeleton) keeps cumulative
 * figures per watched thread. A thread is watched from its first hooked call
 * (one map update per thread). At each frame end the figures of the threads
 * that made hooked calls in that frame are read (one map lookup per watched
 * thread) and their growth since the last frame becomes the frame's figures:
 * a mark in domain `kernel` and, in the trace file, `offcpu_*` args on the
 * frame. Long off-CPU intervals come through a ring buffer, read at frame
 * ends too, and go to the trace file as ranges in domain `kernel` (NVTX has no
 * explicit timestamps, so nsys shows the per-frame marks only). Nothing here
 * runs per call except nvs_kernel_on_call's test of one flag. */
#define _GNU_SOURCE
#include "kernel.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"
#include "emit.h"
#include "log.h"

bool nvs_kernel_running NVS_ONCE_DATA;

#ifndef NVS_KERNEL_PROBE

void nvs_kernel_note_thread(void)
{
}
void nvs_kernel_frame_begin(uint64_t number)
{
    (void)number;
}
void nvs_kernel_frame_end(uint64_t number, uint64_t range)
{
    (void)number;
    (void)range;
}
void nvs_kernel_finish(void)
{
}
void nvs_kernel_reset_after_fork(void)
{
}

void nvs_kernel_activate(void)
{
    if (nvs_config()->kernel)
        nvs_log_info("NVTXSHIM_KERNEL=on, but this build has no kernel probe (libbpf, bpftool, "
                     "clang or the kernel's BTF were missing when it was built: make deps, then "
                     "make); the program runs on without it\n");
}

#else

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/capability.h>

#include "kernel.skel.h"

#define SLOTS 64
#define WORST 5
#define CAP_PERFMON_BIT 38
#define CAP_BPF_BIT 39
#define PROC_PID_INIT_INO 0xEFFFFFFCu /* the kernel's initial pid namespace */

struct slot {
    uint32_t tid;
    _Atomic uint64_t last_frame;    /* the last frame this thread made a hooked call in */
    struct nvs_thread_figures base; /* its figures at the last frame end */
};

static struct slot slots[SLOTS];
static _Atomic unsigned slot_count;
static __thread struct slot *my_slot __attribute__((tls_model("initial-exec")));
static __thread bool my_slot_tried __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t current_frame;
/* The frame at whose end the bases were last read: a frame that begins after any
 * other (the first) reads them at its beginning, so it has only its own time. */
static uint64_t bases_at = UINT64_MAX;

static struct nvs_kernel *probe;
static struct ring_buffer *ring;
/* The watched-threads map, as a descriptor: threads still making calls while
 * the process exits never touch the freed skeleton. */
static int watched_fd = -1;

struct frame_figures {
    uint64_t frame;
    struct nvs_thread_figures sum;
};
static struct frame_figures worst[WORST]; /* frame 0: none yet */

static int quiet(enum libbpf_print_level level, const char *format, va_list arguments)
{
    (void)level;
    (void)format;
    (void)arguments;
    return 0;
}

static bool capable_of_bpf(void)
{
    struct __user_cap_header_struct header = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &header, data) != 0)
        return false;
    uint64_t effective = (uint64_t)data[1].effective << 32 | data[0].effective;
    bool admin = effective & (1ull << CAP_SYS_ADMIN);
    bool bpf = (effective & (1ull << CAP_BPF_BIT)) && (effective & (1ull << CAP_PERFMON_BIT));
    return admin || bpf;
}

static int on_interval(void *context, void *data, size_t size)
{
    (void)context;
    const struct nvs_offcpu_interval *interval = data;
    if (size < sizeof *interval)
        return 0;
    const struct nvs_trace_args args = { 2,
                                         { { NVS_ARG_OFFCPU_NS,
                                             interval->end_ns - interval->start_ns },
                                           { NVS_ARG_TID, interval->tid } } };
    nvs_interval(NVS_DOMAIN_KERNEL,
                 interval->state == NVS_THREAD_RUNNABLE ? "off CPU: runnable (waiting for a CPU)"
                                                        : "off CPU: blocked",
                 interval->tid, interval->start_ns, interval->end_ns, &args);
    return 0;
}

/* Why the probe did not start, in one line; the program runs on. */
static void refuse(const char *why, int error)
{
    if (error)
        nvs_log_info("NVTXSHIM_KERNEL=on: %s (%s); the kernel probe stays off\n", why,
                     strerror(error < 0 ? -error : error));
    else
        nvs_log_info("NVTXSHIM_KERNEL=on: %s; the kernel probe stays off\n", why);
}

static bool in_kernel_btf(const char *name, enum bpf_attach_type type)
{
    return libbpf_find_vmlinux_btf_id(name, type) > 0;
}

void nvs_kernel_activate(void)
{
    const struct nvs_config *config = nvs_config();
    if (!config->kernel || probe)
        return;
    int saved_errno = errno;
    char why[256];
    if (!nvs_libbpf_open(why, sizeof why)) {
        nvs_log_info("NVTXSHIM_KERNEL=on: %s; the kernel probe stays off\n", why);
        goto out;
    }
    libbpf_set_print(quiet);
    if (!capable_of_bpf()) {
        refuse("needs root, or CAP_BPF and CAP_PERFMON", 0);
        goto out;
    }
    if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
        refuse("this kernel has no BTF (/sys/kernel/btf/vmlinux)", 0);
        goto out;
    }
    probe = nvs_kernel__open();
    if (!probe) {
        refuse("cannot open the BPF object", errno);
        goto out;
    }
    probe->rodata->min_interval_ns = config->kernel_min_interval_ns;
    /* In a nested pid namespace (a container) gettid's ids are that namespace's, and the
     * probe must key its threads the same way. */
    struct stat pidns;
    if (stat("/proc/self/ns/pid", &pidns) != 0) {
        refuse("cannot tell this process's pid namespace (/proc/self/ns/pid)", errno);
        nvs_kernel__destroy(probe);
        probe = NULL;
        goto out;
    }
    if (pidns.st_ino != PROC_PID_INIT_INO)
        probe->rodata->pidns_inum = (unsigned)pidns.st_ino;
    /* Where a tracepoint is missing (user page faults are x86's), its figure stays 0. */
    if (!in_kernel_btf("page_fault_user", BPF_TRACE_RAW_TP))
        bpf_program__set_autoload(probe->progs.on_fault, false);
    if (!in_kernel_btf("usb_hcd_submit_urb", BPF_TRACE_FENTRY) ||
        !in_kernel_btf("__usb_hcd_giveback_urb", BPF_TRACE_FENTRY)) {
        bpf_program__set_autoload(probe->progs.on_urb_submit, false);
        bpf_program__set_autoload(probe->progs.on_urb_giveback, false);
    }
    int error = nvs_kernel__load(probe);
    if (!error)
        error = nvs_kernel__attach(probe);
    if (error) {
        refuse("the kernel refused the probe", error);
        nvs_kernel__destroy(probe);
        probe = NULL;
        goto out;
    }
    ring = ring_buffer__new(bpf_map__fd(probe->maps.intervals), on_interval, NULL, NULL);
    watched_fd = bpf_map__fd(probe->maps.watched);
    nvs_kernel_running = true;
    bool usb = bpf_program__autoload(probe->progs.on_urb_submit);
    nvs_log_info("kernel probe on: off-CPU time (runnable, blocked), context switches, migrations "
                 "and page faults of the threads that make hooked calls, per frame%s%s\n",
                 usb ? "; URB time in the kernel" : " (no USB in this kernel: no URB times)",
                 config->trace_path[0] ? "; longer off-CPU intervals as ranges in the trace file"
                                       : "");
out:
    errno = saved_errno;
}

void nvs_kernel_note_thread(void)
{
    if (!my_slot) {
        if (my_slot_tried)
            return;
        my_slot_tried = true;
        unsigned index = atomic_fetch_add(&slot_count, 1);
        if (index >= SLOTS)
            return; /* more threads than slots: the rest go unwatched */
        struct slot *slot = &slots[index];
        slot->tid = (uint32_t)syscall(SYS_gettid);
        struct nvs_thread zero;
        memset(&zero, 0, sizeof zero);
        int saved_errno = errno;
        bpf_map_update_elem(watched_fd, &slot->tid, &zero, BPF_ANY);
        errno = saved_errno;
        my_slot = slot;
    }
    atomic_store_explicit(&my_slot->last_frame,
                          atomic_load_explicit(&current_frame, memory_order_relaxed),
                          memory_order_relaxed);
}

static bool read_figures(const struct slot *slot, struct nvs_thread *now)
{
    return slot->tid && bpf_map_lookup_elem(watched_fd, &slot->tid, now) == 0;
}

/* The slots threads have taken (those past SLOTS go unwatched). */
static unsigned slots_taken(void)
{
    unsigned count = atomic_load(&slot_count);
    return count < SLOTS ? count : SLOTS;
}

void nvs_kernel_frame_begin(uint64_t number)
{
    atomic_store_explicit(&current_frame, number, memory_order_relaxed);
    if (!nvs_kernel_running || bases_at + 1 == number)
        return;
    /* The first frame: what the threads spent before it began is not its. */
    int saved_errno = errno;
    for (unsigned i = 0, count = slots_taken(); i < count; i++) {
        struct nvs_thread now;
        if (read_figures(&slots[i], &now))
            slots[i].base = now.figures;
    }
    bases_at = number - 1;
    errno = saved_errno;
}

static void add(struct nvs_thread_figures *sum, const struct nvs_thread_figures *now,
                const struct nvs_thread_figures *base)
{
    sum->runnable_ns += now->runnable_ns - base->runnable_ns;
    sum->blocked_ns += now->blocked_ns - base->blocked_ns;
    sum->involuntary += now->involuntary - base->involuntary;
    sum->voluntary += now->voluntary - base->voluntary;
    sum->migrations += now->migrations - base->migrations;
    sum->faults += now->faults - base->faults;
    sum->urbs += now->urbs - base->urbs;
    sum->urb_ns += now->urb_ns - base->urb_ns;
}

static void remember_if_worst(uint64_t frame, const struct nvs_thread_figures *sum)
{
    uint64_t off = sum->runnable_ns + sum->blocked_ns;
    unsigned at = WORST;
    for (unsigned i = 0; i < WORST; i++) {
        uint64_t other = worst[i].sum.runnable_ns + worst[i].sum.blocked_ns;
        if (!worst[i].frame || off > other) {
            at = i;
            break;
        }
    }
    if (at == WORST)
        return;
    memmove(&worst[at + 1], &worst[at], (WORST - 1 - at) * sizeof worst[0]);
    worst[at] = (struct frame_figures){ frame, *sum };
}

void nvs_kernel_frame_end(uint64_t number, uint64_t range)
{
    if (!nvs_kernel_running || !number)
        return;
    int saved_errno = errno;
    struct nvs_thread_figures sum;
    memset(&sum, 0, sizeof sum);
    unsigned threads = 0;
    for (unsigned i = 0, count = slots_taken(); i < count; i++) {
        struct slot *slot = &slots[i];
        struct nvs_thread now;
        if (!read_figures(slot, &now))
            continue;
        if (atomic_load_explicit(&slot->last_frame, memory_order_relaxed) == number) {
            add(&sum, &now.figures, &slot->base);
            threads++;
        }
        slot->base = now.figures;
    }
    bases_at = number;
    if (ring)
        ring_buffer__consume(ring);
    remember_if_worst(number, &sum);

    struct nvs_kernel_figures figures = { .present = (1u << NVS_FIGURE_COUNT) - 1 };
    figures.value[NVS_FIGURE_RUNNABLE_NS] = sum.runnable_ns;
    figures.value[NVS_FIGURE_BLOCKED_NS] = sum.blocked_ns;
    figures.value[NVS_FIGURE_PREEMPTIONS] = sum.involuntary;
    figures.value[NVS_FIGURE_VOLUNTARY] = sum.voluntary;
    figures.value[NVS_FIGURE_MIGRATIONS] = sum.migrations;
    figures.value[NVS_FIGURE_FAULTS] = sum.faults;
    figures.value[NVS_FIGURE_THREADS] = threads;
    figures.value[NVS_FIGURE_URBS] = sum.urbs;
    figures.value[NVS_FIGURE_URB_NS] = sum.urb_ns;
    char text[256];
    nvs_kernel_mark_format(text, sizeof text, number, &figures);
    struct nvs_attributes mark = NVS_ATTRIBUTES_PAYLOAD(NVS_DOMAIN_KERNEL, 0, NVS_COLOR_KERNEL,
                                                        sum.runnable_ns + sum.blocked_ns);
    nvs_attributes_name(&mark, (struct nvs_name){ NULL, text });
    nvs_mark(&mark);
    struct nvs_trace_args args = { .count = NVS_FIGURE_COUNT };
    for (unsigned i = 0; i < NVS_FIGURE_COUNT; i++) {
        args.member[i].key = nvs_kernel_figure_key((enum nvs_kernel_figure)i);
        args.member[i].value = figures.value[i];
    }
    nvs_range_args(range, &args);
    errno = saved_errno;
}

NVS_ONCE void nvs_kernel_finish(void)
{
    if (!nvs_kernel_running)
        return;
    nvs_kernel_running = false;
    if (ring)
        ring_buffer__consume(ring);
    /* Nothing silent: switches the kernel did not report leave their frames short of
     * off-CPU time, and the user is told how many. */
    unsigned long long unseen = 0;
    for (unsigned i = 0, count = slots_taken(); i < count; i++) {
        struct nvs_thread now;
        if (read_figures(&slots[i], &now))
            unseen += now.figures.unseen;
    }
    if (unseen)
        nvs_log_info(
            "kernel: %llu context switch%s of the watched threads went unreported by the "
            "kernel (it does not trace some tasks' switches); the frames they fell in show "
            "less time off CPU than they had\n",
            unseen, unseen == 1 ? "" : "es");
    if (worst[0].frame) {
        char line[512];
        int used = snprintf(line, sizeof line, "kernel: worst frames by time off CPU:");
        for (unsigned i = 0; i < WORST && worst[i].frame && used < (int)sizeof line; i++)
            used += snprintf(
                line + used, sizeof line - (size_t)used,
                "%s frame %" PRIu64 " %.1f ms (runnable %.1f, blocked %.1f)", i ? "," : "",
                worst[i].frame, (double)(worst[i].sum.runnable_ns + worst[i].sum.blocked_ns) / 1e6,
                (double)worst[i].sum.runnable_ns / 1e6, (double)worst[i].sum.blocked_ns / 1e6);
        nvs_log_info("%s\n", line);
    }
    ring_buffer__free(ring);
    ring = NULL;
    nvs_kernel__destroy(probe);
    probe = NULL;
}

void nvs_kernel_reset_after_fork(void)
{
    /* The maps and links are the parent's; the child runs without the probe. */
    nvs_kernel_running = false;
    probe = NULL;
    ring = NULL;
}

#endif
