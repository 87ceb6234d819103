/* Copies through the CUDA runtime API, linked against libcudart as PyTorch
 * uses it, plus one driver copy reached through cudaGetDriverEntryPointByVersion. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BYTES (64 * 1024)
#define SMALL 4096

int main(void)
{
    void *device, *symbol;
    unsigned char *pinned, *pageable = malloc(BYTES);
    if (cudaMalloc(&device, BYTES) || cudaMalloc(&symbol, SMALL) ||
        cudaMallocHost((void **)&pinned, BYTES)) {
        fprintf(stderr, "runtime_copies: no CUDA\n");
        return 1;
    }
    for (int i = 0; i < BYTES; i++) {
        pageable[i] = (unsigned char)(i * 3);
        pinned[i] = (unsigned char)(i * 5);
    }
    cudaMemcpy(device, pageable, BYTES, cudaMemcpyHostToDevice);
    cudaMemcpy(device, pinned, BYTES, cudaMemcpyHostToDevice);
    cudaMemcpy(pageable, device, BYTES, cudaMemcpyDeviceToHost);
    cudaMemcpy(pinned, device, BYTES, cudaMemcpyDefault);
    cudaMemcpyAsync(device, pinned, BYTES, cudaMemcpyHostToDevice, 0);
    cudaMemcpy2D(device, 128, pageable, 256, 128, 128, cudaMemcpyHostToDevice);
    cudaMemcpyToSymbol(symbol, pageable, SMALL, 0, cudaMemcpyHostToDevice);
    cudaMemcpyFromSymbol(pageable, symbol, SMALL, 0, cudaMemcpyDeviceToHost);

    void *entry = NULL;
    enum cudaDriverEntryPointQueryResult found;
    if (cudaGetDriverEntryPointByVersion("cuMemcpyHtoD", &entry, CUDA_VERSION, 0, &found) || !entry)
        return 1;
    ((__typeof__(&cuMemcpyHtoD_v2))entry)((CUdeviceptr)device, pinned, SMALL);

    unsigned sum = 0;
    for (int i = 0; i < BYTES; i++)
        sum = sum * 31 + pageable[i] + pinned[i];
    printf("runtime copies: checksum %08x\n", sum);
    cudaFreeHost(pinned);
    free(pageable);
    return 0;
}
