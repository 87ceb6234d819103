/* CUDA runtime copies in NVTX domain "cuda", for programs that load libcudart
 * dynamically. The runtime calls the driver inside: that copy runs below depth
 * 0, so a cudaMemcpy is one range, not two. (Programs with nvcc's default
 * static runtime have no runtime symbols to interpose; their copies show at
 * the driver, through cuGetProcAddress.) */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>

#include "../hook.h"
#include "copy.h"

/* A runtime copy of BYTES between DESTINATION and SOURCE of KIND. */
static struct copy runtime_copy(size_t bytes, const void *destination, const void *source,
                                enum cudaMemcpyKind kind)
{
    struct copy copy;
    switch (kind) {
    case cudaMemcpyHostToDevice: copy = nvs_copy_host_to_device(bytes, source); break;
    case cudaMemcpyDeviceToHost: copy = nvs_copy_device_to_host(bytes, destination); break;
    case cudaMemcpyDeviceToDevice: copy = nvs_copy_between(bytes, DTOD); break;
    case cudaMemcpyHostToHost: copy = nvs_copy_between(bytes, HTOH); break;
    default: copy = nvs_copy_unified(bytes, (uintptr_t)destination, (uintptr_t)source); break;
    }
    copy.name_direction = true; /* one call, every direction: the name says which */
    return copy;
}

static struct copy copy_3d(const struct cudaMemcpy3DParms *p)
{
    if (!p)
        return nvs_copy_between(0, UNKNOWN);
    return runtime_copy(p->extent.width * p->extent.height * p->extent.depth, p->dstPtr.ptr,
                        p->srcPtr.ptr, p->kind);
}

static struct copy copy_3d_peer(const struct cudaMemcpy3DPeerParms *p)
{
    return nvs_copy_between(p ? p->extent.width * p->extent.height * p->extent.depth : 0, PEER);
}

COPY_PAIR(cudaError_t, cudaMemcpy, cudaMemcpy_ptds,
          (void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind),
          (dst, src, bytes, kind), runtime_copy(bytes, dst, src, kind))
COPY_PAIR(cudaError_t, cudaMemcpyAsync, cudaMemcpyAsync_ptsz,
          (void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind, cudaStream_t stream),
          (dst, src, bytes, kind, stream), runtime_copy(bytes, dst, src, kind))
COPY_PAIR(cudaError_t, cudaMemcpy2D, cudaMemcpy2D_ptds,
          (void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t width,
           size_t height, enum cudaMemcpyKind kind),
          (dst, dst_pitch, src, src_pitch, width, height, kind),
          runtime_copy(width *height, dst, src, kind))
COPY_PAIR(cudaError_t, cudaMemcpy2DAsync, cudaMemcpy2DAsync_ptsz,
          (void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t width,
           size_t height, enum cudaMemcpyKind kind, cudaStream_t stream),
          (dst, dst_pitch, src, src_pitch, width, height, kind, stream),
          runtime_copy(width *height, dst, src, kind))
COPY_PAIR(cudaError_t, cudaMemcpy3D, cudaMemcpy3D_ptds, (const struct cudaMemcpy3DParms *p), (p),
          copy_3d(p))
COPY_PAIR(cudaError_t, cudaMemcpy3DAsync, cudaMemcpy3DAsync_ptsz,
          (const struct cudaMemcpy3DParms *p, cudaStream_t stream), (p, stream), copy_3d(p))
COPY_PAIR(cudaError_t, cudaMemcpy3DPeer, cudaMemcpy3DPeer_ptds,
          (const struct cudaMemcpy3DPeerParms *p), (p), copy_3d_peer(p))
COPY_PAIR(cudaError_t, cudaMemcpy3DPeerAsync, cudaMemcpy3DPeerAsync_ptsz,
          (const struct cudaMemcpy3DPeerParms *p, cudaStream_t stream), (p, stream),
          copy_3d_peer(p))
COPY_PAIR(cudaError_t, cudaMemcpyToSymbol, cudaMemcpyToSymbol_ptds,
          (const void *symbol, const void *src, size_t bytes, size_t offset,
           enum cudaMemcpyKind kind),
          (symbol, src, bytes, offset, kind), runtime_copy(bytes, symbol, src, kind))
COPY_PAIR(cudaError_t, cudaMemcpyFromSymbol, cudaMemcpyFromSymbol_ptds,
          (void *dst, const void *symbol, size_t bytes, size_t offset, enum cudaMemcpyKind kind),
          (dst, symbol, bytes, offset, kind), runtime_copy(bytes, dst, symbol, kind))
COPY_PAIR(cudaError_t, cudaMemcpyToSymbolAsync, cudaMemcpyToSymbolAsync_ptsz,
          (const void *symbol, const void *src, size_t bytes, size_t offset,
           enum cudaMemcpyKind kind, cudaStream_t stream),
          (symbol, src, bytes, offset, kind, stream), runtime_copy(bytes, symbol, src, kind))
COPY_PAIR(cudaError_t, cudaMemcpyFromSymbolAsync, cudaMemcpyFromSymbolAsync_ptsz,
          (void *dst, const void *symbol, size_t bytes, size_t offset, enum cudaMemcpyKind kind,
           cudaStream_t stream),
          (dst, symbol, bytes, offset, kind, stream), runtime_copy(bytes, dst, symbol, kind))
COPY(cudaError_t, cudaMemcpyPeer,
     (void *dst, int dst_device, const void *src, int src_device, size_t bytes),
     (dst, dst_device, src, src_device, bytes), nvs_copy_between(bytes, PEER))
COPY(cudaError_t, cudaMemcpyPeerAsync,
     (void *dst, int dst_device, const void *src, int src_device, size_t bytes,
      cudaStream_t stream),
     (dst, dst_device, src, src_device, bytes, stream), nvs_copy_between(bytes, PEER))

