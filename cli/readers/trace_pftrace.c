/* A binary trace read into the event model (trace_pftrace.h): Perfetto's
 * protobuf Trace as docs/pftrace.md lays it out, parsed by hand (the command
 * links no protobuf library). Every varint and length is checked against the
 * end of the message that holds it, every field read moves on by at least a
 * byte, and nothing recurses: a corrupt file ends in one message, never a
 * crash or a loop. The file is read whole (it is compact), then packet by
 * packet: per sequence its interned names and its incremental clock, per track
 * its open slices. */
#include "util/grow.h"
#include "util/map.h"
#include "pftrace_proto.h"
#include "readers/pftrace_wire.h"
#include "readers/trace_pftrace.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "readers/trace_json.h"
#include "readers/trace_reader.h"
#include "util/json_text.h"

/* ---- the reader's state ----------------------------------------------------------- */

/* A writer sequence (a thread's buffer): its incremental state. */
struct sequence {
    uint32_t
        generation; /* bumped by PF_SEQ_INCREMENTAL_STATE_CLEARED: older interned entries are gone */
    uint32_t default_clock; /* trace_packet_defaults.timestamp_clock_id, when has_default_clock */
    uint32_t clock_id;      /* the sequence's own clock (64...) from its snapshot, when has_clock */
    uint64_t default_track; /* track_event_defaults.track_uuid, when has_default_track */
    uint64_t clock;         /* that clock's value now */
    int64_t clock_offset;   /* PF_CLOCK_MONOTONIC less that clock, from the same snapshot */
    bool has_default_clock, has_default_track, has_clock, incremental;
};

/* A range begun and not yet ended (or, on an async track, an end waiting for its begin). */

struct halves {
    struct nvs_trace_side *items;
    size_t count, capacity;
};

struct track {
    uint32_t pid, tid;  /* a thread track's thread (described, or from its uuid) */
    bool thread;        /* described as a thread's */
    struct halves open; /* begun, not ended: the innermost last */
    struct halves ends; /* an async track's ends read before their begin */
};

/* The uuids the library gives its process and thread tracks (docs/pftrace.md: Tracks). */
#define PROCESS_TRACK_BIT (1ull << 62)
#define THREAD_TRACK_BIT (1ull << 61)

struct reader {
    struct nvs_events *events;
    const struct nvs_load_options *options;
    const char *path;
    struct nvs_trace_kinds kinds; /* the non-NVTX categories, interned */
    const char *empty;            /* "", interned */
    struct sequence *sequences;
    size_t sequence_count, sequence_capacity;
    struct track *tracks;
    size_t track_count, track_capacity;
    size_t *free_tracks; /* places in tracks of async tracks let go, to reuse */
    size_t free_track_count, free_track_capacity;
    struct map sequence_ids; /* (sequence id, 0) -> index in sequences */
    struct map track_ids;    /* (uuid, 0) -> index in tracks */
    struct map interned;     /* (iid, sequence << 32 | generation << 2 | kind) -> interned text */
    /* PF_CLOCK_MONOTONIC less each builtin clock, from the latest snapshot that has both */
    int64_t builtin_offset[PF_CLOCK_BUILTIN_LIMIT];
    uint64_t builtin_known;
    uint32_t process_pid; /* from the process descriptor */
    size_t packets;       /* whole packets read */
    size_t unbegun;       /* slice ends that closed nothing */
    size_t unnamed;       /* events naming an iid not defined on their sequence */
    size_t untimed;       /* events without a time (no timestamp, or an unknown clock) */
    size_t trackless;     /* events on no track (none given, no default) */
    const char *problem;  /* corrupt: what, in the packet at problem_at */
    size_t problem_at;
    bool failed; /* out of memory */
};

static int out_of_memory(struct reader *reader)
{
    reader->failed = true;
    return -1;
}

static int corrupt(struct reader *reader, const char *problem)
{
    reader->problem = problem;
    return -1;
}

static struct nvs_trace_side *halves_add(struct halves *halves)
{
    struct nvs_trace_side *items = nvs_room_for_one(halves->items, halves->count, &halves->capacity,
                                                    sizeof *items, 8);
    if (!items)
        return NULL;
    halves->items = items;
    struct nvs_trace_side *half = &items[halves->count++];
    memset(half, 0, sizeof *half);
    return half;
}

/* Takes item I out, the ones after it moving down. */
static struct nvs_trace_side halves_take(struct halves *halves, size_t i)
{
    struct nvs_trace_side taken = halves->items[i];
    memmove(&halves->items[i], &halves->items[i + 1], (halves->count - i - 1) * sizeof taken);
    halves->count--;
    return taken;
}

/* The sequence ID's state, made when new; NULL when out of memory. Valid
 * until the next call. */
