/* A stand-in libcudart for machines without a GPU — a test double, never
 * installed or shipped. Like the real runtime it takes every driver entry
 * point from cuGetProcAddress_v2 after dlopen("libcuda.so.1"), and each copy,
 * wait and launch calls the driver's inside (the _ptsz ones the driver's
 * per-thread variant). Kernels: a program registers its host stub with
 * nvs_stub_register_kernel(stub, "nvs_stub_NAME", named) as nvcc's code
 * registers its kernels (named 0: one cudaFuncGetName cannot name); the last
 * error is kept per thread as the runtime keeps it. */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#define EXPORT __attribute__((visibility("default")))

static struct {
    __typeof__(&cuMemAlloc_v2) alloc;
    __typeof__(&cuMemAllocHost_v2) alloc_host;
    __typeof__(&cuMemFreeHost) free_host;
    __typeof__(&cuMemcpy) copy;
    __typeof__(&cuMemcpyAsync) copy_async;
    __typeof__(&cuMemcpy2D_v2) copy_2d;
    __typeof__(&cuGetProcAddress_v2) lookup;
    __typeof__(&cuStreamSynchronize) stream_sync, stream_sync_ptsz;
    __typeof__(&cuCtxSynchronize) context_sync;
    __typeof__(&cuEventCreate) event_create;
    __typeof__(&cuEventRecord) event_record;
    __typeof__(&cuEventSynchronize) event_sync;
    __typeof__(&cuModuleGetFunction) get_function;
    __typeof__(&cuLaunchKernel) launch, launch_ptsz;
    __typeof__(&cuGraphLaunch) graph_launch, graph_launch_ptsz;
} driver;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load_driver(void)
{
    void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    driver.lookup = library ? (__typeof__(driver.lookup))dlsym(library, "cuGetProcAddress_v2") : NULL;
    if (!driver.lookup)
        return;
    driver.lookup("cuMemAlloc", (void **)&driver.alloc, CUDA_VERSION, 0, NULL);
    driver.lookup("cuMemAllocHost", (void **)&driver.alloc_host, CUDA_VERSION, 0, NULL);
    driver.lookup("cuMemFreeHost", (void **)&driver.free_host, CUDA_VERSION, 0, NULL);
    driver.lookup("cuMemcpy", (void **)&driver.copy, CUDA_VERSION, 0, NULL);
    driver.lookup("cuMemcpyAsync", (void **)&driver.copy_async, CUDA_VERSION, 0, NULL);
    driver.lookup("cuMemcpy2D", (void **)&driver.copy_2d, CUDA_VERSION, 0, NULL);
    const cuuint64_t per_thread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    driver.lookup("cuStreamSynchronize", (void **)&driver.stream_sync, CUDA_VERSION, 0, NULL);
    driver.lookup("cuStreamSynchronize", (void **)&driver.stream_sync_ptsz, CUDA_VERSION, per_thread, NULL);
    driver.lookup("cuCtxSynchronize", (void **)&driver.context_sync, 2000, 0, NULL);
    driver.lookup("cuEventCreate", (void **)&driver.event_create, CUDA_VERSION, 0, NULL);
    driver.lookup("cuEventRecord", (void **)&driver.event_record, CUDA_VERSION, 0, NULL);
    driver.lookup("cuEventSynchronize", (void **)&driver.event_sync, CUDA_VERSION, 0, NULL);
    driver.lookup("cuModuleGetFunction", (void **)&driver.get_function, CUDA_VERSION, 0, NULL);
    driver.lookup("cuLaunchKernel", (void **)&driver.launch, CUDA_VERSION, 0, NULL);
    driver.lookup("cuLaunchKernel", (void **)&driver.launch_ptsz, CUDA_VERSION, per_thread, NULL);
    driver.lookup("cuGraphLaunch", (void **)&driver.graph_launch, CUDA_VERSION, 0, NULL);
    driver.lookup("cuGraphLaunch", (void **)&driver.graph_launch_ptsz, CUDA_VERSION, per_thread, NULL);
}

