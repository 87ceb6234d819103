#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

void nvs_log_raw(const char *text)
{
    int saved_errno = errno;
    size_t length = strlen(text);
    while (length > 0) {
        ssize_t written = write(STDERR_FILENO, text, length);
        if (written <= 0 && errno != EINTR)
            break;
        if (written > 0) {
            text += written;
            length -= (size_t)written;
        }
    }
    errno = saved_errno;
}

static void log_at(enum nvs_log_level level, const char *format, va_list args)
{
    if (nvs_config()->log < level)
        return;
    char line[1024] = "nvtxshim: ";
    size_t prefix = strlen(line);
    vsnprintf(line + prefix, sizeof line - prefix, format, args);
    nvs_log_raw(line);
}

void nvs_log_info(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    log_at(NVS_LOG_INFO, format, args);
    va_end(args);
}

void nvs_log_debug(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    log_at(NVS_LOG_DEBUG, format, args);
    va_end(args);
}
