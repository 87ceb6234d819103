/* The recorder's clock (clock.h): when lines may be made, and making them. */
#define _GNU_SOURCE
#include "clock.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "resolve.h"
#include "sys.h"

__thread struct nvs_clock_line nvs_clock_line __attribute__((tls_model("initial-exec")));

#define WINDOW_NS 100000000ull   /* a line holds for 100 ms at most ... */
#define MEASURED_SHARE 4u        /* ... and a quarter of the time its rate was measured over */
#define FIRST_RATE_NS 1000000ull /* no line before the rate has 1 ms behind it */
#define AHEAD_MAX_NS 1000000ull  /* an old line ahead by more: the kernel's clock jumped */

enum { TSC_UNASKED, TSC_ALLOWED, TSC_REFUSED };

uint64_t nvs_clock_read(clockid_t clock)
{
    struct timespec now = { 0, 0 };
    if (nvs_clock_line.refused == TSC_REFUSED) {
        int saved_errno = errno;
        syscall(SYS_clock_gettime, clock, &now);
        errno = saved_errno;
    } else {
        clock_gettime(clock, &now);
    }
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

#if defined(NVS_CLOCK_COUNTER)

/* The rate's baseline: the TSC and the clock read together when recording
 * began; every anchor measures the rate from it. Set once, before any thread
 * reads it (nvs_clock_enable runs before the recorder's first event). */
static struct {
    _Atomic bool usable;
    uint64_t tsc;
    uint64_t ns;
} baseline;

/* The TSC and CLOCK_MONOTONIC at one moment: the TSC read on both sides of
 * clock_gettime, the midpoint taken, of the tightest of a few tries (a read
 * that was slow, cold or interrupted, would put the midpoint microseconds off,
 * and the rate measured from it with it). */
#define READ_TRIES 4

static void read_together(uint64_t *tsc, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    *tsc = *ns = 0;
    for (int i = 0; i < READ_TRIES; i++) {
        uint64_t before = nvs_clock_counter();
        uint64_t now = nvs_clock_read(CLOCK_MONOTONIC);
        uint64_t after = nvs_clock_counter();
        if (after - before < best) {
            best = after - before;
            *tsc = before + (after - before) / 2;
            *ns = now;
        }
    }
}

/* The kernel keeps CLOCK_MONOTONIC with the counter: then it is invariant
 * and in step across CPUs (the kernel changes clocksource otherwise). */
#if defined(__x86_64__)
#define COUNTER_CLOCKSOURCE "tsc\n"
#else
#define COUNTER_CLOCKSOURCE "arch_sys_counter\n"
#endif

static bool kernel_clock_is_counter(void)
{
    int fd = nvs_sys_open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                          O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return false;
    char name[32] = { 0 };
    ssize_t length = nvs_sys_read(fd, name, sizeof name - 1);
    nvs_sys_close(fd);
    return length == (ssize_t)strlen(COUNTER_CLOCKSOURCE) &&
        !memcmp(name, COUNTER_CLOCKSOURCE, strlen(COUNTER_CLOCKSOURCE));
}

#if defined(__aarch64__)
/* The generic timer's stated frequency, in ticks per second: set by the
 * firmware, and 0 (or wrong) where it forgot. A line is made only where the
 * rate measured against CLOCK_MONOTONIC agrees with it, to 1/64. */
static uint64_t counter_frequency;

static bool rate_agrees(uint64_t measured_ns, uint64_t measured_ticks)
{
    if (!counter_frequency)
        return false;
    unsigned __int128 stated_ns = (unsigned __int128)measured_ticks * 1000000000ull /
        counter_frequency;
    unsigned __int128 difference = stated_ns > measured_ns ? stated_ns - measured_ns
                                                           : measured_ns - stated_ns;
    return difference <= measured_ns / 64;
}

static void read_counter_frequency(void)
{
    uint64_t frequency;
    __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(frequency));
    counter_frequency = frequency & 0xffffffffu; /* its upper half is reserved */
}
#else
/* The TSC's frequency is not stated: the rate measured is the rate. */
static bool rate_agrees(uint64_t measured_ns, uint64_t measured_ticks)
{
    (void)measured_ns;
    (void)measured_ticks;
    return true;
}

static void read_counter_frequency(void)
{
}
#endif

/* Some library before libc defines clock_gettime (a fake clock): the
 * recorder must read that one. */
