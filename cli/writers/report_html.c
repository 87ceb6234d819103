/* nvtxshim report --html: the report's figures (figures.h, worked out once by
 * figures.c) as one HTML page that needs nothing else: inline SVG and CSS, no
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
#include "writers/output.h"

#define NS_PER_US 1000.0
#define NS_PER_MS 1e6

/* The charts' geometry, in CSS pixels: the plot area starts LEFT from the
 * chart's edge (room for the axis's labels) and is PLOT_WIDTH wide. */
#define CHART_WIDTH 1000
#define LEFT 64
#define PLOT_WIDTH 920
#define TOP 22                       /* above the plot: the y axis's unit */
#define FRAME_PLOT_HEIGHT 300
#define SMALL_PLOT_HEIGHT 150
#define AXIS_ROOM 30                 /* below the plot: the x axis's labels */
/* At most this many bars, so that each is at least 2 pixels wide: more frames
 * are binned, each bar standing for the slowest frame of its bin. */
#define MAX_BARS (PLOT_WIDTH / 2)
#define HISTOGRAM_BINS 40
/* Bars of the slowest frames' table, in pixels at the slowest. */
#define SLOWEST_BAR_WIDTH 240

/* The colours (columns.def), fixed so that pages compare (docs/user-guide.md lists them). The parts
 * are told apart by hue; the band behind the frames over the budget is a pale
 * red no part uses, the budget line a strong one, and the plot's background a
 * grey-blue that is neither. */
static const struct {
    const char *class, *colour, *meaning;
} parts[NVS_COLUMNS] = {
#define NVS_COLUMN(ID, HEADING, KEY, PHRASE, CLASS, COLOUR, LEGEND, DOMAIN, RULE) \
    [NVS_COLUMN_##ID] = {CLASS, COLOUR, LEGEND},
#include "model/columns.def"
#undef NVS_COLUMN
};
#define PLOT_BACKGROUND "#f3f6fa"
#define OVER_BUDGET_BAND "#ffcdd2"
#define BUDGET_LINE "#d50000"
#define HISTOGRAM_BAR "#546e7a"
#define BIN_P99 "#263238"            /* a bin's p99: a dark tick across its bar */
#define BIN_MAX "#78909c"            /* its slowest frame: a light one */
/* Of fewer frames than this the p99 by nearest rank is the slowest frame: such
 * a bin has no p99 of its own, and one tick (its slowest) is drawn for both. */
#define P99_FRAMES 100
/* A label over the plot takes about this many pixels per character (11px sans-serif). */
#define LABEL_CHARACTER_WIDTH 7
#define AXIS "#616161"

const char *nvs_html_column_colour(int column)
{
    return column > NVS_COLUMN_TOTAL && column < NVS_COLUMNS ? parts[column].colour : AXIS;
}

/* ---- text ---------------------------------------------------------------------- */

/* TEXT as HTML text or attribute value: markup characters as references,
 * control characters (no place in HTML text) as U+FFFD. */
void nvs_html_text(FILE *out, const char *text)
{
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        switch (*c) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default:
            if ((*c < 0x20 && *c != '\t' && *c != '\n') || *c == 0x7F)
                fputs("&#xfffd;", out);
            else
                fputc(*c, out);
        }
    }
}

static void put_ms(FILE *out, int64_t ns)
{
    fprintf(out, "%.3f", (double)ns / NS_PER_MS);
}

static const char *plural(size_t count)
{
    return count == 1 ? "" : "s";
}

/* "process 1234 (name)", the name escaped. */
static void put_process(FILE *out, const struct nvs_report_process *process)
{
    fprintf(out, "process %" PRIu32, process->pid);
    if (process->name) {
        fputs(" (", out);
        nvs_html_text(out, process->name);
        fputc(')', out);
    }
}

/* ---- the page's frame ------------------------------------------------------------ */

