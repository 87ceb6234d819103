/* Running nsys for the event model: a .nsys-rep read through its SQLite
 * export. nsys is $NSYS, or nsys from PATH. */
#ifndef NVS_CLI_NSYS_H
#define NVS_CLI_NSYS_H

#include <stddef.h>

#include "model/events.h"

/* What PATH is to the loader, from its first bytes: 1 where it is a regular
 * file that begins as an Nsight Systems report (.nsys-rep, or .qdrep before
 * nsys 2021.4), which nsys export reads by its name, whatever that is; -1
 * where it is named as one but holds no report, and no trace or export either
 * (after one "nvtxshim: COMMAND: cannot read PATH: ..." line); else 0: what
 * it holds decides (a pipe is never looked at here: its bytes are read once). */
int nvs_nsys_report_at(const char *path, const struct nvs_load_options *options);

/* The SQLite export of REPORT (an Nsight Systems report) into DATABASE (SIZE
 * bytes): REPORT's .sqlite beside it when it is up to date (said on stderr),
 * else made there by nsys export --type sqlite, or in a temporary directory
 * when REPORT's is not writable: then its path is in TEMPORARY_DIRECTORY (else
 * that is ""), for the caller to remove with the export. Returns 0, or -1
 * after one "nvtxshim: COMMAND: ..." line on stderr. */
int nvs_nsys_export_report(const char *report, const struct nvs_load_options *options,
                           char *database, size_t size, char *temporary_directory,
                           size_t directory_size);

#endif
