/* CUDA driver copies in NVTX domain "cuda": bytes, direction, and whether the
 * host side is pinned or pageable (a pageable copy is a hidden stall: the
 * driver stages it through a pinned buffer and the call blocks).
 *
 * Programs reach the driver by linking it, by dlopen + dlsym (handled in
 * resolve.c), and through cuGetProcAddress — the CUDA runtime, static or not,
 * takes every entry point that way. The shim never initialises CUDA itself:
 * it only asks the driver about pointers the program is already copying. */
#define _GNU_SOURCE
#include <cuda.h>
#include <cudaTypedefs.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../emit.h"
#include "../hook.h"

_Static_assert(CUDA_VERSION == NVS_CUDA_VERSION, "the hook table was made for another cuda.h");

/* cuda.h maps cuGetProcAddress to its _v2; the first version is hooked too. */
#undef cuGetProcAddress
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **function, int version,
                                  cuuint64_t flags);

#include "copy.h"

static const char *const direction_names[] = {
    [HTOD] = "HtoD", [DTOH] = "DtoH", [DTOD] = "DtoD",   [HTOH] = "HtoH",
    [HTOA] = "HtoA", [ATOH] = "AtoH", [DTOA] = "DtoA",   [ATOD] = "AtoD",
    [ATOA] = "AtoA", [PEER] = "peer", [BATCH] = "batch", [UNKNOWN] = "",
};

/* ---- pinned or pageable ------------------------------------------------------ */

/* The driver's answer about a pointer, cached by address. Any call that
 * allocates, frees or (un)registers memory bumps the generation, which empties
 * the cache at once. An entry packs pointer, generation and answer in one word. */
#define KIND_SLOTS 1024u
enum pointer_kind { KIND_UNKNOWN, KIND_PINNED, KIND_PAGEABLE, KIND_DEVICE };
/* A host kind is its copy's host memory as it is (host_memory: no switch). */
_Static_assert((int)KIND_PINNED == (int)HOST_PINNED && (int)KIND_PAGEABLE == (int)HOST_PAGEABLE,
               "a pointer's kind is a copy's host memory");

static _Atomic uint64_t kinds[KIND_SLOTS];
static atomic_uint generation = 1;

static uint64_t pack(uintptr_t pointer, unsigned generation_now, enum pointer_kind kind)
{
    return ((uint64_t)pointer << 16) | ((uint64_t)(generation_now & 0x3fff) << 2) | kind;
}

static enum pointer_kind ask_driver(CUdeviceptr pointer)
{
    static _Atomic(void *) query;
    __typeof__(&cuPointerGetAttribute) get = (__typeof__(&cuPointerGetAttribute))
        nvs_find_function_once(&query, "libcuda.so.1", "cuPointerGetAttribute");
    if (!get)
        return KIND_UNKNOWN;
    CUmemorytype type = 0;
    CUresult result = get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pointer);
    if (result == CUDA_SUCCESS)
        return type == CU_MEMORYTYPE_HOST ? KIND_PINNED : KIND_DEVICE;
    /* Memory the driver never saw: plain malloc'd host memory. */
    return result == CUDA_ERROR_INVALID_VALUE ? KIND_PAGEABLE : KIND_UNKNOWN;
}

/* A miss: the driver is asked, and its answer kept. */
static __attribute__((noinline)) enum pointer_kind kind_asked(uintptr_t address, unsigned now,
                                                              _Atomic uint64_t *slot)
{
    int saved_errno = errno;
    enum pointer_kind kind = ask_driver((CUdeviceptr)address);
    errno = saved_errno;
    if (kind != KIND_UNKNOWN)
        atomic_store_explicit(slot, pack(address, now, kind), memory_order_relaxed);
    return kind;
}

/* Inline: every copy from or to host memory asks, and nearly every answer is
 * in the cache. */
static inline __attribute__((always_inline)) enum pointer_kind kind_of(const void *pointer)
{
    uintptr_t address = (uintptr_t)pointer;
    if (!address || address >> 48)
        return KIND_UNKNOWN;
    unsigned now = atomic_load_explicit(&generation, memory_order_acquire);
    _Atomic uint64_t *slot = &kinds[(address >> 4 ^ address >> 14) & (KIND_SLOTS - 1)];
    uint64_t entry = atomic_load_explicit(slot, memory_order_relaxed);
    if (__builtin_expect((entry & ~3ull) == (pack(address, now, KIND_UNKNOWN) & ~3ull), 1))
        return (enum pointer_kind)(entry & 3);
    return kind_asked(address, now, slot);
}

