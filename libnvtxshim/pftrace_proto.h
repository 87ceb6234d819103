/* Perfetto's wire format as the .pftrace form uses it, spelled once: the field
 * numbers of the messages docs/pftrace.md writes (protos/perfetto/trace/...),
 * their wire types, and the enumerations' values. The library's encoder
 * (recorder/encode_pftrace.h) makes its tags from these; the nvtxshim command's reader
 * (cli/) reads by them. No NVTX or CUDA header needed. */
#ifndef NVS_PFTRACE_PROTO_H
#define NVS_PFTRACE_PROTO_H

/* Wire types. */
enum { PF_WIRE_VARINT = 0, PF_WIRE_FIXED64 = 1, PF_WIRE_LENGTH = 2, PF_WIRE_FIXED32 = 5 };

/* Field numbers. */
enum {
    PF_TRACE_PACKET = 1,          /* Trace */
    PF_TRACE_PADDING = 2,         /* Trace, unknown to Perfetto: the writer's padding */
    PF_PACKET_CLOCK_SNAPSHOT = 6, /* TracePacket */
    PF_PACKET_TIMESTAMP = 8,
    PF_PACKET_SEQUENCE = 10, /* trusted_packet_sequence_id */
    PF_PACKET_TRACK_EVENT = 11,
    PF_PACKET_INTERNED = 12,
    PF_PACKET_FLAGS = 13,         /* sequence_flags */
    PF_PACKET_STATE_CLEARED = 41, /* incremental_state_cleared, the older flag */
    PF_PACKET_CLOCK = 58,         /* timestamp_clock_id */
    PF_PACKET_DEFAULTS = 59,
    PF_PACKET_TRACK_DESCRIPTOR = 60,
    PF_DEFAULTS_CLOCK = 58, /* TracePacketDefaults */
    PF_DEFAULTS_TRACK_EVENT = 11,
    PF_EVENT_DEFAULTS_TRACK = 11, /* TrackEventDefaults.track_uuid */
    PF_SNAPSHOT_CLOCK = 1,        /* ClockSnapshot.clocks */
    PF_SNAPSHOT_PRIMARY = 2,      /* .primary_trace_clock */
    PF_CLOCK_ID = 1,              /* ClockSnapshot.Clock */
    PF_CLOCK_TIMESTAMP = 2,
    PF_CLOCK_INCREMENTAL = 3,
    PF_INTERNED_CATEGORIES = 1,       /* InternedData: EventCategory */
    PF_INTERNED_NAMES = 2,            /* EventName */
    PF_INTERNED_ANNOTATION_NAMES = 3, /* DebugAnnotationName */
    PF_ENTRY_IID = 1,                 /* each of those three */
    PF_ENTRY_NAME = 2,
    PF_DESCRIPTOR_UUID = 1, /* TrackDescriptor */
    PF_DESCRIPTOR_NAME = 2,
    PF_DESCRIPTOR_PROCESS = 3,
    PF_DESCRIPTOR_THREAD = 4,
    PF_DESCRIPTOR_PARENT = 5,
    PF_PROCESS_PID = 1, /* ProcessDescriptor */
    PF_PROCESS_NAME = 6,
    PF_THREAD_PID = 1, /* ThreadDescriptor */
    PF_THREAD_TID = 2,
    PF_THREAD_NAME = 5,
    PF_EVENT_CATEGORY_IIDS = 3, /* TrackEvent */
    PF_EVENT_ANNOTATIONS = 4,
    PF_EVENT_TYPE = 9,
    PF_EVENT_NAME_IID = 10,
    PF_EVENT_TRACK = 11,
    PF_EVENT_CATEGORIES = 22,
    PF_EVENT_NAME = 23,
    PF_ANNOTATION_NAME_IID = 1, /* DebugAnnotation */
    PF_ANNOTATION_UINT = 3,
    PF_ANNOTATION_INT = 4,
    PF_ANNOTATION_DOUBLE = 5,
    PF_ANNOTATION_STRING = 6,
    PF_ANNOTATION_NAME = 10,
};

enum { PF_SLICE_BEGIN = 1, PF_SLICE_END = 2, PF_INSTANT = 3 }; /* TrackEvent.Type */
enum { PF_SEQ_INCREMENTAL_STATE_CLEARED = 1, PF_SEQ_NEEDS_INCREMENTAL_STATE = 2 };
/* Clock ids (BuiltinClock), and the first a sequence may define for itself. */
enum {
    PF_CLOCK_REALTIME = 1,
    PF_CLOCK_MONOTONIC = 3,
    PF_CLOCK_BOOTTIME = 6,
    PF_CLOCK_BUILTIN_LIMIT = 64
};

/* A field's tag as the bytes of its varint: one byte for fields below 16,
 * two for the rest up to 2047. */
#define PF_TAG(field, wire) ((field) << 3 | (wire))
#define PF_TAG2(field, wire) (0x80 | (PF_TAG(field, wire) & 0x7f)), (PF_TAG(field, wire) >> 7)

#endif
