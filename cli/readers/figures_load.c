/* A profile's figures worked out as it is read (figures_load.h). */
#include "readers/figures_load.h"

#include "readers/load.h"

static int take(void *builder, const struct nvs_event *batch, size_t count)
{
    return nvs_figures_add(builder, batch, count);
}

int nvs_figures_load(struct nvs_events *events, const char *path,
                     const struct nvs_load_options *options, int64_t budget_ns,
                     struct nvs_report *report)
{
    struct nvs_figures_builder *builder = nvs_figures_begin(events, budget_ns);
    if (!builder) {
        nvs_events_say(options, "out of memory");
        return -1;
    }
    struct nvs_event_sink sink = { take, builder };
    events->sink = &sink;
    int outcome = nvs_events_load(events, path, options);
    events->sink = NULL;
    if (outcome == 0 && nvs_figures_report(builder, true, report) != 0) {
        nvs_events_say(options, "out of memory");
        outcome = -1;
    }
    nvs_figures_discard(builder);
    return outcome;
}
