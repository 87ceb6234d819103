/* nvtxshim report: what a profile of a control loop says, first (the summary
 * make demo prints): per range name count, mean,
 * p50, p99 and max; the marks by kind with their first texts; per frame the
 * time in USB, CUDA copies, waits for the GPU, kernel launches (where they
 * take time), X11, the camera (V4L2), serial ports, HID nodes and the rest,
 * with the kernel probe's figures when it ran and the capture-to-actuation
 * latency when a camera's frames were traced; the slowest frames; the
 * latency's summary; the capture windows. Per-frame times are unions of the
 * calls' intervals inside the frame, so nested or overlapping calls count once. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "events.h"

#define NS_PER_US 1000.0
#define NS_PER_MS 1e6
#define CALL_DOMAINS 6
#define DEFAULT_SLOWEST 5
#define MARK_EXAMPLES 3
/* Said in each heading over a p50 and p99, which are the nearest rank's. */
#define NEAREST_RANK "p50 and p99 by nearest rank"

static const enum nvs_domain call_domains[CALL_DOMAINS] = {NVS_DOMAIN_USB, NVS_DOMAIN_CUDA,
                                                           NVS_DOMAIN_X11, NVS_DOMAIN_V4L2,
                                                           NVS_DOMAIN_SERIAL, NVS_DOMAIN_HID};
/* The device files' domains: their ranges are named "function /dev/path ..." */
#define FIRST_DEVICE_DOMAIN 3
/* Frames dropped listed by loop frame, at most. */
#define DROP_EXAMPLES 10

/* The parts of a frame's calls, in the order of their columns: the cuda
 * domain's calls split by category (copies, waits for the GPU, launches),
 * then the device files' domains (camera: v4l2, serial, hid). Two more lists
 * of intervals: copies and launches together (the cuda column when launches
 * have none), and every call (for the rest). */
enum part { PART_USB, PART_CUDA, PART_WAIT, PART_LAUNCH, PART_X11, PART_CAMERA, PART_SERIAL,
            PART_HID, PARTS, PART_CUDA_AND_LAUNCHES = PARTS, PART_ALL, PART_LISTS };

static const char manual[] =
    "NAME\n"
    "    nvtxshim report - what a profile of a control loop says, first\n"
    "\n"
    "SYNOPSIS\n"
    "    nvtxshim report FILE [--slowest N]\n"
    "    nvtxshim report --help\n"
    "\n"
    "DESCRIPTION\n"
    "    Reads the NVTX ranges and marks of FILE and prints:\n"
    "\n"
    "    - per range name (per domain; calls of the usb, cuda and x11 domains\n"
    "      by function, of the v4l2, serial and hid domains by function and\n"
    "      device, frames as \"frame N\"): count, mean, p50, p99 and max, in\n"
    "      microseconds. Here and below p50 and p99 are by nearest rank: of n\n"
    "      values, the ceil(p/100 * n)-th smallest (p50 of 1, 2, 3, 4 is 2);\n"
    "    - the marks by kind: per domain, a mark's text with each number (a run\n"
    "      of digits that starts a word or follows punctuation, with its decimals;\n"
    "      0x and its hex digits) written N, so that \"over budget frame 12:\n"
    "      41.250 ms > 33.000 ms\" is of kind \"over budget frame N: N ms > N ms\"\n"
    "      and \"LIBUSB_ERROR_PIPE libusb_bulk_transfer ep=0x81 IN 0/9216B\" of\n"
    "      kind \"LIBUSB_ERROR_PIPE libusb_bulk_transfer ep=N IN N/NB\" (the kernel\n"
    "      probe's marks are one kind, \"frame N: off-CPU figures\"). Each kind\n"
    "      with its count, the most frequent first, then its first 3 texts in\n"
    "      time order, each with its count, and how many other texts it has; a\n"
    "      kind whose one text has no number is its own example;\n"
    "    - per frame (the \"frame N\" ranges of domain nvtxshim, counted with\n"
    "      NVTXSHIM_FRAME): the time in USB calls (usb), CUDA copies (cuda),\n"
    "      waits for the GPU (gpu wait: cuStreamSynchronize, cuCtxSynchronize,\n"
    "      cuEventSynchronize, cudaDeviceSynchronize, cudaStreamSynchronize,\n"
    "      cudaEventSynchronize), X11 calls (x11) and the rest, in\n"
    "      milliseconds, as mean, p50, p99 and max over the frames, then the\n"
    "      slowest frames. Kernel launches (cuLaunchKernel, cudaLaunchKernel)\n"
    "      get a column of their own (launch) when they take a time that shows\n"
    "      in some frame; until then they count with cuda. The time of a column\n"
    "      is the union of its calls' intervals inside the frame, so nested\n"
    "      calls count once; the rest is the frame less the union of all the\n"
    "      calls. The cuda domain's calls are told apart by name, so an nsys\n"
    "      export, which keeps no category, reads as a trace file does.\n"
    "      libusb_submit_transfer (a transfer in flight) and\n"
    "      libusb_handle_events* (an event thread waiting) are not time the loop\n"
    "      spent in a call and are left out.\n"
    "      USBDEVFS_SUBMITURB (an URB in flight) is left out likewise.\n"
    "      The device files' domains get a column each when they have events:\n"
    "      camera (v4l2: DQBUF, QBUF, poll and the rest; not the \"frame age\"\n"
    "      ranges, which run from the capture, before the loop asked for the\n"
    "      frame), serial and hid.\n"
    "      When the kernel probe ran (NVTXSHIM_KERNEL=on), two more columns give\n"
    "      each frame's time off the CPU: runnable (waiting for a CPU) and\n"
    "      blocked (asleep), with preemptions and page faults for the slowest.\n"
    "      When a camera's frames were traced, latency is the capture-to-\n"
    "      actuation latency of the frame's first actuation that acted on a new\n"
    "      camera frame (\"-\" where none did; its statistics are over the frames\n"
    "      that have one), and the camera's dropped frames (its \"dropped N\n"
    "      frames\" marks) are counted per frame;\n"
    "    - capture to actuation: per actuation (a USB transfer out: a libusb or\n"
    "      USBDEVFS range whose name has \" OUT \"; a write to a serial port or\n"
    "      HID node), in start order, the newest camera frame its process had\n"
    "      dequeued when it started, unless an earlier actuation took that frame\n"
    "      already: the latency runs from the frame's capture timestamp (its\n"
    "      \"frame age\" range's end less its payload, the age) to the\n"
    "      actuation's end. Mean, p50, p99 and max over the pairs, the camera\n"
    "      frames never acted on and the actuations that had no new frame;\n"
    "    - the capture windows (NVTXSHIM_CAPTURE) and the frames inside them.\n"
    "\n"
    "    FILE is one of:\n"
    "\n"
    "    REPORT.nsys-rep   an Nsight Systems report. It is exported first with\n"
    "                      nsys export --type sqlite to REPORT.sqlite beside it\n"
    "                      (to a temporary directory when that one is not\n"
    "                      writable), which is read instead while it is newer\n"
    "                      than the report. Said on stderr. $NSYS names the nsys\n"
    "                      to run (default: nsys on PATH).\n"
    "    REPORT.sqlite     the SQLite export of one (nsys export --type sqlite);\n"
    "                      any SQLite file is recognised by its header.\n"
    "    TRACE.json        a trace written by NVTXSHIM_TRACE (or by nvtxshim\n"
    "                      convert): an array of events, or the older\n"
    "                      {\"traceEvents\":[...]}. A trace cut short by a\n"
    "                      signal, without its closing ] (or ]}), is read up to\n"
    "                      its last event, and a line on stderr says so. Async\n"
    "                      pairs (\"ph\":\"b\"/\"e\", joined by pid, cat and id)\n"
    "                      are ranges on the thread of their begin, with the\n"
    "                      args of both; a begin never ended (a frame open when\n"
    "                      the process was killed) is left out, and counted on\n"
    "                      stderr. Events of the categories convert gives\n"
    "                      non-NVTX work (osrt, cuda kernel, cuda memcpy, cuda\n"
    "                      memset) are left out.\n"
    "\n"
    "    Everything else it says goes to stderr, each line starting with\n"
    "    \"nvtxshim: report: \".\n"
    "\n"
    "OPTIONS\n"
    "    --slowest N\n"
    "        List the N slowest frames (default 5; 0 lists none).\n"
    "\n"
    "    --help, -h\n"
    "        Print this page and exit.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   the summary was printed.\n"
    "    1   FILE could not be read (one line on stderr says why), nsys export\n"
    "        failed, or FILE holds no NVTX ranges or marks.\n"
    "    2   a usage error.\n"
    "\n"
    "EXAMPLES\n"
    "    nvtxshim report build/demo/report.nsys-rep\n"
    "    nvtxshim report report.sqlite --slowest 10\n"
    "    NVTXSHIM_TRACE=rig.json NVTXSHIM_FRAME=usb.in:0x81 nvtxshim run -- ./loop\n"
    "    nvtxshim report rig.json\n";

