/* libc calls on device files: the descriptor bookkeeping (open, dup, close...)
 * that keeps devices.c's table, and the I/O, ioctls and waits on the
 * descriptors in it, in domains v4l2, serial, hid and usb (schema.h).
 *
 * Every process that inherits LD_PRELOAD makes these calls, on files, pipes
 * and sockets: for those a wrapper is a table lookup and a jump to the real
 * function, written so that the compiler saves no register and moves no
 * argument for it; everything else is out of line. The variadic ones (open,
 * ioctl, fcntl) are defined with their optional argument as a plain one (the
 * x86-64 and AArch64 calling conventions pass it where a variadic caller
 * puts it), so that they set up no va_list either. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/uio.h>
#include <termios.h>
#include <unistd.h>

#include "../devices.h"
#include "../emit.h"
#include "../hook.h"
#include "device_calls.h"

#define EXPORT __attribute__((visibility("default")))
#define SLOW __attribute__((noinline, cold))

/* glibc declares these only under _FORTIFY_SOURCE. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);
ssize_t __read_chk(int fd, void *buffer, size_t count, size_t buffer_size);
int __poll_chk(struct pollfd *fds, nfds_t count, int timeout, size_t fds_size);
int __ppoll_chk(struct pollfd *fds, nfds_t count, const struct timespec *timeout,
                const sigset_t *mask, size_t fds_size);

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

RESOLVING(read, ssize_t, (int fd, void *buffer, size_t count), (fd, buffer, count))
RESOLVING(__read_chk, ssize_t, (int fd, void *buffer, size_t count, size_t size),
          (fd, buffer, count, size))
RESOLVING(write, ssize_t, (int fd, const void *buffer, size_t count), (fd, buffer, count))
RESOLVING(readv, ssize_t, (int fd, const struct iovec *vector, int count), (fd, vector, count))
RESOLVING(writev, ssize_t, (int fd, const struct iovec *vector, int count), (fd, vector, count))
RESOLVING(close, int, (int fd), (fd))
RESOLVING(tcdrain, int, (int fd), (fd))
RESOLVING(poll, int, (struct pollfd *fds, nfds_t count, int timeout), (fds, count, timeout))
RESOLVING(select, int, (int count, fd_set *read_set, fd_set *write_set, fd_set *except_set,
                        struct timeval *timeout), (count, read_set, write_set, except_set, timeout))
RESOLVING(epoll_wait, int, (int epfd, struct epoll_event *events, int count, int timeout),
          (epfd, events, count, timeout))

SLOW static int ioctl_first(int fd, unsigned long request, void *argument);
static _Atomic(nvs_ioctl_fn) real_ioctl = ioctl_first;
SLOW static int ioctl_first(int fd, unsigned long request, void *argument)
{
    nvs_ioctl_fn real = (nvs_ioctl_fn)nvs_resolve(NVS_HOOK_ID(ioctl));
    atomic_store_explicit(&real_ioctl, real, memory_order_relaxed);
    return real(fd, request, argument);
}

/* ---- names and marks ------------------------------------------------------------ */

struct nvs_name nvs_device_name(const struct nvs_device *device, enum nvs_hook_id id,
                                uint32_t parameter, const char *format, ...)
{
    uint64_t key = nvs_call_name_key(id, ((uint64_t)device->uid << 32) | parameter);
    struct nvs_name name = nvs_name_lookup(device->domain, key);
    if (name.registered)
        return name;
    char text[NVS_CALL_TEXT_MAX];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    return nvs_name_store(device->domain, key, text);
}

