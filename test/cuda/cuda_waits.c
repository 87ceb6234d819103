/* Waits for the GPU and kernel launches through the CUDA driver API, reached
 * the ways test/cuda/cuda_copies.c reaches the copies:
 *   linked       the symbols it was linked against (-lcuda)
 *   dlsym        dlopen("libcuda.so.1") + dlsym of each exported name
 *   getproc      cuGetProcAddress_v2 for each entry point
 *   getproc-ptds the same with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
 *   getproc-v1   the first cuGetProcAddress (CUDA 11.3's signature)
 *   loader       cuGetProcAddress_v2 asked for cuGetProcAddress itself, then that
 * Each wait and launch is made in both forms: the plain one (the mode's) and
 * the per-thread-default-stream twin (the exported _ptsz name, or the entry
 * point asked for with the per-thread flag); cuCtxSynchronize in its first
 * form and in CUDA 13's cuCtxSynchronize_v2 (cuGetProcAddress version 13000).
 * Last, kernel c once more through cuLaunchKernelEx, a kernel with a C++ name
 * from a library (cuLibraryGetKernel): a CUkernel handle, which cuLaunchKernel
 * takes as the CUDA runtime passes it, and a graph of one launch of kernel c
 * (cuGraphLaunch; built with stream capture on a real driver, a token on the
 * stand-in).
 * Prints what the driver did and what each call returned. A second argument
 * repeats the waits and launches that many times (results of the last).
 * On a real GPU, CUDA_WAITS_IMAGE names a cubin or fat binary holding kernels
 * nvs_stub_kernel_a, _b and _c (test/gpu/waits_kernels.cu); the stand-in
 * driver takes any image. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#undef cuGetProcAddress
CUresult cuGetProcAddress(const char *symbol, void **function, int version, cuuint64_t flags);
/* Declared by cuda.h only for programs built with --default-stream per-thread. */
CUresult cuStreamSynchronize_ptsz(CUstream stream);
CUresult cuLaunchKernel_ptsz(CUfunction function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                             unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared,
                             CUstream stream, void **parameters, void **extra);

static struct {
    __typeof__(&cuInit) init;
    __typeof__(&cuDeviceGet) device_get;
    __typeof__(&cuDevicePrimaryCtxRetain) retain;
    __typeof__(&cuCtxSetCurrent) set_current;
    __typeof__(&cuStreamCreate) stream_create;
    __typeof__(&cuEventCreate) event_create;
    __typeof__(&cuEventRecord) event_record;
    __typeof__(&cuStreamWaitEvent) stream_wait_event;
    __typeof__(&cuModuleLoadData) module_load;
    __typeof__(&cuModuleGetFunction) get_function;
    __typeof__(&cuModuleUnload) module_unload;
    __typeof__(&cuLibraryLoadData) library_load;
    __typeof__(&cuLibraryGetKernel) library_get_kernel;
    __typeof__(&cuStreamSynchronize) stream_sync, stream_sync_twin;
    __typeof__(&cuCtxSynchronize) context_sync;
    __typeof__(&cuCtxSynchronize_v2) context_sync_v2;
    __typeof__(&cuEventSynchronize) event_sync;
    __typeof__(&cuLaunchKernel) launch, launch_twin;
    __typeof__(&cuLaunchKernelEx) launch_ex;
    __typeof__(&cuGraphLaunch) graph_launch;
    __typeof__(&cuStreamBeginCapture_v2) begin_capture;
    __typeof__(&cuStreamEndCapture) end_capture;
    __typeof__(&cuGraphInstantiateWithFlags) instantiate;
} api;

/* name and version: as cuGetProcAddress takes them; exported: the symbol;
 * twin: the slot asked for with the per-thread flag (getproc) or by its
 * exported _ptsz name (dlsym). */
