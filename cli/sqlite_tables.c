/* The SQLite export's tables as the loaders (sqlite_reader.c) ask for them:
 * whether a table and its columns are there, queries built from the columns
 * this export has, the values read back. */
#define _GNU_SOURCE
#include "sqlite_tables.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool nvs_sql_has_table(struct database *database, const char *table)
{
    sqlite3_stmt *statement;
    if (sqlite3_prepare_v2(database->db,
                           "SELECT 1 FROM sqlite_master WHERE type IN ('table','view') AND name = ?",
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
                          const char *const *needed, size_t count, const char *what, const char *hint)
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
        return nvs_events_intern(database->events, (const char *)sqlite3_column_text(statement, column),
                                 (size_t)sqlite3_column_bytes(statement, column));
    case SQLITE_INTEGER: {
        sqlite3_int64 id = sqlite3_column_int64(statement, column);
        if (database->strings || !database->string_lookup)
            return id >= 0 && (size_t)id < database->string_count ? database->strings[id] : NULL;
        const char *text = nvs_sql_string_id(database, id);
        return text ? nvs_events_intern_string(database->events, text) : NULL;
    }
    default:
        return NULL;
    }
}

const char *nvs_sql_string_id(struct database *database, int64_t id)
{
    if (database->strings || !database->string_lookup)
        return id >= 0 && (size_t)id < database->string_count ? database->strings[id] : NULL;
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
    *slot = (struct string_slot){id, text};
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
