/* Between the descriptor wrappers (hooks/devices.c) and the two ioctl
 * protocols they hand over to: V4L2 (hooks/v4l2.c) and usbfs (hooks/usbfs.c). */
#ifndef NVS_DEVICE_CALLS_H
#define NVS_DEVICE_CALLS_H

#include <errno.h>

#include "../devices.h"
#include "../hook.h"

typedef int (*nvs_ioctl_fn)(int fd, unsigned long request, void *argument);

#define SLOW __attribute__((noinline, cold))

/* The real function of a libc hook (always there: libc defines it). */
#define REAL(name) NVS_REAL(name)

/* The way straight through, for a call on any other descriptor: a jump
 * through REAL_NAME, which holds the real function once found and, until
 * then, NAME_first, which finds it (out of line) and makes the call. No test
 * on the way and no register saved: the jump is the wrapper's last
 * instruction. */
#define PASS(name, arguments) return atomic_load_explicit(&real_##name, memory_order_relaxed) arguments

#define RESOLVING(name, type, parameters, arguments)                                          \
    SLOW static type name##_first parameters;                                                 \
    static _Atomic(__typeof__(&name)) real_##name = name##_first;                             \
    SLOW static type name##_first parameters                                                  \
    {                                                                                         \
        __typeof__(&name) real = REAL(name);                                                  \
        atomic_store_explicit(&real_##name, real, memory_order_relaxed);                      \
        return real arguments;                                                                \
    }

/* A traced ioctl on a camera or a usbfs node: the range (when the request is
 * one that is traced), the real call, what it tells of the device. */
int nvs_v4l2_ioctl(nvs_ioctl_fn real, struct nvs_device *device, int fd, unsigned long request,
                   void *argument);
int nvs_usbfs_ioctl(nvs_ioctl_fn real, struct nvs_device *device, unsigned slot, int fd,
                    unsigned long request, void *argument);
int nvs_hid_ioctl(nvs_ioctl_fn real, struct nvs_device *device, int fd, unsigned long request,
                  void *argument);
/* Untraced requests that still tell the camera's format (VIDIOC_G_FMT). */
void nvs_v4l2_observe(struct nvs_device *device, unsigned long request, const void *argument,
                      int result);

/* The usbfs node in SLOT was closed: its URBs' ranges end. Called by the
 * table (nvs_devices_on_last_close, set by init.c) when its last descriptor goes. */
void nvs_usbfs_closed(unsigned slot);

/* Whether a failed call failed the way a device's calls fail in normal use
 * (nothing to read yet, a signal): no mark for those. */
static inline bool nvs_device_ordinary_failure(int error)
{
    return error == EAGAIN || error == EWOULDBLOCK || error == EINTR;
}

#endif