static cudaError_t ready(void)
{
    pthread_once(&once, load_driver);
    return driver.lookup ? cudaSuccess : cudaErrorInsufficientDriver;
}

static cudaError_t status(CUresult result) { return result == CUDA_SUCCESS ? cudaSuccess : cudaErrorUnknown; }

EXPORT cudaError_t cudaMalloc(void **pointer, size_t bytes)
{
    if (ready()) return cudaErrorInsufficientDriver;
    return status(driver.alloc((CUdeviceptr *)pointer, bytes));
}
EXPORT cudaError_t cudaMallocHost(void **pointer, size_t bytes)
{
    if (ready()) return cudaErrorInsufficientDriver;
    return status(driver.alloc_host(pointer, bytes));
}
EXPORT cudaError_t cudaFreeHost(void *pointer)
{
    if (ready()) return cudaErrorInsufficientDriver;
    return status(driver.free_host(pointer));
}
EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind)
{
    (void)kind;
    if (ready()) return cudaErrorInsufficientDriver;
    return status(driver.copy((CUdeviceptr)dst, (CUdeviceptr)src, bytes));
}
EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                                   enum cudaMemcpyKind kind, cudaStream_t stream)
{
    (void)kind;
    if (ready()) return cudaErrorInsufficientDriver;
    return status(driver.copy_async((CUdeviceptr)dst, (CUdeviceptr)src, bytes, (CUstream)stream));
}
EXPORT cudaError_t cudaMemcpy2D(void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                                size_t width, size_t height, enum cudaMemcpyKind kind)
{
    if (ready()) return cudaErrorInsufficientDriver;
    CUDA_MEMCPY2D p = {
        .srcMemoryType = kind == cudaMemcpyHostToDevice ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE,
        .srcHost = src, .srcDevice = (CUdeviceptr)src, .srcPitch = src_pitch,
        .dstMemoryType = kind == cudaMemcpyDeviceToHost ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE,
        .dstHost = dst, .dstDevice = (CUdeviceptr)dst, .dstPitch = dst_pitch,
        .WidthInBytes = width, .Height = height,
    };
    return status(driver.copy_2d(&p));
}
EXPORT cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t bytes,
                                      size_t offset, enum cudaMemcpyKind kind)
{
    return cudaMemcpy((char *)symbol + offset, src, bytes, kind);
}
EXPORT cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t bytes, size_t offset,
                                        enum cudaMemcpyKind kind)
{
    return cudaMemcpy(dst, (const char *)symbol + offset, bytes, kind);
}
EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **function,
                                                    unsigned int version, unsigned long long flags,
                                                    enum cudaDriverEntryPointQueryResult *result)
{
    if (ready()) return cudaErrorInsufficientDriver;
    CUdriverProcAddressQueryResult found;
    CUresult answer = driver.lookup(symbol, function, (int)version, flags, &found);
    if (result) *result = found == CU_GET_PROC_ADDRESS_SUCCESS ? cudaDriverEntryPointSuccess
                                                                : cudaDriverEntryPointSymbolNotFound;
    return status(answer);
}
EXPORT cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **function,
                                           unsigned long long flags,
                                           enum cudaDriverEntryPointQueryResult *result)
{
    return cudaGetDriverEntryPointByVersion(symbol, function, CUDART_VERSION, flags, result);
}

/* ---- the last error, waits, kernels ----------------------------------------------------- */

static __thread cudaError_t last_error;

static cudaError_t failed(cudaError_t error)
{
    if (error != cudaSuccess)
        last_error = error;
    return error;
}

EXPORT cudaError_t cudaGetLastError(void)
{
    cudaError_t error = last_error;
    last_error = cudaSuccess;
    return error;
}
EXPORT cudaError_t cudaPeekAtLastError(void) { return last_error; }

