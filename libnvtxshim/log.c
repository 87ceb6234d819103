#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "sys.h"

void nvs_log_raw(const char *text)
{
    int saved_errno = errno;
    size_t length = strlen(text);
    while (length > 0) {
        ssize_t written = nvs_sys_write(STDERR_FILENO, text, length);
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

/* No stdio, no locale, no allocation: safe on the way out of a process, from
 * a signal handler that calls exit or _exit. */
void nvs_log_pieces(const char *const *pieces, size_t count)
{
    if (nvs_config()->log < NVS_LOG_INFO)
        return;
    char line[1024] = "nvtxshim: ";
    size_t used = strlen(line);
    for (size_t i = 0; i < count && pieces[i]; i++) {
        size_t length = strnlen(pieces[i], sizeof line - 2 - used);
        memcpy(line + used, pieces[i], length);
        used += length;
    }
    line[used++] = '\n';
    line[used] = '\0';
    nvs_log_raw(line);
}

char *nvs_log_number(char *out, unsigned long long value)
{
    char digits[24];
    size_t count = 0;
    do {
        digits[count++] = (char)('0' + value % 10);
        value /= 10;
    } while (value);
    for (size_t i = 0; i < count; i++)
        out[i] = digits[count - 1 - i];
    out[count] = '\0';
    return out;
}

/* glibc 2.32's, where the program's glibc has them: weak, so that a build against an
 * older glibc (the wheel's, 2.28) loads where they are absent. They take no lock and
 * no locale. */
const char *strerrorname_np(int error) __attribute__((weak));
const char *strerrordesc_np(int error) __attribute__((weak));

const char *nvs_log_error_name(int error)
{
    if (strerrorname_np)
        return strerrorname_np(error);
        /* The errors the library reports (opening and writing its trace, a device's
     * calls); the rest stay numbers. */
#define NAMED(code)                                                                                \
    {                                                                                              \
        code, #code                                                                                \
    }
    static const struct {
        int error;
        const char *name;
    } names[] = {
        NAMED(EPERM),      NAMED(ENOENT),    NAMED(EINTR),  NAMED(EIO),       NAMED(ENXIO),
        NAMED(EBADF),      NAMED(EAGAIN),    NAMED(ENOMEM), NAMED(EACCES),    NAMED(EFAULT),
        NAMED(EBUSY),      NAMED(EEXIST),    NAMED(ENODEV), NAMED(ENOTDIR),   NAMED(EISDIR),
        NAMED(EINVAL),     NAMED(ENFILE),    NAMED(EMFILE), NAMED(ENOTTY),    NAMED(ETXTBSY),
        NAMED(EFBIG),      NAMED(ENOSPC),    NAMED(ESPIPE), NAMED(EROFS),     NAMED(EPIPE),
        NAMED(ERANGE),     NAMED(ELOOP),     NAMED(ENOSYS), NAMED(EOVERFLOW), NAMED(ENAMETOOLONG),
        NAMED(EOPNOTSUPP), NAMED(ETIMEDOUT), NAMED(EDQUOT), NAMED(EPROTO),    NAMED(ENODATA),
        NAMED(ESHUTDOWN),  NAMED(ENOLCK),
    };
#undef NAMED
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].error == error)
            return names[i].name;
    return NULL;
}

const char *nvs_log_error_text(int error)
{
    const char *text = strerrordesc_np ? strerrordesc_np(error) : nvs_log_error_name(error);
    return text ? text : "unknown error";
}
