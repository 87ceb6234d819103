/* Loading a profile: which reader an input needs (load.c), above the readers
 * (sqlite_stream.c, nsys.c, trace_reader.c, trace_pftrace.c), which fill the
 * event model (events.h) and know nothing of each other or of this. */
#ifndef NVS_CLI_LOAD_H
#define NVS_CLI_LOAD_H

#include "model/events.h"

/* Loads PATH ("-": standard input), read as a stream (input.h): an nsys report
 * (.nsys-rep or .qdrep, a file; exported with nsys export first, or its
 * up-to-date .sqlite beside it read instead; said on stderr), an SQLite export,
 * or a trace file, JSON or .pftrace, plain or gzipped, each known by its
 * content. With OPTIONS->exports_only, a trace file is refused. Returns 0, or
 * -1 after one "nvtxshim: COMMAND: ..." line on stderr. An export gives its
 * NVTX ranges and marks alone, in start order, read as a stream
 * (sqlite_stream.h; convert reads the rest through OPTIONS->read_export); a
 * trace's events are in no particular order. With EVENTS->sink set, they go to
 * the sink as they are read and the list is left empty. */
int nvs_events_load(struct nvs_events *events, const char *path,
                    const struct nvs_load_options *options);

#endif
