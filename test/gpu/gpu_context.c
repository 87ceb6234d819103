/* On a real driver: the shim neither initialises CUDA nor keeps a context.
 * Prints the primary context's state and the thread's current context at each
 * step, and what each driver call returned, so runs with and without the shim
 * can be compared byte for byte:
 *   1. after cuInit alone (no context may exist);
 *   2. after a copy made with no context current (it fails; the shim asks the
 *      driver about the host pointer all the same);
 *   3. after copies in the primary context, which is then released: the
 *      context must be gone, so nothing else holds a reference to it. */
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
    CUdevice device;
    printf("cuInit: %d\n", (int)api.init(0));
    printf("cuDeviceGet: %d\n", (int)api.device_get(&device, 0));
    state(device, "1. after cuInit:");

    unsigned char *pageable = malloc(BYTES);
    memset(pageable, 9, BYTES);
    printf("cuMemcpyHtoD with no context: %d\n", (int)api.htod((CUdeviceptr)0x10000, pageable, BYTES));
    state(device, "2. after a copy with no context:");

    CUcontext context;
    CUdeviceptr on_device;
    unsigned char *pinned = NULL;
    printf("retain %d, set %d, alloc %d, alloc host %d\n", (int)api.retain(&context, device),
           (int)api.set_current(context), (int)api.alloc(&on_device, BYTES),
           (int)api.alloc_host((void **)&pinned, BYTES));
    printf("copies %d %d %d\n", (int)api.htod(on_device, pageable, BYTES),
           (int)api.dtoh(pinned, on_device, BYTES), (int)api.htod(on_device, pinned, BYTES));
    printf("pinned[100] = %d\n", pinned[100]);
    printf("free %d, free host %d, unset %d, release %d\n", (int)api.free(on_device),
           (int)api.free_host(pinned), (int)api.set_current(NULL), (int)api.release(device));
    state(device, "3. after the program released it:");
    free(pageable);
    return 0;
}
