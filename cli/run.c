/* nvtxshim run and nvtxshim profile: options become NVTXSHIM_* variables, the
 * library is appended to LD_PRELOAD, and the program is exec'd (run) or started
 * under a watched nsys profile (profile). */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "config.h"
#include "process.h"

extern char **environ;

#define CAP_SYS_ADMIN_NUMBER 21
#define CAP_PERFMON_NUMBER 38
#define DEFAULT_FINISH_TIMEOUT_S 300.0

/* One line per NVTXSHIM_* variable: its option, and the text of its manual entry. */
struct variable_option {
    const char *option;
    const char *argument;      /* NULL: a switch */
    const char *variable;
    const char *description;
};

static const struct variable_option variable_options[] = {
    {"hooks", "LIST", "NVTXSHIM_HOOKS",
     "Which calls are wrapped: a comma list of usb, x11, cuda; all; none. [all]"},
    {"frame", "MARKER", "NVTXSHIM_FRAME",
     "The call that begins each frame: usb.in[:EP], usb.out[:EP], x11.swap,\n"
     "x11.flush, cuda.htod, cuda.dtoh, call:NAME (any hooked function), off. [off]"},
    {"frame-budget", "DURATION", "NVTXSHIM_FRAME_BUDGET",
     "Frames longer than this get a red 'over budget' mark: 33ms, 500us, 16.7ms, 1s."},
    {"capture", "WINDOW", "NVTXSHIM_CAPTURE",
     "The window nsys records: frames:S[+C], frames:S+C/P (C frames every P),\n"
     "calls:NAME:S[+C], time:DELAY[+DURATION] (from the first hooked call),\n"
     "signal[:USR1|USR2|HUP|WINCH|URG] (each signal opens or closes it), off. [off]"},
    {"capture-via", "WAY", "NVTXSHIM_CAPTURE_VIA",
     "How the window reaches nsys: nvtx (a range, for -c nvtx), cuda\n"
     "(cuProfilerStart and cuProfilerStop, for -c cudaProfilerApi), both. [both]"},
    {"capture-name", "MESSAGE@DOMAIN", "NVTXSHIM_CAPTURE_NAME",
     "The capture range's name, for nsys -p. [capture@nvtxshim]"},
    {"trace", "FILE", "NVTXSHIM_TRACE",
     "With no NVTX tool attached, every NVTX event goes to FILE as a\n"
     "Chrome/Perfetto trace; %p in FILE becomes the process id."},
    {"kernel", NULL, "NVTXSHIM_KERNEL",
     "The kernel probe: time off CPU in each frame, and off-CPU intervals of at least\n"
     "THRESHOLD (1ms) as ranges in the trace; needs root or CAP_BPF and CAP_PERFMON."},
    {"log", "LEVEL", "NVTXSHIM_LOG", "The library's messages: quiet, info, debug. [info]"},
    {"shim-help", NULL, "NVTXSHIM_HELP",
     "The library prints its configuration reference as the program starts."},
};
#define VARIABLE_COUNT (sizeof variable_options / sizeof variable_options[0])

enum {
    OPTION_VARIABLE = 1000, /* + index into variable_options */
    OPTION_LIBRARY = 2000,
    OPTION_APIS,
    OPTION_CPU_SAMPLING,
    OPTION_NSYS,
    OPTION_TIMEOUT,
    OPTION_FINISH_TIMEOUT,
};

struct launch {
    bool profile;
    const char *command;            /* "run" or "profile", for messages */
    const char *values[VARIABLE_COUNT];
    const char *library;
    bool dry_run;
    /* profile */
    const char *output;
    bool force;
    const char *apis;
    bool cpu_sampling;
    const char *nsys;
    double timeout_s, finish_timeout_s;
    char **nsys_options;
    int nsys_option_count;
    char **program;                 /* NULL-terminated */
};

static void print_indented(FILE *out, const char *text, const char *indent)
{
    fputs(indent, out);
    for (const char *c = text; *c; c++) {
        fputc(*c, out);
        if (*c == '\n')
            fputs(indent, out);
    }
    fputc('\n', out);
}

static void print_variable_options(FILE *out, bool profile)
{
    for (size_t i = 0; i < VARIABLE_COUNT; i++) {
        const struct variable_option *o = &variable_options[i];
        if (profile && !strcmp(o->option, "trace"))
            continue;
        if (!strcmp(o->option, "kernel"))
            fprintf(out, "    --kernel, --kernel=THRESHOLD\n");
        else if (o->argument)
            fprintf(out, "    --%s %s\n", o->option, o->argument);
        else
            fprintf(out, "    --%s\n", o->option);
        print_indented(out, o->description, "        ");
        if (!strcmp(o->option, "kernel"))
            fprintf(out, "        Sets %s=on, or on:THRESHOLD.\n\n", o->variable);
        else if (o->argument)
            fprintf(out, "        Sets %s.\n\n", o->variable);
        else
            fprintf(out, "        Sets %s=1.\n\n", o->variable);
    }
}

