/* An nsys SQLite export read into the event model (sqlite_reader.h). The
 * tables are read defensively: their columns differ between nsys versions, so
 * each query is built from PRAGMA table_info, and what is missing is said. */
#define _GNU_SOURCE
#include "sqlite_reader.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "trace_json.h"

#include "sqlite_names.h"
#include "sqlite_tables.h"

static int load_strings(struct database *database)
{
    if (!nvs_sql_has_table(database, "StringIds"))
        return 0;
    sqlite3_stmt *statement = nvs_sql_prepare(database, "SELECT max(id) FROM StringIds");
    if (!statement)
        return -1;
    sqlite3_int64 largest = sqlite3_step(statement) == SQLITE_ROW ? sqlite3_column_int64(statement, 0) : -1;
    sqlite3_finalize(statement);
    if (largest < 0)
        return 0;
    if (largest > 100000000) {
        nvs_events_say(database->options, "%s: StringIds ids up to %lld: not read", database->path,
            (long long)largest);
        return 0;
    }
    database->string_count = (size_t)largest + 1;
    database->strings = calloc(database->string_count, sizeof *database->strings);
    if (!database->strings) {
        nvs_events_say(database->options, "out of memory");
        return -1;
    }
    if (!(statement = nvs_sql_prepare(database, "SELECT id, value FROM StringIds")))
        return -1;
    while (sqlite3_step(statement) == SQLITE_ROW) {
        sqlite3_int64 id = sqlite3_column_int64(statement, 0);
        const unsigned char *value = sqlite3_column_text(statement, 1);
        if (id >= 0 && (size_t)id < database->string_count && value)
            database->strings[id] = nvs_events_intern(database->events, (const char *)value,
                                                      (size_t)sqlite3_column_bytes(statement, 1));
    }
    sqlite3_finalize(statement);
    return 0;
}

/* NVTX event types in nsys exports. */
enum {
    NVTX_CATEGORY_NAME = 33,
    NVTX_MARK = 34,
    NVTX_THREAD_NAME = 39,
    NVTX_PUSH_POP = 59,
    NVTX_START_END = 60,
    NVTX_DOMAIN_CREATE = 75,
};

struct domain_names {
    struct { int64_t id; const char *name; } *items;
    size_t count, capacity;
};

struct category_names {
    struct { int64_t domain, id; const char *name; } *items;
    size_t count, capacity;
};

static const char *domain_name(struct database *database, const struct domain_names *domains,
                               sqlite3_stmt *statement, int column)
{
    if (nvs_sql_is_null(statement, column) || sqlite3_column_int64(statement, column) == 0)
        return nvs_events_intern_string(database->events, "default");
    int64_t id = sqlite3_column_int64(statement, column);
    for (size_t i = 0; i < domains->count; i++)
        if (domains->items[i].id == id)
            return domains->items[i].name;
    char name[32];
    snprintf(name, sizeof name, "domain %" PRId64, id);
    return nvs_events_intern_string(database->events, name);
}

static const char *category_name(const struct category_names *categories, int64_t domain, int64_t id)
{
    for (size_t i = 0; i < categories->count; i++)
        if (categories->items[i].domain == domain && categories->items[i].id == id)
            return categories->items[i].name;
    return NULL;
}

/* The payload columns of NVTX_EVENTS, in the order nsys fills them. */
static const char *const payload_columns[] = {
    "uint64Value", "int64Value", "doubleValue", "uint32Value", "int32Value", "floatValue",
};
#define PAYLOADS (sizeof payload_columns / sizeof payload_columns[0])

/* Columns of the NVTX query, in order. */
enum {
    N_START, N_END, N_TYPE, N_TEXT, N_TEXT_ID, N_TID, N_DOMAIN, N_CATEGORY, N_COLOR, N_END_TID,
    N_PAYLOAD,
};

