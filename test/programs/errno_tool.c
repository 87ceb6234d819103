/* An NVTX tool that changes errno in every call it takes, as a tool that makes
 * system calls can (nsys does), and drops the events. Its pushes, pops, starts
 * and ends are counted and told on standard error at exit, by system call.
 * test/test_cuda_waits.py: the program's errno is what it is without the shim. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

#define EXPORT __attribute__((visibility("default")))

static char handles[1024];
static unsigned next_handle, pushes, pops, starts, ends, marks;

static void *changed(void *result)
{
    errno = EIO;
    return result;
}

static void *new_handle(void)
{
    return changed(&handles[__atomic_fetch_add(&next_handle, 1, __ATOMIC_RELAXED) % sizeof handles]);
}

static void count(unsigned *counter)
{
    __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
    errno = EIO;
}

static void domain_mark(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *event)
{
    (void)domain, (void)event;
    count(&marks);
}

static nvtxRangeId_t domain_start(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *event)
{
    (void)domain, (void)event;
    count(&starts);
    return starts;
}

static void domain_end(nvtxDomainHandle_t domain, nvtxRangeId_t id)
{
    (void)domain, (void)id;
    count(&ends);
}

static int domain_push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *event)
{
    (void)domain, (void)event;
    count(&pushes);
    return 0;
}

static int domain_pop(nvtxDomainHandle_t domain)
{
    (void)domain;
    count(&pops);
    return 0;
}

static void domain_category(nvtxDomainHandle_t domain, uint32_t category, const char *name)
{
    (void)domain, (void)category, (void)name;
    errno = EIO;
}

static nvtxStringHandle_t register_string(nvtxDomainHandle_t domain, const char *text)
{
    (void)domain, (void)text;
    return new_handle();
}

static nvtxDomainHandle_t domain_create(const char *name)
{
    (void)name;
    return new_handle();
}

static void name_thread(uint32_t thread, const char *name)
{
    (void)thread, (void)name;
    errno = EIO;
}

static void set(NvtxFunctionTable table, unsigned size, unsigned id, NvtxFunctionPointer function)
{
    if (id < size && table[id])
        *table[id] = function;
}

#define FUNCTION(f) ((NvtxFunctionPointer)(f))

EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table);
EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
    const NvtxExportTableCallbacks *callbacks = get_export_table(NVTX_ETID_CALLBACKS);
    NvtxFunctionTable core, core2;
    unsigned core_size, core2_size;
    if (!callbacks || !callbacks->GetModuleFunctionTable ||
        !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) ||
        !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size))
        return 0;
    set(core, core_size, NVTX_CBID_CORE_NameOsThreadA, FUNCTION(name_thread));
    set(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx, FUNCTION(domain_mark));
    set(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, FUNCTION(domain_start));
    set(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, FUNCTION(domain_end));
    set(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, FUNCTION(domain_push));
    set(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, FUNCTION(domain_pop));
    set(core2, core2_size, NVTX_CBID_CORE2_DomainNameCategoryA, FUNCTION(domain_category));
    set(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, FUNCTION(register_string));
    set(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, FUNCTION(domain_create));
    errno = EIO;
    return 1;
}

__attribute__((destructor)) static void tell(void)
{
    char line[128];
    int length = snprintf(line, sizeof line,
                          "errno tool: pushes %u pops %u starts %u ends %u marks %u\n", pushes,
                          pops, starts, ends, marks);
    if (length > 0)
        (void)syscall(SYS_write, 2, line, (size_t)length);
}
