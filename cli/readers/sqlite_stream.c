/* An nsys export read as a stream, for convert, report and diff
 * (sqlite_stream.h): each table queried in time order and the tables'
 * cursors merged; the projections made in a pass before, into a temporary
 * table. Its rows are read with sqlite_tables.h. */
#define _GNU_SOURCE
#include "readers/sqlite_stream.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "util/json_text.h"

#include "readers/sqlite_names.h"
#include "readers/sqlite_tables.h"

struct cursor {
    sqlite3_stmt *statement;
    bool on_row;                     /* the statement holds a row not yet read */
    bool done;                       /* ... or has none left (a step would run it again) */
    bool ready;                      /* EVENT is the cursor's next event */
    struct nvs_export_event event;
    char *name;                      /* EVENT's name and args, the cursor's own */
    size_t name_size;
    struct nvs_json_text args;
    struct nvs_export_launch *launches;
    size_t launch_capacity;
};

struct nvs_export {
    struct database database;
    struct nvs_events names;         /* the names, and the strings interned (few) */
    nvs_export_keeps *keeps;
    void *keeps_context;
    bool present[NVS_EXPORT_SOURCES];
    struct columns columns[NVS_EXPORT_SOURCES];
    bool api_launches;               /* the API calls' query joins their work */
    bool everything;                 /* NVS_LOAD_EVERYTHING; else NVTX ranges and marks alone, no args */
    struct domain_names domains;
    struct category_names categories;
    struct labels copy_labels, memory_labels, classes, states, blocks;
    char state_table[128], block_table[128];
    const char *category[NVS_EXPORT_SOURCES];
    const char *unknown_os_call, *unknown_api_call, *unnamed_kernel, *running, *off_cpu;
    struct cursor cursors[NVS_EXPORT_SOURCES];
    unsigned wanted;
    int last;                        /* the cursor whose event was given last; -1 none */
    size_t unnamed, open, unpaired;  /* left out, by the pass under way */
    size_t said_unnamed, said_open, said_unpaired;  /* ... by the passes before */
    sqlite3_stmt *add_projection, *add_async;
};

static const char *const gpu_tables[] = {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                                         "CUPTI_ACTIVITY_KIND_MEMSET"};

/* TEXT (LENGTH bytes) as the cursor's name; false when out of memory. */
static bool set_name(struct cursor *cursor, const char *text, size_t length)
{
    if (length + 1 > cursor->name_size) {
        size_t size = length + 64;
        char *grown = realloc(cursor->name, size);
        if (!grown)
            return false;
        cursor->name = grown;
        cursor->name_size = size;
    }
    memcpy(cursor->name, text, length);
    cursor->name[length] = '\0';
    cursor->event.event.name = cursor->name;
    return true;
}

/* A string column (text, or an id into StringIds) as the cursor's name;
 * 0 when it has none, -1 when out of memory. */
static int name_column(struct nvs_export *export, struct cursor *cursor, int column)
{
    sqlite3_stmt *statement = cursor->statement;
    const char *text = NULL;
    size_t length = 0;
    if (sqlite3_column_type(statement, column) == SQLITE_TEXT) {
        text = (const char *)sqlite3_column_text(statement, column);
        length = (size_t)sqlite3_column_bytes(statement, column);
    } else if (sqlite3_column_type(statement, column) == SQLITE_INTEGER) {
        text = nvs_sql_string_id(&export->database, sqlite3_column_int64(statement, column));
        length = text ? strlen(text) : 0;
    }
    if (!text)
        return 0;
    const char *nul = memchr(text, '\0', length);
    return set_name(cursor, text, nul ? (size_t)(nul - text) : length) ? 1 : -1;
}

static const char *cursor_args(struct cursor *cursor)
{
    return cursor->args.length ? cursor->args.bytes : NULL;
}

/* The statement's next row; false at the end. */
static bool next_row(struct cursor *cursor)
{
    if (cursor->on_row) {
        cursor->on_row = false;
        return true;
    }
    if (cursor->done)
        return false;
    cursor->done = sqlite3_step(cursor->statement) != SQLITE_ROW;
    return !cursor->done;
}

/* The row's payload column: the first of NVTX_EVENTS's value columns that is there, or -1. */
static int payload_column(sqlite3_stmt *statement)
{
    for (size_t i = 0; i < NVS_SQL_PAYLOADS; i++)
        if (!nvs_sql_is_null(statement, N_PAYLOAD + (int)i))
            return N_PAYLOAD + (int)i;
    return -1;
}

static int read_nvtx(struct nvs_export *export, struct cursor *cursor)
{
    sqlite3_stmt *statement = cursor->statement;
    struct nvs_event *event = &cursor->event.event;
    while (next_row(cursor)) {
        int type = sqlite3_column_int(statement, N_TYPE);
        int named = name_column(export, cursor, N_TEXT);
        if (named == 0)
            named = name_column(export, cursor, N_TEXT_ID);
        if (named < 0)
            return -1;
        if (named == 0) {
            export->unnamed++;
            continue;
        }
        bool mark = type == NVTX_MARK;
        if (!mark && nvs_sql_is_null(statement, N_END)) {
            export->open++;
            continue;
        }
        if (export->keeps && !export->keeps(export->keeps_context, cursor->name))
            continue;
        const char *name = cursor->name;
        *event = (struct nvs_event){0};
        event->name = name;
        event->kind = mark ? NVS_EVENT_MARK : NVS_EVENT_RANGE;
        event->start = sqlite3_column_int64(statement, N_START);
        event->end = mark ? event->start : sqlite3_column_int64(statement, N_END);
        event->domain = nvs_sql_domain_name(&export->database, &export->domains, statement, N_DOMAIN);
        int64_t global = nvs_sql_is_null(statement, N_TID) ? 0 : sqlite3_column_int64(statement, N_TID);
        event->pid = nvs_global_pid(global);
        event->tid = nvs_global_tid(global);
        event->async = type == NVTX_START_END;
        if (event->async && !nvs_sql_is_null(statement, N_END_TID))
            event->end_tid = nvs_global_tid(sqlite3_column_int64(statement, N_END_TID));
        cursor->event.rowid = sqlite3_column_int64(statement, N_PAYLOAD + (int)NVS_SQL_PAYLOADS);
        /* the payload: the first of its columns that is there (report reads it) */
        int payload = payload_column(statement);
        if (payload >= 0 && sqlite3_column_type(statement, payload) == SQLITE_FLOAT) {
            double value = sqlite3_column_double(statement, payload);
            if (value > -9.2e18 && value < 9.2e18) {
                event->payload = (int64_t)(value < 0 ? value - 0.5 : value + 0.5);
                event->has_payload = true;
            }
        } else if (payload >= 0) {
            event->payload = sqlite3_column_int64(statement, payload);
            event->has_payload = true;
        }
        struct nvs_json_text *args = &cursor->args;
        args->length = 0;
        if (!export->everything)
            return event->domain ? 1 : -1;
        /* args as the recorder writes them: category, payload, colour (marks only) */
        if (!nvs_sql_is_null(statement, N_CATEGORY) && sqlite3_column_int64(statement, N_CATEGORY) != 0) {
            int64_t domain = nvs_sql_is_null(statement, N_DOMAIN) ? 0 : sqlite3_column_int64(statement, N_DOMAIN);
            int64_t id = sqlite3_column_int64(statement, N_CATEGORY);
            const char *category = nvs_sql_category_name(&export->categories, domain, id);
            if (category)
                nvs_json_text_add_string_member(args, "category", category);
            else
                nvs_json_text_add(args, "%s\"category\":%" PRId64, args->length ? "," : "", id);
        }
        if (payload >= 0 && sqlite3_column_type(statement, payload) == SQLITE_FLOAT) {
            double value = sqlite3_column_double(statement, payload);
            nvs_json_text_add(args, "%s\"payload\":%.17g", args->length ? "," : "",
                              value == value && value - value == 0 ? value : 0.0);
        } else if (payload == N_PAYLOAD) {   /* the first column, uint64Value: unsigned */
            nvs_json_text_add(args, "%s\"payload\":%" PRIu64, args->length ? "," : "",
                              (uint64_t)sqlite3_column_int64(statement, payload));
        } else if (payload >= 0) {
            nvs_json_text_add(args, "%s\"payload\":%" PRId64, args->length ? "," : "",
                              (int64_t)sqlite3_column_int64(statement, payload));
        }
        if (mark && !nvs_sql_is_null(statement, N_COLOR)) {
            uint32_t color = (uint32_t)sqlite3_column_int64(statement, N_COLOR) & 0xFFFFFFu;
            nvs_json_text_add(args, "%s\"color\":\"#%06x\"", args->length ? "," : "", color);
        }
        if (args->failed || !event->domain)
            return -1;
        event->args = cursor_args(cursor);
        return 1;
    }
    return 0;
}

