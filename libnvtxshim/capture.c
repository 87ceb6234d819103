/* The capture trigger state machine (NVTXSHIM_CAPTURE).
 *
 * A capture is open or closed. The triggers decide when it changes:
 *   frames:S[+C][/P]  at frame boundaries (nvs_capture_on_frame): it opens
 *                     before frame S begins and closes after frame S+C-1 ends,
 *                     again every P frames with the repeat form;
 *   calls:NAME:S[+C]  it opens before the S-th program-level call of NAME and
 *                     closes after the (S+C-1)-th ends;
 *   time:D[+L]        from the first hooked call: open at D, closed at D+L;
 *   signal[:SIG]      each signal toggles it; the handler only counts, and the
 *                     next hooked call acts.
 * The time and signal triggers act inside hooked calls (at frame boundaries
 * when frames are counted), so a program that makes none sees the change at
 * its next one (or at exit).
 *
 * Opening starts an NVTX range whose registered message and domain come from
 * NVTXSHIM_CAPTURE_NAME (nsys -c nvtx -p MESSAGE@DOMAIN) and/or calls the
 * driver's cuProfilerStart (nsys -c cudaProfilerApi), the latter only in a
 * context the program made current: the library never initialises CUDA. */
#define _GNU_SOURCE
#include "capture.h"
#include "spin.h"

#include <errno.h>
#include <cuda.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "emit.h"
#include "log.h"
#include "resolve.h"

static struct {
    bool open;
    nvtxRangeId_t range;
    struct nvs_named_range name;
    bool name_ready;
    /* calls: the window's last call ended while it was not open: its first
     * call, on another thread, has counted itself but not yet opened it. */
    bool last_call_ended;
} state;
/* Taken only when the capture changes (or for a signal toggle): a handful of
 * times per run, never per call. */
static struct nvs_spin state_lock;

static _Atomic uint64_t calls_seen;       /* calls:NAME */
static _Atomic uint64_t first_call_ns;    /* time: */
static atomic_bool time_over;             /* time: the window has closed for good */
static _Atomic unsigned signals_received; /* signal: written by the handler */
static _Atomic unsigned signals_handled;
/* The program's handler for the trigger's signal, kept behind ours: the one it
 * had when the trigger was installed, then whatever it sets (hooks/process.c
 * hands sigaction and signal for that signal to us). Two slots, so the
 * handler never reads one being written. */
static struct sigaction chained[2];
static _Atomic int chained_slot;
static atomic_bool signal_installed;

/* False only inside a signal handler that interrupted this thread while it
 * held the lock: the change is left out rather than waited for forever. */
static bool lock(void)
{
    return nvs_spin_lock(&state_lock);
}

static void unlock(void)
{
    nvs_spin_unlock(&state_lock);
}

/* cuProfilerStart/Stop for -c cudaProfilerApi, in a context the program made:
 * only when libcuda is loaded and the calling thread has a current context.
 * When it has none (the frame boundary is on a USB thread, say), the call
 * waits for the next CUDA copy hooked on a thread that has one. The library
 * never makes or activates a context itself. */
enum { PROFILER_NONE, PROFILER_START, PROFILER_STOP };
static _Atomic int profiler_pending;

/* The driver's functions, looked up until libcuda is there, then kept, or
 * kept as missing (nvs_find_function_once). */
typedef CUresult (*get_current_fn)(CUcontext *);
typedef CUresult (*profiler_fn)(void);
static _Atomic(void *) get_current, profiler_start, profiler_stop;

static bool profiler_now(bool start)
{
    /* Not loaded: then there is no context either. */
    if (!atomic_load_explicit(&get_current, memory_order_relaxed) &&
        !nvs_library_loaded("libcuda.so"))
        return false;
    get_current_fn current = (get_current_fn)nvs_find_function_once(&get_current, "libcuda.so.1",
                                                                    "cuCtxGetCurrent");
    profiler_fn found_start = (profiler_fn)nvs_find_function_once(&profiler_start, "libcuda.so.1",
                                                                  "cuProfilerStart");
    profiler_fn found_stop = (profiler_fn)nvs_find_function_once(&profiler_stop, "libcuda.so.1",
                                                                 "cuProfilerStop");
    if (!current || !found_start || !found_stop)
        return false;
    CUcontext context = NULL;
    if (current(&context) != CUDA_SUCCESS || !context)
        return false;
    CUresult result = (start ? found_start : found_stop)();
    const char *name = start ? "cuProfilerStart" : "cuProfilerStop";
    /* A refusal (the profiler disabled, a driver too old) means nsys -c
     * cudaProfilerApi never sees the window: said once; every answer at debug. */
    static atomic_bool refusal_said;
    if (result != CUDA_SUCCESS && !atomic_exchange(&refusal_said, true))
        nvs_log_info("NVTXSHIM_CAPTURE_VIA: the driver's %s returned CUDA error %d, so nsys -c "
                     "cudaProfilerApi may not see the capture window\n",
                     name, (int)result);
    else
        nvs_log_debug("capture: %s returned %d\n", name, (int)result);
    return true;
}

