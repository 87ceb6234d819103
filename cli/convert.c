/* nvtxshim convert: an nsys SQLite export to the Chrome trace format that
 * NVTXSHIM_TRACE writes, so that a report opens in Perfetto or chrome://tracing
 * with no other tool. What the export lacks is said on stderr, one line each. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "commands.h"
#include "events.h"
#include "trace_json.h"

static const char manual[] =
    "NAME\n"
    "    nvtxshim convert - an nsys export as a trace for Perfetto or chrome://tracing\n"
    "\n"
    "SYNOPSIS\n"
    "    nvtxshim convert IN.sqlite OUT.json\n"
    "    nvtxshim convert IN.nsys-rep OUT.json.gz\n"
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
    "    call or GPU work) that starts inside a complete event of its thread\n"
    "    and ends after it. So complete events nest on each thread, as viewers\n"
    "    need them to.\n"
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
    "    CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY, _MEMSET\n"
    "                    GPU work (-t cuda), categories \"cuda kernel\",\n"
    "                    \"cuda memcpy\", \"cuda memset\", in the process that\n"
    "                    issued it, on one row per device and stream (named\n"
    "                    \"CUDA stream S (device D)\").\n"
    "    ThreadNames, PROCESSES\n"
    "                    thread and process names (\"ph\":\"M\"), for the\n"
    "                    processes that have events.\n"
    "\n"
    "    The export's schema is read, not assumed: tables and columns differ\n"
    "    between nsys versions. For each table or column that is not there,\n"
    "    one line on stderr says what was skipped, for example\n"
    "        nvtxshim: convert: no OSRT_API table: OS runtime calls skipped ...\n"
    "    and one line lists the tables with rows that are not converted (CPU\n"
    "    samples, backtraces, the profiler's overhead, ...). The last line says\n"
    "    what was written.\n"
    "\n"
    "    nvtxshim report reads the result as it reads a trace file, leaving the\n"
    "    categories that are not NVTX out.\n"
    "\n"
    "OPTIONS\n"
    "    OUT.json may be - for stdout. An OUT whose name ends .gz is written\n"
    "    gzipped; nvtxshim report and Perfetto read it as it is.\n"
    "\n"
    "    --help, -h\n"
    "        Print this page and exit.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   OUT.json was written (even when some tables were missing).\n"
    "    1   IN could not be read or is not an nsys export, nsys export failed,\n"
    "        or OUT could not be written (one line on stderr says why).\n"
    "    2   a usage error.\n"
    "\n"
    "EXAMPLES\n"
    "    nsys export --type sqlite -o report.sqlite report.nsys-rep\n"
    "    nvtxshim convert report.sqlite report.json\n"
    "    nvtxshim convert build/demo/report.nsys-rep demo.json.gz\n"
    "    nvtxshim convert report.sqlite - | python3 -m json.tool | less\n";

/* ---- output ------------------------------------------------------------------ */

struct writer {
    FILE *out;
    char *quoted;
    size_t quoted_size;
    size_t items;                    /* written so far: each after the first follows a comma */
    bool failed;
};

/* Each event on a line of its own that ends "},": the form NVTXSHIM_TRACE
 * writes (README: The trace file). */
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
    put_string(writer, event->name);
    fputs(",\"cat\":", writer->out);
    put_string(writer, event->domain);
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
    if (heap->count == heap->capacity) {
        size_t capacity = heap->capacity ? heap->capacity * 2 : 256;
        struct pending_end *grown = realloc(heap->items, capacity * sizeof *grown);
        if (!grown)
            return false;
        heap->items = grown;
        heap->capacity = capacity;
    }
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

/* The events (sorted by start), each async pair's end among them at its time,
 * so that the file is in time order; COUNTS per kind. Returns the pairs. */