static bool clock_interposed(void)
{
    void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (!libc)
        return true;
    void *own = nvs_dlsym(libc, "clock_gettime");
    dlclose(libc);
    return !own || nvs_dlsym(RTLD_DEFAULT, "clock_gettime") != own;
}

void nvs_clock_enable(void)
{
    if (atomic_load(&baseline.usable))
        return;
    int saved_errno = errno;
    if (kernel_clock_is_counter() && !clock_interposed()) {
        read_counter_frequency();
        read_together(&baseline.tsc, &baseline.ns);
        atomic_store(&baseline.usable, true);
    }
    errno = saved_errno;
}

void nvs_clock_refuse_thread(void)
{
    struct nvs_clock_line *line = &nvs_clock_line;
    line->refused = TSC_REFUSED;
    atomic_signal_fence(memory_order_seq_cst);
    line->ticks = 0;
}

/* May this thread read the TSC? Asked once per thread (a new thread inherits
 * its creator's PR_SET_TSC); its own later prctl calls refuse it. */
static bool thread_may_read_tsc(struct nvs_clock_line *line)
{
    if (line->refused != TSC_UNASKED)
        return line->refused == TSC_ALLOWED;
#if defined(__aarch64__)
    /* No per-thread switch: the kernel allows every thread the counter or none
     * (the clocksource check), and PR_GET_TSC is x86's alone. */
    bool may = true;
#else
    int saved_errno = errno, mode = 0;
    /* The system call itself: this may run in a signal handler, and the
     * library's prctl wrapper may not have resolved libc's yet. */
    bool may = syscall(SYS_prctl, PR_GET_TSC, &mode, 0, 0, 0) == 0 && mode == PR_TSC_ENABLE;
    errno = saved_errno;
#endif
    line->refused = may ? TSC_ALLOWED : TSC_REFUSED;
    return may;
}

uint64_t nvs_clock_anchor(void)
{
    struct nvs_clock_line *line = &nvs_clock_line;
    if (line->busy || !thread_may_read_tsc(line) ||
        !atomic_load_explicit(&baseline.usable, memory_order_acquire))
        return nvs_clock_read(CLOCK_MONOTONIC);
    /* A signal handler that interrupts from here on reads clock_gettime and
     * leaves the line alone; a reader sees ticks 0 until the line is whole. */
    line->busy = 1;
    atomic_signal_fence(memory_order_seq_cst);
    line->ticks = 0;
    atomic_signal_fence(memory_order_seq_cst);
    uint64_t tsc, ns;
    read_together(&tsc, &ns);
    uint64_t given = ns;
    /* The old line may have run a little ahead of the kernel's clock: the
     * thread's time never goes back, the new line starts where it ended. */
    if (line->rate && tsc - line->tsc0 < 2 * line->window) {
        uint64_t ahead = line->ns0 +
            (uint64_t)(((unsigned __int128)(tsc - line->tsc0) * line->rate) >> 32);
        if (ahead > ns && ahead - ns < AHEAD_MAX_NS)
            given = ahead;
    }
    /* No line while the rate has too little time behind it, or where the
     * counter went back (a suspend that reset it). */
    if (ns >= baseline.ns + FIRST_RATE_NS && tsc > baseline.tsc) {
        uint64_t measured_ns = ns - baseline.ns, measured_ticks = tsc - baseline.tsc;
        uint64_t rate = (uint64_t)(((unsigned __int128)measured_ns << 32) / measured_ticks);
        uint64_t window_ns = measured_ns / MEASURED_SHARE < WINDOW_NS ? measured_ns / MEASURED_SHARE
                                                                      : WINDOW_NS;
        if (rate && rate_agrees(measured_ns, measured_ticks)) {
            line->tsc0 = tsc;
            line->ns0 = given;
            line->rate = rate;
            line->window = (uint64_t)(((unsigned __int128)window_ns << 32) / rate);
            atomic_signal_fence(memory_order_seq_cst);
            line->ticks = line->window;
        }
    }
    atomic_signal_fence(memory_order_seq_cst);
    line->busy = 0;
    return given;
}

#else

void nvs_clock_enable(void)
{
}
void nvs_clock_refuse_thread(void)
{
}
uint64_t nvs_clock_anchor(void)
{
    return nvs_clock_read(CLOCK_MONOTONIC);
}

#endif
