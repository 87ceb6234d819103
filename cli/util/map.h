/* The command's one hash table (open addressing, linear probing): a map from
 * two 64-bit words to a number. A key of two words (the .pftrace reader's
 * sequences, tracks and interned names; convert's quoted names) is looked up
 * with nvs_map_find and nvs_map_put. A longer key (an interned string, an
 * async range's key) is hashed into the two words by its user, and several
 * entries may then share those words: nvs_map_add makes one more,
 * nvs_map_find and nvs_map_next visit each, and the user tells them apart by
 * their values. nvs_map_remove keeps every other entry reachable. */
#ifndef NVS_CLI_MAP_H
#define NVS_CLI_MAP_H

#include <stddef.h>
#include <stdint.h>

struct map_slot {
    uint64_t a, b;
    size_t value;
};

/* All zero: empty. Beside each slot, a byte: 0 when the slot is empty, else
 * seven bits of its key's hash, so that a probe reads keys only where those
 * match. The slots move when the map grows: a slot pointer is good until the
 * next nvs_map_put, nvs_map_add or nvs_map_remove. */
struct map {
    struct map_slot *slots;
    uint8_t *tags; /* in the slots' memory, after them */
    size_t slot_count, used;
};

/* VALUE's bits mixed (splitmix64's finaliser): a hash for the home slot of
 * a key, and for the words a longer key is hashed into. */
uint64_t nvs_map_mix(uint64_t value);

/* The slot of (A, B), or NULL; where several entries have (A, B), the first
 * of them. */
struct map_slot *nvs_map_find(const struct map *map, uint64_t a, uint64_t b);
/* The next slot after SLOT with SLOT's key, or NULL. */
struct map_slot *nvs_map_next(const struct map *map, const struct map_slot *slot);
/* The slot of (A, B), made with value SIZE_MAX when missing; NULL when out of memory. */
struct map_slot *nvs_map_put(struct map *map, uint64_t a, uint64_t b);
/* A new slot for (A, B), value SIZE_MAX, beside any that has that key; NULL
 * when out of memory. */
struct map_slot *nvs_map_add(struct map *map, uint64_t a, uint64_t b);
/* SLOT emptied; the entries after it in its probe chain are moved back as
 * needed, so that each stays reachable from its home. */
void nvs_map_remove(struct map *map, struct map_slot *slot);
/* Its memory freed; empty again. */
void nvs_map_free(struct map *map);

#endif
