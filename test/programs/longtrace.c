/* longtrace: a long synthetic trace, as the library writes it for a rig's
 * control loop, in either form, and the figures nvtxshim report must print of it.
 *
 *     longtrace [OPTIONS] [-o OUT]          (OUT "-" or none: standard output)
 *
 * The readers' memory and speed are measured on traces of a gigabyte and a
 * million frames (test/test_long_trace.py, make bench-long): a real
 * run that long takes hours, so this program writes one in seconds, the same
 * events for a seed in either form, and computes what report must make of
 * them while it writes.
 *
 * What it writes is what NVTXSHIM_TRACE gives for a loop framed on a USB call
 * (docs/user-guide.md "The trace file", docs/pftrace.md): one process, its
 * loop thread and libusb's event thread. Each "frame N" is an async range of
 * domain nvtxshim from one marker call (libusb_control_transfer) to the next,
 * with an "over budget" mark after each frame longer than the budget. In a
 * frame the loop thread makes a few calls drawn from usb, cuda (copies, a
 * launch, a wait for the GPU), x11 and v4l2; a libusb_submit_transfer is an
 * async range ended on the event thread, inside one of its
 * libusb_handle_events_completed ranges, before the program's callback.
 *
 * As the library's writer, each thread appends whole events to a buffer of
 * its own, which goes to the file when it holds 32 KiB and, with --flush frame
 * (the library's way), at every frame's end; no event crosses a 4 KiB page of
 * the file (blanks, or the .pftrace form's padding fields, before it). So one
 * thread's events come well after another's in the file: an async range's end
 * can precede its begin, and with --flush buffer (frame flushes skipped, as the
 * writer skips one when another thread holds the file) a quiet thread lags by
 * many frames.
 *
 * --rate writes at a steady rate once the output has --steady-from bytes, and
 * --pid self names the writer's own process in the trace: nvtxshim top
 * watches it as it would a rig, and ends with it.
 *
 * --expect FILE writes, as JSON, the frame count, each column's and each
 * range name's count, sum, p50, p99 and max in nanoseconds (p50 and p99 by
 * nearest rank, as report has them; the value at each thousandth of the ranks
 * too, for estimates), the marks by kind, the frames over the
 * budget and the slowest frames with their columns: exactly what report
 * prints, from the same events. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../libnvtxshim/pftrace_proto.h"

#define US 1000ll
#define MS 1000000ll
#define FILE_PAGE 4096u
#define BUFFER_BYTES (32u * 1024u)     /* the library's NVS_WRITER_BYTES */
#define EVENT_MAX 1024u                /* more than any event this program writes */
#define BUFFER_ROOM (BUFFER_BYTES + 2u * EVENT_MAX)
#define BUFFER_EVENTS (BUFFER_ROOM / 8u)
#define STAGE_BYTES (1u << 20)
#define THREADS 2
#define MAX_CALLS 32
#define SLOWEST 10
#define LAUNCH_SHOWN_NS 500            /* report shows launch once one frame's take this long */

static void die(const char *format, const char *what)
{
    fprintf(stderr, "longtrace: ");
    fprintf(stderr, format, what);
    fputc('\n', stderr);
    exit(2);
}

/* ---- the random numbers: splitmix64, the same sequence on every machine --------- */

static uint64_t rng_state;

