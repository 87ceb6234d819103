/* Finding and opening the trace file, for the writer (trace_writer.c). */
#ifndef NVS_TRACE_FILE_H
#define NVS_TRACE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "../config.h"

/* One nvtxshim: line from its pieces, async-signal-safe (log.h). */
#define SAY(...)                                                                                   \
    do {                                                                                           \
        const char *const pieces_[] = { __VA_ARGS__ };                                             \
        nvs_log_pieces(pieces_, sizeof pieces_ / sizeof pieces_[0]);                               \
    } while (0)

bool nvs_file_is_dev_null(const struct stat *status);

/* TEMPLATE with %p (PID) and %% expanded into OUT; a forked CHILD's name when
 * the template has no %p (NAME.PID.EXT). */
void nvs_file_expand_path(char *out, size_t size, const char *template, pid_t pid, bool child);

enum nvs_candidate { NVS_CANDIDATE_OPEN, NVS_CANDIDATE_IN_USE, NVS_CANDIDATE_REFUSED };

/* A file opened to be the trace. */
struct nvs_trace_candidate {
    char name[NVS_PATH_MAX];
    int fd;
    struct stat status;
    bool made; /* made by this process (O_EXCL): removed where it is not used */
};

/* The first of WANTED, NAME.PID.EXT, NAME.PID.1.EXT, ... from the FIRST on,
 * passing over SKIP, that opens, locked (NVS_CANDIDATE_OPEN: OUT's name, fd
 * and status set); NVS_CANDIDATE_IN_USE when all are in use;
 * NVS_CANDIDATE_REFUSED, said in one line, when one cannot be a trace. Files
 * made on the way and not used are removed. */
enum nvs_candidate nvs_file_open_first_free(const char *wanted, int first, const char *skip,
                                            pid_t pid, struct nvs_trace_candidate *out);

/* Closes CANDIDATE's descriptor, and removes its file where this process made
 * it (LOCKED: CANDIDATE's lock is held, so the file is nobody else's). */
void nvs_file_give_up(struct nvs_trace_candidate *candidate, bool locked);

/* FD moved to 200 or above, where programs do not reuse numbers (FD itself
 * when it cannot be). */
int nvs_file_move_up(int fd);

#endif
