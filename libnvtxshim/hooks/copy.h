/* What hooks/cuda.c and hooks/cudart.c share: describing a copy and opening
 * its range. */
#ifndef NVS_COPY_H
#define NVS_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
/* Opens the range of copy hook ID; close it with nvs_call_close(NVS_DOMAIN_CUDA). */
void nvs_copy_begin(enum nvs_hook_id id, const struct copy *copy);
/* The driver answered SYMBOL with FOUND: our wrapper when FOUND is a hooked function. */
void *nvs_driver_entry_point(const char *symbol, void *found);

/* A copy wrapper and its per-thread-default-stream twin (the same prototype,
 * SUFFIX added): TYPE is the API's result type, MISSING its "not found". */
#define NVS_COPY(type, missing, name, parameters, arguments, description)                   \
    __attribute__((visibility("default"))) type name parameters                             \
    {                                                                                       \
        NVS_WRAPPER_BODY(NVS_HOOKS_CUDA, name, missing, arguments,                          \
                         struct copy copy = description;                                    \
                         nvs_copy_begin(NVS_HOOK_ID(name), &copy),                          \
                         nvs_call_close(NVS_DOMAIN_CUDA));                                  \
    }

#define NVS_COPY_PAIR(type, missing, base, suffix, parameters, arguments, description)      \
    extern __typeof__(base) base##suffix;                                                    \
    NVS_COPY(type, missing, base, parameters, arguments, description)                       \
    NVS_COPY(type, missing, base##suffix, parameters, arguments, description)

#endif
