/* The protobuf encoder: events as Perfetto's own trace format, TracePackets
 * with TrackEvents (docs/pftrace.md: the layout, field by field).
 *
 * Written by hand with a few varint helpers; the library links no protobuf.
 * Why it is cheap: each thread's buffer is a Perfetto writer sequence, so the
 * names, domains and category names a thread uses are interned once on it and
 * then cost an id; its timestamps are deltas on the sequence's incremental
 * clock; and a registered name's TrackEvent body (type, category, name, the
 * category annotation) is made once and copied. A push/pop range is a begin and
 * an end, both on the thread's track (Perfetto's TrackEvent has no complete
 * event with a duration in nanoseconds), written by the recorder when it pops
 * or before the thread's next other event (record.c).
 * Pure: no I/O, lock or allocation (the header reads the clocks). */
#define _GNU_SOURCE
#include "encode_pftrace.h"
#include "../clock.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "utf8.h"

/* iids of every kind from one counter: 1..3 are the annotation names. */
static _Atomic uint32_t next_iid = 16;
/* Bumped when a category is named: shapes made before then are remade. */
_Atomic uint32_t nvs_pftrace_category_generation;

static inline struct pf_sequence *sequence_of(const struct nvs_trace_thread_ids *thread)
{
    return pf_sequence_of(thread->sequence);
}

static inline struct pf_domain *domain_of(const struct nvs_trace_domain *domain)
{
    return (struct pf_domain *)domain->encoded;
}

static inline struct pf_string *string_of(const struct nvs_trace_string *string)
{
    return (struct pf_string *)string->encoded;
}

static uint32_t new_iid(void)
{
    return atomic_fetch_add_explicit(&next_iid, 1, memory_order_relaxed);
}

/* ---- protobuf ------------------------------------------------------------ */

/* A length-delimited field's length is written when it closes: one byte is
 * kept for it, and the body moves up where it needs more. */
static inline byte *open_length(byte *out)
{
    return out + 1;
}

static inline byte *close_length(byte *body, byte *end)
{
    size_t length = (size_t)(end - body);
    if (__builtin_expect(length < 0x80, 1)) {
        body[-1] = (byte)length;
        return end;
    }
    byte size[10];
    size_t size_length = (size_t)(put_varint(size, length) - size);
    memmove(body - 1 + size_length, body, length);
    memcpy(body - 1, size, size_length);
    return body - 1 + size_length + length;
}

static byte *put_text_field(byte *out, const byte *tag, size_t tag_length, const char *text,
                            size_t length)
{
    out = put_bytes(out, tag, tag_length);
    out = put_varint(out, length);
    return put_bytes(out, text, length);
}

/* TEXT made well-formed UTF-8 (a byte that begins no character becomes
 * U+FFFD, as in the JSON form) into OUT, at most SIZE bytes of whole
 * characters; its length (utf8.h's cleaner). Out of line: its callers share
 * one copy. */
static __attribute__((noinline)) size_t copy_utf8(char *out, size_t size, const char *text,
                                                  size_t length)
{
    return nvs_utf8_clean(out, size, text, length, NVS_UTF8_BARE);
}

static inline void define(struct pf_sequence *sequence, uint32_t iid)
{
    if (iid >= INTERNED_BITS)
        return;
    sequence->interned[iid / 8] |= (byte)(1u << (iid % 8));
    if (iid / 8 + 1 > sequence->marked)
        sequence->marked = iid / 8 + 1;
}

static inline bool internable(uint32_t iid)
{
    return iid != 0 && iid < INTERNED_BITS;
}

/* ---- annotations ------------------------------------------------------------ */

byte *pf_put_payload(byte *out, const struct nvs_trace_event *event)
{
    *out++ = TE_ANNOTATION;
    byte *body = open_length(out);
    out = PUT(body, DA_NAME_IID, NAME_PAYLOAD);
    switch (event->payload_type) {
    case NVS_PAYLOAD_U64: out = put_field_varint(out, DA_UINT, event->payload); break;
    case NVS_PAYLOAD_U32: out = put_field_varint(out, DA_UINT, (uint32_t)event->payload); break;
    case NVS_PAYLOAD_I64: out = put_field_varint(out, DA_INT, event->payload); break;
    case NVS_PAYLOAD_I32:
        out = put_field_varint(out, DA_INT, (uint64_t)(int64_t)(int32_t)(uint32_t)event->payload);
        break;
    case NVS_PAYLOAD_DOUBLE:
    case NVS_PAYLOAD_FLOAT: {
        double value;
        if (event->payload_type == NVS_PAYLOAD_DOUBLE) {
            memcpy(&value, &event->payload, sizeof value);
        } else {
            float single;
            uint32_t bits = (uint32_t)event->payload;
            memcpy(&single, &bits, sizeof single);
            value = single;
        }
        *out++ = DA_DOUBLE;
        out = put_bytes(out, &value, sizeof value); /* little-endian, as protobuf's fixed64 */
        break;
    }
    default: break;
    }
    return close_length(body, out);
}

