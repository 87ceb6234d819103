/* The recorder's clock: CLOCK_MONOTONIC nanoseconds, read from the CPU's
 * counter where the kernel itself keeps CLOCK_MONOTONIC with it: the time stamp
 * counter (TSC) on x86-64, the generic timer's virtual count (cntvct_el0) on
 * aarch64. "TSC" below stands for either.
 *
 * clock_gettime through the vDSO costs ~28 ns here (an ordered TSC read, the
 * kernel's sequence count, a conversion); a range reads the clock twice. A
 * plain TSC read costs ~11 ns. Each thread keeps a line, an anchor (the TSC
 * and clock_gettime read together) and a rate, and reads CLOCK_MONOTONIC off
 * it for a bounded window (at most 100 ms, and a quarter of the time the rate
 * was measured over), then anchors again: the line never drifts from the
 * kernel's clock by more than the rate's error over one window (tens of ns)
 * and NTP's slewing over one window (under a microsecond).
 *
 * The line is used only while recording (NVTXSHIM_TRACE), on x86-64 where the
 * kernel's clocksource is "tsc" (it trusts the counter as invariant and in
 * step across CPUs) and on aarch64 where it is "arch_sys_counter" (the kernel
 * reads the same count, and lets user space read it: its vDSO does) and the
 * counter's stated frequency (cntfrq_el0) agrees with the rate measured; where
 * no library in the process interposes clock_gettime
 * (a fake clock, libfaketime: the recorder then reads theirs), and on a
 * thread that may read the TSC (prctl PR_SET_TSC; the library's prctl wrapper
 * sees a thread forbid it). Everywhere else every read is clock_gettime.
 * docs/ARCHITECTURE.md, "The recorder's clock". */
#ifndef NVS_CLOCK_H
#define NVS_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "hidden.h"

/* NVS_CLOCK_COUNTER: this architecture has a counter the line may read, and
 * nvs_clock_counter reads it. */
#if defined(__x86_64__)
#include <x86intrin.h>
#define NVS_CLOCK_COUNTER 1
static inline __attribute__((always_inline)) uint64_t nvs_clock_counter(void)
{
    return __rdtsc();
}
#elif defined(__aarch64__)
#define NVS_CLOCK_COUNTER 1
/* The isb keeps the read from being taken early, ahead of the code before it,
 * as the kernel's own vDSO read does. */
static inline __attribute__((always_inline)) uint64_t nvs_clock_counter(void)
{
    uint64_t count;
    __asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(count));
    return count;
}
#endif

struct nvs_clock_line {
    uint64_t ticks;   /* TSC ticks the line holds for from tsc0; 0: not in use */
    uint64_t tsc0;    /* the anchor: the TSC ... */
    uint64_t ns0;     /* ... and CLOCK_MONOTONIC, read together */
    uint64_t rate;    /* nanoseconds per tick, << 32 */
    uint64_t window;  /* ticks, as made (ticks is 0 while an anchor is made) */
    uint32_t busy;    /* an anchor is being made (a signal handler leaves it be) */
    uint32_t refused; /* may this thread read the TSC: unasked, allowed, refused
                                 * (PR_SET_TSC) */
};
extern NVS_HIDDEN __thread struct nvs_clock_line nvs_clock_line
    __attribute__((tls_model("initial-exec")));

/* CLOCK_MONOTONIC from clock_gettime, and a new line for this thread when
 * its window has passed and the TSC may be used. */
uint64_t nvs_clock_anchor(void);

/* CLOCK any clock, read the way this thread may: where it forbade itself the
 * TSC, the vDSO (which reads it) would fault, and the system call serves. */
uint64_t nvs_clock_read(clockid_t clock);

/* Decided once, when recording begins: may lines be made (see above)? */
void nvs_clock_enable(void);
/* The calling thread is about to forbid itself the TSC (its prctl). */
void nvs_clock_refuse_thread(void);

/* CLOCK_MONOTONIC nanoseconds, now, from the thread's line where it holds;
 * FALSE in *FAST (and nothing read) where a line does not: the caller then
 * calls nvs_clock_anchor, out of its fast path. */
static inline __attribute__((always_inline)) uint64_t nvs_clock_try(_Bool *fast)
{
#if defined(NVS_CLOCK_COUNTER)
    struct nvs_clock_line *line = &nvs_clock_line;
    uint64_t window = line->ticks;
    if (__builtin_expect(window != 0, 1)) {
        uint64_t tsc0 = line->tsc0;
        atomic_signal_fence(memory_order_seq_cst);
        uint64_t ticks = nvs_clock_counter() - tsc0;
        if (__builtin_expect(ticks < window, 1)) {
            uint64_t ns = line->ns0 + (uint64_t)(((unsigned __int128)ticks * line->rate) >> 32);
            atomic_signal_fence(memory_order_seq_cst);
            /* A signal handler that made a new line meanwhile (nvs_clock_anchor)
             * changed tsc0, a later TSC: the anchor and the rate read here could
             * be of two lines, a time off by up to a window. */
            if (__builtin_expect(line->tsc0 == tsc0, 1)) {
                *fast = 1;
                return ns;
            }
        }
    }
#endif
    *fast = 0;
    return 0;
}

static inline uint64_t nvs_clock_ns(void)
{
    _Bool fast;
    uint64_t ns = nvs_clock_try(&fast);
    return fast ? ns : nvs_clock_anchor();
}

#endif
