/* nvtxshim convert: an nsys SQLite export to the Chrome trace format that
 * NVTXSHIM_TRACE writes, so that a report opens in Perfetto or chrome://tracing
 * with no other tool. What the export lacks is said on stderr, one line each. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "commands.h"
#include "events.h"
#include "grow.h"
#include "input.h"
#include "load.h"
#include "launches.h"
#include "map.h"
#include "options.h"
#include "trace_json.h"

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

/* ---- output ------------------------------------------------------------------ */

/* The JSON form of an interned string (events.h: the same text is the same
 * pointer), made once: a file names each of its few hundred names thousands
 * of times. */
struct quoted_name {
    char *json;
    size_t length;
};

#define QUOTED_NAMES 3072              /* past so many, names are quoted each time */

struct writer {
    FILE *out;
    char *quoted;
    size_t quoted_size;
    struct quoted_name *names;       /* QUOTED_NAMES of them; NULL: none kept */
    size_t name_count;
    struct map by_text;              /* (text, 0) -> its place in names */
    size_t items;                    /* written so far: each after the first follows a comma */
    bool failed;
};

/* Each event on a line of its own that ends "},": the form NVTXSHIM_TRACE
 * writes (docs/user-guide.md: The trace file). */
static void begin_item(struct writer *writer)
{
    if (writer->items++)
        fputs(",\n", writer->out);
}

static void put_string(struct writer *writer, const char *text)
{
    size_t need = strlen(text) * 6 + 3;
    if (need > writer->quoted_size) {
        char *grown = realloc(writer->quoted, need);
        if (!grown) {
            writer->failed = true;
            return;
        }
        writer->quoted = grown;
        writer->quoted_size = need;
    }
    size_t length = nvs_json_quote(writer->quoted, writer->quoted_size, text);
    fwrite(writer->quoted, 1, length, writer->out);
}

/* put_string of an interned TEXT, quoted once. */
static void put_interned(struct writer *writer, const char *text)
{
    if (!writer->names) {
        put_string(writer, text);
        return;
    }
    struct map_slot *slot = nvs_map_find(&writer->by_text, (uint64_t)(uintptr_t)text, 0);
    if (slot) {
        const struct quoted_name *name = &writer->names[slot->value];
        fwrite(name->json, 1, name->length, writer->out);
        return;
    }
    size_t need = strlen(text) * 6 + 3;
    char *json = writer->name_count < QUOTED_NAMES ? malloc(need) : NULL;
    if (!json || !(slot = nvs_map_add(&writer->by_text, (uint64_t)(uintptr_t)text, 0))) {
        free(json);
        put_string(writer, text);
        return;
    }
    struct quoted_name *name = &writer->names[writer->name_count];
    *name = (struct quoted_name){json, nvs_json_quote(json, need, text)};
    slot->value = writer->name_count++;
    fwrite(name->json, 1, name->length, writer->out);
}

/* Nanoseconds as microseconds with three decimals, exactly. */
static void put_microseconds(struct writer *writer, int64_t nanoseconds)
{
    uint64_t magnitude = nanoseconds < 0 ? (uint64_t)0 - (uint64_t)nanoseconds : (uint64_t)nanoseconds;
    fprintf(writer->out, "%s%" PRIu64 ".%03" PRIu64, nanoseconds < 0 ? "-" : "", magnitude / 1000,
            magnitude % 1000);
}

static void put_metadata(struct writer *writer, const char *what, uint32_t pid, uint32_t tid,
                         const char *name)
{
    begin_item(writer);
    fprintf(writer->out, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
            ",\"args\":{\"name\":", what, pid, tid);
    put_string(writer, name);
    fputs("}}", writer->out);
}

/* A range's end: its start for one that ends before it starts (a viewer takes
 * no negative duration). */
static int64_t range_end(const struct nvs_event *event)
{
    return event->end > event->start ? event->end : event->start;
}

/* {"name":...,"cat":...,PHASE,"ts":TIME: how every event starts. */
static void put_head(struct writer *writer, const struct nvs_event *event, const char *phase, int64_t time)
{
    begin_item(writer);
    fputs("{\"name\":", writer->out);
    put_interned(writer, event->name);
    fputs(",\"cat\":", writer->out);
    put_interned(writer, event->domain);
    fprintf(writer->out, ",%s,\"ts\":", phase);
    put_microseconds(writer, time);
}