EXPORT cudaError_t cudaDeviceSynchronize(void)
{
    if (ready()) return failed(cudaErrorInsufficientDriver);
    return failed(status(driver.context_sync()));
}
EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    if (ready()) return failed(cudaErrorInsufficientDriver);
    return failed(status(driver.stream_sync((CUstream)stream)));
}
EXPORT cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
    if (ready()) return failed(cudaErrorInsufficientDriver);
    return failed(status(driver.stream_sync_ptsz((CUstream)stream)));
}
/* A graph launch goes to the driver's, as the real runtime's does. */
EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t graph, cudaStream_t stream)
{
    if (ready()) return failed(cudaErrorInsufficientDriver);
    return failed(status(driver.graph_launch((CUgraphExec)graph, (CUstream)stream)));
}
EXPORT cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graph, cudaStream_t stream)
{
    if (ready()) return failed(cudaErrorInsufficientDriver);
    return failed(status(driver.graph_launch_ptsz((CUgraphExec)graph, (CUstream)stream)));
}
EXPORT cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    if (ready()) return failed(cudaErrorInsufficientDriver);
    return failed(status(driver.event_create((CUevent *)event, 0)));
}
EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    if (ready()) return failed(cudaErrorInsufficientDriver);
    return failed(status(driver.event_record((CUevent)event, (CUstream)stream)));
}
EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    if (ready()) return failed(cudaErrorInsufficientDriver);
    return failed(event ? status(driver.event_sync((CUevent)event)) : cudaErrorInvalidResourceHandle);
}

static pthread_mutex_t kernels_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { const void *stub; CUfunction function; const char *name; int named; } kernels[8];
static int kernel_count;

/* A program's kernel: its host stub, and the stand-in driver's kernel of that name. */
EXPORT int nvs_stub_register_kernel(const void *stub, const char *name, int named)
{
    CUfunction function;
    if (ready() || driver.get_function(&function, NULL, name) != CUDA_SUCCESS)
        return -1;
    pthread_mutex_lock(&kernels_lock);
    int added = kernel_count < 8;
    if (added)
        kernels[kernel_count++] = (__typeof__(kernels[0])){ stub, function, name, named };
    pthread_mutex_unlock(&kernels_lock);
    return added ? 0 : -1;
}

static int find_kernel(const void *stub)
{
    pthread_mutex_lock(&kernels_lock);
    int found = kernel_count - 1;
    while (found >= 0 && kernels[found].stub != stub)
        found--;
    pthread_mutex_unlock(&kernels_lock);
    return found;
}

EXPORT cudaError_t cudaFuncGetName(const char **name, const void *function)
{
    int found = find_kernel(function);
    if (!name || found < 0 || !kernels[found].named)
        return failed(cudaErrorInvalidDeviceFunction);
    *name = kernels[found].name;
    return cudaSuccess;
}

static cudaError_t launch(int per_thread, const void *function, dim3 grid, dim3 block,
                          void **arguments, size_t shared_bytes, cudaStream_t stream)
{
    if (ready()) return failed(cudaErrorInsufficientDriver);
    __typeof__(&cuLaunchKernel) launcher = per_thread ? driver.launch_ptsz : driver.launch;
    int found = find_kernel(function);
    if (found < 0)
        return failed(cudaErrorInvalidDeviceFunction);
    return failed(status(launcher(kernels[found].function, grid.x, grid.y, grid.z, block.x, block.y,
                                  block.z, (unsigned)shared_bytes, (CUstream)stream, arguments, NULL)));
}

EXPORT cudaError_t cudaLaunchKernel(const void *function, dim3 grid, dim3 block, void **arguments,
                                    size_t shared_bytes, cudaStream_t stream)
{
    return launch(0, function, grid, block, arguments, shared_bytes, stream);
}

EXPORT cudaError_t cudaLaunchKernel_ptsz(const void *function, dim3 grid, dim3 block,
                                         void **arguments, size_t shared_bytes, cudaStream_t stream)
{
    return launch(1, function, grid, block, arguments, shared_bytes, stream);
}