static uint64_t next_random(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A whole number of nanoseconds from LOW to HIGH. */
static int64_t uniform(int64_t low, int64_t high)
{
    return low + (int64_t)(next_random() % (uint64_t)(high - low + 1));
}

/* True with a chance of PER_MILLION in a million. */
static bool chance(uint64_t per_million)
{
    return next_random() % 1000000u < per_million;
}

/* ---- what the program records ---------------------------------------------------------- */

/* The column of report's per-frame table a call counts in; NONE: no frame's time. */
enum part { PART_USB, PART_CUDA, PART_WAIT, PART_LAUNCH, PART_X11, PART_CAMERA, PARTS, PART_NONE = PARTS };

struct kind {
    const char *domain, *name, *category;
    const char *table;                 /* its row in report's per-name table */
    enum part part;
    bool has_payload;
    uint64_t payload;
    int64_t shortest, longest;         /* its duration, ns */
};

enum kind_id {
    /* the calls a frame draws from, after its marker */
    K_BULK_OUT, K_INTERRUPT, K_SUBMIT, K_HTOD, K_LAUNCH, K_SYNC, K_DTOH, K_PUT_IMAGE, K_FLUSH, K_DQBUF,
    MENU,
    K_CONTROL = MENU, K_CALLBACK, K_EVENTS, K_OPEN, K_CLAIM, K_RELEASE, K_FRAME, K_OVER_BUDGET, KINDS
};

static const struct kind kinds[KINDS] = {
    [K_BULK_OUT] = {"usb", "libusb_bulk_transfer ep=0x02 OUT 8B", "transfer", "libusb_bulk_transfer",
                    PART_USB, true, 8, 200 * US, 700 * US},
    [K_INTERRUPT] = {"usb", "libusb_interrupt_transfer ep=0x83 IN 8B", "transfer",
                     "libusb_interrupt_transfer", PART_USB, true, 8, 300 * US, 700 * US},
    /* the duration is the submission's: from the call to the completion */
    [K_SUBMIT] = {"usb", "libusb_submit_transfer ep=0x81 BULK IN 9216B", "transfer",
                  "libusb_submit_transfer", PART_NONE, true, 9216, 100 * US, 1500 * US},
    [K_HTOD] = {"cuda", "cuMemcpyHtoD 9KiB pageable", "copy", "cuMemcpyHtoD", PART_CUDA, true, 9216,
                2 * US, 10 * US},
    [K_LAUNCH] = {"cuda", "cuLaunchKernel harness_convolve", "launch", "cuLaunchKernel harness_convolve",
                  PART_LAUNCH, false, 0, 5 * US, 60 * US},
    [K_SYNC] = {"cuda", "cuStreamSynchronize", "wait", "cuStreamSynchronize", PART_WAIT, false, 0,
                100 * US, 900 * US},
    [K_DTOH] = {"cuda", "cuMemcpyDtoHAsync 4B pinned", "copy", "cuMemcpyDtoHAsync", PART_CUDA, true, 4,
                30, 200},
    [K_PUT_IMAGE] = {"x11", "XShmPutImage 320x240", "draw", "XShmPutImage", PART_X11, true, 230400,
                     50 * US, 300 * US},
    [K_FLUSH] = {"x11", "XFlush", "flush", "XFlush", PART_X11, false, 0, 1 * US, 10 * US},
    [K_DQBUF] = {"v4l2", "VIDIOC_DQBUF /dev/video0 320x240 YUYV", "capture", "VIDIOC_DQBUF /dev/video0",
                 PART_CAMERA, true, 153600, 20 * US, 2000 * US},
    [K_CONTROL] = {"usb", "libusb_control_transfer type=0x40 req=0x01 val=0x0000 OUT 0B", "transfer",
                   "libusb_control_transfer", PART_USB, true, 0, 300 * US, 1200 * US},
    [K_CALLBACK] = {"usb", "libusb_transfer_cb_fn ep=0x81 BULK IN 9216B", "callback",
                    "libusb_transfer_cb_fn", PART_USB, true, 9216, 100, 40 * US},
    [K_EVENTS] = {"usb", "libusb_handle_events_completed", "events", "libusb_handle_events_completed",
                  PART_NONE, false, 0, 50 * US, 2000 * US},
    [K_OPEN] = {"usb", "libusb_open", "device", "libusb_open", PART_USB, false, 0, 300 * US, 700 * US},
    [K_CLAIM] = {"usb", "libusb_claim_interface 0", "device", "libusb_claim_interface", PART_USB, false, 0,
                 300 * US, 900 * US},
    [K_RELEASE] = {"usb", "libusb_release_interface 0", "device", "libusb_release_interface", PART_USB,
                   false, 0, 200 * US, 400 * US},
    [K_FRAME] = {"nvtxshim", "frame N", "frame", "frame N", PART_NONE, true, 0, 0, 0},
    [K_OVER_BUDGET] = {"nvtxshim", "over budget", "warning", NULL, PART_NONE, true, 0, 0, 0},
};

/* What a thread does, in the order its buffer gets it. A push/pop range is a
 * PUSH and a POP (JSON writes it whole at the POP, .pftrace its begin at the
 * POP or before whatever the thread writes first); START and END are an async
 * range's begin and end, on any threads. */
enum op { OP_PUSH, OP_POP, OP_START, OP_END, OP_MARK };

struct record {
    enum op op;
    int thread;
    enum kind_id kind;
    int64_t t;                         /* ns, CLOCK_MONOTONIC */
    int64_t start;                     /* POP: its push's time */
    uint64_t id;                       /* START, END: the range's id */
    uint64_t number;                   /* a frame's N, or the frame a mark is about */
    int64_t value;                     /* a mark: the frame's length */
};

/* ---- settings ---------------------------------------------------------------------------- */

enum form { FORM_JSON, FORM_PFTRACE };

static struct {
    enum form form;
    uint64_t frames;
    uint64_t size;                     /* 0, or stop at the first frame end past this many bytes */
    uint64_t seed;
    uint64_t calls_milli;              /* calls a frame makes besides its marker, x1000 */
    uint64_t events_milli;             /* idle libusb_handle_events ranges a frame, x1000 */
    int64_t frame_ns, budget_ns;
    uint32_t pid;
    bool flush_frames;
    double rate;                       /* bytes a second, 0: as fast as it goes */
    uint64_t steady_from;              /* bytes written before the rate applies */
    const char *out, *expect;
} settings = {FORM_JSON, 1000, 0, 1, 3000, 8000, 4 * MS, 0, 4242, true, 0, 0, "-", NULL};

/* ---- the output: a file or a pipe ------------------------------------------------------ */

static struct {
    int fd;
    char stage[STAGE_BYTES];
    size_t staged;
    uint64_t offset;                   /* bytes given to out_put, padding included */
    char held[2];                      /* JSON: the last event's ",\n", written with what follows */
    size_t held_count;
    bool seekable;
    bool steady;
    struct timespec steady_start;
} out;

static void out_drain(void)
{
    size_t done = 0;
    while (done < out.staged) {
        ssize_t n = write(out.fd, out.stage + done, out.staged - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            die("cannot write the trace: %s", strerror(errno));
        done += (size_t)n;
    }
    out.staged = 0;
}

/* Staged bytes go out before a piece that would not fit: each piece is an
 * event, padding or the header, so a file that a reader looks at while it
 * grows never ends inside an event (as the library's never does). */
static void out_stage(const char *bytes, size_t length)
{
    if (out.staged + length > STAGE_BYTES)
        out_drain();
    memcpy(out.stage + out.staged, bytes, length);
    out.staged += length;
}

/* BYTES at the end of the output. Into a pipe the last two bytes given are
 * held back: the JSON form's finish writes " \n" in place of its last event's
 * ",\n", as the library's does, and a pipe cannot be written twice (a file is
 * written there again). */
static void out_put(const char *bytes, size_t length)
{
    if (!length)
        return;
    out.offset += length;
    if (out.seekable) {
        out_stage(bytes, length);
        return;
    }
    if (out.held_count)
        out_stage(out.held, out.held_count);
    size_t keep = length < 2 ? length : 2;
    out_stage(bytes, length - keep);
    memcpy(out.held, bytes + length - keep, keep);
    out.held_count = keep;
}

/* With --rate: what is staged goes out now, and the writer waits until the
 * output has grown at no more than the rate since it reached --steady-from. */
static void out_pace(void)
{
    if (settings.rate <= 0 || out.offset < settings.steady_from)
        return;
    out_drain();
    if (!out.steady) {
        out.steady = true;
        clock_gettime(CLOCK_MONOTONIC, &out.steady_start);
        return;
    }
    double due = (double)(out.offset - settings.steady_from) / settings.rate;
    struct timespec until = out.steady_start;
    until.tv_sec += (time_t)due;
    until.tv_nsec += (long)((due - (double)(time_t)due) * 1e9);
    if (until.tv_nsec >= 1000000000l) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000l;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
        continue;
}

/* ---- the threads' buffers ----------------------------------------------------------- */

struct thread {
    uint32_t tid;
    const char *names[2];              /* the kernel's name, then the program's (or NULL) */
    bool started;
    char data[BUFFER_ROOM];
    uint32_t used, ends[BUFFER_EVENTS], events;
    /* .pftrace: the thread's sequence */
    uint32_t sequence;
    int64_t clock;                     /* clock 64's value */
    uint8_t *defined;                  /* iids defined on the sequence */
    struct record waiting[8];          /* pushes whose begin is not written yet */
    int waiting_count;
};

static struct thread threads[THREADS];
enum { LOOP, EVENTS };
static uint64_t trace_events;          /* events written, metadata and descriptors left out */

/* Padding of LENGTH bytes: blanks in JSON, .pftrace's unknown field 2 (docs/pftrace.md). */
static void put_padding(size_t length)
{
    static char blanks[2 * FILE_PAGE + 4], fields[2 * FILE_PAGE + 4];
    if (!blanks[0]) {
        memset(blanks, ' ', sizeof blanks);
        for (size_t at = 0; at + 1 < sizeof fields; at += 2)
            fields[at] = (char)PF_TAG(PF_TRACE_PADDING, PF_WIRE_VARINT), fields[at + 1] = 0;
    }
    if (settings.form == FORM_JSON) {
        out_put(blanks, length);
    } else if (length % 2) {
        out_put((const char[]){(char)PF_TAG(PF_TRACE_PADDING, PF_WIRE_VARINT), (char)0x80, 0}, 3);
        out_put(fields, length - 3);
    } else {
        out_put(fields, length);
    }
}

/* THREAD's events not in the file yet go to its end, none across a page. */
static void write_pending(struct thread *thread)
{
    uint32_t from = 0;
    for (uint32_t e = 0; e < thread->events; e++) {
        uint32_t length = thread->ends[e] - from;
        uint32_t room = FILE_PAGE - (uint32_t)(out.offset % FILE_PAGE);
        if (length > room) {
            /* .pftrace's padding is two bytes at least: a one-byte gap takes a page more */
            put_padding(settings.form == FORM_PFTRACE && room == 1 ? room + FILE_PAGE : room);
        }
        out_put(thread->data + from, length);
        from = thread->ends[e];
    }
    thread->used = thread->events = 0;
}

static void flush_all(void)
{
    /* the library's list of threads: the newest first */
    for (int t = THREADS - 1; t >= 0; t--)
        write_pending(&threads[t]);
    out_pace();
}

/* The event of LENGTH bytes just encoded at the end of THREAD's buffer is whole. */
static void event_done(struct thread *thread, uint32_t length)
{
    thread->used += length;
    thread->ends[thread->events++] = thread->used;
    if (thread->used >= BUFFER_BYTES) {
        write_pending(thread);
        out_pace();
    }
}

static char *end_of(struct thread *thread)
{
    return thread->data + thread->used;
}

/* ---- text ----------------------------------------------------------------------------- */

static char *put_text(char *at, const char *text)
{
    size_t length = strlen(text);
    memcpy(at, text, length);
    return at + length;
}

static char *put_unsigned(char *at, uint64_t value)
{
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + value % 10);
        value /= 10;
    } while (value);
    while (n)
        *at++ = digits[--n];
    return at;
}

