/* libemufeature.so: feature reports for an emulated hidraw node.
 *
 * umockdev (Debian 12's 0.17) replays a hidraw node's report descriptor but no
 * feature reports: HIDIOCGFEATURE and HIDIOCSFEATURE get ENOTTY there. Preloaded
 * between the program (and libnvtxshim) and umockdev's preload library, this
 * answers them on the node it is told of, as the kernel's hidraw driver does
 * (the report number in the buffer's first byte, the bytes copied returned),
 * and passes every other call on. What it answered goes to a log, the truth
 * the tests compare the trace with (test_devices.py):
 *
 *   EMUFEATURE_NODE=/dev/hidraw5      the node
 *   EMUFEATURE_REPORTS=01:a1b2c3,...  feature report N's bytes (hex), after its number
 *   EMUFEATURE_LOG=FILE               one line a call: "get id=1 bytes=4" / "set id=1 bytes=9"
 *
 * A HIDIOCSFEATURE stores what it set: a later HIDIOCGFEATURE of that report
 * reads it back. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/hidraw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define REPORTS 16
#define REPORT_MAX 256

static struct {
    unsigned char id, length;
    unsigned char bytes[REPORT_MAX];
} reports[REPORTS];
static int report_count = -1;
static int node_fd = -1;

static void load_reports(void)
{
    if (report_count >= 0)
        return;
    report_count = 0;
    const char *list = getenv("EMUFEATURE_REPORTS");
    while (list && *list && report_count < REPORTS) {
        unsigned id;
        int used = 0;
        if (sscanf(list, "%x:%n", &id, &used) != 1 || !used)
            break;
        list += used;
        reports[report_count].id = (unsigned char)id;
        unsigned length = 0;
        unsigned byte;
        while (length < REPORT_MAX && sscanf(list, "%2x", &byte) == 1) {
            reports[report_count].bytes[length++] = (unsigned char)byte;
            list += 2;
        }
        reports[report_count++].length = (unsigned char)length;
        if (*list == ',')
            list++;
    }
}

static void log_line(const char *what, unsigned id, int bytes)
{
    const char *path = getenv("EMUFEATURE_LOG");
    if (!path)
        return;
    int saved_errno = errno;
    FILE *log = fopen(path, "a");
    if (log) {
        fprintf(log, "%s id=%u bytes=%d\n", what, id, bytes);
        fclose(log);
    }
    errno = saved_errno;
}

static int opened(int fd, const char *path)
{
    const char *node = getenv("EMUFEATURE_NODE");
    if (fd >= 0 && node && path && !strcmp(path, node))
        node_fd = fd;
    return fd;
}

EXPORT int open(const char *path, int flags, ...)
{
    static int (*real)(const char *, int, ...);
    if (!real)
        real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    va_list args;
    va_start(args, flags);
    mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(args, mode_t) : 0;
    va_end(args);
    return opened(real(path, flags, mode), path);
}

EXPORT int close(int fd)
{
    static int (*real)(int);
    if (!real)
        real = (int (*)(int))dlsym(RTLD_NEXT, "close");
    if (fd == node_fd)
        node_fd = -1;
    return real(fd);
}

static int feature(unsigned long request, unsigned char *buffer)
{
    unsigned size = _IOC_SIZE(request);
    load_reports();
    if (!size) {
        errno = EINVAL;
        return -1;
    }
    for (int i = 0; i < report_count; i++) {
        if (reports[i].id != buffer[0])
            continue;
        if (_IOC_NR(request) == _IOC_NR(HIDIOCSFEATURE(0))) {
            unsigned length = size - 1 < REPORT_MAX ? size - 1 : REPORT_MAX;
            memcpy(reports[i].bytes, buffer + 1, length);
            reports[i].length = (unsigned char)length;
            log_line("set", buffer[0], (int)size);
            return (int)size;
        }
        unsigned length = reports[i].length + 1u < size ? reports[i].length + 1u : size;
        memcpy(buffer + 1, reports[i].bytes, length - 1);
        log_line("get", buffer[0], (int)length);
        return (int)length;
    }
    errno = EINVAL;         /* a report the device does not have, as a real one answers */
    return -1;
}

EXPORT int ioctl(int fd, unsigned long request, ...)
{
    static int (*real)(int, unsigned long, ...);
    if (!real)
        real = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
    va_list args;
    va_start(args, request);
    void *argument = va_arg(args, void *);
    va_end(args);
    if (fd == node_fd && _IOC_TYPE(request) == 'H' &&
        (_IOC_NR(request) == _IOC_NR(HIDIOCSFEATURE(0)) ||
         _IOC_NR(request) == _IOC_NR(HIDIOCGFEATURE(0))))
        return feature(request, argument);
    return real(fd, request, argument);
}