static int load_nvtx(struct database *database)
{
    const struct nvs_load_options *options = database->options;
    if (!nvs_sql_has_table(database, "NVTX_EVENTS")) {
        if (options->say_skipped)
            nvs_events_say(options, "no NVTX_EVENTS table: no NVTX ranges or marks (profile with -t nvtx "
                           "for them)");
        return 0;
    }
    struct columns columns;
    nvs_sql_read_columns(database, "NVTX_EVENTS", &columns);
    if (!nvs_sql_has_column(&columns, "start") || !nvs_sql_has_column(&columns, "eventType")) {
        nvs_events_say(options, "%s: NVTX_EVENTS has no %s column: NVTX events skipped", database->path,
            nvs_sql_has_column(&columns, "start") ? "eventType" : "start");
        return 0;
    }
    if (!nvs_sql_has_column(&columns, "text") && !nvs_sql_has_column(&columns, "textId")) {
        nvs_events_say(options, "%s: NVTX_EVENTS has neither text nor textId: NVTX events skipped",
            database->path);
        return 0;
    }
    bool everything = options->what == NVS_LOAD_EVERYTHING;
    if (options->say_skipped) {
        if (!nvs_sql_has_column(&columns, "end"))
            nvs_events_say(options, "NVTX_EVENTS has no end column: NVTX ranges skipped, marks kept");
        if (!nvs_sql_has_column(&columns, "domainId"))
            nvs_events_say(options, "NVTX_EVENTS has no domainId column: every event in domain \"default\"");
        if (!nvs_sql_has_column(&columns, "globalTid"))
            nvs_events_say(options, "NVTX_EVENTS has no globalTid column: every event on thread 0");
        if (everything && !nvs_sql_has_column(&columns, "category"))
            nvs_events_say(options, "NVTX_EVENTS has no category column: categories skipped");
    }
    struct query query;
    nvs_sql_query_start(&query);
    static const char *const wanted[] = {"start", "end", "eventType", "text", "textId",
                                         "globalTid", "domainId", "category", "color",
                                         "endGlobalTid"};
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
        nvs_sql_query_column(&query, &columns, wanted[i]);
    for (size_t i = 0; i < PAYLOADS; i++)
        nvs_sql_query_column(&query, &columns, payload_columns[i]);
    nvs_sql_query_end(&query, "FROM NVTX_EVENTS WHERE eventType IN (33, 75, 39) ORDER BY eventType DESC");

    /* Domains, category names and NVTX thread names first: ranges refer to them. */
    struct domain_names domains = {0};
    struct category_names categories = {0};
    int status = 0;
    sqlite3_stmt *statement = nvs_sql_prepare(database, query.sql);
    if (!statement)
        return -1;
    while (sqlite3_step(statement) == SQLITE_ROW) {
        int type = sqlite3_column_int(statement, N_TYPE);
        const char *text = nvs_sql_string_column(database, statement, N_TEXT);
        if (!text)
            text = nvs_sql_string_column(database, statement, N_TEXT_ID);
        if (!text)
            continue;
        if (type == NVTX_DOMAIN_CREATE && !nvs_sql_is_null(statement, N_DOMAIN)) {
            if (!nvs_sql_grow((void **)&domains.items, &domains.capacity, domains.count, sizeof *domains.items)) {
                status = -1;
                break;
            }
            domains.items[domains.count].id = sqlite3_column_int64(statement, N_DOMAIN);
            domains.items[domains.count++].name = text;
        } else if (type == NVTX_CATEGORY_NAME && !nvs_sql_is_null(statement, N_CATEGORY)) {
            if (!nvs_sql_grow((void **)&categories.items, &categories.capacity, categories.count,
                      sizeof *categories.items)) {
                status = -1;
                break;
            }
            categories.items[categories.count].domain =
                nvs_sql_is_null(statement, N_DOMAIN) ? 0 : sqlite3_column_int64(statement, N_DOMAIN);
            categories.items[categories.count].id = sqlite3_column_int64(statement, N_CATEGORY);
            categories.items[categories.count++].name = text;
        } else if (type == NVTX_THREAD_NAME && everything && !nvs_sql_is_null(statement, N_TID)) {
            int64_t global = sqlite3_column_int64(statement, N_TID);
            if (!nvs_events_add_name(database->events, nvs_global_pid(global), nvs_global_tid(global),
                                     text, true))
                status = -1;
        }
    }
    sqlite3_finalize(statement);

    size_t unnamed = 0, open = 0;
    query.sql[query.length] = '\0';
    nvs_sql_query_end(&query, "FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60)");
    if (status == 0 && !(statement = nvs_sql_prepare(database, query.sql)))
        status = -1;
    struct nvs_json_text args = {0};
    while (status == 0 && sqlite3_step(statement) == SQLITE_ROW) {
        int type = sqlite3_column_int(statement, N_TYPE);
        const char *name = nvs_sql_string_column(database, statement, N_TEXT);
        if (!name)
            name = nvs_sql_string_column(database, statement, N_TEXT_ID);
        if (!name) {
            unnamed++;
            continue;
        }
        bool mark = type == NVTX_MARK;
        if (!mark && nvs_sql_is_null(statement, N_END)) {
            open++;
            continue;
        }
        struct nvs_event *event = nvs_events_add(database->events);
        if (!event) {
            status = -1;
            break;
        }
        event->kind = mark ? NVS_EVENT_MARK : NVS_EVENT_RANGE;
        event->start = sqlite3_column_int64(statement, N_START);
        event->end = mark ? event->start : sqlite3_column_int64(statement, N_END);
        event->name = name;
        event->domain = domain_name(database, &domains, statement, N_DOMAIN);
        int64_t global = nvs_sql_is_null(statement, N_TID) ? 0 : sqlite3_column_int64(statement, N_TID);
        event->pid = nvs_global_pid(global);
        event->tid = nvs_global_tid(global);
        event->async = type == NVTX_START_END;
        /* endGlobalTid: the thread that ended it (NULL, in the exports seen here, where that
         * is the thread that started it) */
        if (event->async && !nvs_sql_is_null(statement, N_END_TID))
            event->end_tid = nvs_global_tid(sqlite3_column_int64(statement, N_END_TID));
        /* the payload: the first of its columns that is there (report reads it) */
        for (size_t i = 0; i < PAYLOADS; i++) {
            int column = N_PAYLOAD + (int)i;
            if (nvs_sql_is_null(statement, column))
                continue;
            if (sqlite3_column_type(statement, column) == SQLITE_FLOAT) {
                double value = sqlite3_column_double(statement, column);
                if (!(value > -9.2e18 && value < 9.2e18))
                    break;
                event->payload = (int64_t)(value < 0 ? value - 0.5 : value + 0.5);
            } else {
                event->payload = sqlite3_column_int64(statement, column);
            }
            event->has_payload = true;
            break;
        }
        if (!everything)
            continue;
        /* args as the recorder writes them: category, payload, colour (marks only) */
        args.length = 0;
        if (!nvs_sql_is_null(statement, N_CATEGORY) && sqlite3_column_int64(statement, N_CATEGORY) != 0) {
            int64_t domain = nvs_sql_is_null(statement, N_DOMAIN) ? 0 : sqlite3_column_int64(statement, N_DOMAIN);
            int64_t id = sqlite3_column_int64(statement, N_CATEGORY);
            const char *category = category_name(&categories, domain, id);
            if (category)
                nvs_json_text_add_string_member(&args, "category", category);
            else
                nvs_json_text_add(&args, "%s\"category\":%" PRId64, args.length ? "," : "", id);
        }
        for (size_t i = 0; i < PAYLOADS; i++) {
            int column = N_PAYLOAD + (int)i;
            if (nvs_sql_is_null(statement, column))
                continue;
            if (sqlite3_column_type(statement, column) == SQLITE_FLOAT) {
                double value = sqlite3_column_double(statement, column);
                nvs_json_text_add(&args, "%s\"payload\":%.17g", args.length ? "," : "",
                         value == value && value - value == 0 ? value : 0.0);
            } else if (i == 0) {
                nvs_json_text_add(&args, "%s\"payload\":%" PRIu64, args.length ? "," : "",
                         (uint64_t)sqlite3_column_int64(statement, column));
            } else {
                nvs_json_text_add(&args, "%s\"payload\":%" PRId64, args.length ? "," : "",
                         (int64_t)sqlite3_column_int64(statement, column));
            }
            break;
        }
        if (mark && !nvs_sql_is_null(statement, N_COLOR)) {
            uint32_t color = (uint32_t)sqlite3_column_int64(statement, N_COLOR) & 0xFFFFFFu;
            nvs_json_text_add(&args, "%s\"color\":\"#%06x\"", args.length ? "," : "", color);
        }
        if (args.failed) {
            status = -1;
            break;
        }
        if (args.length)
            event->args = nvs_events_intern(database->events, args.bytes, args.length);
    }
    if (statement)
        sqlite3_finalize(statement);
    free(args.bytes);
    free(domains.items);
    free(categories.items);
    if (status)
        nvs_events_say(options, "out of memory reading %s", database->path);
    else if (options->say_skipped && (unnamed || open))
        nvs_events_say(options, "left out %zu NVTX ranges never closed and %zu events without a message",
            open, unnamed);
    return status;
}