/* Nanoseconds as JSON's microseconds with three decimals. */
static char *put_microseconds(char *at, int64_t ns)
{
    at = put_unsigned(at, (uint64_t)ns / 1000);
    *at++ = '.';
    uint64_t fraction = (uint64_t)ns % 1000;
    *at++ = (char)('0' + fraction / 100);
    *at++ = (char)('0' + fraction / 10 % 10);
    *at++ = (char)('0' + fraction % 10);
    return at;
}

/* The text of a range or mark: "frame N", or the over-budget mark as frames.c writes it. */
static const char *name_of(const struct record *record, char *text, size_t size)
{
    if (record->kind == K_FRAME) {
        snprintf(text, size, "frame %" PRIu64, record->number);
    } else if (record->kind == K_OVER_BUDGET) {
        char took[32], budget[32];
        snprintf(took, sizeof took, "%.3f", (double)record->value / MS);
        snprintf(budget, sizeof budget, "%.3f", (double)settings.budget_ns / MS);
        if (strcmp(took, budget) == 0)
            snprintf(took, sizeof took, "%.6f", (double)record->value / MS);
        snprintf(text, size, "over budget frame %" PRIu64 ": %s ms > %s ms", record->number, took, budget);
    } else {
        return kinds[record->kind].name;
    }
    return text;
}

static uint64_t payload_of(const struct record *record)
{
    if (record->kind == K_FRAME)
        return record->number;
    if (record->kind == K_OVER_BUDGET)
        return (uint64_t)record->value;
    return kinds[record->kind].payload;
}

/* ---- the JSON form ------------------------------------------------------------------- */

static void json_metadata(struct thread *thread, const char *what, const char *name, const char *key)
{
    char *at = end_of(thread), *start = at;
    at += sprintf(at, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
                  ",\"args\":{\"%s\":\"%s\"}},\n", what, settings.pid, thread->tid, key, name);
    event_done(thread, (uint32_t)(at - start));
}

static void json_start_thread(struct thread *thread, int index)
{
    if (index == LOOP) {
        json_metadata(thread, "process_name", "harness_physical", "name");
        char mark[24];
        snprintf(mark, sizeof mark, "%016" PRIx64, (uint64_t)(settings.seed * 0x9e3779b97f4a7c15ull));
        json_metadata(thread, "nvtxshim_run", mark, "mark");
    }
    for (int n = 0; n < 2 && thread->names[n]; n++)
        json_metadata(thread, "thread_name", thread->names[n], "name");
}

static char *json_ids(char *at, const struct thread *thread)
{
    at = put_text(at, ",\"pid\":");
    at = put_unsigned(at, settings.pid);
    at = put_text(at, ",\"tid\":");
    return put_unsigned(at, thread->tid);
}

static char *json_args(char *at, const struct record *record, bool payload_first)
{
    const struct kind *kind = &kinds[record->kind];
    at = put_text(at, ",\"args\":{");
    if (payload_first) {
        at = put_text(at, "\"payload\":");
        at = put_unsigned(at, payload_of(record));
        if (record->kind == K_OVER_BUDGET)
            at = put_text(at, ",\"color\":\"#d50000\"");
        at = put_text(at, ",\"category\":\"");
        at = put_text(at, kind->category);
        return put_text(at, "\"}");
    }
    at = put_text(at, "\"category\":\"");
    at = put_text(at, kind->category);
    *at++ = '"';
    if (kind->has_payload) {
        at = put_text(at, ",\"payload\":");
        at = put_unsigned(at, payload_of(record));
    }
    return put_text(at, "}");
}

static void json_record(struct thread *thread, const struct record *record)
{
    if (record->op == OP_PUSH)
        return;                        /* written whole at its pop */
    char text[96];
    const struct kind *kind = &kinds[record->kind];
    char *at = end_of(thread), *start = at;
    at = put_text(at, "{\"name\":\"");
    at = put_text(at, name_of(record, text, sizeof text));
    at = put_text(at, "\",\"cat\":\"");
    at = put_text(at, kind->domain);
    switch (record->op) {
    case OP_POP:
        at = put_text(at, "\",\"ph\":\"X\",\"ts\":");
        at = put_microseconds(at, record->start);
        at = put_text(at, ",\"dur\":");
        at = put_microseconds(at, record->t - record->start);
        at = json_ids(at, thread);
        at = json_args(at, record, false);
        break;
    case OP_START:
    case OP_END:
        at = put_text(at, record->op == OP_START ? "\",\"ph\":\"b\",\"ts\":" : "\",\"ph\":\"e\",\"ts\":");
        at = put_microseconds(at, record->t);
        at = json_ids(at, thread);
        at = put_text(at, ",\"id\":");
        at = put_unsigned(at, record->id);
        if (record->op == OP_START)
            at = json_args(at, record, record->kind == K_FRAME);
        break;
    case OP_MARK:
        at = put_text(at, "\",\"ph\":\"i\",\"s\":\"t\",\"ts\":");
        at = put_microseconds(at, record->t);
        at = json_ids(at, thread);
        at = json_args(at, record, true);
        break;
    case OP_PUSH:
        break;
    }
    at = put_text(at, "},\n");
    trace_events++;
    event_done(thread, (uint32_t)(at - start));
}

/* ---- the .pftrace form ------------------------------------------------------------- */

/* A protobuf message being written: nested ones leave room for their tag and
 * length, which are put in front when they end. */
struct writer {
    uint8_t *at;
    uint8_t *open[6];
    int depth;
};

static void put_varint(struct writer *w, uint64_t value)
{
    while (value >= 0x80) {
        *w->at++ = (uint8_t)(value | 0x80);
        value >>= 7;
    }
    *w->at++ = (uint8_t)value;
}

static void put_tag(struct writer *w, unsigned field, unsigned wire)
{
    put_varint(w, (uint64_t)(field << 3 | wire));
}

static void put_uint(struct writer *w, unsigned field, uint64_t value)
{
    put_tag(w, field, PF_WIRE_VARINT);
    put_varint(w, value);
}

static void put_string(struct writer *w, unsigned field, const char *text)
{
    size_t length = strlen(text);
    put_tag(w, field, PF_WIRE_LENGTH);
    put_varint(w, length);
    memcpy(w->at, text, length);
    w->at += length;
}

#define ROOM 4                         /* a tag and a length, each two bytes at most */

static void begin(struct writer *w)
{
    w->open[w->depth++] = w->at;
    w->at += ROOM;
}

static void end(struct writer *w, unsigned field)
{
    uint8_t *start = w->open[--w->depth], *body = start + ROOM;
    size_t length = (size_t)(w->at - body);
    struct writer head = {start, {0}, 0};
    put_tag(&head, field, PF_WIRE_LENGTH);
    put_varint(&head, length);
    memmove(head.at, body, length);
    w->at = head.at + length;
}

/* iids: one counter for the process, an iid per name and category text, each
 * defined on a sequence before its first use there. 1-3: the annotation names. */
#define MAX_IIDS 64
static const char *iid_texts[MAX_IIDS];
static bool iid_is_name[MAX_IIDS];
static uint32_t iid_count = 4;

static uint32_t iid_search(const char *text, bool is_name)
{
    for (uint32_t i = 4; i < iid_count; i++)
        if (iid_is_name[i] == is_name && strcmp(iid_texts[i], text) == 0)
            return i;
    if (iid_count == MAX_IIDS)
        die("%s", "too many interned names");
    iid_texts[iid_count] = text;
    iid_is_name[iid_count] = is_name;
    return iid_count++;
}

