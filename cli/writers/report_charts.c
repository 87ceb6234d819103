/* report --html's charts (report_charts.h), as inline SVG: every shape lies on
 * whole pixels and is drawn with crisp edges, so that a bar's segment is
 * exactly its column's colour and the picture can be measured. */
#define _GNU_SOURCE
#include "writers/report_charts.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "writers/html.h"

#define NS_PER_MS 1e6

/* Of fewer frames than this the p99 by nearest rank is the slowest frame: such
 * a bin has no p99 of its own, and one tick (its slowest) is drawn for both. */
#define P99_FRAMES 100
/* A label over the plot takes about this many pixels per character (11px sans-serif). */
#define LABEL_CHARACTER_WIDTH 7

/* The charts' geometry, in CSS pixels: the plot area starts LEFT from the
 * chart's edge (room for the axis's labels) and is PLOT_WIDTH wide. */
#define CHART_WIDTH 1000
#define LEFT 64
#define PLOT_WIDTH 920
#define TOP 22 /* above the plot: the y axis's unit */
#define FRAME_PLOT_HEIGHT 300
#define SMALL_PLOT_HEIGHT 150
#define AXIS_ROOM 30 /* below the plot: the x axis's labels */
/* At most this many bars, so that each is at least 2 pixels wide: more frames
 * are binned, each bar standing for the slowest frame of its bin. */
#define MAX_BARS (PLOT_WIDTH / 2)
#define HISTOGRAM_BINS 40

/* A plot area and the value at its top; values are drawn from its bottom. */
struct plot {
    int left, top, width, height;
    double max;
};

/* The pixel row of the top of a bar of VALUE. */
static int row_of(const struct plot *plot, double value)
{
    double fraction = plot->max > 0 ? value / plot->max : 0;
    if (fraction > 1)
        fraction = 1;
    if (fraction < 0)
        fraction = 0;
    return plot->top + plot->height - (int)lround(fraction * plot->height);
}

/* A step of 1, 2 or 5 times a power of ten that cuts MAX into at most TICKS. */
static double tick_step(double max, int ticks)
{
    if (!(max > 0))
        return 1;
    double raw = max / ticks, magnitude = pow(10, floor(log10(raw)));
    double r = raw / magnitude;
    return (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * magnitude;
}

/* The plot of a chart, its top a whole number of ticks above MAX. */
static struct plot make_plot(int height, double max, double *step)
{
    *step = tick_step(max, 5);
    double top = ceil(max / *step) * *step;
    return (struct plot){ LEFT, TOP, PLOT_WIDTH, height, top > 0 ? top : 1 };
}

static void open_chart_with_room(FILE *out, const struct plot *plot, const char *label,
                                 bool background, int below)
{
    fprintf(out, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"",
            CHART_WIDTH, plot->top + plot->height + below, CHART_WIDTH,
            plot->top + plot->height + below);
    nvs_html_text(out, label);
    fputs("\">\n", out);
    if (background)
        fprintf(out, "<rect class=\"f-plot\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n",
                plot->left, plot->top, plot->width, plot->height);
}

static void open_chart(FILE *out, const struct plot *plot, const char *label, bool background)
{
    open_chart_with_room(out, plot, label, background, AXIS_ROOM);
}

/* The y axis's ticks and labels (every STEP, in UNIT) and the x axis's line. */
static void put_axes(FILE *out, const struct plot *plot, double step, const char *unit)
{
    int bottom = plot->top + plot->height;
    fprintf(out, "<rect class=\"f-axis\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"1\"/>\n",
            plot->left - 1, bottom, plot->width + 1);
    fprintf(out, "<rect class=\"f-axis\" x=\"%d\" y=\"%d\" width=\"1\" height=\"%d\"/>\n",
            plot->left - 1, plot->top, plot->height + 1);
    for (int k = 0; k * step <= plot->max * (1 + 1e-9); k++) {
        int y = row_of(plot, k * step);
        fprintf(out, "<rect class=\"f-axis\" x=\"%d\" y=\"%d\" width=\"4\" height=\"1\"/>",
                plot->left - 5, y > plot->top ? y - 1 : y);
        fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%g</text>\n", plot->left - 8,
                y + 4, k * step);
    }
    fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", plot->left - 8,
            plot->top - 10, unit);
}

