/* A stand-in libcuda.so.1 for machines without a GPU — a test double, never
 * installed or shipped. Device memory is host memory; copies are memcpy; the
 * driver's pointer registry, cuGetProcAddress (versions, per-thread flag) and
 * the per-thread-default-stream variants behave as the real driver documents.
 * nvs_stub_per_thread_calls() counts calls that reached a _ptds/_ptsz variant.
 * The example harness's kernels run on the CPU (see cuLaunchKernel); kernels
 * named nvs_stub_* do nothing, and nvs_stub_launches() counts their launches.
 * A wait for the GPU (stream, context, event) sleeps WAIT_NS, as if the GPU
 * were still busy. Built with frame pointers, as a driver or a distribution's
 * libraries may be: asked (nvs_stub_walk_frames), a copy from the host, a
 * stream's wait and a launch walk the chain of saved frame pointers from
 * inside, as a sampling profiler does (perf -g, nsys --backtrace=fp). */
#define _GNU_SOURCE
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#undef cuGetProcAddress
/* Protected, as in the real driver: what cuGetProcAddress hands out and what
 * its functions call among themselves are its own functions, never the shim's
 * wrappers that LD_PRELOAD puts in front of the exported names. (With default
 * visibility both would go through the symbol scope and reach the wrappers,
 * and the shim's own cuGetProcAddress handling would go untested.) */
#define EXPORT __attribute__((visibility("protected")))

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { uintptr_t base; size_t bytes; CUmemorytype type; } registry[256];
static int per_thread_calls;

EXPORT int nvs_stub_per_thread_calls(void) { return per_thread_calls; }

static void remember(const void *base, size_t bytes, CUmemorytype type)
{
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < 256; i++) {
        if (!registry[i].base) {
            registry[i].base = (uintptr_t)base;
            registry[i].bytes = bytes;
            registry[i].type = type;
            break;
        }
    }
    pthread_mutex_unlock(&registry_lock);
}

static void forget(const void *base)
{
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < 256; i++)
        if (registry[i].base == (uintptr_t)base)
            registry[i].base = 0;
    pthread_mutex_unlock(&registry_lock);
}

/* The return addresses a frame-pointer walk from inside the driver finds,
 * innermost first, at the last call that walked (nvs_stub_walk_frames(1)
 * asks): each frame's saved frame pointer leads to its caller's, and the word
 * above it is the return address, as the kernel's walker for perf reads them;
 * like it, the walk stops at a link that does not lead up the stack. */
#define WALKED_MAX 32
static int walk_asked, walked_count;
static void *walked[WALKED_MAX];

EXPORT void nvs_stub_walk_frames(int on)
{
    walk_asked = on;
    if (on)
        walked_count = 0;
}
EXPORT int nvs_stub_walked(void **out, int max)
{
    int n = walked_count < max ? walked_count : max;
    memcpy(out, walked, (size_t)n * sizeof *out);
    return n;
}

static __attribute__((noinline)) void walk_frames(void)
{
    void **frame = __builtin_frame_address(0);
    int n = 0;
    while (frame && n < WALKED_MAX) {
        void **up = frame[0];
        walked[n++] = frame[1];
        if (up <= frame || (char *)up - (char *)frame > (1 << 20))
            break;
        frame = up;
    }
    walked_count = n;
}
#define WALK_IF_ASKED() (walk_asked ? walk_frames() : (void)0)

/* NVS_STUB_LOG=PATH: a line per call that tests watch (cuInit, the profiler
 * calls), with the number of host-to-device uploads made so far. */
static int uploads, initialised, primary_retained;
static __thread CUcontext current;

static void stub_log(const char *what)
{
    const char *path = getenv("NVS_STUB_LOG");
    if (!path)
        return;
    FILE *log = fopen(path, "a");
    if (!log)
        return;
    fprintf(log, "%s uploads=%d context=%s\n", what, uploads, current ? "current" : "none");
    fclose(log);
}

/* NVS_STUB_INIT_MS: cuInit takes that long, as a real GPU's start-up can
 * (240 ms on an H200). NVS_STUB_INIT_DONE=PATH: cuInit appends to PATH the
 * CLOCK_MONOTONIC nanoseconds at which it returns, a line a call, so that a
 * test can order what the program did after it (the moment, not a duration:
 * no load can move a later event before it). */
