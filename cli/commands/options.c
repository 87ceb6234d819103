/* The commands' option parser (options.h), and the values several commands
 * check alike. */
#define _GNU_SOURCE
#include "commands/options.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

/* getopt_long's codes for the table's long options: past every letter. */
#define FIRST_CODE 256

int nvs_option_usage_error(const char *command, const char *format, const char *what)
{
    fprintf(stderr, "nvtxshim: %s: ", command);
    fprintf(stderr, format, what);
    fprintf(stderr, " (nvtxshim %s --help)\n", command);
    return 2;
}

/* The usage error of a command whose options come first: "nvtxshim COMMAND: ...". */
static int first_usage_error(const struct nvs_command_line *line, const char *format,
                             const char *what)
{
    fprintf(stderr, "nvtxshim %s: ", line->command);
    fprintf(stderr, format, what);
    fprintf(stderr, " (nvtxshim %s --help)\n", line->command);
    return 2;
}

static size_t option_count(const struct nvs_command_line *line)
{
    size_t count = 0;
    while (line->options[count].name)
        count++;
    return count;
}

/* The option met: the manual for --help, else the command's handler. */
static int hand_on(const struct nvs_command_line *line, const struct nvs_option *option,
                   const char *value, void *context)
{
    if (option->id == NVS_OPTION_HELP) {
        line->manual(context);
        return 0;
    }
    return line->option(context, option->id, value);
}

/* What getopt_long found unknown in WORD, as the command says it. */
static int unknown_first(const struct nvs_command_line *line, const char *word)
{
    if (line->unknown_by_letter && optopt) {
        /* a short letter, or a long option given a value it does not take,
         * shown by its letter */
        int letter = optopt;
        if (letter >= FIRST_CODE)
            letter = line->options[letter - FIRST_CODE].letter;
        if (letter) {
            char shown[3] = { '-', (char)letter, '\0' };
            return first_usage_error(line, "unknown option '%s'", shown);
        }
    }
    return first_usage_error(line, "unknown option '%s'", word);
}

/* Options first: getopt_long over a table made from LINE's. */
static int read_first(const struct nvs_command_line *line, int argc, char **argv, void *context,
                      int *operands)
{
    size_t count = option_count(line);
    struct option longs[count + 1];
    char shorts[2 + 3 * count + 1];
    size_t s = 0;
    shorts[s++] = '+'; /* the first operand ends the options */
    shorts[s++] = ':'; /* a missing value told from an unknown option */
    for (size_t i = 0; i < count; i++) {
        const struct nvs_option *option = &line->options[i];
        int has_arg = option->takes == NVS_OPTION_VALUE ? required_argument
            : option->takes == NVS_OPTION_OPTIONAL      ? optional_argument
                                                        : no_argument;
        longs[i] = (struct option){ option->name, has_arg, NULL, FIRST_CODE + (int)i };
        if (option->letter) {
            shorts[s++] = option->letter;
            if (option->takes != NVS_OPTION_FLAG)
                shorts[s++] = ':';
            if (option->takes == NVS_OPTION_OPTIONAL)
                shorts[s++] = ':';
        }
    }
    longs[count] = (struct option){ NULL, 0, NULL, 0 };
    shorts[s] = '\0';

    opterr = 0;
    optind = 0;
    for (;;) {
        /* The word getopt_long reads: a cluster of short letters (-xy) stays
         * at optind until its last letter, every other word is past it after. */
        int word = optind ? optind : 1;
        int c = getopt_long(argc, argv, shorts, longs, NULL);
        if (c == -1)
            break;
        const struct nvs_option *option = NULL;
        if (c == ':')
            return first_usage_error(line, "option '%s' needs a value", argv[optind - 1]);
        if (c == '?')
            return unknown_first(line, argv[word]);
        if (c >= FIRST_CODE)
            option = &line->options[c - FIRST_CODE];
        else
            for (size_t i = 0; i < count && !option; i++)
                if (line->options[i].letter == c)
                    option = &line->options[i];
        int status = hand_on(line, option, optarg, context);
        if (status >= 0)
            return status;
    }
    if (operands)
        *operands = optind;
    return -1;
}