static inline enum host_memory host_memory(const void *host)
{
    enum pointer_kind kind = kind_of(host);
    return kind == KIND_PINNED || kind == KIND_PAGEABLE ? (enum host_memory)kind : HOST_UNKNOWN;
}

enum host_memory nvs_copy_host_memory(const void *host)
{
    return host_memory(host);
}

static void forget_pointers(void)
{
    atomic_fetch_add_explicit(&generation, 1, memory_order_acq_rel);
}

/* ---- describing copies -------------------------------------------------------- */

struct copy nvs_copy_host_to_device(size_t bytes, const void *host)
{
    return (struct copy){ bytes, HTOD, host_memory(host), false };
}

struct copy nvs_copy_device_to_host(size_t bytes, const void *host)
{
    return (struct copy){ bytes, DTOH, host_memory(host), false };
}

struct copy nvs_copy_between(size_t bytes, enum direction direction)
{
    return (struct copy){ bytes, direction, HOST_NONE, false };
}

/* cuMemcpy and cuMemcpyAsync take unified addresses: which way is found out. */
struct copy nvs_copy_unified(size_t bytes, CUdeviceptr destination, CUdeviceptr source)
{
    enum pointer_kind to = kind_of((const void *)destination), from = kind_of((const void *)source);
    bool to_host = to == KIND_PINNED || to == KIND_PAGEABLE;
    bool from_host = from == KIND_PINNED || from == KIND_PAGEABLE;
    struct copy copy = { bytes, UNKNOWN, HOST_NONE, true };
    if (to == KIND_UNKNOWN || from == KIND_UNKNOWN)
        return copy;
    copy.direction = from_host ? (to_host ? HTOH : HTOD) : (to_host ? DTOH : DTOD);
    enum pointer_kind host = from_host ? from : to;
    if (from_host || to_host)
        copy.host = host == KIND_PINNED ? HOST_PINNED : HOST_PAGEABLE;
    return copy;
}

/* One side of a 2D/3D copy: its memory type names it, unified ones are asked. */
static enum pointer_kind side(CUmemorytype type, const void *host, CUdeviceptr device)
{
    switch (type) {
    case CU_MEMORYTYPE_HOST: return kind_of(host) == KIND_PINNED ? KIND_PINNED : KIND_PAGEABLE;
    case CU_MEMORYTYPE_DEVICE: return KIND_DEVICE;
    case CU_MEMORYTYPE_ARRAY: return KIND_UNKNOWN;
    case CU_MEMORYTYPE_UNIFIED: return kind_of((const void *)device);
    }
    return KIND_UNKNOWN;
}

static struct copy structured(uint64_t bytes, CUmemorytype source_type, enum pointer_kind source,
                              CUmemorytype destination_type, enum pointer_kind destination)
{
    bool from_host = source == KIND_PINNED || source == KIND_PAGEABLE;
    bool to_host = destination == KIND_PINNED || destination == KIND_PAGEABLE;
    bool from_array = source_type == CU_MEMORYTYPE_ARRAY,
         to_array = destination_type == CU_MEMORYTYPE_ARRAY;
    struct copy copy = { bytes, UNKNOWN, HOST_NONE, true };
    if (from_host)
        copy.direction = to_array ? HTOA : to_host ? HTOH : HTOD;
    else if (from_array)
        copy.direction = to_array ? ATOA : to_host ? ATOH : ATOD;
    else if (source == KIND_DEVICE)
        copy.direction = to_array ? DTOA : to_host ? DTOH : DTOD;
    enum pointer_kind host = from_host ? source : destination;
    if (from_host || to_host)
        copy.host = host == KIND_PINNED ? HOST_PINNED : HOST_PAGEABLE;
    return copy;
}

static struct copy copy_2d(const CUDA_MEMCPY2D *p)
{
    if (!p)
        return nvs_copy_between(0, UNKNOWN);
    return structured((uint64_t)p->WidthInBytes * p->Height, p->srcMemoryType,
                      side(p->srcMemoryType, p->srcHost, p->srcDevice), p->dstMemoryType,
                      side(p->dstMemoryType, p->dstHost, p->dstDevice));
}

/* CUDA_MEMCPY3D and CUDA_MEMCPY3D_PEER name their fields alike. */
#define STRUCTURED_3D(p)                                                                           \
    ((p) ? structured((uint64_t)(p)->WidthInBytes * (p)->Height * (p)->Depth, (p)->srcMemoryType,  \
                      side((p)->srcMemoryType, (p)->srcHost, (p)->srcDevice), (p)->dstMemoryType,  \
                      side((p)->dstMemoryType, (p)->dstHost, (p)->dstDevice))                      \
         : nvs_copy_between(0, UNKNOWN))

