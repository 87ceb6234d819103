/* CUDA API calls joined to their GPU work (launches.h). Both joins are made
 * through sorted indices and binary search, not a scan per range or per
 * call: an export of a million events must convert in seconds. */
#define _GNU_SOURCE
#include "launches.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trace_json.h"

static bool is_gpu_work(const struct nvs_event *event)
{
    return event->kind == NVS_EVENT_GPU_KERNEL || event->kind == NVS_EVENT_GPU_COPY ||
           event->kind == NVS_EVENT_GPU_SET;
}

static int order(uint64_t x, uint64_t y)
{
    return (x > y) - (x < y);
}

/* By thread, then start (then place, so that the order is total). */
static int compare_on_thread(const void *a, const void *b, void *context)
{
    const struct nvs_event *events = context;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const struct nvs_event *x = &events[i], *y = &events[j];
    if (x->pid != y->pid)
        return order(x->pid, y->pid);
    if (x->tid != y->tid)
        return order(x->tid, y->tid);
    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return order(i, j);
}

/* By process, then correlation id, then place: the earliest first. */
static int compare_by_correlation(const void *a, const void *b, void *context)
{
    const struct nvs_event *events = context;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const struct nvs_event *x = &events[i], *y = &events[j];
    if (x->pid != y->pid)
        return order(x->pid, y->pid);
    if (x->correlation != y->correlation)
        return order(x->correlation, y->correlation);
    return order(i, j);
}

/* The indices of the events that WANTED accepts, sorted by COMPARE; NULL when
 * out of memory (an empty list is an allocation of one). */
static size_t *sorted_indices(const struct nvs_events *events, bool (*wanted)(const struct nvs_event *),
                              int (*compare)(const void *, const void *, void *), size_t *count)
{
    size_t *indices = malloc((events->count + 1) * sizeof *indices);
    if (!indices)
        return NULL;
    *count = 0;
    for (size_t i = 0; i < events->count; i++)
        if (wanted(&events->events[i]))
            indices[(*count)++] = i;
    qsort_r(indices, *count, sizeof *indices, compare, events->events);
    return indices;
}

static bool is_joinable_call(const struct nvs_event *event)
{
    return event->kind == NVS_EVENT_CUDA_API && event->correlation != 0;
}

static bool is_joinable_work(const struct nvs_event *event)
{
    return is_gpu_work(event) && event->correlation != 0;
}

/* The first of INDICES (sorted by compare_by_correlation) at or after
 * (PID, CORRELATION). */
static size_t first_with_correlation(const struct nvs_event *events, const size_t *indices, size_t count,
                                     uint32_t pid, uint32_t correlation)
{
    size_t low = 0, high = count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        const struct nvs_event *event = &events[indices[middle]];
        if (event->pid < pid || (event->pid == pid && event->correlation < correlation))
            low = middle + 1;
        else
            high = middle;
    }
    return low;
}

/* The first of INDICES (sorted by compare_on_thread) on (PID, TID) that starts
 * at START or later. */
static size_t first_on_thread_from(const struct nvs_event *events, const size_t *indices, size_t count,
                                   uint32_t pid, uint32_t tid, int64_t start)
{
    size_t low = 0, high = count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        const struct nvs_event *event = &events[indices[middle]];
        bool before = event->pid != pid ? event->pid < pid
                      : event->tid != tid ? event->tid < tid
                      : event->start < start;
        if (before)
            low = middle + 1;
        else
            high = middle;
    }
    return low;
}

/* A range's operations on one GPU row, so far. */
struct row_span {
    uint32_t pid, tid;
    int64_t start, end;
    size_t operations;
};

struct projector {
    struct nvs_events *events;
    const size_t *calls, *work;
    size_t call_count, work_count;
    struct row_span *rows;           /* the current range's rows */
    size_t row_count, row_capacity;
    struct nvs_event *made;
    size_t made_count, made_capacity;
    const char *category;
    struct nvs_json_text args;
};

static bool grow(void **items, size_t *capacity, size_t count, size_t size)
{
    if (count < *capacity)
        return true;
    size_t more = *capacity ? *capacity * 2 : 64;
    void *grown = realloc(*items, more * size);
    if (!grown)
        return false;
    *items = grown;
    *capacity = more;
    return true;
}

/* WORK (an operation of the current range) added to its row's span. */
static bool add_to_row(struct projector *projector, const struct nvs_event *work)
{
    struct row_span *row = NULL;
    for (size_t i = 0; i < projector->row_count && !row; i++)
        if (projector->rows[i].pid == work->pid && projector->rows[i].tid == work->tid)
            row = &projector->rows[i];
    if (!row) {
        if (!grow((void **)&projector->rows, &projector->row_capacity, projector->row_count,
                  sizeof *projector->rows))
            return false;
        row = &projector->rows[projector->row_count++];
        *row = (struct row_span){work->pid, work->tid, work->start, work->end, 0};
    }
    if (work->start < row->start)
        row->start = work->start;
    if (work->end > row->end)
        row->end = work->end;
    row->operations++;
    return true;
}

