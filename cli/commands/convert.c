/* nvtxshim convert: an nsys SQLite export to the Chrome trace format that
 * NVTXSHIM_TRACE writes, so that a report opens in Perfetto or chrome://tracing
 * with no other tool. What the export lacks is said on stderr, one line each. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "commands/commands.h"
#include "model/events.h"
#include "util/grow.h"
#include "readers/input.h"
#include "readers/load.h"
#include "util/map.h"
#include "writers/chrome_trace.h"
#include "commands/convert_filter.h"
#include "commands/options.h"
#include "readers/sqlite_stream.h"
#include "readers/trace_json.h"

static const char manual[] =
    "NAME\n"
    "    nvtxshim convert - an nsys export as a trace for Perfetto or chrome://tracing\n"
    "\n"
    "SYNOPSIS\n"
    "    nvtxshim convert [--only KINDS] [--nvtx-prefix P[,P...]] [--max-input SIZE]\n"
    "                     IN.sqlite OUT.json\n"
    "    nvtxshim convert [OPTIONS] IN.nsys-rep OUT.json.gz\n"
    "    nvtxshim convert --help\n"
    "\n"
    "DESCRIPTION\n"
    "    Writes the events of an Nsight Systems SQLite export (nsys export --type\n"
    "    sqlite) as Chrome Trace Event Format JSON, the format NVTXSHIM_TRACE\n"
    "    writes: an array of events, one a line, which https://ui.perfetto.dev\n"
    "    and chrome://tracing open. Given a report (.nsys-rep), it is exported\n"
    "    first, as nvtxshim report does. Timestamps (ts, dur) are in\n"
    "    microseconds on nsys's clock (from the start of the session); pid and\n"
    "    tid come from nsys's global thread ids. Events are written in time\n"
    "    order, after the process and thread names.\n"
    "\n"
    "    The export is read as a stream, each table in time order, so memory\n"
    "    holds what is in flight (ranges open, launches whose work is to come),\n"
    "    not the export. The events go first to a temporary file in $TMPDIR\n"
    "    (unlinked; the size of the JSON, before gzip): the names come first.\n"
    "\n"
    "    A range is a complete event (\"ph\":\"X\", with dur), or an async pair\n"
    "    (\"ph\":\"b\" at its start, \"ph\":\"e\" at its end, joined by pid, cat\n"
    "    and an id unique in the file) where it may end on another thread or\n"
    "    overlap others: NVTX start/end ranges, and any range (NVTX, OS runtime\n"
    "    call, CUDA API call, GPU work, projection or thread state) that starts\n"
    "    inside a complete event of its row and ends after it. So complete\n"
    "    events nest on each row, as viewers need them to.\n"
    "\n"
    "    What goes in, from each table of the export that is there:\n"
    "\n"
    "    NVTX_EVENTS     ranges with the domain as category (\"default\" for\n"
    "                    none) and args category and payload: push/pop ranges\n"
    "                    complete, start/end ranges async, from the thread that\n"
    "                    started one to the thread that ended it (endGlobalTid).\n"
    "                    Marks as \"ph\":\"i\" with their colour. Thread names\n"
    "                    given with NVTX name their threads. Ranges never\n"
    "                    closed are left out.\n"
    "    OSRT_API        OS runtime calls (-t osrt), category osrt, args\n"
    "                    return.\n"
    "    CUPTI_ACTIVITY_KIND_RUNTIME\n"
    "                    CUDA API calls (-t cuda: the runtime's and the\n"
    "                    driver's), category \"cuda api\", on the calling thread,\n"
    "                    named without the version nsys appends\n"
    "                    (cudaLaunchKernel_v7000 is cudaLaunchKernel; _ptsz and\n"
    "                    _ptds are dropped too), args correlation (CUPTI's\n"
    "                    correlation id), return and class (CUDA runtime or\n"
    "                    CUDA driver).\n"
    "    CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY, _MEMSET\n"
    "                    GPU work (-t cuda), categories \"cuda kernel\",\n"
    "                    \"cuda memcpy\", \"cuda memset\", in the process that\n"
    "                    issued it, on one row per device and stream (named\n"
    "                    \"CUDA stream S (device D)\"), args device, stream,\n"
    "                    correlation.\n"
    "    SCHED_EVENTS    thread states (--cpuctxsw=process-tree), category\n"
    "                    \"thread state\", on a row of each thread's own beside\n"
    "                    it (tid 0x40000000 + the thread's, named \"NAME\n"
    "                    (state)\"): \"Running\" from a switch onto a CPU to the\n"
    "                    thread's next switch off it (args cpu), and time off\n"
    "                    the CPU from a switch off to the next switch on:\n"
    "                    \"Off CPU\", or \"Off CPU (STATE)\" with args state and\n"
    "                    block where the export says why (columns threadState\n"
    "                    and threadBlock of newer nsys; 2022.4 has neither).\n"
    "    ThreadNames, PROCESSES\n"
    "                    thread and process names (\"ph\":\"M\"), for the\n"
    "                    processes that have events.\n"
    "\n"
    "    And made from those:\n"
    "\n"
    "    launch arrows   a flow from each CUDA API call to each piece of GPU\n"
    "                    work it launched (same process, same correlation id),\n"
    "                    as flow events v1, name \"launch\", category\n"
    "                    \"cuda flow\", an id each, unique in the file: \"ph\":\"s\"\n"
    "                    at the call's start on its thread, and \"ph\":\"f\" with\n"
    "                    \"bp\":\"e\" at the work's start on its GPU row. Perfetto\n"
    "                    binds each to the innermost slice open on its row at\n"
    "                    that time, once every complete event that starts then\n"
    "                    has begun: the call and the work. A flow event cannot\n"
    "                    bind to an async pair, so a call or piece of work\n"
    "                    written as one gets no arrow (counted on stderr).\n"
    "    NVTX projections\n"
    "                    each NVTX range projected onto the GPU, as nsys's NVTX\n"
    "                    GPU projection: a piece of GPU work belongs to a range\n"
    "                    when the API call that launched it lies inside the\n"
    "                    range, on its thread (push/pop ranges, and start/end\n"
    "                    ranges that end on the thread that started them). Per\n"
    "                    range and GPU row with work of it, a range of category\n"
    "                    \"nvtx projection\" on that row, named as the NVTX\n"
    "                    range, from its first piece of work's start to its\n"
    "                    last one's end, args domain and \"gpu ops\" (how many).\n"
    "\n"
    "    The export's schema is read, not assumed: tables and columns differ\n"
    "    between nsys versions. For each table or column that is not there,\n"
    "    one line on stderr says what was skipped, for example\n"
    "        nvtxshim: convert: no OSRT_API table: OS runtime calls skipped ...\n"
    "    and one line lists the tables with rows that are not converted (CPU\n"
    "    samples, backtraces, the profiler's overhead, ...). An SQLite\n"
    "    database with none of the tables nsys export writes is refused. The\n"
    "    last line says what was written: the events of each kind, the launch\n"
    "    arrows, the thread names and how many ranges are async pairs.\n"
    "\n"
    "    nvtxshim report reads the result as it reads a trace file, leaving the\n"
    "    categories that are not NVTX out.\n"
    "\n"
    "OPTIONS\n"
    "    IN may be - for standard input, or a pipe: an SQLite export that comes\n"
    "    that way, or gzipped, is written to a temporary file for SQLite to\n"
    "    read. OUT.json may be - for stdout. An OUT whose name ends .gz is\n"
    "    written gzipped; nvtxshim report and Perfetto read it as it is.\n"
    "\n"
    "    --only KINDS\n"
    "        Writes the events of these kinds only, a comma list of the names\n"
    "        nCompass's converter uses: nvtx (NVTX ranges and marks),\n"
    "        nvtx-kernel (the NVTX projections), cuda-api (CUDA API calls),\n"
    "        kernel (GPU kernels, copies and memsets), osrt (OS runtime calls),\n"
    "        sched (thread states). The launch arrows go in when cuda-api and\n"
    "        kernel both do. Given twice, the lists add up. Default: all.\n"
    "\n"
    "    --nvtx-prefix P[,P...]\n"
    "        Keeps only the NVTX ranges and marks whose name starts with one of\n"
    "        these prefixes; only those ranges are projected onto the GPU.\n"
    "        Given twice, the lists add up.\n"
    "\n"
    "    --max-input SIZE\n"
    "        The most bytes IN may give once read from a pipe or decompressed\n"
    "        (bytes, or with k, M, G or T: 512M, 8G; default: no limit), as for\n"
    "        nvtxshim report; such an export goes to a temporary file first.\n"
    "\n"
    "    --help, -h\n"
    "        Print this page and exit.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   OUT.json was written (even when some tables were missing).\n"
    "    1   IN could not be read or is not an nsys export, nsys export failed,\n"
    "        or OUT could not be written (one line on stderr says why).\n"
    "    2   a usage error (an unknown --only kind among them).\n"
    "\n"
    "EXAMPLES\n"
    "    nsys export --type sqlite -o report.sqlite report.nsys-rep\n"
    "    nvtxshim convert report.sqlite report.json\n"
    "    nvtxshim convert build/demo/report.nsys-rep demo.json.gz\n"
    "    nvtxshim convert --only nvtx,nvtx-kernel --nvtx-prefix frame report.sqlite frames.json\n"
    "    nvtxshim convert report.sqlite - | python3 -m json.tool | less\n";

/* ---- async pairs: their ends, written when the events reach their time ---- */

