/* nvtxshim report --html: the report's figures (figures.h, worked out once by
 * figures_builder.c) as one HTML page that needs nothing else: inline SVG and CSS, no
 * script, font or stylesheet of its own to fetch, so it opens the same
 * offline, from a mail or a CI artefact. Per process: frame time per frame as
 * stacked bars with the budget line and the frames over it on a band, a
 * histogram, the per-frame statistics, the slowest frames, the kernel probe's
 * time off the CPU and the capture-to-actuation latency; then the latency's
 * summary, the per-name table, the marks by kind and the capture windows.
 *
 * Every shape lies on whole pixels and is drawn with crisp edges, so that a
 * bar's segment is exactly its column's colour and the picture can be
 * measured (test/test_report_html.py renders it and counts pixels). Text
 * that came from the profile (names are a program's) is escaped. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "writers/report_html.h"
#include "writers/report_charts.h"
#include "writers/html.h"

#define NS_PER_US 1000.0
#define NS_PER_MS 1e6

/* Bars of the slowest frames' table, in pixels at the slowest. */
#define SLOWEST_BAR_WIDTH 240

/* ---- tables ---------------------------------------------------------------------- */

static void put_name_table(FILE *out, const struct nvs_report_name *names, size_t count)
{
    fputs(
        "<table>\n<tr><th class=\"t\">domain</th><th class=\"t\">name</th><th>count</th><th>mean</th>"
        "<th>p50</th><th>p99</th><th>max</th></tr>\n",
        out);
    for (size_t i = 0; i < count; i++) {
        const struct nvs_report_name *row = &names[i];
        fputs("<tr><td class=\"t\">", out);
        nvs_html_text(out, row->domain);
        fputs("</td><td class=\"t\">", out);
        nvs_html_text(out, row->name);
        fprintf(out, "</td><td>%zu</td>", row->count);
        for (int s = 0; s < NVS_STATS; s++)
            fprintf(out, "<td>%.1f</td>", row->stats[s] / NS_PER_US);
        fputs("</tr>\n", out);
    }
    fputs("</table>\n", out);
}

static void put_column_heading(FILE *out, int c)
{
    fputs("<th>", out);
    if (c != NVS_COLUMN_TOTAL)
        fprintf(out, "<span class=\"key k-%s\"></span>", nvs_html_parts[c].class);
    fprintf(out, "%s</th>", nvs_report_column_names[c]);
}

static void put_statistics(FILE *out, const struct nvs_report_process *process)
{
    static const char *const labels[NVS_STATS] = { "mean", "p50", "p99", "max" };
    fputs(
        "<h3>Per frame (milliseconds; p50 and p99 by nearest rank)</h3>\n<table>\n<tr><th class=\"t\"></th>",
        out);
    for (int c = 0; c < NVS_COLUMNS; c++)
        if (process->shown[c])
            put_column_heading(out, c);
    fputs("</tr>\n", out);
    for (int s = 0; s < NVS_STATS; s++) {
        fputs("<tr><td class=\"t\">", out);
        if (s == NVS_STAT_MEAN)
            fprintf(out, "mean of %zu", process->count);
        else
            fputs(labels[s], out);
        fputs("</td>", out);
        for (int c = 0; c < NVS_COLUMNS; c++)
            if (process->shown[c])
                fprintf(out, "<td>%.3f</td>", process->stats[c][s] / NS_PER_MS);
        fputs("</tr>\n", out);
    }
    fputs("</table>\n", out);
    if (process->with_kernel && process->with_kernel < process->count)
        fprintf(
            out,
            "<p class=\"note\">Kernel figures for %zu of the %zu frames; the others count as 0.</p>\n",
            process->with_kernel, process->count);
    if (process->shown[NVS_COLUMN_LATENCY] && process->with_latency < process->count)
        fprintf(
            out,
            "<p class=\"note\">Latency for %zu of the %zu frames: the others acted on no new camera "
            "frame.</p>\n",
            process->with_latency, process->count);
    if (process->dropped)
        fprintf(out,
                "<p>Camera frames dropped: %" PRIu64 " (%" PRIu64 " outside the frames).</p>\n",
                process->dropped, process->dropped_outside);
}