static struct sequence *sequence_of(struct reader *reader, uint32_t id)
{
    struct map_slot *slot = nvs_map_put(&reader->sequence_ids, id, 0);
    if (!slot)
        return NULL;
    if (slot->value != SIZE_MAX)
        return &reader->sequences[slot->value];
    struct sequence *sequences = nvs_room_for_one(reader->sequences, reader->sequence_count,
                                                  &reader->sequence_capacity, sizeof *sequences,
                                                  16);
    if (!sequences)
        return NULL;
    reader->sequences = sequences;
    slot->value = reader->sequence_count;
    struct sequence *sequence = &sequences[reader->sequence_count++];
    memset(sequence, 0, sizeof *sequence);
    return sequence;
}

/* The track UUID, made when new (a thread track by its uuid's form, until
 * described); NULL when out of memory. Valid until the next call. */
static struct track *track_of(struct reader *reader, uint64_t uuid)
{
    struct map_slot *slot = nvs_map_put(&reader->track_ids, uuid, 0);
    if (!slot)
        return NULL;
    if (slot->value != SIZE_MAX)
        return &reader->tracks[slot->value];
    struct track *track;
    if (reader->free_track_count) {
        slot->value = reader->free_tracks[--reader->free_track_count];
        track = &reader->tracks[slot->value];
    } else {
        struct track *tracks = nvs_room_for_one(reader->tracks, reader->track_count,
                                                &reader->track_capacity, sizeof *tracks, 64);
        if (!tracks) {
            nvs_map_remove(&reader->track_ids, slot);
            return NULL;
        }
        reader->tracks = tracks;
        slot->value = reader->track_count;
        track = &tracks[reader->track_count++];
    }
    memset(track, 0, sizeof *track);
    if ((uuid & ~(THREAD_TRACK_BIT - 1)) == THREAD_TRACK_BIT) {
        track->pid = reader->process_pid;
        track->tid = (uint32_t)uuid;
    }
    return track;
}

/* An async track whose range has been joined, let go: the library gives each
 * async range a track of its own, so a trace of hours has millions of them,
 * and what is kept is those still open. A later event on it makes it again. */
static void release_track(struct reader *reader, struct track *track, uint64_t uuid)
{
    if (track->open.count || track->ends.count)
        return;
    size_t *grown = nvs_room_for_one(reader->free_tracks, reader->free_track_count,
                                     &reader->free_track_capacity, sizeof *grown, 64);
    if (!grown)
        return; /* kept, then: it costs memory, not figures */
    reader->free_tracks = grown;
    struct map_slot *slot = nvs_map_find(&reader->track_ids, uuid, 0);
    if (!slot)
        return;
    reader->free_tracks[reader->free_track_count++] = slot->value;
    nvs_map_remove(&reader->track_ids, slot);
    free(track->open.items);
    free(track->ends.items);
    memset(track, 0, sizeof *track);
}

/* A thread track: described as one, or of the library's form 1<<61 | tid. */
static bool is_thread_track(const struct track *track, uint64_t uuid)
{
    return track->thread || (uuid & ~(THREAD_TRACK_BIT - 1)) == THREAD_TRACK_BIT;
}

/* The thread whose sequence this is (its default track's). */
static void sequence_thread(struct reader *reader, const struct sequence *sequence, uint32_t *pid,
                            uint32_t *tid)
{
    *pid = reader->process_pid;
    *tid = 0;
    if (!sequence->has_default_track)
        return;
    struct map_slot *slot = nvs_map_find(&reader->track_ids, sequence->default_track, 0);
    if (slot) {
        *pid = reader->tracks[slot->value].pid;
        *tid = reader->tracks[slot->value].tid;
    } else if ((sequence->default_track & ~(THREAD_TRACK_BIT - 1)) == THREAD_TRACK_BIT) {
        *tid = (uint32_t)sequence->default_track;
    }
}

static uint64_t interned_key(uint32_t sequence_id, const struct sequence *sequence, unsigned kind)
{
    return (uint64_t)sequence_id << 32 | (uint64_t)(sequence->generation & 0x3fffffffu) << 2 | kind;
}

/* The text interned as IID of KIND on the sequence now, or NULL. */
static const char *interned(const struct reader *reader, uint32_t sequence_id,
                            const struct sequence *sequence, unsigned kind, uint64_t iid)
{
    struct map_slot *slot = nvs_map_find(&reader->interned, iid,
                                         interned_key(sequence_id, sequence, kind & 3));
    return slot ? (const char *)(uintptr_t)slot->value : NULL;
}

/* TEXT interned, a byte that does not begin a well-formed UTF-8 character
 * written as U+FFFD, as the JSON form writes it: report prints the same. */