void nvs_html_style(FILE *out)
{
    fputs("<style>\n"
          "body{font:14px/1.45 sans-serif;color:#212121;background:#fff;margin:16px 24px;max-width:1200px}\n"
          "h1{font-size:20px;margin:0 0 8px}h2{font-size:17px;margin:28px 0 6px;border-bottom:1px solid #ccc}\n"
          "h3{font-size:15px;margin:18px 0 4px}p{margin:4px 0}code{font-size:13px}\n"
          "table{border-collapse:collapse;margin:6px 0}th,td{padding:1px 8px;text-align:right;"
          "white-space:nowrap}\n"
          "th{border-bottom:1px solid #999;font-weight:600}td.t,th.t{text-align:left}\n"
          "tr.over td{background:" OVER_BUDGET_BAND "}tr.kind td{border-top:1px solid #e0e0e0}\n"
          ".legend{margin:4px 0;padding:0}.legend li{display:inline-block;margin:0 14px 0 0}\n"
          ".key{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}\n"
          ".key.line{height:2px;vertical-align:4px}\n"
          ".note{color:#555;font-size:13px}\n"
          "svg{display:block;max-width:100%;height:auto}svg text{font:11px sans-serif;fill:#424242}\n"
          "svg rect{shape-rendering:crispEdges}\n", out);
    for (int c = NVS_COLUMN_USB; c < NVS_COLUMNS; c++)
        if (parts[c].class)
            fprintf(out, ".f-%s{fill:%s}.k-%s{background:%s}\n", parts[c].class, parts[c].colour,
                    parts[c].class, parts[c].colour);
    fputs(".f-plot{fill:" PLOT_BACKGROUND "}.f-over{fill:" OVER_BUDGET_BAND "}"
          ".f-budget{fill:" BUDGET_LINE "}.k-budget{background:" BUDGET_LINE "}"
          ".k-over{background:" OVER_BUDGET_BAND "}\n"
          ".f-hist{fill:" HISTOGRAM_BAR "}.f-axis{fill:" AXIS "}\n"
          ".f-p99{fill:" BIN_P99 "}.k-p99{background:" BIN_P99 "}.f-max{fill:" BIN_MAX "}"
          ".k-max{background:" BIN_MAX "}.f-strip{fill:" BUDGET_LINE "}\n"
          "</style>\n", out);
}

/* ---- charts ---------------------------------------------------------------------- */

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
    return (struct plot){LEFT, TOP, PLOT_WIDTH, height, top > 0 ? top : 1};
}

static void open_chart_with_room(FILE *out, const struct plot *plot, const char *label, bool background,
                                 int below)
{
    fprintf(out, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"", CHART_WIDTH,
            plot->top + plot->height + below, CHART_WIDTH, plot->top + plot->height + below);
    nvs_html_text(out, label);
    fputs("\">\n", out);
    if (background)
        fprintf(out, "<rect class=\"f-plot\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n", plot->left,
                plot->top, plot->width, plot->height);
}

static void open_chart(FILE *out, const struct plot *plot, const char *label, bool background)
{
    open_chart_with_room(out, plot, label, background, AXIS_ROOM);
}

/* The y axis's ticks and labels (every STEP, in UNIT) and the x axis's line. */
static void put_axes(FILE *out, const struct plot *plot, double step, const char *unit)
{
    int bottom = plot->top + plot->height;
    fprintf(out, "<rect class=\"f-axis\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"1\"/>\n", plot->left - 1,
            bottom, plot->width + 1);
    fprintf(out, "<rect class=\"f-axis\" x=\"%d\" y=\"%d\" width=\"1\" height=\"%d\"/>\n", plot->left - 1,
            plot->top, plot->height + 1);
    for (int k = 0; k * step <= plot->max * (1 + 1e-9); k++) {
        int y = row_of(plot, k * step);
        fprintf(out, "<rect class=\"f-axis\" x=\"%d\" y=\"%d\" width=\"4\" height=\"1\"/>", plot->left - 5,
                y > plot->top ? y - 1 : y);
        fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%g</text>\n", plot->left - 8, y + 4,
                k * step);
    }
    fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", plot->left - 8, plot->top - 10,
            unit);
}