static struct copy copy_3d(const CUDA_MEMCPY3D *p)
{
    return STRUCTURED_3D(p);
}

static struct copy copy_3d_peer(const CUDA_MEMCPY3D_PEER *p)
{
    return STRUCTURED_3D(p);
}

#if NVS_CUDA_VERSION >= 13000
static struct copy batch(const size_t *sizes, size_t count)
{
    uint64_t bytes = 0;
    for (size_t i = 0; sizes && i < count; i++)
        bytes += sizes[i];
    return nvs_copy_between(bytes, BATCH);
}

static struct copy batch_3d(size_t count, const CUDA_MEMCPY3D_BATCH_OP *operations)
{
    uint64_t bytes = 0;
    for (size_t i = 0; operations && i < count; i++)
        bytes += (uint64_t)operations[i].extent.width * operations[i].extent.height *
            operations[i].extent.depth;
    return nvs_copy_between(bytes, BATCH);
}
#endif

/* ---- ranges ------------------------------------------------------------------------ */

/* "64KiB", "9KiB", "1536KiB", "100B": the largest unit that divides exactly. */
static void format_bytes(char *out, size_t size, uint64_t bytes)
{
    if (bytes && bytes % (1ull << 30) == 0)
        snprintf(out, size, "%" PRIu64 "GiB", bytes >> 30);
    else if (bytes && bytes % (1ull << 20) == 0)
        snprintf(out, size, "%" PRIu64 "MiB", bytes >> 20);
    else if (bytes && bytes % 1024 == 0)
        snprintf(out, size, "%" PRIu64 "KiB", bytes >> 10);
    else
        snprintf(out, size, "%" PRIu64 "B", bytes);
}

/* The name of a copy's range in TEXT: the API's name, the size, the
 * direction where the name does not say it, and pinned or pageable host
 * memory. */
static void name_copy(char *text, enum nvs_hook_id id, const struct copy *copy)
{
    static const char *const host_names[] = { "", " pinned", " pageable", "" };
    const char *name = nvs_hook_name(id);
    char size[32];
    format_bytes(size, sizeof size, copy->bytes);
    snprintf(text, NVS_CALL_TEXT_MAX, "%.*s %s%s%s%s", nvs_api_name_length(name), name, size,
             copy->name_direction && copy->direction != UNKNOWN ? " " : "",
             copy->name_direction ? direction_names[copy->direction] : "", host_names[copy->host]);
}

/* A copy's range the first time its shape is used, built and stored
 * (nvs_range_store); for one too large for its key to hold (whose payload
 * the key cannot tell), a range of the call's own at every call. */
__attribute__((noinline)) void nvs_copy_open(enum nvs_hook_id id, struct copy value)
{
    const struct copy *copy = &value;
    struct nvs_attributes range;
    char text[NVS_CALL_TEXT_MAX];
    nvs_copy_range(&range, copy);
    uint64_t key = nvs_copy_name_key(id, copy);
    const struct nvs_attributes *opened = &range;
    if (!nvs_copy_keeps_bytes(copy)) {
        struct nvs_name name = nvs_name_lookup(NVS_DOMAIN_CUDA, key);
        if (!name.registered) {
            name_copy(text, id, copy);
            name = nvs_name_store(NVS_DOMAIN_CUDA, key, text);
        }
        nvs_attributes_name(&range, name);
    } else if (!(opened = nvs_range_find(NVS_DOMAIN_CUDA, key))) {
        name_copy(text, id, copy);
        opened = nvs_range_store(&range, key, text);
    }
    nvs_call_open_built(id, nvs_copy_marker(copy->direction), -1, NVS_DOMAIN_CUDA, opened);
}

__attribute__((noinline, cold)) void nvs_copy_dispatch(enum nvs_hook_id id,
                                                       enum direction direction)
{
    nvs_call_dispatch(id, nvs_copy_marker(direction), -1, NVS_DOMAIN_CUDA);
}

/* The registered name of each kernel launched, "cuLaunchKernel NAME", by the
 * function and the API that launched it: open addressing, insert-only,
 * lock-free, like emit.c's names. A key packs the function's address (48
 * bits), the module generation (14 bits) and the API (the top two). A slot
 * claimed but not yet published, a full table, a kernel without a name: the
 * bare API name. cuModuleUnload and cuLibraryUnload bump the generation: a
 * function of another module may come back at the same address. */
#define KERNEL_SLOTS 2048u
#define KERNEL_PROBES 16u

