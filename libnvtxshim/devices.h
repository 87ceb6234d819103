/* The device files the program holds open (devices.c): a byte per descriptor
 * naming the device it refers to, so that read, write, ioctl and poll on any
 * other descriptor cost a bounds check and a load before the real call.
 *
 * A descriptor enters the table when the program opens a device file of a
 * rig, told by its device number (or sysfs) after the open: a V4L2 node, a
 * USB serial tty, a hidraw node, a usbfs node, or a path NVTXSHIM_DEVICES
 * names. Duplicates share the device; close (and close_range, closefrom,
 * fclose, dup2 onto it) takes the descriptor out. Only devices whose group
 * NVTXSHIM_HOOKS traces, while a tool takes the ranges, are entered: with
 * nothing traced the table stays empty. */
#ifndef NVS_DEVICES_H
#define NVS_DEVICES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "emit.h"
#include "registry/registry.h"
#include "schema.h"

enum nvs_device_kind {
    NVS_DEVICE_NONE,
    NVS_DEVICE_V4L2,            /* a video4linux node (major 81) */
    NVS_DEVICE_SERIAL,          /* a USB serial tty, or a path NVTXSHIM_DEVICES names */
    NVS_DEVICE_HID,             /* a hidraw node */
    NVS_DEVICE_USBFS,           /* /dev/bus/usb/BBB/DDD (major 189) */
    NVS_DEVICE_EPOLL,           /* an epoll instance watching one of the above */
};

#define NVS_DEVICE_SLOTS 256        /* slot 0 means "no device" */
#define NVS_DEVICE_PATH_MAX 64

struct nvs_device {
    _Atomic unsigned refs;          /* descriptors naming this slot; 0: free */
    uint32_t uid;                   /* this open's number, for its ranges' name keys */
    enum nvs_device_kind kind;      /* for an epoll instance: EPOLL */
    enum nvs_domain domain;
    unsigned group;                 /* its NVTXSHIM_HOOKS bit */
    enum nvs_frame_marker in_marker, out_marker;    /* NVS_FRAME_OFF: not a marker */
    char path[NVS_DEVICE_PATH_MAX]; /* as opened (cut short: "..." at the end) */
    /* A camera's format, once the program set or read it: fourcc << 32 |
     * width << 16 | height; 0 while unknown. */
    _Atomic uint64_t format;
    /* The sequence number of the camera's last dequeued buffer; -1 after STREAMON. */
    _Atomic int64_t last_sequence;
    /* O_NONBLOCK, as the program opened the device and set it since (fcntl
     * F_SETFL, ioctl FIONBIO): a call on a non-blocking device that finds
     * nothing (EAGAIN) is not drawn, and one that does is drawn when it
     * returns. Shared by the duplicates, as the kernel's flag is. */
    _Atomic bool nonblocking;
};

extern struct nvs_device nvs_devices[NVS_DEVICE_SLOTS];

/* Descriptors below this have their byte; the rest are searched in a short
 * list that is empty on every common program. */
#define NVS_FD_DIRECT 1024
extern _Atomic unsigned char nvs_fd_slots[NVS_FD_DIRECT];
extern _Atomic unsigned nvs_fd_far_count;
/* Device descriptors open: poll and select look at their sets only when not 0. */
extern _Atomic unsigned nvs_device_fds;

unsigned nvs_fd_slot_far(int fd);

/* What nvs_fd_slot says of a descriptor above the table while some device
 * descriptor is up there: look it up (nvs_device_slot). Keeping the lookup
 * out of the wrappers keeps them free of calls that return. */
#define NVS_FD_FAR NVS_DEVICE_SLOTS

/* The device slot of FD: 0 for any other descriptor, or NVS_FD_FAR. */
static inline unsigned nvs_fd_slot(int fd)
{
    if (__builtin_expect((unsigned)fd < NVS_FD_DIRECT, 1))
        return atomic_load_explicit(&nvs_fd_slots[fd], memory_order_relaxed);
    if (__builtin_expect(fd < 0 || !atomic_load_explicit(&nvs_fd_far_count, memory_order_relaxed), 1))
        return 0;
    return NVS_FD_FAR;
}

