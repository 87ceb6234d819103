/* Loading a profile: which reader a file needs (load.c), above the readers
 * (sqlite_reader.c, nsys.c, trace_reader.c, trace_pftrace.c), which fill the
 * event model (events.h) and know nothing of each other or of this. */
#ifndef NVS_CLI_LOAD_H
#define NVS_CLI_LOAD_H

#include "events.h"

enum nvs_file_kind {
    NVS_FILE_UNREADABLE,         /* errno says why */
    NVS_FILE_NSYS_REPORT,        /* .nsys-rep or .qdrep */
    NVS_FILE_SQLITE,             /* any SQLite database, by its header */
    NVS_FILE_TRACE,              /* anything else: read as a trace file */
};

/* What PATH holds, by its header, then by its name. */
enum nvs_file_kind nvs_events_file_kind(const char *path);

/* Loads PATH: an nsys report (.nsys-rep or .qdrep; exported with nsys export
 * first, or its up-to-date .sqlite beside it read instead; said on stderr), a
 * SQLite export (recognised by its header), or a trace file (anything else).
 * Returns 0, or -1 after one "nvtxshim: COMMAND: ..." line on stderr. The
 * events are in no particular order. */
int nvs_events_load(struct nvs_events *events, const char *path,
                    const struct nvs_load_options *options);

#endif