/* start, end, name, globalTid, ... of a call's row on its thread. */
static void read_call(struct cursor *cursor, enum nvs_event_kind kind, const char *category)
{
    sqlite3_stmt *statement = cursor->statement;
    struct nvs_event *event = &cursor->event.event;
    *event = (struct nvs_event){0};
    event->kind = kind;
    event->start = sqlite3_column_int64(statement, 0);
    event->end = nvs_sql_is_null(statement, 1) ? event->start : sqlite3_column_int64(statement, 1);
    event->domain = category;
    int64_t global = nvs_sql_is_null(statement, 3) ? 0 : sqlite3_column_int64(statement, 3);
    event->pid = nvs_global_pid(global);
    event->tid = nvs_global_tid(global);
}

static int read_osrt(struct nvs_export *export, struct cursor *cursor)
{
    sqlite3_stmt *statement = cursor->statement;
    if (!next_row(cursor))
        return 0;
    read_call(cursor, NVS_EVENT_OS_CALL, export->category[NVS_EXPORT_OSRT]);
    int named = name_column(export, cursor, 2);
    if (named < 0 || (named == 0 && !set_name(cursor, export->unknown_os_call, strlen(export->unknown_os_call))))
        return -1;
    cursor->args.length = 0;
    if (!nvs_sql_is_null(statement, 4))
        nvs_json_text_add(&cursor->args, "\"return\":%lld", (long long)sqlite3_column_int64(statement, 4));
    cursor->event.event.args = cursor_args(cursor);
    cursor->event.rowid = sqlite3_column_int64(statement, 5);
    return cursor->args.failed ? -1 : 1;
}

/* Columns of the CUDA API calls' query: the call's, then its work's (NULL
 * when it launched none). */
enum { A_ROWID = 7, A_SOURCE, A_WORK, A_START, A_END, A_PID, A_DEVICE, A_STREAM, A_ASYNC };

static int read_api(struct nvs_export *export, struct cursor *cursor)
{
    sqlite3_stmt *statement = cursor->statement;
    if (!next_row(cursor))
        return 0;
    struct nvs_event *event = &cursor->event.event;
    read_call(cursor, NVS_EVENT_CUDA_API, export->category[NVS_EXPORT_API]);
    const char *name = nvs_sql_string_column(&export->database, statement, 2);
    if (name) {
        if (!set_name(cursor, name, nvs_sql_api_name_length(name)))
            return -1;
    } else if (!set_name(cursor, export->unknown_api_call, strlen(export->unknown_api_call))) {
        return -1;
    }
    struct nvs_json_text *args = &cursor->args;
    args->length = 0;
    if (!nvs_sql_is_null(statement, 4)) {
        event->correlation = (uint32_t)sqlite3_column_int64(statement, 4);
        nvs_json_text_add(args, "\"correlation\":%lld", (long long)sqlite3_column_int64(statement, 4));
    }
    if (!nvs_sql_is_null(statement, 5))
        nvs_json_text_add(args, "%s\"return\":%lld", args->length ? "," : "",
                          (long long)sqlite3_column_int64(statement, 5));
    const char *class = nvs_sql_is_null(statement, 6) ? NULL
                        : nvs_sql_label(&export->database, &export->classes, sqlite3_column_int64(statement, 6));
    if (class)
        nvs_json_text_add_string_member(args, "class", class);
    if (args->failed)
        return -1;
    event->args = cursor_args(cursor);
    int64_t rowid = sqlite3_column_int64(statement, A_ROWID);
    cursor->event.rowid = rowid;
    cursor->event.launch_count = 0;
    cursor->event.launches = cursor->launches;
    if (!export->api_launches)
        return 1;
    /* the rows of the call's work, one each */
    do {
        if (sqlite3_column_int64(statement, A_ROWID) != rowid) {
            cursor->on_row = true;
            break;
        }
        if (nvs_sql_is_null(statement, A_SOURCE))
            continue;
        size_t count = cursor->event.launch_count;
        struct nvs_export_launch *launches =
            nvs_room_for_one(cursor->launches, count, &cursor->launch_capacity, sizeof *launches, 8);
        if (!launches)
            return -1;
        cursor->launches = launches;
        cursor->event.launches = launches;
        int64_t device = sqlite3_column_int64(statement, A_DEVICE), stream = sqlite3_column_int64(statement, A_STREAM);
        launches[count] = (struct nvs_export_launch){
            .source = (enum nvs_export_source)sqlite3_column_int(statement, A_SOURCE),
            .rowid = sqlite3_column_int64(statement, A_WORK),
            .start = sqlite3_column_int64(statement, A_START),
            .end = sqlite3_column_int64(statement, A_END),
            .pid = nvs_sql_is_null(statement, A_PID) ? 0 : nvs_global_pid(sqlite3_column_int64(statement, A_PID)),
            .tid = nvs_sql_stream_row(device, stream),
            .async = sqlite3_column_int(statement, A_ASYNC) != 0,
        };
        cursor->event.launch_count++;
    } while (!(cursor->done = sqlite3_step(statement) != SQLITE_ROW));
    return 1;
}

