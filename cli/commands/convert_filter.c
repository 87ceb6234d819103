/* What nvtxshim convert keeps (convert_filter.h): --only and --nvtx-prefix read. */
#define _GNU_SOURCE
#include "commands/convert_filter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands/options.h"

/* --only's names, nCompass's converter's, and the kinds each keeps. */
static const struct {
    const char *name;
    enum nvs_event_kind kinds[3];
    size_t count;
} only_names[] = {
    { "nvtx", { NVS_EVENT_RANGE, NVS_EVENT_MARK }, 2 },
    { "nvtx-kernel", { NVS_EVENT_PROJECTION }, 1 },
    { "cuda-api", { NVS_EVENT_CUDA_API }, 1 },
    { "kernel", { NVS_EVENT_GPU_KERNEL, NVS_EVENT_GPU_COPY, NVS_EVENT_GPU_SET }, 3 },
    { "osrt", { NVS_EVENT_OS_CALL }, 1 },
    { "sched", { NVS_EVENT_THREAD_STATE }, 1 },
};
#define ONLY_NAMES (sizeof only_names / sizeof only_names[0])

/* VALUE's comma list, each item LENGTH bytes at ITEM, given to ADD; the
 * first usage error's status, or 0. */
int nvs_filter_each_item(const char *option, const char *value, struct nvs_filter *filter,
                         int (*add)(struct nvs_filter *, const char *item, size_t length))
{
    if (!value)
        return nvs_option_usage_error("convert", "%s needs a value", option);
    for (const char *item = value;; item++) {
        size_t length = strcspn(item, ",");
        if (!length) {
            char message[160];
            snprintf(message, sizeof message, "%s: an empty item in '%.100s'", option, value);
            return nvs_option_usage_error("convert", "%s", message);
        }
        int status = add(filter, item, length);
        if (status)
            return status;
        item += length;
        if (!*item)
            return 0;
    }
}

int nvs_filter_add_only(struct nvs_filter *filter, const char *item, size_t length)
{
    for (size_t i = 0; i < ONLY_NAMES; i++)
        if (strlen(only_names[i].name) == length && memcmp(only_names[i].name, item, length) == 0) {
            for (size_t k = 0; k < only_names[i].count; k++)
                filter->keep[only_names[i].kinds[k]] = true;
            filter->only = true;
            return 0;
        }
    char message[256];
    int written = snprintf(message, sizeof message, "--only: unknown kind '%.*s': the kinds are",
                           (int)(length > 64 ? 64 : length), item);
    for (size_t i = 0; i < ONLY_NAMES && written > 0 && (size_t)written < sizeof message; i++)
        written += snprintf(message + written, sizeof message - (size_t)written, "%s %s",
                            i ? "," : "", only_names[i].name);
    return nvs_option_usage_error("convert", "%s", message);
}

int nvs_filter_add_prefix(struct nvs_filter *filter, const char *item, size_t length)
{
    char **grown = realloc(filter->prefixes, (filter->prefix_count + 1) * sizeof *grown);
    char *copy = grown ? strndup(item, length) : NULL;
    if (grown)
        filter->prefixes = grown;
    if (!copy) {
        fputs("nvtxshim: convert: out of memory\n", stderr);
        return 1;
    }
    filter->prefixes[filter->prefix_count++] = copy;
    return 0;
}

void nvs_filter_free(struct nvs_filter *filter)
{
    for (size_t i = 0; i < filter->prefix_count; i++)
        free(filter->prefixes[i]);
    free(filter->prefixes);
}

bool nvs_filter_keeps_kind(const struct nvs_filter *filter, enum nvs_event_kind kind)
{
    return !filter->only || filter->keep[kind];
}

bool nvs_filter_keeps_nvtx_name(void *context, const char *name)
{
    const struct nvs_filter *filter = context;
    for (size_t i = 0; i < filter->prefix_count; i++)
        if (strncmp(name, filter->prefixes[i], strlen(filter->prefixes[i])) == 0)
            return true;
    return false;
}
