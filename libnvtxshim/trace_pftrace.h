/* The protobuf encoder's wire constants and its per-sequence state, and the
 * two packets written for nearly every range: a push's begin, from its name's
 * cached shape, and a pop's end. They are inline here so that the recorder's
 * own pop (record.c) makes both in one function with the range stack and the
 * buffer; trace_pftrace.c writes everything else, and these too when
 * the cached way does not apply. docs/pftrace.md has the layout. */
#ifndef NVS_TRACE_PFTRACE_H
#define NVS_TRACE_PFTRACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "trace.h"

/* ---- Perfetto's field tags (protos/perfetto/trace/...) --------------------- */

#define TAG_PACKET 0x0a                 /* Trace.packet = 1, bytes */
#define TAG_PADDING 0x10                /* Trace field 2, varint: unknown, skipped */
#define TAG_TIMESTAMP 0x40              /* TracePacket.timestamp = 8 */
#define TAG_SEQUENCE 0x50               /* .trusted_packet_sequence_id = 10 */
#define TAG_FLAGS 0x68                  /* .sequence_flags = 13 */
#define TAG_TRACK_EVENT 0x5a            /* .track_event = 11 */
#define TAG_INTERNED 0x62               /* .interned_data = 12 */
#define TAG_CLOCK_SNAPSHOT 0x32         /* .clock_snapshot = 6 */
#define TAG2_CLOCK_ID 0xd0, 0x03        /* .timestamp_clock_id = 58 (and in TracePacketDefaults) */
#define TAG2_DEFAULTS 0xda, 0x03        /* .trace_packet_defaults = 59 */
#define TAG2_DESCRIPTOR 0xe2, 0x03      /* .track_descriptor = 60 */

#define SEQ_INCREMENTAL_STATE_CLEARED 1
#define SEQ_NEEDS_INCREMENTAL_STATE 2

#define TE_CATEGORY_IID 0x18            /* TrackEvent.category_iids = 3 */
#define TE2_CATEGORY 0xb2, 0x01         /* .categories = 22 */
#define TE_NAME_IID 0x50                /* .name_iid = 10 */
#define TE2_NAME 0xba, 0x01             /* .name = 23 */
#define TE_TYPE 0x48                    /* .type = 9 */
#define TE_TRACK 0x58                   /* .track_uuid = 11 (and TrackEventDefaults) */
#define TE_ANNOTATION 0x22              /* .debug_annotations = 4 */
#define TYPE_BEGIN 1
#define TYPE_END 2
#define TYPE_INSTANT 3

#define DA_NAME_IID 0x08                /* DebugAnnotation.name_iid = 1 */
#define DA_NAME 0x52                    /* .name = 10 */
#define DA_UINT 0x18                    /* .uint_value = 3 */
#define DA_INT 0x20                     /* .int_value = 4 */
#define DA_DOUBLE 0x29                  /* .double_value = 5, fixed64 */
#define DA_STRING 0x32                  /* .string_value = 6 */

#define IN_CATEGORIES 0x0a              /* InternedData.event_categories = 1 */
#define IN_NAMES 0x12                   /* .event_names = 2 */
#define IN_ANNOTATION_NAMES 0x1a        /* .debug_annotation_names = 3 */
#define ENTRY_IID 0x08                  /* EventName, EventCategory, ...: iid = 1 */
#define ENTRY_TEXT 0x12                 /* ... name (or str) = 2 */

#define TD_UUID 0x08                    /* TrackDescriptor.uuid = 1 */
#define TD_NAME 0x12                    /* .name = 2 */
#define TD_PROCESS 0x1a                 /* .process = 3 */
#define TD_THREAD 0x22                  /* .thread = 4 */
#define TD_PARENT 0x28                  /* .parent_uuid = 5 */
#define PD_PID 0x08                     /* ProcessDescriptor.pid = 1 */
#define PD_NAME 0x32                    /* .process_name = 6 */
#define THD_PID 0x08                    /* ThreadDescriptor.pid = 1 */
#define THD_TID 0x10                    /* .tid = 2 */
#define THD_NAME 0x2a                   /* .thread_name = 5 */

