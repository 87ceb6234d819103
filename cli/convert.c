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

#include "commands.h"
#include "events.h"
#include "trace_json.h"

static const char manual[] =
    "NAME\n"
    "    nvtxshim convert - an nsys export as a trace for Perfetto or chrome://tracing\n"
    "\n"
    "SYNOPSIS\n"
    "    nvtxshim convert IN.sqlite OUT.json\n"
    "    nvtxshim convert IN.nsys-rep OUT.json\n"
    "    nvtxshim convert --help\n"
    "\n"
    "DESCRIPTION\n"
    "    Writes the events of an Nsight Systems SQLite export (nsys export --type\n"
    "    sqlite) as Chrome Trace Event Format JSON, the format NVTXSHIM_TRACE\n"
    "    writes: {\"traceEvents\":[...]}, which https://ui.perfetto.dev and\n"
    "    chrome://tracing open. Given a report (.nsys-rep), it is exported first,\n"
    "    as nvtxshim report does. Timestamps (ts, dur) are in microseconds on\n"
    "    nsys's clock (from the start of the session); pid and tid come from\n"
    "    nsys's global thread ids. Events are written in time order, after the\n"
    "    process and thread names.\n"
    "\n"
    "    What goes in, from each table of the export that is there:\n"
    "\n"
    "    NVTX_EVENTS     ranges (push/pop and start/end) as complete events\n"
    "                    (\"ph\":\"X\") with the domain as category (\"default\"\n"
    "                    for none) and args category and payload; a start/end\n"
    "                    range is on the thread that started it. Marks as\n"
    "                    \"ph\":\"i\" with their colour. Thread names given\n"
    "                    with NVTX name their threads. Ranges never closed\n"
    "                    are left out.\n"
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
    "    OUT.json may be - for stdout.\n"
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
    "    nvtxshim convert build/demo/report.nsys-rep demo.json\n"
    "    nvtxshim convert report.sqlite - | python3 -m json.tool | less\n";

/* ---- output ------------------------------------------------------------------ */

struct writer {
    FILE *out;
    char *quoted;
    size_t quoted_size;
    size_t items;                    /* written so far: each after the first follows a comma */
    bool failed;
};

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

static void put_event(struct writer *writer, const struct nvs_event *event)
{
    FILE *out = writer->out;
    bool mark = event->kind == NVS_EVENT_MARK;
    begin_item(writer);
    fputs("{\"name\":", out);
    put_string(writer, event->name);
    fputs(",\"cat\":", out);
    put_string(writer, event->domain);
    fputs(mark ? ",\"ph\":\"i\",\"s\":\"t\",\"ts\":" : ",\"ph\":\"X\",\"ts\":", out);
    put_microseconds(writer, event->start);
    if (!mark) {
        fputs(",\"dur\":", out);
        put_microseconds(writer, event->end > event->start ? event->end - event->start : 0);
    }
    fprintf(out, ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, event->pid, event->tid);
    if (event->args && event->args[0])
        fprintf(out, ",\"args\":{%s}", event->args);
    fputc('}', out);
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

    bool to_stdout = strcmp(output, "-") == 0;
    struct writer writer = {.out = to_stdout ? stdout : fopen(output, "w")};
    if (!writer.out) {
        fprintf(stderr, "nvtxshim: convert: cannot write %s: %s\n", output, strerror(errno));
        nvs_events_free(&events);
        return 1;
    }
    static char buffer[1 << 20];
    if (!to_stdout)
        setvbuf(writer.out, buffer, _IOFBF, sizeof buffer);
    fputs("{\"traceEvents\":[\n", writer.out);
    size_t threads = put_names(&writer, &events);
    size_t counts[NVS_EVENT_GPU_SET + 1] = {0};
    for (size_t i = 0; i < events.count && !writer.failed; i++) {
        put_event(&writer, &events.events[i]);
        counts[events.events[i].kind]++;
    }
    fputs(writer.items ? "\n]}\n" : "]}\n", writer.out);
    int error = 0;
    if (writer.failed)
        error = ENOMEM;
    else if (ferror(writer.out))
        error = errno ? errno : EIO;
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
            "%zu GPU kernels, %zu GPU copies, %zu memsets, %zu thread names\n", output,
            counts[NVS_EVENT_RANGE], counts[NVS_EVENT_MARK], counts[NVS_EVENT_OS_CALL],
            counts[NVS_EVENT_GPU_KERNEL], counts[NVS_EVENT_GPU_COPY], counts[NVS_EVENT_GPU_SET], threads);
    nvs_events_free(&events);
    return 0;
}