struct pending_end {
    int64_t time;
    uint64_t id;
    const struct nvs_event *event;
};

/* A binary heap, earliest end first (of ends at one time, the first begun). */
struct pending_ends {
    struct pending_end *items;
    size_t count, capacity;
};

static bool earlier(const struct pending_end *a, const struct pending_end *b)
{
    return a->time != b->time ? a->time < b->time : a->id < b->id;
}

static bool pending_push(struct pending_ends *heap, struct pending_end end)
{
    struct pending_end *grown = nvs_room_for_one(heap->items, heap->count, &heap->capacity,
                                                 sizeof *grown, 256);
    if (!grown)
        return false;
    heap->items = grown;
    size_t at = heap->count++;
    for (; at && earlier(&end, &heap->items[(at - 1) / 2]); at = (at - 1) / 2)
        heap->items[at] = heap->items[(at - 1) / 2];
    heap->items[at] = end;
    return true;
}

static struct pending_end pending_pop(struct pending_ends *heap)
{
    struct pending_end first = heap->items[0], last = heap->items[--heap->count];
    size_t at = 0;
    for (size_t child = 1; child < heap->count; at = child, child = 2 * at + 1) {
        if (child + 1 < heap->count && earlier(&heap->items[child + 1], &heap->items[child]))
            child++;
        if (!earlier(&heap->items[child], &last))
            break;
        heap->items[at] = heap->items[child];
    }
    if (heap->count)
        heap->items[at] = last;
    return first;
}