static const char *intern_bytes(struct reader *reader, struct bytes text)
{
    const char *at = (const char *)text.at, *end = (const char *)text.end;
    const char *interned;
    if (nvs_utf8_valid(at, end)) {
        interned = nvs_events_intern(reader->events, at, (size_t)(end - at));
    } else {
        size_t used;
        char *copy = nvs_utf8_clean(at, end, &used);
        interned = copy ? nvs_events_intern(reader->events, copy, used) : NULL;
        free(copy);
    }
    reader->failed |= !interned;
    return interned;
}

/* ---- packets ---------------------------------------------------------------------- */

/* What a packet holds, gathered before any of it is used: the sequence's
 * state changes first (cleared, defaults, snapshot, interned data), then the
 * packet's time, then its descriptor or event. */
struct packet {
    uint32_t sequence_id, clock;
    uint64_t timestamp, flags;
    bool has_timestamp, has_clock, cleared;
    struct bytes defaults, snapshot, interned, descriptor, event;
};

static int read_defaults(struct reader *reader, struct sequence *sequence, struct bytes message)
{
    struct field field, inner;
    int got, inner_got = 0;
    FOR_EACH_FIELD(cursor, message, field, got)
    {
        if (nvs_pb_is_varint(&field, PF_DEFAULTS_CLOCK)) {
            sequence->default_clock = (uint32_t)field.value;
            sequence->has_default_clock = true;
        } else if (nvs_pb_is_message(&field, PF_DEFAULTS_TRACK_EVENT)) {
            FOR_EACH_FIELD(inner_cursor, field.bytes, inner, inner_got)
            {
                if (nvs_pb_is_varint(&inner, PF_EVENT_DEFAULTS_TRACK)) {
                    sequence->default_track = inner.value;
                    sequence->has_default_track = true;
                }
            }
            if (inner_got < 0)
                return corrupt(reader, nvs_pb_field_problem(inner_got));
        }
    }
    return got < 0 ? corrupt(reader, nvs_pb_field_problem(got)) : 0;
}

/* A clock snapshot: the sequence's own clock (64 and up) set, with its offset
 * to PF_CLOCK_MONOTONIC; the builtin clocks' offsets (the header's snapshot). */
static int read_snapshot(struct reader *reader, struct sequence *sequence, struct bytes message)
{
    struct clock {
        uint32_t id;
        uint64_t timestamp;
        bool incremental;
    } clocks[16];
    size_t count = 0;
    struct field field, inner;
    int got, inner_got = 0;
    FOR_EACH_FIELD(cursor, message, field, got)
    {
        if (!nvs_pb_is_message(&field, PF_SNAPSHOT_CLOCK))
            continue;
        uint32_t id = 0;
        uint64_t timestamp = 0;
        bool incremental = false;
        FOR_EACH_FIELD(inner_cursor, field.bytes, inner, inner_got)
        {
            if (nvs_pb_is_varint(&inner, PF_CLOCK_ID))
                id = (uint32_t)inner.value;
            else if (nvs_pb_is_varint(&inner, PF_CLOCK_TIMESTAMP))
                timestamp = inner.value;
            else if (nvs_pb_is_varint(&inner, PF_CLOCK_INCREMENTAL))
                incremental = inner.value != 0;
        }
        if (inner_got < 0)
            return corrupt(reader, nvs_pb_field_problem(inner_got));
        if (count < sizeof clocks / sizeof clocks[0])
            clocks[count++] = (struct clock){ id, timestamp, incremental };
    }
    if (got < 0)
        return corrupt(reader, nvs_pb_field_problem(got));
    bool has_monotonic = false;
    uint64_t monotonic = 0;
    for (size_t i = 0; i < count; i++)
        if (clocks[i].id == PF_CLOCK_MONOTONIC) {
            has_monotonic = true;
            monotonic = clocks[i].timestamp;
        }
    for (size_t i = 0; i < count; i++) {
        int64_t offset = has_monotonic ? (int64_t)(monotonic - clocks[i].timestamp) : 0;
        if (clocks[i].id >= PF_CLOCK_BUILTIN_LIMIT) {
            sequence->clock_id = clocks[i].id;
            sequence->clock = clocks[i].timestamp;
            sequence->clock_offset = offset;
            sequence->incremental = clocks[i].incremental;
            sequence->has_clock = true;
        } else if (has_monotonic) {
            reader->builtin_offset[clocks[i].id] = offset;
            reader->builtin_known |= 1ull << clocks[i].id;
        }
    }
    return 0;
}

/* Interned data: event categories, event names and annotation names, each
 * (iid, text) kept for the sequence until its state is cleared. */