/* A row of a table of calls (OSRT_API, CUPTI_ACTIVITY_KIND_RUNTIME) queried
 * as start, end, name, globalTid first: a new event of KIND in CATEGORY on the
 * calling thread, its end its start when it has none. NULL when out of memory. */
static struct nvs_event *add_call(struct database *database, sqlite3_stmt *statement,
                                  enum nvs_event_kind kind, const char *category)
{
    struct nvs_event *event = category ? nvs_events_add(database->events) : NULL;
    if (!event)
        return NULL;
    event->kind = kind;
    event->start = sqlite3_column_int64(statement, 0);
    event->end = nvs_sql_is_null(statement, 1) ? event->start : sqlite3_column_int64(statement, 1);
    event->domain = category;
    int64_t global = nvs_sql_is_null(statement, 3) ? 0 : sqlite3_column_int64(statement, 3);
    event->pid = nvs_global_pid(global);
    event->tid = nvs_global_tid(global);
    return event;
}

/* OS runtime calls: name from StringIds, on the calling thread. */
static int load_os_calls(struct database *database)
{
    struct columns columns;
    static const char *const needed[] = {"start", "end", "nameId"};
    if (!nvs_sql_require_table(database, "OSRT_API", &columns, needed, 3, "OS runtime calls",
                       "profile with -t osrt for them"))
        return 0;
    static const char *const wanted[] = {"start", "end", "nameId", "globalTid", "returnValue"};
    sqlite3_stmt *statement = nvs_sql_select_columns(database, &columns, wanted, sizeof wanted / sizeof wanted[0],
                                             "OSRT_API", "");
    if (!statement)
        return -1;
    const char *category = nvs_events_intern_string(database->events, NVS_CATEGORY_OS_CALL);
    const char *unknown = nvs_events_intern_string(database->events, "[unknown OS call]");
    char args[64];
    int status = 0;
    while (sqlite3_step(statement) == SQLITE_ROW) {
        struct nvs_event *event = add_call(database, statement, NVS_EVENT_OS_CALL, category);
        if (!event || !unknown) {
            status = -1;
            break;
        }
        event->name = nvs_sql_string_column(database, statement, 2);
        if (!event->name)
            event->name = unknown;
        if (!nvs_sql_is_null(statement, 4)) {
            snprintf(args, sizeof args, "\"return\":%lld", (long long)sqlite3_column_int64(statement, 4));
            event->args = nvs_events_intern_string(database->events, args);
        }
    }
    sqlite3_finalize(statement);
    return status;
}

/* The label of an ENUM_* table's id, when the table is there; small ids are
 * looked up once (a query per copy would cost more than the copy's row). */
#define LABELS 64

struct labels {
    const char *table;
    bool present;
    bool looked[LABELS];
    const char *label[LABELS];
};

static const char *enum_label(struct database *database, const char *table, int64_t id);

static const char *cached_label(struct database *database, struct labels *labels, int64_t id)
{
    if (!labels->present)
        return NULL;
    if (id < 0 || id >= LABELS)
        return enum_label(database, labels->table, id);
    if (!labels->looked[id]) {
        labels->label[id] = enum_label(database, labels->table, id);
        labels->looked[id] = true;
    }
    return labels->label[id];
}

static const char *enum_label(struct database *database, const char *table, int64_t id)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT label FROM \"%s\" WHERE id = %" PRId64, table, id);
    sqlite3_stmt *statement;
    if (sqlite3_prepare_v2(database->db, sql, -1, &statement, NULL) != SQLITE_OK)
        return NULL;
    const char *label = NULL;
    if (sqlite3_step(statement) == SQLITE_ROW && sqlite3_column_text(statement, 0))
        label = nvs_events_intern_string(database->events, (const char *)sqlite3_column_text(statement, 0));
    sqlite3_finalize(statement);
    return label;
}

/* CUPTI's copy kinds, for exports without ENUM_CUDA_MEMCPY_OPER. */
static const char *copy_kind(int64_t kind)
{
    static const char *const kinds[] = {
        "Unknown", "Host-to-Device", "Device-to-Host", "Host-to-Array", "Array-to-Host",
        "Array-to-Array", "Array-to-Device", "Device-to-Array", "Device-to-Device",
        "Host-to-Host", "Peer-to-Peer",
    };
    return kind >= 0 && kind < (int64_t)(sizeof kinds / sizeof kinds[0]) ? kinds[kind] : "Unknown";
}

/* GPU work goes on a row of its own per device and stream, in the process that
 * issued it: a thread id above any Linux one (at most 2^22). */
static uint32_t stream_row(int64_t device, int64_t stream)
{
    return 0x800000u | ((uint32_t)device & 0x7Fu) << 16 | ((uint32_t)stream & 0xFFFFu);
}