static const struct entry {
    const char *name, *exported;
    int version;
    void **slot;
    int twin;
} entries[] = {
#define ENTRY(field, name, exported, version) { name, exported, version, (void **)&api.field, 0 }
#define TWIN(field, name, exported) { name, exported, CUDA_VERSION, (void **)&api.field, 1 }
    ENTRY(init, "cuInit", "cuInit", CUDA_VERSION),
    ENTRY(device_get, "cuDeviceGet", "cuDeviceGet", CUDA_VERSION),
    ENTRY(retain, "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", CUDA_VERSION),
    ENTRY(set_current, "cuCtxSetCurrent", "cuCtxSetCurrent", CUDA_VERSION),
    ENTRY(stream_create, "cuStreamCreate", "cuStreamCreate", CUDA_VERSION),
    ENTRY(event_create, "cuEventCreate", "cuEventCreate", CUDA_VERSION),
    ENTRY(event_record, "cuEventRecord", "cuEventRecord", CUDA_VERSION),
    ENTRY(stream_wait_event, "cuStreamWaitEvent", "cuStreamWaitEvent", CUDA_VERSION),
    ENTRY(module_load, "cuModuleLoadData", "cuModuleLoadData", CUDA_VERSION),
    ENTRY(get_function, "cuModuleGetFunction", "cuModuleGetFunction", CUDA_VERSION),
    ENTRY(module_unload, "cuModuleUnload", "cuModuleUnload", CUDA_VERSION),
    ENTRY(library_load, "cuLibraryLoadData", "cuLibraryLoadData", CUDA_VERSION),
    ENTRY(library_get_kernel, "cuLibraryGetKernel", "cuLibraryGetKernel", CUDA_VERSION),
    ENTRY(stream_sync, "cuStreamSynchronize", "cuStreamSynchronize", CUDA_VERSION),
    TWIN(stream_sync_twin, "cuStreamSynchronize", "cuStreamSynchronize_ptsz"),
    ENTRY(context_sync, "cuCtxSynchronize", "cuCtxSynchronize", 2000),
    ENTRY(context_sync_v2, "cuCtxSynchronize", "cuCtxSynchronize_v2", 13000),
    ENTRY(event_sync, "cuEventSynchronize", "cuEventSynchronize", CUDA_VERSION),
    ENTRY(launch, "cuLaunchKernel", "cuLaunchKernel", CUDA_VERSION),
    TWIN(launch_twin, "cuLaunchKernel", "cuLaunchKernel_ptsz"),
    ENTRY(launch_ex, "cuLaunchKernelEx", "cuLaunchKernelEx", CUDA_VERSION),
    ENTRY(graph_launch, "cuGraphLaunch", "cuGraphLaunch", CUDA_VERSION),
#undef ENTRY
#undef TWIN
};
#define ENTRIES (sizeof entries / sizeof entries[0])

static void link_directly(void)
{
    api.init = cuInit; api.device_get = cuDeviceGet; api.retain = cuDevicePrimaryCtxRetain;
    api.set_current = cuCtxSetCurrent; api.stream_create = cuStreamCreate;
    api.event_create = cuEventCreate; api.event_record = cuEventRecord;
    api.stream_wait_event = cuStreamWaitEvent; api.module_load = cuModuleLoadData;
    api.get_function = cuModuleGetFunction; api.module_unload = cuModuleUnload;
    api.library_load = cuLibraryLoadData; api.library_get_kernel = cuLibraryGetKernel;
    api.stream_sync = cuStreamSynchronize; api.stream_sync_twin = cuStreamSynchronize_ptsz;
    api.context_sync = cuCtxSynchronize; api.context_sync_v2 = cuCtxSynchronize_v2;
    api.event_sync = cuEventSynchronize;
    api.launch = cuLaunchKernel; api.launch_twin = cuLaunchKernel_ptsz; api.launch_ex = cuLaunchKernelEx;
    api.graph_launch = cuGraphLaunch;
}

/* The module image: the file CUDA_WAITS_IMAGE names, whole, or a token the
 * stand-in accepts. NULL when the file cannot be read. */
