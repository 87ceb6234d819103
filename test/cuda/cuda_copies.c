/* Host/device copies through the CUDA driver API, reached one of several ways:
 *   linked       calls the symbols it was linked against (-lcuda)
 *   dlsym        dlopen("libcuda.so.1") + dlsym of each exported name
 *   getproc      cuGetProcAddress_v2 for each entry point
 *   getproc-ptds the same with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
 *   getproc-v1   the first cuGetProcAddress (CUDA 11.3's signature)
 *   loader       as the CUDA runtime does: dlopen, one dlsym for cuGetProcAddress_v2,
 *                which is then asked for cuGetProcAddress itself and everything else
 * Prints checksums and how many per-thread variants the driver ran. A second argument,
 * SHAPES, then copies pageable host memory to the device and back once in each length from 1
 * to SHAPES bytes (65536 at most), and prints their checksum: as many shapes of a copy as the
 * library's name table has slots, and more. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#undef cuGetProcAddress
CUresult cuGetProcAddress(const char *symbol, void **function, int version, cuuint64_t flags);

#define BYTES (64 * 1024)
#define SMALL 4096

static struct {
    __typeof__(&cuInit) init;
    __typeof__(&cuDeviceGet) device_get;
    __typeof__(&cuDevicePrimaryCtxRetain) retain;
    __typeof__(&cuCtxSetCurrent) set_current;
    __typeof__(&cuStreamCreate) stream_create;
    __typeof__(&cuStreamSynchronize) synchronize;
    __typeof__(&cuMemAlloc_v2) alloc;
    __typeof__(&cuMemAllocHost_v2) alloc_host;
    __typeof__(&cuMemFreeHost) free_host;
    __typeof__(&cuMemHostRegister_v2) host_register;
    __typeof__(&cuMemHostUnregister) host_unregister;
    __typeof__(&cuMemcpy) copy;
    __typeof__(&cuMemcpyHtoD_v2) htod;
    __typeof__(&cuMemcpyHtoDAsync_v2) htod_async;
    __typeof__(&cuMemcpyDtoH_v2) dtoh;
    __typeof__(&cuMemcpyDtoHAsync_v2) dtoh_async;
    __typeof__(&cuMemcpyDtoD_v2) dtod;
    __typeof__(&cuMemcpy2D_v2) copy_2d;
} api;

/* name: the documented name, as cuGetProcAddress takes it; exported: the symbol. */
static const struct { const char *name, *exported; void **slot; } entries[] = {
#define ENTRY(field, name, exported) { name, exported, (void **)&api.field }
    ENTRY(init, "cuInit", "cuInit"), ENTRY(device_get, "cuDeviceGet", "cuDeviceGet"),
    ENTRY(retain, "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain"),
    ENTRY(set_current, "cuCtxSetCurrent", "cuCtxSetCurrent"),
    ENTRY(stream_create, "cuStreamCreate", "cuStreamCreate"),
    ENTRY(synchronize, "cuStreamSynchronize", "cuStreamSynchronize"),
    ENTRY(alloc, "cuMemAlloc", "cuMemAlloc_v2"), ENTRY(alloc_host, "cuMemAllocHost", "cuMemAllocHost_v2"),
    ENTRY(free_host, "cuMemFreeHost", "cuMemFreeHost"),
    ENTRY(host_register, "cuMemHostRegister", "cuMemHostRegister_v2"),
    ENTRY(host_unregister, "cuMemHostUnregister", "cuMemHostUnregister"),
    ENTRY(copy, "cuMemcpy", "cuMemcpy"), ENTRY(htod, "cuMemcpyHtoD", "cuMemcpyHtoD_v2"),
    ENTRY(htod_async, "cuMemcpyHtoDAsync", "cuMemcpyHtoDAsync_v2"),
    ENTRY(dtoh, "cuMemcpyDtoH", "cuMemcpyDtoH_v2"),
    ENTRY(dtoh_async, "cuMemcpyDtoHAsync", "cuMemcpyDtoHAsync_v2"),
    ENTRY(dtod, "cuMemcpyDtoD", "cuMemcpyDtoD_v2"), ENTRY(copy_2d, "cuMemcpy2D", "cuMemcpy2D_v2"),
#undef ENTRY
};
#define ENTRIES (sizeof entries / sizeof entries[0])

static void link_directly(void)
{
    api.init = cuInit; api.device_get = cuDeviceGet; api.retain = cuDevicePrimaryCtxRetain;
    api.set_current = cuCtxSetCurrent; api.stream_create = cuStreamCreate;
    api.synchronize = cuStreamSynchronize; api.alloc = cuMemAlloc_v2;
    api.alloc_host = cuMemAllocHost_v2; api.free_host = cuMemFreeHost;
    api.host_register = cuMemHostRegister_v2; api.host_unregister = cuMemHostUnregister;
    api.copy = cuMemcpy; api.htod = cuMemcpyHtoD_v2; api.htod_async = cuMemcpyHtoDAsync_v2;
    api.dtoh = cuMemcpyDtoH_v2; api.dtoh_async = cuMemcpyDtoHAsync_v2; api.dtod = cuMemcpyDtoD_v2;
    api.copy_2d = cuMemcpy2D_v2;
}

