/* nvtxshim top: a live view of a recording in progress. The trace file the
 * library is writing (either form) is read again whenever it has grown, as
 * report reads it (what the recorder has flushed: whole events, at every frame
 * end), and the loop's frames so far are summarised: p50, p99 and max, the
 * last N frames' breakdown by column, the slowest frame and the calls that
 * made it. Reading a file changes nothing in the program; the view ends with
 * the program (the process the trace names, or the child of run --top). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "events.h"
#include "figures.h"
#include "input.h"
#include "load.h"
#include "options.h"
#include "top.h"

#define NS_PER_MS 1e6
#define SLOWEST_CALLS 5

static const char manual[] =
    "NAME\n"
    "    nvtxshim top - a live view of a recording in progress\n"
    "\n"
    "SYNOPSIS\n"
    "    nvtxshim top [--frames N] [--interval SECONDS] [--once] FILE\n"
    "    nvtxshim run --top [--trace FILE] [OPTIONS] -- PROGRAM [ARGS...]\n"
    "    nvtxshim top --help\n"
    "\n"
    "DESCRIPTION\n"
    "    Reads FILE, the trace a program is writing (NVTXSHIM_TRACE's file, JSON\n"
    "    or .pftrace), again whenever it has grown, and shows the loop's frames\n"
    "    so far (the process with the most \"frame N\" ranges):\n"
    "\n"
    "    - how many, and their p50, p99 and max (and how many were over the\n"
    "      budget, where the library marks a budget);\n"
    "    - the last N frames' mean time per column (total, usb, cuda, gpu wait,\n"
    "      launch, x11, camera, serial, hid, rest: the columns of nvtxshim\n"
    "      report, those the data has);\n"
    "    - the slowest frame so far, its columns and the longest calls in it.\n"
    "\n"
    "    It reads only what the recorder has written to the file, which it does\n"
    "    at the end of every frame, so the program runs as it does while it\n"
    "    records: top takes nothing from it but a share of the CPU, about once\n"
    "    a second. On a terminal each view replaces the last; otherwise the\n"
    "    views follow one another, separated by a blank line. It ends when the\n"
    "    process the trace names has ended (with one last view), or at\n"
    "    Ctrl-C. Reading a long trace again takes longer: the interval grows to\n"
    "    twice the time the last reading took, and the view says so.\n"
    "\n"
    "    nvtxshim run --top runs the program with the library (as nvtxshim run\n"
    "    does) and shows its trace this way until it ends; without --trace the\n"
    "    trace goes to a temporary .pftrace file, removed at the end. The\n"
    "    program's own output goes where it would.\n"
    "\n"
    "OPTIONS\n"
    "    --frames N\n"
    "        The last frames the breakdown is made of (default 50).\n"
    "\n"
    "    --interval SECONDS\n"
    "        How often to look at the file (default 1).\n"
    "\n"
    "    --once\n"
    "        Show the view once and exit.\n"
    "\n"
    "    --help, -h\n"
    "        Print this page and exit.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   the program ended (or --once showed its view).\n"
    "    1   FILE could not be read (with --once: or has no frames yet).\n"
    "    2   a usage error.\n"
    "    With run --top, the program's exit status.\n"
    "\n"
    "EXAMPLES\n"
    "    NVTXSHIM_TRACE=rig.pftrace NVTXSHIM_FRAME=usb.in:0x81 ./loop & nvtxshim top rig.pftrace\n"
    "    nvtxshim run --top --frame usb.in:0x81 -- ./loop\n";

static volatile sig_atomic_t interrupted;

static void on_interrupt(int number)
{
    (void)number;
    interrupted = 1;
}

static double seconds_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static void pause_for(double seconds)
{
    struct timespec wait = {(time_t)seconds, (long)((seconds - floor(seconds)) * 1e9)};
    while (!interrupted && nanosleep(&wait, &wait) != 0 && errno == EINTR)
        continue;
}

/* The process with the most frames, or NULL. */
static const struct nvs_report_process *loop_of(const struct nvs_report *report)
{
    const struct nvs_report_process *loop = NULL;
    for (size_t p = 0; p < report->process_count; p++)
        if (report->processes[p].count && (!loop || report->processes[p].count > loop->count))
            loop = &report->processes[p];
    return loop;
}