/* A bar of the per-frame charts: frames FIRST..LAST-1 (in start order). A bin
 * of several is drawn as its distribution: its MEDIAN frame's parts stacked,
 * its P99 and its slowest FRAME as ticks, OVER of its frames over the budget
 * as a strip under it. The smaller charts show FRAME (the slowest). */
struct bar {
    size_t first, last, frame, median, over;
    int64_t p99;
};

struct ranked {
    int64_t total;
    size_t index;
};

static int by_total(const void *left, const void *right)
{
    const struct ranked *x = left, *y = right;
    return x->total < y->total ? -1 : x->total > y->total ? 1 : (x->index > y->index) - (x->index < y->index);
}

/* PROCESS's frames in at most MAX_BARS bars of as many frames each as can be. */
static struct bar *make_bars(const struct nvs_report_process *process, size_t *count)
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
            ranks[f - first] = (struct ranked){process->frames[f].value[NVS_COLUMN_TOTAL], f};
            over += nvs_report_over_budget(process, &process->frames[f]);
        }
        qsort(ranks, size, sizeof *ranks, by_total);
        /* by nearest rank, as the tables: the ceil(p * n)-th smallest */
        size_t median = (size + 1) / 2 - 1, p99 = (size * 99 + 99) / 100 - 1;
        out[b] = (struct bar){first, last, ranks[size - 1].index, ranks[median].index, over,
                              ranks[p99].total};
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
static void put_frame_labels(FILE *out, const struct plot *plot, const struct nvs_report_process *process,
                             const struct bar *bars, size_t count, int lower)
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
                k == 0 ? x : k == 4 ? x + width : x + width / 2, plot->top + plot->height + 16 + lower,
                k == 0 ? "start" : k == 4 ? "end" : "middle",
                process->frames[k == 4 ? bars[b].last - 1 : bars[b].first].number);
    }
}

/* The parts of FRAME the bars stack, from the bottom: the shown columns of
 * USB..REST. Their sum is the frame's time unless calls of different parts
 * overlapped (on other threads); then they are scaled down together to it. */
static void put_stack(FILE *out, const struct nvs_report_process *process,
                      const struct nvs_report_frame *frame, const struct plot *plot, int x, int width)
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
            fprintf(out, "<rect class=\"f-%s\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>", parts[c].class,
                    x, top, width, base - top);
        below = above;
    }
}

/* The frame's figures, for a bar's tooltip or a table. */
static void put_figures(FILE *out, const struct nvs_report_process *process,
                        const struct nvs_report_frame *frame)
{
    fprintf(out, "frame %" PRIu64 ": ", frame->number);
    put_ms(out, frame->value[NVS_COLUMN_TOTAL]);
    fputs(" ms", out);
    if (nvs_report_over_budget(process, frame))
        fputs(", over the budget", out);
    for (int c = NVS_FIRST_PART; c < NVS_COLUMNS; c++) {
        if (!process->shown[c] || (c == NVS_COLUMN_LATENCY && !frame->has_latency))
            continue;
        fprintf(out, "; %s ", nvs_report_column_names[c]);
        put_ms(out, frame->value[c]);
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
            fprintf(out, "<li><span class=\"key k-%s\"></span>%s: %s</li>", parts[c].class,
                    nvs_report_column_names[c], parts[c].meaning);
    if (process->budget_from != NVS_BUDGET_NONE) {
        fputs("<li><span class=\"key line k-budget\"></span>the budget, ", out);
        put_ms(out, process->budget_ns);
        fprintf(out, " ms (from %s)</li>", process->budget_from == NVS_BUDGET_OPTION
                                               ? "--budget" : "the library&#39;s over budget marks");
        if (binned)
            fprintf(out, "<li><span class=\"key line k-budget\" style=\"height:6px;vertical-align:0\">"
                    "</span>under the bins: their share over it (%zu of %zu frames in all)</li>",
                    process->over_budget, process->count);
        else
            fprintf(out, "<li><span class=\"key k-over\"></span>behind the frames over it: %zu of %zu</li>",
                    process->over_budget, process->count);
    }
    if (with_p99)
        fputs("<li><span class=\"key line k-p99\"></span>a bin&#39;s p99</li>", out);
    if (with_p99 && without_p99)
        fprintf(out, "<li><span class=\"key line k-max\"></span>its slowest frame (the one tick of a bin of "
                "fewer than %d frames, which has no p99 of its own: its p99 is its slowest frame)</li>",
                P99_FRAMES);
    else if (without_p99)
        fprintf(out, "<li><span class=\"key line k-max\"></span>a bin&#39;s slowest frame, its one tick: a bin "
                "of fewer than %d frames has no p99 of its own (its p99 is its slowest frame)</li>", P99_FRAMES);
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
static void put_clipped_labels(FILE *out, const struct nvs_report_process *process, const struct bar *bars,
                               size_t count, const struct plot *plot)
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
        int placed = group_centre > last_right + gap + half ? group_centre : last_right + gap + half;
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
            fprintf(out, "<text class=\"clipped\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                    placed, plot->top - 4, text);
            last_right = placed + half;
        }
        group_value = value;
        group_centre = x;
    }
}

