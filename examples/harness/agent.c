/* harness_physical's agent: a 3x3 convolution and a cell argmax on the GPU
 * (the CUDA driver API through a dlopen'ed libcuda.so.1) or on the CPU. */
#define _GNU_SOURCE
#include "harness.h"

#ifdef HARNESS_HAVE_IMAGE
extern const unsigned char harness_image[]; /* nvcc's fat binary, embedded at build time */
#endif

/* Sets up the GPU path; on failure says why in REASON and returns false. */
static bool agent_open_gpu(struct agent *agent, char *reason, size_t size)
{
#ifndef HARNESS_HAVE_IMAGE
    (void)agent;
    snprintf(reason, size, "built without nvcc, so there are no GPU kernels");
    return false;
#else
    void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(reason, size, "no CUDA driver: libcuda.so.1 not found");
        return false;
    }
    struct driver *cu = &agent->cu;
    const struct {
        void *slot;
        const char *name;
    } entries[] = {
        { &cu->cuInit, "cuInit" },
        { &cu->cuDeviceGet, "cuDeviceGet" },
        { &cu->cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain" },
        { &cu->cuCtxSetCurrent, "cuCtxSetCurrent" },
        { &cu->cuModuleLoadData, "cuModuleLoadData" },
        { &cu->cuModuleGetFunction, "cuModuleGetFunction" },
        { &cu->cuStreamCreate, "cuStreamCreate" },
        { &cu->cuMemAlloc, "cuMemAlloc_v2" },
        { &cu->cuMemAllocHost, "cuMemAllocHost_v2" },
        { &cu->cuMemcpyHtoD, "cuMemcpyHtoD_v2" },
        { &cu->cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2" },
        { &cu->cuLaunchKernel, "cuLaunchKernel" },
        { &cu->cuStreamSynchronize, "cuStreamSynchronize" },
    };
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        void *entry = dlsym(library, entries[i].name);
        if (!entry) {
            snprintf(reason, size, "the CUDA driver has no %s", entries[i].name);
            return false;
        }
        memcpy(entries[i].slot, &entry, sizeof entry);
    }
    CUresult result;
    CUdevice device;
    CUcontext context;
    CUmodule module;
    size_t pixels = (size_t)agent->width * agent->height;
    const char *step;
    if ((step = "cuInit", result = cu->cuInit(0)) ||
        (step = "cuDeviceGet", result = cu->cuDeviceGet(&device, 0)) ||
        (step = "cuDevicePrimaryCtxRetain",
         result = cu->cuDevicePrimaryCtxRetain(&context, device)) ||
        (step = "cuCtxSetCurrent", result = cu->cuCtxSetCurrent(context)) ||
        (step = "cuModuleLoadData", result = cu->cuModuleLoadData(&module, harness_image)) ||
        (step = "cuModuleGetFunction",
         result = cu->cuModuleGetFunction(&agent->convolve, module, "harness_convolve")) ||
        (result = cu->cuModuleGetFunction(&agent->argmax, module, "harness_cell_argmax")) ||
        /* A blocking stream: it waits for the synchronous upload on the legacy stream. */
        (step = "cuStreamCreate", result = cu->cuStreamCreate(&agent->stream, CU_STREAM_DEFAULT)) ||
        (step = "cuMemAlloc", result = cu->cuMemAlloc(&agent->frame, pixels * 3)) ||
        (result = cu->cuMemAlloc(&agent->output, pixels * sizeof(uint32_t))) ||
        (result = cu->cuMemAlloc(&agent->action, sizeof(int))) ||
        (step = "cuMemAllocHost",
         result = cu->cuMemAllocHost((void **)&agent->host_action, sizeof(int)))) {
        snprintf(reason, size, "%s failed with CUDA error %d", step, (int)result);
        return false;
    }
    return true;
#endif
}

int agent_open(struct agent *agent, const struct options *o)
{
    memset(agent, 0, sizeof *agent);
    agent->width = o->width;
    agent->height = o->height;
    char reason[160] = "--inference=cpu";
    if (o->inference != INFER_CPU && agent_open_gpu(agent, reason, sizeof reason)) {
        agent->gpu = true;
        return 0;
    }
    if (o->inference == INFER_GPU) {
        fprintf(stderr, "%s: no GPU inference: %s\n", program, reason);
        return -1;
    }
    if (o->inference == INFER_AUTO)
        fprintf(stderr, "%s: no GPU (%s); inference runs on the CPU\n", program, reason);
    agent->convolved = malloc((size_t)o->width * o->height * sizeof(uint32_t));
    return agent->convolved ? 0 : -1;
}

/* The action for FRAME, or -1 when the GPU failed. */
int agent_infer(struct agent *agent, const unsigned char *frame)
{
    int width = agent->width, height = agent->height;
    if (!agent->gpu) {
        harness_convolve(frame, agent->convolved, width, height);
        return harness_cell_argmax(agent->convolved, width, height);
    }
    const struct driver *cu = &agent->cu;
    void *convolve_args[] = { &agent->frame, &agent->output, &width, &height };
    void *argmax_args[] = { &agent->output, &agent->action, &width, &height };
    /* Upload from the pageable frame buffer, as a camera loop typically does. */
    if (cu->cuMemcpyHtoD(agent->frame, frame, (size_t)width * height * 3) ||
        cu->cuLaunchKernel(agent->convolve, (unsigned)(width + 15) / 16,
                           (unsigned)(height + 15) / 16, 1, 16, 16, 1, 0, agent->stream,
                           convolve_args, NULL) ||
        cu->cuLaunchKernel(agent->argmax, 1, 1, 1, HARNESS_CELLS * 16, 1, 1, 0, agent->stream,
                           argmax_args, NULL) ||
        cu->cuMemcpyDtoHAsync(agent->host_action, agent->action, sizeof(int), agent->stream) ||
        cu->cuStreamSynchronize(agent->stream))
        return -1;
    return *agent->host_action;
}
