/* What hooks/cuda.c and hooks/cudart.c share: describing a copy and opening
 * its range; the ranges of waits for the GPU and of kernel launches. */
#ifndef NVS_COPY_H
#define NVS_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../hook.h"
#include "../registry/registry.h"

enum direction { HTOD, DTOH, DTOD, HTOH, HTOA, ATOH, DTOA, ATOD, ATOA, PEER, BATCH, UNKNOWN };

enum host_memory { HOST_NONE, HOST_PINNED, HOST_PAGEABLE, HOST_UNKNOWN };

/* What one copy moves: 16 bytes, which a call passes in two registers. */
struct copy {
    uint64_t bytes;
    enum direction direction : 8;
    enum host_memory host : 8;
    bool name_direction : 1; /* generic calls (cuMemcpy, 2D, 3D) say which way in the name */
};
_Static_assert(sizeof(struct copy) == 16, "a copy is passed in registers");

struct copy nvs_copy_host_to_device(size_t bytes, const void *host);
struct copy nvs_copy_device_to_host(size_t bytes, const void *host);
struct copy nvs_copy_between(size_t bytes, enum direction direction);
/* Unified addresses (cuMemcpy, cudaMemcpyDefault): the driver says which way. */
struct copy nvs_copy_unified(size_t bytes, unsigned long long destination,
                             unsigned long long source);
enum host_memory nvs_copy_host_memory(const void *host);
/* Opens the range of copy hook ID (hook.h's call path). Out of line: its
 * name is found by the copy's shape. COPY by value: the traced half keeps
 * none in its frame for it. */
void nvs_copy_open(enum nvs_hook_id id, struct copy copy);
/* Dispatches a copy going DIRECTION, its frame marker found here. */
void nvs_copy_dispatch(enum nvs_hook_id id, enum direction direction);

/* Closes the range of any call of the domain: inline, in the traced half of
 * every wrapper (NVS_SPLIT_WRAPPER), the range closed in the wrapper's frame. */
static inline __attribute__((always_inline)) void nvs_cuda_end(void)
{
    nvs_call_close(NVS_DOMAIN_CUDA);
}
/* The driver answered SYMBOL with FOUND: our wrapper when FOUND is a hooked function. */
void *nvs_driver_entry_point(const char *symbol, void *found);

/* Opens the range of a wait for the GPU, hook ID (category wait, named after
 * the API), inline in the wrapper's traced half; nvs_cuda_end closes it. */
static inline __attribute__((always_inline)) void nvs_wait_open(enum nvs_hook_id id)
{
    nvs_call_open_constant(id, NVS_FRAME_OFF, NVS_DOMAIN_CUDA, NVS_CUDA_WAIT, NVS_COLOR_CUDA_WAIT);
}

/* Opens the range of a graph launch (category launch, named after the API: a
 * graph has no one kernel's name): what PyTorch's CUDAGraph.replay and
 * torch.compile's reduce-overhead mode run each step. Inline, as
 * nvs_wait_open; nvs_cuda_end closes it. */
static inline __attribute__((always_inline)) void nvs_graph_launch_open(enum nvs_hook_id id)
{
    nvs_call_open_constant(id, NVS_FRAME_OFF, NVS_DOMAIN_CUDA, NVS_CUDA_LAUNCH,
                           NVS_COLOR_CUDA_LAUNCH);
}
/* Sets *NAME to the name of the kernel FUNCTION (NULL: it has none) and
 * returns 0, or returns -1 when it cannot be asked now (it is asked again at
 * the next launch). Asked once per kernel, errno kept around it. */
typedef int nvs_kernel_namer(const void *function, const char **name);
/* Opens the range of a kernel launch, hook ID, named after API (the hook
 * whose documented name it takes) and the kernel, as NAME_OF says it. Out of
 * line: its name is found by the kernel; nvs_cuda_end closes it. */
void nvs_launch_open(enum nvs_hook_id id, enum nvs_hook_id api, const void *function,
                     nvs_kernel_namer *name_of);

