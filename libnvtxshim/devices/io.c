/* libc calls on device files: the I/O, ioctls and waits on the descriptors
 * the table holds (table.c; descriptors.c keeps it), each in its kind's
 * domain (struct nvs_device_kind: v4l2, serial, hid, usb, i2c; schema.h),
 * an ioctl handed to its kind.
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
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/uio.h>
#include <termios.h>
#include <unistd.h>

#include "../emit.h"
#include "../hook.h"
#include "device_calls.h"
#include "table.h"

/* glibc declares these only under _FORTIFY_SOURCE. */
ssize_t __read_chk(int fd, void *buffer, size_t count, size_t buffer_size);
int __poll_chk(struct pollfd *fds, nfds_t count, int timeout, size_t fds_size);
int __ppoll_chk(struct pollfd *fds, nfds_t count, const struct timespec *timeout,
                const sigset_t *mask, size_t fds_size);

RESOLVING(read, ssize_t, (int fd, void *buffer, size_t count), (fd, buffer, count))
RESOLVING(__read_chk, ssize_t, (int fd, void *buffer, size_t count, size_t size),
          (fd, buffer, count, size))
RESOLVING(write, ssize_t, (int fd, const void *buffer, size_t count), (fd, buffer, count))
RESOLVING(readv, ssize_t, (int fd, const struct iovec *vector, int count), (fd, vector, count))
RESOLVING(writev, ssize_t, (int fd, const struct iovec *vector, int count), (fd, vector, count))
RESOLVING(tcdrain, int, (int fd), (fd))
RESOLVING(poll, int, (struct pollfd * fds, nfds_t count, int timeout), (fds, count, timeout))
RESOLVING(select, int,
          (int count, fd_set *read_set, fd_set *write_set, fd_set *except_set,
           struct timeval *timeout),
          (count, read_set, write_set, except_set, timeout))
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

/* ---- reads and writes --------------------------------------------------------------- */

enum direction { IN, OUT };

/* The range of a read or write of COUNT bytes on DEVICE; of a vector read or
 * write (readv, writev) when VECTOR: its size lies in the program's memory,
 * not read before the kernel has accepted it, so the name has none and the
 * payload is set when the call returns. */
static void describe_io(struct nvs_attributes *range, const struct nvs_device *device,
                        enum nvs_hook_id id, size_t count, enum direction direction, bool vector)
{
    const struct nvs_device_kind *kind = device->kind;
    uint32_t category = direction == IN ? kind->read_category : kind->write_category;
    *range = NVS_ATTRIBUTES(device->domain, category, nvs_category_color(device->domain, category));
    if (!vector)
        nvs_attributes_payload(range, count);
    if (kind->io_name)
        nvs_attributes_name(range, kind->io_name(device, id, count, vector));
    else if (vector)
        nvs_attributes_name(
            range, nvs_device_name(device, id, 0, "%s %s", nvs_hook_name(id), device->path));
    else
        nvs_attributes_name(range,
                            nvs_device_name(device, id,
                                            (uint32_t)(count > 0xffffffffu ? 0xffffffffu : count),
                                            "%s %s %zuB", nvs_hook_name(id), device->path, count));
}

/* Whether a read or write on DEVICE is traced: its kind has a category for
 * it (a usbfs node's reads are its descriptors: none). */
static inline bool io_traced(const struct nvs_device *device, enum direction direction)
{
    return !device->watcher &&
        (direction == IN ? device->kind->read_category : device->kind->write_category) != 0;
}

/* Whether a failed call on a non-blocking device only found nothing to read
 * (or no room to write): such a call is not drawn. */
static inline bool found_nothing(int error)
{
    return error == EAGAIN || error == EWOULDBLOCK;
}

