/* The figures of a report (figures.h), worked out from a profile's events as
 * they are read, in memory that does not grow with them: the per-name table, each process's frames (their breakdown into
 * parts by domain and category, the kernel probe's figures, the camera's
 * drops and the capture-to-actuation latency, the statistics, the budget),
 * the latency's summary and the capture windows. Per-frame times are unions
 * of the calls' intervals inside the frame, so nested or overlapping calls
 * count once; a frame is its process's, and counts that process's calls
 * only. report.c prints them as text, report_html.c as a page. This file is
 * the builder, fed as the file is read; figures_report.c works out the report
 * from what it kept, figures_live.c top's live view. */
#define _GNU_SOURCE
#include "model/figures_builder.h"

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

const struct column_rule nvs_column_rules[NVS_COLUMNS] = {
#define NVS_COLUMN(ID, HEADING, KEY, PHRASE, CLASS, COLOUR, LEGEND, DOMAIN, RULE)                  \
    [NVS_COLUMN_##ID] = { NVS_DOMAIN_##DOMAIN, RULE_##RULE },
#include "model/columns.def"
#undef NVS_COLUMN
};

const char *const nvs_report_column_names[NVS_COLUMNS] = {
#define NVS_COLUMN(ID, HEADING, KEY, PHRASE, CLASS, COLOUR, LEGEND, DOMAIN, RULE)                  \
    [NVS_COLUMN_##ID] = HEADING,
#include "model/columns.def"
#undef NVS_COLUMN
};

/* ---- what the names mean ------------------------------------------------------ */

/* The first column that counts calls of EVENT's domain; -1 for none. */
static int call_column(const struct nvs_event *event)
{
    for (int c = 0; c < NVS_COLUMNS; c++)
        if (nvs_column_rules[c].domain != NVS_DOMAIN_NONE &&
            (c == 0 || nvs_column_rules[c].domain != nvs_column_rules[c - 1].domain) &&
            strcmp(event->domain, nvs_domain_name(nvs_column_rules[c].domain)) == 0)
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
    static const enum rule of_category[] = { [NVS_CUDA_COPY] = RULE_CUDA_COPY,
                                             [NVS_CUDA_WAIT] = RULE_CUDA_WAIT,
                                             [NVS_CUDA_LAUNCH] = RULE_CUDA_LAUNCH };
    int first = call_column(event);
    if (!BY_CATEGORY(nvs_column_rules[first].rule))
        return first;
    enum rule rule = of_category[nvs_cuda_category_of(event->name)];
    for (int c = first;
         c < NVS_COLUMNS && nvs_column_rules[c].domain == nvs_column_rules[first].domain; c++)
        if (nvs_column_rules[c].rule == rule)
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
/* An I2C transfer that only wrote (the library's names, docs/user-guide.md): an
 * SMBus write ("I2C_SMBUS /dev/i2c-1 0x60 W byte_data cmd=0x01"), or combined
 * messages that are all writes ("I2C_RDWR /dev/i2c-1 0x60 W3", not "... W1 R2",
 * a register read). A transfer that failed is named without its messages. */
static bool is_i2c_write(const char *name)
{
    if (starts_with(name, "I2C_SMBUS "))
        return strstr(name, " W ") != NULL;
    if (!starts_with(name, "I2C_RDWR "))
        return false;
    bool wrote = false;
    for (const char *word = strchr(name, ' '); word; word = strchr(word + 1, ' ')) {
        if (word[1] == 'R' && word[2] >= '0' && word[2] <= '9')
            return false;
        if (word[1] == 'W' && word[2] >= '0' && word[2] <= '9')
            wrote = true;
    }
    return wrote;
}

static bool is_actuation(const struct nvs_event *event)
{
    if (event->kind != NVS_EVENT_RANGE)
        return false;
    if (in_domain(event, NVS_DOMAIN_USB))
        return (starts_with(event->name, "libusb_") || starts_with(event->name, "USBDEVFS_")) &&
            !starts_with(event->name, "libusb_transfer_cb_fn") && strstr(event->name, " OUT ");
    bool written = starts_with(event->name, "write ") || starts_with(event->name, "writev ");
    if (in_domain(event, NVS_DOMAIN_I2C))
        return written || is_i2c_write(event->name);
    return (in_domain(event, NVS_DOMAIN_SERIAL) || in_domain(event, NVS_DOMAIN_HID)) && written;
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

static bool parse_kernel_mark(const struct nvs_event *event, struct kernel_mark *mark)
{
    struct nvs_kernel_figures figures;
    if (event->kind != NVS_EVENT_MARK ||
        strcmp(event->domain, nvs_domain_name(NVS_DOMAIN_KERNEL)) != 0 ||
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
    if (column >= 0 && nvs_column_rules[column].rule == RULE_DEVICE) {
        /* "function /dev/path": per device */
        const char *space = strchr(event->name, ' ');
        if (space && (space = strchr(space + 1, ' ')))
            return nvs_events_intern(events, event->name, (size_t)(space - event->name));
        return event->name;
    }
    if (column >= 0 && nvs_column_rules[call_part_column(event)].rule != RULE_CUDA_LAUNCH) {
        const char *space = strchr(event->name, ' ');
        if (space)
            return nvs_events_intern(events, event->name, (size_t)(space - event->name));
    }
    return event->name;
}

/* A capture window: a "capture ..." range of an NVTX domain of the program's. */
static bool is_capture(const struct nvs_event *event)
{
    if (event->kind != NVS_EVENT_RANGE || !event->domain[0] ||
        strcmp(event->domain, "default") == 0 || frame_number(event) || call_column(event) >= 0 ||
        strcmp(event->domain, nvs_domain_name(NVS_DOMAIN_KERNEL)) == 0)
        return false;
    size_t word = strcspn(event->name, " ");
    return word == 7 && strncmp(event->name, "capture", 7) == 0;
}

/* ---- the builder's limits (what it keeps: figures_builder.h) ------------------------ */

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
#define GROW(builder, array, count, capacity)                                                      \
    grow((builder), (void **)&(array), (count), &(capacity), sizeof *(array))

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
    *acc = (struct name_acc){ .domain = domain, .name = name, .pid = pid };
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
            if (!builder->names[i].sketch &&
                (!most || builder->names[i].value_count > most->value_count))
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
    *acc = (struct mark_acc){ .domain = domain, .kind = kind };
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
    acc->texts[acc->text_count++] = (struct mark_text){ event->name, 1, event->start,
                                                        builder->order };
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
    *proc = (struct proc){ .pid = pid, .last_end = INT64_MIN, .dropped_end = INT64_MIN };
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
        if (nvs_column_rules[c].rule == RULE_DEVICE)
            proc->device[c] |= in_domain(event, nvs_column_rules[c].domain);
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
    if (count) /* a frame with no calls has no list at all */
        qsort(items, count, sizeof *items, compare_part_intervals);
    struct interval current[PART_LISTS];
    int64_t total[PART_LISTS] = { 0 };
    bool active[PART_LISTS] = { false };
    for (size_t i = 0; i < count; i++) {
        unsigned lists[3] = { items[i].part, PART_ALL, PART_LISTS };
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
            current[d] = (struct interval){ items[i].start, items[i].end };
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

struct open_frame *nvs_figures_open_frame(struct nvs_figures_builder *builder, uint64_t number)
{
    return &builder->open[number % OPEN_FRAMES_MAX];
}

/* An open frame's figures into ROW (its own, or a copy). */
void nvs_figures_measure_open(struct open_frame *open, struct nvs_report_frame *row)
{
    int64_t parts[PARTS];
    unions(open->items, open->count, parts, &row->value[NVS_COLUMN_LATENCY],
           &row->value[NVS_COLUMN_REST]);
    for (int d = 0; d < PARTS; d++)
        row->value[NVS_FIRST_PART + d] = parts[d];
}

/* The longest calls of OPEN into CALLS (NVS_SLOWEST_CALLS at most), the longest first; how many. */
size_t nvs_figures_longest_calls(const struct open_frame *open, struct nvs_report_call *calls)
{
    size_t count = 0;
    for (size_t i = 0; i < open->count; i++) {
        struct nvs_report_call call = { open->items[i].name,
                                        open->items[i].end - open->items[i].start };
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
void nvs_figures_close_oldest(struct nvs_figures_builder *builder)
{
    struct open_frame *open = nvs_figures_open_frame(builder, builder->open_first);
    struct proc *proc = &builder->procs[open->proc];
    struct nvs_report_frame *row = &proc->rows[open->row];
    nvs_figures_measure_open(open, row);
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
        proc->slowest_call_count = nvs_figures_longest_calls(open, proc->slowest_calls);
    }
    proc->open[open->row] = NOT_OPEN;
    builder->held -= open->count;
    free(open->items);
    *open = (struct open_frame){ 0 };
    builder->open_first++;
}

/* Past HELD_INTERVALS_MAX: the oldest open frames closed, and the calls waiting
 * long for a frame let go, until half is left. */
static void relieve_intervals(struct nvs_figures_builder *builder)
{
    while (builder->held > HELD_INTERVALS_MAX / 2 && builder->open_first < builder->open_next)
        nvs_figures_close_oldest(builder);
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
static void add_to_frame(struct nvs_figures_builder *builder, struct proc *proc, size_t k,
                         int64_t start, int64_t end, unsigned part, const char *name)
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
    struct open_frame *open = nvs_figures_open_frame(builder, proc->open[k]);
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
    open->items[open->count++] = (struct part_interval){ start, end, name, part };
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
        nvs_figures_close_oldest(builder);
    /* in start order: a frame that starts before the last one is put in its place */
    size_t k = proc->count;
    while (k > 0 && proc->rows[k - 1].start > event->start)
        k--;
    if (k < proc->count) {
        memmove(&proc->rows[k + 1], &proc->rows[k], (proc->count - k) * sizeof *proc->rows);
        memmove(&proc->open[k + 1], &proc->open[k], (proc->count - k) * sizeof *proc->open);
        for (uint64_t n = builder->open_first; n < builder->open_next; n++) {
            struct open_frame *other = nvs_figures_open_frame(builder, n);
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
        proc->estimated = true; /* a call left out as in no frame may have been in this one */
    if (event->end - event->start > proc->longest)
        proc->longest = event->end - event->start;
    if (event->end > proc->last_end)
        proc->last_end = event->end;
    uint64_t number = builder->open_next++;
    *nvs_figures_open_frame(
        builder, number) = (struct open_frame){ .proc = (size_t)(proc - builder->procs), .row = k };
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
        proc->pending[proc->pending_count++] = (struct part_interval){ event->start, event->end,
                                                                       event->name, part };
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

int nvs_figures_add(struct nvs_figures_builder *builder, const struct nvs_event *batch,
                    size_t count)
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
            if (GROW(builder, builder->kernel_marks, builder->kernel_mark_count,
                     builder->kernel_mark_capacity))
                builder->kernel_marks[builder->kernel_mark_count++] = mark;
        } else if (is_frame_age(event) && event->has_payload) {
            if (GROW(builder, builder->camera_frames, builder->camera_frame_count,
                     builder->camera_frame_capacity))
                builder->camera_frames[builder->camera_frame_count++] = (struct camera_frame){
                    event->pid, event->end - event->payload, event->end, false
                };
        } else if (is_actuation(event)) {
            if (GROW(builder, builder->actuations, builder->actuation_count,
                     builder->actuation_capacity))
                builder->actuations[builder->actuation_count++] = (struct actuation){
                    event->pid, event->start, event->end, builder->order
                };
        } else if (is_drop(event, &dropped)) {
            if (GROW(builder, builder->drops, builder->drop_count, builder->drop_capacity))
                builder->drops[builder->drop_count++] = (struct drop){ event->pid, event->start,
                                                                       dropped };
        } else if (is_capture(event)) {
            if (GROW(builder, builder->captures, builder->capture_count, builder->capture_capacity))
                builder->captures[builder->capture_count++] = (struct capture){
                    event->name, event->domain, event->start, event->end, builder->order
                };
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
        free(nvs_figures_open_frame(builder, n)->items);
    free(builder->open);
    free(builder->kernel_marks);
    free(builder->camera_frames);
    free(builder->actuations);
    free(builder->drops);
    free(builder->captures);
    free(builder->kind_text);
    free(builder);
}

uint64_t nvs_figures_events(const struct nvs_figures_builder *builder)
{
    return builder->order;
}
