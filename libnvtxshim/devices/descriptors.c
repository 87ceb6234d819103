/* The descriptor table's bookkeeping (table.c): every libc call that gives
 * the program a descriptor or takes one away. An open of a rig's device file
 * enters it, a duplicate names the same device, a close takes it out, and any
 * other new descriptor clears what the table held for its number, so that a
 * device closed behind the library's back is never taken for the file that
 * now has its number. The rest of the time each wrapper is the real call and
 * a byte (or a counter) looked at. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "table.h"
#include "device_calls.h"

/* Newer than the oldest glibc the library is built against (2.28, the wheel's):
 * declared here for the wrappers' sake. Where glibc lacks one, the program cannot
 * call it and REAL finds nothing. */
int close_range(unsigned first, unsigned last, int flags);
int pidfd_open(pid_t pid, unsigned int flags);

/* glibc declares these only under _FORTIFY_SOURCE. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

RESOLVING(close, int, (int fd), (fd))

/* ---- the table's bookkeeping ---------------------------------------------------------- */

/* FD was handed out by the kernel just now, so whatever the table held for
 * that number was closed without the library seeing it (a raw close system
 * call; libc's own close inside freopen or fcloseall): it goes. */
SLOW static void stale(int fd)
{
    int saved_errno = errno;
    nvs_device_closing(fd);
    errno = saved_errno;
}

static inline int handed_out(int fd)
{
    if (__builtin_expect(nvs_fd_slot(fd) != 0, 0) && fd >= 0)
        stale(fd);
    return fd;
}

static inline int opened(int fd, const char *path, int flags)
{
    handed_out(fd);
    if (fd >= 0 && nvs_device_candidate(path))
        nvs_device_opened(fd, path, flags);
    return fd;
}

NVS_EXPORT int nvs_open(const char *path, int flags, mode_t mode) __asm__("open");
NVS_EXPORT int nvs_open(const char *path, int flags, mode_t mode)
{
    return opened(REAL(open)(path, flags, mode), path, flags);
}

NVS_EXPORT int nvs_open64(const char *path, int flags, mode_t mode) __asm__("open64");
NVS_EXPORT int nvs_open64(const char *path, int flags, mode_t mode)
{
    return opened(REAL(open64)(path, flags, mode), path, flags);
}

NVS_EXPORT int nvs_openat(int dirfd, const char *path, int flags, mode_t mode) __asm__("openat");
NVS_EXPORT int nvs_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    return opened(REAL(openat)(dirfd, path, flags, mode), path, flags);
}

NVS_EXPORT int nvs_openat64(int dirfd, const char *path, int flags,
                            mode_t mode) __asm__("openat64");
NVS_EXPORT int nvs_openat64(int dirfd, const char *path, int flags, mode_t mode)
{
    return opened(REAL(openat64)(dirfd, path, flags, mode), path, flags);
}

NVS_EXPORT int __open_2(const char *path, int flags)
{
    return opened(REAL(__open_2)(path, flags), path, flags);
}

NVS_EXPORT int __open64_2(const char *path, int flags)
{
    return opened(REAL(__open64_2)(path, flags), path, flags);
}

NVS_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
    return opened(REAL(__openat_2)(dirfd, path, flags), path, flags);
}

NVS_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
    return opened(REAL(__openat64_2)(dirfd, path, flags), path, flags);
}

/* A duplicate of a device's descriptor names the device too. */
static inline int duplicated(int old_fd, unsigned slot, int new_fd)
{
    if (__builtin_expect(slot != 0, 0) && new_fd >= 0) {
        int saved_errno = errno;
        nvs_device_duplicated(nvs_device_slot(old_fd, slot), new_fd);
        errno = saved_errno;
        return new_fd;
    }
    return handed_out(new_fd);
}

/* NEW_FD is about to be replaced (dup2, dup3): it leaves the table first. */
static inline void replacing(int old_fd, int new_fd)
{
    if (__builtin_expect(new_fd != old_fd && nvs_fd_slot(new_fd) != 0, 0))
        nvs_device_closing(new_fd);
}

NVS_EXPORT int dup(int fd)
{
    unsigned slot = nvs_fd_slot(fd);
    return duplicated(fd, slot, REAL(dup)(fd));
}

NVS_EXPORT int dup2(int old_fd, int new_fd)
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

NVS_EXPORT int dup3(int old_fd, int new_fd, int flags)
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

static inline int fcntl_done(int fd, int command, void *argument, int result)
{
    if ((command == F_DUPFD || command == F_DUPFD_CLOEXEC) && result >= 0)
        return duplicated(fd, nvs_fd_slot(fd), result);
    if (__builtin_expect(command == F_SETFL && result == 0 && nvs_fd_slot(fd) != 0, 0))
        nvs_device_set_nonblocking(nvs_device_slot(fd, nvs_fd_slot(fd)),
                                   ((long)argument & O_NONBLOCK) != 0);
    return result;
}

NVS_EXPORT int nvs_fcntl(int fd, int command, void *argument) __asm__("fcntl");
NVS_EXPORT int nvs_fcntl(int fd, int command, void *argument)
{
    return fcntl_done(fd, command, argument, REAL(fcntl)(fd, command, argument));
}

