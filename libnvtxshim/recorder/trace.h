/* The recorder's model of a trace, shared by its three layers: record.c (the
 * NVTX tool, which builds events), an encoder (events to bytes, pure:
 * encode_json.c for the JSON form, encode_pftrace.c for Perfetto's protobuf
 * form) and trace_writer.c (per-thread buffers and the file). The model holds
 * raw text; each encoder keeps what it derives from it (escaped names, cached
 * event text, interned ids) in the opaque areas set aside for it here. */
#ifndef NVS_TRACE_H
#define NVS_TRACE_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../hidden.h"

#include "../schema.h" /* struct nvs_trace_args */

#define NVS_TRACE_TEXT_MAX 256u    /* a name, UTF-8, with its NUL; longer ones are cut */
#define NVS_TRACE_CATEGORIES 64u   /* categories a domain can name (more are numbers) */
#define NVS_TRACE_EVENT_MAX 2048u  /* one encoded event, at most */
#define NVS_TRACE_EVENT_MIN 8u     /* ... and at least (a protobuf end packet is 12) */
#define NVS_TRACE_KEY_MAX 32u      /* the length of their keys, at most */
#define NVS_TRACE_STACK_DEPTH 1024 /* push/pop ranges open on one thread that are kept */
#define NVS_TRACE_STACK_DEPTH_TEXT "1024"

/* What an encoder keeps per domain, per registered string, per thread. */
#define NVS_ENCODER_DOMAIN_BYTES 3584u
#define NVS_ENCODER_STRING_BYTES 960u
#define NVS_ENCODER_THREAD_BYTES 192u

struct nvs_trace_domain {
    struct nvs_trace_domain *next;
    uint32_t index; /* 1..; 0 is the default domain */
    char name[NVS_TRACE_TEXT_MAX];
    _Atomic uint64_t named_categories; /* bit N: category N has its name (the first given) */
    alignas(16) unsigned char encoded[NVS_ENCODER_DOMAIN_BYTES];
};

/* A registered string: kept for the life of the process (NVTX has no call
 * that releases one). */
struct nvs_trace_string {
    struct nvs_trace_string *next;
    uint32_t length;
    char text[NVS_TRACE_TEXT_MAX];
    alignas(16) unsigned char encoded[NVS_ENCODER_STRING_BYTES];
};

enum nvs_trace_payload {
    NVS_PAYLOAD_NONE,
    NVS_PAYLOAD_U64,
    NVS_PAYLOAD_I64,
    NVS_PAYLOAD_U32,
    NVS_PAYLOAD_I32,
    NVS_PAYLOAD_DOUBLE,
    NVS_PAYLOAD_FLOAT
};

/* A range, a mark, or an async begin/end. */
struct nvs_trace_event {
    uint64_t start_ns; /* CLOCK_MONOTONIC */
    struct nvs_trace_domain *domain;
    struct nvs_trace_string *registered; /* NULL: the name is in text */
    uint32_t category;
    uint32_t color; /* 0xRRGGBB, 0 for none */
    enum nvs_trace_payload payload_type;
    uint32_t text_length;
    uint64_t payload; /* raw bits */
    uint8_t begun;    /* a push's begin, for encoders with one (record.c's
                                     * NVS_BEGIN_*): not written, written (its pop writes
                                     * the end), or pending (its pop writes both) */
    char text[NVS_TRACE_TEXT_MAX];
};

/* The thread an event is written for: its ids and the encoder's cache; and
 * the writer's sequence it is written in: the buffer of the thread that
 * writes it (its own, or another's for an event about another thread), whose
 * state an encoder keeps in SEQUENCE (sequence_bytes of its own, zeroed when
 * new, set up again by start). */
struct nvs_trace_thread_ids {
    int32_t pid;
    uint32_t tid;
    uint32_t sequence_id; /* 2, 3, ...: one per buffer, for the file's life */
    void *sequence;
    alignas(16) unsigned char encoded[NVS_ENCODER_THREAD_BYTES];
};