/* ---- waits and launches ----------------------------------------------------------- */

/* The runtime's name of the kernel whose host stub is FUNCTION
 * (cudaFuncGetName). A failed cudaFuncGetName leaves its error for
 * cudaGetLastError: it is asked only while no error is pending, and its
 * error is taken back, so the program's cudaGetLastError answers as without
 * the shim. An error pending: not now. */
static int runtime_kernel_name(const void *function, const char **name)
{
#if NVS_CUDA_VERSION >= 12030
    static _Atomic(void *) get_name, peek, take;
    __typeof__(&cudaFuncGetName) get_name_fn = (__typeof__(&cudaFuncGetName))nvs_find_function_once(
        &get_name, "libcudart.so", "cudaFuncGetName");
    __typeof__(&cudaPeekAtLastError) peek_fn = (__typeof__(&cudaPeekAtLastError))
        nvs_find_function_once(&peek, "libcudart.so", "cudaPeekAtLastError");
    __typeof__(&cudaGetLastError) take_fn = (__typeof__(&cudaGetLastError))nvs_find_function_once(
        &take, "libcudart.so", "cudaGetLastError");
    *name = NULL;
    if (!get_name_fn || !peek_fn || !take_fn)
        return 0;
    if (peek_fn() != cudaSuccess)
        return -1;
    if (get_name_fn(name, function) != cudaSuccess) {
        *name = NULL;
        take_fn();
    }
#else
    /* Headers older than 12.3 (Debian 12's CUDA 11.8) do not declare
     * cudaFuncGetName: the launch takes its call's name. */
    (void)function;
    *name = NULL;
#endif
    return 0;
}

/* A wait for the GPU and a launch (copy.h), in two halves (hook.h). */
#define WAIT(name, parameters, arguments)                                                          \
    NVS_SPLIT_WRAPPER(NVS_HOOKS_CUDA, cudaError_t, name, parameters, arguments, nvs_resolve,       \
                      cudaErrorNotSupported, nvs_wait_open(NVS_HOOK_ID(name)), nvs_cuda_end())
#define LAUNCH(name)                                                                               \
    NVS_SPLIT_WRAPPER(NVS_HOOKS_CUDA, cudaError_t, name,                                           \
                      (const void *function, dim3 grid, dim3 block, void **arguments,              \
                       size_t shared_bytes, cudaStream_t stream),                                  \
                      (function, grid, block, arguments, shared_bytes, stream), nvs_resolve,       \
                      cudaErrorNotSupported,                                                       \
                      nvs_launch_open(NVS_HOOK_ID(name), NVS_HOOK_ID(cudaLaunchKernel), function,  \
                                      runtime_kernel_name),                                        \
                      nvs_cuda_end())

#define GRAPH_LAUNCH(name)                                                                         \
    NVS_SPLIT_WRAPPER(NVS_HOOKS_CUDA, cudaError_t, name,                                           \
                      (cudaGraphExec_t graph, cudaStream_t stream), (graph, stream), nvs_resolve,  \
                      cudaErrorNotSupported, nvs_graph_launch_open(NVS_HOOK_ID(name)),             \
                      nvs_cuda_end())

WAIT(cudaDeviceSynchronize, (void), ())
WAIT(cudaStreamSynchronize, (cudaStream_t stream), (stream))
WAIT(cudaStreamSynchronize_ptsz, (cudaStream_t stream), (stream))
WAIT(cudaEventSynchronize, (cudaEvent_t event), (event))
LAUNCH(cudaLaunchKernel)
LAUNCH(cudaLaunchKernel_ptsz)
GRAPH_LAUNCH(cudaGraphLaunch)
GRAPH_LAUNCH(cudaGraphLaunch_ptsz)

/* Driver entry points handed out by the runtime get the wrappers too. */
#define ENTRY_POINT(name, parameters, arguments, symbol, function)                                 \
    NVS_EXPORT cudaError_t CUDARTAPI name parameters                                               \
    {                                                                                              \
        NVS_PASS_THEN(name, cudaErrorNotSupported, arguments,                                      \
                      if (result == cudaSuccess &&                                                 \
                          function) *function = nvs_driver_entry_point(symbol, *function));        \
    }

#if NVS_CUDA_VERSION >= 12000
/* Deprecated in CUDA 13, still called by programs built against 12. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
extern __typeof__(cudaGetDriverEntryPoint) cudaGetDriverEntryPoint_ptsz;
ENTRY_POINT(cudaGetDriverEntryPoint,
            (const char *symbol, void **function, unsigned long long flags,
             enum cudaDriverEntryPointQueryResult *status),
            (symbol, function, flags, status), symbol, function)
ENTRY_POINT(cudaGetDriverEntryPoint_ptsz,
            (const char *symbol, void **function, unsigned long long flags,
             enum cudaDriverEntryPointQueryResult *status),
            (symbol, function, flags, status), symbol, function)
#endif
#if NVS_CUDA_VERSION >= 12050
extern __typeof__(cudaGetDriverEntryPointByVersion) cudaGetDriverEntryPointByVersion_ptsz;
ENTRY_POINT(cudaGetDriverEntryPointByVersion,
            (const char *symbol, void **function, unsigned int version, unsigned long long flags,
             enum cudaDriverEntryPointQueryResult *status),
            (symbol, function, version, flags, status), symbol, function)
ENTRY_POINT(cudaGetDriverEntryPointByVersion_ptsz,
            (const char *symbol, void **function, unsigned int version, unsigned long long flags,
             enum cudaDriverEntryPointQueryResult *status),
            (symbol, function, version, flags, status), symbol, function)
#endif
