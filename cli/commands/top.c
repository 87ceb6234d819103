/* nvtxshim top: a live view of a recording in progress. The trace file the
 * library is writing (either form) is read again whenever it has grown, as
 * report reads it (what the recorder has flushed: whole events, at every frame
 * end), and the loop's frames so far are summarised: p50, p99 and max, the
 * last N frames' breakdown by column, the slowest frame and the calls that
 * made it. Reading a file changes nothing in the program; the view ends with
 * the program (the process the trace names, or the child of run --top). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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

#include "commands/commands.h"
#include "model/events.h"
#include "model/figures.h"
#include "readers/input.h"
#include "readers/load.h"
#include "commands/options.h"
#include "readers/source.h"
#include "readers/trace_pftrace.h"
#include "readers/trace_reader.h"
#include "commands/top.h"

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
    "    Follows FILE, the trace a program is writing (NVTXSHIM_TRACE's file,\n"
    "    JSON or .pftrace), and shows the loop's frames so far (the process with\n"
    "    the most \"frame N\" ranges):\n"
    "\n"
    "    - how many, and their p50, p99 and max (and how many were over the\n"
    "      budget, where the library marks a budget);\n"
    "    - the last N frames' mean time per column (total, usb, cuda, gpu wait,\n"
    "      launch, x11, camera, serial, hid, rest: the columns of nvtxshim\n"
    "      report, those the data has);\n"
    "    - the slowest frame so far, its columns and the longest calls in it\n"
    "      that count toward its time, as report counts them (not libusb's\n"
    "      event-thread waits or transfers in flight).\n"
    "\n"
    "    FILE is read once, from its start: each look reads only what the\n"
    "    recorder appended since the last (whole events; a packet or event still\n"
    "    being written is read once it is whole), so a view comes every\n"
    "    interval however long the trace, and top's memory follows the frames,\n"
    "    not the events. A file cut or replaced is read again from its start.\n"
    "    The program runs as it does while it records: top takes nothing from\n"
    "    it but a share of the CPU. On a terminal each view replaces the last;\n"
    "    otherwise the views follow one another, separated by a blank line. It\n"
    "    ends when the process the trace names has ended (with one last view of\n"
    "    the whole file), or at Ctrl-C.\n"
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
    struct timespec wait = { (time_t)seconds, (long)((seconds - floor(seconds)) * 1e9) };
    while (!interrupted && nanosleep(&wait, &wait) != 0 && errno == EINTR)
        continue;
}

static void print_columns(FILE *out, const struct nvs_live_loop *loop, const double *values)
{
    for (int c = 0; c <= NVS_LAST_PART; c++)
        if (c == NVS_COLUMN_TOTAL || loop->shown[c])
            fprintf(out, "%s%s %.3f", c ? " | " : "", nvs_report_column_names[c],
                    values[c] / NS_PER_MS);
    fputc('\n', out);
}

/* One view of LOOP (FOUND: there are frames) of PATH, READ bytes of it read. */
static void print_view(FILE *out, const char *path, const struct nvs_live_loop *loop, bool found,
                       double interval, uint64_t read)
{
    fprintf(out, "nvtxshim top: %s, %.1f MB read; every %.1f s\n", path, (double)read / 1e6,
            interval);
    if (!found) {
        fputs(
            "no frames yet (the recorder writes each at its end; NVTXSHIM_FRAME says what a frame "
            "is)\n",
            out);
        return;
    }
    fprintf(out, "process %" PRIu32 "%s%s%s: %zu frames so far: p50 %.3f, p99 %.3f, max %.3f ms",
            loop->pid, loop->name ? " (" : "", loop->name ? loop->name : "", loop->name ? ")" : "",
            loop->count, loop->p50 / NS_PER_MS, loop->p99 / NS_PER_MS, loop->max / NS_PER_MS);
    if (loop->budget_ns)
        fprintf(out, "; %zu over the %.3f ms budget", loop->over_budget,
                (double)loop->budget_ns / NS_PER_MS);
    fputc('\n', out);
    fprintf(out, "last %zu frames (%" PRIu64 "-%" PRIu64 "), mean ms: ", loop->last_count,
            loop->first_number, loop->last_number);
    print_columns(out, loop, loop->last_mean);
    double values[NVS_COLUMNS];
    for (int c = 0; c < NVS_COLUMNS; c++)
        values[c] = (double)loop->slowest.value[c];
    fprintf(out, "slowest so far: frame %" PRIu64 ", ms: ", loop->slowest.number);
    print_columns(out, loop, values);
    fputs("  the longest calls in it:", out);
    for (size_t i = 0; i < loop->call_count; i++)
        fprintf(out, "%s %s %.3f ms", i ? "," : "", loop->calls[i].name,
                (double)loop->calls[i].duration / NS_PER_MS);
    fputs(loop->call_count ? "\n" : " none\n", out);
    if (loop->estimated)
        fputs("  (the breakdown is an estimate: some calls reached the file after their frame was "
              "closed)\n",
              out);
}

