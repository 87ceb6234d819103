/* An nsys export's rows read as events (sqlite_rows.c), for the stream above it
 * alone (sqlite_stream.c opens the export, runs its passes, makes the
 * projections and merges the cursors): a cursor per table, and the export being
 * read. */
#ifndef NVS_CLI_SQLITE_ROWS_H
#define NVS_CLI_SQLITE_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#include "readers/sqlite_events.h"
#include "readers/sqlite_names.h"
#include "readers/sqlite_tables.h"
#include "util/json_text.h"

struct cursor {
    sqlite3_stmt *statement;
    bool on_row; /* the statement holds a row not yet read */
    bool done;   /* ... or has none left (a step would run it again) */
    bool ready;  /* EVENT is the cursor's next event */
    struct nvs_export_event event;
    char *name; /* EVENT's name and args, the cursor's own */
    size_t name_size;
    struct nvs_json_text args;
    struct nvs_export_launch *launches;
    size_t launch_capacity;
};

struct nvs_export {
    struct database database;
    struct nvs_events names; /* the names, and the strings interned (few) */
    nvs_export_keeps *keeps;
    void *keeps_context;
    bool present[NVS_EXPORT_SOURCES];
    struct columns columns[NVS_EXPORT_SOURCES];
    bool api_launches; /* the API calls' query joins their work */
    bool everything;   /* NVS_LOAD_EVERYTHING; else NVTX ranges and marks alone, no args */
    struct domain_names domains;
    struct category_names categories;
    struct labels copy_labels, memory_labels, classes, states, blocks;
    char state_table[128], block_table[128];
    const char *category[NVS_EXPORT_SOURCES];
    const char *unknown_os_call, *unknown_api_call, *unnamed_kernel, *running, *off_cpu;
    struct cursor cursors[NVS_EXPORT_SOURCES];
    unsigned wanted;
    int last;                       /* the cursor whose event was given last; -1 none */
    size_t unnamed, open, unpaired; /* left out, by the pass under way */
    size_t said_unnamed, said_open, said_unpaired; /* ... by the passes before */
    sqlite3_stmt *add_projection, *add_async;
};

/* The next row of SOURCE's cursor read into its event (sqlite_rows.c): 1 when
 * there is one, 0 at the end, -1 on an error (said). */
int nvs_export_read(struct nvs_export *export, int source);

#endif
