/* nvtxshim diff A B: two profiles of a control loop compared, frame for frame.
 * Each is loaded as report loads it (load.c) and worked out by figures.c; the
 * loop compared is each run's process with the most frames. Printed: a verdict
 * line (the p99 frame, and the columns that moved the slowest frames most),
 * the per-frame statistics side by side, and the range names by how much time
 * per frame they moved; --html draws both runs on one scale; --fail-over makes
 * a grown p99 frame the exit status, for a rig's CI. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "events.h"
#include "figures.h"
#include "input.h"
#include "load.h"
#include "options.h"
#include "report_html.h"

#define NS_PER_MS 1e6
#define NS_PER_US 1e3
#define NAMES_SHOWN 20              /* rows of the per-name table */
#define VERDICT_COLUMNS 3           /* columns the verdict names, at most */
#define HISTOGRAM_BINS 48

static const char manual[] =
    "NAME\n"
    "    nvtxshim diff - two profiles of a control loop compared, frame for frame\n"
    "\n"
    "SYNOPSIS\n"
    "    nvtxshim diff A B [--html OUT.html] [--fail-over PCT] [--budget DURATION]\n"
    "                      [--max-input SIZE]\n"
    "    nvtxshim diff --help\n"
    "\n"
    "DESCRIPTION\n"
    "    Reads A and B as nvtxshim report reads a file (a trace in either form,\n"
    "    plain or gzipped, an nsys export or report, a pipe, or - for standard\n"
    "    input, one of the two) and compares their frames: in each, the process\n"
    "    with the most \"frame N\" ranges (named on the first lines; a run of\n"
    "    fewer than 100 frames is marked there, as its p99 is its slowest frame\n"
    "    and one stall decides the verdict: record 100 or more to gate on).\n"
    "\n"
    "    - A verdict: the p99 frame time of A and of B and the change, then the\n"
    "      columns that moved the slowest frames most: for each column, its mean\n"
    "      over the slowest 1 % of the frames (at least one) in B less the same\n"
    "      in A, the largest changes first (at most three, each 0.001 ms or\n"
    "      more, and a tenth of the slowest frames' change or more):\n"
    "          p99 frame 16.012 -> 21.344 ms (+33.3 %): usb +4.100 ms, gpu wait\n"
    "          +1.000 ms\n"
    "    - per frame, for each column either run has (total, usb, cuda, gpu\n"
    "      wait, launch, x11, camera, serial, hid, rest, and the kernel probe's\n"
    "      and the latency's where there): mean, p50, p99 and max of A and of B\n"
    "      in milliseconds (p50 and p99 by nearest rank), and the change of the\n"
    "      mean and of the p99;\n"
    "    - per range name (domain and name, as report counts them; the frames\n"
    "      themselves are the table above): the count,\n"
    "      mean and p99 of A and of B, and the time per frame it took in each\n"
    "      (count x mean / frames), the names that moved the frame most first\n"
    "      (20 of them; the rest counted).\n"
    "\n"
    "OPTIONS\n"
    "    --html OUT.html\n"
    "        Also write the comparison as one HTML page that needs nothing else:\n"
    "        both runs' frame time histograms on one scale, each column's mean\n"
    "        per frame side by side, and the tables. OUT.html that is there and\n"
    "        is not a regular file is left as it is (one line, exit 1).\n"
    "\n"
    "    --fail-over PCT\n"
    "        Exit with status 1 when B's p99 frame is more than PCT percent\n"
    "        longer than A's (one line on stderr says by how much); for a CI\n"
    "        that gates a change on a rig's recording.\n"
    "\n"
    "    --budget DURATION\n"
    "        The frame budget for both (as nvtxshim report --budget): frames\n"
    "        over it are counted for each.\n"
    "\n"
    "    --max-input SIZE\n"
    "        As for nvtxshim report: what each input may take in memory once\n"
    "        read from a pipe or decompressed (default 4G).\n"
    "\n"
    "EXIT STATUS\n"
    "    0   the comparison was printed (and B is within --fail-over).\n"
    "    1   A or B could not be read or has no frames (one line says why), the\n"
    "        page could not be written, or B's p99 frame grew past --fail-over.\n"
    "    2   a usage error.\n"
    "\n"
    "EXAMPLES\n"
    "    nvtxshim diff before.json after.json\n"
    "    nvtxshim diff rig-a.pftrace rig-b.pftrace --html ab.html\n"
    "    nvtxshim diff main.json.gz branch.json.gz --fail-over 10\n";