static int read_gpu(struct nvs_export *export, struct cursor *cursor, enum gpu_table which)
{
    sqlite3_stmt *statement = cursor->statement;
    if (!next_row(cursor))
        return 0;
    struct nvs_event *event = &cursor->event.event;
    *event = (struct nvs_event){0};
    event->kind = which == GPU_KERNEL ? NVS_EVENT_GPU_KERNEL : which == GPU_COPY ? NVS_EVENT_GPU_COPY : NVS_EVENT_GPU_SET;
    event->start = sqlite3_column_int64(statement, 0);
    event->end = sqlite3_column_int64(statement, 1);
    event->domain = export->category[NVS_EXPORT_KERNEL + which];
    event->pid = nvs_sql_is_null(statement, 2) ? 0 : nvs_global_pid(sqlite3_column_int64(statement, 2));
    int64_t device = sqlite3_column_int64(statement, 3), stream = sqlite3_column_int64(statement, 4);
    event->tid = nvs_sql_stream_row(device, stream);
    struct nvs_json_text *args = &cursor->args;
    args->length = 0;
    nvs_json_text_add(args, "\"device\":%" PRId64 ",\"stream\":%" PRId64, device, stream);
    if (!nvs_sql_is_null(statement, 5)) {
        event->correlation = (uint32_t)sqlite3_column_int64(statement, 5);
        nvs_json_text_add(args, ",\"correlation\":%lld", (long long)sqlite3_column_int64(statement, 5));
    }
    char name[160];
    if (which == GPU_KERNEL) {
        int named = name_column(export, cursor, 6);
        if (named == 0)
            named = name_column(export, cursor, 7);
        if (named < 0 || (named == 0 && !set_name(cursor, export->unnamed_kernel, strlen(export->unnamed_kernel))))
            return -1;
    } else {
        if (!nvs_sql_is_null(statement, 8))
            nvs_json_text_add(args, ",\"bytes\":%lld", (long long)sqlite3_column_int64(statement, 8));
        if (which == GPU_COPY) {
            int64_t kind = sqlite3_column_int64(statement, 9);
            const char *label = nvs_sql_label(&export->database, &export->copy_labels, kind);
            snprintf(name, sizeof name, "CUDA memcpy %s", label ? label : nvs_sql_copy_kind(kind));
            for (int side = 0; side < 2; side++) {
                if (nvs_sql_is_null(statement, 10 + side))
                    continue;
                const char *memory_label =
                    nvs_sql_label(&export->database, &export->memory_labels, sqlite3_column_int64(statement, 10 + side));
                if (memory_label)
                    nvs_json_text_add_string_member(args, side ? "dst" : "src", memory_label);
            }
        } else {
            snprintf(name, sizeof name, "CUDA memset");
            if (!nvs_sql_is_null(statement, 12))
                nvs_json_text_add(args, ",\"value\":%lld", (long long)sqlite3_column_int64(statement, 12));
        }
        if (!set_name(cursor, name, strlen(name)))
            return -1;
    }
    if (args->failed)
        return -1;
    event->args = cursor_args(cursor);
    cursor->event.rowid = sqlite3_column_int64(statement, 13);
    return 1;
}

/* Columns of the thread states' query: a switch, then the thread's next one. */
enum { S_ROWID = S_BLOCK + 1, S_NEXT_START, S_NEXT_IN };

/* COLUMN's ENUM label from LABELS, or PREFIX and its number where the export has no label for
 * it; NULL where the column is empty. */
static const char *label_of(struct nvs_export *export, sqlite3_stmt *statement, int column,
                            struct labels *labels, const char *prefix)
{
    if (nvs_sql_is_null(statement, column))
        return NULL;
    sqlite3_int64 id = sqlite3_column_int64(statement, column);
    const char *label = nvs_sql_label(&export->database, labels, id);
    if (label)
        return label;
    char number[48];
    snprintf(number, sizeof number, "%s%lld", prefix, (long long)id);
    return nvs_events_intern_string(&export->names, number);
}

static int read_sched(struct nvs_export *export, struct cursor *cursor)
{
    sqlite3_stmt *statement = cursor->statement;
    struct nvs_event *event = &cursor->event.event;
    char name[160];
    while (next_row(cursor)) {
        if (nvs_sql_is_null(statement, S_NEXT_START))
            continue;                /* the thread's last switch */
        bool switch_in = sqlite3_column_int64(statement, S_IN) != 0;
        if ((sqlite3_column_int64(statement, S_NEXT_IN) != 0) == switch_in) {
            export->unpaired++;
            continue;
        }
        int64_t global = sqlite3_column_int64(statement, S_TID);
        *event = (struct nvs_event){0};
        event->kind = NVS_EVENT_THREAD_STATE;
        event->start = sqlite3_column_int64(statement, S_START);
        event->end = sqlite3_column_int64(statement, S_NEXT_START);
        event->domain = export->category[NVS_EXPORT_SCHED];
        event->pid = nvs_global_pid(global);
        event->tid = nvs_sql_state_row(nvs_global_tid(global));
        cursor->event.rowid = sqlite3_column_int64(statement, S_ROWID);
        struct nvs_json_text *args = &cursor->args;
        args->length = 0;
        const char *row_name = export->running;
        if (switch_in) {
            if (!nvs_sql_is_null(statement, S_CPU))
                nvs_json_text_add(args, "\"cpu\":%lld", (long long)sqlite3_column_int64(statement, S_CPU));
        } else {
            /* the reason the thread left the CPU: on its switch out */
            const char *state = label_of(export, statement, S_STATE, &export->states, "state ");
            const char *block = label_of(export, statement, S_BLOCK, &export->blocks, "");
            row_name = export->off_cpu;
            if (state) {
                snprintf(name, sizeof name, "Off CPU (%s)", state);
                row_name = name;
                nvs_json_text_add_string_member(args, "state", state);
            }
            if (block)
                nvs_json_text_add_string_member(args, "block", block);
        }
        if (args->failed || !set_name(cursor, row_name, strlen(row_name)))
            return -1;
        event->args = cursor_args(cursor);
        return 1;
    }
    return 0;
}

