/* libfakeclock.so: a preload whose clock_gettime(CLOCK_MONOTONIC) is a counter, so that
 * two runs of a deterministic program get the same times (test/test_trace_pftrace.py
 * compares the JSON and the binary trace of two such runs). Each call returns
 * NVS_FAKECLOCK_BASE (1000 s) + 1000 ns times the calls before it in the process;
 * the other clocks are the real ones (dlsym RTLD_NEXT). The count goes to stderr at
 * exit when NVS_FAKECLOCK_REPORT is set, to see how many reads a run made. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NVS_FAKECLOCK_BASE 1000000000000ull
#define NVS_FAKECLOCK_STEP 1000ull

static _Atomic uint64_t calls;

int clock_gettime(clockid_t clock, struct timespec *out)
{
    if (clock == CLOCK_MONOTONIC) {
        uint64_t ns = NVS_FAKECLOCK_BASE + NVS_FAKECLOCK_STEP * atomic_fetch_add(&calls, 1);
        out->tv_sec = (time_t)(ns / 1000000000ull);
        out->tv_nsec = (long)(ns % 1000000000ull);
        return 0;
    }
    static int (*real)(clockid_t, struct timespec *);
    if (!real)
        real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    return real(clock, out);
}

__attribute__((destructor)) static void report(void)
{
    if (getenv("NVS_FAKECLOCK_REPORT"))
        fprintf(stderr, "fakeclock: %llu reads\n", (unsigned long long)atomic_load(&calls));
}