enum gpu_table { GPU_KERNEL, GPU_COPY, GPU_SET };

static int load_gpu(struct database *database, enum gpu_table which)
{
    static const char *const tables[] = {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                                         "CUPTI_ACTIVITY_KIND_MEMSET"};
    static const char *const what[] = {"CUDA kernels", "CUDA memory copies", "CUDA memsets"};
    static const char *const categories[] = {NVS_CATEGORY_GPU_KERNEL, NVS_CATEGORY_GPU_COPY,
                                             NVS_CATEGORY_GPU_SET};
    const struct nvs_load_options *options = database->options;
    const char *table = tables[which];
    struct columns columns;
    static const char *const needed[] = {"start", "end"};
    if (!nvs_sql_require_table(database, table, &columns, needed, 2, what[which],
                       "none ran, or not profiled with -t cuda"))
        return 0;
    if (options->say_skipped) {
        if (!nvs_sql_has_column(&columns, "globalPid"))
            nvs_events_say(options, "%s has no globalPid column: %s shown in process 0", table, what[which]);
        if (which == GPU_KERNEL && !nvs_sql_has_column(&columns, "demangledName") &&
            !nvs_sql_has_column(&columns, "shortName"))
            nvs_events_say(options, "%s has no demangledName or shortName column: kernels unnamed", table);
    }
    static const char *const wanted[] = {"start", "end", "globalPid", "deviceId", "streamId",
                                         "correlationId", "demangledName", "shortName", "bytes",
                                         "copyKind", "srcKind", "dstKind", "value"};
    sqlite3_stmt *statement = nvs_sql_select_columns(database, &columns, wanted, sizeof wanted / sizeof wanted[0],
                                             table, "");
    if (!statement)
        return -1;
    const char *category = nvs_events_intern_string(database->events, categories[which]);
    struct labels copy_labels = {.table = "ENUM_CUDA_MEMCPY_OPER"};
    struct labels memory_labels = {.table = "ENUM_CUDA_MEM_KIND"};
    copy_labels.present = nvs_sql_has_table(database, copy_labels.table);
    memory_labels.present = nvs_sql_has_table(database, memory_labels.table);
    struct nvs_json_text args = {0};
    int status = 0;
    uint32_t last_pid = UINT32_MAX, last_row = UINT32_MAX;
    while (sqlite3_step(statement) == SQLITE_ROW) {
        struct nvs_event *event = nvs_events_add(database->events);
        if (!event) {
            status = -1;
            break;
        }
        event->kind = which == GPU_KERNEL ? NVS_EVENT_GPU_KERNEL
                      : which == GPU_COPY ? NVS_EVENT_GPU_COPY : NVS_EVENT_GPU_SET;
        event->start = sqlite3_column_int64(statement, 0);
        event->end = sqlite3_column_int64(statement, 1);
        event->domain = category;
        event->pid = nvs_sql_is_null(statement, 2) ? 0 : nvs_global_pid(sqlite3_column_int64(statement, 2));
        int64_t device = sqlite3_column_int64(statement, 3), stream = sqlite3_column_int64(statement, 4);
        event->tid = stream_row(device, stream);
        if (event->pid != last_pid || event->tid != last_row) {
            char row[64];
            snprintf(row, sizeof row, "CUDA stream %" PRId64 " (device %" PRId64 ")", stream, device);
            if (!nvs_events_add_name(database->events, event->pid, event->tid,
                                     nvs_events_intern_string(database->events, row), false))
                status = -1;
            last_pid = event->pid;
            last_row = event->tid;
        }
        args.length = 0;
        nvs_json_text_add(&args, "\"device\":%" PRId64 ",\"stream\":%" PRId64, device, stream);
        if (!nvs_sql_is_null(statement, 5)) {
            event->correlation = (uint32_t)sqlite3_column_int64(statement, 5);
            nvs_json_text_add(&args, ",\"correlation\":%lld",
                              (long long)sqlite3_column_int64(statement, 5));
        }
        char name[160];
        if (which == GPU_KERNEL) {
            const char *kernel = nvs_sql_string_column(database, statement, 6);
            if (!kernel)
                kernel = nvs_sql_string_column(database, statement, 7);
            event->name = kernel ? kernel : nvs_events_intern_string(database->events, "[CUDA kernel]");
        } else {
            if (!nvs_sql_is_null(statement, 8))
                nvs_json_text_add(&args, ",\"bytes\":%lld",
                                  (long long)sqlite3_column_int64(statement, 8));
            if (which == GPU_COPY) {
                int64_t kind = sqlite3_column_int64(statement, 9);
                const char *label = cached_label(database, &copy_labels, kind);
                snprintf(name, sizeof name, "CUDA memcpy %s", label ? label : copy_kind(kind));
                for (int side = 0; side < 2; side++) {
                    if (nvs_sql_is_null(statement, 10 + side))
                        continue;
                    int64_t memory = sqlite3_column_int64(statement, 10 + side);
                    const char *memory_label = cached_label(database, &memory_labels, memory);
                    if (memory_label)
                        nvs_json_text_add_string_member(&args, side ? "dst" : "src", memory_label);
                }
            } else {
                snprintf(name, sizeof name, "CUDA memset");
                if (!nvs_sql_is_null(statement, 12))
                    nvs_json_text_add(&args, ",\"value\":%lld",
                                      (long long)sqlite3_column_int64(statement, 12));
            }
            event->name = nvs_events_intern_string(database->events, name);
        }
        if (args.failed || !event->name || !category) {
            status = -1;
            break;
        }
        event->args = nvs_events_intern(database->events, args.bytes, args.length);
    }
    sqlite3_finalize(statement);
    free(args.bytes);
    return status;
}

/* An API name as the program called it: nsys appends the CUDA version that
 * introduced the entry point (cudaLaunchKernel_v7000, cudaMemcpy_v3020), and
 * the per-thread default stream's twins end _ptsz or _ptds. The driver's own
 * _v2 (cuMemcpyHtoD_v2, a symbol of its own) is kept: 4 digits or more are
 * a version, fewer are part of the name. */
