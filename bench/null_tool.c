/* An NVTX tool that does nothing: every range, mark and name is accepted and
 * dropped. Attached with NVTX_INJECTION64_PATH, it leaves only the cost of
 * making the NVTX calls (and, with the shim, of the shim's own work around
 * them): what a tool such as nsys pays on top of its own. make bench's null
 * tool.
 *
 * Built with NULL_TOOL_CHANGES_ERRNO (build/test/libnull_tool_errno.so, for
 * test/test_cuda_waits.py) it also changes errno in every call it takes, as a
 * tool that makes system calls can (nsys does), and counts its pushes, pops,
 * starts, ends and marks, told on standard error at exit by system call. */
#define _GNU_SOURCE
#include <nvtx3/nvToolsExt.h>
#include <stdint.h>

#ifdef NULL_TOOL_CHANGES_ERRNO
#include <errno.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#define EXPORT __attribute__((visibility("default")))

/* Handles only have to be distinct and not NULL (NULL means "no tool"). */
static char handles[4096];
static unsigned next_handle;
static uint64_t next_range = 1;

#ifdef NULL_TOOL_CHANGES_ERRNO
enum { PUSHES, POPS, STARTS, ENDS, MARKS, OTHER, COUNTERS };
static unsigned counted[COUNTERS];
#define TOOK(counter)                                                                              \
    do {                                                                                           \
        __atomic_fetch_add(&counted[counter], 1, __ATOMIC_RELAXED);                                \
        errno = EIO;                                                                               \
    } while (0)

__attribute__((destructor)) static void tell(void)
{
    char line[128];
    int length = snprintf(
        line, sizeof line, "errno tool: pushes %u pops %u starts %u ends %u marks %u\n",
        counted[PUSHES], counted[POPS], counted[STARTS], counted[ENDS], counted[MARKS]);
    if (length > 0)
        (void)syscall(SYS_write, 2, line, (size_t)length);
}
#else
#define TOOK(counter) ((void)0)
#endif

static void *new_handle(void)
{
    TOOK(OTHER);
    return &handles[__atomic_fetch_add(&next_handle, 1, __ATOMIC_RELAXED) % sizeof handles];
}

static void domain_mark(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *event)
{
    (void)domain, (void)event;
    TOOK(MARKS);
}

static nvtxRangeId_t domain_start(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *event)
{
    (void)domain, (void)event;
    TOOK(STARTS);
    return __atomic_fetch_add(&next_range, 1, __ATOMIC_RELAXED);
}

static void domain_end(nvtxDomainHandle_t domain, nvtxRangeId_t id)
{
    (void)domain, (void)id;
    TOOK(ENDS);
}

static int domain_push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *event)
{
    (void)domain, (void)event;
    TOOK(PUSHES);
    return 0;
}

static int domain_pop(nvtxDomainHandle_t domain)
{
    (void)domain;
    TOOK(POPS);
    return 0;
}

static void domain_category(nvtxDomainHandle_t domain, uint32_t category, const char *name)
{
    (void)domain, (void)category, (void)name;
    TOOK(OTHER);
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
    TOOK(OTHER);
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
    TOOK(OTHER);
    return 1;
}