/* One side of the comparison. */
struct run {
    const char *path;
    struct nvs_events events;
    struct nvs_report report;
    const struct nvs_report_process *loop;  /* the process with the most frames */
    double slowest_mean[NVS_COLUMNS];       /* each column's mean over the slowest 1 % */
};

static int usage_error(const char *format, const char *what)
{
    return nvs_option_usage_error("diff", format, what);
}

static int load_run(struct run *run, int64_t budget_ns, uint64_t max_input)
{
    struct nvs_load_options options = {.command = "diff", .what = NVS_LOAD_NVTX,
                                       .max_input = max_input};
    if (nvs_events_load(&run->events, run->path, &options) != 0)
        return -1;
    run->report.path = run->path;
    if (nvs_figures_compute(&run->events, budget_ns, &run->report) != 0) {
        fputs("nvtxshim: diff: out of memory\n", stderr);
        return -1;
    }
    for (size_t p = 0; p < run->report.process_count; p++)
        if (!run->loop || run->report.processes[p].count > run->loop->count)
            run->loop = &run->report.processes[p];
    if (!run->loop || !run->loop->count) {
        fprintf(stderr, "nvtxshim: diff: no frame ranges in %s: record it with NVTXSHIM_FRAME "
                "set\n", run->path);
        return -1;
    }
    const struct nvs_report_process *loop = run->loop;
    size_t slow = (loop->count + 99) / 100;
    for (int c = 0; c < NVS_COLUMNS; c++) {
        double sum = 0;
        for (size_t i = 0; i < slow; i++)
            sum += (double)loop->frames[loop->slowest[i]].value[c];
        run->slowest_mean[c] = sum / (double)slow;
    }
    return 0;
}

static bool column_shown(const struct run *a, const struct run *b, int c)
{
    return c == NVS_COLUMN_TOTAL || a->loop->shown[c] || b->loop->shown[c];
}

static double percent(double from, double to)
{
    return from > 0 ? (to - from) / from * 100.0 : 0.0;
}

/* The verdict's columns: the parts (and the kernel's) whose mean over the
 * slowest frames moved most, largest first; none that moved less than a tenth
 * of what the slowest frames did (or than a microsecond). */
static size_t verdict_columns(const struct run *a, const struct run *b, int *columns)
{
    size_t count = 0;
    double least = fmax(0.001 * NS_PER_MS, fabs(b->slowest_mean[NVS_COLUMN_TOTAL] -
                                                a->slowest_mean[NVS_COLUMN_TOTAL]) / 10);
    for (int c = NVS_FIRST_PART; c < NVS_COLUMNS; c++) {
        if (c == NVS_COLUMN_LATENCY || !column_shown(a, b, c))
            continue;
        double change = b->slowest_mean[c] - a->slowest_mean[c];
        if (fabs(change) < least)
            continue;
        size_t at = count < VERDICT_COLUMNS ? count++ : VERDICT_COLUMNS;
        if (at == VERDICT_COLUMNS) {
            /* full: in place of the smallest, if this one moved more */
            at = VERDICT_COLUMNS - 1;
            if (fabs(change) <= fabs(b->slowest_mean[columns[at]] - a->slowest_mean[columns[at]]))
                continue;
        }
        columns[at] = c;
        for (size_t k = at; k > 0; k--) {
            double here = fabs(b->slowest_mean[columns[k]] - a->slowest_mean[columns[k]]);
            double above = fabs(b->slowest_mean[columns[k - 1]] - a->slowest_mean[columns[k - 1]]);
            if (here <= above)
                break;
            int swap = columns[k];
            columns[k] = columns[k - 1];
            columns[k - 1] = swap;
        }
    }
    return count;
}