struct kernel_slot {
    _Atomic uint64_t key;
    _Atomic(nvtxStringHandle_t) name;
    /* KEY again once launch (the range of the kernel's launches) is built
     * with the name, else 0: what kernel_range_found compares, as emit.h's
     * nvs_range_lookup compares a name slot's built_key */
    _Atomic uint64_t built_key;
    struct nvs_attributes launch;
};

static struct kernel_slot kernel_names[KERNEL_SLOTS];
static atomic_uint module_generation;

static void forget_kernels(void)
{
    atomic_fetch_add_explicit(&module_generation, 1, memory_order_acq_rel);
}

#define KERNEL_SLOT_BITS 11
_Static_assert(KERNEL_SLOTS == 1u << KERNEL_SLOT_BITS, "the table's size in bits");
static inline uint32_t kernel_slot_of(uint64_t key)
{
    return nvs_hash_slot(key, KERNEL_SLOT_BITS);
}

/* A C++ kernel's name as Nsight Systems shows it ("scale(unsigned char*, int)"
 * for _Z5scalePhi), demangled by the program's own C++ runtime when one is
 * loaded (CUDA programs and PyTorch have it; the library loads nothing for
 * it); otherwise, or when it is not a mangled name, KERNEL as it was. What
 * the demangler allocated is left in ALLOCATED for the caller to free. */
static const char *readable_kernel_name(const char *kernel, char **allocated)
{
    typedef char *(*demangler)(const char *, char *, size_t *, int *);
    static _Atomic(demangler) found;
    *allocated = NULL;
    if (strncmp(kernel, "_Z", 2))
        return kernel;
    demangler demangle = atomic_load_explicit(&found, memory_order_acquire);
    if (!demangle) {
        /* Not cached while absent: a program may load its C++ runtime later. */
        demangle = (demangler)nvs_find_function("libstdc++.so.6", "__cxa_demangle");
        if (!demangle)
            return kernel;
        atomic_store_explicit(&found, demangle, memory_order_release);
    }
    int saved_errno = errno, status = -1;
    char *text = demangle(kernel, NULL, NULL, &status);
    errno = saved_errno;
    if (status || !text) {
        free(text);
        return kernel;
    }
    return *allocated = text;
}

/* "API KERNEL" registered and published in SLOT, with the range of the
 * kernel's launches; the name for this call. */
static struct nvs_name publish_kernel_name(struct kernel_slot *slot, enum nvs_hook_id api,
                                           const char *kernel, char *text)
{
    struct nvs_name name = { NULL, NULL };
    if (kernel) {
        char *demangled;
        snprintf(text, NVS_CALL_TEXT_MAX, "%s %s", nvs_hook_name(api),
                 readable_kernel_name(kernel, &demangled));
        free(demangled);
        /* registered once for the slot: the table bounds how many */
        name.registered = nvs_name_register(NVS_DOMAIN_CUDA, text);
    }
    /* Without a name of its own, the bare API name from now on. */
    nvtxStringHandle_t published = name.registered
        ? name.registered
        : nvs_call_hook_name(NVS_DOMAIN_CUDA, api).registered;
    if (published) {
        /* Only the thread that claimed the slot writes it, once. */
        slot->launch = NVS_ATTRIBUTES(NVS_DOMAIN_CUDA, NVS_CUDA_LAUNCH, NVS_COLOR_CUDA_LAUNCH);
        nvs_attributes_registered_name(&slot->launch, published);
        atomic_store_explicit(&slot->built_key,
                              atomic_load_explicit(&slot->key, memory_order_relaxed),
                              memory_order_release);
    }
    atomic_store_explicit(&slot->name, published, memory_order_release);
    return name;
}

/* The table's key for kernel FUNCTION launched through API, or 0 for a
 * function that has no place in it. */
static inline __attribute__((always_inline)) uint64_t kernel_key(enum nvs_hook_id api,
                                                                 const void *function)
{
    uintptr_t address = (uintptr_t)function;
    if (!address || address >> 48)
        return 0;
    unsigned modules = atomic_load_explicit(&module_generation, memory_order_acquire);
    uint64_t api_bits = api == NVS_HOOK_ID(cudaLaunchKernel) ? 1
        : api == NVS_HOOK_ID(cuLaunchKernel)                 ? 0
                                                             : 2;
    return address | (uint64_t)(modules & 0x3fff) << 48 | api_bits << 62;
}

