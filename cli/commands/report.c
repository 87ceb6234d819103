/* nvtxshim report: what a profile of a control loop says, first (the summary
 * make demo prints): per range name count, mean,
 * p50, p99 and max; the marks by kind with their first texts; per frame the
 * time in USB, CUDA copies, waits for the GPU, kernel launches (where they
 * take time), X11, the camera (V4L2), serial ports, HID nodes and the rest,
 * with the kernel probe's figures when it ran and the capture-to-actuation
 * latency when a camera's frames were traced; the slowest frames; the
 * latency's summary; the capture windows. Everything is worked out once into
 * a struct nvs_report (figures_builder.c), which the summary here, the JSON document
 * (report_json.c) and the HTML page (report_html.c) print. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands/commands.h"
#include "model/events.h"
#include "readers/figures_load.h"
#include "readers/load.h"
#include "model/figures.h"
#include "readers/input.h"
#include "commands/options.h"
#include "model/report_columns.h"
#include "writers/report_html.h"
#include "writers/report_json.h"

#define NS_PER_US 1000.0
#define NS_PER_MS 1e6
#define DEFAULT_SLOWEST 5
/* Said in each heading over a p50 and p99, which are the nearest rank's. */
#define NEAREST_RANK "p50 and p99 by nearest rank"

/* Frames dropped listed by loop frame, at most. */
#define DROP_EXAMPLES 10

