/* The SQLite export's tables, for its reader, sqlite_stream.c (and
 * sqlite_names.c), alone: the database being read, a table's columns,
 * queries built from them, and what the rows are read with. Columns differ
 * between nsys versions, so each query is built from PRAGMA table_info, and
 * what is missing is said. */
#ifndef NVS_CLI_SQLITE_TABLES_H
#define NVS_CLI_SQLITE_TABLES_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/events.h"

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
    /* StringIds: looked up one at a time, the last few kept (a slot by id);
     * NULL where the export has no StringIds */
    sqlite3_stmt *string_lookup;
    struct string_slot {
        int64_t id;
        char *text;
    } * string_cache;
};

#define STRING_CACHE 4096

/* StringIds' text of ID, looked up (good until the next lookup); NULL when
 * there is none. */
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
                           const char *const *needed, size_t count, const char *what,
                           const char *hint);
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

/* ---- what both loaders read the rows with ---- */

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
    struct {
        int64_t id;
        const char *name;
    } * items;
    size_t count, capacity;
};

struct category_names {
    struct {
        int64_t domain, id;
        const char *name;
    } * items;
    size_t count, capacity;
};

/* The payload columns of NVTX_EVENTS, in the order nsys fills them. */
#define NVS_SQL_PAYLOADS 6
extern const char *const nvs_sql_payload_columns[NVS_SQL_PAYLOADS];

/* Columns of the NVTX query, in order. */
enum {
    N_START,
    N_END,
    N_TYPE,
    N_TEXT,
    N_TEXT_ID,
    N_TID,
    N_DOMAIN,
    N_CATEGORY,
    N_COLOR,
    N_END_TID,
    N_PAYLOAD,
};

/* The label of an ENUM_* table's id, when the table is there; small ids are
 * looked up once (a query per copy would cost more than the copy's row). */
#define LABELS 64

struct labels {
    const char *table;
    bool present;
    bool looked[LABELS];
    const char *label[LABELS];
};

enum gpu_table { GPU_KERNEL, GPU_COPY, GPU_SET };

/* Columns of the SCHED_EVENTS query, in order. */
enum { S_START, S_CPU, S_IN, S_TID, S_STATE, S_BLOCK };

/* GPU work goes on a row of its own per device and stream, in the process that
 * issued it: a thread id above any Linux one (at most 2^22). */
static inline uint32_t nvs_sql_stream_row(int64_t device, int64_t stream)
{
    return 0x800000u | ((uint32_t)device & 0x7Fu) << 16 | ((uint32_t)stream & 0xFFFFu);
}

/* A thread's states go on a row of their own beside it, so that they do not
 * tangle with its ranges: a thread id above any Linux one (at most 2^22) and
 * the GPU's rows (stream_row). */
static inline uint32_t nvs_sql_state_row(uint32_t tid)
{
    return 0x40000000u | tid;
}

/* The name of the NVTX domain in COLUMN ("default" for none or 0, "domain N"
 * for one not named), interned. */
const char *nvs_sql_domain_name(struct database *database, const struct domain_names *domains,
                                sqlite3_stmt *statement, int column);
/* The name of category ID of DOMAIN, or NULL. */
const char *nvs_sql_category_name(const struct category_names *categories, int64_t domain,
                                  int64_t id);
/* The label of ID in LABELS' ENUM_* table, when the table is there (small ids looked up once). */
const char *nvs_sql_label(struct database *database, struct labels *labels, int64_t id);
/* CUPTI's name of copy kind KIND, for exports without ENUM_CUDA_MEMCPY_OPER. */
const char *nvs_sql_copy_kind(int64_t kind);
/* How much of a CUDA API call's NAME is its name as the program called it. */
size_t nvs_sql_api_name_length(const char *name);
/* The first ENUM_* table whose name is LIKE PATTERN, into NAME; false when none. */
bool nvs_sql_find_enum_table(struct database *database, const char *pattern, char *name,
                             size_t size);
/* The state row of thread (PID, TID) named after the thread. False when out of memory. */
bool nvs_sql_name_state_row(struct nvs_events *events, uint32_t pid, uint32_t tid);
/* The tables with rows that convert does not map, in one line. */
void nvs_sql_say_left_out(struct database *database);
/* Whether DATABASE has any table nsys export writes; else false after a line. */
bool nvs_sql_is_nsys_export(struct database *database);

#endif