/* A read or write on a device (hook ID; NAME_ID: the name's, read for
 * __read_chk): one rule for every one. Its payload is the bytes it moved, 0
 * when it failed. On a non-blocking device a call returns at once: one that
 * found nothing (EAGAIN, or 0 bytes: a serial port in raw mode with VMIN 0
 * reads nothing that way) is not drawn, any other is drawn when it returned,
 * from its start. On a blocking one the range opens before the call, which
 * may wait, and stays: one that waited for nothing (VTIME ran out with VMIN
 * 0) is drawn, payload 0, no mark. A failure other than a signal's or EAGAIN
 * gets a red mark; a call that moved bytes is the device's frame marker, in or
 * out. */
struct io_call {
    enum nvs_hook_id id, name_id;
    enum direction direction;
    int fd;
    void *buffer;
    size_t count, buffer_size; /* count: SIZE_MAX for a vector */
    const struct iovec *vector;
    int vector_count;
};

static ssize_t io_real(const struct io_call *call)
{
    switch (call->id) {
    case NVS_HOOK_ID(__read_chk):
        return REAL(__read_chk)(call->fd, call->buffer, call->count, call->buffer_size);
    case NVS_HOOK_ID(write): return REAL(write)(call->fd, call->buffer, call->count);
    case NVS_HOOK_ID(readv): return REAL(readv)(call->fd, call->vector, call->vector_count);
    case NVS_HOOK_ID(writev): return REAL(writev)(call->fd, call->vector, call->vector_count);
    default: return REAL(read)(call->fd, call->buffer, call->count);
    }
}

SLOW static ssize_t device_io(unsigned slot, const struct io_call *call)
{
    slot = nvs_device_slot(call->fd, slot);
    const struct nvs_device *device = &nvs_devices[slot];
    if (!slot || !io_traced(device, call->direction) || !nvs_call_enter(device->group))
        return io_real(call);
    bool vector = call->count == SIZE_MAX;
    struct nvs_attributes range;
    describe_io(&range, device, call->name_id, vector ? 0 : call->count, call->direction, vector);
    bool nonblocking = atomic_load_explicit(&device->nonblocking, memory_order_relaxed);
    uint64_t began = 0;
    if (nonblocking)
        began = nvs_now_ns();
    else
        nvs_call_open(call->id, NVS_FRAME_OFF, -1, &range);
    ssize_t result = io_real(call);
    int saved_errno = errno;
    uint64_t moved = result > 0 ? (uint64_t)result : 0;
    /* The frame the call is the marker of begins inside its range, as it does
     * in a range that opened before the call. */
    enum nvs_frame_marker marker = call->direction == IN ? device->in_marker : device->out_marker;
    if (result > 0 && marker != NVS_FRAME_OFF)
        nvs_call_completed(call->id, marker, -1);
    if (!nonblocking) {
        nvs_range_set_payload(device->domain, moved);
    } else if (result > 0 || (result < 0 && !found_nothing(saved_errno))) {
        nvs_attributes_payload(&range, moved);
        nvs_call_drawn(call->id, NVS_FRAME_OFF, -1, &range, began);
    }
    if (result < 0 && !nvs_device_ordinary_failure(saved_errno)) {
        char what[NVS_CALL_TEXT_MAX];
        snprintf(what, sizeof what, "%s %s", nvs_hook_name(call->name_id), device->path);
        nvs_device_warn(device, what, saved_errno);
    }
    errno = saved_errno;
    if (nonblocking)
        nvs_call_leave();
    else
        nvs_call_close(device->domain);
    return result;
}

NVS_EXPORT ssize_t read(int fd, void *buffer, size_t count)
{
    unsigned slot = nvs_fd_slot(fd);
    if (__builtin_expect(slot != 0, 0)) {
        struct io_call call = {
            NVS_HOOK_ID(read), NVS_HOOK_ID(read), IN, fd, buffer, count, 0, NULL, 0
        };
        return device_io(slot, &call);
    }
    PASS(read, (fd, buffer, count));
}

