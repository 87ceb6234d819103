/* A trace's events written in the Chrome trace format, the form NVTXSHIM_TRACE
 * writes (docs/user-guide.md: The trace file): each event on a line of its own,
 * names quoted once and kept, times in microseconds with three decimals; and the
 * file, gzipped when its name ends .gz. nvtxshim convert writes through it. */
#ifndef NVS_CLI_CHROME_TRACE_H
#define NVS_CLI_CHROME_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/events.h"
#include "util/map.h"

/* The JSON form of a name, made once: a file names each of its few hundred
 * names thousands of times. Known by its text (the stream's strings are its
 * own copies), JSON is the text's quoted form that follows it. */
struct quoted_name {
    char *json;
    size_t length;
};

#define QUOTED_NAMES 3072 /* past so many, names are quoted each time */

struct nvs_chrome_writer {
    FILE *out;
    char *quoted;
    size_t quoted_size;
    struct quoted_name *names; /* QUOTED_NAMES of them; NULL: none kept */
    size_t name_count;
    struct map by_text; /* (a hash of the text, its length) -> its place in names */
    size_t items;       /* written so far: each after the first follows a comma */
    bool failed;
};

/* A range's end: its start for one that ends before it starts (a viewer takes
 * no negative duration). */
static inline int64_t nvs_chrome_range_end(const struct nvs_event *event)
{
    return event->end > event->start ? event->end : event->start;
}

/* A process's or a thread's name ("process_name", "thread_name"), as metadata. */
void nvs_chrome_put_metadata(struct nvs_chrome_writer *writer, const char *what, uint32_t pid,
                             uint32_t tid, const char *name);
/* An instant event, on its thread. */
void nvs_chrome_put_mark(struct nvs_chrome_writer *writer, const struct nvs_event *event);
/* A complete event ("ph":"X"): a range that nests on its thread. */
void nvs_chrome_put_complete(struct nvs_chrome_writer *writer, const struct nvs_event *event);
/* One half of an async pair ("ph":"b" or "e"), joined by (pid, cat, ID). */
void nvs_chrome_put_async(struct nvs_chrome_writer *writer, const struct nvs_event *event, bool end,
                          uint64_t id);
/* A launch arrow's start ("s", at the call) or finish ("f", at the GPU work). */
void nvs_chrome_put_flow(struct nvs_chrome_writer *writer, const struct nvs_event *event,
                         bool finish, uint64_t id);
/* PATH opened for writing, gzipped when its name ends .gz; NULL with errno. */
FILE *nvs_chrome_open_output(const char *path);
/* What WRITER holds (its quoted names, its map), freed; its stream is the caller's. */
void nvs_chrome_writer_free(struct nvs_chrome_writer *writer);

#endif