static void put_slowest(FILE *out, const struct nvs_report_process *process, long slowest)
{
    size_t n = (size_t)slowest < process->count ? (size_t)slowest : process->count;
    if (!n)
        return;
    int64_t longest = process->frames[process->slowest[0]].value[NVS_COLUMN_TOTAL];
    fprintf(
        out,
        "<h3>The %zu slowest frame%s (milliseconds)</h3>\n<table>\n<tr><th class=\"t\">frame</th>",
        n, nvs_html_plural(n));
    for (int c = 0; c < NVS_COLUMNS; c++)
        if (process->shown[c])
            put_column_heading(out, c);
    if (process->with_kernel)
        fputs("<th>preemptions</th><th>faults</th>", out);
    if (process->dropped)
        fputs("<th>camera frames dropped</th>", out);
    fputs("<th class=\"t\">its time</th></tr>\n", out);
    for (size_t k = 0; k < n; k++) {
        const struct nvs_report_frame *frame = &process->frames[process->slowest[k]];
        fprintf(out, "<tr%s><td class=\"t\">frame %" PRIu64 "</td>",
                nvs_report_over_budget(process, frame) ? " class=\"over\"" : "", frame->number);
        for (int c = 0; c < NVS_COLUMNS; c++) {
            if (!process->shown[c])
                continue;
            if (c == NVS_COLUMN_LATENCY && !frame->has_latency) {
                fputs("<td>-</td>", out);
                continue;
            }
            fputs("<td>", out);
            nvs_html_put_ms(out, frame->value[c]);
            fputs("</td>", out);
        }
        if (process->with_kernel && frame->has_kernel)
            fprintf(out, "<td>%" PRIu64 "</td><td>%" PRIu64 "</td>", frame->preemptions,
                    frame->faults);
        else if (process->with_kernel)
            fputs("<td>-</td><td>-</td>", out);
        if (process->dropped)
            fprintf(out, "<td>%" PRIu64 "</td>", frame->dropped);
        /* the frame's parts side by side, to the scale of the slowest */
        int width = longest ? (int)lround((double)frame->value[NVS_COLUMN_TOTAL] / (double)longest *
                                          SLOWEST_BAR_WIDTH)
                            : 0;
        fprintf(out, "<td class=\"t\"><svg width=\"%d\" height=\"12\">", SLOWEST_BAR_WIDTH);
        double sum = 0;
        for (int c = NVS_FIRST_PART; c <= NVS_LAST_PART; c++)
            if (process->shown[c])
                sum += (double)frame->value[c];
        double below = 0;
        for (int c = NVS_FIRST_PART; c <= NVS_LAST_PART && sum > 0; c++) {
            if (!process->shown[c] || !frame->value[c])
                continue;
            double above = below + (double)frame->value[c] / sum * width;
            int from = (int)lround(below), to = (int)lround(above);
            if (to > from)
                fprintf(out, "<rect class=\"f-%s\" x=\"%d\" y=\"0\" width=\"%d\" height=\"12\"/>",
                        nvs_html_parts[c].class, from, to - from);
            below = above;
        }
        fputs("</svg></td></tr>\n", out);
    }
    fputs("</table>\n", out);
}

/* Whether any of PROCESS's frames spent time in column C. */
static bool has_data(const struct nvs_report_process *process, int c)
{
    for (size_t f = 0; f < process->count; f++)
        if (process->frames[f].value[c])
            return true;
    return false;
}

