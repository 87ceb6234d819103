/* A file the command writes whole (report's and diff's page and JSON document):
 * what it will not replace, and the writing itself, beside the file and then
 * renamed over it, so that a reader never sees half of one. */
#ifndef NVS_CLI_OUTPUT_H
#define NVS_CLI_OUTPUT_H

#include <stdio.h>

/* What is at PATH, in words ("a directory", "a FIFO", ...), where it is neither
 * nothing nor a regular file; NULL where a written file may replace it. */
const char *nvs_output_not_regular(const char *path);

/* PUT's text (it returns non-zero out of memory) written to a file beside PATH
 * (made as any file is, the umask applied), then renamed to PATH; nothing is
 * left behind on failure. 0, or the errno of what failed. */
int nvs_output_replace(const char *path, int (*put)(FILE *out, const void *context),
                       const void *context);

/* -1 after one "nvtxshim: COMMAND: will not write PATH: it is ..., and WHAT
 * replaces only a regular file[HINT]" line where something other than a regular
 * file is at PATH (a device node, a FIFO, a socket, a directory, a link); 0
 * where PATH is a regular file or nothing. */
int nvs_output_refused(const char *command, const char *path, const char *what, const char *hint);

/* PUT's text to PATH: refused as nvs_output_refused says (asked again here: a
 * summary took a while, and a rename would replace whatever is at PATH by
 * then), else written by nvs_output_replace. 0, or -1 after one line. */
int nvs_output_write(const char *command, const char *path, const char *what, const char *hint,
                     int (*put)(FILE *out, const void *context), const void *context);

#endif
