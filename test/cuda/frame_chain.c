/* What a sampling profiler that walks frame pointers (perf -g, nsys
 * --backtrace=fp) sees from inside the driver. This program, built with frame
 * pointers and its functions exported (-rdynamic), makes a copy from the host,
 * a stream's wait and a launch, each from a function of its own; the stand-in
 * driver (stub_libcuda.c) walks the chain of saved frame pointers from inside
 * each call. Prints, for each, the functions of this program the walk passed,
 * innermost first, by their names (dladdr): "main" last when the chain reached
 * the program's outermost frame, whatever lay between. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

void nvs_stub_walk_frames(int on);
int nvs_stub_walked(void **out, int max);

/* Exported, so that dladdr names them (and the walk's caller frames); noinline,
 * so that each keeps a frame of its own. */
void copy_from_the_program(void);
void wait_in_the_program(void);
void launch_from_the_program(void);

static CUdeviceptr device_memory;
static char host_memory[64];
static CUstream stream;
static CUfunction kernel;

__attribute__((noinline)) void copy_from_the_program(void)
{
    cuMemcpyHtoD(device_memory, host_memory, sizeof host_memory);
}

__attribute__((noinline)) void wait_in_the_program(void)
{
    cuStreamSynchronize(stream);
}

__attribute__((noinline)) void launch_from_the_program(void)
{
    void *nothing = NULL;
    void *parameters[] = { &nothing };
    cuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, stream, parameters, NULL);
}

static void walk(const char *what, void (*call)(void))
{
    Dl_info program, found;
    void *addresses[32];
    dladdr((void *)walk, &program);
    nvs_stub_walk_frames(1);
    call();
    nvs_stub_walk_frames(0);
    int n = nvs_stub_walked(addresses, 32);
    printf("%s:", what);
    for (int i = 0; i < n; i++)
        if (dladdr(addresses[i], &found) && found.dli_fbase == program.dli_fbase && found.dli_sname)
            printf(" %s", found.dli_sname);
    printf("\n");
}

int main(void)
{
    CUdevice device;
    CUcontext context;
    CUmodule module;
    if (cuInit(0) || cuDeviceGet(&device, 0) || cuDevicePrimaryCtxRetain(&context, device) ||
        cuCtxSetCurrent(context) || cuStreamCreate(&stream, 0) ||
        cuMemAlloc(&device_memory, sizeof host_memory) || cuModuleLoadData(&module, "image") ||
        cuModuleGetFunction(&kernel, module, "nvs_stub_kernel_a")) {
        fprintf(stderr, "frame_chain: set-up failed\n");
        return 1;
    }
    walk("cuMemcpyHtoD", copy_from_the_program);
    walk("cuStreamSynchronize", wait_in_the_program);
    walk("cuLaunchKernel", launch_from_the_program);
    return 0;
}
