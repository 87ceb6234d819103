/* report --html's charts (report_html.c draws the page around them): a
 * process's frames as stacked bars with the budget, a histogram of frame time,
 * and a column's values per frame, as inline SVG on whole pixels. */
#ifndef NVS_CLI_REPORT_CHARTS_H
#define NVS_CLI_REPORT_CHARTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/figures.h"

/* A bar of the per-frame charts: frames FIRST..LAST-1 (in start order). A bin
 * of several is drawn as its distribution: its MEDIAN frame's parts stacked,
 * its P99 and its slowest FRAME as ticks, OVER of its frames over the budget
 * as a strip under it. The smaller charts show FRAME (the slowest). */
struct bar {
    size_t first, last, frame, median, over;
    int64_t p99;
};

/* PROCESS's frames in at most so many bars (as many frames each as can be),
 * COUNT of them; NULL when out of memory. */
struct bar *nvs_html_make_bars(const struct nvs_report_process *process, size_t *count);
/* The frame-time chart of BARS (COUNT). */
void nvs_html_frame_chart(FILE *out, const struct nvs_report_process *process,
                          const struct bar *bars, size_t count);
/* The histogram of PROCESS's frame times. */
void nvs_html_histogram(FILE *out, const struct nvs_report_process *process);
/* COLUMN_COUNT of PROCESS's COLUMNS per bar's frame, under LABEL. */
void nvs_html_column_chart(FILE *out, const struct nvs_report_process *process,
                           const struct bar *bars, size_t count, const int *columns,
                           int column_count, const char *label);

#endif