static int read_projection(struct nvs_export *export, struct cursor *cursor)
{
    sqlite3_stmt *statement = cursor->statement;
    if (!next_row(cursor))
        return 0;
    struct nvs_event *event = &cursor->event.event;
    *event = (struct nvs_event){0};
    event->kind = NVS_EVENT_PROJECTION;
    event->start = sqlite3_column_int64(statement, 0);
    event->end = sqlite3_column_int64(statement, 1);
    event->pid = (uint32_t)sqlite3_column_int64(statement, 2);
    event->tid = (uint32_t)sqlite3_column_int64(statement, 3);
    event->domain = export->category[NVS_EXPORT_PROJECTIONS];
    const char *name = (const char *)sqlite3_column_text(statement, 4);
    const char *domain = (const char *)sqlite3_column_text(statement, 5);
    if (!set_name(cursor, name ? name : "", name ? (size_t)sqlite3_column_bytes(statement, 4) : 0))
        return -1;
    struct nvs_json_text *args = &cursor->args;
    args->length = 0;
    nvs_json_text_add_string_member(args, "domain", domain ? domain : "");
    nvs_json_text_add(args, ",\"gpu ops\":%lld", (long long)sqlite3_column_int64(statement, 6));
    if (args->failed)
        return -1;
    event->args = cursor_args(cursor);
    cursor->event.rowid = sqlite3_column_int64(statement, 7);
    return 1;
}

static int read_next(struct nvs_export *export, int source)
{
    struct cursor *cursor = &export->cursors[source];
    switch (source) {
    case NVS_EXPORT_PROJECTIONS:
        return read_projection(export, cursor);
    case NVS_EXPORT_NVTX:
        return read_nvtx(export, cursor);
    case NVS_EXPORT_OSRT:
        return read_osrt(export, cursor);
    case NVS_EXPORT_API:
        return read_api(export, cursor);
    case NVS_EXPORT_SCHED:
        return read_sched(export, cursor);
    default:
        return read_gpu(export, cursor, (enum gpu_table)(source - NVS_EXPORT_KERNEL));
    }
}

/* ---- opening: the schema, what is missing said, the names ---- */

static void query_append(struct query *query, const char *text)
{
    int written = snprintf(query->sql + query->length, sizeof query->sql - query->length, "%s", text);
    if (written > 0)
        query->length += (size_t)written;
}

/* The NVTX_EVENTS query of the stream: its columns (N_*), then the rowid. */
static bool nvtx_query(struct nvs_export *export, struct query *query, const char *rest)
{
    const struct columns *columns = &export->columns[NVS_EXPORT_NVTX];
    nvs_sql_query_start(query);
    static const char *const wanted[] = {"start", "end", "eventType", "text", "textId", "globalTid",
                                         "domainId", "category", "color", "endGlobalTid"};
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
        nvs_sql_query_column(query, columns, wanted[i]);
    for (size_t i = 0; i < NVS_SQL_PAYLOADS; i++)
        nvs_sql_query_column(query, columns, nvs_sql_payload_columns[i]);
    query_append(query, ", rowid");
    nvs_sql_query_end(query, rest);
    return query->length < sizeof query->sql - 200;
}

/* NVTX_EVENTS' schema said, and its domains, category names and NVTX thread names read. */
static int open_nvtx(struct nvs_export *export)
{
    struct database *database = &export->database;
    const struct nvs_load_options *options = database->options;
    struct columns *columns = &export->columns[NVS_EXPORT_NVTX];
    if (!nvs_sql_has_table(database, "NVTX_EVENTS")) {
        if (options->say_skipped)
            nvs_events_say(options, "no NVTX_EVENTS table: no NVTX ranges or marks (profile with -t nvtx "
                           "for them)");
        return 0;
    }
    nvs_sql_read_columns(database, "NVTX_EVENTS", columns);
    if (!nvs_sql_has_column(columns, "start") || !nvs_sql_has_column(columns, "eventType")) {
        nvs_events_say(options, "%s: NVTX_EVENTS has no %s column: NVTX events skipped", database->path,
            nvs_sql_has_column(columns, "start") ? "eventType" : "start");
        return 0;
    }
    if (!nvs_sql_has_column(columns, "text") && !nvs_sql_has_column(columns, "textId")) {
        nvs_events_say(options, "%s: NVTX_EVENTS has neither text nor textId: NVTX events skipped",
            database->path);
        return 0;
    }
    if (options->say_skipped) {
        if (!nvs_sql_has_column(columns, "end"))
            nvs_events_say(options, "NVTX_EVENTS has no end column: NVTX ranges skipped, marks kept");
        if (!nvs_sql_has_column(columns, "domainId"))
            nvs_events_say(options, "NVTX_EVENTS has no domainId column: every event in domain \"default\"");
        if (!nvs_sql_has_column(columns, "globalTid"))
            nvs_events_say(options, "NVTX_EVENTS has no globalTid column: every event on thread 0");
        if (!nvs_sql_has_column(columns, "category"))
            nvs_events_say(options, "NVTX_EVENTS has no category column: categories skipped");
    }
    export->present[NVS_EXPORT_NVTX] = true;
    struct query query;
    nvtx_query(export, &query, "FROM NVTX_EVENTS WHERE eventType IN (33, 75, 39) ORDER BY eventType DESC");
    sqlite3_stmt *statement = nvs_sql_prepare(database, query.sql);
    if (!statement)
        return -1;
    struct domain_names *domains = &export->domains;
    struct category_names *categories = &export->categories;
    int status = 0;
    while (status == 0 && sqlite3_step(statement) == SQLITE_ROW) {
        int type = sqlite3_column_int(statement, N_TYPE);
        const char *text = nvs_sql_string_column(database, statement, N_TEXT);
        if (!text)
            text = nvs_sql_string_column(database, statement, N_TEXT_ID);
        if (!text)
            continue;
        if (type == NVTX_DOMAIN_CREATE && !nvs_sql_is_null(statement, N_DOMAIN)) {
            if (!nvs_sql_grow((void **)&domains->items, &domains->capacity, domains->count, sizeof *domains->items)) {
                status = -1;
                break;
            }
            domains->items[domains->count].id = sqlite3_column_int64(statement, N_DOMAIN);
            domains->items[domains->count++].name = text;
        } else if (type == NVTX_CATEGORY_NAME && !nvs_sql_is_null(statement, N_CATEGORY)) {
            if (!nvs_sql_grow((void **)&categories->items, &categories->capacity, categories->count,
                              sizeof *categories->items)) {
                status = -1;
                break;
            }
            categories->items[categories->count].domain =
                nvs_sql_is_null(statement, N_DOMAIN) ? 0 : sqlite3_column_int64(statement, N_DOMAIN);
            categories->items[categories->count].id = sqlite3_column_int64(statement, N_CATEGORY);
            categories->items[categories->count++].name = text;
        } else if (type == NVTX_THREAD_NAME && export->everything && !nvs_sql_is_null(statement, N_TID)) {
            int64_t global = sqlite3_column_int64(statement, N_TID);
            if (!nvs_events_add_name(database->events, nvs_global_pid(global), nvs_global_tid(global), text, true))
                status = -1;
        }
    }
    sqlite3_finalize(statement);
    return status;
}

