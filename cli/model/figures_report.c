/* The report worked out from what the figures builder kept (figures_builder.h):
 * the per-name table with its statistics (exact, or from the sketches), the marks
 * by kind, each process's frames measured (their statistics, the slowest, the
 * kernel probe's figures, the budget), capture to actuation, the capture
 * windows. */
#define _GNU_SOURCE
#include "model/figures_builder.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compare_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The PERCENT-th percentile of SORTED (COUNT > 0) by nearest rank: the
 * ceil(PERCENT / 100 * COUNT)-th smallest, counted from 1 (p50 of 1, 2, 3, 4
 * is 2), no interpolation. In integers: 0.99 * COUNT in floating point can
 * land a hair above a whole number and take the next rank. */
static int64_t percentile(const int64_t *sorted, size_t count, unsigned percent)
{
    size_t rank = (percent * count + 99) / 100;
    return sorted[rank ? rank - 1 : 0];
}

/* Mean, p50, p99 and max of VALUES (COUNT > 0, sorted here), in the order of
 * enum nvs_report_statistic. */
static void statistics(int64_t *values, size_t count, double out[NVS_STATS])
{
    int64_t sum = 0;
    for (size_t i = 0; i < count; i++)
        sum += values[i];
    qsort(values, count, sizeof *values, compare_int64);
    out[NVS_STAT_MEAN] = (double)sum / (double)count;
    out[NVS_STAT_P50] = (double)percentile(values, count, 50);
    out[NVS_STAT_P99] = (double)percentile(values, count, 99);
    out[NVS_STAT_MAX] = (double)values[count - 1];
}

/* ---- the report, from what the builder kept ---------------------------------------- */

/* A table name's statistics from ACCS (COUNT of them, one name, any processes):
 * exact where each kept its values, else p50 and p99 from the sketches. */
static int name_row(struct name_acc **accs, size_t count, struct nvs_report_name *row)
{
    *row = (struct nvs_report_name){ .domain = accs[0]->domain, .name = accs[0]->name };
    size_t values = 0;
    int64_t sum = 0, max = 0;
    bool sketched = false;
    for (size_t i = 0; i < count; i++) {
        row->count += accs[i]->count;
        values += accs[i]->value_count;
        sum += accs[i]->sum;
        if (i == 0 || accs[i]->max > max)
            max = accs[i]->max;
        sketched |= accs[i]->sketch != NULL;
    }
    if (!sketched) {
        int64_t *all = malloc((values + 1) * sizeof *all);
        if (!all)
            return -1;
        size_t n = 0;
        for (size_t i = 0; i < count; i++) {
            memcpy(all + n, accs[i]->values, accs[i]->value_count * sizeof *all);
            n += accs[i]->value_count;
        }
        statistics(all, n, row->stats);
        free(all);
        return 0;
    }
    uint64_t *sketch = calloc(SKETCH_BUCKETS, sizeof *sketch);
    if (!sketch)
        return -1;
    int64_t min = INT64_MAX;
    for (size_t i = 0; i < count; i++) {
        for (size_t v = 0; v < accs[i]->value_count; v++)
            sketch[sketch_index(accs[i]->values[v])]++;
        for (size_t b = 0; accs[i]->sketch && b < SKETCH_BUCKETS; b++)
            sketch[b] += accs[i]->sketch[b];
    }
    for (size_t b = 0; b < SKETCH_BUCKETS && min == INT64_MAX; b++)
        if (sketch[b])
            min = sketch_value(b);
    row->estimated = true;
    row->stats[NVS_STAT_MEAN] = (double)sum / (double)row->count;
    row->stats[NVS_STAT_MAX] = (double)max;
    unsigned percents[2] = { 50, 99 };
    int stats[2] = { NVS_STAT_P50, NVS_STAT_P99 };
    for (int s = 0; s < 2; s++) {
        size_t rank = (percents[s] * row->count + 99) / 100, seen = 0;
        if (!rank)
            rank = 1;
        for (size_t b = 0; b < SKETCH_BUCKETS; b++) {
            seen += sketch[b];
            if (seen >= rank) {
                int64_t value = sketch_value(b);
                row->stats[stats[s]] = (double)(value > max ? max : value < min ? min : value);
                break;
            }
        }
    }
    free(sketch);
    return 0;
}

