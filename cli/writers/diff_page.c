/* nvtxshim diff --html: the comparison as one page that needs nothing else
 * (inline SVG and CSS, html.c's style): the runs, the verdict with its
 * intervals and both groups' noise, both groups' frame time histograms on one
 * scale, each run's median and p99 frame on one scale (how far a group's runs
 * lie apart, seen), each column's mean per frame side by side, and the tables. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/diff.h"
#include "writers/html.h"

#define HISTOGRAM_BINS 48
#define CHART_WIDTH 960
#define CHART_HEIGHT 180
#define CHART_LEFT 56
#define CHART_RIGHT 40 /* room right of the last bar for its label */
#define LINE 14        /* a line of the charts' 11 px text */
#define RUN_ROW 18
#define RUN_A "#1e88e5"
#define RUN_B "#e53935"

static const char *colour(int side)
{
    return side ? RUN_B : RUN_A;
}

static double ms(double ns)
{
    return ns / NVS_DIFF_NS_PER_MS;
}

/* A scale's labels under a chart, at 0, 1/4 ... of TOP (ns) over WIDTH pixels
 * from LEFT: the first begins at its tick, the last ends at its tick, the
 * rest are centred, so that none reaches past the chart's edges or into the
 * next. */
static void put_scale(FILE *out, int left, int width, int y, double top)
{
    for (int tick = 0; tick <= 4; tick++)
        fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"%s\">%.2f ms</text>\n",
                left + tick * width / 4, y,
                tick == 0       ? "start"
                    : tick == 4 ? "end"
                                : "middle",
                ms(top * tick / 4));
}

/* Both groups' frame times in one histogram: bins from 0 to the larger p99 and
 * a little, the frames past it in a bin of their own set apart to the right,
 * each group's bar side by side, heights as shares of its frames (all its
 * runs', which may differ in number). The scale's labels are on one line, the
 * last bin's "longer" on the line below it, where no label can overlap it. */
static void put_histograms(FILE *out, const struct nvs_diff *diff)
{
    double top = fmax(diff->side[0].stats[NVS_COLUMN_TOTAL][NVS_STAT_P99],
                      diff->side[1].stats[NVS_COLUMN_TOTAL][NVS_STAT_P99]) *
        1.25;
    if (top <= 0)
        top = 1;
    double share[2][HISTOGRAM_BINS + 1] = { { 0 } }, highest = 0;
    for (int side = 0; side < 2; side++) {
        const struct nvs_diff_side *group = &diff->side[side];
        for (size_t r = 0; r < group->run_count; r++)
            for (size_t f = 0; f < group->runs[r].frame_count; f++) {
                double value = (double)group->runs[r].frames[f].value[NVS_COLUMN_TOTAL];
                int bin = value >= top ? HISTOGRAM_BINS : (int)(value / top * HISTOGRAM_BINS);
                share[side][bin] += 1.0 / (double)group->frame_count;
            }
        for (int bin = 0; bin <= HISTOGRAM_BINS; bin++)
            highest = fmax(highest, share[side][bin]);
    }
    int slot = (CHART_WIDTH - CHART_LEFT - CHART_RIGHT) / (HISTOGRAM_BINS + 2);
    fprintf(out,
            "<svg class=\"histogram\" width=\"%d\" height=\"%d\" role=\"img\" "
            "aria-label=\"frame time histograms\">\n",
            CHART_WIDTH, CHART_HEIGHT + 20 + 2 * LINE);
    for (int side = 0; side < 2; side++)
        for (int bin = 0; bin <= HISTOGRAM_BINS; bin++) {
            int height = (int)lround(share[side][bin] / highest * CHART_HEIGHT);
            /* the frames past the scale one slot apart from it */
            int x = CHART_LEFT + (bin + (bin == HISTOGRAM_BINS)) * slot + side * (slot / 2);
            if (height > 0)
                fprintf(out,
                        "<rect class=\"run-%c\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                        "fill=\"%s\"><title>%c: %.1f %% of frames</title></rect>\n",
                        side ? 'b' : 'a', x, 10 + CHART_HEIGHT - height, slot / 2, height,
                        colour(side), side ? 'B' : 'A', share[side][bin] * 100);
        }
    put_scale(out, CHART_LEFT, HISTOGRAM_BINS * slot, CHART_HEIGHT + 26, top);
    fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">longer</text>\n",
            CHART_LEFT + (HISTOGRAM_BINS + 1) * slot + slot / 2, CHART_HEIGHT + 26 + LINE);
    fputs("</svg>\n", out);
}

static void run_label(const struct nvs_diff_side *side, size_t r, char *label, size_t size)
{
    if (side->run_count == 1)
        snprintf(label, size, "%c", side->label);
    else
        snprintf(label, size, "%c%zu", side->label, r + 1);
}

