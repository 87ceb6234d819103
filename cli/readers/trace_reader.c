/* A trace file read into the event model (trace_reader.h), one event at a time
 * through trace_json: complete events and marks as they come, async pairs
 * joined when both halves have been read, thread and process names. */
#include "readers/trace_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "util/grow.h"
#include "util/map.h"
#include "readers/trace_json.h"

/* The kernel probe's figures (schema.h) in a range's args, each there or
 * not: an async end's figures replace its begin's one by one. */
/* What joins an async begin ("ph":"b") to its end ("ph":"e"): the process,
 * the category (interned: compared as a pointer) and the id, a number (a
 * string, interned, in other writers' traces). */
struct async_key {
    uint32_t pid;
    const char *domain, *id_text;
    int64_t id;
};

/* One half of an async pair, waiting for the other. */
struct async_half {
    struct async_key key;
    struct nvs_event range; /* the range as far as this half says */
    struct nvs_kernel_figures figures;
    uint64_t order;   /* of halves with one key, the latest is taken first */
    size_t next_free; /* a free place: the next free one (SIZE_MAX: none) */
};

/* The halves waiting: each in a place of ITEMS, found by its key in INDEX
 * (the key hashed to two words, compared whole here), the place of one taken
 * reused, so that memory is that of the pairs open at once, not of the whole
 * trace. */
struct async_halves {
    struct map index; /* (key_hash, id) -> a place in items */
    struct async_half *items;
    size_t count, capacity; /* places made */
    size_t free;            /* the first free place (SIZE_MAX: none) */
    uint64_t next_order;
};

/* ---- what both trace readers share (trace_reader.h) ---- */

bool nvs_trace_kinds_init(struct nvs_trace_kinds *kinds, struct nvs_events *events)
{
    static const char *const names[NVS_TRACE_KINDS] = {
        NVS_CATEGORY_OS_CALL,      NVS_CATEGORY_GPU_KERNEL, NVS_CATEGORY_GPU_COPY,
        NVS_CATEGORY_GPU_SET,      NVS_CATEGORY_CUDA_API,   NVS_CATEGORY_PROJECTION,
        NVS_CATEGORY_THREAD_STATE,
    };
    static const enum nvs_event_kind kind[NVS_TRACE_KINDS] = {
        NVS_EVENT_OS_CALL,  NVS_EVENT_GPU_KERNEL, NVS_EVENT_GPU_COPY,     NVS_EVENT_GPU_SET,
        NVS_EVENT_CUDA_API, NVS_EVENT_PROJECTION, NVS_EVENT_THREAD_STATE,
    };
    for (size_t i = 0; i < NVS_TRACE_KINDS; i++) {
        kinds->kind[i] = kind[i];
        if (!(kinds->category[i] = nvs_events_intern_string(events, names[i])))
            return false;
    }
    return true;
}

bool nvs_trace_add_range(struct nvs_events *events, const struct nvs_trace_kinds *kinds,
                         const struct nvs_event *range, const struct nvs_kernel_figures *figures)
{
    struct nvs_event *event = nvs_events_add(events);
    if (!event)
        return false;
    *event = *range;
    event->kind = NVS_EVENT_RANGE;
    for (size_t i = 0; i < NVS_TRACE_KINDS; i++)
        if (event->domain == kinds->category[i])
            event->kind = kinds->kind[i];
    unsigned needed = 1u << NVS_FIGURE_RUNNABLE_NS | 1u << NVS_FIGURE_BLOCKED_NS;
    if ((figures->present & needed) != needed)
        return true;
    if (!(event->offcpu = nvs_events_alloc(events, sizeof *event->offcpu)))
        return false;
    *event->offcpu = nvs_offcpu_of(figures);
    return true;
}

bool nvs_trace_add_joined(struct nvs_events *events, const struct nvs_trace_kinds *kinds,
                          const struct nvs_trace_side *begin, const struct nvs_trace_side *end,
                          bool async)
{
    struct nvs_event range = begin->range;
    range.end = end->range.start > range.start ? end->range.start : range.start;
    range.end_tid = async && end->range.tid != range.tid ? end->range.tid : 0;
    range.async = async;
    if (end->range.has_payload) {
        range.payload = end->range.payload;
        range.has_payload = true;
    }
    struct nvs_kernel_figures figures = begin->figures;
    for (unsigned i = 0; i < NVS_FIGURE_COUNT; i++)
        if (end->figures.present & 1u << i)
            figures.value[i] = end->figures.value[i];
    figures.present |= end->figures.present;
    return nvs_trace_add_range(events, kinds, &range, &figures);
}