EXPORT CUresult cuInit(unsigned int flags)
{
    (void)flags;
    const char *delay = getenv("NVS_STUB_INIT_MS");
    if (delay) {
        long ms = atol(delay);
        struct timespec wait = { ms / 1000, (ms % 1000) * 1000000L };
        while (nanosleep(&wait, &wait))
            ;
    }
    initialised = 1;
    stub_log("cuInit");
    const char *done = getenv("NVS_STUB_INIT_DONE");
    FILE *out = done ? fopen(done, "a") : NULL;
    if (out) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        fprintf(out, "%lld\n", (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
        fclose(out);
    }
    return CUDA_SUCCESS;
}
/* NVS_STUB_PROFILER_ERROR: the error the profiler calls return (a driver
 * whose profiler is disabled), where they would succeed. */
static CUresult profiler_result(void)
{
    const char *error = getenv("NVS_STUB_PROFILER_ERROR");
    return !current ? CUDA_ERROR_INVALID_CONTEXT : error ? (CUresult)atoi(error) : CUDA_SUCCESS;
}
EXPORT CUresult cuProfilerStart(void) { stub_log("cuProfilerStart"); return profiler_result(); }
EXPORT CUresult cuProfilerStop(void) { stub_log("cuProfilerStop"); return profiler_result(); }
EXPORT CUresult cuCtxGetCurrent(CUcontext *context)
{
    *context = initialised ? current : NULL;
    return initialised ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}
EXPORT CUresult cuCtxPushCurrent_v2(CUcontext context) { current = context; return CUDA_SUCCESS; }
EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *context) { *context = current; current = NULL; return CUDA_SUCCESS; }
EXPORT CUresult cuDriverGetVersion(int *version) { *version = CUDA_VERSION; return CUDA_SUCCESS; }
EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) { *device = ordinal; return CUDA_SUCCESS; }
static int primary;
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device)
{
    (void)device;
    if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;
    primary_retained++;
    *context = (CUcontext)&primary;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) { (void)device; primary_retained--; return CUDA_SUCCESS; }
EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice device, unsigned *flags, int *active)
{
    (void)device;
    if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;
    *flags = 0;
    *active = primary_retained > 0;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxSetCurrent(CUcontext context) { current = context; return CUDA_SUCCESS; }
EXPORT CUresult cuStreamCreate(CUstream *stream, unsigned int flags)
{
    static int streams[8];
    static int next;
    (void)flags;
    *stream = (CUstream)&streams[next++ % 8];
    return CUDA_SUCCESS;
}

/* The waits for the GPU: a measurable time each. */
#define WAIT_NS 200000
static void wait_for_gpu(void)
{
    struct timespec pause = { 0, WAIT_NS };
    while (nanosleep(&pause, &pause) != 0)
        ;
}
EXPORT CUresult cuStreamSynchronize(CUstream stream) { (void)stream; WALK_IF_ASKED(); wait_for_gpu(); return CUDA_SUCCESS; }
EXPORT CUresult cuStreamSynchronize_ptsz(CUstream stream) { per_thread_calls++; return cuStreamSynchronize(stream); }
EXPORT CUresult cuCtxSynchronize(void) { wait_for_gpu(); return CUDA_SUCCESS; }
EXPORT CUresult cuCtxSynchronize_v2(CUcontext context) { (void)context; return cuCtxSynchronize(); }
static int events[8], next_event;
EXPORT CUresult cuEventCreate(CUevent *event, unsigned int flags)
{
    (void)flags;
    *event = (CUevent)&events[next_event++ % 8];
    return CUDA_SUCCESS;
}
EXPORT CUresult cuEventRecord(CUevent event, CUstream stream) { (void)event; (void)stream; return CUDA_SUCCESS; }
EXPORT CUresult cuEventSynchronize(CUevent event) { wait_for_gpu(); return event ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }
EXPORT CUresult cuEventDestroy_v2(CUevent event) { (void)event; return CUDA_SUCCESS; }
/* A stream waiting for an event: no wait for the CPU. */
EXPORT CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags)
{
    (void)stream; (void)flags;
    return event ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *pointer, size_t bytes)
{
    void *memory = malloc(bytes);
    if (!memory) return CUDA_ERROR_OUT_OF_MEMORY;
    remember(memory, bytes, CU_MEMORYTYPE_DEVICE);
    *pointer = (CUdeviceptr)memory;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr pointer) { forget((void *)pointer); free((void *)pointer); return CUDA_SUCCESS; }
