/* The recorder's start/end ranges while they are open: a table of slots, each
 * claimed by a start and taken by the end whose id names it, from any thread,
 * without a lock. It grows a chunk at a time and never shrinks (a slot may be
 * looked at after its range ended: its generation tells). */
#ifndef NVS_RECORDER_OPEN_RANGES_H
#define NVS_RECORDER_OPEN_RANGES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <nvtx3/nvToolsExt.h>

#include "../hidden.h"
#include "trace.h"

#define NVS_OPEN_CHUNK 1024u  /* slots added this many at a time */
#define NVS_OPEN_CHUNKS 1024u /* ... up to a million open at once */

enum { NVS_OPEN_FREE, NVS_OPEN_USED, NVS_OPEN_ENDING };

struct nvs_writer_thread;

struct nvs_open_range {
    _Atomic uint32_t state; /* NVS_OPEN_FREE, NVS_OPEN_USED, NVS_OPEN_ENDING */
    uint32_t generation;
    uint64_t trace_id;                  /* the id of its begin and end in the trace */
    struct nvs_writer_thread *begun_on; /* whose sequence wrote its begin, */
    uint32_t begun_restarts;            /* and how often it had started again then */
    struct nvs_trace_event event;
    struct nvs_trace_args args; /* added while it is open, written at its end */
};

/* Read inline on the end's way; changed only here and in open_ranges.c. */
extern NVS_HIDDEN struct nvs_open_table {
    _Atomic(struct nvs_open_range *) chunks[NVS_OPEN_CHUNKS];
    _Atomic uint32_t capacity;
    _Atomic uint32_t count;
    _Atomic uint32_t cursor;
} nvs_open_table;

/* The slot at INDEX, or NULL where its chunk was never made. */
static inline struct nvs_open_range *nvs_open_slot(uint32_t index)
{
    struct nvs_open_range *chunk = atomic_load_explicit(
        &nvs_open_table.chunks[index / NVS_OPEN_CHUNK], memory_order_acquire);
    return chunk ? &chunk[index % NVS_OPEN_CHUNK] : NULL;
}

/* The slot of ID (generation << 32 | index + 1) while it is open, or NULL for
 * a stale or unknown id. */
static inline struct nvs_open_range *nvs_open_find(nvtxRangeId_t id)
{
    uint32_t index = (uint32_t)id - 1;
    if (id == 0 || index >= atomic_load(&nvs_open_table.capacity))
        return NULL;
    struct nvs_open_range *slot = nvs_open_slot(index);
    return slot && slot->generation == (uint32_t)(id >> 32) ? slot : NULL;
}

/* The slot of ID, taken for its end (no one else can end it); NULL for a
 * stale or unknown id. */
static inline struct nvs_open_range *nvs_open_ending(nvtxRangeId_t id)
{
    struct nvs_open_range *slot = nvs_open_find(id);
    uint32_t expected = NVS_OPEN_USED;
    if (!slot || !atomic_compare_exchange_strong(&slot->state, &expected, NVS_OPEN_ENDING))
        return NULL;
    return slot;
}

/* SLOT, ended, free for another range. */
static inline void nvs_open_free(struct nvs_open_range *slot)
{
    atomic_store(&slot->state, NVS_OPEN_FREE);
    atomic_fetch_sub(&nvs_open_table.count, 1);
}

/* A free slot, now in use, and its INDEX; NULL only when no memory is left. */
struct nvs_open_range *nvs_open_claim(uint32_t *index);

/* In a forked child: every slot free (the parent's ranges are not the child's). */
void nvs_open_reset_after_fork(void);

#endif
