/* An nsys SQLite export (nsys export --type sqlite) read into the event model. */
#ifndef NVS_CLI_SQLITE_READER_H
#define NVS_CLI_SQLITE_READER_H

#include "events.h"

/* Adds the events of the export at PATH: NVTX ranges and marks and, with
 * NVS_LOAD_EVERYTHING, OS runtime calls, CUDA kernels, copies and memsets,
 * and thread and process names. Tables and columns this version of nsys
 * lacks are skipped (with OPTIONS->say_skipped, one line each). Returns 0, or
 * -1 after one "nvtxshim: COMMAND: ..." line on stderr. */
int nvs_sqlite_load(struct nvs_events *events, const char *path, const struct nvs_load_options *options);

#endif