void nvs_device_warn(const struct nvs_device *device, const char *what, int error)
{
    char text[NVS_CALL_TEXT_MAX];
    const char *name = strerrorname_np(error);
    if (name)
        snprintf(text, sizeof text, "%s failed: %s", what, name);
    else
        snprintf(text, sizeof text, "%s failed: error %d", what, error);
    uint32_t category = device->domain == NVS_DOMAIN_V4L2 ? NVS_V4L2_WARNING
                      : device->domain == NVS_DOMAIN_USB ? NVS_USB_WARNING : NVS_TTY_WARNING;
    struct nvs_attributes mark = {
        .domain = device->domain, .name = { NULL, text }, .category = category,
        .color = NVS_COLOR_ERROR,
    };
    nvs_mark(&mark);
}

/* ---- the table's bookkeeping ---------------------------------------------------------- */

static inline int opened(int fd, const char *path)
{
    if (fd >= 0 && nvs_device_candidate(path))
        nvs_device_opened(fd, path);
    return fd;
}

EXPORT int nvs_open(const char *path, int flags, mode_t mode) __asm__("open");
EXPORT int nvs_open(const char *path, int flags, mode_t mode)
{
    return opened(REAL(open)(path, flags, mode), path);
}

EXPORT int nvs_open64(const char *path, int flags, mode_t mode) __asm__("open64");
EXPORT int nvs_open64(const char *path, int flags, mode_t mode)
{
    return opened(REAL(open64)(path, flags, mode), path);
}

EXPORT int nvs_openat(int dirfd, const char *path, int flags, mode_t mode) __asm__("openat");
EXPORT int nvs_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    return opened(REAL(openat)(dirfd, path, flags, mode), path);
}

EXPORT int nvs_openat64(int dirfd, const char *path, int flags, mode_t mode) __asm__("openat64");
EXPORT int nvs_openat64(int dirfd, const char *path, int flags, mode_t mode)
{
    return opened(REAL(openat64)(dirfd, path, flags, mode), path);
}

EXPORT int __open_2(const char *path, int flags)
{
    return opened(REAL(__open_2)(path, flags), path);
}

EXPORT int __open64_2(const char *path, int flags)
{
    return opened(REAL(__open64_2)(path, flags), path);
}

EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
    return opened(REAL(__openat_2)(dirfd, path, flags), path);
}

EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
    return opened(REAL(__openat64_2)(dirfd, path, flags), path);
}

/* A duplicate of a device's descriptor names the device too. */
static inline int duplicated(int old_fd, unsigned slot, int new_fd)
{
    if (__builtin_expect(slot != 0, 0) && new_fd >= 0) {
        int saved_errno = errno;
        nvs_device_duplicated(nvs_device_slot(old_fd, slot), new_fd);
        errno = saved_errno;
    }
    return new_fd;
}

/* NEW_FD is about to be replaced (dup2, dup3): it leaves the table first. */
static inline void replacing(int old_fd, int new_fd)
{
    if (__builtin_expect(new_fd != old_fd && nvs_fd_slot(new_fd) != 0, 0))
        nvs_device_closing(new_fd);
}

EXPORT int dup(int fd)
{
    unsigned slot = nvs_fd_slot(fd);
    return duplicated(fd, slot, REAL(dup)(fd));
}

EXPORT int dup2(int old_fd, int new_fd)
{
    unsigned slot = nvs_fd_slot(old_fd);
    int result = REAL(dup2)(old_fd, new_fd);
    if (result >= 0 && new_fd != old_fd) {
        int saved_errno = errno;
        replacing(old_fd, new_fd);
        errno = saved_errno;
        duplicated(old_fd, slot, result);
    }
    return result;
}

EXPORT int dup3(int old_fd, int new_fd, int flags)
{
    unsigned slot = nvs_fd_slot(old_fd);
    int result = REAL(dup3)(old_fd, new_fd, flags);
    if (result >= 0) {
        int saved_errno = errno;
        replacing(old_fd, new_fd);
        errno = saved_errno;
        duplicated(old_fd, slot, result);
    }
    return result;
}

static inline int fcntl_done(int fd, int command, int result)
{
    if ((command == F_DUPFD || command == F_DUPFD_CLOEXEC) && result >= 0)
        return duplicated(fd, nvs_fd_slot(fd), result);
    return result;
}