static uint32_t iid_of(const char *text, bool is_name)
{
    /* a kind's three texts, the same pointers each time: looked up once */
    static const char *last_text[3 * KINDS];
    static uint32_t last_iid[3 * KINDS];
    for (size_t i = 0; i < 3 * KINDS && last_text[i]; i++)
        if (last_text[i] == text && iid_is_name[last_iid[i]] == is_name)
            return last_iid[i];
    uint32_t iid = iid_search(text, is_name);
    for (size_t i = 0; i < 3 * KINDS; i++)
        if (!last_text[i]) {
            last_text[i] = text;
            last_iid[i] = iid;
            break;
        }
    return iid;
}

static uint64_t process_track_uuid(void)
{
    return 2ull * settings.pid + 1;
}

static uint64_t thread_track(const struct thread *thread)
{
    return 1ull << 61 | thread->tid;
}

/* A whole packet, from the body W wrote after BODY: field 1 of Trace. */
static uint32_t seal_packet(struct thread *thread, struct writer *w)
{
    end(w, PF_TRACE_PACKET);
    return (uint32_t)(w->at - (uint8_t *)end_of(thread));
}

static void packet_begin(struct thread *thread, struct writer *w)
{
    *w = (struct writer){(uint8_t *)end_of(thread), {0}, 0};
    begin(w);
}

static void pf_thread_descriptor(struct thread *thread, const char *name)
{
    struct writer w;
    packet_begin(thread, &w);
    put_uint(&w, PF_PACKET_SEQUENCE, thread->sequence);
    put_uint(&w, PF_PACKET_FLAGS, PF_SEQ_NEEDS_INCREMENTAL_STATE);
    begin(&w);
    put_uint(&w, PF_DESCRIPTOR_UUID, thread_track(thread));
    begin(&w);
    put_uint(&w, PF_THREAD_PID, settings.pid);
    put_uint(&w, PF_THREAD_TID, thread->tid);
    put_string(&w, PF_THREAD_NAME, name);
    end(&w, PF_DESCRIPTOR_THREAD);
    put_uint(&w, PF_DESCRIPTOR_PARENT, process_track_uuid());
    end(&w, PF_PACKET_TRACK_DESCRIPTOR);
    event_done(thread, seal_packet(thread, &w));
}

static void put_clock(struct writer *w, unsigned id, int64_t value, bool incremental)
{
    begin(w);
    put_uint(w, PF_CLOCK_ID, id);
    put_uint(w, PF_CLOCK_TIMESTAMP, (uint64_t)value);
    if (incremental)
        put_uint(w, PF_CLOCK_INCREMENTAL, 1);
    end(w, PF_SNAPSHOT_CLOCK);
}

/* The sequence's first packet (its defaults, clock 64 from T0, the annotation
 * names, SEQ_INCREMENTAL_STATE_CLEARED), then its thread. */
static void pf_start_thread(struct thread *thread, int64_t t0)
{
    static uint32_t sequences = 1;
    thread->sequence = ++sequences;
    thread->clock = t0;
    thread->defined = calloc(MAX_IIDS, 1);
    struct writer w;
    packet_begin(thread, &w);
    begin(&w);
    put_clock(&w, PF_CLOCK_BUILTIN_LIMIT, t0, true);
    put_clock(&w, PF_CLOCK_MONOTONIC, t0, false);
    end(&w, PF_PACKET_CLOCK_SNAPSHOT);
    put_uint(&w, PF_PACKET_SEQUENCE, thread->sequence);
    begin(&w);
    static const char *const annotations[] = {"payload", "category", "color"};
    for (unsigned i = 0; i < 3; i++) {
        begin(&w);
        put_uint(&w, PF_ENTRY_IID, i + 1);
        put_string(&w, PF_ENTRY_NAME, annotations[i]);
        end(&w, PF_INTERNED_ANNOTATION_NAMES);
    }
    end(&w, PF_PACKET_INTERNED);
    put_uint(&w, PF_PACKET_FLAGS, PF_SEQ_INCREMENTAL_STATE_CLEARED | PF_SEQ_NEEDS_INCREMENTAL_STATE);
    begin(&w);
    begin(&w);
    put_uint(&w, PF_EVENT_DEFAULTS_TRACK, thread_track(thread));
    end(&w, PF_DEFAULTS_TRACK_EVENT);
    put_uint(&w, PF_DEFAULTS_CLOCK, PF_CLOCK_BUILTIN_LIMIT);
    end(&w, PF_PACKET_DEFAULTS);
    event_done(thread, seal_packet(thread, &w));
    for (int n = 0; n < 2 && thread->names[n]; n++)
        pf_thread_descriptor(thread, thread->names[n]);
}

static void pf_async_descriptor(struct thread *thread, uint64_t id, const char *domain)
{
    struct writer w;
    packet_begin(thread, &w);
    put_uint(&w, PF_PACKET_SEQUENCE, thread->sequence);
    put_uint(&w, PF_PACKET_FLAGS, PF_SEQ_NEEDS_INCREMENTAL_STATE);
    begin(&w);
    put_uint(&w, PF_DESCRIPTOR_UUID, 2 * id);
    put_string(&w, PF_DESCRIPTOR_NAME, domain);
    put_uint(&w, PF_DESCRIPTOR_PARENT, process_track_uuid());
    end(&w, PF_PACKET_TRACK_DESCRIPTOR);
    event_done(thread, seal_packet(thread, &w));
}

static void put_annotation_uint(struct writer *w, unsigned name_iid, uint64_t value)
{
    begin(w);
    put_uint(w, PF_ANNOTATION_NAME_IID, name_iid);
    put_uint(w, PF_ANNOTATION_UINT, value);
    end(w, PF_EVENT_ANNOTATIONS);
}

/* One TrackEvent packet: TYPE at time T of RECORD's range or mark; its name,
 * categories and payload where the type has them. */
static void pf_event(struct thread *thread, const struct record *record, unsigned type, int64_t t,
                     bool described, bool with_payload, bool on_track)
{
    const struct kind *kind = &kinds[record->kind];
    bool inline_name = record->kind == K_FRAME || record->kind == K_OVER_BUDGET;
    uint32_t name_iid = 0, domain_iid = 0, category_iid = 0;
    if (described) {
        domain_iid = iid_of(kind->domain, false);
        category_iid = iid_of(kind->category, false);
        if (!inline_name)
            name_iid = iid_of(kind->name, true);
    }
    struct writer w;
    packet_begin(thread, &w);
    bool absolute = t < thread->clock;
    put_uint(&w, PF_PACKET_TIMESTAMP, absolute ? (uint64_t)t : (uint64_t)(t - thread->clock));
    if (!absolute)
        thread->clock = t;
    put_uint(&w, PF_PACKET_SEQUENCE, thread->sequence);
    begin(&w);
    if (described) {
        put_uint(&w, PF_EVENT_CATEGORY_IIDS, domain_iid);
        put_uint(&w, PF_EVENT_CATEGORY_IIDS, category_iid);
    }
    if (with_payload && (kind->has_payload || record->kind == K_FRAME))
        put_annotation_uint(&w, 1, payload_of(record));
    if (record->kind == K_OVER_BUDGET) {
        begin(&w);
        put_uint(&w, PF_ANNOTATION_NAME_IID, 3);
        put_string(&w, PF_ANNOTATION_STRING, "#d50000");
        end(&w, PF_EVENT_ANNOTATIONS);
    }
    put_uint(&w, PF_EVENT_TYPE, type);
    if (name_iid)
        put_uint(&w, PF_EVENT_NAME_IID, name_iid);
    if (on_track)
        put_uint(&w, PF_EVENT_TRACK, 2 * record->id);
    if (described && inline_name) {
        char text[96];
        put_string(&w, PF_EVENT_NAME, name_of(record, text, sizeof text));
    }
    end(&w, PF_PACKET_TRACK_EVENT);
    /* the iids this packet uses that its sequence has not seen */
    uint32_t used[3] = {domain_iid, category_iid, name_iid};
    bool any = false;
    for (int i = 0; i < 3; i++)
        any = any || (used[i] && !thread->defined[used[i]]);
    if (any) {
        begin(&w);
        for (int i = 0; i < 3; i++) {
            if (!used[i] || thread->defined[used[i]])
                continue;
            thread->defined[used[i]] = 1;
            begin(&w);
            put_uint(&w, PF_ENTRY_IID, used[i]);
            put_string(&w, PF_ENTRY_NAME, iid_texts[used[i]]);
            end(&w, i == 2 ? PF_INTERNED_NAMES : PF_INTERNED_CATEGORIES);
        }
        end(&w, PF_PACKET_INTERNED);
    }
    put_uint(&w, PF_PACKET_FLAGS, PF_SEQ_NEEDS_INCREMENTAL_STATE);
    if (absolute)
        put_uint(&w, PF_PACKET_CLOCK, PF_CLOCK_MONOTONIC);
    trace_events++;
    event_done(thread, seal_packet(thread, &w));
}