/* The ends due at TIME or before. */
static void put_ends_until(struct nvs_chrome_writer *writer, struct pending_ends *ends,
                           int64_t time)
{
    while (ends->count && ends->items[0].time <= time) {
        struct pending_end end = pending_pop(ends);
        nvs_chrome_put_async(writer, end.event, true, end.id);
        free((void *)end.event); /* a held event's: its first member */
    }
}

/* ---- complete events nest on each row ------------------------------------- */

/* An event held until it is written (those that start together, an async
 * pair until its end): the stream's event, its strings and launches copied. */
struct held {
    struct nvs_event event;
    enum nvs_export_source source;
    int64_t rowid;
    const struct nvs_export_launch *launches;
    size_t launch_count;
    size_t place; /* among those that start together */
};

static struct held *hold(const struct nvs_export_event *item)
{
    const struct nvs_event *event = &item->event;
    size_t name = strlen(event->name) + 1, args = event->args ? strlen(event->args) + 1 : 0;
    size_t launches = item->launch_count * sizeof *item->launches;
    struct held *held = malloc(sizeof *held + launches + name + args);
    if (!held)
        return NULL;
    *held = (struct held){ .event = *event,
                           .source = item->source,
                           .rowid = item->rowid,
                           .launch_count = item->launch_count };
    char *bytes = (char *)(held + 1);
    if (launches) {
        memcpy(bytes, item->launches, launches);
        held->launches = (const struct nvs_export_launch *)bytes;
        bytes += launches;
    }
    held->event.name = memcpy(bytes, event->name, name);
    held->event.args = args ? memcpy(bytes + name, event->args, args) : NULL;
    return held;
}

/* The ends of the complete events open on a row, innermost last. */
struct row_stack {
    int64_t *ends;
    size_t depth, capacity;
};

static bool may_be_complete(const struct nvs_event *event)
{
    return event->kind != NVS_EVENT_MARK && !event->async;
}

/* By row; of two that start together (all of a group do) the longer first,
 * as it holds the other; then as the stream gave them. */
static int compare_on_row(const void *a, const void *b)
{
    const struct held *x = *(struct held *const *)a, *y = *(struct held *const *)b;
    if (x->event.pid != y->event.pid)
        return (x->event.pid > y->event.pid) - (x->event.pid < y->event.pid);
    if (x->event.tid != y->event.tid)
        return (x->event.tid > y->event.tid) - (x->event.tid < y->event.tid);
    if (nvs_chrome_range_end(&x->event) != nvs_chrome_range_end(&y->event))
        return (nvs_chrome_range_end(&x->event) < nvs_chrome_range_end(&y->event)) -
            (nvs_chrome_range_end(&x->event) > nvs_chrome_range_end(&y->event));
    return (x->place > y->place) - (x->place < y->place);
}

/* ---- the conversion: the export's events in time order, written as they come ---- */