#define CS_CLOCK 0x0a                   /* ClockSnapshot.clocks = 1 */
#define CS_PRIMARY 0x10                 /* .primary_trace_clock = 2 */
#define CK_ID 0x08                      /* Clock.clock_id = 1 */
#define CK_TIMESTAMP 0x10               /* .timestamp = 2 */
#define CK_INCREMENTAL 0x18             /* .is_incremental = 3 */
#define CLOCK_REALTIME_ID 1
#define CLOCK_MONOTONIC_ID 3
#define CLOCK_BOOTTIME_ID 6
#define CLOCK_SEQUENCE 64               /* the sequence's own, incremental */

/* The annotation names every sequence defines in its first packet. */
#define NAME_PAYLOAD 1
#define NAME_CATEGORY 2
#define NAME_COLOR 3

#define HEADER_SEQUENCE 1
/* Track uuids: the process's odd, an async range's even (twice its id), a
 * thread's above 2^61: short varints where they are written often. */
#define PROCESS_UUID(pid) (2ull * (uint32_t)(pid) + 1)
#define ASYNC_UUID(id) (2ull * (id))
#define THREAD_UUID(tid) (1ull << 61 | (tid))

#define INTERNED_BITS 65536u            /* iids a sequence keeps track of; later ones go inline */
#define NAME_MAX_BYTES 768u             /* a name of NVS_TRACE_TEXT_MAX bytes, made UTF-8 */
#define DOMAIN_NAME_MAX 256u
#define CATEGORY_MAX 43u             /* a category name, UTF-8 (the JSON form keeps 47 escaped) */
#define SHAPE_BYTES 24u

/* ---- what this encoder keeps in the model's opaque areas ---------------- */

struct pf_sequence {
    uint64_t last_ns;               /* clock 64's value */
    uint32_t marked;                /* bytes of interned[] that may have a bit set */
    uint32_t head_length;
    unsigned char head[16];         /* sequence id and SEQ_NEEDS_INCREMENTAL_STATE */
    unsigned char interned[INTERNED_BITS / 8];  /* iids defined on the sequence */
};

struct pf_domain {
    uint32_t iid;
    uint32_t name_length;
    char name[DOMAIN_NAME_MAX];
    struct {
        uint32_t iid;
        uint8_t length;
        char name[CATEGORY_MAX];
    } categories[NVS_TRACE_CATEGORIES];
};
_Static_assert(sizeof(struct pf_domain) <= NVS_ENCODER_DOMAIN_BYTES, "domain cache");

enum shape_state { SHAPE_UNMADE, SHAPE_MAKING };

struct pf_string {
    uint32_t iid;
    uint32_t name_length;
    char name[NAME_MAX_BYTES];      /* the name as UTF-8 */
    _Atomic uint32_t state;         /* of the shape: unmade, or taken by the one who makes it */
    /* The domain it was made for, once made (its shape_iid internable), else
     * NULL: published last, one test of both */
    _Atomic(const struct nvs_trace_domain *) made_for;
    uint32_t shape_iid;             /* its bit: name, domain and category all defined */
    uint32_t category;
    uint32_t generation;
    uint32_t shape_length;
    unsigned char shape[SHAPE_BYTES];   /* the begin's body: type, category, name, annotation */
};
_Static_assert(sizeof(struct pf_string) <= NVS_ENCODER_STRING_BYTES, "string cache");
/* Bumped when a category is named: shapes made before then are remade. */
extern _Atomic uint32_t nvs_pftrace_category_generation;

/* ---- protobuf --------------------------------------------------------------- */

typedef unsigned char byte;

