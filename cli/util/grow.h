/* An array that grows by one item at a time, for cli/: its capacity doubles. */
#ifndef NVS_CLI_GROW_H
#define NVS_CLI_GROW_H

#include <stddef.h>
#include <stdlib.h>

/* ITEMS (COUNT items of SIZE bytes, room for *CAPACITY) with room for one
 * more: ITEMS itself, or a larger copy (the capacity doubling from FIRST,
 * *CAPACITY updated); NULL when out of memory, ITEMS untouched. */
static inline void *nvs_room_for_one(void *items, size_t count, size_t *capacity, size_t size,
                                     size_t first)
{
    if (count < *capacity)
        return items;
    size_t grown_capacity = *capacity ? *capacity * 2 : first;
    void *grown = realloc(items, grown_capacity * size);
    if (grown)
        *capacity = grown_capacity;
    return grown;
}

#endif