struct ranked {
    int64_t total;
    size_t index;
};

static int by_total(const void *left, const void *right)
{
    const struct ranked *x = left, *y = right;
    return x->total < y->total ? -1
        : x->total > y->total  ? 1
                               : (x->index > y->index) - (x->index < y->index);
}

/* PROCESS's frames in at most MAX_BARS bars of as many frames each as can be. */
struct bar *nvs_html_make_bars(const struct nvs_report_process *process, size_t *count)
{
    size_t n = process->count, bars = n < MAX_BARS ? n : MAX_BARS;
    struct bar *out = malloc((bars ? bars : 1) * sizeof *out);
    struct ranked *ranks = malloc(((n + bars - 1) / (bars ? bars : 1) + 1) * sizeof *ranks);
    if (!out || !ranks) {
        free(out);
        free(ranks);
        return NULL;
    }
    for (size_t b = 0; b < bars; b++) {
        size_t first = b * n / bars, last = (b + 1) * n / bars, size = last - first, over = 0;
        for (size_t f = first; f < last; f++) {
            ranks[f - first] = (struct ranked){ process->frames[f].value[NVS_COLUMN_TOTAL], f };
            over += nvs_report_over_budget(process, &process->frames[f]);
        }
        qsort(ranks, size, sizeof *ranks, by_total);
        /* by nearest rank, as the tables: the ceil(p * n)-th smallest */
        size_t median = (size + 1) / 2 - 1, p99 = (size * 99 + 99) / 100 - 1;
        out[b] = (struct bar){
            first, last, ranks[size - 1].index, ranks[median].index, over, ranks[p99].total
        };
    }
    free(ranks);
    *count = bars;
    return out;
}

/* Bar B of COUNT's slot: from *X, *WIDTH pixels; the bar itself leaves a gap
 * of a fifth of the slot (none below 4 pixels) so that bars stand apart. */
static void slot_of(size_t b, size_t count, int *x, int *width, int *bar_x, int *bar_width)
{
    *x = LEFT + (int)(b * PLOT_WIDTH / count);
    *width = LEFT + (int)((b + 1) * PLOT_WIDTH / count) - *x;
    int gap = *width >= 4 ? (*width + 4) / 5 : 0;
    *bar_x = *x + gap / 2;
    *bar_width = *width - gap;
}

/* The x axis's labels under a few bars: the first frame of each, the last of the last. */
static void put_frame_labels(FILE *out, const struct plot *plot,
                             const struct nvs_report_process *process, const struct bar *bars,
                             size_t count, int lower)
{
    size_t last_shown = (size_t)-1;
    for (int k = 0; k <= 4; k++) {
        size_t b = (count - 1) * (size_t)k / 4;
        if (b == last_shown)
            continue;
        last_shown = b;
        int x, width, bar_x, bar_width;
        slot_of(b, count, &x, &width, &bar_x, &bar_width);
        fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"%s\">frame %" PRIu64 "</text>\n",
                k == 0       ? x
                    : k == 4 ? x + width
                             : x + width / 2,
                plot->top + plot->height + 16 + lower,
                k == 0       ? "start"
                    : k == 4 ? "end"
                             : "middle",
                process->frames[k == 4 ? bars[b].last - 1 : bars[b].first].number);
    }
}

/* The parts of FRAME the bars stack, from the bottom: the shown columns of
 * USB..REST. Their sum is the frame's time unless calls of different parts
 * overlapped (on other threads); then they are scaled down together to it. */
static void put_stack(FILE *out, const struct nvs_report_process *process,
                      const struct nvs_report_frame *frame, const struct plot *plot, int x,
                      int width)
{
    double sum = 0;
    for (int c = NVS_FIRST_PART; c <= NVS_LAST_PART; c++)
        if (process->shown[c])
            sum += (double)frame->value[c];
    double total = (double)frame->value[NVS_COLUMN_TOTAL];
    double scale = sum > total && sum > 0 ? total / sum : 1, below = 0;
    for (int c = NVS_FIRST_PART; c <= NVS_LAST_PART; c++) {
        if (!process->shown[c] || !frame->value[c])
            continue;
        double above = below + (double)frame->value[c] * scale;
        /* each boundary rounded once: the segments add up to the bar */
        int top = row_of(plot, above / NS_PER_MS), base = row_of(plot, below / NS_PER_MS);
        if (base > top)
            fprintf(out, "<rect class=\"f-%s\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>",
                    nvs_html_parts[c].class, x, top, width, base - top);
        below = above;
    }
}