static struct nvs_name kernel_name(enum nvs_hook_id api, const void *function,
                                   nvs_kernel_namer *name_of, char *text)
{
    struct nvs_name name = { NULL, NULL };
    uint64_t key = kernel_key(api, function);
    if (!key)
        return name;
    uint32_t first = kernel_slot_of(key);
    const char *kernel = NULL;
    bool asked = false;
    for (uint32_t probe = 0; probe < KERNEL_PROBES; probe++) {
        struct kernel_slot *slot = &kernel_names[(first + probe) & (KERNEL_SLOTS - 1)];
        uint64_t found = atomic_load_explicit(&slot->key, memory_order_acquire);
        if (found == key) {
            name.registered = atomic_load_explicit(&slot->name, memory_order_acquire);
            return name;
        }
        if (found)
            continue;
        if (!asked) {
            int saved_errno = errno;
            int answer = name_of(function, &kernel);
            errno = saved_errno;
            if (answer < 0)
                return name; /* not now: asked again at the next launch */
            asked = true;
        }
        uint64_t expected = 0;
        if (atomic_compare_exchange_strong(&slot->key, &expected, key))
            return publish_kernel_name(slot, api, kernel, text);
        if (expected == key) {
            name.registered = atomic_load_explicit(&slot->name, memory_order_acquire);
            return name;
        }
    }
    return name;
}

/* A kernel launch, named after its kernel where NAME_OF gives it; API: the
 * hook whose documented name the range takes (not the _ptsz twin). */
__attribute__((noinline)) void nvs_launch_open(enum nvs_hook_id id, enum nvs_hook_id api,
                                               const void *function, nvs_kernel_namer *name_of)
{
    struct nvs_attributes range = NVS_ATTRIBUTES(NVS_DOMAIN_CUDA, NVS_CUDA_LAUNCH,
                                                 NVS_COLOR_CUDA_LAUNCH);
    char text[NVS_CALL_TEXT_MAX];
    nvs_attributes_name(&range, kernel_name(api, function, name_of, text));
    if (!nvs_attributes_named(&range))
        nvs_attributes_name(&range, nvs_call_hook_name(NVS_DOMAIN_CUDA, api));
    nvs_call_open(id, NVS_FRAME_OFF, -1, &range);
}

/* The range of a launch of kernel FUNCTION through API when it is built
 * where the table looks first (nearly every launch after the kernel's first),
 * else NULL. */
static inline __attribute__((always_inline)) const struct nvs_attributes *kernel_range_found(
    enum nvs_hook_id api, const void *function)
{
    uint64_t key = kernel_key(api, function);
    struct kernel_slot *slot = &kernel_names[kernel_slot_of(key)];
    if (__builtin_expect(
            !key || atomic_load_explicit(&slot->built_key, memory_order_acquire) != key, 0))
        return NULL;
    return &slot->launch;
}

static int driver_kernel_name(const void *function, const char **name);

/* A driver launch's range (LAUNCH_PAIR): inline in the wrapper's traced half
 * when the range of the kernel's launches is built (kernel_range_found);
 * nvs_launch_open otherwise. */
static inline __attribute__((always_inline)) void launch_open(enum nvs_hook_id id,
                                                              enum nvs_hook_id api,
                                                              const void *function)
{
    const struct nvs_attributes *range = kernel_range_found(api, function);
    if (__builtin_expect(range == NULL, 0)) {
        nvs_launch_open(id, api, function, driver_kernel_name);
        return;
    }
    nvs_call_open_built(id, NVS_FRAME_OFF, -1, NVS_DOMAIN_CUDA, range);
}

/* The driver's name of what cuLaunchKernel was given: a CUfunction
 * (cuFuncGetName), or a CUkernel, which the launch takes as well and which
 * the CUDA runtime passes for every kernel of a program since CUDA 12
 * (cuKernelGetName); both CUDA 12.3 and later. Each refuses the other's
 * handle. */
static int driver_kernel_name(const void *function, const char **name)
{
#if NVS_CUDA_VERSION >= 12030
    static _Atomic(void *) found_function, found_kernel;
    __typeof__(&cuFuncGetName) get_function = (__typeof__(&cuFuncGetName))nvs_find_function_once(
        &found_function, "libcuda.so.1", "cuFuncGetName");
    __typeof__(&cuKernelGetName) get_kernel = (__typeof__(&cuKernelGetName))nvs_find_function_once(
        &found_kernel, "libcuda.so.1", "cuKernelGetName");
    if ((!get_function || get_function(name, (CUfunction)(uintptr_t)function) != CUDA_SUCCESS) &&
        (!get_kernel || get_kernel(name, (CUkernel)(uintptr_t)function) != CUDA_SUCCESS))
        *name = NULL;
#else
    /* Headers older than 12.3 (Debian 12's CUDA 11.8) declare neither: the
     * launch takes its call's name. */
    (void)function;
    *name = NULL;
#endif
    return 0;
}

