/* A trace file (NVTXSHIM_TRACE's, nvtxshim convert's, or another writer's
 * Chrome trace; or the binary form, trace_pftrace.h) read into the event model. */
#ifndef NVS_CLI_TRACE_READER_H
#define NVS_CLI_TRACE_READER_H

#include "events.h"

/* Adds the events of the trace file at PATH (a binary trace, .pftrace or
 * by its first bytes: nvs_pftrace_load's; else JSON): complete events ("X") and async
 * pairs ("b"/"e", joined) as ranges, with the kernel probe's figures when
 * there; instant events as marks; thread and process names. Returns 0 (what
 * was left out, or a file cut short, said on stderr), or -1 after one
 * "nvtxshim: COMMAND: ..." line on stderr. */
int nvs_trace_load(struct nvs_events *events, const char *path, const struct nvs_load_options *options);

#endif