static int read_interned(struct reader *reader, uint32_t sequence_id,
                         const struct sequence *sequence, struct bytes message)
{
    struct field field, inner;
    int got, inner_got = 0;
    FOR_EACH_FIELD(cursor, message, field, got)
    {
        if (!nvs_pb_is_message(&field, PF_INTERNED_CATEGORIES) &&
            !nvs_pb_is_message(&field, PF_INTERNED_NAMES) &&
            !nvs_pb_is_message(&field, PF_INTERNED_ANNOTATION_NAMES))
            continue;
        uint64_t iid = 0;
        bool has_iid = false;
        struct bytes name = { 0 };
        bool has_name = false;
        FOR_EACH_FIELD(inner_cursor, field.bytes, inner, inner_got)
        {
            if (nvs_pb_is_varint(&inner, PF_ENTRY_IID)) {
                iid = inner.value;
                has_iid = true;
            } else if (nvs_pb_is_message(&inner, PF_ENTRY_NAME)) {
                name = inner.bytes;
                has_name = true;
            }
        }
        if (inner_got < 0)
            return corrupt(reader, nvs_pb_field_problem(inner_got));
        if (!has_iid || !has_name)
            continue;
        const char *text = intern_bytes(reader, name);
        struct map_slot *slot = text
            ? nvs_map_put(&reader->interned, iid, interned_key(sequence_id, sequence, field.number))
            : NULL;
        if (!slot)
            return out_of_memory(reader);
        slot->value = (size_t)(uintptr_t)text;
    }
    return got < 0 ? corrupt(reader, nvs_pb_field_problem(got)) : 0;
}

/* NAME (or "" when the descriptor has none) for (PID, TID), as the JSON form's
 * metadata events name them. */
static int add_name(struct reader *reader, uint32_t pid, uint32_t tid, struct bytes name,
                    bool has_name)
{
    const char *text = has_name ? intern_bytes(reader, name) : reader->empty;
    if (!text || !nvs_events_add_name(reader->events, pid, tid, text, true))
        return out_of_memory(reader);
    return 0;
}

/* A track descriptor: a process's (its name), a thread's (its name, and the
 * thread its track's events are on), or an async range's (nothing to keep). */
static int read_descriptor(struct reader *reader, struct bytes message)
{
    uint64_t uuid = 0;
    bool process = false, thread = false, has_name = false;
    uint32_t pid = 0, tid = 0;
    struct bytes name = { 0 };
    struct field field, inner;
    int got, inner_got = 0;
    FOR_EACH_FIELD(cursor, message, field, got)
    {
        if (nvs_pb_is_varint(&field, PF_DESCRIPTOR_UUID)) {
            uuid = field.value;
        } else if (nvs_pb_is_message(&field, PF_DESCRIPTOR_PROCESS) ||
                   nvs_pb_is_message(&field, PF_DESCRIPTOR_THREAD)) {
            bool is_process = field.number == PF_DESCRIPTOR_PROCESS;
            process |= is_process;
            thread |= !is_process;
            FOR_EACH_FIELD(inner_cursor, field.bytes, inner, inner_got)
            {
                if (nvs_pb_is_varint(&inner, is_process ? PF_PROCESS_PID : PF_THREAD_PID)) {
                    pid = (uint32_t)inner.value;
                } else if (!is_process && nvs_pb_is_varint(&inner, PF_THREAD_TID)) {
                    tid = (uint32_t)inner.value;
                } else if (nvs_pb_is_message(&inner,
                                             is_process ? PF_PROCESS_NAME : PF_THREAD_NAME)) {
                    name = inner.bytes;
                    has_name = true;
                }
            }
            if (inner_got < 0)
                return corrupt(reader, nvs_pb_field_problem(inner_got));
        }
    }
    if (got < 0)
        return corrupt(reader, nvs_pb_field_problem(got));
    if (thread) {
        struct track *track = track_of(reader, uuid);
        if (!track)
            return out_of_memory(reader);
        track->thread = true;
        track->pid = pid;
        track->tid = tid;
        return add_name(reader, pid, tid, name, has_name);
    }
    if (process) {
        reader->process_pid = pid;
        return add_name(reader, pid, 0, name, has_name);
    }
    return 0;
}

/* ---- events ---------------------------------------------------------------------- */

/* What an event says of itself. */
struct event_fields {
    uint64_t type, track;
    bool has_track;
    const char *name, *domain; /* interned; NULL: none given */
    bool undefined;            /* names an iid not defined on the sequence */
    int64_t payload;
    bool has_payload;
    struct nvs_kernel_figures figures;
};

/* An annotation's number as the JSON reader takes the number the JSON form
 * writes for it (nvs_json_int64: integers that fit, a fraction cut off, no
 * NaN or infinity); false when it would take none. */
static bool annotation_number(unsigned number, uint64_t bits, int64_t *out)
{
    if (number == PF_ANNOTATION_UINT) {
        if (bits > (uint64_t)INT64_MAX)
            return false;
        *out = (int64_t)bits;
        return true;
    }
    if (number == PF_ANNOTATION_INT) {
        if (bits == (uint64_t)INT64_MIN)
            return false;
        *out = (int64_t)bits;
        return true;
    }
    double value;
    memcpy(&value, &bits, sizeof value);
    if (!(value > -9.2e18 && value < 9.2e18))
        return false;
    *out = (int64_t)value;
    return true;
}

