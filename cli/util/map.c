/* The command's hash table (map.h). */
#include "util/map.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

uint64_t nvs_map_mix(uint64_t value)
{
    value ^= value >> 30;
    value *= 0xBF58476D1CE4E5B9ull;
    value ^= value >> 27;
    value *= 0x94D049BB133111EBull;
    return value ^ value >> 31;
}

/* The hash of (A, B): its low bits give the home slot, its top seven the tag. */
static uint64_t map_hash(uint64_t a, uint64_t b)
{
    return nvs_map_mix(nvs_map_mix(a) ^ b);
}

static uint8_t map_tag(uint64_t hash)
{
    return (uint8_t)(0x80 | hash >> 57);
}

/* From slot FROM on, the first slot with (A, B) (whose hash has TAG) before
 * an empty one, or NULL. */
static struct map_slot *probe(const struct map *map, size_t from, uint8_t tag, uint64_t a,
                              uint64_t b)
{
    size_t mask = map->slot_count - 1;
    for (size_t slot = from; map->tags[slot]; slot = (slot + 1) & mask)
        if (map->tags[slot] == tag && map->slots[slot].a == a && map->slots[slot].b == b)
            return &map->slots[slot];
    return NULL;
}

struct map_slot *nvs_map_find(const struct map *map, uint64_t a, uint64_t b)
{
    if (!map->slot_count)
        return NULL;
    uint64_t hash = map_hash(a, b);
    return probe(map, (size_t)hash & (map->slot_count - 1), map_tag(hash), a, b);
}

struct map_slot *nvs_map_next(const struct map *map, const struct map_slot *slot)
{
    size_t after = ((size_t)(slot - map->slots) + 1) & (map->slot_count - 1);
    return probe(map, after, map_tag(map_hash(slot->a, slot->b)), slot->a, slot->b);
}

/* The first empty slot from HASH's home in a table of COUNT slots with TAGS. */
static size_t free_slot(const uint8_t *tags, size_t count, uint64_t hash)
{
    size_t slot = (size_t)hash & (count - 1);
    while (tags[slot])
        slot = (slot + 1) & (count - 1);
    return slot;
}

static bool map_grow(struct map *map)
{
    size_t count = map->slot_count ? map->slot_count * 2 : 64;
    /* the slots and their tags in one block; only the tags need clearing */
    struct map_slot *slots = malloc(count * (sizeof *slots + 1));
    if (!slots)
        return false;
    uint8_t *tags = (uint8_t *)(slots + count);
    memset(tags, 0, count);
    for (size_t i = 0; i < map->slot_count; i++) {
        if (!map->tags[i])
            continue;
        uint64_t hash = map_hash(map->slots[i].a, map->slots[i].b);
        size_t slot = free_slot(tags, count, hash);
        slots[slot] = map->slots[i];
        tags[slot] = map->tags[i];
    }
    free(map->slots);
    map->slots = slots;
    map->tags = tags;
    map->slot_count = count;
    return true;
}

struct map_slot *nvs_map_add(struct map *map, uint64_t a, uint64_t b)
{
    if ((map->used + 1) * 2 > map->slot_count && !map_grow(map))
        return NULL;
    uint64_t hash = map_hash(a, b);
    size_t slot = free_slot(map->tags, map->slot_count, hash);
    map->slots[slot] = (struct map_slot){ a, b, SIZE_MAX };
    map->tags[slot] = map_tag(hash);
    map->used++;
    return &map->slots[slot];
}

struct map_slot *nvs_map_put(struct map *map, uint64_t a, uint64_t b)
{
    struct map_slot *found = nvs_map_find(map, a, b);
    return found ? found : nvs_map_add(map, a, b);
}

void nvs_map_remove(struct map *map, struct map_slot *slot)
{
    size_t mask = map->slot_count - 1, hole = (size_t)(slot - map->slots);
    for (size_t i = (hole + 1) & mask; map->tags[i]; i = (i + 1) & mask) {
        /* the entry at I moves into the hole unless its home lies after the hole */
        size_t home = (size_t)map_hash(map->slots[i].a, map->slots[i].b) & mask;
        if (((i - home) & mask) >= ((i - hole) & mask)) {
            map->slots[hole] = map->slots[i];
            map->tags[hole] = map->tags[i];
            hole = i;
        }
    }
    map->tags[hole] = 0;
    map->used--;
}

void nvs_map_free(struct map *map)
{
    free(map->slots);
    *map = (struct map){ 0 };
}