EXPORT int nvs_fcntl(int fd, int command, void *argument) __asm__("fcntl");
EXPORT int nvs_fcntl(int fd, int command, void *argument)
{
    return fcntl_done(fd, command, REAL(fcntl)(fd, command, argument));
}

EXPORT int nvs_fcntl64(int fd, int command, void *argument) __asm__("fcntl64");
EXPORT int nvs_fcntl64(int fd, int command, void *argument)
{
    __typeof__(&fcntl) real = (__typeof__(&fcntl))nvs_resolve(NVS_HOOK_ID(fcntl64));
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    return fcntl_done(fd, command, real(fd, command, argument));
}

SLOW static void closing(int fd)
{
    int saved_errno = errno;
    nvs_device_closing(fd);
    errno = saved_errno;
}

EXPORT int close(int fd)
{
    /* Out of the table first: the kernel may give the number out again as
     * soon as the real close has freed it. */
    if (__builtin_expect(nvs_fd_slot(fd) != 0, 0))
        closing(fd);
    PASS(close, (fd));
}

EXPORT int close_range(unsigned first, unsigned last, int flags)
{
    __typeof__(&close_range) real = REAL(close_range);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    int result = real(first, last, flags);
    if (result == 0 && !(flags & CLOSE_RANGE_CLOEXEC) && nvs_devices_open()) {
        int saved_errno = errno;
        nvs_device_closing_range(first, last);
        errno = saved_errno;
    }
    return result;
}

EXPORT void closefrom(int lowest)
{
    __typeof__(&closefrom) real = REAL(closefrom);
    if (nvs_devices_open() && lowest >= 0) {
        int saved_errno = errno;
        nvs_device_closing_range((unsigned)lowest, ~0u);
        errno = saved_errno;
    }
    if (real)
        real(lowest);
}

EXPORT int fclose(FILE *stream)
{
    if (__builtin_expect(nvs_devices_open(), 0) && stream) {
        int fd = fileno(stream);
        if (nvs_fd_slot(fd))
            closing(fd);
    }
    return REAL(fclose)(stream);
}

/* ---- reads and writes --------------------------------------------------------------- */

enum direction { IN, OUT };

/* The range of a read or write of COUNT bytes on DEVICE. */
static void describe_io(struct nvs_attributes *range, const struct nvs_device *device,
                        enum nvs_hook_id id, size_t count, enum direction direction)
{
    uint32_t category, color;
    if (device->domain == NVS_DOMAIN_V4L2) {
        category = NVS_V4L2_CAPTURE;
        color = NVS_COLOR_V4L2_CAPTURE;
    } else {
        category = direction == IN ? NVS_TTY_READ : NVS_TTY_WRITE;
        color = direction == IN ? NVS_COLOR_TTY_READ : NVS_COLOR_TTY_WRITE;
    }
    *range = (struct nvs_attributes){
        .domain = device->domain, .category = category, .color = color,
        .payload = count, .has_payload = true,
    };
    range->name = nvs_device_name(device, id, (uint32_t)(count > 0xffffffffu ? 0xffffffffu : count),
                                  "%s %s %zuB", nvs_hook_name(id), device->path, count);
}

/* After a read or write of COUNT bytes: the bytes moved when fewer (the trace
 * file), a mark when it failed, the frame when it is the marker. */
static void io_done(const struct nvs_device *device, enum nvs_hook_id id, size_t count,
                    ssize_t result, enum direction direction)
{
    int saved_errno = errno;
    if (result >= 0 && (size_t)result != count)
        nvs_range_set_payload(device->domain, (uint64_t)result);
    if (result < 0 && !nvs_device_ordinary_failure(saved_errno)) {
        char what[NVS_CALL_TEXT_MAX];
        snprintf(what, sizeof what, "%s %s", nvs_hook_name(id), device->path);
        nvs_device_warn(device, what, saved_errno);
    }
    enum nvs_frame_marker marker = direction == IN ? device->in_marker : device->out_marker;
    if (result > 0 && marker != NVS_FRAME_OFF)
        nvs_call_completed(id, marker, -1);
    errno = saved_errno;
}

