/* NVTX injection tool that writes Chrome Trace Event Format JSON.
 *
 * Every NVTX instance in the process (ours and the program's) finds this
 * library through NVTX_INJECTION64_PATH and calls InitializeInjectionNvtx2,
 * where we fill its function table.
 *
 * The file is written through shared mappings: each recording thread owns a
 * chunk of the file, filled with spaces when it is reserved, and appends whole
 * events to it, so every event is in the file (the page cache) the moment it
 * is written. A process that dies of a signal or leaves through _exit leaves a
 * trace that lacks only its closing "]}". The hot path formats by hand into the
 * mapping: no lock, no system call, no allocation; one atomic exchange per
 * event written, so that exit can take each thread's chunk between two events.
 * Where the path is not a regular file (a FIFO), chunks are private buffers
 * written out when full. */
#define _GNU_SOURCE
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include <nvtx3/nvToolsExt.h>

#include "config.h"
#include "log.h"

#define CHUNK_BYTES (256u * 1024u)  /* a thread's share of the file, mapped */
#define PRIVATE_BYTES (64u * 1024u) /* a thread's buffer where the file cannot be mapped */
#define EVENT_MAX 1536u             /* one event's JSON, at most */
#define METADATA_MAX 256u           /* a thread-name event, at most */
#define NAME_MAX_BYTES 256u         /* a message, JSON-escaped, at most */
#define STACK_DEPTH 64
#define OPEN_RANGES 4096u
#define EXTRA_MAX 384u              /* extra JSON members of a start/end range's args */
#define CATEGORIES 64u
#define CATEGORY_BYTES 48u
#define TAKE_ATTEMPTS 100000u       /* yields before exit gives up on a thread's chunk */

struct category {
    _Atomic uint8_t length;         /* 0: unnamed; set once, after the text */
    char text[CATEGORY_BYTES];      /* JSON-escaped */
};

struct domain {
    struct domain *next;
    uint32_t name_length;
    char name[NAME_MAX_BYTES];      /* JSON-escaped */
    struct category categories[CATEGORIES];
};

/* A complete event's fixed text for a registered name in one domain, category
 * and colour (the library's own ranges always use a name so): everything but
 * the times, the thread and the payload, blank-padded to be copied 32 bytes at
 * a time. Made once, by the first thread to write the name. */
#define SHAPE_PREFIX 192u           /* multiples of 32 */
#define SHAPE_ARGS 128u

enum shape_state { SHAPE_UNMADE, SHAPE_MAKING, SHAPE_MADE };

struct shape {
    _Atomic uint32_t state;
    uint32_t category;
    uint32_t color;
    uint32_t generation;            /* category_generation when made */
    const struct domain *domain;
    uint32_t prefix_length;
    uint32_t args_length;
    char prefix[SHAPE_PREFIX];      /* {"name":"N","cat":"D","ph":"X","ts": */
    char args[SHAPE_ARGS];          /* ,"args":{"color":"#..","category":".." */
};

struct registered_string {
    struct registered_string *next; /* every one stays on registered_strings */
    uint32_t length;
    char text[NAME_MAX_BYTES];      /* JSON-escaped */
    struct shape shape;
};

/* NVTX has no call that releases a registered string: the tool keeps each one
 * for the life of the process, on this list, so that it stays reachable (a
 * program may drop its handle; a leak checker must not see the tool lose it). */
static _Atomic(struct registered_string *) registered_strings;

/* What a range carries from its start to its end. */
struct range {
    uint64_t start_ns;
    const struct domain *domain;
    const struct registered_string *registered;     /* NULL: the name is inline */
    uint32_t category;
    uint32_t color;
    int32_t payload_type;
    uint32_t inline_length;
    uint64_t payload;               /* raw bits of the NVTX payload */
    char inline_name[NAME_MAX_BYTES];
};

struct thread_buffer {
    struct thread_buffer *next;     /* all buffers, under state.lock */
    atomic_flag busy;               /* held by the owner while it writes an event */
    bool in_use;                    /* has an owner thread */
    bool named;                     /* its thread-name event is written */
    bool mapped;                    /* DATA maps the file at OFFSET */
    uint32_t tid;
    char *data;                     /* the current chunk */
    size_t used;
    size_t size;
    off_t offset;
    char *memory;                   /* the private buffer, where the file is not mapped */
    uint32_t ids_length;
    char ids[64];                   /* ,"pid":P,"tid":T, blank-padded */
    uint64_t ts_high;               /* the last timestamp's microseconds / 10000 ... */
    uint32_t ts_high_length;
    char ts_high_text[64];          /* ... as text, blank-padded */
    int depth;
    struct range stack[STACK_DEPTH];
};

struct open_range {
    atomic_uint state;              /* 0 free, 1 claimed */
    uint32_t generation;
    uint32_t ids_length;
    char ids[64];                   /* the starting thread's ,"pid":P,"tid":T, blank-padded */
    struct range range;
    char extra[EXTRA_MAX];          /* more "args" members, from nvs_record_range_args */
};

static struct {
    pthread_mutex_t lock;           /* the file, the buffer list, the domain list */
    bool enabled;
    atomic_bool finished;
    char path_template[NVS_PATH_MAX];
    char path[NVS_PATH_MAX];
    int fd;                         /* -1 until the first event */
    bool seekable;                  /* a regular file: positioned writes, truncation */
    bool mappable;                  /* chunks are mappings of the file */
    off_t file_size;                /* bytes written or reserved */
    off_t end_before_terminator;
    off_t removed_comma;            /* where finish blanked the last event's comma, or -1 */
    pid_t pid;
    bool forked_child;
    struct thread_buffer *buffers;
    struct domain *domains;
    struct domain default_domain;
    atomic_uint next_open;
} state = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .fd = -1,
    .removed_comma = -1,
    .default_domain = { .name_length = 7, .name = "default" },
};

static struct open_range open_ranges[OPEN_RANGES];
/* Bumped when a category is named: shapes made before then are remade. */
static atomic_uint category_generation;
static pthread_key_t buffer_key;
static __thread struct thread_buffer *my_buffer __attribute__((tls_model("initial-exec")));

/* ---- text ---------------------------------------------------------------- */

static size_t escape_json(char *out, size_t size, const char *text)
{
    static const char hex[] = "0123456789abcdef";
    size_t used = 0;
    for (const unsigned char *c = (const unsigned char *)(text ? text : ""); *c; c++) {
        char piece[6];
        size_t length = 1;
        piece[0] = (char)*c;
        if (*c == '"' || *c == '\\') {
            piece[0] = '\\';
            piece[1] = (char)*c;
            length = 2;
        } else if (*c < 0x20) {
            memcpy(piece, "\\u00", 4);
            piece[4] = hex[*c >> 4];
            piece[5] = hex[*c & 15];
            length = 6;
        }
        if (used + length + 1 > size)
            break;
        memcpy(out + used, piece, length);
        used += length;
    }
    out[used] = '\0';
    return used;
}