static int by_length(const void *left, const void *right)
{
    const struct nvs_event *const *x = left, *const *y = right;
    int64_t dx = (*x)->end - (*x)->start, dy = (*y)->end - (*y)->start;
    return dx < dy ? 1 : dx > dy ? -1 : 0;
}

/* The longest calls of process PID inside [START, END], at most SLOWEST_CALLS. */
static void print_calls_in(FILE *out, const struct nvs_events *events, uint32_t pid, int64_t start,
                           int64_t end)
{
    const struct nvs_event *longest[SLOWEST_CALLS];
    size_t count = 0;
    for (size_t i = 0; i < events->count; i++) {
        const struct nvs_event *event = &events->events[i];
        if (event->kind != NVS_EVENT_RANGE || event->pid != pid || event->start < start ||
            event->end > end || strcmp(event->domain, "nvtxshim") == 0)
            continue;
        if (count == SLOWEST_CALLS) {
            /* full: in place of the shortest, where this one is longer */
            if (event->end - event->start <= longest[count - 1]->end - longest[count - 1]->start)
                continue;
            count--;
        }
        longest[count++] = event;
        qsort(longest, count, sizeof *longest, by_length);
    }
    fputs("  the longest calls in it:", out);
    for (size_t i = 0; i < count; i++)
        fprintf(out, "%s %s %.3f ms", i ? "," : "", longest[i]->name,
                (double)(longest[i]->end - longest[i]->start) / NS_PER_MS);
    fputs(count ? "\n" : " none\n", out);
}

static void print_columns(FILE *out, const struct nvs_report_process *loop, const double *values)
{
    for (int c = 0; c <= NVS_LAST_PART; c++)
        if (c == NVS_COLUMN_TOTAL || loop->shown[c])
            fprintf(out, "%s%s %.3f", c ? " | " : "", nvs_report_column_names[c], values[c] / NS_PER_MS);
    fputc('\n', out);
}

/* One view of REPORT (made from EVENTS) of PATH. */
static void print_view(FILE *out, const char *path, const struct nvs_report *report,
                       const struct nvs_events *events, size_t last, double interval, off_t size)
{
    const struct nvs_report_process *loop = loop_of(report);
    fprintf(out, "nvtxshim top: %s, %.1f MB read; every %.1f s\n", path, (double)size / 1e6, interval);
    if (!loop) {
        fputs("no frames yet (the recorder writes each at its end; NVTXSHIM_FRAME says what a frame "
              "is)\n", out);
        return;
    }
    fprintf(out, "process %" PRIu32 "%s%s%s: %zu frames so far: p50 %.3f, p99 %.3f, max %.3f ms",
            loop->pid, loop->name ? " (" : "", loop->name ? loop->name : "", loop->name ? ")" : "",
            loop->count, loop->stats[NVS_COLUMN_TOTAL][NVS_STAT_P50] / NS_PER_MS,
            loop->stats[NVS_COLUMN_TOTAL][NVS_STAT_P99] / NS_PER_MS,
            loop->stats[NVS_COLUMN_TOTAL][NVS_STAT_MAX] / NS_PER_MS);
    if (loop->budget_ns)
        fprintf(out, "; %zu over the %.3f ms budget", loop->over_budget,
                (double)loop->budget_ns / NS_PER_MS);
    fputc('\n', out);
    size_t from = loop->count > last ? loop->count - last : 0;
    double means[NVS_COLUMNS] = {0};
    for (size_t i = from; i < loop->count; i++)
        for (int c = 0; c < NVS_COLUMNS; c++)
            means[c] += (double)loop->frames[i].value[c] / (double)(loop->count - from);
    fprintf(out, "last %zu frames (%" PRIu64 "-%" PRIu64 "), mean ms: ", loop->count - from,
            loop->frames[from].number, loop->frames[loop->count - 1].number);
    print_columns(out, loop, means);
    const struct nvs_report_frame *slowest = &loop->frames[loop->slowest[0]];
    double values[NVS_COLUMNS];
    for (int c = 0; c < NVS_COLUMNS; c++)
        values[c] = (double)slowest->value[c];
    fprintf(out, "slowest so far: frame %" PRIu64 ", ms: ", slowest->number);
    print_columns(out, loop, values);
    print_calls_in(out, events, loop->pid, slowest->start,
                   slowest->start + slowest->value[NVS_COLUMN_TOTAL]);
}