/* ,"pid":P,"tid":T and the args, when ARGS, then the closing brace. */
static void put_tail(struct writer *writer, uint32_t pid, uint32_t tid, const char *args)
{
    fprintf(writer->out, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, pid, tid);
    if (args && args[0])
        fprintf(writer->out, ",\"args\":{%s}", args);
    fputc('}', writer->out);
}

static void put_mark(struct writer *writer, const struct nvs_event *event)
{
    put_head(writer, event, "\"ph\":\"i\",\"s\":\"t\"", event->start);
    put_tail(writer, event->pid, event->tid, event->args);
}

static void put_complete(struct writer *writer, const struct nvs_event *event)
{
    put_head(writer, event, "\"ph\":\"X\"", event->start);
    fputs(",\"dur\":", writer->out);
    put_microseconds(writer, range_end(event) - event->start);
    put_tail(writer, event->pid, event->tid, event->args);
}

/* One half of an async pair, joined by (pid, cat, ID): the begin on the
 * thread that started the range, with its args; the end on the one that
 * ended it. */
static void put_async(struct writer *writer, const struct nvs_event *event, bool end, uint64_t id)
{
    put_head(writer, event, end ? "\"ph\":\"e\"" : "\"ph\":\"b\"", end ? range_end(event) : event->start);
    fprintf(writer->out, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"id\":%" PRIu64, event->pid,
            end && event->end_tid ? event->end_tid : event->tid, id);
    if (!end && event->args && event->args[0])
        fprintf(writer->out, ",\"args\":{%s}", event->args);
    fputc('}', writer->out);
}

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
    struct pending_end *grown = nvs_room_for_one(heap->items, heap->count, &heap->capacity, sizeof *grown, 256);
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
static void put_ends_until(struct writer *writer, struct pending_ends *ends, int64_t time)
{
    while (ends->count && ends->items[0].time <= time) {
        struct pending_end end = pending_pop(ends);
        put_async(writer, end.event, true, end.id);
    }
}

/* ---- launch arrows ------------------------------------------------------------ */

/* A launch drawn as a flow: from EVENTS[call]'s start on its thread to
 * EVENTS[work]'s start on its GPU row, joined by ID. */
struct arrow {
    size_t call, work;
    uint64_t id;
};

struct arrows {
    struct arrow *items;             /* by the work's place in the events */
    size_t *by_call;                 /* indices into items, by the call's place */
    size_t count;
    size_t left_out;                 /* launches without an arrow */
};

/* Launch arrows as flow events v1, the form the Trace Event Format describes
 * (chrome://tracing reads it, Perfetto too): "s" at the call's start on its
 * thread, "f" with "bp":"e" at the work's start on its GPU row. Perfetto's
 * JSON importer (json_trace_parser.cc, flow_tracker.cc) binds an "s" to the
 * innermost slice open on its thread's track when it reads the "s", and an
 * "f" with "bp":"e" the same way on its own track; an "f" without "bp" would
 * wait for the next slice to begin there (the next kernel, not this one).
 * Its sorter reads the events of one time complete events first, longest
 * first, then the rest in file order: by the time it reads a flow event, the
 * call's (the work's) slice has begun and is the innermost one open, unless a
 * shorter slice starts at the same nanosecond on that row. A v1 flow event
 * binds only on its thread's own track, never to an async pair (b/e), which
 * has a track of its own: a call or piece of work written as one gets no
 * arrow, nor does work that starts before its call (an "f" read before its
 * "s" finds no flow to end). Perfetto's v2 form (bind_id with flow_out and
 * flow_in on the slices themselves) would bind async pairs too; v1 is kept
 * as the form the format describes. Each "s" and "f" is written right after
 * its slice, so that readers that take the events of one time in file order
 * bind them alike. */