/* wchar_t is UTF-32 on Linux; NVTX's W functions take it. */
static void wide_to_utf8(char *out, size_t size, const wchar_t *text)
{
    size_t used = 0;
    for (; text && *text; text++) {
        uint32_t c = (uint32_t)*text;
        unsigned char bytes[4];
        size_t length;
        if (c < 0x80) { bytes[0] = (unsigned char)c; length = 1; }
        else if (c < 0x800) { bytes[0] = 0xc0 | (c >> 6); bytes[1] = 0x80 | (c & 0x3f); length = 2; }
        else if (c < 0x10000) { bytes[0] = 0xe0 | (c >> 12); bytes[1] = 0x80 | ((c >> 6) & 0x3f);
                                bytes[2] = 0x80 | (c & 0x3f); length = 3; }
        else { bytes[0] = 0xf0 | (c >> 18); bytes[1] = 0x80 | ((c >> 12) & 0x3f);
               bytes[2] = 0x80 | ((c >> 6) & 0x3f); bytes[3] = 0x80 | (c & 0x3f); length = 4; }
        if (used + length + 1 > size)
            break;
        memcpy(out + used, bytes, length);
        used += length;
    }
    out[used] = '\0';
}

static uint64_t now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

/* ---- formatting: by hand, straight into the chunk -------------------------- */

static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static inline char *put(char *out, const char *text, size_t length)
{
    memcpy(out, text, length);
    return out + length;
}

#define PUT_LITERAL(out, literal) put((out), (literal), sizeof(literal) - 1)

static unsigned decimal_digits(uint64_t value)
{
    unsigned digits = 1;
    for (; value >= 10000; value /= 10000)
        digits += 4;
    return digits + (value >= 10) + (value >= 100) + (value >= 1000);
}

static char *put_u64(char *out, uint64_t value)
{
    char *end = out + decimal_digits(value), *at = end;
    while (value >= 100) {
        unsigned pair = (unsigned)(value % 100);
        value /= 100;
        at -= 2;
        memcpy(at, digit_pairs + 2 * pair, 2);
    }
    if (value >= 10)
        memcpy(at - 2, digit_pairs + 2 * value, 2);
    else
        at[-1] = (char)('0' + value);
    return end;
}

static char *put_i64(char *out, int64_t value)
{
    if (value < 0) {
        *out++ = '-';
        return put_u64(out, 0 - (uint64_t)value);
    }
    return put_u64(out, (uint64_t)value);
}

/* Nanoseconds as microseconds with three decimals, as Chrome traces count. */
static char *put_time(char *out, uint64_t ns)
{
    out = put_u64(out, ns / 1000);
    unsigned rest = (unsigned)(ns % 1000);
    *out++ = '.';
    *out++ = (char)('0' + rest / 100);
    memcpy(out, digit_pairs + 2 * (rest % 100), 2);
    return out + 2;
}

static char *put_ids(char *out, pid_t pid, uint32_t tid)
{
    out = PUT_LITERAL(out, ",\"pid\":");
    out = put_i64(out, pid);
    out = PUT_LITERAL(out, ",\"tid\":");
    return put_u64(out, tid);
}

static char *put_payload(char *out, const struct range *range)
{
    char text[48];
    switch (range->payload_type) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: return put_u64(out, range->payload);
    case NVTX_PAYLOAD_TYPE_INT64:          return put_i64(out, (int64_t)range->payload);
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: return put_u64(out, (uint32_t)range->payload);
    case NVTX_PAYLOAD_TYPE_INT32:          return put_i64(out, (int32_t)(uint32_t)range->payload);
    case NVTX_PAYLOAD_TYPE_DOUBLE: {
        double value;
        memcpy(&value, &range->payload, sizeof value);
        snprintf(text, sizeof text, "%.17g", value);
        break;
    }
    case NVTX_PAYLOAD_TYPE_FLOAT: {
        float value;
        uint32_t bits = (uint32_t)range->payload;
        memcpy(&value, &bits, sizeof value);
        snprintf(text, sizeof text, "%.9g", (double)value);
        break;
    }
    default:
        return out;
    }
    /* JSON has no inf or nan: those go out as strings. */
    bool number = strspn(text, "0123456789+-.e") == strlen(text);
    if (!number)
        *out++ = '"';
    out = put(out, text, strlen(text));
    if (!number)
        *out++ = '"';
    return out;
}

static bool has_payload(const struct range *range)
{
    switch (range->payload_type) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: case NVTX_PAYLOAD_TYPE_INT64:
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: case NVTX_PAYLOAD_TYPE_INT32:
    case NVTX_PAYLOAD_TYPE_DOUBLE: case NVTX_PAYLOAD_TYPE_FLOAT:
        return true;
    default:
        return false;
    }
}

/* ,"args":{...}: payload, colour (marks only: a red mark is a problem; a
 * range's colour is the viewer's business, and bytes cost), category name (or
 * number), then EXTRA. */
static char *put_args(char *out, const struct range *range, const char *extra, bool color)
{
    static const char hex[] = "0123456789abcdef";
    out = PUT_LITERAL(out, ",\"args\":{");
    char *first = out;
    if (has_payload(range)) {
        out = PUT_LITERAL(out, "\"payload\":");
        out = put_payload(out, range);
    }
    if (color && range->color) {
        if (out != first)
            *out++ = ',';
        out = PUT_LITERAL(out, "\"color\":\"#");
        for (int shift = 20; shift >= 0; shift -= 4)
            *out++ = hex[(range->color >> shift) & 15];
        *out++ = '"';
    }
    if (range->category) {
        if (out != first)
            *out++ = ',';
        out = PUT_LITERAL(out, "\"category\":");
        const struct category *category =
            range->category < CATEGORIES ? &range->domain->categories[range->category] : NULL;
        uint8_t length = category ? atomic_load_explicit(&category->length, memory_order_acquire) : 0;
        if (length) {
            *out++ = '"';
            out = put(out, category->text, length);
            *out++ = '"';
        } else {
            out = put_u64(out, range->category);
        }
    }
    if (extra && extra[0]) {
        if (out != first)
            *out++ = ',';
        out = put(out, extra, strnlen(extra, EXTRA_MAX));
    }
    *out++ = '}';
    return out;
}

static char *put_name(char *out, const struct range *range)
{
    if (range->registered)
        return put(out, range->registered->text, range->registered->length);
    return put(out, range->inline_name, range->inline_length);
}

/* ---- the file -------------------------------------------------------------- */