/* The frame's figures, for a bar's tooltip or a table. */
static void put_figures(FILE *out, const struct nvs_report_process *process,
                        const struct nvs_report_frame *frame)
{
    fprintf(out, "frame %" PRIu64 ": ", frame->number);
    nvs_html_put_ms(out, frame->value[NVS_COLUMN_TOTAL]);
    fputs(" ms", out);
    if (nvs_report_over_budget(process, frame))
        fputs(", over the budget", out);
    for (int c = NVS_FIRST_PART; c < NVS_COLUMNS; c++) {
        if (!process->shown[c] || (c == NVS_COLUMN_LATENCY && !frame->has_latency))
            continue;
        fprintf(out, "; %s ", nvs_report_column_names[c]);
        nvs_html_put_ms(out, frame->value[c]);
    }
}

/* Whether a bin of SIZE frames has a p99 of its own, other than its slowest frame. */
static bool has_own_p99(size_t size)
{
    return size >= P99_FRAMES;
}

/* The bins' sizes: of COUNT bins of PROCESS's frames, the smaller and the larger. */
static size_t smaller_bin(const struct nvs_report_process *process, size_t count)
{
    return process->count / count;
}

static size_t larger_bin(const struct nvs_report_process *process, size_t count)
{
    return (process->count + count - 1) / count;
}

static void put_legend(FILE *out, const struct nvs_report_process *process, size_t count)
{
    bool binned = count < process->count;
    /* bins of the smaller size, the larger, or both: with and without a p99 of their own */
    bool with_p99 = binned && has_own_p99(larger_bin(process, count));
    bool without_p99 = binned && !has_own_p99(smaller_bin(process, count));

    fputs("<ul class=\"legend\">", out);
    for (int c = NVS_FIRST_PART; c <= NVS_LAST_PART; c++)
        if (process->shown[c])
            fprintf(out, "<li><span class=\"key k-%s\"></span>%s: %s</li>", nvs_html_parts[c].class,
                    nvs_report_column_names[c], nvs_html_parts[c].meaning);
    if (process->budget_from != NVS_BUDGET_NONE) {
        fputs("<li><span class=\"key line k-budget\"></span>the budget, ", out);
        nvs_html_put_ms(out, process->budget_ns);
        fprintf(out, " ms (from %s)</li>",
                process->budget_from == NVS_BUDGET_OPTION ? "--budget"
                                                          : "the library&#39;s over budget marks");
        if (binned)
            fprintf(out,
                    "<li><span class=\"key line k-budget\" style=\"height:6px;vertical-align:0\">"
                    "</span>under the bins: their share over it (%zu of %zu frames in all)</li>",
                    process->over_budget, process->count);
        else
            fprintf(
                out,
                "<li><span class=\"key k-over\"></span>behind the frames over it: %zu of %zu</li>",
                process->over_budget, process->count);
    }
    if (with_p99)
        fputs("<li><span class=\"key line k-p99\"></span>a bin&#39;s p99</li>", out);
    if (with_p99 && without_p99)
        fprintf(
            out,
            "<li><span class=\"key line k-max\"></span>its slowest frame (the one tick of a bin of "
            "fewer than %d frames, which has no p99 of its own: its p99 is its slowest frame)</li>",
            P99_FRAMES);
    else if (without_p99)
        fprintf(
            out,
            "<li><span class=\"key line k-max\"></span>a bin&#39;s slowest frame, its one tick: a bin "
            "of fewer than %d frames has no p99 of its own (its p99 is its slowest frame)</li>",
            P99_FRAMES);
    else if (with_p99)
        fputs("<li><span class=\"key line k-max\"></span>its slowest frame</li>", out);
    fputs("</ul>\n", out);
}

