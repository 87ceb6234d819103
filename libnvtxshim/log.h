/* Messages on stderr, each one line starting "nvtxshim: ". */
#ifndef NVS_LOG_H
#define NVS_LOG_H

#include <stddef.h>

__attribute__((format(printf, 1, 2))) void nvs_log_info(const char *format, ...);
__attribute__((format(printf, 1, 2))) void nvs_log_debug(const char *format, ...);
/* Writes TEXT to stderr as it is, in one write. */
void nvs_log_raw(const char *text);
/* One line from COUNT pieces (a NULL piece ends it early), at info level;
 * async-signal-safe, for the way out of a process. */
void nvs_log_pieces(const char *const *pieces, size_t count);
/* ERROR's name ("ENOSPC"), or NULL where unknown. */
const char *nvs_log_error_name(int error);
/* ERROR's description ("No space left on device"), or its name where the glibc the
 * program runs on has no descriptions to give (older than 2.32), or "unknown error". */
const char *nvs_log_error_text(int error);
/* VALUE in decimal at OUT (room for 21 bytes); returns OUT. Async-signal-safe. */
char *nvs_log_number(char *out, unsigned long long value);

#endif