/* ---- output helpers ----------------------------------------------------------- */

/* TEXT cut to at most LIMIT characters (UTF-8 code points; 0: no limit) and
 * padded with spaces to WIDTH characters, as Python's "%-Ws" % text[:LIMIT]. */
static void put_padded(const char *text, size_t width, size_t limit)
{
    size_t characters = 0;
    const char *p = text;
    while (*p && (!limit || characters < limit)) {
        p++;
        while ((*p & 0xC0) == 0x80)
            p++;
        characters++;
    }
    fwrite(text, 1, (size_t)(p - text), stdout);
    for (; characters < width; characters++)
        putchar(' ');
}

/* TEXT as Python's repr() shows a str. */
static void put_repr(const char *text)
{
    char quote = strchr(text, '\'') && !strchr(text, '"') ? '"' : '\'';
    putchar(quote);
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '\\' || *c == (unsigned char)quote)
            printf("\\%c", *c);
        else if (*c == '\n')
            fputs("\\n", stdout);
        else if (*c == '\r')
            fputs("\\r", stdout);
        else if (*c == '\t')
            fputs("\\t", stdout);
        else if (*c < 0x20 || *c == 0x7F)
            printf("\\x%02x", *c);
        else
            putchar(*c);
    }
    putchar(quote);
}

static int compare_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The PERCENT-th percentile of SORTED (COUNT > 0) by nearest rank: the
 * ceil(PERCENT / 100 * COUNT)-th smallest, counted from 1 (p50 of 1, 2, 3, 4
 * is 2), no interpolation. In integers: 0.99 * COUNT in floating point can
 * land a hair above a whole number and take the next rank. */
static int64_t percentile(const int64_t *sorted, size_t count, unsigned percent)
{
    size_t rank = (percent * count + 99) / 100;
    return sorted[rank ? rank - 1 : 0];
}

/* ---- what the names mean ------------------------------------------------------ */

static int call_domain(const struct nvs_event *event)
{
    for (int i = 0; i < CALL_DOMAINS; i++)
        if (strcmp(event->domain, nvs_domain_name(call_domains[i])) == 0)
            return i;
    return -1;
}

/* N of a "frame N" range in domain nvtxshim; 0 for anything else. */
static uint64_t frame_number(const struct nvs_event *event)
{
    if (strcmp(event->domain, nvs_domain_name(NVS_DOMAIN_SHIM)) != 0 ||
        strncmp(event->name, NVS_FRAME_PREFIX, sizeof NVS_FRAME_PREFIX - 1) != 0)
        return 0;
    const char *digits = event->name + sizeof NVS_FRAME_PREFIX - 1;
    if (!*digits || strspn(digits, "0123456789") != strlen(digits))
        return 0;
    errno = 0;
    uint64_t number = strtoull(digits, NULL, 10);
    return errno ? 0 : number;
}

/* The part of a frame EVENT, a call (call_domain >= 0), counts in. */
static enum part call_part(const struct nvs_event *event)
{
    switch (call_domains[call_domain(event)]) {
    case NVS_DOMAIN_USB: return PART_USB;
    case NVS_DOMAIN_X11: return PART_X11;
    case NVS_DOMAIN_V4L2: return PART_CAMERA;
    case NVS_DOMAIN_SERIAL: return PART_SERIAL;
    case NVS_DOMAIN_HID: return PART_HID;
    default: break;
    }
    switch (nvs_cuda_category_of(event->name)) {
    case NVS_CUDA_WAIT: return PART_WAIT;
    case NVS_CUDA_LAUNCH: return PART_LAUNCH;
    case NVS_CUDA_COPY: break;
    }
    return PART_CUDA;
}

static bool is_frame(const struct nvs_event *event)
{
    return event->kind == NVS_EVENT_RANGE && frame_number(event) > 0;
}

static bool starts_with(const char *text, const char *prefix)
{
    return strncmp(text, prefix, strlen(prefix)) == 0;
}

static bool in_domain(const struct nvs_event *event, enum nvs_domain domain)
{
    return strcmp(event->domain, nvs_domain_name(domain)) == 0;
}