static void cuda_profiler(bool start)
{
    int saved_errno = errno;
    if (profiler_now(start))
        atomic_store(&profiler_pending, PROFILER_NONE);
    else if (!start && atomic_load(&profiler_pending) == PROFILER_START)
        atomic_store(&profiler_pending, PROFILER_NONE); /* no CUDA work in the window */
    else
        atomic_store(&profiler_pending, start ? PROFILER_START : PROFILER_STOP);
    errno = saved_errno;
}

void nvs_capture_on_cuda_call(void)
{
    int pending = atomic_load_explicit(&profiler_pending, memory_order_relaxed);
    if (__builtin_expect(pending == PROFILER_NONE, 1))
        return;
    int saved_errno = errno;
    if (profiler_now(pending == PROFILER_START))
        atomic_compare_exchange_strong(&profiler_pending, &pending, PROFILER_NONE);
    errno = saved_errno;
}

/* The capture range's domain and registered message. Called with the state
 * lock held: at activation, and again at opening if NVTX was not ready then. */
static void prepare_name(const struct nvs_config *config)
{
    if (!state.name_ready)
        state.name_ready = nvs_named_range_prepare(&state.name, config->capture_domain,
                                                   config->capture_message);
}

/* Called with the state lock held. */
static void open_capture(void)
{
    const struct nvs_config *config = nvs_config();
    if (state.open)
        return;
    int saved_errno = errno;
    state.open = true;
    if (config->capture_via != NVS_VIA_CUDA) {
        prepare_name(config);
        if (state.name_ready)
            state.range = nvs_named_range_start(&state.name, NVS_COLOR_CAPTURE);
    }
    if (config->capture_via != NVS_VIA_NVTX)
        cuda_profiler(true);
    errno = saved_errno;
}

static void close_capture(void)
{
    const struct nvs_config *config = nvs_config();
    if (!state.open)
        return;
    int saved_errno = errno;
    state.open = false;
    if (config->capture_via != NVS_VIA_NVTX)
        cuda_profiler(false);
    if (config->capture_via != NVS_VIA_CUDA && state.name_ready)
        nvs_named_range_end(&state.name, state.range);
    errno = saved_errno;
}

/* time: open at DELAY after the first hooked call, closed DURATION later. */
static void evaluate_time(const struct nvs_config *config, uint64_t now)
{
    uint64_t first = atomic_load_explicit(&first_call_ns, memory_order_relaxed);
    if (!first || atomic_load_explicit(&time_over, memory_order_relaxed) ||
        now < first + config->capture_delay_ns)
        return;
    if (!lock())
        return;
    /* Another thread may have closed the window for good since the check above. */
    if (!state.open && !atomic_load(&time_over))
        open_capture();
    if (state.open && config->capture_duration_ns &&
        now >= first + config->capture_delay_ns + config->capture_duration_ns) {
        close_capture();
        atomic_store(&time_over, true);
    }
    unlock();
}

/* signal: each signal received since the last look toggles the capture. */
static void evaluate_signals(void)
{
    unsigned received = atomic_load_explicit(&signals_received, memory_order_relaxed);
    if (received == atomic_load_explicit(&signals_handled, memory_order_relaxed))
        return;
    if (!lock())
        return;
    unsigned handled = atomic_load(&signals_handled);
    if ((received - handled) & 1) {
        if (state.open)
            close_capture();
        else
            open_capture();
    }
    atomic_store(&signals_handled, received);
    unlock();
}

/* With frames counted, the time and signal triggers act at the next frame
 * boundary, so that a capture holds whole frames; otherwise at the next call. */