static bool write_at(const char *data, size_t length, off_t offset)
{
    while (length > 0) {
        ssize_t written = state.seekable ? pwrite(state.fd, data, length, offset)
                                         : write(state.fd, data, length);
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0)
            return false;
        data += written;
        offset += written;
        length -= (size_t)written;
    }
    return true;
}

/* Appends at the end of what is written or reserved; with state.lock held. */
static void append_to_file(const char *data, size_t length)
{
    if (write_at(data, length, state.file_size))
        state.file_size += (off_t)length;
}

/* LENGTH spaces at OFFSET; with state.lock held. */
static bool write_blanks(off_t offset, size_t length)
{
    static char blanks[64 * 1024];
    if (blanks[0] != ' ')
        memset(blanks, ' ', sizeof blanks);
    for (size_t done = 0; done < length; done += sizeof blanks) {
        size_t piece = length - done < sizeof blanks ? length - done : sizeof blanks;
        if (!write_at(blanks, piece, offset + (off_t)done))
            return false;
    }
    return true;
}

/* %p -> pid, %% -> %; a forked child without %p writes NAME.PID.EXT. */
static void expand_path(char *out, size_t size, const char *template, pid_t pid, bool child)
{
    size_t used = 0;
    bool had_pid = false;
    for (const char *c = template; *c && used + 24 < size; c++) {
        if (c[0] == '%' && c[1] == 'p') {
            used += (size_t)snprintf(out + used, size - used, "%d", (int)pid);
            had_pid = true;
            c++;
        } else if (c[0] == '%' && c[1] == '%') {
            out[used++] = '%';
            c++;
        } else {
            out[used++] = *c;
        }
    }
    out[used] = '\0';
    if (child && !had_pid) {
        char *slash = strrchr(out, '/');
        char *dot = strrchr(out, '.');
        char extension[64] = "";
        if (dot && (!slash || dot > slash) && strlen(dot) < sizeof extension) {
            strcpy(extension, dot);
            *dot = '\0';
        }
        size_t length = strlen(out);
        snprintf(out + length, size - length, ".%d%s", (int)pid, extension);
    }
}

static int format_metadata(char *line, size_t size, const char *name, uint32_t tid,
                           const char *value)
{
    char escaped[NAME_MAX_BYTES];
    escape_json(escaped, sizeof escaped, value);
    return snprintf(line, size, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,"
                    "\"args\":{\"name\":\"%s\"}},\n", name, (int)state.pid, tid, escaped);
}

/* Creates the file at the first event; with state.lock held. The file gets the
 * user's umask, and a symbolic link in its place is refused, not followed. */
