/* The events of a profile, whichever file they come from: an nsys report
 * (.nsys-rep, exported first), its SQLite export, or a trace file written by
 * NVTXSHIM_TRACE (or by nvtxshim convert). report and convert both read this. */
#ifndef NVS_CLI_EVENTS_H
#define NVS_CLI_EVENTS_H

#include <stdbool.h>
#include <string.h>
#include <stddef.h>
#include <stdint.h>

#include "schema.h"

enum nvs_event_kind {
    NVS_EVENT_RANGE,        /* an NVTX range: push/pop or start/end */
    NVS_EVENT_MARK,         /* an NVTX mark */
    NVS_EVENT_OS_CALL,      /* nsys's OS runtime trace (OSRT_API) */
    NVS_EVENT_GPU_KERNEL,   /* CUPTI_ACTIVITY_KIND_KERNEL */
    NVS_EVENT_GPU_COPY,     /* CUPTI_ACTIVITY_KIND_MEMCPY */
    NVS_EVENT_GPU_SET,      /* CUPTI_ACTIVITY_KIND_MEMSET */
    NVS_EVENT_CUDA_API,     /* CUPTI_ACTIVITY_KIND_RUNTIME: CUDA runtime and driver API calls */
    NVS_EVENT_PROJECTION,   /* an NVTX range projected onto a GPU stream's row (made by convert) */
    NVS_EVENT_THREAD_STATE, /* a thread running or off the CPU, from SCHED_EVENTS */
};
#define NVS_EVENT_KINDS (NVS_EVENT_THREAD_STATE + 1)

/* The Chrome categories of the events that are not NVTX (NVTX events have
 * their domain as category): report leaves these out of its NVTX tables. */
#define NVS_CATEGORY_OS_CALL "osrt"
#define NVS_CATEGORY_GPU_KERNEL "cuda kernel"
#define NVS_CATEGORY_GPU_COPY "cuda memcpy"
#define NVS_CATEGORY_GPU_SET "cuda memset"
#define NVS_CATEGORY_CUDA_API "cuda api"
#define NVS_CATEGORY_PROJECTION "nvtx projection"
#define NVS_CATEGORY_THREAD_STATE "thread state"

/* The kernel probe's figures for a frame (docs/user-guide.md: The kernel probe). */
struct nvs_offcpu {
    uint64_t runnable_ns, blocked_ns, preemptions, faults, migrations;
};
/* The figures a report shows, of those the library wrote (absent ones: 0). */
struct nvs_offcpu nvs_offcpu_of(const struct nvs_kernel_figures *figures);

struct nvs_event {
    int64_t start, end; /* nanoseconds; end == start for a mark */
    const char *domain; /* the NVTX domain ("default" for none), or the category */
    const char *name;
    const char *args;          /* the Chrome args' members as JSON text, or NULL */
    struct nvs_offcpu *offcpu; /* a frame range's kernel figures from the trace, or NULL */
    int64_t payload;           /* the NVTX payload (args "payload"), when has_payload */
    uint32_t pid, tid;
    uint32_t end_tid; /* the thread that ended an async range; 0: its own */
    /* CUPTI's correlation id, which joins a CUDA API call to the GPU work it
     * launched, in one process; 0: none (the export has no correlationId, or
     * the row none to join: such events are joined to nothing). */
    uint32_t correlation;
    enum nvs_event_kind kind;
    /* A range that may end on another thread or overlap others: an NVTX
     * start/end range, a trace's async pair ("ph":"b"/"e"), or (set by
     * convert) a range that crosses the end of another on its thread. A
     * trace writes it as an async pair, since viewers nest complete events. */
    bool async;
    bool has_payload;
};

/* A thread's name (or, with tid == 0, a process's). */
struct nvs_thread_name {
    uint32_t pid, tid;
    const char *name;
};

struct nvs_string_pool;
struct nvs_events;