/* A wait for the GPU (copy.h), and a launch with its per-thread twin: the same
 * parameters, the range made alike. Both in two halves (hook.h). */
#define WAIT(name, parameters, arguments)                                                          \
    NVS_SPLIT_WRAPPER(NVS_HOOKS_CUDA, CUresult, name, parameters, arguments, nvs_resolve,          \
                      CUDA_ERROR_NOT_FOUND, nvs_wait_open(NVS_HOOK_ID(name)), nvs_cuda_end())
#define LAUNCH_PAIR(name, twin, parameters, arguments, function)                                   \
    NVS_SPLIT_WRAPPER(NVS_HOOKS_CUDA, CUresult, name, parameters, arguments, nvs_resolve,          \
                      CUDA_ERROR_NOT_FOUND,                                                        \
                      launch_open(NVS_HOOK_ID(name), NVS_HOOK_ID(name), (const void *)(function)), \
                      nvs_cuda_end())                                                              \
    NVS_SPLIT_WRAPPER(NVS_HOOKS_CUDA, CUresult, twin, parameters, arguments, nvs_resolve,          \
                      CUDA_ERROR_NOT_FOUND,                                                        \
                      launch_open(NVS_HOOK_ID(twin), NVS_HOOK_ID(name), (const void *)(function)), \
                      nvs_cuda_end())

WAIT(cuStreamSynchronize, (CUstream stream), (stream))
WAIT(cuStreamSynchronize_ptsz, (CUstream stream), (stream))
WAIT(cuCtxSynchronize, (void), ())
#if NVS_CUDA_VERSION >= 13000
WAIT(cuCtxSynchronize_v2, (CUcontext context), (context))
#endif
WAIT(cuEventSynchronize, (CUevent event), (event))
LAUNCH_PAIR(cuLaunchKernel, cuLaunchKernel_ptsz,
            (CUfunction function, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
             unsigned int block_x, unsigned int block_y, unsigned int block_z,
             unsigned int shared_bytes, CUstream stream, void **parameters, void **extra),
            (function, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes, stream,
             parameters, extra),
            function)

/* A CUDA graph's launch: what PyTorch's CUDAGraph.replay and torch.compile's
 * reduce-overhead mode run each step, in place of each kernel's launch. */
#define GRAPH_LAUNCH(name)                                                                         \
    NVS_SPLIT_WRAPPER(NVS_HOOKS_CUDA, CUresult, name, (CUgraphExec graph, CUstream stream),        \
                      (graph, stream), nvs_resolve, CUDA_ERROR_NOT_FOUND,                          \
                      nvs_graph_launch_open(NVS_HOOK_ID(name)), nvs_cuda_end())
GRAPH_LAUNCH(cuGraphLaunch)
GRAPH_LAUNCH(cuGraphLaunch_ptsz)

/* cuLaunchKernelEx: the launch with attributes (clusters, cooperative, priority) that
 * Triton and CUTLASS use, and the runtime's cudaLaunchKernelEx reaches. */
#if NVS_CUDA_VERSION >= 12000
LAUNCH_PAIR(cuLaunchKernelEx, cuLaunchKernelEx_ptsz,
            (const CUlaunchConfig *config, CUfunction function, void **parameters, void **extra),
            (config, function, parameters, extra), function)
#endif

/* The copies, each with its per-thread-default-stream twin (copy.h's COPY_PAIR). */
COPY_PAIR(CUresult, cuMemcpy, cuMemcpy_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t bytes),
          (dst, src, bytes), nvs_copy_unified(bytes, dst, src))
COPY_PAIR(CUresult, cuMemcpyAsync, cuMemcpyAsync_ptsz,
          (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream),
          (dst, src, bytes, stream), nvs_copy_unified(bytes, dst, src))
COPY_PAIR(CUresult, cuMemcpyPeer, cuMemcpyPeer_ptds,
          (CUdeviceptr dst, CUcontext dst_context, CUdeviceptr src, CUcontext src_context,
           size_t bytes),
          (dst, dst_context, src, src_context, bytes), nvs_copy_between(bytes, PEER))
COPY_PAIR(CUresult, cuMemcpyPeerAsync, cuMemcpyPeerAsync_ptsz,
          (CUdeviceptr dst, CUcontext dst_context, CUdeviceptr src, CUcontext src_context,
           size_t bytes, CUstream stream),
          (dst, dst_context, src, src_context, bytes, stream), nvs_copy_between(bytes, PEER))
