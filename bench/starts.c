/* Starts PROGRAM N times, one after the other, and prints the nanoseconds a
 * start took on average: with no preload library, or with LD_PRELOAD=LIBRARY
 * in the started program's environment only (the driver's own start is not
 * measured). For the bench's start-up row.
 *   starts N LIBRARY|- PROGRAM [ARGS...] */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static unsigned long long now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (unsigned long long)now.tv_sec * 1000000000ull + (unsigned long long)now.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: starts N LIBRARY|- PROGRAM [ARGS...]\n");
        return 2;
    }
    long n = atol(argv[1]);
    size_t count = 0;
    while (environ[count])
        count++;
    char **envp = calloc(count + 2, sizeof *envp);
    char preload[4200];
    size_t used = 0;
    for (size_t i = 0; i < count; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11))
            envp[used++] = environ[i];
    if (strcmp(argv[2], "-")) {
        snprintf(preload, sizeof preload, "LD_PRELOAD=%s", argv[2]);
        envp[used++] = preload;
    }
    unsigned long long start = now_ns();
    for (long i = 0; i < n; i++) {
        pid_t child;
        int status;
        if (posix_spawn(&child, argv[3], NULL, NULL, argv + 3, envp) != 0 ||
            waitpid(child, &status, 0) != child || !WIFEXITED(status)) {
            fprintf(stderr, "starts: %s did not run\n", argv[3]);
            return 1;
        }
    }
    printf("ns=%.0f\n", (double)(now_ns() - start) / (double)n);
    return 0;
}
