/* A profile's figures worked out as it is read: load.c's reader feeding
 * figures_builder.c's builder, above both (report, diff and top use it). */
#ifndef NVS_CLI_FIGURES_LOAD_H
#define NVS_CLI_FIGURES_LOAD_H

#include <stdint.h>

#include "model/events.h"
#include "model/figures.h"

/* PATH loaded as nvs_events_load loads it, its events worked out into REPORT's
 * figures as they are read (figures.h: the builder), so that memory holds the
 * figures, not the events; BUDGET_NS as for nvs_figures_begin. EVENTS keeps
 * the names the figures point to: free it after REPORT. Returns 0, or -1 after
 * one line on stderr. */
int nvs_figures_load(struct nvs_events *events, const char *path,
                     const struct nvs_load_options *options, int64_t budget_ns,
                     struct nvs_report *report);

#endif