/* Frame time per frame: a stacked bar per frame and the frames over the
 * budget on a band behind them; past MAX_BARS frames, a bar per bin of
 * consecutive frames drawn as its distribution (struct bar), on the scale of
 * the bins' p99s (a slowest frame above it is a tick at the top), and the
 * share of each bin's frames over the budget on a strip under the plot. */
static void put_frame_chart(FILE *out, const struct nvs_report_process *process, const struct bar *bars,
                            size_t count)
{
    bool binned = count < process->count;
    double step, scale = frame_time_scale(process);
    if (binned) {
        /* the budget, the run's p99 frame and every bin's median fit; a bin's
         * p99 or slowest frame above that is a tick at the top edge (a bin of
         * a few dozen frames has an outlier for its p99) */
        double highest = fmax((double)process->budget_ns, process->stats[NVS_COLUMN_TOTAL][NVS_STAT_P99]);
        for (size_t b = 0; b < count; b++)
            highest = fmax(highest, (double)process->frames[bars[b].median].value[NVS_COLUMN_TOTAL]);
        scale = highest / NS_PER_MS;
    }
    /* room above the tallest bar: the band shows over it */
    struct plot plot = make_plot(FRAME_PLOT_HEIGHT, scale * 1.04, &step);
    fputs("<h3>Frame time per frame</h3>\n", out);
    put_legend(out, process, count);
    if (binned) {
        size_t smaller = smaller_bin(process, count), larger = larger_bin(process, count);
        fprintf(out, "<p class=\"note\">%zu frames in %zu bins of %zu or %zu consecutive frames: a bar stacks "
                "the parts of its bin&#39;s median frame, ", process->count, count, smaller, larger);
        if (has_own_p99(smaller))
            fputs("the dark tick is the bin&#39;s p99 and the light one its slowest frame", out);
        else if (has_own_p99(larger))
            fprintf(out, "the dark tick is the bin&#39;s p99 and the light one its slowest frame, the only tick "
                    "of a bin of fewer than %d frames (whose p99 is its slowest frame)", P99_FRAMES);
        else
            fprintf(out, "the tick is the bin&#39;s slowest frame, and its p99 too: of fewer than %d frames the "
                    "p99 by nearest rank is the slowest", P99_FRAMES);
        fprintf(out, ". A tick above the scale, which holds the run&#39;s p99 frame and every bin&#39;s median, "
                "sits at the top edge with its frame time over the plot (the highest of the ticks there, "
                "where several lie close together); %s Each bar&#39;s tooltip has its figures.</p>\n",
                process->budget_ns ? "the strip under the plot is the share of each bin&#39;s frames over the "
                "budget, darker for more." : "");
    }
    int below = binned && process->budget_ns ? AXIS_ROOM + 10 : AXIS_ROOM;
    open_chart_with_room(out, &plot, "frame time per frame", true, below);
    for (size_t b = 0; b < count && !binned; b++)
        if (nvs_report_over_budget(process, &process->frames[bars[b].frame])) {
            int x, width, bar_x, bar_width;
            slot_of(b, count, &x, &width, &bar_x, &bar_width);
            fprintf(out, "<rect class=\"f-over\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n", x,
                    plot.top, width, plot.height);
        }
    for (size_t b = 0; b < count; b++) {
        const struct nvs_report_frame *median = &process->frames[bars[b].median];
        const struct nvs_report_frame *slowest = &process->frames[bars[b].frame];
        int x, width, bar_x, bar_width;
        slot_of(b, count, &x, &width, &bar_x, &bar_width);
        fputs("<g><title>", out);
        if (binned) {
            size_t size = bars[b].last - bars[b].first;
            fprintf(out, "frames %" PRIu64 "-%" PRIu64 " (%zu): median ", process->frames[bars[b].first].number,
                    process->frames[bars[b].last - 1].number, size);
            put_ms(out, median->value[NVS_COLUMN_TOTAL]);
            if (has_own_p99(size)) {
                fputs(" ms, p99 ", out);
                put_ms(out, bars[b].p99);
            }
            fputs(" ms, slowest ", out);
            put_ms(out, slowest->value[NVS_COLUMN_TOTAL]);
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
                fprintf(out, "<rect class=\"f-p99\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>", bar_x,
                        y > plot.top ? y - 1 : y, bar_width, p99_ms > plot.max ? 3 : 2);
            double slowest_ms = (double)slowest->value[NVS_COLUMN_TOTAL] / NS_PER_MS;
            y = slowest_ms > plot.max ? plot.top : row_of(&plot, slowest_ms);
            fprintf(out, "<rect class=\"f-max\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>", bar_x,
                    y > plot.top ? y - 1 : y, bar_width, slowest_ms > plot.max ? 3 : 1);
            if (process->budget_ns && bars[b].over) {
                double share = (double)bars[b].over / (double)(bars[b].last - bars[b].first);
                fprintf(out, "<rect class=\"f-strip\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"6\" "
                        "fill-opacity=\"%.3f\"/>", x, plot.top + plot.height + 3, width, 0.15 + 0.85 * share);
            }
        }
        fputs("</g>\n", out);
    }
    if (binned)
        put_clipped_labels(out, process, bars, count, &plot);
    if (process->budget_ns) {
        /* two pixel rows, the lower one at the budget */
        int y = row_of(&plot, (double)process->budget_ns / NS_PER_MS);
        fprintf(out, "<rect class=\"f-budget\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"2\"><title>budget ",
                plot.left, y - 1, plot.width);
        put_ms(out, process->budget_ns);
        fputs(" ms</title></rect>\n", out);
    }
    put_axes(out, &plot, step, "ms");
    put_frame_labels(out, &plot, process, bars, count, below - AXIS_ROOM);
    fputs("</svg>\n", out);
    fputs("<p class=\"note\">A bar stacks the frame&#39;s time in each kind of call (the union of its calls&#39; "
          "intervals in the frame) and the rest; where calls of two kinds overlapped (on two threads), "
          "its parts are scaled down together to the frame&#39;s time. The tables have the exact figures.</p>\n",
          out);
}

