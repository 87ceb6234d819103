/* What the recorder did not record, counted by why and said in one line when
 * the recording ends (nothing silent). Async-signal-safe: atomic counters, and
 * a line made of pieces (log.h). */
#ifndef NVS_RECORDER_LOSSES_H
#define NVS_RECORDER_LOSSES_H

#include <stdint.h>

/* Why an event is not in the file: counted, and said in one line at exit. */
enum nvs_writer_loss {
    NVS_LOSS_WRITE_FAILED, /* the file could not take it (disk full, I/O error) */
    NVS_LOSS_TOO_DEEP,     /* a push/pop range nested deeper than the stack keeps */
    NVS_LOSS_IN_HANDLER,   /* made by a signal handler that interrupted an event */
    NVS_LOSS_NO_MEMORY,    /* no memory for a thread's buffer or an open range */
    NVS_LOSS_MOVED,        /* made for a file that stopped being this run's, and only
                                 * readable there (the protobuf form's) */
    NVS_LOSS_OPEN_AT_END,  /* push/pop ranges open at the end that were not ended in the
                                 * file (other threads', whose stacks are theirs) */
    NVS_LOSS_KINDS,
};

/* EVENTS lost for WHY (none: nothing counted). */
void nvs_writer_count(enum nvs_writer_loss why, uint64_t events);
/* The same, where a system call said no: ERROR is given in the line at exit. */
void nvs_writer_count_error(enum nvs_writer_loss why, uint64_t events, int error);

/* The line, "NVTXSHIM_TRACE=PATH: events not recorded: ...", where any was lost. */
void nvs_losses_say(const char *path);
/* Counted again from nothing (a fork's child starts its own file). */
void nvs_losses_forget(void);

#endif
