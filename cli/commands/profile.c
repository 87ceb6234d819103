/* nvtxshim profile: the program started as nvtxshim run starts it (run.h), under
 * nsys profile with the matching options, bounded by a watchdog (child.h);
 * then each report exported and summarised as nvtxshim report prints it. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands/child.h"
#include "commands/commands.h"
#include "config.h"
#include "commands/run.h"

#define CAP_SYS_ADMIN_NUMBER 21
#define CAP_PERFMON_NUMBER 38
#define DEFAULT_FINISH_TIMEOUT_S 300.0

/* profile's manual page: what comes before the options that set variables (run.c
 * prints those), and what comes after. */
static const char manual_head[] =
    "NAME\n"
    "    nvtxshim profile - profile a program with Nsight Systems and libnvtxshim\n"
    "\n"
    "SYNOPSIS\n"
    "    nvtxshim profile [OPTIONS] [-- NSYS_OPTIONS] -- PROGRAM [ARGS...]\n"
    "    nvtxshim profile --bare [-o NAME] [-f] [--nsys PATH] [--timeout SECONDS]\n"
    "        [--finish-timeout SECONDS] [-- NSYS_OPTIONS] -- PROGRAM [ARGS...]\n"
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
    "    With --bare, only the watchdog is added: nsys profile runs with -o NAME, the\n"
    "    NSYS_OPTIONS and PROGRAM as they are given - no library, no other nsys option,\n"
    "    no variable set, no export and no summary - for scripts that set nsys up\n"
    "    themselves (the test suite and make bench run nsys this way).\n"
    "\n"
    "OPTIONS\n"
    "    The options of nvtxshim run set the same variables, except --trace (under nsys the\n"
    "    events go to nsys):\n"
    "\n";
static const char manual_tail[] =
    "    -o, --output NAME\n"
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
    "    --bare\n"
    "        nsys profile under the watchdog and nothing else (see DESCRIPTION). The options\n"
    "        that set variables, --library, --apis and --cpu-sampling do not go with it.\n"
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
    "    nvtxshim profile --bare --timeout 120 -o plain -- -t osrt -- ./camera_loop\n"
    "    nvtxshim check    (what works here)\n";

static void help_profile(void)
{
    fputs(manual_head, stdout);
    nvs_launch_print_variable_options(stdout, true);
    fputs(manual_tail, stdout);
}

/* nsys profile's options that profile sets itself; the user's NSYS_OPTIONS may
 * set any of them instead (nsys refuses an option given twice). */
struct nsys_option {
    const char *short_name, *long_name;
};
static const struct nsys_option NSYS_TRACE = { "-t", "--trace" };
static const struct nsys_option NSYS_SAMPLE = { "-s", "--sample" };
static const struct nsys_option NSYS_CPUCTXSW = { NULL, "--cpuctxsw" };
static const struct nsys_option NSYS_CAPTURE = { "-c", "--capture-range" };
static const struct nsys_option NSYS_NVTX_CAPTURE = { "-p", "--nvtx-capture" };
static const struct nsys_option NSYS_CAPTURE_END = { NULL, "--capture-range-end" };
static const struct nsys_option NSYS_OUTPUT = { "-o", "--output" };
static const struct nsys_option NSYS_FORCE = { "-f", "--force-overwrite" };
static const struct nsys_option NSYS_EXPORT = { NULL, "--export" };

/* The user's value of OPTION in NSYS_OPTIONS ("" for one with no value seen),
 * or NULL when it is not there. */
static const char *user_nsys_option(const struct nvs_launch *launch, struct nsys_option option)
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
    char *owned[16]; /* the "--option=value" words made here */
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

