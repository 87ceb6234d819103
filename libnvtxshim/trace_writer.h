/* The trace file and the per-thread buffers that reach it (README: "The trace
 * file"). Each thread appends whole encoded events to a private buffer; the
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

#include "trace.h"

struct nvs_writer_thread;

/* Why an event is not in the file: counted, and said in one line at exit. */
enum nvs_writer_loss {
    NVS_LOSS_WRITE_FAILED,      /* the file could not take it (disk full, I/O error) */
    NVS_LOSS_TOO_DEEP,          /* a push/pop range nested deeper than the stack keeps */
    NVS_LOSS_IN_HANDLER,        /* made by a signal handler that interrupted an event */
    NVS_LOSS_NO_MEMORY,         /* no memory for a thread's buffer or an open range */
    NVS_LOSS_KINDS,
};

/* Records to PATH_TEMPLATE (%p, %% expanded when the file is opened, at the
 * first event) with ENCODER; each thread gets PRIVATE_BYTES of memory for the
 * caller, zero when new, its first NVS_WRITER_PRIVATE_ZEROED bytes zeroed
 * again whenever a new thread takes it over; pages never touched cost nothing. */
#define NVS_WRITER_PRIVATE_ZEROED 64u
void nvs_writer_enable(const char *path_template, const struct nvs_trace_encoder *encoder,
                       size_t private_bytes);
/* One line said when the file is opened (why this recorder records), or NULL. */
void nvs_writer_note(const char *line);
bool nvs_writer_enabled(void);

/* The calling thread's buffer (claimed at its first use); NULL when not
 * recording or out of memory. */
struct nvs_writer_thread *nvs_writer_thread(void);
void *nvs_writer_private(struct nvs_writer_thread *thread);
struct nvs_trace_thread_ids *nvs_writer_ids(struct nvs_writer_thread *thread);

/* Room for one event (NVS_TRACE_EVENT_MAX bytes) in THREAD's buffer, or NULL:
 * recording stopped or finished, or a signal handler interrupted an event of
 * this thread (counted). The caller encodes at the pointer, then commits the
 * end of what it wrote. */
char *nvs_writer_begin(struct nvs_writer_thread *thread);
void nvs_writer_commit(struct nvs_writer_thread *thread, char *end);

void nvs_writer_count(enum nvs_writer_loss why, uint64_t events);

/* Every thread's whole events to the file now (a frame ended). */
void nvs_writer_flush(void);

/* Completes the file: every buffer written, the encoder's tail. Async-signal-
 * safe: from exit, _exit, exec, and from a signal handler on any thread. */
void nvs_writer_finish(void);
/* exec failed: the tail comes off and recording goes on. */
void nvs_writer_resume(void);
/* In a forked child: nothing of the parent's, a file of its own. */
void nvs_writer_fork_child(void);

#endif
