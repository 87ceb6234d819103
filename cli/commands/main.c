/* nvtxshim: the command in front of libnvtxshim. Dispatches to a subcommand
 * (cli/commands/commands.h); `nvtxshim --help` lists them, `nvtxshim CMD --help` is
 * that subcommand's manual page. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "commands/child.h"
#include "commands/commands.h"

#ifndef NVS_VERSION
#error "NVS_VERSION must be defined (the Makefile reads it from VERSION)"
#endif

struct subcommand {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *summary;
};

static const struct subcommand subcommands[] = {
    { "run", nvs_cli_run,
      "run a program with the library in front of it (options become NVTXSHIM_* variables)" },
    { "profile", nvs_cli_profile,
      "the same under nsys profile, bounded by a watchdog; prints the report and its summary" },
    { "check", nvs_cli_check,
      "what will and will not work on this machine, and the command that fixes it" },
    { "report", nvs_cli_report, "summarise an nsys report, its SQLite export or a trace file" },
    { "convert", nvs_cli_convert,
      "an nsys report or its SQLite export as a trace for Perfetto (JSON, or .json.gz)" },
    { "top", nvs_cli_top,
      "a live view of a recording in progress: the frames so far, the slowest and its calls" },
    { "diff", nvs_cli_diff,
      "runs before and after a change compared (several a side): median and p99 frame with intervals, judged against the noise; exit 0/1/2 for CI" },
};

static void usage(FILE *out)
{
    fputs(
        "NAME\n"
        "    nvtxshim - see a program's USB, device, display and CUDA calls in Nsight Systems or a\n"
        "    trace\n"
        "\n"
        "SYNOPSIS\n"
        "    nvtxshim COMMAND [OPTIONS] [ARGS...]\n"
        "    nvtxshim COMMAND --help\n"
        "    nvtxshim --library        the library's path, to append to LD_PRELOAD\n"
        "    nvtxshim --version\n"
        "\n"
        "DESCRIPTION\n"
        "    libnvtxshim, put in front of an unmodified program with LD_PRELOAD, wraps in NVTX\n"
        "    ranges, with the bytes each moved:\n"
        "      - libusb-1.0, and the device files a rig is made of: V4L2 cameras, USB serial\n"
        "        ports, hidraw and raw usbfs nodes (other device files, a pty or /dev/i2c-*,\n"
        "        where --devices names them);\n"
        "      - the display: Xlib, XCB and XRender drawing, flushes and round trips; GLX and\n"
        "        EGL buffer swaps, GL texture uploads, Vulkan's present;\n"
        "      - CUDA, driver and runtime API: host/device copies, the CPU's waits for the GPU\n"
        "        (stream, context, event and device synchronisation), kernel launches.\n"
        "    It counts the program's frames (--frame) and opens nsys capture ranges itself\n"
        "    (--capture). The events go to Nsight Systems (profile), or, without it, to a\n"
        "    trace file the library writes (run --trace); report, top and diff read both.\n"
        "\n"
        "COMMANDS\n",
        out);
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(out, "    %-9s %s\n", subcommands[i].name, subcommands[i].summary);
    fputs("\n"
          "EXIT STATUS\n"
          "    That of the command; 2 for an unknown command or no command.\n"
          "\n"
          "EXAMPLES\n"
          "    nvtxshim check\n"
          "    nvtxshim run --frame usb.in:0x81 --trace rig.json -- ./my_camera_loop\n"
          "    nvtxshim profile --frame usb.in:0x81 --capture frames:100+50 -- ./my_camera_loop\n"
          "    LD_PRELOAD=\"${LD_PRELOAD:+$LD_PRELOAD:}$(nvtxshim --library)\" \\\n"
          "        nsys profile -t nvtx,osrt --sample=none --cpuctxsw=none ./my_camera_loop\n"
          "    nvtxshim help profile\n",
          out);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (argc == 2 && !strcmp(name, "--version")) {
        puts("nvtxshim " NVS_VERSION);
        return 0;
    }
    if (argc == 2 && !strcmp(name, "--library")) {
        /* the one run and profile preload: beside this command, ../lib, $NVTXSHIM_LIBRARY */
        char path[PATH_MAX], looked[3 * PATH_MAX];
        if (nvs_cli_find_library(NULL, path, sizeof path, looked, sizeof looked)) {
            puts(path);
            return 0;
        }
        fprintf(stderr, "nvtxshim: libnvtxshim.so not found (looked at %s)\n", looked);
        return 1;
    }
    if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
        if (argc > 2 && strcmp(name, "help") == 0) {
            /* `nvtxshim help CMD` is `nvtxshim CMD --help`. */
            for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
                if (!strcmp(argv[2], subcommands[i].name)) {
                    char *help_argv[] = { argv[2], "--help", NULL };
                    return subcommands[i].main(2, help_argv);
                }
            fprintf(stderr, "nvtxshim: no command '%s' (nvtxshim --help lists them)\n", argv[2]);
            return 2;
        }
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (!strcmp(name, subcommands[i].name))
            return subcommands[i].main(argc - 1, argv + 1);
    fprintf(stderr, "nvtxshim: no command '%s' (nvtxshim --help lists them)\n", name);
    return 2;
}