static bool ensure_file(void)
{
    if (state.fd >= 0)
        return true;
    expand_path(state.path, sizeof state.path, state.path_template, state.pid, state.forked_child);
    int fd = open(state.path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
    struct stat status;
    if (fd < 0 || fstat(fd, &status) != 0) {
        const char *why = errno == ELOOP ? "it is a symbolic link" : strerror(errno);
        nvs_log_info("NVTXSHIM_TRACE: cannot write %s: %s; no trace is recorded\n", state.path, why);
        if (fd >= 0)
            close(fd);
        state.enabled = false;
        return false;
    }
    state.fd = fd;
    state.seekable = state.mappable = S_ISREG(status.st_mode);
    state.file_size = 0;
    char header[NAME_MAX_BYTES + 128];
    static const char start[] = "{\"traceEvents\":[\n";
    memcpy(header, start, sizeof start - 1);
    int length = format_metadata(header + sizeof start - 1, sizeof header - (sizeof start - 1),
                                 "process_name", (uint32_t)state.pid, program_invocation_short_name);
    append_to_file(header, sizeof start - 1 + (size_t)length);
    if (state.mappable) {
        /* Chunks are mapped at page boundaries: blanks up to the first. */
        long page = sysconf(_SC_PAGESIZE);
        off_t first = page > 0 && CHUNK_BYTES % (unsigned long)page == 0 ? page : CHUNK_BYTES;
        if (first < state.file_size ||
            !write_blanks(state.file_size, (size_t)(first - state.file_size)))
            state.mappable = false;
        else
            state.file_size = first;
    }
    return true;
}

static void drop_chunk(struct thread_buffer *buffer)
{
    if (buffer->mapped)
        munmap(buffer->data, buffer->size);
    buffer->mapped = false;
    buffer->data = NULL;
    buffer->size = buffer->used = 0;
}

/* Gives BUFFER room for more events: the next chunk of the file, or its private
 * buffer written out. The owner holds BUFFER->busy. False: no more recording. */
static bool next_chunk(struct thread_buffer *buffer)
{
    void *mapping = MAP_FAILED;
    pthread_mutex_lock(&state.lock);
    if (!buffer->mapped && buffer->used && state.fd >= 0)
        append_to_file(buffer->data, buffer->used);
    drop_chunk(buffer);
    bool ready = state.enabled && ensure_file();
    if (ready && state.mappable) {
        off_t offset = state.file_size;
        /* Spaces, not holes: the file is valid JSON up to its last event at
         * any moment. Written, not stored through the mapping: the pages are
         * then in the cache when mapped (each still takes one write fault, for
         * the kernel's dirty tracking); measured faster than ftruncate and a
         * memset of the mapping, with or without MADV_POPULATE_WRITE. */
        if (write_blanks(offset, CHUNK_BYTES))
            mapping = mmap(NULL, CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                           state.fd, offset);
        if (mapping != MAP_FAILED) {
            state.file_size = offset + CHUNK_BYTES;
            buffer->offset = offset;
        } else {
            /* No mapping (no space, a file system without mmap): write instead. */
            if (ftruncate(state.fd, offset) != 0)
                state.file_size = lseek(state.fd, 0, SEEK_END);
            state.mappable = false;
        }
    }
    pthread_mutex_unlock(&state.lock);
    if (!ready)
        return false;
    if (mapping != MAP_FAILED) {
        buffer->data = mapping;
        buffer->size = CHUNK_BYTES;
        buffer->mapped = true;
        return true;
    }
    if (!buffer->memory && !(buffer->memory = malloc(PRIVATE_BYTES)))
        return false;
    buffer->data = buffer->memory;
    buffer->size = PRIVATE_BYTES;
    return true;
}

/* ---- per-thread buffers ------------------------------------------------------ */

static void set_ids(struct thread_buffer *buffer)
{
    memset(buffer->ids, ' ', sizeof buffer->ids);
    buffer->ids_length = (uint32_t)(put_ids(buffer->ids, state.pid, buffer->tid) - buffer->ids);
    buffer->ts_high = 0;
}

/* Takes BUFFER from its owner between two events, for exit. False when it is
 * our own, interrupted mid-event by a signal handler that exits, or when its
 * owner does not finish its event in time (stopped by a debugger). */
static bool take(struct thread_buffer *buffer)
{
    if (!atomic_flag_test_and_set_explicit(&buffer->busy, memory_order_acquire))
        return true;
    if (buffer == my_buffer)
        return false;
    for (unsigned attempt = 0; attempt < TAKE_ATTEMPTS; attempt++) {
        sched_yield();
        if (!atomic_flag_test_and_set_explicit(&buffer->busy, memory_order_acquire))
            return true;
    }
    return false;
}

static void give_back(struct thread_buffer *buffer)
{
    atomic_flag_clear_explicit(&buffer->busy, memory_order_release);
}

static void release_buffer(void *opaque)
{
    struct thread_buffer *buffer = opaque;
    bool taken = take(buffer);
    pthread_mutex_lock(&state.lock);
    if (taken && !buffer->mapped && buffer->used && state.fd >= 0 &&
        !atomic_load(&state.finished)) {
        append_to_file(buffer->data, buffer->used);
        buffer->used = 0;
    }
    /* A mapped chunk stays with the buffer: the next thread goes on filling it. */
    buffer->in_use = false;
    pthread_mutex_unlock(&state.lock);
    if (taken)
        give_back(buffer);
    my_buffer = NULL;
}

static struct thread_buffer *acquire_buffer(void)
{
    if (my_buffer)
        return my_buffer;
    struct thread_buffer *buffer = NULL;
    pthread_mutex_lock(&state.lock);
    for (struct thread_buffer *b = state.buffers; b; b = b->next) {
        if (!b->in_use) { buffer = b; break; }
    }
    if (!buffer) {
        buffer = calloc(1, sizeof *buffer);
        if (buffer) {
            buffer->next = state.buffers;
            state.buffers = buffer;
        }
    }
    if (buffer) {
        buffer->in_use = true;
        buffer->tid = (uint32_t)syscall(SYS_gettid);
        buffer->named = false;
        buffer->depth = 0;
        set_ids(buffer);
    }
    pthread_mutex_unlock(&state.lock);
    if (buffer) {
        pthread_setspecific(buffer_key, buffer);
        my_buffer = buffer;
    }
    return buffer;
}

/* Takes the calling thread's buffer, with room, for one event; NULL when
 * recording stopped. The caller writes at data + used, then end_event(). */
static inline __attribute__((always_inline)) struct thread_buffer *begin_event(void)
{
    if (!state.enabled)
        return NULL;
    struct thread_buffer *buffer = my_buffer ? my_buffer : acquire_buffer();
    if (!buffer)
        return NULL;
    while (atomic_flag_test_and_set_explicit(&buffer->busy, memory_order_acquire))
        ;   /* only exit takes it, between two of our events */
    if (atomic_load_explicit(&state.finished, memory_order_relaxed) ||
        (buffer->size - buffer->used < EVENT_MAX + METADATA_MAX && !next_chunk(buffer))) {
        give_back(buffer);
        return NULL;
    }
    if (!buffer->named) {
        char name[17] = "";
        buffer->named = true;
        prctl(PR_GET_NAME, name, 0, 0, 0);
        buffer->used += (size_t)format_metadata(buffer->data + buffer->used, METADATA_MAX,
                                                "thread_name", buffer->tid, name);
    }
    return buffer;
}

static void end_event(struct thread_buffer *buffer, char *end)
{
    buffer->used = (size_t)(end - buffer->data);
    give_back(buffer);
}

/* ---- events ------------------------------------------------------------------- */

static void capture(struct range *range, const struct domain *domain,
                    const nvtxEventAttributes_t *attributes)
{
    range->domain = domain ? domain : &state.default_domain;
    range->registered = NULL;
    range->category = 0;
    range->color = 0;
    range->payload_type = NVTX_PAYLOAD_UNKNOWN;
    range->payload = 0;
    range->inline_length = 0;
    if (!attributes)
        return;
    range->category = attributes->category;
    range->color = attributes->colorType == NVTX_COLOR_ARGB ? attributes->color & 0xffffffu : 0;
    range->payload_type = attributes->payloadType;
    range->payload = attributes->payload.ullValue;
    char utf8[NAME_MAX_BYTES];
    switch (attributes->messageType) {
    case NVTX_MESSAGE_TYPE_REGISTERED:
        if (attributes->message.registered)
            range->registered = (const struct registered_string *)attributes->message.registered;
        break;
    case NVTX_MESSAGE_TYPE_ASCII:
        range->inline_length = (uint32_t)escape_json(range->inline_name, sizeof range->inline_name,
                                                     attributes->message.ascii);
        break;
    case NVTX_MESSAGE_TYPE_UNICODE:
        wide_to_utf8(utf8, sizeof utf8, attributes->message.unicode);
        range->inline_length = (uint32_t)escape_json(range->inline_name, sizeof range->inline_name,
                                                     utf8);
        break;
    default:
        break;
    }
}

static void capture_text(struct range *range, const char *text)
{
    capture(range, NULL, NULL);
    range->inline_length = (uint32_t)escape_json(range->inline_name, sizeof range->inline_name, text);
}

/* {"name":"NAME","cat":"DOMAIN","ph": at OUT: the start of every event. */
static char *put_head(char *out, const struct range *range)
{
    out = PUT_LITERAL(out, "{\"name\":\"");
    out = put_name(out, range);
    out = PUT_LITERAL(out, "\",\"cat\":\"");
    out = put(out, range->domain->name, range->domain->name_length);
    return PUT_LITERAL(out, "\",\"ph\":");
}

/* {"name":...,"ph":"X",...},\n at OUT; IDS is ,"pid":P,"tid":T. */
static char *put_complete(char *out, const struct range *range, const char *ids, size_t ids_length,
                          uint64_t end_ns, const char *extra)
{
    out = put_head(out, range);
    out = PUT_LITERAL(out, "\"X\",\"ts\":");
    out = put_time(out, range->start_ns);
    out = PUT_LITERAL(out, ",\"dur\":");
    out = put_time(out, end_ns > range->start_ns ? end_ns - range->start_ns : 0);
    out = put(out, ids, ids_length);
    out = put_args(out, range, extra, false);
    return PUT_LITERAL(out, "},\n");
}

/* SOURCE's LENGTH bytes to OUT, for a piece under 32 bytes (a thread's ids,
 * the high digits of a timestamp) blank-padded to 32. */
static inline char *copy_short(char *out, const char *source, size_t length)
{
    memcpy(out, source, 32);
    return out + length;
}

/* SOURCE's LENGTH bytes to OUT, 64 at once, then 32 at a time: SOURCE is
 * blank after LENGTH up to at least 64 bytes or the next multiple of 32, and
 * OUT has room to spare, which stays blank. */
static inline char *copy_padded(char *out, const char *source, size_t length)
{
    memcpy(out, source, 64);
    for (size_t at = 64; at < length; at += 32)
        memcpy(out + at, source + at, 32);
    return out + length;
}

/* A duration: most are under 10 ms, four digits at most before the point. */
static inline __attribute__((always_inline)) char *put_duration(char *out, uint64_t ns)
{
    if (ns >= 10000000)
        return put_time(out, ns);
    unsigned us = (unsigned)(ns / 1000), rest = (unsigned)(ns % 1000);
    if (us >= 1000) {
        memcpy(out, digit_pairs + 2 * (us / 100), 2);
        memcpy(out + 2, digit_pairs + 2 * (us % 100), 2);
        out += 4;
    } else if (us >= 100) {
        *out = (char)('0' + us / 100);
        memcpy(out + 1, digit_pairs + 2 * (us % 100), 2);
        out += 3;
    } else if (us >= 10) {
        memcpy(out, digit_pairs + 2 * us, 2);
        out += 2;
    } else {
        *out++ = (char)('0' + us);
    }
    out[0] = '.';
    out[1] = (char)('0' + rest / 100);
    memcpy(out + 2, digit_pairs + 2 * (rest % 100), 2);
    return out + 4;
}

/* The shape of RANGE, made when missing; NULL when its name is not registered,
 * too long, or written with other attributes than those it was made with. */
static inline __attribute__((always_inline)) const struct shape *shape_of(const struct range *range)
{
    if (!range->registered)
        return NULL;
    struct shape *shape = (struct shape *)&range->registered->shape;
    uint32_t generation = atomic_load_explicit(&category_generation, memory_order_acquire);
    uint32_t expected = SHAPE_UNMADE;
    uint32_t now = atomic_load_explicit(&shape->state, memory_order_acquire);
    if (now == SHAPE_UNMADE &&
        atomic_compare_exchange_strong_explicit(&shape->state, &expected, SHAPE_MAKING,
                                                memory_order_acquire, memory_order_relaxed)) {
        struct range fixed = *range;
        fixed.payload_type = NVTX_PAYLOAD_UNKNOWN;
        char args[256 + EXTRA_MAX];
        char *end = put_args(args, &fixed, NULL, false) - 1;      /* without its closing brace */
        now = SHAPE_UNMADE;
        if (range->registered->length + range->domain->name_length + 48 <= SHAPE_PREFIX &&
            (size_t)(end - args) <= SHAPE_ARGS) {
            memset(shape->prefix, ' ', sizeof shape->prefix);
            memset(shape->args, ' ', sizeof shape->args);
            char *out = put_head(shape->prefix, range);
            out = PUT_LITERAL(out, "\"X\",\"ts\":");
            shape->prefix_length = (uint32_t)(out - shape->prefix);
            shape->args_length = (uint32_t)(end - args);
            memcpy(shape->args, args, shape->args_length);
            shape->domain = range->domain;
            shape->category = range->category;
            shape->color = range->color;
            shape->generation = generation;
            now = SHAPE_MADE;
        }
        /* Too long: it stays "making", and its ranges take the general way. */
        if (now == SHAPE_MADE)
            atomic_store_explicit(&shape->state, SHAPE_MADE, memory_order_release);
    }
    if (now == SHAPE_MADE && shape->domain == range->domain &&
        shape->category == range->category && shape->color == range->color &&
        shape->generation == generation)
        return shape;
    return NULL;
}

/* A timestamp, the part above 10 ms reused from the thread's last one. */
static inline __attribute__((always_inline)) char *put_timestamp(struct thread_buffer *buffer, char *out, uint64_t ns)
{
    uint64_t us = ns / 1000, high = us / 10000;
    unsigned low = (unsigned)(us % 10000), rest = (unsigned)(ns % 1000);
    if (high == 0)
        return put_time(out, ns);
    if (high != buffer->ts_high) {
        buffer->ts_high = high;
        buffer->ts_high_length = (uint32_t)(put_u64(buffer->ts_high_text, high) -
                                            buffer->ts_high_text);
        memset(buffer->ts_high_text + buffer->ts_high_length, ' ',
               sizeof buffer->ts_high_text - buffer->ts_high_length);
    }
    out = copy_short(out, buffer->ts_high_text, buffer->ts_high_length);
    memcpy(out, digit_pairs + 2 * (low / 100), 2);
    memcpy(out + 2, digit_pairs + 2 * (low % 100), 2);
    out[4] = '.';
    out[5] = (char)('0' + rest / 100);
    memcpy(out + 6, digit_pairs + 2 * (rest % 100), 2);
    return out + 8;
}

/* RANGE ended at END_NS, on the thread whose IDS (blank-padded to 64) are
 * given; EXTRA: more args members, or NULL. */
static inline __attribute__((always_inline)) char *put_range(
    struct thread_buffer *buffer, const struct range *range, uint64_t end_ns, const char *ids,
    size_t ids_length, const char *extra)
{
    char *out = buffer->data + buffer->used;
    const struct shape *shape = extra && extra[0] ? NULL : shape_of(range);
    if (!shape)
        return put_complete(out, range, ids, ids_length, end_ns, extra);
    out = copy_padded(out, shape->prefix, shape->prefix_length);
    out = put_timestamp(buffer, out, range->start_ns);
    out = PUT_LITERAL(out, ",\"dur\":");
    out = put_duration(out, end_ns > range->start_ns ? end_ns - range->start_ns : 0);
    out = copy_short(out, ids, ids_length);
    out = copy_padded(out, shape->args, shape->args_length);
    if (range->payload_type == NVTX_PAYLOAD_TYPE_UNSIGNED_INT64 || has_payload(range)) {
        if (out[-1] != '{')
            *out++ = ',';
        out = PUT_LITERAL(out, "\"payload\":");
        out = range->payload_type == NVTX_PAYLOAD_TYPE_UNSIGNED_INT64 ?
              put_u64(out, range->payload) : put_payload(out, range);
    }
    return PUT_LITERAL(out, "}},\n");
}

/* A range ended on the thread whose IDS (blank-padded to 64) are given, not
 * necessarily the caller's. */
static void write_complete(const struct range *range, const char *ids, size_t ids_length,
                           uint64_t end_ns, const char *extra)
{
    struct thread_buffer *buffer = begin_event();
    if (buffer)
        end_event(buffer, put_range(buffer, range, end_ns, ids, ids_length, extra));
}

/* The part of SOURCE that is set: the inline name only when there is one. */
static void copy_range(struct range *target, const struct range *source)
{
    memcpy(target, source, offsetof(struct range, inline_name));
    if (!source->registered)
        memcpy(target->inline_name, source->inline_name, source->inline_length + 1);
}

static void mark(const struct range *mark)
{
    struct thread_buffer *buffer = begin_event();
    if (!buffer)
        return;
    char *out = buffer->data + buffer->used;
    out = put_head(out, mark);
    out = PUT_LITERAL(out, "\"i\",\"s\":\"t\",\"ts\":");
    out = put_time(out, mark->start_ns);
    out = put(out, buffer->ids, buffer->ids_length);
    out = put_args(out, mark, NULL, true);
    end_event(buffer, PUT_LITERAL(out, "},\n"));
}

/* The calling thread's next range-stack slot, its level in *LEVEL (-1 while
 * not recording); NULL when there is none to fill (deeper than the stack keeps:
 * the level still counts, for the pop). */
static inline struct range *next_stack_slot(int *level)
{
    struct thread_buffer *buffer = NULL;
    if (state.enabled)
        buffer = my_buffer ? my_buffer : acquire_buffer();
    if (!buffer) {
        *level = -1;
        return NULL;
    }
    *level = buffer->depth++;
    return *level < STACK_DEPTH ? &buffer->stack[*level] : NULL;
}

static int push(const struct domain *domain, const nvtxEventAttributes_t *attributes,
                const char *text)
{
    int level;
    struct range *range = next_stack_slot(&level);
    if (range) {
        if (text)
            capture_text(range, text);
        else
            capture(range, domain, attributes);
        range->start_ns = now_ns();     /* last: the range holds as little of ours as can be */
    }
    return level;
}

static const struct domain *domain_of(nvtxDomainHandle_t handle)
{
    return handle ? (const struct domain *)handle : &state.default_domain;
}

/* The library's own ranges when this recorder is its NVTX tool: straight
 * here, without building NVTX attributes for NVTX to hand over. */
void nvs_record_push(nvtxDomainHandle_t domain, nvtxStringHandle_t name, const char *text,
                     uint32_t category, uint32_t color, bool has_payload, uint64_t payload)
{
    int level;
    struct range *range = next_stack_slot(&level);
    if (!range)
        return;
    range->domain = domain_of(domain);
    range->registered = (const struct registered_string *)name;
    range->category = category;
    range->color = color & 0xffffffu;
    range->payload_type = has_payload ? NVTX_PAYLOAD_TYPE_UNSIGNED_INT64 : NVTX_PAYLOAD_UNKNOWN;
    range->payload = payload;
    range->inline_length = name ? 0 : (uint32_t)escape_json(range->inline_name,
                                                            sizeof range->inline_name, text);
    range->start_ns = now_ns();
}

/* Pops the innermost range of DOMAIN on this thread. */
static int pop(const struct domain *domain)
{
    uint64_t end_ns = now_ns();
    struct thread_buffer *buffer = my_buffer;
    if (!state.enabled || !buffer || buffer->depth == 0)
        return -1;
    if (buffer->depth > STACK_DEPTH)
        return --buffer->depth;         /* deeper than we keep: counted, not written */
    for (int i = buffer->depth - 1; i >= 0; i--) {
        if (buffer->stack[i].domain != domain)
            continue;
        if (begin_event() == buffer)
            end_event(buffer, put_range(buffer, &buffer->stack[i], end_ns, buffer->ids,
                                        buffer->ids_length, NULL));
        if (i < buffer->depth - 1)
            memmove(&buffer->stack[i], &buffer->stack[i + 1],
                    (size_t)(buffer->depth - 1 - i) * sizeof buffer->stack[0]);
        return --buffer->depth;
    }
    return -1;
}

void nvs_record_pop(nvtxDomainHandle_t domain)
{
    pop(domain_of(domain));
}

/* Start/end ranges may end on another thread: they wait in a shared table,
 * and the id carries a generation so a stale end is ignored. */
static nvtxRangeId_t start(const struct range *range)
{
    if (!state.enabled || atomic_load(&state.finished))
        return 0;
    for (unsigned attempt = 0; attempt < OPEN_RANGES; attempt++) {
        unsigned index = atomic_fetch_add(&state.next_open, 1) % OPEN_RANGES;
        unsigned expected = 0;
        struct open_range *slot = &open_ranges[index];
        if (atomic_compare_exchange_strong(&slot->state, &expected, 1)) {
            slot->generation++;
            struct thread_buffer *buffer = my_buffer ? my_buffer : acquire_buffer();
            if (buffer) {
                memcpy(slot->ids, buffer->ids, sizeof slot->ids);
                slot->ids_length = buffer->ids_length;
            } else {
                memset(slot->ids, ' ', sizeof slot->ids);
                slot->ids_length = (uint32_t)(put_ids(slot->ids, state.pid, 0) - slot->ids);
            }
            copy_range(&slot->range, range);
            slot->extra[0] = '\0';
            return ((uint64_t)slot->generation << 32) | (index + 1);
        }
    }
    return 0;
}

static void end(nvtxRangeId_t id)
{
    uint64_t end_ns = now_ns();
    uint32_t index = (uint32_t)id - 1;
    if (id == 0 || index >= OPEN_RANGES)
        return;
    struct open_range *slot = &open_ranges[index];
    if (atomic_load(&slot->state) != 1 || slot->generation != (uint32_t)(id >> 32))
        return;
    write_complete(&slot->range, slot->ids, slot->ids_length, end_ns, slot->extra);
    atomic_store(&slot->state, 0);
}

void nvs_record_range_args(uint64_t id, const char *members)
{
    uint32_t index = (uint32_t)id - 1;
    if (!state.enabled || id == 0 || index >= OPEN_RANGES)
        return;
    struct open_range *slot = &open_ranges[index];
    if (atomic_load(&slot->state) == 1 && slot->generation == (uint32_t)(id >> 32))
        snprintf(slot->extra, sizeof slot->extra, "%s", members);
}

static struct domain *create_domain(const char *name);

void nvs_record_interval(const char *domain, const char *name, uint32_t tid, uint64_t start_ns,
                         uint64_t end_ns, const char *members)
{
    if (!state.enabled || atomic_load(&state.finished))
        return;
    struct range range;
    capture_text(&range, name);
    range.start_ns = start_ns;
    if (!(range.domain = create_domain(domain)))
        return;
    char ids[64];
    memset(ids, ' ', sizeof ids);
    size_t ids_length = (size_t)(put_ids(ids, state.pid, tid) - ids);
    write_complete(&range, ids, ids_length, end_ns, members);
}

/* ---- the NVTX entry points we provide ----------------------------------------- */

static struct domain *create_domain(const char *name)
{
    char escaped[NAME_MAX_BYTES];
    escape_json(escaped, sizeof escaped, name);
    pthread_mutex_lock(&state.lock);
    struct domain *domain = state.domains;
    while (domain && strcmp(domain->name, escaped))
        domain = domain->next;
    if (!domain && (domain = calloc(1, sizeof *domain))) {
        domain->name_length = (uint32_t)strlen(escaped);
        memcpy(domain->name, escaped, domain->name_length + 1);
        domain->next = state.domains;
        state.domains = domain;
    }
    pthread_mutex_unlock(&state.lock);
    return domain;
}


/* The first name given to a category is the one written. */
static void name_category(const struct domain *domain, uint32_t number, const char *name)
{
    if (number >= CATEGORIES)
        return;
    struct category *category = (struct category *)&domain->categories[number];
    pthread_mutex_lock(&state.lock);
    if (!atomic_load_explicit(&category->length, memory_order_relaxed)) {
        size_t length = escape_json(category->text, sizeof category->text, name);
        atomic_store_explicit(&category->length, (uint8_t)length, memory_order_release);
        atomic_fetch_add_explicit(&category_generation, 1, memory_order_release);
    }
    pthread_mutex_unlock(&state.lock);
}

static void NVTX_API mark_ex(const nvtxEventAttributes_t *a) { struct range r; capture(&r, NULL, a); r.start_ns = now_ns(); mark(&r); }
static void NVTX_API mark_a(const char *m) { struct range r; capture_text(&r, m); r.start_ns = now_ns(); mark(&r); }
static void NVTX_API mark_w(const wchar_t *m) { char t[NAME_MAX_BYTES]; wide_to_utf8(t, sizeof t, m); mark_a(t); }
static nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t *a) { struct range r; capture(&r, NULL, a); r.start_ns = now_ns(); return start(&r); }
static nvtxRangeId_t NVTX_API start_a(const char *m) { struct range r; capture_text(&r, m); r.start_ns = now_ns(); return start(&r); }
static nvtxRangeId_t NVTX_API start_w(const wchar_t *m) { char t[NAME_MAX_BYTES]; wide_to_utf8(t, sizeof t, m); return start_a(t); }
static void NVTX_API end_id(nvtxRangeId_t id) { end(id); }
static int NVTX_API push_ex(const nvtxEventAttributes_t *a) { return push(NULL, a, NULL); }
static int NVTX_API push_a(const char *m) { return push(NULL, NULL, m ? m : ""); }
static int NVTX_API push_w(const wchar_t *m) { char t[NAME_MAX_BYTES]; wide_to_utf8(t, sizeof t, m); return push_a(t); }
static int NVTX_API pop_default(void) { return pop(&state.default_domain); }
static void NVTX_API category_a(uint32_t c, const char *n) { name_category(&state.default_domain, c, n); }
static void NVTX_API category_w(uint32_t c, const wchar_t *n) { char t[CATEGORY_BYTES]; wide_to_utf8(t, sizeof t, n); category_a(c, t); }