/* ---- the JSON form ---- */

struct trace_reader {
    struct nvs_events *events;
    struct nvs_trace_kinds kinds; /* the non-NVTX categories, interned */
    /* Each thread writes its own part of a trace file, so an end may come
     * before its begin in the file: either half waits for the other. */
    struct async_halves begins, ends;
    size_t begin_end;  /* B/E events: not read */
    size_t without_id; /* async events with no id */
    bool failed;
};

/* The key's words in the index: its pid, category and text id hashed, and its id. */
static uint64_t key_hash(const struct async_key *key)
{
    uint64_t hash = nvs_map_mix(key->pid ^ (uint64_t)(uintptr_t)key->domain);
    return nvs_map_mix(hash ^ (uint64_t)(uintptr_t)key->id_text);
}

static bool same_key(const struct async_key *a, const struct async_key *b)
{
    return a->pid == b->pid && a->domain == b->domain && a->id_text == b->id_text && a->id == b->id;
}

/* A new entry for KEY (another with that key may be waiting: it stays); NULL
 * when out of memory. */
static struct async_half *halves_add(struct async_halves *halves, const struct async_key *key)
{
    size_t place = halves->free;
    if (place == SIZE_MAX) {
        struct async_half *grown = nvs_room_for_one(halves->items, halves->count, &halves->capacity,
                                                    sizeof *grown, 128);
        if (!grown)
            return NULL;
        halves->items = grown;
    }
    struct map_slot *slot = nvs_map_add(&halves->index, key_hash(key), (uint64_t)key->id);
    if (!slot)
        return NULL;
    if (place == SIZE_MAX)
        place = halves->count++;
    else
        halves->free = halves->items[place].next_free;
    slot->value = place;
    struct async_half *half = &halves->items[place];
    memset(half, 0, sizeof *half);
    half->key = *key;
    half->order = halves->next_order++;
    return half;
}

/* The index's slot of the latest half waiting with KEY, or NULL. */
static struct map_slot *halves_find(const struct async_halves *halves, const struct async_key *key)
{
    struct map_slot *latest = NULL;
    for (struct map_slot *slot = nvs_map_find(&halves->index, key_hash(key), (uint64_t)key->id);
         slot; slot = nvs_map_next(&halves->index, slot)) {
        const struct async_half *candidate = &halves->items[slot->value];
        if (same_key(&candidate->key, key) &&
            (!latest || candidate->order > halves->items[latest->value].order))
            latest = slot;
    }
    return latest;
}

/* The half at SLOT taken out: its place is free again. */
static struct async_half halves_take(struct async_halves *halves, struct map_slot *slot)
{
    size_t place = slot->value;
    struct async_half half = halves->items[place];
    nvs_map_remove(&halves->index, slot);
    halves->items[place].next_free = halves->free;
    halves->free = place;
    return half;
}

static void halves_free(struct async_halves *halves)
{
    nvs_map_free(&halves->index);
    free(halves->items);
}

static bool args_number(const struct nvs_json *args, const char *key, uint64_t *out)
{
    int64_t value;
    if (!nvs_json_int64(nvs_json_get(args, key), &value) || value < 0)
        return false;
    *out = (uint64_t)value;
    return true;
}

/* ARGS's payload, a number (a fraction rounded), into EVENT when it has one. */
static void read_payload(const struct nvs_json *args, struct nvs_event *event)
{
    const struct nvs_json *payload = nvs_json_get(args, "payload");
    double value;
    if (nvs_json_int64(payload, &event->payload))
        event->has_payload = true;
    else if (nvs_json_double(payload, &value) && value > -9.2e18 && value < 9.2e18) {
        event->payload = (int64_t)(value < 0 ? value - 0.5 : value + 0.5);
        event->has_payload = true;
    }
}