/* The frame time below which all but the slowest 0.5 % of PROCESS's frames
 * lie (nearest rank), in ms. */
static double frame_time_p995(const struct nvs_report_process *process)
{
    size_t beyond = process->count / 200;       /* process->slowest: the slowest first */
    return (double)process->frames[process->slowest[beyond]].value[NVS_COLUMN_TOTAL] / NS_PER_MS;
}

/* How many frames took how long: HISTOGRAM_BINS bins from 0 to the axis's top,
 * which is the p99.5 frame and a little (or the budget, when higher), so that
 * a few frames far out do not squeeze the rest into one bin; the frames past
 * it are said, not drawn. */
static void put_histogram(FILE *out, const struct nvs_report_process *process)
{
    double step, longest = frame_time_scale(process), bound = frame_time_p995(process) * 1.1;
    if (process->budget_ns && (double)process->budget_ns / NS_PER_MS * 1.05 > bound)
        bound = (double)process->budget_ns / NS_PER_MS * 1.05;
    struct plot span = make_plot(0, bound < longest ? bound : longest, &step);
    double top_ms = span.max, bin_ms = top_ms / HISTOGRAM_BINS;
    size_t counts[HISTOGRAM_BINS] = {0}, most = 0, past = 0;
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
    fprintf(out, "<h3>Frame time histogram</h3>\n<p class=\"note\">Frames per %g ms of frame time, from 0 "
            "to %g ms%s.", bin_ms, top_ms, process->budget_ns ? "; the red line is the budget" : "");
    if (past)
        fprintf(out, " <span class=\"tail\">%zu frame%s took longer, up to %.3f ms: not drawn, so that the "
                "others show.</span>", past, plural(past), longest);
    fputs("</p>\n", out);
    open_chart(out, &plot, "frame time histogram", false);
    for (int b = 0; b < HISTOGRAM_BINS; b++) {
        if (!counts[b])
            continue;
        int x = LEFT + b * PLOT_WIDTH / HISTOGRAM_BINS;
        int width = LEFT + (b + 1) * PLOT_WIDTH / HISTOGRAM_BINS - x;
        int y = row_of(&plot, (double)counts[b]);
        fprintf(out, "<rect class=\"f-hist\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"><title>%g-%g ms: "
                "%zu frame%s</title></rect>\n", x + 1, y, width - 2, plot.top + plot.height - y, b * bin_ms,
                (b + 1) * bin_ms, counts[b], plural(counts[b]));
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
                k == 0 ? "start" : k == 4 ? "end" : "middle", top_ms * k / 4);
    fputs("</svg>\n", out);
}

