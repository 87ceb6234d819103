/* What report and diff parse alike: an option's value, a budget. */
#ifndef NVS_CLI_OPTIONS_H
#define NVS_CLI_OPTIONS_H

#include <stdint.h>

/* The value of option NAME at ARGV[*I] ("--name VALUE" or "--name=VALUE", *I
 * moved past it); NULL when ARGV[*I] is another argument, "" when the value is
 * missing. */
const char *nvs_option_value(const char *name, int argc, char **argv, int *i);

/* TEXT as a frame budget, checked by the library's own parser of
 * NVTXSHIM_FRAME_BUDGET ("33ms", "500us", "16.7ms", "2s"); 0 when it is none. */
int64_t nvs_option_budget(const char *text);

#endif
