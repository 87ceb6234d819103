/* A binary trace (docs/pftrace.md: Perfetto's protobuf Trace, what
 * NVTXSHIM_TRACE=NAME.pftrace writes) read into the event model. */
#ifndef NVS_CLI_TRACE_PFTRACE_H
#define NVS_CLI_TRACE_PFTRACE_H

#include <stdbool.h>
#include <stddef.h>

#include "model/events.h"

struct nvs_source;
/* Adds the events of the binary trace SOURCE gives (PATH names it in
 * messages), read a window at a time (source.h): thread-track slices as
 * ranges, async tracks' begin and end as async ranges, instants as marks,
 * thread and process names; the same events as the JSON form of the same run
 * gives. A trace cut short is read up to its last whole packet. Returns 0 (what
 * was left out said on stderr), or -1 after one "nvtxshim: COMMAND: ..." line
 * on stderr: no whole packet, a corrupt one, out of memory, or the input could
 * not be read. */
int nvs_pftrace_read(struct nvs_events *events, struct nvs_source *source, const char *path,
                     const struct nvs_load_options *options);

#endif