/* A camera frame's age: "frame age /dev/video0" in domain v4l2, from the
 * buffer's capture to its dequeue (trace file), or at the dequeue (nsys); its
 * end is the dequeue, its payload the age in ns. */
static bool is_frame_age(const struct nvs_event *event)
{
    return event->kind == NVS_EVENT_RANGE && in_domain(event, NVS_DOMAIN_V4L2) &&
           starts_with(event->name, NVS_FRAME_AGE_PREFIX);
}

/* An actuation: a USB transfer out (libusb's or usbfs's, its name has " OUT ";
 * the program's completion callback is not one), or a write to a serial port
 * or HID node. */
static bool is_actuation(const struct nvs_event *event)
{
    if (event->kind != NVS_EVENT_RANGE)
        return false;
    if (in_domain(event, NVS_DOMAIN_USB))
        return (starts_with(event->name, "libusb_") || starts_with(event->name, "USBDEVFS_")) &&
               !starts_with(event->name, "libusb_transfer_cb_fn") && strstr(event->name, " OUT ");
    return (in_domain(event, NVS_DOMAIN_SERIAL) || in_domain(event, NVS_DOMAIN_HID)) &&
           (starts_with(event->name, "write ") || starts_with(event->name, "writev "));
}

/* The camera's mark for dropped frames; their number in *COUNT. */
static bool is_drop(const struct nvs_event *event, uint64_t *count)
{
    if (event->kind != NVS_EVENT_MARK || !in_domain(event, NVS_DOMAIN_V4L2) ||
        !starts_with(event->name, NVS_DROPPED_PREFIX))
        return false;
    if (event->has_payload && event->payload >= 0) {
        *count = (uint64_t)event->payload;
    } else {
        const char *digits = event->name + sizeof NVS_DROPPED_PREFIX - 1;
        *count = isdigit((unsigned char)*digits) ? strtoull(digits, NULL, 10) : 1;
    }
    return true;
}

/* Time the loop spent in a call: not a transfer in flight (libusb's or
 * usbfs's submission, until its completion or reap), an event thread waiting,
 * or a camera frame's age (from its capture, before the loop asked for it). */
static bool counts_toward_frame(const struct nvs_event *event)
{
    return event->kind == NVS_EVENT_RANGE && call_domain(event) >= 0 &&
           strncmp(event->name, "libusb_submit_transfer", 22) != 0 &&
           strncmp(event->name, "libusb_handle_events", 20) != 0 &&
           !starts_with(event->name, "USBDEVFS_SUBMITURB") && !is_frame_age(event);
}

/* The kernel probe's mark for a frame: "frame N: runnable X ms (P preemptions),
 * blocked Y ms, F faults[, M migrations][...]" in domain kernel. */
struct kernel_mark {
    uint32_t pid;
    uint64_t number;
    struct nvs_offcpu figures;
};

static bool parse_kernel_mark(const struct nvs_event *event, struct kernel_mark *mark)
{
    struct nvs_kernel_figures figures;
    if (event->kind != NVS_EVENT_MARK || strcmp(event->domain, nvs_domain_name(NVS_DOMAIN_KERNEL)) != 0 ||
        !nvs_kernel_mark_parse(event->name, &mark->number, &figures))
        return false;
    mark->pid = event->pid;
    mark->figures = nvs_offcpu_of(&figures);
    return true;
}

/* ---- per range name ------------------------------------------------------------ */

struct named_duration {
    const char *domain, *name;
    int64_t duration;
};

static int compare_strings(const char *a, const char *b)
{
    return a == b ? 0 : strcmp(a, b);
}

static int compare_named(const void *a, const void *b)
{
    const struct named_duration *x = a, *y = b;
    int order = compare_strings(x->domain, y->domain);
    if (!order)
        order = compare_strings(x->name, y->name);
    if (!order)
        order = (x->duration > y->duration) - (x->duration < y->duration);
    return order;
}

/* The table's name for EVENT: "frame N", the function of a call (the name's
 * first word; a launch keeps its kernel's name, the whole name), or the whole
 * name. */
static const char *table_name(struct nvs_events *events, const struct nvs_event *event)
{
    if (frame_number(event))
        return nvs_events_intern(events, "frame N", 7);
    if (is_frame_age(event)) {
        /* "frame age /dev/video0" for every buffer of the camera ("buf=N" after it) */
        const char *space = strstr(event->name + strlen(NVS_FRAME_AGE_PREFIX), " buf=");
        return space ? nvs_events_intern(events, event->name, (size_t)(space - event->name))
                     : event->name;
    }
    if (call_domain(event) >= FIRST_DEVICE_DOMAIN) {
        /* "function /dev/path": per device */
        const char *space = strchr(event->name, ' ');
        if (space && (space = strchr(space + 1, ' ')))
            return nvs_events_intern(events, event->name, (size_t)(space - event->name));
        return event->name;
    }
    if (call_domain(event) >= 0 && call_part(event) != PART_LAUNCH) {
        const char *space = strchr(event->name, ' ');
        if (space)
            return nvs_events_intern(events, event->name, (size_t)(space - event->name));
    }
    return event->name;
}

static int print_names(struct nvs_events *events)
{
    size_t ranges = 0;
    for (size_t i = 0; i < events->count; i++)
        ranges += events->events[i].kind == NVS_EVENT_RANGE;
    struct named_duration *rows = malloc((ranges + 1) * sizeof *rows);
    int64_t *values = malloc((ranges + 1) * sizeof *values);
    if (!rows || !values) {
        free(rows);
        free(values);
        return -1;
    }
    size_t count = 0;
    for (size_t i = 0; i < events->count; i++) {
        const struct nvs_event *event = &events->events[i];
        if (event->kind != NVS_EVENT_RANGE)
            continue;
        const char *name = table_name(events, event);
        if (!name) {
            free(rows);
            free(values);
            return -1;
        }
        rows[count++] = (struct named_duration){event->domain, name, event->end - event->start};
    }
    qsort(rows, count, sizeof *rows, compare_named);
    puts("== NVTX ranges per name (microseconds; " NEAREST_RANK ")");
    printf("  %-9s %-34s %7s %10s %10s %10s %10s\n", "domain", "name", "count", "mean", "p50", "p99",
           "max");
    for (size_t first = 0; first < count;) {
        size_t last = first;
        int64_t sum = 0;
        while (last < count && rows[last].domain == rows[first].domain &&
               rows[last].name == rows[first].name) {
            values[last - first] = rows[last].duration;
            sum += rows[last].duration;
            last++;
        }
        size_t n = last - first;
        fputs("  ", stdout);
        put_padded(rows[first].domain, 9, 0);
        putchar(' ');
        put_padded(rows[first].name, 34, 34);
        printf(" %7zu %10.1f %10.1f %10.1f %10.1f\n", n, (double)sum / (double)n / NS_PER_US,
               (double)percentile(values, n, 50) / NS_PER_US,
               (double)percentile(values, n, 99) / NS_PER_US, (double)values[n - 1] / NS_PER_US);
        first = last;
    }
    free(rows);
    free(values);
    return 0;
}

