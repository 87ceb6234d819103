/* The kernel's part of recording: preloaded after the shim in make bench's
 * recording rows, this library's pwrite and pwritev stand in front of libc's
 * (the trace writer writes its buffers with those two and nothing else) and
 * add up the time each call spends inside, which calls.c reads through
 * bench_write_ns between its loops: the time the kernel took to put the
 * recorder's bytes into the file. Bench only. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static uint64_t spent_ns;

/* Found before the program runs: nothing is looked up inside a call. */
__attribute__((constructor)) static void find_real(void)
{
    real_pwrite = (ssize_t(*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
    real_pwritev = (ssize_t(*)(int, const struct iovec *, int, off_t))dlsym(RTLD_NEXT, "pwritev");
}

static uint64_t now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

EXPORT ssize_t pwrite(int fd, const void *data, size_t length, off_t offset);
EXPORT ssize_t pwrite(int fd, const void *data, size_t length, off_t offset)
{
    uint64_t start = now_ns();
    ssize_t written = real_pwrite(fd, data, length, offset);
    __atomic_fetch_add(&spent_ns, now_ns() - start, __ATOMIC_RELAXED);
    return written;
}

EXPORT ssize_t pwritev(int fd, const struct iovec *vector, int count, off_t offset);
EXPORT ssize_t pwritev(int fd, const struct iovec *vector, int count, off_t offset)
{
    uint64_t start = now_ns();
    ssize_t written = real_pwritev(fd, vector, count, offset);
    __atomic_fetch_add(&spent_ns, now_ns() - start, __ATOMIC_RELAXED);
    return written;
}

/* The time spent inside both so far, ns. */
EXPORT uint64_t bench_write_ns(void);
EXPORT uint64_t bench_write_ns(void)
{
    return __atomic_load_n(&spent_ns, __ATOMIC_RELAXED);
}