/* A smaller chart per bar of one or two columns (the kernel probe's, or the
 * latency): the bar's frame's values, or for the latency the highest in the
 * bin. */
static void put_column_chart(FILE *out, const struct nvs_report_process *process, const struct bar *bars,
                             size_t count, const int *columns, int column_count, const char *label)
{
    double highest = 0;
    for (size_t b = 0; b < count; b++) {
        double sum = 0;
        for (int k = 0; k < column_count; k++)
            sum += (double)process->frames[bars[b].frame].value[columns[k]];
        highest = sum > highest ? sum : highest;
        for (size_t f = bars[b].first; columns[0] == NVS_COLUMN_LATENCY && f < bars[b].last; f++)
            if (process->frames[f].has_latency && process->frames[f].value[NVS_COLUMN_LATENCY] > highest)
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
                    (!frame || process->frames[f].value[NVS_COLUMN_LATENCY] > frame->value[NVS_COLUMN_LATENCY]))
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
                        parts[columns[k]].class, bar_x, top, bar_width, base - top);
            below = above;
        }
        fputs("</g>\n", out);
    }
    put_axes(out, &plot, step, "ms");
    put_frame_labels(out, &plot, process, bars, count, 0);
    fputs("</svg>\n", out);
}

/* ---- tables ---------------------------------------------------------------------- */

static void put_name_table(FILE *out, const struct nvs_report_name *names, size_t count)
{
    fputs("<table>\n<tr><th class=\"t\">domain</th><th class=\"t\">name</th><th>count</th><th>mean</th>"
          "<th>p50</th><th>p99</th><th>max</th></tr>\n", out);
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
        fprintf(out, "<span class=\"key k-%s\"></span>", parts[c].class);
    fprintf(out, "%s</th>", nvs_report_column_names[c]);
}