COPY_PAIR(CUresult, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds,
          (CUdeviceptr dst, const void *src, size_t bytes), (dst, src, bytes),
          nvs_copy_host_to_device(bytes, src))
COPY_PAIR(CUresult, cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz,
          (CUdeviceptr dst, const void *src, size_t bytes, CUstream stream),
          (dst, src, bytes, stream), nvs_copy_host_to_device(bytes, src))
COPY_PAIR(CUresult, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds,
          (void *dst, CUdeviceptr src, size_t bytes), (dst, src, bytes),
          nvs_copy_device_to_host(bytes, dst))
COPY_PAIR(CUresult, cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz,
          (void *dst, CUdeviceptr src, size_t bytes, CUstream stream), (dst, src, bytes, stream),
          nvs_copy_device_to_host(bytes, dst))
COPY_PAIR(CUresult, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds,
          (CUdeviceptr dst, CUdeviceptr src, size_t bytes), (dst, src, bytes),
          nvs_copy_between(bytes, DTOD))
COPY_PAIR(CUresult, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz,
          (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream),
          (dst, src, bytes, stream), nvs_copy_between(bytes, DTOD))
COPY_PAIR(CUresult, cuMemcpyDtoA_v2, cuMemcpyDtoA_v2_ptds,
          (CUarray dst, size_t offset, CUdeviceptr src, size_t bytes), (dst, offset, src, bytes),
          nvs_copy_between(bytes, DTOA))
COPY_PAIR(CUresult, cuMemcpyAtoD_v2, cuMemcpyAtoD_v2_ptds,
          (CUdeviceptr dst, CUarray src, size_t offset, size_t bytes), (dst, src, offset, bytes),
          nvs_copy_between(bytes, ATOD))
COPY_PAIR(CUresult, cuMemcpyHtoA_v2, cuMemcpyHtoA_v2_ptds,
          (CUarray dst, size_t offset, const void *src, size_t bytes), (dst, offset, src, bytes),
          ((struct copy){ bytes, HTOA, nvs_copy_host_memory(src), false }))
COPY_PAIR(CUresult, cuMemcpyHtoAAsync_v2, cuMemcpyHtoAAsync_v2_ptsz,
          (CUarray dst, size_t offset, const void *src, size_t bytes, CUstream stream),
          (dst, offset, src, bytes, stream),
          ((struct copy){ bytes, HTOA, nvs_copy_host_memory(src), false }))
COPY_PAIR(CUresult, cuMemcpyAtoH_v2, cuMemcpyAtoH_v2_ptds,
          (void *dst, CUarray src, size_t offset, size_t bytes), (dst, src, offset, bytes),
          ((struct copy){ bytes, ATOH, nvs_copy_host_memory(dst), false }))
COPY_PAIR(CUresult, cuMemcpyAtoHAsync_v2, cuMemcpyAtoHAsync_v2_ptsz,
          (void *dst, CUarray src, size_t offset, size_t bytes, CUstream stream),
          (dst, src, offset, bytes, stream),
          ((struct copy){ bytes, ATOH, nvs_copy_host_memory(dst), false }))
COPY_PAIR(CUresult, cuMemcpyAtoA_v2, cuMemcpyAtoA_v2_ptds,
          (CUarray dst, size_t dst_offset, CUarray src, size_t src_offset, size_t bytes),
          (dst, dst_offset, src, src_offset, bytes), nvs_copy_between(bytes, ATOA))
COPY_PAIR(CUresult, cuMemcpy2D_v2, cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *p), (p), copy_2d(p))
COPY_PAIR(CUresult, cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D *p),
          (p), copy_2d(p))
COPY_PAIR(CUresult, cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz,
          (const CUDA_MEMCPY2D *p, CUstream stream), (p, stream), copy_2d(p))
COPY_PAIR(CUresult, cuMemcpy3D_v2, cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D *p), (p), copy_3d(p))
COPY_PAIR(CUresult, cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz,
          (const CUDA_MEMCPY3D *p, CUstream stream), (p, stream), copy_3d(p))
COPY_PAIR(CUresult, cuMemcpy3DPeer, cuMemcpy3DPeer_ptds, (const CUDA_MEMCPY3D_PEER *p), (p),
          copy_3d_peer(p))
COPY_PAIR(CUresult, cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync_ptsz,
          (const CUDA_MEMCPY3D_PEER *p, CUstream stream), (p, stream), copy_3d_peer(p))
