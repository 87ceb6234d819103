/* The SQLite export's tables, for the loaders of sqlite_reader.c alone: the
 * database being read, a table's columns, queries built from them. Columns
 * differ between nsys versions, so each query is built from PRAGMA table_info,
 * and what is missing is said. */
#ifndef NVS_CLI_SQLITE_TABLES_H
#define NVS_CLI_SQLITE_TABLES_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events.h"

#define MAX_COLUMNS 96

struct columns {
    int count;
    char names[MAX_COLUMNS][48];
};

struct database {
    sqlite3 *db;
    const char *path;
    const struct nvs_load_options *options;
    struct nvs_events *events;
    const char **strings;            /* StringIds: id -> interned text, read whole (report) */
    size_t string_count;
    /* ... or looked up one at a time (convert), the last few kept: a slot by id */
    sqlite3_stmt *string_lookup;
    struct string_slot { int64_t id; char *text; } *string_cache;
};

#define STRING_CACHE 4096

/* StringIds' text of ID: from the strings read whole, or looked up (good until
 * the next lookup); NULL when there is none. */
const char *nvs_sql_string_id(struct database *database, int64_t id);

/* A query built from the columns there: each wanted column, or NULL in its
 * place when this export has none. */
struct query {
    char sql[1024];
    size_t length;
};

bool nvs_sql_has_table(struct database *database, const char *table);
void nvs_sql_read_columns(struct database *database, const char *table, struct columns *columns);
bool nvs_sql_has_column(const struct columns *columns, const char *name);
bool nvs_sql_require_table(struct database *database, const char *table, struct columns *columns,
                          const char *const *needed, size_t count, const char *what, const char *hint);
void nvs_sql_query_column(struct query *query, const struct columns *columns, const char *name);
void nvs_sql_query_start(struct query *query);
void nvs_sql_query_end(struct query *query, const char *rest);
sqlite3_stmt *nvs_sql_prepare(struct database *database, const char *sql);
sqlite3_stmt *nvs_sql_select_columns(struct database *database, const struct columns *columns,
                                    const char *const *wanted, size_t count, const char *table,
                                    const char *rest);
bool nvs_sql_is_null(sqlite3_stmt *statement, int column);
const char *nvs_sql_string_column(struct database *database, sqlite3_stmt *statement, int column);
bool nvs_sql_grow(void **items, size_t *capacity, size_t count, size_t size);

#endif
