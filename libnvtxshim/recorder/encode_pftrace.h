/* The protobuf encoder's wire constants and its per-sequence state, and the
 * two packets written for nearly every range: a push's begin, from its name's
 * cached shape, and a pop's end. They are inline here so that the recorder's
 * own pop (record.c) makes both in one function with the range stack and the
 * buffer; encode_pftrace.c writes everything else, and these too when
 * the cached way does not apply. docs/pftrace.md has the layout. */
#ifndef NVS_TRACE_PFTRACE_H
#define NVS_TRACE_PFTRACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../hidden.h"
#include "../pftrace_proto.h"
#include "trace.h"

/* ---- Perfetto's field tags, from the numbers in pftrace_proto.h ------------- */

#define TAG_PACKET PF_TAG(PF_TRACE_PACKET, PF_WIRE_LENGTH)
#define TAG_PADDING PF_TAG(PF_TRACE_PADDING, PF_WIRE_VARINT) /* unknown: skipped */
#define TAG_TIMESTAMP PF_TAG(PF_PACKET_TIMESTAMP, PF_WIRE_VARINT)
#define TAG_SEQUENCE PF_TAG(PF_PACKET_SEQUENCE, PF_WIRE_VARINT)
#define TAG_FLAGS PF_TAG(PF_PACKET_FLAGS, PF_WIRE_VARINT)
#define TAG_TRACK_EVENT PF_TAG(PF_PACKET_TRACK_EVENT, PF_WIRE_LENGTH)
#define TAG_INTERNED PF_TAG(PF_PACKET_INTERNED, PF_WIRE_LENGTH)
#define TAG_CLOCK_SNAPSHOT PF_TAG(PF_PACKET_CLOCK_SNAPSHOT, PF_WIRE_LENGTH)
/* TracePacket's and TracePacketDefaults' timestamp_clock_id: the same number */
#define TAG2_CLOCK_ID PF_TAG2(PF_PACKET_CLOCK, PF_WIRE_VARINT)
#define TAG2_DEFAULTS PF_TAG2(PF_PACKET_DEFAULTS, PF_WIRE_LENGTH)
#define TAG2_DESCRIPTOR PF_TAG2(PF_PACKET_TRACK_DESCRIPTOR, PF_WIRE_LENGTH)
_Static_assert(PF_PACKET_CLOCK == PF_DEFAULTS_CLOCK, "one tag for both clock ids");

#define SEQ_INCREMENTAL_STATE_CLEARED PF_SEQ_INCREMENTAL_STATE_CLEARED
#define SEQ_NEEDS_INCREMENTAL_STATE PF_SEQ_NEEDS_INCREMENTAL_STATE

#define TE_CATEGORY_IID PF_TAG(PF_EVENT_CATEGORY_IIDS, PF_WIRE_VARINT)
#define TE2_CATEGORY PF_TAG2(PF_EVENT_CATEGORIES, PF_WIRE_LENGTH)
#define TE_NAME_IID PF_TAG(PF_EVENT_NAME_IID, PF_WIRE_VARINT)
#define TE2_NAME PF_TAG2(PF_EVENT_NAME, PF_WIRE_LENGTH)
#define TE_TYPE PF_TAG(PF_EVENT_TYPE, PF_WIRE_VARINT)
/* TrackEvent's and TrackEventDefaults' track_uuid: the same number */
#define TE_TRACK PF_TAG(PF_EVENT_TRACK, PF_WIRE_VARINT)
_Static_assert(PF_EVENT_TRACK == PF_EVENT_DEFAULTS_TRACK, "one tag for both track uuids");
#define TE_ANNOTATION PF_TAG(PF_EVENT_ANNOTATIONS, PF_WIRE_LENGTH)
#define TYPE_BEGIN PF_SLICE_BEGIN
#define TYPE_END PF_SLICE_END
#define TYPE_INSTANT PF_INSTANT

#define DA_NAME_IID PF_TAG(PF_ANNOTATION_NAME_IID, PF_WIRE_VARINT)
#define DA_NAME PF_TAG(PF_ANNOTATION_NAME, PF_WIRE_LENGTH)
#define DA_UINT PF_TAG(PF_ANNOTATION_UINT, PF_WIRE_VARINT)
#define DA_INT PF_TAG(PF_ANNOTATION_INT, PF_WIRE_VARINT)
#define DA_DOUBLE PF_TAG(PF_ANNOTATION_DOUBLE, PF_WIRE_FIXED64)
#define DA_STRING PF_TAG(PF_ANNOTATION_STRING, PF_WIRE_LENGTH)

#define IN_CATEGORIES PF_TAG(PF_INTERNED_CATEGORIES, PF_WIRE_LENGTH)
#define IN_NAMES PF_TAG(PF_INTERNED_NAMES, PF_WIRE_LENGTH)
#define IN_ANNOTATION_NAMES PF_TAG(PF_INTERNED_ANNOTATION_NAMES, PF_WIRE_LENGTH)
#define ENTRY_IID PF_TAG(PF_ENTRY_IID, PF_WIRE_VARINT)
#define ENTRY_TEXT PF_TAG(PF_ENTRY_NAME, PF_WIRE_LENGTH)