/* The verdict line into TEXT (SIZE bytes), without a newline. */
static void verdict(const struct run *a, const struct run *b, char *text, size_t size)
{
    double from = a->loop->stats[NVS_COLUMN_TOTAL][NVS_STAT_P99];
    double to = b->loop->stats[NVS_COLUMN_TOTAL][NVS_STAT_P99];
    int used = snprintf(text, size, "p99 frame %.3f -> %.3f ms (%+.1f %%)", from / NS_PER_MS,
                        to / NS_PER_MS, percent(from, to));
    int columns[VERDICT_COLUMNS];
    size_t count = verdict_columns(a, b, columns);
    for (size_t k = 0; k < count && used > 0 && (size_t)used < size; k++)
        used += snprintf(text + used, size - (size_t)used, "%s %s %+.3f ms", k ? "," : ":",
                         nvs_report_column_names[columns[k]],
                         (b->slowest_mean[columns[k]] - a->slowest_mean[columns[k]]) / NS_PER_MS);
    if (!count && used > 0 && (size_t)used < size)
        snprintf(text + used, size - (size_t)used, ": no column of the slowest frames moved");
}

/* Under 100 frames the p99 by nearest rank is the slowest frame, so one stall
 * decides the verdict and --fail-over: said beside the count, not left for a
 * user to work out from the numbers. */
#define FEW_FRAMES 100
#define FEW_FRAMES_NOTE " (fewer than 100: its p99 is its slowest frame)"

static const char *few_frames_note(const struct run *run)
{
    return run->loop->count < FEW_FRAMES ? FEW_FRAMES_NOTE : "";
}

static void describe_loop(const char *label, const struct run *run)
{
    const struct nvs_report_process *loop = run->loop;
    printf("  %s: %s: process %" PRIu32 "%s%s%s, %zu frame%s", label, run->path, loop->pid,
           loop->name ? " (" : "", loop->name ? loop->name : "", loop->name ? ")" : "", loop->count,
           loop->count == 1 ? "" : "s");
    fputs(few_frames_note(run), stdout);
    if (loop->budget_ns)
        printf(", %zu over the %.3f ms budget", loop->over_budget, (double)loop->budget_ns / NS_PER_MS);
    putchar('\n');
}

static void print_frames(const struct run *a, const struct run *b)
{
    puts("\n== Per frame (milliseconds; p50 and p99 by nearest rank): A, then B, then the change");
    printf("  %-10s %9s %9s %9s %9s   %9s %9s %9s %9s   %9s %9s\n", "", "A mean", "p50", "p99", "max",
           "B mean", "p50", "p99", "max", "mean", "p99");
    for (int c = 0; c < NVS_COLUMNS; c++) {
        if (!column_shown(a, b, c))
            continue;
        printf("  %-10s", nvs_report_column_names[c]);
        for (int side = 0; side < 2; side++) {
            const struct nvs_report_process *loop = side ? b->loop : a->loop;
            for (int s = 0; s < NVS_STATS; s++)
                printf(" %9.3f", loop->stats[c][s] / NS_PER_MS);
            fputs("  ", stdout);
        }
        printf(" %+9.3f %+9.3f\n",
               (b->loop->stats[c][NVS_STAT_MEAN] - a->loop->stats[c][NVS_STAT_MEAN]) / NS_PER_MS,
               (b->loop->stats[c][NVS_STAT_P99] - a->loop->stats[c][NVS_STAT_P99]) / NS_PER_MS);
    }
}

/* ---- names ------------------------------------------------------------------------ */

/* A name in either run, with its row in each (NULL: not there). */
struct name_change {
    const char *domain, *name;
    const struct nvs_report_name *a, *b;
    double per_frame_a, per_frame_b;        /* ns of it per frame of the loop */
};

static int compare_name_keys(const char *domain_a, const char *name_a, const char *domain_b,
                             const char *name_b)
{
    int order = strcmp(domain_a, domain_b);
    return order ? order : strcmp(name_a, name_b);
}

static double per_frame(const struct nvs_report_name *row, const struct run *run)
{
    return row ? (double)row->count * row->stats[NVS_STAT_MEAN] / (double)run->loop->count : 0;
}

static int by_change(const void *left, const void *right)
{
    const struct name_change *x = left, *y = right;
    double dx = fabs(x->per_frame_b - x->per_frame_a), dy = fabs(y->per_frame_b - y->per_frame_a);
    if (dx != dy)
        return dx < dy ? 1 : -1;
    return compare_name_keys(x->domain, x->name, y->domain, y->name);
}