static void put_flow(struct writer *writer, const struct nvs_event *event, bool finish, uint64_t id)
{
    begin_item(writer);
    fprintf(writer->out, "{\"name\":\"launch\",\"cat\":\"cuda flow\",\"ph\":\"%s\",\"id\":%" PRIu64
            ",\"ts\":", finish ? "f\",\"bp\":\"e" : "s", id);
    put_microseconds(writer, event->start);
    fprintf(writer->out, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 "}", event->pid, event->tid);
}

static int compare_by_call(const void *a, const void *b, void *context)
{
    const struct arrow *items = context;
    const struct arrow *x = &items[*(const size_t *)a], *y = &items[*(const size_t *)b];
    if (x->call != y->call)
        return (x->call > y->call) - (x->call < y->call);
    return (x->work > y->work) - (x->work < y->work);
}

/* The launches in EVENTS (sorted, their crossing ranges made async) that
 * can be drawn, with ids from FIRST_ID on in the order their "s" events are
 * written. False when out of memory. */
static bool find_arrows(const struct nvs_events *events, uint64_t first_id, struct arrows *arrows)
{
    struct nvs_launch *launches;
    size_t count;
    memset(arrows, 0, sizeof *arrows);
    if (nvs_launches_find(events, &launches, &count) != 0)
        return false;
    arrows->items = malloc((count + 1) * sizeof *arrows->items);
    arrows->by_call = malloc((count + 1) * sizeof *arrows->by_call);
    if (!arrows->items || !arrows->by_call) {
        free(launches);
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        const struct nvs_event *call = &events->events[launches[i].call];
        const struct nvs_event *work = &events->events[launches[i].work];
        if (call->async || work->async || launches[i].work < launches[i].call) {
            arrows->left_out++;
            continue;
        }
        arrows->by_call[arrows->count] = arrows->count;
        arrows->items[arrows->count++] = (struct arrow){launches[i].call, launches[i].work, 0};
    }
    free(launches);
    qsort_r(arrows->by_call, arrows->count, sizeof *arrows->by_call, compare_by_call, arrows->items);
    for (size_t i = 0; i < arrows->count; i++)
        arrows->items[arrows->by_call[i]].id = first_id + i;
    return true;
}

/* The events (sorted by start), each async pair's end among them at its time,
 * so that the file is in time order, and the ARROWS' flow events after
 * their slices; COUNTS per kind. */
static void put_events(struct writer *writer, const struct nvs_events *events, const struct arrows *arrows,
                         size_t *counts)
{
    struct pending_ends ends = {0};
    uint64_t next_id = 1;
    size_t next_call = 0, next_work = 0;
    for (size_t i = 0; i < events->count && !writer->failed; i++) {
        const struct nvs_event *event = &events->events[i];
        put_ends_until(writer, &ends, event->start);
        counts[event->kind]++;
        if (event->kind == NVS_EVENT_MARK) {
            put_mark(writer, event);
        } else if (!event->async) {
            put_complete(writer, event);
        } else {
            put_async(writer, event, false, next_id);
            if (!pending_push(&ends, (struct pending_end){range_end(event), next_id, event}))
                writer->failed = true;
            next_id++;
        }
        for (; next_call < arrows->count && arrows->items[arrows->by_call[next_call]].call == i; next_call++)
            put_flow(writer, event, false, arrows->items[arrows->by_call[next_call]].id);
        for (; next_work < arrows->count && arrows->items[next_work].work == i; next_work++)
            put_flow(writer, event, true, arrows->items[next_work].id);
    }
    put_ends_until(writer, &ends, INT64_MAX);
    free(ends.items);
}

/* ---- complete events nest on each thread ----------------------------------- */

static bool may_be_complete(const struct nvs_event *event)
{
    return event->kind != NVS_EVENT_MARK && !event->async;
}

/* By thread, then by start; of two that start together the longer first, as
 * it holds the other. */
static int compare_on_thread(const void *a, const void *b, void *context)
{
    const struct nvs_event *events = context;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    const struct nvs_event *x = &events[i], *y = &events[j];
    if (x->pid != y->pid)
        return (x->pid > y->pid) - (x->pid < y->pid);
    if (x->tid != y->tid)
        return (x->tid > y->tid) - (x->tid < y->tid);
    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    if (range_end(x) != range_end(y))
        return (range_end(x) < range_end(y)) - (range_end(x) > range_end(y));
    return (i > j) - (i < j);
}