/* Whether a read or write on DEVICE is traced: cameras, serial ports and HID
 * nodes (a usbfs node's reads are its descriptors). */
static inline bool io_traced(const struct nvs_device *device)
{
    return device->kind == NVS_DEVICE_V4L2 || device->kind == NVS_DEVICE_SERIAL ||
           device->kind == NVS_DEVICE_HID;
}

SLOW static ssize_t device_read(unsigned slot, int fd, void *buffer, size_t count,
                                size_t buffer_size, bool checked)
{
    enum nvs_hook_id id = checked ? NVS_HOOK_ID(__read_chk) : NVS_HOOK_ID(read);
    slot = nvs_device_slot(fd, slot);
    const struct nvs_device *device = &nvs_devices[slot];
    bool traced = slot && io_traced(device) && nvs_call_enter(device->group);
    struct nvs_attributes range;
    if (traced) {
        describe_io(&range, device, NVS_HOOK_ID(read), count, IN);
        nvs_call_open(id, NVS_FRAME_OFF, -1, &range);
    }
    ssize_t result = checked ? REAL(__read_chk)(fd, buffer, count, buffer_size)
                             : REAL(read)(fd, buffer, count);
    if (traced) {
        io_done(device, NVS_HOOK_ID(read), count, result, IN);
        nvs_call_close(device->domain);
    }
    return result;
}

EXPORT ssize_t read(int fd, void *buffer, size_t count)
{
    unsigned slot = nvs_fd_slot(fd);
    if (__builtin_expect(slot != 0, 0))
        return device_read(slot, fd, buffer, count, 0, false);
    PASS(read, (fd, buffer, count));
}

EXPORT ssize_t __read_chk(int fd, void *buffer, size_t count, size_t buffer_size)
{
    unsigned slot = nvs_fd_slot(fd);
    if (__builtin_expect(slot != 0, 0))
        return device_read(slot, fd, buffer, count, buffer_size, true);
    PASS(__read_chk, (fd, buffer, count, buffer_size));
}

SLOW static ssize_t device_write(unsigned slot, int fd, const void *buffer, size_t count)
{
    enum nvs_hook_id id = NVS_HOOK_ID(write);
    slot = nvs_device_slot(fd, slot);
    const struct nvs_device *device = &nvs_devices[slot];
    if (!slot || !io_traced(device) || !nvs_call_enter(device->group))
        return REAL(write)(fd, buffer, count);
    struct nvs_attributes range;
    describe_io(&range, device, id, count, OUT);
    nvs_call_open(id, NVS_FRAME_OFF, -1, &range);
    ssize_t result = REAL(write)(fd, buffer, count);
    io_done(device, id, count, result, OUT);
    nvs_call_close(device->domain);
    return result;
}

EXPORT ssize_t write(int fd, const void *buffer, size_t count)
{
    unsigned slot = nvs_fd_slot(fd);
    if (__builtin_expect(slot != 0, 0))
        return device_write(slot, fd, buffer, count);
    PASS(write, (fd, buffer, count));
}

static size_t vector_bytes(const struct iovec *vector, int count)
{
    size_t total = 0;
    for (int i = 0; vector && i < count; i++)
        total += vector[i].iov_len;
    return total;
}

