/* The JSON encoder: events as the bare-array form of the Chrome Trace Event
 * Format, one event a line, each followed by a comma, so that a file cut short
 * after any whole event loads ('[' ... with no closer is valid there).
 *
 * Formatted by hand: no snprintf on the hot path. A registered name's event
 * text - everything but the times, the thread and the payload - is made once
 * and copied 32 bytes at a time; a thread's ids and the high digits of its
 * last timestamp are kept as text. Pure: no I/O, lock or allocation. */
#define _GNU_SOURCE
#include "trace.h"
#include "utf8.h"

#include <stdio.h>
#include <string.h>

#define ESCAPED_MAX 512u /* a name, JSON-escaped, at most */
#define DOMAIN_NAME_MAX 256u
#define CATEGORY_MAX 48u  /* a category name, escaped, with its length byte */
#define SHAPE_PREFIX 192u /* multiples of 32 */
#define SHAPE_ARGS 128u

/* ---- what this encoder keeps in the model's opaque areas ---------------- */

struct json_domain {
    uint32_t name_length;
    char name[DOMAIN_NAME_MAX];
    char categories[NVS_TRACE_CATEGORIES][CATEGORY_MAX]; /* [0] = length */
};
_Static_assert(sizeof(struct json_domain) <= NVS_ENCODER_DOMAIN_BYTES, "domain cache");

enum shape_state { SHAPE_UNMADE, SHAPE_MAKING, SHAPE_MADE };

struct json_string {
    _Atomic uint32_t state; /* of the shape */
    uint32_t category;
    uint32_t color;
    uint32_t generation; /* category_generation when made */
    const struct nvs_trace_domain *domain;
    uint32_t prefix_length;
    uint32_t args_length;
    char prefix[SHAPE_PREFIX]; /* {"name":"N","cat":"D","ph":"X","ts": */
    char args[SHAPE_ARGS];     /* ,"args":{"category":".." */
    uint32_t length;
    char text[ESCAPED_MAX]; /* the escaped name */
};
_Static_assert(sizeof(struct json_string) <= NVS_ENCODER_STRING_BYTES, "string cache");

struct json_thread {
    uint32_t ids_length;
    char ids[64];     /* ,"pid":P,"tid":T, blank-padded */
    uint64_t ts_high; /* the last timestamp's microseconds / 10000 ... */
    uint32_t ts_high_length;
    char ts_high_text[64]; /* ... as text, blank-padded */
};
_Static_assert(sizeof(struct json_thread) <= NVS_ENCODER_THREAD_BYTES, "thread cache");

/* Bumped when a category is named: shapes made before then are remade. */
static _Atomic uint32_t category_generation;

static inline struct json_domain *domain_of(const struct nvs_trace_domain *domain)
{
    return (struct json_domain *)domain->encoded;
}

static inline struct json_string *string_of(const struct nvs_trace_string *string)
{
    return (struct json_string *)string->encoded;
}

static inline struct json_thread *thread_of(const struct nvs_trace_thread_ids *thread)
{
    return (struct json_thread *)thread->encoded;
}

/* ---- text ---------------------------------------------------------------- */

/* TEXT as the inside of a JSON string, at most SIZE bytes of whole pieces:
 * quotes, backslashes and control bytes escaped, and a byte that does not
 * begin a well-formed UTF-8 character (a Latin-1 name, a name cut inside a
 * character) written as U+FFFD, so that the file stays UTF-8, as JSON must
 * (utf8.h's cleaner). Out of line: its callers share one copy. */
static __attribute__((noinline)) size_t escape_json(char *out, size_t size, const char *text,
                                                    size_t length)
{
    return nvs_utf8_clean(out, size, text, length, NVS_UTF8_JSON);
}

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