/* ---- marks by kind --------------------------------------------------------------- */

/* A mark's kind: TEXT with each number written N. A number starts a word or
 * follows punctuation (the 2 of "cuMemcpy2D" or "H264" is no number): 0x and
 * its hex digits, or digits and their decimals. OUT has room for TEXT. */
static size_t mark_kind(const char *text, char *out)
{
    size_t length = 0;
    for (const unsigned char *c = (const unsigned char *)text; *c;) {
        bool starts = c == (const unsigned char *)text || !(isalnum(c[-1]) || c[-1] == '_');
        if (!isdigit(*c) || !starts) {
            out[length++] = (char)*c++;
            continue;
        }
        if (c[0] == '0' && (c[1] == 'x' || c[1] == 'X') && isxdigit(c[2])) {
            for (c += 2; isxdigit(*c); c++)
                continue;
        } else {
            while (isdigit(*c))
                c++;
            if (c[0] == '.' && isdigit(c[1]))
                for (c++; isdigit(*c); c++)
                    continue;
        }
        out[length++] = 'N';
    }
    out[length] = '\0';
    return length;
}

struct mark_row {
    const char *domain, *kind, *text;
    int64_t start;
    size_t order;                    /* position in the events, for a stable sort */
};

/* By domain, kind, text, then time. */
static int compare_mark_rows(const void *a, const void *b)
{
    const struct mark_row *x = a, *y = b;
    int order = compare_strings(x->domain, y->domain);
    if (!order)
        order = compare_strings(x->kind, y->kind);
    if (!order)
        order = compare_strings(x->text, y->text);
    if (!order && x->start != y->start)
        order = (x->start > y->start) - (x->start < y->start);
    if (!order)
        order = (x->order > y->order) - (x->order < y->order);
    return order;
}

/* A kind: rows FIRST..LAST (sorted by text); a text: rows FIRST..LAST, its
 * first at ROWS[FIRST]. */
struct mark_group {
    const char *domain;
    size_t first, last;
    int64_t start;
};

/* By domain, then the most marks first, then kind. */
static int compare_kinds(const void *a, const void *b, void *rows_argument)
{
    const struct mark_group *x = a, *y = b;
    const struct mark_row *rows = rows_argument;
    int order = compare_strings(x->domain, y->domain);
    if (!order && x->last - x->first != y->last - y->first)
        order = (x->last - x->first < y->last - y->first) - (x->last - x->first > y->last - y->first);
    if (!order)
        order = compare_strings(rows[x->first].kind, rows[y->first].kind);
    return order;
}

/* By the time of the first mark. */
static int compare_texts(const void *a, const void *b)
{
    const struct mark_group *x = a, *y = b;
    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return (x->first > y->first) - (x->first < y->first);
}

static int print_marks(struct nvs_events *events)
{
    size_t count = 0, longest = 0;
    for (size_t i = 0; i < events->count; i++)
        if (events->events[i].kind == NVS_EVENT_MARK) {
            size_t length = strlen(events->events[i].name);
            count++;
            longest = length > longest ? length : longest;
        }
    if (!count)
        return 0;
    const char *kernel_figures = nvs_events_intern(events, "frame N: off-CPU figures", 24);
    struct mark_row *rows = malloc(count * sizeof *rows);
    struct mark_group *kinds = malloc(count * sizeof *kinds);
    struct mark_group *texts = malloc(count * sizeof *texts);
    char *kind = malloc(longest + 1);
    int status = kernel_figures && rows && kinds && texts && kind ? 0 : -1;
    size_t n = 0;
    for (size_t i = 0; status == 0 && i < events->count; i++) {
        const struct nvs_event *event = &events->events[i];
        struct kernel_mark figures;
        if (event->kind != NVS_EVENT_MARK)
            continue;
        /* the kernel probe's mark at each frame's end: one kind, its figures
         * are in the per-frame table */
        const char *interned = kernel_figures;
        if (!parse_kernel_mark(event, &figures))
            interned = nvs_events_intern(events, kind, mark_kind(event->name, kind));
        if (!interned)
            status = -1;
        rows[n++] = (struct mark_row){event->domain, interned, event->name, event->start, i};
    }
    if (status == 0) {
        qsort(rows, n, sizeof *rows, compare_mark_rows);
        size_t kind_count = 0;
        for (size_t first = 0; first < n;) {
            size_t last = first + 1;
            while (last < n && !compare_strings(rows[last].domain, rows[first].domain) &&
                   !compare_strings(rows[last].kind, rows[first].kind))
                last++;
            kinds[kind_count++] = (struct mark_group){rows[first].domain, first, last, 0};
            first = last;
        }
        qsort_r(kinds, kind_count, sizeof *kinds, compare_kinds, rows);
        puts("\n== NVTX marks per kind (each number as N), with the first texts of each");
        printf("  %-9s %7s  %s\n", "domain", "count", "kind");
        for (size_t k = 0; k < kind_count; k++) {
            const struct mark_group *group = &kinds[k];
            fputs("  ", stdout);
            put_padded(group->domain, 9, 0);
            printf(" %7zu  %s\n", group->last - group->first, rows[group->first].kind);
            size_t text_count = 0;
            for (size_t first = group->first; first < group->last;) {
                size_t last = first + 1;
                while (last < group->last && !compare_strings(rows[last].text, rows[first].text))
                    last++;
                texts[text_count++] = (struct mark_group){NULL, first, last, rows[first].start};
                first = last;
            }
            if (text_count == 1 && !compare_strings(rows[group->first].text, rows[group->first].kind))
                continue;
            qsort(texts, text_count, sizeof *texts, compare_texts);
            for (size_t t = 0; t < text_count && t < MARK_EXAMPLES; t++) {
                printf("  %-9s %7s    ", "", "");
                put_repr(rows[texts[t].first].text);
                printf(" x%zu\n", texts[t].last - texts[t].first);
            }
            if (text_count > MARK_EXAMPLES)
                printf("  %-9s %7s    ... and %zu other text%s\n", "", "", text_count - MARK_EXAMPLES,
                       text_count - MARK_EXAMPLES == 1 ? "" : "s");
        }
    }
    free(rows);
    free(kinds);
    free(texts);
    free(kind);
    return status;
}