static size_t api_name_length(const char *name)
{
    size_t length = strlen(name);
    for (bool cut = true; cut;) {
        cut = false;
        size_t digits = 0;
        while (digits < length && name[length - 1 - digits] >= '0' && name[length - 1 - digits] <= '9')
            digits++;
        if (digits >= 4 && length > digits + 2 && name[length - digits - 2] == '_' &&
            name[length - digits - 1] == 'v') {
            length -= digits + 2;
            cut = true;
        }
        if (length > 5 && (memcmp(name + length - 5, "_ptsz", 5) == 0 ||
                           memcmp(name + length - 5, "_ptds", 5) == 0)) {
            length -= 5;
            cut = true;
        }
    }
    return length;
}

/* CUDA API calls (CUPTI_ACTIVITY_KIND_RUNTIME holds the runtime's and the
 * driver's), on the calling thread, with the correlation id that joins each
 * to the GPU work it launched. */
static int load_cuda_api(struct database *database)
{
    static const char *const table = "CUPTI_ACTIVITY_KIND_RUNTIME";
    const struct nvs_load_options *options = database->options;
    struct columns columns;
    static const char *const needed[] = {"start", "end"};
    if (!nvs_sql_require_table(database, table, &columns, needed, 2, "CUDA API calls",
                       "none made, or not profiled with -t cuda"))
        return 0;
    /* Each column missing, and what goes without it. */
    static const struct { const char *column, *without; } optional[] = {
        {"nameId", "CUDA API calls unnamed"},
        {"globalTid", "CUDA API calls shown on thread 0 of process 0"},
        {"correlationId", "no launch arrows and no NVTX projections onto the GPU"},
        {"returnValue", "CUDA API calls without their return values"},
        {"eventClass", "CUDA API calls not told apart as runtime or driver calls"},
    };
    if (options->say_skipped)
        for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++)
            if (!nvs_sql_has_column(&columns, optional[i].column))
                nvs_events_say(options, "%s has no %s column: %s", table, optional[i].column,
                               optional[i].without);
    static const char *const wanted[] = {"start", "end", "nameId", "globalTid", "correlationId",
                                         "returnValue", "eventClass"};
    sqlite3_stmt *statement = nvs_sql_select_columns(database, &columns, wanted, sizeof wanted / sizeof wanted[0],
                                             table, "");
    if (!statement)
        return -1;
    const char *category = nvs_events_intern_string(database->events, NVS_CATEGORY_CUDA_API);
    const char *unknown = nvs_events_intern_string(database->events, "[CUDA API call]");
    struct labels classes = {.table = "ENUM_NSYS_EVENT_CLASS"};
    classes.present = nvs_sql_has_table(database, classes.table);
    /* The names are few (one per entry point): each is cut once. */
    const char *last_name = NULL, *last_cut = NULL;
    struct nvs_json_text args = {0};
    int status = 0;
    while (sqlite3_step(statement) == SQLITE_ROW) {
        struct nvs_event *event = add_call(database, statement, NVS_EVENT_CUDA_API, category);
        if (!event || !unknown) {
            status = -1;
            break;
        }
        const char *name = nvs_sql_string_column(database, statement, 2);
        if (name && name != last_name) {
            last_name = name;
            last_cut = nvs_events_intern(database->events, name, api_name_length(name));
            if (!last_cut) {
                status = -1;
                break;
            }
        }
        event->name = name ? last_cut : unknown;
        args.length = 0;
        if (!nvs_sql_is_null(statement, 4)) {
            event->correlation = (uint32_t)sqlite3_column_int64(statement, 4);
            nvs_json_text_add(&args, "\"correlation\":%lld", (long long)sqlite3_column_int64(statement, 4));
        }
        if (!nvs_sql_is_null(statement, 5))
            nvs_json_text_add(&args, "%s\"return\":%lld", args.length ? "," : "",
                              (long long)sqlite3_column_int64(statement, 5));
        const char *class = nvs_sql_is_null(statement, 6) ? NULL
                            : cached_label(database, &classes, sqlite3_column_int64(statement, 6));
        if (class)
            nvs_json_text_add_string_member(&args, "class", class);
        if (args.failed) {
            status = -1;
            break;
        }
        if (args.length && !(event->args = nvs_events_intern(database->events, args.bytes, args.length))) {
            status = -1;
            break;
        }
    }
    sqlite3_finalize(statement);
    free(args.bytes);
    return status;
}