/* Whether process PID is gone (0: not known yet). */
static bool gone(uint32_t pid)
{
    return pid && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

int nvs_top_watch(const char *path, pid_t child, const struct nvs_top_options *top, int *child_status)
{
    bool terminal = isatty(STDOUT_FILENO);
    struct sigaction action = {.sa_handler = on_interrupt}, old_int, old_term;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &old_int);
    sigaction(SIGTERM, &action, &old_term);
    double interval = top->interval_s;
    off_t shown_size = -1;
    uint32_t watched = 0;
    bool ended = false, said_waiting = false;
    int outcome = 0;
    for (;;) {
        if (child > 0 && !ended) {
            int status;
            pid_t done = waitpid(child, &status, WNOHANG);
            if (done == child) {
                ended = true;
                if (child_status)
                    *child_status = status;
            }
        } else if (!child && !ended) {
            ended = gone(watched);
        }
        struct stat status;
        bool there = stat(path, &status) == 0;
        if (there && !S_ISREG(status.st_mode)) {
            /* a pipe would be read empty, and what it holds taken from its reader */
            fprintf(stderr, "nvtxshim: top: %s is not a regular file: top follows a trace file as it "
                    "grows\n", path);
            outcome = 1;
            break;
        }
        if (there && status.st_size != shown_size && status.st_size > 0) {
            double started = seconds_now();
            struct nvs_events events = {0};
            struct nvs_load_options options = {.command = "top", .what = NVS_LOAD_NVTX, .live = true};
            struct nvs_report report = {.path = path};
            if (nvs_events_load(&events, path, &options) == 0 &&
                nvs_figures_compute(&events, 0, &report) == 0) {
                const struct nvs_report_process *loop = loop_of(&report);
                if (loop)
                    watched = loop->pid;
                if (terminal)
                    fputs("\033[H\033[J", stdout);
                else if (shown_size >= 0)
                    fputc('\n', stdout);
                print_view(stdout, path, &report, &events, top->frames, interval, status.st_size);
                fflush(stdout);
                shown_size = status.st_size;
                if (top->once)
                    outcome = loop ? 0 : 1;
            } else if (top->once) {
                outcome = 1;
            }
            nvs_figures_free(&report);
            nvs_events_free(&events);
            double took = seconds_now() - started;
            if (took * 2 > interval)
                interval = took * 2;
        } else if (!there && !said_waiting && !top->once) {
            fprintf(stderr, "nvtxshim: top: waiting for %s to be written\n", path);
            said_waiting = true;
        } else if (!there && top->once) {
            fprintf(stderr, "nvtxshim: top: cannot read %s: %s\n", path, strerror(errno));
            outcome = 1;
        }
        if (top->once || interrupted)
            break;
        if (ended) {
            /* One last look: the recorder finished the file as the process ended. */
            if (there && stat(path, &status) == 0 && status.st_size != shown_size)
                continue;
            break;
        }
        pause_for(interval);
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    return outcome;
}

static int usage_error(const char *format, const char *what)
{
    return nvs_option_usage_error("top", format, what);
}

int nvs_cli_top(int argc, char **argv)
{
    struct nvs_top_options top = {.frames = NVS_TOP_FRAMES, .interval_s = 1.0};
    const char *path = NULL, *value;
    if (nvs_option_help(argc, argv)) {
        fputs(manual, stdout);
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        const char *argument = argv[i];
        if ((value = nvs_option_value("--frames", argc, argv, &i))) {
            long frames;
            if (!nvs_option_count(value, 1, &frames))
                return usage_error("--frames needs a number of frames, 1 or more: '%s'", value);
            top.frames = (size_t)frames;
        } else if ((value = nvs_option_value("--interval", argc, argv, &i))) {
            char *end;
            errno = 0;
            double seconds = strtod(value, &end);
            if (!*value || *end || errno || !(seconds >= 0.05) || seconds > 3600)
                return usage_error("--interval needs seconds, 0.05 to 3600: '%s'", value);
            top.interval_s = seconds;
        } else if (strcmp(argument, "--once") == 0) {
            top.once = true;
        } else if (argument[0] == '-' && argument[1]) {
            return usage_error("unknown option %s", argument);
        } else if (!path) {
            path = argument;
        } else {
            return usage_error("one file at a time: '%s' is one too many", argument);
        }
    }
    if (!path)
        return usage_error("%swhich file? nvtxshim top FILE (the trace a program is writing)", "");
    return nvs_top_watch(path, 0, &top, NULL);
}
