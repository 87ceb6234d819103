/* Running nsys for the event model (nsys.h): a report exported to SQLite with
 * nsys export, beside the report or in a temporary directory. */
#define _GNU_SOURCE
#include "nsys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* nsys export --type sqlite REPORT to DATABASE; 0, or -1 after a message. */
static int run_export(const char *report, const char *database, const struct nvs_load_options *options)
{
    const char *nsys = getenv("NSYS");
    if (!nsys || !*nsys)
        nsys = "nsys";
    char log_path[] = "/tmp/nvtxshim-export-XXXXXX";
    int log = mkstemp(log_path);
    if (log >= 0)
        unlink(log_path);
    fflush(NULL);
    pid_t child = fork();
    if (child < 0) {
        nvs_events_say(options, "cannot run %s: %s", nsys, strerror(errno));
        if (log >= 0)
            close(log);
        return -1;
    }
    if (child == 0) {
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(log >= 0 ? log : null, 2);
        }
        execlp(nsys, nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "-o", database,
               report, (char *)NULL);
        _exit(127);
    }
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok) {
        /* the last line nsys wrote that is not its progress bar */
        char output[4096] = "";
        ssize_t got = log >= 0 ? pread(log, output, sizeof output - 1, 0) : 0;
        output[got > 0 ? got : 0] = '\0';
        char *last = NULL;
        for (char *line = strtok(output, "\r\n"); line; line = strtok(NULL, "\r\n"))
            if (strncmp(line, "Exporting", 9) != 0 && strspn(line, " \t") < strlen(line))
                last = line;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
            nvs_events_say(options, "cannot run %s export for %s: %s not found (install Nsight Systems, "
                           "or set NSYS)", nsys, report, nsys);
        else
            nvs_events_say(options, "%s export failed for %s%s%s", nsys, report, last ? ": " : "",
                           last ? last : "");
    }
    if (log >= 0)
        close(log);
    if (ok && access(database, R_OK) != 0) {
        nvs_events_say(options, "%s export wrote no %s", nsys, database);
        return -1;
    }
    return ok ? 0 : -1;
}

int nvs_nsys_export_report(const char *report, const struct nvs_load_options *options, char *database,
                           size_t size, char *temporary_directory, size_t directory_size)
{
    temporary_directory[0] = '\0';
    struct stat report_status, database_status;
    if (stat(report, &report_status) != 0) {
        nvs_events_say(options, "cannot read %s: %s", report, strerror(errno));
        return -1;
    }
    size_t stem = strlen(report) - (nvs_ends_with(report, ".nsys-rep") ? strlen(".nsys-rep") : strlen(".qdrep"));
    if (snprintf(database, size, "%.*s.sqlite", (int)stem, report) >= (int)size) {
        nvs_events_say(options, "%s: path too long", report);
        return -1;
    }
    if (stat(database, &database_status) == 0 && database_status.st_mtime >= report_status.st_mtime) {
        nvs_events_say(options, "reading %s, the export of %s made before", database, report);
        return 0;
    }
    char directory[4096];
    if (snprintf(directory, sizeof directory, "%.*s", (int)stem, report) >= (int)sizeof directory) {
        nvs_events_say(options, "%s: path too long", report);
        return -1;
    }
    char *slash = strrchr(directory, '/');
    if (slash)
        slash[slash == directory ? 1 : 0] = '\0';
    else
        strcpy(directory, ".");
    if (access(directory, W_OK) != 0) {
        const char *tmp = getenv("TMPDIR");
        int length = snprintf(temporary_directory, directory_size, "%s/nvtxshim-XXXXXX",
                              tmp && *tmp ? tmp : "/tmp");
        if (length < 0 || (size_t)length >= directory_size || !mkdtemp(temporary_directory)) {
            nvs_events_say(options, "cannot make a temporary directory for the export of %s: %s", report,
                           strerror(errno));
            temporary_directory[0] = '\0';
            return -1;
        }
        if (snprintf(database, size, "%s/export.sqlite", temporary_directory) >= (int)size) {
            nvs_events_say(options, "%s: path too long", temporary_directory);
            rmdir(temporary_directory);
            temporary_directory[0] = '\0';
            return -1;
        }
    }
    nvs_events_say(options, "exporting %s to %s (nsys export --type sqlite)", report, database);
    return run_export(report, database, options);
}