/* The first ENUM_* table whose name is LIKE PATTERN, into NAME; false when none. */
static bool find_enum_table(struct database *database, const char *pattern, char *name, size_t size)
{
    sqlite3_stmt *statement;
    if (sqlite3_prepare_v2(database->db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ? "
                           "ORDER BY name", -1, &statement, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(statement, 1, pattern, -1, SQLITE_STATIC);
    bool found = sqlite3_step(statement) == SQLITE_ROW && sqlite3_column_text(statement, 0);
    if (found)
        snprintf(name, size, "%s", (const char *)sqlite3_column_text(statement, 0));
    sqlite3_finalize(statement);
    return found;
}

/* A thread's states go on a row of their own beside it, so that they do not
 * tangle with its ranges: a thread id above any Linux one (at most 2^22) and
 * the GPU's rows (stream_row). */
static uint32_t state_row(uint32_t tid)
{
    return 0x40000000u | tid;
}

static const char *name_of(const struct nvs_events *events, uint32_t pid, uint32_t tid)
{
    for (size_t i = 0; i < events->name_count; i++)
        if (events->names[i].pid == pid && events->names[i].tid == tid)
            return events->names[i].name;
    return NULL;
}

/* The state row of thread (PID, TID) named after the thread. */
static bool name_state_row(struct nvs_events *events, uint32_t pid, uint32_t tid)
{
    const char *thread = name_of(events, pid, tid);
    char row[160];
    if (thread)
        snprintf(row, sizeof row, "%s (state)", thread);
    else
        snprintf(row, sizeof row, "thread %" PRIu32 " (state)", tid);
    const char *name = nvs_events_intern_string(events, row);
    return name && nvs_events_add_name(events, pid, state_row(tid), name, false);
}

/* Columns of the SCHED_EVENTS query, in order. */
enum { S_START, S_CPU, S_IN, S_TID, S_STATE, S_BLOCK };

/* Thread states from the scheduler's switches (SCHED_EVENTS: nsys profile
 * --cpuctxsw=process-tree). Per thread, through its switches in time order:
 * "Running" from a switch in to the next switch out (args cpu), "Off CPU"
 * from a switch out to the next switch in, named with the state the thread
 * left in and args state and block when the export has them (nsys 2022.4
 * has neither column). Two switches in (or out) in a row leave the first
 * unpaired: it is left out and counted. After the names: a state row is
 * named after its thread. */
static int load_sched(struct database *database)
{
    static const char *const table = "SCHED_EVENTS";
    const struct nvs_load_options *options = database->options;
    struct nvs_events *events = database->events;
    struct columns columns;
    static const char *const needed[] = {"start", "isSchedIn", "globalTid"};
    if (!nvs_sql_require_table(database, table, &columns, needed, 3, "thread states",
                       "profile with --cpuctxsw=process-tree for them"))
        return 0;
    bool with_state = nvs_sql_has_column(&columns, "threadState"), with_block = nvs_sql_has_column(&columns, "threadBlock");
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
        if (!nvs_sql_has_column(&columns, "cpu"))
            nvs_events_say(options, "SCHED_EVENTS has no cpu column: running time is shown without its CPU");
    }
    char state_table[128], block_table[128];
    struct labels states = {.table = state_table}, blocks = {.table = block_table};
    /* nsys's thread states, which its sampling rows (COMPOSITE_EVENTS) use too */
    states.present = with_state && (nvs_sql_has_table(database, "ENUM_SAMPLING_THREAD_STATE")
                                        ? snprintf(state_table, sizeof state_table, "%s",
                                                   "ENUM_SAMPLING_THREAD_STATE") > 0
                                        : find_enum_table(database, "ENUM%THREAD_STATE%", state_table,
                                                          sizeof state_table));
    blocks.present = with_block && find_enum_table(database, "ENUM%THREAD_BLOCK%", block_table,
                                                   sizeof block_table);
    static const char *const wanted[] = {"start", "cpu", "isSchedIn", "globalTid", "threadState",
                                         "threadBlock"};
    /* rowid: of two switches at one time, the one nsys wrote first */
    sqlite3_stmt *statement = nvs_sql_select_columns(database, &columns, wanted, sizeof wanted / sizeof wanted[0],
                                             "SCHED_EVENTS",
                                             "WHERE globalTid IS NOT NULL ORDER BY globalTid, start, rowid");
    if (!statement)
        return -1;
    const char *category = nvs_events_intern_string(events, NVS_CATEGORY_THREAD_STATE);
    const char *running = nvs_events_intern_string(events, "Running");
    const char *off_cpu = nvs_events_intern_string(events, "Off CPU");
    if (!category || !running || !off_cpu) {
        sqlite3_finalize(statement);
        return -1;
    }
    int64_t thread = -1;
    bool in = false, out = false;    /* the thread's last switch, when it has one */
    int64_t since = 0;               /* ... and its time */
    sqlite3_int64 cpu = 0;
    bool has_cpu = false;
    const char *state = NULL, *block = NULL;
    char number[32];
    size_t unpaired = 0;
    struct nvs_json_text args = {0};
    int status = 0;
    while (status == 0 && sqlite3_step(statement) == SQLITE_ROW) {
        int64_t global = sqlite3_column_int64(statement, S_TID);
        uint32_t pid = nvs_global_pid(global), tid = nvs_global_tid(global);
        if (global != thread) {
            if (!name_state_row(events, pid, tid)) {
                status = -1;
                break;
            }
            thread = global;
            in = out = false;
        }
        int64_t time = sqlite3_column_int64(statement, S_START);
        bool switch_in = sqlite3_column_int64(statement, S_IN) != 0;
        if ((switch_in && in) || (!switch_in && out))
            unpaired++;
        if ((switch_in && out) || (!switch_in && in)) {
            struct nvs_event *event = nvs_events_add(events);
            if (!event) {
                status = -1;
                break;
            }
            event->kind = NVS_EVENT_THREAD_STATE;
            event->start = since;
            event->end = time;
            event->domain = category;
            event->pid = pid;
            event->tid = state_row(tid);
            args.length = 0;
            if (in) {
                event->name = running;
                if (has_cpu)
                    nvs_json_text_add(&args, "\"cpu\":%lld", (long long)cpu);
            } else {
                char name[160];
                snprintf(name, sizeof name, "Off CPU (%s)", state ? state : "");
                event->name = state ? nvs_events_intern_string(events, name) : off_cpu;
                if (state)
                    nvs_json_text_add_string_member(&args, "state", state);
                if (block)
                    nvs_json_text_add_string_member(&args, "block", block);
            }
            if (!event->name || args.failed) {
                status = -1;
                break;
            }
            if (args.length && !(event->args = nvs_events_intern(events, args.bytes, args.length))) {
                status = -1;
                break;
            }
        }
        in = switch_in;
        out = !switch_in;
        since = time;
        has_cpu = !nvs_sql_is_null(statement, S_CPU);
        cpu = sqlite3_column_int64(statement, S_CPU);
        /* the reason the thread left the CPU: on its switch out */
        state = block = NULL;
        if (!switch_in && !nvs_sql_is_null(statement, S_STATE)) {
            sqlite3_int64 id = sqlite3_column_int64(statement, S_STATE);
            state = cached_label(database, &states, id);
            if (!state) {
                snprintf(number, sizeof number, "state %lld", (long long)id);
                state = nvs_events_intern_string(events, number);
            }
        }
        if (!switch_in && !nvs_sql_is_null(statement, S_BLOCK)) {
            sqlite3_int64 id = sqlite3_column_int64(statement, S_BLOCK);
            block = cached_label(database, &blocks, id);
            if (!block) {
                snprintf(number, sizeof number, "%lld", (long long)id);
                block = nvs_events_intern_string(events, number);
            }
        }
    }
    sqlite3_finalize(statement);
    free(args.bytes);
    if (status == 0 && unpaired && options->say_skipped)
        nvs_events_say(options, "SCHED_EVENTS: %zu switch%s in (or out) followed by another the same way, "
                       "left out", unpaired, unpaired == 1 ? "" : "es");
    return status;
}

/* Tables with rows that convert does not map, in one line. */
static void say_left_out(struct database *database)
{
    static const char *const mapped[] = {
        "StringIds", "NVTX_EVENTS", "OSRT_API", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET", "SCHED_EVENTS", "ThreadNames",
        "PROCESSES",
        /* not events: descriptions of the session and the machine */
        "EXPORT_META_DATA", "ANALYSIS_DETAILS", "ProcessStreams", "UnwindMethodType",
    };
    sqlite3_stmt *tables = nvs_sql_prepare(database, "SELECT name FROM sqlite_master WHERE type = 'table' "
                                             "AND name NOT LIKE 'ENUM_%' AND name NOT LIKE 'TARGET_INFO_%' "
                                             "AND name NOT LIKE 'sqlite_%' ORDER BY name");
    if (!tables)
        return;
    struct nvs_json_text line = {0};
    while (sqlite3_step(tables) == SQLITE_ROW) {
        const char *table = (const char *)sqlite3_column_text(tables, 0);
        bool known = false;
        for (size_t i = 0; table && i < sizeof mapped / sizeof mapped[0]; i++)
            known |= strcmp(table, mapped[i]) == 0;
        if (!table || known)
            continue;
        char sql[160];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM \"%s\"", table);
        sqlite3_stmt *count;
        if (sqlite3_prepare_v2(database->db, sql, -1, &count, NULL) != SQLITE_OK)
            continue;
        long long rows = sqlite3_step(count) == SQLITE_ROW ? sqlite3_column_int64(count, 0) : 0;
        sqlite3_finalize(count);
        if (rows > 0)
            nvs_json_text_add(&line, "%s%s (%lld row%s)", line.length ? ", " : "", table, rows,
                              rows == 1 ? "" : "s");
    }
    sqlite3_finalize(tables);
    if (line.length && !line.failed)
        nvs_events_say(database->options, "not converted: %s", line.bytes);
    free(line.bytes);
}