/* The option of LINE's table that WORD spells whole: --name, --name=VALUE
 * (*VALUE, *ATTACHED) where it takes one, or -x. */
static const struct nvs_option *spelt(const struct nvs_command_line *line, const char *word,
                                      const char **value, bool *attached)
{
    *value = NULL;
    *attached = false;
    for (const struct nvs_option *option = line->options; option->name; option++) {
        if (option->letter && word[0] == '-' && word[1] == option->letter && !word[2])
            return option;
        size_t length = strlen(option->name);
        if (strncmp(word, "--", 2) != 0 || strncmp(word + 2, option->name, length) != 0)
            continue;
        const char *after = word + 2 + length;
        if (!*after)
            return option;
        if (*after == '=' && option->takes != NVS_OPTION_FLAG) {
            *value = after + 1;
            *attached = true;
            return option;
        }
    }
    return NULL;
}

/* Whether --help or -h is among ARGV[1..ARGC-1]: the manual page wins over
 * every other word where options mix. */
static bool asks_for_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return true;
    return false;
}

/* "--" where options and operands mix, at ARGV[*I]. */
static int dashes(const struct nvs_command_line *line, int argc, char **argv, int *i, bool *ended,
                  void *context)
{
    switch (line->dashes) {
    case NVS_DASHES_END: *ended = true; return -1;
    case NVS_DASHES_NEXT:
        if (*i + 1 < argc)
            return line->operand(context, argv[++*i], true);
        break;
    case NVS_DASHES_OPERAND: return line->operand(context, argv[*i], false);
    case NVS_DASHES_UNKNOWN: break;
    }
    return nvs_option_usage_error(line->command, "unknown option %s", argv[*i]);
}

/* Options and operands mixed, each option spelt whole. */
static int read_mixed(const struct nvs_command_line *line, int argc, char **argv, void *context)
{
    if (asks_for_help(argc, argv)) {
        line->manual(context);
        return 0;
    }
    bool ended = false;
    for (int i = 1; i < argc; i++) {
        const char *word = argv[i], *value;
        bool attached;
        const struct nvs_option *option;
        int status;
        if (ended)
            status = line->operand(context, word, true);
        else if (strcmp(word, "--") == 0)
            status = dashes(line, argc, argv, &i, &ended, context);
        else if ((option = spelt(line, word, &value, &attached))) {
            if (option->takes == NVS_OPTION_VALUE && !attached && i + 1 < argc)
                value = argv[++i];
            status = hand_on(line, option, value, context);
        } else if (word[0] == '-' && word[1])
            status = nvs_option_usage_error(line->command, "unknown option %s", word);
        else
            status = line->operand(context, word, false);
        if (status >= 0)
            return status;
    }
    return -1;
}

int nvs_options_read(const struct nvs_command_line *line, int argc, char **argv, void *context,
                     int *operands)
{
    if (line->options_first)
        return read_first(line, argc, argv, context, operands);
    return read_mixed(line, argc, argv, context);
}

static void ignore_config_line(const char *line, void *context)
{
    (void)line, (void)context;
}

bool nvs_option_count(const char *text, long least, long *out)
{
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (!*text || *end || errno || value < least)
        return false;
    *out = value;
    return true;
}

int64_t nvs_option_budget(const char *text)
{
    char variable[128];
    if (snprintf(variable, sizeof variable, "NVTXSHIM_FRAME_BUDGET=%s", text) >=
        (int)sizeof variable)
        return 0;
    char *environment[] = { variable, NULL };
    struct nvs_config config;
    if (nvs_config_parse(&config, environment, ignore_config_line, NULL) != 0 ||
        config.frame_budget_ns > INT64_MAX)
        return 0;
    return (int64_t)config.frame_budget_ns;
}