EXPORT CUresult cuMemAllocHost_v2(void **pointer, size_t bytes)
{
    *pointer = malloc(bytes);
    if (!*pointer) return CUDA_ERROR_OUT_OF_MEMORY;
    remember(*pointer, bytes, CU_MEMORYTYPE_HOST);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemHostAlloc(void **pointer, size_t bytes, unsigned int flags) { (void)flags; return cuMemAllocHost_v2(pointer, bytes); }
EXPORT CUresult cuMemFreeHost(void *pointer) { forget(pointer); free(pointer); return CUDA_SUCCESS; }
EXPORT CUresult cuMemHostRegister_v2(void *pointer, size_t bytes, unsigned int flags) { (void)flags; remember(pointer, bytes, CU_MEMORYTYPE_HOST); return CUDA_SUCCESS; }
EXPORT CUresult cuMemHostUnregister(void *pointer) { forget(pointer); return CUDA_SUCCESS; }

#ifndef STUB_WITHOUT_POINTER_QUERY
EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr pointer)
{
    if (attribute != CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult result = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < 256; i++) {
        if (registry[i].base && pointer >= registry[i].base &&
            pointer < registry[i].base + registry[i].bytes) {
            *(CUmemorytype *)data = registry[i].type;
            result = CUDA_SUCCESS;
            break;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    return result;
}
#endif

/* Each copy, and its per-thread twin that also counts itself. */
#define COPY(name, twin, parameters, body)                                                  \
    EXPORT CUresult name parameters { body; return CUDA_SUCCESS; }                          \
    EXPORT CUresult twin parameters { per_thread_calls++; body; return CUDA_SUCCESS; }

COPY(cuMemcpy, cuMemcpy_ptds, (CUdeviceptr d, CUdeviceptr s, size_t n), memcpy((void *)d, (void *)s, n))
COPY(cuMemcpyAsync, cuMemcpyAsync_ptsz, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), (void)st; memcpy((void *)d, (void *)s, n))
COPY(cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds, (CUdeviceptr d, const void *s, size_t n), WALK_IF_ASKED(); uploads++; memcpy((void *)d, s, n))
COPY(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz, (CUdeviceptr d, const void *s, size_t n, CUstream st), (void)st; memcpy((void *)d, s, n))
COPY(cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds, (void *d, CUdeviceptr s, size_t n), memcpy(d, (void *)s, n))
COPY(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz, (void *d, CUdeviceptr s, size_t n, CUstream st), (void)st; memcpy(d, (void *)s, n))
COPY(cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds, (CUdeviceptr d, CUdeviceptr s, size_t n), memcpy((void *)d, (void *)s, n))
COPY(cuMemcpy2D_v2, cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *p),
     const char *from = p->srcMemoryType == CU_MEMORYTYPE_HOST ? p->srcHost : (const void *)p->srcDevice;
     char *to = p->dstMemoryType == CU_MEMORYTYPE_HOST ? p->dstHost : (void *)p->dstDevice;
     for (size_t row = 0; row < p->Height; row++)
         memcpy(to + row * p->dstPitch, from + row * p->srcPitch, p->WidthInBytes))

/* Modules and kernels: the stand-in knows the example harness's two kernels
 * (examples/harness_kernels.cu) and runs them with the harness's own C
 * reference, so the harness's GPU path runs here end to end. */
#include "harness_infer.h"

static int module_handle, harness_convolve_handle, harness_cell_argmax_handle;
/* Kernels named nvs_stub_*: a handle each, holding its name. */
static char stub_kernels[8][64];
static int stub_kernel_count, launches;