static void add_unless_given(struct argv_builder *b, const struct nvs_launch *launch,
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
static int report_base(const struct nvs_launch *launch, const char *name, char *base, size_t size)
{
    char expanded[PATH_MAX];
    size_t used = 0;
    for (const char *c = name; *c; c++) {
        char piece[32] = { *c, '\0' };
        if (*c == '%') {
            /* nsys has % sequences of its own: the name is made here, whole. */
            if (c[1] != 'p')
                return nvs_launch_usage_error(launch,
                                              "%s: %%p is the only %% sequence in a report "
                                              "name",
                                              name);
            snprintf(piece, sizeof piece, "%d", (int)getpid());
            c++;
        }
        if (used + strlen(piece) >= sizeof expanded)
            return nvs_launch_usage_error(launch, "%s: name too long", name);
        strcpy(expanded + used, piece);
        used += strlen(piece);
    }
    static const char suffix[] = ".nsys-rep";
    if (used >= sizeof suffix && !strcmp(expanded + used - (sizeof suffix - 1), suffix))
        expanded[used - (sizeof suffix - 1)] = '\0';
    if (!expanded[0])
        return nvs_launch_usage_error(launch, "%s", "empty report name");
    char cwd[PATH_MAX];
    int length;
    if (expanded[0] == '/')
        length = snprintf(base, size, "%s", expanded);
    else if (getcwd(cwd, sizeof cwd))
        length = snprintf(base, size, "%s/%s", cwd, expanded);
    else
        return nvs_launch_usage_error(launch, "%s", "the current directory is gone");
    if (length < 0 || (size_t)length >= size)
        return nvs_launch_usage_error(launch, "%s: name too long", name);
    char directory[PATH_MAX];
    snprintf(directory, sizeof directory, "%s", base);
    *strrchr(directory, '/') = '\0';
    struct stat st;
    if (directory[0] && (stat(directory, &st) || !S_ISDIR(st.st_mode)))
        return nvs_launch_usage_error(launch, "no directory %s for the report", directory);
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
    static const char *const endings[] = { "nsys-rep", "sqlite", "qdstrm" };
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
        char *export_argv[] = { (char *)nsys, "export", "--type", "sqlite",   "--force-overwrite",
                                "true",       "-o",     database, reports[i], NULL };
        char output[4096];
        int status = nvs_cli_capture(export_argv, output, sizeof output, export_timeout_s);
        if (count > 1)
            printf("\n== report %zu of %zu (window %zu): %s\n", i + 1, count, i + 1, reports[i]);
        else
            printf("\n== report: %s\n", reports[i]);
        printf("   open it in Nsight Systems: nsys-ui %s\n", reports[i]);
        if (status != 0 || access(database, R_OK)) {
            printf("   no SQLite export: nsys export %s\n",
                   status < 0 ? "did not finish" : "failed");
            fflush(stdout);
            fputs(output, stderr);
            free(database);
            continue;
        }
        printf("   SQLite export: %s\n\n", database);
        fflush(stdout);
        char *report_argv[] = { "report", database, NULL };
        optind = 0;
        nvs_cli_report(2, report_argv);
        fflush(NULL);
        free(database);
    }
}

/* The nsys options that match LAUNCH and CONFIG (NSYS_OPTIONS may set each
 * instead): what nsys traces, samples, and the capture window. */
static void add_matching_options(struct argv_builder *command, const struct nvs_launch *launch,
                                 const struct nvs_config *config)
{
    char apis[512];
    const char *asked = launch->apis ? launch->apis : "";
    bool has_nvtx = false;
    for (const char *api = asked; *api; api += strcspn(api, ","), api += *api == ',')
        has_nvtx |= strcspn(api, ",") == 4 && !strncmp(api, "nvtx", 4);
    snprintf(apis, sizeof apis, "%s%s%s", has_nvtx ? "" : "nvtx", has_nvtx || !asked[0] ? "" : ",",
             asked);
    add_unless_given(command, launch, NSYS_TRACE, apis);
    bool sampling = launch->cpu_sampling;
    if (sampling && !may_sample()) {
        fprintf(stderr,
                "nvtxshim profile: kernel.perf_event_paranoid=%d allows no CPU sampling "
                "without root: --cpu-sampling left off (fix: sudo sysctl "
                "kernel.perf_event_paranoid=2)\n",
                nvs_cli_perf_event_paranoid());
        sampling = false;
    }
    add_unless_given(command, launch, NSYS_SAMPLE, sampling ? "process-tree" : "none");
    add_unless_given(command, launch, NSYS_CPUCTXSW, sampling ? "process-tree" : "none");
    char capture_name[2 * NVS_NAME_MAX + 2];
    if (config->capture != NVS_CAPTURE_OFF && !user_nsys_option(launch, NSYS_CAPTURE)) {
        if (config->capture_via == NVS_VIA_CUDA) {
            add_option(command, NSYS_CAPTURE, "cudaProfilerApi");
        } else {
            snprintf(capture_name, sizeof capture_name, "%s@%s", config->capture_message,
                     config->capture_domain);
            add_option(command, NSYS_CAPTURE, "nvtx");
            add_unless_given(command, launch, NSYS_NVTX_CAPTURE, capture_name);
        }
    }
    /* Windows that come back need one report each; a single one ends the collection. */
    bool repeats = config->capture == NVS_CAPTURE_SIGNAL ||
        (config->capture == NVS_CAPTURE_FRAMES && config->capture_period);
    if (config->capture != NVS_CAPTURE_OFF)
        add_unless_given(command, launch, NSYS_CAPTURE_END, repeats ? "repeat" : "stop");
}

