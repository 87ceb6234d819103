/* nvtxshim report --html: the report's figures as one self-contained HTML page
 * (inline SVG and CSS; nothing fetched, no script). */
#ifndef NVS_CLI_REPORT_HTML_H
#define NVS_CLI_REPORT_HTML_H

#include <stdio.h>

#include "model/figures.h"

/* -1 after one "nvtxshim: COMMAND: will not write PATH: ..." line on stderr
 * where something other than a regular file is at PATH (a device node, a
 * FIFO, a socket, a directory, a symbolic link): a page never replaces one.
 * 0 where PATH is a regular file or nothing. */
int nvs_html_refused(const char *command, const char *path);

/* Writes a page to PATH with PUT(OUT, CONTEXT) (non-zero: out of memory),
 * through a temporary file beside it renamed into place, so that a failure
 * leaves no partial page; unless nvs_html_refused. Returns 0, or -1 after one
 * "nvtxshim: COMMAND: ..." line on stderr. */
int nvs_html_write(const char *command, const char *path, int (*put)(FILE *out, const void *context),
                   const void *context);

/* TEXT as HTML text or attribute value (markup characters as references). */
void nvs_html_text(FILE *out, const char *text);
/* The pages' <style> element: layout, tables, and a class per column's colour
 * (f-usb fills, k-usb backgrounds...). */
void nvs_html_style(FILE *out);
/* The colour a column is drawn in (#rrggbb). */
const char *nvs_html_column_colour(int column);

/* REPORT's page written to PATH (nvs_html_write). */
int nvs_report_write_html(const struct nvs_report *report, const char *path);

#endif
