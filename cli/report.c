/* nvtxshim report: the summary the demo prints (work in progress). */
#define _GNU_SOURCE
#include <stdio.h>

#include "commands.h"

int nvs_cli_report(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fputs("nvtxshim: report: not implemented yet\n", stderr);
    return 1;
}
