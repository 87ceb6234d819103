/* An nsys export read as a stream, for convert, report and diff
 * (sqlite_stream.h): each table queried in time order and the tables'
 * cursors merged; the projections made in a pass before, into a temporary
 * table. Its rows are read with sqlite_tables.h, into events by sqlite_rows.c. */
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
#include "readers/sqlite_rows.h"
#include "readers/sqlite_tables.h"

static const char *const gpu_tables[] = { "CUPTI_ACTIVITY_KIND_KERNEL",
                                          "CUPTI_ACTIVITY_KIND_MEMCPY",
                                          "CUPTI_ACTIVITY_KIND_MEMSET" };

/* ---- opening: the schema, what is missing said, the names ---- */

static void query_append(struct query *query, const char *text)
{
    int written = snprintf(query->sql + query->length, sizeof query->sql - query->length, "%s",
                           text);
    if (written > 0)
        query->length += (size_t)written;
}

/* The NVTX_EVENTS query of the stream: its columns (N_*), then the rowid. */
static bool nvtx_query(struct nvs_export *export, struct query *query, const char *rest)
{
    const struct columns *columns = &export->columns[NVS_EXPORT_NVTX];
    nvs_sql_query_start(query);
    static const char *const wanted[] = { "start",  "end",         "eventType", "text",
                                          "textId", "globalTid",   "domainId",  "category",
                                          "color",  "endGlobalTid" };
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
            nvs_events_say(options,
                           "no NVTX_EVENTS table: no NVTX ranges or marks (profile with -t nvtx "
                           "for them)");
        return 0;
    }
    nvs_sql_read_columns(database, "NVTX_EVENTS", columns);
    if (!nvs_sql_has_column(columns, "start") || !nvs_sql_has_column(columns, "eventType")) {
        nvs_events_say(options, "%s: NVTX_EVENTS has no %s column: NVTX events skipped",
                       database->path,
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
            nvs_events_say(options,
                           "NVTX_EVENTS has no end column: NVTX ranges skipped, marks kept");
        if (!nvs_sql_has_column(columns, "domainId"))
            nvs_events_say(options,
                           "NVTX_EVENTS has no domainId column: every event in domain \"default\"");
        if (!nvs_sql_has_column(columns, "globalTid"))
            nvs_events_say(options, "NVTX_EVENTS has no globalTid column: every event on thread 0");
        if (!nvs_sql_has_column(columns, "category"))
            nvs_events_say(options, "NVTX_EVENTS has no category column: categories skipped");
    }
    export->present[NVS_EXPORT_NVTX] = true;
    struct query query;
    nvtx_query(export, &query,
               "FROM NVTX_EVENTS WHERE eventType IN (33, 75, 39) ORDER BY eventType DESC");
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
            if (!nvs_sql_grow((void **)&domains->items, &domains->capacity, domains->count,
                              sizeof *domains->items)) {
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
            categories->items[categories->count].domain = nvs_sql_is_null(statement, N_DOMAIN)
                ? 0
                : sqlite3_column_int64(statement, N_DOMAIN);
            categories->items[categories->count].id = sqlite3_column_int64(statement, N_CATEGORY);
            categories->items[categories->count++].name = text;
        } else if (type == NVTX_THREAD_NAME && export->everything &&
                   !nvs_sql_is_null(statement, N_TID)) {
            int64_t global = sqlite3_column_int64(statement, N_TID);
            if (!nvs_events_add_name(database->events, nvs_global_pid(global),
                                     nvs_global_tid(global), text, true))
                status = -1;
        }
    }
    sqlite3_finalize(statement);
    return status;
}

/* Names for the GPU rows of TABLE's work. */
static int name_gpu_rows(struct nvs_export *export, const char *table,
                         const struct columns *columns)
{
    struct database *database = &export->database;
    static const char *const wanted[] = { "globalPid", "deviceId", "streamId" };
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
        uint32_t pid = nvs_sql_is_null(statement, 0)
            ? 0
            : nvs_global_pid(sqlite3_column_int64(statement, 0));
        int64_t device = sqlite3_column_int64(statement, 1),
                stream = sqlite3_column_int64(statement, 2);
        char row[64];
        snprintf(row, sizeof row, "CUDA stream %" PRId64 " (device %" PRId64 ")", stream, device);
        const char *name = nvs_events_intern_string(database->events, row);
        if (!name ||
            !nvs_events_add_name(database->events, pid, nvs_sql_stream_row(device, stream), name,
                                 false))
            status = -1;
    }
    sqlite3_finalize(statement);
    return status;
}