#if NVS_CUDA_VERSION >= 13000
COPY_PAIR(CUresult, cuMemcpyBatchAsync_v2, cuMemcpyBatchAsync_v2_ptsz,
          (CUdeviceptr * dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
           CUmemcpyAttributes *attributes, size_t *attribute_indices, size_t attribute_count,
           CUstream stream),
          (dsts, srcs, sizes, count, attributes, attribute_indices, attribute_count, stream),
          batch(sizes, count))
COPY_PAIR(CUresult, cuMemcpy3DBatchAsync_v2, cuMemcpy3DBatchAsync_v2_ptsz,
          (size_t count, CUDA_MEMCPY3D_BATCH_OP *operations, unsigned long long flags,
           CUstream stream),
          (count, operations, flags, stream), batch_3d(count, operations))
#endif

/* ---- allocations: the pinned/pageable cache forgets ------------------------------------ */

/* Passed straight through, then the cache forgets (traced or not). */
#define FORGETS(name, parameters, arguments)                                                       \
    NVS_EXPORT CUresult CUDAAPI name parameters                                                    \
    {                                                                                              \
        NVS_PASS_THEN(name, CUDA_ERROR_NOT_FOUND, arguments, forget_pointers());                   \
    }

FORGETS(cuMemAlloc_v2, (CUdeviceptr * pointer, size_t bytes), (pointer, bytes))
FORGETS(cuMemFree_v2, (CUdeviceptr pointer), (pointer))
FORGETS(cuMemAllocHost_v2, (void **pointer, size_t bytes), (pointer, bytes))
FORGETS(cuMemHostAlloc, (void **pointer, size_t bytes, unsigned int flags), (pointer, bytes, flags))
FORGETS(cuMemFreeHost, (void *pointer), (pointer))
FORGETS(cuMemHostRegister_v2, (void *pointer, size_t bytes, unsigned int flags),
        (pointer, bytes, flags))
FORGETS(cuMemHostUnregister, (void *pointer), (pointer))

/* Passed straight through, then the kernel names are forgotten. */
NVS_EXPORT CUresult CUDAAPI cuModuleUnload(CUmodule module)
{
    NVS_PASS_THEN(cuModuleUnload, CUDA_ERROR_NOT_FOUND, (module), forget_kernels());
}

#if NVS_CUDA_VERSION >= 12000
NVS_EXPORT CUresult CUDAAPI cuLibraryUnload(CUlibrary library)
{
    NVS_PASS_THEN(cuLibraryUnload, CUDA_ERROR_NOT_FOUND, (library), forget_kernels());
}
#endif

/* ---- entry points --------------------------------------------------------------------- */

/* The driver answered SYMBOL with FOUND: if FOUND is the real function of one
 * of our hooks of that name (whichever version or stream variant), hand out
 * that hook's wrapper. Identified by address, so the requested version and the
 * per-thread flag are honoured exactly as the driver chose. */
void *nvs_driver_entry_point(const char *symbol, void *found)
{
    if (!symbol || !found || !(nvs_config()->hooks & NVS_HOOKS_CUDA))
        return found;
    size_t length = strlen(symbol);
    for (int id = 0; id < NVS_TRACED_HOOK_COUNT; id++) {
        const char *name = nvs_hook_name((enum nvs_hook_id)id);
        if (nvs_hook_group((enum nvs_hook_id)id) != NVS_HOOKS_CUDA ||
            (size_t)nvs_api_name_length(name) != length || strncmp(name, symbol, length))
            continue;
        void *wrapper = nvs_resolve_wrapper((enum nvs_hook_id)id);
        if (wrapper && nvs_resolve((enum nvs_hook_id)id) == found)
            return wrapper;
    }
    return found;
}

NVS_EXPORT CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **function, int version,
                                             cuuint64_t flags)
{
    PFN_cuGetProcAddress_v11030 real = (PFN_cuGetProcAddress_v11030)nvs_resolve(
        NVS_HOOK_ID(cuGetProcAddress));
    if (!real)
        return CUDA_ERROR_NOT_FOUND;
    CUresult result = real(symbol, function, version, flags);
    if (result == CUDA_SUCCESS && function)
        *function = nvs_driver_entry_point(symbol, *function);
    return result;
}

#if NVS_CUDA_VERSION >= 12000
NVS_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **function, int version,
                                                cuuint64_t flags,
                                                CUdriverProcAddressQueryResult *status)
{
    NVS_PASS_THEN(cuGetProcAddress_v2, CUDA_ERROR_NOT_FOUND,
                  (symbol, function, version, flags, status),
                  if (result == CUDA_SUCCESS &&
                      function) *function = nvs_driver_entry_point(symbol, *function));
}
#endif