/* The NVTX category: a named one is the event's second category, after its
 * domain (interned: *IID is its iid; INLINE: as text, as the domain was);
 * a number never named is the annotation "category". Nothing for 0. */
static byte *put_category(byte *out, const struct nvs_trace_event *event, bool inline_text,
                          uint32_t *iid)
{
    *iid = 0;
    if (!event->category)
        return out;
    uint64_t named = atomic_load_explicit(&event->domain->named_categories, memory_order_acquire);
    if (event->category < NVS_TRACE_CATEGORIES && (named >> event->category & 1)) {
        const struct pf_domain *domain = domain_of(event->domain);
        uint32_t category_iid = domain->categories[event->category].iid;
        if (internable(category_iid) && !inline_text) {
            *iid = category_iid;
            return put_field_varint(out, TE_CATEGORY_IID, category_iid);
        }
        return put_text_field(out, (const byte[]){ TE2_CATEGORY }, 2,
                              domain->categories[event->category].name,
                              domain->categories[event->category].length);
    }
    *out++ = TE_ANNOTATION;
    byte *body = open_length(out);
    out = PUT(body, DA_NAME_IID, NAME_CATEGORY);
    out = put_field_varint(out, DA_UINT, event->category);
    return close_length(body, out);
}

static byte *put_color(byte *out, uint32_t color)
{
    static const char hex[] = "0123456789abcdef";
    char text[7] = { '#' };
    for (int i = 0; i < 6; i++)
        text[1 + i] = hex[(color >> (20 - 4 * i)) & 15];
    *out++ = TE_ANNOTATION;
    byte *body = open_length(out);
    out = PUT(body, DA_NAME_IID, NAME_COLOR);
    out = put_text_field(out, (const byte[]){ DA_STRING }, 1, text, sizeof text);
    return close_length(body, out);
}

static byte *put_args(byte *out, const struct nvs_trace_args *args)
{
    unsigned count = args->count < NVS_TRACE_ARGS_MAX ? args->count : NVS_TRACE_ARGS_MAX;
    for (unsigned i = 0; i < count; i++) {
        *out++ = TE_ANNOTATION;
        byte *body = open_length(out);
        const char *key = args->member[i].key;
        out = put_text_field(body, (const byte[]){ DA_NAME }, 1, key,
                             strnlen(key, NVS_TRACE_KEY_MAX));
        out = put_field_varint(out, DA_UINT, args->member[i].value);
        out = close_length(body, out);
    }
    return out;
}

/* ---- shapes: a registered name's begin, made once -------------------------- */

/* The body of a begin (or, with TYPE, an instant) of EVENT, which has a
 * registered name: type, category, name and the category annotation. */
static byte *put_named_body(byte *out, const struct nvs_trace_event *event, int type,
                            uint32_t *category_iid)
{
    out = PUT(out, TE_TYPE, (byte)type);
    out = put_field_varint(out, TE_CATEGORY_IID, domain_of(event->domain)->iid);
    out = put_category(out, event, false, category_iid);
    return put_field_varint(out, TE_NAME_IID, string_of(event->registered)->iid);
}

/* Makes the shape of EVENT's name, once: the first caller does, others find
 * it "making" meanwhile and take the general way. Kept out of the fast path,
 * which it would otherwise fill with its frame. */