/* Where a reader's events go as they are read, instead of staying in the
 * list: TAKE gets them a batch at a time (their strings stay valid until
 * nvs_events_free) and returns 0, or -1 (out of memory: the reading stops). */
struct nvs_event_sink {
    int (*take)(void *context, const struct nvs_event *batch, size_t count);
    void *context;
};

struct nvs_events {
    struct nvs_event *events;
    size_t count, capacity;
    struct nvs_thread_name *names;
    size_t name_count, name_capacity;
    struct nvs_string_pool *strings;
    /* When set, the list holds at most a batch: the events go to the sink as it
     * fills and at nvs_events_flush (nvs_events_load calls it). */
    struct nvs_event_sink *sink;
};

enum nvs_load_what {
    NVS_LOAD_NVTX,       /* NVTX ranges and marks: what report needs */
    NVS_LOAD_EVERYTHING, /* also OS runtime calls, CUDA API calls, GPU work, thread
                                  * states, thread and process names */
};

struct nvs_load_options {
    const char *command; /* for messages: "nvtxshim: COMMAND: ..." */
    enum nvs_load_what what;
    bool say_skipped;   /* one line on stderr for each table or column not there */
    bool exports_only;  /* an nsys export or report, never a trace file (convert) */
    uint64_t max_input; /* memory an input may take read or decompressed; 0: input.h's default */
    bool live;          /* a trace still being written (top): what it leaves out, unsaid */
    /* When set, an nsys export (the file, or the temporary one a report or a
     * pipe became) goes to this, not into the events: convert reads it as a
     * stream. 0, or -1 after a line. */
    int (*read_export)(void *context, const char *database);
    void *export_context;
};

void nvs_events_free(struct nvs_events *events);

/* Two strings in order; interned ones that are the same pointer at once. */
static inline int nvs_compare_interned(const char *a, const char *b)
{
    return a == b ? 0 : strcmp(a, b);
}

/* Whether TEXT ends with SUFFIX (a file's extension). */
static inline bool nvs_ends_with(const char *text, const char *suffix)
{
    size_t length = strlen(text), suffix_length = strlen(suffix);
    return length >= suffix_length && strcmp(text + length - suffix_length, suffix) == 0;
}

/* The same string for the same text, valid until nvs_events_free: names
 * can be compared as pointers. NULL when out of memory. */
const char *nvs_events_intern(struct nvs_events *events, const char *text, size_t length);

/* Appends an event (its strings already interned); NULL when out of memory.
 * With a sink, the event before it may have gone to the sink: the pointer is
 * good until the next add. */
struct nvs_event *nvs_events_add(struct nvs_events *events);

/* The events in the list handed to the sink, if there is one, and the list
 * emptied. 0, or the sink's -1. */
int nvs_events_flush(struct nvs_events *events);

/* Sorts by start time; events that start together keep their order. */
void nvs_events_sort(struct nvs_events *events);

/* Splits an nsys global thread id (pid and tid in its low 48 bits). */
uint32_t nvs_global_pid(int64_t global_tid);
uint32_t nvs_global_tid(int64_t global_tid);

/* ---- for the readers (sqlite_stream.c, trace_reader.c, nsys.c) ---- */

/* One "nvtxshim: COMMAND: ..." line on stderr, COMMAND from OPTIONS. */
void nvs_events_say(const struct nvs_load_options *options, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* nvs_events_intern of the NUL-terminated TEXT. */
const char *nvs_events_intern_string(struct nvs_events *events, const char *text);

/* A name for (PID, TID), TID 0 for the process; one there already is replaced
 * only when REPLACE. False when out of memory. */
bool nvs_events_add_name(struct nvs_events *events, uint32_t pid, uint32_t tid, const char *name,
                         bool replace);

/* SIZE bytes, aligned for any type, freed by nvs_events_free; NULL when out of
 * memory. */
void *nvs_events_alloc(struct nvs_events *events, size_t size);

#endif