NVS_EXPORT ssize_t __read_chk(int fd, void *buffer, size_t count, size_t buffer_size)
{
    unsigned slot = nvs_fd_slot(fd);
    if (__builtin_expect(slot != 0, 0)) {
        struct io_call call = {
            NVS_HOOK_ID(__read_chk), NVS_HOOK_ID(read), IN, fd, buffer, count, buffer_size, NULL, 0
        };
        return device_io(slot, &call);
    }
    PASS(__read_chk, (fd, buffer, count, buffer_size));
}

NVS_EXPORT ssize_t write(int fd, const void *buffer, size_t count)
{
    unsigned slot = nvs_fd_slot(fd);
    if (__builtin_expect(slot != 0, 0)) {
        struct io_call call = {
            NVS_HOOK_ID(write), NVS_HOOK_ID(write), OUT, fd, (void *)buffer, count, 0, NULL, 0
        };
        return device_io(slot, &call);
    }
    PASS(write, (fd, buffer, count));
}

NVS_EXPORT ssize_t readv(int fd, const struct iovec *vector, int count)
{
    unsigned slot = nvs_fd_slot(fd);
    if (__builtin_expect(slot != 0, 0)) {
        struct io_call call = {
            NVS_HOOK_ID(readv), NVS_HOOK_ID(readv), IN, fd, NULL, SIZE_MAX, 0, vector, count
        };
        return device_io(slot, &call);
    }
    PASS(readv, (fd, vector, count));
}

NVS_EXPORT ssize_t writev(int fd, const struct iovec *vector, int count)
{
    unsigned slot = nvs_fd_slot(fd);
    if (__builtin_expect(slot != 0, 0)) {
        struct io_call call = {
            NVS_HOOK_ID(writev), NVS_HOOK_ID(writev), OUT, fd, NULL, SIZE_MAX, 0, vector, count
        };
        return device_io(slot, &call);
    }
    PASS(writev, (fd, vector, count));
}

/* ---- control -------------------------------------------------------------------------- */

SLOW static int device_ioctl(unsigned slot, int fd, unsigned long request, void *argument)
{
    nvs_ioctl_fn real = (nvs_ioctl_fn)nvs_resolve(NVS_HOOK_ID(ioctl));
    slot = nvs_device_slot(fd, slot);
    struct nvs_device *device = &nvs_devices[slot];
    if (request == FIONBIO && slot) {
        /* Python's os.set_blocking: O_NONBLOCK by ioctl. Its int is read once the
         * kernel accepted it. */
        int result = real(fd, request, argument);
        int on;
        if (result == 0) {
            memcpy(&on, argument, sizeof on); /* the program's int may sit anywhere */
            nvs_device_set_nonblocking(slot, on != 0);
        }
        return result;
    }
    if (slot && !device->watcher && device->kind->ioctl)
        return device->kind->ioctl(real, device, slot, fd, request, argument);
    return real(fd, request, argument);
}

NVS_EXPORT int nvs_ioctl(int fd, unsigned long request, void *argument) __asm__("ioctl");
NVS_EXPORT int nvs_ioctl(int fd, unsigned long request, void *argument)
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
    if (!slot || device->watcher || !device->kind->drain_category || !nvs_call_enter(device->group))
        return REAL(tcdrain)(fd);
    struct nvs_attributes range = NVS_ATTRIBUTES(
        device->domain, device->kind->drain_category,
        nvs_category_color(device->domain, device->kind->drain_category));
    nvs_attributes_name(&range, nvs_device_name(device, id, 0, "tcdrain %s", device->path));
    nvs_call_open(id, NVS_FRAME_OFF, -1, &range);
    int result = REAL(tcdrain)(fd);
    nvs_call_close(device->domain);
    return result;
}

NVS_EXPORT int tcdrain(int fd)
{
    unsigned slot = nvs_fd_slot(fd);
    if (__builtin_expect(slot != 0, 0))
        return device_tcdrain(slot, fd);
    PASS(tcdrain, (fd));
}

/* ---- waits ---------------------------------------------------------------------------- */

