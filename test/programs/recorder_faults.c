/* recorder_faults: the program test/test_faults.py fails the recorder's system
 * calls under. After its start it makes no system call of its own but the
 * last write of its line and its exit, so that every call of the kinds the
 * recorder makes, from the first the library makes on, is the library's: an
 * injection counted from there fails the recorder and never the program.
 *
 *     recorder_faults N
 *         N iterations of: push "work", start "span", mark "tick", end
 *         "span", pop; then "recorder_faults N done" on standard output with
 *         one write(2), and exit status 0.
 *
 * What it prints and its exit status do not depend on the shim or on what the
 * kernel refused it, so a run with an error injected is compared with a run
 * without the library. */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    long iterations = argc == 2 ? strtol(argv[1], NULL, 10) : -1;
    if (iterations < 0) {
        static const char usage[] = "usage: recorder_faults N\n";
        (void)!write(2, usage, sizeof usage - 1);
        return 2;
    }
    for (long i = 0; i < iterations; i++) {
        nvtxRangePushA("work");
        nvtxRangeId_t span = nvtxRangeStartA("span");
        nvtxMarkA("tick");
        nvtxRangeEnd(span);
        nvtxRangePop();
    }
    char line[64];
    int length = snprintf(line, sizeof line, "recorder_faults %ld done\n", iterations);
    return write(1, line, (size_t)length) == length ? 0 : 1;
}