/* The begins still waiting on THREAD, outermost first. */
static void pf_write_waiting(struct thread *thread)
{
    for (int i = 0; i < thread->waiting_count; i++)
        if (thread->waiting[i].op == OP_PUSH) {
            pf_event(thread, &thread->waiting[i], PF_SLICE_BEGIN, thread->waiting[i].t, true, false, false);
            thread->waiting[i].op = OP_POP;        /* written */
        }
}

/* Which thread began each async range still open, by id (a ring: few are open at once). */
#define OPEN_RING 4096
static int started_on[OPEN_RING];

static void pf_record(struct thread *thread, int index, const struct record *record)
{
    switch (record->op) {
    case OP_PUSH:
        if (thread->waiting_count == 8)
            die("%s", "ranges nested too deep");
        thread->waiting[thread->waiting_count++] = *record;
        return;
    case OP_POP: {
        struct record *open = &thread->waiting[--thread->waiting_count];
        if (open->op == OP_PUSH)
            pf_event(thread, open, PF_SLICE_BEGIN, open->t, true, false, false);
        pf_event(thread, record, PF_SLICE_END, record->t, false, true, false);
        return;
    }
    case OP_START:
        pf_write_waiting(thread);
        started_on[record->id % OPEN_RING] = index;
        pf_async_descriptor(thread, record->id, kinds[record->kind].domain);
        pf_event(thread, record, PF_SLICE_BEGIN, record->t, true, true, true);
        return;
    case OP_END:
        pf_write_waiting(thread);
        if (started_on[record->id % OPEN_RING] != index)
            pf_async_descriptor(thread, record->id, kinds[record->kind].domain);
        pf_event(thread, record, PF_SLICE_END, record->t, false, false, true);
        return;
    case OP_MARK:
        pf_write_waiting(thread);
        pf_event(thread, record, PF_INSTANT, record->t, true, true, false);
        return;
    }
}

/* The file's header: the process's track and the clocks, then the run's mark. */
static void pf_header(int64_t t)
{
    struct thread *scratch = &threads[LOOP];     /* its buffer is empty still */
    struct writer w;
    packet_begin(scratch, &w);
    put_uint(&w, PF_PACKET_SEQUENCE, 1);
    begin(&w);
    put_uint(&w, PF_DESCRIPTOR_UUID, process_track_uuid());
    begin(&w);
    put_uint(&w, PF_PROCESS_PID, settings.pid);
    put_string(&w, PF_PROCESS_NAME, "harness_physical");
    end(&w, PF_DESCRIPTOR_PROCESS);
    end(&w, PF_PACKET_TRACK_DESCRIPTOR);
    uint32_t length = seal_packet(scratch, &w);
    out_put(scratch->data, length);
    packet_begin(scratch, &w);
    begin(&w);
    put_clock(&w, PF_CLOCK_MONOTONIC, t, false);
    put_clock(&w, PF_CLOCK_BOOTTIME, t + 80, false);
    put_clock(&w, PF_CLOCK_REALTIME, t + 1795000000000000000ll, false);
    put_uint(&w, PF_SNAPSHOT_PRIMARY, PF_CLOCK_MONOTONIC);
    end(&w, PF_PACKET_CLOCK_SNAPSHOT);
    put_uint(&w, PF_PACKET_SEQUENCE, 1);
    length = seal_packet(scratch, &w);
    out_put(scratch->data, length);
    /* Trace field 2, a ten-byte varint with its top bit set */
    uint8_t mark[11] = {(uint8_t)PF_TAG(PF_TRACE_PADDING, PF_WIRE_VARINT)};
    uint64_t value = settings.seed * 0x9e3779b97f4a7c15ull | 1ull << 63;
    for (int i = 1; i < 11; i++, value >>= 7)
        mark[i] = (uint8_t)((value & 0x7f) | (i < 10 ? 0x80 : 0));
    out_put((const char *)mark, sizeof mark);
}

/* ---- the figures report must print -------------------------------------------- */

struct values {
    uint32_t *items;
    size_t count, room;
    uint64_t sum;
};

static bool expecting;

static void add_value(struct values *values, int64_t ns)
{
    if (!expecting)
        return;
    if (ns < 0 || ns > UINT32_MAX)
        die("%s", "a duration out of range");
    if (values->count == values->room) {
        values->room = values->room ? 2 * values->room : 4096;
        values->items = realloc(values->items, values->room * sizeof *values->items);
        if (!values->items)
            die("%s", "out of memory");
    }
    values->items[values->count++] = (uint32_t)ns;
    values->sum += (uint64_t)ns;
}

/* Report's columns, in its order; CUDA_AND_LAUNCHES: cuda where launch is not shown. */
enum column { C_TOTAL, C_USB, C_CUDA, C_WAIT, C_LAUNCH, C_X11, C_CAMERA, C_REST, COLUMNS,
              C_CUDA_AND_LAUNCHES = COLUMNS, COLUMN_LISTS };
static const char *const column_names[COLUMNS] = {"total", "usb", "cuda", "gpu wait", "launch", "x11",
                                                  "camera", "rest"};

static struct {
    struct values columns[COLUMN_LISTS];
    struct values names[KINDS];
    uint64_t frames, over_budget;
    bool launch_shown, camera_shown;
    bool nonzero[COLUMN_LISTS];        /* some frame spent time in it */
    struct slow { uint64_t frame; int64_t value[COLUMN_LISTS]; } slowest[SLOWEST];
    size_t slowest_count;
} figures;

struct interval {
    int64_t start, end;
};

