/* What an nsys export read as a stream gives (sqlite_stream.h): each event with
 * the table it came from and its row, a CUDA API call's work with it. Apart, so
 * that the rows' reader (sqlite_rows.c) needs nothing of the stream above it. */
#ifndef NVS_CLI_SQLITE_EVENTS_H
#define NVS_CLI_SQLITE_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/events.h"

/* Where an event comes from, in the order of events that start together:
 * the projections first (each holds its first piece of work), then the
 * tables in the order the events were loaded before (a launch before its
 * kernel). */
enum nvs_export_source {
    NVS_EXPORT_PROJECTIONS,
    NVS_EXPORT_NVTX,
    NVS_EXPORT_OSRT,
    NVS_EXPORT_API,
    NVS_EXPORT_KERNEL,
    NVS_EXPORT_COPY,
    NVS_EXPORT_SET,
    NVS_EXPORT_SCHED,
    NVS_EXPORT_SOURCES,
};

/* A piece of GPU work a CUDA API call launched (same process and correlation id). */
struct nvs_export_launch {
    enum nvs_export_source source; /* KERNEL, COPY or SET */
    int64_t rowid;                 /* its row in that table: with SOURCE, the work */
    int64_t start, end;
    uint32_t pid, tid; /* its GPU row */
    bool async;        /* marked with nvs_export_mark_async */
};

/* One event as the stream gives it: its strings and launches are good until
 * the next nvs_export_next (the domain, an interned string, until
 * nvs_export_close). */
struct nvs_export_event {
    struct nvs_event event;
    enum nvs_export_source source;
    int64_t rowid;
    const struct nvs_export_launch *launches; /* a CUDA API call's work, in time order */
    size_t launch_count;
};

/* Whether --nvtx-prefix keeps the NVTX range or mark named NAME. */
typedef bool nvs_export_keeps(void *context, const char *name);

#endif
