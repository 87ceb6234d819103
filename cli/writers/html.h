/* HTML that the pages share (report --html, diff --html): text escaped, the
 * columns' classes and colours, the style sheet, and the page written whole. */
#ifndef NVS_CLI_HTML_H
#define NVS_CLI_HTML_H

#include <stdint.h>
#include <stdio.h>

#include "model/figures.h"

/* A column's class (f-CLASS fills, k-CLASS backgrounds), colour and legend
 * (columns.def); NULL class for a column that is no part. */
struct nvs_html_part {
    const char *class, *colour, *meaning;
};
extern const struct nvs_html_part nvs_html_parts[NVS_COLUMNS];

/* -1 after one "nvtxshim: COMMAND: will not write PATH: ..." line on stderr
 * where something other than a regular file is at PATH (a device node, a
 * FIFO, a socket, a directory, a symbolic link): a page never replaces one.
 * 0 where PATH is a regular file or nothing. */
int nvs_html_refused(const char *command, const char *path);

/* Writes a page to PATH with PUT(OUT, CONTEXT) (non-zero: out of memory),
 * through a temporary file beside it renamed into place, so that a failure
 * leaves no partial page; unless nvs_html_refused. Returns 0, or -1 after one
 * "nvtxshim: COMMAND: ..." line on stderr. */
int nvs_html_write(const char *command, const char *path,
                   int (*put)(FILE *out, const void *context), const void *context);

/* TEXT as HTML text or attribute value (markup characters as references). */
void nvs_html_text(FILE *out, const char *text);
/* The pages' <style> element: layout, tables, and a class per column's colour
 * (f-usb fills, k-usb backgrounds...). */
void nvs_html_style(FILE *out);
/* The colour a column is drawn in (#rrggbb). */
const char *nvs_html_column_colour(int column);

/* NS as milliseconds with three decimals. */
void nvs_html_put_ms(FILE *out, int64_t ns);
/* "s" unless COUNT is 1. */
const char *nvs_html_plural(size_t count);
/* "process 1234 (name)", the name escaped. */
void nvs_html_put_process(FILE *out, const struct nvs_report_process *process);

#endif