static int compare_accs(const void *a, const void *b)
{
    const struct name_acc *x = *(const struct name_acc *const *)a,
                          *y = *(const struct name_acc *const *)b;
    int order = nvs_compare_interned(x->domain, y->domain);
    if (!order)
        order = nvs_compare_interned(x->name, y->name);
    return order;
}

/* A per-name table into *NAMES (*NAME_COUNT rows): per domain and table name,
 * the ranges' count and statistics; of every process, or of process PID alone
 * (ONE_PROCESS). */
static int names_table(const struct nvs_figures_builder *builder, bool one_process, uint32_t pid,
                       struct nvs_report_name **names, size_t *name_count)
{
    struct name_acc **accs = malloc((builder->name_count + 1) * sizeof *accs);
    *names = malloc((builder->name_count + 1) * sizeof **names);
    *name_count = 0;
    if (!accs || !*names) {
        free(accs);
        return -1;
    }
    size_t count = 0;
    for (size_t i = 0; i < builder->name_count; i++)
        if (!one_process || builder->names[i].pid == pid)
            accs[count++] = &builder->names[i];
    qsort(accs, count, sizeof *accs, compare_accs);
    int status = 0;
    for (size_t first = 0; first < count && status == 0;) {
        size_t last = first + 1;
        while (last < count && accs[last]->domain == accs[first]->domain &&
               accs[last]->name == accs[first]->name)
            last++;
        status = name_row(accs + first, last - first, &(*names)[(*name_count)++]);
        first = last;
    }
    free(accs);
    return status;
}

/* By domain, then the most marks first, then kind. */
static int compare_kinds(const void *a, const void *b)
{
    const struct mark_acc *x = *(const struct mark_acc *const *)a,
                          *y = *(const struct mark_acc *const *)b;
    int order = nvs_compare_interned(x->domain, y->domain);
    if (!order && x->count != y->count)
        order = (x->count < y->count) - (x->count > y->count);
    if (!order)
        order = nvs_compare_interned(x->kind, y->kind);
    return order;
}

/* By the time of the first mark. */
static int compare_texts(const void *a, const void *b)
{
    const struct mark_text *x = a, *y = b;
    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return (x->order > y->order) - (x->order < y->order);
}

static int report_marks(struct nvs_figures_builder *builder, struct nvs_report *report)
{
    if (!builder->mark_count)
        return 0;
    struct mark_acc **kinds = malloc(builder->mark_count * sizeof *kinds);
    report->marks = malloc(builder->mark_count * sizeof *report->marks);
    if (!kinds || !report->marks) {
        free(kinds);
        return -1;
    }
    for (size_t k = 0; k < builder->mark_count; k++)
        kinds[k] = &builder->marks[k];
    qsort(kinds, builder->mark_count, sizeof *kinds, compare_kinds);
    for (size_t k = 0; k < builder->mark_count; k++) {
        struct mark_acc *acc = kinds[k];
        struct nvs_report_mark_kind *out = &report->marks[report->mark_kind_count++];
        *out = (struct nvs_report_mark_kind){ acc->domain,     acc->kind, acc->count,
                                              acc->text_count, 0,         { { 0 } },
                                              acc->more_texts };
        if (acc->text_count == 1 && !acc->more_texts &&
            !nvs_compare_interned(acc->texts[0].text, acc->kind))
            continue;
        /* the first texts in time order: sorted in place (a text's place in the
         * index is its place in the array, so the index is rebuilt) */
        qsort(acc->texts, acc->text_count, sizeof *acc->texts, compare_texts);
        nvs_map_free(&acc->index);
        for (size_t t = 0; t < acc->text_count; t++) {
            struct map_slot *slot = nvs_map_add(&acc->index, pointer_hash(acc->texts[t].text), 0);
            if (!slot) {
                free(kinds);
                return -1;
            }
            slot->value = t;
        }
        for (size_t t = 0; t < acc->text_count && t < NVS_MARK_EXAMPLES; t++)
            out->examples[out->example_count++] = (struct nvs_report_mark_text){
                acc->texts[t].text, acc->texts[t].count
            };
    }
    free(kinds);
    return 0;
}

