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

/* What one copy moves. */
struct copy {
    uint64_t bytes;
    enum direction direction;
    enum host_memory host;
    bool name_direction; /* generic calls (cuMemcpy, 2D, 3D) say which way in the name */
};

struct copy nvs_copy_host_to_device(size_t bytes, const void *host);
struct copy nvs_copy_device_to_host(size_t bytes, const void *host);
struct copy nvs_copy_between(size_t bytes, enum direction direction);
/* Unified addresses (cuMemcpy, cudaMemcpyDefault): the driver says which way. */
struct copy nvs_copy_unified(size_t bytes, unsigned long long destination,
                             unsigned long long source);
enum host_memory nvs_copy_host_memory(const void *host);
/* Opens and closes the range of copy hook ID (hook.h's call path). Out of
 * line: the wrappers' untraced path then saves no register for them. */
void nvs_copy_open(enum nvs_hook_id id, const struct copy *copy);
void nvs_copy_close(void);
/* The driver answered SYMBOL with FOUND: our wrapper when FOUND is a hooked function. */
void *nvs_driver_entry_point(const char *symbol, void *found);

/* Opens the range of a wait for the GPU, hook ID (category wait, named after
 * the API). Out of line, as nvs_copy_open; nvs_copy_close closes it. */
void nvs_wait_open(enum nvs_hook_id id);
/* Opens the range of a graph launch (category launch, named after the API: a
 * graph has no one kernel's name). Out of line; nvs_copy_close closes it. */
void nvs_graph_launch_open(enum nvs_hook_id id);
/* Sets *NAME to the name of the kernel FUNCTION (NULL: it has none) and
 * returns 0, or returns -1 when it cannot be asked now (it is asked again at
 * the next launch). Asked once per kernel, errno kept around it. */
typedef int nvs_kernel_namer(const void *function, const char **name);
/* Opens the range of a kernel launch, hook ID, named after API (the hook
 * whose documented name it takes) and the kernel, as NAME_OF says it. Out of
 * line; nvs_copy_close closes it. */
void nvs_launch_open(enum nvs_hook_id id, enum nvs_hook_id api, const void *function,
                     nvs_kernel_namer *name_of);

/* Opens the range of copy hook ID described by COPY (a value): the wrappers'
 * OPEN, so that the description is made only on the traced path. */
static inline void nvs_copy_begin(enum nvs_hook_id id, struct copy copy)
{
    nvs_copy_open(id, &copy);
}

/* What a copy returning TYPE answers when its real function is missing. */
#define NVS_COPY_MISSING_CUresult CUDA_ERROR_NOT_FOUND
#define NVS_COPY_MISSING_cudaError_t cudaErrorNotSupported

/* A copy wrapper NAME and its per-thread-default-stream twin, of the driver
 * (TYPE CUresult) or the runtime (cudaError_t): the same parameters, the
 * description (a struct copy, made on the traced path only) and the range
 * made alike. In one piece; declared first, as in NVS_SPLIT_WRAPPER. */
#define COPY_PAIR(type, name, twin, parameters, arguments, description)                            \
    extern type name parameters;                                                                   \
    NVS_EXPORT type name parameters                                                                \
    {                                                                                              \
        NVS_WRAPPER_BODY(NVS_HOOKS_CUDA, nvs_resolve, name, NVS_COPY_MISSING_##type, arguments,    \
                         nvs_copy_begin(NVS_HOOK_ID(name), description), nvs_copy_close());        \
    }                                                                                              \
    extern type twin parameters;                                                                   \
    NVS_EXPORT type twin parameters                                                                \
    {                                                                                              \
        NVS_WRAPPER_BODY(NVS_HOOKS_CUDA, nvs_resolve, twin, NVS_COPY_MISSING_##type, arguments,    \
                         nvs_copy_begin(NVS_HOOK_ID(twin), description), nvs_copy_close());        \
    }

#endif
