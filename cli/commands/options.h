/* What the commands that read profiles (report, diff, top, convert) parse
 * alike: --help, an option's value, a count, a budget, and the usage error's line. */
#ifndef NVS_CLI_OPTIONS_H
#define NVS_CLI_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

/* The usage errors of the options parsed alike, for FORMAT below with the value. */
#define NVS_OPTION_MAX_INPUT_USAGE \
    "--max-input needs a size in bytes, with k, M, G or T if you like (512M, 8G): '%s'"
#define NVS_OPTION_BUDGET_USAGE \
    "--budget needs a duration with its unit (33ms, 500us, 16.7ms, 2s): '%s'"

/* Whether --help or -h is among ARGV[1..ARGC-1]: the manual page wins over
 * every other argument. */
bool nvs_option_help(int argc, char **argv);

/* One "nvtxshim: COMMAND: FORMAT (nvtxshim COMMAND --help)" line on stderr,
 * FORMAT with WHAT; returns 2, the exit status of a usage error. */
int nvs_option_usage_error(const char *command, const char *format, const char *what);

/* The value of option NAME at ARGV[*I] ("--name VALUE" or "--name=VALUE", *I
 * moved past it); NULL when ARGV[*I] is another argument, "" when the value is
 * missing. */
const char *nvs_option_value(const char *name, int argc, char **argv, int *i);

/* TEXT as a whole number, LEAST or more, at *OUT; false (OUT untouched) when it
 * is not one: empty, other characters, out of range or below LEAST. */
bool nvs_option_count(const char *text, long least, long *out);

/* TEXT as a frame budget, checked by the library's own parser of
 * NVTXSHIM_FRAME_BUDGET ("33ms", "500us", "16.7ms", "2s"); 0 when it is none. */
int64_t nvs_option_budget(const char *text);

#endif