/* ---- per frame ------------------------------------------------------------------ */

struct interval {
    int64_t start, end;
};

static int compare_intervals(const void *a, const void *b)
{
    const struct interval *x = a, *y = b;
    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return (x->end > y->end) - (x->end < y->end);
}

/* The length of the union of the intervals (sorted here). */
static int64_t union_length(struct interval *intervals, size_t count)
{
    qsort(intervals, count, sizeof *intervals, compare_intervals);
    int64_t total = 0;
    for (size_t i = 0; i < count;) {
        int64_t start = intervals[i].start, end = intervals[i].end;
        for (i++; i < count && intervals[i].start <= end; i++)
            if (intervals[i].end > end)
                end = intervals[i].end;
        total += end - start;
    }
    return total;
}

/* The parts' columns follow USB in the order of enum part. */
enum column { TOTAL, USB, CUDA, WAIT, LAUNCH, X11, CAMERA, SERIAL, HID, REST, RUNNABLE, BLOCKED,
              LATENCY, COLUMNS };

static const char *const column_names[COLUMNS] = {"total", "usb", "cuda", "gpu wait", "launch",
                                                  "x11", "camera", "serial", "hid", "rest",
                                                  "runnable", "blocked", "latency"};

/* A launch column is shown once some frame's launches take 0.001 ms as printed. */
#define LAUNCH_SHOWN_NS 500

struct frame_row {
    uint64_t number;
    size_t order;                    /* position in start order, for a stable sort */
    int64_t value[COLUMNS];
    int64_t cuda_and_launches;       /* the cuda column when launches are not shown */
    bool has_kernel;                 /* the kernel probe's figures are there */
    bool has_latency;                /* value[LATENCY]: its first capture-to-actuation pair */
    uint64_t preemptions, faults;
    uint64_t dropped;                /* camera frames dropped in it */
};

static int compare_kernel_marks(const void *a, const void *b)
{
    const struct kernel_mark *x = a, *y = b;
    if (x->pid != y->pid)
        return (x->pid > y->pid) - (x->pid < y->pid);
    return (x->number > y->number) - (x->number < y->number);
}

static int compare_by_start(const void *a, const void *b)
{
    const struct nvs_event *x = *(const struct nvs_event *const *)a;
    const struct nvs_event *y = *(const struct nvs_event *const *)b;
    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return (x > y) - (x < y);
}

static int compare_slowest(const void *a, const void *b)
{
    const struct frame_row *x = a, *y = b;
    if (x->value[TOTAL] != y->value[TOTAL])
        return (x->value[TOTAL] < y->value[TOTAL]) - (x->value[TOTAL] > y->value[TOTAL]);
    return (x->order > y->order) - (x->order < y->order);
}

/* Each frame's row: the union of each part's intervals clipped to it. */
static int breakdown(const struct nvs_event **frames, size_t frame_count, struct nvs_events *events,
                     struct frame_row *rows)
{
    size_t call_count = 0;
    for (size_t i = 0; i < events->count; i++)
        call_count += counts_toward_frame(&events->events[i]);
    const struct nvs_event **calls = malloc((call_count + 1) * sizeof *calls);
    struct interval *parts[PART_LISTS];
    size_t capacity = call_count + 1;
    for (int d = 0; d < PART_LISTS; d++)
        parts[d] = malloc(capacity * sizeof *parts[d]);
    bool ok = calls != NULL;
    for (int d = 0; d < PART_LISTS; d++)
        ok = ok && parts[d];
    if (ok) {
        size_t n = 0;
        int64_t longest = 0;
        for (size_t i = 0; i < events->count; i++)
            if (counts_toward_frame(&events->events[i])) {
                calls[n++] = &events->events[i];
                if (events->events[i].end - events->events[i].start > longest)
                    longest = events->events[i].end - events->events[i].start;
            }
        qsort(calls, n, sizeof *calls, compare_by_start);
        for (size_t f = 0; f < frame_count; f++) {
            const struct nvs_event *frame = frames[f];
            /* calls that can overlap the frame: from its start less the longest call */
            size_t low = 0, high = n;
            while (low < high) {
                size_t middle = (low + high) / 2;
                if (calls[middle]->start < frame->start - longest)
                    low = middle + 1;
                else
                    high = middle;
            }
            size_t counts[PART_LISTS] = {0};
            for (size_t i = low; i < n && calls[i]->start < frame->end; i++) {
                int64_t start = calls[i]->start > frame->start ? calls[i]->start : frame->start;
                int64_t end = calls[i]->end < frame->end ? calls[i]->end : frame->end;
                if (end <= start)
                    continue;
                enum part d = call_part(calls[i]);
                parts[d][counts[d]++] = (struct interval){start, end};
                if (d == PART_CUDA || d == PART_LAUNCH)
                    parts[PART_CUDA_AND_LAUNCHES][counts[PART_CUDA_AND_LAUNCHES]++] = (struct interval){start, end};
                parts[PART_ALL][counts[PART_ALL]++] = (struct interval){start, end};
            }
            struct frame_row *row = &rows[f];
            memset(row, 0, sizeof *row);
            row->number = frame_number(frame);
            row->order = f;
            row->value[TOTAL] = frame->end - frame->start;
            for (int d = 0; d < PARTS; d++)
                row->value[USB + d] = union_length(parts[d], counts[d]);
            row->cuda_and_launches = union_length(parts[PART_CUDA_AND_LAUNCHES], counts[PART_CUDA_AND_LAUNCHES]);
            row->value[REST] = row->value[TOTAL] - union_length(parts[PART_ALL], counts[PART_ALL]);
        }
    }
    free(calls);
    for (int d = 0; d < PART_LISTS; d++)
        free(parts[d]);
    return ok ? 0 : -1;
}

/* The kernel figures of each row: the frame range's own (trace files), else
 * the probe's mark for that frame in that process. Returns the rows that have
 * them. */