static void NVTX_API name_thread_a(uint32_t tid, const char *name)
{
    struct thread_buffer *buffer = begin_event();
    if (!buffer)
        return;
    int length = format_metadata(buffer->data + buffer->used, EVENT_MAX,
                                 "thread_name", tid, name);
    end_event(buffer, buffer->data + buffer->used + length);
}
static void NVTX_API name_thread_w(uint32_t tid, const wchar_t *n) { char t[NAME_MAX_BYTES]; wide_to_utf8(t, sizeof t, n); name_thread_a(tid, t); }

static void NVTX_API domain_mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) { struct range r; capture(&r, domain_of(d), a); r.start_ns = now_ns(); mark(&r); }
static nvtxRangeId_t NVTX_API domain_start(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) { struct range r; capture(&r, domain_of(d), a); r.start_ns = now_ns(); return start(&r); }
static void NVTX_API domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id) { (void)d; end(id); }
static int NVTX_API domain_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) { return push(domain_of(d), a, NULL); }
static int NVTX_API domain_pop(nvtxDomainHandle_t d) { return pop(domain_of(d)); }
static void NVTX_API domain_category_a(nvtxDomainHandle_t d, uint32_t c, const char *n) { name_category(domain_of(d), c, n); }
static void NVTX_API domain_category_w(nvtxDomainHandle_t d, uint32_t c, const wchar_t *n) { char t[CATEGORY_BYTES]; wide_to_utf8(t, sizeof t, n); domain_category_a(d, c, t); }