/* Whether the database has any table that nsys export writes (every export
 * has StringIds and TARGET_INFO_* tables; hand-made ones in the tests at
 * least NVTX_EVENTS): another program's database is refused with one line,
 * rather than read as an export with every table missing. */
static bool is_nsys_export(struct database *database)
{
    sqlite3_stmt *statement = nvs_sql_prepare(database,
        "SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND (name IN ('NVTX_EVENTS', "
        "'OSRT_API', 'SCHED_EVENTS', 'StringIds', 'ThreadNames', 'PROCESSES', 'COMPOSITE_EVENTS', "
        "'EXPORT_META_DATA', 'ANALYSIS_DETAILS', 'PROFILER_OVERHEAD') OR name LIKE 'CUPTI\\_%' ESCAPE '\\' "
        "OR name LIKE 'TARGET\\_INFO\\_%' ESCAPE '\\') LIMIT 1");
    if (!statement)
        return false;
    bool found = sqlite3_step(statement) == SQLITE_ROW;
    sqlite3_finalize(statement);
    if (!found)
        nvs_events_say(database->options, "%s is not an nsys export (an SQLite database with none of the "
                       "tables nsys export writes: NVTX_EVENTS, OSRT_API, CUPTI_*, SCHED_EVENTS, StringIds, "
                       "TARGET_INFO_*, ...)", database->path);
    return found;
}