/* ---- capture to actuation ----------------------------------------------------- */

/* A camera frame and the actuation that consumed it: the first to start at or
 * after its dequeue while it was the newest frame its process had dequeued. */
struct latency_pair {
    uint32_t pid;
    int64_t capture, dequeue, start, end; /* start, end: the actuation's range */
};

struct latency {
    struct latency_pair *pairs; /* in the actuations' start order */
    size_t count, camera_frames, actuations;
};

static int compare_camera_frames(const void *a, const void *b)
{
    const struct camera_frame *x = a, *y = b;
    if (x->pid != y->pid)
        return (x->pid > y->pid) - (x->pid < y->pid);
    if (x->dequeue != y->dequeue)
        return (x->dequeue > y->dequeue) - (x->dequeue < y->dequeue);
    return (x->capture > y->capture) - (x->capture < y->capture);
}

static int compare_actuations(const void *a, const void *b)
{
    const struct actuation *x = a, *y = b;
    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return (x->order > y->order) - (x->order < y->order);
}

/* The pairs: per actuation in start order, the newest camera frame of its
 * process dequeued at or before its start, when no actuation took it. */
static int pair_captures(struct nvs_figures_builder *builder, struct latency *latency)
{
    memset(latency, 0, sizeof *latency);
    size_t f = builder->camera_frame_count, a = builder->actuation_count;
    latency->camera_frames = f;
    latency->actuations = a;
    if (!f || !a)
        return 0;
    struct camera_frame *frames = builder->camera_frames;
    struct actuation *actuations = builder->actuations;
    if (!(latency->pairs = malloc(a * sizeof *latency->pairs)))
        return -1;
    for (size_t i = 0; i < f; i++)
        frames[i].consumed = false;
    qsort(frames, f, sizeof *frames, compare_camera_frames);
    qsort(actuations, a, sizeof *actuations, compare_actuations);
    for (size_t i = 0; i < a; i++) {
        const struct actuation *actuation = &actuations[i];
        /* the first frame after (pid, start), then the one before it */
        size_t low = 0, high = f;
        while (low < high) {
            size_t middle = (low + high) / 2;
            if (frames[middle].pid < actuation->pid ||
                (frames[middle].pid == actuation->pid &&
                 frames[middle].dequeue <= actuation->start))
                low = middle + 1;
            else
                high = middle;
        }
        struct camera_frame *newest = low ? &frames[low - 1] : NULL;
        if (!newest || newest->pid != actuation->pid || newest->consumed)
            continue;
        newest->consumed = true;
        latency->pairs[latency->count++] = (struct latency_pair){ actuation->pid, newest->capture,
                                                                  newest->dequeue, actuation->start,
                                                                  actuation->end };
    }
    return 0;
}

/* The capture-to-actuation summary, over every process's pairs. */
static int compute_latency(const struct latency *latency, struct nvs_report *report)
{
    report->latency.pairs = latency->count;
    report->latency.camera_frames = latency->camera_frames;
    report->latency.actuations = latency->actuations;
    if (!latency->count)
        return 0;
    int64_t *values = malloc(latency->count * sizeof *values);
    if (!values)
        return -1;
    for (size_t p = 0; p < latency->count; p++)
        values[p] = latency->pairs[p].end - latency->pairs[p].capture;
    statistics(values, latency->count, report->latency.stats);
    free(values);
    return 0;
}