/* The projections of the range at RANGE (an index: the events do not move). */
static bool project_range(struct projector *projector, size_t range)
{
    const struct nvs_event *events = projector->events->events;
    const struct nvs_event *nvtx = &events[range];
    projector->row_count = 0;
    /* The calls on the range's thread from its start; those that end inside it count. */
    for (size_t k = first_on_thread_from(events, projector->calls, projector->call_count, nvtx->pid, nvtx->tid,
                                         nvtx->start);
         k < projector->call_count; k++) {
        const struct nvs_event *call = &events[projector->calls[k]];
        if (call->pid != nvtx->pid || call->tid != nvtx->tid || call->start > nvtx->end)
            break;
        if (call->end > nvtx->end)
            continue;
        for (size_t w = first_with_correlation(events, projector->work, projector->work_count, call->pid,
                                               call->correlation);
             w < projector->work_count; w++) {
            const struct nvs_event *work = &events[projector->work[w]];
            if (work->pid != call->pid || work->correlation != call->correlation)
                break;
            if (!add_to_row(projector, work))
                return false;
        }
    }
    for (size_t i = 0; i < projector->row_count; i++) {
        const struct row_span *row = &projector->rows[i];
        if (!grow((void **)&projector->made, &projector->made_capacity, projector->made_count,
                  sizeof *projector->made))
            return false;
        struct nvs_json_text *args = &projector->args;
        args->length = 0;
        nvs_json_text_add_string_member(args, "domain", nvtx->domain);
        nvs_json_text_add(args, ",\"gpu ops\":%zu", row->operations);
        if (args->failed)
            return false;
        const char *text = nvs_events_intern(projector->events, args->bytes, args->length);
        if (!text)
            return false;
        projector->made[projector->made_count++] = (struct nvs_event){
            .start = row->start, .end = row->end, .domain = projector->category, .name = nvtx->name,
            .args = text, .pid = row->pid, .tid = row->tid, .kind = NVS_EVENT_PROJECTION,
        };
    }
    return true;
}

/* nsys projects a range that ends on the thread that started it: push/pop
 * ranges, and start/end ranges with no other end thread. */
static bool is_projected(const struct nvs_event *event)
{
    return event->kind == NVS_EVENT_RANGE && (event->end_tid == 0 || event->end_tid == event->tid) &&
           event->end >= event->start;
}

int nvs_launches_project(struct nvs_events *events, struct nvs_event **projections, size_t *count)
{
    struct projector projector = {.events = events};
    *projections = NULL;
    *count = 0;
    projector.category = nvs_events_intern_string(events, NVS_CATEGORY_PROJECTION);
    size_t *calls = sorted_indices(events, is_joinable_call, compare_on_thread, &projector.call_count);
    size_t *work = sorted_indices(events, is_joinable_work, compare_by_correlation, &projector.work_count);
    bool ok = projector.category && calls && work;
    projector.calls = calls;
    projector.work = work;
    if (ok && projector.call_count && projector.work_count)
        for (size_t i = 0; ok && i < events->count; i++)
            if (is_projected(&events->events[i]))
                ok = project_range(&projector, i);
    free(calls);
    free(work);
    free(projector.rows);
    free(projector.args.bytes);
    if (!ok) {
        free(projector.made);
        return -1;
    }
    *projections = projector.made;
    *count = projector.made_count;
    return 0;
}

int nvs_launches_find(const struct nvs_events *events, struct nvs_launch **launches, size_t *count)
{
    *launches = NULL;
    *count = 0;
    size_t call_count;
    size_t *calls = sorted_indices(events, is_joinable_call, compare_by_correlation, &call_count);
    struct nvs_launch *found = malloc((events->count + 1) * sizeof *found);
    if (!calls || !found) {
        free(calls);
        free(found);
        return -1;
    }
    for (size_t i = 0; i < events->count; i++) {
        const struct nvs_event *work = &events->events[i];
        if (!is_joinable_work(work))
            continue;
        size_t k = first_with_correlation(events->events, calls, call_count, work->pid, work->correlation);
        if (k < call_count && events->events[calls[k]].pid == work->pid &&
            events->events[calls[k]].correlation == work->correlation)
            found[(*count)++] = (struct nvs_launch){calls[k], i};
    }
    free(calls);
    *launches = found;
    return 0;
}
