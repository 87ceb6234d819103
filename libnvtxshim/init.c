/* Load, exit and fork: the library's life cycle. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "devices.h"
#include "hooks/device_calls.h"
#include "config.h"
#include "frames.h"
#include "hook.h"
#include "init.h"
#include "kernel.h"
#include "log.h"
#include "recorder/record.h"
#include "resolve.h"

static atomic_bool messages_printed NVS_ONCE_DATA;

/* Another copy of the library came first (two paths in LD_PRELOAD, an
 * installed copy and a build's): this one stays out of the way. Its wrappers
 * pass every call straight through - the first copy's reach them through
 * RTLD_NEXT - so each call is traced once. */
static bool inert NVS_ONCE_DATA;
static char first_copy[NVS_PATH_MAX];

/* Bad variables and notices, printed once per process: at load where a hooked
 * library is already there, else at the first hooked call, so that shells,
 * compilers and nsys itself, which inherit LD_PRELOAD, stay silent. */
static void print_messages(void)
{
    if (atomic_exchange(&messages_printed, true))
        return;
    if (inert) {
        Dl_info self;
        nvs_log_info("another copy of the library is loaded first (%s): this one (%s) stays "
                     "inert and passes every call through\n", first_copy,
                     dladdr((void *)print_messages, &self) && self.dli_fname ? self.dli_fname : "?");
        return;
    }
    nvs_log_raw(nvs_config_messages());
    const struct nvs_config *config = nvs_config();
    nvs_capture_activate();
    nvs_kernel_activate();
    char shown[NVS_CONFIG_SHOWN_SIZE];
    if (config->trace_path[0] && !nvs_record_enabled())
        nvs_log_info("NVTXSHIM_TRACE=%s is not written: another NVTX tool is attached "
                     "(NVTX_INJECTION64_PATH=%s)\n", config->trace_path,
                     nvs_config_shown(shown, config->nvtx_injection_path,
                                      strlen(config->nvtx_injection_path)));
}

bool nvs_init_activate(void)
{
    print_messages();
    return !inert;
}

static int hook_enabled(enum nvs_hook_id id)
{
    const struct nvs_config *config = nvs_config();
    if (inert)
        return 0;
    if (id < NVS_TRACED_HOOK_COUNT)
        return (config->hooks & nvs_hook_group(id)) != 0;
    if (id == NVS_HOOK_ID(sigaction) || id == NVS_HOOK_ID(signal))
        return config->capture == NVS_CAPTURE_SIGNAL;
    return nvs_record_enabled();
}

/* Whether a library that a traced hook comes from is loaded already (the hook
 * tables name them, grouped, so only a change of library asks again). Asked
 * of the loaded objects' list in memory: dlopen(RTLD_NOLOAD) would search the
 * file system for each, in every process that inherits LD_PRELOAD. */
NVS_ONCE static bool any_hooked_library_loaded(void)
{
    /* The table lists a library's hooks together: each library once. */
    const char *libraries[NVS_TRACED_HOOK_COUNT];
    int count = 0;
    for (int id = 0; id < NVS_TRACED_HOOK_COUNT; id++) {
        const char *library = nvs_hook_table[id].library;
        /* libc is in every process: its device-file calls wake the library
         * only when the program opens a device of a rig (devices.c). */
        if ((count && (library == libraries[count - 1] || !strcmp(library, libraries[count - 1]))) ||
            !strcmp(library, "libc.so.6"))
            continue;
        libraries[count++] = library;
    }
    return nvs_any_library_loaded(libraries, count);
}

/* With NVTXSHIM_TRACE and no other NVTX tool, this library becomes the tool:
 * every NVTX instance in the process finds it through NVTX_INJECTION64_PATH. */