struct converter {
    struct nvs_chrome_writer writer;
    struct nvs_export *export;
    bool dry;            /* the pass that finds the GPU work made async: nothing written */
    bool arrows;         /* launch arrows drawn (cuda-api and kernel kept) */
    struct held **group; /* the events that start at one time, in the stream's order */
    size_t group_count, group_capacity;
    struct held **sorted;
    size_t sorted_capacity;
    struct map rows; /* (pid, tid) -> its place in stacks */
    struct row_stack *stacks;
    size_t stack_count, stack_capacity;
    struct pending_ends ends;
    struct map flows; /* (source, rowid) of GPU work -> its arrow's id: "s" written, "f" not */
    struct map pids;  /* (pid, 0): the processes with events written */
    uint64_t next_id;
    size_t counts[NVS_EVENT_KINDS];
    size_t pairs, arrow_count, left_out;
    bool failed;
};

static struct row_stack *row_of(struct converter *converter, uint32_t pid, uint32_t tid)
{
    struct map_slot *slot = nvs_map_put(&converter->rows, pid, tid);
    if (!slot)
        return NULL;
    if (slot->value == SIZE_MAX) {
        struct row_stack *stacks = nvs_room_for_one(converter->stacks, converter->stack_count,
                                                    &converter->stack_capacity, sizeof *stacks, 64);
        if (!stacks)
            return NULL;
        converter->stacks = stacks;
        stacks[converter->stack_count] = (struct row_stack){ 0 };
        slot->value = converter->stack_count++;
    }
    return &converter->stacks[slot->value];
}

/* Makes async each range of the group that starts inside a complete event on
 * its row and ends after it: viewers show a row's complete events as a stack
 * and drop, or move aside, one that crosses another's end. With a stack of
 * the complete events open on each row, a range crosses when it ends after
 * the innermost one (those below it end later still). */
static bool decide_async(struct converter *converter)
{
    size_t count = 0;
    if (converter->group_count > converter->sorted_capacity) {
        struct held **grown = realloc(converter->sorted, converter->group_count * sizeof *grown);
        if (!grown)
            return false;
        converter->sorted = grown;
        converter->sorted_capacity = converter->group_count;
    }
    for (size_t i = 0; i < converter->group_count; i++)
        if (may_be_complete(&converter->group[i]->event))
            converter->sorted[count++] = converter->group[i];
    qsort(converter->sorted, count, sizeof *converter->sorted, compare_on_row);
    for (size_t k = 0; k < count; k++) {
        struct nvs_event *event = &converter->sorted[k]->event;
        struct row_stack *row = row_of(converter, event->pid, event->tid);
        if (!row)
            return false;
        while (row->depth && row->ends[row->depth - 1] <= event->start)
            row->depth--;
        if (row->depth && nvs_chrome_range_end(event) > row->ends[row->depth - 1]) {
            event->async = true;
            continue;
        }
        int64_t *ends = nvs_room_for_one(row->ends, row->depth, &row->capacity, sizeof *ends, 8);
        if (!ends)
            return false;
        row->ends = ends;
        ends[row->depth++] = nvs_chrome_range_end(event);
    }
    return true;
}

static bool is_gpu_work(enum nvs_event_kind kind)
{
    return kind == NVS_EVENT_GPU_KERNEL || kind == NVS_EVENT_GPU_COPY || kind == NVS_EVENT_GPU_SET;
}

/* The "s" of each launch of CALL (a CUDA API call just written) that can be
 * drawn, its id kept for the work's "f". */
static bool put_flow_starts(struct converter *converter, const struct held *call)
{
    for (size_t i = 0; i < call->launch_count; i++) {
        const struct nvs_export_launch *launch = &call->launches[i];
        if (call->event.async || launch->async || launch->start < call->event.start) {
            converter->left_out++;
            continue;
        }
        struct map_slot *slot = nvs_map_put(&converter->flows, (uint64_t)launch->source,
                                            (uint64_t)launch->rowid);
        if (!slot)
            return false;
        if (slot->value != SIZE_MAX)
            continue; /* the work is another call's too: its earliest call's arrow */
        slot->value = (size_t)converter->next_id;
        nvs_chrome_put_flow(&converter->writer, &call->event, false, converter->next_id++);
        converter->arrow_count++;
    }
    return true;
}

/* HELD written (or, in the dry pass, its GPU work marked when async); false
 * when out of memory. HELD is freed, or kept until its async end. */