/* A debug annotation: the payload, or one of the kernel probe's figures (the
 * JSON form's args of the same names); any other is left out, as the JSON
 * reader leaves out the args it does not know. */
static int read_annotation(struct reader *reader, uint32_t sequence_id,
                           const struct sequence *sequence, struct bytes message,
                           struct event_fields *event)
{
    const char *key = NULL;
    size_t key_length = 0;
    unsigned value_field = 0;
    uint64_t bits = 0;
    struct field field;
    int got;
    FOR_EACH_FIELD(cursor, message, field, got)
    {
        if (nvs_pb_is_varint(&field, PF_ANNOTATION_NAME_IID)) {
            key = interned(reader, sequence_id, sequence, PF_INTERNED_ANNOTATION_NAMES,
                           field.value);
            key_length = key ? strlen(key) : 0;
        } else if (nvs_pb_is_message(&field, PF_ANNOTATION_NAME)) {
            key = (const char *)field.bytes.at;
            key_length = (size_t)(field.bytes.end - field.bytes.at);
        } else if (nvs_pb_is_varint(&field, PF_ANNOTATION_UINT) ||
                   nvs_pb_is_varint(&field, PF_ANNOTATION_INT) ||
                   (field.number == PF_ANNOTATION_DOUBLE && field.wire == PF_WIRE_FIXED64)) {
            value_field = field.number;
            bits = field.value;
        }
    }
    if (got < 0)
        return corrupt(reader, nvs_pb_field_problem(got));
    int64_t value;
    if (!key || !value_field || !annotation_number(value_field, bits, &value))
        return 0;
    if (key_length == strlen("payload") && memcmp(key, "payload", key_length) == 0) {
        event->payload = value;
        event->has_payload = true;
        return 0;
    }
    for (unsigned i = 0; i < NVS_FIGURE_COUNT; i++) {
        const char *figure = nvs_kernel_figure_key((enum nvs_kernel_figure)i);
        if (value >= 0 && key_length == strlen(figure) && memcmp(key, figure, key_length) == 0) {
            event->figures.value[i] = (uint64_t)value;
            event->figures.present |= 1u << i;
        }
    }
    return 0;
}

static int read_event_fields(struct reader *reader, uint32_t sequence_id,
                             const struct sequence *sequence, struct bytes message,
                             struct event_fields *event)
{
    struct field field;
    int got, inner_got;
    FOR_EACH_FIELD(cursor, message, field, got)
    {
        const char *text = NULL;
        switch (field.number) {
        case PF_EVENT_TYPE:
            if (field.wire == PF_WIRE_VARINT)
                event->type = field.value;
            break;
        case PF_EVENT_TRACK:
            if (field.wire == PF_WIRE_VARINT) {
                event->track = field.value;
                event->has_track = true;
            }
            break;
        case PF_EVENT_NAME_IID:
            if (field.wire == PF_WIRE_VARINT) {
                event->name = interned(reader, sequence_id, sequence, PF_INTERNED_NAMES,
                                       field.value);
                event->undefined |= !event->name;
            }
            break;
        case PF_EVENT_NAME:
            if (field.wire == PF_WIRE_LENGTH && !(event->name = intern_bytes(reader, field.bytes)))
                return out_of_memory(reader);
            break;
        case PF_EVENT_CATEGORY_IIDS:
            /* repeated: the first is the domain; packed or not */
            if (field.wire == PF_WIRE_VARINT) {
                text = interned(reader, sequence_id, sequence, PF_INTERNED_CATEGORIES, field.value);
                event->undefined |= !text;
            } else if (field.wire == PF_WIRE_LENGTH) {
                uint64_t iid;
                struct bytes packed = field.bytes;
                while (packed.at < packed.end && !text) {
                    if ((inner_got = nvs_pb_read_varint(&packed, &iid)) != FIELD_OK)
                        return corrupt(reader, nvs_pb_field_problem(inner_got));
                    text = interned(reader, sequence_id, sequence, PF_INTERNED_CATEGORIES, iid);
                    event->undefined |= !text;
                }
            }
            if (!event->domain)
                event->domain = text;
            break;
        case PF_EVENT_CATEGORIES:
            if (field.wire == PF_WIRE_LENGTH && !event->domain &&
                !(event->domain = intern_bytes(reader, field.bytes)))
                return out_of_memory(reader);
            break;
        case PF_EVENT_ANNOTATIONS:
            if (field.wire == PF_WIRE_LENGTH &&
                read_annotation(reader, sequence_id, sequence, field.bytes, event) != 0)
                return -1;
            break;
        default: break;
        }
    }
    return got < 0 ? corrupt(reader, nvs_pb_field_problem(got)) : 0;
}