static nvtxStringHandle_t NVTX_API register_a(nvtxDomainHandle_t d, const char *text)
{
    (void)d;
    struct registered_string *string = calloc(1, sizeof *string);
    if (!string)
        return NULL;
    string->length = (uint32_t)escape_json(string->text, sizeof string->text, text);
    string->next = atomic_load(&registered_strings);
    while (!atomic_compare_exchange_weak(&registered_strings, &string->next, string))
        continue;
    return (nvtxStringHandle_t)string;
}
static nvtxStringHandle_t NVTX_API register_w(nvtxDomainHandle_t d, const wchar_t *text) { char t[NAME_MAX_BYTES]; wide_to_utf8(t, sizeof t, text); return register_a(d, t); }
static nvtxDomainHandle_t NVTX_API domain_create_a(const char *name) { return (nvtxDomainHandle_t)create_domain(name); }
static nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t *name) { char t[NAME_MAX_BYTES]; wide_to_utf8(t, sizeof t, name); return domain_create_a(t); }
static void NVTX_API domain_destroy(nvtxDomainHandle_t d) { (void)d; /* kept: events may still name it */ }
static void NVTX_API initialize(const void *reserved) { (void)reserved; }

static void attach(NvtxFunctionTable table, unsigned size, unsigned id, NvtxFunctionPointer function)
{
    if (id < size && table[id])
        *table[id] = function;
}

