/* nvtxshim diff --json: the comparison as one JSON document for programs (a
 * CI step, a dashboard), schema "nvtxshim-diff/1", described by
 * docs/schema/diff-v1.json: every figure the text has (each run's loop and
 * frames, each side's per-column statistics and noise, the intervals, the
 * columns that moved the frame, the names, the verdict and the gates), and
 * each run's own figures besides. Times are integer nanoseconds, changes of the
 * median and p99 frame percentages; keys come in a fixed order, so that two
 * documents compare line by line. Built in memory (trace_json.h's text), then
 * written whole as report writes its document (report_json.h): to standard
 * output, or through a temporary file renamed over OUT. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/diff.h"
#include "writers/report_json.h"
#include "util/json_text.h"

#define SCHEMA "nvtxshim-diff/1"
#define MAX_DEPTH 8

/* ---- the writer: two-space indents, a member or item a line ------------------------ */

struct doc {
    struct nvs_json_text text;
    int depth;
    bool first[MAX_DEPTH];
    bool flat[MAX_DEPTH]; /* a small object, written on one line */
};

/* The next member KEY (NULL: the next item of an array), on its own line but
 * in a flat container. */
static void key(struct doc *doc, const char *name)
{
    if (doc->flat[doc->depth])
        nvs_json_text_add(&doc->text, "%s", doc->first[doc->depth] ? "" : ", ");
    else
        nvs_json_text_add(&doc->text, "%s\n%*s", doc->first[doc->depth] ? "" : ",", 2 * doc->depth,
                          "");
    doc->first[doc->depth] = false;
    if (name)
        nvs_json_text_add(&doc->text, "\"%s\": ", name);
}

static void open_container(struct doc *doc, const char *name, char bracket)
{
    key(doc, name);
    nvs_json_text_add(&doc->text, "%c", bracket);
    doc->first[++doc->depth] = true;
    doc->flat[doc->depth] = doc->flat[doc->depth - 1];
}

static void open_flat(struct doc *doc, const char *name)
{
    open_container(doc, name, '{');
    doc->flat[doc->depth] = true;
}

static void close_container(struct doc *doc, char bracket)
{
    bool empty = doc->first[doc->depth], flat = doc->flat[doc->depth];
    doc->depth--;
    if (empty || flat)
        nvs_json_text_add(&doc->text, "%c", bracket);
    else
        nvs_json_text_add(&doc->text, "\n%*s%c", 2 * doc->depth, "", bracket);
}

static void string(struct doc *doc, const char *name, const char *value)
{
    key(doc, name);
    if (!value) {
        nvs_json_text_add(&doc->text, "null");
        return;
    }
    size_t most = strlen(value) * 6 + 3;
    char *quoted = malloc(most + 1);
    if (!quoted) {
        doc->text.failed = true;
        return;
    }
    nvs_json_quote(quoted, most + 1, value);
    nvs_json_text_add(&doc->text, "%s", quoted);
    free(quoted);
}

/* Nanoseconds, whole. */
static void time_ns(struct doc *doc, const char *name, double ns)
{
    key(doc, name);
    nvs_json_text_add(&doc->text, "%.0f", isfinite(ns) ? round(ns) : 0.0);
}

static void whole(struct doc *doc, const char *name, uint64_t value)
{
    key(doc, name);
    nvs_json_text_add(&doc->text, "%" PRIu64, value);
}

static void real(struct doc *doc, const char *name, double value)
{
    key(doc, name);
    nvs_json_text_add(&doc->text, "%.3f", isfinite(value) ? value : 0.0);
}

static void boolean(struct doc *doc, const char *name, bool value)
{
    key(doc, name);
    nvs_json_text_add(&doc->text, "%s", value ? "true" : "false");
}

static void null(struct doc *doc, const char *name)
{
    key(doc, name);
    nvs_json_text_add(&doc->text, "null");
}

/* ---- the document ----------------------------------------------------------------- */

static void statistics(struct doc *doc, const char *name, const double stats[NVS_STATS])
{
    open_flat(doc, name);
    for (int s = 0; s < NVS_STATS; s++)
        time_ns(doc, nvs_report_statistic_keys[s], stats[s]);
    close_container(doc, '}');
}

