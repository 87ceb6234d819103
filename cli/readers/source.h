/* Where a streamed input's bytes come from (input.h makes one of a file, a
 * pipe or a gzip stream): the trace readers read through it a window at a
 * time, so that what they hold is an event, not the file. */
#ifndef NVS_CLI_SOURCE_H
#define NVS_CLI_SOURCE_H

#include <stddef.h>

struct nvs_source {
    /* Puts up to SIZE bytes at INTO; returns how many, 0 at the input's end,
     * or -1 with a sentence in ERROR (ERROR_SIZE bytes). */
    long (*read)(void *context, char *into, size_t size, char *error, size_t error_size);
    void *context;
    size_t max_event; /* the most one event may take in memory; 0: no limit */
};

#endif
