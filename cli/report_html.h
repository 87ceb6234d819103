/* nvtxshim report --html: the report's figures as one self-contained HTML page
 * (inline SVG and CSS; nothing fetched, no script). */
#ifndef NVS_CLI_REPORT_HTML_H
#define NVS_CLI_REPORT_HTML_H

#include "figures.h"

/* -1 after one "nvtxshim: report: will not write PATH: ..." line on stderr
 * where something other than a regular file is at PATH (a device node, a
 * FIFO, a socket, a directory, a symbolic link): the page never replaces one.
 * 0 where PATH is a regular file or nothing. */
int nvs_report_html_refused(const char *path);

/* Writes REPORT's page to PATH (through a temporary file beside it, renamed
 * into place: a failure leaves no partial page), unless nvs_report_html_refused.
 * Returns 0, or -1 after one "nvtxshim: report: ..." line on stderr. */
int nvs_report_write_html(const struct nvs_report *report, const char *path);

#endif
