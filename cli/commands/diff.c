/* nvtxshim diff A B, or A1 A2 ... -- B1 B2 ...: runs of a control loop before
 * and after a change, compared frame for frame. Each input is loaded as report
 * loads it (load_run: load.c, then figures_builder.c) and its loop, the process with
 * the most frames, kept; diff_stats.c works out the comparison. Printed: the
 * runs, the verdict (the median and the p99 frame with their intervals,
 * judged against the noise among A's runs, the columns that moved the frame,
 * each group's noise, the gate), the per-frame statistics side by side, and the
 * range names by the time per frame they moved. --html draws it (diff_page.c),
 * --json writes it for programs (diff_json.c); --fail-over makes a regression
 * the exit status, as cmp and GNU diff have it: 0 within, 1 beyond the gate,
 * 2 trouble. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands/commands.h"
#include "model/diff.h"
#include "model/events.h"
#include "model/figures.h"
#include "readers/figures_load.h"
#include "readers/input.h"
#include "writers/report_json.h"
#include "commands/options.h"
#include "writers/html.h"

#define NS_PER_US 1e3
#define NAMES_SHOWN 20   /* rows of the per-name table */
#define LEFT_OUT_SHOWN 5 /* a directory's files left out, named at most */
#define TROUBLE 2        /* the exit status of anything but a comparison */

