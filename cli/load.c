/* Loading a profile (load.h): the SQLite export's reader (sqlite_reader.c),
 * after nsys export for a .nsys-rep (nsys.c), the binary trace's
 * (trace_pftrace.c) or the JSON trace's (trace_reader.c). */
#define _GNU_SOURCE
#include "load.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsys.h"
#include "sqlite_reader.h"
#include "trace_pftrace.h"
#include "trace_reader.h"

enum nvs_file_kind nvs_events_file_kind(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat status;
    if (fd < 0 || fstat(fd, &status) != 0) {
        int error = errno;
        if (fd >= 0)
            close(fd);
        errno = error;
        return NVS_FILE_UNREADABLE;
    }
    if (S_ISDIR(status.st_mode)) {
        close(fd);
        errno = EISDIR;
        return NVS_FILE_UNREADABLE;
    }
    char header[16] = {0};
    ssize_t got = S_ISREG(status.st_mode) ? pread(fd, header, sizeof header, 0) : 0;
    int error = errno;
    close(fd);
    if (got < 0) {
        errno = error;
        return NVS_FILE_UNREADABLE;
    }
    if (got == (ssize_t)sizeof header && memcmp(header, "SQLite format 3", 16) == 0)
        return NVS_FILE_SQLITE;
    if (nvs_ends_with(path, ".nsys-rep") || nvs_ends_with(path, ".qdrep"))
        return NVS_FILE_NSYS_REPORT;
    return NVS_FILE_TRACE;
}

int nvs_events_load(struct nvs_events *events, const char *path, const struct nvs_load_options *options)
{
    switch (nvs_events_file_kind(path)) {
    case NVS_FILE_UNREADABLE:
        nvs_events_say(options, "cannot read %s: %s", path, strerror(errno));
        return -1;
    case NVS_FILE_SQLITE:
        return nvs_sqlite_load(events, path, options);
    case NVS_FILE_NSYS_REPORT: {
        char database[4096], temporary[4096];
        int outcome = nvs_nsys_export_report(path, options, database, sizeof database, temporary,
                                             sizeof temporary);
        if (outcome == 0)
            outcome = nvs_sqlite_load(events, database, options);
        if (temporary[0]) {
            unlink(database);
            rmdir(temporary);
        }
        return outcome;
    }
    case NVS_FILE_TRACE:
    default:
        if (nvs_ends_with(path, ".sqlite")) {
            nvs_events_say(options, "cannot read %s: not an SQLite database", path);
            return -1;
        }
        if (nvs_pftrace_is(path))
            return nvs_pftrace_load(events, path, options);
        return nvs_trace_load(events, path, options);
    }
}
