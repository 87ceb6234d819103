/* The command's hash table (map.h). */
#include "map.h"

#include <stdlib.h>

uint64_t nvs_map_mix(uint64_t value)
{
    value ^= value >> 30;
    value *= 0xBF58476D1CE4E5B9ull;
    value ^= value >> 27;
    value *= 0x94D049BB133111EBull;
    return value ^ value >> 31;
}

static size_t map_home(uint64_t a, uint64_t b, size_t slot_count)
{
    return (size_t)nvs_map_mix(nvs_map_mix(a) ^ b) & (slot_count - 1);
}

struct map_slot *nvs_map_find(const struct map *map, uint64_t a, uint64_t b)
{
    if (!map->slot_count)
        return NULL;
    size_t mask = map->slot_count - 1;
    for (size_t slot = map_home(a, b, map->slot_count); map->slots[slot].used; slot = (slot + 1) & mask)
        if (map->slots[slot].a == a && map->slots[slot].b == b)
            return &map->slots[slot];
    return NULL;
}

static bool nvs_map_grow(struct map *map)
{
    size_t count = map->slot_count ? map->slot_count * 2 : 64;
    struct map_slot *slots = calloc(count, sizeof *slots);
    if (!slots)
        return false;
    for (size_t i = 0; i < map->slot_count; i++) {
        if (!map->slots[i].used)
            continue;
        size_t slot = map_home(map->slots[i].a, map->slots[i].b, count);
        while (slots[slot].used)
            slot = (slot + 1) & (count - 1);
        slots[slot] = map->slots[i];
    }
    free(map->slots);
    map->slots = slots;
    map->slot_count = count;
    return true;
}

struct map_slot *nvs_map_put(struct map *map, uint64_t a, uint64_t b)
{
    struct map_slot *found = nvs_map_find(map, a, b);
    if (found)
        return found;
    if ((map->used + 1) * 2 > map->slot_count && !nvs_map_grow(map))
        return NULL;
    size_t slot = map_home(a, b, map->slot_count);
    while (map->slots[slot].used)
        slot = (slot + 1) & (map->slot_count - 1);
    map->slots[slot] = (struct map_slot){a, b, SIZE_MAX, true};
    map->used++;
    return &map->slots[slot];
}