NVS_EXPORT int nvs_fcntl64(int fd, int command, void *argument) __asm__("fcntl64");
NVS_EXPORT int nvs_fcntl64(int fd, int command, void *argument)
{
    __typeof__(&fcntl) real = (__typeof__(&fcntl))nvs_resolve(NVS_HOOK_ID(fcntl64));
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    return fcntl_done(fd, command, argument, real(fd, command, argument));
}

SLOW static void closing(int fd)
{
    int saved_errno = errno;
    nvs_device_closing(fd);
    errno = saved_errno;
}

NVS_EXPORT int close(int fd)
{
    /* Out of the table first: the kernel may give the number out again as
     * soon as the real close has freed it. */
    if (__builtin_expect(nvs_fd_slot(fd) != 0, 0))
        closing(fd);
    PASS(close, (fd));
}

NVS_EXPORT int close_range(unsigned first, unsigned last, int flags)
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

NVS_EXPORT void closefrom(int lowest)
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

NVS_EXPORT int fclose(FILE *stream)
{
    /* fclose(NULL) crashes in glibc's fclose, as it would without us. The header
     * says STREAM is never null, so the compiler may drop the test: hide it. */
    FILE *given = stream;
    __asm__("" : "+r"(given));
    if (__builtin_expect(nvs_devices_open(), 0) && given) {
        int fd = fileno(stream);
        if (nvs_fd_slot(fd))
            closing(fd);
    }
    return REAL(fclose)(stream);
}

/* ---- every other call that hands out a descriptor --------------------------------------- */

/* A call that returns a new descriptor (or -1). */
#define NEW_DESCRIPTOR(name, parameters, arguments)                                                \
    NVS_EXPORT int name parameters                                                                 \
    {                                                                                              \
        int given = REAL(name) arguments;                                                          \
        if (__builtin_expect(nvs_devices_open(), 0))                                               \
            handed_out(given);                                                                     \
        return given;                                                                              \
    }

/* One that returns a stream (or a directory) over one. */
#define NEW_STREAM(type, name, descriptor_of, parameters, arguments)                               \
    NVS_EXPORT type *name parameters                                                               \
    {                                                                                              \
        type *stream = REAL(name) arguments;                                                       \
        if (__builtin_expect(nvs_devices_open(), 0) && stream)                                     \
            handed_out(descriptor_of(stream));                                                     \
        return stream;                                                                             \
    }

/* One that writes two into ITS FDS (pipe, socketpair): read after the call, when
 * the kernel has written them. */
#define NEW_PAIR(name, parameters, arguments)                                                      \
    NVS_EXPORT int name parameters                                                                 \
    {                                                                                              \
        int result = REAL(name) arguments;                                                         \
        if (__builtin_expect(nvs_devices_open(), 0) && result == 0) {                              \
            handed_out(fds[0]);                                                                    \
            handed_out(fds[1]);                                                                    \
        }                                                                                          \
        return result;                                                                             \
    }

NEW_DESCRIPTOR(creat, (const char *path, mode_t mode), (path, mode))
NEW_DESCRIPTOR(creat64, (const char *path, mode_t mode), (path, mode))
NEW_DESCRIPTOR(mkstemp, (char *template), (template))
NEW_DESCRIPTOR(mkstemp64, (char *template), (template))
NEW_DESCRIPTOR(mkostemp, (char *template, int flags), (template, flags))
NEW_DESCRIPTOR(mkostemp64, (char *template, int flags), (template, flags))
NEW_DESCRIPTOR(mkstemps, (char *template, int suffix), (template, suffix))
NEW_DESCRIPTOR(mkstemps64, (char *template, int suffix), (template, suffix))
NEW_DESCRIPTOR(mkostemps, (char *template, int suffix, int flags), (template, suffix, flags))
NEW_DESCRIPTOR(mkostemps64, (char *template, int suffix, int flags), (template, suffix, flags))
NEW_DESCRIPTOR(socket, (int domain, int type, int protocol), (domain, type, protocol))
NEW_DESCRIPTOR(accept, (int fd, __SOCKADDR_ARG address, socklen_t *restrict length),
               (fd, address, length))
NEW_DESCRIPTOR(accept4, (int fd, __SOCKADDR_ARG address, socklen_t *restrict length, int flags),
               (fd, address, length, flags))
NEW_DESCRIPTOR(eventfd, (unsigned int count, int flags), (count, flags))
NEW_DESCRIPTOR(signalfd, (int fd, const sigset_t *mask, int flags), (fd, mask, flags))
NEW_DESCRIPTOR(timerfd_create, (clockid_t clock, int flags), (clock, flags))
NEW_DESCRIPTOR(epoll_create, (int size), (size))
NEW_DESCRIPTOR(epoll_create1, (int flags), (flags))
NEW_DESCRIPTOR(inotify_init, (void), ())
NEW_DESCRIPTOR(inotify_init1, (int flags), (flags))
NEW_DESCRIPTOR(fanotify_init, (unsigned int flags, unsigned int event_flags), (flags, event_flags))
NEW_DESCRIPTOR(memfd_create, (const char *name, unsigned int flags), (name, flags))
NEW_DESCRIPTOR(pidfd_open, (pid_t pid, unsigned int flags), (pid, flags))
NEW_DESCRIPTOR(posix_openpt, (int flags), (flags))
NEW_DESCRIPTOR(getpt, (void), ())
NEW_DESCRIPTOR(open_by_handle_at, (int mount_fd, struct file_handle *handle, int flags),
               (mount_fd, handle, flags))
