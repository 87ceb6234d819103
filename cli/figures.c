/* The figures of a report (figures.h), worked out once from a profile's
 * events: the per-name table, each process's frames (their breakdown into
 * parts by domain and category, the kernel probe's figures, the camera's
 * drops and the capture-to-actuation latency, the statistics, the budget),
 * the latency's summary and the capture windows. Per-frame times are unions
 * of the calls' intervals inside the frame, so nested or overlapping calls
 * count once; a frame is its process's, and counts that process's calls
 * only. report.c prints them as text, report_html.c as a page. */
#define _GNU_SOURCE
#include "figures.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"

#define NS_PER_MS 1e6
#define CALL_DOMAINS 6

static const enum nvs_domain call_domains[CALL_DOMAINS] = {NVS_DOMAIN_USB, NVS_DOMAIN_CUDA,
                                                           NVS_DOMAIN_X11, NVS_DOMAIN_V4L2,
                                                           NVS_DOMAIN_SERIAL, NVS_DOMAIN_HID};
/* The device files' domains: their ranges are named "function /dev/path ..." */
#define FIRST_DEVICE_DOMAIN 3

/* The parts of a frame's calls, in the order of their columns: the cuda
 * domain's calls split by category (copies, waits for the GPU, launches),
 * then the device files' domains (camera: v4l2, serial, hid). Two more lists
 * of intervals: copies and launches together (the cuda column when launches
 * have none), and every call (for the rest). */
enum part { PART_USB, PART_CUDA, PART_WAIT, PART_LAUNCH, PART_X11, PART_CAMERA, PART_SERIAL,
            PART_HID, PARTS, PART_CUDA_AND_LAUNCHES = PARTS, PART_ALL, PART_LISTS };

const char *const nvs_report_column_names[NVS_COLUMNS] = {
    "total", "usb", "cuda", "gpu wait", "launch", "x11", "camera", "serial", "hid", "rest",
    "runnable", "blocked", "latency"};

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

/* Mean, p50, p99 and max of VALUES (COUNT > 0, sorted here), in the order of
 * enum nvs_report_statistic. */
