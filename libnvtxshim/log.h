/* Messages on stderr, each one line starting "nvtxshim: ". */
#ifndef NVS_LOG_H
#define NVS_LOG_H

__attribute__((format(printf, 1, 2))) void nvs_log_info(const char *format, ...);
__attribute__((format(printf, 1, 2))) void nvs_log_debug(const char *format, ...);
/* Writes TEXT to stderr as it is, in one write. */
void nvs_log_raw(const char *text);

#endif