static void help_run(void)
{
    fputs("NAME\n"
          "    nvtxshim run - run a program with libnvtxshim in front of it\n"
          "\n"
          "SYNOPSIS\n"
          "    nvtxshim run [OPTIONS] [--] PROGRAM [ARGS...]\n"
          "\n"
          "DESCRIPTION\n"
          "    Appends the library to LD_PRELOAD - what is there already, such as umockdev's,\n"
          "    nsys's or a sanitizer's preload library, stays in front - sets each option below\n"
          "    as the NVTXSHIM_* variable it names, and replaces itself with PROGRAM (exec):\n"
          "    the program keeps this process id, and its output and exit status are its own.\n"
          "    NVTXSHIM_* variables already in the environment apply too; an option wins.\n"
          "    All values are checked as the library checks them before PROGRAM starts, and a\n"
          "    bad one stops here with the library's message.\n"
          "\n"
          "    The library is --library PATH, else $NVTXSHIM_LIBRARY (which PROGRAM does not\n"
          "    inherit), else libnvtxshim.so beside this command (the build directory), else\n"
          "    ../lib/libnvtxshim.so from it (make install).\n"
          "\n"
          "OPTIONS\n", stdout);
    print_variable_options(stdout, false);
    fputs("    --library PATH\n"
          "        The library to preload (see DESCRIPTION).\n"
          "\n"
          "    -n, --dry-run\n"
          "        Print the command, as a shell line with its environment, and exit 0.\n"
          "\n"
          "    -h, --help\n"
          "        This page.\n"
          "\n"
          "EXIT STATUS\n"
          "    PROGRAM's own. Before PROGRAM starts: 2 for a usage error or a bad value, 125 when\n"
          "    the library is not found, 126 when PROGRAM cannot be executed, 127 when it is not\n"
          "    found.\n"
          "\n"
          "EXAMPLES\n"
          "    nvtxshim run --frame usb.in:0x81 --frame-budget 33ms --trace rig-%p.json -- ./camera_loop\n"
          "    nvtxshim run --frame x11.swap --trace gui.json -- glxgears\n"
          "    nvtxshim run --hooks usb --kernel --trace loop.json -- python3 my_pyusb_loop.py\n"
          "    nvtxshim run --frame call:libusb_control_transfer --trace t.json -- \\\n"
          "        build/emucam -- build/harness_physical --frames 100   (the emulated camera)\n",
          stdout);
}