SLOW static ssize_t device_vector(unsigned slot, int fd, const struct iovec *vector, int count,
                                  enum direction direction)
{
    enum nvs_hook_id id = direction == IN ? NVS_HOOK_ID(readv) : NVS_HOOK_ID(writev);
    slot = nvs_device_slot(fd, slot);
    const struct nvs_device *device = &nvs_devices[slot];
    bool traced = slot && io_traced(device) && nvs_call_enter(device->group);
    size_t bytes = vector_bytes(vector, count);
    struct nvs_attributes range;
    if (traced) {
        describe_io(&range, device, id, bytes, direction);
        nvs_call_open(id, NVS_FRAME_OFF, -1, &range);
    }
    ssize_t result = direction == IN ? REAL(readv)(fd, vector, count)
                                     : REAL(writev)(fd, vector, count);
    if (traced) {
        io_done(device, id, bytes, result, direction);
        nvs_call_close(device->domain);
    }
    return result;
}

EXPORT ssize_t readv(int fd, const struct iovec *vector, int count)
{
    unsigned slot = nvs_fd_slot(fd);
    if (__builtin_expect(slot != 0, 0))
        return device_vector(slot, fd, vector, count, IN);
    PASS(readv, (fd, vector, count));
}

EXPORT ssize_t writev(int fd, const struct iovec *vector, int count)
{
    unsigned slot = nvs_fd_slot(fd);
    if (__builtin_expect(slot != 0, 0))
        return device_vector(slot, fd, vector, count, OUT);
    PASS(writev, (fd, vector, count));
}

/* ---- control -------------------------------------------------------------------------- */

SLOW static int device_ioctl(unsigned slot, int fd, unsigned long request, void *argument)
{
    nvs_ioctl_fn real = (nvs_ioctl_fn)nvs_resolve(NVS_HOOK_ID(ioctl));
    slot = nvs_device_slot(fd, slot);
    struct nvs_device *device = &nvs_devices[slot];
    switch (slot ? device->kind : NVS_DEVICE_NONE) {
    case NVS_DEVICE_V4L2:
        return nvs_v4l2_ioctl(real, device, fd, request, argument);
    case NVS_DEVICE_USBFS:
        return nvs_usbfs_ioctl(real, device, slot, fd, request, argument);
    default:
        return real(fd, request, argument);
    }
}

EXPORT int nvs_ioctl(int fd, unsigned long request, void *argument) __asm__("ioctl");
EXPORT int nvs_ioctl(int fd, unsigned long request, void *argument)
{
    unsigned slot = nvs_fd_slot(fd);
    if (__builtin_expect(slot != 0, 0))
        return device_ioctl(slot, fd, request, argument);
    PASS(ioctl, (fd, request, argument));
}

SLOW static int device_tcdrain(unsigned slot, int fd)
{
    enum nvs_hook_id id = NVS_HOOK_ID(tcdrain);
    slot = nvs_device_slot(fd, slot);
    const struct nvs_device *device = &nvs_devices[slot];
    if (!slot || !io_traced(device) || !nvs_call_enter(device->group))
        return REAL(tcdrain)(fd);
    struct nvs_attributes range = {
        .domain = device->domain, .category = NVS_TTY_DRAIN, .color = NVS_COLOR_DEVICE_WAIT,
        .name = nvs_device_name(device, id, 0, "tcdrain %s", device->path),
    };
    nvs_call_open(id, NVS_FRAME_OFF, -1, &range);
    int result = REAL(tcdrain)(fd);
    nvs_call_close(device->domain);
    return result;
}

EXPORT int tcdrain(int fd)
{
    unsigned slot = nvs_fd_slot(fd);
    if (__builtin_expect(slot != 0, 0))
        return device_tcdrain(slot, fd);
    PASS(tcdrain, (fd));
}

/* ---- waits ---------------------------------------------------------------------------- */

/* The range of a wait (hook ID) for the device in SLOT: named after the first
 * device among the descriptors waited on. False when not traced. */