static const char manual[] =
    "NAME\n"
    "    nvtxshim report - what a profile of a control loop says, first\n"
    "\n"
    "SYNOPSIS\n"
    "    nvtxshim report FILE [--slowest N] [--budget DURATION] [--html OUT.html]\n"
    "                         [--json[=OUT]] [--max-input SIZE]\n"
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
    "      probe's marks are one kind, \"frame N: off-CPU figures\"); a word of\n"
    "      three or more small letters after a number (ending at a space,\n"
    "      punctuation or the text's end) is written as its plural,\n"
    "      so \"dropped 1 frame\" and \"dropped 3 frames\" are one kind,\n"
    "      \"dropped N frame(s)\". Each kind\n"
    "      with its count, the most frequent first, then its first 3 texts in\n"
    "      time order, each with its count, and how many other texts it has; a\n"
    "      kind whose one text has no number is its own example;\n"
    "    - per frame (the \"frame N\" ranges of domain nvtxshim, counted with\n"
    "      NVTXSHIM_FRAME): the time in USB calls (usb), CUDA copies (cuda),\n"
    "      waits for the GPU (gpu wait: cuStreamSynchronize, cuCtxSynchronize,\n"
    "      cuEventSynchronize, cudaDeviceSynchronize, cudaStreamSynchronize,\n"
    "      cudaEventSynchronize), X11 calls (x11) and the rest, in\n"
    "      milliseconds, as mean, p50, p99 and max over the frames, then the\n"
    "      slowest frames. Kernel launches (cuLaunchKernel, cuLaunchKernelEx,\n"
    "      cudaLaunchKernel) and graph launches (cuGraphLaunch, cudaGraphLaunch)\n"
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
    "      The device files' domains get a column each when the process has\n"
    "      events in them:\n"
    "      camera (v4l2: DQBUF, QBUF, poll and the rest; not the \"frame age\"\n"
    "      ranges, which run from the capture, before the loop asked for the\n"
    "      frame), serial and hid.\n"
    "      A column of these parts (usb to rest) that is 0 in every frame is left\n"
    "      out, as the page leaves it out: a domain whose calls were all outside\n"
    "      the frames (an X11 connection made at start), or that the loop never\n"
    "      called, adds no column of zeros.\n"
    "      When the kernel probe ran (NVTXSHIM_KERNEL=on), two more columns give\n"
    "      each frame's time off the CPU: runnable (waiting for a CPU) and\n"
    "      blocked (asleep), with preemptions and page faults for the slowest.\n"
    "      When a camera's frames were traced, latency is the capture-to-\n"
    "      actuation latency of the frame's first actuation that acted on a new\n"
    "      camera frame (\"-\" where none did; its statistics are over the frames\n"
    "      that have one), and the camera's dropped frames (its \"dropped N\n"
    "      frames\" marks) are counted per frame.\n"
    "      Frames are a process's: a frame counts only the calls of the process\n"
    "      that counted it, though another's ran at the same time. When more\n"
    "      than one process counted frames, each gets this section, with its\n"
    "      own columns and slowest frames, by pid, headed with the pid and the\n"
    "      process's name where the file has one (a trace file's process_name;\n"
    "      an nsys export, read for its NVTX events alone, names none).\n"
    "      With a budget (--budget, else the one in the process's own \"over\n"
    "      budget frame N: T ms > B ms\" marks, which the library writes for\n"
    "      NVTXSHIM_FRAME_BUDGET), how many frames took longer than it;\n"
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
    "    FILE is one of the following, or - for standard input; a pipe or\n"
    "    standard input is read as a file is. What it holds is found from its\n"
    "    first bytes, never from its name (a name only helps a .pftrace that\n"
    "    is not readable at all to be told what is wrong with it):\n"
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
    "    TRACE.pftrace     the compact binary form NVTXSHIM_TRACE writes to a\n"
    "                      name ending .pftrace: Perfetto's protobuf trace\n"
    "                      (docs/pftrace.md), read to the same events as the JSON\n"
    "                      form of the same run. Found by its first bytes too\n"
    "                      (any name). A file cut short is read up to its last\n"
    "                      whole packet, silently: the binary form has no\n"
    "                      closing to miss. Ranges never ended and ends without\n"
    "                      a begin are left out and counted on stderr.\n"
    "                      Either form may be gzipped (TRACE.json.gz,\n"
    "                      TRACE.pftrace.gz, or any name: gzip is known by its\n"
    "                      first bytes). What does not begin as a trace once\n"
    "                      decompressed is refused at its first bytes.\n"
    "\n"
    "    Everything else it says goes to stderr, each line starting with\n"
    "    \"nvtxshim: report: \".\n"
    "\n"
    "OPTIONS\n"
    "    --slowest N\n"
    "        List the N slowest frames (default 5; 0 lists none).\n"
    "\n"
    "    --budget DURATION\n"
    "        The frame budget (33ms, 500us, 16.7ms, 2s, as NVTXSHIM_FRAME_BUDGET\n"
    "        takes it) for every process, instead of the one in its marks.\n"
    "\n"
    "    --html OUT.html\n"
    "        Also write the same figures as one HTML page that needs nothing\n"
    "        else (inline SVG and CSS; no script, font or stylesheet to fetch).\n"
    "        The summary on stdout is the same. Per process: frame time per\n"
    "        frame as stacked bars, a segment per column (usb #2e7d32, cuda\n"
    "        #f57c00, gpu wait #9e9d24, launch #00acc1, x11 #1565c0, camera\n"
    "        #8e24aa, serial #00695c, hid #ad1457, rest #bdbdbd), the budget\n"
    "        as a red line (#d50000) and the frames over it on a pale red band\n"
    "        (#ffcdd2); beyond 460 frames a bar per bin of consecutive frames:\n"
    "        its median frame's parts, its p99 and slowest frame as ticks, the\n"
    "        share over the budget as a strip under it. Then a histogram of\n"
    "        frame time (to a little past the p99.5 frame; the rest counted), the\n"
    "        statistics, the slowest frames, the kernel probe's time off the\n"
    "        CPU and the latency per frame where the data has them; the\n"
    "        latency's summary, the per-name table, the marks by kind and the\n"
    "        capture windows.\n"
    "        Written beside OUT.html and renamed into place: a page that cannot\n"
    "        be written leaves no file, and one line says why. An OUT.html that\n"
    "        is there and is not a regular file (a device node, a FIFO, a socket,\n"
    "        a directory, a symbolic link) is left as it is: one line, exit 1.\n"
    "\n"
    "    --json[=OUT]\n"
    "        Print the same figures as one JSON document instead of the summary\n"
    "        (--json or --json=-: on stdout, which then holds the document alone),\n"
    "        or write it to OUT (--json=OUT; the summary is printed as ever). Its\n"
    "        schema is \"nvtxshim-report/1\", named in its \"schema\" field and\n"
    "        described in docs/json.md and docs/schema/report-v1.json: every\n"
    "        figure of the summary, times as whole nanoseconds, the keys in a fixed\n"
    "        order. OUT only as --json=OUT: a word after --json is FILE. OUT is\n"
    "        written as the page is (beside it, then renamed; never over something\n"
    "        that is not a regular file).\n"
    "\n"
    "    --max-input SIZE\n"
    "        The most bytes FILE may give once read from a pipe or decompressed\n"
    "        (bytes, or with k, M, G or T: 512M, 8G; default: no limit). A plain\n"
    "        file is not counted. Past it, one line says so. FILE is read as a\n"
    "        stream whatever its length: memory follows its frames and range\n"
    "        names, not its events.\n"
    "\n"
    "    --help, -h\n"
    "        Print this page and exit.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   the summary (or the JSON document) was printed.\n"
    "    1   FILE could not be read (one line on stderr says why), nsys export\n"
    "        failed, FILE holds no NVTX ranges or marks, or the page or the JSON\n"
    "        document could not be written.\n"
    "    2   a usage error.\n"
    "\n"
    "EXAMPLES\n"
    "    nvtxshim report build/demo/report.nsys-rep\n"
    "    nvtxshim report report.sqlite --slowest 10 --budget 16.7ms\n"
    "    NVTXSHIM_TRACE=rig.json NVTXSHIM_FRAME=usb.in:0x81 nvtxshim run -- ./loop\n"
    "    nvtxshim report rig.json --html rig.html\n"
    "    nvtxshim report rig.pftrace --json | jq '.processes[].columns.total.p99'\n"
    "    nvtxshim run --frame usb.in:0x81 --trace rig.pftrace -- ./loop && nvtxshim report rig.pftrace\n";

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