/* BEGIN ended by END, added (nvs_trace_add_joined). */
static int join(struct reader *reader, const struct nvs_trace_side *begin,
                const struct nvs_trace_side *end, bool async)
{
    if (!nvs_trace_add_joined(reader->events, &reader->kinds, begin, end, async))
        return out_of_memory(reader);
    return 0;
}

/* The innermost open slice that END closes: of its name and category where
 * it gives them (as Perfetto matches them); SIZE_MAX for none. */
static size_t matching_open(const struct halves *open, const struct event_fields *end)
{
    for (size_t i = open->count; i-- > 0;) {
        const struct nvs_event *range = &open->items[i].range;
        if ((!end->name || end->name == range->name) &&
            (!end->domain || end->domain == range->domain))
            return i;
    }
    return SIZE_MAX;
}

static int read_track_event(struct reader *reader, uint32_t sequence_id,
                            const struct sequence *sequence, struct bytes message, int64_t time,
                            bool timed)
{
    struct event_fields fields = { 0 };
    if (read_event_fields(reader, sequence_id, sequence, message, &fields) != 0)
        return -1;
    if (fields.type != PF_SLICE_BEGIN && fields.type != PF_SLICE_END && fields.type != PF_INSTANT)
        return 0;
    if (!timed) {
        reader->untimed++;
        return 0;
    }
    if (fields.undefined && fields.type != PF_SLICE_END) {
        reader->unnamed++;
        return 0;
    }
    uint64_t uuid = fields.has_track ? fields.track : sequence->default_track;
    if (!fields.has_track && !sequence->has_default_track) {
        reader->trackless++;
        return 0;
    }
    struct nvs_trace_side half = { .figures = fields.figures };
    sequence_thread(reader, sequence, &half.range.pid, &half.range.tid);
    struct track *track = track_of(reader, uuid);
    if (!track)
        return out_of_memory(reader);
    bool thread = is_thread_track(track, uuid);
    if (thread) {
        half.range.pid = track->pid;
        half.range.tid = track->tid;
    }
    half.range.start = half.range.end = time;
    half.range.name = fields.name ? fields.name : reader->empty;
    half.range.domain = fields.domain ? fields.domain : reader->empty;
    half.range.payload = fields.payload;
    half.range.has_payload = fields.has_payload;
    if (fields.type == PF_INSTANT) {
        struct nvs_event *mark = nvs_events_add(reader->events);
        if (!mark)
            return out_of_memory(reader);
        *mark = half.range;
        mark->kind = NVS_EVENT_MARK;
        return 0;
    }
    if (fields.type == PF_SLICE_BEGIN) {
        if (!thread && track->ends.count) {
            /* its end came first (another thread's buffer reached the file before) */
            struct nvs_trace_side end = halves_take(&track->ends, track->ends.count - 1);
            int joined = join(reader, &half, &end, true);
            release_track(reader, track, uuid);
            return joined;
        }
        struct nvs_trace_side *open = halves_add(&track->open);
        if (!open)
            return out_of_memory(reader);
        *open = half;
        return 0;
    }
    size_t match = matching_open(&track->open, &fields);
    if (match != SIZE_MAX) {
        /* A slice closed under others still open crosses them: the JSON form
         * writes it as an async pair, and so it is one here too. */
        bool under = match + 1 < track->open.count;
        struct nvs_trace_side begin = halves_take(&track->open, match);
        int joined = join(reader, &begin, &half, !thread || under);
        if (!thread)
            release_track(reader, track, uuid);
        return joined;
    }
    if (thread) {
        reader->unbegun++;
        return 0;
    }
    struct nvs_trace_side *end = halves_add(&track->ends);
    if (!end)
        return out_of_memory(reader);
    *end = half;
    return 0;
}

/* The packet's time on PF_CLOCK_MONOTONIC: its timestamp on its clock (the
 * sequence's default), the sequence's incremental clock moved by it; false
 * when it has none, or its clock is not known. */
static bool packet_time(struct reader *reader, struct sequence *sequence,
                        const struct packet *packet, int64_t *time)
{
    if (!packet->has_timestamp)
        return false;
    uint32_t clock = packet->has_clock ? packet->clock
        : sequence->has_default_clock  ? sequence->default_clock
                                       : PF_CLOCK_BOOTTIME;
    if (clock == PF_CLOCK_MONOTONIC) {
        *time = (int64_t)packet->timestamp;
        return true;
    }
    if (clock >= PF_CLOCK_BUILTIN_LIMIT) {
        if (!sequence->has_clock || clock != sequence->clock_id)
            return false;
        uint64_t value = packet->timestamp;
        if (sequence->incremental)
            value = sequence->clock += packet->timestamp;
        *time = (int64_t)(value + (uint64_t)sequence->clock_offset);
        return true;
    }
    /* another builtin clock: by the snapshot's offset, or as it is (a trace without one) */
    uint64_t offset = reader->builtin_known >> clock & 1 ? (uint64_t)reader->builtin_offset[clock]
                                                         : 0;
    *time = (int64_t)(packet->timestamp + offset);
    return true;
}