static char *put_payload(char *out, const struct nvs_trace_event *event)
{
    char text[48];
    switch (event->payload_type) {
    case NVS_PAYLOAD_U64: return put_u64(out, event->payload);
    case NVS_PAYLOAD_I64: return put_i64(out, (int64_t)event->payload);
    case NVS_PAYLOAD_U32: return put_u64(out, (uint32_t)event->payload);
    case NVS_PAYLOAD_I32: return put_i64(out, (int32_t)(uint32_t)event->payload);
    case NVS_PAYLOAD_DOUBLE: {
        double value;
        memcpy(&value, &event->payload, sizeof value);
        snprintf(text, sizeof text, "%.17g", value);
        break;
    }
    case NVS_PAYLOAD_FLOAT: {
        float value;
        uint32_t bits = (uint32_t)event->payload;
        memcpy(&value, &bits, sizeof value);
        snprintf(text, sizeof text, "%.9g", (double)value);
        break;
    }
    default: return out;
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

/* "key":value,... (the keys are the library's own: nothing to escape). */
static char *put_members(char *out, const struct nvs_trace_args *args)
{
    unsigned count = args->count < NVS_TRACE_ARGS_MAX ? args->count : NVS_TRACE_ARGS_MAX;
    for (unsigned i = 0; i < count; i++) {
        const char *key = args->member[i].key;
        if (i)
            *out++ = ',';
        *out++ = '"';
        out = put(out, key, strnlen(key, NVS_TRACE_KEY_MAX));
        out = PUT_LITERAL(out, "\":");
        out = put_u64(out, args->member[i].value);
    }
    return out;
}

/* ,"args":{...}: payload, colour (marks only: a red mark is a problem; a
 * range's colour is the viewer's business, and bytes cost), category name (or
 * number), then MORE. */
static char *put_args(char *out, const struct nvs_trace_event *event,
                      const struct nvs_trace_args *more, bool color)
{
    static const char hex[] = "0123456789abcdef";
    out = PUT_LITERAL(out, ",\"args\":{");
    char *first = out;
    if (event->payload_type != NVS_PAYLOAD_NONE) {
        out = PUT_LITERAL(out, "\"payload\":");
        out = put_payload(out, event);
    }
    if (color && event->color) {
        if (out != first)
            *out++ = ',';
        out = PUT_LITERAL(out, "\"color\":\"#");
        for (int shift = 20; shift >= 0; shift -= 4)
            *out++ = hex[(event->color >> shift) & 15];
        *out++ = '"';
    }
    if (event->category) {
        if (out != first)
            *out++ = ',';
        out = PUT_LITERAL(out, "\"category\":");
        uint64_t named = atomic_load_explicit(&event->domain->named_categories,
                                              memory_order_acquire);
        if (event->category < NVS_TRACE_CATEGORIES && (named >> event->category & 1)) {
            const char *name = domain_of(event->domain)->categories[event->category];
            *out++ = '"';
            out = put(out, name + 1, (unsigned char)name[0]);
            *out++ = '"';
        } else {
            out = put_u64(out, event->category);
        }
    }
    if (more && more->count) {
        if (out != first)
            *out++ = ',';
        out = put_members(out, more);
    }
    *out++ = '}';
    return out;
}

/* {"name":"NAME","cat":"DOMAIN","ph": at OUT: the start of every event. */
static char *put_head(char *out, const struct nvs_trace_event *event)
{
    out = PUT_LITERAL(out, "{\"name\":\"");
    if (event->registered)
        out = put(out, string_of(event->registered)->text, string_of(event->registered)->length);
    else
        out = out + escape_json(out, ESCAPED_MAX, event->text, event->text_length);
    out = PUT_LITERAL(out, "\",\"cat\":\"");
    const struct json_domain *domain = domain_of(event->domain);
    out = put(out, domain->name, domain->name_length);
    return PUT_LITERAL(out, "\",\"ph\":");
}

static char *put_ids(char *out, const struct nvs_trace_thread_ids *thread)
{
    const struct json_thread *ids = thread_of(thread);
    return put(out, ids->ids, ids->ids_length);
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
 * OUT has room to spare, which the next event overwrites. */
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

/* A timestamp, the part above 10 ms reused from the thread's last one. */
static inline __attribute__((always_inline)) char *put_timestamp(struct json_thread *thread,
                                                                 char *out, uint64_t ns)
{
    uint64_t us = ns / 1000, high = us / 10000;
    unsigned low = (unsigned)(us % 10000), rest = (unsigned)(ns % 1000);
    if (high == 0)
        return put_time(out, ns);
    if (high != thread->ts_high) {
        thread->ts_high = high;
        thread->ts_high_length = (uint32_t)(put_u64(thread->ts_high_text, high) -
                                            thread->ts_high_text);
        memset(thread->ts_high_text + thread->ts_high_length, ' ',
               sizeof thread->ts_high_text - thread->ts_high_length);
    }
    out = copy_short(out, thread->ts_high_text, thread->ts_high_length);
    memcpy(out, digit_pairs + 2 * (low / 100), 2);
    memcpy(out + 2, digit_pairs + 2 * (low % 100), 2);
    out[4] = '.';
    out[5] = (char)('0' + rest / 100);
    memcpy(out + 6, digit_pairs + 2 * (rest % 100), 2);
    return out + 8;
}

/* The shape of EVENT, made when missing; NULL when its name is not registered,
 * too long, or written with other attributes than those it was made with. */
static inline __attribute__((always_inline)) const struct json_string *shape_of(
    const struct nvs_trace_event *event)
{
    if (!event->registered)
        return NULL;
    struct json_string *shape = string_of(event->registered);
    uint32_t generation = atomic_load_explicit(&category_generation, memory_order_acquire);
    uint32_t expected = SHAPE_UNMADE;
    uint32_t now = atomic_load_explicit(&shape->state, memory_order_acquire);
    if (now == SHAPE_UNMADE &&
        atomic_compare_exchange_strong_explicit(&shape->state, &expected, SHAPE_MAKING,
                                                memory_order_acquire, memory_order_relaxed)) {
        struct nvs_trace_event fixed = *event;
        fixed.payload_type = NVS_PAYLOAD_NONE;
        char args[320];
        char *end = put_args(args, &fixed, NULL, false) - 1; /* without its closing brace */
        now = SHAPE_UNMADE;
        if (shape->length + domain_of(event->domain)->name_length + 48 <= SHAPE_PREFIX &&
            (size_t)(end - args) <= SHAPE_ARGS) {
            memset(shape->prefix, ' ', sizeof shape->prefix);
            memset(shape->args, ' ', sizeof shape->args);
            char *out = put_head(shape->prefix, event);
            out = PUT_LITERAL(out, "\"X\",\"ts\":");
            shape->prefix_length = (uint32_t)(out - shape->prefix);
            shape->args_length = (uint32_t)(end - args);
            memcpy(shape->args, args, shape->args_length);
            shape->domain = event->domain;
            shape->category = event->category;
            shape->color = event->color;
            shape->generation = generation;
            now = SHAPE_MADE;
        }
        /* Too long: it stays "making", and its ranges take the general way. */
        if (now == SHAPE_MADE)
            atomic_store_explicit(&shape->state, SHAPE_MADE, memory_order_release);
    }
    if (now == SHAPE_MADE && shape->domain == event->domain && shape->category == event->category &&
        shape->color == event->color && shape->generation == generation)
        return shape;
    return NULL;
}

/* ---- the encoder's entry points ------------------------------------------ */

static char *json_header(char *out, int32_t pid, const char *process_name)
{
    out = PUT_LITERAL(out, "[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":");
    out = put_i64(out, pid);
    out = PUT_LITERAL(out, ",\"tid\":");
    out = put_i64(out, pid);
    out = PUT_LITERAL(out, ",\"args\":{\"name\":\"");
    out += escape_json(out, ESCAPED_MAX, process_name, strnlen(process_name, NVS_TRACE_TEXT_MAX));
    return PUT_LITERAL(out, "\"}},\n");
}

/* The run's mark: a metadata event of a name viewers do not know, which they
 * pass over (Perfetto reads process_name and thread_name alone). */
static char *json_stamp(char *out, int32_t pid, uint64_t mark)
{
    static const char hex[] = "0123456789abcdef";
    out = PUT_LITERAL(out, "{\"name\":\"nvtxshim_run\",\"ph\":\"M\",\"pid\":");
    out = put_i64(out, pid);
    out = PUT_LITERAL(out, ",\"tid\":");
    out = put_i64(out, pid);
    out = PUT_LITERAL(out, ",\"args\":{\"mark\":\"");
    for (int shift = 60; shift >= 0; shift -= 4)
        *out++ = hex[(mark >> shift) & 15];
    return PUT_LITERAL(out, "\"}},\n");
}

static char *json_thread_name(char *out, const struct nvs_trace_thread_ids *thread,
                              const char *name)
{
    out = PUT_LITERAL(out, "{\"name\":\"thread_name\",\"ph\":\"M\"");
    out = put_ids(out, thread);
    out = PUT_LITERAL(out, ",\"args\":{\"name\":\"");
    out += escape_json(out, ESCAPED_MAX, name, strnlen(name, NVS_TRACE_TEXT_MAX));
    return PUT_LITERAL(out, "\"}},\n");
}

/* A complete event written the general way, from its name to the args'
 * closing brace: what json_complete writes without a cached shape, and
 * json_unfinished always. */
static char *put_complete_general(char *out, struct nvs_trace_thread_ids *thread,
                                  const struct nvs_trace_event *event, uint64_t duration)
{
    out = put_head(out, event);
    out = PUT_LITERAL(out, "\"X\",\"ts\":");
    out = put_time(out, event->start_ns);
    out = PUT_LITERAL(out, ",\"dur\":");
    out = put_time(out, duration);
    out = put_ids(out, thread);
    return put_args(out, event, NULL, false);
}

static char *json_complete(char *out, struct nvs_trace_thread_ids *thread,
                           const struct nvs_trace_event *event, uint64_t end_ns)
{
    uint64_t duration = end_ns > event->start_ns ? end_ns - event->start_ns : 0;
    const struct json_string *shape = shape_of(event);
    if (!shape)
        return PUT_LITERAL(put_complete_general(out, thread, event, duration), "},\n");
    struct json_thread *ids = thread_of(thread);
    out = copy_padded(out, shape->prefix, shape->prefix_length);
    out = put_timestamp(ids, out, event->start_ns);
    out = PUT_LITERAL(out, ",\"dur\":");
    out = put_duration(out, duration);
    out = copy_short(out, ids->ids, ids->ids_length);
    out = copy_padded(out, shape->args, shape->args_length);
    if (event->payload_type != NVS_PAYLOAD_NONE) {
        if (out[-1] != '{')
            *out++ = ',';
        out = PUT_LITERAL(out, "\"payload\":");
        out = event->payload_type == NVS_PAYLOAD_U64 ? put_u64(out, event->payload)
                                                     : put_payload(out, event);
    }
    return PUT_LITERAL(out, "}},\n");
}

/* A range still open when the process ended, as a complete event up to then
 * whose args say it did not end: what Perfetto says of a slice of the binary
 * form that has a begin and no end ("Did not end"). Rare: the general way. */
static char *json_unfinished(char *out, struct nvs_trace_thread_ids *thread,
                             const struct nvs_trace_event *event, uint64_t end_ns)
{
    uint64_t duration = end_ns > event->start_ns ? end_ns - event->start_ns : 0;
    /* the args' closing brace comes after the mark */
    out = put_complete_general(out, thread, event, duration) - 1;
    if (out[-1] != '{')
        *out++ = ',';
    return PUT_LITERAL(out, "\"did_not_end\":true}},\n");
}

/* The cached text of a complete event, made an async half: the phase that
 * ends the prefix ({"name":..,"ph":"X","ts":) is PHASE instead. */
static inline char *put_shaped_head(char *out, const struct json_string *shape, char phase)
{
    char *end = copy_padded(out, shape->prefix, shape->prefix_length);
    end[-(int)sizeof "X\",\"ts\":" + 1] = phase;
    return end;
}

static char *json_begin(char *out, struct nvs_trace_thread_ids *thread,
                        const struct nvs_trace_event *event, uint64_t id)
{
    const struct json_string *shape = shape_of(event);
    if (shape) {
        struct json_thread *ids = thread_of(thread);
        out = put_shaped_head(out, shape, 'b');
        out = put_timestamp(ids, out, event->start_ns);
        out = copy_short(out, ids->ids, ids->ids_length);
        out = PUT_LITERAL(out, ",\"id\":");
        out = put_u64(out, id);
        out = copy_padded(out, shape->args, shape->args_length);
        if (event->payload_type != NVS_PAYLOAD_NONE) {
            if (out[-1] != '{')
                *out++ = ',';
            out = PUT_LITERAL(out, "\"payload\":");
            out = put_payload(out, event);
        }
        return PUT_LITERAL(out, "}},\n");
    }
    out = put_head(out, event);
    out = PUT_LITERAL(out, "\"b\",\"ts\":");
    out = put_timestamp(thread_of(thread), out, event->start_ns);
    out = put_ids(out, thread);
    out = PUT_LITERAL(out, ",\"id\":");
    out = put_u64(out, id);
    out = put_args(out, event, NULL, false);
    return PUT_LITERAL(out, "},\n");
}

static char *json_end(char *out, struct nvs_trace_thread_ids *thread,
                      const struct nvs_trace_event *event, uint64_t id, uint64_t end_ns,
                      const struct nvs_trace_args *args, bool describe)
{
    (void)describe; /* JSON has no track descriptors */
    const struct json_string *shape = shape_of(event);
    if (shape) {
        out = put_shaped_head(out, shape, 'e');
    } else {
        out = put_head(out, event);
        out = PUT_LITERAL(out, "\"e\",\"ts\":");
    }
    out = put_timestamp(thread_of(thread), out, end_ns);
    out = put_ids(out, thread);
    out = PUT_LITERAL(out, ",\"id\":");
    out = put_u64(out, id);
    if (args && args->count) {
        out = PUT_LITERAL(out, ",\"args\":{");
        out = put_members(out, args);
        *out++ = '}';
    }
    return PUT_LITERAL(out, "},\n");
}

static char *json_mark(char *out, struct nvs_trace_thread_ids *thread,
                       const struct nvs_trace_event *event)
{
    out = put_head(out, event);
    out = PUT_LITERAL(out, "\"i\",\"s\":\"t\",\"ts\":");
    out = put_timestamp(thread_of(thread), out, event->start_ns);
    out = put_ids(out, thread);
    out = put_args(out, event, NULL, true);
    return PUT_LITERAL(out, "},\n");
}

static char *json_start(char *out, struct nvs_trace_thread_ids *thread, const char *name,
                        uint64_t now_ns)
{
    (void)now_ns;
    return json_thread_name(out, thread, name);
}

static void json_pad(char *out, size_t length)
{
    memset(out, ' ', length);
}

static void json_prepare_domain(struct nvs_trace_domain *domain)
{
    struct json_domain *json = domain_of(domain);
    json->name_length = (uint32_t)escape_json(json->name, sizeof json->name, domain->name,
                                              strnlen(domain->name, NVS_TRACE_TEXT_MAX));
}

static void json_prepare_string(struct nvs_trace_string *string)
{
    struct json_string *json = string_of(string);
    json->length = (uint32_t)escape_json(json->text, sizeof json->text, string->text,
                                         string->length);
}

static void json_prepare_category(struct nvs_trace_domain *domain, uint32_t category,
                                  const char *name)
{
    char *slot = domain_of(domain)->categories[category];
    slot[0] = (char)escape_json(slot + 1, CATEGORY_MAX - 1, name,
                                strnlen(name, NVS_TRACE_TEXT_MAX));
    atomic_fetch_add_explicit(&category_generation, 1, memory_order_release);
}

static void json_prepare_thread(struct nvs_trace_thread_ids *thread)
{
    struct json_thread *json = thread_of(thread);
    memset(json->ids, ' ', sizeof json->ids);
    char *out = PUT_LITERAL(json->ids, ",\"pid\":");
    out = put_i64(out, thread->pid);
    out = PUT_LITERAL(out, ",\"tid\":");
    out = put_u64(out, thread->tid);
    json->ids_length = (uint32_t)(out - json->ids);
    json->ts_high = 0;
}

const struct nvs_trace_encoder nvs_trace_json = {
    .name = "json",
    .header = json_header,
    .stamp = json_stamp,
    .start = json_start,
    .thread_name = json_thread_name,
    .complete = json_complete,
    .unfinished = json_unfinished,
    .begin = json_begin,
    .end = json_end,
    .mark = json_mark,
    .pad = json_pad,
    /* The last event's ",\n" becomes " \n" and the array closes. */
    .tail_overlap = 2,
    .tail = " \n]\n",
    .tail_undo = ",\n",
    .prepare_domain = json_prepare_domain,
    .prepare_string = json_prepare_string,
    .prepare_category = json_prepare_category,
    .prepare_thread = json_prepare_thread,
};