/* An encoder writes one whole event at OUT (room for NVS_TRACE_EVENT_MAX
 * bytes, and at least NVS_TRACE_EVENT_MIN written) and returns its end. Pure: no I/O, no
 * allocation, no lock. */
struct nvs_trace_encoder {
    const char *name;
    /* The first bytes of a file: the container and the process's name. */
    char *(*header)(char *out, int32_t pid, const char *process_name);
    /* After the header, the run's MARK (a random number): something readers
     * pass over, which the writer reads back to know the file is still this
     * run's before it writes to it again (trace_writer.c). */
    char *(*stamp)(char *out, int32_t pid, uint64_t mark);
    /* The first event of a buffer a thread takes: its sequence (re)starts at
     * NOW_NS, and the thread is named NAME. */
    char *(*start)(char *out, struct nvs_trace_thread_ids *thread, const char *name,
                   uint64_t now_ns);
    /* Another thread's name, or this one's renamed. */
    char *(*thread_name)(char *out, const struct nvs_trace_thread_ids *thread, const char *name);
    /* NULL, or the begin of a push/pop range (written before its end, and
     * before any other event of its thread: record.c); complete then writes
     * only its end, and close_under the end of one popped from under others
     * still open. */
    char *(*push)(char *out, struct nvs_trace_thread_ids *thread,
                  const struct nvs_trace_event *event);
    char *(*close_under)(char *out, struct nvs_trace_thread_ids *thread,
                         const struct nvs_trace_event *event, uint64_t end_ns);
    /* A range that nests on its thread (push/pop). */
    char *(*complete)(char *out, struct nvs_trace_thread_ids *thread,
                      const struct nvs_trace_event *event, uint64_t end_ns);
    /* NULL, or a push/pop range still open when the process ends, ended at
     * END_NS and marked as one that did not end; without it (the protobuf
     * form) the finish writes such a range's begin alone. */
    char *(*unfinished)(char *out, struct nvs_trace_thread_ids *thread,
                        const struct nvs_trace_event *event, uint64_t end_ns);
    /* One side of a range that may end elsewhere or overlap others. */
    char *(*begin)(char *out, struct nvs_trace_thread_ids *thread,
                   const struct nvs_trace_event *event, uint64_t id);
    /* DESCRIBE: the end is written where the begin's track may not have
     * been described before it in the file (another thread's sequence, or
     * this thread's before it started again): the protobuf form describes the
     * track again first, so that every track's descriptor precedes its events
     * in file order. */
    char *(*end)(char *out, struct nvs_trace_thread_ids *thread,
                 const struct nvs_trace_event *event, uint64_t id, uint64_t end_ns,
                 const struct nvs_trace_args *args, bool describe);
    char *(*mark)(char *out, struct nvs_trace_thread_ids *thread,
                  const struct nvs_trace_event *event);
    /* LENGTH bytes that readers skip, between two events: PAD_MIN at least
     * (a shorter gap takes a page more). PADDING_BYTES bytes are made once,
     * and a gap of LENGTH is written from PADDING + pad_from(LENGTH). */
    void (*pad)(char *out, size_t length);
    size_t pad_min;
    size_t (*pad_from)(size_t length);
    /* Bytes of state per sequence (a thread's buffer), at thread->sequence. */
    size_t sequence_bytes;
    /* A finished file: the last TAIL_OVERLAP bytes written (the last event's
     * separator) are replaced by TAIL; a resume after a failed exec puts
     * TAIL_UNDO back. */
    size_t tail_overlap;
    const char *tail;
    const char *tail_undo;
    /* Called once for each domain and registered string before it is used,
     * when a category of a domain gets its name (before the bit is set), and
     * when a thread's ids change. */
    void (*prepare_domain)(struct nvs_trace_domain *domain);
    void (*prepare_string)(struct nvs_trace_string *string);
    void (*prepare_category)(struct nvs_trace_domain *domain, uint32_t category, const char *name);
    void (*prepare_thread)(struct nvs_trace_thread_ids *thread);
};

extern NVS_HIDDEN const struct nvs_trace_encoder nvs_trace_json;
extern NVS_HIDDEN const struct nvs_trace_encoder nvs_trace_pftrace;

#endif