/* The shell that appends LIBRARY to the program's LD_PRELOAD. It runs inside
 * nsys's environment, so $LD_PRELOAD there holds nsys's own preload library:
 * the shim goes after it (and after anything else there). */
static void add_preloading_shell(struct argv_builder *command, const char *library)
{
    add(command, "sh");
    add(command, "-c");
    add(command,
        "case \":$LD_PRELOAD:\" in *\":$1:\"*) ;; *) "
        "LD_PRELOAD=\"${LD_PRELOAD:+$LD_PRELOAD:}$1\"; export LD_PRELOAD;; esac; "
        "shift; exec \"$@\"");
    add(command, "nvtxshim");
    add(command, library);
}

/* --bare runs nsys alone: an option for the library or for the nsys options
 * profile adds would have nothing to act on. -1, or 2 after a usage error. */
static int refuse_with_bare(const struct nvs_launch *launch)
{
    const char *given = nvs_launch_variable_option(launch);
    if (!given)
        given = launch->library    ? "library"
            : launch->apis         ? "apis"
            : launch->cpu_sampling ? "cpu-sampling"
                                   : NULL;
    if (!given)
        return -1;
    return nvs_launch_usage_error(launch,
                                  "--%s does not go with --bare (nsys runs without the "
                                  "library, with NSYS_OPTIONS only)",
                                  given);
}

/* The nsys profile command line: NSYS, the options matching LAUNCH's (CONFIG),
 * the report's name BASE, the user's nsys options, the shell that preloads
 * LIBRARY, the program. */
static void build_command(struct argv_builder *command, const char *nsys,
                          const struct nvs_launch *launch, const struct nvs_config *config,
                          const char *base, const char *library)
{
    add(command, nsys);
    add(command, "profile");
    if (!launch->bare)
        add_matching_options(command, launch, config);
    /* The report's name as expanded here (%p is this process), the user's -o included. */
    add_option(command, NSYS_OUTPUT, base);
    if (!launch->bare) {
        add_unless_given(command, launch, NSYS_FORCE, "true");
        add_unless_given(command, launch, NSYS_EXPORT, "none");
    }
    for (int i = 0; i < launch->nsys_option_count; i++) {
        const char *arg = launch->nsys_options[i];
        size_t length = strlen(NSYS_OUTPUT.long_name);
        if (!strcmp(arg, NSYS_OUTPUT.short_name) || !strcmp(arg, NSYS_OUTPUT.long_name))
            i++;
        else if (strncmp(arg, NSYS_OUTPUT.long_name, length) || arg[length] != '=')
            add(command, arg);
    }
    if (!launch->bare)
        add_preloading_shell(command, library);
    for (char **arg = launch->program; *arg; arg++)
        add(command, *arg);
}

/* COMMAND run under the watchdog, twice if nsys hangs the first time (its
 * report then removed): whether it finished, its status at *WAIT_STATUS. */
