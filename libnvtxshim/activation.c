/* Whether this copy is active, its messages once, whose image this is. */
#define _GNU_SOURCE
#include "activation.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "config.h"
#include "kernel.h"
#include "log.h"
#include "recorder/record.h"
#include "sys.h"

static atomic_bool messages_printed NVS_ONCE_DATA;

/* Another copy of the library came first (two paths in LD_PRELOAD, an
 * installed copy and a build's): this one stays out of the way. Its wrappers
 * pass every call straight through - the first copy's reach them through
 * RTLD_NEXT - so each call is traced once. */
static bool inert NVS_ONCE_DATA;
static const char *first_copy NVS_ONCE_DATA; /* init.c's, which lives as long */

NVS_ONCE void nvs_activation_set_inert(const char *first)
{
    inert = first != NULL;
    first_copy = first;
}

bool nvs_activation_inert(void)
{
    return inert;
}

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
                     "inert and passes every call through\n",
                     first_copy,
                     dladdr((void *)print_messages, &self) && self.dli_fname ? self.dli_fname
                                                                             : "?");
        return;
    }
    nvs_log_raw(nvs_config_messages());
    const struct nvs_config *config = nvs_config();
    nvs_capture_activate();
    nvs_kernel_activate();
    char shown[NVS_CONFIG_SHOWN_SIZE];
    if (config->trace_path[0] && !nvs_record_enabled())
        nvs_log_info("NVTXSHIM_TRACE=%s is not written: another NVTX tool is attached "
                     "(NVTX_INJECTION64_PATH=%s)\n",
                     config->trace_path,
                     nvs_config_shown(shown, config->nvtx_injection_path,
                                      strlen(config->nvtx_injection_path)));
}

bool nvs_activate(void)
{
    print_messages();
    return !inert;
}

static pid_t image_pid NVS_ONCE_DATA;

void nvs_image_set(pid_t pid)
{
    image_pid = pid;
}

bool nvs_owns_image(void)
{
    return nvs_sys_is_process(image_pid);
}