/* Each run's median and p99 frame on one scale, a row a run, A's then B's: a
 * dot at the median, a bar at the p99, a line between. How far one group's
 * rows lie apart is its noise; the other group's rows against them, the change. */
static void put_runs(FILE *out, const struct nvs_diff *diff)
{
    double top = 0;
    size_t rows = 0;
    for (int side = 0; side < 2; side++)
        for (size_t r = 0; r < diff->side[side].run_count; r++) {
            top = fmax(top, diff->side[side].runs[r].stats[NVS_COLUMN_TOTAL][NVS_STAT_P99]);
            rows++;
        }
    top = top > 0 ? top * 1.1 : 1;
    int width = CHART_WIDTH - CHART_LEFT - CHART_RIGHT;
    int height = (int)rows * RUN_ROW;
    fprintf(out,
            "<svg class=\"runs\" width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"each run's "
            "median and p99 frame\">\n",
            CHART_WIDTH, height + 8 + 2 * LINE);
    int y = 4;
    for (int side = 0; side < 2; side++)
        for (size_t r = 0; r < diff->side[side].run_count; r++, y += RUN_ROW) {
            const struct nvs_diff_run *run = &diff->side[side].runs[r];
            double median = run->stats[NVS_COLUMN_TOTAL][NVS_STAT_P50];
            double p99 = run->stats[NVS_COLUMN_TOTAL][NVS_STAT_P99];
            int x50 = CHART_LEFT + (int)lround(median / top * width);
            int x99 = CHART_LEFT + (int)lround(p99 / top * width);
            char label[32];
            run_label(&diff->side[side], r, label, sizeof label);
            fprintf(out, "<g class=\"run-%c\"><title>%s: ", side ? 'b' : 'a', label);
            nvs_html_text(out, run->path);
            fprintf(out, ": median %.3f ms, p99 %.3f ms, %zu frames</title>\n", ms(median), ms(p99),
                    run->frame_count);
            fprintf(out, "<text x=\"0\" y=\"%d\">%s</text>\n", y + 11, label);
            fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"2\" fill=\"%s\"/>\n", x50,
                    y + 6, x99 - x50 > 0 ? x99 - x50 : 1, colour(side));
            fprintf(out, "<circle cx=\"%d\" cy=\"%d\" r=\"4\" fill=\"%s\"/>\n", x50, y + 7,
                    colour(side));
            fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"3\" height=\"12\" fill=\"%s\"/></g>\n",
                    x99 - 1, y + 1, colour(side));
        }
    put_scale(out, CHART_LEFT, width, height + 4 + LINE, top);
    fputs("</svg>\n", out);
}

/* Each column's mean per frame, A above B, on one scale. */
static void put_columns(FILE *out, const struct nvs_diff *diff)
{
    double widest = 0;
    int rows = 0;
    for (int c = 0; c <= NVS_LAST_PART; c++)
        if (nvs_diff_column_shown(diff, c)) {
            widest = fmax(
                widest,
                fmax(diff->side[0].stats[c][NVS_STAT_MEAN], diff->side[1].stats[c][NVS_STAT_MEAN]));
            rows++;
        }
    if (widest <= 0)
        widest = 1;
    fprintf(out, "<svg width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"mean per column\">\n",
            CHART_WIDTH, rows * 30 + 8);
    int y = 4;
    for (int c = 0; c <= NVS_LAST_PART; c++) {
        if (!nvs_diff_column_shown(diff, c))
            continue;
        fprintf(out, "<text x=\"0\" y=\"%d\">%s</text>\n", y + 17, nvs_report_column_names[c]);
        for (int side = 0; side < 2; side++) {
            double mean = diff->side[side].stats[c][NVS_STAT_MEAN];
            int width = (int)lround(mean / widest * (CHART_WIDTH - 2 * CHART_LEFT - 80));
            fprintf(out,
                    "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"12\" fill=\"%s\"/>"
                    "<text x=\"%d\" y=\"%d\">%.3f ms</text>\n",
                    CHART_LEFT + 24, y + side * 13, width, colour(side), CHART_LEFT + 30 + width,
                    y + side * 13 + 10, ms(mean));
        }
        y += 30;
    }
    fputs("</svg>\n", out);
}

