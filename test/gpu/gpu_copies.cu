// Runtime-API copies built with nvcc's default static runtime: no libcudart to
// interpose, so the copies must show at the driver (through cuGetProcAddress).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

int main()
{
    const size_t bytes = 1 << 20;
    void *device, *pinned;
    void *pageable = malloc(bytes);
    if (cudaMalloc(&device, bytes) != cudaSuccess || cudaMallocHost(&pinned, bytes) != cudaSuccess) {
        std::fprintf(stderr, "gpu_copies: no GPU\n");
        return 1;
    }
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    cudaMemcpy(device, pageable, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(device, pinned, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(pageable, device, bytes, cudaMemcpyDeviceToHost);
    cudaMemcpyAsync(pinned, device, bytes, cudaMemcpyDeviceToHost, stream);
    cudaStreamSynchronize(stream);
    std::printf("gpu_copies: 4 copies of %zu bytes\n", bytes);
    return 0;
}