static void help_profile(void)
{
    fputs("NAME\n"
          "    nvtxshim profile - profile a program with Nsight Systems and libnvtxshim\n"
          "\n"
          "SYNOPSIS\n"
          "    nvtxshim profile [OPTIONS] [-- NSYS_OPTIONS] -- PROGRAM [ARGS...]\n"
          "\n"
          "DESCRIPTION\n"
          "    Runs PROGRAM under nsys profile with the library in front of it and the options\n"
          "    set as NVTXSHIM_* variables, as nvtxshim run does. The library is appended to the\n"
          "    program's LD_PRELOAD by a shell that nsys starts, after nsys's own preload\n"
          "    library (which must stay). nsys gets the options that match:\n"
          "\n"
          "        -t nvtx                          plus --apis\n"
          "        --sample=none --cpuctxsw=none    --cpu-sampling: process-tree for both\n"
          "        -c nvtx -p capture@nvtxshim      with --capture (the --capture-name);\n"
          "                                         -c cudaProfilerApi with --capture-via cuda\n"
          "        --capture-range-end=stop         =repeat for windows that come back\n"
          "                                         (frames:S+C/P, signal): one report each,\n"
          "                                         NAME.1.nsys-rep, NAME.2.nsys-rep, ...\n"
          "        -o NAME --force-overwrite true --export none\n"
          "\n"
          "    NSYS_OPTIONS, between the first -- and a second one, are passed to nsys profile\n"
          "    after these; one that sets an option of this list replaces it (-t, -s, --cpuctxsw,\n"
          "    -c, -p, --capture-range-end, -o, -f, --export).\n"
          "\n"
          "    A watchdog bounds nsys: nsys 2022.4's agent can keep spinning after the program\n"
          "    exits, and nsys profile then never returns. When nsys spends --finish-timeout\n"
          "    seconds with no program of its own running (starting up, or writing the report),\n"
          "    or --timeout seconds in all, the watchdog kills nsys, what it started, and the\n"
          "    session's agent (SIGKILL: the agent ignores SIGTERM), and runs it all once more.\n"
          "    Ctrl-C is nsys's: it stops the program and the report is still written.\n"
          "\n"
          "    Each report is then exported (nsys export --type sqlite, to NAME.sqlite beside it),\n"
          "    its path printed, and its summary printed as nvtxshim report prints it.\n"
          "\n"
          "OPTIONS\n"
          "    The options of nvtxshim run set the same variables, except --trace (under nsys the\n"
          "    events go to nsys):\n"
          "\n", stdout);
    print_variable_options(stdout, true);
    fputs("    -o, --output NAME\n"
          "        The report: NAME.nsys-rep. %p becomes this command's process id.\n"
          "        [nvtxshim-%p, in the current directory]\n"
          "\n"
          "    -f, --force\n"
          "        Replace reports of that name (otherwise an existing one stops here).\n"
          "\n"
          "    --apis LIST\n"
          "        What nsys traces (-t): nvtx is always there; add osrt, cuda, cudnn, cublas, ...\n"
          "        [nvtx]\n"
          "\n"
          "    --cpu-sampling\n"
          "        CPU samples and context switches of the program's processes. Needs root or\n"
          "        kernel.perf_event_paranoid <= 2 (nvtxshim check says which); off by default\n"
          "        because nsys 2022.4 often hangs at exit with it (the watchdog then retries).\n"
          "\n"
          "    --nsys PATH\n"
          "        The nsys to run. [nsys, from PATH]\n"
          "\n"
          "    --timeout SECONDS\n"
          "        The most one nsys run may take in all; 0: no limit. [0]\n"
          "\n"
          "    --finish-timeout SECONDS\n"
          "        The most nsys may spend with no program of its own running; raise it for runs\n"
          "        with millions of events, which take minutes to write. 0: no limit. [300]\n"
          "\n"
          "    --library PATH\n"
          "        The library to preload (see nvtxshim run --help).\n"
          "\n"
          "    -n, --dry-run\n"
          "        Print the nsys command, as a shell line with its environment, and exit 0.\n"
          "\n"
          "    -h, --help\n"
          "        This page.\n"
          "\n"
          "EXIT STATUS\n"
          "    When a report was made, the program's exit status (nsys passes it on). 2 for a\n"
          "    usage error or a bad value (nothing started); 125 when no report was made: nsys\n"
          "    or the library not found, nsys failed, nsys hung twice, or the capture window\n"
          "    never opened.\n"
          "\n"
          "EXAMPLES\n"
          "    nvtxshim profile --frame usb.in:0x81 --capture frames:100+50 -- ./camera_loop\n"
          "    nvtxshim profile --frame call:libusb_control_transfer --capture frames:100+5/1000 \\\n"
          "        -o rig -- python3 harness_physical.py --use_gui=0\n"
          "    nvtxshim profile --frame x11.swap --apis osrt,cuda -- --stats=true -- ./viewer\n"
          "    nvtxshim check    (what works here)\n", stdout);
}

static int usage_error(const struct launch *launch, const char *format, const char *detail)
{
    fprintf(stderr, "nvtxshim %s: ", launch->command);
    fprintf(stderr, format, detail);
    fprintf(stderr, " (nvtxshim %s --help)\n", launch->command);
    return 2;
}

static bool parse_seconds(const char *text, double *seconds)
{
    char *end;
    errno = 0;
    double value = strtod(text, &end);
    if (errno || end == text || *end || !(value >= 0) || value > 1e9)
        return false;
    *seconds = value;
    return true;
}

