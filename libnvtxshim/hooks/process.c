/* exec and _exit end the process image without running destructors: the
 * trace file is completed first. With no trace, these pass straight through. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../capture.h"
#include "../clock.h"
#include "../activation.h"
#include "../hook.h"
#include "../recorder/record.h"
#include "../resolve.h"

/* A vfork child shares our memory: it must leave the parent's frame and trace
 * alone. The open frame ends here as it would at exit; after a failed exec the
 * next marker begins the next frame. */
static bool before_exec(void)
{
    if (!nvs_owns_image())
        return false;
    nvs_end_frames();
    if (!nvs_record_owns_process())
        return false;
    nvs_record_finish();
    return true;
}

static int after_failed_exec(bool finished, int result)
{
    if (finished)
        nvs_record_resume();
    return result;
}

NVS_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    __typeof__(&execve) real = NVS_REAL(execve);
    bool finished = before_exec();
    return after_failed_exec(finished, real(path, argv, envp));
}

NVS_EXPORT int execv(const char *path, char *const argv[])
{
    __typeof__(&execv) real = NVS_REAL(execv);
    bool finished = before_exec();
    return after_failed_exec(finished, real(path, argv));
}

NVS_EXPORT int execvp(const char *file, char *const argv[])
{
    __typeof__(&execvp) real = NVS_REAL(execvp);
    bool finished = before_exec();
    return after_failed_exec(finished, real(file, argv));
}

NVS_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    __typeof__(&execvpe) real = NVS_REAL(execvpe);
    bool finished = before_exec();
    return after_failed_exec(finished, real(file, argv, envp));
}

NVS_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    __typeof__(&fexecve) real = NVS_REAL(fexecve);
    bool finished = before_exec();
    return after_failed_exec(finished, real(fd, argv, envp));
}

/* glibc 2.34 and later; where libc has none, it fails as the missing system call would. */
NVS_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                        int flags)
{
    __typeof__(&execveat) real = NVS_REAL(execveat);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    bool finished = before_exec();
    return after_failed_exec(finished, real(dirfd, path, argv, envp, flags));
}

/* The list forms: the arguments are gathered on the stack into an argv. */
#define GATHER_ARGUMENTS(first, arguments, argv, after)                                            \
    size_t count = 1;                                                                              \
    va_list arguments;                                                                             \
    va_start(arguments, first);                                                                    \
    while (va_arg(arguments, char *))                                                              \
        count++;                                                                                   \
    va_end(arguments);                                                                             \
    char *argv[count + 1];                                                                         \
    argv[0] = (char *)(first);                                                                     \
    va_start(arguments, first);                                                                    \
    for (size_t i = 1; i <= count; i++)                                                            \
        argv[i] = va_arg(arguments, char *);                                                       \
    after;                                                                                         \
    va_end(arguments)

NVS_EXPORT int execl(const char *path, const char *arg, ...)
{
    GATHER_ARGUMENTS(arg, arguments, argv, (void)0);
    return execv(path, argv);
}

NVS_EXPORT int execlp(const char *file, const char *arg, ...)
{
    GATHER_ARGUMENTS(arg, arguments, argv, (void)0);
    return execvp(file, argv);
}

NVS_EXPORT int execle(const char *path, const char *arg, ...)
{
    char *const *envp;
    GATHER_ARGUMENTS(arg, arguments, argv, envp = va_arg(arguments, char *const *));
    return execve(path, argv, envp);
}

/* Both end the process at once; REAL is glibc's _exit or _Exit. */
__attribute__((noreturn)) static void finish_and_exit(void (*real)(int), int status)
{
    if (nvs_owns_image())
        nvs_end_frames();
    if (nvs_record_owns_process())
        nvs_record_finish();
    if (real)
        real(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

NVS_EXPORT void _exit(int status)
{
    finish_and_exit(NVS_REAL(_exit), status);
}

NVS_EXPORT void _Exit(int status)
{
    finish_and_exit(NVS_REAL(_Exit), status);
}

/* The signal trigger's signal: the program's handler goes behind ours. */
NVS_EXPORT int sigaction(int number, const struct sigaction *action, struct sigaction *old)
{
    if (nvs_capture_keeps_signal(number))
        return nvs_capture_program_sigaction(number, action, old);
    __typeof__(&sigaction) real = NVS_REAL(sigaction);
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    return real(number, action, old);
}

/* glibc's signal() calls its sigaction internally, past the one above. */
NVS_EXPORT __sighandler_t signal(int number, __sighandler_t handler)
{
    if (nvs_capture_keeps_signal(number)) {
        /* glibc's semantics: BSD, with SA_RESTART and the signal blocked in its handler. */
        struct sigaction action, old;
        memset(&action, 0, sizeof action);
        action.sa_handler = handler;
        action.sa_flags = SA_RESTART;
        sigemptyset(&action.sa_mask);
        sigaddset(&action.sa_mask, number);
        nvs_capture_program_sigaction(number, &action, &old);
        return (old.sa_flags & SA_SIGINFO) ? (__sighandler_t)(void *)old.sa_sigaction
                                           : old.sa_handler;
    }
    __typeof__(&signal) real = NVS_REAL(signal);
    if (!real) {
        errno = ENOSYS;
        return SIG_ERR;
    }
    return real(number, handler);
}

/* A thread that forbids itself the TSC (PR_SET_TSC, PR_TSC_SIGSEGV) would get
 * SIGSEGV from the recorder's clock: its line goes first, whatever the
 * request's outcome (clock_gettime serves it from then on). */
NVS_EXPORT int prctl(int option, ...)
{
    va_list arguments;
    va_start(arguments, option);
    unsigned long second = va_arg(arguments, unsigned long);
    unsigned long third = va_arg(arguments, unsigned long);
    unsigned long fourth = va_arg(arguments, unsigned long);
    unsigned long fifth = va_arg(arguments, unsigned long);
    va_end(arguments);
    if (option == PR_SET_TSC)
        nvs_clock_refuse_thread();
    __typeof__(&prctl) real = NVS_REAL(prctl);
    if (!real)
        return (int)syscall(SYS_prctl, option, second, third, fourth, fifth);
    return real(option, second, third, fourth, fifth);
}
