// SPDX-License-Identifier: MIT
/* The kernel probe: for the threads the library watches (those that made
 * hooked calls), time off CPU split into runnable and blocked, context
 * switches, migrations and user page faults; intervals off CPU longer than a
 * threshold go to a ring buffer. CO-RE: built once against vmlinux.h, loaded
 * on any kernel with BTF. */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "kernel.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by the loader before load. */
const volatile unsigned long long min_interval_ns = 1000000;
/* The program's pid namespace, where it is not the initial one (a container, unshare -p):
 * its thread ids (gettid) are the ones there, not the kernel's global ones. */
const volatile unsigned int pidns_inum = 0;

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 1024);
    __type(key, __u32);
    __type(value, struct nvs_thread);
} watched SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 256 * 1024);
} intervals SEC(".maps");

static void report(__u32 tid, struct nvs_thread *thread, __u64 now)
{
    if (now - thread->since_ns < min_interval_ns)
        return;
    struct nvs_offcpu_interval *record = bpf_ringbuf_reserve(&intervals, sizeof *record, 0);
    if (!record)
        return;
    record->start_ns = thread->since_ns;
    record->end_ns = now;
    record->tid = tid;
    record->state = thread->state;
    bpf_ringbuf_submit(record, 0);
}

/* TASK's thread id as the watched program sees it (the key of `watched`): the global id,
 * or in a nested pid namespace the id in it, and 0 for a task outside that namespace. */
static __u32 tid_of(struct task_struct *task)
{
    if (!pidns_inum)
        return BPF_CORE_READ(task, pid);
    struct pid *pid = BPF_CORE_READ(task, thread_pid);
    unsigned int level = BPF_CORE_READ(pid, level);
    struct upid upid;
    if (bpf_core_read(&upid, sizeof upid, &pid->numbers[level]) != 0)
        return 0;
    if (BPF_CORE_READ(upid.ns, ns.inum) != pidns_inum)
        return 0;
    return (__u32)upid.nr;
}

static __u32 current_tid(void)
{
    if (!pidns_inum)
        return (__u32)bpf_get_current_pid_tgid();
    return tid_of((struct task_struct *)bpf_get_current_task());
}

/* The task's state word: __state since 5.14, state before. */
static long task_state(struct task_struct *task)
{
    struct task_struct___old {
        long state;
    } *old = (void *)task;
    if (bpf_core_field_exists(task->__state))
        return BPF_CORE_READ(task, __state);
    return BPF_CORE_READ(old, state);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
    __u64 now = bpf_ktime_get_ns();
    __u32 tid = tid_of(prev);
    struct nvs_thread *thread = tid ? bpf_map_lookup_elem(&watched, &tid) : NULL;
    if (thread) {
        /* Switched out while off CPU by the probe's account: the kernel did not report
         * a switch in (some kernels leave out the switches of tasks they hide from
         * tracing, a virtual machine's agent say), nor maybe the wake-up before it. */
        if (thread->state != NVS_THREAD_RUNNING)
            __sync_fetch_and_add(&thread->figures.unseen, 1);
        /* Preempted, or yielding while still runnable (state 0): involuntary. */
        if (preempt || task_state(prev) == 0) {
            __sync_fetch_and_add(&thread->figures.involuntary, 1);
            thread->state = NVS_THREAD_RUNNABLE;
        } else {
            __sync_fetch_and_add(&thread->figures.voluntary, 1);
            thread->state = NVS_THREAD_BLOCKED;
        }
        thread->since_ns = now;
    }
    tid = tid_of(next);
    thread = tid ? bpf_map_lookup_elem(&watched, &tid) : NULL;
    if (!thread || !thread->since_ns)
        return 0; /* not watched, or not switched out since it was */
    if (thread->state == NVS_THREAD_RUNNING) {
        __sync_fetch_and_add(&thread->figures.unseen, 1); /* its switch out was not seen */
        return 0;
    }
    __u64 spent = now - thread->since_ns;
    if (thread->state == NVS_THREAD_RUNNABLE)
        __sync_fetch_and_add(&thread->figures.runnable_ns, spent);
    else
        __sync_fetch_and_add(&thread->figures.blocked_ns, spent);
    report(tid, thread, now);
    thread->state = NVS_THREAD_RUNNING;
    return 0;
}

/* Woken: the blocked part ends, the wait for a CPU begins. */
static void woken(struct task_struct *task)
{
    __u64 now = bpf_ktime_get_ns();
    __u32 tid = tid_of(task);
    struct nvs_thread *thread = tid ? bpf_map_lookup_elem(&watched, &tid) : NULL;
    if (!thread || thread->state != NVS_THREAD_BLOCKED)
        return;
    __sync_fetch_and_add(&thread->figures.blocked_ns, now - thread->since_ns);
    report(tid, thread, now);
    thread->state = NVS_THREAD_RUNNABLE;
    thread->since_ns = now;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup, struct task_struct *task)
{
    woken(task);
    return 0;
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(on_migrate, struct task_struct *task, int cpu)
{
    __u32 tid = tid_of(task);
    struct nvs_thread *thread = tid ? bpf_map_lookup_elem(&watched, &tid) : NULL;
    if (thread)
        __sync_fetch_and_add(&thread->figures.migrations, 1);
    return 0;
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(on_fault, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
    __u32 tid = current_tid();
    struct nvs_thread *thread = bpf_map_lookup_elem(&watched, &tid);
    if (thread)
        __sync_fetch_and_add(&thread->figures.faults, 1);
    return 0;
}

/* USB, where the kernel has it: a URB's time from the host controller driver
 * taking it to handing it back. These attach only when both functions are in
 * the kernel's BTF (the loader checks); elsewhere they are not loaded. */
struct urb_start {
    __u64 submitted_ns;
    __u32 tid;
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, __u64);
    __type(value, struct urb_start);
} urbs SEC(".maps");

SEC("fentry/usb_hcd_submit_urb")
int BPF_PROG(on_urb_submit, void *urb)
{
    __u32 tid = current_tid();
    if (!bpf_map_lookup_elem(&watched, &tid))
        return 0;
    __u64 key = (__u64)urb;
    struct urb_start start = { bpf_ktime_get_ns(), tid };
    bpf_map_update_elem(&urbs, &key, &start, BPF_ANY);
    return 0;
}

SEC("fentry/__usb_hcd_giveback_urb")
int BPF_PROG(on_urb_giveback, void *urb)
{
    __u64 key = (__u64)urb;
    struct urb_start *start = bpf_map_lookup_elem(&urbs, &key);
    if (!start)
        return 0;
    __u32 tid = start->tid;
    __u64 spent = bpf_ktime_get_ns() - start->submitted_ns;
    bpf_map_delete_elem(&urbs, &key);
    struct nvs_thread *thread = bpf_map_lookup_elem(&watched, &tid);
    if (thread) {
        __sync_fetch_and_add(&thread->figures.urbs, 1);
        __sync_fetch_and_add(&thread->figures.urb_ns, spent);
    }
    return 0;
}