static size_t attach_kernel_figures(const struct nvs_event **frames, struct frame_row *rows,
                                    size_t frame_count, const struct nvs_events *events)
{
    size_t mark_count = 0;
    for (size_t i = 0; i < events->count; i++)
        mark_count += events->events[i].kind == NVS_EVENT_MARK && strcmp(events->events[i].domain, nvs_domain_name(NVS_DOMAIN_KERNEL)) == 0;
    struct kernel_mark *marks = mark_count ? malloc(mark_count * sizeof *marks) : NULL;
    size_t n = 0;
    for (size_t i = 0; marks && i < events->count; i++)
        if (parse_kernel_mark(&events->events[i], &marks[n]))
            n++;
    if (n)
        qsort(marks, n, sizeof *marks, compare_kernel_marks);
    size_t with = 0;
    for (size_t f = 0; f < frame_count; f++) {
        const struct nvs_offcpu *figures = frames[f]->offcpu;
        if (!figures && n) {
            struct kernel_mark key = {.pid = frames[f]->pid, .number = rows[f].number};
            const struct kernel_mark *found = bsearch(&key, marks, n, sizeof *marks, compare_kernel_marks);
            figures = found ? &found->figures : NULL;
        }
        if (!figures)
            continue;
        rows[f].has_kernel = true;
        rows[f].value[RUNNABLE] = (int64_t)figures->runnable_ns;
        rows[f].value[BLOCKED] = (int64_t)figures->blocked_ns;
        rows[f].preemptions = figures->preemptions;
        rows[f].faults = figures->faults;
        with++;
    }
    free(marks);
    return with;
}

/* ---- capture to actuation ----------------------------------------------------- */

/* A camera frame the loop dequeued: its capture timestamp is the frame age
 * range's end less its payload (the age), in every reader. */
struct camera_frame {
    uint32_t pid;
    int64_t capture, dequeue;
    bool consumed;
};

/* A camera frame and the actuation that consumed it: the first to start at or
 * after its dequeue while it was the newest frame its process had dequeued. */
struct latency_pair {
    uint32_t pid;
    int64_t capture, dequeue, start, end;      /* start, end: the actuation's range */
};

struct latency {
    struct latency_pair *pairs;                /* in the actuations' start order */
    size_t count, camera_frames, actuations;
};

static int compare_camera_frames(const void *a, const void *b)
{
    const struct camera_frame *x = a, *y = b;
    if (x->pid != y->pid)
        return (x->pid > y->pid) - (x->pid < y->pid);
    if (x->dequeue != y->dequeue)
        return (x->dequeue > y->dequeue) - (x->dequeue < y->dequeue);
    return (x->capture > y->capture) - (x->capture < y->capture);
}

/* The pairs of EVENTS: per actuation in start order, the newest camera frame
 * of its process dequeued at or before its start, when no actuation took it. */
static int pair_captures(const struct nvs_events *events, struct latency *latency)
{
    memset(latency, 0, sizeof *latency);
    size_t frame_count = 0, actuation_count = 0;
    for (size_t i = 0; i < events->count; i++) {
        frame_count += is_frame_age(&events->events[i]) && events->events[i].has_payload;
        actuation_count += is_actuation(&events->events[i]);
    }
    latency->camera_frames = frame_count;
    latency->actuations = actuation_count;
    if (!frame_count || !actuation_count)
        return 0;
    struct camera_frame *frames = malloc(frame_count * sizeof *frames);
    const struct nvs_event **actuations = malloc(actuation_count * sizeof *actuations);
    latency->pairs = malloc(actuation_count * sizeof *latency->pairs);
    if (!frames || !actuations || !latency->pairs) {
        free(frames), free(actuations);
        return -1;
    }
    size_t f = 0, a = 0;
    for (size_t i = 0; i < events->count; i++) {
        const struct nvs_event *event = &events->events[i];
        if (is_frame_age(event) && event->has_payload)
            frames[f++] = (struct camera_frame){event->pid, event->end - event->payload, event->end, false};
        else if (is_actuation(event))
            actuations[a++] = event;
    }
    qsort(frames, f, sizeof *frames, compare_camera_frames);
    qsort(actuations, a, sizeof *actuations, compare_by_start);
    for (size_t i = 0; i < a; i++) {
        const struct nvs_event *actuation = actuations[i];
        /* the first frame after (pid, start), then the one before it */
        size_t low = 0, high = f;
        while (low < high) {
            size_t middle = (low + high) / 2;
            if (frames[middle].pid < actuation->pid ||
                (frames[middle].pid == actuation->pid && frames[middle].dequeue <= actuation->start))
                low = middle + 1;
            else
                high = middle;
        }
        struct camera_frame *newest = low ? &frames[low - 1] : NULL;
        if (!newest || newest->pid != actuation->pid || newest->consumed)
            continue;
        newest->consumed = true;
        latency->pairs[latency->count++] = (struct latency_pair){
            actuation->pid, newest->capture, newest->dequeue, actuation->start, actuation->end};
    }
    free(frames);
    free(actuations);
    return 0;
}

/* The loop frame of process PID (FRAMES in start order, none longer than
 * LONGEST) that holds time T; -1 when none does. */
static long frame_at(const struct nvs_event **frames, size_t count, int64_t longest, uint32_t pid,
                     int64_t t)
{
    size_t low = 0, high = count;
    while (low < high) {
        size_t middle = (low + high) / 2;
        if (frames[middle]->start <= t)
            low = middle + 1;
        else
            high = middle;
    }
    for (size_t k = low; k-- > 0 && frames[k]->start >= t - longest;)
        if (frames[k]->pid == pid && t < frames[k]->end)
            return (long)k;
    return -1;
}

/* Each row's latency (its first pair's, by the actuation's start) and camera
 * frames dropped; the drops in no frame in *OUTSIDE. Returns the drops in all. */
static uint64_t attach_camera(const struct nvs_event **frames, struct frame_row *rows, size_t count,
                              const struct nvs_events *events, const struct latency *latency,
                              uint64_t *outside)
{
    int64_t longest = 0;
    for (size_t f = 0; f < count; f++)
        if (frames[f]->end - frames[f]->start > longest)
            longest = frames[f]->end - frames[f]->start;
    for (size_t p = 0; p < latency->count; p++) {
        const struct latency_pair *pair = &latency->pairs[p];
        long f = frame_at(frames, count, longest, pair->pid, pair->start);
        if (f >= 0 && !rows[f].has_latency) {
            rows[f].has_latency = true;
            rows[f].value[LATENCY] = pair->end - pair->capture;
        }
    }
    uint64_t all = 0, dropped;
    *outside = 0;
    for (size_t i = 0; i < events->count; i++) {
        if (!is_drop(&events->events[i], &dropped))
            continue;
        long f = frame_at(frames, count, longest, events->events[i].pid, events->events[i].start);
        if (f >= 0)
            rows[f].dropped += dropped;
        else
            *outside += dropped;
        all += dropped;
    }
    return all;
}

static bool domain_has_events(const struct nvs_events *events, enum nvs_domain domain)
{
    for (size_t i = 0; i < events->count; i++)
        if ((events->events[i].kind == NVS_EVENT_RANGE || events->events[i].kind == NVS_EVENT_MARK) &&
            in_domain(&events->events[i], domain))
            return true;
    return false;
}