static int by_start(const void *a, const void *b)
{
    const struct interval *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

static int64_t union_length(struct interval *intervals, size_t count)
{
    qsort(intervals, count, sizeof *intervals, by_start);
    int64_t total = 0;
    for (size_t i = 0; i < count;) {
        int64_t start = intervals[i].start, end_at = intervals[i].end;
        for (i++; i < count && intervals[i].start <= end_at; i++)
            if (intervals[i].end > end_at)
                end_at = intervals[i].end;
        total += end_at - start;
    }
    return total;
}

/* Sorts VALUES' items: a radix sort, 11 bits a pass. */
static void sort_values(struct values *values)
{
    uint32_t *from = values->items, *to = malloc(values->count * sizeof *to + 1);
    if (!to)
        die("%s", "out of memory");
    for (int shift = 0; shift < 33; shift += 11) {
        size_t counts[2049] = {0};
        for (size_t i = 0; i < values->count; i++)
            counts[(from[i] >> shift & 2047) + 1]++;
        for (int b = 0; b < 2048; b++)
            counts[b + 1] += counts[b];
        for (size_t i = 0; i < values->count; i++)
            to[counts[from[i] >> shift & 2047]++] = from[i];
        uint32_t *swap = from;
        from = to;
        to = swap;
    }
    values->items = from;
    free(to);
}

/* The nearest rank: the ceil(PERCENT / 100 * COUNT)-th smallest. */
static uint32_t percentile(const struct values *values, unsigned percent)
{
    size_t rank = (percent * values->count + 99) / 100;
    return values->items[rank ? rank - 1 : 0];
}

/* The statistics, and the value at each thousandth of the ranks (the smallest,
 * then the ceil(k / 1000 * count)-th): what an estimate that states its rank
 * error is checked against. */
static void print_statistics(FILE *file, struct values *values)
{
    sort_values(values);
    fprintf(file, "\"count\":%zu,\"sum\":%" PRIu64 ",\"p50\":%" PRIu32 ",\"p99\":%" PRIu32 ",\"max\":%" PRIu32
            ",\"thousandths\":[", values->count, values->sum, percentile(values, 50), percentile(values, 99),
            values->items[values->count - 1]);
    for (size_t k = 0; k <= 1000; k++) {
        size_t rank = (k * values->count + 999) / 1000;
        fprintf(file, "%s%" PRIu32, k ? "," : "", values->items[rank ? rank - 1 : 0]);
    }
    fputc(']', file);
}

static void write_expected(const char *path, uint64_t ids)
{
    FILE *file = fopen(path, "w");
    if (!file)
        die("cannot write %s", path);
    fprintf(file, "{\"form\":\"%s\",\"seed\":%" PRIu64 ",\"frames\":%" PRIu64 ",\"bytes\":%" PRIu64
            ",\"events\":%" PRIu64 ",\"async_ranges\":%" PRIu64 ",\"pid\":%" PRIu32
            ",\"process\":\"harness_physical\",\"budget_ns\":%" PRId64 ",\"over_budget\":%" PRIu64 ",\n",
            settings.form == FORM_JSON ? "json" : "pftrace", settings.seed, figures.frames,
            out.offset + (settings.form == FORM_JSON ? 2 : 0), trace_events, ids, settings.pid,
            settings.budget_ns, figures.over_budget);
    if (!figures.launch_shown)
        figures.columns[C_CUDA] = figures.columns[C_CUDA_AND_LAUNCHES];
    /* figures_builder.c's columns, less the parts no frame spent time in (cli/model/report_columns.h) */
    bool shown[COLUMNS] = {true, true, true, true, figures.launch_shown, true, figures.camera_shown, true};
    for (int c = C_USB; c < COLUMNS; c++)
        shown[c] = shown[c] && figures.nonzero[c == C_CUDA && !figures.launch_shown ? C_CUDA_AND_LAUNCHES : c];
    fputs("\"columns\":[", file);
    for (int c = 0, first = 1; c < COLUMNS; c++) {
        if (!shown[c])
            continue;
        fprintf(file, "%s\n {\"column\":\"%s\",", first ? "" : ",", column_names[c]);
        print_statistics(file, &figures.columns[c]);
        fputc('}', file);
        first = 0;
    }
    fputs("],\n\"names\":[", file);
    for (int k = 0, first = 1; k < KINDS; k++) {
        if (!figures.names[k].count)
            continue;
        fprintf(file, "%s\n {\"domain\":\"%s\",\"name\":\"%s\",", first ? "" : ",", kinds[k].domain,
                kinds[k].table);
        print_statistics(file, &figures.names[k]);
        fputc('}', file);
        first = 0;
    }
    fputs("],\n\"marks\":[", file);
    if (figures.over_budget)
        fprintf(file, "\n {\"domain\":\"nvtxshim\",\"kind\":\"over budget frame N: N ms > N ms\",\"count\":%"
                PRIu64 "}", figures.over_budget);
    fputs("],\n\"slowest\":[", file);
    for (size_t s = 0; s < figures.slowest_count; s++) {
        const struct slow *slow = &figures.slowest[s];
        fprintf(file, "%s\n {\"frame\":%" PRIu64, s ? "," : "", slow->frame);
        for (int c = 0; c < COLUMNS; c++)
            if (shown[c])
                fprintf(file, ",\"%s\":%" PRId64, column_names[c],
                        c == C_CUDA && !figures.launch_shown ? slow->value[C_CUDA_AND_LAUNCHES] : slow->value[c]);
        fputc('}', file);
    }
    fputs("]}\n", file);
    if (fclose(file) != 0)
        die("cannot write %s", path);
}

/* A frame's columns: the union of its calls' intervals per part, the rest. */
static void measure_frame(uint64_t number, int64_t start, int64_t end_at, const struct interval *calls,
                          const enum part *parts, size_t count)
{
    struct interval lists[COLUMN_LISTS][2 * MAX_CALLS + 8], all[2 * MAX_CALLS + 8];
    size_t counts[COLUMN_LISTS] = {0};
    int64_t value[COLUMN_LISTS] = {0};
    for (size_t i = 0; i < count; i++) {
        int column = C_USB + (int)parts[i];
        lists[column][counts[column]++] = calls[i];
        if (parts[i] == PART_CUDA || parts[i] == PART_LAUNCH)
            lists[C_CUDA_AND_LAUNCHES][counts[C_CUDA_AND_LAUNCHES]++] = calls[i];
        all[i] = calls[i];
    }
    value[C_TOTAL] = end_at - start;
    for (int c = C_USB; c <= C_CAMERA; c++)
        value[c] = union_length(lists[c], counts[c]);
    value[C_CUDA_AND_LAUNCHES] = union_length(lists[C_CUDA_AND_LAUNCHES], counts[C_CUDA_AND_LAUNCHES]);
    value[C_REST] = value[C_TOTAL] - union_length(all, count);
    figures.launch_shown = figures.launch_shown || value[C_LAUNCH] >= LAUNCH_SHOWN_NS;
    figures.frames++;
    figures.over_budget += value[C_TOTAL] > settings.budget_ns;
    for (int c = 0; c < COLUMN_LISTS; c++) {
        add_value(&figures.columns[c], value[c]);
        figures.nonzero[c] = figures.nonzero[c] || value[c] != 0;
    }
    /* the slowest: longest first, frames as long in start order */
    size_t at = figures.slowest_count;
    while (at > 0 && figures.slowest[at - 1].value[C_TOTAL] < value[C_TOTAL])
        at--;
    if (at < SLOWEST) {
        size_t last = figures.slowest_count < SLOWEST ? figures.slowest_count : SLOWEST - 1;
        memmove(&figures.slowest[at + 1], &figures.slowest[at], (last - at) * sizeof figures.slowest[0]);
        figures.slowest[at].frame = number;
        memcpy(figures.slowest[at].value, value, sizeof value);
        if (figures.slowest_count < SLOWEST)
            figures.slowest_count++;
    }
}

/* ---- the run ----------------------------------------------------------------------- */

static uint64_t next_id;

static void emit(const struct record *record)
{
    struct thread *thread = &threads[record->thread];
    if (!thread->started) {
        thread->started = true;
        if (settings.form == FORM_JSON)
            json_start_thread(thread, record->thread);
        else
            pf_start_thread(thread, record->t - 1000);
    }
    if (settings.form == FORM_JSON)
        json_record(thread, record);
    else
        pf_record(thread, record->thread, record);
}

/* A frame's records: its threads' events in the order each thread makes them. */
static struct record loop_records[4 * MAX_CALLS + 16], event_records[8 * MAX_CALLS + 1024];
static size_t loop_count, event_count;

static void add(struct record *list, size_t *count, size_t room, struct record record)
{
    if (*count == room)
        die("%s", "too many events in a frame");
    list[(*count)++] = record;
}

#define LOOP_ADD(...) add(loop_records, &loop_count, sizeof loop_records / sizeof loop_records[0], \
                          (struct record){__VA_ARGS__})