/* Makes async each range that starts inside a complete event on its thread
 * and ends after it: viewers show a thread's complete events as a stack and
 * drop, or move aside, one that crosses another's end. Through each thread's
 * ranges by start, with a stack of the complete events open, a range crosses
 * when it ends after the innermost one (those below it end later still).
 * False when out of memory. */
static bool make_crossing_ranges_async(struct nvs_events *events)
{
    size_t count = 0;
    for (size_t i = 0; i < events->count; i++)
        count += may_be_complete(&events->events[i]);
    size_t *order = malloc((count + 1) * sizeof *order);
    int64_t *open_ends = malloc((count + 1) * sizeof *open_ends);
    if (!order || !open_ends) {
        free(order);
        free(open_ends);
        return false;
    }
    count = 0;
    for (size_t i = 0; i < events->count; i++)
        if (may_be_complete(&events->events[i]))
            order[count++] = i;
    qsort_r(order, count, sizeof *order, compare_on_thread, events->events);
    size_t depth = 0;
    for (size_t k = 0; k < count; k++) {
        struct nvs_event *event = &events->events[order[k]];
        const struct nvs_event *previous = k ? &events->events[order[k - 1]] : NULL;
        if (previous && (previous->pid != event->pid || previous->tid != event->tid))
            depth = 0;
        while (depth && open_ends[depth - 1] <= event->start)
            depth--;
        if (depth && range_end(event) > open_ends[depth - 1])
            event->async = true;
        else
            open_ends[depth++] = range_end(event);
    }
    free(order);
    free(open_ends);
    return true;
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

static const char *find_name(const struct nvs_events *events, uint32_t pid, uint32_t tid)
{
    struct nvs_thread_name key = {pid, tid, NULL};
    const struct nvs_thread_name *found =
        events->name_count ? bsearch(&key, events->names, events->name_count, sizeof key, compare_names) : NULL;
    return found ? found->name : NULL;
}

/* The names of the processes that have events, and of their threads. */
static size_t put_names(struct writer *writer, struct nvs_events *events)
{
    uint32_t *pids = malloc((events->count + 1) * sizeof *pids);
    if (!pids) {
        writer->failed = true;
        return 0;
    }
    size_t count = 0;
    for (size_t i = 0; i < events->count; i++)
        if (!count || pids[count - 1] != events->events[i].pid)
            pids[count++] = events->events[i].pid;
    qsort(pids, count, sizeof *pids, compare_pids);
    size_t unique = 0;
    for (size_t i = 0; i < count; i++)
        if (!unique || pids[unique - 1] != pids[i])
            pids[unique++] = pids[i];
    if (events->name_count)
        qsort(events->names, events->name_count, sizeof *events->names, compare_names);
    size_t threads = 0;
    for (size_t p = 0; p < unique; p++) {
        const char *process = find_name(events, pids[p], 0);
        if (!process)
            process = find_name(events, pids[p], pids[p]); /* its main thread's */
        if (process)
            put_metadata(writer, "process_name", pids[p], pids[p], process);
    }
    for (size_t i = 0; i < events->name_count; i++) {
        const struct nvs_thread_name *name = &events->names[i];
        if (name->tid && bsearch(&name->pid, pids, unique, sizeof *pids, compare_pids)) {
            put_metadata(writer, "thread_name", name->pid, name->tid, name->name);
            threads++;
        }
    }
    free(pids);
    return threads;
}

/* ---- what is kept: --only and --nvtx-prefix ------------------------------------ */

/* --only's names, nCompass's converter's, and the kinds each keeps. */
static const struct {
    const char *name;
    enum nvs_event_kind kinds[3];
    size_t count;
} only_names[] = {
    {"nvtx", {NVS_EVENT_RANGE, NVS_EVENT_MARK}, 2},
    {"nvtx-kernel", {NVS_EVENT_PROJECTION}, 1},
    {"cuda-api", {NVS_EVENT_CUDA_API}, 1},
    {"kernel", {NVS_EVENT_GPU_KERNEL, NVS_EVENT_GPU_COPY, NVS_EVENT_GPU_SET}, 3},
    {"osrt", {NVS_EVENT_OS_CALL}, 1},
    {"sched", {NVS_EVENT_THREAD_STATE}, 1},
};
#define ONLY_NAMES (sizeof only_names / sizeof only_names[0])

struct filter {
    bool only;                       /* --only given: KEEP says what is kept */
    bool keep[NVS_EVENT_KINDS];
    char **prefixes;                 /* --nvtx-prefix's, each a copy */
    size_t prefix_count;
};

static int usage_error(const char *format, const char *what)
{
    return nvs_option_usage_error("convert", format, what);
}

/* VALUE's comma list, each item LENGTH bytes at ITEM, given to ADD; the
 * first usage error's status, or 0. */
static int each_item(const char *option, const char *value, struct filter *filter,
                     int (*add)(struct filter *, const char *item, size_t length))
{
    if (!value)
        return usage_error("%s needs a value", option);
    for (const char *item = value;; item++) {
        size_t length = strcspn(item, ",");
        if (!length) {
            char message[160];
            snprintf(message, sizeof message, "%s: an empty item in '%.100s'", option, value);
            return usage_error("%s", message);
        }
        int status = add(filter, item, length);
        if (status)
            return status;
        item += length;
        if (!*item)
            return 0;
    }
}

static int add_only(struct filter *filter, const char *item, size_t length)
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
    return usage_error("%s", message);
}