/* Mean, p50, p99 and max of VALUES (sorted here), in that order. */
static void statistics(int64_t *values, size_t count, double out[4])
{
    int64_t sum = 0;
    for (size_t i = 0; i < count; i++)
        sum += values[i];
    qsort(values, count, sizeof *values, compare_int64);
    out[0] = (double)sum / (double)count;
    out[1] = (double)percentile(values, count, 50);
    out[2] = (double)percentile(values, count, 99);
    out[3] = (double)values[count - 1];
}

static int print_frames(struct nvs_events *events, long slowest, const struct latency *latency)
{
    size_t frame_count = 0;
    for (size_t i = 0; i < events->count; i++)
        frame_count += is_frame(&events->events[i]);
    putchar('\n');
    if (!frame_count) {
        puts("== No frame ranges: set NVTXSHIM_FRAME to count the loop's frames");
        return 0;
    }
    const struct nvs_event **frames = malloc(frame_count * sizeof *frames);
    struct frame_row *rows = malloc(frame_count * sizeof *rows);
    int64_t *values = malloc(frame_count * sizeof *values);
    if (!frames || !rows || !values) {
        free(frames), free(rows), free(values);
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < events->count; i++)
        if (is_frame(&events->events[i]))
            frames[n++] = &events->events[i];
    qsort(frames, n, sizeof *frames, compare_by_start);
    if (breakdown(frames, n, events, rows) != 0) {
        free(frames), free(rows), free(values);
        return -1;
    }
    size_t with_kernel = attach_kernel_figures(frames, rows, n, events);
    uint64_t dropped_outside;
    uint64_t dropped = attach_camera(frames, rows, n, events, latency, &dropped_outside);
    size_t with_latency = 0;
    for (size_t f = 0; f < n; f++)
        with_latency += rows[f].has_latency;
    /* Launches that take no time that shows count with the copies, in cuda. */
    bool launches = false;
    for (size_t f = 0; f < n; f++)
        launches = launches || rows[f].value[LAUNCH] >= LAUNCH_SHOWN_NS;
    bool shown[COLUMNS];
    for (int c = 0; c < COLUMNS; c++)
        shown[c] = true;
    shown[LAUNCH] = launches;
    shown[RUNNABLE] = shown[BLOCKED] = with_kernel > 0;
    shown[CAMERA] = domain_has_events(events, NVS_DOMAIN_V4L2);
    shown[SERIAL] = domain_has_events(events, NVS_DOMAIN_SERIAL);
    shown[HID] = domain_has_events(events, NVS_DOMAIN_HID);
    shown[LATENCY] = with_latency > 0;
    for (size_t f = 0; f < n && !launches; f++)
        rows[f].value[CUDA] = rows[f].cuda_and_launches;
    printf("== Per frame (milliseconds; " NEAREST_RANK "): time in USB, CUDA copies, GPU waits, %sX11%s%s%s and the rest%s%s\n",
           launches ? "kernel launches, " : "", shown[CAMERA] ? ", camera (V4L2)" : "",
           shown[SERIAL] ? ", serial" : "", shown[HID] ? ", HID" : "",
           with_kernel ? "; off CPU (kernel probe): runnable, blocked" : "",
           shown[LATENCY] ? "; latency: capture to actuation" : "");
    printf("  %-14s", "");
    for (int c = 0; c < COLUMNS; c++)
        if (shown[c])
            printf(" %9s", column_names[c]);
    putchar('\n');
    static const char *const labels[] = {"mean", "p50", "p99", "max"};
    double stats[COLUMNS][4];
    for (int c = 0; c < COLUMNS; c++) {
        if (!shown[c])
            continue;
        size_t m = 0;
        for (size_t f = 0; f < n; f++)
            if (c != LATENCY || rows[f].has_latency)
                values[m++] = rows[f].value[c];
        statistics(values, m, stats[c]);
    }
    for (int s = 0; s < 4; s++) {
        char label[32];
        if (s == 0)
            snprintf(label, sizeof label, "mean of %zu", n);
        else
            snprintf(label, sizeof label, "%s", labels[s]);
        printf("  %-14s", label);
        for (int c = 0; c < COLUMNS; c++)
            if (shown[c])
                printf(" %9.3f", stats[c][s] / NS_PER_MS);
        putchar('\n');
    }
    if (with_kernel && with_kernel < n)
        printf("  (kernel figures for %zu of the %zu frames; the others count as 0)\n", with_kernel, n);
    if (shown[LATENCY] && with_latency < n)
        printf("  (latency for %zu of the %zu frames: the others acted on no new camera frame)\n",
               with_latency, n);
    if (dropped) {
        printf("  camera frames dropped: %" PRIu64 " (", dropped);
        size_t listed = 0, frames_with = 0;
        for (size_t f = 0; f < n; f++) {
            if (!rows[f].dropped)
                continue;
            if (frames_with++ < DROP_EXAMPLES)
                printf("%sframe %" PRIu64 ": %" PRIu64, listed++ ? ", " : "", rows[f].number,
                       rows[f].dropped);
        }
        if (frames_with > DROP_EXAMPLES)
            printf(", and %zu other frame%s", frames_with - DROP_EXAMPLES,
                   frames_with - DROP_EXAMPLES == 1 ? "" : "s");
        if (dropped_outside)
            printf("%s%" PRIu64 " outside the frames", listed ? ", " : "", dropped_outside);
        puts(")");
    }
    puts("  slowest frames:");
    qsort(rows, n, sizeof *rows, compare_slowest);
    for (size_t f = 0; f < n && (long)f < slowest; f++) {
        char label[40];
        snprintf(label, sizeof label, "frame %" PRIu64, rows[f].number);
        printf("  %-14s", label);
        for (int c = 0; c < COLUMNS; c++) {
            if (!shown[c])
                continue;
            if (c == LATENCY && !rows[f].has_latency)
                printf(" %9s", "-");
            else
                printf(" %9.3f", (double)rows[f].value[c] / NS_PER_MS);
        }
        if (rows[f].has_kernel)
            printf("  (%" PRIu64 " preemption%s, %" PRIu64 " fault%s)", rows[f].preemptions,
                   rows[f].preemptions == 1 ? "" : "s", rows[f].faults, rows[f].faults == 1 ? "" : "s");
        if (rows[f].dropped)
            printf("  (%" PRIu64 " camera frame%s dropped)", rows[f].dropped, rows[f].dropped == 1 ? "" : "s");
        putchar('\n');
    }
    free(frames);
    free(rows);
    free(values);
    return 0;
}