static void put_process_section(FILE *out, const struct nvs_report *report,
                                const struct nvs_report_process *process, const struct bar *bars,
                                size_t count)
{
    /* The page draws the parts the frames spent time in: a domain with calls,
     * none of them inside a frame (an X11 connection made at start), draws
     * nothing (the text summary still lists it). */
    struct nvs_report_process drawn = *process;
    for (int c = NVS_FIRST_PART; c <= NVS_LAST_PART; c++)
        drawn.shown[c] = process->shown[c] && has_data(process, c);
    process = &drawn;
    fputs("<section>\n<h2>Frames of ", out);
    nvs_html_put_process(out, process);
    fprintf(out, ": %zu</h2>\n", process->count);
    nvs_html_frame_chart(out, process, bars, count);
    nvs_html_histogram(out, process);
    put_statistics(out, process);
    put_slowest(out, process, report->slowest);
    if (process->with_kernel) {
        uint64_t preemptions = 0, faults = 0;
        for (size_t f = 0; f < process->count; f++) {
            preemptions += process->frames[f].preemptions;
            faults += process->frames[f].faults;
        }
        fprintf(
            out,
            "<h3>Off the CPU per frame (kernel probe)</h3>\n<p>Kernel figures for %zu of the %zu "
            "frames: %" PRIu64 " preemption%s and %" PRIu64 " page fault%s in all.</p>\n",
            process->with_kernel, process->count, preemptions, preemptions == 1 ? "" : "s", faults,
            faults == 1 ? "" : "s");
        fputs(
            "<p class=\"note\">Runnable and blocked are summed over the process&#39;s threads that the probe "
            "watched in the frame (those that made hooked calls): where two threads were off the CPU at "
            "once, both count, so a frame&#39;s figures can add up to more than its time.</p>\n",
            out);
        fputs("<ul class=\"legend\">", out);
        for (int c = NVS_COLUMN_RUNNABLE; c <= NVS_COLUMN_BLOCKED; c++)
            fprintf(out, "<li><span class=\"key k-%s\"></span>%s</li>", nvs_html_parts[c].class,
                    nvs_html_parts[c].meaning);
        fputs("</ul>\n", out);
        static const int off_cpu[] = { NVS_COLUMN_RUNNABLE, NVS_COLUMN_BLOCKED };
        nvs_html_column_chart(out, process, bars, count, off_cpu, 2, "time off the CPU per frame");
    }
    if (process->names) {
        fputs(
            "<h3>NVTX ranges per name in this process (microseconds; p50 and p99 by nearest rank)</h3>\n",
            out);
        put_name_table(out, process->names, process->name_count);
    }
    if (process->shown[NVS_COLUMN_LATENCY]) {
        fprintf(
            out,
            "<h3>Capture to actuation per frame</h3>\n<p class=\"note\">The latency of each frame's "
            "first actuation on a new camera frame, for %zu of the %zu frames%s.</p>\n",
            process->with_latency, process->count,
            count < process->count ? "; a bar is the highest of its bin" : "");
        static const int latency[] = { NVS_COLUMN_LATENCY };
        nvs_html_column_chart(out, process, bars, count, latency, 1,
                              "capture to actuation per frame");
    }
    fputs("</section>\n", out);
}

static void put_latency(FILE *out, const struct nvs_report *report)
{
    const struct nvs_report_latency *latency = &report->latency;
    if (!latency->camera_frames)
        return;
    fputs(
        "<h2>Capture to actuation (milliseconds; p50 and p99 by nearest rank)</h2>\n<p>From a camera frame's "
        "capture to the end of the first actuation after its dequeue.</p>\n",
        out);
    if (!latency->pairs) {
        fprintf(
            out,
            "<p>No actuation after any of the %zu camera frames (USB transfers out, serial or HID "
            "writes: %zu).</p>\n",
            latency->camera_frames, latency->actuations);
        return;
    }
    fputs(
        "<table>\n<tr><th class=\"t\"></th><th>mean</th><th>p50</th><th>p99</th><th>max</th></tr>\n",
        out);
    fprintf(out, "<tr><td class=\"t\">%zu pair%s</td>", latency->pairs,
            nvs_html_plural(latency->pairs));
    for (int s = 0; s < NVS_STATS; s++)
        fprintf(out, "<td>%.3f</td>", latency->stats[s] / NS_PER_MS);
    fprintf(
        out,
        "</tr>\n</table>\n<p>%zu camera frame%s dequeued, %zu not acted on; %zu actuation%s, %zu on "
        "no new frame.</p>\n",
        latency->camera_frames, nvs_html_plural(latency->camera_frames),
        latency->camera_frames - latency->pairs, latency->actuations,
        nvs_html_plural(latency->actuations), latency->actuations - latency->pairs);
}

static void put_names(FILE *out, const struct nvs_report *report)
{
    fprintf(out, "<h2>NVTX ranges per name%s (microseconds; p50 and p99 by nearest rank)</h2>\n",
            report->process_count > 1 ? ", all processes together" : "");
    put_name_table(out, report->names, report->name_count);
}

/* A row of the marks' table: a kind's DOMAIN, COUNT and KIND (blank after its
 * first row: NULL), then a text of it, or the note that ends its texts. */
static void open_mark_row(FILE *out, const struct nvs_report_mark_kind *kind)
{
    if (!kind) {
        fputs("<tr><td class=\"t\"></td><td></td><td class=\"t\"></td>", out);
        return;
    }
    fputs("<tr class=\"kind\"><td class=\"t\">", out);
    nvs_html_text(out, kind->domain);
    fprintf(out, "</td><td>%zu</td><td class=\"t\">", kind->count);
    nvs_html_text(out, kind->kind);
    fputs("</td>", out);
}