static void statistics(int64_t *values, size_t count, double out[NVS_STATS])
{
    int64_t sum = 0;
    for (size_t i = 0; i < count; i++)
        sum += values[i];
    qsort(values, count, sizeof *values, compare_int64);
    out[NVS_STAT_MEAN] = (double)sum / (double)count;
    out[NVS_STAT_P50] = (double)percentile(values, count, 50);
    out[NVS_STAT_P99] = (double)percentile(values, count, 99);
    out[NVS_STAT_MAX] = (double)values[count - 1];
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

/* ---- marks by kind --------------------------------------------------------------- */

/* A mark's kind: TEXT with each number written N. A number starts a word or
 * follows punctuation (the 2 of "cuMemcpy2D" or "H264" is no number): 0x and
 * its hex digits, or digits and their decimals. A word of three or more small
 * letters after a number, that ends at a space, punctuation or the text's end,
 * is counted by it, singular or plural: "frame" and "frames" are both
 * "frame(s)" ("ms", "IN" and the "req" of "req=0x01" are left as they are).
 * OUT has room for TEXT and 3 bytes more a word. */
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
        size_t letters = 0;
        while (c[0] == ' ' && islower(c[1 + letters]))
            letters++;
        /* a word of prose: it ends the text or is followed by a space or punctuation
         * (not "req=", a name in a list of settings) */
        if (letters >= 3 && (c[1 + letters] == '\0' || strchr(" ,.;:)", c[1 + letters]))) {
            size_t kept = c[letters] == 's' ? letters - 1 : letters;
            memcpy(out + length, c, kept + 1);
            memcpy(out + length + kept + 1, "(s)", 3);
            length += kept + 4;
            c += letters + 1;
        }
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
    int order = nvs_compare_interned(x->domain, y->domain);
    if (!order)
        order = nvs_compare_interned(x->kind, y->kind);
    if (!order)
        order = nvs_compare_interned(x->text, y->text);
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
    int order = nvs_compare_interned(x->domain, y->domain);
    if (!order && x->last - x->first != y->last - y->first)
        order = (x->last - x->first < y->last - y->first) - (x->last - x->first > y->last - y->first);
    if (!order)
        order = nvs_compare_interned(rows[x->first].kind, rows[y->first].kind);
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

/* The marks by kind (figures.h): each mark's kind, the marks sorted by domain,
 * kind, text and time, a group per kind and, in each, per text. */
static int compute_marks(struct nvs_events *events, struct nvs_report *report)
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
    char *kind = malloc(2 * longest + 1);     /* "1 abc" (5 bytes) is "N abc(s)" (8) */
    int status = kernel_figures && rows && kinds && texts && kind ? 0 : -1;
    size_t n = 0;
    for (size_t i = 0; status == 0 && i < events->count; i++) {
        const struct nvs_event *event = &events->events[i];
        if (event->kind != NVS_EVENT_MARK)
            continue;
        /* the kernel probe's mark at each frame's end: one kind, its figures
         * are in the per-frame table */
        struct kernel_mark mark;
        const char *interned = kernel_figures;
        if (!parse_kernel_mark(event, &mark))
            interned = nvs_events_intern(events, kind, mark_kind(event->name, kind));
        if (!interned)
            status = -1;
        rows[n++] = (struct mark_row){event->domain, interned, event->name, event->start, i};
    }
    size_t kind_count = 0;
    if (status == 0) {
        qsort(rows, n, sizeof *rows, compare_mark_rows);
        for (size_t first = 0; first < n;) {
            size_t last = first + 1;
            while (last < n && !nvs_compare_interned(rows[last].domain, rows[first].domain) &&
                   !nvs_compare_interned(rows[last].kind, rows[first].kind))
                last++;
            kinds[kind_count++] = (struct mark_group){rows[first].domain, first, last, 0};
            first = last;
        }
        qsort_r(kinds, kind_count, sizeof *kinds, compare_kinds, rows);
        if (!(report->marks = malloc(kind_count * sizeof *report->marks)))
            status = -1;
    }
    for (size_t k = 0; status == 0 && k < kind_count; k++) {
        const struct mark_group *group = &kinds[k];
        size_t text_count = 0;
        for (size_t first = group->first; first < group->last;) {
            size_t last = first + 1;
            while (last < group->last && !nvs_compare_interned(rows[last].text, rows[first].text))
                last++;
            texts[text_count++] = (struct mark_group){NULL, first, last, rows[first].start};
            first = last;
        }
        struct nvs_report_mark_kind *out = &report->marks[report->mark_kind_count++];
        *out = (struct nvs_report_mark_kind){group->domain, rows[group->first].kind,
                                             group->last - group->first, text_count, 0, {{0}}};
        if (text_count == 1 && !nvs_compare_interned(rows[group->first].text, rows[group->first].kind))
            continue;
        qsort(texts, text_count, sizeof *texts, compare_texts);
        for (size_t t = 0; t < text_count && t < NVS_MARK_EXAMPLES; t++)
            out->examples[out->example_count++] = (struct nvs_report_mark_text){
                rows[texts[t].first].text, texts[t].last - texts[t].first};
    }
    free(rows);
    free(kinds);
    free(texts);
    free(kind);
    return status;
}

/* ---- per range name ------------------------------------------------------------ */

struct named_duration {
    const char *domain, *name;
    int64_t duration;
};

