/* Loading a profile (load.h): an input read once (input.c), then the reader
 * its content needs: the SQLite export's (sqlite_reader.c), after nsys export
 * for a .nsys-rep (nsys.c), the binary trace's (trace_pftrace.c) or the JSON
 * trace's (trace_reader.c). */
#define _GNU_SOURCE
#include "load.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "input.h"
#include "nsys.h"
#include "sqlite_reader.h"
#include "trace_pftrace.h"
#include "trace_reader.h"

static int load_report(struct nvs_events *events, const char *path,
                       const struct nvs_load_options *options)
{
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

/* An SQLite export that came through a pipe or gzip: SQLite reads files, so
 * its bytes go to a temporary one first, removed after. */
static int load_sqlite_bytes(struct nvs_events *events, const char *path,
                             const struct nvs_input *input, const struct nvs_load_options *options)
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
    size_t done = 0;
    while (done < input->length) {
        ssize_t wrote = write(fd, input->bytes + done, input->length - done);
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
    close(fd);
    int outcome = nvs_sqlite_load(events, name, options);
    unlink(name);
    return outcome;
}

int nvs_events_load(struct nvs_events *events, const char *path, const struct nvs_load_options *options)
{
    /* An Nsight Systems report, known by its first bytes whatever its name:
     * nsys reads it itself, by its name */
    int report = strcmp(path, "-") != 0 ? nvs_nsys_report_at(path, options) : 0;
    if (report != 0)
        return report > 0 ? load_report(events, path, options) : -1;
    struct nvs_input input;
    char why[256];
    if (nvs_input_read(&input, path, options->max_input ? options->max_input : NVS_INPUT_MAX_DEFAULT,
                       why, sizeof why) != 0) {
        nvs_events_say(options, "cannot read %s: %s", path, why);
        return -1;
    }
    int outcome = -1;
    if (input.kind == NVS_INPUT_SQLITE) {
        outcome = input.from_file && !input.gzipped
                      ? nvs_sqlite_load(events, path, options)
                      : load_sqlite_bytes(events, path, &input, options);
    } else if (options->exports_only) {
        nvs_events_say(options, "%s is not an nsys export (an SQLite file from nsys export "
                       "--type sqlite, or a .nsys-rep report)", path);
    } else if (nvs_ends_with(path, ".sqlite")) {
        nvs_events_say(options, "cannot read %s: not an SQLite database", path);
    } else if (input.kind == NVS_INPUT_PFTRACE ||
               (input.kind != NVS_INPUT_JSON &&
                (nvs_ends_with(path, ".pftrace") || nvs_ends_with(path, ".pftrace.gz")))) {
        /* by its content; by its name only where the content is no trace at
         * all, so that the binary reader says what is wrong with it */
        outcome = nvs_pftrace_parse(events, input.bytes, input.length, path, options);
    } else if (input.kind == NVS_INPUT_OTHER) {
        nvs_events_say(options, "cannot read %s: not a trace (JSON or .pftrace) or an nsys export",
                       path);
    } else {
        /* JSON, or nothing at all: the JSON reader says what an empty trace is */
        outcome = nvs_trace_parse(events, (const char *)input.bytes, input.length, path, options);
    }
    nvs_input_free(&input);
    return outcome;
}
