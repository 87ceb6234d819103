/* Load, exit and fork: the library's life cycle. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "activation.h"
#include "capture.h"
#include "devices/table.h"
#include "devices/device_calls.h"
#include "config.h"
#include "frames.h"
#include "hook.h"
#include "activation.h"
#include "kernel.h"
#include "log.h"
#include "recorder/record.h"
#include "resolve.h"
#include "sys.h"

/* The path of another copy of the library loaded first (then this one is inert). */
static char first_copy[NVS_PATH_MAX];

static int hook_enabled(enum nvs_hook_id id)
{
    const struct nvs_config *config = nvs_config();
    if (nvs_activation_inert())
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
        const char *library = nvs_hook_library((enum nvs_hook_id)id);
        /* libc is in every process: its device-file calls wake the library
         * only when the program opens a device of a rig (devices/table.c). */
        if ((count &&
             (library == libraries[count - 1] || !strcmp(library, libraries[count - 1]))) ||
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
        bool ours = entry && dladdr(entry, &other) && other.dli_fbase == self.dli_fbase;
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
        snprintf(note, sizeof note,
                 "NVTX_INJECTION64_PATH=%s names no file: NVTXSHIM_TRACE=%s "
                 "records instead",
                 nvs_config_shown(shown, config->nvtx_injection_path,
                                  strlen(config->nvtx_injection_path)),
                 config->trace_path);
        nvs_record_note(note);
    }
}

static void fork_prepare(void)
{
    nvs_record_fork_prepare();
}
static void fork_parent(void)
{
    nvs_record_fork_parent();
}
static void fork_child(void)
{
    nvs_image_set(nvs_sys_getpid());
    nvs_record_fork_child();
    nvs_frames_reset_after_fork();
    nvs_capture_reset_after_fork();
    nvs_call_forget_after_work();
    nvs_kernel_reset_after_fork();
}

__attribute__((constructor)) static void nvs_load(void)
{
    /* First: a signal handler may make the process's first libc call through
     * a wrapper at any moment from here on (resolve.h). */
    nvs_resolve_libc_hooks();
    nvs_resolve_set_wrappers(nvs_hook_wrappers);
    /* The table calls up to no kind's file: it tells devices by these, and
     * reaches what a kind does (a usbfs node's last close) through them. */
    nvs_devices_set_kinds(nvs_device_kinds);
    const struct nvs_config *config = nvs_config();
    nvs_image_set(nvs_sys_getpid());
    bool inert = nvs_resolve_earlier_copy(first_copy, sizeof first_copy);
    nvs_activation_set_inert(inert ? first_copy : NULL);
    if (config->help && !inert)
        nvs_log_raw(nvs_config_help());
    if (!inert)
        setup_recorder(config);
    nvs_resolve_set_filter(hook_enabled);
    if (!inert)
        nvs_devices_configure(config);
    /* What a fork resets - the trace file, frames, the capture, the probe,
     * whose image this is - exists only when one of them is asked for. */
    if (!inert &&
        (config->trace_path[0] || config->frame != NVS_FRAME_OFF ||
         config->capture != NVS_CAPTURE_OFF || config->kernel))
        pthread_atfork(fork_prepare, fork_parent, fork_child);
    if (any_hooked_library_loaded())
        (void)nvs_activate();
}

__attribute__((destructor)) static void nvs_unload(void)
{
    nvs_end_frames();
    if (atomic_load(&nvs_traced_groups_state) & ~NVS_GROUPS_READY)
        nvs_capture_finish();
    nvs_kernel_finish();
    nvs_devices_report();
    if (nvs_record_owns_process())
        nvs_record_finish();
}