/* Names for the GPU rows of TABLE's work. */
static int name_gpu_rows(struct nvs_export *export, const char *table, const struct columns *columns)
{
    struct database *database = &export->database;
    static const char *const wanted[] = {"globalPid", "deviceId", "streamId"};
    sqlite3_stmt *statement = nvs_sql_select_columns(database, columns, wanted, 3, table, "");
    if (!statement)
        return -1;
    /* DISTINCT over the three, as SQLite sorts them: on disk past its cache */
    char sql[1200];
    snprintf(sql, sizeof sql, "SELECT DISTINCT * FROM (%s)", sqlite3_sql(statement));
    sqlite3_finalize(statement);
    if (!(statement = nvs_sql_prepare(database, sql)))
        return -1;
    int status = 0;
    while (status == 0 && sqlite3_step(statement) == SQLITE_ROW) {
        uint32_t pid = nvs_sql_is_null(statement, 0) ? 0 : nvs_global_pid(sqlite3_column_int64(statement, 0));
        int64_t device = sqlite3_column_int64(statement, 1), stream = sqlite3_column_int64(statement, 2);
        char row[64];
        snprintf(row, sizeof row, "CUDA stream %" PRId64 " (device %" PRId64 ")", stream, device);
        const char *name = nvs_events_intern_string(database->events, row);
        if (!name || !nvs_events_add_name(database->events, pid, nvs_sql_stream_row(device, stream), name, false))
            status = -1;
    }
    sqlite3_finalize(statement);
    return status;
}

static int open_calls(struct nvs_export *export)
{
    struct database *database = &export->database;
    const struct nvs_load_options *options = database->options;
    static const char *const needed_os[] = {"start", "end", "nameId"};
    export->present[NVS_EXPORT_OSRT] =
        nvs_sql_require_table(database, "OSRT_API", &export->columns[NVS_EXPORT_OSRT], needed_os, 3,
                              "OS runtime calls", "profile with -t osrt for them");
    static const char *const table = "CUPTI_ACTIVITY_KIND_RUNTIME";
    static const char *const needed[] = {"start", "end"};
    struct columns *columns = &export->columns[NVS_EXPORT_API];
    export->present[NVS_EXPORT_API] = nvs_sql_require_table(database, table, columns, needed, 2, "CUDA API calls",
                                                            "none made, or not profiled with -t cuda");
    static const struct { const char *column, *without; } optional[] = {
        {"nameId", "CUDA API calls unnamed"},
        {"globalTid", "CUDA API calls shown on thread 0 of process 0"},
        {"correlationId", "no launch arrows and no NVTX projections onto the GPU"},
        {"returnValue", "CUDA API calls without their return values"},
        {"eventClass", "CUDA API calls not told apart as runtime or driver calls"},
    };
    if (export->present[NVS_EXPORT_API] && options->say_skipped)
        for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++)
            if (!nvs_sql_has_column(columns, optional[i].column))
                nvs_events_say(options, "%s has no %s column: %s", table, optional[i].column, optional[i].without);
    static const char *const what[] = {"CUDA kernels", "CUDA memory copies", "CUDA memsets"};
    for (int which = GPU_KERNEL; which <= GPU_SET; which++) {
        const char *gpu_table = gpu_tables[which];
        struct columns *gpu_columns = &export->columns[NVS_EXPORT_KERNEL + which];
        if (!nvs_sql_require_table(database, gpu_table, gpu_columns, needed, 2, what[which],
                                   "none ran, or not profiled with -t cuda"))
            continue;
        export->present[NVS_EXPORT_KERNEL + which] = true;
        if (options->say_skipped) {
            if (!nvs_sql_has_column(gpu_columns, "globalPid"))
                nvs_events_say(options, "%s has no globalPid column: %s shown in process 0", gpu_table, what[which]);
            if (which == GPU_KERNEL && !nvs_sql_has_column(gpu_columns, "demangledName") &&
                !nvs_sql_has_column(gpu_columns, "shortName"))
                nvs_events_say(options, "%s has no demangledName or shortName column: kernels unnamed", gpu_table);
        }
        if (name_gpu_rows(export, gpu_table, gpu_columns) != 0)
            return -1;
    }
    return 0;
}

static int open_sched(struct nvs_export *export)
{
    struct database *database = &export->database;
    const struct nvs_load_options *options = database->options;
    struct columns *columns = &export->columns[NVS_EXPORT_SCHED];
    static const char *const needed[] = {"start", "isSchedIn", "globalTid"};
    if (!nvs_sql_require_table(database, "SCHED_EVENTS", columns, needed, 3, "thread states",
                               "profile with --cpuctxsw=process-tree for them"))
        return 0;
    if (sqlite3_libversion_number() < 3025000) {
        /* each switch is paired with the thread's next by lead() OVER (...) */
        nvs_events_say(options, "SQLite %s has no window functions (3.25 on): thread states skipped",
                       sqlite3_libversion());
        return 0;
    }
    export->present[NVS_EXPORT_SCHED] = true;
    bool with_state = nvs_sql_has_column(columns, "threadState"), with_block = nvs_sql_has_column(columns, "threadBlock");
    if (options->say_skipped) {
        if (!with_state && !with_block)
            nvs_events_say(options, "SCHED_EVENTS has no threadState or threadBlock column: time off the CPU "
                           "is shown without its reason");
        else if (!with_state)
            nvs_events_say(options, "SCHED_EVENTS has no threadState column: time off the CPU is shown "
                           "without the state the thread left in");
        else if (!with_block)
            nvs_events_say(options, "SCHED_EVENTS has no threadBlock column: time off the CPU is shown "
                           "without what blocked the thread");
        if (!nvs_sql_has_column(columns, "cpu"))
            nvs_events_say(options, "SCHED_EVENTS has no cpu column: running time is shown without its CPU");
    }
    export->states.table = export->state_table;
    export->blocks.table = export->block_table;
    export->states.present = with_state && (nvs_sql_has_table(database, "ENUM_SAMPLING_THREAD_STATE")
                                                ? snprintf(export->state_table, sizeof export->state_table, "%s",
                                                           "ENUM_SAMPLING_THREAD_STATE") > 0
                                                : nvs_sql_find_enum_table(database, "ENUM%THREAD_STATE%", export->state_table,
                                                                  sizeof export->state_table));
    export->blocks.present = with_block && nvs_sql_find_enum_table(database, "ENUM%THREAD_BLOCK%", export->block_table,
                                                           sizeof export->block_table);
    /* each thread's state row, named after the thread */
    sqlite3_stmt *statement = nvs_sql_prepare(database, "SELECT DISTINCT globalTid FROM SCHED_EVENTS "
                                                        "WHERE globalTid IS NOT NULL");
    if (!statement)
        return -1;
    int status = 0;
    while (status == 0 && sqlite3_step(statement) == SQLITE_ROW) {
        int64_t global = sqlite3_column_int64(statement, 0);
        if (!nvs_sql_name_state_row(database->events, nvs_global_pid(global), nvs_global_tid(global)))
            status = -1;
    }
    sqlite3_finalize(statement);
    return status;
}

