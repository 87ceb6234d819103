/* Loading a profile (load.h): an input read as a stream (input.c), then the
 * reader its content needs: the SQLite export's (sqlite_stream.c), after nsys export
 * for a .nsys-rep (nsys.c), the binary trace's (trace_pftrace.c) or the JSON
 * trace's (trace_reader.c). */
#define _GNU_SOURCE
#include "readers/load.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "readers/input.h"
#include "readers/nsys.h"
#include "readers/source.h"
#include "readers/sqlite_stream.h"
#include "readers/trace_pftrace.h"
#include "readers/trace_reader.h"

/* The export's names (the stream's strings) into EVENTS, in their order. */
static bool copy_names(struct nvs_events *events, const struct nvs_events *names)
{
    for (size_t i = 0; i < names->name_count; i++) {
        const struct nvs_thread_name *name = &names->names[i];
        const char *interned = nvs_events_intern_string(events, name->name);
        if (!interned || !nvs_events_add_name(events, name->pid, name->tid, interned, false))
            return false;
    }
    return true;
}

/* An nsys export read as a stream (sqlite_stream.h): its NVTX ranges and
 * marks in start order (of those that start together, as the table has
 * them), each added to EVENTS as it is read, so that with a sink the list
 * holds a batch; or the export handed to OPTIONS->read_export (convert). */
static int load_sqlite(struct nvs_events *events, const char *path,
                       const struct nvs_load_options *options)
{
    if (options->read_export)
        return options->read_export(options->export_context, path);
    const struct nvs_events *names;
    struct nvs_export *export = nvs_export_open(path, options, NULL, NULL, &names);
    if (!export)
        return -1;
    int outcome = copy_names(events, names) ? 0 : -2;
    if (outcome == 0)
        outcome = nvs_export_begin(export, 1u << NVS_EXPORT_NVTX);
    /* the domains are few: the last one's interned copy kept */
    const char *domain = NULL, *interned_domain = NULL;
    struct nvs_export_event item;
    int got = 0;
    while (outcome == 0 && (got = nvs_export_next(export, &item)) > 0) {
        if (item.event.domain != domain) {
            domain = item.event.domain;
            interned_domain = nvs_events_intern_string(events, domain);
        }
        const char *name = nvs_events_intern_string(events, item.event.name);
        struct nvs_event *event = name && interned_domain ? nvs_events_add(events) : NULL;
        if (!event) {
            outcome = -2;
            break;
        }
        *event = item.event;
        event->name = name;
        event->domain = interned_domain;
        event->args = NULL;
    }
    if (got < 0)
        outcome = -1;
    if (outcome == 0)
        nvs_export_say_left_out(export);
    nvs_export_close(export);
    if (outcome == 0 && nvs_events_flush(events) != 0)
        outcome = -2;
    if (outcome == -2)
        nvs_events_say(options, "out of memory reading %s", path);
    return outcome < 0 ? -1 : 0;
}

static int load_report(struct nvs_events *events, const char *path,
                       const struct nvs_load_options *options)
{
    char database[4096], temporary[4096];
    int outcome = nvs_nsys_export_report(path, options, database, sizeof database, temporary,
                                         sizeof temporary);
    if (outcome == 0)
        outcome = load_sqlite(events, database, options);
    if (temporary[0]) {
        unlink(database);
        rmdir(temporary);
    }
    return outcome;
}

/* An SQLite export that came through a pipe or gzip: SQLite reads files, so
 * its bytes go to a temporary one first, removed after. */
static int load_sqlite_stream(struct nvs_events *events, const char *path,
                              struct nvs_stream *stream, const struct nvs_load_options *options)
{
    const char *directory = getenv("TMPDIR");
    char name[4096];
    snprintf(name, sizeof name, "%s/nvtxshim-export-XXXXXX.sqlite",
             directory && *directory ? directory : "/tmp");
    int fd = mkostemps(name, strlen(".sqlite"), O_CLOEXEC);
    if (fd < 0) {
        nvs_events_say(options, "cannot read %s: no temporary file for the database: %s", path,
                       strerror(errno));
        return -1;
    }
    static unsigned char chunk[1 << 18];
    char why[256];
    for (;;) {
        long got = nvs_stream_read(stream, chunk, sizeof chunk, why, sizeof why);
        if (got < 0)
            nvs_events_say(options, "cannot read %s: %s", path, why);
        if (got <= 0) {
            if (got == 0)
                break;
            close(fd);
            unlink(name);
            return -1;
        }
        for (size_t done = 0; done < (size_t)got;) {
            ssize_t wrote = write(fd, chunk + done, (size_t)got - done);
            if (wrote < 0 && errno == EINTR)
                continue;
            if (wrote <= 0) {
                nvs_events_say(options, "cannot read %s: writing %s: %s", path, name,
                               strerror(wrote < 0 ? errno : ENOSPC));
                close(fd);
                unlink(name);
                return -1;
            }
            done += (size_t)wrote;
        }
    }
    close(fd);
    int outcome = load_sqlite(events, name, options);
    unlink(name);
    return outcome;
}

/* One event of a trace may take this much memory at most (the readers hold an
 * event, not the file). */
#define MAX_EVENT ((size_t)64 << 20)

static long read_stream(void *context, char *into, size_t size, char *error, size_t error_size)
{
    return nvs_stream_read(context, (unsigned char *)into, size, error, error_size);
}

int nvs_events_load(struct nvs_events *events, const char *path,
                    const struct nvs_load_options *options)
{
    /* An Nsight Systems report, known by its first bytes whatever its name:
     * nsys reads it itself, by its name */
    int report = strcmp(path, "-") != 0 ? nvs_nsys_report_at(path, options) : 0;
    if (report != 0)
        return report > 0 ? load_report(events, path, options) : -1;
    struct nvs_stream stream;
    char why[256];
    if (nvs_stream_open(&stream, path, options->max_input, why, sizeof why) != 0) {
        nvs_events_say(options, "cannot read %s: %s", path, why);
        return -1;
    }
    struct nvs_source source = { read_stream, &stream, MAX_EVENT };
    int outcome = -1;
    if (stream.kind == NVS_INPUT_SQLITE) {
        outcome = stream.from_file && !stream.gzipped
            ? load_sqlite(events, path, options)
            : load_sqlite_stream(events, path, &stream, options);
    } else if (options->exports_only) {
        nvs_events_say(options,
                       "%s is not an nsys export (an SQLite file from nsys export "
                       "--type sqlite, or a .nsys-rep report)",
                       path);
    } else if (nvs_ends_with(path, ".sqlite")) {
        nvs_events_say(options, "cannot read %s: not an SQLite database", path);
    } else if (stream.kind == NVS_INPUT_PFTRACE ||
               (stream.kind != NVS_INPUT_JSON &&
                (nvs_ends_with(path, ".pftrace") || nvs_ends_with(path, ".pftrace.gz")))) {
        /* by its content; by its name only where the content is no trace at
         * all, so that the binary reader says what is wrong with it */
        outcome = nvs_pftrace_read(events, &source, path, options);
    } else if (stream.kind == NVS_INPUT_OTHER) {
        nvs_events_say(options, "cannot read %s: not a trace (JSON or .pftrace) or an nsys export",
                       path);
    } else {
        /* JSON, or nothing at all: the JSON reader says what an empty trace is */
        outcome = nvs_trace_read(events, &source, path, options);
    }
    nvs_stream_close(&stream);
    if (outcome == 0 && nvs_events_flush(events) != 0) {
        nvs_events_say(options, "out of memory reading %s", path);
        outcome = -1;
    }
    return outcome;
}