/* The figures ARGS has, over those in FIGURES already. */
static void read_figures(const struct nvs_json *args, struct nvs_kernel_figures *figures)
{
    for (unsigned i = 0; i < NVS_FIGURE_COUNT; i++)
        if (args_number(args, nvs_kernel_figure_key((enum nvs_kernel_figure)i), &figures->value[i]))
            figures->present |= 1u << i;
}

/* A copy of EVENT added to the events; NULL (the reader failed) when out of memory. */
static struct nvs_event *add_event(struct trace_reader *reader, const struct nvs_event *event)
{
    struct nvs_event *added = nvs_events_add(reader->events);
    if (!added) {
        reader->failed = true;
        return NULL;
    }
    *added = *event;
    return added;
}

/* A range (an X event): nvs_trace_add_range's. */
static int add_range(struct trace_reader *reader, const struct nvs_event *range,
                     const struct nvs_kernel_figures *figures)
{
    if (nvs_trace_add_range(reader->events, &reader->kinds, range, figures))
        return 0;
    reader->failed = true;
    return 1;
}

/* The key of an async event at EVENT's pid and category; false when it has no
 * id (or, the reader failed, no memory for one). */
static bool read_async_key(struct trace_reader *reader, const struct nvs_json *json,
                           const struct nvs_event *event, struct async_key *key)
{
    const struct nvs_json *id = nvs_json_get(json, "id");
    *key = (struct async_key){ .pid = event->pid, .domain = event->domain };
    if (nvs_json_int64(id, &key->id))
        return true;
    if (!id || id->type != NVS_JSON_STRING)
        return false;
    key->id_text = nvs_events_intern(reader->events, id->text, id->length);
    reader->failed |= !key->id_text;
    return key->id_text != NULL;
}

/* An async pair joined (nvs_trace_add_joined). */
static int join_async(struct trace_reader *reader, const struct async_half *begin,
                      const struct async_half *end)
{
    struct nvs_trace_side first = { begin->range, begin->figures },
                          last = { end->range, end->figures };
    if (nvs_trace_add_joined(reader->events, &reader->kinds, &first, &last, true))
        return 0;
    reader->failed = true;
    return 1;
}

/* A "b" (or, with END, an "e"): joined with its other half when that came
 * first, else left waiting for it. */
static int read_async_half(struct trace_reader *reader, const struct nvs_json *json,
                           const struct nvs_event *event, bool end)
{
    struct async_half half = { .range = *event };
    if (!read_async_key(reader, json, event, &half.key)) {
        reader->without_id += !reader->failed;
        return reader->failed;
    }
    read_figures(nvs_json_get(json, "args"), &half.figures);
    read_payload(nvs_json_get(json, "args"), &half.range);
    struct async_halves *others = end ? &reader->begins : &reader->ends;
    struct map_slot *other = halves_find(others, &half.key);
    if (other) {
        struct async_half found = halves_take(others, other);
        return join_async(reader, end ? &found : &half, end ? &half : &found);
    }
    struct async_half *waiting = halves_add(end ? &reader->ends : &reader->begins, &half.key);
    if (!waiting) {
        reader->failed = true;
        return 1;
    }
    waiting->range = half.range;
    waiting->figures = half.figures;
    return 0;
}

/* A process_name or thread_name metadata event. */
static int read_name(struct trace_reader *reader, const struct nvs_json *json, const char *name,
                     uint32_t pid, uint32_t tid)
{
    const char *value = nvs_json_get_string(nvs_json_get(json, "args"), "name");
    bool thread = strcmp(name, "thread_name") == 0;
    if (value && (thread || strcmp(name, "process_name") == 0)) {
        const char *interned = nvs_events_intern_string(reader->events, value);
        if (!interned ||
            !nvs_events_add_name(reader->events, pid, thread ? tid : 0, interned, true))
            reader->failed = true;
    }
    return reader->failed;
}