void nvs_capture_on_frame(uint64_t ended, uint64_t beginning)
{
    const struct nvs_config *config = nvs_config();
    switch (config->capture) {
    case NVS_CAPTURE_FRAMES: {
        uint64_t first = config->capture_start, count = config->capture_count;
        uint64_t period = config->capture_period;
        if (!lock())
            return;
        if (state.open && ended >= first) {
            uint64_t offset = ended - first;
            if (period ? offset % period == count - 1 : offset == count - 1)
                close_capture();
        }
        if (!state.open && beginning >= first) {
            uint64_t offset = beginning - first;
            if (period ? offset % period == 0 : offset == 0)
                open_capture();
        }
        unlock();
        return;
    }
    case NVS_CAPTURE_TIME:
        if (beginning)
            evaluate_time(config, nvs_now_ns());
        return;
    case NVS_CAPTURE_SIGNAL:
        if (beginning)
            evaluate_signals();
        return;
    default: return;
    }
}

bool nvs_capture_on_call(enum nvs_hook_id id)
{
    const struct nvs_config *config = nvs_config();
    switch (config->capture) {
    case NVS_CAPTURE_OFF:
    case NVS_CAPTURE_FRAMES: return false;
    case NVS_CAPTURE_CALLS: {
        if ((int)id != config->capture_call)
            return false;
        uint64_t call = atomic_fetch_add_explicit(&calls_seen, 1, memory_order_relaxed) + 1;
        uint64_t last = config->capture_start + config->capture_count - 1;
        bool after = false;
        if (call == config->capture_start) {
            if (!lock())
                return false;
            open_capture();
            /* The last call ended before this one, the first, could open the
             * window (a thread between its count and the lock): the window
             * holds this call and closes when it ends, not at exit. */
            bool late = state.last_call_ended;
            after = late;
            unlock();
            if (late)
                nvs_log_info("capture: call %" PRIu64 " of %s ended before call %" PRIu64
                             ", on another "
                             "thread, opened the window: it holds call %" PRIu64 " alone\n",
                             last, nvs_hook_name(id), call, call);
        }
        return after || call == last; /* nvs_capture_after_call when it ends */
    }
    case NVS_CAPTURE_TIME: {
        if (atomic_load_explicit(&time_over, memory_order_relaxed))
            return false;
        uint64_t now = nvs_now_ns(), expected = 0;
        atomic_compare_exchange_strong(&first_call_ns, &expected, now);
        if (config->frame == NVS_FRAME_OFF)
            evaluate_time(config, now);
        return false;
    }
    case NVS_CAPTURE_SIGNAL:
        if (config->frame == NVS_FRAME_OFF)
            evaluate_signals();
        return false;
    }
    return false;
}

void nvs_capture_after_call(void)
{
    if (!lock())
        return;
    if (state.open)
        close_capture();
    else
        state.last_call_ended = true;
    unlock();
}

static void on_signal(int number, siginfo_t *info, void *context)
{
    atomic_fetch_add_explicit(&signals_received, 1, memory_order_relaxed);
    const struct sigaction *program = &chained[atomic_load(&chained_slot)];
    if (program->sa_flags & SA_SIGINFO) {
        if (program->sa_sigaction)
            program->sa_sigaction(number, info, context);
    } else if (program->sa_handler != SIG_DFL && program->sa_handler != SIG_IGN) {
        program->sa_handler(number);
    }
}

/* Ours, in front of PROGRAM's: its mask and, where it has a handler, its
 * restart and stack flags, so its system calls see EINTR as before; with no
 * handler, restart (the default action never returned to the program). While
 * the program ignores the signal (nohup, SIG_IGN set before or after the
 * library loaded), the kernel keeps ignoring it: a handler of ours would
 * interrupt the program's system calls, and a child it execs would no longer
 * inherit the ignore. The trigger cannot fire then, and one line says so. */
static void install_in_front_of(int number, const struct sigaction *program)
{
    __typeof__(&sigaction) real = NVS_REAL(sigaction);
    if (!(program->sa_flags & SA_SIGINFO) && program->sa_handler == SIG_IGN) {
        if (real)
            real(number, program, NULL);
        static atomic_bool said;
        if (!atomic_exchange(&said, true))
            nvs_log_info("NVTXSHIM_CAPTURE=signal: the program ignores SIG%s, so the capture "
                         "cannot be toggled while it does (it stays ignored)\n",
                         nvs_config_signal_name(number));
        return;
    }
    struct sigaction ours;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = on_signal;
    ours.sa_mask = program->sa_mask;
    bool has_handler = (program->sa_flags & SA_SIGINFO) ||
        (program->sa_handler != SIG_DFL && program->sa_handler != SIG_IGN);
    ours.sa_flags = SA_SIGINFO |
        (has_handler ? program->sa_flags & (SA_RESTART | SA_ONSTACK) : SA_RESTART);
    if (real)
        real(number, &ours, NULL);
}

