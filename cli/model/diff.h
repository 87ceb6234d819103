/* nvtxshim diff: what its parts share. diff.c reads the runs of each side and
 * prints; diff_stats.c works out the comparison (pooled statistics, each
 * group's noise, the hierarchical bootstrap's intervals, the verdict, the
 * names); diff_json.c writes it for programs, diff_page.c as a page. A run
 * keeps only what the comparison needs of its report (its loop's frames and
 * its per-name rows), so that the events of one input at a time are held. */
#ifndef NVS_CLI_DIFF_H
#define NVS_CLI_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/figures.h"

#define NVS_DIFF_NS_PER_MS 1e6
/* The intervals' confidence, in percent. */
#define NVS_DIFF_CONFIDENCE 95
/* Columns the verdict names, at most. */
#define NVS_DIFF_NAMED_COLUMNS 3
/* Under this many frames a run's p99 by nearest rank is its slowest frame. */
#define NVS_DIFF_FEW_FRAMES 100
#define NVS_DIFF_FEW_FRAMES_NOTE " (fewer than 100: its p99 is its slowest frame)"

/* The frame statistics the verdict compares. */
enum nvs_diff_statistic { NVS_DIFF_MEDIAN, NVS_DIFF_P99, NVS_DIFF_STATISTICS };

/* What a change is, judged against the noise of A's runs. */
enum nvs_diff_judgement {
    NVS_DIFF_UNJUDGED,     /* A has one run: its noise cannot be judged */
    NVS_DIFF_WITHIN_NOISE, /* the interval reaches inside A's spread */
    NVS_DIFF_SLOWER,       /* the interval lies wholly above A's spread */
    NVS_DIFF_FASTER,       /* ... wholly below it */
};

/* A frame of a run's loop: its columns (figures.h), LATENCY only where
 * HAS_LATENCY; a column the run does not show is 0. */
struct nvs_diff_frame {
    int64_t value[NVS_COLUMNS];
    bool has_latency;
};

/* A row of a run's per-name table (its own copy of the strings). */
struct nvs_diff_name {
    char *domain, *name;
    size_t count;
    double mean, p99; /* ns */
    bool estimated;   /* p99 from a sketch (figures.h: NVS_SKETCH_ERROR) */
};

/* One run: its loop, the process with the most frames, and its names. */
struct nvs_diff_run {
    char *path;
    uint32_t pid;
    char *process;                 /* the process's name; NULL when it has none */
    struct nvs_diff_frame *frames; /* in start order */
    size_t frame_count;
    bool shown[NVS_COLUMNS];
    double stats[NVS_COLUMNS][NVS_STATS]; /* of its shown columns, as report has them */
    int64_t budget_ns;                    /* 0: none */
    size_t over_budget;
    bool estimated; /* its breakdown is an estimate: late calls (figures.h) */
    size_t late_calls;
    struct nvs_diff_name *names; /* by domain, then name; the frames themselves left out */
    size_t name_count;
};

/* A directory given as a side's operand: the files read from it, and those
 * left out by their names. */
struct nvs_diff_directory {
    char *path;
    size_t first_run, run_count; /* its runs: side->runs[first_run...] */
    char **left_out;
    size_t left_out_count;
};

/* Least and greatest of a figure over a group's runs, and that spread as a
 * percentage of the group's own figure. */
struct nvs_diff_spread {
    double least, greatest, percent;
};

/* A group of runs: A (before) or B (after). */
struct nvs_diff_side {
    char label; /* 'A' or 'B' */
    struct nvs_diff_run *runs;
    size_t run_count, run_capacity;
    struct nvs_diff_directory *directories;
    size_t directory_count;
    size_t frame_count;      /* of all its runs */
    bool shown[NVS_COLUMNS]; /* shown by any run of either side */
    /* all its runs' frames pooled; LATENCY over the frames with one */
    double stats[NVS_COLUMNS][NVS_STATS];
    /* the noise: over its runs (0 wide with one run) */
    struct nvs_diff_spread spread[NVS_DIFF_STATISTICS];
    struct nvs_diff_spread
        column_spread[NVS_COLUMNS]; /* of the runs' means; percent of the pooled mean */
};

/* An estimate and its interval. */
struct nvs_diff_interval {
    double estimate, low, high;
};

/* A range name in either side: its rows summed over each side's runs. */
struct nvs_diff_name_change {
    const char *domain, *name;
    bool in[2]; /* A has it, B has it */
    size_t count[2];
    double mean[2], p99[2]; /* p99: the median of its runs' p99s */
    bool estimated[2];      /* a run's p99 of it is a sketch's */
    double per_frame[2];    /* ns of it per frame of the loops */
};

struct nvs_diff {
    struct nvs_diff_side side[2];
    size_t resamples;
    uint64_t seed;
    /* percent change of the median and p99 frame, B against A */
    struct nvs_diff_interval change[NVS_DIFF_STATISTICS];
    enum nvs_diff_judgement judgement[NVS_DIFF_STATISTICS];
    /* B's mean per frame less A's, ns, for the parts and the kernel's columns */
    struct nvs_diff_interval column_change[NVS_COLUMNS];
    bool column_beyond[NVS_COLUMNS]; /* its interval clear of 0 and of A's spread */
    int named[NVS_DIFF_NAMED_COLUMNS];
    size_t named_count;
    struct nvs_diff_name_change *names; /* the most time per frame moved first */
    size_t name_count;
    /* the gates (percent; negative: none) and whether each found a regression */
    double gate[NVS_DIFF_STATISTICS];
    const char *gate_option[NVS_DIFF_STATISTICS]; /* the option that set it */
    bool regression[NVS_DIFF_STATISTICS];
};

extern const char *const nvs_diff_statistic_names[NVS_DIFF_STATISTICS]; /* "median", "p99" */

/* Works out DIFF's figures from its sides' runs (loaded, each with frames).
 * 0, or -1 out of memory. */
int nvs_diff_compute(struct nvs_diff *diff);
void nvs_diff_free(struct nvs_diff *diff);

/* Whether column C is shown: the frame's total, or a column any run has. */
bool nvs_diff_column_shown(const struct nvs_diff *diff, int c);

/* "slower", "faster", "within noise", "unjudged"; and the whole verdict's word
 * from the two ("mixed" where one is slower and the other faster). */
const char *nvs_diff_judgement_word(enum nvs_diff_judgement judgement);
const char *nvs_diff_verdict_word(const struct nvs_diff *diff);

/* The page (--html) and the document (--json): 0, or -1 after one line. */
int nvs_diff_write_page(const struct nvs_diff *diff, const char *path);
int nvs_diff_write_json(const struct nvs_diff *diff, const char *path);

#endif