/* Both runs' names (each report's are by domain, then name): merged, then
 * sorted by the time per frame they moved. NULL out of memory. */
static struct name_change *name_changes(const struct run *a, const struct run *b, size_t *count)
{
    const struct nvs_report *ra = &a->report, *rb = &b->report;
    struct name_change *changes = calloc(ra->name_count + rb->name_count + 1, sizeof *changes);
    if (!changes)
        return NULL;
    size_t i = 0, k = 0, n = 0;
    while (i < ra->name_count || k < rb->name_count) {
        const struct nvs_report_name *x = i < ra->name_count ? &ra->names[i] : NULL;
        const struct nvs_report_name *y = k < rb->name_count ? &rb->names[k] : NULL;
        int order = !x ? 1 : !y ? -1 : compare_name_keys(x->domain, x->name, y->domain, y->name);
        const struct nvs_report_name *first = order <= 0 ? x : y;
        if (strcmp(first->domain, "nvtxshim") == 0 && strcmp(first->name, "frame N") == 0) {
            /* the frames themselves: the per-frame table has them */
            i += order <= 0;
            k += order >= 0;
            continue;
        }
        struct name_change *change = &changes[n++];
        change->a = order <= 0 ? x : NULL;
        change->b = order >= 0 ? y : NULL;
        change->domain = (change->a ? change->a : change->b)->domain;
        change->name = (change->a ? change->a : change->b)->name;
        change->per_frame_a = per_frame(change->a, a);
        change->per_frame_b = per_frame(change->b, b);
        i += order <= 0;
        k += order >= 0;
    }
    qsort(changes, n, sizeof *changes, by_change);
    *count = n;
    return changes;
}

static void print_side(const struct nvs_report_name *row)
{
    if (row)
        printf(" %8zu %9.1f %9.1f", row->count, row->stats[NVS_STAT_MEAN] / NS_PER_US,
               row->stats[NVS_STAT_P99] / NS_PER_US);
    else
        printf(" %8s %9s %9s", "-", "-", "-");
}

static void print_names(const struct name_change *changes, size_t count)
{
    puts("\n== Range names by the time per frame they moved (count; mean and p99 in microseconds; "
         "per frame in milliseconds)");
    printf("  %-9s %-34s %8s %9s %9s %8s %9s %9s %9s %9s %9s\n", "domain", "name", "A count",
           "mean", "p99", "B count", "mean", "p99", "A/frame", "B/frame", "change");
    for (size_t i = 0; i < count && i < NAMES_SHOWN; i++) {
        const struct name_change *change = &changes[i];
        printf("  %-9.9s %-34.34s", change->domain, change->name);
        print_side(change->a);
        print_side(change->b);
        printf(" %9.3f %9.3f %+9.3f\n", change->per_frame_a / NS_PER_MS,
               change->per_frame_b / NS_PER_MS,
               (change->per_frame_b - change->per_frame_a) / NS_PER_MS);
    }
    if (count > NAMES_SHOWN)
        printf("  (%zu more names moved the frame less)\n", count - NAMES_SHOWN);
}

/* ---- the page --------------------------------------------------------------------- */

struct page {
    const struct run *a, *b;
    const char *verdict;
    const struct name_change *changes;
    size_t change_count;
};

#define CHART_WIDTH 960
#define CHART_HEIGHT 180
#define CHART_LEFT 56
#define RUN_A "#1e88e5"
#define RUN_B "#e53935"

/* Both runs' frame times in one histogram: bins from 0 to the larger p99 and
 * a little, the frames past it in a last bin of their own, each run's bar
 * side by side, heights as shares of its frames (the runs may differ in
 * length). */