/* The device slot of FD for certain, 0 for none (off the hot path). */
static inline unsigned nvs_device_slot(int fd, unsigned slot)
{
    return slot == NVS_FD_FAR ? nvs_fd_slot_far(fd) : slot;
}

static inline bool nvs_devices_open(void)
{
    return atomic_load_explicit(&nvs_device_fds, memory_order_relaxed) != 0;
}

/* Whether a successful open of PATH may have given a device worth a look:
 * /dev/..., or any path when NVTXSHIM_DEVICES names some. */
extern _Atomic bool nvs_device_globs;
static inline bool nvs_device_candidate(const char *path)
{
    return path && ((path[0] == '/' && path[1] == 'd' && path[2] == 'e' && path[3] == 'v' &&
                     path[4] == '/') ||
                    atomic_load_explicit(&nvs_device_globs, memory_order_relaxed));
}

/* FD was just opened at PATH with FLAGS: enters it when it is a traced device.
 * errno kept. */
void nvs_device_opened(int fd, const char *path, int flags);
/* The program set or cleared O_NONBLOCK on the device in SLOT. */
static inline void nvs_device_set_nonblocking(unsigned slot, bool nonblocking)
{
    if (slot && slot < NVS_DEVICE_SLOTS)
        atomic_store_explicit(&nvs_devices[slot].nonblocking, nonblocking, memory_order_relaxed);
}
/* NEW_FD is now a duplicate of the device in SLOT. */
void nvs_device_duplicated(unsigned slot, int new_fd);
/* FD is being closed (its entry goes first, so that a descriptor the kernel
 * hands out again at once is never taken for the old device). */
void nvs_device_closing(int fd);
/* Descriptors the table holds that are no longer open leave it (after
 * fcloseall, which closes streams' descriptors inside libc). */
void nvs_device_forget_closed(void);
/* Descriptors FIRST..LAST are being closed. */
void nvs_device_closing_range(unsigned first, unsigned last);
/* The program added FD (a device) to the epoll instance EPFD. */
void nvs_device_watched(int epfd, unsigned slot);

/* The library read its configuration (init): the globs flag above. */
void nvs_devices_configure(const struct nvs_config *config);
/* Devices or URBs the tables had no room for, said at exit when any. */
void nvs_devices_report(void);

/* Counted losses (nvs_devices_report says them). */
enum nvs_device_loss { NVS_DEVICE_LOSS_SLOTS, NVS_DEVICE_LOSS_URBS, NVS_DEVICE_LOSS_KINDS };
void nvs_device_count_loss(enum nvs_device_loss loss);

/* The usbfs node's URBs must end when its last descriptor goes: the table
 * calls CLOSED with the slot of a device of KIND whose last descriptor went
 * (set at load, before any device opens, by init.c: the table calls no
 * protocol file of its own accord). */
void nvs_devices_on_last_close(enum nvs_device_kind kind, void (*closed)(unsigned slot));

/* A device's names and warnings, for every protocol (hooks/): a cached name
 * for hook ID on DEVICE with PARAMETER (up to 32 bits), made by FORMAT on the
 * first use; a red mark in the device's domain, "WHAT failed: EIO". */
__attribute__((format(printf, 4, 5)))
struct nvs_name nvs_device_name(const struct nvs_device *device, enum nvs_hook_id id,
                                uint32_t parameter, const char *format, ...);
void nvs_device_warn(const struct nvs_device *device, const char *what, int error);

/* A glob as fnmatch(3) with FNM_PATHNAME takes it (*, ?, [...]), without
 * the locale and the allocation: it runs inside open. */
bool nvs_glob_match(const char *pattern, const char *text);

#endif
