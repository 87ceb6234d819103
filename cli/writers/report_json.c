/* nvtxshim report --json: the figures of struct nvs_report (figures_builder.c) as one
 * JSON document, schema "nvtxshim-report/1" (docs/schema/report-v1.json;
 * docs/json.md says what its versions promise). Everything the text summary
 * prints is here, in the text's order: the per-name table, the marks by kind,
 * each process's frames, the capture-to-actuation latency, the capture
 * windows. Times are integer nanoseconds, never text: a program should not
 * parse "12.345 ms". Keys come in a fixed order and the bytes are the same
 * wherever they go (a file, a pipe, a terminal), so that two runs' documents
 * compare with diff. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/figures.h"
#include "model/report_columns.h"
#include "writers/report_json.h"
#include "writers/output.h"

/* Frames with dropped camera frames listed, at most: as many as the text lists. */
#define DROP_EXAMPLES 10
/* Containers open at once, at most: the document nests six deep. */
#define MAX_DEPTH 8

/* The columns' keys (columns.def): the text's headings, "gpu wait" as one word a query can name. */
const char *const nvs_report_column_keys[NVS_COLUMNS] = {
#define NVS_COLUMN(ID, HEADING, KEY, PHRASE, CLASS, COLOUR, LEGEND, DOMAIN, RULE)                  \
    [NVS_COLUMN_##ID] = KEY,
#include "model/columns.def"
#undef NVS_COLUMN
};

const char *const nvs_report_statistic_keys[NVS_STATS] = {
    [NVS_STAT_MEAN] = "mean", [NVS_STAT_P50] = "p50", [NVS_STAT_P99] = "p99", [NVS_STAT_MAX] = "max"
};

/* ---- the writer: indented JSON, small objects on one line ------------------------- */

struct writer {
    FILE *out;
    int depth;               /* containers open */
    bool flat[MAX_DEPTH];    /* written on one line */
    size_t items[MAX_DEPTH]; /* written into it so far */
};

/* The length of the well-formed UTF-8 sequence at TEXT; 0 where it is none
 * (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF). */
static size_t utf8_sequence(const unsigned char *text)
{
    unsigned char lead = text[0];
    size_t length;
    uint32_t code;
    if (lead < 0x80)
        return 1;
    if (lead >= 0xC2 && lead <= 0xDF)
        length = 2, code = lead & 0x1F;
    else if (lead >= 0xE0 && lead <= 0xEF)
        length = 3, code = lead & 0x0F;
    else if (lead >= 0xF0 && lead <= 0xF4)
        length = 4, code = lead & 0x07;
    else
        return 0;
    for (size_t i = 1; i < length; i++) {
        if ((text[i] & 0xC0) != 0x80) /* also stops at the terminating NUL */
            return 0;
        code = code << 6 | (text[i] & 0x3F);
    }
    if ((length == 3 && code < 0x800) || (length == 4 && (code < 0x10000 || code > 0x10FFFF)) ||
        (code >= 0xD800 && code <= 0xDFFF))
        return 0;
    return length;
}

/* TEXT as a JSON string. A trace's names are bytes: what is not UTF-8 is
 * written U+FFFD, so that the document stays valid JSON. */
static void put_string(FILE *out, const char *text)
{
    putc('"', out);
    for (const unsigned char *c = (const unsigned char *)text; *c;) {
        size_t length = utf8_sequence(c);
        if (!length) {
            fputs("\\ufffd", out);
            c++;
            continue;
        }
        if (*c == '"' || *c == '\\')
            fprintf(out, "\\%c", *c);
        else if (*c == '\n')
            fputs("\\n", out);
        else if (*c == '\r')
            fputs("\\r", out);
        else if (*c == '\t')
            fputs("\\t", out);
        else if (*c < 0x20 || *c == 0x7F)
            fprintf(out, "\\u%04x", *c);
        else
            fwrite(c, 1, length, out);
        c += length;
    }
    putc('"', out);
}

/* Before a value: the comma and the line break or space after the last one,
 * and KEY where the container is an object. */
static void begin_item(struct writer *w, const char *key)
{
    if (w->depth) {
        int d = w->depth - 1;
        if (w->items[d]++)
            putc(',', w->out);
        if (w->flat[d]) {
            if (w->items[d] > 1)
                putc(' ', w->out);
        } else {
            fprintf(w->out, "\n%*s", 2 * w->depth, "");
        }
    }
    if (key) {
        put_string(w->out, key);
        fputs(": ", w->out);
    }
}

/* Opens an object ('{') or array ('['); FLAT: on one line, as is everything in it. */
static void open_container(struct writer *w, const char *key, char bracket, bool flat)
{
    begin_item(w, key);
    putc(bracket, w->out);
    w->flat[w->depth] = flat || (w->depth && w->flat[w->depth - 1]);
    w->items[w->depth] = 0;
    w->depth++;
}

static void close_container(struct writer *w, char bracket)
{
    w->depth--;
    if (!w->flat[w->depth] && w->items[w->depth])
        fprintf(w->out, "\n%*s", 2 * w->depth, "");
    putc(bracket, w->out);
}

static void put_signed(struct writer *w, const char *key, int64_t value)
{
    begin_item(w, key);
    fprintf(w->out, "%" PRId64, value);
}

static void put_unsigned(struct writer *w, const char *key, uint64_t value)
{
    begin_item(w, key);
    fprintf(w->out, "%" PRIu64, value);
}

/* TEXT, or null where there is none. */
static void put_text(struct writer *w, const char *key, const char *text)
{
    begin_item(w, key);
    if (text)
        put_string(w->out, text);
    else
        fputs("null", w->out);
}

static void put_bool(struct writer *w, const char *key, bool value)
{
    begin_item(w, key);
    fputs(value ? "true" : "false", w->out);
}

static void put_null(struct writer *w, const char *key)
{
    begin_item(w, key);
    fputs("null", w->out);
}

/* ---- the document -------------------------------------------------------------- */

/* Mean, p50, p99 and max in whole nanoseconds: the mean rounded, the others
 * are values of the data (nearest rank). */
static void put_statistics(struct writer *w, const char *key, const double stats[NVS_STATS])
{
    open_container(w, key, '{', true);
    for (int s = 0; s < NVS_STATS; s++)
        put_signed(w, nvs_report_statistic_keys[s], (int64_t)llround(stats[s]));
    close_container(w, '}');
}

static void put_names(struct writer *w, const char *key, const struct nvs_report_name *names,
                      size_t count)
{
    open_container(w, key, '[', false);
    for (size_t i = 0; i < count; i++) {
        open_container(w, NULL, '{', true);
        put_text(w, "domain", names[i].domain);
        put_text(w, "name", names[i].name);
        put_unsigned(w, "count", names[i].count);
        put_statistics(w, "statistics", names[i].stats);
        put_bool(w, "estimated", names[i].estimated);
        close_container(w, '}');
    }
    close_container(w, ']');
}

static void put_marks(struct writer *w, const struct nvs_report *report)
{
    open_container(w, "marks", '[', false);
    for (size_t k = 0; k < report->mark_kind_count; k++) {
        const struct nvs_report_mark_kind *kind = &report->marks[k];
        open_container(w, NULL, '{', true);
        put_text(w, "domain", kind->domain);
        put_text(w, "kind", kind->kind);
        put_unsigned(w, "count", kind->count);
        put_unsigned(w, "texts", kind->text_count);
        put_bool(w, "more_texts", kind->more_texts);
        open_container(w, "examples", '[', true);
        for (size_t t = 0; t < kind->example_count; t++) {
            open_container(w, NULL, '{', true);
            put_text(w, "text", kind->examples[t].text);
            put_unsigned(w, "count", kind->examples[t].count);
            close_container(w, '}');
        }
        close_container(w, ']');
        close_container(w, '}');
    }
    close_container(w, ']');
}

static void put_budget(struct writer *w, const struct nvs_report_process *process)
{
    if (process->budget_from == NVS_BUDGET_NONE) {
        put_null(w, "budget");
        return;
    }
    open_container(w, "budget", '{', true);
    put_signed(w, "duration", process->budget_ns);
    put_text(w, "from", process->budget_from == NVS_BUDGET_OPTION ? "option" : "marks");
    put_unsigned(w, "frames_over", process->over_budget);
    close_container(w, '}');
}

static void put_drops(struct writer *w, const struct nvs_report_process *process)
{
    size_t frames_with = 0;
    for (size_t f = 0; f < process->count; f++)
        frames_with += process->frames[f].dropped > 0;
    open_container(w, "camera_frames_dropped", '{', false);
    put_unsigned(w, "total", process->dropped);
    put_unsigned(w, "outside_frames", process->dropped_outside);
    put_unsigned(w, "frames_with_drops", frames_with);
    open_container(w, "first_frames", '[', true);
    size_t listed = 0;
    for (size_t f = 0; f < process->count && listed < DROP_EXAMPLES; f++) {
        const struct nvs_report_frame *frame = &process->frames[f];
        if (!frame->dropped)
            continue;
        listed++;
        open_container(w, NULL, '{', true);
        put_unsigned(w, "frame", frame->number);
        put_unsigned(w, "dropped", frame->dropped);
        close_container(w, '}');
    }
    close_container(w, ']');
    close_container(w, '}');
}

static void put_slowest(struct writer *w, const struct nvs_report *report,
                        const struct nvs_report_process *process, const bool shown[NVS_COLUMNS])
{
    open_container(w, "slowest", '[', false);
    for (size_t k = 0; k < process->count && (long)k < report->slowest; k++) {
        const struct nvs_report_frame *frame = &process->frames[process->slowest[k]];
        open_container(w, NULL, '{', true);
        put_unsigned(w, "frame", frame->number);
        open_container(w, "columns", '{', true);
        for (int c = 0; c < NVS_COLUMNS; c++) {
            if (!shown[c])
                continue;
            if (c == NVS_COLUMN_LATENCY && !frame->has_latency)
                put_null(w, nvs_report_column_keys[c]);
            else
                put_signed(w, nvs_report_column_keys[c], frame->value[c]);
        }
        close_container(w, '}');
        if (frame->has_kernel) {
            open_container(w, "kernel", '{', true);
            put_unsigned(w, "preemptions", frame->preemptions);
            put_unsigned(w, "faults", frame->faults);
            close_container(w, '}');
        } else {
            put_null(w, "kernel");
        }
        put_unsigned(w, "camera_frames_dropped", frame->dropped);
        close_container(w, '}');
    }
    close_container(w, ']');
}

static void put_process(struct writer *w, const struct nvs_report *report,
                        const struct nvs_report_process *process)
{
    bool shown[NVS_COLUMNS];
    nvs_report_columns_shown(process, shown);
    open_container(w, NULL, '{', false);
    put_unsigned(w, "pid", process->pid);
    put_text(w, "name", process->name);
    put_unsigned(w, "frames", process->count);
    open_container(w, "columns", '{', false);
    for (int c = 0; c < NVS_COLUMNS; c++)
        if (shown[c])
            put_statistics(w, nvs_report_column_keys[c], process->stats[c]);
    close_container(w, '}');
    put_bool(w, "breakdown_estimated", process->estimated);
    put_unsigned(w, "late_calls", process->late_calls);
    put_unsigned(w, "frames_with_kernel_figures", process->with_kernel);
    put_unsigned(w, "frames_with_latency", process->with_latency);
    put_budget(w, process);
    put_drops(w, process);
    put_slowest(w, report, process, shown);
    if (process->names)
        put_names(w, "names", process->names, process->name_count);
    else
        put_null(w, "names");
    close_container(w, '}');
}

static void put_latency(struct writer *w, const struct nvs_report *report)
{
    const struct nvs_report_latency *latency = &report->latency;
    if (!latency->camera_frames) {
        put_null(w, "latency");
        return;
    }
    open_container(w, "latency", '{', false);
    put_unsigned(w, "camera_frames", latency->camera_frames);
    put_unsigned(w, "camera_frames_not_acted_on", latency->camera_frames - latency->pairs);
    put_unsigned(w, "actuations", latency->actuations);
    put_unsigned(w, "actuations_on_no_new_frame", latency->actuations - latency->pairs);
    put_unsigned(w, "pairs", latency->pairs);
    if (latency->pairs)
        put_statistics(w, "statistics", latency->stats);
    else
        put_null(w, "statistics");
    close_container(w, '}');
}

static void put_windows(struct writer *w, const struct nvs_report *report)
{
    open_container(w, "capture_windows", '[', false);
    for (size_t c = 0; c < report->window_count; c++) {
        const struct nvs_report_window *window = &report->windows[c];
        open_container(w, NULL, '{', true);
        put_text(w, "name", window->name);
        put_text(w, "domain", window->domain);
        put_signed(w, "duration", window->duration);
        if (window->first) {
            put_unsigned(w, "first_frame", window->first);
            put_unsigned(w, "last_frame", window->last);
        } else {
            put_null(w, "first_frame");
            put_null(w, "last_frame");
        }
        close_container(w, '}');
    }
    close_container(w, ']');
}

static int put_report(FILE *out, const void *context)
{
    const struct nvs_report *report = context;
    struct writer w = { .out = out };
    open_container(&w, NULL, '{', false);
    put_text(&w, "schema", NVS_REPORT_JSON_SCHEMA);
    put_text(&w, "generator", "nvtxshim " NVS_VERSION);
    put_text(&w, "time_unit", "ns");
    put_text(&w, "file", report->path);
    put_signed(&w, "slowest_limit", report->slowest);
    put_names(&w, "names", report->names, report->name_count);
    put_marks(&w, report);
    open_container(&w, "processes", '[', false);
    for (size_t p = 0; p < report->process_count; p++)
        put_process(&w, report, &report->processes[p]);
    close_container(&w, ']');
    put_latency(&w, report);
    put_windows(&w, report);
    close_container(&w, '}');
    putc('\n', out);
    return 0;
}

/* ---- the file -------------------------------------------------------------------- */

#define DOCUMENT "the JSON document", " (--json=- writes to standard output)"

int nvs_json_refused(const char *command, const char *path)
{
    return nvs_output_refused(command, path, DOCUMENT);
}

static int write_to_stdout(const char *command, int (*put)(FILE *out, const void *context),
                           const void *context)
{
    errno = 0;
    int error = put(stdout, context) != 0 ? ENOMEM : 0;
    if (!error && (fflush(stdout) != 0 || ferror(stdout)))
        error = errno ? errno : EIO;
    if (!error)
        return 0;
    fprintf(stderr, "nvtxshim: %s: cannot write the JSON document to standard output: %s\n",
            command, strerror(error));
    return -1;
}

int nvs_json_write(const char *command, const char *path,
                   int (*put)(FILE *out, const void *context), const void *context)
{
    if (strcmp(path, "-") == 0)
        return write_to_stdout(command, put, context);
    return nvs_output_write(command, path, DOCUMENT, put, context);
}

int nvs_report_write_json(const struct nvs_report *report, const char *path)
{
    return nvs_json_write("report", path, put_report, report);
}