static bool put_held(struct converter *converter, struct held *held)
{
    struct nvs_event *event = &held->event;
    struct nvs_chrome_writer *writer = &converter->writer;
    if (converter->dry) {
        bool ok = !(event->async && is_gpu_work(event->kind)) ||
            nvs_export_mark_async(converter->export, held->source, held->rowid) == 0;
        free(held);
        return ok;
    }
    put_ends_until(writer, &converter->ends, event->start);
    converter->counts[event->kind]++;
    if (!nvs_map_put(&converter->pids, event->pid, 0))
        return false;
    bool kept = false;
    if (event->kind == NVS_EVENT_MARK) {
        nvs_chrome_put_mark(writer, event);
    } else if (!event->async) {
        nvs_chrome_put_complete(writer, event);
    } else {
        nvs_chrome_put_async(writer, event, false, converter->next_id);
        if (!pending_push(
                &converter->ends,
                (struct pending_end){ nvs_chrome_range_end(event), converter->next_id, event }))
            return false;
        converter->next_id++;
        converter->pairs++;
        kept = true;
    }
    bool ok = true;
    if (converter->arrows && event->kind == NVS_EVENT_CUDA_API)
        ok = put_flow_starts(converter, held);
    if (converter->arrows && is_gpu_work(event->kind) && !event->async) {
        struct map_slot *slot = nvs_map_find(&converter->flows, (uint64_t)held->source,
                                             (uint64_t)held->rowid);
        if (slot) {
            nvs_chrome_put_flow(writer, event, true, slot->value);
            nvs_map_remove(&converter->flows, slot);
        }
    }
    if (!kept)
        free(held);
    return ok;
}

static bool put_group(struct converter *converter)
{
    bool ok = decide_async(converter);
    for (size_t i = 0; i < converter->group_count; i++) {
        if (ok)
            ok = put_held(converter, converter->group[i]);
        else
            free(converter->group[i]);
    }
    converter->group_count = 0;
    return ok && !converter->writer.failed;
}

/* A pass over the sources WANTED: each event written as it comes (those that
 * start together once all have come). 0, or -1 after a line. */
static int run_pass(struct converter *converter, unsigned wanted)
{
    if (nvs_export_begin(converter->export, wanted) != 0)
        return -1;
    struct nvs_export_event item;
    int got;
    bool ok = true;
    while (ok && (got = nvs_export_next(converter->export, &item)) > 0) {
        if (converter->group_count && item.event.start != converter->group[0]->event.start)
            ok = put_group(converter);
        struct held *held = ok ? hold(&item) : NULL;
        struct held **group = held ? nvs_room_for_one(converter->group, converter->group_count,
                                                      &converter->group_capacity, sizeof *group, 64)
                                   : NULL;
        if (!group) {
            free(held);
            ok = false;
            break;
        }
        converter->group = group;
        held->place = converter->group_count;
        group[converter->group_count++] = held;
    }
    if (ok && converter->group_count)
        ok = put_group(converter);
    for (size_t i = 0; i < converter->group_count; i++)
        free(converter->group[i]);
    converter->group_count = 0;
    for (size_t i = 0; i < converter->stack_count; i++)
        free(converter->stacks[i].ends);
    converter->stack_count = 0;
    nvs_map_free(&converter->rows);
    if (!ok) {
        if (got >= 0)
            fputs("nvtxshim: convert: out of memory\n", stderr);
        return -1;
    }
    return got < 0 ? -1 : 0;
}

/* The async ends still due, at the end. */
static void put_last_ends(struct converter *converter)
{
    while (converter->ends.count) {
        struct pending_end end = pending_pop(&converter->ends);
        nvs_chrome_put_async(&converter->writer, end.event, true, end.id);
        free((struct held *)end.event);
    }
}