static void put_histograms(FILE *out, const struct run *a, const struct run *b)
{
    double top = fmax(a->loop->stats[NVS_COLUMN_TOTAL][NVS_STAT_P99],
                      b->loop->stats[NVS_COLUMN_TOTAL][NVS_STAT_P99]) * 1.25;
    if (top <= 0)
        top = 1;
    double share[2][HISTOGRAM_BINS + 1] = {{0}}, highest = 0;
    for (int side = 0; side < 2; side++) {
        const struct nvs_report_process *loop = side ? b->loop : a->loop;
        for (size_t i = 0; i < loop->count; i++) {
            double value = (double)loop->frames[i].value[NVS_COLUMN_TOTAL];
            int bin = value >= top ? HISTOGRAM_BINS : (int)(value / top * HISTOGRAM_BINS);
            share[side][bin] += 1.0 / (double)loop->count;
        }
        for (int bin = 0; bin <= HISTOGRAM_BINS; bin++)
            highest = fmax(highest, share[side][bin]);
    }
    int slot = (CHART_WIDTH - CHART_LEFT) / (HISTOGRAM_BINS + 2);
    fprintf(out, "<svg width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"frame time histograms\">\n",
            CHART_WIDTH, CHART_HEIGHT + 40);
    for (int side = 0; side < 2; side++)
        for (int bin = 0; bin <= HISTOGRAM_BINS; bin++) {
            int height = (int)lround(share[side][bin] / highest * CHART_HEIGHT);
            int x = CHART_LEFT + (bin + (bin == HISTOGRAM_BINS)) * slot + side * (slot / 2);
            if (height > 0)
                fprintf(out, "<rect class=\"run-%c\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                        "fill=\"%s\"><title>%s: %.1f %% of frames</title></rect>\n", side ? 'b' : 'a',
                        x, 10 + CHART_HEIGHT - height, slot / 2, height, side ? RUN_B : RUN_A,
                        side ? "B" : "A", share[side][bin] * 100);
        }
    for (int tick = 0; tick <= 4; tick++) {
        int x = CHART_LEFT + tick * (HISTOGRAM_BINS / 4) * slot;
        fprintf(out, "<text x=\"%d\" y=\"%d\">%.2f ms</text>\n", x, CHART_HEIGHT + 26,
                top * tick / 4 / NS_PER_MS);
    }
    fprintf(out, "<text x=\"%d\" y=\"%d\">longer</text>\n",
            CHART_LEFT + (HISTOGRAM_BINS + 1) * slot, CHART_HEIGHT + 26);
    fputs("</svg>\n", out);
}

/* Each column's mean per frame, A above B, on one scale. */
static void put_columns(FILE *out, const struct run *a, const struct run *b)
{
    double widest = 0;
    for (int c = 0; c <= NVS_LAST_PART; c++)
        if (column_shown(a, b, c))
            widest = fmax(widest, fmax(a->loop->stats[c][NVS_STAT_MEAN], b->loop->stats[c][NVS_STAT_MEAN]));
    if (widest <= 0)
        widest = 1;
    int rows = 0;
    for (int c = 0; c <= NVS_LAST_PART; c++)
        rows += column_shown(a, b, c);
    fprintf(out, "<svg width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"mean per column\">\n",
            CHART_WIDTH, rows * 30 + 8);
    int y = 4;
    for (int c = 0; c <= NVS_LAST_PART; c++) {
        if (!column_shown(a, b, c))
            continue;
        fprintf(out, "<text x=\"0\" y=\"%d\">%s</text>\n", y + 17, nvs_report_column_names[c]);
        for (int side = 0; side < 2; side++) {
            double mean = (side ? b : a)->loop->stats[c][NVS_STAT_MEAN];
            int width = (int)lround(mean / widest * (CHART_WIDTH - 2 * CHART_LEFT - 80));
            fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"12\" fill=\"%s\"/>"
                    "<text x=\"%d\" y=\"%d\">%.3f ms</text>\n", CHART_LEFT + 24, y + side * 13,
                    width, side ? RUN_B : RUN_A, CHART_LEFT + 30 + width, y + side * 13 + 10,
                    mean / NS_PER_MS);
        }
        y += 30;
    }
    fputs("</svg>\n", out);
}

static void put_stat_cells(FILE *out, const struct nvs_report_process *loop, int c)
{
    for (int s = 0; s < NVS_STATS; s++)
        fprintf(out, "<td>%.3f</td>", loop->stats[c][s] / NS_PER_MS);
}

