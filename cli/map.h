/* A map from two 64-bit words to a number, for cli/ (open addressing, linear
 * probing, nothing ever removed): the .pftrace reader's interned names and
 * tracks. */
#ifndef NVS_CLI_MAP_H
#define NVS_CLI_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct map_slot {
    uint64_t a, b;
    size_t value;
    bool used;
};

/* Open addressing with linear probing; nothing is ever removed. */
struct map {
    struct map_slot *slots;
    size_t slot_count, used;
};

/* VALUE's bits mixed (splitmix64's finaliser): a hash for the home slot of
 * a key, here and in the command's other tables. */
uint64_t nvs_map_mix(uint64_t value);

/* The slot of (A, B), or NULL. */
struct map_slot *nvs_map_find(const struct map *map, uint64_t a, uint64_t b);
/* The slot of (A, B), made with value SIZE_MAX when missing; NULL when out of memory. */
struct map_slot *nvs_map_put(struct map *map, uint64_t a, uint64_t b);

#endif
