/* The events nvs_events_load gives for a file (cli/model/events.h), one a line in
 * time order, then the thread and process names: what a reader made of the
 * file, for test/test_cli_pftrace.py to compare a .pftrace's with its JSON
 * form's field by field.
 *   events_dump FILE     exit 0, or 1 after the loader's message */
#include <inttypes.h>
#include <stdio.h>

#include "model/events.h"
#include "readers/load.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: events_dump FILE\n");
        return 2;
    }
    struct nvs_events events = {0};
    struct nvs_load_options options = {.command = "events_dump", .what = NVS_LOAD_EVERYTHING};
    if (nvs_events_load(&events, argv[1], &options) != 0)
        return 1;
    nvs_events_sort(&events);
    for (size_t i = 0; i < events.count; i++) {
        const struct nvs_event *e = &events.events[i];
        printf("event kind=%d start=%" PRId64 " end=%" PRId64 " domain=%s name=%s pid=%" PRIu32
               " tid=%" PRIu32 " end_tid=%" PRIu32 " async=%d", (int)e->kind, e->start, e->end,
               e->domain, e->name, e->pid, e->tid, e->end_tid, (int)e->async);
        if (e->has_payload)
            printf(" payload=%" PRId64, e->payload);
        if (e->args)
            printf(" args=%s", e->args);
        if (e->offcpu)
            printf(" offcpu=%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64,
                   e->offcpu->runnable_ns, e->offcpu->blocked_ns, e->offcpu->preemptions,
                   e->offcpu->faults, e->offcpu->migrations);
        printf("\n");
    }
    for (size_t i = 0; i < events.name_count; i++)
        printf("name pid=%" PRIu32 " tid=%" PRIu32 " %s\n", events.names[i].pid, events.names[i].tid,
               events.names[i].name);
    nvs_events_free(&events);
    return 0;
}
