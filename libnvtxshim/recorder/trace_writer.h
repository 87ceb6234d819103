/* The trace file and the per-thread buffers that reach it (docs/user-guide.md: "The
 * trace file"). Each thread appends whole encoded events to a private buffer; the
 * buffers reach the file with positioned writes, laid out so that no event
 * crosses a page of the file, at frame ends, when a buffer fills, at thread
 * exit and when the process ends or execs. Nothing here can raise a signal in
 * the host, and the finish never waits for a lock that an interrupted thread
 * holds. */
#ifndef NVS_TRACE_WRITER_H
#define NVS_TRACE_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../hidden.h"
#include "losses.h"
#include "trace.h"

#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>

#define NVS_WRITER_BYTES (32u * 1024u) /* a thread's whole events before they go to the file */
#define NVS_WRITER_ROOM                                                                            \
    (NVS_WRITER_BYTES + 2u * NVS_TRACE_EVENT_MAX) /* a name and an event past it */
/* Every encoded event is at least NVS_TRACE_EVENT_MIN bytes, so a buffer's bytes bound its
 * events; a buffer that nonetheless holds this many is flushed before the next (a guard: an
 * encoder's short event must never write past ends[]). */
#define NVS_WRITER_EVENTS (NVS_WRITER_ROOM / NVS_TRACE_EVENT_MIN)
_Static_assert(NVS_WRITER_ROOM < 65536u, "published packs bytes in 16 bits");
_Static_assert(NVS_WRITER_EVENTS < 65536u, "published packs events in 16 bits");

/* A thread's buffer. Its fields are the writer's (trace_writer.c); it is in
 * this header only so that an event's begin and commit are inlined. */
struct nvs_writer_thread {
    struct nvs_writer_thread *next; /* every buffer, for the finish: never removed */
    _Atomic bool claimed;           /* has an owner thread */
    volatile sig_atomic_t writing;  /* the owner is between begin and commit */
    _Atomic uint32_t published;     /* events << 16 | bytes: the whole events in data */
    uint32_t flushed_bytes;         /* of those, written: changed under the file lock only */
    uint32_t flushed_events;
    _Atomic bool stale; /* made for a file the writer left: starts again first */
    uint32_t restarts;  /* times its sequence started again in another file */
    struct nvs_trace_thread_ids ids;
    uint16_t ends[NVS_WRITER_EVENTS]; /* where each published event ends in data */
    alignas(64) char data[NVS_WRITER_ROOM];
    alignas(64) unsigned char private[];
};

extern NVS_HIDDEN __thread struct nvs_writer_thread *nvs_writer_current
    __attribute__((tls_model("initial-exec")));
/* The file is open and not finished, and no buffer is stale (made for a file
 * the writer left): events go straight into the buffer. */
extern NVS_HIDDEN _Atomic bool nvs_writer_ready;

/* Records to PATH_TEMPLATE (%p, %% expanded when the file is opened, at the
 * first event) with ENCODER; each thread gets PRIVATE_BYTES of memory for the
 * caller, zero when new, its first NVS_WRITER_PRIVATE_ZEROED bytes zeroed
 * again whenever a new thread takes it over; pages never touched cost nothing.
 * RESTARTED is called on a thread whose sequence starts again because the
 * writer moved to another file (the first was no longer this run's): what the
 * thread wrote before is not in the new file. It runs on that thread, in its
 * nvs_writer_begin (or nvs_writer_begin_final), before the room is given. */
#define NVS_WRITER_PRIVATE_ZEROED 64u
void nvs_writer_enable(const char *path_template, const struct nvs_trace_encoder *encoder,
                       size_t private_bytes, void (*restarted)(struct nvs_writer_thread *thread));
/* One line said when the file is opened (why this recorder records), or NULL. */
void nvs_writer_note(const char *line);
bool nvs_writer_enabled(void);

/* The calling thread's buffer (claimed at its first use); NULL when not
 * recording or out of memory. */
struct nvs_writer_thread *nvs_writer_claim(void);
static inline struct nvs_writer_thread *nvs_writer_thread(void)
{
    struct nvs_writer_thread *thread = nvs_writer_current;
    return __builtin_expect(thread != NULL, 1) ? thread : nvs_writer_claim();
}

static inline void *nvs_writer_private(struct nvs_writer_thread *thread)
{
    return thread->private;
}

static inline struct nvs_trace_thread_ids *nvs_writer_ids(struct nvs_writer_thread *thread)
{
    return &thread->ids;
}