static __attribute__((noinline, cold)) void make_shape(struct pf_string *shape,
                                                       const struct nvs_trace_event *event,
                                                       uint32_t generation)
{
    uint32_t expected = SHAPE_UNMADE;
    if (!atomic_compare_exchange_strong_explicit(&shape->state, &expected, SHAPE_MAKING,
                                                 memory_order_acquire, memory_order_relaxed))
        return;
    uint32_t category_iid;
    byte body[64];
    size_t length = (size_t)(put_named_body(body, event, TYPE_BEGIN, &category_iid) - body);
    /* A named category that could not be interned is text: no shape. */
    bool named = !event->category || category_iid || event->category >= NVS_TRACE_CATEGORIES ||
        !(atomic_load(&event->domain->named_categories) >> event->category & 1);
    if (length > SHAPE_BYTES || !named || !internable(shape->iid) ||
        !internable(domain_of(event->domain)->iid))
        return; /* it stays "making": its events take the general way */
    memcpy(shape->shape, body, length);
    shape->shape_length = (uint32_t)length;
    shape->category = event->category;
    shape->generation = generation;
    shape->shape_iid = new_iid();
    if (internable(shape->shape_iid))
        atomic_store_explicit(&shape->made_for, event->domain, memory_order_release);
}

/* The shape of EVENT, made when missing; NULL when its name is not registered,
 * cannot be interned, or it is written with other attributes than those it
 * was made with. */
static inline __attribute__((always_inline)) const struct pf_string *shape_of(
    const struct nvs_trace_event *event)
{
    if (!event->registered)
        return NULL;
    struct pf_string *shape = string_of(event->registered);
    uint32_t generation = atomic_load_explicit(&nvs_pftrace_category_generation,
                                               memory_order_acquire);
    if (__builtin_expect(atomic_load_explicit(&shape->state, memory_order_acquire) == SHAPE_UNMADE,
                         0))
        make_shape(shape, event, generation);
    if (atomic_load_explicit(&shape->made_for, memory_order_acquire) == event->domain &&
        shape->category == event->category && shape->generation == generation)
        return shape;
    return NULL;
}

/* ---- the general way: any event, its interned data first -------------------- */

/* What an event may carry besides its type. */
enum {
    WITH_NAME = 1, /* name, domain and NVTX category */
    WITH_PAYLOAD = 4,
    WITH_COLOR = 8,
};

/* One TracePacket with a TrackEvent of TYPE for EVENT at NS, on TRACK (0: the
 * thread's), with the interned data it needs that the sequence lacks. */
static byte *put_event(byte *out, struct nvs_trace_thread_ids *thread, int type,
                       const struct nvs_trace_event *event, uint64_t ns, uint64_t track,
                       unsigned with, const struct nvs_trace_args *args)
{
    struct pf_sequence *sequence = sequence_of(thread);
    const struct pf_domain *domain = domain_of(event->domain);
    const struct pf_string *name = event->registered ? string_of(event->registered) : NULL;
    uint32_t category_iid = 0;
    if ((with & WITH_NAME) && internable(domain->iid) && event->category < NVS_TRACE_CATEGORIES &&
        (atomic_load_explicit(&event->domain->named_categories, memory_order_acquire) >>
             event->category &
         1))
        category_iid = domain->categories[event->category].iid;
    bool new_domain = (with & WITH_NAME) && internable(domain->iid) &&
        !defined(sequence, domain->iid);
    bool new_name = (with & WITH_NAME) && name && internable(name->iid) &&
        !defined(sequence, name->iid);
    bool new_category = internable(category_iid) && !defined(sequence, category_iid);

    *out++ = TAG_PACKET;
    byte *packet = open_length(out);
    out = put_head(sequence, packet, ns);
    if (new_domain || new_name || new_category) {
        *out++ = TAG_INTERNED;
        byte *interned = open_length(out);
        out = interned;
        if (new_domain) {
            *out++ = IN_CATEGORIES;
            byte *entry = open_length(out);
            out = put_field_varint(entry, ENTRY_IID, domain->iid);
            out = put_text_field(out, (const byte[]){ ENTRY_TEXT }, 1, domain->name,
                                 domain->name_length);
            out = close_length(entry, out);
            define(sequence, domain->iid);
        }
        if (new_name) {
            *out++ = IN_NAMES;
            byte *entry = open_length(out);
            out = put_field_varint(entry, ENTRY_IID, name->iid);
            out = put_text_field(out, (const byte[]){ ENTRY_TEXT }, 1, name->name,
                                 name->name_length);
            out = close_length(entry, out);
            define(sequence, name->iid);
        }
        if (new_category) {
            *out++ = IN_CATEGORIES;
            byte *entry = open_length(out);
            out = put_field_varint(entry, ENTRY_IID, category_iid);
            out = put_text_field(out, (const byte[]){ ENTRY_TEXT }, 1,
                                 domain->categories[event->category].name,
                                 domain->categories[event->category].length);
            out = close_length(entry, out);
            define(sequence, category_iid);
        }
        out = close_length(interned, out);
    }
    *out++ = TAG_TRACK_EVENT;
    byte *body = open_length(out);
    out = PUT(body, TE_TYPE, (byte)type);
    if (track)
        out = put_field_varint(out, TE_TRACK, track);
    if (with & WITH_NAME) {
        uint32_t unused;
        if (internable(domain->iid)) {
            out = put_field_varint(out, TE_CATEGORY_IID, domain->iid);
            out = put_category(out, event, false, &unused);
        } else {
            out = put_text_field(out, (const byte[]){ TE2_CATEGORY }, 2, domain->name,
                                 domain->name_length);
            out = put_category(out, event, true, &unused);
        }
        if (name && internable(name->iid)) {
            out = put_field_varint(out, TE_NAME_IID, name->iid);
        } else if (name) {
            out = put_text_field(out, (const byte[]){ TE2_NAME }, 2, name->name, name->name_length);
        } else {
            char text[NAME_MAX_BYTES];
            size_t length = copy_utf8(text, sizeof text, event->text, event->text_length);
            out = put_text_field(out, (const byte[]){ TE2_NAME }, 2, text, length);
        }
    }
    if ((with & WITH_PAYLOAD) && event->payload_type != NVS_PAYLOAD_NONE)
        out = pf_put_payload(out, event);
    if ((with & WITH_COLOR) && event->color)
        out = put_color(out, event->color);
    if (args && args->count)
        out = put_args(out, args);
    out = close_length(body, out);
    /* A shape whose name, domain and category are now all defined here. */
    const struct pf_string *shape = (with & WITH_NAME) ? shape_of(event) : NULL;
    if (shape && defined(sequence, shape->iid) && defined(sequence, domain->iid) &&
        (!category_iid || defined(sequence, category_iid)))
        define(sequence, shape->shape_iid);
    return close_length(packet, out);
}