static int read_packet(struct reader *reader, struct bytes message)
{
    struct packet packet = { 0 };
    struct field field;
    int got;
    FOR_EACH_FIELD(cursor, message, field, got)
    {
        switch (field.number) {
        case PF_PACKET_TIMESTAMP:
            packet.has_timestamp = field.wire == PF_WIRE_VARINT;
            packet.timestamp = field.value;
            break;
        case PF_PACKET_CLOCK:
            packet.has_clock = field.wire == PF_WIRE_VARINT;
            packet.clock = (uint32_t)field.value;
            break;
        case PF_PACKET_SEQUENCE:
            if (field.wire == PF_WIRE_VARINT)
                packet.sequence_id = (uint32_t)field.value;
            break;
        case PF_PACKET_FLAGS:
            if (field.wire == PF_WIRE_VARINT)
                packet.cleared |= (field.value & PF_SEQ_INCREMENTAL_STATE_CLEARED) != 0;
            break;
        case PF_PACKET_STATE_CLEARED:
            if (field.wire == PF_WIRE_VARINT)
                packet.cleared |= field.value != 0;
            break;
        case PF_PACKET_DEFAULTS:
            if (field.wire == PF_WIRE_LENGTH)
                packet.defaults = field.bytes;
            break;
        case PF_PACKET_CLOCK_SNAPSHOT:
            if (field.wire == PF_WIRE_LENGTH)
                packet.snapshot = field.bytes;
            break;
        case PF_PACKET_INTERNED:
            if (field.wire == PF_WIRE_LENGTH)
                packet.interned = field.bytes;
            break;
        case PF_PACKET_TRACK_DESCRIPTOR:
            if (field.wire == PF_WIRE_LENGTH)
                packet.descriptor = field.bytes;
            break;
        case PF_PACKET_TRACK_EVENT:
            if (field.wire == PF_WIRE_LENGTH)
                packet.event = field.bytes;
            break;
        default: break;
        }
    }
    if (got < 0)
        return corrupt(reader, nvs_pb_field_problem(got));
    struct sequence *sequence = sequence_of(reader, packet.sequence_id);
    if (!sequence)
        return out_of_memory(reader);
    if (packet.cleared) {
        uint32_t generation = sequence->generation + 1;
        memset(sequence, 0, sizeof *sequence);
        sequence->generation = generation;
    }
    if ((packet.defaults.at && read_defaults(reader, sequence, packet.defaults) != 0) ||
        (packet.snapshot.at && read_snapshot(reader, sequence, packet.snapshot) != 0) ||
        (packet.interned.at &&
         read_interned(reader, packet.sequence_id, sequence, packet.interned) != 0))
        return -1;
    int64_t time = 0;
    bool timed = packet_time(reader, sequence, &packet, &time);
    if (packet.descriptor.at && read_descriptor(reader, packet.descriptor) != 0)
        return -1;
    if (packet.event.at) {
        /* sequence_of is not called again: the pointer holds */
        return read_track_event(reader, packet.sequence_id, sequence, packet.event, time, timed);
    }
    return 0;
}

/* ---- the file ---------------------------------------------------------------------- */

static const char *plural(size_t count)
{
    return count == 1 ? "" : "s";
}

/* What was left out, one line each: nothing about a file cut short, which is
 * how every trace of a process that was killed ends, and reads whole. */
static void say_left_out(const struct reader *reader)
{
    if (reader->options->live)
        return;
    size_t unended = 0, unbegun = reader->unbegun;
    for (size_t i = 0; i < reader->track_count; i++) {
        unended += reader->tracks[i].open.count;
        unbegun += reader->tracks[i].ends.count;
    }
    if (unended)
        nvs_events_say(reader->options,
                       "%s: %zu range%s never ended, left out (open when the trace "
                       "stopped)",
                       reader->path, unended, plural(unended));
    if (unbegun)
        nvs_events_say(reader->options, "%s: %zu range end%s without a begin, left out",
                       reader->path, unbegun, plural(unbegun));
    if (reader->unnamed)
        nvs_events_say(reader->options,
                       "%s: %zu event%s naming an iid their sequence does not define, "
                       "left out",
                       reader->path, reader->unnamed, plural(reader->unnamed));
    if (reader->untimed)
        nvs_events_say(reader->options, "%s: %zu event%s without a time on a known clock, left out",
                       reader->path, reader->untimed, plural(reader->untimed));
    if (reader->trackless)
        nvs_events_say(reader->options, "%s: %zu event%s on no track, left out", reader->path,
                       reader->trackless, plural(reader->trackless));
}