/* The key of the name of copy hook ID's range for COPY's shape. */
static inline uint64_t nvs_copy_name_key(enum nvs_hook_id id, const struct copy *copy)
{
    return nvs_call_name_key(id,
                             ((uint64_t)copy->direction << 48) | ((uint64_t)copy->host << 46) |
                                 (copy->bytes & ((1ull << 46) - 1))); /* nvs_copy_keeps_bytes */
}

/* The frame marker a copy in DIRECTION counts as. */
static inline enum nvs_frame_marker nvs_copy_marker(enum direction direction)
{
    return direction == HTOD ? NVS_FRAME_CUDA_HTOD
        : direction == DTOH  ? NVS_FRAME_CUDA_DTOH
                             : NVS_FRAME_OFF;
}

/* COPY's range in RANGE, without its name: category, colour (pageable host
 * memory has its own) and the bytes as the payload. */
static inline void nvs_copy_range(struct nvs_attributes *range, const struct copy *copy)
{
    *range = NVS_ATTRIBUTES_PAYLOAD(
        NVS_DOMAIN_CUDA, NVS_CUDA_COPY,
        copy->host == HOST_PAGEABLE ? NVS_COLOR_CUDA_PAGEABLE : NVS_COLOR_CUDA_COPY, copy->bytes);
}

/* Whether the key of COPY's name holds all of its bytes (below 64 TiB): its
 * range, payload and all, is then the same at every copy of its shape. */
static inline bool nvs_copy_keeps_bytes(const struct copy *copy)
{
    return copy->bytes >> 46 == 0;
}

/* Opens the range of copy hook ID described by COPY (a value): the wrappers'
 * OPEN, so that the description is made only on the traced path. Inline in
 * the wrapper's traced half when the range of the copy's shape is built
 * already (nearly every copy after the first of its shape: nvs_range_lookup);
 * nvs_copy_open otherwise. */
static inline __attribute__((always_inline)) void nvs_copy_begin(enum nvs_hook_id id,
                                                                 struct copy copy)
{
    const struct nvs_attributes *range = nvs_range_lookup(NVS_DOMAIN_CUDA,
                                                          nvs_copy_name_key(id, &copy));
    if (__builtin_expect(range == NULL || !nvs_copy_keeps_bytes(&copy), 0)) {
        nvs_copy_open(id, copy);
        return;
    }
    if (nvs_call_has_work())
        nvs_copy_dispatch(id, copy.direction);
    nvs_range_push_in(NVS_DOMAIN_CUDA, range);
}

/* What a copy returning TYPE answers when its real function is missing. */
#define NVS_COPY_MISSING_CUresult CUDA_ERROR_NOT_FOUND
#define NVS_COPY_MISSING_cudaError_t cudaErrorNotSupported

/* A copy wrapper NAME and its per-thread-default-stream twin, of the driver
 * (TYPE CUresult) or the runtime (cudaError_t): the same parameters, the
 * description (a struct copy, made on the traced half only) and the range
 * made alike, each in two halves (NVS_SPLIT_WRAPPER). */
#define COPY_PAIR(type, name, twin, parameters, arguments, description)                            \
    NVS_SPLIT_WRAPPER(NVS_HOOKS_CUDA, type, name, parameters, arguments, nvs_resolve,              \
                      NVS_COPY_MISSING_##type, nvs_copy_begin(NVS_HOOK_ID(name), description),     \
                      nvs_cuda_end())                                                              \
    NVS_SPLIT_WRAPPER(NVS_HOOKS_CUDA, type, twin, parameters, arguments, nvs_resolve,              \
                      NVS_COPY_MISSING_##type, nvs_copy_begin(NVS_HOOK_ID(twin), description),     \
                      nvs_cuda_end())
/* A copy without a twin. */
#define COPY(type, name, parameters, arguments, description)                                       \
    NVS_SPLIT_WRAPPER(NVS_HOOKS_CUDA, type, name, parameters, arguments, nvs_resolve,              \
                      NVS_COPY_MISSING_##type, nvs_copy_begin(NVS_HOOK_ID(name), description),     \
                      nvs_cuda_end())

#endif