static int load(const char *mode)
{
    if (!strcmp(mode, "linked")) {
        link_directly();
        return 0;
    }
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver)
        return -1;
    if (!strcmp(mode, "dlsym")) {
        for (size_t i = 0; i < ENTRIES; i++)
            if (!(*entries[i].slot = dlsym(driver, entries[i].exported)))
                return -1;
        return 0;
    }
    cuuint64_t flags = !strcmp(mode, "getproc-ptds") ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                                     : CU_GET_PROC_ADDRESS_DEFAULT;
    __typeof__(&cuGetProcAddress_v2) lookup = (__typeof__(&cuGetProcAddress_v2))dlsym(driver, "cuGetProcAddress_v2");
    __typeof__(&cuGetProcAddress) lookup_v1 = (__typeof__(&cuGetProcAddress))dlsym(driver, "cuGetProcAddress");
    if (!lookup || !lookup_v1)
        return -1;
    if (!strcmp(mode, "loader")) {
        /* The runtime asks the driver for cuGetProcAddress itself and uses that. */
        void *itself = NULL;
        if (lookup("cuGetProcAddress", &itself, CUDA_VERSION, 0, NULL) || !itself)
            return -1;
        lookup = (__typeof__(&cuGetProcAddress_v2))itself;
    } else if (strcmp(mode, "getproc") && strcmp(mode, "getproc-ptds") && strcmp(mode, "getproc-v1")) {
        return -1;
    }
    for (size_t i = 0; i < ENTRIES; i++) {
        CUresult result = !strcmp(mode, "getproc-v1")
            ? lookup_v1(entries[i].name, entries[i].slot, CUDA_VERSION, flags)
            : lookup(entries[i].name, entries[i].slot, CUDA_VERSION, flags, NULL);
        if (result != CUDA_SUCCESS || !*entries[i].slot)
            return -1;
    }
    return 0;
}

static unsigned checksum(const unsigned char *data, size_t bytes)
{
    unsigned sum = 0;
    for (size_t i = 0; i < bytes; i++)
        sum = sum * 31 + data[i];
    return sum;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "linked";
    if (load(mode)) {
        fprintf(stderr, "cuda_copies: cannot reach the driver (%s)\n", mode);
        return 1;
    }
    CUdevice device;
    CUcontext context;
    CUstream stream;
    CUdeviceptr on_device, other;
    api.init(0);
    api.device_get(&device, 0);
    api.retain(&context, device);
    api.set_current(context);
    api.stream_create(&stream, 0);
    api.alloc(&on_device, BYTES);
    api.alloc(&other, BYTES);

    unsigned char *pageable = malloc(BYTES), *back = malloc(BYTES);
    unsigned char *pinned;
    api.alloc_host((void **)&pinned, BYTES);
    for (int i = 0; i < BYTES; i++) {
        pageable[i] = (unsigned char)(i * 7);
        pinned[i] = (unsigned char)(i * 13);
    }
    api.htod(on_device, pageable, BYTES);
    api.htod(other, pinned, BYTES);
    api.dtod(on_device, other, BYTES);
    api.dtoh(pinned, on_device, BYTES);
    api.htod_async(other, pinned, BYTES, stream);
    api.dtoh_async(back, other, BYTES, stream);
    api.synchronize(stream);
    api.copy((CUdeviceptr)pageable, on_device, BYTES);
    CUDA_MEMCPY2D rows = {
        .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = back, .srcPitch = 256,
        .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = on_device, .dstPitch = 128,
        .WidthInBytes = 128, .Height = 128,
    };
    api.copy_2d(&rows);
    printf("%s: pinned %08x back %08x pageable %08x\n", mode, checksum(pinned, BYTES),
           checksum(back, BYTES), checksum(pageable, BYTES));

    /* The same buffer pageable, then registered (pinned), then unregistered again. */
    unsigned char *buffer = malloc(SMALL);
    memset(buffer, 5, SMALL);
    api.htod(on_device, buffer, SMALL);
    api.host_register(buffer, SMALL, 0);
    api.htod(on_device, buffer, SMALL);
    api.host_unregister(buffer);
    api.htod(on_device, buffer, SMALL);

    int shapes = argc > 2 ? atoi(argv[2]) : 0;
    if (shapes > 0) {
        unsigned sum = 0;
        for (int length = 1; length <= shapes && length <= BYTES; length++) {
            api.htod(on_device, pageable, (size_t)length);
            api.dtoh(back, on_device, (size_t)length);
            sum = sum * 31 + checksum(back, (size_t)length);
        }
        printf("shapes %d: %08x\n", shapes, sum);
    }

    int (*per_thread)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "nvs_stub_per_thread_calls");
    printf("per-thread variants: %d\n", per_thread ? per_thread() : -1);
    api.free_host(pinned);
    free(buffer);
    free(back);
    free(pageable);
    return 0;
}