/* Fills LAUNCH from ARGV; returns -1 to go on, or the exit status. */
static int parse_options(struct launch *launch, int argc, char **argv)
{
    struct option options[VARIABLE_COUNT + 16];
    size_t n = 0;
    for (size_t i = 0; i < VARIABLE_COUNT; i++) {
        const struct variable_option *o = &variable_options[i];
        int has_arg = !strcmp(o->option, "kernel") ? optional_argument
                      : o->argument ? required_argument : no_argument;
        options[n++] = (struct option){o->option, has_arg, NULL, OPTION_VARIABLE + (int)i};
    }
    options[n++] = (struct option){"library", required_argument, NULL, OPTION_LIBRARY};
    options[n++] = (struct option){"dry-run", no_argument, NULL, 'n'};
    options[n++] = (struct option){"help", no_argument, NULL, 'h'};
    if (launch->profile) {
        options[n++] = (struct option){"output", required_argument, NULL, 'o'};
        options[n++] = (struct option){"force", no_argument, NULL, 'f'};
        options[n++] = (struct option){"apis", required_argument, NULL, OPTION_APIS};
        options[n++] = (struct option){"cpu-sampling", no_argument, NULL, OPTION_CPU_SAMPLING};
        options[n++] = (struct option){"nsys", required_argument, NULL, OPTION_NSYS};
        options[n++] = (struct option){"timeout", required_argument, NULL, OPTION_TIMEOUT};
        options[n++] = (struct option){"finish-timeout", required_argument, NULL,
                                       OPTION_FINISH_TIMEOUT};
    }
    options[n] = (struct option){NULL, 0, NULL, 0};
    const char *short_options = launch->profile ? "+:hnfo:" : "+:hn";

    opterr = 0;
    optind = 0;
    int c;
    while ((c = getopt_long(argc, argv, short_options, options, NULL)) != -1) {
        switch (c) {
        case 'h':
            if (launch->profile)
                help_profile();
            else
                help_run();
            return 0;
        case 'n':
            launch->dry_run = true;
            break;
        case 'o':
            launch->output = optarg;
            break;
        case 'f':
            launch->force = true;
            break;
        case OPTION_LIBRARY:
            launch->library = optarg;
            break;
        case OPTION_APIS:
            launch->apis = optarg;
            break;
        case OPTION_CPU_SAMPLING:
            launch->cpu_sampling = true;
            break;
        case OPTION_NSYS:
            launch->nsys = optarg;
            break;
        case OPTION_TIMEOUT:
        case OPTION_FINISH_TIMEOUT:
            if (!parse_seconds(optarg, c == OPTION_TIMEOUT ? &launch->timeout_s
                                                           : &launch->finish_timeout_s))
                return usage_error(launch, "'%s' is not a number of seconds", optarg);
            break;
        case ':':
            return usage_error(launch, "option '%s' needs a value", argv[optind - 1]);
        case '?':
            if (optopt) {
                char shown[3] = {'-', (char)optopt, '\0'};
                return usage_error(launch, "unknown option '%s'", shown);
            }
            return usage_error(launch, "unknown option '%s'", argv[optind - 1]);
        default: {
            size_t index = (size_t)(c - OPTION_VARIABLE);
            const char *name = variable_options[index].option;
            if (launch->profile && !strcmp(name, "trace"))
                return usage_error(launch, "%s: under nsys the events go to nsys, not to a "
                                   "trace file (nvtxshim run --trace writes one)", "--trace");
            if (!strcmp(name, "kernel")) {
                static char kernel_value[256];
                if (!optarg || !strcmp(optarg, "on") || !strcmp(optarg, "off") ||
                    !strncmp(optarg, "on:", 3))
                    launch->values[index] = optarg ? optarg : "on";
                else {
                    snprintf(kernel_value, sizeof kernel_value, "on:%s", optarg);
                    launch->values[index] = kernel_value;
                }
            } else {
                launch->values[index] = variable_options[index].argument ? optarg : "1";
            }
        }
        }
    }

    bool separated = optind > 0 && optind <= argc && !strcmp(argv[optind - 1], "--");
    /* profile [OPTIONS] -- NSYS_OPTIONS -- PROGRAM: nsys options begin with '-',
     * a program does not, so `profile -- emucam -- prog` runs emucam. */
    if (launch->profile && separated && optind < argc && argv[optind][0] == '-') {
        int end = optind;
        while (end < argc && strcmp(argv[end], "--"))
            end++;
        if (end == argc)
            return usage_error(launch, "%s", "nsys options after the first -- end with a second "
                               "-- before the program");
        launch->nsys_options = argv + optind;
        launch->nsys_option_count = end - optind;
        optind = end + 1;
    }
    if (optind >= argc)
        return usage_error(launch, "%s", "no program to run");
    launch->program = argv + optind;
    return -1;
}

static void report_config_line(const char *line, void *context)
{
    (void)context;
    fputs(line, stderr);
}

/* Sets the variables in this process's environment (the program and nsys
 * inherit it) and checks the whole configuration as the library will. */
static int apply_variables(const struct launch *launch, struct nvs_config *config)
{
    for (size_t i = 0; i < VARIABLE_COUNT; i++)
        if (launch->values[i] && setenv(variable_options[i].variable, launch->values[i], 1)) {
            fprintf(stderr, "nvtxshim %s: cannot set %s: %s\n", launch->command,
                    variable_options[i].variable, strerror(errno));
            return 2;
        }
    /* Ours, not the library's: it would report the name as unknown. */
    unsetenv("NVTXSHIM_LIBRARY");
    int errors = nvs_config_parse(config, environ, report_config_line, NULL);
    if (errors > 0) {
        fprintf(stderr, "nvtxshim %s: not started: fix what the line%s above say%s (each option "
                "sets the NVTXSHIM_* variable it names)\n", launch->command,
                errors == 1 ? "" : "s", errors == 1 ? "s" : "");
        return 2;
    }
    return -1;
}

static bool preload_has(const char *preload, const char *library)
{
    size_t length = strlen(library);
    for (const char *entry = preload; *entry;) {
        size_t entry_length = strcspn(entry, ": ");
        if (entry_length == length && !strncmp(entry, library, length))
            return true;
        entry += entry_length;
        entry += strspn(entry, ": ");
    }
    return false;
}