static inline uint32_t nvs_writer_used(const struct nvs_writer_thread *thread)
{
    return atomic_load_explicit(&thread->published, memory_order_relaxed) & 0xffffu;
}

/* Room for one event (NVS_TRACE_EVENT_MAX bytes) in THREAD's buffer, or NULL:
 * recording stopped or finished, or a signal handler interrupted an event of
 * this thread (counted). The caller encodes at the pointer, then commits the
 * end of what it wrote. */
char *nvs_writer_begin_slow(struct nvs_writer_thread *thread);

/* The same room where it is there at once; otherwise NULL and nothing done
 * (the caller then takes the way that calls nvs_writer_begin). */
static inline __attribute__((always_inline)) char *nvs_writer_try_begin(
    struct nvs_writer_thread *thread)
{
    if (__builtin_expect(thread->writing, 0))
        return NULL;
    /* Taken before the buffer is read: a handler that runs from here on sees
     * it and drops its event, one that ran before has finished its own. */
    thread->writing = 1;
    atomic_signal_fence(memory_order_seq_cst);
    uint32_t published = atomic_load_explicit(&thread->published, memory_order_relaxed);
    if (__builtin_expect(!atomic_load_explicit(&nvs_writer_ready, memory_order_relaxed) ||
                             (published & 0xffffu) > NVS_WRITER_BYTES ||
                             (published >> 16) >= NVS_WRITER_EVENTS - 1,
                         0)) {
        atomic_signal_fence(memory_order_seq_cst);
        thread->writing = 0;
        return NULL;
    }
    return thread->data + (published & 0xffffu);
}

/* True inside a signal handler that interrupted THREAD's own event (between
 * its begin and commit): nothing the handler writes reaches the buffer. */
static inline bool nvs_writer_busy(const struct nvs_writer_thread *thread)
{
    return thread->writing != 0;
}
/* Gives back the room nvs_writer_try_begin or nvs_writer_begin gave, nothing
 * written. */
static inline void nvs_writer_abandon(struct nvs_writer_thread *thread)
{
    atomic_signal_fence(memory_order_seq_cst);
    thread->writing = 0;
}

static inline char *nvs_writer_begin(struct nvs_writer_thread *thread)
{
    char *out = nvs_writer_try_begin(thread);
    return __builtin_expect(out != NULL, 1) ? out : nvs_writer_begin_slow(thread);
}

/* Publishes the event that ends at END: a flush or the finish may take it
 * from now on. */
static inline void nvs_writer_commit(struct nvs_writer_thread *thread, char *end)
{
    uint32_t published = atomic_load_explicit(&thread->published, memory_order_relaxed);
    uint32_t events = published >> 16, used = (uint32_t)(end - thread->data);
    thread->ends[events] = (uint16_t)used;
    atomic_store_explicit(&thread->published, (events + 1) << 16 | used, memory_order_release);
    atomic_signal_fence(memory_order_seq_cst);
    thread->writing = 0;
}

static inline uint32_t nvs_writer_restarts(const struct nvs_writer_thread *thread)
{
    return thread->restarts;
}

/* Every buffer, claimed or not, for a look at each (the finish's): never
 * removed, linked by next. */
struct nvs_writer_thread *nvs_writer_all(void);

/* Every thread's whole events to the file now (a frame ended). */
void nvs_writer_flush(void);

/* Completes the file, in two calls with the caller's last events between.
 * Async-signal-safe: from exit, _exit, exec, and from a signal handler on any
 * thread.
 * nvs_writer_finish_start: recording ends, every buffer is written; true when
 * the caller may then write with nvs_writer_begin_final and must call
 * nvs_writer_finish_end (false: finished already, or not recording).
 * nvs_writer_begin_final: room in THREAD's buffer (the finishing thread's)
 * for one event, its buffer written out first when full; NULL when there is
 * none, and then nvs_writer_count_final counts what was not written.
 * nvs_writer_finish_end: what was written since the start goes to the file,
 * then the encoder's tail. TAKEN_BACK: a resume after a failed exec takes
 * those events out of the file again (their ranges go on). */
bool nvs_writer_finish_start(void);
char *nvs_writer_begin_final(struct nvs_writer_thread *thread);
void nvs_writer_count_final(enum nvs_writer_loss why, uint64_t events);
void nvs_writer_finish_end(bool taken_back);
/* exec failed: the tail comes off and recording goes on. */
void nvs_writer_resume(void);
/* In a forked child: nothing of the parent's, a file of its own. */
void nvs_writer_fork_child(void);

#endif