static void put_statistics(FILE *out, const struct nvs_report_process *process)
{
    static const char *const labels[NVS_STATS] = {"mean", "p50", "p99", "max"};
    fputs("<h3>Per frame (milliseconds; p50 and p99 by nearest rank)</h3>\n<table>\n<tr><th class=\"t\"></th>",
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
        fprintf(out, "<p class=\"note\">Kernel figures for %zu of the %zu frames; the others count as 0.</p>\n",
                process->with_kernel, process->count);
    if (process->shown[NVS_COLUMN_LATENCY] && process->with_latency < process->count)
        fprintf(out, "<p class=\"note\">Latency for %zu of the %zu frames: the others acted on no new camera "
                "frame.</p>\n", process->with_latency, process->count);
    if (process->dropped)
        fprintf(out, "<p>Camera frames dropped: %" PRIu64 " (%" PRIu64 " outside the frames).</p>\n",
                process->dropped, process->dropped_outside);
}

static void put_slowest(FILE *out, const struct nvs_report_process *process, long slowest)
{
    size_t n = (size_t)slowest < process->count ? (size_t)slowest : process->count;
    if (!n)
        return;
    int64_t longest = process->frames[process->slowest[0]].value[NVS_COLUMN_TOTAL];
    fprintf(out, "<h3>The %zu slowest frame%s (milliseconds)</h3>\n<table>\n<tr><th class=\"t\">frame</th>", n,
            plural(n));
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
            put_ms(out, frame->value[c]);
            fputs("</td>", out);
        }
        if (process->with_kernel && frame->has_kernel)
            fprintf(out, "<td>%" PRIu64 "</td><td>%" PRIu64 "</td>", frame->preemptions, frame->faults);
        else if (process->with_kernel)
            fputs("<td>-</td><td>-</td>", out);
        if (process->dropped)
            fprintf(out, "<td>%" PRIu64 "</td>", frame->dropped);
        /* the frame's parts side by side, to the scale of the slowest */
        int width = longest ? (int)lround((double)frame->value[NVS_COLUMN_TOTAL] / (double)longest *
                                          SLOWEST_BAR_WIDTH) : 0;
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
                        parts[c].class, from, to - from);
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
                                const struct nvs_report_process *process, const struct bar *bars, size_t count)
{
    /* The page draws the parts the frames spent time in: a domain with calls,
     * none of them inside a frame (an X11 connection made at start), draws
     * nothing (the text summary still lists it). */
    struct nvs_report_process drawn = *process;
    for (int c = NVS_FIRST_PART; c <= NVS_LAST_PART; c++)
        drawn.shown[c] = process->shown[c] && has_data(process, c);
    process = &drawn;
    fputs("<section>\n<h2>Frames of ", out);
    put_process(out, process);
    fprintf(out, ": %zu</h2>\n", process->count);
    put_frame_chart(out, process, bars, count);
    put_histogram(out, process);
    put_statistics(out, process);
    put_slowest(out, process, report->slowest);
    if (process->with_kernel) {
        uint64_t preemptions = 0, faults = 0;
        for (size_t f = 0; f < process->count; f++) {
            preemptions += process->frames[f].preemptions;
            faults += process->frames[f].faults;
        }
        fprintf(out, "<h3>Off the CPU per frame (kernel probe)</h3>\n<p>Kernel figures for %zu of the %zu "
                "frames: %" PRIu64 " preemption%s and %" PRIu64 " page fault%s in all.</p>\n",
                process->with_kernel, process->count, preemptions, preemptions == 1 ? "" : "s", faults,
                faults == 1 ? "" : "s");
        fputs("<p class=\"note\">Runnable and blocked are summed over the process&#39;s threads that the probe "
              "watched in the frame (those that made hooked calls): where two threads were off the CPU at "
              "once, both count, so a frame&#39;s figures can add up to more than its time.</p>\n", out);
        fputs("<ul class=\"legend\">", out);
        for (int c = NVS_COLUMN_RUNNABLE; c <= NVS_COLUMN_BLOCKED; c++)
            fprintf(out, "<li><span class=\"key k-%s\"></span>%s</li>", parts[c].class, parts[c].meaning);
        fputs("</ul>\n", out);
        static const int off_cpu[] = {NVS_COLUMN_RUNNABLE, NVS_COLUMN_BLOCKED};
        put_column_chart(out, process, bars, count, off_cpu, 2, "time off the CPU per frame");
    }
    if (process->names) {
        fputs("<h3>NVTX ranges per name in this process (microseconds; p50 and p99 by nearest rank)</h3>\n",
              out);
        put_name_table(out, process->names, process->name_count);
    }
    if (process->shown[NVS_COLUMN_LATENCY]) {
        fprintf(out, "<h3>Capture to actuation per frame</h3>\n<p class=\"note\">The latency of each frame's "
                "first actuation on a new camera frame, for %zu of the %zu frames%s.</p>\n",
                process->with_latency, process->count,
                count < process->count ? "; a bar is the highest of its bin" : "");
        static const int latency[] = {NVS_COLUMN_LATENCY};
        put_column_chart(out, process, bars, count, latency, 1, "capture to actuation per frame");
    }
    fputs("</section>\n", out);
}

