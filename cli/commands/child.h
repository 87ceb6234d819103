/* What run, profile and check share: finding the library and programs, and
 * running a child under a watchdog (nsys 2022.4 can hang after the program it
 * profiles has exited, and its agent outlives a killed nsys). */
#ifndef NVS_CLI_CHILD_H
#define NVS_CLI_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define NVS_LIBRARY_NAME "libnvtxshim.so"

/* The library to preload: GIVEN (--library) when not NULL, else $NVTXSHIM_LIBRARY,
 * else libnvtxshim.so beside this executable (the build directory), else
 * ../lib/libnvtxshim.so from it (make install). Fills PATH with an absolute
 * path and returns true; otherwise fills LOOKED with where it looked. */
bool nvs_cli_find_library(const char *given, char *path, size_t size, char *looked,
                          size_t looked_size);

/* NAME as execvp would find it (NAME itself when it holds a '/'), as an
 * absolute path when found. */
bool nvs_cli_find_program(const char *name, char *path, size_t size);

/* Starts ARGV (PATH searched) with SIGINT and SIGQUIT at their defaults and
 * the signal mask cleared; stdout and stderr go to OUTPUT_FD when it is not -1.
 * Returns the pid, or -1 with errno set when fork failed. An exec that fails
 * makes the child exit 127 after one line on stderr. */
pid_t nvs_cli_start(char *const argv[], int output_fd);

struct nvs_cli_limits {
    double total_s; /* the whole run; 0: no limit */
    double idle_s;  /* time during which the child has no living descendant
                       * (before the program starts, after it ends); 0: no limit */
};

/* Waits for PID (started by nvs_cli_start) within LIMITS. SIGTERM and SIGHUP
 * sent to this process meanwhile are passed on to PID. Returns true with the
 * wait status in STATUS, or false when a limit expired: PID and its living
 * descendants have then been killed with SIGKILL and PID reaped. */
bool nvs_cli_wait(pid_t pid, const struct nvs_cli_limits *limits, int *status);

/* Kills (SIGKILL) the agents of the nsys profile session that NSYS_PID ran:
 * `nsys --start-agent --session-name=profile-NAME-NSYS_PID`, which outlive a
 * killed nsys and ignore SIGTERM. Returns how many were killed. */
int nvs_cli_kill_nsys_agents(pid_t nsys_pid);

/* Runs ARGV with stdout and stderr captured into OUTPUT (NUL-terminated, cut
 * at SIZE - 1), bounded by TIMEOUT_S. Returns the wait status, or -1 when it
 * could not be started or ran out of time (and was killed). */
int nvs_cli_capture(char *const argv[], char *output, size_t size, double timeout_s);

/* kernel.perf_event_paranoid, or INT_MIN when unreadable. */
int nvs_cli_perf_event_paranoid(void);

/* Whether this process has capability CAP (a CAP_* number) in effect. */
bool nvs_cli_capable(int cap);

/* The exit status a shell would report for wait status STATUS (128+N for a
 * signal). */
int nvs_cli_exit_status(int status);

#endif
