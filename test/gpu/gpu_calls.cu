// What a CUDA C++ program does through the runtime API, on a real GPU: copies
// every common way (pageable and pinned, sync and async, 2D, to and from a
// __device__ symbol, cudaMemcpyDefault), kernel launches with <<<>>> and
// cudaLaunchKernel, and the CPU's three waits. check.sh builds it three ways:
// nvcc's default static runtime (the shim sees the driver calls inside it),
// -cudart shared (the shim sees the runtime calls), and the static runtime
// with --default-stream per-thread (the driver's _ptds/_ptsz entry points).
// Prints checksums, so runs with and without the shim can be compared.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define BYTES (64 * 1024)
#define SMALL 4096

__device__ unsigned char symbol[SMALL];

__global__ void gpu_calls_scale(unsigned char *data, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        data[i] = (unsigned char)(data[i] * 3 + 1);
}

__global__ void gpu_calls_sum(const unsigned char *data, int n, unsigned *sum)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(sum, data[i]);
}

static unsigned checksum(const unsigned char *data, size_t bytes)
{
    unsigned sum = 0;
    for (size_t i = 0; i < bytes; i++)
        sum = sum * 31 + data[i];
    return sum;
}

#define CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    std::fprintf(stderr, "gpu_calls: %s: %s\n", #call, cudaGetErrorString(e_)); return 1; } } while (0)

int main()
{
    unsigned char *device, *pinned, *pageable = (unsigned char *)malloc(BYTES);
    unsigned *sum_device, *sum_pinned;
    CHECK(cudaMalloc(&device, BYTES));
    CHECK(cudaMalloc(&sum_device, sizeof *sum_device));
    CHECK(cudaMallocHost(&pinned, BYTES));
    CHECK(cudaMallocHost(&sum_pinned, sizeof *sum_pinned));
    for (int i = 0; i < BYTES; i++) {
        pageable[i] = (unsigned char)(i * 7);
        pinned[i] = (unsigned char)(i * 13);
    }
    cudaStream_t stream;
    cudaEvent_t event;
    CHECK(cudaStreamCreate(&stream));
    CHECK(cudaEventCreate(&event));

    CHECK(cudaMemcpy(device, pageable, BYTES, cudaMemcpyHostToDevice));           // 1 HtoD pageable
    gpu_calls_scale<<<BYTES / 256, 256>>>(device, BYTES);                         // launch 1
    CHECK(cudaMemcpy(pageable, device, BYTES, cudaMemcpyDeviceToHost));           // 2 DtoH pageable
    CHECK(cudaMemcpy(device, pinned, BYTES, cudaMemcpyHostToDevice));             // 3 HtoD pinned
    int n = BYTES;
    void *arguments[] = { &device, &n };
    CHECK(cudaLaunchKernel((const void *)gpu_calls_scale, dim3(BYTES / 256), dim3(256),
                           arguments, 0, stream));                                // launch 2
    CHECK(cudaMemcpyAsync(pinned, device, BYTES, cudaMemcpyDeviceToHost, stream)); // 4 DtoH pinned
    CHECK(cudaStreamSynchronize(stream));                                         // wait 1
    CHECK(cudaMemcpy(device, pinned, BYTES, cudaMemcpyDefault));                  // 5 HtoD pinned
    CHECK(cudaMemcpy2D(device, 128, pageable, 256, 128, 128, cudaMemcpyHostToDevice)); // 6 2D 16KiB
    CHECK(cudaMemcpyToSymbol(symbol, pageable, SMALL));                           // 7 HtoD 4KiB
    CHECK(cudaMemcpyFromSymbol(pinned, symbol, SMALL));                           // 8 DtoH 4KiB pinned
    CHECK(cudaMemset(sum_device, 0, sizeof *sum_device));
    gpu_calls_sum<<<BYTES / 256, 256, 0, stream>>>(device, BYTES, sum_device);     // launch 3
    CHECK(cudaMemcpyAsync(sum_pinned, sum_device, sizeof *sum_pinned, cudaMemcpyDeviceToHost, stream)); // 9
    CHECK(cudaEventRecord(event, stream));
    CHECK(cudaEventSynchronize(event));                                           // wait 2
    CHECK(cudaDeviceSynchronize());                                               // wait 3

    std::printf("gpu_calls: pageable %08x pinned %08x sum %u\n", checksum(pageable, BYTES),
                checksum(pinned, BYTES), *sum_pinned);
    cudaFreeHost(sum_pinned);
    cudaFreeHost(pinned);
    cudaFree(sum_device);
    cudaFree(device);
    free(pageable);
    return 0;
}