static void put_latency(FILE *out, const struct nvs_report *report)
{
    const struct nvs_report_latency *latency = &report->latency;
    if (!latency->camera_frames)
        return;
    fputs("<h2>Capture to actuation (milliseconds; p50 and p99 by nearest rank)</h2>\n<p>From a camera frame's "
          "capture to the end of the first actuation after its dequeue.</p>\n", out);
    if (!latency->pairs) {
        fprintf(out, "<p>No actuation after any of the %zu camera frames (USB transfers out, serial or HID "
                "writes: %zu).</p>\n", latency->camera_frames, latency->actuations);
        return;
    }
    fputs("<table>\n<tr><th class=\"t\"></th><th>mean</th><th>p50</th><th>p99</th><th>max</th></tr>\n", out);
    fprintf(out, "<tr><td class=\"t\">%zu pair%s</td>", latency->pairs, plural(latency->pairs));
    for (int s = 0; s < NVS_STATS; s++)
        fprintf(out, "<td>%.3f</td>", latency->stats[s] / NS_PER_MS);
    fprintf(out, "</tr>\n</table>\n<p>%zu camera frame%s dequeued, %zu not acted on; %zu actuation%s, %zu on "
            "no new frame.</p>\n", latency->camera_frames, plural(latency->camera_frames),
            latency->camera_frames - latency->pairs, latency->actuations, plural(latency->actuations),
            latency->actuations - latency->pairs);
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
          "<th class=\"t\">first texts</th><th>marks</th></tr>\n", out);
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
            fprintf(out, "<td class=\"t note\">... and %zu other text%s</td><td></td></tr>\n", others,
                    plural(others));
        }
    }
    fputs("</table>\n", out);
}

static void put_windows(FILE *out, const struct nvs_report *report)
{
    if (!report->window_count)
        return;
    fprintf(out, "<h2>Capture windows: %zu</h2>\n<table>\n<tr><th class=\"t\">window</th><th>ms</th>"
            "<th class=\"t\">frames</th></tr>\n", report->window_count);
    for (size_t w = 0; w < report->window_count; w++) {
        const struct nvs_report_window *window = &report->windows[w];
        fputs("<tr><td class=\"t\">", out);
        nvs_html_text(out, window->name);
        fputc('@', out);
        nvs_html_text(out, window->domain);
        fputs("</td><td>", out);
        put_ms(out, window->duration);
        if (window->first)
            fprintf(out, "</td><td class=\"t\">frames %" PRIu64 "-%" PRIu64 "</td></tr>\n", window->first,
                    window->last);
        else
            fputs("</td><td class=\"t\">no frames</td></tr>\n", out);
    }
    fputs("</table>\n", out);
}

static int put_page(FILE *out, const struct nvs_report *report)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>nvtxshim report: ", out);
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
                plural(frames), report->process_count, report->process_count == 1 ? "" : "es");
    for (size_t p = 0; p < report->process_count; p++) {
        const struct nvs_report_process *process = &report->processes[p];
        size_t count = 0;
        struct bar *bars = make_bars(process, &count);
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

/* ---- the file ---------------------------------------------------------------------- */

#define PAGE "the page", ""

int nvs_html_refused(const char *command, const char *path)
{
    return nvs_output_refused(command, path, PAGE);
}

int nvs_html_write(const char *command, const char *path, int (*put)(FILE *out, const void *context),
                   const void *context)
{
    return nvs_output_write(command, path, PAGE, put, context);
}

static int put_report_page(FILE *out, const void *report)
{
    return put_page(out, report);
}

int nvs_report_write_html(const struct nvs_report *report, const char *path)
{
    return nvs_html_write("report", path, put_report_page, report);
}
