/* What hooks/cuda.c and hooks/cudart.c share: describing a copy and opening
 * its range; the ranges of waits for the GPU and of kernel launches. */
#ifndef NVS_COPY_H
#define NVS_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../hook.h"
#include "../hooks.h"

enum direction { HTOD, DTOH, DTOD, HTOH, HTOA, ATOH, DTOA, ATOD, ATOA, PEER, BATCH, UNKNOWN };

enum host_memory { HOST_NONE, HOST_PINNED, HOST_PAGEABLE, HOST_UNKNOWN };

/* What one copy moves. */
struct copy {
    uint64_t bytes;
    enum direction direction;
    enum host_memory host;
    bool name_direction;   /* generic calls (cuMemcpy, 2D, 3D) say which way in the name */
};

struct copy nvs_copy_host_to_device(size_t bytes, const void *host);
struct copy nvs_copy_device_to_host(size_t bytes, const void *host);
struct copy nvs_copy_between(size_t bytes, enum direction direction);
/* Unified addresses (cuMemcpy, cudaMemcpyDefault): the driver says which way. */
struct copy nvs_copy_unified(size_t bytes, unsigned long long destination, unsigned long long source);
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

/* A copy wrapper, TYPE NAME PARAMETERS, that passes ARGUMENTS to the real
 * function and says what it moves with DESCRIPTION, an expression of type
 * struct copy over the parameters. MISSING: the API's "not found". The
 * per-thread-default-stream twins (_ptds, _ptsz) have the prototype of the
 * function they are twins of; cuda.h declares them only for programs built
 * with --default-stream per-thread, so the declaration comes first. */
#define NVS_COPY(type, missing, name, parameters, arguments, description)                   \
    extern type name parameters;                                                            \
    __attribute__((visibility("default"))) type name parameters                             \
    {                                                                                       \
        __typeof__(&name) real = NVS_REAL(name);                                            \
        if (!real)                                                                          \
            return missing;                                                                 \
        if (!nvs_call_begins(NVS_HOOKS_CUDA))                                               \
            return real arguments;                                                          \
        const struct copy copy = description;                                               \
        nvs_copy_open(NVS_HOOK_ID(name), &copy);                                            \
        type result = real arguments;                                                       \
        nvs_copy_close();                                                                   \
        return result;                                                                      \
    }

/* A wait or a launch, TYPE NAME PARAMETERS, that passes ARGUMENTS to the
 * real function; OPEN opens its range (nvs_wait_open, nvs_launch_open). The
 * exported function is the real function when it is resolved and the call
 * untraced, else a tail call into a function of its own with the same
 * parameters (the first call's resolving and the traced path). Both ways out
 * need nothing kept, so the compiler saves no register for them: in the
 * NVS_COPY form an untraced call cost 10 instructions more for a wait and 19
 * more for a launch, whose eleven parameters put five on the stack
 * (callgrind, make bench). The twins are declared as for NVS_COPY. */
#define NVS_CUDA_CALL(type, missing, name, parameters, arguments, open)                     \
    extern type name parameters;                                                            \
    __attribute__((noinline)) static type nvs_traced_##name parameters                      \
    {                                                                                       \
        __typeof__(&name) real = NVS_REAL(name);                                            \
        if (!real)                                                                          \
            return missing;                                                                 \
        if (!nvs_call_begins(NVS_HOOKS_CUDA))                                               \
            return real arguments;                                                          \
        open;                                                                               \
        type result = real arguments;                                                       \
        nvs_copy_close();                                                                   \
        return result;                                                                      \
    }                                                                                       \
    __attribute__((visibility("default"))) type name parameters                             \
    {                                                                                       \
        __typeof__(&name) real = (__typeof__(&name))atomic_load_explicit(                   \
            &nvs_real_functions[NVS_HOOK_ID(name)], memory_order_acquire);                  \
        if (__builtin_expect(real != NULL, 1) && nvs_call_passes(NVS_HOOKS_CUDA))           \
            return real arguments;                                                          \
        return nvs_traced_##name arguments;                                                 \
    }

#endif