/* ---- each process's frames, measured ------------------------------------------ */

/* The row of ROWS (COUNT, in start order, none longer than LONGEST) that holds
 * time T; -1 when none does. */
static long frame_at(const struct nvs_report_frame *rows, size_t count, int64_t longest, int64_t t)
{
    size_t low = 0, high = count;
    while (low < high) {
        size_t middle = (low + high) / 2;
        if (rows[middle].start <= t)
            low = middle + 1;
        else
            high = middle;
    }
    for (size_t k = low; k-- > 0 && rows[k].start >= t - longest;)
        if (t < rows[k].start + rows[k].value[NVS_COLUMN_TOTAL])
            return (long)k;
    return -1;
}

static int compare_kernel_marks(const void *a, const void *b)
{
    const struct kernel_mark *x = a, *y = b;
    if (x->pid != y->pid)
        return (x->pid > y->pid) - (x->pid < y->pid);
    return (x->number > y->number) - (x->number < y->number);
}

/* PID's name: the process's own, else its main thread's; NULL when the file
 * names neither (an nsys export read for NVTX alone has no names). */
const char *nvs_figures_process_name(const struct nvs_events *events, uint32_t pid)
{
    const char *thread = NULL;
    for (size_t i = 0; i < events->name_count; i++) {
        const struct nvs_thread_name *known = &events->names[i];
        if (known->pid == pid && known->tid == 0)
            return known->name;
        if (known->pid == pid && known->tid == pid)
            thread = known->name;
    }
    return thread;
}

/* The slowest first; frames as long keep their start order. */
static int compare_slowest(const void *a, const void *b, void *frames_argument)
{
    const struct nvs_report_frame *frames = frames_argument;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int64_t tx = frames[x].value[NVS_COLUMN_TOTAL], ty = frames[y].value[NVS_COLUMN_TOTAL];
    if (tx != ty)
        return (tx < ty) - (tx > ty);
    return (x > y) - (x < y);
}

/* PROCESS's rows (its frames' figures so far, in start order) finished: the
 * rest, the cuda column, the kernel figures, the latency and drops, the columns
 * its data has, their statistics, the slowest frames and those over the budget. */