/* A word as a POSIX shell reads it back. */
static void print_quoted(FILE *out, const char *word)
{
    static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                               "_@%+=:,./-";
    if (word[0] && strspn(word, safe) == strlen(word)) {
        fputs(word, out);
        return;
    }
    fputc('\'', out);
    for (const char *c = word; *c; c++) {
        if (*c == '\'')
            fputs("'\\''", out);
        else
            fputc(*c, out);
    }
    fputc('\'', out);
}

static void print_assignment(FILE *out, const char *name, const char *value)
{
    fprintf(out, "%s=", name);
    print_quoted(out, value);
    fputc(' ', out);
}

static void print_variables(const struct launch *launch)
{
    for (size_t i = 0; i < VARIABLE_COUNT; i++)
        if (launch->values[i])
            print_assignment(stdout, variable_options[i].variable, launch->values[i]);
}

static void print_argv(char *const *argv, int count)
{
    for (int i = 0; i < count && argv[i]; i++) {
        if (i)
            fputc(' ', stdout);
        print_quoted(stdout, argv[i]);
    }
}

static int find_library(const struct launch *launch, char *library, size_t size)
{
    char looked[3 * PATH_MAX];
    if (nvs_cli_find_library(launch->library, library, size, looked, sizeof looked))
        return -1;
    fprintf(stderr, "nvtxshim %s: %s not found (looked at %s); build it with make, or give "
            "--library PATH\n", launch->command, NVS_LIBRARY_NAME, looked);
    return 125;
}

int nvs_cli_run(int argc, char **argv)
{
    struct launch launch = {.command = "run"};
    int status = parse_options(&launch, argc, argv);
    if (status >= 0)
        return status;
    char library[PATH_MAX];
    struct nvs_config config;
    if ((status = find_library(&launch, library, sizeof library)) >= 0 ||
        (status = apply_variables(&launch, &config)) >= 0)
        return status;

    const char *preload = getenv("LD_PRELOAD");
    char *combined = NULL;
    if (preload && preload_has(preload, library))
        combined = strdup(preload);
    else if (asprintf(&combined, "%s%s%s", preload && preload[0] ? preload : "",
                      preload && preload[0] ? ":" : "", library) < 0)
        combined = NULL;
    if (!combined || setenv("LD_PRELOAD", combined, 1)) {
        fprintf(stderr, "nvtxshim run: out of memory\n");
        return 125;
    }
    if (launch.dry_run) {
        print_assignment(stdout, "LD_PRELOAD", combined);
        print_variables(&launch);
        print_argv(launch.program, INT_MAX);
        fputc('\n', stdout);
    }
    free(combined);
    if (launch.dry_run)
        return 0;
    fflush(NULL);
    execvp(launch.program[0], launch.program);
    int error = errno;
    fprintf(stderr, "nvtxshim run: cannot run %s: %s\n", launch.program[0], strerror(error));
    return error == ENOENT ? 127 : 126;
}

/* ---- profile -------------------------------------------------------------- */

/* nsys profile's options that profile sets itself; the user's NSYS_OPTIONS may
 * set any of them instead (nsys refuses an option given twice). */
struct nsys_option {
    const char *short_name, *long_name;
};
static const struct nsys_option NSYS_TRACE = {"-t", "--trace"};
static const struct nsys_option NSYS_SAMPLE = {"-s", "--sample"};
static const struct nsys_option NSYS_CPUCTXSW = {NULL, "--cpuctxsw"};
static const struct nsys_option NSYS_CAPTURE = {"-c", "--capture-range"};
static const struct nsys_option NSYS_NVTX_CAPTURE = {"-p", "--nvtx-capture"};
static const struct nsys_option NSYS_CAPTURE_END = {NULL, "--capture-range-end"};
static const struct nsys_option NSYS_OUTPUT = {"-o", "--output"};
static const struct nsys_option NSYS_FORCE = {"-f", "--force-overwrite"};
static const struct nsys_option NSYS_EXPORT = {NULL, "--export"};

/* The user's value of OPTION in NSYS_OPTIONS ("" for one with no value seen),
 * or NULL when it is not there. */
static const char *user_nsys_option(const struct launch *launch, struct nsys_option option)
{
    for (int i = 0; i < launch->nsys_option_count; i++) {
        const char *arg = launch->nsys_options[i];
        size_t length = strlen(option.long_name);
        bool is_short = option.short_name && !strcmp(arg, option.short_name);
        if (is_short || !strcmp(arg, option.long_name))
            return i + 1 < launch->nsys_option_count ? launch->nsys_options[i + 1] : "";
        if (!strncmp(arg, option.long_name, length) && arg[length] == '=')
            return arg + length + 1;
    }
    return NULL;
}

struct argv_builder {
    char **argv;
    int count, capacity;
    char *owned[16];        /* the "--option=value" words made here */
    int owned_count;
};