static inline __attribute__((always_inline)) byte *put_varint(byte *out, uint64_t value)
{
    /* Most are times between two events and byte counts: one or two bytes. */
    if (__builtin_expect(value < 0x80, 1)) {
        *out = (byte)value;
        return out + 1;
    }
    if (value < 0x4000) {
        out[0] = (byte)(value | 0x80);
        out[1] = (byte)(value >> 7);
        return out + 2;
    }
    while (value >= 0x80) {
        *out++ = (byte)(value | 0x80);
        value >>= 7;
    }
    *out++ = (byte)value;
    return out;
}

static inline byte *put_bytes(byte *out, const void *data, size_t length)
{
    memcpy(out, data, length);
    return out + length;
}

#define PUT(out, ...)                                                   \
    put_bytes((out), (const byte[]){ __VA_ARGS__ }, sizeof((const byte[]){ __VA_ARGS__ }))

static inline byte *put_field_varint(byte *out, byte tag, uint64_t value)
{
    *out++ = tag;
    return put_varint(out, value);
}

/* ---- a sequence's interned ids -------------------------------------------- */

static inline bool defined(const struct pf_sequence *sequence, uint32_t iid)
{
    return iid < INTERNED_BITS && (sequence->interned[iid / 8] >> (iid % 8) & 1);
}

/* ---- the packet's head: sequence, flags and time --------------------------- */

/* The sequence id and flags, then the time: on clock 64 as the delta from the
 * sequence's last time, or, for a time before it, on CLOCK_MONOTONIC whole. */
static inline __attribute__((always_inline)) byte *put_head(struct pf_sequence *sequence,
                                                            byte *out, uint64_t ns)
{
    memcpy(out, sequence->head, sizeof sequence->head);
    out += sequence->head_length;
    if (__builtin_expect(ns >= sequence->last_ns, 1)) {
        out = put_field_varint(out, TAG_TIMESTAMP, ns - sequence->last_ns);
        sequence->last_ns = ns;
        return out;
    }
    out = PUT(out, TAG2_CLOCK_ID, CLOCK_MONOTONIC_ID);
    return put_field_varint(out, TAG_TIMESTAMP, ns);
}

/* ---- the packets of a push/pop range ------------------------------------------ */

static inline struct pf_sequence *pf_sequence_of(void *sequence)
{
    return (struct pf_sequence *)sequence;
}

/* NAME's shape, when it is made, matches DOMAIN and CATEGORY and is defined
 * on SEQUENCE: a push's begin can be copied from it. NULL otherwise (the
 * encoder's push then makes what is missing). */
static inline __attribute__((always_inline)) const struct pf_string *pf_shape_ready(
    const struct pf_sequence *sequence, const struct nvs_trace_string *name,
    const struct nvs_trace_domain *domain, uint32_t category)
{
    const struct pf_string *shape = (const struct pf_string *)name->encoded;
    uint32_t generation = atomic_load_explicit(&nvs_pftrace_category_generation,
                                               memory_order_acquire);
    /* made_for first: it publishes the fields read after it */
    if (__builtin_expect(atomic_load_explicit(&shape->made_for, memory_order_acquire) != domain, 0))
        return NULL;
    uint32_t iid = shape->shape_iid;    /* below INTERNED_BITS once made */
    if (__builtin_expect(shape->category != category || shape->generation != generation ||
                         !(sequence->interned[iid / 8 % sizeof sequence->interned] >> (iid % 8) & 1),
                         0))
        return NULL;
    return shape;
}

/* The time of a packet written now (a pop's end, and the begin that waited for
 * it) as the delta from the sequence's last: never before it. The recorder's clock
 * (clock.h) can read a few nanoseconds behind a time it gave before, on
 * another CPU or after a new anchor; the sequence keeps its order. */
static inline __attribute__((always_inline)) byte *put_head_now(struct pf_sequence *sequence,
                                                                byte *out, uint64_t ns)
{
    uint64_t last = sequence->last_ns;
    ns = ns > last ? ns : last;
    memcpy(out, sequence->head, sizeof sequence->head);
    out += sequence->head_length;
    out = put_field_varint(out, TAG_TIMESTAMP, ns - last);
    sequence->last_ns = ns;
    return out;
}