static int compare_named(const void *a, const void *b)
{
    const struct named_duration *x = a, *y = b;
    int order = nvs_compare_interned(x->domain, y->domain);
    if (!order)
        order = nvs_compare_interned(x->name, y->name);
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

/* A per-name table into *NAMES (*NAME_COUNT rows): per domain and table name,
 * the ranges' count and statistics; of every process, or of process PID alone
 * (ONE_PROCESS). */
static int compute_names_of(struct nvs_events *events, bool one_process, uint32_t pid,
                            struct nvs_report_name **names, size_t *name_count)
{
    size_t ranges = 0;
    for (size_t i = 0; i < events->count; i++)
        ranges += events->events[i].kind == NVS_EVENT_RANGE &&
                  (!one_process || events->events[i].pid == pid);
    struct named_duration *rows = malloc((ranges + 1) * sizeof *rows);
    int64_t *values = malloc((ranges + 1) * sizeof *values);
    *names = malloc((ranges + 1) * sizeof **names);
    *name_count = 0;
    if (!rows || !values || !*names) {
        free(rows);
        free(values);
        return -1;
    }
    size_t count = 0;
    for (size_t i = 0; i < events->count; i++) {
        const struct nvs_event *event = &events->events[i];
        if (event->kind != NVS_EVENT_RANGE || (one_process && event->pid != pid))
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
    for (size_t first = 0; first < count;) {
        size_t last = first;
        while (last < count && rows[last].domain == rows[first].domain &&
               rows[last].name == rows[first].name) {
            values[last - first] = rows[last].duration;
            last++;
        }
        struct nvs_report_name *row = &(*names)[(*name_count)++];
        row->domain = rows[first].domain;
        row->name = rows[first].name;
        row->count = last - first;
        statistics(values, row->count, row->stats);
        first = last;
    }
    free(rows);
    free(values);
    return 0;
}

static int compute_names(struct nvs_events *events, struct nvs_report *report)
{
    return compute_names_of(events, false, 0, &report->names, &report->name_count);
}

/* Each process's own table, where there are several. */
static int compute_process_names(struct nvs_events *events, struct nvs_report *report)
{
    for (size_t p = 0; p < report->process_count && report->process_count > 1; p++) {
        struct nvs_report_process *process = &report->processes[p];
        if (compute_names_of(events, true, process->pid, &process->names, &process->name_count) != 0)
            return -1;
    }
    return 0;
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

/* A launch column is shown once some frame's launches take 0.001 ms as printed. */
#define LAUNCH_SHOWN_NS 500

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

/* By process, then start: a process's frames, or calls, side by side. */
static int compare_by_pid_and_start(const void *a, const void *b)
{
    const struct nvs_event *x = *(const struct nvs_event *const *)a;
    const struct nvs_event *y = *(const struct nvs_event *const *)b;
    if (x->pid != y->pid)
        return (x->pid > y->pid) - (x->pid < y->pid);
    return compare_by_start(a, b);
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

/* ---- each process's frames, measured ------------------------------------------ */

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

/* What every process's frames are measured against, gathered once: the calls
 * that count toward a frame (by process, then start), the kernel probe's
 * marks, the camera's drops and the capture-to-actuation pairs. */
struct frame_sources {
    const struct nvs_event **calls;
    size_t call_count;
    int64_t longest_call;
    struct interval *parts[PART_LISTS];      /* room for every call, reused per frame */
    struct kernel_mark *marks;               /* by pid, then frame number */
    size_t mark_count;
    const struct nvs_event **drops;
    size_t drop_count;
    const struct latency *latency;
};

/* Each frame's parts: the union of each part's intervals clipped to it, of its
 * own process's calls only (another process's work is not the loop's, though it
 * ran at the same time). The cuda column with launches in CUDA_AND_LAUNCHES. */
static void breakdown(const struct nvs_event **frames, size_t frame_count, struct frame_sources *sources,
                      struct nvs_report_frame *rows, int64_t *cuda_and_launches)
{
    const struct nvs_event **calls = sources->calls;
    size_t n = sources->call_count;
    struct interval **parts = sources->parts;
    for (size_t f = 0; f < frame_count; f++) {
        const struct nvs_event *frame = frames[f];
        /* the process's calls that can overlap the frame: from its start less the longest call */
        int64_t from = frame->start - sources->longest_call;
        size_t low = 0, high = n;
        while (low < high) {
            size_t middle = (low + high) / 2;
            if (calls[middle]->pid < frame->pid ||
                (calls[middle]->pid == frame->pid && calls[middle]->start < from))
                low = middle + 1;
            else
                high = middle;
        }
        size_t counts[PART_LISTS] = {0};
        for (size_t i = low; i < n && calls[i]->pid == frame->pid && calls[i]->start < frame->end; i++) {
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
        struct nvs_report_frame *row = &rows[f];
        memset(row, 0, sizeof *row);
        row->number = frame_number(frame);
        row->start = frame->start;
        row->value[NVS_COLUMN_TOTAL] = frame->end - frame->start;
        for (int d = 0; d < PARTS; d++)
            row->value[NVS_COLUMN_USB + d] = union_length(parts[d], counts[d]);
        cuda_and_launches[f] = union_length(parts[PART_CUDA_AND_LAUNCHES], counts[PART_CUDA_AND_LAUNCHES]);
        row->value[NVS_COLUMN_REST] =
            row->value[NVS_COLUMN_TOTAL] - union_length(parts[PART_ALL], counts[PART_ALL]);
    }
}

/* The kernel figures of each row: the frame range's own (trace files), else
 * the probe's mark for that frame in that process. Returns the rows that have
 * them. */
static size_t attach_kernel_figures(const struct nvs_event **frames, struct nvs_report_frame *rows,
                                    size_t frame_count, const struct frame_sources *sources)
{
    size_t with = 0;
    for (size_t f = 0; f < frame_count; f++) {
        const struct nvs_offcpu *figures = frames[f]->offcpu;
        if (!figures && sources->mark_count) {
            struct kernel_mark key = {.pid = frames[f]->pid, .number = rows[f].number};
            const struct kernel_mark *found = bsearch(&key, sources->marks, sources->mark_count,
                                                      sizeof *sources->marks, compare_kernel_marks);
            figures = found ? &found->figures : NULL;
        }
        if (!figures)
            continue;
        rows[f].has_kernel = true;
        rows[f].value[NVS_COLUMN_RUNNABLE] = (int64_t)figures->runnable_ns;
        rows[f].value[NVS_COLUMN_BLOCKED] = (int64_t)figures->blocked_ns;
        rows[f].preemptions = figures->preemptions;
        rows[f].faults = figures->faults;
        with++;
    }
    return with;
}

/* Each row's latency (its first pair's, by the actuation's start) and camera
 * frames dropped, of PROCESS's pairs and drops (FRAMES: its frames in start
 * order); its drops in all and in none of its frames. */
static void attach_camera(const struct nvs_event **frames, struct nvs_report_process *process,
                          const struct frame_sources *sources)
{
    struct nvs_report_frame *rows = process->frames;
    size_t count = process->count;
    int64_t longest = 0;
    for (size_t f = 0; f < count; f++)
        if (frames[f]->end - frames[f]->start > longest)
            longest = frames[f]->end - frames[f]->start;
    const struct latency *latency = sources->latency;
    for (size_t p = 0; p < latency->count; p++) {
        const struct latency_pair *pair = &latency->pairs[p];
        long f = pair->pid == process->pid ? frame_at(frames, count, longest, pair->pid, pair->start) : -1;
        if (f >= 0 && !rows[f].has_latency) {
            rows[f].has_latency = true;
            rows[f].value[NVS_COLUMN_LATENCY] = pair->end - pair->capture;
            process->with_latency++;
        }
    }
    uint64_t dropped;
    for (size_t i = 0; i < sources->drop_count; i++) {
        const struct nvs_event *drop = sources->drops[i];
        if (drop->pid != process->pid || !is_drop(drop, &dropped))
            continue;
        long f = frame_at(frames, count, longest, drop->pid, drop->start);
        if (f >= 0)
            rows[f].dropped += dropped;
        else
            process->dropped_outside += dropped;
        process->dropped += dropped;
    }
}

/* The budget B of the library's mark "over budget frame N: T ms > B ms" in
 * domain nvtxshim, in ns; 0 when EVENT is no such mark. */
static int64_t budget_of_mark(const struct nvs_event *event)
{
    int64_t budget_ns;
    if (event->kind != NVS_EVENT_MARK || !in_domain(event, NVS_DOMAIN_SHIM) ||
        !nvs_over_budget_read(event->name, &budget_ns))
        return 0;
    return budget_ns;
}

/* The process of PID in REPORT's (by pid); NULL when it counts no frames. */
static struct nvs_report_process *process_of(struct nvs_report *report, uint32_t pid)
{
    size_t low = 0, high = report->process_count;
    while (low < high) {
        size_t middle = (low + high) / 2;
        if (report->processes[middle].pid == pid)
            return &report->processes[middle];
        if (report->processes[middle].pid < pid)
            low = middle + 1;
        else
            high = middle;
    }
    return NULL;
}

/* PID's name: the process's own, else its main thread's; NULL when the file
 * names neither (an nsys export read for NVTX alone has no names). */
static const char *process_name(const struct nvs_events *events, uint32_t pid)
{
    const char *thread = NULL;
    for (size_t i = 0; i < events->name_count; i++) {
        const struct nvs_thread_name *known = &events->names[i];
        if (known->pid == pid && known->tid == 0)
            return known->name;
        if (known->pid == pid && known->tid == pid)
            thread = known->name;
    }
    return thread;
}

/* The slowest first; frames as long keep their start order. */
static int compare_slowest(const void *a, const void *b, void *frames_argument)
{
    const struct nvs_report_frame *frames = frames_argument;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int64_t tx = frames[x].value[NVS_COLUMN_TOTAL], ty = frames[y].value[NVS_COLUMN_TOTAL];
    if (tx != ty)
        return (tx < ty) - (tx > ty);
    return (x > y) - (x < y);
}

/* PROCESS's rows from its FRAMES (in start order): the breakdown, the kernel
 * figures, the latency and drops, the columns its data has (the device
 * columns were chosen by the caller), their statistics, the slowest frames
 * and those over the budget. VALUES and CUDA_AND_LAUNCHES have room for its
 * frames. */
static void measure_process(const struct nvs_event **frames, struct nvs_report_process *process,
                            struct frame_sources *sources, int64_t *values, int64_t *cuda_and_launches)
{
    size_t n = process->count;
    struct nvs_report_frame *rows = process->frames;
    breakdown(frames, n, sources, rows, cuda_and_launches);
    process->with_kernel = attach_kernel_figures(frames, rows, n, sources);
    attach_camera(frames, process, sources);
    /* Launches that take no time that shows count with the copies, in cuda. */
    bool launches = false;
    for (size_t f = 0; f < n; f++)
        launches = launches || rows[f].value[NVS_COLUMN_LAUNCH] >= LAUNCH_SHOWN_NS;
    for (size_t f = 0; f < n && !launches; f++)
        rows[f].value[NVS_COLUMN_CUDA] = cuda_and_launches[f];
    bool *shown = process->shown;
    for (int c = NVS_COLUMN_TOTAL; c <= NVS_COLUMN_REST; c++)
        if (c != NVS_COLUMN_CAMERA && c != NVS_COLUMN_SERIAL && c != NVS_COLUMN_HID)
            shown[c] = true;
    shown[NVS_COLUMN_LAUNCH] = launches;
    shown[NVS_COLUMN_RUNNABLE] = shown[NVS_COLUMN_BLOCKED] = process->with_kernel > 0;
    shown[NVS_COLUMN_LATENCY] = process->with_latency > 0;
    for (int c = 0; c < NVS_COLUMNS; c++) {
        if (!shown[c])
            continue;
        size_t m = 0;
        for (size_t f = 0; f < n; f++)
            if (c != NVS_COLUMN_LATENCY || rows[f].has_latency)
                values[m++] = rows[f].value[c];
        statistics(values, m, process->stats[c]);
    }
    for (size_t f = 0; f < n; f++)
        process->slowest[f] = f;
    qsort_r(process->slowest, n, sizeof *process->slowest, compare_slowest, rows);
    for (size_t f = 0; f < n; f++)
        process->over_budget += nvs_report_over_budget(process, &rows[f]);
}

/* Each process's frames, measured. BUDGET_NS: --budget's, 0 for none (then
 * each process's own from the library's marks, when it has them). */
static int build_frames(struct nvs_events *events, const struct latency *latency, int64_t budget_ns,
                        struct nvs_report *report)
{
    size_t frame_count = 0, call_count = 0, mark_count = 0, drop_count = 0;
    uint64_t dropped;
    for (size_t i = 0; i < events->count; i++) {
        const struct nvs_event *event = &events->events[i];
        frame_count += is_frame(event);
        call_count += counts_toward_frame(event);
        mark_count += event->kind == NVS_EVENT_MARK && in_domain(event, NVS_DOMAIN_KERNEL);
        drop_count += is_drop(event, &dropped);
    }
    if (!frame_count)
        return 0;
    struct frame_sources sources = {.latency = latency};
    const struct nvs_event **frames = malloc(frame_count * sizeof *frames);
    int64_t *values = malloc(frame_count * sizeof *values);
    int64_t *cuda_and_launches = malloc(frame_count * sizeof *cuda_and_launches);
    int64_t *budget_marked_at = malloc(frame_count * sizeof *budget_marked_at);
    sources.calls = malloc((call_count + 1) * sizeof *sources.calls);
    sources.marks = malloc((mark_count + 1) * sizeof *sources.marks);
    sources.drops = malloc((drop_count + 1) * sizeof *sources.drops);
    bool ok = frames && values && cuda_and_launches && budget_marked_at && sources.calls &&
              sources.marks && sources.drops;
    for (int d = 0; d < PART_LISTS; d++)
        ok = (sources.parts[d] = malloc((call_count + 1) * sizeof *sources.parts[d])) != NULL && ok;
    if (ok) {
        size_t n = 0;
        for (size_t i = 0; i < events->count; i++) {
            const struct nvs_event *event = &events->events[i];
            if (is_frame(event))
                frames[n++] = event;
            if (counts_toward_frame(event)) {
                sources.calls[sources.call_count++] = event;
                if (event->end - event->start > sources.longest_call)
                    sources.longest_call = event->end - event->start;
            }
            if (parse_kernel_mark(event, &sources.marks[sources.mark_count]))
                sources.mark_count++;
            if (is_drop(event, &dropped))
                sources.drops[sources.drop_count++] = event;
        }
        qsort(frames, n, sizeof *frames, compare_by_pid_and_start);
        qsort(sources.calls, sources.call_count, sizeof *sources.calls, compare_by_pid_and_start);
        qsort(sources.marks, sources.mark_count, sizeof *sources.marks, compare_kernel_marks);
        size_t processes = 0;
        for (size_t f = 0; f < n; f++)
            processes += f == 0 || frames[f]->pid != frames[f - 1]->pid;
        report->processes = calloc(processes, sizeof *report->processes);
        ok = report->processes != NULL;
        for (size_t f = 0; ok && f < n; f++) {
            if (f > 0 && frames[f]->pid == frames[f - 1]->pid) {
                report->processes[report->process_count - 1].count++;
                continue;
            }
            struct nvs_report_process *process = &report->processes[report->process_count++];
            process->pid = frames[f]->pid;
            process->name = process_name(events, process->pid);
            process->count = 1;
        }
    }
    /* The device columns a process has (its own calls or marks in their domains)
     * and the budget of its first over-budget mark. */
    for (size_t i = 0; ok && i < events->count; i++) {
        const struct nvs_event *event = &events->events[i];
        if (event->kind != NVS_EVENT_RANGE && event->kind != NVS_EVENT_MARK)
            continue;
        struct nvs_report_process *process = process_of(report, event->pid);
        if (!process)
            continue;
        process->shown[NVS_COLUMN_CAMERA] |= in_domain(event, NVS_DOMAIN_V4L2);
        process->shown[NVS_COLUMN_SERIAL] |= in_domain(event, NVS_DOMAIN_SERIAL);
        process->shown[NVS_COLUMN_HID] |= in_domain(event, NVS_DOMAIN_HID);
        int64_t marked = budget_of_mark(event);
        size_t p = (size_t)(process - report->processes);
        if (marked && (!process->budget_ns || event->start < budget_marked_at[p])) {
            process->budget_ns = marked;
            budget_marked_at[p] = event->start;
        }
    }
    for (size_t p = 0, first = 0; ok && p < report->process_count; p++) {
        struct nvs_report_process *process = &report->processes[p];
        process->budget_from = process->budget_ns ? NVS_BUDGET_MARKS : NVS_BUDGET_NONE;
        if (budget_ns) {
            process->budget_ns = budget_ns;
            process->budget_from = NVS_BUDGET_OPTION;
        }
        process->frames = malloc(process->count * sizeof *process->frames);
        process->slowest = malloc(process->count * sizeof *process->slowest);
        ok = process->frames && process->slowest;
        if (ok)
            measure_process(frames + first, process, &sources, values, cuda_and_launches);
        first += process->count;
    }
    free(frames);
    free(values);
    free(cuda_and_launches);
    free(budget_marked_at);
    free(sources.calls);
    free(sources.marks);
    free(sources.drops);
    for (int d = 0; d < PART_LISTS; d++)
        free(sources.parts[d]);
    return ok ? 0 : -1;
}
/* The capture-to-actuation summary, over every process's pairs. */
static int compute_latency(const struct latency *latency, struct nvs_report *report)
{
    report->latency.pairs = latency->count;
    report->latency.camera_frames = latency->camera_frames;
    report->latency.actuations = latency->actuations;
    if (!latency->count)
        return 0;
    int64_t *values = malloc(latency->count * sizeof *values);
    if (!values)
        return -1;
    for (size_t p = 0; p < latency->count; p++)
        values[p] = latency->pairs[p].end - latency->pairs[p].capture;
    statistics(values, latency->count, report->latency.stats);
    free(values);
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

static int compute_windows(const struct nvs_events *events, struct nvs_report *report)
{
    size_t count = 0;
    for (size_t i = 0; i < events->count; i++)
        count += is_capture(&events->events[i]);
    if (!count)
        return 0;
    const struct nvs_event **captures = malloc(count * sizeof *captures);
    report->windows = malloc(count * sizeof *report->windows);
    if (!captures || !report->windows) {
        free(captures);
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < events->count; i++)
        if (is_capture(&events->events[i]))
            captures[n++] = &events->events[i];
    qsort(captures, n, sizeof *captures, compare_by_start);
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
        report->windows[report->window_count++] = (struct nvs_report_window){
            window->name, window->domain, window->end - window->start, first, last};
    }
    free(captures);
    return 0;
}
static void free_report(struct nvs_report *report)
{
    for (size_t p = 0; p < report->process_count; p++) {
        free(report->processes[p].frames);
        free(report->processes[p].slowest);
        free(report->processes[p].names);
    }
    free(report->processes);
    free(report->names);
    free(report->marks);
    free(report->windows);
}

int nvs_figures_compute(struct nvs_events *events, int64_t budget_ns, struct nvs_report *report)
{
    struct latency latency;
    int status = pair_captures(events, &latency);
    if (status == 0)
        status = compute_names(events, report);
    if (status == 0)
        status = compute_marks(events, report);
    if (status == 0)
        status = build_frames(events, &latency, budget_ns, report);
    if (status == 0)
        status = compute_process_names(events, report);
    if (status == 0)
        status = compute_latency(&latency, report);
    if (status == 0)
        status = compute_windows(events, report);
    free(latency.pairs);
    return status;
}

void nvs_figures_free(struct nvs_report *report)
{
    free_report(report);
}