static void add(struct argv_builder *b, const char *arg)
{
    if (b->count + 1 >= b->capacity) {
        b->capacity = b->capacity ? 2 * b->capacity : 64;
        b->argv = realloc(b->argv, (size_t)b->capacity * sizeof *b->argv);
        if (!b->argv) {
            fputs("nvtxshim profile: out of memory\n", stderr);
            exit(125);
        }
    }
    b->argv[b->count++] = (char *)arg;
    b->argv[b->count] = NULL;
}

static void add_option(struct argv_builder *b, struct nsys_option option, const char *value)
{
    char *word;
    if (b->owned_count == (int)(sizeof b->owned / sizeof b->owned[0]) ||
        asprintf(&word, "%s=%s", option.long_name, value) < 0) {
        fputs("nvtxshim profile: out of memory\n", stderr);
        exit(125);
    }
    b->owned[b->owned_count++] = word;
    add(b, word);
}

static void add_unless_given(struct argv_builder *b, const struct launch *launch,
                             struct nsys_option option, const char *value)
{
    if (!user_nsys_option(launch, option))
        add_option(b, option, value);
}

static void free_builder(struct argv_builder *b)
{
    for (int i = 0; i < b->owned_count; i++)
        free(b->owned[i]);
    free(b->argv);
}

/* NAME as the report's path without .nsys-rep: %p expanded, absolute. */
static int report_base(const struct launch *launch, const char *name, char *base, size_t size)
{
    char expanded[PATH_MAX];
    size_t used = 0;
    for (const char *c = name; *c; c++) {
        char piece[32] = {*c, '\0'};
        if (*c == '%') {
            /* nsys has % sequences of its own: the name is made here, whole. */
            if (c[1] != 'p')
                return usage_error(launch, "%s: %%p is the only %% sequence in a report name",
                                   name);
            snprintf(piece, sizeof piece, "%d", (int)getpid());
            c++;
        }
        if (used + strlen(piece) >= sizeof expanded)
            return usage_error(launch, "%s: name too long", name);
        strcpy(expanded + used, piece);
        used += strlen(piece);
    }
    static const char suffix[] = ".nsys-rep";
    if (used >= sizeof suffix && !strcmp(expanded + used - (sizeof suffix - 1), suffix))
        expanded[used - (sizeof suffix - 1)] = '\0';
    if (!expanded[0])
        return usage_error(launch, "%s", "empty report name");
    char cwd[PATH_MAX];
    int length;
    if (expanded[0] == '/')
        length = snprintf(base, size, "%s", expanded);
    else if (getcwd(cwd, sizeof cwd))
        length = snprintf(base, size, "%s/%s", cwd, expanded);
    else
        return usage_error(launch, "%s", "the current directory is gone");
    if (length < 0 || (size_t)length >= size)
        return usage_error(launch, "%s: name too long", name);
    char directory[PATH_MAX];
    snprintf(directory, sizeof directory, "%s", base);
    *strrchr(directory, '/') = '\0';
    struct stat st;
    if (directory[0] && (stat(directory, &st) || !S_ISDIR(st.st_mode)))
        return usage_error(launch, "no directory %s for the report", directory);
    return -1;
}

/* The reports of BASE that exist: BASE.nsys-rep, or BASE.1.nsys-rep, BASE.2.nsys-rep ...
 * for repeated windows; a NULL-terminated array to free with free_reports. */
static char **existing_reports(const char *base)
{
    size_t count = 0;
    char **reports = calloc(1, sizeof *reports);
    for (int n = 0; reports; n++) {
        char *path;
        if ((n == 0 ? asprintf(&path, "%s.nsys-rep", base)
                    : asprintf(&path, "%s.%d.nsys-rep", base, n)) < 0)
            break;
        if (access(path, F_OK)) {
            free(path);
            if (n == 0)
                continue;
            break;
        }
        char **grown = realloc(reports, (count + 2) * sizeof *reports);
        if (!grown) {
            free(path);
            break;
        }
        reports = grown;
        reports[count++] = path;
        reports[count] = NULL;
        if (n == 0)
            break;
    }
    return reports;
}

static size_t free_reports(char **reports)
{
    size_t count = 0;
    for (; reports && reports[count]; count++)
        free(reports[count]);
    free(reports);
    return count;
}

/* Removes BASE's reports and exports (nsys may leave a partial one behind). */
static void remove_reports(const char *base)
{
    static const char *const endings[] = {"nsys-rep", "sqlite", "qdstrm"};
    char path[PATH_MAX + 32];
    for (size_t e = 0; e < sizeof endings / sizeof endings[0]; e++) {
        snprintf(path, sizeof path, "%s.%s", base, endings[e]);
        unlink(path);
        for (int n = 1;; n++) {
            snprintf(path, sizeof path, "%s.%d.%s", base, n, endings[e]);
            if (unlink(path))
                break;
        }
    }
}

