/* NVTX injection tool that writes Chrome Trace Event Format JSON.
 *
 * Every NVTX instance in the process (ours and the program's) finds this
 * library through NVTX_INJECTION64_PATH and calls InitializeInjectionNvtx2,
 * where we fill its function table. Events go into a per-thread buffer that
 * is written out whole when full, so memory stays bounded and the file grows
 * as the program runs; ranges are written once they end ("ph":"X"). */
#define _GNU_SOURCE
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include <nvtx3/nvToolsExt.h>

#include "config.h"
#include "log.h"

#define BUFFER_BYTES (64u * 1024u)
#define EVENT_MAX 1024u         /* one event's JSON, at most */
#define NAME_MAX_BYTES 256u     /* a message, JSON-escaped, at most */
#define STACK_DEPTH 64
#define OPEN_RANGES 4096u
#define EXTRA_MAX 384u          /* extra JSON members of a start/end range's args */
#define CATEGORIES 64u

struct domain {
    struct domain *next;
    char name[NAME_MAX_BYTES];
    char categories[CATEGORIES][48];
};

struct registered_string {
    char text[NAME_MAX_BYTES];  /* JSON-escaped */
};

/* What a range carries from its start to its end. */
struct range {
    uint64_t start_ns;
    const struct domain *domain;
    uint32_t category;
    uint32_t color;
    int payload_type;
    uint64_t payload;           /* raw bits of the NVTX payload */
    char name[NAME_MAX_BYTES];
};

struct thread_buffer {
    struct thread_buffer *next;     /* all buffers, under state.lock */
    atomic_flag busy;               /* held by the owner while appending */
    bool in_use;                    /* has an owner thread */
    uint32_t tid;
    bool named;
    size_t used;
    int depth;
    struct range stack[STACK_DEPTH];
    char data[BUFFER_BYTES];
};

struct open_range {
    atomic_uint state;              /* 0 free, 1 claimed */
    uint32_t generation;
    uint32_t tid;
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
    off_t end_before_terminator;
    pid_t pid;
    bool forked_child;
    struct thread_buffer *buffers;
    struct domain *domains;
    struct domain default_domain;
    atomic_uint next_open;
} state = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .fd = -1,
    .default_domain = { .name = "default" },
};

static struct open_range open_ranges[OPEN_RANGES];
static pthread_key_t buffer_key;
static __thread struct thread_buffer *my_buffer __attribute__((tls_model("initial-exec")));

/* ---- text ---------------------------------------------------------------- */