static bool run_nsys(const struct argv_builder *command, const struct nvs_launch *launch,
                     const char *base, int *wait_status)
{
    /* Ctrl-C reaches nsys (same process group), which stops the program and
     * writes its report; this process stays to export and summarise it (and,
     * --bare, to see that it was made). */
    struct sigaction ignore = { .sa_handler = SIG_IGN }, old_int, old_quit;
    sigaction(SIGINT, &ignore, &old_int);
    sigaction(SIGQUIT, &ignore, &old_quit);
    struct nvs_cli_limits limits = { launch->timeout_s, launch->finish_timeout_s };
    bool finished = false;
    for (int attempt = 1; attempt <= 2 && !finished; attempt++) {
        fflush(NULL);
        pid_t pid = nvs_cli_start(command->argv, -1);
        if (pid < 0) {
            fprintf(stderr, "nvtxshim profile: cannot start nsys: %s\n", strerror(errno));
            break;
        }
        finished = nvs_cli_wait(pid, &limits, wait_status);
        /* An agent left behind, after a hang or a failure, keeps a core busy. */
        int agents = nvs_cli_kill_nsys_agents(pid);
        if (finished)
            break;
        remove_reports(base);
        fprintf(stderr,
                "\nnvtxshim profile: nsys did not finish within %s; killed it, what it "
                "started and %d agent%s (nsys 2022.4's agent can spin after the program "
                "exits)%s\n",
                launch->timeout_s > 0 ? "--timeout or --finish-timeout" : "--finish-timeout",
                agents, agents == 1 ? "" : "s", attempt == 1 ? "; once more:" : "; giving up");
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    return finished;
}

int nvs_cli_profile(int argc, char **argv)
{
    struct nvs_launch launch = { .command = "profile",
                                 .profile = true,
                                 .help = help_profile,
                                 .finish_timeout_s = DEFAULT_FINISH_TIMEOUT_S };
    int status = nvs_launch_parse(&launch, argc, argv);
    if (status >= 0)
        return status;
    const char *user_output = user_nsys_option(&launch, NSYS_OUTPUT);
    if (user_output && launch.output)
        return nvs_launch_usage_error(&launch, "%s",
                                      "--output and the nsys option -o both name the "
                                      "report");
    char base[PATH_MAX];
    if ((status = report_base(&launch,
                              user_output         ? user_output
                                  : launch.output ? launch.output
                                                  : "nvtxshim-%p",
                              base, sizeof base)) >= 0)
        return status;
    char library[PATH_MAX];
    struct nvs_config config = { 0 };
    if (launch.bare)
        status = refuse_with_bare(&launch);
    else if ((status = nvs_launch_find_library(&launch, library, sizeof library)) < 0)
        status = nvs_launch_apply_variables(&launch, &config);
    if (status >= 0)
        return status;
    char nsys[PATH_MAX];
    const char *nsys_name = launch.nsys ? launch.nsys : "nsys";
    if (!nvs_cli_find_program(nsys_name, nsys, sizeof nsys)) {
        if (!launch.dry_run) {
            fprintf(stderr,
                    "nvtxshim profile: %s not found (fix: make deps, or sudo apt install "
                    "nsight-systems nsight-systems-target; nvtxshim check says more). Without "
                    "nsys, nvtxshim run --trace FILE records the same events.\n",
                    nsys_name);
            return 125;
        }
        snprintf(nsys, sizeof nsys, "%s", nsys_name);
    }

    struct argv_builder command = { 0 };
    build_command(&command, nsys, &launch, &config, base, library);

    if (launch.dry_run) {
        nvs_launch_print_variables(&launch);
        nvs_launch_print_argv(command.argv, command.count);
        fputc('\n', stdout);
        free_builder(&command);
        return 0;
    }
    if (free_reports(existing_reports(base)) > 0) {
        if (!launch.force) {
            fprintf(stderr,
                    "nvtxshim profile: %s.nsys-rep (or .1.nsys-rep) exists: --force "
                    "replaces it, --output names another\n",
                    base);
            free_builder(&command);
            return 2;
        }
        remove_reports(base);
    }

    int wait_status = 0;
    bool finished = run_nsys(&command, &launch, base, &wait_status);
    free_builder(&command);
    char **reports = existing_reports(base);
    if (!finished || !reports || !reports[0]) {
        if (finished)
            fprintf(stderr, "nvtxshim profile: nsys made no report (it exited with status %d)%s\n",
                    nvs_cli_exit_status(wait_status),
                    !launch.bare && config.capture != NVS_CAPTURE_OFF
                        ? "; with --capture a report is written only when the window opens: "
                          "did the program get that far?"
                        : "");
        free_reports(reports);
        return 125;
    }
    if (!launch.bare)
        summarise(nsys, reports, launch.finish_timeout_s > 0 ? launch.finish_timeout_s : 3600);
    free_reports(reports);
    return nvs_cli_exit_status(wait_status);
}
