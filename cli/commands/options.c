/* Options report and diff share (options.h). */
#include "commands/options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

bool nvs_option_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return true;
    return false;
}

int nvs_option_usage_error(const char *command, const char *format, const char *what)
{
    fprintf(stderr, "nvtxshim: %s: ", command);
    fprintf(stderr, format, what);
    fprintf(stderr, " (nvtxshim %s --help)\n", command);
    return 2;
}

const char *nvs_option_value(const char *name, int argc, char **argv, int *i)
{
    size_t length = strlen(name);
    if (strncmp(argv[*i], name, length) != 0)
        return NULL;
    if (argv[*i][length] == '=')
        return argv[*i] + length + 1;
    if (argv[*i][length])
        return NULL;
    return *i + 1 < argc ? argv[++*i] : "";
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
    if (snprintf(variable, sizeof variable, "NVTXSHIM_FRAME_BUDGET=%s", text) >= (int)sizeof variable)
        return 0;
    char *environment[] = {variable, NULL};
    struct nvs_config config;
    if (nvs_config_parse(&config, environment, ignore_config_line, NULL) != 0 ||
        config.frame_budget_ns > INT64_MAX)
        return 0;
    return (int64_t)config.frame_budget_ns;
}