NVS_ONCE static void setup_recorder(const struct nvs_config *config)
{
    Dl_info self;
    if (!config->trace_path[0] || !dladdr((void *)setup_recorder, &self) || !self.dli_fname)
        return;
    /* A stale setting (a tool uninstalled, a path from another machine) names
     * no file: NVTX cannot load it, so the recorder takes its place. */
    bool stale = config->nvtx_injection_path[0] && access(config->nvtx_injection_path, F_OK) != 0;
    if (config->nvtx_injection_path[0] && !stale) {
        Dl_info other;
        void *handle = dlopen(config->nvtx_injection_path, RTLD_LAZY | RTLD_NOLOAD);
        void *entry = handle ? nvs_dlsym(handle, "InitializeInjectionNvtx2") : NULL;
        bool ours = entry && dladdr(entry, &other) &&
                    other.dli_fbase == self.dli_fbase;
        if (handle)
            dlclose(handle);
        if (!ours)
            return;
    } else {
        setenv("NVTX_INJECTION64_PATH", self.dli_fname, 1);
    }
    nvs_record_enable(config->trace_path);
    if (stale) {
        char note[2 * NVS_PATH_MAX + 128], shown[NVS_CONFIG_SHOWN_SIZE];
        snprintf(note, sizeof note, "NVTX_INJECTION64_PATH=%s names no file: NVTXSHIM_TRACE=%s "
                 "records instead", nvs_config_shown(shown, config->nvtx_injection_path,
                                                     strlen(config->nvtx_injection_path)),
                 config->trace_path);
        nvs_record_note(note);
    }
}

/* The process whose image this is: a vfork child shares our memory until it
 * execs or _exits, and must not end the parent's frame or trace. */
static pid_t image_pid NVS_ONCE_DATA;

bool nvs_owns_image(void)
{
    return getpid() == image_pid;
}

/* What exit does before the trace is completed, for exec and _exit too: the
 * open frame ends (and with it a capture window that holds it). */
NVS_ONCE void nvs_end_frames(void)
{
    if (atomic_load(&nvs_traced_groups_state) & ~NVS_GROUPS_READY)
        nvs_frames_finish();
}

static void fork_prepare(void) { nvs_record_fork_prepare(); }
static void fork_parent(void) { nvs_record_fork_parent(); }
static void fork_child(void)
{
    image_pid = getpid();
    nvs_record_fork_child();
    nvs_frames_reset_after_fork();
    nvs_capture_reset_after_fork();
    nvs_kernel_reset_after_fork();
}

__attribute__((constructor))
static void nvs_load(void)
{
    /* First: a signal handler may make the process's first libc call through
     * a wrapper at any moment from here on (resolve.h). */
    nvs_resolve_libc_hooks();
    /* The table calls up to no protocol file: a usbfs node's URBs end through this */
    nvs_devices_on_last_close(NVS_DEVICE_USBFS, nvs_usbfs_closed);
    const struct nvs_config *config = nvs_config();
    image_pid = getpid();
    inert = nvs_resolve_earlier_copy(first_copy, sizeof first_copy);
    if (config->help && !inert)
        nvs_log_raw(nvs_config_help());
    if (!inert)
        setup_recorder(config);
    nvs_resolve_set_filter(hook_enabled);
    if (!inert)
        nvs_devices_configure(config);
    /* What a fork resets - the trace file, frames, the capture, the probe,
     * whose image this is - exists only when one of them is asked for. */
    if (!inert && (config->trace_path[0] || config->frame != NVS_FRAME_OFF ||
                   config->capture != NVS_CAPTURE_OFF || config->kernel))
        pthread_atfork(fork_prepare, fork_parent, fork_child);
    if (any_hooked_library_loaded())
        print_messages();
}

__attribute__((destructor))
static void nvs_unload(void)
{
    nvs_end_frames();
    if (atomic_load(&nvs_traced_groups_state) & ~NVS_GROUPS_READY)
        nvs_capture_finish();
    nvs_kernel_finish();
    nvs_devices_report();
    if (nvs_record_owns_process())
        nvs_record_finish();
}
