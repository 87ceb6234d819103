/* What the figures' three files share, and no one else: figures_builder.c, the builder
 * fed as a profile is read; figures_report.c, the report worked out from what it
 * kept; figures_live.c, top's live view of it. The columns' rules, a frame's
 * parts, the sketch of a name's durations, and what the builder keeps. */
#ifndef NVS_CLI_FIGURES_BUILDER_H
#define NVS_CLI_FIGURES_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/events.h"
#include "model/figures.h"
#include "util/map.h"

/* Which calls fall in a column (columns.def): those of its domain (none for a
 * figure of its own), all of them or those of a CUDA category (the rules by
 * category last). */
#define NVS_DOMAIN_NONE NVS_DOMAIN_COUNT
enum rule { RULE_OWN, RULE_CALLS, RULE_DEVICE, RULE_CUDA_COPY, RULE_CUDA_WAIT, RULE_CUDA_LAUNCH };
#define BY_CATEGORY(rule) ((rule) >= RULE_CUDA_COPY)
struct column_rule {
    enum nvs_domain domain;
    enum rule rule;
};
extern const struct column_rule nvs_column_rules[NVS_COLUMNS];

/* The parts of a frame's calls, numbered from 0 in the order of their columns
 * (PART(NVS_COLUMN_USB) to the one before REST). Two more lists of intervals:
 * copies and launches together (the cuda column when launches have none), and
 * every call (for the rest). */
#define PART(column) ((column)-NVS_FIRST_PART)
#define PARTS PART(NVS_LAST_PART)
enum { PART_CUDA_AND_LAUNCHES = PARTS, PART_ALL, PART_LISTS };

/* A launch column is shown once some frame's launches take 0.001 ms as printed. */
#define LAUNCH_SHOWN_NS 500

/* A log-linear histogram of durations: values below 2 * SKETCH_SUB exactly,
 * then SKETCH_SUB buckets a power of two, so a bucket's middle is within
 * 1/(2 * SKETCH_SUB) of any value in it (0.39 %). */
#define SKETCH_SUB 128
#define SKETCH_BUCKETS (2 * SKETCH_SUB + 56 * SKETCH_SUB)

static inline size_t sketch_index(int64_t value)
{
    if (value < 2 * SKETCH_SUB)
        return value < 0 ? 0 : (size_t)value;
    unsigned top = 63u - (unsigned)__builtin_clzll((unsigned long long)value); /* >= 8 */
    unsigned shift = top - 7;
    size_t index = 2 * SKETCH_SUB + (size_t)(top - 8) * SKETCH_SUB +
        (size_t)(((uint64_t)value >> shift) - SKETCH_SUB);
    return index < SKETCH_BUCKETS ? index : SKETCH_BUCKETS - 1;
}

/* The middle of bucket INDEX. */
static inline int64_t sketch_value(size_t index)
{
    if (index < 2 * SKETCH_SUB)
        return (int64_t)index;
    size_t above = index - 2 * SKETCH_SUB;
    unsigned shift = (unsigned)(above / SKETCH_SUB) + 1;
    uint64_t low = (uint64_t)(SKETCH_SUB + above % SKETCH_SUB) << shift;
    return (int64_t)(low + (1ull << (shift - 1)));
}

/* The kernel probe's mark for a frame: "frame N: runnable X ms (P preemptions),
 * blocked Y ms, F faults[, M migrations][...]" in domain kernel. */
struct kernel_mark {
    uint32_t pid;
    uint64_t number;
    struct nvs_offcpu figures;
};

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
    int64_t *values; /* exact, while sketch is NULL */
    size_t value_count, value_capacity;
    uint64_t *sketch; /* SKETCH_BUCKETS counts, once the values gave way */
};

struct mark_text {
    const char *text;
    size_t count;
    int64_t start; /* its first mark's */
    uint64_t order;
};

struct mark_acc {
    const char *domain, *kind;
    size_t count;
    struct mark_text *texts;
    size_t text_count, text_capacity;
    struct map index; /* a text (its pointer) -> its place in texts */
    bool more_texts;  /* texts past MARK_TEXTS_MAX were not told apart */
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
    bool device[NVS_COLUMNS];      /* the device columns it has: calls or marks in their domains */
    int64_t budget_ns, budget_at;  /* of its first over-budget mark */
    struct nvs_report_frame *rows; /* value[REST]: time its calls cover, value[LATENCY]: its
                                      * copies and launches together, until the report */
    uint64_t *open;                /* per row: its open frame's number, or NOT_OPEN */
    size_t count, capacity;
    int64_t longest, last_end;
    struct part_interval *pending; /* calls that reach past its last frame */
    size_t pending_count, pending_capacity;
    int64_t dropped_end; /* the latest end of a call in no frame it had then */
    bool calls_seen;
    size_t late; /* calls that came after their frame was closed */
    bool estimated;
    /* what a live view needs of the frames closed: whether launches show, and
     * the slowest (the first of the longest) with its longest calls */
    bool launches, has_slowest;
    bool spent[NVS_COLUMNS]; /* the part columns some closed frame spent time in */
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
    struct nvs_events *events; /* where names are interned */
    int64_t budget_ns;
    uint64_t order;
    size_t nvtx_events; /* ranges and marks */
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

    struct open_frame *open;        /* a ring of OPEN_FRAMES_MAX, the oldest at open_first */
    uint64_t open_first, open_next; /* numbers of the oldest and of the next */
    size_t held;                    /* intervals held, open frames' and pending */

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

static inline uint64_t pointer_hash(const void *pointer)
{
    return nvs_map_mix((uint64_t)(uintptr_t)pointer);
}

/* The builder's, for the report and the live view (figures_builder.c). */
struct open_frame *nvs_figures_open_frame(struct nvs_figures_builder *builder, uint64_t number);
void nvs_figures_measure_open(struct open_frame *open, struct nvs_report_frame *row);
size_t nvs_figures_longest_calls(const struct open_frame *open, struct nvs_report_call *calls);
void nvs_figures_close_oldest(struct nvs_figures_builder *builder);

/* A process's name, for the live view too (figures_report.c). */
const char *nvs_figures_process_name(const struct nvs_events *events, uint32_t pid);

#endif