static void reader_free(struct reader *reader)
{
    for (size_t i = 0; i < reader->track_count; i++) {
        free(reader->tracks[i].open.items);
        free(reader->tracks[i].ends.items);
    }
    free(reader->tracks);
    free(reader->free_tracks);
    free(reader->sequences);
    nvs_map_free(&reader->sequence_ids);
    nvs_map_free(&reader->track_ids);
    nvs_map_free(&reader->interned);
}

/* The window of a streamed file (whole packets are read from it; one cut by
 * its end is read again once it has been refilled). */
struct window {
    struct nvs_source *source;
    unsigned char *bytes;
    size_t size;
    uint64_t offset; /* of bytes[0] in the file */
    bool ended;
};

#define WINDOW_CHUNK ((size_t)1 << 20)

/* More of the file in WINDOW: IN's bytes kept (moved to its start), the rest
 * let go, the room after them filled. 1: more came; 0: the file has ended; -1
 * it could not be read (said). */
static int refill(struct reader *reader, struct window *window, struct bytes *in)
{
    if (window->ended)
        return 0;
    size_t kept = (size_t)(in->end - in->at);
    window->offset += (uint64_t)(in->at - window->bytes);
    if (kept && in->at != window->bytes)
        memmove(window->bytes, in->at, kept);
    if (window->size - kept < WINDOW_CHUNK / 4) {
        size_t max = window->source->max_event;
        if (max && kept > max) {
            nvs_events_say(reader->options,
                           "cannot read %s: a packet of more than %zu bytes at byte %llu",
                           reader->path, max, (unsigned long long)window->offset);
            return -1;
        }
        unsigned char *grown = realloc(window->bytes,
                                       window->size ? window->size * 2 : WINDOW_CHUNK);
        if (!grown) {
            reader->failed = true;
            return -1;
        }
        window->bytes = grown;
        window->size = window->size ? window->size * 2 : WINDOW_CHUNK;
    }
    char error[256];
    long got = window->source->read(window->source->context, (char *)window->bytes + kept,
                                    window->size - kept, error, sizeof error);
    if (got < 0) {
        nvs_events_say(reader->options, "cannot read %s: %s", reader->path, error);
        return -1;
    }
    in->at = window->bytes;
    in->end = window->bytes + kept + (size_t)got;
    window->ended = got == 0;
    return got > 0;
}

/* What SOURCE gives, read a window at a time. */
static int parse(struct nvs_events *events, struct nvs_source *source, const char *path,
                 const struct nvs_load_options *options)
{
    struct reader reader = { .events = events, .options = options, .path = path };
    reader.empty = nvs_events_intern_string(events, "");
    reader.failed = !reader.empty || !nvs_trace_kinds_init(&reader.kinds, events);
    struct window window = { .source = source };
    struct bytes in = { NULL, NULL };
    bool unread = false;
    while (!reader.failed && !reader.problem) {
        const unsigned char *at = in.at;
        struct field field;
        int got = nvs_pb_next_field(&in, &field);
        /* the end, or a packet (or padding) cut short: the file stops at the last whole
         * packet, unless more of it is still to be read */
        if (got == FIELD_END || got == FIELD_CUT) {
            in.at = at;
            int more = refill(&reader, &window, &in);
            if (more > 0)
                continue;
            unread = more < 0;
            break;
        }
        reader.problem_at = (size_t)(window.offset + (uint64_t)(at - window.bytes));
        if (got < 0 || (field.number == PF_TRACE_PACKET && field.wire != PF_WIRE_LENGTH)) {
            corrupt(&reader,
                    got < 0 ? nvs_pb_field_problem(got) : "a packet that is not a message");
            break;
        }
        if (field.number != PF_TRACE_PACKET)
            continue; /* the writer's padding (field 2), or another writer's field */
        reader.packets++;
        read_packet(&reader, field.bytes);
    }
    free(window.bytes);
    int outcome = -1;
    if (reader.failed)
        nvs_events_say(options, "out of memory reading %s", path);
    else if (unread)
        ; /* said */
    else if (reader.problem)
        nvs_events_say(options,
                       "cannot read %s: not a whole Perfetto trace: %s, in the packet at byte %zu",
                       path, reader.problem, reader.problem_at);
    else if (!reader.packets)
        nvs_events_say(options,
                       "cannot read %s: no whole packet of a Perfetto trace (empty, or cut short "
                       "before its first packet)",
                       path);
    else {
        say_left_out(&reader);
        outcome = 0;
    }
    reader_free(&reader);
    return outcome;
}

int nvs_pftrace_read(struct nvs_events *events, struct nvs_source *source, const char *path,
                     const struct nvs_load_options *options)
{
    return parse(events, source, path, options);
}