static void put_run_rows(FILE *out, const struct nvs_diff_side *side, int which)
{
    for (size_t r = 0; r < side->run_count; r++) {
        const struct nvs_diff_run *run = &side->runs[r];
        char label[32];
        run_label(side, r, label, sizeof label);
        fprintf(out,
                "<tr><td class=\"t\"><span class=\"key\" style=\"background:%s\"></span>%s</td>"
                "<td class=\"t\"><code>",
                colour(which), label);
        nvs_html_text(out, run->path);
        fprintf(out, "</code></td><td class=\"t\">%" PRIu32, run->pid);
        if (run->process) {
            fputs(" (", out);
            nvs_html_text(out, run->process);
            fputc(')', out);
        }
        fprintf(out, "</td><td>%zu%s</td><td>%.3f</td><td>%.3f</td></tr>\n", run->frame_count,
                run->frame_count < NVS_DIFF_FEW_FRAMES ? NVS_DIFF_FEW_FRAMES_NOTE : "",
                ms(run->stats[NVS_COLUMN_TOTAL][NVS_STAT_P50]),
                ms(run->stats[NVS_COLUMN_TOTAL][NVS_STAT_P99]));
    }
}

static void put_verdict(FILE *out, const struct nvs_diff *diff)
{
    static const int stat_of[NVS_DIFF_STATISTICS] = { NVS_STAT_P50, NVS_STAT_P99 };
    const struct nvs_diff_side *a = &diff->side[0], *b = &diff->side[1];
    fprintf(out,
            "<h2>Verdict: %s</h2>\n<p class=\"note\">B against A; %d %% intervals from %zu "
            "resamples of the runs, then of each run's frames (fixed seed); judged against A's "
            "noise, how far its runs' own figures lie apart.</p>\n<table class=\"verdict\">\n<tr>"
            "<th class=\"t\"></th><th>A (ms)</th><th>B (ms)</th><th>change</th><th>interval</th>"
            "<th class=\"t\">judgement</th><th>A's noise</th><th>B's noise</th>",
            nvs_diff_verdict_word(diff), NVS_DIFF_CONFIDENCE, diff->resamples);
    fputs("</tr>\n", out);
    for (int s = 0; s < NVS_DIFF_STATISTICS; s++) {
        const struct nvs_diff_interval *change = &diff->change[s];
        fprintf(out,
                "<tr><td class=\"t\">%s frame</td><td>%.3f</td><td>%.3f</td><td>%+.1f %%</td>"
                "<td>%+.1f to %+.1f %%</td><td class=\"t\">%s</td>",
                nvs_diff_statistic_names[s], ms(a->stats[NVS_COLUMN_TOTAL][stat_of[s]]),
                ms(b->stats[NVS_COLUMN_TOTAL][stat_of[s]]), change->estimate, change->low,
                change->high, nvs_diff_judgement_word(diff->judgement[s]));
        for (int side = 0; side < 2; side++) {
            const struct nvs_diff_side *group = &diff->side[side];
            if (group->run_count < 2)
                fputs("<td>one run</td>", out);
            else
                fprintf(out, "<td>%.3f-%.3f ms (%.1f %%)</td>", ms(group->spread[s].least),
                        ms(group->spread[s].greatest), group->spread[s].percent);
        }
        fputs("</tr>\n", out);
    }
    fputs("</table>\n<p>Moved the frame (mean per frame, B less A): ", out);
    for (size_t k = 0; k < diff->named_count; k++) {
        const struct nvs_diff_interval *change = &diff->column_change[diff->named[k]];
        fprintf(out, "%s<b>%s</b> %+.3f ms [%+.3f, %+.3f]", k ? ", " : "",
                nvs_report_column_names[diff->named[k]], ms(change->estimate), ms(change->low),
                ms(change->high));
    }
    if (!diff->named_count)
        fputs(a->run_count < 2 ? "no column's mean moved clear of 0"
                               : "no column's mean moved "
                                 "beyond A's noise",
              out);
    fputs(".</p>\n", out);
    for (int s = 0; s < NVS_DIFF_STATISTICS; s++)
        if (diff->gate[s] >= 0)
            fprintf(out,
                    "<p>Gate %s %g %%: the %s frame is <b>%s</b> (its interval's low end, %+.1f "
                    "%%, %s above it).</p>\n",
                    diff->gate_option[s], diff->gate[s], nvs_diff_statistic_names[s],
                    diff->regression[s] ? "a regression" : "within it", diff->change[s].low,
                    diff->regression[s] ? "is" : "is not");
}

static void put_stat_cells(FILE *out, const double stats[NVS_STATS])
{
    for (int s = 0; s < NVS_STATS; s++)
        fprintf(out, "<td>%.3f</td>", ms(stats[s]));
}

