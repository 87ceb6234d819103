/* Loading a profile into the event model (events.h): the file's kind, nsys
 * export for a .nsys-rep, the SQLite export's tables read defensively (their
 * columns differ between nsys versions: each query is built from PRAGMA
 * table_info), and trace files through trace_json. */
#define _GNU_SOURCE
#include "events.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trace_json.h"

/* ---- strings: interned, so that equal names are equal pointers ------------- */

#define POOL_BLOCK_BYTES (256u * 1024u)

struct pool_block {
    struct pool_block *next;
    size_t size, used;
    max_align_t data[];
};

struct nvs_string_pool {
    struct pool_block *blocks;
    const char **slots;
    size_t slot_count, used;
};

static void *pool_alloc(struct nvs_string_pool *pool, size_t size)
{
    size = (size + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
    struct pool_block *block = pool->blocks;
    if (!block || block->size - block->used < size) {
        size_t capacity = size > POOL_BLOCK_BYTES / 4 ? size : POOL_BLOCK_BYTES;
        struct pool_block *fresh = malloc(sizeof *fresh + capacity);
        if (!fresh)
            return NULL;
        fresh->size = capacity;
        fresh->used = 0;
        if (size > POOL_BLOCK_BYTES / 4 && block) {
            /* a big one gets a block of its own, behind the current one */
            fresh->next = block->next;
            block->next = fresh;
        } else {
            fresh->next = block;
            pool->blocks = fresh;
        }
        block = fresh;
    }
    void *memory = (char *)block->data + block->used;
    block->used += size;
    return memory;
}

static uint64_t hash_text(const char *text, size_t length)
{
    uint64_t hash = 14695981039346656037ull;
    for (size_t i = 0; i < length; i++)
        hash = (hash ^ (unsigned char)text[i]) * 1099511628211ull;
    return hash;
}

static bool pool_grow(struct nvs_string_pool *pool)
{
    size_t count = pool->slot_count ? pool->slot_count * 2 : 1024;
    const char **slots = calloc(count, sizeof *slots);
    if (!slots)
        return false;
    for (size_t i = 0; i < pool->slot_count; i++) {
        const char *text = pool->slots[i];
        if (!text)
            continue;
        size_t slot = hash_text(text, strlen(text)) & (count - 1);
        while (slots[slot])
            slot = (slot + 1) & (count - 1);
        slots[slot] = text;
    }
    free(pool->slots);
    pool->slots = slots;
    pool->slot_count = count;
    return true;
}

const char *nvs_events_intern(struct nvs_events *events, const char *text, size_t length)
{
    struct nvs_string_pool *pool = events->strings;
    if (!pool && !(pool = events->strings = calloc(1, sizeof *pool)))
        return NULL;
    if ((pool->used + 1) * 2 > pool->slot_count && !pool_grow(pool))
        return NULL;
    const char *end = memchr(text, '\0', length);
    if (end)
        length = (size_t)(end - text);
    size_t mask = pool->slot_count - 1;
    size_t slot = hash_text(text, length) & mask;
    for (; pool->slots[slot]; slot = (slot + 1) & mask) {
        const char *candidate = pool->slots[slot];
        if (memcmp(candidate, text, length) == 0 && candidate[length] == '\0')
            return candidate;
    }
    char *copy = pool_alloc(pool, length + 1);
    if (!copy)
        return NULL;
    memcpy(copy, text, length);
    copy[length] = '\0';
    pool->slots[slot] = copy;
    pool->used++;
    return copy;
}

static const char *intern(struct nvs_events *events, const char *text)
{
    return nvs_events_intern(events, text, strlen(text));
}

/* ---- the event and name lists --------------------------------------------- */

struct nvs_event *nvs_events_add(struct nvs_events *events)
{
    if (events->count == events->capacity) {
        size_t capacity = events->capacity ? events->capacity * 2 : 4096;
        struct nvs_event *grown = realloc(events->events, capacity * sizeof *grown);
        if (!grown)
            return NULL;
        events->events = grown;
        events->capacity = capacity;
    }
    struct nvs_event *event = &events->events[events->count++];
    memset(event, 0, sizeof *event);
    return event;
}

/* A name for (PID, TID); an existing one is replaced only when REPLACE. */
static bool add_name(struct nvs_events *events, uint32_t pid, uint32_t tid, const char *name,
                     bool replace)
{
    for (size_t i = events->name_count; i-- > 0;) {
        struct nvs_thread_name *known = &events->names[i];
        if (known->pid == pid && known->tid == tid) {
            if (replace)
                known->name = name;
            return true;
        }
    }
    if (events->name_count == events->name_capacity) {
        size_t capacity = events->name_capacity ? events->name_capacity * 2 : 64;
        struct nvs_thread_name *grown = realloc(events->names, capacity * sizeof *grown);
        if (!grown)
            return false;
        events->names = grown;
        events->name_capacity = capacity;
    }
    events->names[events->name_count++] = (struct nvs_thread_name){pid, tid, name};
    return true;
}

void nvs_events_free(struct nvs_events *events)
{
    struct nvs_string_pool *pool = events->strings;
    if (pool) {
        while (pool->blocks) {
            struct pool_block *next = pool->blocks->next;
            free(pool->blocks);
            pool->blocks = next;
        }
        free(pool->slots);
        free(pool);
    }
    free(events->events);
    free(events->names);
    memset(events, 0, sizeof *events);
}

/* A stable merge sort by start time (qsort is not stable). */
void nvs_events_sort(struct nvs_events *events)
{
    size_t count = events->count;
    if (count < 2)
        return;
    struct nvs_event *from = events->events;
    struct nvs_event *to = malloc(count * sizeof *to);
    if (!to) {
        /* no memory for the merge: insertion sort is slow but stable */
        for (size_t i = 1; i < count; i++) {
            struct nvs_event held = from[i];
            size_t j = i;
            for (; j > 0 && from[j - 1].start > held.start; j--)
                from[j] = from[j - 1];
            from[j] = held;
        }
        return;
    }
    struct nvs_event *original = from;
    for (size_t width = 1; width < count; width *= 2) {
        for (size_t low = 0; low < count; low += 2 * width) {
            size_t middle = low + width < count ? low + width : count;
            size_t high = low + 2 * width < count ? low + 2 * width : count;
            size_t a = low, b = middle, out = low;
            while (a < middle && b < high)
                to[out++] = from[b].start < from[a].start ? from[b++] : from[a++];
            while (a < middle)
                to[out++] = from[a++];
            while (b < high)
                to[out++] = from[b++];
        }
        struct nvs_event *swap = from;
        from = to;
        to = swap;
    }
    if (from != original)
        memcpy(original, from, count * sizeof *from);
    free(from == original ? to : from);
}

uint32_t nvs_global_pid(int64_t global_tid)
{
    return (uint32_t)(((uint64_t)global_tid >> 24) & 0xFFFFFFu);
}

uint32_t nvs_global_tid(int64_t global_tid)
{
    return (uint32_t)((uint64_t)global_tid & 0xFFFFFFu);
}

/* ---- messages ----------------------------------------------------------------- */

static void say(const struct nvs_load_options *options, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

static void say(const struct nvs_load_options *options, const char *format, ...)
{
    char line[1024];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(line, sizeof line, format, arguments);
    va_end(arguments);
    fprintf(stderr, "nvtxshim: %s: %s\n", options->command, line);
}

/* ---- SQLite exports -------------------------------------------------------- */

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
    const char **strings;            /* StringIds: id -> interned text */
    size_t string_count;
};

static bool has_table(struct database *database, const char *table)
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

static void read_columns(struct database *database, const char *table, struct columns *columns)
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

static bool has_column(const struct columns *columns, const char *name)
{
    for (int i = 0; i < columns->count; i++)
        if (strcmp(columns->names[i], name) == 0)
            return true;
    return false;
}

/* A query built from the columns there: each wanted column, or NULL in its
 * place when this export has none. */
struct query {
    char sql[1024];
    size_t length;
};

static void query_column(struct query *query, const struct columns *columns, const char *name)
{
    int written = snprintf(query->sql + query->length, sizeof query->sql - query->length,
                           "%s%s%s%s", query->length > 7 ? ", " : "",
                           has_column(columns, name) ? "\"" : "",
                           has_column(columns, name) ? name : "NULL",
                           has_column(columns, name) ? "\"" : "");
    if (written > 0)
        query->length += (size_t)written;
}

static void query_start(struct query *query)
{
    strcpy(query->sql, "SELECT ");
    query->length = 7;
}

static void query_end(struct query *query, const char *rest)
{
    snprintf(query->sql + query->length, sizeof query->sql - query->length, " %s", rest);
}

static sqlite3_stmt *prepare(struct database *database, const char *sql)
{
    sqlite3_stmt *statement = NULL;
    if (sqlite3_prepare_v2(database->db, sql, -1, &statement, NULL) != SQLITE_OK) {
        say(database->options, "%s: %s", database->path, sqlite3_errmsg(database->db));
        return NULL;
    }
    return statement;
}

static bool is_null(sqlite3_stmt *statement, int column)
{
    return sqlite3_column_type(statement, column) == SQLITE_NULL;
}

/* A string column: text as it is, or an id into StringIds. NULL when neither. */
static const char *string_column(struct database *database, sqlite3_stmt *statement, int column)
{
    switch (sqlite3_column_type(statement, column)) {
    case SQLITE_TEXT:
        return nvs_events_intern(database->events, (const char *)sqlite3_column_text(statement, column),
                                 (size_t)sqlite3_column_bytes(statement, column));
    case SQLITE_INTEGER: {
        sqlite3_int64 id = sqlite3_column_int64(statement, column);
        return id >= 0 && (size_t)id < database->string_count ? database->strings[id] : NULL;
    }
    default:
        return NULL;
    }
}

static int load_strings(struct database *database)
{
    if (!has_table(database, "StringIds"))
        return 0;
    sqlite3_stmt *statement = prepare(database, "SELECT max(id) FROM StringIds");
    if (!statement)
        return -1;
    sqlite3_int64 largest = sqlite3_step(statement) == SQLITE_ROW ? sqlite3_column_int64(statement, 0) : -1;
    sqlite3_finalize(statement);
    if (largest < 0)
        return 0;
    if (largest > 100000000) {
        say(database->options, "%s: StringIds ids up to %lld: not read", database->path,
            (long long)largest);
        return 0;
    }
    database->string_count = (size_t)largest + 1;
    database->strings = calloc(database->string_count, sizeof *database->strings);
    if (!database->strings) {
        say(database->options, "out of memory");
        return -1;
    }
    if (!(statement = prepare(database, "SELECT id, value FROM StringIds")))
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

static bool grow(void **items, size_t *capacity, size_t count, size_t size)
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

static const char *domain_name(struct database *database, const struct domain_names *domains,
                               sqlite3_stmt *statement, int column)
{
    if (is_null(statement, column) || sqlite3_column_int64(statement, column) == 0)
        return intern(database->events, "default");
    int64_t id = sqlite3_column_int64(statement, column);
    for (size_t i = 0; i < domains->count; i++)
        if (domains->items[i].id == id)
            return domains->items[i].name;
    char name[32];
    snprintf(name, sizeof name, "domain %" PRId64, id);
    return intern(database->events, name);
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
    if (!has_table(database, "NVTX_EVENTS")) {
        if (options->say_skipped)
            say(options, "no NVTX_EVENTS table: no NVTX ranges or marks (profile with -t nvtx for them)");
        return 0;
    }
    struct columns columns;
    read_columns(database, "NVTX_EVENTS", &columns);
    if (!has_column(&columns, "start") || !has_column(&columns, "eventType")) {
        say(options, "%s: NVTX_EVENTS has no %s column: NVTX events skipped", database->path,
            has_column(&columns, "start") ? "eventType" : "start");
        return 0;
    }
    if (!has_column(&columns, "text") && !has_column(&columns, "textId")) {
        say(options, "%s: NVTX_EVENTS has neither text nor textId: NVTX events skipped",
            database->path);
        return 0;
    }
    bool everything = options->what == NVS_LOAD_EVERYTHING;
    if (options->say_skipped) {
        if (!has_column(&columns, "end"))
            say(options, "NVTX_EVENTS has no end column: NVTX ranges skipped, marks kept");
        if (!has_column(&columns, "domainId"))
            say(options, "NVTX_EVENTS has no domainId column: every event in domain \"default\"");
        if (!has_column(&columns, "globalTid"))
            say(options, "NVTX_EVENTS has no globalTid column: every event on thread 0");
        if (everything && !has_column(&columns, "category"))
            say(options, "NVTX_EVENTS has no category column: categories skipped");
    }
    struct query query;
    query_start(&query);
    static const char *const wanted[] = {"start", "end", "eventType", "text", "textId",
                                         "globalTid", "domainId", "category", "color",
                                         "endGlobalTid"};
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
        query_column(&query, &columns, wanted[i]);
    for (size_t i = 0; i < PAYLOADS; i++)
        query_column(&query, &columns, payload_columns[i]);
    query_end(&query, "FROM NVTX_EVENTS WHERE eventType IN (33, 75, 39) ORDER BY eventType DESC");

    /* Domains, category names and NVTX thread names first: ranges refer to them. */
    struct domain_names domains = {0};
    struct category_names categories = {0};
    int status = 0;
    sqlite3_stmt *statement = prepare(database, query.sql);
    if (!statement)
        return -1;
    while (sqlite3_step(statement) == SQLITE_ROW) {
        int type = sqlite3_column_int(statement, N_TYPE);
        const char *text = string_column(database, statement, N_TEXT);
        if (!text)
            text = string_column(database, statement, N_TEXT_ID);
        if (!text)
            continue;
        if (type == NVTX_DOMAIN_CREATE && !is_null(statement, N_DOMAIN)) {
            if (!grow((void **)&domains.items, &domains.capacity, domains.count, sizeof *domains.items)) {
                status = -1;
                break;
            }
            domains.items[domains.count].id = sqlite3_column_int64(statement, N_DOMAIN);
            domains.items[domains.count++].name = text;
        } else if (type == NVTX_CATEGORY_NAME && !is_null(statement, N_CATEGORY)) {
            if (!grow((void **)&categories.items, &categories.capacity, categories.count,
                      sizeof *categories.items)) {
                status = -1;
                break;
            }
            categories.items[categories.count].domain =
                is_null(statement, N_DOMAIN) ? 0 : sqlite3_column_int64(statement, N_DOMAIN);
            categories.items[categories.count].id = sqlite3_column_int64(statement, N_CATEGORY);
            categories.items[categories.count++].name = text;
        } else if (type == NVTX_THREAD_NAME && everything && !is_null(statement, N_TID)) {
            int64_t global = sqlite3_column_int64(statement, N_TID);
            if (!add_name(database->events, nvs_global_pid(global), nvs_global_tid(global), text, true))
                status = -1;
        }
    }
    sqlite3_finalize(statement);

    size_t unnamed = 0, open = 0;
    query.sql[query.length] = '\0';
    query_end(&query, "FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60)");
    if (status == 0 && !(statement = prepare(database, query.sql)))
        status = -1;
    struct nvs_json_text args = {0};
    while (status == 0 && sqlite3_step(statement) == SQLITE_ROW) {
        int type = sqlite3_column_int(statement, N_TYPE);
        const char *name = string_column(database, statement, N_TEXT);
        if (!name)
            name = string_column(database, statement, N_TEXT_ID);
        if (!name) {
            unnamed++;
            continue;
        }
        bool mark = type == NVTX_MARK;
        if (!mark && is_null(statement, N_END)) {
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
        int64_t global = is_null(statement, N_TID) ? 0 : sqlite3_column_int64(statement, N_TID);
        event->pid = nvs_global_pid(global);
        event->tid = nvs_global_tid(global);
        event->async = type == NVTX_START_END;
        /* endGlobalTid: the thread that ended it (NULL, in the exports seen here, where that
         * is the thread that started it) */
        if (event->async && !is_null(statement, N_END_TID))
            event->end_tid = nvs_global_tid(sqlite3_column_int64(statement, N_END_TID));
        if (!everything)
            continue;
        /* args as the recorder writes them: category, payload, colour (marks only) */
        args.length = 0;
        if (!is_null(statement, N_CATEGORY) && sqlite3_column_int64(statement, N_CATEGORY) != 0) {
            int64_t domain = is_null(statement, N_DOMAIN) ? 0 : sqlite3_column_int64(statement, N_DOMAIN);
            int64_t id = sqlite3_column_int64(statement, N_CATEGORY);
            const char *category = category_name(&categories, domain, id);
            if (category)
                nvs_json_text_add_string_member(&args, "category", category);
            else
                nvs_json_text_add(&args, "%s\"category\":%" PRId64, args.length ? "," : "", id);
        }
        for (size_t i = 0; i < PAYLOADS; i++) {
            int column = N_PAYLOAD + (int)i;
            if (is_null(statement, column))
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
        if (mark && !is_null(statement, N_COLOR)) {
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
        say(options, "out of memory reading %s", database->path);
    else if (options->say_skipped && (unnamed || open))
        say(options, "left out %zu NVTX ranges never closed and %zu events without a message",
            open, unnamed);
    return status;
}

/* OS runtime calls: name from StringIds, on the calling thread. */
static int load_os_calls(struct database *database)
{
    const struct nvs_load_options *options = database->options;
    if (!has_table(database, "OSRT_API")) {
        if (options->say_skipped)
            say(options, "no OSRT_API table: OS runtime calls skipped (profile with -t osrt for them)");
        return 0;
    }
    struct columns columns;
    read_columns(database, "OSRT_API", &columns);
    static const char *const needed[] = {"start", "end", "nameId"};
    for (size_t i = 0; i < 3; i++)
        if (!has_column(&columns, needed[i])) {
            if (options->say_skipped)
                say(options, "OSRT_API has no %s column: OS runtime calls skipped", needed[i]);
            return 0;
        }
    struct query query;
    query_start(&query);
    query_column(&query, &columns, "start");
    query_column(&query, &columns, "end");
    query_column(&query, &columns, "nameId");
    query_column(&query, &columns, "globalTid");
    query_column(&query, &columns, "returnValue");
    query_end(&query, "FROM OSRT_API");
    sqlite3_stmt *statement = prepare(database, query.sql);
    if (!statement)
        return -1;
    const char *category = intern(database->events, NVS_CATEGORY_OS_CALL);
    const char *unknown = intern(database->events, "[unknown OS call]");
    char args[64];
    int status = 0;
    while (sqlite3_step(statement) == SQLITE_ROW) {
        struct nvs_event *event = nvs_events_add(database->events);
        if (!event || !category || !unknown) {
            status = -1;
            break;
        }
        event->kind = NVS_EVENT_OS_CALL;
        event->start = sqlite3_column_int64(statement, 0);
        event->end = is_null(statement, 1) ? event->start : sqlite3_column_int64(statement, 1);
        event->name = string_column(database, statement, 2);
        if (!event->name)
            event->name = unknown;
        event->domain = category;
        int64_t global = is_null(statement, 3) ? 0 : sqlite3_column_int64(statement, 3);
        event->pid = nvs_global_pid(global);
        event->tid = nvs_global_tid(global);
        if (!is_null(statement, 4)) {
            snprintf(args, sizeof args, "\"return\":%lld", (long long)sqlite3_column_int64(statement, 4));
            event->args = intern(database->events, args);
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
        label = intern(database->events, (const char *)sqlite3_column_text(statement, 0));
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
    if (!has_table(database, table)) {
        if (options->say_skipped)
            say(options, "no %s table: %s skipped (none ran, or not profiled with -t cuda)", table,
                what[which]);
        return 0;
    }
    struct columns columns;
    read_columns(database, table, &columns);
    if (!has_column(&columns, "start") || !has_column(&columns, "end")) {
        if (options->say_skipped)
            say(options, "%s has no start or end column: %s skipped", table, what[which]);
        return 0;
    }
    if (options->say_skipped) {
        if (!has_column(&columns, "globalPid"))
            say(options, "%s has no globalPid column: %s shown in process 0", table, what[which]);
        if (which == GPU_KERNEL && !has_column(&columns, "demangledName") &&
            !has_column(&columns, "shortName"))
            say(options, "%s has no demangledName or shortName column: kernels unnamed", table);
    }
    struct query query;
    query_start(&query);
    static const char *const wanted[] = {"start", "end", "globalPid", "deviceId", "streamId",
                                         "correlationId", "demangledName", "shortName", "bytes",
                                         "copyKind", "srcKind", "dstKind", "value"};
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
        query_column(&query, &columns, wanted[i]);
    query_end(&query, "FROM ");
    strncat(query.sql, table, sizeof query.sql - strlen(query.sql) - 1);
    sqlite3_stmt *statement = prepare(database, query.sql);
    if (!statement)
        return -1;
    const char *category = intern(database->events, categories[which]);
    struct labels copy_labels = {.table = "ENUM_CUDA_MEMCPY_OPER"};
    struct labels memory_labels = {.table = "ENUM_CUDA_MEM_KIND"};
    copy_labels.present = has_table(database, copy_labels.table);
    memory_labels.present = has_table(database, memory_labels.table);
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
        event->pid = is_null(statement, 2) ? 0 : nvs_global_pid(sqlite3_column_int64(statement, 2));
        int64_t device = sqlite3_column_int64(statement, 3), stream = sqlite3_column_int64(statement, 4);
        event->tid = stream_row(device, stream);
        if (event->pid != last_pid || event->tid != last_row) {
            char row[64];
            snprintf(row, sizeof row, "CUDA stream %" PRId64 " (device %" PRId64 ")", stream, device);
            if (!add_name(database->events, event->pid, event->tid, intern(database->events, row), false))
                status = -1;
            last_pid = event->pid;
            last_row = event->tid;
        }
        args.length = 0;
        nvs_json_text_add(&args, "\"device\":%" PRId64 ",\"stream\":%" PRId64, device, stream);
        if (!is_null(statement, 5))
            nvs_json_text_add(&args, ",\"correlation\":%lld",
                              (long long)sqlite3_column_int64(statement, 5));
        char name[160];
        if (which == GPU_KERNEL) {
            const char *kernel = string_column(database, statement, 6);
            if (!kernel)
                kernel = string_column(database, statement, 7);
            event->name = kernel ? kernel : intern(database->events, "[CUDA kernel]");
        } else {
            if (!is_null(statement, 8))
                nvs_json_text_add(&args, ",\"bytes\":%lld",
                                  (long long)sqlite3_column_int64(statement, 8));
            if (which == GPU_COPY) {
                int64_t kind = sqlite3_column_int64(statement, 9);
                const char *label = cached_label(database, &copy_labels, kind);
                snprintf(name, sizeof name, "CUDA memcpy %s", label ? label : copy_kind(kind));
                for (int side = 0; side < 2; side++) {
                    if (is_null(statement, 10 + side))
                        continue;
                    int64_t memory = sqlite3_column_int64(statement, 10 + side);
                    const char *memory_label = cached_label(database, &memory_labels, memory);
                    if (memory_label)
                        nvs_json_text_add_string_member(&args, side ? "dst" : "src", memory_label);
                }
            } else {
                snprintf(name, sizeof name, "CUDA memset");
                if (!is_null(statement, 12))
                    nvs_json_text_add(&args, ",\"value\":%lld",
                                      (long long)sqlite3_column_int64(statement, 12));
            }
            event->name = intern(database->events, name);
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

static int load_names(struct database *database)
{
    const struct nvs_load_options *options = database->options;
    struct nvs_events *events = database->events;
    if (has_table(database, "ThreadNames")) {
        struct columns columns;
        read_columns(database, "ThreadNames", &columns);
        if (has_column(&columns, "nameId") && has_column(&columns, "globalTid")) {
            sqlite3_stmt *statement = prepare(database, "SELECT globalTid, nameId FROM ThreadNames");
            if (!statement)
                return -1;
            while (sqlite3_step(statement) == SQLITE_ROW) {
                const char *name = string_column(database, statement, 1);
                int64_t global = sqlite3_column_int64(statement, 0);
                /* an NVTX name (nvtxNameOsThread) read before stays */
                if (name && !add_name(events, nvs_global_pid(global), nvs_global_tid(global), name, false))
                    return -1;
            }
            sqlite3_finalize(statement);
        } else if (options->say_skipped) {
            say(options, "ThreadNames has no nameId or globalTid column: threads unnamed");
        }
    } else if (options->say_skipped) {
        say(options, "no ThreadNames table: threads unnamed (NVTX thread names kept)");
    }
    if (has_table(database, "PROCESSES")) {
        struct columns columns;
        read_columns(database, "PROCESSES", &columns);
        if (has_column(&columns, "name") && (has_column(&columns, "pid") || has_column(&columns, "globalPid"))) {
            sqlite3_stmt *statement = prepare(database, has_column(&columns, "pid")
                                                            ? "SELECT pid, name FROM PROCESSES"
                                                            : "SELECT globalPid >> 24, name FROM PROCESSES");
            if (!statement)
                return -1;
            while (sqlite3_step(statement) == SQLITE_ROW) {
                const char *name = string_column(database, statement, 1);
                uint32_t pid = (uint32_t)sqlite3_column_int64(statement, 0) & 0xFFFFFFu;
                if (name && !add_name(events, pid, 0, name, true))
                    return -1;
            }
            sqlite3_finalize(statement);
        } else if (options->say_skipped) {
            say(options, "PROCESSES has no pid or name column: processes named after their main thread");
        }
    } else if (options->say_skipped) {
        say(options, "no PROCESSES table: processes named after their main thread");
    }
    return 0;
}

/* Tables with rows that convert does not map, in one line. */
static void say_left_out(struct database *database)
{
    static const char *const mapped[] = {
        "StringIds", "NVTX_EVENTS", "OSRT_API", "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET", "ThreadNames", "PROCESSES",
        /* not events: descriptions of the session and the machine */
        "EXPORT_META_DATA", "ANALYSIS_DETAILS", "ProcessStreams", "UnwindMethodType",
    };
    sqlite3_stmt *tables = prepare(database, "SELECT name FROM sqlite_master WHERE type = 'table' "
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
        say(database->options, "not converted: %s", line.bytes);
    free(line.bytes);
}

static int load_sqlite(struct nvs_events *events, const char *path, const struct nvs_load_options *options)
{
    struct database database = {.path = path, .options = options, .events = events};
    if (sqlite3_open_v2(path, &database.db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        say(options, "cannot open %s: %s", path, database.db ? sqlite3_errmsg(database.db) : "out of memory");
        sqlite3_close(database.db);
        return -1;
    }
    sqlite3_stmt *check;
    if (sqlite3_prepare_v2(database.db, "SELECT count(*) FROM sqlite_master", -1, &check, NULL) != SQLITE_OK ||
        sqlite3_step(check) != SQLITE_ROW) {
        say(options, "cannot read %s: %s", path, sqlite3_errmsg(database.db));
        sqlite3_finalize(check);
        sqlite3_close(database.db);
        return -1;
    }
    sqlite3_finalize(check);
    int status = load_strings(&database);
    if (status == 0)
        status = load_nvtx(&database);
    if (status == 0 && options->what == NVS_LOAD_EVERYTHING) {
        status = load_os_calls(&database);
        for (int which = GPU_KERNEL; status == 0 && which <= GPU_SET; which++)
            status = load_gpu(&database, (enum gpu_table)which);
        if (status == 0)
            status = load_names(&database);
        if (status == 0 && options->say_skipped)
            say_left_out(&database);
    }
    free(database.strings);
    sqlite3_close(database.db);
    return status;
}

/* ---- trace files ------------------------------------------------------------ */

/* The kernel probe's figures in a range's args, each there or not: an async
 * end's figures replace its begin's one by one. */
enum { FIGURE_RUNNABLE, FIGURE_BLOCKED, FIGURE_PREEMPTIONS, FIGURE_FAULTS, FIGURE_MIGRATIONS, FIGURES };

static const char *const figure_keys[FIGURES] = {
    "offcpu_runnable_ns", "offcpu_blocked_ns", "offcpu_preemptions", "offcpu_faults", "offcpu_migrations",
};

struct figures {
    uint64_t value[FIGURES];
    unsigned present;                /* a bit per figure */
};

/* What joins an async begin ("ph":"b") to its end ("ph":"e"): the process,
 * the category (interned: compared as a pointer) and the id, a number (a
 * string, interned, in other writers' traces). */
struct async_key {
    uint32_t pid;
    const char *domain, *id_text;
    int64_t id;
};

/* One half of an async pair, waiting for the other. */
struct async_half {
    struct async_key key;
    struct nvs_event range;          /* the range as far as this half says */
    struct figures figures;
    uint64_t order;                  /* of halves with one key, the latest is taken first */
    bool used;
};

/* The halves waiting, by key: open addressing with linear probing, an entry
 * removed by moving back the ones after it, so that memory is that of the
 * pairs open at once, not of the whole trace. */
struct async_halves {
    struct async_half *slots;
    size_t slot_count, used;
    uint64_t next_order;
};

struct trace_reader {
    struct nvs_events *events;
    const char *categories[4];       /* the non-NVTX categories, interned */
    /* Each thread writes its own part of a trace file, so an end may come
     * before its begin in the file: either half waits for the other. */
    struct async_halves begins, ends;
    size_t begin_end;                /* B/E events: not read */
    size_t without_id;               /* async events with no id */
    bool failed;
};

static uint64_t mix(uint64_t value)
{
    value ^= value >> 30;
    value *= 0xBF58476D1CE4E5B9ull;
    value ^= value >> 27;
    value *= 0x94D049BB133111EBull;
    return value ^ value >> 31;
}

static size_t key_home(const struct async_key *key, size_t slot_count)
{
    uint64_t hash = mix(key->pid ^ (uint64_t)(uintptr_t)key->domain);
    hash = mix(hash ^ (uint64_t)(uintptr_t)key->id_text);
    return (size_t)mix(hash ^ (uint64_t)key->id) & (slot_count - 1);
}

static bool same_key(const struct async_key *a, const struct async_key *b)
{
    return a->pid == b->pid && a->domain == b->domain && a->id_text == b->id_text && a->id == b->id;
}

static bool halves_grow(struct async_halves *halves)
{
    size_t count = halves->slot_count ? halves->slot_count * 2 : 256;
    struct async_half *slots = calloc(count, sizeof *slots);
    if (!slots)
        return false;
    for (size_t i = 0; i < halves->slot_count; i++) {
        if (!halves->slots[i].used)
            continue;
        size_t slot = key_home(&halves->slots[i].key, count);
        while (slots[slot].used)
            slot = (slot + 1) & (count - 1);
        slots[slot] = halves->slots[i];
    }
    free(halves->slots);
    halves->slots = slots;
    halves->slot_count = count;
    return true;
}

/* A new entry for KEY (another with that key may be waiting: it stays); NULL
 * when out of memory. */
static struct async_half *halves_add(struct async_halves *halves, const struct async_key *key)
{
    if ((halves->used + 1) * 2 > halves->slot_count && !halves_grow(halves))
        return NULL;
    size_t slot = key_home(key, halves->slot_count);
    while (halves->slots[slot].used)
        slot = (slot + 1) & (halves->slot_count - 1);
    struct async_half *half = &halves->slots[slot];
    memset(half, 0, sizeof *half);
    half->key = *key;
    half->order = halves->next_order++;
    half->used = true;
    halves->used++;
    return half;
}

/* The latest half waiting with KEY, or NULL. */
static struct async_half *halves_find(struct async_halves *halves, const struct async_key *key)
{
    if (!halves->slot_count)
        return NULL;
    struct async_half *latest = NULL;
    size_t mask = halves->slot_count - 1;
    size_t slot = key_home(key, halves->slot_count);
    for (; halves->slots[slot].used; slot = (slot + 1) & mask) {
        struct async_half *candidate = &halves->slots[slot];
        if (same_key(&candidate->key, key) && (!latest || candidate->order > latest->order))
            latest = candidate;
    }
    return latest;
}

/* Empties HALF's slot; an entry after it that probed past that slot moves
 * back into it, so that every entry stays reachable from its home. */
static void halves_remove(struct async_halves *halves, struct async_half *half)
{
    size_t mask = halves->slot_count - 1, hole = (size_t)(half - halves->slots);
    for (size_t slot = (hole + 1) & mask; halves->slots[slot].used; slot = (slot + 1) & mask) {
        size_t home = key_home(&halves->slots[slot].key, halves->slot_count);
        if (((slot - home) & mask) >= ((slot - hole) & mask)) {
            halves->slots[hole] = halves->slots[slot];
            hole = slot;
        }
    }
    halves->slots[hole].used = false;
    halves->used--;
}

static bool args_number(const struct nvs_json *args, const char *key, uint64_t *out)
{
    int64_t value;
    if (!nvs_json_int64(nvs_json_get(args, key), &value) || value < 0)
        return false;
    *out = (uint64_t)value;
    return true;
}

/* The figures ARGS has, over those in FIGURES already. */
static void read_figures(const struct nvs_json *args, struct figures *figures)
{
    for (int i = 0; i < FIGURES; i++)
        if (args_number(args, figure_keys[i], &figures->value[i]))
            figures->present |= 1u << i;
}

/* A copy of EVENT added to the events; NULL (the reader failed) when out of memory. */
static struct nvs_event *add_event(struct trace_reader *reader, const struct nvs_event *event)
{
    struct nvs_event *added = nvs_events_add(reader->events);
    if (!added) {
        reader->failed = true;
        return NULL;
    }
    *added = *event;
    return added;
}

/* A range (an X event, or an async pair joined): NVTX, or the kind its
 * category names; with the kernel figures when the runnable and blocked times
 * are both there (the others count as 0 when absent). */
static int add_range(struct trace_reader *reader, const struct nvs_event *range,
                     const struct figures *figures)
{
    static const enum nvs_event_kind kinds[] = {NVS_EVENT_OS_CALL, NVS_EVENT_GPU_KERNEL,
                                                NVS_EVENT_GPU_COPY, NVS_EVENT_GPU_SET};
    struct nvs_event *event = add_event(reader, range);
    if (!event)
        return 1;
    event->kind = NVS_EVENT_RANGE;
    for (size_t i = 0; i < 4; i++)
        if (event->domain == reader->categories[i])
            event->kind = kinds[i];
    unsigned needed = 1u << FIGURE_RUNNABLE | 1u << FIGURE_BLOCKED;
    if ((figures->present & needed) != needed)
        return 0;
    if (!(event->offcpu = pool_alloc(reader->events->strings, sizeof *event->offcpu))) {
        reader->failed = true;
        return 1;
    }
    *event->offcpu = (struct nvs_offcpu){
        .runnable_ns = figures->value[FIGURE_RUNNABLE],
        .blocked_ns = figures->value[FIGURE_BLOCKED],
        .preemptions = figures->value[FIGURE_PREEMPTIONS],
        .faults = figures->value[FIGURE_FAULTS],
        .migrations = figures->value[FIGURE_MIGRATIONS],
    };
    return 0;
}

/* The key of an async event at EVENT's pid and category; false when it has no
 * id (or, the reader failed, no memory for one). */
static bool read_async_key(struct trace_reader *reader, const struct nvs_json *json,
                           const struct nvs_event *event, struct async_key *key)
{
    const struct nvs_json *id = nvs_json_get(json, "id");
    *key = (struct async_key){.pid = event->pid, .domain = event->domain};
    if (nvs_json_int64(id, &key->id))
        return true;
    if (!id || id->type != NVS_JSON_STRING)
        return false;
    key->id_text = nvs_events_intern(reader->events, id->text, id->length);
    reader->failed |= !key->id_text;
    return key->id_text != NULL;
}

/* An async pair joined: the range from BEGIN to END, on the thread that began
 * it, with the figures of both (the end's winning). */
static int join_async(struct trace_reader *reader, const struct async_half *begin,
                      const struct async_half *end)
{
    struct nvs_event range = begin->range;
    range.end = end->range.start > range.start ? end->range.start : range.start;
    range.end_tid = end->range.tid != range.tid ? end->range.tid : 0;
    range.async = true;
    struct figures figures = begin->figures;
    for (int i = 0; i < FIGURES; i++)
        if (end->figures.present & 1u << i)
            figures.value[i] = end->figures.value[i];
    figures.present |= end->figures.present;
    return add_range(reader, &range, &figures);
}

/* A "b" (or, with END, an "e"): joined with its other half when that came
 * first, else left waiting for it. */
static int read_async_half(struct trace_reader *reader, const struct nvs_json *json,
                           const struct nvs_event *event, bool end)
{
    struct async_half half = {.range = *event};
    if (!read_async_key(reader, json, event, &half.key)) {
        reader->without_id += !reader->failed;
        return reader->failed;
    }
    read_figures(nvs_json_get(json, "args"), &half.figures);
    struct async_halves *others = end ? &reader->begins : &reader->ends;
    struct async_half *other = halves_find(others, &half.key);
    if (other) {
        struct async_half found = *other;
        halves_remove(others, other);
        return join_async(reader, end ? &found : &half, end ? &half : &found);
    }
    struct async_half *waiting = halves_add(end ? &reader->ends : &reader->begins, &half.key);
    if (!waiting) {
        reader->failed = true;
        return 1;
    }
    waiting->range = half.range;
    waiting->figures = half.figures;
    return 0;
}

/* A process_name or thread_name metadata event. */
static int read_name(struct trace_reader *reader, const struct nvs_json *json, const char *name,
                     uint32_t pid, uint32_t tid)
{
    const char *value = nvs_json_get_string(nvs_json_get(json, "args"), "name");
    bool thread = strcmp(name, "thread_name") == 0;
    if (value && (thread || strcmp(name, "process_name") == 0)) {
        const char *interned = intern(reader->events, value);
        if (!interned || !add_name(reader->events, pid, thread ? tid : 0, interned, true))
            reader->failed = true;
    }
    return reader->failed;
}

static int on_trace_event(const struct nvs_json *json, void *context)
{
    struct trace_reader *reader = context;
    const char *phase = nvs_json_get_string(json, "ph");
    const char *name = nvs_json_get_string(json, "name");
    if (!phase || !name)
        return 0;
    int64_t pid = 0, tid = 0;
    nvs_json_int64(nvs_json_get(json, "pid"), &pid);
    nvs_json_int64(nvs_json_get(json, "tid"), &tid);
    if (strcmp(phase, "M") == 0)
        return read_name(reader, json, name, (uint32_t)pid, (uint32_t)tid);
    bool range = strcmp(phase, "X") == 0;
    bool mark = strcmp(phase, "i") == 0 || strcmp(phase, "I") == 0 || strcmp(phase, "R") == 0;
    bool async_begin = strcmp(phase, "b") == 0, async_end = strcmp(phase, "e") == 0;
    if (strcmp(phase, "B") == 0 || strcmp(phase, "E") == 0)
        reader->begin_end++;
    if (!range && !mark && !async_begin && !async_end)
        return 0;
    struct nvs_event event = {.pid = (uint32_t)pid, .tid = (uint32_t)tid};
    if (!nvs_json_microseconds(nvs_json_get(json, "ts"), &event.start))
        return 0;
    const char *category = nvs_json_get_string(json, "cat");
    event.end = event.start;
    event.name = intern(reader->events, name);
    event.domain = intern(reader->events, category ? category : "");
    if (!event.name || !event.domain) {
        reader->failed = true;
        return 1;
    }
    if (async_begin || async_end)
        return read_async_half(reader, json, &event, async_end);
    if (mark) {
        event.kind = NVS_EVENT_MARK;
        return add_event(reader, &event) ? 0 : 1;
    }
    int64_t duration;
    if (nvs_json_microseconds(nvs_json_get(json, "dur"), &duration))
        event.end = event.start + duration;
    struct figures figures = {0};
    read_figures(nvs_json_get(json, "args"), &figures);
    return add_range(reader, &event, &figures);
}

static const char *plural(size_t count)
{
    return count == 1 ? "" : "s";
}

/* What was left out of the trace at PATH, one line each. */
static void say_trace_left_out(const struct nvs_load_options *options, const char *path,
                               const struct trace_reader *reader, const struct nvs_trace_read *result)
{
    if (result->cut_short)
        say(options, "%s ends before its closing %s (the process was killed, or left through _exit "
            "before NVTXSHIM_TRACE could finish it): read %zu events%s", path,
            result->bare_array ? "]" : "]}", result->events,
            result->last_incomplete ? ", the last one incomplete and left out" : "");
    size_t unended = reader->begins.used;
    if (unended)
        say(options, "%s: %zu async range%s (\"ph\":\"b\") never ended, left out (open when the "
            "trace stopped)", path, unended, plural(unended));
    size_t unbegun = reader->ends.used;
    if (unbegun)
        say(options, "%s: %zu async end%s (\"ph\":\"e\") without a begin, left out", path, unbegun,
            plural(unbegun));
    if (reader->without_id)
        say(options, "%s: %zu async event%s (\"ph\":\"b\"/\"e\") without an id, left out", path,
            reader->without_id, plural(reader->without_id));
    if (reader->begin_end)
        say(options, "%s: %zu begin/end (\"ph\":\"B\"/\"E\") events left out: only complete "
            "events (\"X\") and async pairs (\"b\"/\"e\") are read", path, reader->begin_end);
}

static int load_trace(struct nvs_events *events, const char *path, const struct nvs_load_options *options)
{
    struct trace_reader reader = {.events = events};
    static const char *const categories[] = {NVS_CATEGORY_OS_CALL, NVS_CATEGORY_GPU_KERNEL,
                                             NVS_CATEGORY_GPU_COPY, NVS_CATEGORY_GPU_SET};
    for (size_t i = 0; i < 4; i++)
        if (!(reader.categories[i] = intern(events, categories[i]))) {
            say(options, "out of memory");
            return -1;
        }
    struct nvs_trace_read result;
    char error[256];
    int status = nvs_trace_json_read(path, on_trace_event, &reader, &result, error, sizeof error);
    if (reader.failed)
        say(options, "out of memory reading %s", path);
    else if (status)
        say(options, "cannot read %s: %s", path, error);
    else
        say_trace_left_out(options, path, &reader, &result);
    free(reader.begins.slots);
    free(reader.ends.slots);
    return reader.failed || status ? -1 : 0;
}

/* ---- .nsys-rep: nsys export first ----------------------------------------- */

static bool ends_with(const char *text, const char *suffix)
{
    size_t length = strlen(text), suffix_length = strlen(suffix);
    return length >= suffix_length && strcmp(text + length - suffix_length, suffix) == 0;
}

/* nsys export --type sqlite REPORT to DATABASE; 0, or -1 after a message. */
static int run_export(const char *report, const char *database, const struct nvs_load_options *options)
{
    const char *nsys = getenv("NSYS");
    if (!nsys || !*nsys)
        nsys = "nsys";
    char log_path[] = "/tmp/nvtxshim-export-XXXXXX";
    int log = mkstemp(log_path);
    if (log >= 0)
        unlink(log_path);
    fflush(NULL);
    pid_t child = fork();
    if (child < 0) {
        say(options, "cannot run %s: %s", nsys, strerror(errno));
        if (log >= 0)
            close(log);
        return -1;
    }
    if (child == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(log >= 0 ? log : null, 2);
        }
        execlp(nsys, nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "-o", database,
               report, (char *)NULL);
        _exit(127);
    }
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok) {
        /* the last line nsys wrote that is not its progress bar */
        char output[4096] = "";
        ssize_t got = log >= 0 ? pread(log, output, sizeof output - 1, 0) : 0;
        output[got > 0 ? got : 0] = '\0';
        char *last = NULL;
        for (char *line = strtok(output, "\r\n"); line; line = strtok(NULL, "\r\n"))
            if (strncmp(line, "Exporting", 9) != 0 && strspn(line, " \t") < strlen(line))
                last = line;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
            say(options, "cannot run %s export for %s: %s not found (install Nsight Systems, or set NSYS)",
                nsys, report, nsys);
        else
            say(options, "%s export failed for %s%s%s", nsys, report, last ? ": " : "", last ? last : "");
    }
    if (log >= 0)
        close(log);
    if (ok && access(database, R_OK) != 0) {
        say(options, "%s export wrote no %s", nsys, database);
        return -1;
    }
    return ok ? 0 : -1;
}

/* The SQLite export of REPORT: REPORT's .sqlite beside it when up to date,
 * else made there (or in a temporary directory when that is not writable). */
static int export_report(const char *report, const struct nvs_load_options *options, char *database,
                         size_t size, char *temporary_directory, size_t directory_size)
{
    temporary_directory[0] = '\0';
    struct stat report_status, database_status;
    if (stat(report, &report_status) != 0) {
        say(options, "cannot read %s: %s", report, strerror(errno));
        return -1;
    }
    size_t stem = strlen(report) - (ends_with(report, ".nsys-rep") ? strlen(".nsys-rep") : strlen(".qdrep"));
    if (snprintf(database, size, "%.*s.sqlite", (int)stem, report) >= (int)size) {
        say(options, "%s: path too long", report);
        return -1;
    }
    if (stat(database, &database_status) == 0 && database_status.st_mtime >= report_status.st_mtime) {
        say(options, "reading %s, the export of %s made before", database, report);
        return 0;
    }
    char directory[4096];
    if (snprintf(directory, sizeof directory, "%.*s", (int)stem, report) >= (int)sizeof directory) {
        say(options, "%s: path too long", report);
        return -1;
    }
    char *slash = strrchr(directory, '/');
    if (slash)
        slash[slash == directory ? 1 : 0] = '\0';
    else
        strcpy(directory, ".");
    if (access(directory, W_OK) != 0) {
        const char *tmp = getenv("TMPDIR");
        int length = snprintf(temporary_directory, directory_size, "%s/nvtxshim-XXXXXX",
                              tmp && *tmp ? tmp : "/tmp");
        if (length < 0 || (size_t)length >= directory_size || !mkdtemp(temporary_directory)) {
            say(options, "cannot make a temporary directory for the export of %s: %s", report, strerror(errno));
            temporary_directory[0] = '\0';
            return -1;
        }
        if (snprintf(database, size, "%s/export.sqlite", temporary_directory) >= (int)size) {
            say(options, "%s: path too long", temporary_directory);
            rmdir(temporary_directory);
            temporary_directory[0] = '\0';
            return -1;
        }
    }
    say(options, "exporting %s to %s (nsys export --type sqlite)", report, database);
    return run_export(report, database, options);
}

enum nvs_file_kind nvs_events_file_kind(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat status;
    if (fd < 0 || fstat(fd, &status) != 0) {
        int error = errno;
        if (fd >= 0)
            close(fd);
        errno = error;
        return NVS_FILE_UNREADABLE;
    }
    if (S_ISDIR(status.st_mode)) {
        close(fd);
        errno = EISDIR;
        return NVS_FILE_UNREADABLE;
    }
    char header[16] = {0};
    ssize_t got = S_ISREG(status.st_mode) ? pread(fd, header, sizeof header, 0) : 0;
    int error = errno;
    close(fd);
    if (got < 0) {
        errno = error;
        return NVS_FILE_UNREADABLE;
    }
    if (got == (ssize_t)sizeof header && memcmp(header, "SQLite format 3", 16) == 0)
        return NVS_FILE_SQLITE;
    if (ends_with(path, ".nsys-rep") || ends_with(path, ".qdrep"))
        return NVS_FILE_NSYS_REPORT;
    return NVS_FILE_TRACE;
}

int nvs_events_load(struct nvs_events *events, const char *path, const struct nvs_load_options *options)
{
    switch (nvs_events_file_kind(path)) {
    case NVS_FILE_UNREADABLE:
        say(options, "cannot read %s: %s", path, strerror(errno));
        return -1;
    case NVS_FILE_SQLITE:
        return load_sqlite(events, path, options);
    case NVS_FILE_NSYS_REPORT: {
        char database[4096], temporary[4096];
        int outcome = export_report(path, options, database, sizeof database, temporary, sizeof temporary);
        if (outcome == 0)
            outcome = load_sqlite(events, database, options);
        if (temporary[0]) {
            unlink(database);
            rmdir(temporary);
        }
        return outcome;
    }
    case NVS_FILE_TRACE:
    default:
        if (ends_with(path, ".sqlite")) {
            say(options, "cannot read %s: not an SQLite database", path);
            return -1;
        }
        return load_trace(events, path, options);
    }
}