#define EVENT_ADD(...) add(event_records, &event_count, sizeof event_records / sizeof event_records[0], \
                           (struct record){__VA_ARGS__})

/* A push/pop range of KIND on the loop thread from T; its end. */
static int64_t loop_call(enum kind_id kind, int64_t t)
{
    int64_t length = uniform(kinds[kind].shortest, kinds[kind].longest);
    LOOP_ADD(.op = OP_PUSH, .thread = LOOP, .kind = kind, .t = t);
    LOOP_ADD(.op = OP_POP, .thread = LOOP, .kind = kind, .t = t + length, .start = t);
    add_value(&figures.names[kind], length);
    return t + length;
}

/* An idle libusb_handle_events_completed range on the event thread from T. */
static int64_t idle_events(int64_t t, int64_t length)
{
    EVENT_ADD(.op = OP_PUSH, .thread = EVENTS, .kind = K_EVENTS, .t = t);
    EVENT_ADD(.op = OP_POP, .thread = EVENTS, .kind = K_EVENTS, .t = t + length, .start = t);
    add_value(&figures.names[K_EVENTS], length);
    return t + length;
}

/* The loop's and the event thread's records, merged by the time each thread
 * makes them, into the buffers. */
static void emit_frame_records(void)
{
    size_t l = 0, e = 0;
    while (l < loop_count || e < event_count) {
        bool loop_first = e == event_count || (l < loop_count && loop_records[l].t <= event_records[e].t);
        emit(loop_first ? &loop_records[l++] : &event_records[e++]);
    }
    loop_count = event_count = 0;
}

static uint64_t count_of(uint64_t milli)
{
    return milli / 1000 + chance((milli % 1000) * 1000);
}

/* Frame NUMBER from F0 (its start has been written); its end, past the
 * event thread's last range (*EVENTS_END, carried from frame to frame). */
static int64_t make_frame(uint64_t number, int64_t f0, int64_t *events_end, bool last)
{
    struct interval calls[2 * MAX_CALLS + 8];
    enum part parts[2 * MAX_CALLS + 8];
    size_t call_count = 0;
    struct submission { uint64_t id; int64_t at; } submissions[MAX_CALLS + 1];
    size_t submission_count = 0;

    /* the loop thread: the marker call, then the calls drawn */
    int64_t t = f0 + uniform(8 * US, 20 * US);
    uint64_t extra = count_of(settings.calls_milli);
    for (uint64_t c = 0; c <= extra; c++) {
        enum kind_id kind = c == 0 ? K_CONTROL : (enum kind_id)(next_random() % MENU);
        if (kind == K_SUBMIT) {
            uint64_t id = ++next_id;
            LOOP_ADD(.op = OP_START, .thread = LOOP, .kind = K_SUBMIT, .t = t, .id = id);
            submissions[submission_count++] = (struct submission){id, t};
            t += uniform(3 * US, 15 * US);
        } else {
            int64_t start = t;
            t = loop_call(kind, t);
            calls[call_count] = (struct interval){start, t};
            parts[call_count++] = kinds[kind].part;
            figures.camera_shown = figures.camera_shown || kind == K_DQBUF;
        }
        t += uniform(2 * US, 20 * US);
    }
    if (last) {
        int64_t start = t;
        t = loop_call(K_RELEASE, t) + uniform(5 * US, 30 * US);
        calls[call_count] = (struct interval){start, t};
        parts[call_count++] = PART_USB;
    }
    /* its length as drawn: most frames near --frame-us, a few slow ones */
    int64_t length = settings.frame_ns * 85 / 100 + uniform(0, settings.frame_ns * 30 / 100);
    if (chance(20000))
        length = length * uniform(1500, 4000) / 1000;
    else if (chance(1000))
        length = length * uniform(5000, 20000) / 1000;
    int64_t target = f0 + length;

    /* the event thread: each completion in a range of its own, idle ranges
     * where they fit (timeouts with nothing done) */
    int64_t et = (*events_end > f0 ? *events_end : f0) + uniform(1 * US, 5 * US);
    uint64_t idle = count_of(settings.events_milli);
    size_t done = 0;
    for (;;) {
        int64_t idle_length = idle ? uniform(kinds[K_EVENTS].shortest, kinds[K_EVENTS].longest) : 0;
        if (done < submission_count) {
            int64_t complete = submissions[done].at + uniform(kinds[K_SUBMIT].shortest, kinds[K_SUBMIT].longest);
            int64_t lead = uniform(1 * US, 100 * US);
            if (idle && et + idle_length + lead + 2 * US < complete) {
                et = idle_events(et, idle_length) + uniform(1 * US, 5 * US);
                idle--;
                continue;
            }
            if (complete < et + lead)
                complete = et + lead;
            EVENT_ADD(.op = OP_PUSH, .thread = EVENTS, .kind = K_EVENTS, .t = complete - lead);
            EVENT_ADD(.op = OP_END, .thread = EVENTS, .kind = K_SUBMIT, .t = complete, .id = submissions[done].id);
            add_value(&figures.names[K_SUBMIT], complete - submissions[done].at);
            int64_t callback = complete + uniform(200, 1500);
            int64_t callback_end = callback + uniform(kinds[K_CALLBACK].shortest, kinds[K_CALLBACK].longest);
            EVENT_ADD(.op = OP_PUSH, .thread = EVENTS, .kind = K_CALLBACK, .t = callback);
            EVENT_ADD(.op = OP_POP, .thread = EVENTS, .kind = K_CALLBACK, .t = callback_end, .start = callback);
            add_value(&figures.names[K_CALLBACK], callback_end - callback);
            calls[call_count] = (struct interval){callback, callback_end};
            parts[call_count++] = PART_USB;
            int64_t range_end = callback_end + uniform(500, 3 * US);
            EVENT_ADD(.op = OP_POP, .thread = EVENTS, .kind = K_EVENTS, .t = range_end, .start = complete - lead);
            add_value(&figures.names[K_EVENTS], range_end - (complete - lead));
            et = range_end + uniform(1 * US, 5 * US);
            done++;
            continue;
        }
        if (!idle || et + idle_length + 5 * US > target)
            break;
        et = idle_events(et, idle_length) + uniform(1 * US, 5 * US);
        idle--;
    }
    *events_end = et;
    int64_t f1 = target;
    if (f1 < t + 5 * US)
        f1 = t + 5 * US;
    if (f1 < et + 5 * US)
        f1 = et + 5 * US;
    emit_frame_records();
    measure_frame(number, f0, f1, calls, parts, call_count);
    add_value(&figures.names[K_FRAME], f1 - f0);
    return f1;
}

static uint64_t parse_size(const char *text, const char *option)
{
    char *end_at;
    errno = 0;
    double value = strtod(text, &end_at);
    double unit = !*end_at ? 1 : !strcmp(end_at, "K") ? 1e3 : !strcmp(end_at, "M") ? 1e6
                : !strcmp(end_at, "G") ? 1e9 : 0;
    if (errno || end_at == text || !unit || value < 0)
        die("%s needs a number, with K, M or G after it or not", option);
    return (uint64_t)(value * unit);
}