static void put_tables(FILE *out, const struct nvs_diff *diff)
{
    const struct nvs_diff_side *a = &diff->side[0], *b = &diff->side[1];
    fputs("<h2>Per frame (milliseconds; all of a side's frames; p50 and p99 by nearest rank)</h2>\n"
          "<table>\n<tr><th class=\"t\"></th><th>A mean</th><th>p50</th><th>p99</th><th>max</th>"
          "<th>B mean</th><th>p50</th><th>p99</th><th>max</th><th>change of the mean</th>"
          "<th>interval</th><th>of the p99</th></tr>\n",
          out);
    for (int c = 0; c < NVS_COLUMNS; c++) {
        if (!nvs_diff_column_shown(diff, c))
            continue;
        fprintf(out, "<tr><td class=\"t\">%s</td>", nvs_report_column_names[c]);
        put_stat_cells(out, a->stats[c]);
        put_stat_cells(out, b->stats[c]);
        fprintf(out, "<td>%+.3f</td>", ms(b->stats[c][NVS_STAT_MEAN] - a->stats[c][NVS_STAT_MEAN]));
        if (c == NVS_COLUMN_LATENCY)
            fputs("<td></td>", out);
        else
            fprintf(out, "<td>%+.3f to %+.3f</td>", ms(diff->column_change[c].low),
                    ms(diff->column_change[c].high));
        fprintf(out, "<td>%+.3f</td></tr>\n",
                ms(b->stats[c][NVS_STAT_P99] - a->stats[c][NVS_STAT_P99]));
    }
    bool several = a->run_count > 1 || b->run_count > 1;
    fprintf(
        out,
        "</table>\n<h2>Range names by the time per frame they moved</h2>\n<table>\n<tr>"
        "<th class=\"t\">domain</th><th class=\"t\">name</th><th>A count</th><th>mean (us)</th>"
        "<th>p99 (us)%s</th><th>B count</th><th>mean (us)</th><th>p99 (us)%s</th><th>A per frame (ms)"
        "</th><th>B per frame (ms)</th><th>change</th></tr>\n",
        several ? "*" : "", several ? "*" : "");
    for (size_t i = 0; i < diff->name_count; i++) {
        const struct nvs_diff_name_change *change = &diff->names[i];
        fputs("<tr><td class=\"t\">", out);
        nvs_html_text(out, change->domain);
        fputs("</td><td class=\"t\">", out);
        nvs_html_text(out, change->name);
        fputs("</td>", out);
        for (int side = 0; side < 2; side++) {
            if (change->in[side])
                fprintf(out, "<td>%zu</td><td>%.1f</td><td>%.1f</td>", change->count[side],
                        change->mean[side] / 1e3, change->p99[side] / 1e3);
            else
                fputs("<td>-</td><td>-</td><td>-</td>", out);
        }
        fprintf(out, "<td>%.3f</td><td>%.3f</td><td>%+.3f</td></tr>\n", ms(change->per_frame[0]),
                ms(change->per_frame[1]), ms(change->per_frame[1] - change->per_frame[0]));
    }
    fputs("</table>\n", out);
    if (several)
        fputs(
            "<p class=\"note\">* with several runs a side, the median of its runs' own p99s.</p>\n",
            out);
}

static void put_side_name(FILE *out, const struct nvs_diff_side *side)
{
    if (side->run_count == 1) {
        nvs_html_text(out, side->runs[0].path);
        return;
    }
    fprintf(out, "%zu runs (", side->run_count);
    nvs_html_text(out, side->runs[0].path);
    fputs(" ...)", out);
}

static int put_page(FILE *out, const void *context)
{
    const struct nvs_diff *diff = context;
    fputs(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>nvtxshim diff: ",
        out);
    put_side_name(out, &diff->side[0]);
    fputs(" and ", out);
    put_side_name(out, &diff->side[1]);
    fputs("</title>\n<meta name=\"viewport\" content=\"width=device-width\">\n", out);
    nvs_html_style(out);
    fputs(
        "</head>\n<body>\n<h1>nvtxshim diff</h1>\n<h2>The runs: each run's loop, its process with "
        "the most frames</h2>\n<table>\n<tr><th class=\"t\">run</th><th class=\"t\">file</th>"
        "<th class=\"t\">process</th><th>frames</th><th>median (ms)</th><th>p99 (ms)</th></tr>\n",
        out);
    for (int side = 0; side < 2; side++)
        put_run_rows(out, &diff->side[side], side);
    fputs("</table>\n", out);
    put_verdict(out, diff);
    fputs("<h2>Frame time, both groups on one scale</h2>\n", out);
    put_histograms(out, diff);
    fputs("<p class=\"note\">The share of each group's frames (all its runs') in each bin, to 1.25 "
          "times the larger p99; the bar set apart on the right holds the frames past it.</p>\n"
          "<h2>Each run's median and p99 frame</h2>\n",
          out);
    put_runs(out, diff);
    fputs(
        "<p class=\"note\">A dot at each run's median frame, a bar at its p99: how far one group's "
        "runs lie apart is its noise.</p>\n<h2>Mean per frame, by column</h2>\n",
        out);
    put_columns(out, diff);
    put_tables(out, diff);
    fputs("</body>\n</html>\n", out);
    return 0;
}

int nvs_diff_write_page(const struct nvs_diff *diff, const char *path)
{
    return nvs_html_write("diff", path, put_page, diff);
}
