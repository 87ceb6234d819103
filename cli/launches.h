/* CUDA API calls joined to the GPU work they launched, by CUPTI's correlation
 * id (the same in one process): NVTX ranges projected onto the GPU, and the
 * launches that convert draws as flow arrows. */
#ifndef NVS_CLI_LAUNCHES_H
#define NVS_CLI_LAUNCHES_H

#include <stddef.h>

#include "events.h"

/* The projections of the NVTX ranges in EVENTS onto the GPU rows, as nsys's
 * NVTX GPU projection makes them (its nvtxgpuproj report): a GPU operation
 * (kernel, copy, memset) belongs to a range when the API call that launched
 * it lies inside the range, on the range's thread. Only push/pop ranges and
 * start/end ranges that end on their own thread are projected. For each
 * range and each GPU row (device and stream) with operations of it, one
 * NVS_EVENT_PROJECTION event on that row: the range's name, from the first
 * operation's start to the last one's end, args domain and "gpu ops" (how
 * many). Returns them in *PROJECTIONS (malloc'ed; their strings interned in
 * EVENTS), their number in *COUNT; 0, or -1 when out of memory. */
int nvs_launches_project(struct nvs_events *events, struct nvs_event **projections, size_t *count);

/* One launch: EVENTS->events[call] (a CUDA API call) launched
 * EVENTS->events[work] (GPU work) of its process. */
struct nvs_launch {
    size_t call, work;
};

/* The launches in EVENTS, by the work's index; a piece of work has at most
 * one (the earliest call with its process and correlation id). *LAUNCHES is
 * malloc'ed. Returns 0, or -1 when out of memory. */
int nvs_launches_find(const struct nvs_events *events, struct nvs_launch **launches, size_t *count);

#endif