static void install_signal(int number)
{
    __typeof__(&sigaction) real = NVS_REAL(sigaction);
    if (!real || real(number, NULL, &chained[0]) != 0)
        return;
    atomic_store(&chained_slot, 0);
    install_in_front_of(number, &chained[0]);
    atomic_store_explicit(&signal_installed, true, memory_order_release);
}

bool nvs_capture_keeps_signal(int number)
{
    return atomic_load_explicit(&signal_installed, memory_order_acquire) &&
        number == nvs_config()->capture_signal;
}

int nvs_capture_program_sigaction(int number, const struct sigaction *action, struct sigaction *old)
{
    int slot = atomic_load(&chained_slot);
    if (old)
        *old = chained[slot];
    if (action) {
        chained[!slot] = *action;
        atomic_store(&chained_slot, !slot);
        install_in_front_of(number, action);
    }
    return 0;
}

/* The nsys options that match the configuration. */
static void describe(const struct nvs_config *config)
{
    char what[160], options[NVS_NAME_MAX * 2 + 96];
    bool repeats = config->capture == NVS_CAPTURE_SIGNAL ||
        (config->capture == NVS_CAPTURE_FRAMES && config->capture_period);
    switch (config->capture) {
    case NVS_CAPTURE_FRAMES:
        if (config->capture_period)
            snprintf(what, sizeof what,
                     "frames %" PRIu64 "-%" PRIu64 ", then every %" PRIu64 " frames",
                     config->capture_start, config->capture_start + config->capture_count - 1,
                     config->capture_period);
        else
            snprintf(what, sizeof what, "frames %" PRIu64 "-%" PRIu64, config->capture_start,
                     config->capture_start + config->capture_count - 1);
        break;
    case NVS_CAPTURE_CALLS:
        snprintf(what, sizeof what, "calls %" PRIu64 "-%" PRIu64 " of %s", config->capture_start,
                 config->capture_start + config->capture_count - 1,
                 nvs_hook_name((enum nvs_hook_id)config->capture_call));
        break;
    case NVS_CAPTURE_TIME:
        if (config->capture_duration_ns)
            snprintf(what, sizeof what, "%.3f s to %.3f s after the first hooked call",
                     (double)config->capture_delay_ns / 1e9,
                     (double)(config->capture_delay_ns + config->capture_duration_ns) / 1e9);
        else
            snprintf(what, sizeof what, "from %.3f s after the first hooked call to the end",
                     (double)config->capture_delay_ns / 1e9);
        break;
    default: {
        const char *name = nvs_config_signal_name(config->capture_signal);
        snprintf(what, sizeof what, "toggled by each SIG%s (kill -%s %d)", name, name,
                 (int)getpid());
        break;
    }
    }
    const char *end = repeats ? "--capture-range-end=repeat" : "--capture-range-end=stop";
    if (config->capture_via == NVS_VIA_CUDA)
        snprintf(options, sizeof options, "-c cudaProfilerApi %s", end);
    else if (config->capture_via == NVS_VIA_NVTX)
        snprintf(options, sizeof options, "-c nvtx -p %s@%s %s", config->capture_message,
                 config->capture_domain, end);
    else
        snprintf(options, sizeof options, "-c nvtx -p %s@%s %s (or -c cudaProfilerApi %s)",
                 config->capture_message, config->capture_domain, end, end);
    nvs_log_info("capture: %s; nsys profile options: %s\n", what, options);
}

void nvs_capture_activate(void)
{
    const struct nvs_config *config = nvs_config();
    if (config->capture == NVS_CAPTURE_OFF)
        return;
    if (config->capture == NVS_CAPTURE_SIGNAL)
        install_signal(config->capture_signal);
    if (config->capture_via != NVS_VIA_CUDA) {
        if (!lock())
            return;
        prepare_name(config);
        unlock();
    }
    describe(config);
}

void nvs_capture_finish(void)
{
    if (!lock())
        return;
    close_capture();
    unlock();
}

void nvs_capture_reset_after_fork(void)
{
    nvs_spin_reset(&state_lock);
    state.open = false;
    state.last_call_ended = false;
    atomic_store(&calls_seen, 0);
    atomic_store(&first_call_ns, 0);
    atomic_store(&time_over, false);
    atomic_store(&profiler_pending, PROFILER_NONE);
    atomic_store(&signals_handled, atomic_load(&signals_received));
}