static int add_prefix(struct filter *filter, const char *item, size_t length)
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

static void filter_free(struct filter *filter)
{
    for (size_t i = 0; i < filter->prefix_count; i++)
        free(filter->prefixes[i]);
    free(filter->prefixes);
}

static bool keeps_kind(const struct filter *filter, enum nvs_event_kind kind)
{
    return !filter->only || filter->keep[kind];
}

/* Whether --nvtx-prefix keeps EVENT: any event not NVTX, and NVTX ranges and
 * marks whose name starts with a prefix. */
static bool keeps_name(const struct filter *filter, const struct nvs_event *event)
{
    if (!filter->prefix_count || (event->kind != NVS_EVENT_RANGE && event->kind != NVS_EVENT_MARK))
        return true;
    for (size_t i = 0; i < filter->prefix_count; i++)
        if (strncmp(event->name, filter->prefixes[i], strlen(filter->prefixes[i])) == 0)
            return true;
    return false;
}

/* The events of the kinds kept, after FIRST (COUNT of them: the projections).
 * Of a projection and its first piece of work, which start together, the
 * projection holds the work: first in the array, it stays first when the
 * events are sorted by start (the sort keeps the order of those that start
 * together), as viewers read slices that start together and last as long.
 * False when out of memory. */
static bool keep_kinds(struct nvs_events *events, const struct filter *filter, const struct nvs_event *first,
                       size_t count)
{
    size_t room = count + events->count + 1;
    struct nvs_event *kept = malloc(room * sizeof *kept);
    if (!kept)
        return false;
    if (count)                       /* FIRST is NULL when there are none */
        memcpy(kept, first, count * sizeof *kept);
    size_t total = count;
    for (size_t i = 0; i < events->count; i++)
        if (keeps_kind(filter, events->events[i].kind))
            kept[total++] = events->events[i];
    free(events->events);
    events->events = kept;
    events->count = total;
    events->capacity = room;
    return true;
}

/* ---- gzip: OUT.gz through stdio, so that the writer is the same ---------------- */

static ssize_t gzip_write(void *cookie, const char *bytes, size_t size)
{
    size_t done = 0;
    while (done < size) {
        unsigned piece = size - done > (1u << 30) ? 1u << 30 : (unsigned)(size - done);
        int written = gzwrite(cookie, bytes + done, piece);
        if (written <= 0)
            break;
        done += (size_t)written;
    }
    return (ssize_t)done;            /* short: stdio sets the stream's error */
}

static int gzip_close(void *cookie)
{
    int status = gzclose(cookie);
    if (status == Z_OK)
        return 0;
    if (status != Z_ERRNO)
        errno = status == Z_MEM_ERROR ? ENOMEM : EIO;
    return EOF;
}

