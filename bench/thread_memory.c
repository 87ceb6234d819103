/* thread_memory [N]: the memory N live threads cost, each having recorded one
 * NVTX range. Starts N threads (default 1000); each pushes and pops a range,
 * then waits until all have, so that N are alive at once; prints the
 * process's resident set (VmRSS, KiB) before the threads and with all of them
 * alive:
 *
 *   threads=1000 rss_before_kib=... rss_live_kib=...
 *
 * Run it without the library, with it and nothing set, and recording
 * (NVTXSHIM_TRACE=t.json or t.pftrace): the differences between the runs are
 * what recording costs for N threads (docs/user-guide.md, The trace file). */
#define _GNU_SOURCE
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_barrier_t recorded, release;

static long resident_kib(void)
{
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (status && fgets(line, sizeof line, status))
        if (!strncmp(line, "VmRSS:", 6))
            kib = strtol(line + 6, NULL, 10);
    if (status)
        fclose(status);
    return kib;
}

static void *record_one(void *unused)
{
    (void)unused;
    nvtxRangePushA("thread_memory");
    nvtxRangePop();
    pthread_barrier_wait(&recorded);
    pthread_barrier_wait(&release);
    return NULL;
}

int main(int argc, char **argv)
{
    int count = argc > 1 ? atoi(argv[1]) : 1000;
    if (count < 1)
        return 2;
    pthread_t *threads = calloc((size_t)count, sizeof *threads);
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setstacksize(&attributes, 64 * 1024);
    pthread_barrier_init(&recorded, NULL, (unsigned)count + 1);
    pthread_barrier_init(&release, NULL, (unsigned)count + 1);
    nvtxRangePushA("main");        /* the NVTX tool is loaded before the baseline */
    nvtxRangePop();
    long before = resident_kib();
    for (int i = 0; i < count; i++)
        if (pthread_create(&threads[i], &attributes, record_one, NULL))
            return 2;
    pthread_barrier_wait(&recorded);
    long live = resident_kib();
    pthread_barrier_wait(&release);
    for (int i = 0; i < count; i++)
        pthread_join(threads[i], NULL);
    printf("threads=%d rss_before_kib=%ld rss_live_kib=%ld\n", count, before, live);
    free(threads);
    return 0;
}