#define FN(f) ((NvtxFunctionPointer)(f))

__attribute__((visibility("default")))
int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
    if (!state.enabled || !get_export_table)
        return 0;
    const NvtxExportTableCallbacks *callbacks = get_export_table(NVTX_ETID_CALLBACKS);
    if (!callbacks || !callbacks->GetModuleFunctionTable)
        return 0;
    NvtxFunctionTable core = NULL, core2 = NULL;
    unsigned core_size = 0, core2_size = 0;
    if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) ||
        !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size))
        return 0;
    attach(core, core_size, NVTX_CBID_CORE_MarkEx, FN(mark_ex));
    attach(core, core_size, NVTX_CBID_CORE_MarkA, FN(mark_a));
    attach(core, core_size, NVTX_CBID_CORE_MarkW, FN(mark_w));
    attach(core, core_size, NVTX_CBID_CORE_RangeStartEx, FN(start_ex));
    attach(core, core_size, NVTX_CBID_CORE_RangeStartA, FN(start_a));
    attach(core, core_size, NVTX_CBID_CORE_RangeStartW, FN(start_w));
    attach(core, core_size, NVTX_CBID_CORE_RangeEnd, FN(end_id));
    attach(core, core_size, NVTX_CBID_CORE_RangePushEx, FN(push_ex));
    attach(core, core_size, NVTX_CBID_CORE_RangePushA, FN(push_a));
    attach(core, core_size, NVTX_CBID_CORE_RangePushW, FN(push_w));
    attach(core, core_size, NVTX_CBID_CORE_RangePop, FN(pop_default));
    attach(core, core_size, NVTX_CBID_CORE_NameCategoryA, FN(category_a));
    attach(core, core_size, NVTX_CBID_CORE_NameCategoryW, FN(category_w));
    attach(core, core_size, NVTX_CBID_CORE_NameOsThreadA, FN(name_thread_a));
    attach(core, core_size, NVTX_CBID_CORE_NameOsThreadW, FN(name_thread_w));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx, FN(domain_mark));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, FN(domain_start));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, FN(domain_end));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, FN(domain_push));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, FN(domain_pop));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainNameCategoryA, FN(domain_category_a));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainNameCategoryW, FN(domain_category_w));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, FN(register_a));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, FN(register_w));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, FN(domain_create_a));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW, FN(domain_create_w));
    attach(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, FN(domain_destroy));
    attach(core2, core2_size, NVTX_CBID_CORE2_Initialize, FN(initialize));
    return 1;
}