/* ---- the encoder's entry points ------------------------------------------ */

static uint64_t clock_ns(clockid_t clock)
{
    return nvs_clock_read(clock);
}

static char *pf_header(char *text, int32_t pid, const char *process_name)
{
    byte *out = (byte *)text;
    /* The process's track. */
    *out++ = TAG_PACKET;
    byte *packet = open_length(out);
    out = put_field_varint(packet, TAG_SEQUENCE, HEADER_SEQUENCE);
    out = PUT(out, TAG2_DESCRIPTOR);
    byte *descriptor = open_length(out);
    out = put_field_varint(descriptor, TD_UUID, PROCESS_UUID(pid));
    *out++ = TD_PROCESS;
    byte *process = open_length(out);
    out = put_field_varint(process, PD_PID, (uint64_t)(int64_t)pid);
    char name[NAME_MAX_BYTES];
    size_t length = copy_utf8(name, sizeof name, process_name,
                              strnlen(process_name, NVS_TRACE_TEXT_MAX));
    out = put_text_field(out, (const byte[]){ PD_NAME }, 1, name, length);
    out = close_length(process, out);
    out = close_length(descriptor, out);
    out = close_length(packet, out);
    /* The clocks: the trace's time is CLOCK_MONOTONIC's. */
    *out++ = TAG_PACKET;
    packet = open_length(out);
    out = put_field_varint(packet, TAG_SEQUENCE, HEADER_SEQUENCE);
    *out++ = TAG_CLOCK_SNAPSHOT;
    byte *snapshot = open_length(out);
    out = snapshot;
    static const struct {
        uint32_t id;
        clockid_t clock;
    } clocks[] = {
        { CLOCK_MONOTONIC_ID, CLOCK_MONOTONIC },
        { CLOCK_BOOTTIME_ID, CLOCK_BOOTTIME },
        { CLOCK_REALTIME_ID, CLOCK_REALTIME },
    };
    for (size_t i = 0; i < sizeof clocks / sizeof clocks[0]; i++) {
        *out++ = CS_CLOCK;
        byte *clock = open_length(out);
        out = put_field_varint(clock, CK_ID, clocks[i].id);
        out = put_field_varint(out, CK_TIMESTAMP, clock_ns(clocks[i].clock));
        out = close_length(clock, out);
    }
    out = put_field_varint(out, CS_PRIMARY, CLOCK_MONOTONIC_ID);
    out = close_length(snapshot, out);
    return (char *)close_length(packet, out);
}

