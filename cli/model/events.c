/* The event model (events.h): interned strings, the event and name lists.
 * The readers fill it; load.c picks the reader. */
#define _GNU_SOURCE
#include "model/events.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/grow.h"
#include "util/map.h"

struct nvs_offcpu nvs_offcpu_of(const struct nvs_kernel_figures *figures)
{
    return (struct nvs_offcpu){
        .runnable_ns = figures->value[NVS_FIGURE_RUNNABLE_NS],
        .blocked_ns = figures->value[NVS_FIGURE_BLOCKED_NS],
        .preemptions = figures->value[NVS_FIGURE_PREEMPTIONS],
        .faults = figures->value[NVS_FIGURE_FAULTS],
        .migrations = figures->value[NVS_FIGURE_MIGRATIONS],
    };
}

/* ---- strings: interned, so that equal names are equal pointers ------------- */

#define POOL_BLOCK_BYTES (256u * 1024u)

struct pool_block {
    struct pool_block *next;
    size_t size, used;
    max_align_t data[];
};

/* The strings by their text: (a hash of the text, its length) to the string. */
struct nvs_string_pool {
    struct pool_block *blocks;
    struct map strings;
};

static void *pool_alloc(struct nvs_string_pool *pool, size_t size)
{
    size = (size + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
    struct pool_block *block = pool->blocks;
    if (!block || block->size - block->used < size) {
        size_t capacity = size > POOL_BLOCK_BYTES / 4 ? size : POOL_BLOCK_BYTES;
        struct pool_block *fresh = malloc(sizeof *fresh + capacity);
        if (!fresh)
            return NULL;
        fresh->size = capacity;
        fresh->used = 0;
        if (size > POOL_BLOCK_BYTES / 4 && block) {
            /* a big one gets a block of its own, behind the current one */
            fresh->next = block->next;
            block->next = fresh;
        } else {
            fresh->next = block;
            pool->blocks = fresh;
        }
        block = fresh;
    }
    void *memory = (char *)block->data + block->used;
    block->used += size;
    return memory;
}

static uint64_t hash_text(const char *text, size_t length)
{
    uint64_t hash = 14695981039346656037ull;
    for (size_t i = 0; i < length; i++)
        hash = (hash ^ (unsigned char)text[i]) * 1099511628211ull;
    return hash;
}

const char *nvs_events_intern(struct nvs_events *events, const char *text, size_t length)
{
    struct nvs_string_pool *pool = events->strings;
    if (!pool && !(pool = events->strings = calloc(1, sizeof *pool)))
        return NULL;
    const char *end = memchr(text, '\0', length);
    if (end)
        length = (size_t)(end - text);
    uint64_t hash = hash_text(text, length);
    for (struct map_slot *slot = nvs_map_find(&pool->strings, hash, length); slot;
         slot = nvs_map_next(&pool->strings, slot)) {
        const char *candidate = (const char *)(uintptr_t)slot->value;
        if (memcmp(candidate, text, length) == 0)
            return candidate;
    }
    char *copy = pool_alloc(pool, length + 1);
    struct map_slot *slot = copy ? nvs_map_add(&pool->strings, hash, length) : NULL;
    if (!slot)
        return NULL;
    memcpy(copy, text, length);
    copy[length] = '\0';
    slot->value = (size_t)(uintptr_t)copy;
    return copy;
}

const char *nvs_events_intern_string(struct nvs_events *events, const char *text)
{
    return nvs_events_intern(events, text, strlen(text));
}

void *nvs_events_alloc(struct nvs_events *events, size_t size)
{
    struct nvs_string_pool *pool = events->strings;
    if (!pool && !(pool = events->strings = calloc(1, sizeof *pool)))
        return NULL;
    return pool_alloc(pool, size);
}

/* ---- the event and name lists --------------------------------------------- */

/* Events handed to a sink at once. */
#define SINK_BATCH 4096

int nvs_events_flush(struct nvs_events *events)
{
    if (!events->sink || !events->count)
        return 0;
    size_t count = events->count;
    events->count = 0;
    return events->sink->take(events->sink->context, events->events, count);
}

struct nvs_event *nvs_events_add(struct nvs_events *events)
{
    if (events->sink && events->count >= SINK_BATCH && nvs_events_flush(events) != 0)
        return NULL;
    struct nvs_event *grown = nvs_room_for_one(events->events, events->count, &events->capacity,
                                               sizeof *grown, 4096);
    if (!grown)
        return NULL;
    events->events = grown;
    struct nvs_event *event = &events->events[events->count++];
    memset(event, 0, sizeof *event);
    return event;
}

bool nvs_events_add_name(struct nvs_events *events, uint32_t pid, uint32_t tid, const char *name,
                         bool replace)
{
    for (size_t i = events->name_count; i-- > 0;) {
        struct nvs_thread_name *known = &events->names[i];
        if (known->pid == pid && known->tid == tid) {
            if (replace)
                known->name = name;
            return true;
        }
    }
    struct nvs_thread_name *grown = nvs_room_for_one(events->names, events->name_count,
                                                     &events->name_capacity, sizeof *grown, 64);
    if (!grown)
        return false;
    events->names = grown;
    events->names[events->name_count++] = (struct nvs_thread_name){ pid, tid, name };
    return true;
}

void nvs_events_free(struct nvs_events *events)
{
    struct nvs_string_pool *pool = events->strings;
    if (pool) {
        while (pool->blocks) {
            struct pool_block *next = pool->blocks->next;
            free(pool->blocks);
            pool->blocks = next;
        }
        nvs_map_free(&pool->strings);
        free(pool);
    }
    free(events->events);
    free(events->names);
    memset(events, 0, sizeof *events);
}

/* A start time and the event's place: sorting these keys by both is a total
 * order, so qsort (not stable itself) gives the stable order by start. */
struct sort_key {
    int64_t start;
    size_t place;
};

static int compare_keys(const void *a, const void *b)
{
    const struct sort_key *x = a, *y = b;
    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return (x->place > y->place) - (x->place < y->place);
}

/* Stable by start time. The 16-byte keys are sorted and the events moved
 * once: a merge sort of the events themselves moved each ~80-byte event once a
 * pass, 18 passes for 300,000 events (a fifth of convert's time). An order
 * that is already right (a trace file, mostly) costs one look. */
void nvs_events_sort(struct nvs_events *events)
{
    size_t count = events->count;
    struct nvs_event *from = events->events;
    size_t i = 1;
    while (i < count && from[i - 1].start <= from[i].start)
        i++;
    if (i >= count)
        return;
    struct sort_key *keys = malloc(count * sizeof *keys);
    struct nvs_event *to = malloc(count * sizeof *to);
    if (!keys || !to) {
        free(keys);
        free(to);
        /* no memory for the keys: insertion sort is slow but stable */
        for (i = 1; i < count; i++) {
            struct nvs_event held = from[i];
            size_t j = i;
            for (; j > 0 && from[j - 1].start > held.start; j--)
                from[j] = from[j - 1];
            from[j] = held;
        }
        return;
    }
    for (i = 0; i < count; i++)
        keys[i] = (struct sort_key){ from[i].start, i };
    qsort(keys, count, sizeof *keys, compare_keys);
    for (i = 0; i < count; i++)
        to[i] = from[keys[i].place];
    free(keys);
    free(from);
    events->events = to;
    events->capacity = count;
}

uint32_t nvs_global_pid(int64_t global_tid)
{
    return (uint32_t)(((uint64_t)global_tid >> 24) & 0xFFFFFFu);
}

uint32_t nvs_global_tid(int64_t global_tid)
{
    return (uint32_t)((uint64_t)global_tid & 0xFFFFFFu);
}

/* ---- messages ----------------------------------------------------------------- */

void nvs_events_say(const struct nvs_load_options *options, const char *format, ...)
{
    char line[1024];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(line, sizeof line, format, arguments);
    va_end(arguments);
    fprintf(stderr, "nvtxshim: %s: %s\n", options->command, line);
}

/* ---- loading a file -------------------------------------------------------- */