/* The range of a wait (hook ID) for the device in SLOT, named after it. */
static void describe_wait(struct nvs_attributes *range, enum nvs_hook_id id, unsigned slot)
{
    const struct nvs_device *device = &nvs_devices[slot];
    /* An epoll instance's kind is the device's it watches. */
    uint32_t category = device->kind->wait_category;
    const char *hook = nvs_hook_name(id);
    *range = NVS_ATTRIBUTES(device->domain, category, nvs_category_color(device->domain, category));
    nvs_attributes_name(
        range,
        nvs_device_name(device, id, 0, "%s %s",
                        hook[0] == '_' ? (id == NVS_HOOK_ID(__poll_chk) ? "poll" : "ppoll") : hook,
                        device->path));
}

/* A wait on an epoll instance that watches a device: its range opens before
 * the call (nothing of the program's memory names it). False when not traced. */
static bool wait_begins(enum nvs_hook_id id, unsigned slot)
{
    if (!nvs_call_enter(nvs_devices[slot].group))
        return false;
    struct nvs_attributes range;
    describe_wait(&range, id, slot);
    nvs_call_open(id, NVS_FRAME_OFF, -1, &range);
    return true;
}

static inline void wait_ends(unsigned slot)
{
    nvs_call_close(nvs_devices[slot].domain);
}

/* A poll or select (hook ID) that returned, drawn from BEGAN when the
 * descriptors it waited on, as the kernel returned them, include a device:
 * named after the first. Only what the call returned is read: a wait's sets
 * and arrays lie in the program's memory, and a bad pointer or count must be
 * the kernel's EFAULT or EINVAL, not a fault of ours. errno is kept. */
static void wait_drawn(enum nvs_hook_id id, unsigned slot, uint64_t began)
{
    if (!nvs_call_enter(nvs_devices[slot].group))
        return;
    int saved_errno = errno;
    struct nvs_attributes range;
    describe_wait(&range, id, slot);
    nvs_call_drawn(id, NVS_FRAME_OFF, -1, &range, began);
    errno = saved_errno;
    nvs_call_leave();
}

/* Whether a wait that returned RESULT has the program's sets or array as the
 * kernel accepted them: it returned, or a signal cut it short (the kernel had
 * read them to wait). */
static inline bool wait_read(int result)
{
    return result >= 0 || errno == EINTR;
}

static unsigned first_device_polled(const struct pollfd *fds, nfds_t count)
{
    for (nfds_t i = 0; i < count; i++) {
        unsigned slot = nvs_device_slot(fds[i].fd, nvs_fd_slot(fds[i].fd));
        if (slot)
            return slot;
    }
    return 0;
}

SLOW static int device_poll(enum nvs_hook_id id, struct pollfd *fds, nfds_t count, int timeout,
                            const struct timespec *timespec, const sigset_t *mask, size_t fds_size)
{
    uint64_t began = nvs_now_ns();
    int result;
    if (id == NVS_HOOK_ID(poll))
        result = REAL(poll)(fds, count, timeout);
    else if (id == NVS_HOOK_ID(__poll_chk))
        result = REAL(__poll_chk)(fds, count, timeout, fds_size);
    else if (id == NVS_HOOK_ID(ppoll))
        result = REAL(ppoll)(fds, count, timespec, mask);
    else
        result = REAL(__ppoll_chk)(fds, count, timespec, mask, fds_size);
    if (wait_read(result)) {
        unsigned slot = first_device_polled(fds, count);
        if (slot)
            wait_drawn(id, slot, began);
    }
    return result;
}

NVS_EXPORT int poll(struct pollfd *fds, nfds_t count, int timeout)
{
    if (__builtin_expect(nvs_devices_open(), 0))
        return device_poll(NVS_HOOK_ID(poll), fds, count, timeout, NULL, NULL, 0);
    PASS(poll, (fds, count, timeout));
}

NVS_EXPORT int __poll_chk(struct pollfd *fds, nfds_t count, int timeout, size_t fds_size)
{
    if (__builtin_expect(nvs_devices_open(), 0))
        return device_poll(NVS_HOOK_ID(__poll_chk), fds, count, timeout, NULL, NULL, fds_size);
    return REAL(__poll_chk)(fds, count, timeout, fds_size);
}

