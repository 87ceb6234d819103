/* The figures: what nvtxshim report works out from a profile, once: the per-name table,
 * the marks by kind, each process's frames (their breakdown, the columns the
 * data has, their statistics, the budget), the capture-to-actuation summary
 * and the capture windows. report.c computes them and prints the text summary; report_html.c
 * draws the same figures as a page; both include this, neither the other's
 * header but report.c report_html.h. Times are in nanoseconds; strings belong
 * to the events the report was made from. */
#ifndef NVS_CLI_FIGURES_H
#define NVS_CLI_FIGURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The first texts a kind of marks lists, at most. */
#define NVS_MARK_EXAMPLES 3

/* A text of a kind of marks, and how many marks have it. */
struct nvs_report_mark_text {
    const char *text;
    size_t count;
};

/* A kind of marks: per domain, the marks whose text is the same with each
 * number written N (the kernel probe's marks are one kind, "frame N: off-CPU
 * figures"). */
struct nvs_report_mark_kind {
    const char *domain, *kind;
    size_t count;      /* marks of this kind */
    size_t text_count; /* their different texts */
    /* the first texts in time order, at most NVS_MARK_EXAMPLES; none where
     * the kind's one text is the kind itself (it has no number) */
    size_t example_count;
    struct nvs_report_mark_text examples[NVS_MARK_EXAMPLES];
    /* more texts than are told apart: text_count is the least there are */
    bool more_texts;
};

/* A frame's columns (columns.def): its time, then the parts it is made of (USB
 * to REST, in the order the page stacks them, each the union of its calls'
 * intervals in the frame; REST is what no call covers), then the kernel
 * probe's time off the CPU and the capture-to-actuation latency. CUDA holds
 * the copies, and the launches too when LAUNCH is not shown (launches that
 * take no time that shows); CAMERA is domain v4l2 less its frame ages. */
enum nvs_report_column {
#define NVS_COLUMN(ID, HEADING, KEY, PHRASE, CLASS, COLOUR, LEGEND, DOMAIN, RULE) NVS_COLUMN_##ID,
#include "model/columns.def"
#undef NVS_COLUMN
    NVS_COLUMNS
};
#define NVS_FIRST_PART (NVS_COLUMN_TOTAL + 1)
#define NVS_LAST_PART NVS_COLUMN_REST

/* The columns' headings in the text summary ("usb", "gpu wait", ...). */
extern const char *const nvs_report_column_names[NVS_COLUMNS];

/* The statistics of a column or a name; p50 and p99 by nearest rank. */
enum nvs_report_statistic { NVS_STAT_MEAN, NVS_STAT_P50, NVS_STAT_P99, NVS_STAT_MAX, NVS_STATS };

/* A row of the per-name table. */
struct nvs_report_name {
    const char *domain, *name;
    size_t count;
    double stats[NVS_STATS];
    /* p50 and p99 from a sketch (NVS_SKETCH_ERROR), the name having more
     * durations than are kept exactly; mean, max and count are exact */
    bool estimated;
};

/* The most an estimated p50 or p99 is off, as a fraction of its value. */
#define NVS_SKETCH_ERROR (1.0 / 256)

struct nvs_report_frame {
    uint64_t number; /* N of "frame N" */
    int64_t start;
    int64_t value[NVS_COLUMNS];
    bool has_kernel;  /* RUNNABLE and BLOCKED: the kernel probe's figures */
    bool has_latency; /* LATENCY: its first capture-to-actuation pair's */
    uint64_t preemptions, faults;
    uint64_t dropped; /* camera frames dropped in it */
};

enum nvs_report_budget { NVS_BUDGET_NONE, NVS_BUDGET_OPTION, NVS_BUDGET_MARKS };

/* A call in a frame: its name and its time in the frame. */
struct nvs_report_call {
    const char *name;
    int64_t duration;
};
#define NVS_SLOWEST_CALLS 5

/* The frames of one process ("frame N" ranges of domain nvtxshim) and the
 * calls of that process inside them. */
struct nvs_report_process {
    uint32_t pid;
    const char *name;                /* its name in the file; NULL when it has none */
    struct nvs_report_frame *frames; /* in start order */
    size_t count;
    size_t *slowest;         /* indexes into frames: all of them, the slowest first */
    bool shown[NVS_COLUMNS]; /* the columns the data has */
    size_t with_kernel, with_latency;
    double stats[NVS_COLUMNS]
                [NVS_STATS]; /* of the shown columns; LATENCY over the frames with one */
    uint64_t dropped;        /* camera frames dropped: in all, and outside the frames */
    uint64_t dropped_outside;
    int64_t budget_ns; /* 0: none */
    enum nvs_report_budget budget_from;
    size_t over_budget; /* frames longer than the budget */
    /* its own per-name table, where the report has several processes (else
     * NULL: the report's is its) */
    struct nvs_report_name *names;
    size_t name_count;
    /* Its breakdown is an estimate: calls came after their frame was closed
     * (LATE_CALLS: a trace whose threads' events reach the file far apart, or
     * longer than the reader holds open frames), or frames came out of order. */
    bool estimated;
    size_t late_calls;
};