static void put_run(struct doc *doc, const struct nvs_diff_run *run)
{
    open_container(doc, NULL, '{');
    string(doc, "path", run->path);
    whole(doc, "pid", run->pid);
    string(doc, "process", run->process);
    whole(doc, "frames", run->frame_count);
    boolean(doc, "fewer_than_100_frames", run->frame_count < NVS_DIFF_FEW_FRAMES);
    if (run->budget_ns) {
        time_ns(doc, "budget", (double)run->budget_ns);
        whole(doc, "over_budget", run->over_budget);
    } else {
        null(doc, "budget");
        null(doc, "over_budget");
    }
    boolean(doc, "breakdown_estimated", run->estimated);
    whole(doc, "late_calls", run->late_calls);
    time_ns(doc, "median", run->stats[NVS_COLUMN_TOTAL][NVS_STAT_P50]);
    time_ns(doc, "p99", run->stats[NVS_COLUMN_TOTAL][NVS_STAT_P99]);
    open_container(doc, "columns", '{');
    for (int c = 0; c < NVS_COLUMNS; c++)
        if (run->shown[c] || c == NVS_COLUMN_TOTAL)
            statistics(doc, nvs_report_column_keys[c], run->stats[c]);
    close_container(doc, '}');
    close_container(doc, '}');
}

static void spread(struct doc *doc, const char *name, const struct nvs_diff_spread *spread,
                   bool with_percent)
{
    open_flat(doc, name);
    time_ns(doc, "least", spread->least);
    time_ns(doc, "greatest", spread->greatest);
    if (with_percent)
        real(doc, "percent", spread->percent);
    close_container(doc, '}');
}

static void put_side(struct doc *doc, const struct nvs_diff *diff, int which)
{
    const struct nvs_diff_side *side = &diff->side[which];
    open_container(doc, which ? "b" : "a", '{');
    whole(doc, "frames", side->frame_count);
    open_container(doc, "runs", '[');
    for (size_t r = 0; r < side->run_count; r++)
        put_run(doc, &side->runs[r]);
    close_container(doc, ']');
    open_container(doc, "directories", '[');
    for (size_t d = 0; d < side->directory_count; d++) {
        const struct nvs_diff_directory *listed = &side->directories[d];
        open_container(doc, NULL, '{');
        string(doc, "path", listed->path);
        open_container(doc, "read", '[');
        for (size_t r = 0; r < listed->run_count; r++)
            string(doc, NULL, side->runs[listed->first_run + r].path);
        close_container(doc, ']');
        open_container(doc, "left_out", '[');
        for (size_t k = 0; k < listed->left_out_count; k++)
            string(doc, NULL, listed->left_out[k]);
        close_container(doc, ']');
        close_container(doc, '}');
    }
    close_container(doc, ']');
    open_container(doc, "columns", '{');
    for (int c = 0; c < NVS_COLUMNS; c++)
        if (nvs_diff_column_shown(diff, c))
            statistics(doc, nvs_report_column_keys[c], side->stats[c]);
    close_container(doc, '}');
    open_container(doc, "noise", '{');
    boolean(doc, "judged", side->run_count > 1);
    for (int s = 0; s < NVS_DIFF_STATISTICS; s++)
        spread(doc, nvs_diff_statistic_names[s], &side->spread[s], true);
    open_container(doc, "column_means", '{');
    for (int c = 0; c < NVS_COLUMNS; c++)
        if (nvs_diff_column_shown(diff, c))
            spread(doc, nvs_report_column_keys[c], &side->column_spread[c], false);
    close_container(doc, '}');
    close_container(doc, '}');
    close_container(doc, '}');
}

static void put_changes(struct doc *doc, const struct nvs_diff *diff)
{
    static const int stat_of[NVS_DIFF_STATISTICS] = { NVS_STAT_P50, NVS_STAT_P99 };
    const struct nvs_diff_side *a = &diff->side[0], *b = &diff->side[1];
    open_container(doc, "frame", '{');
    for (int s = 0; s < NVS_DIFF_STATISTICS; s++) {
        const struct nvs_diff_interval *change = &diff->change[s];
        open_flat(doc, nvs_diff_statistic_names[s]);
        time_ns(doc, "a", a->stats[NVS_COLUMN_TOTAL][stat_of[s]]);
        time_ns(doc, "b", b->stats[NVS_COLUMN_TOTAL][stat_of[s]]);
        real(doc, "percent", change->estimate);
        real(doc, "low", change->low);
        real(doc, "high", change->high);
        if (a->run_count > 1)
            real(doc, "a_noise_percent", a->spread[s].percent);
        else
            null(doc, "a_noise_percent");
        string(doc, "judgement", nvs_diff_judgement_word(diff->judgement[s]));
        close_container(doc, '}');
    }
    close_container(doc, '}');
    open_container(doc, "columns", '{');
    for (int c = 0; c < NVS_COLUMNS; c++) {
        if (!nvs_diff_column_shown(diff, c))
            continue;
        const struct nvs_diff_interval *change = &diff->column_change[c];
        open_flat(doc, nvs_report_column_keys[c]);
        time_ns(doc, "mean", b->stats[c][NVS_STAT_MEAN] - a->stats[c][NVS_STAT_MEAN]);
        if (c == NVS_COLUMN_LATENCY) {
            /* over the frames that have one: not a part of the frame, not resampled */
            null(doc, "low");
            null(doc, "high");
            null(doc, "beyond_noise");
        } else {
            time_ns(doc, "low", change->low);
            time_ns(doc, "high", change->high);
            boolean(doc, "beyond_noise", diff->column_beyond[c]);
        }
        time_ns(doc, "p99", b->stats[c][NVS_STAT_P99] - a->stats[c][NVS_STAT_P99]);
        close_container(doc, '}');
    }
    close_container(doc, '}');
    open_container(doc, "moved_the_frame", '[');
    for (size_t k = 0; k < diff->named_count; k++)
        string(doc, NULL, nvs_report_column_keys[diff->named[k]]);
    close_container(doc, ']');
}

