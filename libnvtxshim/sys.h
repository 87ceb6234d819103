/* The library's own system calls: its log lines, its trace file, its clock's
 * look at the clocksource. They go to the kernel. The library exports open,
 * read, write, close and fcntl for the program (hooks/devices.c), and linked
 * with -Bsymbolic its own calls by those names would bind to them:
 * a log line to a descriptor 2 that is a followed serial port would become a
 * traced serial write, and every file that logs would depend on hooks/.
 *
 * The functions libc has that the library does not export (pwritev, flock,
 * fstat, fstatfs, ftruncate...) are called as they are. A build check
 * (scripts/own_calls.sh) fails when an object outside hooks/table.c refers to
 * an exported wrapper. All of these are async-signal-safe and take no lock. */
#ifndef NVS_SYS_H
#define NVS_SYS_H

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static inline int nvs_sys_open(const char *path, int flags, mode_t mode)
{
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

static inline ssize_t nvs_sys_read(int fd, void *buffer, size_t count)
{
    return syscall(SYS_read, fd, buffer, count);
}

static inline ssize_t nvs_sys_write(int fd, const void *buffer, size_t count)
{
    return syscall(SYS_write, fd, buffer, count);
}

static inline int nvs_sys_close(int fd)
{
    return (int)syscall(SYS_close, fd);
}

static inline int nvs_sys_fcntl(int fd, int command, long argument)
{
    return (int)syscall(SYS_fcntl, fd, command, argument);
}

#endif