/* Whether process PID is gone (0: not known yet). */
static bool gone(uint32_t pid)
{
    return pid && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* A trace followed as it grows: read once from its start, each look reading
 * only what was appended since the last, into a figures builder that lives as
 * long as the file does. The reader pulls the bytes (follow_read); where it
 * has read all there is, the view is shown and the next look waits an
 * interval. */
struct follow {
    const char *path;
    const struct nvs_top_options *top;
    pid_t child;
    int *child_status;
    bool terminal;
    int fd;
    dev_t device;
    ino_t inode;
    uint64_t offset;       /* read so far */
    uint64_t shown_events; /* events the last view was made of (UINT64_MAX: none yet) */
    double last_view;
    double looked_at; /* when the last wait for more ended */
    uint32_t watched; /* the loop's process, once known */
    bool ended;       /* the program has ended (the last look follows) */
    bool replaced;    /* the file was cut or replaced: read it again from its start */
    bool found;       /* the last view had frames */
    struct nvs_events *events;
    struct nvs_figures_builder *builder;
};

static void note_end(struct follow *follow)
{
    if (follow->ended)
        return;
    if (follow->child > 0) {
        int status;
        if (waitpid(follow->child, &status, WNOHANG) == follow->child) {
            follow->ended = true;
            if (follow->child_status)
                *follow->child_status = status;
        }
    } else if (!follow->child) {
        follow->ended = gone(follow->watched);
    }
}

/* A view of what has been read, where there is more than the last one showed. */
static int view(struct follow *follow)
{
    if (nvs_events_flush(follow->events) != 0)
        return -1;
    uint64_t events = nvs_figures_events(follow->builder);
    if (follow->shown_events == events)
        return 0;
    struct nvs_live_loop loop;
    int found = nvs_figures_live(follow->builder, follow->top->frames, &loop);
    if (found < 0)
        return -1;
    if (found)
        follow->watched = loop.pid;
    if (follow->terminal)
        fputs("\033[H\033[J", stdout);
    else if (follow->shown_events != UINT64_MAX)
        fputc('\n', stdout);
    print_view(stdout, follow->path, &loop, found > 0, follow->top->interval_s, follow->offset);
    fflush(stdout);
    follow->shown_events = events;
    follow->last_view = seconds_now();
    follow->found = found > 0;
    return 0;
}

/* Whether the file at the path is no longer the one being read, or is shorter than what was read. */
static bool replaced(const struct follow *follow)
{
    struct stat status;
    if (stat(follow->path, &status) != 0)
        return false; /* removed: what was read stays readable through the descriptor */
    return status.st_dev != follow->device || status.st_ino != follow->inode ||
        (uint64_t)status.st_size < follow->offset;
}

static long follow_read(void *context, char *into, size_t size, char *error, size_t error_size)
{
    struct follow *follow = context;
    for (;;) {
        if (interrupted)
            return 0;
        /* a long file being caught up with: a view every interval meanwhile, of what was read
         * (not just after a wait: the view at the end of what is there comes soon) */
        double now = seconds_now(),
               since = follow->last_view > follow->looked_at ? follow->last_view
                                                             : follow->looked_at;
        if (now - since >= follow->top->interval_s && view(follow) != 0) {
            snprintf(error, error_size, "out of memory");
            return -1;
        }
        ssize_t got = pread(follow->fd, into, size, (off_t)follow->offset);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            snprintf(error, error_size, "%s", strerror(errno));
            return -1;
        }
        if (got > 0) {
            follow->offset += (uint64_t)got;
            return (long)got;
        }
        /* all there is, read */
        if (view(follow) != 0) {
            snprintf(error, error_size, "out of memory");
            return -1;
        }
        if (follow->top->once || follow->ended)
            return 0;
        pause_for(follow->top->interval_s);
        follow->looked_at = seconds_now();
        note_end(follow); /* then one more look: the recorder finished the file as it ended */
        if (replaced(follow)) {
            follow->replaced = true;
            return 0;
        }
    }
}

static int take(void *builder, const struct nvs_event *batch, size_t count)
{
    return nvs_figures_add(builder, batch, count);
}

/* PATH followed from its start (opened: FD) until the program ends, or once. 0, 1 where the trace
 * could not be read (said), or 2 where it was replaced (to be read again). */
static int follow_file(struct follow *follow)
{
    struct nvs_events events = { 0 };
    struct nvs_load_options options = { .command = "top", .what = NVS_LOAD_NVTX, .live = true };
    struct nvs_source source = { follow_read, follow, (size_t)64 << 20 };
    follow->events = &events;
    follow->builder = nvs_figures_begin(&events, 0);
    follow->offset = 0;
    follow->replaced = false;
    int outcome = 1;
    if (!follow->builder) {
        fprintf(stderr, "nvtxshim: top: out of memory\n");
    } else {
        /* the form from the first byte there (the recorder writes its header at once) */
        unsigned char first = 0;
        ssize_t got = pread(follow->fd, &first, 1, 0);
        struct nvs_event_sink sink = { take, follow->builder };
        events.sink = &sink;
        int status = got == 1 && first == 0x0a
            ? nvs_pftrace_read(&events, &source, follow->path, &options)
            : nvs_trace_read(&events, &source, follow->path, &options);
        if (follow->replaced)
            outcome = 2;
        else if (status == 0 && view(follow) == 0)
            outcome = follow->top->once && !follow->found ? 1 : 0;
    }
    nvs_figures_discard(follow->builder);
    nvs_events_free(&events);
    follow->builder = NULL;
    follow->events = NULL;
    return outcome;
}

