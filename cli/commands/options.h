/* The commands' one option parser: each command gives a table of its options
 * (long name, short letter, whether it takes a value, the id its handler is
 * told) and how its command line reads; nvs_options_read reads the words, says
 * the usage errors every command says alike, and hands each option and operand
 * to the command. Also what several commands check alike: a count, a budget. */
#ifndef NVS_CLI_OPTIONS_H
#define NVS_CLI_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

/* The usage errors of the options parsed alike, for FORMAT below with the value. */
#define NVS_OPTION_MAX_INPUT_USAGE                                                                 \
    "--max-input needs a size in bytes, with k, M, G or T if you like (512M, 8G): '%s'"
#define NVS_OPTION_BUDGET_USAGE                                                                    \
    "--budget needs a duration with its unit (33ms, 500us, 16.7ms, 2s): '%s'"

/* How an option takes its value. */
enum nvs_option_takes {
    NVS_OPTION_FLAG,     /* --name alone (-x) */
    NVS_OPTION_VALUE,    /* --name VALUE or --name=VALUE (-x VALUE, -xVALUE) */
    NVS_OPTION_OPTIONAL, /* --name, or --name=VALUE: the word after it is never its value */
};

/* One option of a command's table; the table ends with a NULL name. */
struct nvs_option {
    const char *name; /* the long name, without its dashes */
    char letter;      /* the short one; 0 for none */
    enum nvs_option_takes takes;
    int id; /* what the command's handler is told, or NVS_OPTION_HELP */
};

/* The id of --help: the parser prints the command's manual and the status is 0. */
#define NVS_OPTION_HELP (-1)

/* What "--" means where options and operands mix. */
enum nvs_dashes {
    NVS_DASHES_UNKNOWN, /* nothing: an unknown option (top) */
    NVS_DASHES_END,     /* the end of the options: every word after it is an operand (convert) */
    NVS_DASHES_NEXT,    /* the one word after it is an operand, whatever it looks like (report) */
    NVS_DASHES_OPERAND, /* an operand itself, handed on as "--" (diff: between its groups) */
};

/* How a command's words read. */
struct nvs_command_line {
    const char *command; /* "report": the usage errors' lines name it */
    const struct nvs_option *options;
    /* true: the options come first and getopt_long reads them, with "+" (run,
     * profile, check): a long name may be shortened while it is unambiguous,
     * short letters cluster (-nf, -oFILE), and the first operand or "--" ends
     * the options; a --help after them is the program's. false: options and
     * operands mix, each option spelt whole, and --help or -h anywhere prints
     * the manual whatever else is there (report, diff, top, convert). The
     * parser's usage errors begin "nvtxshim COMMAND: " where the options come
     * first, "nvtxshim: COMMAND: " where they mix, as each command said them. */
    bool options_first;
    /* options first: an unknown short option shown as -X, as run and profile
     * say it (else the word it came in, as check says it) */
    bool unknown_by_letter;
    enum nvs_dashes dashes;        /* options mixed */
    void (*manual)(void *context); /* the manual page, on stdout */
    /* An option met, its VALUE NULL when it has none (a flag, --name at the
     * end of the line, an optional value not given); -1 to go on, or the
     * exit status. */
    int (*option)(void *context, int id, const char *value);
    /* An operand, options mixed (AFTER_DASHES: it came after "--"); -1 to go
     * on, or the exit status. NULL where the command takes none that way. */
    int (*operand)(void *context, const char *operand, bool after_dashes);
};

/* ARGV[1..ARGC-1] read as LINE says, each option and operand handed on with
 * CONTEXT. Returns -1 once every option is read (*OPERANDS: options first,
 * the index of the first operand; may be NULL), or the exit status: 0 after
 * the manual; 2 after a usage error's one line, the parser's own ("unknown
 * option", "needs a value") or a handler's; what a handler returned. */
int nvs_options_read(const struct nvs_command_line *line, int argc, char **argv, void *context,
                     int *operands);

/* One "nvtxshim: COMMAND: FORMAT (nvtxshim COMMAND --help)" line on stderr,
 * FORMAT with WHAT; returns 2, the exit status of a usage error. */
int nvs_option_usage_error(const char *command, const char *format, const char *what);

/* TEXT as a whole number, LEAST or more, at *OUT; false (OUT untouched) when it
 * is not one: empty, other characters, out of range or below LEAST. */
bool nvs_option_count(const char *text, long least, long *out);

/* TEXT as a frame budget, checked by the library's own parser of
 * NVTXSHIM_FRAME_BUDGET ("33ms", "500us", "16.7ms", "2s"); 0 when it is none. */
int64_t nvs_option_budget(const char *text);

#endif
