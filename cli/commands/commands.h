/* The nvtxshim command's subcommands. Each is called like a main(): argv[0]
 * is the subcommand's name ("run", "report", ...), argv[argc] is NULL, and the
 * return value is the exit status (2 for a usage error). "--help" anywhere
 * before the program's own arguments prints the subcommand's manual page on
 * stdout and returns 0. */
#ifndef NVS_CLI_COMMANDS_H
#define NVS_CLI_COMMANDS_H

/* cli/commands/run.c: the program with the library appended to LD_PRELOAD, options
 * turned into NVTXSHIM_* variables; profile: the same under nsys profile. */
int nvs_cli_run(int argc, char **argv);
int nvs_cli_profile(int argc, char **argv);

/* cli/commands/check.c: what will and will not work on this machine. */
int nvs_cli_check(int argc, char **argv);

/* cli/commands/report.c: the summary of an nsys SQLite export or a trace file.
 * profile calls it in-process as {"report", "PATH.sqlite", NULL}. */
int nvs_cli_report(int argc, char **argv);

/* cli/commands/convert.c: an nsys report or its SQLite export as a Chrome/Perfetto trace. */
int nvs_cli_convert(int argc, char **argv);

/* cli/commands/top.c: a live view of a trace being written. */
int nvs_cli_top(int argc, char **argv);

/* cli/commands/diff.c: runs before and after a change compared, several a side, as a CI gate. */
int nvs_cli_diff(int argc, char **argv);

#endif