static int compare_pids(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int compare_names(const void *a, const void *b)
{
    const struct nvs_thread_name *x = a, *y = b;
    if (x->pid != y->pid)
        return (x->pid > y->pid) - (x->pid < y->pid);
    return (x->tid > y->tid) - (x->tid < y->tid);
}

static const char *find_name(const struct nvs_thread_name *names, size_t count, uint32_t pid,
                             uint32_t tid)
{
    struct nvs_thread_name key = { pid, tid, NULL };
    const struct nvs_thread_name *found = count
        ? bsearch(&key, names, count, sizeof key, compare_names)
        : NULL;
    return found ? found->name : NULL;
}

/* The names of the processes with events written (PIDS), and of their
 * threads; how many thread names. */
static size_t put_names(struct nvs_chrome_writer *writer, const struct map *pid_set,
                        const struct nvs_events *events)
{
    uint32_t *pids = malloc((pid_set->used + 1) * sizeof *pids);
    struct nvs_thread_name *names = malloc((events->name_count + 1) * sizeof *names);
    if (!pids || !names) {
        free(pids);
        free(names);
        writer->failed = true;
        return 0;
    }
    size_t unique = 0;
    for (size_t i = 0; i < pid_set->slot_count; i++)
        if (pid_set->tags[i])
            pids[unique++] = (uint32_t)pid_set->slots[i].a;
    qsort(pids, unique, sizeof *pids, compare_pids);
    size_t count = events->name_count;
    if (count)
        memcpy(names, events->names, count * sizeof *names);
    qsort(names, count, sizeof *names, compare_names);
    size_t threads = 0;
    for (size_t p = 0; p < unique; p++) {
        const char *process = find_name(names, count, pids[p], 0);
        if (!process)
            process = find_name(names, count, pids[p], pids[p]); /* its main thread's */
        if (process)
            nvs_chrome_put_metadata(writer, "process_name", pids[p], pids[p], process);
    }
    for (size_t i = 0; i < count; i++)
        if (names[i].tid && bsearch(&names[i].pid, pids, unique, sizeof *pids, compare_pids)) {
            nvs_chrome_put_metadata(writer, "thread_name", names[i].pid, names[i].tid,
                                    names[i].name);
            threads++;
        }
    free(pids);
    free(names);
    return threads;
}

/* Out of memory: said, and 1. */
static int out_of_memory(void)
{
    fputs("nvtxshim: convert: out of memory\n", stderr);
    return 1;
}

/* The events are written first to a temporary file (unlinked at once): the
 * names of the processes with events go before them, and which those are is
 * known at the end. NULL with errno. */
static FILE *open_body(void)
{
    const char *directory = getenv("TMPDIR");
    char name[4096];
    snprintf(name, sizeof name, "%s/nvtxshim-convert-XXXXXX",
             directory && *directory ? directory : "/tmp");
    int fd = mkostemp(name, O_CLOEXEC);
    if (fd < 0)
        return NULL;
    unlink(name);
    FILE *body = fdopen(fd, "w+");
    if (!body) {
        int error = errno;
        close(fd);
        errno = error;
    }
    return body;
}

/* BODY (its events, each after ",\n") after the names, into OUT. False with errno. */
static bool put_body(struct nvs_chrome_writer *writer, FILE *body, size_t body_items)
{
    if (fflush(body) != 0 || fseek(body, writer->items ? 0 : 2, SEEK_SET) != 0)
        return false;
    static char chunk[1 << 16];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, body)) > 0)
        fwrite(chunk, 1, got, writer->out);
    if (ferror(body))
        return false;
    writer->items += body_items;
    return true;
}

struct conversion {
    const char *output;
    const struct nvs_filter *filter;
    int outcome;
};

/* The export's tables FILTER keeps (NVS_EXPORT_* bits); GPU, those of the GPU's work. */
static unsigned wanted_tables(const struct nvs_filter *filter, unsigned gpu)
{
    return (nvs_filter_keeps_kind(filter, NVS_EVENT_PROJECTION) ? 1u << NVS_EXPORT_PROJECTIONS
                                                                : 0) |
        (nvs_filter_keeps_kind(filter, NVS_EVENT_RANGE) ? 1u << NVS_EXPORT_NVTX : 0) |
        (nvs_filter_keeps_kind(filter, NVS_EVENT_OS_CALL) ? 1u << NVS_EXPORT_OSRT : 0) |
        (nvs_filter_keeps_kind(filter, NVS_EVENT_CUDA_API) ? 1u << NVS_EXPORT_API : 0) |
        (nvs_filter_keeps_kind(filter, NVS_EVENT_GPU_KERNEL) ? gpu : 0) |
        (nvs_filter_keeps_kind(filter, NVS_EVENT_THREAD_STATE) ? 1u << NVS_EXPORT_SCHED : 0);
}

/* The events, in time order, into a temporary file (*BODY, or NULL): 0, or -1
 * after its line. */
static int write_body(struct converter *converter, const struct nvs_filter *filter, FILE **body)
{
    bool projected = nvs_filter_keeps_kind(filter, NVS_EVENT_PROJECTION);
    unsigned gpu = 1u << NVS_EXPORT_KERNEL | 1u << NVS_EXPORT_COPY | 1u << NVS_EXPORT_SET;
    unsigned wanted = wanted_tables(filter, gpu);
    int status = projected ? nvs_export_project(converter->export) : 0;
    /* The GPU work that crosses another range on its row gets no arrow: found
     * first, so that each call's "s" can follow it. */
    if (status == 0 && converter->arrows) {
        converter->dry = true;
        status = run_pass(converter, gpu | (wanted & 1u << NVS_EXPORT_PROJECTIONS));
        converter->dry = false;
    }
    *body = status == 0 ? open_body() : NULL;
    if (status == 0 && !*body) {
        fprintf(stderr, "nvtxshim: convert: no temporary file for the events: %s\n",
                strerror(errno));
        status = -1;
    }
    static char body_buffer[1 << 20];
    if (*body) {
        setvbuf(*body, body_buffer, _IOFBF, sizeof body_buffer);
        __fsetlocking(*body, FSETLOCKING_BYCALLER);
    }
    converter->writer = (struct nvs_chrome_writer){
        .out = *body, .items = 1, .names = calloc(QUOTED_NAMES, sizeof(struct quoted_name))
    };
    if (status == 0)
        status = run_pass(converter, wanted);
    if (status == 0)
        put_last_ends(converter);
    return status;
}

