/* A file the command writes whole (output.h). */
#define _GNU_SOURCE
#include "writers/output.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *nvs_output_not_regular(const char *path)
{
    struct stat status;
    if (lstat(path, &status) != 0 || S_ISREG(status.st_mode))
        return NULL;
    return S_ISLNK(status.st_mode) ? "a symbolic link"
        : S_ISDIR(status.st_mode)  ? "a directory"
        : S_ISFIFO(status.st_mode) ? "a FIFO"
        : S_ISSOCK(status.st_mode) ? "a socket"
        : S_ISCHR(status.st_mode)  ? "a character device"
        : S_ISBLK(status.st_mode)  ? "a block device"
                                   : "not a regular file";
}

int nvs_output_replace(const char *path, int (*put)(FILE *out, const void *context),
                       const void *context)
{
    /* beside PATH, so that the rename stays on its file system */
    size_t length = strlen(path);
    char *temporary = malloc(length + sizeof ".XXXXXX");
    if (!temporary)
        return ENOMEM;
    memcpy(temporary, path, length);
    memcpy(temporary + length, ".XXXXXX", sizeof ".XXXXXX");
    int error = 0;
    FILE *out = NULL;
    int fd = mkstemp(temporary);
    if (fd < 0) {
        error = errno;
    } else {
        /* mkstemp's 0600 is for secrets: the file is made as any file is */
        mode_t mask = umask(0);
        umask(mask);
        if (fchmod(fd, 0666 & ~mask) != 0 || !(out = fdopen(fd, "w"))) {
            error = errno;
            close(fd);
            unlink(temporary);
        }
    }
    if (out) {
        errno = 0;
        if (put(out, context) != 0)
            error = ENOMEM;
        else if (fflush(out) != 0 || ferror(out))
            error = errno ? errno : EIO;
        if (fclose(out) != 0 && !error)
            error = errno;
        if (!error && rename(temporary, path) != 0)
            error = errno;
        if (error)
            unlink(temporary);
    }
    free(temporary);
    return error;
}

int nvs_output_refused(const char *command, const char *path, const char *what, const char *hint)
{
    const char *there = nvs_output_not_regular(path);
    if (!there)
        return 0;
    fprintf(stderr,
            "nvtxshim: %s: will not write %s: it is %s, and %s replaces only a regular file%s\n",
            command, path, there, what, hint);
    return -1;
}

int nvs_output_write(const char *command, const char *path, const char *what, const char *hint,
                     int (*put)(FILE *out, const void *context), const void *context)
{
    if (nvs_output_refused(command, path, what, hint) != 0)
        return -1;
    int error = nvs_output_replace(path, put, context);
    if (error) {
        fprintf(stderr, "nvtxshim: %s: cannot write %s: %s\n", command, path, strerror(error));
        return -1;
    }
    return 0;
}