static bool may_sample(void)
{
    if (geteuid() == 0 || nvs_cli_capable(CAP_PERFMON_NUMBER) ||
        nvs_cli_capable(CAP_SYS_ADMIN_NUMBER))
        return true;
    int level = nvs_cli_perf_event_paranoid();
    return level != INT_MIN && level <= 2;
}

static void summarise(const char *nsys, char **reports, double export_timeout_s)
{
    size_t count = 0;
    while (reports[count])
        count++;
    for (size_t i = 0; i < count; i++) {
        char *database;
        if (asprintf(&database, "%.*s.sqlite", (int)(strlen(reports[i]) - strlen(".nsys-rep")),
                     reports[i]) < 0)
            return;
        char *export_argv[] = {(char *)nsys, "export", "--type", "sqlite", "--force-overwrite",
                               "true", "-o", database, reports[i], NULL};
        char output[4096];
        int status = nvs_cli_capture(export_argv, output, sizeof output, export_timeout_s);
        if (count > 1)
            printf("\n== report %zu of %zu (window %zu): %s\n", i + 1, count, i + 1, reports[i]);
        else
            printf("\n== report: %s\n", reports[i]);
        printf("   open it in Nsight Systems: nsys-ui %s\n", reports[i]);
        if (status != 0 || access(database, R_OK)) {
            printf("   no SQLite export: nsys export %s\n", status < 0 ? "did not finish" : "failed");
            fflush(stdout);
            fputs(output, stderr);
            free(database);
            continue;
        }
        printf("   SQLite export: %s\n\n", database);
        fflush(stdout);
        char *report_argv[] = {"report", database, NULL};
        optind = 0;
        nvs_cli_report(2, report_argv);
        fflush(NULL);
        free(database);
    }
}

