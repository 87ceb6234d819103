/* The figures of a report (figures.h), worked out from a profile's events as
 * they are read, in memory that does not grow with them: the per-name table, each process's frames (their breakdown into
 * parts by domain and category, the kernel probe's figures, the camera's
 * drops and the capture-to-actuation latency, the statistics, the budget),
 * the latency's summary and the capture windows. Per-frame times are unions
 * of the calls' intervals inside the frame, so nested or overlapping calls
 * count once; a frame is its process's, and counts that process's calls
 * only. report.c prints them as text, report_html.c as a page. */
#define _GNU_SOURCE
#include "model/figures.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/events.h"
#include "util/grow.h"
#include "util/map.h"

#define NS_PER_MS 1e6

/* Which calls fall in a column (columns.def): those of its domain (none for a
 * figure of its own), all of them or those of a CUDA category (the rules by
 * category last). */
#define NVS_DOMAIN_NONE NVS_DOMAIN_COUNT
enum rule { RULE_OWN, RULE_CALLS, RULE_DEVICE, RULE_CUDA_COPY, RULE_CUDA_WAIT, RULE_CUDA_LAUNCH };
#define BY_CATEGORY(rule) ((rule) >= RULE_CUDA_COPY)
static const struct {
    enum nvs_domain domain;
    enum rule rule;
} columns[NVS_COLUMNS] = {
#define NVS_COLUMN(ID, HEADING, KEY, PHRASE, CLASS, COLOUR, LEGEND, DOMAIN, RULE) \
    [NVS_COLUMN_##ID] = {NVS_DOMAIN_##DOMAIN, RULE_##RULE},
#include "model/columns.def"
#undef NVS_COLUMN
};

const char *const nvs_report_column_names[NVS_COLUMNS] = {
#define NVS_COLUMN(ID, HEADING, KEY, PHRASE, CLASS, COLOUR, LEGEND, DOMAIN, RULE) [NVS_COLUMN_##ID] = HEADING,
#include "model/columns.def"
#undef NVS_COLUMN
};

/* The parts of a frame's calls, numbered from 0 in the order of their columns
 * (PART(NVS_COLUMN_USB) to the one before REST). Two more lists of intervals:
 * copies and launches together (the cuda column when launches have none), and
 * every call (for the rest). */
#define PART(column) ((column) - NVS_FIRST_PART)
#define PARTS PART(NVS_LAST_PART)
enum { PART_CUDA_AND_LAUNCHES = PARTS, PART_ALL, PART_LISTS };

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

/* The first column that counts calls of EVENT's domain; -1 for none. */
static int call_column(const struct nvs_event *event)
{
    for (int c = 0; c < NVS_COLUMNS; c++)
        if (columns[c].domain != NVS_DOMAIN_NONE && (c == 0 || columns[c].domain != columns[c - 1].domain) &&
            strcmp(event->domain, nvs_domain_name(columns[c].domain)) == 0)
            return c;
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

/* The column EVENT, a call (call_column >= 0), counts in: its domain's, or
 * where its domain's columns are by CUDA category, its category's. */
static int call_part_column(const struct nvs_event *event)
{
    static const enum rule of_category[] = {[NVS_CUDA_COPY] = RULE_CUDA_COPY, [NVS_CUDA_WAIT] = RULE_CUDA_WAIT,
                                            [NVS_CUDA_LAUNCH] = RULE_CUDA_LAUNCH};
    int first = call_column(event);
    if (!BY_CATEGORY(columns[first].rule))
        return first;
    enum rule rule = of_category[nvs_cuda_category_of(event->name)];
    for (int c = first; c < NVS_COLUMNS && columns[c].domain == columns[first].domain; c++)
        if (columns[c].rule == rule)
            return c;
    return first;
}

/* The part of a frame EVENT, a call (call_column >= 0), counts in. */
static unsigned call_part(const struct nvs_event *event)
{
    return (unsigned)PART(call_part_column(event));
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
    return event->kind == NVS_EVENT_RANGE && call_column(event) >= 0 &&
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


/* ---- per range name: the table's names ---------------------------------------- */

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
    int column = call_column(event);
    if (column >= 0 && columns[column].rule == RULE_DEVICE) {
        /* "function /dev/path": per device */
        const char *space = strchr(event->name, ' ');
        if (space && (space = strchr(space + 1, ' ')))
            return nvs_events_intern(events, event->name, (size_t)(space - event->name));
        return event->name;
    }
    if (column >= 0 && columns[call_part_column(event)].rule != RULE_CUDA_LAUNCH) {
        const char *space = strchr(event->name, ' ');
        if (space)
            return nvs_events_intern(events, event->name, (size_t)(space - event->name));
    }
    return event->name;
}

/* A capture window: a "capture ..." range of an NVTX domain of the program's. */
static bool is_capture(const struct nvs_event *event)
{
    if (event->kind != NVS_EVENT_RANGE || !event->domain[0] || strcmp(event->domain, "default") == 0 ||
        frame_number(event) || call_column(event) >= 0 ||
        strcmp(event->domain, nvs_domain_name(NVS_DOMAIN_KERNEL)) == 0)
        return false;
    size_t word = strcspn(event->name, " ");
    return word == 7 && strncmp(event->name, "capture", 7) == 0;
}

/* ---- what the builder keeps ------------------------------------------------------- */

/* A launch column is shown once some frame's launches take 0.001 ms as printed. */
#define LAUNCH_SHOWN_NS 500

/* The limits below can be made small for test/unit/test_figures.c, which
 * builds this file with its own. */
/* Durations kept exactly, of every name together: past it, the names with the
 * most give theirs to a sketch (p50 and p99 then within NVS_SKETCH_ERROR). */
#ifndef EXACT_VALUES_MAX
#define EXACT_VALUES_MAX ((size_t)2 << 20)
#endif
/* Call intervals held for frames still open and calls waiting for their frame:
 * past it, the oldest open frames are closed. */
#ifndef HELD_INTERVALS_MAX
#define HELD_INTERVALS_MAX ((size_t)1 << 20)
#endif
/* Frames open at once (a ring): past it, the oldest is closed. */
#ifndef OPEN_FRAMES_MAX
#define OPEN_FRAMES_MAX ((size_t)1 << 16)
#endif
/* The texts a kind of marks tells apart: past it, marks of new texts are counted only. */
#ifndef MARK_TEXTS_MAX
#define MARK_TEXTS_MAX 4096
#endif

/* A log-linear histogram of durations: values below 2 * SKETCH_SUB exactly,
 * then SKETCH_SUB buckets a power of two, so a bucket's middle is within
 * 1/(2 * SKETCH_SUB) of any value in it (0.39 %). */
#define SKETCH_SUB 128
#define SKETCH_BUCKETS (2 * SKETCH_SUB + 56 * SKETCH_SUB)

static size_t sketch_index(int64_t value)
{
    if (value < 2 * SKETCH_SUB)
        return value < 0 ? 0 : (size_t)value;
    unsigned top = 63u - (unsigned)__builtin_clzll((unsigned long long)value);   /* >= 8 */
    unsigned shift = top - 7;
    size_t index = 2 * SKETCH_SUB + (size_t)(top - 8) * SKETCH_SUB +
                   (size_t)(((uint64_t)value >> shift) - SKETCH_SUB);
    return index < SKETCH_BUCKETS ? index : SKETCH_BUCKETS - 1;
}

/* The middle of bucket INDEX. */
static int64_t sketch_value(size_t index)
{
    if (index < 2 * SKETCH_SUB)
        return (int64_t)index;
    size_t above = index - 2 * SKETCH_SUB;
    unsigned shift = (unsigned)(above / SKETCH_SUB) + 1;
    uint64_t low = (uint64_t)(SKETCH_SUB + above % SKETCH_SUB) << shift;
    return (int64_t)(low + (1ull << (shift - 1)));
}

struct interval {
    int64_t start, end;
};

/* A call's interval in a frame, its part and its name. */
struct part_interval {
    int64_t start, end;
    const char *name;
    uint32_t part;
};

/* A range name's durations in one process. */
struct name_acc {
    const char *domain, *name;
    uint32_t pid;
    size_t count;
    int64_t sum, max;
    int64_t *values;                 /* exact, while sketch is NULL */
    size_t value_count, value_capacity;
    uint64_t *sketch;                /* SKETCH_BUCKETS counts, once the values gave way */
};

struct mark_text {
    const char *text;
    size_t count;
    int64_t start;                   /* its first mark's */
    uint64_t order;
};

struct mark_acc {
    const char *domain, *kind;
    size_t count;
    struct mark_text *texts;
    size_t text_count, text_capacity;
    struct map index;                /* a text (its pointer) -> its place in texts */
    bool more_texts;                 /* texts past MARK_TEXTS_MAX were not told apart */
};


/* A frame whose calls are still gathered. */
struct open_frame {
    size_t proc, row;
    struct part_interval *items;
    size_t count, capacity;
};

#define NOT_OPEN UINT64_MAX

/* A process: what its ranges and marks say, and its frames, as rows in start
 * order, and its calls waiting for a frame. */
struct proc {
    uint32_t pid;
    bool device[NVS_COLUMNS];        /* the device columns it has: calls or marks in their domains */
    int64_t budget_ns, budget_at;    /* of its first over-budget mark */
    struct nvs_report_frame *rows;   /* value[REST]: time its calls cover, value[LATENCY]: its
                                      * copies and launches together, until the report */
    uint64_t *open;                  /* per row: its open frame's number, or NOT_OPEN */
    size_t count, capacity;
    int64_t longest, last_end;
    struct part_interval *pending;   /* calls that reach past its last frame */
    size_t pending_count, pending_capacity;
    int64_t dropped_end;             /* the latest end of a call in no frame it had then */
    bool calls_seen;
    size_t late;                     /* calls that came after their frame was closed */
    bool estimated;
    /* what a live view needs of the frames closed: whether launches show, and
     * the slowest (the first of the longest) with its longest calls */
    bool launches, has_slowest;
    bool spent[NVS_COLUMNS];         /* the part columns some closed frame spent time in */
    int64_t slowest_total, slowest_start;
    struct nvs_report_call slowest_calls[NVS_SLOWEST_CALLS];
    size_t slowest_call_count;
};

/* A camera frame the loop dequeued: its capture timestamp is the frame age
 * range's end less its payload (the age), in every reader. */
struct camera_frame {
    uint32_t pid;
    int64_t capture, dequeue;
    bool consumed;
};

struct actuation {
    uint32_t pid;
    int64_t start, end;
    uint64_t order;
};

struct drop {
    uint32_t pid;
    int64_t start;
    uint64_t count;
};

struct capture {
    const char *name, *domain;
    int64_t start, end;
    uint64_t order;
};

struct nvs_figures_builder {
    struct nvs_events *events;       /* where names are interned */
    int64_t budget_ns;
    uint64_t order;
    size_t nvtx_events;              /* ranges and marks */
    bool failed;
    const char *frame_n, *kernel_kind;
    char *kind_text;
    size_t kind_text_size;

    struct name_acc *names;
    size_t name_count, name_capacity, exact_values;
    struct map name_index;

    struct mark_acc *marks;
    size_t mark_count, mark_capacity;
    struct map mark_index;

    struct proc *procs;
    size_t proc_count, proc_capacity;
    struct map proc_index;

    struct open_frame *open;         /* a ring of OPEN_FRAMES_MAX, the oldest at open_first */
    uint64_t open_first, open_next;  /* numbers of the oldest and of the next */
    size_t held;                     /* intervals held, open frames' and pending */

    struct kernel_mark *kernel_marks;
    size_t kernel_mark_count, kernel_mark_capacity;
    struct camera_frame *camera_frames;
    size_t camera_frame_count, camera_frame_capacity;
    struct actuation *actuations;
    size_t actuation_count, actuation_capacity;
    struct drop *drops;
    size_t drop_count, drop_capacity;
    struct capture *captures;
    size_t capture_count, capture_capacity;
};

/* Room for one more in *ITEMS (COUNT of SIZE, room for *CAPACITY); false (the
 * builder failed) when out of memory. */
static bool grow(struct nvs_figures_builder *builder, void **items, size_t count, size_t *capacity,
                 size_t size)
{
    void *grown = nvs_room_for_one(*items, count, capacity, size, 16);
    if (!grown) {
        builder->failed = true;
        return false;
    }
    *items = grown;
    return true;
}
#define GROW(builder, array, count, capacity) \
    grow((builder), (void **)&(array), (count), &(capacity), sizeof *(array))

static uint64_t pointer_hash(const void *pointer)
{
    return nvs_map_mix((uint64_t)(uintptr_t)pointer);
}

/* ---- per range name ------------------------------------------------------------ */

static struct name_acc *name_acc_of(struct nvs_figures_builder *builder, const char *domain,
                                    const char *name, uint32_t pid)
{
    uint64_t key = pointer_hash(domain) ^ nvs_map_mix(pointer_hash(name));
    for (struct map_slot *slot = nvs_map_find(&builder->name_index, key, pid); slot;
         slot = nvs_map_next(&builder->name_index, slot)) {
        struct name_acc *acc = &builder->names[slot->value];
        if (acc->domain == domain && acc->name == name)
            return acc;
    }
    if (!GROW(builder, builder->names, builder->name_count, builder->name_capacity))
        return NULL;
    struct map_slot *slot = nvs_map_add(&builder->name_index, key, pid);
    if (!slot) {
        builder->failed = true;
        return NULL;
    }
    slot->value = builder->name_count;
    struct name_acc *acc = &builder->names[builder->name_count++];
    *acc = (struct name_acc){.domain = domain, .name = name, .pid = pid};
    return acc;
}

static bool to_sketch(struct nvs_figures_builder *builder, struct name_acc *acc)
{
    uint64_t *sketch = calloc(SKETCH_BUCKETS, sizeof *sketch);
    if (!sketch) {
        builder->failed = true;
        return false;
    }
    for (size_t i = 0; i < acc->value_count; i++)
        sketch[sketch_index(acc->values[i])]++;
    builder->exact_values -= acc->value_count;
    free(acc->values);
    acc->values = NULL;
    acc->value_count = acc->value_capacity = 0;
    acc->sketch = sketch;
    return true;
}

/* Past EXACT_VALUES_MAX: the names with the most values sketched, until half is left. */
static void relieve_names(struct nvs_figures_builder *builder)
{
    while (builder->exact_values > EXACT_VALUES_MAX / 2 && !builder->failed) {
        struct name_acc *most = NULL;
        for (size_t i = 0; i < builder->name_count; i++)
            if (!builder->names[i].sketch && (!most || builder->names[i].value_count > most->value_count))
                most = &builder->names[i];
        if (!most || !to_sketch(builder, most))
            return;
    }
}

static void add_name(struct nvs_figures_builder *builder, const struct nvs_event *event)
{
    const char *name = table_name(builder->events, event);
    struct name_acc *acc = name ? name_acc_of(builder, event->domain, name, event->pid) : NULL;
    if (!acc) {
        builder->failed = true;
        return;
    }
    int64_t duration = event->end - event->start;
    acc->count++;
    acc->sum += duration;
    if (acc->count == 1 || duration > acc->max)
        acc->max = duration;
    if (acc->sketch) {
        acc->sketch[sketch_index(duration)]++;
        return;
    }
    if (!GROW(builder, acc->values, acc->value_count, acc->value_capacity))
        return;
    acc->values[acc->value_count++] = duration;
    if (++builder->exact_values > EXACT_VALUES_MAX)
        relieve_names(builder);
}

/* ---- marks by kind --------------------------------------------------------------- */

static struct mark_acc *mark_acc_of(struct nvs_figures_builder *builder, const char *domain,
                                    const char *kind)
{
    uint64_t key = pointer_hash(domain);
    uint64_t second = pointer_hash(kind);
    struct map_slot *slot = nvs_map_find(&builder->mark_index, key, second);
    for (; slot; slot = nvs_map_next(&builder->mark_index, slot)) {
        struct mark_acc *acc = &builder->marks[slot->value];
        if (acc->domain == domain && acc->kind == kind)
            return acc;
    }
    if (!GROW(builder, builder->marks, builder->mark_count, builder->mark_capacity))
        return NULL;
    if (!(slot = nvs_map_add(&builder->mark_index, key, second))) {
        builder->failed = true;
        return NULL;
    }
    slot->value = builder->mark_count;
    struct mark_acc *acc = &builder->marks[builder->mark_count++];
    *acc = (struct mark_acc){.domain = domain, .kind = kind};
    return acc;
}

static void add_mark(struct nvs_figures_builder *builder, const struct nvs_event *event)
{
    /* the kernel probe's mark at each frame's end: one kind, its figures are
     * in the per-frame table */
    struct kernel_mark mark;
    const char *kind = builder->kernel_kind;
    if (!parse_kernel_mark(event, &mark)) {
        size_t length = strlen(event->name);
        if (2 * length + 1 > builder->kind_text_size) {
            /* "1 abc" (5 bytes) is "N abc(s)" (8) */
            char *grown = realloc(builder->kind_text, 2 * length + 1);
            if (!grown) {
                builder->failed = true;
                return;
            }
            builder->kind_text = grown;
            builder->kind_text_size = 2 * length + 1;
        }
        kind = nvs_events_intern(builder->events, builder->kind_text,
                                 mark_kind(event->name, builder->kind_text));
    }
    struct mark_acc *acc = kind ? mark_acc_of(builder, event->domain, kind) : NULL;
    if (!acc) {
        builder->failed = true;
        return;
    }
    acc->count++;
    struct map_slot *slot = nvs_map_find(&acc->index, pointer_hash(event->name), 0);
    for (; slot; slot = nvs_map_next(&acc->index, slot))
        if (acc->texts[slot->value].text == event->name)
            break;
    if (slot) {
        struct mark_text *text = &acc->texts[slot->value];
        text->count++;
        if (event->start < text->start) {
            text->start = event->start;
            text->order = builder->order;
        }
        return;
    }
    if (acc->text_count >= MARK_TEXTS_MAX) {
        acc->more_texts = true;
        return;
    }
    if (!GROW(builder, acc->texts, acc->text_count, acc->text_capacity))
        return;
    if (!(slot = nvs_map_add(&acc->index, pointer_hash(event->name), 0))) {
        builder->failed = true;
        return;
    }
    slot->value = acc->text_count;
    acc->texts[acc->text_count++] = (struct mark_text){event->name, 1, event->start, builder->order};
}

/* ---- processes ------------------------------------------------------------------- */

static struct proc *proc_of(struct nvs_figures_builder *builder, uint32_t pid)
{
    struct map_slot *slot = nvs_map_find(&builder->proc_index, pid, 0);
    if (slot)
        return &builder->procs[slot->value];
    if (!GROW(builder, builder->procs, builder->proc_count, builder->proc_capacity))
        return NULL;
    if (!(slot = nvs_map_put(&builder->proc_index, pid, 0))) {
        builder->failed = true;
        return NULL;
    }
    slot->value = builder->proc_count;
    struct proc *proc = &builder->procs[builder->proc_count++];
    *proc = (struct proc){.pid = pid, .last_end = INT64_MIN, .dropped_end = INT64_MIN};
    return proc;
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

/* The device columns a process has (its own calls or marks in their domains)
 * and the budget of its first over-budget mark. */
static void note_pid(struct nvs_figures_builder *builder, const struct nvs_event *event)
{
    struct proc *proc = proc_of(builder, event->pid);
    if (!proc)
        return;
    for (int c = NVS_FIRST_PART; c < NVS_LAST_PART; c++)
        if (columns[c].rule == RULE_DEVICE)
            proc->device[c] |= in_domain(event, columns[c].domain);
    int64_t marked = budget_of_mark(event);
    if (marked && (!proc->budget_ns || event->start < proc->budget_at)) {
        proc->budget_ns = marked;
        proc->budget_at = event->start;
    }
}

/* ---- per frame: each frame's calls, gathered while it is open ---------------------- */

static int compare_part_intervals(const void *a, const void *b)
{
    const struct part_interval *x = a, *y = b;
    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return (x->end > y->end) - (x->end < y->end);
}

/* The union of each part's intervals in ITEMS (sorted here): PARTS[part],
 * copies and launches together, and all of them. */
static void unions(struct part_interval *items, size_t count, int64_t parts[PARTS],
                   int64_t *cuda_and_launches, int64_t *all)
{
    if (count)      /* a frame with no calls has no list at all */
        qsort(items, count, sizeof *items, compare_part_intervals);
    struct interval current[PART_LISTS];
    int64_t total[PART_LISTS] = {0};
    bool active[PART_LISTS] = {false};
    for (size_t i = 0; i < count; i++) {
        unsigned lists[3] = {items[i].part, PART_ALL, PART_LISTS};
        if (items[i].part == PART(NVS_COLUMN_CUDA) || items[i].part == PART(NVS_COLUMN_LAUNCH))
            lists[2] = PART_CUDA_AND_LAUNCHES;
        for (int l = 0; l < 3; l++) {
            unsigned d = lists[l];
            if (d == PART_LISTS)
                continue;
            if (active[d] && items[i].start <= current[d].end) {
                if (items[i].end > current[d].end)
                    current[d].end = items[i].end;
                continue;
            }
            if (active[d])
                total[d] += current[d].end - current[d].start;
            current[d] = (struct interval){items[i].start, items[i].end};
            active[d] = true;
        }
    }
    for (int d = 0; d < PART_LISTS; d++)
        if (active[d])
            total[d] += current[d].end - current[d].start;
    for (int d = 0; d < PARTS; d++)
        parts[d] = total[d];
    *cuda_and_launches = total[PART_CUDA_AND_LAUNCHES];
    *all = total[PART_ALL];
}

static struct open_frame *open_frame(struct nvs_figures_builder *builder, uint64_t number)
{
    return &builder->open[number % OPEN_FRAMES_MAX];
}

/* An open frame's figures into ROW (its own, or a copy). */
static void measure_open(struct open_frame *open, struct nvs_report_frame *row)
{
    int64_t parts[PARTS];
    unions(open->items, open->count, parts, &row->value[NVS_COLUMN_LATENCY], &row->value[NVS_COLUMN_REST]);
    for (int d = 0; d < PARTS; d++)
        row->value[NVS_FIRST_PART + d] = parts[d];
}

/* The longest calls of OPEN into CALLS (NVS_SLOWEST_CALLS at most), the longest first; how many. */
static size_t longest_calls(const struct open_frame *open, struct nvs_report_call *calls)
{
    size_t count = 0;
    for (size_t i = 0; i < open->count; i++) {
        struct nvs_report_call call = {open->items[i].name, open->items[i].end - open->items[i].start};
        size_t k = count < NVS_SLOWEST_CALLS ? count++ : NVS_SLOWEST_CALLS;
        if (k == NVS_SLOWEST_CALLS && call.duration <= calls[k - 1].duration)
            continue;
        if (k == NVS_SLOWEST_CALLS)
            k--;
        for (; k > 0 && calls[k - 1].duration < call.duration; k--)
            calls[k] = calls[k - 1];
        calls[k] = call;
    }
    return count;
}

/* The oldest open frame closed: its figures made, its intervals let go. */
static void close_oldest(struct nvs_figures_builder *builder)
{
    struct open_frame *open = open_frame(builder, builder->open_first);
    struct proc *proc = &builder->procs[open->proc];
    struct nvs_report_frame *row = &proc->rows[open->row];
    measure_open(open, row);
    proc->launches |= row->value[NVS_COLUMN_LAUNCH] >= LAUNCH_SHOWN_NS;
    for (int c = NVS_FIRST_PART; c < NVS_LAST_PART; c++)
        proc->spent[c] |= row->value[c] != 0;
    /* cuda as it may be shown, copies and launches together; the rest, what no call covers */
    proc->spent[NVS_COLUMN_CUDA] |= row->value[NVS_COLUMN_LATENCY] != 0;
    proc->spent[NVS_COLUMN_REST] |= row->value[NVS_COLUMN_TOTAL] != row->value[NVS_COLUMN_REST];
    int64_t total = row->value[NVS_COLUMN_TOTAL];
    if (!proc->has_slowest || total > proc->slowest_total ||
        (total == proc->slowest_total && row->start < proc->slowest_start)) {
        proc->has_slowest = true;
        proc->slowest_total = total;
        proc->slowest_start = row->start;
        proc->slowest_call_count = longest_calls(open, proc->slowest_calls);
    }
    proc->open[open->row] = NOT_OPEN;
    builder->held -= open->count;
    free(open->items);
    *open = (struct open_frame){0};
    builder->open_first++;
}

/* Past HELD_INTERVALS_MAX: the oldest open frames closed, and the calls waiting
 * long for a frame let go, until half is left. */
static void relieve_intervals(struct nvs_figures_builder *builder)
{
    while (builder->held > HELD_INTERVALS_MAX / 2 && builder->open_first < builder->open_next)
        close_oldest(builder);
    if (builder->held <= HELD_INTERVALS_MAX / 2)
        return;
    /* what waits for a frame that has not come: a process's calls before its
     * latest, kept only from the last ones */
    for (size_t p = 0; p < builder->proc_count; p++) {
        struct proc *proc = &builder->procs[p];
        if (proc->pending_count < 2)
            continue;
        size_t keep = proc->pending_count / 2, from = proc->pending_count - keep;
        for (size_t i = 0; i < from; i++)
            if (proc->pending[i].end > proc->dropped_end)
                proc->dropped_end = proc->pending[i].end;
        memmove(proc->pending, proc->pending + from, keep * sizeof *proc->pending);
        builder->held -= from;
        proc->pending_count = keep;
    }
}

/* The call interval [START, END) of PART into row K of PROC: gathered while the
 * frame is open, else added to its figures (an estimate: it may overlap another). */
static void add_to_frame(struct nvs_figures_builder *builder, struct proc *proc, size_t k, int64_t start,
                         int64_t end, unsigned part, const char *name)
{
    struct nvs_report_frame *row = &proc->rows[k];
    int64_t frame_end = row->start + row->value[NVS_COLUMN_TOTAL];
    if (start < row->start)
        start = row->start;
    if (end > frame_end)
        end = frame_end;
    if (end <= start)
        return;
    if (proc->open[k] == NOT_OPEN) {
        row->value[NVS_FIRST_PART + part] += end - start;
        if (part == PART(NVS_COLUMN_CUDA) || part == PART(NVS_COLUMN_LAUNCH))
            row->value[NVS_COLUMN_LATENCY] += end - start;
        row->value[NVS_COLUMN_REST] += end - start;
        if (row->value[NVS_COLUMN_REST] > row->value[NVS_COLUMN_TOTAL])
            row->value[NVS_COLUMN_REST] = row->value[NVS_COLUMN_TOTAL];
        proc->late++;
        proc->estimated = true;
        return;
    }
    struct open_frame *open = open_frame(builder, proc->open[k]);
    if (open->count == open->capacity) {
        /* most frames hold a few calls: from 4, doubling */
        size_t capacity = open->capacity ? open->capacity * 2 : 4;
        struct part_interval *items = realloc(open->items, capacity * sizeof *items);
        if (!items) {
            builder->failed = true;
            return;
        }
        open->items = items;
        open->capacity = capacity;
    }
    open->items[open->count++] = (struct part_interval){start, end, name, part};
    if (++builder->held > HELD_INTERVALS_MAX)
        relieve_intervals(builder);
}

/* Room for one more row in PROC: its rows are most of the memory of a long
 * trace's figures, so they grow by a quarter (realloc moves big blocks by
 * remapping them), not by doubling. */
static bool room_for_row(struct nvs_figures_builder *builder, struct proc *proc)
{
    if (proc->count < proc->capacity)
        return true;
    size_t capacity = proc->capacity < 64 ? 64 : proc->capacity + proc->capacity / 4;
    struct nvs_report_frame *rows = realloc(proc->rows, capacity * sizeof *rows);
    if (rows)
        proc->rows = rows;
    uint64_t *open = rows ? realloc(proc->open, capacity * sizeof *open) : NULL;
    if (!open) {
        builder->failed = true;
        return false;
    }
    proc->open = open;
    proc->capacity = capacity;
    return true;
}

static void add_frame(struct nvs_figures_builder *builder, const struct nvs_event *event)
{
    struct proc *proc = proc_of(builder, event->pid);
    if (!proc || !room_for_row(builder, proc))
        return;
    if (!builder->open && !(builder->open = calloc(OPEN_FRAMES_MAX, sizeof *builder->open))) {
        builder->failed = true;
        return;
    }
    if (builder->open_next - builder->open_first == OPEN_FRAMES_MAX)
        close_oldest(builder);
    /* in start order: a frame that starts before the last one is put in its place */
    size_t k = proc->count;
    while (k > 0 && proc->rows[k - 1].start > event->start)
        k--;
    if (k < proc->count) {
        memmove(&proc->rows[k + 1], &proc->rows[k], (proc->count - k) * sizeof *proc->rows);
        memmove(&proc->open[k + 1], &proc->open[k], (proc->count - k) * sizeof *proc->open);
        for (uint64_t n = builder->open_first; n < builder->open_next; n++) {
            struct open_frame *other = open_frame(builder, n);
            if (&builder->procs[other->proc] == proc && other->row >= k)
                other->row++;
        }
        proc->estimated |= proc->calls_seen;
    }
    proc->count++;
    struct nvs_report_frame *row = &proc->rows[k];
    memset(row, 0, sizeof *row);
    row->number = frame_number(event);
    row->start = event->start;
    row->value[NVS_COLUMN_TOTAL] = event->end - event->start;
    if (event->offcpu) {
        row->has_kernel = true;
        row->value[NVS_COLUMN_RUNNABLE] = (int64_t)event->offcpu->runnable_ns;
        row->value[NVS_COLUMN_BLOCKED] = (int64_t)event->offcpu->blocked_ns;
        row->preemptions = event->offcpu->preemptions;
        row->faults = event->offcpu->faults;
    }
    if (event->start < proc->dropped_end)
        proc->estimated = true;     /* a call left out as in no frame may have been in this one */
    if (event->end - event->start > proc->longest)
        proc->longest = event->end - event->start;
    if (event->end > proc->last_end)
        proc->last_end = event->end;
    uint64_t number = builder->open_next++;
    *open_frame(builder, number) = (struct open_frame){.proc = (size_t)(proc - builder->procs), .row = k};
    proc->open[k] = number;
    /* the calls that waited for it: those that end in it or before are done */
    size_t kept = 0;
    for (size_t i = 0; i < proc->pending_count; i++) {
        struct part_interval call = proc->pending[i];
        add_to_frame(builder, proc, k, call.start, call.end, call.part, call.name);
        if (call.end > event->end) {
            proc->pending[kept++] = call;
            continue;
        }
        if (call.end <= event->start && call.end > proc->dropped_end)
            proc->dropped_end = call.end;
        builder->held--;
    }
    proc->pending_count = kept;
}

static void add_call(struct nvs_figures_builder *builder, const struct nvs_event *event)
{
    struct proc *proc = proc_of(builder, event->pid);
    if (!proc)
        return;
    proc->calls_seen = true;
    unsigned part = call_part(event);
    /* the frames it overlaps: those that start before its end, back to its start less the longest */
    size_t low = 0, high = proc->count;
    while (low < high) {
        size_t middle = (low + high) / 2;
        if (proc->rows[middle].start < event->end)
            low = middle + 1;
        else
            high = middle;
    }
    bool in_frame = false;
    for (size_t k = low; k-- > 0 && proc->rows[k].start > event->start - proc->longest;) {
        if (proc->rows[k].start + proc->rows[k].value[NVS_COLUMN_TOTAL] > event->start &&
            event->end > event->start) {
            add_to_frame(builder, proc, k, event->start, event->end, part, event->name);
            in_frame = true;
        }
    }
    if (event->end > proc->last_end) {
        /* it reaches past the last frame: the next may hold the rest */
        if (!GROW(builder, proc->pending, proc->pending_count, proc->pending_capacity))
            return;
        proc->pending[proc->pending_count++] = (struct part_interval){event->start, event->end, event->name, part};
        if (++builder->held > HELD_INTERVALS_MAX)
            relieve_intervals(builder);
    } else if (!in_frame && event->end > proc->dropped_end) {
        proc->dropped_end = event->end;
    }
}

/* ---- the builder ------------------------------------------------------------------ */

struct nvs_figures_builder *nvs_figures_begin(struct nvs_events *events, int64_t budget_ns)
{
    struct nvs_figures_builder *builder = calloc(1, sizeof *builder);
    if (!builder)
        return NULL;
    builder->events = events;
    builder->budget_ns = budget_ns;
    builder->frame_n = nvs_events_intern(events, "frame N", 7);
    builder->kernel_kind = nvs_events_intern(events, "frame N: off-CPU figures", 24);
    if (!builder->frame_n || !builder->kernel_kind) {
        free(builder);
        return NULL;
    }
    return builder;
}

int nvs_figures_add(struct nvs_figures_builder *builder, const struct nvs_event *batch, size_t count)
{
    for (size_t i = 0; i < count && !builder->failed; i++) {
        const struct nvs_event *event = &batch[i];
        builder->order++;
        if (event->kind == NVS_EVENT_RANGE)
            add_name(builder, event);
        if (event->kind == NVS_EVENT_MARK)
            add_mark(builder, event);
        if (event->kind == NVS_EVENT_RANGE || event->kind == NVS_EVENT_MARK) {
            builder->nvtx_events++;
            note_pid(builder, event);
        }
        if (is_frame(event))
            add_frame(builder, event);
        else if (counts_toward_frame(event))
            add_call(builder, event);
        struct kernel_mark mark;
        uint64_t dropped;
        if (parse_kernel_mark(event, &mark)) {
            if (GROW(builder, builder->kernel_marks, builder->kernel_mark_count, builder->kernel_mark_capacity))
                builder->kernel_marks[builder->kernel_mark_count++] = mark;
        } else if (is_frame_age(event) && event->has_payload) {
            if (GROW(builder, builder->camera_frames, builder->camera_frame_count,
                     builder->camera_frame_capacity))
                builder->camera_frames[builder->camera_frame_count++] =
                    (struct camera_frame){event->pid, event->end - event->payload, event->end, false};
        } else if (is_actuation(event)) {
            if (GROW(builder, builder->actuations, builder->actuation_count, builder->actuation_capacity))
                builder->actuations[builder->actuation_count++] =
                    (struct actuation){event->pid, event->start, event->end, builder->order};
        } else if (is_drop(event, &dropped)) {
            if (GROW(builder, builder->drops, builder->drop_count, builder->drop_capacity))
                builder->drops[builder->drop_count++] = (struct drop){event->pid, event->start, dropped};
        } else if (is_capture(event)) {
            if (GROW(builder, builder->captures, builder->capture_count, builder->capture_capacity))
                builder->captures[builder->capture_count++] =
                    (struct capture){event->name, event->domain, event->start, event->end, builder->order};
        }
    }
    return builder->failed ? -1 : 0;
}

void nvs_figures_discard(struct nvs_figures_builder *builder)
{
    if (!builder)
        return;
    for (size_t i = 0; i < builder->name_count; i++) {
        free(builder->names[i].values);
        free(builder->names[i].sketch);
    }
    free(builder->names);
    nvs_map_free(&builder->name_index);
    for (size_t i = 0; i < builder->mark_count; i++) {
        free(builder->marks[i].texts);
        nvs_map_free(&builder->marks[i].index);
    }
    free(builder->marks);
    nvs_map_free(&builder->mark_index);
    for (size_t p = 0; p < builder->proc_count; p++) {
        free(builder->procs[p].rows);
        free(builder->procs[p].open);
        free(builder->procs[p].pending);
    }
    free(builder->procs);
    nvs_map_free(&builder->proc_index);
    for (uint64_t n = builder->open_first; builder->open && n < builder->open_next; n++)
        free(open_frame(builder, n)->items);
    free(builder->open);
    free(builder->kernel_marks);
    free(builder->camera_frames);
    free(builder->actuations);
    free(builder->drops);
    free(builder->captures);
    free(builder->kind_text);
    free(builder);
}

/* ---- the report, from what the builder kept ---------------------------------------- */

/* A table name's statistics from ACCS (COUNT of them, one name, any processes):
 * exact where each kept its values, else p50 and p99 from the sketches. */
static int name_row(struct name_acc **accs, size_t count, struct nvs_report_name *row)
{
    *row = (struct nvs_report_name){.domain = accs[0]->domain, .name = accs[0]->name};
    size_t values = 0;
    int64_t sum = 0, max = 0;
    bool sketched = false;
    for (size_t i = 0; i < count; i++) {
        row->count += accs[i]->count;
        values += accs[i]->value_count;
        sum += accs[i]->sum;
        if (i == 0 || accs[i]->max > max)
            max = accs[i]->max;
        sketched |= accs[i]->sketch != NULL;
    }
    if (!sketched) {
        int64_t *all = malloc((values + 1) * sizeof *all);
        if (!all)
            return -1;
        size_t n = 0;
        for (size_t i = 0; i < count; i++) {
            memcpy(all + n, accs[i]->values, accs[i]->value_count * sizeof *all);
            n += accs[i]->value_count;
        }
        statistics(all, n, row->stats);
        free(all);
        return 0;
    }
    uint64_t *sketch = calloc(SKETCH_BUCKETS, sizeof *sketch);
    if (!sketch)
        return -1;
    int64_t min = INT64_MAX;
    for (size_t i = 0; i < count; i++) {
        for (size_t v = 0; v < accs[i]->value_count; v++)
            sketch[sketch_index(accs[i]->values[v])]++;
        for (size_t b = 0; accs[i]->sketch && b < SKETCH_BUCKETS; b++)
            sketch[b] += accs[i]->sketch[b];
    }
    for (size_t b = 0; b < SKETCH_BUCKETS && min == INT64_MAX; b++)
        if (sketch[b])
            min = sketch_value(b);
    row->estimated = true;
    row->stats[NVS_STAT_MEAN] = (double)sum / (double)row->count;
    row->stats[NVS_STAT_MAX] = (double)max;
    unsigned percents[2] = {50, 99};
    int stats[2] = {NVS_STAT_P50, NVS_STAT_P99};
    for (int s = 0; s < 2; s++) {
        size_t rank = (percents[s] * row->count + 99) / 100, seen = 0;
        if (!rank)
            rank = 1;
        for (size_t b = 0; b < SKETCH_BUCKETS; b++) {
            seen += sketch[b];
            if (seen >= rank) {
                int64_t value = sketch_value(b);
                row->stats[stats[s]] = (double)(value > max ? max : value < min ? min : value);
                break;
            }
        }
    }
    free(sketch);
    return 0;
}

static int compare_accs(const void *a, const void *b)
{
    const struct name_acc *x = *(const struct name_acc *const *)a, *y = *(const struct name_acc *const *)b;
    int order = nvs_compare_interned(x->domain, y->domain);
    if (!order)
        order = nvs_compare_interned(x->name, y->name);
    return order;
}

/* A per-name table into *NAMES (*NAME_COUNT rows): per domain and table name,
 * the ranges' count and statistics; of every process, or of process PID alone
 * (ONE_PROCESS). */
static int names_table(const struct nvs_figures_builder *builder, bool one_process, uint32_t pid,
                       struct nvs_report_name **names, size_t *name_count)
{
    struct name_acc **accs = malloc((builder->name_count + 1) * sizeof *accs);
    *names = malloc((builder->name_count + 1) * sizeof **names);
    *name_count = 0;
    if (!accs || !*names) {
        free(accs);
        return -1;
    }
    size_t count = 0;
    for (size_t i = 0; i < builder->name_count; i++)
        if (!one_process || builder->names[i].pid == pid)
            accs[count++] = &builder->names[i];
    qsort(accs, count, sizeof *accs, compare_accs);
    int status = 0;
    for (size_t first = 0; first < count && status == 0;) {
        size_t last = first + 1;
        while (last < count && accs[last]->domain == accs[first]->domain &&
               accs[last]->name == accs[first]->name)
            last++;
        status = name_row(accs + first, last - first, &(*names)[(*name_count)++]);
        first = last;
    }
    free(accs);
    return status;
}

/* By domain, then the most marks first, then kind. */
static int compare_kinds(const void *a, const void *b)
{
    const struct mark_acc *x = *(const struct mark_acc *const *)a, *y = *(const struct mark_acc *const *)b;
    int order = nvs_compare_interned(x->domain, y->domain);
    if (!order && x->count != y->count)
        order = (x->count < y->count) - (x->count > y->count);
    if (!order)
        order = nvs_compare_interned(x->kind, y->kind);
    return order;
}

/* By the time of the first mark. */
static int compare_texts(const void *a, const void *b)
{
    const struct mark_text *x = a, *y = b;
    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return (x->order > y->order) - (x->order < y->order);
}

static int report_marks(struct nvs_figures_builder *builder, struct nvs_report *report)
{
    if (!builder->mark_count)
        return 0;
    struct mark_acc **kinds = malloc(builder->mark_count * sizeof *kinds);
    report->marks = malloc(builder->mark_count * sizeof *report->marks);
    if (!kinds || !report->marks) {
        free(kinds);
        return -1;
    }
    for (size_t k = 0; k < builder->mark_count; k++)
        kinds[k] = &builder->marks[k];
    qsort(kinds, builder->mark_count, sizeof *kinds, compare_kinds);
    for (size_t k = 0; k < builder->mark_count; k++) {
        struct mark_acc *acc = kinds[k];
        struct nvs_report_mark_kind *out = &report->marks[report->mark_kind_count++];
        *out = (struct nvs_report_mark_kind){acc->domain, acc->kind, acc->count, acc->text_count, 0, {{0}},
                                             acc->more_texts};
        if (acc->text_count == 1 && !acc->more_texts &&
            !nvs_compare_interned(acc->texts[0].text, acc->kind))
            continue;
        /* the first texts in time order: sorted in place (a text's place in the
         * index is its place in the array, so the index is rebuilt) */
        qsort(acc->texts, acc->text_count, sizeof *acc->texts, compare_texts);
        nvs_map_free(&acc->index);
        for (size_t t = 0; t < acc->text_count; t++) {
            struct map_slot *slot = nvs_map_add(&acc->index, pointer_hash(acc->texts[t].text), 0);
            if (!slot) {
                free(kinds);
                return -1;
            }
            slot->value = t;
        }
        for (size_t t = 0; t < acc->text_count && t < NVS_MARK_EXAMPLES; t++)
            out->examples[out->example_count++] =
                (struct nvs_report_mark_text){acc->texts[t].text, acc->texts[t].count};
    }
    free(kinds);
    return 0;
}

/* ---- capture to actuation ----------------------------------------------------- */

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

static int compare_actuations(const void *a, const void *b)
{
    const struct actuation *x = a, *y = b;
    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return (x->order > y->order) - (x->order < y->order);
}

/* The pairs: per actuation in start order, the newest camera frame of its
 * process dequeued at or before its start, when no actuation took it. */
static int pair_captures(struct nvs_figures_builder *builder, struct latency *latency)
{
    memset(latency, 0, sizeof *latency);
    size_t f = builder->camera_frame_count, a = builder->actuation_count;
    latency->camera_frames = f;
    latency->actuations = a;
    if (!f || !a)
        return 0;
    struct camera_frame *frames = builder->camera_frames;
    struct actuation *actuations = builder->actuations;
    if (!(latency->pairs = malloc(a * sizeof *latency->pairs)))
        return -1;
    for (size_t i = 0; i < f; i++)
        frames[i].consumed = false;
    qsort(frames, f, sizeof *frames, compare_camera_frames);
    qsort(actuations, a, sizeof *actuations, compare_actuations);
    for (size_t i = 0; i < a; i++) {
        const struct actuation *actuation = &actuations[i];
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
    return 0;
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

/* ---- each process's frames, measured ------------------------------------------ */

/* The row of ROWS (COUNT, in start order, none longer than LONGEST) that holds
 * time T; -1 when none does. */
static long frame_at(const struct nvs_report_frame *rows, size_t count, int64_t longest, int64_t t)
{
    size_t low = 0, high = count;
    while (low < high) {
        size_t middle = (low + high) / 2;
        if (rows[middle].start <= t)
            low = middle + 1;
        else
            high = middle;
    }
    for (size_t k = low; k-- > 0 && rows[k].start >= t - longest;)
        if (t < rows[k].start + rows[k].value[NVS_COLUMN_TOTAL])
            return (long)k;
    return -1;
}

static int compare_kernel_marks(const void *a, const void *b)
{
    const struct kernel_mark *x = a, *y = b;
    if (x->pid != y->pid)
        return (x->pid > y->pid) - (x->pid < y->pid);
    return (x->number > y->number) - (x->number < y->number);
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

/* PROCESS's rows (its frames' figures so far, in start order) finished: the
 * rest, the cuda column, the kernel figures, the latency and drops, the columns
 * its data has, their statistics, the slowest frames and those over the budget. */
static int measure_process(struct nvs_figures_builder *builder, const struct proc *proc,
                           const struct latency *latency, struct nvs_report_process *process)
{
    size_t n = process->count;
    struct nvs_report_frame *rows = process->frames;
    int64_t *values = malloc((n + 1) * sizeof *values);
    if (!values)
        return -1;
    bool launches = false;
    for (size_t f = 0; f < n; f++) {
        rows[f].value[NVS_COLUMN_REST] = rows[f].value[NVS_COLUMN_TOTAL] - rows[f].value[NVS_COLUMN_REST];
        launches = launches || rows[f].value[NVS_COLUMN_LAUNCH] >= LAUNCH_SHOWN_NS;
    }
    /* Launches that take no time that shows count with the copies, in cuda. */
    for (size_t f = 0; f < n; f++) {
        if (!launches)
            rows[f].value[NVS_COLUMN_CUDA] = rows[f].value[NVS_COLUMN_LATENCY];
        rows[f].value[NVS_COLUMN_LATENCY] = 0;
    }
    /* the kernel figures: the frame range's own (trace files), else the probe's mark */
    for (size_t f = 0; f < n; f++) {
        if (!rows[f].has_kernel && builder->kernel_mark_count) {
            struct kernel_mark key = {.pid = process->pid, .number = rows[f].number};
            const struct kernel_mark *found = bsearch(&key, builder->kernel_marks, builder->kernel_mark_count,
                                                      sizeof *builder->kernel_marks, compare_kernel_marks);
            if (found) {
                rows[f].has_kernel = true;
                rows[f].value[NVS_COLUMN_RUNNABLE] = (int64_t)found->figures.runnable_ns;
                rows[f].value[NVS_COLUMN_BLOCKED] = (int64_t)found->figures.blocked_ns;
                rows[f].preemptions = found->figures.preemptions;
                rows[f].faults = found->figures.faults;
            }
        }
        process->with_kernel += rows[f].has_kernel;
    }
    /* each row's latency (its first pair's, by the actuation's start) and drops */
    for (size_t p = 0; p < latency->count; p++) {
        const struct latency_pair *pair = &latency->pairs[p];
        long f = pair->pid == process->pid ? frame_at(rows, n, proc->longest, pair->start) : -1;
        if (f >= 0 && !rows[f].has_latency) {
            rows[f].has_latency = true;
            rows[f].value[NVS_COLUMN_LATENCY] = pair->end - pair->capture;
            process->with_latency++;
        }
    }
    for (size_t i = 0; i < builder->drop_count; i++) {
        const struct drop *drop = &builder->drops[i];
        if (drop->pid != process->pid)
            continue;
        long f = frame_at(rows, n, proc->longest, drop->start);
        if (f >= 0)
            rows[f].dropped += drop->count;
        else
            process->dropped_outside += drop->count;
        process->dropped += drop->count;
    }
    bool *shown = process->shown;
    for (int c = NVS_COLUMN_TOTAL; c <= NVS_COLUMN_REST; c++)
        if (columns[c].rule != RULE_DEVICE)
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
    free(values);
    for (size_t f = 0; f < n; f++)
        process->slowest[f] = f;
    qsort_r(process->slowest, n, sizeof *process->slowest, compare_slowest, rows);
    for (size_t f = 0; f < n; f++)
        process->over_budget += nvs_report_over_budget(process, &rows[f]);
    return 0;
}

static int compare_procs(const void *a, const void *b)
{
    const struct proc *x = *(const struct proc *const *)a, *y = *(const struct proc *const *)b;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Each process's frames, measured: FINAL takes the builder's rows, else they are copied (and the
 * open frames measured into the copy). */
static int report_frames(struct nvs_figures_builder *builder, const struct latency *latency, bool final,
                         struct nvs_report *report)
{
    struct proc **procs = malloc((builder->proc_count + 1) * sizeof *procs);
    if (!procs)
        return -1;
    size_t count = 0;
    for (size_t p = 0; p < builder->proc_count; p++)
        if (builder->procs[p].count)
            procs[count++] = &builder->procs[p];
    qsort(procs, count, sizeof *procs, compare_procs);
    if (count && !(report->processes = calloc(count, sizeof *report->processes))) {
        free(procs);
        return -1;
    }
    if (final)
        while (builder->open_first < builder->open_next)
            close_oldest(builder);
    int status = 0;
    for (size_t p = 0; p < count && status == 0; p++) {
        struct proc *proc = procs[p];
        struct nvs_report_process *process = &report->processes[report->process_count++];
        process->pid = proc->pid;
        process->name = process_name(builder->events, proc->pid);
        process->count = proc->count;
        process->estimated = proc->estimated;
        process->late_calls = proc->late;
        if (final) {
            process->frames = proc->rows;
            proc->rows = NULL;
            proc->count = proc->capacity = 0;
        } else if ((process->frames = malloc(proc->count * sizeof *process->frames))) {
            memcpy(process->frames, proc->rows, proc->count * sizeof *process->frames);
            for (size_t k = 0; k < proc->count; k++)
                if (proc->open[k] != NOT_OPEN)
                    measure_open(open_frame(builder, proc->open[k]), &process->frames[k]);
        }
        process->slowest = malloc((process->count + 1) * sizeof *process->slowest);
        if (!process->frames || !process->slowest) {
            status = -1;
            break;
        }
        for (int c = NVS_FIRST_PART; c < NVS_LAST_PART; c++)
            if (columns[c].rule == RULE_DEVICE)
                process->shown[c] = proc->device[c];
        process->budget_ns = proc->budget_ns;
        process->budget_from = process->budget_ns ? NVS_BUDGET_MARKS : NVS_BUDGET_NONE;
        if (builder->budget_ns) {
            process->budget_ns = builder->budget_ns;
            process->budget_from = NVS_BUDGET_OPTION;
        }
        status = measure_process(builder, proc, latency, process);
    }
    free(procs);
    return status;
}

/* ---- capture windows ------------------------------------------------------------ */

static int compare_captures(const void *a, const void *b)
{
    const struct capture *x = a, *y = b;
    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return (x->order > y->order) - (x->order < y->order);
}

static int report_windows(struct nvs_figures_builder *builder, struct nvs_report *report)
{
    size_t n = builder->capture_count;
    if (!n)
        return 0;
    if (!(report->windows = malloc(n * sizeof *report->windows)))
        return -1;
    qsort(builder->captures, n, sizeof *builder->captures, compare_captures);
    for (size_t c = 0; c < n; c++) {
        const struct capture *window = &builder->captures[c];
        uint64_t first = 0, last = 0;
        for (size_t p = 0; p < report->process_count; p++) {
            const struct nvs_report_process *process = &report->processes[p];
            size_t low = 0, high = process->count;
            while (low < high) {
                size_t middle = (low + high) / 2;
                if (process->frames[middle].start < window->start)
                    low = middle + 1;
                else
                    high = middle;
            }
            for (size_t k = low; k < process->count && process->frames[k].start < window->end; k++) {
                uint64_t number = process->frames[k].number;
                if (!first || number < first)
                    first = number;
                if (number > last)
                    last = number;
            }
        }
        report->windows[report->window_count++] = (struct nvs_report_window){
            window->name, window->domain, window->end - window->start, first, last};
    }
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

int nvs_figures_report(struct nvs_figures_builder *builder, bool final, struct nvs_report *report)
{
    if (builder->failed)
        return -1;
    report->nvtx_events = builder->nvtx_events;
    struct latency latency;
    int status = pair_captures(builder, &latency);
    if (status == 0)
        status = names_table(builder, false, 0, &report->names, &report->name_count);
    if (status == 0)
        status = report_marks(builder, report);
    if (status == 0)
        status = report_frames(builder, &latency, final, report);
    for (size_t p = 0; status == 0 && p < report->process_count && report->process_count > 1; p++) {
        struct nvs_report_process *process = &report->processes[p];
        status = names_table(builder, true, process->pid, &process->names, &process->name_count);
    }
    if (status == 0)
        status = compute_latency(&latency, report);
    if (status == 0)
        status = report_windows(builder, report);
    free(latency.pairs);
    return status;
}

void nvs_figures_free(struct nvs_report *report)
{
    free_report(report);
}

/* ---- a live view ------------------------------------------------------------------ */

/* Row K of PROC as a report shows it: measured when its frame is open, the
 * rest made, copies and launches together in cuda unless LAUNCHES show. */
static struct nvs_report_frame view_row(struct nvs_figures_builder *builder, const struct proc *proc, size_t k,
                                        bool launches)
{
    struct nvs_report_frame row = proc->rows[k];
    if (proc->open[k] != NOT_OPEN)
        measure_open(open_frame(builder, proc->open[k]), &row);
    row.value[NVS_COLUMN_REST] = row.value[NVS_COLUMN_TOTAL] - row.value[NVS_COLUMN_REST];
    if (!launches)
        row.value[NVS_COLUMN_CUDA] = row.value[NVS_COLUMN_LATENCY];
    row.value[NVS_COLUMN_LATENCY] = 0;
    return row;
}

/* The K-th smallest of VALUES (COUNT > K), which are reordered: Hoare's selection. */
static int64_t select_kth(int64_t *values, size_t count, size_t k)
{
    size_t low = 0, high = count - 1;
    while (low < high) {
        int64_t pivot = values[low + (high - low) / 2];
        size_t i = low, j = high;
        while (i <= j) {
            while (values[i] < pivot)
                i++;
            while (values[j] > pivot)
                j--;
            if (i <= j) {
                int64_t swap = values[i];
                values[i] = values[j];
                values[j] = swap;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            high = j;
        else if (k >= i)
            low = i;
        else
            return values[k];
    }
    return values[k];
}

int nvs_figures_live(struct nvs_figures_builder *builder, size_t last, struct nvs_live_loop *loop)
{
    memset(loop, 0, sizeof *loop);
    if (builder->failed)
        return -1;
    struct proc *proc = NULL;
    for (size_t p = 0; p < builder->proc_count; p++)
        if (builder->procs[p].count && (!proc || builder->procs[p].count > proc->count))
            proc = &builder->procs[p];
    if (!proc)
        return 0;
    size_t n = proc->count;
    loop->pid = proc->pid;
    loop->name = process_name(builder->events, proc->pid);
    loop->count = n;
    loop->estimated = proc->estimated;
    loop->budget_ns = builder->budget_ns ? builder->budget_ns : proc->budget_ns;
    /* launches show when a closed frame's do, or an open one's of those shown */
    size_t from = last < n ? n - last : 0;
    bool launches = proc->launches;
    for (size_t k = from; k < n && !launches; k++)
        launches = view_row(builder, proc, k, true).value[NVS_COLUMN_LAUNCH] >= LAUNCH_SHOWN_NS;
    int64_t *totals = malloc(n * sizeof *totals);
    if (!totals)
        return -1;
    size_t slowest = 0;
    int64_t sum = 0;
    for (size_t k = 0; k < n; k++) {
        totals[k] = proc->rows[k].value[NVS_COLUMN_TOTAL];
        sum += totals[k];
        if (totals[k] > totals[slowest])
            slowest = k;
        loop->over_budget += loop->budget_ns > 0 && totals[k] > loop->budget_ns;
    }
    loop->max = (double)totals[slowest];
    loop->p99 = (double)select_kth(totals, n, (99 * n + 99) / 100 - 1);
    loop->p50 = (double)select_kth(totals, n, (50 * n + 99) / 100 - 1);
    free(totals);
    (void)sum;
    loop->last_count = n - from;
    loop->first_number = proc->rows[from].number;
    loop->last_number = proc->rows[n - 1].number;
    bool spent[NVS_COLUMNS];
    memcpy(spent, proc->spent, sizeof spent);
    for (size_t k = from; k < n; k++) {
        struct nvs_report_frame row = view_row(builder, proc, k, launches);
        for (int c = 0; c < NVS_COLUMNS; c++) {
            loop->last_mean[c] += (double)row.value[c] / (double)(n - from);
            spent[c] |= row.value[c] != 0;
        }
    }
    loop->slowest = view_row(builder, proc, slowest, launches);
    for (int c = 0; c < NVS_COLUMNS; c++)
        spent[c] |= loop->slowest.value[c] != 0;
    if (proc->open[slowest] != NOT_OPEN)
        loop->call_count = longest_calls(open_frame(builder, proc->open[slowest]), loop->calls);
    else if (proc->slowest_start == proc->rows[slowest].start) {
        loop->call_count = proc->slowest_call_count;
        memcpy(loop->calls, proc->slowest_calls, sizeof loop->calls);
    }
    for (int c = NVS_COLUMN_TOTAL; c <= NVS_COLUMN_REST; c++)
        loop->shown[c] = columns[c].rule == RULE_DEVICE ? proc->device[c] : true;
    loop->shown[NVS_COLUMN_LAUNCH] = launches;
    /* a part no frame spent time in is left out, as the report leaves it out (of the frames
     * still open, those the view shows are looked at) */
    for (int c = NVS_FIRST_PART; c <= NVS_LAST_PART; c++)
        loop->shown[c] = loop->shown[c] && spent[c];
    return 1;
}

uint64_t nvs_figures_events(const struct nvs_figures_builder *builder)
{
    return builder->order;
}