NEW_STREAM(FILE, fopen, fileno, (const char *path, const char *mode), (path, mode))
NEW_STREAM(FILE, fopen64, fileno, (const char *path, const char *mode), (path, mode))
NEW_STREAM(FILE, tmpfile, fileno, (void), ())
NEW_STREAM(FILE, tmpfile64, fileno, (void), ())
NEW_STREAM(DIR, opendir, dirfd, (const char *path), (path))
NEW_PAIR(pipe, (int fds[2]), (fds))
NEW_PAIR(pipe2, (int fds[2], int flags), (fds, flags))
NEW_PAIR(socketpair, (int domain, int type, int protocol, int fds[2]),
         (domain, type, protocol, fds))

NVS_EXPORT int openpty(int *master, int *slave, char *name, const struct termios *settings,
                       const struct winsize *size)
{
    static _Atomic(void *) in_libutil;
    __typeof__(&openpty) real = REAL(openpty);
    if (!real)
        real = (__typeof__(&openpty))nvs_find_function_once(&in_libutil, "libutil.so.1", "openpty");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    int result = real(master, slave, name, settings, size);
    if (__builtin_expect(nvs_devices_open(), 0) && result == 0) {
        handed_out(*master);
        handed_out(*slave);
    }
    return result;
}

/* freopen closes the stream's descriptor itself (unless PATH is NULL: the same
 * descriptor, another mode), then opens PATH, usually at the same number. */
static inline void reopening(const char *path, FILE *stream)
{
    if (__builtin_expect(nvs_devices_open(), 0) && path && stream) {
        int fd = fileno(stream);
        if (nvs_fd_slot(fd))
            stale(fd);
    }
}

#define REOPEN(name)                                                                               \
    NVS_EXPORT FILE *name(const char *path, const char *mode, FILE *stream)                        \
    {                                                                                              \
        reopening(path, stream);                                                                   \
        FILE *result = REAL(name)(path, mode, stream);                                             \
        if (__builtin_expect(nvs_devices_open(), 0) && result)                                     \
            handed_out(fileno(result));                                                            \
        return result;                                                                             \
    }

REOPEN(freopen)
REOPEN(freopen64)

/* fcloseall closes every stream's descriptor inside libc: a device opened
 * with fopen leaves the table with them. Which they were is not known
 * afterwards, so each device descriptor is asked whether it is still open. */
NVS_EXPORT int fcloseall(void)
{
    int result = REAL(fcloseall)();
    if (__builtin_expect(nvs_devices_open(), 0)) {
        int saved_errno = errno;
        nvs_device_forget_closed();
        errno = saved_errno;
    }
    return result;
}

/* Descriptors passed by another process (SCM_RIGHTS), read from what the call
 * returned: the program's header and its control bytes, copied out (neither is
 * bound to an alignment the kernel would check). */
static void received(const struct msghdr *program_message)
{
    struct msghdr message;
    memcpy(&message, program_message, sizeof message);
    if (!message.msg_control || message.msg_controllen < sizeof(struct cmsghdr))
        return;
    const unsigned char *control = message.msg_control, *end = control + message.msg_controllen;
    while ((size_t)(end - control) >= sizeof(struct cmsghdr)) {
        struct cmsghdr header;
        memcpy(&header, control, sizeof header);
        if (header.cmsg_len < CMSG_LEN(0) || header.cmsg_len > (size_t)(end - control))
            break;
        if (header.cmsg_level == SOL_SOCKET && header.cmsg_type == SCM_RIGHTS) {
            size_t count = (header.cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < count; i++) {
                int fd;
                memcpy(&fd, control + CMSG_LEN(0) + i * sizeof fd, sizeof fd);
                handed_out(fd);
            }
        }
        control += CMSG_ALIGN(header.cmsg_len);
    }
}

NVS_EXPORT ssize_t recvmsg(int fd, struct msghdr *message, int flags)
{
    ssize_t result = REAL(recvmsg)(fd, message, flags);
    if (__builtin_expect(nvs_devices_open(), 0) && result >= 0)
        received(message);
    return result;
}

NVS_EXPORT int recvmmsg(int fd, struct mmsghdr *messages, unsigned int count, int flags,
                        struct timespec *timeout)
{
    int result = REAL(recvmmsg)(fd, messages, count, flags, timeout);
    if (__builtin_expect(nvs_devices_open(), 0))
        for (int i = 0; i < result; i++)
            received(&messages[i].msg_hdr);
    return result;
}
