/* nvtxshim report --html: the report's figures as one self-contained HTML page
 * (inline SVG and CSS; nothing fetched, no script). */
#ifndef NVS_CLI_REPORT_HTML_H
#define NVS_CLI_REPORT_HTML_H

#include <stdio.h>

#include "model/figures.h"
#include "writers/html.h"

/* REPORT's page written to PATH (nvs_html_write). */
int nvs_report_write_html(const struct nvs_report *report, const char *path);

#endif