/* OUT written whole: "[", the names of the processes and threads with events
 * (*THREADS of them), BODY's BODY_ITEMS events, "]". 0, or the error (an
 * errno). */
static int write_out(struct converter *converter, FILE *out, bool to_stdout, FILE *body,
                     size_t body_items, const struct nvs_events *names, size_t *threads)
{
    int error = 0;
    static char buffer[1 << 20];
    if (!to_stdout)
        setvbuf(out, buffer, _IOFBF, sizeof buffer);
    /* one thread writes: no lock a call (they took a tenth of the time) */
    __fsetlocking(out, FSETLOCKING_BYCALLER);
    converter->writer.out = out;
    converter->writer.items = 0;
    fputs("[\n", out);
    *threads = put_names(&converter->writer, &converter->pids, names);
    if (!put_body(&converter->writer, body, body_items))
        error = errno ? errno : EIO;
    /* the last event's comma becomes a space, as the recorder finishes a trace */
    fputs(converter->writer.items ? " \n]\n" : "]\n", out);
    if (converter->writer.failed)
        error = error ? error : ENOMEM;
    else if (ferror(out))
        error = error ? error : (errno ? errno : EIO);
    errno = 0;
    if (to_stdout ? fflush(stdout) != 0 : fclose(out) != 0)
        error = error ? error : (errno ? errno : EIO);
    return error;
}

/* What the converter holds, freed (its export is closed apart). */
static void converter_free(struct converter *converter)
{
    nvs_chrome_writer_free(&converter->writer);
    while (converter->ends.count)
        free((struct held *)pending_pop(&converter->ends).event);
    free(converter->ends.items);
    free(converter->group);
    free(converter->sorted);
    free(converter->stacks);
    nvs_map_free(&converter->flows);
    nvs_map_free(&converter->pids);
}

/* What was written to OUTPUT, and the launches left without an arrow
 * (UNFINISHED: without their work), on stderr. */
static void say_written(const struct converter *converter, const char *output, size_t threads,
                        size_t unfinished)
{
    if (converter->left_out)
        fprintf(
            stderr,
            "nvtxshim: convert: %zu launch%s without an arrow: the API call or the GPU work "
            "crosses another range on its row (written as an async pair, which a flow event cannot bind "
            "to), or the work starts before the call\n",
            converter->left_out, converter->left_out == 1 ? "" : "es");
    if (unfinished)
        fprintf(stderr,
                "nvtxshim: convert: %zu launch arrow%s without their GPU work: the export's work "
                "changed while it was read\n",
                unfinished, unfinished == 1 ? "" : "s");
    const size_t *counts = converter->counts;
    fprintf(
        stderr,
        "nvtxshim: convert: wrote %s: %zu NVTX ranges, %zu marks, %zu OS runtime calls, "
        "%zu CUDA API calls, %zu GPU kernels, %zu GPU copies, %zu memsets, %zu NVTX projections, "
        "%zu launch arrows, %zu thread states, %zu thread names; %zu of the ranges as async pairs "
        "(\"ph\":\"b\"/\"e\")\n",
        output, counts[NVS_EVENT_RANGE], counts[NVS_EVENT_MARK], counts[NVS_EVENT_OS_CALL],
        counts[NVS_EVENT_CUDA_API], counts[NVS_EVENT_GPU_KERNEL], counts[NVS_EVENT_GPU_COPY],
        counts[NVS_EVENT_GPU_SET], counts[NVS_EVENT_PROJECTION], converter->arrow_count,
        counts[NVS_EVENT_THREAD_STATE], threads, converter->pairs);
}

/* The export at DATABASE converted into OUTPUT (convert's nvs_load_options
 * read_export). */