/* PATH opened for writing, gzipped when its name ends .gz; NULL with errno. */
static FILE *open_output(const char *path)
{
    size_t length = strlen(path);
    if (length < 3 || strcmp(path + length - 3, ".gz") != 0)
        return fopen(path, "w");
    errno = 0;
    /* Level 1: on the bench's harness export, 8 times smaller than the JSON for
     * +40% of convert's time; level 6 (zlib's default) is another quarter
     * smaller for +130%. */
    gzFile file = gzopen(path, "wb1");
    if (!file) {
        errno = errno ? errno : ENOMEM;
        return NULL;
    }
    gzbuffer(file, 1 << 18);
    FILE *out = fopencookie(file, "w", (cookie_io_functions_t){.write = gzip_write, .close = gzip_close});
    if (!out) {
        int error = errno;
        gzclose(file);
        unlink(path);
        errno = error;
    }
    return out;
}

/* Out of memory: said, and 1. */
static int out_of_memory(void)
{
    fputs("nvtxshim: convert: out of memory\n", stderr);
    return 1;
}

/* The events of INPUT that FILTER keeps, made ready to write: sorted, the
 * crossing ranges async, the projections made; false after a message. */
static bool prepare_events(struct nvs_events *events, const char *input, uint64_t max_input,
                           const struct filter *filter)
{
    struct nvs_load_options options = {.command = "convert", .what = NVS_LOAD_EVERYTHING,
                                       .say_skipped = true, .exports_only = true,
                                       .max_input = max_input};
    if (nvs_events_load(events, input, &options) != 0)
        return false;
    /* The names first: only the ranges kept are projected. */
    size_t kept = 0;
    for (size_t i = 0; i < events->count; i++)
        if (keeps_name(filter, &events->events[i]))
            events->events[kept++] = events->events[i];
    events->count = kept;
    struct nvs_event *projections = NULL;
    size_t projection_count = 0;
    if (keeps_kind(filter, NVS_EVENT_PROJECTION) &&
        nvs_launches_project(events, &projections, &projection_count) != 0) {
        out_of_memory();
        return false;
    }
    bool ok = keep_kinds(events, filter, projections, projection_count);
    free(projections);
    nvs_events_sort(events);
    if (!ok || !make_crossing_ranges_async(events)) {
        out_of_memory();
        return false;
    }
    return true;
}