static void print_names(const struct nvs_report *report)
{
    puts("== NVTX ranges per name (microseconds; " NEAREST_RANK ")");
    printf("  %-9s %-34s %7s %10s %10s %10s %10s\n", "domain", "name", "count", "mean", "p50",
           "p99", "max");
    size_t estimated = 0;
    for (size_t i = 0; i < report->name_count; i++) {
        const struct nvs_report_name *row = &report->names[i];
        fputs("  ", stdout);
        put_padded(row->domain, 9, 0);
        putchar(' ');
        put_padded(row->name, 34, 34);
        printf(" %7zu", row->count);
        for (int s = 0; s < NVS_STATS; s++) {
            /* an estimate is marked: "~12.3" in the column's width */
            bool estimate = row->estimated && (s == NVS_STAT_P50 || s == NVS_STAT_P99);
            printf(estimate ? " ~%9.1f" : " %10.1f", row->stats[s] / NS_PER_US);
            estimated += estimate && s == NVS_STAT_P50;
        }
        putchar('\n');
    }
    if (estimated)
        printf(
            "  (~: p50 and p99 of %zu name%s with more ranges than are kept exactly, estimated within "
            "%.1f %%; count, mean and max are exact)\n",
            estimated, estimated == 1 ? "" : "s", 100.0 * NVS_SKETCH_ERROR);
}

static void print_marks(const struct nvs_report *report)
{
    if (!report->mark_kind_count)
        return;
    puts("\n== NVTX marks per kind (each number as N), with the first texts of each");
    printf("  %-9s %7s  %s\n", "domain", "count", "kind");
    for (size_t k = 0; k < report->mark_kind_count; k++) {
        const struct nvs_report_mark_kind *kind = &report->marks[k];
        fputs("  ", stdout);
        put_padded(kind->domain, 9, 0);
        printf(" %7zu  %s\n", kind->count, kind->kind);
        for (size_t t = 0; t < kind->example_count; t++) {
            printf("  %-9s %7s    ", "", "");
            put_repr(kind->examples[t].text);
            printf(" x%zu\n", kind->examples[t].count);
        }
        if (kind->text_count > NVS_MARK_EXAMPLES)
            printf("  %-9s %7s    ... and %zu%s other text%s\n", "", "",
                   kind->text_count - NVS_MARK_EXAMPLES, kind->more_texts ? " or more" : "",
                   kind->text_count - NVS_MARK_EXAMPLES == 1 ? "" : "s");
    }
}