static int convert_export(void *context, const char *database)
{
    struct conversion *conversion = context;
    const struct nvs_filter *filter = conversion->filter;
    const char *output = conversion->output;
    struct nvs_load_options options = {
        .command = "convert", .what = NVS_LOAD_EVERYTHING, .say_skipped = true, .exports_only = true
    };
    const struct nvs_events *names;
    struct nvs_export *export = nvs_export_open(
        database, &options, filter->prefix_count ? nvs_filter_keeps_nvtx_name : NULL,
        (void *)filter, &names);
    conversion->outcome = 1;
    if (!export)
        return -1;
    struct converter converter = { .export = export,
                                   .next_id = 1,
                                   .arrows = nvs_filter_keeps_kind(filter, NVS_EVENT_CUDA_API) &&
                                       nvs_filter_keeps_kind(filter, NVS_EVENT_GPU_KERNEL) };
    FILE *body;
    int status = write_body(&converter, filter, &body);
    bool to_stdout = strcmp(output, "-") == 0;
    size_t body_items = converter.writer.items - 1;
    bool failed = converter.writer.failed;
    int body_error = body && ferror(body) ? (errno ? errno : EIO) : 0;
    if (status == 0)
        nvs_export_say_left_out(export);
    /* the output: opened once the export was read */
    FILE *out = NULL;
    int error = 0;
    if (status == 0 && !failed && !body_error) {
        out = to_stdout ? stdout : nvs_chrome_open_output(output);
        if (!out) {
            fprintf(stderr, "nvtxshim: convert: cannot write %s: %s\n", output, strerror(errno));
            status = -1;
        }
    }
    size_t threads = 0;
    if (out) {
        error = write_out(&converter, out, to_stdout, body, body_items, names, &threads);
    } else if (status == 0) {
        error = body_error ? body_error : ENOMEM;
        if (failed)
            out_of_memory();
        else
            fprintf(stderr, "nvtxshim: convert: cannot write the events to a temporary file: %s\n",
                    strerror(body_error));
        status = -1;
    }
    if (body)
        fclose(body);
    size_t unfinished = converter.flows.used;
    converter_free(&converter);
    nvs_export_close(export);
    if (status != 0)
        return -1;
    if (error) {
        fprintf(stderr, "nvtxshim: convert: cannot write %s: %s\n", output, strerror(error));
        if (!to_stdout)
            unlink(output);
        return -1;
    }
    say_written(&converter, output, threads, unfinished);
    conversion->outcome = 0;
    return 0;
}

static int convert(const char *input, const char *output, uint64_t max_input,
                   const struct nvs_filter *filter)
{
    struct conversion conversion = { .output = output, .filter = filter, .outcome = 1 };
    struct nvs_load_options options = { .command = "convert",
                                        .what = NVS_LOAD_EVERYTHING,
                                        .say_skipped = true,
                                        .exports_only = true,
                                        .max_input = max_input,
                                        .read_export = convert_export,
                                        .export_context = &conversion };
    struct nvs_events events = { 0 };
    nvs_events_load(&events, input, &options);
    nvs_events_free(&events);
    return conversion.outcome;
}

static int usage_error(const char *format, const char *what)
{
    return nvs_option_usage_error("convert", format, what);
}

/* What convert's command line says. */
struct convert_line {
    const char *paths[2];
    int given;
    struct nvs_filter filter;
    uint64_t max_input;
};

enum { CONVERT_ONLY, CONVERT_NVTX_PREFIX, CONVERT_MAX_INPUT };

static const struct nvs_option convert_options[] = {
    { "only", 0, NVS_OPTION_VALUE, CONVERT_ONLY },
    { "nvtx-prefix", 0, NVS_OPTION_VALUE, CONVERT_NVTX_PREFIX },
    { "max-input", 0, NVS_OPTION_VALUE, CONVERT_MAX_INPUT },
    { "help", 'h', NVS_OPTION_FLAG, NVS_OPTION_HELP },
    { NULL, 0, 0, 0 },
};

static void convert_manual(void *context)
{
    (void)context;
    fputs(manual, stdout);
}

static int convert_option(void *context, int id, const char *value)
{
    struct convert_line *line = context;
    int status = 0;
    switch (id) {
    case CONVERT_ONLY:
        status = nvs_filter_each_item("--only", value, &line->filter, nvs_filter_add_only);
        break;
    case CONVERT_NVTX_PREFIX:
        status = nvs_filter_each_item("--nvtx-prefix", value, &line->filter, nvs_filter_add_prefix);
        break;
    case CONVERT_MAX_INPUT:
        if (!nvs_input_parse_size(value ? value : "", &line->max_input))
            status = usage_error(NVS_OPTION_MAX_INPUT_USAGE, value ? value : "");
        break;
    }
    return status ? status : -1;
}

static int convert_operand(void *context, const char *operand, bool after_dashes)
{
    struct convert_line *line = context;
    (void)after_dashes;
    if (line->given == 2)
        return usage_error("one input and one output: '%s' is one too many", operand);
    line->paths[line->given++] = operand;
    return -1;
}

static const struct nvs_command_line convert_command_line = {
    .command = "convert",
    .options = convert_options,
    .dashes = NVS_DASHES_END,
    .manual = convert_manual,
    .option = convert_option,
    .operand = convert_operand,
};

int nvs_cli_convert(int argc, char **argv)
{
    struct convert_line line = { 0 };
    int status = nvs_options_read(&convert_command_line, argc, argv, &line, NULL);
    if (status < 0 && line.given < 2)
        status = usage_error("%swhich files? nvtxshim convert IN.sqlite OUT.json", "");
    if (status < 0)
        status = convert(line.paths[0], line.paths[1], line.max_input, &line.filter);
    nvs_filter_free(&line.filter);
    return status;
}
