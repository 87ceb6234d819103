/* What run (cli/commands/run.c) and profile (cli/commands/profile.c) share: their command line.
 * run.c holds the table of options that set NVTXSHIM_* variables, their manual
 * entries, and the parser that reads both commands' options. */
#ifndef NVS_CLI_RUN_H
#define NVS_CLI_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "config.h"

/* Room for a value per option of run.c's table (checked there). */
#define NVS_LAUNCH_VARIABLES_MAX 32

/* A run or profile command line, as nvs_launch_parse reads it. */
struct nvs_launch {
    bool profile;
    const char *command; /* "run" or "profile", for messages */
    void (*help)(void);  /* the command's manual page, for --help */
    const char *values[NVS_LAUNCH_VARIABLES_MAX];
    const char *library;
    bool dry_run;
    bool top; /* run --top: the trace shown live (top.c) until it ends */
    /* profile */
    const char *output;
    bool force;
    const char *apis;
    bool cpu_sampling;
    const char *nsys;
    bool bare; /* nsys alone: nothing preloaded, nothing added */
    double timeout_s, finish_timeout_s;
    char **nsys_options;
    int nsys_option_count;
    char **program; /* NULL-terminated */
};

/* Fills LAUNCH (its command, help and profile set) from ARGV; returns -1 to go
 * on, or the exit status (0 after --help, 2 after a usage error). */
int nvs_launch_parse(struct nvs_launch *launch, int argc, char **argv);

/* One "nvtxshim COMMAND: " line on stderr, FORMAT with DETAIL, pointing at
 * --help; returns 2. */
int nvs_launch_usage_error(const struct nvs_launch *launch, const char *format, const char *detail);

/* The manual entries of the options that set variables (for profile, without
 * --trace). */
void nvs_launch_print_variable_options(FILE *out, bool profile);

/* The library to preload into LIBRARY; -1, or 125 after a line on stderr. */
int nvs_launch_find_library(const struct nvs_launch *launch, char *library, size_t size);

/* Sets the variables in this process's environment (the program and nsys
 * inherit it) and checks the whole configuration, into CONFIG, as the library
 * will; -1, or 2 after the library's lines on stderr. */
int nvs_launch_apply_variables(const struct nvs_launch *launch, struct nvs_config *config);

/* The first option given that sets a variable ("frame", ...), or NULL. */
const char *nvs_launch_variable_option(const struct nvs_launch *launch);

/* For --dry-run, on stdout: the variables set, as NAME=VALUE words, and ARGV
 * (at most COUNT words), as a shell reads them back. */
void nvs_launch_print_variables(const struct nvs_launch *launch);
void nvs_launch_print_argv(char *const *argv, int count);

#endif
