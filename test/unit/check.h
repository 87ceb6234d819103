/* The unit tests' one harness (test/unit/, each test_ program): CHECK counts a condition as
 * passed or failed, naming a failed one by file and line; check_summary
 * prints "[NAME: ]P passed, F failed" and gives the exit status. The test_*.py
 * suites run each program and read that line. */
#ifndef NVS_UNIT_CHECK_H
#define NVS_UNIT_CHECK_H

#include <stdio.h>

static int passed, failed;

#define CHECK(condition)                                                                \
    do {                                                                                \
        if (condition) passed++;                                                        \
        else { failed++; printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #condition); }  \
    } while (0)

/* The counts so far; NAME (or NULL) before them. 1 when a check failed. */
static inline int check_summary(const char *name)
{
    if (name)
        printf("%s: ", name);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}

#endif
