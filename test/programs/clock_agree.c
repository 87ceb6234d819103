/* Ranges between two reads of CLOCK_MONOTONIC, for test/test_clock.py: the
 * recorder's times (read off the TSC where it can, clock.h) must fall between
 * the program's own reads.
 *   clock_agree ROUNDS GAP_US          ROUNDS rounds GAP_US apart, each a range
 *                                      "round N" between two clock reads; prints
 *                                      "N BEFORE AFTER" (ns) for each
 *   clock_agree ROUNDS GAP_US refuse   the same, then the thread forbids itself
 *                                      the TSC (prctl PR_SET_TSC, PR_TSC_SIGSEGV)
 *                                      and does it again ("late N"), and so does a
 *                                      thread it starts then ("child N"): their
 *                                      clock reads are system calls, as the vDSO
 *                                      reads the TSC too
 *   ... quiet                          either, printing only "clock_agree: N ranges"
 *                                      (the same with and without the library) */
#define _GNU_SOURCE
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int rounds;
static uint64_t gap_ns;
static bool refused, quiet;
static int ranges;

static uint64_t now_ns(void)
{
    struct timespec now;
    if (refused)
        syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &now);
    else
        clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

static void run_rounds(const char *label)
{
    char name[64];
    for (int i = 0; i < rounds; i++) {
        snprintf(name, sizeof name, "%s %d", label, i);
        uint64_t before = now_ns();
        nvtxRangePushA(name);
        nvtxRangePop();
        uint64_t after = now_ns();
        ranges++;
        if (!quiet)
            printf("%s %llu %llu\n", name, (unsigned long long)before,
                   (unsigned long long)after);
        while (now_ns() < after + gap_ns)
            continue;
    }
}

static void *child(void *unused)
{
    (void)unused;
    run_rounds("child");
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: clock_agree ROUNDS GAP_US [refuse] [quiet]\n");
        return 2;
    }
    rounds = atoi(argv[1]);
    gap_ns = strtoull(argv[2], NULL, 10) * 1000ull;
    bool refuse = false;
    for (int i = 3; i < argc; i++) {
        refuse |= !strcmp(argv[i], "refuse");
        quiet |= !strcmp(argv[i], "quiet");
    }
    run_rounds("round");
    if (refuse) {
        if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) {
            perror("prctl");
            return 1;
        }
        refused = true;
        run_rounds("late");
        pthread_t thread;
        if (pthread_create(&thread, NULL, child, NULL) != 0 || pthread_join(thread, NULL) != 0)
            return 1;
    }
    if (quiet)
        printf("clock_agree: %d ranges\n", ranges);
    fflush(stdout);
    return 0;
}