#define TD_UUID PF_TAG(PF_DESCRIPTOR_UUID, PF_WIRE_VARINT)
#define TD_NAME PF_TAG(PF_DESCRIPTOR_NAME, PF_WIRE_LENGTH)
#define TD_PROCESS PF_TAG(PF_DESCRIPTOR_PROCESS, PF_WIRE_LENGTH)
#define TD_THREAD PF_TAG(PF_DESCRIPTOR_THREAD, PF_WIRE_LENGTH)
#define TD_PARENT PF_TAG(PF_DESCRIPTOR_PARENT, PF_WIRE_VARINT)
#define PD_PID PF_TAG(PF_PROCESS_PID, PF_WIRE_VARINT)
#define PD_NAME PF_TAG(PF_PROCESS_NAME, PF_WIRE_LENGTH)
#define THD_PID PF_TAG(PF_THREAD_PID, PF_WIRE_VARINT)
#define THD_TID PF_TAG(PF_THREAD_TID, PF_WIRE_VARINT)
#define THD_NAME PF_TAG(PF_THREAD_NAME, PF_WIRE_LENGTH)

#define CS_CLOCK PF_TAG(PF_SNAPSHOT_CLOCK, PF_WIRE_LENGTH)
#define CS_PRIMARY PF_TAG(PF_SNAPSHOT_PRIMARY, PF_WIRE_VARINT)
#define CK_ID PF_TAG(PF_CLOCK_ID, PF_WIRE_VARINT)
#define CK_TIMESTAMP PF_TAG(PF_CLOCK_TIMESTAMP, PF_WIRE_VARINT)
#define CK_INCREMENTAL PF_TAG(PF_CLOCK_INCREMENTAL, PF_WIRE_VARINT)
#define CLOCK_REALTIME_ID PF_CLOCK_REALTIME
#define CLOCK_MONOTONIC_ID PF_CLOCK_MONOTONIC
#define CLOCK_BOOTTIME_ID PF_CLOCK_BOOTTIME
#define CLOCK_SEQUENCE PF_CLOCK_BUILTIN_LIMIT /* the sequence's own, incremental */

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

#define INTERNED_BITS 65536u /* iids a sequence keeps track of; later ones go inline */
#define NAME_MAX_BYTES 768u  /* a name of NVS_TRACE_TEXT_MAX bytes, made UTF-8 */
#define DOMAIN_NAME_MAX 256u
#define CATEGORY_MAX 43u /* a category name, UTF-8 (the JSON form keeps 47 escaped) */
#define SHAPE_BYTES 24u

/* ---- what this encoder keeps in the model's opaque areas ---------------- */

struct pf_sequence {
    uint64_t last_ns; /* clock 64's value */
    uint32_t marked;  /* bytes of interned[] that may have a bit set */
    uint32_t head_length;
    unsigned char head[16];                    /* sequence id and SEQ_NEEDS_INCREMENTAL_STATE */
    unsigned char interned[INTERNED_BITS / 8]; /* iids defined on the sequence */
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
    char name[NAME_MAX_BYTES]; /* the name as UTF-8 */
    _Atomic uint32_t state;    /* of the shape: unmade, or taken by the one who makes it */
    /* The domain it was made for, once made (its shape_iid internable), else
     * NULL: published last, one test of both */
    _Atomic(const struct nvs_trace_domain *) made_for;
    uint32_t shape_iid; /* its bit: name, domain and category all defined */
    uint32_t category;
    uint32_t generation;
    uint32_t shape_length;
    unsigned char shape[SHAPE_BYTES]; /* the begin's body: type, category, name, annotation */
};
_Static_assert(sizeof(struct pf_string) <= NVS_ENCODER_STRING_BYTES, "string cache");
/* Bumped when a category is named: shapes made before then are remade. */
extern NVS_HIDDEN _Atomic uint32_t nvs_pftrace_category_generation;

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

#define PUT(out, ...)                                                                              \
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
static inline __attribute__((always_inline)) byte *put_head(struct pf_sequence *sequence, byte *out,
                                                            uint64_t ns)
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
    uint32_t iid = shape->shape_iid; /* below INTERNED_BITS once made */
    if (__builtin_expect(
            shape->category != category || shape->generation != generation ||
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

/* EVENT's payload annotation, any type (encode_pftrace.c). */
byte *pf_put_payload(byte *out, const struct nvs_trace_event *event);

/* A pop: the end of the innermost slice on the thread's track at END_NS, with
 * the range's payload as it is now (a transfer's bytes moved); NOW: END_NS
 * was just read (put_head_now); OWN: the payload is none or u64 (the
 * library's own), so nothing here calls out. */
static inline __attribute__((always_inline)) char *pop_end(char *text, struct pf_sequence *sequence,
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