static size_t escape_json(char *out, size_t size, const char *text)
{
    size_t used = 0;
    for (const unsigned char *c = (const unsigned char *)(text ? text : ""); *c; c++) {
        char piece[8];
        size_t length;
        if (*c == '"' || *c == '\\') { piece[0] = '\\'; piece[1] = (char)*c; length = 2; }
        else if (*c < 0x20) length = (size_t)snprintf(piece, sizeof piece, "\\u%04x", *c);
        else { piece[0] = (char)*c; length = 1; }
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

static void message_text(char *out, size_t size, nvtxMessageType_t type, nvtxMessageValue_t value)
{
    char utf8[NAME_MAX_BYTES];
    switch (type) {
    case NVTX_MESSAGE_TYPE_ASCII:
        escape_json(out, size, value.ascii);
        return;
    case NVTX_MESSAGE_TYPE_UNICODE:
        wide_to_utf8(utf8, sizeof utf8, value.unicode);
        escape_json(out, size, utf8);
        return;
    case NVTX_MESSAGE_TYPE_REGISTERED:
        snprintf(out, size, "%s",
                 value.registered ? ((const struct registered_string *)value.registered)->text : "");
        return;
    default:
        out[0] = '\0';
    }
}

static uint64_t now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

/* ---- the file -------------------------------------------------------------- */

static void write_all(int fd, const char *data, size_t length)
{
    while (length > 0) {
        ssize_t written = write(fd, data, length);
        if (written < 0 && errno == EINTR)
            continue;
        if (written <= 0)
            return;
        data += written;
        length -= (size_t)written;
    }
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

/* A metadata event; ENDING follows it: ",\n" inside the array, "\n]}\n" last. */
static void write_metadata(int fd, const char *name, uint32_t tid, const char *value,
                           const char *ending)
{
    char escaped[NAME_MAX_BYTES], line[EVENT_MAX];
    escape_json(escaped, sizeof escaped, value);
    int length = snprintf(line, sizeof line,
                          "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,"
                          "\"args\":{\"name\":\"%s\"}}%s", name, (int)state.pid, tid, escaped,
                          ending);
    write_all(fd, line, (size_t)length);
}

/* Called with state.lock held. */
static bool ensure_file(void)
{
    if (state.fd >= 0)
        return true;
    expand_path(state.path, sizeof state.path, state.path_template, state.pid, state.forked_child);
    int fd = open(state.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        nvs_log_info("NVTXSHIM_TRACE: cannot write %s: %s; no trace is recorded\n", state.path,
                     strerror(errno));
        state.enabled = false;
        return false;
    }
    state.fd = fd;
    static const char header[] = "{\"traceEvents\":[\n";
    write_all(fd, header, sizeof header - 1);
    write_metadata(fd, "process_name", (uint32_t)state.pid, program_invocation_short_name, ",\n");
    return true;
}

static void flush_locked(struct thread_buffer *buffer)
{
    if (buffer->used && ensure_file())
        write_all(state.fd, buffer->data, buffer->used);
    buffer->used = 0;
}

/* ---- per-thread buffers ------------------------------------------------------ */

static void release_buffer(void *opaque)
{
    struct thread_buffer *buffer = opaque;
    while (atomic_flag_test_and_set_explicit(&buffer->busy, memory_order_acquire))
        ;
    pthread_mutex_lock(&state.lock);
    flush_locked(buffer);
    buffer->in_use = false;
    pthread_mutex_unlock(&state.lock);
    atomic_flag_clear_explicit(&buffer->busy, memory_order_release);
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
        buffer->used = 0;
    }
    pthread_mutex_unlock(&state.lock);
    if (buffer) {
        pthread_setspecific(buffer_key, buffer);
        my_buffer = buffer;
    }
    return buffer;
}

/* Appends one event (LENGTH bytes of JSON ending ",\n") for the calling thread. */
static void append(struct thread_buffer *buffer, const char *event, size_t length)
{
    if (buffer->used + length > BUFFER_BYTES) {
        pthread_mutex_lock(&state.lock);
        flush_locked(buffer);
        pthread_mutex_unlock(&state.lock);
    }
    memcpy(buffer->data + buffer->used, event, length);
    buffer->used += length;
}

/* Takes the calling thread's buffer for one event; NULL when recording stopped. */
static struct thread_buffer *begin_event(void)
{
    if (!state.enabled || atomic_load_explicit(&state.finished, memory_order_acquire))
        return NULL;
    struct thread_buffer *buffer = acquire_buffer();
    if (!buffer)
        return NULL;
    while (atomic_flag_test_and_set_explicit(&buffer->busy, memory_order_acquire))
        ;
    if (atomic_load_explicit(&state.finished, memory_order_acquire)) {
        atomic_flag_clear_explicit(&buffer->busy, memory_order_release);
        return NULL;
    }
    if (!buffer->named) {
        char name[17] = "", line[EVENT_MAX], escaped[64];
        buffer->named = true;
        prctl(PR_GET_NAME, name, 0, 0, 0);
        escape_json(escaped, sizeof escaped, name);
        int length = snprintf(line, sizeof line,
                              "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,"
                              "\"args\":{\"name\":\"%s\"}},\n", (int)state.pid, buffer->tid, escaped);
        append(buffer, line, (size_t)length);
    }
    return buffer;
}

static void end_event(struct thread_buffer *buffer)
{
    atomic_flag_clear_explicit(&buffer->busy, memory_order_release);
}

/* ---- events ------------------------------------------------------------------- */

static void capture(struct range *range, const struct domain *domain,
                    const nvtxEventAttributes_t *attributes)
{
    range->start_ns = now_ns();
    range->domain = domain ? domain : &state.default_domain;
    range->category = 0;
    range->color = 0;
    range->payload_type = NVTX_PAYLOAD_UNKNOWN;
    range->name[0] = '\0';
    if (!attributes)
        return;
    range->category = attributes->category;
    range->color = attributes->colorType == NVTX_COLOR_ARGB ? attributes->color : 0;
    range->payload_type = attributes->payloadType;
    range->payload = attributes->payload.ullValue;
    message_text(range->name, sizeof range->name, attributes->messageType, attributes->message);
}

static void capture_text(struct range *range, const char *text)
{
    capture(range, NULL, NULL);
    escape_json(range->name, sizeof range->name, text);
}

static int format_args(char *out, size_t size, const struct range *range, const char *extra)
{
    int used = 0;
    char payload[48] = "";
    switch (range->payload_type) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
        snprintf(payload, sizeof payload, "%" PRIu64, range->payload); break;
    case NVTX_PAYLOAD_TYPE_INT64:
        snprintf(payload, sizeof payload, "%" PRId64, (int64_t)range->payload); break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
        snprintf(payload, sizeof payload, "%" PRIu32, (uint32_t)range->payload); break;
    case NVTX_PAYLOAD_TYPE_INT32:
        snprintf(payload, sizeof payload, "%" PRId32, (int32_t)range->payload); break;
    case NVTX_PAYLOAD_TYPE_DOUBLE: {
        double value;
        memcpy(&value, &range->payload, sizeof value);
        snprintf(payload, sizeof payload, "%.17g", value);
        break;
    }
    case NVTX_PAYLOAD_TYPE_FLOAT: {
        float value;
        uint32_t bits = (uint32_t)range->payload;
        memcpy(&value, &bits, sizeof value);
        snprintf(payload, sizeof payload, "%.9g", (double)value);
        break;
    }
    }
    used += snprintf(out + used, size - (size_t)used, ",\"args\":{");
    const char *separator = "";
    if (payload[0]) {
        used += snprintf(out + used, size - (size_t)used, "\"payload\":%s", payload);
        separator = ",";
    }
    if (range->color) {
        used += snprintf(out + used, size - (size_t)used, "%s\"color\":\"#%06x\"", separator,
                         range->color & 0xffffffu);
        separator = ",";
    }
    if (range->category) {
        const char *name = range->category < CATEGORIES ? range->domain->categories[range->category] : "";
        if (name[0])
            used += snprintf(out + used, size - (size_t)used, "%s\"category\":\"%s\"", separator, name);
        else
            used += snprintf(out + used, size - (size_t)used, "%s\"category\":%u", separator,
                             range->category);
        separator = ",";
    }
    if (extra && extra[0])
        used += snprintf(out + used, size - (size_t)used, "%s%s", separator, extra);
    used += snprintf(out + used, size - (size_t)used, "}");
    return used;
}

static void write_complete(struct thread_buffer *buffer, const struct range *range, uint32_t tid,
                           uint64_t end_ns, const char *extra)
{
    char event[EVENT_MAX], args[256 + EXTRA_MAX];
    format_args(args, sizeof args, range, extra);
    int length = snprintf(event, sizeof event,
                          "{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%" PRIu64 ".%03u,"
                          "\"dur\":%" PRIu64 ".%03u,\"pid\":%d,\"tid\":%u%s},\n",
                          range->name, range->domain->name, range->start_ns / 1000,
                          (unsigned)(range->start_ns % 1000), (end_ns - range->start_ns) / 1000,
                          (unsigned)((end_ns - range->start_ns) % 1000), (int)state.pid, tid, args);
    if (length > 0 && (size_t)length < sizeof event)
        append(buffer, event, (size_t)length);
}

static void write_instant(struct thread_buffer *buffer, const struct range *mark)
{
    char event[EVENT_MAX], args[256];
    format_args(args, sizeof args, mark, NULL);
    int length = snprintf(event, sizeof event,
                          "{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%" PRIu64
                          ".%03u,\"pid\":%d,\"tid\":%u%s},\n",
                          mark->name, mark->domain->name, mark->start_ns / 1000,
                          (unsigned)(mark->start_ns % 1000), (int)state.pid, buffer->tid, args);
    if (length > 0 && (size_t)length < sizeof event)
        append(buffer, event, (size_t)length);
}

static void mark(const struct range *mark)
{
    struct thread_buffer *buffer = begin_event();
    if (!buffer)
        return;
    write_instant(buffer, mark);
    end_event(buffer);
}

static int push(const struct range *range)
{
    struct thread_buffer *buffer = begin_event();
    if (!buffer)
        return -1;
    int level = buffer->depth;
    if (buffer->depth < STACK_DEPTH)
        buffer->stack[buffer->depth] = *range;
    buffer->depth++;
    end_event(buffer);
    return level;
}

/* Pops the innermost range of DOMAIN on this thread. */
static int pop(const struct domain *domain)
{
    uint64_t end_ns = now_ns();
    struct thread_buffer *buffer = begin_event();
    if (!buffer)
        return -1;
    int level = -1;
    if (buffer->depth > STACK_DEPTH) {
        buffer->depth--;            /* deeper than we keep: counted, not written */
        level = buffer->depth;
    } else {
        for (int i = buffer->depth - 1; i >= 0; i--) {
            if (buffer->stack[i].domain == domain) {
                write_complete(buffer, &buffer->stack[i], buffer->tid, end_ns, NULL);
                memmove(&buffer->stack[i], &buffer->stack[i + 1],
                        (size_t)(buffer->depth - 1 - i) * sizeof buffer->stack[0]);
                buffer->depth--;
                level = buffer->depth;
                break;
            }
        }
    }
    end_event(buffer);
    return level;
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
            struct thread_buffer *buffer = acquire_buffer();
            slot->tid = buffer ? buffer->tid : 0;
            slot->range = *range;
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
    struct thread_buffer *buffer = begin_event();
    if (buffer) {
        write_complete(buffer, &slot->range, slot->tid, end_ns, slot->extra);
        end_event(buffer);
    }
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
    struct range range = { .start_ns = start_ns, .domain = create_domain(domain),
                           .payload_type = NVTX_PAYLOAD_UNKNOWN };
    if (!range.domain)
        return;
    escape_json(range.name, sizeof range.name, name);
    struct thread_buffer *buffer = begin_event();
    if (!buffer)
        return;
    write_complete(buffer, &range, tid, end_ns, members);
    end_event(buffer);
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
        strcpy(domain->name, escaped);
        domain->next = state.domains;
        state.domains = domain;
    }
    pthread_mutex_unlock(&state.lock);
    return domain;
}