int nvs_cli_profile(int argc, char **argv)
{
    struct launch launch = {.command = "profile", .profile = true,
                            .finish_timeout_s = DEFAULT_FINISH_TIMEOUT_S};
    int status = parse_options(&launch, argc, argv);
    if (status >= 0)
        return status;
    const char *user_output = user_nsys_option(&launch, NSYS_OUTPUT);
    if (user_output && launch.output)
        return usage_error(&launch, "%s", "--output and the nsys option -o both name the report");
    char base[PATH_MAX];
    if ((status = report_base(&launch, user_output ? user_output
                              : launch.output ? launch.output : "nvtxshim-%p",
                              base, sizeof base)) >= 0)
        return status;
    char library[PATH_MAX];
    struct nvs_config config;
    if ((status = find_library(&launch, library, sizeof library)) >= 0 ||
        (status = apply_variables(&launch, &config)) >= 0)
        return status;
    char nsys[PATH_MAX];
    const char *nsys_name = launch.nsys ? launch.nsys : "nsys";
    if (!nvs_cli_find_program(nsys_name, nsys, sizeof nsys)) {
        if (!launch.dry_run) {
            fprintf(stderr, "nvtxshim profile: %s not found (fix: make deps, or sudo apt install "
                    "nsight-systems nsight-systems-target; nvtxshim check says more). Without "
                    "nsys, nvtxshim run --trace FILE records the same events.\n", nsys_name);
            return 125;
        }
        snprintf(nsys, sizeof nsys, "%s", nsys_name);
    }

    struct argv_builder command = {0};
    add(&command, nsys);
    add(&command, "profile");
    char apis[512];
    const char *asked = launch.apis ? launch.apis : "";
    bool has_nvtx = false;
    for (const char *api = asked; *api; api += strcspn(api, ","), api += *api == ',')
        has_nvtx |= strcspn(api, ",") == 4 && !strncmp(api, "nvtx", 4);
    snprintf(apis, sizeof apis, "%s%s%s", has_nvtx ? "" : "nvtx", has_nvtx || !asked[0] ? "" : ",",
             asked);
    add_unless_given(&command, &launch, NSYS_TRACE, apis);
    bool sampling = launch.cpu_sampling;
    if (sampling && !may_sample()) {
        fprintf(stderr, "nvtxshim profile: kernel.perf_event_paranoid=%d allows no CPU sampling "
                "without root: --cpu-sampling left off (fix: sudo sysctl "
                "kernel.perf_event_paranoid=2)\n", nvs_cli_perf_event_paranoid());
        sampling = false;
    }
    add_unless_given(&command, &launch, NSYS_SAMPLE, sampling ? "process-tree" : "none");
    add_unless_given(&command, &launch, NSYS_CPUCTXSW, sampling ? "process-tree" : "none");
    char capture_name[2 * NVS_NAME_MAX + 2];
    if (config.capture != NVS_CAPTURE_OFF && !user_nsys_option(&launch, NSYS_CAPTURE)) {
        if (config.capture_via == NVS_VIA_CUDA) {
            add_option(&command, NSYS_CAPTURE, "cudaProfilerApi");
        } else {
            snprintf(capture_name, sizeof capture_name, "%s@%s", config.capture_message,
                     config.capture_domain);
            add_option(&command, NSYS_CAPTURE, "nvtx");
            add_unless_given(&command, &launch, NSYS_NVTX_CAPTURE, capture_name);
        }
    }
    /* Windows that come back need one report each; a single one ends the collection. */
    bool repeats = config.capture == NVS_CAPTURE_SIGNAL ||
                   (config.capture == NVS_CAPTURE_FRAMES && config.capture_period);
    if (config.capture != NVS_CAPTURE_OFF)
        add_unless_given(&command, &launch, NSYS_CAPTURE_END, repeats ? "repeat" : "stop");
    /* The report's name as expanded here (%p is this process), the user's -o included. */
    add_option(&command, NSYS_OUTPUT, base);
    add_unless_given(&command, &launch, NSYS_FORCE, "true");
    add_unless_given(&command, &launch, NSYS_EXPORT, "none");
    for (int i = 0; i < launch.nsys_option_count; i++) {
        const char *arg = launch.nsys_options[i];
        size_t length = strlen(NSYS_OUTPUT.long_name);
        if (!strcmp(arg, NSYS_OUTPUT.short_name) || !strcmp(arg, NSYS_OUTPUT.long_name))
            i++;
        else if (strncmp(arg, NSYS_OUTPUT.long_name, length) || arg[length] != '=')
            add(&command, arg);
    }
    /* The shell runs inside nsys's environment, so $LD_PRELOAD there holds nsys's own
     * preload library: the shim goes after it (and after anything else there). */
    add(&command, "sh");
    add(&command, "-c");
    add(&command, "case \":$LD_PRELOAD:\" in *\":$1:\"*) ;; *) "
                  "LD_PRELOAD=\"${LD_PRELOAD:+$LD_PRELOAD:}$1\"; export LD_PRELOAD;; esac; "
                  "shift; exec \"$@\"");
    add(&command, "nvtxshim");
    add(&command, library);
    for (char **arg = launch.program; *arg; arg++)
        add(&command, *arg);

    if (launch.dry_run) {
        print_variables(&launch);
        print_argv(command.argv, command.count);
        fputc('\n', stdout);
        free_builder(&command);
        return 0;
    }
    if (free_reports(existing_reports(base)) > 0) {
        if (!launch.force) {
            fprintf(stderr, "nvtxshim profile: %s.nsys-rep (or .1.nsys-rep) exists: --force "
                    "replaces it, --output names another\n", base);
            free_builder(&command);
            return 2;
        }
        remove_reports(base);
    }

    /* Ctrl-C reaches nsys (same process group), which stops the program and
     * writes its report; this process stays to export and summarise it. */
    struct sigaction ignore = {.sa_handler = SIG_IGN}, old_int, old_quit;
    sigaction(SIGINT, &ignore, &old_int);
    sigaction(SIGQUIT, &ignore, &old_quit);
    struct nvs_cli_limits limits = {launch.timeout_s, launch.finish_timeout_s};
    int wait_status = 0;
    bool finished = false;
    for (int attempt = 1; attempt <= 2 && !finished; attempt++) {
        fflush(NULL);
        pid_t pid = nvs_cli_start(command.argv, -1);
        if (pid < 0) {
            fprintf(stderr, "nvtxshim profile: cannot start nsys: %s\n", strerror(errno));
            break;
        }
        finished = nvs_cli_wait(pid, &limits, &wait_status);
        /* An agent left behind, after a hang or a failure, keeps a core busy. */
        int agents = nvs_cli_kill_nsys_agents(pid);
        if (finished)
            break;
        remove_reports(base);
        fprintf(stderr, "\nnvtxshim profile: nsys did not finish within %s; killed it, what it "
                "started and %d agent%s (nsys 2022.4's agent can spin after the program "
                "exits)%s\n", launch.timeout_s > 0 ? "--timeout or --finish-timeout"
                                                   : "--finish-timeout",
                agents, agents == 1 ? "" : "s", attempt == 1 ? "; once more:" : "; giving up");
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    free_builder(&command);
    char **reports = existing_reports(base);
    if (!finished || !reports || !reports[0]) {
        if (finished)
            fprintf(stderr, "nvtxshim profile: nsys made no report (it exited with status %d)%s\n",
                    nvs_cli_exit_status(wait_status),
                    config.capture != NVS_CAPTURE_OFF
                        ? "; with --capture a report is written only when the window opens: "
                          "did the program get that far?" : "");
        free_reports(reports);
        return 125;
    }
    summarise(nsys, reports, launch.finish_timeout_s > 0 ? launch.finish_timeout_s : 3600);
    free_reports(reports);
    return nvs_cli_exit_status(wait_status);
}