static bool wait_begins(enum nvs_hook_id id, unsigned slot)
{
    const struct nvs_device *device = &nvs_devices[slot];
    enum nvs_device_kind kind = device->kind == NVS_DEVICE_EPOLL
                              ? (enum nvs_device_kind)atomic_load(&device->format) : device->kind;
    if (!nvs_call_enter(device->group))
        return false;
    uint32_t category = kind == NVS_DEVICE_V4L2 ? NVS_V4L2_WAIT
                      : kind == NVS_DEVICE_USBFS ? NVS_USB_EVENTS : NVS_TTY_WAIT;
    const char *hook = nvs_hook_name(id);
    struct nvs_attributes range = {
        .domain = device->domain, .category = category,
        .color = kind == NVS_DEVICE_USBFS ? NVS_COLOR_USB_EVENTS : NVS_COLOR_DEVICE_WAIT,
        .name = nvs_device_name(device, id, 0, "%s %s",
                                hook[0] == '_' ? (id == NVS_HOOK_ID(__poll_chk) ? "poll" : "ppoll")
                                               : hook, device->path),
    };
    nvs_call_open(id, NVS_FRAME_OFF, -1, &range);
    return true;
}

static inline void wait_ends(unsigned slot)
{
    nvs_call_close(nvs_devices[slot].domain);
}

static unsigned first_device_polled(const struct pollfd *fds, nfds_t count)
{
    for (nfds_t i = 0; fds && i < count; i++) {
        unsigned slot = nvs_device_slot(fds[i].fd, nvs_fd_slot(fds[i].fd));
        if (slot)
            return slot;
    }
    return 0;
}

SLOW static int device_poll(enum nvs_hook_id id, struct pollfd *fds, nfds_t count, int timeout,
                            const struct timespec *timespec, const sigset_t *mask, size_t fds_size)
{
    unsigned slot = first_device_polled(fds, count);
    bool traced = slot && wait_begins(id, slot);
    int result;
    if (id == NVS_HOOK_ID(poll))
        result = REAL(poll)(fds, count, timeout);
    else if (id == NVS_HOOK_ID(__poll_chk))
        result = REAL(__poll_chk)(fds, count, timeout, fds_size);
    else if (id == NVS_HOOK_ID(ppoll))
        result = REAL(ppoll)(fds, count, timespec, mask);
    else
        result = REAL(__ppoll_chk)(fds, count, timespec, mask, fds_size);
    if (traced)
        wait_ends(slot);
    return result;
}

EXPORT int poll(struct pollfd *fds, nfds_t count, int timeout)
{
    if (__builtin_expect(nvs_devices_open(), 0))
        return device_poll(NVS_HOOK_ID(poll), fds, count, timeout, NULL, NULL, 0);
    PASS(poll, (fds, count, timeout));
}

EXPORT int __poll_chk(struct pollfd *fds, nfds_t count, int timeout, size_t fds_size)
{
    if (__builtin_expect(nvs_devices_open(), 0))
        return device_poll(NVS_HOOK_ID(__poll_chk), fds, count, timeout, NULL, NULL, fds_size);
    return REAL(__poll_chk)(fds, count, timeout, fds_size);
}

EXPORT int ppoll(struct pollfd *fds, nfds_t count, const struct timespec *timeout,
                 const sigset_t *mask)
{
    if (__builtin_expect(nvs_devices_open(), 0))
        return device_poll(NVS_HOOK_ID(ppoll), fds, count, 0, timeout, mask, 0);
    return REAL(ppoll)(fds, count, timeout, mask);
}

EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t count, const struct timespec *timeout,
                       const sigset_t *mask, size_t fds_size)
{
    if (__builtin_expect(nvs_devices_open(), 0))
        return device_poll(NVS_HOOK_ID(__ppoll_chk), fds, count, 0, timeout, mask, fds_size);
    return REAL(__ppoll_chk)(fds, count, timeout, mask, fds_size);
}

static unsigned first_device_selected(int count, const fd_set *read_set, const fd_set *write_set)
{
    for (int fd = 0; fd < count && fd < FD_SETSIZE; fd++) {
        if ((read_set && FD_ISSET(fd, read_set)) || (write_set && FD_ISSET(fd, write_set))) {
            unsigned slot = nvs_device_slot(fd, nvs_fd_slot(fd));
            if (slot)
                return slot;
        }
    }
    return 0;
}