static int measure_process(struct nvs_figures_builder *builder, const struct proc *proc,
                           const struct latency *latency, struct nvs_report_process *process)
{
    size_t n = process->count;
    struct nvs_report_frame *rows = process->frames;
    int64_t *values = malloc((n + 1) * sizeof *values);
    if (!values)
        return -1;
    bool launches = false;
    for (size_t f = 0; f < n; f++) {
        rows[f].value[NVS_COLUMN_REST] = rows[f].value[NVS_COLUMN_TOTAL] -
            rows[f].value[NVS_COLUMN_REST];
        launches = launches || rows[f].value[NVS_COLUMN_LAUNCH] >= LAUNCH_SHOWN_NS;
    }
    /* Launches that take no time that shows count with the copies, in cuda. */
    for (size_t f = 0; f < n; f++) {
        if (!launches)
            rows[f].value[NVS_COLUMN_CUDA] = rows[f].value[NVS_COLUMN_LATENCY];
        rows[f].value[NVS_COLUMN_LATENCY] = 0;
    }
    /* the kernel figures: the frame range's own (trace files), else the probe's mark */
    for (size_t f = 0; f < n; f++) {
        if (!rows[f].has_kernel && builder->kernel_mark_count) {
            struct kernel_mark key = { .pid = process->pid, .number = rows[f].number };
            const struct kernel_mark *found = bsearch(
                &key, builder->kernel_marks, builder->kernel_mark_count,
                sizeof *builder->kernel_marks, compare_kernel_marks);
            if (found) {
                rows[f].has_kernel = true;
                rows[f].value[NVS_COLUMN_RUNNABLE] = (int64_t)found->figures.runnable_ns;
                rows[f].value[NVS_COLUMN_BLOCKED] = (int64_t)found->figures.blocked_ns;
                rows[f].preemptions = found->figures.preemptions;
                rows[f].faults = found->figures.faults;
            }
        }
        process->with_kernel += rows[f].has_kernel;
    }
    /* each row's latency (its first pair's, by the actuation's start) and drops */
    for (size_t p = 0; p < latency->count; p++) {
        const struct latency_pair *pair = &latency->pairs[p];
        long f = pair->pid == process->pid ? frame_at(rows, n, proc->longest, pair->start) : -1;
        if (f >= 0 && !rows[f].has_latency) {
            rows[f].has_latency = true;
            rows[f].value[NVS_COLUMN_LATENCY] = pair->end - pair->capture;
            process->with_latency++;
        }
    }
    for (size_t i = 0; i < builder->drop_count; i++) {
        const struct drop *drop = &builder->drops[i];
        if (drop->pid != process->pid)
            continue;
        long f = frame_at(rows, n, proc->longest, drop->start);
        if (f >= 0)
            rows[f].dropped += drop->count;
        else
            process->dropped_outside += drop->count;
        process->dropped += drop->count;
    }
    bool *shown = process->shown;
    for (int c = NVS_COLUMN_TOTAL; c <= NVS_COLUMN_REST; c++)
        if (nvs_column_rules[c].rule != RULE_DEVICE)
            shown[c] = true;
    shown[NVS_COLUMN_LAUNCH] = launches;
    shown[NVS_COLUMN_RUNNABLE] = shown[NVS_COLUMN_BLOCKED] = process->with_kernel > 0;
    shown[NVS_COLUMN_LATENCY] = process->with_latency > 0;
    for (int c = 0; c < NVS_COLUMNS; c++) {
        if (!shown[c])
            continue;
        size_t m = 0;
        for (size_t f = 0; f < n; f++)
            if (c != NVS_COLUMN_LATENCY || rows[f].has_latency)
                values[m++] = rows[f].value[c];
        statistics(values, m, process->stats[c]);
    }
    free(values);
    for (size_t f = 0; f < n; f++)
        process->slowest[f] = f;
    qsort_r(process->slowest, n, sizeof *process->slowest, compare_slowest, rows);
    for (size_t f = 0; f < n; f++)
        process->over_budget += nvs_report_over_budget(process, &rows[f]);
    return 0;
}