/* The marks by kind, as the summary gives them: per kind its domain, count
 * and kind, then its first texts in time order, a row each with its count. */
static void put_marks(FILE *out, const struct nvs_report *report)
{
    if (!report->mark_kind_count)
        return;
    fputs("<h2>NVTX marks per kind (each number as N), with the first texts of each</h2>\n<table>\n"
          "<tr><th class=\"t\">domain</th><th>count</th><th class=\"t\">kind</th>"
          "<th class=\"t\">first texts</th><th>marks</th></tr>\n",
          out);
    for (size_t k = 0; k < report->mark_kind_count; k++) {
        const struct nvs_report_mark_kind *kind = &report->marks[k];
        open_mark_row(out, kind);
        if (!kind->example_count)
            fputs("<td class=\"t\"></td><td></td></tr>\n", out);
        for (size_t t = 0; t < kind->example_count; t++) {
            if (t)
                open_mark_row(out, NULL);
            fputs("<td class=\"t\"><code>", out);
            nvs_html_text(out, kind->examples[t].text);
            fprintf(out, "</code></td><td>%zu</td></tr>\n", kind->examples[t].count);
        }
        if (kind->text_count > NVS_MARK_EXAMPLES) {
            size_t others = kind->text_count - NVS_MARK_EXAMPLES;
            open_mark_row(out, NULL);
            fprintf(out, "<td class=\"t note\">... and %zu other text%s</td><td></td></tr>\n",
                    others, nvs_html_plural(others));
        }
    }
    fputs("</table>\n", out);
}

static void put_windows(FILE *out, const struct nvs_report *report)
{
    if (!report->window_count)
        return;
    fprintf(out,
            "<h2>Capture windows: %zu</h2>\n<table>\n<tr><th class=\"t\">window</th><th>ms</th>"
            "<th class=\"t\">frames</th></tr>\n",
            report->window_count);
    for (size_t w = 0; w < report->window_count; w++) {
        const struct nvs_report_window *window = &report->windows[w];
        fputs("<tr><td class=\"t\">", out);
        nvs_html_text(out, window->name);
        fputc('@', out);
        nvs_html_text(out, window->domain);
        fputs("</td><td>", out);
        nvs_html_put_ms(out, window->duration);
        if (window->first)
            fprintf(out, "</td><td class=\"t\">frames %" PRIu64 "-%" PRIu64 "</td></tr>\n",
                    window->first, window->last);
        else
            fputs("</td><td class=\"t\">no frames</td></tr>\n", out);
    }
    fputs("</table>\n", out);
}

static int put_page(FILE *out, const struct nvs_report *report)
{
    fputs(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>nvtxshim report: ",
        out);
    nvs_html_text(out, report->path);
    fputs("</title>\n", out);
    nvs_html_style(out);
    fputs("</head>\n<body>\n<h1>nvtxshim report: <code>", out);
    nvs_html_text(out, report->path);
    fputs("</code></h1>\n", out);
    size_t frames = 0;
    for (size_t p = 0; p < report->process_count; p++)
        frames += report->processes[p].count;
    if (!report->process_count)
        fputs("<p>No frame ranges: set NVTXSHIM_FRAME to count the loop's frames.</p>\n", out);
    else
        fprintf(out, "<p>%zu frame%s of %zu process%s. Hover a bar for its figures.</p>\n", frames,
                nvs_html_plural(frames), report->process_count,
                report->process_count == 1 ? "" : "es");
    for (size_t p = 0; p < report->process_count; p++) {
        const struct nvs_report_process *process = &report->processes[p];
        size_t count = 0;
        struct bar *bars = nvs_html_make_bars(process, &count);
        if (!bars)
            return -1;
        put_process_section(out, report, process, bars, count);
        free(bars);
    }
    put_latency(out, report);
    put_names(out, report);
    put_marks(out, report);
    put_windows(out, report);
    fputs("</body>\n</html>\n", out);
    return 0;
}

static int put_report_page(FILE *out, const void *report)
{
    return put_page(out, report);
}

int nvs_report_write_html(const struct nvs_report *report, const char *path)
{
    return nvs_html_write("report", path, put_report_page, report);
}