static int convert(const char *input, const char *output, uint64_t max_input,
                   const struct filter *filter)
{
    struct nvs_events events = {0};
    if (!prepare_events(&events, input, max_input, filter)) {
        nvs_events_free(&events);
        return 1;
    }
    /* The arrows' ids follow the async pairs' (1 on), so that every id in the file is its own. */
    size_t pairs = 0;
    for (size_t i = 0; i < events.count; i++)
        pairs += events.events[i].async && events.events[i].kind != NVS_EVENT_MARK;
    struct arrows arrows = {0};
    if (keeps_kind(filter, NVS_EVENT_CUDA_API) && keeps_kind(filter, NVS_EVENT_GPU_KERNEL) &&
        !find_arrows(&events, pairs + 1, &arrows)) {
        free(arrows.items);
        free(arrows.by_call);
        nvs_events_free(&events);
        return out_of_memory();
    }

    bool to_stdout = strcmp(output, "-") == 0;
    struct writer writer = {.out = to_stdout ? stdout : open_output(output),
                            .names = calloc(QUOTED_NAMES, sizeof(struct quoted_name))};
    if (!writer.out) {
        fprintf(stderr, "nvtxshim: convert: cannot write %s: %s\n", output, strerror(errno));
        free(writer.names);
        free(arrows.items);
        free(arrows.by_call);
        nvs_events_free(&events);
        return 1;
    }
    static char buffer[1 << 20];
    if (!to_stdout)
        setvbuf(writer.out, buffer, _IOFBF, sizeof buffer);
    /* one thread writes: no lock a call (they took a tenth of the time) */
    __fsetlocking(writer.out, FSETLOCKING_BYCALLER);
    fputs("[\n", writer.out);
    size_t threads = put_names(&writer, &events);
    size_t counts[NVS_EVENT_KINDS] = {0};
    put_events(&writer, &events, &arrows, counts);
    /* the last event's comma becomes a space, as the recorder finishes a trace */
    fputs(writer.items ? " \n]\n" : "]\n", writer.out);
    int error = 0;
    if (writer.failed)
        error = ENOMEM;
    else if (ferror(writer.out))
        error = errno ? errno : EIO;
    errno = 0;
    if (to_stdout ? fflush(stdout) != 0 : fclose(writer.out) != 0)
        error = error ? error : (errno ? errno : EIO);
    free(writer.quoted);
    for (size_t i = 0; i < writer.name_count; i++)
        free(writer.names[i].json);
    free(writer.names);
    nvs_map_free(&writer.by_text);
    free(arrows.items);
    free(arrows.by_call);
    if (error) {
        fprintf(stderr, "nvtxshim: convert: cannot write %s: %s\n", output, strerror(error));
        if (!to_stdout)
            unlink(output);
        nvs_events_free(&events);
        return 1;
    }
    if (arrows.left_out)
        fprintf(stderr, "nvtxshim: convert: %zu launch%s without an arrow: the API call or the GPU work "
                "crosses another range on its row (written as an async pair, which a flow event cannot bind "
                "to), or the work starts before the call\n", arrows.left_out, arrows.left_out == 1 ? "" : "es");
    fprintf(stderr, "nvtxshim: convert: wrote %s: %zu NVTX ranges, %zu marks, %zu OS runtime calls, "
            "%zu CUDA API calls, %zu GPU kernels, %zu GPU copies, %zu memsets, %zu NVTX projections, "
            "%zu launch arrows, %zu thread states, %zu thread names; %zu of the ranges as async pairs "
            "(\"ph\":\"b\"/\"e\")\n", output,
            counts[NVS_EVENT_RANGE], counts[NVS_EVENT_MARK], counts[NVS_EVENT_OS_CALL],
            counts[NVS_EVENT_CUDA_API], counts[NVS_EVENT_GPU_KERNEL], counts[NVS_EVENT_GPU_COPY],
            counts[NVS_EVENT_GPU_SET], counts[NVS_EVENT_PROJECTION], arrows.count,
            counts[NVS_EVENT_THREAD_STATE], threads, pairs);
    nvs_events_free(&events);
    return 0;
}

int nvs_cli_convert(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL};
    int given = 0;
    if (nvs_option_help(argc, argv)) {
        fputs(manual, stdout);
        return 0;
    }
    struct filter filter = {0};
    uint64_t max_input = 0;
    bool options_end = false;
    for (int i = 1; i < argc; i++) {
        const char *argument = argv[i], *value;
        int status = 0;
        if (!options_end && strcmp(argument, "--") == 0) {
            options_end = true;
        } else if (!options_end && (strcmp(argument, "--only") == 0 || strncmp(argument, "--only=", 7) == 0)) {
            status = each_item("--only", argument[6] ? argument + 7 : (i + 1 < argc ? argv[++i] : NULL),
                               &filter, add_only);
        } else if (!options_end && (strcmp(argument, "--nvtx-prefix") == 0 ||
                                    strncmp(argument, "--nvtx-prefix=", 14) == 0)) {
            status = each_item("--nvtx-prefix", argument[13] ? argument + 14 : (i + 1 < argc ? argv[++i] : NULL),
                               &filter, add_prefix);
        } else if (!options_end && (value = nvs_option_value("--max-input", argc, argv, &i))) {
            if (!nvs_input_parse_size(value, &max_input))
                status = usage_error(NVS_OPTION_MAX_INPUT_USAGE, value);
        } else if (!options_end && argument[0] == '-' && argument[1]) {
            status = usage_error("unknown option %s", argument);
        } else if (given < 2) {
            paths[given++] = argument;
        } else {
            status = usage_error("one input and one output: '%s' is one too many", argument);
        }
        if (status) {
            filter_free(&filter);
            return status;
        }
    }
    if (given < 2) {
        filter_free(&filter);
        return usage_error("%swhich files? nvtxshim convert IN.sqlite OUT.json", "");
    }
    const char *input = paths[0], *output = paths[1];
    int outcome = convert(input, output, max_input, &filter);
    filter_free(&filter);
    return outcome;
}