/* ---- life cycle ------------------------------------------------------------------ */

void nvs_record_enable(const char *path_template)
{
    snprintf(state.path_template, sizeof state.path_template, "%s", path_template);
    state.pid = getpid();
    pthread_key_create(&buffer_key, release_buffer);
    state.enabled = true;
}

bool nvs_record_enabled(void)
{
    return state.enabled;
}

bool nvs_record_owns_process(void)
{
    return state.enabled && getpid() == state.pid;
}

/* The offset of the last byte before END that is not blank, or -1. */
static off_t last_written_byte(off_t end, char *found)
{
    char block[4096];
    while (end > 0) {
        off_t from = end > (off_t)sizeof block ? end - (off_t)sizeof block : 0;
        ssize_t got = pread(state.fd, block, (size_t)(end - from), from);
        if (got <= 0)
            return -1;
        for (ssize_t i = got - 1; i >= 0; i--) {
            if (block[i] != ' ' && block[i] != '\n') {
                *found = block[i];
                return from + i;
            }
        }
        end = from;
    }
    return -1;
}

/* Completes the file: at exit, before _exit and exec. Each thread's chunk is
 * taken between two events; after that no thread writes until a resume. */
void nvs_record_finish(void)
{
    if (!state.enabled || atomic_exchange(&state.finished, true))
        return;
    int saved_errno = errno;
    pthread_mutex_lock(&state.lock);
    struct thread_buffer *buffers = state.buffers;
    pthread_mutex_unlock(&state.lock);
    bool all_taken = true;
    for (struct thread_buffer *buffer = buffers; buffer; buffer = buffer->next) {
        if (!take(buffer)) {
            all_taken = false;
            continue;
        }
        pthread_mutex_lock(&state.lock);
        if (!buffer->mapped && buffer->used && state.fd >= 0) {
            append_to_file(buffer->data, buffer->used);
            buffer->used = 0;
        }
        pthread_mutex_unlock(&state.lock);
        give_back(buffer);
    }
    pthread_mutex_lock(&state.lock);
    if (state.fd >= 0) {
        off_t end = state.file_size;
        state.removed_comma = -1;
        if (state.seekable) {
            /* The last event's comma goes; the blank tail after it too, unless
             * a thread we could not take may still write there. */
            char last = 0;
            off_t at = last_written_byte(end, &last);
            if (at >= 0 && last == ',' && write_at(" ", 1, at))
                state.removed_comma = at;
            if (at >= 0 && all_taken) {
                end = at + 1;
                for (struct thread_buffer *buffer = buffers; buffer; buffer = buffer->next)
                    if (buffer->mapped && buffer->offset + (off_t)buffer->size > end)
                        drop_chunk(buffer);
            }
        }
        static const char terminator[] = "\n]}\n";
        state.file_size = end;
        if (state.seekable && ftruncate(state.fd, end) != 0)
            state.file_size = lseek(state.fd, 0, SEEK_END);
        state.end_before_terminator = state.file_size;
        append_to_file(terminator, sizeof terminator - 1);
        close(state.fd);
        state.fd = -1;
    }
    pthread_mutex_unlock(&state.lock);
    errno = saved_errno;
}

/* exec failed: the process goes on, and so does its trace. */
void nvs_record_resume(void)
{
    if (!state.enabled || !atomic_load(&state.finished))
        return;
    int saved_errno = errno;
    pthread_mutex_lock(&state.lock);
    if (state.end_before_terminator > 0 && state.seekable) {
        int fd = open(state.path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0 && ftruncate(fd, state.end_before_terminator) == 0) {
            state.fd = fd;
            state.file_size = state.end_before_terminator;
            if (state.removed_comma >= 0)
                write_at(",", 1, state.removed_comma);
        } else if (fd >= 0) {
            close(fd);
        }
    }
    atomic_store(&state.finished, false);
    pthread_mutex_unlock(&state.lock);
    errno = saved_errno;
}

void nvs_record_fork_prepare(void)
{
    pthread_mutex_lock(&state.lock);
}

void nvs_record_fork_parent(void)
{
    pthread_mutex_unlock(&state.lock);
}

/* The child starts clean: none of the parent's pending events, its own file.
 * The parent's chunks are unmapped unwritten: they are the parent's file. */
void nvs_record_fork_child(void)
{
    pthread_mutex_init(&state.lock, NULL);
    if (!state.enabled)
        return;
    if (state.fd >= 0)
        close(state.fd);
    state.fd = -1;
    state.file_size = 0;
    state.pid = getpid();
    state.forked_child = true;
    state.end_before_terminator = 0;
    state.removed_comma = -1;
    atomic_store(&state.finished, false);
    for (struct thread_buffer *buffer = state.buffers; buffer; buffer = buffer->next) {
        atomic_flag_clear(&buffer->busy);
        drop_chunk(buffer);
        buffer->depth = 0;
        buffer->named = false;
        buffer->in_use = buffer == my_buffer;
    }
    if (my_buffer) {
        my_buffer->tid = (uint32_t)syscall(SYS_gettid);
        set_ids(my_buffer);
    }
    for (unsigned i = 0; i < OPEN_RANGES; i++)
        atomic_store(&open_ranges[i].state, 0);
}