/* The charts' scale of frame time, in ms: the longest frame, or the budget
 * when no frame reaches it. */
static double frame_time_scale(const struct nvs_report_process *process)
{
    int64_t longest = process->budget_ns;
    for (size_t f = 0; f < process->count; f++)
        if (process->frames[f].value[NVS_COLUMN_TOTAL] > longest)
            longest = process->frames[f].value[NVS_COLUMN_TOTAL];
    return (double)longest / NS_PER_MS;
}

/* A clipped tick's label: TEXT (SIZE bytes) for VALUE_NS; its half width in pixels. */
static int clipped_label(char *text, size_t size, int64_t value_ns)
{
    int length = snprintf(text, size, "%.3f ms", (double)value_ns / NS_PER_MS);
    return (length * LABEL_CHARACTER_WIDTH + 1) / 2;
}

/* Over the plot, the frame time of each bin's slowest frame that is off the
 * scale (its tick sits at the top edge). Ticks closer together than a label's
 * width share one, over the highest of them and with its value; labels keep
 * clear of each other and of the axis's unit. */
static void put_clipped_labels(FILE *out, const struct nvs_report_process *process,
                               const struct bar *bars, size_t count, const struct plot *plot)
{
    char text[48];
    int half = 0;
    for (size_t b = 0; b < count; b++) {
        int64_t value = process->frames[bars[b].frame].value[NVS_COLUMN_TOTAL];
        if ((double)value / NS_PER_MS > plot->max && clipped_label(text, sizeof text, value) > half)
            half = clipped_label(text, sizeof text, value);
    }
    if (!half)
        return;
    int last_right = plot->left - 4, gap = LABEL_CHARACTER_WIDTH;
    int64_t group_value = 0;
    int group_centre = 0;
    for (size_t b = 0; b <= count; b++) {
        int64_t value = b < count ? process->frames[bars[b].frame].value[NVS_COLUMN_TOTAL] : 0;
        if (b < count && (double)value / NS_PER_MS <= plot->max)
            continue;
        int x = 0, width, bar_x, bar_width;
        if (b < count) {
            slot_of(b, count, &x, &width, &bar_x, &bar_width);
            x = bar_x + bar_width / 2;
        }
        int placed = group_centre > last_right + gap + half ? group_centre
                                                            : last_right + gap + half;
        if (placed > CHART_WIDTH - half)
            placed = CHART_WIDTH - half;
        if (b < count && group_value && x - half <= placed + half + gap) {
            if (value > group_value) {
                group_value = value;
                group_centre = x;
            }
            continue;
        }
        if (group_value) {
            clipped_label(text, sizeof text, group_value);
            fprintf(out,
                    "<text class=\"clipped\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                    placed, plot->top - 4, text);
            last_right = placed + half;
        }
        group_value = value;
        group_centre = x;
    }
}

/* What a bar of a binned frame chart stands for, and its ticks and strip. */
static void put_bin_note(FILE *out, const struct nvs_report_process *process, size_t count)
{
    size_t smaller = smaller_bin(process, count), larger = larger_bin(process, count);
    fprintf(
        out,
        "<p class=\"note\">%zu frames in %zu bins of %zu or %zu consecutive frames: a bar stacks "
        "the parts of its bin&#39;s median frame, ",
        process->count, count, smaller, larger);
    if (has_own_p99(smaller))
        fputs("the dark tick is the bin&#39;s p99 and the light one its slowest frame", out);
    else if (has_own_p99(larger))
        fprintf(
            out,
            "the dark tick is the bin&#39;s p99 and the light one its slowest frame, the only tick "
            "of a bin of fewer than %d frames (whose p99 is its slowest frame)",
            P99_FRAMES);
    else
        fprintf(
            out,
            "the tick is the bin&#39;s slowest frame, and its p99 too: of fewer than %d frames the "
            "p99 by nearest rank is the slowest",
            P99_FRAMES);
    fprintf(
        out,
        ". A tick above the scale, which holds the run&#39;s p99 frame and every bin&#39;s median, "
        "sits at the top edge with its frame time over the plot (the highest of the ticks there, "
        "where several lie close together); %s Each bar&#39;s tooltip has its figures.</p>\n",
        process->budget_ns
            ? "the strip under the plot is the share of each bin&#39;s frames over the "
              "budget, darker for more."
            : "");
}

/* Frame time per frame: a stacked bar per frame and the frames over the
 * budget on a band behind them; past MAX_BARS frames, a bar per bin of
 * consecutive frames drawn as its distribution (struct bar), on the scale of
 * the bins' p99s (a slowest frame above it is a tick at the top), and the
 * share of each bin's frames over the budget on a strip under the plot. */
void nvs_html_frame_chart(FILE *out, const struct nvs_report_process *process,
                          const struct bar *bars, size_t count)
{
    bool binned = count < process->count;
    double step, scale = frame_time_scale(process);
    if (binned) {
        /* the budget, the run's p99 frame and every bin's median fit; a bin's
         * p99 or slowest frame above that is a tick at the top edge (a bin of
         * a few dozen frames has an outlier for its p99) */
        double highest = fmax((double)process->budget_ns,
                              process->stats[NVS_COLUMN_TOTAL][NVS_STAT_P99]);
        for (size_t b = 0; b < count; b++)
            highest = fmax(highest,
                           (double)process->frames[bars[b].median].value[NVS_COLUMN_TOTAL]);
        scale = highest / NS_PER_MS;
    }
    /* room above the tallest bar: the band shows over it */
    struct plot plot = make_plot(FRAME_PLOT_HEIGHT, scale * 1.04, &step);
    fputs("<h3>Frame time per frame</h3>\n", out);
    put_legend(out, process, count);
    if (binned)
        put_bin_note(out, process, count);
    int below = binned && process->budget_ns ? AXIS_ROOM + 10 : AXIS_ROOM;
    open_chart_with_room(out, &plot, "frame time per frame", true, below);
    for (size_t b = 0; b < count && !binned; b++)
        if (nvs_report_over_budget(process, &process->frames[bars[b].frame])) {
            int x, width, bar_x, bar_width;
            slot_of(b, count, &x, &width, &bar_x, &bar_width);
            fprintf(out, "<rect class=\"f-over\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n",
                    x, plot.top, width, plot.height);
        }
    for (size_t b = 0; b < count; b++) {
        const struct nvs_report_frame *median = &process->frames[bars[b].median];
        const struct nvs_report_frame *slowest = &process->frames[bars[b].frame];
        int x, width, bar_x, bar_width;
        slot_of(b, count, &x, &width, &bar_x, &bar_width);
        fputs("<g><title>", out);
        if (binned) {
            size_t size = bars[b].last - bars[b].first;
            fprintf(out, "frames %" PRIu64 "-%" PRIu64 " (%zu): median ",
                    process->frames[bars[b].first].number, process->frames[bars[b].last - 1].number,
                    size);
            nvs_html_put_ms(out, median->value[NVS_COLUMN_TOTAL]);
            if (has_own_p99(size)) {
                fputs(" ms, p99 ", out);
                nvs_html_put_ms(out, bars[b].p99);
            }
            fputs(" ms, slowest ", out);
            nvs_html_put_ms(out, slowest->value[NVS_COLUMN_TOTAL]);
            fprintf(out, " ms (frame %" PRIu64 ")", slowest->number);
            if (process->budget_ns)
                fprintf(out, "; %zu over the budget", bars[b].over);
            fputs(". The median one, ", out);
        }
        put_figures(out, process, median);
        fputs(" ms</title>", out);
        put_stack(out, process, median, &plot, bar_x, bar_width);
        if (binned) {
            double p99_ms = (double)bars[b].p99 / NS_PER_MS;
            int y = p99_ms > plot.max ? plot.top : row_of(&plot, p99_ms);
            if (has_own_p99(bars[b].last - bars[b].first))
                fprintf(out, "<rect class=\"f-p99\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>",
                        bar_x, y > plot.top ? y - 1 : y, bar_width, p99_ms > plot.max ? 3 : 2);
            double slowest_ms = (double)slowest->value[NVS_COLUMN_TOTAL] / NS_PER_MS;
            y = slowest_ms > plot.max ? plot.top : row_of(&plot, slowest_ms);
            fprintf(out, "<rect class=\"f-max\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>",
                    bar_x, y > plot.top ? y - 1 : y, bar_width, slowest_ms > plot.max ? 3 : 1);
            if (process->budget_ns && bars[b].over) {
                double share = (double)bars[b].over / (double)(bars[b].last - bars[b].first);
                fprintf(out,
                        "<rect class=\"f-strip\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"6\" "
                        "fill-opacity=\"%.3f\"/>",
                        x, plot.top + plot.height + 3, width, 0.15 + 0.85 * share);
            }
        }
        fputs("</g>\n", out);
    }
    if (binned)
        put_clipped_labels(out, process, bars, count, &plot);
    if (process->budget_ns) {
        /* two pixel rows, the lower one at the budget */
        int y = row_of(&plot, (double)process->budget_ns / NS_PER_MS);
        fprintf(
            out,
            "<rect class=\"f-budget\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"2\"><title>budget ",
            plot.left, y - 1, plot.width);
        nvs_html_put_ms(out, process->budget_ns);
        fputs(" ms</title></rect>\n", out);
    }
    put_axes(out, &plot, step, "ms");
    put_frame_labels(out, &plot, process, bars, count, below - AXIS_ROOM);
    fputs("</svg>\n", out);
    fputs(
        "<p class=\"note\">A bar stacks the frame&#39;s time in each kind of call (the union of its calls&#39; "
        "intervals in the frame) and the rest; where calls of two kinds overlapped (on two threads), "
        "its parts are scaled down together to the frame&#39;s time. The tables have the exact figures.</p>\n",
        out);
}

/* The frame time below which all but the slowest 0.5 % of PROCESS's frames
 * lie (nearest rank), in ms. */
static double frame_time_p995(const struct nvs_report_process *process)
{
    size_t beyond = process->count / 200; /* process->slowest: the slowest first */
    return (double)process->frames[process->slowest[beyond]].value[NVS_COLUMN_TOTAL] / NS_PER_MS;
}

/* How many frames took how long: HISTOGRAM_BINS bins from 0 to the axis's top,
 * which is the p99.5 frame and a little (or the budget, when higher), so that
 * a few frames far out do not squeeze the rest into one bin; the frames past
 * it are said, not drawn. */
void nvs_html_histogram(FILE *out, const struct nvs_report_process *process)
{
    double step, longest = frame_time_scale(process), bound = frame_time_p995(process) * 1.1;
    if (process->budget_ns && (double)process->budget_ns / NS_PER_MS * 1.05 > bound)
        bound = (double)process->budget_ns / NS_PER_MS * 1.05;
    struct plot span = make_plot(0, bound < longest ? bound : longest, &step);
    double top_ms = span.max, bin_ms = top_ms / HISTOGRAM_BINS;
    size_t counts[HISTOGRAM_BINS] = { 0 }, most = 0, past = 0;
    for (size_t f = 0; f < process->count; f++) {
        double ms = (double)process->frames[f].value[NVS_COLUMN_TOTAL] / NS_PER_MS;
        if (ms > top_ms) {
            past++;
            continue;
        }
        size_t bin = (size_t)(ms / bin_ms);
        bin = bin < HISTOGRAM_BINS ? bin : HISTOGRAM_BINS - 1;
        if (++counts[bin] > most)
            most = counts[bin];
    }
    double count_step;
    struct plot plot = make_plot(SMALL_PLOT_HEIGHT, (double)most, &count_step);
    if (count_step < 1)
        count_step = 1, plot.max = ceil(plot.max);
    fprintf(
        out,
        "<h3>Frame time histogram</h3>\n<p class=\"note\">Frames per %g ms of frame time, from 0 "
        "to %g ms%s.",
        bin_ms, top_ms, process->budget_ns ? "; the red line is the budget" : "");
    if (past)
        fprintf(
            out,
            " <span class=\"tail\">%zu frame%s took longer, up to %.3f ms: not drawn, so that the "
            "others show.</span>",
            past, nvs_html_plural(past), longest);
    fputs("</p>\n", out);
    open_chart(out, &plot, "frame time histogram", false);
    for (int b = 0; b < HISTOGRAM_BINS; b++) {
        if (!counts[b])
            continue;
        int x = LEFT + b * PLOT_WIDTH / HISTOGRAM_BINS;
        int width = LEFT + (b + 1) * PLOT_WIDTH / HISTOGRAM_BINS - x;
        int y = row_of(&plot, (double)counts[b]);
        fprintf(
            out,
            "<rect class=\"f-hist\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"><title>%g-%g ms: "
            "%zu frame%s</title></rect>\n",
            x + 1, y, width - 2, plot.top + plot.height - y, b * bin_ms, (b + 1) * bin_ms,
            counts[b], nvs_html_plural(counts[b]));
    }
    if (process->budget_ns) {
        int x = LEFT + (int)lround((double)process->budget_ns / NS_PER_MS / top_ms * PLOT_WIDTH);
        fprintf(out, "<rect class=\"f-budget\" x=\"%d\" y=\"%d\" width=\"2\" height=\"%d\"/>\n",
                x > LEFT + PLOT_WIDTH - 2 ? LEFT + PLOT_WIDTH - 2 : x - 1, plot.top, plot.height);
    }
    put_axes(out, &plot, count_step, "frames");
    for (int k = 0; k <= 4; k++)
        fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"%s\">%g ms</text>\n",
                LEFT + k * PLOT_WIDTH / 4, plot.top + plot.height + 16,
                k == 0       ? "start"
                    : k == 4 ? "end"
                             : "middle",
                top_ms * k / 4);
    fputs("</svg>\n", out);
}