int nvs_top_watch(const char *path, pid_t child, const struct nvs_top_options *top,
                  int *child_status)
{
    struct sigaction action = { .sa_handler = on_interrupt }, old_int, old_term;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &old_int);
    sigaction(SIGTERM, &action, &old_term);
    struct follow follow = { .path = path,
                             .top = top,
                             .child = child,
                             .child_status = child_status,
                             .terminal = isatty(STDOUT_FILENO),
                             .fd = -1,
                             .shown_events = UINT64_MAX };
    bool said_waiting = false;
    int outcome = 0;
    while (!interrupted) {
        note_end(&follow);
        struct stat status;
        /* not blocking: a FIFO opened for reading waits for a writer */
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd >= 0 && fstat(fd, &status) == 0 && !S_ISREG(status.st_mode)) {
            /* a pipe would be read empty, and what it holds taken from its reader */
            fprintf(stderr,
                    "nvtxshim: top: %s is not a regular file: top follows a trace file as it "
                    "grows\n",
                    path);
            close(fd);
            outcome = 1;
            break;
        }
        if (fd < 0 || status.st_size == 0) {
            int error = errno;
            if (fd >= 0)
                close(fd);
            if (top->once) {
                fprintf(stderr, "nvtxshim: top: cannot read %s: %s\n", path,
                        fd < 0 ? strerror(error) : "empty file");
                outcome = 1;
                break;
            }
            if (!said_waiting) {
                fprintf(stderr, "nvtxshim: top: waiting for %s to be written\n", path);
                said_waiting = true;
            }
            if (follow.ended)
                break;
            pause_for(top->interval_s);
            continue;
        }
        follow.fd = fd;
        follow.device = status.st_dev;
        follow.inode = status.st_ino;
        follow.shown_events = UINT64_MAX;
        follow.last_view = seconds_now();
        int followed = follow_file(&follow);
        close(fd);
        follow.fd = -1;
        if (followed != 2) {
            outcome = followed;
            break;
        }
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    return outcome;
}

static int usage_error(const char *format, const char *what)
{
    return nvs_option_usage_error("top", format, what);
}

/* What top's command line says. */
struct top_line {
    struct nvs_top_options top;
    const char *path;
};

enum { TOP_FRAMES, TOP_INTERVAL, TOP_ONCE };

static const struct nvs_option top_options[] = {
    { "frames", 0, NVS_OPTION_VALUE, TOP_FRAMES },
    { "interval", 0, NVS_OPTION_VALUE, TOP_INTERVAL },
    { "once", 0, NVS_OPTION_FLAG, TOP_ONCE },
    { "help", 'h', NVS_OPTION_FLAG, NVS_OPTION_HELP },
    { NULL, 0, 0, 0 },
};

static void top_manual(void *context)
{
    (void)context;
    fputs(manual, stdout);
}

static int top_option(void *context, int id, const char *value)
{
    struct top_line *line = context;
    value = value ? value : "";
    if (id == TOP_FRAMES) {
        long frames;
        if (!nvs_option_count(value, 1, &frames))
            return usage_error("--frames needs a number of frames, 1 or more: '%s'", value);
        line->top.frames = (size_t)frames;
    } else if (id == TOP_INTERVAL) {
        char *end;
        errno = 0;
        double seconds = strtod(value, &end);
        if (!*value || *end || errno || !(seconds >= 0.05) || seconds > 3600)
            return usage_error("--interval needs seconds, 0.05 to 3600: '%s'", value);
        line->top.interval_s = seconds;
    } else {
        line->top.once = true;
    }
    return -1;
}

static int top_operand(void *context, const char *operand, bool after_dashes)
{
    struct top_line *line = context;
    (void)after_dashes;
    if (line->path)
        return usage_error("one file at a time: '%s' is one too many", operand);
    line->path = operand;
    return -1;
}

static const struct nvs_command_line top_command_line = {
    .command = "top",
    .options = top_options,
    .dashes = NVS_DASHES_UNKNOWN,
    .manual = top_manual,
    .option = top_option,
    .operand = top_operand,
};

int nvs_cli_top(int argc, char **argv)
{
    struct top_line line = { .top = { .frames = NVS_TOP_FRAMES, .interval_s = 1.0 } };
    int status = nvs_options_read(&top_command_line, argc, argv, &line, NULL);
    if (status >= 0)
        return status;
    if (!line.path)
        return usage_error("%swhich file? nvtxshim top FILE (the trace a program is writing)", "");
    return nvs_top_watch(line.path, 0, &line.top, NULL);
}