static size_t put_events(struct writer *writer, const struct nvs_events *events, size_t *counts)
{
    struct pending_ends ends = {0};
    uint64_t next_id = 1;
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
    }
    put_ends_until(writer, &ends, INT64_MAX);
    free(ends.items);
    return (size_t)(next_id - 1);
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

static int usage_error(const char *format, const char *what)
{
    fputs("nvtxshim: convert: ", stderr);
    fprintf(stderr, format, what);
    fputs(" (nvtxshim convert --help)\n", stderr);
    return 2;
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
    gzFile file = gzopen(path, "wb");
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

int nvs_cli_convert(int argc, char **argv)
{
    const char *paths[2] = {NULL, NULL};
    int given = 0;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(manual, stdout);
            return 0;
        }
    bool options_end = false;
    for (int i = 1; i < argc; i++) {
        const char *argument = argv[i];
        if (!options_end && strcmp(argument, "--") == 0) {
            options_end = true;
        } else if (!options_end && argument[0] == '-' && argument[1]) {
            return usage_error("unknown option %s", argument);
        } else if (given < 2) {
            paths[given++] = argument;
        } else {
            return usage_error("one input and one output: '%s' is one too many", argument);
        }
    }
    if (given < 2)
        return usage_error("%swhich files? nvtxshim convert IN.sqlite OUT.json", "");
    const char *input = paths[0], *output = paths[1];

    switch (nvs_events_file_kind(input)) {
    case NVS_FILE_UNREADABLE:
        fprintf(stderr, "nvtxshim: convert: cannot read %s: %s\n", input, strerror(errno));
        return 1;
    case NVS_FILE_TRACE:
        fprintf(stderr, "nvtxshim: convert: %s is not an nsys export (an SQLite file from nsys export "
                "--type sqlite, or a .nsys-rep report)\n", input);
        return 1;
    default:
        break;
    }
    struct nvs_events events = {0};
    struct nvs_load_options options = {.command = "convert", .what = NVS_LOAD_EVERYTHING, .say_skipped = true};
    if (nvs_events_load(&events, input, &options) != 0) {
        nvs_events_free(&events);
        return 1;
    }
    nvs_events_sort(&events);
    if (!make_crossing_ranges_async(&events)) {
        fputs("nvtxshim: convert: out of memory\n", stderr);
        nvs_events_free(&events);
        return 1;
    }

    bool to_stdout = strcmp(output, "-") == 0;
    struct writer writer = {.out = to_stdout ? stdout : open_output(output)};
    if (!writer.out) {
        fprintf(stderr, "nvtxshim: convert: cannot write %s: %s\n", output, strerror(errno));
        nvs_events_free(&events);
        return 1;
    }
    static char buffer[1 << 20];
    if (!to_stdout)
        setvbuf(writer.out, buffer, _IOFBF, sizeof buffer);
    fputs("[\n", writer.out);
    size_t threads = put_names(&writer, &events);
    size_t counts[NVS_EVENT_GPU_SET + 1] = {0};
    size_t pairs = put_events(&writer, &events, counts);
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
    if (error) {
        fprintf(stderr, "nvtxshim: convert: cannot write %s: %s\n", output, strerror(error));
        if (!to_stdout)
            unlink(output);
        nvs_events_free(&events);
        return 1;
    }
    fprintf(stderr, "nvtxshim: convert: wrote %s: %zu NVTX ranges, %zu marks, %zu OS runtime calls, "
            "%zu GPU kernels, %zu GPU copies, %zu memsets, %zu thread names; %zu of the ranges as async "
            "pairs (\"ph\":\"b\"/\"e\")\n", output,
            counts[NVS_EVENT_RANGE], counts[NVS_EVENT_MARK], counts[NVS_EVENT_OS_CALL],
            counts[NVS_EVENT_GPU_KERNEL], counts[NVS_EVENT_GPU_COPY], counts[NVS_EVENT_GPU_SET], threads,
            pairs);
    nvs_events_free(&events);
    return 0;
}
