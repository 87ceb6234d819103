/* A stand-in libcudart for machines without a GPU — a test double, never
 * installed or shipped. Like the real runtime it takes every driver entry
 * point from cuGetProcAddress_v2 after dlopen("libcuda.so.1"), and each copy
 * calls the driver's copy inside. */
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