static const char manual[] =
    "NAME\n"
    "    nvtxshim diff - runs of a control loop before and after a change, compared\n"
    "    frame for frame\n"
    "\n"
    "SYNOPSIS\n"
    "    nvtxshim diff A B [OPTIONS]\n"
    "    nvtxshim diff A1 A2 ... -- B1 B2 ... [OPTIONS]\n"
    "    nvtxshim diff --help\n"
    "\n"
    "    OPTIONS: [--fail-over PCT] [--fail-over-median PCT] [--fail-over-p99 PCT]\n"
    "             [--html OUT.html] [--json[=OUT.json]] [--budget DURATION]\n"
    "             [--max-input SIZE]\n"
    "\n"
    "DESCRIPTION\n"
    "    Compares group B (after) against group A (before): one run each (A B),\n"
    "    or several, A's before -- and B's after it. Record several runs a side\n"
    "    to gate on: runs of the same code differ, and one run cannot tell a\n"
    "    change from that noise. Each run is read as nvtxshim report reads a\n"
    "    file (a trace in either form, plain or gzipped, an nsys export or\n"
    "    report, a pipe, or - for standard input, once); a directory stands for\n"
    "    the files in it named as traces or exports (*.json, *.pftrace, *.sqlite,\n"
    "    *.nsys-rep, *.qdrep, each also .gz; a report whose .sqlite export lies\n"
    "    beside it is read once, as the export), by name; the rest are named as\n"
    "    left out. Each run's loop is its process with the most \"frame N\" ranges\n"
    "    (each named on the first lines; a run of fewer than 100 frames is marked\n"
    "    there, as its p99 is its slowest frame). A side's frames are pooled:\n"
    "    its median and p99 frame (by nearest rank) are of all its runs' frames.\n"
    "\n"
    "    - The verdict: the median and the p99 frame of A and of B and the change\n"
    "      in percent, each with its 95 % interval from a hierarchical bootstrap:\n"
    "      a side's runs drawn with replacement, as many as it has, then each\n"
    "      drawn run's frames, as many as it has; the change of the pooled\n"
    "      draws, B's against A's, over 2000 such draws (fewer past 50,000\n"
    "      frames in all: as many as 100 million frames drawn allow, 200 at\n"
    "      least), from its 2.5th to its 97.5th percentile. The generator's\n"
    "      seed is fixed: the same inputs give the same figures. Where runs\n"
    "      differ among themselves the interval widens by that much. Each\n"
    "      change is judged against A's noise, how far A's runs' own median (or\n"
    "      p99) frames lie apart (the greatest less the least, as a percentage\n"
    "      of A's): slower where the interval lies wholly above that spread,\n"
    "      faster wholly below its negative, else within noise; with one run\n"
    "      of A the noise cannot be judged (unjudged). Both groups' noise is\n"
    "      printed. The verdict's word: slower, faster, mixed (one of each),\n"
    "      within noise or unjudged.\n"
    "    - The columns that moved the frame: for each part of the frame (usb,\n"
    "      cuda, gpu wait, launch, x11, camera, serial, hid, rest, and the\n"
    "      kernel probe's runnable and blocked), the change of its mean per\n"
    "      frame, B's less A's over all frames, with its interval from the same\n"
    "      draws; named where the interval lies wholly beyond A's noise in it\n"
    "      (its runs' means apart; 0 with one run) and the change is a tenth of\n"
    "      the frame's own mean change or more (and 0.001 ms), the largest first,\n"
    "      three at most. The parts add up to the frame, so their changes add up\n"
    "      to the frame's.\n"
    "    - Per frame, for each column a run has (a part no frame spent time in\n"
    "      left out): mean, p50, p99 and max of A and of B (all a side's frames)\n"
    "      in milliseconds, the change of the mean with its interval, and the\n"
    "      change of the p99.\n"
    "    - Per range name (domain and name, as report counts them; the frames\n"
    "      themselves are the table above): the count and mean over a side's\n"
    "      runs, the p99 (with several runs, the median of its runs' p99s), and\n"
    "      the time per frame it took (count x mean / frames), the names that\n"
    "      moved the frame most first (20 of them; the rest counted).\n"
    "\n"
    "OPTIONS\n"
    "    --fail-over PCT\n"
    "        Gate on both the median and the p99 frame: exit with status 1 where\n"
    "        either is a regression beyond PCT percent, that is, where the 95 %\n"
    "        interval of its change lies wholly above +PCT % (its low end greater\n"
    "        than PCT); one line on stderr for each says by how much. A change\n"
    "        whose interval reaches PCT or below passes: the data cannot tell it\n"
    "        from a change within the gate.\n"
    "\n"
    "    --fail-over-median PCT, --fail-over-p99 PCT\n"
    "        The same for the median or the p99 frame alone. Gates are set in\n"
    "        the order given: --fail-over 10 --fail-over-p99 25 gates the median\n"
    "        at 10 % and the p99 at 25 %.\n"
    "\n"
    "    --html OUT.html\n"
    "        Also write the comparison as one HTML page that needs nothing else:\n"
    "        both groups' frame time histograms on one scale, each run's median\n"
    "        and p99 frame, each column's mean per frame side by side, and the\n"
    "        tables. OUT.html that is there and is not a regular file is left as\n"
    "        it is (one line, exit 2).\n"
    "\n"
    "    --json, --json=OUT.json\n"
    "        Write every figure of the comparison as one JSON document, schema\n"
    "        \"nvtxshim-diff/1\" (docs/schema/diff-v1.json): to standard output in\n"
    "        place of the text (--json or --json=-), or to OUT.json beside it\n"
    "        (OUT only as --json=OUT: a word after --json is a run). Times are\n"
    "        integer nanoseconds, changes in percent. OUT.json is written as the\n"
    "        page is, and never over a run.\n"
    "\n"
    "    --budget DURATION\n"
    "        The frame budget for every run (as nvtxshim report --budget): frames\n"
    "        over it are counted for each.\n"
    "\n"
    "    --max-input SIZE\n"
    "        As for nvtxshim report: the most bytes each input may give once\n"
    "        read from a pipe or decompressed (default: no limit). Each input is\n"
    "        read as a stream, one after another: memory follows the runs'\n"
    "        frames and range names, not their events.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   the comparison was made, and no gate found a regression.\n"
    "    1   a gate found a regression: the median or p99 frame grew beyond it.\n"
    "    2   trouble: an input could not be read, is empty or has no frames (one\n"
    "        line says which and why), a directory holds no trace, the page or\n"
    "        the document could not be written, or a usage error.\n"
    "\n"
    "EXAMPLES\n"
    "    nvtxshim diff before.json after.json\n"
    "    nvtxshim diff a1.json a2.json a3.json -- b1.json b2.json b3.json\n"
    "    nvtxshim diff runs/main/ -- runs/branch/ --fail-over 10 --json=verdict.json\n"
    "    nvtxshim diff rig-a.pftrace rig-b.pftrace --html ab.html\n";

static int usage_error(const char *format, const char *what)
{
    return nvs_option_usage_error("diff", format, what);
}

static int out_of_memory(void)
{
    fputs("nvtxshim: diff: out of memory\n", stderr);
    return -1;
}

/* ---- one run ---------------------------------------------------------------------- */

static char *copy(const char *text)
{
    return text ? strdup(text) : NULL;
}

/* What RUN keeps of REPORT: its loop's frames and figures, and the names
 * (but the frames themselves, which the per-frame table has). -1 after one
 * line when it has no frames or memory ran out. */
