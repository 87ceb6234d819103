/* On a real driver: the shim neither initialises CUDA nor keeps a context.
 * Prints the primary context's state and the thread's current context at each
 * step, and what each driver call returned, so runs with and without the shim
 * can be compared byte for byte:
 *   1. after cuInit alone: no context may exist;
 *   2. after copies (pageable and pinned: the shim asks the driver about each
 *      host pointer) in the primary context, which the program then makes not
 *      current: it exists, and no thread has it current;
 *   3. after the program released it: it is gone, so nothing else holds a
 *      reference to it.
 * (A copy with no context current is left out: the real driver may fault on
 * it, with or without the shim.) */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BYTES 4096

static struct {
    __typeof__(&cuInit) init;
    __typeof__(&cuDeviceGet) device_get;
    __typeof__(&cuDevicePrimaryCtxGetState) state;
    __typeof__(&cuDevicePrimaryCtxRetain) retain;
    __typeof__(&cuDevicePrimaryCtxRelease_v2) release;
    __typeof__(&cuCtxGetCurrent) get_current;
    __typeof__(&cuCtxSetCurrent) set_current;
    __typeof__(&cuMemAlloc_v2) alloc;
    __typeof__(&cuMemFree_v2) free;
    __typeof__(&cuMemAllocHost_v2) alloc_host;
    __typeof__(&cuMemFreeHost) free_host;
    __typeof__(&cuMemcpyHtoD_v2) htod;
    __typeof__(&cuMemcpyDtoH_v2) dtoh;
} api;

static void state(CUdevice device, const char *when)
{
    unsigned flags = 0;
    int active = -1;
    CUcontext current = (CUcontext)1;
    CUresult got_state = api.state(device, &flags, &active);
    CUresult got_current = api.get_current(&current);
    printf("%-38s primary context active=%d (%d), current=%s (%d)\n", when, active, (int)got_state,
           current ? "yes" : "none", (int)got_current);
}

int main(void)
{
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver) {
        fprintf(stderr, "gpu_context: no libcuda.so.1\n");
        return 1;
    }
    const struct { void *slot; const char *name; } entries[] = {
        { &api.init, "cuInit" }, { &api.device_get, "cuDeviceGet" },
        { &api.state, "cuDevicePrimaryCtxGetState" }, { &api.retain, "cuDevicePrimaryCtxRetain" },
        { &api.release, "cuDevicePrimaryCtxRelease_v2" }, { &api.get_current, "cuCtxGetCurrent" },
        { &api.set_current, "cuCtxSetCurrent" }, { &api.alloc, "cuMemAlloc_v2" },
        { &api.free, "cuMemFree_v2" }, { &api.alloc_host, "cuMemAllocHost_v2" },
        { &api.free_host, "cuMemFreeHost" }, { &api.htod, "cuMemcpyHtoD_v2" },
        { &api.dtoh, "cuMemcpyDtoH_v2" },
    };
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        void *entry = dlsym(driver, entries[i].name);
        if (!entry) {
            fprintf(stderr, "gpu_context: no %s\n", entries[i].name);
            return 1;
        }
        memcpy(entries[i].slot, &entry, sizeof entry);
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* each line out before the next call, should one fault */
    CUdevice device;
    printf("cuInit: %d\n", (int)api.init(0));
    printf("cuDeviceGet: %d\n", (int)api.device_get(&device, 0));
    state(device, "1. after cuInit:");

    unsigned char *pageable = malloc(BYTES);
    memset(pageable, 9, BYTES);
    CUcontext context;
    CUdeviceptr on_device;
    unsigned char *pinned = NULL;
    CUresult results[7];
    results[0] = api.retain(&context, device);
    results[1] = api.set_current(context);
    results[2] = api.alloc(&on_device, BYTES);
    results[3] = api.alloc_host((void **)&pinned, BYTES);
    results[4] = api.htod(on_device, pageable, BYTES);
    results[5] = api.dtoh(pinned, on_device, BYTES);
    results[6] = api.htod(on_device, pinned, BYTES);
    printf("retain %d, set %d, alloc %d, alloc host %d, copies %d %d %d\n", (int)results[0],
           (int)results[1], (int)results[2], (int)results[3], (int)results[4], (int)results[5],
           (int)results[6]);
    printf("pinned[100] = %d\n", pinned[100]);
    results[0] = api.free(on_device);
    results[1] = api.free_host(pinned);
    results[2] = api.set_current(NULL);
    printf("free %d, free host %d, unset %d\n", (int)results[0], (int)results[1], (int)results[2]);
    state(device, "2. after copies, context not current:");
    printf("release %d\n", (int)api.release(device));
    state(device, "3. after the program released it:");
    free(pageable);
    return 0;
}
