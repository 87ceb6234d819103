/* What nvtxshim convert keeps: --only's kinds of events (nCompass's converter's
 * names) and --nvtx-prefix's names of the NVTX ranges projected onto the GPU. */
#ifndef NVS_CLI_CONVERT_FILTER_H
#define NVS_CLI_CONVERT_FILTER_H

#include <stdbool.h>
#include <stddef.h>

#include "model/events.h"

struct nvs_filter {
    bool only; /* --only given: KEEP says what is kept */
    bool keep[NVS_EVENT_KINDS];
    char **prefixes; /* --nvtx-prefix's, each a copy */
    size_t prefix_count;
};

/* VALUE's comma list (NULL: the option was given no value), each item given
 * to ADD; the first usage error's status (its line said), or 0. */
int nvs_filter_each_item(const char *option, const char *value, struct nvs_filter *filter,
                         int (*add)(struct nvs_filter *, const char *item, size_t length));
/* An --only kind, ITEM (LENGTH bytes), kept; a usage error's status, or 0. */
int nvs_filter_add_only(struct nvs_filter *filter, const char *item, size_t length);
/* An --nvtx-prefix, ITEM (LENGTH bytes), kept; 1 when out of memory (said), or 0. */
int nvs_filter_add_prefix(struct nvs_filter *filter, const char *item, size_t length);
void nvs_filter_free(struct nvs_filter *filter);
/* Whether FILTER keeps events of KIND. */
bool nvs_filter_keeps_kind(const struct nvs_filter *filter, enum nvs_event_kind kind);
/* Whether FILTER (the context) keeps the NVTX range NAME among those projected: it
 * begins with a prefix (the export reader's nvs_export_keeps). */
bool nvs_filter_keeps_nvtx_name(void *context, const char *name);

#endif
