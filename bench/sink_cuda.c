/* A libcuda.so.1 that does nothing: cuMemcpyHtoD returns at once. The shim asks
 * cuPointerGetAttribute once per host buffer whether it is pinned; this driver
 * never saw the buffer, so it answers as the real one does for malloc'd memory
 * (CUDA_ERROR_INVALID_VALUE: pageable). Never installed; bench only. */
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
