/* Running nsys for the event model (nsys.h): a report, known by its first
 * bytes, exported to SQLite with nsys export, beside the report or in a
 * temporary directory. */
#define _GNU_SOURCE
#include "readers/nsys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "readers/input.h"

/* What every Nsight Systems report begins with, .nsys-rep and .qdrep alike:
 * nsys's reader refuses a file without it ("Invalid version prefix"). The
 * version follows: "1." from nsys 2022.4, the build from later ones
 * ("2024@4@1@61-...v0."). */
static const char report_magic[] = "NVIDIA Tegra Profiler Report ";
#define REPORT_MAGIC_LENGTH (sizeof report_magic - 1)

/* Enough of a file to tell a report, a trace or an export from anything else. */
#define HEAD_BYTES 4096

int nvs_nsys_report_at(const char *path, const struct nvs_load_options *options)
{
    struct stat status;
    if (stat(path, &status) != 0 || !S_ISREG(status.st_mode))
        return 0;
    unsigned char head[HEAD_BYTES];
    ssize_t got = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        got = pread(fd, head, sizeof head, 0);
        close(fd);
    }
    if (got < 0)
        return 0; /* the reader opens it again, and says why it cannot */
    size_t length = (size_t)got;
    if (length >= REPORT_MAGIC_LENGTH && memcmp(head, report_magic, REPORT_MAGIC_LENGTH) == 0)
        return 1;
    /* A file named as a report that holds a trace, an export or a gzip is read
     * as what it holds; one that holds none of these is refused here, by what
     * it was named as. */
    bool named = nvs_ends_with(path, ".nsys-rep") || nvs_ends_with(path, ".qdrep");
    bool gzipped = length >= 2 && head[0] == 0x1f && head[1] == 0x8b;
    enum nvs_input_kind kind = nvs_input_kind_of(head, length);
    if (!named || gzipped || (kind != NVS_INPUT_OTHER && kind != NVS_INPUT_EMPTY))
        return 0;
    nvs_events_say(options,
                   "cannot read %s: %snot an Nsight Systems report (one begins \"%.*s\"), "
                   "nor a trace or an nsys export",
                   path, kind == NVS_INPUT_EMPTY ? "empty, " : "", (int)REPORT_MAGIC_LENGTH - 1,
                   report_magic);
    return -1;
}

/* nsys export --type sqlite REPORT to DATABASE; 0, or -1 with why it failed in
 * WHY (WHY_SIZE bytes). */
static int run_export(const char *report, const char *database, const char *nsys, char *why,
                      size_t why_size)
{
    char log_path[] = "/tmp/nvtxshim-export-XXXXXX";
    int log = mkstemp(log_path);
    if (log >= 0)
        unlink(log_path);
    fflush(NULL);
    pid_t child = fork();
    if (child < 0) {
        snprintf(why, why_size, "cannot run %s: %s", nsys, strerror(errno));
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
        execlp(nsys, nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "-o",
               database, report, (char *)NULL);
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
            snprintf(why, why_size,
                     "cannot run %s: not found (install Nsight Systems, or set NSYS)", nsys);
        else if (WIFSIGNALED(status))
            snprintf(why, why_size, "%s export was killed by signal %d%s%s", nsys, WTERMSIG(status),
                     last ? ": " : "", last ? last : "");
        else
            snprintf(why, why_size, "%s export failed%s%s", nsys, last ? ": " : "",
                     last ? last : "");
    }
    if (log >= 0)
        close(log);
    if (ok && access(database, R_OK) != 0) {
        snprintf(why, why_size, "%s export wrote no %s", nsys, database);
        return -1;
    }
    return ok ? 0 : -1;
}

int nvs_nsys_export_report(const char *report, const struct nvs_load_options *options,
                           char *database, size_t size, char *temporary_directory,
                           size_t directory_size)
{
    temporary_directory[0] = '\0';
    struct stat report_status, database_status;
    if (stat(report, &report_status) != 0) {
        nvs_events_say(options, "cannot read %s: %s", report, strerror(errno));
        return -1;
    }
    /* known by its content: its export is NAME.sqlite, less the report's extension if it has one */
    size_t stem = strlen(report);
    if (nvs_ends_with(report, ".nsys-rep"))
        stem -= strlen(".nsys-rep");
    else if (nvs_ends_with(report, ".qdrep"))
        stem -= strlen(".qdrep");
    if (snprintf(database, size, "%.*s.sqlite", (int)stem, report) >= (int)size) {
        nvs_events_say(options, "%s: path too long", report);
        return -1;
    }
    if (stat(database, &database_status) == 0 &&
        database_status.st_mtime >= report_status.st_mtime) {
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
            nvs_events_say(options, "cannot make a temporary directory for the export of %s: %s",
                           report, strerror(errno));
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
    const char *nsys = getenv("NSYS");
    if (!nsys || !*nsys)
        nsys = "nsys";
    /* One line, said while nsys works (a long run's report takes minutes) and
     * ended when it is done: by nothing more, or by why it failed. */
    fprintf(stderr, "nvtxshim: %s: exporting %s to %s (nsys export --type sqlite)",
            options->command, report, database);
    fflush(stderr);
    char why[1024];
    int outcome = run_export(report, database, nsys, why, sizeof why);
    if (outcome == 0)
        fputs("\n", stderr);
    else
        fprintf(stderr, ": %s\n", why);
    return outcome;
}
