/* The recorder's clock (libnvtxshim/clock.c) on its own: after nvs_clock_enable, each read
 * of nvs_clock_ns lies between two clock_gettime(CLOCK_MONOTONIC) reads made around it,
 * within SLACK_NS and the counter's own step, and the reads never go back; reads come from
 * the counter's line (the TSC on x86-64, cntvct_el0 on aarch64), not only from clock_gettime.
 *
 *     test_clock [MILLISECONDS]      (default 300: many windows, the line anchored again
 *                                     as its window grows from a quarter of a millisecond)
 *
 * Prints the figures, then the unit tests' summary line (check.h). The line is made only
 * where the kernel keeps CLOCK_MONOTONIC with the counter (its clocksource): under
 * qemu-aarch64 the test runs with a -L prefix whose clocksource file says
 * "arch_sys_counter" (test/test_aarch64.py). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "clock.h"
#include "resolve.h"

/* test/test_clock.py's bound for the line's error on the TSC. */
#define SLACK_NS 200

/* The one function of the rest of the library clock.c calls. */
void *nvs_dlsym(void *handle, const char *name)
{
    return dlsym(handle, name);
}

static uint64_t monotonic_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

#if defined(NVS_CLOCK_COUNTER)
/* The counter's smallest step seen, in nanoseconds at RATE (ns per tick << 32): a line
 * read off a counter can be no finer than the counter (qemu's moves by microseconds). */
static uint64_t counter_step_ns(uint64_t rate)
{
    uint64_t smallest = UINT64_MAX;
    for (int i = 0; i < 10000; i++) {
        uint64_t first = nvs_clock_counter(), second;
        while ((second = nvs_clock_counter()) == first)
            continue;
        if (second - first < smallest)
            smallest = second - first;
    }
    return (uint64_t)(((unsigned __int128)smallest * rate) >> 32);
}
#endif

int main(int argc, char **argv)
{
    uint64_t duration_ns = (argc > 1 ? strtoull(argv[1], NULL, 10) : 300) * 1000000ull;
    nvs_clock_enable();
    uint64_t start = monotonic_ns(), last = 0, reads = 0, fast = 0, backwards = 0;
    /* the largest distance of a read before its lower bound and after its upper one */
    uint64_t early = 0, late = 0;
    for (uint64_t before = start; before - start < duration_ns; reads++) {
        before = monotonic_ns();
        _Bool from_line;
        uint64_t now = nvs_clock_try(&from_line);
        if (from_line)
            fast++;
        else
            now = nvs_clock_anchor();
        uint64_t after = monotonic_ns();
        if (now < before && before - now > early)
            early = before - now;
        if (now > after && now - after > late)
            late = now - after;
        backwards += now < last;
        last = now;
    }
    uint64_t step = 0;
#if defined(NVS_CLOCK_COUNTER)
    if (nvs_clock_line.rate)
        step = counter_step_ns(nvs_clock_line.rate);
#endif
    printf("reads %llu from the line %llu; early %llu ns, late %llu ns; counter step %llu ns\n",
           (unsigned long long)reads, (unsigned long long)fast, (unsigned long long)early,
           (unsigned long long)late, (unsigned long long)step);
    CHECK(fast > reads / 2);
    CHECK(backwards == 0);
    /* A line read off a counter that moves by STEP: each of its two anchors may be read up to a
     * step after the counter moved, and the slope between them carries that error on over the
     * window, up to two steps more. On the TSC a step is a fraction of a nanosecond; qemu's
     * counter moves by about a microsecond, where 40 runs here reached 2.1 steps. */
    CHECK(early <= SLACK_NS + 4 * step);
    CHECK(late <= SLACK_NS + 4 * step);
    return check_summary("clock");
}