static int keep_loop(struct nvs_diff_run *run, const struct nvs_report *report)
{
    const struct nvs_report_process *loop = NULL;
    for (size_t p = 0; p < report->process_count; p++)
        if (!loop || report->processes[p].count > loop->count)
            loop = &report->processes[p];
    if (!loop || !loop->count) {
        fprintf(stderr,
                "nvtxshim: diff: no frame ranges in %s: record it with NVTXSHIM_FRAME "
                "set\n",
                run->path);
        return -1;
    }
    run->pid = loop->pid;
    run->frame_count = loop->count;
    run->budget_ns = loop->budget_ns;
    run->over_budget = loop->over_budget;
    run->estimated = loop->estimated;
    run->late_calls = loop->late_calls;
    memcpy(run->shown, loop->shown, sizeof run->shown);
    memcpy(run->stats, loop->stats, sizeof run->stats);
    run->frames = calloc(loop->count, sizeof *run->frames);
    run->names = calloc(report->name_count + 1, sizeof *run->names);
    if ((loop->name && !(run->process = copy(loop->name))) || !run->frames || !run->names)
        return out_of_memory();
    for (size_t f = 0; f < loop->count; f++) {
        for (int c = 0; c < NVS_COLUMNS; c++)
            run->frames[f].value[c] = loop->shown[c] ? loop->frames[f].value[c] : 0;
        run->frames[f].has_latency = loop->frames[f].has_latency;
    }
    for (size_t k = 0; k < report->name_count; k++) {
        const struct nvs_report_name *row = &report->names[k];
        if (strcmp(row->domain, "nvtxshim") == 0 && strcmp(row->name, "frame N") == 0)
            continue;
        struct nvs_diff_name *name = &run->names[run->name_count++];
        name->domain = copy(row->domain);
        name->name = copy(row->name);
        name->count = row->count;
        name->mean = row->stats[NVS_STAT_MEAN];
        name->p99 = row->stats[NVS_STAT_P99];
        name->estimated = row->estimated;
        if (!name->domain || !name->name)
            return out_of_memory();
    }
    return 0;
}

/* The one place diff reads an input: its figures worked out as it is read
 * (figures_load.c, as report reads it: memory follows the frames and the
 * names, not the events), and what RUN keeps of them, all freed before the
 * next input is read. 0, or -1 after one line. */
static int load_run(struct nvs_diff_run *run, int64_t budget_ns, uint64_t max_input)
{
    struct nvs_load_options options = { .command = "diff",
                                        .what = NVS_LOAD_NVTX,
                                        .max_input = max_input };
    struct nvs_events events = { 0 };
    struct nvs_report report = { .path = run->path };
    int status = nvs_figures_load(&events, run->path, &options, budget_ns, &report);
    if (status == 0)
        status = keep_loop(run, &report);
    nvs_figures_free(&report);
    nvs_events_free(&events);
    return status;
}

/* ---- the sides -------------------------------------------------------------------- */

static struct nvs_diff_run *add_run(struct nvs_diff_side *side, const char *path)
{
    if (side->run_count == side->run_capacity) {
        size_t capacity = side->run_capacity ? side->run_capacity * 2 : 4;
        struct nvs_diff_run *runs = realloc(side->runs, capacity * sizeof *runs);
        if (!runs)
            return NULL;
        side->runs = runs;
        side->run_capacity = capacity;
    }
    struct nvs_diff_run *run = &side->runs[side->run_count];
    memset(run, 0, sizeof *run);
    if (!(run->path = strdup(path)))
        return NULL;
    side->run_count++;
    return run;
}

/* The names a directory's traces and exports have: what a recording, convert
 * and nsys write, gzipped or not. */
static const char *const trace_suffixes[] = { ".json", ".pftrace", ".sqlite", ".nsys-rep",
                                              ".qdrep" };

static bool trace_name(const char *name, size_t *stem)
{
    size_t length = strlen(name);
    if (length > 3 && strcmp(name + length - 3, ".gz") == 0)
        length -= 3;
    for (size_t k = 0; k < sizeof trace_suffixes / sizeof *trace_suffixes; k++) {
        size_t suffix = strlen(trace_suffixes[k]);
        if (length > suffix && strncmp(name + length - suffix, trace_suffixes[k], suffix) == 0) {
            *stem = length - suffix;
            return true;
        }
    }
    return false;
}

static int by_name(const void *left, const void *right)
{
    return strcmp(*(char *const *)left, *(char *const *)right);
}

/* Whether NAMES (COUNT, sorted) hold STEM (LENGTH bytes) with .sqlite after it. */
static bool has_export(char **names, size_t count, const char *stem, size_t length)
{
    for (size_t i = 0; i < count; i++)
        if (strncmp(names[i], stem, length) == 0 && strcmp(names[i] + length, ".sqlite") == 0)
            return true;
    return false;
}

static char *join(const char *directory, const char *name)
{
    char *path;
    size_t length = strlen(directory);
    bool slash = length && directory[length - 1] == '/';
    return asprintf(&path, "%s%s%s", directory, slash ? "" : "/", name) < 0 ? NULL : path;
}