/* The run's mark: Trace field 2, the field of the padding, which readers skip,
 * holding MARK as a ten-byte varint (its top bit set): one length for every
 * run. */
static char *pf_stamp(char *text, int32_t pid, uint64_t mark)
{
    (void)pid;
    byte *out = (byte *)text;
    *out++ = TAG_PADDING;
    return (char *)put_varint(out, mark | 1ull << 63);
}

/* A thread's track: its descriptor, with its name. */
static byte *put_thread_track(byte *out, const struct nvs_trace_thread_ids *thread,
                              const char *name)
{
    *out++ = TAG_PACKET;
    byte *packet = open_length(out);
    out = put_bytes(packet, sequence_of(thread)->head, sequence_of(thread)->head_length);
    out = PUT(out, TAG2_DESCRIPTOR);
    byte *descriptor = open_length(out);
    out = put_field_varint(descriptor, TD_UUID, THREAD_UUID(thread->tid));
    out = put_field_varint(out, TD_PARENT, PROCESS_UUID(thread->pid));
    *out++ = TD_THREAD;
    byte *body = open_length(out);
    out = put_field_varint(body, THD_PID, (uint64_t)(int64_t)thread->pid);
    out = put_field_varint(out, THD_TID, thread->tid);
    char text[NAME_MAX_BYTES];
    size_t length = copy_utf8(text, sizeof text, name, strnlen(name, NVS_TRACE_TEXT_MAX));
    out = put_text_field(out, (const byte[]){ THD_NAME }, 1, text, length);
    out = close_length(body, out);
    out = close_length(descriptor, out);
    return close_length(packet, out);
}