struct nvs_export *nvs_export_open(const char *path, const struct nvs_load_options *options,
                                   nvs_export_keeps *keeps, void *context,
                                   const struct nvs_events **names_out)
{
    struct nvs_export *export = calloc(1, sizeof *export);
    if (!export) {
        nvs_events_say(options, "out of memory");
        return NULL;
    }
    export->last = -1;
    export->everything = options->what == NVS_LOAD_EVERYTHING;
    export->keeps = keeps;
    export->keeps_context = context;
    struct database *database = &export->database;
    *database = (struct database){.path = path, .options = options, .events = &export->names};
    if (sqlite3_open_v2(path, &database->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        nvs_events_say(options, "cannot open %s: %s", path, database->db ? sqlite3_errmsg(database->db) : "out of memory");
        nvs_export_close(export);
        return NULL;
    }
    sqlite3_stmt *check;
    if (sqlite3_prepare_v2(database->db, "SELECT count(*) FROM sqlite_master", -1, &check, NULL) != SQLITE_OK ||
        sqlite3_step(check) != SQLITE_ROW) {
        nvs_events_say(options, "cannot read %s: %s", path, sqlite3_errmsg(database->db));
        sqlite3_finalize(check);
        nvs_export_close(export);
        return NULL;
    }
    sqlite3_finalize(check);
    if (!nvs_sql_is_nsys_export(database)) {
        nvs_export_close(export);
        return NULL;
    }
    /* SQLite's sorts and temporary tables on disk past its page cache, never in memory whole */
    sqlite3_exec(database->db, "PRAGMA temp_store = FILE", NULL, NULL, NULL);
    int status = 0;
    if (nvs_sql_has_table(database, "StringIds")) {
        database->string_cache = calloc(STRING_CACHE, sizeof *database->string_cache);
        if (!database->string_cache ||
            !(database->string_lookup = nvs_sql_prepare(database, "SELECT value FROM StringIds WHERE id = ?")))
            status = -1;
    }
    static const char *const categories[] = {
        [NVS_EXPORT_PROJECTIONS] = NVS_CATEGORY_PROJECTION, [NVS_EXPORT_OSRT] = NVS_CATEGORY_OS_CALL,
        [NVS_EXPORT_API] = NVS_CATEGORY_CUDA_API, [NVS_EXPORT_KERNEL] = NVS_CATEGORY_GPU_KERNEL,
        [NVS_EXPORT_COPY] = NVS_CATEGORY_GPU_COPY, [NVS_EXPORT_SET] = NVS_CATEGORY_GPU_SET,
        [NVS_EXPORT_SCHED] = NVS_CATEGORY_THREAD_STATE,
    };
    for (int i = 0; status == 0 && i < NVS_EXPORT_SOURCES; i++)
        if (categories[i] && !(export->category[i] = nvs_events_intern_string(&export->names, categories[i])))
            status = -1;
    if (status == 0 &&
        (!(export->unknown_os_call = nvs_events_intern_string(&export->names, "[unknown OS call]")) ||
         !(export->unknown_api_call = nvs_events_intern_string(&export->names, "[CUDA API call]")) ||
         !(export->unnamed_kernel = nvs_events_intern_string(&export->names, "[CUDA kernel]")) ||
         !(export->running = nvs_events_intern_string(&export->names, "Running")) ||
         !(export->off_cpu = nvs_events_intern_string(&export->names, "Off CPU"))))
        status = -1;
    export->copy_labels = (struct labels){.table = "ENUM_CUDA_MEMCPY_OPER"};
    export->memory_labels = (struct labels){.table = "ENUM_CUDA_MEM_KIND"};
    export->classes = (struct labels){.table = "ENUM_NSYS_EVENT_CLASS"};
    export->copy_labels.present = nvs_sql_has_table(database, export->copy_labels.table);
    export->memory_labels.present = nvs_sql_has_table(database, export->memory_labels.table);
    export->classes.present = nvs_sql_has_table(database, export->classes.table);
    if (status == 0)
        status = open_nvtx(export);
    if (status == 0 && export->everything)
        status = open_calls(export);
    if (status == 0)
        status = nvs_sql_load_names(database);
    if (status == 0 && export->everything)
        status = open_sched(export);
    if (status == 0 && options->say_skipped)
        nvs_sql_say_left_out(database);
    if (status == 0 &&
        sqlite3_exec(database->db, "CREATE TEMP TABLE nvtxshim_projections (start INTEGER, \"end\" INTEGER, "
                     "pid INTEGER, tid INTEGER, name TEXT, domain TEXT, ops INTEGER, range INTEGER, seq INTEGER); "
                     "CREATE TEMP TABLE nvtxshim_async (source INTEGER, work INTEGER, PRIMARY KEY (source, work))",
                     NULL, NULL, NULL) != SQLITE_OK) {
        nvs_events_say(options, "%s: %s", path, sqlite3_errmsg(database->db));
        status = -1;
    }
    if (status == 0 &&
        (!(export->add_projection = nvs_sql_prepare(database, "INSERT INTO nvtxshim_projections VALUES "
                                                              "(?, ?, ?, ?, ?, ?, ?, ?, ?)")) ||
         !(export->add_async = nvs_sql_prepare(database, "INSERT OR IGNORE INTO nvtxshim_async VALUES (?, ?)"))))
        status = -1;
    if (status != 0) {
        nvs_events_say(options, "out of memory reading %s", path);
        nvs_export_close(export);
        return NULL;
    }
    *names_out = &export->names;
    return export;
}

/* ---- passes ---- */

/* The CUDA API calls' query into SQL (SIZE bytes): each call, and when the
 * export can join them, a row for each piece of work it launched (same
 * process, same correlation id), its work's columns A_SOURCE on. */
static bool api_query(struct nvs_export *export, char *sql, size_t size)
{
    const struct columns *columns = &export->columns[NVS_EXPORT_API];
    struct query query;
    nvs_sql_query_start(&query);
    static const char *const wanted[] = {"start", "end", "nameId", "globalTid", "correlationId",
                                         "returnValue", "eventClass"};
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
        nvs_sql_query_column(&query, columns, wanted[i]);
    query.sql[query.length] = '\0';
    char work[3072] = "";
    size_t length = 0;
    if (nvs_sql_has_column(columns, "correlationId"))
        for (int which = GPU_KERNEL; which <= GPU_SET; which++) {
            const struct columns *gpu = &export->columns[NVS_EXPORT_KERNEL + which];
            if (!export->present[NVS_EXPORT_KERNEL + which] || !nvs_sql_has_column(gpu, "correlationId"))
                continue;
            int written = snprintf(work + length, sizeof work - length,
                "%sSELECT %d AS src, rowid AS rid, start AS wstart, \"end\" AS wend, %s AS wpid, %s AS wdevice, "
                "%s AS wstream, correlationId AS wcorrelation FROM \"%s\" WHERE correlationId IS NOT NULL "
                "AND correlationId != 0", length ? " UNION ALL " : "", NVS_EXPORT_KERNEL + which,
                nvs_sql_has_column(gpu, "globalPid") ? "globalPid" : "NULL",
                nvs_sql_has_column(gpu, "deviceId") ? "deviceId" : "NULL",
                nvs_sql_has_column(gpu, "streamId") ? "streamId" : "NULL", gpu_tables[which]);
            if (written < 0 || (size_t)written >= sizeof work - length)
                return false;
            length += (size_t)written;
        }
    export->api_launches = length > 0;
    int written;
    if (!export->api_launches)
        written = snprintf(sql, size, "%s, r.rowid FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r ORDER BY start, r.rowid",
                           query.sql);
    else
        written = snprintf(sql, size,
            "%s, r.rowid, w.src, w.rid, w.wstart, w.wend, w.wpid, w.wdevice, w.wstream, "
            "EXISTS (SELECT 1 FROM temp.nvtxshim_async AS a WHERE a.source = w.src AND a.work = w.rid) "
            "FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r LEFT JOIN (%s) AS w ON r.correlationId != 0 "
            "AND w.wcorrelation = r.correlationId "
            "AND ((ifnull(w.wpid, 0) >> 24) & 16777215) = ((ifnull(r.globalTid, 0) >> 24) & 16777215) "
            "ORDER BY start, r.rowid, w.wstart, w.src, w.rid", query.sql, work);
    return written > 0 && (size_t)written < size;
}

/* The query of SOURCE, prepared; NULL after a line on stderr. */
static sqlite3_stmt *source_query(struct nvs_export *export, int source)
{
    struct database *database = &export->database;
    const struct columns *columns = &export->columns[source];
    static char sql[8192];
    struct query query;
    switch (source) {
    case NVS_EXPORT_PROJECTIONS:
        return nvs_sql_prepare(database, "SELECT start, \"end\", pid, tid, name, domain, ops, rowid "
                                         "FROM temp.nvtxshim_projections ORDER BY start, range, seq");
    case NVS_EXPORT_NVTX:
        nvtx_query(export, &query, "FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60) ORDER BY start, rowid");
        return nvs_sql_prepare(database, query.sql);
    case NVS_EXPORT_OSRT: {
        static const char *const wanted[] = {"start", "end", "nameId", "globalTid", "returnValue"};
        nvs_sql_query_start(&query);
        for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
            nvs_sql_query_column(&query, columns, wanted[i]);
        query_append(&query, ", rowid");
        nvs_sql_query_end(&query, "FROM OSRT_API ORDER BY start, rowid");
        return nvs_sql_prepare(database, query.sql);
    }
    case NVS_EXPORT_API:
        if (!api_query(export, sql, sizeof sql)) {
            nvs_events_say(database->options, "%s: the CUDA API calls' query is too long", database->path);
            return NULL;
        }
        return nvs_sql_prepare(database, sql);
    case NVS_EXPORT_SCHED: {
        static const char *const wanted[] = {"start", "cpu", "isSchedIn", "globalTid", "threadState",
                                             "threadBlock"};
        nvs_sql_query_start(&query);
        for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
            nvs_sql_query_column(&query, columns, wanted[i]);
        /* each switch with the thread's next (rowid: of two at one time, the one nsys wrote first) */
        query_append(&query, ", rowid, lead(start) OVER thread, lead(isSchedIn) OVER thread");
        nvs_sql_query_end(&query, "FROM SCHED_EVENTS WHERE globalTid IS NOT NULL "
                                  "WINDOW thread AS (PARTITION BY globalTid ORDER BY start, rowid) "
                                  "ORDER BY start, globalTid, rowid");
        return nvs_sql_prepare(database, query.sql);
    }
    default: {
        static const char *const wanted[] = {"start", "end", "globalPid", "deviceId", "streamId",
                                             "correlationId", "demangledName", "shortName", "bytes",
                                             "copyKind", "srcKind", "dstKind", "value"};
        nvs_sql_query_start(&query);
        for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
            nvs_sql_query_column(&query, columns, wanted[i]);
        query_append(&query, ", rowid");
        char rest[128];
        snprintf(rest, sizeof rest, "FROM \"%s\" ORDER BY start, rowid", gpu_tables[source - NVS_EXPORT_KERNEL]);
        nvs_sql_query_end(&query, rest);
        return nvs_sql_prepare(database, query.sql);
    }
    }
}

static void end_pass(struct nvs_export *export)
{
    for (int i = 0; i < NVS_EXPORT_SOURCES; i++) {
        struct cursor *cursor = &export->cursors[i];
        sqlite3_finalize(cursor->statement);
        cursor->statement = NULL;
        cursor->on_row = cursor->ready = cursor->done = false;
    }
    export->last = -1;
}

int nvs_export_begin(struct nvs_export *export, unsigned wanted)
{
    end_pass(export);
    export->wanted = wanted;
    /* a pass that reads a table reads all of it: what it left out, the most any pass counted */
    export->said_unnamed = export->unnamed > export->said_unnamed ? export->unnamed : export->said_unnamed;
    export->said_open = export->open > export->said_open ? export->open : export->said_open;
    export->said_unpaired = export->unpaired > export->said_unpaired ? export->unpaired : export->said_unpaired;
    export->unnamed = export->open = export->unpaired = 0;
    for (int i = 0; i < NVS_EXPORT_SOURCES; i++) {
        if (!(wanted & (1u << i)) || (i != NVS_EXPORT_PROJECTIONS && !export->present[i]))
            continue;
        struct cursor *cursor = &export->cursors[i];
        if (!(cursor->statement = source_query(export, i)))
            return -1;
        cursor->event.source = (enum nvs_export_source)i;
        int got = read_next(export, i);
        if (got < 0) {
            nvs_events_say(export->database.options, "out of memory reading %s", export->database.path);
            return -1;
        }
        cursor->ready = got > 0;
    }
    return 0;
}

int nvs_export_next(struct nvs_export *export, struct nvs_export_event *event)
{
    if (export->last >= 0) {
        int got = read_next(export, export->last);
        if (got < 0) {
            nvs_events_say(export->database.options, "out of memory reading %s", export->database.path);
            return -1;
        }
        export->cursors[export->last].ready = got > 0;
        export->last = -1;
    }
    int first = -1;
    for (int i = 0; i < NVS_EXPORT_SOURCES; i++)
        if (export->cursors[i].ready &&
            (first < 0 || export->cursors[i].event.event.start < export->cursors[first].event.event.start))
            first = i;
    if (first < 0)
        return 0;
    export->last = first;
    *event = export->cursors[first].event;
    return 1;
}

int nvs_export_mark_async(struct nvs_export *export, enum nvs_export_source source, int64_t rowid)
{
    sqlite3_stmt *statement = export->add_async;
    sqlite3_reset(statement);
    sqlite3_bind_int(statement, 1, (int)source);
    sqlite3_bind_int64(statement, 2, rowid);
    if (sqlite3_step(statement) != SQLITE_DONE) {
        nvs_events_say(export->database.options, "%s: %s", export->database.path, sqlite3_errmsg(export->database.db));
        return -1;
    }
    return 0;
}

/* ---- the NVTX projections: ranges open on their threads, the work of the calls inside ---- */

struct open_range {
    uint32_t pid, tid;
    int64_t start, end, rowid;
    char *name;
    const char *domain;
    struct row_span { uint32_t pid, tid; int64_t start, end; size_t operations; } *rows;
    size_t row_count, row_capacity;
};

static int add_projections(struct nvs_export *export, struct open_range *range)
{
    sqlite3_stmt *statement = export->add_projection;
    int status = 0;
    for (size_t i = 0; status == 0 && i < range->row_count; i++) {
        const struct row_span *row = &range->rows[i];
        sqlite3_reset(statement);
        sqlite3_bind_int64(statement, 1, row->start);
        sqlite3_bind_int64(statement, 2, row->end);
        sqlite3_bind_int64(statement, 3, row->pid);
        sqlite3_bind_int64(statement, 4, row->tid);
        sqlite3_bind_text(statement, 5, range->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(statement, 6, range->domain, -1, SQLITE_STATIC);
        sqlite3_bind_int64(statement, 7, (sqlite3_int64)row->operations);
        sqlite3_bind_int64(statement, 8, range->rowid);
        sqlite3_bind_int64(statement, 9, (sqlite3_int64)i);
        if (sqlite3_step(statement) != SQLITE_DONE) {
            nvs_events_say(export->database.options, "%s: %s", export->database.path,
                           sqlite3_errmsg(export->database.db));
            status = -1;
        }
    }
    free(range->name);
    free(range->rows);
    return status;
}

static bool add_to_span(struct open_range *range, const struct nvs_export_launch *work)
{
    struct row_span *row = NULL;
    for (size_t i = 0; i < range->row_count && !row; i++)
        if (range->rows[i].pid == work->pid && range->rows[i].tid == work->tid)
            row = &range->rows[i];
    if (!row) {
        struct row_span *rows = nvs_room_for_one(range->rows, range->row_count, &range->row_capacity, sizeof *rows, 4);
        if (!rows)
            return false;
        range->rows = rows;
        row = &rows[range->row_count++];
        *row = (struct row_span){work->pid, work->tid, work->start, work->end, 0};
    }
    if (work->start < row->start)
        row->start = work->start;
    if (work->end > row->end)
        row->end = work->end;
    row->operations++;
    return true;
}

int nvs_export_project(struct nvs_export *export)
{
    if (!export->present[NVS_EXPORT_NVTX] || !export->present[NVS_EXPORT_API])
        return 0;
    if (nvs_export_begin(export, 1u << NVS_EXPORT_NVTX | 1u << NVS_EXPORT_API) != 0)
        return -1;
    struct open_range *open = NULL;
    size_t count = 0, capacity = 0;
    struct nvs_export_event item;
    int got, status = 0;
    while (status == 0 && (got = nvs_export_next(export, &item)) > 0) {
        const struct nvs_event *event = &item.event;
        /* the ranges that ended before this event: no call inside them is still to come */
        for (size_t i = 0; status == 0 && i < count;)
            if (open[i].end < event->start) {
                status = add_projections(export, &open[i]);
                open[i] = open[--count];
            } else {
                i++;
            }
        if (item.source == NVS_EXPORT_NVTX) {
            /* nsys projects a range that ends on the thread that started it */
            if (event->kind != NVS_EVENT_RANGE || (event->end_tid != 0 && event->end_tid != event->tid) ||
                event->end < event->start)
                continue;
            struct open_range *grown = nvs_room_for_one(open, count, &capacity, sizeof *grown, 16);
            char *name = grown ? strdup(event->name) : NULL;
            if (!name) {
                if (grown)
                    open = grown;
                status = -1;
                nvs_events_say(export->database.options, "out of memory");
                break;
            }
            open = grown;
            open[count++] = (struct open_range){.pid = event->pid, .tid = event->tid, .start = event->start,
                                                .end = event->end, .rowid = item.rowid, .name = name,
                                                .domain = event->domain};
        } else if (item.launch_count) {
            for (size_t i = 0; i < count; i++) {
                struct open_range *range = &open[i];
                if (range->pid != event->pid || range->tid != event->tid || event->end > range->end)
                    continue;
                for (size_t w = 0; w < item.launch_count; w++)
                    if (!add_to_span(range, &item.launches[w])) {
                        nvs_events_say(export->database.options, "out of memory");
                        status = -1;
                        break;
                    }
            }
        }
    }
    if (got < 0)
        status = -1;
    for (size_t i = 0; i < count; i++)
        if (add_projections(export, &open[i]) != 0)
            status = -1;
    free(open);
    end_pass(export);
    return status;
}

void nvs_export_say_left_out(struct nvs_export *export)
{
    const struct nvs_load_options *options = export->database.options;
    if (!options->say_skipped)
        return;
    nvs_export_begin(export, 0);     /* the last pass's counts with the others' */
    export->unnamed = export->said_unnamed;
    export->open = export->said_open;
    export->unpaired = export->said_unpaired;
    if (export->unnamed || export->open)
        nvs_events_say(options, "left out %zu NVTX ranges never closed and %zu events without a message",
                       export->open, export->unnamed);
    if (export->unpaired)
        nvs_events_say(options, "SCHED_EVENTS: %zu switch%s in (or out) followed by another the same way, "
                       "left out", export->unpaired, export->unpaired == 1 ? "" : "es");
}

void nvs_export_close(struct nvs_export *export)
{
    if (!export)
        return;
    end_pass(export);
    for (int i = 0; i < NVS_EXPORT_SOURCES; i++) {
        free(export->cursors[i].name);
        free(export->cursors[i].args.bytes);
        free(export->cursors[i].launches);
    }
    struct database *database = &export->database;
    sqlite3_finalize(export->add_projection);
    sqlite3_finalize(export->add_async);
    sqlite3_finalize(database->string_lookup);
    if (database->string_cache)
        for (size_t i = 0; i < STRING_CACHE; i++)
            free(database->string_cache[i].text);
    free(database->string_cache);
    free(export->domains.items);
    free(export->categories.items);
    nvs_events_free(&export->names);
    sqlite3_close(database->db);
    free(export);
}
