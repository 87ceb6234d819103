/* nvtxshim convert: an nsys SQLite export to a Chrome trace (work in progress). */
#define _GNU_SOURCE
#include <stdio.h>

#include "commands.h"

int nvs_cli_convert(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fputs("nvtxshim: convert: not implemented yet\n", stderr);
    return 1;
}