static char *pf_start(char *text, struct nvs_trace_thread_ids *thread, const char *name,
                      uint64_t now_ns)
{
    struct pf_sequence *sequence = sequence_of(thread);
    memset(sequence->interned, 0, sequence->marked);
    sequence->marked = 0;
    sequence->last_ns = now_ns;
    memset(sequence->head, 0, sizeof sequence->head);
    byte *head = put_field_varint(sequence->head, TAG_SEQUENCE, thread->sequence_id);
    head = PUT(head, TAG_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
    sequence->head_length = (uint32_t)(head - sequence->head);

    byte *out = (byte *)text;
    *out++ = TAG_PACKET;
    byte *packet = open_length(out);
    out = put_field_varint(packet, TAG_SEQUENCE, thread->sequence_id);
    out = PUT(out, TAG_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE);
    out = PUT(out, TAG2_DEFAULTS);
    byte *defaults = open_length(out);
    out = PUT(defaults, TAG2_CLOCK_ID, CLOCK_SEQUENCE);
    *out++ = TAG_TRACK_EVENT; /* TracePacketDefaults.track_event_defaults = 11 */
    byte *track = open_length(out);
    out = put_field_varint(track, TE_TRACK, THREAD_UUID(thread->tid));
    out = close_length(track, out);
    out = close_length(defaults, out);
    *out++ = TAG_CLOCK_SNAPSHOT;
    byte *snapshot = open_length(out);
    out = PUT(snapshot, CS_CLOCK);
    byte *clock = open_length(out);
    out = PUT(clock, CK_ID, CLOCK_SEQUENCE);
    out = put_field_varint(out, CK_TIMESTAMP, now_ns);
    out = PUT(out, CK_INCREMENTAL, 1);
    out = close_length(clock, out);
    out = PUT(out, CS_CLOCK);
    clock = open_length(out);
    out = PUT(clock, CK_ID, CLOCK_MONOTONIC_ID);
    out = put_field_varint(out, CK_TIMESTAMP, now_ns);
    out = close_length(clock, out);
    out = close_length(snapshot, out);
    *out++ = TAG_INTERNED;
    byte *interned = open_length(out);
    out = interned;
    static const char *const names[] = {
        [NAME_PAYLOAD] = "payload", [NAME_CATEGORY] = "category", [NAME_COLOR] = "color"
    };
    for (uint32_t iid = NAME_PAYLOAD; iid <= NAME_COLOR; iid++) {
        *out++ = IN_ANNOTATION_NAMES;
        byte *entry = open_length(out);
        out = put_field_varint(entry, ENTRY_IID, iid);
        out = put_text_field(out, (const byte[]){ ENTRY_TEXT }, 1, names[iid], strlen(names[iid]));
        out = close_length(entry, out);
    }
    out = close_length(interned, out);
    out = close_length(packet, out);
    return (char *)put_thread_track(out, thread, name);
}

static char *pf_thread_name(char *text, const struct nvs_trace_thread_ids *thread, const char *name)
{
    return (char *)put_thread_track((byte *)text, thread, name);
}

static __attribute__((noinline)) char *push_general(char *text, struct nvs_trace_thread_ids *thread,
                                                    const struct nvs_trace_event *event)
{
    return (char *)put_event((byte *)text, thread, TYPE_BEGIN, event, event->start_ns, 0, WITH_NAME,
                             NULL);
}

/* A push: the begin of a slice on the thread's track. */
static char *pf_push(char *text, struct nvs_trace_thread_ids *thread,
                     const struct nvs_trace_event *event)
{
    if (!event->registered)
        return push_general(text, thread, event);
    shape_of(event); /* made here, the first time */
    char *end = pf_push_cached(text, thread->sequence, event->registered, event->domain,
                               event->category, event->start_ns);
    return end ? end : push_general(text, thread, event);
}

/* A pop: the end of the innermost slice on the thread's track. */
static char *pf_complete(char *text, struct nvs_trace_thread_ids *thread,
                         const struct nvs_trace_event *event, uint64_t end_ns)
{
    return pf_pop_end(text, thread->sequence, event, end_ns);
}

/* The end of a slice that lies under others still open: named, so that it
 * closes that one. */
static char *pf_close_under(char *text, struct nvs_trace_thread_ids *thread,
                            const struct nvs_trace_event *event, uint64_t end_ns)
{
    return (char *)put_event((byte *)text, thread, TYPE_END, event, end_ns, 0,
                             WITH_NAME | WITH_PAYLOAD, NULL);
}

/* The descriptor packet of the async track of range ID (EVENT's domain). */
static byte *put_async_track(byte *out, struct nvs_trace_thread_ids *thread,
                             const struct nvs_trace_event *event, uint64_t id)
{
    const struct pf_domain *domain = domain_of(event->domain);
    *out++ = TAG_PACKET;
    byte *packet = open_length(out);
    out = put_bytes(packet, sequence_of(thread)->head, sequence_of(thread)->head_length);
    out = PUT(out, TAG2_DESCRIPTOR);
    byte *descriptor = open_length(out);
    out = put_field_varint(descriptor, TD_UUID, ASYNC_UUID(id));
    out = put_field_varint(out, TD_PARENT, PROCESS_UUID(thread->pid));
    out = put_text_field(out, (const byte[]){ TD_NAME }, 1, domain->name, domain->name_length);
    out = close_length(descriptor, out);
    return close_length(packet, out);
}

/* The begin of EVENT on the track of range ID from its name's SHAPE
 * (pf_shape_ready's: everything it names is defined on SEQUENCE), the track
 * and the payload after it. */
static byte *put_shaped_begin(byte *out, struct pf_sequence *sequence,
                              const struct pf_string *shape, const struct nvs_trace_event *event,
                              uint64_t id)
{
    *out++ = TAG_PACKET;
    byte *packet = open_length(out);
    out = put_head(sequence, packet, event->start_ns);
    *out++ = TAG_TRACK_EVENT;
    byte *body = open_length(out);
    out = put_bytes(body, shape->shape, shape->shape_length);
    out = put_field_varint(out, TE_TRACK, ASYNC_UUID(id));
    if (event->payload_type != NVS_PAYLOAD_NONE)
        out = pf_put_payload(out, event);
    out = close_length(body, out);
    return close_length(packet, out);
}

/* A range that may end elsewhere or overlap others: a track of its own,
 * named after its domain, then its begin there (from its name's shape where
 * that is ready, as a push's). */
static char *pf_begin(char *text, struct nvs_trace_thread_ids *thread,
                      const struct nvs_trace_event *event, uint64_t id)
{
    byte *out = put_async_track((byte *)text, thread, event, id);
    const struct pf_string *shape = NULL;
    if (event->registered) {
        shape_of(event); /* made here, the first time */
        shape = pf_shape_ready(sequence_of(thread), event->registered, event->domain,
                               event->category);
    }
    if (shape)
        return (char *)put_shaped_begin(out, sequence_of(thread), shape, event, id);
    return (char *)put_event(out, thread, TYPE_BEGIN, event, event->start_ns, ASYNC_UUID(id),
                             WITH_NAME | WITH_PAYLOAD, NULL);
}

/* Its end; where the begin's sequence is not this one, the track is described
 * again first: the other thread may write its begin (and descriptor) to the
 * file after this end, and a reader in file order meets the track here first.
 * Perfetto merges descriptors of the same uuid. */
static char *pf_end(char *text, struct nvs_trace_thread_ids *thread,
                    const struct nvs_trace_event *event, uint64_t id, uint64_t end_ns,
                    const struct nvs_trace_args *args, bool describe)
{
    byte *out = (byte *)text;
    if (describe)
        out = put_async_track(out, thread, event, id);
    if (args && args->count)
        return (char *)put_event(out, thread, TYPE_END, event, end_ns, ASYNC_UUID(id), 0, args);
    /* put_event's packet for an end without args, made at once: type and track */
    *out++ = TAG_PACKET;
    byte *packet = open_length(out);
    out = put_head(sequence_of(thread), packet, end_ns);
    *out++ = TAG_TRACK_EVENT;
    byte *body = open_length(out);
    out = PUT(body, TE_TYPE, TYPE_END);
    out = put_field_varint(out, TE_TRACK, ASYNC_UUID(id));
    out = close_length(body, out);
    return (char *)close_length(packet, out);
}

static char *pf_mark(char *text, struct nvs_trace_thread_ids *thread,
                     const struct nvs_trace_event *event)
{
    return (char *)put_event((byte *)text, thread, TYPE_INSTANT, event, event->start_ns, 0,
                             WITH_NAME | WITH_PAYLOAD | WITH_COLOR, NULL);
}

/* Padding: unknown varint fields of Trace, which readers skip. PADDING holds
 * one three-byte field, then two-byte ones: an odd gap starts at 0, an even
 * one at 3. */
static void pf_pad(char *out, size_t length)
{
    if (length < 3)
        return;
    memcpy(out, (const char[]){ TAG_PADDING, (char)0x80, 0 }, 3);
    for (size_t at = 3; at + 1 < length; at += 2) {
        out[at] = TAG_PADDING;
        out[at + 1] = 0;
    }
}

static size_t pf_pad_from(size_t length)
{
    return length % 2 ? 0 : 3;
}

static void pf_prepare_domain(struct nvs_trace_domain *domain)
{
    struct pf_domain *pf = domain_of(domain);
    pf->name_length = (uint32_t)copy_utf8(pf->name, sizeof pf->name, domain->name,
                                          strnlen(domain->name, NVS_TRACE_TEXT_MAX));
    pf->iid = new_iid();
}

static void pf_prepare_string(struct nvs_trace_string *string)
{
    struct pf_string *pf = string_of(string);
    pf->name_length = (uint32_t)copy_utf8(pf->name, sizeof pf->name, string->text, string->length);
    pf->iid = new_iid();
}

static void pf_prepare_category(struct nvs_trace_domain *domain, uint32_t category,
                                const char *name)
{
    struct pf_domain *pf = domain_of(domain);
    pf->categories[category].length = (uint8_t)copy_utf8(
        pf->categories[category].name, CATEGORY_MAX, name, strnlen(name, NVS_TRACE_TEXT_MAX));
    pf->categories[category].iid = new_iid();
    atomic_fetch_add_explicit(&nvs_pftrace_category_generation, 1, memory_order_release);
}

static void pf_prepare_thread(struct nvs_trace_thread_ids *thread)
{
    (void)thread;
}

const struct nvs_trace_encoder nvs_trace_pftrace = {
    .name = "pftrace",
    .header = pf_header,
    .stamp = pf_stamp,
    .start = pf_start,
    .thread_name = pf_thread_name,
    .push = pf_push,
    .close_under = pf_close_under,
    .complete = pf_complete,
    .begin = pf_begin,
    .end = pf_end,
    .mark = pf_mark,
    .pad = pf_pad,
    .pad_min = 2,
    .pad_from = pf_pad_from,
    .sequence_bytes = sizeof(struct pf_sequence),
    /* No trailer: a finished file is its packets. */
    .tail_overlap = 0,
    .tail = "",
    .tail_undo = "",
    .prepare_domain = pf_prepare_domain,
    .prepare_string = pf_prepare_string,
    .prepare_category = pf_prepare_category,
    .prepare_thread = pf_prepare_thread,
};
