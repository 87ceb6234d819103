/* An nsys SQLite export read as a stream, for convert, and for report and
 * diff (load.c: the NVTX ranges and marks alone): each table queried in time
 * order (ORDER BY start) and the tables' cursors merged, so that what is held
 * is the events in flight, never the export. The NVTX projections onto
 * the GPU are made in a first pass over the NVTX ranges and the CUDA API calls
 * and kept in a temporary table of SQLite's (on disk), read back in time order
 * as the export's own tables are. */
#ifndef NVS_CLI_SQLITE_STREAM_H
#define NVS_CLI_SQLITE_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/events.h"
#include "readers/sqlite_events.h"

struct nvs_export;

/* Opens the export at PATH: checks it is one, says (OPTIONS->say_skipped)
 * what each table or column missing leaves out and which tables are not
 * converted, and reads the names of its processes and threads into
 * *NAMES_OUT (events with names only; its strings the stream's). KEEPS (with
 * CONTEXT; NULL keeps all) filters the NVTX events. With OPTIONS->what
 * NVS_LOAD_NVTX, only the NVTX ranges and marks are read (the other sources
 * are not there; the events have no args, the names are ThreadNames' and
 * PROCESSES'): what report needs. NULL after a line on stderr. */
struct nvs_export *nvs_export_open(const char *path, const struct nvs_load_options *options,
                                   nvs_export_keeps *keeps, void *context,
                                   const struct nvs_events **names_out);

/* The NVTX projections made (the first pass), to be read as the source
 * NVS_EXPORT_PROJECTIONS. 0, or -1 after a line on stderr. */
int nvs_export_project(struct nvs_export *export);

/* A pass over the sources in WANTED (a bit for each source): -1 after a line
 * on stderr. Then nvs_export_next gives the events in time order (of those
 * that start together, by source, then as the table has them): 1 with
 * *EVENT, 0 at the end, -1 after a line on stderr. */
int nvs_export_begin(struct nvs_export *export, unsigned wanted);
int nvs_export_next(struct nvs_export *export, struct nvs_export_event *event);

/* The GPU work (SOURCE, ROWID) marked async: the launches of later passes say so. */
int nvs_export_mark_async(struct nvs_export *export, enum nvs_export_source source, int64_t rowid);

/* The lines said after the last pass: the NVTX ranges never closed and the
 * events without a message, the scheduler's unpaired switches, counted by
 * the passes that read their tables (none for a table --only leaves out). */
void nvs_export_say_left_out(struct nvs_export *export);

void nvs_export_close(struct nvs_export *export);

#endif