/* A capture window (a "capture ..." range of an NVTX domain of the program's)
 * and the frames that start inside it (first and last 0: none). */
struct nvs_report_window {
    const char *name, *domain;
    int64_t duration;
    uint64_t first, last;
};

/* Capture to actuation, over all processes. */
struct nvs_report_latency {
    size_t pairs, camera_frames, actuations;
    double stats[NVS_STATS]; /* when pairs > 0 */
};

struct nvs_report {
    const char *path;              /* the file read */
    struct nvs_report_name *names; /* by domain, then name */
    size_t name_count;
    struct nvs_report_mark_kind *marks; /* by domain, then the most marks first, then kind */
    size_t mark_kind_count;
    struct nvs_report_process *processes; /* by pid */
    size_t process_count;
    struct nvs_report_latency latency;
    struct nvs_report_window *windows; /* in start order */
    size_t window_count;
    long slowest;       /* frames to list as the slowest (--slowest) */
    size_t nvtx_events; /* the NVTX ranges and marks the figures were made from */
};

/* A frame over its process's budget, by the library's rule (longer than it). */
static inline bool nvs_report_over_budget(const struct nvs_report_process *process,
                                          const struct nvs_report_frame *frame)
{
    return process->budget_ns > 0 && frame->value[NVS_COLUMN_TOTAL] > process->budget_ns;
}

struct nvs_events;
struct nvs_event;

/* The memory of REPORT's figures, let go. */
void nvs_figures_free(struct nvs_report *report);

/* REPORT's figures worked out as the events are read, in memory that grows
 * with the frames and the names, not with the events: begin (EVENTS interns the
 * names; its strings must outlive the builder; BUDGET_NS: --budget's, 0 for none,
 * then each process's own from the library's over-budget marks, when it has
 * them), add each batch as it is read, then report. A frame's calls are gathered while it is open and its figures
 * made when it closes: at the report, or once too many calls are held (the
 * oldest frames first); a call that comes after its frame closed is added as
 * an estimate, said in the process's ESTIMATED. Durations are kept exactly up
 * to a limit over all names; past it, the names with the most keep a sketch
 * (nvs_report_name's ESTIMATED). */
struct nvs_figures_builder;
struct nvs_figures_builder *nvs_figures_begin(struct nvs_events *events, int64_t budget_ns);
/* 0, or -1 out of memory. */
int nvs_figures_add(struct nvs_figures_builder *builder, const struct nvs_event *batch,
                    size_t count);
/* REPORT's figures from all that was added (REPORT's path and slowest set by the
 * caller). FINAL: the last report, which may take the builder's frames (it can
 * only be discarded after); else the builder goes on. 0, or -1 out of memory. */
int nvs_figures_report(struct nvs_figures_builder *builder, bool final, struct nvs_report *report);
void nvs_figures_discard(struct nvs_figures_builder *builder);

/* What a live view (nvtxshim top) shows of the loop so far, the process with
 * the most frames: worked out from the builder without a report, in time that
 * grows with the frames, not with the events. */
struct nvs_live_loop {
    uint32_t pid;
    const char *name;     /* NULL when the file names it not */
    size_t count;         /* frames so far */
    double p50, p99, max; /* of their total time */
    int64_t budget_ns;    /* 0: none */
    size_t over_budget;
    bool shown[NVS_COLUMNS]; /* the part columns the data has, as the report decides */
    size_t last_count;       /* the last frames, at most as asked */
    uint64_t first_number, last_number;
    double last_mean[NVS_COLUMNS];                   /* their mean per column */
    struct nvs_report_frame slowest;                 /* the slowest frame so far */
    struct nvs_report_call calls[NVS_SLOWEST_CALLS]; /* its longest calls that count toward it */
    size_t call_count;
    bool estimated; /* the breakdown is an estimate (nvs_report_process) */
};

/* LOOP from what BUILDER has, its breakdown over the LAST frames; 1, 0 when
 * no process has frames yet, -1 out of memory. */
int nvs_figures_live(struct nvs_figures_builder *builder, size_t last, struct nvs_live_loop *loop);

/* How many events BUILDER has been given. */
uint64_t nvs_figures_events(const struct nvs_figures_builder *builder);

#endif
