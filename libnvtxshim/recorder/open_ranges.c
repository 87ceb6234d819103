/* The table of open start/end ranges (open_ranges.h). Slots are claimed
 * round the table from a shared cursor, so that a free one is found in a
 * probe or two while it is kept under half full; chunks are anonymous
 * mappings added by whoever needs one first. */
#include "open_ranges.h"

#include <errno.h>
#include <sys/mman.h>

struct nvs_open_table nvs_open_table;

/* Another chunk of slots beyond CAPACITY; false when there can be no more. */
static bool grow(uint32_t capacity)
{
    uint32_t chunk = capacity / NVS_OPEN_CHUNK;
    if (chunk >= NVS_OPEN_CHUNKS) {
        errno = ENOMEM; /* the table's own limit */
        return false;
    }
    size_t bytes = NVS_OPEN_CHUNK * sizeof(struct nvs_open_range);
    if (!atomic_load(&nvs_open_table.chunks[chunk])) {
        void *memory = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (memory == MAP_FAILED)
            return false;
        struct nvs_open_range *expected = NULL;
        if (!atomic_compare_exchange_strong(&nvs_open_table.chunks[chunk], &expected, memory))
            munmap(memory, bytes);
    }
    uint32_t seen = capacity, grown = (chunk + 1) * NVS_OPEN_CHUNK;
    while (seen < grown && !atomic_compare_exchange_weak(&nvs_open_table.capacity, &seen, grown))
        continue;
    return true;
}

/* A free slot, kept under half full so that a free one is found in a probe
 * or two; NULL only when no memory is left for more. */
struct nvs_open_range *nvs_open_claim(uint32_t *index)
{
    uint32_t open = atomic_fetch_add(&nvs_open_table.count, 1) + 1;
    uint32_t capacity = atomic_load(&nvs_open_table.capacity);
    if (open * 2 > capacity && grow(capacity))
        capacity = atomic_load(&nvs_open_table.capacity);
    for (uint32_t attempt = 0; attempt < capacity; attempt++) {
        *index = atomic_fetch_add_explicit(&nvs_open_table.cursor, 1, memory_order_relaxed) %
            capacity;
        struct nvs_open_range *slot = nvs_open_slot(*index);
        uint32_t expected = NVS_OPEN_FREE;
        if (slot && atomic_compare_exchange_strong(&slot->state, &expected, NVS_OPEN_USED))
            return slot;
    }
    atomic_fetch_sub(&nvs_open_table.count, 1);
    return NULL;
}

void nvs_open_reset_after_fork(void)
{
    uint32_t capacity = atomic_load(&nvs_open_table.capacity);
    for (uint32_t i = 0; i < capacity; i++) {
        struct nvs_open_range *slot = nvs_open_slot(i);
        if (slot)
            atomic_store(&slot->state, NVS_OPEN_FREE);
    }
    atomic_store(&nvs_open_table.count, 0);
}