/* A smaller chart per bar of one or two columns (the kernel probe's, or the
 * latency): the bar's frame's values, or for the latency the highest in the
 * bin. */
void nvs_html_column_chart(FILE *out, const struct nvs_report_process *process,
                           const struct bar *bars, size_t count, const int *columns,
                           int column_count, const char *label)
{
    double highest = 0;
    for (size_t b = 0; b < count; b++) {
        double sum = 0;
        for (int k = 0; k < column_count; k++)
            sum += (double)process->frames[bars[b].frame].value[columns[k]];
        highest = sum > highest ? sum : highest;
        for (size_t f = bars[b].first; columns[0] == NVS_COLUMN_LATENCY && f < bars[b].last; f++)
            if (process->frames[f].has_latency &&
                process->frames[f].value[NVS_COLUMN_LATENCY] > highest)
                highest = (double)process->frames[f].value[NVS_COLUMN_LATENCY];
    }
    double step;
    struct plot plot = make_plot(SMALL_PLOT_HEIGHT, highest / NS_PER_MS, &step);
    open_chart(out, &plot, label, false);
    for (size_t b = 0; b < count; b++) {
        int x, width, bar_x, bar_width;
        slot_of(b, count, &x, &width, &bar_x, &bar_width);
        const struct nvs_report_frame *frame = &process->frames[bars[b].frame];
        if (columns[0] == NVS_COLUMN_LATENCY) {
            frame = NULL;
            for (size_t f = bars[b].first; f < bars[b].last; f++)
                if (process->frames[f].has_latency &&
                    (!frame ||
                     process->frames[f].value[NVS_COLUMN_LATENCY] >
                         frame->value[NVS_COLUMN_LATENCY]))
                    frame = &process->frames[f];
            if (!frame)
                continue;
        }
        fputs("<g><title>", out);
        put_figures(out, process, frame);
        fputs(" ms</title>", out);
        double below = 0;
        for (int k = 0; k < column_count; k++) {
            double above = below + (double)frame->value[columns[k]];
            int top = row_of(&plot, above / NS_PER_MS), base = row_of(&plot, below / NS_PER_MS);
            if (base > top)
                fprintf(out, "<rect class=\"f-%s\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>",
                        nvs_html_parts[columns[k]].class, bar_x, top, bar_width, base - top);
            below = above;
        }
        fputs("</g>\n", out);
    }
    put_axes(out, &plot, step, "ms");
    put_frame_labels(out, &plot, process, bars, count, 0);
    fputs("</svg>\n", out);
}