NVS_EXPORT int ppoll(struct pollfd *fds, nfds_t count, const struct timespec *timeout,
                     const sigset_t *mask)
{
    if (__builtin_expect(nvs_devices_open(), 0))
        return device_poll(NVS_HOOK_ID(ppoll), fds, count, 0, timeout, mask, 0);
    return REAL(ppoll)(fds, count, timeout, mask);
}

NVS_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t count, const struct timespec *timeout,
                           const sigset_t *mask, size_t fds_size)
{
    if (__builtin_expect(nvs_devices_open(), 0))
        return device_poll(NVS_HOOK_ID(__ppoll_chk), fds, count, 0, timeout, mask, fds_size);
    return REAL(__ppoll_chk)(fds, count, timeout, mask, fds_size);
}

/* The first device among the descriptors select returned ready (or, cut short
 * by a signal, was given: Linux leaves the sets as they were then). A select
 * that timed out returns empty sets: it is not drawn. */
static unsigned first_device_selected(int result, int count, const fd_set *read_set,
                                      const fd_set *write_set)
{
    if (result == 0)
        return 0;
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
    uint64_t began = nvs_now_ns();
    int result = REAL(select)(count, read_set, write_set, except_set, timeout);
    if (wait_read(result)) {
        unsigned slot = first_device_selected(result, count, read_set, write_set);
        if (slot)
            wait_drawn(NVS_HOOK_ID(select), slot, began);
    }
    return result;
}

NVS_EXPORT int select(int count, fd_set *read_set, fd_set *write_set, fd_set *except_set,
                      struct timeval *timeout)
{
    if (__builtin_expect(nvs_devices_open(), 0))
        return device_select(count, read_set, write_set, except_set, timeout);
    PASS(select, (count, read_set, write_set, except_set, timeout));
}

SLOW static int device_pselect(int count, fd_set *read_set, fd_set *write_set, fd_set *except_set,
                               const struct timespec *timeout, const sigset_t *mask)
{
    uint64_t began = nvs_now_ns();
    int result = REAL(pselect)(count, read_set, write_set, except_set, timeout, mask);
    if (wait_read(result)) {
        unsigned slot = first_device_selected(result, count, read_set, write_set);
        if (slot)
            wait_drawn(NVS_HOOK_ID(pselect), slot, began);
    }
    return result;
}

NVS_EXPORT int pselect(int count, fd_set *read_set, fd_set *write_set, fd_set *except_set,
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
    if (slot && !nvs_devices[slot].watcher)
        nvs_device_watched(epfd, slot);
    errno = saved_errno;
}

NVS_EXPORT int epoll_ctl(int epfd, int operation, int fd, struct epoll_event *event)
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
    bool traced = slot &&
        wait_begins(with_mask ? NVS_HOOK_ID(epoll_pwait) : NVS_HOOK_ID(epoll_wait), slot);
    int result = with_mask ? REAL(epoll_pwait)(epfd, events, count, timeout, mask)
                           : REAL(epoll_wait)(epfd, events, count, timeout);
    if (traced)
        wait_ends(slot);
    return result;
}

NVS_EXPORT int epoll_wait(int epfd, struct epoll_event *events, int count, int timeout)
{
    unsigned slot = nvs_fd_slot(epfd);
    if (__builtin_expect(slot != 0, 0))
        return device_epoll_wait(slot, epfd, events, count, timeout, NULL, false);
    PASS(epoll_wait, (epfd, events, count, timeout));
}

NVS_EXPORT int epoll_pwait(int epfd, struct epoll_event *events, int count, int timeout,
                           const sigset_t *mask)
{
    unsigned slot = nvs_fd_slot(epfd);
    if (__builtin_expect(slot != 0, 0))
        return device_epoll_wait(slot, epfd, events, count, timeout, mask, true);
    return REAL(epoll_pwait)(epfd, events, count, timeout, mask);
}
