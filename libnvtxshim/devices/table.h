/* The device files the program holds open (table.c): a byte per descriptor
 * naming the device it refers to, so that read, write, ioctl and poll on any
 * other descriptor cost a bounds check and a load before the real call.
 *
 * A descriptor enters the table when the program opens a device file of a
 * rig, told by its device number (or sysfs) after the open: a device of one
 * of the kinds (struct nvs_device_kind; kinds.c lists them: a V4L2 node, a
 * USB serial tty, a hidraw node, a usbfs node, an I2C node), or a path
 * NVTXSHIM_DEVICES names. Duplicates share the device; close (and
 * close_range, closefrom, fclose, dup2 onto it) takes the descriptor out.
 * Only devices whose set NVTXSHIM_HOOKS traces, while a tool takes the
 * ranges, are entered: with nothing traced the table stays empty. */
#ifndef NVS_DEVICE_TABLE_H
#define NVS_DEVICE_TABLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../hidden.h"
#include "../config.h"
#include "../emit.h"
#include "../registry/registry.h"
#include "../schema.h"

struct nvs_device;
typedef int (*nvs_ioctl_fn)(int fd, unsigned long request, void *argument);

/* A kind of device file: what the table and the wrappers ask of a device,
 * one const per kind in a file of its own (v4l2.c, serial.c, hidraw.c,
 * usbfs.c, i2c.c), listed in kinds.c and called through, as libusb calls its
 * platform's struct usbi_os_backend. */
struct nvs_device_kind {
    const char *name;
    /* How a character device is told to be one, after the open: by its major
     * number where Linux fixes it (devices.txt; 0 ends the list), else by its
     * class in sysfs: SYSFS_CLASS in /sys/dev/char/MAJOR:MINOR's target (and
     * SYSFS_ALSO too, where not NULL). */
    unsigned short majors[3];
    const char *sysfs_class, *sysfs_also;
    /* The kind of a path NVTXSHIM_DEVICES names that no kind claims. */
    bool listed;
    enum nvs_domain domain;
    unsigned group; /* its NVTXSHIM_HOOKS set (enum nvs_hook_set) */
    /* The frame markers its calls are (NVTXSHIM_FRAME): a call that brought
     * bytes in, one that took bytes out; NVS_FRAME_OFF: none. */
    enum nvs_frame_marker in_marker, out_marker;
    /* The categories (schema.h) of its ranges: read() and write() (0: not
     * traced), a wait (poll, select, epoll_wait) for it, tcdrain (0: not
     * traced), its red marks. */
    uint32_t read_category, write_category, wait_category, drain_category, warning_category;
    /* The name of a read or write (hook ID) of COUNT bytes, VECTOR: readv or
     * writev, whose size is not known before the call; NULL: "read PATH 64B". */
    struct nvs_name (*io_name)(const struct nvs_device *device, enum nvs_hook_id id, size_t count,
                               bool vector);
    /* Its ioctls: the range (when the request is one that is traced), the
     * real call, what it tells of the device. NULL: they pass untraced. */
    int (*ioctl)(nvs_ioctl_fn real, struct nvs_device *device, unsigned slot, int fd,
                 unsigned long request, void *argument);
    /* A device of this kind entered the table: its own state starts (NULL: it keeps none). */
    void (*opened)(struct nvs_device *device);
    /* Its last descriptor went (NULL: nothing to do): a usbfs node's URBs end. */
    void (*last_close)(unsigned slot);
};

#define NVS_DEVICE_SLOTS 256 /* slot 0 means "no device" */
#define NVS_DEVICE_PATH_MAX 64

struct nvs_device {
    _Atomic unsigned refs; /* descriptors naming this slot; 0: free */
    uint32_t uid;          /* this open's number, for its ranges' name keys */
    /* Its kind; an epoll instance that watches a device (WATCHER) has the
     * watched device's, and is no device itself. */
    const struct nvs_device_kind *kind;
    bool watcher;
    enum nvs_domain domain;                      /* the kind's */
    unsigned group;                              /* the kind's NVTXSHIM_HOOKS set */
    enum nvs_frame_marker in_marker, out_marker; /* NVS_FRAME_OFF: not a marker */
    char path[NVS_DEVICE_PATH_MAX];              /* as opened (cut short: "..." at the end) */
    /* A camera's format, once the program set or read it: fourcc << 32 |
     * width << 16 | height; 0 while unknown. */
    _Atomic uint64_t format;
    /* The sequence number of the camera's last dequeued buffer; -1 after STREAMON. */
    _Atomic int64_t last_sequence;
    /* An I2C node's chip, as I2C_SLAVE set it: its address plus 1; 0 while unset. */
    _Atomic uint32_t i2c_address;
    /* O_NONBLOCK, as the program opened the device and set it since (fcntl
     * F_SETFL, ioctl FIONBIO): a call on a non-blocking device that finds
     * nothing (EAGAIN) is not drawn, and one that does is drawn when it
     * returns. Shared by the duplicates, as the kernel's flag is. */
    _Atomic bool nonblocking;
};

extern NVS_HIDDEN struct nvs_device nvs_devices[NVS_DEVICE_SLOTS];

/* Descriptors below this have their byte; the rest are searched in a short
 * list that is empty on every common program. */
#define NVS_FD_DIRECT 1024
extern NVS_HIDDEN _Atomic unsigned char nvs_fd_slots[NVS_FD_DIRECT];
extern NVS_HIDDEN _Atomic unsigned nvs_fd_far_count;
/* Device descriptors open: poll and select look at their sets only when not 0. */
extern NVS_HIDDEN _Atomic unsigned nvs_device_fds;

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
    if (__builtin_expect(fd < 0 || !atomic_load_explicit(&nvs_fd_far_count, memory_order_relaxed),
                         1))
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
extern NVS_HIDDEN _Atomic bool nvs_device_globs;
static inline bool nvs_device_candidate(const char *path)
{
    return path &&
        ((path[0] == '/' && path[1] == 'd' && path[2] == 'e' && path[3] == 'v' && path[4] == '/') ||
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

/* The kinds the table tells devices by, NULL-terminated (kinds.c's list): set
 * at load, before any device opens, by init.c. The table calls no kind's file
 * of its own accord: what a kind does (its last close) it reaches through this. */
void nvs_devices_set_kinds(const struct nvs_device_kind *const *kinds);

/* A device's names and warnings, for every kind: a cached name
 * for hook ID on DEVICE with PARAMETER (up to 32 bits), made by FORMAT on the
 * first use; a red mark in the device's domain, "WHAT failed: EIO". */
__attribute__((format(printf, 4, 5))) struct nvs_name nvs_device_name(
    const struct nvs_device *device, enum nvs_hook_id id, uint32_t parameter, const char *format,
    ...);
void nvs_device_warn(const struct nvs_device *device, const char *what, int error);

/* A glob as fnmatch(3) with FNM_PATHNAME takes it (*, ?, [...]), without
 * the locale and the allocation: it runs inside open. */
bool nvs_glob_match(const char *pattern, const char *text);

#endif
