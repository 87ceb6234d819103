/* Process and thread names from an nsys export, for sqlite_stream.c. */
#ifndef NVS_CLI_SQLITE_NAMES_H
#define NVS_CLI_SQLITE_NAMES_H

#include "readers/sqlite_tables.h"

/* Names the export's threads (ThreadNames; an NVTX name read before stays)
 * and processes (PROCESSES), a name the kernel cut at 15 characters completed
 * from the export's strings. -1 out of memory, after
 * what was missing is said (say_skipped). */
int nvs_sql_load_names(struct database *database);

#endif
