/* Finding and opening the trace file, for the writer (trace_writer.c). */
#ifndef NVS_TRACE_FILE_H
#define NVS_TRACE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* One nvtxshim: line from its pieces, async-signal-safe (log.h). */
#define SAY(...)                                                                    \
    do {                                                                            \
        const char *const pieces_[] = { __VA_ARGS__ };                              \
        nvs_log_pieces(pieces_, sizeof pieces_ / sizeof pieces_[0]);                \
    } while (0)

bool nvs_file_is_dev_null(const struct stat *status);

/* TEMPLATE with %p (PID) and %% expanded into OUT; a forked CHILD's name when
 * the template has no %p (NAME.PID.EXT). */
void nvs_file_expand_path(char *out, size_t size, const char *template, pid_t pid, bool child);

enum nvs_candidate { NVS_CANDIDATE_OPEN, NVS_CANDIDATE_IN_USE, NVS_CANDIDATE_REFUSED };

/* The first of WANTED, NAME.PID.EXT, NAME.PID.1.EXT, ... from the FIRST on,
 * passing over SKIP, that opens, locked (NVS_CANDIDATE_OPEN: its name in
 * CANDIDATE, FD and STATUS set); NVS_CANDIDATE_IN_USE when all are in use;
 * NVS_CANDIDATE_REFUSED, said in one line, when one cannot be a trace. */
enum nvs_candidate nvs_file_open_first_free(const char *wanted, int first, const char *skip, pid_t pid,
                                            char *candidate, int *fd, struct stat *status);

/* FD moved to 200 or above, where programs do not reuse numbers (FD itself
 * when it cannot be). */
int nvs_file_move_up(int fd);

#endif
