/* The calls capture window (capture.c, NVTXSHIM_CAPTURE=calls:NAME:S+C) when its first and last
 * calls are on two threads and meet in the one order a scheduler rarely gives: the first call
 * has counted itself but not yet taken the state lock when the last call ends. The window used
 * to close before it opened (nothing was open), then open and stay open to exit: nsys -c nvtx
 * captured the rest of the run.
 *
 * capture.c is built for this test with a seam on the way into its state lock (spin.h's
 * NVS_SPIN_SEAM, here nvs_test_seam; mk/programs.mk): that is where the first call is held,
 * between its count and the lock, while the other thread makes the last call. Its system calls,
 * of which there are none, are renamed to nvs_test_syscall and counted. Everything else capture.c calls is
 * a stand-in below that counts what it is asked: the capture range's start and end, the lines
 * it says. Each case prints nothing but failures and a summary line; test_capture.py runs it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture.h"
#include "check.h"
#include "config.h"
#include "emit.h"
#include "log.h"
#include "resolve.h"

#define HOOK NVS_HOOK_ID(libusb_bulk_transfer)

/* ---- stand-ins for the rest of the library -------------------------------------------- */

static struct nvs_config config;
static atomic_int range_starts, range_ends;
static char said[512];

const struct nvs_config *nvs_config(void) { return &config; }
const char *nvs_config_signal_name(int number) { (void)number; return "USR1"; }
const char *nvs_hook_name(enum nvs_hook_id id) { return id == HOOK ? "libusb_bulk_transfer" : "?"; }
bool nvs_library_loaded(const char *prefix) { (void)prefix; return false; }
uint64_t nvs_now_ns(void) { return 0; }
_Atomic(void *) nvs_real_functions[NVS_HOOK_COUNT];
void *nvs_resolve_slow(enum nvs_hook_id id) { (void)id; return NULL; }

void *nvs_find_function_once(_Atomic(void *) *cache, const char *library, const char *name)
{
    (void)cache, (void)library, (void)name;
    return NULL;
}

bool nvs_named_range_prepare(struct nvs_named_range *range, const char *domain, const char *message)
{
    (void)range, (void)domain, (void)message;
    return true;
}

nvtxRangeId_t nvs_named_range_start(const struct nvs_named_range *range, uint32_t color)
{
    (void)range, (void)color;
    return (nvtxRangeId_t)atomic_fetch_add(&range_starts, 1) + 1;
}

void nvs_named_range_end(const struct nvs_named_range *range, nvtxRangeId_t id)
{
    (void)range, (void)id;
    atomic_fetch_add(&range_ends, 1);
}

static void say(const char *format, va_list arguments)
{
    size_t used = strlen(said);
    vsnprintf(said + used, sizeof said - used, format, arguments);
}

void nvs_log_info(const char *format, ...)
{
    va_list arguments;
    va_start(arguments, format);
    say(format, arguments);
    va_end(arguments);
}

void nvs_log_debug(const char *format, ...)
{
    (void)format;
}

/* ---- the seam: on the way into the state lock ------------------------------------------- */

static pthread_mutex_t gate_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_changed = PTHREAD_COND_INITIALIZER;
static bool held, released;       /* the held thread waits at the lock; it may go on */
static __thread bool hold_me;     /* this thread's next lock waits for the release */
static atomic_bool other_call;    /* capture.c made a system call: it has none */

long nvs_test_syscall(long number, ...);
long nvs_test_syscall(long number, ...)
{
    (void)number;
    atomic_store(&other_call, true);     /* CHECK's counts belong to the main thread */
    return -1;
}

void nvs_test_seam(void);
void nvs_test_seam(void)
{
    if (hold_me) {
        hold_me = false;
        pthread_mutex_lock(&gate_mutex);
        held = true;
        pthread_cond_broadcast(&gate_changed);
        while (!released)
            pthread_cond_wait(&gate_changed, &gate_mutex);
        pthread_mutex_unlock(&gate_mutex);
    }
}

/* ---- the program's calls, as the call path (hook.h) makes them ------------------------ */

/* One program-level call of the hook: the capture's look before it, its work after it. */
static void call(void)
{
    if (nvs_capture_on_call(HOOK))
        nvs_capture_after_call();
}

static void *held_call(void *unused)
{
    (void)unused;
    hold_me = true;
    call();
    return NULL;
}