static const struct domain *domain_of(nvtxDomainHandle_t handle)
{
    return handle ? (const struct domain *)handle : &state.default_domain;
}

static void name_category(struct domain *domain, uint32_t category, const char *name)
{
    if (category < CATEGORIES)
        escape_json(domain->categories[category], sizeof domain->categories[category], name);
}

static void NVTX_API mark_ex(const nvtxEventAttributes_t *a) { struct range r; capture(&r, NULL, a); mark(&r); }
static void NVTX_API mark_a(const char *m) { struct range r; capture_text(&r, m); mark(&r); }
static void NVTX_API mark_w(const wchar_t *m) { char t[NAME_MAX_BYTES]; wide_to_utf8(t, sizeof t, m); mark_a(t); }
static nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t *a) { struct range r; capture(&r, NULL, a); return start(&r); }
static nvtxRangeId_t NVTX_API start_a(const char *m) { struct range r; capture_text(&r, m); return start(&r); }
static nvtxRangeId_t NVTX_API start_w(const wchar_t *m) { char t[NAME_MAX_BYTES]; wide_to_utf8(t, sizeof t, m); return start_a(t); }
static void NVTX_API end_id(nvtxRangeId_t id) { end(id); }
static int NVTX_API push_ex(const nvtxEventAttributes_t *a) { struct range r; capture(&r, NULL, a); return push(&r); }
static int NVTX_API push_a(const char *m) { struct range r; capture_text(&r, m); return push(&r); }
static int NVTX_API push_w(const wchar_t *m) { char t[NAME_MAX_BYTES]; wide_to_utf8(t, sizeof t, m); return push_a(t); }
static int NVTX_API pop_default(void) { return pop(&state.default_domain); }
static void NVTX_API category_a(uint32_t c, const char *n) { name_category(&state.default_domain, c, n); }
static void NVTX_API category_w(uint32_t c, const wchar_t *n) { char t[48]; wide_to_utf8(t, sizeof t, n); category_a(c, t); }