static void put_name_side(struct doc *doc, const struct nvs_diff_name_change *change, int side)
{
    if (!change->in[side]) {
        null(doc, side ? "b" : "a");
        return;
    }
    open_flat(doc, side ? "b" : "a");
    whole(doc, "count", change->count[side]);
    time_ns(doc, "mean", change->mean[side]);
    time_ns(doc, "p99", change->p99[side]);
    boolean(doc, "p99_estimated", change->estimated[side]);
    time_ns(doc, "per_frame", change->per_frame[side]);
    close_container(doc, '}');
}

static void put_names(struct doc *doc, const struct nvs_diff *diff)
{
    open_container(doc, "names", '[');
    for (size_t i = 0; i < diff->name_count; i++) {
        const struct nvs_diff_name_change *change = &diff->names[i];
        open_container(doc, NULL, '{');
        string(doc, "domain", change->domain);
        string(doc, "name", change->name);
        put_name_side(doc, change, 0);
        put_name_side(doc, change, 1);
        time_ns(doc, "per_frame_change", change->per_frame[1] - change->per_frame[0]);
        close_container(doc, '}');
    }
    close_container(doc, ']');
}

static void put_gates(struct doc *doc, const struct nvs_diff *diff)
{
    bool regression = false;
    open_container(doc, "gate", '{');
    for (int s = 0; s < NVS_DIFF_STATISTICS; s++) {
        if (diff->gate[s] < 0) {
            null(doc, nvs_diff_statistic_names[s]);
            continue;
        }
        open_flat(doc, nvs_diff_statistic_names[s]);
        string(doc, "option", diff->gate_option[s]);
        real(doc, "percent", diff->gate[s]);
        boolean(doc, "regression", diff->regression[s]);
        close_container(doc, '}');
        regression |= diff->regression[s];
    }
    boolean(doc, "regression", regression);
    whole(doc, "exit_status", regression ? 1 : 0);
    close_container(doc, '}');
}

static void put_document(struct doc *doc, const struct nvs_diff *diff)
{
    doc->first[0] = true;
    nvs_json_text_add(&doc->text, "{");
    doc->depth = 1;
    doc->first[1] = true;
    string(doc, "schema", SCHEMA);
    string(doc, "generator", "nvtxshim " NVS_VERSION);
    string(doc, "time_unit", "ns");
    string(doc, "verdict", nvs_diff_verdict_word(diff));
    string(doc, "method", "hierarchical bootstrap");
    whole(doc, "confidence_percent", NVS_DIFF_CONFIDENCE);
    whole(doc, "resamples", diff->resamples);
    whole(doc, "seed", diff->seed);
    put_side(doc, diff, 0);
    put_side(doc, diff, 1);
    open_container(doc, "change", '{');
    put_changes(doc, diff);
    close_container(doc, '}');
    put_names(doc, diff);
    put_gates(doc, diff);
    close_container(doc, '}');
    nvs_json_text_add(&doc->text, "\n");
}

/* ---- where it goes ---------------------------------------------------------------- */

static int put_text(FILE *out, const void *context)
{
    const struct nvs_json_text *text = context;
    fwrite(text->bytes, 1, text->length, out);
    return 0;
}

int nvs_diff_write_json(const struct nvs_diff *diff, const char *path)
{
    struct doc doc;
    memset(&doc, 0, sizeof doc);
    put_document(&doc, diff);
    int status = 0;
    if (doc.text.failed) {
        fputs("nvtxshim: diff: out of memory\n", stderr);
        status = -1;
    } else {
        status = nvs_json_write("diff", path, put_text, &doc.text);
    }
    free(doc.text.bytes);
    return status;
}