static const void *module_image(void)
{
    const char *path = getenv("CUDA_WAITS_IMAGE");
    if (!path || !*path)
        return "image";
    FILE *file = fopen(path, "rb");
    if (!file)
        return NULL;
    size_t size = 0, capacity = 1 << 16;
    char *image = malloc(capacity);
    size_t got;
    while (image && (got = fread(image + size, 1, capacity - size - 1, file)) > 0) {
        size += got;
        if (capacity - size < 2) {
            char *grown = realloc(image, capacity *= 2);
            if (!grown)
                free(image);
            image = grown;
        }
    }
    fclose(file);
    if (image)
        image[size] = 0;
    return image;
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
    const cuuint64_t per_thread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    cuuint64_t flags = !strcmp(mode, "getproc-ptds") ? per_thread : CU_GET_PROC_ADDRESS_DEFAULT;
    __typeof__(&cuGetProcAddress_v2) lookup = (__typeof__(&cuGetProcAddress_v2))dlsym(driver, "cuGetProcAddress_v2");
    __typeof__(&cuGetProcAddress) lookup_v1 = (__typeof__(&cuGetProcAddress))dlsym(driver, "cuGetProcAddress");
    if (!lookup || !lookup_v1)
        return -1;
    if (!strcmp(mode, "loader")) {
        void *itself = NULL;
        if (lookup("cuGetProcAddress", &itself, CUDA_VERSION, 0, NULL) || !itself)
            return -1;
        lookup = (__typeof__(&cuGetProcAddress_v2))itself;
    } else if (strcmp(mode, "getproc") && strcmp(mode, "getproc-ptds") && strcmp(mode, "getproc-v1")) {
        return -1;
    }
    for (size_t i = 0; i < ENTRIES; i++) {
        cuuint64_t these = entries[i].twin ? per_thread : flags;
        CUresult result = !strcmp(mode, "getproc-v1")
            ? lookup_v1(entries[i].name, entries[i].slot, entries[i].version, these)
            : lookup(entries[i].name, entries[i].slot, entries[i].version, these, NULL);
        if (result != CUDA_SUCCESS || !*entries[i].slot)
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "linked";
    int repeats = argc > 2 ? atoi(argv[2]) : 1;
    if (load(mode)) {
        fprintf(stderr, "cuda_waits: cannot reach the driver (%s)\n", mode);
        return 1;
    }
    CUdevice device;
    CUcontext context;
    CUstream stream;
    CUevent event;
    CUmodule module;
    CUfunction a, b, c;
    const void *image = module_image();
    if (!image || api.init(0) || api.device_get(&device, 0) || api.retain(&context, device) ||
        api.set_current(context) || api.stream_create(&stream, 0) || api.event_create(&event, 0) ||
        api.module_load(&module, image) || api.get_function(&a, module, "nvs_stub_kernel_a") ||
        api.get_function(&b, module, "nvs_stub_kernel_b")) {
        fprintf(stderr, "cuda_waits: set-up failed\n");
        return 1;
    }
    CUresult results[12];
    int n = 0, kept = 1;
    void *nothing = NULL;               /* each kernel's one argument, a pointer it leaves alone */
    void *parameters[] = { &nothing };
    for (int repeat = 0; repeat < repeats; repeat++) {
        n = 0;
        errno = EDOM;   /* every call leaves errno as it found it */
        results[n++] = api.stream_sync(stream);
        results[n++] = api.stream_sync_twin(stream);
        results[n++] = api.context_sync();
        results[n++] = api.context_sync_v2(context);
        results[n++] = api.event_record(event, stream);
        results[n++] = api.event_sync(event);
        results[n++] = api.event_sync(NULL);          /* fails: its error comes back as it was */
        results[n++] = api.stream_wait_event(stream, event, 0);   /* not a wait of the CPU */
        results[n++] = api.launch(a, 1, 1, 1, 32, 1, 1, 0, stream, parameters, NULL);
        results[n++] = api.launch(a, 1, 1, 1, 32, 1, 1, 0, stream, parameters, NULL);
        results[n++] = api.launch_twin(a, 1, 1, 1, 32, 1, 1, 0, stream, parameters, NULL);
        results[n++] = api.launch(b, 1, 1, 1, 32, 1, 1, 0, stream, parameters, NULL);
        kept = kept && errno == EDOM;
    }
    /* Another module's kernel at the address kernel a had (the stand-in reuses it). */
    if (api.module_unload(module) || api.module_load(&module, image) ||
        api.get_function(&c, module, "nvs_stub_kernel_c") ||
        api.launch(c, 1, 1, 1, 32, 1, 1, 0, stream, parameters, NULL)) {
        fprintf(stderr, "cuda_waits: second module failed\n");
        return 1;
    }
    CUlaunchConfig config = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32, .blockDimY = 1,
                              .blockDimZ = 1, .hStream = stream };
    CUlibrary library;
    CUkernel d;
    if (api.launch_ex(&config, c, parameters, NULL) ||
        api.library_load(&library, image, NULL, NULL, 0, NULL, NULL, 0) ||
        api.library_get_kernel(&d, library, "_Z17nvs_stub_kernel_dPi") ||
        api.launch((CUfunction)d, 1, 1, 1, 32, 1, 1, 0, stream, parameters, NULL)) {
        fprintf(stderr, "cuda_waits: the library's kernel failed\n");
        return 1;
    }
    /* A graph: captured from the stream on a real driver (whose capture functions the
     * stand-in lacks); the stand-in runs any handle. */
    CUgraphExec graph = (CUgraphExec)&graph;
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    api.begin_capture = driver ? (__typeof__(api.begin_capture))dlsym(driver, "cuStreamBeginCapture_v2") : NULL;
    api.end_capture = driver ? (__typeof__(api.end_capture))dlsym(driver, "cuStreamEndCapture") : NULL;
    api.instantiate = driver ? (__typeof__(api.instantiate))dlsym(driver, "cuGraphInstantiateWithFlags") : NULL;
    if (api.begin_capture && api.end_capture && api.instantiate) {
        CUgraph captured;
        if (api.begin_capture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) ||
            api.launch(c, 1, 1, 1, 32, 1, 1, 0, stream, parameters, NULL) ||
            api.end_capture(stream, &captured) || api.instantiate(&graph, captured, 0)) {
            fprintf(stderr, "cuda_waits: the graph's capture failed\n");
            return 1;
        }
    }
    if (api.graph_launch(graph, stream) || api.stream_sync(stream)) {
        fprintf(stderr, "cuda_waits: the graph's launch failed\n");
        return 1;
    }
    printf("%s: results", mode);
    for (int i = 0; i < n; i++)
        printf(" %d", (int)results[i]);
    int (*launches)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "nvs_stub_launches");
    int (*per_thread)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "nvs_stub_per_thread_calls");
    printf("\nerrno kept: %s\nsame handle for kernels a and c: %s\nlaunches: %d\nper-thread variants: %d\n",
           kept ? "yes" : "no", a == c ? "yes" : "no", launches ? launches() : -1,
           per_thread ? per_thread() : -1);
    return 0;
}