SLOW static int device_select(int count, fd_set *read_set, fd_set *write_set, fd_set *except_set,
                              struct timeval *timeout)
{
    unsigned slot = first_device_selected(count, read_set, write_set);
    bool traced = slot && wait_begins(NVS_HOOK_ID(select), slot);
    int result = REAL(select)(count, read_set, write_set, except_set, timeout);
    if (traced)
        wait_ends(slot);
    return result;
}

EXPORT int select(int count, fd_set *read_set, fd_set *write_set, fd_set *except_set,
                  struct timeval *timeout)
{
    if (__builtin_expect(nvs_devices_open(), 0))
        return device_select(count, read_set, write_set, except_set, timeout);
    PASS(select, (count, read_set, write_set, except_set, timeout));
}

SLOW static int device_pselect(int count, fd_set *read_set, fd_set *write_set, fd_set *except_set,
                               const struct timespec *timeout, const sigset_t *mask)
{
    unsigned slot = first_device_selected(count, read_set, write_set);
    bool traced = slot && wait_begins(NVS_HOOK_ID(pselect), slot);
    int result = REAL(pselect)(count, read_set, write_set, except_set, timeout, mask);
    if (traced)
        wait_ends(slot);
    return result;
}

EXPORT int pselect(int count, fd_set *read_set, fd_set *write_set, fd_set *except_set,
                   const struct timespec *timeout, const sigset_t *mask)
{
    if (__builtin_expect(nvs_devices_open(), 0))
        return device_pselect(count, read_set, write_set, except_set, timeout, mask);
    return REAL(pselect)(count, read_set, write_set, except_set, timeout, mask);
}

SLOW static void watching(int epfd, int fd, unsigned slot)
{
    int saved_errno = errno;
    slot = nvs_device_slot(fd, slot);
    if (slot && nvs_devices[slot].kind != NVS_DEVICE_EPOLL)
        nvs_device_watched(epfd, slot);
    errno = saved_errno;
}

EXPORT int epoll_ctl(int epfd, int operation, int fd, struct epoll_event *event)
{
    unsigned slot = nvs_fd_slot(fd);
    int result = REAL(epoll_ctl)(epfd, operation, fd, event);
    if (__builtin_expect(slot != 0, 0) && result == 0 && operation == EPOLL_CTL_ADD)
        watching(epfd, fd, slot);
    return result;
}

SLOW static int device_epoll_wait(unsigned slot, int epfd, struct epoll_event *events, int count,
                                  int timeout, const sigset_t *mask, bool with_mask)
{
    slot = nvs_device_slot(epfd, slot);
    bool traced = slot && wait_begins(with_mask ? NVS_HOOK_ID(epoll_pwait) : NVS_HOOK_ID(epoll_wait),
                                      slot);
    int result = with_mask ? REAL(epoll_pwait)(epfd, events, count, timeout, mask)
                           : REAL(epoll_wait)(epfd, events, count, timeout);
    if (traced)
        wait_ends(slot);
    return result;
}

EXPORT int epoll_wait(int epfd, struct epoll_event *events, int count, int timeout)
{
    unsigned slot = nvs_fd_slot(epfd);
    if (__builtin_expect(slot != 0, 0))
        return device_epoll_wait(slot, epfd, events, count, timeout, NULL, false);
    PASS(epoll_wait, (epfd, events, count, timeout));
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int count, int timeout,
                       const sigset_t *mask)
{
    unsigned slot = nvs_fd_slot(epfd);
    if (__builtin_expect(slot != 0, 0))
        return device_epoll_wait(slot, epfd, events, count, timeout, mask, true);
    return REAL(epoll_pwait)(epfd, events, count, timeout, mask);
}