/* The capture-to-actuation summary, when a camera's frames were traced. */
static int print_latency(const struct latency *latency)
{
    if (!latency->camera_frames)
        return 0;
    puts("\n== Capture to actuation (milliseconds; " NEAREST_RANK "): from a camera frame's capture to the end of the "
         "first actuation after its dequeue");
    if (!latency->count) {
        printf("  no actuation after any of the %zu camera frames (USB transfers out, serial or HID "
               "writes: %zu)\n", latency->camera_frames, latency->actuations);
        return 0;
    }
    int64_t *values = malloc(latency->count * sizeof *values);
    if (!values)
        return -1;
    for (size_t p = 0; p < latency->count; p++)
        values[p] = latency->pairs[p].end - latency->pairs[p].capture;
    double stats[4];
    statistics(values, latency->count, stats);
    free(values);
    printf("  %-14s %9s %9s %9s %9s\n", "", "mean", "p50", "p99", "max");
    char label[40];
    snprintf(label, sizeof label, "%zu pair%s", latency->count, latency->count == 1 ? "" : "s");
    printf("  %-14s %9.3f %9.3f %9.3f %9.3f\n", label, stats[0] / NS_PER_MS, stats[1] / NS_PER_MS,
           stats[2] / NS_PER_MS, stats[3] / NS_PER_MS);
    printf("  (%zu camera frame%s dequeued, %zu not acted on; %zu actuation%s, %zu on no new frame)\n",
           latency->camera_frames, latency->camera_frames == 1 ? "" : "s",
           latency->camera_frames - latency->count, latency->actuations,
           latency->actuations == 1 ? "" : "s", latency->actuations - latency->count);
    return 0;
}

/* ---- capture windows ------------------------------------------------------------ */

static bool is_capture(const struct nvs_event *event)
{
    if (event->kind != NVS_EVENT_RANGE || !event->domain[0] || strcmp(event->domain, "default") == 0 ||
        frame_number(event) || call_domain(event) >= 0 ||
        strcmp(event->domain, nvs_domain_name(NVS_DOMAIN_KERNEL)) == 0)
        return false;
    size_t word = strcspn(event->name, " ");
    return word == 7 && strncmp(event->name, "capture", 7) == 0;
}

static int print_captures(struct nvs_events *events)
{
    size_t count = 0;
    for (size_t i = 0; i < events->count; i++)
        count += is_capture(&events->events[i]);
    if (!count)
        return 0;
    const struct nvs_event **captures = malloc(count * sizeof *captures);
    if (!captures)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < events->count; i++)
        if (is_capture(&events->events[i]))
            captures[n++] = &events->events[i];
    qsort(captures, n, sizeof *captures, compare_by_start);
    printf("\n== Capture windows: %zu\n", n);
    for (size_t c = 0; c < n; c++) {
        const struct nvs_event *window = captures[c];
        uint64_t first = 0, last = 0;
        for (size_t i = 0; i < events->count; i++) {
            const struct nvs_event *frame = &events->events[i];
            if (!is_frame(frame) || frame->start < window->start || frame->start >= window->end)
                continue;
            uint64_t number = frame_number(frame);
            if (!first || number < first)
                first = number;
            if (number > last)
                last = number;
        }
        char label[512], span[64];
        snprintf(label, sizeof label, "%s@%s", window->name, window->domain);
        if (first)
            snprintf(span, sizeof span, "frames %" PRIu64 "-%" PRIu64, first, last);
        else
            snprintf(span, sizeof span, "no frames");
        fputs("  ", stdout);
        put_padded(label, 24, 0);
        printf(" %10.3f ms  %s\n", (double)(window->end - window->start) / NS_PER_MS, span);
    }
    free(captures);
    return 0;
}

/* ---- the command ------------------------------------------------------------------ */

static int usage_error(const char *format, const char *what)
{
    fputs("nvtxshim: report: ", stderr);
    fprintf(stderr, format, what);
    fputs(" (nvtxshim report --help)\n", stderr);
    return 2;
}

int nvs_cli_report(int argc, char **argv)
{
    const char *path = NULL;
    long slowest = DEFAULT_SLOWEST;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(manual, stdout);
            return 0;
        }
    for (int i = 1; i < argc; i++) {
        const char *argument = argv[i];
        if (strcmp(argument, "--slowest") == 0 || strncmp(argument, "--slowest=", 10) == 0) {
            const char *value = argument[9] == '=' ? argument + 10 : (i + 1 < argc ? argv[++i] : NULL);
            char *end;
            errno = 0;
            slowest = value ? strtol(value, &end, 10) : -1;
            if (!value || !*value || *end || errno || slowest < 0)
                return usage_error("--slowest needs a number of frames, 0 or more: '%s'", value ? value : "");
        } else if (strcmp(argument, "--") == 0 && i + 1 < argc && !path) {
            path = argv[++i];
        } else if (argument[0] == '-' && argument[1]) {
            return usage_error("unknown option %s", argument);
        } else if (!path) {
            path = argument;
        } else {
            return usage_error("one file at a time: '%s' is one too many", argument);
        }
    }
    if (!path)
        return usage_error("%swhich file? nvtxshim report FILE [--slowest N]", "");

    struct nvs_events events = {0};
    struct nvs_load_options options = {.command = "report", .what = NVS_LOAD_NVTX};
    if (nvs_events_load(&events, path, &options) != 0) {
        nvs_events_free(&events);
        return 1;
    }
    size_t nvtx = 0;
    for (size_t i = 0; i < events.count; i++)
        nvtx += events.events[i].kind == NVS_EVENT_RANGE || events.events[i].kind == NVS_EVENT_MARK;
    if (!nvtx) {
        fprintf(stderr, "nvtxshim: report: no NVTX events in %s\n", path);
        nvs_events_free(&events);
        return 1;
    }
    struct latency latency;
    int status = pair_captures(&events, &latency);
    if (status == 0)
        status = print_names(&events);
    if (status == 0)
        status = print_marks(&events);
    if (status == 0)
        status = print_frames(&events, slowest, &latency);
    if (status == 0)
        status = print_latency(&latency);
    if (status == 0)
        status = print_captures(&events);
    free(latency.pairs);
    if (status != 0)
        fputs("nvtxshim: report: out of memory\n", stderr);
    if (fflush(stdout) != 0 && status == 0) {
        fprintf(stderr, "nvtxshim: report: cannot write the summary: %s\n", strerror(errno));
        status = -1;
    }
    nvs_events_free(&events);
    return status ? 1 : 0;
}