static int compare_procs(const void *a, const void *b)
{
    const struct proc *x = *(const struct proc *const *)a, *y = *(const struct proc *const *)b;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Each process's frames, measured: FINAL takes the builder's rows, else they are copied (and the
 * open frames measured into the copy). */
static int report_frames(struct nvs_figures_builder *builder, const struct latency *latency,
                         bool final, struct nvs_report *report)
{
    struct proc **procs = malloc((builder->proc_count + 1) * sizeof *procs);
    if (!procs)
        return -1;
    size_t count = 0;
    for (size_t p = 0; p < builder->proc_count; p++)
        if (builder->procs[p].count)
            procs[count++] = &builder->procs[p];
    qsort(procs, count, sizeof *procs, compare_procs);
    if (count && !(report->processes = calloc(count, sizeof *report->processes))) {
        free(procs);
        return -1;
    }
    if (final)
        while (builder->open_first < builder->open_next)
            nvs_figures_close_oldest(builder);
    int status = 0;
    for (size_t p = 0; p < count && status == 0; p++) {
        struct proc *proc = procs[p];
        struct nvs_report_process *process = &report->processes[report->process_count++];
        process->pid = proc->pid;
        process->name = nvs_figures_process_name(builder->events, proc->pid);
        process->count = proc->count;
        process->estimated = proc->estimated;
        process->late_calls = proc->late;
        if (final) {
            process->frames = proc->rows;
            proc->rows = NULL;
            proc->count = proc->capacity = 0;
        } else if ((process->frames = malloc(proc->count * sizeof *process->frames))) {
            memcpy(process->frames, proc->rows, proc->count * sizeof *process->frames);
            for (size_t k = 0; k < proc->count; k++)
                if (proc->open[k] != NOT_OPEN)
                    nvs_figures_measure_open(nvs_figures_open_frame(builder, proc->open[k]),
                                             &process->frames[k]);
        }
        process->slowest = malloc((process->count + 1) * sizeof *process->slowest);
        if (!process->frames || !process->slowest) {
            status = -1;
            break;
        }
        for (int c = NVS_FIRST_PART; c < NVS_LAST_PART; c++)
            if (nvs_column_rules[c].rule == RULE_DEVICE)
                process->shown[c] = proc->device[c];
        process->budget_ns = proc->budget_ns;
        process->budget_from = process->budget_ns ? NVS_BUDGET_MARKS : NVS_BUDGET_NONE;
        if (builder->budget_ns) {
            process->budget_ns = builder->budget_ns;
            process->budget_from = NVS_BUDGET_OPTION;
        }
        status = measure_process(builder, proc, latency, process);
    }
    free(procs);
    return status;
}

/* ---- capture windows ------------------------------------------------------------ */

static int compare_captures(const void *a, const void *b)
{
    const struct capture *x = a, *y = b;
    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return (x->order > y->order) - (x->order < y->order);
}

static int report_windows(struct nvs_figures_builder *builder, struct nvs_report *report)
{
    size_t n = builder->capture_count;
    if (!n)
        return 0;
    if (!(report->windows = malloc(n * sizeof *report->windows)))
        return -1;
    qsort(builder->captures, n, sizeof *builder->captures, compare_captures);
    for (size_t c = 0; c < n; c++) {
        const struct capture *window = &builder->captures[c];
        uint64_t first = 0, last = 0;
        for (size_t p = 0; p < report->process_count; p++) {
            const struct nvs_report_process *process = &report->processes[p];
            size_t low = 0, high = process->count;
            while (low < high) {
                size_t middle = (low + high) / 2;
                if (process->frames[middle].start < window->start)
                    low = middle + 1;
                else
                    high = middle;
            }
            for (size_t k = low; k < process->count && process->frames[k].start < window->end;
                 k++) {
                uint64_t number = process->frames[k].number;
                if (!first || number < first)
                    first = number;
                if (number > last)
                    last = number;
            }
        }
        report->windows[report->window_count++] = (struct nvs_report_window){
            window->name, window->domain, window->end - window->start, first, last
        };
    }
    return 0;
}

static void free_report(struct nvs_report *report)
{
    for (size_t p = 0; p < report->process_count; p++) {
        free(report->processes[p].frames);
        free(report->processes[p].slowest);
        free(report->processes[p].names);
    }
    free(report->processes);
    free(report->names);
    free(report->marks);
    free(report->windows);
}

int nvs_figures_report(struct nvs_figures_builder *builder, bool final, struct nvs_report *report)
{
    if (builder->failed)
        return -1;
    report->nvtx_events = builder->nvtx_events;
    struct latency latency;
    int status = pair_captures(builder, &latency);
    if (status == 0)
        status = names_table(builder, false, 0, &report->names, &report->name_count);
    if (status == 0)
        status = report_marks(builder, report);
    if (status == 0)
        status = report_frames(builder, &latency, final, report);
    for (size_t p = 0; status == 0 && p < report->process_count && report->process_count > 1; p++) {
        struct nvs_report_process *process = &report->processes[p];
        status = names_table(builder, true, process->pid, &process->names, &process->name_count);
    }
    if (status == 0)
        status = compute_latency(&latency, report);
    if (status == 0)
        status = report_windows(builder, report);
    free(latency.pairs);
    return status;
}

void nvs_figures_free(struct nvs_report *report)
{
    free_report(report);
}