/* A push's begin at OUT from SHAPE (pf_shape_ready's) at NS. */
static inline __attribute__((always_inline)) char *pf_put_begin(char *text,
                                                                struct pf_sequence *sequence,
                                                                const struct pf_string *shape,
                                                                uint64_t ns, bool now)
{
    /* Every length here is below 128: one byte each. */
    byte *out = (byte *)text, *packet = out + 2;
    out[0] = TAG_PACKET;
    out = now ? put_head_now(sequence, packet, ns) : put_head(sequence, packet, ns);
    out[0] = TAG_TRACK_EVENT;
    out[1] = (byte)shape->shape_length;
    memcpy(out + 2, shape->shape, SHAPE_BYTES);
    out += 2 + shape->shape_length;
    packet[-1] = (byte)(out - packet);
    return (char *)out;
}

/* The begin of a push of NAME in DOMAIN and CATEGORY at NS, at OUT, when the
 * name's shape is ready (above); NULL otherwise. */
static inline char *pf_push_cached(char *text, void *sequence_area,
                                   const struct nvs_trace_string *name,
                                   const struct nvs_trace_domain *domain, uint32_t category,
                                   uint64_t ns)
{
    struct pf_sequence *sequence = pf_sequence_of(sequence_area);
    const struct pf_string *shape = pf_shape_ready(sequence, name, domain, category);
    return shape ? pf_put_begin(text, sequence, shape, ns, false) : NULL;
}

/* EVENT's payload annotation, any type (trace_pftrace.c). */
byte *pf_put_payload(byte *out, const struct nvs_trace_event *event);

/* A pop: the end of the innermost slice on the thread's track at END_NS, with
 * the range's payload as it is now (a transfer's bytes moved); NOW: END_NS
 * was just read (put_head_now); OWN: the payload is none or u64 (the
 * library's own), so nothing here calls out. */
static inline __attribute__((always_inline)) char *pop_end(char *text,
                                                           struct pf_sequence *sequence,
                                                           const struct nvs_trace_event *event,
                                                           uint64_t end_ns, bool now, bool own)
{
    /* Every length here is below 128: one byte each. */
    byte *out = (byte *)text, *packet = out + 2;
    out[0] = TAG_PACKET;
    out = now ? put_head_now(sequence, packet, end_ns) : put_head(sequence, packet, end_ns);
    byte *body = out + 2;
    out[0] = TAG_TRACK_EVENT;
    body[0] = TE_TYPE;
    body[1] = TYPE_END;
    out = body + 2;
    if (event->payload_type == NVS_PAYLOAD_U64) {
        memcpy(out, (const byte[]){ TE_ANNOTATION, 0, DA_NAME_IID, NAME_PAYLOAD, DA_UINT }, 5);
        byte *end = put_varint(out + 5, event->payload);
        out[1] = (byte)(end - out - 2);
        out = end;
    } else if (!own && event->payload_type != NVS_PAYLOAD_NONE) {
        out = pf_put_payload(out, event);
    }
    body[-1] = (byte)(out - body);
    packet[-1] = (byte)(out - packet);
    return (char *)out;
}

/* The encoder's pop (any payload). */
static inline char *pf_pop_end(char *text, void *sequence_area, const struct nvs_trace_event *event,
                               uint64_t end_ns)
{
    return pop_end(text, pf_sequence_of(sequence_area), event, end_ns, false, false);
}

/* The recorder's own pop: END_NS just read, the payload none or u64. */
static inline __attribute__((always_inline)) char *pf_pop_end_own(
    char *text, struct pf_sequence *sequence, const struct nvs_trace_event *event, uint64_t end_ns)
{
    return pop_end(text, sequence, event, end_ns, true, true);
}

#endif

