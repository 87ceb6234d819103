/* What a traced copy costs on a real driver, in one process: the mean time of
 * CALLS calls of each kind, the best of REPEATS rounds, in ns.
 *   htod_pageable   cuMemcpyHtoD, 64 bytes from one malloc'd buffer
 *   htod_pinned     the same from memory cuMemAllocHost gave
 *   htod_miss       64 bytes from 4,096 different malloc'd addresses in turn,
 *                   more than the shim's pinned/pageable cache holds, so each
 *                   copy makes it ask the driver (cuPointerGetAttribute)
 *   attr_pageable   cuPointerGetAttribute(MEMORY_TYPE) of a malloc'd pointer:
 *   attr_pinned     what one such question costs, asked by the program
 * check.sh runs it without the shim, with it (no tool), and with it recording,
 * in turn, and prints the differences. */
#define _GNU_SOURCE
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SMALL 64
#define SPREAD 4096

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv)
{
    int calls = argc > 1 ? atoi(argv[1]) : 20000, repeats = argc > 2 ? atoi(argv[2]) : 5;
    CUdevice device;
    CUcontext context;
    CUdeviceptr on_device;
    unsigned char *pinned, *pageable = malloc(SMALL), *spread = malloc((size_t)SPREAD * SMALL);
    if (cuInit(0) || cuDeviceGet(&device, 0) || cuDevicePrimaryCtxRetain(&context, device) ||
        cuCtxSetCurrent(context) || cuMemAlloc(&on_device, SMALL) ||
        cuMemAllocHost((void **)&pinned, SMALL) || !pageable || !spread) {
        fprintf(stderr, "gpu_cost: no GPU\n");
        return 1;
    }
    const char *names[] = { "htod_pageable", "htod_pinned", "htod_miss", "attr_pageable", "attr_pinned" };
    for (int kind = 0; kind < 5; kind++) {
        double best = 1e30;
        for (int r = 0; r < repeats; r++) {
            CUresult failed = CUDA_SUCCESS;
            CUmemorytype type;
            double start = now_ns();
            for (int i = 0; i < calls; i++) {
                switch (kind) {
                case 0: failed |= cuMemcpyHtoD(on_device, pageable, SMALL); break;
                case 1: failed |= cuMemcpyHtoD(on_device, pinned, SMALL); break;
                case 2: failed |= cuMemcpyHtoD(on_device, spread + (size_t)(i % SPREAD) * SMALL, SMALL); break;
                case 3: cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)pageable); break;
                case 4: failed |= cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)pinned); break;
                }
            }
            double mean = (now_ns() - start) / calls;
            if (failed) {
                fprintf(stderr, "gpu_cost: %s failed\n", names[kind]);
                return 1;
            }
            if (mean < best)
                best = mean;
        }
        printf("%s %.1f\n", names[kind], best);
    }
    return 0;
}