static int on_trace_event(const struct nvs_json *json, void *context)
{
    struct trace_reader *reader = context;
    const char *phase = nvs_json_get_string(json, "ph");
    const char *name = nvs_json_get_string(json, "name");
    if (!phase || !name)
        return 0;
    int64_t pid = 0, tid = 0;
    nvs_json_int64(nvs_json_get(json, "pid"), &pid);
    nvs_json_int64(nvs_json_get(json, "tid"), &tid);
    if (strcmp(phase, "M") == 0)
        return read_name(reader, json, name, (uint32_t)pid, (uint32_t)tid);
    bool range = strcmp(phase, "X") == 0;
    bool mark = strcmp(phase, "i") == 0 || strcmp(phase, "I") == 0 || strcmp(phase, "R") == 0;
    bool async_begin = strcmp(phase, "b") == 0, async_end = strcmp(phase, "e") == 0;
    if (strcmp(phase, "B") == 0 || strcmp(phase, "E") == 0)
        reader->begin_end++;
    if (!range && !mark && !async_begin && !async_end)
        return 0;
    struct nvs_event event = { .pid = (uint32_t)pid, .tid = (uint32_t)tid };
    if (!nvs_json_microseconds(nvs_json_get(json, "ts"), &event.start))
        return 0;
    const char *category = nvs_json_get_string(json, "cat");
    event.end = event.start;
    event.name = nvs_events_intern_string(reader->events, name);
    event.domain = nvs_events_intern_string(reader->events, category ? category : "");
    if (!event.name || !event.domain) {
        reader->failed = true;
        return 1;
    }
    if (async_begin || async_end)
        return read_async_half(reader, json, &event, async_end);
    read_payload(nvs_json_get(json, "args"), &event);
    if (mark) {
        event.kind = NVS_EVENT_MARK;
        return add_event(reader, &event) ? 0 : 1;
    }
    int64_t duration;
    if (nvs_json_microseconds(nvs_json_get(json, "dur"), &duration))
        event.end = event.start + duration;
    struct nvs_kernel_figures figures = { 0 };
    read_figures(nvs_json_get(json, "args"), &figures);
    return add_range(reader, &event, &figures);
}

static const char *plural(size_t count)
{
    return count == 1 ? "" : "s";
}

/* What was left out of the trace at PATH, one line each. */
static void say_trace_left_out(const struct nvs_load_options *options, const char *path,
                               const struct trace_reader *reader,
                               const struct nvs_trace_read *result)
{
    if (options->live)
        return;
    if (result->cut_short)
        nvs_events_say(options,
                       "%s ends before its closing %s (the process was killed, or left "
                       "through _exit before NVTXSHIM_TRACE could finish it): read %zu events%s",
                       path, result->bare_array ? "]" : "]}", result->events,
                       result->last_incomplete ? ", the last one incomplete and left out" : "");
    size_t unended = reader->begins.index.used;
    if (unended)
        nvs_events_say(options,
                       "%s: %zu async range%s (\"ph\":\"b\") never ended, left out (open "
                       "when the trace stopped)",
                       path, unended, plural(unended));
    size_t unbegun = reader->ends.index.used;
    if (unbegun)
        nvs_events_say(options, "%s: %zu async end%s (\"ph\":\"e\") without a begin, left out",
                       path, unbegun, plural(unbegun));
    if (reader->without_id)
        nvs_events_say(options,
                       "%s: %zu async event%s (\"ph\":\"b\"/\"e\") without an id, left out", path,
                       reader->without_id, plural(reader->without_id));
    if (reader->begin_end)
        nvs_events_say(options,
                       "%s: %zu begin/end (\"ph\":\"B\"/\"E\") events left out: only "
                       "complete events (\"X\") and async pairs (\"b\"/\"e\") are read",
                       path, reader->begin_end);
}

int nvs_trace_read(struct nvs_events *events, struct nvs_source *source, const char *path,
                   const struct nvs_load_options *options)
{
    struct trace_reader reader = { .events = events,
                                   .begins.free = SIZE_MAX,
                                   .ends.free = SIZE_MAX };
    if (!nvs_trace_kinds_init(&reader.kinds, events)) {
        nvs_events_say(options, "out of memory");
        return -1;
    }
    struct nvs_trace_read result;
    char error[256];
    int status = nvs_trace_json_read(source, on_trace_event, &reader, &result, error, sizeof error);
    if (reader.failed)
        nvs_events_say(options, "out of memory reading %s", path);
    else if (status)
        nvs_events_say(options, "cannot read %s: %s", path, error);
    else
        say_trace_left_out(options, path, &reader, &result);
    halves_free(&reader.begins);
    halves_free(&reader.ends);
    return reader.failed || status ? -1 : 0;
}
