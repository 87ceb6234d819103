/* Waits for the GPU and kernel launches through the CUDA runtime API, linked
 * against libcudart as PyTorch uses it, reached either way:
 *   linked   the symbols it was linked against
 *   dlsym    dlsym of each exported name (the _ptsz twins by theirs)
 * The kernels are host stubs registered with the stand-in runtime. Besides
 * what the runtime returned, it prints what cudaGetLastError says after
 * launches whose kernel the runtime cannot name, or made while an error of the
 * program's own is pending: the shim asks the runtime for kernel names, and
 * the program must see the same errors as without it. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#pragma GCC diagnostic ignored "-Wpedantic"   /* function and object pointers, as dlsym gives them */

/* Declared by cuda_runtime_api.h only for programs built with --default-stream per-thread. */
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaLaunchKernel_ptsz(const void *function, dim3 grid, dim3 block, void **arguments,
                                  size_t shared_bytes, cudaStream_t stream);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graph, cudaStream_t stream);

static struct {
    __typeof__(&cudaDeviceSynchronize) device_sync;
    __typeof__(&cudaStreamSynchronize) stream_sync, stream_sync_twin;
    __typeof__(&cudaEventSynchronize) event_sync;
    __typeof__(&cudaLaunchKernel) launch, launch_twin;
    __typeof__(&cudaGraphLaunch) graph_launch, graph_launch_twin;
} api;

/* The kernels' host stubs: their addresses are what the program launches. */
static void kernel_a(void) {}
static void kernel_b(void) {}
static void kernel_nameless(void) {}
static void kernel_unknown(void) {}

static int load(const char *mode)
{
    if (!strcmp(mode, "linked")) {
        api.device_sync = cudaDeviceSynchronize;
        api.stream_sync = cudaStreamSynchronize;
        api.stream_sync_twin = cudaStreamSynchronize_ptsz;
        api.event_sync = cudaEventSynchronize;
        api.launch = cudaLaunchKernel;
        api.launch_twin = cudaLaunchKernel_ptsz;
        api.graph_launch = cudaGraphLaunch;
        api.graph_launch_twin = cudaGraphLaunch_ptsz;
        return 0;
    }
    if (strcmp(mode, "dlsym"))
        return -1;
    void *runtime = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    if (!runtime)
        return -1;
    api.device_sync = (__typeof__(api.device_sync))dlsym(runtime, "cudaDeviceSynchronize");
    api.stream_sync = (__typeof__(api.stream_sync))dlsym(runtime, "cudaStreamSynchronize");
    api.stream_sync_twin = (__typeof__(api.stream_sync_twin))dlsym(runtime, "cudaStreamSynchronize_ptsz");
    api.event_sync = (__typeof__(api.event_sync))dlsym(runtime, "cudaEventSynchronize");
    api.launch = (__typeof__(api.launch))dlsym(runtime, "cudaLaunchKernel");
    api.launch_twin = (__typeof__(api.launch_twin))dlsym(runtime, "cudaLaunchKernel_ptsz");
    api.graph_launch = (__typeof__(api.graph_launch))dlsym(runtime, "cudaGraphLaunch");
    api.graph_launch_twin = (__typeof__(api.graph_launch_twin))dlsym(runtime, "cudaGraphLaunch_ptsz");
    return api.device_sync && api.stream_sync && api.stream_sync_twin && api.event_sync && api.launch &&
           api.launch_twin && api.graph_launch && api.graph_launch_twin ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "linked";
    int (*register_kernel)(const void *, const char *, int) =
        (int (*)(const void *, const char *, int))dlsym(RTLD_DEFAULT, "nvs_stub_register_kernel");
    cudaEvent_t event;
    if (load(mode) || !register_kernel || register_kernel((const void *)kernel_a, "nvs_stub_kernel_a", 1) ||
        register_kernel((const void *)kernel_b, "nvs_stub_kernel_b", 1) ||
        register_kernel((const void *)kernel_nameless, "nvs_stub_kernel_nameless", 0) ||
        cudaEventCreate(&event) || cudaEventRecord(event, 0)) {
        fprintf(stderr, "runtime_waits: no CUDA runtime (%s)\n", mode);
        return 1;
    }
    dim3 grid = { 1, 1, 1 }, block = { 32, 1, 1 };
    void *arguments[] = { NULL };
    printf("%s: waits %d %d %d %d\n", mode, api.device_sync(), api.stream_sync(0),
           api.stream_sync_twin(0), api.event_sync(event));
    printf("launches %d %d %d\n", api.launch((const void *)kernel_a, grid, block, arguments, 0, 0),
           api.launch((const void *)kernel_a, grid, block, arguments, 0, 0),
           api.launch_twin((const void *)kernel_a, grid, block, arguments, 0, 0));
    /* An error of the program's own, not read yet, then a kernel never named before. */
    const char *name;
    cudaError_t own = cudaFuncGetName(&name, (const void *)kernel_unknown);
    cudaError_t launched = api.launch((const void *)kernel_b, grid, block, arguments, 0, 0);
    printf("pending %d, launch %d, then cudaGetLastError %d", own, launched, cudaGetLastError());
    launched = api.launch((const void *)kernel_b, grid, block, arguments, 0, 0);
    printf(", launch %d, cudaGetLastError %d\n", launched, cudaGetLastError());
    /* A kernel the runtime launches but cannot name, then one it does not know. */
    launched = api.launch((const void *)kernel_nameless, grid, block, arguments, 0, 0);
    printf("nameless: launch %d, cudaGetLastError %d\n", launched, cudaGetLastError());
    launched = api.launch((const void *)kernel_unknown, grid, block, arguments, 0, 0);
    cudaError_t first = cudaGetLastError();
    printf("unknown: launch %d, cudaGetLastError %d then %d\n", launched, first, cudaGetLastError());
    /* A graph (a token: the stand-in runs any handle), both forms. */
    static int graph;
    printf("graphs %d %d\n", api.graph_launch((cudaGraphExec_t)&graph, 0),
           api.graph_launch_twin((cudaGraphExec_t)&graph, 0));
    /* The stand-in driver the runtime loaded (RTLD_LOCAL): what it ran. */
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    int (*launches)(void) = driver ? (int (*)(void))dlsym(driver, "nvs_stub_launches") : NULL;
    int (*per_thread)(void) = driver ? (int (*)(void))dlsym(driver, "nvs_stub_per_thread_calls") : NULL;
    printf("driver: launches %d, per-thread variants %d\n", launches ? launches() : -1,
           per_thread ? per_thread() : -1);
    return 0;
}
