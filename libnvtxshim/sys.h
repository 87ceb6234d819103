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

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

/* How often a call that answered EINTR is made again. A signal interrupts a
 * call once; a seccomp filter's SECCOMP_RET_ERRNO or a ptrace supervisor can
 * answer EINTR every time, and a loop without a bound then spins for good in
 * the host. Past the bound the call has failed, with EINTR. */
#define NVS_EINTR_TRIES 16

/* EXPRESSION (a system call returning -1 and errno on failure) made again
 * while it fails with EINTR, NVS_EINTR_TRIES times at most. */
#define NVS_RETRY_EINTR(expression)                                                                \
    __extension__({                                                                                \
        __typeof__(expression) result_;                                                            \
        int tries_ = 0;                                                                            \
        do                                                                                         \
            result_ = (expression);                                                                \
        while (result_ == -1 && errno == EINTR && ++tries_ < NVS_EINTR_TRIES);                     \
        result_;                                                                                   \
    })

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

static inline int nvs_sys_unlink(const char *path)
{
    return (int)syscall(SYS_unlinkat, AT_FDCWD, path, 0);
}

/* The process's id, for its trace file's name and to tell a forked child
 * from its parent. getpid fails only where something denies it (a seccomp
 * filter, a supervisor): then it is asked once more, then the calling
 * thread's id stands in (the main thread's is the process's). 0 where both
 * are denied. */
static inline pid_t nvs_sys_getpid(void)
{
    for (int tries = 0; tries < 2; tries++) {
        long pid = syscall(SYS_getpid);
        if (pid > 0)
            return (pid_t)pid;
    }
    long tid = syscall(SYS_gettid);
    return tid > 0 ? (pid_t)tid : 0;
}

/* Whether this is still the process whose id was PID (not a child made by
 * vfork or a raw clone, which share its memory and skip the fork handlers).
 * A getpid that fails tells nothing: the answer is then yes, as it is for
 * every process but such a child. */
static inline bool nvs_sys_is_process(pid_t pid)
{
    long now = syscall(SYS_getpid);
    return now <= 0 || now == pid;
}

/* The calling thread, for a lock that records its holder: the address of a
 * byte of the thread's own, which no two live threads share. Not its id from
 * gettid, which is a system call and can be denied. */
static inline long nvs_thread_identity(void)
{
    static __thread char byte __attribute__((tls_model("initial-exec")));
    return (long)(uintptr_t)&byte;
}

static inline int nvs_sys_fcntl(int fd, int command, long argument)
{
    return (int)syscall(SYS_fcntl, fd, command, argument);
}

#endif
