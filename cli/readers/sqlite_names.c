/* The names of an nsys export's processes and threads (sqlite_names.h): from
 * ThreadNames and PROCESSES, completed where the kernel cut them. */
#define _GNU_SOURCE
#include "readers/sqlite_names.h"

#include <stdlib.h>
#include <string.h>

/* The kernel keeps a thread's name (comm) in 16 bytes: a longer program's is
 * cut to 15 characters ("harness_physica"). NAME completed from the export's
 * strings (StringIds, looked up in DATABASE), where exactly one names a
 * file whose last component starts with it and holds no blank (the program's
 * path: a module of a call chain), else NAME itself; NULL out of memory. */
#define COMM_LENGTH 15

/* Whether VALUE names a file whose last component completes NAME; FOUND, the
 * one found before: false (and *AMBIGUOUS) when this is another. */
static bool completes(const char *name, const char *value, const char **found, bool *ambiguous)
{
    const char *slash = value ? strrchr(value, '/') : NULL;
    if (!slash || strncmp(slash + 1, name, COMM_LENGTH) != 0 || strlen(slash + 1) <= COMM_LENGTH ||
        strpbrk(slash + 1, " \t\n"))
        return false;
    if (*found && strcmp(*found, slash + 1) != 0) {
        *ambiguous = true; /* two programs: which one is not known */
        return false;
    }
    *found = slash + 1;
    return true;
}

static const char *completed_name(struct database *database, const char *name)
{
    if (strlen(name) != COMM_LENGTH || !database->string_lookup)
        return name; /* not cut, or no StringIds */
    bool ambiguous = false;
    /* the strings that hold "/NAME", from SQLite */
    sqlite3_stmt *statement = nvs_sql_prepare(
        database, "SELECT value FROM StringIds WHERE instr(value, ?) > 0");
    if (!statement)
        return name;
    char needle[COMM_LENGTH + 2] = "/";
    strcat(needle, name);
    sqlite3_bind_text(statement, 1, needle, -1, SQLITE_STATIC);
    char *kept = NULL;
    while (!ambiguous && sqlite3_step(statement) == SQLITE_ROW) {
        const char *previous = kept;
        if (completes(name, (const char *)sqlite3_column_text(statement, 0), &previous,
                      &ambiguous) &&
            !kept && !(kept = strdup(previous)))
            ambiguous = true;
    }
    sqlite3_finalize(statement);
    const char *result = ambiguous || !kept
        ? name
        : nvs_events_intern(database->events, kept, strlen(kept));
    free(kept);
    return result;
}

/* Each name a 15-character comm, completed. (A process that ran exec keeps
 * the name PROCESSES gives it, the program it was started as: its main
 * thread's name could as well be one the program gave the thread.) */
static int complete_names(struct database *database)
{
    struct nvs_events *events = database->events;
    for (size_t i = 0; i < events->name_count; i++) {
        const char *name = completed_name(database, events->names[i].name);
        if (!name)
            return -1;
        events->names[i].name = name;
    }
    return 0;
}

int nvs_sql_load_names(struct database *database)
{
    const struct nvs_load_options *options = database->options;
    struct nvs_events *events = database->events;
    if (nvs_sql_has_table(database, "ThreadNames")) {
        struct columns columns;
        nvs_sql_read_columns(database, "ThreadNames", &columns);
        if (nvs_sql_has_column(&columns, "nameId") && nvs_sql_has_column(&columns, "globalTid")) {
            sqlite3_stmt *statement = nvs_sql_prepare(database,
                                                      "SELECT globalTid, nameId FROM ThreadNames");
            if (!statement)
                return -1;
            while (sqlite3_step(statement) == SQLITE_ROW) {
                const char *name = nvs_sql_string_column(database, statement, 1);
                int64_t global = sqlite3_column_int64(statement, 0);
                /* an NVTX name (nvtxNameOsThread) read before stays */
                if (name &&
                    !nvs_events_add_name(events, nvs_global_pid(global), nvs_global_tid(global),
                                         name, false))
                    return -1;
            }
            sqlite3_finalize(statement);
        } else if (options->say_skipped) {
            nvs_events_say(options,
                           "ThreadNames has no nameId or globalTid column: threads unnamed");
        }
    } else if (options->say_skipped) {
        nvs_events_say(options, "no ThreadNames table: threads unnamed (NVTX thread names kept)");
    }
    if (nvs_sql_has_table(database, "PROCESSES")) {
        struct columns columns;
        nvs_sql_read_columns(database, "PROCESSES", &columns);
        if (nvs_sql_has_column(&columns, "name") &&
            (nvs_sql_has_column(&columns, "pid") || nvs_sql_has_column(&columns, "globalPid"))) {
            sqlite3_stmt *statement = nvs_sql_prepare(
                database,
                nvs_sql_has_column(&columns, "pid")
                    ? "SELECT pid, name FROM PROCESSES"
                    : "SELECT globalPid >> 24, name FROM PROCESSES");
            if (!statement)
                return -1;
            while (sqlite3_step(statement) == SQLITE_ROW) {
                const char *name = nvs_sql_string_column(database, statement, 1);
                uint32_t pid = (uint32_t)sqlite3_column_int64(statement, 0) & 0xFFFFFFu;
                if (name && !nvs_events_add_name(events, pid, 0, name, true))
                    return -1;
            }
            sqlite3_finalize(statement);
        } else if (options->say_skipped) {
            nvs_events_say(options,
                           "PROCESSES has no pid or name column: processes named after their "
                           "main thread");
        }
    } else if (options->say_skipped) {
        nvs_events_say(options, "no PROCESSES table: processes named after their main thread");
    }
    return complete_names(database);
}