static int open_calls(struct nvs_export *export)
{
    struct database *database = &export->database;
    const struct nvs_load_options *options = database->options;
    static const char *const needed_os[] = { "start", "end", "nameId" };
    export->present[NVS_EXPORT_OSRT] = nvs_sql_require_table(
        database, "OSRT_API", &export->columns[NVS_EXPORT_OSRT], needed_os, 3, "OS runtime calls",
        "profile with -t osrt for them");
    static const char *const table = "CUPTI_ACTIVITY_KIND_RUNTIME";
    static const char *const needed[] = { "start", "end" };
    struct columns *columns = &export->columns[NVS_EXPORT_API];
    export->present[NVS_EXPORT_API] = nvs_sql_require_table(
        database, table, columns, needed, 2, "CUDA API calls",
        "none made, or not profiled with -t cuda");
    static const struct {
        const char *column, *without;
    } optional[] = {
        { "nameId", "CUDA API calls unnamed" },
        { "globalTid", "CUDA API calls shown on thread 0 of process 0" },
        { "correlationId", "no launch arrows and no NVTX projections onto the GPU" },
        { "returnValue", "CUDA API calls without their return values" },
        { "eventClass", "CUDA API calls not told apart as runtime or driver calls" },
    };
    if (export->present[NVS_EXPORT_API] && options->say_skipped)
        for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++)
            if (!nvs_sql_has_column(columns, optional[i].column))
                nvs_events_say(options, "%s has no %s column: %s", table, optional[i].column,
                               optional[i].without);
    static const char *const what[] = { "CUDA kernels", "CUDA memory copies", "CUDA memsets" };
    for (int which = GPU_KERNEL; which <= GPU_SET; which++) {
        const char *gpu_table = gpu_tables[which];
        struct columns *gpu_columns = &export->columns[NVS_EXPORT_KERNEL + which];
        if (!nvs_sql_require_table(database, gpu_table, gpu_columns, needed, 2, what[which],
                                   "none ran, or not profiled with -t cuda"))
            continue;
        export->present[NVS_EXPORT_KERNEL + which] = true;
        if (options->say_skipped) {
            if (!nvs_sql_has_column(gpu_columns, "globalPid"))
                nvs_events_say(options, "%s has no globalPid column: %s shown in process 0",
                               gpu_table, what[which]);
            if (which == GPU_KERNEL && !nvs_sql_has_column(gpu_columns, "demangledName") &&
                !nvs_sql_has_column(gpu_columns, "shortName"))
                nvs_events_say(options,
                               "%s has no demangledName or shortName column: kernels unnamed",
                               gpu_table);
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
    static const char *const needed[] = { "start", "isSchedIn", "globalTid" };
    if (!nvs_sql_require_table(database, "SCHED_EVENTS", columns, needed, 3, "thread states",
                               "profile with --cpuctxsw=process-tree for them"))
        return 0;
    if (sqlite3_libversion_number() < 3025000) {
        /* each switch is paired with the thread's next by lead() OVER (...) */
        nvs_events_say(options,
                       "SQLite %s has no window functions (3.25 on): thread states skipped",
                       sqlite3_libversion());
        return 0;
    }
    export->present[NVS_EXPORT_SCHED] = true;
    bool with_state = nvs_sql_has_column(columns, "threadState"),
         with_block = nvs_sql_has_column(columns, "threadBlock");
    if (options->say_skipped) {
        if (!with_state && !with_block)
            nvs_events_say(
                options,
                "SCHED_EVENTS has no threadState or threadBlock column: time off the CPU "
                "is shown without its reason");
        else if (!with_state)
            nvs_events_say(options,
                           "SCHED_EVENTS has no threadState column: time off the CPU is shown "
                           "without the state the thread left in");
        else if (!with_block)
            nvs_events_say(options,
                           "SCHED_EVENTS has no threadBlock column: time off the CPU is shown "
                           "without what blocked the thread");
        if (!nvs_sql_has_column(columns, "cpu"))
            nvs_events_say(options,
                           "SCHED_EVENTS has no cpu column: running time is shown without its CPU");
    }
    export->states.table = export->state_table;
    export->blocks.table = export->block_table;
    export->states.present = with_state &&
        (nvs_sql_has_table(database, "ENUM_SAMPLING_THREAD_STATE")
             ? snprintf(export->state_table, sizeof export->state_table, "%s",
                        "ENUM_SAMPLING_THREAD_STATE") > 0
             : nvs_sql_find_enum_table(database, "ENUM%THREAD_STATE%", export->state_table,
                                       sizeof export->state_table));
    export->blocks.present = with_block &&
        nvs_sql_find_enum_table(database, "ENUM%THREAD_BLOCK%", export->block_table,
                                sizeof export->block_table);
    /* each thread's state row, named after the thread */
    sqlite3_stmt *statement = nvs_sql_prepare(database,
                                              "SELECT DISTINCT globalTid FROM SCHED_EVENTS "
                                              "WHERE globalTid IS NOT NULL");
    if (!statement)
        return -1;
    int status = 0;
    while (status == 0 && sqlite3_step(statement) == SQLITE_ROW) {
        int64_t global = sqlite3_column_int64(statement, 0);
        if (!nvs_sql_name_state_row(database->events, nvs_global_pid(global),
                                    nvs_global_tid(global)))
            status = -1;
    }
    sqlite3_finalize(statement);
    return status;
}

/* The names the export's events are given that are not the export's (their
 * categories, the names of unnamed calls, the thread states) interned, and
 * the label tables there are: 0, or -1 when out of memory. */
static int intern_names(struct nvs_export *export)
{
    struct database *database = &export->database;
    int status = 0;
    static const char *const categories[] = {
        [NVS_EXPORT_PROJECTIONS] = NVS_CATEGORY_PROJECTION,
        [NVS_EXPORT_OSRT] = NVS_CATEGORY_OS_CALL,
        [NVS_EXPORT_API] = NVS_CATEGORY_CUDA_API,
        [NVS_EXPORT_KERNEL] = NVS_CATEGORY_GPU_KERNEL,
        [NVS_EXPORT_COPY] = NVS_CATEGORY_GPU_COPY,
        [NVS_EXPORT_SET] = NVS_CATEGORY_GPU_SET,
        [NVS_EXPORT_SCHED] = NVS_CATEGORY_THREAD_STATE,
    };
    for (int i = 0; status == 0 && i < NVS_EXPORT_SOURCES; i++)
        if (categories[i] &&
            !(export->category[i] = nvs_events_intern_string(&export->names, categories[i])))
            status = -1;
    if (status == 0 &&
        (!(export->unknown_os_call = nvs_events_intern_string(&export->names,
                                                              "[unknown OS call]")) ||
         !(export->unknown_api_call = nvs_events_intern_string(&export->names,
                                                               "[CUDA API call]")) ||
         !(export->unnamed_kernel = nvs_events_intern_string(&export->names, "[CUDA kernel]")) ||
         !(export->running = nvs_events_intern_string(&export->names, "Running")) ||
         !(export->off_cpu = nvs_events_intern_string(&export->names, "Off CPU"))))
        status = -1;
    export->copy_labels = (struct labels){ .table = "ENUM_CUDA_MEMCPY_OPER" };
    export->memory_labels = (struct labels){ .table = "ENUM_CUDA_MEM_KIND" };
    export->classes = (struct labels){ .table = "ENUM_NSYS_EVENT_CLASS" };
    export->copy_labels.present = nvs_sql_has_table(database, export->copy_labels.table);
    export->memory_labels.present = nvs_sql_has_table(database, export->memory_labels.table);
    export->classes.present = nvs_sql_has_table(database, export->classes.table);
    return status;
}

/* The temporary tables of the projections and of the GPU work made async, and
 * the statements that fill them: 0, or -1 (said when SQLite failed). */
static int make_temp_tables(struct nvs_export *export)
{
    struct database *database = &export->database;
    int status = 0;
    if (sqlite3_exec(
            database->db,
            "CREATE TEMP TABLE nvtxshim_projections (start INTEGER, \"end\" INTEGER, "
            "pid INTEGER, tid INTEGER, name TEXT, domain TEXT, ops INTEGER, range INTEGER, seq INTEGER); "
            "CREATE TEMP TABLE nvtxshim_async (source INTEGER, work INTEGER, PRIMARY KEY (source, work))",
            NULL, NULL, NULL) != SQLITE_OK) {
        nvs_events_say(database->options, "%s: %s", database->path, sqlite3_errmsg(database->db));
        status = -1;
    }
    if (status == 0 &&
        (!(export->add_projection = nvs_sql_prepare(database,
                                                    "INSERT INTO nvtxshim_projections VALUES "
                                                    "(?, ?, ?, ?, ?, ?, ?, ?, ?)")) ||
         !(export->add_async = nvs_sql_prepare(
               database, "INSERT OR IGNORE INTO nvtxshim_async VALUES (?, ?)"))))
        status = -1;
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
    *database = (struct database){ .path = path, .options = options, .events = &export->names };
    if (sqlite3_open_v2(path, &database->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        nvs_events_say(options, "cannot open %s: %s", path,
                       database->db ? sqlite3_errmsg(database->db) : "out of memory");
        nvs_export_close(export);
        return NULL;
    }
    sqlite3_stmt *check;
    if (sqlite3_prepare_v2(database->db, "SELECT count(*) FROM sqlite_master", -1, &check, NULL) !=
            SQLITE_OK ||
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
            !(database->string_lookup = nvs_sql_prepare(
                  database, "SELECT value FROM StringIds WHERE id = ?")))
            status = -1;
    }
    if (status == 0)
        status = intern_names(export);
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
    if (status == 0)
        status = make_temp_tables(export);
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
    static const char *const wanted[] = { "start",         "end",         "nameId",    "globalTid",
                                          "correlationId", "returnValue", "eventClass" };
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
        nvs_sql_query_column(&query, columns, wanted[i]);
    query.sql[query.length] = '\0';
    char work[3072] = "";
    size_t length = 0;
    if (nvs_sql_has_column(columns, "correlationId"))
        for (int which = GPU_KERNEL; which <= GPU_SET; which++) {
            const struct columns *gpu = &export->columns[NVS_EXPORT_KERNEL + which];
            if (!export->present[NVS_EXPORT_KERNEL + which] ||
                !nvs_sql_has_column(gpu, "correlationId"))
                continue;
            int written = snprintf(
                work + length, sizeof work - length,
                "%sSELECT %d AS src, rowid AS rid, start AS wstart, \"end\" AS wend, %s AS wpid, %s AS wdevice, "
                "%s AS wstream, correlationId AS wcorrelation FROM \"%s\" WHERE correlationId IS NOT NULL "
                "AND correlationId != 0",
                length ? " UNION ALL " : "", NVS_EXPORT_KERNEL + which,
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
        written = snprintf(
            sql, size, "%s, r.rowid FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r ORDER BY start, r.rowid",
            query.sql);
    else
        written = snprintf(
            sql, size,
            "%s, r.rowid, w.src, w.rid, w.wstart, w.wend, w.wpid, w.wdevice, w.wstream, "
            "EXISTS (SELECT 1 FROM temp.nvtxshim_async AS a WHERE a.source = w.src AND a.work = w.rid) "
            "FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r LEFT JOIN (%s) AS w ON r.correlationId != 0 "
            "AND w.wcorrelation = r.correlationId "
            "AND ((ifnull(w.wpid, 0) >> 24) & 16777215) = ((ifnull(r.globalTid, 0) >> 24) & 16777215) "
            "ORDER BY start, r.rowid, w.wstart, w.src, w.rid",
            query.sql, work);
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
        return nvs_sql_prepare(database,
                               "SELECT start, \"end\", pid, tid, name, domain, ops, rowid "
                               "FROM temp.nvtxshim_projections ORDER BY start, range, seq");
    case NVS_EXPORT_NVTX:
        nvtx_query(export, &query,
                   "FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60) ORDER BY start, rowid");
        return nvs_sql_prepare(database, query.sql);
    case NVS_EXPORT_OSRT: {
        static const char *const wanted[] = { "start", "end", "nameId", "globalTid",
                                              "returnValue" };
        nvs_sql_query_start(&query);
        for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
            nvs_sql_query_column(&query, columns, wanted[i]);
        query_append(&query, ", rowid");
        nvs_sql_query_end(&query, "FROM OSRT_API ORDER BY start, rowid");
        return nvs_sql_prepare(database, query.sql);
    }
    case NVS_EXPORT_API:
        if (!api_query(export, sql, sizeof sql)) {
            nvs_events_say(database->options, "%s: the CUDA API calls' query is too long",
                           database->path);
            return NULL;
        }
        return nvs_sql_prepare(database, sql);
    case NVS_EXPORT_SCHED: {
        static const char *const wanted[] = { "start",     "cpu",         "isSchedIn",
                                              "globalTid", "threadState", "threadBlock" };
        nvs_sql_query_start(&query);
        for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
            nvs_sql_query_column(&query, columns, wanted[i]);
        /* each switch with the thread's next (rowid: of two at one time, the one nsys wrote first) */
        query_append(&query, ", rowid, lead(start) OVER thread, lead(isSchedIn) OVER thread");
        nvs_sql_query_end(&query,
                          "FROM SCHED_EVENTS WHERE globalTid IS NOT NULL "
                          "WINDOW thread AS (PARTITION BY globalTid ORDER BY start, rowid) "
                          "ORDER BY start, globalTid, rowid");
        return nvs_sql_prepare(database, query.sql);
    }
    default: {
        static const char *const wanted[] = { "start",         "end",       "globalPid",
                                              "deviceId",      "streamId",  "correlationId",
                                              "demangledName", "shortName", "bytes",
                                              "copyKind",      "srcKind",   "dstKind",
                                              "value" };
        nvs_sql_query_start(&query);
        for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
            nvs_sql_query_column(&query, columns, wanted[i]);
        query_append(&query, ", rowid");
        char rest[128];
        snprintf(rest, sizeof rest, "FROM \"%s\" ORDER BY start, rowid",
                 gpu_tables[source - NVS_EXPORT_KERNEL]);
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
    export->said_unnamed = export->unnamed > export->said_unnamed ? export->unnamed
                                                                  : export->said_unnamed;
    export->said_open = export->open > export->said_open ? export->open : export->said_open;
    export->said_unpaired = export->unpaired > export->said_unpaired ? export->unpaired
                                                                     : export->said_unpaired;
    export->unnamed = export->open = export->unpaired = 0;
    for (int i = 0; i < NVS_EXPORT_SOURCES; i++) {
        if (!(wanted & (1u << i)) || (i != NVS_EXPORT_PROJECTIONS && !export->present[i]))
            continue;
        struct cursor *cursor = &export->cursors[i];
        if (!(cursor->statement = source_query(export, i)))
            return -1;
        cursor->event.source = (enum nvs_export_source)i;
        int got = nvs_export_read(export, i);
        if (got < 0) {
            nvs_events_say(export->database.options, "out of memory reading %s",
                           export->database.path);
            return -1;
        }
        cursor->ready = got > 0;
    }
    return 0;
}

int nvs_export_next(struct nvs_export *export, struct nvs_export_event *event)
{
    if (export->last >= 0) {
        int got = nvs_export_read(export, export->last);
        if (got < 0) {
            nvs_events_say(export->database.options, "out of memory reading %s",
                           export->database.path);
            return -1;
        }
        export->cursors[export->last].ready = got > 0;
        export->last = -1;
    }
    int first = -1;
    for (int i = 0; i < NVS_EXPORT_SOURCES; i++)
        if (export->cursors[i].ready &&
            (first < 0 ||
             export->cursors[i].event.event.start < export->cursors[first].event.event.start))
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
        nvs_events_say(export->database.options, "%s: %s", export->database.path,
                       sqlite3_errmsg(export->database.db));
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
    struct row_span {
        uint32_t pid, tid;
        int64_t start, end;
        size_t operations;
    } * rows;
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
        struct row_span *rows = nvs_room_for_one(range->rows, range->row_count,
                                                 &range->row_capacity, sizeof *rows, 4);
        if (!rows)
            return false;
        range->rows = rows;
        row = &rows[range->row_count++];
        *row = (struct row_span){ work->pid, work->tid, work->start, work->end, 0 };
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
            if (event->kind != NVS_EVENT_RANGE ||
                (event->end_tid != 0 && event->end_tid != event->tid) || event->end < event->start)
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
            open[count++] = (struct open_range){ .pid = event->pid,
                                                 .tid = event->tid,
                                                 .start = event->start,
                                                 .end = event->end,
                                                 .rowid = item.rowid,
                                                 .name = name,
                                                 .domain = event->domain };
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
    nvs_export_begin(export, 0); /* the last pass's counts with the others' */
    export->unnamed = export->said_unnamed;
    export->open = export->said_open;
    export->unpaired = export->said_unpaired;
    if (export->unnamed || export->open)
        nvs_events_say(options,
                       "left out %zu NVTX ranges never closed and %zu events without a message",
                       export->open, export->unnamed);
    if (export->unpaired)
        nvs_events_say(options,
                       "SCHED_EVENTS: %zu switch%s in (or out) followed by another the same way, "
                       "left out",
                       export->unpaired, export->unpaired == 1 ? "" : "es");
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
