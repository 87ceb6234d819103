/* nvtxshim report --html: the report's figures as one self-contained HTML page
 * (inline SVG and CSS; nothing fetched, no script). */
#ifndef NVS_CLI_REPORT_HTML_H
#define NVS_CLI_REPORT_HTML_H

#include "figures.h"

/* Writes REPORT's page to PATH (through a temporary file beside it, renamed
 * into place: a failure leaves no partial page). Returns 0, or -1 after one
 * "nvtxshim: report: cannot write PATH: ..." line on stderr. */
int nvs_report_write_html(const struct nvs_report *report, const char *path);

#endif