static void NVTX_API name_thread_a(uint32_t tid, const char *name)
{
    struct thread_buffer *buffer = begin_event();
    if (!buffer)
        return;
    char line[EVENT_MAX], escaped[NAME_MAX_BYTES];
    escape_json(escaped, sizeof escaped, name);
    int length = snprintf(line, sizeof line,
                          "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,"
                          "\"args\":{\"name\":\"%s\"}},\n", (int)state.pid, tid, escaped);
    append(buffer, line, (size_t)length);
    end_event(buffer);
}
static void NVTX_API name_thread_w(uint32_t tid, const wchar_t *n) { char t[NAME_MAX_BYTES]; wide_to_utf8(t, sizeof t, n); name_thread_a(tid, t); }

static void NVTX_API domain_mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) { struct range r; capture(&r, domain_of(d), a); mark(&r); }
static nvtxRangeId_t NVTX_API domain_start(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) { struct range r; capture(&r, domain_of(d), a); return start(&r); }
static void NVTX_API domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id) { (void)d; end(id); }
static int NVTX_API domain_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) { struct range r; capture(&r, domain_of(d), a); return push(&r); }
static int NVTX_API domain_pop(nvtxDomainHandle_t d) { return pop(domain_of(d)); }
static void NVTX_API domain_category_a(nvtxDomainHandle_t d, uint32_t c, const char *n) { name_category((struct domain *)(uintptr_t)domain_of(d), c, n); }
static void NVTX_API domain_category_w(nvtxDomainHandle_t d, uint32_t c, const wchar_t *n) { char t[48]; wide_to_utf8(t, sizeof t, n); domain_category_a(d, c, t); }