static int put_page(FILE *out, const void *context)
{
    const struct page *page = context;
    const struct run *a = page->a, *b = page->b;
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>nvtxshim diff: ",
          out);
    nvs_html_text(out, a->path);
    fputs(" and ", out);
    nvs_html_text(out, b->path);
    fputs("</title>\n<meta name=\"viewport\" content=\"width=device-width\">\n", out);
    nvs_html_style(out);
    fputs("</head>\n<body>\n<h1>nvtxshim diff</h1>\n", out);
    for (int side = 0; side < 2; side++) {
        const struct run *run = side ? b : a;
        fprintf(out, "<p><span class=\"key\" style=\"background:%s\"></span>%s: <code>",
                side ? RUN_B : RUN_A, side ? "B" : "A");
        nvs_html_text(out, run->path);
        fprintf(out, "</code>, process %" PRIu32, run->loop->pid);
        if (run->loop->name) {
            fputs(" (", out);
            nvs_html_text(out, run->loop->name);
            fputc(')', out);
        }
        fprintf(out, ", %zu frames%s</p>\n", run->loop->count, few_frames_note(run));
    }
    fputs("<p class=\"verdict\"><b>", out);
    nvs_html_text(out, page->verdict);
    fputs("</b></p>\n<h2>Frame time, both runs on one scale</h2>\n", out);
    put_histograms(out, a, b);
    fputs("<p class=\"note\">The share of each run's frames in each bin, to 1.25 times the larger "
          "p99; the last bin holds the frames past it.</p>\n<h2>Mean per frame, by column</h2>\n", out);
    put_columns(out, a, b);
    fputs("<h2>Per frame (milliseconds; p50 and p99 by nearest rank)</h2>\n<table>\n<tr><th class=\"t\">"
          "</th><th>A mean</th><th>p50</th><th>p99</th><th>max</th><th>B mean</th><th>p50</th><th>p99</th>"
          "<th>max</th><th>change of the mean</th><th>of the p99</th></tr>\n", out);
    for (int c = 0; c < NVS_COLUMNS; c++) {
        if (!column_shown(a, b, c))
            continue;
        fprintf(out, "<tr><td class=\"t\">%s</td>", nvs_report_column_names[c]);
        put_stat_cells(out, a->loop, c);
        put_stat_cells(out, b->loop, c);
        fprintf(out, "<td>%+.3f</td><td>%+.3f</td></tr>\n",
                (b->loop->stats[c][NVS_STAT_MEAN] - a->loop->stats[c][NVS_STAT_MEAN]) / NS_PER_MS,
                (b->loop->stats[c][NVS_STAT_P99] - a->loop->stats[c][NVS_STAT_P99]) / NS_PER_MS);
    }
    fputs("</table>\n<h2>Range names by the time per frame they moved</h2>\n<table>\n<tr>"
          "<th class=\"t\">domain</th><th class=\"t\">name</th><th>A count</th><th>mean (us)</th>"
          "<th>p99 (us)</th><th>B count</th><th>mean (us)</th><th>p99 (us)</th><th>A per frame (ms)"
          "</th><th>B per frame (ms)</th><th>change</th></tr>\n", out);
    for (size_t i = 0; i < page->change_count; i++) {
        const struct name_change *change = &page->changes[i];
        fputs("<tr><td class=\"t\">", out);
        nvs_html_text(out, change->domain);
        fputs("</td><td class=\"t\">", out);
        nvs_html_text(out, change->name);
        fputs("</td>", out);
        for (int side = 0; side < 2; side++) {
            const struct nvs_report_name *row = side ? change->b : change->a;
            if (row)
                fprintf(out, "<td>%zu</td><td>%.1f</td><td>%.1f</td>", row->count,
                        row->stats[NVS_STAT_MEAN] / NS_PER_US, row->stats[NVS_STAT_P99] / NS_PER_US);
            else
                fputs("<td>-</td><td>-</td><td>-</td>", out);
        }
        fprintf(out, "<td>%.3f</td><td>%.3f</td><td>%+.3f</td></tr>\n", change->per_frame_a / NS_PER_MS,
                change->per_frame_b / NS_PER_MS, (change->per_frame_b - change->per_frame_a) / NS_PER_MS);
    }
    fputs("</table>\n</body>\n</html>\n", out);
    return 0;
}

