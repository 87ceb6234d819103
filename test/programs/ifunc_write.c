/* An interposer whose write is an indirect function (STT_GNU_IFUNC), as
 * glibc's own string functions are: preloaded after the library, it is the
 * real write the library must call. Each write it is given to standard output
 * is told on standard error, both by system call (nothing here calls write).
 * test/test_inert.py. */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>

static ssize_t told_write(int fd, const void *buffer, size_t count)
{
    static const char line[] = "ifunc write\n";
    if (fd == 1)
        (void)syscall(SYS_write, 2, line, sizeof line - 1);
    return syscall(SYS_write, fd, buffer, count);
}

/* The resolver, run by the loader or by dlsym when a lookup finds write here. */
static ssize_t (*resolve_write(void))(int, const void *, size_t)
{
    return told_write;
}

ssize_t write(int fd, const void *buffer, size_t count) __attribute__((ifunc("resolve_write")));