/* NAME's handle in TABLE (COUNT names so far), the name added when new: the
 * handle is where the name is kept. NULL when the table is full. */
static char *kernel_handle(char (*table)[64], int *count, const char *name)
{
    int found = 0;
    while (found < *count && strcmp(table[found], name))
        found++;
    if (found == *count) {
        if (*count == 8) return NULL;
        strcpy(table[(*count)++], name);
    }
    return table[found];
}
EXPORT int nvs_stub_launches(void) { return launches; }
EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    if (!image) return CUDA_ERROR_INVALID_VALUE;
    *module = (CUmodule)&module_handle;
    return CUDA_SUCCESS;
}
/* Unloading forgets the nvs_stub_* kernels: the next one found takes the first
 * handle again, as a real driver may give a new function a freed address. */
EXPORT CUresult cuModuleUnload(CUmodule module) { (void)module; stub_kernel_count = 0; return CUDA_SUCCESS; }
EXPORT CUresult cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name)
{
    (void)module;
    if (!strcmp(name, "harness_convolve")) *function = (CUfunction)&harness_convolve_handle;
    else if (!strcmp(name, "harness_cell_argmax")) *function = (CUfunction)&harness_cell_argmax_handle;
    else if (!strncmp(name, "nvs_stub_", 9) && strlen(name) < sizeof stub_kernels[0]) {
        char *handle = kernel_handle(stub_kernels, &stub_kernel_count, name);
        if (!handle) return CUDA_ERROR_OUT_OF_MEMORY;
        *function = (CUfunction)handle;
    } else return CUDA_ERROR_NOT_FOUND;
    return CUDA_SUCCESS;
}
/* Libraries (CUDA 12's context-independent loading, which the runtime uses for
 * every kernel of a program): their kernels are CUkernel handles, a table of
 * their own, holding the names cuLibraryGetKernel was asked for. cuLaunchKernel
 * takes them; cuKernelGetName names them and cuFuncGetName refuses them, as
 * the driver does. */