/* ---- the command ------------------------------------------------------------------ */

int nvs_cli_diff(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL}, *html = NULL, *value;
    int given = 0;
    double fail_over = -1;
    int64_t budget_ns = 0;
    uint64_t max_input = 0;
    if (nvs_option_help(argc, argv)) {
        fputs(manual, stdout);
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        const char *argument = argv[i];
        if ((value = nvs_option_value("--html", argc, argv, &i))) {
            if (!*value)
                return usage_error("%s--html needs the page's file name", "");
            html = value;
        } else if ((value = nvs_option_value("--fail-over", argc, argv, &i))) {
            char *end;
            errno = 0;
            fail_over = strtod(value, &end);
            if (!*value || (*end && strcmp(end, "%") != 0) || errno || !(fail_over >= 0))
                return usage_error("--fail-over needs a percentage, 0 or more (10, 2.5): '%s'", value);
        } else if ((value = nvs_option_value("--budget", argc, argv, &i))) {
            budget_ns = nvs_option_budget(value);
            if (!budget_ns)
                return usage_error(NVS_OPTION_BUDGET_USAGE, value);
        } else if ((value = nvs_option_value("--max-input", argc, argv, &i))) {
            if (!nvs_input_parse_size(value, &max_input))
                return usage_error(NVS_OPTION_MAX_INPUT_USAGE, value);
        } else if (strcmp(argument, "--") == 0) {
            while (++i < argc) {
                if (given == 2)
                    return usage_error("two files to compare: '%s' is one too many", argv[i]);
                paths[given++] = argv[i];
            }
        } else if (argument[0] == '-' && argument[1]) {
            return usage_error("unknown option %s", argument);
        } else if (given < 2) {
            paths[given++] = argument;
        } else {
            return usage_error("two files to compare: '%s' is one too many", argument);
        }
    }
    if (given < 2)
        return usage_error("%swhich files? nvtxshim diff A B", "");
    if (strcmp(paths[0], "-") == 0 && strcmp(paths[1], "-") == 0)
        return usage_error("%sstandard input can be one of the two, not both", "");
    if (html && nvs_html_refused("diff", html) != 0)
        return 1;

    struct run runs[2] = {{.path = paths[0]}, {.path = paths[1]}};
    int status = 0;
    for (int side = 0; side < 2 && status == 0; side++)
        status = load_run(&runs[side], budget_ns, max_input);
    const struct run *a = &runs[0], *b = &runs[1];
    struct name_change *changes = NULL;
    size_t change_count = 0;
    if (status == 0 && !(changes = name_changes(a, b, &change_count))) {
        fputs("nvtxshim: diff: out of memory\n", stderr);
        status = -1;
    }
    bool over = false;
    if (status == 0) {
        char line[512];
        verdict(a, b, line, sizeof line);
        puts("== nvtxshim diff: the loop of each run (its process with the most frames)");
        describe_loop("A", a);
        describe_loop("B", b);
        printf("\n%s\n", line);
        print_frames(a, b);
        print_names(changes, change_count);
        if (fflush(stdout) != 0) {
            fprintf(stderr, "nvtxshim: diff: cannot write the comparison: %s\n", strerror(errno));
            status = -1;
        }
        struct page page = {a, b, line, changes, change_count};
        if (status == 0 && html)
            status = nvs_html_write("diff", html, put_page, &page);
        double from = a->loop->stats[NVS_COLUMN_TOTAL][NVS_STAT_P99];
        double to = b->loop->stats[NVS_COLUMN_TOTAL][NVS_STAT_P99];
        if (status == 0 && fail_over >= 0 && percent(from, to) > fail_over) {
            fprintf(stderr, "nvtxshim: diff: the p99 frame grew %.1f %% (%.3f -> %.3f ms), more than "
                    "--fail-over %g %%\n", percent(from, to), from / NS_PER_MS, to / NS_PER_MS, fail_over);
            over = true;
        }
    }
    free(changes);
    for (int side = 0; side < 2; side++) {
        nvs_figures_free(&runs[side].report);
        nvs_events_free(&runs[side].events);
    }
    return status != 0 || over ? 1 : 0;
}
