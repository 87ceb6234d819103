/* An nsys export's rows read as events (sqlite_rows.h), one table's cursor at a
 * time: NVTX ranges and marks with their args, OS runtime and CUDA API calls, GPU
 * work, thread states, the projections; sqlite_stream.c merges the cursors. */
#define _GNU_SOURCE
#include "readers/sqlite_rows.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

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
        *event = (struct nvs_event){ 0 };
        event->name = name;
        event->kind = mark ? NVS_EVENT_MARK : NVS_EVENT_RANGE;
        event->start = sqlite3_column_int64(statement, N_START);
        event->end = mark ? event->start : sqlite3_column_int64(statement, N_END);
        event->domain = nvs_sql_domain_name(&export->database, &export->domains, statement,
                                            N_DOMAIN);
        int64_t global = nvs_sql_is_null(statement, N_TID) ? 0
                                                           : sqlite3_column_int64(statement, N_TID);
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
        if (!nvs_sql_is_null(statement, N_CATEGORY) &&
            sqlite3_column_int64(statement, N_CATEGORY) != 0) {
            int64_t domain = nvs_sql_is_null(statement, N_DOMAIN)
                ? 0
                : sqlite3_column_int64(statement, N_DOMAIN);
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
        } else if (payload == N_PAYLOAD) { /* the first column, uint64Value: unsigned */
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
    *event = (struct nvs_event){ 0 };
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
    if (named < 0 ||
        (named == 0 && !set_name(cursor, export->unknown_os_call, strlen(export->unknown_os_call))))
        return -1;
    cursor->args.length = 0;
    if (!nvs_sql_is_null(statement, 4))
        nvs_json_text_add(&cursor->args, "\"return\":%lld",
                          (long long)sqlite3_column_int64(statement, 4));
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
        nvs_json_text_add(args, "\"correlation\":%lld",
                          (long long)sqlite3_column_int64(statement, 4));
    }
    if (!nvs_sql_is_null(statement, 5))
        nvs_json_text_add(args, "%s\"return\":%lld", args->length ? "," : "",
                          (long long)sqlite3_column_int64(statement, 5));
    const char *class = nvs_sql_is_null(statement, 6)
        ? NULL
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
        struct nvs_export_launch *launches = nvs_room_for_one(
            cursor->launches, count, &cursor->launch_capacity, sizeof *launches, 8);
        if (!launches)
            return -1;
        cursor->launches = launches;
        cursor->event.launches = launches;
        int64_t device = sqlite3_column_int64(statement, A_DEVICE),
                stream = sqlite3_column_int64(statement, A_STREAM);
        launches[count] = (struct nvs_export_launch){
            .source = (enum nvs_export_source)sqlite3_column_int(statement, A_SOURCE),
            .rowid = sqlite3_column_int64(statement, A_WORK),
            .start = sqlite3_column_int64(statement, A_START),
            .end = sqlite3_column_int64(statement, A_END),
            .pid = nvs_sql_is_null(statement, A_PID)
                ? 0
                : nvs_global_pid(sqlite3_column_int64(statement, A_PID)),
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
    *event = (struct nvs_event){ 0 };
    event->kind = which == GPU_KERNEL ? NVS_EVENT_GPU_KERNEL
        : which == GPU_COPY           ? NVS_EVENT_GPU_COPY
                                      : NVS_EVENT_GPU_SET;
    event->start = sqlite3_column_int64(statement, 0);
    event->end = sqlite3_column_int64(statement, 1);
    event->domain = export->category[NVS_EXPORT_KERNEL + which];
    event->pid = nvs_sql_is_null(statement, 2) ? 0
                                               : nvs_global_pid(sqlite3_column_int64(statement, 2));
    int64_t device = sqlite3_column_int64(statement, 3),
            stream = sqlite3_column_int64(statement, 4);
    event->tid = nvs_sql_stream_row(device, stream);
    struct nvs_json_text *args = &cursor->args;
    args->length = 0;
    nvs_json_text_add(args, "\"device\":%" PRId64 ",\"stream\":%" PRId64, device, stream);
    if (!nvs_sql_is_null(statement, 5)) {
        event->correlation = (uint32_t)sqlite3_column_int64(statement, 5);
        nvs_json_text_add(args, ",\"correlation\":%lld",
                          (long long)sqlite3_column_int64(statement, 5));
    }
    char name[160];
    if (which == GPU_KERNEL) {
        int named = name_column(export, cursor, 6);
        if (named == 0)
            named = name_column(export, cursor, 7);
        if (named < 0 ||
            (named == 0 &&
             !set_name(cursor, export->unnamed_kernel, strlen(export->unnamed_kernel))))
            return -1;
    } else {
        if (!nvs_sql_is_null(statement, 8))
            nvs_json_text_add(args, ",\"bytes\":%lld",
                              (long long)sqlite3_column_int64(statement, 8));
        if (which == GPU_COPY) {
            int64_t kind = sqlite3_column_int64(statement, 9);
            const char *label = nvs_sql_label(&export->database, &export->copy_labels, kind);
            snprintf(name, sizeof name, "CUDA memcpy %s", label ? label : nvs_sql_copy_kind(kind));
            for (int side = 0; side < 2; side++) {
                if (nvs_sql_is_null(statement, 10 + side))
                    continue;
                const char *memory_label = nvs_sql_label(
                    &export->database, &export->memory_labels,
                    sqlite3_column_int64(statement, 10 + side));
                if (memory_label)
                    nvs_json_text_add_string_member(args, side ? "dst" : "src", memory_label);
            }
        } else {
            snprintf(name, sizeof name, "CUDA memset");
            if (!nvs_sql_is_null(statement, 12))
                nvs_json_text_add(args, ",\"value\":%lld",
                                  (long long)sqlite3_column_int64(statement, 12));
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
            continue; /* the thread's last switch */
        bool switch_in = sqlite3_column_int64(statement, S_IN) != 0;
        if ((sqlite3_column_int64(statement, S_NEXT_IN) != 0) == switch_in) {
            export->unpaired++;
            continue;
        }
        int64_t global = sqlite3_column_int64(statement, S_TID);
        *event = (struct nvs_event){ 0 };
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
                nvs_json_text_add(args, "\"cpu\":%lld",
                                  (long long)sqlite3_column_int64(statement, S_CPU));
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
    *event = (struct nvs_event){ 0 };
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

int nvs_export_read(struct nvs_export *export, int source)
{
    struct cursor *cursor = &export->cursors[source];
    switch (source) {
    case NVS_EXPORT_PROJECTIONS: return read_projection(export, cursor);
    case NVS_EXPORT_NVTX: return read_nvtx(export, cursor);
    case NVS_EXPORT_OSRT: return read_osrt(export, cursor);
    case NVS_EXPORT_API: return read_api(export, cursor);
    case NVS_EXPORT_SCHED: return read_sched(export, cursor);
    default: return read_gpu(export, cursor, (enum gpu_table)(source - NVS_EXPORT_KERNEL));
    }
}