static uint64_t parse_milli(const char *text, const char *option)
{
    char *end_at;
    double value = strtod(text, &end_at);
    if (end_at == text || *end_at || value < 0 || value > MAX_CALLS - 1)
        die("%s needs a number from 0 to 31 (a fraction is a chance)", option);
    return (uint64_t)(value * 1000 + 0.5);
}

static const char usage[] =
    "usage: longtrace [OPTIONS] [-o OUT]     (OUT: a file, or - for standard output)\n"
    "  --form json|pftrace   the form (default: .pftrace for an OUT so named, else json)\n"
    "  --frames N            frames to write (default 1000)\n"
    "  --size SIZE           instead: frames until the output has SIZE bytes (K, M, G)\n"
    "  --seed S              the same seed, the same events in either form (default 1)\n"
    "  --calls C             calls a frame makes besides its marker (default 3; a fraction is a chance)\n"
    "  --events E            idle libusb event-handling ranges a frame (default 8)\n"
    "  --frame-us U          a frame's usual length (default 4000)\n"
    "  --budget-us B         the frame budget: longer frames get a mark (default 1.25 x --frame-us)\n"
    "  --pid P|self          the process the trace names (default 4242; self: this one)\n"
    "  --flush frame|buffer  buffers go to the file at every frame's end and when full, or only full\n"
    "  --rate MB             write at MB megabytes a second (once the output has --steady-from bytes)\n"
    "  --steady-from SIZE\n"
    "  --expect FILE         write the figures nvtxshim report must print, as JSON\n";

static void parse(int argc, char **argv)
{
    bool form_given = false;
    int64_t budget_us = -1;
    for (int i = 1; i < argc; i++) {
        const char *option = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(option, "--help") || !strcmp(option, "-h")) {
            fputs(usage, stdout);
            exit(0);
        }
        if (!value)
            die("%s needs a value (--help)", option);
        i++;
        if (!strcmp(option, "--form")) {
            if (strcmp(value, "json") && strcmp(value, "pftrace"))
                die("--form is json or pftrace, not %s", value);
            settings.form = strcmp(value, "json") ? FORM_PFTRACE : FORM_JSON;
            form_given = true;
        } else if (!strcmp(option, "--frames")) {
            settings.frames = parse_size(value, option);
            settings.size = 0;
        } else if (!strcmp(option, "--size")) {
            settings.size = parse_size(value, option);
        } else if (!strcmp(option, "--seed")) {
            settings.seed = parse_size(value, option);
        } else if (!strcmp(option, "--calls")) {
            settings.calls_milli = parse_milli(value, option);
        } else if (!strcmp(option, "--events")) {
            settings.events_milli = parse_milli(value, option);
        } else if (!strcmp(option, "--frame-us")) {
            settings.frame_ns = (int64_t)parse_size(value, option) * US;
            if (settings.frame_ns < 100 * US || settings.frame_ns > 100 * MS)
                die("%s: --frame-us is 100 to 100000", value);
        } else if (!strcmp(option, "--budget-us")) {
            budget_us = (int64_t)parse_size(value, option);
        } else if (!strcmp(option, "--pid")) {
            settings.pid = !strcmp(value, "self") ? (uint32_t)getpid() : (uint32_t)parse_size(value, option);
        } else if (!strcmp(option, "--flush")) {
            if (strcmp(value, "frame") && strcmp(value, "buffer"))
                die("--flush is frame or buffer, not %s", value);
            settings.flush_frames = !strcmp(value, "frame");
        } else if (!strcmp(option, "--rate")) {
            settings.rate = (double)parse_size(value, option) * 1e6;
        } else if (!strcmp(option, "--steady-from")) {
            settings.steady_from = parse_size(value, option);
        } else if (!strcmp(option, "--expect")) {
            settings.expect = value;
        } else if (!strcmp(option, "-o")) {
            settings.out = value;
        } else {
            die("no option %s (--help)", option);
        }
    }
    size_t length = strlen(settings.out);
    if (!form_given && length > 8 && !strcmp(settings.out + length - 8, ".pftrace"))
        settings.form = FORM_PFTRACE;
    settings.budget_ns = budget_us >= 0 ? budget_us * US : settings.frame_ns * 5 / 4;
}

int main(int argc, char **argv)
{
    parse(argc, argv);
    rng_state = settings.seed;
    expecting = settings.expect != NULL;
    out.fd = strcmp(settings.out, "-") ? open(settings.out, O_WRONLY | O_CREAT | O_TRUNC, 0666) : 1;
    if (out.fd < 0)
        die("cannot write %s", settings.out);
    out.seekable = lseek(out.fd, 0, SEEK_CUR) >= 0;
    threads[LOOP] = (struct thread){.tid = settings.pid, .names = {"harness_physica", NULL}};
    threads[EVENTS] = (struct thread){.tid = settings.pid + 3, .names = {"harness_physica", "libusb events"}};

    /* The clock: a machine up for a few hours. */
    int64_t t = 11 * 3600 * 1000 * MS + uniform(0, 3600 * 1000 * MS);
    if (settings.form == FORM_JSON)
        out_put("[\n", 2);
    else
        pf_header(t);
    /* Before the loop: the device opened on the loop thread, the event thread idle. */
    t = loop_call(K_OPEN, t) + uniform(5 * US, 50 * US);
    int64_t events_end = t;
    for (int i = 0; i < 2; i++)
        events_end = idle_events(events_end + uniform(1 * US, 5 * US), uniform(50 * US, 500 * US));
    t = loop_call(K_CLAIM, t) + uniform(5 * US, 50 * US);
    if (t < events_end + 5 * US)
        t = events_end + 5 * US;
    emit_frame_records();

    uint64_t frame_id = ++next_id;
    emit(&(struct record){.op = OP_START, .thread = LOOP, .kind = K_FRAME, .t = t, .id = frame_id, .number = 1});
    for (uint64_t n = 1;; n++) {
        /* decided before the frame is made, so that --size's N frames are --frames N's */
        bool last = settings.size ? out.offset >= settings.size : n == settings.frames;
        int64_t f1 = make_frame(n, t, &events_end, last);
        /* the next marker call ends frame N and begins N+1 (frames.c): the end,
         * the mark of a frame over its budget, the next frame's start, a flush */
        emit(&(struct record){.op = OP_END, .thread = LOOP, .kind = K_FRAME, .t = f1, .id = frame_id, .number = n});
        if (f1 - t > settings.budget_ns)
            emit(&(struct record){.op = OP_MARK, .thread = LOOP, .kind = K_OVER_BUDGET,
                                  .t = f1 + uniform(2 * US, 6 * US), .number = n, .value = f1 - t});
        if (last)
            break;
        frame_id = ++next_id;
        emit(&(struct record){.op = OP_START, .thread = LOOP, .kind = K_FRAME, .t = f1, .id = frame_id,
                              .number = n + 1});
        if (settings.flush_frames)
            flush_all();
        t = f1;
    }
    /* The finish: every buffer, then the JSON form's closer in place of the last comma. */
    flush_all();
    if (settings.form == FORM_JSON && out.seekable) {
        out_drain();
        if (pwrite(out.fd, " ", 1, (off_t)out.offset - 2) != 1)
            die("cannot write the trace: %s", strerror(errno));
        out_stage("]\n", 2);
    } else if (settings.form == FORM_JSON && out.held_count == 2 && out.held[0] == ',') {
        out.held_count = 0;
        out_stage(" \n]\n", 4);
    } else {
        out_stage(out.held, out.held_count);
    }
    out_drain();
    if (out.fd != 1 && close(out.fd) != 0)
        die("cannot write %s", settings.out);
    if (settings.expect)
        write_expected(settings.expect, next_id);
    return 0;
}