/* What the heading says each part column is, in the columns' order (columns.def). */
static const char *const part_meanings[NVS_COLUMNS] = {
#define NVS_COLUMN(ID, HEADING, KEY, PHRASE, CLASS, COLOUR, LEGEND, DOMAIN, RULE)                  \
    [NVS_COLUMN_##ID] = PHRASE,
#include "model/columns.def"
#undef NVS_COLUMN
};

/* ": time in USB, GPU waits and the rest", the parts SHOWN, as a sentence lists them. */
static void print_parts_heading(const bool shown[NVS_COLUMNS])
{
    int count = 0, listed = 0;
    for (int c = NVS_FIRST_PART; c <= NVS_LAST_PART; c++)
        count += shown[c];
    if (!count)
        return;
    fputs(": time in ", stdout);
    for (int c = NVS_FIRST_PART; c <= NVS_LAST_PART; c++) {
        if (!shown[c])
            continue;
        listed++;
        fputs(listed == 1 ? "" : listed == count ? " and " : ", ", stdout);
        fputs(part_meanings[c], stdout);
    }
}

static void print_process(const struct nvs_report *report, const struct nvs_report_process *process)
{
    /* the page's columns: a part no frame spent time in is left out */
    bool shown[NVS_COLUMNS];
    nvs_report_columns_shown(process, shown);
    const struct nvs_report_frame *rows = process->frames;
    size_t n = process->count;
    fputs("\n== Per frame", stdout);
    if (report->process_count > 1) {
        /* frames are counted per process: say whose these are */
        printf(" of process %" PRIu32, process->pid);
        if (process->name) {
            putchar(' ');
            put_repr(process->name);
        }
    }
    fputs(" (milliseconds; " NEAREST_RANK ")", stdout);
    print_parts_heading(shown);
    printf("%s%s\n", process->with_kernel ? "; off CPU (kernel probe): runnable, blocked" : "",
           shown[NVS_COLUMN_LATENCY] ? "; latency: capture to actuation" : "");
    printf("  %-14s", "");
    for (int c = 0; c < NVS_COLUMNS; c++)
        if (shown[c])
            printf(" %9s", nvs_report_column_names[c]);
    putchar('\n');
    static const char *const labels[NVS_STATS] = { "mean", "p50", "p99", "max" };
    for (int s = 0; s < NVS_STATS; s++) {
        char label[32];
        if (s == NVS_STAT_MEAN)
            snprintf(label, sizeof label, "mean of %zu", n);
        else
            snprintf(label, sizeof label, "%s", labels[s]);
        printf("  %-14s", label);
        for (int c = 0; c < NVS_COLUMNS; c++)
            if (shown[c])
                printf(" %9.3f", process->stats[c][s] / NS_PER_MS);
        putchar('\n');
    }
    if (process->estimated)
        printf(
            "  (the breakdown into columns is an estimate: %zu call%s reached the trace after their "
            "frame was closed, or frames came out of order)\n",
            process->late_calls, process->late_calls == 1 ? "" : "s");
    if (process->with_kernel && process->with_kernel < n)
        printf("  (kernel figures for %zu of the %zu frames; the others count as 0)\n",
               process->with_kernel, n);
    if (shown[NVS_COLUMN_LATENCY] && process->with_latency < n)
        printf("  (latency for %zu of the %zu frames: the others acted on no new camera frame)\n",
               process->with_latency, n);
    if (process->dropped) {
        printf("  camera frames dropped: %" PRIu64 " (", process->dropped);
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
        if (process->dropped_outside)
            printf("%s%" PRIu64 " outside the frames", listed ? ", " : "",
                   process->dropped_outside);
        puts(")");
    }
    if (process->budget_from != NVS_BUDGET_NONE)
        printf("  over the budget of %.3f ms (from %s): %zu of the %zu frames\n",
               (double)process->budget_ns / NS_PER_MS,
               process->budget_from == NVS_BUDGET_OPTION ? "--budget"
                                                         : "the library's over budget marks",
               process->over_budget, n);
    puts("  slowest frames:");
    for (size_t k = 0; k < n && (long)k < report->slowest; k++) {
        const struct nvs_report_frame *row = &rows[process->slowest[k]];
        char label[40];
        snprintf(label, sizeof label, "frame %" PRIu64, row->number);
        printf("  %-14s", label);
        for (int c = 0; c < NVS_COLUMNS; c++) {
            if (!shown[c])
                continue;
            if (c == NVS_COLUMN_LATENCY && !row->has_latency)
                printf(" %9s", "-");
            else
                printf(" %9.3f", (double)row->value[c] / NS_PER_MS);
        }
        if (row->has_kernel)
            printf("  (%" PRIu64 " preemption%s, %" PRIu64 " fault%s)", row->preemptions,
                   row->preemptions == 1 ? "" : "s", row->faults, row->faults == 1 ? "" : "s");
        if (row->dropped)
            printf("  (%" PRIu64 " camera frame%s dropped)", row->dropped,
                   row->dropped == 1 ? "" : "s");
        putchar('\n');
    }
}

static void print_frames(const struct nvs_report *report)
{
    if (!report->process_count)
        puts("\n== No frame ranges: set NVTXSHIM_FRAME to count the loop's frames");
    for (size_t p = 0; p < report->process_count; p++)
        print_process(report, &report->processes[p]);
}

/* When a camera's frames were traced. */
static void print_latency(const struct nvs_report *report)
{
    const struct nvs_report_latency *latency = &report->latency;
    if (!latency->camera_frames)
        return;
    puts("\n== Capture to actuation (milliseconds; " NEAREST_RANK
         "): from a camera frame's capture to "
         "the end of the first actuation after its dequeue");
    if (!latency->pairs) {
        printf(
            "  no actuation after any of the %zu camera frames (USB transfers out, serial or HID "
            "writes: %zu)\n",
            latency->camera_frames, latency->actuations);
        return;
    }
    printf("  %-14s %9s %9s %9s %9s\n", "", "mean", "p50", "p99", "max");
    char label[40];
    snprintf(label, sizeof label, "%zu pair%s", latency->pairs, latency->pairs == 1 ? "" : "s");
    printf("  %-14s", label);
    for (int s = 0; s < NVS_STATS; s++)
        printf(" %9.3f", latency->stats[s] / NS_PER_MS);
    putchar('\n');
    printf(
        "  (%zu camera frame%s dequeued, %zu not acted on; %zu actuation%s, %zu on no new frame)\n",
        latency->camera_frames, latency->camera_frames == 1 ? "" : "s",
        latency->camera_frames - latency->pairs, latency->actuations,
        latency->actuations == 1 ? "" : "s", latency->actuations - latency->pairs);
}

static void print_captures(const struct nvs_report *report)
{
    if (!report->window_count)
        return;
    printf("\n== Capture windows: %zu\n", report->window_count);
    for (size_t c = 0; c < report->window_count; c++) {
        const struct nvs_report_window *window = &report->windows[c];
        char label[512], span[64];
        snprintf(label, sizeof label, "%s@%s", window->name, window->domain);
        if (window->first)
            snprintf(span, sizeof span, "frames %" PRIu64 "-%" PRIu64, window->first, window->last);
        else
            snprintf(span, sizeof span, "no frames");
        fputs("  ", stdout);
        put_padded(label, 24, 0);
        printf(" %10.3f ms  %s\n", (double)window->duration / NS_PER_MS, span);
    }
}

/* ---- the command ------------------------------------------------------------------ */

static int usage_error(const char *format, const char *what)
{
    return nvs_option_usage_error("report", format, what);
}

/* Whether the files at A and B are one: the same name, or the same file by two. */
static bool same_file(const char *a, const char *b)
{
    struct stat first, second;
    return strcmp(a, b) == 0 ||
        (stat(a, &first) == 0 && stat(b, &second) == 0 && first.st_dev == second.st_dev &&
         first.st_ino == second.st_ino);
}

/* What report's command line says. */
struct report_line {
    const char *path, *html, *json;
    bool json_bare; /* --json without =OUT: a file after it is not its */
    long slowest;
    int64_t budget_ns;
    uint64_t max_input;
};

enum { REPORT_SLOWEST, REPORT_HTML, REPORT_JSON, REPORT_MAX_INPUT, REPORT_BUDGET };

static const struct nvs_option report_options[] = {
    { "slowest", 0, NVS_OPTION_VALUE, REPORT_SLOWEST },
    { "html", 0, NVS_OPTION_VALUE, REPORT_HTML },
    /* its value only as --json=OUT, as getopt's optional arguments: a word
     * after it is FILE */
    { "json", 0, NVS_OPTION_OPTIONAL, REPORT_JSON },
    { "max-input", 0, NVS_OPTION_VALUE, REPORT_MAX_INPUT },
    { "budget", 0, NVS_OPTION_VALUE, REPORT_BUDGET },
    { "help", 'h', NVS_OPTION_FLAG, NVS_OPTION_HELP },
    { NULL, 0, 0, 0 },
};

static void report_manual(void *context)
{
    (void)context;
    fputs(manual, stdout);
}

static int report_option(void *context, int id, const char *value)
{
    struct report_line *line = context;
    value = value ? value : (id == REPORT_JSON ? NULL : "");
    switch (id) {
    case REPORT_SLOWEST:
        if (!nvs_option_count(value, 0, &line->slowest))
            return usage_error("--slowest needs a number of frames, 0 or more: '%s'", value);
        break;
    case REPORT_HTML:
        if (!*value)
            return usage_error("%s--html needs the page's file name", "");
        line->html = value;
        break;
    case REPORT_JSON:
        line->json = value ? value : "-";
        line->json_bare = !value;
        if (value && !*value)
            return usage_error(
                "%s--json=OUT needs the document's file name (or - for standard output)", "");
        break;
    case REPORT_MAX_INPUT:
        if (!nvs_input_parse_size(value, &line->max_input))
            return usage_error(NVS_OPTION_MAX_INPUT_USAGE, value);
        break;
    case REPORT_BUDGET:
        line->budget_ns = nvs_option_budget(value);
        if (!line->budget_ns)
            return usage_error(NVS_OPTION_BUDGET_USAGE, value);
        break;
    }
    return -1;
}

static int report_operand(void *context, const char *operand, bool after_dashes)
{
    struct report_line *line = context;
    if (after_dashes && line->path)
        return usage_error("unknown option %s", "--");
    if (!line->path)
        line->path = operand;
    else if (line->json_bare)
        return usage_error("one file at a time: '%s' is one too many (the document's file is given "
                           "as --json=OUT)",
                           operand);
    else
        return usage_error("one file at a time: '%s' is one too many", operand);
    return -1;
}

static const struct nvs_command_line report_command_line = {
    .command = "report",
    .options = report_options,
    .dashes = NVS_DASHES_NEXT,
    .manual = report_manual,
    .option = report_option,
    .operand = report_operand,
};

int nvs_cli_report(int argc, char **argv)
{
    struct report_line line = { .slowest = DEFAULT_SLOWEST };
    int parsed = nvs_options_read(&report_command_line, argc, argv, &line, NULL);
    if (parsed >= 0)
        return parsed;
    const char *path = line.path, *html = line.html, *json = line.json;
    if (!path)
        return usage_error("%swhich file? nvtxshim report FILE [--slowest N] [--budget DURATION] "
                           "[--html OUT.html] [--json[=OUT]] [--max-input SIZE]",
                           "");
    struct stat file, page;
    if (html && stat(path, &file) == 0 && stat(html, &page) == 0 && file.st_dev == page.st_dev &&
        file.st_ino == page.st_ino)
        return usage_error("--html %s is FILE itself", html);
    bool json_to_stdout = json && strcmp(json, "-") == 0;
    if (json && !json_to_stdout && strcmp(path, "-") != 0 && same_file(path, json))
        return usage_error("--json=%s is FILE itself", json);
    if (json && !json_to_stdout && html && same_file(html, json))
        return usage_error("--json and --html name the same file: %s", json);

    if (html && nvs_html_refused("report", html) != 0)
        return 1;
    if (json && !json_to_stdout && nvs_json_refused("report", json) != 0)
        return 1;

    struct nvs_events events = { 0 };
    struct nvs_load_options options = { .command = "report",
                                        .what = NVS_LOAD_NVTX,
                                        .max_input = line.max_input };
    /* Everything is worked out once, as the file is read (figures_builder.c); the
     * summary, the document and the page print it. */
    struct nvs_report report = { .path = path, .slowest = line.slowest };
    if (nvs_figures_load(&events, path, &options, line.budget_ns, &report) != 0) {
        nvs_figures_free(&report);
        nvs_events_free(&events);
        return 1;
    }
    if (!report.nvtx_events) {
        fprintf(stderr, "nvtxshim: report: no NVTX events in %s\n", path);
        nvs_figures_free(&report);
        nvs_events_free(&events);
        return 1;
    }
    int status = 0;
    /* the document on stdout takes the summary's place: stdout is then one JSON value */
    if (status == 0 && !json_to_stdout) {
        print_names(&report);
        print_marks(&report);
        print_frames(&report);
        print_latency(&report);
        print_captures(&report);
        if (fflush(stdout) != 0) {
            fprintf(stderr, "nvtxshim: report: cannot write the summary: %s\n", strerror(errno));
            status = -1;
        }
    }
    /* after the summary, which is printed whatever becomes of the files; a file
     * that cannot be written does not keep the other from being written */
    int files = 0;
    if (status == 0 && json)
        files |= nvs_report_write_json(&report, json);
    if (status == 0 && html)
        files |= nvs_report_write_html(&report, html);
    status |= files;
    nvs_figures_free(&report);
    nvs_events_free(&events);
    return status ? 1 : 0;
}
