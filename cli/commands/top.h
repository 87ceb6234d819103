/* nvtxshim top (top.c): a live view of a trace being written; run --top uses it too. */
#ifndef NVS_CLI_TOP_H
#define NVS_CLI_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define NVS_TOP_FRAMES 50 /* the last frames the breakdown is made of */

struct nvs_top_options {
    size_t frames;
    double interval_s;
    bool once;
};

/* Shows the trace at PATH, again whenever it has grown, until the process it
 * names ends (CHILD, when not 0: until that child ends, its wait status in
 * *CHILD_STATUS), or SIGINT or SIGTERM, or after one view with --once. Returns
 * 0, or 1 where a --once view could not be made. */
int nvs_top_watch(const char *path, pid_t child, const struct nvs_top_options *top,
                  int *child_status);

#endif
