/* The library's names and texts of errors (log.c: nvs_log_error_name, nvs_log_error_text).
 * Built twice: against glibc's strerrorname_np and strerrordesc_np (2.32), and with log.c's
 * references to them renamed to symbols nothing defines (NVS_TEST_OLD_GLIBC), as the wheel's
 * build finds them on a glibc older than 2.32: then the library's own table names the errors,
 * and each name it gives must be the one glibc gives. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "check.h"
#include "log.h"

int main(void)
{
#ifdef NVS_TEST_OLD_GLIBC
    int named = 0;
    for (int error = 1; error < 200; error++) {
        const char *ours = nvs_log_error_name(error);
        if (!ours)
            continue;
        named++;
        const char *glibc = strerrorname_np(error);   /* the test's own reference, not log.c's */
        CHECK(glibc && strcmp(ours, glibc) == 0);
        CHECK(strcmp(nvs_log_error_text(error), ours) == 0);
    }
    CHECK(named >= 30);
    CHECK(strcmp(nvs_log_error_name(ENOSPC), "ENOSPC") == 0);
    CHECK(nvs_log_error_name(EHWPOISON) == NULL);
    CHECK(strcmp(nvs_log_error_text(EHWPOISON), "unknown error") == 0);
    return check_summary("without glibc's names");
#else
    CHECK(strcmp(nvs_log_error_name(EHWPOISON), "EHWPOISON") == 0);
    CHECK(strcmp(nvs_log_error_text(ENOSPC), "No space left on device") == 0);
    CHECK(nvs_log_error_name(100000) == NULL);
    CHECK(strcmp(nvs_log_error_text(100000), "unknown error") == 0);
    return check_summary("with glibc's names");
#endif
}