/* Starts the window's first call on a new thread and returns when it is held at the lock. */
static pthread_t start_held_call(void)
{
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, held_call, NULL) == 0);
    pthread_mutex_lock(&gate_mutex);
    while (!held)
        pthread_cond_wait(&gate_changed, &gate_mutex);
    pthread_mutex_unlock(&gate_mutex);
    return thread;
}

/* Lets the held call take the lock, and waits for it to end. */
static void release_held_call(pthread_t thread)
{
    pthread_mutex_lock(&gate_mutex);
    released = true;
    pthread_cond_broadcast(&gate_changed);
    pthread_mutex_unlock(&gate_mutex);
    CHECK(pthread_join(thread, NULL) == 0);
}

/* A fresh window, calls START to START+COUNT-1, and nothing said or counted yet. */
static void fresh(uint64_t start, uint64_t count)
{
    nvs_capture_reset_after_fork();
    config.capture_start = start;
    config.capture_count = count;
    atomic_store(&range_starts, 0);
    atomic_store(&range_ends, 0);
    said[0] = '\0';
    held = released = false;
}

/* The window's first call (the FIRST-th) is held between its count and the lock on another
 * thread while this one makes the calls after it, up to the window's last. */
static void first_call_held_while_the_rest_end(uint64_t first, uint64_t count)
{
    fresh(first, count);
    for (uint64_t n = 1; n < first; n++)
        call();
    pthread_t thread = start_held_call();
    for (uint64_t n = 1; n < count; n++)
        call();                                     /* calls FIRST+1 .. the last */
    CHECK(atomic_load(&range_starts) == 0 && atomic_load(&range_ends) == 0);
    release_held_call(thread);
    /* It opened, and closed when the held call ended: not left open to exit. */
    CHECK(atomic_load(&range_starts) == 1);
    CHECK(atomic_load(&range_ends) == 1);
    char line[256];
    snprintf(line, sizeof line, "capture: call %llu of libusb_bulk_transfer ended before call %llu, "
             "on another thread, opened the window: it holds call %llu alone\n",
             (unsigned long long)(first + count - 1), (unsigned long long)first,
             (unsigned long long)first);
    CHECK(strcmp(said, line) == 0);
    /* Later calls change nothing, and the end of the run has nothing to close. */
    call();
    nvs_capture_finish();
    CHECK(atomic_load(&range_starts) == 1 && atomic_load(&range_ends) == 1);
}

/* The common order: the window opens at its first call and closes after its last, on one
 * thread, with nothing said. */
static void in_order(uint64_t first, uint64_t count)
{
    fresh(first, count);
    for (uint64_t n = 1; n < first + count - 1; n++) {
        call();
        CHECK(atomic_load(&range_starts) == (n >= first) && atomic_load(&range_ends) == 0);
    }
    call();
    CHECK(atomic_load(&range_starts) == 1 && atomic_load(&range_ends) == 1);
    call();
    nvs_capture_finish();
    CHECK(atomic_load(&range_starts) == 1 && atomic_load(&range_ends) == 1);
    CHECK(said[0] == '\0');
}

/* The first call is held while the window's later calls begin but none has ended: they wait for
 * nothing, the window opens late and closes after its last call as usual. */
static void first_call_held_while_the_last_begins(void)
{
    fresh(1, 2);
    pthread_t thread = start_held_call();
    CHECK(nvs_capture_on_call(HOOK));              /* the last call begins... */
    release_held_call(thread);                     /* ...the first opens and ends */
    CHECK(atomic_load(&range_starts) == 1 && atomic_load(&range_ends) == 0);
    nvs_capture_after_call();                      /* ...and the last ends */
    CHECK(atomic_load(&range_starts) == 1 && atomic_load(&range_ends) == 1);
    CHECK(said[0] == '\0');
}

int main(void)
{
    config.capture = NVS_CAPTURE_CALLS;
    config.capture_call = HOOK;
    config.capture_via = NVS_VIA_NVTX;
    in_order(1, 1);
    in_order(5, 4);
    first_call_held_while_the_rest_end(1, 2);
    first_call_held_while_the_rest_end(5, 4);
    first_call_held_while_the_last_begins();
    CHECK(!atomic_load(&other_call));
    return check_summary("capture");
}