static nvtxStringHandle_t NVTX_API register_a(nvtxDomainHandle_t d, const char *text)
{
    (void)d;
    struct registered_string *string = malloc(sizeof *string);
    if (string)
        escape_json(string->text, sizeof string->text, text);
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

void nvs_record_finish(void)
{
    if (!state.enabled || atomic_exchange(&state.finished, true))
        return;
    int saved_errno = errno;
    /* Each buffer is taken from its owner between two events, then written. */
    pthread_mutex_lock(&state.lock);
    struct thread_buffer *buffers = state.buffers;
    pthread_mutex_unlock(&state.lock);
    for (struct thread_buffer *buffer = buffers; buffer; buffer = buffer->next) {
        while (atomic_flag_test_and_set_explicit(&buffer->busy, memory_order_acquire))
            ;
        pthread_mutex_lock(&state.lock);
        flush_locked(buffer);
        pthread_mutex_unlock(&state.lock);
        atomic_flag_clear_explicit(&buffer->busy, memory_order_release);
    }
    pthread_mutex_lock(&state.lock);
    if (state.fd >= 0) {
        state.end_before_terminator = lseek(state.fd, 0, SEEK_END);
        write_metadata(state.fd, "process_name", (uint32_t)state.pid,
                       program_invocation_short_name, "\n]}\n");
        close(state.fd);
        state.fd = -1;
    }
    pthread_mutex_unlock(&state.lock);
    errno = saved_errno;
}

void nvs_record_resume(void)
{
    if (!state.enabled || !atomic_load(&state.finished))
        return;
    int saved_errno = errno;
    pthread_mutex_lock(&state.lock);
    if (state.end_before_terminator > 0) {
        int fd = open(state.path, O_WRONLY | O_CLOEXEC);
        if (fd >= 0 && ftruncate(fd, state.end_before_terminator) == 0 &&
            lseek(fd, 0, SEEK_END) >= 0)
            state.fd = fd;
        else if (fd >= 0)
            close(fd);
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

/* The child starts clean: none of the parent's pending events, its own file. */
void nvs_record_fork_child(void)
{
    pthread_mutex_init(&state.lock, NULL);
    if (!state.enabled)
        return;
    if (state.fd >= 0)
        close(state.fd);
    state.fd = -1;
    state.pid = getpid();
    state.forked_child = true;
    state.end_before_terminator = 0;
    atomic_store(&state.finished, false);
    for (struct thread_buffer *buffer = state.buffers; buffer; buffer = buffer->next) {
        atomic_flag_clear(&buffer->busy);
        buffer->used = 0;
        buffer->depth = 0;
        buffer->named = false;
        buffer->in_use = buffer == my_buffer;
    }
    if (my_buffer)
        my_buffer->tid = (uint32_t)syscall(SYS_gettid);
    for (unsigned i = 0; i < OPEN_RANGES; i++)
        atomic_store(&open_ranges[i].state, 0);
}
