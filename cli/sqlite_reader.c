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
    for (size_t i = 0; i < NVS_SQL_PAYLOADS; i++)
        nvs_sql_query_column(&query, &columns, nvs_sql_payload_columns[i]);
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
        event->domain = nvs_sql_domain_name(database, &domains, statement, N_DOMAIN);
        int64_t global = nvs_sql_is_null(statement, N_TID) ? 0 : sqlite3_column_int64(statement, N_TID);
        event->pid = nvs_global_pid(global);
        event->tid = nvs_global_tid(global);
        event->async = type == NVTX_START_END;
        /* endGlobalTid: the thread that ended it (NULL, in the exports seen here, where that
         * is the thread that started it) */
        if (event->async && !nvs_sql_is_null(statement, N_END_TID))
            event->end_tid = nvs_global_tid(sqlite3_column_int64(statement, N_END_TID));
        /* the payload: the first of its columns that is there (report reads it) */
        for (size_t i = 0; i < NVS_SQL_PAYLOADS; i++) {
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
            const char *category = nvs_sql_category_name(&categories, domain, id);
            if (category)
                nvs_json_text_add_string_member(&args, "category", category);
            else
                nvs_json_text_add(&args, "%s\"category\":%" PRId64, args.length ? "," : "", id);
        }
        for (size_t i = 0; i < NVS_SQL_PAYLOADS; i++) {
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
        event->tid = nvs_sql_stream_row(device, stream);
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
                const char *label = nvs_sql_label(database, &copy_labels, kind);
                snprintf(name, sizeof name, "CUDA memcpy %s", label ? label : nvs_sql_copy_kind(kind));
                for (int side = 0; side < 2; side++) {
                    if (nvs_sql_is_null(statement, 10 + side))
                        continue;
                    int64_t memory = sqlite3_column_int64(statement, 10 + side);
                    const char *memory_label = nvs_sql_label(database, &memory_labels, memory);
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
            last_cut = nvs_events_intern(database->events, name, nvs_sql_api_name_length(name));
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
                            : nvs_sql_label(database, &classes, sqlite3_column_int64(statement, 6));
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
                                        : nvs_sql_find_enum_table(database, "ENUM%THREAD_STATE%", state_table,
                                                          sizeof state_table));
    blocks.present = with_block && nvs_sql_find_enum_table(database, "ENUM%THREAD_BLOCK%", block_table,
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
            if (!nvs_sql_name_state_row(events, pid, tid)) {
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
            event->tid = nvs_sql_state_row(tid);
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
            state = nvs_sql_label(database, &states, id);
            if (!state) {
                snprintf(number, sizeof number, "state %lld", (long long)id);
                state = nvs_events_intern_string(events, number);
            }
        }
        if (!switch_in && !nvs_sql_is_null(statement, S_BLOCK)) {
            sqlite3_int64 id = sqlite3_column_int64(statement, S_BLOCK);
            block = nvs_sql_label(database, &blocks, id);
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
    int status = nvs_sql_is_nsys_export(&database) ? 0 : -1;
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
            nvs_sql_say_left_out(&database);
    }
    free(database.strings);
    sqlite3_close(database.db);
    return status;
}