/* The runs of directory PATH, by name, into SIDE: its files named as traces
 * or exports; what else is in it is named as left out. -1 after one line. */
static int add_directory(struct nvs_diff_side *side, const char *path)
{
    DIR *directory = opendir(path);
    if (!directory) {
        fprintf(stderr, "nvtxshim: diff: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t count = 0, capacity = 0;
    struct dirent *entry;
    int status = 0;
    errno = 0;
    while (status == 0 && (entry = readdir(directory))) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
            continue;
        if (count == capacity) {
            capacity = capacity ? capacity * 2 : 16;
            char **more = realloc(names, capacity * sizeof *names);
            if (!more) {
                status = out_of_memory();
                break;
            }
            names = more;
        }
        if (!(names[count] = strdup(entry->d_name)))
            status = out_of_memory();
        else
            count++;
        errno = 0;
    }
    if (status == 0 && errno) {
        fprintf(stderr, "nvtxshim: diff: cannot read %s: %s\n", path, strerror(errno));
        status = -1;
    }
    closedir(directory);
    if (count)
        qsort(names, count, sizeof *names, by_name);
    struct nvs_diff_directory *listed = NULL;
    if (status == 0) {
        struct nvs_diff_directory *more = realloc(side->directories,
                                                  (side->directory_count + 1) * sizeof *more);
        if (!more) {
            status = out_of_memory();
        } else {
            side->directories = more;
            listed = &side->directories[side->directory_count++];
            *listed = (struct nvs_diff_directory){ .path = strdup(path),
                                                   .first_run = side->run_count,
                                                   .left_out = calloc(count + 1, sizeof(char *)) };
            if (!listed->path || !listed->left_out)
                status = out_of_memory();
        }
    }
    for (size_t i = 0; status == 0 && i < count; i++) {
        char *full = join(path, names[i]);
        struct stat st;
        size_t stem = 0;
        const char *why = NULL;
        if (!full) {
            status = out_of_memory();
            break;
        }
        if (stat(full, &st) != 0 || !S_ISREG(st.st_mode))
            why = S_ISDIR(st.st_mode) ? "a directory" : "not a regular file";
        else if (!trace_name(names[i], &stem))
            why = "not named as a trace";
        else if ((nvs_ends_with(names[i], ".nsys-rep") || nvs_ends_with(names[i], ".qdrep")) &&
                 has_export(names, count, names[i], stem))
            why = "its .sqlite export is read";
        if (why) {
            if (asprintf(&listed->left_out[listed->left_out_count], "%s (%s)", names[i], why) < 0)
                status = out_of_memory();
            else
                listed->left_out_count++;
        } else if (!add_run(side, full)) {
            status = out_of_memory();
        } else {
            listed->run_count++;
        }
        free(full);
    }
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
    if (status == 0 && listed && !listed->run_count) {
        fprintf(stderr,
                "nvtxshim: diff: %s holds no trace or export (named *.json, *.pftrace, "
                "*.sqlite, *.nsys-rep or *.qdrep, or those .gz)\n",
                path);
        status = -1;
    }
    return status;
}

/* SIDE's runs from its operands: files, standard input, directories. */
static int add_operands(struct nvs_diff_side *side, char **operands, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        struct stat st;
        if (strcmp(operands[i], "-") != 0 && stat(operands[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            if (add_directory(side, operands[i]) != 0)
                return -1;
        } else if (!add_run(side, operands[i])) {
            return out_of_memory();
        }
    }
    return 0;
}

/* ---- the text --------------------------------------------------------------------- */

static const char *plural(size_t count)
{
    return count == 1 ? "" : "s";
}

static void describe_directory(const struct nvs_diff_side *side,
                               const struct nvs_diff_directory *listed)
{
    printf("  %c: %s: %zu file%s read, by name:", side->label, listed->path, listed->run_count,
           plural(listed->run_count));
    for (size_t r = 0; r < listed->run_count; r++) {
        const char *path = side->runs[listed->first_run + r].path;
        const char *slash = strrchr(path, '/');
        printf(" %s", slash ? slash + 1 : path);
    }
    if (listed->left_out_count) {
        fputs("; left out:", stdout);
        for (size_t k = 0; k < listed->left_out_count && k < LEFT_OUT_SHOWN; k++)
            printf("%s %s", k ? "," : "", listed->left_out[k]);
        if (listed->left_out_count > LEFT_OUT_SHOWN)
            printf(" and %zu more", listed->left_out_count - LEFT_OUT_SHOWN);
    }
    putchar('\n');
}

/* "A", or "A2" where A has several runs. */
static void run_label(const struct nvs_diff_side *side, size_t r, char *label, size_t size)
{
    if (side->run_count == 1)
        snprintf(label, size, "%c", side->label);
    else
        snprintf(label, size, "%c%zu", side->label, r + 1);
}

static void describe_runs(const struct nvs_diff_side *side)
{
    size_t next_directory = 0;
    for (size_t r = 0; r < side->run_count; r++) {
        while (next_directory < side->directory_count &&
               side->directories[next_directory].first_run == r)
            describe_directory(side, &side->directories[next_directory++]);
        const struct nvs_diff_run *run = &side->runs[r];
        char label[32];
        run_label(side, r, label, sizeof label);
        printf("  %s: %s: process %" PRIu32 "%s%s%s, %zu frame%s%s", label, run->path, run->pid,
               run->process ? " (" : "", run->process ? run->process : "", run->process ? ")" : "",
               run->frame_count, plural(run->frame_count),
               run->frame_count < NVS_DIFF_FEW_FRAMES ? NVS_DIFF_FEW_FRAMES_NOTE : "");
        if (run->budget_ns)
            printf(", %zu over the %.3f ms budget", run->over_budget,
                   (double)run->budget_ns / NVS_DIFF_NS_PER_MS);
        if (run->estimated)
            printf(
                " (its breakdown into columns is an estimate: %zu call%s reached the trace after "
                "their frame was closed, or frames came out of order)",
                run->late_calls, plural(run->late_calls));
        putchar('\n');
    }
}

static double ms(double ns)
{
    return ns / NVS_DIFF_NS_PER_MS;
}

static void print_noise(const struct nvs_diff *diff)
{
    const struct nvs_diff_side *a = &diff->side[0], *b = &diff->side[1];
    if (a->run_count < 2 && b->run_count < 2) {
        puts(
            "  noise: one run of A and one of B: how far runs of the same code lie apart cannot be "
            "judged (record 2 or more a side); the intervals hold the variation of each run's "
            "frames alone");
        return;
    }
    puts("  noise, how far each group's runs lie apart (least to greatest; that spread over the "
         "group's own figure):");
    for (int side = 0; side < 2; side++) {
        const struct nvs_diff_side *group = &diff->side[side];
        if (group->run_count < 2) {
            printf("    %c, 1 run: its noise cannot be judged\n", group->label);
            continue;
        }
        printf("    %c, %zu runs:", group->label, group->run_count);
        for (int s = 0; s < NVS_DIFF_STATISTICS; s++)
            printf("%s %s %.3f to %.3f ms (%.1f %%)", s ? ";" : "", nvs_diff_statistic_names[s],
                   ms(group->spread[s].least), ms(group->spread[s].greatest),
                   group->spread[s].percent);
        putchar('\n');
    }
}

static void print_verdict(const struct nvs_diff *diff)
{
    const struct nvs_diff_side *a = &diff->side[0], *b = &diff->side[1];
    static const int stat_of[NVS_DIFF_STATISTICS] = { NVS_STAT_P50, NVS_STAT_P99 };
    printf("\n== Verdict: %s (B against A; %d %% intervals from %zu resamples of the runs, then of "
           "each run's frames)\n",
           nvs_diff_verdict_word(diff), NVS_DIFF_CONFIDENCE, diff->resamples);
    for (int s = 0; s < NVS_DIFF_STATISTICS; s++) {
        const struct nvs_diff_interval *change = &diff->change[s];
        char name[16];
        snprintf(name, sizeof name, "%s frame", nvs_diff_statistic_names[s]);
        printf("  %-12s %9.3f -> %9.3f ms %+8.1f %% [%+.1f, %+.1f]  ", name,
               ms(a->stats[NVS_COLUMN_TOTAL][stat_of[s]]),
               ms(b->stats[NVS_COLUMN_TOTAL][stat_of[s]]), change->estimate, change->low,
               change->high);
        switch (diff->judgement[s]) {
        case NVS_DIFF_UNJUDGED: puts("unjudged: A's noise cannot be judged from one run"); break;
        case NVS_DIFF_WITHIN_NOISE:
            printf("within noise: inside A's spread (%.1f %%)\n", a->spread[s].percent);
            break;
        default:
            printf("%s: beyond A's spread (%.1f %%)\n", nvs_diff_judgement_word(diff->judgement[s]),
                   a->spread[s].percent);
        }
    }
    fputs("  moved the frame (mean per frame, B less A):", stdout);
    for (size_t k = 0; k < diff->named_count; k++) {
        const struct nvs_diff_interval *change = &diff->column_change[diff->named[k]];
        printf("%s %s %+.3f ms [%+.3f, %+.3f]", k ? "," : "",
               nvs_report_column_names[diff->named[k]], ms(change->estimate), ms(change->low),
               ms(change->high));
    }
    if (!diff->named_count)
        fputs(a->run_count < 2 ? " no column's mean moved clear of 0"
                               : " no column's mean moved "
                                 "beyond A's noise",
              stdout);
    putchar('\n');
    print_noise(diff);
    for (int s = 0; s < NVS_DIFF_STATISTICS; s++)
        if (diff->gate[s] >= 0)
            printf("  gate %s %g %%: the %s frame is %s (the low end of its interval, %+.1f %%, %s "
                   "it)\n",
                   diff->gate_option[s], diff->gate[s], nvs_diff_statistic_names[s],
                   diff->regression[s] ? "a regression" : "within it", diff->change[s].low,
                   diff->regression[s] ? "is above" : "is not above");
}

static void print_frames(const struct nvs_diff *diff)
{
    const struct nvs_diff_side *a = &diff->side[0], *b = &diff->side[1];
    puts("\n== Per frame (milliseconds; all of a side's frames; p50 and p99 by nearest rank): A, "
         "then B, then the change");
    printf("  %-10s %9s %9s %9s %9s   %9s %9s %9s %9s   %9s %-21s %9s\n", "", "A mean", "p50",
           "p99", "max", "B mean", "p50", "p99", "max", "mean", "[95 % interval]", "p99");
    for (int c = 0; c < NVS_COLUMNS; c++) {
        if (!nvs_diff_column_shown(diff, c))
            continue;
        printf("  %-10s", nvs_report_column_names[c]);
        for (int side = 0; side < 2; side++) {
            for (int s = 0; s < NVS_STATS; s++)
                printf(" %9.3f", ms(diff->side[side].stats[c][s]));
            fputs("  ", stdout);
        }
        printf(" %+9.3f", ms(b->stats[c][NVS_STAT_MEAN] - a->stats[c][NVS_STAT_MEAN]));
        char interval[64] = "";
        if (c != NVS_COLUMN_LATENCY)
            snprintf(interval, sizeof interval, "[%+.3f, %+.3f]", ms(diff->column_change[c].low),
                     ms(diff->column_change[c].high));
        printf(" %-21s %+9.3f\n", interval,
               ms(b->stats[c][NVS_STAT_P99] - a->stats[c][NVS_STAT_P99]));
    }
}

static void print_name_side(const struct nvs_diff_name_change *change, int side)
{
    if (change->in[side])
        printf(change->estimated[side] ? " %8zu %9.1f ~%8.1f" : " %8zu %9.1f %9.1f",
               change->count[side], change->mean[side] / NS_PER_US, change->p99[side] / NS_PER_US);
    else
        printf(" %8s %9s %9s", "-", "-", "-");
}

static void print_names(const struct nvs_diff *diff)
{
    bool several = diff->side[0].run_count > 1 || diff->side[1].run_count > 1;
    printf("\n== Range names by the time per frame they moved (count; mean and p99%s in "
           "microseconds; per frame in milliseconds)\n",
           several ? " (the median of the runs')" : "");
    printf("  %-9s %-34s %8s %9s %9s %8s %9s %9s %9s %9s %9s\n", "domain", "name", "A count",
           "mean", "p99", "B count", "mean", "p99", "A/frame", "B/frame", "change");
    for (size_t i = 0; i < diff->name_count && i < NAMES_SHOWN; i++) {
        const struct nvs_diff_name_change *change = &diff->names[i];
        printf("  %-9.9s %-34.34s", change->domain, change->name);
        print_name_side(change, 0);
        print_name_side(change, 1);
        printf(" %9.3f %9.3f %+9.3f\n", ms(change->per_frame[0]), ms(change->per_frame[1]),
               ms(change->per_frame[1] - change->per_frame[0]));
    }
    if (diff->name_count > NAMES_SHOWN)
        printf("  (%zu more names moved the frame less)\n", diff->name_count - NAMES_SHOWN);
    size_t estimated = 0;
    for (size_t i = 0; i < diff->name_count && i < NAMES_SHOWN; i++)
        estimated += diff->names[i].estimated[0] || diff->names[i].estimated[1];
    if (estimated)
        printf("  (~: a p99 of a run with more ranges of the name than are kept exactly, estimated "
               "within %.1f %%; counts and means are exact)\n",
               100.0 * NVS_SKETCH_ERROR);
}

static void print_text(const struct nvs_diff *diff)
{
    printf("== nvtxshim diff: B against A; each run's loop is its process with the most frames\n");
    for (int side = 0; side < 2; side++)
        describe_runs(&diff->side[side]);
    print_verdict(diff);
    print_frames(diff);
    print_names(diff);
}

/* ---- the command ------------------------------------------------------------------ */

/* Whether A and B are the same file (both there). */
static bool same_file(const char *a, const char *b)
{
    struct stat x, y;
    return strcmp(a, "-") != 0 && stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev &&
        x.st_ino == y.st_ino;
}

static bool parse_percent(const char *value, double *out)
{
    char *end;
    errno = 0;
    double number = strtod(value, &end);
    if (!*value || (*end && strcmp(end, "%") != 0) || errno || !(number >= 0) || isinf(number))
        return false;
    *out = number;
    return true;
}

/* What diff's command line says. */
struct diff_line {
    struct nvs_diff *diff;
    const char *html, *json;
    int64_t budget_ns;
    uint64_t max_input;
    char **operands; /* A's runs, then B's */
    size_t count, separator, stdin_count;
    bool separated; /* by a -- */
};

/* The gates' ids are the statistics they gate (NVS_DIFF_STATISTICS: both). */
enum { DIFF_JSON = NVS_DIFF_STATISTICS + 1, DIFF_HTML, DIFF_BUDGET, DIFF_MAX_INPUT };

static const struct nvs_option diff_options[] = {
    { "json", 0, NVS_OPTION_OPTIONAL, DIFF_JSON },
    { "html", 0, NVS_OPTION_VALUE, DIFF_HTML },
    { "fail-over", 0, NVS_OPTION_VALUE, NVS_DIFF_STATISTICS },
    { "fail-over-median", 0, NVS_OPTION_VALUE, NVS_DIFF_MEDIAN },
    { "fail-over-p99", 0, NVS_OPTION_VALUE, NVS_DIFF_P99 },
    { "budget", 0, NVS_OPTION_VALUE, DIFF_BUDGET },
    { "max-input", 0, NVS_OPTION_VALUE, DIFF_MAX_INPUT },
    { "help", 'h', NVS_OPTION_FLAG, NVS_OPTION_HELP },
    { NULL, 0, 0, 0 },
};

static void diff_manual(void *context)
{
    (void)context;
    fputs(manual, stdout);
}

/* --fail-over (GATE NVS_DIFF_STATISTICS), --fail-over-median or --fail-over-p99 VALUE. */
static int diff_gate(struct nvs_diff *diff, int gate, const char *value)
{
    static const char *const names[] = { "--fail-over-median", "--fail-over-p99", "--fail-over" };
    double percent = 0;
    if (!parse_percent(value, &percent)) {
        char format[96];
        snprintf(format, sizeof format, "%s needs a percentage, 0 or more (10, 2.5): '%%s'",
                 names[gate]);
        return usage_error(format, value);
    }
    for (int s = 0; s < NVS_DIFF_STATISTICS; s++)
        if (gate == NVS_DIFF_STATISTICS || gate == s) {
            diff->gate[s] = percent;
            diff->gate_option[s] = names[gate];
        }
    return -1;
}

static int diff_option(void *context, int id, const char *value)
{
    struct diff_line *line = context;
    if (id == DIFF_JSON) {
        line->json = value ? value : "-";
        if (value && !*value)
            return usage_error(
                "%s--json= needs the document's file name (or - for standard output)", "");
        return -1;
    }
    value = value ? value : "";
    switch (id) {
    case DIFF_HTML:
        if (!*value)
            return usage_error("%s--html needs the page's file name", "");
        line->html = value;
        break;
    case DIFF_BUDGET:
        line->budget_ns = nvs_option_budget(value);
        if (!line->budget_ns)
            return usage_error(NVS_OPTION_BUDGET_USAGE, value);
        break;
    case DIFF_MAX_INPUT:
        if (!nvs_input_parse_size(value, &line->max_input))
            return usage_error(NVS_OPTION_MAX_INPUT_USAGE, value);
        break;
    default: return diff_gate(line->diff, id, value);
    }
    return -1;
}

/* A run, or the -- between A's and B's. */
static int diff_operand(void *context, const char *operand, bool after_dashes)
{
    struct diff_line *line = context;
    (void)after_dashes;
    if (strcmp(operand, "--") == 0) {
        if (line->separated)
            return usage_error("%sone -- between A's runs and B's, not two", "");
        line->separated = true;
        line->separator = line->count;
        return -1;
    }
    line->stdin_count += strcmp(operand, "-") == 0;
    line->operands[line->count++] = (char *)operand;
    return -1;
}

static const struct nvs_command_line diff_command_line = {
    .command = "diff",
    .options = diff_options,
    .dashes = NVS_DASHES_OPERAND,
    .manual = diff_manual,
    .option = diff_option,
    .operand = diff_operand,
};

/* The runs a side, and the outputs, checked once the line is read: 0 or a
 * usage error's status. */
static int check_line(struct diff_line *line)
{
    int status = 0;
    if (!line->separated && line->count < 2)
        status = usage_error("%swhich runs? nvtxshim diff A B, or A1 A2 ... -- B1 B2 ...", "");
    else if (!line->separated && line->count > 2)
        status = usage_error("'%s': more than one run a side needs -- between A's runs and B's "
                             "(nvtxshim diff A1 A2 -- B1 B2)",
                             line->operands[2]);
    else if (line->separated && (line->separator == 0 || line->separator == line->count))
        status = usage_error(
            "%s", line->separator == 0 ? "no run of A before --" : "no run of B after --");
    else if (line->stdin_count > 1)
        status = usage_error("%sstandard input can be one of the runs, not two", "");
    if (!line->separated)
        line->separator = 1;
    const char *json = line->json, *html = line->html;
    bool to_stdout = json && strcmp(json, "-") == 0;
    if (status == 0 && json && !to_stdout && html && same_file(json, html))
        status = usage_error("--json and --html name the same file: %s", json);
    if (status == 0 && html && nvs_html_refused("diff", html) != 0)
        status = TROUBLE;
    if (status == 0 && json && !to_stdout && nvs_json_refused("diff", json) != 0)
        status = TROUBLE;
    return status;
}

int nvs_cli_diff(int argc, char **argv)
{
    struct nvs_diff diff = { .side = { { .label = 'A' }, { .label = 'B' } }, .gate = { -1, -1 } };
    struct diff_line line = { .diff = &diff };
    line.operands = calloc((size_t)argc + 1, sizeof *line.operands);
    if (!line.operands)
        return out_of_memory(), TROUBLE;
    int status = nvs_options_read(&diff_command_line, argc, argv, &line, NULL);
    if (status >= 0) {
        free(line.operands);
        return status;
    }
    status = check_line(&line);
    char **operands = line.operands;
    const char *html = line.html, *json = line.json;
    bool to_stdout = json && strcmp(json, "-") == 0;
    size_t count = line.count, separator = line.separator;
    int64_t budget_ns = line.budget_ns;
    uint64_t max_input = line.max_input;
    if (status != 0) {
        free(operands);
        return status;
    }

    if (add_operands(&diff.side[0], operands, separator) != 0 ||
        add_operands(&diff.side[1], operands + separator, count - separator) != 0)
        status = -1;
    free(operands);
    /* a page or document written over a run would lose it */
    for (int side = 0; side < 2 && status == 0; side++)
        for (size_t r = 0; r < diff.side[side].run_count && status == 0; r++) {
            const char *path = diff.side[side].runs[r].path;
            const char *out = html && same_file(path, html)   ? html
                : json && !to_stdout && same_file(path, json) ? json
                                                              : NULL;
            if (out) {
                usage_error("%s is a run to compare, not the output's file", out);
                nvs_diff_free(&diff);
                return TROUBLE;
            }
        }
    for (int side = 0; side < 2 && status == 0; side++)
        for (size_t r = 0; r < diff.side[side].run_count && status == 0; r++)
            status = load_run(&diff.side[side].runs[r], budget_ns, max_input);
    if (status == 0 && nvs_diff_compute(&diff) != 0)
        status = out_of_memory();
    if (status == 0 && !to_stdout) {
        print_text(&diff);
        if (fflush(stdout) != 0) {
            fprintf(stderr, "nvtxshim: diff: cannot write the comparison: %s\n", strerror(errno));
            status = -1;
        }
    }
    if (status == 0 && json)
        status = nvs_diff_write_json(&diff, json);
    if (status == 0 && html)
        status = nvs_diff_write_page(&diff, html);
    bool regression = false;
    for (int s = 0; s < NVS_DIFF_STATISTICS && status == 0; s++) {
        if (!diff.regression[s])
            continue;
        fprintf(stderr,
                "nvtxshim: diff: the %s frame grew %+.1f %% (%d %% interval %+.1f %% to "
                "%+.1f %%), wholly above %s %g %%\n",
                nvs_diff_statistic_names[s], diff.change[s].estimate, NVS_DIFF_CONFIDENCE,
                diff.change[s].low, diff.change[s].high, diff.gate_option[s], diff.gate[s]);
        regression = true;
    }
    nvs_diff_free(&diff);
    return status != 0 ? TROUBLE : regression ? 1 : 0;
}