static char library_kernels[8][64];
static int library_kernel_count;
#if CUDA_VERSION >= 12000 /* Debian 12's CUDA 11.8 headers have no CUlibrary or CUkernel */
static int library_handle;
EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jit_options,
                                  void **jit_values, unsigned jit_count, CUlibraryOption *options,
                                  void **values, unsigned count)
{
    (void)jit_options; (void)jit_values; (void)jit_count; (void)options; (void)values; (void)count;
    if (!code) return CUDA_ERROR_INVALID_VALUE;
    *library = (CUlibrary)&library_handle;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuLibraryUnload(CUlibrary library) { (void)library; library_kernel_count = 0; return CUDA_SUCCESS; }
EXPORT CUresult cuLibraryGetKernel(CUkernel *kernel, CUlibrary library, const char *name)
{
    (void)library;
    if (!strstr(name, "nvs_stub_") || strlen(name) >= sizeof library_kernels[0]) return CUDA_ERROR_NOT_FOUND;
    char *handle = kernel_handle(library_kernels, &library_kernel_count, name);
    if (!handle) return CUDA_ERROR_OUT_OF_MEMORY;
    *kernel = (CUkernel)handle;
    return CUDA_SUCCESS;
}
#endif
static int is_library_kernel(const void *handle)
{
    return (const char *)handle >= library_kernels[0] && (const char *)handle < library_kernels[library_kernel_count];
}
#if CUDA_VERSION >= 12000
EXPORT CUresult cuKernelGetName(const char **name, CUkernel kernel)
{
    if (!name || !is_library_kernel(kernel)) return CUDA_ERROR_INVALID_HANDLE;
    *name = (const char *)kernel;
    return CUDA_SUCCESS;
}
#endif

EXPORT CUresult cuFuncGetName(const char **name, CUfunction function)
{
    if (!name || !function) return CUDA_ERROR_INVALID_VALUE;
    if (function == (CUfunction)&harness_convolve_handle) *name = "harness_convolve";
    else if (function == (CUfunction)&harness_cell_argmax_handle) *name = "harness_cell_argmax";
    else if ((char *)function >= stub_kernels[0] && (char *)function < stub_kernels[stub_kernel_count])
        *name = (const char *)function;
    else return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuLaunchKernel(CUfunction function, unsigned gx, unsigned gy, unsigned gz,
                               unsigned bx, unsigned by, unsigned bz, unsigned shared,
                               CUstream stream, void **parameters, void **extra)
{
    (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shared; (void)stream; (void)extra;
    WALK_IF_ASKED();
    if (((char *)function >= stub_kernels[0] && (char *)function < stub_kernels[stub_kernel_count]) ||
        is_library_kernel(function)) {
        launches++;
        return CUDA_SUCCESS;
    }
    /* Both harness kernels take (input, output, width, height). */
    void *input = *(void **)parameters[0], *output = *(void **)parameters[1];
    int width = *(int *)parameters[2], height = *(int *)parameters[3];
    if (function == (CUfunction)&harness_convolve_handle)
        harness_convolve(input, output, width, height);
    else if (function == (CUfunction)&harness_cell_argmax_handle)
        *(int *)output = harness_cell_argmax(input, width, height);
    else
        return CUDA_ERROR_INVALID_HANDLE;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernel_ptsz(CUfunction function, unsigned gx, unsigned gy, unsigned gz,
                                    unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                    CUstream stream, void **parameters, void **extra)
{
    per_thread_calls++;
    return cuLaunchKernel(function, gx, gy, gz, bx, by, bz, shared, stream, parameters, extra);
}

EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction function, void **parameters, void **extra)
{
    if (!config) return CUDA_ERROR_INVALID_VALUE;
    return cuLaunchKernel(function, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                          config->blockDimY, config->blockDimZ, config->sharedMemBytes, config->hStream,
                          parameters, extra);
}
EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction function, void **parameters,
                                      void **extra)
{
    per_thread_calls++;
    return cuLaunchKernelEx(config, function, parameters, extra);
}

/* A graph launch: any executable graph handle but NULL runs (nothing). */
static int graph_launches;
EXPORT int nvs_stub_graph_launches(void) { return graph_launches; }
EXPORT CUresult cuGraphLaunch(CUgraphExec graph, CUstream stream)
{
    (void)stream;
    if (!graph) return CUDA_ERROR_INVALID_VALUE;
    graph_launches++;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec graph, CUstream stream)
{
    per_thread_calls++;
    return cuGraphLaunch(graph, stream);
}

/* A symbol may have several versions: the newest not above the version asked is handed out. */
struct entry { const char *symbol; int version; void *function; void *per_thread; };
static const struct entry entries[] = {
    { "cuInit", 2000, (void *)cuInit, NULL },
    { "cuDriverGetVersion", 2020, (void *)cuDriverGetVersion, NULL },
    { "cuDeviceGet", 2000, (void *)cuDeviceGet, NULL },
    { "cuDevicePrimaryCtxRetain", 7000, (void *)cuDevicePrimaryCtxRetain, NULL },
    { "cuCtxSetCurrent", 4000, (void *)cuCtxSetCurrent, NULL },
    { "cuStreamCreate", 2000, (void *)cuStreamCreate, NULL },
    { "cuStreamSynchronize", 2000, (void *)cuStreamSynchronize, (void *)cuStreamSynchronize_ptsz },
    { "cuCtxSynchronize", 2000, (void *)cuCtxSynchronize, NULL },
    { "cuCtxSynchronize", 13000, (void *)cuCtxSynchronize_v2, NULL },
    { "cuEventCreate", 2000, (void *)cuEventCreate, NULL },
    { "cuEventRecord", 2000, (void *)cuEventRecord, NULL },
    { "cuEventSynchronize", 2000, (void *)cuEventSynchronize, NULL },
    { "cuEventDestroy", 4000, (void *)cuEventDestroy_v2, NULL },
    { "cuStreamWaitEvent", 3020, (void *)cuStreamWaitEvent, NULL },
    { "cuFuncGetName", 12030, (void *)cuFuncGetName, NULL },
#if CUDA_VERSION >= 12000
    { "cuKernelGetName", 12030, (void *)cuKernelGetName, NULL },
    { "cuLibraryLoadData", 12000, (void *)cuLibraryLoadData, NULL },
    { "cuLibraryGetKernel", 12000, (void *)cuLibraryGetKernel, NULL },
    { "cuLibraryUnload", 12000, (void *)cuLibraryUnload, NULL },
#endif
    { "cuModuleUnload", 2000, (void *)cuModuleUnload, NULL },
    { "cuModuleLoadData", 2000, (void *)cuModuleLoadData, NULL },
    { "cuModuleGetFunction", 2000, (void *)cuModuleGetFunction, NULL },
    { "cuLaunchKernel", 4000, (void *)cuLaunchKernel, (void *)cuLaunchKernel_ptsz },
    { "cuLaunchKernelEx", 11060, (void *)cuLaunchKernelEx, (void *)cuLaunchKernelEx_ptsz },
    { "cuGraphLaunch", 10000, (void *)cuGraphLaunch, (void *)cuGraphLaunch_ptsz },
    { "cuMemAlloc", 3020, (void *)cuMemAlloc_v2, NULL },
    { "cuMemFree", 3020, (void *)cuMemFree_v2, NULL },
    { "cuMemAllocHost", 3020, (void *)cuMemAllocHost_v2, NULL },
    { "cuMemFreeHost", 2000, (void *)cuMemFreeHost, NULL },
    { "cuMemHostRegister", 6050, (void *)cuMemHostRegister_v2, NULL },
    { "cuMemHostUnregister", 4000, (void *)cuMemHostUnregister, NULL },
#ifndef STUB_WITHOUT_POINTER_QUERY
    { "cuPointerGetAttribute", 4000, (void *)cuPointerGetAttribute, NULL },
#endif
    { "cuMemcpy", 4000, (void *)cuMemcpy, (void *)cuMemcpy_ptds },
    { "cuMemcpyAsync", 4000, (void *)cuMemcpyAsync, (void *)cuMemcpyAsync_ptsz },
    { "cuMemcpyHtoD", 3020, (void *)cuMemcpyHtoD_v2, (void *)cuMemcpyHtoD_v2_ptds },
    { "cuMemcpyHtoDAsync", 3020, (void *)cuMemcpyHtoDAsync_v2, (void *)cuMemcpyHtoDAsync_v2_ptsz },
    { "cuMemcpyDtoH", 3020, (void *)cuMemcpyDtoH_v2, (void *)cuMemcpyDtoH_v2_ptds },
    { "cuMemcpyDtoHAsync", 3020, (void *)cuMemcpyDtoHAsync_v2, (void *)cuMemcpyDtoHAsync_v2_ptsz },
    { "cuMemcpyDtoD", 3020, (void *)cuMemcpyDtoD_v2, (void *)cuMemcpyDtoD_v2_ptds },
    { "cuMemcpy2D", 3020, (void *)cuMemcpy2D_v2, (void *)cuMemcpy2D_v2_ptds },
    { "cuGetProcAddress", 12000, NULL, NULL },  /* filled below: itself */
};

#if CUDA_VERSION < 12000
/* CUDA 11 headers have cuGetProcAddress without its status (12.0's _v2 has
 * it): the stub names the statuses itself, with the driver's values. */
typedef enum {
    CU_GET_PROC_ADDRESS_SUCCESS = 0,
    CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
    CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
} CUdriverProcAddressQueryResult;
#endif
EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **function, int version,
                                    cuuint64_t flags, CUdriverProcAddressQueryResult *status);

EXPORT CUresult cuGetProcAddress(const char *symbol, void **function, int version, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, function, version, flags, NULL);
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **function, int version,
                                    cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    const struct entry *best = NULL;
    int known = 0;
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        if (strcmp(entries[i].symbol, symbol))
            continue;
        known = 1;
        if (version >= entries[i].version && (!best || entries[i].version > best->version))
            best = &entries[i];
    }
    if (!best) {
        if (status) *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                                    : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        *function = NULL;
        return CUDA_ERROR_NOT_FOUND;
    }
    if (!strcmp(symbol, "cuGetProcAddress"))
        *function = (void *)cuGetProcAddress_v2;
    else if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best->per_thread)
        *function = best->per_thread;
    else
        *function = best->function;
    if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}
