/* A JSON trace file (NVTXSHIM_TRACE's, nvtxshim convert's, or another writer's
 * Chrome trace) read into the event model; and what the binary form's reader
 * (trace_pftrace.c) shares with it. load.c picks which. */
#ifndef NVS_CLI_TRACE_READER_H
#define NVS_CLI_TRACE_READER_H

#include "model/events.h"

struct nvs_source;
/* Adds the events of the JSON trace SOURCE gives (PATH names it in messages),
 * read as they come (trace_json.h): complete events ("X") and async pairs
 * ("b"/"e", joined) as ranges, with the kernel probe's figures when there;
 * instant events as marks; thread and process names. Returns 0 (what was left
 * out, or a trace cut short, said on stderr), or -1 after one "nvtxshim:
 * COMMAND: ..." line on stderr. */
int nvs_trace_read(struct nvs_events *events, struct nvs_source *source, const char *path,
                   const struct nvs_load_options *options);

/* ---- what both trace readers (JSON here, the binary form in trace_pftrace.c) share ---- */

/* The Chrome categories that are not NVTX (events.h), interned in one event set: a range in one
 * of them is of that kind. */
#define NVS_TRACE_KINDS 7
struct nvs_trace_kinds {
    const char *category[NVS_TRACE_KINDS];
    enum nvs_event_kind kind[NVS_TRACE_KINDS];
};
/* False when out of memory. */
bool nvs_trace_kinds_init(struct nvs_trace_kinds *kinds, struct nvs_events *events);

/* One side of a range as a trace file gives it: the range as far as that side says, and the
 * kernel probe's figures on it. */
struct nvs_trace_side {
    struct nvs_event range;
    struct nvs_kernel_figures figures;
};

/* Adds RANGE: NVTX, or the kind its category names; with the kernel figures when the runnable
 * and blocked times are both there (the others count as 0 when absent). False when out of
 * memory. */
bool nvs_trace_add_range(struct nvs_events *events, const struct nvs_trace_kinds *kinds,
                         const struct nvs_event *range, const struct nvs_kernel_figures *figures);

/* BEGIN ended by END, added: a range on BEGIN's thread to END's time (never before its start),
 * END's payload over BEGIN's, the figures of both (END's winning); an ASYNC one ended on
 * another thread says which. False when out of memory. */
bool nvs_trace_add_joined(struct nvs_events *events, const struct nvs_trace_kinds *kinds,
                          const struct nvs_trace_side *begin, const struct nvs_trace_side *end,
                          bool async);

#endif
