/* Whether a run wrote a trace (cli/commands/run.c): the files that NVTXSHIM_TRACE's
 * value can name, looked at before the program starts and again after it
 * ended. The library creates its file at the first event, so a program that
 * made no call it traces leaves nothing, and without this nobody would say so. */
#ifndef NVS_CLI_RUN_TRACE_H
#define NVS_CLI_RUN_TRACE_H

#include <stdbool.h>

struct nvs_trace_files;

/* The files TEMPLATE (a value of NVTXSHIM_TRACE, relative to the current
 * directory) can name as they are now: the path itself with %p as any
 * process id and %% as %, and NAME.PID.EXT and NAME.PID.N.EXT beside it (a
 * forked child's file, or a path in use). NULL when out of memory. */
struct nvs_trace_files *nvs_trace_files_look(const char *template);

/* Whether some file TEMPLATE can name was made or changed since BEFORE. */
bool nvs_trace_files_written(const struct nvs_trace_files *before, const char *template);

void nvs_trace_files_free(struct nvs_trace_files *files);

#endif
