/* Between the descriptor wrappers (io.c, descriptors.c), the kinds of device
 * they hand over to (a file each: v4l2.c, serial.c, hidraw.c, usbfs.c,
 * i2c.c) and the list of kinds (kinds.c) init.c gives the table. */
#ifndef NVS_DEVICE_CALLS_H
#define NVS_DEVICE_CALLS_H

#include <errno.h>

#include "../hidden.h"
#include "table.h"
#include "../hook.h"

#define SLOW __attribute__((noinline, cold))

/* The real function of a libc hook (always there: libc defines it). */
#define REAL(name) NVS_REAL(name)

/* The way straight through, for a call on any other descriptor: a jump
 * through REAL_NAME, which holds the real function once found and, until
 * then, NAME_first, which finds it (out of line) and makes the call. No test
 * on the way and no register saved: the jump is the wrapper's last
 * instruction. */
#define PASS(name, arguments)                                                                      \
    return atomic_load_explicit(&real_##name, memory_order_relaxed) arguments

#define RESOLVING(name, type, parameters, arguments)                                               \
    SLOW static type name##_first parameters;                                                      \
    static _Atomic(__typeof__(&name)) real_##name = name##_first;                                  \
    SLOW static type name##_first parameters                                                       \
    {                                                                                              \
        __typeof__(&name) real = REAL(name);                                                       \
        atomic_store_explicit(&real_##name, real, memory_order_relaxed);                           \
        return real arguments;                                                                     \
    }

/* The kinds the library knows, NULL-terminated (kinds.c). */
extern NVS_HIDDEN const struct nvs_device_kind *const nvs_device_kinds[];

/* Whether a failed call failed the way a device's calls fail in normal use
 * (nothing to read yet, a signal): no mark for those. */
static inline bool nvs_device_ordinary_failure(int error)
{
    return error == EAGAIN || error == EWOULDBLOCK || error == EINTR;
}

#endif
