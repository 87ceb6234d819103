/* A libcuda.so.1 that does nothing: cuMemcpyHtoD, cuStreamSynchronize and
 * cuLaunchKernel return at once. The shim asks cuPointerGetAttribute once per
 * host buffer whether it is pinned; this driver never saw the buffer, so it
 * answers as the real one does for malloc'd memory (CUDA_ERROR_INVALID_VALUE:
 * pageable). It asks cuFuncGetName once per kernel. Never installed; bench only. */
#include <cuda.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT CUresult CUDAAPI cuInit(unsigned int flags)
{
    (void)flags;
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr destination, const void *source, size_t bytes)
{
    (void)destination, (void)source, (void)bytes;
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                                              CUdeviceptr pointer)
{
    (void)data, (void)attribute, (void)pointer;
    return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream stream)
{
    (void)stream;
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuLaunchKernel(CUfunction function, unsigned int grid_x, unsigned int grid_y,
                                       unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                                       unsigned int block_z, unsigned int shared_bytes, CUstream stream,
                                       void **parameters, void **extra)
{
    (void)function, (void)grid_x, (void)grid_y, (void)grid_z, (void)block_x, (void)block_y;
    (void)block_z, (void)shared_bytes, (void)stream, (void)parameters, (void)extra;
    return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction function)
{
    (void)function;
    *name = "bench_kernel";
    return CUDA_SUCCESS;
}
