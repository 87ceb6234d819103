/* The SQLite export's tables as its reader (sqlite_stream.c) asks for them:
 * whether a table and its columns are there, queries built from the columns
 * this export has, the values read back. */
#define _GNU_SOURCE
#include "readers/sqlite_tables.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_text.h"

bool nvs_sql_has_table(struct database *database, const char *table)
{
    sqlite3_stmt *statement;
    if (sqlite3_prepare_v2(
            database->db, "SELECT 1 FROM sqlite_master WHERE type IN ('table','view') AND name = ?",
            -1, &statement, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(statement, 1, table, -1, SQLITE_STATIC);
    bool found = sqlite3_step(statement) == SQLITE_ROW;
    sqlite3_finalize(statement);
    return found;
}

void nvs_sql_read_columns(struct database *database, const char *table, struct columns *columns)
{
    columns->count = 0;
    char sql[128];
    snprintf(sql, sizeof sql, "PRAGMA table_info(\"%s\")", table);
    sqlite3_stmt *statement;
    if (sqlite3_prepare_v2(database->db, sql, -1, &statement, NULL) != SQLITE_OK)
        return;
    while (sqlite3_step(statement) == SQLITE_ROW && columns->count < MAX_COLUMNS) {
        const unsigned char *name = sqlite3_column_text(statement, 1);
        if (name)
            snprintf(columns->names[columns->count++], sizeof columns->names[0], "%s", name);
    }
    sqlite3_finalize(statement);
}

bool nvs_sql_has_column(const struct columns *columns, const char *name)
{
    for (int i = 0; i < columns->count; i++)
        if (strcmp(columns->names[i], name) == 0)
            return true;
    return false;
}

/* What every loader asks first: TABLE's columns into COLUMNS when TABLE is
 * there and has each of NEEDED; otherwise false, with (where skipped tables
 * are said) one line: "no TABLE table: WHAT skipped (HINT)", or "TABLE has no
 * C column: WHAT skipped". */
bool nvs_sql_require_table(struct database *database, const char *table, struct columns *columns,
                           const char *const *needed, size_t count, const char *what,
                           const char *hint)
{
    const struct nvs_load_options *options = database->options;
    if (!nvs_sql_has_table(database, table)) {
        if (options->say_skipped)
            nvs_events_say(options, "no %s table: %s skipped (%s)", table, what, hint);
        return false;
    }
    nvs_sql_read_columns(database, table, columns);
    for (size_t i = 0; i < count; i++)
        if (!nvs_sql_has_column(columns, needed[i])) {
            if (options->say_skipped)
                nvs_events_say(options, "%s has no %s column: %s skipped", table, needed[i], what);
            return false;
        }
    return true;
}

void nvs_sql_query_column(struct query *query, const struct columns *columns, const char *name)
{
    int written = snprintf(query->sql + query->length, sizeof query->sql - query->length,
                           "%s%s%s%s", query->length > 7 ? ", " : "",
                           nvs_sql_has_column(columns, name) ? "\"" : "",
                           nvs_sql_has_column(columns, name) ? name : "NULL",
                           nvs_sql_has_column(columns, name) ? "\"" : "");
    if (written > 0)
        query->length += (size_t)written;
}

void nvs_sql_query_start(struct query *query)
{
    strcpy(query->sql, "SELECT ");
    query->length = 7;
}

void nvs_sql_query_end(struct query *query, const char *rest)
{
    snprintf(query->sql + query->length, sizeof query->sql - query->length, " %s", rest);
}

sqlite3_stmt *nvs_sql_prepare(struct database *database, const char *sql)
{
    sqlite3_stmt *statement = NULL;
    if (sqlite3_prepare_v2(database->db, sql, -1, &statement, NULL) != SQLITE_OK) {
        nvs_events_say(database->options, "%s: %s", database->path, sqlite3_errmsg(database->db));
        return NULL;
    }
    return statement;
}

/* SELECT the WANTED columns (NULL for each this export lacks) FROM TABLE, then
 * REST (a WHERE or ORDER BY clause, or ""), prepared; NULL after a line on
 * stderr. */
sqlite3_stmt *nvs_sql_select_columns(struct database *database, const struct columns *columns,
                                     const char *const *wanted, size_t count, const char *table,
                                     const char *rest)
{
    struct query query;
    nvs_sql_query_start(&query);
    for (size_t i = 0; i < count; i++)
        nvs_sql_query_column(&query, columns, wanted[i]);
    char from[256];
    snprintf(from, sizeof from, "FROM \"%s\" %s", table, rest);
    nvs_sql_query_end(&query, from);
    return nvs_sql_prepare(database, query.sql);
}

bool nvs_sql_is_null(sqlite3_stmt *statement, int column)
{
    return sqlite3_column_type(statement, column) == SQLITE_NULL;
}

/* A string column: text as it is, or an id into StringIds. NULL when neither. */
const char *nvs_sql_string_column(struct database *database, sqlite3_stmt *statement, int column)
{
    switch (sqlite3_column_type(statement, column)) {
    case SQLITE_TEXT:
        return nvs_events_intern(database->events,
                                 (const char *)sqlite3_column_text(statement, column),
                                 (size_t)sqlite3_column_bytes(statement, column));
    case SQLITE_INTEGER: {
        sqlite3_int64 id = sqlite3_column_int64(statement, column);
        const char *text = nvs_sql_string_id(database, id);
        return text ? nvs_events_intern_string(database->events, text) : NULL;
    }
    default: return NULL;
    }
}

const char *nvs_sql_string_id(struct database *database, int64_t id)
{
    if (!database->string_lookup)
        return NULL;
    struct string_slot *slot = &database->string_cache[(uint64_t)id % STRING_CACHE];
    if (slot->text && slot->id == id)
        return slot->text;
    sqlite3_stmt *lookup = database->string_lookup;
    sqlite3_reset(lookup);
    sqlite3_bind_int64(lookup, 1, id);
    if (sqlite3_step(lookup) != SQLITE_ROW || !sqlite3_column_text(lookup, 0))
        return NULL;
    char *text = strdup((const char *)sqlite3_column_text(lookup, 0));
    if (!text)
        return NULL;
    free(slot->text);
    *slot = (struct string_slot){ id, text };
    return text;
}

bool nvs_sql_grow(void **items, size_t *capacity, size_t count, size_t size)
{
    if (count < *capacity)
        return true;
    size_t more = *capacity ? *capacity * 2 : 16;
    void *grown = realloc(*items, more * size);
    if (!grown)
        return false;
    *items = grown;
    *capacity = more;
    return true;
}

/* ---- what both loaders read the rows with ---- */

const char *nvs_sql_domain_name(struct database *database, const struct domain_names *domains,
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

const char *nvs_sql_category_name(const struct category_names *categories, int64_t domain,
                                  int64_t id)
{
    for (size_t i = 0; i < categories->count; i++)
        if (categories->items[i].domain == domain && categories->items[i].id == id)
            return categories->items[i].name;
    return NULL;
}

/* The payload columns of NVTX_EVENTS, in the order nsys fills them. */
const char *const nvs_sql_payload_columns[] = {
    "uint64Value", "int64Value", "doubleValue", "uint32Value", "int32Value", "floatValue",
};

static const char *enum_label(struct database *database, const char *table, int64_t id);

const char *nvs_sql_label(struct database *database, struct labels *labels, int64_t id)
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
        label = nvs_events_intern_string(database->events,
                                         (const char *)sqlite3_column_text(statement, 0));
    sqlite3_finalize(statement);
    return label;
}

/* CUPTI's copy kinds, for exports without ENUM_CUDA_MEMCPY_OPER. */
const char *nvs_sql_copy_kind(int64_t kind)
{
    static const char *const kinds[] = {
        "Unknown",          "Host-to-Device", "Device-to-Host",  "Host-to-Array",
        "Array-to-Host",    "Array-to-Array", "Array-to-Device", "Device-to-Array",
        "Device-to-Device", "Host-to-Host",   "Peer-to-Peer",
    };
    return kind >= 0 && kind < (int64_t)(sizeof kinds / sizeof kinds[0]) ? kinds[kind] : "Unknown";
}

/* An API name as the program called it: nsys appends the CUDA version that
 * introduced the entry point (cudaLaunchKernel_v7000, cudaMemcpy_v3020), and
 * the per-thread default stream's twins end _ptsz or _ptds. The driver's own
 * _v2 (cuMemcpyHtoD_v2, a symbol of its own) is kept: 4 digits or more are
 * a version, fewer are part of the name. */
size_t nvs_sql_api_name_length(const char *name)
{
    size_t length = strlen(name);
    for (bool cut = true; cut;) {
        cut = false;
        size_t digits = 0;
        while (digits < length && name[length - 1 - digits] >= '0' &&
               name[length - 1 - digits] <= '9')
            digits++;
        if (digits >= 4 && length > digits + 2 && name[length - digits - 2] == '_' &&
            name[length - digits - 1] == 'v') {
            length -= digits + 2;
            cut = true;
        }
        if (length > 5 &&
            (memcmp(name + length - 5, "_ptsz", 5) == 0 ||
             memcmp(name + length - 5, "_ptds", 5) == 0)) {
            length -= 5;
            cut = true;
        }
    }
    return length;
}

/* The first ENUM_* table whose name is LIKE PATTERN, into NAME; false when none. */
bool nvs_sql_find_enum_table(struct database *database, const char *pattern, char *name,
                             size_t size)
{
    sqlite3_stmt *statement;
    if (sqlite3_prepare_v2(database->db,
                           "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ? "
                           "ORDER BY name",
                           -1, &statement, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(statement, 1, pattern, -1, SQLITE_STATIC);
    bool found = sqlite3_step(statement) == SQLITE_ROW && sqlite3_column_text(statement, 0);
    if (found)
        snprintf(name, size, "%s", (const char *)sqlite3_column_text(statement, 0));
    sqlite3_finalize(statement);
    return found;
}

static const char *name_of(const struct nvs_events *events, uint32_t pid, uint32_t tid)
{
    for (size_t i = 0; i < events->name_count; i++)
        if (events->names[i].pid == pid && events->names[i].tid == tid)
            return events->names[i].name;
    return NULL;
}

/* The state row of thread (PID, TID) named after the thread. */
bool nvs_sql_name_state_row(struct nvs_events *events, uint32_t pid, uint32_t tid)
{
    const char *thread = name_of(events, pid, tid);
    char row[160];
    if (thread)
        snprintf(row, sizeof row, "%s (state)", thread);
    else
        snprintf(row, sizeof row, "thread %" PRIu32 " (state)", tid);
    const char *name = nvs_events_intern_string(events, row);
    return name && nvs_events_add_name(events, pid, nvs_sql_state_row(tid), name, false);
}

/* Tables with rows that convert does not map, in one line. */
void nvs_sql_say_left_out(struct database *database)
{
    static const char *const mapped[] = {
        "StringIds",
        "NVTX_EVENTS",
        "OSRT_API",
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
        "SCHED_EVENTS",
        "ThreadNames",
        "PROCESSES",
        /* not events: descriptions of the session and the machine */
        "EXPORT_META_DATA",
        "ANALYSIS_DETAILS",
        "ProcessStreams",
        "UnwindMethodType",
    };
    sqlite3_stmt *tables = nvs_sql_prepare(
        database,
        "SELECT name FROM sqlite_master WHERE type = 'table' "
        "AND name NOT LIKE 'ENUM_%' AND name NOT LIKE 'TARGET_INFO_%' "
        "AND name NOT LIKE 'sqlite_%' ORDER BY name");
    if (!tables)
        return;
    struct nvs_json_text line = { 0 };
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
bool nvs_sql_is_nsys_export(struct database *database)
{
    sqlite3_stmt *statement = nvs_sql_prepare(
        database,
        "SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND (name IN ('NVTX_EVENTS', "
        "'OSRT_API', 'SCHED_EVENTS', 'StringIds', 'ThreadNames', 'PROCESSES', 'COMPOSITE_EVENTS', "
        "'EXPORT_META_DATA', 'ANALYSIS_DETAILS', 'PROFILER_OVERHEAD') OR name LIKE 'CUPTI\\_%' ESCAPE '\\' "
        "OR name LIKE 'TARGET\\_INFO\\_%' ESCAPE '\\') LIMIT 1");
    if (!statement)
        return false;
    bool found = sqlite3_step(statement) == SQLITE_ROW;
    sqlite3_finalize(statement);
    if (!found)
        nvs_events_say(
            database->options,
            "%s is not an nsys export (an SQLite database with none of the "
            "tables nsys export writes: NVTX_EVENTS, OSRT_API, CUPTI_*, SCHED_EVENTS, StringIds, "
            "TARGET_INFO_*, ...)",
            database->path);
    return found;
}
