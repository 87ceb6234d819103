/* nvtxshim report --json: the report's figures as one JSON document for
 * programs (dashboards, a fleet's warehouse), schema "nvtxshim-report/1"
 * (docs/schema/report-v1.json, docs/json.md): every figure the text summary
 * has, times in integer nanoseconds, keys in a fixed order. */
#ifndef NVS_CLI_REPORT_JSON_H
#define NVS_CLI_REPORT_JSON_H

#include <stdio.h>

#include "model/figures.h"

/* The columns' keys in the documents (report's and diff's): the text's headings,
 * "gpu wait" as one word a query can name; and the statistics'. */
extern const char *const nvs_report_column_keys[NVS_COLUMNS];
extern const char *const nvs_report_statistic_keys[NVS_STATS];

/* The document's "schema" value: its name and major version. */
#define NVS_REPORT_JSON_SCHEMA "nvtxshim-report/1"

/* -1 after one "nvtxshim: COMMAND: will not write PATH: ..." line on stderr
 * where something other than a regular file is at PATH (a device node, a
 * FIFO, a socket, a directory, a symbolic link); 0 where PATH is a regular
 * file or nothing. */
int nvs_json_refused(const char *command, const char *path);

/* Writes a document with PUT(OUT, CONTEXT) (non-zero: out of memory): to
 * standard output where PATH is "-", else through a temporary file beside
 * PATH renamed into place, so that a failure leaves no partial file (unless
 * nvs_json_refused). Returns 0, or -1 after one "nvtxshim: COMMAND: ..." line
 * on stderr. */
int nvs_json_write(const char *command, const char *path,
                   int (*put)(FILE *out, const void *context), const void *context);

/* REPORT's document written to PATH ("-": standard output) by nvs_json_write. */
int nvs_report_write_json(const struct nvs_report *report, const char *path);

#endif