int nvs_sqlite_load(struct nvs_events *events, const char *path, const struct nvs_load_options *options)
{
    struct database database = {.path = path, .options = options, .events = events};
    if (sqlite3_open_v2(path, &database.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        nvs_events_say(options, "cannot open %s: %s", path,
                       database.db ? sqlite3_errmsg(database.db) : "out of memory");
        sqlite3_close(database.db);
        return -1;
    }
    sqlite3_stmt *check;
    if (sqlite3_prepare_v2(database.db, "SELECT count(*) FROM sqlite_master", -1, &check, NULL) != SQLITE_OK ||
        sqlite3_step(check) != SQLITE_ROW) {
        nvs_events_say(options, "cannot read %s: %s", path, sqlite3_errmsg(database.db));
        sqlite3_finalize(check);
        sqlite3_close(database.db);
        return -1;
    }
    sqlite3_finalize(check);
    int status = is_nsys_export(&database) ? 0 : -1;
    if (status == 0)
        status = load_strings(&database);
    if (status == 0)
        status = load_nvtx(&database);
    if (status == 0 && options->what == NVS_LOAD_EVERYTHING) {
        status = load_os_calls(&database);
        /* before the GPU work: a launch and its kernel at one time keep that order */
        if (status == 0)
            status = load_cuda_api(&database);
        for (int which = GPU_KERNEL; status == 0 && which <= GPU_SET; which++)
            status = load_gpu(&database, (enum gpu_table)which);
    }
    /* names for report too: its sections per process are headed with them */
    if (status == 0)
        status = nvs_sql_load_names(&database);
    if (status == 0 && options->what == NVS_LOAD_EVERYTHING) {
        status = load_sched(&database);
        if (status == 0 && options->say_skipped)
            say_left_out(&database);
    }
    free(database.strings);
    sqlite3_close(database.db);
    return status;
}

/* ---- the export read as a stream (convert) ------------------------------------ */

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
        event->domain = domain_name(&export->database, &export->domains, statement, N_DOMAIN);
        int64_t global = nvs_sql_is_null(statement, N_TID) ? 0 : sqlite3_column_int64(statement, N_TID);
        event->pid = nvs_global_pid(global);
        event->tid = nvs_global_tid(global);
        event->async = type == NVTX_START_END;
        if (event->async && !nvs_sql_is_null(statement, N_END_TID))
            event->end_tid = nvs_global_tid(sqlite3_column_int64(statement, N_END_TID));
        cursor->event.rowid = sqlite3_column_int64(statement, N_PAYLOAD + (int)PAYLOADS);
        /* args as the recorder writes them: category, payload, colour (marks only) */
        struct nvs_json_text *args = &cursor->args;
        args->length = 0;
        if (!nvs_sql_is_null(statement, N_CATEGORY) && sqlite3_column_int64(statement, N_CATEGORY) != 0) {
            int64_t domain = nvs_sql_is_null(statement, N_DOMAIN) ? 0 : sqlite3_column_int64(statement, N_DOMAIN);
            int64_t id = sqlite3_column_int64(statement, N_CATEGORY);
            const char *category = category_name(&export->categories, domain, id);
            if (category)
                nvs_json_text_add_string_member(args, "category", category);
            else
                nvs_json_text_add(args, "%s\"category\":%" PRId64, args->length ? "," : "", id);
        }
        for (size_t i = 0; i < PAYLOADS; i++) {
            int column = N_PAYLOAD + (int)i;
            if (nvs_sql_is_null(statement, column))
                continue;
            if (sqlite3_column_type(statement, column) == SQLITE_FLOAT) {
                double value = sqlite3_column_double(statement, column);
                nvs_json_text_add(args, "%s\"payload\":%.17g", args->length ? "," : "",
                                  value == value && value - value == 0 ? value : 0.0);
            } else if (i == 0) {
                nvs_json_text_add(args, "%s\"payload\":%" PRIu64, args->length ? "," : "",
                                  (uint64_t)sqlite3_column_int64(statement, column));
            } else {
                nvs_json_text_add(args, "%s\"payload\":%" PRId64, args->length ? "," : "",
                                  (int64_t)sqlite3_column_int64(statement, column));
            }
            break;
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
        if (!set_name(cursor, name, api_name_length(name)))
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
                        : cached_label(&export->database, &export->classes, sqlite3_column_int64(statement, 6));
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
            .tid = stream_row(device, stream),
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
    event->tid = stream_row(device, stream);
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
            const char *label = cached_label(&export->database, &export->copy_labels, kind);
            snprintf(name, sizeof name, "CUDA memcpy %s", label ? label : copy_kind(kind));
            for (int side = 0; side < 2; side++) {
                if (nvs_sql_is_null(statement, 10 + side))
                    continue;
                const char *memory_label =
                    cached_label(&export->database, &export->memory_labels, sqlite3_column_int64(statement, 10 + side));
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

static int read_sched(struct nvs_export *export, struct cursor *cursor)
{
    sqlite3_stmt *statement = cursor->statement;
    struct nvs_event *event = &cursor->event.event;
    char number[32], name[160];
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
        event->tid = state_row(nvs_global_tid(global));
        cursor->event.rowid = sqlite3_column_int64(statement, S_ROWID);
        struct nvs_json_text *args = &cursor->args;
        args->length = 0;
        const char *row_name = export->running;
        if (switch_in) {
            if (!nvs_sql_is_null(statement, S_CPU))
                nvs_json_text_add(args, "\"cpu\":%lld", (long long)sqlite3_column_int64(statement, S_CPU));
        } else {
            /* the reason the thread left the CPU: on its switch out */
            const char *state = NULL, *block = NULL;
            if (!nvs_sql_is_null(statement, S_STATE)) {
                sqlite3_int64 id = sqlite3_column_int64(statement, S_STATE);
                state = cached_label(&export->database, &export->states, id);
                if (!state) {
                    snprintf(number, sizeof number, "state %lld", (long long)id);
                    state = nvs_events_intern_string(&export->names, number);
                }
            }
            if (!nvs_sql_is_null(statement, S_BLOCK)) {
                sqlite3_int64 id = sqlite3_column_int64(statement, S_BLOCK);
                block = cached_label(&export->database, &export->blocks, id);
                if (!block) {
                    snprintf(number, sizeof number, "%lld", (long long)id);
                    block = nvs_events_intern_string(&export->names, number);
                }
            }
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
    for (size_t i = 0; i < PAYLOADS; i++)
        nvs_sql_query_column(query, columns, payload_columns[i]);
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
        } else if (type == NVTX_THREAD_NAME && !nvs_sql_is_null(statement, N_TID)) {
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
        if (!name || !nvs_events_add_name(database->events, pid, stream_row(device, stream), name, false))
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
                                                : find_enum_table(database, "ENUM%THREAD_STATE%", export->state_table,
                                                                  sizeof export->state_table));
    export->blocks.present = with_block && find_enum_table(database, "ENUM%THREAD_BLOCK%", export->block_table,
                                                           sizeof export->block_table);
    /* each thread's state row, named after the thread */
    sqlite3_stmt *statement = nvs_sql_prepare(database, "SELECT DISTINCT globalTid FROM SCHED_EVENTS "
                                                        "WHERE globalTid IS NOT NULL");
    if (!statement)
        return -1;
    int status = 0;
    while (status == 0 && sqlite3_step(statement) == SQLITE_ROW) {
        int64_t global = sqlite3_column_int64(statement, 0);
        if (!name_state_row(database->events, nvs_global_pid(global), nvs_global_tid(global)))
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
    if (!is_nsys_export(database)) {
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
    if (status == 0)
        status = open_calls(export);
    if (status == 0)
        status = nvs_sql_load_names(database);
    if (status == 0)
        status = open_sched(export);
    if (status == 0 && options->say_skipped)
        say_left_out(database);
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
